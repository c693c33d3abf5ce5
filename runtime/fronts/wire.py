"""The websocket protocol's messages (docs/protocol.md): msgspec tagged unions on ``type``.

Owns the shape of every JSON text frame between a client and ``triohooks serve``, decoding a
client frame into one typed message (or a precise :class:`WireError`), and encoding the server's
frames - including the per-connection ``event`` frame built from a body encoded once per
published record. Pure data and encoding: it must not do I/O or know about the engine.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import msgspec

from triohooks.actors.audit_records import AuditStats
from triohooks.combine.outcome import Outcome

#: Largest client frame the server reads by default (``ServeSettings.max_message_bytes``,
#: ``--max-message-bytes``). Bigger ones get ``too_big`` and close 1009.
MAX_FRAME_BYTES: Final = 1024 * 1024
#: Deepest JSON nesting a client frame may have; the frame's own object is level 1.
#: Deeper frames are refused with ``invalid_json`` whatever the stack depth of the decoder.
MAX_DEPTH: Final = 128
CLOSE_NORMAL: Final = 1000
#: RFC 6455 close codes the server fails a connection with. 1002: a websocket protocol error;
#: 1007: a text frame that is not UTF-8; 1009: a message over the size limit; 1013: try again
#: later (not used: a server at its connection cap answers the handshake with HTTP 503).
CLOSE_PROTOCOL_ERROR: Final = 1002
CLOSE_INVALID_DATA: Final = 1007
CLOSE_TOO_BIG: Final = 1009

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
    #: Connections refused since the server started because a limit was hit: the websocket
    #: cap (HTTP 503), handshakes in progress (closed unread), file descriptors (HTTP 503).
    #: Defaults keep replies of older servers decodable.
    refused_connections: int = 0
    refused_out_of_fds: int = 0
    #: OTLP export (docs/observability.md) per signal (``spans``, ``logs``): ``produced``,
    #: ``exported``, ``dropped``, ``queued``; None when the server exports nothing.
    otlp: dict[str, dict[str, int]] | None = None
    #: The audit log (docs/design.md §8): records ``written`` and ``lost``, loss
    #: ``failure_episodes`` and whether one lasts (``failing``), day files whose torn last line
    #: was repaired (``torn_tails``), answers delivered before their record was written
    #: (``late``); None when the server writes no audit log.
    audit: AuditStats | None = None


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


def frame_size(frame: str | bytes, limit: int = MAX_FRAME_BYTES) -> int:
    """UTF-8 size of a frame (without encoding it unless it could exceed ``limit``)."""
    if isinstance(frame, bytes) or len(frame) * 4 <= limit:
        return len(frame)
    return len(frame.encode("utf-8", "surrogatepass"))


def decode_client(frame: str | bytes, max_bytes: int = MAX_FRAME_BYTES) -> ClientMessage:
    """Decode one client frame, or raise :class:`WireError` saying exactly what is wrong.

    Total: whatever ``frame`` holds (any nesting depth, lone surrogates, ...), nothing but a
    :class:`WireError` comes out. msgspec raises ``RecursionError`` for JSON nested about as
    deep as the interpreter's recursion limit (so where depends on the caller's stack); frames
    deeper than :data:`MAX_DEPTH` are refused whether or not msgspec got through them.
    """
    if frame_size(frame, max_bytes) > max_bytes:
        raise WireError("too_big", f"frame is over {max_bytes} bytes")
    try:
        msg: ClientMessage = _client_decoder.decode(frame)
    except msgspec.DecodeError as exc:
        raise _explain(frame, exc) from None
    except RecursionError:
        raise _too_deep() from None
    except Exception as exc:  # e.g. UnicodeEncodeError: a str with lone surrogates
        raise WireError("invalid_json", f"cannot decode frame: {exc}") from None
    if isinstance(msg, Fire) and _deeper_than(frame, msg.payload, level=2):
        raise _too_deep(msg.id)
    return msg


def _too_deep(msg_id: Id = None) -> WireError:
    return WireError("invalid_json", f"JSON nested deeper than {MAX_DEPTH} levels", msg_id)


def _deeper_than(frame: str | bytes, value: Any, level: int) -> bool:
    """Whether ``value`` (at nesting ``level`` of ``frame``) goes deeper than MAX_DEPTH.

    Iterative; only walked when the frame has enough brackets to be that deep at all (a 900 kB
    payload of small objects costs about as much again as decoding it).
    """
    opened = (
        frame.count(b"[") + frame.count(b"{")
        if isinstance(frame, bytes)
        else frame.count("[") + frame.count("{")
    )
    if opened <= MAX_DEPTH:
        return False
    stack: list[tuple[Any, int]] = [(value, level)]
    pop, push = stack.pop, stack.append
    while stack:
        item, depth = pop()
        if depth > MAX_DEPTH:
            return True
        deeper = depth + 1
        for child in item.values() if type(item) is dict else item:
            kind = type(child)
            if kind is dict or kind is list:  # what msgspec decodes JSON containers to
                push((child, deeper))
    return False


def _explain(frame: str | bytes, exc: msgspec.DecodeError) -> WireError:
    # The typed decode failed; a generic one tells invalid JSON from an unknown type or a
    # missing field, and recovers the id so the client can match the error to its request.
    try:
        doc = _any_decoder.decode(frame)
    except msgspec.DecodeError as inner:
        return WireError("invalid_json", f"not valid JSON: {inner}")
    except RecursionError:
        return _too_deep()
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


def encode_bytes(msg: _Msg) -> bytes:
    """:func:`encode`, as the UTF-8 bytes a frame carries (no str in between)."""
    return _encoder.encode(msg)


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
