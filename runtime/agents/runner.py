"""Run one agent event's hooks, as that agent would, with triohooks' guarantees: the driver of
an agent's plan.

:class:`AgentHooks` is what the engine, the relay's fallback and ``/claude/v1/hook`` call with
the agent's own input JSON. It finds the project (the agent's variable, else from the payload's
``cwd``), takes that agent's table from its loader (the one loader of every table:
:class:`~triohooks.actors.loader.TableLoader`), and has the agent dialect plan the call
(:class:`~triohooks.agents.plan.AgentPlan`: which hooks apply, in which groups, the user's own
triohooks hooks as one more lane). The plan is run by the same driver as a native event's
(:func:`triohooks.actors.dispatcher.drive`): the agent's hooks at once, as the agent runs them
-- command hooks through the process guard (their own session and group, nothing left behind,
timeouts enforced), http hooks and prompt hooks through the same code as a triohooks hook of
that type (:func:`~triohooks.handlers.http_hook.post_event`,
:func:`~triohooks.handlers.prompt.ask_judge`), each read by the dialect's one reader
(:mod:`.replies`) -- and the lane as the core's own event run. The plan's answer is the
agent's merge. ``async`` hooks are not waited for: they go onto the engine's background queue
(the post worker: bounded, in order, drops counted, drained for 5 s at close) as one item like
a native background event's -- the request's input, read once, and its
:class:`~triohooks.agents.plan.AgentRow` rows -- and run there from that input through the same
observer.

Each hook gets the input JSON byte for byte on stdin, the agent session's environment (when
the caller has it: the relay sends it; else this process's) and the agent's variables
(``CLAUDE_PROJECT_DIR``, ``CLAUDECODE`` ...), and the payload's ``cwd`` as its working
directory. The user's own triohooks hooks of the request get that same environment (the
dispatcher hands it down to every run), never this process's when the request brought one.
Every run goes through the engine's run observer
(:meth:`triohooks.actors.runs.HookRuns.observe`): the same span, ``hook_started`` /
``hook_finished``, metrics and audit record as a native run; the request as a whole is a
``fired`` and an ``outcome`` to listeners, under the triohooks event it is (``pre_tool``).
"""

from __future__ import annotations

import functools
import logging
import os
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import msgspec
import trio

from triohooks.actors.audit_records import AuditRecord
from triohooks.actors.dispatcher import drive
from triohooks.actors.loader import TableLoader
from triohooks.actors.projects import ProjectDispatchers, ProjectUnreadable
from triohooks.actors.runs import HookRuns, RunSummary
from triohooks.combine.outcome import held_back_answer
from triohooks.config.events import EVENTS, PayloadError, event_from_payload
from triohooks.config.model import TrustInfo
from triohooks.config.paths import global_config_dir
from triohooks.config.stamps import utc_stamp
from triohooks.config.trust import held_back_message
from triohooks.handlers.http import HttpHookClient
from triohooks.handlers.http_hook import post_event
from triohooks.handlers.judge import Judge
from triohooks.handlers.process import ProcessSpec, Spawner
from triohooks.handlers.prompt import NO_JUDGE, ask_judge
from triohooks.handlers.replies import RunResult
from triohooks.handlers.runner import HookInput

from .config import (
    AgentHook,
    AgentTable,
    find_project,
    load_agent_table,
)
from .foreign import VIEWS
from .merge import AgentAnswer, held_back_reply
from .native import NATIVE_LABEL, UnreadableCall, native_fields, native_hook, native_reply
from .plan import (
    AgentPlan,
    AgentRow,
    AgentRun,
    AgentStep,
    NativeLane,
    NativePass,
    StepResult,
    applies,
    hook_cwd,
)
from .replies import (
    AgentReply,
    failed,
    internal_failure,
    read_http_reply,
    read_judge_reply,
    read_process_reply,
)
from .reroute import reroute
from .shares import EVERYTHING, Share, share_of
from .spec import AGENTS, SPECS, AgentName, home_dir, hook_environment

log = logging.getLogger("triohooks.agents")

