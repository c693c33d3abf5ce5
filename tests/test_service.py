"""``triohooks service install|uninstall``: the user service file that keeps ``serve`` running."""

from __future__ import annotations

import os
import plistlib
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import cli_here

pytestmark = pytest.mark.slow


def run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "XDG_CONFIG_HOME"}
    env["HOME"] = str(home)
    env["PATH"] = "/nonexistent"  # no systemctl/launchctl: nothing is started or stopped here
    return cli_here(["service", *args], env=env)


def test_a_systemd_user_unit_runs_this_installs_serve(tmp_path: Path) -> None:
    unit = tmp_path / ".config" / "systemd" / "user" / "triohooks.service"
    dry = run(tmp_path, "install", "--platform", "linux", "--dry-run")
    assert dry.returncode == 0 and "ExecStart=" in dry.stdout and not unit.exists()
    done = run(tmp_path, "install", "--platform", "linux", "--port", "9876")
    assert done.returncode == 0, done.stderr
    text = unit.read_text()
    exec_start = next(line for line in text.splitlines() if line.startswith("ExecStart="))
    assert shlex.split(exec_start.removeprefix("ExecStart=")) == [
        sys.executable,
        "-I",  # isolated: docs/security.md
        "-m",
        "triohooks",
        "serve",
        "--port",
        "9876",
    ]
    assert "Restart=on-failure" in text and "WantedBy=default.target" in text
    assert "systemctl --user enable --now triohooks.service" in done.stdout
    gone = run(tmp_path, "uninstall", "--platform", "linux")
    assert gone.returncode == 0 and not unit.exists()
    assert "nothing to remove" in run(tmp_path, "uninstall", "--platform", "linux").stdout


def test_a_launchd_agent_for_macos(tmp_path: Path) -> None:
    done = run(tmp_path, "install", "--platform", "macos")
    assert done.returncode == 0, done.stderr
    path = tmp_path / "Library" / "LaunchAgents" / "dev.triohooks.serve.plist"
    plist = plistlib.loads(path.read_bytes())
    assert plist["ProgramArguments"][:5] == [sys.executable, "-I", "-m", "triohooks", "serve"]
    assert plist["RunAtLoad"] is True and plist["Label"] == "dev.triohooks.serve"
    assert f"launchctl load -w {path}" in done.stdout
    assert run(tmp_path, "uninstall", "--platform", "macos").returncode == 0
    assert not path.exists()


def test_a_service_dir_leading_out_of_home_is_refused(tmp_path: Path) -> None:
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    elsewhere.mkdir()
    (home / ".config").mkdir(parents=True)
    (home / ".config" / "systemd").symlink_to(elsewhere)
    done = run(home, "install", "--platform", "linux")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert not any(elsewhere.rglob("*"))
