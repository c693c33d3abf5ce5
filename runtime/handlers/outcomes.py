"""A hook run's outcome, and which outcomes are failures: the one definition every part reads
(combining, the post worker, spans and metrics, ``watch``). No imports beyond typing, so the
lightest path (``triohooks fire`` with nothing to run) can read it too."""

from __future__ import annotations

from typing import Final, Literal

Outcome = Literal["ok", "block", "mutate", "error", "timeout", "spawn_failed", "killed"]

#: Outcomes that are a failure of the run (not a decision): what ``fail_closed`` / ``on_error``
#: apply to, what the audit trail records as ``error`` and what metrics count as failures.
FAILED_OUTCOMES: Final[frozenset[str]] = frozenset({"error", "timeout", "spawn_failed", "killed"})
