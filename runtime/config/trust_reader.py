"""What a hook command runs, as trust reads it: the closed world of trust (docs/security.md).

Trust lets a repository's hooks run only once it has hashed everything they can run. This
module reads a hook's command -- with the project's bash parser
(:func:`triohooks.match.shell.read_words`: through wrappers, pipelines, lists, ``-c`` strings
and ``$(...)``) -- and says, for every program in it, which files and directories it takes
code from (to hash) or that trust cannot see what it runs (**unseen**: the hooks are held back,
with what was not understood). It hashes nothing and decides nothing itself: :mod:`.trust`
does. Every path it looks at is listed (:attr:`Cover.looked`), present or not, for the
freshness check (:mod:`.freshness`).

Each program of a command is one of:

- **a file named by path** (``./x.sh``, ``"$CLAUDE_PROJECT_DIR"/.claude/hooks/x.py``,
  ``../x.sh``, ``/tmp/x``): hashed wherever it is, as named and as resolved; its first line
  says how it is read further (a script of a shell: read like a command, recursively; of
  Python, Node or another interpreter: as ``python x.py`` would be; a compiled program: hashed,
  and what it does once running is its own);
- **a shell or ``source``/``.`` with a script** (``bash x.sh``): the file, read recursively
  (up to :data:`MAX_DEPTH` files deep); a shell reading its commands from stdin (``bash
  <<EOF``, ``git show HEAD:x | bash``) is unseen;
- **an interpreter with a script** (``python3 x.py``, ``node x.js``, ``ruby x.rb`` ...): the
  file, and the directory its language loads sibling code from (the script's own directory:
  Python's ``sys.path[0]`` unless ``-I``/``-P``, Node's relative requires, plus every
  ``node_modules`` from there up to the project), hashed whole. That directory may not be the
  project root, the home directory or ``/`` (unseen: move the script into a directory of its
  own); ``python -m`` without ``-I``/``-P`` imports from the working directory (unseen); code
  given in the call (``python -c``, ``node -e``) or on stdin is unseen; an interpreter that is
  a file of the project (``.venv/bin/python``) loads the project's packages (unseen);
- **git**: the programs the repository's own configuration can make git run -- every key of
  ``.git/config`` (and the files it includes) but the bookkeeping ones, the files its values
  name, the commands of its program-valued keys (aliases, ``core.fsmonitor``,
  ``core.sshCommand`` ...) read as commands -- and its hooks directory, hashed whole;
- **a program of the machine that runs nothing of the project** (:data:`INERT`: ``jq``,
  ``grep``, ``cat`` ... and the wrappers the parser looks through, ``env``, ``timeout``,
  ``xargs`` ...): its arguments are data;
- **anything else**: unseen -- ``make`` (the Makefile's recipes), ``npm run``, ``npx``,
  ``pre-commit`` ... and any program trust does not know.

Words that are data name files too: each existing file of the project a word names is hashed
(a policy file a hook reads). Assignments to a variable that makes programs load code or run
a command (``PATH=bin:$PATH``, ``BASH_ENV``, ``PYTHONPATH``, ``GIT_SSH_COMMAND`` ...) cover
what their value names (a directory of ``PATH`` whole); a value known only at run time is
unseen. Known variables (the agent's project variable, ``$HOME``, ``$PWD`` before any ``cd``,
the settings' ``env`` values, a script's own directory) are expanded; a relative path makes the
hook **cwd-bound**: it is read from the project root, and held back when it would run anywhere
else.
"""

from __future__ import annotations

import os
import posixpath
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Final

from triohooks.match.shell import (
    DANGEROUS_ENV,
    GIT_TOPLEVEL,
    INTERPRETERS,
    VARIABLE,
    WRAPPERS,
    CodeSource,
    Word,
    code_source,
    git_config_safe,
    mark_known,
    read_words,
    unmark,
)

from .model import Command, command_label, excerpt
from .paths import UnreadableFileError, open_regular_file, read_regular_file
from .trust_cover import Cover

#: Script files read into, one inside another; one more is unseen.
MAX_DEPTH: Final = 3
#: A script read as shell code bigger than this is unseen (the parser's own limit).
MAX_SCRIPT_BYTES: Final = 100_000
#: Directories ``cd`` in one command may lead to that trust follows; more: unseen.
MAX_CD_DIRS: Final = 16
#: Longest command excerpt in a message.
EXCERPT: Final = 60
#: Largest git config file read.
MAX_GIT_CONFIG_BYTES: Final = 1024 * 1024

