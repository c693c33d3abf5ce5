"""triohooks: a lifecycle-hooks runtime for AI coding agents, on Trio.

The public face. Implementation lives in private modules; this namespace re-exports what an
embedding agent, a hook-tool author or a client needs. The names load on first use, so that
``triohooks fire`` (which imports this package on every call an agent makes) pays only for the
modules it runs.
"""

from __future__ import annotations

import importlib

#: typing itself is not imported at run time (2 ms of every ``triohooks fire``); type
#: checkers treat this name as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from triohooks.actors.guard import GuardUnavailable as GuardUnavailable
    from triohooks.actors.supervisor import ActorFailed as ActorFailed

    from .agents.runner import AgentInput as AgentInput
    from .agents.runner import AgentPayloadError as AgentPayloadError
    from .agents.runner import AgentResult as AgentResult
    from .combine.outcome import Outcome as Outcome
    from .combine.outcome import RunRecord as RunRecord
    from .config.events import EVENTS as EVENTS
    from .config.events import JSON_ALIASES as JSON_ALIASES
    from .config.events import PayloadError as PayloadError
    from .config.events import UnknownEventError as UnknownEventError
    from .config.events import canonical_event as canonical_event
    from .config.model import ConfigError as ConfigError
    from .config.model import ConfigProblem as ConfigProblem
    from .config.model import Hook as Hook
    from .config.model import HookTable as HookTable
    from .engine.asyncio_engine import AsyncioHookEngine as AsyncioHookEngine
    from .engine.hook_engine import HookEngine as HookEngine
    from .engine.options import EngineOptions as EngineOptions
    from .fronts.client import HookClient as HookClient
    from .fronts.client import RemoteError as RemoteError
    from .fronts.client import connect as connect
    from .fronts.selfconfig import TOOL_DEFINITIONS as TOOL_DEFINITIONS
    from .fronts.selfconfig import HooksTools as HooksTools
    from .fronts.selfconfig import SelfConfigError as SelfConfigError
    from .fronts.selfconfig import skill_text as skill_text
    from .handlers.judge import Judge as Judge
    from .handlers.judge import JudgeReply as JudgeReply

#: Public name -> the internal module that defines it.
_EXPORTS: dict[str, str] = {
    "ActorFailed": ".actors.supervisor",
    "GuardUnavailable": ".actors.guard",
    "AgentInput": ".agents.runner",
    "AgentPayloadError": ".agents.runner",
    "AgentResult": ".agents.runner",
    "AsyncioHookEngine": ".engine.asyncio_engine",
    "HookClient": ".fronts.client",
    "RemoteError": ".fronts.client",
    "connect": ".fronts.client",
    "HookEngine": ".engine.hook_engine",
    "EngineOptions": ".engine.options",
    "EVENTS": ".config.events",
    "JSON_ALIASES": ".config.events",
    "PayloadError": ".config.events",
    "UnknownEventError": ".config.events",
    "canonical_event": ".config.events",
    "Judge": ".handlers.judge",
    "JudgeReply": ".handlers.judge",
    "ConfigError": ".config.model",
    "ConfigProblem": ".config.model",
    "Hook": ".config.model",
    "HookTable": ".config.model",
    "Outcome": ".combine.outcome",
    "RunRecord": ".combine.outcome",
    "TOOL_DEFINITIONS": ".fronts.selfconfig",
    "HooksTools": ".fronts.selfconfig",
    "SelfConfigError": ".fronts.selfconfig",
    "skill_text": ".fronts.selfconfig",
}
__all__ = [
    "ActorFailed",
    "AgentInput",
    "AgentPayloadError",
    "AgentResult",
    "AsyncioHookEngine",
    "ConfigError",
    "ConfigProblem",
    "EVENTS",
    "EngineOptions",
    "GuardUnavailable",
    "Hook",
    "HookEngine",
    "HookClient",
    "HookTable",
    "HooksTools",
    "JSON_ALIASES",
    "Judge",
    "JudgeReply",
    "Outcome",
    "PayloadError",
    "RemoteError",
    "RunRecord",
    "SelfConfigError",
    "TOOL_DEFINITIONS",
    "UnknownEventError",
    "canonical_event",
    "connect",
    "skill_text",
]
assert set(__all__) == set(_EXPORTS)


def __getattr__(name: str) -> Any:
    try:
        module = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
