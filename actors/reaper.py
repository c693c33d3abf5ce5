"""The process guard: the only place that starts, watches, kills and reaps hook processes.

Owns: spawning (``bash -c <command>`` or a program's argv, in the workspace, each run in its own
session and process group; PATH lookups hashed like a shell's), feeding stdin, reading
stdout/stderr ourselves with caps (the calling task serves a run's pipes and exit through a
private epoll), timeouts, group kills (SIGTERM, a short grace, SIGKILL), sweeping what a hook
leaves behind, the watchdog helper (:mod:`triohooks.actors._watchdog`, driven through
:mod:`triohooks.actors._subreaper`) and the counters.

Must not: know about events, dialects or decisions (``triohooks.handlers.replies`` reads results),
use ``capture_stdout`` (a grandchild holding the pipe would hang us), ``preexec_fn``, PDEATHSIG
(trio forks from worker threads that exit) or any process-wide SIGCHLD handling.

How nothing survives a run (with the watchdog helper, the default):
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
- Every hook process also carries ``TRIOHOOKS_RUN=<engine-id>:<run-no>``. Without a helper
  (``watchdog=False``, or it died: hooks then start here), the marker is all there is: on
  timeout, cancel and close the run's (or the engine's) marked processes are killed, after a
  normal exit a background sweeper does the same for finished runs; a descendant that left
  the group *and* dropped the marker is not found, and nothing is killed if this process dies.
- What can still escape with the helper: see :mod:`triohooks.actors._watchdog`.

The linux backend of the process guard (:mod:`triohooks.actors.guard` chooses it where pidfds
(5.3+), /proc and prctl are there; :mod:`triohooks.actors.posix_guard` elsewhere).
"""

from __future__ import annotations

import itertools
import logging
import os
import select
import signal
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from functools import partial
from typing import Final, cast

import msgspec
import trio

from triohooks.handlers.process import ProcessResult, ProcessSpec

from ._subreaper import HelperGone, HostEnvironment, WatchdogHelper
from ._watchdog import (
    RUN_VAR,
    STDIN_INLINE,
    kill_marked,
    remove_file,
    run_marker,
    signal_group,
    write_private_file,
)
from .guard import (
    CLOSED_ERROR,
    EOF_GRACE_S,
    READ_CHUNK,
    REAP_BUDGET_S,
    SWEEP_INTERVAL_S,
    TERM_GRACE_S,
    Backend,
    Capture,
    GuardStats,
    process_result,
    unfinished,
)
from .supervisor import Supervisor
from .workers import LINUX_WORKER_FDS, Workers

log = logging.getLogger("triohooks.reaper")

#: The largest payload file the watchdog helper writes (it comes with the spawn request, which
#: the loop sends synchronously); a larger one is written in a worker thread.
PAYLOAD_FILE_INLINE: Final = 256 * 1024
_RUN_VAR_BYTES: Final = RUN_VAR.encode()


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


def _readable(fd: int) -> bool:
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


_Child = subprocess.Popen[bytes] | _HelperChild


class _Run:
    """A live hook process, as the reaper tracks it: the child, its exit descriptor and our
    pipe ends."""

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
        child: _Child,
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
        #: Readable once the direct child exited: for a helper's run the status pipe (its
        #: status written after the reap; EOF alone if the helper died), else a pidfd.
        self.exit_fd: int
        if isinstance(child, _HelperChild):
            self.exit_fd = child.status
            return
        try:
            self.exit_fd = os.pidfd_open(self.pid)  # Linux 5.3+
        except OSError:  # we cannot guard this process, so it must not run
            signal_group(self.pid, signal.SIGKILL)
            child.wait()
            self.close_pipes()
            raise

    @property
    def helper(self) -> WatchdogHelper | None:
        """The watchdog helper that spawned this run, if one did."""
        return self.child.helper if isinstance(self.child, _HelperChild) else None

    @property
    def lost(self) -> bool:
        return isinstance(self.child, _HelperChild) and self.child.lost

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