#: Programs of the machine that run nothing of the project: what they are given is data. The
#: parser reads through the wrappers among them (their inner command is read on its own) and
#: flags the options of these that run code (``find -exec``, ``awk`` ``system()``, ``sed``
#: ``e``, ``tar --to-command`` ...), which are then unseen.
INERT: Final = frozenset(
    """
    [ [[ test true false : echo printf cat tac head tail cut tr sort uniq wc tee paste join
    comm cmp diff sdiff fold fmt nl od hexdump xxd base64 base32 basenc md5sum sha1sum
    sha224sum sha256sum sha384sum sha512sum b2sum shasum cksum sum grep egrep fgrep rg ag ack
    jq yq jo gron sed gsed awk gawk mawk nawk column expand unexpand rev shuf seq yes
    date sleep basename dirname realpath readlink pwd ls stat file find fd fdfind du df
    mkdir rmdir touch rm cp mv ln chmod chown chgrp install mktemp truncate dd sync
    tar gzip gunzip zcat bzip2 bunzip2 xz unxz zstd unzstd lz4 zip unzip
    cd pushd popd dirs exit return break continue shift set unset export readonly declare
    typeset local read printf let wait kill jobs disown umask ulimit getopts type which
    command builtin exec env printenv id whoami groups hostname uname nproc tty logname
    curl wget ssh scp sftp rsync nc ncat netcat host dig nslookup ping
    notify-send osascript say logger tput clear iconv envsubst timeout nohup nice ionice
    time stdbuf setsid flock xargs watch parallel sudo doas su runuser sg chrt taskset
    ruff black isort shellcheck shfmt gofmt rustfmt clang-format yamllint jsonlint
    """.split()
) | frozenset(WRAPPERS)
#: Programs that run the project's own code or packages, and why (each is unseen, said so).
RUNNERS: Final = {
    **dict.fromkeys(("make", "gmake"), "make runs the recipes of the project's Makefile"),
    **dict.fromkeys(
        ("npm", "pnpm", "yarn", "bun", "corepack"),
        "it runs the project's package.json scripts or installed packages",
    ),
    **dict.fromkeys(("npx", "pnpx", "bunx"), "it runs a package's code from node_modules"),
    **dict.fromkeys(("cargo", "go"), "it builds and runs the project's code"),
    **dict.fromkeys(
        ("just", "task", "rake", "gradle", "gradlew", "mvn", "mvnw", "ant", "invoke"),
        "it runs the tasks the project's build file defines",
    ),
    **dict.fromkeys(("tox", "nox", "pytest"), "it runs the project's tests and their setup"),
    "pre-commit": "pre-commit runs the hooks .pre-commit-config.yaml names",
    **dict.fromkeys(
        ("poetry", "uv", "uvx", "pipenv", "pdm", "hatch", "rye", "pip", "pip3", "conda"),
        "it runs code from the project's Python environment or packages",
    ),
    **dict.fromkeys(
        ("docker", "podman", "docker-compose"), "it runs containers the project describes"
    ),
    **dict.fromkeys(
        ("eslint", "prettier", "tsc", "jest", "vitest", "mocha", "mypy", "pylint"),
        "it loads the project's configuration and plugins, which are code",
    ),
}
#: Languages whose script's directory is where they load sibling code from.
_NODE_LIKE: Final = frozenset({"node", "nodejs", "tsx", "ts-node", "bun", "deno"})
_SHELL_NAMES: Final = frozenset({"bash", "sh", "zsh", "dash", "ksh", "ash", "mksh", "rbash"})
#: Variables whose value is a list of directories programs load code or programs from.
_PATH_LIST: Final = re.compile(r"(?:.*PATH|PERL5LIB|RUBYLIB|GEM_HOME|PYTHONHOME|GOROOT|GOPATH)")
#: Variables whose value is a file or directory programs load code from.
_CODE_PATH_VARS: Final = frozenset(
    {
        "BASH_ENV",
        "ENV",
        "ZDOTDIR",
        "PYTHONSTARTUP",
        "LD_PRELOAD",
        "LD_AUDIT",
        "DYLD_INSERT_LIBRARIES",
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_COMMON_DIR",
        "GIT_EXEC_PATH",
        "GIT_TEMPLATE_DIR",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_SYSTEM",
        "LESSOPEN",
        "LESSCLOSE",
    }
)
#: Variables whose value is a command a program runs.
_COMMAND_VARS: Final = re.compile(
    r"(?:.*PAGER|EDITOR|VISUAL|SUDO_EDITOR|GIT_SEQUENCE_EDITOR|GIT_SSH(?:_COMMAND)?|.*ASKPASS"
    r"|GIT_EXTERNAL_DIFF|GIT_PROXY_COMMAND|BROWSER|RSYNC_RSH|RSYNC_CONNECT_PROG|CVS_RSH|SVN_SSH"
    r"|PROMPT_COMMAND)"
)
#: Git config keys whose value is a command git runs (read as a command; ``!`` dropped).
_GIT_PROGRAM_KEY: Final = re.compile(
    r"(?:alias\..*|core\.(?:fsmonitor|pager|editor|sshcommand|askpass|hookspath)"
    r"|credential(?:\..*)?\.helper|diff\..*\.(?:command|textconv)|diff\.external"
    r"|filter\..*\.(?:clean|smudge|process)|merge\..*\.driver|gpg(?:\..*)?\.program"
    r"|sequence\.editor|pager\..*|interactive\.difffilter|uploadpack\.packobjectshook"
    r"|submodule\..*\.update|remote\..*\.(?:uploadpack|receivepack|vcs)|web\.browser"
    r"|browser\..*\.cmd|man\..*\.cmd|difftool\..*\.cmd|mergetool\..*\.cmd)"
)
#: Git config keys a repository keeps for itself that make git run nothing (besides
#: :func:`~triohooks.match.shell.git_config_safe`): a change to them is not a change of what
#: runs.
_GIT_BOOKKEEPING: Final = re.compile(
    r"(?:core\.(?:repositoryformatversion|bare|logallrefupdates|sparsecheckout"
    r"|sparsecheckoutcone|untrackedcache|splitindex|commitgraph|multipackindex|checkstat"
    r"|trustctime|compression|bigfilethreshold)"
    r"|remote\.[^.]+(?:\..+)?\.(?:url|pushurl|fetch|push|tagopt|prune|mirror|skipdefaultupdate"
    r"|promisor|partialclonefilter)"
    r"|branch\..+\.(?:remote|merge|rebase|pushremote|description)"
    r"|submodule\..+\.(?:url|active|branch)|extensions\..*|lfs\.repositoryformatversion"
    r"|index\..*|feature\..*|gc\..*|maintenance\..*|fetch\..*|pull\..*|push\..*|init\..*"
    r"|user\..*|rebase\.(?:autostash|autosquash|updaterefs)|merge\.(?:ff|conflictstyle))"
)
#: How a script names its own directory (quotes and blanks dropped before matching).
_SCRIPT_DIR_IDIOMS: Final = re.compile(
    r"\$\((?:cd(?:--)?\$\(dirname(?:--)?(?:\$0|\$\{0\}|\$\{BASH_SOURCE(?:\[0\])?\}|\$BASH_SOURCE)\)"
    r"(?:&>/dev/null|>/dev/null(?:2>&1)?)?&&pwd(?:-P)?|dirname(?:--)?(?:\$0|\$\{0\}"
    r"|\$\{BASH_SOURCE(?:\[0\])?\}|\$BASH_SOURCE)|realpath\$\(dirname(?:--)?(?:\$0"
    r"|\$\{BASH_SOURCE(?:\[0\])?\})\))\)|\$\{0%/\*\}|\$\{BASH_SOURCE%/\*\}"
    r"|\$\{BASH_SOURCE\[0\]%/\*\}"
)
#: The parser's doubts, in words a user reads.
_DOUBT_WORDS: Final = {"dynamic command name": "its command name is computed at run time"}
#: The parser's doubt about a git subcommand it does not know: an alias (the repository's own
#: are covered with its config; the user's global ones are theirs) or a ``git-x`` program.
_GIT_ALIAS_DOUBT: Final = re.compile(r"^git \S+: may be an alias or a git-\S+ program$")


