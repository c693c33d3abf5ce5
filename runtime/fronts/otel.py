"""OTLP export for the CLI fronts (``serve``, ``fire``, ``demo``): docs/design.md §9,
docs/observability.md.

When ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or a per-signal ``OTEL_EXPORTER_OTLP_{TRACES,LOGS,METRICS}
_ENDPOINT``) is set and the ``otel`` extra is installed, :func:`start` sets up the OpenTelemetry
SDK from the standard ``OTEL_*`` variables and exports, over OTLP/HTTP (protobuf; gRPC when its
exporter is installed and asked for):

- traces: the ``hook <event>`` span of every hook run (:func:`triohooks.actors.audit.hook_span`),
- logs: every audit record, as the JSONL has it (stamped, redacted), as one log record
  (:func:`triohooks.actors.audit.add_record_exporter`),
- metrics: events, blocks, hook failures, drops and hook durations, from the engine's listeners
  (:meth:`Telemetry.watch`).

Spans and log records go through a bounded queue each (:class:`Batcher`), exported in batches by
a daemon thread: a hook decision only ever appends to a deque under a lock, so a slow or absent
collector never slows one. What cannot be sent is dropped and counted by reason (queue full,
export failed, left at exit); :meth:`Telemetry.stats` has the counts and the
``triohooks.dropped`` metric reports them. Closing is bounded (:data:`FIRE_CLOSE_S` for ``fire``,
which prints its Outcome first; :data:`CLOSE_S` otherwise).

With no endpoint, or without the extra, :func:`start` does nothing (one debug line; one warning
when an endpoint is set but the extra is missing) and imports nothing of the SDK. The library
itself never calls this: an embedding application configures its own SDK.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import threading
import time
from collections import Counter as Tally
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Generic, Literal, Protocol, TypeVar

import msgspec
import trio

from triohooks.actors.audit import (
    ATTR_DURATION_MS,
    ATTR_ERROR_TYPE,
    ATTR_EVENT,
    ATTR_HOOK,
    ATTR_SESSION,
)
from triohooks.actors.audit_records import AuditRecord

log = logging.getLogger("triohooks.otel")

Signal = Literal["traces", "logs", "metrics"]
SIGNALS: Final[tuple[Signal, ...]] = ("traces", "logs", "metrics")

#: ``service.name`` when neither OTEL_SERVICE_NAME nor OTEL_RESOURCE_ATTRIBUTES names one.
SERVICE_NAME: Final = "triohooks"
#: The instrumentation scope of the log records and metrics (spans: ``triohooks``, audit.py).
SCOPE: Final = "triohooks"
#: The log records' event name (the OTLP LogRecord ``event_name`` field).
AUDIT_EVENT_NAME: Final = "triohooks.audit"

#: Log record attributes of the audit fields that have no span or semantic-convention name
#: (session: gen_ai.conversation.id, event: triohooks.event, hook: triohooks.hook.id,
#: duration_ms: triohooks.duration_ms, as on the spans).
ATTR_AUDIT_KIND: Final = "triohooks.audit.kind"
ATTR_AUDIT_DECISION: Final = "triohooks.audit.decision"
ATTR_AUDIT_ERROR: Final = "triohooks.audit.error"
ATTR_AUDIT_DETAIL: Final = "triohooks.audit.detail"
ATTR_AUDIT_TRUNCATED: Final = "triohooks.audit.truncated"
ATTR_AUDIT_TIME: Final = "triohooks.audit.time"
ATTR_WORKSPACE: Final = "triohooks.workspace"
#: ``triohooks.dropped``: what was dropped (span, log_record, background_event); the reason is
#: its ``error.type``.
ATTR_DROPPED_KIND: Final = "triohooks.dropped.kind"

#: Bound on closing for ``fire`` (after its Outcome is printed), unless OTEL_EXPORTER_OTLP_TIMEOUT
#: is set (then that, up to :data:`FIRE_CLOSE_MAX_S`): spans and logs share the first
#: :data:`SIGNALS_SHARE` of it, then the last metrics export gets the rest. The exporters' own
#: request timeout is capped to fit, so a collector that never answers costs at most this.
FIRE_CLOSE_S: Final = 0.5
FIRE_CLOSE_MAX_S: Final = 10.0
#: Bound on closing for ``serve`` and ``demo``.
CLOSE_S: Final = 5.0
SIGNALS_SHARE: Final = 0.6

#: The batch processors' defaults (the spec's), overridden by OTEL_BSP_* (spans) and
#: OTEL_BLRP_* (log records) as the SDK's own processors read them.
BATCH_DEFAULTS: Final = {
    "traces": ("OTEL_BSP", 5000.0, 2048, 512),
    "logs": ("OTEL_BLRP", 1000.0, 2048, 512),
}

#: Histogram bucket boundaries for hook durations, in seconds (a hook runs from a millisecond
#: to its timeout, 30 s by default).
DURATION_BUCKETS_S: Final = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0
)  # fmt: skip


#: Drop reasons (the ``error.type`` of ``triohooks.dropped``).
QUEUE_FULL: Final = "queue_full"
EXPORT_FAILED: Final = "export_failed"
SHUTDOWN: Final = "shutdown"

T = TypeVar("T")


def env_str(name: str) -> str:
    return os.environ.get(name, "").strip()


# ---------------------------------------------------------------------------------------------
# The bounded batch queue


class SignalStats(msgspec.Struct, frozen=True, kw_only=True):
    """One signal's numbers. Once closed, ``produced == exported + sum(dropped.values())``."""

    produced: int
    exported: int
    #: By reason: queue_full, export_failed, shutdown (queued or in flight when the close
    #: bound ran out, or produced after the close).
    dropped: dict[str, int]
    queued: int
    in_flight: int
    #: Export calls that failed (each dropped one batch).
    failed_exports: int
    #: The last export failure, as the exporter reported it (no payload content).
    last_error: str | None = None

    @property
    def dropped_total(self) -> int:
        return sum(self.dropped.values())


