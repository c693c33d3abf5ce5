"""Built-in guards: the rules most users would otherwise write as shell scripts, decided in
process (no spawn) on the project's sound shell reader (docs/builtin-guards.md).

Closed world: a guard lets a call through only when it read all of it. Each guard reads one
tool call -- its shell scripts through :func:`~.ifrules.call_scripts` (the reading ``shell(...)``
rules use: quoting, backslash-newlines, braces, wrappers such as ``sudo``/``env``/``xargs``/
``find -exec``, ``bash -c`` and static ``eval`` strings, ``ssh host cmd``...) and its paths
through :func:`~.ifrules.call_paths` -- and gives a :class:`Verdict`: block (with a reason that
says what was found), go on, or *uncertain* with what was not understood: shell code the
reader cannot see (``eval "$x"``, a shell reading stdin, a ``-c`` string known only at run
time), code in another language given in the call (``python -c``, ``node -e``), a word known
only at run time where the guard's model of the program needs it, an option of a modelled
program the model does not know. What an uncertain call gets is the guard's ``on_uncertain``
(``block``, ``warn``: go on with a warning in the Outcome, or ``allow``), decided by the caller.

Where each command runs is tracked: the call's ``cwd`` (an agent's ``workdir``), then every
``cd``/``pushd`` (a directory once entered stays possible for every later command: subshells,
``||`` and ``popd`` are read as "may be"), ``env -C``, ``sudo -D``, ``git -C``. Paths are read
as bash reads them (``~``, ``~user``, ``~+``, ``~-``) and, where it matters, as the kernel
resolves them (symlinks followed).

This module owns the rules and their parameters. It must not run hooks or know about config
files; the dialect readers validate parameters with :func:`check_params`.
"""

from __future__ import annotations

import collections
import fnmatch
import functools
import os
import posixpath
import pwd
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, Literal, NamedTuple

import msgspec

from . import shell_globs
from .ifrules import (
    SHELL_KEYS,
    CallScripts,
    call_kinds,
    call_paths,
    call_scripts,
    script_texts,
)
from .tools import canonical_tool, tool_names

OnUncertain = Literal["block", "warn", "allow"]
ON_UNCERTAIN: Final = ("block", "warn", "allow")


class Verdict(msgspec.Struct, frozen=True, gc=False):
    """One guard's reading of one call."""

    #: What was found that the guard blocks ("" when nothing was).
    block: str = ""
    #: Why the call cannot be read for sure ("" when it can).
    uncertain: str = ""
    #: What the call was proven to be, for a guard that approves (``approve_read_only``):
    #: the agent's allow. "" when it approves nothing.
    approve: str = ""


GO_ON: Final = Verdict()


class Call(msgspec.Struct, frozen=True, gc=False):
    """The call a guard reads, and where it runs."""

    tool: str
    args: Mapping[str, Any]
    #: The call's working directory (the tool's own ``workdir``, else the event's ``cwd``,
    #: else the workspace).
    cwd: str
    workspace: str
    home: str


Check = Callable[[Call], Verdict]


class Param(msgspec.Struct, frozen=True):
    """One parameter a guard takes: a list of strings, or (``choices``) one of some words."""

    default: tuple[str, ...]
    help: str
    choices: tuple[str, ...] = ()


class GuardSpec(msgspec.Struct, frozen=True):
    description: str
    #: What an uncertain call gets unless the config says otherwise.
    on_uncertain: OnUncertain
    params: Mapping[str, Param]
    #: Builds the check from the parameters (validated).
    make: Callable[[Mapping[str, tuple[str, ...]]], Check]
    #: The guard approves (the agent's allow) instead of blocking: it never blocks, and what
    #: it cannot prove gets no decision, so it takes no ``on_uncertain``.
    approves: bool = False


# --- reading a call ---------------------------------------------------------------------------

_Words = tuple[str | None, ...]


class Command(NamedTuple):
    """One simple command a call may run, and the directories it may run in (absolute,
    lexically normal; empty: known only at run time)."""

    words: _Words
    open_tail: bool
    cwds: tuple[str, ...]
    #: For each word that is a glob (or a loop variable over globs), the patterns it may
    #: expand to (:attr:`~.shell.SimpleCommand.globs`); empty when none is.
    globs: tuple[tuple[str, ...] | None, ...] = ()
    #: Where the command a wrapper runs starts in ``words`` (read as a command of its own,
    #: next in the list: :attr:`~.shell.SimpleCommand.runs_from`); 0 when it runs none.
    runs_from: int = 0

    def own_words(self) -> _Words:
        """The words the program itself reads: all, but a wrapper's command."""
        return self.words[: self.runs_from] if self.runs_from else self.words

    def patterns(self, at: int) -> tuple[str, ...] | None:
        return self.globs[at] if at < len(self.globs) else None

    def shown(self) -> str:
        out = []
        for at, word in enumerate(self.words):
            patterns = self.patterns(at) if word is None else None
            if word is not None:
                out.append(word)
            elif patterns is not None:
                out.append(patterns[0] if len(patterns) == 1 else "{" + ",".join(patterns) + "}")
            else:
                out.append("<run-time word>")
        return " ".join(out)


class Reading(NamedTuple):
    """Everything a call's shell scripts may run, and what of them could not be read."""

    commands: tuple[Command, ...]
    #: What was not understood, each in words (empty: the scripts were read whole).
    unseen: tuple[str, ...]
    #: Words outside any argv: redirect targets and assignment values (``None``: dynamic).
    other_words: tuple[str | None, ...]
    #: The source text of each word known only at run time.
    dynamic: tuple[str, ...]
    #: The targets of the redirects that write a file (``None``: dynamic), each with the
    #: directories it may be opened in (empty: known only at run time).
    written: tuple[tuple[str | None, tuple[str, ...]], ...] = ()
    #: Each variable assignment (``GIT_DIR=x git push``, ``export X=y``): its name and value
    #: (``None``: known only at run time).
    assignments: tuple[tuple[str, str | None], ...] = ()
    #: The names of the functions the scripts define (their bodies' commands are listed in
    #: ``commands``; a call of one is listed by its name).
    functions: tuple[str, ...] = ()


def read_call(call: Call) -> Reading:
    """The one reading of a call's scripts every guard works from. The guards of one event
    share its ``args``: the last reading is kept for them, checked against the very same
    ``args`` object and the scripts in it (a rewritten call is read anew)."""
    key = (call.tool, call.cwd, call.home, *map(call.args.get, SHELL_KEYS))
    last = _LAST_READING[0]
    if last is not None and last[0] is call.args and last[1] == key:
        return last[2]
    scripts = call_scripts(call.tool, call.args)
    if scripts.unreadable:
        reading = Reading((), (scripts.why,), (), ())
    else:
        texts = tuple(_script_texts(call.args, scripts))
        reading = _read_texts(texts, call.cwd, call.home, powershell=scripts.powershell)
    _LAST_READING[0] = (call.args, key, reading)
    return reading


#: The last call read: its ``args`` object, what the reading depends on, the reading.
_LAST_READING: Final[list[tuple[Mapping[str, Any], tuple[Any, ...], Reading] | None]] = [None]


