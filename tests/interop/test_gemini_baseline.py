"""Gemini CLI's own hook behaviour, with plain ``.gemini/settings.json`` hooks (no triohooks).

These prove the harness (the real Gemini CLI 0.61.0, offline, scripted by the fake Gemini API)
and pin down the baseline triohooks must copy when it adopts Gemini CLI's hooks: how the end of
a ``BeforeTool`` hook (exit code, stdout, stderr) is read, what then blocks a call, what the
model sees, where a ``systemMessage`` goes, what a hook gets on stdin and in its environment.
Run ``pytest -s`` to see the recorded inputs and messages.

How Gemini CLI reads a command hook's end (``packages/core/src/hooks/hookRunner.ts``): the text
is ``stdout.trim() || stderr.trim()`` whatever the exit code; if it parses as a JSON object it
is the reply as is (the exit code is then ignored); otherwise exit 0 gives ``allow`` with the
text as ``systemMessage``, exit 1 ``allow`` with ``"Warning: <text>"``, any other code ``deny``
with the text as ``reason``. No text at all is no reply: the call proceeds, whatever the code.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.interop.fake_gemini import DONE_TEXT, SHELL_TOOL, FakeGemini
from tests.interop.gemini import GeminiProject, GeminiRun, run_gemini

pytestmark = pytest.mark.interop

#: Every hook below appends a line here first, so a test can tell that its hook ran.
RUNS = ".hook-runs"
BLOCKED = "Tool execution blocked: "


def marker_commands(n: int) -> list[str]:
    return [f"echo marker-{k} > marker-{k}.txt" for k in range(n)]


def markers(project: GeminiProject) -> list[str]:
    return sorted(p.name for p in project.path.glob("marker-*.txt"))


def hook_runs(project: GeminiProject) -> int:
    runs = project.path / RUNS
    return len(runs.read_text().splitlines()) if runs.exists() else 0


def shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def echo_json(reply: dict[str, Any], *, to_stderr: bool = False) -> str:
    return "echo " + shell_quote(json.dumps(reply)) + (" >&2" if to_stderr else "")


def handler(body: str, **extra: Any) -> dict[str, Any]:
    """A command hook that records its run, then runs ``body``."""
    return {"type": "command", "command": f"echo run >> {RUNS}; {body}", **extra}


def before_tool(*bodies: str, **extra: Any) -> dict[str, Any]:
    """``hooks`` with one BeforeTool group for the shell tool, one handler per body."""
    return {
        "BeforeTool": [
            {"matcher": SHELL_TOOL, "hooks": [handler(body, **extra) for body in bodies]}
        ]
    }


def session(
    gemini_bin: Path,
    project: GeminiProject,
    fake: FakeGemini,
    commands: list[str],
    *,
    env: dict[str, str] | None = None,
    done: bool = True,
) -> GeminiRun:
    """One bounded ``gemini -p`` session running ``commands``; it must exit 0 with JSON
    output and, if ``done``, with the fake's closing text (every scripted call answered)."""
    fake.script(commands)
    run = run_gemini(gemini_bin, project.path, project.home, fake, timeout=90, env=env)
    assert run.process.returncode == 0, (run.process.stdout[-2000:], run.process.stderr[-2000:])
    assert run.output is not None, run.process.stdout[-2000:]
    if done:
        assert run.output.get("response") == DONE_TEXT, run.output
    return run


def assert_blocked(project: GeminiProject, fake: FakeGemini, n: int, reason: str) -> None:
    """No scripted command ran and the model got ``Tool execution blocked: <reason>`` as the
    ``error`` of each of the ``n`` calls."""
    assert markers(project) == []
    responses = fake.function_responses()
    assert len(responses) == n
    for response in responses:
        assert response.is_error, response
        assert response.response == {"error": BLOCKED + reason}, response.response
    assert hook_runs(project) == n


def assert_ran(project: GeminiProject, fake: FakeGemini, n: int) -> None:
    """Every scripted command ran and its output reached the model; the hook ran per call."""
    assert markers(project) == [f"marker-{k}.txt" for k in range(n)]
    responses = fake.function_responses()
    assert len(responses) == n
    for response in responses:
        assert not response.is_error, response
        assert "output" in response.response
    assert hook_runs(project) == n


def failed_hook_warning(command: str) -> str:
    """What Gemini CLI prints on stderr, per call, for a hook that did not exit 0."""
    return f"[WARNING] Hook(s) [echo run >> {RUNS}; {command}] failed for event BeforeTool."


