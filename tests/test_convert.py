"""``triohooks convert``: an agent's hooks in another agent's format or triohooks' TOML dialect,
with a report of every field the target cannot express (never silently dropped). From the
command line, as a user runs it; the TOML it writes loads with ``validate``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import triohooks_cli

CLAUDE = {
    "permissions": {},
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [
                    {"type": "command", "command": "cat", "timeout": 10, "if": "Bash(git push*)"}
                ],
            },
            {
                "matcher": "Edit|Write",
                "hooks": [{"type": "command", "command": "true", "async": True}],
            },
            {"matcher": "mcp__.*", "hooks": [{"type": "http", "url": "http://127.0.0.1:9/h"}]},
        ],
        "UserPromptSubmit": [{"hooks": [{"type": "prompt", "prompt": "is $ARGUMENTS safe?"}]}],
        "Setup": [{"hooks": [{"type": "command", "command": "true"}]}],
    },
}

GEMINI = {
    "hooks": {
        "BeforeTool": [
            {
                "matcher": "run_shell_command",
                "sequential": True,
                "hooks": [
                    {
                        "type": "command",
                        "command": "cat",
                        "timeout": 5000,
                        "name": "guard",
                        "env": {"A": "1"},
                    }
                ],
            },
            {
                "matcher": "^(read_file|write_file)$",
                "hooks": [{"type": "command", "command": "true"}],
            },
        ],
        "AfterAgent": [{"hooks": [{"type": "command", "command": "true"}]}],
        "BeforeModel": [{"hooks": [{"type": "command", "command": "true"}]}],
    }
}


def convert(tmp_path: Path, *argv: str) -> tuple[Any, list[str], Any]:
    done = triohooks_cli("convert", *argv, cwd=tmp_path, config_dir=tmp_path / "cfg")
    report = [
        line[len("report: ") :] for line in done.stderr.splitlines() if line.startswith("report: ")
    ]
    return done, report, done.stdout


def write(tmp_path: Path, agent: str, doc: dict[str, Any]) -> Path:
    name = {"claude": ".claude/settings.json", "gemini": ".gemini/settings.json"}[agent]
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def test_claude_to_gemini_maps_events_tools_and_units_and_reports_the_rest(tmp_path: Path) -> None:
    write(tmp_path, "claude", CLAUDE)
    done, report, out = convert(tmp_path, "--from", "claude", "--to", "gemini")
    assert done.returncode == 0, done.stderr
    hooks = json.loads(out)["hooks"]
    assert list(hooks) == ["BeforeTool"]
    shell, files = hooks["BeforeTool"]
    assert shell["matcher"] == "^(run_shell_command)$"
    assert shell["hooks"] == [{"type": "command", "command": "cat", "timeout": 10000}]
    assert files["matcher"] == "^(replace|write_file)$"
    said = "\n".join(report)
    for expected in (
        "PreToolUse[0].hooks[0]: if 'Bash(git push*)' left out",
        "PreToolUse[1].hooks[0]: async left out",
        "PreToolUse[2].hooks[0]: gemini runs no http hooks: not converted",
        "UserPromptSubmit[0].hooks[0]: gemini runs no prompt hooks: not converted",
        "Setup[0].hooks[0]: gemini has no event like Setup: not converted",
        "copied as written: they read claude's hook input",
    ):
        assert expected in said, said
    assert done.stderr.rstrip().endswith(f"-> gemini: {len(report)} report line(s) above")


def test_gemini_to_claude_reads_its_regex_matchers_and_reports_what_claude_lacks(
    tmp_path: Path,
) -> None:
    write(tmp_path, "gemini", GEMINI)
    done, report, out = convert(tmp_path, "--from", "gemini", "--to", "claude")
    assert done.returncode == 0, done.stderr
    hooks = json.loads(out)["hooks"]
    assert [g["matcher"] for g in hooks["PreToolUse"]] == ["Bash", "Read|Write"]
    assert hooks["PreToolUse"][0]["hooks"] == [{"type": "command", "command": "cat", "timeout": 5}]
    assert list(hooks) == ["PreToolUse", "Stop"]  # AfterAgent is Stop; BeforeModel: none
    said = "\n".join(report)
    for expected in (
        "name 'guard' left out",
        "env ['A'] left out",
        "sequential left out",
        "matches tool names containing these words in gemini; written as the exact names",
        "BeforeModel[0].hooks[0]: claude has no event like BeforeModel",
    ):
        assert expected in said, said


def test_to_triohooks_writes_a_toml_that_validates(tmp_path: Path) -> None:
    write(tmp_path, "claude", CLAUDE)
    out = tmp_path / "hooks.toml"
    done, report, _ = convert(tmp_path, "--from", "claude", "--to", "triohooks", "--out", str(out))
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert 'if = "shell(git push*)"' in text and 'match = "Bash"' in text
    assert 'match = "Edit"' in text and 'match = "Write"' in text  # one hook per tool
    assert 'type = "http"' in text and 'type = "prompt"' in text
    said = "\n".join(report)
    assert "'mcp__.*' is a regex, which a TOML match glob cannot be" in said
    assert "$ARGUMENTS is claude's placeholder" in said
    assert "triohooks has no event like Setup" in said
    empty = tmp_path / "empty"
    empty.mkdir()
    validated = triohooks_cli(
        "validate", "--config", str(out), "--config-dir", str(empty), cwd=tmp_path, config_dir=empty
    )
    assert validated.returncode == 0, validated.stdout + validated.stderr
    assert "5 hook(s) run" in validated.stdout
    again, _, _ = convert(tmp_path, "--from", "claude", "--to", "triohooks", "--out", str(out))
    assert again.returncode == 1 and "already there" in again.stderr


def test_an_installed_settings_file_converts_the_adopted_hooks(tmp_path: Path) -> None:
    """After `install`, the settings hold triohooks' catch-alls; the agent's own hooks are in
    triohooks-hooks.json beside them, and that is what converts."""
    write(tmp_path, "claude", CLAUDE)
    (tmp_path / "state").mkdir(mode=0o700)
    installed = triohooks_cli("claude", "install", cwd=tmp_path, config_dir=tmp_path / "cfg")
    assert installed.returncode == 0, installed.stderr
    done, _, out = convert(tmp_path, "--from", "claude", "--to", "codex")
    assert done.returncode == 0, done.stderr
    assert "triohooks-hooks.json" in done.stderr
    assert json.loads(out)["hooks"]["PreToolUse"][0]["hooks"][0]["command"] == "cat"
    assert "triohooks-relay" not in out


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (("--from", "claude", "--to", "claude"), "--from and --to are both claude"),
        (("--from", "gemini", "--to", "claude"), "no such file"),
        (("--from", "clade", "--to", "gemini"), "invalid choice: 'clade'"),
    ],
)
def test_bad_input_is_one_clear_line(tmp_path: Path, argv: tuple[str, ...], said: str) -> None:
    done, _, _ = convert(tmp_path, *argv)
    assert done.returncode == 1
    assert said in done.stderr and "Traceback" not in done.stderr


def test_codex_hooks_in_config_toml_convert_when_named(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        'model = "gpt-5"\n\n[[hooks.PreToolUse]]\nmatcher = "Bash"\n\n'
        '[[hooks.PreToolUse.hooks]]\ntype = "command"\ncommand = "cat"\ntimeout = 7\n\n'
        '[hooks.state."x:pre_tool_use:0:0"]\ntrusted_hash = "sha256:00"\n'
    )
    done, _, out = convert(tmp_path, "--from", "codex", "--to", "claude", str(config))
    assert done.returncode == 0, done.stderr
    hooks = json.loads(out)["hooks"]
    assert hooks == {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "cat", "timeout": 7}]}
        ]
    }
    empty = tmp_path / "empty.toml"
    empty.write_text('model = "gpt-5"\n')
    refused, _, _ = convert(tmp_path, "--from", "codex", "--to", "claude", str(empty))
    assert refused.returncode == 1 and "it has no [hooks]" in refused.stderr


SHELL_AND_FILES = {
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Bash|Read|Write",
                "hooks": [{"type": "command", "command": "./guard.sh", "timeout": 1200}],
            }
        ],
        "PostToolUse": [{"matcher": "Edit", "hooks": [{"command": "./fmt.sh", "timeout": 5}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "./stop.sh", "timeout": 9}]}],
    }
}


def test_to_copilot_writes_its_own_flat_form(tmp_path: Path) -> None:
    write(tmp_path, "claude", SHELL_AND_FILES)
    done, report, out = convert(tmp_path, "--from", "claude", "--to", "copilot")
    assert done.returncode == 0, done.stderr
    assert len(report) == 1 and "copied as written" in report[0]  # nothing else is lost
    doc = json.loads(out)
    assert doc["version"] == 1
    assert doc["hooks"] == {
        "preToolUse": [
            {
                "type": "command",
                "bash": "./guard.sh",
                "timeoutSec": 1200,
                "matcher": "bash|view|create",
            }
        ],
        "postToolUse": [
            {"type": "command", "bash": "./fmt.sh", "timeoutSec": 5, "matcher": "edit"}
        ],
        "agentStop": [{"type": "command", "bash": "./stop.sh", "timeoutSec": 9}],
    }


def test_to_cursor_gives_each_tool_its_own_event_and_says_what_has_none(tmp_path: Path) -> None:
    write(tmp_path, "claude", SHELL_AND_FILES)
    done, report, out = convert(tmp_path, "--from", "claude", "--to", "cursor")
    assert done.returncode == 0, done.stderr
    doc = json.loads(out)
    assert doc["version"] == 1
    assert doc["hooks"] == {
        "beforeShellExecution": [{"command": "./guard.sh", "timeout": 1200}],
        "beforeReadFile": [{"command": "./guard.sh", "timeout": 1200}],
        "afterFileEdit": [{"command": "./fmt.sh", "timeout": 5}],
        "stop": [{"command": "./stop.sh", "timeout": 9}],
    }
    assert "PreToolUse[0].hooks[0]: Cursor has no pre_tool event for the tool Edit" in "\n".join(
        report
    )


def test_to_qwen_writes_long_command_timeouts_as_milliseconds(tmp_path: Path) -> None:
    write(tmp_path, "claude", SHELL_AND_FILES)
    done, _, out = convert(tmp_path, "--from", "claude", "--to", "qwen")
    assert done.returncode == 0, done.stderr
    hooks = json.loads(out)["hooks"]
    (guard,) = hooks["PreToolUse"]
    assert guard["matcher"] == "run_shell_command|read_file|write_file"
    assert guard["hooks"][0]["timeout"] == 1_200_000  # Qwen reads 1000 or more as ms
    assert hooks["Stop"][0]["hooks"][0]["timeout"] == 9
