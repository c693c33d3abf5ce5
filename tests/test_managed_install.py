"""``triohooks <agent> install|uninstall --managed [--out DIR]``: the catch-alls in each agent's
managed (system-wide) form, and only them taken out again. Every path is under ``tmp_path``:
``--out``, or the system path under ``$TRIOHOOKS_MANAGED_ROOT`` (the real Claude Code and Codex
reading what this writes: tests/interop/test_managed_install.py)."""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import triohooks_cli
from triohooks.agents import managed
from triohooks.agents.config import catch_all_scope, is_ours, parse_hooks
from triohooks.agents.spec import MANAGED, Level, managed_path
from triohooks.agents.tamper import switch_alarms
from triohooks.config.events import AGENT_EVENTS

AGENTS = sorted(MANAGED)


def cli(tmp_path: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    extra: dict[str, Any] = {"HOME": str(tmp_path / "home"), **env}
    return triohooks_cli(*argv, cwd=tmp_path, config_dir=tmp_path / "cfg", **extra)


def hooks_of(agent: str, path: Path) -> dict[str, Any]:
    if agent == "codex":
        hooks = tomllib.loads(path.read_text())["hooks"]
        return {k: v for k, v in hooks.items() if k != "managed_dir"}
    hooks = json.loads(path.read_text())["hooks"]
    assert isinstance(hooks, dict)
    return hooks


@pytest.mark.parametrize("agent", AGENTS)
def test_out_writes_the_agents_managed_form_with_every_event_routed(
    tmp_path: Path, agent: str
) -> None:
    out = tmp_path / "mdm"
    done = cli(tmp_path, agent, "install", "--managed", "--out", str(out))
    assert done.returncode == 0, done.stderr
    form = MANAGED[agent]  # type: ignore[index]
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [form.name, managed.MANIFEST_NAME, managed.README_NAME]
    )
    path = out / form.name
    hooks = hooks_of(agent, path)
    assert set(hooks) == set(AGENT_EVENTS[agent])
    level = Level("managed", path, False)
    parsed = parse_hooks(agent, level, str(path), hooks, [], keep_ours=True)  # type: ignore[arg-type]
    assert len(parsed) == len(hooks) and all(is_ours(h) for h in parsed)
    assert {catch_all_scope(h) for h in parsed} == {""}  # no settings level: every hook
    for hook in parsed:  # nothing of this user or this install: found per user at run time
        command = hook.command or ""
        assert "exec triohooks-relay" in command and "exit 2" in command
        assert str(tmp_path) not in command and str(Path.home()) not in command
        assert os.path.dirname(os.__file__) not in command
    manifest = json.loads((out / managed.MANIFEST_NAME).read_text())
    assert manifest["deliver_to"]["linux"] == f"{form.linux}/{form.name}"
    readme = (out / managed.README_NAME).read_text()
    assert f"{form.linux}/{form.name}" in readme and f"{form.macos}/{form.name}" in readme


def test_claude_code_managed_settings_allow_managed_hooks_only(tmp_path: Path) -> None:
    out = tmp_path / "mdm"
    assert cli(tmp_path, "claude", "install", "--managed", "--out", str(out)).returncode == 0
    settings = json.loads((out / "managed-settings.json").read_text())
    assert settings["allowManagedHooksOnly"] is True


def test_codex_requirements_carry_the_hooks_and_allow_managed_hooks_only(tmp_path: Path) -> None:
    out = tmp_path / "mdm"
    assert cli(tmp_path, "codex", "install", "--managed", "--out", str(out)).returncode == 0
    doc = tomllib.loads((out / "requirements.toml").read_text())
    assert doc["allow_managed_hooks_only"] is True
    # Where the file is read on the machine it is delivered to, not the --out directory.
    assert doc["hooks"]["managed_dir"] == "/etc/codex"
    group = doc["hooks"]["PreToolUse"][0]["hooks"][0]
    assert group["type"] == "command" and group["timeout"] > 0


