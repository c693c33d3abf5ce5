"""The websocket protocol's messages (docs/protocol.md): msgspec tagged unions on ``type``.

Owns the shape of every JSON text frame between a client and ``triohooks serve``, decoding a
client frame into one typed message (or a precise :class:`WireError`), and encoding the server's
frames - including the per-connection ``event`` frame built from a body encoded once per
published record. Pure data and encoding: it must not do I/O or know about the engine.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import msgspec

from triohooks.combine.outcome import Outcome

#: Largest client frame the server reads (issue 7). Bigger ones get ``too_big`` and close 1009.
MAX_FRAME_BYTES: Final = 1024 * 1024
#: Close code for an oversized frame (RFC 6455 "message too big").
CLOSE_TOO_BIG: Final = 1009
CLOSE_NORMAL: Final = 1000

#: Engine listener kinds a subscriber may ask for.
EVENT_KINDS: Final = frozenset(
    {
        "fired",
        "hook_started",
        "hook_finished",
        "outcome",
        "dropped",
        "falling_behind",
        "audit",
        "closed",
    }
)

Id = str | int | None


class _Msg(msgspec.Struct, frozen=True, tag_field="type", kw_only=True):
    """Every frame is a JSON object tagged by ``type``; unknown fields are ignored."""


# -- client -> server -------------------------------------------------------------------------
class Fire(_Msg, tag="fire", frozen=True, kw_only=True):
    """Fire ``event`` (canonical or JSON-dialect name) with ``payload``; answered by
    :class:`OutcomeReply` (or :class:`ErrorReply`) carrying the same ``id``."""

    id: str | int
    event: str
    payload: dict[str, Any] = msgspec.field(default_factory=dict)


class Subscribe(_Msg, tag="subscribe", frozen=True, kw_only=True):
    """Start (or replace) this connection's event stream. ``events``: lifecycle event names or
    ``"*"``; ``kinds``: listener kinds (``None`` = all). Answered by :class:`Subscribed`."""

    id: Id = None
    events: list[str] = msgspec.field(default_factory=lambda: ["*"])
    kinds: list[str] | None = None


class Unsubscribe(_Msg, tag="unsubscribe", frozen=True, kw_only=True):
    id: Id = None


class Ping(_Msg, tag="ping", frozen=True, kw_only=True):
    id: Id = None


class Stats(_Msg, tag="stats", frozen=True, kw_only=True):
    id: Id = None


ClientMessage = Fire | Subscribe | Unsubscribe | Ping | Stats
CLIENT_TYPES: Final = ("fire", "subscribe", "unsubscribe", "ping", "stats")


# -- server -> client -------------------------------------------------------------------------
class OutcomeReply(_Msg, tag="outcome", frozen=True, kw_only=True):
    id: str | int
    outcome: Outcome


class Subscribed(_Msg, tag="subscribed", frozen=True, kw_only=True):
    id: Id = None
    events: list[str]
    kinds: list[str]
    buffer: int


class Unsubscribed(_Msg, tag="unsubscribed", frozen=True, kw_only=True):
    id: Id = None


class Pong(_Msg, tag="pong", frozen=True, kw_only=True):
    id: Id = None


class StatsReply(_Msg, tag="stats", frozen=True, kw_only=True):
    id: Id = None
    #: Background events waiting in the post queue, and its bound.
    queue_depth: int
    #: Background events dropped (queue full or close) since the server started.
    dropped: int
    falling_behind: int
    live_processes: int
    connections: int
    subscribers: int
    fires: int
    in_flight: int
    events_published: int
    #: Records overwritten in lagging subscribers' buffers (current subscribers).
    events_missed: int


class Lagged(_Msg, tag="lagged", frozen=True, kw_only=True):
    """``missed`` event records were lost because this connection read too slowly."""

    missed: int


class EventRecord(_Msg, tag="event", frozen=True, kw_only=True):
    """One thing that happened in the engine. ``seq`` counts the records delivered on this
    connection (1, 2, 3 ... without gaps); lost records are reported by :class:`Lagged`."""

    seq: int
    kind: str
    time: float
    event: str | None = None
    data: dict[str, Any] = msgspec.field(default_factory=dict)


ErrorCode = Literal[
    "invalid_json",
    "invalid_message",
    "unknown_type",
    "unknown_event",
    "unknown_kind",
    "invalid_payload",
    "too_big",
    "shutting_down",
    "internal",
]


class ErrorBody(msgspec.Struct, frozen=True):
    code: str
    message: str


class ErrorReply(_Msg, tag="error", frozen=True, kw_only=True):
    id: Id = None
    error: ErrorBody


ServerMessage = (
    OutcomeReply | Subscribed | Unsubscribed | Pong | StatsReply | Lagged | EventRecord | ErrorReply
)


class WireError(Exception):
    """A client frame the server cannot act on; becomes an :class:`ErrorReply`."""

    def __init__(self, code: ErrorCode, message: str, id: Id = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.id = id

    def reply(self) -> ErrorReply:
        return ErrorReply(id=self.id, error=ErrorBody(self.code, self.message))


_client_decoder: Final = msgspec.json.Decoder(ClientMessage)
_any_decoder: Final = msgspec.json.Decoder()
_server_decoder: Final = msgspec.json.Decoder(ServerMessage)
_encoder: Final = msgspec.json.Encoder()


def frame_size(frame: str | bytes) -> int:
    """UTF-8 size of a frame (without encoding it unless it could matter)."""
    if isinstance(frame, bytes) or len(frame) * 4 <= MAX_FRAME_BYTES:
        return len(frame)
    return len(frame.encode("utf-8", "surrogatepass"))


def decode_client(frame: str | bytes) -> ClientMessage:
    """Decode one client frame, or raise :class:`WireError` saying exactly what is wrong."""
    if frame_size(frame) > MAX_FRAME_BYTES:
        raise WireError("too_big", f"frame is over {MAX_FRAME_BYTES} bytes")
    try:
        msg: ClientMessage = _client_decoder.decode(frame)
    except msgspec.DecodeError as exc:
        raise _explain(frame, exc) from None
    return msg


def _explain(frame: str | bytes, exc: msgspec.DecodeError) -> WireError:
    # The typed decode failed; a generic one tells invalid JSON from an unknown type or a
    # missing field, and recovers the id so the client can match the error to its request.
    try:
        doc = _any_decoder.decode(frame)
    except msgspec.DecodeError as inner:
        return WireError("invalid_json", f"not valid JSON: {inner}")
    if not isinstance(doc, dict):
        return WireError("invalid_message", "a message must be a JSON object")
    raw_id = doc.get("id")
    msg_id = raw_id if isinstance(raw_id, str | int) and not isinstance(raw_id, bool) else None
    kind = doc.get("type")
    if kind is None:
        return WireError("invalid_message", "missing field `type`", msg_id)
    if kind not in CLIENT_TYPES:
        known = ", ".join(CLIENT_TYPES)
        return WireError("unknown_type", f"unknown message type {kind!r} (known: {known})", msg_id)
    return WireError("invalid_message", f"{kind}: {exc}", msg_id)


def encode(msg: _Msg) -> str:
    """A server (or client) message as a text frame."""
    return _encoder.encode(msg).decode()


def encode_event_body(kind: str, time: float, event: str | None, data: dict[str, Any]) -> str:
    """Everything of an ``event`` frame except its per-connection ``seq``, encoded once per
    published record (then :func:`event_frame` splices the seq in per connection)."""
    body = _encoder.encode({"kind": kind, "time": time, "event": event, "data": data})
    return body[1:].decode()  # without the opening brace


def event_frame(seq: int, body: str) -> str:
    return f'{{"type":"event","seq":{seq},{body}'


def decode_server(frame: str | bytes) -> ServerMessage:
    """Decode one server frame (the client side). Raises ``msgspec.DecodeError``."""
    msg: ServerMessage = _server_decoder.decode(frame)
    return msg
