"""``triohooks watch``: follow a running service's event stream, one line per record.

Owns the ``watch`` subcommand: reading the token file, subscribing through
:mod:`triohooks.fronts.client`, and turning each ``event`` / ``lagged`` frame into one line
(readable by default, the record's JSON with ``--json``) until the server closes the connection -
which ``triohooks demo --serve`` and ``triohooks serve`` do with code 1000 when they stop.

It must not fire events, keep state between records, or decide anything: a line shows what the
record says, nothing more.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any, Final, TextIO

import trio
from trio_websocket import CloseReason, ConnectionRejected

from .client import RemoteError, connect, innermost
from .wire import EventRecord, Lagged, encode

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


# -- the command -------------------------------------------------------------------------------


def add_watch_command(sub: Any) -> None:
    """Register ``triohooks watch`` on the CLI's subparsers."""
    p = sub.add_parser("watch", help="print the event stream of `serve` or `demo --serve`")
    p.add_argument("url", help="the service's ws:// URL, as printed at its start")
    p.add_argument(
        "--token-file", type=Path, required=True, help="the file holding the bearer token"
    )
    p.add_argument(
        "--event",
        dest="events",
        action="append",
        default=None,
        metavar="NAME",
        help="only this lifecycle event (repeatable; default: all)",
    )
    p.add_argument("--json", action="store_true", help="print each record as its JSON frame")


def cmd_watch(args: argparse.Namespace) -> int:
    """``triohooks watch``: 0 when the server closed the stream normally, 1 otherwise."""
    try:
        token = args.token_file.read_text().strip()
    except OSError as exc:
        return _fail(f"cannot read token file {args.token_file}: {exc.strerror}")
    try:
        events = args.events or ["*"]
        closed = trio.run(
            partial(watch, args.url, token, sys.stdout, events=events, as_json=args.json)
        )
    except Exception as exc:
        message = _refusal(innermost(exc), args.url)
        if message is None:
            raise
        return _fail(message)
    if closed is None or closed.code not in CLEAN_CLOSE:
        return _fail(f"connection to {args.url} ended abnormally: {closed}")
    print(f"stream ended: the server closed the connection ({closed.code} {closed.reason})")
    return 0


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
