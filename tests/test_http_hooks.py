"""http hooks: header expansion and the pooled POST client, against real loopback servers.

The servers here are trio tasks on 127.0.0.1, port 0, speaking HTTP/1.1 through h11 (or raw
bytes where a test needs a broken peer). ``loopback_server`` is reused by test_judge.py.
"""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial

import h11
import msgspec
import pytest
import trio

from triohooks.handlers.http import DEFAULT_BODY_CAP, HttpHookClient, expand_headers


class Request(msgspec.Struct):
    method: str
    target: str
    #: Lower-cased names.
    headers: dict[str, str]
    body: bytes


class Reply(msgspec.Struct):
    status: int = 200
    body: bytes = b""
    headers: list[tuple[str, str]] = msgspec.field(default_factory=list)


#: A request handler: return a Reply for h11 to send (keep-alive), or None after writing to the
#: raw stream yourself (the connection is then closed).
App = Callable[[Request, trio.SocketStream], Awaitable[Reply | None]]


class LoopbackServer:
    def __init__(self) -> None:
        self.url = ""
        self.port = 0
        self.connections = 0
        self.requests: list[Request] = []


async def _next_event(conn: h11.Connection, stream: trio.SocketStream) -> object:
    while True:
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            return event
        conn.receive_data(await stream.receive_some(65536))


async def _read_request(conn: h11.Connection, stream: trio.SocketStream) -> Request | None:
    event = await _next_event(conn, stream)
    if not isinstance(event, h11.Request):
        return None
    body = bytearray()
    while True:
        part = await _next_event(conn, stream)
        if isinstance(part, h11.Data):
            body += part.data
        elif isinstance(part, h11.EndOfMessage):
            break
        else:
            return None
    headers = {k.decode().lower(): v.decode() for k, v in event.headers}
    return Request(event.method.decode(), event.target.decode(), headers, bytes(body))


@asynccontextmanager
async def loopback_server(app: App) -> AsyncIterator[LoopbackServer]:
    server = LoopbackServer()

    async def handle(stream: trio.SocketStream) -> None:
        server.connections += 1
        conn = h11.Connection(h11.SERVER)
        try:
            while True:
                request = await _read_request(conn, stream)
                if request is None:
                    return
                server.requests.append(request)
                reply = await app(request, stream)
                if reply is None:
                    return
                headers = [("content-length", str(len(reply.body))), *reply.headers]
                await stream.send_all(
                    conn.send(h11.Response(status_code=reply.status, headers=headers)) or b""
                )
                await stream.send_all(conn.send(h11.Data(data=reply.body)) or b"")
                await stream.send_all(conn.send(h11.EndOfMessage()) or b"")
                if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                    return
                conn.start_next_cycle()
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError):
            return
        finally:
            with trio.move_on_after(1, shield=True):
                await stream.aclose()

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, handle, 0, host="127.0.0.1"))
        server.port = listeners[0].socket.getsockname()[1]
        server.url = f"http://127.0.0.1:{server.port}"
        try:
            yield server
        finally:
            nursery.cancel_scope.cancel()


async def echo_app(request: Request, stream: trio.SocketStream) -> Reply:
    return Reply(body=b'{"decision":"allow"}', headers=[("content-type", "application/json")])


def status_app(status: int, body: bytes = b"") -> App:
    async def app(request: Request, stream: trio.SocketStream) -> Reply:
        return Reply(status=status, body=body, headers=[("location", "/elsewhere")])

    return app


async def never_answers(request: Request, stream: trio.SocketStream) -> Reply | None:
    await trio.sleep_forever()
    raise AssertionError("unreachable")


