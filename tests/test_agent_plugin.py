"""``triohooks claude plugin``: a Claude Code plugin whose hooks are triohooks' catch-alls (the
real Claude Code loading it: tests/interop/test_claude_code_triohooks.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import triohooks_cli
from triohooks.agents.config import catch_all_scope, is_ours, parse_hooks
from triohooks.agents.spec import Level
from triohooks.config.events import AGENT_EVENTS


@pytest.mark.parametrize("local", [False, True])
def test_the_plugin_routes_every_event_to_triohooks(tmp_path: Path, local: bool) -> None:
    out = tmp_path / "plugin"
    argv = ["claude", "plugin", "--out", str(out)] + (["--local"] if local else [])
    done = triohooks_cli(*argv, cwd=tmp_path, config_dir=tmp_path / "cfg")
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "triohooks" and manifest["version"]
    hooks = json.loads((out / "hooks" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == set(AGENT_EVENTS["claude"])
    parsed = parse_hooks("claude", Level("plugin", out, False), "plugin", hooks, [], keep_ours=True)
    assert len(parsed) == len(hooks) and all(is_ours(h) for h in parsed)
    # A plugin is no settings level: its catch-alls name no scope (they run every hook).
    assert {catch_all_scope(h) for h in parsed} == {""}
    command = parsed[0].command or ""
    assert ("/fronts claude" in command) is local
    assert ("exec triohooks-relay claude" in command) is not local


def test_the_plugin_is_not_overwritten_without_force(tmp_path: Path) -> None:
    out = tmp_path / "plugin"
    assert (
        triohooks_cli(
            "claude", "plugin", "--out", str(out), cwd=tmp_path, config_dir=tmp_path
        ).returncode
        == 0
    )
    again = triohooks_cli("claude", "plugin", "--out", str(out), cwd=tmp_path, config_dir=tmp_path)
    assert again.returncode == 1 and "already there" in again.stderr
    forced = triohooks_cli(
        "claude", "plugin", "--out", str(out), "--force", cwd=tmp_path, config_dir=tmp_path
    )
    assert forced.returncode == 0