@functools.lru_cache(maxsize=256)
def _read_texts(
    texts: tuple[str, ...], cwd: str, home: str, *, powershell: bool = False
) -> Reading:
    from .powershell import read_powershell
    from .shell import GIT_TOPLEVEL, fn_literal, mark_known, read_words, unmark

    commands: list[Command] = []
    unseen: list[str] = []
    other: list[str | None] = []
    dynamic: list[str] = []
    written: list[tuple[str | None, tuple[str, ...]]] = []
    assigned: list[tuple[str, str | None]] = []
    functions: list[str] = []
    for given in texts:
        text = given
        dirs: tuple[str, ...] = (cwd,)
        known = {"HOME": home}
        if GIT_TOPLEVEL.search(text):
            top = git_toplevel(cwd)
            if top is not None:
                text = GIT_TOPLEVEL.sub("${TRIOHOOKS_GIT_TOPLEVEL}", text)
                known["TRIOHOOKS_GIT_TOPLEVEL"] = top
        if "$PWD" in text or "${PWD}" in text:
            known["PWD"] = cwd  # before any cd; a cd later makes it run-time (see below)
        values: dict[str, str]
        if powershell:  # its own variables ($HOME, $env:USERPROFILE) are its reader's
            marked, values = text, {}
        else:
            marked, values = mark_known(text, known)
        literal_values = {k: fn_literal(v) for k, v in values.items()}  # in a glob pattern
        read = read_powershell(marked) if powershell else read_words(marked)
        if read.error:
            unseen.append(f"the command cannot be read as bash ({read.error})")
            continue
        # Where each command runs: ``dirs`` holds every directory it may be in (a cd may fail,
        # be in a subshell, be undone); ``after_cd`` the directories of an ``&&`` chain whose
        # own cd succeeded, which alone its later commands run in. Only where nothing else in
        # the script can move the shell (no function, eval, source, popd, builtin/command cd).
        functions += read.functions
        chains = not read.functions and not any(c.words[0] in _MOVES_SHELL for c in read.commands)
        after_cd: dict[int, tuple[str, ...]] = {}
        first = len(commands)
        for simple in read.commands:
            words = tuple(None if w is None else unmark(w, values) for w in simple.words)
            here = after_cd.get(simple.chain, dirs)
            start = here
            for step in simple.chdir:
                here = _chdir(here, None if step is None else unmark(step, values), home)
            globs = simple.globs and tuple(
                None if g is None else tuple(unmark(p, literal_values) for p in g)
                for g in simple.globs
            )
            commands.append(Command(words, simple.open_tail, here, globs, simple.runs_from))
            if words[0] in ("cd", "pushd") and not simple.chdir:
                moved = _cd(start, words, home)
                # Known only at run time (``cd "$X"``): so is every directory from here on.
                dirs = tuple(dict.fromkeys((*dirs, *moved))) if moved and dirs else ()
                if chains and simple.chain >= 0 and moved != start:
                    # A cd of the chain's own moves it; one that only may (a pipeline's, a
                    # wrapper's) adds its directory to the chain's.
                    after = moved if simple.direct else (*start, *moved) if moved else ()
                    after_cd[simple.chain] = tuple(dict.fromkeys(after))
        if any(name == "CDPATH" for name, _ in read.assignments):
            unseen.append("it sets CDPATH, which changes where cd goes")
        # `source x.sh` runs shell code from a file, as `bash x.sh` does: what a file runs is
        # out of every hook's sight (docs/builtin-guards.md), not a doubt about the call.
        foreign = [f for f in read.foreign if f.partition(":")[0] not in ("source", ".")]
        unseen += [_unseen_words(d) for d in (*read.doubts, *foreign)]
        other += [None if w is None else unmark(w, values) for w in read.other_words]
        dynamic += read.dynamic
        for name, raw in read.assignments:
            plain = raw[1:-1] if len(raw) > 1 and raw[0] == raw[-1] == "'" else raw
            static = not any(c in plain for c in "$`\"'\\*?[")
            assigned.append((name, unmark(plain, values) if static else None))
        for word, at in read.written:
            where = commands[first + at].cwds if first + at < len(commands) else dirs
            written.append((None if word is None else unmark(word, values), where))
        if "PWD" in known and any(c.words[0] in ("cd", "pushd") for c in commands):
            unseen.append("it uses $PWD after a cd")
    return Reading(
        tuple(commands),
        tuple(dict.fromkeys(unseen)),
        tuple(other),
        tuple(dynamic),
        tuple(written),
        tuple(assigned),
        tuple(dict.fromkeys(functions)),
    )


def _unseen_words(doubt: str) -> str:
    """A reader's doubt as what a guard could not read (``python3: python -c runs code given
    in the call`` -> ``cannot read python3 ...: code given in the call``)."""
    program, sep, why = doubt.partition(": ")
    if not sep:
        return f"cannot read {doubt}"
    return f"cannot read `{program} ...`: {why}"


#: Commands that may move the shell's directory other than by a ``cd`` in plain sight.
_MOVES_SHELL: Final = frozenset({"popd", "eval", "source", ".", "builtin", "command"})


def _cd(dirs: tuple[str, ...], words: _Words, home: str) -> tuple[str, ...]:
    """The directories a shell in ``dirs`` is in after ``cd``/``pushd`` ``words`` succeeds
    (empty: known only at run time; ``dirs`` itself for ``cd -``, back to one it was in)."""
    if not dirs:
        return dirs
    args = [w for w in words[1:] if w is None or not (w.startswith("-") and w != "-")]
    if not args:
        return (home,)
    target = args[0]
    if target == "-":
        return dirs
    return _chdir(dirs, target, home)


def _chdir(dirs: tuple[str, ...], target: str | None, home: str) -> tuple[str, ...]:
    """Each of ``dirs`` changed to ``target`` (relative to it); empty when ``target`` is known
    only at run time."""
    if target is None or not dirs:
        return ()
    expanded = expand_tilde(target, home, dirs[0])
    if expanded is None:
        return ()
    return tuple(dict.fromkeys(_normal(posixpath.join(d, expanded)) for d in dirs))


def expand_tilde(word: str, home: str, cwd: str) -> str | None:
    """``word`` with a leading tilde as bash expands it: ``~`` the home, ``~user`` that user's
    home, ``~+`` the working directory; ``~-`` (the previous one) and an unknown user are
    None (known only at run time). Anything else is the word itself."""
    if not word.startswith("~"):
        return word
    head, sep, rest = word[1:].partition("/")
    tail = sep + rest
    if head == "":
        return home + tail
    if head == "+":
        return cwd + tail
    if head == "-":
        return None
    try:
        return pwd.getpwnam(head).pw_dir + tail
    except (KeyError, ValueError):
        return None


def _normal(path: str) -> str:
    path = posixpath.normpath(path)
    return "/" + path.lstrip("/")  # POSIX keeps a leading "//"; the kernel does not


def resolve(path: str, cwd: str, home: str) -> str | None:
    """``path`` as an absolute, lexically normal path (tilde expanded, relative to ``cwd``);
    None when it is known only at run time (``~-``, an unknown ``~user``)."""
    expanded = expand_tilde(path, home, cwd)
    if expanded is None:
        return None
    return _normal(posixpath.join(cwd or "/", expanded))


def _real(path: str) -> str:
    """``path`` with symlinks followed (a missing tail is kept as written)."""
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path


def _real_read(path: str) -> str:
    """:func:`_real` for a path to be read: one that is not there (most words of a command are
    not paths) costs one ``lstat``, as nothing can be read through it."""
    try:
        return _real(path) if os.path.lexists(path) else path
    except ValueError:
        return path


@functools.lru_cache(maxsize=1024)
def _base(word: str | None) -> str:
    return posixpath.basename(word) if word else ""


def _ancestors_or_self(path: str) -> set[str]:
    out = {path}
    while path != "/":
        path = posixpath.dirname(path)
        out.add(path)
    return out


def _script_texts(args: Mapping[str, Any], scripts: CallScripts) -> list[str]:
    """The call's scripts as text, as :func:`~.ifrules.call_scripts` found them."""
    return script_texts(args) if scripts.parsed else []


def _long_option(word: str, known: Sequence[str]) -> str | None:
    """The long option ``word`` names: GNU getopt takes any unambiguous prefix (``--rec``,
    ``--no-p``) and ``--opt=value``. None when unknown or ambiguous."""
    name = word.partition("=")[0]
    if name in known:
        return name
    hits = [k for k in known if k.startswith(name)]
    return hits[0] if len(hits) == 1 else None


def _first(verdicts: Iterable[Verdict], unseen: Sequence[str]) -> Verdict:
    """The first block among ``verdicts``; else the first uncertainty, or what the reading
    did not understand."""
    uncertain = ""
    for verdict in verdicts:
        if verdict.block:
            return verdict
        uncertain = uncertain or verdict.uncertain
    return Verdict(uncertain=uncertain or (unseen[0] if unseen else ""))


# --- destructive deletes ----------------------------------------------------------------------

_RM_LONG: Final = (
    "--recursive",
    "--force",
    "--interactive",
    "--one-file-system",
    "--no-preserve-root",
    "--preserve-root",
    "--dir",
    "--verbose",
    "--help",
    "--version",
)
_RM_SHORT: Final = frozenset("rRfidvI")
#: File names rm would read as a recursive option (a glob that may match one may make it so).
_RM_RECURSIVE_NAMES: Final = ("-r", "-R", "-rf", "-fr", "-Rf", "-fR", "-rv", "--r", "--recursive")
#: find's options before its starting points (``-L`` follows symlinks: what it deletes may be
#: anywhere they point).
_FIND_LEADING: Final = frozenset({"-H", "-L", "-P"})
#: find tests that narrow what a ``-delete`` removes.
_FIND_FILTERS: Final = frozenset(
    """
    -name -iname -path -ipath -wholename -iwholename -regex -iregex -lname -ilname -newer
    -anewer -cnewer -mtime -mmin -atime -amin -ctime -cmin -size -empty -user -group -perm
    -inum -samefile -links -type
    """.split()
)
#: Patterns that match every name: a filter with one narrows nothing.
_MATCH_ALL: Final = frozenset({"*", "**", ".*", "*.*", "**/*", "*/*"})
_FIND_ACTIONS: Final = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
#: Scratch directories a filtered ``find -delete`` may clean (they are not anyone's data).
_SCRATCH: Final = frozenset({"/tmp", "/var/tmp", "/private/tmp", "/private/var/tmp"})
_DELETERS: Final = frozenset({"rm", "rmdir", "unlink", "shred"})
#: rsync's options that delete what the source does not have.
_RSYNC_DELETE: Final = frozenset(
    {
        "--delete",
        "--delete-before",
        "--delete-during",
        "--delete-delay",
        "--delete-after",
        "--delete-excluded",
        "--del",
        "--remove-source-files",
    }
)