class _Reading:
    """One command (or script) being read: its label, directories and variables, and the
    hook command it is part of (``top``: what a cwd-bound reading binds)."""

    def __init__(
        self, label: str, dirs: list[str], values: dict[str, str], depth: int, top: str
    ) -> None:
        self.label = label
        self.dirs = dirs
        self.values = values
        self.depth = depth
        self.top = top
        #: Directories a ``PATH=...`` in this text put first: programs are looked up there.
        self.path_dirs: list[str] = []
        #: The command being read is the hook's own first one.
        self.first = False


def read_commands(
    commands: Iterable[str | tuple[str, ...] | Command],
    root: Path,
    *,
    variables: Mapping[str, str] | None = None,
) -> Cover:
    """What ``commands`` (bash command strings, argvs run without a shell, or
    :class:`Command`) run, for a workspace at ``root``. ``variables`` are the agent's own and
    the settings' (``$HOME`` and ``$PWD`` are added). Blocking file I/O (small reads and
    stats)."""
    home = os.path.expanduser("~")
    known = {"PWD": str(root), "HOME": home, **(variables or {})}
    cover = Cover(root, home)
    for given in commands:
        command = given if isinstance(given, Command) else Command(given)
        start = str(cover.root)
        if command.cwd is not None:
            start = os.path.normpath(os.path.join(start, command.cwd))
        label = command_label(command)
        reading = _Reading(label, [start], {}, 0, label)
        for name, value in command.env:
            _assignment(cover, reading, name, shlex.quote(value), known)
        if isinstance(command.run, str):
            _read_text(cover, command.run, label, [start], known, 0)
        else:
            _read_argv(cover, command.run, [start], known)
    return cover


def _read_argv(
    cover: Cover, argv: tuple[str, ...], dirs: list[str], known: Mapping[str, str]
) -> None:
    label = excerpt(" ".join(argv))
    reading = _Reading(label, dirs, {}, 0, label)
    reading.first = True
    if argv:
        _program(cover, reading, argv, label, known)
        for word in argv[1:]:
            _data(cover, reading, word)


