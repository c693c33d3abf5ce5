"""No escapees: a hook's descendants that leave its process group *and* drop the run marker
still die -- within 2 s of the hook's timeout, its normal exit, engine close and host SIGKILL --
on the linux backend. Every case runs on the posix backend too, where what holds is less
(``POSIX_SURVIVES``, the table in docs/security.md): each case pins which it is.

Real processes, real clock. Each case starts ``sleep 300.<random>`` through one escape
pattern, waits until that process runs, then ends the hook one of four ways and counts the
processes whose argv is exactly ``sleep 300.<random>``. Survivors are killed by pid in a
``finally`` (a marker-less process re-parented away from the test escapes the leak fixture).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest
import trio

from tests.helpers import running, survivors_after, unique_sleep
from triohooks.actors.process_guard import open_guard
from triohooks.handlers.process import ProcessResult, ProcessSpec

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("guard_backend")]

REPO = Path(__file__).resolve().parent.parent
#: How long escapees may outlive the end of their hook.
DEADLINE_S = 2.0

#: Each leaves the hook's process group and drops ``TRIOHOOKS_RUN``; ``{sleep}`` is the unique
#: ``sleep 300.<random>`` whose survival is counted.
PATTERNS = {
    "env-i-setsid": "env -i setsid {sleep} &",
    "setsid-env-u": "setsid env -u TRIOHOOKS_RUN {sleep} &",
    "double-fork": "( ( env -i {sleep} & ) & )",
    "double-fork-setsid": "( ( setsid env -i {sleep} & ) & )",
    "nohup-setsid": "nohup setsid env -i {sleep} >/dev/null 2>&1 &",
}
#: What the posix backend cannot find, by how the hook ended: a process that left the group and
#: dropped the marker is found only while it is still a descendant of a leader that is stopped
#: (timeout, close: the leader's descendants are snapshotted before the kill); a double fork
#: has left the tree by then, a normal exit reaps the leader before anyone looks, and the host's
#: death leaves only groups and markers to go by.
SETSID = {"env-i-setsid", "setsid-env-u", "double-fork-setsid", "nohup-setsid"}
POSIX_SURVIVES = {
    "timeout": {"double-fork-setsid"},
    "exit": SETSID,
    "close": {"double-fork-setsid"},
    "host": SETSID,
}


async def assert_outcome(argv: list[str], backend: str, phase: str, name: str) -> None:
    """None of ``argv`` is left within the deadline; or, where the table says the posix
    backend cannot find it, it is still there after a sweep (and the test kills it)."""
    if backend == "posix" and name in POSIX_SURVIVES[phase]:
        # Two sweeps' time (nothing here counts the sweeps): what holds is that it is NOT killed.
        await trio.sleep(0.5)
        assert len(running(argv)) == 1
    else:
        assert await survivors_after(argv) == []


async def until_running(argv: list[str]) -> list[psutil.Process]:
    while not (found := running(argv)):
        await trio.sleep(0.01)
    return found


@contextmanager
def killing_survivors(argv: list[str]) -> Iterator[None]:
    try:
        yield
    finally:
        for proc in running(argv):
            with_pid = proc.pid
            try:
                os.kill(with_pid, signal.SIGKILL)
            except OSError:
                pass


def spec(script: str, timeout_s: float) -> ProcessSpec:
    return ProcessSpec(argv=("bash", "-c", script), cwd=os.getcwd(), timeout_s=timeout_s)


@pytest.mark.parametrize("name", PATTERNS)
async def test_escapee_dies_at_the_hooks_timeout(name: str, guard_backend: str) -> None:
    pattern = PATTERNS[name]
    words, argv = unique_sleep()
    results: list[ProcessResult] = []
    with killing_survivors(argv), trio.fail_after(15):
        async with open_guard() as reaper, trio.open_nursery() as nursery:

            async def run() -> None:
                results.append(
                    await reaper.run(spec(f"{pattern.format(sleep=words)}\nsleep 30", 1.0))
                )

            nursery.start_soon(run)
            await until_running(argv)
            assert not results  # the escapee ran before the timeout
            while not results:
                await trio.sleep(0.005)
            assert results[0].status == "timeout"
            await assert_outcome(argv, guard_backend, "timeout", name)


async def test_a_burst_of_timeouts_leaves_no_escapee(guard_backend: str) -> None:
    # 20 hooks at once, each leaving the group without its marker (one sweep serves them all
    # on the helper; the posix backend finds these from its snapshot of each leader's tree).
    words, argv = unique_sleep()
    script = "setsid env -u TRIOHOOKS_RUN {sleep} &\nsetsid env -u TRIOHOOKS_RUN {sleep} &\n"
    results: list[ProcessResult] = []
    with killing_survivors(argv), trio.fail_after(30):
        async with open_guard() as reaper, trio.open_nursery() as nursery:

            async def run() -> None:
                results.append(await reaper.run(spec(script.format(sleep=words) + "sleep 30", 1.0)))

            for _ in range(20):
                nursery.start_soon(run)
            seen = len(await until_running(argv))
            while len(results) < 20:
                seen = max(seen, len(running(argv)))
                await trio.sleep(0.01)
        assert [r.status for r in results] == ["timeout"] * 20
        assert seen >= 20  # the escapees ran (the hooks' own sleeps keep them past 1 s)
        assert await survivors_after(argv) == []


@pytest.mark.parametrize("name", PATTERNS)
async def test_escapee_dies_after_the_hook_exits(
    name: str, tmp_path: Path, guard_backend: str
) -> None:
    pattern = PATTERNS[name]
    words, argv = unique_sleep()
    go = tmp_path / "go"
    script = f"{pattern.format(sleep=words)}\nuntil [ -e {go} ]; do sleep 0.01; done; echo done"
    results: list[ProcessResult] = []
    with killing_survivors(argv), trio.fail_after(15):
        async with open_guard() as reaper, trio.open_nursery() as nursery:

            async def run() -> None:
                results.append(await reaper.run(spec(script, 10)))

            nursery.start_soon(run)
            await until_running(argv)
            go.touch()  # the hook may exit now
            while not results:
                await trio.sleep(0.005)
            assert (results[0].status, results[0].stdout) == ("exited", "done\n")
            # (the engine is still open)
            await assert_outcome(argv, guard_backend, "exit", name)


@pytest.mark.parametrize("name", PATTERNS)
async def test_escapee_dies_at_engine_close(name: str, guard_backend: str) -> None:
    pattern = PATTERNS[name]
    words, argv = unique_sleep()
    results: list[ProcessResult] = []
    with killing_survivors(argv), trio.fail_after(15):
        async with trio.open_nursery() as nursery:
            async with open_guard() as reaper:

                async def run() -> None:
                    results.append(
                        await reaper.run(spec(f"{pattern.format(sleep=words)}\nsleep 30", 30))
                    )

                nursery.start_soon(run)
                await until_running(argv)
            # Closed: leaving the guard killed the hook and stopped the watchdog.
            await assert_outcome(argv, guard_backend, "close", name)
    assert results[0].status == "killed"


async def test_escapee_dies_when_the_engine_closes_mid_hook(tmp_path: Path) -> None:
    """The same through the whole engine: closing it while a hook runs."""
    from triohooks.engine.hook_engine import HookEngine

    words, argv = unique_sleep()
    (tmp_path / "config").mkdir()
    (tmp_path / "ws").mkdir()
    hook = f"env -i setsid {words} & sleep 30"
    (tmp_path / "config/hooks.toml").write_text(f"[[hooks.pre_tool]]\ncommand = {hook!r}\n")
    with killing_survivors(argv), trio.fail_after(15):
        async with trio.open_nursery() as nursery:
            async with HookEngine.open(
                workspace=tmp_path / "ws",
                config_dir=tmp_path / "config",
                state_dir=tmp_path / "state",
                audit=False,
            ) as engine:
                nursery.start_soon(engine.pre_tool, "bash", {"command": "ls"})
                await until_running(argv)
            assert await survivors_after(argv) == []


HOST = """
import sys
import trio
from triohooks.actors.process_guard import open_guard
from triohooks.handlers.process import ProcessSpec

async def main():
    async with open_guard() as reaper:
        await reaper.run(ProcessSpec(argv=("bash", "-c", sys.argv[1]), cwd="/", timeout_s=600))

trio.run(main)
"""


@pytest.mark.parametrize("name", PATTERNS)
async def test_escapee_dies_when_the_host_is_sigkilled(name: str, guard_backend: str) -> None:
    pattern = PATTERNS[name]
    words, argv = unique_sleep()
    with killing_survivors(argv), trio.fail_after(15):
        host = await trio.lowlevel.open_process(
            [sys.executable, "-c", HOST, f"{pattern.format(sleep=words)}\nsleep 30"],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            stdout=subprocess.DEVNULL,
        )
        try:
            await until_running(argv)
        finally:
            host.send_signal(signal.SIGKILL)
            await host.wait()
        assert host.returncode == -signal.SIGKILL
        await assert_outcome(argv, guard_backend, "host", name)
