"""``POST /claude/v1/hook`` (and ``/gemini/v1/hook``, ``/codex/v1/hook``) on the serve port.

Claude Code's ``http`` hook type POSTs its hook input JSON and reads the reply body as a hook's
JSON output; ``triohooks-relay`` does the same for the agents that must spawn a command. Each
request runs that agent's hooks for the event (:meth:`HookEngine.agent_hook`) and is answered
HTTP 200 with the agent's JSON output (``{}``: no opinion) -- a block is a deny in the body,
never a status code (an agent reads any non-2xx as a non-blocking error and goes on). An
internal error answers 200 with the fail-closed answer of that event.

Owns: answering the requests of one connection whose first request is a ``POST`` (read and
answered through :class:`~.serve_protocol.HttpConnection`: h11, a body of at most the
server's message limit), the bearer-token check, keep-alive, cancelling the hooks when the
client goes away mid-request (their process trees are killed), and on the relay socket the
acknowledgement and heartbeats of the relay protocol (docs/agents.md, "The relay protocol").
Must not parse HTTP itself (:mod:`.serve_protocol` does) nor know any agent's rules
(:mod:`triohooks.agents` does).
"""

from __future__ import annotations

import hmac
import logging
import math
import re
from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

import msgspec
import trio

from triohooks.agents.merge import internal_error_answer
from triohooks.agents.runner import AgentInput, AgentPayloadError, AgentResult, read_input
from triohooks.agents.spec import AGENTS, TOKEN_VAR

from .relay import ENV_LENGTH_HEADER, FIRE_PATH, HEARTBEAT_S, PROTOCOL, with_event
from .serve_protocol import (
    CLOSED,
    INTERIM,
    HttpConnection,
    HttpError,
    HttpRequest,
    bearer_token,
    error_body,
    response,
)

log = logging.getLogger("triohooks.serve")

T = TypeVar("T")

