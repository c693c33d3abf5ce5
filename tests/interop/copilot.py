"""Driving the real Copilot CLI headless and offline, against :mod:`tests.interop.fake_openai`.

- :data:`COPILOT`: the pinned ``@github/copilot`` through
  :func:`tests.interop.install_npm_cli` (into ``<repo>/.cache/interop/``);
- :func:`copilot_env`: the environment that keeps it offline: its model provider is the fake
  (``COPILOT_PROVIDER_BASE_URL``, Responses API), no GitHub login, ``HOME`` a temporary dir;
- :class:`CopilotProject`: a project directory and its ``HOME``, with writers for the user's
  hooks files (``~/.copilot/hooks/*.json``) and the repository's (``.github/hooks/*.json``);
- :func:`run_copilot`: one ``copilot -p PROMPT --allow-all-tools`` session, bounded in time;
- fixtures ``copilot_bin`` (session; skipped, saying why, when the CLI cannot be had),
  ``fake_copilot`` and ``copilot_project``, which ``conftest.py`` imports.

Setup facts (Copilot CLI 1.0.102): the npm package is a loader of a native binary that unpacks
itself under ``$HOME/.cache/copilot`` on first run. Its shell tool is ``bash``
(``{"command": ...}``); hooks get camelCase input (``toolName``, ``toolArgs`` as an object) and
``COPILOT_PROJECT_DIR``. User hooks (``~/.copilot/hooks``) run in ``-p`` mode; repository hooks
only with ``GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS=true``. A denied call shows the model
``Denied by preToolUse hook: <reason>``.
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
    CACHE_DIR,
    NpmCli,
    claude_env,
    installed_or_skip,
    project_and_home,
    run_bounded,
)
from tests.interop.fake_openai import FakeOpenAI, FunctionCall

__all__ = [
    "COPILOT",
    "COPILOT_VERSION",
    "CopilotProject",
    "CopilotRun",
    "copilot_bin",
    "copilot_env",
    "copilot_project",
    "fake_copilot",
    "run_copilot",
]

COPILOT_VERSION = "1.0.102"
COPILOT = NpmCli("Copilot CLI", "@github/copilot", COPILOT_VERSION, "copilot")
#: Copilot CLI's shell tool, as offered in a request's ``tools``.
SHELL_TOOL = "bash"
_STRIPPED_PREFIXES = ("COPILOT_", "GITHUB_", "GH_", "OPENAI_")
_CLAUDE_ONLY = ("ANTHROPIC_API_KEY", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "IS_SANDBOX")


def shell_call(command: str) -> FunctionCall:
    """A call of Copilot CLI's shell tool."""
    return FunctionCall(SHELL_TOOL, {"command": command, "description": "scripted call"})


def copilot_env(api_url: str | None, home: Path, **extra: str) -> dict[str, str]:
    """The environment for one offline Copilot CLI session: :func:`claude_env`'s (the caller's
    minus whatever points elsewhere, ``HOME`` under ``home``) minus ``COPILOT_*``, ``GITHUB_*``
    and tokens, with the fake as its model provider (``<api_url>/v1``)."""
    env = {
        k: v
        for k, v in claude_env(None, home).items()
        if not k.upper().startswith(_STRIPPED_PREFIXES) and k not in _CLAUDE_ONLY
    }
    env.update(
        # Where the binary unpacks itself (235 MB): once for every session, not per HOME.
        XDG_CACHE_HOME=str(CACHE_DIR / "copilot-home-cache"),
        COPILOT_PROVIDER_API_KEY="fake-copilot-key",
        COPILOT_PROVIDER_WIRE_API="responses",
        COPILOT_MODEL="gpt-fake",
    )
    if api_url is not None:
        env["COPILOT_PROVIDER_BASE_URL"] = f"{api_url}/v1"
    env.update(extra)
    return env


@dataclass(frozen=True)
class CopilotProject:
    """A project directory for one session and the ``HOME`` Copilot CLI gets (both resolved)."""

    path: Path
    home: Path

    @property
    def user_hooks_dir(self) -> Path:
        return self.home / ".copilot" / "hooks"

    @property
    def repo_hooks_dir(self) -> Path:
        return self.path / ".github" / "hooks"

    def write_hooks(self, hooks: Mapping[str, Any], *, name: str, repo: bool = False) -> Path:
        """Write ``{"version": 1, "hooks": hooks}`` as the hooks file ``name`` of the user
        (or of the repository)."""
        target = (self.repo_hooks_dir if repo else self.user_hooks_dir) / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps({"version": 1, "hooks": hooks}, indent=2))
        return target


class CopilotRun(NamedTuple):
    """One finished ``copilot -p`` session (its output is text)."""

    process: subprocess.CompletedProcess[str]


def run_copilot(
    copilot_bin: Path,
    project: CopilotProject,
    fake: FakeOpenAI,
    prompt: str = "Run the scripted commands.",
    timeout: float = 90,
    *,
    env: Mapping[str, str] | None = None,
) -> CopilotRun:
    """One headless session in ``project``: ``copilot -p PROMPT --allow-all-tools
    --allow-all-paths``. ``env`` adds to :func:`copilot_env`. Raises
    ``subprocess.TimeoutExpired`` (its process group killed) past ``timeout`` seconds."""
    argv = [str(copilot_bin), "-p", prompt, "--allow-all-tools", "--allow-all-paths"]
    process = run_bounded(
        argv,
        timeout=timeout,
        cwd=project.path,
        env=copilot_env(fake.url, project.home, **(env or {})),
    )
    return CopilotRun(process)


@pytest.fixture(scope="session")
def copilot_bin() -> Path:
    return installed_or_skip(COPILOT)


@pytest.fixture
def fake_copilot() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(shell_tool=SHELL_TOOL, call_of=shell_call) as fake:
        yield fake


@pytest.fixture
def copilot_project(tmp_path: Path) -> CopilotProject:
    return CopilotProject(*project_and_home(tmp_path))
