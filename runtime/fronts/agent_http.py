"""``POST /claude/v1/hook`` (and ``/gemini/v1/hook``, ``/codex/v1/hook``) on the serve port.

Claude Code's ``http`` hook type POSTs its hook input JSON and reads the reply body as a hook's
JSON output; ``triohooks-relay`` does the same for the agents that must spawn a command. Each
request runs that agent's hooks for the event (:meth:`HookEngine.agent_hook`) and is answered
HTTP 200 with the agent's JSON output (``{}``: no opinion) -- a block is a deny in the body,
never a status code (an agent reads any non-2xx as a non-blocking error and goes on). An
internal error answers 200 with the fail-closed answer of that event.

Owns: reading requests off a TCP stream that turned out not to be a websocket handshake (a
request line, at most ``MAX_HEAD_BYTES`` of headers, a ``Content-Length`` or chunked body of
at most the server's message limit), the bearer-token check, keep-alive, cancelling the
hooks when the client goes away mid-request (their process trees are killed), and on the relay
socket the acknowledgement and heartbeats of the relay protocol (docs/agents.md, "The relay
protocol"). Must not know any agent's rules (:mod:`triohooks.agents` does).
"""

from __future__ import annotations

import hmac
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

import msgspec
import trio

from triohooks.agents.merge import internal_error_answer
from triohooks.agents.runner import AgentInput, AgentPayloadError, AgentResult, read_input
from triohooks.agents.spec import AGENTS, TOKEN_VAR

from .relay import BEAT, ENV_LENGTH_HEADER, HEARTBEAT_S, PROTOCOL, with_event

#: The path name of ``triohooks fire``'s requests (:mod:`.fire`), beside the agents'.
FIRE: Final = "fire"

log = logging.getLogger("triohooks.serve")

T = TypeVar("T")

#: The paths, by agent: ``v1`` (the http transport, and relays that want no heartbeat) and
#: the relay protocol (:data:`~.relay.PROTOCOL`, on the relay socket only: heartbeats). An
#: older relay protocol (``v2``) is answered 404: its relay takes this serve for an older one
#: and runs the hooks itself.
PATH: Final = re.compile(
    rb"/("
    + b"|".join(a.encode() for a in (*AGENTS, FIRE))
    + rb")/(v1|"
    + PROTOCOL.encode()
    + rb")/hook(?:\?([^ ]*))?"
)
#: What a hook path's query may say, each at most once, joined by ``&``: the install scope of
#: the catch-all that calls (:mod:`triohooks.agents.shares`), and the event it is for (the
#: relay's ``--event``, for an agent whose hook input does not name it: added to the input).
QUERY_FIELDS: Final = {
    b"scope": re.compile(rb"user|project"),
    b"event": re.compile(rb"[A-Za-z]{1,64}"),
}
#: The query of ``triohooks fire``'s path (``/fire/v3/hook``, the relay socket only): the event
#: as the command was given it, the workspace (percent-encoded), the output format.
FIRE_QUERY_FIELDS: Final = {
    b"event": re.compile(rb"[A-Za-z_]{1,64}"),
    b"workspace": re.compile(rb"/[A-Za-z0-9%._~/-]{0,16383}"),
    b"format": re.compile(rb"json|human"),
}
MAX_HEAD_BYTES: Final = 64 * 1024
#: An idle keep-alive connection is closed after this long.
IDLE_TIMEOUT_S: Final = 60.0
#: A request's head must arrive within this long of its first byte, its body within this long.
READ_TIMEOUT_S: Final = 30.0
#: Before a TCP connection's first request is authenticated, its head (token included) must
#: arrive within this long: a client that says nothing useful does not hold a slot.
PRE_AUTH_TIMEOUT_S: Final = 2.0


class HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Request(msgspec.Struct):
    method: str
    target: bytes
    headers: dict[str, str]
    keep_alive: bool
    body: bytes = b""