class Batcher(Generic[T]):
    """A bounded queue of ``T`` and the daemon thread that exports it in batches.

    :meth:`offer` never waits for the export: it takes a lock held only for deque operations,
    and drops (and counts) the item when ``max_queue`` items are already waiting. The thread
    exports a batch when ``max_batch`` items are waiting, ``delay_s`` after the oldest arrived,
    on :meth:`flush`, and at :meth:`close`. A batch whose export fails (returns False or
    raises) is dropped and counted; the exporter does its own retries within its timeout.
    """

    def __init__(
        self,
        name: str,
        export: Callable[[Sequence[T]], bool],
        *,
        max_queue: int = 2048,
        max_batch: int = 512,
        delay_s: float = 5.0,
        abort: Callable[[], None] | None = None,
        last_error: Callable[[], str | None] = lambda: None,
        quiet: bool = False,
    ) -> None:
        self.name = name
        self._export = export
        self._abort = abort
        self._last_error = last_error
        self._quiet = quiet
        self.max_queue = max(1, max_queue)
        self.max_batch = max(1, min(max_batch, self.max_queue))
        self.delay_s = max(0.0, delay_s)
        self._cond = threading.Condition(threading.Lock())
        self._queue: deque[T] = deque()
        self._oldest_at = 0.0
        self._in_flight = 0
        self._flushes = 0
        self._closed = False
        self._abandoned = False
        self.produced = 0
        self.exported = 0
        self.failed_exports = 0
        self.dropped: Tally[str] = Tally()
        self.error: str | None = None
        #: In a failing episode: warned once, until an export succeeds again.
        self._failing = False
        self._warned_full = False
        self._thread = threading.Thread(
            target=self._run, name=f"triohooks-otlp-{name}", daemon=True
        )
        self._thread.start()

    # -- the producer side (any thread; the trio thread in practice) ---------------------------
    def offer(self, item: T) -> bool:
        """Queue ``item`` for export; False = dropped (counted). Never waits for an export."""
        warn = False
        with self._cond:
            self.produced += 1
            if self._closed:
                self.dropped[SHUTDOWN] += 1
                return False
            queue = self._queue
            if len(queue) >= self.max_queue:
                self.dropped[QUEUE_FULL] += 1
                warn, self._warned_full = not self._warned_full, True
            else:
                if not queue:
                    self._oldest_at = time.monotonic()
                queue.append(item)
                if len(queue) == self.max_batch:
                    self._cond.notify_all()
                return True
        if warn and not self._quiet:
            log.warning(
                "OTLP export: the %s queue is full (%d); dropping (and counting) what does not fit",
                self.name,
                self.max_queue,
            )
        return False

    # -- the export thread -------------------------------------------------------------------
    def _due(self) -> bool:
        n = len(self._queue)
        if not n:
            return False
        if n >= self.max_batch or self._closed or self._flushes:
            return True
        return time.monotonic() - self._oldest_at >= self.delay_s

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._due():
                    if self._abandoned or (self._closed and not self._queue):
                        return
                    timeout = None
                    if self._queue:
                        timeout = max(0.0, self._oldest_at + self.delay_s - time.monotonic())
                    self._cond.wait(timeout)
                if self._abandoned:
                    return
                count = min(self.max_batch, len(self._queue))
                batch = [self._queue.popleft() for _ in range(count)]
                if self._queue:
                    self._oldest_at = time.monotonic()
                self._in_flight = count
            try:
                ok = bool(self._export(batch))
            except Exception as exc:
                ok = False
                self._note_error(f"{type(exc).__name__}: {exc}")
            self._finished(count, ok)

    def _finished(self, count: int, ok: bool) -> None:
        warn: str | None = None
        with self._cond:
            if self._abandoned:  # close() already counted it
                return
            self._in_flight = 0
            if ok:
                self.exported += count
                if self._failing:
                    self._failing = False
                    warn = "resumed"
            else:
                self.failed_exports += 1
                self.dropped[EXPORT_FAILED] += count
                self.error = self._last_error() or self.error or "no reason given"
                if not self._failing:
                    self._failing = True
                    warn = "failing"
            self._cond.notify_all()
        if warn is None or self._quiet:
            return
        if warn == "failing":
            log.warning(
                "OTLP export of %s failing (%s): what cannot be sent is dropped and counted",
                self.name,
                self.error,
            )
        else:
            log.warning(
                "OTLP export of %s resumed (%d dropped so far)", self.name, self.dropped_total
            )

    def _note_error(self, text: str) -> None:
        self.error = text[:300]

    # -- flushing and closing ----------------------------------------------------------------
    def flush(self, timeout_s: float) -> bool:
        """Export everything queued now; True once the queue is empty and nothing is in flight
        (False when ``timeout_s`` ran out first). For tests and shutdown; items keep coming."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            self._flushes += 1
            self._cond.notify_all()
            try:
                while self._queue or self._in_flight:
                    left = deadline - time.monotonic()
                    if left <= 0 or self._abandoned or not self._thread.is_alive():
                        return False
                    self._cond.wait(left)
                return True
            finally:
                self._flushes -= 1

    def begin_close(self) -> None:
        """Take no more items; the thread exports what is queued and stops."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def finish_close(self, deadline: float) -> None:
        """Wait (until the monotonic ``deadline``) for the thread to export what was queued;
        what is still queued or in flight then is dropped and counted (``shutdown``), and the
        exporter is shut down (which also cuts short its retries)."""
        self.begin_close()
        self._thread.join(max(0.0, deadline - time.monotonic()))
        with self._cond:
            if self._thread.is_alive():
                self._abandoned = True
                left = len(self._queue) + self._in_flight
                self._queue.clear()
                self._in_flight = 0
                if left:
                    self.dropped[SHUTDOWN] += left
                self._cond.notify_all()
        if self._abort is not None:
            try:
                self._abort()
            except Exception:
                log.debug("shutting the %s exporter down failed", self.name, exc_info=True)

    @property
    def dropped_total(self) -> int:
        return sum(self.dropped.values())

    def stats(self) -> SignalStats:
        with self._cond:
            return SignalStats(
                produced=self.produced,
                exported=self.exported,
                dropped=dict(self.dropped),
                queued=len(self._queue),
                in_flight=self._in_flight,
                failed_exports=self.failed_exports,
                last_error=self.error,
            )