def _exec_inner(words: _Words, at: int) -> _Words:
    """The command a find ``-exec`` at ``words[at]`` runs, as the shell reader lists it."""
    end = at + 1
    while end < len(words) and words[end] not in (";", "+"):
        end += 1
    return tuple(None if w is None or "{}" in w else w for w in words[at + 1 : end])


def _destructive_delete(params: Mapping[str, tuple[str, ...]]) -> Check:
    extra = params["protect"]

    def critical(call: Call, *, workspace: bool = True) -> set[str]:
        """Paths no recursive delete may name: /, the home and the workspace directories and
        every directory above them, and the protected paths (and what is above them). Every
        top-level directory (``/usr``, ``/etc``) is critical too: see :func:`hits`."""
        paths = {"/"}
        for root in (call.home, call.workspace if workspace else "", *extra):
            if root:
                found = resolve(root, call.workspace or "/", call.home)
                if found is not None:
                    paths |= _ancestors_or_self(found) | _ancestors_or_self(_real(found))
        return paths

    def hits(
        operands: Iterable[str], cmd: Command, call: Call, *, narrowed: bool = False
    ) -> list[str]:
        """The critical paths ``operands`` name from any directory ``cmd`` may run in, as
        written and with symlinks followed. ``narrowed``: what is deleted there is chosen by
        a filter, which makes a cleanup of the workspace or a scratch directory (/tmp)."""
        crit = critical(call, workspace=not narrowed)
        found: set[str] = set()
        for operand in operands:
            for cwd in cmd.cwds:
                path = resolve(operand, cwd, call.home)
                if path is None:
                    continue
                for form in {path, _real(path)}:
                    if narrowed and form in _SCRATCH:
                        continue
                    if form in crit or form.count("/") == 1:
                        found.add(form)
        return sorted(found)

    def swept(patterns: tuple[str, ...], cmd: Command, call: Call) -> str | None:
        """What critical path a recursive delete of a glob sweeps away (its directory when
        it names every entry of one that is critical, a critical path it may name), "" when
        it names none, None when that cannot be read (a wildcard before the last ``/``)."""
        crit = critical(call)
        for pattern in patterns:
            parts = shell_globs.split(pattern)
            if parts is None or not cmd.cwds:
                return None
            directory, last = parts
            for cwd in cmd.cwds:
                found = resolve(directory, cwd, call.home)
                if found is None:
                    return None
                for form in {found, _real(found)}:
                    if form == "/" or (form in crit and shell_globs.sweeping(last)):
                        return f"everything in {form}"
                    below = form.rstrip("/") + "/"
                    for path in crit:
                        if path.startswith(below):
                            name = path[len(below) :].partition("/")[0]
                            if shell_globs.may_match(last, name):
                                return path
        return ""

    def rm(cmd: Command, call: Call) -> Verdict:
        recursive = no_preserve = False
        operands: list[str] = []
        globbed: list[tuple[str, ...]] = []
        dynamic = 0
        options_done = False
        shown = cmd.shown()
        for at, word in enumerate(cmd.words[1:], 1):
            if word is None:
                patterns = cmd.patterns(at)
                if patterns is None:
                    dynamic += 1
                    continue
                names = [shell_globs.literal(p) for p in patterns if shell_globs.is_literal(p)]
                operands += names  # `for d in build dist`: names
                if len(names) < len(patterns):
                    globbed.append(tuple(p for p in patterns if not shell_globs.is_literal(p)))
            elif options_done or word == "-" or not word.startswith("-"):
                if expand_tilde(word, call.home, cmd.cwds[0] if cmd.cwds else "/") is None:
                    dynamic += 1
                else:
                    operands.append(word)
            elif word == "--":
                options_done = True
            elif word.startswith("--"):
                option = _long_option(word, _RM_LONG)
                if option is None:
                    return Verdict(uncertain=f"`{shown}`: rm option {word} is not one rm has")
                recursive |= option == "--recursive"
                no_preserve |= option == "--no-preserve-root"
            else:
                unknown = set(word[1:]) - _RM_SHORT
                if unknown:
                    return Verdict(uncertain=f"`{shown}`: rm option -{min(unknown)} is unknown")
                recursive |= "r" in word or "R" in word
        if no_preserve:
            return Verdict(block=f"`{shown}`: --no-preserve-root lets rm delete /")
        # A glob may expand to a name rm reads as its options (`rm -f *` with a file `-r`).
        recursive |= any(
            shell_globs.may_match(p.rpartition("/")[2], option)
            for patterns in globbed
            for p in patterns
            for option in _RM_RECURSIVE_NAMES
        )
        if recursive:
            for patterns in globbed:
                sweeps = swept(patterns, cmd, call)
                if sweeps is None:
                    dynamic += 1
                elif sweeps:
                    return Verdict(block=f"`{shown}` deletes {sweeps}")
        if not cmd.cwds and any(not o.startswith(("/", "~")) for o in operands):
            return Verdict(uncertain=f"`{shown}` runs in a directory known only at run time")
        hit = hits(operands, cmd, call)
        if recursive and hit:
            return Verdict(block=f"`{shown}` deletes {hit[0]} and everything under it")
        if recursive and (dynamic or cmd.open_tail):
            return Verdict(
                uncertain=f"`{shown}` deletes recursively a path known only at run time "
                "(a variable, a glob or xargs input): it may be / or your home"
            )
        if not recursive and (dynamic > 1 or (dynamic and hit) or (cmd.open_tail and hit)):
            return Verdict(uncertain=f"`{shown}`: a word known only at run time may be -r")
        return GO_ON

    def find(cmd: Command, call: Call) -> Verdict:
        words = cmd.words
        deletes = "-delete" in words or any(
            w in _FIND_ACTIONS and i + 1 < len(words) and _base(words[i + 1]) in _DELETERS
            for i, w in enumerate(words)
        )
        if not deletes:
            return GO_ON
        shown = cmd.shown()
        i = 1
        follows = False
        while (i < len(words) and words[i] in _FIND_LEADING | {"-D", "-O"}) or (
            i < len(words) and (words[i] or "").startswith("-O")
        ):
            follows |= words[i] == "-L"
            i += 2 if words[i] == "-D" else 1
        starts: list[str] = []
        for word in words[i:]:
            if word is None:
                return Verdict(uncertain=f"`{shown}` deletes under a path known only at run time")
            if word.startswith("-") or word in ("(", "!", ","):
                break
            starts.append(word)
        if not cmd.cwds and any(not s.startswith(("/", "~")) for s in starts or ["."]):
            return Verdict(uncertain=f"`{shown}` runs in a directory known only at run time")
        # A filter (-name, -mtime ...) that can narrow makes a cleanup under the workspace;
        # above it, with none, or with one that matches everything (-name '*'), it is not.
        filtered = any(
            w in _FIND_FILTERS and i + 1 < len(words) and words[i + 1] not in _MATCH_ALL
            for i, w in enumerate(words)
        )
        hit = hits(starts or ["."], cmd, call, narrowed=filtered)
        if hit:
            return Verdict(block=f"`{shown}` deletes files under {hit[0]}")
        if follows:
            return Verdict(
                uncertain=f"`{shown}`: -L follows symlinks, so what it deletes may be anywhere"
            )
        return GO_ON

    def rsync(cmd: Command, call: Call) -> Verdict:
        if not any(w is not None and w.partition("=")[0] in _RSYNC_DELETE for w in cmd.words):
            return GO_ON
        positional = [w for w in cmd.words[1:] if w is None or not w.startswith("-")]
        if not positional:
            return GO_ON
        target = positional[-1]
        if target is None:
            return Verdict(uncertain=f"`{cmd.shown()}` deletes in a place known only at run time")
        if ":" in target.split("/")[0]:
            return GO_ON  # another host's
        hit = hits([target], cmd, call)
        if hit:
            return Verdict(block=f"`{cmd.shown()}` deletes what is in {hit[0]}")
        return GO_ON

    def check(call: Call) -> Verdict:
        reading = read_call(call)
        # find -exec rm ... {}: the reader lists the rm too, {} as a run-time word; what it
        # deletes is what find finds, which find's own check reads.
        by_find = {
            _exec_inner(c.words, i)
            for c in reading.commands
            if _base(c.words[0]) in ("find", "gfind")
            for i, w in enumerate(c.words)
            if w in _FIND_ACTIONS
        }
        verdicts: list[Verdict] = []
        for cmd in reading.commands:
            name = _base(cmd.words[0])
            if name == "rm" and cmd.words not in by_find:
                verdicts.append(rm(cmd, call))
            elif name in ("find", "gfind"):
                verdicts.append(find(cmd, call))
            elif name == "rsync":
                verdicts.append(rsync(cmd, call))
        return _first(verdicts, reading.unseen)

    return check


# --- force pushes and protected branches ------------------------------------------------------

