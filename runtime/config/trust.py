"""Trust for workspace hooks: a repository's hooks are code, and run only once trusted.

Owns the digest (SHA-256 over the workspace hook files and every file their commands name as
programs), the trust store (``trust.json`` in the global config dir, written atomically) and
the state of a workspace: none / new / trusted / changed / declined. It must not load or run
hooks.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Final, Literal

import msgspec

from .model import ArgsHandler, CommandHandler, Handler, TrustInfo
from .paths import write_file_atomic

STORE_NAME: Final = "trust.json"
#: Files bigger than this are hashed by size and mtime only (a hook script is small).
_MAX_HASHED_BYTES: Final = 16 * 1024 * 1024


class TrustRecord(msgspec.Struct, kw_only=True):
    digest: str
    decision: Literal["trusted", "declined"]
    time: float
    files: list[str] = msgspec.field(default_factory=list)


class TrustStore(msgspec.Struct):
    workspaces: dict[str, TrustRecord] = msgspec.field(default_factory=dict)


def canonical_workspace(workspace: Path) -> str:
    return str(workspace.resolve())


def _program_files(handlers: Iterable[Handler], workspace: Path) -> list[Path]:
    """Files inside the workspace that hook commands name (scripts they run)."""
    found: dict[str, Path] = {}
    root = workspace.resolve()
    for handler in handlers:
        if isinstance(handler, CommandHandler):
            try:
                words = shlex.split(handler.command, comments=True)
            except ValueError:
                words = handler.command.split()
        elif isinstance(handler, ArgsHandler):
            words = list(handler.args)
        else:
            continue
        for word in words:
            if not word or word.startswith("-") or len(word) > 4096:
                continue
            candidate = Path(word) if os.path.isabs(word) else workspace / word
            try:
                resolved = candidate.resolve()
                if resolved.is_file() and resolved.is_relative_to(root):
                    found.setdefault(str(resolved), resolved)
            except (OSError, ValueError):
                continue
    return [found[k] for k in sorted(found)]


def trust_digest(
    hook_files: Iterable[Path], handlers: Iterable[Handler], workspace: Path
) -> tuple[str, tuple[str, ...]]:
    """SHA-256 over the given hook files and the program files their handlers name."""
    files = sorted({str(p.resolve()) for p in hook_files if p.exists()})
    files += [str(p) for p in _program_files(handlers, workspace) if str(p) not in files]
    h = hashlib.sha256()
    root = str(workspace.resolve())
    for name in files:
        rel = os.path.relpath(name, root)
        h.update(rel.encode() + b"\0")
        try:
            st = os.stat(name)
            if st.st_size > _MAX_HASHED_BYTES:
                h.update(f"size={st.st_size};mtime={st.st_mtime_ns}".encode())
            else:
                with open(name, "rb") as f:
                    h.update(hashlib.sha256(f.read()).digest())
            h.update(oct(st.st_mode & 0o111).encode())
        except OSError as exc:
            h.update(f"unreadable:{exc.errno}".encode())
        h.update(b"\0")
    return h.hexdigest(), tuple(files)


def read_store(config_dir: Path) -> TrustStore:
    path = config_dir / STORE_NAME
    try:
        return msgspec.json.decode(path.read_bytes(), type=TrustStore)
    except FileNotFoundError:
        return TrustStore()
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        # A damaged store trusts nothing; `triohooks trust` rewrites it.
        return TrustStore()


def write_store(config_dir: Path, store: TrustStore) -> None:
    config_dir.mkdir(parents=True, exist_ok=True)
    data = msgspec.json.format(msgspec.json.encode(store), indent=2) + b"\n"
    write_file_atomic(config_dir / STORE_NAME, data, new_mode=0o600)


def trust_state(
    config_dir: Path, workspace: Path, digest: str, files: tuple[str, ...]
) -> TrustInfo:
    key = canonical_workspace(workspace)
    if not files:
        return TrustInfo("none", key)
    record = read_store(config_dir).workspaces.get(key)
    if record is None:
        state: Literal["new", "trusted", "changed", "declined"] = "new"
    elif record.decision == "declined":
        state = "declined" if record.digest == digest else "changed"
    else:
        state = "trusted" if record.digest == digest else "changed"
    return TrustInfo(state, key, digest, files)


def record_trust(
    config_dir: Path,
    workspace: Path,
    digest: str,
    files: tuple[str, ...],
    decision: Literal["trusted", "declined"] = "trusted",
) -> None:
    """Remember ``decision`` for exactly this content of the workspace's hooks."""
    store = read_store(config_dir)
    store.workspaces[canonical_workspace(workspace)] = TrustRecord(
        digest=digest, decision=decision, time=time.time(), files=list(files)
    )
    write_store(config_dir, store)
