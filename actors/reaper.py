"""The process guard: the only place that starts, watches, kills and reaps hook processes.

Owns: spawning (``bash -c <command>`` or a program's argv, in the workspace, each run in its own
session and process group; PATH lookups hashed like a shell's), feeding stdin, reading
stdout/stderr ourselves with caps (the calling task serves a run's pipes and exit through a
private epoll), timeouts, group kills (SIGTERM, a short grace, SIGKILL), sweeping what a hook
leaves behind, the host-death watchdog helper (:mod:`triohooks.actors._watchdog`) and the counters.

Must not: know about events, dialects or decisions (``triohooks.handlers.replies`` reads results),
use ``capture_stdout`` (a grandchild holding the pipe would hang us), ``preexec_fn``, PDEATHSIG
(trio forks from worker threads that exit) or any process-wide SIGCHLD handling.

How nothing survives a run:
- After the direct child exits, its group is SIGKILLed *before* the child is reaped: the zombie
  still holds the pgid, so the group id cannot have been recycled. Pipes then get at most
  ``EOF_GRACE_S`` to reach EOF (a grandchild that left the group may hold them).
- Every hook process carries ``TRIOHOOKS_RUN=<engine-id>:<run-no>``. On timeout, cancel and
  close, processes carrying the run's (or the engine's) marker are killed at once; after a
  normal exit a background sweeper does the same for finished runs, at most every
  ``SWEEP_INTERVAL_S``, off the result path.
- Known escapes: a descendant that both leaves the group (``setsid``) *and* drops the marker
  (``env -i``, or rewrites its environment) is not found; nor is one we may not read or signal
  (setuid). A process forked from the host after the watchdog started keeps the watchdog's pipe
  open, so the watchdog sees EOF only when both are gone.

Linux only: pidfds (5.3+) and /proc.
"""

from __future__ import annotations

import fcntl
import logging
import os
import select
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from functools import partial
from pathlib import Path
from typing import Final, cast

import msgspec
import trio

from triohooks.handlers.process import ProcessResult, ProcessSpec

from ._watchdog import RUN_VAR, kill_marked, run_marker

log = logging.getLogger("triohooks.reaper")

#: Between SIGTERM and SIGKILL to a hook's group.
TERM_GRACE_S: Final = 0.1
#: How long pipes may stay open after the direct child exited and its group was killed.
EOF_GRACE_S: Final = 0.05
#: Upper bound on shielded cleanup (kill + reap) of one run.
REAP_BUDGET_S: Final = 2.0
#: The background escapee sweep runs at most this often.
SWEEP_INTERVAL_S: Final = 0.25
#: How long the watchdog gets to exit after we close its pipe.
WATCHDOG_STOP_S: Final = 2.0
READ_CHUNK: Final = 65536
WATCHDOG_PIPE_BYTES: Final = 1 << 20
_RUN_VAR_BYTES: Final = RUN_VAR.encode()
WATCHDOG_SCRIPT: Final = Path(__file__).with_name("_watchdog.py")


class ReaperStats(msgspec.Struct, frozen=True, kw_only=True):
    spawned: int
    spawn_failures: int
    #: Groups we killed: timeouts, overflows, cancels and close.
    killed: int
    timeouts: int
    overflows: int
    #: Processes found by their marker after leaving their group.
    escapees_killed: int
    live: int


class _Capture:
    """One output stream: the first ``cap`` bytes kept, every byte counted."""

    __slots__ = ("cap", "chunks", "kept", "total")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.chunks: list[bytes] = []
        self.kept = 0
        self.total = 0

    def add(self, chunk: bytes | bytearray) -> None:
        self.total += len(chunk)
        room = self.cap - self.kept
        if room > 0:
            piece = bytes(chunk[:room])
            self.chunks.append(piece)
            self.kept += len(piece)

    def text(self) -> str:
        return b"".join(self.chunks).decode("utf-8", errors="replace")