# --- the harness --------------------------------------------------------------------------------


def test_no_hooks_every_scripted_call_runs(
    gemini_bin: Path, gemini_project: GeminiProject, fake_gemini: FakeGemini
) -> None:
    run = session(gemini_bin, gemini_project, fake_gemini, marker_commands(3))
    assert markers(gemini_project) == ["marker-0.txt", "marker-1.txt", "marker-2.txt"]
    assert (gemini_project.path / "marker-1.txt").read_text() == "marker-1\n"
    responses = fake_gemini.function_responses()
    assert [r.is_error for r in responses] == [False, False, False]
    assert [r.name for r in responses] == [SHELL_TOOL] * 3
    assert len(fake_gemini.turn_requests()) == 4  # three calls and the closing turn
    assert all(latency is not None for latency in fake_gemini.call_latencies())
    # The shell tool as declared to the model.
    shell = fake_gemini.tool_declarations()[SHELL_TOOL]
    assert shell["parametersJsonSchema"]["required"] == ["command"]
    # The model router: one generateContent asking for a JSON complexity score.
    (router,) = [r for r in fake_gemini.json_requests() if ":generateContent" in r.path]
    schema = router.body["generationConfig"]["responseJsonSchema"]
    assert "complexity_score" in schema["properties"]
    assert run.output is not None
    assert set(run.output) == {"session_id", "response", "stats"}
    assert run.output["stats"]["tools"]["totalCalls"] == 3


# --- how the end of a BeforeTool hook is read ---------------------------------------------------


def test_json_decision_deny_blocks_and_the_reason_reaches_the_model(
    gemini_bin: Path, gemini_project: GeminiProject, fake_gemini: FakeGemini
) -> None:
    gemini_project.write_hooks(
        before_tool(echo_json({"decision": "deny", "reason": "denied-by-json"}))
    )
    run = session(gemini_bin, gemini_project, fake_gemini, marker_commands(2))
    assert_blocked(gemini_project, fake_gemini, 2, "denied-by-json")
    # A deny is a hook that succeeded (exit 0): no "failed" warning, and -o json is unchanged.
    assert "[WARNING] Hook(s)" not in run.process.stderr
    assert run.output is not None
    assert "warnings" not in run.output
    assert run.output["stats"]["tools"]["totalFail"] == 2


def test_decision_block_is_a_deny_too(
    gemini_bin: Path, gemini_project: GeminiProject, fake_gemini: FakeGemini
) -> None:
    gemini_project.write_hooks(
        before_tool(echo_json({"decision": "block", "reason": "blocked-by-json"}))
    )
    session(gemini_bin, gemini_project, fake_gemini, marker_commands(1))
    assert_blocked(gemini_project, fake_gemini, 1, "blocked-by-json")


def test_exit_2_with_stderr_blocks_and_stderr_is_the_reason(
    gemini_bin: Path, gemini_project: GeminiProject, fake_gemini: FakeGemini
) -> None:
    command = "echo nope >&2; exit 2"
    gemini_project.write_hooks(before_tool(command))
    run = session(gemini_bin, gemini_project, fake_gemini, marker_commands(2))
    assert_blocked(gemini_project, fake_gemini, 2, "nope")
    # Not exit 0, so also counted as a failed hook, once per call.
    assert run.process.stderr.count(failed_hook_warning(command)) == 2


@pytest.mark.parametrize("code", [2, 3])
def test_a_silent_non_zero_exit_does_not_block(
    gemini_bin: Path, gemini_project: GeminiProject, fake_gemini: FakeGemini, code: int
) -> None:
    """No stdout and no stderr: no reply at all, so the call runs (fail-open), with a
    warning on stderr. This holds for exit 2 as for any other code."""
    command = f"exit {code}"
    gemini_project.write_hooks(before_tool(command))
    run = session(gemini_bin, gemini_project, fake_gemini, marker_commands(2))
    assert_ran(gemini_project, fake_gemini, 2)
    assert run.process.stderr.count(failed_hook_warning(command)) == 2


def test_exit_3_with_stderr_blocks_like_exit_2(
    gemini_bin: Path, gemini_project: GeminiProject, fake_gemini: FakeGemini
) -> None:
    gemini_project.write_hooks(before_tool("echo 'three says no' >&2; exit 3"))
    session(gemini_bin, gemini_project, fake_gemini, marker_commands(1))
    assert_blocked(gemini_project, fake_gemini, 1, "three says no")


