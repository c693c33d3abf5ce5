"""What the asyncio-engine test modules share: a bounded ``asyncio.run`` that also checks no trio
guest run outlived its loop, and a wait for a process to die."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import psutil

from triohooks.engine.asyncio_engine import guest_runs_active

#: Every body runs under this ``asyncio.timeout``, so a hang fails fast.
DEADLINE_S = 15


def run(body: Callable[[], Awaitable[None]], deadline_s: float = DEADLINE_S) -> None:
    """``asyncio.run(body())`` under ``asyncio.timeout(deadline_s)``; then no guest run is left."""

    async def bounded() -> None:
        async with asyncio.timeout(deadline_s):
            await body()

    asyncio.run(bounded())
    assert guest_runs_active() == 0, "a trio guest run outlived its loop"


async def gone(pid: int, within_s: float = 2.0) -> bool:
    """Whether ``pid`` is dead (or a zombie) within ``within_s``."""
    for _ in range(max(1, round(within_s / 0.01))):
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        await asyncio.sleep(0.01)
    return False
