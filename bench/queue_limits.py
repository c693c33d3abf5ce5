"""Queue-limits benchmark for the ordered background worker (docs/design.md §6, blitz HK-30..HK-33).

Offers background events at several rates (1k, 10k, 100k per second, and one burst of 10 000)
to a :class:`triohooks.actors.post_worker.PostWorker` whose hooks cost nothing (in-process no-op),
1 ms (in-process sleep) or a real ``bash -c true``; plus a saturation run per cost (the producer
keeps the queue topped up without dropping) and a close-deadline run (256 queued ``sleep 0.05``
hooks, cut off by the 5 s drain). For each it prints offered, ran, dropped, warnings, order,
enqueue latency p50/p99, max queue depth and drain time; writes ``bench/out/queue_limits.json``
and, when matplotlib is installed, ``bench/out/queue_limits.png``.

The exact checks (any failure exits 1): ``ran + dropped == offered``; events ran in offer order;
one warning per episode of drops; one log record per drop. Targets (printed, not asserted):
enqueue p99 <= 20 µs, in-process no-op throughput >= 50 000 events/s.

The bash hooks run through ``trio.run_process`` in this file's fake runner, not the engine.
Run: ``python -m bench.queue_limits`` (about 25 s).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from functools import partial
from itertools import pairwise
from pathlib import Path
from typing import Final

import msgspec
import trio

from triohooks.actors.post_worker import BackgroundItem, PostWorker, encode_payload
from triohooks.handlers.replies import RunResult
from triohooks.handlers.runner import HookInput

OUT_DIR: Final = Path(__file__).resolve().parent / "out"
P99_TARGET_US: Final = 20.0
NOOP_THROUGHPUT_TARGET: Final = 50_000.0
TICK_S: Final = 0.0005


class Scenario(msgspec.Struct, frozen=True):
    name: str
    cost: str
    #: "rate", "burst", "saturate" or "deadline".
    mode: str
    rate: float = 0.0
    events: int = 0


class Result(msgspec.Struct, frozen=True):
    name: str
    cost: str
    mode: str
    offered: int
    ran: int
    failed: int
    dropped_full: int
    dropped_at_close: int
    killed: int
    warnings: int
    episodes: int
    order_preserved: bool
    accounting_exact: bool
    warnings_exact: bool
    drop_logs_exact: bool
    enqueue_p50_us: float
    enqueue_p99_us: float
    enqueue_max_us: float
    max_depth: int
    drain_s: float
    offer_window_s: float
    throughput_eps: float

    @property
    def checks_pass(self) -> bool:
        return (
            self.order_preserved
            and self.accounting_exact
            and self.warnings_exact
            and self.drop_logs_exact
        )


class _DropLogCounter(logging.Handler):
    """Counts the worker's per-drop log records (and keeps them off the terminal)."""

    def __init__(self) -> None:
        super().__init__()
        self.drops = 0

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("dropped background event"):
            self.drops += 1


# ---------------------------------------------------------------------------------------------
# Fake hook runners


class FakeRunner:
    """Runs one event at a given cost and records what completed, for the exact checks."""

    def __init__(self, cost: str) -> None:
        self.cost = cost
        self.completed: list[int] = []
        self.worker: PostWorker | None = None
        self.in_episode = False
        self.episodes = 0
        self._proc: trio.Process | None = None

    async def run(self, hook: int, hook_input: HookInput) -> RunResult:
        """One event's one hook; ``hook`` is the event's sequence number (see :func:`_offer`)."""
        if self.cost == "noop":
            pass
        elif self.cost == "sleep_1ms":
            await trio.sleep(0.001)
        elif self.cost == "bash_true":
            await self._bash("true")
        elif self.cost == "bash_sleep_50ms":
            await self._bash("sleep 0.05")
        else:  # pragma: no cover - scenario table bug
            raise ValueError(self.cost)
        self.completed.append(hook)
        assert self.worker is not None
        if self.worker.depth == 0:  # the worker ends its episode at this same point
            self.in_episode = False
        return RunResult(outcome="ok")

    async def _bash(self, script: str) -> None:
        async with trio.open_nursery() as nursery:
            self._proc = await nursery.start(
                partial(trio.run_process, ["bash", "-c", script], check=False)
            )
        self._proc = None

    def on_drop(self, item: BackgroundItem, why: str) -> None:
        if why == "full" and not self.in_episode:
            self.in_episode = True
            self.episodes += 1


# ---------------------------------------------------------------------------------------------
# Producers


def _offer(worker: PostWorker, seq: int, latencies: list[int], accepted: list[int]) -> None:
    payload = encode_payload({"event": "post_tool", "tool": "bash", "seq": seq})
    t0 = time.perf_counter_ns()
    hooks = (worker.last_seq + 1,)  # the one "hook" is the event's own sequence number
    ok = worker.offer(event="post_tool", session_id="bench", payload=payload, hooks=hooks)
    latencies.append(time.perf_counter_ns() - t0)
    if ok:
        accepted.append(worker.last_seq)


