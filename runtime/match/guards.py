"""Built-in guards: the rules most users would otherwise write as shell scripts, decided in
process (no spawn) on the project's sound shell reader (docs/builtin-guards.md).

Each guard reads one tool call -- its shell scripts through :func:`~.ifrules.call_scripts` (the
reading ``shell(...)`` rules use: quoting, wrappers such as ``sudo``/``env``/``xargs``, ``bash -c``
strings, ``ssh host cmd``...) and its paths through :func:`~.ifrules.call_paths` -- and gives a
:class:`Verdict`: block (with a reason that says what was found), or go on, or *uncertain* (the
call cannot be read for sure: a word known only at run time where it matters, code the reader
cannot follow). What an uncertain call gets is the guard's ``on_uncertain`` (``block``, ``warn``:
go on with a warning in the Outcome, or ``allow``), decided by the caller.

This module owns the rules and their parameters. It must not run hooks or know about config
files; the dialect readers validate parameters with :func:`check_params`.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal

import msgspec

from .ifrules import SHELL_KEYS, CallScripts, call_kinds, call_paths, call_scripts

if TYPE_CHECKING:
    from .shell import ScriptWords

OnUncertain = Literal["block", "warn", "allow"]
ON_UNCERTAIN: Final = ("block", "warn", "allow")


class Verdict(msgspec.Struct, frozen=True, gc=False):
    """One guard's reading of one call."""

    #: What was found that the guard blocks ("" when nothing was).
    block: str = ""
    #: Why the call cannot be read for sure ("" when it can).
    uncertain: str = ""


GO_ON: Final = Verdict()


class Call(msgspec.Struct, frozen=True, gc=False):
    """The call a guard reads, and where it runs."""

    tool: str
    args: Mapping[str, Any]
    #: The call's working directory (the event's ``cwd``, else the workspace).
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


# --- shared reading ---------------------------------------------------------------------------

_Words = tuple[str | None, ...]


def _readings(call: Call) -> tuple[list[ScriptWords], str]:
    """The call's shell scripts, each read whole (past what the reader cannot follow), and why
    one cannot be read at all ("" when all can)."""
    from .shell import read_words

    scripts = call_scripts(call.tool, call.args)
    if scripts.unreadable:
        return [], scripts.why
    readings = [read_words(text) for text in _script_texts(call.args, scripts)]
    errors = [r.error for r in readings if r.error]
    return readings, errors[0] if errors else ""


def _commands(call: Call) -> tuple[list[tuple[_Words, bool]], str]:
    """Every simple command the call's scripts could run, as (words, open tail), and why the
    reading is uncertain ("" when it is not): a script that cannot be read, or shell code the
    reader cannot see (``eval "$x"``, a shell reading stdin, a dynamic ``-c`` string). Code
    that is not shell (``python -c``, ``awk``, ``source x.sh``) is not read, and not a doubt."""
    readings, error = _readings(call)
    found = [(c.words, c.open_tail) for r in readings for c in r.commands]
    doubts = [d for r in readings for d in r.doubts]
    return found, error or (doubts[0] if doubts else "")


def _base(word: str | None) -> str:
    return posixpath.basename(word) if word else ""


def _resolve(path: str, call: Call) -> str:
    """``path`` as an absolute, lexically normalised path (``~`` is the home directory)."""
    if path == "~" or path.startswith("~/"):
        path = call.home + path[1:]
    elif not path.startswith("/"):
        path = posixpath.join(call.cwd or call.workspace or "/", path)
    path = posixpath.normpath(path)
    return "/" + path.lstrip("/")  # POSIX keeps a leading "//"; the kernel does not


def _ancestors_or_self(path: str) -> set[str]:
    out = {path}
    while path != "/":
        path = posixpath.dirname(path)
        out.add(path)
    return out


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


def _long_option(word: str, known: Sequence[str]) -> str | None:
    """The long option ``word`` names: GNU getopt takes any unambiguous prefix (``--rec``,
    ``--no-p``) and ``--opt=value``. None when unknown or ambiguous."""
    name = word.partition("=")[0]
    if name in known:
        return name
    hits = [k for k in known if k.startswith(name)]
    return hits[0] if len(hits) == 1 else None


