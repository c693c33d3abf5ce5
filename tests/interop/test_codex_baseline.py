"""Codex CLI's own hook behaviour (0.169.1), with plain Codex hooks files (no triohooks).

These prove the harness (the real CLI, offline, scripted by the fake Responses API) and pin
down the baseline the project's Codex adapter builds on: how a hook is recorded as reviewed
(:mod:`triohooks.agents.codex_trust`, checked against Codex's own ``hooks/list``), what blocks
a call, what the model then sees, and what is dropped silently. Each session makes one or two
tool calls and takes about half a second; ``pytest -s`` prints what Codex sent back.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any

import pytest

from tests.interop.codex import CodexProject, CodexRun, codex_env, codex_hooks_list, run_codex
from tests.interop.fake_openai import DONE_TEXT, SHELL_TOOL, FakeOpenAI, item_text
from triohooks.agents.codex_trust import (
    hook_state_key,
    hook_states,
    hook_states_override,
    hook_states_toml,
    trusted_hash,
)

pytestmark = pytest.mark.interop

DENY_JSON = {
    "hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "denied-by-json",
    }
}
#: What Codex 0.169.1 sends the model in place of a blocked command's output.
BLOCKED = "Command blocked by PreToolUse hook: {reason}. Command: {command}"


def marker_commands(n: int) -> list[str]:
    return [f"echo marker-{k} > marker-{k}.txt" for k in range(n)]


def markers(project: CodexProject) -> list[str]:
    return sorted(p.name for p in project.path.glob("marker-*.txt"))


def shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def echo_json(reply: Any, exit_code: int = 0) -> str:
    return f"echo {shell_quote(json.dumps(reply))}; exit {exit_code}"


def pre_tool_use(command: str, **extra: Any) -> dict[str, Any]:
    """Hooks with one PreToolUse command hook on the shell tool."""
    return {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": command, **extra}]}
        ]
    }


def session(
    codex_bin: Path,
    project: CodexProject,
    fake: FakeOpenAI,
    commands: list[str],
    *,
    args: tuple[str, ...] = (),
) -> CodexRun:
    """One ``codex exec`` that must finish normally with the fake's closing text."""
    fake.script(commands)
    started = time.monotonic()
    run = run_codex(codex_bin, project.path, project.home, fake, timeout=60, args=args)
    print(f"codex exec: {time.monotonic() - started:.2f} s wall")
    assert run.completed, (run.process.stdout[-2000:], run.process.stderr[-2000:])
    assert run.agent_messages[-1:] == [DONE_TEXT], run.events
    return run


def reviewed(project: CodexProject, hooks: dict[str, Any]) -> Path:
    """Write ``hooks`` to ``$HOME/.codex/hooks.json`` and record them reviewed."""
    source = project.write_hooks(hooks)
    project.review(source, hooks)
    return source


def noise_free_stderr(run: CodexRun) -> str:
    skip = ("could not create PATH aliases", "Reading additional input from stdin")
    return "\n".join(
        line for line in run.process.stderr.splitlines() if not any(s in line for s in skip)
    )


# --- the harness ---------------------------------------------------------------------------------


def test_no_hooks_every_scripted_call_runs(
    codex_bin: Path, codex_project: CodexProject, fake_openai: FakeOpenAI
) -> None:
    run = session(codex_bin, codex_project, fake_openai, marker_commands(2))
    assert markers(codex_project) == ["marker-0.txt", "marker-1.txt"]
    tools = {str(t.get("name")): t for t in fake_openai.offered_tools()}
    assert tools[SHELL_TOOL]["parameters"]["required"] == ["cmd"]
    outputs = fake_openai.tool_outputs()
    assert [o.call_id for o in outputs] == fake_openai.call_ids
    assert all("Process exited with code 0" in o.text for o in outputs)
    assert len(fake_openai.turn_requests()) == 3  # two calls and the closing turn
    assert [i["command"] for i in run.items("command_execution")] == [
        f"/bin/bash -lc '{c}'" for c in marker_commands(2)
    ]
    assert all(latency is not None for latency in fake_openai.call_latencies())


