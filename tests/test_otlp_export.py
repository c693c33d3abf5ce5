"""OTLP export from the CLI fronts (docs/design.md §9, docs/observability.md), against a real receiver.

The receiver is a loopback HTTP server (a thread, 127.0.0.1 port 0) that answers OTLP/HTTP as a
collector does and decodes every body with the official ``opentelemetry-proto`` messages, so
what is checked is what a collector would get on the wire. The fronts run for real: ``fire``
(engine path) and ``serve`` as child processes of the CLI, ``demo`` too, and a 10k-event
session through an engine in a child process set up by the fronts' own calls
(``otel.start`` + ``otel.watch``). Setting a tracer provider is once per process, so nothing
here sets one in the test process itself: only the queue and the settings are tested in
process.
"""

from __future__ import annotations

import http.server
import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.proto.metrics.v1.metrics_pb2 import Metric
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from triohooks.actors.audit import AuditSink, add_record_exporter
from triohooks.actors.audit_records import AuditRecord
from triohooks.agents.adopt import catch_all
from triohooks.fronts import otel
from triohooks.fronts.client import connect
from triohooks.fronts.otel import Batcher, read_settings
from triohooks.fronts.wire import StatsReply

from .helpers import write_toml_hooks

pytestmark = pytest.mark.slow

SECRET = "sk-test-123456789abcdef"
SESSION = "sess-otlp-1"
#: Payload content that must never reach the collector (tool arguments, prompts).
CONTENT = "rm -rf /srv/precious"
TIMEOUT_S = 60
#: The relay as a user-scope install runs it (a bare script).
RELAY = Path(__file__).resolve().parent.parent / "runtime" / "fronts" / "relay.py"

# -- the receiver ---------------------------------------------------------------------------------

_REQUESTS: dict[str, tuple[Any, Any]] = {
    "/v1/traces": (ExportTraceServiceRequest, ExportTraceServiceResponse),
    "/v1/logs": (ExportLogsServiceRequest, ExportLogsServiceResponse),
    "/v1/metrics": (ExportMetricsServiceRequest, ExportMetricsServiceResponse),
}


def value(v: AnyValue) -> Any:
    """An OTLP AnyValue as Python."""
    kind = v.WhichOneof("value")
    if kind == "kvlist_value":
        return attrs(v.kvlist_value.values)
    if kind == "array_value":
        return [value(x) for x in v.array_value.values]
    if kind is None:
        return None
    return getattr(v, kind)


def attrs(kvs: Any) -> dict[str, Any]:
    return {kv.key: value(kv.value) for kv in kvs}


@dataclass
class Received:
    """What the receiver decoded, with the resource attributes of each item."""

    spans: list[tuple[dict[str, Any], Span]] = field(default_factory=list)
    logs: list[tuple[dict[str, Any], LogRecord]] = field(default_factory=list)
    metrics: list[tuple[dict[str, Any], Metric]] = field(default_factory=list)
    content_types: set[str] = field(default_factory=set)
    requests: int = 0


class Receiver:
    """An OTLP/HTTP receiver on 127.0.0.1 that can be stopped and started again on its port."""

    def __init__(self) -> None:
        self.got = Received()
        self.lock = threading.Lock()
        self.port = 0
        self._server: http.server.ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            # HTTP/1.0: one request per connection, so a stopped receiver takes none at all.
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                types = _REQUESTS.get(self.path)
                if types is None:
                    self.send_error(404)
                    return
                request = types[0]()
                request.ParseFromString(body)
                receiver.record(self.path, request, self.headers.get("Content-Type", ""))
                reply = types[1]().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        self.port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            assert self._thread is not None
            self._thread.join(10)
            self._server = None

    def record(self, path: str, request: Any, content_type: str) -> None:
        with self.lock:
            got = self.got
            got.requests += 1
            got.content_types.add(content_type)
            if path == "/v1/traces":
                for rs in request.resource_spans:
                    res = attrs(rs.resource.attributes)
                    got.spans += [(res, s) for ss in rs.scope_spans for s in ss.spans]
            elif path == "/v1/logs":
                for rl in request.resource_logs:
                    res = attrs(rl.resource.attributes)
                    got.logs += [(res, r) for sl in rl.scope_logs for r in sl.log_records]
            else:
                for rm in request.resource_metrics:
                    res = attrs(rm.resource.attributes)
                    got.metrics += [(res, m) for sm in rm.scope_metrics for m in sm.metrics]

    def counts(self) -> tuple[int, int]:
        with self.lock:
            return len(self.got.spans), len(self.got.logs)

    def metric(self, name: str) -> list[Metric]:
        with self.lock:
            return [m for _, m in self.got.metrics if m.name == name]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    r.start()
    try:
        yield r
    finally:
        r.stop()


