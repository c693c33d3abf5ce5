"""The Outcome of one event, and how the hooks' replies combine into it (docs/design.md §5, §7).

Owns the decision rules: the first block wins and stops the chain; the first ``decision`` and
any ``continue`` count; a guard's approval stands only where no enforced hook asks, before or
after it (:func:`approved`); contexts join with newlines; every ``system_message`` is kept;
rewrites chain (TOML ``updated_args``: the first hook's win; JSON ``patch.arguments``:
shallow merge); failures follow ``fail_closed`` (TOML) or ``on_error`` (JSON). Pure logic: it
must not run anything or do I/O. It never mutates the dicts it is given (rewrites build new
ones), so the caller's arguments and the hooks' decoded replies need no copying.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import msgspec

from triohooks.config.events import ADVISORY_JSON_EVENTS, EVENTS, MAX_STOP_CONTINUES
from triohooks.config.model import Hook
from triohooks.handlers.outcomes import FAILED_OUTCOMES
from triohooks.match.ifrules import script_texts

#: Events whose answer can be "ask the user" (the blitz dialect's ``ask``; a permission
#: request left to the user).
ASKS: Final = frozenset({"pre_tool", "permission_request"})

if TYPE_CHECKING:  # annotations only: ``triohooks fire`` with nothing to run never reads a reply
    from triohooks.handlers.replies import RunResult


class RunRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One hook that actually ran, as the Outcome reports it."""

    hook: str
    source: str
    dialect: str
    outcome: str
    exit_code: int | None = None
    duration_ms: float = 0.0
    error: str | None = None
    decision: str | None = None
    #: prompt hooks: the judge's token counts (null for other hooks).
    input_tokens: int | None = None
    output_tokens: int | None = None
    #: The hook said more than its cap (stdout/stderr, an http body): only the head was read.
    truncated: bool = False
    #: A built-in guard proved the call safe to run without the agent's prompt (:func:`approved`).
    approved: bool = False


class Outcome(msgspec.Struct, kw_only=True):
    """The one answer to the agent, the same from Python, the CLI and the websocket."""

    event: str
    blocked: bool = False
    decision: str | None = None
    reason: str | None = None
    message_for_model: str | None = None
    user_message: str | None = None
    args: dict[str, Any] | None = None
    prompt: str | None = None
    result: Any = None
    error: str | None = None
    additional_context: str | None = None
    system_messages: list[str] = msgspec.field(default_factory=list)
    continue_: bool = msgspec.field(default=False, name="continue")
    queued: bool = False
    runs: list[RunRecord] = msgspec.field(default_factory=list)
    #: Things the user should know that are not decisions (ignored blocks, failed hooks, caps).
    warnings: list[str] = msgspec.field(default_factory=list)

    def to_builtins(self) -> dict[str, Any]:
        out: dict[str, Any] = msgspec.to_builtins(self)
        return out


def failure_text(result: RunResult) -> str:
    return result.error or result.outcome


def plain_outcome(event: str, ev: Any) -> Outcome:
    """The Outcome of an event no hook ran for: everything as the agent sent it."""
    outcome = Outcome(event=event)
    if EVENTS[event].tool_event:
        outcome.args = ev.args
    if event == "prompt_submit":
        outcome.prompt = ev.prompt
    elif event in ("post_tool", "post_tool_failure"):
        outcome.result = ev.result
        outcome.error = ev.error
    return outcome


