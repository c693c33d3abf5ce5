"""Start-up of ``triohooks fire``: a whole process per call, against ``python -c pass``.

An agent that uses the CLI starts one ``triohooks fire EVENT < payload.json`` per tool call.
``fire`` asks the user's ``serve`` over its relay socket and opens its own engine only when no
serve can answer (docs/cli.md). This starts a real ``serve`` (its own state dir, port 0) and runs,
as whole processes (spawn to exit, stdin fed, stdout read), interleaved and in a rotating order,
``n`` times each after a warm-up:

- ``python -c pass``: the interpreter's own start-up, the yardstick;
- ``triohooks fire pre_tool --workspace DIR`` on a call no hook matches (the console script),
  with a config that has hooks for other tools in both dialects, an ``if`` rule and background
  hooks, each run with other arguments (another file read): answered by serve;
- the same, on a call a hook runs for (a ``Read`` hook, ``true``): serve runs it;
- the same no-match call with the engine forced (the internal ``_TRIOHOOKS_FIRE_HERE``): what a
  fire costs when no serve runs.

The config is found where a user's is (``$XDG_CONFIG_HOME/triohooks``, through platformdirs);
``--env-dirs`` names it with ``TRIOHOOKS_CONFIG_DIR`` instead. Bytecode: every process gets
``PYTHONPYCACHEPREFIX`` (a temp dir) and no ``PYTHONDONTWRITEBYTECODE``, so after the warm-up
every module, the standard library's too, loads from cached bytecode as from an installed
package, and the checkout is not written to.

Prints p50/p90 wall ms of each, the fire / ``python -c pass`` ratio at p50, and whether the
targets are met: fire through serve p50 <= 1.5x ``python -c pass``.

    .venv/bin/python -m bench.cli_startup [-n 40] [--env-dirs] [--no-engine] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from triohooks.fronts.cli import FIRE_HERE_VAR
from triohooks.fronts.server import SOCKET_FILE

TOML = """
[[hooks.pre_tool]]
match = "Bash"
command = "exit 2"

[[hooks.pre_tool]]
if = "shell(git push *)"
command = "exit 2"

[[hooks.post_tool]]
match = "Edit"
command = "true"

[[hooks.prompt_submit]]
command = "true"

[[hooks.pre_tool]]
match = "Grep"
command = "true"
"""
JSON_HOOKS = {
    "hooks": [
        {
            "event": "pre_tool_use",
            "matcher": {"tool_name": "Bash"},
            "executor": {"type": "bash", "command": "exit 2"},
        }
    ]
}


def payload(i: int, tool: str = "Read") -> bytes:
    """Run ``i``'s call: the same tool, another file each time."""
    return json.dumps(
        {"tool": tool, "args": {"path": f"src/module_{i}.py"}, "session_id": "bench"}
    ).encode()


FIRE = "fire --workspace DIR, via serve"
MAX_RATIO = 1.5


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def fire_program() -> list[str]:
    script = Path(sys.executable).parent / "triohooks"
    return [str(script)] if script.exists() else [sys.executable, "-m", "triohooks"]


