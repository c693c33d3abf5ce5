"""Merge the replies of one agent event into the one answer that agent reads.

The agents run all matching hooks in parallel and merge: the most restrictive permission wins
(deny > ask > allow), every context and system message is kept, any ``continue: false`` stops
the agent, any block blocks. Where the agent races -- several ``updatedInput``: the last hook to
*finish* wins in Claude Code -- we are deterministic: the rewrite of the hook that comes last
in config order (lowest-precedence level first, file order within a level) wins, and a warning
says others were overridden.

The answer is JSON in the agent's own output format, as if one hook had printed it on exit 0
(so a block is a block to that agent whichever way it reaches it: relay stdout or the HTTP
endpoint's body). Reasons are the hooks' own words, never their command lines. Pure logic.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

import msgspec

from .config import AgentHook
from .foreign import REPLIES, claude_event
from .replies import MAX_TEXT, AgentReply
from .spec import SPECS, AgentName

#: Claude events where ``decision: "block"`` (or exit 2) blocks, and what blocking means.
_BLOCKABLE: dict[str, str] = {
    "PreToolUse": "deny the tool call",
    "PermissionRequest": "deny the permission",
    "UserPromptSubmit": "erase the prompt",
    "PostToolUse": "tell the model",
    "PostToolUseFailure": "tell the model",
    "Stop": "keep the agent going",
    "SubagentStop": "keep the subagent going",
    "PreCompact": "cancel the compaction",
    "TaskCreated": "refuse the task",
    "BeforeTool": "deny the tool call",
    "AfterTool": "tell the model",
    "BeforeAgent": "block the prompt",
    "AfterAgent": "keep the agent going",
}
#: Events whose plain stdout (exit 0, not JSON) is context for the model.
_TEXT_CONTEXT = frozenset({"UserPromptSubmit", "SessionStart"})
#: Events whose answer takes ``additionalContext`` for the model: Claude Code's, and Copilot
#: CLI's alike (measured with 1.0.102: its model reads it after the call on post-tool, with the
#: prompt, at session start).
_CONTEXT_EVENTS: Final = frozenset(
    {
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "UserPromptSubmit",
        "SessionStart",
        "SubagentStart",
        "Notification",
    }
)
_RANK = {"allow": 1, "ask": 2, "deny": 3}


class AgentAnswer(msgspec.Struct, kw_only=True):
    """What to tell the agent, and a summary for the audit and the fronts."""

    output: dict[str, Any]
    blocked: bool = False
    decision: str | None = None
    reason: str | None = None
    warnings: list[str] = msgspec.field(default_factory=list)
    #: What the hooks said that the agent's answer to this event cannot carry (the runner
    #: logs it: it is in no channel the agent shows).
    undelivered: list[str] = msgspec.field(default_factory=list)


def _text(value: object) -> str | None:
    return value[:MAX_TEXT] if isinstance(value, str) and value else None


def _join(parts: Sequence[str]) -> str | None:
    return "\n".join(parts)[:MAX_TEXT] if parts else None


class _Fold:
    def __init__(self, agent: AgentName, event: str) -> None:
        self.agent = agent
        self.event = event
        self.permission: str | None = None
        self.permission_reason: list[str] = []
        self.block_reasons: list[str] = []
        self.blocked = False
        self.contexts: list[str] = []
        self.system: list[str] = []
        self.stop: str | None = None
        self.stopped = False
        self.suppress = False
        self.updated: dict[str, Any] | None = None
        self.updated_by: list[str] = []
        #: Gemini: every hook's ``reason``, allow answers' too (its aggregator joins them all).
        self.reasons: list[str] = []
        self.permission_decision: dict[str, Any] | None = None
        #: A PermissionRequest's answer is left to the user (a held-back hook's ``ask``): no
        #: other hook's allow stands.
        self.left_to_user = False
        self.warnings: list[str] = []
        #: The agent's own name of the event (``event`` is Claude Code's name for it).
        self.own_event = event

    def permit(self, decision: str, reason: str | None) -> None:
        if decision not in _RANK:
            return
        if self.permission is None or _RANK[decision] > _RANK[self.permission]:
            self.permission = decision
            self.permission_reason = []
        if decision == self.permission and reason:
            self.permission_reason.append(reason)

    def block(self, reason: str | None) -> None:
        self.blocked = True
        if reason:
            self.block_reasons.append(reason)

    def add(self, hook: AgentHook, reply: AgentReply) -> None:
        if reply.status == "error":
            self.warnings.append(f"hook {hook.label} failed (non-blocking): {reply.error}")
            return
        if reply.status == "block":
            if reply.reason:
                self.reasons.append(reply.reason)
            if self.event in ("PreToolUse", "BeforeTool"):
                self.permit("deny", reply.reason or f"blocked by hook {hook.label}")
            elif (
                self.event == "PermissionRequest"
                and not hook.fail_closed
                and self.agent != "copilot"
            ):
                # Claude Code does not honour exit 2 here (only decision.behavior): nor do we
                # (Copilot CLI does: a deny).
                self.warnings.append(
                    f"hook {hook.label} exited 2 on PermissionRequest, which does not deny "
                    "(answer decision.behavior instead)"
                )
            elif self.event == "PermissionRequest":
                self.permission_decision = {
                    "behavior": "deny",
                    "message": reply.reason or f"denied by hook {hook.label}",
                }
            elif self.event in _BLOCKABLE:
                self.block(reply.reason or f"blocked by hook {hook.label}")
            elif reply.reason:
                self.system.append(reply.reason)  # the agent shows it to the user only
            return
        if reply.text is not None and self.event in _TEXT_CONTEXT and self.agent != "copilot":
            self.contexts.append(reply.text)  # (Copilot CLI reads no plain text: measured)
        data = reply.json
        if data is None:
            return
        self._json(hook, data)

    def _json(self, hook: AgentHook, data: Mapping[str, Any]) -> None:
        read = REPLIES.get(self.agent)
        if read is not None and hook.type != "triohooks":  # (ours is in Claude's shape)
            data = read(self.event, data)
        if data.get("continue") is False:
            self.stopped = True
            if self.stop is None:
                self.stop = _text(data.get("stopReason"))
        message = _text(data.get("systemMessage"))
        if message:
            self.system.append(message)
        if data.get("suppressOutput") is True:
            self.suppress = True
        decision = data.get("decision")
        reason = _text(data.get("reason"))
        if reason:
            self.reasons.append(reason)
        specific = data.get("hookSpecificOutput")
        specific = specific if isinstance(specific, dict) else {}
        if self.event in ("PreToolUse", "BeforeTool"):
            permission = specific.get("permissionDecision")
            if isinstance(permission, str):
                said = _text(specific.get("permissionDecisionReason")) or reason
                if permission == "deny" and not said:
                    said = f"denied by hook {hook.label}"
                self.permit(permission, said)
            elif decision in ("approve", "allow", "ask"):
                self.permit("allow" if decision == "approve" else decision, reason)
            elif decision in ("block", "deny"):
                self.permit("deny", reason or f"blocked by hook {hook.label}")
        elif self.event == "PermissionRequest":
            self.left_to_user |= specific.get("permissionDecision") == "ask"
            chosen = specific.get("decision")
            if (
                isinstance(chosen, dict)
                and chosen.get("behavior") in ("allow", "deny")
                and (self.permission_decision is None or chosen["behavior"] == "deny")
            ):
                self.permission_decision = dict(chosen)
        elif decision in ("block", "deny") and self.event in _BLOCKABLE:
            self.block(reason or f"blocked by hook {hook.label}")
        # Claude's updatedInput and Gemini's tool_input both replace the arguments whole.
        updated = specific.get("tool_input" if self.agent == "gemini" else "updatedInput")
        if isinstance(updated, dict):
            if self.updated is not None:
                self.updated_by.append(hook.label)
            self.updated = updated
        context = _text(specific.get("additionalContext")) or _text(data.get("additionalContext"))
        if context:
            self.contexts.append(context)


def merge(
    agent: AgentName,
    event: str,
    runs: Sequence[tuple[AgentHook, AgentReply]],
    *,
    notices: Sequence[str] = (),
) -> AgentAnswer:
    """The agent-format answer for ``event`` after ``runs`` (in config order). ``notices``:
    triohooks' own messages for the user (the tamper alarm), put where the agent shows one."""
    fold = _Fold(agent, claude_event(agent, event))
    fold.own_event = event
    for hook, reply in runs:
        fold.add(hook, reply)
    if fold.left_to_user and (fold.permission_decision or {}).get("behavior") == "allow":
        fold.permission_decision = None
    fold.system += notices
    if fold.updated_by:
        fold.warnings.append(
            f"{len(fold.updated_by) + 1} hooks rewrote the input; the last in config order won"
        )
    if SPECS[agent].answer == "gemini":
        return _gemini(fold)
    if SPECS[agent].answer == "copilot":
        return _copilot(fold)
    if SPECS[agent].answer == "cursor":
        return _cursor(fold)
    if SPECS[agent].answer == "agy":
        return _agy(fold)
    if agent == "codex" and fold.permission == "ask":
        # Codex counts an ask as a failed hook and goes on: the only safe answer is a deny.
        fold.permission = "deny"
        fold.permission_reason = [*fold.permission_reason, "(asked; Codex cannot ask: denied)"]
    answer = _claude(fold)
    return _for_codex(answer, event) if agent == "codex" else answer


