"""Driving the real Gemini CLI headless and offline, against :mod:`tests.interop.fake_gemini`.

- :data:`GEMINI` is the pinned CLI (an :class:`~tests.interop.NpmCli`); :func:`install_gemini`
  puts it in ``<repo>/.cache/interop/`` once;
- :func:`gemini_env` is the environment that keeps it offline and on the fake, and writes the
  user settings ``-p`` needs into ``$HOME/.gemini/settings.json``;
- :func:`run_gemini` runs one ``gemini -p PROMPT --yolo -o json`` session, bounded in time, and
  parses its output;
- the pytest fixtures ``gemini_bin`` (session; skipped with the reason when the CLI cannot be
  had), ``fake_gemini`` and ``gemini_project`` (conftest.py imports them).

Setup facts (Gemini CLI 0.61.0): ``GOOGLE_GEMINI_BASE_URL`` + ``GEMINI_API_KEY`` alone make
``-p`` exit with "Invalid auth method selected": the user settings must also say
``security.auth.selectedType = "gemini-api-key"``. Settings hooks (project, user and system
alike) run only in a trusted folder: ``GEMINI_CLI_TRUST_WORKSPACE=true`` trusts it. A project
directory equal to ``HOME`` has no project settings (Gemini CLI reads ``~/.gemini`` as the
user's), so keep them apart.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from tests.interop import (
    CACHE_DIR,
    NpmCli,
    claude_env,
    install_npm_cli,
    installed_or_skip,
    project_and_home,
    run_bounded,
)
from tests.interop.fake_gemini import FakeGemini

__all__ = [
    "GEMINI",
    "GEMINI_VERSION",
    "GeminiProject",
    "GeminiRun",
    "USER_SETTINGS",
    "fake_gemini",
    "gemini_bin",
    "gemini_env",
    "gemini_project",
    "install_gemini",
    "run_gemini",
    "write_user_settings",
]

GEMINI_VERSION = "0.61.0"
GEMINI = NpmCli("Gemini CLI", "@google/gemini-cli", GEMINI_VERSION, "gemini")

#: What ``gemini -p`` needs in ``$HOME/.gemini/settings.json`` (the API-key auth that the fake's
#: base URL works with), and no usage statistics or update checks (nothing to reach offline).
USER_SETTINGS: dict[str, Any] = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "privacy": {"usageStatisticsEnabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
}

#: What :func:`tests.interop.claude_env` adds for Claude Code, and that a Gemini session (and
#: every hook it runs, which inherits its environment) should not see.
_CLAUDE_ONLY = ("ANTHROPIC_API_KEY", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "IS_SANDBOX")


def install_gemini(cache_dir: Path = CACHE_DIR, **kwargs: Any) -> Path:
    """:func:`~tests.interop.install_npm_cli` of the pinned Gemini CLI."""
    return install_npm_cli(GEMINI, cache_dir, **kwargs)


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def write_user_settings(home: Path, settings: Mapping[str, Any] | None = None) -> Path:
    """Write ``home/.gemini/settings.json``: what is there already, :data:`USER_SETTINGS` over
    it, then ``settings`` over that (e.g. user-level ``hooks``)."""
    target = home / ".gemini" / "settings.json"
    current: dict[str, Any] = {}
    if target.exists():
        loaded = json.loads(target.read_text() or "{}")
        current = loaded if isinstance(loaded, dict) else {}
    merged = _merge(_merge(current, USER_SETTINGS), settings or {})
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(merged, indent=2))
    return target


def gemini_env(fake_url: str | None, home: Path, **extra: str) -> dict[str, str]:
    """The environment for one offline Gemini CLI session on the fake at ``fake_url``: the
    caller's, minus anything that would point it elsewhere (``GOOGLE_*``, ``GEMINI_*``,
    proxies, ...), with ``HOME`` under ``home`` and the folder trusted; ``extra`` over that
    (``GEMINI_CLI_TRUST_WORKSPACE="false"`` makes the folder untrusted). Also writes the user
    settings ``-p`` needs (:func:`write_user_settings`)."""
    env = claude_env(None, home)
    for name in [*_CLAUDE_ONLY, *(k for k in env if k.upper().startswith("GEMINI_"))]:
        env.pop(name, None)
    env.update(
        GEMINI_API_KEY="fake-gemini-key",
        GEMINI_CLI_TRUST_WORKSPACE="true",
        NO_BROWSER="true",
    )
    if fake_url is not None:
        env["GOOGLE_GEMINI_BASE_URL"] = fake_url
    env.update(extra)
    write_user_settings(home)
    return env


class GeminiRun(NamedTuple):
    """One finished ``gemini -p`` session: the process and its parsed ``-o json`` output
    (``{"session_id", "response", "stats", ["error"], ["warnings"]}``; None when stdout was
    not one JSON object)."""

    process: subprocess.CompletedProcess[str]
    output: dict[str, Any] | None


def run_gemini(
    gemini_bin: Path,
    project: Path,
    home: Path,
    fake: FakeGemini,
    prompt: str = "Run the scripted commands.",
    timeout: float = 60,
    *,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> GeminiRun:
    """One headless session in ``project`` (where ``.gemini/settings.json`` may hold hooks):
    ``gemini -p PROMPT --yolo -o json``. ``env`` adds to :func:`gemini_env`. Raises
    ``subprocess.TimeoutExpired`` (its process group killed) if it runs over ``timeout``
    seconds."""
    argv = [str(gemini_bin), "-p", prompt, "--yolo", "-o", "json", *args]
    process = run_bounded(
        argv, timeout=timeout, cwd=project, env=gemini_env(fake.url, home, **(env or {}))
    )
    try:
        output = json.loads(process.stdout)
    except ValueError:
        output = None
    return GeminiRun(process, output if isinstance(output, dict) else None)


@dataclass(frozen=True)
class GeminiProject:
    """A project directory for one session and the ``HOME`` the CLI gets."""

    path: Path
    home: Path

    def write_settings(self, settings: Mapping[str, Any]) -> Path:
        """Write the project's ``.gemini/settings.json``."""
        target = self.path / ".gemini" / "settings.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(settings, indent=2))
        return target

    def write_hooks(self, hooks: Mapping[str, Any]) -> Path:
        return self.write_settings({"hooks": hooks})

    def write_user_settings(self, settings: Mapping[str, Any]) -> Path:
        """Merge ``settings`` into ``$HOME/.gemini/settings.json`` (see
        :func:`write_user_settings`)."""
        return write_user_settings(self.home, settings)


# --- fixtures (conftest.py imports them) ---------------------------------------------------------


@pytest.fixture(scope="session")
def gemini_bin() -> Path:
    return installed_or_skip(GEMINI)


@pytest.fixture
def fake_gemini() -> Iterator[FakeGemini]:
    with FakeGemini() as fake:
        yield fake


@pytest.fixture
def gemini_project(tmp_path: Path) -> GeminiProject:
    return GeminiProject(*project_and_home(tmp_path))
