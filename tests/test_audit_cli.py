"""``triohooks audit tail|search``: records written by real ``fire`` runs, read back with every
filter, as text and as JSON lines."""

from __future__ import annotations

import json
import os
from pathlib import Path

import msgspec
import pytest

from tests.helpers import cli_here, write_toml_hooks
from triohooks.actors.audit_records import AuditRecord

HOOKS = """
[[hooks.pre_tool]]
id = "no-push"
if = "shell(git push*)"
command = "echo pushing is for humans >&2; exit 2"

[[hooks.pre_tool]]
id = "broken"
if = "shell(make*)"
command = "exit 7"
"""


def cli(*argv: str, cwd: Path, env: dict[str, str], stdin: str = "") -> str:
    done = cli_here(argv, cwd=cwd, env=env, stdin=stdin)
    assert done.returncode in (0, 2), done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """Four audited runs: two blocks (sessions a, b), one failure (a), one call nothing ran for."""
    root = tmp_path_factory.mktemp("audit")
    (root / "ws").mkdir()
    write_toml_hooks(root / "cfg", HOOKS)
    env = {
        **os.environ,
        "TRIOHOOKS_CONFIG_DIR": str(root / "cfg"),
        "TRIOHOOKS_STATE_DIR": str(root / "state"),
    }
    for session, command in (("a", "git push"), ("b", "git push -f"), ("a", "make"), ("a", "ls")):
        payload = json.dumps({"session_id": session, "tool": "Bash", "args": {"command": command}})
        cli("fire", "pre_tool", cwd=root / "ws", env=env, stdin=payload)
    return root / "ws", env


def lines(*argv: str, logged: tuple[Path, dict[str, str]]) -> list[str]:
    ws, env = logged
    return cli("audit", *argv, cwd=ws, env=env).splitlines()


def records(*argv: str, logged: tuple[Path, dict[str, str]]) -> list[AuditRecord]:
    out = lines(*argv, "--json", logged=logged)
    return [msgspec.json.decode(line, type=AuditRecord) for line in out]


def test_tail_prints_the_newest_records_readably(logged: tuple[Path, dict[str, str]]) -> None:
    out = lines("tail", logged=logged)
    assert len(out) == 3  # the call no hook ran for is not audited
    stamp, event, decision, hook, *rest = out[0].split("  ")
    assert stamp.endswith("Z")
    assert (event, decision, hook) == ("pre_tool", "block", "no-push")
    assert rest[-1] == "pushing is for humans" and "session=a" in rest
    assert lines("tail", "-n", "1", logged=logged)[0].split("  ")[2:4] == ["error", "broken"]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (("--decision", "block"), [("no-push", "a"), ("no-push", "b")]),
        (("--decision", "error"), [("broken", "a")]),
        (("--session", "a"), [("no-push", "a"), ("broken", "a")]),
        (
            ("--hook", "broken", "--hook", "no-push"),
            [("no-push", "a"), ("no-push", "b"), ("broken", "a")],
        ),
        (("--event", "post_tool"), []),
        (("--since", "1h"), [("no-push", "a"), ("no-push", "b"), ("broken", "a")]),
        (("--since", "2999-01-01"), []),
        (
            ("--since", "2000-01-01T00:00:00Z", "--decision", "block", "--session", "b"),
            [("no-push", "b")],
        ),
    ],
)
def test_search_filters(
    logged: tuple[Path, dict[str, str]], argv: tuple[str, ...], expected: list[tuple[str, str]]
) -> None:
    found = records("search", *argv, logged=logged)
    assert [(r.hook, r.session) for r in found] == expected


def test_a_torn_line_is_skipped_and_a_bad_since_is_one_line(
    logged: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    ws, env = logged
    audit = Path(env["TRIOHOOKS_STATE_DIR"]) / "audit"
    newest = sorted(audit.iterdir())[-1]
    copy = tmp_path / "state/audit"
    copy.mkdir(parents=True)
    (copy / newest.name).write_bytes(newest.read_bytes() + b'{"time": "2026-')
    moved = {**env, "TRIOHOOKS_STATE_DIR": str(tmp_path / "state")}
    assert len(cli("audit", "search", cwd=ws, env=moved).splitlines()) == 3
    done = cli_here(["audit", "tail", "--since", "soon"], cwd=ws, env=env)
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "triohooks audit: --since 'soon': write an age (30m, 2h, 7d) or an ISO time"
    )
