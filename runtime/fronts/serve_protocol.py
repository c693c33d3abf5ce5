"""serve's protocols without I/O: HTTP/1.1 requests (h11) and websocket framing (wsproto).

Owns what ``serve`` reads off a connection and the bytes it answers with, as plain state
machines fed bytes by the trio server (:mod:`.server`): a request's head and body (h11, plus
the framing rules h11 leaves open: ``Content-Length`` together with ``Transfer-Encoding``, or
two ``Content-Length`` values, are refused, since two readers could cut such a request in two
different places), the bodies' size limit, the bytes of every answer (:func:`response`) and
the relay protocol's interim ``102`` (:data:`INTERIM`); the websocket handshake's validation
and ``101`` (wsproto), the frames, the message size limit (an over-long message is refused
with a ``too_big`` error and close 1009 as soon as its buffered part crosses the limit,
fragmented or not), and the close handshake (1002 / 1007 from wsproto's parse failures).

It must not import trio, nor do I/O, nor decide what a request is answered (the server and
:mod:`.agent_http` do).
"""

from __future__ import annotations

from collections.abc import Iterable
from http import HTTPStatus
from typing import Final
from urllib.parse import parse_qs, urlsplit

import h11
import msgspec
from wsproto import ConnectionType, WSConnection
from wsproto.connection import ConnectionState
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Ping,
    TextMessage,
)
from wsproto.events import Request as WebSocketRequest
from wsproto.utilities import RemoteProtocolError as WebSocketHandshakeError

from .wire import CLOSE_TOO_BIG, WireError, encode

#: A request's line and headers, at most (431 beyond).
MAX_HEAD_BYTES: Final = 64 * 1024
JSON: Final = b"application/json"
TEXT: Final = b"text/plain"


class HttpError(Exception):
    """A request that cannot be answered: ``status`` and what was wrong. ``eof``: the client
    closed the connection, so nothing is answered."""

    def __init__(self, status: int, message: str, *, eof: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.eof = eof


class HttpRequest(msgspec.Struct):
    """One whole request: header names lower-case, every header kept (a repeated one too)."""

    method: str
    target: bytes
    headers: list[tuple[bytes, bytes]]
    keep_alive: bool
    body: bytes = b""

    def header(self, name: bytes) -> bytes | None:
        """The value of header ``name`` (lower-case), None when absent. Raises
        :class:`HttpError` (400) when it is there more than once: never the first or the
        last of two silently."""
        found = [value for key, value in self.headers if key == name]
        if len(found) > 1:
            raise HttpError(400, f"more than one {name.decode()} header")
        return found[0] if found else None


#: :meth:`HttpConnection.next_request`: more bytes are needed / the client closed an idle
#: connection.
NEED_DATA: Final = "need data"
CLOSED: Final = "closed"


def _framing_conflict(head: bytes) -> str | None:
    """What is wrong with the body framing of a request head, as sent (h11 takes one of two
    ``Content-Length`` headers with the same value, and lets ``Transfer-Encoding`` win over
    ``Content-Length``); None when nothing is."""
    low = head.lower()
    if low.count(b"content-length") + low.count(b"transfer-encoding") < 2 and b"," not in low:
        return None  # (the usual request: one framing header, one value)
    lengths = encodings = 0
    for line in head.split(b"\n")[1:]:
        name, sep, value = line.partition(b":")
        if not sep or name[:1] in (b" ", b"\t"):
            continue  # the end of the head, or a folded continuation line
        name = name.strip().lower()
        if name == b"content-length":
            lengths += 1 + value.count(b",")
        elif name == b"transfer-encoding":
            encodings += 1
    if lengths > 1:
        return "more than one Content-Length"
    if lengths and encodings:
        return "both Content-Length and Transfer-Encoding"
    return None


class HttpConnection:
    """The server side of one HTTP/1.1 connection: feed it bytes (:meth:`receive`), take whole
    requests (:meth:`next_request`). h11 reads the requests; the answers are :func:`response`
    and :data:`INTERIM`, written by the caller in between."""

    def __init__(self, max_body: int) -> None:
        self.max_body = max_body
        self._h11 = _reader()
        self._request: HttpRequest | None = None
        self._body = bytearray()
        self._eof = False

    def receive(self, data: bytes) -> None:
        """Bytes from the client; ``b""`` when it closed its side."""
        self._eof = self._eof or not data
        if self._h11.their_state is not h11.ERROR:
            self._h11.receive_data(data)

    @property
    def mid_request(self) -> bool:
        """Part of a request was received, not all of it."""
        return self._h11.their_state is h11.SEND_BODY or (
            self._h11.their_state is h11.IDLE and bool(self._h11.trailing_data[0])
        )

    @property
    def trailing_data(self) -> bytes:
        """What the client sent after an upgrade request (the first websocket frames)."""
        return self._h11.trailing_data[0]

    def next_request(self) -> HttpRequest | str:
        """The next whole request, :data:`NEED_DATA`, or :data:`CLOSED` (the client closed a
        connection between requests). Raises :class:`HttpError` for a request that cannot be
        read: its status (400, 413, 431, 501) and what was wrong."""
        h = self._h11
        if h.their_state is h11.DONE:  # the last one was answered: a reader for the next one
            data, closed = h.trailing_data  # (pipelined bytes, and whether the client closed)
            h = self._h11 = _reader()
            if data:
                h.receive_data(data)
            if closed:
                h.receive_data(b"")
        while True:
            head = h.trailing_data[0] if h.their_state is h11.IDLE else b""
            try:
                event = h.next_event()
            except h11.RemoteProtocolError as exc:
                if self._eof:  # (an idle connection's end is ConnectionClosed)
                    why = "the client closed the connection mid-request"
                    raise HttpError(400, why, eof=True) from None
                raise HttpError(exc.error_status_hint, str(exc)) from None
            if event is h11.NEED_DATA or event is h11.PAUSED:
                return NEED_DATA
            if isinstance(event, h11.ConnectionClosed):
                return CLOSED
            if isinstance(event, h11.Request):
                self._start(event, head[: len(head) - len(h.trailing_data[0])])
            elif isinstance(event, h11.Data):
                self._body += event.data
                if len(self._body) > self.max_body:
                    raise HttpError(413, f"body over {self.max_body} bytes")
            elif isinstance(event, h11.EndOfMessage) and self._request is not None:
                request, self._request = self._request, None
                request.body, self._body = bytes(self._body), bytearray()
                return request

    def _start(self, event: h11.Request, head: bytes) -> None:
        conflict = _framing_conflict(head)
        if conflict is not None:
            raise HttpError(400, f"the request has {conflict}: its body cannot be told apart")
        headers = list(event.headers)  # (h11's Headers is slow to walk: once)
        length = [v for k, v in headers if k == b"content-length"]
        if length and int(length[0]) > self.max_body:
            raise HttpError(413, f"body over {self.max_body} bytes")
        connection = [v.lower() for k, v in headers if k == b"connection"]
        self._request = HttpRequest(
            method=event.method.decode("latin-1"),
            target=event.target,
            headers=headers,
            keep_alive=event.http_version == b"1.1" and not any(b"close" in v for v in connection),
        )


def _reader() -> h11.Connection:
    return h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)