# --- review state: our key and hash against Codex's own ---------------------------------------------

SHAPES: list[dict[str, Any]] = [
    {"type": "command", "command": "echo plain"},
    {"type": "command", "command": "echo t", "timeout": 5, "async": True},
    {"type": "command", "command": "echo s", "statusMessage": "checking", "timeout": 0},
    {"type": "command", "command": "echo l", "additionalContextLimit": 100, "once": True},
    {"type": "command", "command": "echo w", "commandWindows": "echo win"},
    {"type": "command", "command": "printf '%s' \"é ✓ 😀\" \\\n| cat\t# <&>"},
    {"type": "prompt", "prompt": "skipped by Codex, but counted in the indices"},
    {"type": "mcp_tool", "server": "srv", "tool": "t", "input": {"a": 1, "b": [1.5, "x"]}},
]


def test_our_state_keys_and_hashes_are_codex_own(
    codex_bin: Path, codex_project: CodexProject
) -> None:
    """Every hook of the three places Codex reads (``~/.codex/hooks.json``, ``[hooks]`` in
    ``~/.codex/config.toml``, a trusted project's ``.codex/hooks.json``): the key and hash
    ``codex_trust`` computes are those Codex reports, and once recorded Codex calls the hook
    trusted (the state of a project's hooks lives in the user's config.toml)."""
    user_hooks = {
        "PreToolUse": [{"matcher": "Bash", "hooks": SHAPES}, {"hooks": SHAPES[:1]}],
        "PostToolUse": [{"matcher": "", "hooks": SHAPES[:2]}],
        "Stop": [{"matcher": "ignored", "hooks": SHAPES[2:4]}],
        "SessionEnd": [{"matcher": "kept", "hooks": [{**SHAPES[0], "timeout": 10}]}],
        "UserPromptSubmit": [{"hooks": SHAPES[3:4]}],
    }
    toml_hooks = {"SessionStart": [{"matcher": "startup", "hooks": [SHAPES[1]]}]}
    project_hooks = {"PreToolUse": [{"matcher": "*", "hooks": SHAPES[:1]}]}
    user_source = codex_project.write_hooks(user_hooks)
    project_source = codex_project.write_hooks(project_hooks, project=True)
    codex_project.append_config(
        '[[hooks.SessionStart]]\nmatcher = "startup"\n[[hooks.SessionStart.hooks]]\n'
        'type = "command"\ncommand = "echo t"\ntimeout = 5\nasync = true'
    )
    codex_project.trust_project()
    expected = {
        **hook_states(user_source, user_hooks),
        **hook_states(codex_project.config_path, toml_hooks),
        **hook_states(project_source, project_hooks),
    }

    listed = codex_hooks_list(codex_bin, codex_project.path, codex_project.home)
    assert {h["key"]: h["currentHash"] for h in listed["hooks"]} == expected
    assert {h["trustStatus"] for h in listed["hooks"]} == {"untrusted"}
    assert not [w for w in listed["warnings"] if "failed" in w or "invalid" in w], listed

    codex_project.append_config(hook_states_toml(expected))
    listed = codex_hooks_list(codex_bin, codex_project.path, codex_project.home)
    assert {h["key"]: h["trustStatus"] for h in listed["hooks"]} == dict.fromkeys(
        expected, "trusted"
    )


# --- (a) a reviewed PreToolUse hook runs; a JSON deny blocks ----------------------------------------


