"""Which hooks of a table can run for an event: the filters (TOML ``match`` and ``if``, JSON
matchers) and the "nothing runs" test, as pure functions of a table snapshot.

The pipeline core (:mod:`triohooks.combine.pipeline`, which both engines drive) filters every
hook through these, and asks :func:`skips` for its fast path. This module imports no event
loop, HTTP client or tracer (the shell parser for ``if`` rules loads only when a rule has a
script to read). It must not run
hooks, read files or decide what a reply means.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from triohooks.match.ifrules import rule_applies
from triohooks.match.matchers import matcher_fires, toml_match_fires

from .events import EVENTS, EventBase
from .model import Hook, HookTable


def event_name(ev: EventBase) -> str:
    """The canonical name of the event ``ev`` is (its Struct tag)."""
    event = type(ev).__struct_config__.tag
    assert isinstance(event, str)
    return event


def hooks_for(table: HookTable, api_hooks: Sequence[Hook], event: str) -> tuple[Hook, ...]:
    """The hooks configured for ``event``, in run order: the system tier's first (nothing
    runs before them), then the API-registered ones, then the rest of the table's."""
    table_hooks = table.for_event(event)
    if not api_hooks:
        return table_hooks
    api = [h for h in api_hooks if h.event == event]
    if not api:
        return table_hooks
    first = 0
    while first < len(table_hooks) and table_hooks[first].scope == "system":
        first += 1
    return (*table_hooks[:first], *api, *table_hooks[first:])


def user_trusted(hooks: tuple[Hook, ...]) -> tuple[Hook, ...]:
    """``hooks`` without the workspace's own: those an event from another project gets."""
    return tuple(h for h in hooks if h.scope != "workspace")


def judged_in(fields: Mapping[str, Any], engine_workspace: str) -> str:
    """The workspace a call is judged against (paths, "outside the workspace"): the event's
    own ``workspace``, else the engine's."""
    return str(fields.get("workspace") or engine_workspace)


def extra_for(
    table: HookTable, api_hooks: Sequence[Hook], event: str, ev: EventBase
) -> tuple[Hook, ...]:
    """The post_tool_failure hooks a failed post_tool also queues."""
    if extra_wanted(event, ev):
        return hooks_for(table, api_hooks, "post_tool_failure")
    return ()


def extra_wanted(event: str, ev: EventBase) -> bool:
    """Whether ``ev`` is a failed ``post_tool``, which fires ``post_tool_failure`` too."""
    return event == "post_tool" and bool(getattr(ev, "error", None))


def passes(hook: Hook, tool: str, args: Mapping[str, Any], workspace: str, cwd: str = "") -> bool:
    """Whether ``hook`` passes its filters for a call of ``tool`` with ``args``, made in
    ``cwd`` (the event's; else the workspace)."""
    if hook.dialect == "json":
        return hook.compiled_matcher is None or matcher_fires(
            hook.compiled_matcher, tool=tool, args=args
        )
    if not toml_match_fires(hook.match, tool):
        return False
    return hook.compiled_if is None or rule_applies(
        hook.compiled_if, tool=tool, args=args, workspace=workspace, cwd=cwd
    )


def passes_filters(hook: Hook, event: str, fields: Mapping[str, Any], workspace: str) -> bool:
    """:func:`passes` on an event's fields; every hook of a non-tool event passes."""
    if not EVENTS[event].tool_event:
        return True
    tool = str(fields.get("tool") or "")
    cwd = fields.get("cwd")
    return passes(
        hook, tool, fields.get("args") or {}, workspace, cwd if isinstance(cwd, str) else ""
    )


def any_passes(hooks: tuple[Hook, ...], event: str, ev: EventBase, workspace: str) -> bool:
    """Could any of ``hooks`` run for ``ev``? Exact for the first hook to run (nothing can
    have rewritten the arguments before it), so False means no hook runs at all."""
    if not hooks or not EVENTS[event].tool_event:
        return bool(hooks)
    tool = getattr(ev, "tool", "")
    args = getattr(ev, "args", None) or {}
    return any(passes(h, tool, args, workspace, ev.cwd) for h in hooks)


def held_back(table: HookTable, event: str, ev: EventBase, workspace: str) -> tuple[Hook, ...]:
    """The workspace hooks trust holds back (``table.untrusted``) that would have run for
    ``ev``: of its event (and, for a failed ``post_tool``, ``post_tool_failure``), passing
    their filters on the call as fired. They do not run; the event's Outcome says so."""
    if not table.untrusted:
        return ()
    events = (event, "post_tool_failure") if extra_wanted(event, ev) else (event,)
    fields = {
        "tool": getattr(ev, "tool", ""),
        "args": getattr(ev, "args", None) or {},
        "cwd": ev.cwd,
    }
    return tuple(
        h
        for h in table.untrusted
        if h.event in events and passes_filters(h, h.event, fields, workspace)
    )


def skips(
    event: str,
    ev: EventBase,
    hooks: tuple[Hook, ...],
    extra: tuple[Hook, ...],
    held: tuple[Hook, ...],
    workspace: str,
) -> bool:
    """The fast-path test: no hook can run (``extra`` being the post_tool_failure hooks of a
    failed post_tool), none is held back that would have (``held``, :func:`held_back`: its
    Outcome must say so), and the event is no ``stop`` (whose continue state is always
    settled)."""
    return (
        event != "stop"
        and not held
        and not any_passes(hooks, event, ev, workspace)
        and not any_passes(extra, "post_tool_failure", ev, workspace)
    )