# ---------------------------------------------------------------------------------------------
# Settings read from the environment


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    """What :func:`start` found in the environment."""

    #: signal -> protocol (http/protobuf or grpc), for the signals to export.
    signals: dict[str, str]
    #: Why nothing (or a signal) is exported, for the debug line / warnings.
    notes: list[str]
    warnings: list[str]


def read_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Which signals to export and how, from the standard variables (no SDK import)."""
    env = dict(os.environ if environ is None else environ)

    def get(name: str) -> str:
        return env.get(name, "").strip()

    notes: list[str] = []
    warnings: list[str] = []
    if get("OTEL_SDK_DISABLED").lower() == "true":
        return Settings(signals={}, notes=["OTEL_SDK_DISABLED=true"], warnings=[])
    general = get("OTEL_EXPORTER_OTLP_ENDPOINT")
    signals: dict[str, str] = {}
    for signal in SIGNALS:
        upper = signal.upper()
        if not (general or get(f"OTEL_EXPORTER_OTLP_{upper}_ENDPOINT")):
            continue
        chosen = [p.strip().lower() for p in get(f"OTEL_{upper}_EXPORTER").split(",") if p.strip()]
        if "none" in chosen:
            notes.append(f"OTEL_{upper}_EXPORTER=none")
            continue
        if chosen and "otlp" not in chosen:
            warnings.append(
                f"OTEL_{upper}_EXPORTER={','.join(chosen)}: only otlp is supported; "
                f"no {signal} export"
            )
            continue
        protocol = (
            get(f"OTEL_EXPORTER_OTLP_{upper}_PROTOCOL")
            or get("OTEL_EXPORTER_OTLP_PROTOCOL")
            or "http/protobuf"
        ).lower()
        if protocol == "http/json":
            warnings.append(
                f"OTLP protocol http/json is not supported by the Python OTLP exporter: use "
                f"http/protobuf (the default) or grpc; no {signal} export"
            )
            continue
        if protocol not in ("http/protobuf", "grpc"):
            warnings.append(f"unknown OTLP protocol {protocol!r}; no {signal} export")
            continue
        signals[signal] = protocol
    if not signals and not warnings and not notes:
        notes.append("no OTEL_EXPORTER_OTLP_*ENDPOINT is set")
    return Settings(signals=signals, notes=notes, warnings=warnings)


def close_bound_s(front: str) -> float:
    """How long closing may take for ``front`` (see :data:`FIRE_CLOSE_S`)."""
    if front != "fire":
        return CLOSE_S
    explicit = env_float("OTEL_EXPORTER_OTLP_TIMEOUT", 0.0)
    return min(explicit, FIRE_CLOSE_MAX_S) if explicit > 0 else FIRE_CLOSE_S


def env_int(name: str, default: int) -> int:
    try:
        return int(env_str(name) or default)
    except ValueError:
        log.warning("%s=%r is not an integer; using %d", name, env_str(name), default)
        return default


def env_float(name: str, default: float) -> float:
    try:
        return float(env_str(name) or default)
    except ValueError:
        log.warning("%s=%r is not a number; using %g", name, env_str(name), default)
        return default


# ---------------------------------------------------------------------------------------------
# Telemetry: the SDK pieces of one front


class _Engine(Protocol):
    def add_listener(self, listener: Callable[[str, dict[str, Any]], None]) -> Callable[[], None]:
        """As :meth:`triohooks.HookEngine.add_listener`."""
        ...


class _Current:
    """The Telemetry started last and not closed (what :func:`watch` attaches)."""

    telemetry: Telemetry | None = None


class Telemetry:
    """The export of one front: its queues, and the SDK pieces (``_otel_sdk``) around them.
    Get one from :func:`start`."""

    def __init__(self, front: str, settings: Settings, *, close_s: float) -> None:
        self.front = front
        self.settings = settings
        self.close_s = close_s
        self.closed = False
        #: Metric exports that failed (the reader retries at its next interval).
        self.metrics_failed = 0
        self.spans: Batcher[Any] | None = None
        self.logs: Batcher[Any] | None = None
        #: Set by _otel_sdk.setup: the metrics listener, and the providers' closers.
        self.on_engine_event: Callable[[str, dict[str, Any]], None] | None = None
        self.flush_metrics: Callable[[float], bool] | None = None
        self.close_metrics: Callable[[float], None] | None = None
        self.closers: list[Callable[[], None]] = []
        self.background_dropped: Tally[str] = Tally()
        #: The last export failure the exporters logged, by what they export (spans, logs,
        #: metrics; see _otel_sdk.ExporterLog): (monotonic time, text).
        self.exporter_errors: dict[str, tuple[float, str]] = {}

    def watch(self, engine: _Engine) -> Callable[[], None]:
        """Count ``engine``'s events, blocks, failures, drops and hook durations (a listener
        that only updates in-memory instruments). Returns the remover."""
        if self.on_engine_event is None or self.closed:
            return lambda: None
        remove = engine.add_listener(self.on_engine_event)
        self.closers.insert(0, remove)
        return remove

    def drop_observations(self) -> list[tuple[int, dict[str, str]]]:
        """``triohooks.dropped``: (count, attributes) per kind and reason; queue_full and
        export_failed of the spans and log records are always there (0 until one happens)."""
        out: list[tuple[int, dict[str, str]]] = []
        for kind, batcher in (("span", self.spans), ("log_record", self.logs)):
            if batcher is not None:
                counts = {QUEUE_FULL: 0, EXPORT_FAILED: 0, **batcher.stats().dropped}
                for reason, n in counts.items():
                    out.append((n, {ATTR_DROPPED_KIND: kind, ATTR_ERROR_TYPE: reason}))
        for reason, n in self.background_dropped.items():
            out.append((n, {ATTR_DROPPED_KIND: "background_event", ATTR_ERROR_TYPE: reason}))
        return out

    # -- numbers, flush, close ---------------------------------------------------------------
    def stats(self) -> dict[str, SignalStats]:
        """Spans and log records: produced, exported, dropped by reason, queued."""
        out: dict[str, SignalStats] = {}
        if self.spans is not None:
            out["traces"] = self.spans.stats()
        if self.logs is not None:
            out["logs"] = self.logs.stats()
        return out

    @property
    def dropped_total(self) -> int:
        return sum(s.dropped_total for s in self.stats().values())

    def flush(self, timeout_s: float = CLOSE_S) -> bool:
        """Export what is queued now (spans and logs, then a metrics collection); bounded.
        True when all of it was exported or dropped in time."""
        deadline = time.monotonic() + timeout_s
        ok = True
        for batcher in (self.spans, self.logs):
            if batcher is not None:
                ok = batcher.flush(max(0.0, deadline - time.monotonic())) and ok
        if self.flush_metrics is not None:
            ok = self.flush_metrics(max(0.0, deadline - time.monotonic())) and ok
        return ok

    def close(self, timeout_s: float | None = None) -> dict[str, SignalStats]:
        """Export what is left and stop, within ``timeout_s`` (default: the front's bound).
        Spans and log records go first, in parallel; the last metrics export (which carries
        the final drop counts) gets what is left. Idempotent; returns :meth:`stats`."""
        if self.closed:
            return self.stats()
        self.closed = True
        if _Current.telemetry is self:
            _Current.telemetry = None
        started = time.monotonic()
        bound = self.close_s if timeout_s is None else timeout_s
        batchers = [b for b in (self.spans, self.logs) if b is not None]
        for batcher in batchers:
            batcher.begin_close()
        share = SIGNALS_SHARE if self.close_metrics is not None else 1.0
        for batcher in batchers:
            batcher.finish_close(started + bound * share)
        if self.close_metrics is not None:
            self.close_metrics(max(0.0, started + bound - time.monotonic()))
        for closer in self.closers:
            try:
                closer()
            except Exception:
                log.debug("closing the OTLP export: a step failed", exc_info=True)
        return self.stats()

    def summary(self) -> str:
        """One line: what was sent and what was dropped (and why)."""
        sent: list[str] = []
        dropped: list[str] = []
        error = None
        for signal, numbers in self.stats().items():
            name = "spans" if signal == "traces" else "log records"
            sent.append(f"{numbers.exported}/{numbers.produced} {name}")
            if numbers.dropped_total:
                why = ", ".join(f"{n} {reason}" for reason, n in sorted(numbers.dropped.items()))
                dropped.append(f"{numbers.dropped_total} {name} ({why})")
                error = numbers.last_error or error
        text = "OTLP export: sent " + (", ".join(sent) or "no spans or log records")
        if self.close_metrics is not None:
            text += "; metrics"
            if self.metrics_failed:
                text += f" ({self.metrics_failed} failed export(s))"
        if dropped:
            text += "; dropped " + ", ".join(dropped)
        if error:
            text += f"; last error: {error}"
        return text


def log_attributes(record: AuditRecord) -> dict[str, Any]:
    """An audit record's fields as log record attributes, None fields left out (the names:
    docs/observability.md). The record is the sink's: already stamped and redacted."""
    attributes: dict[str, Any] = {
        ATTR_AUDIT_KIND: record.kind,
        ATTR_EVENT: record.event,
        ATTR_WORKSPACE: record.workspace,
    }
    if record.time:
        attributes[ATTR_AUDIT_TIME] = record.time
    if record.session:
        attributes[ATTR_SESSION] = record.session
    if record.hook:
        attributes[ATTR_HOOK] = record.hook
    if record.decision is not None:
        attributes[ATTR_AUDIT_DECISION] = record.decision
        if record.decision == "error":
            attributes[ATTR_ERROR_TYPE] = "hook_failed"
    if record.error is not None:
        attributes[ATTR_AUDIT_ERROR] = record.error
    if record.duration_ms is not None:
        attributes[ATTR_DURATION_MS] = record.duration_ms
    if record.detail is not None:
        attributes[ATTR_AUDIT_DETAIL] = _plain(record.detail)
    if record.truncated:
        attributes[ATTR_AUDIT_TRUNCATED] = True
    return attributes


