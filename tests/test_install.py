"""Installing as docs/getting-started.md says: from a git URL and from a built wheel, then
running from a directory that is not the checkout.

Each install goes into its own ``--target`` directory with ``--no-deps`` (the dependencies are
this venv's; no network), and runs with that directory first on the path, so what runs is the
installed copy, not the checkout (checked: ``triohooks.__file__``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.long


def _source_copy(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder in ("runtime", "actors"):
        shutil.copytree(ROOT / folder, src / folder, ignore=ignore)
    return src


def _run(
    argv: list[str],
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        argv, cwd=cwd, env=env, input=input, capture_output=True, text=True, timeout=300,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, (argv, done.stdout, done.stderr)
    return done


def _pip_install(target: Path, what: str) -> None:
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "--target",
            str(target),
            what,
        ]
    )


def _use_it(target: Path, tmp_path: Path) -> None:
    """A user's first steps, from an empty directory, with the installed copy."""
    where = tmp_path / "somewhere"
    where.mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": str(target),
        "TRIOHOOKS_CONFIG_DIR": str(tmp_path / "config"),
        "TRIOHOOKS_STATE_DIR": str(tmp_path / "state"),
    }
    python = [sys.executable, "-m", "triohooks"]
    found = _run(
        [sys.executable, "-c", "import triohooks; print(triohooks.__file__)"], cwd=where, env=env
    )
    assert Path(found.stdout.strip()).is_relative_to(target)
    assert _run([*python, "--version"], cwd=where, env=env).stdout.startswith("triohooks ")
    _run([*python, "init"], cwd=where, env=env)
    assert "ok" in _run([*python, "validate"], cwd=where, env=env).stdout
    assert " passed in " in _run([*python, "test"], cwd=where, env=env).stdout
    assert (target / "bin" / "triohooks").exists()  # the console script
    _relay_from_the_install(target, tmp_path, env, where)


def _relay_from_the_install(target: Path, tmp_path: Path, env: dict[str, str], where: Path) -> None:
    """The package carries the native client's source, and the Python relay a catch-all runs
    (``python -I -S -c BOOT DIR``: nothing of PYTHONPATH) finds the installed triohooks."""
    fronts = target / "triohooks" / "fronts"
    assert (fronts / "relay_client.c").is_file()
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    guard = 'grep -q "git push" && { echo "no pushing" >&2; exit 2; }; exit 0'
    hooks = {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": guard}]}]}
    (home / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))
    env = {**env, "HOME": str(home), "TRIOHOOKS_NO_AUTOSTART": "1"}
    python = [sys.executable, "-m", "triohooks"]
    _run([*python, "claude", "install", "--scope", "user"], cwd=where, env=env)
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    command = settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    assert f" {fronts} claude " in command
    (tmp_path / "state" / "relay").unlink(missing_ok=True)  # as where there is no compiler
    body = json.dumps(
        {"session_id": "s", "cwd": str(where), "hook_event_name": "PreToolUse",
         "tool_name": "Bash", "tool_input": {"command": "git push"}}
    )  # fmt: skip
    ran = _run(["bash", "-c", command], cwd=where, env={**env, "PYTHONPATH": ""}, input=body)
    decision = json.loads(ran.stdout)["hookSpecificOutput"]["permissionDecision"]
    assert decision == "deny", ran.stderr


def test_install_from_a_git_url(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = _source_copy(tmp_path)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(repo)]
    _run([*git, "init", "-q"])
    _run([*git, "add", "."])
    _run([*git, "commit", "-q", "-m", "triohooks"])
    target = tmp_path / "installed"
    _pip_install(target, f"triohooks @ git+file://{repo}")
    _use_it(target, tmp_path)


def test_install_from_a_built_wheel(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "-w",
            str(dist),
            str(_source_copy(tmp_path)),
        ]
    )
    (wheel,) = dist.glob("triohooks-*.whl")
    target = tmp_path / "installed"
    _pip_install(target, str(wheel))
    _use_it(target, tmp_path)
