"""How Codex CLI records that a user reviewed a hook: the ``[hooks.state."<key>"]`` table.

Codex (0.16x) runs a non-managed command hook only when ``config.toml`` holds, for that hook::

    [hooks.state."/abs/path/to/hooks.json:pre_tool_use:0:0"]
    trusted_hash = "sha256:<64 hex>"

and the hash equals the one Codex computes now from the hook's definition (else the hook is
``untrusted`` or ``modified`` and skipped without a word), or when the run has
``--dangerously-bypass-hook-trust``. An ``enabled = false`` in the same table turns the hook off
whatever its trust. This module computes both halves, purely; the source it mirrors is
``openai/codex`` ``codex-rs/hooks/src/engine/discovery.rs`` (``append_matcher_groups``,
``normalize_command_hook``, ``hook_hash``), ``codex-rs/hooks/src/lib.rs`` (``hook_key``,
``hook_event_key_label``), ``codex-rs/config/src/hook_config.rs`` (``HookHandlerConfig``'s
serde names) and ``codex-rs/config/src/fingerprint.rs`` (``version_for_toml``). Every rule here
was checked against the ``currentHash`` and ``key`` that the real Codex 0.169.1 reports through
``codex app-server``'s ``hooks/list`` (``tests/interop/test_codex_baseline.py``).

The key's first part is the *source*: the absolute path of the file the hook is written in, as
Codex spells it (``AbsolutePathBuf::display``) -- ``$CODEX_HOME/hooks.json`` (``~/.codex`` by
default), ``$CODEX_HOME/config.toml`` for a ``[hooks]`` table there, ``<project>/.codex/hooks.json``
or ``<project>/.codex/config.toml`` for a project's. Codex does not resolve symlinks in it (only a
``CODEX_HOME`` given in the environment is canonicalized), so pass the path Codex itself uses.
Plugin hooks use ``<plugin>@<marketplace>:<relative path>`` instead (``plugin_hook_key_source``).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Final

__all__ = [
    "CONTEXT_LIMIT_EVENTS",
    "DEFAULT_ADDITIONAL_CONTEXT_LIMIT",
    "DEFAULT_TIMEOUT_SEC",
    "EVENT_KEY_LABELS",
    "MATCHER_EVENTS",
    "SHORT_TIMEOUT_EVENTS",
    "canonical_json",
    "event_key_label",
    "hook_identity",
    "hook_state_key",
    "hook_states",
    "hook_states_override",
    "hook_states_toml",
    "trusted_hash",
]

#: ``hook_event_key_label`` (codex-rs/hooks/src/lib.rs): the config's event name -> its label in
#: state keys and in the hashed identity.
EVENT_KEY_LABELS: Final[Mapping[str, str]] = {
    "PreToolUse": "pre_tool_use",
    "PermissionRequest": "permission_request",
    "PostToolUse": "post_tool_use",
    "PreCompact": "pre_compact",
    "PostCompact": "post_compact",
    "SessionStart": "session_start",
    "SessionEnd": "session_end",
    "UserPromptSubmit": "user_prompt_submit",
    "SubagentStart": "subagent_start",
    "SubagentStop": "subagent_stop",
    "Stop": "stop",
    "Interrupt": "interrupt",
}
_EVENT_BY_LABEL: Final = {label: event for event, label in EVENT_KEY_LABELS.items()}

#: Events whose group ``matcher`` is kept (``matcher_pattern_for_event``, events/common.rs); for
#: UserPromptSubmit, Stop and Interrupt Codex drops it, from dispatch and from the hash alike.
#: (SessionEnd keeps it: measured with 0.169.1's ``hooks/list``.)
MATCHER_EVENTS: Final = frozenset(
    {
        "PreToolUse",
        "PermissionRequest",
        "PostToolUse",
        "PreCompact",
        "PostCompact",
        "SessionStart",
        "SessionEnd",
        "SubagentStart",
        "SubagentStop",
    }
)
#: Events whose command hooks may set ``additionalContextLimit`` (discovery.rs); elsewhere it is
#: dropped (with a warning) before hashing.
CONTEXT_LIMIT_EVENTS: Final = frozenset(
    {"PreToolUse", "PostToolUse", "SessionStart", "UserPromptSubmit", "SubagentStart"}
)
#: ``additionalContextLimit`` equal to this default is dropped before hashing
#: (``DEFAULT_HOOK_OUTPUT_TOKEN_LIMIT``, hooks/src/output_spill.rs).
DEFAULT_ADDITIONAL_CONTEXT_LIMIT: Final = 2500
#: ``timeout`` (seconds) when absent, for every event but :data:`SHORT_TIMEOUT_EVENTS`.
DEFAULT_TIMEOUT_SEC: Final = 600
#: SessionEnd and Interrupt: default 1 s, clamped to 1..3 s (``normalize_command_hook`` with
#: ``SESSION_END_DEFAULT_TIMEOUT_SEC``/``SESSION_END_MAX_TIMEOUT_SEC``, events/session_end.rs).
SHORT_TIMEOUT_EVENTS: Final = frozenset({"SessionEnd", "Interrupt"})
_SHORT_DEFAULT_SEC: Final = 1
_SHORT_MAX_SEC: Final = 3
_U64_MAX: Final = 2**64 - 1
_I64_MAX: Final = 2**63 - 1


def event_key_label(event: str) -> str:
    """The snake_case label Codex uses for ``event`` (``"PreToolUse"`` -> ``"pre_tool_use"``);
    a label is returned as is. ``hook_event_key_label`` in codex-rs/hooks/src/lib.rs."""
    if event in EVENT_KEY_LABELS:
        return EVENT_KEY_LABELS[event]
    if event in _EVENT_BY_LABEL:
        return event
    raise ValueError(f"not a Codex hook event: {event!r}")


def _event_name(event: str) -> str:
    return _EVENT_BY_LABEL[event_key_label(event)]


def hook_state_key(
    source: str | os.PathLike[str], event: str, group_index: int, handler_index: int
) -> str:
    """The ``[hooks.state."<key>"]`` key of one hook:
    ``<source>:<event label>:<group index>:<handler index>``.

    ``hook_key`` in codex-rs/hooks/src/lib.rs: ``format!("{key_source}:{}:{group_index}:
    {handler_index}", hook_event_key_label(event_name))``. ``source`` is the file's absolute path
    as Codex displays it (see the module's docstring); the indices count from 0, within the
    event's list of matcher groups and within the group's ``hooks`` list, counting every handler
    (also those Codex skips, such as ``prompt`` ones)."""
    if group_index < 0 or handler_index < 0:
        raise ValueError("hook indices count from 0")
    return f"{os.fspath(source)}:{event_key_label(event)}:{group_index}:{handler_index}"


def _optional_str(handler: Mapping[str, object], name: str) -> str | None:
    value = handler.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"hook {name!r} must be a string, not {type(value).__name__}")
    return value


def _optional_uint(handler: Mapping[str, object], name: str, maximum: int) -> int | None:
    value = handler.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= maximum:
        raise ValueError(f"hook {name!r} must be an integer in 0..{maximum}, not {value!r}")
    return value


def _timeout(event: str, handler: Mapping[str, object]) -> int:
    # The hash goes through TOML, whose integers are i64: a larger u64 cannot be hashed at all.
    timeout = _optional_uint(handler, "timeout", _I64_MAX)
    if event in SHORT_TIMEOUT_EVENTS:
        return min(max(_SHORT_DEFAULT_SEC if timeout is None else timeout, 1), _SHORT_MAX_SEC)
    return max(DEFAULT_TIMEOUT_SEC if timeout is None else timeout, 1)


def _normalized_handler(event: str, handler: Mapping[str, object]) -> dict[str, object]:
    """The handler as ``append_matcher_groups`` rebuilds it before hashing, in the serde names
    of ``HookHandlerConfig`` (codex-rs/config/src/hook_config.rs), ``None`` fields left out (the
    identity is serialized through TOML, which has no null)."""
    kind = handler.get("type")
    if kind == "command":
        command = handler.get("command")
        if not isinstance(command, str):
            raise ValueError("a command hook needs a string 'command'")
        if not command.strip():
            raise ValueError("Codex skips a hook whose command is empty")
        asynchronous = handler.get("async", False)
        if not isinstance(asynchronous, bool):
            raise ValueError("hook 'async' must be a boolean")
        out: dict[str, object] = {
            "type": "command",
            "command": command,  # never commandWindows: the hash sets it to None on every OS
            "timeout": _timeout(event, handler),
            "async": asynchronous,
        }
        status = _optional_str(handler, "statusMessage")
        if status is not None:
            out["statusMessage"] = status
        limit = _optional_uint(handler, "additionalContextLimit", _U64_MAX)
        if (
            limit is not None
            and event in CONTEXT_LIMIT_EVENTS
            and limit != DEFAULT_ADDITIONAL_CONTEXT_LIMIT
        ):
            out["additionalContextLimit"] = limit
        return out
    if kind == "mcp_tool":
        server, tool = handler.get("server"), handler.get("tool")
        if not isinstance(server, str) or not isinstance(tool, str):
            raise ValueError("an mcp_tool hook needs string 'server' and 'tool'")
        if not server.strip() or not tool.strip():
            raise ValueError("Codex skips an mcp_tool hook whose server or tool is empty")
        if event == "SessionEnd":
            raise ValueError("Codex skips mcp_tool hooks for SessionEnd")
        tool_input = handler.get("input", {})
        if not isinstance(tool_input, Mapping):
            raise ValueError("an mcp_tool hook's 'input' must be an object")
        out = {
            "type": "mcp_tool",
            "server": server,
            "tool": tool,
            "input": _toml_representable(tool_input),
            "timeout": _timeout(event, handler),
        }
        status = _optional_str(handler, "statusMessage")
        if status is not None:
            out["statusMessage"] = status
        return out
    raise ValueError(f"Codex runs only 'command' and 'mcp_tool' hooks, not {kind!r}")


#: Codex is built with serde_json's ``arbitrary_precision``: a number inside an mcp_tool
#: ``input`` (a ``serde_json::Map``) goes through the TOML serializer as this one-field table.
_SERDE_JSON_NUMBER: Final = "$serde_json::private::Number"


def _toml_representable(value: object) -> object:
    """``input`` as it reaches the hash, or ValueError where Codex refuses it (null anywhere:
    ``deserialize_mcp_tool_input``). Numbers become ``{"$serde_json::private::Number": text}``
    (measured: 0.169.1 hashes ``{"a": 1}`` so), ``text`` being the number as the file wrote
    it; here an int's decimal digits and a float's ``repr`` -- right for ``1``, ``1.5``,
    ``2.0``, not for ``1e2`` or ``1.50``, whose text a parsed float no longer holds."""
    if value is None:
        raise ValueError("an mcp_tool hook's input cannot hold null")
    if isinstance(value, Mapping):
        return {str(k): _toml_representable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_toml_representable(v) for v in value]
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int | float):
        return {_SERDE_JSON_NUMBER: repr(value)}
    raise ValueError(f"an mcp_tool hook's input cannot hold {type(value).__name__}")


def hook_identity(
    handler: Mapping[str, object], *, event: str, matcher: str | None = None
) -> dict[str, object]:
    """The object Codex hashes for one handler: ``{"event_name": <label>, "matcher": ...,
    "hooks": [<normalized handler>]}``, ``NormalizedHookIdentity`` in discovery.rs (the matcher
    group flattened in; ``matcher`` only for :data:`MATCHER_EVENTS` and only when not None)."""
    name = _event_name(event)
    identity: dict[str, object] = {"event_name": event_key_label(name)}
    if matcher is not None and name in MATCHER_EVENTS:
        identity["matcher"] = matcher
    identity["hooks"] = [_normalized_handler(name, handler)]
    return identity


def canonical_json(value: object) -> str:
    """``version_for_toml``'s serialization (codex-rs/config/src/fingerprint.rs): compact JSON,
    object keys sorted at every level, non-ASCII characters written as themselves."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def trusted_hash(handler: Mapping[str, object], *, event: str, matcher: str | None = None) -> str:
    """The ``trusted_hash`` Codex accepts for ``handler`` (one entry of a matcher group's
    ``hooks``, as written in hooks.json or config.toml) under ``event`` (``"PreToolUse"`` or
    ``"pre_tool_use"``) in a group whose ``matcher`` is ``matcher``.

    ``hook_hash`` in codex-rs/hooks/src/engine/discovery.rs builds ``NormalizedHookIdentity``
    (see :func:`hook_identity`) and hands it to ``version_for_toml``: ``"sha256:" +
    hex(sha256(canonical JSON))``. Normalization first: ``timeout`` always present (600 when
    absent, at least 1; SessionEnd/Interrupt 1 when absent, clamped to 1..3), ``async`` always
    present (false), ``commandWindows`` always dropped, ``statusMessage`` only when set,
    ``additionalContextLimit`` only on the events that can add context and when not 2500; keys
    Codex does not know (``once``, ``if``...) do not count. The command is hashed as written
    (before Codex expands ``${PLUGIN_ROOT}`` and the like). Raises ValueError for a handler
    Codex would not run (wrong ``type``, empty command, ill-typed field)."""
    identity = hook_identity(handler, event=event, matcher=matcher)
    digest = hashlib.sha256(canonical_json(identity).encode())
    return f"sha256:{digest.hexdigest()}"


def _groups(hooks: Mapping[str, object]) -> Iterator[tuple[str, int, Mapping[str, object]]]:
    for event, groups in hooks.items():
        if event not in EVENT_KEY_LABELS:  # ``state``, or a name Codex ignores (measured)
            continue
        if not isinstance(groups, Sequence) or isinstance(groups, str):
            raise ValueError(f"{event}: expected a list of matcher groups")
        for group_index, group in enumerate(groups):
            if isinstance(group, Mapping):
                yield event, group_index, group


def hook_states(source: str | os.PathLike[str], hooks: Mapping[str, object]) -> dict[str, str]:
    """``{key: trusted_hash}`` for every hook Codex would run from one file: ``hooks`` is that
    file's ``hooks`` object (hooks.json's, or config.toml's ``[hooks]`` table -- its ``state``
    table is skipped) and ``source`` the file's path as Codex spells it. Handlers Codex skips
    (``prompt``/``agent``, empty commands) get no entry but keep their index; an event name
    Codex does not know is ignored, as Codex ignores it (measured). Matchers are not checked:
    Codex also skips a group whose matcher its regex engine rejects."""
    states: dict[str, str] = {}
    for event, group_index, group in _groups(hooks):
        matcher = group.get("matcher")
        if matcher is not None and not isinstance(matcher, str):
            raise ValueError(f"{event} group {group_index}: matcher must be a string")
        handlers = group.get("hooks", [])
        if not isinstance(handlers, Sequence) or isinstance(handlers, str):
            raise ValueError(f"{event} group {group_index}: hooks must be a list")
        for handler_index, handler in enumerate(handlers):
            if not isinstance(handler, Mapping):
                raise ValueError(f"{event} group {group_index}: a hook must be an object")
            if handler.get("type") in ("prompt", "agent"):
                continue
            if handler.get("type") == "command" and not str(handler.get("command", "")).strip():
                continue
            key = hook_state_key(source, event, group_index, handler_index)
            states[key] = trusted_hash(handler, event=event, matcher=matcher)
    return states


def _toml_string(text: str) -> str:
    # A JSON string with non-ASCII kept as is is a valid TOML basic string (same escapes).
    return json.dumps(text, ensure_ascii=False)


def hook_states_toml(states: Mapping[str, str], *, enabled: bool | None = None) -> str:
    """``config.toml`` text recording ``states`` (``{key: trusted_hash}``) as reviewed: one
    ``[hooks.state."<key>"]`` table each, as Codex's ``/hooks`` review writes them; with
    ``enabled`` also that flag. Append it to a config.toml that has no such tables yet."""
    lines: list[str] = []
    for key, digest in states.items():
        lines.append(f"[hooks.state.{_toml_string(key)}]")
        if enabled is not None:
            lines.append(f"enabled = {'true' if enabled else 'false'}")
        lines.append(f"trusted_hash = {_toml_string(digest)}")
        lines.append("")
    return "\n".join(lines)


def hook_states_override(states: Mapping[str, str]) -> str:
    """The value of one ``codex -c`` option recording ``states`` (``{key: trusted_hash}``) as
    reviewed for that run only, without writing config.toml: ``hooks.state={"<key>"=
    {trusted_hash="sha256:..."}, ...}``. Codex reads hook state from the user's config.toml
    and from the session's ``-c`` flags alike (``hook_states_from_stack``, hooks/src/
    config_rules.rs; measured with 0.169.1). The dotted form ``hooks.state."<key>".trusted_hash``
    does not work: ``-c`` splits its key on every dot, quotes or not."""
    tables = ", ".join(
        f"{_toml_string(key)} = {{ trusted_hash = {_toml_string(digest)} }}"
        for key, digest in states.items()
    )
    return f"hooks.state={{ {tables} }}"
