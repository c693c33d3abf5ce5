"""The ordered background worker: the 256-event queue of docs/design.md §6 (blitz HK-30..HK-33,
HK-52).

This module owns the queue of background events (post_tool, post_tool_failure, session_end,
subagent_start/stop, pre_compact/post_compact, notification), its one in-order consumer, the
drop accounting with its once-per-episode "falling behind" warning, per-event crash containment
and the close protocol (stop intake, drain up to 5 s, kill what still runs, drop and count the
rest).

Each queued item carries the hooks it is for (chosen and filtered by the pipeline core when the
event was fired) and the event's JSON bytes, encoded then. The consumer runs those hooks, in
order, through the same runner interface the dispatcher uses (:class:`HookRunner`, in the engine
:class:`~triohooks.actors.runs.HookRuns`); it must not know how a hook runs, and it never calls
back into the dispatcher. At close, what still runs past the drain deadline is cancelled: the
hook run in hand kills its own process group (the reaper does, as for any cancelled run), and no
other run is touched. The consumer's crash (a bug outside the per-event containment) is contained
here too: the event in hand counts as failed, the consumer starts again, nothing queued is lost,
and nothing outside it (an event being handled, another actor) is cancelled. Enqueueing never
awaits; nothing here blocks the agent.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol

import msgspec
import trio

from triohooks.combine.outcome import failure_text
from triohooks.handlers.outcomes import FAILED_OUTCOMES
from triohooks.handlers.replies import RunResult
from triohooks.handlers.runner import HookInput

from .audit import detach_wait

logger = logging.getLogger("triohooks.post_worker")

#: The queue size of blitz HK-31.
DEFAULT_CAPACITY: Final = 256
#: What queued events get, in total, when the worker closes (HK-33).
DEFAULT_DRAIN_TIMEOUT_S: Final = 5.0
#: Bound on waiting for the cancelled consumer to unwind after the drain deadline (its hook run
#: kills and reaps its group within the reaper's own 2 s budget).
EXIT_TIMEOUT_S: Final = 3.0
#: Drop log records held for the drop logger task; past this, drops are logged inline.
DROP_LOG_BUFFER: Final = 8192
DROP_LOG_CHUNK: Final = 256
#: Events the consumer takes back to back before it yields to the scheduler.
CONSUME_BATCH: Final = 16

_encoder = msgspec.json.Encoder()


def encode_payload(payload: Any) -> bytes:
    """The event's JSON bytes, taken now: later mutation of ``payload`` cannot change them."""
    return _encoder.encode(payload)


class BackgroundItem(msgspec.Struct, frozen=True):
    """One queued background event and the hooks it runs."""

    seq: int
    #: Canonical event name.
    event: str
    session_id: str
    #: JSON bytes encoded when the event was fired.
    payload: bytes
    #: The hooks to run, in order: opaque to the worker, handed to the runner as they are.
    hooks: tuple[Any, ...]
    #: ``trio.current_time()`` at enqueue.
    enqueued_at: float
    #: The environment of the session the event came from (its hooks run with it); None:
    #: this process's (:class:`~triohooks.handlers.runner.HookInput`).
    env: Mapping[str, str] | None = None
    #: The event as its hooks' runner reads it, when the one who queued it has it read
    #: already (an agent's input: decoded once, by the request); None: decoded from
    #: ``payload`` when a runner asks.
    fields: Mapping[str, Any] | None = None

    @property
    def hook_count(self) -> int:
        return len(self.hooks)


class WorkerReport(msgspec.Struct, frozen=True):
    """The worker's numbers; at close, ``offered == ran + dropped_full + dropped_at_close``.

    ``ran`` counts events whose run finished (``failed`` of them raised). An event cut off by
    the close deadline counts in ``dropped_at_close``; ``killed`` is the number of hook runs
    that were cut off then (their process groups killed). ``drain_seconds`` is the time from
    the start of the close to the end of the drain (queue empty, or the deadline).
    """

    offered: int
    ran: int
    failed: int
    dropped_full: int
    dropped_at_close: int
    killed: int
    warnings: int
    drain_seconds: float
    max_depth: int


class HookRunner(Protocol):
    """Runs one hook for one event (:class:`triohooks.handlers.runner.Runner`'s shape)."""

    async def run(self, hook: Any, hook_input: HookInput, /) -> RunResult: ...


