"""Prompt hooks' judge: the built-in OpenAI-compatible client against a real loopback server."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from typing import Any

import pytest
import trio

from tests.test_http_hooks import Reply, Request, loopback_server, never_answers
from triohooks.handlers.http import HttpHookClient
from triohooks.handlers.judge import (
    ENV_API_KEY_VAR,
    ENV_BASE_URL,
    ENV_MODEL,
    JudgeError,
    JudgeReply,
    OpenAIJudge,
    judge_from_env,
)

KEY = "sk-test-0123456789"
EVENT = json.dumps({"event": "pre_tool", "tool": "bash", "args": {"command": "git push"}})
CRITERIA = "Block any command that pushes to a git remote."


def completion(content: Any, usage: dict[str, int] | None = None) -> bytes:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
    }
    if usage is not None:
        body["usage"] = usage
    return json.dumps(body).encode()


class FakeModel:
    """A chat-completions endpoint whose 'model' blocks events that mention ``git push``."""

    def __init__(self, answer: Callable[[dict[str, Any]], Reply] | None = None) -> None:
        self.payloads: list[dict[str, Any]] = []
        self.answer = answer or self.judge

    @staticmethod
    def judge(payload: dict[str, Any]) -> Reply:
        event = payload["messages"][-1]["content"]
        if "git push" in event:
            content = '{"decision": "block", "reason": "pushes to a remote"}'
        else:
            content = '{"decision": ""}'
        usage = {"prompt_tokens": 120, "completion_tokens": 14, "total_tokens": 134}
        return Reply(body=completion(content, usage))

    async def __call__(self, request: Request, stream: trio.SocketStream) -> Reply:
        if (request.method, request.target) != ("POST", "/v1/chat/completions"):
            return Reply(status=404, body=b'{"error": "not found"}')
        payload = json.loads(request.body)
        payload["_authorization"] = request.headers.get("authorization")
        self.payloads.append(payload)
        return self.answer(payload)


async def test_judge_asks_chat_completions_and_reports_tokens() -> None:
    model = FakeModel()
    with trio.fail_after(5):
        async with loopback_server(model) as server:
            judge = OpenAIJudge(base_url=server.url + "/v1/", model="judge-small", api_key=KEY)
            async with judge:
                blocked = await judge(CRITERIA, EVENT, None)
                quiet = await judge(CRITERIA, EVENT.replace("git push", "ls"), None)
    assert blocked == JudgeReply(
        text='{"decision": "block", "reason": "pushes to a remote"}',
        input_tokens=120,
        output_tokens=14,
    )
    assert json.loads(quiet.text) == {"decision": ""}
    first = model.payloads[0]
    assert first["model"] == "judge-small"
    assert first["_authorization"] == f"Bearer {KEY}"
    system, user = first["messages"]
    assert system["role"] == "system" and "ONLY a JSON object" in system["content"]
    assert user["role"] == "user"
    assert CRITERIA in user["content"] and EVENT in user["content"]
    assert server.connections == 1  # entered: one pooled connection


async def test_hook_model_overrides_the_default() -> None:
    model = FakeModel()
    with trio.fail_after(5):
        async with (
            loopback_server(model) as server,
            OpenAIJudge(base_url=server.url + "/v1", model="default") as judge,
        ):
            await judge(CRITERIA, EVENT, "hook-model")
    assert model.payloads[0]["model"] == "hook-model"
    assert model.payloads[0]["_authorization"] is None  # no key: no header


async def test_no_model_at_all_is_an_error() -> None:
    judge = OpenAIJudge(base_url="http://127.0.0.1:9/v1")
    with trio.fail_after(5), pytest.raises(JudgeError, match="no model"):
        await judge(CRITERIA, EVENT, None)


@pytest.mark.parametrize(
    ("content", "text"),
    [
        ('```json\n{"decision": "allow"}\n```', '{"decision": "allow"}'),
        ('```\n{"decision": ""}\n```', '{"decision": ""}'),
        ('  {"decision": "block"}\n', '{"decision": "block"}'),
        (
            [{"type": "text", "text": '{"decision":'}, {"type": "text", "text": ' ""}'}],
            '{"decision": ""}',
        ),
        ("I think this is fine.", "I think this is fine."),  # the dispatcher rejects it
    ],
)
async def test_answer_text_is_normalised(content: Any, text: str) -> None:
    model = FakeModel(lambda payload: Reply(body=completion(content)))
    with trio.fail_after(5):
        async with loopback_server(model) as server:
            reply = await OpenAIJudge(base_url=server.url + "/v1", model="m")(CRITERIA, EVENT, None)
    assert reply.text == text
    assert (reply.input_tokens, reply.output_tokens) == (None, None)  # no usage sent


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        (Reply(body=b"not json"), "malformed"),
        (Reply(body=b"{}"), "malformed"),
        (Reply(body=b'{"choices": []}'), "no choices"),
        (Reply(body=b'{"choices": "x"}'), "malformed"),
        (Reply(body=b'{"choices": [{"message": {"content": 42}}]}'), "malformed"),
        (Reply(body=completion(None)), "no text answer"),
        (Reply(body=b'{"choices": [{"message": {}}]}'), "no text answer"),
        (Reply(body=completion("ok", {"prompt_tokens": "many"})), "malformed"),  # type: ignore[dict-item]
        (Reply(status=500, body=b'{"error": "overloaded"}'), "HTTP 500"),
        (Reply(status=401, body=b'{"error": "bad key"}'), "HTTP 401"),
    ],
)
async def test_malformed_answers_are_judge_errors(reply: Reply, why: str) -> None:
    model = FakeModel(lambda payload: reply)
    with trio.fail_after(5):
        async with loopback_server(model) as server:
            judge = OpenAIJudge(base_url=server.url + "/v1", model="m", api_key=KEY)
            with pytest.raises(JudgeError, match=why) as info:
                await judge(CRITERIA, EVENT, None)
    assert KEY not in str(info.value)
    assert KEY not in repr(judge)


async def test_unreachable_server_is_a_judge_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    judge = OpenAIJudge(base_url=f"http://127.0.0.1:{port}/v1", model="m")
    with trio.fail_after(5), pytest.raises(JudgeError, match="ConnectError"):
        await judge(CRITERIA, EVENT, None)


async def test_judge_timeout_is_a_judge_error() -> None:
    with trio.fail_after(5):
        async with loopback_server(never_answers) as server:
            judge = OpenAIJudge(base_url=server.url + "/v1", model="m", timeout_s=0.2)
            with pytest.raises(JudgeError, match="timed out"):
                await judge(CRITERIA, EVENT, None)


async def test_cancel_from_outside_propagates() -> None:
    with trio.fail_after(5):
        async with (
            loopback_server(never_answers) as server,
            OpenAIJudge(base_url=server.url + "/v1", model="m") as judge,
        ):
            with trio.move_on_after(0.1) as outer:
                await judge(CRITERIA, EVENT, None)
            assert outer.cancelled_caught


async def test_without_a_pool_each_call_opens_and_closes_its_own() -> None:
    model = FakeModel()
    with trio.fail_after(5):
        async with loopback_server(model) as server:
            judge = OpenAIJudge(base_url=server.url + "/v1", model="m")
            for _ in range(3):
                await judge(CRITERIA, EVENT, None)
    assert server.connections == 3


async def test_shared_client_is_used_and_not_closed_by_the_judge() -> None:
    model = FakeModel()
    with trio.fail_after(5):
        async with loopback_server(model) as server, HttpHookClient() as http:
            async with OpenAIJudge(base_url=server.url + "/v1", model="m", client=http) as judge:
                await judge(CRITERIA, EVENT, None)
            # The engine's client outlives the judge.
            after = await http.post(server.url + "/elsewhere", body=b"{}", headers={}, timeout_s=5)
    assert after.status_code == 404  # answered: the pool is still open
    assert server.connections == 1


# -- building from the environment --------------------------------------------------------


def test_nothing_configured_means_no_judge_and_no_warning() -> None:
    assert judge_from_env({"HOME": "/root"}) == (None, None)


def test_env_builds_a_judge() -> None:
    judge, warning = judge_from_env(
        {
            ENV_BASE_URL: "http://127.0.0.1:8080/v1",
            ENV_MODEL: "small",
            ENV_API_KEY_VAR: "MY_KEY",
            "MY_KEY": KEY,
        }
    )
    assert warning is None and judge is not None
    assert judge.url == "http://127.0.0.1:8080/v1/chat/completions"
    assert judge.model == "small"
    assert KEY not in repr(judge)


def test_config_table_wins_over_env() -> None:
    environ = {ENV_BASE_URL: "http://env:1/v1", ENV_MODEL: "env-model", "K2": "k2"}
    judge, warning = judge_from_env(
        environ, {"base_url": "http://cfg:2/v1", "model": "cfg-model", "api_key_env": "K2"}
    )
    assert warning is None and judge is not None
    assert (judge.url, judge.model) == ("http://cfg:2/v1/chat/completions", "cfg-model")


def test_a_merged_mapping_works_too() -> None:
    # The engine may pass {**os.environ, **judge_table} as one mapping.
    judge, warning = judge_from_env({"base_url": "http://cfg:2/v1", ENV_MODEL: "m"})
    assert warning is None and judge is not None
    assert (judge.url, judge.model) == ("http://cfg:2/v1/chat/completions", "m")


def test_base_url_without_model_builds_a_judge_that_needs_the_hooks_model() -> None:
    judge, warning = judge_from_env({ENV_BASE_URL: "https://models.example/v1"})
    assert warning is None and judge is not None and judge.model is None


@pytest.mark.parametrize(
    ("environ", "why"),
    [
        ({ENV_MODEL: "m"}, "no base URL"),
        ({ENV_API_KEY_VAR: "K"}, "no base URL"),
        ({ENV_BASE_URL: "127.0.0.1:8080/v1", ENV_MODEL: "m"}, "not an http"),
        ({ENV_BASE_URL: "ftp://x/v1", ENV_MODEL: "m"}, "not an http"),
        ({ENV_BASE_URL: "http://x/v1", ENV_API_KEY_VAR: "MISSING"}, "MISSING is not set"),
        ({ENV_BASE_URL: "http://x/v1", ENV_API_KEY_VAR: "EMPTY", "EMPTY": ""}, "EMPTY is not set"),
        ({ENV_BASE_URL: "http://x/v1", ENV_API_KEY_VAR: "sk-live-abc"}, "not a variable name"),
    ],
)
def test_a_judge_that_cannot_be_built_warns(environ: dict[str, str], why: str) -> None:
    judge, warning = judge_from_env(environ)
    assert judge is None
    assert warning is not None and why in warning and "fallback judge" in warning


async def test_env_built_judge_talks_to_the_server() -> None:
    model = FakeModel()
    with trio.fail_after(5):
        async with loopback_server(model) as server:
            judge, warning = judge_from_env(
                {
                    ENV_BASE_URL: server.url + "/v1",
                    ENV_MODEL: "small",
                    ENV_API_KEY_VAR: "K",
                    "K": KEY,
                }
            )
            assert judge is not None and warning is None
            async with judge:
                reply = await judge(CRITERIA, EVENT, None)
    assert json.loads(reply.text)["decision"] == "block"
    assert model.payloads[0]["_authorization"] == f"Bearer {KEY}"
