"""``if = "<permission rule>"`` on TOML-dialect tool hooks (blitz HK-64): parse and check.

This module owns the rule grammar and the decision "does this tool call concern the rule?".
It must not run hooks, read config files or know about events; the caller skips a hook only
when :func:`rule_applies` says False. **Soundness rule**: the filter saves a spawn, it never
skips a guard — every doubt (a shell parse we are not sure of, a missing or odd argument, an
unknown tool carrying a path) answers True, "run the hook".

Grammar — one rule per ``if`` (no ``a || b``: write two hooks), surrounding blanks ignored:

- ``shell(<pattern>)``: the call runs a shell script or argv and *some* simple command of it
  (see :mod:`triohooks.match.shell`: pipelines, lists, subshells, substitutions, ``bash -c``,
  wrappers, ``ssh host cmd``, ``su -c``, ``watch``, runners like ``docker run``/``strace``...)
  matches ``<pattern>``. Code the walker cannot follow (``python -c``, ``eval``, ``source``, a
  shell reading stdin, a git alias, a variable like ``GIT_SSH_COMMAND``...) makes the parse
  uncertain, and then every shell rule applies. Words are normalised before matching, so
  quoting cannot dodge a rule (``'git'``, ``"git"``, ``g\\it``, ``$'\\x67it'`` are ``git``), and a
  program given by path also matches by its base name (``/usr/bin/git log`` matches ``git
  log``).
  Pattern forms:

  * words alone (no ``*``/``?``): that command with any arguments — ``git log`` matches
    ``git log --oneline`` but not ``git logs`` (though a ``git logs`` call still runs the
    hook: ``logs`` may be an alias). The pattern is split like a shell would
    (``shell(git commit -m "a b")``). A pattern program given by path compares by base name.
  * with ``*``/``?``: a glob over the whole command (its words joined by one space); ``*``
    matches anything including spaces, ``?`` one character, ``[`` is literal, no escapes. A
    trailing `` *`` also matches the bare command (``git push *`` matches ``git push``).
  * ``re:<regex>``: an RE2 regex that must match the whole command (words joined by spaces).

  A dynamic word (``$x``, ``$(...)``, an unquoted glob) may become any words: a pattern matches
  if it could match *some* expansion (words form: the pattern may match from that word on;
  glob form: the static words before it are a viable prefix; regex form: always). The same for
  an open tail (``xargs rm``, ``find -exec rm {} +``).

  Options between a program and its subcommand do not hide it: besides the command as written,
  each pattern form is also tried against the program followed by every word that could be the
  subcommand after its leading options (``kubectl -n ns delete pod`` is also tried as ``kubectl
  delete pod`` and ``kubectl ns delete pod``; ``docker --context x run img``). We cannot know
  which unknown options take a value, so every plain word right after an option is a candidate
  (over-matching is safe, missing is not). For git the walker knows the global options (``-C``,
  ``-c``, ``--git-dir``...) and lists ``git <subcommand> ...`` itself (``options_parsed``).

- ``read(<glob>)``, ``write(<glob>)``, ``delete(<glob>)``: the call's path(s). Globs are
  relative to the workspace (``**`` = any number of directories, ``*``/``?`` stay within one
  name, ``[...]`` a class); one with no ``/`` matches at any depth (like ``.gitignore``:
  ``read(.env)`` covers ``config/.env``); an absolute (or ``~``) glob matches absolute paths. A
  call path is matched made relative to the workspace when inside it (lexically and after
  resolving symlinks), and absolute always; a glob matching a parent directory covers what is
  under it, and a call naming an existing directory matches when a covered file could lie below.
- ``web(<host glob>)``: the host of the call's ``url`` (case-insensitive; ``*`` crosses dots;
  ``*.example.com`` also matches ``example.com``).
- ``skill(<glob>)``, ``agent(<glob>)``: the skill / subagent named by the call.
- a bare tool name (``write_file``): the call's tool, case-insensitive, also by its last
  namespace segment (``mcp__fs__write_file``) and by its canonical name (``bash`` is every
  agent's shell: :mod:`.tools`). A bare kind word (``shell``, ``read``, ...) means any call of
  that kind.

Which calls each kind looks at (the kinds of each tool name are :mod:`.tools`' one table;
names are compared lowercased, ``-`` as ``_``, and by their last ``.``/``__``/``:``/``/``
segment):

- shell: tools in :data:`SHELL_TOOLS`, and any other call whose args carry a ``command`` /
  ``cmd`` / ``script`` (a string is a bash script; a list of strings an argv, e.g. Codex's
  ``["bash", "-lc", "..."]``) unless the tool is a known file tool (``str_replace_based_edit_tool``
  has ``command="view"``). A shell tool without a usable script: run. A non-shell call never
  matches a shell rule.
- read/write/delete: tools in :data:`READ_TOOLS`, :data:`WRITE_TOOLS`, :data:`DELETE_TOOLS`
  (moves and patches are write *and* delete; multi-purpose editors are read *and* write; a
  shell call handing ``apply_patch`` a patch is a write and a delete too). Paths come from
  :data:`PATH_KEYS` (strings or lists of strings), a read tool's file globs (``include``: any
  file under their fixed part), and a patch's text (``*** Update File: x``, ``+++ b/x``: a
  patch tool's ``command``/``input``/``patch``..., or a shell's ``apply_patch`` argument or
  here-document). Relative paths are read from the call's own directory (:func:`call_cwd`).
  A tool of the kind without a path we can read: run. A tool of a *different* known kind: no.
  An unknown tool that carries a path: matched as if it were of the kind (in doubt, match).
- web: :data:`WEB_TOOLS` and any call carrying a ``url`` (a web tool's ``prompt`` too: Gemini
  CLI's ``web_fetch`` has its URLs there); a web tool without a url: run.
- skill / agent: :data:`SKILL_TOOLS` / :data:`AGENT_TOOLS`; the name from the first present key
  of :data:`SKILL_KEYS` / :data:`AGENT_KEYS`; missing: run.

Speed: parsing a script is cached (LRU on its text) in :mod:`triohooks.match.shell`; command globs
are translated to backtracking-safe stdlib patterns (atomic groups, like ``fnmatch``), user ``re:``
regexes compile with RE2 (linear time), path and host globs with RE2 too.
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal
from urllib.parse import urlsplit

import msgspec

from .tools import canonical_tool, cwd_keys, names_of_canonical, names_of_kind, normal
from .tools import tool_kinds as _tool_kinds
from .tools import tool_names as _tool_names

if TYPE_CHECKING:
    # The shell parser (tree-sitter) and RE2 load on first use: a process that only parses
    # rules, or checks calls no script reaches, never pays for them (``triohooks fire``).
    from .shell import ParsedScript, SimpleCommand, Word

Kind = Literal["shell", "read", "write", "delete", "web", "skill", "agent", "tool"]
Form = Literal["any", "words", "glob", "regex"]

KINDS: Final = ("shell", "read", "write", "delete", "web", "skill", "agent")
_KIND_BY_NAME: Final[dict[str, Kind]] = {
    "shell": "shell",
    "read": "read",
    "write": "write",
    "delete": "delete",
    "web": "web",
    "skill": "skill",
    "agent": "agent",
}


class IfRuleError(ValueError):
    """The rule text does not parse; the message says what is wrong."""


class IfRule(msgspec.Struct, frozen=True, gc=False):
    """One parsed ``if`` rule: plain, hashable data (compiled patterns live in module caches)."""

    #: The rule as written.
    text: str
    kind: Kind
    #: ``any`` (a bare kind word), shell ``words``/``glob``/``regex``, or ``glob`` for the rest
    #: (``tool`` rules: ``words`` with the tool name).
    form: Form
    #: The normalised pattern: glob / regex source / tool name.
    pattern: str = ""
    #: The words of a shell ``words`` pattern.
    words: tuple[str, ...] = ()


# --- tool classification ----------------------------------------------------------------------
# Each kind's tools come from the one table of tools (:mod:`.tools`): a name is there once.

SHELL_TOOLS: Final = names_of_kind("shell")
READ_TOOLS: Final = names_of_kind("read")
WRITE_TOOLS: Final = names_of_kind("write")
DELETE_TOOLS: Final = names_of_kind("delete")
WEB_TOOLS: Final = names_of_kind("web")
SKILL_TOOLS: Final = names_of_kind("skill")
AGENT_TOOLS: Final = names_of_kind("agent")
_FILE_TOOLS: Final = READ_TOOLS | WRITE_TOOLS | DELETE_TOOLS
_PATCH_TOOLS: Final = names_of_canonical("patch")

SHELL_KEYS: Final = ("command", "cmd", "script")
#: Shell tools whose scripts are PowerShell.
POWERSHELL_TOOLS: Final = frozenset({"powershell", "pwsh"})
PATH_KEYS: Final = (
    "path",
    "absolute_path",
    "file_path",
    "filepath",
    "filename",
    "file",
    "notebook_path",
    "target_file",
    "target",
    "source",
    "destination",
    "dest",
    "old_path",
    "new_path",
    "from",
    "to",
    "dir",
    "directory",
    "dir_path",
    "paths",
    "files",
    "file_paths",
    "target_files",
)
PATCH_KEYS: Final = ("input", "patch", "diff", "content")
URL_KEYS: Final = ("url", "uri", "href", "link", "urls")
SKILL_KEYS: Final = ("skill", "skill_name", "name", "id", "command")
AGENT_KEYS: Final = ("subagent_type", "agent", "agent_type", "agent_name", "subagent", "name")

# --- parsing ----------------------------------------------------------------------------------

_RULE: Final = re.compile(r"([A-Za-z_][\w.:-]*)\s*(?:\((.*)\))?", re.DOTALL)


def parse_if_rule(text: str) -> IfRule:
    """Parse one ``if`` rule; raises :class:`IfRuleError` saying what is wrong."""
    stripped = text.strip()
    if not stripped:
        raise IfRuleError("empty rule")
    m = _RULE.fullmatch(stripped)
    if m is None:
        raise IfRuleError(
            f"cannot read rule {text!r}: expected kind(pattern) with kind one of "
            f"{', '.join(KINDS)}, or a tool name"
        )
    name, inner = m.group(1), m.group(2)
    if inner is None:
        if name in KINDS:
            return IfRule(text, _KIND_BY_NAME[name], "any")
        return IfRule(text, "tool", "words", pattern=name.lower().replace("-", "_"))
    if name not in KINDS:
        raise IfRuleError(
            f"unknown rule kind {name!r} in {text!r}: expected one of {', '.join(KINDS)}"
        )
    inner = inner.strip()
    if not inner:
        raise IfRuleError(f"empty pattern in {text!r}")
    if not _balanced(inner):
        raise IfRuleError(f"unbalanced parentheses in {text!r} (one rule per `if`)")
    if name == "shell":
        return _parse_shell(text, inner)
    if inner.startswith("re:"):
        raise IfRuleError(f"re: patterns are only for shell(...) rules, not in {text!r}")
    if name in ("read", "write", "delete"):
        pattern = _normalise_path_glob(inner)
        _checked(text, _path_regex, pattern)
    elif name == "web":
        pattern = inner.lower()
        _checked(text, _host_regex, pattern)
    else:
        pattern = inner
        _checked(text, _name_regex, pattern)
    return IfRule(text, _KIND_BY_NAME[name], "glob", pattern=pattern)


def _balanced(inner: str) -> bool:
    depth = 0
    for ch in inner:
        depth += (ch == "(") - (ch == ")")
        if depth < 0:
            return False
    return depth == 0


def _parse_shell(text: str, inner: str) -> IfRule:
    if inner.startswith("re:"):
        source = inner[3:]
        if not source:
            raise IfRuleError(f"empty regex in {text!r}")
        _checked(text, _user_regex, source)
        return IfRule(text, "shell", "regex", pattern=source)
    try:
        words = tuple(shlex.split(inner))
    except ValueError as exc:
        raise IfRuleError(f"cannot split shell pattern in {text!r}: {exc}") from None
    if not words:
        raise IfRuleError(f"empty shell pattern in {text!r}")
    pattern = " ".join(words)
    if "*" in pattern or "?" in pattern:
        _checked(text, _command_glob, pattern)
        return IfRule(text, "shell", "glob", pattern=pattern)
    return IfRule(text, "shell", "words", pattern=pattern, words=words)


# --- compiled pattern caches ------------------------------------------------------------------


@functools.cache
def _re2_options() -> Any:
    import re2

    options = re2.Options()
    options.log_errors = False
    return options


def _re2(source: str) -> Any:
    import re2

    try:
        return re2.compile(source, _re2_options())
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        if isinstance(detail, bytes):
            detail = detail.decode(errors="replace")
        detail = str(detail)
        if not detail.isprintable():  # RE2 quotes the bad part as is: keep the message one line
            detail = detail.encode("unicode_escape").decode("ascii")
        raise IfRuleError(f"bad pattern: {detail}") from None


def _checked(text: str, compile_: Any, pattern: str) -> None:
    """Compile ``pattern`` now (filling the cache), naming the rule in any error."""
    try:
        compile_(pattern)
    except IfRuleError as exc:
        raise IfRuleError(f"{exc} in {text!r}") from None


@functools.lru_cache(maxsize=256)
def _user_regex(source: str) -> Any:
    return _re2(source)


class _CommandGlob(msgspec.Struct, frozen=True, gc=False):
    """A compiled shell glob: full-match patterns plus the tokens for prefix checks."""

    full: tuple[re.Pattern[str], ...]
    #: The glob as tokens: "*" any run, "?" one char, else a literal char.
    tokens: tuple[str, ...]
    #: The literal text before the first wildcard: every match starts with it.
    lead: str = ""


def _atomic_glob(glob: str) -> re.Pattern[str]:
    """``*``/``?`` glob -> a stdlib regex that cannot backtrack catastrophically (as fnmatch)."""
    pieces = glob.split("*")

    def lit(piece: str) -> str:
        return ".".join(re.escape(part) for part in piece.split("?"))

    if len(pieces) == 1:
        return re.compile(f"(?s:{lit(glob)})\\Z")
    body = lit(pieces[0])
    for middle in pieces[1:-1]:
        body += f"(?>.*?{lit(middle)})"
    body += f".*{lit(pieces[-1])}"
    return re.compile(f"(?s:{body})\\Z")


@functools.lru_cache(maxsize=256)
def _command_glob(glob: str) -> _CommandGlob:
    full = [_atomic_glob(glob)]
    if glob.endswith(" *"):
        full.append(_atomic_glob(glob[:-2]))
    lead = re.split(r"[*?]", glob, maxsplit=1)[0]
    return _CommandGlob(tuple(full), tuple(glob), lead)


def _glob_to_regex(glob: str, *, star: str, qmark: str, classes: bool) -> str:
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        if c == "*" and glob.startswith("**", i) and star != ".*":
            at_start = i == 0 or glob[i - 1] == "/"
            at_end = i + 2 == n or glob[i + 2] == "/"
            if at_start and at_end:
                if i + 2 == n:
                    out.append(".*")
                    i += 2
                else:
                    out.append("(?:.*/)?")
                    i += 3
                continue
            out.append(star)
            i += 2
            continue
        if c == "*":
            out.append(star)
        elif c == "?":
            out.append(qmark)
        elif c == "[" and classes:
            end = glob.find("]", i + 2 if glob.startswith(("[!", "[^"), i) else i + 1)
            if end < 0:
                raise IfRuleError(f"unclosed [ in glob {glob!r}")
            body = glob[i + 1 : end]
            if body.startswith(("!", "^")):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
            continue
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _normalise_path_glob(glob: str) -> str:
    glob = os.path.expanduser(glob)
    if glob.startswith("/"):
        return posixpath.normpath(glob) if "**" not in glob else glob
    while glob.startswith("./"):
        glob = glob[2:]
    glob = glob.rstrip("/") or "."
    if "/" not in glob:
        glob = "**/" + glob
    return glob


@functools.lru_cache(maxsize=256)
def _path_regex(glob: str) -> Any:
    """The glob, or a parent directory of the path matching it (covers what is under it)."""
    source = _glob_to_regex(glob, star="[^/]*", qmark="[^/]", classes=True)
    return _re2(f"(?:{source})(?:/.*)?")


@functools.lru_cache(maxsize=256)
def _host_regex(glob: str) -> Any:
    source = _glob_to_regex(glob, star=".*", qmark=".", classes=True)
    if glob.startswith("*."):
        source = f"(?:{source}|{re.escape(glob[2:])})"
    return _re2(source)


@functools.lru_cache(maxsize=256)
def _name_regex(glob: str) -> Any:
    return _re2("(?i)" + _glob_to_regex(glob, star=".*", qmark=".", classes=True))


# --- checking ---------------------------------------------------------------------------------


def rule_applies(
    rule: IfRule, *, tool: str, args: Mapping[str, Any], workspace: str, cwd: str = ""
) -> bool:
    """True when the hook must run for this call (the call concerns the rule, or we can't tell).
    ``cwd``: the event's working directory (relative paths resolve against the call's own,
    :func:`call_cwd`)."""
    if rule.kind == "tool":
        return rule.pattern in _rule_names(tool)
    if rule.kind == "shell":
        return _shell_applies(rule, tool, args)
    if rule.kind in ("read", "write", "delete"):
        return _path_applies(rule, tool, args, workspace, call_cwd(tool, args, cwd, workspace))
    if rule.kind == "web":
        return _web_applies(rule, tool, args)
    return _named_applies(rule, tool, args)


def _rule_names(tool: str) -> tuple[str, ...]:
    """What a bare tool-name rule compares with: the tool's own name (and its last namespace
    segment), and its canonical name (:func:`~.tools.canonical_tool`: ``bash`` is every
    agent's shell)."""
    canonical = canonical_tool(tool)
    names = _tool_names(tool)
    return names if canonical is None else (*names, normal(canonical))


class CallScripts(msgspec.Struct, frozen=True, gc=False):
    """The shell scripts one tool call runs (see :func:`call_scripts`)."""

    #: The tool is a known shell tool.
    shell: bool
    #: Each script it carries, read: a string as a bash script, a list of strings as an argv.
    parsed: tuple[ParsedScript, ...] = ()
    #: A shell tool carrying a script (or a working directory) we cannot read.
    unreadable: bool = False
    #: What could not be read, when ``unreadable``.
    why: str = ""
    #: The scripts are PowerShell (Copilot CLI's ``powershell`` tool), read by
    #: :mod:`.powershell` into the same commands.
    powershell: bool = False


def script_texts(args: Mapping[str, Any]) -> list[str]:
    """The scripts a call's arguments carry under :data:`SHELL_KEYS`, as text: a string as it
    is, an argv joined as a shell would read it back."""
    import shlex

    out: list[str] = []
    for key in SHELL_KEYS:
        value = args.get(key)
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, list | tuple) and value and all(isinstance(v, str) for v in value):
            out.append(shlex.join(value))
    return out