#: Fields Codex 0.169.1 rejects per event: its output schemas allow no others, and a reply
#: with one is a *failed* hook -- the call goes on, whatever else the reply said
#: (codex-rs/hooks output_parser.rs, measured).
_CODEX_REJECTS: Final = {
    "PreToolUse": ("continue", "stopReason", "suppressOutput"),
    "PostToolUse": ("suppressOutput",),
}


def _for_codex(answer: AgentAnswer, event: str) -> AgentAnswer:
    """Claude's answer made readable by Codex: no field it would fail the reply for, a deny
    always with a reason, an ``allow`` only with the ``updatedInput`` it goes with (Codex
    fails ``allow`` alone, and ignores ``updatedInput`` without ``allow``)."""
    out = answer.output
    for name in _CODEX_REJECTS.get(event, ()):
        if name in out:
            del out[name]
            answer.warnings.append(f"Codex cannot take {name} on {event}: not sent")
    specific = out.get("hookSpecificOutput")
    if event == "PreToolUse" and isinstance(specific, dict):
        decision = specific.get("permissionDecision")
        if decision == "deny" and not specific.get("permissionDecisionReason"):
            specific["permissionDecisionReason"] = answer.reason or "denied by a hook"
        elif "updatedInput" in specific:
            specific["permissionDecision"] = "allow"
        elif decision == "allow":
            del specific["permissionDecision"]
            specific.pop("permissionDecisionReason", None)
    if event == "PermissionRequest" and isinstance(specific, dict):
        chosen = specific.get("decision")
        if isinstance(chosen, dict) and chosen.pop("updatedInput", None) is not None:
            answer.warnings.append("Codex cannot take updatedInput on PermissionRequest")
    return answer


