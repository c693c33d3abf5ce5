"""Running one hook, observed: the one path every hook run takes, synchronous or background,
native or an agent's.

:class:`HookRuns` wraps the handlers' :class:`~triohooks.handlers.runner.Runners` with what the
engine sees of a run: the OpenTelemetry span ``hook <event>``, the ``hook_started`` /
``hook_finished`` events for listeners, and the audit record of a run that blocks, allows or
fails (the mapping is :func:`~triohooks.combine.outcome.audit_decision`). The pipeline's drivers
call it for synchronous hooks (the dispatcher in Trio, the asyncio engine on its loop for
in-process hooks) and the post worker for background ones; neither calls the other. An
agent dialect's runs (:mod:`triohooks.agents.runner`) go through the same
:meth:`HookRuns.observe`, so ``watch``, metrics and OTLP export see Claude Code's traffic
exactly as they see native events.

Not an actor: it holds no task and no state but its counters' owners (the audit sink, the
listeners), and every call is a direct call from the task that runs the hook.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import msgspec

from triohooks.combine.outcome import audit_decision, failure_text, observed_detail
from triohooks.config.model import Hook
from triohooks.config.stamps import utc_stamp
from triohooks.handlers.outcomes import FAILED_OUTCOMES
from triohooks.handlers.replies import RunResult
from triohooks.handlers.runner import HookInput, Runners

from .audit import end_run, hook_span
from .audit_records import AuditRecord

if TYPE_CHECKING:
    from .post_worker import BackgroundItem

log = logging.getLogger("triohooks.runs")

Listener = Callable[[str, dict[str, Any]], None]
T = TypeVar("T")


class RunSummary(msgspec.Struct, frozen=True, kw_only=True):
    """What is observed of a finished run, whatever ran it."""

    outcome: str
    exit_code: int | None
    duration_ms: float
    output_bytes: int
    #: The run's audit record, when it is audited.
    record: AuditRecord | None = None


class RecordSink(Protocol):
    """Where :class:`HookRuns` sends audit records: the audit sink, whose ``submit`` never
    waits (the asyncio engine calls it from its loop between Trio's ticks; the channel wakes
    the guest run)."""

    def submit(self, record: AuditRecord) -> bool: ...


class Listeners:
    """Observers of what happens (the websocket stream, the demo timeline), called synchronously
    with ``(kind, fields)``. They must not block; one that raises is logged and kept."""

    def __init__(self) -> None:
        self._listeners: list[Listener] = []

    def add(self, listener: Listener) -> Callable[[], None]:
        """Add ``listener``; returns the function that removes it again."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def __bool__(self) -> bool:
        return bool(self._listeners)

    def emit(self, kind: str, **fields: Any) -> None:
        """Tell every listener; cheap when there are none."""
        for listener in self._listeners:
            try:
                listener(kind, fields)
            except Exception:
                log.exception("event listener failed")

    def falling_behind(self, text: str) -> None:
        """The post worker's once-per-episode warning (it logs it itself)."""
        self.emit("falling_behind", message=text)

    def dropped(self, item: BackgroundItem, reason: str) -> None:
        """The post worker dropped ``item`` (queue full, or closing)."""
        self.emit(
            "dropped",
            event=item.event,
            session=item.session_id,
            hooks=item.hook_count,
            reason=reason,
        )


