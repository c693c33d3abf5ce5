"""Warm workers against the other ways to run a policy hook, side by side in one engine.

One trio ``HookEngine``, one config, five ``pre_tool`` cases, each a hook that answers "no
opinion" (the call goes on), measured interleaved in small batches (case A batch, case B batch,
... again), every call timed with ``perf_counter_ns``:

- in-process: an async Python function registered with ``engine.add_hook``;
- warm worker, Python: ``examples/workers/policy_worker.py`` (``triohooks.worker``) with
  ``worker = true``;
- warm worker, bash: ``examples/workers/bash_worker.sh`` (a ``read`` loop) with ``worker = true``;
- warm worker, JSON dialect: the Python worker as a JSON-dialect executor (no target: shown
  for what the dialect's request variables and payload file add);
- one-shot: ``command = "true"`` (``bash -c true``, a process per event).

Two figures per case: the whole ``engine.pre_tool`` call (what the agent waits for) and the
hook run itself (``runs[0].duration_ms``: from the runner's start to the reply read, without the
event's own dispatch). Beside them, in the same batches, the floor: the same bash read loop
driven over trio pipes directly (one request line written, one reply line read, no engine),
sent the very line the engine writes it (captured from a worker that keeps it: bash reads a
pipe a byte at a time, so the line's length is part of the floor); and the old floor, the same
loop sent an 80-byte event.
Prints p50/p99 of each, the ratio one-shot / worker, and whether the goals are met: a worker's
p50 <= 100 µs and >= 10x faster than the one-shot spawn; the bash worker's call p50 <= 3x the
floor's; an in-process hook's call minus its run <= 40 µs p50 (what the engine adds).

    .venv/bin/python -m bench.worker_overhead [-n 2000] [--batch 50] [--json out.json]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import trio

from triohooks.engine.hook_engine import HookEngine

REPO = Path(__file__).resolve().parent.parent
PY_WORKER = REPO / "examples" / "workers" / "policy_worker.py"
BASH_WORKER = REPO / "examples" / "workers" / "bash_worker.sh"

CASES = {
    "in-process Python hook": "inproc_tool",
    "warm worker, Python helper": "py_worker_tool",
    "warm worker, bash read loop": "bash_worker_tool",
    "warm worker, JSON dialect": "json_worker_tool",
    "one-shot `bash -c true`": "spawn_tool",
}
WORKERS = ("warm worker, Python helper", "warm worker, bash read loop")
SPAWN = "one-shot `bash -c true`"
INPROC = "in-process Python hook"
BASH = "warm worker, bash read loop"
FLOOR = "floor: bash read loop over trio pipes"
#: The floor as measured before it was sent the engine's own line: an 80-byte event.
SHORT_FLOOR = "floor, 80-byte line (the old floor)"
#: That line.
SHORT_LINE = b'{"event": "pre_tool", "tool": "bash_worker_tool", "args": {"command": "ls -la"}}\n'


class Floor:
    """The bash worker driven directly: a request line in, a reply line out, over trio pipes."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self.buffer = b""

    @classmethod
    async def start(cls) -> Floor:
        process = await trio.lowlevel.open_process(
            ["bash", str(BASH_WORKER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "TRIOHOOKS_WORKER": "1"},
        )
        return cls(process)

    async def call(self, line: bytes) -> bytes:
        assert self.process.stdin is not None and self.process.stdout is not None
        await self.process.stdin.send_all(line)
        while b"\n" not in self.buffer:
            self.buffer += await self.process.stdout.receive_some(65536)
        reply, _, self.buffer = self.buffer.partition(b"\n")
        return reply

    async def stop(self) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.aclose()
        await self.process.wait()


def capture_worker(capture: Path) -> str:
    """A worker that keeps the last request line it was sent in ``capture`` (the floor's)."""
    keep = f'printf "%s\\n" "$line" > {shlex.quote(str(capture))}'
    return f"while IFS= read -r line; do {keep}; echo '{{\"exit\":0}}'; done"


def config(capture: Path) -> str:
    return f"""
[[hooks.pre_tool]]
match = "capture_tool"
args = ["bash", "-c", {json.dumps(capture_worker(capture))}]
worker = true

[[hooks.pre_tool]]
match = "py_worker_tool"
args = [{json.dumps(sys.executable)}, {json.dumps(str(PY_WORKER))}]
worker = true

[[hooks.pre_tool]]
match = "bash_worker_tool"
args = ["bash", {json.dumps(str(BASH_WORKER))}]
worker = true

[[hooks.pre_tool]]
match = "spawn_tool"
command = "true"
"""


def json_config() -> str:
    """The Python worker again, as a JSON-dialect (everruns) executor: its requests carry the
    ``EVERRUNS_HOOK_*`` variables, and each has a payload file made and removed around it."""
    command = f"{sys.executable} {PY_WORKER}"
    hook = {
        "event": "pre_tool_use",
        "matcher": {"tool_name": "json_worker_tool"},
        "executor": {"type": "bash", "command": command, "worker": True},
    }
    return json.dumps({"hooks": [hook]})


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def no_opinion(fields: Mapping[str, Any]) -> None:
    return None


async def measure(n: int, batch: int) -> dict[str, dict[str, list[float]]]:
    calls: dict[str, list[float]] = {case: [] for case in (*CASES, FLOOR, SHORT_FLOOR)}
    runs: dict[str, list[float]] = {case: [] for case in CASES}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "config").mkdir()
        capture = root / "request.json"
        (root / "config" / "hooks.toml").write_text(config(capture))
        (root / "config" / "hooks.json").write_text(json_config())
        (root / "ws").mkdir()
        async with HookEngine.open(
            workspace=root / "ws",
            config_dir=root / "config",
            state_dir=root / "state",
            audit=False,
        ) as engine:
            engine.add_hook("pre_tool", no_opinion, match="inproc_tool")
            args = {"command": "ls -la"}
            floor = await Floor.start()
            # The line the engine writes to the bash worker: a worker that keeps what it was
            # sent, asked with the same arguments, under the bash worker's tool name.
            await engine.pre_tool("capture_tool", args)
            line = capture.read_bytes().replace(b'"capture_tool"', b'"bash_worker_tool"')
            print(f"the engine's request line to the bash worker: {len(line)} bytes")
            for _ in range(50):
                assert await floor.call(line) == b'{"exit":0}'
            for tool in CASES.values():  # warm up: workers started, code paths hot
                for _ in range(50):
                    out = await engine.pre_tool(tool, args)
                    assert [r.outcome for r in out.runs] == ["ok"], out
            gc.collect()
            gc.disable()
            try:
                done = 0
                while done < n:
                    size = min(batch, n - done)
                    for case, tool in CASES.items():
                        for _ in range(size):
                            start = time.perf_counter_ns()
                            out = await engine.pre_tool(tool, args)
                            calls[case].append((time.perf_counter_ns() - start) / 1000)
                            runs[case].append(out.runs[0].duration_ms * 1000)
                    for _ in range(size):
                        start = time.perf_counter_ns()
                        await floor.call(line)
                        calls[FLOOR].append((time.perf_counter_ns() - start) / 1000)
                    for _ in range(size):
                        start = time.perf_counter_ns()
                        await floor.call(SHORT_LINE)
                        calls[SHORT_FLOOR].append((time.perf_counter_ns() - start) / 1000)
                    done += size
                    gc.collect()
            finally:
                gc.enable()
                await floor.stop()
    return {"call": calls, "run": runs}


