"""``triohooks claude plugin``: Claude Code's own way to ship hooks, pointing at triohooks.

A Claude Code plugin is a directory with ``.claude-plugin/plugin.json`` (its name and version)
and ``hooks/hooks.json`` (hooks in the settings format), which the user installs the Claude Code
way (a marketplace, or ``claude --plugin-dir DIR``) instead of letting ``install`` rewrite a
settings file. Its hooks are the catch-alls ``install`` writes, one per Claude Code event with a
triohooks equivalent, each running the relay: ``triohooks-relay`` from PATH (a plugin is meant
to be shared; ``local``: this install's interpreter and relay, as a user-scope install writes).
Through them triohooks runs your own hooks for every event (docs/agents.md, "Your triohooks
hooks in every agent").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from .adopt import catch_all

#: The plugin's name in Claude Code (its hooks are labelled with it).
PLUGIN_NAME: Final = "triohooks"


def plugin_files(*, version: str, local: bool, relay_script: str) -> dict[str, bytes]:
    """The plugin's files, by path relative to its directory."""
    routed, _, _ = catch_all(
        "claude",
        {},
        source=f"{PLUGIN_NAME} plugin",
        scope="user" if local else "project",
        transport="relay",
        port=0,
        relay_script=relay_script,
        named=False,  # a plugin belongs to no settings level
        own=None,  # shipped to anyone: every event (its users' hooks are not known here)
    )
    manifest: dict[str, Any] = {
        "name": PLUGIN_NAME,
        "version": version,
        "description": "Runs every Claude Code hook event through triohooks: your triohooks "
        "hooks (hooks.toml, built-in guards) guard this agent too.",
    }
    hooks = {
        "description": "triohooks catch-alls: each event goes to triohooks-relay (docs/agents.md)",
        "hooks": routed,
    }
    return {
        ".claude-plugin/plugin.json": (json.dumps(manifest, indent=2) + "\n").encode(),
        "hooks/hooks.json": (json.dumps(hooks, indent=2) + "\n").encode(),
    }


def write_plugin(out: Path, files: dict[str, bytes], *, force: bool) -> list[Path]:
    """Write ``files`` under ``out``; refuses (ValueError) to overwrite without ``force``."""
    targets = [out / name for name in files]
    there = [t for t in targets if t.exists()]
    if there and not force:
        raise ValueError(f"{there[0]}: already there; nothing written (--force overwrites)")
    from triohooks.config.paths import write_file_atomic

    for target, data in zip(targets, files.values(), strict=True):
        target.parent.mkdir(parents=True, exist_ok=True)
        write_file_atomic(target, data, new_mode=0o644)
    return targets
