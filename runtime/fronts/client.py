"""A small Python client for ``triohooks serve`` (docs/protocol.md): fire, subscribe, ping, stats.

Owns one websocket connection and a reader task that routes the server's frames: replies go to
the call waiting for their ``id`` (so many fires can be in flight at once), event and lagged
frames go to the open subscription through a bounded channel (a consumer that stops reading
stops the reader, and the server then reports ``lagged`` - the server never waits for us). It
must not interpret outcomes or retry anything.

    async with connect("ws://127.0.0.1:8765/", token) as client:
        outcome = await client.fire("pre_tool", {"tool": "bash", "args": {"command": "ls"}})
        async with client.subscribe(["pre_tool"]) as events:
            async for item in events:      # EventRecord or Lagged
                ...
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final
from urllib.parse import quote, urlsplit

import msgspec
import trio
from trio_websocket import ConnectionClosed, WebSocketConnection, wrap_client_stream

from triohooks.combine.outcome import Outcome

from .wire import (
    ErrorReply,
    EventRecord,
    Fire,
    Lagged,
    OutcomeReply,
    Ping,
    Pong,
    ServerMessage,
    Stats,
    StatsReply,
    Subscribe,
    Subscribed,
    Unsubscribe,
    Unsubscribed,
    decode_server,
    encode,
)

#: Event frames the client holds for a slow consumer before it stops reading the socket.
SUBSCRIPTION_BUFFER: Final = 256
#: The closing handshake gets this long before the socket is just closed.
CLOSE_TIMEOUT_S: Final = 2.0

StreamItem = EventRecord | Lagged


class RemoteError(Exception):
    """The server answered a request with an ``error`` frame."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class _Waiter:
    def __init__(self) -> None:
        self.done = trio.Event()
        self.reply: ServerMessage | BaseException | None = None


class HookClient:
    """One connection to ``triohooks serve``. Get one from :func:`connect`."""

    def __init__(self, ws: WebSocketConnection) -> None:
        self.ws = ws
        self._ids = itertools.count(1)
        self._waiting: dict[str | int, _Waiter] = {}
        self._events: trio.MemorySendChannel[StreamItem] | None = None
        self._closed: BaseException | None = None

    # -- requests -----------------------------------------------------------------------------
    async def fire(
        self, event: str, payload: Mapping[str, Any] | None = None, /, **fields: Any
    ) -> Outcome:
        """Fire ``event`` on the server and return its Outcome.

        A checkpoint. Raises :class:`RemoteError` for an ``error`` reply (unknown event, bad
        payload, shutting down) and ``ConnectionClosed`` if the connection ends first. On
        cancel the reply is discarded; the server still runs the event to its end.
        """
        msg_id = f"c{next(self._ids)}"
        data = {**(payload or {}), **fields}
        reply = await self._request(msg_id, Fire(id=msg_id, event=event, payload=data))
        assert isinstance(reply, OutcomeReply)
        return reply.outcome

    async def ping(self) -> None:
        """Round trip a ping. A checkpoint."""
        msg_id = f"c{next(self._ids)}"
        reply = await self._request(msg_id, Ping(id=msg_id))
        assert isinstance(reply, Pong)

    async def stats(self) -> StatsReply:
        """The server's numbers (queue depth, drops, live hook processes, connections ...)."""
        msg_id = f"c{next(self._ids)}"
        reply = await self._request(msg_id, Stats(id=msg_id))
        assert isinstance(reply, StatsReply)
        return reply

    def subscribe(
        self,
        events: Sequence[str] = ("*",),
        kinds: Sequence[str] | None = None,
        *,
        buffer: int = SUBSCRIPTION_BUFFER,
    ) -> Subscription:
        """Stream engine events (:class:`EventRecord`, with :class:`Lagged` when some were lost).

        Use it as ``async with client.subscribe(...) as events: async for item in events`` (the
        subscription ends with the block), or directly as an async iterator,
        ``async for item in client.subscribe(...)`` (it subscribes on the first iteration and
        lasts until :meth:`Subscription.aclose` or the connection closes). Events start flowing
        once the server has confirmed the subscription. One subscription per connection at a
        time.
        """
        return Subscription(self, events, kinds, buffer)

    async def _request(self, msg_id: str, msg: Any) -> ServerMessage:
        if self._closed is not None:
            raise self._closed
        waiter = _Waiter()
        self._waiting[msg_id] = waiter
        try:
            await self.ws.send_message(encode(msg))
            await waiter.done.wait()
        finally:
            self._waiting.pop(msg_id, None)
        reply = waiter.reply
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, ErrorReply):
            raise RemoteError(reply.error.code, reply.error.message)
        assert reply is not None
        return reply

    # -- the reader ---------------------------------------------------------------------------
    async def _read(self) -> None:
        try:
            while True:
                msg = decode_server(await self.ws.get_message())
                if isinstance(msg, EventRecord | Lagged):
                    await self._deliver(msg)
                    continue
                waiter = self._waiting.get(msg.id) if msg.id is not None else None
                if waiter is not None:
                    waiter.reply = msg
                    waiter.done.set()
        except ConnectionClosed as exc:
            self._fail_all(exc)
        except msgspec.DecodeError as exc:
            self._fail_all(exc)
            raise

    async def _deliver(self, item: StreamItem) -> None:
        channel = self._events
        if channel is None:
            return  # frames racing an unsubscribe
        try:
            await channel.send(item)  # waits when the consumer is slow: backpressure
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    def _fail_all(self, exc: BaseException) -> None:
        self._closed = exc
        for waiter in self._waiting.values():
            waiter.reply = exc
            waiter.done.set()
        if self._events is not None:
            self._events.close()


