"""serve's protocols without I/O (``fronts/serve_protocol.py``): fed bytes, read for what they
queue. The same rules over real loopback sockets are in tests/test_server_hostile.py."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, CloseConnection, Request, TextMessage

from triohooks.fronts import relay
from triohooks.fronts.serve_protocol import (
    CLOSED,
    NEED_DATA,
    HttpConnection,
    HttpError,
    HttpRequest,
    WebSocket,
    presented_token,
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
    http = HttpConnection(1024)
    http.receive(HEAD + b"Content-Length: 2\r\nConnection: close\r\n\r\n{}")
    request = http.next_request()
    assert isinstance(request, HttpRequest) and not request.keep_alive
    assert http.interim() == relay.BEAT
    answer = http.respond(200, b'{"a":1}', keep_alive=False)
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n") and answer.endswith(b'\r\n\r\n{"a":1}')
    assert b"Content-Length: 7\r\n" in answer


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
