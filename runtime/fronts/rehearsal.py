"""What ``triohooks test`` and ``triohooks replay`` share: the hooks of a workspace, run for real
but as a rehearsal -- the config checked first (errors stop it, held-back workspace hooks are
said), then one engine with a throw-away state directory and no audit records."""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any


def check_config(args: argparse.Namespace, workspace: Path) -> None:
    """Raise :class:`~triohooks.config.model.ConfigError` for a config with errors; say on
    stderr which workspace hooks trust holds back (``--trust`` runs them)."""
    from triohooks.config.model import ConfigError
    from triohooks.config.table import held_back_summary, load_table

    table = load_table(
        workspace=workspace,
        config_dir=args.config_dir,
        extra_configs=args.configs,
        trust_override=args.trust,
    )
    if table.errors:
        raise ConfigError(table.errors)
    held = held_back_summary(table)
    if held:
        print(f"note: {held} (or run with --trust)", file=sys.stderr)


@asynccontextmanager
async def rehearsal_engine(args: argparse.Namespace, workspace: Path) -> AsyncIterator[Any]:
    """An engine on ``workspace`` with the command's config options, a temporary state
    directory and audit off: a rehearsal writes no records."""
    from triohooks.engine.hook_engine import HookEngine

    with tempfile.TemporaryDirectory(prefix="triohooks-rehearsal-") as state:
        async with HookEngine.open(
            workspace=workspace,
            config_dir=args.config_dir,
            extra_configs=args.configs,
            state_dir=Path(state),
            trust=args.trust,
            audit=False,
        ) as engine:
            yield engine