def test_a_hook_command_that_is_not_found_blocks_with_bashs_message(
    gemini_bin: Path, gemini_project: GeminiProject, fake_gemini: FakeGemini
) -> None:
    """A corollary worth knowing: a broken hook (exit 127 and an error on stderr) denies
    every call, with bash's error as the reason the model sees."""
    gemini_project.write_hooks(before_tool("no-such-hook-program"))
    session(gemini_bin, gemini_project, fake_gemini, marker_commands(1))
    assert_blocked(
        gemini_project, fake_gemini, 1, "bash: line 1: no-such-hook-program: command not found"
    )


def test_exit_1_with_plain_stdout_is_a_warning_and_the_call_runs(
    gemini_bin: Path, gemini_project: GeminiProject, fake_gemini: FakeGemini
) -> None:
    command = "echo 'careful now'; exit 1"
    gemini_project.write_hooks(before_tool(command))
    run = session(gemini_bin, gemini_project, fake_gemini, marker_commands(1))
    assert_ran(gemini_project, fake_gemini, 1)
    # The text became systemMessage "Warning: careful now": it goes to stderr, for the user,
    # not to the model nor into the -o json output.
    stderr = run.process.stderr
    print("stderr:", json.dumps(stderr))
    assert "Hook system message: Warning: careful now" in stderr
    assert failed_hook_warning(command) in stderr
    assert "careful now" not in json.dumps([r.body for r in fake_gemini.requests])
    assert "careful now" not in run.process.stdout


def test_exit_1_with_json_stdout_is_read_as_json(
    gemini_bin: Path, gemini_project: GeminiProject, fake_gemini: FakeGemini
) -> None:
    """JSON wins over the exit code: a deny printed by a hook that exits 1 still blocks."""
    gemini_project.write_hooks(
        before_tool(echo_json({"decision": "deny", "reason": "json-on-exit-1"}) + "; exit 1")
    )
    session(gemini_bin, gemini_project, fake_gemini, marker_commands(1))
    assert_blocked(gemini_project, fake_gemini, 1, "json-on-exit-1")


def test_exit_0_with_plain_stdout_allows(
    gemini_bin: Path, gemini_project: GeminiProject, fake_gemini: FakeGemini
) -> None:
    gemini_project.write_hooks(before_tool("echo 'all fine'"))
    run = session(gemini_bin, gemini_project, fake_gemini, marker_commands(1))
    assert_ran(gemini_project, fake_gemini, 1)
    assert "Hook system message: all fine" in run.process.stderr
    assert "[WARNING] Hook(s)" not in run.process.stderr


@pytest.mark.parametrize(
    ("stdout", "expect_reason"),
    [
        (json.dumps({"decision": "deny", "reason": "from-stdout"}), "from-stdout"),
        ("from-stdout as text", "from-stdout as text"),
        (json.dumps({"decision": "allow"}), None),
        (json.dumps({"systemMessage": "just a note"}), None),
    ],
    ids=["json-deny", "text", "json-allow", "json-without-decision"],
)
def test_on_exit_2_stdout_is_read_before_stderr(
    gemini_bin: Path,
    gemini_project: GeminiProject,
    fake_gemini: FakeGemini,
    stdout: str,
    expect_reason: str | None,
) -> None:
    """Exit 2 with both streams: stdout is what is read; stderr ("from-stderr") is ignored.
    When stdout is JSON without a blocking decision the call runs despite exit 2."""
    command = f"echo {shell_quote(stdout)}; echo from-stderr >&2; exit 2"
    gemini_project.write_hooks(before_tool(command))
    run = session(gemini_bin, gemini_project, fake_gemini, marker_commands(1))
    if expect_reason is None:
        assert_ran(gemini_project, fake_gemini, 1)
    else:
        assert_blocked(gemini_project, fake_gemini, 1, expect_reason)
    assert "from-stderr" not in json.dumps([r.body for r in fake_gemini.requests])
    assert failed_hook_warning(command) in run.process.stderr


def test_json_on_stderr_alone_is_read_too(
    gemini_bin: Path, gemini_project: GeminiProject, fake_gemini: FakeGemini
) -> None:
    """With an empty stdout, stderr is parsed the same way, JSON included (exit 0 here)."""
    gemini_project.write_hooks(
        before_tool(echo_json({"decision": "deny", "reason": "json-on-stderr"}, to_stderr=True))
    )
    session(gemini_bin, gemini_project, fake_gemini, marker_commands(1))
    assert_blocked(gemini_project, fake_gemini, 1, "json-on-stderr")


