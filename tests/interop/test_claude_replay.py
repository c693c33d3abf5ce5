"""``triohooks replay`` on a transcript the real Claude Code wrote: a session where one of
Claude Code's own hooks blocked a call, replayed through a triohooks guard that would block
another one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.interop import ClaudeProject
from tests.interop.fake_anthropic import FakeAnthropic
from tests.interop.test_claude_code_baseline import marker_commands, markers, session

pytestmark = pytest.mark.interop


def test_replay_reads_what_claude_code_recorded(
    claude_bin: Path, claude_project: ClaudeProject, fake_api: FakeAnthropic, tmp_path: Path
) -> None:
    claude_project.write_hooks(
        {
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [
                        {
                            "type": "command",
                            "command": "grep -q marker-1 && { echo old-guard >&2; exit 2; }; exit 0",
                        }
                    ],
                }
            ]
        }
    )
    session(claude_bin, claude_project, fake_api, marker_commands(3))
    assert markers(claude_project) == ["marker-0.txt", "marker-2.txt"]
    [transcript] = (claude_project.home / ".claude" / "projects").glob("*/*.jsonl")
    config_dir = tmp_path / "triohooks-config"
    config_dir.mkdir()
    (config_dir / "hooks.toml").write_text(
        '[[hooks.pre_tool]]\nid = "new-guard"\nif = "shell(echo marker-2*)"\n'
        "command = \"echo 'not marker-2' >&2; exit 2\"\n"
    )
    env = {**os.environ, "TRIOHOOKS_CONFIG_DIR": str(config_dir)}
    done = subprocess.run(
        [sys.executable, "-m", "triohooks", "replay", str(transcript), "--json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["workspace"] == str(claude_project.path)
    rows = [(r["kind"], r["then"], r["now"]["blocked"]) for r in doc["rows"]]
    assert rows == [
        ("prompt", "submitted", False),
        ("tool", "ran", False),
        ("tool", "blocked by hook", False),
        ("tool", "ran", True),
    ]
    assert doc["rows"][1]["args"]["command"] == "echo marker-0 > marker-0.txt"
    assert "old-guard" in doc["rows"][2]["then_detail"]
    assert "not marker-2" in doc["rows"][3]["now"]["reason"]
    assert doc["totals"]["blocked_now_ran_then"] == 1
    assert doc["totals"]["allowed_now_blocked_then"] == 1
