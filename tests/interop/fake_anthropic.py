"""A local fake of the Anthropic Messages API that scripts a real Claude Code CLI (stdlib only).

Claude Code is pointed at it with ``ANTHROPIC_BASE_URL=<fake.url>``. It answers
``POST /v1/messages`` (streamed as server-sent events, or as one JSON message when the request
does not ask for a stream) and records every request it gets, whatever the path.

A *scripted turn* is a request of the main conversation: it offers the ``Bash`` tool. Its reply
is decided by which scripted tool calls already have their ``tool_result`` in ``messages``: the
first one that has none is sent as a ``tool_use``; once every one has its result the reply is a
text ``end_turn``. The reply depends on the request alone, so a retried request gets the same
answer. Every other request (a title, a summary, a token count, a quota probe on a small model)
gets a short text ``end_turn``.

    with FakeAnthropic() as fake:
        fake.script(["echo one", "echo two"])
        ...  # run claude with ANTHROPIC_BASE_URL=fake.url
        fake.tool_results()  # what the CLI sent back for each call, in order

Timing (for benchmarks): :meth:`FakeAnthropic.call_latencies` gives, for each scripted call,
the wall time from the fake's last byte of the ``tool_use`` reply to the arrival of the request
carrying its ``tool_result``: the CLI's whole handling of one tool call (parsing the reply,
hooks before, running the tool, hooks after, building the next request).

The scripting and the timing (:meth:`~ScriptedModel.script`, :attr:`~ScriptedModel.call_ids`,
:meth:`~ScriptedModel.call_latencies`) live in :class:`ScriptedModel`, the base that
:class:`FakeAnthropic`, :class:`~tests.interop.fake_openai.FakeOpenAI` and
:class:`~tests.interop.fake_gemini.FakeGemini` share; each fake adds its API's wire format.
This module also holds :class:`LocalHTTPServer`, the small threaded HTTP server under them all.
"""

from __future__ import annotations

import json
import secrets
import socket
import threading
import time
from collections.abc import Callable, Container, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Generic, Self, TypeVar

__all__ = [
    "FakeAnthropic",
    "LocalHTTPServer",
    "RecordedRequest",
    "Script",
    "ScriptedModel",
    "ToolCall",
    "ToolResult",
    "block_text",
]

#: The text of every reply that is not a scripted tool call.
DONE_TEXT = "Done."


@dataclass(frozen=True)
class ToolCall:
    """One scripted ``tool_use``: a tool name and its input."""

    name: str
    input: Mapping[str, Any]

    @classmethod
    def bash(cls, command: str, description: str = "scripted call") -> ToolCall:
        return cls("Bash", {"command": command, "description": description})


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the fake got it; ``body`` is the decoded JSON (None if not JSON)."""

    method: str
    path: str
    headers: dict[str, str]
    raw: bytes
    body: Any
    arrived: float  # time.perf_counter() once the body was read

    @property
    def is_messages(self) -> bool:
        return self.method == "POST" and self.path.split("?", 1)[0] == "/v1/messages"


@dataclass(frozen=True)
class ToolResult:
    """A ``tool_result`` block the CLI sent back; ``text`` joins its text parts."""

    tool_use_id: str
    text: str
    is_error: bool
    block: Mapping[str, Any]


def block_text(content: Any) -> str:
    """The text of a message's or a tool_result's ``content`` (a string or a list of blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, Mapping):
                if block.get("type") == "text":
                    parts.append(str(block.get("text", "")))
                elif block.get("type") == "tool_result":
                    parts.append(block_text(block.get("content", "")))
        return "\n".join(parts)
    return ""


def _tool_names(body: Any) -> set[str]:
    tools = body.get("tools") if isinstance(body, Mapping) else None
    if not isinstance(tools, list):
        return set()
    return {str(t.get("name")) for t in tools if isinstance(t, Mapping)}


def _blocks(body: Any) -> Iterator[Mapping[str, Any]]:
    """Every content block of every message of a request body, in order."""
    messages = body.get("messages") if isinstance(body, Mapping) else None
    for message in messages if isinstance(messages, list) else ():
        content = message.get("content") if isinstance(message, Mapping) else None
        for block in content if isinstance(content, list) else ():
            if isinstance(block, Mapping):
                yield block


