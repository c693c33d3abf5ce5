"""A stalled watchdog helper against the event loop: the loop's heartbeat while the helper is
stopped.

One trio run, one process guard (the linux backend, with its watchdog helper), a heartbeat task
that sleeps 10 ms at a time and records every gap between its wakes. Three phases, each timed
on the heartbeat:

- idle: nothing else runs (the floor: what a 10 ms sleep costs here);
- spawning: one ``bash -c true`` hook after another through the guard;
- stalled: the helper is stopped (SIGSTOP, and left so) and one hook is to be spawned: that
  hook's task finds the reply overdue, reads that the helper is stopped and gives it up, the hook
  spawns in this process, and a fresh helper takes over; the heartbeat must not notice.

Prints the heartbeat's p50 and max gap per phase, how long the hook waited and when a fresh
helper served; the targets: a max gap <= 50 ms while the helper is stopped, and a fresh helper
within 5 s of the stop. (Linux only: the posix backend has no helper to stall.)

    .venv/bin/python -m bench.helper_stall [--spawns 200]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import time

import trio

from triohooks.actors.guard import backend
from triohooks.actors.reaper import open_reaper
from triohooks.handlers.process import ProcessSpec

TRUE = ProcessSpec(argv=("bash", "-c", "true"), cwd=os.getcwd(), timeout_s=10.0)
TARGET_MS = 50.0
REPLACED_S = 5.0


class Heartbeat:
    def __init__(self) -> None:
        self.gaps: list[float] = []
        self.last = time.perf_counter()

    async def run(self) -> None:
        while True:
            await trio.sleep(0.01)
            now = time.perf_counter()
            self.gaps.append(now - self.last)
            self.last = now

    def take(self) -> list[float]:
        gaps, self.gaps = self.gaps, []
        return gaps


def line(name: str, gaps: list[float], extra: str = "") -> str:
    ms = [g * 1000 for g in gaps]
    return f"{name:<10}{len(ms):>8}{statistics.median(ms):>10.2f}{max(ms):>10.2f}  {extra}"


async def main(spawns: int) -> int:
    beat = Heartbeat()
    async with open_reaper() as reaper, trio.open_nursery() as nursery:
        nursery.start_soon(beat.run)
        await trio.sleep(1.0)
        idle = beat.take()
        for _ in range(spawns):
            await reaper.run(TRUE)
        spawning = beat.take()
        helper = reaper.watchdog_pid
        assert helper is not None
        os.kill(helper, signal.SIGSTOP)  # and left stopped: the reaper must notice by itself
        started = time.perf_counter()
        try:
            result = await reaper.run(TRUE)
            waited = time.perf_counter() - started
            stalled = beat.take()
            replaced = None
            for _ in range(400):  # a fresh helper serving
                if reaper.watchdog_pid not in (None, helper):
                    replaced = time.perf_counter() - started
                    break
                await trio.sleep(0.025)
        finally:
            try:
                os.kill(helper, signal.SIGCONT)
            except ProcessLookupError:
                pass
        nursery.cancel_scope.cancel()
    print("heartbeat of the event loop (10 ms sleeps), gaps in ms")
    print(f"{'phase':<10}{'wakes':>8}{'p50':>10}{'max':>10}")
    print(line("idle", idle))
    print(line("spawning", spawning, f"{spawns} hooks through the helper"))
    print(
        line(
            "stalled",
            stalled,
            f"helper stopped: the hook waited {waited:.2f} s, then ran here ({result.status})",
        )
    )
    said = f"{replaced:.2f} s" if replaced is not None else "not within 10 s"
    print(f"a fresh helper served {said} after the stop")
    worst = max(stalled) * 1000
    verdict = "met" if worst <= TARGET_MS else "MISSED"
    print(f"target: max gap while the helper is stopped <= {TARGET_MS:g} ms -> {verdict}")
    ok = "met" if replaced is not None and replaced <= REPLACED_S else "MISSED"
    print(f"target: a stopped helper replaced within {REPLACED_S:g} s -> {ok}")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spawns", type=int, default=200)
    args = parser.parse_args()
    if backend() != "linux":
        print("the helper stall needs the linux backend", file=sys.stderr)
        sys.exit(2)
    sys.exit(trio.run(main, args.spawns))
