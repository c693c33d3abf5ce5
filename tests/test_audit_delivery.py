"""Audit loses nothing delivered (docs/design.md §8), with real processes and real files.

A ``triohooks serve`` answering blocks as fast as a few clients can fire them (websocket fires
and Claude Code's ``POST /claude/v1/hook``) is SIGKILLed: every answer a client received has its
record in the day file. A torn tail left in that file is repaired when the next engine opens it
(said in ``stats``), and the file parses line by line. A day file that cannot be written does not
hold an answer back: the answer stands, with a warning that says its record is lost.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import stat
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from triohooks.actors.audit_records import AuditRecord, audit_file
from triohooks.engine.asyncio_engine import AsyncioHookEngine
from triohooks.engine.hook_engine import HookEngine
from triohooks.fronts.client import connect

from .asyncio_support import run as asyncio_run
from .serving import claude_http_hook, running_server

TOKEN = "audit-delivery-token-0123456789"
GUARD = '[[hooks.pre_tool]]\nbuiltin = "destructive_delete"\non_uncertain = "block"\n'
RM = {"command": "rm -rf /"}
#: Answers the load must reach before the kill (a few hundred a second on a loaded machine).
ANSWERS_BEFORE_KILL = 300

_decoder = msgspec.json.Decoder(AuditRecord)


def _setup(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "ws").mkdir(exist_ok=True)
    (tmp_path / "g").mkdir(exist_ok=True)
    (tmp_path / "g" / "hooks.toml").write_text(GUARD)
    (tmp_path / "token").write_text(TOKEN + "\n")
    return {
        **os.environ,
        "TRIOHOOKS_CONFIG_DIR": str(tmp_path / "g"),
        "TRIOHOOKS_STATE_DIR": str(tmp_path / "state"),
    }


def _records(state: Path) -> tuple[list[AuditRecord], list[bytes]]:
    """Every day file's lines: the records, and the lines that are none (torn)."""
    good: list[AuditRecord] = []
    bad: list[bytes] = []
    for path in sorted((state / "audit").glob("audit-*.jsonl")):
        for line in path.read_bytes().splitlines():
            try:
                good.append(_decoder.decode(line))
            except msgspec.DecodeError:
                bad.append(line)
    return good, bad


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_every_answer_a_killed_serve_delivered_has_its_record(tmp_path: Path) -> None:
    env = _setup(tmp_path)
    argv = [sys.executable, "-m", "triohooks", "serve", "--port", "0", "--workspace"]
    argv += [str(tmp_path / "ws"), "--token-file", str(tmp_path / "token")]
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    delivered: list[str] = []
    killed = trio.Event()
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split()[-1]
        host, port = url.removeprefix("ws://").rstrip("/").split(":")

        async def websocket_client(n: int) -> None:
            try:
                async with connect(url, TOKEN) as client:
                    for i in range(1_000_000):
                        session = f"ws{n}-{i}"
                        out = await client.fire(
                            "pre_tool", tool="bash", args=RM, session_id=session
                        )
                        assert out.blocked, out
                        delivered.append(session)
            except Exception:
                if not killed.is_set():
                    raise

        async def claude_client(n: int) -> None:
            try:
                for i in range(1_000_000):
                    session = f"claude{n}-{i}"
                    body = {
                        "hook_event_name": "PreToolUse",
                        "session_id": session,
                        "tool_name": "Bash",
                        "tool_input": RM,
                        "cwd": str(tmp_path / "ws"),
                    }
                    data = json.dumps(body).encode()
                    answer = await claude_http_hook(host, int(port), TOKEN, data)
                    decision = answer["hookSpecificOutput"]["permissionDecision"]
                    assert decision == "deny", answer
                    delivered.append(session)
            except Exception:
                if not killed.is_set():
                    raise

        async def main() -> None:
            with trio.fail_after(60):
                async with trio.open_nursery() as nursery:
                    for n in range(6):
                        nursery.start_soon(websocket_client, n)
                    for n in range(2):
                        nursery.start_soon(claude_client, n)
                    while len(delivered) < ANSWERS_BEFORE_KILL:
                        await trio.sleep(0.01)
                    killed.set()
                    os.kill(proc.pid, signal.SIGKILL)  # mid-load: fires are in flight

        trio.run(main)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=20)
    assert proc.returncode == -signal.SIGKILL
    records, torn = _records(tmp_path / "state")
    audited = {r.session for r in records if r.decision == "block" and r.kind == "hook"}
    missing = [s for s in delivered if s not in audited]
    print(f"delivered {len(delivered)} answers, {len(audited)} block records, torn {len(torn)}")
    assert len(delivered) >= ANSWERS_BEFORE_KILL
    assert any(s.startswith("claude") for s in delivered)
    assert missing == [], f"{len(missing)} of {len(delivered)} delivered answers unaudited"
    assert len(torn) <= 1  # at most the last line, cut by the kill


