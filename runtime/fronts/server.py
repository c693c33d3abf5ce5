"""``triohooks serve``'s server: one engine behind one TCP port and the relay socket, on trio.

Drives the protocols of :mod:`.serve_protocol` (h11 requests, wsproto frames) over trio
streams; owns the service around a :class:`~triohooks.engine.hook_engine.HookEngine`: the
listeners, what each connection may hold, the bearer-token check of a websocket handshake
(HTTP 401 before any message is read, constant-time compare), one task reading each websocket,
one writing it (every frame queued in the connection's protocol and written by that task, so
writes never interleave and a burst goes out in one write), fires run concurrently per
connection (at most ``max_in_flight``, then the reader waits), the event stream (engine
listener -> :class:`~triohooks.actors.broadcast.Broadcaster` -> a record's frame queued
straight away while the connection's queue is short, else kept in its ring for its sender
task, so a stalled client loses its oldest records and is told ``lagged`` while nobody else
waits), and the graceful shutdown: stop accepting, finish in-flight fires, close the engine
(which drains the post queue for up to 5 s), let subscribers flush, close every websocket
with 1000, exit 0.

The limits on what clients can make it hold: at most ``max_connections`` websockets (one more
authenticated handshake gets HTTP 503) and as many TCP connections whose first request is not
yet read (``handshake_timeout_s`` to send it whole; beyond that many a new one closes the
oldest unread); a connection's slot is freed as soon as its request is answered or refused; messages
of at most ``max_message_bytes`` (``too_big`` and close 1009 beyond, the connection closed
within :data:`FAIL_LINGER_S`); the soft file descriptor limit raised to what
``max_connections`` needs, a connection past the descriptors answered HTTP 503 on one kept in
reserve, every limit logged once when hit (:class:`_LimitReport`).

The agents' requests (:mod:`.agent_http`) come two ways: ``POST /<agent>/v1/hook`` on the TCP
port (the http transport: a token, every refusal answered with the event's deny, counted and
logged), and the relay socket ``serve.sock`` in the private state dir (one serve per user
holds it, under ``serve.lock``, or takes it over from one the relays recorded dead; the
peer's uid is checked). ``idle_exit_s`` shuts an auto-started serve down.

It must not parse HTTP or websocket frames (:mod:`.serve_protocol` does), contain decision
logic or run hooks (the engine does), define message shapes (``wire`` does), or hold the
command line (:mod:`.serve_cli`). A failure in one connection is contained and logged.
"""

from __future__ import annotations

import contextlib
import errno
import hmac
import logging
import os
import resource
import stat
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

import msgspec
import trio

from triohooks.actors.broadcast import Broadcaster, Lagged, Subscription
from triohooks.agents.runner import AgentInput
from triohooks.config.events import PayloadError, UnknownEventError, canonical_event
from triohooks.engine.hook_engine import HookEngine

