"""The dispatcher actor: one task per event; filter, run, fold, queue; one Outcome out.

Owns the per-event path and nothing under it: take the hook-table snapshot (plus the hooks the
embedding agent registered), **filter** each hook (``match``, ``if``, JSON matchers) against the
arguments as rewritten so far, **run** the synchronous ones in order through
:class:`~triohooks.actors.runs.HookRuns` (the runner interface, observed), **fold** their results
with :class:`~triohooks.combine.outcome.Combiner` (the stop-continue cap with
:class:`~triohooks.combine.outcome.StopContinues`), and **queue** the background ones, with the
hooks they are for, on the post worker. A crash while handling one event is contained and turned
into that event's result, failing closed: an event that can block is blocked with a reason that
says it was an internal error (:func:`~triohooks.combine.outcome.internal_error_outcome`); other
events are untouched. The actor can be run again after a crash (the supervisor does): events that
arrive meanwhile wait for it, bounded by ``RESTART_WAIT_S``.

Must not: know how any kind of hook runs (``triohooks.handlers``), decide what a reply means
(``triohooks.combine``), spawn processes (the reaper) or do file I/O (the audit sink writes).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import msgspec
import trio

from triohooks.combine.outcome import (
    Combiner,
    Outcome,
    StopContinues,
    internal_error_outcome,
    plain_outcome,
)
from triohooks.config import selection
from triohooks.config.events import EVENTS, EventBase
from triohooks.config.model import Hook
from triohooks.config.selection import event_name as _event_name
from triohooks.handlers.runner import HookInput

from .loader import Loader
from .post_worker import PostWorker
from .runs import HookRuns

log = logging.getLogger("triohooks.dispatcher")

_encoder = msgspec.json.Encoder()

#: How long an event waits for a crashed dispatcher to be restarted before it fails closed.
RESTART_WAIT_S: Final = 5.0


def is_sync(hook: Hook, event: str) -> bool:
    """Whether ``hook`` runs in the event's own task (else on the background queue)."""
    info = EVENTS[event]
    return info.json_sync if hook.dialect == "json" else info.sync