_REASONS: Final = {
    102: "Processing",
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    411: "Length Required",
    413: "Content Too Large",
    431: "Request Header Fields Too Large",
    503: "Service Unavailable",
}
#: A heartbeat write that has not gone out in this long: the client is not reading (the
#: connection is given up; a half-written one would garble the answer after it).
BEAT_WRITE_TIMEOUT_S: Final = 5.0
#: The event of a hook input that could not be decoded, for its fail-closed answer.
_EVENT_NAME: Final = re.compile(rb'"hook_event_name"\s*:\s*"([A-Za-z]{1,64})"')


def looks_like_agent_request(head: bytes) -> bool:
    """Whether the first bytes of a connection are a plain HTTP ``POST`` (answered here: our
    hook paths, or 404); a websocket handshake is a ``GET`` and goes to the websocket layer."""
    return head.startswith(b"POST ")


class Connection:
    """Reads requests off a stream, with what was already read pushed back in front."""

    def __init__(self, stream: trio.abc.Stream, buffered: bytes, max_body: int) -> None:
        self.stream = stream
        self.buffer = bytearray(buffered)
        self.max_body = max_body
        self.eof = False

    async def _fill(self) -> None:
        data = await self.stream.receive_some(65536)
        if not data:
            self.eof = True
            raise HttpError(400, "the client closed the connection mid-request")
        self.buffer += data

    async def _until(self, marker: bytes, limit: int, status: int) -> bytes:
        while True:
            at = self.buffer.find(marker)
            if at >= 0:
                out = bytes(self.buffer[:at])
                del self.buffer[: at + len(marker)]
                return out
            if len(self.buffer) > limit:
                raise HttpError(status, "request head too large")
            await self._fill()

    async def _exactly(self, n: int) -> bytes:
        while len(self.buffer) < n:
            await self._fill()
        out = bytes(self.buffer[:n])
        del self.buffer[:n]
        return out

    async def next_head(self, timeout_s: float) -> Request | None:
        """The next request's line and headers (within ``timeout_s`` of its first byte), or
        None when the client closed an idle connection. Raises :class:`HttpError`,
        ``trio.TooSlowError``."""
        if not self.buffer:
            with trio.move_on_after(IDLE_TIMEOUT_S):
                data = await self.stream.receive_some(65536)
                if not data:
                    return None
                self.buffer += data
            if not self.buffer:
                return None  # idle too long
        with trio.fail_after(timeout_s):
            head = await self._until(b"\r\n\r\n", MAX_HEAD_BYTES, 431)
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise HttpError(400, "not an HTTP/1.x request line")
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep:
                raise HttpError(400, "malformed header line")
            headers[name.strip().lower()] = value.strip()
        keep = headers.get("connection", "").lower() != "close" and parts[2] == "HTTP/1.1"
        return Request(parts[0], parts[1].encode("latin-1"), headers, keep)

    async def read_body(self, request: Request, timeout_s: float) -> None:
        """Read the request's body (within ``timeout_s``) into ``request.body``."""
        with trio.fail_after(timeout_s):
            request.body = await self._body(request.headers)

    async def _body(self, headers: dict[str, str]) -> bytes:
        if "chunked" in headers.get("transfer-encoding", "").lower():
            out = bytearray()
            while True:
                size_line = await self._until(b"\r\n", 1024, 400)
                try:
                    size = int(size_line.split(b";")[0].strip(), 16)
                except ValueError:
                    raise HttpError(400, "bad chunk size") from None
                if size == 0:
                    await self._until(b"\r\n", MAX_HEAD_BYTES, 431)  # (no trailers kept)
                    return bytes(out)
                if len(out) + size > self.max_body:
                    raise HttpError(413, f"body over {self.max_body} bytes")
                out += await self._exactly(size)
                await self._exactly(2)
        length = headers.get("content-length")
        if length is None:
            return b""
        if not length.isdigit():
            raise HttpError(400, "bad Content-Length")
        if int(length) > self.max_body:
            raise HttpError(413, f"body over {self.max_body} bytes")
        return await self._exactly(int(length))


async def reply_busy(stream: trio.abc.Stream) -> None:
    """Over the connection limit: 503 (the agent goes on; the relay runs the hooks itself)."""
    await _send(stream, 503, {"error": "too many connections"}, keep_alive=False)