@functools.cache
def _readers() -> tuple[
    Callable[[str], ParsedScript], Callable[[str], ParsedScript], Callable[[Any], ParsedScript]
]:
    """The script readers, imported on first use (tree-sitter loads only when a call has a
    script to read)."""
    from .powershell import parse_powershell
    from .shell import parse_argv, parse_script

    return parse_powershell, parse_script, parse_argv


def call_scripts(tool: str, args: Mapping[str, Any]) -> CallScripts:
    """What a call of ``tool`` with ``args`` runs in a shell: a shell tool's ``command`` /
    ``cmd`` / ``script``, and the same keys on any other call but a known file tool's (a
    ``str_replace_based_edit_tool`` ``command`` is ``view``). The one reading of a call's
    scripts, for ``shell(...)`` rules and the built-in guards. A shell tool's working
    directory (``workdir``, ``dir_path``...) that is not a string makes it unreadable too: where
    the script runs is part of what it does."""
    names = _tool_names(tool)
    is_shell = any(n in SHELL_TOOLS for n in names)
    if not is_shell and any(n in _FILE_TOOLS for n in names):
        return CallScripts(False)
    parsed: list[ParsedScript] = []
    powershell = not POWERSHELL_TOOLS.isdisjoint(names)
    for key in SHELL_KEYS:
        if key not in args:
            continue
        parse_powershell, parse_script, parse_argv = _readers()
        value = args[key]
        if isinstance(value, str):
            parsed.append(parse_powershell(value) if powershell else parse_script(value))
        elif isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
            parsed.append(parse_argv(value))
        elif is_shell:
            why = f"the shell command ({key}) is not a string or a list of strings"
            return CallScripts(True, tuple(parsed), unreadable=True, why=why)
    for key in cwd_keys(tool):
        if key in args and not isinstance(args[key], str):
            why = f"the working directory ({key}) is not a string"
            return CallScripts(is_shell, tuple(parsed), unreadable=True, why=why)
    return CallScripts(is_shell, tuple(parsed), powershell=powershell)


