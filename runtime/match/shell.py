"""Shell scripts -> the simple commands they could run, for ``if = "shell(...)"`` rules.

This module owns reading a bash script (with tree-sitter-bash) into a flat list of simple
commands — each an argv of normalised words — plus an ``uncertain`` flag. It must not decide
whether a hook runs (that is :mod:`triohooks.match.ifrules`) and must never be *optimistic*: the
filter it feeds exists to save a spawn, never to skip a guard. Whenever the script could run
something this walker does not list, ``uncertain`` is set and the caller runs the hook.

What it understands:

- every ``command`` node anywhere in the tree: pipelines, ``&&``/``||``/``;``/``&`` lists,
  subshells, ``{ ...; }``, if/while/for/case bodies, function bodies, ``$(...)``, backticks,
  ``<(...)``/``>(...)``, substitutions inside strings, ``${x:-$(...)}``, ``$((...))`` and
  unquoted here-doc bodies;
- quoting: ``'g'it``, ``"git"``, ``g\\it``, ``$'\\x67it'`` all normalise to ``git``. A word with
  an expansion (``$x``, ``$(...)``, arithmetic), an unquoted glob (``*``, ``?``, ``[...]``) or a
  brace (``{a,b}``) is *dynamic* (``None``): it may become any words at run time;
- assignment prefixes (``FOO=1 cmd``) are dropped from the argv;
- wrappers (:data:`WRAPPERS`: ``env, nohup, command, builtin, exec, time, nice, timeout, xargs,
  stdbuf, sudo, doas, coproc, setsid, busybox``) are transparent: ``sudo -u x env A=1 rm -rf /``
  yields the command as written *and* ``env A=1 rm -rf /`` *and* ``rm -rf /``. Each wrapper's own
  options are skipped by a per-wrapper table; an option we do not know makes the result
  uncertain (we cannot tell whether it takes an argument). ``xargs`` and ``find -exec`` yield
  their inner command with an *open tail* (more arguments come at run time);
- ``bash|sh|zsh|dash|ksh|ash|mksh -c '<literal>'`` is parsed recursively, at most
  :data:`MAX_DEPTH` levels deep. A shell reading its commands from stdin (``curl x | sh``,
  ``bash -s``, ``bash <<EOF``) or from a dynamic ``-c`` string is uncertain.

What makes the result uncertain (the hook runs): a parse error or missing node; a node type
this walker does not know; a dynamic or glob command name (``$cmd``, ``/bin/r?``);
``eval``, ``source``, ``.``, ``trap``, ``alias``, ``watch`` and other shells' ``-c``
(fish, csh...); a ``-c`` deeper than :data:`MAX_DEPTH`; a script over :data:`MAX_SCRIPT`
characters; and the structural guards below.

Structural guards against known tree-sitter-bash 0.25 mis-parses that come back *without* an
error flag. In bash a simple command never spans an unescaped newline, ``;``, ``&`` or ``|``,
so inside a ``command`` (and redirect, declaration, negation) node the source between two
children must be blanks or ``\\<newline>`` only; in a pipeline or list a newline may follow only
an operator. Any other gap means the parser glued two statements together (tree-sitter-bash
#347: ``a | grep x | head``, newline, ``echo B && cd s`` comes back as ``head -30 echo B``; #316:
``[ 2 -lt 3 ]`` newline ``echo >1`` swallowed into one test; #278: a backtick with a leading
space running across lines) and the result is uncertain. A redirect with several destinations
(``rm >/dev/null -rf /`` — tree-sitter files ``-rf /`` under the redirect) gives the extra words
back to the command as arguments, or is uncertain when the redirect hangs on a pipeline/list.

Not modelled (documented gaps, seen as the program itself): programs that run strings as code
in other ways (``ssh host cmd``, ``su -c``, ``make``, ``python -c``, ``git -c alias...``), a
script file run as ``bash x.sh`` or ``./x.sh``, aliases defined elsewhere, and functions
inherited from the environment.
"""

from __future__ import annotations

import functools
import itertools
import posixpath
import re
from collections.abc import Iterable
from typing import Final

import msgspec
import tree_sitter
import tree_sitter_bash

#: ``bash -c '...'`` nesting we follow; one more level is uncertain.
MAX_DEPTH: Final = 3
#: Longer scripts are not parsed (bounded cost): uncertain.
MAX_SCRIPT: Final = 100_000

#: A word of an argv: its normalised text, or ``None`` when it is dynamic (expansion, glob...).
Word = str | None


