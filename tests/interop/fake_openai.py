"""A local fake of the OpenAI Responses API that scripts a real Codex CLI or Copilot CLI
(stdlib only).

Codex is pointed at it by a model provider in ``$HOME/.codex/config.toml`` with
``base_url = "<fake.url>/v1"`` and ``wire_api = "responses"`` (see :mod:`tests.interop.codex`).
Codex 0.169.1 and Copilot CLI 1.0.102 only call ``POST /v1/responses`` with ``"stream": true``;
the fake answers with the server-sent-event stream the real API sends (``response.created``,
the item added, its deltas, ``response.output_item.done``, ``response.completed`` holding the
output) and records every request it gets, whatever the path. Copilot CLI's shell tool is
``bash`` (``{"command": ...}``): ``FakeOpenAI(shell_tool="bash", call_of=...)``.

A *scripted turn* is a request of the main conversation: it offers Codex's shell tool,
``exec_command`` (a function taking ``{"cmd": "<shell command>", ...}``). Its reply is decided by
which scripted calls already have their ``function_call_output`` in ``input``: the first one
that has none is sent as a ``function_call``; once every one has its output the reply is an
assistant message, :data:`DONE_TEXT`. The reply depends on the request alone, so a retried
request gets the same answer. Every other request gets the same short assistant message.

    with FakeOpenAI() as fake:
        fake.script(["echo one", "echo two"])
        ...  # run codex exec against fake.url
        fake.tool_outputs()  # what Codex sent back for each call, in order

Timing: :meth:`FakeOpenAI.call_latencies` gives, for each scripted call, the wall time from the
fake's last byte of the ``function_call`` reply to the arrival of the request carrying its
``function_call_output``: Codex's whole handling of one tool call (hooks before, the command,
hooks after, the next request).

The scripting and the timing are :class:`~tests.interop.fake_anthropic.ScriptedModel`'s, the
base the three fakes share; this module has what is the Responses API's own.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass
from typing import Any

from tests.interop.fake_anthropic import (
    LocalHTTPServer,
    RecordedRequest,
    Reply,
    Script,
    ScriptedModel,
)

__all__ = [
    "DONE_TEXT",
    "LocalHTTPServer",
    "SHELL_TOOL",
    "FakeOpenAI",
    "FunctionCall",
    "ToolOutput",
    "item_text",
    "output_text",
]

#: The text of every reply that is not a scripted tool call.
DONE_TEXT = "Done."
#: The name of Codex 0.169.1's shell tool (unified exec), as offered in a request's ``tools``.
SHELL_TOOL = "exec_command"


@dataclass(frozen=True)
class FunctionCall:
    """One scripted ``function_call``: a tool name and its arguments."""

    name: str
    arguments: Mapping[str, Any]
    #: A freeform (``custom``) tool's input text: the call is a ``custom_tool_call`` (Codex's
    #: ``apply_patch`` for the models it offers it to as one) and ``arguments`` is unused.
    custom_input: str | None = None

    @classmethod
    def shell(cls, cmd: str, **extra: Any) -> FunctionCall:
        """A call of Codex's shell tool; ``extra`` adds arguments (``workdir``, ``tty``,
        ``yield_time_ms``...)."""
        return cls(SHELL_TOOL, {"cmd": cmd, **extra})

    @classmethod
    def custom(cls, name: str, text: str) -> FunctionCall:
        """A call of a freeform tool ``name`` with the input ``text``."""
        return cls(name, {}, custom_input=text)


@dataclass(frozen=True)
class ToolOutput:
    """A ``function_call_output`` Codex sent back; ``text`` is its output as text."""

    call_id: str
    text: str
    item: Mapping[str, Any]


def output_text(output: Any) -> str:
    """The text of a ``function_call_output``'s ``output`` (a string, or a list of content
    items whose ``text`` parts are joined)."""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "\n".join(
            str(part.get("text", ""))
            for part in output
            if isinstance(part, Mapping) and "text" in part
        )
    if isinstance(output, Mapping) and "content" in output:
        return output_text(output["content"])
    return ""


def _tool_names(body: Any) -> set[str]:
    tools = body.get("tools") if isinstance(body, Mapping) else None
    if not isinstance(tools, list):
        return set()
    return {str(t.get("name")) for t in tools if isinstance(t, Mapping)}


def _input_items(body: Any) -> list[Mapping[str, Any]]:
    items = body.get("input") if isinstance(body, Mapping) else None
    return [i for i in items if isinstance(i, Mapping)] if isinstance(items, list) else []


def _outputs_in(body: Any) -> dict[str, Mapping[str, Any]]:
    return {
        str(i.get("call_id")): i
        for i in _input_items(body)
        if i.get("type") in ("function_call_output", "custom_tool_call_output")
    }


def item_text(item: Mapping[str, Any]) -> str:
    """The text of an input item: a message's text parts, or a tool output's text."""
    if item.get("type") in ("function_call_output", "custom_tool_call_output"):
        return output_text(item.get("output"))
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, Mapping) and isinstance(part.get("text"), str)
        )
    return ""


class FakeOpenAI(ScriptedModel[FunctionCall]):
    """The fake Responses API; see the module's docstring."""

    def __init__(
        self,
        *,
        shell_tool: str = SHELL_TOOL,
        call_of: Callable[[str], FunctionCall] = FunctionCall.shell,
    ) -> None:
        super().__init__(call_of=call_of, id_prefix="call_fake")
        self.shell_tool = shell_tool

    # -- reading what happened

    @property
    def responses_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if _is_responses(r)]

    def turn_requests(self) -> list[RecordedRequest]:
        """The scripted turns (requests that offer the shell tool), in order."""
        return [r for r in self.responses_requests if self._is_turn(r.body)]

    def side_requests(self) -> list[RecordedRequest]:
        """Every request that was not a scripted turn."""
        return [r for r in self.requests if not (_is_responses(r) and self._is_turn(r.body))]

    def offered_tools(self) -> list[Mapping[str, Any]]:
        """The ``tools`` of the first scripted turn (what Codex offers the model)."""
        turns = self.turn_requests()
        tools = turns[0].body.get("tools", []) if turns else []
        return [t for t in tools if isinstance(t, Mapping)]

    def tool_outputs(self) -> list[ToolOutput]:
        """The ``function_call_output`` Codex sent back for each scripted call that has one,
        in the script's order (taken from the last scripted turn, which holds the history)."""
        turns = self.turn_requests()
        if not turns:
            return []
        found = _outputs_in(turns[-1].body)
        return [
            ToolOutput(call_id, output_text(found[call_id].get("output")), found[call_id])
            for call_id in self.call_ids
            if call_id in found
        ]

    def items_after(self, k: int) -> list[Mapping[str, Any]]:
        """The input items that follow scripted call ``k``'s ``function_call``, up to the next
        model item (a function call or an assistant message), from the last scripted turn
        that has it: its ``function_call_output`` and whatever Codex added around it (a
        PreToolUse hook's ``additionalContext`` comes as a developer message *before* the
        output, a PostToolUse one after it)."""
        call_id = self.call_ids[k]
        for request in reversed(self.turn_requests()):
            items = _input_items(request.body)
            for i, item in enumerate(items):
                if item.get("type") == "function_call" and item.get("call_id") == call_id:
                    following = []
                    for later in items[i + 1 :]:
                        if later.get("type") == "function_call" or later.get("role") == "assistant":
                            break
                        following.append(later)
                    return following
        return []

    def context_after(self, k: int) -> str:
        """All the text the model got with the result of scripted call ``k`` besides the
        output itself (the texts of :meth:`items_after` but the output)."""
        call_id = self.call_ids[k]
        texts = [item_text(item) for item in self.items_after(k) if item.get("call_id") != call_id]
        return "\n".join(t for t in texts if t)

    def all_input_text(self) -> str:
        """Every text of the last scripted turn's input (to look for something anywhere)."""
        turns = self.turn_requests()
        if not turns:
            return ""
        return "\n".join(item_text(i) for i in _input_items(turns[-1].body))

    # -- answering

    def _is_turn(self, body: Any) -> bool:
        return self.shell_tool in _tool_names(body)

    def _result_ids(self, body: Any) -> Container[str]:
        return _outputs_in(body)

    def _answer(self, request: RecordedRequest, script: Script[FunctionCall]) -> Reply:
        body = request.body if isinstance(request.body, Mapping) else {}
        if not _is_responses(request):
            path = request.path.split("?", 1)[0]
            error = {"error": {"type": "invalid_request_error", "message": f"no route {path}"}}
            return 404, {"Content-Type": "application/json"}, json.dumps(error).encode(), None

        call = self._next_call(script, request) if self._is_turn(body) else None
        response_id = f"resp_fake{secrets.token_hex(8)}"
        after_send: Callable[[float], None] | None = None
        if call is not None:
            call_id, tool, after_send = call
            item: dict[str, Any] = {
                "type": "function_call",
                "id": f"fc_fake{secrets.token_hex(8)}",
                "call_id": call_id,
                "name": tool.name,
                "arguments": json.dumps(tool.arguments),
            }
            if tool.custom_input is not None:
                item = {
                    "type": "custom_tool_call",
                    "id": f"ctc_fake{secrets.token_hex(8)}",
                    "call_id": call_id,
                    "name": tool.name,
                    "input": tool.custom_input,
                }
        else:
            item = {
                "type": "message",
                "id": f"msg_fake{secrets.token_hex(8)}",
                "role": "assistant",
                "content": [{"type": "output_text", "text": DONE_TEXT, "annotations": []}],
            }
        payload = _sse(response_id, item)
        headers = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        return 200, headers, payload, after_send


