"""The gemini and codex dialects, from their documented contracts (summed up in ``docs/agents.md``):
their settings files, matchers, timeout units, exit codes and output formats, with real bash
hooks through a real engine. (Their CLIs need a model service; these are contract tests.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from triohooks import HookEngine
from triohooks.agents.config import load_agent_table

pytestmark = pytest.mark.slow


class Setup:
    def __init__(self, root: Path, agent: str) -> None:
        self.agent = agent
        self.root = root
        self.home = root / "home"
        self.project = root / "proj"
        self.g = root / "g"
        marker = {"gemini": ".gemini", "codex": ".codex"}[agent]
        for d in (self.home / marker, self.project / marker, self.g):
            d.mkdir(parents=True)
        self.marker = marker

    def write(self, doc: dict[str, Any], *, level: str = "user") -> Path:
        base = self.home if level == "user" else self.project
        name = "settings.json" if self.agent == "gemini" else "hooks.json"
        path = base / self.marker / name
        path.write_text(json.dumps(doc))
        return path

    def body(self, event: str, **fields: Any) -> bytes:
        base = {
            "session_id": "sess-1",
            "transcript_path": "",
            "cwd": str(self.project),
            "hook_event_name": event,
            "timestamp": "2026-12-03T00:00:00Z",
        }
        return json.dumps({**base, **fields}).encode()

    async def ask(self, body: bytes, **kw: Any) -> Any:
        with trio.fail_after(20):
            async with HookEngine.open(
                workspace=self.project, config_dir=self.g, state_dir=self.root / "state", **kw
            ) as engine:
                return await engine.agent_hook(self.agent, body)


@pytest.fixture
def gemini(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Setup:
    s = Setup(tmp_path, "gemini")
    monkeypatch.setenv("HOME", str(s.home))
    return s


@pytest.fixture
def codex(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Setup:
    s = Setup(tmp_path, "codex")
    monkeypatch.setenv("HOME", str(s.home))
    return s


def hook(command: str, **extra: Any) -> dict[str, Any]:
    return {"type": "command", "command": command, **extra}


def shell(command: str) -> dict[str, Any]:
    return {"tool_name": "run_shell_command", "tool_input": {"command": command}}


# -- Gemini CLI ---------------------------------------------------------------------------------


async def test_gemini_exit_2_denies_in_geminis_format(gemini: Setup) -> None:
    gemini.write(
        {
            "hooks": {
                "BeforeTool": [{"matcher": "run_shell.*", "hooks": [hook("echo nope >&2; exit 2")]}]
            }
        }
    )
    result = await gemini.ask(gemini.body("BeforeTool", **shell("git push")))
    assert result.answer.output == {"decision": "deny", "reason": "nope"}


@pytest.mark.parametrize(
    ("script", "reason", "message"),
    [
        # Gemini reads `stdout.trim() || stderr.trim()` whatever the exit code (hookRunner.ts):
        ("echo not json; exit 1", None, "Warning: not json"),  # exit 1, text: allow + warning
        ("echo fyi", None, "fyi"),  # exit 0, text: a system message
        ("exit 3", None, None),  # no output at all: no decision
        ("exit 2", None, None),
        ("echo why >&2; exit 3", "why", None),  # any other exit with text denies
        ("echo plain; echo err >&2; exit 2", "plain", None),  # stdout first, even on exit 2
        ("""echo '{"decision":"deny","reason":"json says no"}'; exit 1""", "json says no", None),
        ("""echo '{"decision":"allow"}'; echo no >&2; exit 2""", None, None),  # JSON wins
        ("""echo '{"decision":"deny","reason":"on stderr"}' >&2""", "on stderr", None),
    ],
)
async def test_gemini_reads_a_hooks_end_as_gemini_does(
    gemini: Setup, script: str, reason: str | None, message: str | None
) -> None:
    gemini.write({"hooks": {"BeforeTool": [{"hooks": [hook(script)]}]}})
    result = await gemini.ask(gemini.body("BeforeTool", **shell("ls")))
    assert result.answer.blocked is (reason is not None)
    assert result.answer.output.get("reason") == reason
    assert result.answer.output.get("systemMessage") == message


async def test_gemini_timeouts_are_milliseconds(gemini: Setup) -> None:
    gemini.write({"hooks": {"BeforeTool": [{"hooks": [hook("sleep 5", timeout=300)]}]}})
    table = load_agent_table(
        "gemini", project=gemini.project, home=gemini.home, config_dir=gemini.g
    )
    assert table.hooks[0].timeout_s == pytest.approx(0.3)
    with trio.fail_after(10):
        start = trio.current_time()
        result = await gemini.ask(gemini.body("BeforeTool", **shell("ls")))
        assert trio.current_time() - start < 3
    assert [r.status for r in result.runs] == ["error"]  # a timeout is a non-blocking failure


async def test_gemini_tool_input_replaces_the_arguments_and_context_is_kept(
    gemini: Setup,
) -> None:
    reply = {
        "hookSpecificOutput": {"tool_input": {"command": "ls -la"}, "additionalContext": "ctx"}
    }
    gemini.write({"hooks": {"BeforeTool": [{"hooks": [hook(f"echo '{json.dumps(reply)}'")]}]}})
    out = (await gemini.ask(gemini.body("BeforeTool", **shell("ls")))).answer.output
    assert out["hookSpecificOutput"]["tool_input"] == {"command": "ls -la"}
    assert out["hookSpecificOutput"]["additionalContext"] == "ctx"


async def test_gemini_environment_and_disabled_hooks(gemini: Setup) -> None:
    gemini.write(
        {
            "hooks": {
                "BeforeAgent": [
                    {
                        "hooks": [
                            hook("env > seen.env", name="record"),
                            hook("touch skipped", name="off"),
                            hook('echo "$GREETING" > greeting', env={"GREETING": "hello"}),
                        ]
                    }
                ]
            },
            "hooksConfig": {"disabled": ["off"]},
        }
    )
    await gemini.ask(gemini.body("BeforeAgent", prompt="hi"))
    env = dict(
        line.split("=", 1)
        for line in (gemini.project / "seen.env").read_text().splitlines()
        if "=" in line
    )
    assert env["GEMINI_PROJECT_DIR"] == env["CLAUDE_PROJECT_DIR"] == str(gemini.project)
    assert env["GEMINI_SESSION_ID"] == "sess-1"
    assert not (gemini.project / "skipped").exists()
    assert (gemini.project / "greeting").read_text() == "hello\n"


async def test_gemini_project_settings_need_trust(gemini: Setup) -> None:
    gemini.write(
        {"hooks": {"BeforeTool": [{"hooks": [hook("echo p >&2; exit 2")]}]}}, level="project"
    )
    # Held back, never silent: Gemini CLI cannot ask (a -p session hangs), so the call the
    # project hook would have judged is denied, saying why and how to trust it.
    held = (await gemini.ask(gemini.body("BeforeTool", **shell("ls")))).answer
    assert held.blocked and held.output["decision"] == "deny"
    assert "not trusted yet" in held.reason and "triohooks gemini trust" in held.reason
    assert (await gemini.ask(gemini.body("BeforeTool", **shell("ls")), trust=True)).answer.blocked


async def test_gemini_after_agent_block_and_unsupported_types(gemini: Setup) -> None:
    gemini.write(
        {
            "hooks": {
                "AfterAgent": [
                    {"hooks": [hook("""echo '{"decision":"block","reason":"again"}'""")]}
                ],
                "BeforeTool": [{"hooks": [{"type": "http", "url": "http://127.0.0.1:9/"}]}],
            }
        }
    )
    out = (await gemini.ask(gemini.body("AfterAgent"))).answer.output
    assert out == {"decision": "block", "reason": "again"}
    result = await gemini.ask(gemini.body("BeforeTool", **shell("ls")))
    assert any("not supported" in w for w in result.answer.warnings)


# -- Codex CLI ----------------------------------------------------------------------------------


async def test_codex_reads_claude_shaped_hooks_json_and_denies(codex: Setup) -> None:
    codex.write(
        {"hooks": {"PreToolUse": [{"matcher": "shell", "hooks": [hook("echo no >&2; exit 2")]}]}}
    )
    body = codex.body(
        "PreToolUse",
        tool_name="shell",
        tool_input={"command": ["git", "push"]},
        model="gpt-x",
        turn_id="t1",
    )
    out = (await codex.ask(body)).answer.output
    assert out["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert out["hookSpecificOutput"]["permissionDecisionReason"] == "no"


async def test_codex_ask_becomes_deny(codex: Setup) -> None:
    reply = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "ask",
            "permissionDecisionReason": "sure?",
        }
    }
    codex.write({"hooks": {"PreToolUse": [{"hooks": [hook(f"echo '{json.dumps(reply)}'")]}]}})
    specific = (
        await codex.ask(codex.body("PreToolUse", tool_name="shell", tool_input={}))
    ).answer.output["hookSpecificOutput"]
    assert specific["permissionDecision"] == "deny"
    assert "Codex cannot ask" in specific["permissionDecisionReason"]


async def test_codex_config_toml_hooks_and_command_only(codex: Setup) -> None:
    (codex.home / ".codex" / "config.toml").write_text(
        'model = "x"\n[[hooks.Stop]]\nhooks = [{ type = "command", command = "echo \'{\\"decision\\":\\"block\\",\\"reason\\":\\"keep going\\"}\'" }]\n'
    )
    codex.write({"hooks": {"Stop": [{"hooks": [{"type": "prompt", "prompt": "ok?"}]}]}})
    table = load_agent_table("codex", project=codex.project, home=codex.home, config_dir=codex.g)
    assert [h.type for h in table.hooks] == ["prompt", "command"]
    assert not table.hooks[0].supported
    out = (await codex.ask(codex.body("Stop", stop_hook_active=False))).answer.output
    assert out == {"decision": "block", "reason": "keep going"}


@pytest.mark.parametrize(
    ("script", "blocked"),
    [
        ("echo no >&2; exit 2", True),
        ("exit 2", False),  # "exited with code 2 but did not write a blocking reason": proceeds
        ("exit 3", False),
        ("echo loud >&2; exit 3", False),
    ],
)
async def test_codex_reads_exit_codes_as_codex_does(
    codex: Setup, script: str, blocked: bool
) -> None:
    codex.write({"hooks": {"PreToolUse": [{"hooks": [hook(script)]}]}})
    result = await codex.ask(codex.body("PreToolUse", tool_name="Bash", tool_input={}))
    assert result.answer.blocked is blocked
    if not blocked:
        assert result.answer.warnings  # a failed hook, said


async def test_a_fail_closed_codex_hook_that_says_nothing_on_exit_2_blocks(codex: Setup) -> None:
    codex.write({"hooks": {"PreToolUse": [{"hooks": [hook("exit 2", failClosed=True)]}]}})
    result = await codex.ask(codex.body("PreToolUse", tool_name="Bash", tool_input={}))
    assert result.answer.blocked and "no blocking reason" in (result.answer.reason or "")


def _reply(**specific: Any) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse", **specific}}


@pytest.mark.parametrize(
    ("replies", "expected"),
    [
        # Codex fails a deny without a reason (and lets the call run): one is always given.
        ([_reply(permissionDecision="deny")], {"permissionDecision": "deny"}),
        # An allow alone is a failed hook to Codex: not sent.
        ([_reply(permissionDecision="allow")], {}),
        # updatedInput is ignored without allow: allow is sent with it.
        (
            [_reply(updatedInput={"command": "ls -la"})],
            {"permissionDecision": "allow", "updatedInput": {"command": "ls -la"}},
        ),
        # continue:false makes Codex fail the whole reply on PreToolUse: the deny must survive.
        (
            [{"continue": False, "stopReason": "stop"}, _reply(permissionDecision="deny")],
            {"permissionDecision": "deny"},
        ),
    ],
)
async def test_the_answer_is_one_codex_can_read(
    codex: Setup, replies: list[dict[str, Any]], expected: dict[str, Any]
) -> None:
    hooks = [hook(f"echo '{json.dumps(r)}'") for r in replies]
    codex.write({"hooks": {"PreToolUse": [{"hooks": hooks}]}})
    result = await codex.ask(codex.body("PreToolUse", tool_name="Bash", tool_input={}))
    out = result.answer.output
    assert "continue" not in out and "stopReason" not in out
    specific = {k: v for k, v in out.get("hookSpecificOutput", {}).items() if k != "hookEventName"}
    reason = specific.pop("permissionDecisionReason", None)
    assert specific == expected
    if expected.get("permissionDecision") == "deny":
        assert reason  # never empty


@pytest.mark.parametrize(
    ("matcher", "tool", "hit"),
    [("Bash", "Bash", True), ("Ba", "Bash", False), ("B-sh", "B-sh", True), ("a-h", "Bash", False)],
)
def test_codex_matchers_are_exact_only_for_its_own_characters(
    matcher: str, tool: str, hit: bool
) -> None:
    from triohooks.agents.config import compile_matcher

    assert compile_matcher("codex", matcher).matches(tool) is hit


@pytest.mark.parametrize(("event", "decision"), [("BeforeTool", "deny"), ("BeforeAgent", "block")])
def test_our_own_failure_is_a_gemini_deny_that_says_why(event: str, decision: str) -> None:
    """Gemini CLI shows ``reason``: it says what failed, never only "blocked by a hook"."""
    from triohooks.agents.merge import internal_error_answer

    answer = internal_error_answer("gemini", event, "serve stopped answering")
    assert answer.output["decision"] == decision
    assert answer.output["reason"] == (
        f"triohooks internal error while handling {event}: serve stopped answering"
    )