def _script_variables(text: str, script_dir: str | None) -> str:
    """A script's text with its own-directory idioms (``$(dirname "$0")`` ...) as a known
    variable, so that ``source "$(dirname "$0")/lib.sh"`` names a file."""
    if script_dir is None:
        return text
    out: list[str] = []
    pos = 0
    compact_map: list[int] = []
    # Match on the text with quotes and blanks removed, then map back: the idioms are written
    # in many spacings and quotings.
    compact: list[str] = []
    for i, c in enumerate(text):
        if c in "\"' \t":
            continue
        compact.append(c)
        compact_map.append(i)
    joined = "".join(compact)
    for m in _SCRIPT_DIR_IDIOMS.finditer(joined):
        start = compact_map[m.start()]
        end = compact_map[m.end() - 1] + 1
        out.append(text[pos:start])
        out.append("${TRIOHOOKS_SCRIPT_DIR}")
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _single_assignments(text: str, assignments: Sequence[tuple[str, str]]) -> dict[str, str]:
    """Variables a script assigns once, at the start of a line, before any use: their value as
    written (``DIR="$(cd "$(dirname "$0")" && pwd)"``, ``LIB=$DIR/lib``)."""
    counts: dict[str, int] = {}
    values: dict[str, str] = {}
    for name, value in assignments:
        counts[name] = counts.get(name, 0) + 1
        values[name] = value
    out: dict[str, str] = {}
    for name, value in values.items():
        if counts[name] != 1:
            continue
        m = re.search(
            rf"^[ \t]*(?:(?:export|readonly|declare|local)[ \t]+)?{re.escape(name)}=",
            text,
            re.MULTILINE,
        )
        use = re.search(rf"\$\{{?{re.escape(name)}\b", text)
        if m is None or (use is not None and use.start() < m.start()):
            continue
        out[name] = value.strip("\"'") if value[:1] == value[-1:] else value
    return out


def _read_text(
    cover: Cover,
    text: str,
    label: str,
    dirs: list[str],
    known: Mapping[str, str],
    depth: int,
    script_dir: str | None = None,
    top: str | None = None,
) -> None:
    """Read one bash text: a hook's command, or a script file (``script_dir`` its directory)
    run by the hook command ``top``."""
    text = _script_variables(text, script_dir)
    if script_dir is not None:
        known = {**known, "TRIOHOOKS_SCRIPT_DIR": script_dir}
    if GIT_TOPLEVEL.search(text):
        top_dir = _git_toplevel(cover)
        if top_dir is not None:  # the repository the project is in, as git would say
            text = GIT_TOPLEVEL.sub("${TRIOHOOKS_GITGIT_TOPLEVEL}", text)
            known = {**known, "TRIOHOOKS_GITGIT_TOPLEVEL": top_dir}
    marked, values = mark_known(text, known)
    read = read_words(marked)
    if read.error:
        cover.say(label, f"cannot read it as bash ({read.error})")
        return
    own = {k: unmark(v, values) for k, v in _single_assignments(text, read.assignments).items()}
    resolvable = {
        name: value
        for name, value in own.items()
        if name not in known and _static_value(value, {**known, **own}) is not None
    }
    if resolvable:
        extended = dict(known)
        for name, value in resolvable.items():
            extended[name] = str(_static_value(value, {**extended, **resolvable}))
        known = extended
        marked, values = mark_known(text, known)
        read = read_words(marked)
        if read.error:
            cover.say(label, f"cannot read it as bash ({read.error})")
            return
    reading = _Reading(label, list(dirs), values, depth, top or label)
    cover.functions.setdefault(reading.top, set()).update(read.functions)
    handled_env = set()
    for name, value in read.assignments:
        if _assignment(cover, reading, name, unmark(value, values), known):
            handled_env.add(name)
    follows_cd = False
    for index, simple in enumerate(read.commands):
        # The hook's own first program (doctor skips it when written with $;|&: HK-40).
        reading.first = depth == 0 and index == 0
        words = tuple(_unmark_word(w, values) for w in simple.words)
        first = words[0]
        if first in ("cd", "pushd"):
            follows_cd = True
            if not _cd(cover, reading, words):
                return
            continue
        assert first is not None
        said_as = label
        if depth:  # in a script: name the line too
            said_as = f"{label}: {excerpt(' '.join(w if w is not None else '...' for w in words))}"
        _program(cover, reading, words, said_as, known)
        for word in words[1:]:
            if word is not None:
                if depth == 0:  # a hook's own data files; a script's reads are its own
                    _data(cover, reading, word)
                name, eq, value = word.partition("=")
                if eq and name.isidentifier() and _code_variable(name):
                    _assignment(cover, reading, name, value, known)
    for word in read.other_words if depth == 0 else ():
        if word is not None:
            _data(cover, reading, unmark(word, values))
    for doubt in read.doubts:
        if any(
            doubt == f"{name} makes programs run a command or load code" for name in handled_env
        ):
            continue
        program, sep, rest = doubt.partition(": ")
        if sep and _reads_itself(program):
            continue  # a shell, an interpreter or `source`: read by _program
        if program == "git" and _GIT_ALIAS_DOUBT.search(rest):
            continue  # the repository's aliases are covered with its config (_git)
        cover.say(label, _DOUBT_WORDS.get(doubt, doubt))
    for foreign in read.foreign:
        program = foreign.partition(":")[0]
        if _reads_itself(program):
            continue  # a shell, an interpreter or `source`: read by _program
        cover.say(label, foreign)
    if follows_cd and "PWD" in text:
        cover.say(label, "it uses $PWD after cd")


