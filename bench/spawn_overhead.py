"""Spawn overhead: one ``bash -c true`` hook through our stack vs a bare ``subprocess.run``.

Both are timed interleaved (ours, bare, ours, bare, ...) so drift in machine load hits both
alike. Prints p50/p99 of each and their ratio; the target is ours/bare <= 1.10 at p50.

    .venv/bin/python -m bench.spawn_overhead [-n 600] [--via reaper|posix|engine] [--no-watchdog]
        [--rounds 3] [--baseline run|io]

"Our stack" is either the process guard alone plus TOML-dialect reading (:func:`via_reaper`) or
a whole ``engine.pre_tool`` with one ``command = "true"`` hook (:func:`via_engine`). A runner is
an async no-argument callable; :func:`measure` times any of them.

The baseline is ``subprocess.run(["bash", "-c", "true"])`` (``--baseline run``, the default: the
same argv and the same environment, less the one marker variable), or the same doing what the
guard does besides guarding (``--baseline io``: the payload on stdin, both outputs captured, a
session of its own). ``--rounds`` repeats the whole measurement in the same process (one warm-up
first) and prints the range of the ratios: on a shared machine one round says little.
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
from typing import Any

import trio

from triohooks.actors.posix_guard import open_posix_guard
from triohooks.actors.reaper import open_reaper
from triohooks.engine.hook_engine import HookEngine
from triohooks.handlers.process import ProcessSpec
from triohooks.handlers.replies import TOML_OUTPUT_CAP, read_toml_reply

HookRunner = Callable[[], Awaitable[None]]

PAYLOAD = b'{"event":"pre_tool","session_id":"bench","tool":"bash","args":{"command":"ls"}}'
ARGV = ["bash", "-c", "true"]
TARGET = 1.10


@asynccontextmanager
async def via_reaper(*, watchdog: bool = True) -> AsyncIterator[HookRunner]:
    """One TOML-dialect command hook: spawned, guarded, reaped and read (linux backend)."""
    async with _guarded(open_reaper(watchdog=watchdog)) as run_once:
        yield run_once


@asynccontextmanager
async def via_posix(*, watchdog: bool = True) -> AsyncIterator[HookRunner]:
    """The same through the posix backend (what macOS gets), here on Linux."""
    async with _guarded(open_posix_guard(watchdog=watchdog)) as run_once:
        yield run_once


@asynccontextmanager
async def _guarded(opened: Any) -> AsyncIterator[HookRunner]:
    async with opened as reaper:
        spec = ProcessSpec(
            argv=tuple(ARGV),
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
    subprocess.run(ARGV, check=True)


def bare_io_once() -> None:
    subprocess.run(ARGV, check=True, input=PAYLOAD, capture_output=True, start_new_session=True)


BASELINES: dict[str, Callable[[], None]] = {"run": bare_once, "io": bare_io_once}


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def measure(
    run_hook: HookRunner, n: int, warmup: int = 20, bare: Callable[[], None] = bare_once
) -> tuple[list[float], list[float]]:
    """``n`` interleaved timings (ms) of ``run_hook`` and of ``bare`` (:func:`bare_once`)."""
    ours: list[float] = []
    base: list[float] = []
    for i in range(warmup + n):
        t0 = time.perf_counter()
        await run_hook()
        t1 = time.perf_counter()
        bare()  # blocks the loop on purpose: it is the baseline, nothing else runs
        t2 = time.perf_counter()
        if i >= warmup:
            ours.append((t1 - t0) * 1000)
            base.append((t2 - t1) * 1000)
    return ours, base


def report(label: str, ours: list[float], bare: list[float]) -> tuple[float, float]:
    """Print one round; its p50 and p99 ratios."""
    print(f"n = {len(ours)} each, interleaved; ours = {label}")
    print(f"{'':12}{'p50 ms':>10}{'p99 ms':>10}")
    for name, samples in (("triohooks", ours), ("bare", bare)):
        print(f"{name:12}{percentile(samples, 0.5):10.3f}{percentile(samples, 0.99):10.3f}")
    ratios = (
        percentile(ours, 0.5) / percentile(bare, 0.5),
        percentile(ours, 0.99) / percentile(bare, 0.99),
    )
    print(f"ratio p50: {ratios[0]:.3f}  (target <= {TARGET:.2f})")
    print(f"ratio p99: {ratios[1]:.3f}")
    return ratios


async def main(n: int, via: str, watchdog: bool, rounds: int = 1, baseline: str = "run") -> None:
    runner = {"engine": via_engine, "reaper": via_reaper, "posix": via_posix}[via]
    bare = BASELINES[baseline]
    label = via if baseline == "run" else f"{via}, baseline {baseline}"
    results = []
    async with runner(watchdog=watchdog) as run_hook:
        for _ in range(rounds):
            ours, base = await measure(run_hook, n, bare=bare)
            results.append(report(label, ours, base))
    if rounds > 1:
        p50s, p99s = [r[0] for r in results], [r[1] for r in results]
        print(
            f"{rounds} rounds: ratio p50 {min(p50s):.3f}-{max(p50s):.3f}, "
            f"p99 {min(p99s):.3f}-{max(p99s):.3f}"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=600)
    parser.add_argument("--via", choices=["reaper", "posix", "engine"], default="reaper")
    parser.add_argument("--no-watchdog", action="store_true")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--baseline", choices=sorted(BASELINES), default="run")
    args = parser.parse_args()
    trio.run(main, args.n, args.via, not args.no_watchdog, args.rounds, args.baseline)
