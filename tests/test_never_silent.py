"""Failures are never silent for embedders (docs/security.md, "Never silent"): workspace hooks
trust holds back, and hooks that fail without blocking, appear in the Outcome of every event
they concern and on the ``triohooks`` logger once per cause -- on both engines and ``fire``.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest
import trio

from tests.asyncio_support import run
from tests.helpers import bash_hook, cli_here, write_json_hooks, write_toml_hooks
from triohooks import HookEngine
from triohooks.config.table import load_table
from triohooks.config.trust import record_trust
from triohooks.engine.asyncio_engine import AsyncioHookEngine

#: A repository's guard the user has not trusted: it would block ``git push``.
WORKSPACE_GUARD = """
[[hooks.pre_tool]]
command = "echo ran >> ran.txt; exit 2"
if = "shell(git push*)"
fail_closed = true
"""

HELD = "1 workspace hook(s) of {ws} held back: they are not trusted yet"


def setup(tmp_path: Path, global_toml: str = "") -> tuple[Path, Path]:
    ws, cfg = tmp_path / "ws", tmp_path / "cfg"
    write_toml_hooks(ws / ".agents", WORKSPACE_GUARD)
    cfg.mkdir()
    if global_toml:
        write_toml_hooks(cfg, global_toml)
    return ws, cfg


def held_warnings(warnings: list[str]) -> list[str]:
    return [w for w in warnings if "held back" in w]


def opened(ws: Path, cfg: Path) -> AbstractAsyncContextManager[HookEngine]:
    return HookEngine.open(workspace=ws, config_dir=cfg, state_dir=cfg / "state", audit=False)


async def test_an_untrusted_guard_that_would_have_applied_is_said_in_the_outcome(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ws, cfg = setup(tmp_path)
    caplog.set_level(logging.WARNING, logger="triohooks")
    with trio.fail_after(10):
        async with opened(ws, cfg) as engine:
            push = await engine.pre_tool("bash", {"command": "git push origin main"})
            ls = await engine.pre_tool("bash", {"command": "ls"})
            again = await engine.pre_tool("bash", {"command": "git push"})
    # Held back: it did not run and did not block -- and the Outcome says so, with the fix.
    assert not push.blocked and push.runs == []
    assert not (ws / "ran.txt").exists()
    (text,) = held_warnings(push.warnings)
    assert text.startswith(HELD.format(ws=ws.resolve()))
    assert f"triohooks trust --workspace {ws.resolve()}" in text
    assert held_warnings(again.warnings) == [text]
    # A call the held-back hook would not have run for says nothing about it.
    assert ls.warnings == []
    # The log says it once, as the engine opens (not per event).
    logged = [r.getMessage() for r in caplog.records if "held back" in r.getMessage()]
    assert logged == [text]


async def test_trusted_then_changed_says_what_changed(tmp_path: Path) -> None:
    ws, cfg = setup(tmp_path)
    table = load_table(workspace=ws, config_dir=cfg, trust_override=True)
    assert table.trust is not None
    record_trust(cfg, ws, table.trust)
    (ws / ".agents/hooks.toml").write_text(WORKSPACE_GUARD.replace("exit 2", "exit 0"))
    with trio.fail_after(10):
        async with opened(ws, cfg) as engine:
            outcome = await engine.pre_tool("bash", {"command": "git push"})
    (text,) = held_warnings(outcome.warnings)
    assert "they changed since you trusted them (.agents/hooks.toml)" in text


async def test_declined_hooks_are_said_per_event_but_not_logged_at_open(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ws, cfg = setup(tmp_path)
    table = load_table(workspace=ws, config_dir=cfg, trust_override=True)
    assert table.trust is not None
    record_trust(cfg, ws, table.trust, "declined")
    caplog.set_level(logging.WARNING, logger="triohooks")
    with trio.fail_after(10):
        async with opened(ws, cfg) as engine:
            outcome = await engine.pre_tool("bash", {"command": "git push"})
    (text,) = held_warnings(outcome.warnings)
    assert "you declined them" in text
    assert not [r for r in caplog.records if "held back" in r.getMessage()]


async def test_a_held_back_post_tool_failure_hook_is_said_on_a_failed_post_tool(
    tmp_path: Path,
) -> None:
    ws, cfg = tmp_path / "ws", tmp_path / "cfg"
    write_json_hooks(ws / ".agents", [bash_hook("notify", "true", event="post_tool_use")])
    write_toml_hooks(ws / ".agents", '[[hooks.post_tool_failure]]\ncommand = "true"\n')
    cfg.mkdir()
    with trio.fail_after(10):
        async with opened(ws, cfg) as engine:
            failed = await engine.post_tool("bash", {"command": "make"}, error="exit 2")
    assert "2 workspace hook(s)" in held_warnings(failed.warnings)[0]


def test_the_asyncio_engine_says_it_too(tmp_path: Path) -> None:
    """The asyncio engine answers events no hook runs for without crossing into trio: an
    event a held-back hook concerns must not be one of them."""
    ws, cfg = setup(tmp_path)

    async def body() -> None:
        async with AsyncioHookEngine.open(
            workspace=ws, config_dir=cfg, state_dir=cfg / "state", audit=False
        ) as engine:
            push = await engine.pre_tool("bash", {"command": "git push"})
            ls = await engine.pre_tool("bash", {"command": "ls"})
        assert not push.blocked
        assert held_warnings(push.warnings)[0].startswith(HELD.format(ws=ws.resolve()))
        assert ls.warnings == []

    run(body)


def fire(ws: Path, cfg: Path, payload: dict[str, object]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TRIOHOOKS_CONFIG_DIR": str(cfg), "TRIOHOOKS_STATE_DIR": str(cfg / "s")}
    return cli_here(
        ["fire", "pre_tool", "--workspace", str(ws)], stdin=json.dumps(payload), env=env
    )


def test_fire_prints_it_and_answers_like_the_engine(tmp_path: Path) -> None:
    ws, cfg = setup(tmp_path)
    push = fire(ws, cfg, {"tool": "bash", "args": {"command": "git push"}})
    assert push.returncode == 0, push.stderr
    outcome = json.loads(push.stdout)
    (text,) = held_warnings(outcome["warnings"])
    assert f"triohooks: warning: {text}" in push.stderr
    # The call no held-back hook concerns takes fire's engine-less path: the load still says
    # that hooks are held back (as the engine's loader does), the Outcome does not.
    ls = fire(ws, cfg, {"tool": "bash", "args": {"command": "ls"}})
    assert ls.returncode == 0 and json.loads(ls.stdout)["warnings"] == []
    assert f"triohooks: {text}" in ls.stderr


FAILING = """
[[hooks.pre_tool]]
id = "gone"
command = "./scripts/missing.sh"

[[hooks.pre_tool]]
id = "slow"
command = "sleep 5"
timeout_seconds = 0.2
"""


async def test_a_failing_hook_is_in_every_outcome_and_logged_once_per_cause(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ws, cfg = tmp_path / "ws", tmp_path / "cfg"
    ws.mkdir()
    write_toml_hooks(cfg, FAILING)
    caplog.set_level(logging.WARNING, logger="triohooks")
    with trio.fail_after(15):
        async with opened(ws, cfg) as engine:
            outcomes = [await engine.pre_tool("bash", {"command": "ls"}) for _ in range(3)]
    for outcome in outcomes:
        assert not outcome.blocked
        gone, slow = outcome.warnings
        assert gone.startswith("hook gone failed") and "missing.sh" in gone
        assert slow.startswith("hook slow failed") and "timed out" in slow
    logged = [r.getMessage() for r in caplog.records if r.name == "triohooks.runs"]
    assert len(logged) == 2, logged
    assert logged[0].startswith("hook gone (") and "missing.sh" in logged[0]
    assert logged[1].startswith("hook slow (") and "timed out" in logged[1]
