"""One guarded tool call and an agent session, on either engine (``docs/integrations.md``).

:meth:`Guards.guarded_call` is the glue every agent writes around a tool: ``pre_tool`` (blocked:
the model-facing message, the tool does not run) -> the tool, with the possibly rewritten
arguments -> ``post_tool`` (its synchronous patches to the result or error applied, background
hooks queued) -> one :class:`GuardedResult` with what the model should see and both Outcomes.
A tool that raises goes through ``post_tool_failure`` and is then re-raised, or becomes the
model-facing error, as the caller chooses.

:class:`Session` fires ``session_start`` on entry (its context is kept for the first prompt),
carries ``session_id`` and ``prompt_id`` so no call has to, fires ``prompt_submit`` per turn,
drives the stop-continue loop (:meth:`Session.stop` returns the next prompt while hooks say go
on, capped by the engine), and fires ``session_end`` on exit -- also when the body raises or is
cancelled, or ``session_start`` itself is interrupted (then shielded and bounded).

The logic is plain ``await``\\ s on the engine's own methods, so the same code serves the trio
``HookEngine`` and the ``AsyncioHookEngine``; each engine supplies only how to run a coroutine
shielded from cancellation (:meth:`Guards._shielded`).
"""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

import msgspec

if TYPE_CHECKING:
    from triohooks.combine.outcome import Outcome

#: How long session_end may take on the way out of a failed or cancelled session.
END_TIMEOUT_S: Final = 10.0

ToolFunc = Callable[[dict[str, Any]], Any]


class GuardedResult(msgspec.Struct, kw_only=True):
    """The end of one guarded tool call."""

    #: A pre_tool hook blocked it: the tool did not run, ``output`` is the block message.
    blocked: bool
    #: What the model should see: the tool's result (after post_tool patches), the block
    #: message, or (``raise_errors=False``) the tool's error text after patches.
    output: Any
    #: The arguments the tool ran with (after pre_tool rewrites); the requested ones if blocked.
    args: dict[str, Any]
    pre: Outcome
    #: None when blocked.
    post: Outcome | None = None
    #: The tool's error text after post_tool_failure patches, when it raised.
    error: str | None = None
    #: The exception the tool raised (with ``raise_errors=False``; otherwise it propagates).
    exception: BaseException | None = None


class Guards:
    """Mixed into both engines: :meth:`guarded_call` and :meth:`session`."""

    # Provided by the engine (both have these coroutine methods with these signatures).
    pre_tool: Callable[..., Awaitable[Outcome]]
    post_tool: Callable[..., Awaitable[Outcome]]
    fire: Callable[..., Awaitable[Outcome]]
    prompt_submit: Callable[..., Awaitable[Outcome]]
    session_start: Callable[..., Awaitable[Outcome]]
    session_end: Callable[..., Awaitable[Outcome]]
    stop: Callable[..., Awaitable[Outcome]]

    async def _shielded(
        self, make: Callable[[], Awaitable[Outcome]], timeout_s: float
    ) -> Outcome | None:
        """Run ``make()`` to its end even if the caller is being cancelled (bounded; None on
        timeout). This is the asyncio way; the trio engine overrides it with a shielded scope."""
        import asyncio

        loop = asyncio.get_running_loop()
        task = asyncio.ensure_future(make())
        deadline = loop.time() + timeout_s
        cancelled = False
        try:
            while True:
                try:
                    return await asyncio.wait_for(
                        asyncio.shield(task), max(0.0, deadline - loop.time())
                    )
                except asyncio.CancelledError:
                    # Cancelled again while we wait (a framework may cancel its task more
                    # than once): keep waiting, as a trio shield would; re-raise after.
                    if task.done() or loop.time() >= deadline:
                        raise
                    cancelled = True
                except TimeoutError:
                    return None
        finally:
            if cancelled and not task.cancelled():
                current = asyncio.current_task()
                if current is not None:
                    current.cancel()  # hand the swallowed cancellation back

    async def guarded_call(
        self,
        tool: str,
        args: Mapping[str, Any],
        run: ToolFunc,
        *,
        tool_call_id: str | None = None,
        raise_errors: bool = True,
        **common: Any,
    ) -> GuardedResult:
        """Guard one call of ``tool``: ``run(args)`` (sync or async) runs only if no pre_tool hook
        blocks it, with the arguments as rewritten by the hooks. ``common`` are the event's
        common fields (``session_id``, ``prompt_id``, ``cwd`` ...).

        A tool that raises: ``post_tool`` (and so ``post_tool_failure``) fires with the error
        text, then the exception
        is re-raised (``raise_errors=True``) or returned in the result with ``output`` set to
        ``"error: <text after patches>"``. Cancellation is never caught.
        """
        pre = await self.pre_tool(tool, args, tool_call_id, **common)
        if pre.blocked:
            return GuardedResult(
                blocked=True,
                output=pre.message_for_model or pre.reason or "blocked by a pre_tool hook",
                args=dict(pre.args if pre.args is not None else args),
                pre=pre,
            )
        final = dict(pre.args if pre.args is not None else args)
        try:
            value = run(final)
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:
            text = str(exc) or type(exc).__name__
            # post_tool with an error fires post_tool_failure as well (as the engine's own
            # post_tool does), so both kinds of post hook see the failure.
            post = await self.post_tool(
                tool, final, error=text, tool_call_id=tool_call_id, **common
            )
            error = post.error if post.error is not None else text
            if raise_errors:
                raise
            return GuardedResult(
                blocked=False,
                output=f"error: {error}",
                args=final,
                pre=pre,
                post=post,
                error=error,
                exception=exc,
            )
        post = await self.post_tool(tool, final, result=value, tool_call_id=tool_call_id, **common)
        return GuardedResult(
            blocked=False,
            output=post.result if post.result is not None else value,
            args=final,
            pre=pre,
            post=post,
        )

    def session(
        self, session_id: str | None = None, *, source: str = "startup", **common: Any
    ) -> Session:
        """An agent session: ``async with engine.session() as s: ...`` (see :class:`Session`)."""
        return Session(self, session_id or uuid.uuid4().hex, source=source, common=common)


