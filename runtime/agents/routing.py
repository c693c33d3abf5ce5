"""Which of an agent's events an install routes to triohooks (docs/agents.md, "Routing").

A catch-all costs the agent a relay round trip every time its event fires, hooks or none: a
tool call is a ``PreToolUse`` and a ``PostToolUse``, and Gemini CLI's ``PreCompress`` comes
before every model request. So an install routes only the events some hook handles:

- each event of the hooks it adopts (moved into ``triohooks-hooks.json``);
- each event that maps to a triohooks event some hook of triohooks' own config handles: the
  user's (``hooks.toml`` / ``hooks.json`` in the config dir), and each project's
  (``.agents/hooks.*``) -- for a user-scope install every project the trust store knows
  (trusted, declined or held back: held-back hooks are still answered for), for a project
  scope that project;
- the agent's session-start event, always: it is where triohooks finds a routing that no
  longer matches the hooks (a hook added since, a project seen for the first time) and routes
  again, saying so in the session's first answer (:mod:`.reroute`);
- what an event of those needs besides: the tool-call events of an agent that cannot stop a
  prompt (a refused prompt is held at its tool calls), the after-tool event of an agent that
  says a failed call there (``post_tool_failure`` hooks run from it);
- for a user-scope install, the agent's before-a-tool-call event too, always: a project the
  user has not opened yet may hold guards, and a guard held back until it is trusted must be
  able to hold the call back (ask or deny) in the very first session there.

A config that cannot be read leaves its events unknown: then every event is routed (the safe
side of not knowing). :func:`routed_events` is the one rule: the install writes it,
:func:`stale` compares an installed file against it (``validate``, ``doctor``, and the
session-start re-route).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import msgspec

from triohooks.config.table import load_table
from triohooks.config.trust import read_store

from .spec import SPECS, AgentName

#: The triohooks events whose agent events are always routed, per install scope (see the
#: module docstring).
ALWAYS: Final[dict[str | None, frozenset[str]]] = {
    "user": frozenset({"session_start", "pre_tool"}),
    "project": frozenset({"session_start"}),
    None: frozenset({"session_start"}),
}


class Routing(msgspec.Struct, frozen=True):
    """What an installed file routes against what it should."""

    #: Events that should be routed and are not (a hook there never runs).
    missing: tuple[str, ...] = ()
    #: Events routed that no hook handles (each costs a round trip for nothing).
    extra: tuple[str, ...] = ()

    @property
    def is_stale(self) -> bool:
        return bool(self.missing or self.extra)

    def said(self, agent: AgentName, where: str, scope: str) -> str:
        """One line for ``validate`` / ``doctor``."""
        parts = []
        if self.missing:
            parts.append(f"not routed though a hook handles it: {', '.join(self.missing)}")
        if self.extra:
            parts.append(f"routed though no hook handles it: {', '.join(self.extra)}")
        return (
            f"{where}: routing is stale ({'; '.join(parts)}); the agent's next session start "
            f"routes again, or run `triohooks {agent} install --scope {scope}`"
        )


def own_events(
    config_dir: Path, *, scope: str, project: Path | None = None
) -> frozenset[str] | None:
    """The triohooks events some hook of triohooks' own config handles, for an install at
    ``scope`` (module docstring): the user's config and ``project``'s, and for the user scope
    every project the trust store knows too. None when a config cannot be read (then: every
    event)."""
    events: set[str] = set()
    projects = [project] if project is not None else []
    if scope == "user":
        known = [Path(key) for key in read_store(config_dir).workspaces if "#" not in key]
        projects += [p for p in known if p != project]
    for workspace in (None, *projects):
        if workspace is not None and not workspace.is_dir():
            continue  # a project since removed: nothing of it can run
        table = load_table(workspace=workspace, config_dir=config_dir)
        if any(p.severity == "error" for p in table.problems):
            return None
        events.update(h.event for h in (*table.hooks, *table.untrusted))
    return frozenset(events)


def routed_events(
    agent: AgentName, adopted: Iterable[str], own: frozenset[str] | None, scope: str | None
) -> list[str]:
    """The agent events an install at ``scope`` routes, in order: the adopted hooks' events,
    then the agent's own events that map to a triohooks event in ``own`` (every one when
    ``own`` is None) or in :data:`ALWAYS`."""
    spec = SPECS[agent]
    mine = list(dict.fromkeys(adopted))
    wanted = set(ALWAYS.get(scope, ALWAYS[None]) | (own or frozenset()))
    if "prompt_submit" in wanted and not spec.blocks_prompts:
        # A prompt this agent cannot stop is refused at its tool calls until the next prompt.
        wanted |= {"pre_tool", "permission_request"}
    if "post_tool_failure" in wanted and "post_tool_failure" not in spec.events.values():
        wanted.add("post_tool")  # this agent tells a failed call in its after-tool event
    out = []
    for event in dict.fromkeys([*mine, *spec.events]):
        canonical = spec.events.get(event)
        if event in mine or own is None or (canonical is not None and canonical in wanted):
            out.append(event)
    return out


def stale(
    agent: AgentName,
    routed: Iterable[str],
    adopted: Mapping[str, Any] | None,
    own: frozenset[str] | None,
    scope: str,
) -> Routing:
    """An installed file's routing (``routed``: the events its catch-alls name) against the
    rule, given the hooks it adopted and triohooks' own events."""
    should = routed_events(agent, adopted or {}, own, scope)
    have = set(routed)
    return Routing(
        missing=tuple(e for e in should if e not in have),
        extra=tuple(sorted(have - set(should))),
    )