def call_cwd(tool: str, args: Mapping[str, Any], cwd: str | None, workspace: str) -> str:
    """The directory a call runs in, for the ``if`` rules and the built-in guards alike: the
    tool's own working directory (Codex ``exec_command``'s ``workdir``, Gemini CLI's
    ``dir_path``, Qwen Code's ``directory``), relative to the event's ``cwd``; else the event's
    ``cwd``; else the workspace. (One that is not a string: :func:`call_scripts` says the call
    cannot be read.)"""
    base = cwd or workspace
    for key in cwd_keys(tool):
        value = args.get(key)
        if isinstance(value, str) and value:
            return posixpath.normpath(posixpath.join(base, os.path.expanduser(value)))
    return base


def _shell_applies(rule: IfRule, tool: str, args: Mapping[str, Any]) -> bool:
    call = call_scripts(tool, args)
    if call.unreadable:
        return True  # a shell call whose script we cannot read
    if not call.parsed:
        return call.shell  # a shell tool without a script: run
    return any(_script_matches(rule, parsed) for parsed in call.parsed)


def _script_matches(rule: IfRule, parsed: ParsedScript) -> bool:
    if parsed.uncertain or rule.form == "any":
        return True
    return any(_command_matches(rule, cmd) for cmd in parsed.commands)