#: Output kept per stream of an agent command hook.
OUTPUT_CAP: Final = 100 * 1024
#: Tables kept (one per agent and project).
MAX_TABLES: Final = 64
#: Sessions whose project (declared by the agent's own variable) is remembered, for requests
#: that do not carry it (Claude Code's http hooks send no environment).
MAX_SESSIONS: Final = 4096


#: An agent reply's status as a run outcome (``ok``/``block`` as native runs have them).
_OUTCOMES: dict[str, str] = {"ok": "ok", "block": "block", "error": "error"}


def _audit_record(
    event: str, session: str, hook_id: str, reply: AgentReply, project: Path | None
) -> AuditRecord | None:
    """An agent hook run's audit record, as a native run's: one that blocks, fails or was cut
    short (truncated output); None for a plain answer."""
    if reply.status == "ok" and not reply.truncated:
        return None
    return AuditRecord(
        time=utc_stamp(),
        session=session,
        kind="hook",
        event=event,
        hook=hook_id,
        decision={"block": "block", "error": "error"}.get(reply.status),
        error=reply.error if reply.status == "error" else reply.reason,
        duration_ms=round(reply.duration_ms, 3),
        workspace=str(project) if project is not None else "",
        truncated=reply.truncated,
    )


class AgentPayloadError(ValueError):
    """The request is not an agent hook input (not a JSON object, no ``hook_event_name``)."""


class AgentOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """What listeners (``watch``, metrics) are told of an answered agent event: the
    ``outcome`` of a native event's shape, as far as it applies."""

    event: str
    agent: AgentName
    blocked: bool
    decision: str | None
    reason: str | None
    runs: list[AgentRun]
    queued: bool = False


class AgentResult(msgspec.Struct, kw_only=True):
    agent: AgentName
    event: str
    session: str
    project: str | None
    answer: AgentAnswer
    runs: list[AgentRun]
    trust: TrustInfo | None = None


#: Offers one background event to the post worker (``PostWorker.offer``); False: dropped.
Offer = Callable[..., bool]


def _cwd_dir(payload: Mapping[str, Any]) -> Path | None:
    cwd = payload.get("cwd")
    return Path(cwd) if isinstance(cwd, str) and cwd and os.path.isabs(cwd) else None


def _spelled_alike(where: Path | None, workspace: str) -> bool:
    """Whether ``where`` names ``workspace`` as written (no file system access)."""
    return where is not None and os.path.normpath(where) == os.path.normpath(workspace)


def _real_path(where: Path) -> str:
    """``where`` with every link resolved. Metadata calls only (an ``lstat`` per component),
    made in the request's task like the request's other path lookups (finding the project,
    the hooks' ``cwd``, the freshness check's ``stat`` calls): a thread hop for it cost six
    times the call itself, on every request from another project than serve's."""
    return os.path.realpath(where)


class AgentInput(msgspec.Struct, frozen=True):
    """An agent's hook input, read once (:func:`read_input`): the bytes as they came, which
    every hook gets verbatim, and the JSON object they hold. A front that has read the input
    (``serve``'s endpoint, to answer an unreadable one itself) hands this on, so nothing
    decodes the same body twice."""

    body: bytes
    payload: dict[str, Any]

    @property
    def event(self) -> str:
        """The agent's own name of the event (``hook_event_name``)."""
        return str(self.payload["hook_event_name"])


def read_input(body: bytes) -> AgentInput:
    """``body`` read as an agent's hook input. Raises :class:`AgentPayloadError` when it is no
    JSON object or names no ``hook_event_name``."""
    try:
        payload = msgspec.json.decode(body)
    except msgspec.DecodeError as exc:
        raise AgentPayloadError(f"the hook input is not valid JSON: {exc}") from None
    except RecursionError:
        raise AgentPayloadError("the hook input is nested too deeply to read") from None
    if not isinstance(payload, dict):
        raise AgentPayloadError("the hook input must be a JSON object")
    event = payload.get("hook_event_name")
    if not isinstance(event, str) or not event:
        raise AgentPayloadError("the hook input has no hook_event_name")
    return AgentInput(body, payload)


