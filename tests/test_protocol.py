"""The two dialects' reading of a hook's end, and the JSON dialect's feeding (pure, no I/O)."""

from __future__ import annotations

import json
import os
import stat
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from triohooks.actors._watchdog import remove_file, write_private_file
from triohooks.handlers.process import ProcessResult
from triohooks.handlers.replies import (
    MAX_ENV_STRING,
    RunResult,
    json_hook_environment,
    json_payload,
    parse_toml_stdout,
    read_json_reply,
    read_toml_reply,
)


def exited(code: int = 0, stdout: str = "", stderr: str = "", **kw: Any) -> ProcessResult:
    return ProcessResult(
        status="exited",
        exit_code=code,
        stdout=stdout,
        stderr=stderr,
        stdout_bytes=len(stdout.encode()),
        stderr_bytes=len(stderr.encode()),
        **kw,
    )


FAILURES = [
    (ProcessResult(status="timeout", error="timed out after 0.2 s"), "timeout", "timed out"),
    (ProcessResult(status="spawn_failed", error="cannot start 'x'"), "spawn_failed", "cannot"),
    (ProcessResult(status="killed", error="killed: reaper closed"), "killed", "reaper closed"),
    (
        ProcessResult(status="overflow", error="hook output exceeded 65536 bytes"),
        "error",
        "hook output exceeded 65536 bytes",
    ),
    (
        ProcessResult(status="signaled", signal=9, error="killed by SIGKILL", stderr="oops"),
        "error",
        "killed by SIGKILL: oops",
    ),
]

# --- TOML dialect -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stderr", "reason"), [("", "blocked by hook"), ("  no rm -rf here\n", "no rm -rf here")]
)
def test_toml_exit_2_blocks_with_stderr_as_reason(stderr: str, reason: str) -> None:
    run = read_toml_reply(exited(2, stdout='{"decision":"allow"}', stderr=stderr))
    assert (run.outcome, run.decision, run.reason, run.exit_code) == ("block", "block", reason, 2)


def test_toml_exit_0_empty_stdout_has_no_opinion() -> None:
    run = read_toml_reply(exited(0, stdout=" \n"))
    assert run == RunResult(outcome="ok", exit_code=0, stdout_bytes=2)


def test_toml_exit_0_plain_text_is_context() -> None:
    run = read_toml_reply(exited(0, stdout="branch: main\n"))
    assert (run.outcome, run.decision, run.plain_output) == ("ok", None, "branch: main")


def test_toml_full_reply_is_read_and_unknown_fields_ignored() -> None:
    reply = {
        "decision": "allow",
        "reason": "fine",
        "continue": True,
        "additional_context": "ctx",
        "updated_args": {"command": "ls -la"},
        "system_message": "note",
        "hookSpecificOutput": {"whatever": 1},
    }
    run = read_toml_reply(exited(0, stdout="\n" + json.dumps(reply) + "\n"))
    assert run.outcome == "ok"
    assert run.decision == "allow"
    assert run.reason == "fine"
    assert run.continue_ is True
    assert run.additional_context == "ctx"
    assert run.updated_args == {"command": "ls -la"}
    assert run.system_message == "note"
    assert run.plain_output is None


@pytest.mark.parametrize(
    ("reply", "outcome", "decision", "reason"),
    [
        ({"decision": "block"}, "block", "block", "blocked by hook"),
        ({"decision": "block", "reason": "no"}, "block", "block", "no"),
        ({"decision": "deny", "reason": "not here"}, "block", "deny", "not here"),
        ({"decision": "ask", "reason": "sure?"}, "ok", "ask", "sure?"),
        ({"decision": ""}, "ok", "", None),
        ({"continue": True, "reason": "go on"}, "ok", None, "go on"),
    ],
)
def test_toml_decisions(reply: dict[str, Any], outcome: str, decision: str, reason: str) -> None:
    run = read_toml_reply(exited(0, stdout=json.dumps(reply)))
    assert (run.outcome, run.decision, run.reason) == (outcome, decision, reason)


@pytest.mark.parametrize(
    ("stdout", "needle"),
    [
        ('{"decision": "block"', "invalid JSON reply"),
        ('{"decision":"allow"}{"decision":"block"}', "trailing characters"),
        ('{"continue": "yes"}', "$.continue"),
        ('{"updated_args": ["ls"]}', "$.updated_args"),
        ('{"decision": 1}', "$.decision"),
    ],
)
def test_toml_bad_json_reply_is_an_error(stdout: str, needle: str) -> None:
    run = read_toml_reply(exited(0, stdout=stdout))
    assert run.outcome == "error"
    assert run.error is not None
    assert run.error.startswith("invalid JSON reply")
    assert needle in run.error


