"""``AsyncioHookEngine``: the engine for asyncio agents, run as a Trio guest on their loop.

Owns the bridge between one asyncio event loop and the Trio engine: one Trio guest run per
loop (``trio.lowlevel.start_guest_run``), shared by every engine opened on that loop and
reference-counted — the first ``open`` starts it, the last close stops it and *waits* for it
to finish, so a Trio run is never abandoned, not even when the closing asyncio task is
cancelled. Each engine call that may run a hook is a Trio task in the guest run; the awaiting
asyncio task gets its result. Cancelling that asyncio task cancels the Trio task (the engine
kills the event's hook process groups) and waits until the Trio task has finished before
``CancelledError`` goes on.
In-process hooks and the judge are asyncio coroutine functions and run as asyncio tasks.

Waking Trio (a *crossing*) costs a round trip through its I/O thread when it is idle. An event
no hook can run for is answered on the asyncio side without crossing: the dispatcher's own
test (:meth:`~triohooks.actors.dispatcher.Dispatcher.nothing_runs`, the same function its
``dispatch`` asks first), run earlier, on its current snapshot, with the same answer and the same
side effect (see :meth:`AsyncioHookEngine._here`). Every other event is one Trio task running
the trio engine's own path, so both engines select, run, fold, audit and queue with the same
code; an in-process asyncio hook in it runs as an asyncio task whose end wakes Trio.

Everything happens on the loop's thread (Trio only waits for I/O on a helper thread), so plain
objects are shared without locks; asyncio code wakes Trio only through the run's TrioToken.
It must not hold engine logic (``triohooks.engine.hook_engine`` and the actors do) nor run a second
Trio run on a loop that has one.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, Unpack

import msgspec
import trio

from triohooks.actors.audit_records import AuditStats
from triohooks.actors.loader import RebuildReport
from triohooks.actors.post_worker import WorkerReport
from triohooks.combine.outcome import Outcome
from triohooks.config.events import EVENT_TYPES, EventBase, event_from_payload
from triohooks.config.model import Hook, HookTable, PythonHandler
from triohooks.handlers.judge import JudgeReply

from .guarded import Guards
from .hook_engine import HookEngine, _args, _default_places
from .options import EngineOptions

if TYPE_CHECKING:
    import outcome

log = logging.getLogger("triohooks.asyncio")

T = TypeVar("T")
P = ParamSpec("P")

#: An in-process hook for the asyncio engine: an asyncio coroutine function.
AsyncioHookFunc = Callable[[Mapping[str, Any]], Coroutine[Any, Any, Mapping[str, Any] | str | None]]
#: The judge of prompt hooks for the asyncio engine: ``(prompt, event_json, model)``.
AsyncioJudge = Callable[[str, str, str | None], Coroutine[Any, Any, JudgeReply]]

#: How long a cancelled asyncio hook task gets to finish before the Trio side stops waiting.
HOOK_CANCEL_GRACE_S = 1.0


async def _wait_through_cancel(fut: asyncio.Future[Any]) -> bool:
    """Wait until ``fut`` is done, even if this task is cancelled meanwhile (every cancel is
    absorbed). Returns whether a cancel arrived, so the caller can re-raise it."""
    interrupted = False
    while not fut.done():
        try:
            await asyncio.wait([fut])
        except asyncio.CancelledError:
            interrupted = True
    return interrupted


def _consume(fut: asyncio.Future[Any]) -> None:
    """Mark ``fut``'s exception as retrieved (asyncio would log it as never retrieved)."""
    if fut.done() and not fut.cancelled():
        fut.exception()


async def _finish_through_cancel(work: Awaitable[object]) -> bool:
    """Await ``work`` to its end even if this task is cancelled meanwhile; its error is
    dropped (cleanup: a guest run already stopping has done it). Returns whether a cancel
    arrived, for the caller to re-raise."""
    job = asyncio.ensure_future(work)
    interrupted = await _wait_through_cancel(job)
    _consume(job)
    return interrupted


