"""``triohooks codex install`` records the catch-all as reviewed in ``~/.codex/config.toml`` (Codex
runs no hook it has not reviewed), uninstall takes it out and puts back the user's own reviews;
``validate`` says when a review is missing. The real CLI on real files."""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from triohooks.agents.codex_trust import hook_state_key, hook_states, trusted_hash

from .helpers import cli_here

pytestmark = pytest.mark.slow

USER_HOOKS: dict[str, Any] = {
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [{"type": "command", "command": "./guard.sh", "timeout": 5}],
            }
        ]
    }
}


class Codex:
    def __init__(self, root: Path) -> None:
        self.home = root / "home"
        self.g = root / "g"
        self.ws = root / "ws"
        for d in (self.home / ".codex", self.g, self.ws):
            d.mkdir(parents=True)
        self.hooks = self.home / ".codex" / "hooks.json"
        self.config = self.home / ".codex" / "config.toml"

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {
            **os.environ,
            "HOME": str(self.home),
            "TRIOHOOKS_CONFIG_DIR": str(self.g),
            "TRIOHOOKS_STATE_DIR": str(self.home / "state"),
        }
        return cli_here(["codex", *args, "--workspace", str(self.ws)], env=env)

    def states(self) -> Any:
        doc = tomllib.loads(self.config.read_text()) if self.config.exists() else {}
        return doc.get("hooks", {}).get("state", {})


@pytest.fixture
def c(tmp_path: Path) -> Codex:
    return Codex(tmp_path)


def test_install_records_the_catch_all_as_reviewed_and_uninstall_restores_the_users(
    c: Codex,
) -> None:
    original_hooks = json.dumps(USER_HOOKS, indent=2) + "\n"
    c.hooks.write_text(original_hooks)
    key = hook_state_key(c.hooks, "PreToolUse", 0, 0)
    users = trusted_hash(
        USER_HOOKS["hooks"]["PreToolUse"][0]["hooks"][0], event="PreToolUse", matcher="Bash"
    )
    original_config = (
        'model = "gpt-5"\n\n'
        f"[hooks.state.{json.dumps(key)}]\ntrusted_hash = {json.dumps(users)}\n\n"
        '[projects."/x"]\ntrust_level = "trusted"\n'
    )
    c.config.write_text(original_config)
    done = c.cli("install", "--scope", "user")
    assert done.returncode == 0, done.stderr
    routed = json.loads(c.hooks.read_text())["hooks"]
    expected = hook_states(str(c.hooks), routed)
    # A catch-all for each event some hook handles (the user's PreToolUse; no triohooks hook
    # of their own) and the session start, each recorded as reviewed; PreToolUse's replaces
    # the user's review.
    assert set(routed) == {"PreToolUse", "SessionStart"}
    assert key in expected and len(expected) == len(routed)
    assert {k: c.states()[k] for k in expected} == {
        k: {"trusted_hash": v} for k, v in expected.items()
    }
    assert c.states()[key] == {"trusted_hash": expected[key]}  # the catch-all, not the user's
    assert tomllib.loads(c.config.read_text())["projects"] == {"/x": {"trust_level": "trusted"}}
    assert "recorded the catch-all as reviewed" in done.stderr
    assert c.cli("validate").returncode == 0, c.cli("validate").stdout
    done = c.cli("uninstall", "--scope", "user")
    assert done.returncode == 0, done.stderr
    assert c.hooks.read_text() == original_hooks
    assert c.states()[key] == {"trusted_hash": users}
    assert c.config.read_text() == original_config  # byte for byte, the review in its place
    assert not (c.g / "codex-review.json").exists()


def test_a_missing_review_is_a_validate_problem(c: Codex) -> None:
    c.hooks.write_text(json.dumps(USER_HOOKS))
    assert c.cli("install", "--scope", "user").returncode == 0
    c.config.write_text("")  # the review lost (a config.toml rewritten by hand)
    done = c.cli("validate")
    assert done.returncode == 1
    assert "not recorded as reviewed" in done.stdout and "skips them without a word" in done.stdout


def test_an_inline_state_table_is_not_edited_blindly(c: Codex) -> None:
    c.hooks.write_text(json.dumps(USER_HOOKS))
    key = hook_state_key(c.hooks, "PreToolUse", 0, 0)
    inline = f'[hooks]\nstate = {{ {json.dumps(key)} = {{ trusted_hash = "sha256:00" }} }}\n'
    c.config.write_text(inline)
    done = c.cli("install", "--scope", "user")
    assert done.returncode == 1 and "nothing changed" in done.stderr
    assert "Traceback" not in done.stderr
    assert c.config.read_text() == inline and json.loads(c.hooks.read_text()) == USER_HOOKS
