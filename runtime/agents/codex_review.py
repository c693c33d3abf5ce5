"""Recording Codex's review of the catch-all, so that Codex runs it (``triohooks codex install``).

Codex runs a hook only when ``~/.codex/config.toml`` records it as reviewed: a
``[hooks.state."<file>:<event>:<group>:<handler>"]`` table whose ``trusted_hash`` is the hash of
the handler as written (:mod:`.codex_trust`). An install replaces the reviewed handlers with a
catch-all Codex has never seen, so it writes those tables for the catch-all too -- the user
asked for it by installing -- and uninstall takes them out again.

A table the user had for the same key (their review of the hook that stood there) is kept
aside in ``codex-review.json`` in triohooks' config dir and put back by uninstall, so a round
trip leaves Codex's reviews as they were. Every edit is checked by reading the result back
with a TOML parser: if the file is written in a way this line editor does not follow (the key
set inline, say), nothing is changed and the user is told what to run. Pure planning: returns
the file changes; :func:`triohooks.agents.adopt.apply` writes them.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import msgspec

from triohooks.config.paths import UnreadableFileError, read_regular_file

from .codex_trust import hook_states, hook_states_toml

#: Where the tables install replaced are kept, in triohooks' config dir.
SAVED_NAME: Final = "codex-review.json"
MAX_CONFIG_BYTES: Final = 1024 * 1024
_TABLE: Final = re.compile(
    r"""^[ \t]*\[[ \t]*hooks[ \t]*\.[ \t]*state[ \t]*\.[ \t]*("(?:[^"\\]|\\.)*"|'[^']*')[ \t]*\]"""
    r"""[ \t]*(?:#.*)?$"""
)
_HEADER: Final = re.compile(r"^[ \t]*\[")
#: The line install writes above each table of its own (so uninstall takes out exactly what
#: install put in).
MARK: Final = "# triohooks codex install: the catch-all, reviewed (uninstall takes this out)\n"


class ReviewError(Exception):
    """Codex's config cannot be edited safely; the message says what to do instead."""


def config_path(home: Path) -> Path:
    return home / ".codex" / "config.toml"


def _read(path: Path) -> str | None:
    try:
        return read_regular_file(path, MAX_CONFIG_BYTES).decode("utf-8")
    except FileNotFoundError:
        return None
    except (UnreadableFileError, UnicodeDecodeError) as exc:
        raise ReviewError(f"{path}: cannot read it: {exc}") from None


def _key_of(quoted: str) -> str:
    return str(json.loads(quoted)) if quoted.startswith('"') else quoted[1:-1]


def _blocks(text: str) -> tuple[list[str], dict[str, tuple[int, int]]]:
    """The file's lines and ``{key: (first line, end line)}`` of each state table."""
    lines = text.splitlines(keepends=True)
    found: dict[str, tuple[int, int]] = {}
    i = 0
    while i < len(lines):
        match = _TABLE.match(lines[i].rstrip("\r\n"))
        if match is None:
            i += 1
            continue
        end = i + 1
        while end < len(lines) and not _HEADER.match(lines[end]) and lines[end] != MARK:
            end += 1
        first = i - 1 if i > 0 and lines[i - 1] == MARK else i
        found[_key_of(match.group(1))] = (first, end)
        i = end
    return lines, found


def _states(text: str, path: Path) -> dict[str, Any]:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ReviewError(f"{path}: not valid TOML ({exc}); nothing changed") from None
    hooks = doc.get("hooks")
    states = hooks.get("state") if isinstance(hooks, dict) else None
    return states if isinstance(states, dict) else {}


