"""The user's own triohooks hooks for an agent's request: the agent's hook input as a triohooks
event, and the triohooks Outcome as one more reply in that agent's merge (docs/agents.md,
"Your triohooks hooks in every agent").

A request from an adopted agent (the endpoint, the relay) runs the hooks the agent has (its
own settings' hooks, moved into ``triohooks-hooks.json``) *and* the hooks of triohooks' own
config for the event it maps to (``PreToolUse`` and ``BeforeTool`` are ``pre_tool`` ...), so a
guard written once (``if = "shell(git push*)"``, a built-in guard) applies to every agent. The
agent's call maps onto the event's fields: ``tool_name`` is the tool, ``tool_input`` its
arguments (the ``if`` rules and built-in guards know each agent's tool names), ``prompt`` the
prompt. The Outcome comes back as a reply in the agent's terms -- a block, a rewrite of
the tool input, context, a message -- folded with the agent hooks' replies by the agent's own
merge rules, as the last hook in order: a deny from either side wins, contexts add up, and a
rewrite by triohooks' hooks is the one the agent gets when both rewrite (with a warning).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from triohooks.combine.outcome import Outcome, approved

from .config import AgentHook, Matcher
from .replies import AgentReply
from .spec import SPECS, AgentName

#: The label triohooks' own hooks go by in an agent's answer (warnings, ``ran``).
NATIVE_LABEL: Final = "triohooks"

#: Agent input field -> triohooks event field, for every event.
_COMMON: Final = (
    ("session_id", "session_id"),
    ("cwd", "cwd"),
    ("transcript_path", "transcript_path"),
    ("permission_mode", "permission_mode"),
)
#: Per triohooks event: agent input field -> event field (beyond the common ones).
_FIELDS: Final[dict[str, tuple[tuple[str, str], ...]]] = {
    "pre_tool": (("tool_name", "tool"), ("tool_input", "args"), ("tool_use_id", "tool_call_id")),
    "permission_request": (("tool_name", "tool"), ("tool_input", "args")),
    "post_tool": (
        ("tool_name", "tool"),
        ("tool_input", "args"),
        ("tool_use_id", "tool_call_id"),
        ("tool_response", "result"),
    ),
    "post_tool_failure": (
        ("tool_name", "tool"),
        ("tool_input", "args"),
        ("tool_use_id", "tool_call_id"),
        ("error", "error"),
    ),
    "prompt_submit": (("prompt", "prompt"),),
    "stop": (("stop_hook_active", "stop_hook_active"),),
    "session_start": (("source", "reason"),),
    "session_end": (("reason", "reason"),),
    "notification": (("message", "message"), ("notification_type", "type")),
    "subagent_start": (("agent_type", "subagent"),),
    "subagent_stop": (("agent_type", "subagent"),),
    "pre_compact": (("trigger", "reason"),),
    "post_compact": (("trigger", "reason"),),
}
#: Events whose call names a tool (its input must be an object for the hooks to read it).
_TOOL_EVENTS: Final = frozenset(
    {"pre_tool", "permission_request", "post_tool", "post_tool_failure"}
)


class UnreadableCall(ValueError):
    """The agent's input cannot be read as the triohooks event (a tool call without a tool
    name or with arguments that are not an object)."""


def native_fields(agent: AgentName, canonical: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    """The triohooks event fields of the agent's hook input ``payload``. Raises
    :class:`UnreadableCall` when a tool event's call cannot be read."""
    fields: dict[str, Any] = {"agent": agent}
    for theirs, ours in (*_COMMON, *_FIELDS.get(canonical, ())):
        value = payload.get(theirs)
        if value is not None:
            fields[ours] = value
    if canonical in _TOOL_EVENTS:
        if not isinstance(fields.get("tool"), str) or not fields["tool"]:
            raise UnreadableCall("the call names no tool (tool_name)")
        if not isinstance(fields.setdefault("args", {}), dict):
            raise UnreadableCall("the call's tool_input is not an object")
    if canonical == "post_tool_failure" and not isinstance(fields.get("error"), str):
        fields["error"] = str(fields.get("error") or "the tool failed")
    if "tool_call_id" in fields and not isinstance(fields["tool_call_id"], str):
        del fields["tool_call_id"]
    return fields


def native_hook(agent: AgentName, event: str, canonical: str) -> AgentHook:
    """The stand-in the agent's merge folds triohooks' answer under."""
    return AgentHook(
        agent=agent,
        event=event,
        canonical=canonical,
        level="triohooks",
        source="triohooks config",
        where=NATIVE_LABEL,
        type="triohooks",
        supported=True,
        matcher=Matcher(None),
        name=NATIVE_LABEL,
        timeout_s=0.0,
    )


def native_reply(
    agent: AgentName, canonical: str, outcome: Outcome, asked: Mapping[str, Any]
) -> tuple[AgentReply, list[str]]:
    """The Outcome as one reply in ``agent``'s terms, and what it cannot carry there
    (warnings for the answer). ``asked``: the event fields the hooks were given."""
    warnings = list(outcome.warnings)
    reason = outcome.reason or outcome.message_for_model or "blocked by a triohooks hook"
    asks = outcome.decision == "ask" and canonical in ("pre_tool", "permission_request")
    if asks and not SPECS[agent].asks and canonical == "pre_tool":
        # The agent cannot put a call to the user (or lets it run on an ask): a deny.
        return AgentReply(status="block", reason=reason), warnings
    if outcome.blocked and canonical != "permission_request":
        # Claude's and Gemini's "block" on a stop means: go on, with the reason as the prompt.
        return AgentReply(status="block", reason=reason), warnings
    out: dict[str, Any] = {}
    specific: dict[str, Any] = {}
    if canonical == "permission_request" and (outcome.blocked or outcome.decision == "allow"):
        behavior = "deny" if outcome.blocked else "allow"
        chosen: dict[str, Any] = {"behavior": behavior}
        if behavior == "deny":
            chosen["message"] = reason
        specific["decision"] = chosen
    elif asks:
        specific["permissionDecision"] = "ask"
        if canonical == "pre_tool":
            specific["permissionDecisionReason"] = reason
    elif canonical == "pre_tool" and SPECS[agent].allows and approved(outcome):
        # The agent's allow, for a call a built-in guard proved (approve_read_only): it runs
        # without the agent's permission prompt. The agent's merge lets any deny or ask of its
        # own hooks win. A hook's own allow is its no-objection: no decision.
        specific["permissionDecision"] = "allow"
        if outcome.reason:
            specific["permissionDecisionReason"] = outcome.reason
    rewritten = outcome.args is not None and outcome.args != asked.get("args")
    if rewritten and canonical in ("pre_tool", "permission_request"):
        specific["tool_input" if SPECS[agent].answer == "gemini" else "updatedInput"] = outcome.args
    if canonical == "prompt_submit" and outcome.prompt not in (None, asked.get("prompt")):
        warnings.append(
            f"a triohooks hook rewrote the prompt, which {agent} cannot take from a hook: "
            "the prompt goes on as it was"
        )
    if outcome.additional_context:
        specific["additionalContext"] = outcome.additional_context
    # The Outcome's warnings (a hook that failed, workspace hooks trust holds back) go where
    # the user looks: the agent shows a systemMessage.
    shown = [*outcome.system_messages, *(f"triohooks: {w}" for w in outcome.warnings)]
    if shown:
        out["systemMessage"] = "\n".join(shown)
    if specific:
        out["hookSpecificOutput"] = specific
    return AgentReply(status="ok", json=out or None), warnings
