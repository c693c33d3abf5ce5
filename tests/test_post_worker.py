"""The ordered background worker: queue, drops, warning episodes, containment, the 5 s close.

All timing runs on the autojump clock against fake runners (sleeps and gates). Every item the
tests offer carries one "hook": its own sequence number, so a fake sees which item it runs.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable
from typing import NamedTuple

import pytest
import trio
import trio.testing

from triohooks.actors.post_worker import (
    CONSUME_BATCH,
    BackgroundItem,
    PostWorker,
    WorkerReport,
    encode_payload,
)
from triohooks.handlers.replies import RunResult
from triohooks.handlers.runner import HookInput


class Item(NamedTuple):
    """What a fake sees of one queued item."""

    seq: int
    payload: bytes


class PerItem:
    """A runner for the tests' one-hook items: calls ``fn(Item(seq, payload))``."""

    def __init__(self, fn: Callable[[Item], Awaitable[None]]) -> None:
        self.fn = fn

    async def run(self, hook: int, hook_input: HookInput) -> RunResult:
        await self.fn(Item(hook, hook_input.payload))
        return RunResult(outcome="ok")


class FakeHooks:
    """A runner that records what ran, with optional per-item sleep and a gate."""

    def __init__(self, *, sleep: float = 0.0, gated: bool = False) -> None:
        self.sleep = sleep
        self.gate = trio.Semaphore(0) if gated else None
        self.started: list[int] = []
        self.finished: list[int] = []
        self.fail_on: set[int] = set()

    async def run(self, hook: int, hook_input: HookInput) -> RunResult:
        await self(Item(hook, hook_input.payload))
        return RunResult(outcome="ok")

    async def __call__(self, item: Item) -> None:
        self.started.append(item.seq)
        if self.gate is not None:
            await self.gate.acquire()
        if self.sleep:
            await trio.sleep(self.sleep)
        if item.seq in self.fail_on:
            raise ValueError(f"hook bug on {item.seq}")
        self.finished.append(item.seq)


def offer(worker: PostWorker, n: int = 1, event: str = "post_tool") -> list[bool]:
    return [
        worker.offer(event=event, session_id="s1", payload=b"{}", hooks=(worker.last_seq + 1,))
        for _ in range(n)
    ]


def assert_accounted(report: WorkerReport) -> None:
    assert report.offered == report.ran + report.dropped_full + report.dropped_at_close


async def test_runs_in_order_one_at_a_time(autojump_clock: trio.testing.MockClock) -> None:
    running = 0
    most = 0
    seen: list[int] = []

    async def run(item: Item) -> None:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await trio.sleep(0.001 * (item.seq % 7))
        seen.append(item.seq)
        running -= 1

    worker = PostWorker(PerItem(run))
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            worker.attach(nursery)
            for _ in range(100):
                offer(worker, 3)
                await trio.sleep(0.004)
            report = await worker.close()
    assert seen == list(range(1, 301))
    assert most == 1
    assert report.ran == 300 and report.dropped_full == 0 and report.dropped_at_close == 0
    assert_accounted(report)


async def test_payload_is_taken_at_fire_time(autojump_clock: trio.testing.MockClock) -> None:
    got: list[bytes] = []

    async def run(item: Item) -> None:
        got.append(item.payload)

    worker = PostWorker(PerItem(run))
    data = {"tool": "bash", "result": {"out": "first"}}
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            worker.attach(nursery)
            worker.offer(
                event="post_tool", session_id="s", payload=encode_payload(data), hooks=(1,)
            )
            data["result"]["out"] = "mutated"  # type: ignore[index]
            await worker.close()
    assert got == [b'{"tool":"bash","result":{"out":"first"}}']


async def test_starts_on_first_use_and_offer_never_awaits(
    autojump_clock: trio.testing.MockClock,
) -> None:
    hooks = FakeHooks(gated=True)
    worker = PostWorker(hooks)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            worker.attach(nursery)
            await trio.testing.wait_all_tasks_blocked()
            assert not nursery.child_tasks  # nothing runs before the first event
            assert offer(worker, 5) == [True] * 5  # while the first one is stuck in its hook
            await trio.testing.wait_all_tasks_blocked()
            assert len(nursery.child_tasks) == 1
            assert hooks.started == [1]
            assert worker.depth == 4
            hooks.gate.release()  # type: ignore[union-attr]
            for _ in range(4):
                hooks.gate.release()  # type: ignore[union-attr]
            report = await worker.close()
    assert hooks.finished == [1, 2, 3, 4, 5]
    assert report.ran == 5