def test_system_message_goes_to_stderr_not_to_the_json_output(
    gemini_bin: Path, gemini_project: GeminiProject, fake_gemini: FakeGemini
) -> None:
    gemini_project.write_hooks(
        {
            **before_tool(echo_json({"systemMessage": "sys-msg-before-tool"})),
            "SessionStart": [{"hooks": [handler(echo_json({"systemMessage": "sys-msg-start"}))]}],
        }
    )
    run = session(gemini_bin, gemini_project, fake_gemini, marker_commands(1))
    assert markers(gemini_project) == ["marker-0.txt"]
    stderr = run.process.stderr
    print("stderr:", json.dumps(stderr))
    # BeforeTool: logged on stderr as "Hook system message: ..."; SessionStart: written to
    # stderr as is. Neither is in the -o json output, nor sent to the model.
    assert "Hook system message: sys-msg-before-tool" in stderr
    assert "sys-msg-start\n" in stderr
    assert "sys-msg" not in run.process.stdout
    assert "sys-msg" not in json.dumps([r.body for r in fake_gemini.requests])


def test_suppress_output_hides_the_system_message(
    gemini_bin: Path, gemini_project: GeminiProject, fake_gemini: FakeGemini
) -> None:
    gemini_project.write_hooks(
        before_tool(echo_json({"systemMessage": "sys-msg-hidden", "suppressOutput": True}))
    )
    run = session(gemini_bin, gemini_project, fake_gemini, marker_commands(1))
    assert markers(gemini_project) == ["marker-0.txt"]
    print("stderr:", json.dumps(run.process.stderr))
    assert "Hook system message: sys-msg-hidden" not in run.process.stderr


# --- other replies and their merging ------------------------------------------------------------


def test_continue_false_stops_the_whole_session(
    gemini_bin: Path, gemini_project: GeminiProject, fake_gemini: FakeGemini
) -> None:
    gemini_project.write_hooks(
        before_tool(echo_json({"continue": False, "stopReason": "stopped-by-hook"}))
    )
    run = session(gemini_bin, gemini_project, fake_gemini, marker_commands(2), done=False)
    assert markers(gemini_project) == []
    assert hook_runs(gemini_project) == 1  # the second call is never asked for
    # The session ends right there: the error never goes back to the model.
    assert len(fake_gemini.turn_requests()) == 1
    assert fake_gemini.function_responses() == []
    assert run.output is not None
    assert run.output["response"] == ""
    print("output without stats:", {k: v for k, v in run.output.items() if k != "stats"})
    print("stderr:", json.dumps(run.process.stderr))


def test_tool_input_replaces_the_arguments(
    gemini_bin: Path, gemini_project: GeminiProject, fake_gemini: FakeGemini
) -> None:
    rewrite = {"hookSpecificOutput": {"tool_input": {"command": "echo rewritten > rewritten.txt"}}}
    record = 'cat > "after-tool-$$.json"'
    gemini_project.write_hooks(
        {
            **before_tool(echo_json(rewrite)),
            "AfterTool": [
                {"matcher": SHELL_TOOL, "hooks": [{"type": "command", "command": record}]}
            ],
        }
    )
    session(gemini_bin, gemini_project, fake_gemini, marker_commands(1))
    assert markers(gemini_project) == []
    assert (gemini_project.path / "rewritten.txt").read_text() == "rewritten\n"
    (response,) = fake_gemini.function_responses()
    print("functionResponse after a rewrite:", json.dumps(response.response))
    assert response.text.endswith(
        "\n\n[System] Tool input parameters were modified by a hook before execution."
    )
    # The new input replaces the old one whole (the scripted "description" is gone), it is
    # not merged into it.
    (after,) = [json.loads(p.read_text()) for p in gemini_project.path.glob("after-tool-*.json")]
    assert after["tool_input"] == {"command": "echo rewritten > rewritten.txt"}