def _static_value(value: str, known: Mapping[str, str]) -> str | None:
    """``value`` (as written in an assignment) with known variables expanded, when nothing
    in it is left to run time; else None."""
    text = value
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1]

    def sub(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2) or ""
        return known.get(name, m.group(0))

    text = VARIABLE.sub(sub, text)
    if any(c in text for c in "$`*?[{\\") or not text:
        return None
    return text


def _unmark_word(word: Word, values: Mapping[str, str]) -> Word:
    return None if word is None else unmark(word, values)


def _reads_itself(program: str) -> bool:
    base = posixpath.basename(program) or program
    stripped = base.rstrip("0123456789.")
    return base in ("source", ".") or stripped in _SHELL_NAMES or stripped in INTERPRETERS


def _candidates(cover: Cover, reading: _Reading, word: str, *, code: bool = True) -> list[str]:
    """The paths ``word`` may name: as is when absolute (``~`` expanded), else under each
    directory the command may be in (which makes it cwd-bound when it names ``code``)."""
    if word == "~" or word.startswith("~/"):
        word = cover.home + word[1:]
    if os.path.isabs(word):
        return [os.path.normpath(word)]
    if code:
        cover.cwd_bound.add(reading.top)
    return [os.path.normpath(os.path.join(d, word)) for d in reading.dirs]


def _data(cover: Cover, reading: _Reading, word: str) -> None:
    """A word that is data: the project's files it names are hashed (a policy file)."""
    if not word or len(word) > 4096 or "\0" in word:
        return
    if word.startswith("-"):
        word = word.partition("=")[2]  # --config=x.toml names x.toml
        if not word:
            return
    for candidate in _candidates(cover, reading, word, code=False):
        try:
            resolved = os.path.realpath(candidate)
        except (OSError, ValueError):
            continue
        if cover.inside(candidate) or cover.inside(resolved):
            cover.look(candidate)
            if os.path.isfile(resolved):
                cover.hash_file(candidate)


def _cd(cover: Cover, reading: _Reading, words: tuple[Word, ...]) -> bool:
    target = next((w for w in words[1:] if w is None or not w.startswith("-")), "~")
    if target is None or target == "-":
        cover.say(reading.label, "it changes to a computed directory")
        return False
    if target.startswith("~"):
        target = cover.home + target[1:]
    new = [os.path.normpath(os.path.join(d, target)) for d in reading.dirs]
    if not os.path.isabs(target):
        cover.cwd_bound.add(reading.top)
    reading.dirs = list(dict.fromkeys([*reading.dirs, *new]))
    if len(reading.dirs) > MAX_CD_DIRS:
        cover.say(reading.label, "it changes directory too often to follow")
        return False
    return True


def _code_variable(name: str) -> bool:
    return (
        name in DANGEROUS_ENV
        or name in _CODE_PATH_VARS
        or name.startswith(("BASH_FUNC_", "GIT_CONFIG"))
        or _PATH_LIST.fullmatch(name) is not None
        or _COMMAND_VARS.fullmatch(name) is not None
    )


def _assignment(
    cover: Cover, reading: _Reading, name: str, value: str, known: Mapping[str, str]
) -> bool:
    """``name=value`` where ``name`` makes programs load code or run a command: cover what
    the value names (True), or say it cannot be seen. False: ``name`` is data."""
    if not _code_variable(name):
        return False
    label = reading.label
    if _COMMAND_VARS.fullmatch(name) is not None:
        static = _static_value(value, known)
        if static is None:
            cover.say(label, f"{name} names a command known only at run time")
        elif static.strip():
            _read_text(
                cover,
                static,
                f"{label} ({name})",
                reading.dirs,
                known,
                reading.depth + 1,
                top=reading.top,
            )
        return True
    if _PATH_LIST.fullmatch(name) is not None:
        text = value.strip("\"'")
        for entry in text.split(":"):
            if entry in (f"${name}", f"${{{name}}}") or not entry:
                continue  # the value it had: the session's own
            static = _static_value(entry, known)
            if static is None:
                cover.say(label, f"{name} names a directory known only at run time ({entry})")
                continue
            for candidate in _candidates(cover, reading, static):
                cover.hash_dir(candidate, f"programs are looked up in it ({name})", label)
                if name == "PATH":
                    reading.path_dirs.append(candidate)
        return True
    if name in _CODE_PATH_VARS:
        static = _static_value(value, known)
        if static is None:
            cover.say(label, f"{name} names a file known only at run time")
            return True
        for candidate in _candidates(cover, reading, static):
            if os.path.isdir(candidate):
                cover.hash_dir(candidate, f"{name} loads code from it", label)
            else:
                cover.hash_file(candidate)
        return True
    if value.strip("\"'"):
        cover.say(label, f"{name} changes what programs load or run")
    return True


