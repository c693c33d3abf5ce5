"""A built-in guard vs the same rule as a one-shot bash hook and as an ``if`` filter, through
the engine (``engine.pre_tool``), p50/p99 per call, interleaved in one run.

The rule: block ``git push`` to ``main`` (and force pushes).

- ``builtin``: ``builtin = "protected_push"`` (in process, no spawn);
- ``bash hook``: ``command = "<a grep over the event JSON>"``, one ``bash`` per call (what a
  user writes by hand; it misses ``git -C x push`` and the rest the guard reads);
- ``if filter``: ``if = "shell(git push*)"`` with ``command = "exit 2"``: the hook spawns only
  for a push (so an ``ls`` costs no spawn, a push one).

Two calls each: one the rule blocks (``git push origin main``), one it lets through (``ls``).
Figures only, no assertions. Run: ``python -m bench.builtin_guards [-n 300]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

from triohooks.engine.hook_engine import HookEngine

CONFIGS = {
    "builtin": '[[hooks.pre_tool]]\nbuiltin = "protected_push"\n',
    "bash hook": (
        "[[hooks.pre_tool]]\n"
        "command = '''grep -Eq '\"git push( -f| --force)?( origin)? main' && exit 2; exit 0'''\n"
    ),
    "if filter": '[[hooks.pre_tool]]\nif = "shell(git push*)"\ncommand = "exit 2"\n',
}
CALLS = {
    "git push origin main (blocked)": {"command": "git push origin main"},
    "ls (let through)": {"command": "ls -la"},
}


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        engines: dict[str, Any] = {}
        async with trio.open_nursery():
            from contextlib import AsyncExitStack

            async with AsyncExitStack() as stack:
                for label, text in CONFIGS.items():
                    root = Path(tmp) / label.replace(" ", "_")
                    (root / "config").mkdir(parents=True)
                    (root / "ws").mkdir()
                    (root / "config/hooks.toml").write_text(text)
                    engines[label] = await stack.enter_async_context(
                        HookEngine.open(
                            workspace=root / "ws",
                            config_dir=root / "config",
                            state_dir=root / "state",
                            audit=False,
                        )
                    )
                samples: dict[tuple[str, str], list[float]] = {
                    (c, e): [] for c in CALLS for e in engines
                }
                for i in range(n + 10):
                    for call, args in CALLS.items():
                        for label, engine in engines.items():
                            t0 = time.perf_counter()
                            outcome = await engine.pre_tool("Bash", args)
                            took = (time.perf_counter() - t0) * 1e6
                            assert outcome.blocked == ("main" in call), (label, call, outcome)
                            if i >= 10:
                                samples[(call, label)].append(took)
    print(f"pre_tool through the engine, n={n} per case, interleaved (µs)")
    print(f"{'call':34}{'hook':12}{'p50':>10}{'p99':>10}")
    for call in CALLS:
        base = percentile(samples[(call, "builtin")], 0.5)
        for label in engines:
            s = samples[(call, label)]
            p50 = percentile(s, 0.5)
            ratio = "" if label == "builtin" else f"  ({p50 / base:.0f}x the builtin)"
            print(f"{call:34}{label:12}{p50:10.1f}{percentile(s, 0.99):10.1f}{ratio}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=300)
    trio.run(main, parser.parse_args().n)
