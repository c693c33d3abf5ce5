"""Routing (docs/agents.md, "Routing"): an install routes only the agent events some hook
handles, and the routing follows when that set changes -- at the agent's next session start
(the session's first answer says so), after ``trust`` and ``init`` -- while ``validate`` says a
routing that is stale. Real CLI commands and a real engine; the rule itself from one table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.helpers import installed_cli
from triohooks import HookEngine
from triohooks.agents.routing import routed_events
from triohooks.agents.spec import AGENTS, SPECS

pytestmark = pytest.mark.slow

PRE = '[[hooks.pre_tool]]\nbuiltin = "protected_push"\n'
POST = '[[hooks.post_tool]]\ncommand = "true"\n'

# -- the rule -------------------------------------------------------------------------------------

#: (agent, own events, scope) -> the triohooks events the routed agent events map to.
RULE = [
    ("claude", {"pre_tool"}, "project", {"pre_tool", "session_start"}),
    ("claude", set(), "project", {"session_start"}),
    # the user scope always routes the before-a-tool-call event (a held-back guard of a project
    # not opened yet must be able to hold the call back)
    ("claude", set(), "user", {"pre_tool", "session_start"}),
    ("gemini", {"post_tool"}, "project", {"post_tool", "session_start"}),
    # Gemini CLI says a failed call in AfterTool: post_tool_failure hooks run from it
    ("gemini", {"post_tool_failure"}, "project", {"post_tool", "session_start"}),
    ("claude", {"post_tool_failure"}, "project", {"post_tool_failure", "session_start"}),
    ("cursor", {"pre_tool"}, "project", {"pre_tool", "session_start"}),
]


@pytest.mark.parametrize(("agent", "own", "scope", "expected"), RULE)
def test_the_rule(agent: Any, own: set[str], scope: str, expected: set[str]) -> None:
    routed = routed_events(agent, {}, frozenset(own), scope)
    assert {SPECS[agent].events[e] for e in routed} == expected
    # every agent event of those triohooks events, none other
    assert routed == [e for e, c in SPECS[agent].events.items() if c in expected]


@pytest.mark.parametrize("agent", AGENTS)
def test_unknown_hooks_route_everything_and_adopted_events_always(agent: Any) -> None:
    assert routed_events(agent, {}, None, "project") == list(SPECS[agent].events)
    some = next(iter(SPECS[agent].events))
    assert some in routed_events(agent, {some: []}, frozenset(), "project")
    assert "MadeUpEvent" in routed_events(agent, {"MadeUpEvent": []}, frozenset(), "project")


@pytest.mark.parametrize("agent", [a for a in AGENTS if not SPECS[a].blocks_prompts])
def test_a_prompt_hook_routes_the_tool_calls_of_an_agent_that_cannot_stop_a_prompt(
    agent: Any,
) -> None:
    routed = routed_events(agent, {}, frozenset({"prompt_submit"}), "project")
    assert "pre_tool" in {SPECS[agent].events[e] for e in routed}


# -- installs and re-routes ----------------------------------------------------------------------


class Machine:
    def __init__(self, root: Path) -> None:
        self.home = root / "home"
        self.project = (root / "proj").resolve()
        self.config = root / "cfg"
        self.state = root / "state"
        for d in (self.home / ".claude", self.project / ".claude", self.config):
            d.mkdir(parents=True)
        self.state.mkdir(mode=0o700)
        self.settings = self.home / ".claude" / "settings.json"
        self.settings.write_text('{\n  "model": "x"\n}\n')
        self.original = self.settings.read_bytes()

    def cli(self, *argv: str) -> Any:
        return installed_cli(
            *argv, cwd=self.project, config_dir=self.config, home=self.home, state_dir=self.state
        )

    def routed(self) -> set[str]:
        return set(json.loads(self.settings.read_text())["hooks"])

    async def session_start(self, monkeypatch: pytest.MonkeyPatch) -> Any:
        body = {
            "session_id": "s1",
            "cwd": str(self.project),
            "hook_event_name": "SessionStart",
            "source": "startup",
        }
        monkeypatch.setenv("HOME", str(self.home))  # the agent's home: its user settings
        with trio.fail_after(30):
            async with HookEngine.open(
                workspace=self.project, config_dir=self.config, state_dir=self.state
            ) as engine:
                return await engine.agent_hook(
                    "claude", json.dumps(body).encode(), adopted_only=True, scope="user"
                )


@pytest.fixture
def m(tmp_path: Path) -> Machine:
    return Machine(tmp_path)


def test_install_routes_what_the_hooks_handle(m: Machine) -> None:
    (m.config / "hooks.toml").write_text(POST)
    done = m.cli("claude", "install", "--scope", "user")
    assert done.returncode == 0, done.stderr
    assert m.routed() == {"PreToolUse", "PostToolUse", "SessionStart"}


async def test_a_hook_added_later_is_routed_at_the_next_session_start(
    m: Machine, monkeypatch: pytest.MonkeyPatch
) -> None:
    (m.config / "hooks.toml").write_text(PRE)
    assert m.cli("claude", "install", "--scope", "user").returncode == 0
    assert m.routed() == {"PreToolUse", "SessionStart"}
    (m.config / "hooks.toml").write_text(PRE + POST)
    stale = m.cli("claude", "validate")
    assert stale.returncode == 1
    assert "routing is stale" in stale.stdout and "PostToolUse" in stale.stdout
    result = await m.session_start(monkeypatch)
    said = result.answer.output["systemMessage"]
    assert "now routes PostToolUse" in said and "next session" in said
    assert m.routed() == {"PreToolUse", "PostToolUse", "SessionStart"}
    assert "TAMPER" not in said
    assert m.cli("claude", "validate").returncode == 0
    # a hook removed: its event is no longer routed
    (m.config / "hooks.toml").write_text(PRE)
    result = await m.session_start(monkeypatch)
    assert "no longer routes PostToolUse" in result.answer.output["systemMessage"]
    assert m.routed() == {"PreToolUse", "SessionStart"}
    # and uninstall still gives the file back byte for byte
    assert m.cli("claude", "uninstall", "--scope", "user").returncode == 0
    assert m.settings.read_bytes() == m.original


async def test_a_session_start_with_nothing_changed_says_nothing(
    m: Machine, monkeypatch: pytest.MonkeyPatch
) -> None:
    (m.config / "hooks.toml").write_text(PRE)
    assert m.cli("claude", "install", "--scope", "user").returncode == 0
    before = m.settings.read_bytes()
    result = await m.session_start(monkeypatch)
    assert "systemMessage" not in result.answer.output
    assert m.settings.read_bytes() == before


async def test_a_catch_all_removed_behind_triohooks_back_is_still_an_alarm(m: Machine) -> None:
    """What the install routed is its record: a catch-all gone since is tampering, even for an
    event only triohooks' own hooks handle."""
    (m.config / "hooks.toml").write_text(PRE + POST)
    assert m.cli("claude", "install", "--scope", "user").returncode == 0
    doc = json.loads(m.settings.read_text())
    del doc["hooks"]["PostToolUse"]
    m.settings.write_text(json.dumps(doc, indent=2))
    checked = m.cli("claude", "validate")
    assert checked.returncode == 1
    assert "tamper alarm" in checked.stdout and "PostToolUse" in checked.stdout


