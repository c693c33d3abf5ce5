"""Supervision: dependency order, restart within a budget, loud failure, cancellation passes."""

from __future__ import annotations

import pytest
import trio

from triohooks.actors.supervisor import ActorFailed, Supervisor


async def test_actors_start_in_order_each_ready_before_the_next(autojump_clock) -> None:
    order: list[str] = []

    def actor(name: str, delay: float):
        async def serve(*, task_status=trio.TASK_STATUS_IGNORED) -> None:
            await trio.sleep(delay)
            order.append(f"{name} ready")
            task_status.started()
            await trio.sleep_forever()

        return serve

    async with trio.open_nursery() as nursery:
        sup = Supervisor(nursery)
        await sup.start("loader", actor("loader", 2))
        await sup.start("audit", actor("audit", 1))
        await sup.start("dispatcher", actor("dispatcher", 0))
        nursery.cancel_scope.cancel()
    assert order == ["loader ready", "audit ready", "dispatcher ready"]


async def test_crash_after_ready_restarts(autojump_clock) -> None:
    runs = 0

    async def flaky(*, task_status=trio.TASK_STATUS_IGNORED) -> None:
        nonlocal runs
        runs += 1
        task_status.started()
        await trio.sleep(5)  # 3 crashes in 15 s: under a budget of 5 per 10 s
        if runs < 4:
            raise RuntimeError(f"crash {runs}")
        await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        sup = Supervisor(nursery)
        await sup.start("flaky", flaky)
        await trio.sleep(60)
        nursery.cancel_scope.cancel()
    assert runs == 4 and sup.restarts["flaky"] == 3


async def test_budget_exhausted_fails_loudly_with_the_cause(autojump_clock) -> None:
    async def broken(*, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        await trio.sleep(1)
        raise ValueError("disk on fire")

    with pytest.RaisesGroup(
        pytest.RaisesExc(ActorFailed, match="'audit' crashed 5 times.*disk on fire")
    ):
        async with trio.open_nursery() as nursery:
            await Supervisor(nursery, budget=5, window_s=10).start("audit", broken)
            await trio.sleep_forever()


async def test_crash_before_ready_is_not_retried(autojump_clock) -> None:
    async def cannot_start(*, task_status=trio.TASK_STATUS_IGNORED) -> None:
        raise OSError("no state dir")

    with pytest.RaisesGroup(
        pytest.RaisesExc(OSError, match="no state dir"), flatten_subgroups=True
    ):
        async with trio.open_nursery() as nursery:
            await Supervisor(nursery).start("audit", cannot_start)


async def test_cancellation_propagates_and_is_not_a_crash(autojump_clock) -> None:
    starts = 0

    async def worker(*, task_status=trio.TASK_STATUS_IGNORED) -> None:
        nonlocal starts
        starts += 1
        task_status.started()
        await trio.sleep_forever()

    with trio.move_on_after(3):
        async with trio.open_nursery() as nursery:
            sup = Supervisor(nursery)
            await sup.start("w", worker)
    assert starts == 1 and sup.restarts["w"] == 0
