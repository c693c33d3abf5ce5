"""Routing that follows the hooks (docs/agents.md, "Routing").

An install routes the events :func:`.routing.routed_events` names at the time. When the hooks
change afterwards -- a hook added to ``hooks.toml``, a project trusted, a project opened for
the first time -- an installed settings file can route too little (a hook that never runs) or
too much (a round trip for nothing). :func:`installs` reads what each install of an agent
routes now, :func:`stale_installs` compares it with the rule, and :func:`reroute` writes it
again, with the install's own plan (:func:`.adopt.plan_install`), where this user's install
wrote it (it has an install record: a teammate's committed file is said, never rewritten).

It runs at each session start the agent routes to triohooks (always routed), after ``trust``
and after ``init``; ``validate`` and ``doctor`` say a routing that is stale. An agent reads its
hooks when a session starts, so what a re-route adds runs from the agent's next session: the
session's first answer says so.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from urllib.parse import urlsplit

import msgspec

from triohooks.config.paths import UnreadableFileError, read_regular_file

from . import undo
from .adopt import AdoptError, Scope, apply, plan_install
from .config import catch_alls
from .routing import Routing, own_events, stale
from .spec import AGENTS, SCOPES, SPECS, AgentName, adopted_path, levels

#: Bytes of a ``triohooks-hooks.json`` read to know the events it holds.
MAX_ADOPTED_BYTES = 8 * 1024 * 1024


class Installed(msgspec.Struct, frozen=True):
    """One install of an agent: where, what it routes, how."""

    scope: Scope
    settings: Path
    #: The agent events its catch-alls route now.
    routed: tuple[str, ...]
    #: The events of the hooks it moved into ``triohooks-hooks.json`` (None: unreadable).
    adopted: tuple[str, ...] | None
    transport: str
    port: int | None
    #: This user's install wrote it (an install record holds it): a re-route may write it.
    recorded: bool


def installs(
    agent: AgentName, *, home: Path, project: Path | None, config_dir: Path
) -> list[Installed]:
    """Each scope's install of ``agent`` (its ``triohooks-hooks.json`` is beside the settings
    file), with what its catch-alls route."""
    try:
        records = undo.read_records(config_dir)
    except undo.RecordsError:
        records = {}
    ours = catch_alls(agent, project, home)
    found = []
    for level in levels(agent, project, home):
        if level.name not in SCOPES or (level.project and project is None):
            continue
        moved = adopted_path(agent, level.path)
        if not moved.exists():
            continue
        mine = [h for h in ours if h.source == str(level.path)]
        http = next((h for h in mine if h.type == "http" and h.url), None)
        port = urlsplit(http.url).port if http is not None and http.url else None
        found.append(
            Installed(
                scope="user" if level.name == "user" else "project",
                settings=level.path,
                routed=tuple(dict.fromkeys(h.event for h in mine)),
                adopted=_adopted_events(moved),
                transport="http" if http is not None else "relay",
                port=port,
                recorded=bool(records.get(str(level.path))),
            )
        )
    return found


def _adopted_events(path: Path) -> tuple[str, ...] | None:
    try:
        doc = json.loads(read_regular_file(path, MAX_ADOPTED_BYTES))
    except (OSError, UnreadableFileError, ValueError):
        return None
    return tuple(doc) if isinstance(doc, dict) else None


def stale_installs(
    agent: AgentName, *, home: Path, project: Path | None, config_dir: Path
) -> list[tuple[Installed, Routing]]:
    """Each install of ``agent`` whose routing is not what the rule says now."""
    out = []
    for inst in installs(agent, home=home, project=project, config_dir=config_dir):
        if inst.adopted is None:
            continue  # its triohooks-hooks.json cannot be read: the tamper alarm says it
        own = own_events(config_dir, scope=inst.scope, project=project)
        routing = stale(agent, inst.routed, dict.fromkeys(inst.adopted), own, inst.scope)
        if routing.is_stale:
            out.append((inst, routing))
    return out


def reroute(
    agent: AgentName,
    *,
    home: Path,
    project: Path | None,
    config_dir: Path,
    relay_script: str | None = None,
) -> list[str]:
    """Route ``agent``'s installs again where their routing is stale and this user's install
    wrote them; what was done or could not be, one line each, for the user. ``relay_script``:
    the relay a user-scope catch-all runs (default: this installation's)."""
    if relay_script is None:  # where this installation's relay is (found, not imported)
        found = importlib.util.find_spec("triohooks.fronts.relay")
        assert found is not None and found.origin is not None
        relay_script = str(Path(found.origin).resolve())
    display = SPECS[agent].display
    said = []
    for inst, routing in stale_installs(agent, home=home, project=project, config_dir=config_dir):
        where = str(inst.settings)
        again = f"`triohooks {agent} install --scope {inst.scope}`"
        if not inst.recorded:
            said.append(routing.said(agent, where, inst.scope))
            continue
        try:
            plan = plan_install(
                agent,
                inst.scope,
                home=home,
                project=project if project is not None else home,  # (user scope: unused)
                transport="http" if inst.transport == "http" else "relay",
                port=inst.port or 0,
                relay_script=relay_script,
                config_dir=config_dir,
            )
            apply(plan)
        except (AdoptError, OSError) as exc:
            said.append(
                f"{where}: routing is stale and could not be written again ({exc}); run {again}"
            )
            continue
        parts = []
        if routing.missing:
            parts.append(
                f"now routes {', '.join(routing.missing)} (a hook handles it since): "
                f"{display} runs it from its next session"
            )
        if routing.extra:
            parts.append(f"no longer routes {', '.join(routing.extra)} (no hook handles it)")
        said.append(f"triohooks routed {display} again in {where}: {'; '.join(parts)}")
    return said


def reroute_every_agent(*, home: Path, project: Path | None, config_dir: Path) -> list[str]:
    """:func:`reroute` for every agent (after a change to triohooks' own hooks: ``init``,
    ``trust``)."""
    return [
        line
        for agent in AGENTS
        for line in reroute(agent, home=home, project=project, config_dir=config_dir)
    ]