def sum_points(metrics: list[Metric], **want: str) -> float:
    """The sum of the data points (counter values or histogram counts) whose attributes
    include ``want`` (attribute names with dots spelled as double underscores)."""
    want = {k.replace("__", "."): v for k, v in want.items()}
    total = 0.0
    for m in metrics:
        points = m.histogram.data_points if m.HasField("histogram") else m.sum.data_points
        for p in points:
            a = attrs(p.attributes)
            if all(a.get(k) == v for k, v in want.items()):
                if m.HasField("histogram"):
                    total += p.count
                else:
                    total += p.as_int or p.as_double
    return total


def all_strings(item: Any) -> str:
    """Every string an exported span or log record carries (to look for content in)."""
    return str(item)


def jsonl_records(state: Path) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for path in sorted((state / "audit").glob("audit-*.jsonl")):
        records += [json.loads(line) for line in path.read_text().splitlines()]
    return records


#: The audit fields and the log attributes that carry them (docs/observability.md).
FIELD_ATTRIBUTES = {
    "time": "triohooks.audit.time",
    "session": "gen_ai.conversation.id",
    "kind": "triohooks.audit.kind",
    "event": "triohooks.event",
    "hook": "triohooks.hook.id",
    "decision": "triohooks.audit.decision",
    "error": "triohooks.audit.error",
    "duration_ms": "triohooks.duration_ms",
    "workspace": "triohooks.workspace",
    "detail": "triohooks.audit.detail",
    "truncated": "triohooks.audit.truncated",
}


def expected_log_attributes(record: dict[str, Any]) -> dict[str, Any]:
    """What the log record of a JSONL line must carry: every field that has a value."""
    out = {
        FIELD_ATTRIBUTES[k]: v for k, v in record.items() if v is not None and v != "" and v != {}
    }
    if record.get("decision") == "error":
        out["error.type"] = "hook_failed"
    return out


def log_view(record: LogRecord) -> dict[str, Any]:
    return attrs(record.attributes)


DOC = Path(__file__).resolve().parent.parent / "docs" / "observability.md"


def assert_documented(receiver: Receiver) -> None:
    """Every name on the wire is in docs/observability.md, spelled as a code span."""
    documented = set(re.findall(r"`([^`\s]+)`", DOC.read_text()))
    got = receiver.got
    names = {m.name for _, m in got.metrics}
    for _, span in got.spans:
        names |= set(attrs(span.attributes))
    for _, record in got.logs:
        names |= set(attrs(record.attributes)) | {record.event_name}
    for _, metric in got.metrics:
        points = metric.histogram.data_points if metric.HasField("histogram") else []
        points = points or metric.sum.data_points
        for point in points:
            names |= set(attrs(point.attributes))
    for resource, _ in got.spans + got.logs + got.metrics:
        names |= {k for k in resource if not k.startswith("telemetry.sdk.")}
    assert names and sorted(names - documented) == []


# -- running the CLI ------------------------------------------------------------------------------

BLOCKING_TOML = f"""
[[hooks.pre_tool]]
id = "no-rm"
match = "Bash"
command = "echo 'refused, key {SECRET}' >&2; exit 2"

[[hooks.pre_tool]]
id = "broken"
match = "Broken"
command = "exit 7"

[[hooks.post_tool]]
id = "after"
match = "Bash"
command = "true"
"""


def cli_env(tmp_path: Path, endpoint: str | None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "TRIOHOOKS_"))}
    env |= {
        "TRIOHOOKS_CONFIG_DIR": str(tmp_path / "g"),
        "TRIOHOOKS_STATE_DIR": str(tmp_path / "state"),
        "TRIOHOOKS_TEST_MARKER": os.environ.get("TRIOHOOKS_TEST_MARKER", ""),
        "TRIOHOOKS_NO_AUTOSTART": "1",  # fire with no serve would start one for the next call
    }
    if endpoint is not None:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint
    env |= extra
    return env


@dataclass(frozen=True)
class Fired:
    returncode: int
    outcome: dict[str, Any]
    stderr: str
    seconds: float
    modules: frozenset[str]


#: The real CLI entry on argv[2:]; the modules it imported go to argv[1].
WRAPPER = textwrap.dedent(
    """
    import sys
    blocked = sys.argv[1]
    if blocked:
        sys.modules[blocked] = None  # as if that package were not installed
    from triohooks.fronts.cli import main
    out, argv = sys.argv[2], sys.argv[3:]
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    sys.stdout.flush()
    with open(out, "w") as f:
        f.write("\\n".join(sorted(sys.modules)))
    sys.exit(code)
    """
)


def fire(
    tmp_path: Path,
    endpoint: str | None,
    payload: dict[str, Any],
    *,
    event: str = "pre_tool",
    block_import: str = "",
    **extra: str,
) -> Fired:
    (tmp_path / "ws").mkdir(exist_ok=True)
    out = tmp_path / "modules.txt"
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, block_import, str(out), "fire", event],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=cli_env(tmp_path, endpoint, **extra),
        cwd=tmp_path / "ws",
        timeout=TIMEOUT_S,
        check=False,
    )
    seconds = time.monotonic() - started
    modules = frozenset(out.read_text().split("\n")) if out.exists() else frozenset()
    outcome = json.loads(done.stdout) if done.stdout.strip() else {}
    return Fired(done.returncode, outcome, done.stderr, seconds, modules)


