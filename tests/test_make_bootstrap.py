"""``make demo`` on a machine whose Python is too old, or whose install fails: the Makefile's
bootstrap says which Python to use and leaves no ``.venv`` that looks installed.

Runs the real ``make`` on a copy of the Makefile and pyproject.toml, with fake interpreters on
a PATH made for the test (no network: nothing is installed)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: Python 3.9, as far as the Makefile can tell (what it asks: its version, and whether it is
#: new enough); anything else it is asked is an error, so nothing gets made with it.
OLD_PYTHON = """#!/bin/sh
case "$2" in
  *sys.exit*) exit 1 ;;
  *print*) echo "Python 3.9" ; exit 0 ;;
esac
echo "python 3.9 cannot: $*" >&2
exit 1
"""
#: A new enough Python whose venv gets a pip that fails, as pip does offline.
FAILING_PIP = """#!/bin/sh
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  mkdir -p "$3/bin"
  printf '#!/bin/sh\\necho "ERROR: No matching distribution found for trio (offline)"\\nexit 1\\n' \\
    > "$3/bin/pip"
  chmod +x "$3/bin/pip"
  exit 0
fi
exec {python} "$@"
"""


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    repo = tmp_path / "repo"
    repo.mkdir()
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(ROOT / name, repo / name)
    tools = tmp_path / "tools"  # what the recipes run, and no Python
    tools.mkdir()
    for tool in ("make", "bash", "sh", "sed", "rm", "cat", "touch", "mkdir", "chmod"):
        found = shutil.which(tool)
        assert found is not None, tool
        (tools / tool).symlink_to(found)
    (tmp_path / "bin").mkdir()
    return repo


def _script(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


def _make(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    bins = f"{repo.parent / 'bin'}{os.pathsep}{repo.parent / 'tools'}"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHON", "MAKEFLAGS", "MAKELEVEL")}
    return subprocess.run(
        ["make", "--no-print-directory", *args],
        cwd=repo,
        env={**env, "PATH": bins},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("newer_on_path", [True, False])
def test_an_old_python_is_named_with_the_one_to_use_and_nothing_is_made(
    checkout: Path, newer_on_path: bool
) -> None:
    _script(checkout.parent / "bin" / "python3", OLD_PYTHON)
    if newer_on_path:
        (checkout.parent / "bin" / "python3.12").symlink_to(sys.executable)
    done = _make(checkout, "demo")
    assert done.returncode != 0
    lines = done.stderr.splitlines()
    assert lines[0] == (
        "make: triohooks needs Python 3.11 or newer; python3 is Python 3.9. Nothing was created."
    )
    assert lines[1] == (
        "make: python3.12 is on your PATH: PYTHON=python3.12 make demo"
        if newer_on_path
        else "make: install Python 3.11 or newer, then name it: PYTHON=python3.12 make demo"
    )
    assert sorted(p.name for p in checkout.iterdir()) == ["Makefile", "pyproject.toml"]


def test_a_missing_python_is_said_too(checkout: Path) -> None:
    done = _make(checkout, "test", "PYTHON=python3.99")
    assert done.returncode != 0
    assert "python3.99 is not found" in done.stderr
    assert "PYTHON=python3.12 make test" in done.stderr
    assert not (checkout / ".venv").exists()


def test_the_minimum_is_the_one_pyproject_requires(checkout: Path) -> None:
    pyproject = checkout / "pyproject.toml"
    text = pyproject.read_text()
    assert 'requires-python = ">=3.11"' in text
    pyproject.write_text(text.replace('requires-python = ">=3.11"', 'requires-python = ">=3.99"'))
    (checkout.parent / "bin" / "python3").symlink_to(sys.executable)
    done = _make(checkout, "demo")
    assert done.returncode != 0
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert f"triohooks needs Python 3.99 or newer; python3 is Python {version}." in done.stderr
    assert not (checkout / ".venv").exists()


@pytest.mark.parametrize("had_venv", [False, True])
def test_a_failed_install_leaves_nothing_that_looks_installed(
    checkout: Path, had_venv: bool
) -> None:
    _script(checkout.parent / "bin" / "python3", FAILING_PIP.format(python=sys.executable))
    venv = checkout / ".venv"
    if had_venv:  # an earlier install, and then pyproject.toml changed
        (venv / "bin").mkdir(parents=True)
        (venv / ".installed").touch()
        os.utime(venv / ".installed", (1, 1))
    done = _make(checkout, "demo")
    assert done.returncode != 0
    assert "ERROR: No matching distribution found for trio (offline)" in done.stdout
    if had_venv:
        assert "make: the install failed (above); the next make tries again" in done.stderr
        assert venv.is_dir() and not (venv / ".installed").exists()
    else:
        assert "make: the install failed (above); the .venv it began is removed" in done.stderr
        assert not venv.exists()