def test_without_out_the_system_path_is_written_world_readable(tmp_path: Path) -> None:
    root = tmp_path / "image"
    done = cli(tmp_path, "claude", "install", "--managed", TRIOHOOKS_MANAGED_ROOT=str(root))
    assert done.returncode == 0, done.stderr
    path = root / "etc" / "claude-code" / "managed-settings.json"
    assert f"written {path}" in done.stdout
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert not (path.parent / managed.README_NAME).exists()  # the notes are for --out
    again = cli(tmp_path, "claude", "install", "--managed", TRIOHOOKS_MANAGED_ROOT=str(root))
    assert again.returncode == 0 and "nothing to change" in again.stdout
    gone = cli(tmp_path, "claude", "uninstall", "--managed", TRIOHOOKS_MANAGED_ROOT=str(root))
    assert gone.returncode == 0, gone.stderr
    assert list(path.parent.iterdir()) == []


def test_the_agents_own_variable_moves_the_system_path(tmp_path: Path) -> None:
    target = tmp_path / "gemini-system.json"
    env = {"GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(target)}
    assert managed_path("gemini", env) == target
    done = cli(tmp_path, "gemini", "install", "--managed", **env)
    assert done.returncode == 0, done.stderr
    assert set(hooks_of("gemini", target)) == set(AGENT_EVENTS["gemini"])
    assert "no managed-only switch" in done.stderr


def test_macos_paths() -> None:
    assert managed_path("claude", {}, "darwin") == Path(
        "/Library/Application Support/ClaudeCode/managed-settings.json"
    )
    assert managed_path("claude", {}, "linux") == Path("/etc/claude-code/managed-settings.json")
    assert managed_path("codex", {}, "darwin") == Path("/etc/codex/requirements.toml")


ORG_JSON = '{\n  "permissions": {"deny": ["Bash(curl:*)"]},\n  "allowManagedHooksOnly": false\n}\n'
ORG_TOML = 'allowed_approval_policies = ["on-request"]\n\n[features]\nweb_search = false\n'


@pytest.mark.parametrize(("agent", "org"), [("claude", ORG_JSON), ("codex", ORG_TOML)])
def test_an_organisations_file_keeps_its_policy_and_gets_it_back_byte_for_byte(
    tmp_path: Path, agent: str, org: str
) -> None:
    out = tmp_path / "mdm"
    out.mkdir()
    path = out / MANAGED[agent].name  # type: ignore[index]
    path.write_text(org)
    assert cli(tmp_path, agent, "install", "--managed", "--out", str(out)).returncode == 0
    if agent == "claude":
        doc = json.loads(path.read_text())
        assert doc["permissions"] == {"deny": ["Bash(curl:*)"]}
        assert doc["allowManagedHooksOnly"] is True
    else:
        doc = tomllib.loads(path.read_text())
        assert doc["allowed_approval_policies"] == ["on-request"]
        assert doc["features"] == {"web_search": False}  # not taken into [hooks]
        assert doc["allow_managed_hooks_only"] is True
    done = cli(tmp_path, agent, "uninstall", "--managed", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert path.read_text() == org
    assert sorted(p.name for p in out.iterdir()) == [path.name]


def test_uninstall_keeps_an_edit_made_since(tmp_path: Path) -> None:
    out = tmp_path / "mdm"
    assert cli(tmp_path, "codex", "install", "--managed", "--out", str(out)).returncode == 0
    path = out / "requirements.toml"
    path.write_text(path.read_text() + "\n[features]\nweb_search = false\n")
    assert cli(tmp_path, "codex", "uninstall", "--managed", "--out", str(out)).returncode == 0
    assert tomllib.loads(path.read_text()) == {"features": {"web_search": False}}


def test_a_file_whose_own_hooks_would_be_replaced_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "mdm"
    out.mkdir()
    theirs = {"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "audit.sh"}]}]}}
    (out / "managed-settings.json").write_text(json.dumps(theirs))
    done = cli(tmp_path, "claude", "install", "--managed", "--out", str(out))
    assert done.returncode == 1 and "holds hooks of its own" in done.stderr
    assert json.loads((out / "managed-settings.json").read_text()) == theirs
    assert not (out / managed.MANIFEST_NAME).exists()
    (out / "requirements.toml").write_text("allow_managed_hooks_only = false\n")
    done = cli(tmp_path, "codex", "install", "--managed", "--out", str(out))
    assert done.returncode == 1 and "allow_managed_hooks_only" in done.stderr


def test_uninstall_removes_nothing_it_did_not_write(tmp_path: Path) -> None:
    out = tmp_path / "mdm"
    out.mkdir()
    (out / "managed-settings.json").write_text(ORG_JSON)
    done = cli(tmp_path, "claude", "uninstall", "--managed", "--out", str(out))
    assert done.returncode == 1 and "was not installed by" in done.stderr
    assert (out / "managed-settings.json").read_text() == ORG_JSON


def test_an_agent_without_a_managed_form_says_so(tmp_path: Path) -> None:
    done = cli(tmp_path, "copilot", "install", "--managed", "--out", str(tmp_path / "o"))
    assert done.returncode == 1 and "has no managed" in done.stderr
    assert not (tmp_path / "o").exists()


def test_out_without_managed_is_refused(tmp_path: Path) -> None:
    done = cli(tmp_path, "claude", "install", "--out", str(tmp_path / "o"))
    assert done.returncode == 1 and "--out goes with --managed" in done.stderr


def test_dry_run_shows_the_change_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "mdm"
    done = cli(tmp_path, "claude", "install", "--managed", "--out", str(out), "--dry-run")
    assert done.returncode == 0 and '"allowManagedHooksOnly": true' in done.stdout
    assert not out.exists()


def test_a_system_path_that_cannot_be_written_says_how_to_go_on(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    done = cli(tmp_path, "claude", "install", "--managed", TRIOHOOKS_MANAGED_ROOT=str(blocker))
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert str(blocker) in done.stderr
    assert "run as root" in done.stderr and "--out DIR" in done.stderr


def test_permission_denied_names_the_path_and_errno(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As root (these tests may run as root) no mode denies a write: the error is raised."""
    target = tmp_path / "root" / "etc" / "claude-code" / "managed-settings.json"

    def denied(path: Path, data: bytes, **_: Any) -> None:
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(managed, "write_file_atomic", denied)
    done = cli(
        tmp_path, "claude", "install", "--managed", TRIOHOOKS_MANAGED_ROOT=str(tmp_path / "root")
    )
    assert done.returncode == 1
    assert f"cannot write {target}: Permission denied (EACCES)" in done.stderr
    assert "run as root (sudo), or use --out DIR" in done.stderr


def test_the_tamper_alarm_does_not_take_a_managed_install_for_a_switch(tmp_path: Path) -> None:
    """allowManagedHooksOnly beside triohooks' own managed catch-alls turns nothing of
    triohooks off; in an organisation's file without them it does, and is said."""
    out = tmp_path / "mdm"
    assert cli(tmp_path, "claude", "install", "--managed", "--out", str(out)).returncode == 0
    path = out / "managed-settings.json"
    level = Level("managed", path, False)
    ours = json.loads(path.read_text())
    assert not [a for a in switch_alarms("claude", level, ours) if "allowManagedHooksOnly" in a]
    theirs = {"allowManagedHooksOnly": True}
    assert any("allowManagedHooksOnly" in a for a in switch_alarms("claude", level, theirs))


def test_managed_takes_no_http_transport(tmp_path: Path) -> None:
    out = tmp_path / "o"
    done = cli(tmp_path, "claude", "install", "--managed", "--out", str(out), "--transport", "http")
    assert done.returncode == 1 and "relay catch-alls" in done.stderr
    assert not out.exists()


def test_validate_takes_a_managed_install_for_one(tmp_path: Path) -> None:
    """A managed file routes to triohooks with no ``triohooks-hooks.json`` beside it (it moves
    no hooks): that is no hook gone."""
    root = str(tmp_path / "image")
    assert (
        cli(tmp_path, "claude", "install", "--managed", TRIOHOOKS_MANAGED_ROOT=root).returncode == 0
    )
    done = cli(tmp_path, "claude", "validate", TRIOHOOKS_MANAGED_ROOT=root)
    assert "managed-settings.json PreToolUse" in done.stdout  # its catch-alls are seen
    assert "its hooks are gone" not in done.stdout
