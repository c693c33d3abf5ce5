"""Warm workers of many projects in one process: how many stay alive, their memory, our fds.

One process guard (as one ``serve`` has), ``--projects`` projects each with its own warm worker
(``examples/workers/policy_worker.py``, the Python helper: one pool per project directory),
one request each, one after another. Then: warm workers alive, their total resident memory
(RSS, summed over the worker processes), this process's open file descriptors and its
``RLIMIT_NOFILE``; and, with every project's worker asked again, how many requests found their
worker still warm.

    .venv/bin/python -m bench.worker_budget [--projects 190] [--fd-limit 1024] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
import trio

from triohooks.actors.process_guard import open_guard
from triohooks.handlers.process import ProcessSpec

REPO = Path(__file__).resolve().parent.parent
PY_WORKER = REPO / "examples" / "workers" / "policy_worker.py"
REQUEST = b'{"event": "pre_tool", "tool": "bash", "args": {"command": "ls"}}\n'


def worker_processes() -> list[psutil.Process]:
    """Live processes started as warm workers (``TRIOHOOKS_WORKER=1``) of this process's guard."""
    found = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.environ().get("TRIOHOOKS_WORKER") == "1" and proc.status() != "zombie":
                found.append(proc)
        except psutil.Error:
            continue
    return found


async def measure(projects: int, root: Path) -> dict[str, Any]:
    def spec(i: int) -> ProcessSpec:
        where = root / f"project-{i}"
        where.mkdir(exist_ok=True)
        return ProcessSpec(
            argv=(sys.executable, str(PY_WORKER)),
            cwd=str(where),
            stdin=REQUEST,
            timeout_s=30,
            worker=1,
            worker_key="policy",
        )

    async with open_guard() as guard:
        started = time.perf_counter()
        failed = 0
        pids = []
        for i in range(projects):
            result = await guard.run(spec(i))
            failed += result.status != "exited"
            pids.append(result.pid)
        first_round_s = time.perf_counter() - started
        await trio.sleep(1)  # retired workers exit
        alive = worker_processes()
        rss = sum(p.memory_info().rss for p in alive)
        fds = psutil.Process().num_fds()
        again = [await guard.run(spec(i)) for i in range(projects)]
        warm = sum(r.pid == pid for r, pid in zip(again, pids, strict=True))
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        return {
            "projects": projects,
            "failed": failed + sum(r.status != "exited" for r in again),
            "workers_alive": len(alive),
            "workers_rss_mb": round(rss / 2**20, 1),
            "open_fds": fds,
            "fd_limit": soft,
            "first_round_s": round(first_round_s, 2),
            "second_round_still_warm": warm,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--projects", type=int, default=190)
    parser.add_argument("--fd-limit", type=int, default=1024, help="soft RLIMIT_NOFILE to run at")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    limit = args.fd_limit if hard == resource.RLIM_INFINITY else min(args.fd_limit, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
    with tempfile.TemporaryDirectory(prefix="worker-budget-") as root:
        figures = trio.run(measure, args.projects, Path(root))
    for name, value in figures.items():
        print(f"{name:>26}: {value}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