#: The paths, by agent: ``v1`` (the http transport, and relays that want no heartbeat) and
#: the relay protocol (:data:`~.relay.PROTOCOL`, on the relay socket only: heartbeats). An
#: older relay protocol (``v2``) is answered 404: its relay takes this serve for an older one
#: and runs the hooks itself.
PATH: Final = re.compile(
    rb"/("
    + b"|".join(a.encode() for a in (*AGENTS, FIRE_PATH))
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
#: An idle keep-alive connection is closed after this long; a request begun must be whole by
#: then (else 400).
IDLE_TIMEOUT_S: Final = 60.0
#: After an answer to a request that was not read whole, how long what the client still sends
#: is read and dropped (so it reads the answer, not a reset) before the socket closes.
LINGER_S: Final = 1.0
#: A heartbeat write that has not gone out in this long: the client is not reading (the
#: connection is given up; a half-written one would garble the answer after it).
BEAT_WRITE_TIMEOUT_S: Final = 5.0
#: The event of a hook input that could not be decoded, for its fail-closed answer.
_EVENT_NAME: Final = re.compile(rb'"hook_event_name"\s*:\s*"([A-Za-z]{1,64})"')


async def read_request(stream: trio.abc.Stream, http: HttpConnection) -> HttpRequest | None:
    """The next whole request on ``stream``, or None when the client closed the connection
    between requests. Raises :class:`HttpError` for one that cannot be read. No timeout of
    its own (the caller's)."""
    while True:
        got = http.next_request()
        if isinstance(got, HttpRequest):
            return got
        if got == CLOSED:
            return None
        http.receive(await receive(stream))


async def reply_busy(stream: trio.abc.Stream) -> None:
    """Over the connection limit: 503 (the agent goes on; the relay runs the hooks itself)."""
    await send(stream, response(503, error_body("too many connections")))


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
    #: Answers ``triohooks fire`` (the relay socket only).
    fire: FireHandler | None = None


def split_environment(request: HttpRequest) -> dict[str, str]:
    """The relay's request body: the session's environment (``NAME=VALUE`` entries joined by
    NUL, its length in :data:`ENV_LENGTH_HEADER`), then the hook input; ``request.body`` keeps
    the hook input only."""
    size = (request.header(ENV_LENGTH_HEADER.lower().encode()) or b"").strip()
    if not size.isdigit() or int(size) > len(request.body):
        raise HttpError(400, f"a relay request needs a valid {ENV_LENGTH_HEADER}")
    block, request.body = request.body[: int(size)], request.body[int(size) :]
    env: dict[str, str] = {}
    for entry in block.decode("utf-8", "surrogateescape").split("\0"):  # (NUL is never in a
        name, sep, value = entry.partition("=")  # multi-byte sequence: decoded once, whole)
        if sep and name:
            env[name] = value
    return env


async def serve_connection(
    stream: trio.abc.Stream,
    http: HttpConnection,
    *,
    peer: Peer,
    handle: Handler,
    first: HttpRequest | None = None,
) -> None:
    """Answer requests on one connection (``first``: its first request, already read) until
    the client closes it, or one is refused or cannot be read (answered, then returns).

    With a token (the TCP endpoint): the first request must carry the token; a request
    without it is answered with the fail-closed answer of its event (HTTP 200: the agent reads
    it as a deny, not as a failed hook it may ignore), told to ``on_refused`` and the
    connection closed. Without a token (the relay socket): each request is acknowledged
    (``102``) as soon as it is read and, on the relay protocol's path (``/<agent>/v3/hook``),
    sent a heartbeat (another ``102``) every :data:`~.relay.HEARTBEAT_S` until its answer. An
    idle connection, or a request not whole, after :data:`IDLE_TIMEOUT_S` is closed (the
    latter answered 400)."""
    authenticated = peer.token is None
    request = first
    while True:
        try:
            if request is None:
                with trio.move_on_after(IDLE_TIMEOUT_S):
                    request = await read_request(stream, http)
                if request is None:
                    if http.mid_request:
                        raise HttpError(400, "request not received in time")
                    return
            path = PATH.fullmatch(request.target)
            refusal = _refusal(request, path, peer.token)
            env = split_environment(request) if refusal is None and peer.token is None else None
        except HttpError as exc:
            if not exc.eof:
                await answer_unread(stream, response(exc.status, error_body(exc)))
            return
        if refusal is not None or path is None:
            status, why = refusal or (404, "no such path")
            if peer.on_refused is not None:
                peer.on_refused(why)
            if status == 401 and path is not None:  # a hook path: the event's deny, saying why
                status, body = 200, _fail_closed(path[1].decode(), request.body, f"refused: {why}")
            else:
                body = error_body(why)
            await send(stream, response(status, body))
            return
        if not authenticated:
            authenticated = True
            if peer.on_authenticated is not None and not peer.on_authenticated():
                await reply_busy(stream)
                return
        if env is not None:
            await send(stream, INTERIM)  # acknowledged: the relay knows serve has it
        if path[1] == FIRE_PATH.encode():
            status, answer = await _answer_fire(stream, http, request, path[3], env, peer)
        else:
            status, answer = await _answer(stream, http, request, path, env, handle, peer)
        if answer is None:
            return  # the client went away; its hooks were cancelled
        await send(stream, response(status, answer, keep_alive=request.keep_alive))
        if not request.keep_alive:
            return
        request = None


def _refusal(
    request: HttpRequest, path: re.Match[bytes] | None, token: bytes | None
) -> tuple[int, str] | None:
    """Why the request is not answered by running hooks (status, reason), or None."""
    if path is None or (token is not None and path[2] != b"v1"):
        return 404, "no such path"  # (an older serve answers the relay protocol so, too)
    if path[1] == FIRE_PATH.encode() and (token is not None or path[2] == b"v1"):
        return 404, "no such path"  # fire: the relay protocol on the relay socket only
    if request.method != "POST":
        return 405, "POST only"
    if token is None:
        return None
    try:
        given = bearer_token(request)
    except HttpError as exc:  # two of them: whichever a reader took, refused
        return 401, str(exc)
    if not given:
        return 401, f"no bearer token (is {TOKEN_VAR} set in the agent's environment?)"
    if not hmac.compare_digest(given.encode(), token):
        return 401, "wrong bearer token (the serve token changed? restart the agent)"
    return None


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
    stream: trio.abc.Stream,
    http: HttpConnection,
    request: HttpRequest,
    path: re.Match[bytes],
    env: dict[str, str] | None,
    handle: Handler,
    peer: Peer,
) -> tuple[int, bytes | None]:
    """An agent's hook request (``path``: its match of :data:`PATH`): 200 with the agent's
    JSON output, a deny when it cannot be read or our own code failed; None when the client
    went away."""
    agent, query = path[1].decode(), path[3]
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
    # The relay protocol: heartbeats while the hooks run (the relay socket only: _refusal).
    beating = path[2] == PROTOCOL.encode()
    result, failure = await _watched(stream, http, beating, lambda: handle(agent, read, env, scope))
    if result is None:
        if failure is None:
            return 200, None
        return 200, msgspec.json.encode(internal_error_answer(agent, read.event, failure).output)
    return 200, msgspec.json.encode(result.answer.output)


