"""How an engine opens: the one options type both engines take (``HookEngine.open(**options)``,
``AsyncioHookEngine.open(**options)``), and its defaults, in one place."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Final, TypedDict

#: Background events get this long at close before running hooks are killed (blitz HK-33).
CLOSE_DRAIN_S: Final = 5.0

PathLike = str | os.PathLike[str]


class EngineOptions(TypedDict, total=False):
    """Every key is optional; the defaults are those of :class:`Settings`."""

    #: The project the agent works in: its ``.agents/`` hooks (once trusted) and the hooks' cwd.
    #: Default: the current directory.
    workspace: PathLike | None
    #: The global config dir; default ``$TRIOHOOKS_CONFIG_DIR``, else the platform's.
    config_dir: PathLike | None
    #: More user-trusted config files (dialect by extension).
    extra_configs: Sequence[PathLike]
    #: Trust the workspace's hooks for this engine only.
    trust: bool
    #: Where audit files go; default ``$TRIOHOOKS_STATE_DIR``, else the platform's.
    state_dir: PathLike | None
    #: Write audit records (off: spans and listeners still see every run).
    audit: bool
    #: Start the host-death watchdog that kills every hook group if this process dies.
    watchdog: bool
    #: How long background events may run at close before running hooks are killed.
    drain_timeout_s: float


class Settings:
    """:class:`EngineOptions` with every default filled in."""

    __slots__ = (
        "audit",
        "config_dir",
        "drain_timeout_s",
        "extra_configs",
        "state_dir",
        "trust",
        "watchdog",
        "workspace",
    )

    def __init__(self, options: EngineOptions) -> None:
        unknown = set(options) - set(EngineOptions.__annotations__)
        if unknown:
            raise TypeError(f"unknown engine option(s): {', '.join(sorted(unknown))}")
        workspace = options.get("workspace")
        config_dir = options.get("config_dir")
        state_dir = options.get("state_dir")
        self.workspace = Path(workspace) if workspace is not None else Path.cwd()
        self.config_dir = Path(config_dir) if config_dir is not None else None
        self.extra_configs = tuple(Path(p) for p in options.get("extra_configs", ()))
        self.trust = bool(options.get("trust", False))
        self.state_dir = Path(state_dir) if state_dir is not None else None
        self.audit = bool(options.get("audit", True))
        self.watchdog = bool(options.get("watchdog", True))
        self.drain_timeout_s = float(options.get("drain_timeout_s", CLOSE_DRAIN_S))