def _program(
    cover: Cover,
    reading: _Reading,
    words: tuple[Word, ...],
    label: str,
    known: Mapping[str, str],
) -> None:
    name = words[0]
    if name is None:
        cover.say(label, "its command name is computed at run time")
        return
    base = posixpath.basename(name) or name
    stripped = base.rstrip("0123456789.")
    if name in cover.functions.get(reading.top, ()):
        return  # a function of the hook's own scripts: its body is read with them
    if "/" not in name:
        # A program the command's own PATH finds first, in a directory trust covers whole.
        for directory in reading.path_dirs:
            on_path = os.path.join(directory, name)
            cover.look(on_path)
            if os.path.isfile(on_path) and os.access(on_path, os.X_OK):
                name = on_path
                words = (on_path, *words[1:])
                break
    if "/" not in name:  # found on PATH at run time (validate and doctor look it up)
        cover.programs.setdefault(reading.top, []).append((name, reading.first))
    if "/" in name:
        named_inside = False
        found = False
        for candidate in _candidates(cover, reading, name):
            named_inside = named_inside or cover.inside(candidate)
            resolved = cover.hash_file(candidate)
            found = found or resolved is not None
            if resolved is not None and not os.access(resolved, os.X_OK):
                cover.lacks(reading.top, f"{name}: not an executable file", reading.first)
            if resolved is not None and code_source(words) is None:
                _executable(cover, reading, resolved, label, known)
        if not found:
            cover.lacks(reading.top, f"{name}: no such file", reading.first)
        if named_inside and (stripped in INTERPRETERS or base in _NODE_LIKE):
            cover.say(
                label,
                f"it runs the project's own {base} ({name}): the packages it loads are files "
                "of the project",
            )
            return
    source = code_source(words)
    if source is not None:
        language = stripped if stripped in INTERPRETERS else base
        _code(cover, reading, language, source, label, known, shown=base)
        return
    if base == "git" or base.startswith("git-"):
        _git(cover, reading, words, label, known)
        return
    if "/" in name or base in INERT:
        return
    why = RUNNERS.get(base) or RUNNERS.get(stripped)
    cover.say(label, why or f"trust does not know what {base} runs or loads")


def _code(
    cover: Cover,
    reading: _Reading,
    program: str,
    source: CodeSource,
    label: str,
    known: Mapping[str, str],
    shown: str = "",
) -> None:
    """A shell's, an interpreter's or ``source``'s code (:func:`code_source`); ``shown``: the
    program as the command names it."""
    kind = source.kind
    if kind in ("none", "string"):
        return  # a -c string is read by the parser itself
    if kind in ("call", "stdin", "dynamic"):
        cover.say(label, source.why)
        return
    isolated = bool(source.flags & {"I", "P"})
    if kind == "module" and program in ("python", "pypy", "ipython"):
        if not isolated:
            cover.say(
                label,
                f"{program} -m {source.value} imports it from the working directory, the "
                "project (run it with -I, or as a file)",
            )
        return
    found = False
    for candidate in _candidates(cover, reading, source.value):
        resolved = cover.hash_file(candidate)
        if resolved is not None:
            found = True
            _script(cover, reading, resolved, program, isolated, label, known)
    if not found:
        what = f"{source.value}: no such file ({shown or program} runs it)"
        cover.lacks(reading.top, what, False)


def _script(
    cover: Cover,
    reading: _Reading,
    path: str,
    language: str,
    isolated: bool,
    label: str,
    known: Mapping[str, str],
) -> None:
    """A script file run by ``language``: what that language loads beside it."""
    directory = os.path.dirname(path)
    if language in _SHELL_NAMES or language in ("source", "."):
        _shell_script(cover, reading, path, label, known)
        return
    if language in ("python", "pypy", "ipython"):
        if not isolated:
            cover.hash_dir(
                directory, f"{language} imports from {posixpath.basename(path)}'s directory", label
            )
        return
    if language in _NODE_LIKE:
        cover.hash_dir(
            directory, f"{language} requires files beside {posixpath.basename(path)}", label
        )
        here = directory
        while True:
            modules = os.path.join(here, "node_modules")
            if os.path.isdir(modules):
                cover.hash_dir(modules, f"{language} requires packages from it", label)
            else:
                cover.look(modules)
            parent = os.path.dirname(here)
            if parent == here or not cover.inside(parent):
                break
            here = parent
        return
    cover.hash_dir(directory, f"{language} loads files beside {posixpath.basename(path)}", label)


def _shell_script(
    cover: Cover, reading: _Reading, path: str, label: str, known: Mapping[str, str]
) -> None:
    """A file of shell code: read like a command, one level deeper."""
    inner_label = f"{_shown(cover, path)}"
    if reading.depth + 1 > MAX_DEPTH:
        cover.say(inner_label, f"scripts run scripts more than {MAX_DEPTH} deep")
        return
    try:
        data = read_regular_file(Path(path), MAX_SCRIPT_BYTES)
    except (OSError, UnreadableFileError):
        return  # the hasher says why it cannot be hashed
    if len(data) > MAX_SCRIPT_BYTES:
        cover.say(inner_label, f"a script over {MAX_SCRIPT_BYTES} bytes is not read")
        return
    text = data.decode("utf-8", "surrogateescape")
    _read_text(
        cover,
        text,
        inner_label,
        reading.dirs,
        known,
        reading.depth + 1,
        script_dir=os.path.dirname(path),
        top=reading.top,
    )


def _shown(cover: Cover, path: str) -> str:
    root = str(cover.root)
    return os.path.relpath(path, root) if cover.inside(path) else path