BASH = {"tool": "Bash", "args": {"command": CONTENT}, "session_id": SESSION}


# -- fire -----------------------------------------------------------------------------------------


def test_fire_exports_its_span_audit_log_record_and_metrics(
    tmp_path: Path, receiver: Receiver
) -> None:
    write_toml_hooks(tmp_path / "g", BLOCKING_TOML)
    fired = fire(tmp_path, receiver.endpoint, BASH)
    assert fired.returncode == 2, fired.stderr
    assert fired.outcome["blocked"] and fired.stderr == ""
    # fire exports before it exits: everything has arrived by now.
    got = receiver.got
    assert got.content_types == {"application/x-protobuf"}

    ((resource, span),) = got.spans
    assert span.name == "hook pre_tool" and span.kind == Span.SPAN_KIND_INTERNAL
    span_attrs = attrs(span.attributes)
    assert set(span_attrs) == {
        "triohooks.event",
        "triohooks.hook.id",
        "triohooks.hook.dialect",
        "gen_ai.conversation.id",
        "triohooks.outcome",
        "triohooks.duration_ms",
        "triohooks.output_bytes",
    }
    assert span_attrs["triohooks.event"] == "pre_tool"
    assert span_attrs["triohooks.hook.id"] == "no-rm"
    assert span_attrs["triohooks.hook.dialect"] == "toml"
    assert span_attrs["gen_ai.conversation.id"] == SESSION
    assert span_attrs["triohooks.outcome"] == "block"
    assert span_attrs["triohooks.duration_ms"] > 0
    assert span.status.code == Status.STATUS_CODE_UNSET
    assert resource["service.name"] == "triohooks"
    assert resource["triohooks.front"] == "fire"
    assert "service.version" in resource

    # The audit record, as the JSONL has it (redacted the same way), as a log record.
    (line,) = jsonl_records(tmp_path / "state")
    assert SECRET not in json.dumps(line) and "[REDACTED]" in line["error"]
    ((log_resource, log_record),) = got.logs
    assert log_resource == resource
    assert log_view(log_record) == expected_log_attributes(line)
    assert log_record.event_name == "triohooks.audit"
    assert log_record.body.string_value == "hook pre_tool block no-rm"
    assert log_record.severity_number == 9  # INFO
    assert log_record.time_unix_nano > 0
    # Recorded inside the hook's span: the collector can link the log record to it.
    assert (log_record.trace_id, log_record.span_id) == (span.trace_id, span.span_id)
    assert len(log_record.trace_id) == 16 and any(log_record.trace_id)

    # Names, sizes and outcomes only: neither the payload nor the secret went out.
    for item in (span, log_record):
        assert CONTENT not in all_strings(item) and SECRET not in all_strings(item)

    # Metrics: delta for fire (one short process per call).
    (events,) = receiver.metric("triohooks.events")
    assert events.sum.aggregation_temporality == 1  # DELTA
    assert sum_points([events], triohooks__event="pre_tool") == 1
    assert sum_points(receiver.metric("triohooks.blocks"), triohooks__event="pre_tool") == 1
    (duration,) = receiver.metric("triohooks.hook.duration")
    assert duration.unit == "s"
    assert sum_points([duration], triohooks__event="pre_tool", triohooks__outcome="block") == 1
    assert receiver.metric("triohooks.hook.failures") == []
    dropped = receiver.metric("triohooks.dropped")
    assert dropped and sum_points(dropped) == 0


def test_fire_counts_a_failing_hook(tmp_path: Path, receiver: Receiver) -> None:
    write_toml_hooks(tmp_path / "g", BLOCKING_TOML)
    fired = fire(tmp_path, receiver.endpoint, {"tool": "Broken", "session_id": SESSION})
    assert fired.returncode == 0, fired.stderr
    ((_, span),) = receiver.got.spans
    span_attrs = attrs(span.attributes)
    assert span_attrs["triohooks.outcome"] == "error" and span_attrs["error.type"] == "error"
    assert span.status.code == Status.STATUS_CODE_ERROR and span.status.message == ""
    ((_, log_record),) = receiver.got.logs
    (line,) = jsonl_records(tmp_path / "state")
    assert log_view(log_record) == expected_log_attributes(line)
    assert log_record.severity_number == 17  # ERROR
    failures = receiver.metric("triohooks.hook.failures")
    assert sum_points(failures, triohooks__hook__name="broken", error__type="error") == 1
    assert_documented(receiver)


def test_fire_without_an_endpoint_loads_no_sdk(tmp_path: Path) -> None:
    write_toml_hooks(tmp_path / "g", BLOCKING_TOML)
    fired = fire(tmp_path, None, BASH)
    assert fired.returncode == 2 and fired.stderr == ""
    assert "trio" in fired.modules  # the engine path
    assert not [m for m in fired.modules if m.startswith(("opentelemetry.sdk", "google"))]


