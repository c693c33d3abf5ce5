"""Trust for workspace hooks: a repository's hooks are code, and run only once trusted.

Owns the digest (SHA-256 over the workspace hook files and every file their commands name as
programs: symlinks resolved, every byte, nothing read that could block), the trust store
(``trust.json`` in the global config dir, written atomically) and the state of a workspace:
none / new / trusted / changed / declined. It must not load or run hooks.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import stat
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final, Literal

import msgspec

from .model import ArgsHandler, CommandHandler, Handler, TrustInfo
from .paths import (
    UnreadableFileError,
    iter_regular_file,
    open_regular_file,
    read_regular_file,
    write_file_atomic,
)

STORE_NAME: Final = "trust.json"
#: A file named for trust bigger than this is not hashed, and the workspace cannot be trusted
#: (it is hashed on every load, i.e. on every ``triohooks fire``). Below it, every byte is
#: hashed, streamed in chunks.
MAX_HASHED_BYTES: Final = 256 * 1024 * 1024
#: Largest trust store read (a record is a few hundred bytes; a bigger store trusts nothing).
MAX_STORE_BYTES: Final = 64 * 1024 * 1024
#: A digest with this prefix names content that cannot be trusted (a FIFO, a device, an
#: unreadable or oversized file): it never matches a record and is never recorded as trusted.
UNTRUSTABLE: Final = "untrustable:"


class TrustRefusedError(ValueError):
    """Asked to trust content that cannot be trusted; the message says which file and why."""


class TrustRecord(msgspec.Struct, kw_only=True):
    digest: str
    decision: Literal["trusted", "declined"]
    time: float
    files: list[str] = msgspec.field(default_factory=list)


class TrustStore(msgspec.Struct):
    workspaces: dict[str, TrustRecord] = msgspec.field(default_factory=dict)


class TrustInputs(msgspec.Struct, frozen=True):
    """What trust covers for one workspace, as it is now."""

    #: SHA-256 hex over every file (``UNTRUSTABLE``-prefixed when ``refused`` is not empty).
    digest: str
    #: The hashed files, resolved (a symlink's target, wherever it is): hook files, then programs.
    files: tuple[str, ...]
    #: ``(file, why)`` for each file that could not be hashed: the content cannot be trusted.
    refused: tuple[tuple[str, str], ...] = ()


def canonical_workspace(workspace: Path) -> str:
    return str(workspace.resolve())


def trust_key(workspace: Path, dialect: str | None = None) -> str:
    """The trust store's key: the canonical workspace path, and for an agent dialect's project
    files (``.claude/settings.json`` ...) the dialect after a ``#``: trusting a repository's
    ``.agents/`` hooks does not trust its ``.claude/`` hooks, nor the other way round."""
    key = canonical_workspace(workspace)
    return f"{key}#{dialect}" if dialect else key


def _inside(path: Path, roots: Iterable[Path]) -> bool:
    return any(path.is_relative_to(root) for root in roots)


def _program_files(handlers: Iterable[Handler], workspace: Path) -> list[Path]:
    """The files hook commands name (scripts they run) that are in the workspace, resolved.

    A word counts when its path is in the workspace as written (``scripts/x``, even when that
    is a symlink to a file elsewhere: the link's target is what runs, so it is what is hashed)
    or once resolved. Directories are skipped; FIFOs, devices and sockets are kept, so hashing
    refuses them.
    """
    found: dict[str, Path] = {}
    root = workspace.resolve()
    roots = (root, Path(os.path.abspath(workspace)))
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
            candidate = Path(word) if os.path.isabs(word) else root / word
            try:
                resolved = candidate.resolve()
                if not _inside(resolved, roots[:1]) and not _inside(
                    Path(os.path.normpath(candidate)), roots
                ):
                    continue
                if stat.S_ISDIR(os.stat(resolved).st_mode):
                    continue
            except (OSError, ValueError, RuntimeError):  # missing, a NUL, a symlink loop
                continue
            found.setdefault(str(resolved), resolved)
    return [found[k] for k in sorted(found)]


def _hash_file(name: str, h: Any) -> str | None:
    """Feed one file's content digest and exec bits to ``h``; the reason when it can't be."""
    try:
        with open_regular_file(name) as (fd, st):
            inner = hashlib.sha256()
            for chunk in iter_regular_file(fd, st, MAX_HASHED_BYTES, name):
                inner.update(chunk)
            h.update(inner.digest())
            h.update(oct(st.st_mode & 0o111).encode())
    except FileNotFoundError as exc:  # gone since it was listed
        h.update(f"unreadable:{exc.errno}".encode())
    except UnreadableFileError as exc:
        h.update(b"refused")
        return exc.reason
    return None


def trust_inputs(
    hook_files: Iterable[Path], handlers: Iterable[Handler], workspace: Path
) -> TrustInputs:
    """Hash the given hook files and the program files their handlers name.

    Every byte is hashed (symlinks resolved: a link's target path is part of the digest through
    the file's name, its content through the hash); nothing blocks (a FIFO or device is refused,
    not opened for a blocking read). A file that cannot be hashed makes the content untrustable.
    """
    files = sorted({str(p.resolve()) for p in hook_files if p.exists()})
    files += [str(p) for p in _program_files(handlers, workspace) if str(p) not in files]
    h = hashlib.sha256()
    root = str(workspace.resolve())
    refused: list[tuple[str, str]] = []
    for name in files:
        rel = os.path.relpath(name, root)
        h.update(rel.encode() + b"\0")
        why = _hash_file(name, h)
        if why is not None:
            refused.append((name, why))
        h.update(b"\0")
    digest = h.hexdigest()
    return TrustInputs(UNTRUSTABLE + digest if refused else digest, tuple(files), tuple(refused))


def trust_digest(
    hook_files: Iterable[Path], handlers: Iterable[Handler], workspace: Path
) -> tuple[str, tuple[str, ...]]:
    """SHA-256 over the given hook files and the program files their handlers name
    (:func:`trust_inputs` without the reasons)."""
    inputs = trust_inputs(hook_files, handlers, workspace)
    return inputs.digest, inputs.files


def read_store(config_dir: Path) -> TrustStore:
    path = config_dir / STORE_NAME
    try:
        return msgspec.json.decode(read_regular_file(path, MAX_STORE_BYTES), type=TrustStore)
    except FileNotFoundError:
        return TrustStore()
    except (OSError, UnreadableFileError, msgspec.DecodeError, msgspec.ValidationError):
        # A damaged store trusts nothing; `triohooks trust` rewrites it.
        return TrustStore()


def write_store(config_dir: Path, store: TrustStore) -> None:
    config_dir.mkdir(parents=True, exist_ok=True)
    data = msgspec.json.format(msgspec.json.encode(store), indent=2) + b"\n"
    write_file_atomic(config_dir / STORE_NAME, data, new_mode=0o600)


def trust_state(
    config_dir: Path,
    workspace: Path,
    digest: str,
    files: tuple[str, ...],
    *,
    dialect: str | None = None,
) -> TrustInfo:
    key = trust_key(workspace, dialect)
    if not files:
        return TrustInfo("none", key)
    record = read_store(config_dir).workspaces.get(key)
    if record is None:
        state: Literal["new", "trusted", "changed", "declined"] = "new"
    elif record.decision == "declined":
        state = "declined" if record.digest == digest else "changed"
    else:
        state = "trusted" if record.digest == digest else "changed"
    if state == "trusted" and digest.startswith(UNTRUSTABLE):
        state = "changed"  # a hand-made record cannot trust what was refused
    return TrustInfo(state, key, digest, files)


def record_trust(
    config_dir: Path,
    workspace: Path,
    digest: str,
    files: tuple[str, ...],
    decision: Literal["trusted", "declined"] = "trusted",
    *,
    dialect: str | None = None,
) -> None:
    """Remember ``decision`` for exactly this content of the workspace's hooks.

    Raises :class:`TrustRefusedError` (nothing recorded) when asked to trust an untrustable
    digest (see :func:`trust_inputs`); declining it is fine."""
    if decision == "trusted" and digest.startswith(UNTRUSTABLE):
        raise TrustRefusedError(
            f"{canonical_workspace(workspace)}: the workspace hooks cannot be trusted: a file "
            "they name cannot be hashed (see `triohooks validate`)"
        )
    store = read_store(config_dir)
    store.workspaces[trust_key(workspace, dialect)] = TrustRecord(
        digest=digest, decision=decision, time=time.time(), files=list(files)
    )
    write_store(config_dir, store)