#: ``git push`` options that take a value in the next word when written without ``=``.
_PUSH_VALUE_OPTIONS: Final = frozenset(
    {"-o", "--push-option", "--repo", "--receive-pack", "--exec"}
)
_PUSH_LONG: Final = (
    "--all",
    "--branches",
    "--mirror",
    "--tags",
    "--follow-tags",
    "--no-follow-tags",
    "--delete",
    "--force",
    "--force-with-lease",
    "--force-if-includes",
    "--no-force-with-lease",
    "--no-force-if-includes",
    "--prune",
    "--dry-run",
    "--porcelain",
    "--set-upstream",
    "--no-verify",
    "--verify",
    "--atomic",
    "--no-atomic",
    "--signed",
    "--no-signed",
    "--push-option",
    "--repo",
    "--receive-pack",
    "--exec",
    "--thin",
    "--no-thin",
    "--quiet",
    "--verbose",
    "--progress",
    "--no-progress",
    "--recurse-submodules",
    "--no-recurse-submodules",
    "--ipv4",
    "--ipv6",
)
_PUSH_SHORT: Final = frozenset("fdnquvo46")


def current_branch(cwd: str) -> str | None:
    """The branch checked out in the repository around ``cwd`` (``.git/HEAD``, a worktree's
    ``gitdir:`` followed); None when there is none or it cannot be read (detached, no repo)."""
    gitdir = find_git_dir(cwd)
    return None if gitdir is None else _head_branch(gitdir)


def find_git_dir(cwd: str) -> str | None:
    """The git directory git finds from ``cwd`` (``.git`` there or above, a ``gitdir:`` file
    followed), or None."""
    directory = cwd or "/"
    for _ in range(64):
        dot_git = os.path.join(directory, ".git")
        try:
            if os.path.isfile(dot_git):
                with open(dot_git, encoding="utf-8", errors="replace") as f:
                    line = f.read(4096).strip()
                if not line.startswith("gitdir:"):
                    return None
                return os.path.join(directory, line[len("gitdir:") :].strip())
            if os.path.isdir(dot_git):
                return dot_git
        except OSError:
            return None
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent
    return None


def git_toplevel(cwd: str) -> str | None:
    """The work tree git finds from ``cwd`` (the directory holding ``.git``), or None."""
    directory = cwd or "/"
    for _ in range(64):
        if os.path.lexists(os.path.join(directory, ".git")):
            return directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent
    return None


def _head_branch(gitdir: str) -> str | None:
    try:
        with open(os.path.join(gitdir, "HEAD"), encoding="utf-8", errors="replace") as f:
            head = f.read(4096).strip()
    except OSError:
        return None
    prefix = "ref: refs/heads/"
    return head[len(prefix) :] if head.startswith(prefix) else None


class _Git(NamedTuple):
    """A git command line: its global options read, where it runs and on what repository."""

    sub: str | None
    rest: _Words
    #: ``-c key=value`` settings, in order.
    config: tuple[tuple[str, str], ...]
    #: The git directory named by ``--git-dir`` (relative to the cwd), if any.
    git_dir: str | None
    uncertain: str


def _git_options(words: _Words) -> _Git:
    """``git [global options] <subcommand> ...``."""
    i, n = 1, len(words)
    config: list[tuple[str, str]] = []
    git_dir: str | None = None
    while i < n:
        w = words[i]
        if w is None:
            return _Git(None, (), (), None, "a git option known only at run time")
        if not w.startswith("-"):
            break
        name, eq, attached = w.partition("=")
        if name in ("-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env"):
            value = attached if eq else (words[i + 1] if i + 1 < n else None)
            i += 1 if eq else 2
            if value is None:
                why = f"git {name} names something known only at run time"
                return _Git(None, (), (), None, why)
            if name == "-c":
                key, _, setting = value.partition("=")
                config.append((key.lower(), setting))
            elif name == "--git-dir":
                git_dir = value
            continue
        i += 1
    if i >= n:
        return _Git(None, (), tuple(config), git_dir, "")
    return _Git(words[i], words[i + 1 :], tuple(config), git_dir, "")


def _protected_push(params: Mapping[str, tuple[str, ...]]) -> Check:
    branches = params["branches"]
    block_force = params["force"] != ("off",)

    def protected(ref: str) -> bool:
        name = ref.removeprefix("refs/heads/")
        if any(c in name for c in "*?["):
            # A wildcard refspec pushes every branch it matches: a protected one among them.
            return any(
                fnmatch.fnmatchcase(b, name) or fnmatch.fnmatchcase(name, b) for b in branches
            )
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in branches)

    def push(cmd: Command, git: _Git, call: Call, env_git_dir: str | None) -> Verdict:
        shown = cmd.shown()
        force = delete = every = tags_only = repo_option = False
        positional: list[str] = []
        rest = git.rest
        i = 0
        while i < len(rest):
            word = rest[i]
            i += 1
            if word is None:
                return Verdict(uncertain=f"`{shown}`: a word known only at run time")
            if word == "--":
                positional.extend(w for w in rest[i:] if w is not None)
                if None in rest[i:]:
                    return Verdict(uncertain=f"`{shown}`: a word known only at run time")
                break
            if not word.startswith("-") or word == "-":
                positional.append(word)  # git reads options after the remote too
                continue
            if word.startswith("--"):
                option = _long_option(word, _PUSH_LONG)
                if option is None:
                    return Verdict(uncertain=f"`{shown}`: git push option {word} is unknown")
                force |= option in ("--force", "--force-with-lease", "--force-if-includes")
                force |= option == "--mirror"
                delete |= option in ("--delete", "--prune")
                every |= option in ("--all", "--branches", "--mirror")
                tags_only |= option == "--tags"
                repo_option |= option == "--repo"
                if option in _PUSH_VALUE_OPTIONS and "=" not in word:
                    i += 1
                continue
            cluster = word[1:]
            for j, letter in enumerate(cluster):
                if letter not in _PUSH_SHORT:
                    return Verdict(uncertain=f"`{shown}`: git push option -{letter} is unknown")
                force |= letter == "f"
                delete |= letter == "d"
                if letter == "o":  # -o value (the rest of the cluster, else the next word)
                    if j == len(cluster) - 1:
                        i += 1
                    break
        # With --repo a first operand may be the repository or a refspec: read as both.
        refspecs = positional if repo_option else positional[1:]
        for key, value in git.config:
            # remote.*.mirror pushes every ref; remote.*.push and push.default say what a
            # push without refspecs sends (push.default=matching: read below).
            changes = key.endswith(".mirror") or (
                not refspecs and not (key == "push.default" and value != "")
            )
            if _PUSH_SETTING.fullmatch(key) and changes:
                return Verdict(uncertain=f"`{shown}`: the call sets {key}, which changes a push")
        if force and block_force:
            return Verdict(block=f"`{shown}` is a force push (it rewrites published history)")
        if every:
            hit = ", ".join(branches)
            return Verdict(block=f"`{shown}` pushes every branch, protected ones ({hit}) too")
        heads = _heads(cmd, git, call, env_git_dir)
        for spec in refspecs:
            if spec.startswith("+") and block_force:
                return Verdict(block=f"`{shown}`: +{spec[1:]} is a force push")
            src, colon, dst = spec.lstrip("+").partition(":")
            if colon and not src:
                delete = True
            target = dst if colon else src
            if target in ("HEAD", "@") or (not colon and src in ("HEAD", "@")):
                if heads is None:
                    return Verdict(uncertain=f"`{shown}`: which branch HEAD is cannot be read")
                found = [h for h in heads if protected(h)]
                if found:
                    return Verdict(block=f"`{shown}` pushes the protected branch {found[0]}")
                continue
            if protected(target):
                what = "deletes" if delete else "pushes to"
                return Verdict(block=f"`{shown}` {what} the protected branch {target}")
        if not refspecs and not tags_only:  # the current branch, as push.default has it
            if any(k == "push.default" and v == "matching" for k, v in git.config):
                return Verdict(block=f"`{shown}` pushes every branch both sides have (matching)")
            if heads is None:
                return Verdict(uncertain=f"`{shown}`: the current branch cannot be read")
            found = [h for h in heads if protected(h)]
            if found:
                return Verdict(block=f"`{shown}` pushes the protected branch {found[0]}")
        return GO_ON

    def check(call: Call) -> Verdict:
        reading = read_call(call)
        env_git_dir = _assigned(reading, "GIT_DIR")
        settings = _push_settings(reading)
        verdicts: list[Verdict] = []
        for cmd in reading.commands:
            name = _base(cmd.words[0])
            if name == "gh":
                verdicts.append(_gh_api(cmd, protected, block_force))
                continue
            if name == "git-push":
                git = _Git("push", cmd.words[1:], (), None, "")
            elif name in ("git", "hub"):
                git = _git_options(cmd.words)
            else:
                continue
            if git.uncertain:
                verdicts.append(Verdict(uncertain=f"`{cmd.shown()}`: {git.uncertain}"))
                continue
            if git.sub == "push":
                git = git._replace(config=(*settings, *git.config))
                verdicts.append(push(cmd, git, call, env_git_dir))
        return _first(verdicts, reading.unseen)

    return check


