"""triohooks: a lifecycle-hooks runtime for AI coding agents, on Trio.

The public face. Implementation lives in private modules; this namespace re-exports what an
embedding agent, a hook-tool author or a client needs. The names load on first use, so that
``triohooks fire`` (which imports this package on every call an agent makes) pays only for the
modules it runs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._asyncio import AsyncioHookEngine as AsyncioHookEngine
    from ._client import HookClient as HookClient
    from ._client import RemoteError as RemoteError
    from ._client import connect as connect
    from ._engine import HookEngine as HookEngine
    from ._events import EVENTS as EVENTS
    from ._events import JSON_ALIASES as JSON_ALIASES
    from ._events import PayloadError as PayloadError
    from ._events import UnknownEventError as UnknownEventError
    from ._events import canonical_event as canonical_event
    from ._judge import Judge as Judge
    from ._judge import JudgeReply as JudgeReply
    from ._model import ConfigError as ConfigError
    from ._model import ConfigProblem as ConfigProblem
    from ._model import Hook as Hook
    from ._model import HookTable as HookTable
    from ._outcome import Outcome as Outcome
    from ._outcome import RunRecord as RunRecord
    from ._selfconfig import TOOL_DEFINITIONS as TOOL_DEFINITIONS
    from ._selfconfig import HooksTools as HooksTools
    from ._selfconfig import SelfConfigError as SelfConfigError
    from ._selfconfig import skill_text as skill_text

#: Public name -> the private module that defines it.
_EXPORTS: dict[str, str] = {
    "AsyncioHookEngine": "._asyncio",
    "HookClient": "._client",
    "RemoteError": "._client",
    "connect": "._client",
    "HookEngine": "._engine",
    "EVENTS": "._events",
    "JSON_ALIASES": "._events",
    "PayloadError": "._events",
    "UnknownEventError": "._events",
    "canonical_event": "._events",
    "Judge": "._judge",
    "JudgeReply": "._judge",
    "ConfigError": "._model",
    "ConfigProblem": "._model",
    "Hook": "._model",
    "HookTable": "._model",
    "Outcome": "._outcome",
    "RunRecord": "._outcome",
    "TOOL_DEFINITIONS": "._selfconfig",
    "HooksTools": "._selfconfig",
    "SelfConfigError": "._selfconfig",
    "skill_text": "._selfconfig",
}
__all__ = [
    "AsyncioHookEngine",
    "ConfigError",
    "ConfigProblem",
    "EVENTS",
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