class Combiner:
    """Folds hook results into an :class:`Outcome`, one hook at a time, in run order."""

    def __init__(self, event: str, fields: dict[str, Any]) -> None:
        self.event = event
        self.info = EVENTS[event]
        self.outcome = Outcome(event=event)
        self._contexts: list[str] = []
        self._toml_rewrote = False
        if self.info.tool_event:
            self.outcome.args = fields.get("args") or {}
        if event == "prompt_submit":
            self.outcome.prompt = fields.get("prompt") or ""
        if event in ("post_tool", "post_tool_failure"):
            self.outcome.result = fields.get("result")
            self.outcome.error = fields.get("error")
        #: Set once a hook stopped the chain; later hooks must not run.
        self.stopped = False
        #: An enforced hook asked: no guard's approval stands in this event (:func:`approved`).
        self._asked = False
        #: The reason of the first guard's approval folded (None: none was).
        self._approval: str | None = None

    # -- inputs the next hook sees ------------------------------------------------------------
    @property
    def current_args(self) -> dict[str, Any] | None:
        return self.outcome.args

    @property
    def current_prompt(self) -> str | None:
        return self.outcome.prompt

    # -- folding ------------------------------------------------------------------------------
    def add(self, hook: Hook, result: RunResult) -> None:
        self.outcome.runs.append(
            RunRecord(
                hook=hook.name,
                source=hook.source or hook.scope,
                dialect=hook.dialect,
                outcome=result.outcome,
                exit_code=result.exit_code,
                duration_ms=round(result.duration_ms, 3),
                error=result.error,
                decision=result.decision,
                input_tokens=result.input_tokens,
                output_tokens=result.output_tokens,
                truncated=result.truncated,
                # An observing guard's proof approves nothing (observe mode changes nothing),
                # and none stands beside an enforced hook's ask.
                approved=result.approved and hook.mode != "observe" and not self._asked,
            )
        )
        if hook.mode == "observe":
            self._observe(hook, result)
            return
        if result.system_message:
            self.outcome.system_messages.append(result.system_message)
        if result.warning:
            self._warn(result.warning)
        if result.outcome in FAILED_OUTCOMES:
            self._failed(hook, result)
            return
        if result.outcome == "block":
            self._block(hook, result.reason or "blocked by hook", result.user_message)
            return
        if result.outcome == "mutate":
            if advisory(hook) or result.patch is None:
                self._warn(f"hook {hook.name}: a mutate is ignored for {hook.config_event}")
            else:
                self._patch(hook, result.patch)
            return
        self._reply(hook, result)

    def _observe(self, hook: Hook, result: RunResult) -> None:
        """An observe-mode hook's result: nothing of it reaches the Outcome (no block, ask,
        allow, stop-continue, rewrite, context or message; a failure never blocks, an internal
        one included: the hook only observes), and the chain goes on. What enforcing it would
        have done is one warning, where the user sees the event's warnings."""
        if result.warning:
            self._warn(result.warning)
        if result.outcome in FAILED_OUTCOMES:
            why = failure_text(result)
            self._warn(f"hook {hook.name} (observe mode) failed: {why}; not enforced")
            return
        would = observed(hook, self.event, result)
        if would:
            self._warn(f"hook {hook.name} (observe mode) would {'; '.join(would)}; not enforced")

    def _failed(self, hook: Hook, result: RunResult) -> None:
        why = failure_text(result)
        if result.internal:  # our bug, not the hook's: the guard stays closed
            self._block(hook, f"triohooks internal error running hook {hook.name}: {why}", None)
            return
        if hook.dialect == "json":
            if hook.on_error == "block":
                self._block(hook, f"hook {hook.name} failed: {why}", None)
            elif hook.on_error == "warn":
                self._warn(f"hook {hook.name} failed: {why}")
            return
        if hook.fail_closed:
            self._block(hook, f"hook {hook.name} failed and is fail_closed: {why}", None)
        else:
            self._warn(f"hook {hook.name} failed: {why}")

    def _block(self, hook: Hook, reason: str, user_message: str | None) -> None:
        """The hook blocks: the chain stops. On an event that cannot block (or the JSON
        dialect's advisory ones) the block is ignored with a warning and later hooks run."""
        o = self.outcome
        if advisory(hook) or not self.info.can_block:
            self._warn(f"hook {hook.name}: a block is ignored for {hook.config_event}: {reason}")
            return
        self.stopped = True
        o.blocked = True
        o.reason = reason
        o.decision = block_decision(self.event)  # blocks win over any earlier decision
        if self.event == "stop":
            o.continue_ = True
        if user_message:
            o.user_message = user_message
        if self.event == "pre_tool":
            o.message_for_model = f"blocked by pre_tool hook: {reason}"

    def _reply(self, hook: Hook, r: RunResult) -> None:
        o = self.outcome
        decision = r.decision or None
        if decision in ("block", "deny"):
            self._block(hook, r.reason or "blocked by hook", r.user_message)
            return
        if decision == "ask" and not self._asked:
            # A guard's approval never outranks another hook's ask, in either order.
            self._asked = True
            o.runs = [msgspec.structs.replace(run, approved=False) for run in o.runs]
        if r.approved:
            # Not the first decision said: a later hook's ask must still be the answer. It is
            # the event's allow at the end if it stands and no hook said anything (finish).
            if self._approval is None:
                self._approval = r.reason or "approved"
        elif decision and o.decision is None:
            o.decision = decision
            if r.reason and o.reason is None:
                o.reason = r.reason
        if r.continue_:
            if self.event == "stop":
                o.continue_ = True
                o.blocked = True
                o.decision = "continue"
                o.reason = r.reason or o.reason or "a stop hook asked to continue"
            else:
                o.continue_ = True
        if r.additional_context:
            self._contexts.append(r.additional_context)
        elif r.plain_output and self.event in ("session_start", "prompt_submit"):
            self._contexts.append(r.plain_output.rstrip("\n"))
        if r.updated_args is not None and self.info.tool_event:
            if self.event != "pre_tool":
                self._warn(f"hook {hook.name}: updated_args is only used on pre_tool")
            elif not self._toml_rewrote:
                self._toml_rewrote = True
                o.args = r.updated_args
        if r.user_message and o.user_message is None:
            o.user_message = r.user_message

    def _patch(self, hook: Hook, patch: dict[str, Any]) -> None:
        o = self.outcome
        if self.event == "pre_tool":
            args = patch.get("arguments")
            if isinstance(args, dict):
                o.args = {**(o.args or {}), **args}
            elif args is not None:
                self._warn(f"hook {hook.name}: patch.arguments is not an object; ignored")
        elif self.event == "prompt_submit":
            message = patch.get("message")
            if isinstance(message, str):
                o.prompt = message
            elif message is not None:
                self._warn(f"hook {hook.name}: patch.message is not a string; ignored")
        elif self.event == "post_tool":
            if "result" in patch:
                o.result = patch["result"]
            if "error" in patch:
                if isinstance(patch["error"], str) or patch["error"] is None:
                    o.error = patch["error"]
                else:
                    self._warn(f"hook {hook.name}: patch.error is not a string; ignored")
            context = patch.get("additional_context")
            if isinstance(context, str) and context:
                self._contexts.append(context)
                if isinstance(o.result, dict):
                    o.result = {**o.result, "hook_context": self._joined()}
                else:
                    o.result = {"value": o.result, "hook_context": context}
        else:
            self._warn(f"hook {hook.name}: a mutate is ignored for {hook.config_event}")

    def _joined(self) -> str:
        return "\n".join(self._contexts)

    def _warn(self, text: str) -> None:
        self.outcome.warnings.append(text)

    def finish(self) -> Outcome:
        o = self.outcome
        if self._contexts:
            o.additional_context = self._joined()
        if o.decision is None and not o.blocked and any(run.approved for run in o.runs):
            o.decision, o.reason = "allow", o.reason or self._approval
        return o


