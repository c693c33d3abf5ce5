"""A small agent loop on Trio with triohooks embedded. Run: ``python examples/trio_agent.py``.

The "model" is a script (no network); the hooks are real: the example configs of both
dialects (examples/hooks.toml, examples/hooks.json), your own global hooks, and one
in-process Python hook. Every tool call goes through ``pre_tool`` (which may block it or
rewrite its arguments) and ``post_tool``; the prompt goes through ``prompt_submit``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import trio

from triohooks import HookEngine

EXAMPLES = Path(__file__).resolve().parent
SESSION = {"session_id": "example-session", "prompt_id": "prompt-1"}

#: The scripted model's tool calls, in order.
MODEL_TURNS = [
    ("bash", {"command": "pytest tests/test_parser.py"}),
    ("bash", {"command": "rm -rf build/"}),
    ("bash", {"command": "git push origin main"}),
]


async def no_rm_rf(event: Mapping[str, Any]) -> dict[str, str] | None:
    """An in-process hook: it replies like a TOML-dialect hook's stdout JSON, or None."""
    if "rm -rf" in event["args"].get("command", ""):
        return {"decision": "block", "reason": "rm -rf needs a human"}
    return None


async def run_tool(tool: str, args: Mapping[str, Any]) -> str:
    await trio.lowlevel.checkpoint()  # a real agent would run the tool here
    return f"ran {tool}: {args['command']}"


async def agent(prompt: str) -> None:
    async with HookEngine.open(
        extra_configs=[EXAMPLES / "hooks.toml", EXAMPLES / "hooks.json"]
    ) as engine:
        engine.add_hook("pre_tool", no_rm_rf, match="bash")
        await engine.session_start("startup", **SESSION)
        submitted = await engine.prompt_submit(prompt, **SESSION)
        if submitted.blocked:
            print(f"prompt refused: {submitted.reason}")
            return
        print(f"context for the model: {submitted.additional_context!r}")
        for tool, args in MODEL_TURNS:
            pre = await engine.pre_tool(tool, args, **SESSION)
            if pre.blocked:
                print(f"blocked: {pre.message_for_model}")  # the model sees this instead
                continue
            final_args = pre.args if pre.args is not None else args
            result = await run_tool(tool, final_args)
            print(result)
            await engine.post_tool(tool, final_args, result=result, **SESSION)
        stop = await engine.stop(**SESSION)
        print(f"stop hooks say: {'go on' if stop.continue_ else 'done'}")
        await engine.session_end("exit", **SESSION)
    # Leaving the block closed the engine: background hooks drained (5 s at most).
    report = engine.close_report
    if report is not None:
        print(f"closed: {report.ran} background event(s) ran, {report.dropped_at_close} dropped")


if __name__ == "__main__":
    trio.run(agent, "Fix the parser test, clean the build, then push.")
