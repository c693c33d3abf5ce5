"""In-process Python hooks (``engine.add_hook``): an async callable gets the event's fields and
answers like a TOML-dialect hook's stdout (a reply dict, a string, or None for no opinion).

:class:`PythonRunner` awaits the hook in Trio: the trio engine's hooks, and an asyncio engine's
background ones through their Trio-awaitable wrapper (which runs the coroutine as a task on the
asyncio loop). The asyncio engine runs its synchronous ones on its loop, with no Trio in between
(:class:`~triohooks.engine.asyncio_engine.AsyncioPythonRunner`), reading a reply, a raise and a
timeout with the same functions.
"""

from __future__ import annotations

import time
from typing import Any, Final

import msgspec
import trio

from triohooks.config.model import Hook, PythonHandler

from .replies import RunResult, parse_toml_stdout
from .runner import HookInput

_encoder: Final = msgspec.json.Encoder()


def raised_result(exc: Exception, start: float) -> RunResult:
    """The result of a hook that raised ``exc`` (started at ``start``, ``perf_counter``)."""
    return RunResult(
        outcome="error",
        error=f"python hook raised {exc!r}",
        duration_ms=(time.perf_counter() - start) * 1000,
    )


def timed_out_result(hook: Hook, start: float) -> RunResult:
    """The result of a hook still running at its timeout."""
    return RunResult(
        outcome="timeout",
        error=f"timed out after {hook.timeout_s:g} s",
        duration_ms=(time.perf_counter() - start) * 1000,
    )


def reply_result(reply: Any, start: float) -> RunResult:
    """The result of a hook that answered ``reply`` (a dict, a string, or None)."""
    ms = (time.perf_counter() - start) * 1000
    if reply is None:
        return RunResult(outcome="ok", duration_ms=ms)
    text = reply if isinstance(reply, str) else _encoder.encode(reply).decode()
    return msgspec.structs.replace(parse_toml_stdout(text), duration_ms=ms)


class PythonRunner:
    """Awaits the callable under the hook's timeout; what it raises is the hook's failure."""

    async def run(self, hook: Hook, hook_input: HookInput) -> RunResult:
        handler = hook.handler
        assert isinstance(handler, PythonHandler)
        start = time.perf_counter()
        reply: Any = None
        with trio.move_on_after(hook.timeout_s) as cs:
            try:
                reply = await handler.func(hook_input.fields)
            except Exception as exc:
                return raised_result(exc, start)
        if cs.cancelled_caught:
            return timed_out_result(hook, start)
        return reply_result(reply, start)
