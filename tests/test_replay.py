"""``triohooks replay``: a Claude Code transcript (lines of the shape the real CLI writes, see
tests/interop/test_claude_replay.py for one it wrote) through today's hooks, run for real
(bash processes, built-in guards) from the command line as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from runtime.fronts.replay import TranscriptError, read_claude_transcript
from tests.helpers import triohooks_cli, write_toml_hooks

SESSION = "06dc163b-8d42-4e74-92de-dd395805b2c7"


class Session:
    """Writes transcript lines as Claude Code 2.1 does (only the fields replay reads, and a
    few it must skip)."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = str(cwd)
        self.lines: list[str] = []
        self.n = 0

    def _entry(self, kind: str, message: Any, **extra: Any) -> None:
        self.n += 1
        entry = {
            "type": kind,
            "uuid": f"u{self.n}",
            "timestamp": f"2026-12-05T09:40:{self.n:02d}.000Z",
            "sessionId": SESSION,
            "cwd": self.cwd,
            "isSidechain": False,
            "message": message,
            **extra,
        }
        self.lines.append(json.dumps(entry))

    def prompt(self, text: str, **extra: Any) -> None:
        self._entry("user", {"role": "user", "content": text}, **extra)

    def call(self, use_id: str, tool: str, args: dict[str, Any], **extra: Any) -> None:
        block = {"type": "tool_use", "id": use_id, "name": tool, "input": args}
        self._entry("assistant", {"role": "assistant", "content": [block]}, **extra)

    def result(self, use_id: str, text: str, *, error: bool = False, **extra: Any) -> None:
        block = {"type": "tool_result", "tool_use_id": use_id, "content": text, "is_error": error}
        self._entry("user", {"role": "user", "content": [block]}, **extra)

    def hook_block(self, use_id: str, reason: str) -> None:
        self.result(
            use_id,
            f"PreToolUse:Bash hook error: {reason}",
            error=True,
            permissionDecision={"decision": "reject", "source": "hook", "reasonType": "hook"},
        )

    def raw(self, line: str) -> None:
        self.lines.append(line)

    def write(self, path: Path) -> Path:
        path.write_text("\n".join(self.lines) + "\n")
        return path


def replay(*argv: str, cwd: Path, cfg: Path) -> subprocess.CompletedProcess[str]:
    return triohooks_cli("replay", *argv, cwd=cwd, config_dir=cfg)


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    ws, cfg = tmp_path / "ws", tmp_path / "cfg"
    ws.mkdir()
    cfg.mkdir()
    return ws.resolve(), cfg


def a_session(ws: Path) -> Session:
    s = Session(ws)
    s.raw(json.dumps({"type": "queue-operation", "operation": "enqueue", "content": "tidy up"}))
    s.prompt("tidy up the build dir")
    s.prompt("<system-reminder>ignored</system-reminder>", isMeta=True)
    s.call("t1", "Bash", {"command": "ls build"})
    s.result("t1", "a.o\nb.o")
    s.call("t2", "Bash", {"command": "rm -fr /"})
    s.result("t2", "rm: it is dangerous to operate recursively on '/'", error=True)
    s.call("t3", "Bash", {"command": "git push --force origin main"})
    s.hook_block("t3", "no force pushes")
    s.call("t4", "Read", {"file_path": str(ws / "notes.txt")})
    s.result("t4", "notes")
    s.call("t5", "Bash", {"command": "echo sidechain"}, isSidechain=True)
    s.prompt("a subagent's brief", isSidechain=True)
    s.call("t6", "Bash", {"command": "sleep 1000"})  # the session ended before its result
    s.raw("not json at all")
    s.raw("[1, 2]")
    return s