def test_hooks_run_in_parallel_and_every_reason_is_kept(
    gemini_bin: Path, gemini_project: GeminiProject, fake_gemini: FakeGemini
) -> None:
    gemini_project.write_hooks(
        before_tool(
            "sleep 1; " + echo_json({"decision": "deny", "reason": "first"}),
            "sleep 1; " + echo_json({"decision": "allow", "reason": "second-allows"}),
            "sleep 1; echo third >&2; exit 2",
        )
    )
    session(gemini_bin, gemini_project, fake_gemini, marker_commands(1))
    assert markers(gemini_project) == []
    (response,) = fake_gemini.function_responses()
    # Deny wins over allow; the reasons of all hooks (allow's too) are joined in config order.
    assert response.response == {"error": BLOCKED + "first\nsecond-allows\nthird"}
    assert hook_runs(gemini_project) == 3
    (latency,) = fake_gemini.call_latencies()
    assert latency is not None
    print(f"call with three 1 s hooks in parallel: {latency:.2f} s")
    assert latency < 2.5  # in sequence it would be over 3 s


def test_sequential_hooks_run_in_order_and_pass_tool_input_on(
    gemini_bin: Path, gemini_project: GeminiProject, fake_gemini: FakeGemini
) -> None:
    """``"sequential": true`` on a group: its hooks run one after the other, and a hook's
    ``tool_input`` is merged into the input the next one gets."""
    rewrite = {"hookSpecificOutput": {"tool_input": {"command": "echo seq > seq.txt"}}}
    group = {
        "matcher": SHELL_TOOL,
        "sequential": True,
        "hooks": [
            handler("sleep 1; " + echo_json(rewrite)),
            handler('sleep 1; cat > "second-$$.json"'),
        ],
    }
    gemini_project.write_hooks({"BeforeTool": [group]})
    session(gemini_bin, gemini_project, fake_gemini, marker_commands(1))
    (second,) = [json.loads(p.read_text()) for p in gemini_project.path.glob("second-*.json")]
    assert second["tool_input"] == {"command": "echo seq > seq.txt", "description": "scripted call"}
    assert (gemini_project.path / "seq.txt").read_text() == "seq\n"
    assert markers(gemini_project) == []
    (latency,) = fake_gemini.call_latencies()
    assert latency is not None
    print(f"call with two 1 s hooks in sequence: {latency:.2f} s")
    assert latency > 2


def test_after_tool_deny_hides_the_result_but_the_command_ran(
    gemini_bin: Path, gemini_project: GeminiProject, fake_gemini: FakeGemini
) -> None:
    deny = echo_json({"decision": "deny", "reason": "result-withheld"})
    gemini_project.write_hooks(
        {"AfterTool": [{"matcher": SHELL_TOOL, "hooks": [{"type": "command", "command": deny}]}]}
    )
    session(gemini_bin, gemini_project, fake_gemini, marker_commands(1))
    assert markers(gemini_project) == ["marker-0.txt"]
    # The model gets the bare reason as the error (the "Tool result blocked: " text Gemini CLI
    # builds is only its display).
    (response,) = fake_gemini.function_responses()
    assert response.response == {"error": "result-withheld"}


def test_before_agent_deny_blocks_the_prompt_before_any_model_turn(
    gemini_bin: Path, gemini_project: GeminiProject, fake_gemini: FakeGemini
) -> None:
    deny = echo_json({"decision": "deny", "reason": "prompt-refused"})
    gemini_project.write_hooks({"BeforeAgent": [{"hooks": [handler(deny)]}]})
    run = session(gemini_bin, gemini_project, fake_gemini, marker_commands(1), done=False)
    assert fake_gemini.turn_requests() == []
    assert hook_runs(gemini_project) == 1
    assert run.output is not None
    print("output without stats:", {k: v for k, v in run.output.items() if k != "stats"})
    assert run.output["response"] == ""
    assert run.output["warnings"] == ["Agent execution blocked: prompt-refused"]


def test_after_agent_block_sends_the_reason_back_as_a_new_prompt(
    gemini_bin: Path, gemini_project: GeminiProject, fake_gemini: FakeGemini
) -> None:
    """AfterAgent ``decision: block``: the turn goes on with the reason as the next user
    message; the hook then sees ``stop_hook_active: true`` (it lets go here)."""
    block = echo_json({"decision": "block", "reason": "one more thing"})
    body = f"grep -q '\"stop_hook_active\":false' && {block} || true"
    gemini_project.write_hooks({"AfterAgent": [{"hooks": [handler(body)]}]})
    run = session(gemini_bin, gemini_project, fake_gemini, [], done=False)
    assert hook_runs(gemini_project) == 2
    turns = fake_gemini.turn_requests()
    assert len(turns) == 2
    last = turns[-1].body["contents"][-1]
    assert last == {"role": "user", "parts": [{"text": "one more thing"}]}
    assert run.output is not None
    print("output without stats:", {k: v for k, v in run.output.items() if k != "stats"})
    assert run.output["warnings"] == ["Agent execution blocked: one more thing"]


