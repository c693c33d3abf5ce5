"""Tool-name globs: Go ``path.Match`` (TOML ``match``) and ``tool_name_glob`` (JSON dialect).

This module owns the syntax and the matching of the two glob languages, nothing else. It must not
know about hooks, events or config files: the loaders call the validators at startup, the
dispatcher calls the matchers per event.

Go ``path.Match`` semantics, reproduced from Go's ``path/match.go`` (pattern syntax)::

    pattern:  { term }
    term:     '*'         any sequence of non-'/' characters
              '?'         any single non-'/' character
              '[' [ '^' ] { character-range } ']'   class (must be non-empty)
              c           matches character c (c != '*', '?', '\\\\', '[')
              '\\\\' c      matches character c
    character-range:  c  |  lo '-' hi     (c != '\\\\', '-', ']'; '\\\\' c escapes)

Notes a user may trip on, all as in Go: ``!`` is *not* a negation (``[!a]`` is the class of
``!`` and ``a``); a class *can* match ``/`` (only ``*`` and ``?`` stop at it); a reversed range
(``[z-a]``) is legal and matches nothing; Go matches greedily chunk by chunk without backtracking
into an earlier ``*`` (``*[a/]*b`` does not match ``aa/b``), and we keep that.

Some Go releases' ``Match`` returned ``false`` without an error for a bad pattern when an
earlier part had already failed to match. A startup validator must reject every bad pattern
whatever name it is later matched against, so :func:`validate_go_glob` parses the whole pattern on
its own, and matching runs on the parsed form. Checked against Go 1.19's ``path.Match`` on a
million random pattern/name pairs: same matches, same bad patterns.

Go works on UTF-8 bytes, we on code points; for valid UTF-8 both agree (``?`` is one rune). The
one difference: Go's ``*`` skips byte by byte, so a negated class after it can match the second
byte of a multi-byte character (``*[^é]`` matches ``é`` in Go); here it cannot.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Final

__all__ = [
    "GlobError",
    "compile_go_glob",
    "compile_tool_name_glob",
    "go_path_match",
    "has_bare_bar",
    "tool_name_glob_match",
    "validate_go_glob",
    "validate_tool_name_glob",
]


class GlobError(ValueError):
    """A glob pattern is malformed (Go: ``ErrBadPattern``)."""


class _AnyChar:
    """``?``: one character that is not ``/``."""

    __slots__ = ()


_ANY: Final = _AnyChar()


class _Class:
    """``[...]``: one character in (or, negated, not in) a set of inclusive ranges."""

    __slots__ = ("negated", "ranges")

    def __init__(self, negated: bool, ranges: tuple[tuple[str, str], ...]) -> None:
        self.negated = negated
        self.ranges = ranges

    def matches(self, c: str) -> bool:
        hit = any(lo <= c <= hi for lo, hi in self.ranges)
        return hit != self.negated


#: One element of a chunk: a literal run (``str``), ``?``, or a class.
_Elem = str | _AnyChar | _Class
#: A chunk: whether a ``*`` precedes it, and its elements. A trailing ``*`` is ``(True, ())``.
_Chunk = tuple[bool, tuple[_Elem, ...]]

_META: Final = frozenset("*?[\\")


def _bad(pattern: str, why: str) -> GlobError:
    return GlobError(f"syntax error in pattern {pattern!r}: {why}")


def _scan_chunk(pattern: str, i: int) -> tuple[bool, int, int]:
    """Go's ``scanChunk``: skip stars, then find the end of the chunk (the next ``*`` outside
    a class). Returns (star, chunk_start, chunk_end)."""
    n = len(pattern)
    star = False
    while i < n and pattern[i] == "*":
        i += 1
        star = True
    start = i
    in_range = False
    while i < n:
        c = pattern[i]
        if c == "\\":
            if i + 1 < n:
                i += 1
        elif c == "[":
            in_range = True
        elif c == "]":
            in_range = False
        elif c == "*" and not in_range:
            break
        i += 1
    return star, start, i


def _get_esc(pattern: str, i: int, end: int) -> tuple[str, int]:
    """Go's ``getEsc``: one possibly escaped character of a class range."""
    if i >= end or pattern[i] in "-]":
        raise _bad(pattern, "empty class or misplaced '-' or ']'")
    if pattern[i] == "\\":
        i += 1
        if i >= end:
            raise _bad(pattern, "'\\' at the end of a class")
    c = pattern[i]
    i += 1
    if i >= end:
        raise _bad(pattern, "unterminated class")
    return c, i


