"""The one interface every kind of hook runs behind, and the table that picks a runner per hook.

A runner takes a :class:`~triohooks.config.model.Hook` and the event as that hook should see it
(:class:`HookInput`) and returns one :class:`~triohooks.handlers.replies.RunResult`, read the way
the hook's dialect reads it. Callers (the pipeline's drivers for synchronous hooks: the trio
dispatcher, the asyncio engine; the post worker for background ones) know nothing of how a
command, an HTTP endpoint, a judge or a Python callable is run: :meth:`Runners.for_hook`
chooses by the hook's dialect and handler type.

Runners must not combine results, apply ``fail_closed`` / ``on_error`` (``triohooks.combine``
does), audit, or start processes themselves (a :class:`~triohooks.handlers.process.Spawner` does).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any, Final, Protocol

import msgspec

from triohooks.config.model import Hook

from .replies import RunResult

log = logging.getLogger("triohooks.handlers")

_encoder: Final = msgspec.json.Encoder()


class HookInput:
    """The event as one hook run reads it: its fields as a dict and as the JSON bytes of
    ``{**fields, "event": event}``, each made once, on first use, from the other; and the
    environment its process gets.

    A synchronous event gives ``fields`` (the arguments as rewritten so far); a background event
    gives ``payload``, the bytes encoded when it was fired (docs/design.md §6), so a command hook is
    fed them as they are and only a runner that needs a dict decodes them. Given both, neither
    is made from the other: an agent's input (:class:`~triohooks.agents.plan.AgentRow`) has
    its bytes as the agent sent them, which its hooks get verbatim, and its fields as the agent
    runner reads them (under Claude Code's names), decoded once. Treat both as read-only.

    ``env``: the environment of the session the event comes from (an agent's, which the relay
    sends to ``serve``), the whole of what a hook process gets, and what an http hook's headers
    expand from; None: this process's own (``os.environ``, read at the run). The dialect adds
    its variables on top (the JSON dialect's ``EVERRUNS_HOOK_*``), nothing else is mixed in.
    """

    __slots__ = ("_fields", "_payload", "env", "event", "session_id")

    def __init__(
        self,
        event: str,
        session_id: str,
        *,
        fields: Mapping[str, Any] | None = None,
        payload: bytes | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        if fields is None and payload is None:
            raise ValueError("HookInput needs fields or payload")
        self.event = event
        self.session_id = session_id
        self.env = env
        self._fields = fields
        self._payload = payload

    def environment(self) -> Mapping[str, str]:
        """The variables the hook's process gets (or its headers expand from): the session's
        (``env``), else this process's."""
        return os.environ if self.env is None else self.env

    @property
    def fields(self) -> Mapping[str, Any]:
        if self._fields is None:
            assert self._payload is not None
            decoded: dict[str, Any] = msgspec.json.decode(self._payload)
            self._fields = decoded
        return self._fields

    @property
    def payload(self) -> bytes:
        """The event JSON (``event`` set to this event's name)."""
        if self._payload is None:
            assert self._fields is not None
            self._payload = _encoder.encode({**self._fields, "event": self.event})
        return self._payload

    def cwd(self, workspace: str) -> str:
        """Where a hook process runs: the event's workspace (the project the agent works in;
        the engine's unless the caller named another), else the engine's, else ours."""
        return str(self.fields.get("workspace") or "") or workspace or os.getcwd()


class Runner(Protocol):
    """Runs one hook for one event. A checkpoint; on cancel whatever the run started is
    stopped (a process group killed) before ``Cancelled`` propagates."""

    async def run(self, hook: Hook, hook_input: HookInput) -> RunResult: ...


class Runners:
    """Picks the runner of each hook: by ``(dialect, handler type)``, else by handler type.

    :meth:`run` is a :class:`Runner` itself; a bug in a runner (or the process guard under it)
    fails that one hook as an *internal* error (outcome ``error``, "internal error: ...",
    ``internal``): the combining blocks a blocking event for it, whatever the hook's own
    failure rule, and warns on one that cannot block. It never raises into the event.
    """

    def __init__(self) -> None:
        self._by_dialect: dict[tuple[str, type], Runner] = {}
        self._by_handler: dict[type, Runner] = {}

    def register(self, handler: type, runner: Runner, *, dialect: str | None = None) -> None:
        if dialect is None:
            self._by_handler[handler] = runner
        else:
            self._by_dialect[(dialect, handler)] = runner

    def for_hook(self, hook: Hook) -> Runner:
        kind = type(hook.handler)
        runner = self._by_dialect.get((hook.dialect, kind)) or self._by_handler.get(kind)
        if runner is None:
            raise LookupError(f"no runner for a {hook.dialect} {kind.__name__} hook")
        return runner

    async def run(self, hook: Hook, hook_input: HookInput) -> RunResult:
        try:
            return await self.for_hook(hook).run(hook, hook_input)
        except Exception as exc:  # a bug in our own running code: fails closed (combine)
            log.exception("internal error running hook %s", hook.name)
            return RunResult(outcome="error", error=f"internal error: {exc!r}", internal=True)