class Session:
    """One agent session on an engine. Use as an async context manager."""

    def __init__(
        self, engine: Guards, session_id: str, *, source: str, common: Mapping[str, Any]
    ) -> None:
        self.engine = engine
        self.session_id = session_id
        self._source = source
        self._common = dict(common)
        #: The current turn's prompt id (set by :meth:`prompt`).
        self.prompt_id: str | None = None
        #: session_start's Outcome, and its context, handed to the first prompt.
        self.start: Outcome | None = None
        self._pending_context: str | None = None
        self.turns = 0
        self.last_stop: Outcome | None = None

    def _fields(self) -> dict[str, Any]:
        out = {**self._common, "session_id": self.session_id}
        if self.prompt_id is not None:
            out["prompt_id"] = self.prompt_id
        return out

    async def __aenter__(self) -> Session:
        try:
            self.start = await self.engine.session_start(self._source, **self._fields())
        except BaseException as exc:
            # Its hooks may have seen the start (a cancel lands while they run): the session
            # still ends, so every session_start a hook saw has its session_end. ``async
            # with`` calls no __aexit__ when __aenter__ raises, so it is done here.
            await self._end(type(exc), exc)
            raise
        self._pending_context = self.start.additional_context
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        await self._end(exc_type, exc)

    async def _end(self, exc_type: Any, exc: Any) -> None:
        reason = "exit" if exc_type is None else ("cancelled" if _is_cancel(exc) else "error")
        fields = self._fields()
        await self.engine._shielded(
            lambda: self.engine.session_end(reason, **fields), END_TIMEOUT_S
        )

    async def prompt(self, text: str, **fields: Any) -> Outcome:
        """Start a turn: a new ``prompt_id``, ``prompt_submit``. The first turn's Outcome also
        carries session_start's context (before the prompt's own)."""
        self.prompt_id = uuid.uuid4().hex
        self.turns += 1
        outcome = await self.engine.prompt_submit(text, **{**self._fields(), **fields})
        if self._pending_context:
            joined = [self._pending_context, outcome.additional_context]
            outcome.additional_context = "\n".join(c for c in joined if c)
            self._pending_context = None
        return outcome

    async def guarded_call(
        self, tool: str, args: Mapping[str, Any], run: ToolFunc, **kwargs: Any
    ) -> GuardedResult:
        """:meth:`Guards.guarded_call` with this session's ids."""
        return await self.engine.guarded_call(tool, args, run, **{**self._fields(), **kwargs})

    async def fire(
        self, event: str, payload: Mapping[str, Any] | None = None, **fields: Any
    ) -> Outcome:
        """Any event, with this session's ids."""
        return await self.engine.fire(event, {**self._fields(), **(payload or {}), **fields})

    async def stop(self, **fields: Any) -> str | None:
        """The agent is about to stop: fire ``stop``. Returns what to tell the model next when a
        hook says go on (its reason) -- send it as the next message of the *same* turn (no new
        :meth:`prompt`: the cap of continues, and ``stop_hook_active``, count per prompt) --
        else None. ``last_stop`` holds the Outcome."""
        self.last_stop = await self.engine.stop(**{**self._fields(), **fields})
        if self.last_stop.continue_:
            return self.last_stop.reason or "continue"
        return None


def _is_cancel(exc: BaseException | None) -> bool:
    if exc is None:
        return False
    name = type(exc).__name__
    return name in ("Cancelled", "CancelledError") or isinstance(exc, KeyboardInterrupt)
