"""The event model: canonical event names, their JSON-dialect aliases, and payload Structs.

This module owns what an event *is* (its name, whether the agent waits for it, what it may
change, which fields it carries). It must not know how hooks run or how decisions combine.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import msgspec

EventName = Literal[
    "session_start",
    "prompt_submit",
    "pre_tool",
    "permission_request",
    "post_tool",
    "post_tool_failure",
    "stop",
    "subagent_start",
    "subagent_stop",
    "pre_compact",
    "post_compact",
    "notification",
    "session_end",
]


class EventInfo(msgspec.Struct, frozen=True):
    """Static facts about one canonical event (docs/design.md §2)."""

    name: str
    #: The agent waits for TOML-dialect hooks of this event.
    sync: bool
    #: The agent waits for JSON-dialect hooks of this event (post_tool_use is sync there).
    json_sync: bool
    #: Hooks of this event may stop what the agent is about to do.
    can_block: bool
    #: The event is about one tool call (carries tool, args, tool_call_id).
    tool_event: bool


EVENTS: Final[dict[str, EventInfo]] = {
    info.name: info
    for info in (
        EventInfo("session_start", True, True, False, False),
        EventInfo("prompt_submit", True, True, True, False),
        EventInfo("pre_tool", True, True, True, True),
        EventInfo("permission_request", True, True, True, True),
        EventInfo("post_tool", False, True, False, True),
        EventInfo("post_tool_failure", False, False, False, True),
        EventInfo("stop", True, True, True, False),
        EventInfo("subagent_start", False, False, False, False),
        EventInfo("subagent_stop", False, False, False, False),
        EventInfo("pre_compact", False, False, False, False),
        EventInfo("post_compact", False, False, False, False),
        EventInfo("notification", False, False, False, False),
        EventInfo("session_end", False, False, False, False),
    )
}

#: JSON-dialect ("everruns") event names and the canonical event each one fires on.
JSON_ALIASES: Final[dict[str, str]] = {
    "session_start": "session_start",
    "user_prompt_submit": "prompt_submit",
    "pre_tool_use": "pre_tool",
    "post_tool_use": "post_tool",
    "turn_end": "stop",
    "session_end": "session_end",
}

_CLAUDE_EVENTS: Final = {
    "PreToolUse": "pre_tool",
    "PostToolUse": "post_tool",
    "PostToolUseFailure": "post_tool_failure",
    "UserPromptSubmit": "prompt_submit",
    "Stop": "stop",
    "SubagentStart": "subagent_start",
    "SubagentStop": "subagent_stop",
    "SessionStart": "session_start",
    "SessionEnd": "session_end",
    "PreCompact": "pre_compact",
    "PostCompact": "post_compact",
    "PermissionRequest": "permission_request",
    "Notification": "notification",
}

#: Each agent's own event names and the canonical event each one is (docs/agents.md): what
#: the agent dialects read and answer, and what "did you mean" offers for a name from them.
AGENT_EVENTS: Final[dict[str, dict[str, str]]] = {
    "claude": _CLAUDE_EVENTS,
    "gemini": {
        "BeforeTool": "pre_tool",
        "AfterTool": "post_tool",
        "BeforeAgent": "prompt_submit",
        "AfterAgent": "stop",
        "SessionStart": "session_start",
        "SessionEnd": "session_end",
        "PreCompress": "pre_compact",
        "Notification": "notification",
    },
    # Codex takes a subset of Claude Code's names.
    "codex": {
        name: event
        for name, event in _CLAUDE_EVENTS.items()
        if name not in ("PostToolUseFailure", "Notification")
    },
    # Qwen Code takes Claude Code's names (and more of its own, with no triohooks equivalent).
    "qwen": _CLAUDE_EVENTS,
    # Copilot CLI's camelCase names (its hooks get camelCase input).
    "copilot": {
        "preToolUse": "pre_tool",
        "postToolUse": "post_tool",
        "postToolUseFailure": "post_tool_failure",
        "userPromptSubmitted": "prompt_submit",
        "agentStop": "stop",
        "subagentStart": "subagent_start",
        "subagentStop": "subagent_stop",
        "sessionStart": "session_start",
        "sessionEnd": "session_end",
        "preCompact": "pre_compact",
        "permissionRequest": "permission_request",
        "notification": "notification",
    },
    # Cursor's specific events carry every shell, MCP and read call (its generic preToolUse /
    # postToolUse would see them a second time: they run the agent's hooks only).
    "cursor": {
        "beforeShellExecution": "pre_tool",
        "beforeMCPExecution": "pre_tool",
        "beforeReadFile": "pre_tool",
        "afterShellExecution": "post_tool",
        "afterMCPExecution": "post_tool",
        "afterFileEdit": "post_tool",
        "beforeSubmitPrompt": "prompt_submit",
        "stop": "stop",
        "sessionStart": "session_start",
        "sessionEnd": "session_end",
    },
    # Antigravity CLI's (reported, docs/agents.md): its invocation events (PreInvocation,
    # PostInvocation) have no triohooks equivalent.
    "agy": {
        "PreToolUse": "pre_tool",
        "PostToolUse": "post_tool",
        "Stop": "stop",
        "SessionStart": "session_start",
    },
}

#: The JSON dialect's name for each canonical event it knows (used in its payloads).
JSON_NAMES: Final[dict[str, str]] = {canon: alias for alias, canon in JSON_ALIASES.items()}

#: JSON-dialect events whose hooks are advisory only: a block or mutate is ignored.
ADVISORY_JSON_EVENTS: Final[frozenset[str]] = frozenset(
    {"turn_end", "session_start", "session_end"}
)

#: Stop hooks may force the agent on at most this many times per prompt (blitz HK-51).
MAX_STOP_CONTINUES: Final = 5


class UnknownEventError(ValueError):
    """An event name that is neither canonical nor a JSON-dialect alias."""

    def __init__(self, name: object) -> None:
        names = sorted(set(EVENTS) | set(JSON_ALIASES))
        hint = ""
        if isinstance(name, str):
            from .suggest import did_you_mean, event_synonyms

            hint = did_you_mean(name, names, event_synonyms({e: e for e in EVENTS}))
        super().__init__(f"unknown event {name!r}{hint} (known: {', '.join(names)})")
        self.name = name


def canonical_event(name: str) -> str:
    """The canonical name of ``name``, which may be canonical or a JSON-dialect alias.

    Raises :class:`UnknownEventError` for anything else: an event is never silently ignored.
    """
    if name in EVENTS:
        return name
    try:
        return JSON_ALIASES[name]
    except (KeyError, TypeError):
        raise UnknownEventError(name) from None


# ---------------------------------------------------------------------------------------------
# Payload Structs. Every event carries the common fields; each adds its own (docs/design.md §2).


class EventBase(msgspec.Struct, kw_only=True, tag_field="event", forbid_unknown_fields=False):
    session_id: str = ""
    workspace: str = ""
    cwd: str = ""
    prompt_id: str | None = None
    transcript_path: str | None = None
    permission_mode: str | None = None
    agent: str | None = None
    #: JSON dialect's turn id; falls back to prompt_id in JSON payloads.
    turn_id: str | None = None


class _ToolFields(EventBase, kw_only=True):
    tool: str = ""
    args: dict[str, Any] = {}
    tool_call_id: str | None = None


class SessionStart(EventBase, tag="session_start", kw_only=True):
    #: startup, resume or new.
    reason: str | None = None


class PromptSubmit(EventBase, tag="prompt_submit", kw_only=True):
    prompt: str = ""


class PreTool(_ToolFields, tag="pre_tool", kw_only=True):
    pass


class PermissionRequest(_ToolFields, tag="permission_request", kw_only=True):
    reason: str | None = None


class PostTool(_ToolFields, tag="post_tool", kw_only=True):
    result: Any = None
    error: str | None = None


class PostToolFailure(_ToolFields, tag="post_tool_failure", kw_only=True):
    result: Any = None
    error: str | None = None


class Stop(EventBase, tag="stop", kw_only=True):
    stop_hook_active: bool = False
    reason: str | None = None


class SubagentStart(EventBase, tag="subagent_start", kw_only=True):
    subagent: str | None = None
    prompt: str | None = None


class SubagentStop(EventBase, tag="subagent_stop", kw_only=True):
    subagent: str | None = None
    output: str | None = None
    error: str | None = None


class PreCompact(EventBase, tag="pre_compact", kw_only=True):
    #: manual, or rewind.
    reason: str | None = None
    prompt: str | None = None


class PostCompact(EventBase, tag="post_compact", kw_only=True):
    reason: str | None = None


class Notification(EventBase, tag="notification", kw_only=True):
    #: permission_prompt, question or turn_finished.
    type: str | None = None
    message: str | None = None


class SessionEnd(EventBase, tag="session_end", kw_only=True):
    #: new, load or exit.
    reason: str | None = None


Event = (
    SessionStart
    | PromptSubmit
    | PreTool
    | PermissionRequest
    | PostTool
    | PostToolFailure
    | Stop
    | SubagentStart
    | SubagentStop
    | PreCompact
    | PostCompact
    | Notification
    | SessionEnd
)

EVENT_TYPES: Final[dict[str, type[EventBase]]] = {
    "session_start": SessionStart,
    "prompt_submit": PromptSubmit,
    "pre_tool": PreTool,
    "permission_request": PermissionRequest,
    "post_tool": PostTool,
    "post_tool_failure": PostToolFailure,
    "stop": Stop,
    "subagent_start": SubagentStart,
    "subagent_stop": SubagentStop,
    "pre_compact": PreCompact,
    "post_compact": PostCompact,
    "notification": Notification,
    "session_end": SessionEnd,
}
assert set(EVENT_TYPES) == set(EVENTS)

#: JSON-dialect field names accepted in payloads, and the canonical field each one fills.
_FIELD_ALIASES: Final[dict[str, str]] = {
    "tool_name": "tool",
    "arguments": "args",
    "message": "prompt",
}


class PayloadError(ValueError):
    """A payload that cannot be read as the event it was fired as."""


def event_from_payload(event: str, payload: dict[str, Any] | None) -> Event:
    """Build the event Struct for ``event`` from a loosely typed payload dict.

    Accepts the canonical field names of docs/design.md §2 and the JSON dialect's ``tool_name`` /
    ``arguments`` (and ``message`` for a prompt). Raises :class:`UnknownEventError` or
    :class:`PayloadError` with a message naming the bad field.
    """
    name = canonical_event(event)
    cls = EVENT_TYPES[name]
    fields = dict(payload or {})
    fields.pop("event", None)
    for alias, canon in _FIELD_ALIASES.items():
        if alias in fields and canon in cls.__struct_fields__ and canon not in fields:
            fields[canon] = fields.pop(alias)
    known = set(cls.__struct_fields__)
    fields = {k: v for k, v in fields.items() if k in known}
    if fields.get("args") is None and "args" in known:
        fields.pop("args", None)
    try:
        result = msgspec.convert(fields, cls, strict=False)
    except msgspec.ValidationError as exc:
        raise PayloadError(f"{name} payload: {exc}") from None
    return result  # type: ignore[return-value]


def event_to_builtins(ev: EventBase) -> dict[str, Any]:
    """The event as plain JSON-ready data, with ``event`` first."""
    out: dict[str, Any] = msgspec.to_builtins(ev)
    return out
