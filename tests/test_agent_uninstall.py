"""``uninstall`` gives every agent's files back byte for byte, and keeps what you edited since.

For each agent, with the real CLI: settings files with hooks and without a ``hooks`` member,
with and without a final newline, and no file at all; each installed and uninstalled as it was
(the bytes compared), and with an edit of the user's made between the two (the result is the
original with the same edit). Codex's ``config.toml``, which install also writes (its review
of the catch-alls), the same way, with an edit appended after the install."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from .helpers import cli_here

pytestmark = pytest.mark.slow

#: Where ``install`` (project scope) writes, per agent.
SETTINGS = {
    "claude": ".claude/settings.json",
    "gemini": ".gemini/settings.json",
    "codex": ".codex/hooks.json",
    "qwen": ".qwen/settings.json",
    "copilot": ".github/hooks/triohooks.json",
    "cursor": ".cursor/hooks.json",
}
#: A hook of each agent's own, in its settings format.
HOOKS = {
    "claude": '{"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "exit 0"}]}]}',
    "gemini": '{"BeforeTool": [{"matcher": "run_shell_command", "hooks": [{"type": "command", "command": "exit 0", "timeout": 2000}]}]}',
    "codex": '{"PreToolUse": [{"hooks": [{"type": "command", "command": "exit 0"}]}]}',
    "qwen": '{"PreToolUse": [{"hooks": [{"type": "command", "command": "exit 0"}]}]}',
    "copilot": '{"preToolUse": [{"type": "command", "bash": "exit 0", "timeoutSec": 5}]}',
    "cursor": '{"beforeShellExecution": [{"command": "exit 0"}]}',
}
#: What else a person keeps in the file (odd spacing and all).
OTHER = {
    "claude": '"permissions":  {"allow": ["Bash(npm test)"]}',
    "gemini": '"general": {"vimMode": true}',
    "codex": '"note":"mine"',
    "qwen": '"ui": {"theme": "dark"}',
    "copilot": '"version": 1',
    "cursor": '"version": 1',
}


def _files(agent: str) -> dict[str, str | None]:
    """The settings files to try, by name: None is no file."""
    hooks, other = HOOKS[agent], OTHER[agent]
    return {
        "hooks": f'{{\n  {other},\n  "hooks": {hooks}\n}}\n',
        "hooks, no final newline": f'{{ {other}, "hooks":{hooks} }}',
        "no hooks": f"{{\n  {other}\n}}\n",
        "no hooks, no final newline": f"{{{other}}}",
        "no file": None,
    }


class Dirs:
    def __init__(self, root: Path, agent: str) -> None:
        self.agent = agent
        self.home = root / "home"
        self.ws = root / "ws"
        self.config = root / "config"
        for d in (self.home, self.ws, self.config):
            d.mkdir(parents=True)
        self.settings = self.ws / SETTINGS[agent]
        self.settings.parent.mkdir(parents=True, exist_ok=True)
        self.codex_config = self.home / ".codex" / "config.toml"

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("TRIOHOOKS")},
            "HOME": str(self.home),
            "TRIOHOOKS_CONFIG_DIR": str(self.config),
            "TRIOHOOKS_STATE_DIR": str(self.home / "state"),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        }
        done = cli_here([self.agent, *args, "--workspace", str(self.ws)], cwd=self.ws, env=env)
        assert done.returncode == 0, done.stderr
        return done


def _edit_json(text: str) -> str:
    """A member the user adds at the top of the object, after the install."""
    at = text.index("{") + 1
    return text[:at] + '"editedAfter": true, ' + text[at:]


def _installed(root: Path, agent: str) -> Iterator[tuple[str, str | None, Dirs]]:
    """Each case of :func:`_files`, written and installed."""
    for n, (case, before) in enumerate(_files(agent).items()):
        d = Dirs(root / str(n), agent)
        if before is not None:
            d.settings.write_text(before)
        d.cli("install")
        assert "triohooks-relay" in d.settings.read_text(), case
        yield case, before, d


@pytest.mark.parametrize("agent", sorted(SETTINGS))
def test_uninstall_gives_the_file_back_byte_for_byte(tmp_path: Path, agent: str) -> None:
    for case, before, d in _installed(tmp_path, agent):
        d.cli("uninstall")
        if before is None:
            assert not d.settings.exists(), case
        else:
            assert d.settings.read_text() == before, case
        assert not (d.settings.parent / "triohooks-hooks.json").exists()
        assert not (d.config / "installed.json").exists(), case  # nothing kept for it


@pytest.mark.parametrize("agent", sorted(SETTINGS))
def test_an_edit_made_after_install_survives_uninstall(tmp_path: Path, agent: str) -> None:
    for case, before, d in _installed(tmp_path, agent):
        d.settings.write_text(_edit_json(d.settings.read_text()))
        d.cli("uninstall")
        after = d.settings.read_text()
        if before is not None:
            assert after == _edit_json(before), case
        else:  # the file install made stays, with your member in it and no hooks
            doc = json.loads(after)
            assert doc.get("editedAfter") is True and "hooks" not in doc, case


@pytest.mark.parametrize("agent", sorted(SETTINGS))
def test_hooks_added_to_the_moved_file_go_back_with_the_rest(tmp_path: Path, agent: str) -> None:
    """triohooks-hooks.json is where your hooks live while installed: what you add there is
    in the settings file after uninstall, also where the install added the hooks member."""
    for _, _, d in _installed(tmp_path, agent):
        moved = d.settings.parent / "triohooks-hooks.json"
        if agent == "copilot":
            moved = d.settings.parent.parent / "triohooks-hooks.json"
        mine = json.loads(HOOKS[agent])
        moved.write_text(json.dumps(mine))
        d.cli("uninstall")
        doc = json.loads(d.settings.read_text())
        assert doc["hooks"] == mine


CONFIGS = {
    "final newline": 'model = "o3"\n\n[profiles.a]\nx = 1\n',
    "no final newline": 'model = "o3"\n[profiles.a]\nx = 1',
    "no file": None,
}


@pytest.mark.parametrize("case", sorted(CONFIGS))
@pytest.mark.parametrize("edited", [False, True])
def test_codex_config_toml_is_given_back_too(tmp_path: Path, case: str, edited: bool) -> None:
    d = Dirs(tmp_path, "codex")
    before = CONFIGS[case]
    d.settings.write_text(f'{{"hooks": {HOOKS["codex"]}}}\n')
    if before is not None:
        d.codex_config.parent.mkdir(parents=True)
        d.codex_config.write_text(before)
    d.cli("install")
    assert "[hooks.state." in d.codex_config.read_text()
    edit = '[profiles.b]\nmodel = "o4"\n'
    if edited:  # appended after the install, as an editor does
        with d.codex_config.open("a") as f:
            f.write(edit)
    d.cli("uninstall")
    if not edited:
        if before is None:
            assert not d.codex_config.exists()
        else:
            assert d.codex_config.read_text() == before
        return
    ended = before is None or before == "" or before.endswith("\n")
    assert d.codex_config.read_text() == (before or "") + ("" if ended else "\n") + edit


def test_two_codex_installs_give_config_toml_back_in_either_order(tmp_path: Path) -> None:
    """The user scope's and a project's install both record reviews in config.toml; they are
    uninstalled in the order they were installed (not the reverse), and it is as it was."""
    d = Dirs(tmp_path, "codex")
    before = 'model = "o3"\n'
    d.codex_config.parent.mkdir(parents=True)
    d.codex_config.write_text(before)
    (d.home / ".codex" / "hooks.json").write_text(f'{{"hooks": {HOOKS["codex"]}}}\n')
    d.settings.write_text(f'{{"hooks": {HOOKS["codex"]}}}\n')
    d.cli("install", "--scope", "user")
    d.cli("install")
    d.cli("uninstall", "--scope", "user")
    assert "ws/.codex/hooks.json:pre_tool_use" in d.codex_config.read_text()
    d.cli("uninstall")
    assert d.codex_config.read_text() == before


def test_a_broken_install_record_is_named_and_nothing_changes(tmp_path: Path) -> None:
    d = Dirs(tmp_path, "claude")
    before = _files("claude")["no hooks"]
    assert before is not None
    d.settings.write_text(before)
    d.cli("install")
    installed = d.settings.read_text()
    (d.config / "installed.json").write_text("[1, 2]")
    done = cli_here(
        ["claude", "uninstall", "--workspace", str(d.ws)],
        env={**os.environ, "HOME": str(d.home), "TRIOHOOKS_CONFIG_DIR": str(d.config)},
    )
    assert done.returncode == 1
    assert f"triohooks: {d.config / 'installed.json'}: not a triohooks install record" in (
        done.stderr
    )
    assert "move it away to go on" in done.stderr and "Traceback" not in done.stderr
    assert d.settings.read_text() == installed
    (d.config / "installed.json").unlink()
    d.cli("uninstall")  # from the files themselves: the hooks member install added stays
    assert json.loads(d.settings.read_text()) == {**json.loads(before), "hooks": {}}
