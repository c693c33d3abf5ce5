"""The runners of the built-in hook kinds, wired to one engine's spawner, http client and judge."""

from __future__ import annotations

from triohooks.config.model import (
    ArgsHandler,
    CommandHandler,
    GuardHandler,
    HttpHandler,
    PromptHandler,
    PythonHandler,
)

from .command import CommandRunner
from .guard import GuardRunner
from .http import HttpHookClient
from .http_hook import HttpRunner
from .json_command import JsonCommandRunner
from .judge import Judge
from .process import Spawner
from .prompt import PromptRunner
from .python import PythonRunner
from .runner import Runners


def builtin_runners(
    *, spawner: Spawner, http: HttpHookClient | None, judge: Judge | None, workspace: str
) -> Runners:
    """TOML command/args/http/prompt hooks, JSON-dialect bash hooks, built-in guards (both
    dialects) and in-process Python hooks."""
    runners = Runners()
    command = CommandRunner(spawner, workspace)
    runners.register(CommandHandler, command)
    runners.register(ArgsHandler, command)
    runners.register(CommandHandler, JsonCommandRunner(spawner, workspace), dialect="json")
    runners.register(HttpHandler, HttpRunner(http))
    runners.register(PromptHandler, PromptRunner(judge))
    runners.register(PythonHandler, PythonRunner())
    runners.register(GuardHandler, GuardRunner(workspace))
    return runners