async def _answer_fire(
    stream: trio.abc.Stream,
    http: HttpConnection,
    request: HttpRequest,
    query: bytes | None,
    env: dict[str, str] | None,
    peer: Peer,
) -> tuple[int, bytes | None]:
    """``triohooks fire`` through serve (:mod:`.fire`): 200 with its reply; 400 for a query
    the command does not send; 500 when our own code failed (the command then opens its own
    engine, which says what failed); None when the client went away."""
    said = read_query(query, FIRE_QUERY_FIELDS) if query is not None else None
    fire = peer.fire
    if said is None or "workspace" not in said or "event" not in said or env is None:
        return 400, error_body("not a fire request")
    if fire is None:
        return 404, error_body("no such path")
    result, failure = await _watched(stream, http, True, lambda: fire(said, request.body, env))
    if result is None:
        return (500, error_body(failure)) if failure is not None else (200, None)
    return 200, result


async def _watched(
    stream: trio.abc.Stream,
    http: HttpConnection,
    beating: bool,
    work: Callable[[], Awaitable[T]],
) -> tuple[T | None, str | None]:
    """Run ``work`` for a request while watching its connection: ``(result, None)``, ``(None,
    failure)`` when our own code raised (logged, never the connection's end), or ``(None,
    None)`` when the client went away: a disconnect cancels ``work`` (the hooks' trees are
    killed). With ``beating`` (the relay protocol) a heartbeat goes out every
    :data:`~.relay.HEARTBEAT_S`, by the same task that watches."""
    result: T | None = None
    failure: str | None = None
    async with trio.open_nursery() as nursery:

        async def watch() -> None:
            reading = True  # (until a pipelined next request came: kept for later)
            while True:
                with trio.move_on_after(HEARTBEAT_S if beating else math.inf):
                    if reading:
                        data = await receive(stream)
                        if not data:
                            break  # a disconnect: the hooks are cancelled
                        http.receive(data)
                        reading = False
                    await trio.sleep_forever()
                # Shielded: a heartbeat is written whole or not at all, never cut off by the
                # answer being ready (half of one would garble the answer after it).
                with trio.CancelScope(shield=True), trio.move_on_after(BEAT_WRITE_TIMEOUT_S):
                    if await send(stream, INTERIM):
                        continue
                break  # the client went away or stopped reading: the hooks are cancelled
            nursery.cancel_scope.cancel()

        nursery.start_soon(watch)
        try:  # (in the nursery's body, so the watcher's cancel reaches it)
            result = await work()
        except Exception as exc:  # our own fault: fail closed for this event
            log.exception("hook request failed")
            failure = repr(exc)
        nursery.cancel_scope.cancel()
    return result, failure


async def receive(stream: trio.abc.Stream) -> bytes:
    """The next bytes from the client; ``b""`` when the connection ended (or broke)."""
    try:
        return bytes(await stream.receive_some(65536))
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        return b""


async def send(stream: trio.abc.Stream, data: bytes) -> bool:
    """Write ``data``; False when the connection is gone."""
    try:
        await stream.send_all(data)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        return False
    return True


async def answer_unread(stream: trio.abc.Stream, answer: bytes) -> None:
    """The last answer on a connection whose client may still be sending (a request that
    could not be read whole, one refused unread): written, then lingered on for
    :data:`LINGER_S`."""
    if await send(stream, answer):
        await linger(stream, LINGER_S)


async def linger(stream: trio.abc.Stream, seconds: float) -> None:
    """The end of a connection after an answer: our side shut (FIN), and what the client
    still sends read and dropped until it closes, for at most ``seconds`` (closing on unread
    data would reset the connection, and the client might lose the answer)."""
    with trio.move_on_after(seconds):
        try:
            if isinstance(stream, trio.abc.HalfCloseableStream):
                await stream.send_eof()
            while await stream.receive_some(65536):
                pass
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