def _is_responses(request: RecordedRequest) -> bool:
    return request.method == "POST" and request.path.split("?", 1)[0].endswith("/responses")


_USAGE = {
    "input_tokens": 10,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 5,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 15,
}


def _sse(response_id: str, item: Mapping[str, Any]) -> bytes:
    """One response holding one output item, as the streaming Responses API sends it: the item
    added, its text or arguments streamed in one delta, the item done, and the completed
    response holding it (Codex reads the ``done`` item; Copilot CLI reads the deltas and the
    completed response's ``output``)."""
    response = {
        "id": response_id,
        "object": "response",
        "status": "in_progress",
        "model": "gpt-fake",
        "output": [],
    }
    item_id = item["id"]
    if item["type"] == "message":
        part = item["content"][0]
        started = {**item, "content": [], "status": "in_progress"}
        where = {"item_id": item_id, "output_index": 0, "content_index": 0}
        streamed: list[dict[str, Any]] = [
            {
                "type": "response.content_part.added",
                **where,
                "part": {**part, "text": ""},
            },
            {"type": "response.output_text.delta", **where, "delta": part["text"]},
            {"type": "response.output_text.done", **where, "text": part["text"]},
            {"type": "response.content_part.done", **where, "part": part},
        ]
    elif item["type"] == "custom_tool_call":
        started = {**item, "input": "", "status": "in_progress"}
        where = {"item_id": item_id, "output_index": 0}
        streamed = [
            {"type": "response.custom_tool_call_input.delta", **where, "delta": item["input"]},
            {"type": "response.custom_tool_call_input.done", **where, "input": item["input"]},
        ]
    else:
        started = {**item, "arguments": "", "status": "in_progress"}
        where = {"item_id": item_id, "output_index": 0}
        streamed = [
            {"type": "response.function_call_arguments.delta", **where, "delta": item["arguments"]},
            {
                "type": "response.function_call_arguments.done",
                **where,
                "arguments": item["arguments"],
            },
        ]
    done = {**item, "status": "completed"}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": response},
        {"type": "response.in_progress", "response": response},
        {"type": "response.output_item.added", "output_index": 0, "item": started},
        *streamed,
        {"type": "response.output_item.done", "output_index": 0, "item": done},
        {
            "type": "response.completed",
            "response": {**response, "status": "completed", "output": [done], "usage": _USAGE},
        },
    ]
    return b"".join(
        f"event: {event['type']}\ndata: {json.dumps({**event, 'sequence_number': n})}\n\n".encode()
        for n, event in enumerate(events)
    )
