"""Copilot CLI's hook contract, read in the terms the rest of the agent dialects use.

Copilot CLI names its events in camelCase (``preToolUse``) and gives its hooks camelCase input
(``toolName``, ``toolArgs``, ``sessionId``) that does not name the event; its hooks answer with
top-level fields (``permissionDecision``, ``modifiedArgs``, ``behavior``). The hooks themselves
get the input exactly as Copilot sent it (plus the ``hook_event_name`` its catch-all names,
see :mod:`triohooks.fronts.relay`); triohooks reads it through :func:`claude_view` -- the same
fields under Claude Code's names -- so matchers, ``if`` rules, the user's own triohooks hooks
and the merge are the ones every agent goes through. Pure functions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

#: Copilot CLI's event -> the Claude Code event of the same meaning (what the merge folds).
CLAUDE_NAMES: Final = {
    "preToolUse": "PreToolUse",
    "postToolUse": "PostToolUse",
    "postToolUseFailure": "PostToolUseFailure",
    "userPromptSubmitted": "UserPromptSubmit",
    "agentStop": "Stop",
    "subagentStart": "SubagentStart",
    "subagentStop": "SubagentStop",
    "sessionStart": "SessionStart",
    "sessionEnd": "SessionEnd",
    "preCompact": "PreCompact",
    "permissionRequest": "PermissionRequest",
    "notification": "Notification",
    "errorOccurred": "ErrorOccurred",
}
#: Copilot CLI's input field -> Claude Code's name for it.
_FIELDS: Final = (
    ("sessionId", "session_id"),
    ("transcriptPath", "transcript_path"),
    ("toolName", "tool_name"),
    ("toolArgs", "tool_input"),
    ("toolResult", "tool_response"),
    ("agentName", "agent_type"),
    ("stopReason", "stop_reason"),
    ("initialPrompt", "initial_prompt"),
    ("customInstructions", "custom_instructions"),
)


def claude_view(payload: Mapping[str, Any]) -> dict[str, Any]:
    """Copilot CLI's hook input under Claude Code's field names (fields with the same name in
    both -- ``cwd``, ``prompt``, ``source``, ``reason``, ``trigger``, ``error``,
    ``notification_type``, ``message`` -- as they are). ``toolArgs`` written as a JSON string
    is read as the object it holds; a freeform tool's text (``apply_patch``'s patch) as
    ``{"input": <text>}``."""
    view = dict(payload)
    for theirs, ours in _FIELDS:
        if theirs in payload and ours not in payload:
            view[ours] = payload[theirs]
    args = view.get("tool_input")
    if isinstance(args, str):
        try:
            decoded: Any = json.loads(args)
        except ValueError:
            decoded = args  # not JSON: the text itself
        if isinstance(decoded, dict):
            view["tool_input"] = decoded
        elif isinstance(decoded, str):
            # A freeform tool's input is its text: Copilot CLI sends apply_patch's toolArgs as
            # the patch itself (measured, 1.0.102), the input Copilot reads as {"input": ...}.
            view["tool_input"] = {"input": decoded}
    return view


def claude_reply(event: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """A Copilot CLI hook's JSON answer to ``event`` (Claude's name) in Claude Code's shape:
    ``permissionDecision``, ``permissionDecisionReason``, ``modifiedArgs`` (or
    ``updatedInput``) and ``additionalContext`` of a pre-tool answer into
    ``hookSpecificOutput``; a permission answer's ``behavior``/``message`` into its
    ``decision``. An answer already in Claude's shape is left as it is."""
    if isinstance(data.get("hookSpecificOutput"), dict):
        return dict(data)
    out = {k: v for k, v in data.items() if k != "additionalContext"}
    specific: dict[str, Any] = {}
    if event == "PreToolUse":
        for name in ("permissionDecision", "permissionDecisionReason"):
            if name in data:
                specific[name] = out.pop(name)
        updated = data.get("modifiedArgs", data.get("updatedInput"))
        if updated is not None:
            specific["updatedInput"] = updated
    elif event == "PermissionRequest" and data.get("behavior") in ("allow", "deny"):
        chosen = {"behavior": data["behavior"]}
        if isinstance(data.get("message"), str):
            chosen["message"] = data["message"]
        specific["decision"] = chosen
        if data.get("interrupt") is True and data["behavior"] == "deny":
            out["continue"] = False
    if isinstance(data.get("additionalContext"), str):
        specific["additionalContext"] = data["additionalContext"]
    if specific:
        out["hookSpecificOutput"] = specific
    return out