def response(status: int, body: bytes, *, keep_alive: bool) -> bytes:
    head = (
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n"
    )
    return head.encode("latin-1") + body


#: ``(agent, hook input (read once, here), the session's environment or None, the calling
#: catch-all's scope)``.
Handler = Callable[[str, AgentInput, "dict[str, str] | None", "str | None"], Awaitable[AgentResult]]
#: ``triohooks fire``'s requests: ``(the query's fields, the payload, the caller's
#: environment)`` -> the reply (:func:`triohooks.fronts.fire.answer_request`).
FireHandler = Callable[[dict[str, str], bytes, dict[str, str]], Awaitable[bytes]]


class Peer(msgspec.Struct):
    """How a connection's client is known, and what the server is told of it."""

    #: The bearer token every request must carry; None: the kernel vouched for the client
    #: (the relay socket: the user's own uid), and requests carry the session's environment.
    token: bytes | None
    #: Called once the first request of the connection is authenticated; False: no room for
    #: it (answered 503).
    on_authenticated: Callable[[], bool] | None = None
    #: Told why a request was refused (missing or wrong token, unreadable input).
    on_refused: Callable[[str], None] | None = None
    on_answer: Callable[[AgentResult], None] | None = None
    #: Answers ``triohooks fire`` (the relay socket only).
    fire: FireHandler | None = None


def split_environment(request: Request) -> dict[str, str]:
    """The relay's request body: the session's environment (``NAME=VALUE`` entries joined by
    NUL, its length in :data:`ENV_LENGTH_HEADER`), then the hook input; ``request.body`` keeps
    the hook input only."""
    size = request.headers.get(ENV_LENGTH_HEADER.lower(), "")
    if not size.isdigit() or int(size) > len(request.body):
        raise HttpError(400, f"a relay request needs a valid {ENV_LENGTH_HEADER}")
    block, request.body = request.body[: int(size)], request.body[int(size) :]
    env: dict[str, str] = {}
    for entry in block.split(b"\0"):
        name, sep, value = entry.partition(b"=")
        if sep and name:
            env[name.decode("utf-8", "surrogateescape")] = value.decode("utf-8", "surrogateescape")
    return env


async def serve_connection(
    stream: trio.abc.Stream, buffered: bytes, *, peer: Peer, handle: Handler, max_body: int
) -> None:
    """Answer requests on one connection until the client closes it (or an error).

    With a token (the TCP endpoint): the first request's head must arrive within
    :data:`PRE_AUTH_TIMEOUT_S` and carry the token; a request without it is answered with the
    fail-closed answer of its event (HTTP 200: the agent reads it as a deny, not as a failed
    hook it may ignore), told to ``on_refused`` and the connection closed. Without a token (the
    relay socket): each request is acknowledged (``102``) as soon as it is read and, on the
    relay protocol's path (``/<agent>/v3/hook``), sent a heartbeat (another ``102``) every
    :data:`~.relay.HEARTBEAT_S` until its answer."""
    conn = Connection(stream, buffered, max_body)
    authenticated = peer.token is None
    while True:
        try:
            request = await conn.next_head(READ_TIMEOUT_S if authenticated else PRE_AUTH_TIMEOUT_S)
            if request is None:
                return
            refusal = _refusal(request, peer.token)
            if refusal is None and not authenticated:
                authenticated = True
                if peer.on_authenticated is not None and not peer.on_authenticated():
                    await reply_busy(stream)
                    return
            # A refused request's body is read only to name its event in the answer.
            await conn.read_body(request, READ_TIMEOUT_S if authenticated else PRE_AUTH_TIMEOUT_S)
        except HttpError as exc:
            if not conn.eof:
                await _send(stream, exc.status, {"error": str(exc)}, keep_alive=False)
            return
        except trio.TooSlowError:
            if peer.on_refused is not None and not authenticated:
                peer.on_refused("the request did not arrive in time")
            await _send(stream, 400, {"error": "request not received in time"}, keep_alive=False)
            return
        if refusal is not None:
            if peer.on_refused is not None:
                peer.on_refused(refusal[1])
            await _send_raw(stream, response(*_refused(request, refusal), keep_alive=False))
            return
        env: dict[str, str] | None = None
        if peer.token is None:
            try:
                env = split_environment(request)
            except HttpError as exc:
                await _send(stream, exc.status, {"error": str(exc)}, keep_alive=False)
                return
            await _send_raw(stream, BEAT)  # acknowledged: the relay knows serve has it
        status, body = await _answer(conn, request, env, handle, peer)
        if body is None:
            return  # the client went away; its hooks were cancelled
        await _send_raw(stream, response(status, body, keep_alive=request.keep_alive))
        if not request.keep_alive:
            return


