"""The dispatcher: the trio driver of the pipeline core; one Outcome out, in the caller's task.

The rules of the per-event path (which hooks run, on which arguments, how their results fold,
what is queued, held back, capped and contained) are :mod:`triohooks.combine.pipeline`'s; the
dispatcher drives them in Trio: it takes the loader's current table (read again, in a thread,
when a file changed), awaits each step's hook run through :class:`~triohooks.actors.runs.HookRuns`
(the runner interface, observed), and hands the answer's background hooks to the post worker.
The asyncio engine drives the same core on its loop (:mod:`triohooks.engine.asyncio_engine`).

An event runs in the task of whoever fired it: its cancel scope and deadline are the caller's,
and nothing else shares its fate (no event nursery: a crash elsewhere cannot cancel it). A
crash while handling one event is contained and turned into that event's result, failing
closed (:meth:`~triohooks.combine.pipeline.Pipeline.failed`); other events are untouched.

Must not: hold a rule of the pipeline (the core does), know how any kind of hook runs
(``triohooks.handlers``), spawn processes (the reaper) or do file I/O (the audit sink writes).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TypeVar

import trio

from triohooks.combine.outcome import Outcome, StopContinues
from triohooks.combine.pipeline import EventRun, Pipeline, Plan
from triohooks.config.events import EventBase
from triohooks.config.model import Hook
from triohooks.handlers.replies import RunResult
from triohooks.handlers.runner import HookInput

from .loader import Loader
from .post_worker import PostWorker
from .runs import HookRuns

log = logging.getLogger("triohooks.dispatcher")


Step = TypeVar("Step")
Result = TypeVar("Result")


async def drive(plan: Plan[Step, Result], run: Callable[[Step], Awaitable[Result]]) -> None:
    """Run ``plan`` in this task, whatever its dialect: each group's steps at once (a group of
    one in this task, no nursery), every result handed back in the group's order once the
    whole group is done. ``run`` runs one step and must not raise for a hook's failure (the
    runners turn those into results); an exception from it is our own bug and propagates (the
    event's containment answers it)."""
    while (group := plan.next_group()) is not None:
        if len(group) == 1:
            plan.add(group[0], await run(group[0]))
            continue
        for step, result in zip(group, await _at_once(group, run), strict=True):
            plan.add(step, result)


async def _at_once(group: Sequence[Step], run: Callable[[Step], Awaitable[Result]]) -> list[Result]:
    """The results of ``group``'s steps, run at once, in the group's order."""
    slots: dict[int, Result] = {}

    async def one(i: int, step: Step) -> None:
        slots[i] = await run(step)

    async with trio.open_nursery() as nursery:
        for i, step in enumerate(group):
            nursery.start_soon(one, i, step)
    return [slots[i] for i in range(len(group))]


class Dispatcher:
    """Runs events against the loader's current table. See the module docstring."""

    def __init__(
        self,
        *,
        loader: Loader,
        runs: HookRuns,
        post_worker: PostWorker,
        api_hooks: list[Hook] | None = None,
    ) -> None:
        self.loader = loader
        self.runs = runs
        self.post_worker = post_worker
        self.workspace = runs.workspace
        #: The rules, and the state they keep between events (API hooks, stop counts).
        #: ``api_hooks``: the list of hooks registered through the API to share (another
        #: project's dispatcher runs the engine's), else a new one.
        self.core = Pipeline(self.workspace, api_hooks)

    @property
    def api_hooks(self) -> list[Hook]:
        """Hooks registered through the engine API (run before the table's, in order)."""
        return self.core.api_hooks

    @property
    def stop_continues(self) -> StopContinues:
        return self.core.stop_continues

    @property
    def crashes(self) -> int:
        """Events whose handling failed in our own code (contained, failed closed)."""
        return self.core.crashes

    async def dispatch(
        self,
        ev: EventBase,
        *,
        workspace_hooks: bool = True,
        env: Mapping[str, str] | None = None,
        lane: bool = False,
    ) -> Outcome:
        """Run one event in the caller's task and return its Outcome.

        ``workspace_hooks=False``: the event comes from another project than the engine's
        (an agent's request through ``serve``): only the user's own hooks (global, extra
        configs, API) run for it, never this workspace's. ``env``: the environment of the
        session the event comes from (the relay sends the agent session's), handed to every
        hook run of the event as it is (:class:`~triohooks.handlers.runner.HookInput`); None:
        this process's. ``lane``: the event is the user's own hooks' lane of an agent's
        request (:mod:`triohooks.agents.native`), whose ``fired`` and ``outcome`` are the
        request's own: listeners hear of this run's hook runs only, so one agent call is one
        event to them (``watch``, the metrics). A checkpoint. On cancel the running hook's
        process group is killed (by the reaper, shielded and bounded) before ``Cancelled``
        propagates to the caller.
        """
        try:
            table = await self.loader.current()
            run = self.core.plan(table, ev, workspace_hooks=workspace_hooks, env=env)
            outcome = run if isinstance(run, Outcome) else await self._run_event(run, lane)
        except Exception as exc:
            outcome = self.core.failed(ev, exc)
        # Always a checkpoint, even when every hook answered without yielding (an in-process
        # one): the actors it fed (the audit sink, the post worker) get their turn.
        await trio.lowlevel.checkpoint()
        return outcome

    async def _run_event(self, run: EventRun, lane: bool) -> Outcome:
        """Drive ``run``: every step's hook through :class:`HookRuns`, in this task."""
        runs = self.runs
        if not lane:
            run.fired(runs)
        await drive(run, self._run_step)
        return run.finish(runs, self.post_worker, tell=not lane)

    def _run_step(self, step: tuple[Hook, HookInput]) -> Awaitable[RunResult]:
        return self.runs.run(*step)