#: git settings that change what a push sends or where (set in the call before a push).
_PUSH_SETTING: Final = re.compile(r"push\.default|remote\..*\.(push|mirror)")


def _push_settings(reading: Reading) -> list[tuple[str, str]]:
    """The push settings a ``git config`` in the call makes (a value known only at run time
    as ``""``)."""
    out: list[tuple[str, str]] = []
    for cmd in reading.commands:
        if _base(cmd.words[0]) not in ("git", "hub"):
            continue
        git = _git_options(cmd.words)
        if git.sub != "config":
            continue
        rest = list(git.rest)
        if rest and rest[0] == "set":
            rest.pop(0)
        operands: list[str | None] = []
        i = 0
        while i < len(rest):
            w = rest[i]
            if w is not None and w.startswith("-"):
                i += 2 if w in ("-f", "--file", "--blob", "--type") else 1
                continue
            operands.append(w)
            i += 1
        if not operands or operands[0] is None:
            out.append(("push.default", ""))  # a key known only at run time: any of them
            continue
        key = operands[0].lower()
        if _PUSH_SETTING.fullmatch(key) and len(operands) > 1:
            out.append((key, operands[1] or ""))
    return out


def _gh_api(cmd: Command, protected: Callable[[str], bool], block_force: bool) -> Verdict:
    """``gh api`` writing a branch ref (``-X PATCH repos/o/r/git/refs/heads/main -F
    force=true``): the API's push."""
    words = cmd.words
    if len(words) < 2 or words[1] != "api":
        return GO_ON
    method, endpoint, fields = "GET", None, []
    i = 2
    while i < len(words):
        w = words[i]
        if w in ("-X", "--method") and i + 1 < len(words):
            method = (words[i + 1] or "?").upper()
            i += 2
        elif w in ("-f", "-F", "--field", "--raw-field") and i + 1 < len(words):
            fields.append(words[i + 1])
            method = "POST" if method == "GET" else method
            i += 2
        elif w is not None and w.startswith("--input"):
            method = "POST" if method == "GET" else method
            i += 1 if "=" in w else 2
        elif w is not None and w.startswith("-"):
            i += 1
        else:
            endpoint = endpoint or w
            if w is None:
                return Verdict(uncertain=f"`{cmd.shown()}`: an API path known only at run time")
            i += 1
    if method == "GET" or endpoint is None or "/git/refs" not in endpoint:
        return GO_ON
    ref = endpoint.partition("/git/refs/")[2] or next(
        (f.partition("=")[2] for f in fields if f and f.startswith("ref=")), ""
    )
    branch = ref.removeprefix("refs/").removeprefix("heads/")
    forced = any(f is not None and f.replace(" ", "") in ("force=true", "force=1") for f in fields)
    if forced and block_force:
        return Verdict(block=f"`{cmd.shown()}` force-updates {branch or 'a branch'}")
    if not branch or protected(branch):
        return Verdict(block=f"`{cmd.shown()}` writes the protected branch {branch or '?'}")
    return GO_ON


def _assigned(reading: Reading, name: str) -> str | None:
    """``GIT_DIR=...`` anywhere in the call (a prefix, ``export``, ``env``): its value, ""
    when it is known only at run time, None when there is none."""
    for key, value in reading.assignments:
        if key == name:
            return "" if value is None else value
    for cmd in reading.commands:
        for word in cmd.words:
            if word is not None and word.startswith(name + "="):
                return word.partition("=")[2]
    for raw in reading.dynamic:
        if raw.startswith(name + "="):
            return ""
    return None


def _heads(cmd: Command, git: _Git, call: Call, env_git_dir: str | None) -> list[str] | None:
    """The branch checked out in every repository the push may be run in (None: one cannot
    be read)."""
    if env_git_dir == "" or not cmd.cwds:
        return None
    out: list[str] = []
    for cwd in cmd.cwds:
        named = git.git_dir or env_git_dir
        gitdir = resolve(named, cwd, call.home) if named else find_git_dir(cwd)
        branch = None if gitdir is None else _head_branch(gitdir)
        if branch is None:
            return None
        out.append(branch)
    return out


# --- secret reads -----------------------------------------------------------------------------

#: Files that hold credentials: by name anywhere, and under the home directory.
SECRET_NAMES: Final = (
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    ".netrc",
    ".git-credentials",
    ".pgpass",
    ".npmrc",
    ".pypirc",
    "credentials.json",
    "service-account*.json",
)
#: Names that look like a secret but are templates by convention.
NOT_SECRET_NAMES: Final = (".env.example", ".env.sample", ".env.template", ".env.dist", "*.pub")
SECRET_HOME_DIRS: Final = (
    ".ssh",
    ".aws",
    ".config/gcloud",
    ".azure",
    ".kube",
    ".docker",
    ".gnupg",
    ".password-store",
    ".config/gh",
)
#: Programs that never read the content of what their arguments name: they list it, test it,
#: make, move out of the way or delete it, or take no paths at all (a secret named to them is
#: not read, nor is a word known only at run time). ``find`` is one unless it runs a command
#: on what it finds.
_NO_READ: Final = frozenset(
    """
    echo printf export unset set local declare readonly typeset true false : exit return sleep
    kill wait shift test [ [[ type which command hash mkdir rmdir touch rm cd pushd popd ls stat
    du tree file realpath readlink basename dirname chmod chown chgrp unlink shred pwd whoami id
    date uname env printenv tee
    """.split()
)
#: Programs that read files, never a directory's files (a directory given to them reads
#: nothing).
_FLAT_READERS: Final = frozenset(
    """
    cat head tail less more base64 base32 xxd od hexdump strings wc md5sum sha1sum sha224sum
    sha256sum sha384sum sha512sum shasum cksum b2sum sum sort uniq cut nl tac rev fold fmt pr
    jq yq awk gawk mawk sed gsed tr paste join comm cmp iconv column expand unexpand look
    source . vi vim nvim nano emacs code open xdg-open bat
    """.split()
)
#: Programs that read a directory's files only with one of these options (else flat).
_RECURSIVE_WITH: Final[dict[str, frozenset[str]]] = {
    "grep": frozenset(
        {"-r", "-R", "--recursive", "--dereference-recursive", "-d", "--directories"}
    ),
    "egrep": frozenset({"-r", "-R", "--recursive", "--dereference-recursive"}),
    "fgrep": frozenset({"-r", "-R", "--recursive", "--dereference-recursive"}),
    "zgrep": frozenset({"-r", "-R", "--recursive"}),
    "cp": frozenset({"-r", "-R", "-a", "--recursive", "--archive"}),
    "scp": frozenset({"-r"}),
    "rsync": frozenset({"-r", "-a", "--recursive", "--archive"}),
    "zip": frozenset({"-r", "-R", "--recurse-paths", "--recurse-patterns"}),
    "diff": frozenset({"-r", "--recursive"}),
}
#: Search programs whose first operand is the pattern, not a path (unless one of the pattern
#: options gives it): their options taking a value, and those giving the pattern.
_SEARCHERS: Final[dict[str, tuple[frozenset[str], frozenset[str]]]] = {
    name: (
        frozenset(
            """
            -e -f -m -A -B -C -d -D --regexp --file --max-count --after-context
            --before-context --context --directories --devices --include --exclude
            --exclude-dir --exclude-from --label --binary-files --color --colour
            """.split()
        ),
        frozenset({"-e", "-f", "--regexp", "--file"}),
    )
    for name in ("grep", "egrep", "fgrep", "zgrep")
} | {
    "rg": (
        frozenset(
            """
            -e -f -g -t -T -m -A -B -C -j -M -E -r -d --regexp --file --glob --iglob --type
            --type-not --max-count --after-context --before-context --context --threads
            --max-columns --encoding --replace --max-depth --sort --sortr --color --colors
            --type-add --max-filesize --pre --pre-glob --ignore-file --path-separator
            """.split()
        ),
        frozenset({"-e", "-f", "--regexp", "--file"}),
    ),
    "ag": (
        frozenset({"-G", "-A", "-B", "-C", "-m", "--ignore", "--file-search-regex"}),
        frozenset(),
    ),
    "ack": (frozenset({"-A", "-B", "-C", "-m", "--type", "--ignore-dir"}), frozenset()),
}
#: Options of a search (and of tar, rsync, zip) that limit it to the names matching a glob:
#: limited to secret names, a search over a directory holding them reads them.
_INCLUDE_OPTIONS: Final = frozenset(
    {"--include", "-g", "--glob", "--iglob", "-G", "--file-search-regex", "--wildcards"}
)
#: git subcommands that never print the content of the paths they are given.
_GIT_NO_CONTENT: Final = frozenset(
    """
    rm check-ignore check-attr ls-files status add mv restore reset checkout switch clean
    update-index stage
    """.split()
)
#: Programs whose job is to print credentials: (program, the words that make it do so).
_CREDENTIAL_PRINTERS: Final = (
    ("gpg", ("--export-secret-keys",), "exports private keys"),
    ("gpg", ("--export-secret-subkeys",), "exports private keys"),
    ("gpg2", ("--export-secret-keys",), "exports private keys"),
    ("gh", ("auth", "token"), "prints the GitHub token"),
    ("git", ("credential", "fill"), "prints stored git credentials"),
    ("security", ("find-generic-password",), "reads the keychain"),
    ("security", ("find-internet-password",), "reads the keychain"),
    ("aws", ("configure", "export-credentials"), "prints AWS credentials"),
    ("aws", ("configure", "get"), "prints AWS configuration, keys included"),
    ("kubectl", ("config", "view", "--raw"), "prints cluster credentials"),
    ("pass", ("show",), "prints a password"),
    ("op", ("read",), "prints a 1Password secret"),
    ("vault", ("kv", "get"), "prints a Vault secret"),
    ("vault", ("read",), "prints a Vault secret"),
)


