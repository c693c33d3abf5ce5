"""Which hooks an event selects: TOML ``match`` and the JSON dialect's restricted matcher.

This module owns matcher validation (at load time) and matcher evaluation (per event, on the hot
path). It must not run hooks, read config files or know about events beyond a tool name and its
arguments; the loaders call :func:`compile_matcher`, the dispatcher :func:`matcher_fires`.

JSON matcher semantics (yolop spec "Events", everruns ``UserHookSpec``)::

    tool_name       exact tool name
    tool_name_glob  ``a|b`` alternatives, each exact or a prefix with one trailing ``*``
    args_jsonpath   ``$`` then ``.key`` segments, objects only: ``$.command``, ``$.a.b``
    match_regex     fires when the RE2 regex finds a match in the path's value
    deny_regex      fires when it does not

Every given condition must hold (AND). The value at a path is: a string as is; null or missing
(or a path through a non-object) ``""``; anything else its compact JSON text (``42``, ``true``,
``{"a":1}``). A path without a regex fires when its value is non-empty. A regex without a path
never fires (there is nothing to match it against). ``$`` alone is the whole arguments object.
An empty matcher fires for every event.

Every user regex is RE2: linear time (no ReDoS from a config file) and POSIX classes such as
``[[:space:]]`` mean what they say (stdlib ``re`` reads them as a nested set, silently).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, Final

import msgspec

from .globs import GlobError, compile_tool_name_glob, go_path_match
from .tools import canonical_tool

__all__ = [
    "MAX_MATCHER_FIELD_BYTES",
    "CompiledMatcher",
    "MatcherError",
    "compile_matcher",
    "jsonpath_value",
    "matcher_fires",
    "toml_match_fires",
    "tool_selected",
]

#: everruns limit: each matcher field at most 2 KiB.
MAX_MATCHER_FIELD_BYTES: Final = 2048

_FIELDS: Final = ("tool_name", "tool_name_glob", "args_jsonpath", "match_regex", "deny_regex")
_BAD_KEY_CHARS: Final = frozenset("[]*")


class JsonMatcher(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The JSON dialect's restricted matcher (yolop spec: Events)."""

    tool_name: str | None = None
    tool_name_glob: str | None = None
    args_jsonpath: str | None = None
    match_regex: str | None = None
    deny_regex: str | None = None


