"""Claude Code's own hook behaviour, with plain ``.claude/settings.json`` hooks (no triohooks).

These prove the harness (the real CLI, offline, scripted by the fake Messages API) and pin
down the baseline the project's adapters build on: what blocks a call, what the model then
sees, what a hook gets on stdin, and what an ``http`` hook is sent. Run ``pytest -s`` to see
the recorded hook inputs and the http request.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.interop import ClaudeProject, run_claude
from tests.interop.fake_anthropic import FakeAnthropic, LocalHTTPServer, RecordedRequest

pytestmark = pytest.mark.interop

DENY_JSON = {
    "hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "denied-by-json",
    }
}


def marker_commands(n: int) -> list[str]:
    return [f"echo marker-{k} > marker-{k}.txt" for k in range(n)]


def markers(project: ClaudeProject) -> list[str]:
    return sorted(p.name for p in project.path.glob("marker-*.txt"))


def session(
    claude_bin: Path, project: ClaudeProject, fake: FakeAnthropic, commands: list[str]
) -> dict[str, Any]:
    fake.script(commands)
    process, output = run_claude(claude_bin, project.path, project.home, fake, timeout=60)
    assert process.returncode == 0, (process.stdout[-2000:], process.stderr[-2000:])
    assert output is not None, process.stdout[-2000:]
    assert output.get("is_error") is False, output
    assert output.get("result") == "Done.", output  # the fake's closing text: all calls done
    return output


def shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def test_no_hooks_every_scripted_call_runs(
    claude_bin: Path, claude_project: ClaudeProject, fake_api: FakeAnthropic
) -> None:
    output = session(claude_bin, claude_project, fake_api, marker_commands(3))
    assert markers(claude_project) == ["marker-0.txt", "marker-1.txt", "marker-2.txt"]
    assert (claude_project.path / "marker-1.txt").read_text() == "marker-1\n"
    results = fake_api.tool_results()
    assert [r.is_error for r in results] == [False, False, False]
    assert output["num_turns"] == 4  # three tool calls and the closing turn
    assert len(fake_api.turn_requests()) == 4
    assert all(latency is not None for latency in fake_api.call_latencies())


def test_pretooluse_exit_2_blocks_and_stderr_reaches_the_model(
    claude_bin: Path, claude_project: ClaudeProject, fake_api: FakeAnthropic
) -> None:
    claude_project.write_hooks(
        {
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [{"type": "command", "command": "echo nope >&2; exit 2"}],
                }
            ]
        }
    )
    output = session(claude_bin, claude_project, fake_api, marker_commands(2))
    assert markers(claude_project) == []
    results = fake_api.tool_results()
    assert len(results) == 2
    for result in results:
        assert result.is_error
        assert "nope" in result.text
    # Observed: "PreToolUse:Bash hook error: [echo nope >&2; exit 2]: nope\n"
    print("tool_result after exit 2:", json.dumps(results[0].text))
    assert [d["tool_use_id"] for d in output["permission_denials"]] == fake_api.tool_use_ids


def test_pretooluse_json_deny_blocks_and_reason_reaches_the_model(
    claude_bin: Path, claude_project: ClaudeProject, fake_api: FakeAnthropic
) -> None:
    # Single quotes: the shell must hand the JSON's double quotes through to stdout.
    command = "echo " + shell_quote(json.dumps(DENY_JSON))
    claude_project.write_hooks(
        {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": command}]}]}
    )
    session(claude_bin, claude_project, fake_api, marker_commands(2))
    assert markers(claude_project) == []
    results = fake_api.tool_results()
    assert len(results) == 2
    for result in results:
        assert result.is_error
        assert "denied-by-json" in result.text
    # Observed: "PreToolUse:Bash hook error: denied-by-json"
    print("tool_result after JSON deny:", json.dumps(results[0].text))


def test_additional_context_reaches_the_model_after_the_tool_result(
    claude_bin: Path, claude_project: ClaudeProject, fake_api: FakeAnthropic
) -> None:
    def context(event: str, text: str) -> dict[str, Any]:
        reply = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
        command = "echo " + shell_quote(json.dumps(reply))
        return {"matcher": "Bash", "hooks": [{"type": "command", "command": command}]}

    claude_project.write_hooks(
        {
            "PreToolUse": [context("PreToolUse", "pre-ctx-1")],
            "PostToolUse": [context("PostToolUse", "post-ctx-2")],
        }
    )
    session(claude_bin, claude_project, fake_api, marker_commands(1))
    assert markers(claude_project) == ["marker-0.txt"]
    (result,) = fake_api.tool_results()
    assert not result.is_error
    after = fake_api.context_after(0)
    assert "pre-ctx-1" in after
    assert "post-ctx-2" in after
    # Observed in 2.1.332: not in the tool_result but a following {"role": "system"} message,
    # "PreToolUse:Bash hook additional context: pre-ctx-1\n\nPostToolUse:Bash hook additional
    # context: post-ctx-2".
    print("messages after the tool_result:", json.dumps(fake_api.messages_after(0)[1:]))


RECORDED_EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop")


def test_record_hook_stdin_per_event(
    claude_bin: Path, claude_project: ClaudeProject, fake_api: FakeAnthropic
) -> None:
    """Documentation more than a test: what each event's command hook gets on stdin."""
    record = {"type": "command", "command": 'cat > "$CLAUDE_PROJECT_DIR/input-$$.json"'}
    tool_events = {"PreToolUse", "PostToolUse"}
    hooks: dict[str, Any] = {
        event: [
            {"matcher": "Bash", "hooks": [record]} if event in tool_events else {"hooks": [record]}
        ]
        for event in (*RECORDED_EVENTS, "SessionEnd")
    }
    claude_project.write_hooks(hooks)
    session(claude_bin, claude_project, fake_api, marker_commands(1))

    files = sorted(claude_project.path.glob("input-*.json"), key=lambda p: p.stat().st_mtime_ns)
    seen: dict[str, dict[str, Any]] = {}
    for path in files:
        data = json.loads(path.read_text())
        seen.setdefault(data.get("hook_event_name", path.name), data)
    for event, data in seen.items():
        print(f"{event}: keys {sorted(data)}")
        print(f"  {json.dumps(data)}")
    assert set(RECORDED_EVENTS) <= set(seen), sorted(seen)
    for data in seen.values():
        assert data["session_id"] == seen["SessionStart"]["session_id"]
        assert Path(data["cwd"]) == claude_project.path
    assert seen["PreToolUse"]["tool_name"] == "Bash"
    assert seen["PreToolUse"]["tool_input"]["command"] == "echo marker-0 > marker-0.txt"
    assert seen["PreToolUse"]["tool_use_id"] == fake_api.tool_use_ids[0]
    assert "tool_response" in seen["PostToolUse"]
    assert seen["UserPromptSubmit"]["prompt"] == "Run the scripted commands."


