"""``triohooks <agent> install`` / ``uninstall``: move an agent's hooks into triohooks and back.

Install reads one settings file (user or project scope), finds the *bytes* of its top-level
``hooks`` value, writes exactly those bytes to ``triohooks-hooks.json`` beside it, and puts in
their place one catch-all hook per event that points at triohooks: an ``http`` hook to
``/claude/v1/hook`` where Claude Code allows one (not for SessionStart), else a
``triohooks-relay <agent>`` command hook. Everything else in the file is left byte for byte.
Uninstall puts the bytes of ``triohooks-hooks.json`` back in place of the catch-all and removes
that file: with no edits in between, the settings file is restored byte for byte.

Refused, with a message and nothing written: a settings file that is not valid JSON or not an
object (never clobbered), one with no ``hooks`` to adopt, an existing ``triohooks-hooks.json``
that is not ours to overwrite, an uninstall whose ``hooks`` are no longer only ours. A symlinked
target or a directory leading out of the scope is refused as for self-configuration.

Pure planning (:func:`plan_install`, :func:`plan_uninstall`) is separate from writing
(:func:`apply`), so ``--dry-run`` prints the same change it would make.
"""

from __future__ import annotations

import difflib
import json
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal

import msgspec

from triohooks.config.model import ConfigProblem
from triohooks.config.paths import (
    UnreadableFileError,
    UnsafeWriteError,
    check_write_target,
    global_config_dir,
    read_regular_file,
    state_dir,
    write_file_atomic,
)

from . import codex_review, undo
from .agy import ADOPTED_SET
from .config import MAX_SETTINGS_BYTES, as_group, is_ours, level_files, parse_hooks
from .routing import own_events, routed_events
from .spec import (
    LOCAL_RELAY,
    NATIVE_RELAY,
    PORTABLE_RELAY,
    SPECS,
    TOKEN_VAR,
    AgentName,
    Level,
    event_arg,
    http_handler,
    levels,
    scope_arg,
)
from .spec import adopted_path as adopted_path_of
from .spec import entry as entry_of
from .spec import timeout_value as timeout_of

Scope = Literal["user", "project"]
Transport = Literal["http", "relay"]
#: Seconds added to the longest adopted hook's timeout for the catch-all's own timeout.
TIMEOUT_MARGIN_S: Final = 5.0
DEFAULT_PORT: Final = 8765


class AdoptError(Exception):
    """The change cannot be made; the message says which file and why. Nothing was written."""


class FileChange(msgspec.Struct, frozen=True):
    path: str
    #: None: the file does not exist before / is removed after.
    before: bytes | None
    after: bytes | None
    #: In ``--dry-run``'s diff (the install record is written, not shown: it repeats the rest).
    shown: bool = True


class Plan(msgspec.Struct, frozen=True):
    agent: AgentName
    scope: Scope
    settings: str
    changes: tuple[FileChange, ...]
    #: Events now routed to triohooks, and the exact command (or ``POST url``) written.
    routes: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = ()
    #: This plan moves the settings file's hooks into ``triohooks-hooks.json`` (false: that
    #: file was there already, not written by this install: it is not trusted on its word).
    moves: bool = False

    def diff(self) -> str:
        out: list[str] = []
        for change in (c for c in self.changes if c.shown):
            a = (change.before or b"").decode("utf-8", "replace").splitlines(keepends=True)
            b = (change.after or b"").decode("utf-8", "replace").splitlines(keepends=True)
            before = change.path if change.before is not None else "/dev/null"
            after = change.path if change.after is not None else "/dev/null"
            out += difflib.unified_diff(a, b, before, after)
            if out and not out[-1].endswith("\n"):
                out[-1] += "\n"
        return "".join(out)


def settings_path(agent: AgentName, scope: Scope, *, home: Path, project: Path) -> Path:
    """The file ``install --scope`` writes the catch-alls into: that level's settings."""
    return next(lv.path for lv in levels(agent, project, home) if lv.name == scope)


# -- the top-level member spans of a JSON object, in bytes ------------------------------------


def member_spans(text: str) -> dict[str, tuple[int, int]]:
    """``{key: (start, end)}`` of each top-level value of the JSON object ``text`` (character
    offsets). ``text`` must be valid JSON (checked before)."""
    return {key: (start, end) for key, _, start, end in _members(text)}