class _GuestRun:
    """One Trio guest run on one asyncio loop; its nursery holds every engine call."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.users = 0
        self.stopping = False
        self.started: asyncio.Future[None] = loop.create_future()
        self.finished: asyncio.Future[None] = loop.create_future()
        self._stop = trio.Event()
        self._nursery: trio.Nursery | None = None
        #: How often asyncio code woke Trio (``soon``): the crossings, for tests and benchmarks.
        self.crossings = 0
        trio.lowlevel.start_guest_run(
            self._main,
            run_sync_soon_threadsafe=loop.call_soon_threadsafe,
            run_sync_soon_not_threadsafe=loop.call_soon,
            done_callback=self._done,
            # asyncio's loop uses signal.set_wakeup_fd for its signal handlers.
            host_uses_signal_set_wakeup_fd=True,
        )
        # Usable as soon as start_guest_run returns (trio docs, "guest mode").
        self.token = trio.lowlevel.current_trio_token()

    async def _main(self) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self.started.set_result(None)
            await self._stop.wait()
            # Every engine is closed by now (users == 0); calls still running belong to
            # abandoned asyncio tasks, and their results have no reader.
            nursery.cancel_scope.cancel()

    def _done(self, result: outcome.Outcome[None]) -> None:
        if not self.started.done():  # the run ended before _main got going
            self.started.set_exception(RuntimeError("the trio guest run ended before starting"))
            _consume(self.started)
        try:
            result.unwrap()
        except BaseException as exc:  # handed to whoever awaits `finished`, not swallowed
            self.finished.set_exception(exc)
        else:
            self.finished.set_result(None)

    def soon(self, fn: Callable[[], object]) -> bool:
        """Run ``fn`` in Trio's context on its next tick (wakes the run if it is waiting).
        False when the run has finished (``fn`` will never run)."""
        self.crossings += 1
        try:
            self.token.run_sync_soon(fn)
        except trio.RunFinishedError:
            return False
        return True

    async def call(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Run ``fn()`` as a Trio task and return its result. A checkpoint.

        On cancel of the awaiting asyncio task the Trio task is cancelled, this waits until it
        has finished, then raises ``CancelledError``.
        """
        fut: asyncio.Future[T] = self.loop.create_future()
        scope = trio.CancelScope()
        if not self.soon(lambda: self._spawn(fn, fut, scope)):
            raise RuntimeError("the trio guest run has finished")
        try:
            await asyncio.wait([fut])
        except asyncio.CancelledError:
            self.soon(scope.cancel)
            await _wait_through_cancel(fut)
            _consume(fut)
            raise
        return fut.result()

    def _spawn(
        self, fn: Callable[[], Awaitable[T]], fut: asyncio.Future[T], scope: trio.CancelScope
    ) -> None:
        if self._nursery is None or self.stopping:
            fut.set_exception(RuntimeError("the trio guest run is stopping"))
            return
        self._nursery.start_soon(self._run_call, fn, fut, scope)

    @staticmethod
    async def _run_call(
        fn: Callable[[], Awaitable[T]], fut: asyncio.Future[T], scope: trio.CancelScope
    ) -> None:
        try:
            with scope:
                value = await fn()
                fut.set_result(value)
        except Exception as exc:
            fut.set_exception(exc)
        finally:
            # Cancelled by the awaiting task (its scope caught it) or by the run stopping.
            if not fut.done():
                fut.cancel()

    def on_loop(self, func: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, Awaitable[T]]:
        """Wrap an asyncio coroutine function so Trio code can await it: it runs as an asyncio
        task on the loop, whose end wakes Trio through the token; cancelling the Trio side
        cancels that task and waits a little for it."""

        async def run_on_loop(*args: P.args, **kwargs: P.kwargs) -> T:
            task = self.loop.create_task(func(*args, **kwargs))
            finished = trio.Event()
            task.add_done_callback(lambda _: self.soon(finished.set))
            try:
                await finished.wait()
            finally:
                if not task.done():
                    task.cancel()
                    with trio.move_on_after(HOOK_CANCEL_GRACE_S, shield=True):
                        await finished.wait()
                _consume(task)
            if task.cancelled():
                raise RuntimeError("the asyncio task was cancelled")
            return task.result()

        run_on_loop.__qualname__ = getattr(func, "__qualname__", "asyncio-hook")
        return run_on_loop

    def stop(self) -> None:
        self.stopping = True
        self.soon(self._stop.set)