def _claude(fold: _Fold) -> AgentAnswer:
    out: dict[str, Any] = {}
    answer = AgentAnswer(output=out, warnings=fold.warnings)
    specific: dict[str, Any] = {}
    if fold.stopped:
        out["continue"] = False
        if fold.stop:
            out["stopReason"] = fold.stop
        answer.blocked, answer.decision = True, "stop"
        answer.reason = fold.stop or "a hook stopped the agent"
    if fold.system:
        out["systemMessage"] = _join(fold.system)
    if fold.suppress:
        out["suppressOutput"] = True
    if fold.event == "PreToolUse":
        if fold.permission is not None:
            specific["permissionDecision"] = fold.permission
            reason = _join(fold.permission_reason)
            if reason:
                specific["permissionDecisionReason"] = reason
            answer.decision = fold.permission
            if fold.permission == "deny":
                answer.blocked, answer.reason = True, reason
        if fold.updated is not None and fold.permission != "deny":
            specific["updatedInput"] = fold.updated
    elif fold.event == "PermissionRequest":
        if fold.permission_decision is not None:
            chosen = dict(fold.permission_decision)
            if fold.updated is not None and chosen.get("behavior") == "allow":
                chosen.setdefault("updatedInput", fold.updated)
            specific["decision"] = chosen
            answer.decision = str(chosen.get("behavior"))
            if chosen.get("behavior") == "deny":
                answer.blocked, answer.reason = True, _text(chosen.get("message"))
    elif fold.blocked:
        out["decision"] = "block"
        reason = _join(fold.block_reasons) or "blocked by a hook"
        out["reason"] = reason
        answer.blocked, answer.decision, answer.reason = True, "block", reason
    context = _join(fold.contexts)
    if context and fold.event in _CONTEXT_EVENTS:
        specific["additionalContext"] = context
    elif context:
        out["systemMessage"] = _join([*fold.system, context])
    if specific:
        out["hookSpecificOutput"] = {"hookEventName": fold.event, **specific}
    return answer


