"""Installing as docs/getting-started.md says: ``make dist``'s wheel and sdist, a git URL, with
pip, pipx and ``uv tool install``; then running from a directory that is not the checkout.

A pip install goes into its own ``--target`` directory with ``--no-deps`` (the dependencies are
this venv's; no network), and runs with that directory first on the path, so what runs is the
installed copy, not the checkout (checked: ``triohooks.__file__``). pipx and uv make the
isolated environment a user gets, so they fetch the dependencies from the package index (as a
user's install does); their homes and command directories are under the test's tmp_path."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.long


def _source_copy(tmp_path: Path) -> Path:
    """The repository's files a build reads (the sdist's, MANIFEST.in: docs, examples, tests)."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "Makefile", "MANIFEST.in"):
        shutil.copy(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder in ("runtime", "actors", "docs", "examples", "tests"):
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


@dataclass(frozen=True)
class Installed:
    """One install: where it must be (``root``), its ``triohooks`` command, the interpreter of
    its environment, and what running it needs besides (PYTHONPATH for a ``--target`` one)."""

    root: Path
    script: Path
    python: Path
    env: dict[str, str] = field(default_factory=dict)


def _pip_install(tmp_path: Path, what: str) -> Installed:
    target = tmp_path / "installed"
    _run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--quiet",
         "--target", str(target), what]
    )  # fmt: skip
    return Installed(
        target, target / "bin" / "triohooks", Path(sys.executable), {"PYTHONPATH": str(target)}
    )


def _pipx_install(tmp_path: Path, what: str) -> Installed:
    home, bin_dir = tmp_path / "pipx", tmp_path / "pipx-bin"
    env = {**os.environ, "PIPX_HOME": str(home), "PIPX_BIN_DIR": str(bin_dir),
           "PIPX_MAN_DIR": str(tmp_path / "pipx-man")}  # fmt: skip
    _run([sys.executable, "-m", "pipx", "install", "--python", sys.executable, what], env=env)
    venv = home / "venvs" / "triohooks"
    return Installed(venv, bin_dir / "triohooks", venv / "bin" / "python")


def _uv_tool_install(tmp_path: Path, what: str, uv_cache: Path) -> Installed:
    tools, bin_dir = tmp_path / "uv-tools", tmp_path / "uv-bin"
    env = {**os.environ, "UV_TOOL_DIR": str(tools), "UV_TOOL_BIN_DIR": str(bin_dir),
           "UV_CACHE_DIR": str(uv_cache)}  # fmt: skip
    uv = Path(sys.executable).parent / "uv"
    _run([str(uv), "tool", "install", "--quiet", "--python", sys.executable, what], env=env)
    venv = tools / "triohooks"
    return Installed(venv, bin_dir / "triohooks", venv / "bin" / "python")


def _use_it(installed: Installed, tmp_path: Path) -> None:
    """A user's first steps, from an empty directory, with the installed copy's command."""
    where = tmp_path / "somewhere"
    where.mkdir()
    env = {
        **os.environ,
        **installed.env,
        "TRIOHOOKS_CONFIG_DIR": str(tmp_path / "config"),
        "TRIOHOOKS_STATE_DIR": str(tmp_path / "state"),
    }
    found = _run(
        [str(installed.python), "-c", "import triohooks; print(triohooks.__file__)"],
        cwd=where,
        env=env,
    )
    package = Path(found.stdout.strip()).parent
    assert package.is_relative_to(installed.root)
    triohooks = [str(installed.script)]  # the console script, as a user runs it
    assert _run([*triohooks, "--version"], cwd=where, env=env).stdout.startswith("triohooks ")
    _run([*triohooks, "init"], cwd=where, env=env)
    assert "ok" in _run([*triohooks, "validate"], cwd=where, env=env).stdout
    assert " passed in " in _run([*triohooks, "test"], cwd=where, env=env).stdout
    _relay_from_the_install(package / "fronts", triohooks, tmp_path, env, where)