def _members(text: str) -> list[tuple[str, int, int, int]]:
    """``(key, key start, value start, value end)`` of each top-level member of the JSON object
    ``text``, in order (character offsets; ``text`` is valid JSON)."""
    decoder = json.JSONDecoder()
    ws = " \t\n\r"
    i = 0
    n = len(text)

    def skip(i: int) -> int:
        while i < n and text[i] in ws:
            i += 1
        return i

    i = skip(i)
    if i >= n or text[i] != "{":
        raise ValueError("not a JSON object")
    i = skip(i + 1)
    members: list[tuple[str, int, int, int]] = []
    if i < n and text[i] == "}":
        return members
    while True:
        key_start = i
        key, i = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
        i = skip(i)
        if text[i] != ":":
            raise ValueError("expected ':'")
        i = skip(i + 1)
        _, end = decoder.raw_decode(text, i)
        members.append((key, key_start, i, end))
        i = skip(end)
        if text[i] == "}":
            return members
        if text[i] != ",":
            raise ValueError("expected ','")
        i = skip(i + 1)


def _with_empty_hooks(text: str) -> str:
    """``text`` (a JSON object) with an empty ``"hooks"`` member added last, the rest as it was."""
    end = text.rstrip().rfind("}")
    body = text[:end].rstrip()
    indent = "  "
    member = '"hooks": {}'
    if body.endswith("{"):
        return f"{body}\n{indent}{member}\n}}{text[end + 1 :]}"
    return f"{body},\n{indent}{member}\n}}{text[end + 1 :]}"


def _read_settings(
    path: Path, *, missing_ok: bool = False
) -> tuple[bytes | None, str, dict[str, Any]]:
    """The settings file's bytes, text and object; with ``missing_ok``, a file that is not
    there reads as an empty object (``None`` bytes: the install creates it)."""
    try:
        data = read_regular_file(path, MAX_SETTINGS_BYTES)
    except FileNotFoundError:
        if missing_ok:
            return None, "{}\n", {}
        raise AdoptError(f"{path}: no such file; triohooks did not install it") from None
    except UnreadableFileError as exc:
        raise AdoptError(str(exc)) from None
    try:
        text = data.decode("utf-8")
        doc = json.loads(text)
    except (UnicodeDecodeError, ValueError) as exc:
        raise AdoptError(f"{path}: not valid JSON ({exc}); nothing changed") from None
    if not isinstance(doc, dict):
        raise AdoptError(f"{path}: must be a JSON object; nothing changed")
    return data, text, doc


def _timeout_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.3f}".rstrip("0")


def relay_command(
    agent: AgentName,
    scope: Scope,
    timeout_s: float,
    *,
    relay_script: str | None = None,
    event: str = "",
    named: bool = True,
) -> str:
    """The command a catch-all runs (:data:`PORTABLE_RELAY` for a project, :data:`LOCAL_RELAY`
    for the user: the native client in the user's state dir, else this interpreter running
    ``relay_script`` precompiled). ``timeout_s`` is the catch-all's own timeout: the relay
    answers before it (docs/agents.md). ``named``: it says its scope (``--scope``), as every
    install's does; a plugin's belongs to no settings level. Measured: ``bench/relay.py``."""
    timeout = _timeout_text(timeout_s)
    words = event_arg(agent, event)
    said = scope_arg(scope if named else None)
    if scope == "project":
        return PORTABLE_RELAY.format(agent=agent, event=words, timeout=timeout, scope=said)
    if relay_script is None:
        raise ValueError("a user-scope catch-all needs the relay's file")
    return LOCAL_RELAY.format(
        agent=agent,
        event=words,
        timeout=timeout,
        scope=said,
        native=shlex.quote(str(state_dir() / NATIVE_RELAY)),
        python=shlex.quote(sys.executable),
        relay_dir=shlex.quote(str(Path(relay_script).resolve().parent)),
    )