def hook_server(status: int, body: bytes) -> LocalHTTPServer:
    def reply(request: RecordedRequest) -> tuple[int, dict[str, str], bytes]:
        return status, {"Content-Type": "application/json"}, body

    return LocalHTTPServer(reply)


def test_http_hook_deny_blocks_and_reason_reaches_the_model(
    claude_bin: Path, claude_project: ClaudeProject, fake_api: FakeAnthropic
) -> None:
    deny = {
        "hookSpecificOutput": {
            **DENY_JSON["hookSpecificOutput"],
            "permissionDecisionReason": "denied-by-http",
        }
    }
    with hook_server(200, json.dumps(deny).encode()) as server:
        hook = {"type": "http", "url": f"{server.url}/hook", "timeout": 5}
        claude_project.write_hooks({"PreToolUse": [{"matcher": "Bash", "hooks": [hook]}]})
        session(claude_bin, claude_project, fake_api, marker_commands(2))
        requests = server.requests
    assert markers(claude_project) == []
    results = fake_api.tool_results()
    assert len(results) == 2
    for result in results:
        assert result.is_error
        assert "denied-by-http" in result.text

    assert len(requests) == 2  # one per call
    first = requests[0]
    print("http hook request:", first.method, first.path)
    print("  headers:", json.dumps(first.headers))
    print("  body:", first.raw.decode())
    assert (first.method, first.path) == ("POST", "/hook")
    assert first.headers["content-type"].startswith("application/json")
    assert first.body["hook_event_name"] == "PreToolUse"
    assert first.body["tool_name"] == "Bash"
    assert first.body["tool_input"]["command"] == "echo marker-0 > marker-0.txt"
    assert first.body["tool_use_id"] == fake_api.tool_use_ids[0]


@pytest.mark.parametrize("failure", ["status-500", "refused"])
def test_http_hook_failure_does_not_block(
    claude_bin: Path, claude_project: ClaudeProject, fake_api: FakeAnthropic, failure: str
) -> None:
    """Baseline: a failing http hook lets the call run (Claude Code fails open)."""
    with hook_server(500, b'{"error": "boom"}') as server:
        url = f"{server.url}/hook"
        if failure == "refused":
            url = "http://127.0.0.1:1/hook"  # nothing listens on port 1
        hook = {"type": "http", "url": url, "timeout": 5}
        claude_project.write_hooks({"PreToolUse": [{"matcher": "Bash", "hooks": [hook]}]})
        session(claude_bin, claude_project, fake_api, marker_commands(1))
        got = len(server.requests)
    assert got == (1 if failure == "status-500" else 0)
    assert markers(claude_project) == ["marker-0.txt"]
    (result,) = fake_api.tool_results()
    assert not result.is_error
