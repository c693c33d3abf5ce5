"""The audit sink: audit JSONL per UTC day, hook-run spans, and the last failures of each hook.

This module owns the audit trail of docs/design.md §8 (blitz HK-22, HK-66): records arrive over a
bounded channel from a synchronous :meth:`AuditSink.submit` (never blocks; when the writer can't
keep up, records are dropped and counted), are stamped, redacted and written append-only to
``<state dir>/audit/audit-YYYY-MM-DD.jsonl`` (dir 0700, files 0600, fsync at close) in batches,
in a worker thread. An answer is delivered only once its records are written
(:meth:`AuditSink.deliver`: the event's task waits for the batch holding them); a record that
cannot be written is counted, logged once per failure episode, and said in the answer, which
stands. A day file whose last line was torn (a writer killed mid-write, a full disk) is repaired
when it is opened: the partial line is ended, so the next record starts on its own line. It also
keeps :class:`FailureMemory` (the last five failures per hook, rebuildable from the files) and
opens the OpenTelemetry span ``hook <event>`` for each run.

It must not decide which runs are audited (the dispatcher submits one record per run that
blocks, answers a permission, or fails) and must never put payload content in a span. It never
imports the OpenTelemetry SDK: a front that exports the records elsewhere (OTLP log records,
``triohooks.fronts.otel``) registers a record exporter with :func:`add_record_exporter`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, TypeVar

import msgspec
import trio
from opentelemetry import trace

from triohooks.config import paths as _paths
from triohooks.config.stamps import rfc3339
from triohooks.handlers.outcomes import FAILED_OUTCOMES

from .audit_records import (
    AuditRecord,
    AuditStats,
    FailureMemory,
    _utc_now,
    audit_file,
    is_failure,
)
from .redact import REDACTED, redact, secret_key

logger = logging.getLogger("triohooks.audit")

T = TypeVar("T")

DEFAULT_CAPACITY: Final = 4096
#: Records written per thread round-trip at most.
BATCH: Final = 512
#: Bound on close: writing what is queued, then fsync and close.
CLOSE_TIMEOUT_S: Final = 5.0
#: Error text kept per record (after redaction).
MAX_ERROR_CHARS: Final = 4096
#: How long an answer waits for its records to be written before it is delivered anyway, with
#: a warning that says so (a hung disk must not hang the agent).
WRITE_WAIT_S: Final = 5.0


def audit_dir(state_dir: Path | None = None) -> Path:
    """``<state dir>/audit``; the state dir defaults to :func:`triohooks.config.paths.state_dir`."""
    return (state_dir if state_dir is not None else _paths.state_dir()) / "audit"


# ---------------------------------------------------------------------------------------------
# Record exporters

#: Called with each record a sink queues, as it is written (stamped, redacted, truncated).
RecordExporter = Callable[[AuditRecord], None]

#: Process-wide: every sink calls these from :meth:`AuditSink.submit`.
_record_exporters: list[RecordExporter] = []


def add_record_exporter(exporter: RecordExporter) -> Callable[[], None]:
    """Have every sink of this process call ``exporter(record)`` for each record it queues,
    with the record as the JSONL line has it; returns the function that removes it again.

    It runs synchronously in :meth:`AuditSink.submit` (the dispatcher's task), so it must not
    block: hand the record to a bounded queue and return. One that raises is logged (once
    per exporter) and kept; the record is still written.
    """
    _record_exporters.append(exporter)

    def remove() -> None:
        if exporter in _record_exporters:
            _record_exporters.remove(exporter)

    return remove


#: Exporters that raised (each is logged once).
_failed_exporters: set[RecordExporter] = set()


def _export_record(record: AuditRecord) -> None:
    for exporter in list(_record_exporters):
        try:
            exporter(record)
        except Exception:
            if exporter not in _failed_exporters:
                _failed_exporters.add(exporter)
                logger.exception("an audit record exporter failed (it is kept)")


# ---------------------------------------------------------------------------------------------
# An answer waiting for its records


class AuditWait:
    """The audit records of one answer: :meth:`AuditSink.deliver` makes one for the task that
    computes the answer, :meth:`AuditSink.submit` counts each record submitted in that task (and
    the tasks it starts), the writer settles each once the batch holding it is written or lost."""

    __slots__ = ("lost", "on_done", "open", "pending")

    def __init__(self) -> None:
        #: Records submitted and not yet settled.
        self.pending = 0
        #: Why one of them was not written (the first reason), else None.
        self.lost: str | None = None
        #: Records submitted while open are this answer's; closed once the answer is computed.
        self.open = True
        #: Called once every record is settled (the waiter's wake-up: a trio.Event's ``set``,
        #: or an asyncio future's, on the same thread).
        self.on_done: Callable[[], object] | None = None

    def settle(self, lost: str | None) -> None:
        """One record is written (``lost`` None) or will never be (``lost`` says why)."""
        self.pending -= 1
        if lost is not None and self.lost is None:
            self.lost = lost
        if self.pending == 0 and self.on_done is not None:
            self.on_done()


#: The answer the current task computes, if it waits for its records (a task started from it
#: shares it; :func:`detach_wait` for one that outlives the answer).
_waiting: ContextVar[AuditWait | None] = ContextVar("triohooks_audit_wait", default=None)


@contextmanager
def counting(wait: AuditWait | None) -> Iterator[None]:
    """Records submitted in this context (and tasks started from it) count against ``wait``:
    an answer computed outside :meth:`AuditSink.deliver` (the asyncio engine's, on its loop,
    whose process runs cross into Trio: :func:`within`), settled by
    :meth:`AuditSink.settled`."""
    token = _waiting.set(wait)
    try:
        yield
    finally:
        _waiting.reset(token)


def current_wait() -> AuditWait | None:
    """The answer the current context's records count against, if any."""
    return _waiting.get()


async def within(wait: AuditWait | None, answer: Awaitable[T]) -> T:
    """``await answer`` with its records counted against ``wait`` (in another task: a Trio
    task running part of an asyncio engine's answer)."""
    with counting(wait):
        return await answer


def detach_wait() -> None:
    """The current task's records belong to no answer: for a long-lived task started from an
    event's task (the post worker's consumer), which inherits the event's context."""
    _waiting.set(None)


# ---------------------------------------------------------------------------------------------
# The sink


class _Line(msgspec.Struct, frozen=True):
    """An encoded record, the UTC day whose file it goes to, and the answer waiting for it."""

    day: str
    data: bytes
    wait: AuditWait | None = None


def _redact_tree(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {
            k: REDACTED if isinstance(v, str) and secret_key(str(k)) else _redact_tree(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_redact_tree(v) for v in value]
    return value


def _encode_unknown(value: Any) -> str:
    return redact(str(value))


_encoder = msgspec.json.Encoder(enc_hook=_encode_unknown)


class _DayFiles:
    """The open audit file of the current day. Used by one thread at a time."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._day: str | None = None
        self._fd: int | None = None
        #: Day files found ending in a partial line, and repaired.
        self.torn_tails = 0

    def write(self, lines: list[_Line]) -> None:
        start = 0
        while start < len(lines):
            day = lines[start].day
            end = start
            while end < len(lines) and lines[end].day == day:
                end += 1
            self._write_all(self._open(day), b"".join(line.data for line in lines[start:end]))
            start = end

    def _open(self, day: str) -> int:
        if self._fd is not None and self._day == day:
            return self._fd
        self.close()
        _paths.private_dir(self.directory)
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
        path = audit_file(self.directory, day)
        fd = os.open(path, flags, 0o600)
        try:
            os.fchmod(fd, 0o600)
            self._repair_tail(fd, path)
        except OSError:
            os.close(fd)
            raise
        self._fd, self._day = fd, day
        return fd

    def _repair_tail(self, fd: int, path: Path) -> None:
        """End a torn last line (a writer killed mid-write, a write cut short by a full disk):
        without it the next record would be glued onto the fragment and both lost to every
        reader. The fragment stays, on a line of its own, which readers skip as unreadable.
        Another process appending at that moment costs at most an empty line (each of its
        batches is one O_APPEND write(2), which ours cannot split)."""
        size = os.fstat(fd).st_size
        if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
            return
        self._write_all(fd, b"\n")
        self.torn_tails += 1
        logger.warning(
            "audit file %s ended in a partial line (a write cut short): ended it there, so the "
            "next record starts on its own line (the fragment is skipped by readers)",
            path,
        )

    @staticmethod
    def _write_all(fd: int, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]

    def close(self) -> None:
        """fsync and close the open file, if any."""
        fd, self._fd, self._day = self._fd, None, None
        if fd is None:
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class AuditSink:
    """Audit records in, JSONL files out; see the module docstring.

    Wiring: ``await nursery.start(sink.serve)``, :meth:`submit` from the trio thread, and
    :meth:`close` last (after the post worker's close, so its report gets in).
    """

    def __init__(
        self,
        state_dir: Path | None = None,
        *,
        capacity: int = DEFAULT_CAPACITY,
        now: Callable[[], datetime] = _utc_now,
    ) -> None:
        self.audit_dir = audit_dir(state_dir)
        self.failures = FailureMemory()
        #: Records not written: channel full, sink closed, or the write failed.
        self.dropped = 0
        self.written = 0
        #: Episodes of records lost (one starts at a loss after records were written, or the
        #: first; each is logged once), and whether one lasts now.
        self.failure_episodes = 0
        self.failing = False
        #: Answers delivered before their records were written (past WRITE_WAIT_S).
        self.late = 0
        #: An answer waited WRITE_WAIT_S in vain and no batch finished since: the writer is
        #: stuck (a hung disk), so answers do not wait again until it finishes one.
        self._stuck = False
        self._now = now
        self._files = _DayFiles(self.audit_dir)
        self._send, self._receive = trio.open_memory_channel[_Line](capacity)
        self._scope = trio.CancelScope()
        self._serving = False
        #: Set by close() when it stops the writer: a run started later stops at once.
        self._stopping = False
        #: The batch a crashed run had in hand, written first by the next run.
        self._carried: list[_Line] = []
        self._done = trio.Event()
        self._closed = False

    def submit(self, record: AuditRecord) -> bool:
        """Stamp, redact and queue ``record``; never awaits. False = dropped (counted)."""
        when = record.time or rfc3339(self._now())
        error = record.error
        if error is not None:
            error = redact(error)
            if len(error) > MAX_ERROR_CHARS:
                error = error[:MAX_ERROR_CHARS] + "...(truncated)"
        detail = _redact_tree(record.detail) if record.detail is not None else None
        record = msgspec.structs.replace(record, time=when, error=error, detail=detail)
        if is_failure(record):
            self.failures.add(record.hook, when, error or "")
        wait = _waiting.get()
        if wait is not None and not wait.open:
            wait = None
        line = _Line(self._day_of(when), _encoder.encode(record) + b"\n", wait)
        if wait is not None:
            wait.pending += 1
        try:
            self._send.send_nowait(line)
        except (trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError):
            why = "the audit queue is full" if not self._closed else "the audit sink is closed"
            self._lose([line], why)
            return False
        if _record_exporters:
            _export_record(record)
        return True

    def _day_of(self, when: str) -> str:
        try:
            stamp = datetime.fromisoformat(when)
        except ValueError:
            stamp = self._now()
        if stamp.tzinfo is None:
            stamp = stamp.replace(tzinfo=UTC)
        return stamp.astimezone(UTC).date().isoformat()

    def _lose(self, lines: list[_Line], why: str) -> None:
        """Count ``lines`` as lost, settle their answers' waits, and log the start of an episode
        once (a loss after records were written again starts a new one)."""
        self.dropped += len(lines)
        for line in lines:
            if line.wait is not None:
                line.wait.settle(why)
        if not self.failing:
            self.failing = True
            self.failure_episodes += 1
            logger.warning(
                "audit records are being lost: %s (logged once until one is written again; "
                "counted in stats, and said in each answer whose record is lost)",
                why,
            )

    def _recovered(self) -> None:
        if self.failing:
            self.failing = False
            logger.warning(
                "audit records are written again (%d lost so far, in %d episode(s))",
                self.dropped,
                self.failure_episodes,
            )

    def stats(self) -> AuditStats:
        """The sink's numbers, for ``stats`` (docs/protocol.md) and embedders."""
        return AuditStats(
            written=self.written,
            lost=self.dropped,
            failure_episodes=self.failure_episodes,
            failing=self.failing,
            torn_tails=self._files.torn_tails,
            late=self.late,
        )

    async def deliver(self, answer: Awaitable[T]) -> tuple[T, str | None]:
        """``await answer`` (an event being answered, in this task), then wait until every
        record submitted while computing it is written to the day file (the kernel has it;
        no fsync): the batch holding them, with whatever else was queued. Returns the answer
        and None, or the answer and the warning to deliver with it (:meth:`settled`).
        The answer itself stands: the audit records decisions, it does not take them.
        A checkpoint when ``answer`` is one; on cancel the records are still written."""
        wait = AuditWait()
        token = _waiting.set(wait)
        try:
            result = await answer
        finally:
            wait.open = False
            _waiting.reset(token)
        return result, await self.settled(wait)

    async def settled(self, wait: AuditWait) -> str | None:
        """Wait until every record of the closed ``wait`` is written (at most WRITE_WAIT_S,
        and not at all while the writer is stuck); then :meth:`verdict`. A checkpoint only
        when one is pending."""
        wait.open = False
        if self.worth_waiting(wait):
            done = trio.Event()
            wait.on_done = done.set
            with trio.move_on_after(WRITE_WAIT_S):
                await done.wait()
        return self.verdict(wait)

    def worth_waiting(self, wait: AuditWait) -> bool:
        """Whether an answer is to wait for ``wait``'s records: some are pending and the writer
        is not stuck (while it is, answers go out at once, each saying so)."""
        return wait.pending > 0 and not self._stuck

    def verdict(self, wait: AuditWait) -> str | None:
        """After the wait: None, or the warning to deliver with the answer: a record that could
        not be written (counted, logged once per episode), or one still pending (the writer is
        slow or hung: counted as late, logged once until a write finishes)."""
        wait.on_done = None
        if wait.pending:
            self.late += 1
            if not self._stuck:
                self._stuck = True
                logger.warning(
                    "an answer's audit record was not written within %.0f s (the audit "
                    "disk is slow or hung): answers go out without waiting for their "
                    "records, each saying so, until a write finishes",
                    WRITE_WAIT_S,
                )
            return (
                f"triohooks could not confirm this answer's audit record within "
                f"{WRITE_WAIT_S:.0f} s (the audit disk is slow or hung); the answer stands"
            )
        if wait.lost is None:
            return None
        return (
            f"triohooks could not write this answer's audit record ({wait.lost}); the answer "
            f"stands ({self.dropped} audit record(s) lost so far)"
        )

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Write queued records in batches (in a worker thread) until closed.

        Returns when :meth:`close` has closed intake and everything queued is written. On
        cancel it finishes the batch in hand, fsyncs and closes the file (shielded, bounded)
        and re-raises. Safe to run again after a crash (the supervisor does): the queue lives in
        the sink, and the batch in hand when it crashed is written first by the next run.
        """
        if self._serving:
            raise RuntimeError("AuditSink.serve is already running")
        self._serving = True
        self._scope = trio.CancelScope()
        if self._stopping:
            self._scope.cancel()
        crashed = False
        try:
            with self._scope:
                task_status.started()
                if self._carried:
                    batch, self._carried = self._carried, []
                    await self._write_batch(batch)
                async for first in self._receive:
                    batch = [first]
                    while len(batch) < BATCH:
                        try:
                            batch.append(self._receive.receive_nowait())
                        except (trio.WouldBlock, trio.EndOfChannel):
                            break
                    await self._write_batch(batch)
        except Exception:
            crashed = True
            logger.exception(
                "the audit writer crashed; %d records carried over", len(self._carried)
            )
            raise
        finally:
            with trio.move_on_after(CLOSE_TIMEOUT_S, shield=True):
                try:
                    await trio.to_thread.run_sync(self._files.close, abandon_on_cancel=True)
                except OSError:
                    logger.exception("closing the audit file failed")
            self._serving = False
            if not crashed:
                self._done.set()

    async def _write_batch(self, batch: list[_Line]) -> None:
        """Write ``batch``; if that raises (not an OSError: a bug), keep it for the next run."""
        try:
            await self._write(batch)
        except Exception:
            self._carried = batch
            raise

    async def _write(self, batch: list[_Line]) -> None:
        try:
            await trio.to_thread.run_sync(self._files.write, batch)
        except OSError as exc:
            self._stuck = False
            # An expected failure (a full disk, a state dir we may not write): one line, no
            # traceback, once per episode. The file is closed: the next batch opens it again,
            # which repairs a line this write left torn.
            logger.debug("writing %d audit records failed", len(batch), exc_info=True)
            self._lose(batch, f"write failed: {exc}")
            await trio.to_thread.run_sync(self._files_reset)
        else:
            self._stuck = False
            self.written += len(batch)
            self._recovered()
            for line in batch:
                if line.wait is not None:
                    line.wait.settle(None)

    def _files_reset(self) -> None:
        try:
            self._files.close()
        except OSError:
            logger.exception("closing the audit file failed")

    async def close(self) -> None:
        """Stop intake, write what is queued, fsync and close; bounded by CLOSE_TIMEOUT_S.

        A checkpoint. Runs the writer itself if nobody served. Records still queued when
        the bound runs out are dropped and counted. On cancel it stops the writer (which
        still fsyncs, shielded) and re-raises.
        """
        if self._closed:
            return
        self._closed = True
        self._send.close()
        try:
            with trio.move_on_after(CLOSE_TIMEOUT_S):
                if self._serving:
                    await self._done.wait()
                else:
                    await self.serve()
        finally:
            self._stopping = True
            self._scope.cancel()
            if self._serving:
                with trio.move_on_after(1.0, shield=True):
                    await self._done.wait()
            left: list[_Line] = []
            while True:
                try:
                    left.append(self._receive.receive_nowait())
                except (trio.WouldBlock, trio.EndOfChannel):
                    break
            self._receive.close()
            if left:
                self._lose(left, "the audit sink closed before they were written")
            if self.dropped:
                logger.warning("audit sink dropped %d records", self.dropped)


# ---------------------------------------------------------------------------------------------
# Spans

_tracer = trace.get_tracer("triohooks")

ATTR_EVENT: Final = "triohooks.event"
ATTR_HOOK: Final = "triohooks.hook.id"
ATTR_DIALECT: Final = "triohooks.hook.dialect"
ATTR_OUTCOME: Final = "triohooks.outcome"
ATTR_DURATION_MS: Final = "triohooks.duration_ms"
ATTR_INPUT_BYTES: Final = "triohooks.input_bytes"
ATTR_OUTPUT_BYTES: Final = "triohooks.output_bytes"
#: OpenTelemetry semantic conventions: the agent session (a GenAI conversation), and the class
#: of a failure (the run's outcome: error, timeout, spawn_failed, killed).
ATTR_SESSION: Final = "gen_ai.conversation.id"
ATTR_ERROR_TYPE: Final = "error.type"


def hook_span(
    event: str,
    hook_id: str,
    dialect: str,
    *,
    session: str | None = None,
    tracer: trace.Tracer | None = None,
) -> AbstractContextManager[trace.Span]:
    """The span ``hook <event>`` around one hook run; set the outcome with :func:`end_run`.

    Exceptions are not recorded on the span (their text may carry payload content). With no
    OpenTelemetry SDK configured the span is a no-op.
    """
    if tracer is None and isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        # No SDK configured: skip the API's no-op span machinery (~5 us a run on the hot path).
        return nullcontext(trace.INVALID_SPAN)
    attributes = {ATTR_EVENT: event, ATTR_HOOK: hook_id, ATTR_DIALECT: dialect}
    if session:
        attributes[ATTR_SESSION] = session
    return (tracer or _tracer).start_as_current_span(
        f"hook {event}", attributes=attributes, record_exception=False
    )


def end_run(
    span: trace.Span,
    *,
    outcome: str,
    duration_ms: float,
    input_bytes: int | None = None,
    output_bytes: int | None = None,
) -> None:
    """Set a run's outcome attributes: sizes and names only, never content. A failed run
    also gets ``error.type`` (its outcome) and the status ERROR, without a description."""
    if not span.is_recording():
        return
    attrs: dict[str, str | float | int] = {ATTR_OUTCOME: outcome, ATTR_DURATION_MS: duration_ms}
    if input_bytes is not None:
        attrs[ATTR_INPUT_BYTES] = input_bytes
    if output_bytes is not None:
        attrs[ATTR_OUTPUT_BYTES] = output_bytes
    failed = outcome in FAILED_OUTCOMES
    if failed:
        attrs[ATTR_ERROR_TYPE] = outcome
    span.set_attributes(attrs)
    if failed:
        span.set_status(trace.StatusCode.ERROR)
