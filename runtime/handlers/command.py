"""TOML-dialect command and args hooks (blitz HK-02, HK-65): ``bash -c <command>`` or a program
run directly, fed the event JSON on stdin, read the blitz way (exit 2 blocks, JSON reply on 0).
A warm worker (``worker = true``) is fed the same JSON as its request line."""

from __future__ import annotations

from typing import Final

from triohooks.config.model import ArgsHandler, CommandHandler, Hook

from .process import ProcessSpec, Spawner
from .replies import TOML_OUTPUT_CAP, RunResult, read_toml_reply
from .runner import HookInput


class CommandRunner:
    """Runs a ``command`` / ``args`` hook through the spawner; stdout beyond the cap is cut."""

    output_cap: Final = TOML_OUTPUT_CAP

    def __init__(self, spawner: Spawner, workspace: str) -> None:
        self._spawner = spawner
        self._workspace = workspace

    async def run(self, hook: Hook, hook_input: HookInput) -> RunResult:
        handler = hook.handler
        if isinstance(handler, CommandHandler):
            argv: tuple[str, ...] = ("bash", "-c", handler.command)
        else:
            assert isinstance(handler, ArgsHandler)
            argv = tuple(handler.args)
        spec = ProcessSpec(
            argv=argv,
            cwd=hook_input.cwd(self._workspace),
            env=None if hook_input.env is None else dict(hook_input.env),
            stdin=hook_input.payload,
            timeout_s=hook.timeout_s,
            output_cap=self.output_cap,
            overflow="truncate",
            label=hook.name,
            worker=hook.worker,
            worker_key=hook.id,
        )
        return read_toml_reply(await self._spawner.run(spec))
