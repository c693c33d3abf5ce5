"""The same small agent loop on asyncio. Run: ``python examples/asyncio_agent.py``.

``AsyncioHookEngine`` runs the Trio engine as a guest on this asyncio loop; every method is an
ordinary awaitable, and the in-process hook is an asyncio coroutine function (it runs as an
asyncio task on this loop).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from triohooks import AsyncioHookEngine

EXAMPLES = Path(__file__).resolve().parent
SESSION = {"session_id": "example-session", "prompt_id": "prompt-1"}

MODEL_TURNS = [
    ("bash", {"command": "pytest tests/test_parser.py"}),
    ("bash", {"command": "rm -rf build/"}),
    ("bash", {"command": "git push origin main"}),
]


async def no_rm_rf(event: Mapping[str, Any]) -> dict[str, str] | None:
    await asyncio.sleep(0)  # asyncio code: this hook runs on the caller's loop
    if "rm -rf" in event["args"].get("command", ""):
        return {"decision": "block", "reason": "rm -rf needs a human"}
    return None


async def agent(prompt: str) -> None:
    async with AsyncioHookEngine.open(
        extra_configs=[EXAMPLES / "hooks.toml", EXAMPLES / "hooks.json"]
    ) as engine:
        engine.add_hook("pre_tool", no_rm_rf, match="bash")
        submitted = await engine.prompt_submit(prompt, **SESSION)
        print(f"context for the model: {submitted.additional_context!r}")
        # Tool calls may be checked concurrently; each awaits its own hooks.
        checks = await asyncio.gather(
            *(engine.pre_tool(tool, args, **SESSION) for tool, args in MODEL_TURNS)
        )
        for (tool, args), pre in zip(MODEL_TURNS, checks, strict=True):
            if pre.blocked:
                print(f"blocked: {pre.message_for_model}")
                continue
            final_args = pre.args if pre.args is not None else args
            print(f"ran {tool}: {final_args['command']}")
            await engine.post_tool(tool, final_args, result="ok", **SESSION)
    report = engine.close_report
    if report is not None:
        print(f"closed: {report.ran} background event(s) ran, {report.dropped_at_close} dropped")


if __name__ == "__main__":
    asyncio.run(agent("Fix the parser test, clean the build, then push."))
