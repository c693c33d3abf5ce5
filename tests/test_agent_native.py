"""The user's own triohooks hooks run for every agent's requests too: one ``shell(git push*)``
guard in ``hooks.toml`` blocks ``git push`` whichever agent asks, answered in that agent's
format; a rewrite reaches the agent's own input shape; context is added; the agent's hooks and
triohooks' fold by the agent's merge rules. Real engine, real bash hooks, the agents' documented
inputs (the real CLIs: tests/interop)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from triohooks import HookEngine

pytestmark = pytest.mark.slow

GLOBAL = """
[[hooks.pre_tool]]
id = "no-push"
if = "shell(git push*)"
command = "echo 'pushing is for humans' >&2; exit 2"

[[hooks.pre_tool]]
id = "quiet-pytest"
if = "shell(pytest*)"
command = '''echo '{"updated_args": {"command": "pytest -q -x"}}' '''

[[hooks.pre_tool]]
builtin = "secret_reads"

[[hooks.prompt_submit]]
id = "branch"
command = "echo 'current branch: main'"
"""

#: Each agent's shell tool and pre-tool / prompt event names.
AGENTS = {
    "claude": ("Bash", "PreToolUse", "UserPromptSubmit"),
    "codex": ("Bash", "PreToolUse", "UserPromptSubmit"),
    "gemini": ("run_shell_command", "BeforeTool", "BeforeAgent"),
}


class Setup:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.project = (root / "proj").resolve()
        self.config = root / "g"
        for d in (self.home, self.project, self.config):
            d.mkdir(parents=True, exist_ok=True)
        (self.config / "hooks.toml").write_text(GLOBAL)

    def body(self, event: str, cwd: Path | None = None, **fields: Any) -> bytes:
        base = {"session_id": "s1", "cwd": str(cwd or self.project), "hook_event_name": event}
        return json.dumps({**base, **fields}).encode()

    async def ask(self, agent: str, *bodies: bytes, workspace: Path | None = None) -> list[Any]:
        with trio.fail_after(30):
            async with HookEngine.open(
                workspace=workspace or self.project,
                config_dir=self.config,
                state_dir=self.root / "state",
                audit=False,
            ) as engine:
                return [await engine.agent_hook(agent, body) for body in bodies]


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Setup:
    s = Setup(tmp_path)
    monkeypatch.setenv("HOME", str(s.home))
    return s


def shell_call(agent: str, command: str) -> dict[str, Any]:
    tool, _, _ = AGENTS[agent]
    return {"tool_name": tool, "tool_input": {"command": command}}


@pytest.mark.parametrize("agent", sorted(AGENTS))
async def test_one_guard_blocks_git_push_in_every_agent(setup: Setup, agent: str) -> None:
    _, pre, _ = AGENTS[agent]
    push, ls = await setup.ask(
        agent,
        setup.body(pre, **shell_call(agent, "git push --force origin main")),
        setup.body(pre, **shell_call(agent, "ls")),
    )
    assert push.answer.blocked and "pushing is for humans" in push.answer.reason
    out = push.answer.output
    if agent == "gemini":
        assert out["decision"] == "deny" and "pushing is for humans" in out["reason"]
    else:
        specific = out["hookSpecificOutput"]
        assert specific["permissionDecision"] == "deny"
        assert "pushing is for humans" in specific["permissionDecisionReason"]
    assert [r.hook for r in push.runs if r.status == "block"] == ["triohooks:no-push"]
    assert not ls.answer.blocked and ls.answer.output == {}


@pytest.mark.parametrize("agent", sorted(AGENTS))
async def test_a_rewrite_reaches_the_agents_own_input_shape(setup: Setup, agent: str) -> None:
    _, pre, _ = AGENTS[agent]
    (result,) = await setup.ask(agent, setup.body(pre, **shell_call(agent, "pytest tests")))
    specific = result.answer.output["hookSpecificOutput"]
    key = "tool_input" if agent == "gemini" else "updatedInput"
    assert specific[key] == {"command": "pytest -q -x"}
    if agent == "codex":  # Codex takes updatedInput only with an allow
        assert specific["permissionDecision"] == "allow"


@pytest.mark.parametrize("agent", sorted(AGENTS))
async def test_prompt_context_is_added(setup: Setup, agent: str) -> None:
    _, _, prompt = AGENTS[agent]
    (result,) = await setup.ask(agent, setup.body(prompt, prompt="fix it"))
    assert result.answer.output["hookSpecificOutput"]["additionalContext"] == (
        "current branch: main"
    )


async def test_a_built_in_guard_reads_claudes_read_tool(setup: Setup) -> None:
    (result,) = await setup.ask(
        "claude",
        setup.body(
            "PreToolUse", tool_name="Read", tool_input={"file_path": str(setup.project / ".env")}
        ),
    )
    assert result.answer.blocked and "secret_reads guard" in result.answer.reason


async def test_the_agents_hooks_and_ours_fold_by_its_merge(setup: Setup) -> None:
    """Claude's own hook allows and rewrites; ours deny a push (deny wins) and rewrite a pytest
    (ours is last in order: its rewrite is the one Claude gets, with a warning)."""
    claude = setup.project / ".claude"
    claude.mkdir()
    allow_and_rewrite = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "updatedInput": {"command": "theirs"},
        }
    }
    settings = {
        "hooks": {
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [
                        {"type": "command", "command": f"echo '{json.dumps(allow_and_rewrite)}'"}
                    ],
                }
            ]
        }
    }
    (claude / "settings.json").write_text(json.dumps(settings))
    with trio.fail_after(30):
        async with HookEngine.open(
            workspace=setup.project,
            config_dir=setup.config,
            state_dir=setup.root / "state",
            audit=False,
            trust=True,
        ) as engine:
            push = await engine.agent_hook(
                "claude", setup.body("PreToolUse", **shell_call("claude", "git push"))
            )
            tests = await engine.agent_hook(
                "claude", setup.body("PreToolUse", **shell_call("claude", "pytest"))
            )
    assert push.answer.output["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "updatedInput" not in push.answer.output["hookSpecificOutput"]
    assert tests.answer.output["hookSpecificOutput"]["updatedInput"] == {"command": "pytest -q -x"}
    assert any("rewrote the input" in w for w in tests.answer.warnings)
    assert [r.hook for r in tests.runs][:2] == [
        "project:PreToolUse[0].hooks[0]",
        "triohooks:quiet-pytest",
    ]
    assert tests.runs[2].hook.startswith("triohooks:") and "secret_reads" in tests.runs[2].hook


async def test_another_projects_request_gets_the_global_hooks_only(setup: Setup) -> None:
    """A serve's workspace hooks are that workspace's: a request from another project runs
    the user's global hooks, not them, and says so when that project has hooks of its own."""
    serve_ws = setup.root / "serve-ws"
    (serve_ws / ".agents").mkdir(parents=True)
    (serve_ws / ".agents" / "hooks.toml").write_text(
        '[[hooks.pre_tool]]\nid = "ws-only"\ncommand = "echo ws >&2; exit 2"\n'
    )
    (setup.project / ".agents").mkdir()
    (setup.project / ".agents" / "hooks.toml").write_text(
        '[[hooks.pre_tool]]\nid = "theirs"\ncommand = "true"\n'
    )
    with trio.fail_after(30):
        async with HookEngine.open(
            workspace=serve_ws,
            config_dir=setup.config,
            state_dir=setup.root / "state",
            audit=False,
            trust=True,
        ) as engine:
            ls = await engine.agent_hook(
                "claude", setup.body("PreToolUse", **shell_call("claude", "ls"))
            )
            push = await engine.agent_hook(
                "claude", setup.body("PreToolUse", **shell_call("claude", "git push"))
            )
            own = await engine.agent_hook(
                "claude", setup.body("PreToolUse", cwd=serve_ws, **shell_call("claude", "ls"))
            )
    assert not ls.answer.blocked  # ws-only would have blocked it
    assert any("has its own triohooks hooks" in w for w in ls.answer.warnings)
    assert "has its own triohooks hooks" in ls.answer.output["systemMessage"]  # the user sees it
    assert push.answer.blocked  # the global guard still holds
    assert own.answer.blocked and "ws" in (own.answer.reason or "")  # its own: they run


