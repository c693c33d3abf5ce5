"""Each real agent CLI's reading of its own hooks' ends -- exit 0/1/2/3, a crash, a timeout, broken
JSON, plain text -- and the same hooks adopted through triohooks: the table of
:mod:`tests.interop.hook_ends`, checked against the real thing both ways.

For a tool-call event one session scripts one shell call per case, and one hook in the user's
own settings (not adopted) acts out the case whose token the call holds; for a prompt event one
session per case, the token in the prompt. Alone, each call must run or be denied as the table
says, the model told what it says; through triohooks (``<agent> install --scope user``, the
relay and a running ``serve``) the same, or denied where the table says triohooks is stricter.
Cursor has no CLI here: its rows are pinned by ``tests/test_agent_hook_ends.py`` only.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.interop import ClaudeProject, run_claude
from tests.interop.codex import CodexProject, run_codex
from tests.interop.copilot import run_copilot
from tests.interop.gemini import GeminiProject, run_gemini
from tests.interop.hook_ends import (
    CASES,
    HOOK_TIMEOUT_S,
    TABLES,
    Reading,
    Table,
    call_command,
    dispatcher,
    prompt_of,
)
from tests.interop.qwen import QwenProject, run_qwen
from tests.interop.test_claude_code_triohooks import Triohooks, serving

pytestmark = pytest.mark.interop

SESSION_TIMEOUT = 180.0


@dataclass(frozen=True)
class Seen:
    """What one session did: the text the model got for each scripted call that has one (in
    order), and how many turns the model was asked for."""

    outputs: list[str]
    turns: int
    process: subprocess.CompletedProcess[str]

    def __str__(self) -> str:
        tail = (self.process.stdout[-1500:], self.process.stderr[-1500:])
        return f"outputs={self.outputs}, turns={self.turns}, exit {self.process.returncode}: {tail}"


@dataclass(frozen=True)
class Cli:
    """One real CLI, as these tests drive it: the fixtures of its binary, its project (and
    ``HOME``) and its fake model; where the user's own hook goes (``write(project, event,
    handler)``); one session (``run(binary, project, fake, prompt, extra_env)``); and the text
    its model got for each call (``outputs(fake)``)."""

    fixtures: tuple[str, str, str]
    write: Callable[[Any, str, dict[str, Any]], None]
    run: Callable[[Path, Any, Any, str, Mapping[str, str]], subprocess.CompletedProcess[str]]
    outputs: Callable[[Any], list[str]]


def _claude_settings(project: ClaudeProject, event: str, handler: dict[str, Any]) -> None:
    settings = project.home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"hooks": {event: [{"hooks": [handler]}]}}))


def _codex_hooks(project: CodexProject, event: str, handler: dict[str, Any]) -> None:
    hooks = {event: [{"hooks": [handler]}]}
    project.review(project.write_hooks(hooks), hooks)  # Codex runs reviewed hooks only


def _user_settings(
    project: GeminiProject | QwenProject, event: str, handler: dict[str, Any]
) -> None:
    project.write_user_settings({"hooks": {event: [{"hooks": [handler]}]}})


T = SESSION_TIMEOUT
CLIS: dict[str, Cli] = {
    "claude": Cli(
        ("claude_bin", "claude_project", "fake_api"),
        _claude_settings,
        lambda b, p, f, prompt, env: run_claude(b, p.path, p.home, f, prompt, T, env=env).process,
        lambda fake: [r.text for r in fake.tool_results()],
    ),
    "codex": Cli(
        ("codex_bin", "codex_project", "fake_openai"),
        _codex_hooks,
        lambda b, p, f, prompt, env: run_codex(b, p.path, p.home, f, prompt, T, env=env).process,
        lambda fake: [o.text for o in fake.tool_outputs()],
    ),
    "gemini": Cli(
        ("gemini_bin", "gemini_project", "fake_gemini"),
        _user_settings,
        lambda b, p, f, prompt, env: run_gemini(b, p.path, p.home, f, prompt, T, env=env).process,
        lambda fake: [r.text for r in fake.function_responses()],
    ),
    "qwen": Cli(
        ("qwen_bin", "qwen_project", "fake_qwen"),
        _user_settings,
        lambda b, p, f, prompt, env: run_qwen(b, p, f, prompt, T, env=env).process,
        lambda fake: [r.text for r in fake.tool_results()],
    ),
    "copilot": Cli(
        ("copilot_bin", "copilot_project", "fake_copilot"),
        lambda p, event, handler: p.write_hooks({event: [handler]}, name="triohooks.json"),
        lambda b, p, f, prompt, env: run_copilot(b, p, f, prompt, T, env=env).process,
        lambda fake: [o.text for o in fake.tool_outputs()],
    ),
}


@dataclass(frozen=True)
class Agent:
    """One agent CLI ready for a test: its name, project and ``HOME``, the writer of the
    user's own hook, and one session (``run(calls, prompt, extra_env)``)."""

    name: str
    project: Path
    home: Path
    write_hook: Callable[[str, dict[str, Any]], None]
    run: Callable[[list[str], str, Mapping[str, str]], Seen]