class Dispatcher:
    """Runs events against the loader's current table. See the module docstring."""

    def __init__(
        self,
        *,
        loader: Loader,
        runs: HookRuns,
        post_worker: PostWorker,
    ) -> None:
        self.loader = loader
        self.runs = runs
        self.post_worker = post_worker
        self.workspace = runs.workspace
        #: Hooks registered through the engine API (run before the table's, in order).
        self.api_hooks: list[Hook] = []
        self.stop_continues = StopContinues()
        self._nursery: trio.Nursery | None = None
        #: Set while serve() runs; replaced by a fresh one when it stops, which its restart sets.
        self._running = trio.Event()
        #: Events whose handling failed in our own code (contained, failed closed).
        self.crashes = 0

    # -- actor lifecycle ----------------------------------------------------------------------
    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Hold the nursery that event tasks (and the post worker, once first used) run in.

        Runs until cancelled. Safe to run again after a crash: each run has its own nursery;
        events in flight when it crashed are answered (failing closed), later ones wait for the
        new run.
        """
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                self.post_worker.attach(nursery)
                self._running.set()
                task_status.started()
                await trio.sleep_forever()
        finally:
            self._nursery = None
            if self._running.is_set():
                self._running = trio.Event()

    # -- the per-event path -------------------------------------------------------------------
    # The filters and the "nothing runs" test are :mod:`triohooks.config.selection`'s, shared
    # with ``triohooks fire`` (which asks before it starts an engine at all).
    def _hooks_for(self, event: str) -> tuple[Hook, ...]:
        return selection.hooks_for(self.loader.table, self.api_hooks, event)

    def _any_passes(self, hooks: tuple[Hook, ...], event: str, ev: EventBase) -> bool:
        return selection.any_passes(hooks, event, ev, self.workspace)

    def _extra_for(self, event: str, ev: EventBase) -> tuple[Hook, ...]:
        return selection.extra_for(self.loader.table, self.api_hooks, event, ev)

    def _skips(
        self, event: str, ev: EventBase, hooks: tuple[Hook, ...], extra: tuple[Hook, ...]
    ) -> bool:
        return selection.skips(event, ev, hooks, extra, self.workspace)

    def nothing_runs(self, ev: EventBase) -> bool:
        """Whether :meth:`dispatch` takes its fast path for ``ev`` (no hook can run). Reads
        the current snapshot only, no checkpoint: a front on this thread (the asyncio engine)
        may then answer ``plain_outcome`` itself, after ``session_end``'s ``forget_session``
        -- exactly what dispatch does."""
        return selection.nothing_runs(self.loader.table, self.api_hooks, ev, self.workspace)

    def runs_only(self, ev: EventBase, local: Callable[[Hook], bool]) -> bool:
        """Whether every hook that may run for ``ev`` is synchronous and ``local`` says yes to
        it, so :meth:`run_here` can handle the event with a :class:`HookRuns` of the caller's.

        Conservative: a synchronous hook counts unless it cannot run for this tool whatever
        the arguments (TOML ``match``, JSON tool name or glob), since earlier hooks may
        rewrite the arguments its ``if`` or JSON path reads; a background hook counts when it
        passes its filters on the event's own arguments (what :meth:`_queue` tests). Never
        true for ``stop``. Like :meth:`nothing_runs`, it only reads the current snapshot.
        """
        event = _event_name(ev)
        if event == "stop":
            return False
        info = EVENTS[event]
        tool = str(getattr(ev, "tool", "") or "") if info.tool_event else ""
        args = (getattr(ev, "args", None) or {}) if info.tool_event else {}
        for hook in self._hooks_for(event):
            if not is_sync(hook, event):
                if self._passes_filters(hook, event, {"tool": tool, "args": args}):
                    return False
            elif not local(hook) and not (info.tool_event and selection.never_for_tool(hook, tool)):
                return False
        return not self._any_passes(self._extra_for(event, ev), "post_tool_failure", ev)

    async def run_here(self, ev: EventBase, runs: HookRuns) -> Outcome:
        """Handle ``ev`` in the caller's task, its hooks run through ``runs``; only for an
        event :meth:`runs_only` accepted (nothing is queued). Awaits nothing but ``runs``, so
        it runs under whatever event loop ``runs`` belongs to. A crash in our code is
        contained and fails closed, as in :meth:`dispatch`; cancellation propagates."""
        event = _event_name(ev)
        if event == "session_end":
            self.stop_continues.forget_session(ev.session_id)
        try:
            hooks, extra = self._hooks_for(event), self._extra_for(event, ev)
            return await self._run_event(ev, event, hooks, extra, runs)
        except Exception as exc:
            self.crashes += 1
            log.exception("internal error while handling %s", event)
            return internal_error_outcome(event, ev, repr(exc))

    async def dispatch(self, ev: EventBase) -> Outcome:
        """Run one event and return its Outcome.

        A checkpoint when any hook matches. On cancel, the event's task is cancelled too (its
        hook processes are killed) and ``Cancelled`` propagates to the caller.
        """
        event = _event_name(ev)
        if event == "session_end":
            self.stop_continues.forget_session(ev.session_id)
        hooks = self._hooks_for(event)
        extra = self._extra_for(event, ev)
        if self._skips(event, ev, hooks, extra):
            # The fast path: nothing runs, so no task, no copies, no encoding.
            await trio.lowlevel.checkpoint()
            return plain_outcome(event, ev)
        nursery = self._nursery
        if nursery is None:
            with trio.move_on_after(RESTART_WAIT_S):
                await self._running.wait()
            nursery = self._nursery
            if nursery is None:
                return internal_error_outcome(event, ev, "the dispatcher is not running")
        done = trio.Event()
        box: list[Outcome] = []
        scope = trio.CancelScope()
        nursery.start_soon(self._event_task, ev, event, hooks, extra, box, done, scope)
        try:
            await done.wait()
        except trio.Cancelled:
            # Cancel the event and wait (bounded) for its hooks' groups to be killed, so a
            # cancelled fire never returns with a hook of its still running.
            scope.cancel()
            with trio.move_on_after(2, shield=True):
                await done.wait()
            raise
        return box[0]

    async def _event_task(
        self,
        ev: EventBase,
        event: str,
        hooks: tuple[Hook, ...],
        extra: tuple[Hook, ...],
        box: list[Outcome],
        done: trio.Event,
        scope: trio.CancelScope,
    ) -> None:
        try:
            with scope:
                try:
                    box.append(await self._run_event(ev, event, hooks, extra))
                except Exception as exc:
                    # Containment: a bug while handling one event fails that event only,
                    # closed (a guard it would have run must not be bypassed).
                    self.crashes += 1
                    log.exception("internal error while handling %s", event)
                    box.append(internal_error_outcome(event, ev, repr(exc)))
        finally:
            # Cancelled by the caller (who then raises Cancelled and never reads this), by
            # close, or because the dispatcher itself crashed: whoever still waits is answered.
            if not box:
                box.append(internal_error_outcome(event, ev, "the event was cancelled"))
            done.set()

    async def _run_event(
        self,
        ev: EventBase,
        event: str,
        hooks: tuple[Hook, ...],
        extra: tuple[Hook, ...],
        runs: HookRuns | None = None,
    ) -> Outcome:
        runs = runs or self.runs
        fields: dict[str, Any] = msgspec.to_builtins(ev)
        stop_key = ""
        if event == "stop":
            stop_key = StopContinues.key(ev.prompt_id, ev.session_id)
            if self.stop_continues.active(stop_key):
                fields["stop_hook_active"] = True
        listeners = runs.listeners
        if listeners:
            listeners.emit(
                "fired", event=event, session=ev.session_id, hooks=len(hooks) + len(extra)
            )
        combiner = Combiner(event, fields)
        background = [h for h in hooks if not is_sync(h, event)]
        for hook in hooks:
            if combiner.stopped:
                break
            if not is_sync(hook, event):
                continue
            current = fields
            if combiner.current_args is not None:
                current = {**fields, "args": combiner.current_args}
            if combiner.current_prompt is not None:
                current = {**current, "prompt": combiner.current_prompt}
            if not self._passes_filters(hook, event, current):
                continue
            result = await runs.run(hook, HookInput(event, ev.session_id, fields=current))
            combiner.add(hook, result)
        outcome = combiner.finish()
        if event == "stop":
            self.stop_continues.settle(stop_key, outcome, ev.session_id)
        if background:
            outcome.queued |= self._queue(event, ev, fields, background)
        if extra:
            outcome.queued |= self._queue("post_tool_failure", ev, fields, extra)
        if listeners:
            listeners.emit("outcome", event=event, outcome=outcome)
        return outcome

    def _passes_filters(self, hook: Hook, event: str, fields: Mapping[str, Any]) -> bool:
        return selection.passes_filters(hook, event, fields, self.workspace)

    # -- background ---------------------------------------------------------------------------
    def _queue(
        self, event: str, ev: EventBase, fields: dict[str, Any], hooks: Sequence[Hook]
    ) -> bool:
        """Offer the event to the post worker with the hooks that pass their filters; the JSON
        is encoded now, so later changes to the caller's dicts cannot reach the hooks."""
        matching = tuple(h for h in hooks if self._passes_filters(h, event, fields))
        if not matching:
            return False
        payload = _encoder.encode({**fields, "event": event})
        return self.post_worker.offer(
            event=event, session_id=ev.session_id, payload=payload, hooks=matching
        )