async def test_a_call_our_hooks_cannot_read_is_denied_not_waved_on(setup: Setup) -> None:
    (result,) = await setup.ask(
        "claude", setup.body("PreToolUse", tool_name="Bash", tool_input="git push")
    )
    assert result.answer.blocked
    assert "triohooks internal error" in result.answer.reason
    assert "tool_input is not an object" in result.answer.reason


async def test_no_equivalent_event_runs_only_the_agents_hooks(setup: Setup) -> None:
    (result,) = await setup.ask("claude", setup.body("Setup", trigger="init"))
    assert not result.answer.blocked and result.runs == []


#: docs/agents.md's tool-name table: each agent's tools and the if-rule kind they are.
TOOL_TABLE = [
    ("Bash", "shell"),
    ("Read", "read"),
    ("Write", "write"),
    ("Edit", "write"),
    ("MultiEdit", "write"),
    ("NotebookEdit", "write"),
    ("WebFetch", "web"),
    ("WebSearch", "web"),
    ("run_shell_command", "shell"),
    ("read_file", "read"),
    ("read_many_files", "read"),
    ("write_file", "write"),
    ("replace", "write"),
    ("web_fetch", "web"),
    ("google_web_search", "web"),
    ("exec_command", "shell"),
    ("shell", "shell"),
    ("local_shell", "shell"),
    ("apply_patch", "write"),
]


@pytest.mark.parametrize(("tool", "kind"), TOOL_TABLE)
def test_the_documented_tool_names_are_known(tool: str, kind: str) -> None:
    from triohooks.match.ifrules import tool_kinds

    assert kind in tool_kinds(tool)