def advisory(hook: Hook) -> bool:
    """A JSON-dialect hook on one of that dialect's advisory events (``turn_end`` ...): its
    blocks and mutations are ignored (with a warning)."""
    return hook.dialect == "json" and hook.config_event in ADVISORY_JSON_EVENTS


def block_decision(event: str) -> str:
    """The Outcome's decision for a block of ``event``: a stop's "block" means "go on", a
    permission request's is its "deny"."""
    return {"stop": "continue", "permission_request": "deny"}.get(event, "block")


def approved(outcome: Outcome) -> bool:
    """Whether the event's answer is an approval an agent may take as its own allow (the call
    runs without its permission prompt): the decision is ``allow`` (no block), a built-in guard
    proved the call (``approve_read_only``) and the fold let that stand (no enforced hook
    asked, before or after it: :meth:`Combiner.add`). A hook's ``allow`` alone is not one:
    it is that hook's no-objection, which must not switch off the agent's own prompts."""
    return (
        outcome.decision == "allow"
        and not outcome.blocked
        and any(run.approved for run in outcome.runs)
    )


def audit_decision(hook: Hook, event: str, result: RunResult) -> str | None:
    """What the audit trail records for one run (docs/design.md §8): ``error`` for a failure,
    ``block`` (``hook-deny`` on a permission request) for a block or deny, ``hook-allow`` for an
    allow of a tool call or permission; None: the run is not audited. An observe-mode hook's
    run (:func:`stops`): ``would_block`` for what would have stopped or held the agent (a
    block, deny, ask, or a stop hook's continue), ``would_allow`` for an allow, ``error`` for
    a failure."""
    if result.outcome in FAILED_OUTCOMES:
        return "error"
    if hook.mode == "observe":
        if stops(hook, event, result) is not None:
            return "would_block"
        return "would_allow" if _allows(event, result) else None
    if result.outcome == "block" or result.decision in ("block", "deny"):
        return "hook-deny" if event == "permission_request" else "block"
    if _allows(event, result):
        return "hook-allow"
    return None