class PostWorker:
    """A bounded queue of background events and the one task that runs them in order.

    Wiring: either ``await nursery.start(worker.serve)`` (the bare consumer: a crash propagates),
    or ``worker.attach(nursery)`` so the first :meth:`offer` starts the consumer ("the worker
    starts on first use") under its own containment. Then :meth:`offer` from anywhere in the
    trio thread, and :meth:`close` once at shutdown.
    """

    def __init__(
        self,
        runner: HookRunner,
        *,
        capacity: int = DEFAULT_CAPACITY,
        on_warning: Callable[[str], None] | None = None,
        on_drop: Callable[[BackgroundItem, str], None] | None = None,
        drain_timeout_s: float = DEFAULT_DRAIN_TIMEOUT_S,
    ) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._runner = runner
        self._capacity = capacity
        self._on_warning = on_warning
        self._on_drop = on_drop
        self._drain_timeout_s = drain_timeout_s
        self._send, self._receive = trio.open_memory_channel[BackgroundItem](capacity)
        #: The consumer's scope, made up front so close() can cancel it even before the
        #: consumer has started running.
        self._consumer_scope = trio.CancelScope()
        self._nursery: trio.Nursery | None = None
        self._consumer_started = False
        self._serving = False
        self._consumer_done = trio.Event()
        self._current: BackgroundItem | None = None
        #: A hook of the current item is running (so a cut-off kills its group).
        self._in_run = False
        #: Consumer crashes contained so far.
        self.crashes = 0
        self._closing = False
        self._close_done = trio.Event()
        self._report: WorkerReport | None = None
        # Counters. _depth counts events accepted and not yet taken by the consumer; it is
        # what the capacity limits (a memory channel can also hand one item straight to a
        # waiting receiver, which would let 257 in).
        self._seq = 0
        self._depth = 0
        self._max_depth = 0
        self._offered = 0
        self._ran = 0
        self._failed = 0
        self._dropped_full = 0
        self._dropped_at_close = 0
        self._killed = 0
        self._warnings = 0
        self._behind = False
        self._drain_seconds = 0.0
        # Per-drop log records waiting for the drop logger task (see _drop).
        self._drop_log: list[_DropEntry] = []
        self._drop_log_wakeup = trio.Event()

    # -- intake ---------------------------------------------------------------------------

    def attach(self, nursery: trio.Nursery) -> None:
        """Make the first :meth:`offer` start the consumer in ``nursery``, contained: a crash
        of it is logged, the event in hand counts as failed, and it starts again at once when
        events are waiting (else on the next offer). Attaching again (a new nursery) starts it
        there when events are waiting: the queue and its numbers live here, not in the
        consumer, so nothing queued is lost.
        """
        self._nursery = nursery
        if self._depth > 0:
            self._start_consumer()

    def _start_consumer(self) -> None:
        if self._consumer_started or self._nursery is None or self._closing:
            return
        try:
            self._nursery.start_soon(self._contained)
        except RuntimeError:  # that nursery is closing: the next attach starts it
            return
        self._consumer_started = True

    async def _contained(self) -> None:
        """The consumer, restarted after each crash while events wait (each crash consumes
        the event in hand, so a bug cannot loop on one event). Started from the offering
        event's task, it inherits that event's context: its records are no answer's."""
        detach_wait()
        while True:
            try:
                await self.serve()
                return
            except Exception:
                self.crashes += 1  # serve logged it and reset its state
                if self._closing or self._depth == 0:
                    return  # the next offer starts it again
                self._consumer_started = True

    def offer(
        self,
        *,
        event: str,
        session_id: str,
        payload: bytes,
        hooks: tuple[Any, ...],
        env: Mapping[str, str] | None = None,
        fields: Mapping[str, Any] | None = None,
    ) -> bool:
        """Queue one background event (its hooks run with ``env``, the session's environment;
        None: this process's); never awaits. False = dropped (counted and logged). ``fields``:
        the event as read already (see :class:`BackgroundItem`), handed to the runner with
        ``payload`` instead of decoding it again.

        An event is dropped when the queue is full (the first drop of an episode also shows
        the "falling behind" warning) or when the worker is closing.
        """
        self._offered += 1
        self._seq += 1
        item = BackgroundItem(
            self._seq, event, session_id, payload, hooks, trio.current_time(), env, fields
        )
        if self._closing:
            self._dropped_at_close += 1
            self._drop(item, "closed")
            return False
        self._start_consumer()
        if self._depth >= self._capacity:
            self._drop_full(item)
            return False
        try:
            self._send.send_nowait(item)
        except trio.WouldBlock:  # pragma: no cover - _depth keeps the buffer from filling
            self._drop_full(item)
            return False
        self._depth += 1
        self._max_depth = max(self._max_depth, self._depth)
        return True

    def _drop_full(self, item: BackgroundItem) -> None:
        self._dropped_full += 1
        if not self._behind:
            self._behind = True
            self._warnings += 1
            text = (
                f"hooks are falling behind: the background queue is full ({self._capacity} "
                "events); background events are dropped until it catches up"
            )
            logger.warning("%s", text)
            if self._on_warning is not None:
                _call_contained(self._on_warning, text)
        self._drop(item, "full")

    def _drop(self, item: BackgroundItem, reason: str) -> None:
        entry = (item.event, item.session_id, item.hook_count, item.seq, reason)
        deferred = self._consumer_started and not self._consumer_done.is_set()
        if deferred and len(self._drop_log) < DROP_LOG_BUFFER:
            # Logging costs 4-12 µs a record: under a flood it would eat the caller's time,
            # so the drop logger task writes the records when the caller next yields.
            self._drop_log.append(entry)
            self._drop_log_wakeup.set()
        else:
            _log_drop(entry)
        if self._on_drop is not None:
            _call_contained(self._on_drop, item, reason)

    async def _log_drops(self) -> None:
        """Write the deferred per-drop log records, a chunk at a time."""
        try:
            while True:
                await self._drop_log_wakeup.wait()
                self._drop_log_wakeup = trio.Event()
                while self._drop_log:
                    chunk = self._drop_log[:DROP_LOG_CHUNK]
                    del self._drop_log[:DROP_LOG_CHUNK]
                    for entry in chunk:
                        _log_drop(entry)
                    await trio.lowlevel.checkpoint()
        finally:
            self._flush_drop_log()

    def _flush_drop_log(self) -> None:
        pending, self._drop_log = self._drop_log, []
        for entry in pending:
            _log_drop(entry)

    # -- the consumer ---------------------------------------------------------------------

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run queued events one at a time, in order, until closed.

        Returns when :meth:`close` has closed the queue and it is empty, or when close cuts
        the drain off. On cancel from outside it stops between or inside an event (the running
        hook run sees the cancellation) and re-raises; close then drops what is left. If it
        crashes (a bug outside the per-event containment), the event in hand counts as failed
        and the consumer can be started again: the next :meth:`attach` or :meth:`offer` does.
        """
        if self._serving:
            raise RuntimeError("PostWorker.serve is already running")
        self._serving = True
        self._consumer_started = True
        crashed = False
        try:
            with self._consumer_scope:
                async with trio.open_nursery() as helpers:
                    helpers.start_soon(self._log_drops)
                    task_status.started()
                    await self._consume()
                    helpers.cancel_scope.cancel()
        except Exception:
            crashed = True
            if self._current is not None:
                self._current = None
                self._ran += 1
                self._failed += 1
            logger.exception("the background consumer crashed; it starts again")
            raise
        finally:
            self._serving = False
            self._flush_drop_log()
            if crashed and not self._closing:
                self._consumer_started = False
                self._consumer_scope = trio.CancelScope()
            else:
                self._consumer_done.set()

    async def _consume(self) -> None:
        # A queued event is taken without a scheduler round trip, yielding at least every
        # CONSUME_BATCH events: that round trip is most of the cost of a cheap hook.
        since_yield = 0
        while True:
            try:
                if since_yield >= CONSUME_BATCH:
                    raise trio.WouldBlock
                item = self._receive.receive_nowait()
                since_yield += 1
            except trio.WouldBlock:
                try:
                    item = await self._receive.receive()
                except trio.EndOfChannel:
                    return
                since_yield = 1
            except (trio.EndOfChannel, trio.ClosedResourceError):
                return  # drained; or close gave up waiting for us and dropped the rest
            self._depth -= 1
            self._current = item  # from here on the item is accounted for, even if we crash
            await self._run_one(item)

    async def _run_one(self, item: BackgroundItem) -> None:
        try:
            await self._run_hooks(item)
        except Exception:
            if self._current is item:
                self._failed += 1
            logger.exception(
                "background event %s (session %s, seq %d) crashed; later events still run",
                item.event,
                item.session_id,
                item.seq,
            )
        if self._current is not item:
            return  # close gave up on it and counted it already
        self._current = None
        self._ran += 1
        if self._behind and self._depth == 0:
            self._behind = False
            logger.info("background queue caught up")

    async def _run_hooks(self, item: BackgroundItem) -> None:
        hook_input = HookInput(
            item.event, item.session_id, fields=item.fields, payload=item.payload, env=item.env
        )
        for hook in item.hooks:
            self._in_run = True
            try:
                result = await self._runner.run(hook, hook_input)
            finally:
                self._in_run = False
            if result.outcome in FAILED_OUTCOMES:
                name = getattr(hook, "name", hook)
                logger.warning("background hook %s failed: %s", name, failure_text(result))

    # -- close ----------------------------------------------------------------------------

    async def close(self) -> WorkerReport:
        """Stop intake, let queued events run for up to ``drain_timeout_s`` in total, then
        cancel the running one (its hook's group is killed by that run) and drop the rest.
        Returns the report; a second call returns the same one.

        A checkpoint. On cancel it skips the rest of the drain, still cancels, kills (shielded,
        bounded) and drops, then re-raises.
        """
        if self._closing:
            await self._close_done.wait()
            assert self._report is not None
            return self._report
        self._closing = True
        self._send.close()
        started = trio.current_time()
        try:
            if self._consumer_started:
                # The one drain deadline for everything queued.
                with trio.move_on_after(self._drain_timeout_s):
                    await self._consumer_done.wait()
        finally:
            self._drain_seconds = trio.current_time() - started
            await self._stop_consumer()
            self._flush_drop_log()  # a consumer that never got to run leaves them here
            self._drop_rest()
            report = self.stats()
            self._report = report
            self._close_done.set()
            logger.log(
                logging.WARNING if report.dropped_at_close else logging.INFO,
                "background worker closed: offered %d, ran %d (%d failed), dropped %d when "
                "full and %d at close, killed %d hook groups, drained in %.3f s",
                report.offered,
                report.ran,
                report.failed,
                report.dropped_full,
                report.dropped_at_close,
                report.killed,
                report.drain_seconds,
            )
        return report

    async def _stop_consumer(self) -> None:
        """Cancel the consumer if it still runs; a hook run it was in kills its own group."""
        self._consumer_scope.cancel()
        if not self._consumer_started or self._consumer_done.is_set():
            return
        # The consumer only sees the cancel when we yield: an event it was running is still
        # in self._current here, and its hook's group is still alive.
        if self._current is not None and self._in_run:
            self._killed += 1
        with trio.move_on_after(EXIT_TIMEOUT_S, shield=True):
            await self._consumer_done.wait()

    def _drop_rest(self) -> None:
        if self._current is not None:
            item, self._current = self._current, None
            self._dropped_at_close += 1
            self._drop(item, "killed")
        while True:
            try:
                item = self._receive.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel):
                break
            self._depth -= 1
            self._dropped_at_close += 1
            self._drop(item, "close")
        self._receive.close()

    # -- numbers --------------------------------------------------------------------------

    @property
    def depth(self) -> int:
        """Events waiting in the queue (not counting the one running)."""
        return self._depth

    @property
    def last_seq(self) -> int:
        """The ``seq`` given to the latest :meth:`offer` (0 before the first)."""
        return self._seq

    @property
    def capacity(self) -> int:
        return self._capacity

    def stats(self) -> WorkerReport:
        """The numbers so far (the close report once closed)."""
        return WorkerReport(
            offered=self._offered,
            ran=self._ran,
            failed=self._failed,
            dropped_full=self._dropped_full,
            dropped_at_close=self._dropped_at_close,
            killed=self._killed,
            warnings=self._warnings,
            drain_seconds=self._drain_seconds,
            max_depth=self._max_depth,
        )


_REASON_TEXT: Final = {
    "full": "queue full",
    "closed": "worker is closing",
    "close": "not run before the close deadline",
    "killed": "cut off by the close deadline",
}


#: (event, session, hook count, seq, reason)
_DropEntry = tuple[str, str, int, int, str]


def _log_drop(entry: _DropEntry) -> None:
    event, session, hooks, seq, reason = entry
    logger.log(
        logging.INFO if reason == "close" else logging.WARNING,
        "dropped background event %s (session %s, %d hooks, seq %d): %s",
        event,
        session,
        hooks,
        seq,
        _REASON_TEXT[reason],
    )


def _call_contained(fn: Callable[..., None], *args: Any) -> None:
    """Call an observer callback; its bug must not break intake or the close."""
    try:
        fn(*args)
    except Exception:
        logger.exception("post worker callback %r failed", fn)