def _variants(cmd: SimpleCommand) -> list[tuple[Word, ...]]:
    """The command as written, by its program's base name, and with the options before each
    word that could be its subcommand removed (``kubectl -n ns delete x`` -> ``kubectl delete x``
    and ``kubectl ns delete x``)."""
    words = cmd.words
    name = cmd.name
    names = [name]
    if "/" in name:
        base = posixpath.basename(name)
        if base:
            names.append(base)
    tails = [words[1:]]
    if not cmd.options_parsed and len(words) > 2:
        first = words[1]
        if first is not None and len(first) > 1 and first[0] == "-":
            tails.extend(words[j:] for j in _subcommand_candidates(words))
    if len(names) == 1 and len(tails) == 1:
        return [words]
    return [(n, *tail) for n in names for tail in tails]


def _subcommand_candidates(words: tuple[Word, ...]) -> list[int]:
    """Positions (from 2) of the words that could be the subcommand after leading options.

    We do not know which options take a value, so a plain word right after an option may be
    that value *or* the subcommand: both are candidates, and the scan goes on past it. It stops
    at a plain word that follows a plain word (that one is surely an argument) and after
    ``--``. A dynamic word counts as a plain word (it may be anything, the matcher knows).
    """
    candidates: list[int] = []
    after_option = False
    for j in range(1, len(words)):
        w = words[j]
        if w == "--":
            if j + 1 < len(words):
                candidates.append(j + 1)
            break
        if w is not None and len(w) > 1 and w[0] == "-":
            after_option = not (w.startswith("--") and "=" in w)
            continue
        if j >= 2:
            candidates.append(j)
        if not after_option:
            break
        after_option = False
    return candidates