def test_fire_with_an_endpoint_but_no_sdk_warns_once(tmp_path: Path, receiver: Receiver) -> None:
    write_toml_hooks(tmp_path / "g", BLOCKING_TOML)
    fired = fire(tmp_path, receiver.endpoint, BASH, block_import="opentelemetry.sdk")
    assert fired.returncode == 2 and fired.outcome["blocked"]
    assert fired.stderr.splitlines() == [
        "triohooks: an OTLP endpoint is set but the otel extra (pip install 'triohooks[otel]') "
        "is not installed: no OTLP export"
    ]
    assert receiver.got.requests == 0


def test_fire_with_a_dead_or_silent_collector_is_bounded(tmp_path: Path) -> None:
    """A collector that refuses connections, or accepts them and never answers: fire still
    answers the same, and its exit waits at most its close bound (0.5 s) for the export."""
    write_toml_hooks(tmp_path / "g", BLOCKING_TOML)
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    dead = f"http://127.0.0.1:{closed.getsockname()[1]}"  # bound, not listening: refused
    silent_sock = socket.socket()
    silent_sock.bind(("127.0.0.1", 0))
    silent_sock.listen(64)  # the kernel completes handshakes; nobody ever reads or answers
    silent = f"http://127.0.0.1:{silent_sock.getsockname()[1]}"
    try:
        base = fire(tmp_path, None, BASH)
        refused = fire(tmp_path, dead, BASH)
        hung = fire(tmp_path, silent, BASH)
    finally:
        closed.close()
        silent_sock.close()
    for f in (refused, hung):
        assert f.returncode == base.returncode == 2
        assert f.outcome["blocked"] and f.outcome["reason"] == base.outcome["reason"]
        (warning,) = [line for line in f.stderr.splitlines() if "OTLP" in line]
        assert "opentelemetry" not in f.stderr  # the exporters' own retry chatter is kept back
        assert warning.startswith("triohooks: warning: OTLP export: sent 0/1 spans, 0/1 log")
        assert "dropped 1 spans" in warning and "1 log records" in warning
    assert "export_failed" in refused.stderr and "shutdown" in hung.stderr
    # The exporters' default timeout is 10 s: an unbounded close would take that at least.
    # (Measured: +0.2 s refused, +0.7 s hung; docs/observability.md.)
    assert hung.seconds < base.seconds + 5, (base.seconds, refused.seconds, hung.seconds)
    assert refused.seconds < base.seconds + 5


# -- serve ----------------------------------------------------------------------------------------

TOKEN = "otlp-test-token-0123456789abcdef"