class SimpleCommand(msgspec.Struct, frozen=True, gc=False):
    """One simple command as it could run: ``words[0]`` is the (static) program name.

    ``gc=False`` here and below: plain leaves (no cycles), and thousands sit in the parse cache;
    untracked, they add nothing to the collector's pauses.
    """

    words: tuple[Word, ...]
    #: More arguments are appended at run time (``xargs``, ``find -exec ... +``).
    open_tail: bool = False

    @property
    def name(self) -> str:
        name = self.words[0]
        assert name is not None
        return name


class ParsedScript(msgspec.Struct, frozen=True, gc=False):
    """The commands a script could run. ``uncertain`` = there may be others; run the hook."""

    commands: tuple[SimpleCommand, ...]
    uncertain: bool = False
    #: Why it is uncertain (for tests and ``doctor``); "" when certain.
    reason: str = ""


class _Uncertain(Exception):
    """Raised inside the walker; turned into ``ParsedScript(uncertain=True)``."""


# --- tree-sitter plumbing ---------------------------------------------------------------------

_PARSER: tree_sitter.Parser | None = None


def _parser() -> tree_sitter.Parser:
    """The module's one parser, created on first use (parsers are not thread-safe; triohooks
    calls this from its trio thread only)."""
    global _PARSER  # noqa: PLW0603 - lazily created singleton
    if _PARSER is None:
        _PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
    return _PARSER


#: Every named node type of tree-sitter-bash 0.25. A type not listed here (a newer grammar)
#: is something we do not understand: uncertain.
_KNOWN_TYPES: Final = frozenset(
    {
        "ansi_c_string",
        "arithmetic_expansion",
        "array",
        "binary_expression",
        "brace_expression",
        "c_style_for_statement",
        "case_item",
        "case_statement",
        "command",
        "command_name",
        "command_substitution",
        "comment",
        "compound_statement",
        "concatenation",
        "declaration_command",
        "do_group",
        "elif_clause",
        "else_clause",
        "expansion",
        "extglob_pattern",
        "file_descriptor",
        "file_redirect",
        "for_statement",
        "function_definition",
        "heredoc_body",
        "heredoc_content",
        "heredoc_end",
        "heredoc_redirect",
        "heredoc_start",
        "herestring_redirect",
        "if_statement",
        "list",
        "negated_command",
        "number",
        "parenthesized_expression",
        "pipeline",
        "postfix_expression",
        "process_substitution",
        "program",
        "raw_string",
        "redirected_statement",
        "regex",
        "simple_expansion",
        "special_variable_name",
        "string",
        "string_content",
        "subscript",
        "subshell",
        "ternary_expression",
        "test_command",
        "test_operator",
        "translated_string",
        "unary_expression",
        "unset_command",
        "variable_assignment",
        "variable_assignments",
        "variable_name",
        "while_statement",
        "word",
    }
)

#: Nodes whose children must be separated by blanks / line continuations only. (Not
#: ``concatenation`` / ``variable_assignment``: the grammar builds those from adjacent tokens.)
_TIGHT_NODES: Final = frozenset(
    {
        "command",
        "declaration_command",
        "unset_command",
        "file_redirect",
        "herestring_redirect",
        "negated_command",
        "redirected_statement",
    }
)
#: Named nodes that never hold commands: the walker does not descend into them.
_LEAVES: Final = frozenset(
    {
        "word",
        "number",
        "raw_string",
        "ansi_c_string",
        "string_content",
        "variable_name",
        "special_variable_name",
        "heredoc_content",
        "heredoc_start",
        "heredoc_end",
        "comment",
        "file_descriptor",
        "test_operator",
        "regex",
        "extglob_pattern",
    }
)
#: Nodes where a newline may follow an operator child, and only that.
_OPERATOR_NODES: Final = frozenset({"pipeline", "list"})
_LINE_OPERATORS_OR_COMMENT: Final = frozenset({"|", "|&", "&&", "||", "comment"})

#: Shells whose ``-c`` string we parse as bash (close enough for finding command names).
_SHELLS: Final = frozenset({"bash", "sh", "zsh", "dash", "ksh", "ash", "mksh", "rbash"})
#: Programs that run a string as code in a way we do not follow.
_OPAQUE: Final = frozenset(
    {"eval", "source", ".", "trap", "alias", "watch", "fish", "csh", "tcsh", "pwsh", "fc"}
)


