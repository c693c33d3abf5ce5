"""Opens the process guard of this OS: the backend :func:`triohooks.actors.guard.backend` picks.

The interface and what both backends share live in :mod:`triohooks.actors.guard`, which imports
neither backend; each backend imports the interface, and the linux one
(:mod:`triohooks.actors.reaper`) is the posix one (:mod:`triohooks.actors.posix_guard`) plus the
watchdog helper, so it imports that too; only this module opens them. So the guard's modules
import in one direction, without a circle.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from .guard import ProcessGuard, backend


@asynccontextmanager
async def open_guard(*, watchdog: bool = True) -> AsyncIterator[ProcessGuard]:
    """The process guard of this OS (:func:`~triohooks.actors.guard.backend`), open until the
    block ends: then every group still alive is killed and the watchdog stopped (see each
    backend). Raises :class:`~triohooks.actors.guard.GuardUnavailable` where none can run."""
    if backend() == "linux":
        # Each backend is imported when it is chosen: only the one that runs is loaded.
        from .reaper import open_reaper

        async with open_reaper(watchdog=watchdog) as reaper:
            yield reaper
    else:
        from .posix_guard import open_posix_guard

        async with open_posix_guard(watchdog=watchdog) as guard:
            yield guard