def test_toml_truncated_json_error_says_so() -> None:
    run = read_toml_reply(exited(0, stdout='{"reason": "' + "x" * 100, truncated=True))
    assert run.outcome == "error"
    assert run.truncated
    assert "truncated" in (run.error or "")


def test_toml_other_exit_is_an_error_quoting_stderr() -> None:
    run = read_toml_reply(exited(1, stdout='{"decision":"block"}', stderr="E" * 500))
    assert run.outcome == "error"
    assert run.error == "hook exited with code 1: " + "E" * 200 + "..."
    assert run.exit_code == 1


@pytest.mark.parametrize(("result", "outcome", "needle"), FAILURES)
def test_process_failures_read_the_same_in_both_dialects(
    result: ProcessResult, outcome: str, needle: str
) -> None:
    for read in (read_toml_reply, read_json_reply):
        run = read(result)
        assert run.outcome == outcome
        assert needle in (run.error or "")
        assert run.decision is None


def test_parse_toml_stdout_serves_http_bodies() -> None:
    run = parse_toml_stdout('{"decision":"deny","reason":"policy"}')
    assert (run.outcome, run.decision, run.reason, run.exit_code) == (
        "block",
        "deny",
        "policy",
        None,
    )
    assert parse_toml_stdout("").outcome == "ok"


def test_run_result_encodes_continue_under_its_json_name() -> None:
    encoded = msgspec.json.decode(msgspec.json.encode(RunResult(outcome="ok", continue_=True)))
    assert encoded["continue"] is True
    assert "continue_" not in encoded


# --- JSON dialect -------------------------------------------------------------------------


def test_json_empty_stdout_exit_0_allows() -> None:
    run = read_json_reply(exited(0, stdout="\n"))
    assert (run.outcome, run.decision, run.error) == ("ok", None, None)


def test_json_empty_stdout_nonzero_is_an_error() -> None:
    run = read_json_reply(exited(3, stderr="boom"))
    assert run.outcome == "error"
    assert run.error == "hook exited with code 3 and no output: boom"


def test_json_decision_overrides_the_exit_code() -> None:
    run = read_json_reply(exited(7, stdout='{"decision":"block"}'))
    assert (run.outcome, run.decision, run.reason, run.exit_code) == (
        "block",
        "block",
        "hook blocked",
        7,
    )


def test_json_block_keeps_reason_and_user_message() -> None:
    reply = {"decision": "block", "reason": "dangerous", "user_message": "Blocked by hook."}
    run = read_json_reply(exited(0, stdout="  \n\t" + json.dumps(reply)))
    assert (run.outcome, run.reason, run.user_message) == (
        "block",
        "dangerous",
        "Blocked by hook.",
    )


def test_json_allow() -> None:
    run = read_json_reply(exited(0, stdout='{ "decision": "allow" }'))
    assert (run.outcome, run.decision) == ("ok", "allow")


def test_json_mutate_carries_the_patch() -> None:
    reply = {"decision": "mutate", "patch": {"arguments": {"command": "cargo fmt --check"}}}
    run = read_json_reply(exited(0, stdout=json.dumps(reply)))
    assert run.outcome == "mutate"
    assert run.patch == {"arguments": {"command": "cargo fmt --check"}}


@pytest.mark.parametrize(
    ("stdout", "needle"),
    [
        ('{"decision":"mutate"}', "needs an object patch"),
        ('{"decision":"mutate","patch":[1]}', "needs an object patch"),
        ('{"decision":"deny"}', "unknown decision 'deny'"),
        ('{"reason":"x"}', "no decision"),
        ('{"decision":"allow"', "invalid JSON reply"),
        ('{"decision":"allow"}\n{"decision":"block"}', "trailing characters"),
        ('{"decision": 3}', "$.decision"),
    ],
)
def test_json_bad_replies_are_errors(stdout: str, needle: str) -> None:
    run = read_json_reply(exited(0, stdout=stdout))
    assert run.outcome == "error"
    assert needle in (run.error or "")