def _allows(event: str, result: RunResult) -> bool:
    return result.decision == "allow" and event in ("permission_request", "pre_tool")


def stops(hook: Hook, event: str, result: RunResult) -> str | None:
    """What of ``result`` (not a failure) would stop or hold the agent if enforced:
    ``block`` (``deny`` on a permission request), ``ask``, ``continue`` (a stop hook that
    makes the agent go on); None when nothing would, or on an event (or a JSON advisory one)
    where the fold ignores a block."""
    blocks = result.outcome == "block" or result.decision in ("block", "deny")
    ignored = advisory(hook)
    if blocks and EVENTS[event].can_block and not ignored:
        return block_decision(event)
    if event == "stop" and result.continue_ and not ignored:
        return "continue"
    if result.decision == "ask" and event in ASKS:
        return "ask"
    return None


def observed_detail(
    hook: Hook, event: str, result: RunResult, fields: Mapping[str, Any]
) -> dict[str, Any]:
    """The audit detail of an observe-mode hook's ``would_*`` record: what it would have done
    (``would``: block, deny, ask, continue, allow) and the call it judged (``tool``, and the
    shell ``command`` it carries), which ``triohooks audit report`` groups by."""
    detail: dict[str, Any] = {"would": stops(hook, event, result) or "allow"}
    tool = fields.get("tool")
    if isinstance(tool, str):
        detail["tool"] = tool
    args = fields.get("args")
    if isinstance(args, Mapping):
        scripts = script_texts(args)
        if scripts:
            detail["command"] = "\n".join(scripts)[:MAX_COMMAND_CHARS]
    return detail


#: Longest shell command an observe record keeps (the audit sink redacts what it keeps).
MAX_COMMAND_CHARS: Final = 500


def observed(hook: Hook, event: str, result: RunResult) -> list[str]:
    """What an observe-mode hook's run (not a failure) would have done enforced, in words
    for the Outcome's warning (empty: nothing). The same reading as :func:`audit_decision`'s."""
    would: list[str] = []
    stop = stops(hook, event, result)
    why = f": {result.reason}" if result.reason else ""
    if stop == "ask":
        would.append(f"ask the user{why}")
    elif stop == "continue":
        would.append(f"make the agent go on{why}")
    elif stop is not None:
        would.append(f"{stop}{why}")
    elif _allows(event, result):
        would.append("allow the call")
    if result.outcome == "mutate" or result.updated_args is not None:
        would.append("rewrite the event")
    if result.additional_context or (
        result.plain_output and event in ("session_start", "prompt_submit")
    ):
        would.append("add context")
    if result.system_message or result.user_message:
        would.append("show a message")
    return would


