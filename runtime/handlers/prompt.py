"""TOML-dialect prompt hooks (blitz HK-63): a judge (the embedding agent's model, or the built-in
OpenAI-compatible client) reads the event against the hook's criteria; its answer is read like a
command's stdout, ``{"decision": ""}`` meaning no opinion."""

from __future__ import annotations

import time

import msgspec
import trio

from triohooks.config.model import Hook, PromptHandler

from .judge import Judge
from .replies import RunResult, parse_toml_stdout
from .runner import HookInput


class PromptRunner:
    """Asks the judge under the hook's timeout (None: no model is configured)."""

    def __init__(self, judge: Judge | None) -> None:
        self._judge = judge

    async def run(self, hook: Hook, hook_input: HookInput) -> RunResult:
        handler = hook.handler
        assert isinstance(handler, PromptHandler)
        if self._judge is None:
            return RunResult(outcome="error", error="no model is configured to judge prompt hooks")
        start = time.perf_counter()
        with trio.move_on_after(hook.timeout_s) as cs:
            try:
                reply = await self._judge(
                    handler.prompt, hook_input.payload.decode(), handler.model
                )
            except Exception as exc:
                return RunResult(
                    outcome="error",
                    error=f"judge failed: {exc}",
                    duration_ms=(time.perf_counter() - start) * 1000,
                )
        ms = (time.perf_counter() - start) * 1000
        if cs.cancelled_caught:
            return RunResult(
                outcome="timeout",
                error=f"judge timed out after {hook.timeout_s:g} s",
                duration_ms=ms,
            )
        text = reply.text.strip()
        if not text.startswith("{"):
            read = RunResult(outcome="error", error=f"judge answered no JSON: {text[:80]!r}")
        else:
            read = parse_toml_stdout(text)
        return msgspec.structs.replace(
            read,
            duration_ms=ms,
            input_tokens=reply.input_tokens,
            output_tokens=reply.output_tokens,
        )
