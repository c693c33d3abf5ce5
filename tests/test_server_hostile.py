"""``triohooks serve`` against hostile clients: the real server on 127.0.0.1
port 0, real trio-websocket clients, and raw clients that build their frames by hand over a trio
TCP stream (wsproto only for the handshake and for reading the server's frames)."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import msgspec
import psutil
import pytest
import trio
from trio_websocket import ConnectionClosed
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, CloseConnection, Event, Request, TextMessage

from triohooks.fronts.client import connect, open_websocket
from triohooks.fronts.server import HookServer
from triohooks.fronts.wire import (
    MAX_DEPTH,
    ErrorReply,
    OutcomeReply,
    Pong,
    WireError,
    decode_client,
    decode_server,
)

from .serving import handshake, running_server

pytestmark = pytest.mark.slow
TOKEN = "hostile-token-0123456789"
AUTH = [(b"Authorization", f"Bearer {TOKEN}".encode())]
TEXT, CONTINUATION = 0x1, 0x0


def running(tmp_path: Path, **settings: Any) -> AbstractAsyncContextManager[HookServer]:
    return running_server(tmp_path, TOKEN, **{"close_timeout_s": 2, **settings})


def client_frame(opcode: int, payload: bytes, *, fin: bool = True) -> bytes:
    """One masked client frame with any payload (wsproto would refuse invalid UTF-8 text)."""
    mask = os.urandom(4)
    n = len(payload)
    head = bytes([(0x80 if fin else 0) | opcode])
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 1 << 16:
        head += bytes([0x80 | 126]) + n.to_bytes(2, "big")
    else:
        head += bytes([0x80 | 127]) + n.to_bytes(8, "big")
    key = (mask * (n // 4 + 1))[:n]
    masked = (int.from_bytes(payload, "big") ^ int.from_bytes(key, "big")).to_bytes(n, "big")
    return head + mask + masked


class RawClient:
    """A websocket client at the byte level: wsproto for the handshake and to parse what the
    server sends, hand-built frames for what we send."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.ws = WSConnection(ConnectionType.CLIENT)
        self.eof = False

    async def next_event(self) -> Event | None:
        """The server's next event, or None at EOF."""
        while True:
            for event in self.ws.events():
                return event
            data = await self.stream.receive_some()
            if not data:
                self.eof = True
                return None
            self.ws.receive_data(data)

    async def next_close(self) -> CloseConnection | None:
        """The server's close frame (other frames skipped), or None at EOF before one."""
        while True:
            event = await self.next_event()
            if event is None or isinstance(event, CloseConnection):
                return event

    async def answer_and_wait_for_eof(self, close: CloseConnection) -> None:
        await self.stream.send_all(self.ws.send(close.response()))
        while await self.next_event() is not None:
            pass

    async def read_until_close(self) -> CloseConnection | None:
        """Frames until the server's close frame (answered), then the server's EOF."""
        close = await self.next_close()
        if close is not None:
            await self.answer_and_wait_for_eof(close)
        return close


@asynccontextmanager
async def raw_client(server: HookServer) -> AsyncIterator[RawClient]:
    async with await trio.open_tcp_stream(server.host, server.port) as stream:
        client = RawClient(stream)
        request = Request(host=server.host, target="/", extra_headers=AUTH)
        await stream.send_all(client.ws.send(request))
        assert isinstance(await client.next_event(), AcceptConnection)
        yield client


async def _echo(fields: Any) -> dict[str, Any]:
    return {"additional_context": "fired"}


def _server_errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


# -- nesting ------------------------------------------------------------------------------------
HOSTILE_DECODES = [
    "[" * 200_000,
    "{" * 200_000,
    '{"a":' * 100_000,
    b"[" * 200_000,
    '{"type":"ping","id":1,"pad":' + "[" * 5_000 + "]" * 5_000 + "}",  # deep unknown field
    '{"type":"ping","id":true,"pad":' + "[" * 5_000 + "]" * 5_000 + "}",  # and a type error
    '{"type":"subscribe","events":' + "[" * 300 + "]" * 300 + "}",
    '"\ud800"',  # a str no websocket can deliver: a lone surrogate
    b"\xff\xfe",
]