def catch_all(
    agent: AgentName,
    hooks: Mapping[str, Any],
    *,
    source: str,
    scope: Scope,
    transport: Transport,
    port: int,
    relay_script: str | None = None,
    named: bool = True,
    own: frozenset[str] | None,
) -> tuple[dict[str, Any], list[tuple[str, str]], list[str]]:
    """The hooks object that routes to triohooks the events :func:`.routing.routed_events`
    says -- every event of ``hooks``, and each of the agent's whose triohooks event is in
    ``own`` (the events triohooks' own hooks handle, which run for it: :mod:`.native`; None:
    unknown, so all) and its session start -- the routes (event, the exact command or URL
    written), notes. Each catch-all names ``scope`` (``named``: an install's; a plugin's
    names none)."""
    if transport == "http" and agent != "claude":
        raise AdoptError(
            f"--transport http: only Claude Code's http hooks can reach serve; {agent} runs "
            "command hooks: install with the default relay; nothing changed"
        )
    spec = SPECS[agent]
    problems: list[ConfigProblem] = []
    level = Level("adopt", Path(source), False)
    parsed = parse_hooks(agent, level, source, dict(hooks), problems)
    out: dict[str, Any] = {}
    routes: list[tuple[str, str]] = []
    notes: list[str] = []
    for event in routed_events(agent, hooks, own, scope if named else None):
        mine = [h for h in parsed if h.event == event]
        longest = max((h.timeout_s for h in mine), default=spec.default_timeout_s)
        timeout_s = longest + TIMEOUT_MARGIN_S
        fail_closed = any(h.fail_closed for h in mine)
        use_http = (
            transport == "http"  # (Claude Code only: refused above for the others)
            and event not in spec.command_only_events
            and not fail_closed
        )
        timeout_value = timeout_of(agent, timeout_s / spec.timeout_unit_s)
        if use_http:
            handler = http_handler(agent, port, timeout_value, scope if named else None)
            routes.append((event, f"POST {handler['url']}"))
        else:
            command = relay_command(
                agent, scope, timeout_s, relay_script=relay_script, event=event, named=named
            )
            if agent == "copilot":  # its own form: a handler per entry, ``bash``, seconds
                handler = {"type": "command", "bash": command, "timeoutSec": timeout_value}
            elif agent == "cursor":  # its documented form: a command and its timeout
                handler = {"command": command, "timeout": timeout_value}
            else:
                handler = {"type": "command", "command": command, "timeout": timeout_value}
            routes.append((event, command))
            if fail_closed and transport == "http" and agent == "claude":
                notes.append(
                    f"{event}: a failClosed hook is routed through triohooks-relay (an http hook "
                    "fails open when the server is down; the relay runs the hooks itself)"
                )
        out[event] = [entry_of(agent, event, handler)]
    return out, routes, notes


