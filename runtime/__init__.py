"""triohooks: a lifecycle-hooks runtime for AI coding agents, on Trio.

The public face. Implementation lives in private modules; this namespace re-exports.
"""

from __future__ import annotations

from ._events import EVENTS as EVENTS
from ._events import UnknownEventError as UnknownEventError
from ._events import canonical_event as canonical_event
from ._model import ConfigError as ConfigError
from ._model import ConfigProblem as ConfigProblem
from ._model import Hook as Hook
from ._model import HookTable as HookTable
