"""What a dead serve costs the agent, per event: the user-scope catch-all (the native relay
client, which hands a dead serve over to the Python relay) against a ``triohooks serve``
stopped with SIGSTOP (Ctrl-Z: its socket still accepts connections, nothing answers).

Three sessions of ``-n`` events each, every event a new relay process as an agent runs it:

- **live**: serve answers (the normal cost, for comparison);
- **stopped, no auto-start**: the first event waits out the silence rule (2 s) and runs the
  hooks itself; the later ones find ``serve.dead`` and run the hooks themselves at once;
- **stopped, auto-start**: as an agent session has it: the first event also starts a serve,
  which takes the relay socket over from the stopped one; the later events (once it is up:
  the wait is reported, not counted) are answered by it.

The adopted hook is Claude Code's ``PreToolUse`` ``true`` for ``Bash``: the event runs one hook
process, through serve or in the relay.

    .venv/bin/python -m bench.dead_serve [-n 20]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from triohooks.agents.adopt import relay_command
from triohooks.fronts import relay_build
from triohooks.fronts.server import SOCKET_FILE

from .relay import install_user_scope


def _session(
    root: Path, name: str, n: int, *, stop: bool, autostart: bool
) -> tuple[float, list[float], float]:
    """(first event ms, later events ms, wait for the new serve s) of one session."""
    home, state, project = root / name / "home", root / name / "state", root / name / "proj"
    (home / ".claude").mkdir(parents=True)
    project.mkdir(parents=True)
    (root / name / "g").mkdir()
    hooks = {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]}
    script = install_user_scope(home, hooks)
    env = {
        **os.environ,
        "HOME": str(home),
        "TRIOHOOKS_STATE_DIR": str(state),
        "TRIOHOOKS_CONFIG_DIR": str(root / name / "g"),
        "TRIOHOOKS_NO_AUTOSTART": "" if autostart else "1",
    }
    body = json.dumps(
        {
            "session_id": "bench",
            "cwd": str(project),
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "ls"},
        }
    ).encode()
    # The catch-all as install writes it, with the native client install builds (else the
    # Python relay, precompiled), in this session's state dir.
    state.mkdir(mode=0o700)
    client, _ = relay_build.prepare(str(state))
    os.environ["TRIOHOOKS_STATE_DIR"] = str(state)  # where relay_command finds the client
    command = ["bash", "-c", relay_command("claude", "user", 600, relay_script=script)]
    print(f"  ({name}: the {client.kind} relay client)")
    serve = subprocess.Popen(
        [sys.executable, "-m", "triohooks", "serve", "--port", "0", "--no-audit"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def event() -> float:
        start = time.perf_counter()
        done = subprocess.run(
            command, input=body, capture_output=True, env=env, timeout=60, check=False
        )
        took = (time.perf_counter() - start) * 1000
        assert done.returncode == 0 and done.stdout.strip() == b"{}", done
        return took

    try:
        deadline = time.monotonic() + 20
        while not (state / SOCKET_FILE).exists():
            assert time.monotonic() < deadline, "serve did not start"
            time.sleep(0.02)
        event()  # warm up (page cache, the engine's first request)
        if stop:
            os.kill(serve.pid, signal.SIGSTOP)
        dead_socket = (state / SOCKET_FILE).lstat().st_ino
        first = event()
        waited = time.monotonic()
        if autostart:
            while (state / SOCKET_FILE).lstat().st_ino == dead_socket:
                assert time.monotonic() - waited < 30, "no serve took the socket over"
                time.sleep(0.02)
        waited = time.monotonic() - waited
        later = [event() for _ in range(n)]
    finally:
        os.kill(serve.pid, signal.SIGCONT)
        serve.terminate()
        serve.wait(20)
        for proc in psutil.process_iter():
            try:
                if "--auto" in proc.cmdline() and proc.environ().get("TRIOHOOKS_STATE_DIR") == str(
                    state
                ):
                    proc.terminate()
                    proc.wait(20)
            except psutil.Error:
                continue
    return first, later, waited


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=20, help="later events per session")
    args = parser.parse_args()
    print(f"a dead serve, per event (ms): the first, and the median of the next {args.n}")
    print(f"{'session':40} {'first':>8} {'later p50':>10} {'later max':>10}")
    with tempfile.TemporaryDirectory(prefix="triohooks-bench-dead-") as tmp:
        for name, stop, autostart in (
            ("live", False, False),
            ("stopped, no auto-start", True, False),
            ("stopped, auto-start", True, True),
        ):
            first, later, waited = _session(
                Path(tmp), name.replace(" ", "").replace(",", "-"), args.n, stop=stop,
                autostart=autostart,
            )  # fmt: skip
            note = f"  (the new serve took the socket {waited:.2f} s after)" if autostart else ""
            print(
                f"{name:40} {first:8.1f} {statistics.median(later):10.1f} {max(later):10.1f}" + note
            )


if __name__ == "__main__":
    main()
