"""The loader: reads config, publishes immutable table snapshots, and reads a table again
whenever a file it was built from changed. No file watcher.

:class:`TableLoader` is the one loader of every table an event is judged on: the engine's hook
table and each other project's (:class:`Loader`, which adds the actor that rebuilds on request:
self-configuration asks after a write), and each agent's settings table
(:class:`~triohooks.agents.runner.AgentHooks`). The freshness rule
(:mod:`triohooks.config.freshness`, the same for every table): before an event is judged,
:meth:`TableLoader.current` checks the signature of every path the table was built from --
config files, the trust store, everything trust covers -- and reads the config again first when
any changed; one reader reads, events that need the same table meanwhile wait for it. A rebuild
asked for that finds errors keeps the last good table and reports why; a rebuild because files
changed that finds errors makes the events fail closed (:class:`ConfigError`) until the files
change again: a guard that cannot be read is never silently replaced by an older one. Readers
take the table once per event and keep that snapshot to the end of the event; a swap is a
single attribute assignment, so no reader ever sees half a table.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Generic, Protocol, TypeVar

import msgspec
import trio

from triohooks.config.model import ConfigError, ConfigProblem, HookTable
from triohooks.config.table import held_back_summary, load_table

log = logging.getLogger("triohooks.loader")


class RebuildReport(msgspec.Struct, frozen=True):
    """What a rebuild did: ``applied`` is False when errors kept the previous table."""

    applied: bool
    generation: int
    hooks: int
    problems: tuple[ConfigProblem, ...] = ()


class Table(Protocol):
    """What :class:`TableLoader` keeps: a snapshot that knows whether the files it was built
    from are unchanged, and the errors that keep it from being used."""

    @property
    def errors(self) -> Sequence[ConfigProblem]: ...

    def is_current(self) -> bool: ...


T = TypeVar("T", bound=Table)


class TableLoader(Generic[T]):
    """One table, kept true to its files by the freshness rule (see the module docstring).

    ``build(generation)`` reads the table from the files (blocking: it runs in a worker
    thread); ``table`` is the snapshot to start from (one whose ``is_current`` is False is read
    on first use)."""

    def __init__(self, build: Callable[[int], T], table: T) -> None:
        self._build_table = build
        self.table = table
        self._generation = 0
        #: Called after every rebuild that swapped the table (the reaper retires its workers).
        self.on_swap: list[Callable[[], None]] = []
        #: The last build because files changed that had errors (events fail closed while its
        #: inputs stay as they are).
        self._broken: T | None = None
        self._refreshing = trio.Lock()

    def _build(self) -> T:
        return self._build_table(self._generation + 1)

    def is_current(self) -> bool:
        """Whether the table in hand is what the files say now (no checkpoint: a ``stat`` and
        an ``lstat`` per path it was built from)."""
        return self.table.is_current() and self._broken is None

    async def current(self) -> T:
        """The table to judge an event with: :attr:`table`, read again first when a file it
        was built from changed since. Raises :class:`ConfigError` while the files as they are
        now do not load (each such event fails closed, saying why). A checkpoint only when it
        reads; one reader at a time (the others wait for its table)."""
        if self._broken is None and self.table.is_current():
            return self.table
        async with self._refreshing:
            broken = self._broken
            if broken is not None and broken.is_current():
                raise ConfigError(list(broken.errors))
            if broken is None and self.table.is_current():
                return self.table  # another event read it meanwhile
            table = await trio.to_thread.run_sync(self._build)
            if table.errors:
                self._broken = table
                log.error(
                    "config changed and has errors; events fail closed until it is fixed:\n%s",
                    "\n".join(str(p) for p in table.errors),
                )
                raise ConfigError(list(table.errors))
            self._broken = None
            self._swap(table)
            return table

    def _swap(self, table: T) -> None:
        self._generation += 1
        self.table = table
        self._swapped(table)
        for listener in self.on_swap:
            listener()

    def _swapped(self, table: T) -> None:
        """What a kind of table does when a new one is in place (nothing by default)."""


class Loader(TableLoader[HookTable]):
    """The engine's (or one project's) hook table, and the actor that rebuilds it on
    request."""

    def __init__(
        self,
        *,
        workspace: Path | None,
        config_dir: Path | None = None,
        extra_configs: Sequence[Path] = (),
        trust_override: bool = False,
    ) -> None:
        super().__init__(self._read, HookTable())
        self.workspace = workspace
        self.config_dir = config_dir
        self.extra_configs = tuple(extra_configs)
        self.trust_override = trust_override
        #: (workspace, trust state, digest) of held-back workspace hooks already logged.
        self._told: set[tuple[str, str, str]] = set()
        self._requests_send, self._requests_recv = trio.open_memory_channel[
            trio.MemorySendChannel[RebuildReport]
        ](16)

    def _read(self, generation: int) -> HookTable:
        return load_table(
            workspace=self.workspace,
            config_dir=self.config_dir,
            extra_configs=self.extra_configs,
            trust_override=self.trust_override,
            generation=generation,
        )

    async def load_initial(self) -> HookTable:
        """Read config for the first time. Raises :class:`ConfigError` when a file has errors.

        A checkpoint (the files are read in a worker thread); cancellable.
        """
        table = await trio.to_thread.run_sync(self._build)
        if table.errors:
            raise ConfigError(table.errors)
        for problem in table.problems:
            log.warning("%s", problem)
        self._generation = table.generation
        self.table = table
        self._swapped(table)
        return table

    def _swapped(self, table: HookTable) -> None:
        """Log, once per workspace content and trust state, that its hooks are held back."""
        text = held_back_summary(table)
        if text is None or table.trust is None:
            return
        told = (table.trust.workspace, table.trust.state, table.trust.digest)
        if told not in self._told:
            self._told.add(told)
            log.warning("%s", text)

    async def _rebuild_now(self) -> RebuildReport:
        table = await trio.to_thread.run_sync(self._build)
        if table.errors:
            log.error(
                "config rebuild failed; keeping the previous table:\n%s",
                "\n".join(str(p) for p in table.errors),
            )
            return RebuildReport(False, self._generation, len(self.table.hooks), table.problems)
        self._broken = None
        self._swap(table)
        return RebuildReport(True, table.generation, len(table.hooks), table.problems)

    async def refresh(self) -> RebuildReport:
        """Re-read the config now, in the caller's task, without the actor: for a loader that
        has no :meth:`serve` running (a project's, :mod:`.projects`). Errors keep the previous
        table, as a rebuild's do."""
        return await self._rebuild_now()

    def _not_rebuilt(self, why: str) -> RebuildReport:
        return RebuildReport(
            False, self._generation, len(self.table.hooks), (ConfigProblem("<rebuild>", why),)
        )

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The actor loop: one rebuild at a time, in request order. Runs until cancelled; then
        every request still waiting is answered "not applied", so no caller waits forever.

        Safe to run again after a crash (the supervisor does): requests still queued stay for
        the next run, and the one in hand is answered by closing its reply channel.
        """
        task_status.started()
        try:
            async for reply in self._requests_recv:
                with reply:  # closed whatever happens: a waiting requester always hears back
                    try:
                        report = await self._rebuild_now()
                    except Exception as exc:  # a bug in loading must not kill the engine
                        log.exception("config rebuild crashed")
                        report = self._not_rebuilt(f"internal error: {exc!r}")
                    _answer(reply, report)
        except Exception:
            raise  # a crash: the request channel stays open for the restarted loop
        except BaseException:
            self._answer_waiting()
            raise

    def _answer_waiting(self) -> None:
        while True:
            try:
                reply = self._requests_recv.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                break
            with reply:
                _answer(reply, self._not_rebuilt("the config loader stopped before rebuilding"))
        self._requests_recv.close()

    async def rebuild(self) -> RebuildReport:
        """Ask the loader to re-read config and wait for the result.

        A checkpoint. Needs :meth:`serve` running (once it has stopped, the report says "not
        applied"); on cancel the rebuild may still happen, its report is dropped.
        """
        reply_send, reply_recv = trio.open_memory_channel[RebuildReport](1)
        try:
            await self._requests_send.send(reply_send)
        except trio.BrokenResourceError:
            return self._not_rebuilt("the config loader is not running")
        async with reply_recv:
            try:
                return await reply_recv.receive()
            except trio.EndOfChannel:
                return self._not_rebuilt("the config loader crashed while rebuilding")


def _answer(reply: trio.MemorySendChannel[RebuildReport], report: RebuildReport) -> None:
    # The asker may have been cancelled and closed its end: the rebuild stands all the same
    # (before, the BrokenResourceError here crashed the loader, and every later reload with it).
    try:
        reply.send_nowait(report)
    except trio.BrokenResourceError:
        log.debug("rebuild requester gone; report dropped")