def plan_install(
    agent: AgentName,
    scope: Scope,
    *,
    home: Path,
    project: Path,
    transport: Transport = "relay",
    port: int = DEFAULT_PORT,
    relay_script: str | None = None,
    config_dir: Path | None = None,
) -> Plan:
    """Route ``agent``'s hooks of that scope to triohooks. For Codex, also record the catch-all
    as reviewed in ``~/.codex/config.toml`` (:mod:`.codex_review`; ``config_dir`` keeps what
    that replaces)."""
    refused = SPECS[agent].no_project_install
    if scope == "project" and refused is not None:
        raise AdoptError(f"{refused}; nothing changed")
    path = settings_path(agent, scope, home=home, project=project)
    root = home if scope == "user" else project
    adopted_path = adopted_path_of(agent, path)
    for target in (path, adopted_path):
        try:
            check_write_target(target, root)
        except UnsafeWriteError as exc:
            raise AdoptError(str(exc)) from None
    if agent == "copilot":
        _refuse_neighbours(path)
    data, text, doc = _read_settings(path, missing_ok=True)
    if agent == "agy":
        _refuse_other_sets(path, doc)
    member_added = "hooks" not in doc
    if data is None and SPECS[agent].versioned:
        text = '{\n  "version": 1\n}\n'  # their hooks file format
        doc = json.loads(text)
    if "hooks" not in doc:
        # No hooks of the agent's own: the catch-all still routes it to triohooks' hooks.
        text = _with_empty_hooks(text)
        doc = json.loads(text)
    spans = member_spans(text)
    if "hooks" not in spans or not isinstance(doc.get("hooks"), dict):
        raise AdoptError(f"{path}: its hooks value is not an object; nothing changed")
    start, end = spans["hooks"]
    current = doc["hooks"]
    existing = _existing(adopted_path)
    if _all_ours(agent, current, str(path)):
        # Installed already: refresh the catch-all from triohooks-hooks.json (new events).
        if existing is None:
            raise AdoptError(
                f"{path}: its hooks point at triohooks but {adopted_path} is missing; restore "
                "the hooks by hand"
            )
        try:
            moved_obj = json.loads(existing)
        except ValueError as exc:
            raise AdoptError(f"{adopted_path}: not valid JSON ({exc}); nothing changed") from None
        moved_bytes = existing
    else:
        if existing is not None:
            raise AdoptError(
                f"{adopted_path} exists already (an earlier install whose settings were edited "
                "since?); move it away, or uninstall first; nothing changed"
            )
        moved_obj = current
        moved_bytes = text[start:end].encode("utf-8")
    own = own_events(config_dir or global_config_dir(), scope=scope, project=project)
    routed, routes, notes = catch_all(
        agent,
        moved_obj,
        source=str(adopted_path),
        scope=scope,
        transport=transport,
        port=port,
        relay_script=relay_script,
        own=own,
    )
    if own is None:
        notes.append(
            "a triohooks config cannot be read: every event is routed until it can (`triohooks "
            "validate` says what is wrong)"
        )
    indent = _indent_of(text, start)
    new_value = json.dumps(routed, indent=2).replace("\n", "\n" + indent)
    after = (text[:start] + new_value + text[end:]).encode("utf-8")
    changes = [FileChange(str(path), data, after)]
    if existing is None:
        changes.append(FileChange(str(adopted_path), None, moved_bytes))
    if agent == "codex":
        changes += _codex_review(codex_review.record, home, config_dir, path, routed)
        notes.append(
            f"recorded the catch-all as reviewed in {codex_review.config_path(home)} (Codex "
            "runs no hook it has not reviewed)"
        )
    if config_dir is not None:
        moved = undo.digest(moved_bytes.decode("utf-8", "replace"))
        changes.append(
            _record(
                config_dir,
                path,
                changes,
                member_added,
                moved,
                refresh=existing is not None,
                routed=tuple(dict.fromkeys(event for event, _ in routes)),
            )
        )
    if any(route.startswith("POST ") for _, route in routes):
        notes.append(
            f"the http hooks send Authorization: Bearer ${TOKEN_VAR}; start Claude Code with "
            f"{TOKEN_VAR} set to the content of the serve token file, and `triohooks serve` "
            f"running on port {port}. Claude Code lets the call through when the server is "
            "down or the token unset (say `--transport relay`, the default, to keep guards "
            "closed then)"
        )
    return Plan(
        agent=agent,
        scope=scope,
        settings=str(path),
        changes=tuple(c for c in changes if c.before != c.after),
        routes=tuple(routes),
        notes=tuple(notes),
        moves=existing is None,
    )


def plan_uninstall(
    agent: AgentName, scope: Scope, *, home: Path, project: Path, config_dir: Path | None = None
) -> Plan:
    path = settings_path(agent, scope, home=home, project=project)
    root = home if scope == "user" else project
    adopted_path = adopted_path_of(agent, path)
    try:
        check_write_target(path, root)
    except UnsafeWriteError as exc:
        raise AdoptError(str(exc)) from None
    data, text, doc = _read_settings(path)
    existing = _existing(adopted_path)
    if existing is None:
        raise AdoptError(f"{adopted_path}: not found; {path} was not installed by triohooks")
    spans = member_spans(text)
    if "hooks" not in spans or not _all_ours(agent, doc.get("hooks"), str(path)):
        raise AdoptError(
            f"{path}: its hooks are not only the ones triohooks wrote (edited since the install); "
            f"move your new hooks into {adopted_path} first; nothing changed"
        )
    try:
        json.loads(existing)
    except ValueError as exc:
        raise AdoptError(f"{adopted_path}: not valid JSON ({exc}); nothing changed") from None
    records = _records(config_dir)
    mine = records.pop(str(path), {})
    record = mine.get(str(path))
    if record is not None and record.moved != undo.digest(existing.decode("utf-8", "replace")):
        record = None  # triohooks-hooks.json was edited since: its hooks are the ones to restore
    restored = undo.undo(record, text) if record is not None else undo.NOT_MINE
    after = restored.encode("utf-8") if restored is not None else None
    if restored == undo.NOT_MINE:  # the structural way: only triohooks' part goes
        start, end = spans["hooks"]
        if record is not None and record.member_added and json.loads(existing) == {}:
            after = _without_member(text, "hooks").encode("utf-8")
        else:
            after = text[:start].encode("utf-8") + existing + text[end:].encode("utf-8")
    changes = [FileChange(str(path), data, after), FileChange(str(adopted_path), existing, None)]
    if agent == "codex":
        withdrawn = _codex_review(codex_review.withdraw, home, config_dir, path, doc["hooks"])
        changes += _undone(withdrawn, mine.get(str(codex_review.config_path(home))))
    if config_dir is not None and mine:
        changes.append(_store(config_dir, records))
    return Plan(agent=agent, scope=scope, settings=str(path), changes=tuple(changes))


