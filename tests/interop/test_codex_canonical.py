"""Codex's own tools under triohooks' one name for each tool, with the real Codex 0.169.1
(``codex exec``, headless, offline, scripted by the fake Responses API): after ``triohooks init
--agent codex`` a patch outside the project is refused, whether the model sends it as Codex's
``apply_patch`` tool (a freeform tool for the models Codex offers it to; its hooks see
``{"command": "<patch>"}``) or as ``apply_patch <<'EOF'`` to its shell (which Codex applies
itself); a patch inside the project goes through; and a ``match = "bash"`` hook fires for
Codex's shell. What Codex's hooks are sent is recorded too (docs/agents.md, "One name for each
tool", measured). The patches go to a directory of the test's own: were the guard to fail, Codex
(which runs as whoever runs the tests, unsandboxed here) would write them; a patch to
``/etc/cron.d`` as Codex sends it is held to the same guard in tests/test_canonical_tools.py."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.interop.codex import CodexProject, run_codex, write_codex_config
from tests.interop.fake_openai import FakeOpenAI, FunctionCall
from tests.interop.test_claude_code_triohooks import Triohooks

pytestmark = pytest.mark.interop

SESSION_TIMEOUT = 120.0
#: A model slug Codex 0.169.1 knows and offers ``apply_patch`` to (as a freeform tool); with
#: an unknown slug it offers no patch tool at all.
PATCH_MODEL = "gpt-5.5"


def patch(path: str) -> str:
    return f"*** Begin Patch\n*** Add File: {path}\n+* * * * * root true\n*** End Patch\n"


@pytest.fixture
def outside_dir() -> Iterator[Path]:
    """A directory outside the project and outside /tmp (which writes_outside_workspace lets
    writes into by default): under /var/tmp, not in the checkout, which may itself be in /tmp
    (a CI clone)."""
    path = Path(tempfile.mkdtemp(prefix="triohooks-outside-", dir="/var/tmp")).resolve()
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def tri(tmp_path: Path, codex_project: CodexProject) -> Triohooks:
    return Triohooks.create(tmp_path, codex_project.home)


def test_after_init_codex_cannot_patch_outside_the_project(
    codex_bin: Path,
    codex_project: CodexProject,
    fake_openai: FakeOpenAI,
    tri: Triohooks,
    tmp_path: Path,
    outside_dir: Path,
) -> None:
    write_codex_config(codex_project.home, fake_openai.url, model=PATCH_MODEL)
    # The probe: what Codex's hooks get, recorded by a hook of the user's own.
    seen = tmp_path / "seen.jsonl"
    probe = {
        "PreToolUse": [
            {
                "matcher": "*",
                "hooks": [{"type": "command", "command": f"cat >> {seen}; echo >> {seen}"}],
            }
        ]
    }
    codex_project.write_hooks(probe)
    codex_project.review(codex_project.user_hooks_path, probe)
    tri.state_dir.chmod(0o700)
    done = tri.cli(
        "init", "--agent", "codex", "--workspace", str(codex_project.path), cwd=codex_project.path
    )
    assert done.returncode == 0, done.stderr
    (tri.config_dir / "hooks.toml").write_text(
        (tri.config_dir / "hooks.toml").read_text()
        + '\n[[hooks.pre_tool]]\nid = "shell-seen"\nmatch = "bash"\nif = "shell(touch marker)"\n'
        "command = \"echo 'bash matched' >&2; exit 2\"\n"
    )
    outside = outside_dir
    targets = [
        str(outside / "cron.d" / "job"),
        str(outside / "via-tool"),
        str(outside / "via-shell"),
    ]
    heredoc = f"apply_patch <<'EOF'\n{patch(targets[2])}EOF\n"
    fake_openai.script(
        [
            FunctionCall.custom("apply_patch", patch(targets[0])),
            FunctionCall.custom("apply_patch", patch(targets[1])),
            FunctionCall.shell(heredoc),
            FunctionCall.custom("apply_patch", patch("inside.txt")),
            FunctionCall.shell("touch marker"),
        ]
    )
    run = run_codex(
        codex_bin,
        codex_project.path,
        codex_project.home,
        fake_openai,
        timeout=SESSION_TIMEOUT,
        env=tri.claude_env(),
    )
    assert run.completed, (run.process.stdout[-2000:], run.process.stderr[-2000:])
    assert any(t.get("name") == "apply_patch" for t in fake_openai.offered_tools())
    cron, tool, shell, inside, marker = [o.text for o in fake_openai.tool_outputs()]
    for text, target in ((cron, targets[0]), (tool, targets[1]), (shell, targets[2])):
        assert "writes_outside_workspace guard" in text and target in text, text
        assert not Path(target).exists()
    assert (codex_project.path / "inside.txt").exists(), inside
    assert "bash matched" in marker and not (codex_project.path / "marker").exists()
    # What Codex's hooks were sent: apply_patch {command: <patch>}; the shell as Bash.
    calls = [json.loads(line) for line in seen.read_text().splitlines() if line.strip()]
    tools = [(c["tool_name"], sorted(c["tool_input"])) for c in calls]
    assert tools[:4] == [
        ("apply_patch", ["command"]),
        ("apply_patch", ["command"]),
        ("Bash", ["command"]),
        ("apply_patch", ["command"]),
    ], tools
    assert calls[0]["tool_input"]["command"] == patch(targets[0])


def test_exec_command_workdir_is_the_hook_inputs_cwd(
    codex_bin: Path, codex_project: CodexProject, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """Codex sends its shell's ``workdir`` as the hook input's ``cwd`` (what triohooks then
    reads the call from)."""
    seen = tmp_path / "seen.jsonl"
    probe = {
        "PreToolUse": [
            {"matcher": "*", "hooks": [{"type": "command", "command": f"cat >> {seen}"}]}
        ]
    }
    codex_project.write_hooks(probe)
    codex_project.review(codex_project.user_hooks_path, probe)
    workdir = tmp_path / "work"
    workdir.mkdir()
    fake_openai.script([FunctionCall.shell("pwd", workdir=str(workdir))])
    run = run_codex(codex_bin, codex_project.path, codex_project.home, fake_openai, timeout=90)
    assert run.completed, run.process.stderr[-2000:]
    (call,) = [json.loads(line) for line in seen.read_text().splitlines() if line.strip()]
    assert call["tool_name"] == "Bash" and call["tool_input"] == {"command": "pwd"}
    assert call["cwd"] == str(workdir)
