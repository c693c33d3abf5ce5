"""serve's protocols without I/O (``fronts/serve_protocol.py``): fed bytes, read for what they
queue. The same rules over real loopback sockets are in tests/test_server_hostile.py."""

from __future__ import annotations

import ast
from http import HTTPStatus
from pathlib import Path

import h11
import pytest
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, CloseConnection, Request, TextMessage

from triohooks.fronts import relay
from triohooks.fronts.serve_protocol import (
    CLOSED,
    INTERIM,
    NEED_DATA,
    TEXT,
    HttpConnection,
    HttpError,
    HttpRequest,
    WebSocket,
    presented_token,
    response,
)
from triohooks.fronts.wire import ErrorReply, decode_server

FRONTS = Path(__file__).resolve().parent.parent / "runtime" / "fronts"


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add("." * node.level + (node.module or ""))
    return names


def test_the_protocols_import_no_trio() -> None:
    """Sans-I/O: the module and the one of ours it imports (``wire``) name no trio."""
    own = _imports(FRONTS / "serve_protocol.py")
    assert {name for name in own if name.startswith(".")} == {".wire"}
    for names in (own, _imports(FRONTS / "wire.py")):
        assert not {name for name in names if name.split(".")[0] in ("trio", "trio_websocket")}


def _read(data: bytes, max_body: int = 1024) -> HttpRequest | str:
    http = HttpConnection(max_body)
    http.receive(data)
    return http.next_request()


HEAD = b"POST /claude/v1/hook HTTP/1.1\r\nHost: x\r\n"


@pytest.mark.parametrize(
    ("framing", "why"),
    [
        (b"Content-Length: 2\r\nTransfer-Encoding: chunked\r\n", "both Content-Length and"),
        (b"transfer-encoding: chunked\r\ncontent-length: 2\r\n", "both Content-Length and"),
        (b"Content-Length: 2\r\nContent-Length: 2\r\n", "more than one Content-Length"),
        (b"Content-Length: 2,2\r\n", "more than one Content-Length"),
    ],
)
def test_ambiguous_body_framing_is_an_error_saying_which(framing: bytes, why: str) -> None:
    with pytest.raises(HttpError) as err:
        _read(HEAD + framing + b"\r\n2\r\n{}\r\n0\r\n\r\n")
    assert err.value.status == 400 and why in str(err.value)


def test_a_request_is_read_whole_and_its_headers_kept() -> None:
    data = (
        HEAD + b"Authorization: Bearer a\r\nAuthorization: Bearer b\r\nContent-Length: 2\r\n\r\n{}"
    )
    request = _read(data)
    assert isinstance(request, HttpRequest) and request.body == b"{}" and request.keep_alive
    with pytest.raises(HttpError, match="more than one authorization header"):
        presented_token(request)
    assert _read(HEAD) == NEED_DATA
    assert _read(b"") == CLOSED
    with pytest.raises(HttpError) as big:
        _read(HEAD + b"Content-Length: 2000\r\n\r\n")
    assert big.value.status == 413


def test_the_answers_are_what_the_relays_read_byte_for_byte() -> None:
    assert INTERIM == relay.BEAT
    answer = response(200, b'{"a":1}')
    assert answer == (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n"
        b'Connection: close\r\n\r\n{"a":1}'
    )


