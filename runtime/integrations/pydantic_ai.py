"""pydantic-ai agents under triohooks (``docs/integrations.md``).

:func:`guard_tools` is a pydantic-ai *capability*: passed to ``Agent(capabilities=[...])`` or
``agent.run(..., capabilities=[...])``, it wraps the run's assembled toolset (every function
tool, toolset and MCP server of the agent and of the run) in a :class:`GuardedToolset`, so
each tool call goes through :meth:`~triohooks.engine.guarded.Guards.guarded_call`:

- pre_tool blocks: the block message is the tool's result, the model reads it; the tool does
  not run;
- pre_tool rewrites: the rewritten arguments are validated against the tool's schema again and
  are what the tool function receives;
- post_tool sees the result (as JSON) and its patches are what the model gets;
- a tool error fires post_tool with the error (and so post_tool_failure), then goes on to
  pydantic-ai as usual.

The calls of one model response run concurrently, as pydantic-ai runs them; each is guarded.

:func:`hooked` runs an agent's turns inside a triohooks session: session_start on entry (its
context, and each prompt's, reaches the model as the run's extra ``instructions``),
prompt_submit per turn (a blocked prompt never reaches the model), the stop loop (while a stop
hook says go on, the agent runs again with its message, in the same conversation, capped by the
engine), session_end on exit -- also on an error or a cancel.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from pydantic_ai import Agent, AgentRunResult
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.conversation import Conversation
from pydantic_ai.tools import RunContext
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool, WrapperToolset

from triohooks.engine.guarded import Guards, Session

from .common import GuardTarget, Turn, call_guarded, join_context, run_turn, to_json

__all__ = ["GuardedToolset", "HookedAgent", "TriohooksGuard", "guard_tools", "hooked"]


@dataclass
class GuardedToolset(WrapperToolset[Any]):
    """A toolset whose every tool call is guarded by triohooks (``target``: an engine, or a
    session whose ids then mark every event)."""

    target: GuardTarget = field(kw_only=True)

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        args = to_json(tool_args)

        async def invoke(rewritten: dict[str, Any] | None) -> Any:
            final = tool_args
            if rewritten is not None:  # a hook's arguments meet the schema, like the model's
                final = tool.args_validator.validate_python(
                    rewritten, context=ctx.validation_context
                )
            return await self.wrapped.call_tool(name, final, ctx, tool)

        return await call_guarded(self.target, name, args, invoke, tool_call_id=ctx.tool_call_id)


@dataclass
class TriohooksGuard(AbstractCapability[Any]):
    """The capability :func:`guard_tools` returns: wraps each run's toolset in a
    :class:`GuardedToolset`."""

    target: GuardTarget

    def get_wrapper_toolset(self, toolset: AbstractToolset[Any]) -> AbstractToolset[Any]:
        return GuardedToolset(toolset, target=self.target)


def guard_tools(target: GuardTarget) -> TriohooksGuard:
    """A capability that guards every tool call of the runs it is part of with ``target`` (an
    ``AsyncioHookEngine``, or a session of one):
    ``agent.run(..., capabilities=[guard_tools(engine)])``."""
    return TriohooksGuard(target)


class HookedAgent:
    """An agent's turns inside one triohooks session. Use as an async context manager (entry:
    session_start; exit: session_end), then ``await hooked.run(prompt)`` per user turn."""

    def __init__(
        self,
        agent: Agent[Any, Any],
        engine: Guards,
        session_id: str | None = None,
        *,
        source: str = "startup",
        **common: Any,
    ) -> None:
        self.agent = agent
        #: The triohooks session (``session_id``, ``prompt_id``; ``fire`` for other events).
        self.session: Session = engine.session(session_id, source=source, **common)
        self.guard = guard_tools(self.session)
        #: The conversation so far (each run continues it); None before the first run.
        self.conversation: Conversation | None = None

    async def __aenter__(self) -> HookedAgent:
        await self.session.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.session.__aexit__(exc_type, exc, tb)

    async def run(self, prompt: str, **run_kwargs: Any) -> Turn[AgentRunResult[Any]]:
        """One user turn: prompt_submit, ``agent.run`` (more ``agent.run`` keywords pass
        through), and one more run per stop-hook continue. ``turn.output`` is the last run's."""
        extra: list[Any] = list(_as_list(run_kwargs.pop("instructions", None)))
        capabilities = [*run_kwargs.pop("capabilities", ()), self.guard]
        # Instructions are per run in pydantic-ai (not kept in the history): session_start's
        # context goes with every run of the session, each prompt's with the runs of its turn.
        start = self.session.start.additional_context if self.session.start else None
        first_turn = self.session.turns == 0
        contexts: list[str | None] = []

        async def once(text: str, prompt_context: str | None) -> AgentRunResult[Any]:
            if not contexts:  # the turn's first run; stop-hook continues keep its context
                # (the first turn's prompt context already starts with session_start's)
                context = prompt_context if first_turn else join_context(start, prompt_context)
                contexts.append(context)
            instructions = [*extra, contexts[0]] if contexts[0] else extra
            result = await self.agent.run(
                text,
                conversation=self.conversation,
                instructions=instructions or None,
                capabilities=capabilities,
                **run_kwargs,
            )
            self.conversation = result.conversation
            return result

        return await run_turn(self.session, prompt, once, lambda result: result.output)


def hooked(
    agent: Agent[Any, Any],
    engine: Guards,
    session_id: str | None = None,
    *,
    source: str = "startup",
    **common: Any,
) -> HookedAgent:
    """``async with hooked(agent, engine) as session: turn = await session.run(prompt)``: the
    agent's turns in a triohooks session, every tool call guarded. ``common`` are the events'
    common fields (``cwd``, ``permission_mode``, ...)."""
    return HookedAgent(agent, engine, session_id, source=source, **common)


def _as_list(instructions: Any) -> Sequence[Any]:
    if instructions is None:
        return ()
    if isinstance(instructions, str) or callable(instructions):
        return (instructions,)
    return tuple(instructions)