def _relay_from_the_install(
    fronts: Path, triohooks: list[str], tmp_path: Path, env: dict[str, str], where: Path
) -> None:
    """The package carries the native client's source, and the Python relay a catch-all runs
    (``python -I -S -c BOOT DIR``: nothing of PYTHONPATH) finds the installed triohooks."""
    assert (fronts / "relay_client.c").is_file()
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    guard = 'grep -q "git push" && { echo "no pushing" >&2; exit 2; }; exit 0'
    hooks = {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": guard}]}]}
    (home / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))
    env = {**env, "HOME": str(home), "TRIOHOOKS_NO_AUTOSTART": "1"}
    _run([*triohooks, "claude", "install", "--scope", "user"], cwd=where, env=env)
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


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """``make dist`` run on a copy of the source (with this venv: ``-o`` keeps make from
    installing it again): its wheel and its sdist."""
    src = _source_copy(tmp_path_factory.mktemp("dist"))
    venv = Path(sys.executable).parent.parent
    _run(["make", "-C", str(src), "-o", f"{venv}/.installed", f"VENV={venv}", "dist"])
    (wheel,) = (src / "dist").glob("triohooks-*-py3-none-any.whl")
    (sdist,) = (src / "dist").glob("triohooks-*.tar.gz")
    return wheel, sdist


@pytest.fixture(scope="module")
def git_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A local clone's URL, in pip's ``git+`` form."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = _source_copy(tmp_path_factory.mktemp("git"))
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(repo)]
    _run([*git, "init", "-q"])
    _run([*git, "add", "."])
    _run([*git, "commit", "-q", "-m", "triohooks"])
    return f"git+file://{repo}"


@pytest.fixture(scope="module")
def uv_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One uv cache for this module's installs (the dependencies are fetched once)."""
    return tmp_path_factory.mktemp("uv-cache")


def test_make_dist_builds_a_wheel_and_an_sdist_that_carry_the_relay_source(
    built: tuple[Path, Path],
) -> None:
    wheel, sdist = built
    with zipfile.ZipFile(wheel) as whl:
        names = set(whl.namelist())
        (top,) = [n for n in names if n.endswith(".dist-info/top_level.txt")]
        assert whl.read(top).decode().split() == ["triohooks"]
    assert "triohooks/fronts/relay_client.c" in names
    assert "triohooks/actors/reaper.py" in names
    assert not any(n.startswith(("tests/", "runtime/", "actors/")) for n in names)
    with tarfile.open(sdist) as tar:
        inside = {name.partition("/")[2] for name in tar.getnames()}
    for needed in ("pyproject.toml", "MANIFEST.in", "runtime/fronts/relay_client.c",
                   "docs/getting-started.md", "examples/hooks.toml", "tests/conftest.py"):  # fmt: skip
        assert needed in inside, needed
    assert not any("__pycache__" in name for name in inside)


def test_pip_install_from_the_sdist(tmp_path: Path, built: tuple[Path, Path]) -> None:
    _use_it(_pip_install(tmp_path, str(built[1])), tmp_path)


def test_pip_install_from_the_wheel(tmp_path: Path, built: tuple[Path, Path]) -> None:
    _use_it(_pip_install(tmp_path, str(built[0])), tmp_path)


def test_pip_install_from_a_git_url(tmp_path: Path, git_url: str) -> None:
    _use_it(_pip_install(tmp_path, f"triohooks @ {git_url}"), tmp_path)


def test_pipx_install_from_the_wheel(tmp_path: Path, built: tuple[Path, Path]) -> None:
    _use_it(_pipx_install(tmp_path, str(built[0])), tmp_path)


def test_pipx_install_from_a_git_url(tmp_path: Path, git_url: str) -> None:
    _use_it(_pipx_install(tmp_path, git_url), tmp_path)


def test_uv_tool_install_from_the_wheel(
    tmp_path: Path, built: tuple[Path, Path], uv_cache: Path
) -> None:
    _use_it(_uv_tool_install(tmp_path, str(built[0]), uv_cache), tmp_path)


def test_uv_tool_install_from_a_git_url(tmp_path: Path, git_url: str, uv_cache: Path) -> None:
    _use_it(_uv_tool_install(tmp_path, f"triohooks @ {git_url}", uv_cache), tmp_path)
