"""The quiet-call cache of ``triohooks fire``: "no hook can run for this tool" remembered, so
the next such call is answered by the standard library alone (docs/performance.md).

An agent that uses the CLI starts one ``triohooks fire EVENT`` per tool call, and most calls
run no hook. Finding that out needs the config loaded and matched, which needs msgspec, which
costs about as much as starting Python. So when ``fire`` has found, the long way
(:func:`triohooks.fronts.cli._fire_nothing_runs`), that no hook of the table can run for this
event and tool *whatever the arguments* (:func:`~triohooks.config.selection.
nothing_runs_for_tool`), :func:`remember` writes that down, with everything the answer was
made from; :func:`answer` (stdlib only: ``json``, ``os``, ``stat``, ``zlib``) gives the same
answer the next time, byte for byte, when every one of those inputs is unchanged, and
otherwise returns None and the long way runs (and may remember again).

What an entry is made from, and checked on every use:

- the command: ``fire EVENT`` with no option but ``--json`` / ``--no-audit`` (any other
  option: never cached); the working directory (the workspace); the environment variables
  that choose the config directory and the prompt-hook judge, and whether the judge's API key
  variable is set;
- every file the decision read or could have read, by its signature (``stat`` and ``lstat``:
  device, inode, mode, size, mtime and ctime in ns, or its absence): the global and workspace
  hook files,
  the trust store, and the triohooks modules that made the decision (an upgrade or an edit of
  the code is a miss). Only tables without workspace hooks are cached: a trusted workspace's
  digest covers the scripts its hooks name, which the cache does not follow;
- the payload, read exactly as the long way reads it: anything it might read otherwise (a
  float, a duplicate key, a lone surrogate, an integer outside 64 bits, a field of the wrong
  type, a field this cache does not know how to check) is a miss, and the long way gives its
  own answer or error.

An entry is written only when every file it depends on was unchanged from before the table
was read to after, and last changed more than :data:`SETTLE_NS` before (file times are coarse:
two writes in one clock tick can leave the same times). The cache directory is private (0700,
ours); a file in it that is not a regular file of ours, mode 0600 or stricter, is ignored.
``TRIOHOOKS_FIRE_CACHE=off`` turns it off; ``TRIOHOOKS_CACHE_DIR`` moves it.

It must not import msgspec, trio or any triohooks module that does at module level (the
writer imports what it needs inside :func:`remember`; the signatures are the freshness rule of
every table, :mod:`triohooks.config.freshness`, standard library only), nor ever decide
anything itself: every answer it gives was computed by the long way first.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence

from triohooks.config import freshness

#: typing is not imported at run time (the cache's answer is all the standard library it
#: needs); type checkers treat this name as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from pathlib import Path
    from typing import Any, Final, ParamSpec

    from triohooks.config.events import EventBase
    from triohooks.config.model import HookTable

    P = ParamSpec("P")

#: Bumped whenever what an entry holds changes meaning.
FORMAT: Final = 2
CACHE_DIR_VAR: Final = "TRIOHOOKS_CACHE_DIR"
SWITCH_VAR: Final = "TRIOHOOKS_FIRE_CACHE"
#: Internal, for tests only: the settle time in ms instead of :data:`SETTLE_NS`.
SETTLE_VAR: Final = "_TRIOHOOKS_FIRE_CACHE_SETTLE_MS"
#: A file changed less than this before the table was read is not cached on (FAT keeps mtimes
#: to 2 s; Linux updates times once per clock tick).
SETTLE_NS: Final = 2_000_000_000
#: The environment that chooses what ``fire`` reads: every ``TRIOHOOKS_*`` variable (the
#: config directory, the judge; the engine-forcing test variable) but these, which a no-match
#: fire does not read (the token is a secret, and is never written to an entry) ...
UNREAD_VARS: Final = frozenset(
    {"TRIOHOOKS_TOKEN", "TRIOHOOKS_RUN", "TRIOHOOKS_WORKER", CACHE_DIR_VAR, SWITCH_VAR}
)
#: ... and these, which choose the default directories (platformdirs).
KEY_VARS: Final = ("XDG_CONFIG_HOME", "HOME")
#: Options of ``fire`` that change nothing when no hook runs.
NEUTRAL_OPTIONS: Final = frozenset({"--json", "--no-audit"})
MAX_ENTRY_BYTES: Final = 1 << 20
#: Tools remembered per event in one entry; past it the entry starts again.
MAX_TOOLS: Final = 512
#: Entries (one per working directory and environment) kept in the directory.
MAX_ENTRIES: Final = 256
_INT_MIN: Final = -(1 << 63)
_INT_MAX: Final = (1 << 64) - 1

#: The stdin ``fire`` read here, for the long way to use instead of reading again.
preloaded_stdin: bytes | None = None


def read_stdin() -> bytes:
    """What ``fire`` reads as its payload: all of stdin; nothing from a terminal or a closed
    stdin (an agent that passes no payload)."""
    stdin = sys.stdin
    if stdin is None or stdin.isatty():
        return b""
    return stdin.buffer.read()


class _Miss(Exception):
    """The cache cannot give the answer: the long way must."""


def enabled(environ: Mapping[str, str]) -> bool:
    return environ.get(SWITCH_VAR, "").strip().lower() not in ("0", "off", "false", "no")


def cache_dir(environ: Mapping[str, str]) -> str | None:
    """Where entries live: ``$TRIOHOOKS_CACHE_DIR``, else the user cache directory
    (``$XDG_CACHE_HOME`` or ``~/.cache`` on Linux and the BSDs, ``~/Library/Caches`` on
    macOS) + ``/triohooks/fire``; None (no cache) elsewhere, or without a home."""
    explicit = environ.get(CACHE_DIR_VAR)
    if explicit:
        return os.path.join(explicit, "fire")
    home = environ.get("HOME")
    if sys.platform == "darwin":
        base = os.path.join(home, "Library", "Caches") if home else None
    elif sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        xdg = environ.get("XDG_CACHE_HOME")
        base = (
            xdg if xdg and os.path.isabs(xdg) else (os.path.join(home, ".cache") if home else None)
        )
    else:
        base = None
    return os.path.join(base, "triohooks", "fire") if base else None


def eligible_event(argv: Sequence[str]) -> str | None:
    """The EVENT word of ``fire EVENT [--json] [--no-audit]``; None for any other command."""
    if len(argv) < 2 or argv[0] != "fire":
        return None
    words = [w for w in argv[1:] if w not in NEUTRAL_OPTIONS]
    if len(words) != 1 or words[0].startswith("-"):
        return None
    return words[0]


def _key(environ: Mapping[str, str], cwd: str) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "cwd": cwd,
        "env": {
            name: value
            for name, value in sorted(environ.items())
            if name in KEY_VARS
            or (name.startswith(("TRIOHOOKS_", "_TRIOHOOKS_")) and name not in UNREAD_VARS)
        },
    }


def _entry_path(directory: str, key: Mapping[str, Any]) -> str:
    text = json.dumps(key, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass")
    return os.path.join(directory, f"{zlib.crc32(text):08x}-{zlib.adler32(text):08x}.json")


def _signatures(paths: Iterable[str]) -> list[Any]:
    """Every path's signature, by the one freshness rule of every table
    (:mod:`triohooks.config.freshness`), with the cache's settle time (no entry is written
    on a file that has not settled)."""
    return freshness.signatures(paths, _settle_ns(os.environ))


def _read_private(path: str) -> bytes:
    """The entry file's bytes, if it is a regular file of ours that nobody else may write, in
    a directory of ours that nobody else may enter; else :class:`_Miss`."""
    me = os.geteuid()
    try:
        dst = os.lstat(os.path.dirname(path))
        if not stat.S_ISDIR(dst.st_mode) or dst.st_uid != me or dst.st_mode & 0o077:
            raise _Miss
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        raise _Miss from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != me or st.st_mode & 0o077:
            raise _Miss
        if st.st_size > MAX_ENTRY_BYTES:
            raise _Miss
        return os.read(fd, MAX_ENTRY_BYTES + 1)
    except OSError:
        raise _Miss from None
    finally:
        os.close(fd)


# -- the payload, as the long way reads it --------------------------------------------------------
def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _Miss  # a duplicate key
    return out


def _no_float(text: str) -> Any:
    raise _Miss


def _int(text: str) -> int:
    value = int(text)
    if not _INT_MIN <= value <= _INT_MAX:
        raise _Miss
    return value


def _decode_payload(data: bytes) -> dict[str, Any]:
    """``cli._read_payload`` for the payloads both JSON readers take alike; :class:`_Miss`
    for anything else (the long way then reads it, and reports what is wrong)."""
    if not data.strip():
        return {}
    try:
        payload = json.loads(
            data.decode("utf-8"),
            object_pairs_hook=_pairs,
            parse_float=_no_float,
            parse_int=_int,
            parse_constant=_no_float,
        )
    except (ValueError, RecursionError):
        raise _Miss from None
    if not isinstance(payload, dict):
        raise _Miss
    _check_text(payload)
    return payload


def _check_text(value: Any) -> None:
    """No lone surrogate anywhere (``json`` takes ``"\\ud800"``; msgspec refuses it)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise _Miss from None
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


