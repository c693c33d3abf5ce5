"""An agent installed at the user scope *and* at a project's (``triohooks <agent> install
--scope user`` plus ``install``; or a teammate's project install, committed, cloned): the agent
runs both catch-alls for every call, and each hook still runs once per call -- one audit
record per block.

The real CLI installs; then each catch-all command the two settings files hold for the event
runs as the agent runs it (``bash -c``, the hook input on stdin, both at once), through the
relay's own fallback (no serve) and through a running ``serve``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from triohooks.agents.config import load_agent_table
from triohooks.agents.spec import SPECS

from .helpers import cli_here

pytestmark = pytest.mark.slow

TIMEOUT_S = 60
DISPLAY: dict[str, str] = {name: spec.display for name, spec in SPECS.items()}


def _nested(event: str, matcher: str | None) -> Callable[[str], dict[str, Any]]:
    def hooks(command: str) -> dict[str, Any]:
        group: dict[str, Any] = {"hooks": [{"type": "command", "command": command}]}
        if matcher is not None:
            group["matcher"] = matcher
        return {"hooks": {event: [group]}}

    return hooks


def _claude_body(tool: str, event: str = "PreToolUse") -> Callable[[Path], dict[str, Any]]:
    def body(project: Path) -> dict[str, Any]:
        return {
            "session_id": "s",
            "cwd": str(project),
            "hook_event_name": event,
            "tool_name": tool,
            "tool_input": {"command": "git push origin main"},
        }

    return body


class Agent:
    def __init__(
        self,
        name: str,
        user: str,
        project: str,
        event: str,
        hooks: Callable[[str], dict[str, Any]],
        body: Callable[[Path], dict[str, Any]],
    ) -> None:
        self.name, self.user, self.project, self.event = name, user, project, event
        self.hooks, self.body = hooks, body


AGENTS = {
    "claude": Agent(
        "claude",
        ".claude/settings.json",
        ".claude/settings.json",
        "PreToolUse",
        _nested("PreToolUse", "Bash"),
        _claude_body("Bash"),
    ),
    "gemini": Agent(
        "gemini",
        ".gemini/settings.json",
        ".gemini/settings.json",
        "BeforeTool",
        _nested("BeforeTool", "run_shell_command"),
        _claude_body("run_shell_command", "BeforeTool"),
    ),
    "codex": Agent(
        "codex",
        ".codex/hooks.json",
        ".codex/hooks.json",
        "PreToolUse",
        _nested("PreToolUse", None),
        _claude_body("Bash"),
    ),
    "qwen": Agent(
        "qwen",
        ".qwen/settings.json",
        ".qwen/settings.json",
        "PreToolUse",
        _nested("PreToolUse", None),
        _claude_body("run_shell_command"),
    ),
    "copilot": Agent(
        "copilot",
        ".copilot/hooks/triohooks.json",
        ".github/hooks/triohooks.json",
        "preToolUse",
        lambda command: {
            "version": 1,
            "hooks": {"preToolUse": [{"type": "command", "bash": command}]},
        },
        lambda project: {
            "sessionId": "s",
            "cwd": str(project),
            "timestamp": 1,
            "toolName": "bash",
            "toolArgs": json.dumps({"command": "git push origin main"}),
        },
    ),
    "cursor": Agent(
        "cursor",
        ".cursor/hooks.json",
        ".cursor/hooks.json",
        "beforeShellExecution",
        lambda command: {"version": 1, "hooks": {"beforeShellExecution": [{"command": command}]}},
        lambda project: {
            "conversation_id": "s",
            "hook_event_name": "beforeShellExecution",
            "command": "git push origin main",
            "cwd": str(project),
            "workspace_roots": [str(project)],
        },
    ),
}


class Setup:
    def __init__(self, root: Path, agent: Agent) -> None:
        self.agent = agent
        self.home = root / "home"
        self.project = root / "project"
        self.config = root / "config"
        self.state = root / "state"
        self.count = root / "ran.txt"
        for d in (self.home, self.project, self.config):
            d.mkdir()
        (self.config / "hooks.toml").write_text(  # a guard of the user's that says it ran
            "[[hooks.pre_tool]]\n"
            'id = "no-push"\n'
            'if = "shell(git push*)"\n'
            f"command = \"echo native >> {self.count}; echo 'no push to a protected branch' >&2; "
            'exit 2"\n'
        )

    def env(self, **extra: str) -> dict[str, str]:
        return {
            **{k: v for k, v in os.environ.items() if not k.startswith("TRIOHOOKS")},
            "HOME": str(self.home),
            "TRIOHOOKS_CONFIG_DIR": str(self.config),
            "TRIOHOOKS_STATE_DIR": str(self.state),
            # triohooks installed: triohooks-relay on PATH, as a project's catch-all needs.
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            **extra,
        }

    def cli(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return cli_here(args, env=self.env(), cwd=cwd or self.project, timeout=TIMEOUT_S)

    def write_settings(self, where: Path, who: str) -> Path:
        path = where / (self.agent.user if where == self.home else self.agent.project)
        path.parent.mkdir(parents=True, exist_ok=True)
        command = f"cat > /dev/null; echo {who} >> {self.count}"
        path.write_text(json.dumps(self.agent.hooks(command), indent=2) + "\n")
        return path

    def catch_alls(self, project: Path) -> list[str]:
        """Every command the agent runs for the event: each settings file's catch-alls."""
        out = []
        for path in (self.home / self.agent.user, project / self.agent.project):
            hooks = json.loads(path.read_text())["hooks"][self.agent.event]
            for entry in hooks:
                for handler in entry.get("hooks", [entry]):
                    out.append(handler.get("bash") or handler["command"])
        return out

    def call(self, project: Path, **extra: str) -> list[dict[str, Any]]:
        """One call of the agent's: every catch-all at once, as the agent runs them."""
        variables = {"CLAUDE_PROJECT_DIR": str(project)} if self.agent.name == "claude" else {}
        procs = [
            subprocess.Popen(
                ["bash", "-c", command],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=project,
                env=self.env(**variables, **extra),
            )
            for command in self.catch_alls(project)
        ]
        body = json.dumps(self.agent.body(project)).encode()
        answers = []
        for proc in procs:
            out, err = proc.communicate(body, timeout=TIMEOUT_S)
            assert proc.returncode == 0, err
            answers.append(json.loads(out))
        return answers

    def ran(self) -> list[str]:
        return sorted(self.count.read_text().split()) if self.count.exists() else []

    def blocks(self) -> list[dict[str, Any]]:
        records = []
        for log in sorted((self.state / "audit").glob("audit-*.jsonl")):
            for line in log.read_text().splitlines():
                record = json.loads(line)
                if record.get("decision") == "block":
                    records.append(record)
        return records


