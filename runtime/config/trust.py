"""Trust for workspace hooks: a repository's hooks are code, and run only once trusted.

Owns what trust covers and the trust store. What it covers, for one workspace (a ``.agents/``
scope, or one agent's project-level settings):

- the hook configs **as they were parsed** (:class:`TrustSource`: the bytes a loader read and
  parsed in one open, never a second look at the file): a native hook file whole; for an
  agent's settings file only its hooks and the switches that turn hooks off, so an unrelated
  key (``permissions``) or an unrelated file (``settings.local.json`` with no hooks) never
  changes trust;
- every file a hook command can execute or read, found with the project's bash parser
  (:func:`triohooks.match.shell.read_words`) with the variables the agent defines expanded
  (``$CLAUDE_PROJECT_DIR``, ``$GEMINI_PROJECT_DIR``, ``$PWD``, ``$HOME``) and ``cd`` followed;
  symlinks resolved, every byte hashed, nothing read that could block;
- where a command names a file trust cannot resolve (``$(...)/x.sh``, a variable it does not
  know in a path, a computed command name), the whole hooks directory instead (every file under
  it), or, with no hooks directory, nothing: the content is refused, with a message saying how
  to write the command.

The store is ``trust.json`` in the global config dir (written atomically), one record per
workspace (and dialect) with the digest and each file's own hash, so a changed state can say
which file changed. States: none / new / trusted / changed / declined. It must not load or run
hooks.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import stat
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Final, Literal

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
#: unreadable or oversized file, a command trust cannot resolve): it never matches a record and
#: is never recorded as trusted.
UNTRUSTABLE: Final = "untrustable:"
#: Files hashed under a hooks directory (the fallback for commands trust cannot resolve); more
#: and the content cannot be trusted.
MAX_DIR_FILES: Final = 4096
#: Directories ``cd`` in one command may lead to that trust follows; more: cannot resolve.
MAX_CD_DIRS: Final = 16
#: Longest command excerpt in a message.
EXCERPT: Final = 60
#: Programs that read a file named as their first argument as code: a computed first argument
#: (``python3 $SCRIPT``) is a file trust cannot see.
_LOADERS: Final = frozenset(
    {
        "bash",
        "sh",
        "zsh",
        "dash",
        "ksh",
        "source",
        ".",
        "python",
        "python3",
        "node",
        "deno",
        "ruby",
        "perl",
        "php",
        "lua",
        "bun",
        "tsx",
        "ts-node",
        "uv",
        "npx",
    }
)
#: A word computed at run time that reads as a path: one starting with ``/``, ``./``, ``../``,
#: ``~/`` or a dot-directory (``.claude/``), or with an expansion followed by ``/``
#: (``"$DIR"/x``, ``$(git rev-parse --show-toplevel)/x``). Other computed words are data.
_COMPUTED_PATH: Final = re.compile(
    r"(?:/|\.{1,2}/|~/|\.[\w-]+/|\$\{[^}]*\}[\"']?/|\$\w+[\"']?/|\$\(.*\)[\"']?/|`.*`[\"']?/)",
    re.DOTALL,
)
_VARIABLE: Final = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


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


class TrustStore(msgspec.Struct):
    workspaces: dict[str, TrustRecord] = msgspec.field(default_factory=dict)


class TrustInputs(msgspec.Struct, frozen=True):
    """What trust covers for one workspace, as it is now."""

    #: SHA-256 hex over every part (``UNTRUSTABLE``-prefixed when ``refused`` is not empty).
    digest: str
    #: The covered files: hook configs, then the files their commands name (resolved), then
    #: the files of a hooks directory hashed whole.
    files: tuple[str, ...]
    #: ``(file or command, why)`` for each thing that could not be hashed or resolved.
    refused: tuple[tuple[str, str], ...] = ()
    #: ``(file, its own hash)`` for each file.
    parts: tuple[tuple[str, str], ...] = ()
    #: What trust did instead of following a command (``... : covers all of .claude/hooks``).
    notes: tuple[str, ...] = ()
    #: :func:`stamp` of each file hashed (and directory listed), taken as it was read: the
    #: same stamps later mean the same content (see ``table_is_current`` of the agents).
    stamps: tuple[Stamp, ...] = ()
    #: ``(file, text)`` of each hook config as parsed (see :data:`MAX_TEXT_KEPT`).
    texts: tuple[tuple[str, str], ...] = ()


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


# -- which files a command names ---------------------------------------------------------------


def _excerpt(text: str) -> str:
    one = " ".join(text.split())
    return one if len(one) <= EXCERPT else one[: EXCERPT - 3] + "..."


def mark_known(command: str, variables: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    """``command`` with each ``$NAME`` / ``${NAME}`` whose ``NAME`` is known replaced by a plain
    placeholder path (which reads the same quoted or not), and the placeholders' values. Unknown
    variables are left as written (dynamic to the parser). Inside single quotes bash would not
    expand: trust then looks at a file the hook does not run, which costs nothing."""
    values: dict[str, str] = {}

    def mark(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2) or ""
        if name not in variables:
            return m.group(0)
        placeholder = f"/.triohooks-variable-{name}"
        values[placeholder] = variables[name]
        return placeholder

    return _VARIABLE.sub(mark, command), values


class _Found:
    """Files a set of commands names, and what could not be resolved."""

    def __init__(self, root: Path, home: str) -> None:
        #: Placeholder -> value of the known variables in the command being read.
        self.values: dict[str, str] = {}
        self.root = root.resolve()
        self.roots = (self.root, Path(os.path.abspath(root)))
        self.home = home
        self.files: dict[str, Path] = {}
        self.unresolved: list[tuple[str, str]] = []

    def word(self, word: str, dirs: Sequence[Path]) -> None:
        if not word or len(word) > 4096:
            return
        for placeholder, value in self.values.items():
            word = word.replace(placeholder, value)
        if word.startswith("-"):
            word = word.partition("=")[2]  # --config=x.toml names x.toml
            if not word:
                return
        if word == "~" or word.startswith("~/"):
            word = self.home + word[1:]
        candidates = [Path(word)] if os.path.isabs(word) else [d / word for d in dirs]
        for candidate in candidates:
            self._candidate(candidate)

    def _candidate(self, candidate: Path) -> None:
        try:
            resolved = candidate.resolve()
            inside = resolved.is_relative_to(self.root) or any(
                Path(os.path.normpath(candidate)).is_relative_to(r) for r in self.roots
            )
            if not inside or stat.S_ISDIR(os.stat(resolved).st_mode):
                return
        except (OSError, ValueError, RuntimeError):  # missing, a NUL, a symlink loop
            return
        self.files.setdefault(str(resolved), resolved)

    def command(self, command: str, variables: Mapping[str, str]) -> None:
        # The parser (tree-sitter) loads only when there is a command to read: `fire` with no
        # workspace hooks never needs it.
        from triohooks.match.shell import read_words

        source = _excerpt(command)
        text, self.values = mark_known(command, variables)
        read = read_words(text)
        if read.error:
            self.unresolved.append((source, f"cannot read it as bash ({read.error})"))
            return
        dirs = [self.root]
        follows_cd = False
        for simple in read.commands:
            words = simple.words
            if words[0] in ("cd", "pushd"):
                target = next((w for w in words[1:] if w is None or not w.startswith("-")), "~")
                if target is None or target == "-":
                    self.unresolved.append((source, "it changes to a computed directory"))
                    return
                for placeholder, value in self.values.items():
                    target = target.replace(placeholder, value)
                target = self.home + target[1:] if target.startswith("~") else target
                new = [Path(os.path.normpath(d / target)) for d in dirs]
                dirs = list(dict.fromkeys([*dirs, *new]))
                follows_cd = True
                if len(dirs) > MAX_CD_DIRS:
                    self.unresolved.append((source, "it changes directory too often to follow"))
                    return
                continue
            for word in words:
                if word is not None:
                    self.word(word, dirs)
            name = posix_base(words[0])
            if name in _LOADERS and len(words) > 1 and words[1] is None:
                self.unresolved.append((source, f"{name} runs a file named at run time"))
        for word in read.other_words:
            if word is not None:
                self.word(word, dirs)
        for raw in read.dynamic:
            if _COMPUTED_PATH.match(raw.lstrip("\"'")):
                self.unresolved.append((source, f"cannot tell which file {_excerpt(raw)} names"))
        if any(d == "dynamic command name" for d in read.doubts):
            self.unresolved.append((source, "its command name is computed at run time"))
        if follows_cd and "PWD" in command:
            self.unresolved.append((source, "it uses $PWD after cd"))


def posix_base(name: str | None) -> str:
    return (name or "").rsplit("/", 1)[-1]


def _hook_files(
    handlers: Iterable[Handler], workspace: Path, variables: Mapping[str, str]
) -> _Found:
    home = os.path.expanduser("~")
    known = {"PWD": str(workspace), "HOME": home, **variables}
    found = _Found(workspace, home)
    for handler in handlers:
        if isinstance(handler, CommandHandler):
            found.command(handler.command, known)
        elif isinstance(handler, ArgsHandler):
            for word in handler.args:  # no shell: the words are literal
                found.word(word, [found.root])
    return found


def stamp(st: os.stat_result) -> tuple[int, int, int, int, int]:
    """What shows any change of a file: device, inode, size, mtime and ctime (ns)."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