class _WrapperSpec(msgspec.Struct, frozen=True):
    """How to skip one wrapper's own options to reach the command it runs."""

    #: Short options that take a value (``-u root`` or ``-uroot``).
    short_arg: str = ""
    #: Short options without a value.
    short_flags: str = ""
    #: Short options whose value can only be attached (``xargs -i{}``).
    short_opt_attached: str = ""
    long_arg: frozenset[str] = frozenset()
    long_flags: frozenset[str] = frozenset()
    #: ``NAME=value`` words are skipped (env, sudo).
    assignments: bool = False
    #: ``-5`` is an option (nice).
    numeric: bool = False
    #: Positional words before the command (timeout's duration).
    positional: int = 0
    #: Options that make the wrapper interpret a string as a command line (``env -S``).
    opaque: str = ""
    #: Extra arguments are appended at run time (xargs).
    open_tail: bool = False
    #: Options after which the inner command's arguments are rewritten at run time
    #: (``xargs -I {}``): every argument becomes dynamic.
    replacing: frozenset[str] = frozenset()


def _fs(*names: str) -> frozenset[str]:
    return frozenset(names)


#: Transparent wrappers and their option grammar (GNU coreutils / sudo / OpenBSD doas).
WRAPPERS: Final[dict[str, _WrapperSpec]] = {
    "env": _WrapperSpec(
        short_arg="uCS",
        short_flags="i0v",
        long_arg=_fs("--unset", "--chdir", "--split-string"),
        long_flags=_fs("--ignore-environment", "--null", "--debug"),
        assignments=True,
        opaque="S",
    ),
    "nohup": _WrapperSpec(),
    "command": _WrapperSpec(short_flags="pvV"),
    "builtin": _WrapperSpec(),
    "exec": _WrapperSpec(short_arg="a", short_flags="cl"),
    "time": _WrapperSpec(
        short_arg="fo",
        short_flags="pavq",
        long_arg=_fs("--format", "--output"),
        long_flags=_fs("--append", "--verbose", "--quiet", "--portability"),
    ),
    "nice": _WrapperSpec(short_arg="n", long_arg=_fs("--adjustment"), numeric=True),
    "timeout": _WrapperSpec(
        short_arg="sk",
        short_flags="v",
        long_arg=_fs("--signal", "--kill-after"),
        long_flags=_fs("--foreground", "--preserve-status", "--verbose"),
        positional=1,
    ),
    "xargs": _WrapperSpec(
        short_arg="adEILnPs",
        short_flags="0prtxo",
        short_opt_attached="iel",
        long_arg=_fs(
            "--arg-file",
            "--delimiter",
            "--max-lines",
            "--max-args",
            "--max-procs",
            "--max-chars",
            "--process-slot-var",
        ),
        long_flags=_fs(
            "--null",
            "--interactive",
            "--no-run-if-empty",
            "--verbose",
            "--exit",
            "--open-tty",
            "--replace",
            "--eof",
        ),
        open_tail=True,
        replacing=_fs("-I", "-i", "--replace"),
    ),
    "stdbuf": _WrapperSpec(short_arg="ioe", long_arg=_fs("--input", "--output", "--error")),
    "sudo": _WrapperSpec(
        short_arg="ugCDhprtTU",
        short_flags="AbEeHiKklnPSsVvBN",
        long_arg=_fs(
            "--user",
            "--group",
            "--close-from",
            "--chdir",
            "--host",
            "--prompt",
            "--role",
            "--type",
            "--command-timeout",
            "--other-user",
        ),
        long_flags=_fs(
            "--askpass",
            "--background",
            "--bell",
            "--preserve-env",
            "--edit",
            "--set-home",
            "--login",
            "--remove-timestamp",
            "--reset-timestamp",
            "--list",
            "--non-interactive",
            "--preserve-groups",
            "--stdin",
            "--shell",
            "--validate",
        ),
        assignments=True,
    ),
    "doas": _WrapperSpec(short_arg="uC", short_flags="nsL"),
    "coproc": _WrapperSpec(),
    "busybox": _WrapperSpec(),
    "setsid": _WrapperSpec(short_flags="cfw", long_flags=_fs("--ctty", "--fork", "--wait")),
}


# --- words ------------------------------------------------------------------------------------

_ANSI_SIMPLE: Final = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}


#: ``{a,b}`` / ``{1..3}`` (tree-sitter splits these into a concatenation of words). Matched on
#: the raw text, quotes included: a quoted brace pair is merely treated as dynamic too.
_BRACE_EXPANSION: Final = re.compile(r"\{[^{}\s]*(?:,|\.\.)[^{}\s]*\}")