def _gemini(fold: _Fold) -> AgentAnswer:
    """Gemini CLI's aggregation (hookAggregator.ts ``mergeWithOrDecision``): a deny or block
    wins, else an ask; the reasons of every hook are joined; the last ``tool_input`` replaces
    the arguments whole; contexts and system messages are joined."""
    out: dict[str, Any] = {}
    answer = AgentAnswer(output=out, warnings=fold.warnings)
    if fold.stopped:
        out["continue"] = False
        if fold.stop:
            out["stopReason"] = fold.stop
        answer.blocked, answer.decision, answer.reason = True, "stop", fold.stop
    if fold.system:
        out["systemMessage"] = _join(fold.system)
    if fold.suppress:
        out["suppressOutput"] = True
    denied = fold.permission == "deny" or fold.blocked
    if denied:
        reason = _join(fold.reasons) or "blocked by a hook"
        out["decision"] = "deny" if fold.event == "BeforeTool" else "block"
        out["reason"] = reason
        answer.blocked, answer.decision, answer.reason = True, out["decision"], reason
    elif fold.permission == "ask" and fold.event == "BeforeTool":
        out["decision"] = answer.decision = "ask"
        if fold.reasons:
            out["reason"] = _join(fold.reasons)
    specific: dict[str, Any] = {}
    if fold.updated is not None and not denied:
        specific["tool_input"] = fold.updated
    context = _join(fold.contexts)
    if context:
        specific["additionalContext"] = context
    if specific:
        out["hookSpecificOutput"] = {"hookEventName": fold.event, **specific}
    return answer


def _keep_going(fold: _Fold, out: dict[str, Any], answer: AgentAnswer, default: str) -> None:
    """A stop's block as a top-level ``decision: "block"`` with the reasons (Copilot CLI's and
    Antigravity CLI's form): the agent goes on with them."""
    reason = _join(fold.block_reasons) or default
    out["decision"], out["reason"] = "block", reason
    answer.blocked, answer.decision, answer.reason = True, "block", reason


def _unblockable(fold: _Fold, answer: AgentAnswer) -> list[str]:
    """A block on an event the agent cannot block: the answer records it (not blocked), and
    its reasons are returned, to be said where the agent reads a message."""
    answer.decision, answer.reason = "block", _join(fold.block_reasons) or "blocked by a hook"
    return list(fold.block_reasons)


def _copilot(fold: _Fold) -> AgentAnswer:
    """Copilot CLI's answer (its hooks reference): a pre-tool ``permissionDecision`` (any deny
    wins; a deny always with its reason) with ``modifiedArgs``, a permission request's
    ``behavior``, a stop's ``decision: block``, ``additionalContext`` where the event takes it.
    Copilot shows no hook message to the user: what Claude Code would show (system messages,
    the tamper alarm, a failed hook) goes with the context, where the model reads it."""
    out: dict[str, Any] = {}
    answer = AgentAnswer(output=out, warnings=fold.warnings)
    contexts = [*fold.contexts, *fold.system]
    if fold.stopped and fold.stop:
        contexts.append(fold.stop)
    if fold.event == "PreToolUse":
        if fold.stopped and fold.permission != "deny":
            fold.permit("deny", fold.stop or "a hook stopped the agent")
        if fold.permission is not None:
            reason = _join(fold.permission_reason)
            out["permissionDecision"] = answer.decision = fold.permission
            if fold.permission == "deny":
                reason = reason or "denied by a hook"
                answer.blocked, answer.reason = True, reason
            if reason:
                out["permissionDecisionReason"] = reason
        if fold.updated is not None and fold.permission != "deny":
            out["modifiedArgs"] = fold.updated
    elif fold.event == "PermissionRequest":
        chosen = fold.permission_decision
        if fold.stopped and (chosen is None or chosen.get("behavior") != "deny"):
            chosen = {"behavior": "deny", "message": fold.stop or "a hook stopped the agent"}
        if chosen is not None:
            out["behavior"] = answer.decision = str(chosen.get("behavior"))
            if isinstance(chosen.get("message"), str):
                out["message"] = chosen["message"]
            if chosen.get("behavior") == "deny":
                answer.blocked, answer.reason = True, _text(chosen.get("message"))
                if fold.stopped:
                    out["interrupt"] = True
    elif fold.event in ("Stop", "SubagentStop") and fold.blocked:
        _keep_going(fold, out, answer, "blocked by a hook")
    elif fold.blocked:
        # postToolUseFailure takes a block (exit 2) as guidance for the model; elsewhere
        # Copilot cannot block: the reason goes with the context (and a refused prompt is
        # carried on by the runner: the turn's tool calls are denied).
        contexts = [*_unblockable(fold, answer), *contexts]
    context = _join(contexts)
    if context and fold.event in _CONTEXT_EVENTS:
        out["additionalContext"] = context
    elif context:
        said = f"Copilot CLI takes no message on this event: {context}"
        answer.warnings.append(said)
        answer.undelivered.append(said)
    return answer


