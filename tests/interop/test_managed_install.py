"""``triohooks <agent> install --managed --out DIR``, delivered to the path the real agent reads.

Neither Claude Code 2.1.332 nor Codex 0.169.1 lets a variable move its managed file (Claude
Code's ``CLAUDE_CODE_MANAGED_SETTINGS_PATH`` is not read by the public build: measured, a
``managed-settings.json`` in the directory it names runs no hook; Codex reads
``/etc/codex/requirements.toml`` only), and Gemini CLI reads a system settings file only
root-owned in directories only root can write. So the files ``--out`` wrote are delivered as an
MDM would, into ``/etc`` -- but an ``/etc`` of the agent's own: each session runs in a private
mount namespace where an overlay puts the delivered files over the real ``/etc``, which stays as
it was (the overlay's upper directory is under ``tmp_path``). Where a mount namespace cannot be
made (no privilege for it), those tests are skipped, saying so. Qwen Code reads its system
settings from ``$QWEN_CODE_SYSTEM_SETTINGS_PATH``, anywhere.

What they hold: the agent reads the managed file; its catch-alls run triohooks' own hooks (a
guard in ``hooks.toml`` stops ``git push``); with the managed-only switch the user's own hooks
of the agent do not run beside them; a machine where ``triohooks-relay`` cannot be found refuses
the call (the catch-all's exit 2), never lets it through.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from tests.interop import NATIVE_GUARD, PUSH_COMMANDS, ClaudeProject, run_bounded, run_claude
from tests.interop.codex import CodexProject, run_codex
from tests.interop.fake_anthropic import FakeAnthropic
from tests.interop.fake_gemini import FakeGemini
from tests.interop.fake_openai import FakeOpenAI
from tests.interop.gemini import GeminiProject, run_gemini
from tests.interop.qwen import QwenProject, run_qwen
from tests.interop.test_claude_code_triohooks import Triohooks, serving

pytestmark = pytest.mark.interop

SESSION_TIMEOUT = 90.0
T = TypeVar("T")


def _overlay_or_skip(tmp_path: Path) -> tuple[Path, Path]:
    """The overlay's upper and work directories, once a private mount namespace with an
    overlay over /etc has been made here (else the test is skipped, saying why)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("unshare is not on PATH: cannot deliver a managed file to a private /etc")
    upper, work = tmp_path / "etc-upper", tmp_path / "etc-work"
    upper.mkdir()
    work.mkdir()
    probe = run_bounded([*_in_overlay(upper, work), "true"], timeout=30)
    if probe.returncode != 0:
        pytest.skip(f"no private mount namespace with an overlay here: {probe.stderr.strip()}")
    return upper, work


def _in_overlay(upper: Path, work: Path) -> list[str]:
    """The argv prefix that runs a program with ``upper`` laid over /etc, in its own mount
    namespace (the real /etc is not changed)."""
    mount = (
        f"mount -t overlay overlay -o lowerdir=/etc,upperdir={upper},workdir={work} /etc "
        '&& exec "$@"'
    )
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", mount, "sh"]


def _wrapper(tmp_path: Path, binary: Path, upper: Path, work: Path) -> Path:
    """An executable that runs ``binary`` inside the overlay (run_claude and run_codex take a
    binary's path)."""
    script = tmp_path / f"{binary.name}-managed"
    words = " ".join(f"'{w}'" for w in _in_overlay(upper, work))
    script.write_text(f'#!/bin/sh\nexec {words} "{binary}" "$@"\n')
    script.chmod(0o755)
    return script


def _managed(tri: Triohooks, agent: str, out: Path) -> None:
    tri.cli(agent, "install", "--managed", "--out", str(out))


def _control(own: Path, run: Callable[[], object]) -> None:
    """The control, so that "the user's own hook did not run" can fail: without the managed
    file (the agent run as it is, the real /etc), ``run`` runs it."""
    run()
    assert own.exists(), "the user's own hook did not run even without the managed file"
    own.unlink()


