"""In-process Python hooks (``engine.add_hook``): an async callable gets the event's fields and
answers like a TOML-dialect hook's stdout (a reply dict, a string, or None for no opinion)."""

from __future__ import annotations

import time
from typing import Any, Final

import msgspec
import trio

from triohooks.config.model import Hook, PythonHandler

from .replies import RunResult, parse_toml_stdout
from .runner import HookInput

_encoder: Final = msgspec.json.Encoder()


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
                return RunResult(
                    outcome="error",
                    error=f"python hook raised {exc!r}",
                    duration_ms=(time.perf_counter() - start) * 1000,
                )
        ms = (time.perf_counter() - start) * 1000
        if cs.cancelled_caught:
            return RunResult(
                outcome="timeout", error=f"timed out after {hook.timeout_s:g} s", duration_ms=ms
            )
        if reply is None:
            return RunResult(outcome="ok", duration_ms=ms)
        text = reply if isinstance(reply, str) else _encoder.encode(reply).decode()
        return msgspec.structs.replace(parse_toml_stdout(text), duration_ms=ms)
