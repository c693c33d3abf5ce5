"""``triohooks serve``: one engine behind one websocket endpoint (docs/protocol.md).

Owns the service around a :class:`~triohooks.engine.hook_engine.HookEngine`: the listener (loopback
unless ``--allow-remote``), bearer-token auth at the handshake (HTTP 401 before any message is read,
constant-time compare), one task per connection reading frames, fires run concurrently per
connection (at most ``max_in_flight``, then the reader waits), the event stream (engine listener
-> :class:`~triohooks.actors.broadcast.Broadcaster` -> a record's frame written straight to each
subscriber's socket that has room, else queued in its ring for its sender task, so a stalled
client loses its oldest records and is told ``lagged`` while nobody else waits), and the
graceful shutdown: stop accepting, finish in-flight fires, close the engine (which drains the
post queue for up to 5 s), let subscribers flush, close every socket with 1000, exit 0. And
the limits on what clients can make it hold: at most ``max_connections`` websockets
(one more authenticated handshake gets HTTP 503) and as many handshakes in progress, messages of
at most ``max_message_bytes`` (1009 beyond), and a close frame with 1002 / 1007 / 1009 when the
websocket layer fails a connection (see :class:`_ServerStream`). And the process's own limits:
the soft file descriptor limit raised to what ``max_connections`` needs, a connection past the
descriptors answered HTTP 503 on one kept in reserve, every limit logged once when hit
(:class:`_LimitReport`).

The agents' requests (:mod:`.agent_http`) come two ways: ``POST /<agent>/v1/hook`` on the same
TCP port (the http transport: a token, a pre-auth pool of :data:`PRE_AUTH_SLOTS` with a 2 s
deadline, every refusal answered with the event's deny, counted and logged), and the relay
socket ``serve.sock`` in the private state dir (the default: one serve per user holds it,
under ``serve.lock``, or takes it over from one the relays recorded dead; the peer's uid is
checked; each request carries the agent session's environment, is acknowledged at once and,
on the relay protocol's path, kept alive by heartbeats). ``--idle-exit`` shuts an
auto-started serve down.

It must not contain decision logic or run hooks (the engine does), nor define message shapes
(``_wire`` does). A failure in one connection is contained and logged; the server goes on.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import hmac
import ipaddress
import logging
import os
import resource
import secrets
import signal
import stat
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qs, urlsplit

import msgspec
import trio
from trio_websocket import (
    ConnectionClosed,
    WebSocketConnection,
    WebSocketRequest,
    wrap_server_stream,
)
from wsproto import ConnectionType
from wsproto.connection import Connection as FrameWriter
from wsproto.events import CloseConnection

from triohooks.actors.broadcast import Broadcaster, Lagged, Subscription
from triohooks.agents.runner import AgentInput
from triohooks.config.events import PayloadError, UnknownEventError, canonical_event
from triohooks.config.paths import (
    UnreadableFileError,
    private_dir,
    read_regular_file,
    state_dir,
    write_file_atomic,
)
from triohooks.engine.hook_engine import HookEngine

from . import agent_http, otel, relay
from .agent_http import looks_like_agent_request
from .serve_file import SERVE_FILE
from .wire import (
    CLOSE_INVALID_DATA,
    CLOSE_NORMAL,
    CLOSE_PROTOCOL_ERROR,
    CLOSE_TOO_BIG,
    EVENT_KINDS,
    MAX_FRAME_BYTES,
    ClientMessage,
    ErrorBody,
    ErrorReply,
    Fire,
    OutcomeReply,
    Ping,
    Pong,
    Stats,
    StatsReply,
    Subscribe,
    Subscribed,
    Unsubscribe,
    Unsubscribed,
    WireError,
    decode_client,
    encode,
    encode_bytes,
    encode_event_body,
    event_frame,
)
from .wire import Lagged as LaggedMsg

if TYPE_CHECKING:
    from triohooks.combine.outcome import Outcome

log = logging.getLogger("triohooks.server")

DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 8765
#: In the state dir while serve listens: its address, token file and pid (for ``watch``).
#: ``serve``'s exit status when the engine itself failed (an actor past its restart budget).
EXIT_ENGINE_FAILED: Final = 3
TOKEN_FILE_NAME: Final = "serve-token"
#: trio-websocket's own cap is ``max_message_bytes`` plus this (in characters; it also bounds
#: what an unfinished fragmented message may buffer). A message over ``max_message_bytes`` but
#: within it gets a ``too_big`` error frame and close 1009 from us; beyond it the library closes
#: 1009 as soon as it is crossed, without reading the rest.
LIBRARY_SLACK: Final = 64 * 1024
DEFAULT_MAX_CONNECTIONS: Final = 256
#: TCP agent-hook connections whose first request is not yet authenticated, at most; one more
#: evicts the oldest (so a client that holds connections without a token cannot lock others
#: out of the authenticated ones, which have ``max_connections`` of their own).
PRE_AUTH_SLOTS: Final = 64
#: The relay socket's name in the state dir, and the lock its owner holds.
SOCKET_FILE: Final = "serve.sock"
LOCK_FILE: Final = "serve.lock"
#: Close codes with which the websocket layer fails a connection for bad input from the client
#: (wsproto's parse errors, trio-websocket's size cap). The client may still be sending.
_FAIL_CODES: Final = frozenset({CLOSE_PROTOCOL_ERROR, CLOSE_INVALID_DATA, CLOSE_TOO_BIG})
_FAIL_REASONS: Final = {
    CLOSE_PROTOCOL_ERROR: "websocket protocol error",
    CLOSE_INVALID_DATA: "text frame is not valid UTF-8",
}
_RESERVED_DATA_KEYS: Final = frozenset({"event"})
#: Event frames written at once by a subscriber's sender (see ``_Connection.send_frames``).
SEND_BATCH: Final = 128
#: File descriptors the process needs besides its connections' (engine, hook pipes, workers).
FD_HEADROOM: Final = 256
#: accept() errors that mean the process or the system is out of something; trio's own
#: ``serve_listeners`` logs a traceback for them every 100 ms and leaves the client waiting.
_ACCEPT_CAPACITY_ERRNOS: Final = frozenset(
    {errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS}
)
_ACCEPT_RETRY_S: Final = 0.1
#: A limit that keeps being hit is logged again at most this often (with the count since).
LIMIT_REPORT_EVERY_S: Final = 60.0
#: How long a connection refused for want of file descriptors gets to read the 503.
_REFUSE_LINGER_S: Final = 1.0
_OUT_OF_FDS_BODY: Final = b"server is out of file descriptors; try again later\n"
_OUT_OF_FDS_REPLY: Final = b"".join(
    (
        b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: text/plain\r\n",
        b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(_OUT_OF_FDS_BODY),
        _OUT_OF_FDS_BODY,
    )
)


class ServeSettings(msgspec.Struct, frozen=True, kw_only=True):
    """Everything :func:`serve` needs. ``engine`` holds :meth:`HookEngine.open` arguments."""

    token: str
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    engine: dict[str, Any] = msgspec.field(default_factory=dict)
    #: Records buffered per subscriber before the oldest are lost (and ``lagged`` is sent).
    buffer: int = 1024
    #: Fires in flight per connection; beyond it the connection's reader waits.
    max_in_flight: int = 64
    #: At shutdown, in-flight fires get this long before they are cancelled.
    fire_grace_s: float = 30.0
    #: At shutdown, each connection gets this long to flush its stream and close cleanly.
    close_timeout_s: float = 2.0
    handshake_timeout_s: float = 10.0
    #: Open websockets at once; one more authenticated handshake is answered HTTP 503. As many
    #: handshakes again may be in progress; beyond that a new TCP connection is closed unread.
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    #: Largest client message (UTF-8 bytes); also bounds what a connection buffers for one.
    max_message_bytes: int = MAX_FRAME_BYTES
    #: The unix socket relays talk to (``serve.sock`` in the private state dir), or None.
    agent_socket: str | None = None
    #: An auto-started serve: when ``port`` is taken, listen on a free port instead, and when
    #: none can be had, serve the relay socket alone.
    tcp_optional: bool = False
    #: Shut down after this long with no connection open and no request (auto-started serves).
    idle_exit_s: float | None = None


class _Record(msgspec.Struct, frozen=True):
    """One published engine event: the filter keys and the body encoded once for everyone."""

    kind: str
    event: str | None
    body: str


def _text_frame(payload: bytes) -> bytes:
    """One unmasked, final websocket text frame (RFC 6455 5.2; the server negotiates no
    extension, so this is what wsproto would write)."""
    n = len(payload)
    if n < 126:
        return bytes((0x81, n)) + payload
    if n < 1 << 16:
        return b"\x81\x7e" + n.to_bytes(2, "big") + payload
    return b"\x81\x7f" + n.to_bytes(8, "big") + payload


class _LimitReport:
    """Says, once, that a limit was hit: a warning the first time, then at most one every
    :data:`LIMIT_REPORT_EVERY_S` while it keeps being hit, with how many were refused since."""

    def __init__(self, describe: Callable[[], str]) -> None:
        self._describe = describe
        self._last: float | None = None
        self._since = 0

    def hit(self) -> None:
        self._since += 1
        now = time.monotonic()
        if self._last is not None and now - self._last < LIMIT_REPORT_EVERY_S:
            return
        again = f" ({self._since} refused since the last report)" if self._last is not None else ""
        log.warning("%s%s", self._describe(), again)
        self._last, self._since = now, 0


def fds_needed(max_connections: int) -> int:
    """File descriptors ``serve`` may hold at ``max_connections``: one per open websocket and
    one per handshake in progress (as many again), plus :data:`FD_HEADROOM`."""
    return 2 * max_connections + FD_HEADROOM


def raise_fd_limit(needed: int) -> tuple[int, int]:
    """Raise the soft ``RLIMIT_NOFILE`` towards ``needed`` (never past the hard limit, never
    lower). Returns the (soft, hard) limits now in force; logs a warning when even the hard
    limit is below ``needed``. Only as far as needed: hooks inherit the limit, and some programs
    walk every descriptor number up to it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    if soft != resource.RLIM_INFINITY and soft < needed:
        log.warning(
            "serve: the file descriptor limit (%d, hard limit %s) is below the %d that "
            "--max-connections can use; connections past it are answered HTTP 503. Raise it "
            "(ulimit -n; the hard limit: ulimit -Hn, or LimitNOFILE= in a systemd unit) or "
            "lower --max-connections",
            soft,
            "unlimited" if hard == resource.RLIM_INFINITY else hard,
            needed,
        )
    return soft, hard


