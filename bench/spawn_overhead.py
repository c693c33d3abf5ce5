"""Spawn overhead: one ``bash -c true`` hook through our stack vs a bare ``subprocess.run``.

Both are timed interleaved (ours, bare, ours, bare, ...) so drift in machine load hits both
alike. Prints p50/p99 of each and their ratio; the target is ours/bare <= 1.25 at p50.

    .venv/bin/python -m bench.spawn_overhead [-n 500] [--via reaper|engine] [--no-watchdog]

"Our stack" is either the process guard alone plus TOML-dialect reading (:func:`via_reaper`) or
a whole ``engine.pre_tool`` with one ``command = "true"`` hook (:func:`via_engine`). A runner is
an async no-argument callable; :func:`measure` times any of them.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import trio

from triohooks.actors.reaper import open_reaper
from triohooks.engine.hook_engine import HookEngine
from triohooks.handlers.process import ProcessSpec
from triohooks.handlers.replies import TOML_OUTPUT_CAP, read_toml_reply

HookRunner = Callable[[], Awaitable[None]]

PAYLOAD = b'{"event":"pre_tool","session_id":"bench","tool":"bash","args":{"command":"ls"}}'


@asynccontextmanager
async def via_reaper(*, watchdog: bool = True) -> AsyncIterator[HookRunner]:
    """One TOML-dialect command hook: spawned, guarded, reaped and read."""
    async with open_reaper(watchdog=watchdog) as reaper:
        spec = ProcessSpec(
            argv=("bash", "-c", "true"),
            cwd=os.getcwd(),
            stdin=PAYLOAD,
            timeout_s=30,
            output_cap=TOML_OUTPUT_CAP,
        )

        async def run_once() -> None:
            run = read_toml_reply(await reaper.run(spec))
            assert run.outcome == "ok", run

        yield run_once


@asynccontextmanager
async def via_engine(*, watchdog: bool = True) -> AsyncIterator[HookRunner]:
    """``engine.pre_tool`` with one global ``command = "true"`` pre_tool hook (no audit)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "config").mkdir()
        (root / "ws").mkdir()
        (root / "config/hooks.toml").write_text('[[hooks.pre_tool]]\ncommand = "true"\n')
        async with HookEngine.open(
            workspace=root / "ws",
            config_dir=root / "config",
            state_dir=root / "state",
            audit=False,
            watchdog=watchdog,
        ) as engine:

            async def run_once() -> None:
                outcome = await engine.pre_tool("bash", {"command": "ls"}, session_id="bench")
                assert len(outcome.runs) == 1 and outcome.runs[0].outcome == "ok", outcome

            yield run_once


def bare_once() -> None:
    subprocess.run(["bash", "-c", "true"], check=True)


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def measure(
    run_hook: HookRunner, n: int, warmup: int = 20
) -> tuple[list[float], list[float]]:
    """``n`` interleaved timings (ms) of ``run_hook`` and of :func:`bare_once`."""
    ours: list[float] = []
    bare: list[float] = []
    for i in range(warmup + n):
        t0 = time.perf_counter()
        await run_hook()
        t1 = time.perf_counter()
        bare_once()  # blocks the loop on purpose: it is the baseline, nothing else runs
        t2 = time.perf_counter()
        if i >= warmup:
            ours.append((t1 - t0) * 1000)
            bare.append((t2 - t1) * 1000)
    return ours, bare


def report(label: str, ours: list[float], bare: list[float]) -> None:
    print(f"n = {len(ours)} each, interleaved; ours = {label}")
    print(f"{'':12}{'p50 ms':>10}{'p99 ms':>10}")
    for name, samples in (("triohooks", ours), ("bare", bare)):
        print(f"{name:12}{percentile(samples, 0.5):10.3f}{percentile(samples, 0.99):10.3f}")
    for q in (0.5, 0.99):
        ratio = percentile(ours, q) / percentile(bare, q)
        print(f"ratio p{round(q * 100)}: {ratio:.3f}" + ("  (target <= 1.25)" if q == 0.5 else ""))


async def main(n: int, via: str, watchdog: bool) -> None:
    runner = via_engine if via == "engine" else via_reaper
    async with runner(watchdog=watchdog) as run_hook:
        ours, bare = await measure(run_hook, n)
    report(via, ours, bare)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=500)
    parser.add_argument("--via", choices=["reaper", "engine"], default="reaper")
    parser.add_argument("--no-watchdog", action="store_true")
    args = parser.parse_args()
    trio.run(main, args.n, args.via, not args.no_watchdog)
