"""The user's own ``.gemini/settings.json`` hooks, adopted by ``triohooks gemini install`` and run
by triohooks under the real Gemini CLI 0.61.0 (headless, offline, scripted by the fake Gemini
API): through the default transport (``triohooks-relay gemini`` talking to the user's running
``serve``), read as Gemini reads them, with the session's environment, and closed when serve
is stopped. Every session ends with ``triohooks gemini uninstall`` (byte for byte)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.interop import NATIVE_GUARD, PUSH_COMMANDS
from tests.interop.fake_gemini import FakeGemini, FunctionCall
from tests.interop.gemini import GeminiProject, run_gemini
from tests.interop.test_claude_code_triohooks import Server, Triohooks, serving

pytestmark = pytest.mark.interop

SESSION_TIMEOUT = 90.0


@pytest.fixture
def tri(tmp_path: Path, gemini_project: GeminiProject) -> Triohooks:
    return Triohooks.create(tmp_path, gemini_project.home)


@contextmanager
def adopted(tri: Triohooks, project: GeminiProject, tmp_path: Path) -> Iterator[Server]:
    """serve running; the project's hooks installed (the default transport); uninstalled after,
    byte for byte."""
    settings = project.path / ".gemini" / "settings.json"
    original = settings.read_bytes()
    with serving(tri, project.path, tmp_path / "serve.log") as server:
        tri.state_dir.chmod(0o700)
        tri.cli("gemini", "install", "--workspace", str(project.path), cwd=project.path)
        installed = json.loads(settings.read_bytes())["hooks"]
        for groups in installed.values():
            (handler,) = [h for g in groups for h in g["hooks"]]
            assert "triohooks-relay gemini --timeout" in handler["command"]
        try:
            yield server
        finally:
            tri.cli("gemini", "uninstall", "--workspace", str(project.path), cwd=project.path)
    assert settings.read_bytes() == original


def session(
    gemini_bin: Path, project: GeminiProject, fake: FakeGemini, tri: Triohooks, n: int = 1
) -> None:
    fake.script([f"echo marker-{k} > marker-{k}.txt" for k in range(n)])
    run = run_gemini(
        gemini_bin, project.path, project.home, fake, timeout=SESSION_TIMEOUT, env=tri.claude_env()
    )
    assert run.process.returncode == 0, (run.process.stdout[-2000:], run.process.stderr[-2000:])


def markers(project: GeminiProject) -> list[str]:
    return sorted(p.name for p in project.path.glob("marker-*"))


def before_tool(command: str, **extra: Any) -> dict[str, Any]:
    return {
        "BeforeTool": [
            {
                "matcher": "run_shell_command",
                "hooks": [{"type": "command", "command": command, **extra}],
            }
        ]
    }


DENY = 'echo \'{"decision": "deny", "reason": "denied-by-json"}\''


def test_a_guard_blocks_through_the_relay_and_serve(
    gemini_bin: Path,
    gemini_project: GeminiProject,
    fake_gemini: FakeGemini,
    tri: Triohooks,
    tmp_path: Path,
) -> None:
    gemini_project.write_hooks(before_tool(DENY))
    with adopted(tri, gemini_project, tmp_path):
        session(gemini_bin, gemini_project, fake_gemini, tri, n=2)
    assert markers(gemini_project) == []
    responses = fake_gemini.function_responses()
    assert len(responses) == 2
    for response in responses:
        assert response.is_error and "Tool execution blocked: denied-by-json" in response.text


@pytest.mark.parametrize(
    ("script", "runs"),
    [
        ("exit 2", True),  # no output: Gemini takes no decision, and neither does triohooks
        ("exit 3", True),
        ("echo 'why not' >&2; exit 3", False),  # any exit but 0 and 1 with text: a deny
        ("echo 'fine, really'; exit 1", True),  # exit 1 with text: a warning
    ],
)
def test_exit_codes_are_read_as_gemini_reads_them(
    gemini_bin: Path,
    gemini_project: GeminiProject,
    fake_gemini: FakeGemini,
    tri: Triohooks,
    tmp_path: Path,
    script: str,
    runs: bool,
) -> None:
    gemini_project.write_hooks(before_tool(script))
    with adopted(tri, gemini_project, tmp_path):
        session(gemini_bin, gemini_project, fake_gemini, tri)
    assert (markers(gemini_project) == ["marker-0.txt"]) is runs
    if not runs:
        (response,) = fake_gemini.function_responses()
        assert "why not" in response.text


def test_hooks_under_serve_get_the_gemini_sessions_environment(
    gemini_bin: Path,
    gemini_project: GeminiProject,
    fake_gemini: FakeGemini,
    tri: Triohooks,
    tmp_path: Path,
) -> None:
    probe = 'echo "$GEMINI_CWD|$GEMINI_PLANS_DIR|$GEMINI_SESSION_ID|$SESSION_ONLY" > env.txt'
    gemini_project.write_hooks(before_tool(probe))
    with adopted(tri, gemini_project, tmp_path) as server:
        fake_gemini.script(["true"])
        env = {**tri.claude_env(), "SESSION_ONLY": "set-by-the-session"}
        run = run_gemini(
            gemini_bin,
            gemini_project.path,
            gemini_project.home,
            fake_gemini,
            timeout=SESSION_TIMEOUT,
            env=env,
        )
        assert run.process.returncode == 0
        assert server.process.poll() is None  # serve ran the hook, not a relay of its own
    cwd, plans, session_id, own = (gemini_project.path / "env.txt").read_text().strip().split("|")
    assert cwd == str(gemini_project.path)
    assert plans.startswith(str(gemini_project.home / ".gemini")) and session_id
    assert own == "set-by-the-session"


def test_a_settings_change_outside_hooks_keeps_the_guard(
    gemini_bin: Path,
    gemini_project: GeminiProject,
    fake_gemini: FakeGemini,
    tri: Triohooks,
    tmp_path: Path,
) -> None:
    guard = gemini_project.path / ".gemini" / "hooks" / "guard.sh"
    guard.parent.mkdir(parents=True)
    guard.write_text("#!/usr/bin/env bash\necho guarded >&2\nexit 2\n")
    guard.chmod(0o755)
    gemini_project.write_hooks(before_tool("$GEMINI_PROJECT_DIR/.gemini/hooks/guard.sh"))
    settings = gemini_project.path / ".gemini" / "settings.json"
    with adopted(tri, gemini_project, tmp_path):
        installed = settings.read_text()
        doc = json.loads(installed)  # what Gemini's /settings writes: other keys
        settings.write_text(json.dumps({"ui": {"theme": "GitHub"}, **doc}, indent=2))
        session(gemini_bin, gemini_project, fake_gemini, tri)
        settings.write_text(installed)
    assert markers(gemini_project) == []
    (response,) = fake_gemini.function_responses()
    assert "guarded" in response.text


def test_a_stopped_serve_still_blocks_within_geminis_timeout(
    gemini_bin: Path,
    gemini_project: GeminiProject,
    fake_gemini: FakeGemini,
    tri: Triohooks,
    tmp_path: Path,
) -> None:
    gemini_project.write_hooks(before_tool(DENY, timeout=20000))
    with adopted(tri, gemini_project, tmp_path) as server:
        os.kill(server.process.pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            session(gemini_bin, gemini_project, fake_gemini, tri)
            took = time.monotonic() - started
        finally:
            os.kill(server.process.pid, signal.SIGCONT)
    assert markers(gemini_project) == []
    (response,) = fake_gemini.function_responses()
    assert "denied-by-json" in response.text
    print(f"session with a stopped serve: {took:.1f} s")
    assert took < 25


def test_a_triohooks_guard_blocks_git_push_in_gemini_cli(
    gemini_bin: Path,
    gemini_project: GeminiProject,
    fake_gemini: FakeGemini,
    tri: Triohooks,
    tmp_path: Path,
) -> None:
    gemini_project.write_hooks({})  # Gemini CLI has no hook of its own here
    (tri.config_dir / "hooks.toml").write_text(NATIVE_GUARD)
    with adopted(tri, gemini_project, tmp_path):
        fake_gemini.script(PUSH_COMMANDS)
        run = run_gemini(
            gemini_bin,
            gemini_project.path,
            gemini_project.home,
            fake_gemini,
            timeout=SESSION_TIMEOUT,
            env=tri.claude_env(),
        )
        assert run.process.returncode == 0, run.process.stderr[-2000:]
    assert markers(gemini_project) == ["marker-0.txt"]
    first, push = fake_gemini.function_responses()
    assert not first.is_error
    assert push.is_error and "pushing is for humans" in push.text, push.text


def test_a_guard_reads_the_shell_from_its_dir_path(
    gemini_bin: Path,
    gemini_project: GeminiProject,
    fake_gemini: FakeGemini,
    tri: Triohooks,
    tmp_path: Path,
) -> None:
    """Gemini CLI runs ``run_shell_command`` in its ``dir_path`` (relative to the project) and
    tells its hooks the project's ``cwd`` (measured): ``protected_push`` reads the branch of
    the repository the push runs in, the one ``dir_path`` names, and ``match = "bash"`` fires
    for Gemini's shell."""
    for repo, branch in ((gemini_project.path, "feature"), (gemini_project.path / "sub", "main")):
        done = subprocess.run(
            ["git", "init", "-q", "-b", branch, str(repo)],
            capture_output=True,
            timeout=30,
            check=False,
        )
        assert done.returncode == 0, done.stderr
    seen = tmp_path / "seen.jsonl"
    gemini_project.write_hooks(before_tool(f"cat >> {seen}; echo >> {seen}"))
    (tri.config_dir / "hooks.toml").write_text(
        '[[hooks.pre_tool]]\nmatch = "bash"\nbuiltin = "protected_push"\n'
    )
    calls = [
        FunctionCall("run_shell_command", {"command": "git push", "dir_path": "sub"}),
        FunctionCall("run_shell_command", {"command": "git push --dry-run"}),
    ]
    with adopted(tri, gemini_project, tmp_path):
        fake_gemini.script(calls)
        run = run_gemini(
            gemini_bin,
            gemini_project.path,
            gemini_project.home,
            fake_gemini,
            timeout=SESSION_TIMEOUT,
            env=tri.claude_env(),
        )
        assert run.process.returncode == 0, run.process.stderr[-2000:]
    on_main, on_feature = fake_gemini.function_responses()
    assert on_main.is_error and "pushes the protected branch main" in on_main.text, on_main.text
    assert "protected_push" not in on_feature.text, on_feature.text  # git itself fails: no remote
    first = json.loads(seen.read_text().splitlines()[0])
    assert first["cwd"] == str(gemini_project.path)
    assert first["tool_input"]["dir_path"] == "sub"