async def _at_rate(
    worker: PostWorker, rate: float, window: float, latencies: list[int], accepted: list[int]
) -> float:
    total = int(rate * window)
    start = trio.current_time()
    sent = 0
    while sent < total:
        due = min(total, int((trio.current_time() - start) * rate) + 1)
        while sent < due:
            sent += 1
            _offer(worker, sent, latencies, accepted)
        await trio.sleep(TICK_S)
    return trio.current_time() - start


async def _burst(worker: PostWorker, n: int, latencies: list[int], accepted: list[int]) -> float:
    start = trio.current_time()
    for seq in range(1, n + 1):
        _offer(worker, seq, latencies, accepted)
    await trio.lowlevel.checkpoint()
    return trio.current_time() - start


async def _saturate(
    worker: PostWorker, window: float, latencies: list[int], accepted: list[int]
) -> float:
    """Keep the queue topped up (never dropping) for ``window`` seconds."""
    start = trio.current_time()
    seq = 0
    while trio.current_time() - start < window:
        while worker.depth < worker.capacity:
            seq += 1
            _offer(worker, seq, latencies, accepted)
        await trio.lowlevel.checkpoint()
    return trio.current_time() - start


# ---------------------------------------------------------------------------------------------


def _percentile(sorted_ns: list[int], q: float) -> float:
    if not sorted_ns:
        return 0.0
    return sorted_ns[min(len(sorted_ns) - 1, int(q * len(sorted_ns)))] / 1000.0


async def run_scenario(scenario: Scenario, window: float) -> Result:
    runner = FakeRunner(scenario.cost)
    drop_logs = _DropLogCounter()
    log = logging.getLogger("triohooks.post_worker")
    log.addHandler(drop_logs)
    log.propagate = False
    log.setLevel(logging.INFO)  # drops at close are logged at INFO
    warnings: list[str] = []
    worker = PostWorker(
        runner,
        on_warning=warnings.append,
        on_drop=runner.on_drop,
    )
    runner.worker = worker
    latencies: list[int] = []
    accepted: list[int] = []
    try:
        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                worker.attach(nursery)
                if scenario.mode == "rate":
                    offered_in = await _at_rate(worker, scenario.rate, window, latencies, accepted)
                elif scenario.mode in ("burst", "deadline"):
                    offered_in = await _burst(worker, scenario.events, latencies, accepted)
                else:
                    offered_in = await _saturate(worker, window, latencies, accepted)
                report = await worker.close()
    finally:
        log.removeHandler(drop_logs)
        log.propagate = True
        log.setLevel(logging.NOTSET)

    latencies.sort()
    ran_seqs = runner.completed
    dropped = report.dropped_full + report.dropped_at_close
    accounting = (
        report.offered == len(latencies)
        and report.ran + dropped == report.offered
        and report.ran - report.failed == len(ran_seqs)
        and report.offered - len(accepted) == report.dropped_full
    )
    order = all(a < b for a, b in pairwise(ran_seqs)) and set(ran_seqs) <= set(accepted)
    elapsed = offered_in + report.drain_seconds
    return Result(
        name=scenario.name,
        cost=scenario.cost,
        mode=scenario.mode,
        offered=report.offered,
        ran=report.ran,
        failed=report.failed,
        dropped_full=report.dropped_full,
        dropped_at_close=report.dropped_at_close,
        killed=report.killed,
        warnings=report.warnings,
        episodes=runner.episodes,
        order_preserved=order,
        accounting_exact=accounting,
        warnings_exact=report.warnings == len(warnings) == runner.episodes,
        drop_logs_exact=drop_logs.drops == dropped,
        enqueue_p50_us=_percentile(latencies, 0.50),
        enqueue_p99_us=_percentile(latencies, 0.99),
        enqueue_max_us=latencies[-1] / 1000.0 if latencies else 0.0,
        max_depth=report.max_depth,
        drain_s=report.drain_seconds,
        offer_window_s=offered_in,
        throughput_eps=report.ran / elapsed if elapsed > 0 else 0.0,
    )


def scenarios() -> list[Scenario]:
    out: list[Scenario] = []
    for cost in ("noop", "sleep_1ms", "bash_true"):
        for rate in (1_000, 10_000, 100_000):
            out.append(Scenario(f"{cost} @ {rate // 1000}k/s", cost, "rate", rate=rate))
        out.append(Scenario(f"{cost} burst 10000", cost, "burst", events=10_000))
        out.append(Scenario(f"{cost} saturated", cost, "saturate"))
    out.append(Scenario("bash_sleep_50ms burst 1000", "bash_sleep_50ms", "deadline", events=1000))
    return out