_KIND_CHECKS: Final[dict[str, Callable[[Any], bool]]] = {
    "str": lambda v: isinstance(v, str),
    "str?": lambda v: v is None or isinstance(v, str),
    "object": lambda v: isinstance(v, dict),
    "any": lambda v: True,
}


def _event_fields(spec: Mapping[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
    """``event_from_payload``'s view of ``payload`` (aliases, known fields only, ``args:
    null`` dropped), each field checked against its type; :class:`_Miss` when one fails or
    is of a type this cache does not check."""
    kinds: Mapping[str, str] = spec["fields"]
    fields = dict(payload)
    fields.pop("event", None)
    for alias, canon in spec["aliases"].items():
        if alias in fields and canon in kinds and canon not in fields:
            fields[canon] = fields.pop(alias)
    fields = {k: v for k, v in fields.items() if k in kinds}
    if fields.get("args") is None and "args" in kinds:
        fields.pop("args", None)
    for name, value in fields.items():
        check = _KIND_CHECKS.get(kinds[name])
        if check is None or not check(value):
            raise _Miss
    return fields


def _encode(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def answer(argv: Sequence[str], environ: Mapping[str, str], data: bytes) -> str | None:
    """The stdout of ``fire`` for ``argv`` with stdin ``data`` when a valid entry holds the
    answer (stderr lines are printed here); None otherwise."""
    word = eligible_event(argv)
    if word is None or not enabled(environ) or "_TRIOHOOKS_FIRE_VIA_ENGINE" in environ:
        return None
    directory = cache_dir(environ)
    if directory is None:
        return None
    try:
        cwd = os.getcwd()
        key = _key(environ, cwd)
        entry = json.loads(_read_private(_entry_path(directory, key)))
        if not isinstance(entry, dict) or entry.get("key") != key:
            return None
        judge = entry["judge_key"]
        if judge is not None and bool(environ.get(judge[0])) is not judge[1]:
            return None
        if _signatures(sig[0] for sig in entry["files"]) != entry["files"]:
            return None
        event = entry["words"][word]
        spec = entry["events"][event]
        fields = _event_fields(spec, _decode_payload(data))
        if spec["tool_event"] and str(fields.get("tool", "")) not in spec["quiet_tools"]:
            return None
        if not spec["tool_event"] and not spec["quiet"]:
            return None
        defaults: Mapping[str, Any] = spec["defaults"]
        parts = [
            part if isinstance(part, str) else _encode(fields.get(part[0], defaults[part[0]]))
            for part in spec["template"]
        ]
        said = "".join(f"triohooks: {line}\n" for line in entry["stderr"])
    except (_Miss, OSError, ValueError, KeyError, TypeError, IndexError, RecursionError):
        return None
    if said:
        sys.stderr.write(said)
    return "".join(parts) + "\n"


# -- the writer (the long way, msgspec and the table at hand) -------------------------------------
def remember_eligible(
    words: Sequence[str], args: argparse.Namespace, environ: Mapping[str, str]
) -> bool:
    """Whether this ``fire`` call (command line ``words``, parsed as ``args``) may be
    remembered: the command :func:`answer` takes."""
    return (
        eligible_event(words) == args.event
        and args.workspace is None
        and args.config_dir is None
        and not args.configs
        and not args.trust
        and enabled(environ)
        and "_TRIOHOOKS_FIRE_VIA_ENGINE" not in environ
        and cache_dir(environ) is not None
    )


def _settle_ns(environ: Mapping[str, str]) -> int:
    try:
        return int(float(environ[SETTLE_VAR]) * 1_000_000)
    except (KeyError, ValueError):
        return SETTLE_NS


def _never_raises(func: Callable[P, None]) -> Callable[P, None]:
    def quietly(*args: P.args, **kwargs: P.kwargs) -> None:
        try:
            func(*args, **kwargs)
        except Exception:
            return

    quietly.__doc__ = func.__doc__
    return quietly


class Snapshot:
    """The files a decision depends on, taken before the table is read."""

    def __init__(self, config_dir: Path, workspace: Path) -> None:
        from triohooks.config.paths import global_config_files, workspace_config_files
        from triohooks.config.trust import STORE_NAME

        self.started_ns = time.time_ns()
        names = [
            str(p) for p in (*global_config_files(config_dir), *workspace_config_files(workspace))
        ]
        names.append(str(config_dir / STORE_NAME))
        self.files = _signatures(names)


@_never_raises
def remember(
    snapshot: Snapshot,
    environ: Mapping[str, str],
    word: str,
    event: str,
    ev: EventBase,
    table: HookTable,
    stderr: Sequence[str],
) -> None:
    """Write down that no hook can run for ``word`` (``event``) and this call's tool, when
    that holds whatever the arguments and nothing it rests on may have moved. Never raises
    (a cache: the answer is already given, a failure here changes nothing)."""
    from triohooks.config import selection
    from triohooks.config.events import EVENTS

    if table.trust is not None and table.trust.state != "none":
        return  # workspace hooks: their trust digest covers files not followed here
    info = EVENTS[event]
    tool = str(getattr(ev, "tool", "") or "") if info.tool_event else ""
    if not selection.nothing_runs_for_tool(table, event, tool):
        return
    directory = cache_dir(environ)
    assert directory is not None
    # Every file read, and the code that decided, unchanged and settled.
    modules = sorted(
        file
        for name, m in list(sys.modules.items())
        if (name == "triohooks" or name.startswith("triohooks."))
        and isinstance(file := getattr(m, "__file__", None), str)
    )
    files = [*snapshot.files, *_signatures(modules)]
    if _signatures(sig[0] for sig in snapshot.files) != snapshot.files:
        return
    limit = snapshot.started_ns - _settle_ns(environ)
    for sig in files:
        for st in sig[1:3]:
            if isinstance(st, list) and (st[4] >= limit or st[5] >= limit):
                return
    key = _key(environ, os.getcwd())
    path = _entry_path(directory, key)
    judge = _judge_key(table, environ)
    entry: dict[str, Any] = {}
    try:
        old = json.loads(_read_private(path))
        if (
            isinstance(old, dict)
            and old.get("key") == key
            and old.get("files") == files
            and old.get("judge_key") == judge
            and old.get("stderr") == list(stderr)
        ):
            entry = old
    except (_Miss, ValueError):
        pass
    if not entry:
        entry = {"key": key, "files": files, "judge_key": judge, "stderr": list(stderr)}
        entry |= {"words": {}, "events": {}}
    spec = entry["events"].get(event) or _event_spec(event, ev)
    if info.tool_event:
        tools = spec["quiet_tools"]
        if tool not in tools:
            if len(tools) >= MAX_TOOLS:
                tools.clear()
            tools.append(tool)
    else:
        spec["quiet"] = True
    entry["events"][event] = spec
    entry["words"][word] = event
    _write_private(directory, path, json.dumps(entry, ensure_ascii=False).encode())


def _judge_key(table: HookTable, environ: Mapping[str, str]) -> list[Any] | None:
    """The judge's API key variable and whether it is set (``judge_from_env`` warns when it
    is named but unset), or None when none is named."""
    from triohooks.handlers.judge import ENV_API_KEY_VAR

    name = (dict(table.judge).get("api_key_env") or environ.get(ENV_API_KEY_VAR) or "").strip()
    return [name, bool(environ.get(name))] if name else None


def _event_spec(event: str, ev: EventBase) -> dict[str, Any]:
    """How :func:`answer` reads this event's payload and writes its Outcome: the fields and
    their types, the aliases, and ``plain_outcome``'s encoding cut where it echoes a field
    of the event (found by giving it an event whose every field is a marker)."""
    import msgspec

    from triohooks.combine.outcome import plain_outcome
    from triohooks.config.events import _FIELD_ALIASES, EVENT_TYPES, EVENTS

    kinds: dict[str, str] = {}
    defaults: dict[str, Any] = {}
    for f in msgspec.structs.fields(EVENT_TYPES[event]):
        kinds[f.name] = _kind(f.type)
        if f.default is not msgspec.NODEFAULT:
            defaults[f.name] = msgspec.to_builtins(f.default)
        elif f.default_factory is not msgspec.NODEFAULT:
            defaults[f.name] = msgspec.to_builtins(f.default_factory())
    marks = {name: msgspec.json.encode(f"\x00{name}\x00").decode() for name in kinds}
    marked = msgspec.structs.replace(ev, **{name: f"\x00{name}\x00" for name in kinds})
    text = msgspec.json.encode(plain_outcome(event, marked)).decode()
    found = sorted((text.find(mark), name) for name, mark in marks.items() if mark in text)
    template: list[Any] = []
    for _, name in found:
        head, _, text = text.partition(marks[name])
        if marks[name] in text:
            raise ValueError(f"the Outcome of {event} holds {name} twice")
        template += [head, [name]]
    template.append(text)
    return {
        "tool_event": EVENTS[event].tool_event,
        "fields": kinds,
        "defaults": {name: defaults[name] for _, name in found},
        "aliases": dict(_FIELD_ALIASES),
        "template": template,
        "quiet_tools": [],
        "quiet": False,
    }


def _kind(annotation: Any) -> str:
    """The check :func:`_event_fields` makes for a field of this type; ``?`` when none."""
    from typing import Any as _Any

    if annotation is str:
        return "str"
    if annotation == (str | None):
        return "str?"
    if annotation is _Any:
        return "any"
    if getattr(annotation, "__origin__", None) is dict and annotation.__args__ == (str, _Any):
        return "object"
    return "?"


def _write_private(directory: str, path: str, data: bytes) -> None:
    """Write the entry atomically in a private directory (made 0700 if missing), mode 0600;
    past :data:`MAX_ENTRIES` entries the oldest go."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    st = os.lstat(directory)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        return
    if st.st_mode & 0o077:
        os.chmod(directory, 0o700)
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _prune(directory)


def _prune(directory: str) -> None:
    with os.scandir(directory) as it:
        entries = [e for e in it if e.name.endswith(".json")]
    if len(entries) <= MAX_ENTRIES:
        return
    entries.sort(key=lambda e: e.stat(follow_symlinks=False).st_mtime_ns)
    for e in entries[: len(entries) - MAX_ENTRIES]:
        try:
            os.unlink(e.path)
        except OSError:
            pass