def test_additional_context_after_tool_reaches_the_model_before_tool_does_not(
    gemini_bin: Path, gemini_project: GeminiProject, fake_gemini: FakeGemini
) -> None:
    def context(text: str) -> str:
        return echo_json({"hookSpecificOutput": {"additionalContext": text}})

    def group(text: str) -> list[dict[str, Any]]:
        return [{"matcher": SHELL_TOOL, "hooks": [{"type": "command", "command": context(text)}]}]

    gemini_project.write_hooks(
        {
            "BeforeTool": group("before-tool-ctx"),
            "AfterTool": group("after-tool-ctx <b>"),
            "BeforeAgent": [{"hooks": [{"type": "command", "command": context("agent-ctx")}]}],
            "SessionStart": [{"hooks": [{"type": "command", "command": context("start-ctx")}]}],
        }
    )
    session(gemini_bin, gemini_project, fake_gemini, marker_commands(1))
    (response,) = fake_gemini.function_responses()
    print("functionResponse with context:", json.dumps(response.response))
    # AfterTool: appended to the tool's output, wrapped, with < and > escaped.
    assert response.text.endswith("\n\n<hook_context>after-tool-ctx &lt;b&gt;</hook_context>")
    everything = json.dumps([r.body for r in fake_gemini.turn_requests()])
    assert "before-tool-ctx" not in everything
    # SessionStart and BeforeAgent: added to the prompt.
    first = fake_gemini.turn_requests()[0].body["contents"]
    prompt_parts = [p for c in first if c["role"] == "user" for p in c["parts"] if "text" in p]
    texts = [p["text"] for p in prompt_parts]
    print("prompt parts:", json.dumps(texts[1:]))
    assert "<hook_context>start-ctx</hook_context>\n\nRun the scripted commands." in texts
    assert "<hook_context>agent-ctx</hook_context>" in texts


# --- time limits ----------------------------------------------------------------------------------


def test_a_timed_out_hook_does_not_block(
    gemini_bin: Path, gemini_project: GeminiProject, fake_gemini: FakeGemini
) -> None:
    """``timeout`` is in milliseconds. A hook that runs over it is ended (SIGTERM) and its
    output ignored, even a deny it had already printed: the call runs."""
    deny = echo_json({"decision": "deny", "reason": "too-late"})
    gemini_project.write_hooks(before_tool(f"{deny}; exec sleep 20", timeout=500))
    run = session(gemini_bin, gemini_project, fake_gemini, marker_commands(1))
    assert_ran(gemini_project, fake_gemini, 1)
    (latency,) = fake_gemini.call_latencies()
    assert latency is not None
    print(f"call with a 500 ms hook timeout: {latency:.2f} s")
    assert 0.4 < latency < 5
    assert "[WARNING] Hook(s) [" in run.process.stderr


def test_a_hook_ignoring_sigterm_holds_the_call_until_it_ends(
    gemini_bin: Path, gemini_project: GeminiProject, fake_gemini: FakeGemini
) -> None:
    """On timeout Gemini CLI sends SIGTERM; its SIGKILL 5 s later never comes (it checks
    ``child.killed``, already true once SIGTERM was sent), so the call waits for the hook."""
    gemini_project.write_hooks(before_tool("trap '' TERM; sleep 7", timeout=300))
    session(gemini_bin, gemini_project, fake_gemini, marker_commands(1))
    assert_ran(gemini_project, fake_gemini, 1)
    (latency,) = fake_gemini.call_latencies()
    assert latency is not None
    print(f"call with a SIGTERM-ignoring hook (timeout 300 ms, sleep 7 s): {latency:.2f} s")
    assert latency > 6.5


# --- where hooks come from ------------------------------------------------------------------------


def test_user_level_hooks_run_and_merge_with_project_hooks(
    gemini_bin: Path, gemini_project: GeminiProject, fake_gemini: FakeGemini
) -> None:
    gemini_project.write_hooks(before_tool("echo project >> levels"))
    gemini_project.write_user_settings({"hooks": before_tool("echo user >> levels")})
    session(gemini_bin, gemini_project, fake_gemini, marker_commands(1))
    assert markers(gemini_project) == ["marker-0.txt"]
    assert sorted((gemini_project.path / "levels").read_text().split()) == ["project", "user"]


