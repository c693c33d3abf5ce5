""" "Did you mean ...?" for a name we do not know: an event, a config field, a command.

One rule for every place that rejects a name: a name another agent uses for the same thing
(Claude Code's ``PreToolUse``, a ``matcher`` where the TOML dialect says ``match``) is answered
with ours; otherwise the closest known name, if one is close. The dialect readers import this
on ``fire``'s lightest path, so nothing is imported at module level (difflib loads only when
a name is unknown).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

#: How alike two names must be (difflib's ratio) before one is offered for the other.
CUTOFF: Final = 0.6

#: Field names other dialects and agents use, and what each dialect calls them.
TOML_FIELD_SYNONYMS: Final[Mapping[str, str]] = {
    "matcher": "match",
    "tool_name_glob": "match",
    "timeout": "timeout_seconds",
    "timeout_ms": "timeout_seconds",
    "failClosed": "fail_closed",
    "on_error": "fail_closed",
    "name": "id",
    "cmd": "command",
    "executor": "command",
}
JSON_FIELD_SYNONYMS: Final[Mapping[str, str]] = {
    "match": "matcher",
    "timeout": "timeout_ms",
    "timeout_seconds": "timeout_ms",
    "fail_closed": "on_error",
    "failClosed": "on_error",
    "name": "id",
    "command": "executor",
    "type": "executor",
}


def closest(
    word: str, known: Iterable[str], synonyms: Mapping[str, str] | None = None
) -> str | None:
    """The known name ``word`` most likely meant, or None."""
    if synonyms is not None and word in synonyms:
        return synonyms[word]
    names = list(known)
    by_lower = {name.lower(): name for name in names}
    if word.lower() in by_lower:  # only the case differs
        return by_lower[word.lower()]
    import difflib

    found = difflib.get_close_matches(word, names, n=1, cutoff=CUTOFF)
    return found[0] if found else None


def did_you_mean(word: str, known: Iterable[str], synonyms: Mapping[str, str] | None = None) -> str:
    """``" (did you mean 'x'?)"`` for :func:`closest`, or ``""``."""
    found = closest(word, known, synonyms)
    return f" (did you mean {found!r}?)" if found is not None and found != word else ""


def event_synonyms(names_of: Mapping[str, str]) -> dict[str, str]:
    """Every agent's event names (Claude Code, Gemini CLI, Codex, and the canonical and JSON
    dialect ones), each mapped to what ``names_of`` calls that event (canonical name -> a
    dialect's name)."""
    from .events import AGENT_EVENTS, JSON_ALIASES

    out: dict[str, str] = {}
    for events in AGENT_EVENTS.values():
        for theirs, canonical in events.items():
            if canonical in names_of:
                out.setdefault(theirs, names_of[canonical])
    for alias, canonical in JSON_ALIASES.items():
        if canonical in names_of:
            out.setdefault(alias, names_of[canonical])
    for canonical, ours in names_of.items():
        out.setdefault(canonical, ours)
    return out
