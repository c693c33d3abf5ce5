"""The TOML ("blitz") config dialect: ``[[hooks.<event>]]`` tables, read strictly.

Owns turning one hooks.toml into :class:`Hook` values or located :class:`ConfigProblem` errors
(file, event, table index, field). Every bad input is an error here, never a traceback; it must
not decide merge order or trust (``_config`` does).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from triohooks.match.globs import GlobError, has_bare_bar, validate_go_glob
from triohooks.match.ifrules import IfRuleError, parse_if_rule

from .events import EVENTS
from .json_dialect import exec_string_problem
from .model import (
    HELD_BACK_CHOICES,
    TOML_DEFAULT_TIMEOUT_S,
    ArgsHandler,
    CommandHandler,
    ConfigProblem,
    GuardHandler,
    Handler,
    HeldBack,
    Hook,
    HttpHandler,
    PromptHandler,
    Scope,
    guard_handler,
    location_name,
    merged_params,
    mode_problem,
    worker_pool,
)
from .suggest import TOML_FIELD_SYNONYMS, did_you_mean, event_synonyms

_FIELDS: Final = frozenset(
    {
        "id",
        "description",
        "match",
        "if",
        "type",
        "command",
        "args",
        "url",
        "headers",
        "allowed_env_vars",
        "prompt",
        "model",
        "timeout_seconds",
        "fail_closed",
        "mode",
        "worker",
        "worker_pool",
        "builtin",
        "params",
    }
)
#: Fields only one handler type may carry.
_TYPE_FIELDS: Final[dict[str, frozenset[str]]] = {
    "command": frozenset({"command", "args", "worker", "worker_pool"}),
    "http": frozenset({"url", "headers", "allowed_env_vars"}),
    "prompt": frozenset({"prompt", "model"}),
    "builtin": frozenset({"builtin", "params"}),
}
_TOP_LEVEL: Final = frozenset({"hooks", "judge", "held_back"})
_JUDGE_FIELDS: Final = frozenset({"base_url", "model", "api_key_env"})
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]*\Z")
#: Longest hook timeout we accept; a longer one is almost certainly a units mistake.
MAX_TIMEOUT_S: Final = 3600.0
#: Largest hooks.toml read (checked before reading; a bigger file is an error). A hand-written
#: hook file is a few KiB; 1 MiB leaves room for generated ones and bounds the parse.
MAX_TOML_FILE_BYTES: Final = 1024 * 1024


class _Entry:
    """Collects the problems of one ``[[hooks.<event>]]`` table."""

    def __init__(self, file: str, event: str, index: int, problems: list[ConfigProblem]) -> None:
        self.file, self.event, self.index, self.problems = file, event, index, problems
        self.ok = True

    def error(self, field: str | None, message: str) -> None:
        self.ok = False
        self.problems.append(ConfigProblem(self.file, message, self.event, self.index, field))


def _type_name(value: object) -> str:
    return {
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        list: "an array",
        dict: "a table",
    }.get(type(value), type(value).__name__)


def _string(entry: _Entry, raw: Mapping[str, Any], key: str, *, nonempty: bool) -> str | None:
    if key not in raw:
        return None
    value = raw[key]
    if not isinstance(value, str):
        entry.error(key, f"must be a string, not {_type_name(value)}")
        return None
    if nonempty and not value.strip():
        entry.error(key, "must not be empty")
        return None
    return value


def _string_list(entry: _Entry, raw: Mapping[str, Any], key: str) -> list[str] | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        entry.error(key, "must be an array of strings")
        return None
    return list(value)


def _handler(entry: _Entry, raw: Mapping[str, Any], kind: str) -> Handler | None:
    if kind == "command":
        command = _string(entry, raw, "command", nonempty=True)
        args = _string_list(entry, raw, "args")
        if "command" in raw and "args" in raw:
            entry.error("args", "a hook has command or args, not both")
            return None
        if args is not None:
            if not args or not args[0].strip():
                entry.error("args", "must name a program as its first element")
                return None
            for i, arg in enumerate(args):
                bad = exec_string_problem(arg)
                if bad is not None:
                    entry.error(f"args[{i}]", bad)
            return ArgsHandler(tuple(args)) if entry.ok else None
        if command is None:
            if "command" not in raw:
                entry.error("command", "a command hook needs command (or args)")
            return None
        bad = exec_string_problem(command)  # it is one argument: bash -c <command>
        if bad is not None:
            entry.error("command", bad)
            return None
        return CommandHandler(command)
    if kind == "http":
        url = _string(entry, raw, "url", nonempty=True)
        if url is None:
            if "url" not in raw:
                entry.error("url", 'an http hook needs url = "http(s)://..."')
            return None
        if not re.match(r"https?://[^/\s?#]+", url, re.IGNORECASE):
            entry.error("url", f"must be an http:// or https:// URL with a host, not {url!r}")
            return None
        headers: list[tuple[str, str]] = []
        raw_headers = raw.get("headers", {})
        if not isinstance(raw_headers, dict) or not all(
            isinstance(v, str) for v in raw_headers.values()
        ):
            entry.error("headers", "must be a table of strings")
            return None
        headers = [(str(k), v) for k, v in raw_headers.items()]
        allowed = _string_list(entry, raw, "allowed_env_vars") or []
        for name in allowed:
            if not _ENV_NAME.match(name):
                entry.error("allowed_env_vars", f"{name!r} is not an environment variable name")
                return None
        return HttpHandler(url, tuple(headers), tuple(allowed))
    if kind == "prompt":
        prompt = _string(entry, raw, "prompt", nonempty=True)
        model = _string(entry, raw, "model", nonempty=True)
        if prompt is None:
            if "prompt" not in raw:
                entry.error("prompt", "a prompt hook needs prompt")
            return None
        return PromptHandler(prompt, model)
    if kind == "builtin":
        if "builtin" not in raw:
            entry.error("builtin", 'a builtin hook needs builtin = "<guard name>"')
            return None
        beside = {k: v for k, v in raw.items() if k not in _FIELDS}
        guard, problems = guard_handler(
            raw["builtin"],
            merged_params(raw.get("params"), beside),
            entry.event,
            name_field="builtin",
            params_field="params",
            beside=frozenset(beside),
        )
        for field, message in problems:
            entry.error(field, message)
        return guard
    entry.error("type", f'must be "command", "http", "prompt" or "builtin", not {kind!r}')
    return None


def bar_hint(match: str) -> str:
    """Why a TOML ``match`` with ``|`` is refused, and what to write instead."""
    return (
        f"{match!r} has '|', which a TOML match (one Go path.Match glob) reads as a literal "
        "character, so it would match no tool: write one hook per tool, or one glob that covers "
        "them (such as '*_file'); '\\|' matches a literal '|'"
    )


def _hook(
    entry: _Entry, raw: Mapping[str, Any], scope: Scope, file: str, event: str, index: int
) -> Hook | None:
    guard_params = "builtin" in raw and raw.get("type", "builtin") == "builtin"
    for key in raw:
        if key not in _FIELDS and not guard_params:  # a guard's parameters sit beside its name
            hint = did_you_mean(key, _FIELDS, TOML_FIELD_SYNONYMS)
            entry.error(
                location_name(key), f"unknown field{hint} (known: {', '.join(sorted(_FIELDS))})"
            )
    kind = raw.get("type", "builtin" if "builtin" in raw else "command")
    if not isinstance(kind, str):
        entry.error("type", f"must be a string, not {_type_name(kind)}")
        return None
    if kind in _TYPE_FIELDS:
        for other, fields in _TYPE_FIELDS.items():
            if other != kind:
                for key in sorted(fields & raw.keys()):
                    entry.error(key, f"does not belong to a {kind} hook")
    handler = _handler(entry, raw, kind)

    match = _string(entry, raw, "match", nonempty=False)
    if match:
        try:
            validate_go_glob(match)
        except GlobError as exc:
            entry.error("match", str(exc))
        else:
            if has_bare_bar(match):
                entry.error("match", bar_hint(match))
    if_text = _string(entry, raw, "if", nonempty=True)
    if_rule: Any = None
    if if_text is not None:
        if not EVENTS[event].tool_event:
            entry.error("if", f"applies only to tool events, not {event}")
        else:
            try:
                if_rule = parse_if_rule(if_text)
            except IfRuleError as exc:
                entry.error("if", str(exc))

    timeout = raw.get("timeout_seconds", TOML_DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        entry.error("timeout_seconds", f"must be a number of seconds, not {_type_name(timeout)}")
        timeout = TOML_DEFAULT_TIMEOUT_S
    elif not 0 < timeout <= MAX_TIMEOUT_S:
        entry.error("timeout_seconds", f"must be > 0 and <= {MAX_TIMEOUT_S:g}, not {timeout}")
    fail_closed = raw.get("fail_closed", False)
    if not isinstance(fail_closed, bool):
        entry.error("fail_closed", f"must be true or false, not {_type_name(fail_closed)}")
    mode = raw.get("mode", "enforce")
    bad_mode = mode_problem(mode)
    if bad_mode is not None:
        entry.error("mode", bad_mode)
    explicit_id = _string(entry, raw, "id", nonempty=True)
    if explicit_id is not None and not _ID.match(explicit_id):
        entry.error("id", "must be letters, digits and _ . : - (starting with a letter or digit)")
    description = _string(entry, raw, "description", nonempty=False)
    worker, problems = worker_pool(raw)
    for field, message in problems:
        entry.error(field, message)

    if not entry.ok or handler is None:
        return None
    hook_id = explicit_id or f"{scope}:{event}[{index}]"
    return Hook(
        id=hook_id,
        name=explicit_id or _display_name(handler, event, index),
        event=event,
        config_event=event,
        dialect="toml",
        scope=scope,
        source=file,
        index=index,
        handler=handler,
        timeout_s=float(timeout),
        match=match or None,
        if_rule=if_text,
        compiled_if=if_rule,
        fail_closed=bool(fail_closed),
        mode=mode,
        description=description,
        explicit_id=explicit_id,
        worker=worker,
    )


def _display_name(handler: Handler, event: str, index: int) -> str:
    if isinstance(handler, CommandHandler):
        text = handler.command.strip().splitlines()[0]
    elif isinstance(handler, ArgsHandler):
        text = " ".join(handler.args)
    elif isinstance(handler, HttpHandler):
        text = handler.url
    elif isinstance(handler, GuardHandler):
        text = handler.name
    else:
        text = f"{event}[{index}] prompt"
    return text if len(text) <= 60 else text[:57] + "..."


class TomlFile:
    """What one hooks.toml yielded."""

    def __init__(self) -> None:
        self.hooks: list[Hook] = []
        self.problems: list[ConfigProblem] = []
        self.judge: dict[str, str] = {}
        #: The top-level ``held_back`` setting, when the file has a valid one.
        self.held_back: HeldBack | None = None


def _held_back(value: object, file: str, problems: list[ConfigProblem]) -> HeldBack | None:
    if value in HELD_BACK_CHOICES:
        return value
    choices = ", ".join(f'"{c}"' for c in HELD_BACK_CHOICES)
    problems.append(
        ConfigProblem(file, f"must be one of {choices}, not {value!r}", field="held_back")
    )
    return None


def parse_toml_text(text: str, *, file: str, scope: Scope) -> TomlFile:
    """Read one TOML-dialect file's text. Never raises for bad input."""
    import tomllib  # on first use: no TOML file, no TOML parser to load

    out = TomlFile()
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        out.problems.append(ConfigProblem(file, f"not valid TOML: {exc}"))
        return out
    except RecursionError:
        # tomllib parses nested arrays and inline tables recursively: `a = [[[[...]]]]`.
        out.problems.append(ConfigProblem(file, "not valid TOML: nested too deeply"))
        return out
    for key in doc:
        if key not in _TOP_LEVEL:
            out.problems.append(
                ConfigProblem(
                    file,
                    "unknown top-level key (expected [hooks], [judge] or held_back)",
                    field=location_name(key),
                )
            )
    if "held_back" in doc:
        out.held_back = _held_back(doc["held_back"], file, out.problems)
    judge = doc.get("judge", {})
    if not isinstance(judge, dict):
        out.problems.append(ConfigProblem(file, "must be a table", field="judge"))
    else:
        for key, value in judge.items():
            if key not in _JUDGE_FIELDS or not isinstance(value, str):
                out.problems.append(
                    ConfigProblem(
                        file,
                        f"unknown or non-string field (known: {', '.join(sorted(_JUDGE_FIELDS))})",
                        field=f"judge.{location_name(key)}",
                    )
                )
            else:
                out.judge[key] = value
    hooks = doc.get("hooks", {})
    if not isinstance(hooks, dict):
        out.problems.append(ConfigProblem(file, "must be a table of [[hooks.<event>]]", "hooks"))
        return out
    ids: dict[str, str] = {}
    for event, tables in hooks.items():
        if event not in EVENTS:
            hint = did_you_mean(event, EVENTS, event_synonyms({e: e for e in EVENTS}))
            known = ", ".join(EVENTS)
            out.problems.append(
                ConfigProblem(
                    file,
                    f"unknown event{hint}; known events: {known}",
                    event=location_name(event),
                )
            )
            continue
        if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
            out.problems.append(
                ConfigProblem(file, f"must be an array of tables: [[hooks.{event}]]", event=event)
            )
            continue
        for index, raw in enumerate(tables):
            entry = _Entry(file, event, index, out.problems)
            hook = _hook(entry, raw, scope, file, event, index)
            if hook is not None and hook.explicit_id is not None:
                # An id names one hook (list, audit, failure memory, self-configuration).
                first = ids.setdefault(hook.explicit_id, f"{event}[{index}]")
                if first != f"{event}[{index}]":
                    entry.error("id", f"duplicate id {hook.explicit_id!r}: {first} has it already")
                    continue
            if hook is not None:
                out.hooks.append(hook)
    return out