def _refusal(request: Request, token: bytes | None) -> tuple[int, str] | None:
    """Why the request is not answered by running hooks (status, reason), or None."""
    match = PATH.fullmatch(request.target)
    if match is None or (token is not None and match.group(2) != b"v1"):
        return 404, "no such path"  # (an older serve answers the relay protocol so, too)
    if match.group(1) == FIRE.encode() and (token is not None or match.group(2) == b"v1"):
        return 404, "no such path"  # fire: the relay protocol on the relay socket only
    if request.method != "POST":
        return 405, "POST only"
    if token is None:
        return None
    given = request.headers.get("authorization", "")
    scheme, _, value = given.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return 401, f"no bearer token (is {TOKEN_VAR} set in the agent's environment?)"
    if not hmac.compare_digest(value.strip().encode(), token):
        return 401, "wrong bearer token (the serve token changed? restart the agent)"
    return None


def _refused(request: Request, refusal: tuple[int, str]) -> tuple[int, bytes]:
    """A refused hook request's answer: for a hook path, HTTP 200 with the event's fail-closed
    answer saying why (an agent goes on after any other status); else the status."""
    status, why = refusal
    match = PATH.fullmatch(request.target)
    if status != 401 or match is None:
        return status, msgspec.json.encode({"error": why})
    answer = _fail_closed(match.group(1).decode(), request.body, f"refused: {why}")
    return 200, answer


def _fail_closed(agent: str, body: bytes, why: str) -> bytes:
    """The fail-closed answer of the event in ``body`` (read even when the rest of the input
    cannot be), as the agent's JSON output."""
    # The last one, as a JSON reader takes it (a relay's --event is added last).
    found = [m.group(1) for m in _EVENT_NAME.finditer(body)]
    event = found[-1].decode() if found else ""
    return msgspec.json.encode(internal_error_answer(agent, event, why).output)


def read_query(
    query: bytes, fields: dict[bytes, re.Pattern[bytes]] = QUERY_FIELDS
) -> dict[str, str] | None:
    """A hook path's query (``fields``: :data:`QUERY_FIELDS`) by field; None when it says
    anything else."""
    said: dict[str, str] = {}
    for part in query.split(b"&"):
        name, _, value = part.partition(b"=")
        form = fields.get(name)
        if form is None or name.decode() in said or not form.fullmatch(value):
            return None
        said[name.decode()] = value.decode()
    return said


