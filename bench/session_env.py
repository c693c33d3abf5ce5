"""What giving each request its own session's environment costs (docs/security.md, "Which
environment a hook gets"): one agent request whose triohooks hook (``command = "true"``) runs,
``engine.agent_hook`` p25/p50, interleaved in one engine, two ways:

- ``own``: no session environment (``env=None``): the hook gets this process's environment,
  which the linux backend's helper keeps between runs (the request carries the marker alone).
  This is how every triohooks hook of an agent request ran before the request's environment was
  handed down;
- ``session``: the session's environment, the whole of it sent with every spawn.

Both environments are the same variables (this process's plus ``--extra`` of 60 bytes each, as
a fat agent session has them), so the hook process itself does the same work either way: the
difference is what handing the environment down costs.

Then the process guard alone, the same two ways (one ``true`` spawn), for the part of the
difference that is the spawn's.

    .venv/bin/python -m bench.session_env [-n 500] [--extra 60]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import trio

from bench.agent_native import agent_body
from triohooks import HookEngine
from triohooks.actors.process_guard import open_guard
from triohooks.handlers.process import ProcessSpec


def _quantiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p25 = ordered[len(ordered) // 4] * 1e6
    return f"{p25:>9.0f} {statistics.median(ordered) * 1e6:>9.0f}"


async def _interleaved(
    runs: dict[str, Callable[[], Awaitable[object]]], n: int
) -> dict[str, list[float]]:
    for _ in range(20):  # warm up
        for run in runs.values():
            await run()
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(n):
        for name, run in runs.items():
            start = time.perf_counter()
            await run()
            times[name].append(time.perf_counter() - start)
    return times


async def main(n: int, extra: int) -> None:
    os.environ.update({f"SESSION_VAR_{i}": "x" * 60 for i in range(extra)})
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        config, project = root / "cfg", root / "proj"
        for directory in (config, project, root / "home" / ".claude"):
            directory.mkdir(parents=True)
        os.environ["HOME"] = str(root / "home")
        session = dict(os.environ)
        size = sum(len(k) + len(v) + 2 for k, v in session.items())
        (config / "hooks.toml").write_text('[[hooks.pre_tool]]\ncommand = "true"\n')
        body = agent_body("claude", project)
        async with HookEngine.open(workspace=project, config_dir=config, audit=False) as engine:
            requests = await _interleaved(
                {
                    "own": lambda: engine.agent_hook("claude", body, adopted_only=True),
                    "session": lambda: engine.agent_hook(
                        "claude", body, adopted_only=True, env=session
                    ),
                },
                n,
            )
        async with open_guard() as guard:
            own = ProcessSpec(argv=("true",), cwd=str(project), timeout_s=10)
            theirs = ProcessSpec(argv=("true",), cwd=str(project), env=session, timeout_s=10)
            spawns = await _interleaved(
                {"own": lambda: guard.run(own), "session": lambda: guard.run(theirs)}, n
            )
    print(
        f"one triohooks hook (true) per request, n = {n} each, interleaved; the session's "
        f"environment: {len(session)} variables, {size} bytes (µs)"
    )
    print(f"{'':34} {'p25':>9} {'p50':>9}")
    for label, times in (("engine.agent_hook", requests), ("process guard, one spawn", spawns)):
        for way in ("own", "session"):
            print(f"{label + ', ' + way:34} {_quantiles(times[way])}")
        more = statistics.median(times["session"]) - statistics.median(times["own"])
        print(f"{label + ', session - own (p50)':34} {more * 1e6:>+19.0f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=500)
    parser.add_argument("--extra", type=int, default=60, help="variables added to the session's")
    args = parser.parse_args()
    trio.run(main, args.n, args.extra)
