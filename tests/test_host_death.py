"""Host death: a host SIGKILLed mid-hook leaves nothing behind, thanks to the watchdog."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
import trio

from tests.conftest import MARKER, MARKER_VAR

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent

HOST = """
import trio
from actors.reaper import ProcessSpec, open_reaper

async def main():
    async with open_reaper() as reaper:
        await reaper.run(ProcessSpec(argv=("sleep", "1000"), cwd="/", timeout_s=600))

trio.run(main)
"""


def ours(ppid: int | None = None) -> list[psutil.Process]:
    """Live (non-zombie) processes carrying this test session's marker."""
    found = []
    for proc in psutil.process_iter(["pid", "ppid", "status"]):
        if proc.pid == os.getpid() or proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        try:
            if proc.environ().get(MARKER_VAR) == MARKER:
                found.append(proc)
        except psutil.Error:
            continue
    return [p for p in found if ppid is None or p.info["ppid"] == ppid]


def cmdline(proc: psutil.Process) -> list[str]:
    try:
        args: list[str] = proc.cmdline()
    except psutil.Error:
        return []
    return args


def alive(proc: psutil.Process) -> bool:
    try:
        return bool(proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


async def gone_within(procs: list[psutil.Process], seconds: float) -> list[psutil.Process]:
    with trio.move_on_after(seconds):
        while any(alive(p) for p in procs):
            await trio.sleep(0.02)
    return [p for p in procs if alive(p)]


async def test_sigkilled_host_leaves_no_hook_process() -> None:
    with trio.fail_after(15):
        host = await trio.lowlevel.open_process(
            [sys.executable, "-c", HOST],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            stdout=subprocess.DEVNULL,
        )
        try:
            while True:  # until the host's hook and watchdog both exist
                children = ours(ppid=host.pid)
                hooks = [p for p in children if cmdline(p) == ["sleep", "1000"]]
                watchdogs = [p for p in children if any("_watchdog" in a for a in cmdline(p))]
                if hooks and watchdogs:
                    break
                await trio.sleep(0.02)
            assert hooks[0].pid == os.getpgid(hooks[0].pid)  # in its own group
        finally:
            host.send_signal(signal.SIGKILL)
            await host.wait()
        assert host.returncode == -signal.SIGKILL
        assert await gone_within(hooks, 2.0) == []
        assert await gone_within(watchdogs, 1.0) == []  # it cleaned up and exited
