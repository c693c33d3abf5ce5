"""Built-in guards as hooks: each call read in process by :mod:`triohooks.match.guards`, no
spawn. A block is the guard's reason; a call the guard cannot read for sure gets its
``on_uncertain`` (block, or go on with an Outcome warning, or go on); an approval
(``approve_read_only``) is the decision ``allow``, which the fold lets any block or ask of
another hook override, marked ``approved``: the one allow an agent's answer carries
(:func:`~triohooks.combine.outcome.approved`)."""

from __future__ import annotations

import functools
import os
import time
from typing import Any

from triohooks.config.model import GuardHandler, Hook
from triohooks.config.selection import judged_in
from triohooks.match.guards import Call, Check, OnUncertain, build
from triohooks.match.ifrules import call_cwd

from .replies import RunResult
from .runner import HookInput


@functools.lru_cache(maxsize=256)
def _compiled(handler: GuardHandler) -> tuple[Check, OnUncertain]:
    return build(handler.name, dict(handler.params))


class GuardRunner:
    """Runs :class:`GuardHandler` hooks; a call is judged in the event's workspace, else the
    engine's."""

    def __init__(self, workspace: str) -> None:
        self.workspace = workspace
        self.home = os.path.expanduser("~")

    async def run(self, hook: Hook, hook_input: HookInput) -> RunResult:
        handler = hook.handler
        assert isinstance(handler, GuardHandler)
        start = time.perf_counter()
        check, on_uncertain = _compiled(handler)
        fields = hook_input.fields
        raw: Any = fields.get("args")
        args = raw if isinstance(raw, dict) else {}
        tool = str(fields.get("tool") or "")
        workspace = judged_in(fields, self.workspace)
        cwd = call_cwd(tool, args, str(fields.get("cwd") or ""), workspace)
        verdict = check(Call(tool=tool, args=args, cwd=cwd, workspace=workspace, home=self.home))
        took = (time.perf_counter() - start) * 1000
        name = handler.name
        if verdict.block:
            # "<name> guard:", not "<name>:", which a redactor reads as "secret_reads: <value>"
            reason = f"{name} guard: {verdict.block}"
            return RunResult(outcome="block", reason=reason, duration_ms=took)
        if verdict.approve:
            reason = f"{name} guard: {verdict.approve}"
            return RunResult(
                outcome="ok", decision="allow", approved=True, reason=reason, duration_ms=took
            )
        if not verdict.uncertain or on_uncertain == "allow":
            return RunResult(outcome="ok", duration_ms=took)
        why = f"{name} cannot read this call for sure: {verdict.uncertain}"
        if on_uncertain == "block":
            reason = f'{why} (on_uncertain = "block"; "warn" or "allow" lets such calls through)'
            return RunResult(outcome="block", reason=reason, duration_ms=took)
        return RunResult(outcome="ok", warning=f"{why}; let through", duration_ms=took)
