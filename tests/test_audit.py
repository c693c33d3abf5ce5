"""The audit sink: files per UTC day, modes, append-only, redaction, drops, failure memory, spans.

Real files in tmp_path and the real clock (the writer runs in a worker thread); the day comes
from an injected ``now``.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
import trio.testing
from opentelemetry import trace

from triohooks.actors.audit import (
    ATTR_DIALECT,
    ATTR_DURATION_MS,
    ATTR_EVENT,
    ATTR_HOOK,
    ATTR_OUTCOME,
    WRITE_WAIT_S,
    AuditSink,
    end_run,
    hook_span,
)
from triohooks.actors.audit_records import (
    FAILURES_KEPT,
    AuditRecord,
    FailureMemory,
    audit_file,
    read_records,
)
from triohooks.actors.post_worker import WorkerReport

FIELDS = [
    "time",
    "session",
    "kind",
    "event",
    "hook",
    "decision",
    "error",
    "duration_ms",
    "workspace",
]


class Clock:
    def __init__(self, when: datetime) -> None:
        self.when = when

    def __call__(self) -> datetime:
        return self.when


def rec(hook: str = "h1", *, error: str | None = None, decision: str | None = "block", **kw: Any):
    fields: dict[str, Any] = {
        "session": "s1",
        "kind": "hook",
        "event": "pre_tool",
        "hook": hook,
        "decision": decision,
        "error": error,
        "duration_ms": 1.5,
        "workspace": "/w",
    }
    fields.update(kw)
    return AuditRecord(**fields)


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


async def run_sink(sink: AuditSink, records: list[AuditRecord]) -> None:
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            await nursery.start(sink.serve)
            for r in records:
                assert sink.submit(r)
            await sink.close()


@contextlib.contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


async def test_writes_jsonl_with_private_modes(tmp_path: Path) -> None:
    now = Clock(datetime(2024, 3, 1, 12, 0, 0, 123456, tzinfo=UTC))
    sink = AuditSink(tmp_path, now=now)
    with umask(0):
        await run_sink(sink, [rec(), rec("h2", decision="hook-allow", event="permission_request")])
    audit_dir = tmp_path / "audit"
    path = audit_dir / "audit-2024-03-01.jsonl"
    assert stat.S_IMODE(audit_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    got = lines(path)
    assert [list(r) for r in got] == [FIELDS, FIELDS]
    assert got[0] == {
        "time": "2024-03-01T12:00:00.123Z",
        "session": "s1",
        "kind": "hook",
        "event": "pre_tool",
        "hook": "h1",
        "decision": "block",
        "error": None,
        "duration_ms": 1.5,
        "workspace": "/w",
    }
    assert got[1]["decision"] == "hook-allow"
    assert sink.written == 2 and sink.dropped == 0


async def test_existing_file_is_tightened_and_appended(tmp_path: Path) -> None:
    now = Clock(datetime(2024, 3, 1, tzinfo=UTC))
    path = audit_file(tmp_path / "audit", "2024-03-01")
    path.parent.mkdir()
    path.write_bytes(b'{"old": 1}\n')
    path.chmod(0o644)
    await run_sink(AuditSink(tmp_path, now=now), [rec("first")])
    await run_sink(AuditSink(tmp_path, now=now), [rec("second"), rec("third")])
    data = path.read_bytes()
    assert data.startswith(b'{"old": 1}\n')
    assert [r.get("hook") for r in lines(path)] == [None, "first", "second", "third"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


async def test_one_file_per_utc_day(tmp_path: Path) -> None:
    now = Clock(datetime(2024, 3, 1, 23, 59, 59, 900000, tzinfo=UTC))
    sink = AuditSink(tmp_path, now=now)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            await nursery.start(sink.serve)
            sink.submit(rec("a"))
            while sink.written == 0:  # "a" written alone: the next batch finds 03-01 open
                await trio.sleep(0.005)
            now.when += timedelta(milliseconds=200)
            sink.submit(rec("b"))
            # 01:30 at +02:00 is 23:30 UTC the day before.
            now.when = datetime(2024, 3, 3, 1, 30, tzinfo=timezone(timedelta(hours=2)))
            sink.submit(rec("c"))
            # A caller's own timestamp picks its day.
            sink.submit(rec("d", time="2024-02-28T10:00:00Z"))
            await sink.close()
    audit = tmp_path / "audit"
    assert sorted(p.name for p in audit.iterdir()) == [
        "audit-2024-02-28.jsonl",
        "audit-2024-03-01.jsonl",
        "audit-2024-03-02.jsonl",
    ]
    assert [r["hook"] for r in lines(audit / "audit-2024-03-01.jsonl")] == ["a"]
    day2 = lines(audit / "audit-2024-03-02.jsonl")
    assert [(r["hook"], r["time"]) for r in day2] == [
        ("b", "2024-03-02T00:00:00.100Z"),
        ("c", "2024-03-02T23:30:00.000Z"),
    ]
    assert lines(audit / "audit-2024-02-28.jsonl")[0]["time"] == "2024-02-28T10:00:00Z"


async def test_state_dir_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIOHOOKS_STATE_DIR", str(tmp_path / "state"))
    now = Clock(datetime(2024, 5, 6, tzinfo=UTC))
    sink = AuditSink(now=now)
    assert sink.audit_dir == tmp_path / "state" / "audit"
    await run_sink(sink, [rec()])
    assert (tmp_path / "state" / "audit" / "audit-2024-05-06.jsonl").exists()


async def test_secrets_are_redacted_in_error_and_detail(tmp_path: Path) -> None:
    now = Clock(datetime(2024, 3, 1, tzinfo=UTC))
    sink = AuditSink(tmp_path, now=now)
    leaked = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    record = rec(
        error=f"curl failed: Authorization: Bearer abcdefgh12345678 token={leaked}",
        decision="error",
        detail={
            "stderr": f"API_KEY=abc {leaked}",
            "nested": [{"password": "pw", "user": "bob"}],
            "n": 3,
        },
    )
    await run_sink(sink, [record])
    raw = (tmp_path / "audit" / "audit-2024-03-01.jsonl").read_text()
    assert leaked not in raw and "abcdefgh12345678" not in raw and "API_KEY=abc" not in raw
    got = json.loads(raw)
    assert got["error"] == "curl failed: Authorization: [REDACTED] token=[REDACTED]"
    assert got["detail"] == {
        "stderr": "API_KEY=[REDACTED] [REDACTED]",
        "nested": [{"password": "[REDACTED]", "user": "bob"}],
        "n": 3,
    }
    assert sink.failures.recent("h1") == [("2024-03-01T00:00:00.000Z", got["error"])]


async def test_worker_close_report_goes_in_as_detail(tmp_path: Path) -> None:
    report = WorkerReport(
        offered=10,
        ran=7,
        failed=1,
        dropped_full=0,
        dropped_at_close=3,
        killed=1,
        warnings=0,
        drain_seconds=5.0,
        max_depth=9,
    )
    record = AuditRecord(
        session="",
        kind="worker",
        event="close",
        hook="",
        decision=None,
        error=None,
        duration_ms=5000.0,
        workspace="/w",
        detail=msgspec.structs.asdict(report),
    )
    now = Clock(datetime(2024, 3, 1, tzinfo=UTC))
    await run_sink(AuditSink(tmp_path, now=now), [record])
    (got,) = lines(tmp_path / "audit" / "audit-2024-03-01.jsonl")
    assert got["kind"] == "worker"
    assert msgspec.convert(got["detail"], WorkerReport) == report


async def test_full_channel_drops_are_counted_and_never_block(tmp_path: Path) -> None:
    now = Clock(datetime(2024, 3, 1, tzinfo=UTC))
    sink = AuditSink(tmp_path, capacity=2, now=now)
    # Nobody serves yet: the channel fills and submit keeps returning at once.
    assert [sink.submit(rec(f"h{i}")) for i in range(5)] == [True, True, False, False, False]
    assert sink.dropped == 3
    with trio.fail_after(5):
        await sink.close()  # writes what was queued itself
    assert sink.written == 2
    assert not sink.submit(rec("late"))
    assert sink.dropped == 4
    got = lines(tmp_path / "audit" / "audit-2024-03-01.jsonl")
    assert [r["hook"] for r in got] == ["h0", "h1"]


async def test_write_failure_is_counted_and_the_sink_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "audit").write_text("not a directory")
    now = Clock(datetime(2024, 3, 1, tzinfo=UTC))
    sink = AuditSink(tmp_path, now=now)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            await nursery.start(sink.serve)
            sink.submit(rec("a"))
            while sink.dropped == 0:  # the write of "a" failed
                await trio.sleep(0.005)
            (tmp_path / "audit").unlink()
            sink.submit(rec("b"))
            await sink.close()
    assert sink.dropped == 1 and sink.written == 1
    assert any(
        "audit records are being lost: write failed" in r.getMessage() for r in caplog.records
    )
    assert [r["hook"] for r in lines(tmp_path / "audit" / "audit-2024-03-01.jsonl")] == ["b"]


def unwritable(path: Path) -> Callable[[], None]:
    """Make the day file ``path`` one no record can be written to, through a real fd: as root
    a /dev/full node (write(2) fails with ENOSPC), else a directory we may not write. Returns
    what makes the other days' files writable again."""
    path.parent.mkdir(mode=0o700, exist_ok=True)
    if os.geteuid() == 0:
        os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 7))
        return lambda: None
    path.parent.chmod(0o500)
    return lambda: path.parent.chmod(0o700)


