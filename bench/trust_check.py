"""The freshness check's cost per event (docs/security.md, "Freshness"): a project with 20
trusted hook scripts, the engine's table warm.

Before each event the engine takes the signature (``stat`` + ``lstat``) of every path its
table was built from. Three loops, interleaved in one trio run, each timed per call:

- check: ``loader.is_current()`` alone on the 20-script project's table;
- floor: ``engine.pre_tool`` for a tool no hook matches, with the same 20 hooks in the
  *global* scope (nothing for trust to cover, four config paths to check);
- project: the same call with the 20 hooks in the trusted workspace (their scripts, the trust
  store and the directories looked at are checked too).

Prints p50/p99 in µs and how many paths the project's table checks.

    .venv/bin/python -m bench.trust_check [-n 20000]
"""

from __future__ import annotations

import argparse
import gc
import json
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

from triohooks.config.table import load_table
from triohooks.config.trust import record_trust
from triohooks.engine.hook_engine import HookEngine

SCRIPTS = 20


def hooks_toml(root: Path) -> str:
    return "".join(
        f'[[hooks.pre_tool]]\nmatch = "Bash"\ncommand = "{root}/scripts/h{i}.sh"\n\n'
        for i in range(SCRIPTS)
    )


def pct(samples: list[int], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1000.0


async def bench(n: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ws, g, g_only, empty = root / "ws", root / "g", root / "g2", root / "empty"
        for d in (ws / ".agents", ws / "scripts", g, g_only, empty):
            d.mkdir(parents=True)
        for i in range(SCRIPTS):
            script = ws / "scripts" / f"h{i}.sh"
            script.write_text("#!/bin/sh\nexit 0\n")
            script.chmod(0o755)
        (ws / ".agents" / "hooks.toml").write_text(hooks_toml(ws))
        (g_only / "hooks.toml").write_text(hooks_toml(ws))
        info = load_table(workspace=ws, config_dir=g, trust_override=True).trust
        assert info is not None
        record_trust(g, ws, info)
        await trio.sleep(2.1)  # past the settle time: signatures of times alone
        async with (
            HookEngine.open(
                workspace=ws, config_dir=g, state_dir=root / "s1", audit=False
            ) as project,
            HookEngine.open(
                workspace=empty, config_dir=g_only, state_dir=root / "s2", audit=False
            ) as floor,
        ):
            assert project.table.trust is not None and project.table.trust.state == "trusted"
            loader = project._dispatcher.loader  # the check alone
            paths = len(project.table.inputs)

            async def check() -> None:
                assert loader.is_current()

            async def call(engine: HookEngine) -> None:
                out = await engine.pre_tool("Read", {"path": "x"})
                assert not out.blocked and out.runs == []

            loops: dict[str, Callable[[], Awaitable[None]]] = {
                "check": check,
                "floor": lambda: call(floor),
                "project": lambda: call(project),
            }
            samples: dict[str, list[int]] = {name: [] for name in loops}
            for fn in loops.values():  # warm up
                for _ in range(200):
                    await fn()
            gc.disable()
            try:
                for _ in range(n):
                    for name, fn in loops.items():
                        start = time.perf_counter_ns()
                        await fn()
                        samples[name].append(time.perf_counter_ns() - start)
            finally:
                gc.enable()
    out: dict[str, Any] = {
        name: {"p50_us": pct(s, 0.5), "p99_us": pct(s, 0.99)} for name, s in samples.items()
    }
    out["paths_checked"] = paths
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=20000)
    args = parser.parse_args()
    result = trio.run(bench, args.n)
    print(f"freshness check, {SCRIPTS} trusted hook scripts ({result['paths_checked']} paths):")
    for name in ("check", "floor", "project"):
        r = result[name]
        print(f"  {name:8s} p50 {r['p50_us']:8.1f} µs   p99 {r['p99_us']:8.1f} µs")
    extra = result["project"]["p50_us"] - result["floor"]["p50_us"]
    print(f"  project - floor: {extra:+.1f} µs per event (p50)")
    out = Path(__file__).resolve().parent / "out"
    out.mkdir(exist_ok=True)
    (out / "trust_check.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