class MatcherError(ValueError):
    """A JSON matcher is invalid; ``field`` names the offending field."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(f"matcher.{field}: {message}")


@functools.cache
def _re2_options() -> Any:
    """RE2's options for matcher regexes. RE2 loads on first use: a table whose matchers have
    no regex (and ``triohooks fire`` on it) never imports it."""
    import re2

    options = re2.Options()
    options.log_errors = False  # the error goes into MatcherError, not to stderr
    options.never_capture = True  # we only ask "is there a match"
    return options


def _searcher(regex: Any) -> Callable[[str], bool]:
    """A fast "does ``regex`` match anywhere in ``text``" for a compiled ``re2`` pattern.

    The public ``search`` builds a generator and a match object per call (~6 us); the wrapped
    ``_re2.RE2.Match`` answers in under 1 us. Fall back to ``search`` if the wrapper changes.
    """
    import re2

    raw = getattr(regex, "_regexp", None)
    anchor = getattr(getattr(getattr(re2, "_re2", None), "RE2", None), "Anchor", None)
    if raw is None or anchor is None or not hasattr(raw, "Match"):
        return lambda text: regex.search(text) is not None
    unanchored = anchor.UNANCHORED
    match = raw.Match

    def search(text: str) -> bool:
        data = text.encode()
        return bool(match(unanchored, data, 0, len(data))[0][0] >= 0)

    return search


class CompiledMatcher(msgspec.Struct, frozen=True, kw_only=True):
    """A validated JSON matcher, ready for the hot path. Build with :func:`compile_matcher`."""

    source: JsonMatcher
    tool_name: str | None
    #: ``name -> bool`` for ``tool_name_glob``, or None.
    tool_name_glob: Callable[[str], bool] | None
    #: The keys of ``args_jsonpath`` (``()`` for ``$``), or None without a path.
    path: tuple[str, ...] | None
    #: ``text -> found`` for the one regex, or None.
    search: Callable[[str], bool] | None
    #: The regex is ``deny_regex``: the matcher fires when it is *not* found.
    deny: bool


def _check_jsonpath(path: str) -> tuple[str, ...]:
    if path == "$":
        return ()
    if not path.startswith("$."):
        raise MatcherError("args_jsonpath", f"{path!r} must be '$' or start with '$.'")
    keys = tuple(path[2:].split("."))
    for key in keys:
        if not key:
            raise MatcherError("args_jsonpath", f"{path!r} has an empty key")
        if _BAD_KEY_CHARS.intersection(key):
            raise MatcherError(
                "args_jsonpath",
                f"{path!r}: only '.key' segments are supported (no [index], no wildcards)",
            )
    return keys


def _compile_regex(field: str, pattern: str) -> Callable[[str], bool]:
    import re2

    try:
        regex = re2.compile(pattern, options=_re2_options())
    except re2.error as exc:
        why = exc.args[0] if exc.args else exc
        if isinstance(why, bytes):
            why = why.decode("utf-8", "replace")
        why = str(why)
        if not why.isprintable():  # RE2 quotes the bad part as is: keep the message one line
            why = why.encode("unicode_escape").decode("ascii")
        raise MatcherError(field, f"not a valid RE2 regex: {why}") from None
    return _searcher(regex)


def compile_matcher(m: JsonMatcher) -> CompiledMatcher:
    """Validate every field of ``m`` and precompile it; raise :class:`MatcherError` naming the
    first bad field.

    Rules: each field at most 2 KiB (UTF-8); ``tool_name`` and ``tool_name_glob`` non-empty;
    ``tool_name_glob`` only ``a|b`` alternatives with an optional trailing ``*``; ``args_jsonpath``
    is ``$`` or ``$.k1.k2...`` with non-empty keys; ``match_regex`` and ``deny_regex`` not both,
    and each must compile under RE2.
    """
    for field in _FIELDS:
        value: str | None = getattr(m, field)
        if value is not None and len(value.encode()) > MAX_MATCHER_FIELD_BYTES:
            raise MatcherError(field, f"longer than {MAX_MATCHER_FIELD_BYTES} bytes")
    if m.tool_name is not None and not m.tool_name:
        raise MatcherError("tool_name", "must not be empty")
    glob = None
    if m.tool_name_glob is not None:
        try:
            glob = compile_tool_name_glob(m.tool_name_glob)
        except GlobError as exc:
            raise MatcherError("tool_name_glob", str(exc)) from None
    path = None if m.args_jsonpath is None else _check_jsonpath(m.args_jsonpath)
    if m.match_regex is not None and m.deny_regex is not None:
        raise MatcherError("deny_regex", "match_regex and deny_regex cannot both be set")
    search = None
    if m.match_regex is not None:
        search = _compile_regex("match_regex", m.match_regex)
    elif m.deny_regex is not None:
        search = _compile_regex("deny_regex", m.deny_regex)
    return CompiledMatcher(
        source=m,
        tool_name=m.tool_name,
        tool_name_glob=glob,
        path=path,
        search=search,
        deny=m.deny_regex is not None,
    )


def _enc_hook(obj: Any) -> Any:
    # Arguments normally come from JSON; a caller's own Mapping types or objects still get a text.
    return dict(obj) if isinstance(obj, Mapping) else str(obj)


_encoder: Final = msgspec.json.Encoder(enc_hook=_enc_hook)


def _value_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and not isinstance(value, dict):
        value = dict(value)
    try:
        return _encoder.encode(value).decode()
    except (TypeError, ValueError, msgspec.EncodeError):  # e.g. NaN keys, recursion
        return str(value)


def _lookup(keys: tuple[str, ...], args: Mapping[str, Any]) -> str:
    value: Any = args
    for key in keys:
        if not isinstance(value, Mapping):
            return ""
        value = value.get(key)
    return _value_text(value)


def jsonpath_value(path: str, args: Mapping[str, Any]) -> str:
    """The text at ``path`` in ``args`` (module docstring: string as is, null/missing ``""``,
    others compact JSON). Raises :class:`MatcherError` for a malformed path."""
    return _lookup(_check_jsonpath(path), args)


def tool_selected(m: CompiledMatcher, tool: str) -> bool:
    """Whether the matcher's ``tool_name`` / ``tool_name_glob`` select a call of ``tool``: by
    the tool's own name or its canonical one (:func:`~.tools.canonical_tool`: ``bash`` is every
    agent's shell), exactly as written (the dialect compares names case-sensitively)."""
    if m.tool_name is None and m.tool_name_glob is None:
        return True
    return _names_selected(m, tool) or _names_selected(m, _canonical_other(tool))


def _names_selected(m: CompiledMatcher, name: str | None) -> bool:
    if name is None:
        return False
    if m.tool_name is not None and name != m.tool_name:
        return False
    return m.tool_name_glob is None or m.tool_name_glob(name)


def _canonical_other(tool: str) -> str | None:
    """The tool's canonical name when it is not the tool's own."""
    canonical = canonical_tool(tool) if tool else None
    return canonical if canonical != tool else None


def matcher_fires(m: CompiledMatcher, *, tool: str, args: Mapping[str, Any]) -> bool:
    """Whether the JSON-dialect matcher selects a call of ``tool`` with ``args``.

    For an event without a tool pass ``tool=""`` and ``args={}``: a matcher naming a tool then
    does not fire.
    """
    if not tool_selected(m, tool):
        return False
    if m.path is None:
        return m.search is None
    value = _lookup(m.path, args)
    if m.search is None:
        return value != ""
    return m.search(value) != m.deny


def toml_match_fires(pattern: str | None, tool: str) -> bool:
    """Whether a TOML hook's ``match`` (Go ``path.Match`` glob) selects ``tool``: by its own
    name or its canonical one (``match = "bash"`` is every agent's shell), both compared as Go
    does (case-sensitively). None or ``""`` matches all. The caller ignores ``match`` for
    prompt_submit (HK-01). The pattern must have been validated at load time (an invalid one
    raises GlobError)."""
    if not pattern:
        return True
    if go_path_match(pattern, tool):
        return True
    canonical = _canonical_other(tool)
    return canonical is not None and go_path_match(pattern, canonical)
