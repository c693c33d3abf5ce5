"""triohooks: a lifecycle-hooks runtime for AI coding agents, on Trio.

The public face. Implementation lives in private modules; this namespace re-exports what an
embedding agent, a hook-tool author or a client needs.
"""

from __future__ import annotations

from ._asyncio import AsyncioHookEngine as AsyncioHookEngine
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
