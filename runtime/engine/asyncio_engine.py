"""``AsyncioHookEngine``: the engine for asyncio agents, driving the pipeline core on their loop.

Owns two things. First, the per-event driver on the asyncio side: each event is built,
planned, stepped, folded and answered on the loop by the pipeline core
(:mod:`triohooks.combine.pipeline`), the very rules the trio dispatcher drives. An in-process
asyncio hook runs there as a task on the loop
(:class:`~triohooks.handlers.python.AsyncioPythonRunner`, observed by the same
:class:`~triohooks.actors.runs.HookRuns`); an event no hook runs for is
answered there too. Only what needs Trio crosses into it: a guarded process run (command, JSON
command, http and prompt hooks, whose judge runs back on the loop) and reading the config again
when a file changed.

Second, the bridge for those crossings: one Trio guest run per loop
(``trio.lowlevel.start_guest_run``), shared by every engine opened on that loop and
reference-counted: the first ``open`` starts it, the last close stops it and *waits* for it to
finish, so a Trio run is never abandoned, not even when the closing asyncio task is cancelled.
A crossing is a Trio task in the guest run whose result the awaiting asyncio task gets;
cancelling that asyncio task cancels the Trio task (the engine kills the hook's process group)
and waits until it has finished before ``CancelledError`` goes on. Waking Trio costs a round
trip through its I/O thread when it is idle, which is why in-process hooks do not cross.

Everything happens on the loop's thread (Trio only waits for I/O on a helper thread), so plain
objects are shared without locks: the engine's table snapshot, API hooks and stop counts are
read and written here between Trio's ticks; what the answer hands on (audit records, the post
worker's queue) is put into Trio's channels with their non-blocking calls, which wake the guest
run. It must not hold a rule of the event path (the core does) nor run a second Trio run on a
loop that has one.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, Unpack

import trio

from triohooks.actors.audit import WRITE_WAIT_S, AuditWait, counting, current_wait, within
from triohooks.actors.audit_records import AuditStats
from triohooks.actors.loader import RebuildReport
from triohooks.actors.post_worker import WorkerReport
from triohooks.combine.outcome import Outcome
from triohooks.combine.pipeline import EventRun
from triohooks.config.events import EventBase
from triohooks.config.model import Hook, HookTable, Mode, PythonHandler
from triohooks.handlers.judge import JudgeReply
from triohooks.handlers.python import raised_result, reply_result, timed_out_result
from triohooks.handlers.replies import RunResult
from triohooks.handlers.runner import HookInput, Runners

from .guarded import Guards
from .hook_engine import HookEngine, _args
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


#: How long a timed-out or cancelled asyncio hook task gets to finish before the run stops
#: waiting for it (a hook that ignores its cancel cannot hold an event past this).
HOOK_CANCEL_GRACE_S = 1.0


class AsyncioPythonRunner:
    """Runs an asyncio engine's hook (``handler.asyncio_func``) as a task on the running asyncio
    loop, under the hook's timeout; on the timeout, or on cancel of the caller, the task is
    cancelled and waited for up to :data:`HOOK_CANCEL_GRACE_S`."""

    async def run(self, hook: Hook, hook_input: HookInput) -> RunResult:
        handler = hook.handler
        assert isinstance(handler, PythonHandler) and handler.asyncio_func is not None
        start = time.perf_counter()
        task = asyncio.ensure_future(handler.asyncio_func(hook_input.fields))
        try:
            done, _ = await asyncio.wait((task,), timeout=hook.timeout_s)
        finally:
            if not task.done():  # timed out, or the caller was cancelled
                task.cancel()
                await asyncio.wait((task,), timeout=HOOK_CANCEL_GRACE_S)
            if task.done() and not task.cancelled():
                task.exception()  # retrieved: asyncio would log it as never retrieved
        if not done:
            return timed_out_result(hook, start)
        if task.cancelled():  # by the hook itself
            return raised_result(RuntimeError("the asyncio task was cancelled"), start)
        exc = task.exception()
        if isinstance(exc, Exception):
            return raised_result(exc, start)
        if exc is not None:  # a BaseException of the hook's own (KeyboardInterrupt ...)
            raise exc
        return reply_result(task.result(), start)


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
        #: The trio driver of the same core: its table, runs and post worker are read (and its
        #: core's state written) on this thread, between Trio's ticks.
        self._dispatcher = engine._dispatcher
        #: How this engine's in-process hooks run: on the loop.
        self._loop_runners = Runners()
        self._loop_runners.register(PythonHandler, AsyncioPythonRunner())

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

    async def _fire(self, build: Callable[[], EventBase]) -> Outcome:
        """Build the event as :class:`HookEngine` builds it (its errors are raised here) and
        drive it through the pipeline core on this loop. A checkpoint."""
        if self._closed:
            raise RuntimeError("the engine is closed")
        ev = build()
        dispatcher = self._dispatcher
        core = dispatcher.core
        sink = self._engine._audit
        # The event's audit records count against its answer, wherever they are submitted
        # (here, or in a crossing: _crossing), as HookEngine's answer waits for its own.
        wait = AuditWait() if sink is not None else None
        with counting(wait):
            try:
                loader = dispatcher.loader
                # A file of the table changed: reading it again is Trio's (in a thread).
                table = (
                    loader.table if loader.is_current() else await self._guest.call(loader.current)
                )
                run = core.plan(table, ev)
                outcome = run if isinstance(run, Outcome) else await self._run_event(run)
            except Exception as exc:
                outcome = core.failed(ev, exc)
        if sink is not None and wait is not None:
            # Returned once its records are written (the writer, in the guest run on this
            # thread, wakes this task): the sink's rule, this loop's wait.
            wait.open = False
            if sink.worth_waiting(wait):
                done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

                def wake() -> None:
                    if not done.done():
                        done.set_result(None)

                wait.on_done = wake
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(WRITE_WAIT_S):
                        await done
            unwritten = sink.verdict(wait)
            if unwritten is not None:
                outcome.warnings.append(unwritten)
        await asyncio.sleep(0)
        return outcome

    async def _run_event(self, run: EventRun) -> Outcome:
        """Drive ``run`` on this loop: an in-process hook as an asyncio task here, every other
        hook in the guest run (a process run, guarded by Trio's reaper)."""
        runs = self._dispatcher.runs
        run.fired(runs)
        # A native event's plan: a group of one per step, in order (agents' requests, whose
        # hooks run at once, are the Trio engine's: HookEngine.agent_hook).
        while (step := run.next_step()) is not None:
            run.add(step, await self._run_step(step))
        return run.finish(runs, self._dispatcher.post_worker)

    def _run_step(self, step: tuple[Hook, HookInput]) -> Awaitable[RunResult]:
        hook, hook_input = step
        handler = hook.handler
        if isinstance(handler, PythonHandler) and handler.asyncio_func is not None:
            return self._dispatcher.runs.run(hook, hook_input, runners=self._loop_runners)
        return self._crossing(hook, hook_input)

    def _crossing(self, hook: Hook, hook_input: HookInput) -> Awaitable[RunResult]:
        runs = self._dispatcher.runs
        wait = current_wait()  # this event's answer: its records count there, in Trio too
        return self._guest.call(lambda: within(wait, runs.run(hook, hook_input)))

    async def fire(
        self, event: str, payload: Mapping[str, Any] | EventBase | None = None, /, **fields: Any
    ) -> Outcome:
        """:meth:`HookEngine.fire` as an awaitable. On cancel the event's hooks are killed
        before ``CancelledError`` is raised."""
        return await self._fire(lambda: self._engine._event(event, payload, fields))

    async def pre_tool(
        self, tool: str, args: Mapping[str, Any], tool_call_id: str | None = None, **common: Any
    ) -> Outcome:
        return await self._fire(
            lambda: self._engine._typed_event(
                "pre_tool",
                tool=tool,
                args=_args("pre_tool", args),
                tool_call_id=tool_call_id,
                **common,
            )
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
            lambda: self._engine._typed_event(
                "post_tool",
                tool=tool,
                args=_args("post_tool", args),
                result=result,
                error=error,
                tool_call_id=tool_call_id,
                **common,
            )
        )

    async def prompt_submit(self, prompt: str, **common: Any) -> Outcome:
        return await self._fire(
            lambda: self._engine._typed_event("prompt_submit", prompt=prompt, **common)
        )

    async def permission_request(
        self, tool: str, args: Mapping[str, Any], tool_call_id: str | None = None, **common: Any
    ) -> Outcome:
        return await self._fire(
            lambda: self._engine._typed_event(
                "permission_request",
                tool=tool,
                args=_args("permission_request", args),
                tool_call_id=tool_call_id,
                **common,
            )
        )

    async def session_start(self, reason: str = "startup", **common: Any) -> Outcome:
        return await self._fire(
            lambda: self._engine._typed_event("session_start", reason=reason, **common)
        )

    async def stop(self, **common: Any) -> Outcome:
        return await self._fire(lambda: self._engine._typed_event("stop", **common))

    async def session_end(self, reason: str = "exit", **common: Any) -> Outcome:
        return await self._fire(
            lambda: self._engine._typed_event("session_end", reason=reason, **common)
        )

    async def notification(self, type: str, message: str, **common: Any) -> Outcome:
        return await self._fire(
            lambda: self._engine._typed_event("notification", type=type, message=message, **common)
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
        mode: Mode = "enforce",
    ) -> Hook:
        """Register an asyncio coroutine function as a hook; it runs as a task on this loop,
        without crossing into Trio (a background one, of an event that runs its hooks in the
        background, is run by the post worker from Trio, as a task on this loop too).

        Same contract as :meth:`HookEngine.add_hook`; on the hook's timeout its task is
        cancelled (and waited for up to a second).
        """
        handler = PythonHandler(self._guest.on_loop(func), asyncio_func=func)
        label = name or str(getattr(func, "__qualname__", "python-hook"))
        return self._engine._add_python_hook(event, handler, label, match, timeout_s, mode)

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
