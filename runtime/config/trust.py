"""Trust for workspace hooks: a repository's hooks are code, and run only once trusted.

Owns what trust covers and the trust store. What it covers, for one workspace (a ``.agents/``
scope, or one agent's project-level settings):

- the hook configs **as they were parsed** (:class:`TrustSource`: the bytes a loader read and
  parsed in one open, never a second look at the file): a native hook file whole; for an
  agent's settings file its hooks, its ``env`` and the switches that turn hooks off, so an
  unrelated key (``permissions``) or an unrelated file (``settings.local.json`` with no hooks)
  never changes trust;
- everything the hooks' commands can run, as the closed-world reader finds it
  (:mod:`.trust_reader`): the files they name, the scripts those run, the directories their
  languages load code from, what a repository's git configuration makes git run -- every
  byte hashed, nothing read that could block;
- what trust cannot enumerate is **unseen** (``make``, ``python -c``, a path known only at
  run time ...): such content is held back, saying what was not understood, until the user
  names the files it runs (``triohooks trust --cover PATH``: hashed with the rest, their
  choice recorded) or moves the code where trust can read it;
- the files the user named with ``--cover`` (kept with the record).

The store is ``trust.json`` in the global config dir (written atomically), one record per
workspace (and dialect) with the digest and each file's own hash, so a changed state can say
which file changed. States: none / new / trusted / changed / declined. It must not load or run
hooks.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Final, Literal

import msgspec

from .freshness import Signature
from .model import ArgsHandler, Command, CommandHandler, Handler, TrustInfo
from .paths import (
    UnreadableFileError,
    iter_regular_file,
    open_regular_file,
    read_regular_file,
    write_file_atomic,
)
from .trust_cover import MAX_DIR_FILES, Cover, Unseen

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


#: Hook config text kept with a trust record, per file, to show what changed since; a longer
#: file is still hashed, its change only named.
MAX_TEXT_KEPT: Final = 256 * 1024


class TrustSource(msgspec.Struct, frozen=True):
    """One hook config as trust sees it: its file (as shown to the user) and the bytes that
    were parsed (a native hook file whole; an agent's hooks and switches, re-encoded)."""

    name: str
    content: bytes


class TrustRecord(msgspec.Struct, kw_only=True):
    digest: str
    decision: Literal["trusted", "declined"]
    time: float
    files: list[str] = msgspec.field(default_factory=list)
    #: Each file's own hash, to tell which file changed since.
    parts: dict[str, str] = msgspec.field(default_factory=dict)
    #: The hook config files' text as trusted (up to :data:`MAX_TEXT_KEPT` each), so that
    #: ``triohooks trust`` can show what changed since, line by line.
    texts: dict[str, str] = msgspec.field(default_factory=dict)
    #: Paths the user named for trust to hash besides what it found (``--cover``), relative
    #: to the workspace: their answer to what trust could not see.
    covers: list[str] = msgspec.field(default_factory=list)


class TrustStore(msgspec.Struct):
    workspaces: dict[str, TrustRecord] = msgspec.field(default_factory=dict)


class TrustInputs(msgspec.Struct, frozen=True):
    """What trust covers for one workspace, as it is now."""

    #: SHA-256 hex over every part (``UNTRUSTABLE``-prefixed when ``refused`` is not empty).
    digest: str
    #: The covered files: hook configs, then the files their commands name (resolved), then
    #: the files of a hooks directory hashed whole.
    files: tuple[str, ...]
    #: ``(file, why)`` for each file that cannot be hashed (a FIFO, an oversized file).
    refused: tuple[tuple[str, str], ...] = ()
    #: ``(file, its own hash)`` for each file.
    parts: tuple[tuple[str, str], ...] = ()
    #: Which directories trust covers whole, and why.
    notes: tuple[str, ...] = ()
    #: The signature (:mod:`.freshness`) of every path trust looked at, present or not,
    #: taken before it was read.
    signatures: tuple[Signature, ...] = ()
    #: ``(file, text)`` of each hook config as parsed (see :data:`MAX_TEXT_KEPT`).
    texts: tuple[tuple[str, str], ...] = ()
    #: ``(command, why)`` for what trust cannot see (:mod:`.trust_reader`).
    unseen: tuple[tuple[str, str], ...] = ()
    #: Commands trust read from the workspace root with paths relative to it.
    cwd_bound: tuple[str, ...] = ()
    #: The paths the user named (``--cover``) that were hashed too.
    covers: tuple[str, ...] = ()
    #: Where the workspace keeps hook code (for messages).
    hooks_dir: str = ""


def canonical_workspace(workspace: Path) -> str:
    return str(workspace.resolve())


def trust_key(workspace: Path, dialect: str | None = None) -> str:
    """The trust store's key: the canonical workspace path, and for an agent dialect's project
    files (``.claude/settings.json`` ...) the dialect after a ``#``: trusting a repository's
    ``.agents/`` hooks does not trust its ``.claude/`` hooks, nor the other way round."""
    key = canonical_workspace(workspace)
    return f"{key}#{dialect}" if dialect else key


def file_sources(paths: Iterable[Path]) -> list[TrustSource]:
    """The hook files among ``paths`` that exist, read once each (for callers that parse whole
    files themselves; a file that cannot be read is left to the parser's own report)."""
    out: list[TrustSource] = []
    for path in paths:
        try:
            out.append(TrustSource(str(path), read_regular_file(path, MAX_HASHED_BYTES)))
        except (FileNotFoundError, UnreadableFileError):
            continue
    return out


# -- hashing -------------------------------------------------------------------------------------


def handler_command(handler: Handler) -> Command | None:
    """What a handler runs, as :func:`~.trust_reader.read_commands` reads it: a command hook's
    bash text, an ``args`` hook's argv; None for one that runs no process here."""
    if isinstance(handler, CommandHandler):
        return Command(handler.command)
    if isinstance(handler, ArgsHandler):
        return Command(tuple(handler.args))
    return None


def _dir_files(directory: str, skip: set[str], cover: Cover, limit: int) -> list[str] | None:
    """Every non-directory under ``directory`` (symlinked files followed when hashed, symlinked
    directories not descended), sorted; None when there are more than ``limit``.
    Each directory is looked at (its signature) before it is listed: a file added or removed
    later changes it."""
    out: list[str] = []
    pending = [directory]
    while pending:
        top = pending.pop()
        cover.look(top)
        try:
            entries = sorted(os.scandir(top), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                pending.append(entry.path)
                continue
            if entry.path in skip or os.path.realpath(entry.path) in skip:
                continue
            out.append(entry.path)
            if len(out) > limit:
                return None
    return sorted(out)


def _hash_file(name: str, cover: Cover) -> tuple[str, str | None]:
    """(the part: content hash and exec bits, or what stands in for them; why it cannot be
    trusted, or None). Looked at (its signature) before it is opened."""
    cover.look(name)
    try:
        with open_regular_file(name) as (fd, st):
            inner = hashlib.sha256()
            for chunk in iter_regular_file(fd, st, MAX_HASHED_BYTES, name):
                inner.update(chunk)
            return f"{inner.hexdigest()}:{oct(st.st_mode & 0o111)}", None
    except FileNotFoundError as exc:  # gone since it was listed
        return f"unreadable:{exc.errno}", None
    except UnreadableFileError as exc:
        if os.path.isdir(name):  # a symlinked directory under a covered one: where it points
            return f"directory:{os.path.realpath(name)}", None
        return "refused", exc.reason


def trust_inputs(
    sources: Sequence[TrustSource],
    handlers: Iterable[Handler | Command],
    workspace: Path,
    *,
    variables: Mapping[str, str] | None = None,
    hooks_dir: Path | None = None,
    unreadable: Sequence[tuple[str, str]] = (),
    covers: Sequence[str] = (),
) -> TrustInputs:
    """What trust covers now: ``sources`` (as parsed), everything their ``handlers`` run
    (:mod:`.trust_reader`) and the paths the user named (``covers``, relative to the
    workspace).

    ``variables`` are the agent's own (``CLAUDE_PROJECT_DIR`` -> the project) and the
    settings' ``env``; ``$PWD`` is the workspace and ``$HOME`` the user's home. ``hooks_dir``
    is where the workspace keeps hook code (named in messages). ``unreadable``: ``(hook file,
    why)`` for hook files that are there but could not be read (a FIFO, a device): not
    trustable. Every byte is hashed; nothing blocks (a FIFO or device is refused, not opened
    for a blocking read)."""
    root = str(workspace.resolve())
    commands = [
        c
        for c in (h if isinstance(h, Command) else handler_command(h) for h in handlers)
        if c is not None
    ]
    if commands:
        # The reader (and the bash parser under it) loads only when there is a command to
        # read: `fire` with no workspace hooks never needs it.
        from .trust_reader import read_commands

        cover = read_commands(commands, workspace, variables=variables)
    else:
        cover = Cover(workspace, os.path.expanduser("~"))
    parts: list[tuple[str, str]] = []
    refused: list[tuple[str, str]] = []
    for source in sources:
        cover.look(source.name)
        parts.append((os.path.realpath(source.name), hashlib.sha256(source.content).hexdigest()))
    for name, why in unreadable:  # a hook file that is there but cannot be read
        cover.look(name)
        parts.append((os.path.realpath(name), "refused"))
        refused.append((name, why))
    covered = {p for p, _ in parts} | {os.path.abspath(s.name) for s in sources}
    files = [f for f in cover.files if f not in covered]
    notes: list[str] = []
    for directory, why in cover.dirs.items():
        listed = _dir_files(directory, covered, cover, MAX_DIR_FILES)
        if listed is None:
            cover.say(
                next(u.command for u in [*cover.unseen, Unseen(directory, "")]),
                f"{why}, and {directory} holds more than {MAX_DIR_FILES} files",
            )
            continue
        notes.append(f"{why}: trust covers every file in {directory}")
        files += [f for f in listed if f not in covered]
    for name in covers:
        path = os.path.normpath(os.path.join(root, os.path.expanduser(name)))
        cover.look(path)
        if os.path.isdir(path):
            listed = _dir_files(path, covered, cover, MAX_DIR_FILES)
            if listed is None:
                refused.append(
                    (path, f"named with --cover, it holds more than {MAX_DIR_FILES} files")
                )
                continue
            files += listed
        elif os.path.lexists(path):
            files.append(path)
        else:
            parts.append((path, "missing"))
    for path in dict.fromkeys(files):
        part, refusal = _hash_file(path, cover)
        parts.append((path, part))
        if refusal is not None:
            refused.append((path, refusal))
    for label, text in cover.texts.items():
        parts.append((label, hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()))
    unseen = tuple((u.command, u.why) for u in cover.unseen)
    h = hashlib.sha256()
    for name, part in parts:
        h.update(os.path.relpath(name, root).encode() + b"\0" + part.encode() + b"\0")
    for command, why in refused:
        h.update(f"refused\0{command}\0{why}\0".encode())
    for command, why in unseen:
        h.update(f"unseen\0{command}\0{why}\0".encode())
    for name in covers:
        h.update(f"cover\0{name}\0".encode())
    digest = h.hexdigest()
    texts = tuple(
        (os.path.realpath(s.name), s.content.decode("utf-8", "replace"))
        for s in sources
        if len(s.content) <= MAX_TEXT_KEPT
    )
    return TrustInputs(
        UNTRUSTABLE + digest if refused else digest,
        tuple(dict.fromkeys(name for name, _ in parts)),
        tuple(refused),
        tuple(parts),
        tuple(notes),
        tuple(cover.looked.values()),
        texts,
        unseen=unseen,
        cwd_bound=tuple(sorted(cover.cwd_bound)),
        covers=tuple(covers),
        hooks_dir=str(hooks_dir) if hooks_dir is not None else "",
    )


# -- the store ---------------------------------------------------------------------------------


def read_store(config_dir: Path) -> TrustStore:
    path = config_dir / STORE_NAME
    try:
        return msgspec.json.decode(read_regular_file(path, MAX_STORE_BYTES), type=TrustStore)
    except FileNotFoundError:
        return TrustStore()
    except (
        OSError,
        UnreadableFileError,
        msgspec.DecodeError,
        msgspec.ValidationError,
        RecursionError,
    ):
        # A damaged store trusts nothing; `triohooks trust` rewrites it.
        return TrustStore()


def write_store(config_dir: Path, store: TrustStore) -> None:
    config_dir.mkdir(parents=True, exist_ok=True)
    data = msgspec.json.format(msgspec.json.encode(store), indent=2) + b"\n"
    write_file_atomic(config_dir / STORE_NAME, data, new_mode=0o600)


def assess_trust(
    config_dir: Path,
    workspace: Path,
    sources: Sequence[TrustSource],
    handlers: Iterable[Handler | Command],
    *,
    dialect: str | None = None,
    variables: Mapping[str, str] | None = None,
    hooks_dir: Path | None = None,
    unreadable: Sequence[tuple[str, str]] = (),
    covers: Sequence[str] | None = None,
) -> tuple[TrustInfo, TrustInputs]:
    """What trust covers for a workspace now and its state against the store: the one way
    every table judges its workspace's hooks. ``covers``: the paths the user names for trust
    to hash too (``triohooks trust --cover``); None: those of the record kept (the user's
    earlier answer)."""
    record = read_store(config_dir).workspaces.get(trust_key(workspace, dialect))
    if covers is None:
        covers = record.covers if record is not None else ()
    inputs = trust_inputs(
        sources,
        handlers,
        workspace,
        variables=variables,
        hooks_dir=hooks_dir,
        unreadable=unreadable,
        covers=covers,
    )
    return _state(workspace, inputs, record, dialect), inputs


def trust_state(
    config_dir: Path, workspace: Path, inputs: TrustInputs, *, dialect: str | None = None
) -> TrustInfo:
    """The state of ``inputs`` against the store, and (when changed) which files differ."""
    record = read_store(config_dir).workspaces.get(trust_key(workspace, dialect))
    return _state(workspace, inputs, record, dialect)


def _state(
    workspace: Path, inputs: TrustInputs, record: TrustRecord | None, dialect: str | None
) -> TrustInfo:
    key = trust_key(workspace, dialect)
    info = TrustInfo(
        state="none",
        workspace=key,
        digest=inputs.digest,
        files=inputs.files,
        parts=inputs.parts,
        refused=inputs.refused,
        notes=inputs.notes,
        texts=inputs.texts,
        unseen=inputs.unseen,
        covers=inputs.covers,
        cwd_bound=inputs.cwd_bound,
        hooks_dir=inputs.hooks_dir,
    )
    if not inputs.files:
        return msgspec.structs.replace(info, digest="", files=())
    state: Literal["new", "trusted", "changed", "declined"]
    if record is None:
        state = "new"
    elif record.digest == inputs.digest:
        state = "declined" if record.decision == "declined" else "trusted"
    else:
        state = "changed"
    if state == "trusted" and (
        inputs.digest.startswith(UNTRUSTABLE) or (inputs.unseen and not inputs.covers)
    ):
        state = "changed"  # a hand-made record cannot trust what was refused or unseen
    changed: tuple[str, ...] = ()
    if state == "changed" and record is not None:
        added, removed, edited = trust_changes(record, info)
        changed = tuple(sorted({*added, *removed, *edited})) or tuple(n for n, _ in inputs.refused)
    return msgspec.structs.replace(info, state=state, changed=changed)


def trust_changes(record: TrustRecord, info: TrustInfo) -> tuple[list[str], list[str], list[str]]:
    """The files added, removed and changed since ``record`` was trusted (each sorted)."""
    now, before = dict(info.parts), record.parts
    added = sorted(n for n in now if n not in before)
    removed = sorted(n for n in before if n not in now)
    edited = sorted(n for n in now if n in before and now[n] != before[n])
    return added, removed, edited


def record_trust(
    config_dir: Path,
    workspace: Path,
    info: TrustInfo,
    decision: Literal["trusted", "declined"] = "trusted",
    *,
    dialect: str | None = None,
) -> None:
    """Remember ``decision`` for exactly the content ``info`` describes (a :class:`TrustInfo`
    from a table load, whatever its state).

    Raises :class:`TrustRefusedError` (nothing recorded) when asked to trust an untrustable
    digest (see :func:`trust_inputs`), or content with commands trust cannot see when the
    user named no file for it to hash (``info.covers``); declining it is fine."""
    if decision == "trusted" and info.digest.startswith(UNTRUSTABLE):
        why = "; ".join(f"{name}: {reason}" for name, reason in info.refused)
        raise TrustRefusedError(
            f"{canonical_workspace(workspace)}: the hooks cannot be trusted: "
            + (why or "a file they name cannot be hashed")
        )
    if decision == "trusted" and info.unseen and not info.covers:
        raise TrustRefusedError(
            f"{canonical_workspace(workspace)}: nothing recorded: " + unseen_text(info, dialect)
        )
    store = read_store(config_dir)
    store.workspaces[trust_key(workspace, dialect)] = TrustRecord(
        digest=info.digest,
        decision=decision,
        time=time.time(),
        files=list(info.files),
        parts=dict(info.parts),
        texts=dict(info.texts),
        covers=list(info.covers),
    )
    write_store(config_dir, store)


def trust_command(trust: TrustInfo, agent: str | None, *extra: str) -> str:
    """The exact command that trusts ``trust``'s workspace (``extra`` words added)."""
    project = shlex.quote(trust.workspace.partition("#")[0])
    words = ["triohooks", *([agent] if agent else []), "trust", *extra, "--workspace", project]
    return " ".join(words)


def unseen_text(trust: TrustInfo, agent: str | None) -> str:
    """What trust cannot see in ``trust``'s hooks, and what the user can do about it."""
    shown = "; ".join(f"`{c}`: {why}" for c, why in trust.unseen[:3])
    more = f" (and {len(trust.unseen) - 3} more)" if len(trust.unseen) > 3 else ""
    where = trust.hooks_dir or "the hooks directory"
    return (
        f"trust cannot see what they run: {shown}{more}. Move that code into a script in "
        f"{where} (trust hashes the scripts a command names and reads what they run), or name "
        f"the files it runs for trust to hash: `{trust_command(trust, agent, '--cover', 'PATH')}`"
    )


def held_back_message(trust: TrustInfo, agent: str | None, count: int) -> str:
    """Why ``count`` workspace hooks do not run, and what to run to review and trust them:
    triohooks' own (``agent`` None) or a project's hooks in ``agent``'s settings. The one text
    of it, for the Outcome warning, the agent's notice, the log, ``validate`` and ``doctor``."""
    project = trust.workspace.partition("#")[0]
    if trust.refused:
        why = "they cannot be trusted: " + "; ".join(f"{n}: {r}" for n, r in trust.refused[:3])
    elif trust.state == "changed":
        names = ", ".join(os.path.relpath(n, project) for n in trust.changed[:5]) or "its files"
        why = f"they changed since you trusted them ({names})"
    elif trust.state == "declined":
        why = "you declined them"
    else:
        why = "they are not trusted yet"
    if trust.unseen and not trust.covers and not trust.refused:
        return (
            f"{count} workspace hook(s) of {project} held back: {why}; {unseen_text(trust, agent)}"
        )
    where = shlex.quote(project)
    if agent is None:
        review = f"`triohooks trust --dry-run --workspace {where}` shows what changed"
        return (
            f"{count} workspace hook(s) of {project} held back: {why}. {review}; then run "
            f"`{trust_command(trust, None)}`"
        )
    command = f"triohooks {agent}"
    return (
        f"{count} project {agent} hook(s) of {project} held back: {why}. Review them with "
        f"`{command} list --workspace {where}`, then run `{trust_command(trust, agent)}`"
    )
