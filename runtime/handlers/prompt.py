"""TOML-dialect prompt hooks (blitz HK-63): a judge (the embedding agent's model, or the built-in
OpenAI-compatible client) reads the event against the hook's criteria; its answer is read like a
command's stdout, ``{"decision": ""}`` meaning no opinion."""

from __future__ import annotations

import time
from typing import Literal, NamedTuple

import msgspec
import trio

from triohooks.config.model import Hook, PromptHandler

from .judge import Judge, JudgeReply
from .replies import RunResult, parse_toml_stdout
from .runner import HookInput

#: What a prompt hook is told when no judge is configured (in every dialect).
NO_JUDGE = "no model is configured to judge prompt hooks"


class Asked(NamedTuple):
    """What asking a judge came to: its ``reply`` (None when there was none: ``outcome`` is
    ``error`` or ``timeout`` and ``error`` says why) and how long it took."""

    reply: JudgeReply | None
    outcome: Literal["ok", "error", "timeout"]
    error: str | None
    duration_ms: float


async def ask_judge(
    judge: Judge, prompt: str, event_json: str, model: str | None, timeout_s: float
) -> Asked:
    """The one way a prompt hook asks its judge, whatever its dialect: under the hook's
    timeout (a cancel scope), a judge that raises being the hook's failure -- the judge's
    contract (:data:`~triohooks.handlers.judge.Judge`) -- not ours. The dialect reads the
    reply."""
    start = time.perf_counter()
    with trio.move_on_after(timeout_s) as cs:
        try:
            reply = await judge(prompt, event_json, model)
        except Exception as exc:
            ms = (time.perf_counter() - start) * 1000
            return Asked(None, "error", f"judge failed: {exc}", ms)
    ms = (time.perf_counter() - start) * 1000
    if cs.cancelled_caught:
        return Asked(None, "timeout", f"judge timed out after {timeout_s:g} s", ms)
    return Asked(reply, "ok", None, ms)


class PromptRunner:
    """Asks the judge under the hook's timeout (None: no model is configured)."""

    def __init__(self, judge: Judge | None) -> None:
        self._judge = judge

    async def run(self, hook: Hook, hook_input: HookInput) -> RunResult:
        handler = hook.handler
        assert isinstance(handler, PromptHandler)
        if self._judge is None:
            return RunResult(outcome="error", error=NO_JUDGE)
        asked = await ask_judge(
            self._judge, handler.prompt, hook_input.payload.decode(), handler.model, hook.timeout_s
        )
        reply = asked.reply
        if reply is None:
            return RunResult(
                outcome=asked.outcome, error=asked.error, duration_ms=asked.duration_ms
            )
        text = reply.text.strip()
        if not text.startswith("{"):
            read = RunResult(outcome="error", error=f"judge answered no JSON: {text[:80]!r}")
        else:
            read = parse_toml_stdout(text)
        return msgspec.structs.replace(
            read,
            duration_ms=asked.duration_ms,
            input_tokens=reply.input_tokens,
            output_tokens=reply.output_tokens,
        )