#: find tests that narrow what a ``-delete`` removes.
_FIND_FILTERS: Final = frozenset(
    """
    -name -iname -path -ipath -wholename -iwholename -regex -iregex -lname -ilname -newer
    -anewer -cnewer -mtime -mmin -atime -amin -ctime -cmin -size -empty -user -group -perm
    -inum -samefile -links
    """.split()
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
        top-level directory (``/usr``, ``/etc``) is critical too: see :func:`top_level`."""
        paths = {"/"}
        for root in (call.home, call.workspace if workspace else "", *extra):
            if root:
                paths |= _ancestors_or_self(_resolve(root, call))
        return paths

    def hits(operands: Iterable[str], call: Call, *, workspace: bool = True) -> list[str]:
        resolved = {_resolve(o, call) for o in operands}
        found = (resolved & critical(call, workspace=workspace)) | {
            p for p in resolved if p.count("/") == 1
        }
        return sorted(found)

    def rm(words: _Words, open_tail: bool, call: Call) -> Verdict:
        recursive = no_preserve = False
        operands: list[str | None] = []
        dynamic = 0
        options_done = False
        for word in words[1:]:
            if word is None:
                dynamic += 1
                operands.append(None)
            elif options_done or word == "-" or not word.startswith("-"):
                operands.append(word)
            elif word == "--":
                options_done = True
            elif word.startswith("--"):
                option = _long_option(word, _RM_LONG)
                recursive |= option == "--recursive"
                no_preserve |= option == "--no-preserve-root"
            else:
                recursive |= "r" in word or "R" in word
        shown = " ".join(w if w is not None else "<run-time word>" for w in words)
        if no_preserve:
            return Verdict(block=f"`{shown}`: --no-preserve-root lets rm delete /")
        static = [o for o in operands if o is not None]
        hit = hits(static, call)
        if recursive and hit:
            return Verdict(block=f"`{shown}` deletes {hit[0]} and everything under it")
        if recursive and (dynamic or open_tail):
            return Verdict(
                uncertain=f"`{shown}` deletes recursively a path known only at run time "
                "(a variable, a glob or xargs input): it may be / or your home"
            )
        if not recursive and (dynamic > 1 or (dynamic and hit) or (open_tail and hit)):
            return Verdict(uncertain=f"`{shown}`: a word known only at run time may be -r")
        return GO_ON

    def find(words: _Words, call: Call) -> Verdict:
        deletes = "-delete" in words or any(
            w in ("-exec", "-execdir", "-ok", "-okdir")
            and i + 1 < len(words)
            and _base(words[i + 1]) in ("rm", "rmdir", "unlink", "shred")
            for i, w in enumerate(words)
        )
        if not deletes:
            return GO_ON
        starts: list[str] = []
        shown = " ".join(w if w is not None else "<run-time word>" for w in words)
        for word in words[1:]:
            if word is None:
                return Verdict(uncertain=f"`{shown}` deletes under a path known only at run time")
            if word.startswith("-") or word in ("(", "!", ","):
                break
            starts.append(word)
        # Under the workspace a filter (-name, -mtime ...) makes it a cleanup; above it, or
        # with no filter at all, it is not.
        filtered = any(w in _FIND_FILTERS for w in words)
        hit = hits(starts or ["."], call, workspace=not filtered)
        if hit:
            return Verdict(block=f"`{shown}` deletes files under {hit[0]}")
        return GO_ON

    def check(call: Call) -> Verdict:
        commands, doubt = _commands(call)
        # find -exec rm ... {}: the reader lists the rm too, {} as a run-time word; what it
        # deletes is what find finds, which find's own check reads.
        by_find = {
            _exec_inner(words, i)
            for words, _ in commands
            if _base(words[0]) in ("find", "gfind")
            for i, w in enumerate(words)
            if w in ("-exec", "-execdir", "-ok", "-okdir")
        }
        uncertain = ""
        for words, open_tail in commands:
            name = _base(words[0])
            if name == "rm" and words in by_find:
                continue
            if name == "rm":
                verdict = rm(words, open_tail, call)
            elif name in ("find", "gfind"):
                verdict = find(words, call)
            else:
                continue
            if verdict.block:
                return verdict
            uncertain = uncertain or verdict.uncertain
        return Verdict(uncertain=uncertain or doubt)

    return check


# --- force pushes and protected branches ------------------------------------------------------

#: ``git push`` options that take a value in the next word when written without ``=``.
_PUSH_VALUE_OPTIONS: Final = frozenset({"-o", "--push-option", "--repo", "--receive-pack"})
_PUSH_LONG: Final = (
    "--all",
    "--branches",
    "--mirror",
    "--tags",
    "--follow-tags",
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


def current_branch(cwd: str) -> str | None:
    """The branch checked out in the repository around ``cwd`` (``.git/HEAD``, a worktree's
    ``gitdir:`` followed); None when there is none or it cannot be read (detached, no repo)."""
    directory = cwd or "/"
    for _ in range(64):
        dot_git = os.path.join(directory, ".git")
        try:
            if os.path.isfile(dot_git):
                with open(dot_git, encoding="utf-8", errors="replace") as f:
                    line = f.read(4096).strip()
                if not line.startswith("gitdir:"):
                    return None
                gitdir = os.path.join(directory, line[len("gitdir:") :].strip())
            elif os.path.isdir(dot_git):
                gitdir = dot_git
            else:
                parent = os.path.dirname(directory)
                if parent == directory:
                    return None
                directory = parent
                continue
            with open(os.path.join(gitdir, "HEAD"), encoding="utf-8", errors="replace") as f:
                head = f.read(4096).strip()
        except OSError:
            return None
        prefix = "ref: refs/heads/"
        return head[len(prefix) :] if head.startswith(prefix) else None
    return None


def _protected_push(params: Mapping[str, tuple[str, ...]]) -> Check:
    branches = params["branches"]
    block_force = params["force"] != ("off",)

    def protected(ref: str) -> bool:
        name = ref.removeprefix("refs/heads/")
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in branches)

    def push(words: _Words, call: Call) -> Verdict:
        shown = " ".join(w if w is not None else "<run-time word>" for w in words)
        force = delete = every = tags_only = False
        positional: list[str] = []
        i = 2
        while i < len(words):
            word = words[i]
            i += 1
            if word is None:
                return Verdict(uncertain=f"`{shown}`: a word known only at run time")
            if positional or not word.startswith("-") or word == "-":
                positional.append(word)
                continue
            if word == "--":
                positional.extend(w for w in words[i:] if w is not None)
                if None in words[i:]:
                    return Verdict(uncertain=f"`{shown}`: a word known only at run time")
                break
            if word.startswith("--"):
                option = _long_option(word, _PUSH_LONG)
                if option is None:
                    return Verdict(uncertain=f"`{shown}`: unknown option {word}")
                force |= option in ("--force", "--force-with-lease", "--force-if-includes")
                force |= option == "--mirror"
                delete |= option in ("--delete", "--prune")
                every |= option in ("--all", "--branches", "--mirror")
                tags_only |= option == "--tags"
                if option in _PUSH_VALUE_OPTIONS and "=" not in word:
                    i += 1
                continue
            cluster = word[1:]
            for j, letter in enumerate(cluster):
                force |= letter == "f"
                delete |= letter == "d"
                if letter == "o":  # -o value (the rest of the cluster, else the next word)
                    if j == len(cluster) - 1:
                        i += 1
                    break
        refspecs = positional[1:]
        if force and block_force:
            return Verdict(block=f"`{shown}` is a force push (it rewrites published history)")
        if every:
            hit = ", ".join(branches)
            return Verdict(block=f"`{shown}` pushes every branch, protected ones ({hit}) too")
        for spec in refspecs:
            if spec.startswith("+") and block_force:
                return Verdict(block=f"`{shown}`: +{spec[1:]} is a force push")
            src, colon, dst = spec.lstrip("+").partition(":")
            if colon and not src:
                delete = True
            target = dst if colon else src
            if target in ("HEAD", "@"):
                target = current_branch(call.cwd) or ""
                if not target:
                    return Verdict(uncertain=f"`{shown}`: which branch HEAD is cannot be read")
            if protected(target):
                what = "deletes" if delete else "pushes to"
                return Verdict(block=f"`{shown}` {what} the protected branch {target}")
        if not refspecs and not tags_only:  # the current branch, as push.default has it
            branch = current_branch(call.cwd)
            if branch is None:
                return Verdict(uncertain=f"`{shown}`: the current branch cannot be read")
            if protected(branch):
                return Verdict(block=f"`{shown}` pushes the protected branch {branch}")
        return GO_ON

    def check(call: Call) -> Verdict:
        commands, doubt = _commands(call)
        uncertain = ""
        for words, _ in commands:
            if _base(words[0]) not in ("git", "hub", "git-push"):
                continue
            rest: _Words = words
            if _base(words[0]) == "git-push":
                rest = ("git", "push", *words[1:])
            elif len(words) < 2 or words[1] != "push":
                continue
            verdict = push(rest, call)
            if verdict.block:
                return verdict
            uncertain = uncertain or verdict.uncertain
        return Verdict(uncertain=uncertain or doubt)

    return check


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


def _secret_reads(params: Mapping[str, tuple[str, ...]]) -> Check:
    names = (*SECRET_NAMES, *params["names"])
    home_dirs = (*SECRET_HOME_DIRS, *params["home_dirs"])

    def secret(word: str, call: Call) -> str | None:
        """Why ``word`` names a secret file, or None."""
        path = _resolve(word, call)
        name = posixpath.basename(path)
        if any(fnmatch.fnmatchcase(name, p) for p in NOT_SECRET_NAMES):
            return None
        if any(fnmatch.fnmatchcase(name, p) for p in names):
            return "a credentials file"
        for directory in home_dirs:
            root = posixpath.join(call.home, directory)
            if path.startswith(root + "/") or (path == root and "/" in directory):
                return f"under ~/{directory}"
        return None

    def check(call: Call) -> Verdict:
        kinds = call_kinds(call.tool, call.args)
        if not kinds or kinds & {"read", "write"}:
            paths = call_paths(call.tool, call.args)
            if paths is None:
                return Verdict(uncertain="a path of the call cannot be read")
            for path in paths:
                why = secret(path, call)
                if why is not None:
                    return Verdict(block=f"{call.tool} reads {path} ({why})")
        readings, error = _readings(call)
        uncertain = error
        for read in readings:
            words = [w for c in read.commands for w in c.words[1:]] + list(read.other_words)
            for word in words:
                if word is None:
                    continue
                for part in _path_parts(word):
                    why = secret(part, call)
                    if why is not None:
                        return Verdict(block=f"the command reads {part} ({why})")
            if read.dynamic and not uncertain:
                uncertain = f"a word known only at run time ({read.dynamic[0]}) may name a secret"
            if read.doubts and not uncertain:
                uncertain = read.doubts[0]
        return Verdict(uncertain=uncertain)

    return check


def _script_texts(args: Mapping[str, Any], scripts: CallScripts) -> list[str]:
    """The call's scripts as text, as :func:`~.ifrules.call_scripts` found them (an argv is
    joined as a shell would read it back)."""
    if not scripts.parsed:
        return []
    import shlex

    out: list[str] = []
    for key in SHELL_KEYS:
        value = args.get(key)
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, list | tuple) and value and all(isinstance(v, str) for v in value):
            out.append(shlex.join(value))
    return out


def _path_parts(word: str) -> Iterable[str]:
    """The word, and what follows ``=`` in it (``--env-file=.env``, ``if=~/.ssh/id_rsa``)."""
    yield word
    if "=" in word:
        yield word.partition("=")[2]


# --- downloads piped into a shell -------------------------------------------------------------

DOWNLOADERS: Final = frozenset(
    {"curl", "wget", "fetch", "aria2c", "http", "https", "xh", "lwp-request", "GET", "wget2"}
)
#: What the reader says of a shell or interpreter running code it cannot see.
_UNSEEN: Final = (
    "reads commands from stdin",
    "reading commands from stdin",
    "reads code from stdin",
    "dynamic shell",
    "runs code we cannot see",
    "runs code given in the call",
)


def _pipe_to_shell(params: Mapping[str, tuple[str, ...]]) -> Check:
    del params

    def check(call: Call) -> Verdict:
        readings, error = _readings(call)
        for read in readings:
            fetched = sorted({_base(c.words[0]) for c in read.commands} & DOWNLOADERS)
            unseen = [d for d in (*read.doubts, *read.foreign) if any(u in d for u in _UNSEEN)]
            if fetched and unseen:
                return Verdict(
                    block=f"it runs what {fetched[0]} downloads ({unseen[0]}): download the "
                    "script to a file, read it, then run it"
                )
        return Verdict(uncertain=error)

    return check


# --- writes outside the workspace -------------------------------------------------------------


def _writes_outside(params: Mapping[str, tuple[str, ...]]) -> Check:
    allowed = params["allow"]

    def inside(path: str, call: Call) -> bool:
        resolved = _resolve(path, call)
        roots = [call.workspace, *allowed]
        for root in roots:
            if not root:
                continue
            base = _resolve(root, call)
            if resolved == base or resolved.startswith(base.rstrip("/") + "/"):
                # Lexically inside; a symlink inside pointing out is followed too.
                real = os.path.realpath(resolved)
                real_base = os.path.realpath(base)
                return real == real_base or real.startswith(real_base.rstrip("/") + "/")
        return False

    def check(call: Call) -> Verdict:
        kinds = call_kinds(call.tool, call.args)
        if kinds and not kinds & {"write", "delete"}:
            return GO_ON
        paths = call_paths(call.tool, call.args)
        if paths is None:
            return Verdict(uncertain="a path of the call cannot be read")
        for path in paths:
            if path and not inside(path, call):
                return Verdict(
                    block=f"{call.tool} writes {path}, outside the workspace {call.workspace}"
                )
        return GO_ON

    return check


# --- the catalogue ----------------------------------------------------------------------------

GUARDS: Final[dict[str, GuardSpec]] = {
    "destructive_delete": GuardSpec(
        description="recursive deletes of /, a top-level directory, your home, the workspace "
        "or a directory above them (rm in any flag order or long form, --no-preserve-root, "
        "find -delete / -exec rm), through sudo, env, xargs, bash -c ...",
        on_uncertain="block",
        params={"protect": Param((), "more paths no recursive delete may name")},
        make=_destructive_delete,
    ),
    "protected_push": GuardSpec(
        description="force pushes (-f, --force, --force-with-lease, +refspec, --mirror) and "
        "pushes to or deletes of protected branches (named, HEAD:main, the current branch)",
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
        description="reading credentials: .env files, keys, ~/.ssh, ~/.aws, ~/.config/gcloud, "
        "netrc and token files, by a read or edit tool or named in a shell command",
        on_uncertain="warn",
        params={
            "names": Param((), "more file-name globs that hold secrets"),
            "home_dirs": Param((), "more directories under ~ that hold secrets"),
        },
        make=_secret_reads,
    ),
    "pipe_to_shell": GuardSpec(
        description="running a download unseen: curl/wget piped into a shell or interpreter, "
        'bash <(curl ...), sh -c "$(curl ...)", eval/source of a download',
        on_uncertain="warn",
        params={},
        make=_pipe_to_shell,
    ),
    "writes_outside_workspace": GuardSpec(
        description="a write or edit tool writing outside the workspace (symlinks followed)",
        on_uncertain="warn",
        params={"allow": Param(("/tmp",), "directories besides the workspace writes may go to")},
        make=_writes_outside,
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
            if value not in ON_UNCERTAIN:
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
