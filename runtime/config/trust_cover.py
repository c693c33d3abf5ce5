"""What trust covers of a workspace, as its reader finds it (:mod:`.trust_reader`): the files and
directories to hash, what trust cannot see, every path looked at. Plain bookkeeping, no bash
parser: the trust store and the loaders import it on every load.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Final, NamedTuple

from .freshness import Signature, signature

#: Files hashed under one directory a command loads from; more and it is unseen.
MAX_DIR_FILES: Final = 4096


def machines(path: str, st: os.stat_result) -> bool:
    """Whether ``path`` (outside the project) is the machine's rather than the user's
    (``/usr/bin/python3``): nothing a repository or the user's own programs change, so not
    hashed (an upgrade is not a change of the hooks), only looked at. For a user: owned by
    someone else and not writable by them. For root (who can write anything): outside the
    home directory, and neither it nor a directory above it writable by group or others (so
    ``/tmp/x.sh`` is never the machine's)."""
    me = os.geteuid()
    if me != 0:
        return st.st_uid != me and not os.access(path, os.W_OK)
    home = os.path.realpath(os.path.expanduser("~"))
    if path == home or path.startswith(home.rstrip("/") + "/"):
        return False
    here = path
    while True:
        try:
            mode = os.stat(here).st_mode
        except OSError:
            return False
        if mode & 0o022:
            return False
        parent = os.path.dirname(here)
        if parent == here:
            return True
        here = parent


class Unseen(NamedTuple):
    """A command (or a file trust read) whose code trust cannot enumerate, and why."""

    command: str
    why: str


class Cover:
    """What the commands of one workspace's hooks run, as :func:`read_commands` found it."""

    def __init__(self, root: Path, home: str) -> None:
        self.root = root.resolve()
        self.roots = (str(self.root), os.path.abspath(root))
        self.home = home
        #: Regular files to hash (resolved), in the order found.
        self.files: dict[str, None] = {}
        #: Every path looked at, as named and resolved, present or not, with its signature
        #: taken before it was first read (:mod:`.freshness`).
        self.looked: dict[str, Signature] = {}
        #: Directories to hash whole (resolved) -> why they are covered.
        self.dirs: dict[str, str] = {}
        #: ``(label, text)`` hashed as they are: the parts of git configs that can make git
        #: run something.
        self.texts: dict[str, str] = {}
        self.unseen: dict[Unseen, None] = {}
        #: Commands (their text) whose reading took paths relative to the project root.
        self.cwd_bound: set[str] = set()
        #: What trust did that a user may want to know (``covers all of .claude/hooks``).
        self.notes: dict[str, None] = {}
        #: Per hook command: the shell functions its texts define (their bodies are read).
        self.functions: dict[str, set[str]] = {}
        #: Per hook command: what it runs that is not there -- a program or script file
        #: named by path (``x.py: no such file``) -- for ``validate`` and ``doctor``, and
        #: whether it is the hook's own first program.
        self.missing: dict[str, list[tuple[str, bool]]] = {}
        #: Per hook command: the programs it runs by name, found on ``PATH`` at run time (and
        #: whether each is the hook's own first program).
        self.programs: dict[str, list[tuple[str, bool]]] = {}
        self._git_read: set[str] = set()

    def inside(self, path: str) -> bool:
        """Whether ``path`` (normalized, or resolved) is in the project."""
        return any(path == r or path.startswith(r.rstrip("/") + "/") for r in self.roots)

    def look(self, path: str) -> None:
        """Note ``path`` for the freshness check: its signature now, before it is read."""
        path = os.path.normpath(path)
        if path not in self.looked:
            self.looked[path] = signature(path)

    def hash_file(self, path: str) -> str | None:
        """Hash ``path`` (followed): its resolved name, or None when it is no regular file
        (missing, a directory; refused files are the hasher's to report)."""
        self.look(path)
        try:
            resolved = os.path.realpath(path)
            st = os.stat(resolved)
        except (OSError, ValueError):
            return None
        self.look(resolved)
        if stat.S_ISDIR(st.st_mode):
            return None
        if not self.inside(resolved) and machines(resolved, st):
            return resolved
        self.files.setdefault(resolved, None)
        return resolved

    def hash_dir(self, directory: str, why: str, command: str) -> None:
        """Cover ``directory`` whole (every file under it), or say why it cannot be."""
        try:
            resolved = os.path.realpath(directory)
        except (OSError, ValueError):
            return
        self.look(directory)
        root = str(self.root)
        if resolved in ("/", os.path.realpath(self.home)):
            self.unseen.setdefault(Unseen(command, f"{why}: that is {resolved}"), None)
            return
        if resolved == root or root.startswith(resolved.rstrip("/") + "/"):
            self.unseen.setdefault(
                Unseen(
                    command,
                    f"{why}: that is the project directory itself (move the code into a "
                    "directory of its own)",
                ),
                None,
            )
            return
        try:
            st = os.stat(resolved)
        except OSError:
            self.look(resolved)
            return
        if stat.S_ISDIR(st.st_mode) and (self.inside(resolved) or not machines(resolved, st)):
            self.dirs.setdefault(resolved, why)
        self.look(resolved)

    def lacks(self, top: str, what: str, first: bool) -> None:
        """``top`` runs ``what`` (a file named by path), and nothing is there."""
        found = self.missing.setdefault(top, [])
        if (what, first) not in found:
            found.append((what, first))

    def say(self, command: str, why: str) -> None:
        self.unseen.setdefault(Unseen(command, why), None)