def _guarded(tri: Triohooks, workspace: Path, run: Callable[[], T]) -> T:
    """``run`` with ``triohooks serve`` up for the catch-alls' relay."""
    with serving(tri, workspace, workspace.parent / "serve.log"):
        return run()


def _markers(project: Path) -> list[str]:
    return sorted(p.name for p in project.glob("marker-*"))


def test_claude_code_reads_the_managed_settings_and_runs_triohooks(
    claude_bin: Path, fake_api: FakeAnthropic, claude_project: ClaudeProject, tmp_path: Path
) -> None:
    upper, work = _overlay_or_skip(tmp_path)
    tri = Triohooks.create(tmp_path, claude_project.home)
    (tri.config_dir / "hooks.toml").write_text(NATIVE_GUARD)
    _managed(tri, "claude", upper / "claude-code")
    settings = json.loads((upper / "claude-code" / "managed-settings.json").read_text())
    assert settings["allowManagedHooksOnly"] is True
    # The user's own Claude Code hook: with allowManagedHooksOnly, Claude Code skips it.
    own = claude_project.home / "own-hook-ran"
    user_settings = claude_project.home / ".claude" / "settings.json"
    user_settings.parent.mkdir(parents=True)
    hook = {"type": "command", "command": f"echo ran >> {own}"}
    user_settings.write_text(json.dumps({"hooks": {"PreToolUse": [{"hooks": [hook]}]}}))
    fake_api.script(["echo x > control.txt"])
    _control(
        own, lambda: run_claude(claude_bin, claude_project.path, claude_project.home, fake_api)
    )
    claude = _wrapper(tmp_path, claude_bin, upper, work)
    fake_api.script(PUSH_COMMANDS)
    run = _guarded(
        tri,
        claude_project.path,
        lambda: run_claude(
            claude,
            claude_project.path,
            claude_project.home,
            fake_api,
            timeout=SESSION_TIMEOUT,
            env=tri.claude_env(),
        ),
    )
    assert run.process.returncode == 0, run.process.stderr[-2000:]
    assert _markers(claude_project.path) == ["marker-0.txt"]
    results = [r.text for r in fake_api.tool_results()]
    assert "pushing is for humans" in results[1], results
    assert not own.exists(), "allowManagedHooksOnly: the user's own hook must not run"


def test_claude_code_refuses_the_call_where_triohooks_cannot_be_found(
    claude_bin: Path, fake_api: FakeAnthropic, claude_project: ClaudeProject, tmp_path: Path
) -> None:
    upper, work = _overlay_or_skip(tmp_path)
    tri = Triohooks.create(tmp_path, claude_project.home)
    _managed(tri, "claude", upper / "claude-code")
    claude = _wrapper(tmp_path, claude_bin, upper, work)
    fake_api.script(["echo x > marker-0.txt"])
    # No triohooks on PATH, no relay client in the state dir: the catch-all blocks.
    path = ":".join(d for d in ("/usr/bin", "/bin") if Path(d).is_dir())
    found = run_bounded(["sh", "-c", "command -v triohooks-relay"], timeout=10, env={"PATH": path})
    assert found.returncode != 0, found.stdout
    run = run_claude(
        claude,
        claude_project.path,
        claude_project.home,
        fake_api,
        timeout=SESSION_TIMEOUT,
        env={"PATH": path, **tri.dirs_env()},
    )
    assert _markers(claude_project.path) == []
    # Claude Code's first hooked event refuses: the prompt itself (UserPromptSubmit: "Original
    # prompt: ..."), so no tool call is even asked for; what it says is the catch-all's reason.
    said = run.process.stdout + run.process.stderr
    assert "triohooks-relay is not on PATH" in said, said[-2000:]
    assert fake_api.tool_results() == []