def _cursor(fold: _Fold) -> AgentAnswer:
    """Cursor's answer (its hooks reference): to a call, ``permission`` (any deny wins, then
    ask) with the reasons as ``agent_message`` for the model and ``user_message`` for the
    person, and ``updated_input`` for a rewrite; to a prompt ``continue``; to a stop a
    ``followup_message`` when a hook keeps the agent going. Every system message (a failed
    hook, trust held back, the tamper alarm) goes to ``user_message``, which Cursor shows."""
    out: dict[str, Any] = {}
    answer = AgentAnswer(output=out, warnings=fold.warnings)
    user = list(fold.system)
    if fold.event == "PreToolUse":
        if fold.stopped and fold.permission != "deny":
            fold.permit("deny", fold.stop or "a hook stopped the agent")
        if fold.permission is not None:
            out["permission"] = answer.decision = fold.permission
            reason = _join(fold.permission_reason)
            if fold.permission == "deny":
                reason = reason or "denied by a hook"
                answer.blocked, answer.reason = True, reason
            if reason:
                out["agent_message"] = reason
                user.insert(0, reason)
        if fold.updated is not None and fold.permission != "deny":
            if fold.own_event == "preToolUse":
                out["updated_input"] = fold.updated
            else:
                # Cursor takes a rewrite on preToolUse only: the call as asked is not the one
                # the hooks allowed, so it is denied, with the rewrite for the model to run.
                reason = (
                    f"a hook rewrote this call, which Cursor cannot take on {fold.own_event}: "
                    f"denied; the rewritten call is {json.dumps(fold.updated)}"
                )
                out["permission"] = answer.decision = "deny"
                out["agent_message"] = reason
                user.insert(0, reason)
                answer.blocked, answer.reason = True, reason
    elif fold.event == "UserPromptSubmit":
        if fold.blocked or fold.stopped:
            reason = _join(fold.block_reasons) or fold.stop or "blocked by a hook"
            out["continue"] = False
            user.insert(0, reason)
            answer.blocked, answer.decision, answer.reason = True, "block", reason
    elif fold.event in ("Stop", "SubagentStop") and fold.blocked:
        reason = _join(fold.block_reasons) or "keep going"
        out["followup_message"] = reason
        answer.blocked, answer.decision, answer.reason = True, "block", reason
    elif fold.blocked:
        user = [*fold.block_reasons, *user]  # after a call: Cursor cannot block; said
    if fold.contexts and fold.event in ("SessionStart", "PostToolUse"):
        out["additional_context"] = _join(fold.contexts)
    elif fold.contexts:
        said = f"Cursor takes no context on this event: {_join(fold.contexts)}"
        answer.warnings.append(said)
        answer.undelivered.append(said)
    message = _join(user)
    if message:
        out["user_message"] = message
    return answer


#: agy's answer to a call the hooks let go on: a decision it reads (it denies a call whose
#: answer has none); ``allow`` leaves its own permission prompt in place (reported).
_AGY_GO_ON: Final = "allow"
#: agy's answer to a call put to the user: ``force_ask`` asks whatever the user's grants say
#: (its ``ask`` is its usual permission flow, which a grant may pass).
_AGY_ASK: Final = "force_ask"


