"""What both framework adapters share: one guarded tool call, and one user turn.

A guarded call shows hooks JSON (arguments and result as plain JSON data) while the tool gets
its own values: the framework's validated arguments unless a hook rewrote them, and the model
the tool's own result unless a post_tool hook patched it.

A turn is ``prompt_submit`` (a blocked prompt ends it before the model sees it), one agent run
with the (possibly rewritten) prompt, then ``stop``: while a stop hook says go on, one more run
with its message, in the same turn (the engine caps the continues per prompt).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypeVar

if TYPE_CHECKING:
    from triohooks.combine.outcome import Outcome
    from triohooks.engine.guarded import Guards, Session

#: Where guarded tool calls go: an engine, or a session (its ids are then on every event).
GuardTarget: TypeAlias = "Guards | Session"

R = TypeVar("R")


@dataclass
class Turn(Generic[R]):
    """The end of one :meth:`run` of a hooked agent."""

    #: prompt_submit's Outcome (``blocked``: the model never saw the prompt).
    prompt: Outcome
    #: The framework's result of each agent run: the first, then one per stop-hook continue.
    results: list[R] = field(default_factory=list)
    #: The last run's final output; None when the prompt was blocked.
    output: Any = None

    @property
    def blocked(self) -> bool:
        return self.prompt.blocked

    @property
    def message(self) -> str | None:
        """For a blocked prompt, what to tell the user; else None."""
        if not self.prompt.blocked:
            return None
        return self.prompt.user_message or self.prompt.reason or "blocked by a prompt_submit hook"


async def run_turn(
    session: Session,
    prompt: str,
    run: Callable[[str, str | None], Awaitable[R]],
    output: Callable[[R], Any],
) -> Turn[R]:
    """Drive one turn: ``run(text, context)`` runs the agent once (``context``: the prompt
    Outcome's additional context for the first run, None for a stop-hook continue)."""
    submitted = await session.prompt(prompt)
    turn: Turn[R] = Turn(prompt=submitted)
    if submitted.blocked:
        return turn
    text = submitted.prompt if submitted.prompt is not None else prompt
    turn.results.append(await run(text, submitted.additional_context))
    while (nudge := await session.stop()) is not None:
        turn.results.append(await run(nudge, None))
    turn.output = output(turn.results[-1])
    return turn


def join_context(*parts: str | None) -> str | None:
    """Non-empty parts joined with newlines; None if there are none."""
    text = "\n".join(p for p in parts if p)
    return text or None


def to_json(value: Any) -> Any:
    """``value`` as plain JSON data, for hooks (they read JSON); text for what JSON can't say."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    from pydantic_core import to_jsonable_python

    try:
        return to_jsonable_python(value, fallback=str)
    except (TypeError, ValueError):
        return str(value)


async def call_guarded(
    target: GuardTarget,
    tool: str,
    args: Mapping[str, Any],
    invoke: Callable[[dict[str, Any] | None], Awaitable[Any]],
    *,
    tool_call_id: str | None,
) -> Any:
    """What the model gets for one guarded call of ``tool`` with the JSON arguments ``args``:
    the block message (the tool does not run), or the tool's result -- post_tool's patch if a
    hook made one. ``invoke(None)`` runs the tool with the framework's own arguments,
    ``invoke(rewritten)`` with a pre_tool hook's rewrite. A tool error goes through
    post_tool (and post_tool_failure) and is re-raised, for the framework to handle as usual."""
    ran: list[tuple[Any, Any]] = []

    async def run(final: dict[str, Any]) -> Any:
        value = await invoke(None if final == args else final)
        shown = to_json(value)
        ran.append((value, shown))
        return shown

    result = await target.guarded_call(tool, args, run, tool_call_id=tool_call_id)
    if ran and result.output == ran[0][1]:
        return ran[0][0]  # not patched: the tool's own value, not its JSON form
    return result.output


def parse_args(text: str) -> dict[str, Any] | None:
    """A tool call's JSON arguments as an object; None if they are not a JSON object."""
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