def _records(config_dir: Path | None) -> undo.Records:
    if config_dir is None:
        return {}
    try:
        return undo.read_records(config_dir)
    except undo.RecordsError as exc:
        raise AdoptError(
            f"{exc}; nothing changed (it holds what installs changed, for uninstall: move it "
            "away to go on; an uninstall then restores the hooks from triohooks-hooks.json)"
        ) from None


def _store(config_dir: Path, records: undo.Records) -> FileChange:
    path = config_dir / undo.RECORDS_NAME
    try:
        before: bytes | None = read_regular_file(path, undo.MAX_RECORDS_BYTES)
    except FileNotFoundError:
        before = None
    except UnreadableFileError as exc:
        raise AdoptError(f"{path}: {exc}; nothing changed") from None
    return FileChange(str(path), before, undo.encode_records(records), shown=False)


def _record(
    config_dir: Path,
    settings: Path,
    changes: list[FileChange],
    member_added: bool,
    moved: str,
    *,
    refresh: bool,
    routed: tuple[str, ...],
) -> FileChange:
    """The install record (:mod:`.undo`) of the settings file and Codex's config.toml after
    ``changes``; a refreshing install's joins the record of the install it refreshes."""
    records = _records(config_dir)
    earlier = records.get(str(settings), {}) if refresh else {}
    entry = dict(earlier)
    for change in changes:
        if change.after is None or change.before == change.after:
            continue
        if change.path != str(settings) and not change.path.endswith(".toml"):
            continue  # triohooks' own files: uninstall removes or rewrites them itself
        record = undo.track(
            change.before.decode("utf-8") if change.before is not None else None,
            change.after.decode("utf-8"),
            member_added=member_added and change.path == str(settings),
            moved=moved if change.path == str(settings) else None,
            refresh=refresh,
            earlier=earlier.get(change.path),
            routed=routed if change.path == str(settings) else None,
        )
        if record is None:
            entry.pop(change.path, None)
        else:
            entry[change.path] = record
    records[str(settings)] = entry
    return _store(config_dir, records)


def _undone(withdrawn: list[FileChange], record: undo.Record | None) -> list[FileChange]:
    """Codex's config.toml without the install's review tables: by its record when it holds
    (byte for byte, your edits kept), else as :func:`.codex_review.withdraw` takes them out."""
    out = []
    for change in withdrawn:
        restored: str | None = undo.NOT_MINE
        if record is not None and change.path.endswith(".toml") and change.before is not None:
            restored = undo.undo(record, change.before.decode("utf-8"))
        if restored == undo.NOT_MINE:
            out.append(change)
        else:
            after = restored.encode("utf-8") if restored is not None else None
            out.append(FileChange(change.path, change.before, after))
    return out


def _without_member(text: str, key: str) -> str:
    """``text`` (a JSON object) without its member ``key`` and one comma beside it; the rest
    as it was."""
    members = _members(text)
    i = max(n for n, (name, *_) in enumerate(members) if name == key)  # (the one JSON reads)
    _, key_start, _, value_end = members[i]
    if i + 1 < len(members):  # up to the next member's key: its comma and spacing go
        return text[:key_start] + text[members[i + 1][1] :]
    if i > 0:  # the last member: from the end of the one before it
        return text[: members[i - 1][3]] + text[value_end:]
    close = text.index("}", value_end)
    return text[: text.index("{") + 1] + text[close:]


