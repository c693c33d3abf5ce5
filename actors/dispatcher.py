"""The dispatcher actor: one task per event, every matching hook run in order, one Outcome out.

Owns the per-event path: take the hook-table snapshot, filter hooks (``match``, ``if``, JSON
matchers), run the synchronous ones in order under their own deadlines, fold replies with
:class:`~triohooks.combine.outcome.Combiner`, queue the background ones on the post worker, and send
audit records. A crash while handling one event is contained and turned into that event's
failure result; other events are untouched. It must not spawn processes itself (the reaper
does) nor write files (the audit sink does).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec
import trio

from triohooks.combine.outcome import Combiner, Outcome, failure_text, plain_outcome
from triohooks.config.events import EVENTS, JSON_NAMES, MAX_STOP_CONTINUES, EventBase
from triohooks.config.model import (
    ArgsHandler,
    CommandHandler,
    Hook,
    HttpHandler,
    PromptHandler,
    PythonHandler,
)
from triohooks.handlers.http import HttpHookClient, expand_headers
from triohooks.handlers.judge import Judge
from triohooks.handlers.process import ProcessSpec
from triohooks.handlers.replies import (
    JSON_OUTPUT_CAP,
    TOML_OUTPUT_CAP,
    RunResult,
    json_hook_environment,
    json_payload,
    parse_toml_stdout,
    private_payload_file,
    read_json_reply,
    read_toml_reply,
)
from triohooks.match.ifrules import rule_applies
from triohooks.match.matchers import matcher_fires, toml_match_fires

from .audit import AuditRecord, AuditSink, end_run, hook_span
from .loader import Loader
from .post_worker import BackgroundItem, PostWorker, encode_payload
from .reaper import Reaper

log = logging.getLogger("triohooks.dispatcher")

_FAILED = frozenset({"error", "timeout", "spawn_failed", "killed"})
_encoder = msgspec.json.Encoder()


def is_sync(hook: Hook, event: str) -> bool:
    info = EVENTS[event]
    return info.json_sync if hook.dialect == "json" else info.sync


class Dispatcher:
    """Runs events against the loader's current table. See the module docstring."""

    def __init__(
        self,
        *,
        loader: Loader,
        reaper: Reaper,
        audit: AuditSink | None,
        http: HttpHookClient | None,
        judge: Judge | None,
        workspace: str,
        drain_timeout_s: float = 5.0,
    ) -> None:
        self.loader = loader
        self.reaper = reaper
        self.audit = audit
        self.http = http
        self.judge = judge
        self.workspace = workspace
        self.api_hooks: list[Hook] = []
        self.post_worker = PostWorker(
            self._run_background,
            on_warning=self._falling_behind,
            on_drop=self._dropped,
            kill_running=reaper.kill_all,
            drain_timeout_s=drain_timeout_s,
        )
        #: Background hooks per queued item, keyed by the worker's sequence number.
        self._pending: dict[int, tuple[Hook, ...]] = {}
        self._stop_continues: dict[str, int] = {}
        self._nursery: trio.Nursery | None = None
        #: Observers of what happens (the websocket stream, the demo timeline): called
        #: synchronously with (kind, fields); they must not block. A failing one is logged.
        self.listeners: list[Callable[[str, dict[str, Any]], None]] = []
        self.crashes = 0

    # -- actor lifecycle ----------------------------------------------------------------------
    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Hold the nursery that event tasks run in. Runs until cancelled."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self.post_worker.attach(nursery)
            task_status.started()
            await trio.sleep_forever()

    def emit(self, kind: str, **fields: Any) -> None:
        """Tell every listener; cheap when there are none."""
        for listener in self.listeners:
            try:
                listener(kind, fields)
            except Exception:
                log.exception("event listener failed")

    # -- the per-event path -------------------------------------------------------------------
    def _hooks_for(self, event: str) -> tuple[Hook, ...]:
        table_hooks = self.loader.table.for_event(event)
        if not self.api_hooks:
            return table_hooks
        api = [h for h in self.api_hooks if h.event == event]
        return (*api, *table_hooks) if api else table_hooks

    def _any_passes(self, hooks: tuple[Hook, ...], event: str, ev: EventBase) -> bool:
        """Could any of ``hooks`` run for ``ev``? Exact for the first hook to run (nothing can
        have rewritten the arguments before it), so False means no hook runs at all."""
        if not hooks or not EVENTS[event].tool_event:
            return bool(hooks)
        tool = getattr(ev, "tool", "")
        args = getattr(ev, "args", None) or {}
        return any(self._passes(h, tool, args) for h in hooks)

    async def dispatch(self, ev: EventBase) -> Outcome:
        """Run one event and return its Outcome.

        A checkpoint when any hook matches. On cancel, the event's task is cancelled too (its
        hook processes are killed) and ``Cancelled`` propagates to the caller.
        """
        event = type(ev).__struct_config__.tag
        assert isinstance(event, str)
        hooks = self._hooks_for(event)
        extra: tuple[Hook, ...] = ()
        if event == "post_tool" and getattr(ev, "error", None):
            extra = self._hooks_for("post_tool_failure")
        if (
            event != "stop"
            and not self._any_passes(hooks, event, ev)
            and not self._any_passes(extra, "post_tool_failure", ev)
        ):
            # The fast path: nothing runs, so no task, no copies, no encoding.
            await trio.lowlevel.checkpoint()
            return plain_outcome(event, ev)
        assert self._nursery is not None, "dispatcher is not running"
        done = trio.Event()
        box: list[Outcome] = []
        scope = trio.CancelScope()
        self._nursery.start_soon(self._event_task, ev, event, hooks, extra, box, done, scope)
        try:
            await done.wait()
        except trio.Cancelled:
            # Cancel the event and wait (bounded) for its hooks' groups to be killed, so a
            # cancelled fire never returns with a hook of its still running.
            scope.cancel()
            with trio.move_on_after(2, shield=True):
                await done.wait()
            raise
        return box[0]

    async def _event_task(
        self,
        ev: EventBase,
        event: str,
        hooks: tuple[Hook, ...],
        extra: tuple[Hook, ...],
        box: list[Outcome],
        done: trio.Event,
        scope: trio.CancelScope,
    ) -> None:
        with scope:
            try:
                box.append(await self._run_event(ev, event, hooks, extra))
            except Exception as exc:
                # Containment: a bug while handling one event fails that event only.
                self.crashes += 1
                log.exception("internal error while handling %s", event)
                outcome = Outcome(event=event)
                outcome.warnings.append(f"internal error while handling {event}: {exc!r}")
                box.append(outcome)
        if not box:  # cancelled by the caller or by close
            outcome = Outcome(event=event)
            outcome.warnings.append("event cancelled")
            box.append(outcome)
        done.set()

    async def _run_event(
        self, ev: EventBase, event: str, hooks: tuple[Hook, ...], extra: tuple[Hook, ...]
    ) -> Outcome:
        fields: dict[str, Any] = msgspec.to_builtins(ev)
        stop_key = ""
        if event == "stop":
            stop_key = ev.prompt_id or ev.session_id
            if self._stop_continues.get(stop_key, 0) > 0:
                fields["stop_hook_active"] = True
        self.emit("fired", event=event, session=ev.session_id, hooks=len(hooks) + len(extra))
        combiner = Combiner(event, fields)
        background = [h for h in hooks if not is_sync(h, event)]
        for hook in hooks:
            if combiner.stopped:
                break
            if not is_sync(hook, event):
                continue
            current = fields
            if combiner.current_args is not None:
                current = {**fields, "args": combiner.current_args}
            if combiner.current_prompt is not None:
                current = {**current, "prompt": combiner.current_prompt}
            if not self._passes_filters(hook, event, current):
                continue
            result = await self._run_hook(hook, event, current)
            combiner.add(hook, result)
            self._after_run(hook, event, ev, result)
        outcome = combiner.finish()
        if event == "stop" and outcome.continue_:
            count = self._stop_continues.get(stop_key, 0)
            if count >= MAX_STOP_CONTINUES:
                outcome.continue_ = False
                outcome.blocked = False
                outcome.decision = None
                outcome.warnings.append(
                    f"stop hooks asked to continue, but the limit of {MAX_STOP_CONTINUES} "
                    "per prompt is reached; the agent stops"
                )
            else:
                self._stop_continues[stop_key] = count + 1
        if background:
            outcome.queued |= self._queue(event, ev, fields, background)
        if extra:
            failure_fields = {**fields, "event": "post_tool_failure"}
            outcome.queued |= self._queue("post_tool_failure", ev, failure_fields, extra)
        self.emit("outcome", event=event, outcome=outcome)
        return outcome

    def _passes_filters(self, hook: Hook, event: str, fields: Mapping[str, Any]) -> bool:
        if not EVENTS[event].tool_event:
            return True
        return self._passes(hook, str(fields.get("tool") or ""), fields.get("args") or {})

    def _passes(self, hook: Hook, tool: str, args: Mapping[str, Any]) -> bool:
        if hook.dialect == "json":
            return hook.compiled_matcher is None or matcher_fires(
                hook.compiled_matcher, tool=tool, args=args
            )
        if not toml_match_fires(hook.match, tool):
            return False
        return hook.compiled_if is None or rule_applies(
            hook.compiled_if, tool=tool, args=args, workspace=self.workspace
        )

    # -- background ---------------------------------------------------------------------------
    def _queue(
        self, event: str, ev: EventBase, fields: dict[str, Any], hooks: Sequence[Hook]
    ) -> bool:
        matching = tuple(h for h in hooks if self._passes_filters(h, event, fields))
        if not matching:
            return False
        fields = {**fields, "event": event}
        payload = encode_payload(fields)
        accepted = self.post_worker.offer(
            event=event, session_id=ev.session_id, payload=payload, hook_count=len(matching)
        )
        if accepted:
            self._pending[self.post_worker.last_seq] = matching
        return accepted

    async def _run_background(self, item: BackgroundItem) -> None:
        hooks = self._pending.pop(item.seq, ())
        fields: dict[str, Any] = msgspec.json.decode(item.payload)
        for hook in hooks:
            result = await self._run_hook(hook, item.event, fields)
            if result.outcome in _FAILED:
                log.warning("background hook %s failed: %s", hook.name, failure_text(result))
            self._after_run(hook, item.event, None, result, fields=fields)

    def _falling_behind(self, text: str) -> None:
        log.warning("%s", text)
        self.emit("falling_behind", message=text)

    def _dropped(self, item: BackgroundItem, reason: str) -> None:
        self._pending.pop(item.seq, None)
        self.emit(
            "dropped",
            event=item.event,
            session=item.session_id,
            hooks=item.hook_count,
            reason=reason,
        )

    # -- running one hook ---------------------------------------------------------------------
    async def _run_hook(self, hook: Hook, event: str, fields: Mapping[str, Any]) -> RunResult:
        self.emit("hook_started", event=event, hook=hook.name)
        with hook_span(event, hook.id, hook.dialect) as span:
            result = await self._run_handler(hook, event, fields)
            end_run(
                span,
                outcome=result.outcome,
                duration_ms=result.duration_ms,
                output_bytes=result.stdout_bytes + result.stderr_bytes,
            )
        self.emit(
            "hook_finished",
            event=event,
            hook=hook.name,
            outcome=result.outcome,
            exit_code=result.exit_code,
            duration_ms=result.duration_ms,
        )
        return result

    async def _run_handler(self, hook: Hook, event: str, fields: Mapping[str, Any]) -> RunResult:
        handler = hook.handler
        try:
            if isinstance(handler, PythonHandler):
                return await self._run_python(hook, handler, fields)
            if hook.dialect == "json":
                return await self._run_json(hook, event, fields)
            if isinstance(handler, CommandHandler | ArgsHandler):
                argv = (
                    ("bash", "-c", handler.command)
                    if isinstance(handler, CommandHandler)
                    else handler.args
                )
                spec = ProcessSpec(
                    argv=tuple(argv),
                    cwd=self._cwd(fields),
                    stdin=_encoder.encode({**fields, "event": event}),
                    timeout_s=hook.timeout_s,
                    output_cap=TOML_OUTPUT_CAP,
                    overflow="truncate",
                    label=hook.name,
                )
                return read_toml_reply(await self.reaper.run(spec))
            if isinstance(handler, HttpHandler):
                return await self._run_http(hook, handler, event, fields)
            return await self._run_prompt(hook, handler, event, fields)
        except Exception as exc:  # a bug in our own running code fails this hook only
            log.exception("internal error running hook %s", hook.name)
            return RunResult(outcome="error", error=f"internal error: {exc!r}")

    def _cwd(self, fields: Mapping[str, Any]) -> str:
        return self.workspace or str(fields.get("workspace") or "") or os.getcwd()

    async def _run_python(
        self, hook: Hook, handler: PythonHandler, fields: Mapping[str, Any]
    ) -> RunResult:
        start = time.perf_counter()
        reply: Any = None
        with trio.move_on_after(hook.timeout_s) as cs:
            try:
                reply = await handler.func(fields)
            except Exception as exc:
                return RunResult(
                    outcome="error",
                    error=f"python hook raised {exc!r}",
                    duration_ms=(time.perf_counter() - start) * 1000,
                )
        ms = (time.perf_counter() - start) * 1000
        if cs.cancelled_caught:
            return RunResult(
                outcome="timeout", error=f"timed out after {hook.timeout_s:g} s", duration_ms=ms
            )
        if reply is None:
            return RunResult(outcome="ok", duration_ms=ms)
        text = reply if isinstance(reply, str) else _encoder.encode(reply).decode()
        return msgspec.structs.replace(parse_toml_stdout(text), duration_ms=ms)

    async def _run_json(self, hook: Hook, event: str, fields: Mapping[str, Any]) -> RunResult:
        assert isinstance(hook.handler, CommandHandler)
        name = (
            hook.config_event
            if hook.config_event in JSON_NAMES.values()
            else JSON_NAMES.get(event, event)
        )
        turn_id = fields.get("turn_id") or fields.get("prompt_id")
        session_id = str(fields.get("session_id") or "")
        payload = json_payload(
            event_name=name,
            hook_id=hook.id,
            session_id=session_id,
            turn_id=turn_id,
            data=_json_data(event, fields),
        )
        tool_event = EVENTS[event].tool_event
        with private_payload_file(payload) as path:
            env = json_hook_environment(
                base_env=os.environ,
                hook_id=hook.id,
                event_name=name,
                session_id=session_id,
                turn_id=turn_id,
                tool_name=str(fields.get("tool") or "") if tool_event else None,
                tool_call_id=fields.get("tool_call_id") if tool_event else None,
                payload_json=payload.decode(),
                payload_path=path,
                spec_env=hook.env,
            )
            spec = ProcessSpec(
                argv=("bash", "-c", hook.handler.command),
                cwd=self._cwd(fields),
                env=env,
                stdin=b"",
                timeout_s=hook.timeout_s,
                output_cap=JSON_OUTPUT_CAP,
                overflow="error",
                label=hook.name,
            )
            return read_json_reply(await self.reaper.run(spec))

    async def _run_http(
        self, hook: Hook, handler: HttpHandler, event: str, fields: Mapping[str, Any]
    ) -> RunResult:
        if self.http is None:
            return RunResult(outcome="error", error="http hooks are not available")
        headers = expand_headers(handler.headers, handler.allowed_env_vars, os.environ)
        if not any(name.lower() == "content-type" for name in headers):
            headers["Content-Type"] = "application/json"
        reply = await self.http.post(
            handler.url,
            body=_encoder.encode({**fields, "event": event}),
            headers=headers,
            timeout_s=hook.timeout_s,
            cap=TOML_OUTPUT_CAP,
        )
        if reply.status != "ok":
            return RunResult(
                outcome="timeout" if reply.status == "timeout" else "error",
                error=reply.error,
                duration_ms=reply.duration_ms,
                exit_code=reply.status_code,
            )
        parsed = parse_toml_stdout(reply.body)
        return msgspec.structs.replace(
            parsed,
            duration_ms=reply.duration_ms,
            stdout_bytes=reply.body_bytes,
            truncated=reply.truncated,
            exit_code=reply.status_code,
        )

    async def _run_prompt(
        self, hook: Hook, handler: PromptHandler, event: str, fields: Mapping[str, Any]
    ) -> RunResult:
        if self.judge is None:
            return RunResult(outcome="error", error="no model is configured to judge prompt hooks")
        start = time.perf_counter()
        with trio.move_on_after(hook.timeout_s) as cs:
            try:
                reply = await self.judge(
                    handler.prompt,
                    _encoder.encode({**fields, "event": event}).decode(),
                    handler.model,
                )
            except Exception as exc:
                return RunResult(
                    outcome="error",
                    error=f"judge failed: {exc}",
                    duration_ms=(time.perf_counter() - start) * 1000,
                )
        ms = (time.perf_counter() - start) * 1000
        if cs.cancelled_caught:
            return RunResult(
                outcome="timeout",
                error=f"judge timed out after {hook.timeout_s:g} s",
                duration_ms=ms,
            )
        text = reply.text.strip()
        if not text.startswith("{"):
            read = RunResult(outcome="error", error=f"judge answered no JSON: {text[:80]!r}")
        else:
            read = parse_toml_stdout(text)
        return msgspec.structs.replace(
            read,
            duration_ms=ms,
            input_tokens=reply.input_tokens,
            output_tokens=reply.output_tokens,
        )

    # -- audit --------------------------------------------------------------------------------
    def record(self, record: AuditRecord) -> None:
        """Send one audit record to the sink (never waits) and to the listeners."""
        if self.audit is not None:
            self.audit.submit(record)
        if self.listeners:
            self.emit("audit", record=record)

    def _after_run(
        self,
        hook: Hook,
        event: str,
        ev: EventBase | None,
        result: RunResult,
        *,
        fields: Mapping[str, Any] | None = None,
    ) -> None:
        if self.audit is None and not self.listeners:
            return
        decision: str | None = None
        if result.outcome in _FAILED:
            decision = "error"
        elif result.outcome == "block" or result.decision in ("block", "deny"):
            decision = "hook-deny" if event == "permission_request" else "block"
        elif result.decision == "allow" and event in ("permission_request", "pre_tool"):
            decision = "hook-allow"
        if decision is None:
            return
        session = ev.session_id if ev is not None else str((fields or {}).get("session_id", ""))
        self.record(
            AuditRecord(
                time=datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                session=session,
                kind="hook",
                event=event,
                hook=hook.id,
                decision=decision,
                error=result.error if decision == "error" else result.reason,
                duration_ms=round(result.duration_ms, 3),
                workspace=self.workspace,
            )
        )


def _json_data(event: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    """The ``data`` object of a JSON-dialect payload."""
    if EVENTS[event].tool_event:
        data: dict[str, Any] = {
            "tool_name": fields.get("tool"),
            "tool_call_id": fields.get("tool_call_id"),
            "arguments": fields.get("args") or {},
        }
        if event in ("post_tool", "post_tool_failure"):
            data["result"] = fields.get("result")
            data["error"] = fields.get("error")
            data["success"] = not fields.get("error")
        return data
    if event == "prompt_submit":
        return {"message": fields.get("prompt")}
    skip = {"event", "session_id", "turn_id"}
    return {k: v for k, v in fields.items() if k not in skip and v is not None}
