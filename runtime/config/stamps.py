"""Timestamps as every record writes them (audit records, agent runs, the JSON dialect's
request): RFC 3339, UTC, milliseconds, ``Z``. One definition, so a record of one kind sorts and
parses like any other."""

from __future__ import annotations

from datetime import UTC, datetime


def rfc3339(when: datetime) -> str:
    """``when`` as ``2026-12-04T17:28:54.123Z`` (a naive datetime is taken as UTC)."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def utc_stamp() -> str:
    """Now, as :func:`rfc3339` writes it."""
    return rfc3339(datetime.now(UTC))
