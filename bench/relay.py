"""Relay start-up to reply: ``triohooks-relay claude`` against a running ``triohooks serve``.

Times one relay process per call (spawn, start-up, POST to ``/claude/v1/hook``, reply, exit)
against the floor of the same interpreter doing nothing (``python -I -S -c pass``), interleaved
so machine load hits all alike. The adopted hook's matcher does not match the call, so the
server spawns nothing: what is measured is the relay and the endpoint. Target: the relay form
``triohooks claude install`` writes at <= 15 ms p50. ("over floor" is against the Python floor.)

    .venv/bin/python -m bench.relay [-n 100]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import triohooks.fronts.relay as relay_module

BODY = json.dumps(
    {
        "session_id": "bench",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
    }
).encode()


def forms(relay_file: str) -> dict[str, list[str]]:
    py = sys.executable
    fronts = str(Path(relay_file).parent)
    code = f"import sys;sys.path[:0]=[{fronts!r}];import relay;sys.exit(relay.main(['claude']))"
    console = str(Path(py).with_name("triohooks-relay"))
    return {
        "floor: python -I -S -c pass": [py, "-I", "-S", "-c", "pass"],
        "floor: bash -c true": ["bash", "-c", "true"],
        "installed form: bash relay.sh": ["bash", f"{fronts}/relay.sh", "claude", py],
        "python -I -S, cached bytecode": [py, "-I", "-S", "-c", code],
        "bare script (-I -S relay.py)": [py, "-I", "-S", relay_file, "claude"],
        "console script triohooks-relay": [console, "claude"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="triohooks-bench-relay-") as tmp:
        root = Path(tmp)
        home, state, project = root / "home", root / "state", root / "proj"
        (home / ".claude").mkdir(parents=True)
        (project / ".claude").mkdir(parents=True)
        hooks = {
            "PreToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "true"}]}]
        }
        (home / ".claude" / "triohooks-hooks.json").write_text(json.dumps(hooks))
        env = {
            **os.environ,
            "HOME": str(home),
            "TRIOHOOKS_STATE_DIR": str(state),
            "TRIOHOOKS_CONFIG_DIR": str(root / "g"),
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
            while not (state / relay_module.ADDR_FILE).exists():
                assert time.monotonic() < deadline, "serve did not start"
                time.sleep(0.02)
            cmds = forms(str(Path(relay_module.__file__).resolve()))
            times: dict[str, list[float]] = {name: [] for name in cmds}
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
        finally:
            server.terminate()
            server.wait(timeout=10)
    floor = statistics.median(times["floor: python -I -S -c pass"])
    print(f"relay start-up to reply, n = {args.n} each, interleaved (ms)")
    print(f"{'form':44} {'p50':>7} {'p90':>7} {'over floor':>11}")
    for name, values in times.items():
        values.sort()
        p50 = statistics.median(values)
        p90 = values[int(len(values) * 0.9)]
        print(f"{name:44} {p50:7.2f} {p90:7.2f} {p50 - floor:+11.2f}")
    installed = statistics.median(times["installed form: bash relay.sh"])
    verdict = "met" if installed <= 15 else "missed"
    print(f"target: installed form <= 15 ms p50: {verdict} ({installed:.2f} ms)")


if __name__ == "__main__":
    main()