from . import agent_http, relay
from .agent_http import linger, receive, send
from .serve_protocol import (
    TEXT,
    HttpConnection,
    HttpError,
    HttpRequest,
    WebSocket,
    error_body,
    presented_token,
    response,
)
from .wire import (
    CLOSE_NORMAL,
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

    from .otel import Telemetry

log = logging.getLogger("triohooks.server")

DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 8765
DEFAULT_MAX_CONNECTIONS: Final = 256
#: The relay socket's name in the state dir.
SOCKET_FILE: Final = relay.SOCKET_NAME
_RESERVED_DATA_KEYS: Final = frozenset({"event"})
#: Event frames queued at once by a subscriber's sender (see ``_Connection._send_events``).
SEND_BATCH: Final = 128
#: Bytes queued on a websocket past which writers wait (fires) or records stay in the
#: subscriber's ring (the stream), until the socket takes some.
HIGH_WATER: Final = 64 * 1024
#: After a close frame for bad input (1002, 1007, 1009), how long the client gets to answer
#: it before the connection is closed anyway.
FAIL_LINGER_S: Final = 1.0
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
_RETRY: Final = [(b"Retry-After", b"1")]
_OUT_OF_FDS_REPLY: Final = response(
    503, b"server is out of file descriptors; try again later\n", type_=TEXT, headers=_RETRY
)
_REFUSED_TOKEN: Final = response(
    401,
    b"missing or wrong bearer token\n",
    type_=TEXT,
    headers=[(b"WWW-Authenticate", b'Bearer realm="triohooks"')],
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
    #: A TCP connection's first request (a websocket handshake, an agent hook request) must
    #: be whole within this long.
    handshake_timeout_s: float = 10.0
    #: Open websockets at once; one more authenticated handshake is answered HTTP 503. As many
    #: TCP connections again may be reading their first request; beyond that a new one is
    #: closed unread.
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    #: Largest client message (UTF-8 bytes) and agent request body; also bounds what a
    #: connection buffers for one.
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


class _LimitReport:
    """Says, once, that a limit was hit: a warning the first time, then at most one every
    :data:`LIMIT_REPORT_EVERY_S` while it keeps being hit, with how many were refused since."""

    def __init__(self) -> None:
        self._last: float | None = None
        self._since = 0

    def hit(self, said: str) -> None:
        self._since += 1
        now = time.monotonic()
        if self._last is not None and now - self._last < LIMIT_REPORT_EVERY_S:
            return
        again = f" ({self._since} refused since the last report)" if self._last is not None else ""
        log.warning("%s%s", said, again)
        self._last, self._since = now, 0


def fds_needed(max_connections: int) -> int:
    """File descriptors ``serve`` may hold at ``max_connections``: one per open websocket and
    one per connection reading its first request (as many again), plus :data:`FD_HEADROOM`."""
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
            "serve: the file descriptor limit (%s) is below the %d that --max-connections can "
            "use; connections past it are answered HTTP 503. Raise it (ulimit -n; the hard "
            "limit: ulimit -Hn, or LimitNOFILE= in a systemd unit) or lower --max-connections",
            _fd_limit_text(),
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
        #: because newer ones came while too many were sending their first request.
        self.refused_full = 0
        self.refused_handshakes = 0
        #: Connections answered HTTP 503 (unread) because the process had no descriptor left.
        self.refused_fds = 0
        #: The OTLP export of this server (:func:`serve`'s ``telemetry``), for the stats.
        self.telemetry: Telemetry | None = None
        self._cap_report = _LimitReport()
        self._handshake_report = _LimitReport()
        self._http_report = _LimitReport()
        self._fd_report = _LimitReport()
        self._reserve_fd: int | None = None
        self._slots = trio.CapacityLimiter(settings.max_connections)
        #: TCP connections still sending their first request, oldest first: their read's
        #: cancel scope (a new connection past ``max_connections`` evicts the oldest).
        self._handshakes: dict[trio.CancelScope, None] = {}
        #: Connections serving agent hook requests (``POST /claude/v1/hook`` ..., TCP ones once
        #: authenticated, and the relay socket's).
        self._http_connections = 0
        #: Agent-hook requests refused (no or wrong token, unreadable input) and relay
        #: connections from another user.
        self.refused_requests = 0
        self._refusal_report = _LimitReport()
        #: Who every relay-socket connection is (the kernel vouched for the user's uid).
        self._relay_peer = agent_http.Peer(
            token=None, on_refused=self.refused, fire=self._fire_command
        )
        #: Connections open (any listener, from accept to close), and when the last one closed.
        self._open = 0
        self.last_activity = time.monotonic()

    def refused(self, why: str) -> None:
        """An agent-hook request was refused: counted, and logged (rate-limited)."""
        self.refused_requests += 1
        self._refusal_report.hit(f"serve: agent hook request refused: {why}")

    def _out_of_fds(self) -> None:
        limit = self.settings.max_connections
        self._fd_report.hit(
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
        return len(self._handshakes)

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
            audit=self.engine.audit_stats,
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
        """Shut down once no connection is open and none closed for ``idle_s``."""
        while True:
            if self._open:
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
        """One TCP connection: its first request read whole (within ``handshake_timeout_s``,
        in one of ``max_connections`` slots, freed as soon as it is read), then a websocket
        (``GET``) or agent hook requests (``POST``). Contains its failures."""
        if len(self._handshakes) >= self.settings.max_connections:
            # The oldest still sending its first request goes: a client that says it all at
            # once (every agent, the relay, a websocket client) is never the oldest for long,
            # and one that holds connections open without a request cannot shut the port.
            oldest = next(iter(self._handshakes))
            del self._handshakes[oldest]
            oldest.cancel()
            self.refused_handshakes += 1
            self._handshake_report.hit(
                f"serve: {self.settings.max_connections} connections are sending their first "
                "request (as many as --max-connections): each new TCP connection closes the "
                "oldest of them unread (a client that sends nothing useful cannot lock others out)"
            )
        reading = trio.move_on_after(self.settings.handshake_timeout_s)
        self._handshakes[reading] = None
        http = HttpConnection(self.settings.max_message_bytes)
        request: HttpRequest | HttpError | None = None
        try:
            with reading:
                request = await agent_http.read_request(stream, http)
        except HttpError as exc:
            request = exc
        finally:
            self._handshakes.pop(reading, None)  # (before any answer: the slot is free at once)
        if request is None or (isinstance(request, HttpError) and request.eof):
            return  # the client left, or did not say it all in time
        if isinstance(request, HttpError):
            await agent_http.answer_unread(stream, response(request.status, error_body(request)))
        elif request.method == "POST":
            await self._serve_agent_http(stream, http, request)
        elif request.method == "GET":
            await self._serve_websocket(stream, http, request)
        else:
            why = "a websocket handshake (GET) or an agent hook request (POST) only"
            await send(stream, response(400, error_body(why)))

    async def _agent_hook(
        self, agent: str, body: AgentInput, env: dict[str, str] | None, scope: str | None
    ) -> Any:
        return await self.engine.agent_hook(agent, body, adopted_only=True, env=env, scope=scope)

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
        return await answer_request(self.engine, said, body, env, own_settings=plain)

    def _take_http_slot(self) -> bool:
        limit = self.settings.max_connections
        if self._http_connections >= limit:
            self._http_report.hit(
                f"serve: {limit} agent hook connections open (as many as --max-connections "
                f"{limit}): new ones are answered HTTP 503 (the relay then runs the hooks itself)"
            )
            return False
        self._http_connections += 1
        return True

    async def _serve_agent_http(
        self, stream: trio.SocketStream, http: HttpConnection, first: HttpRequest
    ) -> None:
        """``POST /<agent>/v1/hook`` requests on a TCP connection (see :mod:`.agent_http`),
        in a slot of its own once its first request showed the token."""
        counted = False

        def authenticated() -> bool:
            nonlocal counted
            counted = self._take_http_slot()
            return counted

        peer = agent_http.Peer(
            token=self._token, on_authenticated=authenticated, on_refused=self.refused
        )
        try:
            await agent_http.serve_connection(
                stream, http, peer=peer, handle=self._agent_hook, first=first
            )
        finally:
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
                HttpConnection(self.settings.max_message_bytes),
                peer=self._relay_peer,
                handle=self._agent_hook,
            )
        finally:
            self._http_connections -= 1

    async def _serve_websocket(
        self, stream: trio.SocketStream, http: HttpConnection, request: HttpRequest
    ) -> None:
        """A websocket handshake: validated, the token checked, a slot taken, then the
        websocket served until it closes."""
        try:
            ws = WebSocket(request, self.settings.max_message_bytes)
            given = presented_token(request)
        except HttpError as exc:
            await send(stream, response(exc.status, error_body(exc)))
            return
        if given is None or not hmac.compare_digest(given.encode(), self._token):
            self.rejected += 1
            await send(stream, _REFUSED_TOKEN)
            return
        if not self._accepting:
            await send(stream, response(503, b"server is shutting down\n", type_=TEXT))
            return
        try:
            self._slots.acquire_nowait()  # synchronous: no race between check and take
        except trio.WouldBlock:
            self.refused_full += 1
            limit = self.settings.max_connections
            self._cap_report.hit(
                f"serve: at the connection limit, {limit} websockets open (--max-connections "
                f"{limit}): new ones are answered HTTP 503 until one closes; start serve with a "
                "larger --max-connections to allow more"
            )
            body = f"server is at its connection limit ({limit}); try again later\n".encode()
            await send(stream, response(503, body, type_=TEXT, headers=_RETRY))
            return
        try:
            if await send(stream, ws.accept(http.trailing_data)):
                conn = _Connection(self, stream, ws)
                self._connections.add(conn)
                try:
                    await conn.run()
                finally:
                    self._connections.discard(conn)
        finally:
            self._slots.release()
        if not ws.closed:  # cut off (bad input unanswered, a stalled client): unread bytes
            await linger(stream, FAIL_LINGER_S)

    # -- accepting ----------------------------------------------------------------------------
    async def accept_loop(
        self,
        listener: trio.SocketListener,
        handlers: trio.Nursery,
        on_stream: Callable[[trio.SocketStream], Awaitable[None]],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Accept connections and start ``on_stream`` for each, until cancelled (then the
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
                    await self._accept_starved(listener, handlers, on_stream, exc)
                    continue
                handlers.start_soon(self._run_stream, stream, on_stream)

    async def _run_stream(
        self, stream: trio.SocketStream, on_stream: Callable[[trio.SocketStream], Awaitable[None]]
    ) -> None:
        self._open += 1
        try:
            await on_stream(stream)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        except Exception:
            log.exception("connection failed")
        finally:
            self._open -= 1
            self.last_activity = time.monotonic()
            await trio.aclose_forcefully(stream)

    async def _accept_starved(
        self,
        listener: trio.SocketListener,
        handlers: trio.Nursery,
        on_stream: Callable[[trio.SocketStream], Awaitable[None]],
        exc: OSError,
    ) -> None:
        """accept() failed with ``exc`` (EMFILE, ENFILE, ENOMEM, ENOBUFS)."""
        if exc.errno not in (errno.EMFILE, errno.ENFILE) or self._reserve_fd is None:
            self._out_of_fds()
            await trio.sleep(_ACCEPT_RETRY_S)
            if self._reserve_fd is None:
                self._reserve_fd = _open_reserve_fd()
            return
        os.close(self._reserve_fd)
        self._reserve_fd = None
        try:
            stream = await listener.accept()  # on the descriptor just freed
        except OSError:
            self._out_of_fds()
            await trio.sleep(_ACCEPT_RETRY_S)
            return
        finally:
            self._reserve_fd = _open_reserve_fd()
        if self._reserve_fd is not None:  # a descriptor came free meanwhile: serve it
            handlers.start_soon(self._run_stream, stream, on_stream)
            return
        self.refused_fds += 1
        self._out_of_fds()
        await self._refuse_unread(stream)
        if self._reserve_fd is None:
            self._reserve_fd = _open_reserve_fd()

    async def _refuse_unread(self, stream: trio.SocketStream) -> None:
        """HTTP 503 on a connection whose request was not read."""
        try:
            await agent_http.answer_unread(stream, _OUT_OF_FDS_REPLY)
        finally:
            await trio.aclose_forcefully(stream)

    async def _close_connections(self) -> None:
        async with trio.open_nursery() as nursery:
            for conn in list(self._connections):
                nursery.start_soon(conn.close_gracefully)


class _Connection:
    """One accepted websocket: a reader (the task that runs it), a writer, fire tasks, and a
    sender when subscribed. Every frame is queued in :attr:`ws` (the protocol) and written by
    the writer task alone."""

    def __init__(self, server: HookServer, stream: trio.SocketStream, ws: WebSocket) -> None:
        self.server = server
        self.stream = stream
        self.ws = ws
        self.tasks: trio.Nursery
        self.fires: trio.Nursery  # set in run(); its own nursery so a cut-off spares the reader
        self.slots = trio.Semaphore(server.settings.max_in_flight)
        self.seq = 0
        self.sub: Subscription[_Record] | None = None
        self.sender_done: trio.Event | None = None
        self.scope = trio.CancelScope()
        #: Set when :meth:`run` has returned.
        self.done = trio.Event()
        self._wakeup = trio.Event()  # the writer's: something was queued
        self._progress: trio.Event | None = None  # set after each write (for who waits)
        self._lingering = False
        self._writing = False  # the writer has bytes in flight

    async def run(self) -> None:
        try:
            with self.scope:
                async with trio.open_nursery() as tasks:
                    self.tasks = tasks
                    self.fires = await tasks.start(_nursery_host)
                    tasks.start_soon(self._write_loop)
                    try:
                        await self._read_loop()
                        with trio.move_on_after(self.server.settings.close_timeout_s):
                            await self._flushed()
                    finally:
                        # The client is gone (or we closed it): stop its fires and its stream.
                        if self.sub is not None:
                            self.sub.close()
                        tasks.cancel_scope.cancel()
        finally:
            self.done.set()

    # -- writing ------------------------------------------------------------------------------
    async def _write_loop(self) -> None:
        while True:
            await self._wakeup.wait()
            self._wakeup = trio.Event()
            while self.ws.pending:
                self._writing = True
                sent = await send(self.stream, self.ws.data_to_send())
                self._writing = False
                if not sent:
                    self.scope.cancel()  # the connection broke: nothing more to do on it
                    return
                if self._progress is not None:
                    self._progress.set()
                    self._progress = None

    async def _wrote(self) -> None:
        """Return after the writer's next write."""
        if self._progress is None:
            self._progress = trio.Event()
        await self._progress.wait()

    async def _flushed(self) -> None:
        while self.ws.pending or self._writing:
            await self._wrote()

    async def send(self, text: str | bytes) -> bool:
        """Queue one text frame (``text``: str, or UTF-8 bytes); False once the websocket is
        closing. Waits while more than :data:`HIGH_WATER` bytes are queued (not a checkpoint
        otherwise)."""
        if not self.ws.send_text(text):
            return False
        self._wakeup.set()
        while self.ws.pending > HIGH_WATER:
            await self._wrote()
        return True

    # -- reading ------------------------------------------------------------------------------
    async def _read_loop(self) -> None:
        limit = self.server.settings.max_message_bytes
        while not self.ws.closed:
            data = await receive(self.stream)
            self.ws.receive(data)
            for message in self.ws.messages():
                try:  # (never over the limit: the protocol refused such a message)
                    await self._handle(decode_client(message, limit))  # raises only WireError
                except WireError as err:
                    await self.send(encode(err.reply()))
            self._wakeup.set()  # pongs, close frames, an error and its close: written now
            if self.ws.closing not in (None, CLOSE_NORMAL) and not self._lingering:
                # Bad input closed it: the client gets FAIL_LINGER_S to answer the close.
                self._lingering = True
                self.tasks.start_soon(self._cut_off, FAIL_LINGER_S)
            if not data:
                return

    async def _cut_off(self, seconds: float) -> None:
        await trio.sleep(seconds)
        with trio.move_on_after(self.server.settings.close_timeout_s):
            await self._flushed()
        self.scope.cancel()

    async def _handle(self, msg: ClientMessage) -> None:
        match msg:
            case Fire():
                if not self.server._firing:
                    raise WireError("shutting_down", "server is shutting down", msg.id)
                try:  # backpressure: at most max_in_flight per connection
                    self.slots.acquire_nowait()  # (receive_some was this loop's checkpoint)
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
        while the ring is empty: queue the record's frame now while the connection's queue is
        short, so the publisher wakes no sender for it. False (the record goes to the ring,
        for the sender) when the queue is over :data:`HIGH_WATER` or the websocket closing."""
        if self.ws.pending > HIGH_WATER or not self.ws.send_text(
            event_frame(self.seq + 1, record.body)
        ):
            return False
        self.seq += 1
        self._wakeup.set()
        return True

    async def _send_events(self, sub: Subscription[_Record], done: trio.Event) -> None:
        """What the publisher could not queue at once: up to :data:`SEND_BATCH` frames from
        the ring at a time, once the queue is short again; a ``lagged`` frame where records
        were lost. Records are taken from the ring only when they can be queued, so those a
        stalled client cannot take are lost there, and counted."""
        try:
            while True:
                await sub.wait()
                while self.ws.pending > HIGH_WATER:
                    await self._wrote()
                ended = False
                for _ in range(SEND_BATCH):  # no await from taking records to queueing them
                    try:
                        record = sub.receive_nowait()
                    except trio.WouldBlock:
                        break
                    except Lagged as lag:  # the records lost come after those already taken
                        self.ws.send_text(encode(LaggedMsg(missed=lag.missed)))
                        break
                    except (trio.EndOfChannel, trio.ClosedResourceError):
                        ended = True
                        break
                    self.seq += 1
                    self.ws.send_text(event_frame(self.seq, record.body))
                self._wakeup.set()
                if ended or not self.ws.open:
                    return
        finally:
            done.set()

    async def close_gracefully(self) -> None:
        """Let the stream flush, then close with 1000 and wait for the client's close frame;
        drop the connection after ``close_timeout_s``."""
        with trio.move_on_after(self.server.settings.close_timeout_s, shield=True) as scope:
            if self.sender_done is not None:
                await self.sender_done.wait()
            self.ws.close(CLOSE_NORMAL, "server shutting down")
            self._wakeup.set()
            await self.done.wait()
        if scope.cancelled_caught:
            self.scope.cancel()  # a stalled client: drop it


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
    settings: ServeSettings,
    *,
    telemetry: Telemetry | None = None,
    task_status: trio.TaskStatus[HookServer] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Open the engine, listen, and serve until :meth:`HookServer.shutdown` is called.

    Supports ``server = await nursery.start(serve, settings)`` (started once listening). Returns
    after the graceful shutdown. On cancel: stops at once, but the engine's close (post-queue
    drain, shielded) still runs. ``telemetry``: the OTLP export, started before (its metrics
    listener is on the engine before the first connection is accepted; its counts go into
    the stats reply).

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
            if telemetry is not None:
                telemetry.watch(engine)
                server.telemetry = telemetry
            server._reserve_fd = _open_reserve_fd()
            bound: tuple[int, int] | None = None  # the relay socket file, once ours
            try:
                async with trio.open_nursery() as listening:
                    listeners = await _tcp_listeners(settings, host)
                    if listeners:
                        server.port = listeners[0].socket.getsockname()[1]
                    for listener in listeners:
                        await listening.start(
                            server.accept_loop, listener, connections, server.on_stream
                        )
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


def _closed(event: str, payload: Mapping[str, Any], exc: Exception) -> Outcome:
    """The fail-closed Outcome of a ``fire`` our own code failed to answer: the event's own
    shape, as far as its payload can give it."""
    from types import SimpleNamespace

    from triohooks.combine.outcome import internal_error_outcome

    name = canonical_event(event)
    fields = {k: payload.get(k) for k in ("args", "prompt", "result", "error")}
    return internal_error_outcome(name, SimpleNamespace(**fields), repr(exc))