#: A file (or directory) and :func:`stamp` of it as it was hashed (or listed).
Stamp = tuple[str, tuple[int, int, int, int, int]]


def _dir_files(directory: Path, skip: set[str], stamps: list[Stamp]) -> list[Path] | None:
    """Every non-directory under ``directory`` (symlinked files followed when hashed, symlinked
    directories not descended), sorted; None when there are more than :data:`MAX_DIR_FILES`.
    Each directory is stamped before it is listed (a file added later changes its stamp)."""
    out: list[Path] = []
    pending = [directory]
    while pending:
        top = pending.pop()
        try:
            stamps.append((str(top), stamp(os.stat(top))))
            entries = sorted(os.scandir(top), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            path = Path(entry.path)
            if entry.is_dir(follow_symlinks=False):
                pending.append(path)
                continue
            if str(path) in skip or os.path.realpath(path) in skip:
                continue
            out.append(path)
            if len(out) > MAX_DIR_FILES:
                return None
    return sorted(out)


# -- hashing -------------------------------------------------------------------------------------


def _hash_file(name: str, stamps: list[Stamp]) -> tuple[str, str | None]:
    """(the part: content hash and exec bits, or what stands in for them; why it cannot be
    trusted, or None). The file is stamped from the ``fstat`` of the descriptor hashed: a change
    after it shows in the next stamp."""
    try:
        with open_regular_file(name) as (fd, st):
            stamps.append((name, stamp(st)))
            inner = hashlib.sha256()
            for chunk in iter_regular_file(fd, st, MAX_HASHED_BYTES, name):
                inner.update(chunk)
            return f"{inner.hexdigest()}:{oct(st.st_mode & 0o111)}", None
    except FileNotFoundError as exc:  # gone since it was listed
        return f"unreadable:{exc.errno}", None
    except UnreadableFileError as exc:
        if os.path.isdir(name):  # a symlinked directory under a hooks dir: where it points
            return f"directory:{os.path.realpath(name)}", None
        return "refused", exc.reason


def trust_inputs(
    sources: Sequence[TrustSource],
    handlers: Iterable[Handler],
    workspace: Path,
    *,
    variables: Mapping[str, str] | None = None,
    hooks_dir: Path | None = None,
    unreadable: Sequence[tuple[str, str]] = (),
) -> TrustInputs:
    """What trust covers now: ``sources`` (as parsed) and the files their ``handlers`` name.

    ``variables`` are the agent's own (``CLAUDE_PROJECT_DIR`` -> the project); ``$PWD`` is the
    workspace and ``$HOME`` the user's home. ``unreadable``: ``(hook file, why)`` for hook files
    that are there but could not be read (a FIFO, a device): not trustable. A command trust
    cannot resolve makes it cover every
    file under ``hooks_dir`` instead; with no such directory the content is refused. Every byte
    is hashed; nothing blocks (a FIFO or device is refused, not opened for a blocking read).
    """
    root = str(workspace.resolve())
    parts: list[tuple[str, str]] = []
    refused: list[tuple[str, str]] = []
    notes: list[str] = []
    stamps: list[Stamp] = []
    for source in sources:
        parts.append((os.path.realpath(source.name), hashlib.sha256(source.content).hexdigest()))
    for name, why in unreadable:  # a hook file that is there but cannot be read
        parts.append((os.path.realpath(name), "refused"))
        refused.append((name, why))
    covered = {p for p, _ in parts} | {os.path.abspath(s.name) for s in sources}
    found = _hook_files(handlers, workspace, variables or {})
    program_files = [found.files[k] for k in sorted(found.files) if k not in covered]
    dir_files: list[Path] = []
    if found.unresolved:
        listed = (
            _dir_files(hooks_dir, covered, stamps)
            if hooks_dir is not None and hooks_dir.is_dir()
            else None
        )
        for command, why in dict.fromkeys(found.unresolved):
            if listed is not None:
                notes.append(f"`{command}`: {why}; trust covers every file in {hooks_dir}")
            else:
                where = (
                    f"{hooks_dir} holds more than {MAX_DIR_FILES} files"
                    if (hooks_dir is not None and hooks_dir.is_dir())
                    else "there is no hooks directory to cover instead"
                )
                refused.append(
                    (
                        command,
                        f"{why} ({where}): write the script's path literally or from "
                        "the project's variable",
                    )
                )
        dir_files = [p for p in listed or [] if str(p.resolve()) not in found.files]
    for path in [*program_files, *dir_files]:
        part, refusal = _hash_file(str(path), stamps)
        parts.append((str(path), part))
        if refusal is not None:
            refused.append((str(path), refusal))
    h = hashlib.sha256()
    for name, part in parts:
        h.update(os.path.relpath(name, root).encode() + b"\0" + part.encode() + b"\0")
    for command, why in refused:
        h.update(f"refused\0{command}\0{why}\0".encode())
    digest = h.hexdigest()
    texts = tuple(
        (os.path.realpath(s.name), s.content.decode("utf-8", "replace"))
        for s in sources
        if len(s.content) <= MAX_TEXT_KEPT
    )
    return TrustInputs(
        UNTRUSTABLE + digest if refused else digest,
        tuple(name for name, _ in parts),
        tuple(refused),
        tuple(parts),
        tuple(notes),
        tuple(stamps),
        texts,
    )


# -- the store ---------------------------------------------------------------------------------


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
    config_dir: Path, workspace: Path, inputs: TrustInputs, *, dialect: str | None = None
) -> TrustInfo:
    """The state of ``inputs`` against the store, and (when changed) which files differ."""
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
    )
    if not inputs.files:
        return msgspec.structs.replace(info, digest="", files=())
    record = read_store(config_dir).workspaces.get(key)
    state: Literal["new", "trusted", "changed", "declined"]
    if record is None:
        state = "new"
    elif record.digest == inputs.digest:
        state = "declined" if record.decision == "declined" else "trusted"
    else:
        state = "changed"
    if state == "trusted" and inputs.digest.startswith(UNTRUSTABLE):
        state = "changed"  # a hand-made record cannot trust what was refused
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
    digest (see :func:`trust_inputs`); declining it is fine."""
    if decision == "trusted" and info.digest.startswith(UNTRUSTABLE):
        why = "; ".join(f"{name}: {reason}" for name, reason in info.refused)
        raise TrustRefusedError(
            f"{canonical_workspace(workspace)}: the hooks cannot be trusted: "
            + (why or "a file they name cannot be hashed")
        )
    store = read_store(config_dir)
    store.workspaces[trust_key(workspace, dialect)] = TrustRecord(
        digest=info.digest,
        decision=decision,
        time=time.time(),
        files=list(info.files),
        parts=dict(info.parts),
        texts=dict(info.texts),
    )
    write_store(config_dir, store)


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
    where = shlex.quote(project)
    if agent is None:
        review = f"`triohooks trust --dry-run --workspace {where}` shows what changed"
        return (
            f"{count} workspace hook(s) of {project} held back: {why}. {review}; then run "
            f"`triohooks trust --workspace {where}`"
        )
    command = f"triohooks {agent}"
    return (
        f"{count} project {agent} hook(s) of {project} held back: {why}. Review them with "
        f"`{command} list --workspace {where}`, then run `{command} trust --workspace {where}`"
    )