def _executable(
    cover: Cover, reading: _Reading, path: str, label: str, known: Mapping[str, str]
) -> None:
    """A file run as a program: its first line says by what."""
    try:
        with open_regular_file(path) as (fd, _):
            head = os.read(fd, 256)
    except (OSError, UnreadableFileError):
        return  # the hasher says why it cannot be hashed
    if head.startswith(b"#!"):
        line = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
        if not line:
            _shell_script(cover, reading, path, label, known)
            return
        interpreter = posixpath.basename(line[0])
        args = line[1:]
        if interpreter == "env":
            args = [a for a in args if not a.startswith("-")]
            if not args:
                cover.say(_shown(cover, path), "its #! line names no program")
                return
            interpreter, args = posixpath.basename(args[0]), args[1:]
        stripped = interpreter.rstrip("0123456789.")
        flags = frozenset(
            c for a in args if a.startswith("-") and not a.startswith("--") for c in a[1:]
        )
        if stripped in _SHELL_NAMES:
            _shell_script(cover, reading, path, label, known)
        elif stripped in INTERPRETERS or interpreter in _NODE_LIKE:
            language = stripped if stripped in INTERPRETERS else interpreter
            _script(cover, reading, path, language, bool(flags & {"I", "P"}), label, known)
        else:
            cover.say(
                _shown(cover, path), f"it runs under {interpreter}, which trust does not know"
            )
        return
    if head.startswith((b"\x7fELF", b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe", b"\xca\xfe\xba\xbe")):
        return  # a compiled program: hashed; what it does once running is its own
    _shell_script(cover, reading, path, label, known)  # no #!: bash runs it as a script


# -- git ---------------------------------------------------------------------------------------


def _git(
    cover: Cover,
    reading: _Reading,
    words: tuple[Word, ...],
    label: str,
    known: Mapping[str, str],
) -> None:
    """What a repository's own configuration can make git run, for every repository the
    command's git may use."""
    dirs = list(reading.dirs)
    git_dir: str | None = None
    i = 1
    while i < len(words):
        w = words[i]
        if w is None:
            cover.say(label, "git is given an option known only at run time")
            return
        if w == "-C" or w in ("--git-dir", "--work-tree"):
            value = words[i + 1] if i + 1 < len(words) else None
            if value is None:
                cover.say(label, f"git {w} names a directory known only at run time")
                return
            if w == "-C":
                dirs = [os.path.normpath(os.path.join(d, value)) for d in dirs]
                if not os.path.isabs(value):
                    cover.cwd_bound.add(reading.top)
            elif w == "--git-dir":
                git_dir = value
            i += 2
            continue
        if w.startswith("--git-dir="):
            git_dir = w.partition("=")[2]
            i += 1
            continue
        if w.startswith("-"):
            i += 1
            continue
        break
    for d in dirs:
        found = os.path.join(d, git_dir) if git_dir is not None else _find_git_dir(cover, d)
        if found is not None:
            _git_repository(cover, reading, found, label, known)


def _git_toplevel(cover: Cover) -> str | None:
    """The work tree git finds from the project root (the directory holding ``.git``)."""
    found = _find_git_dir(cover, str(cover.root))
    if found is None:
        return None
    here = str(cover.root)
    while not os.path.lexists(os.path.join(here, ".git")):
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent
    return here


def _find_git_dir(cover: Cover, start: str) -> str | None:
    """The git directory git would find from ``start``: ``.git`` there or above (a ``.git``
    file's ``gitdir:`` followed). Every place looked at is listed."""
    here = os.path.normpath(start)
    while True:
        candidate = os.path.join(here, ".git")
        cover.look(candidate)
        if os.path.isdir(candidate):
            return candidate
        if os.path.isfile(candidate):
            try:
                text = read_regular_file(Path(candidate), 4096).decode("utf-8", "replace")
            except (OSError, UnreadableFileError):
                return None
            cover.hash_file(candidate)
            if text.startswith("gitdir:"):
                target = text[len("gitdir:") :].strip()
                return os.path.normpath(os.path.join(here, target))
            return None
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _git_repository(
    cover: Cover, reading: _Reading, git_dir: str, label: str, known: Mapping[str, str]
) -> None:
    git_dir = os.path.realpath(git_dir)
    if git_dir in cover._git_read:
        return
    cover._git_read.add(git_dir)
    common = git_dir
    commondir = os.path.join(git_dir, "commondir")
    cover.look(commondir)
    if os.path.isfile(commondir):
        try:
            text = read_regular_file(Path(commondir), 4096).decode("utf-8", "replace").strip()
        except (OSError, UnreadableFileError):
            text = ""
        cover.hash_file(commondir)
        if text:
            common = os.path.normpath(os.path.join(git_dir, text))
    work_tree = os.path.dirname(git_dir) if os.path.basename(git_dir) == ".git" else None
    hooks_path: str | None = None
    configs = [os.path.join(common, "config"), os.path.join(git_dir, "config.worktree")]
    seen: set[str] = set()
    while configs:
        path = configs.pop(0)
        cover.look(path)
        if path in seen or not os.path.isfile(path):
            continue
        seen.add(path)
        entries = _git_config_entries(cover, path, label)
        if entries is None:
            continue
        kept: list[str] = []
        for key, value in entries:
            if git_config_safe(key) or _GIT_BOOKKEEPING.fullmatch(key):
                continue
            kept.append(f"{key}={value}")
            if key in ("include.path",) or (key.startswith("includeif.") and key.endswith(".path")):
                target = os.path.expanduser(value)
                configs.append(os.path.normpath(os.path.join(os.path.dirname(path), target)))
                continue
            if key == "core.hookspath":
                hooks_path = os.path.expanduser(value)
                continue
            if _GIT_PROGRAM_KEY.fullmatch(key) and value.strip():
                command = value[1:] if value.startswith("!") else value
                _read_text(
                    cover,
                    command,
                    f"{_shown(cover, path)}: {key}",
                    [work_tree or os.path.dirname(git_dir)],
                    known,
                    reading.depth + 1,
                )
            for word in value.split():
                candidate = os.path.expanduser(word)
                base = work_tree or os.path.dirname(git_dir)
                full = candidate if os.path.isabs(candidate) else os.path.join(base, candidate)
                if os.path.isfile(full):
                    cover.hash_file(full)
        if kept:
            cover.texts[f"git config {path}"] = "\n".join(sorted(kept))
    if hooks_path is not None:
        base = work_tree or os.path.dirname(git_dir)
        hooks = hooks_path if os.path.isabs(hooks_path) else os.path.join(base, hooks_path)
    else:
        hooks = os.path.join(common, "hooks")
    cover.hash_dir(hooks, "git runs the hooks in it", label)


def _git_config_entries(cover: Cover, path: str, label: str) -> list[tuple[str, str]] | None:
    """The ``(key, value)`` entries of a git config file (keys lowercased but for the
    subsection), or None when it cannot be read (said as unseen)."""
    shown = _shown(cover, path)
    cover.look(path)  # what in it can make git run something is hashed (Cover.texts)
    try:
        data = read_regular_file(Path(path), MAX_GIT_CONFIG_BYTES)
    except (OSError, UnreadableFileError) as exc:
        cover.say(label, f"cannot read git's configuration {shown}: {exc}")
        return None
    try:
        return parse_git_config(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        cover.say(label, f"cannot read git's configuration {shown}: {exc}")
        return None


_SECTION: Final = re.compile(r'\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\\n]|\\.)*)")?\s*\]')
_KEY: Final = re.compile(r"([A-Za-z][A-Za-z0-9-]*)\s*(=?)")
_UNESCAPE: Final = re.compile(r"\\(.)")


def parse_git_config(text: str) -> list[tuple[str, str]]:
    """git's config file format: ``[section "sub"]`` headers, ``key = value`` lines (quotes,
    ``\\`` escapes, line continuations, ``#``/``;`` comments). Raises ValueError naming the
    line of anything else."""
    entries: list[tuple[str, str]] = []
    section = ""
    lines = text.split("\n")
    n = 0
    while n < len(lines):
        line = lines[n]
        n += 1
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        if stripped.startswith("["):
            m = _SECTION.match(stripped)
            if m is None:
                raise ValueError(f"line {n}: a section header git would not read")
            rest = stripped[m.end() :].strip()
            name = m.group(1).lower()
            sub = m.group(2)
            section = name if sub is None else name + "." + _UNESCAPE.sub(r"\1", sub)
            if not rest or rest[0] in "#;":
                continue
            stripped = rest  # a variable on the header's line
        m = _KEY.match(stripped)
        if m is None or not section:
            raise ValueError(f"line {n}: not a variable git would read")
        key = f"{section}.{m.group(1).lower()}"
        if not m.group(2):
            if stripped[m.end() :].strip() and stripped[m.end() :].strip()[0] not in "#;":
                raise ValueError(f"line {n}: not a variable git would read")
            entries.append((key, "true"))
            continue
        raw = stripped[m.end() :]
        value, n = _git_value(raw, lines, n)
        entries.append((key, value))
    return entries


def _git_value(raw: str, lines: list[str], n: int) -> tuple[str, int]:
    out: list[str] = []
    quoted = False
    pending_space = ""
    while True:
        i = 0
        while i < len(raw):
            c = raw[i]
            if c == "\\":
                if i + 1 >= len(raw):  # a continuation
                    if n >= len(lines):
                        raise ValueError(f"line {n}: a continuation at the end of the file")
                    raw = lines[n]
                    n += 1
                    break
                escaped = raw[i + 1]
                table = {"n": "\n", "t": "\t", "b": "\b", "\\": "\\", '"': '"'}
                if escaped not in table:
                    raise ValueError(f"line {n}: an escape git would not read")
                out.append(pending_space + table[escaped])
                pending_space = ""
                i += 2
                continue
            if c == '"':
                quoted = not quoted
                out.append(pending_space)
                pending_space = ""
                i += 1
                continue
            if not quoted and c in "#;":
                return "".join(out), n
            if not quoted and c in " \t":
                if out:
                    pending_space += c
                i += 1
                continue
            out.append(pending_space + c)
            pending_space = ""
            i += 1
        else:
            if quoted:
                raise ValueError(f"line {n}: an unterminated quote")
            return "".join(out), n