def environment(root: Path, env_dirs: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRIOHOOKS_", "_TRIOHOOKS_"))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
    if env_dirs:
        config = root / "config"
        env |= {"TRIOHOOKS_CONFIG_DIR": str(config)}
    else:
        config = root / "xdg-config" / "triohooks"
        env |= {"XDG_CONFIG_HOME": str(root / "xdg-config")}
    state = root / "state"
    state.mkdir(mode=0o700)
    env |= {"TRIOHOOKS_STATE_DIR": str(state), "TRIOHOOKS_NO_AUTOSTART": "1"}
    config.mkdir(parents=True)
    (config / "hooks.toml").write_text(TOML)
    (config / "hooks.json").write_text(json.dumps(JSON_HOOKS))
    return env


def run_once(argv: list[str], env: dict[str, str], cwd: Path, stdin: bytes) -> float:
    """Wall ms of one run. No timeout here: ``Popen.wait`` with one polls in sleeps of up to
    50 ms, which would round every figure up to that grid (:func:`check_answer`, run first,
    has one)."""
    start = time.perf_counter()
    subprocess.run(argv, input=stdin, stdout=subprocess.DEVNULL, env=env, cwd=cwd, check=False)
    return (time.perf_counter() - start) * 1000.0


def start_serve(root: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """The user's serve, as the relay starts it; returns once its relay socket is there."""
    home = root / "serve-home"
    home.mkdir()
    proc = subprocess.Popen(
        [*fire_program(), "serve", "--port", "0", "--workspace", str(home)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not (Path(env["TRIOHOOKS_STATE_DIR"]) / SOCKET_FILE).exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("serve did not start")
        time.sleep(0.05)
    return proc


def check_answer(
    argv: list[str], env: dict[str, str], cwd: Path, ran: int = 0, tool: str = "Read"
) -> str | None:
    """Why the fire command does not answer with ``ran`` runs, or None when it does."""
    done = subprocess.run(
        argv,
        input=payload(0, tool),
        capture_output=True,
        env=env,
        cwd=cwd,
        timeout=60,
        check=False,
    )
    try:
        outcome = json.loads(done.stdout)
    except ValueError:
        outcome = None
    if done.returncode or done.stderr or not outcome or len(outcome["runs"]) != ran:
        return f"exit {done.returncode}, stdout {done.stdout[:200]!r}, stderr {done.stderr[:200]!r}"
    return None


def bench(n: int, env_dirs: bool, engine: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="triohooks-bench-") as tmp:
        root = Path(tmp)
        env = environment(root, env_dirs)
        ws = root / "ws"
        ws.mkdir()
        fire = [*fire_program(), "fire", "pre_tool", "--workspace", str(ws)]
        #: name -> argv, environment, the payload's tool (None: no payload), runs expected.
        commands: dict[str, tuple[list[str], dict[str, str], str | None, int]] = {
            "python -c pass": ([sys.executable, "-c", "pass"], env, None, 0),
            FIRE: (fire, env, "Read", 0),
            "  a hook runs (true), via serve": (fire, env, "Grep", 1),
        }
        if engine:
            forced = {**env, FIRE_HERE_VAR: "1"}
            commands["  no serve: its own engine"] = (fire, forced, "Read", 0)
        proc = start_serve(root, env)
        try:
            for name, (argv, cmd_env, tool, ran) in commands.items():
                if tool is not None:
                    why = check_answer(argv, cmd_env, ws, ran, tool)
                    if why is not None:
                        raise SystemExit(f"{name}: not the answer expected: {why}")
            for _ in range(3):  # warm-up: bytecode written, serve's tables read
                for argv, cmd_env, tool, _ran in commands.values():
                    run_once(argv, cmd_env, ws, payload(-1, tool) if tool else b"")
            samples: dict[str, list[float]] = {name: [] for name in commands}
            names = list(commands)
            for i in range(n):
                for k in range(len(names)):  # a rotating order: no command always runs first
                    name = names[(i + k) % len(names)]
                    argv, cmd_env, tool, _ran = commands[name]
                    stdin = payload(i, tool) if tool else b""
                    samples[name].append(run_once(argv, cmd_env, ws, stdin))
        finally:
            os.kill(proc.pid, signal.SIGTERM)
            proc.wait(timeout=60)
    figures: dict[str, Any] = {
        name: {"n": len(s), "p50_ms": pct(s, 0.50), "p90_ms": pct(s, 0.90)}
        for name, s in samples.items()
    }
    base = figures["python -c pass"]["p50_ms"]
    figures["ratio_p50"] = figures[FIRE]["p50_ms"] / base
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=40, help="runs of each command")
    parser.add_argument(
        "--env-dirs", action="store_true", help="config dir from TRIOHOOKS_CONFIG_DIR, not XDG"
    )
    parser.add_argument("--no-engine", action="store_true", help="skip the engine-forced runs")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    figures = bench(args.n, args.env_dirs, not args.no_engine)
    where = "TRIOHOOKS_CONFIG_DIR" if args.env_dirs else "$XDG_CONFIG_HOME/triohooks"
    print(
        f"triohooks fire start-up: whole processes, n={args.n} each, interleaved; "
        f"config in {where}; bytecode cached"
    )
    print(f"{'command':36} {'p50 ms':>8} {'p90 ms':>8}")
    for name, f in figures.items():
        if isinstance(f, dict):
            print(f"{name:36} {f['p50_ms']:8.1f} {f['p90_ms']:8.1f}")
    ratio = figures["ratio_p50"]
    print(f"{'ratio fire / python -c pass':32} {ratio:7.2f}x")
    met = "met" if ratio <= MAX_RATIO else "MISSED"
    print(f"target: fire via serve p50 <= {MAX_RATIO:g}x python -c pass -> {met} ({ratio:.2f}x)")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
