"""The broadcast fan-out: per-subscriber rings, lag counting, a publisher that never waits."""

from __future__ import annotations

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from triohooks.actors.broadcast import Broadcaster, Lagged, Subscription


def drain(sub: Subscription[int]) -> list[int | str]:
    """Everything receivable now; a lag shows as "lagged:N"."""
    out: list[int | str] = []
    while True:
        try:
            out.append(sub.receive_nowait())
        except Lagged as lag:
            out.append(f"lagged:{lag.missed}")
        except trio.WouldBlock:
            return out


def test_every_subscriber_gets_every_item_in_order() -> None:
    hub: Broadcaster[int] = Broadcaster(capacity=8)
    a, b = hub.subscribe(), hub.subscribe()
    for i in range(5):
        hub.publish(i)
    assert drain(a) == drain(b) == [0, 1, 2, 3, 4]
    assert hub.published == 5


def test_a_full_ring_loses_the_oldest_and_says_how_many() -> None:
    hub: Broadcaster[int] = Broadcaster(capacity=4)
    sub = hub.subscribe()
    for i in range(10):
        hub.publish(i)
    assert drain(sub) == ["lagged:6", 6, 7, 8, 9]
    assert sub.missed_total == 6 and hub.missed_total == 6
    hub.publish(10)
    assert drain(sub) == [10]  # no second lag report without new losses


def test_a_stalled_subscriber_costs_the_others_nothing() -> None:
    hub: Broadcaster[int] = Broadcaster(capacity=4)
    stalled, healthy = hub.subscribe(), hub.subscribe()
    got: list[int | str] = []
    for i in range(100):
        hub.publish(i)  # sync: returns whatever the stalled one does
        got += drain(healthy)
    assert got == list(range(100))
    assert drain(stalled) == ["lagged:96", 96, 97, 98, 99]


def test_filter_applies_at_publish() -> None:
    hub: Broadcaster[int] = Broadcaster(capacity=2)
    evens = hub.subscribe(lambda i: i % 2 == 0)
    for i in range(4):
        hub.publish(i)
    assert drain(evens) == [0, 2]  # odd items neither delivered nor counted as lost


async def test_receive_waits_for_a_publish() -> None:
    hub: Broadcaster[int] = Broadcaster()
    sub = hub.subscribe()
    got: list[int] = []

    async def reader() -> None:
        got.append(await sub.receive())

    with trio.fail_after(1):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(reader)
            await trio.testing.wait_all_tasks_blocked()
            assert got == []
            hub.publish(7)
    assert got == [7]


async def test_close_drains_then_ends_and_unsubscribe_forgets() -> None:
    hub: Broadcaster[int] = Broadcaster()
    with hub.subscription() as sub, hub.subscription() as gone:
        gone.close()
        assert hub.subscribers == 1
        hub.publish(1)
        hub.close()
        hub.publish(2)  # ignored once closed
        with trio.fail_after(1):
            assert [i async for i in sub] == [1]
        with pytest.raises(trio.EndOfChannel):
            await sub.receive()
    assert hub.subscribers == 0
    with pytest.raises(trio.ClosedResourceError):
        hub.subscribe()


def test_closed_subscription_raises() -> None:
    hub: Broadcaster[int] = Broadcaster()
    sub = hub.subscribe()
    sub.close()
    hub.publish(1)
    with pytest.raises(trio.ClosedResourceError):
        sub.receive_nowait()


@given(
    capacity=st.integers(1, 6),
    ops=st.lists(st.one_of(st.just("pub"), st.just("recv")), max_size=60),
)
def test_received_plus_missed_is_published_and_order_holds(capacity: int, ops: list[str]) -> None:
    hub: Broadcaster[int] = Broadcaster(capacity=capacity)
    sub = hub.subscribe()
    received: list[int] = []
    missed = 0
    n = 0

    def take() -> None:
        nonlocal missed
        for item in drain(sub):
            if isinstance(item, str):
                missed += int(item.split(":")[1])
            else:
                received.append(item)

    for op in ops:
        if op == "pub":
            hub.publish(n)
            n += 1
        else:
            try:
                received.append(sub.receive_nowait())
            except Lagged as lag:
                missed += lag.missed
            except trio.WouldBlock:
                pass
    take()
    assert received == sorted(received) and len(set(received)) == len(received)
    assert len(received) + missed == n
    assert sub.pending == 0
