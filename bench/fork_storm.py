"""Timeouts under load: many hooks that fork process trees, all at once, each past its timeout.

One engine, one ``pre_tool`` hook whose command forks a tree (``--width`` background
``sleep``s, some in their own session, then sleeps itself) and never finishes; its timeout is
``--timeout`` s. ``--events`` events are fired at once; each must be answered (the hook killed,
its tree with it) within its timeout + 1 s. Prints the answer times' p50, p90 and max, how many
missed timeout + 1 s, and the processes left behind (none may be).

    .venv/bin/python -m bench.fork_storm [--events 50] [--width 8] [--timeout 1]
        [--backend linux|posix]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import psutil
import trio

from triohooks.engine.hook_engine import HookEngine

TREE = (
    "for i in $(seq {width}); do sleep 60 & setsid sleep 60 & done; "
    "( sleep 60 & sleep 60 ) & sleep 60"
)


async def storm(events: int, width: int, timeout_s: float, root: Path) -> list[float]:
    config = root / "g"
    config.mkdir()
    command = TREE.format(width=width)
    (config / "hooks.toml").write_text(
        f"[[hooks.pre_tool]]\ncommand = {json.dumps(command)}\ntimeout_seconds = {timeout_s}\n"
    )
    took: list[float] = []
    async with HookEngine.open(
        workspace=root, config_dir=config, state_dir=root / "state", audit=False
    ) as engine:

        async def one(i: int) -> None:
            start = time.perf_counter()
            await engine.pre_tool("Bash", {"command": f"echo {i}"}, session_id=f"s{i}")
            took.append(time.perf_counter() - start)

        async with trio.open_nursery() as nursery:
            for i in range(events):
                nursery.start_soon(one, i)
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=50)
    parser.add_argument("--width", type=int, default=8, help="background sleeps per tree, x2")
    parser.add_argument("--timeout", type=float, default=1.0, help="the hook's timeout, s")
    parser.add_argument("--backend", choices=("linux", "posix"), default=None)
    args = parser.parse_args()
    if args.backend:
        os.environ["TRIOHOOKS_PROCESS_GUARD"] = args.backend
    me = psutil.Process()
    with tempfile.TemporaryDirectory(prefix="triohooks-storm-") as tmp:
        took = trio.run(storm, args.events, args.width, args.timeout, Path(tmp))
    time.sleep(0.5)
    left = [p for p in me.children(recursive=True)]
    bound = args.timeout + 1.0
    ordered = sorted(took)
    p90 = ordered[int(0.9 * (len(ordered) - 1))]
    print(
        f"{args.events} events at once, each a hook forking ~{2 * args.width + 2} processes, "
        f"timeout {args.timeout:g} s, backend {os.environ.get('TRIOHOOKS_PROCESS_GUARD', 'auto')}"
    )
    print(
        f"answered in p50 {statistics.median(took):.2f} s, p90 {p90:.2f} s, max {max(took):.2f} s; "
        f"over timeout + 1 s ({bound:g} s): {sum(t > bound for t in took)}; "
        f"processes left: {len(left)}"
    )


if __name__ == "__main__":
    main()
