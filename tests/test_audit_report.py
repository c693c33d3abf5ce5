"""``triohooks audit report``: observe-mode would-blocks, written by real ``fire`` runs, summed
up by guard, UTC day and command, as text and ``--json``; torn and garbage lines counted and
skipped; a missing or unreadable file an error that names it."""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import cli_here, write_toml_hooks
from triohooks.actors.audit_records import audit_file

HOOKS = """
[[hooks.pre_tool]]
id = "no-rm"
mode = "observe"
if = "shell(rm *)"
command = "echo 'deleting is for humans' >&2; exit 2"

[[hooks.pre_tool]]
id = "guard"
builtin = "destructive_delete"
mode = "observe"

[[hooks.pre_tool]]
id = "ask-push"
mode = "observe"
if = "shell(git push*)"
command = '''echo '{"decision": "ask", "reason": "really push?"}' '''

[[hooks.pre_tool]]
id = "enforced"
if = "shell(make*)"
command = "exit 2"
"""

CALLS = [
    ("a", "rm -rf /"),
    ("b", "rm -rf /"),
    ("a", "rm notes.txt"),
    ("a", "git push"),
    ("b", "make"),
    ("a", "ls"),
]


def env_of(root: Path) -> dict[str, str]:
    return {
        **os.environ,
        "TRIOHOOKS_CONFIG_DIR": str(root / "cfg"),
        "TRIOHOOKS_STATE_DIR": str(root / "state"),
    }


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The CALLS fired for real: observe-mode hooks audit would-blocks, one enforcing block."""
    root = tmp_path_factory.mktemp("report")
    (root / "ws").mkdir()
    write_toml_hooks(root / "cfg", HOOKS)
    for session, command in CALLS:
        payload = json.dumps({"session_id": session, "tool": "Bash", "args": {"command": command}})
        done = cli_here(["fire", "pre_tool"], cwd=root / "ws", env=env_of(root), stdin=payload)
        assert done.returncode in (0, 2), done.stderr
        assert (done.returncode == 2) == (command == "make")  # only the enforcing hook blocks
    return root


def report(root: Path, *argv: str, code: int = 0) -> Any:
    done = cli_here(["audit", "report", *argv], cwd=root / "ws", env=env_of(root))
    assert done.returncode == code, done.stderr
    return json.loads(done.stdout) if "--json" in argv and code == 0 else done


def test_would_blocks_by_guard_day_and_command(logged: Path) -> None:
    got = report(logged, "--json")
    today = datetime.now(UTC).date().isoformat()
    # rm -rf / twice: no-rm and guard each; rm notes.txt: no-rm only; git push: an ask.
    assert got["would_block"] == 6 and got["would_allow"] == 0
    assert got["by_guard"] == [
        {"guard": "no-rm", "count": 3},
        {"guard": "guard", "count": 2},
        {"guard": "ask-push", "count": 1},
    ]
    assert got["by_day"] == [{"day": today, "count": 6}]
    assert got["by_command"] == [
        {"command": "rm -rf /", "count": 4},
        {"command": "git push", "count": 1},
        {"command": "rm notes.txt", "count": 1},
    ]
    assert got["skipped_lines"] == 0
    assert got["files"] == [str(audit_file(logged / "state" / "audit", today))]


def test_the_text_report_and_the_filters(logged: Path) -> None:
    text = report(logged).stdout
    assert text.startswith(f"would-blocks in {logged / 'state' / 'audit'} (last 7 day(s)): 6\n")
    lines = text.splitlines()
    at = lines.index("by guard:")
    assert [line.split() for line in lines[at + 1 : at + 4]] == [
        ["3", "no-rm"],
        ["2", "guard"],
        ["1", "ask-push"],
    ]
    assert "       4  rm -rf /" in lines
    only = report(logged, "--json", "--hook", "guard")
    assert only["by_guard"] == [{"guard": "guard", "count": 2}]
    assert report(logged, "--json", "--event", "stop")["would_block"] == 0


def test_torn_and_garbage_lines_are_counted_and_skipped(logged: Path, tmp_path: Path) -> None:
    today = datetime.now(UTC).date()
    source = audit_file(logged / "state" / "audit", today.isoformat())
    copy = tmp_path / "copied.jsonl"
    good = source.read_bytes()
    copy.write_bytes(
        b"not json at all\n\xff\xfe binary\n{}\n" + good + b'{"time":"2024-01-01T00:00:0'
    )
    got = report(logged, "--json", "--file", str(copy))
    assert got["would_block"] == 6 and got["skipped_lines"] == 4
    assert got["files"] == [str(copy)]
    text = report(logged, "--file", str(copy)).stdout
    assert "skipped 4 line(s) that are not audit records (a torn tail or garbage)" in text


def test_days_of_the_state_directory_are_grouped_apart(tmp_path: Path) -> None:
    audit = tmp_path / "state" / "audit"
    audit.mkdir(parents=True)
    (tmp_path / "ws").mkdir()
    today = datetime.now(UTC).date()
    for back, count in ((0, 1), (2, 3), (9, 5)):  # the one 9 days back is past --days 7
        day = today - timedelta(days=back)
        line = {
            "time": f"{day}T10:00:00Z",
            "session": "s",
            "kind": "hook",
            "event": "stop",
            "hook": "keep-going",
            "decision": "would_block",
            "error": None,
            "duration_ms": 1.0,
            "workspace": "/w",
            "detail": {"would": "continue"},
        }
        audit_file(audit, day.isoformat()).write_text((json.dumps(line) + "\n") * count)
    got = report(tmp_path, "--json")
    assert got["by_day"] == [
        {"day": str(today - timedelta(days=2)), "count": 3},
        {"day": str(today), "count": 1},
    ]
    assert got["by_command"] == [{"command": "(stop)", "count": 4}]
    assert report(tmp_path, "--json", "--days", "10")["would_block"] == 9


def test_a_missing_or_unreadable_file_is_an_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    missing = tmp_path / "nope.jsonl"
    done = report(tmp_path, "--file", str(missing), code=1)
    assert done.stderr == f"triohooks audit report: cannot read {missing}: no such audit file\n"
    done = report(tmp_path, "--file", str(tmp_path), code=1)
    assert done.stderr.startswith(f"triohooks audit report: cannot read {tmp_path}: is a directory")
    done = report(tmp_path, code=1)  # no audit directory at all
    assert done.stderr.startswith(
        f"triohooks audit report: no audit log at {tmp_path / 'state' / 'audit'}"
    )
    assert done.stdout == ""


@pytest.mark.skipif(sys.platform == "win32", reason="FIFO")
def test_a_fifo_in_place_of_a_day_file_is_refused_not_waited_on(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    audit = tmp_path / "state" / "audit"
    audit.mkdir(parents=True)
    fifo = audit_file(audit, datetime.now(UTC).date().isoformat())
    os.mkfifo(fifo)
    done = report(tmp_path, code=1)
    assert f"cannot read {fifo}: is a FIFO (named pipe)" in done.stderr