_WORD_SPECIAL: Final = re.compile(r"[\\*?\[$`(]")


def _unquoted(text: str) -> Word:
    """An unquoted word: backslash escapes removed; ``None`` if it globs."""
    if not _WORD_SPECIAL.search(text):
        return text
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            if i + 1 < n and text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
            continue
        if c in "*?" or (c == "[" and "]" in text[i + 1 :]):
            return None
        if c in "$`(":
            return None  # should have been a separate node; be safe
        out.append(c)
        i += 1
    return "".join(out)


def _double_quoted(text: str) -> str:
    """The inside of ``"..."`` without expansions: only ``\\$ \\` \\" \\\\ \\<nl>`` escape."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n and text[i + 1] in '$`"\\\n':
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _ansi_c(text: str) -> Word:
    """The inside of ``$'...'``; ``None`` for escapes we do not decode (``\\c``)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c != "\\" or i + 1 == n:
            out.append(c)
            i += 1
            continue
        e = text[i + 1]
        i += 2
        if e in _ANSI_SIMPLE:
            out.append(_ANSI_SIMPLE[e])
            continue
        digits, base, limit = "", 0, 0
        if e in "01234567":
            base, limit, digits = 8, 2, e
        elif e in "xuU":
            base, limit = 16, {"x": 2, "u": 4, "U": 8}[e]
        else:
            return None
        while len(digits) < (limit + (1 if base == 8 else 0)) and i < n:
            ch = text[i]
            if (base == 8 and ch in "01234567") or (base == 16 and ch in "0123456789abcdefABCDEF"):
                digits += ch
                i += 1
            else:
                break
        if not digits:
            return None
        try:
            out.append(chr(int(digits, base)))
        except (ValueError, OverflowError):
            return None
    return "".join(out)


def _word(node: tree_sitter.Node) -> Word:
    """A word node's normalised static text, or ``None`` when it is dynamic."""
    t = node.type
    text = _text(node)
    if t in ("word", "concatenation") and _BRACE_EXPANSION.search(text):
        return None
    if t == "word":
        return _unquoted(text)
    if t == "number":
        return text
    if t == "raw_string":
        return text[1:-1]
    if t in ("string", "translated_string"):
        if any(c.is_named and c.type != "string_content" for c in node.children):
            return None
        inner = text[1:-1] if t == "string" else text[2:-1]
        return _double_quoted(inner)
    if t == "ansi_c_string":
        return _ansi_c(text[2:-1])
    if t == "concatenation":
        # tree-sitter splits `r[m]` into words; the pieces together still glob.
        if "]" in text and any(c.type == "word" and "[" in _text(c) for c in node.children):
            return None
        parts: list[str] = []
        for child in node.children:
            value = _word(child)
            if value is None:
                return None
            parts.append(value)
        return "".join(parts)
    if t == "command_name":
        return _word(node.children[0]) if node.child_count == 1 else None
    return None


def _text(node: tree_sitter.Node) -> str:
    raw = node.text
    return raw.decode("utf-8", "surrogateescape") if raw is not None else ""


def _is_assignment(word: str) -> bool:
    name, eq, _ = word.partition("=")
    return bool(eq) and name.replace("_", "a").isalnum() and not name[0].isdigit()


# --- the walker -------------------------------------------------------------------------------