def _replace(text: str, tables: Mapping[str, str | None]) -> tuple[str, dict[str, str]]:
    """``text`` with the state table of each key in ``tables`` replaced in place by its new
    text (``None``: removed; a key with no table yet: appended), and each replaced table's
    text as it was."""
    lines, blocks = _blocks(text)
    old: dict[str, str] = {}
    out: list[str] = []
    starts = {first: (key, end) for key, (first, end) in blocks.items() if key in tables}
    i = 0
    while i < len(lines):
        if i in starts:
            key, end = starts[i]
            old[key] = "".join(lines[i:end])
            new = tables[key]
            if new is not None:
                out.append(new)
            i = end
            continue
        out.append(lines[i])
        i += 1
    result = "".join(out)
    for key, new in tables.items():
        if key not in blocks and new is not None:
            result = _append(result, new)
    return result, old


def _append(text: str, block: str) -> str:
    if not block:
        return text
    if text and not text.endswith("\n"):
        text += "\n"
    return text + block


def _saved(config_dir: Path) -> dict[str, str]:
    try:
        data = msgspec.json.decode(
            read_regular_file(config_dir / SAVED_NAME, MAX_CONFIG_BYTES), type=dict[str, str]
        )
    except FileNotFoundError:
        return {}
    except (UnreadableFileError, msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ReviewError(f"{config_dir / SAVED_NAME}: cannot read it: {exc}") from None
    return data


def _encode_saved(saved: Mapping[str, str]) -> bytes | None:
    return (
        msgspec.json.format(msgspec.json.encode(dict(saved)), indent=2) + b"\n" if saved else None
    )


def record(
    home: Path, config_dir: Path, hooks_file: Path, catch_all: Mapping[str, object]
) -> list[tuple[Path, bytes | None, bytes | None]]:
    """The changes that record ``catch_all`` (the hooks object now in ``hooks_file``) as
    reviewed: ``(path, before, after)`` for config.toml and the kept-aside tables. A table the
    user had for the same key is replaced in place, and kept aside."""
    path = config_path(home)
    before = _read(path)
    text = before or ""
    ours = hook_states(str(hooks_file), catch_all)
    current = _states(text, path)
    text, replaced = _replace(
        text, {key: MARK + hook_states_toml({key: digest}) for key, digest in ours.items()}
    )
    saved = _saved(config_dir)
    kept = dict(saved)
    for key, table in replaced.items():
        state = current.get(key)
        mine = isinstance(state, dict) and state.get("trusted_hash") == ours[key]
        if not mine and key not in kept:
            kept[key] = table  # the user's review of what stood there: back on uninstall
    after_states = _states(text, path)
    for key, digest in ours.items():
        got = after_states.get(key)
        if not isinstance(got, dict) or got.get("trusted_hash") != digest:
            raise ReviewError(
                f"{path}: cannot record the catch-all as reviewed there (its [hooks.state] is "
                "written in a form this edit does not follow): add "
                f'`[hooks.state.{json.dumps(key)}]` with trusted_hash = "{digest}" yourself, '
                "or review it in Codex with /hooks"
            )
    changes: list[tuple[Path, bytes | None, bytes | None]] = [
        (path, None if before is None else before.encode(), text.encode())
    ]
    if kept != saved:
        changes.append((config_dir / SAVED_NAME, _encode_saved(saved), _encode_saved(kept)))
    return changes


def withdraw(
    home: Path, config_dir: Path, hooks_file: Path, catch_all: Mapping[str, object]
) -> list[tuple[Path, bytes | None, bytes | None]]:
    """The changes that take the catch-all's review out again and put back, in its place,
    what it replaced."""
    path = config_path(home)
    before = _read(path)
    if before is None:
        return []
    ours = hook_states(str(hooks_file), catch_all)
    current = _states(before, path)
    mine = {
        key
        for key, digest in ours.items()
        if isinstance(current.get(key), dict) and current[key].get("trusted_hash") == digest
    }
    saved = _saved(config_dir)
    kept = dict(saved)
    text, _ = _replace(before, {key: kept.pop(key, None) for key in mine})
    _states(text, path)  # still valid TOML
    changes: list[tuple[Path, bytes | None, bytes | None]] = []
    if text != before:
        changes.append((path, before.encode(), text.encode()))
    if kept != saved:
        changes.append((config_dir / SAVED_NAME, _encode_saved(saved), _encode_saved(kept)))
    return changes