async def test_a_torn_tail_is_repaired_said_in_stats_and_the_file_parses(
    tmp_path: Path,
) -> None:
    # A writer killed mid-write leaves half a record at the end of the day file (SIGKILL under
    # load leaves one when it lands inside a write(2); here it is put there, byte for byte).
    _setup(tmp_path)
    state = tmp_path / "state"
    fragments = []
    for day in (datetime.now(UTC), datetime.now(UTC) + timedelta(days=1)):  # (across midnight)
        path = audit_file(state / "audit", day.date())
        path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
        fragment = b'{"time":"' + day.date().isoformat().encode() + b'T00:00:00Z","session":"to'
        path.write_bytes(
            b'{"session":"old","kind":"hook","event":"pre_tool","hook":"h",'
            b'"decision":"block","error":null,"duration_ms":1.0,"workspace":"/w"}\n' + fragment
        )
        fragments.append(fragment)
    with trio.fail_after(20):
        async with running_server(tmp_path, TOKEN) as server, connect(server.url, TOKEN) as c:
            out = await c.fire("pre_tool", tool="bash", args=RM, session_id="after-the-tear")
            stats = await c.stats()
    assert out.blocked and out.warnings == []
    assert stats.audit is not None
    assert stats.audit.torn_tails == 1 and stats.audit.lost == 0 and not stats.audit.failing
    # The day file the engine wrote to parses line by line: the old record, the fragment on
    # a line of its own (readers skip it), the new record. (A day file nobody opened is as it
    # was, torn: it is repaired when it is opened for a record.)
    (path,) = [p for p in (state / "audit").iterdir() if b"after-the-tear" in p.read_bytes()]
    lines = path.read_bytes().split(b"\n")
    assert lines[1] in fragments and lines[-1] == b""
    assert [_decoder.decode(line).session for line in (lines[0], lines[2])] == [
        "old",
        "after-the-tear",
    ]
    assert len(lines) == 4


def _unwritable_audit(tmp_path: Path) -> Path:
    """Today's (and tomorrow's) day file a /dev/full node as root (write(2) fails with ENOSPC
    through a real fd), else the audit directory read-only to us; chmod it back after."""
    audit = tmp_path / "state" / "audit"
    audit.mkdir(parents=True, mode=0o700)
    if os.geteuid() == 0:
        for day in (datetime.now(UTC), datetime.now(UTC) + timedelta(days=1)):
            os.mknod(audit_file(audit, day.date()), 0o600 | stat.S_IFCHR, os.makedev(1, 7))
    else:
        audit.chmod(0o500)
    return audit


async def test_an_unwritable_audit_file_delivers_the_answer_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _setup(tmp_path)
    audit = _unwritable_audit(tmp_path)
    try:
        with trio.fail_after(20):
            async with HookEngine.open(
                workspace=tmp_path / "ws", config_dir=tmp_path / "g", state_dir=tmp_path / "state"
            ) as engine:
                first = await engine.pre_tool("bash", RM, session_id="s1")
                second = await engine.fire("pre_tool", tool="bash", args=RM, session_id="s2")
                allowed = await engine.pre_tool("bash", {"command": "ls"}, session_id="s3")
                stats = engine.audit_stats
    finally:
        audit.chmod(0o700)
    # The block stands (an unwritten record never turns a decision around) and says why.
    assert first.blocked and second.blocked and not allowed.blocked
    assert any("could not write this answer's audit record" in w for w in first.warnings)
    assert any("(2 audit record(s) lost so far)" in w for w in second.warnings)
    assert allowed.warnings == []  # nothing to record, nothing lost
    assert stats is not None and (stats.lost, stats.failure_episodes, stats.failing) == (2, 1, True)
    said = [
        r.getMessage() for r in caplog.records if "audit records are being lost" in r.getMessage()
    ]
    assert len(said) == 1  # one episode, one line


@pytest.mark.parametrize("hook", ["command", "in-process"])
def test_the_asyncio_engine_says_an_unwritten_record_as_the_trio_engine_does(
    tmp_path: Path, hook: str
) -> None:
    # A block by a command hook (run in the Trio guest: a crossing) and by an in-process
    # asyncio hook (on the loop: none): either way the answer waits for its record, and says
    # that it could not be written.
    _setup(tmp_path)
    audit = _unwritable_audit(tmp_path)

    async def guard(payload: object) -> dict[str, str]:
        return {"decision": "block", "reason": "in-process says no"}

    if hook == "in-process":
        (tmp_path / "g" / "hooks.toml").unlink()

    got: list[Any] = []

    async def body() -> None:
        async with AsyncioHookEngine.open(
            workspace=tmp_path / "ws", config_dir=tmp_path / "g", state_dir=tmp_path / "state"
        ) as engine:
            if hook == "in-process":
                engine.add_hook("pre_tool", guard, name="no")
            got.append(await engine.pre_tool("bash", RM, session_id="s1"))
            got.append(engine.audit_stats)

    try:
        asyncio_run(body)
    finally:
        audit.chmod(0o700)
    out, stats = got
    assert out.blocked
    assert any("could not write this answer's audit record" in w for w in out.warnings)
    assert stats.lost == 1


def test_the_asyncio_engine_returns_a_block_once_its_record_is_written(tmp_path: Path) -> None:
    # Many at once on the loop: each answer, as it arrives, finds its record in the file.
    _setup(tmp_path)
    state = tmp_path / "state"
    found: list[bool] = []

    async def one(engine: AsyncioHookEngine, session: str) -> None:
        out = await engine.pre_tool("bash", RM, session_id=session)
        assert out.blocked and out.warnings == []
        found.append(session in {r.session for r in _records(state)[0]})

    async def body() -> None:
        async with AsyncioHookEngine.open(
            workspace=tmp_path / "ws", config_dir=tmp_path / "g", state_dir=state
        ) as engine:
            await asyncio.gather(*(one(engine, f"s{i}") for i in range(20)))
            stats = engine.audit_stats
            assert stats is not None and (stats.written, stats.lost) == (20, 0)

    asyncio_run(body)
    assert found == [True] * 20