class _Walker:
    """Collects simple commands; raises :class:`_Uncertain` at the first doubt."""

    def __init__(self, source: bytes, depth: int) -> None:
        self.source = source
        self.depth = depth
        self.commands: list[SimpleCommand] = []

    def walk(self, root: tree_sitter.Node) -> None:
        # has_error covers ERROR and MISSING nodes anywhere below.
        if root.has_error:
            raise _Uncertain("parse error")
        stack: list[tuple[tree_sitter.Node, tree_sitter.Node | None]] = [(root, None)]
        while stack:
            node, parent = stack.pop()
            t = node.type
            if t in _LEAVES:
                continue
            if t not in _KNOWN_TYPES:
                raise _Uncertain(f"unknown node {t}")
            if t in _TIGHT_NODES or t in _OPERATOR_NODES or t == "command_substitution":
                children = node.children
                if t == "command_substitution":
                    self._check_backticks(node, children)
                else:
                    self._check_gaps(t, children)
                if t == "command":
                    self._command(node, children, parent)
                elif t == "redirected_statement":
                    self._check_redirected(node)
                named = [c for c in children if c.is_named]
            else:
                named = node.named_children
            stack.extend((child, node) for child in reversed(named))

    def _check_gaps(self, node_type: str, children: list[tree_sitter.Node]) -> None:
        operators = node_type in _OPERATOR_NODES
        for left, right in itertools.pairwise(children):
            gap = self.source[left.end_byte : right.start_byte]
            if not gap or gap == b" ":
                continue
            gap = gap.replace(b"\\\n", b"")
            if not gap or (gap.isspace() and b"\n" not in gap):
                continue
            if operators and gap.isspace() and left.type in _LINE_OPERATORS_OR_COMMENT:
                continue
            if right.type == "heredoc_redirect" and _dashes(gap):
                continue  # `python3 - <<EOF`: the `-` is dropped, _command puts it back
            raise _Uncertain(f"{node_type} spans a line or operator (tree-sitter-bash mis-parse)")

    def _check_backticks(self, node: tree_sitter.Node, children: list[tree_sitter.Node]) -> None:
        if (
            children
            and children[0].type == "`"
            and b"\n" in self.source[node.start_byte : node.end_byte]
        ):
            raise _Uncertain("backticks across lines (tree-sitter-bash mis-parses these)")

    def _check_redirected(self, node: tree_sitter.Node) -> None:
        body = node.child_by_field_name("body")
        if body is not None and body.type != "command" and _extra_destinations(node):
            raise _Uncertain("redirect with several destinations after a compound")

    def _command(
        self,
        node: tree_sitter.Node,
        children: list[tree_sitter.Node],
        parent: tree_sitter.Node | None,
    ) -> None:
        words: list[Word] = []
        seen_name = False
        for index, child in enumerate(children):
            field = node.field_name_for_child(index)
            if field == "name":
                seen_name = True
                words.append(_word(child))
            elif field == "argument":
                words.append(_word(child))
            elif child.type == "file_redirect":
                words.extend(_word(w) for w in _destinations(child)[1:])
        if parent is not None and parent.type == "redirected_statement":
            body = parent.child_by_field_name("body")
            if body is not None and body.id == node.id:
                after = body.next_sibling
                if after is not None:
                    gap = self.source[node.end_byte : after.start_byte]
                    words.extend("-" for _ in range(_dashes(gap)))
                words.extend(_word(w) for w in _extra_destinations(parent))
        if not seen_name:
            return  # assignments / redirects only; their substitutions are walked anyway
        self.add(tuple(words), open_tail=False)

    def add(self, words: tuple[Word, ...], *, open_tail: bool) -> None:
        """Record ``words`` and whatever it runs through wrappers, ``-c`` and ``-exec``."""
        while True:
            if not words:
                return
            name = words[0]
            if name is None or name == "":
                raise _Uncertain("dynamic command name")
            self.commands.append(SimpleCommand(words, open_tail))
            base = posixpath.basename(name) or name
            if base in _OPAQUE:
                raise _Uncertain(f"{base} runs code we cannot see")
            if base in _SHELLS:
                self._shell(words)
                return
            if base == "find":
                self._find(words)
                return
            spec = WRAPPERS.get(base)
            if spec is None:
                return
            unwrapped = _unwrap(spec, words)
            if unwrapped is None:
                return
            words, replacing = unwrapped
            open_tail = open_tail or spec.open_tail
            if replacing:
                words = (words[0], *(None for _ in words[1:]))

    def _shell(self, words: tuple[Word, ...]) -> None:
        has_c = reads_stdin = False
        i = 1
        while i < len(words):
            w = words[i]
            if w is None:
                raise _Uncertain("dynamic shell -c string" if has_c else "dynamic shell option")
            if w == "--":
                i += 1
                break
            if w in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
                i += 2
                continue
            if w.startswith("--"):
                i += 1
                continue
            if len(w) > 1 and w[0] in "-+":
                has_c = has_c or "c" in w[1:]
                reads_stdin = reads_stdin or "s" in w[1:]
                i += 1
                continue
            break
        if i >= len(words):
            if not has_c:
                raise _Uncertain("shell reads commands from stdin")
            return
        if not has_c:
            if reads_stdin:
                raise _Uncertain("shell reads commands from stdin")
            return  # `bash script.sh`: a program like any other
        script = words[i]
        if script is None:
            raise _Uncertain("dynamic shell -c string")
        if self.depth >= MAX_DEPTH:
            raise _Uncertain("shell -c nested too deep")
        inner = _parse(script, self.depth + 1)
        if inner.uncertain:
            raise _Uncertain(inner.reason)
        self.commands.extend(inner.commands)

    def _find(self, words: tuple[Word, ...]) -> None:
        i = 1
        while i < len(words):
            if words[i] in ("-exec", "-execdir", "-ok", "-okdir"):
                j = i + 1
                while j < len(words) and words[j] not in (";", "+"):
                    j += 1
                # `{}` is a file name at run time: dynamic.
                inner = tuple(None if w is None or "{}" in w else w for w in words[i + 1 : j])
                self.add(inner, open_tail=j < len(words) and words[j] == "+")
                i = j
            i += 1


