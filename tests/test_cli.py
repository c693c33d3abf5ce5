"""The command line: exit codes, messages with file/event/index/field, never a traceback."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from .helpers import (
    OUTCOME_KEYS,
    RUN_KEYS,
    bash_hook,
    run_cli,
    write_json_hooks,
    write_toml_hooks,
)

pytestmark = pytest.mark.slow


def cli(tmp_path: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    (tmp_path / "ws").mkdir(exist_ok=True)
    return run_cli(
        *args,
        config_dir=tmp_path / "g",
        state_dir=tmp_path / "state",
        cwd=tmp_path / "ws",
        stdin=stdin,
    )


def test_validate_broken_file_names_file_event_index_field(tmp_path: Path) -> None:
    path = write_toml_hooks(
        tmp_path / "g",
        '[[hooks.pre_tool]]\ncommand = "ok"\n[[hooks.pre_tool]]\ncommand = ""\nmatch = "["\n',
    )
    r = cli(tmp_path, "validate")
    assert r.returncode == 1
    assert f"{path}: pre_tool[1].command: must not be empty" in r.stderr
    assert f"{path}: pre_tool[1].match:" in r.stderr
    assert "Traceback" not in r.stderr + r.stdout


def test_validate_ok(tmp_path: Path) -> None:
    write_toml_hooks(tmp_path / "g", '[[hooks.pre_tool]]\ncommand = "true"\n')
    r = cli(tmp_path, "validate")
    assert r.returncode == 0 and "ok: 1 hook" in r.stdout


def test_fire_exit_codes(tmp_path: Path) -> None:
    write_toml_hooks(
        tmp_path / "g",
        '[[hooks.pre_tool]]\nmatch = "bash"\ncommand = "exit 2"\n'
        '[[hooks.prompt_submit]]\ncommand = "echo bad prompt >&2; exit 2"\n',
    )
    blocked = cli(tmp_path, "fire", "pre_tool", stdin='{"tool": "bash", "args": {}}')
    assert blocked.returncode == 2
    outcome = json.loads(blocked.stdout)
    assert (
        outcome["blocked"]
        and outcome["message_for_model"] == "blocked by pre_tool hook: blocked by hook"
    )
    assert set(outcome) >= OUTCOME_KEYS
    assert set(outcome["runs"][0]) >= RUN_KEYS
    ok = cli(tmp_path, "fire", "pre_tool_use", stdin='{"tool_name": "ls", "arguments": {}}')
    assert ok.returncode == 0 and json.loads(ok.stdout)["runs"] == []
    prompt = cli(tmp_path, "fire", "prompt_submit", stdin='{"prompt": "hi"}')
    assert prompt.returncode == 4 and json.loads(prompt.stdout)["reason"] == "bad prompt"


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (("fire", "pre_tool_usage"), "{}", "unknown event 'pre_tool_usage'"),
        (("fire", "pre_tool"), "{not json", "not valid JSON"),
        (("fire", "pre_tool"), "[1]", "must be a JSON object"),
        (("fire", "pre_tool"), '{"args": 5}', "pre_tool payload"),
        (("bogus",), "", "invalid choice"),
        (("fire", "pre_tool", "--workspace", "/nonexistent/dir"), "{}", "is not a directory"),
        (("fire", "pre_tool", "--config", "/nonexistent/h.toml"), "{}", "file not found"),
    ],
)
def test_usage_errors_exit_1_without_traceback(tmp_path: Path, args, stdin, message) -> None:
    r = cli(tmp_path, *args, stdin=stdin)
    assert r.returncode == 1, r
    assert message in r.stderr
    assert "Traceback" not in r.stderr


def test_fire_with_config_error_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    write_toml_hooks(tmp_path / "g", f'[[hooks.pre_tool]]\ncommand = "touch {marker}"\nbogus = 1\n')
    r = cli(tmp_path, "fire", "pre_tool", stdin="{}")
    assert r.returncode == 1 and "pre_tool[0].bogus: unknown field" in r.stderr
    assert not marker.exists()


def test_list_json_and_trust_flow(tmp_path: Path) -> None:
    write_json_hooks(tmp_path / "ws/.agents", [bash_hook("w", 'echo \'{"decision": "block"}\'')])
    listed = json.loads(cli(tmp_path, "list", "--json").stdout)
    assert listed["trust"]["state"] == "new"
    assert [(h["id"], h["trusted"]) for h in listed["hooks"]] == [("user:w", False)]
    assert listed["hooks"][0]["matcher"] is None and listed["hooks"][0]["on_error"] == "warn"
    untrusted = cli(tmp_path, "fire", "pre_tool", stdin="{}")
    assert untrusted.returncode == 0  # untrusted workspace hooks never run
    human = cli(tmp_path, "list").stdout
    assert "NOT RUN: workspace hooks are new" in human
    trusted = cli(tmp_path, "trust")
    assert trusted.returncode == 0 and "trusted" in trusted.stdout
    assert cli(tmp_path, "fire", "pre_tool", stdin="{}").returncode == 2
    write_json_hooks(tmp_path / "ws/.agents", [bash_hook("w", "exit 0")])
    assert json.loads(cli(tmp_path, "list", "--json").stdout)["trust"]["state"] == "changed"
    assert cli(tmp_path, "fire", "pre_tool", "--trust", stdin="{}").returncode == 0


def test_fire_drains_background_hooks_before_exit(tmp_path: Path) -> None:
    marker = tmp_path / "bg"
    write_toml_hooks(
        tmp_path / "g", f'[[hooks.post_tool]]\ncommand = "sleep 0.2; cat > {marker}"\n'
    )
    r = cli(
        tmp_path,
        "fire",
        "post_tool",
        stdin='{"tool": "bash", "args": {"command": "ls"}, "result": "ok"}',
    )
    assert r.returncode == 0 and json.loads(r.stdout)["queued"] is True
    assert json.loads(marker.read_text())["result"] == "ok"
