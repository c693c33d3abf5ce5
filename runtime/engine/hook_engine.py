"""``HookEngine``: the public object an agent embeds (and the CLI and websocket service use).

Owns wiring the actors together in dependency order and closing them in reverse: intake stops,
the post queue drains (5 s), the reaper kills what is left, the audit sink flushes. It must not
contain decision logic (``_outcome``) or process handling (``triohooks.actors.reaper``).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from contextlib import asynccontextmanager
from typing import Any, Unpack

import msgspec
import trio

from triohooks.actors.audit import AuditSink
from triohooks.actors.audit_records import AuditRecord, AuditStats
from triohooks.actors.dispatcher import Dispatcher
from triohooks.actors.guard import ProcessGuard
from triohooks.actors.loader import Loader, RebuildReport
from triohooks.actors.post_worker import PostWorker, WorkerReport
from triohooks.actors.process_guard import open_guard
from triohooks.actors.projects import ProjectDispatchers, ProjectUnreadable
from triohooks.actors.runs import HookRuns, Listeners
from triohooks.actors.supervisor import Supervisor
from triohooks.agents.plan import AgentRow
from triohooks.agents.runner import AgentHooks, AgentInput, AgentResult
from triohooks.combine.outcome import Outcome
from triohooks.config.events import (
    EVENT_TYPES,
    EventBase,
    PayloadError,
    canonical_event,
    event_from_payload,
)
from triohooks.config.model import (
    ConfigError,
    Hook,
    HookTable,
    Mode,
    PythonHandler,
    PythonHookFunc,
    mode_problem,
)
from triohooks.handlers.builtin import builtin_runners
from triohooks.handlers.http import HttpHookClient
from triohooks.handlers.judge import Judge, judge_from_env
from triohooks.handlers.replies import RunResult
from triohooks.handlers.runner import HookInput

from .guarded import Guards
from .options import EngineOptions, Settings

log = logging.getLogger("triohooks")


class HookEngine(Guards):
    """Fire agent lifecycle events at the user's hooks. Open with :meth:`open`.

    Also :meth:`guarded_call` (one tool call between pre_tool and post_tool) and :meth:`session`
    (session events, ids and the stop loop), from :class:`~triohooks.engine.guarded.Guards`."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        loader: Loader,
        reaper: ProcessGuard,
        audit: AuditSink | None,
        judge_warning: str | None,
        *,
        agents: AgentHooks,
        projects: ProjectDispatchers,
    ) -> None:
        self._agents = agents
        self._projects = projects
        self._dispatcher = dispatcher
        self._loader = loader
        self._reaper = reaper
        self._audit = audit
        self.judge_warning = judge_warning
        self.close_report: WorkerReport | None = None

    @classmethod
    @asynccontextmanager
    async def open(
        cls, *, judge: Judge | None = None, **options: Unpack[EngineOptions]
    ) -> AsyncIterator[HookEngine]:
        """Start the engine's actors; on exit close them in order.

        ``options`` are :class:`~triohooks.EngineOptions` (workspace, config_dir, extra_configs,
        trust, state_dir, audit, watchdog, drain_timeout_s); ``judge`` judges prompt hooks when
        no built-in judge is configured. Raises :class:`~triohooks.ConfigError` when a config
        file has errors, ``TypeError`` for an unknown option,
        :class:`~triohooks.GuardUnavailable` where no process guard can run (Windows), and
        :class:`~triohooks.ActorFailed` when an actor crashed more often than its restart budget
        allows. An exception raised in the ``async with`` body comes out as
        itself, not wrapped in the engine's nurseries' ExceptionGroups.
        """
        settings = Settings(options)
        unwrapped: BaseException | None = None
        try:
            async with cls._open(settings, judge) as engine:
                yield engine
        except BaseExceptionGroup as group:
            unwrapped = sole_exception(group)
            if unwrapped is None:
                raise
        if unwrapped is not None:
            raise unwrapped

    @classmethod
    @asynccontextmanager
    async def _open(cls, settings: Settings, judge: Judge | None) -> AsyncIterator[HookEngine]:
        ws = settings.workspace
        drain_timeout_s = settings.drain_timeout_s
        loader = Loader(
            workspace=ws,
            config_dir=settings.config_dir,
            extra_configs=settings.extra_configs,
            trust_override=settings.trust,
        )
        table = await loader.load_initial()
        # A judge configured for triohooks ([judge] or TRIOHOOKS_JUDGE_*) judges prompt hooks;
        # when none is configured, or it cannot be built (a warning), the agent's own does.
        built, judge_warning = judge_from_env(os.environ, dict(table.judge))
        if judge_warning:
            log.warning("%s", judge_warning)
        sink = AuditSink(settings.state_dir) if settings.audit else None
        async with (
            trio.open_nursery() as outer,
            HttpHookClient() as http,
            built if built is not None else contextlib.nullcontext() as _,
        ):
            supervisor = Supervisor(outer)
            await supervisor.start("loader", loader.serve)
            if sink is not None:
                await supervisor.start("audit", sink.serve)
            async with open_guard(watchdog=settings.watchdog) as reaper:
                loader.on_swap.append(reaper.retire_workers)
                runners = builtin_runners(
                    spawner=reaper,
                    http=http,
                    judge=built if built is not None else judge,
                    workspace=str(ws),
                )
                listeners = Listeners()
                runs = HookRuns(runners, audit=sink, listeners=listeners, workspace=str(ws))
                queued = _BackgroundRuns(runs)
                post_worker = PostWorker(
                    queued,
                    on_warning=listeners.falling_behind,
                    on_drop=listeners.dropped,
                    drain_timeout_s=drain_timeout_s,
                )
                dispatcher = Dispatcher(loader=loader, runs=runs, post_worker=post_worker)

                def project_dispatcher(project_loader: Loader) -> Dispatcher:
                    """Another project's hooks (agent requests through one serve): its own
                    loader and observer, everything else the engine's."""
                    where = str(project_loader.workspace)
                    project_runners = builtin_runners(
                        spawner=reaper,
                        http=http,
                        judge=built if built is not None else judge,
                        workspace=where,
                    )
                    return Dispatcher(
                        loader=project_loader,
                        runs=HookRuns(
                            project_runners, audit=sink, listeners=listeners, workspace=where
                        ),
                        post_worker=post_worker,
                        # The embedder's hooks are the user's own: one list for every project.
                        api_hooks=dispatcher.api_hooks,
                    )

                projects = ProjectDispatchers(
                    dispatcher,
                    project_dispatcher,
                    config_dir=settings.config_dir,
                    extra_configs=settings.extra_configs,
                    trust_override=settings.trust,
                )
                agents = AgentHooks(
                    spawner=reaper,
                    http=http,
                    judge=built if built is not None else judge,
                    offer=post_worker.offer,
                    config_dir=settings.config_dir,
                    trust_override=settings.trust,
                    observer=runs,
                    native=projects,
                )
                engine = cls(
                    dispatcher,
                    loader,
                    reaper,
                    sink,
                    judge_warning,
                    agents=agents,
                    projects=projects,
                )
                async with trio.open_nursery() as background:
                    # The post worker's consumer, started on first use; its crash is its own
                    # (contained and restarted there), never an event's.
                    post_worker.attach(background)
                    try:
                        yield engine
                    finally:
                        # Close order: intake stops and the post queue drains (5 s), then
                        # what still runs in the background is cancelled (its groups killed
                        # by the reaper); events in flight are their callers' to cancel.
                        with trio.CancelScope(shield=True):
                            engine.close_report = await dispatcher.post_worker.close()
                        background.cancel_scope.cancel()
                # Leaving open_guard kills every group still alive and stops the watchdog.
            if sink is not None:
                with trio.CancelScope(shield=True):
                    engine._audit_close_report()
                    with trio.move_on_after(2):
                        await sink.close()
            outer.cancel_scope.cancel()

    def add_listener(self, listener: Callable[[str, dict[str, Any]], None]) -> Callable[[], None]:
        """Call ``listener(kind, fields)`` for everything that happens: ``fired``,
        ``hook_started``, ``hook_finished``, ``outcome``, ``dropped``, ``falling_behind``,
        ``audit``, ``closed``. It runs synchronously and must not block. Returns a remover."""
        return self._dispatcher.runs.listeners.add(listener)

    def _audit_close_report(self) -> None:
        report = self.close_report
        if report is None:
            return
        self._dispatcher.runs.listeners.emit("closed", report=report)
        if report.offered == 0:
            return  # nothing went through the queue: no record (a CLI fire closes every call)
        self._dispatcher.runs.record(
            AuditRecord(
                time="",
                session="",
                kind="worker",
                event="close",
                hook="",
                decision=None,
                error=None,
                duration_ms=round(report.drain_seconds * 1000, 3),
                workspace=self._dispatcher.workspace,
                detail=msgspec.to_builtins(report),
            )
        )

    async def _shielded(
        self, make: Callable[[], Awaitable[Outcome]], timeout_s: float
    ) -> Outcome | None:
        with trio.CancelScope(shield=True), trio.move_on_after(timeout_s):
            return await make()
        return None

    # -- agent dialects ------------------------------------------------------------------------
    async def agent_hook(
        self,
        agent: str,
        body: bytes | AgentInput,
        *,
        adopted_only: bool = False,
        env: Mapping[str, str] | None = None,
        scope: str | None = None,
    ) -> AgentResult:
        """Run the hooks ``agent`` (``claude``, ``gemini``, ``codex``) has configured for the
        event in ``body`` -- that agent's own hook input JSON, passed to each hook verbatim (or
        that input as a front read it: :class:`~triohooks.AgentInput`, not decoded again) --
        and return the merged answer in that agent's output format (``result.answer.output``).

        The project is the one the agent's variable in ``env`` names (``CLAUDE_PROJECT_DIR``
        ...), else found from the payload's ``cwd`` (docs/agents.md, "Which project"); its
        project-level settings run only once trusted, and held-back hooks are said in the
        answer, in a :class:`~triohooks.AgentResult`. A checkpoint; on cancel the running hooks
        are killed. Raises :class:`~triohooks.AgentPayloadError` for a body that is no hook input.
        ``adopted_only`` runs only the hooks ``triohooks <agent> install`` moved into
        ``triohooks-hooks.json`` (the agent runs the rest itself): for calls from the agent.
        ``env``: the agent session's environment, which the hooks then get instead of this
        process's (the relay forwards it). ``scope``: with ``adopted_only``, the install scope
        the calling catch-all names (``user``, ``project``): it answers for that scope's hooks,
        and another catch-all of the agent's for the rest (each hook runs once per call;
        docs/agents.md, "Two installs of one agent").
        """
        answer = self._agents.handle(agent, body, adopted_only=adopted_only, env=env, scope=scope)
        if self._audit is None:
            return await answer
        result, unwritten = await self._audit.deliver(answer)
        if unwritten is not None:
            result.answer.warnings.append(unwritten)
        return result

    # -- firing -------------------------------------------------------------------------------
    async def fire(
        self, event: str, payload: Mapping[str, Any] | EventBase | None = None, /, **fields: Any
    ) -> Outcome:
        """Fire ``event`` (canonical name or JSON-dialect alias) and return its Outcome.

        ``payload`` is a dict of the event's fields (docs/design.md §2) or an event Struct; keyword
        arguments add fields. A checkpoint. On cancel the event's running hooks are killed.
        Raises :class:`~runtime.UnknownEventError` / :class:`~runtime.PayloadError` for bad input.
        """
        return await self._answer(self._dispatcher.dispatch(self._event(event, payload, fields)))

    async def _project(self, workspace: str) -> Dispatcher:
        """The dispatcher of ``workspace`` (this engine's own, or another project's, read on
        first use). Raises :class:`~runtime.ConfigError` when that project's config has errors."""
        real = await trio.to_thread.run_sync(os.path.realpath, workspace)
        try:
            return await self._projects.for_project(real)
        except ProjectUnreadable as exc:
            raise ConfigError(exc.problems) from None

    async def table_at(self, workspace: str) -> HookTable:
        """The current hook table of ``workspace``: this engine's own, or another project's
        (as :meth:`fire_at` runs it). A checkpoint. Raises :class:`~runtime.ConfigError` when
        its config has errors."""
        dispatcher = await self._project(workspace)
        return await dispatcher.loader.current()

    async def fire_at(self, ev: EventBase, *, env: Mapping[str, str] | None = None) -> Outcome:
        """Fire ``ev`` with the hooks of its own workspace (``ev.workspace``): this engine's, or
        another project's, as ``triohooks fire --workspace`` would run them (the ``fire``
        command's requests to serve). ``env``: the environment the hooks get (None: this
        process's). A checkpoint; on cancel the event's running hooks are killed."""
        dispatcher = await self._project(ev.workspace or self._dispatcher.workspace)
        return await self._answer(dispatcher.dispatch(ev, env=env))

    async def _fire_typed(self, event: str, **fields: Any) -> Outcome:
        """The typed helpers' path."""
        return await self._answer(self._dispatcher.dispatch(self._typed_event(event, **fields)))

    async def _answer(self, dispatch: Coroutine[Any, Any, Outcome]) -> Outcome:
        """The Outcome of ``dispatch``, returned once its audit records are written (or with a
        warning that says they are not: docs/design.md §8)."""
        if self._audit is None:
            return await dispatch
        outcome, unwritten = await self._audit.deliver(dispatch)
        if unwritten is not None:
            outcome.warnings.append(unwritten)
        return outcome

    def _event(
        self, event: str, payload: Mapping[str, Any] | EventBase | None, fields: dict[str, Any]
    ) -> EventBase:
        """The event :meth:`fire` fires (the asyncio engine builds its events here too)."""
        if isinstance(payload, EventBase):
            return msgspec.structs.replace(payload, **fields) if fields else payload
        data = dict(payload or {})
        data.update(fields)
        _default_places(data, self._dispatcher.workspace)
        return event_from_payload(event, data)

    def _typed_event(self, event: str, **fields: Any) -> EventBase:
        """The event a typed helper fires: its fields are known names, so the Struct is built
        directly; an unknown keyword goes the general way, which says which."""
        _default_places(fields, self._dispatcher.workspace)
        try:
            return EVENT_TYPES[event](**fields)
        except TypeError:
            return self._event(event, fields, {})

    async def pre_tool(
        self, tool: str, args: Mapping[str, Any], tool_call_id: str | None = None, **common: Any
    ) -> Outcome:
        return await self._fire_typed(
            "pre_tool", tool=tool, args=_args("pre_tool", args), tool_call_id=tool_call_id, **common
        )

    async def post_tool(
        self,
        tool: str,
        args: Mapping[str, Any],
        result: Any = None,
        error: str | None = None,
        tool_call_id: str | None = None,
        **common: Any,
    ) -> Outcome:
        """Fire post_tool (and post_tool_failure too when ``error`` is set)."""
        return await self._fire_typed(
            "post_tool",
            tool=tool,
            args=_args("post_tool", args),
            result=result,
            error=error,
            tool_call_id=tool_call_id,
            **common,
        )

    async def prompt_submit(self, prompt: str, **common: Any) -> Outcome:
        return await self._fire_typed("prompt_submit", prompt=prompt, **common)

    async def permission_request(
        self, tool: str, args: Mapping[str, Any], tool_call_id: str | None = None, **common: Any
    ) -> Outcome:
        return await self._fire_typed(
            "permission_request",
            tool=tool,
            args=_args("permission_request", args),
            tool_call_id=tool_call_id,
            **common,
        )

    async def session_start(self, reason: str = "startup", **common: Any) -> Outcome:
        return await self._fire_typed("session_start", reason=reason, **common)

    async def stop(self, **common: Any) -> Outcome:
        return await self._fire_typed("stop", **common)

    async def session_end(self, reason: str = "exit", **common: Any) -> Outcome:
        return await self._fire_typed("session_end", reason=reason, **common)

    async def notification(self, type: str, message: str, **common: Any) -> Outcome:
        return await self._fire_typed("notification", type=type, message=message, **common)

    # -- in-process hooks and config ----------------------------------------------------------
    def add_hook(
        self,
        event: str,
        func: PythonHookFunc,
        *,
        name: str | None = None,
        match: str | None = None,
        timeout_s: float = 30.0,
        mode: Mode = "enforce",
    ) -> Hook:
        """Register an async Python callable as a hook (runs before the config hooks, in order;
        after the system tier's, which nothing precedes).

        ``func(event_fields)`` returns a reply dict (TOML-dialect fields: ``decision``,
        ``reason``, ``updated_args``, ``additional_context`` ...), a string, or None.
        ``mode="observe"``: its decisions are computed and audited, never enforced
        (docs/configuration.md, ``mode``); any other value but ``"enforce"`` is a ValueError.
        """
        label = name or str(getattr(func, "__qualname__", "python-hook"))
        return self._add_python_hook(event, PythonHandler(func), label, match, timeout_s, mode)

    def _add_python_hook(
        self,
        event: str,
        handler: PythonHandler,
        label: str,
        match: str | None,
        timeout_s: float,
        mode: Mode = "enforce",
    ) -> Hook:
        """Register ``handler`` as an API hook (:meth:`add_hook`; the asyncio engine's too)."""
        from triohooks.match.globs import validate_go_glob

        bad_mode = mode_problem(mode)
        if bad_mode is not None:
            raise ValueError(f"mode {bad_mode}")
        canon = canonical_event(event)
        if match:
            validate_go_glob(match)
        hook = Hook(
            id=f"api:{label}:{len(self._dispatcher.api_hooks)}",
            name=label,
            event=canon,
            config_event=canon,
            dialect="python",
            scope="api",
            source="",
            index=len(self._dispatcher.api_hooks),
            handler=handler,
            timeout_s=timeout_s,
            match=match,
            mode=mode,
        )
        self._dispatcher.api_hooks.append(hook)
        return hook

    def remove_hook(self, hook: Hook) -> None:
        self._dispatcher.api_hooks.remove(hook)

    @property
    def table(self) -> HookTable:
        """The current hook-table snapshot."""
        return self._loader.table

    async def reload(self) -> RebuildReport:
        """Re-read config now; on errors the previous table stays. A checkpoint."""
        return await self._loader.rebuild()

    @property
    def stop_continues(self) -> dict[str, int]:
        """How often stop hooks made the agent go on, per prompt id (session id without one).

        A one-shot front (``triohooks fire``) saves this between runs and gives it back with
        :meth:`restore_stop_continues`, so the cap of 5 per prompt (blitz HK-51) and
        ``stop_hook_active`` hold across processes too.
        """
        return self._dispatcher.stop_continues.snapshot()

    def restore_stop_continues(self, counts: Mapping[str, int]) -> None:
        """Start from ``counts`` (as :attr:`stop_continues` gave them); call before firing."""
        self._dispatcher.stop_continues.restore(counts)

    @property
    def live_processes(self) -> int:
        return self._reaper.live

    @property
    def queue_depth(self) -> int:
        return self._dispatcher.post_worker.depth

    @property
    def audit_stats(self) -> AuditStats | None:
        """What the audit sink wrote and lost, and torn day-file tails it repaired; None when
        the engine writes no audit log."""
        return self._audit.stats() if self._audit is not None else None