@pytest.mark.parametrize("frame", HOSTILE_DECODES, ids=range(len(HOSTILE_DECODES)))
def test_decoding_raises_nothing_but_wire_errors(frame: str | bytes) -> None:
    with pytest.raises(WireError) as err:
        decode_client(frame)
    assert err.value.code in ("invalid_json", "invalid_message")


def test_nesting_is_capped_at_max_depth_whatever_the_stack() -> None:
    def fire(levels: int) -> str:  # levels of the whole frame: the frame object is level 1
        inner = "[" * (levels - 2) + "]" * (levels - 2)
        return f'{{"type":"fire","id":"n","event":"pre_tool","payload":{{"a":{inner}}}}}'

    assert decode_client(fire(MAX_DEPTH)).id == "n"
    with pytest.raises(WireError) as err:
        decode_client(fire(MAX_DEPTH + 1))
    assert (err.value.code, err.value.id) == ("invalid_json", "n")
    wide = [{"a": [1, {"b": [2]}]}] * 2_000  # many brackets, shallow: accepted
    frame = msgspec.json.encode({"type": "fire", "id": 1, "event": "e", "payload": {"w": wide}})
    assert decode_client(frame).id == 1


async def test_nested_brackets_get_invalid_json_and_the_connection_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    deep_fire = '{"type":"fire","id":"deep","event":"pre_tool","payload":{"a":'
    deep_fire += "[" * 200 + "]" * 200 + "}}"
    with trio.fail_after(15):
        async with running(tmp_path) as server, open_websocket(server.url, AUTH) as ws:
            server.engine.add_hook("pre_tool", _echo)
            await ws.send_message("[" * 200_000)  # 200 kB of brackets: RecursionError inside
            nested = decode_server(await ws.get_message())
            await ws.send_message(deep_fire)  # valid JSON msgspec decodes, deeper than MAX_DEPTH
            too_deep = decode_server(await ws.get_message())
            fire = {"type": "fire", "id": "ok", "event": "pre_tool", "payload": {"tool": "t"}}
            await ws.send_message(msgspec.json.encode(fire).decode())
            fired = decode_server(await ws.get_message())
            stats = server.stats(None)
    assert isinstance(nested, ErrorReply) and nested.error.code == "invalid_json"
    assert nested.id is None and "nested deeper" in nested.error.message
    assert isinstance(too_deep, ErrorReply) and too_deep.error.code == "invalid_json"
    assert too_deep.id == "deep"
    assert isinstance(fired, OutcomeReply) and fired.id == "ok"
    assert fired.outcome.additional_context == "fired"
    assert stats.connections == 1
    assert _server_errors(caplog) == []


