"""One freshness rule for every table (docs/security.md, "Freshness"): a long-lived engine or
serve checks, before each event, everything a table was built from; a change between trust and
use is held back, never run, at once -- and a fresh `list` says the same.

Each case trusts a hook, changes what it runs behind the engine's back, and fires at once.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import trio

from triohooks import HookEngine
from triohooks.agents.config import load_agent_table
from triohooks.config.freshness import signature, unchanged
from triohooks.config.table import load_table
from triohooks.config.trust import record_trust

pytestmark = pytest.mark.slow


class Project:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.ws = root / "ws"
        self.g = root / "g"
        self.state = root / "state"
        for d in (self.ws / ".agents", self.g):
            d.mkdir(parents=True)

    def file(self, rel: str, body: str) -> Path:
        path = self.ws / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
        path.chmod(0o755)
        return path

    def hook(self, command: str) -> None:
        self.file(
            ".agents/hooks.toml", f'[[hooks.pre_tool]]\nid = "g"\ncommand = {json.dumps(command)}\n'
        )

    def trust(self) -> None:
        info = load_table(workspace=self.ws, config_dir=self.g, trust_override=True).trust
        assert info is not None
        record_trust(self.g, self.ws, info)

    def fresh_state(self) -> str:
        info = load_table(workspace=self.ws, config_dir=self.g).trust
        return info.state if info is not None else "none"

    def engine(self) -> Any:
        return HookEngine.open(workspace=self.ws, config_dir=self.g, state_dir=self.state)


BLOCK = "#!/bin/sh\necho guarded >&2\nexit 2\n"
PWNED = "#!/bin/sh\ntouch {marker}\nexit 0\n"


@pytest.fixture
def p(tmp_path: Path) -> Project:
    return Project(tmp_path)


def edit_the_script(p: Project) -> None:
    p.file("scripts/check.sh", PWNED.format(marker=p.root / "pwned"))


def create_a_named_script(p: Project) -> None:
    p.file("later.sh", PWNED.format(marker=p.root / "pwned"))


def repoint_a_script_link(p: Project) -> None:
    p.file("scripts/b.sh", PWNED.format(marker=p.root / "pwned"))
    link = p.ws / "scripts" / "link.sh"
    tmp = p.ws / "scripts" / "link.tmp"
    tmp.symlink_to("b.sh")
    os.replace(tmp, link)


def repoint_a_hooks_directory(p: Project) -> None:
    p.file("v2/check.sh", PWNED.format(marker=p.root / "pwned"))
    tmp = p.ws / "hooks.tmp"
    tmp.symlink_to("v2")
    os.replace(tmp, p.ws / "hooks")


CASES = {
    "edit_the_script": ("[ -x ./later.sh ] && ./later.sh; scripts/check.sh", edit_the_script),
    "create_a_named_script": (
        "[ -x ./later.sh ] && ./later.sh; scripts/check.sh",
        create_a_named_script,
    ),
    "repoint_a_script_link": ("scripts/link.sh", repoint_a_script_link),
    "repoint_a_hooks_directory": ("hooks/check.sh", repoint_a_hooks_directory),
}


def _setup(p: Project, command: str) -> None:
    p.file("scripts/check.sh", BLOCK)
    (p.ws / "scripts" / "link.sh").symlink_to("check.sh")
    p.file("v1/check.sh", BLOCK)
    (p.ws / "hooks").symlink_to("v1")
    p.hook(command)
    p.trust()


@pytest.mark.parametrize("case", list(CASES))
async def test_a_long_lived_engine_holds_back_a_change_at_the_next_event(
    p: Project, case: str
) -> None:
    command, change = CASES[case]
    _setup(p, command)
    with trio.fail_after(30):
        async with p.engine() as engine:
            before = await engine.pre_tool("bash", {"command": "ls"})
            change(p)
            after = await engine.pre_tool("bash", {"command": "ls"})  # at once: no grace time
            state = engine.table.trust.state
    assert before.blocked and before.reason == "guarded"
    assert not (p.root / "pwned").exists(), "new code ran under an old trust"
    assert after.runs == [] and after.decision == "ask"
    assert "changed since you trusted them" in (after.reason or "")
    assert state == p.fresh_state() == "changed"  # the engine and a fresh load agree


async def test_a_trust_given_elsewhere_applies_at_the_next_event(p: Project) -> None:
    p.file("scripts/check.sh", BLOCK)
    p.hook("scripts/check.sh")
    with trio.fail_after(30):
        async with p.engine() as engine:
            held = await engine.pre_tool("bash", {"command": "ls"})
            p.trust()  # `triohooks trust` in another process
            ran = await engine.pre_tool("bash", {"command": "ls"})
    assert held.decision == "ask" and held.runs == []
    assert ran.blocked and ran.reason == "guarded"


async def test_another_projects_table_follows_the_same_rule(p: Project) -> None:
    """Through serve, a project that is not the engine's own: read again at its next event."""
    _setup(p, "scripts/check.sh")
    serve_ws = p.root / "serve-ws"
    serve_ws.mkdir()
    body = json.dumps(
        {
            "session_id": "s",
            "cwd": str(p.ws),
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "ls"},
        }
    ).encode()
    (p.ws / ".claude").mkdir()
    with trio.fail_after(30):
        async with HookEngine.open(workspace=serve_ws, config_dir=p.g, state_dir=p.state) as e:
            before = await e.agent_hook("claude", body)
            edit_the_script(p)
            after = await e.agent_hook("claude", body)
    assert before.answer.blocked
    assert not (p.root / "pwned").exists()
    assert after.answer.output["hookSpecificOutput"]["permissionDecision"] == "ask"


async def test_an_agents_table_follows_the_same_rule(
    p: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = p.file(".claude/hooks/guard.sh", BLOCK)
    settings = p.ws / ".claude" / "settings.json"
    settings.write_text(
        json.dumps(
            {
                "hooks": {
                    "PreToolUse": [
                        {
                            "hooks": [
                                {
                                    "type": "command",
                                    "command": "$CLAUDE_PROJECT_DIR/.claude/hooks/guard.sh",
                                }
                            ]
                        }
                    ]
                }
            }
        )
    )
    home = p.root / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    table = load_agent_table("claude", project=p.ws, home=home, config_dir=p.g)
    assert table.trust is not None
    record_trust(p.g, p.ws, table.trust, dialect="claude")
    body = json.dumps(
        {
            "session_id": "s",
            "cwd": str(p.ws),
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "ls"},
        }
    ).encode()
    with trio.fail_after(30):
        async with p.engine() as engine:
            before = await engine.agent_hook("claude", body)
            script.write_text(PWNED.format(marker=p.root / "pwned"))
            after = await engine.agent_hook("claude", body)
    assert before.answer.blocked
    assert not (p.root / "pwned").exists()
    assert after.answer.output["hookSpecificOutput"]["permissionDecision"] == "ask"


def test_a_same_size_edit_with_its_time_put_back_is_seen(tmp_path: Path) -> None:
    """File times are coarse: within the settle time a signature holds the content too."""
    path = tmp_path / "x.sh"
    path.write_text("exit 0\n")
    sig = signature(str(path))
    st = path.stat()
    path.write_text("exit 1\n")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert not unchanged([sig])
    assert unchanged([signature(str(path))])