@contextmanager
def serving(
    tmp_path: Path, env: dict[str, str], *, announced: bool = True
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``triohooks serve`` as a child process, and its URL once it said it listens (with
    ``announced``; else at once, and no URL)."""
    (tmp_path / "ws").mkdir(exist_ok=True)
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    argv = [sys.executable, "-m", "triohooks", "serve", "--port", "0"]
    argv += ["--workspace", str(tmp_path / "ws"), "--token-file", str(token_file)]
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        if not announced:
            yield proc, ""
            return
        first = proc.stdout.readline()
        assert first.startswith("triohooks serve: listening on ws://127.0.0.1:"), first
        yield proc, first.split()[-1]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_serve_exports_a_websocket_session(tmp_path: Path, receiver: Receiver) -> None:
    write_toml_hooks(tmp_path / "g", BLOCKING_TOML)
    env = cli_env(tmp_path, receiver.endpoint)
    sessions = [f"sess-{i}" for i in range(3)]

    async def session(url: str) -> list[bool]:
        blocked = []
        with trio.fail_after(30):
            async with connect(url, TOKEN) as client:
                for s in sessions:
                    args = {"command": CONTENT}
                    blocked.append(
                        (
                            await client.fire("pre_tool", tool="Bash", args=args, session_id=s)
                        ).blocked
                    )
                    await client.fire("pre_tool", tool="Broken", session_id=s)
                    await client.fire("post_tool", tool="Bash", args=args, session_id=s)
                    await client.fire("prompt_submit", prompt=CONTENT, session_id=s)
                counts.append(await client.stats())
        return blocked

    counts: list[StatsReply] = []

    with serving(tmp_path, env) as (proc, url):
        blocked = trio.run(session, url)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=TIMEOUT_S)
    assert proc.returncode == 0, err
    assert blocked == [True, True, True]
    # The stats reply has the export's counts while serving (the background hooks' spans may
    # still be on their way): every span and record so far produced, none dropped.
    (stats,) = counts
    assert stats.otlp is not None and set(stats.otlp) == {"spans", "logs"}
    assert stats.otlp["spans"]["produced"] >= 6 and stats.otlp["logs"]["produced"] >= 6
    assert stats.otlp["spans"]["dropped"] == stats.otlp["logs"]["dropped"] == 0
    # Per session: the blocking hook, the broken one, the background post_tool hook.
    assert "triohooks serve: OTLP export: sent 9/9 spans, 7/7 log records; metrics\n" in err
    got = receiver.got
    spans = [attrs(s.attributes) for _, s in got.spans]
    assert sorted((a["gen_ai.conversation.id"], a["triohooks.hook.id"]) for a in spans) == sorted(
        (s, h) for s in sessions for h in ("no-rm", "broken", "after")
    )
    assert {r["triohooks.front"] for r, _ in got.spans} == {"serve"}

    # Every audit record (3 blocks, 3 failures, the close report), as the JSONL has it.
    lines = jsonl_records(tmp_path / "state")
    assert [line["kind"] for line in lines].count("worker") == 1
    views = [log_view(r) for _, r in got.logs]
    assert sorted(json.dumps(v, sort_keys=True) for v in views) == sorted(
        json.dumps(expected_log_attributes(line), sort_keys=True) for line in lines
    )
    close_report = next(v for v in views if v["triohooks.audit.kind"] == "worker")
    assert close_report["triohooks.audit.detail"]["offered"] == 3
    for _, item in got.spans + got.logs:
        assert CONTENT not in all_strings(item) and SECRET not in all_strings(item)

    # Metrics (cumulative for serve), from the final collection at shutdown.
    events = receiver.metric("triohooks.events")
    assert events[-1].sum.aggregation_temporality == 2  # CUMULATIVE
    assert sum_points(events[-1:], triohooks__event="pre_tool") == 6
    assert sum_points(events[-1:], triohooks__event="post_tool") == 3
    # No hook is configured for prompt_submit: the engine's fast path, which nothing observes.
    assert sum_points(events[-1:], triohooks__event="prompt_submit") == 0
    assert sum_points(receiver.metric("triohooks.blocks")[-1:], triohooks__event="pre_tool") == 3
    failures = receiver.metric("triohooks.hook.failures")[-1:]
    assert sum_points(failures, triohooks__hook__name="broken") == 3
    assert sum_points(receiver.metric("triohooks.hook.duration")[-1:]) == 9
    assert_documented(receiver)


# -- demo -----------------------------------------------------------------------------------------


def test_demo_exports_its_session(tmp_path: Path, receiver: Receiver) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "triohooks", "demo"],
        capture_output=True,
        text=True,
        env=cli_env(tmp_path, receiver.endpoint),
        timeout=TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    summary = done.stdout.strip().splitlines()[-1]
    spans, logs = receiver.counts()
    assert summary == f"OTLP export: sent {spans}/{spans} spans, {logs}/{logs} log records; metrics"
    assert spans >= 10 and logs >= 2
    from triohooks.fronts.demo import SESSION as DEMO_SESSION
    from triohooks.fronts.demo import USER_PROMPT

    got = receiver.got
    assert {attrs(s.attributes)["gen_ai.conversation.id"] for _, s in got.spans} == {DEMO_SESSION}
    assert {r["triohooks.front"] for r, _ in got.spans + got.logs} == {"demo"}
    for _, item in got.spans + got.logs:
        assert USER_PROMPT not in all_strings(item) and "git push" not in all_strings(item)
    assert sum_points(receiver.metric("triohooks.blocks")) >= 1


# -- a 10k-event session; the receiver goes away and comes back -----------------------------------

#: An engine set up as the fronts set it up (otel.start + otel.watch), with an in-process hook
#: that blocks every event (so every event has a span and an audit log record). Commands on
#: stdin: ``run N`` fires N events and flushes; ``close`` closes the export. Each answers one
#: JSON line: the export's numbers and the decisions' latencies.
SESSION_SCRIPT = (
    textwrap.dedent(
        """
    import json, statistics, sys, time
    from pathlib import Path
    import msgspec, trio
    from triohooks import HookEngine
    from triohooks.fronts import otel

    state = Path(sys.argv[1])

    def report(telemetry, **extra):
        stats = {k: msgspec.to_builtins(v) for k, v in telemetry.stats().items()}
        print(json.dumps({"stats": stats, **extra}), flush=True)

    async def main():
        telemetry = otel.start("serve")
        async def block(event):
            return {"decision": "block", "reason": "refused, key SECRET"}
        ws = state / "ws"
        ws.mkdir(parents=True, exist_ok=True)
        async with HookEngine.open(workspace=ws, state_dir=state, config_dir=state / "g") as e:
            e.add_hook("pre_tool", block, name="blocker")
            otel.watch(e)
            print(json.dumps({"ready": True}), flush=True)
            n = 0
            while True:
                line = await trio.to_thread.run_sync(sys.stdin.readline)
                if line.startswith("close") or not line:
                    break
                count = int(line.split()[1])
                latencies = []
                for _ in range(count):
                    n += 1
                    t = time.perf_counter()
                    outcome = await e.pre_tool("Bash", {"command": "CONTENT"}, session_id=f"s{n}")
                    latencies.append(time.perf_counter() - t)
                    assert outcome.blocked
                flushed = await trio.to_thread.run_sync(telemetry.flush, 20.0)
                report(telemetry, flushed=flushed, max_s=max(latencies),
                       median_s=statistics.median(latencies))
        telemetry.close()
        report(telemetry, closed=True)

    trio.run(main)
    """
    )
    .replace("SECRET", SECRET)
    .replace("CONTENT", CONTENT)
)


class Session:
    def __init__(self, tmp_path: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SESSION_SCRIPT, str(tmp_path / "state")],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.read() == {"ready": True}

    def read(self) -> dict[str, Any]:
        stdout = self.proc.stdout
        assert stdout is not None
        result: list[str] = []

        def read_line() -> None:
            result.append(stdout.readline())

        reader = threading.Thread(target=read_line, daemon=True)
        reader.start()
        reader.join(TIMEOUT_S)
        assert result and result[0], self.stderr()
        doc: dict[str, Any] = json.loads(result[0])
        return doc

    def send(self, line: str) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self.read()

    def stderr(self) -> str:
        if self.proc.poll() is None:
            self.proc.kill()
        _, err = self.proc.communicate(timeout=TIMEOUT_S)
        return err

    def finish(self) -> str:
        _, err = self.proc.communicate(timeout=TIMEOUT_S)
        assert self.proc.returncode == 0, err
        return err

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate(timeout=TIMEOUT_S)


def totals(doc: dict[str, Any], signal_name: str) -> tuple[int, int, dict[str, int]]:
    s = doc["stats"][signal_name]
    return s["produced"], s["exported"], s["dropped"]


@pytest.mark.long
def test_ten_thousand_events_then_the_receiver_goes_away_and_comes_back(
    tmp_path: Path, receiver: Receiver
) -> None:
    env = cli_env(
        tmp_path,
        receiver.endpoint,
        # Queues that hold a burst of 10k (the default, 2048, drops what a burst overflows:
        # see the next test); a short request timeout, so a dead receiver fails a batch fast.
        OTEL_BSP_MAX_QUEUE_SIZE="20000",
        OTEL_BLRP_MAX_QUEUE_SIZE="20000",
        OTEL_EXPORTER_OTLP_TIMEOUT="1",
    )
    session = Session(tmp_path, env)
    try:
        # 1. 10k events: every span and log record arrives.
        first = session.send("run 10000")
        assert first["flushed"]
        assert totals(first, "traces") == (10000, 10000, {})
        assert totals(first, "logs") == (10000, 10000, {})
        assert receiver.counts() == (10000, 10000)
        ids = {attrs(s.attributes)["gen_ai.conversation.id"] for _, s in receiver.got.spans}
        assert len(ids) == 10000
        (_, log_record) = receiver.got.logs[0]
        assert "[REDACTED]" in log_view(log_record)["triohooks.audit.error"]

        # 2. The receiver goes away. First its port takes connections and never answers
        # (a hung collector: each export waits out the 1 s request timeout), then nothing
        # listens (refused). Decisions go on as fast; the export counts what it drops.
        receiver.stop()
        hung = socket.socket()
        hung.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        hung.bind(("127.0.0.1", receiver.port))
        hung.listen(64)
        try:
            silent = session.send("run 300")
        finally:
            hung.close()
        refused = session.send("run 300")
        assert silent["flushed"] and refused["flushed"]
        assert receiver.counts() == (10000, 10000)
        for doc, produced in ((silent, 10300), (refused, 10600)):
            for name in ("traces", "logs"):
                assert totals(doc, name) == (produced, 10000, {"export_failed": produced - 10000})
        # A decision that waited for an export to the hung port would take the request
        # timeout (1 s). Measured: docs/observability.md.
        assert silent["max_s"] < 0.5, (first["max_s"], silent["max_s"], refused["max_s"])
        assert refused["max_s"] < 0.5, (first["max_s"], silent["max_s"], refused["max_s"])

        # 3. It comes back on the same port: the export resumes.
        receiver.start()
        back = session.send("run 500")
        assert back["flushed"]
        assert totals(back, "traces")[:2] == (11100, 10500)
        assert receiver.counts() == (10500, 10500)

        final = session.send("close")
        err = session.finish()
    finally:
        session.kill()
    for name in ("traces", "logs"):
        produced, exported, dropped = totals(final, name)
        assert produced == exported + sum(dropped.values()) == 11100
        assert dropped == {"export_failed": 600}
    spans, logs = receiver.counts()
    assert spans + 600 == logs + 600 == 11100  # arrived + dropped == produced
    assert "OTLP export of spans failing (" in err and "OTLP export of spans resumed" in err
    assert len(jsonl_records(tmp_path / "state")) == 11100  # the JSONL has every record

    # The metrics, from the last collection at close: every event, and what was dropped.
    events = receiver.metric("triohooks.events")[-1:]
    assert sum_points(events, triohooks__event="pre_tool") == 11100
    dropped_metric = receiver.metric("triohooks.dropped")[-1:]
    assert (
        sum_points(dropped_metric, triohooks__dropped__kind="span", error__type="export_failed")
        == 600
    )
    assert sum_points(dropped_metric, triohooks__dropped__kind="log_record") == 600


def test_a_full_queue_drops_and_counts(tmp_path: Path, receiver: Receiver) -> None:
    """A burst bigger than the queue (64, exported 16 at a time to a receiver that takes
    0.2 s a request): what does not fit is dropped and counted, never waited for."""
    slow = threading.Event()
    original = receiver.record

    def slow_record(path: str, request: Any, content_type: str) -> None:
        if slow.is_set():
            time.sleep(0.2)
        original(path, request, content_type)

    receiver.record = slow_record  # type: ignore[method-assign]
    slow.set()
    env = cli_env(
        tmp_path,
        receiver.endpoint,
        OTEL_BSP_MAX_QUEUE_SIZE="64",
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE="16",
        OTEL_BLRP_MAX_QUEUE_SIZE="64",
        OTEL_BLRP_MAX_EXPORT_BATCH_SIZE="16",
    )
    session = Session(tmp_path, env)
    try:
        burst = session.send("run 2000")
        final = session.send("close")
        err = session.finish()
    finally:
        session.kill()
    assert burst["max_s"] < 0.5
    spans, logs = receiver.counts()
    for name, arrived in (("traces", spans), ("logs", logs)):
        produced, exported, dropped = totals(final, name)
        assert produced == 2000 and exported == arrived
        assert dropped.get("queue_full", 0) > 1000
        assert exported + sum(dropped.values()) == produced
    assert "queue is full (64)" in err


# -- in process: the settings, the queue, the audit hook ------------------------------------------


def test_settings_follow_the_standard_variables() -> None:
    none = read_settings({})
    assert none.signals == {} and none.notes == ["no OTEL_EXPORTER_OTLP_*ENDPOINT is set"]
    everything = read_settings({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"})
    assert everything.signals == dict.fromkeys(("traces", "logs", "metrics"), "http/protobuf")
    traces_only = read_settings({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"})
    assert traces_only.signals == {"traces": "http/protobuf"}
    some = read_settings(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
            "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL": "http/protobuf",
            "OTEL_METRICS_EXPORTER": "none",
        }
    )
    assert some.signals == {"traces": "grpc", "logs": "http/protobuf"}
    json_protocol = read_settings(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}
    )
    assert json_protocol.signals == {}
    assert "http/json is not supported by the Python OTLP exporter" in json_protocol.warnings[0]
    disabled = read_settings(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_SDK_DISABLED": "true"}
    )
    assert disabled.signals == {}


def test_grpc_without_its_exporter_warns_and_exports_nothing(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    pytest.importorskip("opentelemetry.sdk")
    if importlib.util.find_spec("opentelemetry.exporter.otlp.proto.grpc") is not None:
        pytest.skip("the gRPC exporter is installed here")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    with caplog.at_level("WARNING", logger="triohooks.otel"):
        assert otel.start("fire") is None
    (message,) = [r.getMessage() for r in caplog.records]
    assert (
        "OTEL_EXPORTER_OTLP_PROTOCOL=grpc needs opentelemetry-exporter-otlp-proto-grpc" in message
    )


def _batcher(export: Any, **kw: Any) -> Batcher[int]:
    return Batcher("items", export, quiet=True, **kw)


def test_the_queue_drops_what_does_not_fit_and_never_waits() -> None:
    gate = threading.Event()
    exported: list[int] = []

    def export(items: Any) -> bool:
        gate.wait(10)
        exported.extend(items)
        return True

    b = _batcher(export, max_queue=10, max_batch=5, delay_s=0.0)
    started = time.monotonic()
    results = [b.offer(i) for i in range(100)]  # the exporter is stuck: none of this waits
    assert time.monotonic() - started < 1.0
    gate.set()
    assert b.flush(10)
    b.finish_close(time.monotonic() + 10)
    s = b.stats()
    assert s.produced == 100 and s.exported == len(exported) == results.count(True)
    assert s.dropped == {"queue_full": 100 - s.exported}
    assert 10 <= s.exported <= 15  # 10 queued (+ up to one batch in flight when it filled)


def test_the_queue_counts_failed_exports_and_what_is_left_at_close() -> None:
    calls: list[int] = []

    def failing(items: Any) -> bool:
        calls.append(len(items))
        if len(calls) == 1:
            return False
        if len(calls) == 2:
            raise OSError("collector gone")
        time.sleep(30)  # hangs: the close bound cuts it off
        return True

    aborted = threading.Event()
    b = _batcher(failing, max_queue=100, max_batch=4, delay_s=0.0, abort=aborted.set)
    for i in range(12):
        b.offer(i)
    deadline = time.monotonic() + 0.5
    started = time.monotonic()
    b.finish_close(deadline)
    assert time.monotonic() - started < 2.0 and aborted.is_set()
    s = b.stats()
    assert s.produced == 12 and s.exported == 0 and s.failed_exports == 2
    assert s.dropped == {"export_failed": 8, "shutdown": 4}
    assert s.last_error == "OSError: collector gone"
    assert not b.offer(99) and b.stats().dropped["shutdown"] == 5


async def test_the_audit_sink_hands_its_redacted_records_to_exporters(tmp_path: Path) -> None:
    seen: list[AuditRecord] = []

    def broken(record: AuditRecord) -> None:
        raise RuntimeError("exporter bug")

    remove_broken = add_record_exporter(broken)
    remove = add_record_exporter(seen.append)
    try:
        sink = AuditSink(tmp_path)
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                await nursery.start(sink.serve)
                record = AuditRecord(
                    session="s",
                    kind="hook",
                    event="pre_tool",
                    hook="h",
                    decision="block",
                    error=f"no: {SECRET}",
                    duration_ms=1.0,
                    workspace=str(tmp_path),
                )
                assert sink.submit(record)
                await sink.close()
    finally:
        remove()
        remove_broken()
    (got,) = seen
    (line,) = jsonl_records(tmp_path)
    assert msgspec.to_builtins(got) == line
    assert SECRET not in (got.error or "") and got.time
    assert sink.submit(record) is False and len(seen) == 1  # closed: neither written nor exported


def adopted_claude_guard(tmp_path: Path, receiver: Receiver) -> tuple[dict[str, str], str]:
    """A user-scope Claude Code install whose adopted PreToolUse hook denies, reached
    through the relay: serve's environment, and a hook input it denies."""
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    guard = {"PreToolUse": [{"hooks": [{"type": "command", "command": "echo no >&2; exit 2"}]}]}
    adopted = home / ".claude" / "triohooks-hooks.json"
    adopted.write_text(json.dumps(guard))
    routed, _, _ = catch_all(  # as `triohooks claude install --scope user` leaves it
        "claude",
        guard,
        source=str(adopted),
        scope="user",
        transport="relay",
        port=8765,
        relay_script=str(RELAY),
        own=None,  # every event, as an install with unknown hooks routes
    )
    (home / ".claude" / "settings.json").write_text(json.dumps({"hooks": routed}))
    (tmp_path / "state").mkdir(mode=0o700)
    env = cli_env(tmp_path, receiver.endpoint, HOME=str(home))
    body = json.dumps(
        {
            "session_id": "claude-sess",
            "cwd": str(tmp_path),
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": CONTENT},
        }
    )
    return env, body


def relay_as_soon_as_serve_listens(
    tmp_path: Path, env: dict[str, str], body: str, proc: subprocess.Popen[str]
) -> subprocess.CompletedProcess[str]:
    """The relay run the moment serve's socket appears (as a relay that started serve finds
    it), then serve stopped (SIGTERM: its export flushed)."""
    deadline = time.monotonic() + TIMEOUT_S
    while not (tmp_path / "state" / "serve.sock").exists():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.001)
    return subprocess.run(
        [sys.executable, "-I", "-S", str(RELAY), "claude"],
        input=body,
        capture_output=True,
        text=True,
        env={**env, "TRIOHOOKS_NO_AUTOSTART": "1"},
        timeout=TIMEOUT_S,
        check=False,
    )


