"""``builtin = "approve_read_only"``: the agent's allow for a shell call proven read-only
(docs/builtin-guards.md).

The other built-in guards block what they prove dangerous; this one approves what it proves
harmless, on the same reading of the call (:func:`~.guards.read_call`) and the same rules.
Closed world: it approves only when it read every part of the command line and each part is
in its table -- every simple command a program of :data:`READ_ONLY` (a bare name, not a path),
its options and operands held to that program's row, no word known only at run time but a
glob that cannot expand to an option, no redirect writing a file but ``/dev/null`` nor one
from a network socket (``/dev/tcp/...``) or a run-time name, no variable assignment, no
function defined, nothing the reader could not read -- and when every other built-in guard,
with its default parameters, lets the call go on without a doubt (so a secret read, a write,
a download run, a push or a delete is never approved: those guards' rules, not a copy of
them). Anything else gets no decision: this guard never blocks.

What it cannot see is what no hook sees (docs/builtin-guards.md): a program's own
configuration -- a repository's ``core.fsmonitor`` or diff driver run by ``git status`` /
``git diff``, ``PATH`` pointing at a program of the same name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final, NamedTuple

from .guards import (
    GO_ON,
    Call,
    Check,
    Command,
    Verdict,
    _base,
    _find_runs,
    _git_options,
    read_call,
)
from .ifrules import call_kinds, call_scripts

_Words = tuple[str | None, ...]


class Row(NamedTuple):
    """What one program may be given and stay read-only."""

    #: Long options that write or run something (``--output``): refused as written, with a
    #: value, and as any prefix of theirs (GNU getopt and git take an unambiguous prefix).
    long: frozenset[str] = frozenset()
    #: Short options that do (``-o``), in any cluster.
    short: str = ""
    #: Words that do wherever they stand (find's actions).
    words: frozenset[str] = frozenset()
    #: At most this many operands (``uniq IN OUT`` writes OUT); None: any.
    operands: int | None = None
    #: A check of the whole argv instead (git's subcommands): each glob as ``./``.
    argv: Callable[[tuple[str, ...]], bool] | None = None


_FREE: Final = Row()
#: bash's network redirects: ``< /dev/tcp/host/port`` opens a connection.
_SOCKETS: Final = ("/dev/tcp/", "/dev/udp/")

#: ``git`` global options a read-only command may carry (``-c``, ``--exec-path``,
#: ``--git-dir`` ... may not).
_GIT_GLOBAL: Final = frozenset({"--no-pager", "-P", "--no-optional-locks", "--no-replace-objects"})
#: Options of git's reading subcommands that write a file or run a program.
_GIT_LONG: Final = frozenset({"--output", "--ext-diff", "--open-files-in-pager", "--exec"})
#: The listing forms of git's subcommands that also write (``git branch x`` makes one).
_GIT_LISTING: Final[dict[str, frozenset[str]]] = {
    "branch": frozenset(
        {"-a", "-r", "-v", "-vv", "--all", "--remotes", "--verbose", "--show-current"}
    ),
    "tag": frozenset({"-n"}),
    "remote": frozenset({"-v", "--verbose"}),
}
#: git subcommands that read, with the first word they must have (None: any, or none).
_GIT_READS: Final[dict[str, frozenset[str] | None]] = {
    "status": None,
    "log": None,
    "diff": None,
    "show": None,
    "blame": None,
    "shortlog": None,
    "describe": None,
    "grep": None,
    "ls-files": None,
    "ls-tree": None,
    "rev-parse": None,
    "rev-list": None,
    "merge-base": None,
    "branch": None,
    "tag": None,
    "remote": None,
    "stash": frozenset({"list", "show"}),
    "worktree": frozenset({"list"}),
    "reflog": frozenset({"show"}),
}


def _git(words: tuple[str, ...]) -> bool:
    """``git [-C dir] [--no-pager] <reading subcommand> ...`` with nothing that writes."""
    git = _git_options(words)
    if git.uncertain or git.sub is None or git.config or git.git_dir is not None:
        return False
    i = 1
    while i < len(words) and words[i] != git.sub:
        if words[i] == "-C":
            i += 2
        elif words[i] in _GIT_GLOBAL:
            i += 1
        else:
            return False
    sub, rest = git.sub, tuple(w for w in git.rest if w is not None)
    if sub not in _GIT_READS:
        return False
    first = _GIT_READS[sub]
    if first is not None and (not rest or rest[0] not in first):
        return False  # `git stash` alone stashes
    if not _options_ok(rest, Row(long=_GIT_LONG, short="O" if sub == "grep" else "")):
        return False
    listing = _GIT_LISTING.get(sub)
    if listing is None:
        return True
    if sub != "remote" and any(w in ("-l", "--list") for w in rest):
        # A listing whose operands are patterns.
        return all(w in listing or w in ("-l", "--list") or not w.startswith("-") for w in rest)
    return all(w in listing for w in rest)


#: The programs it approves, each with what it may be given. Every one only reads (files,
#: the repository, the system's state) and prints; what makes one write or run something is
#: refused in its row. A program not here -- a wrapper (``sudo``, ``env``, ``command``,
#: ``exec``, ``xargs``), an interpreter, an editor, a pager, ``sed``/``awk``, a program that
#: prints the environment (``env``, ``printenv``, ``jq -n env``: tokens live there) -- is not
#: approved.
READ_ONLY: Final[Mapping[str, Row]] = {
    **dict.fromkeys(
        """
        ls cat head tail wc pwd echo stat du df basename dirname realpath readlink cut tr nl
        rev tac comm join paste fold column md5sum sha1sum sha256sum sha512sum cksum diff cmp
        grep egrep fgrep true false test [ which type whoami id uname cd
        """.split(),
        _FREE,
    ),
    "printf": Row(short="v"),  # -v VAR assigns a variable
    "sort": Row(long=frozenset({"--output", "--compress-program"}), short="o"),
    "uniq": Row(operands=1),  # uniq IN OUT writes OUT
    "tree": Row(short="o"),  # -o FILE writes the listing there
    "file": Row(long=frozenset({"--compile"}), short="C"),  # -C writes a magic file
    "date": Row(long=frozenset({"--set"}), short="s"),  # -s sets the clock
    "rg": Row(long=frozenset({"--pre"})),  # --pre runs a program on every file
    "find": Row(words=frozenset({"-delete"})),  # and no action: see _proven
    "git": Row(argv=_git),
}


def _options_ok(args: tuple[str, ...], row: Row) -> bool:
    """Whether ``args`` hold none of ``row``'s refused options, and no more operands than it
    takes."""
    operands = 0
    options_done = False
    for word in args:
        if word in row.words:
            return False
        if options_done or word == "-" or not word.startswith("-"):
            operands += 1
            continue
        if word == "--":
            options_done = True
            continue
        if word.startswith("--"):
            name = word.partition("=")[0]
            if any(option.startswith(name) for option in row.long):
                return False
        elif any(letter in row.short for letter in word[1:]):
            return False
    return row.operands is None or operands <= row.operands


def _proven(cmd: Command) -> bool:
    """Whether ``cmd`` is a program of the table, given only what keeps it read-only."""
    name = cmd.words[0] or ""
    row = READ_ONLY.get(name)
    if row is None or cmd.open_tail or cmd.runs_from:
        return False
    for at, word in enumerate(cmd.words[1:], 1):
        if word is None:
            # A glob is read-only when every name it may become starts as written: none of
            # them can then be an option (`*.py` may expand to `--output=x.py`; `./*.py` not).
            patterns = cmd.patterns(at)
            if patterns is None or any(not p or p[0] in "*?[-" for p in patterns):
                return False
    static = tuple(w if w is not None else "./" for w in cmd.words[1:])
    if name == "find" and _find_runs(cmd.words):
        return False
    if row.argv is not None:
        return row.argv((name, *static))
    return _options_ok(static, row)


def approve_read_only(others: Callable[[], tuple[Check, ...]]) -> Check:
    """The check: ``others`` gives the other built-in guards' checks (default parameters),
    each of which must let the call go on without a doubt."""

    def check(call: Call) -> Verdict:
        kinds = call_kinds(call.tool, call.args)
        if kinds != {"shell"} or call_scripts(call.tool, call.args).powershell:
            return GO_ON
        reading = read_call(call)
        if reading.unseen or reading.assignments or reading.functions or not reading.commands:
            return GO_ON
        if any(word != "/dev/null" for word, _ in reading.written):
            return GO_ON
        if any(w is None or w.startswith(_SOCKETS) for w in reading.other_words):
            return GO_ON  # `cat < /dev/tcp/host/80` connects; `< $F` is a run-time name
        if not all(_proven(cmd) for cmd in reading.commands):
            return GO_ON
        for other in others():
            verdict = other(call)
            if verdict.block or verdict.uncertain:
                return GO_ON
        names = dict.fromkeys(_base(c.words[0]) for c in reading.commands)
        return Verdict(approve=f"read-only ({', '.join(names)})")

    return check