def log_body(record: AuditRecord) -> str:
    """The log record's body: kind, event, decision and hook id; never a reason or payload."""
    words = [record.kind, record.event]
    if record.decision:
        words.append(record.decision)
    if record.hook:
        words.append(record.hook)
    return " ".join(words)


def _plain(value: Any) -> Any:
    """A detail tree as attribute values: maps, lists, str/int/float/bool (None left out)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value if v is not None]
    if isinstance(value, str | bool | int | float):
        return value
    return str(value)


def _missing(protocol: str) -> str | None:
    """What is not installed for ``protocol``, if anything."""
    try:
        importlib.import_module("opentelemetry.sdk.trace")
        importlib.import_module("opentelemetry.exporter.otlp.proto.http")
    except ImportError:
        return "the otel extra (pip install 'triohooks[otel]')"
    if protocol == "grpc":
        try:
            importlib.import_module("opentelemetry.exporter.otlp.proto.grpc")
        except ImportError:
            return (
                "the gRPC exporter (OTEL_EXPORTER_OTLP_PROTOCOL=grpc needs "
                "opentelemetry-exporter-otlp-proto-grpc; the otel extra has OTLP/HTTP only)"
            )
    return None


# ---------------------------------------------------------------------------------------------
# The fronts' calls


def start(front: str) -> Telemetry | None:
    """Start exporting for ``front`` (``fire``, ``serve``, ``demo``) when the environment asks
    for it; None when it does not, or cannot (a warning says why). Call before the engine
    opens; then :meth:`Telemetry.watch` the engine and :meth:`Telemetry.close` at the end."""
    settings = read_settings()
    for warning in settings.warnings:
        log.warning("%s", warning)
    if not settings.signals:
        log.debug("OTLP export off: %s", "; ".join(settings.notes) or "nothing to export")
        return None
    wanted: dict[Signal, str] = {}
    warned: set[str] = set()
    for signal, protocol in settings.signals.items():
        missing = _missing(protocol)
        if missing is None:
            wanted[signal] = protocol  # type: ignore[index]
        elif missing not in warned:
            warned.add(missing)
            log.warning("an OTLP endpoint is set but %s is not installed: no OTLP export", missing)
    if not wanted:
        return None
    from . import _otel_sdk

    telemetry = Telemetry(front, settings, close_s=close_bound_s(front))
    try:
        _otel_sdk.setup(telemetry, wanted)
    except Exception as exc:
        log.warning("OTLP export not set up: %s: %s", type(exc).__name__, exc)
        telemetry.close(0.1)
        return None
    if telemetry.spans is None and telemetry.logs is None and telemetry.close_metrics is None:
        return None
    if _Current.telemetry is not None:
        _Current.telemetry.close()
    _Current.telemetry = telemetry
    log.debug("OTLP export on for %s: %s", front, ", ".join(sorted(wanted)))
    return telemetry


def watch(engine: _Engine) -> Callable[[], None]:
    """:meth:`Telemetry.watch` on the Telemetry started last and still open (else a no-op)."""
    current = _Current.telemetry
    return current.watch(engine) if current is not None else lambda: None


def close_fire(telemetry: Telemetry | None) -> None:
    """``fire``'s close, after its Outcome is printed: bounded (:func:`close_bound_s`), silent
    unless something was not sent (then one warning line on stderr). Never raises."""
    if telemetry is None:
        return
    try:
        telemetry.close()
        if telemetry.dropped_total or telemetry.metrics_failed:
            print(f"triohooks: warning: {telemetry.summary()}", file=sys.stderr, flush=True)
    except Exception:
        log.debug("closing the OTLP export failed", exc_info=True)


async def start_serving(front: str = "serve") -> Telemetry | None:
    """:func:`start` for a long-running front, in a thread (the SDK's imports take a moment);
    call it before the front listens, then hand the Telemetry to :func:`~.server.serve` (which
    watches its engine). None when export is off, or could not be set up (a warning says
    why: the export must never stop the service). A checkpoint."""
    try:
        return await trio.to_thread.run_sync(start, front)
    except Exception as exc:
        log.warning("OTLP export not set up: %s: %s", type(exc).__name__, exc)
        return None


async def close_serving(telemetry: Telemetry | None, front: str = "serve") -> None:
    """Close :func:`start_serving`'s export (bounded, shielded, in a thread) and print the
    summary line on stderr; nothing when it is None."""
    if telemetry is None:
        return
    with trio.CancelScope(shield=True):
        await trio.to_thread.run_sync(telemetry.close)
    print(f"triohooks {front}: {telemetry.summary()}", file=sys.stderr, flush=True)