def print_table(results: list[Result]) -> None:
    head = (
        f"{'scenario':<28}{'offered':>9}{'ran':>8}{'dropped':>9}{'@close':>7}{'killed':>7}"
        f"{'warn':>5}{'order':>6}{'p50µs':>7}{'p99µs':>7}{'depth':>6}{'drain s':>8}"
        f"{'ran/s':>9}{'checks':>7}"
    )
    print(head)
    print("-" * len(head))
    for r in results:
        print(
            f"{r.name:<28}{r.offered:>9}{r.ran:>8}{r.dropped_full:>9}{r.dropped_at_close:>7}"
            f"{r.killed:>7}{r.warnings:>5}{'yes' if r.order_preserved else 'NO':>6}"
            f"{r.enqueue_p50_us:>7.2f}{r.enqueue_p99_us:>7.2f}{r.max_depth:>6}"
            f"{r.drain_s:>8.3f}{r.throughput_eps:>9.0f}{'ok' if r.checks_pass else 'FAIL':>7}"
        )


def plot(results: list[Result], path: Path) -> str:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed (pip install '.[bench]'): no plot"
    names = [r.name for r in results]
    xs = range(len(results))
    fig, (counts, lat) = plt.subplots(2, 1, figsize=(12, 8), sharex=True)
    ran = [r.ran for r in results]
    full = [r.dropped_full for r in results]
    closing = [r.dropped_at_close for r in results]
    counts.bar(xs, ran, label="ran")
    counts.bar(xs, full, bottom=ran, label="dropped (queue full)")
    counts.bar(
        xs,
        closing,
        bottom=[a + b for a, b in zip(ran, full, strict=True)],
        label="dropped at close",
    )
    counts.set_yscale("symlog")
    counts.set_ylabel("events")
    counts.legend()
    counts.set_title("PostWorker queue limits (capacity 256, 5 s close drain)")
    lat.bar([x - 0.2 for x in xs], [r.enqueue_p50_us for r in results], width=0.4, label="p50")
    lat.bar([x + 0.2 for x in xs], [r.enqueue_p99_us for r in results], width=0.4, label="p99")
    lat.axhline(P99_TARGET_US, color="red", linestyle="--", label="p99 target")
    lat.set_ylabel("enqueue latency (µs)")
    lat.set_xticks(list(xs), names, rotation=45, ha="right")
    lat.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return f"plot: {path}"


async def baseline_wake_us(samples: int = 2000) -> tuple[float, float]:
    """p50/p99 of a bare trio ``send_nowait`` that wakes a waiting receiver after an idle
    pause: the floor under an offer to an idle worker (what the 1k/s rows mostly measure)."""
    send, receive = trio.open_memory_channel[int](1)
    latencies: list[int] = []

    async def drain() -> None:
        async for _ in receive:
            pass

    async with trio.open_nursery() as nursery:
        nursery.start_soon(drain)
        for i in range(samples):
            await trio.sleep(0.0002)
            t0 = time.perf_counter_ns()
            send.send_nowait(i)
            latencies.append(time.perf_counter_ns() - t0)
        send.close()
    latencies.sort()
    return _percentile(latencies, 0.50), _percentile(latencies, 0.99)


async def main_async(window: float) -> tuple[list[Result], tuple[float, float]]:
    results = []
    for scenario in scenarios():
        results.append(await run_scenario(scenario, window))
    return results, await baseline_wake_us()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--window", type=float, default=1.0, help="offering window per rate (s)")
    parser.add_argument("--out", type=Path, default=OUT_DIR)
    args = parser.parse_args(argv)
    started = time.monotonic()
    results, (wake_p50, wake_p99) = trio.run(main_async, args.window)
    print_table(results)

    worst_p99 = max(r.enqueue_p99_us for r in results)
    noop = next(r for r in results if r.cost == "noop" and r.mode == "saturate")
    print()
    print(
        f"target enqueue p99 <= {P99_TARGET_US:.0f} µs: worst {worst_p99:.2f} µs "
        f"-> {'PASS' if worst_p99 <= P99_TARGET_US else 'MISS'}"
    )
    print(
        f"target no-op throughput >= {NOOP_THROUGHPUT_TARGET:.0f}/s: {noop.throughput_eps:.0f}/s "
        f"-> {'PASS' if noop.throughput_eps >= NOOP_THROUGHPUT_TARGET else 'MISS'}"
    )
    print(
        f"baseline: bare trio send_nowait waking an idle receiver: p50 {wake_p50:.2f} µs, "
        f"p99 {wake_p99:.2f} µs"
    )
    failed = [r.name for r in results if not r.checks_pass]
    print(f"exact checks: {'all pass' if not failed else 'FAILED: ' + ', '.join(failed)}")

    args.out.mkdir(parents=True, exist_ok=True)
    out_json = args.out / "queue_limits.json"
    doc = {
        "results": msgspec.to_builtins(results),
        "targets": {
            "enqueue_p99_us": P99_TARGET_US,
            "worst_enqueue_p99_us": worst_p99,
            "noop_throughput_eps": NOOP_THROUGHPUT_TARGET,
            "measured_noop_throughput_eps": noop.throughput_eps,
        },
        "baseline_trio_wake_us": {"p50": wake_p50, "p99": wake_p99},
        "checks_pass": not failed,
        "python": sys.version.split()[0],
        "trio": trio.__version__,
    }
    out_json.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"json: {out_json}")
    print(plot(results, args.out / "queue_limits.png"))
    print(f"total {time.monotonic() - started:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
