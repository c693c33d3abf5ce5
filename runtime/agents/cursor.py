"""Cursor's hook contract (``hooks.json``), read in the terms the rest of the agent dialects use.

Cursor gives each kind of call its own event -- ``beforeShellExecution`` with the command line
at the top level, ``beforeMCPExecution`` with ``tool_input`` as a JSON string,
``beforeReadFile`` with the file -- names the conversation ``conversation_id`` and the project
``workspace_roots``, and its hooks answer ``permission`` (``allow``/``deny``/``ask``) with a
``user_message`` for the person and an ``agent_message`` for the model, ``continue`` to a
prompt, ``followup_message`` to a stop. Its hooks get the input exactly as Cursor sent it;
triohooks reads it through :func:`claude_view` (each call as a tool call under Claude Code's
field names: a shell command is the tool ``Shell`` with ``{"command": ...}``, a read ``Read``
with ``{"file_path": ...}``) so matchers, ``if`` rules, the user's own triohooks hooks and the
merge are the ones every agent goes through. Pure functions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

#: Cursor's event -> the Claude Code event of the same meaning (what the merge folds).
CLAUDE_NAMES: Final = {
    "beforeShellExecution": "PreToolUse",
    "beforeMCPExecution": "PreToolUse",
    "beforeReadFile": "PreToolUse",
    "preToolUse": "PreToolUse",
    "afterShellExecution": "PostToolUse",
    "afterMCPExecution": "PostToolUse",
    "afterFileEdit": "PostToolUse",
    "postToolUse": "PostToolUse",
    "beforeSubmitPrompt": "UserPromptSubmit",
    "stop": "Stop",
    "subagentStop": "SubagentStop",
    "sessionStart": "SessionStart",
    "sessionEnd": "SessionEnd",
    "preCompact": "PreCompact",
}
#: The tool a call of each specific event is, for matchers and ``if`` rules.
SHELL_TOOL: Final = "Shell"
_EVENT_TOOLS: Final = {
    "beforeShellExecution": SHELL_TOOL,
    "afterShellExecution": SHELL_TOOL,
    "beforeReadFile": "Read",
    "afterFileEdit": "Edit",
}


def _object(value: object) -> object:
    """A JSON string holding an object, as that object (Cursor sends MCP arguments so)."""
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except ValueError:
            return value
        return decoded if isinstance(decoded, dict) else value
    return value


def claude_view(payload: Mapping[str, Any]) -> dict[str, Any]:
    """Cursor's hook input under Claude Code's field names: ``session_id`` (the conversation),
    ``cwd`` (else the first workspace root), and for a call ``tool_name``, ``tool_input`` and
    ``tool_response``."""
    view = dict(payload)
    event = payload.get("hook_event_name")
    if "session_id" not in view and isinstance(payload.get("conversation_id"), str):
        view["session_id"] = payload["conversation_id"]
    roots = payload.get("workspace_roots")
    if not isinstance(view.get("cwd"), str) and isinstance(roots, list) and roots:
        view["cwd"] = roots[0]
    tool = None if "tool_name" in payload else _EVENT_TOOLS.get(str(event))
    if tool == SHELL_TOOL:
        view["tool_name"] = tool
        view["tool_input"] = {"command": payload.get("command")}
        if "output" in payload:
            view["tool_response"] = payload["output"]
    elif tool is not None:
        view["tool_name"] = tool
        args = {"file_path": payload.get("file_path")}
        if "edits" in payload:
            args["edits"] = payload["edits"]
        view["tool_input"] = args
    else:
        if "tool_input" in view:
            view["tool_input"] = _object(view["tool_input"])
        if "result_json" in payload and "tool_response" not in view:
            view["tool_response"] = _object(payload["result_json"])
    if event == "stop":
        # Cursor counts the follow-ups it already made: the stop hook is active after one.
        view.setdefault("stop_hook_active", bool(payload.get("loop_count")))
    return view


def claude_reply(event: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """A Cursor hook's JSON answer to ``event`` (Claude's name) in Claude Code's shape:
    ``permission`` with its ``agent_message`` (the reason the model reads) and
    ``updated_input``; ``continue: false`` to a prompt as a block; a stop's
    ``followup_message`` as the block that keeps the agent going; ``user_message`` as the
    message the user sees. An answer already in Claude's shape is left as it is."""
    if isinstance(data.get("hookSpecificOutput"), dict):
        return dict(data)
    out: dict[str, Any] = {}
    specific: dict[str, Any] = {}
    user = data.get("user_message")
    agent = data.get("agent_message")
    if event == "PreToolUse":
        if isinstance(data.get("permission"), str):
            specific["permissionDecision"] = data["permission"]
            said = agent if isinstance(agent, str) and agent else user
            if isinstance(said, str) and said:
                specific["permissionDecisionReason"] = said
        if isinstance(data.get("updated_input"), dict):
            specific["updatedInput"] = data["updated_input"]
    elif event == "UserPromptSubmit" and data.get("continue") is False:
        out["decision"] = "block"
        out["reason"] = user if isinstance(user, str) and user else "blocked by a hook"
    elif event in ("Stop", "SubagentStop"):
        followup = data.get("followup_message")
        if isinstance(followup, str) and followup:
            out["decision"], out["reason"] = "block", followup
    if isinstance(user, str) and user and event != "UserPromptSubmit":
        out["systemMessage"] = user
    context = data.get("additional_context")
    if isinstance(context, str) and context:
        specific["additionalContext"] = context
    if specific:
        out["hookSpecificOutput"] = specific
    return out