def test_reviewed_pretooluse_json_deny_blocks_and_reason_reaches_the_model(
    codex_bin: Path, codex_project: CodexProject, fake_openai: FakeOpenAI
) -> None:
    handler = {"type": "command", "command": echo_json(DENY_JSON)}
    hooks = {"PreToolUse": [{"matcher": "Bash", "hooks": [handler]}]}
    source = codex_project.write_hooks(hooks)
    key = hook_state_key(source, "PreToolUse", 0, 0)
    codex_project.append_config(
        hook_states_toml({key: trusted_hash(handler, event="PreToolUse", matcher="Bash")})
    )
    commands = marker_commands(1)
    run = session(codex_bin, codex_project, fake_openai, commands)
    assert markers(codex_project) == []
    (output,) = fake_openai.tool_outputs()
    assert output.text == BLOCKED.format(reason="denied-by-json", command=commands[0])
    assert run.items("command_execution") == []  # a blocked call leaves no item in --json
    print("function_call_output after JSON deny:", json.dumps(output.text))


def test_review_state_given_with_c_for_one_run(
    codex_bin: Path, codex_project: CodexProject, fake_openai: FakeOpenAI
) -> None:
    """The same review, passed as ``-c hooks.state={...}`` instead of written to config.toml."""
    hooks = pre_tool_use(echo_json(DENY_JSON))
    source = codex_project.write_hooks(hooks)
    override = hook_states_override(hook_states(source, hooks))
    session(codex_bin, codex_project, fake_openai, marker_commands(1), args=("-c", override))
    assert markers(codex_project) == []
    assert "denied-by-json" in fake_openai.tool_outputs()[0].text


# --- (b) the same hook, not reviewed (or changed since), is skipped without a word -------------------


@pytest.mark.parametrize("state", ["none", "stale hash", "enabled only"])
def test_unreviewed_hook_is_skipped_silently(
    codex_bin: Path, codex_project: CodexProject, fake_openai: FakeOpenAI, state: str
) -> None:
    ran = codex_project.path / "hook-ran"
    handler = {"type": "command", "command": f"touch {ran}; " + echo_json(DENY_JSON)}
    hooks = {"PreToolUse": [{"matcher": "Bash", "hooks": [handler]}]}
    source = codex_project.write_hooks(hooks)
    key = hook_state_key(source, "PreToolUse", 0, 0)
    if state == "stale hash":  # reviewed, then edited: Codex calls it "modified"
        edited = {**handler, "command": "true"}
        stale = trusted_hash(edited, event="PreToolUse", matcher="Bash")
        codex_project.append_config(hook_states_toml({key: stale}))
    elif state == "enabled only":
        codex_project.append_config(f"[hooks.state.{json.dumps(key)}]\nenabled = true")
    run = session(codex_bin, codex_project, fake_openai, marker_commands(1))
    assert markers(codex_project) == ["marker-0.txt"]
    assert not ran.exists()
    assert "hook" not in run.process.stdout.lower()
    assert "hook" not in noise_free_stderr(run).lower()


def test_bypass_flag_runs_unreviewed_hooks_and_says_so(
    codex_bin: Path, codex_project: CodexProject, fake_openai: FakeOpenAI
) -> None:
    codex_project.write_hooks(pre_tool_use(echo_json(DENY_JSON)))
    run = session(
        codex_bin,
        codex_project,
        fake_openai,
        marker_commands(1),
        args=("--dangerously-bypass-hook-trust",),
    )
    assert markers(codex_project) == []
    warnings = [i["message"] for i in run.items("error")]
    assert any("--dangerously-bypass-hook-trust" in w for w in warnings), warnings