class _Run:
    """A live hook process, as the reaper tracks it: the child, its pidfd and our pipe ends."""

    __slots__ = (
        "closed",
        "done",
        "no",
        "pid",
        "pidfd",
        "popen",
        "stderr",
        "stdin",
        "stdout",
        "writers",
    )

    def __init__(
        self,
        no: int,
        popen: subprocess.Popen[bytes],
        stdin: int,
        out: int,
        err: int,
        writers: tuple[int, int],
    ):
        self.no = no
        self.popen = popen
        self.pid = popen.pid
        #: Our non-blocking pipe ends; stdin becomes None once closed.
        self.stdin: int | None = stdin
        self.stdout = out
        self.stderr = err
        #: Our copies of the stdout/stderr write ends, held while the child runs so that its
        #: exit does not hang up each pipe separately (each hang-up was a wakeup of its own).
        self.writers: tuple[int, int] | None = writers
        #: kill_all signalled this run's group.
        self.closed = False
        #: Set once the direct child is reaped (or given up on).
        self.done = trio.Event()
        try:
            self.pidfd = os.pidfd_open(self.pid)  # Linux 5.3+
        except OSError:  # we cannot guard this process, so it must not run
            _signal_group(self.pid, signal.SIGKILL)
            popen.wait()
            self.close_pipes()
            raise

    # Trio never waits on the pipes (the run's private epoll does), so plain closes suffice.
    def close_stdin(self) -> None:
        if self.stdin is not None:
            os.close(self.stdin)
            self.stdin = None

    def release_writers(self) -> None:
        """Drop our write ends: from now on, EOF means no process holds the pipe."""
        if self.writers is not None:
            for fd in self.writers:
                os.close(fd)
            self.writers = None

    def close_pipes(self) -> None:
        self.close_stdin()
        self.release_writers()
        os.close(self.stdout)
        os.close(self.stderr)


def _close(fd: int) -> None:
    """Close an fd trio may have waited on."""
    trio.lowlevel.notify_closing(fd)
    os.close(fd)


Environment = dict[str, str] | dict[bytes, bytes]


def _spawn(spec: ProcessSpec, env: Environment, no: int, executable: str | None = None) -> _Run:
    """Start the child in its own session, with three pipes whose far ends we keep.

    ``executable``: where ``argv[0]`` lives, when :class:`_CommandHash` knows; else the child
    searches PATH.

    Synchronous on purpose: CPython forks with vfork here (no preexec_fn), which blocks the loop
    only until the child execs, while a worker-thread hop under load costs more than the spawn
    itself (measured with bench/spawn_overhead.py).
    """
    pipes: list[tuple[int, int]] = []
    try:
        for _ in range(3):
            pipes.append(os.pipe())  # close-on-exec; Popen dup2s the child's ends onto 0, 1, 2
        (in_r, in_w), (out_r, out_w), (err_r, err_w) = pipes
        popen = subprocess.Popen(
            spec.argv,
            executable=executable,
            stdin=in_r,
            stdout=out_w,
            stderr=err_w,
            cwd=spec.cwd,
            env=env,
            start_new_session=True,
        )
    except BaseException:
        for pair in pipes:
            for fd in pair:
                os.close(fd)
        raise
    os.close(in_r)
    for fd in (in_w, out_r, err_r):
        os.set_blocking(fd, False)
    return _Run(no, popen, in_w, out_r, err_r, (out_w, err_w))


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass
    except PermissionError:  # a setuid descendant; nothing more we can do
        log.warning("cannot signal hook process group %d", pgid)


def _write_some(fd: int, data: memoryview) -> memoryview | None:
    """Write what the pipe takes now; the rest, or None when nothing more will be written."""
    try:
        while data:
            data = data[os.write(fd, data) :]
    except BlockingIOError:
        return data
    except OSError:  # EPIPE: the hook exited (or closed stdin) without reading it all
        return None
    return None


