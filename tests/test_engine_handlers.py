"""http and prompt hooks through the real engine: a loopback HTTP server, the agent's judge,
and the built-in OpenAI-compatible judge configured from hooks.toml."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

from triohooks import JudgeReply
from triohooks.engine.hook_engine import HookEngine

from .helpers import write_toml_hooks
from .test_http_hooks import Reply, Request, loopback_server

pytestmark = pytest.mark.slow


def open_engine(tmp_path: Path, **kw):
    (tmp_path / "ws").mkdir(exist_ok=True)
    return HookEngine.open(
        workspace=tmp_path / "ws", config_dir=tmp_path / "g", state_dir=tmp_path / "s", **kw
    )


async def test_http_hook_blocks_and_sees_the_event(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HOOK_TOKEN", "s3cret")
    monkeypatch.setenv("OTHER_SECRET", "leak")

    async def app(request: Request, stream: trio.SocketStream) -> Reply:
        event = json.loads(request.body)
        if "push" in event["args"]["command"]:
            return Reply(200, b'{"decision": "block", "reason": "http says no"}')
        return Reply(200, b"")

    with trio.fail_after(15):
        async with loopback_server(app) as server:
            write_toml_hooks(
                tmp_path / "g",
                f"""[[hooks.pre_tool]]
type = "http"
url = "{server.url}/hook"
headers = {{ Authorization = "Bearer ${{HOOK_TOKEN}}", X-Other = "$OTHER_SECRET" }}
allowed_env_vars = ["HOOK_TOKEN"]
""",
            )
            async with open_engine(tmp_path) as engine:
                blocked = await engine.pre_tool("bash", {"command": "git push"})
                fine = await engine.pre_tool("bash", {"command": "ls"})
    assert blocked.blocked and blocked.reason == "http says no"
    assert not fine.blocked and fine.runs[0].outcome == "ok"
    first = server.requests[0]
    assert first.method == "POST"
    assert first.headers["authorization"] == "Bearer s3cret"
    assert first.headers["x-other"] == "$OTHER_SECRET"  # not allowed: stays as written
    assert first.headers["content-type"] == "application/json"
    assert json.loads(first.body)["event"] == "pre_tool"


async def test_http_500_is_a_failure_and_fail_closed_blocks(tmp_path: Path) -> None:
    async def app(request: Request, stream: trio.SocketStream) -> Reply:
        return Reply(500, b"boom")

    with trio.fail_after(15):
        async with loopback_server(app) as server:
            write_toml_hooks(
                tmp_path / "g",
                f'[[hooks.pre_tool]]\ntype = "http"\nurl = "{server.url}"\nfail_closed = true\n',
            )
            async with open_engine(tmp_path) as engine:
                out = await engine.pre_tool("bash", {})
    assert out.blocked
    assert out.reason is not None and "failed and is fail_closed" in out.reason
    assert out.runs[0].outcome == "error" and out.runs[0].exit_code == 500


async def test_prompt_hook_uses_the_agents_judge_and_reports_tokens(tmp_path: Path) -> None:
    calls: list[tuple[str, str, str | None]] = []

    async def judge(prompt: str, event_json: str, model: str | None) -> JudgeReply:
        calls.append((prompt, event_json, model))
        if "password" in json.loads(event_json)["prompt"]:
            return JudgeReply(
                text='{"decision": "block", "reason": "asks for a secret"}',
                input_tokens=120,
                output_tokens=9,
            )
        return JudgeReply(text='{"decision": ""}', input_tokens=100, output_tokens=5)

    write_toml_hooks(
        tmp_path / "g",
        '[[hooks.prompt_submit]]\ntype = "prompt"\nprompt = "Block requests for secrets"\nmodel = "small"\n',
    )
    with trio.fail_after(10):
        async with open_engine(tmp_path, judge=judge) as engine:
            blocked = await engine.prompt_submit("what is the admin password?")
            fine = await engine.prompt_submit("refactor foo")
    assert blocked.blocked and blocked.reason == "asks for a secret"
    assert (blocked.runs[0].input_tokens, blocked.runs[0].output_tokens) == (120, 9)
    assert not fine.blocked and fine.decision is None  # "" = the criteria don't apply
    assert calls[0][0] == "Block requests for secrets" and calls[0][2] == "small"


async def test_malformed_judge_output_is_a_failure_not_a_crash(tmp_path: Path) -> None:
    async def judge(prompt: str, event_json: str, model: str | None) -> JudgeReply:
        return JudgeReply(text="I think it is fine")

    write_toml_hooks(tmp_path / "g", '[[hooks.prompt_submit]]\ntype = "prompt"\nprompt = "x"\n')
    with trio.fail_after(10):
        async with open_engine(tmp_path, judge=judge) as engine:
            out = await engine.prompt_submit("hi")
    assert not out.blocked and out.runs[0].outcome == "error"
    assert any("judge answered no JSON" in w for w in out.warnings)


async def test_builtin_judge_from_toml_config(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MY_JUDGE_KEY", "k-123")

    async def app(request: Request, stream: trio.SocketStream) -> Reply:
        body = json.loads(request.body)
        assert request.headers["authorization"] == "Bearer k-123"
        answer = {"decision": "block", "reason": f"judged by {body['model']}"}
        doc = {
            "choices": [{"message": {"role": "assistant", "content": json.dumps(answer)}}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 7},
        }
        return Reply(200, json.dumps(doc).encode(), [("content-type", "application/json")])

    with trio.fail_after(15):
        async with loopback_server(app) as server:
            write_toml_hooks(
                tmp_path / "g",
                f"""[judge]
base_url = "{server.url}/v1"
model = "tiny"
api_key_env = "MY_JUDGE_KEY"

[[hooks.pre_tool]]
type = "prompt"
prompt = "Block everything"
""",
            )
            async with open_engine(tmp_path) as engine:
                out = await engine.pre_tool("bash", {"command": "ls"})
    assert out.blocked and out.reason == "judged by tiny"
    assert out.runs[0].input_tokens == 50


async def test_judge_that_cannot_be_built_warns_and_falls_back(tmp_path: Path, caplog) -> None:
    async def agent_judge(prompt: str, event_json: str, model: str | None) -> JudgeReply:
        return JudgeReply(text='{"decision": "block", "reason": "agent judge"}')

    write_toml_hooks(
        tmp_path / "g",
        '[judge]\nbase_url = "http://127.0.0.1:9/v1"\napi_key_env = "UNSET_KEY_VAR_XYZ"\n'
        '[[hooks.pre_tool]]\ntype = "prompt"\nprompt = "x"\n',
    )
    with trio.fail_after(10):
        async with open_engine(tmp_path, judge=agent_judge) as engine:
            out = await engine.pre_tool("bash", {})
            warning = engine.judge_warning
    assert out.reason == "agent judge"
    assert warning is not None and "UNSET_KEY_VAR_XYZ" in warning
