"""``triohooks audit report``: what observe-mode hooks would have stopped, summed up.

An observe-mode hook (``mode = "observe"``, docs/configuration.md) is audited as
``would_block`` where enforcing it would have stopped or held the agent, ``would_allow`` where it
would have allowed a call. This report reads those records back from the audit day files (or
the files named with ``--file``) and groups the would-blocks by guard (the hook's id), by UTC
day and by command (the shell command the call carried, else its tool, else its event), so a
team sees what enforcing a guard would stop before it does (docs/observability.md).

It reads with the same line decoder as every audit reader
(:func:`~triohooks.actors.audit_records.decode_lines`): a torn or garbage line is counted and
skipped, never fatal. A file it cannot read (missing when named, a directory, a FIFO, no
permission) is an error naming the file: a report that silently left a file out would
under-count. Never writes.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Final

import msgspec

from triohooks.actors.audit_records import AuditRecord, day_paths, decode_lines
from triohooks.config.paths import UnreadableFileError, read_regular_file

#: Largest audit file the report reads (checked before reading).
MAX_AUDIT_FILE_BYTES: Final = 1024 * 1024 * 1024
#: Rows shown per group in the text report (``--json`` has them all).
TEXT_ROWS: Final = 20


class Report(msgspec.Struct, kw_only=True):
    """The summary ``--json`` prints."""

    files: list[str]
    would_block: int
    would_allow: int
    by_guard: list[dict[str, Any]]
    by_day: list[dict[str, Any]]
    by_command: list[dict[str, Any]]
    #: Lines that were not audit records (torn, garbage): skipped.
    skipped_lines: int


class ReportError(Exception):
    """A file the report needed could not be read; the message names it."""


def load(paths: Iterable[Path], *, named: bool) -> tuple[list[AuditRecord], list[str], int]:
    """The records of ``paths``, the files read, and the lines skipped. ``named``: the user
    named the files, so a missing one is an error too (a day file of the state directory that
    does not exist is a day nothing was audited)."""
    records: list[AuditRecord] = []
    read: list[str] = []
    skipped = 0
    for path in paths:
        try:
            data = read_regular_file(path, MAX_AUDIT_FILE_BYTES)
        except FileNotFoundError:
            if named:
                raise ReportError(f"{path}: no such audit file") from None
            continue
        except UnreadableFileError as exc:
            raise ReportError(str(exc)) from None
        got, bad = decode_lines(data)
        records += got
        skipped += bad
        read.append(str(path))
    return records, read, skipped


def command_of(record: AuditRecord) -> str:
    """What a would-block is grouped under as its command: the shell command its call
    carried, else its tool, else its event in parentheses."""
    detail = record.detail or {}
    for key in ("command", "tool"):
        value = detail.get(key)
        if isinstance(value, str) and value:
            return value
    return f"({record.event or record.kind})"


def summarize(records: Iterable[AuditRecord], files: list[str], skipped: int) -> Report:
    guards: Counter[str] = Counter()
    days: Counter[str] = Counter()
    commands: Counter[str] = Counter()
    allows = 0
    for record in records:
        if record.decision == "would_allow":
            allows += 1
        if record.decision != "would_block":
            continue
        guards[record.hook or "-"] += 1
        days[record.time[:10] or "-"] += 1
        commands[command_of(record)] += 1
    return Report(
        files=files,
        would_block=sum(guards.values()),
        would_allow=allows,
        by_guard=[{"guard": k, "count": n} for k, n in _ranked(guards)],
        by_day=[{"day": k, "count": n} for k, n in sorted(days.items())],
        by_command=[{"command": k, "count": n} for k, n in _ranked(commands)],
        skipped_lines=skipped,
    )


def _ranked(counts: Counter[str]) -> list[tuple[str, int]]:
    """Most first; ties by name, so the order is the same on every run."""
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def _one_line(text: str) -> str:
    return " ".join(text.split()) or repr(text)


def text(report: Report, where: str) -> list[str]:
    lines = [f"would-blocks in {where}: {report.would_block}"]
    if report.would_allow:
        lines.append(f"would-allows: {report.would_allow}")
    groups = (
        ("by guard", report.by_guard, "guard"),
        ("by day", report.by_day, "day"),
        ("by command", report.by_command, "command"),
    )
    for title, rows, key in groups if report.would_block else ():
        lines.append(f"{title}:")
        for row in rows[:TEXT_ROWS]:
            lines.append(f"  {row['count']:>6}  {_one_line(row[key])}")
        if len(rows) > TEXT_ROWS:
            lines.append(f"  ... and {len(rows) - TEXT_ROWS} more (--json has every row)")
    if report.skipped_lines:
        lines.append(
            f"skipped {report.skipped_lines} line(s) that are not audit records "
            "(a torn tail or garbage)"
        )
    return lines


def cmd_report(
    args: argparse.Namespace,
    directory: Path,
    days: int,
    keep: Callable[[Iterable[AuditRecord]], Iterable[AuditRecord]],
) -> int:
    """``triohooks audit report``: print the summary of the records ``keep`` keeps (the
    command's filters); exit 1 with the file named when one cannot be read, or when the
    audit directory does not exist."""
    if args.file:
        paths, where = list(args.file), ", ".join(str(f) for f in args.file)
    else:
        if not directory.is_dir():
            print(
                f"triohooks audit report: no audit log at {directory} (nothing audited there "
                "yet; --state-dir or TRIOHOOKS_STATE_DIR names another, --file a file)",
                file=sys.stderr,
            )
            return 1
        paths, where = day_paths(directory, days), f"{directory} (last {days} day(s))"
    try:
        records, files, skipped = load(paths, named=bool(args.file))
    except ReportError as exc:
        print(f"triohooks audit report: cannot read {exc}", file=sys.stderr)
        return 1
    report = summarize(keep(records), files, skipped)
    if args.json:
        sys.stdout.write(msgspec.json.encode(report).decode() + "\n")
    else:
        print("\n".join(text(report, where)))
    return 0