class Subscription:
    """One subscription of a :class:`HookClient` (see :meth:`HookClient.subscribe`): an async
    context manager giving the stream's receive channel, and an async iterator over the stream."""

    def __init__(
        self,
        client: HookClient,
        events: Sequence[str],
        kinds: Sequence[str] | None,
        buffer: int,
    ) -> None:
        self._client = client
        self._filter = Subscribe(events=list(events), kinds=list(kinds) if kinds else None)
        self._buffer = buffer
        self._receive: trio.MemoryReceiveChannel[StreamItem] | None = None
        self._done = False

    async def start(self) -> trio.MemoryReceiveChannel[StreamItem]:
        """Subscribe (once) and return the stream's channel. A checkpoint. Raises
        :class:`RemoteError` for a refused filter (unknown event or kind)."""
        if self._receive is not None:
            return self._receive
        client = self._client
        if client._events is not None:
            raise RuntimeError("this connection already has a subscription")
        if self._done:
            raise RuntimeError("this subscription has ended")
        send, receive = trio.open_memory_channel[StreamItem](self._buffer)
        client._events = send
        try:
            msg_id = f"c{next(client._ids)}"
            reply = await client._request(msg_id, msgspec.structs.replace(self._filter, id=msg_id))
            assert isinstance(reply, Subscribed)
        except BaseException:
            client._events = None
            send.close()
            receive.close()
            raise
        self._receive = receive
        return receive

    async def aclose(self) -> None:
        """End the subscription: no more items, and the server is told (``unsubscribe``).
        A checkpoint; on cancel the connection may still be subscribed. Idempotent."""
        receive, self._receive = self._receive, None
        if receive is None:
            return
        self._done = True
        client = self._client
        send = client._events
        client._events = None
        if send is not None:
            send.close()
        receive.close()
        if client._closed is None:
            msg_id = f"c{next(client._ids)}"
            done = await client._request(msg_id, Unsubscribe(id=msg_id))
            assert isinstance(done, Unsubscribed)

    async def __aenter__(self) -> trio.MemoryReceiveChannel[StreamItem]:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> StreamItem:
        if self._done:
            raise StopAsyncIteration
        receive = self._receive if self._receive is not None else await self.start()
        try:
            return await receive.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            raise StopAsyncIteration from None


@asynccontextmanager
async def open_websocket(
    url: str, headers: Sequence[tuple[bytes, bytes]] = ()
) -> AsyncIterator[WebSocketConnection]:
    """A plain trio-websocket client connection to a ``ws://`` URL, on a TCP stream we own.

    trio-websocket 0.12's ``open_websocket_url`` leaves the socket open when the server rejects
    the handshake or closes first; here the stream is closed on every path. A single exception
    (such as ``ConnectionRejected``) comes out as itself, not in a group.
    """
    parts = urlsplit(url)
    if parts.scheme != "ws" or not parts.hostname:
        raise ValueError(f"not a ws:// URL: {url!r}")
    resource = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        async with (
            await trio.open_tcp_stream(parts.hostname, parts.port or 80) as stream,
            trio.open_nursery() as nursery,
        ):
            ws = await wrap_client_stream(
                nursery, stream, parts.hostname, resource, extra_headers=list(headers)
            )
            try:
                yield ws
            finally:
                with trio.move_on_after(CLOSE_TIMEOUT_S, shield=True):
                    await ws.aclose()
                nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        inner = innermost(group)
        if inner is group:
            raise
        raise inner from None


def innermost(exc: BaseException) -> BaseException:
    """The exception inside single-exception groups (our nurseries wrap what they carry)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


@asynccontextmanager
async def connect(
    url: str, token: str, *, token_in_query: bool = False
) -> AsyncIterator[HookClient]:
    """Connect to ``triohooks serve`` at ``url`` (``ws://host:port/``) with a bearer token.

    The token goes in the ``Authorization`` header, or in ``?token=`` with
    ``token_in_query=True`` (for clients that cannot set headers). Raises
    ``trio_websocket.ConnectionRejected`` (``status_code`` 401) for a wrong token. On exit the
    connection closes with code 1000.
    """
    headers: list[tuple[bytes, bytes]] = []
    if token_in_query:
        url = f"{url}{'&' if '?' in url else '?'}token={quote(token, safe='')}"
    else:
        headers.append((b"Authorization", f"Bearer {token}".encode()))
    try:
        async with open_websocket(url, headers) as ws, trio.open_nursery() as nursery:
            client = HookClient(ws)
            nursery.start_soon(client._read)
            try:
                yield client
            finally:
                nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:  # one failure comes out as itself, e.g. RemoteError
        inner = innermost(group)
        if inner is group:
            raise
        raise inner from None