def _agy(fold: _Fold) -> AgentAnswer:
    """Antigravity CLI's answer (its reported contract, docs/agents.md): to a call always a
    ``decision`` -- ``deny`` with the reasons as ``reason``, ``force_ask`` for an ask, else
    ``allow``, never none, which agy reads as a deny -- a rewrite it cannot take denied with the
    rewritten call in the reason; to a stop ``decision: "block"`` with the reason that keeps it
    going; context (and every message for the user, which agy has no field for) as
    ``injectSteps`` ``ephemeralMessage`` before an invocation, where the model reads it."""
    out: dict[str, Any] = {}
    answer = AgentAnswer(output=out, warnings=fold.warnings)
    contexts = [*fold.contexts, *fold.system]
    if fold.event == "PreToolUse":
        if fold.stopped and fold.permission != "deny":
            fold.permit("deny", fold.stop or "a hook stopped the agent")
        if fold.updated is not None and fold.permission != "deny":
            fold.permit(
                "deny",
                "a hook rewrote this call, which Antigravity CLI cannot take: denied; the "
                f"rewritten call is {json.dumps(fold.updated)}",
            )
        reason = _join(fold.permission_reason)
        if fold.permission == "deny":
            reason = reason or "denied by a hook"
            out["decision"], out["reason"] = "deny", reason
            answer.blocked, answer.decision, answer.reason = True, "deny", reason
        elif fold.permission == "ask":
            out["decision"], answer.decision = _AGY_ASK, "ask"
            if reason:
                out["reason"] = reason
        else:
            out["decision"] = _AGY_GO_ON
            answer.decision = fold.permission
    elif fold.event == "Stop" and fold.blocked:
        _keep_going(fold, out, answer, "keep going")
    elif fold.blocked:
        # After a call, at a session's start: agy takes no block; the reason is said.
        contexts = [*_unblockable(fold, answer), *contexts]
    context = _join(contexts)
    if context and fold.event == "PreInvocation":
        out["injectSteps"] = [{"ephemeralMessage": context}]
    elif context:
        said = f"Antigravity CLI takes no message on {fold.own_event}: {context}"
        answer.warnings.append(said)
        answer.undelivered.append(said)
    return answer


def internal_error_answer(agent: str, event: str, why: str) -> AgentAnswer:
    """Our own failure while answering ``event``: an event that can block is blocked (denied),
    with a reason that says it was an internal error; the others get a system message. A
    ``Stop`` is not blocked (that would force the agent to go on)."""
    text = f"triohooks internal error while handling {event}: {why}"
    shape = SPECS[agent].answer if agent in SPECS else "claude"
    if shape in ("copilot", "cursor", "agy"):
        event = claude_event(agent, event)
    fold = _Fold("gemini" if shape == "gemini" else "claude", event)
    fold.reasons.append(text)  # what Gemini CLI's deny or block says (else "blocked by a hook")
    if event in ("PreToolUse", "BeforeTool"):
        fold.permit("deny", text)
    elif event == "PermissionRequest":
        fold.permission_decision = {"behavior": "deny", "message": text}
    elif event in _BLOCKABLE and event not in ("Stop", "SubagentStop", "AfterAgent"):
        fold.block(text)
    else:
        fold.system.append(text)
    if shape == "copilot":
        answer = _copilot(fold)
    elif shape == "cursor":
        answer = _cursor(fold)
    elif shape == "agy":
        answer = _agy(fold)
    else:
        answer = _gemini(fold) if shape == "gemini" else _claude(fold)
    answer.warnings.append(text)
    return answer


def held_back_reply(agent: AgentName, event: str, answer: str, message: str) -> AgentReply:
    """What an event gets from project hooks trust held back (folded like a hook's reply, in
    Claude Code's shape): ``warn`` a notice the user sees, ``ask`` the agent's ask (a
    permission request left to the user), ``deny`` a deny; ``message`` says why and the
    trust command, always."""
    claude = claude_event(agent, event)
    notice: dict[str, Any] = {"systemMessage": message}
    specific: dict[str, Any] = {"hookEventName": claude}
    if answer == "warn":
        return AgentReply(status="ok", json=notice, held_back=True)
    if claude == "PermissionRequest" and answer == "ask":
        specific["permissionDecision"] = "ask"
    elif claude == "PermissionRequest":
        specific["decision"] = {"behavior": "deny", "message": message}
    elif answer == "ask" and claude in ("PreToolUse", "BeforeTool"):
        specific["permissionDecision"] = "ask"
        specific["permissionDecisionReason"] = message
    else:
        return AgentReply(status="block", reason=message, held_back=True)
    return AgentReply(status="ok", json={**notice, "hookSpecificOutput": specific}, held_back=True)