def _secret_reads(params: Mapping[str, tuple[str, ...]]) -> Check:
    names = (*SECRET_NAMES, *params["names"])
    home_dirs = (*SECRET_HOME_DIRS, *params["home_dirs"])
    named = re.compile("|".join(fnmatch.translate(p) for p in names))
    templates = re.compile("|".join(fnmatch.translate(p) for p in NOT_SECRET_NAMES))

    @functools.lru_cache(maxsize=8)
    def roots(home: str) -> tuple[tuple[str, str], ...]:
        """Each secret directory under ``home``: as configured, and as a path."""
        return tuple((d, posixpath.join(home, d)) for d in home_dirs)

    def secret(word: str, cwd: str, call: Call, *, deep: bool = False) -> str | None:
        """Why ``word`` names a secret (a file, or a directory holding them, as written or
        with symlinks followed; with ``deep``, a directory above one too), or None."""
        path = resolve(word, cwd, call.home)
        if path is None:
            return None
        for form in dict.fromkeys((path, _real_read(path))):
            name = posixpath.basename(form)
            if templates.match(name):
                continue
            if named.match(name):
                return "a credentials file"
            for directory, root in roots(call.home):
                if form == root or form.startswith(root + "/"):
                    return f"under ~/{directory}"
                if deep and (form == "/" or root.startswith(form.rstrip("/") + "/")):
                    return f"everything under it, ~/{directory} included"
        return None

    def glob_secret(patterns: tuple[str, ...], cwd: str, call: Call, deep: bool) -> str | None:
        """Which secret a glob may name (a secret file's name, a name inside a secret
        directory, with ``deep`` a directory on the way to one), or None."""
        for pattern in patterns:
            if shell_globs.is_literal(pattern):
                why = secret(shell_globs.literal(pattern), cwd, call, deep=deep)
                if why is not None:
                    return why
                continue
            parts = shell_globs.split(pattern)
            if parts is None:
                return "names in directories known only at run time"
            directory, last = parts
            where = resolve(directory, cwd, call.home)
            if where is None:
                return "names in a directory known only at run time"
            for form in dict.fromkeys((where, _real(where))):
                inside = secret(form, "/", call)
                if inside is not None and not any(
                    pattern.endswith(p.lstrip("*")) for p in NOT_SECRET_NAMES if p[0] == "*"
                ):
                    return f"files {inside}"
                hit = next((n for n in names if shell_globs.may_meet(last, n)), None)
                if hit is not None:
                    return f"{hit} (a credentials file)"
                if deep:
                    below = form.rstrip("/") + "/"
                    for directory in home_dirs:
                        root = posixpath.join(call.home, directory)
                        if root.startswith(below) and shell_globs.may_match(
                            last, root[len(below) :].partition("/")[0]
                        ):
                            return f"~/{directory}"
        return None

    def tool_secret(pattern: str, cwd: str, call: Call, *, deep: bool) -> Verdict | None:
        """What a read or search tool's path or glob reaches of the secrets (``None``:
        nothing). A tool's glob is read as bash reads one, ``**`` at any depth: its ``*`` does
        not reach a hidden name (ripgrep, under Claude Code's and Copilot CLI's search,
        skips hidden files); a name pattern that may be a secret's is uncertain, as ``cat
        .env*`` is; a directory it walks that is or holds a secret directory blocks. Without
        ``deep`` (a tool reading the one file it names) the path is a name."""
        if not deep:  # a file tool's path is a name, not a glob
            why = secret(pattern, cwd, call)
            return None if why is None else Verdict(block=f"{call.tool} reads {pattern} ({why})")
        parts = pattern.split("/")
        fixed = 0
        while fixed < len(parts) - 1 and shell_globs.is_literal(parts[fixed]):
            fixed += 1
        if fixed == len(parts) - 1 and shell_globs.is_literal(parts[-1]):
            why = secret(pattern, cwd, call, deep=deep)
            return None if why is None else Verdict(block=f"{call.tool} reads {pattern} ({why})")
        base = "/".join(parts[:fixed]) or ("/" if pattern.startswith("/") else ".")
        why = secret(base, cwd, call, deep=True)
        if why is not None:
            return Verdict(block=f"{call.tool} reads {pattern} ({why})")
        last = parts[-1]
        if templates.match(last) is None:
            hit = next((n for n in names if shell_globs.may_meet(last, n)), None)
            if hit is not None:
                return Verdict(uncertain=f"{call.tool}'s {pattern} may read {hit} files")
        return None

    def printer(cmd: Command) -> str | None:
        words = [w for w in cmd.words if w is not None]
        name = _base(cmd.words[0])
        for program, needed, why in _CREDENTIAL_PRINTERS:
            if name == program and all(n in words[1:] for n in needed):
                return why
        return None

    def shell_check(call: Call) -> Verdict:
        reading = read_call(call)
        uncertain = ""
        for cmd in reading.commands:
            name = _base(cmd.words[0])
            shown = cmd.shown()
            why = printer(cmd)
            if why is not None:
                return Verdict(block=f"`{shown}` {why}")
            if name in _NO_READ or (name in ("find", "gfind") and not _find_runs(cmd.words)):
                continue
            if name in ("git", "hub") and _git_options(cmd.words).sub in _GIT_NO_CONTENT:
                continue
            deep = _may_recurse(cmd)
            skip = _not_read(cmd)
            cwds = cmd.cwds or (call.cwd,)
            dirs = _chdir_options(cmd, cwds, call.home)
            for at, word in enumerate(cmd.own_words()[1:], 1):
                if at in skip:
                    continue
                if word is None:
                    patterns = cmd.patterns(at)
                    found = None
                    if patterns is not None:
                        for cwd in dirs:
                            found = found or glob_secret(patterns, cwd, call, deep)
                    if patterns is None or found:
                        uncertain = uncertain or (
                            f"`{shown}` may read {found}"
                            if found
                            else f"`{shown}`: a word known only at run time may name a secret"
                        )
                    continue
                for part in _path_parts(word, cmd):
                    if part.startswith("-"):
                        continue  # an option (its value after = or @ is a part of its own)
                    for cwd in dirs:
                        why = secret(part, cwd, call, deep=deep)
                        if why is not None:
                            return Verdict(block=f"`{shown}` reads {part} ({why})")
                if name in _SEARCHERS or deep:
                    before = cmd.words[at - 1]
                    joined = f"{before}={word}" if before in _INCLUDE_OPTIONS else word
                    hit = _includes_secrets(joined, names)
                    if hit is not None:
                        return Verdict(block=f"`{shown}` reads only {hit} files")
            if not cmd.cwds and not uncertain:
                relative = [w for w in cmd.words[1:] if w and not w.startswith(("/", "~", "-"))]
                if relative:
                    uncertain = f"`{shown}` runs in a directory known only at run time"
        written = collections.Counter(w for w, _ in reading.written)
        places = {c for cmd in reading.commands for c in cmd.cwds} or {call.cwd}
        for word in reading.other_words:
            if written[word] > 0:  # a `>` target is written, not read
                written[word] -= 1
                continue
            if word is None:
                continue
            for cwd in places:
                why = secret(word, cwd, call)
                if why is not None:
                    return Verdict(block=f"the command reads {word} ({why})")
        return Verdict(uncertain=uncertain or (reading.unseen[0] if reading.unseen else ""))

    def check(call: Call) -> Verdict:
        kinds = call_kinds(call.tool, call.args)
        doubt = GO_ON
        if not kinds or kinds & {"read", "write"}:
            paths = call_paths(call.tool, call.args)
            if paths is None:
                return Verdict(uncertain="a path of the call cannot be read")
            # A search, or a read of many files, reads what is under a directory it is given.
            deep = canonical_tool(call.tool) == "grep" or _READS_MANY.intersection(
                tool_names(call.tool)
            )
            for path in paths:
                found = tool_secret(path, call.cwd, call, deep=bool(deep))
                if found is not None and found.block:
                    return found
                doubt = doubt if found is None or doubt.uncertain else found
        if kinds and "shell" not in kinds:
            return doubt
        verdict = shell_check(call)
        return verdict if verdict.block or verdict.uncertain else doubt

    return check


