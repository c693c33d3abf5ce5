"""Host death: a host SIGKILLed mid-hook leaves nothing behind, thanks to the watchdog.

The host is a child Python process running the process guard with its watchdog; its hook
sleeps. The host cases run on both backends (the linux helper spawns the hook and is its
parent; the posix watchdog only knows its group, its marker and the payload files).
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
both_backends = pytest.mark.usefixtures("guard_backend")

REPO = Path(__file__).resolve().parent.parent

HOST = """
import sys
import trio
from triohooks.actors.process_guard import open_guard
from triohooks.handlers.process import ProcessSpec

async def main():
    async with open_guard() as reaper, trio.open_nursery() as nursery:
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


@both_backends
@pytest.mark.parametrize(
    "hook",
    [
        ("sleep", "1000"),
        # Drops the run marker: only the process group the watchdog was told about finds it.
        ("env", "-i", "/bin/sleep", "1000"),
    ],
)
async def test_sigkilled_host_leaves_no_hook_process(
    hook: tuple[str, ...], guard_backend: str
) -> None:
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
                    watchdogs = [p for p in children if any("_watchdog" in a for a in cmdline(p))]
                    # The hook is the watchdog helper's child (it spawns every hook). Exact
                    # argv: a child caught between fork and exec still shows its parent's.
                    descendants = psutil.Process(host.pid).children(recursive=True)
                    hooks = [p for p in descendants if cmdline(p) in SLEEPS]
                    if hooks and watchdogs:
                        break
                    await trio.sleep(0.02)
                # linux: the helper spawned it; posix: the host did, and the watchdog knows.
                parent = watchdogs[0].pid if guard_backend == "linux" else host.pid
                assert [p.ppid() for p in hooks] == [parent]
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


# -- JSON-dialect payload files ----------------------------------------------------------------

JSON_HOST = """
import sys
import trio
from triohooks.actors.process_guard import open_guard
from triohooks.config.model import CommandHandler, Hook
from triohooks.handlers.json_command import JsonCommandRunner
from triohooks.handlers.runner import HookInput

async def main():
    command, count, worker = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    async with open_guard() as reaper, trio.open_nursery() as nursery:
        runner = JsonCommandRunner(reaper, workspace="/")
        for i in range(count):
            hook = Hook(
                id=f"user:h{i}", name=f"h{i}", event="pre_tool", config_event="pre_tool",
                dialect="json", scope="global", source="x", index=i,
                handler=CommandHandler(command), timeout_s=600, worker=worker,
            )
            args = {"command": "deploy", "token": "SECRET-TOKEN-VALUE"}
            fields = {"event": "pre_tool", "session_id": "s", "tool": "bash", "args": args}
            nursery.start_soon(runner.run, hook, HookInput("pre_tool", "s", fields=fields))

trio.run(main)
"""


#: A warm worker that notes its first request's payload file, then never answers.
JSON_WORKER = """
import json, shutil, sys, time
seen = sys.argv[1]
env = json.loads(sys.stdin.readline())["env"]
path = env["EVERRUNS_HOOK_PAYLOAD_PATH"]
shutil.copy(path, seen + "/")
with open(seen + ".paths", "a") as out:
    out.write(path + "\\n")
time.sleep(1000)
"""


def noted_paths(file: Path) -> list[Path]:
    """The paths in the whole lines of ``file`` so far (none before it exists)."""
    try:
        text = file.read_text()
    except FileNotFoundError:
        return []
    return [Path(line.strip()) for line in text.splitlines(keepends=True) if line.endswith("\n")]


@both_backends
@pytest.mark.parametrize(
    ("count", "worker"), [(1, False), (3, False), (2, True)], ids=["1", "3", "2 workers"]
)
async def test_sigkilled_host_leaves_no_payload_file(
    tmp_path: Path, count: int, worker: bool
) -> None:
    """The payload files (0600, the event's arguments unredacted) are the watchdog helper's
    to remove when the host dies before it removed them itself: a one-shot hook's (written
    with its spawn) and a warm worker's request's (written on its own)."""
    seen = tmp_path / "seen"
    seen.mkdir()
    # Each hook notes its payload file's path, then waits to be killed.
    if worker:
        script = tmp_path / "worker.py"
        script.write_text(JSON_WORKER)
        command = f"{sys.executable} {script} {seen}"
    else:
        command = f'cp "$EVERRUNS_HOOK_PAYLOAD_PATH" {seen}/; echo "$EVERRUNS_HOOK_PAYLOAD_PATH" >> {seen}.paths; sleep 1000'
    paths: list[Path] = []
    try:
        with trio.fail_after(15):
            host = await trio.lowlevel.open_process(
                [sys.executable, "-c", JSON_HOST, command, str(count), str(int(worker))],
                cwd=REPO,
                env={**os.environ, "PYTHONPATH": str(REPO)},
            )
            try:
                # Each hook writes its path's line after its copy: whole lines, once all came.
                while len(paths := noted_paths(Path(f"{seen}.paths"))) < count:
                    await trio.sleep(0.02)
                assert len(paths) == count and len(list(seen.iterdir())) == count
                for path in paths:
                    assert path.name.startswith("triohooks-payload-")
                    assert path.stat().st_mode & 0o777 == 0o600
                    assert b"SECRET-TOKEN-VALUE" in path.read_bytes()
            finally:
                host.send_signal(signal.SIGKILL)
                await host.wait()
            assert host.returncode == -signal.SIGKILL
            with trio.move_on_after(2.0):
                while any(path.exists() for path in paths):
                    await trio.sleep(0.02)
            assert [path for path in paths if path.exists()] == []
    finally:
        for path in paths:
            path.unlink(missing_ok=True)


async def test_a_thread_written_payload_file_is_registered_before_it_exists(
    tmp_path: Path,
) -> None:
    """Written in a thread (too big to send to the helper), a worker's payload file is
    registered with the helper before it exists; the helper removes it on request."""
    from triohooks.actors.reaper import PAYLOAD_FILE_INLINE, open_reaper

    calls: list[tuple[str, bool, int]] = []
    path = str(tmp_path / "triohooks-payload-big.json")
    with trio.fail_after(10):
        async with open_reaper() as reaper:
            helper_track = reaper.track_file

            def track(tracked: str, present: bool) -> None:
                size = os.path.getsize(tracked) if os.path.exists(tracked) else -1
                calls.append((tracked, present, size))
                helper_track(tracked, present)

            reaper.track_file = track  # type: ignore[method-assign,assignment]
            await reaper.write_payload(path, b"s" * (PAYLOAD_FILE_INLINE + 1))
            assert os.path.exists(path)
            assert calls == [(path, True, -1)]  # registered while there was nothing to see
            await reaper.remove_payload(path)  # the helper removes it and forgets it
            with trio.move_on_after(2):
                while os.path.exists(path):
                    await trio.sleep(0.01)
    assert not os.path.exists(path)


async def test_the_helper_removes_registered_files_and_spares_released_ones(
    tmp_path: Path,
) -> None:
    """A file still registered when the engine's end closes is removed; a released one is not
    the helper's any more (the engine removed it, or the name may be someone else's now)."""
    from triohooks.actors.reaper import open_reaper

    kept, released = tmp_path / "kept", tmp_path / "released"
    kept.write_text("secret")
    released.write_text("secret")
    with trio.fail_after(10):
        async with open_reaper() as reaper:
            reaper.track_file(str(kept), True)
            reaper.track_file(str(released), True)
            reaper.track_file(str(released), False)
            assert kept.exists() and released.exists()  # nothing happens while we live
    assert not kept.exists()
    assert released.exists()
