""" "Did you mean ...?" for a name we do not know: an event, a config field, a command.

One rule for every place that rejects a name: a name another agent uses for the same thing
(Claude Code's ``PreToolUse``, a ``matcher`` where the TOML dialect says ``match``) is answered
with ours; otherwise the closest known name, if one is close. The dialect readers import this
on ``fire``'s lightest path, so nothing is imported at module level (difflib loads only when
a name is unknown).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from .model import ConfigProblem, Hook

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


def tool_name_problems(hooks: Iterable[Hook]) -> list[ConfigProblem]:
    """A warning for each hook whose TOML ``match`` or JSON ``tool_name`` / ``tool_name_glob``
    names no tool any agent has, canonical (``bash``) or the agent's own (``Bash``,
    ``run_shell_command``): such a hook never runs for an agent's call (a typo, or a name in
    the wrong case). Glob-aware: ``*`` and ``*_file`` name something; a pattern that can name
    an MCP tool (``mcp__*``) is taken as meant, as no table knows every server."""
    from .events import EVENTS
    from .model import ConfigProblem

    problems: list[ConfigProblem] = []
    for hook in hooks:
        if not EVENTS[hook.event].tool_event:
            continue
        unknown: list[tuple[str, str]] = []
        if hook.dialect != "json":
            if hook.match and not _toml_names_a_tool(hook.match):
                unknown.append(("match", hook.match))
        elif hook.matcher is not None:
            if hook.matcher.tool_name and not _names_a_tool(hook.matcher.tool_name, prefix=False):
                unknown.append(("matcher.tool_name", hook.matcher.tool_name))
            for alt in (hook.matcher.tool_name_glob or "").split("|"):
                prefix = alt.endswith("*")
                if alt and not _names_a_tool(alt.removesuffix("*"), prefix=prefix):
                    unknown.append(("matcher.tool_name_glob", alt))
        for field, name in unknown:
            problems.append(
                ConfigProblem(
                    hook.source or "(api)",
                    _unknown_tool_message(name),
                    hook.config_event,
                    hook.index,
                    field,
                    severity="warning",
                )
            )
    return problems


def _unknown_tool_message(name: str) -> str:
    from triohooks.match.tools import known_names

    # Reversed: where only the case differs, the canonical name (listed first) is offered.
    hint = did_you_mean(name.rstrip("*"), reversed(known_names()))
    return (
        f"{name!r} names no tool an agent has, by the names every agent shares (bash, read, "
        "write, edit, patch, fetch, mcp__<server>__<tool> ...) or by its own (Bash, "
        f"run_shell_command ...): this hook runs for no agent's call{hint}; a tool of your "
        "own application is fine"
    )


def _toml_names_a_tool(pattern: str) -> bool:
    """Whether a (valid) Go ``path.Match`` glob matches some known tool name, or may name an
    MCP tool."""
    import re

    from triohooks.match.globs import go_path_match
    from triohooks.match.tools import is_mcp_pattern, known_names

    if any(go_path_match(pattern, name) for name in known_names()):
        return True
    literal = re.split(r"[*?\[\\]", pattern, maxsplit=1)[0]
    return is_mcp_pattern(literal)


def _names_a_tool(name: str, *, prefix: bool) -> bool:
    """Whether ``name`` (a JSON ``tool_name_glob`` alternative: exact, or a ``prefix``) names
    a known tool, or may name an MCP tool."""
    from triohooks.match.tools import is_mcp_pattern, known_names, mcp_name

    if prefix:
        return is_mcp_pattern(name) or any(n.startswith(name) for n in known_names())
    return name in known_names() or mcp_name(name) is not None