#: Read tools that read every file under a directory or glob they are given.
_READS_MANY: Final = frozenset({"read_many_files"})


def _find_runs(words: _Words) -> bool:
    """Whether find runs a command on (or writes out) what it finds."""
    return any(w in _FIND_ACTIONS or (w or "").startswith("-fprint") or w == "-fls" for w in words)


def _may_recurse(cmd: Command) -> bool:
    """Whether the program may read the files under a directory it is given: closed world,
    every program may but the flat readers (and those needing an option for it, without)."""
    name = _base(cmd.words[0])
    if name in _FLAT_READERS:
        return False
    options = _RECURSIVE_WITH.get(name)
    if options is None:
        return True
    for word in cmd.words[1:]:
        if word is None:
            return True
        key = word.partition("=")[0]
        if key in options:
            return True
        short = word.startswith("-") and not word.startswith("--")
        if short and any(f"-{c}" in options for c in word[1:]):
            return True
    return False


def _not_read(cmd: Command) -> frozenset[int]:
    """The positions of words the program does not read as paths: a search's pattern, the
    destination of ``cp``/``mv``/``install``/``ln``."""
    name = _base(cmd.words[0])
    words = cmd.words
    if name in _SEARCHERS:
        valued, pattern_opts = _SEARCHERS[name]
        given = False
        skip: set[int] = set()
        i = 1
        while i < len(words):
            w = words[i]
            if w is None:
                return frozenset(skip)  # an option or the pattern: cannot say which
            if w == "--":
                i += 1
                break
            if w.startswith("-") and w != "-":
                key = w.partition("=")[0]
                short_value = not w.startswith("--") and len(w) > 2 and w[:2] in valued
                if key in pattern_opts or (short_value and w[:2] in pattern_opts):
                    given = True
                if key in valued and "=" not in w and not short_value:
                    if key in ("-e", "--regexp"):
                        skip.add(i + 1)  # the pattern, not a path
                    i += 2
                    continue
                i += 1
                continue
            break
        if not given and i < len(words):
            skip.add(i)
        return frozenset(skip)
    if name in ("cp", "mv", "install", "ginstall", "gcp", "gmv"):
        if any(
            w is not None and (w == "-t" or w.startswith(("--target-directory", "-t")))
            for w in words
        ):
            return frozenset()
        operands = [i for i, w in enumerate(words[1:], 1) if w is None or not w.startswith("-")]
        return frozenset(operands[-1:]) if len(operands) > 1 else frozenset()
    return frozenset()


def _chdir_options(cmd: Command, cwds: tuple[str, ...], home: str) -> tuple[str, ...]:
    """The directories a command's operands are relative to: its own, and for ``tar`` each
    ``-C``/``--directory`` it changes to."""
    if _base(cmd.words[0]) not in ("tar", "gtar", "bsdtar"):
        return cwds
    out = list(cwds)
    words = cmd.words
    for i, w in enumerate(words):
        target: str | None = None
        if w in ("-C", "--directory") and i + 1 < len(words):
            target = words[i + 1]
        elif w is not None and w.startswith("--directory="):
            target = w.partition("=")[2]
        elif w is not None and w.startswith("-C") and len(w) > 2:
            target = w[2:]
        if target is not None:
            for cwd in cwds:
                found = resolve(target, cwd, home)
                if found is not None:
                    out.append(found)
    return tuple(dict.fromkeys(out))


def _includes_secrets(word: str, names: Sequence[str]) -> str | None:
    """The secret name a search's ``--include=GLOB`` (``-g GLOB``) limits it to, or None."""
    key, eq, value = word.partition("=")
    if not eq or key not in _INCLUDE_OPTIONS:
        return None
    glob = value.lstrip("!").rpartition("/")[2]
    if not glob or glob.startswith("!"):
        return None
    return next((n for n in names if shell_globs.may_meet(glob, n) and "." in n), None)


def _path_parts(word: str, cmd: Command) -> Iterable[str]:
    """The paths a word may name: itself, what follows ``=`` (``--env-file=.env``,
    ``if=~/.ssh/id_rsa``), what follows ``@`` (``curl -d @.env``, ``-F f=@key.pem``), each
    side of a ``:`` (``docker run -v ~/.ssh:/root/.ssh``) and, for git, the path of a
    ``rev:path`` (``git show HEAD:.env``)."""
    yield word
    if "=" in word:
        yield word.partition("=")[2]
    if "@" in word:
        after = word.rpartition("@")[2]
        if after:
            yield after
    if ":" in word:
        yield from (part for part in word.split(":") if part)
    if ":" in word and _base(cmd.words[0]) in ("git", "hub"):
        path = word.partition(":")[2]
        if path:
            yield path


# --- downloads piped into a shell -------------------------------------------------------------

DOWNLOADERS: Final = frozenset(
    {
        "curl",
        "wget",
        "fetch",
        "aria2c",
        "http",
        "https",
        "xh",
        "lwp-request",
        "GET",
        "wget2",
        "nc",
        "ncat",
        "netcat",
        "socat",
        "irm",
        "iwr",
        "invoke-webrequest",
        "invoke-restmethod",
    }
)
#: PowerShell's runners of a string as code.
_STRING_RUNNERS: Final = frozenset({"iex", "invoke-expression"})


def _pipe_to_shell(params: Mapping[str, tuple[str, ...]]) -> Check:
    del params

    def check(call: Call) -> Verdict:
        from .shell import code_source

        reading = read_call(call)
        names = {_base(c.words[0]).lower() for c in reading.commands}
        fetched = sorted(names & DOWNLOADERS)
        if fetched:
            for cmd in reading.commands:
                source = code_source(cmd.words)
                unseen = source is not None and source.kind in ("stdin", "dynamic")
                if unseen or _base(cmd.words[0]).lower() in _STRING_RUNNERS:
                    why = source.why if source is not None and source.why else "code it is given"
                    return Verdict(
                        block=f"it runs what {fetched[0]} downloads (`{cmd.shown()}`: {why}): "
                        "download the script to a file, read it, then run it"
                    )
            for doubt in reading.unseen:
                if any(u in doubt for u in ("stdin", "dynamic", "cannot see", "eval")):
                    return Verdict(
                        block=f"it runs what {fetched[0]} downloads ({doubt}): download the "
                        "script to a file, read it, then run it"
                    )
            ran = _runs_download(reading, call)
            if ran is not None:
                return Verdict(
                    block=f"it downloads {ran} and runs it in the same call, unread: download "
                    "the script to a file, read it, then run it"
                )
        # Nothing downloads: code read from stdin is what the call's own (read) commands
        # print, or a file's, which no hook sees (`cat script.sh | sh` is `sh script.sh`).
        doubts = [d for d in reading.unseen if "stdin" not in d]
        return Verdict(uncertain=doubts[0] if doubts else "")

    return check


def _downloads(cmd: Command) -> list[str | None]:
    """The files a downloader writes (``curl -o f``, ``curl -O url``, ``wget url``, ``wget -O
    f``; None: a name known only at run time)."""
    name = _base(cmd.words[0]).lower()
    words = cmd.words
    out: list[str | None] = []
    urls = [w for w in words[1:] if w is not None and "://" in w]
    remote = [posixpath.basename(u.split("?")[0].rstrip("/")) or "index.html" for u in urls]
    named = False
    i = 1
    while i < len(words):
        w = words[i]
        nxt = words[i + 1] if i + 1 < len(words) else None
        if w is None:
            i += 1
            continue
        if w in ("--output", "--output-document", "--out"):
            out.append(nxt)
            named = True
            i += 2
            continue
        if w.startswith(("--output=", "--output-document=", "--out=")):
            out.append(w.partition("=")[2])
            named = True
        elif w in ("--remote-name", "--remote-name-all"):
            out += remote
            named = True
        elif w.startswith("-") and not w.startswith("--"):
            for k, letter in enumerate(w[1:], 1):
                if letter == "o" or (letter == "O" and name.startswith("wget")):
                    value = w[k + 1 :]
                    out.append(value or nxt)
                    named = True
                    i += 0 if value else 1
                    break
                if letter == "O":
                    out += remote
                    named = True
        i += 1
    if name.startswith("wget") and not named:
        out += remote
    return out


def _runs_download(reading: Reading, call: Call) -> str | None:
    """A file the call downloads and then runs (``curl -o i.sh URL && sh i.sh``, ``wget URL;
    ./install.sh``), by the name it is saved under; None when it runs none."""
    from .shell import code_source

    saved: dict[str, str] = {}
    for cmd in reading.commands:
        if _base(cmd.words[0]).lower() not in DOWNLOADERS:
            continue
        for file in _downloads(cmd):
            for cwd in cmd.cwds:
                path = None if file is None else resolve(file, cwd, call.home)
                if path is not None:
                    saved[path] = file or ""
    for word, cwds in reading.written:  # `curl URL > i.sh`
        for cwd in cwds:
            path = None if word is None else resolve(word, cwd, call.home)
            if path is not None:
                saved[path] = word or ""
    if not saved:
        return None
    for cmd in reading.commands:
        source = code_source(cmd.words)
        runs = [cmd.words[0]] if cmd.words[0] and "/" in cmd.words[0] else []
        if source is not None and source.kind == "file":
            runs.append(source.value)
        for ran in runs:
            for cwd in cmd.cwds:
                path = None if ran is None else resolve(ran, cwd, call.home)
                if path in saved:
                    return saved[path]
    return None


