"""The process guard with real processes and the real clock: spawning, pipes, caps, kills.

Every case runs on both backends (linux and posix) but those about the linux backend's own
machinery (the watchdog helper, the subreaper's orphan attribution: ``linux_guard``)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from contextlib import suppress
from pathlib import Path
from typing import Any

import psutil
import pytest
import trio

from triohooks.actors import _watchdog
from triohooks.actors._watchdog import RUN_VAR, FrameReader, frame, marked_processes
from triohooks.actors.guard import ProcessGuard
from triohooks.actors.process_guard import open_guard
from triohooks.actors.reaper import PAYLOAD_FILE_INLINE, open_reaper
from triohooks.handlers.process import ProcessSpec

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("guard_backend")]


def sh(command: str, *, timeout_s: float = 5.0, **kw: Any) -> ProcessSpec:
    kw.setdefault("cwd", os.getcwd())
    return ProcessSpec(argv=("bash", "-c", command), timeout_s=timeout_s, **kw)


def survivors(reaper: ProcessGuard) -> list[int]:
    """Live processes (zombies excluded) carrying this reaper's run marker."""
    return [pid for pid, _ in marked_processes(reaper.engine_id)]


async def assert_no_survivors(reaper: ProcessGuard, within: float = 0.3) -> None:
    """Nothing the reaper started is alive ``within`` seconds (a SIGKILLed process can take a
    moment to become a zombie; an escapee waits for the background sweep; a killed run's own
    task takes it off ``live`` once it has read its pipes to the end)."""
    with trio.move_on_after(within):
        while survivors(reaper) or reaper.live:
            await trio.sleep(0.01)
    assert survivors(reaper) == []
    assert reaper.live == 0


async def wait_live(reaper: ProcessGuard, n: int) -> None:
    while reaper.live < n:
        await trio.sleep(0.005)


async def test_command_gets_stdin_cwd_and_environment(tmp_path: Any) -> None:
    with trio.fail_after(5):
        async with open_guard() as reaper:
            spec = sh(
                'read -r line; echo "in=$line cwd=$PWD"; echo "run=$TRIOHOOKS_RUN" >&2; exit 3',
                cwd=str(tmp_path),
                stdin=b"payload\n",
            )
            result = await reaper.run(spec)
            assert result.status == "exited"
            assert result.exit_code == 3
            assert result.stdout == f"in=payload cwd={tmp_path}\n"
            assert result.stderr == f"run={reaper.engine_id}:1\n"
            assert result.stdout_bytes == len(result.stdout)
            assert result.pid is not None
            assert result.duration_ms > 0
            assert not result.truncated
            await assert_no_survivors(reaper)


async def test_spec_env_replaces_the_environment_but_keeps_the_marker() -> None:
    with trio.fail_after(5):
        async with open_guard() as reaper:
            spec = sh('echo "$ONLY:${HOME-unset}:$TRIOHOOKS_RUN"', env={"ONLY": "1"})
            result = await reaper.run(spec)
            assert result.stdout == f"1:unset:{reaper.engine_id}:1\n"
            assert os.environ.get(RUN_VAR) is None


async def test_args_run_without_a_shell() -> None:
    with trio.fail_after(5):
        async with open_guard() as reaper:
            spec = ProcessSpec(argv=("printf", "%s|", "$HOME", "a b"), cwd="/", timeout_s=5)
            result = await reaper.run(spec)
            assert (result.status, result.stdout) == ("exited", "$HOME|a b|")


async def test_each_run_is_its_own_session_and_group() -> None:
    code = "import os; print(os.getpid(), os.getpgid(0), os.getsid(0))"
    with trio.fail_after(5):
        async with open_guard() as reaper:
            spec = ProcessSpec(argv=(sys.executable, "-c", code), cwd="/", timeout_s=5)
            result = await reaper.run(spec)
            pid, pgid, sid = map(int, result.stdout.split())
            assert pid == pgid == sid == result.pid
            assert pgid != os.getpgid(0)


async def test_output_over_the_cap_is_truncated_but_drained_and_counted() -> None:
    with trio.fail_after(10):
        async with open_guard() as reaper:
            cmd = "head -c 300000 /dev/zero | tr '\\0' a; head -c 5000 /dev/zero >&2"
            result = await reaper.run(sh(cmd, output_cap=1000))
            assert result.status == "exited"
            assert result.exit_code == 0
            assert result.stdout == "a" * 1000
            assert result.stdout_bytes == 300_000
            assert result.stderr_bytes == 5000
            assert len(result.stderr) == 1000
            assert result.truncated


