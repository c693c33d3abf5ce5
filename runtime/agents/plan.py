"""One agent request's plan, sans I/O: the agent dialect's select, its groups, its fold and its
answer, as a :class:`~triohooks.combine.pipeline.Plan` that the same driver runs as a native
event's (:func:`triohooks.actors.dispatcher.drive`).

- **select** (:class:`AgentPlan`'s constructor): the agent's hooks for the event that the
  calling catch-all answers for (:mod:`.shares`), whose matcher and ``if`` apply, and that trust
  lets run here (a hook trust read with relative paths, called from another directory, is held
  back instead); ``async`` ones are the background rows (:attr:`AgentPlan.later`), queued as a
  native background event's hooks are;
- **groups** (:meth:`AgentPlan.next_group`): every row at once, as the agent runs its hooks,
  with the user's own triohooks hooks as one more lane (:data:`NATIVE_LANE`: the driver runs
  them as the core's own event, :mod:`.native`); one row at a time, in config order and the
  lane last, when a hook asks to run sequentially (Gemini's ``sequential``);
- **fold** (:meth:`AgentPlan.add`): each row's reply, read by the dialect's one reader
  (:mod:`.replies`), kept in config order;
- **answer** (:meth:`AgentPlan.answer`): the agent's merge (:mod:`.merge`) of the rows, the
  held-back stand-in, and the lane last in order (its rewrite is the one the agent gets), with
  every warning: what was not run and why.

Must not: await, run a hook, or write anything; the driver (:class:`~triohooks.agents.runner.
AgentHooks`) does the I/O around it: the table, the runs, the log, the audit.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, NamedTuple, Protocol

import msgspec

from triohooks.handlers.replies import RunResult
from triohooks.handlers.runner import HookInput
from triohooks.match.ifrules import rule_applies

from .config import MATCHER_FIELD, AgentHook, AgentTable
from .merge import AgentAnswer, merge
from .replies import AgentReply
from .shares import Share
from .spec import SPECS, AgentName


class RunsBackground(Protocol):
    """Who runs a queued agent row (:class:`~triohooks.agents.runner.AgentHooks`)."""

    async def run_background(self, row: AgentRow, hook_input: HookInput) -> RunResult: ...


class AgentRow(NamedTuple):
    """One agent hook of an event's plan, bound to the project it runs for. It runs with the
    event as every hook run gets it, a :class:`~triohooks.handlers.runner.HookInput`: its
    ``payload`` the agent's input bytes verbatim (the hook's stdin), its ``fields`` the input
    as the runner reads it (under Claude Code's names), its ``env`` the session's environment.
    In the request's task, or -- an ``async`` hook -- on the post worker, queued as a native
    background hook is: the one item type, the request's context carried once by the item."""

    hook: AgentHook
    project: Path | None
    #: Who runs it (the request's :class:`~triohooks.agents.runner.AgentHooks`): a queued row
    #: carries its runner, so the post worker needs no reference set after the fact.
    runner: RunsBackground

    @property
    def name(self) -> str:
        return self.hook.label


class AgentRun(msgspec.Struct, frozen=True, kw_only=True):
    """One hook that ran for an agent event, for audit and listeners (never its command)."""

    hook: str
    source: str
    status: str
    exit_code: int | None
    duration_ms: float
    error: str | None
    truncated: bool


class NativePass(NamedTuple):
    """What the user's own triohooks hooks said of one agent request: the lane's result."""

    hook: AgentHook
    reply: AgentReply
    runs: list[AgentRun]
    warnings: list[str]


class NativeLane:
    """The step of an agent's plan that runs the user's own triohooks hooks (:mod:`.native`):
    the driver runs them as the core's own event, and hands back a :class:`NativePass` (None:
    no engine runs them)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NATIVE_LANE"


NATIVE_LANE: Final = NativeLane()

#: A step of an agent's plan, and what running it gives.
AgentStep = AgentRow | NativeLane
StepResult = AgentReply | NativePass | None


def hook_cwd(
    payload: Mapping[str, Any], project: Path | None, own: str | None = None
) -> str | None:
    """The payload's ``cwd`` when it is a directory, else the project, else ours. With the
    handler's ``own`` directory (Copilot CLI's ``cwd``), that one -- relative to the project
    root -- or None when it is not a directory."""
    cwd = payload.get("cwd")
    found = cwd if isinstance(cwd, str) and os.path.isdir(cwd) else None
    if found is None:
        found = str(project) if project is not None else os.getcwd()
    if own is None:
        return found
    chosen = os.path.join(str(project) if project is not None else found, own)
    return chosen if os.path.isdir(chosen) else None


def applies(hook: AgentHook, payload: Mapping[str, Any], project: Path | None) -> bool:
    """Whether ``hook`` runs for this call: its matcher, then its ``if`` rule."""
    field = MATCHER_FIELD.get(hook.event)
    if field is not None and not hook.matcher.matches(payload.get(field)):
        return False
    if hook.compiled_if is not None:
        tool = payload.get("tool_name")
        args = payload.get("tool_input")
        if not isinstance(tool, str) or not isinstance(args, dict):
            return True  # not a tool call: the rule cannot rule it out
        cwd = payload.get("cwd")
        cwd = cwd if isinstance(cwd, str) else ""
        workspace = str(project) if project is not None else cwd
        return rule_applies(hook.compiled_if, tool=tool, args=args, workspace=workspace, cwd=cwd)
    return True


def runs_elsewhere(hook: AgentHook, payload: Mapping[str, Any], project: Path | None) -> bool:
    """Whether a trusted project hook trust read with relative paths would run in another
    directory than the one it read them in (the call's ``cwd`` is a subdirectory)."""
    if not hook.cwd_bound:
        return False
    cwd = hook_cwd(payload, project, hook.cwd)
    return cwd is not None and os.path.realpath(cwd) != hook.trusted_in


class AgentPlan:
    """One agent request past its select (see the module docstring). Drive it as a
    :class:`~triohooks.combine.pipeline.Plan`, then :meth:`answer`."""

    def __init__(
        self,
        agent: AgentName,
        payload: Mapping[str, Any],
        body: bytes,
        project: Path | None,
        table: AgentTable,
        share: Share,
        *,
        adopted_only: bool,
        env: Mapping[str, str] | None,
        runner: RunsBackground,
    ) -> None:
        event = str(payload["hook_event_name"])
        self.agent = agent
        self.event = event
        self.project = project
        #: The triohooks event it is (None: it has none; only the agent's hooks run).
        self.canonical = SPECS[agent].events.get(event)
        #: The event's name in spans, listener events and audit records: the triohooks event
        #: it is (``pre_tool``), else the agent's own name for it.
        self.seen_as = self.canonical or event
        self.session = str(payload.get("session_id") or "")
        candidates = [
            h for h in table.for_event(event, adopted_only=adopted_only) if share.covers(h)
        ]
        applying = [h for h in candidates if applies(h, payload, project)]
        #: Trusted hooks held back because they would run in another directory than trust
        #: read them in.
        self.elsewhere = [h for h in applying if runs_elsewhere(h, payload, project)]
        #: Every hook of the call (run, queued, or reported as not supported).
        self.chosen = [h for h in applying if not any(h is e for e in self.elsewhere)]
        self.hook_input = HookInput(
            self.seen_as, self.session, fields=payload, payload=body, env=env
        )
        #: The ``async`` hooks: queued on the post worker, not waited for.
        self.later = tuple(
            AgentRow(h, project, runner) for h in self.chosen if h.supported and h.background
        )
        self._rows = [
            AgentRow(h, project, runner) for h in self.chosen if h.supported and not h.background
        ]
        # The lane runs for an event triohooks has a name for, and only in the request whose
        # catch-all leads (with two installs, the other's request runs the agent's hooks only).
        lane = (NATIVE_LANE,) if share.leads and self.canonical is not None else ()
        if not self._rows or any(row.hook.sequential for row in self._rows):
            self._groups: list[tuple[AgentStep, ...]] = [(row,) for row in self._rows]
            self._groups += [lane] if lane else []
        else:
            self._groups = [(*self._rows, *lane)]
        self._replies: dict[int, AgentReply] = {}
        #: What the user's own hooks said (None: they did not run).
        self.native: NativePass | None = None

    def next_group(self) -> tuple[AgentStep, ...] | None:
        return self._groups.pop(0) if self._groups else None

    def add(self, step: AgentStep, result: StepResult) -> None:
        if isinstance(step, NativeLane):
            assert result is None or isinstance(result, NativePass)
            self.native = result
            return
        assert isinstance(result, AgentReply)
        self._replies[next(i for i, row in enumerate(self._rows) if row is step)] = result

    def answer(
        self,
        held: Sequence[tuple[AgentHook, AgentReply]],
        *,
        after: Sequence[tuple[AgentHook, AgentReply]] = (),
        notices: Sequence[str] = (),
        dropped: bool = False,
    ) -> tuple[AgentAnswer, list[AgentRun]]:
        """The agent's answer and the runs it lists: the rows' replies in config order, then
        ``held`` (the held-back stand-in), then the lane (its rewrite is the one the agent
        gets), then ``after`` (a refusal carried from the session's prompt), merged by the
        agent's rules with ``notices`` (the tamper alarm, routing) shown where the agent shows
        messages; ``dropped``: the background queue refused the ``async`` hooks."""
        runs = [(row.hook, self._replies[i]) for i, row in enumerate(self._rows)]
        runs += held
        native = self.native
        if native is not None:
            runs.append((native.hook, native.reply))
        runs += after
        answer = merge(self.agent, self.event, runs, notices=notices)
        answer.warnings += notices
        if native is not None:
            answer.warnings += native.warnings
        for hook in self.chosen:
            if not hook.supported:
                answer.warnings.append(f"hook {hook.label} not run: {hook.unsupported}")
        if dropped:
            answer.warnings.append(
                f"{len(self.later)} async hook(s) not run: triohooks' background queue is full"
            )
        ran = [
            AgentRun(
                hook=h.label,
                source=h.source,
                status=r.status,
                exit_code=r.exit_code,
                duration_ms=round(r.duration_ms, 3),
                error=r.error,
                truncated=r.truncated,
            )
            for h, r in runs
            if not r.held_back and h.type != "triohooks"
        ]
        return answer, ran + (native.runs if native is not None else [])