def _parse_chunk(pattern: str, i: int, end: int) -> tuple[_Elem, ...]:
    """Go's ``matchChunk`` grammar, as a parser: every chunk is checked in full."""
    elems: list[_Elem] = []
    literal: list[str] = []

    def flush() -> None:
        if literal:
            elems.append("".join(literal))
            literal.clear()

    while i < end:
        c = pattern[i]
        if c == "[":
            flush()
            i += 1
            negated = i < end and pattern[i] == "^"
            if negated:
                i += 1
            ranges: list[tuple[str, str]] = []
            while True:
                if i < end and pattern[i] == "]" and ranges:
                    i += 1
                    break
                lo, i = _get_esc(pattern, i, end)
                hi = lo
                if pattern[i] == "-":  # _get_esc guarantees i < end
                    hi, i = _get_esc(pattern, i + 1, end)
                ranges.append((lo, hi))
            elems.append(_Class(negated, tuple(ranges)))
        elif c == "?":
            flush()
            elems.append(_ANY)
            i += 1
        elif c == "\\":
            i += 1
            if i >= end:
                raise _bad(pattern, "trailing '\\'")
            literal.append(pattern[i])
            i += 1
        else:
            literal.append(c)
            i += 1
    flush()
    return tuple(elems)


def _parse(pattern: str) -> tuple[_Chunk, ...]:
    chunks: list[_Chunk] = []
    i = 0
    while i < len(pattern):
        star, start, i = _scan_chunk(pattern, i)
        chunks.append((star, _parse_chunk(pattern, start, i)))
    return tuple(chunks)


def _match_chunk(chunk: tuple[_Elem, ...], name: str, pos: int) -> int:
    """Match ``chunk`` at ``name[pos:]``; the position after it, or -1."""
    n = len(name)
    for elem in chunk:
        if isinstance(elem, str):
            if not name.startswith(elem, pos):
                return -1
            pos += len(elem)
        elif pos >= n:
            return -1
        elif elem is _ANY:
            if name[pos] == "/":
                return -1
            pos += 1
        else:
            assert isinstance(elem, _Class)
            if not elem.matches(name[pos]):
                return -1
            pos += 1
    return pos


def _match_chunks(chunks: tuple[_Chunk, ...], name: str) -> bool:
    """Go's ``Match`` loop over a parsed pattern (no errors left to report)."""
    n = len(name)
    pos = 0
    last = len(chunks) - 1
    for k, (star, chunk) in enumerate(chunks):
        if star and not chunk:
            # A trailing star matches the rest unless it has a '/'.
            return name.find("/", pos) < 0
        t = _match_chunk(chunk, name, pos)
        if t >= 0 and (t == n or k < last):
            pos = t
            continue
        if not star:
            return False
        # Try the chunk after skipping i+1 characters; the star cannot skip '/'.
        i = pos
        while i < n and name[i] != "/":
            t = _match_chunk(chunk, name, i + 1)
            if t >= 0 and (t == n or k < last):
                pos = t
                break
            i += 1
        else:
            return False
    return pos == n


