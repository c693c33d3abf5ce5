"""Dispatch overhead: the in-process cost of one ``engine.fire``.

Three loops run interleaved in one trio run, each timed per call with ``perf_counter_ns``:

- floor: ``await trio.lowlevel.checkpoint()`` (the cheapest thing an awaitable fire could do);
- no match: ``engine.pre_tool`` against a table whose hooks are all for other tools/events;
- one in-process hook: the same with one Python hook that answers "no opinion"; also its
  call - run: each call's time less the run the Outcome reports (``runs[0].duration_ms``, the
  hook's runner from start to reply), which is what the engine adds around one in-process run;
- one in-process hook that blocks: an audited answer, returned only once its audit record is
  written to the day file (docs/design.md §8), batched with whatever else is queued;
- the same hook in observe mode (``mode="observe"``): the block computed, audited as
  ``would_block`` and not enforced (the answer is an allow with a warning);
- a built-in guard (``destructive_delete`` on ``rm -rf /``) enforcing, and the same guard in
  observe mode, side by side: the cost per event of an observe-mode guard against the
  enforcing one (the ratios are printed).

The engine writes its audit log (to a temporary state dir), as ``serve`` does: the first three
cases write no record.

The system tier (``--system-tier``, docs/configuration.md#the-system-tier), side by side in a run
of its own: one ``pre_tool`` whose one hook, the built-in ``destructive_delete`` guard (decided in
process, so the tier's own cost is not lost in a process start), is the system tier's, against the
same event with the same hook in the user's config, two engines interleaved; the ratio of the
p50s is the tier's cost per event.

Prints p50/p99 in µs for each; the targets are <= 20 µs p50 with no match, and <= 40 µs p50 for
the in-process hook's call - run.

    .venv/bin/python -m bench.dispatch_overhead [-n 20000] [--system-tier]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

from triohooks.engine.hook_engine import HookEngine

TOML = """
[[hooks.pre_tool]]
match = "never_called_tool"
command = "true"

[[hooks.post_tool]]
command = "true"

[[hooks.prompt_submit]]
command = "true"

[[hooks.pre_tool]]
match = "bench_guard"
builtin = "destructive_delete"

[[hooks.pre_tool]]
match = "bench_guard_observed"
builtin = "destructive_delete"
mode = "observe"
"""


BLOCK_CASE = "fire, a block (audited)"
OBSERVED_CASE = "fire, the block observed"
GUARD_CASE = "fire, a guard blocks"
GUARD_OBSERVED_CASE = "fire, the guard observed"


def pct(samples: list[int], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1000.0


async def bench(n: int) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "g").mkdir()
        (root / "ws").mkdir()
        (root / "g/hooks.toml").write_text(TOML)
        # Past the freshness rule's settle time (a file changed in the last 2 s is checked by
        # its content each event, docs/security.md): the steady state an agent runs in.
        await trio.sleep(2.1)
        async with HookEngine.open(
            workspace=root / "ws", config_dir=root / "g", state_dir=root / "state", audit=True
        ) as engine:

            async def no_opinion(ev: Any) -> None:
                return None

            async def refuse(ev: Any) -> dict[str, str]:
                return {"decision": "block", "reason": "bench"}

            args = {"command": "ls -la"}

            async def floor() -> None:
                await trio.lowlevel.checkpoint()

            async def no_match() -> None:
                await engine.pre_tool("bash", args, session_id="s")

            run_ns: list[int] = []

            async def one_hook() -> None:
                out = await engine.fire(
                    "permission_request", tool="bash", args=args, session_id="s"
                )
                run_ns.append(round(out.runs[0].duration_ms * 1e6))

            async def audited() -> None:
                await engine.pre_tool("bench_refused", args, session_id="s")

            async def observed() -> None:
                out = await engine.pre_tool("bench_observed", args, session_id="s")
                assert not out.blocked and out.warnings

            rm = {"command": "rm -rf /"}

            async def guard() -> None:
                assert (await engine.pre_tool("bench_guard", rm, session_id="s")).blocked

            async def guard_observed() -> None:
                out = await engine.pre_tool("bench_guard_observed", rm, session_id="s")
                assert not out.blocked and out.warnings

            engine.add_hook("permission_request", no_opinion)
            engine.add_hook("pre_tool", refuse, match="bench_refused")
            engine.add_hook("pre_tool", refuse, match="bench_observed", mode="observe")
            runners: dict[str, Callable[[], Awaitable[None]]] = {
                "floor (checkpoint)": floor,
                "fire, no hook matches": no_match,
                "fire, one in-process hook": one_hook,
                BLOCK_CASE: audited,
                OBSERVED_CASE: observed,
                GUARD_CASE: guard,
                GUARD_OBSERVED_CASE: guard_observed,
            }
            samples: dict[str, list[int]] = {name: [] for name in runners}
            for _ in range(min(1000, n // 10)):  # warm up
                for run in runners.values():
                    await run()
            gc.collect()
            run_ns.clear()
            clock = time.perf_counter_ns
            for _ in range(n):
                for name, run in runners.items():
                    t0 = clock()
                    await run()
                    samples[name].append(clock() - t0)
            calls = samples["fire, one in-process hook"]
            samples["one in-process hook: call - run"] = [
                call - ran for call, ran in zip(calls, run_ns, strict=True)
            ]
    return summary(samples)


def summary(samples: dict[str, list[int]]) -> dict[str, dict[str, float]]:
    """p50, p99 and mean in µs of each case's per-call times (ns)."""
    return {
        name: {
            "p50_us": pct(s, 0.50),
            "p99_us": pct(s, 0.99),
            "mean_us": statistics.fmean(s) / 1000.0,
        }
        for name, s in samples.items()
    }