def test_the_transcript_is_read_as_claude_code_wrote_it(
    dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    ws, _ = dirs
    transcript = read_claude_transcript(a_session(ws).write(tmp_path / "s.jsonl"))
    seen = [(s.kind, s.tool or s.prompt, s.then) for s in transcript.steps]
    assert seen == [
        ("prompt", "tidy up the build dir", "submitted"),
        ("tool", "Bash", "ran"),
        ("tool", "Bash", "failed"),
        ("tool", "Bash", "blocked by hook"),
        ("tool", "Read", "ran"),
        ("tool", "Bash", "no result"),  # a subagent's call goes through hooks too
        ("tool", "Bash", "no result"),
    ]
    assert transcript.steps[3].then_detail == "PreToolUse:Bash hook error: no force pushes"
    assert transcript.steps[1].args == {"command": "ls build"}
    assert transcript.steps[1].session == SESSION
    assert transcript.skipped == 2
    assert transcript.cwd == str(ws)


def test_what_is_not_a_transcript_is_refused_plainly(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    other = tmp_path / "other.jsonl"
    other.write_text('{"event": "pre_tool"}\n')
    for path, said in (
        (tmp_path / "missing.jsonl", "cannot read"),
        (fifo, "not a regular file"),
        (other, "no Claude Code session lines"),
    ):
        with pytest.raises(TranscriptError, match=said):
            read_claude_transcript(path)


def blockers(row: dict[str, Any]) -> list[str]:
    return [r["hook"] for r in row["now"]["ran"] if r["outcome"] == "block"]


GUARDS = """
[[hooks.pre_tool]]
id = "deletes"
builtin = "destructive_delete"

[[hooks.pre_tool]]
id = "pushes"
builtin = "protected_push"

[[hooks.pre_tool]]
id = "no-sleep"
if = "shell(sleep *)"
command = "echo 'no sleeping on the job' >&2; exit 2"

[[hooks.prompt_submit]]
id = "house-rules"
command = "echo 'house rules: no force pushes'"
"""


def test_replay_says_what_the_hooks_say_now(dirs: tuple[Path, Path], tmp_path: Path) -> None:
    ws, cfg = dirs
    (cfg / "hooks.toml").write_text(GUARDS)
    path = a_session(ws).write(tmp_path / "s.jsonl")
    done = replay(str(path), "--json", cfg=cfg, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["workspace"] == str(ws)  # the session's own directory
    now = [(r["then"], r["now"]["blocked"], blockers(r)) for r in doc["rows"]]
    assert now == [
        ("submitted", False, []),
        ("ran", False, []),
        ("failed", True, ["deletes"]),
        ("blocked by hook", True, ["pushes"]),
        ("ran", False, []),
        ("no result", False, []),
        ("no result", True, ["no-sleep"]),
    ]
    assert doc["rows"][1]["now"]["ran"] == [
        {"hook": "deletes", "outcome": "ok"},
        {"hook": "pushes", "outcome": "ok"},
    ]
    assert doc["rows"][0]["now"]["context"] == "house rules: no force pushes"
    assert "no sleeping on the job" in doc["rows"][6]["now"]["reason"]
    assert doc["totals"] == {
        "tool_calls": 6,
        "prompts": 1,
        "blocked_now": 3,
        "blocked_now_ran_then": 2,
        "allowed_now_blocked_then": 0,
        "rewritten_now": 0,
        "context_now": 1,
        "warnings_now": 0,
    }
    table = replay(str(path), cfg=cfg, cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["#", "CALL", "THEN", "NOW"]
    assert "Bash: rm -fr /" in lines[3] and "BLOCKED: destructive_delete guard" in lines[3]
    assert "context: house rules" in lines[1]
    assert (
        "6 tool call(s), 1 prompt(s): 3 blocked now (2 of them went through then), "
        "0 rewritten, 1 given context, 0 blocked then and allowed now"
    ) in table.stdout
    assert "2 transcript line(s) skipped" in table.stdout


def test_a_rewrite_and_a_call_blocked_then_and_allowed_now(
    dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    ws, cfg = dirs
    (cfg / "hooks.toml").write_text(
        """
[[hooks.pre_tool]]
id = "quiet-ls"
if = "shell(ls *)"
command = '''echo '{"updated_args": {"command": "ls -1 build"}}' '''
"""
    )
    s = Session(ws)
    s.call("t1", "Bash", {"command": "ls build"})
    s.result("t1", "a.o")
    s.call("t2", "Bash", {"command": "git status"})
    s.hook_block("t2", "old guard")
    doc = json.loads(replay(str(s.write(tmp_path / "s.jsonl")), "--json", cfg=cfg, cwd=ws).stdout)
    assert [r["rewritten"] for r in doc["rows"]] == [True, False]
    assert doc["rows"][0]["now"]["args"] == {"command": "ls -1 build"}
    assert doc["totals"]["rewritten_now"] == 1
    assert doc["totals"]["allowed_now_blocked_then"] == 1


def test_only_decision_events_unless_all(dirs: tuple[Path, Path], tmp_path: Path) -> None:
    ws, cfg = dirs
    log = tmp_path / "post.log"
    (cfg / "hooks.toml").write_text(
        f"""
[[hooks.post_tool]]
id = "log"
command = "cat >> {log}; echo >> {log}"

[[hooks.post_tool_failure]]
id = "log-failure"
command = "cat >> {log}; echo >> {log}"
"""
    )
    path = a_session(ws).write(tmp_path / "s.jsonl")
    assert replay(str(path), cfg=cfg, cwd=ws).returncode == 0
    assert not log.exists()  # no tool result was re-announced
    assert replay(str(path), "--all", cfg=cfg, cwd=ws).returncode == 0
    events = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert [(e["event"], e["tool"]) for e in events] == [
        ("post_tool", "Bash"),
        ("post_tool_failure", "Bash"),
        ("post_tool", "Read"),
    ]
    assert events[0]["result"] == "a.o\nb.o"
    assert "dangerous" in events[1]["error"]


def test_untrusted_workspace_hooks_are_said_and_trust_runs_them(
    dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    ws, cfg = dirs
    write_toml_hooks(
        ws / ".agents",
        '[[hooks.pre_tool]]\nid = "ws-guard"\nbuiltin = "destructive_delete"\n',
    )
    path = a_session(ws).write(tmp_path / "s.jsonl")
    held = replay(str(path), "--json", cfg=cfg, cwd=ws)
    assert held.returncode == 0, held.stderr
    assert "not trusted" in held.stderr and "--trust" in held.stderr
    rows = json.loads(held.stdout)["rows"]
    assert not rows[2]["now"]["blocked"]
    assert any("not trusted" in w for w in rows[2]["now"]["warnings"])
    trusted = json.loads(replay(str(path), "--json", "--trust", cfg=cfg, cwd=ws).stdout)
    assert trusted["rows"][2]["now"]["blocked"]


def test_a_session_whose_directory_is_gone_needs_a_workspace(
    dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    ws, cfg = dirs
    s = Session(tmp_path / "gone")
    s.call("t1", "Bash", {"command": "rm -rf /"})
    path = s.write(tmp_path / "s.jsonl")
    (cfg / "hooks.toml").write_text(GUARDS)
    refused = replay(str(path), cfg=cfg, cwd=ws)
    assert refused.returncode == 1
    assert "is not here" in refused.stderr and "--workspace" in refused.stderr
    assert "Traceback" not in refused.stderr
    done = replay(str(path), "--workspace", str(ws), "--json", cfg=cfg, cwd=tmp_path)
    assert json.loads(done.stdout)["rows"][0]["now"]["blocked"]


def test_a_bad_transcript_or_config_is_one_clear_line(
    dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    ws, cfg = dirs
    missing = replay(str(tmp_path / "nope.jsonl"), cfg=cfg, cwd=ws)
    assert missing.returncode == 1
    assert missing.stderr.startswith("triohooks replay: ") and "cannot read" in missing.stderr
    (cfg / "hooks.toml").write_text('[[hooks.pre_tool]]\nname = "x"\ncommand = "true"\n')
    bad = replay(str(a_session(ws).write(tmp_path / "s.jsonl")), cfg=cfg, cwd=ws)
    assert bad.returncode == 1
    assert "name: unknown field" in bad.stderr and "Traceback" not in bad.stderr