class HookRuns:
    """A :class:`~triohooks.handlers.runner.Runner` that observes every run it makes."""

    def __init__(
        self,
        runners: Runners,
        *,
        audit: RecordSink | None,
        listeners: Listeners,
        workspace: str,
    ) -> None:
        self.runners = runners
        self.audit = audit
        self.listeners = listeners
        self.workspace = workspace
        #: (hook id, outcome) of failures already logged: each cause is logged once.
        self._told: set[tuple[str, str]] = set()

    async def run(
        self, hook: Hook, hook_input: HookInput, *, runners: Runners | None = None
    ) -> RunResult:
        """Run ``hook`` through its runner (of ``runners``, else the engine's). A checkpoint;
        on cancel the run is stopped (its process group killed) and ``Cancelled`` propagates,
        unaudited. Nothing here is Trio's: the asyncio engine runs its in-process hooks
        through this on its loop, with its own ``runners``."""
        chosen = self.runners if runners is None else runners

        def summary(result: RunResult) -> RunSummary:
            if result.outcome in FAILED_OUTCOMES:
                self._tell_failure(hook, result)
            return RunSummary(
                outcome=result.outcome,
                exit_code=result.exit_code,
                duration_ms=result.duration_ms,
                output_bytes=result.stdout_bytes + result.stderr_bytes,
                record=self._audit_record(hook, hook_input, result),
            )

        return await self.observe(
            lambda: chosen.run(hook, hook_input),
            summary,
            event=hook_input.event,
            hook_id=hook.id,
            name=hook.name,
            dialect=hook.dialect,
            session=hook_input.session_id,
        )

    async def observe(
        self,
        run: Callable[[], Awaitable[T]],
        summary: Callable[[T], RunSummary],
        *,
        event: str,
        hook_id: str,
        name: str,
        dialect: str,
        session: str | None,
    ) -> T:
        """``await run()`` observed: ``hook_started``, the span ``hook <event>`` around it, the
        outcome on the span, the audit record (inside the span: an exported record carries its
        trace), ``hook_finished``. Cancellation propagates, unaudited."""
        listeners = self.listeners
        if listeners:
            listeners.emit("hook_started", event=event, hook=name, hook_id=hook_id)
        with hook_span(event, hook_id, dialect, session=session) as span:
            result = await run()
            seen = summary(result)
            end_run(
                span,
                outcome=seen.outcome,
                duration_ms=seen.duration_ms,
                output_bytes=seen.output_bytes,
            )
            if seen.record is not None and self.audit is not None:
                self.audit.submit(seen.record)
        if listeners:
            listeners.emit(
                "hook_finished",
                event=event,
                hook=name,
                hook_id=hook_id,
                outcome=seen.outcome,
                exit_code=seen.exit_code,
                duration_ms=seen.duration_ms,
            )
            if seen.record is not None:
                listeners.emit("audit", record=seen.record)
        return result

    def _tell_failure(self, hook: Hook, result: RunResult) -> None:
        """Log a hook's failure the first time it fails this way (a missing script, a
        timeout ...): an embedder that reads no Outcome still hears of it. Every failure is in
        its event's Outcome (a warning, or the block of a fail-closed hook) and the audit log."""
        told = (hook.id, result.outcome)
        if told in self._told:
            return
        self._told.add(told)
        log.warning(
            "hook %s (%s) failed: %s (logged once; each failure is in its event's Outcome and "
            "the audit log)",
            hook.name,
            hook.source or hook.scope,
            failure_text(result),
        )

    def wants_records(self) -> bool:
        """Whether anyone takes audit records (the sink, or a listener)."""
        return self.audit is not None or bool(self.listeners)

    def record(self, record: AuditRecord) -> None:
        """Send one audit record to the sink (never waits) and to the listeners."""
        if self.audit is not None:
            self.audit.submit(record)
        if self.listeners:
            self.listeners.emit("audit", record=record)

    def held_back(
        self, event: str, session: str, hooks: Sequence[str], answer: str, text: str
    ) -> None:
        """An audit record ``held_back`` for each hook trust held back from an event (native
        or an agent's, by id or label), with the answer the event got (``ask``, ``deny``,
        ``warn``) and why."""
        if not self.wants_records():
            return
        for hook in hooks:
            self.record(
                AuditRecord(
                    time=utc_stamp(),
                    session=session,
                    kind="held_back",
                    event=event,
                    hook=hook,
                    decision=answer,
                    error=text,
                    duration_ms=None,
                    workspace=self.workspace,
                )
            )

    def _audit_record(
        self, hook: Hook, hook_input: HookInput, result: RunResult
    ) -> AuditRecord | None:
        """The audit record of this run, if it is audited and anyone takes records."""
        if not self.wants_records():
            return None
        event = hook_input.event
        decision = audit_decision(hook, event, result)
        if decision is None:
            return None
        detail = None
        if decision.startswith("would_"):
            detail = observed_detail(hook, event, result, hook_input.fields)
        return AuditRecord(
            time=utc_stamp(),
            session=hook_input.session_id,
            kind="hook",
            event=hook_input.event,
            hook=hook.id,
            decision=decision,
            error=result.error if decision == "error" else result.reason,
            duration_ms=round(result.duration_ms, 3),
            workspace=self.workspace,
            detail=detail,
            truncated=result.truncated,
        )
