"""``triohooks watch``: follow a running service's event stream, one line per record - or, with
``--stats``, an operator's view of it: per-hook counts, p50/p99 durations and drops.

Owns the ``watch`` subcommand: reading the token file, subscribing through
:mod:`triohooks.fronts.client`, and turning each ``event`` / ``lagged`` frame into one line
(readable by default, the record's JSON with ``--json``) until the server closes the connection -
which ``triohooks demo --serve`` and ``triohooks serve`` do with code 1000 when they stop.

In stats mode it owns the client-side aggregation (:class:`StreamStats`) and its two views: a
table redrawn in place on a terminal (appended otherwise), and one JSON object per interval
(``--json``). Everything is computed from the records this watcher received: memory is bounded
(a fixed-size ring of durations per hook, capped table sizes), whatever the stream's length.

It must not fire events or decide anything: a line shows what the record says, and the stats
count what the stream said, nothing more.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from array import array
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Final, TextIO, TypeVar

import msgspec
import trio
from trio_websocket import CloseReason, ConnectionClosed, ConnectionRejected

from triohooks.handlers.outcomes import FAILED_OUTCOMES

from .client import RemoteError, connect, innermost
from .wire import EVENT_KINDS, EventRecord, Lagged, StatsReply, encode

K = TypeVar("K")

#: Close codes that mean the server stopped on purpose (normal closure, going away).
CLEAN_CLOSE: Final = frozenset({1000, 1001})


def _clock(stamp: float) -> str:
    whole = time.strftime("%H:%M:%S", time.localtime(stamp))
    return f"{whole}.{int(stamp % 1 * 1000):03d}"


def _outcome_text(outcome: dict[str, Any]) -> str:
    runs = outcome.get("runs") or []
    if outcome.get("event") == "stop" and outcome.get("continue"):
        text = f"CONTINUE: {outcome.get('reason')}"
    elif outcome.get("blocked"):
        text = f"BLOCKED: {outcome.get('reason')}"
    else:
        text = outcome.get("decision") or "proceed"
        if outcome.get("event") == "pre_tool" and outcome.get("args") is not None:
            text += f", args {json.dumps(outcome['args'])}"
        if outcome.get("additional_context"):
            text += f", context {outcome['additional_context']!r}"
    if outcome.get("queued"):
        text += ", background hooks queued"
    return f"{text} ({len(runs)} hook(s) ran)"


def _details(record: EventRecord) -> str:
    """What a record of each listener kind says, in a few words."""
    data = record.data
    match record.kind:
        case "fired":
            return f"{data.get('hooks', 0)} hook(s) match, session {data.get('session')}"
        case "hook_started":
            return f"{data.get('hook')} started"
        case "hook_finished":
            text = f"{data.get('hook')} finished: {data.get('outcome')}"
            if data.get("exit_code") is not None:
                text += f", exit {data['exit_code']}"
            return text + f", {data.get('duration_ms', 0.0):.1f} ms"
        case "outcome":
            return _outcome_text(data.get("outcome") or {})
        case "audit":
            rec = data.get("record") or {}
            if rec.get("kind") != "hook":
                detail = rec.get("detail") or {}
                return f"{rec.get('kind')} record: " + _pairs(detail)
            text = f"hook record: {rec.get('hook')} -> {rec.get('decision')}"
            return text + (f" ({rec['error']})" if rec.get("error") else "")
        case "closed":
            rep = data.get("report") or {}
            dropped = rep.get("dropped_full", 0) + rep.get("dropped_at_close", 0)
            return f"engine closed: {rep.get('ran')} background event(s) ran, {dropped} dropped"
        case "dropped":
            return f"dropped {data.get('hooks')} background hook(s): {data.get('reason')}"
        case "falling_behind":
            return str(data.get("message"))
    return _pairs(data)


def _pairs(data: dict[str, Any]) -> str:
    return " ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in data.items())


def format_record(item: EventRecord | Lagged) -> str:
    """One line for one stream item: seq, clock time, kind, event, what happened."""
    if isinstance(item, Lagged):
        return f"{'':>5}  lagged: {item.missed} record(s) lost (this terminal read too slowly)"
    event = item.event or "-"
    return f"{item.seq:>5}  {_clock(item.time)}  {item.kind:<14} {event:<20} {_details(item)}"


async def watch(
    url: str,
    token: str,
    out: TextIO,
    *,
    events: Sequence[str] = ("*",),
    as_json: bool = False,
) -> CloseReason | None:
    """Subscribe to ``url`` and write one line per record to ``out`` until the server closes.

    A checkpoint. Returns how the connection closed. Raises what
    :func:`triohooks.fronts.client.connect` raises (``ConnectionRejected`` for a wrong token,
    ``OSError`` when nothing listens) and ``RemoteError`` for an unknown event name (the
    subscription's own nursery may still wrap it in a one-exception group). On cancel the
    connection is closed (code 1000) and the cancel propagates.
    """
    async with connect(url, token) as client, client.subscribe(events) as stream:
        out.write(f"watching {url} (events: {', '.join(events)})\n")
        out.flush()
        async for item in stream:
            out.write((encode(item) if as_json else format_record(item)) + "\n")
            out.flush()
        closed: CloseReason | None = client.ws.closed
    return closed


# -- stats mode (``--stats``) ------------------------------------------------------------------

#: The stats view's defaults: a snapshot every 2 s; durations of the last 60 s count.
DEFAULT_INTERVAL_S: Final = 2.0
DEFAULT_WINDOW_S: Final = 60.0
#: Durations kept per hook (the newest ones): the percentiles are over those of them that
#: finished within the window, so a hook running more than this many times per window is
#: measured over its last ``RING_SIZE`` runs. 16 bytes a run: 16 KiB per hook at most.
RING_SIZE: Final = 1024
#: At most this many rows per table (hooks, events, drop reasons); later names share one row
#: named ``OTHER`` so that a stream of ever-new names cannot grow the watcher without bound.
MAX_ROWS: Final = 256
OTHER: Final = "(other)"
#: Outcome columns of the table, in order; other outcomes are summed under ``other``.
TABLE_OUTCOMES: Final = ("ok", "block", "mutate", "error", "timeout")
#: What the stats subscribe to: every kind but ``audit`` (it repeats what ``hook_finished``
#: and ``outcome`` say, and is the biggest record: fewer bytes, less chance to lag).
STATS_KINDS: Final = tuple(sorted(EVENT_KINDS - {"audit"}))


class DurationRing:
    """The last ``size`` (time, duration) pairs, in two fixed arrays: bounded, whatever runs."""

    __slots__ = ("_durations", "_next", "_size", "_times", "count")

    def __init__(self, size: int = RING_SIZE) -> None:
        if size < 1:
            raise ValueError("a ring holds at least one value")
        self._size = size
        self._times = array("d", bytes(8 * size))
        self._durations = array("d", bytes(8 * size))
        self._next = 0
        #: Values held (at most ``size``).
        self.count = 0

    def add(self, when: float, value: float) -> None:
        self._times[self._next] = when
        self._durations[self._next] = value
        self._next = (self._next + 1) % self._size
        self.count = min(self.count + 1, self._size)

    def since(self, start: float) -> list[float]:
        """The values added at ``start`` or later (of those still held), sorted."""
        held = range(self._next - self.count, self._next)
        times, durations = self._times, self._durations
        return sorted(durations[i] for i in held if times[i] >= start)


def percentile(ordered: Sequence[float], q: float) -> float | None:
    """The nearest-rank ``q``-quantile (0 < q <= 1) of sorted values: a value that was measured,
    the smallest one with at least ``q`` of the values at or below it. None when empty."""
    if not ordered:
        return None
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[rank - 1]


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _row_key(rows: Mapping[K, object], key: K, other: K) -> K:
    """``key`` if it has a row or there is room for one, else the shared ``other`` row's key."""
    return key if key in rows or len(rows) < MAX_ROWS - 1 else other


def _bump(counts: dict[str, int], key: str, by: int = 1) -> None:
    key = _row_key(counts, key, OTHER)
    counts[key] = counts.get(key, 0) + by


class HookStats:
    """What the stream said about one hook (per lifecycle event: a hook name can be on several)."""

    __slots__ = ("event", "hook", "outcomes", "ring", "runs", "started")

    def __init__(self, event: str, hook: str, ring_size: int = RING_SIZE) -> None:
        self.event = event
        self.hook = hook
        self.started = 0
        self.runs = 0
        self.outcomes: dict[str, int] = {}
        self.ring = DurationRing(ring_size)

    def finished(self, outcome: str, duration_ms: float, now: float) -> None:
        self.runs += 1
        _bump(self.outcomes, outcome)
        self.ring.add(now, duration_ms)

    def snapshot(
        self, now: float, window_s: float, *, engine_closed: bool = False
    ) -> dict[str, Any]:
        """This hook's numbers; ``running`` is 0 once the engine closed (a run cut off at close
        has a ``hook_started`` and no ``hook_finished``)."""
        window = self.ring.since(now - window_s)
        return {
            "event": self.event,
            "hook": self.hook,
            "started": self.started,
            "running": 0 if engine_closed else max(0, self.started - self.runs),
            "runs": self.runs,
            "outcomes": dict(sorted(self.outcomes.items())),
            "failures": sum(n for k, n in self.outcomes.items() if k in FAILED_OUTCOMES),
            "window_runs": len(window),
            "p50_ms": _ms(percentile(window, 0.50)),
            "p99_ms": _ms(percentile(window, 0.99)),
            "max_ms": _ms(window[-1] if window else None),
        }


class EventStats:
    """What the stream said about one lifecycle event."""

    __slots__ = ("blocked", "continued", "dropped", "fired", "outcomes", "queued")

    def __init__(self) -> None:
        self.fired = self.outcomes = self.blocked = self.continued = 0
        self.queued = self.dropped = 0

    def snapshot(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in sorted(self.__slots__)}


class StreamStats:
    """Client-side numbers of one watcher's stream, from the records it received.

    Counts are since this watcher subscribed; durations (p50 / p99 / max) are those of the runs
    that finished in the last ``window_s`` seconds, out of each hook's last ``ring_size`` runs.
    ``now`` is any monotonic clock in seconds (``trio.current_time()`` in the command), the
    time at which a record was received: the watcher's clock, not the server's, so that a
    remote server's clock does not matter. Records lost while lagging are counted as missed
    (``lagged``), never guessed at.
    """

    def __init__(
        self,
        url: str = "",
        *,
        events: Sequence[str] = ("*",),
        window_s: float = DEFAULT_WINDOW_S,
        ring_size: int = RING_SIZE,
    ) -> None:
        self.url = url
        self.events_filter = list(events)
        self.window_s = window_s
        self.ring_size = ring_size
        #: ``connecting``, then ``connected``, then ``closed`` (the server closed the stream
        #: normally) or ``lost`` (any other end).
        self.state = "connecting"
        self.detail: str | None = None
        self.connected_at: float | None = None
        self.ended_at: float | None = None
        self.records = 0
        self.last_seq = 0
        self.kinds: dict[str, int] = {}
        self.hooks: dict[tuple[str, str], HookStats] = {}
        self.events: dict[str, EventStats] = {}
        self.blocked = 0
        self.continued = 0
        self.dropped_events = 0
        self.dropped_hooks = 0
        self.dropped_reasons: dict[str, int] = {}
        self.falling_behind = 0
        #: The server's own counts (its ``stats`` reply), asked for once per interval: None
        #: until the first answer.
        self.server: dict[str, Any] | None = None
        self.lagged_times = 0
        self.lagged_missed = 0
        self.engine_closed = False

    # -- the connection -------------------------------------------------------------------
    def connected(self, now: float) -> None:
        self.state, self.detail, self.connected_at = "connected", None, now

    def ended(self, closed: CloseReason | None, now: float) -> None:
        """The stream ended: ``closed`` is how the websocket closed (None: unknown)."""
        clean = closed is not None and closed.code in CLEAN_CLOSE
        self.state = "closed" if clean else "lost"
        if closed is None:
            self.detail = "connection ended"
        else:  # "1000 server shutting down"; without a reason, the code's name
            self.detail = f"{closed.code} {closed.reason or closed.name}"
        self.ended_at = now

    # -- the records ----------------------------------------------------------------------
    def add(self, item: EventRecord | Lagged, now: float) -> None:
        """Count one stream item received at ``now``."""
        if isinstance(item, Lagged):
            self.lagged_times += 1
            self.lagged_missed += item.missed
            return
        self.records += 1
        self.last_seq = item.seq
        _bump(self.kinds, item.kind)
        data = item.data
        event = item.event or "-"
        match item.kind:
            case "fired":
                self._event(event).fired += 1
            case "hook_started":
                self._hook(event, data).started += 1
            case "hook_finished":
                duration = data.get("duration_ms")
                ms = float(duration) if isinstance(duration, int | float) else 0.0
                self._hook(event, data).finished(str(data.get("outcome")), ms, now)
            case "outcome":
                self._outcome(event, data.get("outcome"))
            case "dropped":
                self._event(event).dropped += 1
                self.dropped_events += 1
                hooks = data.get("hooks")
                self.dropped_hooks += hooks if isinstance(hooks, int) else 0
                _bump(self.dropped_reasons, str(data.get("reason")))
            case "falling_behind":
                self.falling_behind += 1
            case "closed":
                self.engine_closed = True

    def _outcome(self, event: str, outcome: object) -> None:
        row = self._event(event)
        row.outcomes += 1
        if not isinstance(outcome, dict):
            return
        if outcome.get("continue"):  # a stop hook asked for one more turn (blocked is set too)
            row.continued += 1
            self.continued += 1
        elif outcome.get("blocked"):
            row.blocked += 1
            self.blocked += 1
        if outcome.get("queued"):
            row.queued += 1

    def _event(self, event: str) -> EventStats:
        key = _row_key(self.events, event, OTHER)
        row = self.events.get(key)
        if row is None:
            row = self.events[key] = EventStats()
        return row

    def _hook(self, event: str, data: dict[str, Any]) -> HookStats:
        name = str(data.get("hook"))
        key = _row_key(self.hooks, (event, name), (OTHER, OTHER))
        row = self.hooks.get(key)
        if row is None:
            row = self.hooks[key] = HookStats(key[0], key[1], self.ring_size)
        return row

    # -- the view -------------------------------------------------------------------------
    @property
    def failures(self) -> int:
        return sum(
            n for h in self.hooks.values() for k, n in h.outcomes.items() if k in FAILED_OUTCOMES
        )

    def server_stats(self, reply: StatsReply) -> None:
        """Keep what the server's ``stats`` reply says of the whole server."""
        self.server = {
            "connections": reply.connections,
            "subscribers": reply.subscribers,
            "refused_connections": reply.refused_connections,
            "refused_out_of_fds": reply.refused_out_of_fds,
            "queue_depth": reply.queue_depth,
            "live_processes": reply.live_processes,
            "otlp": reply.otlp,
            "audit": msgspec.to_builtins(reply.audit) if reply.audit is not None else None,
        }

    def snapshot(self, now: float, wall: float | None = None) -> dict[str, Any]:
        """Everything, as the JSON object ``--stats --json`` prints (docs/watching.md)."""
        since = self.connected_at
        until = self.ended_at if self.ended_at is not None else now
        return {
            "type": "watch_stats",
            "time": round(time.time() if wall is None else wall, 3),
            "url": self.url,
            "events_filter": self.events_filter,
            "connection": {
                "state": self.state,
                "detail": self.detail,
                "connected_s": None if since is None else round(until - since, 3),
            },
            "window_s": self.window_s,
            "ring_size": self.ring_size,
            "records": self.records,
            "last_seq": self.last_seq,
            "kinds": dict(sorted(self.kinds.items())),
            "blocked": self.blocked,
            "continued": self.continued,
            "failures": self.failures,
            "dropped": {
                "events": self.dropped_events,
                "hooks": self.dropped_hooks,
                "reasons": dict(sorted(self.dropped_reasons.items())),
            },
            "falling_behind": self.falling_behind,
            "lagged": {"times": self.lagged_times, "missed": self.lagged_missed},
            "engine_closed": self.engine_closed,
            "server": self.server,
            "events": {name: row.snapshot() for name, row in sorted(self.events.items())},
            "hooks": [
                row.snapshot(now, self.window_s, engine_closed=self.engine_closed)
                for _, row in sorted(self.hooks.items())
            ],
        }


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    whole = int(seconds)
    if whole >= 3600:
        return f"{whole // 3600}h{whole // 60 % 60:02d}m{whole % 60:02d}s"
    if whole >= 60:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{seconds:.1f}s"


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def format_stats(snap: dict[str, Any]) -> list[str]:
    """The table of one :meth:`StreamStats.snapshot`, as lines (no newlines)."""
    conn = snap["connection"]
    state = conn["state"]
    if state == "connected":
        state = f"connected {_duration(conn['connected_s'])}"
    elif conn["detail"]:
        state = f"{state} ({conn['detail']}) after {_duration(conn['connected_s'])}"
    dropped, lagged = snap["dropped"], snap["lagged"]
    lines = [
        f"triohooks watch --stats  {snap['url']}  {state}  {_clock(snap['time'])}",
        f"records {snap['records']}   blocked {snap['blocked']}   continued {snap['continued']}"
        f"   failures {snap['failures']}   dropped {dropped['events']} background event(s)"
        f"   falling behind {snap['falling_behind']}   lagged {lagged['missed']} missed",
    ]
    if lagged["times"]:
        lines.append(
            f"LAGGED: this watcher read too slowly {lagged['times']} time(s): "
            f"{lagged['missed']} record(s) lost, not counted below"
        )
    if dropped["events"]:
        why = ", ".join(f"{reason}: {n}" for reason, n in dropped["reasons"].items())
        lines.append(
            f"DROPPED: {dropped['events']} background event(s), {dropped['hooks']} hook run(s)"
            f" not run ({why})"
        )
    server = snap.get("server")
    if server is not None:
        line = (
            f"server: {server['connections']} connection(s), {server['subscribers']} "
            f"subscriber(s), {server['live_processes']} hook process(es), background queue "
            f"{server['queue_depth']}, {server['refused_connections']} connection(s) refused"
        )
        if server["refused_out_of_fds"]:
            line += f" ({server['refused_out_of_fds']} out of file descriptors)"
        lines.append(line)
        for signal, n in sorted((server["otlp"] or {}).items()):
            lines.append(
                f"OTLP {signal}: {n['exported']}/{n['produced']} exported, {n['dropped']} "
                f"dropped, {n['queued']} queued"
            )
        audit = server.get("audit")
        if audit is not None:
            line = f"audit: {audit['written']} record(s) written, {audit['lost']} lost"
            if audit["lost"]:
                line += f" in {audit['failure_episodes']} episode(s)"
            if audit["torn_tails"]:
                line += f", {audit['torn_tails']} torn day-file tail(s) repaired"
            if audit["late"]:
                line += f", {audit['late']} answer(s) delivered before their record was written"
            if audit["failing"]:
                line = f"AUDIT FAILING (records are lost now; serve's log says why): {line}"
            lines.append(line)
    if snap["engine_closed"]:
        lines.append("the engine closed: the server is stopping, no more hooks will run")
    head = (
        f"{'EVENT':<16} {'HOOK':<24} {'RUNS':>6} {'ACTIVE':>6} "
        + " ".join(f"{k.upper():>7}" for k in (*TABLE_OUTCOMES, "other"))
        + f"  {'P50 ms':>8} {'P99 ms':>8} {'MAX ms':>8}"
    )
    lines += [
        "",
        f"durations: runs that finished in the last {snap['window_s']:g} s"
        f" (at most the last {snap['ring_size']} per hook)",
        head,
    ]
    for row in snap["hooks"]:
        outcomes = row["outcomes"]
        other = sum(n for k, n in outcomes.items() if k not in TABLE_OUTCOMES)
        counts = [outcomes.get(k, 0) for k in TABLE_OUTCOMES] + [other]
        lines.append(
            f"{row['event']:<16} {row['hook']:<24} {row['runs']:>6} {row['running']:>6} "
            + " ".join(f"{n:>7}" for n in counts)
            + f"  {_cell(row['p50_ms']):>8} {_cell(row['p99_ms']):>8} {_cell(row['max_ms']):>8}"
        )
    if not snap["hooks"]:
        lines.append("(no hook has run since this watcher connected)")
    names = ("fired", "outcomes", "blocked", "continued", "queued", "dropped")
    lines += ["", f"{'EVENT':<16} " + " ".join(f"{n.upper():>9}" for n in names)]
    for event, row in snap["events"].items():
        lines.append(f"{event:<16} " + " ".join(f"{row[n]:>9}" for n in names))
    return lines


class StatsView:
    """Where snapshots go: NDJSON, a table appended per interval, or one redrawn in place."""

    #: Cursor home; erase to the end of the line; erase below the cursor.
    HOME: Final = "\x1b[H"
    ERASE_LINE: Final = "\x1b[K"
    ERASE_BELOW: Final = "\x1b[J"

    def __init__(self, out: TextIO, *, as_json: bool = False, redraw: bool | None = None) -> None:
        self.out = out
        self.as_json = as_json
        self.redraw = (not as_json and _isatty(out)) if redraw is None else redraw
        self.shown = 0

    def show(self, snap: dict[str, Any]) -> None:
        if self.as_json:
            text = json.dumps(snap, separators=(",", ":")) + "\n"
        elif self.redraw:
            lines = format_stats(snap)
            text = self.HOME + "".join(f"{line}{self.ERASE_LINE}\n" for line in lines)
            text += self.ERASE_BELOW
        else:
            text = ("\n" if self.shown else "") + "\n".join(format_stats(snap)) + "\n"
        self.out.write(text)
        self.out.flush()
        self.shown += 1


def _isatty(out: TextIO) -> bool:
    try:
        return out.isatty()
    except (AttributeError, ValueError):
        return False


async def watch_stats(
    url: str,
    token: str,
    out: TextIO,
    *,
    events: Sequence[str] = ("*",),
    as_json: bool = False,
    interval_s: float = DEFAULT_INTERVAL_S,
    window_s: float = DEFAULT_WINDOW_S,
    redraw: bool | None = None,
) -> CloseReason | None:
    """Subscribe to ``url`` and show :class:`StreamStats` every ``interval_s`` until it closes.

    One snapshot as soon as the subscription is confirmed, one per interval, and a last one
    when the stream ends (its ``connection.state`` is ``closed`` or ``lost``). ``redraw``: draw
    the table in place (default: when ``out`` is a terminal and not ``as_json``). A checkpoint;
    returns and raises what :func:`watch` does.
    """
    stats = StreamStats(url, events=events, window_s=window_s)
    view = StatsView(out, as_json=as_json, redraw=redraw)

    def show() -> None:
        view.show(stats.snapshot(trio.current_time()))

    async def every_interval() -> None:
        deadline = trio.current_time()
        while True:
            deadline += interval_s
            await trio.sleep_until(deadline)
            await ask_server()
            show()

    async def ask_server() -> None:
        # A server that does not answer within the interval leaves the last counts shown.
        with trio.move_on_after(interval_s):
            try:
                stats.server_stats(await client.stats())
            except (RemoteError, ConnectionClosed):
                pass

    async with (
        connect(url, token) as client,
        client.subscribe(events, kinds=STATS_KINDS) as stream,
        trio.open_nursery() as nursery,
    ):
        stats.connected(trio.current_time())
        await ask_server()
        show()
        nursery.start_soon(every_interval)
        async for item in stream:
            stats.add(item, trio.current_time())
        nursery.cancel_scope.cancel()
        closed: CloseReason | None = client.ws.closed
    stats.ended(closed, trio.current_time())
    show()
    return closed


# -- the command -------------------------------------------------------------------------------


def add_watch_command(sub: Any) -> None:
    """Register ``triohooks watch`` on the CLI's subparsers."""
    p = sub.add_parser(
        "watch", help="print the event stream of `serve` or `demo --serve`, or its --stats"
    )
    p.add_argument(
        "url",
        nargs="?",
        default=None,
        help="the service's ws:// URL (default: your running serve's, from its serve.json)",
    )
    p.add_argument(
        "--token-file",
        type=Path,
        default=None,
        help="the file holding the bearer token (default: the one your serve uses)",
    )
    p.add_argument(
        "--event",
        dest="events",
        action="append",
        default=None,
        metavar="NAME",
        help="only this lifecycle event (repeatable; default: all)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print each record as its JSON frame (with --stats: one JSON object per interval)",
    )
    p.add_argument(
        "--stats",
        action="store_true",
        help="show per-hook counts, p50/p99 durations and drops instead of the records",
    )
    p.add_argument(
        "--interval",
        type=float,
        default=None,
        metavar="SECONDS",
        help=f"with --stats: refresh every SECONDS (default {DEFAULT_INTERVAL_S:g})",
    )
    p.add_argument(
        "--window",
        type=float,
        default=None,
        metavar="SECONDS",
        help=f"with --stats: durations of the last SECONDS count (default {DEFAULT_WINDOW_S:g})",
    )


def cmd_watch(args: argparse.Namespace) -> int:
    """``triohooks watch``: 0 when the server closed the stream normally, 1 otherwise (also for
    a usage error: ``--interval`` / ``--window`` without ``--stats``, or not > 0)."""
    stats = getattr(args, "stats", False)
    for option in ("interval", "window"):
        value = getattr(args, option, None)
        if value is None:
            continue
        if not stats:
            return _fail(f"watch: --{option} needs --stats")
        if not (math.isfinite(value) and value > 0):
            return _fail(f"watch: --{option} must be a positive number of seconds, not {value:g}")
    found = _where(args.url, args.token_file)
    if isinstance(found, str):
        return _fail(found)
    url, token = found
    args.url = url
    events = args.events or ["*"]
    if stats:
        run = partial(
            watch_stats,
            args.url,
            token,
            sys.stdout,
            events=events,
            as_json=args.json,
            interval_s=args.interval or DEFAULT_INTERVAL_S,
            window_s=args.window or DEFAULT_WINDOW_S,
        )
    else:
        run = partial(watch, args.url, token, sys.stdout, events=events, as_json=args.json)
    try:
        closed = trio.run(run)
    except Exception as exc:
        message = _refusal(innermost(exc), args.url)
        if message is None:
            raise
        return _fail(message)
    if closed is None or closed.code not in CLEAN_CLOSE:
        return _fail(f"connection to {args.url} ended abnormally: {closed}")
    # With --stats --json, stdout stays one JSON object a line: the last one says how it ended.
    ended = sys.stderr if stats and args.json else sys.stdout
    print(
        f"stream ended: the server closed the connection ({closed.code} {closed.reason})",
        file=ended,
    )
    return 0


def _where(url: str | None, token_file: Path | None) -> tuple[str, str] | str:
    """The URL and token to watch: those given, else the running serve's (its ``serve.json``
    in the state directory names both); a message saying what is missing otherwise."""
    from triohooks.config.paths import UnreadableFileError, read_regular_file, state_dir

    from .serve_file import SERVE_FILE, running_serve

    state = state_dir()
    info = running_serve(state)
    if url is None:
        if info is None:
            return (
                f"watch: no running `triohooks serve` found ({state / SERVE_FILE} names none "
                "that is alive); start one, or name its URL and --token-file"
            )
        if not isinstance(info.get("url"), str):
            return (
                f"watch: your serve (pid {info.get('pid')}) could listen on no TCP port, only on "
                f"the relay socket ({state / 'serve.log'} says why); stop it, or start one with "
                "`triohooks serve --port 0`"
            )
        url = str(info["url"])
    if token_file is None:
        named = info.get("token_file") if info is not None and info.get("url") == url else None
        if not isinstance(named, str):
            return f"watch: which token does {url} take? name its file with --token-file"
        token_file = Path(named)
    try:
        token = read_regular_file(token_file, 4096).decode("utf-8", "replace").strip()
    except FileNotFoundError:
        return f"cannot read token file {token_file}: no such file"
    except (OSError, UnreadableFileError) as exc:
        return f"cannot read token file {token_file}: {getattr(exc, 'strerror', None) or exc}"
    if not token:
        return f"token file {token_file} is empty"
    return url, token


def _refusal(exc: BaseException, url: str) -> str | None:
    """The one-line message for an expected failure to watch, or None for a bug."""
    if isinstance(exc, RemoteError):
        return f"{url}: {exc.message}"
    if isinstance(exc, ConnectionRejected):
        return f"{url} refused the connection (HTTP {exc.status_code}): wrong token?"
    if isinstance(exc, OSError | ValueError):
        return f"cannot watch {url}: {exc}"
    return None


def _fail(message: str) -> int:
    print(f"triohooks: {message}", file=sys.stderr)
    return 1
