"""triohooks' reading of each end of an agent's own hook -- exit 0/1/2/3 with and without words,
a crash, a timeout, broken JSON, plain text -- pinned per agent and event from the table the
real CLIs were measured against (:mod:`tests.interop.hook_ends`; ``make interop`` checks the
table itself against them). A real engine runs the same dispatching bash hook from the agent's
own user settings; no call the agent alone would deny is let through, and the model is told in
the agent's own words. Also: Claude Code's ``onFailure`` key as read, and the Copilot CLI
contexts that reach its model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.interop.hook_ends import CASES, TABLES, Table, dispatcher, token
from triohooks import HookEngine
from triohooks.agents.config import parse_hooks
from triohooks.agents.merge import merge
from triohooks.agents.replies import AgentReply
from triohooks.agents.spec import Level
from triohooks.fronts.relay import with_event

pytestmark = pytest.mark.slow

#: The hook's timeout here (the ``timeout`` case sleeps 30 s).
TIMEOUT_S = 0.5
#: Each agent's tool-call event, and its shell tool as its input names it.
PRE_TOOL = {
    "claude": ("PreToolUse", "Bash"),
    "codex": ("PreToolUse", "Bash"),
    "qwen": ("PreToolUse", "run_shell_command"),
    "gemini": ("BeforeTool", "run_shell_command"),
    "copilot": ("preToolUse", "bash"),
    "cursor": ("beforeShellExecution", "Shell"),
}


def hooks_file(home: Path, table: Table) -> Path:
    """The agent's user-level settings with the dispatching hook on ``table.event``."""
    seconds = TIMEOUT_S * 1000 if table.agent == "gemini" else TIMEOUT_S
    key = "bash" if table.agent == "copilot" else "command"
    handler = {"type": "command", key: dispatcher(), "timeout": seconds, **table.fields}
    if table.agent in ("copilot", "cursor"):
        doc: dict[str, Any] = {"version": 1, "hooks": {table.event: [handler]}}
        path = {"copilot": home / ".copilot" / "hooks" / "mine.json"}.get(
            table.agent, home / ".cursor" / "hooks.json"
        )
    else:
        doc = {"hooks": {table.event: [{"hooks": [handler]}]}}
        name = "hooks.json" if table.agent == "codex" else "settings.json"
        path = home / f".{table.agent}" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def body(agent: str, event: str, session: str, cwd: Path, text: str, *, prompt: bool) -> bytes:
    """The agent's own hook input for a shell call (or a prompt) holding ``text``."""
    if agent == "copilot":
        fields: dict[str, Any] = {"sessionId": session, "cwd": str(cwd), "timestamp": 1}
        if prompt:
            fields["prompt"] = text
        else:
            fields.update(toolName="bash", toolArgs={"command": text})
        return with_event(json.dumps(fields).encode(), event)
    if agent == "cursor":
        fields = {"conversation_id": session, "workspace_roots": [str(cwd)]}
        fields.update({"prompt": text} if prompt else {"command": text, "cwd": str(cwd)})
        return json.dumps({"hook_event_name": event, **fields}).encode()
    fields = {"session_id": session, "cwd": str(cwd), "hook_event_name": event}
    if prompt:
        fields["prompt"] = text
    else:
        fields.update(tool_name=PRE_TOOL[agent][1], tool_input={"command": text})
    return json.dumps(fields).encode()


async def read_end(engine: Any, table: Table, case: str, cwd: Path) -> tuple[bool, str]:
    """Whether the case's call runs through triohooks, and what the model is told if not. On
    a prompt event the prompt is answered first, then the prompt's tool call is asked about
    (an agent that cannot stop a prompt gets its calls denied)."""
    agent = table.agent
    text = f"echo {token(case)}"
    first = body(agent, table.event, case, cwd, text, prompt=not table.tool_call)
    answer = (await engine.agent_hook(agent, first)).answer
    if answer.blocked:
        return False, answer.reason or ""
    if not table.tool_call:
        call = body(agent, PRE_TOOL[agent][0], case, cwd, "echo the prompt's call", prompt=False)
        then = (await engine.agent_hook(agent, call)).answer
        if then.blocked:
            return False, then.reason or ""
    return True, ""


