"""A stalled watchdog helper against the event loop: the loop's heartbeat while the helper is
stopped.

One trio run, one process guard (the linux backend, with its watchdog helper), a heartbeat task
that sleeps 10 ms at a time and records every gap between its wakes. Three phases, each timed
on the heartbeat:

- idle: nothing else runs (the floor: what a 10 ms sleep costs here);
- spawning: one ``bash -c true`` hook after another through the guard;
- stalled: the helper is stopped (SIGSTOP) and one hook is to be spawned: that hook's task waits
  for the helper's reply up to the reply timeout (5 s), the helper is then given up, the hook
  spawns in this process, and a fresh helper takes over; the heartbeat must not notice.

Prints the heartbeat's p50 and max gap per phase; the target is a max gap <= 50 ms while the
helper is stopped. (Linux only: the posix backend has no helper to stall.)

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
        os.kill(helper, signal.SIGSTOP)
        started = time.perf_counter()
        try:
            result = await reaper.run(TRUE)
        finally:
            os.kill(helper, signal.SIGCONT)
        waited = time.perf_counter() - started
        stalled = beat.take()
        for _ in range(200):  # a fresh helper, within 10 s
            if reaper.watchdog_pid not in (None, helper):
                break
            await trio.sleep(0.05)
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
    worst = max(stalled) * 1000
    verdict = "met" if worst <= TARGET_MS else "MISSED"
    print(f"target: max gap while the helper is stopped <= {TARGET_MS:g} ms -> {verdict}")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spawns", type=int, default=200)
    args = parser.parse_args()
    if backend() != "linux":
        print("the helper stall needs the linux backend", file=sys.stderr)
        sys.exit(2)
    sys.exit(trio.run(main, args.spawns))
