"""The OpenTelemetry SDK side of :mod:`triohooks.fronts.otel`: imported only when export is on.

Builds the OTLP exporters (which read the endpoint, headers, compression, certificate and
timeout variables themselves), the tracer provider (the API lets a process set one: ours is
set once and forwards to the current queue), the logger and meter providers (ours, not set
globally), and the instruments fed by the engine's listener. Nothing here decides what is
exported; otel.py does.
"""

from __future__ import annotations

import copy
import importlib
import logging
import time
from collections import Counter as Tally
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, Final

from opentelemetry import trace
from opentelemetry._logs import SeverityNumber
from opentelemetry.context import Context
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk._logs import (
    LoggerProvider,
    LogRecordProcessor,
    ReadableLogRecord,
    ReadWriteLogRecord,
)
from opentelemetry.sdk._logs.export import LogRecordExportResult
from opentelemetry.sdk.metrics import Counter, Histogram, MeterProvider, ObservableCounter
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    MetricExporter,
    MetricExportResult,
    MetricsData,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SpanExportResult

from triohooks.actors.audit import ATTR_ERROR_TYPE, ATTR_EVENT, ATTR_OUTCOME, add_record_exporter
from triohooks.actors.audit_records import AuditRecord
from triohooks.handlers.outcomes import FAILED_OUTCOMES

from .otel import (
    AUDIT_EVENT_NAME,
    BATCH_DEFAULTS,
    DURATION_BUCKETS_S,
    SCOPE,
    SERVICE_NAME,
    SIGNALS_SHARE,
    Batcher,
    Signal,
    Telemetry,
    close_bound_s,
    env_float,
    env_int,
    env_str,
    log,
    log_attributes,
    log_body,
)

#: What each exporter's log lines name it as.
_KINDS: Final = {"traces": "spans", "logs": "logs", "metrics": "metrics"}
#: A generic failure line replaces a specific one only if that is older than this.
GENERIC_WINDOW_S: Final = 15.0

#: ``triohooks.hook.failures``: the failed hook's name (a config's hooks are few: bounded).
ATTR_HOOK_NAME: Final = "triohooks.hook.name"

#: The HTTP/protobuf exporters, and the gRPC ones (opentelemetry-exporter-otlp-proto-grpc,
#: not in the otel extra): imported by name, so that neither is needed to type-check this.
_EXPORTERS: Final = {
    ("traces", "http/protobuf"): (
        "opentelemetry.exporter.otlp.proto.http.trace_exporter",
        "OTLPSpanExporter",
    ),
    ("logs", "http/protobuf"): (
        "opentelemetry.exporter.otlp.proto.http._log_exporter",
        "OTLPLogExporter",
    ),
    ("metrics", "http/protobuf"): (
        "opentelemetry.exporter.otlp.proto.http.metric_exporter",
        "OTLPMetricExporter",
    ),
    ("traces", "grpc"): (
        "opentelemetry.exporter.otlp.proto.grpc.trace_exporter",
        "OTLPSpanExporter",
    ),
    ("logs", "grpc"): ("opentelemetry.exporter.otlp.proto.grpc._log_exporter", "OTLPLogExporter"),
    ("metrics", "grpc"): (
        "opentelemetry.exporter.otlp.proto.grpc.metric_exporter",
        "OTLPMetricExporter",
    ),
}


class _Tracing:
    """The process's tracer provider (the API lets a process set one), once set, and its one
    processor, which forwards to the current Telemetry's queue."""

    provider: TracerProvider | None = None
    forward: SpanForward | None = None


def setup(telemetry: Telemetry, signals: dict[Signal, str]) -> None:
    """Build the exporters and providers for ``signals`` (signal -> protocol) into
    ``telemetry``; a signal whose exporter cannot be built is left out, with a warning."""
    # Stays on after the close: an export thread cut off by the close bound may still log.
    ExporterLog(telemetry).install()
    resource = make_resource(telemetry.front)
    quiet = telemetry.front == "fire"  # fire says it once, after its Outcome (close_fire)
    for signal, protocol in signals.items():
        try:
            exporter = make_exporter(signal, protocol, telemetry.front)
        except Exception as exc:
            log.warning("OTLP export of %s not set up: %s: %s", signal, type(exc).__name__, exc)
            continue
        if signal == "traces":
            _setup_traces(telemetry, exporter, resource, quiet)
        elif signal == "logs":
            _setup_logs(telemetry, exporter, resource, quiet)
        else:
            _setup_metrics(telemetry, exporter, resource)


