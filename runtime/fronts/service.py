"""``triohooks service install|uninstall``: keep ``triohooks serve`` running as a user service.

The relay starts a ``serve`` when none runs (the first call of a session pays ~0.5 s), and an
http catch-all needs one running before the agent's first call; for those who want the server
up from login, this writes a **systemd user unit** (Linux:
``$XDG_CONFIG_HOME/systemd/user/triohooks.service``) or a **launchd agent** (macOS:
``~/Library/LaunchAgents/dev.triohooks.serve.plist``) that runs this install's ``triohooks
serve``, restarted when it fails, and prints the one command that starts it now (starting it is
the user's call). ``uninstall`` stops it (``systemctl --user disable --now`` / ``launchctl
unload``, when that tool is there; a failure is reported, not fatal) and removes the file.
Exit 0, or 1 with one line on stderr.
"""

from __future__ import annotations

import argparse
import os
import plistlib
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any, Final, Literal

from triohooks.config.paths import UnsafeWriteError, check_write_target, write_file_atomic
from triohooks.fronts.relay import isolated_command

Platform = Literal["linux", "macos"]
UNIT_NAME: Final = "triohooks.service"
LABEL: Final = "dev.triohooks.serve"


def _argv(port: int) -> list[str]:
    """This install's ``triohooks serve``, isolated as every Python process triohooks starts
    (docs/security.md)."""
    return isolated_command("serve", "--port", str(port))


def service_file(platform: Platform, home: Path, environ: dict[str, str]) -> Path:
    if platform == "macos":
        return home / "Library" / "LaunchAgents" / f"{LABEL}.plist"
    config = environ.get("XDG_CONFIG_HOME") or str(home / ".config")
    return Path(config) / "systemd" / "user" / UNIT_NAME


def render(platform: Platform, port: int) -> bytes:
    """The unit or plist that runs ``triohooks serve`` on ``port`` with this interpreter."""
    argv = _argv(port)
    if platform == "macos":
        plist = {
            "Label": LABEL,
            "ProgramArguments": argv,
            "RunAtLoad": True,
            "KeepAlive": {"SuccessfulExit": False},
            "ProcessType": "Background",
        }
        return plistlib.dumps(plist)
    return (
        "[Unit]\n"
        "Description=triohooks serve: the hook runtime of your coding agents\n\n"
        "[Service]\n"
        f"ExecStart={shlex.join(argv)}\n"
        "Restart=on-failure\n\n"
        "[Install]\n"
        "WantedBy=default.target\n"
    ).encode()


def _start_stop(platform: Platform, path: Path, install: bool) -> str:
    if platform == "macos":
        verb = "load -w" if install else "unload -w"
        return f"launchctl {verb} {shlex.quote(str(path))}"
    if install:
        return f"systemctl --user daemon-reload && systemctl --user enable --now {UNIT_NAME}"
    return f"systemctl --user disable --now {UNIT_NAME}"


def add_service_command(sub: argparse._SubParsersAction[Any]) -> None:
    p = sub.add_parser("service", help="keep `triohooks serve` running as a user service")
    actions = p.add_subparsers(dest="action", required=True)
    for action, help_text in (
        ("install", "write a systemd user unit (Linux) or launchd agent (macOS) for serve"),
        ("uninstall", "remove it"),
    ):
        q = actions.add_parser(action, help=help_text)
        q.add_argument(
            "--platform",
            choices=("linux", "macos"),
            default="macos" if sys.platform == "darwin" else "linux",
            help="which kind of service file (default: this machine's)",
        )
        q.add_argument("--dry-run", action="store_true", help="print it, write nothing")
        if action == "install":
            q.add_argument("--port", type=int, default=8765, help="serve's port (default 8765)")


def cmd_service(args: argparse.Namespace) -> int:
    home = Path(os.path.expanduser("~"))
    path = service_file(args.platform, home, dict(os.environ))
    try:
        check_write_target(path, home)
    except UnsafeWriteError as exc:
        print(f"triohooks: {exc}", file=sys.stderr)
        return 1
    if args.action == "install":
        data = render(args.platform, args.port)
        if args.dry_run:
            sys.stdout.write(f"{path}:\n{data.decode()}")
            return 0
        path.parent.mkdir(parents=True, exist_ok=True)
        write_file_atomic(path, data, new_mode=0o644)
        print(f"written {path}")
        print(f"start it now: {_start_stop(args.platform, path, True)}")
        return 0
    if not path.exists():
        print(f"{path}: not installed, nothing to remove")
        return 0
    stop = _start_stop(args.platform, path, False)
    if args.dry_run:
        print(f"would run `{stop}` and remove {path}")
        return 0
    tool = "launchctl" if args.platform == "macos" else "systemctl"
    if shutil.which(tool) is not None:
        import subprocess

        try:
            done = subprocess.run(
                ["bash", "-c", stop], capture_output=True, text=True, timeout=30, check=False
            )
            if done.returncode != 0:
                said = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
                print(f"triohooks: `{stop}` failed: {said[0]}", file=sys.stderr)
        except (OSError, subprocess.TimeoutExpired) as exc:
            print(f"triohooks: `{stop}` failed: {exc}", file=sys.stderr)
    path.unlink()
    print(f"removed {path}")
    return 0