def _open_pipes(spec: ProcessSpec) -> tuple[list[tuple[int, int]], memoryview | None]:
    """The child's three pipes (close-on-exec; the spawn dup2s the far ends onto 0, 1, 2), our
    ends non-blocking, stdin already holding what of ``spec.stdin`` fits: the child reads it
    as it starts, not once we hear it did. Returns the pipes and the rest of stdin."""
    pipes: list[tuple[int, int]] = []
    try:
        for _ in range(3):
            pipes.append(os.pipe())
        for fd in (pipes[0][1], pipes[1][0], pipes[2][0]):
            os.set_blocking(fd, False)
        return pipes, _write_some(pipes[0][1], memoryview(spec.stdin))
    except BaseException:
        _close_pipes(pipes)
        raise


def _close_pipes(pipes: list[tuple[int, int]]) -> None:
    for pair in pipes:
        for fd in pair:
            os.close(fd)


def _spawn(spec: ProcessSpec, env: Environment, no: int, executable: str | None = None) -> _Run:
    """Start the child in its own session, with three pipes whose far ends we keep.

    ``executable``: where ``argv[0]`` lives, when :class:`_CommandHash` knows; else the child
    searches PATH.

    Synchronous on purpose: CPython forks with vfork here (no preexec_fn), which blocks the loop
    only until the child execs, while a worker-thread hop under load costs more than the spawn
    itself (measured with bench/spawn_overhead.py).
    """
    pipes, stdin_rest = _open_pipes(spec)
    (in_r, in_w), (out_r, out_w), (err_r, err_w) = pipes
    try:
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
        _close_pipes(pipes)
        raise
    os.close(in_r)
    return _Run(no, popen, in_w, out_r, err_r, (out_w, err_w), stdin_rest)


async def _spawn_via(
    helper: WatchdogHelper,
    spec: ProcessSpec,
    env: Environment,
    no: int,
    executable: str | None = None,
    payload_file: tuple[str, bytes] | None = None,
) -> _Run:
    """:func:`_spawn`, but the watchdog helper forks: the child is the helper's (so are its
    orphans, the helper being their subreaper), and so are the pipes, made before the request
    came: their ends that are ours come back with the pid, stdin holding what of
    ``spec.stdin`` fitted (a small payload goes with the request). ``payload_file``: the
    helper writes it before the spawn and removes it as the child exits.

    One request and its reply, awaited: the loop runs on while the helper spawns. Raises what
    :func:`_spawn` would, or :class:`HelperGone`; on cancel a hook that started is stopped.
    """
    cwd = spec.cwd if os.path.isabs(spec.cwd) else os.path.join(os.getcwd(), spec.cwd)
    stdin = spec.stdin
    inline = stdin if len(stdin) <= STDIN_INLINE else b""
    new = await helper.spawn(no, spec.argv, executable, cwd, env, inline, payload_file)
    rest = (
        _write_some(new.stdin, memoryview(stdin)[new.written :])
        if new.written < len(stdin)
        else None
    )
    child = _HelperChild(helper, new.pid, new.status)
    return _Run(no, child, new.stdin, new.stdout, new.stderr, new.writers, rest)


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
                self.stdin_rest = _write_some(fd, self.stdin_rest)
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


def _host_environment(marker: str) -> Environment:
    """The host's environment as the bytes dict Popen takes, plus the run marker: a fresh
    dict, the caller's to change (see :class:`_EnvironmentSnapshot`)."""
    env = dict(_HOST_ENVIRONMENT.take()[0])
    env[_RUN_VAR_BYTES] = marker.encode()
    return env


class _EnvironmentSnapshot:
    """The host's environment as ``os.environb`` (public, POSIX) has it on each run, so a
    variable the embedding application sets later reaches later hooks, with a version that
    changes only when the contents did (the watchdog helper then keeps its copy: the request
    carries the run marker alone).

    Copied on every run (~30 us for 35 variables: every item goes through its Python-level
    ``__getitem__``); comparing the copy with the last one costs ~1 us. Noticing changes without
    copying would take a process-wide audit hook (``sys.addaudithook``: never removable, called
    on every audit event of the embedding application), not a side effect a library should
    impose for 30 us.
    """

    def __init__(self) -> None:
        self._snapshot: dict[bytes, bytes] | None = None
        self._versions = itertools.count(1)
        self._version = 0

    def take(self) -> tuple[dict[bytes, bytes], int]:
        """The environment (not to be changed) and its version: the same version, the same
        contents."""
        current = dict(os.environb)
        if current != self._snapshot:
            self._snapshot = current
            self._version = next(self._versions)
        assert self._snapshot is not None
        return self._snapshot, self._version