def _denies(answer: dict[str, Any]) -> bool:
    text = json.dumps(answer)
    return "deny" in text and "protected branch" in text


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_installed_at_both_scopes_each_hook_runs_once_per_call(tmp_path: Path, agent: str) -> None:
    s = Setup(tmp_path, AGENTS[agent])
    s.write_settings(s.home, "user")
    s.write_settings(s.project, "project")
    first = s.cli(agent, "install", "--scope", "user")
    assert first.returncode == 0, first.stderr
    second = s.cli(agent, "install")
    assert second.returncode == 0, second.stderr
    assert (
        f"note: {s.home / s.agent.user} routes {DISPLAY[agent]} to triohooks too (a "
        "user-scope install): each hook still runs once per call" in second.stderr
    )
    commands = s.catch_alls(s.project)
    assert len(commands) == 2
    assert "--scope user" in commands[0] and "--scope project" in commands[1]
    answers = s.call(s.project, TRIOHOOKS_NO_AUTOSTART="1")
    assert s.ran() == ["native", "project", "user"]
    assert [_denies(a) for a in answers] == [True, False]  # the user scope's runs your guards
    assert len(s.blocks()) == 1


def test_through_a_running_serve_too(tmp_path: Path) -> None:
    s = Setup(tmp_path, AGENTS["claude"])
    s.write_settings(s.home, "user")
    s.write_settings(s.project, "project")
    assert s.cli("claude", "install", "--scope", "user").returncode == 0
    assert s.cli("claude", "install").returncode == 0
    with subprocess.Popen(
        [sys.executable, "-m", "triohooks", "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=s.env(),
        cwd=tmp_path,
    ) as serve:
        try:
            assert serve.stdout is not None
            assert b"listening on" in serve.stdout.readline()
            for n in (1, 2):
                answers = s.call(s.project, TRIOHOOKS_NO_AUTOSTART="1")
                assert s.ran() == sorted(["native", "project", "user"] * n)
                assert [_denies(a) for a in answers] == [True, False]
                assert len(s.blocks()) == n
            assert "serve: answers the relays" in s.cli("claude", "validate").stdout
        finally:
            serve.terminate()
            serve.wait(timeout=TIMEOUT_S)


def test_a_teammates_project_install_beside_your_user_install(tmp_path: Path) -> None:
    """The project's catch-alls came with the repository (a teammate installed and committed
    them); you have your own user-scope install: once per call all the same."""
    s = Setup(tmp_path, AGENTS["claude"])
    s.write_settings(s.project, "project")
    assert s.cli("claude", "install").returncode == 0  # the teammate's, in their checkout
    clone = tmp_path / "clone"
    shutil.copytree(s.project, clone)
    s.write_settings(s.home, "user")
    assert s.cli("claude", "install", "--scope", "user").returncode == 0
    trusted = s.cli("claude", "trust", "--workspace", str(clone), cwd=clone)
    assert trusted.returncode == 0, trusted.stderr
    answers = s.call(clone, TRIOHOOKS_NO_AUTOSTART="1")
    assert s.ran() == ["native", "project", "user"]
    assert [_denies(a) for a in answers] == [True, False]
    assert len(s.blocks()) == 1


def test_an_older_catch_all_that_names_no_scope_is_reported_and_refreshed(tmp_path: Path) -> None:
    s = Setup(tmp_path, AGENTS["claude"])
    settings = s.write_settings(s.project, "project")
    assert s.cli("claude", "install").returncode == 0
    text = settings.read_text()
    settings.write_text(text.replace(" --scope project", ""))  # as an older triohooks wrote it
    checked = s.cli("claude", "validate")
    assert checked.returncode == 1
    assert "that do not say they are its project scope's" in checked.stdout
    assert "run `triohooks claude install --scope project` again" in checked.stdout
    s.write_settings(s.home, "user")
    beside = s.cli("claude", "install", "--scope", "user")
    assert "holds catch-alls of an older triohooks that name no scope" in beside.stderr
    refreshed = s.cli("claude", "install")
    assert refreshed.returncode == 0, refreshed.stderr
    assert settings.read_text() == text
    assert s.cli("claude", "validate").returncode == 0


def test_a_user_catch_all_the_agent_skips_does_not_lead(tmp_path: Path) -> None:
    """Gemini's ``hooksConfig.disabled`` naming the user scope's catch-all: Gemini does not
    run it, so the project's catch-all runs your triohooks hooks for that event (not nobody)."""
    s = Setup(tmp_path, AGENTS["gemini"])
    s.write_settings(s.home, "user")
    s.write_settings(s.project, "project")
    assert s.cli("gemini", "install", "--scope", "user").returncode == 0
    assert s.cli("gemini", "install").returncode == 0
    user = s.home / s.agent.user
    doc = json.loads(user.read_text())
    (skipped,) = s.catch_alls(s.project)[:1]
    doc["hooksConfig"] = {"disabled": [skipped]}
    user.write_text(json.dumps(doc))
    table = load_agent_table("gemini", project=s.project, home=s.home, config_dir=s.config)
    assert ("BeforeTool", "project") in table.routed
    assert ("BeforeTool", "user") not in table.routed
    (project_catch_all,) = s.catch_alls(s.project)[1:]
    done = subprocess.run(
        ["bash", "-c", project_catch_all],
        input=json.dumps(s.agent.body(s.project)),
        capture_output=True,
        text=True,
        cwd=s.project,
        env=s.env(TRIOHOOKS_NO_AUTOSTART="1"),
        timeout=TIMEOUT_S,
        check=False,
    )
    assert _denies(json.loads(done.stdout)), done.stderr
    assert "native" in s.ran()
