"""Run one agent event's hooks, as that agent would, with triohooks' guarantees.

:class:`AgentHooks` is what the engine, the relay's fallback and ``/claude/v1/hook`` call with
the agent's own input JSON. It finds the project from the payload's ``cwd``, loads (and
reuses, while no file changed) that agent's hook table, picks the hooks whose matcher and
``if`` apply, runs them all concurrently -- command hooks through the process guard (their own
session and group, nothing left behind, timeouts enforced), http hooks through the shared
client, prompt hooks through the judge -- waits for all (as the agent does), and merges their
replies into the agent's answer. ``async`` hooks run in the background and are not waited for.

Each hook gets the input JSON byte for byte on stdin, the agent's environment variables
(``CLAUDE_PROJECT_DIR``, ``CLAUDECODE`` ...) and the project directory as its working
directory. Blocks and failures go to the audit like any other hook run.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

import msgspec
import trio

from triohooks.config.model import TrustInfo
from triohooks.config.paths import global_config_dir
from triohooks.handlers.http import HttpHookClient, expand_headers
from triohooks.handlers.judge import Judge
from triohooks.handlers.process import ProcessSpec, Spawner
from triohooks.match.ifrules import rule_applies

from .config import MATCHER_FIELD, AgentHook, AgentTable, load_agent_table, table_is_current
from .merge import AgentAnswer, merge
from .replies import AgentReply, failed, read_http_reply, read_process_reply
from .spec import AGENTS, AgentName, find_project, home_dir, hook_environment

#: Output kept per stream of an agent command hook.
OUTPUT_CAP: Final = 100 * 1024
#: Tables kept (one per agent and project).
MAX_TABLES: Final = 64


class AgentPayloadError(ValueError):
    """The request is not an agent hook input (not a JSON object, no ``hook_event_name``)."""


class AgentRun(msgspec.Struct, frozen=True, kw_only=True):
    """One hook that ran for an agent event, for audit and listeners (never its command)."""

    hook: str
    source: str
    status: str
    exit_code: int | None
    duration_ms: float
    error: str | None
    truncated: bool


class AgentResult(msgspec.Struct, kw_only=True):
    agent: AgentName
    event: str
    session: str
    project: str | None
    answer: AgentAnswer
    runs: list[AgentRun]
    trust: TrustInfo | None = None


def _hook_cwd(payload: Mapping[str, Any], project: Path | None) -> str:
    """The payload's ``cwd`` when it is a directory, else the project, else ours."""
    cwd = payload.get("cwd")
    if isinstance(cwd, str) and os.path.isdir(cwd):
        return cwd
    return str(project) if project is not None else os.getcwd()