# --- (c) exit codes ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hook", "blocks"),
    [
        ("echo nope-on-stderr >&2; exit 2", True),
        ("exit 2", False),  # "exited with code 2 but did not write a blocking reason"
        (echo_json(DENY_JSON, exit_code=2), False),  # stdout is not read on exit 2
        ("echo three >&2; exit 3", False),
        ("echo one >&2; exit 1", False),
        ("echo plain text on stdout", False),
        ("echo '{not json'", False),
    ],
    ids=["exit2-stderr", "exit2-empty", "exit2-json-stdout", "exit3", "exit1", "plain", "badjson"],
)
def test_pretooluse_exit_codes(
    codex_bin: Path,
    codex_project: CodexProject,
    fake_openai: FakeOpenAI,
    hook: str,
    blocks: bool,
) -> None:
    reviewed(codex_project, pre_tool_use(hook))
    commands = marker_commands(1)
    run = session(codex_bin, codex_project, fake_openai, commands)
    (output,) = fake_openai.tool_outputs()
    if blocks:
        assert markers(codex_project) == []
        assert output.text == BLOCKED.format(reason="nope-on-stderr", command=commands[0])
    else:
        assert markers(codex_project) == ["marker-0.txt"]
        assert "Process exited with code 0" in output.text
        # A failed hook is not reported in --json, and not to the model.
        assert "hook" not in run.process.stdout.lower()
        assert fake_openai.context_after(0) == ""


# --- (d) systemMessage -------------------------------------------------------------------------------


def test_system_message_is_not_in_json_output_nor_sent_to_the_model(
    codex_bin: Path, codex_project: CodexProject, fake_openai: FakeOpenAI
) -> None:
    """A ``systemMessage`` only becomes a ``warning`` entry of the hook run (shown by the TUI
    and in app-server ``hook/completed`` notifications): ``codex exec`` prints it nowhere."""
    reviewed(codex_project, pre_tool_use(echo_json({"systemMessage": "sysmsg-marker"})))
    run = session(codex_bin, codex_project, fake_openai, marker_commands(1))
    assert markers(codex_project) == ["marker-0.txt"]
    assert "sysmsg-marker" not in run.process.stdout
    assert "sysmsg-marker" not in run.process.stderr
    assert "sysmsg-marker" not in json.dumps([r.body for r in fake_openai.requests])


# --- where the rest goes ---------------------------------------------------------------------------


def test_additional_context_and_post_tool_use_block(
    codex_bin: Path, codex_project: CodexProject, fake_openai: FakeOpenAI
) -> None:
    """PreToolUse ``additionalContext`` is a developer message *before* the call's output;
    PostToolUse ``decision: block`` replaces the output with its reason (the command did run);
    PostToolUse ``additionalContext`` is a developer message too (after the output when the
    hook does not block, before it when it does)."""

    def reply(event: str, **fields: Any) -> dict[str, Any]:
        return {"hookEventName": event, **fields}

    hooks = {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [
                    {
                        "type": "command",
                        "command": echo_json(
                            {"hookSpecificOutput": reply("PreToolUse", additionalContext="pre-ctx")}
                        ),
                    }
                ],
            }
        ],
        "PostToolUse": [
            {
                "matcher": "Bash",
                "hooks": [
                    {
                        "type": "command",
                        "command": echo_json(
                            {
                                "decision": "block",
                                "reason": "post-reason",
                                "hookSpecificOutput": reply(
                                    "PostToolUse", additionalContext="post-ctx"
                                ),
                            }
                        ),
                    }
                ],
            }
        ],
    }
    reviewed(codex_project, hooks)
    session(codex_bin, codex_project, fake_openai, ["echo hi-out > marker-0.txt"])
    assert markers(codex_project) == ["marker-0.txt"]
    (output,) = fake_openai.tool_outputs()
    assert output.text == "post-reason"
    roles = [(i.get("type"), i.get("role"), item_text(i)) for i in fake_openai.items_after(0)]
    print("items after the call:", roles)
    # Measured: with the block, the PostToolUse context too comes before the (replaced) output.
    assert roles == [
        ("message", "developer", "pre-ctx"),
        ("message", "developer", "post-ctx"),
        ("function_call_output", None, "post-reason"),
    ]


