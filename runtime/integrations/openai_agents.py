"""OpenAI Agents SDK agents under triohooks (``docs/integrations.md``).

The SDK's tool guardrails can only allow or reject a call, not rewrite its arguments, so
:func:`guard_tools` wraps the invocation itself: it returns a copy of the agent (and of every
agent it hands off to) whose function tools' ``on_invoke_tool`` goes through
:meth:`~triohooks.engine.guarded.Guards.guarded_call`:

- pre_tool blocks: the block message is the tool's output, the model reads it; the tool does
  not run;
- pre_tool rewrites: the tool is invoked with the rewritten JSON arguments (validated by the
  tool's own schema, as the model's are);
- post_tool sees the output (as JSON) and its patches are what the model gets;
- a tool error the SDK's failure policy lets through (``failure_error_function=None``) fires
  post_tool_failure and is raised; one the policy turns into a message for the model (the
  default) reaches post_tool as that message.

Only ``FunctionTool``\\ s are wrapped: hosted tools (web search, file search, code interpreter,
hosted MCP) run on the provider's side, and MCP servers' tools are made per run by the SDK.
An agent used as a tool (``as_tool``) is one function tool: its calls are guarded, not the
tools inside it.

:func:`hooked` runs an agent's turns inside a triohooks session: session_start on entry,
prompt_submit per turn (a blocked prompt never reaches the model; the turn's context, with
session_start's on the first turn, goes before the prompt as a developer message), the stop
loop (while a stop hook says go on, ``Runner.run`` again with its message as the next user
message, capped by the engine), session_end on exit -- also on an error or a cancel. It carries
the conversation itself (``result.to_input_list()``) unless ``session=`` is given to
:meth:`HookedAgent.run`, in which case the SDK session does.
"""

from __future__ import annotations

import dataclasses
import json
from types import TracebackType
from typing import Any

from agents import Agent, FunctionTool, Runner, RunResult, TResponseInputItem
from agents.tool_context import ToolContext

from triohooks.engine.guarded import Guards, Session

from .common import GuardTarget, Turn, call_guarded, parse_args, run_turn

__all__ = ["HookedAgent", "guard_tool", "guard_tools", "hooked"]

#: What the model reads when a tool call's arguments are not a JSON object (the tool does not run).
NOT_AN_OBJECT = "error: the tool's arguments must be a JSON object"


def guard_tool(tool: FunctionTool, target: GuardTarget) -> FunctionTool:
    """A copy of ``tool`` whose every invocation is guarded by ``target`` (an engine, or a
    session whose ids then mark every event)."""
    invoke_tool = tool.on_invoke_tool

    async def on_invoke_tool(ctx: ToolContext[Any], arguments: str) -> Any:
        args = parse_args(arguments)
        if args is None:
            return NOT_AN_OBJECT

        async def invoke(rewritten: dict[str, Any] | None) -> Any:
            text = arguments if rewritten is None else json.dumps(rewritten)
            return await invoke_tool(ctx, text)

        return await call_guarded(target, tool.name, args, invoke, tool_call_id=ctx.tool_call_id)

    return dataclasses.replace(tool, on_invoke_tool=on_invoke_tool)


def guard_tools(agent: Agent[Any], target: GuardTarget) -> Agent[Any]:
    """A copy of ``agent`` whose function tools, and those of every agent it hands off to, are
    guarded by ``target``: ``await Runner.run(guard_tools(agent, engine), prompt)``."""
    copies: dict[int, Agent[Any]] = {}

    def copy(original: Agent[Any]) -> Agent[Any]:
        if id(original) in copies:  # handoffs may go round in circles
            return copies[id(original)]
        tools = [
            guard_tool(tool, target) if isinstance(tool, FunctionTool) else tool
            for tool in original.tools
        ]
        clone = copies[id(original)] = original.clone(tools=tools)
        clone.handoffs = [copy(h) if isinstance(h, Agent) else h for h in original.handoffs]
        return clone

    return copy(agent)


class HookedAgent:
    """An agent's turns inside one triohooks session. Use as an async context manager (entry:
    session_start; exit: session_end), then ``await hooked.run(prompt)`` per user turn."""

    def __init__(
        self,
        agent: Agent[Any],
        engine: Guards,
        session_id: str | None = None,
        *,
        source: str = "startup",
        **common: Any,
    ) -> None:
        #: The triohooks session (``session_id``, ``prompt_id``; ``fire`` for other events).
        self.session: Session = engine.session(session_id, source=source, **common)
        #: The guarded copy of the agent.
        self.agent = guard_tools(agent, self.session)
        #: The agent the next run starts with: after a handoff, the (guarded) agent handed to.
        self.current = self.agent
        #: The conversation so far, as the next run's input starts (without an SDK session).
        self.history: list[TResponseInputItem] = []

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

    async def run(self, prompt: str, **runner_kwargs: Any) -> Turn[RunResult]:
        """One user turn: prompt_submit, ``Runner.run`` (more of its keywords pass through:
        ``context``, ``max_turns``, ``run_config``, ``session`` ...), and one more run per
        stop-hook continue. ``turn.output`` is the last run's ``final_output``."""
        carry = runner_kwargs.get("session") is None

        async def once(text: str, context: str | None) -> RunResult:
            new: list[TResponseInputItem] = []
            if context:
                new.append({"role": "developer", "content": context})
            new.append({"role": "user", "content": text})
            past = self.history if carry else []
            result = await Runner.run(self.current, [*past, *new], **runner_kwargs)
            self.current = result.last_agent
            if carry:
                self.history = result.to_input_list(mode="normalized")
            return result

        return await run_turn(self.session, prompt, once, lambda result: result.final_output)


def hooked(
    agent: Agent[Any],
    engine: Guards,
    session_id: str | None = None,
    *,
    source: str = "startup",
    **common: Any,
) -> HookedAgent:
    """``async with hooked(agent, engine) as session: turn = await session.run(prompt)``: the
    agent's turns in a triohooks session, every function tool guarded. ``common`` are the
    events' common fields (``cwd``, ``permission_mode``, ...)."""
    return HookedAgent(agent, engine, session_id, source=source, **common)