def test_codex_reads_the_requirements_and_runs_triohooks_unreviewed(
    codex_bin: Path, fake_openai: FakeOpenAI, codex_project: CodexProject, tmp_path: Path
) -> None:
    upper, work = _overlay_or_skip(tmp_path)
    tri = Triohooks.create(tmp_path, codex_project.home)
    (tri.config_dir / "hooks.toml").write_text(NATIVE_GUARD)
    _managed(tri, "codex", upper / "codex")
    # The user's own Codex hook, reviewed: allow_managed_hooks_only keeps Codex from running it.
    own = codex_project.home / "own-hook-ran"
    hooks = {"PreToolUse": [{"hooks": [{"type": "command", "command": f"echo ran >> {own}"}]}]}
    source = codex_project.write_hooks(hooks)
    codex_project.review(source, hooks)
    fake_openai.script(["echo x > control.txt"])
    _control(own, lambda: run_codex(codex_bin, codex_project.path, codex_project.home, fake_openai))
    codex = _wrapper(tmp_path, codex_bin, upper, work)
    fake_openai.script(PUSH_COMMANDS)
    run = _guarded(
        tri,
        codex_project.path,
        lambda: run_codex(
            codex,
            codex_project.path,
            codex_project.home,
            fake_openai,
            timeout=SESSION_TIMEOUT,
            env=tri.claude_env(),
        ),
    )
    assert run.completed, run.process.stderr[-2000:]
    assert _markers(codex_project.path) == ["marker-0.txt"]
    outputs = [r.text for r in fake_openai.tool_outputs()]
    assert "pushing is for humans" in outputs[1], outputs
    assert not own.exists(), "allow_managed_hooks_only: the user's own hook must not run"


def test_gemini_cli_reads_the_system_settings_and_runs_triohooks(
    gemini_bin: Path, fake_gemini: FakeGemini, gemini_project: GeminiProject, tmp_path: Path
) -> None:
    """Gemini CLI reads its system settings only from a root-owned file in directories only
    root can write (measured: one under /tmp, named by ``GEMINI_CLI_SYSTEM_SETTINGS_PATH``, is
    skipped as insecure): delivered to /etc/gemini-cli, as Claude Code's."""
    upper, work = _overlay_or_skip(tmp_path)
    tri = Triohooks.create(tmp_path, gemini_project.home)
    (tri.config_dir / "hooks.toml").write_text(NATIVE_GUARD)
    _managed(tri, "gemini", upper / "gemini-cli")
    gemini = _wrapper(tmp_path, gemini_bin, upper, work)
    fake_gemini.script(PUSH_COMMANDS)
    run = _guarded(
        tri,
        gemini_project.path,
        lambda: run_gemini(
            gemini,
            gemini_project.path,
            gemini_project.home,
            fake_gemini,
            timeout=SESSION_TIMEOUT,
            env=tri.claude_env(),
        ),
    )
    assert run.process.returncode == 0, run.process.stderr[-2000:]
    assert _markers(gemini_project.path) == ["marker-0.txt"]
    first, push = fake_gemini.function_responses()
    assert not first.is_error
    assert push.is_error and "pushing is for humans" in push.text, push.text


def test_qwen_code_reads_the_system_settings_and_runs_triohooks(
    qwen_bin: Path, fake_qwen: FakeAnthropic, qwen_project: QwenProject, tmp_path: Path
) -> None:
    """Qwen Code takes its system settings' path from ``QWEN_CODE_SYSTEM_SETTINGS_PATH`` (and
    reads a file anywhere: delivered there, no private /etc is needed)."""
    tri = Triohooks.create(tmp_path, qwen_project.home)
    (tri.config_dir / "hooks.toml").write_text(NATIVE_GUARD)
    out = tmp_path / "mdm"
    _managed(tri, "qwen", out)
    system = {"QWEN_CODE_SYSTEM_SETTINGS_PATH": str(out / "settings.json")}
    fake_qwen.script(PUSH_COMMANDS)
    run = _guarded(
        tri,
        qwen_project.path,
        lambda: run_qwen(
            qwen_bin,
            qwen_project,
            fake_qwen,
            timeout=SESSION_TIMEOUT,
            env={**tri.claude_env(), **system},
        ),
    )
    assert run.process.returncode == 0, run.process.stderr[-2000:]
    assert _markers(qwen_project.path) == ["marker-0.txt"]
    _, push = fake_qwen.tool_results()
    assert "pushing is for humans" in push.text, push.text