def startup_hooks() -> dict[str, Any]:
    """SessionStart and BeforeAgent hooks that only record that they ran."""
    return {event: [{"hooks": [handler("true")]}] for event in ("SessionStart", "BeforeAgent")}


def test_headless_in_an_untrusted_folder_refuses_to_start(
    gemini_bin: Path, gemini_project: GeminiProject, fake_gemini: FakeGemini
) -> None:
    """Without GEMINI_CLI_TRUST_WORKSPACE=true (or --skip-trust, or a trustedFolders.json
    rule) ``gemini -p`` exits 55 before any hook or model call."""
    gemini_project.write_hooks(startup_hooks())
    gemini_project.write_user_settings({"hooks": startup_hooks()})
    fake_gemini.script(marker_commands(1))
    run = run_gemini(
        gemini_bin,
        gemini_project.path,
        gemini_project.home,
        fake_gemini,
        timeout=90,
        env={"GEMINI_CLI_TRUST_WORKSPACE": ""},
    )
    assert run.process.returncode == 55, run.process.stderr[-2000:]
    assert "Gemini CLI is not running in a trusted directory." in run.process.stderr
    assert run.output is None
    assert fake_gemini.requests == []
    assert hook_runs(gemini_project) == 0


def test_in_an_untrusted_folder_no_settings_hook_runs_not_even_the_users(
    gemini_bin: Path, gemini_project: GeminiProject, fake_gemini: FakeGemini
) -> None:
    """With folder trust turned off in the user's settings and the folder explicitly
    untrusted, the session runs, but none of the hooks from settings files do: the project's
    settings are not read at all, and the user's hooks (merged under the same "project" source)
    are dropped with them. The shell tool is not even offered in that mode."""
    gemini_project.write_hooks(startup_hooks())
    gemini_project.write_user_settings(
        {"hooks": startup_hooks(), "security": {"folderTrust": {"enabled": False}}}
    )
    run = session(
        gemini_bin,
        gemini_project,
        fake_gemini,
        marker_commands(1),
        env={"GEMINI_CLI_TRUST_WORKSPACE": "false"},
    )
    assert hook_runs(gemini_project) == 0
    assert "Project hooks disabled because the folder is not trusted." in run.process.stderr
    assert fake_gemini.turn_requests() == []  # no request offered run_shell_command
    assert markers(gemini_project) == []


def test_hooks_config_disabled_by_name_and_enabled_false(
    gemini_bin: Path, gemini_project: GeminiProject, fake_gemini: FakeGemini
) -> None:
    deny = echo_json({"decision": "deny", "reason": "named-hook"})
    hooks = before_tool(deny, name="deny-hook")
    gemini_project.write_settings({"hooks": hooks, "hooksConfig": {"disabled": ["deny-hook"]}})
    session(gemini_bin, gemini_project, fake_gemini, marker_commands(1))
    assert markers(gemini_project) == ["marker-0.txt"]
    assert hook_runs(gemini_project) == 0

    # hooksConfig.enabled false in the project's own settings turns every hook off.
    for path in gemini_project.path.glob("marker-*.txt"):
        path.unlink()
    gemini_project.write_settings({"hooks": before_tool(deny), "hooksConfig": {"enabled": False}})
    session(gemini_bin, gemini_project, fake_gemini, marker_commands(1))
    assert markers(gemini_project) == ["marker-0.txt"]
    assert hook_runs(gemini_project) == 0


# --- what a hook gets ---------------------------------------------------------------------------

RECORDED_EVENTS = (
    "SessionStart",
    "BeforeAgent",
    "BeforeModel",
    "BeforeToolSelection",
    "AfterModel",
    "BeforeTool",
    "AfterTool",
    "AfterAgent",
    "SessionEnd",
)


