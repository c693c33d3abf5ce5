"""Host death: a host SIGKILLed mid-hook leaves nothing behind, thanks to the watchdog.

The host is a child Python process running the reaper with its watchdog; its hook sleeps.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
import trio

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent

HOST = """
import sys
import trio
from triohooks.actors.reaper import open_reaper
from triohooks.handlers.process import ProcessSpec

async def main():
    async with open_reaper() as reaper, trio.open_nursery() as nursery:
        spec = ProcessSpec(argv=tuple(sys.argv[1:]), cwd="/", timeout_s=600)
        nursery.start_soon(reaper.run, spec)
        while reaper.live < 1:  # live counts a run once the watchdog was told its group
            await trio.sleep(0.01)
        print("ready", flush=True)

trio.run(main)
"""


SLEEPS = (["sleep", "1000"], ["/bin/sleep", "1000"])


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


@pytest.mark.parametrize(
    "hook",
    [
        ("sleep", "1000"),
        # Drops the run marker: only the process group the watchdog was told about finds it.
        ("env", "-i", "/bin/sleep", "1000"),
    ],
)
async def test_sigkilled_host_leaves_no_hook_process(hook: tuple[str, ...]) -> None:
    hooks: list[psutil.Process] = []
    try:
        with trio.fail_after(15):
            host = await trio.lowlevel.open_process(
                [sys.executable, "-c", HOST, *hook],
                cwd=REPO,
                env={**os.environ, "PYTHONPATH": str(REPO)},
                stdout=subprocess.PIPE,
            )
            out = host.stdout
            assert out is not None
            try:
                said = b""
                while b"ready" not in said:  # the host told its watchdog about the hook
                    said += await out.receive_some()
                while True:  # until the host's hook and watchdog both exist
                    children = psutil.Process(host.pid).children()
                    # Exact argv: a child caught between fork and exec still shows the host's.
                    hooks = [p for p in children if cmdline(p) in SLEEPS]
                    watchdogs = [p for p in children if any("_watchdog" in a for a in cmdline(p))]
                    if hooks and watchdogs:
                        break
                    await trio.sleep(0.02)
                assert hooks[0].pid == os.getpgid(hooks[0].pid)  # in its own group
            finally:
                host.send_signal(signal.SIGKILL)
                await host.wait()
                await out.aclose()
            assert host.returncode == -signal.SIGKILL
            assert await gone_within(hooks, 2.0) == []
            assert await gone_within(watchdogs, 1.0) == []  # it cleaned up and exited
    finally:
        for proc in hooks:  # a marker-less survivor would escape the leak fixture
            if alive(proc):
                proc.kill()
