"""Whose hooks each catch-all answers for, when an agent has more than one of them.

An agent runs the hooks of every settings level: with triohooks installed at the user scope
and at a project's (the project's install may be a teammate's, committed), each event reaches
triohooks once per catch-all. Each must not run every hook, or every hook runs twice per call
(two audit records per block). So each catch-all names the scope it was installed at
(``triohooks-relay claude --timeout 15 --scope project``, an http catch-all's ``?scope=``),
and a request runs:

- the adopted hooks of its own scope (its settings file's ``triohooks-hooks.json``);
- if it *leads*: also the user's own triohooks hooks (hooks.toml, built-in guards, the
  workspace's ``.agents/``) and the adopted hooks of every level no catch-all of its own scope
  answers for. The user scope's catch-all leads where there is one for the event -- the agent
  runs user-level hooks in every project, while a project's it may skip (its own folder
  trust) -- else the project's.

A request that names no scope (a plugin's catch-all, one an older triohooks wrote, the relay
run by hand) cannot say whose hooks it answers for, so it runs them all, as before scopes:
beside a named catch-all, hooks then run twice (said in docs/agents.md; an older install's
catch-alls are reported until installed again) -- never not at all.

Which catch-alls the agent runs is read from its settings (:attr:`AgentTable.routed`), as the
agent reads them. Pure: no I/O.
"""

from __future__ import annotations

import msgspec

from .config import AgentHook, AgentTable
from .spec import scope_of_level


class Share(msgspec.Struct, frozen=True):
    """What one request from a catch-all answers for."""

    #: The scope its catch-all names (``user``, ``project``), or None (it names none).
    scope: str | None
    #: It runs the user's own triohooks hooks, and the levels no catch-all answers for.
    leads: bool
    #: The scopes whose own catch-all answers for their hooks (not this one).
    others: frozenset[str]

    def covers(self, hook: AgentHook) -> bool:
        """Whether this request runs ``hook`` (or says it is held back)."""
        scope = scope_of_level(hook.level)
        return scope == self.scope or (self.leads and scope not in self.others)


#: A request that answers for everything (an embedder's ``agent_hook``, a catch-all that names
#: no scope).
EVERYTHING = Share(scope=None, leads=True, others=frozenset())


def share_of(table: AgentTable, event: str, scope: str | None) -> Share:
    """What the request of the catch-all naming ``scope`` answers for, for ``event``."""
    if scope is None:
        return EVERYTHING
    routed = {s for e, s in table.routed if e == event}
    leads = scope == "user" or "user" not in routed
    return Share(scope=scope, leads=leads, others=frozenset(routed - {scope}))
