"""Held back is never silent (docs/security.md): a call that workspace hooks trust holds back
would have judged gets the agent's ask where the event has one, else a deny, as the user's
global `held_back` setting says; the message names them and gives the exact trust command;
each is an audit record `held_back`. And `trust` refuses hooks that would not load.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.helpers import cli_here, run_cli, write_toml_hooks
from triohooks import HookEngine
from triohooks.actors.audit_records import read_records

pytestmark = pytest.mark.slow

PROJECT_GUARD = '[[hooks.pre_tool]]\nid = "team-guard"\nmatch = "Bash"\ncommand = "exit 2"\n'
PROMPT_GUARD = '[[hooks.prompt_submit]]\nid = "prompt-guard"\ncommand = "exit 2"\n'
AFTER = '[[hooks.post_tool]]\nid = "formatter"\ncommand = "true"\n'


class Dirs:
    def __init__(self, root: Path) -> None:
        self.ws = root / "ws"
        self.g = root / "g"
        self.state = root / "state"
        self.ws.mkdir()
        self.g.mkdir()

    def project(self, text: str) -> None:
        write_toml_hooks(self.ws / ".agents", text)

    def setting(self, value: str) -> None:
        write_toml_hooks(self.g, f'held_back = "{value}"\n')

    async def fire(self, name: str, *args: Any, **kw: Any) -> Any:
        with trio.fail_after(30):
            async with HookEngine.open(
                workspace=self.ws, config_dir=self.g, state_dir=self.state
            ) as engine:
                return await getattr(engine, name)(*args, **kw)

    def audit(self) -> list[Any]:
        return [r for r in read_records(self.state / "audit") if r.kind == "held_back"]


@pytest.fixture
def d(tmp_path: Path) -> Dirs:
    return Dirs(tmp_path)


async def test_a_held_back_guard_asks_by_default_and_says_how_to_trust(d: Dirs) -> None:
    d.project(PROJECT_GUARD)
    out = await d.fire("pre_tool", "Bash", {"command": "git push"})
    assert not out.blocked and out.decision == "ask" and out.runs == []
    assert "1 workspace hook(s)" in out.reason and "not trusted yet" in out.reason
    assert f"triohooks trust --workspace {d.ws}" in out.reason
    assert out.reason in out.warnings
    (record,) = d.audit()
    assert (record.event, record.hook, record.decision) == ("pre_tool", "team-guard", "ask")
    assert "triohooks trust" in (record.error or "")


async def test_only_calls_the_held_back_hooks_would_have_judged(d: Dirs) -> None:
    d.project(PROJECT_GUARD)
    out = await d.fire("pre_tool", "Read", {"path": "x"})
    assert out.decision is None and not out.warnings and d.audit() == []


async def test_an_event_without_ask_is_denied(d: Dirs) -> None:
    d.project(PROMPT_GUARD)
    out = await d.fire("prompt_submit", "hello")
    assert out.blocked and "held back" in (out.reason or "")
    assert [r.decision for r in d.audit()] == ["deny"]


async def test_an_event_that_cannot_block_is_told(d: Dirs) -> None:
    d.project(AFTER)
    out = await d.fire("post_tool", "Edit", {"path": "x"}, result="ok")
    assert not out.blocked and any("held back" in w for w in out.warnings)
    assert [r.decision for r in d.audit()] == ["warn"]


@pytest.mark.parametrize(
    ("setting", "blocked", "decision"), [("deny", True, "block"), ("warn", False, None)]
)
async def test_the_users_setting_chooses(
    d: Dirs, setting: str, blocked: bool, decision: str | None
) -> None:
    d.setting(setting)
    d.project(PROJECT_GUARD)
    out = await d.fire("pre_tool", "Bash", {"command": "git push"})
    assert out.blocked is blocked and out.decision == decision
    assert any("held back" in w for w in out.warnings)
    if blocked:
        assert out.message_for_model.startswith("blocked by pre_tool hook: 1 workspace hook(s)")


async def test_a_repository_cannot_choose_it(d: Dirs) -> None:
    write_toml_hooks(d.ws / ".agents", 'held_back = "warn"\n' + PROJECT_GUARD)
    out = await d.fire("pre_tool", "Bash", {"command": "ls"})
    assert out.decision == "ask"


def test_a_bad_setting_is_a_config_error(d: Dirs) -> None:
    d.setting("maybe")
    done = run_cli("validate", config_dir=d.g, state_dir=d.state, cwd=d.ws)
    assert done.returncode == 1 and "held_back" in done.stderr and "maybe" in done.stderr


def test_fire_says_it(d: Dirs) -> None:
    d.project(PROJECT_GUARD)
    payload = json.dumps({"tool": "Bash", "args": {"command": "git push"}})
    done = run_cli("fire", "pre_tool", config_dir=d.g, state_dir=d.state, cwd=d.ws, stdin=payload)
    assert done.returncode == 0 and json.loads(done.stdout)["decision"] == "ask"
    assert "held back" in done.stderr


def test_trust_refuses_hooks_that_would_not_load(d: Dirs) -> None:
    d.project('[[hooks.pre_tool]]\ncommand = "true"\nbogus = 1\n')
    done = run_cli("trust", config_dir=d.g, state_dir=d.state, cwd=d.ws)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert (
        "hooks.toml" in done.stderr and "bogus" in done.stderr and "nothing recorded" in done.stderr
    )
    assert not (d.g / "trust.json").exists()


# -- agents ---------------------------------------------------------------------------------------


def _agent_setup(root: Path, agent: str, settings: dict[str, Any], where: str) -> tuple[Path, Path]:
    project, home, g = root / "proj", root / "home", root / "g"
    (project / where).parent.mkdir(parents=True, exist_ok=True)
    (project / where).write_text(json.dumps(settings))
    home.mkdir()
    g.mkdir(exist_ok=True)
    return project, home


def _body(project: Path, event: str, **extra: Any) -> bytes:
    return json.dumps(
        {"session_id": "s", "cwd": str(project), "hook_event_name": event, **extra}
    ).encode()


CLAUDE_GUARD = {
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "exit 2"}]}]
    }
}


@pytest.mark.parametrize(
    ("agent", "where", "event", "expect"),
    [
        ("claude", ".claude/settings.json", "PreToolUse", "ask"),
        ("qwen", ".qwen/settings.json", "PreToolUse", "deny"),
        ("codex", ".codex/hooks.json", "PreToolUse", "deny"),
    ],
)
async def test_agents_get_their_ask_or_a_deny(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agent: str, where: str, event: str, expect: str
) -> None:
    project, home = _agent_setup(tmp_path, agent, CLAUDE_GUARD, where)
    monkeypatch.setenv("HOME", str(home))
    tool = {"claude": "Bash", "qwen": "run_shell_command", "codex": "Bash"}[agent]
    body = _body(project, event, tool_name=tool, tool_input={"command": "git push"})
    with trio.fail_after(30):
        async with HookEngine.open(
            workspace=project, config_dir=tmp_path / "g", state_dir=tmp_path / "state"
        ) as engine:
            result = await engine.agent_hook(agent, body)
    out = result.answer.output["hookSpecificOutput"]
    assert out["permissionDecision"] == expect
    assert f"triohooks {agent} trust --workspace {project}" in out["permissionDecisionReason"]
    records = [r for r in read_records(tmp_path / "state" / "audit") if r.kind == "held_back"]
    assert [r.decision for r in records] == [expect]


async def test_gemini_denies_what_it_cannot_ask(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = {"hooks": {"BeforeTool": [{"hooks": [{"type": "command", "command": "exit 2"}]}]}}
    project, home = _agent_setup(tmp_path, "gemini", settings, ".gemini/settings.json")
    monkeypatch.setenv("HOME", str(home))
    body = _body(project, "BeforeTool", tool_name="run_shell_command", tool_input={"command": "ls"})
    with trio.fail_after(30):
        async with HookEngine.open(
            workspace=project, config_dir=tmp_path / "g", state_dir=tmp_path / "state"
        ) as engine:
            result = await engine.agent_hook("gemini", body)
    assert result.answer.output["decision"] == "deny"
    assert "triohooks gemini trust" in result.answer.output["reason"]


async def test_an_unreadable_untrusted_settings_file_costs_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nested 3000 deep, a project's settings cannot be read: said, and the user's own
    hooks still answer -- never an internal error that denies every call."""
    project, home = tmp_path / "proj", tmp_path / "home"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text('{"a":' * 3000 + "1" + "}" * 3000)
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text(json.dumps(CLAUDE_GUARD))
    monkeypatch.setenv("HOME", str(home))
    (tmp_path / "g").mkdir()
    with trio.fail_after(30):
        async with HookEngine.open(
            workspace=project, config_dir=tmp_path / "g", state_dir=tmp_path / "state"
        ) as engine:
            ls = await engine.agent_hook(
                "claude", _body(project, "PreToolUse", tool_name="Read", tool_input={"p": 1})
            )
            push = await engine.agent_hook(
                "claude",
                _body(project, "PreToolUse", tool_name="Bash", tool_input={"command": "x"}),
            )
    assert not ls.answer.blocked and "internal error" not in json.dumps(ls.answer.output)
    assert push.answer.blocked  # the user's own guard, from their settings
    env = {"HOME": str(home), "TRIOHOOKS_CONFIG_DIR": str(tmp_path / "g"), "PATH": "/usr/bin:/bin"}
    validate = cli_here(["claude", "validate", "--workspace", str(project)], env=env)
    assert "nested too deeply" in validate.stdout + validate.stderr
    assert "Traceback" not in validate.stderr