@pytest.mark.parametrize(
    ("status", "keep_alive", "type_", "headers"),
    [
        (200, True, b"application/json", []),
        (200, False, b"application/json", []),
        (401, False, TEXT, [(b"WWW-Authenticate", b'Bearer realm="triohooks"')]),
        (503, False, TEXT, [(b"Retry-After", b"1")]),
    ],
)
def test_an_answer_is_what_h11_would_write_byte_for_byte(
    status: int, keep_alive: bool, type_: bytes, headers: list[tuple[bytes, bytes]]
) -> None:
    """serve writes its answers itself (h11 only reads): the same bytes h11 makes of them."""
    h = h11.Connection(h11.SERVER)
    h.receive_data(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
    assert isinstance(h.next_event(), h11.Request)
    body = b"body\n"
    fields = [
        (b"Content-Type", type_),
        (b"Content-Length", b"%d" % len(body)),
        (b"Connection", b"keep-alive" if keep_alive else b"close"),
        *headers,
    ]
    reason = HTTPStatus(status).phrase.encode()
    expected = h.send(h11.Response(status_code=status, headers=fields, reason=reason))
    expected += h.send(h11.Data(data=body)) + h.send(h11.EndOfMessage())
    assert response(status, body, keep_alive=keep_alive, type_=type_, headers=headers) == expected


def test_a_kept_connection_reads_the_next_request_and_what_was_pipelined() -> None:
    http = HttpConnection(1024)
    two = HEAD + b"Content-Length: 2\r\n\r\n{}" + HEAD + b"Content-Length: 3\r\n\r\n[1]"
    http.receive(two)
    first = http.next_request()
    assert isinstance(first, HttpRequest) and first.body == b"{}" and first.keep_alive
    second = http.next_request()
    assert isinstance(second, HttpRequest) and second.body == b"[1]"
    assert http.next_request() == NEED_DATA
    http.receive(b"")
    assert http.next_request() == CLOSED


def _client_and_server(limit: int) -> tuple[WSConnection, WebSocket]:
    client = WSConnection(ConnectionType.CLIENT)
    http = HttpConnection(1024)
    http.receive(client.send(Request(host="x", target="/")))
    request = http.next_request()
    assert isinstance(request, HttpRequest)
    server = WebSocket(request, limit)
    client.receive_data(server.accept(http.trailing_data))
    assert isinstance(next(client.events()), AcceptConnection)
    return client, server


def test_a_message_over_the_limit_is_refused_as_its_pieces_cross_it() -> None:
    client, server = _client_and_server(limit=10)
    server.receive(client.send(TextMessage(data="12345", message_finished=False)))
    assert server.messages() == [] and server.pending == 0
    server.receive(client.send(TextMessage(data="678901")))  # 11 bytes in all
    assert server.messages() == []
    client.receive_data(server.data_to_send())
    error, close = list(client.events())
    assert isinstance(error, TextMessage)
    reply = decode_server(error.data)
    assert isinstance(reply, ErrorReply) and reply.error.code == "too_big"
    assert isinstance(close, CloseConnection) and close.code == 1009
    assert not server.send_text("after the close")  # nothing follows a close frame
    server.receive(client.send(close.response()))
    server.messages()
    assert server.closed


def test_a_fragmented_message_is_counted_in_utf8_bytes_piece_by_piece() -> None:
    """Each piece is small next to what is left of the limit, the whole is over it: refused
    at the piece that crosses it (never made whole for the server to find too big)."""
    client, server = _client_and_server(limit=10)
    server.receive(client.send(TextMessage(data="éé", message_finished=False)))  # 4 bytes
    assert server.messages() == []
    server.receive(client.send(TextMessage(data="éééé")))  # 8 more: 12
    assert server.messages() == [] and server.closing == 1009


def test_messages_within_the_limit_and_the_clients_close() -> None:
    client, server = _client_and_server(limit=10)
    server.receive(client.send(TextMessage(data="é" * 5)))  # 10 bytes
    assert server.messages() == ["é" * 5]
    server.receive(client.send(CloseConnection(code=1000)))
    assert server.messages() == []
    client.receive_data(server.data_to_send())
    (reply,) = client.events()
    assert isinstance(reply, CloseConnection) and reply.code == 1000
    assert server.closed


def test_a_request_that_is_no_websocket_handshake_is_an_error() -> None:
    request = _read(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert isinstance(request, HttpRequest)
    with pytest.raises(HttpError) as err:
        WebSocket(request, 10)
    assert err.value.status == 400 and "not a websocket handshake" in str(err.value)
