"""What the public async methods' docstrings promise: "A checkpoint" -- each call lets other
tasks run and can be cancelled, also on its fast path (no hook matches, nothing to do), so an
agent's loop that calls it never starves its other tasks nor ignores a cancel."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from triohooks import HookEngine, HooksTools, connect
from triohooks.fronts.server import ServeSettings, serve

IN_PROCESS = '[[hooks.pre_tool]]\nid = "nothing"\nmatch = "Nope"\ncommand = "true"\n'


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path, Path]:
    ws, config, state = tmp_path / "ws", tmp_path / "g", tmp_path / "s"
    for d in (ws, config, state):
        d.mkdir()
    (config / "hooks.toml").write_text(IN_PROCESS)
    return ws, config, state


async def _checkpoints(call: Callable[[], Awaitable[Any]]) -> None:
    with trio.testing.assert_checkpoints():
        await call()


async def test_the_engines_methods_are_checkpoints(dirs: tuple[Path, Path, Path]) -> None:
    ws, config, state = dirs
    claude = json.dumps(
        {
            "session_id": "s",
            "cwd": str(ws),
            "hook_event_name": "PreToolUse",
            "tool_name": "Read",
            "tool_input": {"file_path": "x"},
        }
    ).encode()
    with trio.fail_after(30):
        async with HookEngine.open(
            workspace=ws, config_dir=config, state_dir=state, audit=False
        ) as engine:
            calls: list[Callable[[], Awaitable[Any]]] = [
                lambda: engine.fire("pre_tool", tool="Read", args={}),  # no hook matches
                lambda: engine.pre_tool("Read", {}),
                lambda: engine.post_tool("Read", {}, result="x"),
                lambda: engine.prompt_submit("hello"),
                engine.session_start,
                lambda: engine.notification("idle", "waiting"),
                lambda: engine.agent_hook("claude", claude),
                engine.reload,
            ]
            for call in calls:
                await _checkpoints(call)


async def test_the_self_configuration_tools_are_checkpoints(
    dirs: tuple[Path, Path, Path],
) -> None:
    ws, config, _ = dirs
    tools = HooksTools(workspace=ws, config_dir=config)
    with trio.fail_after(30):
        await _checkpoints(tools.list_hooks)
        await _checkpoints(lambda: tools.get_hook("nothing"))
        await _checkpoints(lambda: tools.call("list_hooks", {}))


async def test_the_clients_methods_are_checkpoints(dirs: tuple[Path, Path, Path]) -> None:
    ws, config, state = dirs
    settings = ServeSettings(
        token="t0k3n",
        port=0,
        engine={"workspace": ws, "config_dir": config, "state_dir": state, "audit": False},
    )
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            server = await nursery.start(serve, settings)
            async with connect(server.url, "t0k3n") as client:
                await _checkpoints(lambda: client.fire("pre_tool", {"tool": "Read"}))
                await _checkpoints(client.ping)
                await _checkpoints(client.stats)
            server.shutdown()