async def test_full_queue_drops_and_warns_once_per_episode(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="triohooks.post_worker")
    hooks = FakeHooks(gated=True)
    warnings: list[str] = []
    drops: list[tuple[int, str]] = []
    worker = PostWorker(
        hooks,
        capacity=4,
        on_warning=warnings.append,
        on_drop=lambda item, why: drops.append((item.seq, why)),
    )
    gate = hooks.gate
    assert gate is not None
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            worker.attach(nursery)
            offer(worker)  # seq 1 is taken by the consumer and blocks in its hook
            await trio.testing.wait_all_tasks_blocked()
            assert offer(worker, 7) == [True] * 4 + [False] * 3  # seqs 2-5 queued, 6-8 dropped
            assert worker.depth == 4
            assert len(warnings) == 1 and "falling behind" in warnings[0]
            assert drops == [(6, "full"), (7, "full"), (8, "full")]
            # Drop log records are written by the drop logger once the caller yields.
            assert not [r for r in caplog.records if r.getMessage().startswith("dropped")]
            await trio.testing.wait_all_tasks_blocked()
            assert len([r for r in caplog.records if r.getMessage().startswith("dropped")]) == 3

            # Partly drained is still the same episode: no second warning.
            gate.release()
            await trio.testing.wait_all_tasks_blocked()
            assert worker.depth == 3
            assert offer(worker, 2) == [True, False]  # seq 9 queued, seq 10 dropped
            assert len(warnings) == 1

            # Drained to empty ends the episode; the next overflow warns again.
            for _ in range(5):
                gate.release()
            await trio.testing.wait_all_tasks_blocked()
            assert worker.depth == 0 and hooks.finished == [1, 2, 3, 4, 5, 9]
            assert offer(worker) == [True]  # seq 11 runs and blocks
            await trio.testing.wait_all_tasks_blocked()
            assert offer(worker, 5) == [True] * 4 + [False]
            assert len(warnings) == 2
            stats = worker.stats()
            assert stats.warnings == 2 and stats.dropped_full == 5 and stats.max_depth == 4
            for _ in range(5):
                gate.release()
            report = await worker.close()
    assert report.ran == 11 and report.dropped_full == 5 and report.dropped_at_close == 0
    assert_accounted(report)
    drop_logs = [r for r in caplog.records if r.getMessage().startswith("dropped background")]
    assert len(drop_logs) == 5
    assert "post_tool (session s1, 1 hooks, seq 6): queue full" in drop_logs[0].getMessage()
    assert all(r.levelno == logging.WARNING for r in drop_logs)


