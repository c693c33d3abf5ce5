"""Driving the real Qwen Code CLI headless and offline, against :mod:`tests.interop.fake_anthropic`.

- :data:`QWEN`: the pinned ``@qwen-code/qwen-code`` through
  :func:`tests.interop.install_npm_cli` (into ``<repo>/.cache/interop/``);
- :func:`qwen_env`: the environment that keeps it offline: its Anthropic-compatible provider is
  the fake Messages API (``ANTHROPIC_BASE_URL``), ``HOME`` a temporary dir;
- :class:`QwenProject`: a project directory and its ``HOME``, with a writer for the user's
  settings (``~/.qwen/settings.json``);
- :func:`run_qwen`: one ``qwen --auth-type anthropic --yolo -o json PROMPT`` session, bounded;
- fixtures ``qwen_bin`` (session; skipped, saying why, when the CLI cannot be had),
  ``fake_qwen`` and ``qwen_project``, which ``conftest.py`` imports.

Setup facts (Qwen Code 0.24.4): it speaks the Messages API with ``--auth-type anthropic`` and
``ANTHROPIC_BASE_URL``/``ANTHROPIC_API_KEY``/``ANTHROPIC_MODEL``; its shell tool is
``run_shell_command`` (``{"command": ...}``); hooks are Claude Code's (settings ``hooks``, the
same input and answers) and get ``QWEN_PROJECT_DIR``. A project's ``.qwen/settings.json`` hooks
run too, headless, with its folder trust off (the default; measured with 0.24.4).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from tests.interop import (
    NpmCli,
    claude_env,
    installed_or_skip,
    project_and_home,
    run_bounded,
)
from tests.interop.fake_anthropic import FakeAnthropic, ToolCall

__all__ = [
    "QWEN",
    "QWEN_VERSION",
    "QwenProject",
    "QwenRun",
    "fake_qwen",
    "qwen_bin",
    "qwen_env",
    "qwen_project",
    "run_qwen",
]

QWEN_VERSION = "0.24.4"
QWEN = NpmCli("Qwen Code", "@qwen-code/qwen-code", QWEN_VERSION, "qwen")
#: Qwen Code's shell tool, as offered in a request's ``tools``.
SHELL_TOOL = "run_shell_command"
_STRIPPED_PREFIXES = ("QWEN_", "OPENAI_", "DASHSCOPE_")


def shell_call(command: str) -> ToolCall:
    """A call of Qwen Code's shell tool."""
    return ToolCall(SHELL_TOOL, {"command": command, "description": "scripted call"})


def qwen_env(api_url: str | None, home: Path, **extra: str) -> dict[str, str]:
    """The environment for one offline Qwen Code session: :func:`claude_env`'s (the caller's
    minus whatever points elsewhere, ``HOME`` under ``home``, ``ANTHROPIC_BASE_URL`` at the
    fake) minus ``QWEN_*``/``OPENAI_*``, with a model name."""
    env = {
        k: v
        for k, v in claude_env(api_url, home).items()
        if not k.upper().startswith(_STRIPPED_PREFIXES)
    }
    env.update(ANTHROPIC_MODEL="claude-fake", NO_BROWSER="true")
    env.update(extra)
    return env


@dataclass(frozen=True)
class QwenProject:
    """A project directory for one session and the ``HOME`` Qwen Code gets (both resolved)."""

    path: Path
    home: Path

    @property
    def user_settings(self) -> Path:
        return self.home / ".qwen" / "settings.json"

    def write_user_settings(self, settings: Mapping[str, Any]) -> Path:
        self.user_settings.parent.mkdir(parents=True, exist_ok=True)
        self.user_settings.write_text(json.dumps(settings, indent=2))
        return self.user_settings


class QwenRun(NamedTuple):
    """One finished ``qwen -o json`` session: the process and its JSON output (None when it
    printed none)."""

    process: subprocess.CompletedProcess[str]
    output: Any


def run_qwen(
    qwen_bin: Path,
    project: QwenProject,
    fake: FakeAnthropic,
    prompt: str = "Run the scripted commands.",
    timeout: float = 90,
    *,
    env: Mapping[str, str] | None = None,
) -> QwenRun:
    """One headless session in ``project``. ``env`` adds to :func:`qwen_env`. Raises
    ``subprocess.TimeoutExpired`` (its process group killed) past ``timeout`` seconds."""
    argv = [str(qwen_bin), "--auth-type", "anthropic", "--yolo", "-o", "json", prompt]
    process = run_bounded(
        argv, timeout=timeout, cwd=project.path, env=qwen_env(fake.url, project.home, **(env or {}))
    )
    try:
        output = json.loads(process.stdout)
    except ValueError:
        output = None
    return QwenRun(process, output)


@pytest.fixture(scope="session")
def qwen_bin() -> Path:
    return installed_or_skip(QWEN)


@pytest.fixture
def fake_qwen() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(shell_tool=SHELL_TOOL, call_of=shell_call) as fake:
        yield fake


@pytest.fixture
def qwen_project(tmp_path: Path) -> QwenProject:
    return QwenProject(*project_and_home(tmp_path))