def make_exporter(signal: Signal, protocol: str, front: str) -> Any:
    """The OTLP exporter of ``signal``. For ``fire`` its request timeout is capped to fit the
    close bound, and metrics default to delta temporality (one short process per call, so
    each reports what it counted) unless OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE
    says otherwise."""
    module_name, class_name = _EXPORTERS[(signal, protocol)]
    cls = getattr(importlib.import_module(module_name), class_name)
    kwargs: dict[str, Any] = {}
    if front == "fire":
        share = SIGNALS_SHARE if signal != "metrics" else 1 - SIGNALS_SHARE
        kwargs["timeout"] = min(export_timeout_s(signal), close_bound_s(front) * share)
        if signal == "metrics" and not env_str("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE"):
            delta = AggregationTemporality.DELTA
            kwargs["preferred_temporality"] = {
                Counter: delta,
                Histogram: delta,
                ObservableCounter: delta,
            }
    return cls(**kwargs)


def export_timeout_s(signal: Signal) -> float:
    """The exporters' request timeout as the Python exporter reads it (in seconds)."""
    raw = env_str(f"OTEL_EXPORTER_OTLP_{signal.upper()}_TIMEOUT") or env_str(
        "OTEL_EXPORTER_OTLP_TIMEOUT"
    )
    try:
        return float(raw) if raw else 10.0
    except ValueError:
        return 10.0


def version() -> str:
    try:
        from importlib.metadata import version as dist_version

        return dist_version("triohooks")
    except Exception:
        return "unknown"


def make_resource(front: str) -> Resource:
    """OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME as the SDK reads them; ``service.name``
    is ``triohooks`` when neither names one; ``service.version`` and ``triohooks.front`` are
    added unless set."""
    detected = Resource.create({})
    attributes = dict(detected.attributes)
    if str(attributes.get("service.name", "")).startswith("unknown_service"):
        attributes["service.name"] = SERVICE_NAME
    attributes.setdefault("service.version", version())
    attributes.setdefault("triohooks.front", front)
    return Resource(attributes, detected.schema_url)


def _batcher(
    telemetry: Telemetry, signal: Signal, exporter: Any, quiet: bool, success: object
) -> Batcher[Any]:
    prefix, delay_ms, queue, batch = BATCH_DEFAULTS[signal]

    def export(items: Sequence[Any]) -> bool:
        return bool(exporter.export(items) == success)

    return Batcher(
        "spans" if signal == "traces" else "log records",
        export,
        max_queue=env_int(f"{prefix}_MAX_QUEUE_SIZE", queue),
        max_batch=env_int(f"{prefix}_MAX_EXPORT_BATCH_SIZE", batch),
        delay_s=env_float(f"{prefix}_SCHEDULE_DELAY", delay_ms) / 1000,
        abort=exporter.shutdown,
        last_error=lambda: telemetry.exporter_errors.get(_KINDS[signal], (0.0, None))[1],
        quiet=quiet,
    )


# -- traces -----------------------------------------------------------------------------------


class SpanForward(SpanProcessor):
    """The tracer provider's one processor: each sampled, ended span into the current
    Telemetry's queue (none after its close: then the span is not kept)."""

    def __init__(self) -> None:
        self.target: Batcher[Any] | None = None

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        target = self.target
        if target is not None and span.context is not None and span.context.trace_flags.sampled:
            target.offer(span)

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        target = self.target
        return target.flush(timeout_millis / 1000) if target is not None else True


def _setup_traces(telemetry: Telemetry, exporter: Any, resource: Resource, quiet: bool) -> None:
    if _Tracing.forward is None:
        if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
            log.warning(
                "OTLP export: this process already has a tracer provider; the hook spans go "
                "to it, not to triohooks' exporter"
            )
            exporter.shutdown()
            return
        _Tracing.forward = SpanForward()
        _Tracing.provider = TracerProvider(resource=resource, shutdown_on_exit=False)
        _Tracing.provider.add_span_processor(_Tracing.forward)
        trace.set_tracer_provider(_Tracing.provider)
    forward = _Tracing.forward
    batcher = _batcher(telemetry, "traces", exporter, quiet, SpanExportResult.SUCCESS)
    telemetry.spans = batcher
    forward.target = batcher

    def detach() -> None:
        if forward.target is batcher:
            forward.target = None

    telemetry.closers.append(detach)