class StopContinues:
    """How often stop hooks made the agent go on, per prompt (blitz HK-51: at most
    :data:`~triohooks.config.events.MAX_STOP_CONTINUES` times; ``stop_hook_active`` after the
    first). Keyed by the prompt id, or the session id when the agent sends no prompt id.

    Bounded, so a long-running server stays flat: a session's entries go at its
    ``session_end``, and past ``cap`` prompts the oldest entry is forgotten (a prompt that old
    could at worst make the agent go on 5 more times).
    """

    DEFAULT_CAP: Final = 10_000

    def __init__(self, cap: int = DEFAULT_CAP) -> None:
        self.cap = cap
        #: key -> (continues so far, session id), oldest first.
        self._counts: dict[str, tuple[int, str]] = {}
        self._by_session: dict[str, set[str]] = {}

    @staticmethod
    def key(prompt_id: str | None, session_id: str) -> str:
        return prompt_id or session_id

    def __len__(self) -> int:
        return len(self._counts)

    def active(self, key: str) -> bool:
        """Whether a stop hook already made this prompt go on (``stop_hook_active``)."""
        return key in self._counts

    def settle(self, key: str, outcome: Outcome, session_id: str = "") -> None:
        """Count a ``continue`` in ``outcome``, or turn it into a stop once the cap is reached."""
        if not outcome.continue_:
            return
        count = self._counts.get(key, (0, ""))[0]
        if count >= MAX_STOP_CONTINUES:
            outcome.continue_ = False
            outcome.blocked = False
            outcome.decision = None
            outcome.warnings.append(
                f"stop hooks asked to continue, but the limit of {MAX_STOP_CONTINUES} "
                "per prompt is reached; the agent stops"
            )
            return
        self._set(key, count + 1, session_id)

    def _set(self, key: str, count: int, session_id: str) -> None:
        if key not in self._counts:
            while len(self._counts) >= self.cap:
                self._forget(next(iter(self._counts)))
            self._by_session.setdefault(session_id, set()).add(key)
        else:
            session_id = self._counts[key][1]
        self._counts[key] = (count, session_id)

    def _forget(self, key: str) -> None:
        _, session_id = self._counts.pop(key)
        keys = self._by_session.get(session_id)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._by_session[session_id]

    def forget_session(self, session_id: str) -> None:
        """The session ended: its prompts' counts go."""
        for key in self._by_session.pop(session_id, ()):
            self._counts.pop(key, None)

    def snapshot(self) -> dict[str, int]:
        return {key: count for key, (count, _) in self._counts.items()}

    def restore(self, counts: Mapping[str, int]) -> None:
        for key, count in counts.items():
            if count > 0:
                self._set(key, count, "")


def internal_error_outcome(event: str, ev: Any, why: str) -> Outcome:
    """The Outcome when our own code failed while handling ``ev`` (docs/design.md §7: fail closed at
    boundaries). An event that can block is blocked, with a reason that says it was an internal
    error, so a fail-closed guard is never silently bypassed; ``stop`` (whose "block" would force
    the agent to go on) and the advisory events only get the warning."""
    return closed_outcome(event, ev, f"internal error while handling {event}: {why}")


def closed_outcome(event: str, ev: Any, text: str) -> Outcome:
    """The Outcome of an event nothing could be judged for (our own failure, a config that
    does not load): blocked where the event can be, with ``text`` as the reason; a warning
    for ``stop`` and the advisory events."""
    outcome = plain_outcome(event, ev)
    outcome.warnings.append(text)
    if _denies(event):
        _block(outcome, event, text)
    return outcome


def _denies(event: str) -> bool:
    """Whether blocking ``event`` keeps something from happening (a ``stop`` block would make
    the agent go on instead)."""
    return EVENTS[event].can_block and event != "stop"


def _block(outcome: Outcome, event: str, text: str) -> None:
    outcome.blocked = True
    outcome.reason = text
    outcome.decision = "deny" if event == "permission_request" else "block"
    if event == "pre_tool":
        outcome.message_for_model = f"blocked by pre_tool hook: {text}"


def held_back_answer(event: str, setting: str) -> str:
    """What an event gets when workspace hooks trust holds back would have run for it, by the
    user's ``held_back`` setting: ``ask`` where the event has one, else a ``deny`` where it
    can be blocked, else (and with ``warn``) a ``warn``ing only."""
    if setting == "warn" or not _denies(event):
        return "warn"
    if setting == "ask" and event in ASKS:
        return "ask"
    return "deny"


def hold_back(outcome: Outcome, event: str, setting: str, text: str) -> str:
    """Fold held-back hooks into ``outcome`` (:func:`held_back_answer`), saying ``text``
    always; returns the answer given. A block already in the Outcome stays; an ``ask``
    replaces any allow the user's own hooks gave."""
    answer = held_back_answer(event, setting)
    outcome.warnings.append(text)
    if outcome.blocked or answer == "warn":
        return answer
    if answer == "ask":
        outcome.decision = "ask"
        outcome.reason = text
        return answer
    _block(outcome, event, text)
    return answer