def _dashes(gap: bytes) -> int:
    """How many lone ``-`` words a gap holds when it holds nothing else (0 otherwise)."""
    tokens = gap.split()
    if b"\n" in gap or not tokens or any(t != b"-" for t in tokens):
        return 0
    return len(tokens)


def _destinations(redirect: tree_sitter.Node) -> list[tree_sitter.Node]:
    return redirect.children_by_field_name("destination")


def _extra_destinations(stmt: tree_sitter.Node) -> list[tree_sitter.Node]:
    """Words tree-sitter filed under a redirect after its first destination (bash: arguments)."""
    extra: list[tree_sitter.Node] = []
    for child in stmt.children_by_field_name("redirect"):
        if child.type == "file_redirect":
            extra.extend(_destinations(child)[1:])
    return extra


def _unwrap(spec: _WrapperSpec, words: tuple[Word, ...]) -> tuple[tuple[Word, ...], bool] | None:
    """The command a wrapper runs and whether its arguments get replaced at run time;
    ``None`` when it runs no command."""
    i, n = 1, len(words)
    replacing = False
    while i < n:
        w = words[i]
        if w is None:
            raise _Uncertain("dynamic wrapper option")
        if w == "--":
            i += 1
            break
        if spec.assignments and _is_assignment(w):
            i += 1
            continue
        if spec.replacing and (w.partition("=")[0] in spec.replacing or w[:2] in spec.replacing):
            replacing = True
        if w.startswith("--"):
            name, eq, _ = w.partition("=")
            if name in spec.long_arg:
                i += 1 if eq else 2
            elif name in spec.long_flags:
                i += 1
            else:
                raise _Uncertain(f"unknown wrapper option {name}")
            if name == "--split-string" and spec.opaque:
                raise _Uncertain("env --split-string")
            continue
        if len(w) > 1 and w[0] == "-":
            if spec.numeric and w[1:].isdigit():
                i += 1
                continue
            i += _short_cluster(spec, w)
            continue
        break
    i += spec.positional
    return (words[i:], replacing) if i < n else None


def _short_cluster(spec: _WrapperSpec, word: str) -> int:
    """How many words a cluster like ``-nu root`` consumes (1 or 2)."""
    for j in range(1, len(word)):
        c = word[j]
        if c in spec.opaque:
            raise _Uncertain(f"wrapper option -{c} interprets a command line")
        if c in spec.short_arg:
            return 1 if j + 1 < len(word) else 2
        if c in spec.short_opt_attached:
            return 1
        if c not in spec.short_flags:
            raise _Uncertain(f"unknown wrapper option -{c}")
    return 1


@functools.lru_cache(maxsize=2048)
def _parse(script: str, depth: int) -> ParsedScript:
    if len(script) > MAX_SCRIPT:
        return ParsedScript((), uncertain=True, reason="script too long")
    source = script.encode("utf-8", "surrogateescape")
    walker = _Walker(source, depth)
    try:
        walker.walk(_parser().parse(source).root_node)
    except _Uncertain as exc:
        return ParsedScript(tuple(walker.commands), uncertain=True, reason=str(exc))
    except RecursionError:
        return ParsedScript(tuple(walker.commands), uncertain=True, reason="too deep")
    return ParsedScript(tuple(walker.commands))


def parse_script(script: str) -> ParsedScript:
    """Every simple command ``script`` could run, or ``uncertain`` (cached on the text)."""
    return _parse(script, 0)


def parse_argv(argv: Iterable[str]) -> ParsedScript:
    """The same for a program run without a shell (``["bash", "-lc", "git status"]``)."""
    words = tuple(argv)
    walker = _Walker(b"", 0)
    try:
        walker.add(words, open_tail=False)
    except _Uncertain as exc:
        return ParsedScript(tuple(walker.commands), uncertain=True, reason=str(exc))
    return ParsedScript(tuple(walker.commands))
