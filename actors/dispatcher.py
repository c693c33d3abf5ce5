"""The dispatcher: filter, run, fold, queue; one Outcome out, in the caller's task.

Owns the per-event path and nothing under it: take the hook-table snapshot (plus the hooks the
embedding agent registered), **filter** each hook (``match``, ``if``, JSON matchers) against the
arguments as rewritten so far, **run** the synchronous ones in order through
:class:`~triohooks.actors.runs.HookRuns` (the runner interface, observed), **fold** their results
with :class:`~triohooks.combine.outcome.Combiner` (the stop-continue cap with
:class:`~triohooks.combine.outcome.StopContinues`), and **queue** the background ones, with the
hooks they are for, on the post worker.

An event runs in the task of whoever fired it: its cancel scope and deadline are the caller's,
and nothing else shares its fate (no event nursery: a crash elsewhere cannot cancel it). A
crash while handling one event is contained and turned into that event's result, failing
closed: an event that can block is blocked with a reason that says it was an internal error
(:func:`~triohooks.combine.outcome.internal_error_outcome`); other events are untouched.

Must not: know how any kind of hook runs (``triohooks.handlers``), decide what a reply means
(``triohooks.combine``), spawn processes (the reaper) or do file I/O (the audit sink writes).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
import trio

from triohooks.combine.outcome import (
    Combiner,
    Outcome,
    StopContinues,
    closed_outcome,
    hold_back,
    internal_error_outcome,
    plain_outcome,
)
from triohooks.config import selection
from triohooks.config.events import EVENTS, EventBase
from triohooks.config.model import ConfigError, Hook, HookTable, config_error_text
from triohooks.config.selection import event_name as _event_name
from triohooks.config.trust import held_back_message
from triohooks.handlers.runner import HookInput

from .loader import Loader
from .post_worker import PostWorker
from .runs import HookRuns

log = logging.getLogger("triohooks.dispatcher")

_encoder = msgspec.json.Encoder()


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
        #: Events whose handling failed in our own code (contained, failed closed).
        self.crashes = 0

    # -- the per-event path -------------------------------------------------------------------
    # The filters and the "nothing runs" test are :mod:`triohooks.config.selection`'s, shared
    # with ``triohooks fire`` (which asks before it starts an engine at all).
    def nothing_runs(self, ev: EventBase) -> bool:
        """Whether :meth:`dispatch` takes its fast path for ``ev`` (no hook can run): the same
        :func:`~triohooks.config.selection.skips` it asks, on a table that is current. No
        checkpoint, so a front on this thread (the asyncio engine) can ask it first and then
        answer with :meth:`answer_plain`, exactly what dispatch does. False (dispatch must
        look) for a table whose files changed, and for a bug in the selection."""
        try:
            return self.loader.is_current() and selection.nothing_runs(
                self.loader.table, self.api_hooks, ev, self.workspace
            )
        except Exception:
            log.exception("internal error while selecting hooks (dispatch answers it)")
            return False

    def answer_plain(self, ev: EventBase) -> Outcome:
        """The Outcome of an event no hook runs for, with its one side effect: a
        ``session_end`` forgets the session's stop-continue state."""
        event = _event_name(ev)
        if event == "session_end":
            self.stop_continues.forget_session(ev.session_id)
        return plain_outcome(event, ev)

    async def dispatch(
        self,
        ev: EventBase,
        *,
        workspace_hooks: bool = True,
        env: Mapping[str, str] | None = None,
    ) -> Outcome:
        """Run one event in the caller's task and return its Outcome.

        ``workspace_hooks=False``: the event comes from another project than the engine's
        (an agent's request through ``serve``): only the user's own hooks (global, extra
        configs, API) run for it, never this workspace's. ``env``: the environment of the
        session the event comes from (the relay sends the agent session's), handed to every
        hook run of the event as it is (:class:`~triohooks.handlers.runner.HookInput`); None:
        this process's. A checkpoint. On cancel the running hook's process group is killed
        (by the reaper, shielded and bounded) before ``Cancelled`` propagates to the caller.
        """
        event = _event_name(ev)
        try:
            outcome = await self._dispatch(ev, event, workspace_hooks, env)
        except ConfigError as exc:
            # The config changed and does not load: no guard of it can be judged.
            outcome = closed_outcome(event, ev, config_error_text(exc))
        except Exception as exc:
            # Containment: a bug while selecting, matching or running the hooks of one event
            # fails that event only, closed (a guard it would have run must not be bypassed).
            self.crashes += 1
            log.exception("internal error while handling %s", event)
            outcome = internal_error_outcome(event, ev, repr(exc))
        # Always a checkpoint, even when every hook answered without yielding (an in-process
        # one): the actors it fed (the audit sink, the post worker) get their turn.
        await trio.lowlevel.checkpoint()
        return outcome

    async def _dispatch(
        self, ev: EventBase, event: str, workspace_hooks: bool, env: Mapping[str, str] | None
    ) -> Outcome:
        table = await self.loader.current()
        hooks = selection.hooks_for(table, self.api_hooks, event)
        extra = selection.extra_for(table, self.api_hooks, event, ev)
        judged_in = ev.workspace or self.workspace
        held = selection.held_back(table, event, ev, judged_in)
        if not workspace_hooks:
            hooks, extra, held = selection.user_trusted(hooks), selection.user_trusted(extra), ()
        if selection.skips(event, ev, hooks, extra, held, judged_in):
            return self.answer_plain(ev)  # the fast path: nothing runs, no copies, no encoding
        if event == "session_end":
            self.stop_continues.forget_session(ev.session_id)
        return await self._run_event(ev, event, hooks, extra, table, held, env)

    async def _run_event(
        self,
        ev: EventBase,
        event: str,
        hooks: tuple[Hook, ...],
        extra: tuple[Hook, ...],
        table: HookTable,
        held: tuple[Hook, ...],
        env: Mapping[str, str] | None,
    ) -> Outcome:
        runs = self.runs
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
            result = await runs.run(hook, HookInput(event, ev.session_id, fields=current, env=env))
            combiner.add(hook, result)
        outcome = combiner.finish()
        if held and table.trust is not None:  # workspace hooks trust keeps from running
            text = held_back_message(table.trust, None, len(held))
            answer = hold_back(outcome, event, table.held_back, text)
            runs.held_back(event, ev.session_id, [h.id for h in held], answer, text)
        if event == "stop":
            self.stop_continues.settle(stop_key, outcome, ev.session_id)
        if background:
            outcome.queued |= self._queue(event, ev, fields, background, env)
        if extra:
            outcome.queued |= self._queue("post_tool_failure", ev, fields, extra, env)
        if listeners:
            listeners.emit("outcome", event=event, outcome=outcome)
        return outcome

    def _passes_filters(self, hook: Hook, event: str, fields: Mapping[str, Any]) -> bool:
        judged_in = selection.judged_in(fields, self.workspace)
        return selection.passes_filters(hook, event, fields, judged_in)

    # -- background ---------------------------------------------------------------------------
    def _queue(
        self,
        event: str,
        ev: EventBase,
        fields: dict[str, Any],
        hooks: Sequence[Hook],
        env: Mapping[str, str] | None,
    ) -> bool:
        """Offer the event to the post worker with the hooks that pass their filters (and the
        session's ``env``, which they run with); the JSON is encoded now, so later changes to
        the caller's dicts cannot reach the hooks."""
        matching = tuple(h for h in hooks if self._passes_filters(h, event, fields))
        if not matching:
            return False
        payload = _encoder.encode({**fields, "event": event})
        return self.post_worker.offer(
            event=event, session_id=ev.session_id, payload=payload, hooks=matching, env=env
        )
