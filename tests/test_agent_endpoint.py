"""``POST /claude/v1/hook`` on the real server and ``triohooks-relay`` against it (or without
it): real sockets on 127.0.0.1 port 0, real bash hooks, Claude Code's settings format."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import psutil
import pytest
import trio

from triohooks.config.paths import state_dir
from triohooks.fronts import relay
from triohooks.fronts.server import ADDR_FILE, HookServer, ServeSettings, serve

pytestmark = pytest.mark.slow

TOKEN = "agent-endpoint-token-0123456789abcdef"
REPO = Path(__file__).resolve().parent.parent
GUARD = {
    "PreToolUse": [
        {
            "matcher": "Bash",
            "hooks": [
                {
                    "type": "command",
                    "command": 'grep -q "git push" && { echo "no pushing" >&2; exit 2; }; exit 0',
                }
            ],
        }
    ]
}


class Env:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.project = root / "proj"
        self.state = root / "state"
        for d in (self.home / ".claude", self.project / ".claude", root / "g"):
            d.mkdir(parents=True)
        # As `triohooks claude install` leaves it: the hooks moved beside the settings file.
        self.adopted = self.home / ".claude" / "triohooks-hooks.json"
        self.adopted.write_text(json.dumps(GUARD))
        # Claude Code runs what is left in settings.json itself: never run by us again.
        (self.home / ".claude" / "settings.json").write_text(
            json.dumps(
                {
                    "hooks": {
                        "PreToolUse": [
                            {"hooks": [{"type": "command", "command": "touch native-ran"}]}
                        ]
                    }
                }
            )
        )

    def body(self, command: str, event: str = "PreToolUse") -> bytes:
        return json.dumps(
            {
                "session_id": "s",
                "transcript_path": "",
                "cwd": str(self.project),
                "hook_event_name": event,
                "tool_name": "Bash",
                "tool_input": {"command": command},
            }
        ).encode()

    def environ(self) -> dict[str, str]:
        return {
            **os.environ,
            "HOME": str(self.home),
            "TRIOHOOKS_STATE_DIR": str(self.state),
            "TRIOHOOKS_CONFIG_DIR": str(self.root / "g"),
            "PYTHONPATH": str(REPO / "build" / "mypy")
            + os.pathsep
            + os.environ.get("PYTHONPATH", ""),
        }


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    e = Env(tmp_path)
    monkeypatch.setenv("HOME", str(e.home))
    monkeypatch.setenv("TRIOHOOKS_STATE_DIR", str(e.state))
    return e


@asynccontextmanager
async def running(env: Env) -> AsyncIterator[HookServer]:
    engine = {"workspace": env.project, "config_dir": env.root / "g", "state_dir": env.state}
    settings = ServeSettings(
        token=TOKEN, port=0, engine=engine, close_timeout_s=0.5, fire_grace_s=2
    )
    async with trio.open_nursery() as nursery:
        server: HookServer = await nursery.start(serve, settings)
        try:
            yield server
        finally:
            server.shutdown()


async def post(
    server: HookServer,
    body: bytes,
    *,
    path: str = "/claude/v1/hook",
    token: str = TOKEN,
    requests: int = 1,
) -> list[tuple[int, Any]]:
    """Send ``requests`` requests on one keep-alive connection; their (status, JSON body)."""
    out = []
    async with await trio.open_tcp_stream(server.host, server.port) as stream:
        for _ in range(requests):
            head = (
                f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
            ).encode()
            await stream.send_all(head + body)
            data = b""
            while b"\r\n\r\n" not in data:
                data += await stream.receive_some()
            head_bytes, _, rest = data.partition(b"\r\n\r\n")
            lines = head_bytes.decode().split("\r\n")
            length = next(
                int(line.split(":")[1])
                for line in lines
                if line.lower().startswith("content-length")
            )
            while len(rest) < length:
                rest += await stream.receive_some()
            out.append((int(lines[0].split()[1]), json.loads(rest)))
    return out


async def test_the_endpoint_answers_in_claudes_format(env: Env) -> None:
    with trio.fail_after(20):
        async with running(env) as server:
            [(status, denied)] = await post(server, env.body("git push origin main"))
            [(ok_status, allowed), (again, _)] = await post(server, env.body("ls"), requests=2)
    assert status == 200 and ok_status == 200 and again == 200
    assert denied == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "no pushing",
        }
    }
    assert allowed == {}
    assert not (env.project / "native-ran").exists()  # the agent's own hooks are its own


async def test_the_endpoint_refuses_bad_tokens_paths_and_bodies(env: Env) -> None:
    with trio.fail_after(20):
        async with running(env) as server:
            [(unauthorized, _)] = await post(server, env.body("ls"), token="wrong")
            [(missing, _)] = await post(server, env.body("ls"), path="/cursor/v1/hook")
            [(bad, error)] = await post(server, b"[1, 2]")
            # The websocket side still works on the same port.
            from triohooks.fronts.client import connect

            async with connect(server.url, TOKEN) as client:
                outcome = await client.fire("session_start", {})
    assert unauthorized == 401
    assert missing == 404
    assert bad == 400 and "JSON object" in error["error"]
    assert outcome.event == "session_start"


async def test_a_disconnect_cancels_the_hooks_and_kills_their_trees(env: Env) -> None:
    env.adopted.write_text(
        json.dumps(
            {
                "PreToolUse": [
                    {
                        "hooks": [
                            {"type": "command", "command": "setsid sleep 300.5151 & sleep 300.5152"}
                        ]
                    }
                ]
            }
        )
    )

    def sleeping() -> list[psutil.Process]:
        return [
            p
            for p in psutil.process_iter(["cmdline"])
            if p.info["cmdline"] in (["sleep", "300.5151"], ["sleep", "300.5152"])
        ]

    body = env.body("ls")
    try:
        with trio.fail_after(20):
            async with running(env) as server:
                stream = await trio.open_tcp_stream(server.host, server.port)
                head = (
                    f"POST /claude/v1/hook HTTP/1.1\r\nAuthorization: Bearer {TOKEN}\r\n"
                    f"Content-Length: {len(body)}\r\n\r\n"
                ).encode()
                await stream.send_all(head + body)
                while len(sleeping()) < 2:
                    await trio.sleep(0.02)
                await stream.aclose()  # the agent gave up on this hook call
                with trio.move_on_after(2):
                    while sleeping():
                        await trio.sleep(0.02)
                assert sleeping() == []
    finally:
        for p in sleeping():
            p.kill()


def test_relay_state_dir_is_the_engines(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for environ in (
        {"TRIOHOOKS_STATE_DIR": str(tmp_path / "x")},
        {"XDG_STATE_HOME": str(tmp_path / "xdg")},
        {"HOME": str(tmp_path / "home")},
    ):
        monkeypatch.delenv("TRIOHOOKS_STATE_DIR", raising=False)
        monkeypatch.delenv("XDG_STATE_HOME", raising=False)
        for name, value in environ.items():
            monkeypatch.setenv(name, value)
        assert relay.state_dir() == str(state_dir())


def run_relay(env: Env, body: bytes, *extra: str) -> subprocess.CompletedProcess[bytes]:
    code = (
        "import sys; from triohooks.fronts.relay import main; rc = main(sys.argv[1:]); "
        "print('TRIO-IMPORTED' if 'trio' in sys.modules else 'NO-TRIO', file=sys.stderr); "
        "sys.exit(rc)"
    )
    return subprocess.run(
        [sys.executable, "-c", code, "claude", *extra],
        input=body,
        capture_output=True,
        env=env.environ(),
        cwd=env.project,
        timeout=60,
        check=False,
    )


def announce(env: Env, server: HookServer) -> None:
    token = env.state / "token"
    token.write_text(TOKEN)
    (env.state / ADDR_FILE).write_text(f"{server.host} {server.port} {token}\n")


async def test_relay_against_a_running_server_imports_no_trio(env: Env) -> None:
    with trio.fail_after(30):
        async with running(env) as server:
            env.state.mkdir(exist_ok=True)
            announce(env, server)
            done = await trio.to_thread.run_sync(run_relay, env, env.body("git push"))
    assert done.returncode == 0, done.stderr
    assert b"NO-TRIO" in done.stderr
    out = json.loads(done.stdout)
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert out["hookSpecificOutput"]["permissionDecisionReason"] == "no pushing"


def test_relay_without_a_server_runs_the_hooks_itself(env: Env) -> None:
    done = run_relay(env, env.body("git push"))
    assert done.returncode == 0, done.stderr
    assert b"TRIO-IMPORTED" in done.stderr
    assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    allowed = run_relay(env, env.body("ls"))
    assert json.loads(allowed.stdout) == {}


def test_relay_with_a_stale_serve_file_falls_back(env: Env) -> None:
    env.state.mkdir(exist_ok=True)
    (env.state / "token").write_text(TOKEN)
    (env.state / ADDR_FILE).write_text(f"127.0.0.1 9 {env.state / 'token'}\n")
    done = run_relay(env, env.body("git push"))
    assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_relay_fails_closed_when_it_cannot_run_the_hooks(env: Env) -> None:
    (env.root / "g" / "hooks.toml").write_text("[[hooks.pre_tool]]\nbroken = ")
    done = run_relay(env, env.body("ls"))
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert "triohooks internal error" in out["permissionDecisionReason"]
    assert b"Traceback" not in done.stderr


def test_relay_usage() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "triohooks.fronts.relay", "cursor"],
        input=b"{}",
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 1 and b"usage" in done.stderr


RELAY_SH = REPO / "runtime" / "fronts" / "relay.sh"


def run_relay_sh(env: Env, body: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        ["bash", str(RELAY_SH), "claude", sys.executable],
        input=body,
        capture_output=True,
        env=env.environ(),
        cwd=env.project,
        timeout=60,
        check=False,
    )


async def test_bash_relay_against_a_running_server(env: Env) -> None:
    with trio.fail_after(30):
        async with running(env) as server:
            env.state.mkdir(exist_ok=True)
            announce(env, server)
            denied = await trio.to_thread.run_sync(run_relay_sh, env, env.body("git push"))
            allowed = await trio.to_thread.run_sync(run_relay_sh, env, env.body("ls"))
    assert denied.returncode == 0, denied.stderr
    out = json.loads(denied.stdout)["hookSpecificOutput"]
    assert (out["permissionDecision"], out["permissionDecisionReason"]) == ("deny", "no pushing")
    assert json.loads(allowed.stdout) == {}


@pytest.mark.parametrize("server_file", ["none", "stale", "wrong token"])
def test_bash_relay_falls_back_to_running_the_hooks_itself(env: Env, server_file: str) -> None:
    env.state.mkdir(exist_ok=True)
    if server_file != "none":
        (env.state / "token").write_text("not-the-token")
        (env.state / ADDR_FILE).write_text(f"127.0.0.1 9 {env.state / 'token'}\n")
    done = run_relay_sh(env, env.body("git push"))
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny" and out["permissionDecisionReason"] == "no pushing"


async def test_bash_relay_falls_back_on_a_refused_token(env: Env) -> None:
    with trio.fail_after(30):
        async with running(env) as server:
            env.state.mkdir(exist_ok=True)
            (env.state / "token").write_text("wrong-token")
            (env.state / ADDR_FILE).write_text(
                f"{server.host} {server.port} {env.state / 'token'}\n"
            )
            done = await trio.to_thread.run_sync(run_relay_sh, env, env.body("git push"))
    assert done.returncode == 0, done.stderr  # 401 from the server: the hooks ran here instead
    assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