def _name_may_match(rule: IfRule, name: str) -> bool:
    """Cheap pre-check: can a command run by ``name`` match at all? (Every variant the matcher
    tries starts with ``name`` or its base name.)"""
    base = (name.rsplit("/", 1)[-1] or name) if "/" in name else name
    if rule.form == "words":
        p0 = rule.words[0]
        return p0 in (name, base) or ("/" in p0 and posixpath.basename(p0) == base)
    if rule.form == "glob":
        lead = _command_glob(rule.pattern).lead
        if not lead or name.startswith(lead) or lead.startswith(name + " "):
            return True
        return base is not name and (base.startswith(lead) or lead.startswith(base + " "))
    return True


def _command_matches(rule: IfRule, cmd: SimpleCommand) -> bool:
    if not _name_may_match(rule, cmd.name):
        return False
    for variant in _variants(cmd):
        if rule.form == "words":
            if _words_match(rule.words, variant, cmd.open_tail):
                return True
        elif rule.form == "glob":
            if _glob_match(_command_glob(rule.pattern), variant, cmd.open_tail):
                return True
        elif any(w is None for w in variant) or cmd.open_tail:
            return True  # a regex against a partly unknown command: could match
        elif _user_regex(rule.pattern).fullmatch(" ".join(variant)):  # type: ignore[arg-type]
            return True
    return False