@pytest.mark.parametrize("table", TABLES, ids=[t.id for t in TABLES])
async def test_each_end_is_read_as_the_agent_reads_it_or_stricter(
    table: Table, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))
    hooks_file(home, table)
    wrong = []
    with trio.fail_after(60):
        async with HookEngine.open(
            workspace=project, config_dir=tmp_path / "g", state_dir=tmp_path / "s", audit=False
        ) as engine:
            for case, reading in table.readings.items():
                runs, told = await read_end(engine, table, case, project)
                if runs != reading.runs_through_triohooks:
                    wrong.append(f"{case}: runs={runs} ({told!r}); the table: {reading}")
                elif not runs and reading.says not in told:
                    wrong.append(f"{case}: the model is told {told!r}, not {reading.says!r}")
    assert not wrong, "\n".join(wrong)
    assert list(table.readings) == list(CASES)


def test_triohooks_is_never_looser_than_the_agent() -> None:
    """The table's own rule: where triohooks differs from the agent, it denies."""
    for table in TABLES:
        for case, reading in table.readings.items():
            assert reading.runs or not reading.runs_through_triohooks, (table.id, case)
            assert not reading.stricter or reading.runs, (table.id, case)


# --- Claude Code's onFailure ---------------------------------------------------------------------


def _parse(agent: Any, event: str, handler: dict[str, Any]) -> tuple[Any, list[Any]]:
    problems: list[Any] = []
    found = parse_hooks(
        agent,
        Level("user", Path("/s.json"), False),
        "/s.json",
        {event: [{"hooks": [handler]}]},
        problems,
    )
    return found[0], problems


@pytest.mark.parametrize(
    ("agent", "event", "handler", "closed"),
    [
        ("claude", "PreToolUse", {"onFailure": "block"}, True),
        ("claude", "PreToolUse", {"onFailure": "continue"}, False),
        ("claude", "PermissionRequest", {"onFailure": "block"}, True),
        ("claude", "Stop", {"onFailure": "block"}, False),  # Claude Code ignores it there
        ("claude", "SubagentStop", {"onFailure": "block"}, False),
        ("claude", "PreToolUse", {"onFailure": "block", "async": True}, False),
        ("qwen", "PreToolUse", {"onFailure": "block"}, False),  # measured: Qwen Code has no key
        ("codex", "PreToolUse", {"onFailure": "block"}, False),
    ],
)
def test_on_failure_is_claude_codes_key(
    agent: str, event: str, handler: dict[str, Any], closed: bool
) -> None:
    hook, problems = _parse(agent, event, {"type": "command", "command": "x", **handler})
    assert (hook.fail_closed, hook.on_failure_block) == (closed, closed)
    assert problems == []


def test_an_on_failure_value_claude_code_does_not_know_is_said_and_blocks() -> None:
    hook, problems = _parse(
        "claude", "PreToolUse", {"type": "command", "command": "x", "onFailure": "blok"}
    )
    assert hook.fail_closed
    (problem,) = problems
    assert problem.field.endswith("onFailure") and "continue" in problem.message


# --- Copilot CLI: the contexts its model reads ---------------------------------------------------


@pytest.mark.parametrize(
    "event", ["postToolUse", "userPromptSubmitted", "sessionStart", "preToolUse"]
)
def test_copilot_passes_additional_context_on_where_its_model_reads_it(event: str) -> None:
    hook, _ = _parse("copilot", event, {"type": "command", "bash": "x"})
    said = AgentReply(status="ok", json={"additionalContext": "lint: 2 warnings"})
    answer = merge("copilot", event, [(hook, said)])
    assert answer.output == {"additionalContext": "lint: 2 warnings"}
    assert answer.undelivered == []


def test_copilot_reads_no_plain_text_so_neither_does_triohooks() -> None:
    hook, _ = _parse("copilot", "userPromptSubmitted", {"type": "command", "bash": "x"})
    answer = merge("copilot", "userPromptSubmitted", [(hook, AgentReply(status="ok", text="hi"))])
    assert answer.output == {}
