"""A local fake of the Gemini API that scripts a real Gemini CLI (stdlib only).

Gemini CLI is pointed at it with ``GOOGLE_GEMINI_BASE_URL=<fake.url>`` (see
:func:`tests.interop.gemini.gemini_env`). It answers ``POST /v1beta/models/<model>:<method>``
for ``streamGenerateContent`` (server-sent events with ``?alt=sse``, else a JSON array),
``generateContent`` and ``countTokens``, and records every request it gets, whatever the path.

A *scripted turn* is a request of the main conversation: it declares the shell tool
(:data:`SHELL_TOOL`, ``run_shell_command`` taking ``{"command": ...}`` in Gemini CLI 0.61).
Its reply is decided by which scripted calls already have their ``functionResponse`` (matched
by the ``id`` the fake gave the ``functionCall``, which Gemini CLI echoes) in ``contents``: the
first one that has none is sent as a ``functionCall``; once every one has its response the
reply is the text :data:`DONE_TEXT`. The reply depends on the request alone, so a retried
request gets the same answer.

Every other request is a side request. Gemini CLI makes a few through ``generateContent`` with
a JSON response schema (the model router that picks a model for the prompt, the next-speaker
check): those get a JSON object built from the schema (each enum's first value, ``"fake"``
for strings, ``1`` for numbers), which routes to the first model offered and lets the user
speak next. Any other side request gets the text ``DONE_TEXT``.

    with FakeGemini() as fake:
        fake.script(["echo one", "echo two"])
        ...  # run gemini -p with GOOGLE_GEMINI_BASE_URL=fake.url
        fake.function_responses()  # what the CLI sent back for each call, in order

Timing (for benchmarks): :meth:`FakeGemini.call_latencies` gives, for each scripted call, the
wall time from the fake's last byte of the ``functionCall`` reply to the arrival of the request
carrying its ``functionResponse``: the CLI's whole handling of one tool call (hooks before,
running the tool, hooks after, building the next request).

The scripting and the timing are :class:`~tests.interop.fake_anthropic.ScriptedModel`'s, the
base the three fakes share; this module has what is the Gemini API's own.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Container, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tests.interop.fake_anthropic import RecordedRequest, Reply, Script, ScriptedModel

__all__ = [
    "DONE_TEXT",
    "SHELL_TOOL",
    "FakeGemini",
    "FunctionCall",
    "FunctionResponse",
    "parts_text",
    "value_for_schema",
]

#: The text of every reply that is not a scripted function call or a JSON answer.
DONE_TEXT = "Done."
#: Gemini CLI's shell tool (its ``functionDeclarations`` name); it takes ``{"command": ...}``.
SHELL_TOOL = "run_shell_command"

_USAGE = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}


@dataclass(frozen=True)
class FunctionCall:
    """One scripted ``functionCall``: a tool name and its arguments."""

    name: str
    args: Mapping[str, Any]

    @classmethod
    def shell(cls, command: str, description: str = "scripted call") -> FunctionCall:
        return cls(SHELL_TOOL, {"command": command, "description": description})


@dataclass(frozen=True)
class FunctionResponse:
    """The ``functionResponse`` part Gemini CLI sent back for one call. ``response`` is its
    ``response`` object: ``{"output": ...}`` when the tool ran, ``{"error": ...}`` when it
    failed or a hook blocked it; ``text`` is that output or error as a string."""

    call_id: str
    name: str
    response: Mapping[str, Any]
    part: Mapping[str, Any]

    @property
    def is_error(self) -> bool:
        return "error" in self.response

    @property
    def text(self) -> str:
        value = self.response.get("error", self.response.get("output", ""))
        return value if isinstance(value, str) else json.dumps(value)


def parts_text(parts: Any) -> str:
    """The text parts of a ``parts`` list (or of a content's), joined by newlines."""
    if isinstance(parts, Mapping):
        parts = parts.get("parts")
    if not isinstance(parts, list):
        return ""
    return "\n".join(
        str(p["text"]) for p in parts if isinstance(p, Mapping) and isinstance(p.get("text"), str)
    )


def value_for_schema(schema: Any) -> Any:
    """A value that satisfies a (simple) JSON schema: every property, each enum's first value,
    ``"fake"`` for a string, ``1`` for a number, ``False`` for a boolean, ``[]`` for an array."""
    if not isinstance(schema, Mapping):
        return "fake"
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties")
        if not isinstance(properties, Mapping):
            return {}
        return {str(k): value_for_schema(v) for k, v in properties.items()}
    if kind in ("integer", "number"):
        return 1
    if kind == "boolean":
        return False
    if kind == "array":
        return []
    return "fake"


def _method_of(path: str) -> tuple[str | None, str | None]:
    """``(model, method)`` of ``/v1beta/models/<model>:<method>?...``, else ``(None, None)``."""
    path = path.split("?", 1)[0]
    head, sep, method = path.rpartition(":")
    if not sep or "/models/" not in head:
        return None, None
    return head.rsplit("/models/", 1)[1], method


def _tool_names(body: Any) -> set[str]:
    tools = body.get("tools") if isinstance(body, Mapping) else None
    names: set[str] = set()
    for tool in tools if isinstance(tools, list) else ():
        declarations = tool.get("functionDeclarations") if isinstance(tool, Mapping) else None
        for declaration in declarations if isinstance(declarations, list) else ():
            if isinstance(declaration, Mapping):
                names.add(str(declaration.get("name")))
    return names


def _parts(body: Any) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """``(content index, part)`` for every part of every content of a request body."""
    contents = body.get("contents") if isinstance(body, Mapping) else None
    for i, content in enumerate(contents if isinstance(contents, list) else ()):
        parts = content.get("parts") if isinstance(content, Mapping) else None
        for part in parts if isinstance(parts, list) else ():
            if isinstance(part, Mapping):
                yield i, part


def _function_responses_in(body: Any) -> dict[str, Mapping[str, Any]]:
    found = {}
    for _, part in _parts(body):
        response = part.get("functionResponse")
        if isinstance(response, Mapping):
            found[str(response.get("id"))] = part
    return found


def _response_schema(body: Any) -> Any:
    config = body.get("generationConfig") if isinstance(body, Mapping) else None
    if not isinstance(config, Mapping):
        return None
    return config.get("responseJsonSchema") or config.get("responseSchema")


class FakeGemini(ScriptedModel[FunctionCall]):
    """The fake Gemini API; see the module's docstring."""

    def __init__(self, *, model_version: str | None = None) -> None:
        super().__init__(call_of=FunctionCall.shell, id_prefix="call_fake")
        self.model_version = model_version  # None: echo the request's model

    # -- reading what happened

    @staticmethod
    def is_turn(request: RecordedRequest) -> bool:
        """A request of the main conversation (it offers the shell tool)."""
        _, method = _method_of(request.path)
        return (
            request.method == "POST"
            and method in ("streamGenerateContent", "generateContent")
            and SHELL_TOOL in _tool_names(request.body)
        )

    def turn_requests(self) -> list[RecordedRequest]:
        """The scripted turns (requests of the main conversation), in order."""
        return [r for r in self.requests if self.is_turn(r)]

    def side_requests(self) -> list[RecordedRequest]:
        """Every request that was not a scripted turn."""
        return [r for r in self.requests if not self.is_turn(r)]

    def json_requests(self) -> list[RecordedRequest]:
        """The side requests that asked for JSON with a response schema (the model router,
        the next-speaker check)."""
        return [r for r in self.side_requests() if _response_schema(r.body) is not None]

    def tool_declarations(self) -> dict[str, Mapping[str, Any]]:
        """The function declarations of the first scripted turn, by name."""
        turns = self.turn_requests()
        if not turns:
            return {}
        found = {}
        for tool in turns[0].body.get("tools", []):
            for declaration in tool.get("functionDeclarations", []) if tool else ():
                found[str(declaration.get("name"))] = declaration
        return found

    def function_responses(self) -> list[FunctionResponse]:
        """The ``functionResponse`` the CLI sent back for each scripted call that has one, in
        the script's order (taken from the last scripted turn, which holds the whole history)."""
        turns = self.turn_requests()
        if not turns:
            return []
        found = _function_responses_in(turns[-1].body)
        results = []
        for call_id in self.call_ids:
            part = found.get(call_id)
            if part is None:
                continue
            response = part["functionResponse"]
            body = response.get("response")
            results.append(
                FunctionResponse(
                    call_id=call_id,
                    name=str(response.get("name")),
                    response=body if isinstance(body, Mapping) else {},
                    part=part,
                )
            )
        return results

    def contents_after(self, k: int) -> list[Mapping[str, Any]]:
        """The contents from the one carrying the functionResponse of scripted call ``k`` up to
        the next model content (taken from the last scripted turn that has them)."""
        call_id = self.call_ids[k]
        for request in reversed(self.turn_requests()):
            contents = [c for c in request.body.get("contents", []) if isinstance(c, Mapping)]
            for i, content in enumerate(contents):
                parts = content.get("parts")
                if isinstance(parts, list) and any(
                    isinstance(p, Mapping)
                    and isinstance(p.get("functionResponse"), Mapping)
                    and p["functionResponse"].get("id") == call_id
                    for p in parts
                ):
                    following = [content]
                    for later in contents[i + 1 :]:
                        if later.get("role") == "model":
                            break
                        following.append(later)
                    return following
        return []

    def context_after(self, k: int) -> str:
        """All the text the model got with the response of scripted call ``k``, besides the
        functionResponse itself: text parts beside it and in the contents that follow it."""
        return "\n".join(t for t in (parts_text(c) for c in self.contents_after(k)) if t)

    def first_user_text(self) -> str:
        """The text of the last user content of the first scripted turn (the prompt as the
        model got it)."""
        turns = self.turn_requests()
        if not turns:
            return ""
        users = [c for c in turns[0].body.get("contents", []) if c.get("role") == "user"]
        return parts_text(users[-1]) if users else ""

    # -- answering

    def _result_ids(self, body: Any) -> Container[str]:
        return _function_responses_in(body)

    def _answer(self, request: RecordedRequest, script: Script[FunctionCall]) -> Reply:
        model, method = _method_of(request.path)
        body = request.body if isinstance(request.body, Mapping) else {}
        if request.method != "POST" or method is None:
            return _error(404, f"no such endpoint: {request.method} {request.path}")
        if method == "countTokens":
            return 200, {"Content-Type": "application/json"}, b'{"totalTokens": 10}', None
        if method not in ("streamGenerateContent", "generateContent"):
            return _error(404, f"unsupported method {method}")

        after_send: Callable[[float], None] | None = None
        part: dict[str, Any]
        if self.is_turn(request):
            call = self._next_call(script, request)
            if call is not None:
                call_id, function, after_send = call
                part = {
                    "functionCall": {"id": call_id, "name": function.name, "args": function.args}
                }
            else:
                part = {"text": DONE_TEXT}
        elif (schema := _response_schema(body)) is not None:
            part = {"text": json.dumps(value_for_schema(schema))}
        else:
            part = {"text": DONE_TEXT}

        reply = {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [part]},
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": _USAGE,
            "modelVersion": self.model_version or model or "gemini-fake",
            "responseId": f"fake{secrets.token_hex(8)}",
        }
        if method == "generateContent":
            payload = json.dumps(reply).encode()
            return 200, {"Content-Type": "application/json"}, payload, after_send
        if "alt=sse" in request.path.partition("?")[2]:
            payload = f"data: {json.dumps(reply)}\r\n\r\n".encode()
            return 200, {"Content-Type": "text/event-stream"}, payload, after_send
        payload = json.dumps([reply]).encode()
        return 200, {"Content-Type": "application/json"}, payload, after_send


def _error(status: int, message: str) -> Reply:
    error = {"error": {"code": status, "message": message, "status": "NOT_FOUND"}}
    return status, {"Content-Type": "application/json"}, json.dumps(error).encode(), None
