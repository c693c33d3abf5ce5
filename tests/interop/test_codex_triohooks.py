"""The user's own Codex hooks, adopted by ``triohooks codex install`` and run by triohooks under
the real Codex 0.169.1 (``codex exec``, headless, offline, scripted by the fake Responses API)
**without** ``--dangerously-bypass-hook-trust``: install records the catch-all as reviewed the
way Codex's ``/hooks`` review does, so Codex runs it; uninstall gives the user's own review
back. Hooks are read as Codex reads them (a silent exit 2 is a failed hook), and a stopped
serve still blocks before the catch-all's timeout."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.interop import NATIVE_GUARD, PUSH_COMMANDS
from tests.interop.codex import CodexProject, CodexRun, codex_hooks_list, run_codex
from tests.interop.fake_openai import FakeOpenAI
from tests.interop.test_claude_code_triohooks import Server, Triohooks, serving

pytestmark = pytest.mark.interop

SESSION_TIMEOUT = 90.0


@pytest.fixture
def tri(tmp_path: Path, codex_project: CodexProject) -> Triohooks:
    return Triohooks.create(tmp_path, codex_project.home)


def pre_tool(command: str, **extra: Any) -> dict[str, Any]:
    return {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": command, **extra}]}
        ]
    }


@contextmanager
def adopted(
    tri: Triohooks, project: CodexProject, tmp_path: Path, *, scope: str = "user"
) -> Iterator[Server]:
    """serve running; the hooks of ``scope`` installed (default transport); uninstalled after:
    the hooks file and config.toml byte for byte as they were."""
    hooks_file = project.user_hooks_path if scope == "user" else project.project_hooks_path
    hooks_before = hooks_file.read_bytes()
    config_before = project.config_path.read_bytes()
    with serving(tri, project.path, tmp_path / "serve.log") as server:
        tri.state_dir.chmod(0o700)
        args = ["codex", "install", "--scope", scope, "--workspace", str(project.path)]
        done = tri.cli(*args, cwd=project.path)
        assert "recorded the catch-all as reviewed" in done.stderr
        try:
            yield server
        finally:
            tri.cli(
                "codex",
                "uninstall",
                "--scope",
                scope,
                "--workspace",
                str(project.path),
                cwd=project.path,
            )
    assert hooks_file.read_bytes() == hooks_before
    assert project.config_path.read_bytes() == config_before


def session(
    codex_bin: Path, project: CodexProject, fake: FakeOpenAI, tri: Triohooks, n: int = 1
) -> CodexRun:
    fake.script([f"echo marker-{k} > marker-{k}.txt" for k in range(n)])
    run = run_codex(
        codex_bin, project.path, project.home, fake, timeout=SESSION_TIMEOUT, env=tri.claude_env()
    )
    assert run.completed, (run.process.stdout[-2000:], run.process.stderr[-2000:])
    return run


def markers(project: CodexProject) -> list[str]:
    return sorted(p.name for p in project.path.glob("marker-*"))


DENY = "echo 'no pushing today' >&2; exit 2"


def test_codex_runs_the_catch_all_it_was_never_shown_and_the_guard_blocks(
    codex_bin: Path,
    codex_project: CodexProject,
    fake_openai: FakeOpenAI,
    tri: Triohooks,
    tmp_path: Path,
) -> None:
    hooks = pre_tool(DENY)
    codex_project.write_hooks(hooks)
    codex_project.review(codex_project.user_hooks_path, hooks)  # the user reviewed their guard
    with adopted(tri, codex_project, tmp_path):
        listed = codex_hooks_list(codex_bin, codex_project.path, codex_project.home)
        catch_alls = listed["hooks"]  # one per routed event: the guard's and the session start
        events = sorted(c["key"].rsplit(":", 3)[1] for c in catch_alls)  # FILE:EVENT:I:J
        assert events == ["pre_tool_use", "session_start"]
        for catch_all in catch_alls:
            assert catch_all["trustStatus"] == "trusted", catch_all  # Codex's own verdict
        session(codex_bin, codex_project, fake_openai, tri, n=2)
        outputs = [r.text for r in fake_openai.tool_outputs()]
    assert markers(codex_project) == []
    assert len(outputs) == 2
    for text in outputs:
        assert "Command blocked by PreToolUse hook: no pushing today" in text
    # Uninstalled: the user's hook is back, and so is their review of it.
    (own,) = codex_hooks_list(codex_bin, codex_project.path, codex_project.home)["hooks"]
    assert own["trustStatus"] == "trusted"


def test_a_project_install_is_run_by_codex_in_a_trusted_project(
    codex_bin: Path,
    codex_project: CodexProject,
    fake_openai: FakeOpenAI,
    tri: Triohooks,
    tmp_path: Path,
) -> None:
    codex_project.write_hooks(pre_tool(DENY), project=True)
    codex_project.trust_project()  # Codex loads a project's .codex/ only then
    with adopted(tri, codex_project, tmp_path, scope="project"):
        session(codex_bin, codex_project, fake_openai, tri)
    assert markers(codex_project) == []
    (output,) = fake_openai.tool_outputs()
    assert "no pushing today" in output.text


@pytest.mark.parametrize(
    ("script", "runs"),
    [
        ("exit 2", True),  # "exited with code 2 but did not write a blocking reason": proceeds
        ("echo why >&2; exit 3", True),  # any other exit: a failed hook, proceeds
        ("echo 'blocked on purpose' >&2; exit 2", False),
    ],
)
def test_exit_codes_are_read_as_codex_reads_them(
    codex_bin: Path,
    codex_project: CodexProject,
    fake_openai: FakeOpenAI,
    tri: Triohooks,
    tmp_path: Path,
    script: str,
    runs: bool,
) -> None:
    codex_project.write_hooks(pre_tool(script))
    with adopted(tri, codex_project, tmp_path):
        session(codex_bin, codex_project, fake_openai, tri)
    assert (markers(codex_project) == ["marker-0.txt"]) is runs


def test_a_projects_switch_changes_nothing_for_the_users_guard(
    codex_bin: Path,
    codex_project: CodexProject,
    fake_openai: FakeOpenAI,
    tri: Triohooks,
    tmp_path: Path,
) -> None:
    codex_project.write_hooks(pre_tool(DENY))
    project_file = codex_project.project_hooks_path
    project_file.parent.mkdir(parents=True)
    project_file.write_text(json.dumps({"disableAllHooks": True, "hooks": {}}))
    codex_project.trust_project()
    with adopted(tri, codex_project, tmp_path):
        session(codex_bin, codex_project, fake_openai, tri)
    assert markers(codex_project) == []


def test_a_stopped_serve_still_blocks_before_the_catch_alls_timeout(
    codex_bin: Path,
    codex_project: CodexProject,
    fake_openai: FakeOpenAI,
    tri: Triohooks,
    tmp_path: Path,
) -> None:
    codex_project.write_hooks(pre_tool(DENY, timeout=20))
    with adopted(tri, codex_project, tmp_path) as server:
        os.kill(server.process.pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            session(codex_bin, codex_project, fake_openai, tri)
            took = time.monotonic() - started
        finally:
            os.kill(server.process.pid, signal.SIGCONT)
    assert markers(codex_project) == []
    print(f"session with a stopped serve: {took:.1f} s")
    assert took < 25


def test_a_triohooks_guard_blocks_git_push_in_codex(
    codex_bin: Path,
    codex_project: CodexProject,
    fake_openai: FakeOpenAI,
    tri: Triohooks,
    tmp_path: Path,
) -> None:
    codex_project.write_hooks({})  # Codex has no hook of its own here
    (tri.config_dir / "hooks.toml").write_text(NATIVE_GUARD)
    with adopted(tri, codex_project, tmp_path):
        fake_openai.script(PUSH_COMMANDS)
        run = run_codex(
            codex_bin,
            codex_project.path,
            codex_project.home,
            fake_openai,
            timeout=SESSION_TIMEOUT,
            env=tri.claude_env(),
        )
        assert run.completed, run.process.stderr[-2000:]
        outputs = [r.text for r in fake_openai.tool_outputs()]
    assert markers(codex_project) == ["marker-0.txt"]
    assert len(outputs) == 2
    assert "pushing is for humans" in outputs[1], outputs