def test_trusting_a_project_routes_its_hooks(m: Machine) -> None:
    assert m.cli("claude", "install", "--scope", "user").returncode == 0
    assert m.routed() == {"PreToolUse", "SessionStart"}
    (m.project / ".agents").mkdir()
    (m.project / ".agents" / "hooks.toml").write_text(POST)
    trusted = m.cli("trust")
    assert trusted.returncode == 0, trusted.stderr
    assert "now routes PostToolUse" in trusted.stderr
    assert m.routed() == {"PreToolUse", "PostToolUse", "SessionStart"}


def test_init_routes_the_policy_for_an_agent_installed_before(m: Machine) -> None:
    """A project-scope install routes only what its hooks handle; ``init`` then writes a
    policy whose guards run before tool calls: the install routes them."""
    settings = m.project / ".claude" / "settings.json"
    assert m.cli("claude", "install", "--scope", "project").returncode == 0
    assert set(json.loads(settings.read_text())["hooks"]) == {"SessionStart"}
    done = m.cli("init")
    assert done.returncode == 0, done.stderr
    assert "now routes PreToolUse" in done.stderr
    assert "PreToolUse" in json.loads(settings.read_text())["hooks"]


def test_a_teammates_committed_install_is_said_stale_never_rewritten(
    m: Machine, tmp_path: Path
) -> None:
    """A project install this user did not make (no install record here) is not rewritten."""
    assert m.cli("claude", "install", "--scope", "project").returncode == 0
    settings = m.project / ".claude" / "settings.json"
    (m.config / "installed.json").unlink()  # another user's machine made it
    before = settings.read_bytes()
    (m.config / "hooks.toml").write_text(POST)
    done = m.cli("trust")
    checked = m.cli("claude", "validate")
    assert settings.read_bytes() == before
    assert "routing is stale" in checked.stdout and checked.returncode == 1
    del done


def test_a_config_that_cannot_be_read_routes_every_event_and_says_so(m: Machine) -> None:
    """What cannot be read is unknown: an install then routes every event (the safe side),
    and says why."""
    (m.config / "hooks.toml").write_text("[[hooks.pre_tool]\nbroken = \n")
    done = m.cli("claude", "install", "--scope", "user")
    assert done.returncode == 0, done.stderr
    assert m.routed() == set(SPECS["claude"].events)
    assert "every event is routed until it can" in done.stderr