def test_json_non_object_stdout_quotes_80_bytes() -> None:
    run = read_json_reply(exited(1, stdout="allow " + "y" * 200))
    assert run.outcome == "error"
    quoted = repr(("allow " + "y" * 200)[:80])
    assert run.error == f"hook output is not a JSON object (exit code 1): {quoted}"


@given(st.text(max_size=300), st.integers(min_value=0, max_value=255), st.booleans())
def test_reading_never_raises(stdout: str, code: int, truncated: bool) -> None:
    for read in (read_toml_reply, read_json_reply):
        run = read(exited(code, stdout=stdout, truncated=truncated))
        assert run.outcome in ("ok", "block", "mutate", "error")
        assert (run.outcome == "error") == (run.error is not None)


# --- JSON dialect feeding -----------------------------------------------------------------


def environment(**over: Any) -> dict[str, str]:
    args: dict[str, Any] = {
        "base_env": {"PATH": "/bin", "EVERRUNS_HOOK_TURN_ID": "stale", "HOME": "/h"},
        "hook_id": "user:guard",
        "event_name": "pre_tool_use",
        "session_id": "s1",
        "turn_id": None,
        "tool_name": "bash",
        "tool_call_id": "call-1",
        "payload_json": '{"event":"pre_tool_use"}',
        "payload_path": "/tmp/p.json",
        "spec_env": [("HOME", "/override"), ("EVERRUNS_HOOK_ID", "spec-wins")],
    }
    args.update(over)
    return json_hook_environment(**args)


def test_json_environment_carries_the_payload_and_applies_spec_env_last() -> None:
    env = environment()
    assert env["PATH"] == "/bin"
    assert env["HOME"] == "/override"
    assert env["EVERRUNS_HOOK_ID"] == "spec-wins"
    assert env["EVERRUNS_HOOK_EVENT"] == "pre_tool_use"
    assert env["EVERRUNS_HOOK_SESSION_ID"] == "s1"
    assert env["EVERRUNS_HOOK_TOOL_NAME"] == "bash"
    assert env["EVERRUNS_HOOK_TOOL_CALL_ID"] == "call-1"
    assert env["EVERRUNS_HOOK_PAYLOAD_JSON"] == '{"event":"pre_tool_use"}'
    assert env["EVERRUNS_HOOK_PAYLOAD_PATH"] == "/tmp/p.json"
    assert "EVERRUNS_HOOK_TURN_ID" not in env  # not inherited from the host when unknown


def test_json_environment_optional_ids() -> None:
    env = environment(turn_id="t9", tool_name=None, tool_call_id=None, spec_env=[])
    assert env["EVERRUNS_HOOK_TURN_ID"] == "t9"
    assert "EVERRUNS_HOOK_TOOL_NAME" not in env
    assert "EVERRUNS_HOOK_TOOL_CALL_ID" not in env


def test_json_environment_leaves_out_a_payload_linux_would_refuse() -> None:
    big = '"' + "x" * MAX_ENV_STRING + '"'
    env = environment(payload_json=big)
    assert "EVERRUNS_HOOK_PAYLOAD_JSON" not in env
    assert env["EVERRUNS_HOOK_PAYLOAD_PATH"] == "/tmp/p.json"


def test_json_payload_shape_and_timestamp() -> None:
    raw = json_payload(
        event_name="pre_tool_use",
        hook_id="user:guard",
        session_id="s1",
        turn_id=None,
        data={"tool_name": "bash", "arguments": {"command": "ls"}},
    )
    doc = json.loads(raw)
    assert list(doc) == ["event", "hook_id", "session_id", "turn_id", "ts", "data"]
    assert doc["turn_id"] is None
    assert doc["data"]["arguments"] == {"command": "ls"}
    assert doc["ts"].endswith("Z")
    assert datetime.fromisoformat(doc["ts"]).utcoffset() is not None


def test_private_file_is_0600_exclusive_and_removed(tmp_path: Path) -> None:
    path = str(tmp_path / "triohooks-payload-x.json")
    write_private_file(path, b'{"a":1}')
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with open(path, "rb") as f:
        assert f.read() == b'{"a":1}'
    with pytest.raises(FileExistsError):
        write_private_file(path, b"again")
    remove_file(path)
    assert not os.path.exists(path)
    remove_file(path)  # already gone: fine
    os.symlink(tmp_path / "elsewhere", path)
    with pytest.raises(FileExistsError):  # a dangling symlink is not followed either
        write_private_file(path, b"x")
    assert not (tmp_path / "elsewhere").exists()