def _tool_results_in(body: Any) -> dict[str, Mapping[str, Any]]:
    return {str(b.get("tool_use_id")): b for b in _blocks(body) if b.get("type") == "tool_result"}


# --- a small threaded HTTP server, shared by the fake and by tests' own endpoints ---------------


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a handler stuck on a keep-alive connection never blocks exit
    allow_reuse_address = True
    owner: LocalHTTPServer


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"  # keep-alive, every reply has a Content-Length
    # http.server sends the headers and the body in two writes: with Nagle on, about half the
    # replies wait ~40 ms for the peer's delayed ACK.
    disable_nagle_algorithm = True
    timeout = 120  # an idle keep-alive connection is dropped after this (seconds)

    def setup(self) -> None:
        super().setup()
        self.server.owner._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.owner._track(self.connection, add=False)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        request = RecordedRequest(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            raw=raw,
            body=body,
            arrived=time.perf_counter(),
        )
        status, headers, payload, after_send = self.server.owner._respond(request)
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()
        if after_send is not None:
            after_send(time.perf_counter())

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _serve


Reply = tuple[int, dict[str, str], bytes, Callable[[float], None] | None]


class LocalHTTPServer:
    """A ThreadingHTTPServer on 127.0.0.1 (port 0), served from a daemon thread.

    Subclasses (or ``handler=``) turn a :class:`RecordedRequest` into ``(status, headers,
    body)``; every request is kept in :attr:`requests`. Use as a context manager, or call
    :meth:`start` and :meth:`stop`.
    """

    def __init__(
        self, handler: Callable[[RecordedRequest], tuple[int, dict[str, str], bytes]] | None = None
    ) -> None:
        self._handler = handler
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._connections: set[socket.socket] = set()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        assert self._server is not None, "not started"
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def start(self) -> Self:
        assert self._server is None, "already started"
        server = _Server(("127.0.0.1", 0), _Handler)
        server.owner = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"{type(self).__name__}:{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        with self._lock:
            open_now = list(self._connections)
        for conn in open_now:  # wake handlers blocked on idle keep-alive connections
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    def _respond(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self._requests.append(request)
        return (*self.reply(request), None)

    def reply(self, request: RecordedRequest) -> tuple[int, dict[str, str], bytes]:
        if self._handler is None:
            return 404, {"Content-Type": "text/plain"}, b"not found\n"
        return self._handler(request)


# --- a fake model API that plays a script of tool calls, the base of the three fakes -----------

CallT = TypeVar("CallT")


@dataclass
class Script(Generic[CallT]):
    calls: list[CallT]
    ids: list[str]
    sent_at: dict[str, float] = field(default_factory=dict)  # last byte of the call's reply
    result_at: dict[str, float] = field(default_factory=dict)  # its result arrived


class ScriptedModel(LocalHTTPServer, Generic[CallT]):
    """What :class:`FakeAnthropic`, :class:`~tests.interop.fake_openai.FakeOpenAI` and
    :class:`~tests.interop.fake_gemini.FakeGemini` share: the script of tool calls of the
    next session, their ids, and when each call's reply was sent and its result came back.

    A subclass says how a string becomes a call (``call_of``), how its ids begin
    (``id_prefix``), and which results a request carries (:meth:`_result_ids`); it answers
    in :meth:`_answer`, where :meth:`_next_call` picks the call to send.
    """

    def __init__(self, *, call_of: Callable[[str], CallT], id_prefix: str) -> None:
        super().__init__()
        self._call_of = call_of
        self._id_prefix = id_prefix
        self._script: Script[CallT] = Script([], [])

    # -- scripting

    def script(self, calls: Sequence[str | CallT]) -> list[str]:
        """Set the tool calls of the next session (a string is a shell command); returns the
        calls' ids, fresh for every call so that sessions never mix."""
        tag = secrets.token_hex(4)
        parsed = [self._call_of(c) if isinstance(c, str) else c for c in calls]
        ids = [f"{self._id_prefix}{tag}_{k:03d}" for k in range(len(parsed))]
        with self._lock:
            self._script = Script(parsed, ids)
        return ids

    @property
    def call_ids(self) -> list[str]:
        """The ids of the current script's calls, in order."""
        with self._lock:
            return list(self._script.ids)

    def call_latencies(self) -> list[float | None]:
        """Per scripted call: seconds from the last byte of the reply that made the call to the
        arrival of the request carrying its result (None where that never came)."""
        with self._lock:
            s = self._script
            return [
                s.result_at[i] - s.sent_at[i] if i in s.result_at and i in s.sent_at else None
                for i in s.ids
            ]

    # -- answering

    def _respond(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self._requests.append(request)
            script = self._script
        return self._answer(request, script)

    def _answer(self, request: RecordedRequest, script: Script[CallT]) -> Reply:
        """The reply to ``request`` (already recorded), under ``script`` as it was then."""
        raise NotImplementedError

    def _result_ids(self, body: Any) -> Container[str]:
        """The ids of the calls whose results a scripted turn's body carries."""
        raise NotImplementedError

    def _next_call(
        self, script: Script[CallT], request: RecordedRequest
    ) -> tuple[str, CallT, Callable[[float], None]] | None:
        """For a scripted turn: note when each result it carries first arrived, and give the
        first call that has no result yet, with the ``after_send`` that notes when its reply's
        last byte went (None once every call has its result)."""
        results = self._result_ids(request.body)
        with self._lock:
            for call_id in script.ids:
                if call_id in results:
                    script.result_at.setdefault(call_id, request.arrived)
        pending = [
            (i, c) for i, c in zip(script.ids, script.calls, strict=True) if i not in results
        ]
        if not pending:
            return None
        call_id, call = pending[0]

        def after_send(at: float) -> None:
            with self._lock:
                script.sent_at[call_id] = at  # the last one: a retry overwrites

        return call_id, call, after_send


# --- the fake Messages API ---------------------------------------------------------------------


class FakeAnthropic(ScriptedModel[ToolCall]):
    """The fake Messages API; see the module's docstring."""

    def __init__(
        self,
        *,
        model: str | None = None,
        shell_tool: str = "Bash",
        call_of: Callable[[str], ToolCall] = ToolCall.bash,
    ) -> None:
        super().__init__(call_of=call_of, id_prefix="toolu_fake")
        self.model = model  # None: echo the request's model
        #: The tool a scripted turn offers (Claude Code's ``Bash``; Qwen Code's
        #: ``run_shell_command``).
        self.shell_tool = shell_tool

    @property
    def tool_use_ids(self) -> list[str]:
        """The ``tool_use`` ids of the current script (:attr:`call_ids`), in order."""
        return self.call_ids

    # -- reading what happened

    @property
    def message_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.is_messages]

    def turn_requests(self) -> list[RecordedRequest]:
        """The scripted turns (requests of the main conversation), in order."""
        return [r for r in self.message_requests if self._is_turn(r.body)]

    def side_requests(self) -> list[RecordedRequest]:
        """Every request that was not a scripted turn."""
        return [r for r in self.requests if not (r.is_messages and self._is_turn(r.body))]

    def tool_results(self) -> list[ToolResult]:
        """The ``tool_result`` the CLI sent back for each scripted call that has one, in the
        script's order (taken from the last scripted turn, which holds the whole history)."""
        turns = self.turn_requests()
        if not turns:
            return []
        found = _tool_results_in(turns[-1].body)
        results = []
        for tool_use_id in self.tool_use_ids:
            block = found.get(tool_use_id)
            if block is None:
                continue
            results.append(
                ToolResult(
                    tool_use_id=tool_use_id,
                    text=block_text(block.get("content", "")),
                    is_error=bool(block.get("is_error", False)),
                    block=block,
                )
            )
        return results

    def messages_after(self, k: int) -> list[Mapping[str, Any]]:
        """The messages from the one carrying the tool_result of scripted call ``k`` up to the
        next assistant message (taken from the last scripted turn that has them). Claude Code
        2.1 sends a hook's ``additionalContext`` as a ``role: system`` message right after
        the tool_result's user message, not inside it."""
        tool_use_id = self.tool_use_ids[k]
        for request in reversed(self.turn_requests()):
            messages = [m for m in request.body.get("messages", []) if isinstance(m, Mapping)]
            for i, message in enumerate(messages):
                content = message.get("content")
                if isinstance(content, list) and any(
                    isinstance(b, Mapping) and b.get("tool_use_id") == tool_use_id for b in content
                ):
                    following = [message]
                    for later in messages[i + 1 :]:
                        if later.get("role") == "assistant":
                            break
                        following.append(later)
                    return following
        return []

    def context_after(self, k: int) -> str:
        """All the text the model got with the result of scripted call ``k``, besides the
        tool_result itself: text blocks beside it and the messages that follow it."""
        parts = []
        for message in self.messages_after(k):
            content = message.get("content")
            if isinstance(content, list):
                content = [b for b in content if isinstance(b, Mapping) and b.get("type") == "text"]
            text = block_text(content)
            if text:
                parts.append(text)
        return "\n".join(parts)

    # -- answering

    def _is_turn(self, body: Any) -> bool:
        return self.shell_tool in _tool_names(body)

    def _result_ids(self, body: Any) -> Container[str]:
        return _tool_results_in(body)

    def _answer(self, request: RecordedRequest, script: Script[ToolCall]) -> Reply:
        body = request.body if isinstance(request.body, Mapping) else {}
        path = request.path.split("?", 1)[0]
        if request.method == "POST" and path == "/v1/messages/count_tokens":
            return 200, {"Content-Type": "application/json"}, b'{"input_tokens": 1}', None
        if not request.is_messages:
            error = {"type": "error", "error": {"type": "not_found_error", "message": path}}
            return 404, {"Content-Type": "application/json"}, json.dumps(error).encode(), None

        call = self._next_call(script, request) if self._is_turn(body) else None
        model = self.model or str(body.get("model", "claude-fake"))
        message_id = f"msg_fake{secrets.token_hex(8)}"
        stream = bool(body.get("stream", False))
        after_send: Callable[[float], None] | None = None
        if call is not None:
            tool_use_id, tool, after_send = call
            block: dict[str, Any] = {"type": "tool_use", "id": tool_use_id, "name": tool.name}
            stop_reason = "tool_use"
            payload = _sse_message(message_id, model, block, tool.input, stop_reason)
            if not stream:
                payload = _json_message(
                    message_id, model, {**block, "input": tool.input}, stop_reason
                )
        else:
            text_block = {"type": "text", "text": DONE_TEXT}
            if stream:
                payload = _sse_message(message_id, model, text_block, None, "end_turn")
            else:
                payload = _json_message(message_id, model, text_block, "end_turn")
        headers = {
            "Content-Type": "text/event-stream" if stream else "application/json",
            "Cache-Control": "no-cache",
            "request-id": f"req_fake{secrets.token_hex(8)}",
        }
        return 200, headers, payload, after_send


_USAGE = {
    "input_tokens": 10,
    "output_tokens": 1,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
}


def _json_message(message_id: str, model: str, block: dict[str, Any], stop_reason: str) -> bytes:
    message = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [block],
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {**_USAGE, "output_tokens": 5},
    }
    return json.dumps(message).encode()


def _sse_message(
    message_id: str,
    model: str,
    block: dict[str, Any],
    tool_input: Mapping[str, Any] | None,
    stop_reason: str,
) -> bytes:
    """One assistant message with one content block, as the streaming API sends it."""
    events: list[tuple[str, dict[str, Any]]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": _USAGE,
                },
            },
        ),
    ]
    if block["type"] == "tool_use":
        start = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(tool_input or {})}
    else:
        start = {**block, "text": ""}
        delta = {"type": "text_delta", "text": str(block["text"])}
    events += [
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": start},
        ),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return b"".join(
        f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events
    )
