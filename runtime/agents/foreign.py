"""The agents whose hook input and answers are not Claude Code's shape (Copilot CLI, Cursor,
Antigravity CLI):
for each, its view of the input under Claude Code's names, its reading of a hook's answer, and
its events' Claude Code names -- one place the runner and the merge look them up."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from . import agy, copilot, cursor

View = Callable[[Mapping[str, Any]], dict[str, Any]]
Reply = Callable[[str, Mapping[str, Any]], dict[str, Any]]

VIEWS: Final[dict[str, View]] = {
    "copilot": copilot.claude_view,
    "cursor": cursor.claude_view,
    "agy": agy.claude_view,
}
REPLIES: Final[dict[str, Reply]] = {
    "copilot": copilot.claude_reply,
    "cursor": cursor.claude_reply,
    "agy": agy.claude_reply,
}
CLAUDE_NAMES: Final[dict[str, Mapping[str, str]]] = {
    "copilot": copilot.CLAUDE_NAMES,
    "cursor": cursor.CLAUDE_NAMES,
    "agy": agy.CLAUDE_NAMES,
}


def claude_event(agent: str, event: str) -> str:
    """``agent``'s ``event`` under Claude Code's name (the event itself for the others)."""
    return CLAUDE_NAMES.get(agent, {}).get(event, event)
