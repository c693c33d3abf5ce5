"""The supervisor: starts actors in dependency order and restarts a crashed one, within a budget.

Each actor is an async ``serve(task_status=...)`` function that calls ``task_status.started()``
once it is ready. The supervisor starts them one after another with ``nursery.start`` (so an
actor's dependencies are ready before it starts); an actor that raises an ``Exception`` is
logged and started again, unless it has crashed ``budget`` times within ``window_s`` seconds —
then the engine fails loudly with :class:`ActorFailed` naming the actor and the cause.
Cancellation is never caught: shutdown propagates. Closing in order is the engine's job (it
knows what to drain); this module must not know what any actor does.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Final

import trio

log = logging.getLogger("triohooks.supervisor")

DEFAULT_BUDGET: Final = 5
DEFAULT_WINDOW_S: Final = 10.0

Serve = Callable[..., Awaitable[Any]]


class ActorFailed(RuntimeError):
    """An actor crashed more often than its restart budget allows."""

    def __init__(self, name: str, crashes: int, window_s: float, cause: BaseException) -> None:
        super().__init__(
            f"actor {name!r} crashed {crashes} times within {window_s:g} s; last error: {cause!r}"
        )
        self.name = name
        self.cause = cause


class Supervisor:
    """Runs actors in ``nursery``; see the module docstring."""

    def __init__(
        self,
        nursery: trio.Nursery,
        *,
        budget: int = DEFAULT_BUDGET,
        window_s: float = DEFAULT_WINDOW_S,
    ) -> None:
        self._nursery = nursery
        self.budget = budget
        self.window_s = window_s
        #: Restarts so far, per actor name (for stats and tests).
        self.restarts: dict[str, int] = {}

    async def start(self, name: str, serve: Serve) -> None:
        """Start ``serve`` under supervision and return once it reported ready.

        A checkpoint. If the actor crashes before it is ready, the crash propagates (a start-up
        failure is not retried: the engine cannot open).
        """
        await self._nursery.start(self._supervise, name, serve)

    async def _supervise(
        self, name: str, serve: Serve, *, task_status: trio.TaskStatus[None]
    ) -> None:
        crashes: deque[float] = deque()
        self.restarts[name] = 0
        ready = _Ready(task_status)
        while True:
            try:
                if not ready.called:
                    await serve(task_status=ready)
                else:
                    await serve()
                return  # an actor that returns has finished its work
            except Exception as exc:
                if not ready.called:
                    raise  # failed before it was ready: the engine cannot open
                now = trio.current_time()
                crashes.append(now)
                while crashes and now - crashes[0] > self.window_s:
                    crashes.popleft()
                if len(crashes) >= self.budget:
                    log.error("actor %s crashed %d times; giving up", name, len(crashes))
                    raise ActorFailed(name, len(crashes), self.window_s, exc) from exc
                # One line (a front's stderr never shows a traceback); the traceback at DEBUG.
                log.error(
                    "actor %s crashed; restarting (%d): %r",
                    name,
                    len(crashes),
                    exc,
                    exc_info=log.isEnabledFor(logging.DEBUG),
                )
                self.restarts[name] += 1


class _Ready:
    """Passes ``started()`` on and remembers that it was called (a later crash restarts)."""

    def __init__(self, inner: trio.TaskStatus[None]) -> None:
        self._inner = inner
        self.called = False

    def started(self, value: None = None) -> None:
        self.called = True
        self._inner.started(value)