def test_record_hook_stdin_and_environment_per_event(
    gemini_bin: Path, gemini_project: GeminiProject, fake_gemini: FakeGemini
) -> None:
    """Documentation more than a test: what each event's command hook gets on stdin, in its
    environment and as its working directory."""
    record = {
        "type": "command",
        "command": (
            'f=$(mktemp -p "$GEMINI_PROJECT_DIR" input-XXXXXX); cat > "$f"; env > "$f.env"; '
            'pwd > "$f.cwd"'
        ),
        "env": {"HOOK_EXTRA": "from-hook-config"},
    }
    tool_events = {"BeforeTool", "AfterTool"}
    gemini_project.write_hooks(
        {
            event: [
                {"matcher": SHELL_TOOL, "hooks": [record]}
                if event in tool_events
                else {"hooks": [record]}
            ]
            for event in RECORDED_EVENTS
        }
    )
    env = {"TRIOHOOKS_PROBE": "inherited", "PROBE_SECRET_TOKEN": "s3cret"}
    run = session(gemini_bin, gemini_project, fake_gemini, marker_commands(1), env=env)

    seen: dict[str, dict[str, Any]] = {}
    envs: dict[str, dict[str, str]] = {}
    cwds: dict[str, str] = {}
    files = sorted(gemini_project.path.glob("input-??????"), key=lambda p: p.stat().st_mtime_ns)
    for path in files:
        data = json.loads(path.read_text())
        event = data.get("hook_event_name", path.name)
        if event in seen:
            continue
        seen[event] = data
        lines = Path(f"{path}.env").read_text().splitlines()
        envs[event] = dict(line.split("=", 1) for line in lines if "=" in line)
        cwds[event] = Path(f"{path}.cwd").read_text().strip()
    for event, data in seen.items():
        shown = {k: v for k, v in data.items() if k not in ("llm_request", "llm_response")}
        print(f"{event}: keys {sorted(data)}")
        print(f"  {json.dumps(shown)[:600]}")
    hook_env = envs["BeforeTool"]
    print("GEMINI_*/CLAUDE_* in a hook's environment:")
    for name in sorted(k for k in hook_env if k.startswith(("GEMINI", "CLAUDE"))):
        print(f"  {name}={hook_env[name]}")

    assert set(RECORDED_EVENTS) <= set(seen), sorted(seen)
    session_id = run.output["session_id"] if run.output else None
    for event, data in seen.items():
        assert data["session_id"] == session_id
        assert Path(data["cwd"]) == gemini_project.path
        assert data["hook_event_name"] == event
        assert {"transcript_path", "timestamp"} <= set(data)
        assert Path(cwds[event]) == gemini_project.path
    assert seen["SessionStart"]["source"] == "startup"
    assert seen["SessionEnd"]["reason"] == "exit"
    assert seen["BeforeAgent"]["prompt"] == "Run the scripted commands."
    assert seen["AfterAgent"]["prompt_response"] == DONE_TEXT
    before = seen["BeforeTool"]
    assert before["tool_name"] == SHELL_TOOL
    assert before["tool_input"] == {
        "command": "echo marker-0 > marker-0.txt",
        "description": "scripted call",
    }
    assert "tool_response" in seen["AfterTool"]
    assert set(seen["AfterTool"]["tool_response"]) >= {"llmContent", "returnDisplay"}

    assert hook_env["GEMINI_PROJECT_DIR"] == str(gemini_project.path)
    assert hook_env["GEMINI_CWD"] == str(gemini_project.path)
    assert hook_env["CLAUDE_PROJECT_DIR"] == str(gemini_project.path)
    assert hook_env["GEMINI_SESSION_ID"] == session_id
    assert "GEMINI_PLANS_DIR" in hook_env
    assert hook_env["HOOK_EXTRA"] == "from-hook-config"
    # The CLI's own environment is inherited whole (redaction is off by default).
    assert hook_env["TRIOHOOKS_PROBE"] == "inherited"
    assert hook_env["PROBE_SECRET_TOKEN"] == "s3cret"
    assert hook_env["GEMINI_API_KEY"] == "fake-gemini-key"


def test_decision_ask_hangs_a_headless_session(
    gemini_bin: Path, gemini_project: GeminiProject, fake_gemini: FakeGemini
) -> None:
    """``decision: "ask"`` forces a confirmation even under ``--yolo``; ``-p`` has no one to
    ask and waits for good (killed here after 10 s; a session takes ~2 s)."""
    gemini_project.write_hooks(
        before_tool(echo_json({"decision": "ask", "systemMessage": "please confirm"}))
    )
    fake_gemini.script(marker_commands(1))
    with pytest.raises(subprocess.TimeoutExpired) as caught:
        run_gemini(gemini_bin, gemini_project.path, gemini_project.home, fake_gemini, timeout=10)
    stderr: object = caught.value.stderr  # typeshed says bytes; run_bounded uses text
    assert isinstance(stderr, str)
    assert "Hook system message: please confirm" in stderr
    assert hook_runs(gemini_project) == 1
    assert markers(gemini_project) == []
    assert len(fake_gemini.turn_requests()) == 1
