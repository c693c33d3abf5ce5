"""The linux process guard: the posix guard (:mod:`triohooks.actors.posix_guard`) plus the
watchdog helper (:mod:`triohooks.actors._watchdog`, driven through
:mod:`triohooks.actors._subreaper`).

While the helper works, it spawns every hook and this module serves the run: feeding stdin,
reading stdout/stderr with caps (the calling task serves a run's pipes and its status pipe
through a private epoll), the timeout, and kills and sweeps asked of the helper. While there is
none (``watchdog=False``; it died or was given up and is being replaced), hooks run as the
posix guard runs them -- its spawn, its exit watch, its kills and marker sweeps -- and nothing
of that is restated here. So each path has one spawn, one exit watch and one kill.

Must not: know about events, dialects or decisions (``triohooks.handlers.replies`` reads
results), use ``capture_stdout`` (a grandchild holding the pipe would hang us), ``preexec_fn``,
PDEATHSIG (trio forks from worker threads that exit) or any process-wide SIGCHLD handling.

How nothing survives a run with the helper:
- The helper spawns every hook (we keep the pipes) and is a *child subreaper*: every process a
  hook orphans -- ``setsid``, double forks, ``nohup``, ``env -i`` -- is re-parented to it, so
  the helper's process tree holds every hook descendant, marked or not, in a group or not.
- As a hook's child exits, the helper SIGKILLs its group *before* reaping it (the zombie holds
  the pgid, so the group id cannot have been recycled), then pushes the exit status to us. We
  signal a live group only through the helper, which does so only while it has not reaped the
  child. Pipes then get at most ``EOF_GRACE_S`` to reach EOF (an escapee may hold them).
- On timeout, overflow and cancel the helper kills the run's remaining descendants at once;
  after a normal exit it kills orphans of finished runs, at most every ``SWEEP_INTERVAL_S``;
  on close, and when this process dies (even by SIGKILL: it sees EOF), every descendant.
- Every hook process also carries ``TRIOHOOKS_RUN=<engine-id>:<run-no>``. A helper run whose
  helper dies mid-run is *lost*: its status pipe cannot tell whether the child lives (so its
  group is never signalled: the id may be recycled), and the marker is all that finds its
  processes (a stop kills the run's marked processes; the sweeper those of finished runs).
- Without a helper, what holds is what the posix guard promises (docs/platforms.md), and
  nothing is killed if this process dies.
- What can still escape with the helper: see :mod:`triohooks.actors._watchdog`.

:mod:`triohooks.actors.guard` chooses this backend where pidfds (5.3+), /proc and prctl are
there; the posix guard alone elsewhere.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Final

import msgspec
import trio

from triohooks.handlers.process import ProcessResult, ProcessSpec

from ._subreaper import HelperGone, HostEnvironment, WatchdogHelper
from ._watchdog import STDIN_INLINE, run_marker
from .guard import (
    EOF_GRACE_S,
    READ_CHUNK,
    REAP_BUDGET_S,
    TERM_GRACE_S,
    Backend,
    Capture,
    GuardStats,
    WorkerProcess,
    process_result,
)
from .posix_guard import (
    HOST_ENVIRONMENT,
    Environment,
    PosixGuard,
    guarding,
    spawn_error,
    write_some,
)
from .supervisor import Supervisor
from .workers import LINUX_WORKER_FDS

log = logging.getLogger("triohooks.reaper")

#: The largest payload file the watchdog helper writes (it comes with the spawn request, which
#: the loop sends synchronously); a larger one is written in a worker thread.
PAYLOAD_FILE_INLINE: Final = 256 * 1024


class _HelperChild:
    """A hook process the watchdog helper spawned (the helper's child, not ours): the same
    ``pid`` / ``returncode`` / ``poll()`` as a Popen. The helper kills its group and reaps it
    as it exits, then writes the wait status into the run's status pipe, ``status``."""

    __slots__ = ("helper", "lost", "pid", "returncode", "status")

    def __init__(self, helper: WatchdogHelper, pid: int, status: int) -> None:
        self.helper = helper
        self.pid = pid
        self.status = status
        self.returncode: int | None = None
        #: The exit status is lost: the helper died before writing it (init reaps the child
        #: then), or could not tell.
        self.lost = False

    def poll(self) -> int | None:
        """The exit code once the child exited and was reaped, else None (never blocks)."""
        if self.returncode is not None or self.lost:
            return self.returncode
        try:
            data = os.read(self.status, 32)  # written at once, and far below PIPE_BUF
        except BlockingIOError:
            return None
        except OSError:
            data = b""
        if not data:
            self.lost = True
            return None
        self.returncode = os.waitstatus_to_exitcode(int(data))
        return self.returncode


class _Run:
    """A live hook process the helper spawned, as the reaper tracks it: the child, its exit
    descriptor (the status pipe) and our pipe ends."""

    __slots__ = (
        "child",
        "closed",
        "done",
        "exit_fd",
        "exit_fd_watched",
        "no",
        "pid",
        "stderr",
        "stdin",
        "stdin_rest",
        "stdout",
        "writers",
    )

    def __init__(
        self,
        no: int,
        child: _HelperChild,
        stdin: int,
        out: int,
        err: int,
        writers: tuple[int, int],
        stdin_rest: memoryview | None,
    ):
        self.no = no
        self.child = child
        self.pid = child.pid
        #: Our non-blocking pipe ends; stdin becomes None once closed.
        self.stdin: int | None = stdin
        #: What of the spec's stdin did not fit in the pipe before the spawn (None: all did).
        self.stdin_rest = stdin_rest
        self.stdout = out
        self.stderr = err
        #: Our copies of the stdout/stderr write ends, held while the child runs so that its
        #: exit does not hang up each pipe separately (each hang-up was a wakeup of its own).
        self.writers: tuple[int, int] | None = writers
        #: kill_all signalled this run's group.
        self.closed = False
        #: Set once the direct child is reaped (or given up on).
        self.done = trio.Event()
        #: Trio has waited on exit_fd (so closing it must tell trio): set by whoever waits.
        self.exit_fd_watched = False
        #: Readable once the direct child exited: the status pipe (its status written after
        #: the reap; EOF alone if the helper died).
        self.exit_fd = child.status

    @property
    def helper(self) -> WatchdogHelper:
        """The watchdog helper that spawned this run."""
        return self.child.helper

    @property
    def lost(self) -> bool:
        return self.child.lost

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


async def _spawn_via(
    helper: WatchdogHelper,
    spec: ProcessSpec,
    env: Environment,
    no: int,
    executable: str | None = None,
    payload_file: tuple[str, bytes] | None = None,
) -> _Run:
    """Have the watchdog helper start ``spec``'s process in its own session: the child is the
    helper's (so are its orphans, the helper being their subreaper), and so are the pipes, made
    before the request came: their ends that are ours come back with the pid, stdin holding
    what of ``spec.stdin`` fitted (a small payload goes with the request). ``executable``:
    where ``argv[0]`` lives, when the guard's command hash knows; else the child searches
    PATH. ``payload_file``: the helper writes it before the spawn and removes it as the child
    exits.

    One request and its reply, awaited: the loop runs on while the helper spawns. Raises the
    OSError or ValueError subprocess would, or :class:`HelperGone`; on cancel a hook that
    started is stopped.
    """
    cwd = spec.cwd if os.path.isabs(spec.cwd) else os.path.join(os.getcwd(), spec.cwd)
    stdin = spec.stdin
    inline = stdin if len(stdin) <= STDIN_INLINE else b""
    new = await helper.spawn(no, spec.argv, executable, cwd, env, inline, payload_file)
    rest = (
        write_some(new.stdin, memoryview(stdin)[new.written :])
        if new.written < len(stdin)
        else None
    )
    child = _HelperChild(helper, new.pid, new.status)
    return _Run(no, child, new.stdin, new.stdout, new.stderr, new.writers, rest)


class _Plumbing:
    """One run's pipes and exit, multiplexed on a private epoll so that a single task (the
    caller's) serves them all: no nursery, no helper tasks, one wakeup per batch of events."""

    #: Chunks read from one pipe per wakeup before yielding to the loop (fairness).
    READS_PER_WAKEUP: Final = 16

    def __init__(self, run: _Run, spec: ProcessSpec) -> None:
        self.run = run
        self.out = Capture(spec.output_cap)
        self.err = Capture(spec.output_cap)
        self.limit = spec.output_cap if spec.overflow == "error" else None
        self.exited = False
        self.overflowed = False
        self.open_outputs = 2
        self.poller = select.epoll()
        # One-shot: it reports the exit once, and needs no unregistering after.
        self.poller.register(run.exit_fd, select.EPOLLIN | select.EPOLLONESHOT)
        self.poller.register(run.stdout, select.EPOLLIN)
        self.poller.register(run.stderr, select.EPOLLIN)
        assert run.stdin is not None
        self.stdin_rest = run.stdin_rest
        if self.stdin_rest is None:  # the usual case: the payload fitted in the pipe
            run.close_stdin()
        else:
            self.poller.register(run.stdin, select.EPOLLOUT)

    async def until_exit(self) -> None:
        """Serve the pipes until the direct child exits or the output overflows."""
        fd = self.poller.fileno()
        while not (self.exited or self.overflowed):
            await trio.lowlevel.wait_readable(fd)
            self.serve_ready()

    async def until_eof(self) -> None:
        """Serve the pipes until both outputs reach EOF (or overflow)."""
        fd = self.poller.fileno()
        while self.open_outputs and not self.overflowed:
            await trio.lowlevel.wait_readable(fd)
            self.serve_ready()

    def close(self) -> None:
        _close_poller(self.poller)

    def after_exit(self) -> None:
        """The direct child is gone (or being stopped): drop our write ends and take what is
        ready now -- usually the final output and EOF on both pipes, with no further wakeup
        (read at once, without asking the epoll first: a read says as much)."""
        run = self.run
        run.release_writers()
        if self.open_outputs < 2:  # one pipe reached EOF already: only the other is registered
            self.serve_ready()
            return
        out_done = self._read(run.stdout, self.out)
        err_done = not self.overflowed and self._read(run.stderr, self.err)
        # What reached EOF is no longer polled for; with both done, nothing is polled again.
        if out_done != err_done:
            self.poller.unregister(run.stdout if out_done else run.stderr)

    def serve_ready(self) -> None:
        """Handle whatever the pipes and the exit descriptor have ready; never blocks."""
        run = self.run
        for fd, _ in self.poller.poll(0):
            if fd == run.exit_fd:
                self.exited = True
            elif fd == run.stdin:
                assert self.stdin_rest is not None
                self.stdin_rest = write_some(fd, self.stdin_rest)
                if self.stdin_rest is None:
                    self.poller.unregister(fd)
                    run.close_stdin()
            elif self._read(fd, self.out if fd == run.stdout else self.err):
                self.poller.unregister(fd)

    def _read(self, fd: int, capture: Capture) -> bool:
        """Read what is there; True at EOF (counted in ``open_outputs``)."""
        for _ in range(self.READS_PER_WAKEUP):
            try:
                chunk = os.read(fd, READ_CHUNK)
            except BlockingIOError:
                return False
            if not chunk:
                self.open_outputs -= 1
                return True
            capture.add(chunk)
            if self.limit is not None and capture.total > self.limit:
                self.overflowed = True
                return False
        return False


def _close_poller(poller: select.epoll) -> None:
    trio.lowlevel.notify_closing(poller.fileno())
    poller.close()


class WorkerRun:
    """A warm worker's process the helper spawned (:class:`~triohooks.actors.guard.WorkerProcess`),
    started by :meth:`Reaper.start_worker`: a run the reaper tracks until :meth:`reap`."""

    __slots__ = ("_reaper", "_run")

    def __init__(self, reaper: Reaper, run: _Run) -> None:
        self._reaper = reaper
        self._run = run

    @property
    def pid(self) -> int:
        return self._run.pid

    @property
    def stdin(self) -> int | None:
        return self._run.stdin

    @property
    def stdout(self) -> int:
        return self._run.stdout

    @property
    def stderr(self) -> int:
        return self._run.stderr

    @property
    def exit_fd(self) -> int:
        return self._run.exit_fd

    @property
    def closed(self) -> bool:
        return self._run.closed

    @property
    def returncode(self) -> int | None:
        return self._run.child.returncode

    def close_stdin(self) -> None:
        self._run.close_stdin()

    def signal(self, sig: int) -> None:
        self._reaper._signal_run(self._run, sig)

    async def stop(self) -> None:
        await self._reaper._stop_run(self._run)

    async def reap(self) -> None:
        await self._reaper._reap_run(self._run)


class Reaper(PosixGuard):
    """The posix guard plus the watchdog helper: the helper spawns, watches and kills every
    hook while it works; without it, :class:`PosixGuard` does. Create with
    :func:`open_reaper`."""

    def __init__(self, *, engine_id: str | None = None) -> None:
        # A worker the helper spawns holds LINUX_WORKER_FDS here; one of the posix path (no
        # helper) holds more, which the budget's count of open descriptors sees.
        super().__init__(engine_id=engine_id, worker_fds=LINUX_WORKER_FDS)
        #: Live runs the helper spawned (the posix guard's own are in ``_live``).
        self._runs: dict[int, _Run] = {}
        self._helper: WatchdogHelper | None = None
        #: Some run went without the helper (the posix path, or a run of a helper that died):
        #: processes that only the marker finds may exist, so the close sweeps for it.
        self._local_runs = False

    @property
    def backend(self) -> Backend:
        return "linux"

    @property
    def live(self) -> int:
        """Hook processes (groups) running now, the helper's and the posix path's."""
        return len(self._runs) + len(self._live)

    @property
    def watchdog_pid(self) -> int | None:
        return self._helper.pid if self._helper is not None else None

    def stats(self) -> GuardStats:
        helper = self._helper
        stats = super().stats()
        if helper is None:
            return stats
        return msgspec.structs.replace(
            stats, escapees_killed=stats.escapees_killed + helper.escapees_killed()
        )

    @property
    def _helper_works(self) -> bool:
        helper = self._helper
        return helper is not None and not helper.gone

    def track_file(self, path: str, present: bool) -> None:
        """Register (``present``) a file the watchdog helper removes if this process dies before
        it is released (``present=False``, after its removal): the JSON dialect's payload files.
        Never raises, never blocks; without a helper, a no-op."""
        helper = self._helper
        if helper is not None:
            helper.track_file(path, present)

    async def write_payload(self, path: str, data: bytes) -> None:
        """Create a payload file outside of a spawn (a warm worker's request): 0600,
        exclusively, not through a symlink. The watchdog helper writes it (one request and its
        reply; it removes the file if this process dies); without one, or past
        ``PAYLOAD_FILE_INLINE``, the posix guard's worker thread does, registering it with the
        helper first. Raises the OSError of the write. Remove it with :meth:`remove_payload`."""
        helper = self._helper
        if helper is not None and not helper.gone and len(data) <= PAYLOAD_FILE_INLINE:
            try:
                await helper.write_file(path, data)
                return
            except HelperGone:
                pass  # logged; written here instead
        await super().write_payload(path, data)

    async def remove_payload(self, path: str, *, wait: bool = False) -> None:
        """Remove a file :meth:`write_payload` made: the helper does (a message, no wait),
        else -- or with ``wait``: gone when this returns -- the posix guard's worker thread
        (shielded; a failure is logged), which then releases it from the helper."""
        helper = self._helper
        if not wait and helper is not None and not helper.gone:
            helper.remove_file(path)
            if not helper.gone:
                return
        await super().remove_payload(path)

    async def run(self, spec: ProcessSpec) -> ProcessResult:
        """Run one hook process to its end and return its one result: through the helper while
        it works, else as the posix guard runs it.

        A checkpoint. On cancel the process group gets SIGTERM, a short grace, then SIGKILL,
        escaped descendants are killed and the child is reaped (shielded, bounded); then
        ``Cancelled`` is re-raised.
        """
        if spec.worker or self._closing or not spec.argv or not self._helper_works:
            return await self._run_here(spec)
        started = time.perf_counter()
        await trio.lowlevel.checkpoint_if_cancelled()
        # Too big to send with the spawn request, the payload file is written in a thread.
        file_ready = spec.payload_file is not None and not self._helper_writes(spec)
        if file_ready:
            assert spec.payload_file is not None
            try:  # (registered with the helper first)
                await self.write_payload(*spec.payload_file)
            except OSError as exc:
                self._spawn_failures += 1
                took = (time.perf_counter() - started) * 1000
                return ProcessResult(
                    status="spawn_failed", error=spawn_error(spec, exc), duration_ms=took
                )
        run: _Run | ProcessResult | None = None
        try:
            try:
                run = await self._launch(spec, started=started, file_ready=file_ready)
            except HelperGone:  # logged; this run goes the posix way
                if file_ready:
                    assert spec.payload_file is not None
                    await self.remove_payload(spec.payload_file[0], wait=True)
                    file_ready = False
                return await self._run_here(spec)
            if isinstance(run, ProcessResult):
                return run
            try:
                return await self._supervise(run, spec, started)
            finally:
                await self._reap_run(run)
        finally:
            await self._release_file(spec, run if isinstance(run, _Run) else None, file_ready)

    async def _run_here(self, spec: ProcessSpec) -> ProcessResult:
        """The posix guard's run (a worker's request, a closing guard and an empty argv too)."""
        if not spec.worker:
            self._local_runs = True
        return await super().run(spec)

    def _helper_writes(self, spec: ProcessSpec) -> bool:
        """Whether the helper would write the spec's payload file (it works, and the file is
        small enough to send with the request)."""
        payload = spec.payload_file
        return self._helper_works and (payload is None or len(payload[1]) <= PAYLOAD_FILE_INLINE)

    async def _release_file(self, spec: ProcessSpec, run: _Run | None, file_ready: bool) -> None:
        """Remove the run's payload file unless its helper did (it removes the files it wrote
        as their child exits): one written here (``file_ready``), or the helper's when that
        helper is gone. Gone when this returns, as when the helper removes it."""
        if spec.payload_file is None:
            return
        if not file_ready and (run is None or (not run.helper.gone and not run.lost)):
            return
        await self.remove_payload(spec.payload_file[0], wait=True)

    async def _spawn(
        self,
        helper: WatchdogHelper,
        spec: ProcessSpec,
        env: Environment,
        no: int,
        file_ready: bool,
    ) -> _Run:
        """Through the watchdog helper, ``argv[0]`` looked up in the guard's command hash (a
        hashed file that fails to start is forgotten, and the spawn retried). ``file_ready``:
        the spec's payload file is written already (else the helper writes it)."""
        payload_file = None if file_ready else spec.payload_file
        program = spec.argv[0]
        executable = self._commands.lookup(program, env)
        if executable is None:
            return await _spawn_via(helper, spec, env, no, None, payload_file)
        try:
            return await _spawn_via(helper, spec, env, no, executable, payload_file)
        except OSError:  # moved, or not startable after all: search PATH as if never hashed
            self._commands.forget(program)
            return await _spawn_via(helper, spec, env, no, None, payload_file)

    async def _supervise(
        self,
        run: _Run,
        spec: ProcessSpec,
        started: float,
    ) -> ProcessResult:
        """Serve the run's pipes until it exits (or is stopped) and read its result."""
        waiting = trio.CancelScope(deadline=trio.current_time() + spec.timeout_s)
        if self._closing:  # kill_all ran while we were spawning
            run.closed = True
            waiting.cancel()
        pipes: _Plumbing | None = None
        try:
            pipes = _Plumbing(run, spec)
            with waiting:
                await pipes.until_exit()
            if not pipes.exited:  # timeout, overflow or close (an exit: the helper killed
                await self._stop_run(run)  # the group as its child exited)
            pipes.after_exit()
            if pipes.open_outputs:  # a descendant holds a pipe, or output is still pending
                with trio.move_on_after(EOF_GRACE_S):
                    await pipes.until_eof()
        except BaseException:
            # Cancelled (or a bug): the group must not outlive this call.
            with trio.move_on_after(REAP_BUDGET_S, shield=True):
                await self._stop_run(run)
            raise
        finally:
            if pipes is not None:
                pipes.close()
        await self._wait_and_forget(run)
        return self._result(run, spec, pipes, started, timed_out=waiting.cancelled_caught)

    def _result(
        self, run: _Run, spec: ProcessSpec, pipes: _Plumbing, started: float, *, timed_out: bool
    ) -> ProcessResult:
        """The ProcessResult of a run whose child is reaped (or given up on)."""
        result = process_result(
            spec,
            returncode=run.child.returncode,
            out=pipes.out,
            err=pipes.err,
            duration_ms=(time.perf_counter() - started) * 1000,
            pid=run.pid,
            overflowed=pipes.overflowed,
            timed_out=timed_out,
            closed=run.closed,
            lost=run.lost,
        )
        self._overflows += result.status == "overflow"
        self._timeouts += result.status == "timeout"
        return result

    async def _stop_run(self, run: _Run) -> None:
        """SIGTERM the group, grace, then the helper SIGKILLs it and kills the run's every
        descendant; if the helper is gone, the run's marked processes are killed instead.

        A checkpoint; call it shielded. The child stays unreaped (so the pgid stays ours).
        """
        self._killed += 1
        self._signal_run(run, signal.SIGTERM)
        run.exit_fd_watched = True
        with trio.move_on_after(TERM_GRACE_S):
            await trio.lowlevel.wait_readable(run.exit_fd)
        helper = run.helper
        if not helper.gone:
            helper.stopped(run.pid)  # SIGKILL, then its descendants, wherever they went
            if not helper.gone:
                await trio.lowlevel.checkpoint()
                return
        self._escapees_killed += await self._marked_kills(run.no)

    @staticmethod
    def _signal_run(run: _Run, sig: int) -> None:
        """Signal a live run's group through the helper that reaps it (which signals only while
        it has not). A run of a helper that is gone is not signalled: its status pipe cannot
        tell whether the child lives, so its group id may be recycled; its marker finds what
        is left of it."""
        helper = run.helper
        if not helper.gone:
            helper.signal(run.pid, sig)

    async def _wait_and_forget(self, run: _Run) -> None:
        """Wait (shielded, bounded) until the helper reaped the child and, in the same step,
        stop tracking it: once reaped, its pgid may be recycled, so nothing may signal it."""
        if run.done.is_set():
            return
        child = run.child
        if child.poll() is None and not run.lost:
            run.exit_fd_watched = True
            with trio.move_on_after(REAP_BUDGET_S, shield=True):
                await trio.lowlevel.wait_readable(run.exit_fd)
        if child.poll() is None and not run.lost:
            log.warning("hook process %d did not die after SIGKILL; leaving it", run.pid)
            return
        del self._runs[run.no]
        self._unfinished.discard(run.no)
        run.done.set()
        if run.lost:  # its descendants went to init: only markers find them
            self._local_runs = True
            self._sweep(run.no)
        # else the helper sweeps for orphans itself, now that it has reaped the child

    async def _reap_run(self, run: _Run) -> None:
        """Whatever happened: wait for the reap, close the run's pipes and exit descriptor."""
        await self._wait_and_forget(run)
        run.close_pipes()
        if run.exit_fd_watched:
            _close(run.exit_fd)
        else:  # trio never saw it: nothing to tell
            os.close(run.exit_fd)

    async def kill_all(self) -> int:
        """Engine close: stop new runs; SIGTERM every live group of the helper's, grace,
        SIGKILL, then have the helper kill every descendant it has; then the posix guard's
        close of its own runs (with a marker sweep when some run went without the helper).
        Returns how many groups were live.

        A checkpoint. Waits (bounded) for the runs it killed to be reaped by their own tasks.
        Call it shielded: a cancel midway leaves groups for the watchdog.
        """
        self._closing = True
        await self._workers.close()  # idle workers: EOF, grace, group kill, reaped
        runs = list(self._runs.values())
        for run in runs:
            run.closed = True
            self._signal_run(run, signal.SIGTERM)
        self._killed += len(runs)
        with trio.move_on_after(TERM_GRACE_S):
            for run in runs:
                await run.done.wait()
        for run in runs:
            if not run.done.is_set():  # not reaped, so the pgid is still this run's
                self._signal_run(run, signal.SIGKILL)
        helper = self._helper
        if helper is not None:
            helper.close_all()  # every descendant of every run, wherever it went
        sweep = self._local_runs or helper is None or helper.gone
        here = await self._kill_groups(sweep_markers=sweep)
        with trio.move_on_after(REAP_BUDGET_S):
            for run in runs:
                await run.done.wait()
        return len(runs) + here

    async def start_worker(
        self, spec: ProcessSpec, extra_env: Mapping[str, str] | None = None
    ) -> WorkerProcess | ProcessResult:
        """Start a warm worker's process (``spec.stdin`` is not written; ``extra_env`` is added
        to its environment): its handle, tracked until its ``reap``, or why it could not start
        (a ProcessResult, as a one-shot run's). Through the helper while it works, else as the
        posix guard starts one."""
        if self._closing or not spec.argv or not self._helper_works:
            return await self._start_worker_here(spec, extra_env)
        idle = msgspec.structs.replace(spec, stdin=b"")  # requests come through its handle
        try:
            launched = await self._launch(idle, extra_env=dict(extra_env or {}))
        except HelperGone:
            return await self._start_worker_here(spec, extra_env)
        if isinstance(launched, ProcessResult):
            return launched
        # Our copies of its stdout and stderr write ends: a worker's exit is read from its exit
        # descriptor, so they only cost two descriptors for as long as it lives.
        launched.release_writers()
        return WorkerRun(self, launched)

    async def _start_worker_here(
        self, spec: ProcessSpec, extra_env: Mapping[str, str] | None
    ) -> WorkerProcess | ProcessResult:
        self._local_runs = True
        return await super().start_worker(spec, extra_env)

    async def _launch(
        self,
        spec: ProcessSpec,
        *,
        extra_env: dict[str, str] | None = None,
        started: float | None = None,
        file_ready: bool = False,
    ) -> _Run | ProcessResult:
        """Have the helper start ``spec``'s process: numbered, marked and tracked until the
        caller reaps it (``_reap_run``, after ``_supervise`` for a one-shot run, through its
        handle for a worker); ``extra_env`` is added to its environment. A process that cannot
        be started is its ProcessResult (timed from ``started`` when given); a helper that is
        gone (or goes now) raises :class:`HelperGone`, the run not started."""
        helper = self._helper
        if helper is None or helper.gone:
            raise HelperGone("no watchdog helper")
        self._last_no += 1
        no = self._last_no
        self._unfinished.add(no)
        env: Environment
        if spec.env is None and not extra_env:
            # The common case: the helper keeps the host's environment between runs.
            snapshot, version = HOST_ENVIRONMENT.take()
            marker = run_marker(self.engine_id, no).encode()
            env = HostEnvironment(snapshot, version, marker)
        else:
            env = self._env(spec, no, extra_env or {})
        try:
            # Shielded: a process the helper starts is tracked (in ``live``) before a cancel
            # can act, and then stopped and reaped by the same cancel path as any run -- not
            # killed later, untracked, when its abandoned reply comes. Bounded by the helper's
            # reply timeout (a silent helper is given up: HelperGone).
            with trio.CancelScope(shield=True):
                run = await self._spawn(helper, spec, env, no, file_ready)
        except BaseException as exc:
            self._unfinished.discard(no)
            if not isinstance(exc, OSError | ValueError):
                raise
            self._spawn_failures += 1
            took = (time.perf_counter() - started) * 1000 if started is not None else 0.0
            return ProcessResult(
                status="spawn_failed", error=spawn_error(spec, exc), duration_ms=took
            )
        self._runs[no] = run
        self._spawned += 1
        return run

    async def _start_watchdog(self, nursery: trio.Nursery, actors: Supervisor) -> None:
        await actors.start("watchdog helper", self._keep_watchdog)

    async def _keep_watchdog(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Actor: a fresh watchdog helper, kept until it dies or is given up (hung, broke the
        protocol); then it is stopped and :class:`HelperGone` raised, so the supervisor starts
        a new one (within its restart budget; past it the engine fails with ActorFailed).
        Hooks started while there is none run as the posix guard runs them."""
        helper = await WatchdogHelper.start(self.engine_id)
        self._helper = helper
        task_status.started()
        async with trio.open_nursery() as watch:

            async def until(event: Callable[[], Awaitable[object]]) -> None:
                await event()
                watch.cancel_scope.cancel()

            watch.start_soon(until, helper.process.wait)
            watch.start_soon(until, helper.serve)  # returns once the helper is given up
        # It exited or was given up (a cancel -- the reaper closing -- skips all this: leaving
        # open_reaper stops the helper it still holds).
        if self._helper is helper:
            self._escapees_killed += helper.escapees_killed()
            self._helper = None
        await helper.stop()
        if self._closing:
            return  # no new helper for a reaper that is closing
        why = helper.gone_reason or f"it exited with status {helper.process.returncode}"
        raise HelperGone(f"watchdog helper {helper.pid} is gone: {why}")

    async def _stop_watchdog(self) -> None:
        """Close the helper's socket (it kills what is left, removes registered payload files
        and exits) and wait for it. Shielded, bounded."""
        helper = self._helper
        if helper is not None:
            self._escapees_killed += helper.escapees_killed()
            self._helper = None
            await helper.stop()


@asynccontextmanager
async def open_reaper(*, watchdog: bool = True) -> AsyncIterator[Reaper]:
    """A reaper with its background sweeper, its worker janitor and (unless ``watchdog=False``)
    its watchdog helper, which then spawns every hook (see the module docstring), started
    before this yields. On exit, even on cancel: :meth:`Reaper.kill_all`, then the helper is
    stopped (it kills what is left and removes registered payload files) and waited for, all
    shielded and bounded (:func:`~triohooks.actors.posix_guard.guarding`)."""
    async with guarding(Reaper(), watchdog=watchdog) as reaper:
        yield reaper