def _reason(status: int) -> bytes:
    return HTTPStatus(status).phrase.encode()


#: ``HTTP/1.1 102 Processing``: the relay protocol's acknowledgement and heartbeat.
INTERIM: Final = b"HTTP/1.1 102 %s\r\n\r\n" % _reason(102)


def response(
    status: int,
    body: bytes,
    *,
    keep_alive: bool = False,
    type_: bytes = JSON,
    headers: Iterable[tuple[bytes, bytes]] = (),
) -> bytes:
    """The bytes of every answer serve gives: the status line, ``Content-Type``,
    ``Content-Length``, ``Connection`` (``keep_alive``: the connection stays open for the next
    request, which only a request that was read whole and allows it may ask), ``headers``,
    the body. Made here rather than by h11, which would validate these same headers on every
    answer; its output, byte for byte (tests/test_serve_protocol.py)."""
    status_line = b"HTTP/1.1 %d %s\r\n" % (status, _reason(status))
    fields = b"".join(b"%s: %s\r\n" % field for field in headers)
    connection = b"keep-alive" if keep_alive else b"close"
    head = b"Content-Type: %s\r\nContent-Length: %d\r\nConnection: %s\r\n%s\r\n" % (
        type_,
        len(body),
        connection,
        fields,
    )
    return status_line + head + body


def error_body(why: object) -> bytes:
    """An error answer's JSON body: ``{"error": why}``."""
    return msgspec.json.encode({"error": str(why)})


def bearer_token(request: HttpRequest) -> str | None:
    """What ``Authorization: Bearer ...`` says (stripped; may be empty), None without one.
    Raises :class:`HttpError` for two ``Authorization`` headers."""
    given = request.header(b"authorization") or b""
    scheme, _, credential = given.decode("latin-1").partition(" ")
    return credential.strip() if scheme.lower() == "bearer" else None


def presented_token(request: HttpRequest) -> str | None:
    """The bearer token of a websocket handshake: :func:`bearer_token`, else the ``token``
    query parameter. Raises :class:`HttpError` for two ``Authorization`` headers."""
    given = bearer_token(request)
    if given is not None:
        return given
    tokens = parse_qs(urlsplit(request.target.decode("latin-1")).query).get("token")
    return tokens[0] if tokens else None