@functools.lru_cache(maxsize=1024)
def _compile_go_glob(pattern: str) -> Callable[[str], bool]:
    chunks = _parse(pattern)  # raises GlobError
    if not _META.intersection(pattern):
        return pattern.__eq__
    prefix = pattern[:-1]
    if pattern.endswith("*") and not _META.intersection(prefix):
        # "mcp__*", the common shape: a literal prefix and a star that must not cross '/'.
        k = len(prefix)
        return lambda name: name.startswith(prefix) and name.find("/", k) < 0
    return functools.partial(_match_chunks, chunks)


def compile_go_glob(pattern: str) -> Callable[[str], bool]:
    """``name -> go_path_match(pattern, name)``, parsed once; raises GlobError if malformed."""
    return _compile_go_glob(pattern)


def validate_go_glob(pattern: str) -> None:
    """Raise :class:`GlobError` unless ``pattern`` is a well-formed Go ``path.Match`` pattern.

    Checks the whole pattern, independent of any name (stricter than Go's ``Match``, which may
    report ``false`` without an error when an earlier part failed to match).
    """
    _compile_go_glob(pattern)


def has_bare_bar(pattern: str) -> bool:
    """Whether a well-formed Go glob has a ``|`` outside a class and unescaped: a literal
    character to Go, but written by someone who meant "this tool or that one" (the JSON
    dialect's ``tool_name_glob`` syntax). No tool name has one."""
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":  # a class: skip to its closing bracket (the pattern is well formed)
            i += 1
            if i < n and pattern[i] == "^":
                i += 1
            while i < n and pattern[i] != "]":  # Go: no unescaped ']' inside a class
                i += 2 if pattern[i] == "\\" else 1
        elif c == "|":
            return True
        i += 1
    return False


def go_path_match(pattern: str, name: str) -> bool:
    """Go ``path.Match(pattern, name)`` for a valid pattern (an invalid one raises GlobError).

    Parsed patterns are cached, so repeated calls with the same pattern only match.
    """
    return _compile_go_glob(pattern)(name)


# -- JSON dialect: ``tool_name_glob`` --------------------------------------------------------


class _ToolGlob:
    """``a|b|mcp_*``: exact names and trailing-``*`` prefixes."""

    __slots__ = ("exact", "prefixes")

    def __init__(self, exact: frozenset[str], prefixes: tuple[str, ...]) -> None:
        self.exact = exact
        self.prefixes = prefixes

    def __call__(self, name: str) -> bool:
        return name in self.exact or (bool(self.prefixes) and name.startswith(self.prefixes))


@functools.lru_cache(maxsize=1024)
def _compile_tool_name_glob(pattern: str) -> _ToolGlob:
    exact: set[str] = set()
    prefixes: list[str] = []
    for alt in pattern.split("|"):
        if not alt:
            raise GlobError(f"bad tool_name_glob {pattern!r}: empty alternative")
        body = alt.removesuffix("*")
        bad = next((c for c in body if c in "*?[]"), None)
        if bad is not None:
            raise GlobError(
                f"bad tool_name_glob {pattern!r}: {bad!r} in {alt!r} "
                "(only exact names and one trailing '*' are allowed)"
            )
        if alt.endswith("*"):
            prefixes.append(body)
        else:
            exact.add(alt)
    return _ToolGlob(frozenset(exact), tuple(prefixes))


def compile_tool_name_glob(pattern: str) -> Callable[[str], bool]:
    """``name -> tool_name_glob_match(pattern, name)``, parsed once; raises GlobError."""
    return _compile_tool_name_glob(pattern)


def validate_tool_name_glob(pattern: str) -> None:
    """Raise :class:`GlobError` unless ``pattern`` is ``alt|alt|...`` where each alternative is a
    non-empty exact name or a (possibly empty) prefix followed by one trailing ``*``.

    ``*`` alone is accepted and matches every tool name.
    """
    _compile_tool_name_glob(pattern)


def tool_name_glob_match(pattern: str, name: str) -> bool:
    """Whether ``name`` equals one exact alternative or starts with one prefix alternative."""
    return _compile_tool_name_glob(pattern)(name)