async def _answer(
    conn: Connection,
    request: Request,
    env: dict[str, str] | None,
    handle: Handler,
    peer: Peer,
) -> tuple[int, bytes | None]:
    match = PATH.fullmatch(request.target)
    assert match is not None
    agent = match.group(1).decode()
    # The relay protocol: heartbeats while the hooks run (the relay socket only: _refusal).
    beating = match.group(2) == PROTOCOL.encode()
    query = match.group(3)
    if agent == FIRE:
        return await _answer_fire(conn, request, env, peer, query)
    said = read_query(query) if query is not None else {}
    if said is None:  # not a catch-all we wrote: say so, fail closed
        text = (query or b"")[:64].decode("latin-1")
        why = f"unknown query {text!r} (only scope=user|project and event=NAME)"
        return 200, _fail_closed(agent, request.body, why)
    if "event" in said:
        request.body = with_event(request.body, said["event"])
    scope = said.get("scope")
    try:
        read = read_input(request.body)
    except AgentPayloadError as exc:
        # Authenticated, but we cannot read it: the agent still gets a deny, never a status
        # it would read as "go on".
        if peer.on_refused is not None:
            peer.on_refused(f"unreadable hook input: {exc}")
        return 200, _fail_closed(agent, request.body, f"unreadable hook input: {exc}")
    result, failure, gone = await _watched(conn, beating, lambda: handle(agent, read, env, scope))
    if gone and result is None:
        return 200, None
    if result is None:
        answer = internal_error_answer(agent, read.event, failure or "cancelled")
        return 200, msgspec.json.encode(answer.output)
    if peer.on_answer is not None:
        peer.on_answer(result)
    return 200, msgspec.json.encode(result.answer.output)


async def _watched(
    conn: Connection, beating: bool, work: Callable[[], Awaitable[T]]
) -> tuple[T | None, str | None, bool]:
    """Run ``work`` for a request while watching its connection: ``(result, failure, gone)``.
    A disconnect cancels it (the hooks' trees are killed: ``gone``); with ``beating`` (the relay
    protocol) a heartbeat goes out every :data:`~.relay.HEARTBEAT_S`; our own exception is the
    ``failure`` (logged), never the connection's end."""
    result: T | None = None
    failure: str | None = None
    gone = False
    async with trio.open_nursery() as nursery:

        async def run() -> None:
            nonlocal result, failure
            try:
                result = await work()
            except Exception as exc:  # our own fault: fail closed for this event
                log.exception("hook request failed")
                failure = repr(exc)
            nursery.cancel_scope.cancel()

        async def watch() -> None:
            nonlocal gone
            data = await conn.stream.receive_some(65536)
            if not data:
                gone = True  # a disconnect cancels the hooks (their trees are killed)
                nursery.cancel_scope.cancel()
            else:
                conn.buffer += data  # a pipelined next request: keep it
                await trio.sleep_forever()

        async def beat() -> None:
            nonlocal gone
            while True:
                await trio.sleep(HEARTBEAT_S)
                # Shielded: a heartbeat is written whole or not at all, never cut off by the
                # answer being ready (half of one would garble the answer after it).
                with trio.CancelScope(shield=True), trio.move_on_after(BEAT_WRITE_TIMEOUT_S):
                    try:
                        await conn.stream.send_all(BEAT)
                        continue
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        pass
                gone = True  # the client went away or stopped reading: the hooks are cancelled
                nursery.cancel_scope.cancel()
                return

        nursery.start_soon(run)
        nursery.start_soon(watch)
        if beating:
            nursery.start_soon(beat)
    return result, failure, gone


async def _answer_fire(
    conn: Connection,
    request: Request,
    env: dict[str, str] | None,
    peer: Peer,
    query: bytes | None,
) -> tuple[int, bytes | None]:
    """``triohooks fire`` through serve (:mod:`.fire`): 200 with its reply; 400 for a query
    the command does not send; 500 when our own code failed (the command then opens its own
    engine, which says what failed)."""
    said = read_query(query, FIRE_QUERY_FIELDS) if query is not None else None
    fire = peer.fire
    if said is None or "workspace" not in said or "event" not in said or env is None:
        return 400, msgspec.json.encode({"error": "not a fire request"})
    if fire is None:
        return 404, msgspec.json.encode({"error": "no such path"})
    result, failure, gone = await _watched(conn, True, lambda: fire(said, request.body, env))
    if gone and result is None:
        return 200, None
    if not isinstance(result, bytes):
        return 500, msgspec.json.encode({"error": failure or "cancelled"})
    return 200, result


async def _send(stream: trio.abc.Stream, status: int, body: object, *, keep_alive: bool) -> None:
    await _send_raw(stream, response(status, msgspec.json.encode(body), keep_alive=keep_alive))


async def _send_raw(stream: trio.abc.Stream, data: bytes) -> None:
    try:
        await stream.send_all(data)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
