"""Start-up of ``triohooks fire``: a whole process per call, against ``python -c pass``.

An agent that uses the CLI starts one ``triohooks fire EVENT < payload.json`` per tool call; when
no hook can run for the event that process is pure overhead. This runs, as whole processes
(spawn to exit, stdin fed, stdout read), interleaved and in a rotating order, ``n`` times each
after a warm-up:

- ``python -c pass``: the interpreter's own start-up, the yardstick;
- ``python -c "import msgspec"``: the floor under any fire (events, config and Outcome are
  msgspec Structs);
- ``triohooks fire pre_tool`` on a call no hook matches (the console script), with a config that
  has hooks for other tools in both dialects, an ``if`` rule and background hooks, each run
  with other arguments (another file read): answered from the quiet-call cache
  (:mod:`triohooks.fronts.fire_cache`), which the warm-up filled;
- the same with the cache off (``TRIOHOOKS_FIRE_CACHE=off``): the long way without the engine,
  what the first call of a tool after a config change costs;
- the same with the engine forced (the internal ``_TRIOHOOKS_FIRE_VIA_ENGINE``): what every fire
  cost before the fast path, and what one where a hook runs still costs before its hooks.

The config files are written, then left to settle for 2 s (the cache does not remember
anything read from a file changed less than that before), so the warm-up fills the cache; the
cache directory is in the temp dir too.

The config is found where a user's is (``$XDG_CONFIG_HOME/triohooks``, through platformdirs);
``--env-dirs`` names it with ``TRIOHOOKS_CONFIG_DIR`` instead. Bytecode: every process gets
``PYTHONPYCACHEPREFIX`` (a temp dir) and no ``PYTHONDONTWRITEBYTECODE``, so after the warm-up
every module, the standard library's too, loads from cached bytecode as from an installed
package, and the checkout is not written to.

Prints p50/p90 wall ms of each, the fire / ``python -c pass`` ratio at p50, and whether the
targets are met: fire p50 <= 60 ms and <= 1.5x ``python -c pass``.

    .venv/bin/python -m bench.cli_startup [-n 40] [--env-dirs] [--no-engine] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from triohooks.fronts.cli import FIRE_VIA_ENGINE_VAR

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
PAYLOAD = json.dumps({"tool": "Read", "args": {"path": "src/app.py"}, "session_id": "bench"})
#: The cache's settle time, and a little more.
SETTLE_S = 2.1


def payload(i: int) -> bytes:
    """Run ``i``'s call: the same tool, another file each time."""
    return json.dumps(
        {"tool": "Read", "args": {"path": f"src/module_{i}.py"}, "session_id": "bench"}
    ).encode()


MAX_MS = 60.0
FIRE = "triohooks fire pre_tool"
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
        env |= {"TRIOHOOKS_CONFIG_DIR": str(config), "TRIOHOOKS_STATE_DIR": str(root / "state")}
        env["TRIOHOOKS_CACHE_DIR"] = str(root / "cache")
    else:
        config = root / "xdg-config" / "triohooks"
        env |= {"XDG_CONFIG_HOME": str(root / "xdg-config"), "XDG_STATE_HOME": str(root / "xdg")}
        env["XDG_CACHE_HOME"] = str(root / "xdg-cache")
        env.pop("TRIOHOOKS_CACHE_DIR", None)
    env.pop("TRIOHOOKS_FIRE_CACHE", None)
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


def check_answer(argv: list[str], env: dict[str, str], cwd: Path) -> str | None:
    """Why the fire command does not answer "nothing ran", or None when it does."""
    done = subprocess.run(
        argv,
        input=PAYLOAD.encode(),
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
    if done.returncode or done.stderr or not outcome or outcome["runs"] or outcome["queued"]:
        return f"exit {done.returncode}, stdout {done.stdout[:200]!r}, stderr {done.stderr[:200]!r}"
    return None


def bench(n: int, env_dirs: bool, engine: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="triohooks-bench-") as tmp:
        root = Path(tmp)
        env = environment(root, env_dirs)
        ws = root / "ws"
        ws.mkdir()
        fire = [*fire_program(), "fire", "pre_tool"]
        commands: dict[str, tuple[list[str], dict[str, str], bool]] = {
            "python -c pass": ([sys.executable, "-c", "pass"], env, False),
            "python -c 'import msgspec'": ([sys.executable, "-c", "import msgspec"], env, False),
            FIRE: (fire, env, True),
            "  the same, cache off": (fire, {**env, "TRIOHOOKS_FIRE_CACHE": "off"}, True),
        }
        if engine:
            forced = {**env, FIRE_VIA_ENGINE_VAR: "1"}
            commands["  the same, engine forced"] = (fire, forced, True)
        time.sleep(SETTLE_S)
        for name, (argv, cmd_env, _) in commands.items():
            if argv is fire:
                why = check_answer(argv, cmd_env, ws)
                if why is not None:
                    raise SystemExit(f"{name}: not a no-match answer: {why}")
        for _ in range(3):  # warm-up: bytecode written, caches filled
            for argv, cmd_env, fires in commands.values():
                run_once(argv, cmd_env, ws, payload(-1) if fires else b"")
        cached = list((root / ("cache" if env_dirs else "xdg-cache")).rglob("*.json"))
        if len(cached) != 1:
            raise SystemExit(f"the quiet-call cache holds {len(cached)} entries, not 1")
        samples: dict[str, list[float]] = {name: [] for name in commands}
        names = list(commands)
        for i in range(n):
            for k in range(len(names)):  # a rotating order: no command always runs first
                name = names[(i + k) % len(names)]
                argv, cmd_env, fires = commands[name]
                samples[name].append(run_once(argv, cmd_env, ws, payload(i) if fires else b""))
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
        f"no hook matches; config in {where}; bytecode cached"
    )
    print(f"{'command':32} {'p50 ms':>8} {'p90 ms':>8}")
    for name, f in figures.items():
        if isinstance(f, dict):
            print(f"{name:32} {f['p50_ms']:8.1f} {f['p90_ms']:8.1f}")
    fire_ms = figures[FIRE]["p50_ms"]
    ratio = figures["ratio_p50"]
    print(f"{'ratio fire / python -c pass':32} {ratio:7.2f}x")
    for label, met, value in [
        (f"fire p50 <= {MAX_MS:g} ms", fire_ms <= MAX_MS, f"{fire_ms:.1f} ms"),
        (f"fire p50 <= {MAX_RATIO:g}x python -c pass", ratio <= MAX_RATIO, f"{ratio:.2f}x"),
    ]:
        print(f"target: {label} -> {'met' if met else 'MISSED'} ({value})")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
