"""Antigravity CLI's (``agy``) hook contract, read in the terms the rest of the agent dialects use.

agy is closed source and documents its hooks only in files bundled with it; what this module
holds is its contract as integrators reported it (docs/agents.md, "Antigravity CLI", lists each
assumption and who reported it). Its hooks files are objects of *named hook sets*, each set
``{"<Event>": [...]}`` with an optional ``enabled``; the set named ``hooks`` is Claude Code's
``hooks`` member, the one triohooks adopts. Its tool events (``PreToolUse``, ``PostToolUse``)
take Claude's matcher groups, its other events (``PreInvocation``, ``PostInvocation``,
``Stop``, ``SessionStart``) a flat list of handlers.

Its hook input is camelCase and does not name the event (its catch-alls name it:
``--event``): ``conversationId``, ``stepIdx``, ``toolCall {name, args}`` whose ``args`` have
PascalCase keys (``run_command``'s ``CommandLine``), ``transcriptPath``, ``workspacePaths``,
``error`` after a failed call. Its hooks answer ``decision`` (``allow``, ``deny``, ``ask``,
``force_ask``) with a ``reason`` to a call -- and a call's answer without a decision it can
read is a deny on its side -- ``injectSteps`` of ``ephemeralMessage`` for the model before an
invocation, ``decision: "block"`` with a ``reason`` to keep the agent going at a stop.

Its hooks get the input exactly as agy sent it; triohooks reads it through :func:`claude_view`
(the same fields under Claude Code's names, the call's arguments under the names the ``if``
rules and guards read: ``CommandLine`` as ``command``, ``AbsolutePath`` and ``TargetFile`` as
``file_path``) so matchers, ``if`` rules, the user's own triohooks hooks and the merge are the
ones every agent goes through. Pure functions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

#: agy's event -> the Claude Code event of the same meaning (what the merge folds). Its
#: invocation events have none: their hooks run, and only context reaches the model.
CLAUDE_NAMES: Final = {
    "PreToolUse": "PreToolUse",
    "PostToolUse": "PostToolUse",
    "Stop": "Stop",
    "SessionStart": "SessionStart",
    "PreInvocation": "PreInvocation",
    "PostInvocation": "PostInvocation",
}
#: The events whose entries are matcher groups (``{"matcher", "hooks": [...]}``); agy reads the
#: others' entries as handlers, a group there being a handler with no command.
GROUP_EVENTS: Final = frozenset({"PreToolUse", "PostToolUse"})
#: The name of the hook set triohooks adopts (Claude Code's ``hooks`` member).
ADOPTED_SET: Final = "hooks"
#: Keys of a hook set that are no event.
SET_KEYS: Final = frozenset({"enabled"})
#: A call's argument names -> the names the ``if`` rules and guards read (the originals stay).
_ARGS: Final = {
    "CommandLine": "command",
    "Cwd": "cwd",
    "AbsolutePath": "file_path",
    "TargetFile": "file_path",
    "DirectoryPath": "path",
    "SearchPath": "path",
    "SearchDirectory": "path",
    "Url": "url",
    "CodeContent": "content",
}
#: Per tool, argument names read under another name: what ``send_command_input`` types into a
#: running command is read as a script (a shell guard sees it).
_TOOL_ARGS: Final = {"send_command_input": {"Input": "command"}}
_WORD: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
#: agy's input field -> Claude Code's name for it.
_FIELDS: Final = (
    ("conversationId", "session_id"),
    ("transcriptPath", "transcript_path"),
    ("workspacePaths", "workspace_roots"),
)


def hook_events(doc: Mapping[str, Any]) -> dict[str, list[Any]] | None:
    """The hooks agy runs from one hooks file, as one Claude-shaped hooks object: each named set
    switched on, its events' entries in file order. None when agy loads nothing of the file (a
    member that is no set, an event whose entries are no list): triohooks' own workspace
    config (``.agents/hooks.json`` with its list of hooks) is such a file to agy."""
    out: dict[str, list[Any]] = {}
    for hook_set in doc.values():
        if not isinstance(hook_set, dict):
            return None
        events = {k: v for k, v in hook_set.items() if k not in SET_KEYS}
        if any(not isinstance(v, list) for v in events.values()):
            return None
        if hook_set.get("enabled") is False:
            continue
        for event, entries in events.items():
            out.setdefault(str(event), []).extend(entries)
    return out


def _snake(name: str) -> str:
    return _WORD.sub("_", name).lower()


def _args(tool: object, value: object) -> object:
    """A call's arguments as the readers name them: each PascalCase key also under its
    snake_case name (``StartLine`` -> ``start_line``) or the name :data:`_ARGS` gives it. A JSON
    string holding an object is read as that object."""
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except ValueError:
            return value
        value = decoded if isinstance(decoded, dict) else value
    if not isinstance(value, dict):
        return value
    out = dict(value)
    own = _TOOL_ARGS.get(tool, {}) if isinstance(tool, str) else {}
    for key, item in value.items():
        if isinstance(key, str):
            out.setdefault(own.get(key) or _ARGS.get(key) or _snake(key), item)
    return out


def claude_view(payload: Mapping[str, Any]) -> dict[str, Any]:
    """agy's hook input under Claude Code's field names: ``session_id`` (the conversation),
    ``transcript_path``, ``workspace_roots`` and ``cwd`` (the first workspace path), and for a
    call ``tool_name``, ``tool_input`` (its arguments, also under the readers' names) and
    ``error``. A post-tool input whose ``toolCall`` is null names no tool."""
    view = dict(payload)
    for theirs, ours in _FIELDS:
        if theirs in payload and ours not in payload:
            view[ours] = payload[theirs]
    roots = view.get("workspace_roots")
    first = roots[0] if isinstance(roots, list) and roots else None
    if not isinstance(view.get("cwd"), str) and isinstance(first, str):
        view["cwd"] = first
    call = payload.get("toolCall")
    if isinstance(call, dict) and "tool_name" not in payload:
        view["tool_name"] = call.get("name")
        view["tool_input"] = _args(call.get("name"), call.get("args", {}))
    return view


#: What a call's answer without a readable decision is read as (agy denies the call).
NO_DECISION: Final = "the hook answered no decision Antigravity CLI reads, which denies the call"


def _decision(data: Mapping[str, Any]) -> str | None:
    decision = data.get("decision")
    if decision == "force_ask":
        return "ask"
    return decision if decision in ("allow", "deny", "ask") else None


def claude_reply(event: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """An agy hook's JSON answer to ``event`` (Claude's name) in Claude Code's shape: a call's
    ``decision`` (``force_ask`` as ``ask``) and ``reason`` into ``hookSpecificOutput``; a
    stop's ``decision: "block"`` as it is; every ``injectSteps`` ``ephemeralMessage`` as
    context. An answer already in Claude's shape is left as it is."""
    if isinstance(data.get("hookSpecificOutput"), dict):
        return dict(data)
    out = {k: v for k, v in data.items() if k not in ("decision", "reason", "injectSteps")}
    specific: dict[str, Any] = {}
    reason = data.get("reason")
    if event == "PreToolUse":
        decision = _decision(data)
        if decision is None:
            # agy denies a call whose hook answered no decision it reads ({} included).
            decision = "deny"
            reason = f"{NO_DECISION}: {json.dumps(data.get('decision'))}"
        specific["permissionDecision"] = decision
        if isinstance(reason, str) and reason:
            specific["permissionDecisionReason"] = reason
    elif data.get("decision") == "block":
        out["decision"] = "block"
        if isinstance(reason, str) and reason:
            out["reason"] = reason
    steps = data.get("injectSteps")
    said = [
        step["ephemeralMessage"]
        for step in (steps if isinstance(steps, list) else [])
        if isinstance(step, dict) and isinstance(step.get("ephemeralMessage"), str)
    ]
    if said:
        specific["additionalContext"] = "\n".join(said)
    if specific:
        out["hookSpecificOutput"] = specific
    return out
