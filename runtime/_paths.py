"""Where config, trust records, tokens and audit logs live (DESIGN §3, §8)."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP = "triohooks"


def global_config_dir() -> Path:
    """``$TRIOHOOKS_CONFIG_DIR``, else the platform user config dir + ``/triohooks``."""
    env = os.environ.get("TRIOHOOKS_CONFIG_DIR")
    if env:
        return Path(env)
    return Path(platformdirs.user_config_dir(APP, appauthor=False))


def state_dir() -> Path:
    """``$TRIOHOOKS_STATE_DIR``, else the platform user state dir."""
    env = os.environ.get("TRIOHOOKS_STATE_DIR")
    if env:
        return Path(env)
    return Path(platformdirs.user_state_dir(APP, appauthor=False))


def workspace_config_files(workspace: Path) -> tuple[Path, Path]:
    """The workspace scope's two files: ``.agents/hooks.toml`` and ``.agents/hooks.json``."""
    agents = workspace / ".agents"
    return agents / "hooks.toml", agents / "hooks.json"


def global_config_files(config_dir: Path) -> tuple[Path, Path]:
    return config_dir / "hooks.toml", config_dir / "hooks.json"


def private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) with mode 0700 and return it."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path
