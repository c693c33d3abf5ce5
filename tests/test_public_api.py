"""The public namespace: pinned so a rename is a deliberate, visible change."""

from __future__ import annotations

import subprocess
import sys

import pytest

import triohooks

EXPECTED = {
    "AsyncioHookEngine",
    "ConfigError",
    "ConfigProblem",
    "EVENTS",
    "EngineOptions",
    "Hook",
    "HookEngine",
    "HookClient",
    "HookTable",
    "HooksTools",
    "JSON_ALIASES",
    "Judge",
    "JudgeReply",
    "Outcome",
    "PayloadError",
    "RemoteError",
    "RunRecord",
    "SelfConfigError",
    "TOOL_DEFINITIONS",
    "UnknownEventError",
    "canonical_event",
    "connect",
    "skill_text",
}


def test_triohooks_exports_exactly_the_public_names() -> None:
    assert set(triohooks.__all__) == EXPECTED
    for name in EXPECTED:
        assert getattr(triohooks, name) is not None


def test_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = triohooks.Nope


def test_fire_path_does_not_import_http_or_websocket_libraries() -> None:
    code = (
        "import sys, triohooks.fronts.cli, triohooks.engine.hook_engine\n"
        "heavy = [m for m in ('httpx2', 'trio_websocket', 'asyncio') if m in sys.modules]\n"
        "print(','.join(heavy))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


async def test_both_engines_take_the_one_options_type() -> None:
    import inspect

    for engine in (triohooks.HookEngine, triohooks.AsyncioHookEngine):
        params = inspect.signature(engine.open).parameters
        assert list(params) == ["judge", "options"], engine
    with pytest.raises(TypeError, match="unknown engine option"):
        async with triohooks.HookEngine.open(workspac="."):  # type: ignore[call-arg]
            pass