@pytest.mark.parametrize("stream", ["", ">&2"])
async def test_error_mode_overflow_kills_the_group(stream: str) -> None:
    with trio.fail_after(5):
        async with open_guard() as reaper:
            cmd = f"head -c 65537 /dev/zero {stream}; sleep 100"
            result = await reaper.run(sh(cmd, output_cap=65536, overflow="error"))
            assert result.status == "overflow"
            assert result.error == "hook output exceeded 65536 bytes"
            assert reaper.stats().overflows == 1
            await assert_no_survivors(reaper)


async def test_error_mode_exactly_at_the_cap_is_fine() -> None:
    with trio.fail_after(5):
        async with open_guard() as reaper:
            result = await reaper.run(
                sh("head -c 65536 /dev/zero", output_cap=65536, overflow="error")
            )
            assert (result.status, result.stdout_bytes, result.truncated) == (
                "exited",
                65536,
                False,
            )


async def test_non_utf8_output_is_replaced() -> None:
    with trio.fail_after(5):
        async with open_guard() as reaper:
            result = await reaper.run(sh("printf '\\xff\\xfeok'; printf '\\xc3' >&2"))
            assert result.stdout == "\ufffd\ufffdok"
            assert result.stderr == "\ufffd"


async def test_cancel_kills_the_group_and_reraises() -> None:
    with trio.fail_after(5):
        async with open_guard() as reaper:
            with trio.move_on_after(0.2) as scope:
                await reaper.run(sh("trap '' TERM; sleep 100 & sleep 100", timeout_s=60))
            assert scope.cancelled_caught
            assert reaper.stats().killed == 1
            await assert_no_survivors(reaper)


async def test_kill_all_on_close_kills_running_hooks() -> None:
    results = []

    async def one(reaper: ProcessGuard) -> None:
        results.append(await reaper.run(sh("sleep 100 & sleep 100", timeout_s=60)))

    with trio.fail_after(5):
        async with open_guard() as reaper, trio.open_nursery() as nursery:
            nursery.start_soon(one, reaper)
            nursery.start_soon(one, reaper)
            await wait_live(reaper, 2)
            assert await reaper.kill_all() == 2
            await assert_no_survivors(reaper)
            late = await reaper.run(sh("true"))
            assert (late.status, late.error) == ("killed", "killed: reaper closed")
    assert [r.status for r in results] == ["killed", "killed"]
    assert all(r.error == "killed: reaper closed" for r in results)


async def test_leaving_open_reaper_kills_hooks_and_stops_the_watchdog() -> None:
    results = []
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            async with open_guard() as reaper:
                watchdog = reaper.watchdog_pid
                assert watchdog is not None

                async def one() -> None:
                    results.append(await reaper.run(sh("sleep 100", timeout_s=60)))

                nursery.start_soon(one)
                await wait_live(reaper, 1)
            assert survivors(reaper) == []
    assert results[0].status == "killed"
    with pytest.raises(ProcessLookupError):
        os.kill(watchdog, 0)  # exited and reaped


async def test_background_child_is_swept_when_the_hook_exits() -> None:
    with trio.fail_after(5):
        async with open_guard() as reaper:
            start = trio.current_time()
            result = await reaper.run(sh("sleep 100 & echo hi"))
            assert (result.status, result.stdout) == ("exited", "hi\n")
            assert trio.current_time() - start < 1.0  # not held by the sleep's stdout
            await assert_no_survivors(reaper)


async def test_escaped_descendant_is_found_by_the_background_sweep() -> None:
    with trio.fail_after(5):
        async with open_guard() as reaper:
            result = await reaper.run(sh("setsid sleep 100 & sleep 0.1; echo hi"))
            assert (result.status, result.stdout) == ("exited", "hi\n")
            await assert_no_survivors(reaper, within=1.0)
            # The helper reports its count after the kill; our reader takes it as it comes.
            with trio.move_on_after(1.0):
                while reaper.stats().escapees_killed < 1:
                    await trio.sleep(0.01)
            assert reaper.stats().escapees_killed == 1


async def test_sweep_spares_processes_of_runs_still_going() -> None:
    with trio.fail_after(5):
        async with open_guard() as reaper, trio.open_nursery() as nursery:
            long_result = []

            async def long() -> None:
                long_result.append(await reaper.run(sh("sleep 0.6; echo survived")))

            nursery.start_soon(long)
            await wait_live(reaper, 1)
            for _ in range(3):  # each finished run asks for a sweep
                await reaper.run(sh("true"))
                await trio.sleep(0.1)
        assert long_result[0].stdout == "survived\n"