async def test_a_crash_in_one_event_is_contained(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    hooks = FakeHooks(sleep=0.01)
    hooks.fail_on = {2, 4}

    async def run(item: Item) -> None:
        if item.seq == 3:
            raise ExceptionGroup("group bug", [KeyError("x")])
        await hooks(item)

    worker = PostWorker(PerItem(run))
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            worker.attach(nursery)
            offer(worker, 6)
            report = await worker.close()
    assert hooks.finished == [1, 5, 6]
    assert report.ran == 6 and report.failed == 3
    crashes = [r for r in caplog.records if "crashed" in r.getMessage()]
    assert [r.exc_info[1].__class__ for r in crashes if r.exc_info] == [
        ValueError,
        ExceptionGroup,
        ValueError,
    ]
    assert "seq 2" in crashes[0].getMessage()


async def test_close_drains_for_5s_then_kills_and_drops(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    hooks = FakeHooks(sleep=0.7)
    drops: list[tuple[int, str]] = []
    worker = PostWorker(hooks, on_drop=lambda it, why: drops.append((it.seq, why)))
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            worker.attach(nursery)
            offer(worker, 10)
            start = trio.current_time()
            report = await worker.close()
            took = trio.current_time() - start
            # Intake is stopped: a late event is dropped and counted.
            assert offer(worker) == [False]
    # 7 events finish by 4.9 s; the 8th is running at the 5 s deadline.
    assert hooks.finished == [1, 2, 3, 4, 5, 6, 7]
    assert hooks.started[-1] == 8
    assert report.ran == 7 and report.dropped_at_close == 3 and report.killed == 1
    assert report.drain_seconds == pytest.approx(5.0)
    # The running hook was cancelled at the deadline (its run kills its own group).
    assert took == pytest.approx(5.0)
    assert drops == [(8, "killed"), (9, "close"), (10, "close"), (11, "closed")]
    assert_accounted(worker.stats())
    assert worker.stats().dropped_at_close == 4
    (summary,) = [r for r in caplog.records if "worker closed" in r.getMessage()]
    assert summary.levelno == logging.WARNING
    assert "offered 10, ran 7 (0 failed), dropped 0 when full and 3 at close, killed 1" in (
        summary.getMessage()
    )


async def test_close_with_a_short_queue_does_not_kill(
    autojump_clock: trio.testing.MockClock,
) -> None:
    hooks = FakeHooks(sleep=0.5)
    worker = PostWorker(hooks)
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            worker.attach(nursery)
            offer(worker, 4)
            report = await worker.close()
    assert report.ran == 4 and report.dropped_at_close == 0 and report.killed == 0
    assert report.drain_seconds == pytest.approx(2.0)
    assert await worker.close() is report  # idempotent


async def test_close_returns_promptly_when_a_hook_ignores_cancel(
    autojump_clock: trio.testing.MockClock,
) -> None:
    finished: list[int] = []

    async def stuck(item: Item) -> None:
        with trio.CancelScope(shield=True):
            await trio.sleep(100)
        finished.append(item.seq)

    worker = PostWorker(PerItem(stuck))
    with trio.fail_after(300):
        async with trio.open_nursery() as nursery:
            worker.attach(nursery)
            offer(worker, 3)
            start = trio.current_time()
            report = await worker.close()
            took = trio.current_time() - start
    # 5 s drain + the 3 s exit bound, then it gives up on the stuck event.
    assert took == pytest.approx(8.0)
    assert report.ran == 0 and report.dropped_at_close == 3
    # The stuck event finishing later is not counted twice.
    assert finished == [1]
    assert_accounted(worker.stats())
    assert worker.stats() == report


async def test_close_cancelled_still_stops_and_counts(
    autojump_clock: trio.testing.MockClock,
) -> None:
    hooks = FakeHooks(sleep=1.0)
    worker = PostWorker(hooks)
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            worker.attach(nursery)
            offer(worker, 5)
            with trio.move_on_after(1.5) as scope:
                await worker.close()
            assert scope.cancelled_caught
    report = worker.stats()
    assert hooks.finished == [1]
    assert report.ran == 1 and report.dropped_at_close == 4 and report.killed == 1
    assert_accounted(report)


async def test_without_a_consumer_everything_is_dropped_at_close(
    autojump_clock: trio.testing.MockClock,
) -> None:
    hooks = FakeHooks()
    worker = PostWorker(hooks, capacity=2)
    with trio.fail_after(10):
        assert offer(worker, 3) == [True, True, False]
        report = await worker.close()
    assert hooks.started == []
    assert report.dropped_full == 1 and report.dropped_at_close == 2 and report.warnings == 1
    assert report.drain_seconds == 0
    assert_accounted(report)


async def test_serve_started_by_the_engine_and_not_twice_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    hooks = FakeHooks()
    worker = PostWorker(hooks)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await nursery.start(worker.serve)
            with pytest.raises(RuntimeError, match="already running"):
                await worker.serve()
            offer(worker, 2)
            report = await worker.close()
    assert hooks.finished == [1, 2] and report.ran == 2


async def test_a_broken_callback_does_not_break_intake(
    autojump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    def bad(*_: object) -> None:
        raise RuntimeError("observer bug")

    worker = PostWorker(FakeHooks(), capacity=1, on_warning=bad, on_drop=bad)
    assert offer(worker, 3) == [True, False, False]
    assert worker.stats().dropped_full == 2
    assert sum("callback" in r.getMessage() for r in caplog.records) == 3
    with trio.fail_after(10):
        await worker.close()


async def test_outer_cancel_stops_the_consumer_and_close_counts_the_rest(
    autojump_clock: trio.testing.MockClock,
) -> None:
    hooks = FakeHooks(sleep=1.0)
    worker = PostWorker(hooks)
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            worker.attach(nursery)
            offer(worker, 4)
            await trio.sleep(1.5)
            nursery.cancel_scope.cancel()
        report = await worker.close()
    assert report.ran == 1 and report.dropped_at_close == 3
    assert report.drain_seconds == 0
    assert_accounted(report)


@pytest.mark.parametrize("seed", range(8))
async def test_random_schedules_keep_order_and_accounting(
    autojump_clock: trio.testing.MockClock, seed: int
) -> None:
    rng = random.Random(seed)
    seen: list[int] = []
    warnings: list[str] = []
    episodes = 0
    in_episode = False
    accepted: list[int] = []

    def on_drop(item: BackgroundItem, why: str) -> None:
        nonlocal episodes, in_episode
        if why == "full" and not in_episode:
            in_episode = True
            episodes += 1

    async def run(item: Item) -> None:
        nonlocal in_episode
        try:
            await trio.sleep(rng.choice([0, 0.001, 0.01, 0.05]))
            if rng.random() < 0.05:
                raise OSError("flaky hook")
            seen.append(item.seq)
        finally:
            if worker.depth == 0:
                in_episode = False

    worker = PostWorker(
        PerItem(run), capacity=rng.choice([1, 8, 32]), on_warning=warnings.append, on_drop=on_drop
    )
    with trio.fail_after(600):
        async with trio.open_nursery() as nursery:
            worker.attach(nursery)
            seq = 0
            for _ in range(200):
                for _ in range(rng.randrange(0, 40)):
                    seq += 1
                    if offer(worker) == [True]:
                        accepted.append(seq)
                await trio.sleep(rng.choice([0, 0.001, 0.02, 0.2]))
            report = await worker.close()
    assert_accounted(report)
    assert report.offered == seq
    assert seen == sorted(seen) and set(seen) <= set(accepted)
    assert len(seen) == report.ran - report.failed
    assert report.warnings == len(warnings) == episodes


async def test_cheap_hooks_still_let_other_tasks_run(
    autojump_clock: trio.testing.MockClock,
) -> None:
    ticks = 0
    seen_at: list[int] = []

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await trio.lowlevel.checkpoint()

    async def noop(item: Item) -> None:
        seen_at.append(ticks)

    worker = PostWorker(PerItem(noop))
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            worker.attach(nursery)
            assert offer(worker, 200) == [True] * 200
            nursery.start_soon(ticker)
            report = await worker.close()
            nursery.cancel_scope.cancel()
    assert report.ran == 200
    # The consumer takes runs of cheap events back to back but yields every 16 at most
    # (trio may schedule it twice in a row around the ticker, hence 32).
    runs: dict[int, int] = {}
    for t in seen_at:
        runs[t] = runs.get(t, 0) + 1
    assert max(runs.values()) <= 2 * CONSUME_BATCH and len(runs) >= 200 // (2 * CONSUME_BATCH)


async def test_an_item_carries_its_hooks_to_the_runner_in_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[tuple[str, str, bytes, str]] = []

    class Recording:
        async def run(self, hook: str, hook_input: HookInput) -> RunResult:
            seen.append((hook, hook_input.event, hook_input.payload, hook_input.session_id))
            return (
                RunResult(outcome="error", error="boom") if hook == "b" else RunResult(outcome="ok")
            )

    worker = PostWorker(Recording())
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            worker.attach(nursery)
            worker.offer(event="session_end", session_id="s9", payload=b"{}", hooks=("a", "b", "c"))
            report = await worker.close()
    # A failed hook is logged, not fatal: the item's later hooks still run.
    assert seen == [(h, "session_end", b"{}", "s9") for h in ("a", "b", "c")]
    assert report.ran == 1 and report.failed == 0


async def test_a_crashed_consumer_is_contained_restarts_and_loses_nothing_queued(
    autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    hooks = FakeHooks(gated=True)
    worker = PostWorker(hooks)
    real = PostWorker._run_one
    crashes = 0

    async def crash_once(self: PostWorker, item: BackgroundItem) -> None:
        nonlocal crashes
        if crashes == 0:
            crashes += 1
            raise RuntimeError("a bug in the consumer loop")
        await real(self, item)

    monkeypatch.setattr(PostWorker, "_run_one", crash_once)
    neighbour_done = False

    async def neighbour() -> None:
        # Something else in the same nursery (an event's caller, another actor): the
        # consumer's crash must not cancel it.
        nonlocal neighbour_done
        await trio.sleep(1)
        neighbour_done = True

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(neighbour)
            worker.attach(nursery)
            assert offer(worker, 3) == [True] * 3
            await trio.sleep(0.1)
            for _ in range(2):
                hooks.gate.release()  # type: ignore[union-attr]
            await trio.sleep(2)
            report = await worker.close()
    assert neighbour_done
    assert worker.crashes == 1
    assert hooks.finished == [2, 3]
    assert report.ran == 3 and report.failed == 1
    assert_accounted(report)