class _Plumbing:
    """One run's pipes and exit, multiplexed on a private epoll so that a single task (the
    caller's) serves them all: no nursery, no helper tasks, one wakeup per batch of events."""

    #: Chunks read from one pipe per wakeup before yielding to the loop (fairness).
    READS_PER_WAKEUP: Final = 16

    def __init__(self, run: _Run, spec: ProcessSpec) -> None:
        self.run = run
        self.out = _Capture(spec.output_cap)
        self.err = _Capture(spec.output_cap)
        self.limit = spec.output_cap if spec.overflow == "error" else None
        self.exited = False
        self.overflowed = False
        self.open_outputs = 2
        self.poller = select.epoll()
        self.poller.register(run.pidfd, select.EPOLLIN)
        self.poller.register(run.stdout, select.EPOLLIN)
        self.poller.register(run.stderr, select.EPOLLIN)
        assert run.stdin is not None
        self.stdin_rest = _write_some(run.stdin, memoryview(spec.stdin))
        if self.stdin_rest is None:  # the usual case: the payload fits in the pipe
            run.close_stdin()
        else:
            self.poller.register(run.stdin, select.EPOLLOUT)

    async def until_exit(self) -> None:
        """Serve the pipes until the direct child exits or the output overflows."""
        while not (self.exited or self.overflowed):
            await self._step()

    async def until_eof(self) -> None:
        """Serve the pipes until both outputs reach EOF (or overflow)."""
        while self.open_outputs and not self.overflowed:
            await self._step()

    def close(self) -> None:
        _close_poller(self.poller)

    def after_exit(self) -> None:
        """The direct child is gone (or being stopped): drop our write ends and take what is
        ready now -- usually the final output and EOF on both pipes, with no further wakeup."""
        self.run.release_writers()
        self.serve_ready()

    async def _step(self) -> None:
        await trio.lowlevel.wait_readable(self.poller.fileno())
        self.serve_ready()

    def serve_ready(self) -> None:
        """Handle whatever the pipes and the pidfd have ready; never blocks."""
        run = self.run
        for fd, _ in self.poller.poll(0):
            if fd == run.pidfd:
                self.exited = True
                self.poller.unregister(fd)
            elif fd == run.stdin:
                assert self.stdin_rest is not None
                self.stdin_rest = _write_some(fd, self.stdin_rest)
                if self.stdin_rest is None:
                    self.poller.unregister(fd)
                    run.close_stdin()
            else:
                self._read(fd, self.out if fd == run.stdout else self.err)

    def _read(self, fd: int, capture: _Capture) -> None:
        for _ in range(self.READS_PER_WAKEUP):
            try:
                chunk = os.read(fd, READ_CHUNK)
            except BlockingIOError:
                return
            if not chunk:
                self.poller.unregister(fd)
                self.open_outputs -= 1
                return
            capture.add(chunk)
            if self.limit is not None and capture.total > self.limit:
                self.overflowed = True
                return


def _close_poller(poller: select.epoll) -> None:
    trio.lowlevel.notify_closing(poller.fileno())
    poller.close()


def _host_environment(marker: str) -> Environment:
    """The host's environment as the bytes dict Popen takes, plus the run marker.

    Read through ``os.environb`` (public, POSIX) on every run, so a variable the embedding
    application sets later reaches later hooks; bytes keys and values spare Popen re-encoding
    every entry (~15 us for 35 variables instead of ~70 us through ``os.environ``,
    bench/spawn_overhead.py).
    """
    env = dict(os.environb)
    env[_RUN_VAR_BYTES] = marker.encode()
    return env


class _CommandHash:
    """``argv[0]`` -> the file PATH finds for it, remembered per PATH, like a shell's hash table.

    Without it the child tries ``execve`` in every PATH directory before the right one (~60 us
    for bash on a PATH of 9 entries; bench/spawn_overhead.py). Only bare names on a PATH of
    absolute directories are hashed (a relative entry is searched from the child's cwd, which
    is not ours). The caller forgets an entry whose spawn failed and retries without it, so
    failures read exactly as before. Stale only the way a shell's hash is: a program installed
    *earlier* on PATH while the engine runs is not seen until PATH changes or the hashed file
    fails to start.
    """

    #: Past this many entries the table is cleared (names come from config; PATHs rarely vary).
    MAX_ENTRIES: Final = 256

    def __init__(self) -> None:
        self._paths: dict[tuple[str, str | bytes | None], str | None] = {}

    def lookup(self, program: str, env: Environment) -> str | None:
        """The file to exec for ``program`` under ``env``'s PATH; None: let the child search."""
        if "/" in program:
            return None
        key = (program, _path_variable(env))
        try:
            return self._paths[key]
        except KeyError:
            pass
        if len(self._paths) >= self.MAX_ENTRIES:
            self._paths.clear()
        # A miss is remembered too: the child then searches PATH itself, as without the hash.
        found = self._paths[key] = _find_on_path(program, env)
        return found

    def forget(self, program: str) -> None:
        for key in [key for key in self._paths if key[0] == program]:
            del self._paths[key]


def _path_variable(env: Environment) -> str | bytes | None:
    if env and isinstance(next(iter(env)), bytes):
        return cast("dict[bytes, bytes]", env).get(b"PATH")
    return cast("dict[str, str]", env).get("PATH")