async def test_many_concurrent_runs_each_get_one_result() -> None:
    # Rounds of overlapping spawns: the background sweep must spare runs still spawning.
    with trio.fail_after(20):
        async with open_guard() as reaper:
            for _ in range(12):
                results: list[Any] = []
                async with trio.open_nursery() as nursery:
                    for i in range(20):
                        spec = sh(f"echo {i}; exit {i % 3}")
                        nursery.start_soon(_collect, reaper, spec, results)
                assert [r.status for r in results] == ["exited"] * 20
                assert sorted(int(r.stdout) for r in results) == list(range(20))
                assert all(r.exit_code == int(r.stdout) % 3 for r in results)
            stats = reaper.stats()
            assert (stats.spawned, stats.live, stats.killed, stats.escapees_killed) == (
                240,
                0,
                0,
                0,
            )


async def _collect(reaper: ProcessGuard, spec: ProcessSpec, into: list[Any]) -> None:
    into.append(await reaper.run(spec))


async def test_without_watchdog() -> None:
    with trio.fail_after(5):
        async with open_reaper(watchdog=False) as reaper:
            assert reaper.watchdog_pid is None
            result = await reaper.run(sh("kill -TERM $$"))
            assert (result.status, result.signal) == ("signaled", signal.SIGTERM)
            assert result.error == "killed by SIGTERM"


async def test_large_stdin_is_fed_as_the_hook_reads_it() -> None:
    with trio.fail_after(10):
        async with open_guard() as reaper:
            result = await reaper.run(sh("wc -c", stdin=b"x" * 10_000_000))
            assert (result.status, result.stdout.strip()) == ("exited", "10000000")


