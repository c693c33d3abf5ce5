"""The broadcast fan-out: one publisher, many subscribers, and a publisher that never waits.

Owns the per-subscriber bounded ring buffers behind the websocket event stream. The
publisher calls :meth:`Broadcaster.publish` synchronously (from an engine listener, which must
not block); each subscriber has its own ring of ``capacity`` items. When a subscriber's ring is
full the oldest item is overwritten and counted; the subscriber's next receive raises
:class:`Lagged` with that count, after which it receives the items that were kept (the newest
ones). A slow or stalled subscriber therefore costs the publisher and the other subscribers
nothing but one ``deque.append`` each - the pattern of tractor's broadcast channel, with one ring
per subscriber instead of a shared one so a filter can be applied at publish time.

A subscriber may also take items synchronously (:attr:`Subscription.direct`): while its ring is
empty and nothing was lost, the publisher first offers the item to that callable, and only when
it declines does the item go to the ring. The server uses it to queue an event frame at once
on a connection whose outgoing queue is short (its writer task sends it), without waking a task
per subscriber per record.

It must not encode, send or know about websockets (the server does), and must never await in
:meth:`Broadcaster.publish`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Final, Generic, TypeVar

import trio

T = TypeVar("T")

#: Items kept per subscriber before the oldest are overwritten.
DEFAULT_CAPACITY: Final = 1024


class Lagged(Exception):
    """The subscriber fell behind and ``missed`` items were overwritten before it read them."""

    def __init__(self, missed: int) -> None:
        super().__init__(f"subscriber lagged: {missed} item(s) lost")
        self.missed = missed


class Subscription(Generic[T]):
    """One subscriber's ring buffer. Get one from :meth:`Broadcaster.subscribe`."""

    def __init__(
        self, broadcaster: Broadcaster[T], capacity: int, accept: Callable[[T], bool] | None
    ) -> None:
        self._broadcaster = broadcaster
        self._ring: deque[T] = deque(maxlen=capacity)
        self._capacity = capacity
        #: Overwritten since the last :class:`Lagged` was raised.
        self._missed = 0
        #: Overwritten over the subscription's life.
        self.missed_total = 0
        self.received = 0
        self.accept = accept
        #: A synchronous receiver: called with an accepted item while the ring is empty and
        #: nothing was lost; True means it took the item (it is counted as received), False
        #: that the item goes to the ring. It must not raise, nor close a subscription.
        self.direct: Callable[[T], bool] | None = None
        self._wakeup: trio.Event | None = None
        self._closed = False

    # -- publisher side (sync, never waits) ---------------------------------------------------
    def _push(self, item: T) -> None:
        if len(self._ring) == self._capacity:
            self._missed += 1
            self.missed_total += 1
        self._ring.append(item)  # maxlen: drops the oldest when full
        if self._wakeup is not None:
            self._wakeup.set()
            self._wakeup = None

    def _end(self) -> None:
        self._closed = True
        if self._wakeup is not None:
            self._wakeup.set()
            self._wakeup = None

    # -- subscriber side ----------------------------------------------------------------------
    @property
    def pending(self) -> int:
        """Items waiting in the ring."""
        return len(self._ring)

    def receive_nowait(self) -> T:
        """The oldest kept item. Raises :class:`Lagged` first if items were lost since the
        last call, ``trio.WouldBlock`` when the ring is empty, ``trio.EndOfChannel`` when the
        broadcaster is closed and the ring is drained, ``trio.ClosedResourceError`` after
        :meth:`close`."""
        if self._missed:
            missed, self._missed = self._missed, 0
            raise Lagged(missed)
        if self._ring:
            self.received += 1
            return self._ring.popleft()
        if self._closed:
            if self._broadcaster.closed:
                raise trio.EndOfChannel
            raise trio.ClosedResourceError("subscription is closed")
        raise trio.WouldBlock

    async def wait(self) -> None:
        """Return once :meth:`receive_nowait` has something to say: an item, :class:`Lagged`,
        or the end. Always a checkpoint. Takes nothing from the ring, so a caller that goes on
        to :meth:`receive_nowait` without awaiting in between holds what it took alone."""
        if self._ring or self._missed or self._closed:
            await trio.lowlevel.checkpoint()
            return
        while not (self._ring or self._missed or self._closed):
            self._wakeup = event = trio.Event()
            await event.wait()

    async def receive(self) -> T:
        """Wait for the next item (see :meth:`receive_nowait` for what it raises).

        Always a checkpoint. Cancel-safe: an item is removed from the ring only when returned.
        """
        while True:
            try:
                item = self.receive_nowait()
            except trio.WouldBlock:
                self._wakeup = event = trio.Event()
                await event.wait()
                continue
            await trio.lowlevel.checkpoint()
            return item

    def __aiter__(self) -> Subscription[T]:
        return self

    async def __anext__(self) -> T:
        try:
            return await self.receive()
        except trio.EndOfChannel:
            raise StopAsyncIteration from None

    def close(self) -> None:
        """Stop receiving: the publisher forgets this subscriber; a waiting receive wakes up."""
        self._broadcaster._remove(self)
        self.direct = None
        self._end()


class Broadcaster(Generic[T]):
    """Fan ``publish(item)`` out to every subscriber whose ``accept(item)`` is true."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 1:
            raise ValueError("capacity must be >= 1")
        self.capacity = capacity
        self._subscribers: list[Subscription[T]] = []
        self.published = 0
        self.closed = False

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)

    @property
    def missed_total(self) -> int:
        """Items overwritten across the current subscribers."""
        return sum(s.missed_total for s in self._subscribers)

    def publish(self, item: T) -> None:
        """Give ``item`` to every accepting subscriber. Sync; never waits, never raises for a
        slow subscriber (its oldest item is overwritten instead). Ignored once closed."""
        if self.closed:
            return
        self.published += 1
        for sub in self._subscribers:
            accept = sub.accept
            if accept is None or accept(item):
                direct = sub.direct
                if direct is not None and not sub._ring and not sub._missed and direct(item):
                    sub.received += 1
                else:
                    sub._push(item)

    def subscribe(
        self, accept: Callable[[T], bool] | None = None, *, capacity: int | None = None
    ) -> Subscription[T]:
        """A new subscriber that sees items published from now on (filtered by ``accept``).
        Call :meth:`Subscription.close` when done, or use :meth:`subscription`."""
        if self.closed:
            raise trio.ClosedResourceError("broadcaster is closed")
        sub = Subscription(self, capacity or self.capacity, accept)
        self._subscribers.append(sub)
        return sub

    @contextmanager
    def subscription(
        self, accept: Callable[[T], bool] | None = None, *, capacity: int | None = None
    ) -> Iterator[Subscription[T]]:
        sub = self.subscribe(accept, capacity=capacity)
        try:
            yield sub
        finally:
            sub.close()

    def close(self) -> None:
        """No more items: each subscriber drains its ring, then gets ``EndOfChannel``."""
        self.closed = True
        for sub in self._subscribers:
            sub._end()

    def _remove(self, sub: Subscription[T]) -> None:
        try:
            self._subscribers.remove(sub)
        except ValueError:
            pass