def _fd_limit_text() -> str:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    unlimited = resource.RLIM_INFINITY
    return (
        f"{'unlimited' if soft == unlimited else soft}, hard limit "
        f"{'unlimited' if hard == unlimited else hard}"
    )


def _open_reserve_fd() -> int | None:
    """One descriptor kept in reserve, closed to accept (and refuse) a connection when the
    process has no other left (the libev / nginx way of answering instead of stalling)."""
    try:
        return os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _presented_token(request: WebSocketRequest) -> str | None:
    for name, value in request.headers:
        if name.lower() == b"authorization":
            scheme, _, credential = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer":
                return credential.strip()
    tokens = parse_qs(urlsplit(request.path).query).get("token")
    return tokens[0] if tokens else None


class HookServer:
    """The running service: auth, connections, fires, the event hub, the numbers.

    Made by :func:`serve` (which :meth:`trio.Nursery.start` returns it from); call
    :meth:`shutdown` to stop it gracefully.
    """

    def __init__(self, engine: HookEngine, settings: ServeSettings, nursery: trio.Nursery):
        self.engine = engine
        self.settings = settings
        self.hub: Broadcaster[_Record] = Broadcaster(settings.buffer)
        self.host = settings.host
        self.port = 0
        self._nursery = nursery
        self._token = settings.token.encode()
        self._connections: set[_Connection] = set()
        self._accepting = True
        self._firing = True
        self._shutdown = trio.Event()
        self._subscribed = trio.Event()
        self.done = trio.Event()
        self._in_flight = 0
        self._idle: trio.Event | None = None
        self.fires = 0
        self.dropped = 0
        self.falling_behind = 0
        self.rejected = 0
        #: Handshakes answered 503 at the connection cap, and TCP connections closed unread
        #: because too many handshakes were in progress.
        self.refused_full = 0
        self.refused_handshakes = 0
        #: Connections answered HTTP 503 (unread) because the process had no descriptor left.
        self.refused_fds = 0
        #: The OTLP export of this server (set by ``cmd_serve`` when ``OTEL_*`` turn it on).
        self.telemetry: otel.Telemetry | None = None
        self._cap_report = _LimitReport(self._cap_message)
        self._handshake_report = _LimitReport(self._handshake_message)
        self._http_report = _LimitReport(self._http_message)
        self._fd_report = _LimitReport(self._fd_message)
        self._reserve_fd: int | None = None
        self._slots = trio.CapacityLimiter(settings.max_connections)
        self._handshaking = 0
        #: Connections serving agent hook requests (``POST /claude/v1/hook`` ..., TCP ones once
        #: authenticated, and the relay socket's).
        self._http_connections = 0
        #: TCP agent-hook connections not yet authenticated, oldest first (see PRE_AUTH_SLOTS).
        self._preauth: dict[int, trio.CancelScope] = {}
        self._last_refusal = ""
        #: Agent-hook requests refused (no or wrong token, unreadable input, not in time) and
        #: relay connections from another user.
        self.refused_requests = 0
        self._refusal_report = _LimitReport(self._refusal_message)
        self._evict_report = _LimitReport(self._evict_message)
        self.last_activity = time.monotonic()

    def _cap_message(self) -> str:
        limit = self.settings.max_connections
        return (
            f"serve: at the connection limit, {limit} websockets open (--max-connections "
            f"{limit}): new ones are answered HTTP 503 until one closes; start serve with a "
            "larger --max-connections to allow more"
        )

    def _handshake_message(self) -> str:
        return (
            f"serve: {self.settings.max_connections} handshakes in progress (as many as "
            "--max-connections): new TCP connections are closed unread until one finishes"
        )

    def _http_message(self) -> str:
        limit = self.settings.max_connections
        return (
            f"serve: {limit} agent hook connections open (as many as --max-connections "
            f"{limit}): new ones are answered HTTP 503 (the relay then runs the hooks itself)"
        )

    def _refusal_message(self) -> str:
        return f"serve: agent hook request refused: {self._last_refusal}"

    def _evict_message(self) -> str:
        return (
            f"serve: {PRE_AUTH_SLOTS} agent hook connections are waiting to authenticate: "
            "the oldest is closed for each new one (is something holding connections open?)"
        )

    def refused(self, why: str) -> None:
        """An agent-hook request was refused: counted, and logged (rate-limited)."""
        self.refused_requests += 1
        self._last_refusal = why
        self._refusal_report.hit()

    def _fd_message(self) -> str:
        limit = self.settings.max_connections
        return (
            f"serve: out of file descriptors (limit {_fd_limit_text()}): new connections are "
            "answered HTTP 503 until some close; raise the limit (ulimit -n) or lower "
            f"--max-connections ({limit}, which can use {fds_needed(limit)})"
        )

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"ws://{host}:{self.port}/"

    @property
    def connections(self) -> int:
        return len(self._connections)

    @property
    def slots_in_use(self) -> int:
        """Connection slots taken (``max_connections`` in all): an accepted websocket holds
        one from its handshake until its socket is closed."""
        return int(self._slots.borrowed_tokens)

    @property
    def handshakes(self) -> int:
        """TCP connections in their handshake (at most ``max_connections`` at once)."""
        return self._handshaking

    def shutdown(self) -> None:
        """Begin the graceful shutdown (see the module docstring). Idempotent; returns at once."""
        self._shutdown.set()

    @property
    def shutting_down(self) -> bool:
        return self._shutdown.is_set()

    # -- the engine side ----------------------------------------------------------------------
    def on_engine_event(self, kind: str, fields: dict[str, Any]) -> None:
        """Engine listener: count, and publish to subscribers. Sync; never waits."""
        if kind == "dropped":
            self.dropped += 1
        elif kind == "falling_behind":
            self.falling_behind += 1
        if not self.hub.subscribers:
            return
        event = fields.get("event")
        if kind == "audit":
            event = getattr(fields.get("record"), "event", None)
        data = {k: v for k, v in fields.items() if k not in _RESERVED_DATA_KEYS}
        event = event if isinstance(event, str) else None
        body = encode_event_body(kind, time.time(), event, data)
        self.hub.publish(_Record(kind, event, body))

    def stats(self, msg_id: str | int | None) -> StatsReply:
        return StatsReply(
            id=msg_id,
            queue_depth=self.engine.queue_depth,
            dropped=self.dropped,
            falling_behind=self.falling_behind,
            live_processes=self.engine.live_processes,
            connections=self.connections,
            subscribers=self.hub.subscribers,
            fires=self.fires,
            in_flight=self._in_flight,
            events_published=self.hub.published,
            events_missed=self.hub.missed_total,
            refused_connections=self.refused_full + self.refused_handshakes + self.refused_fds,
            refused_out_of_fds=self.refused_fds,
            otlp=self._otlp_counts(),
        )

    def _otlp_counts(self) -> dict[str, dict[str, int]] | None:
        telemetry = self.telemetry
        if telemetry is None:
            return None
        out: dict[str, dict[str, int]] = {}
        for name, batcher in (("spans", telemetry.spans), ("logs", telemetry.logs)):
            if batcher is not None:
                st = batcher.stats()
                out[name] = {
                    "produced": st.produced,
                    "exported": st.exported,
                    "dropped": st.dropped_total,
                    "queued": st.queued + st.in_flight,
                }
        return out

    # -- fires in flight ----------------------------------------------------------------------
    def _fire_started(self) -> None:
        self._in_flight += 1
        self.fires += 1

    def _fire_finished(self) -> None:
        self._in_flight -= 1
        if self._in_flight == 0 and self._idle is not None:
            self._idle.set()

    async def _finish_fires(self) -> None:
        self._firing = False
        with trio.move_on_after(self.settings.fire_grace_s):
            while self._in_flight:
                self._idle = trio.Event()
                await self._idle.wait()
        for conn in list(self._connections):  # grace over: cut off what is left
            conn.fires.cancel_scope.cancel()

    async def exit_when_idle(self, idle_s: float) -> None:
        """Shut down once no connection is open and nothing happened for ``idle_s``."""
        while True:
            busy = self.connections or self._http_connections or self._in_flight
            if busy:
                self.last_activity = time.monotonic()
            wait = self.last_activity + idle_s - time.monotonic()
            if wait <= 0:
                log.warning("serve: idle for %g s: shutting down", idle_s)
                self.shutdown()
                return
            await trio.sleep(min(wait, 60.0))

    async def wait_for_subscriber(self) -> None:
        """Return once any client has subscribed (at once if one already did). A checkpoint."""
        await self._subscribed.wait()

    # -- connections --------------------------------------------------------------------------
    async def on_stream(self, stream: trio.SocketStream) -> None:
        """One TCP connection: handshake, auth, then the websocket. Contains its failures.

        We own the stream (not ``trio_websocket.WebSocketServer``) so that it is closed on every
        path - trio-websocket 0.12 leaves a rejected handshake's stream open - and the library
        sees it through :class:`_ServerStream`, which tells the client why when the library
        fails the connection (1002 / 1007 / 1009) and lets it read the close frame.
        """
        if self._handshaking >= self.settings.max_connections:
            self.refused_handshakes += 1
            self._handshake_report.hit()
            await stream.aclose()
            return
        self._handshaking += 1
        handshaking = True
        try:
            head = await self._first_bytes(stream)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            head = None
        if head is None or looks_like_agent_request(head):
            self._handshaking -= 1
            if head is not None:
                await self._serve_agent_http(stream, head)
            await stream.aclose()
            return
        wrapped = _ServerStream(stream, self.settings.close_timeout_s, head)
        try:
            try:
                async with trio.open_nursery() as nursery:
                    try:
                        with trio.move_on_after(self.settings.handshake_timeout_s) as handshake:
                            wrapped.on_gone = handshake.cancel
                            request = await wrap_server_stream(
                                nursery,
                                wrapped,
                                max_message_size=self.settings.max_message_bytes + LIBRARY_SLACK,
                            )
                        wrapped.on_gone = None
                        self._handshaking -= 1
                        handshaking = False
                        if not handshake.cancelled_caught:
                            await self._handle(request, wrapped)
                    finally:
                        nursery.cancel_scope.cancel()  # the connection's reader task
            finally:
                if handshaking:
                    self._handshaking -= 1
                await wrapped.finish()
        except (ConnectionClosed, trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        except Exception:
            log.exception("websocket connection failed")

    async def _first_bytes(self, stream: trio.SocketStream) -> bytes | None:
        """Enough of the connection's first bytes to tell a websocket handshake (``GET``) from
        an agent hook request (``POST /claude/v1/hook``); None if the client left or said
        nothing within the handshake timeout."""
        head = b""
        with trio.move_on_after(self.settings.handshake_timeout_s):
            while b"\r\n" not in head and len(head) < 512:
                data = await stream.receive_some(65536)
                if not data:
                    return None
                head += data
            return head
        return None

    async def _agent_hook(
        self, agent: str, body: AgentInput, env: dict[str, str] | None, scope: str | None
    ) -> Any:
        self.last_activity = time.monotonic()
        try:
            return await self.engine.agent_hook(
                agent, body, adopted_only=True, env=env, scope=scope
            )
        finally:
            self.last_activity = time.monotonic()

    async def _fire_command(self, said: dict[str, str], body: bytes, env: dict[str, str]) -> bytes:
        """``triohooks fire`` from the relay socket (:mod:`.fire`): answered here when this
        serve reads the config as the command would (no ``--config``, ``--config-dir``,
        ``--trust`` or ``--no-audit`` of its own); else ``elsewhere``."""
        from .fire import answer_request

        engine = self.settings.engine
        plain = not (
            engine.get("config_dir")
            or engine.get("extra_configs")
            or engine.get("trust")
            or engine.get("audit") is False
        )
        self.last_activity = time.monotonic()
        try:
            return await answer_request(self.engine, said, body, env, own_settings=plain)
        finally:
            self.last_activity = time.monotonic()

    def _take_http_slot(self) -> bool:
        if self._http_connections >= self.settings.max_connections:
            self._http_report.hit()
            return False
        self._http_connections += 1
        return True

    async def _serve_agent_http(self, stream: trio.SocketStream, head: bytes) -> None:
        """``POST /<agent>/v1/hook`` requests on a TCP connection (see :mod:`.agent_http`):
        in the pre-auth pool until its first request shows the token, then in its own slot."""
        scope = trio.CancelScope()
        key = id(scope)
        if len(self._preauth) >= PRE_AUTH_SLOTS:
            self._preauth.pop(next(iter(self._preauth))).cancel()
            self._evict_report.hit()
        self._preauth[key] = scope
        counted = False

        def authenticated() -> bool:
            nonlocal counted
            self._preauth.pop(key, None)
            counted = self._take_http_slot()
            return counted

        peer = agent_http.Peer(
            token=self._token, on_authenticated=authenticated, on_refused=self.refused
        )
        try:
            with scope:
                await agent_http.serve_connection(
                    stream,
                    head,
                    peer=peer,
                    handle=self._agent_hook,
                    max_body=self.settings.max_message_bytes,
                )
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        except Exception:
            log.exception("agent hook connection failed")
        finally:
            self._preauth.pop(key, None)
            if counted:
                self._http_connections -= 1

    async def on_relay_stream(self, stream: trio.SocketStream) -> None:
        """One connection on the relay socket: from the user's own uid (the kernel says, where
        it can), each request carrying the session's environment and acknowledged at once."""
        try:
            uid = relay.peer_uid(stream.socket)
        except OSError:
            uid = None
        if uid is not None and uid != os.getuid():
            self.refused(f"a relay connection from uid {uid}, not ours")
            return
        if not self._take_http_slot():
            await agent_http.reply_busy(stream)
            return
        try:
            await agent_http.serve_connection(
                stream,
                b"",
                peer=agent_http.Peer(token=None, on_refused=self.refused, fire=self._fire_command),
                handle=self._agent_hook,
                max_body=self.settings.max_message_bytes,
            )
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        except Exception:
            log.exception("relay connection failed")
        finally:
            self._http_connections -= 1

    async def _handle(self, request: WebSocketRequest, stream: _ServerStream) -> None:
        given = _presented_token(request)
        if given is None or not hmac.compare_digest(given.encode(), self._token):
            self.rejected += 1
            await request.reject(
                401,
                extra_headers=[(b"WWW-Authenticate", b'Bearer realm="triohooks"')],
                body=b"missing or wrong bearer token\n",
            )
            return
        if not self._accepting:
            await request.reject(503, body=b"server is shutting down\n")
            return
        try:
            self._slots.acquire_nowait()  # synchronous: no race between check and take
        except trio.WouldBlock:
            self.refused_full += 1
            self._cap_report.hit()
            limit = self.settings.max_connections
            await request.reject(
                503,
                extra_headers=[(b"Retry-After", b"1")],
                body=f"server is at its connection limit ({limit}); try again later\n".encode(),
            )
            return
        try:
            ws = await request.accept()
            stream.ws = ws
            conn = _Connection(self, ws, stream)
            self._connections.add(conn)
            try:
                await conn.run()
            finally:
                self._connections.discard(conn)
                with trio.move_on_after(self.settings.close_timeout_s, shield=True):
                    if conn.closing is not None:
                        # We started the close: the client's reply is read by the connection's
                        # reader task, which must outlive the handshake (on_stream cancels it).
                        await conn.closing.wait()
                    await ws.aclose()
        finally:
            self._slots.release()

    # -- accepting ----------------------------------------------------------------------------
    async def accept_loop(
        self,
        listener: trio.SocketListener,
        handlers: trio.Nursery,
        on_stream: Callable[[trio.SocketStream], Awaitable[None]] | None = None,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Accept connections and start :meth:`on_stream` for each, until cancelled (then the
        listener is closed). What ``trio.serve_listeners`` does, except when accept() fails for
        want of resources: out of file descriptors, a connection is still accepted on the one
        kept in reserve and answered HTTP 503 (and the limit logged once); otherwise it waits
        100 ms and tries again. Never a busy loop, never a crash."""
        async with listener:
            task_status.started()
            while True:
                try:
                    stream = await listener.accept()
                except OSError as exc:
                    if exc.errno not in _ACCEPT_CAPACITY_ERRNOS:
                        raise
                    await self._accept_starved(listener, handlers, exc)
                    continue
                self.last_activity = time.monotonic()
                handlers.start_soon(self._run_stream, stream, on_stream or self.on_stream)

    async def _run_stream(
        self,
        stream: trio.SocketStream,
        on_stream: Callable[[trio.SocketStream], Awaitable[None]] | None = None,
    ) -> None:
        try:
            await (on_stream or self.on_stream)(stream)
        finally:
            await trio.aclose_forcefully(stream)

    async def _accept_starved(
        self, listener: trio.SocketListener, handlers: trio.Nursery, exc: OSError
    ) -> None:
        """accept() failed with ``exc`` (EMFILE, ENFILE, ENOMEM, ENOBUFS)."""
        if exc.errno not in (errno.EMFILE, errno.ENFILE) or self._reserve_fd is None:
            self._fd_report.hit()
            await trio.sleep(_ACCEPT_RETRY_S)
            if self._reserve_fd is None:
                self._reserve_fd = _open_reserve_fd()
            return
        os.close(self._reserve_fd)
        self._reserve_fd = None
        try:
            stream = await listener.accept()  # on the descriptor just freed
        except OSError:
            self._fd_report.hit()
            await trio.sleep(_ACCEPT_RETRY_S)
            return
        finally:
            self._reserve_fd = _open_reserve_fd()
        if self._reserve_fd is not None:  # a descriptor came free meanwhile: serve it
            handlers.start_soon(self._run_stream, stream)
            return
        self.refused_fds += 1
        self._fd_report.hit()
        await self._refuse_unread(stream)
        if self._reserve_fd is None:
            self._reserve_fd = _open_reserve_fd()

    async def _refuse_unread(self, stream: trio.SocketStream) -> None:
        """HTTP 503 on a connection whose request was not read; what the client still sends
        is read and dropped (so it reads the answer, not a reset) for at most a second."""
        try:
            with trio.move_on_after(_REFUSE_LINGER_S):
                await stream.send_all(_OUT_OF_FDS_REPLY)
                await stream.send_eof()
                while await stream.receive_some(65536):
                    pass
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            await trio.aclose_forcefully(stream)

    async def _close_connections(self) -> None:
        async with trio.open_nursery() as nursery:
            for conn in list(self._connections):
                nursery.start_soon(conn.close_gracefully)


class _Connection:
    """One accepted websocket: a reader (this task), fire tasks, and a sender when subscribed."""

    def __init__(self, server: HookServer, ws: WebSocketConnection, stream: _ServerStream) -> None:
        self.server = server
        self.ws = ws
        self.stream = stream
        self.tasks: trio.Nursery
        self.fires: trio.Nursery  # set in run(); its own nursery so a cut-off spares the reader
        self.slots = trio.Semaphore(server.settings.max_in_flight)
        self.seq = 0
        self.sub: Subscription[_Record] | None = None
        self.sender_done: trio.Event | None = None
        #: The sender holds records it took from the ring and has not written yet (so none
        #: may be written straight past them).
        self._sender_busy = False
        #: Set while (and after) the server closes this connection; done when the close is.
        self.closing: trio.Event | None = None
        self.scope = trio.CancelScope()

    async def run(self) -> None:
        with self.scope:
            async with trio.open_nursery() as tasks:
                self.tasks = tasks
                self.fires = await tasks.start(_nursery_host)
                try:
                    await self._read_loop()
                finally:
                    # The client is gone (or we closed it): stop its fires and its stream.
                    if self.sub is not None:
                        self.sub.close()
                    tasks.cancel_scope.cancel()

    async def send(self, text: str | bytes) -> bool:
        """Send one text frame (``text``: str, or UTF-8 bytes); False when the connection is
        closed. Not always a checkpoint: a frame the socket takes at once is written there and
        then (see :meth:`send_raw`)."""
        return await self.send_raw(_text_frame(text.encode() if isinstance(text, str) else text))

    async def send_raw(self, frames: bytes) -> bool:
        """Write whole websocket frames: straight to the socket if it takes them now, else
        once no other write is under way and the socket has room. False when the websocket is
        closing or closed, or the connection broke.

        The frames are built here (:func:`_text_frame`), not by trio-websocket: its
        ``send_message`` costs every frame three passes through the scheduler and a frame
        serialiser in Python, and has no batch send; the bytes are the same. Every write goes
        through :class:`_ServerStream`, which keeps writes whole and in order with the
        library's own (pongs, close frames) and sends nothing after a close frame."""
        if self._write_now(frames):
            return True
        return await self.stream.write_data(frames, self.ws)

    def _write_now(self, frames: bytes) -> bool:
        if self.ws.closed is not None or not self.stream.write_nowait(frames):
            return False
        if self.stream.backlog:  # the socket took part of it: the rest goes first, soon
            try:
                self.tasks.start_soon(self.stream.write_data, b"", self.ws)
            except RuntimeError:  # the connection is ending: its close flushes the rest
                pass
        return True

    async def _read_loop(self) -> None:
        while True:
            try:
                frame = await self.ws.get_message()
            except ConnectionClosed:
                return
            limit = self.server.settings.max_message_bytes
            try:
                msg = decode_client(frame, limit)  # raises nothing but WireError
                await self._handle(msg)
            except WireError as err:
                await self.send(encode(err.reply()))
                if err.code == "too_big":
                    await self.ws.aclose(CLOSE_TOO_BIG, f"frame over {limit} bytes")
                    return

    async def _handle(self, msg: ClientMessage) -> None:
        match msg:
            case Fire():
                if not self.server._firing:
                    raise WireError("shutting_down", "server is shutting down", msg.id)
                try:  # backpressure: at most max_in_flight per connection
                    self.slots.acquire_nowait()  # (get_message was this loop's checkpoint)
                except trio.WouldBlock:
                    await self.slots.acquire()
                self.server._fire_started()
                self.fires.start_soon(self._fire, msg)
            case Subscribe():
                await self._subscribe(msg)
            case Unsubscribe():
                await self._unsubscribe()
                await self.send(encode(Unsubscribed(id=msg.id)))
            case Ping():
                await self.send(encode(Pong(id=msg.id)))
            case Stats():
                await self.send(encode(self.server.stats(msg.id)))

    async def _fire(self, msg: Fire) -> None:
        try:
            try:
                outcome = await self.server.engine.fire(msg.event, msg.payload)
            except UnknownEventError as exc:
                reply: Any = ErrorReply(id=msg.id, error=ErrorBody("unknown_event", str(exc)))
            except PayloadError as exc:
                reply = ErrorReply(id=msg.id, error=ErrorBody("invalid_payload", str(exc)))
            except Exception as exc:
                # Our own bug: the event is answered closed (a guard it would have run must not
                # be bypassed by a client reading "error" as "go on").
                log.exception("fire %s failed", msg.event)
                try:
                    reply = OutcomeReply(id=msg.id, outcome=_closed(msg.event, msg.payload, exc))
                except UnknownEventError as unknown:
                    reply = ErrorReply(id=msg.id, error=ErrorBody("unknown_event", str(unknown)))
            else:
                reply = OutcomeReply(id=msg.id, outcome=outcome)
            await self.send(encode_bytes(reply))
        finally:
            self.slots.release()
            self.server._fire_finished()

    # -- the event stream ---------------------------------------------------------------------
    async def _subscribe(self, msg: Subscribe) -> None:
        try:  # every name is checked, even next to "*" (a typo is never silently ignored)
            named = frozenset(canonical_event(name) for name in msg.events if name != "*")
        except UnknownEventError as exc:
            raise WireError("unknown_event", str(exc), msg.id) from None
        events = None if "*" in msg.events else named
        kinds: frozenset[str] | None = None
        if msg.kinds is not None:
            unknown = sorted(set(msg.kinds) - EVENT_KINDS)
            if unknown:
                known = ", ".join(sorted(EVENT_KINDS))
                raise WireError(
                    "unknown_kind", f"unknown kind(s) {unknown} (known: {known})", msg.id
                )
            kinds = frozenset(msg.kinds)

        def accept(record: _Record) -> bool:
            if kinds is not None and record.kind not in kinds:
                return False
            return events is None or record.event is None or record.event in events

        reply = Subscribed(
            id=msg.id,
            events=sorted(events) if events is not None else ["*"],
            kinds=sorted(kinds if kinds is not None else EVENT_KINDS),
            buffer=self.server.hub.capacity,
        )
        if self.sub is not None:  # a new subscribe replaces the filter; seq goes on
            self.sub.accept = accept
            await self.send(encode(reply))
            return
        if self.server.hub.closed:
            raise WireError("shutting_down", "server is shutting down", msg.id)
        self.sub = self.server.hub.subscribe(accept)
        self.server._subscribed.set()
        # The reply goes out before the sender starts, and before records may be written
        # straight from the publisher, so it precedes every event frame.
        await self.send(encode(reply))
        self.sub.direct = self._deliver_now
        self.sender_done = trio.Event()
        self.tasks.start_soon(self._send_events, self.sub, self.sender_done)

    async def _unsubscribe(self) -> None:
        if self.sub is None:
            return
        self.sub.close()
        if self.sender_done is not None:
            await self.sender_done.wait()  # so no event frame follows the reply
        self.sub = None
        self.sender_done = None

    def _deliver_now(self, record: _Record) -> bool:
        """The subscription's :attr:`~Subscription.direct` receiver, called by the publisher
        while the ring is empty: write the record's frame now if the socket takes it, so the
        publisher wakes no task for it. False (the record goes to the ring, for the sender)
        when the sender holds records, another write is under way, or the socket is full."""
        if self._sender_busy:
            return False
        seq = self.seq + 1
        if not self._write_now(_text_frame(event_frame(seq, record.body).encode())):
            return False
        self.seq = seq
        return True

    async def _send_events(self, sub: Subscription[_Record], done: trio.Event) -> None:
        """What the publisher could not write at once: up to :data:`SEND_BATCH` frames from the
        ring per write, a ``lagged`` frame where records were lost."""
        try:
            while True:
                await sub.wait()
                self._sender_busy = True  # no await from taking records to writing them
                try:
                    frames: list[bytes] = []
                    ended = False
                    try:
                        while len(frames) < SEND_BATCH:
                            frames.append(self._event_frame(sub.receive_nowait()))
                    except trio.WouldBlock:
                        pass
                    except Lagged as lag:  # the records lost come after those already taken
                        frames.append(_text_frame(encode(LaggedMsg(missed=lag.missed)).encode()))
                    except (trio.EndOfChannel, trio.ClosedResourceError):
                        ended = True
                    if (frames and not await self.send_raw(b"".join(frames))) or ended:
                        return
                finally:
                    self._sender_busy = False
        finally:
            done.set()

    def _event_frame(self, record: _Record) -> bytes:
        self.seq += 1
        return _text_frame(event_frame(self.seq, record.body).encode())

    async def close_gracefully(self) -> None:
        """Let the stream flush, then close with 1000; abort after ``close_timeout_s``."""
        self.closing = trio.Event()
        try:
            with trio.move_on_after(self.server.settings.close_timeout_s, shield=True) as scope:
                if self.sender_done is not None:
                    await self.sender_done.wait()
                await self.ws.aclose(CLOSE_NORMAL, "server shutting down")
            if scope.cancelled_caught:
                self.scope.cancel()  # a stalled client: drop it
        finally:
            self.closing.set()


class _ServerStream(trio.abc.Stream):
    """A connection's TCP stream as trio-websocket sees it (public ``trio.abc.Stream`` API).

    trio-websocket 0.12 turns wsproto's parse failures (invalid UTF-8 in a text frame: 1007;
    any other protocol error: 1002) into a close *of its own* and drops the TCP connection
    without a close frame; after its 1009 (message over ``max_message_size``) it stops
    reading, so closing the socket on the unread rest resets the connection and the client
    may never see the close frame. So: when the library closes the stream after failing the
    connection with one of those codes, the close frame is sent if the library did not send
    one, and the socket is left to :meth:`finish`, which shuts our side (FIN) and reads and
    drops what the client still sends until it closes, for at most ``linger_s``. Every
    ``send_all`` of the library is one whole wsproto event, and the server writes its own
    frames here whole too (:meth:`write_nowait`, :meth:`write_data`), so no frame lands inside
    another, and none of the server's follows a close frame.
    """

    def __init__(self, stream: trio.SocketStream, linger_s: float, read: bytes = b"") -> None:
        self.stream = stream
        #: What the server read to tell the handshake apart, handed to the library first.
        self._pending = read
        #: The accepted websocket (set by the server right after the handshake).
        self.ws: WebSocketConnection | None = None
        self._linger_s = linger_s
        #: A write is under way; ``_idle`` (when someone waits) is set when it ends.
        self._sending = False
        self._idle: trio.Event | None = None
        #: The rest of a frame :meth:`write_nowait` could write only part of: written before
        #: anything else.
        self._backlog: bytes | memoryview = b""
        self._close_frame_sent = False
        #: Called when the client goes away during the handshake (trio-websocket 0.12 would
        #: wait for a request that cannot come until the handshake timeout).
        self.on_gone: Callable[[], object] | None = None

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self._write(data, library=True)

    async def _write(self, data: bytes | bytearray | memoryview, *, library: bool) -> None:
        """Write ``data`` whole, never inside another write. The library serialises its own
        writes, so only the close frame of :meth:`_send_close_frame` can meet one of them, and
        it waits for the other to end. (Not a ``trio.Lock``: that costs every frame one more
        pass through the scheduler.)"""
        await self._wait_idle()
        if library and self.ws is not None and bytes(data[:1]) == b"\x88":  # FIN + close
            self._close_frame_sent = True
        self._sending = True
        try:
            if self._backlog:
                rest, self._backlog = self._backlog, b""
                await self.stream.send_all(rest)
            if data:
                await self.stream.send_all(data)
        finally:
            self._sending = False
            if self._idle is not None:
                self._idle.set()
                self._idle = None

    def write_nowait(self, frames: bytes) -> bool:
        """Write whole frames of the server's (never the library's) now, without waiting: True
        when they are committed (written, or the rest kept in the backlog that goes out before
        anything else: then someone must :meth:`write_data` soon), False when nothing was
        written (a write is under way, a close frame went out, the socket is full or gone).
        The socket is non-blocking (trio's); no other write can be in progress on it here."""
        if self._sending or self._backlog or self._close_frame_sent:
            return False
        fd = self.stream.socket.fileno()  # -1 once closed (never a reused number)
        if fd < 0:
            return False
        try:
            written = os.write(fd, frames)
        except OSError:  # full (EAGAIN), or broken: the awaiting path finds out which
            return False
        if written < len(frames):
            self._backlog = memoryview(frames)[written:]
        return True

    @property
    def backlog(self) -> int:
        return len(self._backlog)

    async def write_data(self, frames: bytes, ws: WebSocketConnection) -> bool:
        """Write whole frames of the server's (and the backlog first) once no other write is
        under way; ``b""`` just flushes the backlog. False when the websocket is closing or
        closed (nothing is sent after a close frame) or the connection broke."""
        await self._wait_idle()
        if self._close_frame_sent or ws.closed is not None:
            return False
        try:
            await self._write(frames, library=False)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return False
        return True

    async def _wait_idle(self) -> None:
        """Return once no write is under way (at once, without a checkpoint, if none is)."""
        while self._sending:
            if self._idle is None:
                self._idle = trio.Event()
            await self._idle.wait()

    async def wait_send_all_might_not_block(self) -> None:
        await self.stream.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        if self._pending:
            cut = len(self._pending) if max_bytes is None else max_bytes
            data, self._pending = self._pending[:cut], self._pending[cut:]
            await trio.lowlevel.checkpoint()
            return data
        try:
            data = await self.stream.receive_some(max_bytes)
        except trio.BrokenResourceError:
            self._gone()
            raise
        if not data:
            self._gone()
        return data

    def _gone(self) -> None:
        if self.on_gone is not None:
            self.on_gone()

    def _failed(self) -> int | None:
        """The close code if the websocket layer failed the connection for bad input."""
        reason = self.ws.closed if self.ws is not None else None
        return reason.code if reason is not None and reason.code in _FAIL_CODES else None

    async def aclose(self) -> None:
        """The library's close. A failed connection gets its close frame; the socket stays
        open for :meth:`finish`. Otherwise the socket is closed. Closed during the handshake
        (the library refused it: a request that is no websocket handshake, answered 400), the
        handshake is over too (:attr:`on_gone`): its slot is free at once, not after the
        handshake timeout."""
        if self.ws is None:
            self._gone()
        code = self._failed()
        if code is None:
            await self.stream.aclose()
            return
        with trio.move_on_after(self._linger_s):
            await self._send_close_frame(code)
        await trio.lowlevel.checkpoint()

    async def _send_close_frame(self, code: int) -> None:
        close = CloseConnection(code=code, reason=_FAIL_REASONS.get(code))
        frame = FrameWriter(ConnectionType.SERVER).send(close)
        try:
            await self._wait_idle()
            if self._close_frame_sent:
                return
            self._close_frame_sent = True
            await self._write(frame, library=False)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    async def finish(self) -> None:
        """Close the socket, once the library's reader has ended (see the class docstring)."""
        try:
            code = self._failed()
            if code is not None:
                with trio.move_on_after(self._linger_s):
                    await self._send_close_frame(code)
                    await self.stream.send_eof()
                    while await self.stream.receive_some(65536):
                        pass  # what the client still sends: read (so no reset) and dropped
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            await self.stream.aclose()


class RelaySocketError(Exception):
    """The relay socket cannot be had; the message says why."""


async def open_relay_listener(path: str) -> tuple[trio.SocketListener, tuple[int, int]]:
    """Listen on the unix socket ``path`` (mode 0600, in a private directory of ours), and the
    socket file's ``(st_dev, st_ino)``. Called with ``serve.lock`` held, or for a serve the
    relays recorded dead (:func:`dead_relay_socket`): a socket of ours at ``path`` was left by
    a serve that died, is that dead one's, or is a serve's that took it over from a dead one
    without the lock -- it is replaced (that serve goes on with no relays, until it exits).
    Anything else there is not (raises :class:`RelaySocketError`). The new socket is bound
    beside it and renamed into place: relays never find the path empty."""
    with contextlib.suppress(FileNotFoundError):
        st = os.lstat(path)
        if not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.getuid():
            raise RelaySocketError(f"{path} exists and is not a socket of ours")
    directory = os.path.dirname(path)
    # No longer than the socket's own name: a path that fits, fits beside it.
    beside = os.path.join(directory, f".s{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(beside)  # (left by a serve of the same pid that died)
    sock = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
    try:
        old_umask = os.umask(0o177)  # born 0600: never a moment others could connect
        try:
            await sock.bind(beside)
        finally:
            os.umask(old_umask)
        sock.listen(128)
        bound = os.lstat(beside)
        os.rename(beside, path)
    except BaseException:
        sock.close()
        with contextlib.suppress(OSError):
            os.unlink(beside)
        raise
    return trio.SocketListener(sock), (bound.st_dev, bound.st_ino)


def _remove_socket(path: str, bound: tuple[int, int]) -> None:
    """Remove the relay socket at shutdown, if it is still the one this serve bound (``bound``:
    its ``(st_dev, st_ino)``; another serve may have taken the path over)."""
    try:
        st = os.lstat(path)
        if (st.st_dev, st.st_ino) == bound:
            os.unlink(path)
    except OSError:
        pass


async def _tcp_listeners(settings: ServeSettings, host: str) -> list[trio.SocketListener]:
    """The TCP listeners of ``settings.port``. An auto-started serve (``tcp_optional``) whose
    port is taken listens on a free port instead -- the one it got is what ``serve.json`` says,
    so ``watch`` finds it -- and, when it can have no TCP port at all, serves the relay socket
    alone (no URL in ``serve.json``)."""
    try:
        return await trio.open_tcp_listeners(settings.port, host=host)
    except OSError as exc:
        if not (settings.tcp_optional and settings.agent_socket):
            raise
        taken = exc.strerror or str(exc)
    try:
        listeners = await trio.open_tcp_listeners(0, host=host)
    except OSError as exc:
        log.warning(
            "serve: cannot listen on %s port %d (%s), nor on any other port (%s): serving the "
            "relay socket only",
            host,
            settings.port,
            taken,
            exc.strerror or exc,
        )
        return []
    log.warning(
        "serve: cannot listen on %s port %d (%s): listening on port %d instead (serve.json "
        "says so; http catch-alls written for port %d do not reach this serve)",
        host,
        settings.port,
        taken,
        listeners[0].socket.getsockname()[1],
        settings.port,
    )
    return listeners


async def _nursery_host(*, task_status: trio.TaskStatus[trio.Nursery]) -> None:
    async with trio.open_nursery() as nursery:
        task_status.started(nursery)
        await trio.sleep_forever()


async def serve(
    settings: ServeSettings, *, task_status: trio.TaskStatus[HookServer] = trio.TASK_STATUS_IGNORED
) -> None:
    """Open the engine, listen, and serve until :meth:`HookServer.shutdown` is called.

    Supports ``server = await nursery.start(serve, settings)`` (started once listening). Returns
    after the graceful shutdown. On cancel: stops at once, but the engine's close (post-queue
    drain, shielded) still runs.

    First raises the process's soft file descriptor limit towards what ``max_connections``
    needs (:func:`raise_fd_limit`).
    """
    host = DEFAULT_HOST if settings.host == "localhost" else settings.host  # one port for port 0
    raise_fd_limit(fds_needed(settings.max_connections))
    async with trio.open_nursery() as connections:
        async with HookEngine.open(**settings.engine) as engine:
            server = HookServer(engine, settings, connections)
            server.host = host
            engine.add_listener(server.on_engine_event)
            server._reserve_fd = _open_reserve_fd()
            bound: tuple[int, int] | None = None  # the relay socket file, once ours
            try:
                async with trio.open_nursery() as listening:
                    listeners = await _tcp_listeners(settings, host)
                    if listeners:
                        server.port = listeners[0].socket.getsockname()[1]
                    for listener in listeners:
                        await listening.start(server.accept_loop, listener, connections)
                    if settings.agent_socket is not None:
                        unix, bound = await open_relay_listener(settings.agent_socket)
                        await listening.start(
                            server.accept_loop, unix, connections, server.on_relay_stream
                        )
                    if settings.idle_exit_s is not None:
                        listening.start_soon(server.exit_when_idle, settings.idle_exit_s)
                    task_status.started(server)
                    await server._shutdown.wait()
                    server._accepting = False
                    listening.cancel_scope.cancel()  # stop accepting
            finally:
                if settings.agent_socket is not None and bound is not None:
                    _remove_socket(settings.agent_socket, bound)
                if server._reserve_fd is not None:
                    os.close(server._reserve_fd)
                    server._reserve_fd = None
            await server._finish_fires()
        # The engine is closed here: its post queue drained, and subscribers were told
        # (``closed``). Now the stream ends and every socket closes normally.
        server.hub.close()
        await server._close_connections()
        connections.cancel_scope.cancel()
    server.done.set()


# -- the command line ---------------------------------------------------------------------------
def add_serve_command(sub: argparse._SubParsersAction[Any]) -> None:
    """Register ``triohooks serve`` on the CLI's subparsers."""
    from .cli import scope_args

    p = sub.add_parser("serve", help="serve the websocket event stream and remote fire protocol")
    scope_args(p)
    p.add_argument("--host", default=DEFAULT_HOST, help="address to bind (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (default: 8765; 0: any)")
    p.add_argument(
        "--token-file",
        type=Path,
        default=None,
        help="file holding the bearer token (default: generate one under the state dir)",
    )
    p.add_argument(
        "--allow-remote", action="store_true", help="allow binding a non-loopback address"
    )
    p.add_argument(
        "--max-connections",
        type=_positive_int,
        default=DEFAULT_MAX_CONNECTIONS,
        help="open websockets at once; beyond it a handshake is answered HTTP 503 (default: 256)",
    )
    p.add_argument(
        "--max-message-bytes",
        type=_positive_int,
        default=MAX_FRAME_BYTES,
        help="largest client message in bytes; bigger ones are closed with 1009 (default: 1 MiB)",
    )
    p.add_argument("--trust", action="store_true", help="trust the workspace's hooks for this run")
    p.add_argument("--no-audit", action="store_true", help="write no audit records")
    p.add_argument(
        "--idle-exit",
        type=_positive_int,
        default=None,
        metavar="SECONDS",
        help="shut down after this long with no connection and no request",
    )
    p.add_argument(
        "--auto",
        action="store_true",
        help="as started by triohooks-relay: leave at once if another serve runs, and listen on "
        "a free port if the port is taken (serve.json names it)",
    )


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {value}")
    return value


class ServeError(Exception):
    """A usage problem of ``serve``: one line on stderr, exit 1."""


def _kept_token(path: Path) -> str | None:
    """The token a previous ``serve`` generated, kept across restarts (so the
    ``$TRIOHOOKS_TOKEN`` an agent's http hooks send stays valid): only from a regular file of
    ours that nobody else may read or write, else None (a new one is generated)."""
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
            return None
        token = read_regular_file(path, 4096).decode().strip()
    except (OSError, UnreadableFileError, UnicodeDecodeError):
        return None
    return token if len(token) >= 32 else None


def _load_token(token_file: Path | None) -> tuple[str, Path]:
    if token_file is not None:
        try:
            token = token_file.read_text().strip()
        except OSError as exc:
            raise ServeError(f"cannot read token file {token_file}: {exc.strerror}") from None
        if not token:
            raise ServeError(f"token file {token_file} is empty")
        return token, token_file
    path = private_dir(state_dir()) / TOKEN_FILE_NAME
    kept = _kept_token(path)
    if kept is not None:
        return kept, path
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, (token + "\n").encode())
    finally:
        os.close(fd)
    return token, path


def settings_from_args(args: argparse.Namespace) -> tuple[ServeSettings, Path]:
    if not is_loopback(args.host) and not args.allow_remote:
        raise ServeError(
            f"refusing to bind non-loopback address {args.host} without --allow-remote"
        )
    workspace: Path = args.workspace if args.workspace is not None else Path.cwd()
    if not workspace.is_dir():
        raise ServeError(f"workspace {workspace} is not a directory")
    token, token_path = _load_token(args.token_file)
    engine: dict[str, Any] = {
        "workspace": workspace,
        "config_dir": args.config_dir,
        "extra_configs": list(args.configs),
        "trust": args.trust,
        "audit": not args.no_audit,
    }
    settings = ServeSettings(
        token=token,
        host=args.host,
        port=args.port,
        engine=engine,
        max_connections=args.max_connections,
        max_message_bytes=args.max_message_bytes,
        tcp_optional=args.auto,
        idle_exit_s=args.idle_exit,
    )
    return settings, token_path


def take_relay_socket() -> tuple[int, str] | None:
    """The lock on ``serve.lock`` in the private state dir and the relay socket's path, or None
    when another serve holds them (one serve per user answers the relays)."""
    import fcntl

    directory = private_dir(state_dir())
    fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd, str(directory / SOCKET_FILE)


def dead_relay_socket() -> tuple[str, str] | None:
    """The relay socket's path and why its serve is dead, when the relays recorded it so
    (:func:`.relay.remembered_dead`): a serve then takes the socket over without the lock,
    which the dead one still holds; else None."""
    directory = private_dir(state_dir())
    try:
        found = os.lstat(directory / SOCKET_FILE)
    except OSError:
        return None
    why = relay.remembered_dead(str(directory), found)
    return (str(directory / SOCKET_FILE), why) if why else None


async def _serve_until_signalled(settings: ServeSettings, token_path: Path) -> int:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            server: HookServer = await nursery.start(serve, settings)
            # When OTEL_* say so; its counts go into the stats reply.
            server.telemetry = await nursery.start(otel.export_while_serving, server.engine)
            announced = _announce(server, token_path)  # (before saying so: watch finds it)
            if server.port:
                print(f"triohooks serve: listening on {server.url}", flush=True)
            else:
                print("triohooks serve: no TCP port: serving the relay socket only", flush=True)
            print(f"triohooks serve: token in {token_path}", flush=True)
            if not is_loopback(settings.host):
                print(
                    "triohooks serve: warning: listening beyond loopback without TLS",
                    file=sys.stderr,
                    flush=True,
                )
            nursery.start_soon(_on_signals, signals, server, nursery.cancel_scope)
            nursery.start_soon(_refresh_relay_client)
            try:
                await server.done.wait()
            finally:
                _withdraw(announced)
            nursery.cancel_scope.cancel()
    print("triohooks serve: stopped", flush=True)
    return 0


async def _refresh_relay_client() -> None:
    """The native relay client rebuilt when an older triohooks built it (:func:`.relay_build.
    refresh`), in a worker thread while serve answers; said in serve's log. Never fatal: the
    catch-alls go on with what they have."""
    from . import relay_build

    try:
        said = await trio.to_thread.run_sync(relay_build.refresh)
    except Exception:  # our own bug: logged, serve goes on
        log.exception("serve: could not bring the relay client up to date")
        return
    if said is not None:
        log.warning("serve: %s", said)


def _announce(server: HookServer, token_path: Path) -> Path | None:
    """Write ``serve.json`` (host, port, token file, pid, relay socket) in the state dir, for
    ``watch`` and ``doctor``; None if it cannot be written."""
    listening = server.port != 0  # (0: no TCP port could be had; the relay socket only)
    info = {
        "host": server.host,
        "port": server.port if listening else None,
        "token_file": str(token_path.resolve()),
        "pid": os.getpid(),
        "url": server.url if listening else None,
        "socket": server.settings.agent_socket,
    }
    try:
        directory = private_dir(state_dir())
        path = directory / SERVE_FILE
        write_file_atomic(path, msgspec.json.encode(info), new_mode=0o600)
    except OSError as exc:
        print(f"triohooks serve: warning: cannot write {SERVE_FILE}: {exc}", file=sys.stderr)
        return None
    return path


def _withdraw(path: Path | None) -> None:
    """Remove ``serve.json`` if it is still ours (another serve may have replaced it)."""
    if path is None:
        return
    try:
        info = msgspec.json.decode(path.read_bytes())
        if isinstance(info, dict) and info.get("pid") == os.getpid():
            path.unlink()
    except (OSError, msgspec.DecodeError):
        pass


async def _on_signals(signals: Any, server: HookServer, hard_stop: trio.CancelScope) -> None:
    async for signum in signals:
        if server.shutting_down:  # a second signal: stop now (the post-queue drain still runs)
            print("triohooks serve: stopping now", file=sys.stderr, flush=True)
            hard_stop.cancel()
            return
        name = signal.Signals(signum).name
        print(f"triohooks serve: {name}: shutting down", file=sys.stderr, flush=True)
        server.shutdown()


def cmd_serve(args: argparse.Namespace) -> int:
    """``triohooks serve``: 0 after a graceful shutdown, 1 for usage or config errors."""
    try:
        settings, token_path = settings_from_args(args)
    except ServeError as exc:
        print(f"triohooks: {exc}", file=sys.stderr)
        return 1
    held = take_relay_socket()
    dead = dead_relay_socket() if held is None else None
    if held is None and args.auto and dead is None:
        print("triohooks serve: another serve answers the relays; leaving", flush=True)
        return 0
    if dead is not None:
        # The relays found the serve holding the socket dead: they run every hook themselves
        # until another serve answers. It keeps serve.lock (a stopped process holds it), so
        # this one is found by the socket alone.
        print(f"triohooks serve: {dead[1]}; taking the relay socket over", flush=True)
        settings = msgspec.structs.replace(settings, agent_socket=dead[0])
    elif held is None:
        print(
            "triohooks serve: warning: another serve holds the relay socket; this one answers "
            "websocket and http clients only",
            file=sys.stderr,
            flush=True,
        )
    else:
        settings = msgspec.structs.replace(settings, agent_socket=held[1])
    try:
        return trio.run(_serve_until_signalled, settings, token_path)
    except Exception as exc:
        from .cli import describe_failure, expected_error

        if expected_error(exc) is not None:
            raise  # a config error: the CLI reports it (exit 1)
        # The engine failed (an actor past its restart budget, a bug): every connection was
        # closed, so no agent is left waiting on an answer it will not get.
        print(
            f"triohooks serve: engine failed, stopped serving: {describe_failure(exc)}",
            file=sys.stderr,
        )
        return EXIT_ENGINE_FAILED


def _closed(event: str, payload: Mapping[str, Any], exc: Exception) -> Outcome:
    """The fail-closed Outcome of a ``fire`` our own code failed to answer: the event's own
    shape, as far as its payload can give it."""
    from types import SimpleNamespace

    from triohooks.combine.outcome import internal_error_outcome

    name = canonical_event(event)
    fields = {k: payload.get(k) for k in ("args", "prompt", "result", "error")}
    return internal_error_outcome(name, SimpleNamespace(**fields), repr(exc))
