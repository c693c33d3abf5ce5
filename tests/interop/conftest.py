"""Fixtures for driving the real Claude Code CLI against the fake Messages API.

- ``claude_bin`` (session): the pinned CLI, installed once into ``<repo>/.cache/interop/``;
  the tests that need it are skipped, with the reason, when that cannot be done (no npm,
  offline, a broken binary).
- ``fake_api``: a started :class:`~tests.interop.fake_anthropic.FakeAnthropic`, stopped after
  the test.
- ``claude_project``: a temporary project directory and a temporary ``HOME``.

Run a session with :func:`tests.interop.run_claude`. Every test module here sets
``pytestmark = pytest.mark.interop``; ``make interop`` runs just these.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.interop import (
    CLAUDE_CODE,
    ClaudeProject,
    ClaudeRun,
    installed_or_skip,
    project_and_home,
    run_claude,
)
from tests.interop.codex import codex_bin, codex_project, fake_openai  # noqa: F401
from tests.interop.copilot import copilot_bin, copilot_project, fake_copilot  # noqa: F401
from tests.interop.fake_anthropic import FakeAnthropic
from tests.interop.gemini import fake_gemini, gemini_bin, gemini_project  # noqa: F401
from tests.interop.qwen import fake_qwen, qwen_bin, qwen_project  # noqa: F401

__all__ = ["ClaudeProject", "ClaudeRun", "run_claude"]


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    return installed_or_skip(CLAUDE_CODE)


@pytest.fixture
def fake_api() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        yield fake


@pytest.fixture
def claude_project(tmp_path: Path) -> ClaudeProject:
    return ClaudeProject(*project_and_home(tmp_path))