#: The guest run of each loop (weak: a closed, collected loop takes its entry with it).
_guest_runs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _GuestRun] = (
    weakref.WeakKeyDictionary()
)


async def _acquire_guest() -> _GuestRun:
    """The running loop's guest run, started if needed, with one more user counted."""
    loop = asyncio.get_running_loop()
    while True:
        guest = _guest_runs.get(loop)
        if guest is None:
            guest = _guest_runs[loop] = _GuestRun(loop)
        elif guest.stopping:  # the last user is closing it: let it finish, then start anew
            interrupted = await _wait_through_cancel(guest.finished)
            _consume(guest.finished)
            if _guest_runs.get(loop) is guest:
                del _guest_runs[loop]
            if interrupted:
                raise asyncio.CancelledError
            continue
        guest.users += 1
        try:
            await asyncio.shield(guest.started)
        except BaseException:
            await _release_guest(guest)
            raise
        return guest


async def _release_guest(guest: _GuestRun) -> None:
    """Count one user less; the last one stops the run and waits until Trio has finished
    (through cancellation: a Trio run is never abandoned)."""
    guest.users -= 1
    if guest.users > 0:
        return
    guest.stop()
    interrupted = await _wait_through_cancel(guest.finished)
    if _guest_runs.get(guest.loop) is guest:
        del _guest_runs[guest.loop]
    if interrupted:
        _consume(guest.finished)
        raise asyncio.CancelledError
    guest.finished.result()


def guest_runs_active() -> int:
    """How many Trio guest runs are live in this process (0 once every engine is closed)."""
    return sum(1 for guest in _guest_runs.values() if not guest.finished.done())


