"""The audit sink: audit JSONL per UTC day, hook-run spans, and the last failures of each hook.

This module owns the audit trail of docs/design.md §8 (blitz HK-22, HK-66): records arrive over a
bounded channel from a synchronous :meth:`AuditSink.submit` (never blocks the dispatcher; when
the writer can't keep up, records are dropped and counted), are stamped, redacted and written
append-only to ``<state dir>/audit/audit-YYYY-MM-DD.jsonl`` (dir 0700, files 0600, fsync at
close). It also keeps :class:`FailureMemory` (the last five failures per hook, rebuildable
from the files) and opens the OpenTelemetry span ``hook <event>`` for each run.

It must not decide which runs are audited (the dispatcher submits one record per run that
blocks, answers a permission, or fails) and must never put payload content in a span. It never
imports the OpenTelemetry SDK: a front that exports the records elsewhere (OTLP log records,
``triohooks.fronts.otel``) registers a record exporter with :func:`add_record_exporter`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import msgspec
import trio
from opentelemetry import trace

from triohooks.config import paths as _paths
from triohooks.config.stamps import rfc3339
from triohooks.handlers.outcomes import FAILED_OUTCOMES

from .audit_records import AuditRecord, FailureMemory, _utc_now, audit_file, is_failure
from .redact import REDACTED, redact, secret_key

logger = logging.getLogger("triohooks.audit")

DEFAULT_CAPACITY: Final = 4096
#: Records written per thread round-trip at most.
BATCH: Final = 512
#: Bound on close: writing what is queued, then fsync and close.
CLOSE_TIMEOUT_S: Final = 5.0
#: Error text kept per record (after redaction).
MAX_ERROR_CHARS: Final = 4096


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
# The sink


class _Line(msgspec.Struct, frozen=True):
    """An encoded record and the UTC day whose file it goes to."""

    day: str
    data: bytes


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
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
        fd = os.open(audit_file(self.directory, day), flags, 0o600)
        try:
            os.fchmod(fd, 0o600)
        except OSError:
            os.close(fd)
            raise
        self._fd, self._day = fd, day
        return fd

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
        self._warned_drop = False

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
        line = _Line(self._day_of(when), _encoder.encode(record) + b"\n")
        try:
            self._send.send_nowait(line)
        except (trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError):
            self._count_dropped(1, "the audit sink is full or closed")
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

    def _count_dropped(self, n: int, why: str) -> None:
        self.dropped += n
        if not self._warned_drop:
            self._warned_drop = True
            logger.warning("audit records are being dropped: %s", why)

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
            # An expected failure (a full disk, a state dir we may not write): one line, no
            # traceback; _count_dropped warns once per sink.
            logger.debug("writing %d audit records failed", len(batch), exc_info=True)
            self._count_dropped(len(batch), f"write failed: {exc}")
            await trio.to_thread.run_sync(self._files_reset)
        else:
            self.written += len(batch)

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
            left = 0
            while True:
                try:
                    self._receive.receive_nowait()
                except (trio.WouldBlock, trio.EndOfChannel):
                    break
                left += 1
            self._receive.close()
            if left:
                self._count_dropped(left, "closed before they were written")
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