# -- invalid UTF-8 ------------------------------------------------------------------------------
async def test_invalid_utf8_in_a_text_frame_is_closed_with_1007(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with trio.fail_after(15):
        async with running(tmp_path) as server:
            # Control: a valid two-byte character split across two fragments is accepted.
            async with raw_client(server) as split:
                first = client_frame(TEXT, b'{"type":"ping","id":"\xc3', fin=False)
                await split.stream.send_all(first + client_frame(CONTINUATION, b'\xa9"}'))
                pong = await split.next_event()
            async with raw_client(server) as bad:
                await bad.stream.send_all(client_frame(TEXT, b"\xff\xfe"))
                close = await bad.read_until_close()
                bad_eof = bad.eof
            # And in a continuation frame, after a valid start.
            async with raw_client(server) as bad_tail:
                first = client_frame(TEXT, b'{"type":"ping",', fin=False)
                await bad_tail.stream.send_all(first + client_frame(CONTINUATION, b"\xff}"))
                tail_close = await bad_tail.read_until_close()
            async with raw_client(server) as unmasked:  # any other protocol error: 1002
                await unmasked.stream.send_all(b"\x81\x02hi")
                protocol_close = await unmasked.read_until_close()
            async with connect(server.url, TOKEN) as other:  # the server goes on
                await other.ping()
    assert isinstance(pong, TextMessage)
    assert decode_server(pong.data) == Pong(id="é")
    assert protocol_close is not None and protocol_close.code == 1002
    assert close is not None and close.code == 1007, close
    assert bad_eof  # the server closed the TCP connection after its close frame
    assert tail_close is not None and tail_close.code == 1007
    assert _server_errors(caplog) == []


# -- message size and memory --------------------------------------------------------------------
async def test_oversize_message_is_closed_1009_and_memory_stays_bounded(tmp_path: Path) -> None:
    limit = 64 * 1024
    clients, held_kb, piece = 50, 900, 16 * 1024
    # One non-final text frame, then continuation frames: a fragmented message never finished.
    start = client_frame(TEXT, b"x" * piece, fin=False)
    more = client_frame(CONTINUATION, b"x" * piece, fin=False)
    codes: list[int | None] = []
    me = psutil.Process()

    async def hold_a_fragmented_message(server: HookServer) -> None:
        async with raw_client(server) as client:

            async def send_fragments() -> None:
                try:
                    await client.stream.send_all(start)
                    for _ in range(held_kb * 1000 // piece):
                        await client.stream.send_all(more)
                except trio.BrokenResourceError:
                    pass
                await trio.sleep_forever()  # holding it, unfinished

            async with trio.open_nursery() as sending:
                sending.start_soon(send_fragments)
                close = await client.next_close()  # while still sending
                sending.cancel_scope.cancel()
            codes.append(close.code if close is not None else None)
            if close is not None:
                await client.answer_and_wait_for_eof(close)

    with trio.fail_after(30):
        async with running(tmp_path, max_message_bytes=limit) as server:
            before = me.memory_info().rss
            async with trio.open_nursery() as nursery:
                for _ in range(clients):
                    nursery.start_soon(hold_a_fragmented_message, server)
            grown = me.memory_info().rss - before
            # A trio-websocket client sending one message over the cap sees the close frame.
            async with open_websocket(server.url, AUTH) as ws:
                await ws.send_message("x" * (limit + 1))
                too_big = decode_server(await ws.get_message())
                with pytest.raises(ConnectionClosed) as closed:
                    await ws.get_message()
            async with connect(server.url, TOKEN) as other:
                await other.ping()
    assert codes == [1009] * clients
    assert isinstance(too_big, ErrorReply) and too_big.error.code == "too_big"
    assert closed.value.reason is not None and closed.value.reason.code == 1009
    # Each connection buffered at most the limit and one read (64 KiB each here), not
    # 900 kB: 50 x 900 kB would be 45 MB.
    assert grown < 20_000_000, grown


# -- connection cap -----------------------------------------------------------------------------
async def test_connection_cap_refuses_politely_while_existing_connections_work(
    tmp_path: Path,
) -> None:
    with trio.fail_after(15):
        async with (
            running(tmp_path, max_connections=3) as server,
            connect(server.url, TOKEN) as a,
            connect(server.url, TOKEN) as b,
            connect(server.url, TOKEN) as c,
        ):
            refused = await handshake(server, TOKEN)
            for client in (a, b, c):
                await client.ping()
            stats = await a.stats()
            counted = server.refused_full
    assert refused is not None and refused.status_code == 503
    assert (b"retry-after", b"1") in [(k.lower(), v) for k, v in refused.headers]
    assert refused.body is not None and b"connection limit (3)" in refused.body
    assert stats.connections == 3 and counted == 1


async def test_after_a_refusal_a_connection_below_the_cap_works(tmp_path: Path) -> None:
    with trio.fail_after(15):
        async with (
            running(tmp_path, max_connections=2) as server,
            connect(server.url, TOKEN) as a,
        ):
            async with connect(server.url, TOKEN):
                refused = await handshake(server, TOKEN)
            while server.slots_in_use > 1:  # the slot is free once the socket is closed
                await trio.sleep(0.01)
            async with connect(server.url, TOKEN) as late:
                await late.ping()
                again = await handshake(server, TOKEN)  # full again
            await a.ping()
    assert refused is not None and refused.status_code == 503
    assert again is not None and again.status_code == 503


async def test_a_new_connection_evicts_the_oldest_that_sent_no_whole_request(
    tmp_path: Path,
) -> None:
    # Slots full of connections that never finish their first request (a slowloris): each new
    # connection closes the oldest of them unread, so a real client still gets in -- the port
    # is never shut (an agent's http transport would read that as "go on").
    with trio.fail_after(15):
        async with running(tmp_path, max_connections=2, handshake_timeout_s=30) as server:
            async with (
                await trio.open_tcp_stream(server.host, server.port) as s1,
                await trio.open_tcp_stream(server.host, server.port) as s2,
            ):
                await s1.send_all(b"GET / HTTP/1.1\r\n")  # two slow handshakes
                while server.handshakes < 1:
                    await trio.sleep(0.01)
                await s2.send_all(b"POST /claude/v1/hook HTTP/1.1\r\n")
                while server.handshakes < 2:
                    await trio.sleep(0.01)
                async with connect(server.url, TOKEN) as client:  # evicts s1, the oldest
                    await client.ping()
                assert await s1.receive_some() == b""  # closed, nothing answered
                assert server.handshakes == 1  # s2 still sending; a free slot: no eviction
                async with connect(server.url, TOKEN) as again:
                    await again.ping()
            cut = server.refused_handshakes
    assert cut == 1


async def test_a_request_that_is_no_handshake_frees_its_slot_with_its_400(tmp_path: Path) -> None:
    """A plain GET, a PUT, a line of noise: each is answered 400 and closed, and its handshake
    slot is free at once -- not after the handshake timeout -- so a client repeating them
    cannot hold the port shut against real websockets and agent requests."""
    with trio.fail_after(10):
        async with running(tmp_path, max_connections=2, handshake_timeout_s=60) as server:
            for request in (
                b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
                b"PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
                b"HELLO\r\n\r\n",
            ):
                async with await trio.open_tcp_stream(server.host, server.port) as s:
                    await s.send_all(request)
                    answer = b""
                    while chunk := await s.receive_some():
                        answer += chunk
                    assert answer.startswith(b"HTTP/1.1 400 "), answer
            while server.handshakes:  # (within the fail_after: far less than the timeout)
                await trio.sleep(0.01)
            async with connect(server.url, TOKEN) as client:
                await client.ping()
            assert server.refused_handshakes == 0


# -- request framing and slots ------------------------------------------------------------------
async def _exchange(server: HookServer, request: bytes) -> bytes:
    """Send ``request`` on a new TCP connection and read until the server closes its side;
    the connection is left open from ours meanwhile."""
    async with await trio.open_tcp_stream(server.host, server.port) as stream:
        await stream.send_all(request)
        answer = b""
        while chunk := await stream.receive_some():
            answer += chunk
        return answer


def _post(headers: str, body: bytes = b"{}") -> bytes:
    return (
        f"POST /claude/v1/hook HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n{headers}"
        "\r\n"
    ).encode() + body


@pytest.mark.parametrize(
    ("headers", "why"),
    [
        (
            "Content-Length: 2\r\nTransfer-Encoding: chunked\r\n",
            "both Content-Length and Transfer-Encoding",
        ),
        ("Transfer-Encoding: chunked\r\nContent-Length: 2\r\n", "both Content-Length and"),
        ("Content-Length: 2\r\nContent-Length: 2\r\n", "more than one Content-Length"),
        ("Content-Length: 2\r\nContent-Length: 5\r\n", "Content-Length"),
        ("Content-Length: 2, 2\r\n", "more than one Content-Length"),
    ],
)
async def test_a_request_whose_body_framing_is_ambiguous_is_refused_400(
    tmp_path: Path, headers: str, why: str
) -> None:
    """Two readers could cut such a request in two different places (a smuggled request):
    it is refused, saying why, never read one way or the other; its slot is free at once."""
    with trio.fail_after(10):
        async with running(tmp_path, max_connections=1) as server:
            answer = await _exchange(server, _post(headers, b"2\r\n{}\r\n0\r\n\r\n"))
            assert server.handshakes == 0
            ok = await _exchange(server, _post("Content-Length: 2\r\nConnection: close\r\n"))
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 "), answer
    assert why in msgspec.json.decode(body)["error"]
    assert ok.startswith(b"HTTP/1.1 200 OK\r\n"), ok


async def test_an_answered_or_refused_request_frees_its_slot_at_once(tmp_path: Path) -> None:
    """With one slot of each kind: a refused handshake (401), a refused agent request (no
    token: a deny), an answered one, and a 400 each leave their client holding the connection
    open; the next websocket and agent request still get in, far before any timeout."""
    refused_post = _post("Content-Length: 2\r\n").replace(TOKEN.encode(), b"wrong")
    answered_post = _post("Content-Length: 2\r\nConnection: close\r\n")
    with trio.fail_after(10):
        async with (
            running(tmp_path, max_connections=1, handshake_timeout_s=60) as server,
            trio.open_nursery() as holders,
        ):
            rejected = await handshake(server, "wrong")
            for request in (refused_post, answered_post, b"PUT / HTTP/1.1\r\nHost: x\r\n\r\n"):
                stream = await trio.open_tcp_stream(server.host, server.port)
                await stream.send_all(request)
                answer = b""
                while chunk := await stream.receive_some():  # to the server's FIN
                    answer += chunk
                assert answer.startswith((b"HTTP/1.1 200 ", b"HTTP/1.1 400 ")), answer
                holders.start_soon(stream.aclose)  # (held open until then)
            assert (server.handshakes, server.slots_in_use) == (0, 0)
            async with connect(server.url, TOKEN) as client:
                await client.ping()
            assert (await _exchange(server, answered_post)).startswith(b"HTTP/1.1 200 OK")
    assert rejected is not None and rejected.status_code == 401


async def test_an_oversized_message_closes_the_connection_within_2_s(tmp_path: Path) -> None:
    """Whether the client answers the close frame or not, and whether it is still sending:
    the ``too_big`` error, close 1009, and the server's end of the connection, all within
    2 s of the message crossing the limit."""
    limit = 64 * 1024
    crossing = client_frame(TEXT, b"x" * (limit + 1))
    piece = client_frame(CONTINUATION, b"y" * 1024, fin=False)

    async def never_answers(server: HookServer, keep_sending: bool) -> list[Event | None]:
        async with raw_client(server) as client, trio.open_nursery() as nursery:

            async def send_more() -> None:
                with contextlib.suppress(trio.BrokenResourceError):
                    await client.stream.send_all(client_frame(TEXT, b"z", fin=False))
                    while True:
                        await client.stream.send_all(piece)
                        await trio.sleep(0.01)

            await client.stream.send_all(crossing if not keep_sending else crossing[:-1])
            if keep_sending:
                await client.stream.send_all(crossing[-1:])
                nursery.start_soon(send_more)
            seen: list[Event | None] = []
            with trio.fail_after(2):
                while (event := await client.next_event()) is not None:
                    seen.append(event)
            nursery.cancel_scope.cancel()
            return [*seen, None]

    with trio.fail_after(15):
        async with running(tmp_path, max_message_bytes=limit) as server:
            quiet = await never_answers(server, keep_sending=False)
            busy = await never_answers(server, keep_sending=True)
            async with connect(server.url, TOKEN) as other:
                await other.ping()
    for seen in (quiet, busy):
        error, close, end = seen
        assert isinstance(error, TextMessage)
        reply = decode_server(error.data)
        assert isinstance(reply, ErrorReply) and reply.error.code == "too_big"
        assert isinstance(close, CloseConnection) and close.code == 1009
        assert end is None
