"""A bug in selecting or matching hooks fails the event closed on every front (docs/security.md,
"Internal errors fail closed"): the trio engine, the asyncio engine, `fire`, the websocket
`fire`, the relay and serve's agent endpoint. A raising `if` rule is injected into the one
function every front asks (the matcher of native hooks, and of an agent's own hooks); each
front must block the call it could not judge, saying so, and never let it through or crash.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.helpers import write_toml_hooks
from tests.serving import running_server
from triohooks import AsyncioHookEngine, HookEngine
from triohooks.fronts.client import connect

pytestmark = pytest.mark.slow

GUARD = '[[hooks.pre_tool]]\nid = "push-guard"\nif = "shell(git push*)"\ncommand = "exit 2"\n'
TOKEN = "containment-token-0123456789abcdef"
#: Python run in a child before the front starts: every matcher raises.
BREAK = (
    "import triohooks.match.ifrules as r, triohooks.config.selection as s\n"
    "def boom(*a, **k):\n    raise RuntimeError('matcher bug')\n"
    "r.rule_applies = boom\ns.rule_applies = boom\n"
    "import triohooks.agents.plan as ap\nap.rule_applies = boom\n"
)


def _break(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: Any, **kwargs: Any) -> bool:
        raise RuntimeError("matcher bug")

    monkeypatch.setattr("triohooks.config.selection.rule_applies", boom)
    monkeypatch.setattr("triohooks.agents.plan.rule_applies", boom)


def _internal(reason: str | None) -> bool:
    return reason is not None and "internal error" in reason and "matcher bug" in reason


async def test_the_trio_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_toml_hooks(tmp_path / "g", GUARD)
    _break(monkeypatch)
    with trio.fail_after(20):
        async with HookEngine.open(
            workspace=tmp_path, config_dir=tmp_path / "g", state_dir=tmp_path / "s"
        ) as engine:
            out = await engine.pre_tool("bash", {"command": "git push origin main"})
            after = await engine.post_tool("bash", {"command": "ls"}, result="ok")
    assert out.blocked and _internal(out.reason)
    assert not after.blocked  # an event that cannot block only says it


def test_the_asyncio_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_toml_hooks(tmp_path / "g", GUARD)
    _break(monkeypatch)

    async def main() -> Any:
        async with AsyncioHookEngine.open(
            workspace=tmp_path, config_dir=tmp_path / "g", state_dir=tmp_path / "s"
        ) as engine:
            return await asyncio.wait_for(
                engine.pre_tool("bash", {"command": "git push origin main"}), 20
            )

    out = asyncio.run(main())
    assert out.blocked and _internal(out.reason)


def _cli(tmp_path: Path, *args: str, stdin: str) -> subprocess.CompletedProcess[str]:
    code = BREAK + "import sys\nfrom triohooks.fronts.cli import main\nsys.exit(main())\n"
    env = {
        **os.environ,
        "TRIOHOOKS_CONFIG_DIR": str(tmp_path / "g"),
        "TRIOHOOKS_STATE_DIR": str(tmp_path / "s"),
    }
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )


def test_fire(tmp_path: Path) -> None:
    write_toml_hooks(tmp_path / "g", GUARD)
    payload = json.dumps({"tool": "bash", "args": {"command": "git push origin main"}})
    done = _cli(tmp_path, "fire", "pre_tool", stdin=payload)
    assert done.returncode == 2, done.stderr
    assert _internal(json.loads(done.stdout)["reason"])
    # Our own bug: logged with its traceback (for the report), and answered closed.
    assert "internal error while handling pre_tool" in done.stderr


async def test_the_websocket_fire(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_toml_hooks(tmp_path / "g", GUARD)
    _break(monkeypatch)
    with trio.fail_after(30):
        async with (
            running_server(tmp_path, TOKEN) as server,
            connect(f"ws://{server.host}:{server.port}/", TOKEN) as client,
        ):
            out = await client.fire("pre_tool", tool="bash", args={"command": "git push"})
    assert out.blocked and _internal(out.reason)


def _claude_setup(tmp_path: Path) -> tuple[Path, Path, bytes]:
    """A user-level Claude Code hook with an `if` rule (the agent's matcher path) and the
    native guard (the dispatcher's), and a PreToolUse input."""
    home, project = tmp_path / "home", tmp_path / "proj"
    (home / ".claude").mkdir(parents=True)
    (project / ".claude").mkdir(parents=True)
    hooks = {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [{"type": "command", "command": "exit 0", "if": "Bash(git push*)"}],
            }
        ]
    }
    (home / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))
    write_toml_hooks(tmp_path / "g", GUARD)
    body = json.dumps(
        {
            "session_id": "s",
            "cwd": str(project),
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "git push origin main"},
        }
    ).encode()
    return home, project, body


def test_the_relay(tmp_path: Path) -> None:
    home, project, body = _claude_setup(tmp_path)
    code = BREAK + "import sys\nfrom triohooks.fronts.relay import main\nsys.exit(main())\n"
    env = {
        **os.environ,
        "HOME": str(home),
        "TRIOHOOKS_CONFIG_DIR": str(tmp_path / "g"),
        "TRIOHOOKS_STATE_DIR": str(tmp_path / "s"),
        "TRIOHOOKS_NO_AUTOSTART": "1",
    }
    done = subprocess.run(
        [sys.executable, "-c", code, "claude"],
        input=body,
        capture_output=True,
        env=env,
        cwd=project,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert "internal error" in out["permissionDecisionReason"]


async def test_the_agent_endpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, _, body = _claude_setup(tmp_path)
    monkeypatch.setenv("HOME", str(home))
    _break(monkeypatch)
    with trio.fail_after(30):
        async with running_server(tmp_path, TOKEN) as server:
            stream = await trio.open_tcp_stream(server.host, server.port)
            async with stream:
                head = (
                    f"POST /claude/v1/hook HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}"
                    f"\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                ).encode()
                await stream.send_all(head + body)
                data = b""
                while b"\r\n\r\n" not in data or not data.rstrip().endswith(b"}"):
                    chunk = await stream.receive_some()
                    if not chunk:
                        break
                    data += chunk
    answer = json.loads(data.partition(b"\r\n\r\n")[2])
    out = answer["hookSpecificOutput"]
    assert (
        out["permissionDecision"] == "deny" and "internal error" in out["permissionDecisionReason"]
    )


async def test_the_websocket_fire_when_the_engine_itself_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the engine's own containment (a bug in `fire` itself): serve answers the event
    closed, not with an error a client could read as "go on", and the connection lives on."""
    write_toml_hooks(tmp_path / "g", GUARD)

    async def boom(self: Any, event: str, payload: Any) -> Any:
        raise RuntimeError("matcher bug")

    monkeypatch.setattr(HookEngine, "fire", boom)
    with trio.fail_after(30):
        async with (
            running_server(tmp_path, TOKEN) as server,
            connect(f"ws://{server.host}:{server.port}/", TOKEN) as client,
        ):
            out = await client.fire("pre_tool", tool="bash", args={"command": "git push"})
            note = await client.fire("notification", message="hi")
            await client.ping()
    assert out.blocked and _internal(out.reason)
    assert not note.blocked and any("matcher bug" in w for w in note.warnings)