def report(data: dict[str, dict[str, list[float]]], n: int) -> dict[str, Any]:
    print(f"warm workers vs in-process and one-shot hooks, pre_tool, n={n} per case, interleaved")
    print(f"{'case':38} {'call p50':>9} {'call p99':>9} {'run p50':>9} {'run p99':>9}  (µs)")
    figures: dict[str, Any] = {}
    for case in CASES:
        call, run = data["call"][case], data["run"][case]
        row = {
            "call_p50_us": pct(call, 0.5),
            "call_p99_us": pct(call, 0.99),
            "run_p50_us": pct(run, 0.5),
            "run_p99_us": pct(run, 0.99),
        }
        figures[case] = row
        print(
            f"{case:38} {row['call_p50_us']:9.1f} {row['call_p99_us']:9.1f} "
            f"{row['run_p50_us']:9.1f} {row['run_p99_us']:9.1f}"
        )
    floor = data["call"][FLOOR]
    figures[FLOOR] = {"call_p50_us": pct(floor, 0.5), "call_p99_us": pct(floor, 0.99)}
    print(f"{FLOOR:38} {pct(floor, 0.5):9.1f} {pct(floor, 0.99):9.1f}")
    short = data["call"][SHORT_FLOOR]
    figures[SHORT_FLOOR] = {"call_p50_us": pct(short, 0.5), "call_p99_us": pct(short, 0.99)}
    print(f"{SHORT_FLOOR:38} {pct(short, 0.5):9.1f} {pct(short, 0.99):9.1f}")
    spawn = figures[SPAWN]
    for case in WORKERS:
        row = figures[case]
        call_ratio = spawn["call_p50_us"] / row["call_p50_us"]
        run_ratio = spawn["run_p50_us"] / row["run_p50_us"]
        row["spawn_over_worker_call_p50"] = call_ratio
        row["spawn_over_worker_run_p50"] = run_ratio
        print(f"one-shot / {case}: {call_ratio:.1f}x (call p50), {run_ratio:.1f}x (run p50)")
        for what, value in (("call", row["call_p50_us"]), ("run", row["run_p50_us"])):
            verdict = "met" if value <= 100 else "MISSED"
            print(f"target: {case}, {what} p50 <= 100 µs -> {verdict} ({value:.1f} µs)")
        verdict = "met" if call_ratio >= 10 else "MISSED"
        print(f"target: {case}, >= 10x faster than one-shot (call p50) -> {verdict}")
    over_floor = figures[BASH]["call_p50_us"] / figures[FLOOR]["call_p50_us"]
    figures[BASH]["over_floor_call_p50"] = over_floor
    verdict = "met" if over_floor <= 3 else "MISSED"
    print(f"target: {BASH}, call p50 <= 3x the floor -> {verdict} ({over_floor:.2f}x)")
    over_short = figures[BASH]["call_p50_us"] / figures[SHORT_FLOOR]["call_p50_us"]
    figures[BASH]["over_short_floor_call_p50"] = over_short
    print(f"({BASH}, call p50 / the old 80-byte floor: {over_short:.2f}x)")
    added = [c - r for c, r in zip(data["call"][INPROC], data["run"][INPROC], strict=True)]
    figures[INPROC]["engine_added_p50_us"] = pct(added, 0.5)
    verdict = "met" if pct(added, 0.5) <= 40 else "MISSED"
    print(f"target: {INPROC}, call - run p50 <= 40 µs -> {verdict} ({pct(added, 0.5):.1f} µs)")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=2000, help="calls per case")
    parser.add_argument("--batch", type=int, default=50, help="calls per case per batch")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    ns = parser.parse_args()
    data = trio.run(measure, ns.n, ns.batch)
    figures = report(data, ns.n)
    if ns.json:
        ns.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