def show(title: str, figures: dict[str, dict[str, float]]) -> None:
    print(title)
    print(f"{'case':32} {'p50 µs':>9} {'p99 µs':>9} {'mean µs':>9}")
    for name, f in figures.items():
        print(f"{name:32} {f['p50_us']:9.2f} {f['p99_us']:9.2f} {f['mean_us']:9.2f}")


GUARD = """
[[hooks.pre_tool]]
id = "no-rm-rf"
builtin = "destructive_delete"
"""


async def system_tier(n: int) -> dict[str, dict[str, float]]:
    """The same guard as the system tier's hook and as the user's, per event (p50/p99/mean)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name in ("sys", "empty", "g-sys", "g-user", "ws"):
            (root / name).mkdir()
        (root / "sys/hooks.toml").write_text(GUARD)
        (root / "g-user/hooks.toml").write_text(GUARD)
        await trio.sleep(2.1)  # past the freshness rule's settle time, as in bench()
        async with trio.open_nursery() as nursery:
            opened: dict[str, Any] = {}

            async def open_one(case: str, system: str, config: str, ready: trio.Event) -> None:
                # The system tier's directory is read from the environment at each build; the
                # files never change here, so each engine keeps the table it was opened with.
                os.environ["TRIOHOOKS_SYSTEM_DIR"] = str(root / system)
                async with HookEngine.open(
                    workspace=root / "ws", config_dir=root / config, state_dir=root / "state"
                ) as engine:
                    opened[case] = engine
                    ready.set()
                    await trio.sleep_forever()

            for case, system, config in (
                ("guard in the user's config", "empty", "g-user"),
                ("guard in the system tier", "sys", "g-sys"),
            ):
                ready = trio.Event()
                nursery.start_soon(open_one, case, system, config, ready)
                await ready.wait()
            engines = dict(opened)
            for case, engine in engines.items():
                scopes = [h.scope for h in engine.table.hooks]
                assert scopes == (["system"] if "system" in case else ["global"]), scopes
            for engine in engines.values():
                out = await engine.pre_tool("bash", {"command": "ls -la"}, session_id="s")
                assert [r.hook for r in out.runs] == ["no-rm-rf"] and not out.blocked
            args = {"command": "ls -la"}  # the guard runs and lets it go: nothing audited
            samples: dict[str, list[int]] = {case: [] for case in engines}
            for _ in range(min(1000, n // 10)):
                for engine in engines.values():
                    await engine.pre_tool("bash", args, session_id="s")
            gc.collect()
            clock = time.perf_counter_ns
            for _ in range(n):
                for case, engine in engines.items():
                    t0 = clock()
                    await engine.pre_tool("bash", args, session_id="s")
                    samples[case].append(clock() - t0)
            nursery.cancel_scope.cancel()
    return summary(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=20000)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument(
        "--system-tier", action="store_true", help="the system tier's cost per event instead"
    )
    args = parser.parse_args()
    if args.system_tier:
        tier = trio.run(system_tier, args.n)
        show(f"system tier, n={args.n} each, interleaved", tier)
        base, own = (f["p50_us"] for f in tier.values())
        print(f"system tier / user config, p50: {own / base:.3f}")
        return
    figures = trio.run(bench, args.n)
    show(f"dispatch overhead, n={args.n} each, interleaved", figures)
    for observe, enforce in ((OBSERVED_CASE, BLOCK_CASE), (GUARD_OBSERVED_CASE, GUARD_CASE)):
        ratio = figures[observe]["p50_us"] / figures[enforce]["p50_us"]
        print(f"observe / enforce p50: {observe!r} / {enforce!r} = {ratio:.2f}")
    for label, case, limit in (
        ("no-match p50 <= 20 µs", "fire, no hook matches", 20),
        ("in-process hook call - run p50 <= 40 µs", "one in-process hook: call - run", 40),
    ):
        got = figures[case]["p50_us"]
        print(f"target: {label} -> {'met' if got <= limit else 'MISSED'} ({got:.2f} µs)")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