# -- logs -------------------------------------------------------------------------------------


class LogForward(LogRecordProcessor):
    """The logger provider's processor: each log record, frozen, into the queue."""

    def __init__(self, batcher: Batcher[Any]) -> None:
        self._batcher = batcher

    def on_emit(self, log_record: ReadWriteLogRecord) -> None:
        api_record = copy.copy(log_record.log_record)
        api_record.context = Context()
        self._batcher.offer(
            ReadableLogRecord(
                log_record=api_record,
                resource=log_record.resource or Resource.create({}),
                instrumentation_scope=log_record.instrumentation_scope,
                limits=log_record.limits,
            )
        )

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._batcher.flush(timeout_millis / 1000)


def _setup_logs(telemetry: Telemetry, exporter: Any, resource: Resource, quiet: bool) -> None:
    batcher = _batcher(telemetry, "logs", exporter, quiet, LogRecordExportResult.SUCCESS)
    telemetry.logs = batcher
    provider = LoggerProvider(resource=resource, shutdown_on_exit=False)
    provider.add_log_record_processor(LogForward(batcher))
    logger = provider.get_logger(SCOPE, version())

    def emit(record: AuditRecord) -> None:
        if telemetry.closed:
            return
        failed = record.decision == "error"
        logger.emit(
            timestamp=_time_ns(record.time),
            observed_timestamp=time.time_ns(),
            severity_number=SeverityNumber.ERROR if failed else SeverityNumber.INFO,
            severity_text="ERROR" if failed else "INFO",
            body=log_body(record),
            attributes=log_attributes(record),
            event_name=AUDIT_EVENT_NAME,
        )

    telemetry.closers.append(add_record_exporter(emit))
    telemetry.closers.append(provider.shutdown)


def _time_ns(when: str) -> int:
    try:
        return int(datetime.fromisoformat(when).timestamp() * 1_000_000_000)
    except ValueError:
        return time.time_ns()


# -- metrics ----------------------------------------------------------------------------------


class CountingMetricExporter(MetricExporter):
    """An OTLP metric exporter with its failed exports counted in the Telemetry."""

    def __init__(self, inner: Any, telemetry: Telemetry) -> None:
        super().__init__(
            preferred_temporality=inner._preferred_temporality,
            preferred_aggregation=inner._preferred_aggregation,
        )
        self._inner = inner
        self._telemetry = telemetry

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        try:
            result = self._inner.export(metrics_data, timeout_millis=timeout_millis, **kwargs)
        except Exception:
            result = MetricExportResult.FAILURE
        if result != MetricExportResult.SUCCESS:
            self._telemetry.metrics_failed += 1
            return MetricExportResult.FAILURE
        return MetricExportResult.SUCCESS

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return bool(self._inner.force_flush(timeout_millis=timeout_millis))

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        self._inner.shutdown(timeout_millis=timeout_millis)


