"""The pipeline core: plan -> steps -> fold -> answer for one event, sans I/O.

Owns every rule of the per-event path, as plain synchronous code that a driver feeds:

- **plan** (:meth:`Pipeline.plan`): which hooks of a table snapshot (plus the hooks the
  embedding agent registered) can run for the event, which trust holds back, the
  post_tool_failure hooks of a failed post_tool, the fast path (nothing runs: the answer
  at once), the ``stop_hook_active`` flag and ``session_end`` forgetting the stop state;
- **steps** (:meth:`EventRun.next_step`): the synchronous hooks in order, each with the
  event as it reads it (the arguments and prompt as rewritten so far), filtered on them;
- **fold** (:meth:`EventRun.add`): each result into the Outcome
  (:class:`~triohooks.combine.outcome.Combiner`, which also says when the chain stopped);
- **answer** (:meth:`EventRun.finish`): held-back hooks folded in and recorded, the
  stop-continue cap settled, the background hooks that pass their filters queued, the
  listeners told;
- **containment** (:meth:`Pipeline.failed`): a crash of our own code while handling one event
  becomes that event's answer, failing closed.

A driver only runs the steps: it takes the table, awaits each step's hook run and hands the
result back. Two drivers exist: the trio :class:`~triohooks.actors.dispatcher.Dispatcher` and
the asyncio engine (:mod:`triohooks.engine.asyncio_engine`), which runs in-process asyncio hooks
on its loop and crosses into Trio only for process runs. Neither restates a rule here.

Must not: import an event loop (no trio, no asyncio: a test holds it to that), await, run a
hook, or write anything itself; what it hands on (audit records, queued events, listener
events) goes to the objects the driver gives :meth:`EventRun.finish`, through calls that never
wait.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypeVar

import msgspec

from triohooks.config import selection
from triohooks.config.events import EVENTS, EventBase
from triohooks.config.model import ConfigError, Hook, HookTable, config_error_text
from triohooks.config.selection import event_name
from triohooks.config.trust import held_back_message
from triohooks.handlers.replies import RunResult
from triohooks.handlers.runner import HookInput

from .outcome import (
    Combiner,
    Outcome,
    StopContinues,
    closed_outcome,
    hold_back,
    internal_error_outcome,
    plain_outcome,
)

log = logging.getLogger("triohooks.dispatcher")

_encoder = msgspec.json.Encoder()


class Emitter(Protocol):
    """The listeners (:class:`~triohooks.actors.runs.Listeners`): called, never awaited."""

    def __bool__(self) -> bool: ...

    def emit(self, kind: str, **fields: Any) -> None: ...


class Observer(Protocol):
    """Who is told what an event did (:class:`~triohooks.actors.runs.HookRuns`)."""

    @property
    def listeners(self) -> Emitter: ...

    def held_back(
        self, event: str, session: str, hooks: Sequence[str], answer: str, text: str
    ) -> None: ...


class Queue(Protocol):
    """Where background hooks go (:class:`~triohooks.actors.post_worker.PostWorker`); never
    waits, False when the event was dropped."""

    def offer(
        self,
        *,
        event: str,
        session_id: str,
        payload: bytes,
        hooks: tuple[Any, ...],
        env: Mapping[str, str] | None = None,
    ) -> bool: ...


Step = TypeVar("Step")
Result_contra = TypeVar("Result_contra", contravariant=True)


class Plan(Protocol[Step, Result_contra]):
    """What a driver runs for one event, whatever the dialect: groups of steps, each group's
    steps at once (a group of one in order), each result handed back before the next group
    is asked for. A native event's plan is an :class:`EventRun` (one hook per group: a
    rewrite reaches the next hook); an agent's request is
    :class:`~triohooks.agents.plan.AgentPlan` (the agent's hooks at once, as the agent runs
    them, and the user's own hooks as one more lane). The drivers:
    :func:`triohooks.actors.dispatcher.drive` (Trio) and the asyncio engine's."""

    def next_group(self) -> Sequence[Step] | None:
        """The steps to run next, at once; None once the plan is done."""
        ...

    def add(self, step: Step, result: Result_contra) -> None:
        """Fold the result of ``step`` in."""
        ...


def is_sync(hook: Hook, event: str) -> bool:
    """Whether ``hook`` runs in the event's own task (else on the background queue)."""
    info = EVENTS[event]
    return info.json_sync if hook.dialect == "json" else info.sync


class Pipeline:
    """The per-event rules of one engine (or one project of a serve), with the state they
    keep between events: the hooks registered through the API and the stop-continue counts.
    See the module docstring."""

    def __init__(self, workspace: str, api_hooks: list[Hook] | None = None) -> None:
        self.workspace = workspace
        #: Hooks registered through the engine API (run before the table's, in order); a list
        #: given is shared, not copied (every project of a serve runs the embedder's hooks).
        self.api_hooks: list[Hook] = [] if api_hooks is None else api_hooks
        self.stop_continues = StopContinues()
        #: Events whose handling failed in our own code (contained, failed closed).
        self.crashes = 0

    def answer_plain(self, ev: EventBase) -> Outcome:
        """The Outcome of an event no hook runs for, with its one side effect: a
        ``session_end`` forgets the session's stop-continue state."""
        event = event_name(ev)
        if event == "session_end":
            self.stop_continues.forget_session(ev.session_id)
        return plain_outcome(event, ev)

    def plan(
        self,
        table: HookTable,
        ev: EventBase,
        *,
        workspace_hooks: bool = True,
        env: Mapping[str, str] | None = None,
    ) -> EventRun | Outcome:
        """The run of ``ev`` on ``table``, or its Outcome at once when no hook can run (no
        copies, no encoding).

        ``workspace_hooks=False``: the event comes from another project than the engine's
        (an agent's request through ``serve``): only the user's own hooks (global, extra
        configs, API) run for it. ``env``: the session's environment for every hook run
        (:class:`~triohooks.handlers.runner.HookInput`); None: this process's.
        """
        event = event_name(ev)
        hooks = selection.hooks_for(table, self.api_hooks, event)
        extra = selection.extra_for(table, self.api_hooks, event, ev)
        judged_in = ev.workspace or self.workspace
        held = selection.held_back(table, event, ev, judged_in)
        if not workspace_hooks:
            hooks, extra, held = selection.user_trusted(hooks), selection.user_trusted(extra), ()
        if selection.skips(event, ev, hooks, extra, held, judged_in):
            return self.answer_plain(ev)
        if event == "session_end":
            self.stop_continues.forget_session(ev.session_id)
        return EventRun(self, ev, event, hooks, extra, table, held, env)

    def failed(self, ev: EventBase, exc: Exception) -> Outcome:
        """Containment: the Outcome of ``ev`` when handling it raised ``exc``. A config that
        changed and does not load judges no guard; a bug while selecting, matching or running
        the hooks of one event fails that event only, closed (a guard it would have run must
        not be bypassed)."""
        event = event_name(ev)
        if isinstance(exc, ConfigError):
            return closed_outcome(event, ev, config_error_text(exc))
        self.crashes += 1
        log.error("internal error while handling %s", event, exc_info=exc)
        return internal_error_outcome(event, ev, repr(exc))


class EventRun:
    """One event past its plan: the steps a driver runs, the fold, the answer. A
    :class:`Plan`: drive it as

    ``while (step := run.next_step()) is not None: run.add(step, await <run step>)``,
    then ``run.finish(observer, queue)``."""

    def __init__(
        self,
        pipeline: Pipeline,
        ev: EventBase,
        event: str,
        hooks: tuple[Hook, ...],
        extra: tuple[Hook, ...],
        table: HookTable,
        held: tuple[Hook, ...],
        env: Mapping[str, str] | None,
    ) -> None:
        self.pipeline = pipeline
        self.ev = ev
        self.event = event
        self.extra = extra
        self.table = table
        self.held = held
        self.env = env
        self.fields: dict[str, Any] = msgspec.to_builtins(ev)
        self.stop_key = ""
        if event == "stop":
            self.stop_key = StopContinues.key(ev.prompt_id, ev.session_id)
            if pipeline.stop_continues.active(self.stop_key):
                self.fields["stop_hook_active"] = True
        self.hooks = hooks
        self.combiner = Combiner(event, self.fields)
        self._next = 0

    def fired(self, observer: Observer) -> None:
        """Tell the listeners the event is fired (before its first step)."""
        listeners = observer.listeners
        if listeners:
            listeners.emit(
                "fired",
                event=self.event,
                session=self.ev.session_id,
                hooks=len(self.hooks) + len(self.extra),
            )

    def next_step(self) -> tuple[Hook, HookInput] | None:
        """The next synchronous hook to run and the event as it reads it (the arguments and
        prompt as rewritten so far, on which it passed its filters); None once the chain is
        done or stopped (a block)."""
        combiner = self.combiner
        event = self.event
        while self._next < len(self.hooks) and not combiner.stopped:
            hook = self.hooks[self._next]
            self._next += 1
            if not is_sync(hook, event):
                continue
            current = self.fields
            if combiner.current_args is not None:
                current = {**current, "args": combiner.current_args}
            if combiner.current_prompt is not None:
                current = {**current, "prompt": combiner.current_prompt}
            if not self._passes_filters(hook, event, current):
                continue
            return hook, HookInput(event, self.ev.session_id, fields=current, env=self.env)
        return None

    def next_group(self) -> tuple[tuple[Hook, HookInput]] | None:
        """:meth:`next_step` as a group of one (:class:`Plan`): each hook reads the event as
        the hooks before it left it."""
        step = self.next_step()
        return None if step is None else (step,)

    def add(self, step: tuple[Hook, HookInput], result: RunResult) -> None:
        """Fold the result of ``step`` (as :meth:`next_step` gave it) into the Outcome."""
        self.combiner.add(step[0], result)

    def finish(self, observer: Observer, queue: Queue, *, tell: bool = True) -> Outcome:
        """The Outcome, with what it hands on done: held-back hooks folded in and recorded,
        the stop-continue cap settled, background hooks queued, the listeners told (not with
        ``tell=False``: the run is one lane of an agent's request, whose ``outcome`` is the
        event's)."""
        event, ev = self.event, self.ev
        outcome = self.combiner.finish()
        trust = self.table.trust
        if self.held and trust is not None:  # workspace hooks trust keeps from running
            text = held_back_message(trust, None, len(self.held))
            # Hooks that would only observe would change nothing: held back, a warning only.
            observing = all(h.mode == "observe" for h in self.held)
            answer = hold_back(outcome, event, "warn" if observing else self.table.held_back, text)
            observer.held_back(event, ev.session_id, [h.id for h in self.held], answer, text)
        if event == "stop":
            self.pipeline.stop_continues.settle(self.stop_key, outcome, ev.session_id)
        background = [h for h in self.hooks if not is_sync(h, event)]
        if background:
            outcome.queued |= self._queue(queue, event, background)
        if self.extra:
            outcome.queued |= self._queue(queue, "post_tool_failure", self.extra)
        listeners = observer.listeners
        if listeners and tell:
            listeners.emit("outcome", event=event, outcome=outcome)
        return outcome

    def _passes_filters(self, hook: Hook, event: str, fields: Mapping[str, Any]) -> bool:
        judged_in = selection.judged_in(fields, self.pipeline.workspace)
        return selection.passes_filters(hook, event, fields, judged_in)

    def _queue(self, queue: Queue, event: str, hooks: Sequence[Hook]) -> bool:
        """Offer the event to the post worker with the hooks that pass their filters (and the
        session's ``env``, which they run with); the JSON is encoded now, so later changes to
        the caller's dicts cannot reach the hooks."""
        fields = self.fields
        matching = tuple(h for h in hooks if self._passes_filters(h, event, fields))
        if not matching:
            return False
        payload = _encoder.encode({**fields, "event": event})
        session = self.ev.session_id
        return queue.offer(
            event=event, session_id=session, payload=payload, hooks=matching, env=self.env
        )