def _declared_root(payload: Mapping[str, Any]) -> str | None:
    """The project an agent names in its input (Cursor's ``workspace_roots``): the root holding
    ``cwd`` when several are named, else the first; None when none is an absolute path."""
    roots = payload.get("workspace_roots")
    if not isinstance(roots, list):
        return None
    named = [r for r in roots if isinstance(r, str) and os.path.isabs(r)]
    cwd = payload.get("cwd")
    if isinstance(cwd, str):
        for root in named:
            if cwd == root or cwd.startswith(root.rstrip("/") + "/"):
                return root
    return named[0] if named else None


class AgentHooks:
    """Runs agent-dialect hooks for one engine (see the module docstring)."""

    def __init__(
        self,
        *,
        spawner: Spawner,
        http: HttpHookClient,
        judge: Judge | None,
        offer: Offer,
        config_dir: Path | None = None,
        home: Path | None = None,
        trust_override: bool = False,
        observer: HookRuns | None = None,
        native: ProjectDispatchers | None = None,
    ) -> None:
        self._spawner = spawner
        self._http = http
        self._judge = judge
        #: Queues background hooks on the engine's post worker.
        self._offer = offer
        self._config_dir = config_dir
        self._home = home
        self._trust_override = trust_override
        #: One loader per (agent, project), the least recently used dropped past MAX_TABLES.
        self._tables: OrderedDict[tuple[str, str | None], TableLoader[AgentTable]] = OrderedDict()
        self._sessions: dict[tuple[str, str], Path] = {}
        #: (agent, trust key, state, digest) already logged as held back: said once.
        self._told: set[tuple[str, str, str, str]] = set()
        #: The engine's run observer: every agent hook run gets the span, listener events and
        #: audit record a native run gets.
        self._observer = observer
        #: Tamper alarms already logged and audited (each is said once per change).
        self._alarmed: set[str] = set()
        #: Per (agent, session): why the hooks refused its last prompt, for an agent that
        #: cannot stop one (its tool calls are denied until the next prompt).
        self._refused_prompts: dict[tuple[str, str], str] = {}
        #: The engine's dispatchers (its own workspace's and other projects'): the user's own
        #: triohooks hooks run for every request too (:mod:`.native`).
        self._native = native

    @property
    def home(self) -> Path:
        return self._home if self._home is not None else home_dir()

    @property
    def config_dir(self) -> Path:
        return self._config_dir if self._config_dir is not None else global_config_dir()

    async def table(self, agent: AgentName, project: Path | None) -> AgentTable:
        """The agent's table for ``project``, read again first when any file it came from
        changed (the one loader and freshness rule of every table:
        :class:`~triohooks.actors.loader.TableLoader`)."""
        key = (agent, str(project) if project is not None else None)
        loader = self._tables.get(key)
        if loader is None:
            read = functools.partial(self._read_table, agent, project)
            loader = TableLoader(read, AgentTable(agent=agent, project=key[1]))
            if len(self._tables) >= MAX_TABLES:
                self._tables.popitem(last=False)
            self._tables[key] = loader
        else:
            self._tables.move_to_end(key)
        return await loader.current()

    def _read_table(self, agent: AgentName, project: Path | None, generation: int) -> AgentTable:
        return load_agent_table(
            agent,
            project=project,
            home=self.home,
            config_dir=self.config_dir,
            trust_override=self._trust_override,
        )

    def _project(
        self, agent: AgentName, payload: Mapping[str, Any], env: Mapping[str, str] | None
    ) -> Path | None:
        """The agent's project for this request: the agent's own variable when the request
        carries the session's environment (remembered for the session), else what the session
        declared before, else found from ``cwd``."""
        session = payload.get("session_id")
        key = (agent, session) if isinstance(session, str) and session else None
        declared = next(
            (env[name] for name in SPECS[agent].project_env if env and env.get(name)), None
        ) or _declared_root(payload)
        project = find_project(
            payload.get("cwd"),
            agent,
            config_dir=self.config_dir,
            home=self.home,
            declared=declared,
        )
        if key is not None:
            if declared is not None and project is not None:
                if len(self._sessions) >= MAX_SESSIONS:
                    self._sessions.pop(next(iter(self._sessions)))
                self._sessions[key] = project
            elif key in self._sessions:
                return self._sessions[key]
        return project

    async def handle(
        self,
        agent: str,
        body: bytes | AgentInput,
        *,
        adopted_only: bool = False,
        env: Mapping[str, str] | None = None,
        scope: str | None = None,
    ) -> AgentResult:
        """Run the hooks ``agent`` has for the event in ``body`` (its hook input JSON, or that
        input as a front has read it: :class:`AgentInput`, not decoded again) and return the
        merged answer. Raises :class:`AgentPayloadError` for a body that is no hook input.

        ``adopted_only``: only the hooks an adoption moved into ``triohooks-hooks.json`` -- for
        calls from the agent itself (the endpoint, the relay), which still runs the hooks left in
        its settings files on its own; then ``scope`` is the one the calling catch-all names,
        and the request runs only what that catch-all answers for (:mod:`.shares`: with two
        installs, each hook still runs once per call). ``env``: the agent session's environment
        (the relay sends it): the hooks get it instead of this process's, and the agent's
        project variable in it names the project."""
        if agent not in AGENTS:
            raise AgentPayloadError(f"unknown agent {agent!r}; known: {', '.join(AGENTS)}")
        name: AgentName = agent
        read = body if isinstance(body, AgentInput) else read_input(body)
        payload = read.payload
        view = VIEWS.get(name)
        if view is not None:  # Copilot's or Cursor's input, under the names the rest reads
            payload = view(payload)
        project = self._project(name, payload, env)
        table = await self.table(name, project)
        event = payload["hook_event_name"]
        share = share_of(table, event, scope) if adopted_only else EVERYTHING
        plan = AgentPlan(
            name,
            payload,
            read.body,
            project,
            table,
            share,
            adopted_only=adopted_only,
            env=env,
            runner=self,
        )
        seen_as, session = plan.seen_as, plan.session
        listeners = self._observer.listeners if self._observer is not None else None
        if listeners:
            listeners.emit("fired", event=seen_as, session=session, hooks=len(plan.chosen))
        later = plan.later
        dropped = bool(later) and not self._offer(
            event=seen_as,
            session_id=session,
            payload=read.body,
            hooks=later,
            env=env,
            fields=payload,
        )
        await drive(plan, functools.partial(self._run_step, plan))
        held = self._held_back(
            table, event, payload, project, adopted_only, session, plan.elsewhere, share
        )
        canonical = plan.canonical
        refused = self._refused_prompts.get((name, session)) if share.leads else None
        after = []
        if refused is not None and canonical in ("pre_tool", "permission_request"):
            refusal = AgentReply(status="block", reason=refused)
            after.append((native_hook(name, event, canonical), refusal))
        alarms = self._alarm(table, seen_as, session) if table.tampered else []
        if adopted_only and share.leads and canonical == "session_start":
            alarms += await self._reroute(name, project)
        answer, ran = plan.answer(held, after=after, notices=alarms, dropped=dropped)
        if canonical == "prompt_submit" and not SPECS[name].blocks_prompts and share.leads:
            self._carry_refusal(name, session, answer)
        for said in answer.undelivered:
            log.warning("%s %s: %s", name, event, said)
        result = AgentResult(
            agent=name,
            event=event,
            session=session,
            project=table.project,
            answer=answer,
            runs=ran,
            trust=table.trust,
        )
        if listeners:
            listeners.emit(
                "outcome",
                event=seen_as,
                outcome=AgentOutcome(
                    event=seen_as,
                    agent=name,
                    blocked=answer.blocked,
                    decision=answer.decision,
                    reason=answer.reason,
                    runs=ran,
                ),
            )
        return result

    async def _run_step(self, plan: AgentPlan, step: AgentStep) -> StepResult:
        """One step of ``plan``: an agent hook through the engine's observer, or the lane of
        the user's own hooks."""
        if isinstance(step, NativeLane):
            payload = plan.hook_input.fields
            return await self._native_pass(
                plan.agent, plan.event, payload, plan.project, plan.hook_input.env
            )
        return await self._observed(step, plan.hook_input)

    def _carry_refusal(self, agent: AgentName, session: str, answer: AgentAnswer) -> None:
        """A prompt the hooks refused, for an agent that cannot stop one: remembered for the
        session, so its tool calls until the next prompt are denied with the reason (and said
        now, in the answer's warnings and the log)."""
        key = (agent, session)
        if answer.decision != "block":
            self._refused_prompts.pop(key, None)
            return
        why = answer.reason or "a hook refused the prompt"
        text = (
            f"a triohooks hook refused this prompt ({why}); {SPECS[agent].display} cannot stop "
            "a prompt, so its tool calls are denied until the next one"
        )
        if len(self._refused_prompts) >= MAX_SESSIONS:
            self._refused_prompts.clear()
        self._refused_prompts[key] = text
        answer.warnings.append(text)
        log.warning("%s: %s", agent, text)

    async def _reroute(self, agent: AgentName, project: Path | None) -> list[str]:
        """At a session start from the agent: route its installs again where the hooks changed
        since (:mod:`.reroute`); what was done, for the session's first answer. A failure is
        said, never raised: the session goes on with the routing it has."""
        try:
            said = await trio.to_thread.run_sync(
                lambda: reroute(agent, home=self.home, project=project, config_dir=self.config_dir)
            )
        except Exception as exc:  # our own bug: said, and the session goes on
            log.exception("re-routing %s failed", agent)
            said = [f"triohooks could not check {agent}'s routing: {type(exc).__name__}: {exc}"]
        for line in said:
            log.warning("%s", line)
        return said

    def _alarm(self, table: AgentTable, seen_as: str, session: str) -> list[str]:
        """The tamper alarm: settings triohooks installed into changed behind its back. Its
        lines, said on every answer while it lasts (where the agent shows the user a message:
        :func:`.merge.merge`'s notices), and once per change in the log and the audit log."""
        agent = table.agent
        lines = [
            f"triohooks TAMPER ALARM: {alarm}. If you did not make this change, remove it; "
            f"`triohooks {agent} validate` shows it"
            for alarm in table.tampered
        ]
        for alarm in table.tampered:
            if alarm in self._alarmed:
                continue
            if len(self._alarmed) >= MAX_SESSIONS:
                self._alarmed.clear()
            self._alarmed.add(alarm)
            log.warning("tamper alarm: %s", alarm)
            audit = self._observer.audit if self._observer is not None else None
            if audit is not None:
                audit.submit(
                    AuditRecord(
                        time=utc_stamp(),
                        session=session,
                        kind="tamper",
                        event=seen_as,
                        hook=f"{agent}:settings",
                        decision="alarm",
                        error=alarm,
                        duration_ms=None,
                        workspace=table.project or "",
                    )
                )
        return lines

    async def _native_pass(
        self,
        agent: AgentName,
        event: str,
        payload: Mapping[str, Any],
        project: Path | None,
        env: Mapping[str, str] | None,
    ) -> NativePass | None:
        """The user's own triohooks hooks for this request (:mod:`.native`): None when the
        event has no triohooks equivalent or no engine runs them. The project's own hooks
        run through its dispatcher (:mod:`triohooks.actors.projects`); with no project known,
        or one whose config has errors, only the user's global hooks run, and the answer
        says why. They run with the request's ``env`` as the agent's own hooks do (None:
        this process's)."""
        projects = self._native
        canonical = SPECS[agent].events.get(event)
        if projects is None or canonical is None:
            return None
        hook = native_hook(agent, event, canonical)
        where = project if project is not None else _cwd_dir(payload)
        dispatcher, own, note = projects.main, False, None
        if where is not None:
            real = str(where)
            if not _spelled_alike(where, projects.main.workspace):
                real = _real_path(where)
            try:
                dispatcher, own = await projects.for_project(real), True
            except ProjectUnreadable as exc:
                # Its hooks cannot be judged: as any table that does not load, closed.
                why = (
                    f"triohooks: {where}'s own triohooks config does not load, so its hooks "
                    f"cannot run: {exc} (`triohooks validate` there shows every problem)"
                )
                if EVENTS[canonical].can_block and canonical != "stop":
                    return NativePass(hook, AgentReply(status="block", reason=why), [], [why])
                note = why
        try:
            fields = native_fields(agent, canonical, payload)
            fields["workspace"] = str(where) if where is not None else dispatcher.workspace
            ev = event_from_payload(canonical, fields)
        except (UnreadableCall, PayloadError) as exc:
            why = f"triohooks' own hooks cannot read this {event} call: {exc}"
            if EVENTS[canonical].can_block:  # a guard that cannot look does not wave it on
                reason = f"triohooks internal error: {why}"
                return NativePass(hook, AgentReply(status="block", reason=reason), [], [])
            return NativePass(hook, AgentReply(status="ok"), [], [why])
        outcome = await dispatcher.dispatch(ev, workspace_hooks=own, env=env, lane=True)
        reply, warnings = native_reply(agent, canonical, outcome, fields)
        if note is not None:  # said where the user looks: the agent shows a systemMessage
            warnings.append(note)
            if reply.status == "ok":
                said = (reply.json or {}).get("systemMessage")
                message = f"{said}\n{note}" if isinstance(said, str) and said else note
                reply = msgspec.structs.replace(
                    reply, json={**(reply.json or {}), "systemMessage": message}
                )
        ran = [
            AgentRun(
                hook=f"{NATIVE_LABEL}:{r.hook}",
                source=r.source,
                status=r.outcome,
                exit_code=r.exit_code,
                duration_ms=round(r.duration_ms, 3),
                error=r.error,
                truncated=r.truncated,
            )
            for r in outcome.runs
        ]
        return NativePass(hook, reply, ran, warnings)

    async def run_background(self, row: AgentRow, hook_input: HookInput) -> RunResult:
        """Run a queued ``async`` hook (the post worker calls this, with its item's input),
        observed like any run; its reply is not read (the agent did not wait for it), only
        whether it failed."""
        reply = await self._observed(row, hook_input)
        if reply.status == "error":
            return RunResult(outcome="error", error=reply.error or reply.reason)
        return RunResult(outcome="ok")

    async def _observed(self, row: AgentRow, hook_input: HookInput) -> AgentReply:
        """One hook run through the engine's observer (span, listener events, audit)."""
        hook, project = row.hook, row.project
        seen_as, session = hook_input.event, hook_input.session_id
        run = functools.partial(self._run_one, row, hook_input)
        if self._observer is None:
            return await run()
        observer = self._observer
        hook_id = f"{hook.agent}:{hook.label}"

        def summary(reply: AgentReply) -> RunSummary:
            return RunSummary(
                outcome=_OUTCOMES.get(reply.status, reply.status),
                exit_code=reply.exit_code,
                duration_ms=reply.duration_ms,
                output_bytes=0,
                record=_audit_record(seen_as, session, hook_id, reply, project)
                if observer.wants_records()
                else None,
            )

        return await observer.observe(
            run,
            summary,
            event=seen_as,
            hook_id=hook_id,
            name=hook.label,
            dialect=hook.agent,
            session=session or None,
        )

    def _held_back(
        self,
        table: AgentTable,
        event: str,
        payload: Mapping[str, Any],
        project: Path | None,
        adopted_only: bool,
        session: str,
        bound: Sequence[AgentHook],
        share: Share,
    ) -> list[tuple[AgentHook, AgentReply]]:
        """The project hooks that would have run for this event but are held back (not
        trusted, or trusted but about to run in another directory than trust read them in):
        the event gets the agent's ``ask`` where it has one, else a deny, else a notice -- as
        the user's ``held_back`` setting says (:func:`~triohooks.combine.outcome.
        held_back_answer`) -- and a ``failClosed`` one always denies. Said by the request
        that would have run them (``share``), logged once per project and trust state,
        audited per event."""
        held = [
            h
            for h in table.untrusted
            if h.event == event
            and share.covers(h)
            and (h.adopted or not adopted_only)
            and h.supported
            and applies(h, payload, project)
        ]
        if (not held and not bound) or table.trust is None:
            return []
        why = held_back_message(table.trust, table.agent, len(held))
        if not held:
            why = (
                f"{len(bound)} project {table.agent} hook(s) of {table.project} held back: they "
                "name files relative to the directory trust read them in, and this call runs "
                f"them in {hook_cwd(payload, project)} (write their paths from the project's "
                "variable)"
            )
        message = "triohooks: " + why
        told = (table.agent, table.trust.workspace, table.trust.state, table.trust.digest)
        if told not in self._told:
            self._told.add(told)
            log.warning("%s", message)
        all_held = [*held, *bound]
        canonical = SPECS[table.agent].events.get(event)
        # A failClosed hook that cannot run is a deny, whatever the setting.
        fail_closed = [h.label for h in all_held if h.fail_closed]
        setting = "deny" if fail_closed else self._held_back_setting()
        if fail_closed:
            message += f" (the fail-closed hook {fail_closed[0]} is among them: denied)"
        answer = held_back_answer(canonical, setting) if canonical else "warn"
        if answer == "ask" and not SPECS[table.agent].asks:
            answer = "deny"
        if self._observer is not None:
            labels = [h.label for h in all_held]
            self._observer.held_back(event, session, labels, answer, message)
        stand_in = msgspec.structs.replace(
            native_hook(table.agent, event, canonical or event), where="held back"
        )
        return [(stand_in, held_back_reply(table.agent, event, answer, message))]

    def _held_back_setting(self) -> str:
        """The user's ``held_back`` setting (their global config), or its default."""
        native = self._native
        return native.main.loader.table.held_back if native is not None else "ask"

    async def _run_one(self, row: AgentRow, hook_input: HookInput) -> AgentReply:
        hook, project = row.hook, row.project
        try:
            body, base_env = hook_input.payload, hook_input.environment()
            if hook.type == "command":
                return await self._command(hook, hook_input.fields, body, project, base_env)
            if hook.type == "http":
                return await self._post(hook, body, base_env)
            return await self._prompt(hook, body)
        except Exception as exc:  # our own bug, not the hook's: the guard stays closed
            log.exception("internal error running %s hook %s", hook.agent, hook.label)
            return internal_failure(hook, repr(exc))

    async def _command(
        self,
        hook: AgentHook,
        payload: Mapping[str, Any],
        body: bytes,
        project: Path | None,
        base_env: Mapping[str, str],
    ) -> AgentReply:
        argv = hook.args if hook.args is not None else ("bash", "-c", hook.command or "")
        env = {**base_env, **hook_environment(hook.agent, project, payload), **dict(hook.env)}
        cwd = hook_cwd(payload, project, hook.cwd)
        if cwd is None:
            return failed(hook, f"its cwd {hook.cwd!r} is not a directory")
        spec = ProcessSpec(
            argv=tuple(argv),
            cwd=cwd,
            env=env,
            stdin=body,
            timeout_s=hook.timeout_s,
            output_cap=OUTPUT_CAP,
            overflow="truncate",
            label=hook.label,
        )
        return read_process_reply(hook, await self._spawner.run(spec))

    async def _post(self, hook: AgentHook, body: bytes, base_env: Mapping[str, str]) -> AgentReply:
        assert hook.url is not None
        reply = await post_event(
            self._http,
            hook.url,
            body,
            headers=hook.headers,
            allowed_env_vars=hook.allowed_env_vars,
            environ=base_env,
            timeout_s=hook.timeout_s,
        )
        return read_http_reply(
            hook, reply.status, reply.status_code, reply.body, reply.error, reply.duration_ms
        )

    async def _prompt(self, hook: AgentHook, body: bytes) -> AgentReply:
        """Claude prompt/agent hooks: ``$ARGUMENTS`` is the input JSON; the model answers
        ``{"ok": bool, "reason": ...}``; not ok blocks with the reason."""
        if self._judge is None:
            return failed(hook, NO_JUDGE)
        text = body.decode("utf-8", "replace")
        prompt = hook.prompt or ""
        prompt = prompt.replace("$ARGUMENTS", text) if "$ARGUMENTS" in prompt else prompt
        asked = await ask_judge(self._judge, prompt, text, hook.model, hook.timeout_s)
        if asked.reply is None:
            why = asked.error or asked.outcome
            timed_out = asked.outcome == "timeout"
            return failed(hook, why, timed_out=timed_out, duration_ms=asked.duration_ms)
        return read_judge_reply(hook, asked.reply.text, asked.duration_ms)
