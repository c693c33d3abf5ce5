"""``triohooks demo``: the scripted session through the real engine, checked by its timeline.

Real hook processes of both dialects, the real clock; the whole demo takes well under a second.
"""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import trio

from triohooks.fronts.demo import run_demo

#: What the timeline must show, event by event: (event, tool, decision).
EXPECTED = [
    ("session_start", "", "proceed"),
    ("prompt_submit", "", "context added"),
    ("pre_tool", "bash", "rewritten"),  # pytest -> pytest -q -x (TOML), NO_COLOR=1 (JSON)
    ("post_tool", "bash", "proceed"),
    ("pre_tool", "write_file", "proceed"),
    ("post_tool", "write_file", "queued"),  # the formatter, in the background
    ("pre_tool", "bash", "blocked"),  # git push
    ("stop", "", "continue"),  # the stop hook forces one more turn
    ("pre_tool", "bash", "rewritten"),
    ("post_tool", "bash", "proceed"),
    ("stop", "", "proceed"),  # stop_hook_active: the hook lets it stop
    ("session_end", "", "proceed"),
]


async def test_demo_timeline_shows_every_decision(tmp_path: Path) -> None:
    out = io.StringIO()
    with trio.fail_after(30):
        summary = await run_demo(tmp_path, out)
    entries = summary.entries
    assert [(e.event, e.subject, e.decision) for e in entries] == EXPECTED

    prompt, first_pytest, push, stop = entries[1], entries[2], entries[6], entries[7]
    assert [(r.hook, r.dialect) for r in prompt.hooks] == [
        ("repo-notes", "toml"),
        ("user:no-private-keys", "json"),
    ]
    assert "repo notes: tests run with pytest" in (prompt.detail or "")
    assert [r.dialect for r in first_pytest.hooks] == ["toml", "json"]  # rewrites chain
    assert '"command": "pytest tests/test_parser.py -q -x", "env": {"NO_COLOR": "1"}' in (
        first_pytest.detail or ""
    )
    assert [(r.hook, r.outcome) for r in push.hooks] == [("no-push", "block")]
    assert push.detail == "reason: pushing is for humans: open a PR instead"
    assert stop.detail == "a stop hook says: run the tests first"
    assert all(e.ms >= 0 for e in entries)

    assert [(b.event, b.hook, b.outcome) for b in summary.background] == [
        ("post_tool", "format-on-write", "ok")
    ]
    assert summary.formatted == "def parse(line):\n    return line.split(',')\n"

    assert [p.parent for p in summary.audit_files] == [tmp_path / "state" / "audit"]
    assert [(r["event"], r["hook"], r["decision"]) for r in summary.audit] == [
        ("pre_tool", "no-push", "block"),
        ("stop", "tests-before-stop", "block"),
    ]

    text = out.getvalue()
    assert "BLOCKED" in text and "CONTINUE" in text
    assert "format-on-write finished: ok" in text
    assert f"audit records in {summary.audit_files[0]}" in text
    assert json.dumps(summary.audit[0], separators=(",", ":")) in text


async def test_demo_command_runs_from_the_cli_and_leaves_nothing(tmp_path: Path) -> None:
    """``python -m runtime demo``: exit 0, the timeline on stdout; it touches neither the
    user's config nor state dir, and removes its temp dir."""
    home = {name: tmp_path / name for name in ("config", "state", "tmp")}
    for path in home.values():
        path.mkdir()
    env = {
        **os.environ,
        "TRIOHOOKS_CONFIG_DIR": str(home["config"]),
        "TRIOHOOKS_STATE_DIR": str(home["state"]),
        "TMPDIR": str(home["tmp"]),
    }
    with trio.fail_after(60):
        done = await trio.run_process(
            [sys.executable, "-m", "triohooks", "demo"],
            env=env,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    stdout = done.stdout.decode()
    assert done.returncode == 0, done.stderr.decode()
    for shown in ("context added", "rewritten", "queued", "BLOCKED", "CONTINUE", "audit records"):
        assert shown in stdout
    assert done.stderr == b""
    assert [list(path.iterdir()) for path in home.values()] == [[], [], []]