def _agent(name: str, request: pytest.FixtureRequest) -> Agent:
    cli = CLIS[name]
    binary, project, fake = (request.getfixturevalue(f) for f in cli.fixtures)

    def run(calls: list[str], prompt: str, env: Mapping[str, str]) -> Seen:
        fake.script(calls)
        done = cli.run(binary, project, fake, prompt, env)
        return Seen(cli.outputs(fake), len(fake.turn_requests()), done)

    return Agent(name, project.path, project.home, lambda e, h: cli.write(project, e, h), run)


def _handler(agent: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    """The dispatching hook in ``agent``'s own handler form."""
    if agent == "copilot":
        return {"type": "command", "bash": dispatcher(), "timeoutSec": HOOK_TIMEOUT_S, **fields}
    timeout = HOOK_TIMEOUT_S * 1000 if agent == "gemini" else HOOK_TIMEOUT_S
    return {"type": "command", "command": dispatcher(), "timeout": timeout, **fields}


@contextmanager
def _through(agent: Agent, how: str, tmp_path: Path) -> Iterator[Mapping[str, str]]:
    """``alone``: nothing of triohooks; ``triohooks``: the user's hooks adopted (``install
    --scope user``) with serve running (its log: ``tmp_path/serve.log``), uninstalled after.
    Yields the session's extra environment."""
    if how == "alone":
        yield {}
        return
    tri = Triohooks.create(tmp_path, agent.home)
    log = tmp_path / "serve.log"
    where = ("--scope", "user", "--workspace", str(agent.project))
    with serving(tri, agent.project, log):
        tri.state_dir.chmod(0o700)
        tri.cli(agent.name, "install", *where, cwd=agent.project)
        try:
            yield tri.claude_env()
        finally:
            tri.cli(agent.name, "uninstall", *where, cwd=agent.project)
    assert "request refused" not in log.read_text(), log.read_text()


def _expected(reading: Reading, how: str) -> bool:
    return reading.runs if how == "alone" else reading.runs_through_triohooks


def _ran(project: Path, case: str) -> bool:
    return (project / f"marker-{case}.txt").exists()


LIVE = [t for t in TABLES if t.agent in CLIS]
TOOL_TABLES = [pytest.param(t, id=t.id) for t in LIVE if t.tool_call]
PROMPT_CASES = [
    pytest.param(t, case, id=f"{t.id}-{case}") for t in LIVE if not t.tool_call for case in CASES
]
HOW = pytest.mark.parametrize("how", ["alone", "triohooks"])


@HOW
@pytest.mark.parametrize("table", TOOL_TABLES)
def test_each_end_of_a_tool_call_hook(
    table: Table, how: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    agent = _agent(table.agent, request)
    agent.write_hook(table.event, _handler(table.agent, table.fields))
    with _through(agent, how, tmp_path / "triohooks") as env:
        seen = agent.run([call_command(case) for case in CASES], prompt_of("none"), env)
    assert len(seen.outputs) == len(CASES), seen
    wrong = []
    for (case, reading), said in zip(table.readings.items(), seen.outputs, strict=True):
        ran = _ran(agent.project, case)
        if ran != _expected(reading, how):
            wrong.append(f"{case}: ran={ran}, the model got {said!r}")
        elif not ran and reading.says not in said:
            wrong.append(f"{case}: denied, but the model got {said!r}, not {reading.says!r}")
    assert not wrong, "\n".join(wrong)


@HOW
@pytest.mark.parametrize(("table", "case"), PROMPT_CASES)
def test_each_end_of_a_prompt_hook(
    table: Table, case: str, how: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    agent = _agent(table.agent, request)
    agent.write_hook(table.event, _handler(table.agent, table.fields))
    with _through(agent, how, tmp_path / "triohooks") as env:
        seen = agent.run([call_command(case)], prompt_of(case), env)
    ran = _ran(agent.project, case)
    log = tmp_path / "triohooks" / "serve.log"
    assert ran == _expected(table.readings[case], how), (
        f"{seen}\n{log.read_text() if log.exists() else ''}"
    )
    if not ran and table.agent != "copilot":  # the prompt itself was stopped: no model turn
        assert seen.turns == 0, seen