async def ten_megabytes(request: Request, stream: trio.SocketStream) -> None:
    size = 10 * 1024 * 1024
    await stream.send_all(f"HTTP/1.1 200 OK\r\nContent-Length: {size}\r\n\r\n".encode())
    chunk = b"x" * 65536
    for _ in range(size // len(chunk)):
        await stream.send_all(chunk)


async def closes_mid_body(request: Request, stream: trio.SocketStream) -> None:
    await stream.send_all(b'HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n{"decision":')


EVENT = json.dumps({"event": "pre_tool", "tool": "bash", "args": {"command": "ls"}}).encode()
JSON_HEADERS = {"Content-Type": "application/json"}


# -- header expansion ----------------------------------------------------------------------


def test_expand_headers_only_for_allowed_names() -> None:
    environ = {"TOKEN": "t0k", "SECRET": "s3cret", "EMPTY": ""}
    headers = [
        ("Authorization", "Bearer $TOKEN"),
        ("X-Braced", "${TOKEN}-$TOKEN-${TOKEN}x"),
        ("X-Unlisted", "$SECRET and ${SECRET}"),
        ("X-Typo", "$TOKEM ${TOKNE}"),
        ("X-Unset", "[$MISSING][${MISSING}]"),
        ("X-Empty", "[$EMPTY]"),
        ("X-Not-A-Name", "$1 $ ${} ${TOKEN"),
        ("X-Plain", "no dollars"),
        ("$TOKEN", "names are not expanded"),
    ]
    out = expand_headers(headers, ["TOKEN", "MISSING", "EMPTY"], environ)
    assert out == {
        "Authorization": "Bearer t0k",
        "X-Braced": "t0k-t0k-t0kx",
        "X-Unlisted": "$SECRET and ${SECRET}",
        "X-Typo": "$TOKEM ${TOKNE}",
        "X-Unset": "[][]",
        "X-Empty": "[]",
        "X-Not-A-Name": "$1 $ ${} ${TOKEN",
        "X-Plain": "no dollars",
        "$TOKEN": "names are not expanded",
    }
    assert "s3cret" not in json.dumps(out)


def test_expand_headers_name_boundary() -> None:
    # $TOKEN_X is the variable TOKEN_X, not TOKEN followed by "_X".
    out = expand_headers([("h", "$TOKEN_X|$TOKEN.x")], ["TOKEN"], {"TOKEN": "t", "TOKEN_X": "no"})
    assert out == {"h": "$TOKEN_X|t.x"}


# -- POST against real servers -------------------------------------------------------------


async def test_post_sends_the_event_and_reads_a_2xx_body() -> None:
    with trio.fail_after(5):
        async with loopback_server(echo_app) as server, HttpHookClient() as client:
            headers = {
                **JSON_HEADERS,
                **expand_headers([("Authorization", "Bearer $T")], ["T"], {"T": "abc"}),
            }
            reply = await client.post(
                server.url + "/hook", body=EVENT, headers=headers, timeout_s=5
            )
    assert reply.status == "ok", reply
    assert reply.status_code == 200
    assert reply.body == '{"decision":"allow"}'
    assert reply.body_bytes == len(reply.body)
    assert not reply.truncated and reply.error is None
    assert reply.duration_ms > 0
    [request] = server.requests
    assert (request.method, request.target, request.body) == ("POST", "/hook", EVENT)
    assert request.headers["content-type"] == "application/json"
    assert request.headers["authorization"] == "Bearer abc"
    assert request.headers["user-agent"] == "triohooks"


async def test_one_pooled_connection_serves_many_posts() -> None:
    with trio.fail_after(5):
        async with loopback_server(echo_app) as server, HttpHookClient() as client:
            for _ in range(5):
                reply = await client.post(server.url, body=EVENT, headers={}, timeout_s=5)
                assert reply.status == "ok"
    assert len(server.requests) == 5
    assert server.connections == 1


async def test_concurrent_posts_share_the_client() -> None:
    replies = []

    async def one(client: HttpHookClient, url: str) -> None:
        replies.append(await client.post(url, body=EVENT, headers={}, timeout_s=5))

    with trio.fail_after(5):
        async with (
            loopback_server(echo_app) as server,
            HttpHookClient() as client,
            trio.open_nursery() as nursery,
        ):
            for _ in range(8):
                nursery.start_soon(one, client, server.url)
    assert [r.status for r in replies] == ["ok"] * 8
    assert len(server.requests) == 8


async def test_500_is_a_failure_that_keeps_the_body() -> None:
    with trio.fail_after(5):
        async with (
            loopback_server(status_app(500, b"boom\n  at line 3")) as server,
            HttpHookClient() as client,
        ):
            reply = await client.post(server.url, body=EVENT, headers={}, timeout_s=5)
    assert reply.status == "error"
    assert reply.status_code == 500
    assert reply.error == "HTTP 500: boom at line 3"
    assert reply.body == "boom\n  at line 3"


async def test_redirect_is_not_followed() -> None:
    with trio.fail_after(5):
        async with loopback_server(status_app(302)) as server, HttpHookClient() as client:
            reply = await client.post(server.url, body=EVENT, headers={}, timeout_s=5)
    assert (reply.status, reply.status_code, reply.error) == ("error", 302, "HTTP 302")
    assert len(server.requests) == 1


async def test_204_with_empty_body_is_ok() -> None:
    with trio.fail_after(5):
        async with loopback_server(status_app(204)) as server, HttpHookClient() as client:
            reply = await client.post(server.url, body=EVENT, headers={}, timeout_s=5)
    assert (reply.status, reply.status_code, reply.body) == ("ok", 204, "")


async def test_server_that_never_answers_times_out() -> None:
    with trio.fail_after(5):
        async with loopback_server(never_answers) as server, HttpHookClient() as client:
            reply = await client.post(server.url, body=EVENT, headers={}, timeout_s=0.2)
            assert reply.status == "timeout"
            assert reply.error == "timed out after 0.2 s"
            assert reply.status_code is None
            assert reply.duration_ms >= 200
            # The pool is still usable after a timed-out exchange.
            async with loopback_server(echo_app) as good:
                again = await client.post(good.url, body=EVENT, headers={}, timeout_s=5)
            assert again.status == "ok"


async def test_cancel_from_outside_propagates() -> None:
    with trio.fail_after(5):
        async with loopback_server(never_answers) as server, HttpHookClient() as client:
            returned = False
            with trio.move_on_after(0.1) as outer:
                await client.post(server.url, body=EVENT, headers={}, timeout_s=60)
                returned = True
            assert outer.cancelled_caught and not returned


async def test_ten_megabytes_are_read_but_only_the_cap_is_kept() -> None:
    with trio.fail_after(10):
        async with loopback_server(ten_megabytes) as server, HttpHookClient() as client:
            reply = await client.post(server.url, body=EVENT, headers={}, timeout_s=5)
    assert reply.status == "ok"
    assert reply.truncated
    assert reply.body == "x" * DEFAULT_BODY_CAP
    assert reply.body_bytes == 10 * 1024 * 1024


async def endless_body(request: Request, stream: trio.SocketStream) -> None:
    await stream.send_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
    while True:
        await stream.send_all(b"4000\r\n" + b"y" * 0x4000 + b"\r\n")


async def test_endless_body_ends_in_the_timeout() -> None:
    with trio.fail_after(5):
        async with loopback_server(endless_body) as server, HttpHookClient() as client:
            reply = await client.post(server.url, body=EVENT, headers={}, timeout_s=0.3)
    assert reply.status == "timeout"
    assert reply.truncated and reply.body == "y" * DEFAULT_BODY_CAP


async def test_custom_cap_and_a_body_exactly_at_the_cap() -> None:
    with trio.fail_after(5):
        async with (
            loopback_server(status_app(200, b"a" * 100)) as server,
            HttpHookClient() as client,
        ):
            exact = await client.post(server.url, body=b"", headers={}, timeout_s=5, cap=100)
            over = await client.post(server.url, body=b"", headers={}, timeout_s=5, cap=99)
    assert (exact.status, exact.truncated, len(exact.body)) == ("ok", False, 100)
    assert (over.status, over.truncated, len(over.body)) == ("ok", True, 99)


async def test_server_closing_mid_body_is_a_failure() -> None:
    with trio.fail_after(5):
        async with loopback_server(closes_mid_body) as server, HttpHookClient() as client:
            reply = await client.post(server.url, body=EVENT, headers={}, timeout_s=5)
    assert reply.status == "error"
    assert reply.status_code == 200
    assert reply.error is not None and "RemoteProtocolError" in reply.error


async def test_connection_refused_is_a_failure() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again before the POST: nothing listens there
    with trio.fail_after(5):
        async with HttpHookClient() as client:
            reply = await client.post(
                f"http://127.0.0.1:{port}/", body=EVENT, headers={}, timeout_s=5
            )
    assert reply.status == "error"
    assert reply.status_code is None
    assert reply.error is not None and reply.error.startswith("ConnectError")


async def test_tls_failure_is_a_failure() -> None:
    # https to a plain-HTTP server: the TLS handshake fails.
    with trio.fail_after(5):
        async with loopback_server(echo_app) as server, HttpHookClient() as client:
            url = f"https://127.0.0.1:{server.port}/"
            reply = await client.post(url, body=EVENT, headers={}, timeout_s=5)
    assert reply.status == "error"
    assert reply.error is not None and reply.error.startswith("TLS error:")


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/x", "not a url", "http://"])
async def test_bad_url_is_a_failure_not_a_crash(url: str) -> None:
    with trio.fail_after(5):
        async with HttpHookClient() as client:
            reply = await client.post(url, body=EVENT, headers={}, timeout_s=5)
    assert reply.status == "error" and reply.error


async def test_bad_header_value_is_a_failure_not_a_crash() -> None:
    with trio.fail_after(5):
        async with loopback_server(echo_app) as server, HttpHookClient() as client:
            reply = await client.post(
                server.url, body=EVENT, headers={"X-Bad": "a\r\nb: c"}, timeout_s=5
            )
    assert reply.status == "error" and reply.error


async def test_non_utf8_body_is_decoded_with_replacement() -> None:
    with trio.fail_after(5):
        async with (
            loopback_server(status_app(200, b"ok \xff\xfe end")) as server,
            HttpHookClient() as client,
        ):
            reply = await client.post(server.url, body=EVENT, headers={}, timeout_s=5)
    assert reply.status == "ok"
    assert reply.body == "ok \ufffd\ufffd end"
    assert reply.body_bytes == 9