def _words_match(pattern: tuple[str, ...], words: tuple[str | None, ...], open_tail: bool) -> bool:
    p0 = pattern[0]
    name = words[0]
    assert name is not None
    if not (name == p0 or ("/" in p0 and posixpath.basename(p0) == posixpath.basename(name))):
        return False
    for i, expected in enumerate(pattern[1:], start=1):
        if i >= len(words):
            return open_tail
        word = words[i]
        if word is None:
            return True  # may expand to the rest of the pattern
        if word != expected:
            return False
    return True


def _glob_match(glob: _CommandGlob, words: tuple[str | None, ...], open_tail: bool) -> bool:
    static: list[str] = []
    dynamic = open_tail
    for word in words:
        if word is None:
            dynamic = True
            break
        static.append(word)
    prefix = " ".join(static)
    if any(r.match(prefix) for r in glob.full):
        return True
    if not dynamic:
        return False
    return _glob_viable(glob.tokens, prefix + " ")


def _glob_viable(tokens: tuple[str, ...], prefix: str) -> bool:
    """Whether some string starting with ``prefix`` matches the glob (an NFA walk)."""
    n = len(tokens)

    def close(states: set[int]) -> set[int]:
        todo = list(states)
        while todo:
            pos = todo.pop()
            if pos < n and tokens[pos] == "*" and pos + 1 not in states:
                states.add(pos + 1)
                todo.append(pos + 1)
        return states

    states = close({0})
    for ch in prefix:
        nxt: set[int] = set()
        for pos in states:
            if pos >= n:
                continue
            tok = tokens[pos]
            if tok == "*":
                nxt.add(pos)
            elif tok in ("?", ch):
                nxt.add(pos + 1)
        if not nxt:
            return False
        states = close(nxt)
    return True


# paths


def _path_applies(
    rule: IfRule, tool: str, args: Mapping[str, Any], workspace: str, cwd: str
) -> bool:
    kinds = call_kinds(tool, args)
    mine = rule.kind in kinds
    if kinds and not mine:
        return False
    paths = call_paths(tool, args)
    if paths is None:
        return True  # a path we cannot read
    if not paths:
        return mine  # a tool of the kind with no path (grep over the workspace...): run
    if rule.form == "any":
        return True
    return any(_path_matches(rule.pattern, p, workspace, cwd) for p in paths)


