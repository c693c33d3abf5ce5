"""What a shell glob in a call may name, for the built-in guards (docs/builtin-guards.md).

(Tool-name globs, Go's ``path.Match`` and the JSON dialect's, are :mod:`.globs`.) A glob in a
call (``rm -rf build/*``, ``cat src/*.py``) is known only at run time, but not unknown: it
expands to names in one directory that match its pattern. The shell reader gives each glob as
an ``fnmatch`` pattern (:attr:`~.shell.SimpleCommand.globs`: a quoted ``*`` as ``[*]``); this
module answers the questions the guards ask of one, without looking at the disk:

- :func:`split` -- the literal directory a glob lists and the pattern of the names in it,
  when it globs only in its last component (``build/*.o``); None otherwise (``*/x``, ``a/*/``
  may cross a symlink anywhere);
- :func:`may_match` -- whether the pattern may match a name, as bash matches: ``*`` and ``?``
  never match a leading ``.`` unless the pattern starts with one (``dotglob`` is off in the
  shell an agent runs), and never ``.`` or ``..``;
- :func:`may_meet` -- whether the pattern and another ``fnmatch`` pattern (a secret's name,
  ``*.pem``) may match one same name: the product of the two patterns, walked to its end;
- :func:`sweeping` -- whether it names every entry of its directory, or every hidden one
  (``*``, ``.*``, ``?*``, ``[a-z]*``): nothing in it but wildcards.

Imports nothing of triohooks.
"""

from __future__ import annotations

import functools
from typing import Final, NamedTuple

# A token: a literal character, any one character, any run of characters, or a set.
_STAR: Final = "*"


class _Set(NamedTuple):
    chars: frozenset[str]
    negated: bool


_ANY: Final = _Set(frozenset("/"), True)
Token = str | _Set  # a one-character str is a literal; _STAR is the star


def tokens(pattern: str) -> tuple[Token, ...]:
    """``pattern`` (``fnmatch`` syntax: ``*``, ``?``, ``[...]``, ``[!...]``) as tokens. A ``[``
    without its ``]`` is a literal ``[``, as fnmatch reads it."""
    out: list[Token] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            if not out or out[-1] != _STAR:
                out.append(_STAR)
            i += 1
        elif c == "?":
            out.append(_ANY)
            i += 1
        elif c == "[":
            j = i + 1
            negated = j < n and pattern[j] == "!"
            if negated:
                j += 1
            if j < n and pattern[j] == "]":  # a `]` first is a member
                j += 1
            end = pattern.find("]", j)
            if end < 0:
                out.append("[")
                i += 1
                continue
            body = pattern[i + 1 + negated : end]
            out.append(_Set(frozenset(_members(body)) - {"/"}, negated))
            i = end + 1
        else:
            out.append(c)
            i += 1
    return tuple(out)


def _members(body: str) -> set[str]:
    """The characters of a bracket expression's body (``a-z0`` -> a..z and 0)."""
    out: set[str] = set()
    i = 0
    while i < len(body):
        if i + 2 < len(body) and body[i + 1] == "-":
            lo, hi = ord(body[i]), ord(body[i + 2])
            out.update(chr(c) for c in range(lo, hi + 1) if hi - lo < 0x3000)
            i += 3
        else:
            out.add(body[i])
            i += 1
    return out


def _one(token: Token) -> str | None:
    """The one character ``token`` matches, if it matches one (``x``, ``[*]``)."""
    if isinstance(token, _Set):
        return next(iter(token.chars)) if len(token.chars) == 1 and not token.negated else None
    return None if token == _STAR else token


def is_literal(pattern: str) -> bool:
    return all(_one(t) is not None for t in tokens(pattern))


def literal(pattern: str) -> str:
    """A pattern without wildcards as the name it matches (``[*]x`` -> ``*x``)."""
    return "".join(_one(t) or "" for t in tokens(pattern))


def split(pattern: str) -> tuple[str, str] | None:
    """(the directory, the last component's pattern) of a glob whose wildcards are all in its
    last component and that does not end in ``/`` (``src/*.py`` -> ``("src", "*.py")``, ``*``
    -> ``(".", "*")``, ``/*`` -> ``("/", "*")``); None otherwise."""
    if pattern.endswith("/"):
        return None
    head, sep, last = _rsplit(pattern)
    if not is_literal(head):
        return None
    directory = literal(head) if head else ("/" if sep and not head else ".")
    return directory, last


def _rsplit(pattern: str) -> tuple[str, str, str]:
    """``pattern`` split at its last ``/`` that is not inside a bracket expression."""
    depth = -1
    for i in range(len(pattern) - 1, -1, -1):
        c = pattern[i]
        if c == "]":
            depth = i
        elif c == "[" and depth >= 0:
            depth = -1
        elif c == "/" and depth < 0:
            return pattern[:i], "/", pattern[i + 1 :]
    return "", "", pattern


def may_match(pattern: str, name: str) -> bool:
    """Whether bash's glob ``pattern`` (one component) matches ``name``."""
    if name in (".", ".."):
        return False
    return _meet(tokens(pattern), tuple(name), hide_dots=True)


def may_meet(glob: str, other: str) -> bool:
    """Whether some name matches both bash's glob ``glob`` (one component) and the
    ``fnmatch`` pattern ``other`` (which sees dot files like any other name)."""
    return _meet(tokens(glob), tokens(other), hide_dots=True)


def sweeping(pattern: str) -> bool:
    """Whether the pattern holds nothing but wildcards after an optional leading ``.``: it
    names every entry of its directory (``*``), or every hidden one (``.*``)."""
    toks = tokens(pattern)
    if toks and _one(toks[0]) == ".":
        toks = toks[1:]
    return bool(toks) and all(_one(t) is None for t in toks)


def _chars(token: Token) -> _Set:
    if token == _STAR:
        return _ANY
    if isinstance(token, _Set):
        return token
    return _Set(frozenset(token), False)


def _common(a: _Set, b: _Set, banned: frozenset[str]) -> bool:
    """Whether some character is in both sets and not in ``banned``."""
    if not a.negated and not b.negated:
        return bool((a.chars & b.chars) - banned)
    if not a.negated:
        return bool(a.chars - b.chars - banned)
    if not b.negated:
        return bool(b.chars - a.chars - banned)
    return True  # two complements of finite sets always share a character


def _meet(a: tuple[Token, ...], b: tuple[Token, ...], *, hide_dots: bool) -> bool:
    """Whether one name matches both token strings; with ``hide_dots``, ``a`` is a glob whose
    wildcards cannot match a leading ``.``."""

    @functools.cache
    def go(i: int, j: int, first: bool) -> bool:
        if i == len(a) and j == len(b):
            return not first  # a name has at least one character
        ta = a[i] if i < len(a) else None
        tb = b[j] if j < len(b) else None
        if ta == _STAR and go(i + 1, j, first):
            return True
        if tb == _STAR and go(i, j + 1, first):
            return True
        if ta is None or tb is None or (ta == _STAR and tb == _STAR):
            return False
        banned = frozenset("/")
        if first and hide_dots and ta != ".":
            banned = frozenset("./")
        if not _common(_chars(ta), _chars(tb), banned):
            return False
        return go(i if ta == _STAR else i + 1, j if tb == _STAR else j + 1, False)

    return go(0, 0, True)
