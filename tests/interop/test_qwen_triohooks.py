"""The real Qwen Code 0.24.4 with triohooks, offline against the fake Messages API.

Qwen Code's hooks are Claude Code's in its own settings (``~/.qwen/settings.json``): a user
hook that exits 2 blocks the call and its stderr reaches the model. Then ``triohooks qwen
install --scope user``: the hooks move into ``~/.qwen/triohooks-hooks.json`` and run through
triohooks, and one guard of triohooks' own ``hooks.toml`` blocks ``git push`` in the session.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.interop import NATIVE_GUARD, PUSH_COMMANDS
from tests.interop.fake_anthropic import FakeAnthropic
from tests.interop.qwen import QwenProject, run_qwen
from tests.interop.test_claude_code_triohooks import Server, Triohooks, serving

pytestmark = pytest.mark.interop

SESSION_TIMEOUT = 120.0


@pytest.fixture
def tri(tmp_path: Path, qwen_project: QwenProject) -> Triohooks:
    return Triohooks.create(tmp_path, qwen_project.home)


def pre_tool(command: str) -> dict[str, Any]:
    hook = {"type": "command", "command": command, "timeout": 20}
    return {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [hook]}]}}


def markers(project: QwenProject) -> list[str]:
    return sorted(p.name for p in project.path.glob("marker-*"))


@contextmanager
def adopted(tri: Triohooks, project: QwenProject, tmp_path: Path) -> Iterator[Server]:
    """serve running; the user's Qwen Code hooks installed; uninstalled after: its hooks as
    they were (Qwen Code itself adds a ``$version`` to the file on its first run)."""
    before = json.loads(project.user_settings.read_text())["hooks"]
    with serving(tri, project.path, tmp_path / "serve.log") as server:
        tri.state_dir.chmod(0o700)
        tri.cli("qwen", "install", "--scope", "user", "--workspace", str(project.path))
        installed = json.loads(project.user_settings.read_text())["hooks"]
        for groups in installed.values():
            (handler,) = [h for g in groups for h in g["hooks"]]
            assert "/fronts qwen --timeout" in handler["command"], handler
        try:
            yield server
        finally:
            tri.cli("qwen", "uninstall", "--scope", "user", "--workspace", str(project.path))
    log = (tmp_path / "serve.log").read_text()
    assert "refused" not in log, log  # every relay was answered by serve (no slow path)
    assert json.loads(project.user_settings.read_text())["hooks"] == before


def test_qwen_code_blocks_on_exit_2_with_claudes_matcher_alias(
    qwen_bin: Path, qwen_project: QwenProject, fake_qwen: FakeAnthropic, tmp_path: Path
) -> None:
    """The contract the dialect reads: Claude Code's input (``tool_name`` is Qwen's own
    ``run_shell_command``; the matcher ``Bash`` is an alias of it), exit 2 blocks, stderr to
    the model."""
    seen = tmp_path / "seen.json"
    qwen_project.write_user_settings(pre_tool(f"cat > {seen}; echo 'not today' >&2; exit 2"))
    fake_qwen.script(["echo x > marker-0.txt"])
    run = run_qwen(qwen_bin, qwen_project, fake_qwen, timeout=SESSION_TIMEOUT)
    assert run.process.returncode == 0, (run.process.stdout[-2000:], run.process.stderr[-2000:])
    payload = json.loads(seen.read_text())
    assert payload["hook_event_name"] == "PreToolUse"
    assert payload["tool_name"] == "run_shell_command"
    assert payload["tool_input"]["command"] == "echo x > marker-0.txt"
    assert markers(qwen_project) == []
    (result,) = fake_qwen.tool_results()
    assert "not today" in result.text, result.text


def test_a_triohooks_guard_blocks_git_push_in_qwen_code(
    qwen_bin: Path,
    qwen_project: QwenProject,
    fake_qwen: FakeAnthropic,
    tri: Triohooks,
    tmp_path: Path,
) -> None:
    """One ``shell(git push*)`` guard in hooks.toml, and the user's own Qwen Code hook
    (adopted, run by triohooks with the input Qwen sent) beside it."""
    seen = tmp_path / "seen.jsonl"
    qwen_project.write_user_settings(pre_tool(f"cat >> {seen}; echo >> {seen}"))
    (tri.config_dir / "hooks.toml").write_text(NATIVE_GUARD)
    with adopted(tri, qwen_project, tmp_path):
        fake_qwen.script(PUSH_COMMANDS)
        run = run_qwen(
            qwen_bin, qwen_project, fake_qwen, timeout=SESSION_TIMEOUT, env=tri.claude_env()
        )
        assert run.process.returncode == 0, run.process.stderr[-2000:]
    assert markers(qwen_project) == ["marker-0.txt"]
    _, push = fake_qwen.tool_results()
    assert "pushing is for humans" in push.text, push.text
    inputs = [json.loads(line) for line in seen.read_text().splitlines() if line.strip()]
    assert [i["tool_name"] for i in inputs] == ["run_shell_command", "run_shell_command"]