def _find_on_path(program: str, env: Environment) -> str | None:
    """What the child's PATH search would exec first, or None to let the child search."""
    for directory in os.get_exec_path(cast("dict[str, str]", env)):  # bytes keys work too
        if not os.path.isabs(directory):
            return None
        candidate = os.path.join(directory, program)
        if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
    return None


def _spawn_error(spec: ProcessSpec, exc: Exception) -> str:
    program = spec.argv[0]
    if isinstance(exc, OSError) and exc.filename == spec.cwd:
        return f"cannot start {program!r}: working directory {spec.cwd!r}: {exc.strerror}"
    if isinstance(exc, FileNotFoundError):
        return f"cannot start {program!r}: program not found"
    if isinstance(exc, OSError):
        return f"cannot start {program!r}: {exc.strerror or exc}"
    return f"cannot start {program!r}: {exc}"


def _unfinished(top: int, live: frozenset[int], run_no: int) -> bool:
    """Whether a run was spawning, running, or not yet numbered when the sweep began."""
    return run_no > top or run_no in live


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


class Reaper:
    """Spawns, guards, kills and reaps hook processes. Create with :func:`open_reaper`."""

    def __init__(self, *, engine_id: str | None = None) -> None:
        #: Part of every hook's ``TRIOHOOKS_RUN`` marker.
        self.engine_id = engine_id or uuid.uuid4().hex
        self._runs: dict[int, _Run] = {}
        #: Run numbers handed out and not yet reaped, spawning ones included: the sweeper
        #: must spare their processes.
        self._unfinished: set[int] = set()
        self._last_no = 0
        self._closing = False
        self._sweep_wanted = trio.Event()
        self._commands = _CommandHash()
        self._watchdog: trio.Process | None = None
        self._watchdog_fd: int | None = None
        self._spawned = 0
        self._spawn_failures = 0
        self._killed = 0
        self._timeouts = 0
        self._overflows = 0
        self._escapees_killed = 0

    @property
    def live(self) -> int:
        """Hook processes (groups) running now."""
        return len(self._runs)

    @property
    def watchdog_pid(self) -> int | None:
        return self._watchdog.pid if self._watchdog is not None else None

    def stats(self) -> ReaperStats:
        return ReaperStats(
            spawned=self._spawned,
            spawn_failures=self._spawn_failures,
            killed=self._killed,
            timeouts=self._timeouts,
            overflows=self._overflows,
            escapees_killed=self._escapees_killed,
            live=len(self._runs),
        )

    async def run(self, spec: ProcessSpec) -> ProcessResult:
        """Run one hook process to its end and return its one result.

        A checkpoint. On cancel the process group gets SIGTERM, a short grace, then SIGKILL,
        escaped descendants are killed and the child is reaped (shielded, bounded); then
        ``Cancelled`` is re-raised.
        """
        started = time.perf_counter()
        if self._closing or not spec.argv:
            await trio.lowlevel.checkpoint()
            if self._closing:
                return ProcessResult(status="killed", error="reaper is closed")
            self._spawn_failures += 1
            return ProcessResult(status="spawn_failed", error="nothing to run: empty argv")
        self._last_no += 1
        no = self._last_no
        self._unfinished.add(no)
        marker = run_marker(self.engine_id, no)
        env: Environment = (
            _host_environment(marker) if spec.env is None else {**spec.env, RUN_VAR: marker}
        )
        await trio.lowlevel.checkpoint_if_cancelled()
        try:
            run = self._spawn(spec, env, no)
        except (OSError, ValueError) as exc:
            self._unfinished.discard(no)
            self._spawn_failures += 1
            return ProcessResult(
                status="spawn_failed",
                error=_spawn_error(spec, exc),
                duration_ms=(time.perf_counter() - started) * 1000,
            )
        self._runs[no] = run
        self._spawned += 1
        self._tell(b"+%d\n" % run.pid)
        try:
            return await self._supervise(run, spec, started)
        finally:
            await self._reap(run)

    def _spawn(self, spec: ProcessSpec, env: Environment, no: int) -> _Run:
        program = spec.argv[0]
        executable = self._commands.lookup(program, env)
        if executable is None:
            return _spawn(spec, env, no)
        try:
            return _spawn(spec, env, no, executable)
        except OSError:  # moved, or not startable after all: search PATH as if never hashed
            self._commands.forget(program)
            return _spawn(spec, env, no)

    async def _supervise(self, run: _Run, spec: ProcessSpec, started: float) -> ProcessResult:
        waiting = trio.CancelScope(deadline=trio.current_time() + spec.timeout_s)
        if self._closing:  # kill_all ran while we were spawning
            run.closed = True
            waiting.cancel()
        pipes: _Plumbing | None = None
        try:
            pipes = _Plumbing(run, spec)
            with waiting:
                await pipes.until_exit()
            if pipes.exited:
                # The unreaped child holds the pgid, so this cannot hit a recycled group.
                _signal_group(run.pid, signal.SIGKILL)
            else:  # timeout, overflow or close
                await self._stop(run)
            pipes.after_exit()
            if pipes.open_outputs:  # a descendant holds a pipe, or output is still pending
                with trio.move_on_after(EOF_GRACE_S):
                    await pipes.until_eof()
        except BaseException:
            # Cancelled (or a bug): the group must not outlive this call.
            with trio.move_on_after(REAP_BUDGET_S, shield=True):
                await self._stop(run)
            raise
        finally:
            if pipes is not None:
                pipes.close()
        out, err = pipes.out, pipes.err
        await self._wait_and_forget(run)
        result = ProcessResult(
            status="exited",
            duration_ms=(time.perf_counter() - started) * 1000,
            stdout=out.text(),
            stderr=err.text(),
            stdout_bytes=out.total,
            stderr_bytes=err.total,
            truncated=out.total > out.cap or err.total > err.cap,
            pid=run.pid,
        )
        returncode = run.popen.returncode
        if pipes.overflowed:
            self._overflows += 1
            error = f"hook output exceeded {spec.output_cap} bytes"
            return msgspec.structs.replace(result, status="overflow", error=error)
        if waiting.cancelled_caught and not run.closed:
            self._timeouts += 1
            error = f"timed out after {spec.timeout_s:g} s"
            return msgspec.structs.replace(result, status="timeout", error=error)
        if returncode is None:  # stuck in the kernel past our budget
            error = "hook did not die after SIGKILL"
            return msgspec.structs.replace(result, status="killed", error=error)
        if returncode >= 0:
            return msgspec.structs.replace(result, exit_code=returncode)
        if run.closed:
            error = "killed: reaper closed"
            return msgspec.structs.replace(result, status="killed", error=error)
        signum = -returncode
        error = f"killed by {_signal_name(signum)}"
        return msgspec.structs.replace(result, status="signaled", signal=signum, error=error)

    async def _stop(self, run: _Run) -> None:
        """SIGTERM the group, grace, SIGKILL the group, kill the run's marked escapees.

        A checkpoint; call it shielded. The child stays unreaped (so the pgid stays ours).
        """
        self._killed += 1
        _signal_group(run.pid, signal.SIGTERM)
        with trio.move_on_after(TERM_GRACE_S):
            await trio.lowlevel.wait_readable(run.pidfd)
        _signal_group(run.pid, signal.SIGKILL)
        no = run.no
        self._escapees_killed += await trio.to_thread.run_sync(
            kill_marked, self.engine_id, lambda other: other != no
        )

    async def _wait_and_forget(self, run: _Run) -> None:
        """Reap the child (shielded, bounded) and, in the same step, stop tracking its group:
        once reaped, its pgid may be recycled, so nothing may signal it any more."""
        if run.done.is_set():
            return
        if run.popen.poll() is None:
            with trio.move_on_after(REAP_BUDGET_S, shield=True):
                await trio.lowlevel.wait_readable(run.pidfd)
        if run.popen.poll() is None:
            log.warning("hook process %d did not die after SIGKILL; leaving it", run.pid)
            return
        del self._runs[run.no]
        self._unfinished.discard(run.no)
        self._tell(b"-%d\n" % run.pid)
        run.done.set()
        self._sweep_wanted.set()  # a descendant may have left the group: look for it

    async def _reap(self, run: _Run) -> None:
        """Whatever happened: reap the child, close its pipes and pidfd."""
        await self._wait_and_forget(run)
        run.close_pipes()
        _close(run.pidfd)

    async def kill_all(self) -> int:
        """Engine close: stop new runs, SIGTERM every live group, grace, SIGKILL, then kill
        every process still carrying this engine's marker. Returns how many groups were live.

        A checkpoint. Waits (bounded) for the runs it killed to be reaped by their own tasks.
        Call it shielded: a cancel midway leaves groups for the watchdog.
        """
        self._closing = True
        runs = list(self._runs.values())
        for run in runs:
            run.closed = True
            _signal_group(run.pid, signal.SIGTERM)
        self._killed += len(runs)
        with trio.move_on_after(TERM_GRACE_S):
            for run in runs:
                await run.done.wait()
        for run in runs:
            if not run.done.is_set():  # not reaped, so the pgid is still this run's
                _signal_group(run.pid, signal.SIGKILL)
        self._escapees_killed += await trio.to_thread.run_sync(kill_marked, self.engine_id)
        with trio.move_on_after(REAP_BUDGET_S):
            for run in runs:
                await run.done.wait()
        return len(runs)

    async def _sweeper(self) -> None:
        """Kill marked processes of finished runs (escapees), at most every SWEEP_INTERVAL_S."""
        while True:
            await self._sweep_wanted.wait()
            self._sweep_wanted = trio.Event()
            # Runs started after this snapshot, or live in it, are spared: their processes are
            # legitimately alive. Any other marked process belongs to a finished run.
            spare = partial(_unfinished, self._last_no, frozenset(self._unfinished))
            try:
                self._escapees_killed += await trio.to_thread.run_sync(
                    kill_marked, self.engine_id, spare
                )
            except Exception:  # a sweep that fails must not take the engine down
                log.exception("sweeping escaped hook processes failed")
            await trio.sleep(SWEEP_INTERVAL_S)

    async def _start_watchdog(self) -> None:
        read_end, write_end = os.pipe()  # both close-on-exec: hooks never inherit them
        env = {k: v for k, v in os.environ.items() if k != RUN_VAR}
        try:
            self._watchdog = await trio.lowlevel.open_process(
                [sys.executable, "-I", "-S", str(WATCHDOG_SCRIPT), self.engine_id],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
        except BaseException:
            os.close(write_end)
            raise
        finally:
            os.close(read_end)
        os.set_blocking(write_end, False)
        with suppress(OSError):  # room for ~65k runs between the watchdog's drains
            fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, WATCHDOG_PIPE_BYTES)
        self._watchdog_fd = write_end

    def _tell(self, line: bytes) -> None:
        """One line to the watchdog; never blocks. Lines are < PIPE_BUF, so writes are atomic."""
        fd = self._watchdog_fd
        if fd is None:
            return
        try:
            os.write(fd, line)
        except BlockingIOError:
            log.warning("watchdog pipe full; group %s not recorded", line.strip().decode())
        except OSError:
            log.warning("watchdog is gone; hooks will not be killed if this process dies")
            self._watchdog_fd = None
            os.close(fd)

    async def _stop_watchdog(self) -> None:
        """Close the pipe (the watchdog sees EOF, sweeps, exits) and wait for it. Shielded."""
        proc, fd = self._watchdog, self._watchdog_fd
        self._watchdog = self._watchdog_fd = None
        if fd is not None:
            os.close(fd)
        if proc is None:
            return
        with trio.CancelScope(shield=True):
            with trio.move_on_after(WATCHDOG_STOP_S):
                await proc.wait()
            if proc.returncode is None:
                log.warning("watchdog %d did not exit; killing it", proc.pid)
                proc.kill()
                with trio.move_on_after(REAP_BUDGET_S):
                    await proc.wait()


@asynccontextmanager
async def open_reaper(*, watchdog: bool = True) -> AsyncIterator[Reaper]:
    """A reaper with its background sweeper and (unless ``watchdog=False``) its watchdog.

    On exit, even on cancel: :meth:`Reaper.kill_all`, then the watchdog is stopped and waited
    for, all shielded and bounded. An exception from the body comes out as itself, not wrapped
    in an ExceptionGroup by the sweeper's nursery.
    """
    reaper = Reaper()
    if watchdog:
        await reaper._start_watchdog()
    body_error: BaseException | None = None
    unwrapped: BaseException | None = None
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(reaper._sweeper)
            try:
                yield reaper
            except BaseException as exc:
                body_error = exc
                raise
            finally:
                with trio.move_on_after(TERM_GRACE_S + 2 * REAP_BUDGET_S, shield=True):
                    await reaper.kill_all()
                nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        if body_error is None or group.exceptions != (body_error,):
            raise
        unwrapped = body_error
    finally:
        await reaper._stop_watchdog()
    if unwrapped is not None:
        raise unwrapped
