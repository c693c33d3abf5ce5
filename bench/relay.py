"""Relay start-up to reply: the installed catch-all against a running ``triohooks serve``.

Times one catch-all process per call (spawn, start-up, the request over serve's unix socket,
reply, exit) against the floors of ``bash -c true`` (what an agent's own command hook costs at
least) and of the interpreter doing nothing (``python -I -S -c pass``), interleaved so machine
load hits all alike. The adopted hook's matcher does not match the call, so the server spawns
nothing: what is measured is the client and the server. The installed forms are run exactly as
an agent runs them (``bash -c <command>``): the user-scope one running the native client (built
here as install builds it), the same command where no native client was built (the Python
relay, precompiled), and the project-scope one (the native client from the user's state dir).
The native client alone (exec'd, no bash) shows what bash adds. ("over floor" is against the
Python floor.) The last row is the round trip alone: the relay's own request over the socket,
made from this process (no process start), so what serve does per request shows without the
start-up's noise. Without a C compiler the native rows are left out, saying so.

``--native-hook``: the user's own triohooks config has a ``pre_tool`` command hook (``true``) that
runs for the call, so each relay call also spawns one hook process in the agent session's
environment (the path where serve hands each request's environment down to the process guard).

    .venv/bin/python -m bench.relay [-n 200] [--native-hook]
"""

from __future__ import annotations

import argparse
import json
import os
import posix
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import triohooks.fronts.relay as relay_module
from triohooks.agents.adopt import catch_all, relay_command
from triohooks.agents.spec import NATIVE_RELAY
from triohooks.config.paths import state_dir
from triohooks.fronts import relay_build
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


NATIVE_USER = "user-scope catch-all (native client)"
PYTHON_USER = "user-scope catch-all (Python relay, precompiled)"
NATIVE_PROJECT = "project-scope catch-all (native client)"
NATIVE_ALONE = "native client alone (exec, no bash)"
BASH_FLOOR = "floor: bash -c true"
PYTHON_FLOOR = "floor: python -I -S -c pass"


def forms(relay_file: str, native: str | None) -> dict[str, list[str]]:
    """The commands timed. ``native``: the client built in the state dir (None: none)."""
    py = sys.executable
    user = relay_command("claude", "user", 15, relay_script=relay_file)
    project = relay_command("claude", "project", 15)
    built = str(state_dir() / NATIVE_RELAY)
    # The same catch-all where no native client was built: its test finds nothing there.
    python_only = user.replace(shlex.quote(built), shlex.quote(built + ".none"))
    out = {
        PYTHON_FLOOR: [py, "-I", "-S", "-c", "pass"],
        BASH_FLOOR: ["bash", "-c", "true"],
        PYTHON_USER: ["bash", "-c", python_only],
    }
    if native is not None:
        out[NATIVE_USER] = ["bash", "-c", user]
        out[NATIVE_PROJECT] = ["bash", "-c", project]
        out[NATIVE_ALONE] = [native, "claude", "--timeout", "15", "--scope", "user"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=200)
    parser.add_argument(
        "--native-hook",
        action="store_true",
        help="a triohooks pre_tool hook (`true`) runs for every call",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="triohooks-bench-relay-") as tmp:
        root = Path(tmp)
        home, state, project = root / "home", root / "state", root / "proj"
        os.environ["TRIOHOOKS_STATE_DIR"] = str(state)  # where relay_command finds the client
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
            client = relay_build.build(str(state))
            if client.kind != "native":
                print(f"no native client: {client.why}", file=sys.stderr)
            native = client.path if client.kind == "native" else None
            cmds = forms(str(Path(relay_module.__file__).resolve()), native)
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
    floor = statistics.median(times[PYTHON_FLOOR])
    hook = ", a triohooks hook (true) runs per call" if args.native_hook else ""
    print(f"relay start-up to reply, n = {args.n} each, interleaved (ms){hook}")
    print(f"{'form':50} {'p50':>7} {'p90':>7} {'over floor':>11}")
    for name, values in times.items():
        values.sort()
        p50 = statistics.median(values)
        p90 = values[int(len(values) * 0.9)]
        print(f"{name:50} {p50:7.2f} {p90:7.2f} {p50 - floor:+11.2f}")
    bash = statistics.median(times[BASH_FLOOR])
    for name in (NATIVE_USER, NATIVE_PROJECT, NATIVE_ALONE, PYTHON_USER):
        if name in times:
            p50 = statistics.median(times[name])
            print(
                f"{name}: {p50 - bash:+.2f} ms over bash -c true (what an agent's own hook "
                f"costs), {p50 / bash:.2f}x"
            )


if __name__ == "__main__":
    main()