@pytest.mark.parametrize("announced", [True, False], ids=["after-listening-line", "at-once"])
def test_serve_exports_claude_code_traffic_as_it_exports_native_events(
    tmp_path: Path, receiver: Receiver, announced: bool
) -> None:
    """An agent's hooks, adopted and reached through the relay, are ordinary traffic: the
    same span, audit log record and metrics a native event gets (an operator exporting from
    serve used to see none of them). ``at-once``: the relay asks the moment serve's socket is
    there, before serve says it listens -- as a relay that started serve does (issue 38: the
    export was set up after serve listened, and the first requests had no span nor log
    record, "sent 0/0")."""
    env, body = adopted_claude_guard(tmp_path, receiver)
    with serving(tmp_path, env, announced=announced) as (proc, _):
        relay = relay_as_soon_as_serve_listens(tmp_path, env, body, proc)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=TIMEOUT_S)
    answer = json.loads(relay.stdout)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny", relay.stderr
    assert proc.returncode == 0, err
    assert "triohooks serve: OTLP export: sent 1/1 spans" in err, err
    ((resource, span),) = receiver.got.spans
    assert span.name == "hook pre_tool" and resource["triohooks.front"] == "serve"
    got = attrs(span.attributes)
    assert got["triohooks.hook.dialect"] == "claude"
    assert got["triohooks.hook.id"] == "claude:user:PreToolUse[0].hooks[0]"
    assert got["gen_ai.conversation.id"] == "claude-sess" and got["triohooks.outcome"] == "block"
    (view,) = [log_view(r) for _, r in receiver.got.logs if "worker" not in str(r)]
    assert view["triohooks.audit.decision"] == "block"
    events = receiver.metric("triohooks.events")
    assert sum_points(events[-1:], triohooks__event="pre_tool") == 1
    assert sum_points(receiver.metric("triohooks.blocks")[-1:], triohooks__event="pre_tool") == 1
    assert CONTENT not in all_strings(span)