class WebSocket:
    """The server side of one websocket, from its handshake on. Feed it bytes
    (:meth:`receive`), take the client's whole messages (:meth:`messages`), queue frames
    (:meth:`send_text`, :meth:`close`) and take the bytes to write (:meth:`data_to_send`).

    A message is buffered until it is whole, at most ``max_message`` UTF-8 bytes of it: the
    part that crosses the limit queues a ``too_big`` error and close 1009. wsproto's parse
    failures (1002 protocol error, 1007 invalid UTF-8) queue a close frame with their code.
    Once a close frame is queued nothing else is, and what the client still sends is read and
    dropped until its close frame (:attr:`closed`)."""

    def __init__(self, request: HttpRequest, max_message: int) -> None:
        """Validate ``request``'s handshake. Raises :class:`HttpError` (400) saying what is
        wrong with it."""
        self._ws = WSConnection(ConnectionType.SERVER)
        try:
            self._ws.initiate_upgrade_connection(request.headers, request.target)
        except WebSocketHandshakeError as exc:
            raise HttpError(400, f"not a websocket handshake: {exc}") from None
        assert any(isinstance(e, WebSocketRequest) for e in self._ws.events())
        self.max_message = max_message
        self._parts: list[str | bytes] = []
        self._size = 0
        self._out = bytearray()
        #: The code of the close this side started (ours, or a parse failure's), or None.
        self.closing: int | None = None

    def accept(self, trailing: bytes) -> bytes:
        """The ``101`` answer; ``trailing``: what the client sent after its handshake."""
        out = self._ws.send(AcceptConnection())
        if trailing:
            self._ws.receive_data(trailing)
        return out

    @property
    def open(self) -> bool:
        return self._ws.state is ConnectionState.OPEN

    @property
    def closed(self) -> bool:
        """Both close frames went (or the client's side of the connection ended)."""
        return self._ws.state is ConnectionState.CLOSED

    def receive(self, data: bytes) -> None:
        """Bytes from the client; ``b""`` when it closed its side."""
        if not data:
            if not self.closed:
                self._ws.receive_data(None)
        elif self._ws.state in (ConnectionState.OPEN, ConnectionState.LOCAL_CLOSING):
            self._ws.receive_data(data)

    def messages(self) -> list[str | bytes]:
        """The client's messages made whole by what was received; pongs and the answer to a
        close frame queued."""
        out: list[str | bytes] = []
        for event in self._ws.events():
            if isinstance(event, (TextMessage, BytesMessage)):
                piece = event.data if isinstance(event.data, str) else bytes(event.data)
                if self.open and self._take(piece) and event.message_finished:
                    parts, self._parts, self._size = self._parts, [], 0
                    out.append(_joined(parts))
            elif isinstance(event, Ping):
                if self.open:
                    self._out += self._ws.send(event.response())
            elif isinstance(event, CloseConnection):
                if self._ws.state is ConnectionState.REMOTE_CLOSING:
                    self._out += self._ws.send(event.response())  # the client's close
                elif self.open:  # wsproto could not parse what came: 1002 or 1007
                    self.close(event.code, event.reason or "websocket protocol error")
        return out

    def _take(self, piece: str | bytes) -> bool:
        """Buffer a piece of the current message; False (and the close queued) when the
        message went over the limit with it. Counted exactly, piece by piece (its UTF-8 bytes):
        no message over the limit is ever made whole."""
        if isinstance(piece, str) and not piece.isascii():
            self._size += len(piece.encode("utf-8", "surrogatepass"))
        else:
            self._size += len(piece)
        if self._size > self.max_message:
            self._parts = []
            limit = self.max_message
            self.send_text(encode(WireError("too_big", f"message is over {limit} bytes").reply()))
            self.close(CLOSE_TOO_BIG, f"message over {limit} bytes")
            return False
        self._parts.append(piece)
        return True

    def send_text(self, text: str | bytes) -> bool:
        """Queue one text frame (``text``: str, or UTF-8 bytes); False once a close frame
        was queued or received (nothing follows it)."""
        if not self.open:
            return False
        data = text if isinstance(text, str) else text.decode()
        self._out += self._ws.send(TextMessage(data=data))
        return True

    def close(self, code: int, reason: str) -> None:
        """Queue this side's close frame (once; not after the client's)."""
        if self.open:
            self.closing = code
            self._out += self._ws.send(CloseConnection(code=code, reason=reason))

    @property
    def pending(self) -> int:
        """Bytes queued and not yet taken by :meth:`data_to_send`."""
        return len(self._out)

    def data_to_send(self) -> bytes:
        out, self._out = bytes(self._out), bytearray()
        return out


def _joined(parts: list[str | bytes]) -> str | bytes:
    if len(parts) == 1:
        return parts[0]
    if isinstance(parts[0], str):
        return "".join(p for p in parts if isinstance(p, str))
    return b"".join(p for p in parts if isinstance(p, bytes))