class AsyncioHookEngine(Guards):
    """The :class:`~runtime.HookEngine` API as asyncio awaitables. Open with :meth:`open`.

    Engines opened on the same loop share one Trio guest run (each is a separate engine with
    its own actors); the run stops when the last of them closes.
    """

    def __init__(self, engine: HookEngine, guest: _GuestRun) -> None:
        self._engine = engine
        self._guest = guest
        self._closed = False
        #: Read (and, for ``session_end``, told to forget) on this thread by :meth:`_here`.
        self._dispatcher = engine._dispatcher

    @classmethod
    @asynccontextmanager
    async def open(
        cls, *, judge: AsyncioJudge | None = None, **options: Unpack[EngineOptions]
    ) -> AsyncIterator[AsyncioHookEngine]:
        """Open a :class:`HookEngine` in this loop's Trio guest run; close it on exit.

        ``options`` are :meth:`HookEngine.open`'s (:class:`~triohooks.EngineOptions`);
        ``judge`` is an asyncio coroutine function.
        Raises :class:`~runtime.ConfigError` when a config file has errors. Closing waits for
        the engine's close (background drain up to ``drain_timeout_s``, then kills) even if
        the closing task is cancelled; the cancel is re-raised afterwards.
        """
        guest = await _acquire_guest()
        try:
            ready: asyncio.Future[HookEngine] = guest.loop.create_future()
            close = trio.Event()

            async def hold_engine() -> None:
                async with HookEngine.open(
                    judge=guest.on_loop(judge) if judge is not None else None, **options
                ) as engine:
                    ready.set_result(engine)
                    await close.wait()

            held = guest.loop.create_task(guest.call(hold_engine))
            try:
                first: list[asyncio.Future[Any]] = [ready, held]
                await asyncio.wait(first, return_when=asyncio.FIRST_COMPLETED)
                if not ready.done():
                    await held  # opening failed: raises its error (a ConfigError, say)
                wrapper = cls(ready.result(), guest)
                try:
                    yield wrapper
                finally:
                    wrapper._closed = True
            finally:
                # One close path for every exit, a cancelled one included: the engine closes
                # (drain, kills) and we wait for it before the cancel goes on.
                guest.soon(close.set)
                interrupted = await _wait_through_cancel(held)
                _consume(held)
                if interrupted:
                    raise asyncio.CancelledError
            held.result()  # a failure while closing
        finally:
            await _release_guest(guest)

    # -- firing -------------------------------------------------------------------------------
    async def _run(self, method: Callable[P, Awaitable[T]], *args: P.args, **kwargs: P.kwargs) -> T:
        if self._closed:
            raise RuntimeError("the engine is closed")
        # Snapshot the caller's dicts now: the Trio task starts a tick later (docs/design.md §6).
        args_copy, kwargs_copy = copy.deepcopy((args, kwargs))
        return await self._guest.call(lambda: method(*args_copy, **kwargs_copy))

    def _here(self, build: Callable[[], EventBase]) -> Outcome | None:
        """The Outcome of the event ``build()`` makes when no hook can run for it; None when it
        has to go to Trio.

        Trio runs on this thread too, only between loop callbacks, so the engine's current
        snapshot (hook table, API hooks) can be read here as its dispatcher reads it. When the
        dispatcher's own test (:meth:`~triohooks.actors.dispatcher.Dispatcher.nothing_runs`)
        says nothing runs, its answer is ``plain_outcome`` and its one side effect is that a
        ``session_end`` forgets the session's stop state: both done here (by
        :meth:`~triohooks.actors.dispatcher.Dispatcher.answer_plain`, which dispatch uses too).
        None also when the engine is closed and when building the event fails (the Trio path
        raises the error). ``build`` mirrors how :class:`HookEngine` builds the event; the
        answer's ``args`` are its shallow copy, as the Trio engine's are.
        """
        guest = self._guest
        if self._closed or guest.stopping or guest.finished.done():
            return None
        try:
            ev = build()
            if not self._dispatcher.nothing_runs(ev):
                return None
        except Exception:
            return None
        return self._dispatcher.answer_plain(ev)

    def _typed(self, event: str, fields: dict[str, Any]) -> EventBase:
        """The event :meth:`HookEngine._fire_typed` builds. A TypeError (an unknown keyword,
        which that engine's general path reads) leaves the event to the Trio path."""
        _default_places(fields, self._dispatcher.workspace)
        return EVENT_TYPES[event](**fields)

    def _general(
        self, event: str, payload: Mapping[str, Any] | EventBase | None, fields: dict[str, Any]
    ) -> EventBase:
        """The event :meth:`HookEngine.fire` builds."""
        if isinstance(payload, EventBase):
            return msgspec.structs.replace(payload, **fields) if fields else payload
        data = dict(payload or {})
        data.update(fields)
        _default_places(data, self._dispatcher.workspace)
        return event_from_payload(event, data)

    async def _fire(
        self,
        build: Callable[[], EventBase],
        method: Callable[P, Awaitable[Outcome]],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> Outcome:
        """Answer here when nothing can run (a checkpoint still, as the Trio path's is), else
        run ``method(*args, **kwargs)`` in Trio."""
        answer = self._here(build)
        if answer is None:
            return await self._run(method, *args, **kwargs)
        await asyncio.sleep(0)
        return answer

    async def fire(
        self, event: str, payload: Mapping[str, Any] | EventBase | None = None, /, **fields: Any
    ) -> Outcome:
        """:meth:`HookEngine.fire` as an awaitable. On cancel the event's hooks are killed
        before ``CancelledError`` is raised."""
        return await self._fire(
            lambda: self._general(event, payload, fields),
            self._engine.fire,
            event,
            payload,
            **fields,
        )

    async def pre_tool(
        self, tool: str, args: Mapping[str, Any], tool_call_id: str | None = None, **common: Any
    ) -> Outcome:
        return await self._fire(
            lambda: self._typed(
                "pre_tool",
                {"tool": tool, "args": _args("pre_tool", args), "tool_call_id": tool_call_id}
                | common,
            ),
            self._engine.pre_tool,
            tool,
            args,
            tool_call_id,
            **common,
        )

    async def post_tool(
        self,
        tool: str,
        args: Mapping[str, Any],
        result: Any = None,
        error: str | None = None,
        tool_call_id: str | None = None,
        **common: Any,
    ) -> Outcome:
        """Fire post_tool (and post_tool_failure too when ``error`` is set)."""
        return await self._fire(
            lambda: self._typed(
                "post_tool",
                {
                    "tool": tool,
                    "args": _args("post_tool", args),
                    "result": result,
                    "error": error,
                    "tool_call_id": tool_call_id,
                }
                | common,
            ),
            self._engine.post_tool,
            tool,
            args,
            result,
            error,
            tool_call_id,
            **common,
        )

    async def prompt_submit(self, prompt: str, **common: Any) -> Outcome:
        return await self._fire(
            lambda: self._typed("prompt_submit", {"prompt": prompt} | common),
            self._engine.prompt_submit,
            prompt,
            **common,
        )

    async def permission_request(
        self, tool: str, args: Mapping[str, Any], tool_call_id: str | None = None, **common: Any
    ) -> Outcome:
        return await self._fire(
            lambda: self._typed(
                "permission_request",
                {
                    "tool": tool,
                    "args": _args("permission_request", args),
                    "tool_call_id": tool_call_id,
                }
                | common,
            ),
            self._engine.permission_request,
            tool,
            args,
            tool_call_id,
            **common,
        )

    async def session_start(self, reason: str = "startup", **common: Any) -> Outcome:
        return await self._fire(
            lambda: self._typed("session_start", {"reason": reason} | common),
            self._engine.session_start,
            reason,
            **common,
        )

    async def stop(self, **common: Any) -> Outcome:
        # Always through Trio: the dispatcher settles the stop-continue state for every stop.
        return await self._run(self._engine.stop, **common)

    async def session_end(self, reason: str = "exit", **common: Any) -> Outcome:
        return await self._fire(
            lambda: self._typed("session_end", {"reason": reason} | common),
            self._engine.session_end,
            reason,
            **common,
        )

    async def notification(self, type: str, message: str, **common: Any) -> Outcome:
        return await self._fire(
            lambda: self._typed("notification", {"type": type, "message": message} | common),
            self._engine.notification,
            type,
            message,
            **common,
        )

    async def reload(self) -> RebuildReport:
        """Re-read config now; on errors the previous table stays."""
        return await self._run(self._engine.reload)

    # -- in-process hooks, listeners, state ---------------------------------------------------
    def add_hook(
        self,
        event: str,
        func: AsyncioHookFunc,
        *,
        name: str | None = None,
        match: str | None = None,
        timeout_s: float = 30.0,
    ) -> Hook:
        """Register an asyncio coroutine function as a hook; it runs as a task on this loop.

        Same contract as :meth:`HookEngine.add_hook`; on the hook's timeout its task is
        cancelled.
        """
        handler = PythonHandler(self._guest.on_loop(func))
        label = name or str(getattr(func, "__qualname__", "python-hook"))
        return self._engine._add_python_hook(event, handler, label, match, timeout_s)

    def remove_hook(self, hook: Hook) -> None:
        self._engine.remove_hook(hook)

    def add_listener(self, listener: Callable[[str, dict[str, Any]], None]) -> Callable[[], None]:
        """:meth:`HookEngine.add_listener`: ``listener(kind, fields)`` is called synchronously
        on the loop's thread; it must not block. Returns a remover."""
        return self._engine.add_listener(listener)

    @property
    def table(self) -> HookTable:
        return self._engine.table

    @property
    def live_processes(self) -> int:
        return self._engine.live_processes

    @property
    def queue_depth(self) -> int:
        return self._engine.queue_depth

    @property
    def audit_stats(self) -> AuditStats | None:
        return self._engine.audit_stats

    @property
    def close_report(self) -> WorkerReport | None:
        return self._engine.close_report

    @property
    def judge_warning(self) -> str | None:
        return self._engine.judge_warning
