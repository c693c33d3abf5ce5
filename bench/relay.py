"""Relay start-up to reply: ``triohooks-relay claude`` against a running ``triohooks serve``.

Times one relay process per call (spawn, start-up, the request over serve's unix socket, reply,
exit) against the floor of the same interpreter doing nothing (``python -I -S -c pass``) and of
``bash -c true``, interleaved so machine load hits all alike. The adopted hook's matcher does not
match the call, so the server spawns nothing: what is measured is the relay and the server. The
two installed forms are run exactly as an agent runs them (``bash -c <command>``): the user-scope
one (this install's relay as a bare script) and the project-scope one (``triohooks-relay`` from
PATH). ("over floor" is against the Python floor.) The last row is the round trip alone: the
relay's own request over the socket, made from this process (no process start), so what serve
does per request shows without the start-up's noise.

``--native-hook``: the user's own triohooks config has a ``pre_tool`` command hook (``true``) that
runs for the call, so each relay call also spawns one hook process in the agent session's
environment (the path where serve hands each request's environment down to the process guard).

    .venv/bin/python -m bench.relay [-n 100] [--native-hook]
"""

from __future__ import annotations

import argparse
import json
import os
import posix
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import triohooks.fronts.relay as relay_module
from triohooks.agents.adopt import catch_all, relay_command
from triohooks.fronts.server import SOCKET_FILE

BODY = json.dumps(
    {
        "session_id": "bench",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
    }
).encode()


ROUND_TRIP = "round trip only (the relay's request, in process)"


def round_trip(socket_path: str, body: bytes, env: dict[str, str]) -> float:
    """One request as the relay makes it, from this process with the session's ``env``: ms."""
    # The relay sends ``posix.environ`` (its process's environment, as the agent gave it).
    saved = dict(posix.environ)
    posix.environ.clear()
    posix.environ.update({k.encode(): v.encode() for k, v in env.items()})
    try:
        start = time.perf_counter()
        answer = relay_module.ask_server(socket_path, "claude", body, time.monotonic() + 10)
        took = (time.perf_counter() - start) * 1000
    finally:
        posix.environ.clear()
        posix.environ.update(saved)
    assert answer.strip() == b"{}", answer
    return took


def install_user_scope(home: Path, hooks: dict[str, Any]) -> str:
    """Claude Code's settings in ``home`` as ``triohooks claude install --scope user`` leaves
    them with ``hooks`` adopted; the relay script its catch-alls run."""
    script = str(Path(relay_module.__file__).resolve())
    adopted = home / ".claude" / "triohooks-hooks.json"
    adopted.write_text(json.dumps(hooks))
    routed, _, _ = catch_all(
        "claude",
        hooks,
        source=str(adopted),
        scope="user",
        transport="relay",
        port=8765,
        relay_script=script,
        own=None,  # every event, as an install with unknown hooks routes
    )
    (home / ".claude" / "settings.json").write_text(json.dumps({"hooks": routed}))
    return script


def forms(relay_file: str) -> dict[str, list[str]]:
    py = sys.executable
    user = relay_command("claude", "user", 15, relay_script=relay_file)
    project = relay_command("claude", "project", 15)
    return {
        "floor: python -I -S -c pass": [py, "-I", "-S", "-c", "pass"],
        "floor: bash -c true": ["bash", "-c", "true"],
        "user-scope install (bare script)": ["bash", "-c", user],
        "project-scope install (triohooks-relay)": ["bash", "-c", project],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=100)
    parser.add_argument(
        "--native-hook",
        action="store_true",
        help="a triohooks pre_tool hook (`true`) runs for every call",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="triohooks-bench-relay-") as tmp:
        root = Path(tmp)
        home, state, project = root / "home", root / "state", root / "proj"
        (home / ".claude").mkdir(parents=True)
        (project / ".claude").mkdir(parents=True)
        hooks = {
            "PreToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "true"}]}]
        }
        install_user_scope(home, hooks)
        (root / "g").mkdir()
        if args.native_hook:
            (root / "g" / "hooks.toml").write_text('[[hooks.pre_tool]]\ncommand = "true"\n')
        env = {
            **os.environ,
            "HOME": str(home),
            "TRIOHOOKS_STATE_DIR": str(state),
            "TRIOHOOKS_CONFIG_DIR": str(root / "g"),
            "TRIOHOOKS_NO_AUTOSTART": "1",
            # The project form finds triohooks-relay on PATH, as on a teammate's machine.
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        }
        body = BODY.replace(b'"session_id"', f'"cwd": "{project}", "session_id"'.encode())
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "triohooks",
                "serve",
                "--port",
                "0",
                "--no-audit",
                "--workspace",
                str(project),
            ],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert server.stdout is not None
            server.stdout.readline()  # listening on ...
            deadline = time.monotonic() + 10
            while not (state / SOCKET_FILE).exists():
                assert time.monotonic() < deadline, "serve did not start"
                time.sleep(0.02)
            cmds = forms(str(Path(relay_module.__file__).resolve()))
            times: dict[str, list[float]] = {name: [] for name in cmds}
            times[ROUND_TRIP] = []
            socket_path = str(state / SOCKET_FILE)
            for cmd in cmds.values():  # warm up (and write the bytecode cache)
                subprocess.run(cmd, input=body, capture_output=True, env=env, check=True)
            for _ in range(args.n):
                for name, cmd in cmds.items():
                    start = time.perf_counter()
                    done = subprocess.run(
                        cmd, input=body, capture_output=True, env=env, check=False
                    )
                    times[name].append((time.perf_counter() - start) * 1000)
                    if not name.startswith("floor"):
                        assert done.stdout.strip() == b"{}", (name, done.stdout, done.stderr)
                times[ROUND_TRIP].append(round_trip(socket_path, body, env))
        finally:
            server.terminate()
            server.wait(timeout=10)
    floor = statistics.median(times["floor: python -I -S -c pass"])
    hook = ", a triohooks hook (true) runs per call" if args.native_hook else ""
    print(f"relay start-up to reply, n = {args.n} each, interleaved (ms){hook}")
    print(f"{'form':50} {'p50':>7} {'p90':>7} {'over floor':>11}")
    for name, values in times.items():
        values.sort()
        p50 = statistics.median(values)
        p90 = values[int(len(values) * 0.9)]
        print(f"{name:50} {p50:7.2f} {p90:7.2f} {p50 - floor:+11.2f}")
    for name in ("user-scope install (bare script)", "project-scope install (triohooks-relay)"):
        over = statistics.median(times[name]) - statistics.median(times["floor: bash -c true"])
        print(f"{name}: {over:+.2f} ms over bash -c true (what an agent's own hook costs)")


if __name__ == "__main__":
    main()
