"""The JSON ("everruns") config dialect: hooks.json files, read leniently, and the yolop merge.

Owns validating ``UserHookSpec`` entries (every rule of the upstream schema: limits, matcher
shape, RE2, timeouts) and merging scopes (``disabled``, id replacement, append-only id-less
hooks, ``disabled_contributions``). A bad file or entry is a warning and is skipped; it never
stops the other scope. It must not decide trust or run anything.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

import msgspec

from triohooks.match.matchers import JsonMatcher, MatcherError, compile_matcher

from .events import JSON_ALIASES, JSON_NAMES
from .model import (
    HELD_BACK_CHOICES,
    JSON_DEFAULT_TIMEOUT_MS,
    JSON_MAX_TIMEOUT_MS,
    JSON_MIN_TIMEOUT_MS,
    CommandHandler,
    ConfigProblem,
    GuardHandler,
    HeldBack,
    Hook,
    Mode,
    Scope,
    guard_handler,
    location_name,
    merged_params,
    mode_problem,
    worker_pool,
)
from .suggest import JSON_FIELD_SYNONYMS, did_you_mean, event_synonyms

MAX_HOOKS_PER_FILE: Final = 64
#: Largest hooks.json read (the yolop/everruns limit); checked before reading.
MAX_FILE_BYTES: Final = 256 * 1024
MAX_COMMAND_BYTES: Final = 16 * 1024
MAX_ENV_VARS: Final = 16
MAX_MATCHER_FIELD_BYTES: Final = 2048
_HOOK_KEYS: Final = frozenset(
    {"id", "event", "matcher", "executor", "timeout_ms", "on_error", "mode", "description"}
)
_EXECUTOR_KEYS: Final = frozenset(
    {"type", "command", "env", "worker", "worker_pool", "name", "params"}
)
_MATCHER_KEYS: Final = frozenset(JsonMatcher.__struct_fields__)
_TOOL_EVENTS: Final = frozenset({"pre_tool_use", "post_tool_use"})
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
#: Linux refuses (E2BIG) to start a program with any one argument or environment string of
#: this many bytes or more, its terminating NUL included (MAX_ARG_STRLEN = 32 pages).
MAX_ARG_STRLEN: Final = 32 * 4096


def exec_string_problem(value: str) -> str | None:
    """Why the OS could not pass ``value`` to a program as one argument or environment
    string (a NUL byte, or MAX_ARG_STRLEN), or None. Both dialects check every string that
    reaches ``execve`` with it, so ``validate`` reports what a run would trip on."""
    if "\0" in value:
        return "must not contain a NUL byte (the OS cannot pass one to a program)"
    size = len(value.encode("utf-8", "surrogatepass"))
    if size >= MAX_ARG_STRLEN:
        return (
            f"is {size} bytes; the OS passes at most {MAX_ARG_STRLEN - 1} bytes in one "
            "argument or environment string (Linux MAX_ARG_STRLEN)"
        )
    return None


class EntryError(ValueError):
    """One hook entry is invalid; ``field`` is the dotted path of the bad field."""

    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(message)
        self.field = field


class JsonHookSpec(msgspec.Struct, frozen=True, kw_only=True):
    """A validated ``UserHookSpec`` (before ids are resolved and scopes merged)."""

    id: str | None
    event: str
    matcher: JsonMatcher | None
    command: str
    env: tuple[tuple[str, str], ...]
    timeout_ms: int
    on_error: str
    description: str | None
    #: ``enforce`` or ``observe`` (:data:`~.model.Mode`).
    mode: Mode = "enforce"
    #: Built at validation so a bad regex is caught at load time.
    compiled_matcher: Any = None
    #: Warm-worker pool size (0: a process per event).
    worker: int = 0
    #: A built-in guard instead of a bash command (``command`` is then "").
    guard: GuardHandler | None = None


def validate_hook_spec(raw: object) -> JsonHookSpec:
    """Validate one hook entry; raises :class:`EntryError` saying what is wrong and where."""
    if not isinstance(raw, dict):
        raise EntryError(None, "a hook must be a JSON object")
    for key in raw:
        if key not in _HOOK_KEYS:
            hint = did_you_mean(key, _HOOK_KEYS, JSON_FIELD_SYNONYMS)
            raise EntryError(
                location_name(key),
                f"unknown field{hint} (known: {', '.join(sorted(_HOOK_KEYS))})",
            )
    hook_id = raw.get("id")
    if hook_id is not None and (not isinstance(hook_id, str) or not hook_id.strip()):
        raise EntryError("id", "must be a non-empty string")
    event = raw.get("event")
    if not isinstance(event, str):
        raise EntryError("event", "is required: one of " + ", ".join(JSON_ALIASES))
    if event not in JSON_ALIASES:
        hint = did_you_mean(event, JSON_ALIASES, event_synonyms(JSON_NAMES))
        raise EntryError("event", f"unknown event {event!r}{hint}")

    matcher = _matcher(raw.get("matcher"), event)
    compiled = None
    if matcher is not None:
        try:
            compiled = compile_matcher(matcher)
        except MatcherError as exc:
            field = getattr(exc, "field", None)
            raise EntryError(f"matcher.{field}" if field else "matcher", str(exc)) from None

    executor = raw.get("executor")
    if not isinstance(executor, dict):
        raise EntryError("executor", 'is required: {"type": "bash", "command": "..."}')
    is_guard = executor.get("type") == "builtin"
    for key in executor:
        if key not in _EXECUTOR_KEYS and not is_guard:  # a guard's parameters: beside its name
            raise EntryError(
                f"executor.{location_name(key)}",
                f"unknown field{did_you_mean(key, _EXECUTOR_KEYS)} "
                f"(known: {', '.join(sorted(_EXECUTOR_KEYS))})",
            )
    guard = None
    if executor.get("type") == "builtin":
        stray = sorted((set(executor) & _EXECUTOR_KEYS) - {"type", "name", "params"})
        if stray:
            raise EntryError(f"executor.{location_name(stray[0])}", "does not belong to a builtin")
        beside = {k: v for k, v in executor.items() if k not in _EXECUTOR_KEYS}
        guard, problems = guard_handler(
            executor.get("name"),
            merged_params(executor.get("params"), beside),
            JSON_ALIASES[event],
            name_field="executor.name",
            params_field="executor.params",
            beside=frozenset(beside),
            beside_prefix="executor.",
        )
        if guard is None:
            raise EntryError(*problems[0])
    elif executor.get("type") != "bash":
        raise EntryError(
            "executor.type", f'must be "bash" or "builtin", not {executor.get("type")!r}'
        )
    else:
        for key in ("name", "params"):
            if key in executor:
                raise EntryError(f"executor.{key}", "belongs to a builtin executor, not bash")
    command = "" if guard is not None else executor.get("command")
    if guard is None and (not isinstance(command, str) or not command.strip()):
        raise EntryError("executor.command", "must be a non-empty string")
    assert isinstance(command, str)
    if len(command.encode("utf-8", "surrogatepass")) > MAX_COMMAND_BYTES:
        raise EntryError("executor.command", f"is longer than {MAX_COMMAND_BYTES} bytes")
    bad = exec_string_problem(command)
    if bad is not None:
        raise EntryError("executor.command", bad)
    env = executor.get("env", {})
    if env is None:
        env = {}
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise EntryError("executor.env", "must be an object of string values")
    if len(env) > MAX_ENV_VARS:
        raise EntryError("executor.env", f"has {len(env)} variables; at most {MAX_ENV_VARS}")
    for name, value in env.items():
        if not _ENV_NAME.match(name):
            raise EntryError("executor.env", f"{name!r} is not an environment variable name")
        bad = exec_string_problem(f"{name}={value}")
        if bad is not None:
            raise EntryError(f"executor.env.{name}", bad)

    worker, problems = worker_pool(executor, "executor.")
    if problems:
        raise EntryError(*problems[0])

    timeout_ms = raw.get("timeout_ms", JSON_DEFAULT_TIMEOUT_MS)
    if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int):
        raise EntryError("timeout_ms", "must be an integer number of milliseconds")
    if not JSON_MIN_TIMEOUT_MS <= timeout_ms <= JSON_MAX_TIMEOUT_MS:
        raise EntryError(
            "timeout_ms",
            f"must be {JSON_MIN_TIMEOUT_MS}..{JSON_MAX_TIMEOUT_MS}, not {timeout_ms}",
        )
    on_error = raw.get("on_error", "warn")
    if on_error not in ("warn", "block", "allow"):
        raise EntryError("on_error", f'must be "warn", "block" or "allow", not {on_error!r}')
    mode = raw.get("mode", "enforce")
    bad_mode = mode_problem(mode)
    if bad_mode is not None:
        raise EntryError("mode", bad_mode)
    description = raw.get("description")
    if description is not None and not isinstance(description, str):
        raise EntryError("description", "must be a string")
    return JsonHookSpec(
        id=hook_id,
        event=event,
        matcher=matcher,
        command=command,
        env=tuple(env.items()),
        timeout_ms=timeout_ms,
        on_error=on_error,
        description=description,
        mode=mode,
        compiled_matcher=compiled,
        worker=worker,
        guard=guard,
    )


def _matcher(raw: object, event: str) -> JsonMatcher | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise EntryError("matcher", "must be an object")
    if event not in _TOOL_EVENTS:
        raise EntryError("matcher", f"applies only to pre_tool_use and post_tool_use, not {event}")
    for key, value in raw.items():
        if key not in _MATCHER_KEYS:
            raise EntryError(
                f"matcher.{location_name(key)}",
                f"unknown field{did_you_mean(key, _MATCHER_KEYS)} "
                f"(known: {', '.join(sorted(_MATCHER_KEYS))})",
            )
        if value is not None and not isinstance(value, str):
            raise EntryError(f"matcher.{key}", "must be a string")
        if isinstance(value, str) and len(value.encode()) > MAX_MATCHER_FIELD_BYTES:
            raise EntryError(f"matcher.{key}", f"is longer than {MAX_MATCHER_FIELD_BYTES} bytes")
    return msgspec.convert(raw, JsonMatcher)


class JsonFile(msgspec.Struct, kw_only=True):
    """What one hooks.json yielded (only valid entries are kept)."""

    file: str
    scope: Scope
    specs: list[tuple[int, JsonHookSpec]] = msgspec.field(default_factory=list)
    disabled: list[str] = msgspec.field(default_factory=list)
    disabled_contributions: list[str] = msgspec.field(default_factory=list)
    problems: list[ConfigProblem] = msgspec.field(default_factory=list)
    loaded: bool = False
    #: The top-level ``held_back`` setting, when the file has a valid one.
    held_back: HeldBack | None = None


def _str_list(value: object) -> list[str] | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def parse_json_bytes(data: bytes, *, file: str, scope: Scope) -> JsonFile:
    """Read one JSON-dialect file leniently. Never raises for bad input."""
    out = JsonFile(file=file, scope=scope)

    def warn(
        message: str, event: str | None = None, index: int | None = None, field: str | None = None
    ) -> None:
        out.problems.append(ConfigProblem(file, message, event, index, field, severity="warning"))

    if len(data) > MAX_FILE_BYTES:
        warn(f"file is {len(data)} bytes, over the {MAX_FILE_BYTES}-byte limit; skipped")
        return out
    try:
        doc = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        warn(f"malformed JSON, file skipped: {exc}")
        return out
    except RecursionError:
        # msgspec decodes nested arrays/objects recursively: `[[[[...]]]]` within the size limit.
        warn("malformed JSON, file skipped: nested too deeply")
        return out
    if not isinstance(doc, dict):
        warn("top level must be an object with a 'hooks' array; file skipped")
        return out
    hooks = doc.get("hooks", [])
    if not isinstance(hooks, list):
        warn("'hooks' must be an array; file skipped", field="hooks")
        return out
    if len(hooks) > MAX_HOOKS_PER_FILE:
        warn(f"{len(hooks)} hooks, over the limit of {MAX_HOOKS_PER_FILE}; file skipped")
        return out
    for key in ("disabled", "disabled_contributions"):
        value = doc.get(key, [])
        items = _str_list(value if value is not None else [])
        if items is None:
            warn("must be an array of strings; ignored", field=key)
        elif key == "disabled":
            out.disabled = items
        else:
            out.disabled_contributions = items
    if "held_back" in doc:
        value = doc["held_back"]
        if value in HELD_BACK_CHOICES:
            out.held_back = value
        else:
            choices = ", ".join(f'"{c}"' for c in HELD_BACK_CHOICES)
            warn(f"must be one of {choices}, not {value!r}; ignored", field="held_back")
    seen: set[str] = set()
    for index, raw in enumerate(hooks):
        event = raw.get("event") if isinstance(raw, dict) else None
        where = location_name(event) if isinstance(event, str) else "hooks"
        try:
            spec = validate_hook_spec(raw)
        except EntryError as exc:
            warn(f"invalid hook skipped: {exc}", where, index, exc.field)
            continue
        if spec.id is not None:
            if spec.id in seen:
                warn(
                    f"duplicate id {spec.id!r} in one file; later entry skipped", where, index, "id"
                )
                continue
            seen.add(spec.id)
        out.specs.append((index, spec))
    out.loaded = True
    return out


def merge_json_scopes(files: Sequence[JsonFile]) -> tuple[list[Hook], list[str]]:
    """Merge JSON files given lowest precedence first (global, extras, workspace).

    Returns the effective hooks in run order and the concatenated ``disabled_contributions``.
    """
    # (file, index, spec) in precedence order; replaced/disabled entries are dropped.
    effective: list[tuple[JsonFile, int, JsonHookSpec]] = []
    for jf in files:
        if jf.disabled:
            gone = set(jf.disabled)
            effective = [e for e in effective if e[2].id is None or e[2].id not in gone]
        own_ids = {spec.id for _, spec in jf.specs if spec.id is not None}
        if own_ids:
            effective = [e for e in effective if e[2].id is None or e[2].id not in own_ids]
        effective.extend((jf, index, spec) for index, spec in jf.specs)
    contributions = [c for jf in files for c in jf.disabled_contributions]
    muted = set(contributions)
    hooks: list[Hook] = []
    explicit = {spec.id for _, _, spec in effective if spec.id is not None}
    for position, (jf, index, spec) in enumerate(effective):
        if spec.id is not None:
            resolved = f"user:{spec.id}"
        else:
            generated = f"{spec.event}_{position}"
            # An explicit id may spell a generated one; the id-less hook then takes a suffix,
            # so every hook keeps its own id (audit records, failure memory, EVERRUNS_HOOK_ID).
            suffix = 1
            while generated in explicit:
                generated = f"{spec.event}_{position}_{suffix}"
                suffix += 1
            resolved = f"user:{generated}"
        if resolved in muted:
            continue
        hooks.append(_to_hook(jf, index, spec, resolved))
    return hooks, contributions


def _to_hook(jf: JsonFile, index: int, spec: JsonHookSpec, resolved: str) -> Hook:
    return Hook(
        id=resolved,
        name=resolved,
        event=JSON_ALIASES[spec.event],
        config_event=spec.event,
        dialect="json",
        scope=jf.scope,
        source=jf.file,
        index=index,
        handler=spec.guard or CommandHandler(spec.command),
        timeout_s=spec.timeout_ms / 1000.0,
        matcher=spec.matcher,
        compiled_matcher=spec.compiled_matcher,
        on_error=spec.on_error,  # type: ignore[arg-type]
        mode=spec.mode,
        env=spec.env,
        description=spec.description,
        explicit_id=spec.id,
        worker=spec.worker,
    )