async def test_answers_wait_for_their_records_and_losses_are_said_once_per_episode(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Three days: the first and the third day file cannot be written, the second can. Each
    # answer is delivered after its record's batch; a lost one says so in its warning.
    audit = tmp_path / "audit"
    days = ["2024-03-01", "2024-03-02", "2024-03-03"]
    sink = AuditSink(tmp_path, now=Clock(datetime(2024, 3, 1, tzinfo=UTC)))

    async def answer(hook: str, day: str) -> str:
        await trio.lowlevel.checkpoint()
        assert sink.submit(rec(hook, time=f"{day}T12:00:00Z"))
        return f"answer {hook}"

    got: list[tuple[str, str | None, list[str]]] = []
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            await nursery.start(sink.serve)
            restore = unwritable(audit_file(audit, days[0]))
            for hook, day in [("a1", days[0]), ("a2", days[0]), ("b", days[1])]:
                if hook == "b":
                    restore()
                result, warning = await sink.deliver(answer(hook, day))
                present = audit_file(audit, days[1])
                on_disk = [r["hook"] for r in lines(present)] if present.exists() else []
                got.append((result, warning, on_disk))
            assert sink.stats().failing is False
            restore = unwritable(audit_file(audit, days[2]))
            result, warning = await sink.deliver(answer("c", days[2]))
            got.append((result, warning, []))
            stats = sink.stats()
            await sink.close()
            restore()
    (a1, a2, b, c) = got
    assert a1[0] == "answer a1" and a1[1] is not None
    assert "could not write this answer's audit record (write failed:" in a1[1]
    assert "the answer stands (1 audit record(s) lost so far)" in a1[1]
    assert a2[1] is not None and "(2 audit record(s) lost so far)" in a2[1]
    assert b == ("answer b", None, ["b"])  # in the file when its answer was delivered
    assert c[1] is not None and "(3 audit record(s) lost so far)" in c[1]
    assert (stats.written, stats.lost, stats.failure_episodes, stats.failing) == (1, 3, 2, True)
    said = [r.getMessage() for r in caplog.records if r.name == "triohooks.audit"]
    # One line per episode (not per record), and one when records are written again.
    assert sum("audit records are being lost" in m for m in said) == 2
    assert sum("audit records are written again (2 lost so far" in m for m in said) == 1


async def test_a_record_of_no_answer_is_not_waited_for(tmp_path: Path) -> None:
    sink = AuditSink(tmp_path, now=Clock(datetime(2024, 3, 1, tzinfo=UTC)))

    async def nothing() -> int:
        await trio.lowlevel.checkpoint()
        return 7

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            await nursery.start(sink.serve)
            assert await sink.deliver(nothing()) == (7, None)
            # A record submitted after the answer was computed is not that answer's.
            sink.submit(rec("outside"))
            await sink.close()
    assert sink.written == 1


async def test_a_hung_disk_delays_an_answer_by_the_bound_then_says_so(
    tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    # The day file is a FIFO whose buffer is full: the writer thread's write(2) blocks until
    # the test drains it, as on a hung disk. The answer comes after WRITE_WAIT_S, saying so.
    # The clock jumps once the run has been idle for 0.5 s of real time: a write that
    # finishes (in the worker thread) is never overtaken by a jump.
    mock_clock.autojump_threshold = 0.5
    audit = tmp_path / "audit"
    audit.mkdir(mode=0o700)
    fifo = audit_file(audit, "2024-03-01")
    os.mkfifo(fifo, 0o600)
    keep = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    try:
        with contextlib.suppress(BlockingIOError):
            while True:
                os.write(keep, b"x" * 65536)
        sink = AuditSink(tmp_path, now=Clock(datetime(2024, 3, 1, tzinfo=UTC)))

        async def blocked() -> str:
            sink.submit(rec("late"))
            await trio.lowlevel.checkpoint()
            return "block"

        async with trio.open_nursery() as nursery:
            await nursery.start(sink.serve)
            start = trio.current_time()
            with trio.fail_after(WRITE_WAIT_S + 5):
                result, warning = await sink.deliver(blocked())
            waited = trio.current_time() - start
            assert result == "block" and warning is not None
            assert "could not confirm this answer's audit record within 5 s" in warning
            assert waited == pytest.approx(WRITE_WAIT_S, abs=0.5)
            # While the writer is stuck, answers do not wait for it again (each says so).
            start = trio.current_time()
            result, warning = await sink.deliver(blocked())
            assert warning is not None and "within 5 s" in warning
            assert trio.current_time() - start < 0.5 and sink.stats().late == 2
            with contextlib.suppress(BlockingIOError):
                while os.read(keep, 65536):  # the disk answers: the writer goes on
                    pass
            with trio.fail_after(WRITE_WAIT_S):
                while sink.stats().written < 2:  # the stuck batch, then the next one
                    await trio.sleep(0.01)
            # The writer unstuck, answers wait for their records again.
            with trio.fail_after(WRITE_WAIT_S - 1):
                assert await sink.deliver(blocked()) == ("block", None)
            await sink.close()
    finally:
        os.close(keep)


async def test_a_torn_tail_is_ended_at_open_and_counted(tmp_path: Path) -> None:
    # A writer killed mid-write left half a record; the next record starts on its own line.
    now = Clock(datetime(2024, 3, 1, tzinfo=UTC))
    path = audit_file(tmp_path / "audit", "2024-03-01")
    await run_sink(AuditSink(tmp_path, now=now), [rec("before")])
    torn = b'{"time":"2024-03-01T00:00:01Z","session":"s1","kind":"ho'
    with path.open("ab") as f:
        f.write(torn)
    sink = AuditSink(tmp_path, now=now)
    await run_sink(sink, [rec("after")])
    raw = path.read_bytes().split(b"\n")
    assert raw[1] == torn and raw[-1] == b""
    assert [json.loads(raw[0])["hook"], json.loads(raw[2])["hook"]] == ["before", "after"]
    assert sink.stats().torn_tails == 1
    assert [r.hook for r in read_records(tmp_path / "audit", now=now)] == ["before", "after"]
    # A file that ends in a whole line is left as it is.
    again = AuditSink(tmp_path, now=now)
    await run_sink(again, [rec("third")])
    assert again.stats().torn_tails == 0 and len(path.read_bytes().splitlines()) == 4


async def test_failure_memory_keeps_the_last_five_and_rebuilds_from_files(
    tmp_path: Path,
) -> None:
    now = Clock(datetime(2024, 3, 1, 8, tzinfo=UTC))
    sink = AuditSink(tmp_path, now=now)
    records = []
    for i in range(7):
        records.append(rec("flaky", error=f"exit {i}", decision="error"))
    records.append(rec("other", error="boom", decision=None, workspace="/elsewhere"))
    records.append(rec("blocker", error="blocked: no rm"))  # a block's reason is no failure
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            await nursery.start(sink.serve)
            for i, r in enumerate(records):
                now.when = datetime(2024, 3, 1, 8, tzinfo=UTC) + timedelta(hours=i * 5)
                sink.submit(r)
            await sink.close()
    kept = sink.failures.recent("flaky")
    assert [e for _, e in kept] == [f"exit {i}" for i in range(2, 7)]
    assert len(kept) == FAILURES_KEPT
    assert sink.failures.recent("blocker") == []
    assert sorted(sink.failures.hooks()) == ["flaky", "other"]

    # A torn last line (crash mid-write) is skipped.
    newest = sorted((tmp_path / "audit").iterdir())[-1]
    with newest.open("ab") as f:
        f.write(b'{"time": "2024-03-02T')
    later = Clock(now.when)
    rebuilt = FailureMemory.from_audit_dir(tmp_path / "audit", now=later)
    assert rebuilt.recent("flaky") == kept
    assert rebuilt.recent("other") == sink.failures.recent("other")
    only_w = FailureMemory.from_audit_dir(tmp_path / "audit", now=later, workspace="/w")
    assert only_w.recent("other") == [] and only_w.recent("flaky") == kept
    # Outside the window of days, nothing is read.
    far = Clock(now.when + timedelta(days=30))
    assert FailureMemory.from_audit_dir(tmp_path / "audit", now=far).hooks() == []
    assert FailureMemory.from_audit_dir(tmp_path / "missing", now=later).hooks() == []


async def test_close_without_serve_and_twice(tmp_path: Path) -> None:
    sink = AuditSink(tmp_path, now=Clock(datetime(2024, 3, 1, tzinfo=UTC)))
    with trio.fail_after(5):
        await sink.close()
        await sink.close()
    assert sink.written == 0 and not (tmp_path / "audit").exists()


def test_long_errors_are_clipped(tmp_path: Path) -> None:
    sink = AuditSink(tmp_path, now=Clock(datetime(2024, 3, 1, tzinfo=UTC)))
    sink.submit(rec(error="x" * 10_000, decision="error"))
    ((_, kept),) = sink.failures.recent("h1")
    assert len(kept) < 4200 and kept.endswith("...(truncated)")


# ---------------------------------------------------------------------------------------------
# Spans


class RecordingSpan(trace.NonRecordingSpan):
    def __init__(self, name: str, attributes: dict[str, Any]) -> None:
        super().__init__(trace.INVALID_SPAN_CONTEXT)
        self.name = name
        self.attributes = dict(attributes)
        self.ended = False

    def is_recording(self) -> bool:
        return True

    def set_attributes(self, attributes: Any) -> None:
        self.attributes.update(attributes)

    def record_exception(self, *args: Any, **kwargs: Any) -> None:
        raise AssertionError("exceptions must not be recorded")

    def end(self, end_time: int | None = None) -> None:
        self.ended = True


class RecordingTracer(trace.NoOpTracer):
    def __init__(self) -> None:
        self.spans: list[RecordingSpan] = []

    @contextlib.contextmanager
    def start_as_current_span(  # type: ignore[override]
        self, name: str, *, attributes: Any = None, record_exception: bool = True, **_: Any
    ) -> Iterator[trace.Span]:
        assert record_exception is False
        span = RecordingSpan(name, attributes or {})
        self.spans.append(span)
        try:
            yield span
        finally:
            span.end()


async def test_hook_span_attributes() -> None:
    tracer = RecordingTracer()
    with hook_span("pre_tool", "fmt", "toml", tracer=tracer) as span:
        end_run(span, outcome="block", duration_ms=12.5, input_bytes=300, output_bytes=20)
    (got,) = tracer.spans
    assert got.name == "hook pre_tool" and got.ended
    assert got.attributes == {
        ATTR_EVENT: "pre_tool",
        ATTR_HOOK: "fmt",
        ATTR_DIALECT: "toml",
        ATTR_OUTCOME: "block",
        ATTR_DURATION_MS: 12.5,
        "triohooks.input_bytes": 300,
        "triohooks.output_bytes": 20,
    }


async def test_hook_span_without_sdk_is_a_no_op() -> None:
    with pytest.raises(ValueError, match="hook bug"), hook_span("post_tool", "h", "json") as span:
        assert not span.is_recording()
        end_run(span, outcome="error", duration_ms=1.0)
        raise ValueError("hook bug")