class Instruments:
    """The metrics, fed by the engine's listener. The counters are plain in-memory tallies
    read by observable counters when the SDK's periodic reader collects (every
    OTEL_METRIC_EXPORT_INTERVAL ms, 60 s by default, and at close): a dict increment on the
    hot path instead of the SDK's attribute handling. Durations go to an SDK histogram."""

    def __init__(self, provider: MeterProvider, telemetry: Telemetry) -> None:
        meter = provider.get_meter(SCOPE, version())
        self._telemetry = telemetry
        #: Attribute items -> count (tuples, so that the hot path builds no dict).
        self._events: Tally[str] = Tally()
        self._blocks: Tally[str] = Tally()
        self._failures: Tally[tuple[str, str, str]] = Tally()
        self._observed(
            meter,
            "triohooks.events",
            "{event}",
            "Events fired that had hooks to run, by event name",
            lambda: [(n, {ATTR_EVENT: e}) for e, n in list(self._events.items())],
        )
        self._observed(
            meter,
            "triohooks.blocks",
            "{event}",
            "Events whose outcome blocked, by event name",
            lambda: [(n, {ATTR_EVENT: e}) for e, n in list(self._blocks.items())],
        )
        self._observed(
            meter,
            "triohooks.hook.failures",
            "{run}",
            "Hook runs that failed (error, timeout, spawn_failed, killed)",
            lambda: [
                (n, {ATTR_EVENT: e, ATTR_HOOK_NAME: hook, ATTR_ERROR_TYPE: outcome})
                for (e, hook, outcome), n in list(self._failures.items())
            ],
        )
        self._observed(
            meter,
            "triohooks.dropped",
            "{item}",
            "Spans, log records and background events dropped, by kind and reason",
            telemetry.drop_observations,
        )
        self.duration = meter.create_histogram(
            "triohooks.hook.duration",
            unit="s",
            description="Duration of hook runs, by event name and outcome",
            explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS_S),
        )

    @staticmethod
    def _observed(
        meter: Any,
        name: str,
        unit: str,
        description: str,
        read: Callable[[], Iterable[tuple[int, dict[str, str]]]],
    ) -> None:
        def callback(options: CallbackOptions) -> Iterable[Observation]:
            return [Observation(n, attrs) for n, attrs in read()]

        meter.create_observable_counter(
            name, callbacks=[callback], unit=unit, description=description
        )

    def on_event(self, kind: str, fields: dict[str, Any]) -> None:
        if kind == "fired":
            self._events[str(fields.get("event"))] += 1
        elif kind == "hook_finished":
            event, outcome = str(fields.get("event")), str(fields.get("outcome"))
            seconds = float(fields.get("duration_ms") or 0.0) / 1000
            self.duration.record(seconds, {ATTR_EVENT: event, ATTR_OUTCOME: outcome})
            if outcome in FAILED_OUTCOMES:
                self._failures[(event, str(fields.get("hook")), outcome)] += 1
        elif kind == "outcome":
            if getattr(fields.get("outcome"), "blocked", False):
                self._blocks[str(fields.get("event"))] += 1
        elif kind == "dropped":
            self._telemetry.background_dropped[str(fields.get("reason", "unknown"))] += 1


def _setup_metrics(telemetry: Telemetry, exporter: Any, resource: Resource) -> None:
    reader = PeriodicExportingMetricReader(CountingMetricExporter(exporter, telemetry))
    provider = MeterProvider(metric_readers=[reader], resource=resource, shutdown_on_exit=False)
    instruments = Instruments(provider, telemetry)
    telemetry.on_engine_event = instruments.on_event

    def flush(timeout_s: float) -> bool:
        return provider.force_flush(timeout_millis=timeout_s * 1000)

    def close(timeout_s: float) -> None:
        try:
            provider.shutdown(timeout_millis=timeout_s * 1000)
        except Exception:
            log.debug("the meter provider's shutdown failed", exc_info=True)

    telemetry.flush_metrics = flush
    telemetry.close_metrics = close


# -- what the exporters log -------------------------------------------------------------------


class ExporterLog(logging.Handler):
    """On the ``opentelemetry.exporter`` logger while exporting: the export chatter (a line per
    failed attempt and per retry) becomes the Telemetry's last error, which the queue's warning
    shows once per failing episode; anything else (a bad setting) goes on to triohooks.otel."""

    CHATTER: Final = (
        "Failed to export",
        "Transient error",
        "Shutdown in progress",
        "Exporter already shutdown",
        "OTLP client already shutdown",
        "Failed to encode",
        "Dropping ",
    )
    #: Chatter that says no more than "it failed": kept only when nothing better was said.
    GENERIC: Final = ("due to timeout", "Shutdown in progress", "already shutdown")

    def __init__(self, telemetry: Telemetry) -> None:
        super().__init__(logging.DEBUG)
        self._telemetry = telemetry
        self._logger = logging.getLogger("opentelemetry.exporter")

    def install(self) -> None:
        for handler in list(self._logger.handlers):
            if isinstance(handler, ExporterLog):  # an earlier Telemetry's, in this process
                self._logger.removeHandler(handler)
        self._logger.addHandler(self)
        self._logger.propagate = False
        if self._logger.level == logging.NOTSET:
            self._logger.setLevel(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception:
            return
        if not text.startswith(self.CHATTER):
            log.log(record.levelno, "opentelemetry: %s", text)
            return
        kind = next((k for k in ("spans", "logs", "metrics") if f" {k} batch" in text), "")
        errors = self._telemetry.exporter_errors
        now = time.monotonic()
        generic = any(part in text for part in self.GENERIC)
        seen = errors.get(kind)
        # "It failed" does not replace the reason given just before (one export's lines).
        if not generic or seen is None or now - seen[0] > GENERIC_WINDOW_S:
            errors[kind] = (now, text[:300])
