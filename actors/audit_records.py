"""Audit records as they are on disk, and the last failures of each hook read back from them.

The record type and file naming of :mod:`triohooks.actors.audit`, and :class:`FailureMemory`,
without the sink: ``triohooks list`` reads the files with these and never imports trio or the
tracer. It must not write records (the sink does).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, Final

import msgspec

#: Failures kept per hook (HK-66).
FAILURES_KEPT: Final = 5

FILE_PREFIX: Final = "audit-"
FILE_SUFFIX: Final = ".jsonl"


class AuditRecord(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One audit line. ``kind`` is "hook" for a hook run, "worker" for close reports etc."""

    #: RFC3339 UTC; the sink stamps it at submit when empty.
    time: str = ""
    session: str
    kind: str
    event: str
    hook: str
    #: block / hook-allow / hook-deny / error / ...
    decision: str | None
    error: str | None
    duration_ms: float | None
    workspace: str
    #: Extra numbers or text (e.g. a close report); strings are redacted.
    detail: dict[str, Any] | None = None
    #: The run's output was over its cap and only its head was read (written only when true).
    truncated: bool = False


class AuditStats(msgspec.Struct, frozen=True, kw_only=True):
    """What an audit sink wrote and lost since it started (``stats``, docs/protocol.md)."""

    #: Records written to the day files.
    written: int
    #: Records not written: the queue full, the sink closed, or a write failed.
    lost: int
    #: Episodes of losses (each logged once; one after records were written again is another).
    failure_episodes: int
    #: Whether records are being lost now (no record written since the last loss).
    failing: bool
    #: Day files found ending in a partial line when opened, and repaired.
    torn_tails: int
    #: Answers delivered before their records were written (the disk slower than the wait).
    late: int


def is_failure(record: AuditRecord) -> bool:
    """Whether ``record`` is a failed hook run (what :class:`FailureMemory` keeps): decision
    ``error``, or an error with no decision. A block's reason in ``error`` is not a failure."""
    if record.kind != "hook":
        return False
    return record.decision == "error" or (record.decision is None and record.error is not None)


def audit_file(directory: Path, day: date | str) -> Path:
    return directory / f"{FILE_PREFIX}{day}{FILE_SUFFIX}"


def _utc_now() -> datetime:
    return datetime.now(UTC)


def day_paths(audit_dir: Path, days: int, now: Callable[[], datetime] = _utc_now) -> list[Path]:
    """The day files of the last ``days`` UTC days (today's included), oldest first, whether
    they exist or not."""
    today = now().astimezone(UTC).date()
    return [audit_file(audit_dir, today - timedelta(days=back)) for back in range(days - 1, -1, -1)]


_decoder: Final = msgspec.json.Decoder(AuditRecord)


def decode_lines(data: bytes) -> tuple[list[AuditRecord], int]:
    """The records of one day file's bytes, and how many of its lines are none (a torn tail,
    a line being appended, garbage): those are skipped."""
    records: list[AuditRecord] = []
    skipped = 0
    for line in data.splitlines():
        try:
            records.append(_decoder.decode(line))
        except msgspec.DecodeError:
            skipped += 1
    return records, skipped


def read_records(
    audit_dir: Path, *, days: int = 7, now: Callable[[], datetime] = _utc_now
) -> Iterator[AuditRecord]:
    """The records of the last ``days`` UTC days' files, oldest first. Missing files and
    unreadable or torn lines are skipped (a line being appended is read next time)."""
    for path in day_paths(audit_dir, days, now):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        yield from decode_lines(data)[0]


# ---------------------------------------------------------------------------------------------
# Failure memory


class FailureMemory:
    """The last :data:`FAILURES_KEPT` failures of each hook, as ``(time, error)`` pairs."""

    def __init__(self) -> None:
        self._by_hook: dict[str, deque[tuple[str, str]]] = {}

    def add(self, hook: str, when: str, error: str) -> None:
        kept = self._by_hook.get(hook)
        if kept is None:
            kept = self._by_hook[hook] = deque(maxlen=FAILURES_KEPT)
        kept.append((when, error))

    def recent(self, hook: str) -> list[tuple[str, str]]:
        """The hook's kept failures, oldest first."""
        return list(self._by_hook.get(hook, ()))

    def hooks(self) -> list[str]:
        """Hook ids with at least one failure kept."""
        return list(self._by_hook)

    @classmethod
    def from_audit_dir(
        cls,
        audit_dir: Path,
        *,
        days: int = 7,
        now: Callable[[], datetime] = _utc_now,
        workspace: str | None = None,
    ) -> FailureMemory:
        """Rebuild from the audit files of the last ``days`` UTC days (for ``triohooks list``).

        Missing files and unreadable or torn lines are skipped. With ``workspace``, only that
        workspace's records count.
        """
        memory = cls()
        for record in read_records(audit_dir, days=days, now=now):
            if workspace is not None and record.workspace != workspace:
                continue
            if is_failure(record):
                memory.add(record.hook, record.time, record.error or "")
        return memory