def _codex_review(
    edit: Any, home: Path, config_dir: Path | None, hooks_file: Path, hooks: Mapping[str, Any]
) -> list[FileChange]:
    if config_dir is None:
        raise AdoptError("a Codex install needs triohooks' config dir (to keep Codex's reviews)")
    saved = config_dir / codex_review.SAVED_NAME
    for target, root in ((codex_review.config_path(home), home), (saved, config_dir)):
        try:
            check_write_target(target, root)
        except UnsafeWriteError as exc:
            raise AdoptError(str(exc)) from None
    try:
        edits = edit(home, config_dir, hooks_file, hooks)
    except (codex_review.ReviewError, ValueError) as exc:
        raise AdoptError(f"{exc}; nothing changed") from None
    return [FileChange(str(p), before, after) for p, before, after in edits]


def apply(plan: Plan) -> None:
    """Write a plan: the moved hooks first (so a crash in between loses nothing), then the
    settings file, each atomically; a removal last."""
    ordered = sorted(plan.changes, key=lambda c: (c.after is None, c.path == plan.settings))
    for change in ordered:
        path = Path(change.path)
        if change.after is None:
            path.unlink(missing_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_file_atomic(
                path, change.after, new_mode=0o600 if change.before is None else 0o666
            )


def _refuse_neighbours(path: Path) -> None:
    """Copilot CLI runs every ``*.json`` of its hooks directory, and install adopts one file
    (``path``): another file there with hooks would go on running beside triohooks, unguarded.
    Say so and change nothing."""
    level = Level("install", path, False)
    others = []
    for other in level_files("copilot", level):
        try:
            doc = json.loads(read_regular_file(other, MAX_SETTINGS_BYTES))
        except (OSError, UnreadableFileError, ValueError):
            others.append(other.name)  # unreadable to us; Copilot may read it
            continue
        if not isinstance(doc, dict) or doc.get("hooks"):
            others.append(other.name)
    if others:
        raise AdoptError(
            f"{path.parent}: Copilot CLI runs every hooks file there, and triohooks adopts one "
            f"({path.name}): move the hooks of {', '.join(others)} into {path.name} (or out of "
            "the directory), then install again; nothing changed"
        )


def _refuse_other_sets(path: Path, doc: Mapping[str, Any]) -> None:
    """Antigravity CLI's hooks file is an object of named hook sets, and install adopts the one
    named ``hooks`` (Claude Code's member): another set would go on running beside triohooks,
    unguarded, and a member that is no set makes agy load nothing of the file. Say so and
    change nothing."""
    others = [name for name in doc if name != ADOPTED_SET]
    if others:
        raise AdoptError(
            f"{path}: Antigravity CLI runs every hook set there, and triohooks adopts the one "
            f'named "{ADOPTED_SET}": move the events of {", ".join(map(repr, others))} into it '
            "(or out of the file), then install again; nothing changed"
        )


def _existing(path: Path) -> bytes | None:
    try:
        return read_regular_file(path, MAX_SETTINGS_BYTES)
    except FileNotFoundError:
        return None
    except UnreadableFileError as exc:
        raise AdoptError(str(exc)) from None


def _all_ours(agent: AgentName, hooks: object, source: str) -> bool:
    """Whether every handler in ``hooks`` is a catch-all of ours (and there is at least one)."""
    if not isinstance(hooks, dict) or not hooks:
        return False
    count = 0
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            return False
        for entry in groups:
            group = as_group(agent, entry, str(event))
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list):
                return False
            for raw in handlers:
                one = {event: [{"hooks": [raw]}]}  # (a catch-all names its event)
                parsed = parse_hooks(
                    agent, Level("x", Path(source), False), source, one, [], keep_ours=True
                )
                if len(parsed) != 1 or not is_ours(parsed[0]):
                    return False
                count += 1
    return count > 0


def _indent_of(text: str, at: int) -> str:
    """The indentation of the line the value at ``at`` starts on (its key's), so the new value's
    lines line up under it."""
    line_start = text.rfind("\n", 0, at) + 1
    line = text[line_start:at]
    return line[: len(line) - len(line.lstrip(" \t"))]
