"""The distribution as a packager sees it: one import package, ``triohooks``, and nothing else.

Builds the real wheel from a copy of the sources (no network: the venv's own setuptools) and
reads what it holds.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder in ("runtime", "actors"):
        shutil.copytree(ROOT / folder, src / folder, ignore=ignore)
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", out, src],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = out.glob("triohooks-*.whl")
    return wheel, done.stdout + done.stderr


def names(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as zf:
        return zf.namelist()


def test_wheel_holds_only_the_triohooks_package(built: tuple[Path, str]) -> None:
    wheel, _ = built
    top = {n.split("/", 1)[0] for n in names(wheel)}
    dist_info = {t for t in top if t.endswith(".dist-info")}
    assert top - dist_info == {"triohooks"}
    assert len(dist_info) == 1


def test_every_source_module_is_in_the_wheel(built: tuple[Path, str]) -> None:
    wheel, _ = built
    held = set(names(wheel))
    expected = {
        "triohooks/" + p.relative_to(ROOT / "runtime").as_posix()
        for p in (ROOT / "runtime").rglob("*")
        if p.is_file() and p.suffix in (".py", ".md", ".typed") and "__pycache__" not in p.parts
    }
    expected |= {
        "triohooks/actors/" + p.relative_to(ROOT / "actors").as_posix()
        for p in (ROOT / "actors").rglob("*.py")
        if "__pycache__" not in p.parts
    }
    assert "triohooks/py.typed" in expected
    assert "triohooks/fronts/skills/yolop-hooks.md" in expected
    assert expected - held == set()


def test_metadata_has_the_spdx_license_and_the_console_script(built: tuple[Path, str]) -> None:
    wheel, _ = built
    with zipfile.ZipFile(wheel) as zf:
        meta_name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        meta = zf.read(meta_name).decode()
        entry = zf.read(meta_name.replace("METADATA", "entry_points.txt")).decode()
    assert "License-Expression: MIT" in meta
    assert "triohooks = triohooks.fronts.cli:main" in entry


def test_the_build_warns_about_nothing(built: tuple[Path, str]) -> None:
    _, log = built
    warnings = [line for line in log.splitlines() if "Warning" in line or "warning:" in line]
    assert warnings == []