_HOST_ENVIRONMENT: Final = _EnvironmentSnapshot()


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
    payload = spec.payload_file
    if isinstance(exc, OSError) and payload is not None and exc.filename == payload[0]:
        return f"cannot write the payload file {payload[0]!r}: {exc.strerror or exc}"
    if isinstance(exc, OSError) and exc.filename == spec.cwd:
        return f"cannot start {program!r}: working directory {spec.cwd!r}: {exc.strerror}"
    if isinstance(exc, FileNotFoundError):
        return f"cannot start {program!r}: program not found"
    if isinstance(exc, OSError):
        return f"cannot start {program!r}: {exc.strerror or exc}"
    return f"cannot start {program!r}: {exc}"


class WorkerRun:
    """A warm worker's process (:class:`~triohooks.actors.guard.WorkerProcess`), started by
    :meth:`Reaper.start_worker`: a run the reaper tracks until :meth:`reap`."""

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
        self._reaper._signal(self._run, sig)

    async def stop(self) -> None:
        await self._reaper._stop(self._run)

    async def reap(self) -> None:
        await self._reaper._reap(self._run)


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
        self._helper: WatchdogHelper | None = None
        #: Some run was spawned here, not by the helper: marker sweeps are needed.
        self._local_runs = False
        self._spawned = 0
        self._spawn_failures = 0
        self._killed = 0
        self._timeouts = 0
        self._overflows = 0
        self._escapees_killed = 0
        self._workers = Workers(self.start_worker, self.run, fds=LINUX_WORKER_FDS)

    @property
    def backend(self) -> Backend:
        return "linux"

    @property
    def live(self) -> int:
        """Hook processes (groups) running now."""
        return len(self._runs)

    @property
    def watchdog_pid(self) -> int | None:
        return self._helper.pid if self._helper is not None else None

    def stats(self) -> GuardStats:
        helper = self._helper
        return GuardStats(
            spawned=self._spawned,
            spawn_failures=self._spawn_failures,
            killed=self._killed,
            timeouts=self._timeouts,
            overflows=self._overflows,
            escapees_killed=self._escapees_killed
            + (helper.escapees_killed() if helper is not None else 0),
            live=len(self._runs),
        )

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
        ``PAYLOAD_FILE_INLINE``, a worker thread does, registering it with the helper first.
        Raises the OSError of the write. Remove it with :meth:`remove_payload`."""
        helper = self._helper
        if helper is not None and not helper.gone and len(data) <= PAYLOAD_FILE_INLINE:
            try:
                await helper.write_file(path, data)
                return
            except HelperGone:
                pass  # logged; written here instead
        self.track_file(path, True)  # before a byte of it exists
        try:
            await trio.to_thread.run_sync(write_private_file, path, data)
        except BaseException:
            self.track_file(path, False)
            raise

    async def remove_payload(self, path: str, *, wait: bool = False) -> None:
        """Remove a file :meth:`write_payload` made: the helper does (a message, no wait),
        else -- or with ``wait``: gone when this returns -- a worker thread (shielded; a
        failure is logged), which then releases it from the helper."""
        helper = self._helper
        if not wait and helper is not None and not helper.gone:
            helper.remove_file(path)
            if not helper.gone:
                return
        with trio.CancelScope(shield=True):
            try:
                await trio.to_thread.run_sync(remove_file, path)
            except OSError as exc:
                log.warning("cannot remove payload file %s: %s", path, exc.strerror or exc)
        self.track_file(path, False)

    async def run(self, spec: ProcessSpec) -> ProcessResult:
        """Run one hook process to its end and return its one result.

        A checkpoint. On cancel the process group gets SIGTERM, a short grace, then SIGKILL,
        escaped descendants are killed and the child is reaped (shielded, bounded); then
        ``Cancelled`` is re-raised.
        """
        if spec.worker:
            return await self._workers.request(spec)
        started = time.perf_counter()
        if self._closing or not spec.argv:
            await trio.lowlevel.checkpoint()  # and _launch says which
        else:
            await trio.lowlevel.checkpoint_if_cancelled()
        # Without a helper to write it (or too big to send it), the payload file is written
        # in a thread, not here.
        file_ready = spec.payload_file is not None and not self._helper_writes(spec)
        if file_ready:
            assert spec.payload_file is not None
            try:  # (registered with the helper first, when there is one)
                await self.write_payload(*spec.payload_file)
            except OSError as exc:
                self._spawn_failures += 1
                took = (time.perf_counter() - started) * 1000
                return ProcessResult(
                    status="spawn_failed", error=_spawn_error(spec, exc), duration_ms=took
                )
        run: _Run | ProcessResult | None = None
        try:
            run = await self._launch(spec, started=started, file_ready=file_ready)
            if isinstance(run, ProcessResult):
                return run
            try:
                return await self._supervise(run, spec, started)
            finally:
                await self._reap(run)
        finally:
            await self._release_file(spec, run if isinstance(run, _Run) else None, file_ready)

    @property
    def _helper_works(self) -> bool:
        helper = self._helper
        return helper is not None and not helper.gone

    def _helper_writes(self, spec: ProcessSpec) -> bool:
        """Whether the helper would write the spec's payload file (it works, and the file is
        small enough to send with the request)."""
        payload = spec.payload_file
        return self._helper_works and (payload is None or len(payload[1]) <= PAYLOAD_FILE_INLINE)

    async def _release_file(self, spec: ProcessSpec, run: _Run | None, file_ready: bool) -> None:
        """Remove the run's payload file unless its helper did (it removes the files it wrote
        as their child exits): one written here (``file_ready``, or a local spawn's), or the
        helper's when that helper is gone. Gone when this returns, as when the helper
        removes it."""
        if spec.payload_file is None:
            return
        if not file_ready:
            helper = run.helper if run is not None else None
            if run is None or (helper is not None and not helper.gone and not run.lost):
                return
        await self.remove_payload(spec.payload_file[0], wait=True)

    async def _spawn(self, spec: ProcessSpec, env: Environment, no: int, file_ready: bool) -> _Run:
        program = spec.argv[0]
        executable = self._commands.lookup(program, env)
        if executable is None:
            return await self._start(spec, env, no, None, file_ready)
        try:
            return await self._start(spec, env, no, executable, file_ready)
        except OSError:  # moved, or not startable after all: search PATH as if never hashed
            self._commands.forget(program)
            return await self._start(spec, env, no, None, file_ready)

    async def _start(
        self,
        spec: ProcessSpec,
        env: Environment,
        no: int,
        executable: str | None,
        file_ready: bool,
    ) -> _Run:
        """Through the watchdog helper while it works, else here (marker sweeps only).
        ``file_ready``: the spec's payload file is written already (else the helper writes
        it, or, spawning here, this does)."""
        payload_file = None if file_ready else spec.payload_file
        helper = self._helper
        if helper is not None and not helper.gone:
            try:
                return await _spawn_via(helper, spec, env, no, executable, payload_file)
            except HelperGone:
                pass  # logged; from now on, and for this run, spawn here
        self._local_runs = True
        if payload_file is None:
            return _spawn(spec, env, no, executable)
        # The helper went away since run() looked: written here, once (it is small).
        write_private_file(*payload_file)
        try:
            return _spawn(spec, env, no, executable)
        except BaseException:
            remove_file(payload_file[0])
            raise

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
            if pipes.exited:
                if run.helper is None:  # (the helper kills a group as its child exits)
                    # The unreaped child holds the pgid, so this cannot hit a recycled group.
                    signal_group(run.pid, signal.SIGKILL)
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

    async def _stop(self, run: _Run) -> None:
        """SIGTERM the group, grace, SIGKILL the group, kill the run's escapees: through the
        helper, the run's every descendant; else those carrying the run's marker.

        A checkpoint; call it shielded. The child stays unreaped (so the pgid stays ours).
        """
        self._killed += 1
        self._signal(run, signal.SIGTERM)
        run.exit_fd_watched = True
        with trio.move_on_after(TERM_GRACE_S):
            await trio.lowlevel.wait_readable(run.exit_fd)
        helper = run.helper
        if helper is not None and not helper.gone:
            helper.stopped(run.pid)  # SIGKILL, then its descendants, wherever they went
            if not helper.gone:
                await trio.lowlevel.checkpoint()
                return
        self._signal(run, signal.SIGKILL)
        no = run.no
        self._escapees_killed += await trio.to_thread.run_sync(
            kill_marked, self.engine_id, lambda other: other != no
        )

    @staticmethod
    def _signal(run: _Run, sig: int) -> None:
        """Signal a live run's group: ourselves if the child is ours (unreaped until we reap
        it), else through the helper that reaps it (which signals only while it has not)."""
        helper = run.helper
        if helper is not None and not helper.gone:
            helper.signal(run.pid, sig)
            if not helper.gone:
                return
        # Ours: while its pidfd is not readable it is alive, and holds its group id. (A run of
        # a helper that died is not signalled: its status pipe cannot tell whether the child
        # lives, so its group id may be recycled; its marker finds what is left of it.)
        if helper is None and not _readable(run.exit_fd):
            signal_group(run.pid, sig)

    async def _wait_and_forget(self, run: _Run) -> None:
        """Reap the child (shielded, bounded) and, in the same step, stop tracking its group:
        once reaped, its pgid may be recycled, so nothing may signal it any more."""
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
        self._forget(run)

    def _forget(self, run: _Run) -> None:
        """Stop tracking a reaped run (see :meth:`_wait_and_forget`)."""
        del self._runs[run.no]
        self._unfinished.discard(run.no)
        run.done.set()
        if run.lost:
            self._local_runs = True  # its descendants went to init: only markers find them
        if run.helper is None or run.lost:
            self._sweep_wanted.set()  # a descendant may have left the group: look for it
        # else the helper sweeps for orphans itself, now that it has reaped the child

    async def _reap(self, run: _Run) -> None:
        """Whatever happened: reap the child, close its pipes and exit descriptor."""
        await self._wait_and_forget(run)
        run.close_pipes()
        if run.exit_fd_watched:
            _close(run.exit_fd)
        else:  # trio never saw it: nothing to tell
            os.close(run.exit_fd)

    async def kill_all(self) -> int:
        """Engine close: stop new runs, SIGTERM every live group, grace, SIGKILL, then have the
        helper kill every descendant it has (without one: every process still carrying this
        engine's marker). Returns how many groups were live.

        A checkpoint. Waits (bounded) for the runs it killed to be reaped by their own tasks.
        Call it shielded: a cancel midway leaves groups for the watchdog.
        """
        self._closing = True
        await self._workers.close()  # idle workers: EOF, grace, group kill, reaped
        runs = list(self._runs.values())
        for run in runs:
            run.closed = True
            self._signal(run, signal.SIGTERM)
        self._killed += len(runs)
        with trio.move_on_after(TERM_GRACE_S):
            for run in runs:
                await run.done.wait()
        for run in runs:
            if not run.done.is_set():  # not reaped, so the pgid is still this run's
                self._signal(run, signal.SIGKILL)
        helper = self._helper
        if helper is not None:
            helper.close_all()  # every descendant of every run, wherever it went
        if self._local_runs or helper is None or helper.gone:
            self._escapees_killed += await trio.to_thread.run_sync(kill_marked, self.engine_id)
        with trio.move_on_after(REAP_BUDGET_S):
            for run in runs:
                await run.done.wait()
        return len(runs)

    def retire_workers(self) -> None:
        """The config changed: warm workers restart from it (idle ones now, busy ones after
        their request)."""
        self._workers.retire_all()

    async def start_worker(
        self, spec: ProcessSpec, extra_env: Mapping[str, str] | None = None
    ) -> WorkerRun | ProcessResult:
        """Start a warm worker's process (``spec.stdin`` is not written; ``extra_env`` is added
        to its environment): its handle, tracked until its ``reap``, or why it could not start
        (a ProcessResult, as a one-shot run's)."""
        idle = msgspec.structs.replace(spec, stdin=b"")  # requests come through its handle
        launched = await self._launch(idle, extra_env=dict(extra_env or {}))
        if isinstance(launched, ProcessResult):
            return launched
        # Our copies of its stdout and stderr write ends: a worker's exit is read from its exit
        # descriptor, so they only cost two descriptors for as long as it lives.
        launched.release_writers()
        return WorkerRun(self, launched)

    async def _launch(
        self,
        spec: ProcessSpec,
        *,
        extra_env: dict[str, str] | None = None,
        started: float | None = None,
        file_ready: bool = False,
    ) -> _Run | ProcessResult:
        """Start ``spec``'s process: numbered, marked and tracked until the caller reaps it
        (``_reap``, after ``_supervise`` for a one-shot run, through its handle for a worker);
        ``extra_env`` is added to its environment. A process that cannot be started is its
        ProcessResult (timed from ``started`` when given)."""
        if self._closing:
            return ProcessResult(status="killed", error=CLOSED_ERROR)
        if not spec.argv:
            self._spawn_failures += 1
            return ProcessResult(status="spawn_failed", error="nothing to run: empty argv")
        self._last_no += 1
        no = self._last_no
        self._unfinished.add(no)
        marker = run_marker(self.engine_id, no)
        env: Environment
        if spec.env is not None:
            env = {**spec.env, **(extra_env or {}), RUN_VAR: marker}
        elif extra_env:
            host = cast("dict[bytes, bytes]", _host_environment(marker))
            for name, value in extra_env.items():
                host[name.encode()] = value.encode()
            env = host
        else:  # the common case: the helper keeps the host's environment between runs
            snapshot, version = _HOST_ENVIRONMENT.take()
            env = HostEnvironment(snapshot, version, marker.encode())
        try:
            # Shielded: a process the helper starts is tracked (in ``live``) before a cancel
            # can act, and then stopped and reaped by the same cancel path as any run -- not
            # killed later, untracked, when its abandoned reply comes. Bounded by the helper's
            # reply timeout (a silent helper is given up, and the spawn happens here).
            with trio.CancelScope(shield=True):
                run = await self._spawn(spec, env, no, file_ready)
        except BaseException as exc:
            self._unfinished.discard(no)
            if not isinstance(exc, OSError | ValueError):
                raise
            self._spawn_failures += 1
            took = (time.perf_counter() - started) * 1000 if started is not None else 0.0
            return ProcessResult(
                status="spawn_failed", error=_spawn_error(spec, exc), duration_ms=took
            )
        self._runs[no] = run
        self._spawned += 1
        return run

    async def _sweeper(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Actor: kill marked processes of finished runs (escapees), at most every
        SWEEP_INTERVAL_S. Stateless between sweeps, so the supervisor can restart it."""
        task_status.started()
        while True:
            await self._sweep_wanted.wait()
            self._sweep_wanted = trio.Event()
            # Runs started after this snapshot, or live in it, are spared: their processes are
            # legitimately alive. Any other marked process belongs to a finished run.
            spare = partial(unfinished, self._last_no, frozenset(self._unfinished))
            try:
                self._escapees_killed += await trio.to_thread.run_sync(
                    kill_marked, self.engine_id, spare
                )
            except OSError:  # a sweep the OS refuses must not take the engine down
                log.exception("sweeping escaped hook processes failed")
            await trio.sleep(SWEEP_INTERVAL_S)

    async def _keep_watchdog(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Actor: a fresh watchdog helper, kept until it dies or is given up (hung, broke the
        protocol); then it is stopped and :class:`HelperGone` raised, so the supervisor starts
        a new one (within its restart budget; past it the engine fails with ActorFailed).
        Hooks spawned while there is none start in this process (marker sweeps only)."""
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
    """A reaper with its background sweeper and (unless ``watchdog=False``) its watchdog
    helper, which then spawns every hook (see the module docstring), started before this yields.

    On exit, even on cancel: :meth:`Reaper.kill_all`, then the helper is stopped (it kills what
    is left and removes registered payload files) and waited for, all shielded and bounded. An
    exception from the body comes out as itself, not wrapped in an ExceptionGroup by the
    sweeper's nursery.
    """
    reaper = Reaper()
    body_error: BaseException | None = None
    unwrapped: BaseException | None = None
    try:
        async with trio.open_nursery() as nursery:
            actors = Supervisor(nursery)
            if watchdog:
                await actors.start("watchdog helper", reaper._keep_watchdog)
            await actors.start("escapee sweeper", reaper._sweeper)
            await actors.start("worker janitor", reaper._workers.janitor)
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