#: A patch's file headers: Codex's format (``*** Add File: x``, ``*** Move to: y``) ...
_CODEX_PATCH_PATH: Final = re.compile(
    r"^\*\*\* (?:(?:Add|Update|Delete) File|Move to): (.+?)\s*$", re.MULTILINE
)
#: ... and a unified diff's (``--- a/x``, ``+++ b/x``; a tab and a timestamp may follow).
_DIFF_PATH: Final = re.compile(r"^(?:---|\+\+\+) (?:[ab]/)?([^\t\n]+?)\s*(?:\t.*)?$", re.MULTILINE)
#: The programs that apply a Codex patch given as an argument or a here-document (Codex runs
#: ``apply_patch <<'EOF' ...`` sent to its shell tool itself, as the patch tool; measured 0.169.1).
_PATCH_PROGRAMS: Final = frozenset({"apply_patch", "applypatch"})
_HEREDOC: Final = re.compile(
    r"<<(-)?[ \t]*(['\"]?)([A-Za-z_][\w-]*)\2[^\n]*\n(.*?)^(?(1)\t*)\3$", re.DOTALL | re.MULTILINE
)
#: Keys of a read tool holding globs of the files it reads (Gemini CLI's ``read_many_files``).
_GLOB_KEYS: Final = ("include", "glob")
_READ_GLOB_TOOLS: Final = names_of_canonical("read", "grep", "glob")


def patch_paths(text: str) -> list[str] | None:
    """The files a patch writes, deletes or moves (a Codex patch's headers, else a unified
    diff's: a removed line ``-- x`` in a Codex hunk is no header there); None
    when its text names none (what it would do cannot be read)."""
    found = _CODEX_PATCH_PATH.findall(text)
    if not found:
        found = [p for p in _DIFF_PATH.findall(text) if p != "/dev/null"]
    return found or None


def call_paths(tool: str, args: Mapping[str, Any]) -> list[str] | None:
    """Every path a call of ``tool`` names: its path keys, a read tool's file globs (Gemini's
    ``read_many_files`` ``include``), a patch tool's patch (Codex's ``apply_patch``
    ``{"command": "<patch>"}``, ``input``, ``patch``...), and the patch a shell call hands
    ``apply_patch``; ``None`` when one of them cannot be read (not a string, a patch tool
    without a patch we can read). The kinds such a call is: :func:`call_kinds`."""
    names = _tool_names(tool)
    paths = _strings(args, PATH_KEYS)
    if paths is None:
        return None
    if _READ_GLOB_TOOLS.intersection(names):
        globs = _strings(args, _GLOB_KEYS)
        if globs is None:
            return None
        paths.extend(globs)
    if _PATCH_TOOLS.intersection(names):
        texts = [args[k] for k in (*PATCH_KEYS, "command") if k in args]
        if not texts or not all(isinstance(t, str) for t in texts):
            return None
        for text in texts:
            found = patch_paths(text)
            if found is None:
                return None
            paths.extend(found)
    elif any(n in SHELL_TOOLS for n in names) and _runs_patch(args):
        found = _shell_patch_paths(args)
        if found is None:
            return None
        paths.extend(found)
    return paths


def call_kinds(tool: str, args: Mapping[str, Any]) -> frozenset[str]:
    """The kinds a call is: its tool's (:func:`tool_kinds`), and a write and a delete too for a
    shell call that hands ``apply_patch`` a patch (Codex applies it as its patch tool)."""
    kinds = _tool_kinds(tool)
    if "shell" in kinds and _runs_patch(args):
        return kinds | _PATCH_KINDS
    return kinds


_PATCH_KINDS: Final = frozenset({"write", "delete"})


def _runs_patch(args: Mapping[str, Any]) -> bool:
    """Whether a shell call's script may run ``apply_patch`` (a cheap look at its text)."""
    for key in SHELL_KEYS:
        value = args.get(key)
        text = " ".join(value) if isinstance(value, list | tuple) else value
        if isinstance(text, str) and ("apply_patch" in text or "applypatch" in text):
            return True
    return False


def _shell_patch_paths(args: Mapping[str, Any]) -> list[str] | None:
    """The files the patches a shell call hands ``apply_patch`` write (an argument or a
    here-document), relative ones under the directory a plain ``cd DIR`` before it names;
    None when a patch, or where it applies, cannot be read."""
    from .shell import parse_argv, parse_script

    found: list[str] = []
    for key in SHELL_KEYS:
        value = args.get(key)
        if isinstance(value, str):
            script, text = parse_script(value), value
        elif isinstance(value, list | tuple) and value and all(isinstance(v, str) for v in value):
            script, text = parse_argv(value), ""
        else:
            continue
        if script.uncertain:
            return None
        base = ""
        for cmd in script.commands:
            name = posixpath.basename(cmd.name)
            if name == "cd":
                target = cmd.words[1] if len(cmd.words) == 2 else None
                if target is None:
                    return None  # cd to a directory known only at run time
                base = posixpath.join(base, target)
            elif name in _PATCH_PROGRAMS:
                patches: list[str | None] = list(cmd.words[1:2])
                if not patches:  # the patch on stdin: a here-document of the script
                    patches = [m.group(4) for m in _HEREDOC.finditer(text)] or [None]
                for patch in patches:
                    paths = patch_paths(patch) if patch is not None else None
                    if paths is None:
                        return None  # a patch known only at run time, or naming no file
                    found.extend(posixpath.join(base, os.path.expanduser(p)) for p in paths)
    return found