def decode_payload(body: bytes) -> dict[str, Any]:
    try:
        payload = msgspec.json.decode(body)
    except msgspec.DecodeError as exc:
        raise AgentPayloadError(f"the hook input is not valid JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise AgentPayloadError("the hook input must be a JSON object")
    event = payload.get("hook_event_name")
    if not isinstance(event, str) or not event:
        raise AgentPayloadError("the hook input has no hook_event_name")
    return payload


class AgentHooks:
    """Runs agent-dialect hooks for one engine (see the module docstring)."""

    def __init__(
        self,
        *,
        spawner: Spawner,
        http: HttpHookClient,
        judge: Judge | None,
        background: trio.Nursery,
        config_dir: Path | None = None,
        home: Path | None = None,
        trust_override: bool = False,
        on_result: Callable[[AgentResult], None] | None = None,
    ) -> None:
        self._spawner = spawner
        self._http = http
        self._judge = judge
        self._background = background
        self._config_dir = config_dir
        self._home = home
        self._trust_override = trust_override
        self._tables: dict[tuple[str, str | None], AgentTable] = {}
        self.on_result = on_result

    @property
    def home(self) -> Path:
        return self._home if self._home is not None else home_dir()

    @property
    def config_dir(self) -> Path:
        return self._config_dir if self._config_dir is not None else global_config_dir()

    async def table(self, agent: AgentName, project: Path | None) -> AgentTable:
        """The agent's table for ``project``, reloaded when any file it came from changed."""
        key = (agent, str(project) if project is not None else None)
        cached = self._tables.get(key)
        trust_file = self.config_dir / "trust.json"
        if cached is not None and table_is_current(cached, self.home, trust_file):
            return cached
        table = await trio.to_thread.run_sync(
            lambda: load_agent_table(
                agent,
                project=project,
                home=self.home,
                config_dir=self.config_dir,
                trust_override=self._trust_override,
                trust_file=trust_file,
            )
        )
        if len(self._tables) >= MAX_TABLES:
            self._tables.pop(next(iter(self._tables)))
        self._tables[key] = table
        return table

    async def handle(self, agent: str, body: bytes, *, adopted_only: bool = False) -> AgentResult:
        """Run the hooks ``agent`` has for the event in ``body`` (its hook input JSON) and return
        the merged answer. Raises :class:`AgentPayloadError` for a body that is no hook input.

        ``adopted_only``: only the hooks an adoption moved into ``triohooks-hooks.json`` -- for
        calls from the agent itself (the endpoint, the relay), which still runs the hooks left in
        its settings files on its own."""
        if agent not in AGENTS:
            raise AgentPayloadError(f"unknown agent {agent!r}; known: {', '.join(AGENTS)}")
        name: AgentName = agent
        payload = decode_payload(body)
        event = payload["hook_event_name"]
        project = find_project(payload.get("cwd"), name)
        table = await self.table(name, project)
        candidates = table.for_event(event, adopted_only=adopted_only)
        chosen = [h for h in candidates if self._applies(h, payload, project)]
        runs: list[tuple[AgentHook, AgentReply]] = []
        foreground = [h for h in chosen if h.supported and not h.background]
        for hook in chosen:
            if hook.supported and hook.background:
                self._background.start_soon(self._run_one, hook, payload, body, project)
        replies: list[AgentReply | None] = [None] * len(foreground)

        async def one(i: int, hook: AgentHook) -> None:
            replies[i] = await self._run_one(hook, payload, body, project)

        if any(h.sequential for h in foreground):
            for i, hook in enumerate(foreground):
                await one(i, hook)
        else:
            async with trio.open_nursery() as nursery:
                for i, hook in enumerate(foreground):
                    nursery.start_soon(one, i, hook)
        for hook, reply in zip(foreground, replies, strict=True):
            assert reply is not None
            runs.append((hook, reply))
        answer = merge(name, event, runs)
        for hook in chosen:
            if not hook.supported:
                answer.warnings.append(f"hook {hook.label} not run: {hook.unsupported}")
        result = AgentResult(
            agent=name,
            event=event,
            session=str(payload.get("session_id") or ""),
            project=table.project,
            answer=answer,
            runs=[
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
            ],
            trust=table.trust,
        )
        if self.on_result is not None:
            self.on_result(result)
        return result

    def _applies(self, hook: AgentHook, payload: Mapping[str, Any], project: Path | None) -> bool:
        field = MATCHER_FIELD.get(hook.event)
        if field is not None and not hook.matcher.matches(payload.get(field)):
            return False
        if hook.compiled_if is not None:
            tool = payload.get("tool_name")
            args = payload.get("tool_input")
            if not isinstance(tool, str) or not isinstance(args, dict):
                return True  # not a tool call: the rule cannot rule it out
            workspace = str(project) if project is not None else str(payload.get("cwd") or "")
            return rule_applies(hook.compiled_if, tool=tool, args=args, workspace=workspace)
        return True

    async def _run_one(
        self, hook: AgentHook, payload: Mapping[str, Any], body: bytes, project: Path | None
    ) -> AgentReply:
        try:
            if hook.type == "command":
                return await self._command(hook, payload, body, project)
            if hook.type == "http":
                return await self._post(hook, body)
            return await self._prompt(hook, body)
        except Exception as exc:  # our own bug: the hook failed, by its failure rule
            return failed(hook, f"internal error: {exc!r}")

    async def _command(
        self, hook: AgentHook, payload: Mapping[str, Any], body: bytes, project: Path | None
    ) -> AgentReply:
        argv = hook.args if hook.args is not None else ("bash", "-c", hook.command or "")
        env = {**os.environ, **hook_environment(hook.agent, project, payload), **dict(hook.env)}
        spec = ProcessSpec(
            argv=tuple(argv),
            cwd=_hook_cwd(payload, project),
            env=env,
            stdin=body,
            timeout_s=hook.timeout_s,
            output_cap=OUTPUT_CAP,
            overflow="truncate",
            label=hook.label,
        )
        return read_process_reply(hook, await self._spawner.run(spec))

    async def _post(self, hook: AgentHook, body: bytes) -> AgentReply:
        assert hook.url is not None
        headers = expand_headers(hook.headers, hook.allowed_env_vars, os.environ)
        headers.setdefault("Content-Type", "application/json")
        reply = await self._http.post(
            hook.url, body=body, headers=headers, timeout_s=hook.timeout_s
        )
        return read_http_reply(
            hook, reply.status, reply.status_code, reply.body, reply.error, reply.duration_ms
        )

    async def _prompt(self, hook: AgentHook, body: bytes) -> AgentReply:
        """Claude prompt/agent hooks: ``$ARGUMENTS`` is the input JSON; the model answers
        ``{"ok": bool, "reason": ...}``; not ok blocks with the reason."""
        if self._judge is None:
            return failed(hook, "no model is configured to judge prompt hooks")
        text = body.decode("utf-8", "replace")
        prompt = hook.prompt or ""
        prompt = prompt.replace("$ARGUMENTS", text) if "$ARGUMENTS" in prompt else prompt
        start = time.perf_counter()
        with trio.move_on_after(hook.timeout_s) as scope:
            reply = await self._judge(prompt, text, hook.model)
        ms = (time.perf_counter() - start) * 1000
        if scope.cancelled_caught:
            return failed(hook, f"judge timed out after {hook.timeout_s:g} s", duration_ms=ms)
        try:
            verdict = msgspec.json.decode(reply.text.strip())
        except msgspec.DecodeError:
            return failed(hook, "the judge answered no JSON", duration_ms=ms)
        if not isinstance(verdict, dict) or not isinstance(verdict.get("ok"), bool):
            return failed(hook, "the judge's answer has no boolean ok", duration_ms=ms)
        if verdict["ok"]:
            return AgentReply(status="ok", duration_ms=ms)
        reason = verdict.get("reason")
        return AgentReply(
            status="block",
            reason=reason if isinstance(reason, str) and reason else f"hook {hook.label} said no",
            duration_ms=ms,
        )