# --- writes outside the workspace -------------------------------------------------------------

#: Where writing is never a write to a file of the machine.
_DEVICES: Final = ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd/")
#: Programs that write the file they name last (a destination), or by option.
_WRITERS_LAST: Final = frozenset({"cp", "mv", "install", "ln", "rsync", "scp"})
_WRITERS_ALL: Final = frozenset({"touch", "mkdir", "tee", "truncate", "chmod", "chown", "chgrp"})


def _writes_outside(params: Mapping[str, tuple[str, ...]]) -> Check:
    allowed = params["allow"]

    def inside(path: str, cwd: str, call: Call) -> bool:
        resolved = resolve(path, cwd, call.home)
        if resolved is None:
            return False
        if resolved.startswith(_DEVICES) or resolved == "/dev/fd":
            return True
        for root in (call.workspace, *allowed):
            if not root:
                continue
            base = resolve(root, call.workspace or "/", call.home)
            if base is None:
                continue
            if resolved == base or resolved.startswith(base.rstrip("/") + "/"):
                # Lexically inside; a symlink inside pointing out is followed too.
                real, real_base = _real(resolved), _real(base)
                return real == real_base or real.startswith(real_base.rstrip("/") + "/")
        return False

    def shell_targets(cmd: Command) -> list[str | None]:
        name = _base(cmd.words[0])
        args = [w for w in cmd.words[1:] if w is None or not w.startswith("-")]
        if name in _WRITERS_ALL:
            return args
        if name in _WRITERS_LAST and args:
            return [args[-1]]
        if name == "dd":
            return [w.partition("=")[2] for w in cmd.words[1:] if w and w.startswith("of=")]
        if name in ("sed", "gsed") and any(
            w and (w == "-i" or w.startswith(("-i", "--in-place"))) for w in cmd.words
        ):
            return args[1:]
        return []

    def check(call: Call) -> Verdict:
        kinds = call_kinds(call.tool, call.args)
        if not kinds or kinds & {"write", "delete"}:
            paths = call_paths(call.tool, call.args)
            if paths is None:
                return Verdict(uncertain="a path of the call cannot be read")
            for path in paths:
                if path and not inside(path, call.cwd, call):
                    return Verdict(
                        block=f"{call.tool} writes {path}, outside the workspace {call.workspace}"
                    )
        if kinds and "shell" not in kinds:
            return GO_ON
        reading = read_call(call)
        uncertain = ""
        for cmd in reading.commands:
            for target in shell_targets(cmd):
                if target is None or not cmd.cwds:
                    uncertain = uncertain or f"`{cmd.shown()}` writes a path known only at run time"
                    continue
                for cwd in cmd.cwds:
                    if not inside(target, cwd, call):
                        return Verdict(
                            block=f"`{cmd.shown()}` writes {target}, outside the workspace "
                            f"{call.workspace}"
                        )
        for word, cwds in reading.written:
            if word is None or not cwds:
                uncertain = uncertain or "a redirect writes to a path known only at run time"
                continue
            for cwd in cwds:
                if not inside(word, cwd, call):
                    return Verdict(
                        block=f"the command writes {word}, outside the workspace {call.workspace}"
                    )
        return Verdict(uncertain=uncertain or (reading.unseen[0] if reading.unseen else ""))

    return check


# --- read-only auto-approve -------------------------------------------------------------------


def _approve_read_only(params: Mapping[str, tuple[str, ...]]) -> Check:
    del params
    from .read_only import approve_read_only

    return approve_read_only(_blocking_checks)


@functools.cache
def _blocking_checks() -> tuple[Check, ...]:
    """Every guard that blocks, with its default parameters: what an approval must pass."""
    return tuple(build(name, {})[0] for name, spec in GUARDS.items() if not spec.approves)


# --- the catalogue ----------------------------------------------------------------------------

GUARDS: Final[dict[str, GuardSpec]] = {
    "destructive_delete": GuardSpec(
        description="recursive deletes of /, a top-level directory, your home, the workspace "
        "or a directory above them (rm in any flag order or long form, --no-preserve-root, "
        "find -delete / -exec rm, rsync --delete), in whatever directory cd, env -C or a "
        "tool's workdir puts them, through sudo, env, xargs, bash -c, eval ...",
        on_uncertain="block",
        params={"protect": Param((), "more paths no recursive delete may name")},
        make=_destructive_delete,
    ),
    "protected_push": GuardSpec(
        description="force pushes (-f, --force, --force-with-lease, +refspec, --mirror) and "
        "pushes to or deletes of protected branches (named, HEAD:main, a wildcard refspec, the "
        "current branch of whatever repository -C, cd or --git-dir names), options anywhere",
        on_uncertain="block",
        params={
            "branches": Param(("main", "master"), "protected branch names (globs)"),
            "force": Param(
                ("block",), '"block" force pushes to any branch, or "off"', ("block", "off")
            ),
        },
        make=_protected_push,
    ),
    "secret_reads": GuardSpec(
        description="reading credentials: .env files, keys, ~/.ssh, ~/.aws, ~/.config/gcloud "
        "(named whole or inside), netrc and token files, by a read or search tool or named in "
        "a shell command (curl @file, git show HEAD:.env, a symlink pointing at one)",
        on_uncertain="block",
        params={
            "names": Param((), "more file-name globs that hold secrets"),
            "home_dirs": Param((), "more directories under ~ that hold secrets"),
        },
        make=_secret_reads,
    ),
    "pipe_to_shell": GuardSpec(
        description="running a download unseen: curl/wget piped into a shell or interpreter, "
        'bash <(curl ...), python3 <(curl ...), sh -c "$(curl ...)", xargs sh -c, eval or '
        "source of a download, PowerShell irm | iex",
        on_uncertain="block",
        params={},
        make=_pipe_to_shell,
    ),
    "writes_outside_workspace": GuardSpec(
        description="a write or edit tool, a patch, or a shell redirect or writing program "
        "(cp, mv, tee, touch, mkdir, dd of=, sed -i ...) writing outside the workspace "
        "(symlinks followed)",
        on_uncertain="block",
        params={"allow": Param(("/tmp",), "directories besides the workspace writes may go to")},
        make=_writes_outside,
    ),
    "approve_read_only": GuardSpec(
        description="opt-in: the agent's allow (no permission prompt) for a shell call proven "
        "read-only -- ls, cat/head/tail of files that are not secrets, git status/log/diff/"
        "show, grep/rg, find without actions ... -- that every other guard lets go on; "
        "anything else gets no decision (it never blocks)",
        on_uncertain="allow",
        params={},
        make=_approve_read_only,
        approves=True,
    ),
}

#: Guards read tool calls: the events that carry one and can block.
GUARD_EVENTS: Final = frozenset({"pre_tool", "permission_request"})


def check_params(name: str, params: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What is wrong with a guard's name and parameters, as (field, message) pairs; ``field``
    is "" for the name, else the parameter (``on_uncertain`` included)."""
    spec = GUARDS.get(name)
    if spec is None:
        return [("", f"unknown built-in guard {name!r}")]
    problems: list[tuple[str, str]] = []
    for key, value in params.items():
        if key == "on_uncertain":
            if spec.approves:
                problems.append(
                    (
                        key,
                        f"{name} never blocks: what it cannot prove read-only gets no "
                        "decision, so on_uncertain does not apply",
                    )
                )
            elif value not in ON_UNCERTAIN:
                problems.append((key, f'must be "block", "warn" or "allow", not {value!r}'))
            continue
        param = spec.params.get(key)
        if param is None:
            known = ", ".join(sorted([*spec.params, "on_uncertain"]))
            problems.append((key, f"unknown parameter of {name} (known: {known})"))
        elif param.choices:
            if value not in param.choices:
                one_of = " or ".join(f'"{c}"' for c in param.choices)
                problems.append((key, f"must be {one_of}, not {value!r}"))
        elif not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            problems.append((key, "must be a list of strings"))
    return problems


def build(name: str, params: Mapping[str, Any]) -> tuple[Check, OnUncertain]:
    """The check for a guard with validated ``params``, and what an uncertain call gets."""
    spec = GUARDS[name]
    values: dict[str, tuple[str, ...]] = {}
    for key, param in spec.params.items():
        value = params.get(key, param.default)
        values[key] = (value,) if isinstance(value, str) else tuple(value)
    on_uncertain = params.get("on_uncertain", spec.on_uncertain)
    return spec.make(values), on_uncertain