class _BackgroundRuns:
    """The post worker's runner: every item is one event's input and its hooks; a native
    hook runs through the engine's :class:`HookRuns`, an agent's ``async`` hook (an
    :class:`~triohooks.agents.plan.AgentRow`) through its :class:`AgentHooks` (which observes
    it the same way), both from the item's :class:`HookInput`."""

    def __init__(self, runs: HookRuns) -> None:
        self.runs = runs

    async def run(self, hook: Any, hook_input: HookInput) -> RunResult:
        if isinstance(hook, AgentRow):
            return await hook.runner.run_background(hook, hook_input)
        return await self.runs.run(hook, hook_input)


def sole_exception(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    """The one exception ``group`` holds, however deeply nested; None when it holds several."""
    exc: BaseException = group
    while isinstance(exc, BaseExceptionGroup):
        if len(exc.exceptions) != 1:
            return None
        exc = exc.exceptions[0]
    return exc


def _args(event: str, args: object) -> dict[str, Any]:
    """A tool call's arguments as the event carries them: an object, copied; anything else is
    the caller's error (``dict(["ls"])`` would silently make ``{"l": "s"}``)."""
    if not isinstance(args, Mapping):
        raise PayloadError(
            f"{event} payload: args must be an object (a mapping), not {type(args).__name__}"
        )
    return dict(args)


def _default_places(fields: dict[str, Any], workspace: str) -> None:
    """Every event carries ``workspace`` and ``cwd`` (docs/design.md §2, blitz HK-50): when the
    agent sends neither, the engine's workspace stands in for both (hooks run there too)."""
    if not fields.get("workspace"):
        fields["workspace"] = workspace
    if not fields.get("cwd"):
        fields["cwd"] = fields["workspace"]