def tool_kinds(tool: str) -> frozenset[str]:
    """The kinds (``read``, ``write``, ``delete``, ``shell``, ``web``...) a tool is known as;
    empty for a tool we do not know."""
    return _tool_kinds(tool)


def _path_matches(glob: str, path: str, workspace: str, cwd: str) -> bool:
    if not path:
        return True
    regex = _path_regex(glob)
    held = _GLOB_CHARS.search(path)
    if held is not None:
        # A glob of files the call reads (``src/**/*.ts``): any file under its fixed part.
        fixed = path[: held.start()]
        path = fixed if fixed.endswith("/") else (posixpath.dirname(fixed) or ".")
    forms = _path_forms(path, workspace, cwd, absolute=glob.startswith("/"))
    for form, is_dir in forms:
        if regex.fullmatch(form) or ((is_dir or held is not None) and _dir_may_hold(glob, form)):
            return True
    return False


_GLOB_CHARS: Final = re.compile(r"[*?\[{]")


@functools.lru_cache(maxsize=64)
def _roots(workspace: str) -> tuple[str, ...]:
    """The workspace, lexically and with symlinks resolved."""
    ws = posixpath.normpath(os.path.abspath(workspace))
    return tuple(dict.fromkeys((ws, os.path.realpath(ws))))


def _path_forms(path: str, workspace: str, cwd: str, *, absolute: bool) -> list[tuple[str, bool]]:
    """The forms of ``path`` (relative to ``cwd``, else the workspace) a glob is matched
    against, each with "is an existing directory".

    Relative globs see the path relative to the workspace (lexical and symlink-resolved); a
    directory *containing* the workspace is seen as the workspace root ("." — it may hold
    anything). Absolute globs see both absolute forms.
    """
    roots = _roots(workspace)
    base = posixpath.join(roots[0], cwd) if cwd else roots[0]
    lexical = posixpath.normpath(posixpath.join(base, os.path.expanduser(path)))
    real = os.path.realpath(lexical)
    is_dir = os.path.isdir(real)
    fulls = (lexical,) if real == lexical else (lexical, real)
    if absolute:
        return [(full, is_dir) for full in fulls]
    forms: list[tuple[str, bool]] = []
    for full in fulls:
        for root in roots:
            if full == root or (is_dir and root.startswith(full.rstrip("/") + "/")):
                forms.append((".", is_dir))
            elif full.startswith(root + "/"):
                forms.append((full[len(root) + 1 :], is_dir))
    return forms


def _dir_may_hold(glob: str, directory: str) -> bool:
    """Conservatively: could a path the glob matches lie below ``directory``?"""
    if directory in (".", "/"):
        return True
    literal = re.split(r"[*?\[]", glob, maxsplit=1)[0]
    inside = directory.rstrip("/") + "/"
    return literal.startswith(inside) or inside.startswith(literal)


# web, skill, agent


_PROMPT_URL: Final = re.compile(r"https?://[^\s<>\"'`)\]]+")


def _web_applies(rule: IfRule, tool: str, args: Mapping[str, Any]) -> bool:
    kinds = _tool_kinds(tool)
    mine = "web" in kinds
    if kinds and not mine:
        return False
    urls = _strings(args, URL_KEYS)
    if urls is None:
        return True
    if mine and "prompt" in args:  # Gemini CLI's web_fetch: the URLs are in its prompt
        prompt = args["prompt"]
        if not isinstance(prompt, str):
            return True
        urls.extend(_PROMPT_URL.findall(prompt))
    if not urls:
        return mine
    if rule.form == "any":
        return True
    regex = _host_regex(rule.pattern)
    for url in urls:
        try:
            host = urlsplit(url if "//" in url else "//" + url).hostname
        except ValueError:
            return True
        if not host or regex.fullmatch(host.rstrip(".")):
            return True
    return False


def _named_applies(rule: IfRule, tool: str, args: Mapping[str, Any]) -> bool:
    kinds = _tool_kinds(tool)
    if rule.kind not in kinds:
        return False
    if rule.form == "any":
        return True
    keys = SKILL_KEYS if rule.kind == "skill" else AGENT_KEYS
    names = _strings(args, keys, first=True)
    if not names:
        return True
    regex = _name_regex(rule.pattern)
    return any(regex.fullmatch(n) for n in names)


def _strings(
    args: Mapping[str, Any], keys: Iterable[str], *, first: bool = False
) -> list[str] | None:
    found: list[str] = []
    for key in keys:
        if key not in args:
            continue
        value = args[key]
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            found.extend(value)
        else:
            return None
        if first:
            break
    return found
