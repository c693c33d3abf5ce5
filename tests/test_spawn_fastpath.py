"""The spawn fast path through the watchdog helper: the cached host environment, pipes the
helper makes (stdin written by it, the rest by us), a host out of descriptors; and stdin
without the helper (the posix guard's path)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest
import trio

from triohooks.actors import posix_guard
from triohooks.actors._watchdog import STDIN_INLINE
from triohooks.actors.reaper import open_reaper
from triohooks.handlers.process import ProcessSpec

pytestmark = pytest.mark.slow


def sh(command: str, **kw: Any) -> ProcessSpec:
    kw.setdefault("cwd", os.getcwd())
    kw.setdefault("timeout_s", 5.0)
    return ProcessSpec(argv=("bash", "-c", command), **kw)


async def test_host_environment_changes_reach_hooks_through_the_helper(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with trio.fail_after(10):
        async with open_reaper() as reaper:
            assert reaper.watchdog_pid is not None
            spec = sh('echo "${TRIOHOOKS_PROBE-unset} $TRIOHOOKS_RUN"')
            assert (await reaper.run(spec)).stdout == f"unset {reaper.engine_id}:1\n"
            # Unchanged: the helper's copy is used, and each run still gets its own marker.
            assert (await reaper.run(spec)).stdout == f"unset {reaper.engine_id}:2\n"
            monkeypatch.setenv("TRIOHOOKS_PROBE", "one")
            assert (await reaper.run(spec)).stdout == f"one {reaper.engine_id}:3\n"
            monkeypatch.setitem(os.environb, b"TRIOHOOKS_PROBE", b"two")
            assert (await reaper.run(spec)).stdout == f"two {reaper.engine_id}:4\n"
            monkeypatch.delenv("TRIOHOOKS_PROBE")
            assert (await reaper.run(spec)).stdout == f"unset {reaper.engine_id}:5\n"
            assert reaper.stats().spawned == 5


@pytest.mark.parametrize("store", [True, False], ids=["environ-store", "environb"])
def test_the_snapshot_is_kept_only_while_nothing_changed(
    monkeypatch: pytest.MonkeyPatch, store: bool
) -> None:
    """What os.environb holds, every change seen (set through os.environ or os.environb,
    deleted), from the store os.environ keeps or, where there is none, through os.environb."""
    if not store:
        monkeypatch.setattr(posix_guard, "_environ_store", lambda: None)
    snapshots = posix_guard.EnvironmentSnapshot()
    assert (snapshots._store is not None) == store
    first, version = snapshots.take()
    assert first == dict(os.environb)
    assert snapshots.take()[1] == version  # kept
    monkeypatch.setenv("TRIOHOOKS_PROBE", "x")
    second, changed = snapshots.take()
    assert changed != version and second[b"TRIOHOOKS_PROBE"] == b"x"
    assert snapshots.take()[1] == changed
    monkeypatch.setitem(os.environb, b"TRIOHOOKS_PROBE", b"y")
    assert snapshots.take()[0][b"TRIOHOOKS_PROBE"] == b"y"
    monkeypatch.delenv("TRIOHOOKS_PROBE")
    third, _ = snapshots.take()
    assert b"TRIOHOOKS_PROBE" not in third and third == dict(os.environb)


@pytest.mark.parametrize("helper", [True, False], ids=["helper", "posix-path"])
@pytest.mark.parametrize(
    "size", [0, 1, STDIN_INLINE - 1, STDIN_INLINE, STDIN_INLINE + 1, 70_000, 3_000_000]
)
async def test_stdin_of_any_size_arrives_whole(size: int, helper: bool) -> None:
    """Through the helper (a small payload sent with the request), and without it (the posix
    guard's path: what fits in the pipe written before the spawn, the rest fed after)."""
    payload = bytes(i % 251 for i in range(size))
    with trio.fail_after(10):
        async with open_reaper(watchdog=helper) as reaper:
            assert (reaper.watchdog_pid is not None) == helper
            result = await reaper.run(sh("cksum", stdin=payload))
    expected = subprocess.run(["cksum"], input=payload, capture_output=True, check=True)
    assert (result.status, result.stdout) == ("exited", expected.stdout.decode())


async def test_a_new_helper_is_sent_the_environment_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TRIOHOOKS_PROBE", "kept")
    with trio.fail_after(20):
        async with open_reaper() as reaper:
            spec = sh('echo "${TRIOHOOKS_PROBE-unset}"')
            assert (await reaper.run(spec)).stdout == "kept\n"
            first = reaper.watchdog_pid
            assert first is not None
            os.kill(first, 9)
            while reaper.watchdog_pid in (None, first):
                await trio.sleep(0.01)
            result = await reaper.run(spec)
            assert (result.status, result.stdout) == ("exited", "kept\n")


SHORT_OF_DESCRIPTORS = textwrap.dedent(
    """
    import os, resource, trio
    from triohooks.actors.reaper import open_reaper
    from triohooks.handlers.process import ProcessSpec

    def room_for(n):  # the descriptor limit under which exactly n more can be opened
        taken = {int(fd) for fd in os.listdir("/proc/self/fd")}
        free = [fd for fd in range(len(taken) + n + 1) if fd not in taken]
        return free[n - 1] + 1

    async def main():
        spec = ProcessSpec(argv=("bash", "-c", "echo ok"), cwd="/", timeout_s=5)
        async with open_reaper() as reaper:
            helper = reaper.watchdog_pid
            assert (await reaper.run(spec)).stdout == "ok\\n"
            soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            # Room for 2 of the 6 descriptors a spawn reply carries.
            resource.setrlimit(resource.RLIMIT_NOFILE, (room_for(2), hard))
            try:
                short = await reaper.run(spec)
            finally:
                resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
            print(short.status, short.error)
            assert reaper.watchdog_pid == helper, "the helper was given up"
            assert (await reaper.run(spec)).stdout == "ok\\n"
            print("helper kept")

    trio.run(main)
    """
)


def test_a_host_out_of_descriptors_fails_the_spawn_not_the_helper() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SHORT_OF_DESCRIPTORS],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "spawn_failed cannot start 'bash': Too many open files",
        "helper kept",
    ]