async def test_host_environment_changes_reach_the_next_hook(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with trio.fail_after(5):
        async with open_reaper(watchdog=False) as reaper:
            spec = sh('echo "${TRIOHOOKS_PROBE-unset}"')
            assert (await reaper.run(spec)).stdout == "unset\n"
            monkeypatch.setenv("TRIOHOOKS_PROBE", "one")
            assert (await reaper.run(spec)).stdout == "one\n"
            monkeypatch.setenv("TRIOHOOKS_PROBE", "two")
            assert (await reaper.run(spec)).stdout == "two\n"
            monkeypatch.delenv("TRIOHOOKS_PROBE")
            assert (await reaper.run(spec)).stdout == "unset\n"


async def test_body_exception_comes_out_unwrapped() -> None:
    with trio.fail_after(5), pytest.raises(ValueError, match="from the body"):
        async with open_reaper():
            raise ValueError("from the body")


async def test_cancelling_the_body_cleans_up_everything() -> None:
    with trio.fail_after(5):
        with trio.CancelScope() as scope:
            async with open_guard() as reaper:
                # The deadline starts once the guard is up (its start is not what is tested,
                # and on a loaded machine it can take longer than the body's 0.2 s).
                scope.deadline = trio.current_time() + 0.2
                await reaper.run(sh("sleep 100 & sleep 100", timeout_s=60))
        assert scope.cancelled_caught
        assert survivors(reaper) == []
        assert reaper.watchdog_pid is None


# -- the remembered PATH lookup (a shell's command hash) ------------------------------------------


def _program(directory: Any, text: str, mode: int = 0o755) -> str:
    path = os.path.join(directory, "myprog")
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


async def test_remembered_program_removed_falls_back_to_the_next_on_path(tmp_path: Any) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    env = dict(os.environ, PATH=f"{first}:{second}:/usr/bin:/bin")
    spec = ProcessSpec(argv=("myprog",), cwd=str(tmp_path), env=env, timeout_s=5)
    with trio.fail_after(10):
        async with open_reaper(watchdog=False) as reaper:
            missing = await reaper.run(spec)
            mine = _program(first, "#!/bin/sh\necho first\n")
            _program(second, "#!/bin/sh\necho second\n")
            assert (await reaper.run(spec)).stdout.strip() == "first"
            os.unlink(mine)  # the remembered file is gone: the search runs again
            after = await reaper.run(spec)
    assert missing.status == "spawn_failed" and "myprog" in (missing.error or "")
    assert after.status == "exited" and after.stdout.strip() == "second"


async def test_not_found_error_text_is_unchanged_by_the_cache(tmp_path: Any) -> None:
    env = dict(os.environ, PATH=f"{tmp_path}:/usr/bin:/bin")
    spec = ProcessSpec(argv=("no-such-program-xyz",), cwd=str(tmp_path), env=env, timeout_s=5)
    with trio.fail_after(10):
        async with open_reaper(watchdog=False) as reaper:
            errors = [(await reaper.run(spec)).error for _ in range(2)]
    assert errors[0] == errors[1] and errors[0] is not None
    assert "no-such-program-xyz" in errors[0]


async def test_relative_path_entries_are_searched_from_the_hooks_cwd(tmp_path: Any) -> None:
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    _program(here, "#!/bin/sh\necho here\n")
    _program(there, "#!/bin/sh\necho there\n")
    env = dict(os.environ, PATH=".:/usr/bin:/bin")
    with trio.fail_after(10):
        async with open_reaper(watchdog=False) as reaper:
            outs = [
                (
                    await reaper.run(
                        ProcessSpec(argv=("myprog",), cwd=str(d), env=env, timeout_s=5)
                    )
                ).stdout.strip()
                for d in (here, there)
            ]
    assert outs == ["here", "there"]  # "." is never remembered as one directory


# -- the watchdog helper spawns every hook and is their subreaper ---------------------------------


def _argv_running(argv: list[str]) -> list[int]:
    import psutil

    return [
        p.pid
        for p in psutil.process_iter(["cmdline", "status"])
        if p.info["cmdline"] == argv and p.info["status"] != psutil.STATUS_ZOMBIE
    ]


def _unique_sleep() -> tuple[str, list[str]]:
    import random

    seconds = f"300.{random.randrange(10**8, 10**9)}"
    return f"sleep {seconds}", ["sleep", seconds]


def _kill_pids(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


@pytest.mark.linux_guard
async def test_hooks_are_children_of_the_watchdog_helper() -> None:
    with trio.fail_after(5):
        async with open_guard() as reaper:
            result = await reaper.run(sh("echo $PPID"))
            assert int(result.stdout) == reaper.watchdog_pid
        async with open_reaper(watchdog=False) as reaper:
            result = await reaper.run(sh("echo $PPID"))
            assert int(result.stdout) == os.getpid()


#: glibc's posix_spawn leaves its two internal signals (32, 33) ignored in the child, and will
#: not reset them; glibc and musl programs install their own handlers when they use them.
GLIBC_INTERNAL = (1 << 31) | (1 << 32)


@pytest.mark.parametrize("watchdog", [True, False])
async def test_hooks_get_default_signal_dispositions(watchdog: bool) -> None:
    """Nothing the helper (a Python process ignoring SIGPIPE, SIGINT, SIGHUP) ignores leaks
    into hooks: ``yes | head`` ends by SIGPIPE, as in a shell."""
    with trio.fail_after(5):
        async with open_reaper(watchdog=watchdog) as reaper:
            ignored = await reaper.run(sh("grep SigIgn /proc/self/status"))
            piped = await reaper.run(sh("yes | head -1; echo ${PIPESTATUS[0]}"))
    assert int(ignored.stdout.split()[1], 16) & ~GLIBC_INTERNAL == 0
    assert piped.stdout.split() == ["y", str(128 + signal.SIGPIPE)]


@pytest.mark.linux_guard
async def test_an_unmarked_orphan_of_a_live_run_is_spared() -> None:
    """Left its group, dropped its marker, orphaned: still the live run's, so it lives on while
    other runs end (and sweep) -- and dies once its run is over."""
    words, argv = _unique_sleep()
    script = f"( setsid env -i {words} & ); sleep 1.2; echo ok"
    try:
        with trio.fail_after(10):
            async with open_guard() as reaper, trio.open_nursery() as nursery:
                results: list[Any] = []

                async def long() -> None:
                    results.append(await reaper.run(sh(script)))

                nursery.start_soon(long)
                while not _argv_running(argv):
                    await trio.sleep(0.01)
                for _ in range(3):  # each finished run asks for a sweep
                    await reaper.run(sh("true"))
                    await trio.sleep(0.2)
                assert _argv_running(argv)  # spared: its run still runs
                while not results:
                    await trio.sleep(0.01)
                assert results[0].stdout == "ok\n"
                with trio.move_on_after(2):
                    while _argv_running(argv):
                        await trio.sleep(0.02)
                assert _argv_running(argv) == []
    finally:
        _kill_pids(_argv_running(argv))


@pytest.mark.linux_guard
async def test_an_unmarked_orphan_waits_for_the_runs_live_at_its_birth() -> None:
    """Which run an unmarked orphan came from is unknown: a run live when it was born may own
    it, so it dies only once those runs ended. (A run started later cannot own it.)"""
    words, argv = _unique_sleep()
    try:
        with trio.fail_after(10):
            async with open_guard() as reaper, trio.open_nursery() as nursery:
                older: list[Any] = []

                async def old() -> None:
                    older.append(await reaper.run(sh("sleep 1.2; echo old")))

                nursery.start_soon(old)
                await wait_live(reaper, 1)
                await trio.sleep(0.05)  # a clock tick apart
                # This run leaves an orphan and ends; the older run was live at its birth.
                result = await reaper.run(sh(f"setsid env -i {words} & sleep 0.1"))
                assert result.status == "exited"
                # Sweeps came and went (the helper's, not counted here): it is NOT killed meanwhile.
                await trio.sleep(0.6)
                assert _argv_running(argv)
                while not older:
                    await trio.sleep(0.01)
                with trio.move_on_after(2):
                    while _argv_running(argv):
                        await trio.sleep(0.02)
                assert _argv_running(argv) == []
    finally:
        _kill_pids(_argv_running(argv))


@pytest.mark.linux_guard
async def test_an_orphan_in_a_finished_hooks_session_dies_though_older_runs_live() -> None:
    """Its own group, no marker, but still in the finished hook's session: that run's."""
    words, argv = _unique_sleep()
    regroup = f"import os; os.setpgid(0, 0); os.execvp('env', ['env', '-i', *{words.split()!r}])"
    try:
        with trio.fail_after(10):
            async with open_guard() as reaper, trio.open_nursery() as nursery:
                nursery.start_soon(reaper.run, sh("sleep 1.5"))
                await wait_live(reaper, 1)
                await trio.sleep(0.05)  # a clock tick apart
                script = f'( "{sys.executable}" -c "{regroup}" & ); sleep 0.2'
                result = await reaper.run(sh(script))
                assert result.status == "exited"
                with trio.move_on_after(1):
                    while _argv_running(argv):
                        await trio.sleep(0.02)
                assert _argv_running(argv) == []
                assert reaper.live == 1  # the older run still runs
    finally:
        _kill_pids(_argv_running(argv))


@pytest.mark.linux_guard
async def test_a_run_started_after_an_orphan_does_not_shield_it(tmp_path: Any) -> None:
    words, argv = _unique_sleep()
    go = tmp_path / "go"
    try:
        with trio.fail_after(10):
            async with open_guard() as reaper, trio.open_nursery() as nursery:
                results: list[Any] = []

                async def leaver() -> None:
                    script = f"setsid env -i {words} & until [ -e {go} ]; do sleep 0.01; done"
                    results.append(await reaper.run(sh(script)))

                nursery.start_soon(leaver)
                while not _argv_running(argv):
                    await trio.sleep(0.01)
                await trio.sleep(0.05)  # a clock tick apart
                nursery.start_soon(reaper.run, sh("sleep 1.5"))  # born after the orphan
                await wait_live(reaper, 2)
                go.touch()
                while not results:
                    await trio.sleep(0.01)
                with trio.move_on_after(1):
                    while _argv_running(argv):
                        await trio.sleep(0.02)
                assert _argv_running(argv) == []  # while the later run still runs
                assert reaper.live == 1
    finally:
        _kill_pids(_argv_running(argv))


@pytest.mark.linux_guard
async def test_a_dead_watchdog_helper_loses_one_status_and_is_replaced() -> None:
    with trio.fail_after(10):
        async with open_guard() as reaper, trio.open_nursery() as nursery:
            results: list[Any] = []

            async def one() -> None:
                results.append(await reaper.run(sh("sleep 0.3; exit 3")))

            nursery.start_soon(one)
            await wait_live(reaper, 1)
            watchdog = reaper.watchdog_pid
            assert watchdog is not None
            os.kill(watchdog, signal.SIGKILL)  # the hook lives on, re-parented to init
            while not results:
                await trio.sleep(0.01)
            assert (results[0].status, results[0].error) == (
                "killed",
                "hook exit status lost (the watchdog helper is gone)",
            )
            while reaper.watchdog_pid in (None, watchdog):  # the supervisor starts a new one
                await trio.sleep(0.01)
            after = await reaper.run(sh("echo $PPID; exit 4"))
            assert (after.status, after.exit_code) == ("exited", 4)
            assert int(after.stdout) == reaper.watchdog_pid
            timed_out = await reaper.run(sh("env -i setsid sleep 100 & sleep 100", timeout_s=0.2))
            assert timed_out.status == "timeout"
            await assert_no_survivors(reaper, within=1.0)


async def test_hooks_start_here_while_there_is_no_watchdog_helper() -> None:
    with trio.fail_after(10):
        async with open_reaper(watchdog=False) as reaper:
            result = await reaper.run(sh("echo $PPID"))
            assert (result.status, int(result.stdout)) == ("exited", os.getpid())
            timed_out = await reaper.run(sh("setsid sleep 100 & sleep 100", timeout_s=0.2))
            assert timed_out.status == "timeout"
            await assert_no_survivors(reaper, within=1.0)  # by the marker


@pytest.mark.linux_guard
async def test_while_its_helper_is_replaced_the_linux_backend_runs_hooks_the_posix_way(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The helper killed and its successor held back: hooks then start here, through the posix
    guard's path (its spawn, exit watch, stop and sweeps), and still nothing survives -- even a
    descendant that left the group *and* dropped the marker, found under its stopped leader
    (the posix stop's snapshot; a marker sweep alone would miss it). Once the new helper is
    up, hooks are its children again."""
    from triohooks.actors import _subreaper, posix_guard

    real_start = _subreaper.WatchdogHelper.start
    starts: list[str] = []
    go_on = trio.Event()

    async def start(engine_id: str) -> _subreaper.WatchdogHelper:
        starts.append(engine_id)
        if len(starts) > 1:
            await go_on.wait()
        return await real_start(engine_id)

    monkeypatch.setattr(_subreaper.WatchdogHelper, "start", start)
    stops: list[int] = []
    real_stop = posix_guard.PosixGuard._stop

    async def stop(self: posix_guard.PosixGuard, no: int, process: trio.Process) -> None:
        stops.append(no)
        await real_stop(self, no, process)

    monkeypatch.setattr(posix_guard.PosixGuard, "_stop", stop)

    def helper_of(guard: ProcessGuard) -> int | None:  # (read afresh: it changes under us)
        return guard.watchdog_pid

    words, argv = _unique_sleep()
    try:
        with trio.fail_after(15):
            async with open_guard() as reaper:
                first = reaper.watchdog_pid
                assert first is not None
                os.kill(first, signal.SIGKILL)
                while helper_of(reaper) is not None:  # given up; the next one is held back
                    await trio.sleep(0.01)
                here = await reaper.run(sh("echo $PPID; setsid sleep 100 & exit 3"))
                assert (here.status, here.exit_code) == ("exited", 3)
                assert int(here.stdout.split()[0]) == os.getpid()  # spawned by this process
                await assert_no_survivors(reaper, within=1.0)  # the marked one: swept
                script = f"env -i setsid {words} & sleep 100"
                timed_out = await reaper.run(sh(script, timeout_s=0.5))
                assert timed_out.status == "timeout" and stops  # the posix guard's stop
                with trio.move_on_after(1):
                    while _argv_running(argv):
                        await trio.sleep(0.02)
                assert _argv_running(argv) == []
                assert reaper.stats().spawned == 2 and reaper.live == 0
                go_on.set()
                while helper_of(reaper) is None:
                    await trio.sleep(0.01)
                again = await reaper.run(sh("echo $PPID"))
                assert int(again.stdout) == reaper.watchdog_pid
                assert len(stops) == 1  # (not the posix guard's any more)
    finally:
        _kill_pids(_argv_running(argv))


@pytest.mark.linux_guard
async def test_a_hung_watchdog_helper_is_given_up_after_the_reply_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from triohooks.actors import _subreaper

    monkeypatch.setattr(_subreaper, "REPLY_TIMEOUT_S", 0.3)
    # Stopped, but not seen so: as a helper hung some other way (a deadlock) looks.
    monkeypatch.setattr(_subreaper.WatchdogHelper, "is_stopped", lambda self: False)
    with trio.fail_after(10):
        async with open_guard() as reaper:
            watchdog = reaper.watchdog_pid
            assert watchdog is not None
            os.kill(watchdog, signal.SIGSTOP)
            try:
                start = trio.current_time()
                result = await reaper.run(sh("echo $PPID"))
                assert trio.current_time() - start < 1.0  # the timeout, then a spawn here
                assert (result.status, int(result.stdout)) == ("exited", os.getpid())
                # Given up: stopped (killed, as it does not exit) and replaced.
                while reaper.watchdog_pid in (None, watchdog):
                    await trio.sleep(0.02)
                assert not psutil.pid_exists(watchdog)
            finally:
                with suppress(ProcessLookupError):
                    os.kill(watchdog, signal.SIGCONT)


@pytest.mark.linux_guard
async def test_a_stopped_helper_is_given_up_at_once_and_cleans_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # SIGSTOP (a hook's `kill -STOP $PPID`): seen as stopped within STATE_CHECK_S, not after
    # the reply timeout; continued as it is stopped, so it kills what it guarded and exits.
    from triohooks.actors import _subreaper

    monkeypatch.setattr(_subreaper, "REPLY_TIMEOUT_S", 60.0)
    with trio.fail_after(10):
        async with open_guard() as reaper:
            watchdog = reaper.watchdog_pid
            assert watchdog is not None
            words, argv = _unique_sleep()
            results: list[Any] = []

            async def hook() -> None:
                results.append(await reaper.run(sh(f"{words}", timeout_s=30)))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(hook)
                while not _argv_running(argv):
                    await trio.sleep(0.01)
                os.kill(watchdog, signal.SIGSTOP)
                try:
                    with trio.fail_after(3):  # the reply timeout is 60 s
                        result = await reaper.run(sh("echo spawned here"))
                finally:
                    with suppress(ProcessLookupError):
                        os.kill(watchdog, signal.SIGCONT)
                assert result.stdout == "spawned here\n"
                with trio.fail_after(5):
                    while reaper.watchdog_pid in (None, watchdog):
                        await trio.sleep(0.02)
            # The stopped helper's hook: killed by it once continued (its socket was closed).
            assert results and results[0].status != "exited"
            assert _argv_running(argv) == []
    assert not psutil.pid_exists(watchdog) or psutil.Process(watchdog).status() == "zombie"


def payload_spec(tmp_path: Any, command: str, **kw: Any) -> tuple[ProcessSpec, str]:
    """A run whose payload file (at a new path in ``tmp_path``) the reaper writes; ``$P``
    names it in the hook's environment."""
    path = str(tmp_path / f"triohooks-payload-{os.urandom(8).hex()}.json")
    env = {**os.environ, "P": path}
    return sh(command, env=env, payload_file=(path, b'{"x": 1}'), **kw), path


@pytest.mark.parametrize("watchdog", [True, False], ids=["helper", "no-helper"])
async def test_the_payload_file_exists_while_the_hook_runs_and_is_gone_after(
    tmp_path: Any, watchdog: bool
) -> None:
    with trio.fail_after(5):
        async with open_reaper(watchdog=watchdog) as reaper:
            spec, path = payload_spec(tmp_path, 'cat "$P"; echo; stat -c %a "$P"; test ! -L "$P"')
            result = await reaper.run(spec)
            assert result.status == "exited" and result.exit_code == 0, result
            assert result.stdout == '{"x": 1}\n600\n'
            assert not os.path.exists(path)
            # A timeout and a cancel remove it too.
            spec, path = payload_spec(tmp_path, "exec sleep 30", timeout_s=0.2)
            assert (await reaper.run(spec)).status == "timeout"
            assert not os.path.exists(path)
            spec, path = payload_spec(tmp_path, "exec sleep 30")
            with trio.move_on_after(0.2):
                await reaper.run(spec)
            assert not os.path.exists(path)
            await assert_no_survivors(reaper)


@pytest.mark.parametrize("watchdog", [True, False], ids=["helper", "no-helper"])
async def test_a_payload_path_that_exists_is_refused_and_left_alone(
    tmp_path: Any, watchdog: bool
) -> None:
    """Created exclusively, never through a symlink: a name someone planted (it cannot be
    guessed; this is the test of the rule) fails the run and keeps the target as it was."""
    target = tmp_path / "target"
    target.write_text("keep me")
    with trio.fail_after(5):
        async with open_reaper(watchdog=watchdog) as reaper:
            spec, path = payload_spec(tmp_path, "echo ran")
            os.symlink(target, path)
            result = await reaper.run(spec)
            assert result.status == "spawn_failed"
            assert result.error is not None and "cannot write the payload file" in result.error
            assert target.read_text() == "keep me" and os.path.islink(path)
            assert reaper.live == 0


async def test_a_big_payload_file_is_written_in_a_thread_not_sent(tmp_path: Any) -> None:
    """Past PAYLOAD_FILE_INLINE the file does not travel in the spawn request (which the loop
    sends synchronously): the reaper writes it in a thread."""
    with trio.fail_after(10):
        async with open_guard() as reaper:
            path = str(tmp_path / f"triohooks-payload-{os.urandom(8).hex()}.json")
            big = b"y" * (PAYLOAD_FILE_INLINE + 1)
            spec = sh('wc -c < "$P"', env={**os.environ, "P": path}, payload_file=(path, big))
            result = await reaper.run(spec)
            assert result.stdout.strip() == str(len(big))
            assert not os.path.exists(path)


def test_the_marker_scan_finds_exactly_what_psutil_reads() -> None:
    """The scan's raw read of each environment (Linux) finds the processes, and the run
    numbers, that psutil's parsed environment names: this engine's marker (the last one set
    wins), not another engine's, not a variable whose name only ends with the marker's."""
    engine = os.urandom(6).hex()
    envs = {
        "ours": {RUN_VAR: f"{engine}:7"},
        "another run": {RUN_VAR: f"{engine}:8"},
        "other engine": {RUN_VAR: f"{engine}x:9"},
        "lookalike": {"X_" + RUN_VAR: f"{engine}:10"},
        "not a number": {RUN_VAR: f"{engine}:1a"},
    }
    started = []
    try:
        for extra in envs.values():
            env = {k: v for k, v in os.environ.items() if k != RUN_VAR}
            started.append(subprocess.Popen(["sleep", "30"], env={**env, **extra}))
        # The environment block as the kernel holds it, with a marker set twice.
        twice = f"{RUN_VAR}={engine}:1\0{RUN_VAR}={engine}:8\0".encode()
        assert _watchdog._run_in(twice, f"{engine}:") == 8
        found = sorted(marked_processes(engine))
        by_psutil = sorted(
            (proc.pid, run)
            for proc in psutil.process_iter()
            if proc.pid != os.getpid()
            and (run := _watchdog._run_of(proc, f"{engine}:")) is not None
        )
        assert found == by_psutil == [(started[0].pid, 7), (started[1].pid, 8)]
    finally:
        for proc in started:
            proc.kill()
            proc.wait()


def test_frames_of_many_chunks_and_leftovers_read_whole() -> None:
    """The helper's frame reader: a frame far bigger than one read, then small frames that
    arrive together; every frame comes out whole, as bytes."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with ours, theirs:
        reader = FrameReader(theirs, fds=False)
        big = os.urandom(3 * 65536 + 123)
        frames = [frame(b"s", big), frame(b"f", b"/tmp/a"), frame(b"F", b"/tmp/a")]
        data = b"".join(frames)
        got: list[tuple[bytes, bytes]] = []
        sender = threading.Thread(target=ours.sendall, args=(data,))
        sender.start()
        while len(got) < 3:
            assert reader.fill()
            while (message := reader.next()) is not None:
                got.append(message)
        sender.join()
    assert got == [(b"s", big), (b"f", b"/tmp/a"), (b"F", b"/tmp/a")]
    assert all(type(op) is bytes and type(body) is bytes for op, body in got)


@pytest.mark.parametrize("watchdog", [True, False], ids=["helper", "no-helper"])
async def test_write_and_remove_payload_outside_a_spawn(tmp_path: Any, watchdog: bool) -> None:
    """A warm worker's per-request payload file: made 0600 exclusively (a name that exists is
    refused and left alone), removed on request."""
    with trio.fail_after(5):
        async with open_reaper(watchdog=watchdog) as reaper:
            path = str(tmp_path / "triohooks-payload-a.json")
            await reaper.write_payload(path, b"{}")
            assert os.stat(path).st_mode & 0o777 == 0o600
            assert Path(path).read_bytes() == b"{}"
            with pytest.raises(FileExistsError):
                await reaper.write_payload(path, b"other")
            assert Path(path).read_bytes() == b"{}"
            await reaper.remove_payload(path)
            with trio.move_on_after(1):  # through the helper: a message, removed soon after
                while os.path.exists(path):
                    await trio.sleep(0.005)
            assert not os.path.exists(path)
            big = str(tmp_path / "triohooks-payload-b.json")
            await reaper.write_payload(big, b"z" * (PAYLOAD_FILE_INLINE + 1))
            assert os.path.getsize(big) == PAYLOAD_FILE_INLINE + 1
            await reaper.remove_payload(big)
            with trio.move_on_after(1):
                while os.path.exists(big):
                    await trio.sleep(0.005)
            assert not os.path.exists(big)


@pytest.mark.linux_guard
async def test_a_stopped_helper_never_stalls_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """The helper is stopped (SIGSTOP) while a hook is to be spawned: the spawn waits for its
    reply, every other task runs on (a 10 ms heartbeat never misses long), and once the
    helper is seen stopped it is given up, the hook spawns in this process and runs, and a
    fresh helper takes over."""
    from triohooks.actors import _subreaper

    monkeypatch.setattr(_subreaper, "REPLY_TIMEOUT_S", 1.0)
    gaps: list[float] = []

    async def heartbeat() -> None:
        last = trio.current_time()
        while True:
            await trio.sleep(0.01)
            now = trio.current_time()
            gaps.append(now - last)
            last = now

    with trio.fail_after(20):
        async with open_guard() as reaper:
            stopped = reaper.watchdog_pid
            assert stopped is not None
            os.kill(stopped, signal.SIGSTOP)
            try:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(heartbeat)
                    result = await reaper.run(sh("echo spawned here"))
                    nursery.cancel_scope.cancel()
            finally:
                with suppress(ProcessLookupError):
                    os.kill(stopped, signal.SIGCONT)
            assert result.status == "exited" and result.stdout == "spawned here\n"
            # The stall cost the spawning task a state check or two, and no other task anything.
            assert len(gaps) > 10 and max(gaps) < 0.5, max(gaps)
            with trio.fail_after(10):
                while reaper.watchdog_pid in (None, stopped):
                    await trio.sleep(0.05)
            again = await reaper.run(sh("echo through the new helper"))
            assert again.stdout == "through the new helper\n"
            await assert_no_survivors(reaper)
    assert not psutil.pid_exists(stopped) or psutil.Process(stopped).status() == "zombie"
