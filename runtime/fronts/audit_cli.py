"""``triohooks audit tail|search|report``: the audit log read back, filtered, for people and
scripts (``report``: :mod:`.audit_report`).

Reads the JSONL files of the state directory's ``audit/`` (one per UTC day; docs/observability.md)
with the reader ``list`` uses; never writes. ``tail`` prints the last N matching records,
``search`` every matching one of the last ``--days`` days (or since ``--since``); ``--json``
prints each record as its JSON line.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import deque
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec

from triohooks.actors.audit_records import AuditRecord, read_records
from triohooks.config.paths import state_dir

_RELATIVE = re.compile(r"(\d+)\s*([smhd])\Z")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def add_audit_command(sub: Any) -> None:
    p = sub.add_parser("audit", help="read the audit log: tail, search or report, with filters")
    actions = p.add_subparsers(dest="action", required=True)
    for name, text in (
        ("tail", "the last records that match (default 20)"),
        ("search", "every record that matches, oldest first"),
        ("report", "observe-mode would-blocks summed up by guard, day and command"),
    ):
        a = actions.add_parser(name, help=text)
        if name == "tail":
            a.add_argument("-n", type=int, default=20, help="how many records (default 20)")
        a.add_argument("--event", action="append", default=[], help="only this event (repeat)")
        a.add_argument("--hook", action="append", default=[], help="only this hook id (repeat)")
        if name == "report":
            a.set_defaults(decision=[])
            a.add_argument(
                "--file",
                type=Path,
                action="append",
                default=[],
                help="read this audit file instead of the state directory's (repeat)",
            )
        else:
            a.add_argument(
                "--decision",
                action="append",
                default=[],
                help="only this decision: block, error, would_block ...",
            )
        a.add_argument("--session", help="only this session id")
        a.add_argument("--since", help="ISO time or date (UTC), or an age: 30m, 2h, 7d")
        a.add_argument("--days", type=int, default=7, help="how many days of files (default 7)")
        a.add_argument("--state-dir", type=Path, default=None, help="default: the platform's")
        a.add_argument(
            "--json",
            action="store_true",
            help="the summary as one JSON object" if name == "report" else "each record as JSON",
        )


def parse_since(text: str, now: datetime) -> datetime:
    """``--since``: an age (``30m``, ``2h``, ``7d``) or an ISO date/time, taken as UTC."""
    found = _RELATIVE.match(text.strip())
    if found:
        return now - timedelta(**{_UNITS[found[2]]: int(found[1])})
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"--since {text!r}: write an age (30m, 2h, 7d) or an ISO time") from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def matching(records: Iterable[AuditRecord], args: argparse.Namespace) -> Iterator[AuditRecord]:
    since = args.since_time
    for record in records:
        if args.event and record.event not in args.event:
            continue
        if args.hook and record.hook not in args.hook:
            continue
        if args.decision and (record.decision or "") not in args.decision:
            continue
        if args.session is not None and record.session != args.session:
            continue
        if since is not None:
            try:
                when = datetime.fromisoformat(record.time.replace("Z", "+00:00"))
            except ValueError:
                continue
            if when < since:
                continue
        yield record


def human(record: AuditRecord) -> str:
    parts = [record.time, record.event or record.kind, record.decision or "-", record.hook or "-"]
    if record.duration_ms is not None:
        parts.append(f"{record.duration_ms:.1f}ms")
    if record.session:
        parts.append(f"session={record.session}")
    line = "  ".join(parts)
    if record.error:
        line += f"  {record.error}"
    if record.detail:
        line += f"  {msgspec.json.encode(record.detail).decode()}"
    return line


def cmd_audit(args: argparse.Namespace) -> int:
    now = datetime.now(UTC)
    try:
        args.since_time = parse_since(args.since, now) if args.since else None
    except ValueError as exc:
        print(f"triohooks audit: {exc}", file=sys.stderr)
        return 1
    days = args.days
    if args.since_time is not None:  # enough days of files to reach back to it
        days = max(days, (now.date() - args.since_time.astimezone(UTC).date()).days + 1)
    directory = (args.state_dir or state_dir()) / "audit"
    if args.action == "report":
        from .audit_report import cmd_report

        return cmd_report(args, directory, days, lambda records: matching(records, args))
    found: Iterable[AuditRecord] = matching(read_records(directory, days=days), args)
    if args.action == "tail":
        found = deque(found, maxlen=max(0, args.n))
    encoder = msgspec.json.Encoder()
    count = 0
    for record in found:
        count += 1
        print(encoder.encode(record).decode() if args.json else human(record))
    if not count and not args.json:
        print(f"no matching records in {directory} (last {days} day(s))", file=sys.stderr)
    return 0