def test_stop_block_reason_becomes_the_next_user_prompt(
    codex_bin: Path, codex_project: CodexProject, fake_openai: FakeOpenAI
) -> None:
    once = f"test -e {codex_project.path}/stopped-once && exit 0; touch {codex_project.path}/stopped-once; "
    hook = once + echo_json({"decision": "block", "reason": "keep-going"})
    reviewed(codex_project, {"Stop": [{"hooks": [{"type": "command", "command": hook}]}]})
    run = session(codex_bin, codex_project, fake_openai, [])
    assert run.agent_messages == [DONE_TEXT, DONE_TEXT]
    last = fake_openai.responses_requests[-1].body["input"]
    prompts = [item_text(i) for i in last if i.get("role") == "user"]
    assert prompts[-1].startswith("<hook_prompt hook_run_id=")
    assert prompts[-1].endswith(">keep-going</hook_prompt>")


# --- what a hook gets -------------------------------------------------------------------------------


def test_hook_input_environment_and_cwd(
    codex_bin: Path, codex_project: CodexProject, fake_openai: FakeOpenAI
) -> None:
    """Documentation more than a test: PreToolUse's stdin, and that Codex adds no variable of
    its own to a hook's environment (the ``CODEX_MANAGED_*`` ones come from the npm wrapper)."""
    out = codex_project.path / "seen"
    out.mkdir()
    record = f"cat > {out}/input.json; env > {out}/env.txt; pwd > {out}/cwd.txt"
    reviewed(codex_project, pre_tool_use(record))
    commands = marker_commands(1)
    session(codex_bin, codex_project, fake_openai, commands)
    seen = json.loads((out / "input.json").read_text())
    print("PreToolUse input:", json.dumps(seen))
    assert seen["hook_event_name"] == "PreToolUse"
    assert seen["tool_name"] == "Bash"
    assert seen["tool_input"] == {"command": commands[0]}
    assert seen["tool_use_id"] == fake_openai.call_ids[0]
    assert seen["cwd"] == str(codex_project.path)
    assert set(seen) == {
        "session_id",
        "turn_id",
        "transcript_path",
        "cwd",
        "hook_event_name",
        "model",
        "permission_mode",
        "tool_name",
        "tool_input",
        "tool_use_id",
    }
    assert (out / "cwd.txt").read_text().strip() == str(codex_project.path)
    names = {line.split("=", 1)[0] for line in (out / "env.txt").read_text().splitlines()}
    given = codex_env(fake_openai.url, codex_project.home)
    # What the hook has beyond the session's environment: the npm wrapper's two variables,
    # and what bash itself sets.
    assert names - set(given) <= {
        "CODEX_MANAGED_BY_NPM",
        "CODEX_MANAGED_PACKAGE_ROOT",
        "PWD",
        "OLDPWD",
        "SHLVL",
        "_",
    }


# --- timing ------------------------------------------------------------------------------------------

CALLS = 8


def _median_after_first(latencies: list[float | None]) -> float:
    later = [x for x in latencies[1:] if x is not None]
    assert len(later) == len(latencies) - 1, latencies
    return statistics.median(later)


def test_noop_pretooluse_hook_cost_per_call(
    codex_bin: Path, codex_project: CodexProject, fake_openai: FakeOpenAI
) -> None:
    """Per-call wall time (the fake's view: its function_call sent -> the output back), median
    of calls 2..8, without hooks and with a reviewed no-op ``exit 0`` PreToolUse hook."""
    session(codex_bin, codex_project, fake_openai, marker_commands(CALLS))
    bare = _median_after_first(fake_openai.call_latencies())
    reviewed(codex_project, pre_tool_use("exit 0"))
    session(codex_bin, codex_project, fake_openai, marker_commands(CALLS))
    hooked = _median_after_first(fake_openai.call_latencies())
    print(
        f"per-call median, calls 2..{CALLS}: no hook {bare * 1000:.0f} ms, "
        f"no-op PreToolUse hook {hooked * 1000:.0f} ms (+{(hooked - bare) * 1000:.0f} ms)"
    )
    assert hooked < bare + 1.0
