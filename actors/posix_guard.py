"""The posix process guard: hooks run, watched, killed and reaped with what macOS and the BSDs
offer (docs/platforms.md says what holds where).

Owns, for this backend: spawning each hook with trio's own process API (kqueue on macOS) in its
own session and process group, with three pipes we read ourselves (caps, overflow), the run
marker ``TRIOHOOKS_RUN`` in its environment; the timeout (SIGTERM to the group, a short grace,
SIGKILL); after every run, a SIGKILL to what is left of its group, and a marker sweep for what
left it; the engine's close (every group, then every marked process); payload files written and
removed in worker threads; and the host-death watchdog (:mod:`triohooks.actors._posix_watchdog`),
told of every live group and payload file, which kills and removes them if this process dies.

Warm workers (``spec.worker``) are kept here too (:class:`~triohooks.actors.workers.Workers`, as
on linux): :meth:`PosixGuard.start_worker` starts one as a run of its own -- own session and
group, marked, told to the host-death watchdog, killed on close -- and hands out its
:class:`PosixWorker` handle; a task per worker waits for its exit (trio's process API: kqueue on
macOS) and then closes the write end of the handle's exit pipe, its exit descriptor.

What does not hold here that holds on linux: a process that leaves its group (``setsid``) *and*
drops the marker (``env -i``) is found only while it is still a descendant of a leader we stop
(a timeout, an overflow, a cancel, the close: the leader's descendants are snapshotted with
psutil before the kill, while it is unreaped) -- not after the leader exited on its own (trio's
process API reaps it at once, and orphans go to init), not when it double-forked away first,
and not when the host dies (the watchdog has only groups and markers). After a run exits
normally, its group is killed once its leader is reaped, so a group whose members all left
before that instant is not signalled at all. Must not: use blocking calls on the event loop,
``preexec_fn`` or process-wide SIGCHLD handling.
"""

from __future__ import annotations

import functools
import importlib.util
import itertools
import logging
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final, Generic, TypeVar, cast

import trio

from triohooks.handlers.process import ProcessResult, ProcessSpec

from ._watchdog import (
    RUN_VAR,
    RUN_VAR_BYTES,
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
    WorkerProcess,
    process_result,
    unfinished,
)
from .supervisor import Supervisor
from .workers import POSIX_WORKER_FDS, Workers

log = logging.getLogger("triohooks.posix_guard")

SCRIPT: Final = Path(__file__).with_name("_posix_watchdog.py")


def _descendants_of(pids: frozenset[int]) -> dict[int, list[tuple[int, float]]]:
    """The processes under each of ``pids`` now, as (pid, create time), from one read of the
    process table: taken while each leader is unreaped, so a child that left its group
    (``setsid``) is still found through its parent. Empty when psutil cannot tell."""
    try:
        import psutil

        children: dict[int, list[tuple[int, float]]] = {}
        for proc in psutil.process_iter(["ppid", "create_time"]):
            ppid, created = proc.info["ppid"], proc.info["create_time"]
            if ppid is not None and created is not None:  # (one we may not read: None)
                children.setdefault(ppid, []).append((proc.pid, created))
    except Exception:  # psutil missing, or the table cannot be read
        return {}
    found: dict[int, list[tuple[int, float]]] = {}
    for pid in pids:
        under: list[tuple[int, float]] = []
        todo = [pid]
        while todo:
            for child in children.get(todo.pop(), ()):
                under.append(child)
                todo.append(child[0])
        found[pid] = under
    return found


K = TypeVar("K")
R = TypeVar("R")


class _Round(Generic[K, R]):
    def __init__(self) -> None:
        self.keys: set[K] = set()
        self.done = trio.Event()
        self.result: Mapping[K, R] = {}
        self.error: Exception | None = None


class _Batched(Generic[K, R]):
    """Blocking ``work`` for many keys in one worker-thread call: the callers that arrive
    while one call runs are served together by the next, so a burst of stopped runs costs two
    reads of the process table, not one each. Call it shielded (as :meth:`PosixGuard._stop`
    is): the first caller of a round runs the rounds until none is waiting."""

    def __init__(self, work: Callable[[frozenset[K]], Mapping[K, R]]) -> None:
        self._work = work
        self._next: _Round[K, R] = _Round()
        self._running = False

    async def __call__(self, key: K) -> R:
        mine = self._next
        mine.keys.add(key)
        if not self._running:
            self._running = True
            try:
                while self._next.keys:
                    current, self._next = self._next, _Round()
                    try:
                        current.result = await trio.to_thread.run_sync(
                            self._work, frozenset(current.keys)
                        )
                    except Exception as exc:  # each caller of the round gets it
                        current.error = exc
                    finally:
                        current.done.set()
            finally:
                self._running = False
        await mine.done.wait()
        if mine.error is not None:
            raise mine.error
        return mine.result[key]


def _kill_all_of(snapshot: list[tuple[int, float]]) -> int:
    """SIGKILL what of ``snapshot`` still runs (the same process: the same create time), and
    wait (at most :data:`REAP_BUDGET_S`) until each is gone: a SIGKILL lands when the kernel
    gets to it, and "nothing left" must hold when the run or the close returns. Blocking: in
    a thread."""
    import psutil

    killed = []
    for pid, created in snapshot:
        try:
            proc = psutil.Process(pid)
            if proc.create_time() == created and proc.status() != psutil.STATUS_ZOMBIE:
                proc.kill()
                killed.append(proc)
        except psutil.Error:
            continue
    deadline = time.monotonic() + REAP_BUDGET_S
    waiting = killed
    while waiting and time.monotonic() < deadline:  # not our children: polled
        time.sleep(0.002)
        waiting = [p for p in waiting if _still_running(p)]
    return len(killed)


def _still_running(proc: Any) -> bool:
    """Whether ``proc`` (a psutil Process) has not died yet (a zombie has: its parent reaps)."""
    import psutil

    try:
        return bool(proc.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def _psutil_path() -> list[str]:
    spec = importlib.util.find_spec("psutil")
    if spec is None or spec.origin is None:
        return []
    return [str(Path(spec.origin).parent.parent)]


def spawn_error(spec: ProcessSpec, exc: Exception) -> str:
    """What a run that could not start says (both backends' spawn paths)."""
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


def _environ_store() -> dict[bytes, bytes] | None:
    """The dict ``os.environ`` and ``os.environb`` both read and write on POSIX (CPython's
    ``_Environ._data``: the encoded names and values, the same object behind both mappings),
    or None where it is not there as such. Copying it is a C-level dict copy; copying
    ``os.environb`` goes through a Python-level ``__getitem__`` per variable (~36 vs 0.5 us for
    35 variables)."""
    store = getattr(os.environb, "_data", None)
    if isinstance(store, dict) and store is getattr(os.environ, "_data", None):
        return store
    return None


class EnvironmentSnapshot:
    """The host's environment as ``os.environb`` (public, POSIX) has it on each run, so a
    variable the embedding application sets later reaches later hooks, with a version that
    changes only when the contents did (the watchdog helper then keeps its copy: the request
    carries the run marker alone).

    Copied on every run, from the store ``os.environ`` itself keeps (:func:`_environ_store`:
    ~0.5 us), else through ``os.environb`` (~36 us); comparing the copy with the last one costs
    ~1 us. Noticing changes without copying would take a process-wide audit hook
    (``sys.addaudithook``: never removable, called on every audit event of the embedding
    application), not a side effect a library should impose.
    """

    def __init__(self) -> None:
        self._snapshot: dict[bytes, bytes] | None = None
        self._versions = itertools.count(1)
        self._version = 0
        self._store = _environ_store()

    def take(self) -> tuple[dict[bytes, bytes], int]:
        """The environment (not to be changed) and its version: the same version, the same
        contents."""
        store = self._store
        current = store.copy() if store is not None else dict(os.environb)
        if current != self._snapshot:
            self._snapshot = current
            self._version = next(self._versions)
        assert self._snapshot is not None
        return self._snapshot, self._version


HOST_ENVIRONMENT: Final = EnvironmentSnapshot()


def write_some(fd: int, data: memoryview) -> memoryview | None:
    """Write what the pipe (non-blocking) takes now; the rest, or None when nothing more will
    be written."""
    try:
        while data:
            data = data[os.write(fd, data) :]
    except BlockingIOError:
        return data
    except OSError:  # EPIPE: the hook exited (or closed stdin) without reading it all
        return None
    return None


Environment = dict[str, str] | dict[bytes, bytes]


class CommandHash:
    """``argv[0]`` -> the file PATH finds for it, remembered per PATH, like a shell's hash table.

    Without it the child tries ``execve`` in every PATH directory before the right one (~60 us
    for bash on a PATH of 9 entries; bench/spawn_overhead.py). Only bare names on a PATH of
    absolute directories are hashed (a relative entry is searched from the child's cwd, which
    is not ours). The caller forgets an entry whose spawn failed and retries without it, so
    failures read exactly as before. Stale only the way a shell's hash is: a program installed
    *earlier* on PATH while the engine runs is not seen until PATH changes or the hashed file
    fails to start. One per guard, used by every spawn it makes (the linux backend's helper
    spawns too).
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


class _Watchdog:
    """The host-death watchdog process and the lines we owe it (written by one task, so the
    loop never blocks on its pipe)."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self.pending: list[bytes] = []
        self.wake = trio.Event()

    def say(self, line: bytes) -> None:
        self.pending.append(line)
        self.wake.set()

    async def writer(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        task_status.started()
        while True:
            await self.wake.wait()
            self.wake = trio.Event()
            lines, self.pending = self.pending, []
            try:
                await stdin.send_all(b"".join(lines))
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                log.warning("the host-death watchdog is gone; hooks are still killed on close")
                return


class PosixWorker:
    """A warm worker's process (:class:`~triohooks.actors.guard.WorkerProcess`), started by
    :meth:`PosixGuard.start_worker`: a live run of the guard until :meth:`reap`."""

    __slots__ = ("_guard", "_no", "_process", "_stopped", "exit_fd", "stderr", "stdin", "stdout")

    def __init__(
        self, guard: PosixGuard, no: int, process: trio.Process, fds: tuple[int, int, int, int]
    ) -> None:
        self._guard = guard
        self._no = no
        self._process = process
        self._stopped = False
        self.stdin: int | None
        self.stdin, self.stdout, self.stderr, self.exit_fd = fds

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def closed(self) -> bool:
        return self._guard._closing

    @property
    def returncode(self) -> int | None:
        return self._process.returncode

    def close_stdin(self) -> None:
        if self.stdin is not None:
            os.close(self.stdin)
            self.stdin = None

    def signal(self, sig: int) -> None:
        if self._process.returncode is None:  # unreaped: the group id is still its own
            signal_group(self._process.pid, sig)

    async def stop(self) -> None:
        self._stopped = True
        await self._guard._stop(self._no, self._process)

    async def reap(self) -> None:
        process = self._process
        with trio.move_on_after(REAP_BUDGET_S):
            await process.wait()
        if not self._stopped:  # it exited by itself: what is left of its group
            signal_group(process.pid, signal.SIGKILL)
        self._guard._forget(self._no, process)
        self._guard._sweep(self._no)
        self.close_stdin()
        for fd in (self.stdout, self.stderr, self.exit_fd):
            os.close(fd)


def _worker_pipes() -> tuple[list[int], list[int]]:
    """A worker's stdin, stdout and stderr pipes and its exit pipe: (the ends the child gets,
    then the exit pipe's write end; our ends, non-blocking)."""
    made: list[tuple[int, int]] = []
    try:
        for _ in range(4):
            made.append(os.pipe())
    except BaseException:
        for pair in made:
            for fd in pair:
                os.close(fd)
        raise
    (in_r, in_w), (out_r, out_w), (err_r, err_w), (exit_r, exit_w) = made
    for fd in (in_w, out_r, err_r, exit_r):
        os.set_blocking(fd, False)
    return [in_r, out_w, err_w, exit_w], [in_w, out_r, err_r, exit_r]


class PosixGuard:
    """Spawns, guards, kills and reaps hook processes on any POSIX system. Create with
    :func:`open_posix_guard`. The linux backend (:class:`~triohooks.actors.reaper.Reaper`) is
    this guard plus its watchdog helper: whatever the helper does not spawn runs here."""

    def __init__(self, *, engine_id: str | None = None, worker_fds: int = POSIX_WORKER_FDS) -> None:
        #: Part of every hook's ``TRIOHOOKS_RUN`` marker.
        self.engine_id = engine_id or uuid.uuid4().hex
        #: Live runs: run number -> the process (its pid is its pgid).
        self._live: dict[int, trio.Process] = {}
        #: Run numbers handed out and not yet forgotten, spawning ones included (the spawn runs
        #: in a thread: its process exists, marked, before it is in ``_live``): a sweep spares
        #: their processes.
        self._unfinished: set[int] = set()
        self._last_no = 0
        #: Spawns in flight (in trio's spawn thread), and set when the last one of them lands
        #: after close began: close waits for them, so none escapes its kill.
        self._spawning = 0
        self._spawns_landed = trio.Event()
        self._closing = False
        self._watchdog: _Watchdog | None = None
        self._spawned = 0
        self._spawn_failures = 0
        self._killed = 0
        self._timeouts = 0
        self._overflows = 0
        self._escapees_killed = 0
        self._sweep_wanted = trio.Event()
        #: A stop's two scans (its leader's descendants, its run's marked processes), shared
        #: by every stop that runs at the same time (a burst of timeouts).
        self._snapshots: _Batched[int, list[tuple[int, float]]] = _Batched(_descendants_of)
        self._marked_kills: _Batched[int, int] = _Batched(self._kill_marked_runs)
        #: Each stopping run's snapshot, killed together with the others of its round.
        self._to_kill: dict[int, list[tuple[int, float]]] = {}
        self._snapshot_kills: _Batched[int, int] = _Batched(self._kill_snapshots)
        self._commands = CommandHash()
        self._workers = Workers(self.start_worker, self.run, fds=worker_fds)
        #: Where each worker's exit watch runs (the guard's own nursery, once open).
        self._nursery: trio.Nursery | None = None

    @property
    def backend(self) -> Backend:
        return "posix"

    @property
    def live(self) -> int:
        return len(self._live)

    @property
    def watchdog_pid(self) -> int | None:
        return self._watchdog.process.pid if self._watchdog is not None else None

    def stats(self) -> GuardStats:
        return GuardStats(
            spawned=self._spawned,
            spawn_failures=self._spawn_failures,
            killed=self._killed,
            timeouts=self._timeouts,
            overflows=self._overflows,
            escapees_killed=self._escapees_killed,
            live=self.live,
        )

    def retire_workers(self) -> None:
        """The config changed: warm workers restart from it (idle ones now, busy ones after
        their request)."""
        self._workers.retire_all()

    def _say(self, line: str) -> None:
        if self._watchdog is not None:
            self._watchdog.say(line.encode() + b"\n")

    def track_file(self, path: str, present: bool) -> None:
        """Register (``present``) a file the host-death watchdog removes if this process dies
        before it is released (``present=False``, after its removal). Never raises, never
        blocks; without a watchdog, a no-op."""
        self._say(("f" if present else "F") + os.fsencode(path).hex())

    # -- payload files ---------------------------------------------------------------------
    async def write_payload(self, path: str, data: bytes) -> None:
        """Create a payload file (0600, exclusively, not through a symlink) in a worker thread,
        registered with the watchdog first. Raises the OSError of the write."""
        self.track_file(path, True)  # before a byte of it exists
        try:
            await trio.to_thread.run_sync(write_private_file, path, data)
        except BaseException:
            self.track_file(path, False)
            raise

    async def remove_payload(self, path: str, *, wait: bool = False) -> None:
        """Remove a file :meth:`write_payload` made (shielded; a failure is logged)."""
        with trio.CancelScope(shield=True):
            try:
                await trio.to_thread.run_sync(remove_file, path)
            except OSError as exc:
                log.warning("cannot remove payload file %s: %s", path, exc.strerror or exc)
        self.track_file(path, False)

    # -- runs ------------------------------------------------------------------------------
    async def run(self, spec: ProcessSpec) -> ProcessResult:
        """Run one hook process to its end and return its one result. A checkpoint. On cancel
        the group gets SIGTERM, a short grace, then SIGKILL, marked escapees are killed and the
        child is reaped (shielded, bounded); then ``Cancelled`` is re-raised."""
        if spec.worker:
            return await self._workers.request(spec)
        started = time.perf_counter()
        await trio.lowlevel.checkpoint_if_cancelled()
        if self._closing:
            return ProcessResult(status="killed", error=CLOSED_ERROR)
        if not spec.argv:
            self._spawn_failures += 1
            return ProcessResult(status="spawn_failed", error="empty command")
        if spec.payload_file is not None:
            try:
                await self.write_payload(*spec.payload_file)
            except OSError as exc:
                self._spawn_failures += 1
                return ProcessResult(
                    status="spawn_failed",
                    error=spawn_error(spec, exc),
                    duration_ms=(time.perf_counter() - started) * 1000,
                )
        try:
            return await self._run(spec, started)
        finally:
            if spec.payload_file is not None:
                await self.remove_payload(spec.payload_file[0], wait=True)

    def _env(self, spec: ProcessSpec, no: int, extra: Mapping[str, str]) -> Environment:
        """The run's environment: the spec's, or the host's (:data:`HOST_ENVIRONMENT`, as the
        bytes Popen takes), plus ``extra`` and the run marker."""
        marker = run_marker(self.engine_id, no)
        if spec.env is not None:
            return {**spec.env, **extra, RUN_VAR: marker}
        env = dict(HOST_ENVIRONMENT.take()[0])
        for name, value in extra.items():
            env[os.fsencode(name)] = os.fsencode(value)
        env[RUN_VAR_BYTES] = marker.encode()
        return env

    async def start_worker(
        self, spec: ProcessSpec, extra_env: Mapping[str, str] | None = None
    ) -> WorkerProcess | ProcessResult:
        """Start a warm worker's process (``spec.stdin`` is not written; ``extra_env`` is added
        to its environment): its handle, a live run until its ``reap``, or why it could not
        start (a ProcessResult, as a one-shot run's)."""
        if self._closing or self._nursery is None:
            return ProcessResult(status="killed", error=CLOSED_ERROR)
        if not spec.argv:
            self._spawn_failures += 1
            return ProcessResult(status="spawn_failed", error="empty command")
        try:
            theirs, ours = _worker_pipes()
        except OSError as exc:
            self._spawn_failures += 1
            return ProcessResult(status="spawn_failed", error=spawn_error(spec, exc))
        try:
            launched = await self._start(spec, extra_env or {}, theirs[:3])
        finally:
            for fd in theirs[:3]:
                os.close(fd)
        if isinstance(launched, ProcessResult):
            for fd in (*ours, theirs[3]):
                os.close(fd)
            return launched
        no, process = launched
        self._nursery.start_soon(_watch_exit, process, theirs[3])
        in_w, out_r, err_r, exit_r = ours
        return PosixWorker(self, no, process, (in_w, out_r, err_r, exit_r))

    async def _start(
        self,
        spec: ProcessSpec,
        extra: Mapping[str, str],
        stdio: list[int],
    ) -> tuple[int, trio.Process] | ProcessResult:
        """Spawn ``spec``'s process, numbered, marked and live, on ``stdio``: the child's ends
        of its stdin, stdout and stderr (``subprocess.PIPE``: a pipe trio makes). ``argv[0]``
        is looked up in the guard's :class:`CommandHash`; a hashed file that fails to start is
        forgotten and the spawn retried with the child searching PATH."""
        self._last_no += 1
        no = self._last_no
        self._unfinished.add(no)
        self._spawning += 1
        try:
            env = self._env(spec, no, extra)
            program = spec.argv[0]
            executable = self._commands.lookup(program, env)
            try:
                process = await self._open(spec, env, stdio, executable)
            except OSError:
                if executable is None:
                    raise
                self._commands.forget(program)
                process = await self._open(spec, env, stdio, None)
        except BaseException as exc:
            self._unfinished.discard(no)
            if not isinstance(exc, OSError | ValueError):
                raise
            self._spawn_failures += 1
            return ProcessResult(status="spawn_failed", error=spawn_error(spec, exc))
        else:
            self._spawned += 1
            self._live[no] = process
            self._say(f"+{process.pid}")
            return no, process
        finally:
            self._spawning -= 1
            if not self._spawning and self._closing:
                self._spawns_landed.set()

    @staticmethod
    async def _open(
        spec: ProcessSpec, env: Environment, stdio: list[int], executable: str | None
    ) -> trio.Process:
        stdin, stdout, stderr = stdio
        return await trio.lowlevel.open_process(
            list(spec.argv),
            executable=executable,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            cwd=spec.cwd,
            env=cast("Mapping[str, str]", env),  # (Popen takes bytes too)
            start_new_session=True,
        )

    async def _run(self, spec: ProcessSpec, started: float) -> ProcessResult:
        # Its stdin pipe holds what of the payload fits before the spawn: the child reads it as
        # it starts, and only a payload bigger than the pipe needs feeding after.
        stdin_r, stdin_w = os.pipe()
        try:
            os.set_blocking(stdin_w, False)
            rest = write_some(stdin_w, memoryview(spec.stdin))
            launched = await self._start(spec, {}, [stdin_r, subprocess.PIPE, subprocess.PIPE])
        except BaseException:
            os.close(stdin_w)
            raise
        finally:
            os.close(stdin_r)
        if rest is None or isinstance(launched, ProcessResult):
            os.close(stdin_w)
            feeder = None
        else:
            feeder = trio.lowlevel.FdStream(stdin_w)
        if isinstance(launched, ProcessResult):
            return launched
        no, process = launched
        out, err = Capture(spec.output_cap), Capture(spec.output_cap)
        overflowed = False
        waiting = trio.CancelScope(deadline=trio.current_time() + spec.timeout_s)
        if self._closing:  # started as the guard closed (after kill_all gave up waiting)
            waiting.cancel()

        async def read(stream: trio.abc.ReceiveStream | None, capture: Capture) -> None:
            nonlocal overflowed
            if stream is None:
                return
            while data := await stream.receive_some(READ_CHUNK):
                capture.add(data)
                if capture.total > capture.cap and spec.overflow == "error":
                    overflowed = True
                    waiting.cancel()

        async def feed(stdin: trio.lowlevel.FdStream, data: memoryview) -> None:
            try:
                await stdin.send_all(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass  # the hook did not read it all: its business
            finally:
                await stdin.aclose()

        try:
            async with trio.open_nursery() as outputs:
                outputs.start_soon(read, process.stdout, out)
                outputs.start_soon(read, process.stderr, err)
                with waiting:
                    async with trio.open_nursery() as feeding:
                        if feeder is not None and rest is not None:
                            feeding.start_soon(feed, feeder, rest)
                        await process.wait()
                        feeding.cancel_scope.cancel()
                if process.returncode is None:  # timeout, overflow or close
                    with trio.CancelScope(shield=True):
                        await self._stop(no, process)
                else:
                    signal_group(process.pid, signal.SIGKILL)  # what is left of its group
                # A descendant may hold a pipe: it gets the grace, then we stop reading.
                outputs.cancel_scope.deadline = trio.current_time() + EOF_GRACE_S
        except BaseException:
            with trio.move_on_after(REAP_BUDGET_S, shield=True):
                await self._stop(no, process)
            raise
        finally:
            with trio.CancelScope(shield=True):
                for stream in (feeder, process.stdout, process.stderr):
                    if stream is not None:
                        await stream.aclose()
            self._forget(no, process)
        self._sweep(no)
        result = process_result(
            spec,
            returncode=process.returncode,
            out=out,
            err=err,
            duration_ms=(time.perf_counter() - started) * 1000,
            pid=process.pid,
            overflowed=overflowed,
            timed_out=waiting.cancelled_caught and not overflowed,
            closed=self._closing,
        )
        self._overflows += result.status == "overflow"
        self._timeouts += result.status == "timeout"
        return result

    async def _stop(self, no: int, process: trio.Process) -> None:
        """Snapshot the leader's descendants (it is unreaped), SIGTERM the group, grace,
        SIGKILL the group, reap; kill what of the snapshot is left and the run's marked
        escapees. A checkpoint; call it shielded."""
        self._killed += 1
        snapshot: list[tuple[int, float]] = []
        if process.returncode is None:
            snapshot = await self._snapshots(process.pid)
        if process.returncode is None:
            signal_group(process.pid, signal.SIGTERM)
            with trio.move_on_after(TERM_GRACE_S):
                await process.wait()
        if process.returncode is None:
            signal_group(process.pid, signal.SIGKILL)
            with trio.move_on_after(REAP_BUDGET_S):
                await process.wait()
        else:
            signal_group(process.pid, signal.SIGKILL)
        if snapshot:
            self._to_kill[no] = snapshot
            self._escapees_killed += await self._snapshot_kills(no)
        self._escapees_killed += await self._marked_kills(no)

    def _kill_snapshots(self, runs: frozenset[int]) -> dict[int, int]:
        """Kill what is left of the snapshots of ``runs`` (one kill pass and one wait for them
        all); the count is the first run's. Blocking: in a thread."""
        every = [entry for run in runs for entry in self._to_kill.pop(run, [])]
        killed = _kill_all_of(every)
        first = min(runs)
        return {run: killed if run == first else 0 for run in runs}

    def _kill_marked_runs(self, runs: frozenset[int]) -> dict[int, int]:
        """Kill every marked process of ``runs`` (one scan for them all); the count is the
        first run's (the total is what :meth:`stats` adds up). Blocking: in a thread."""
        killed = kill_marked(self.engine_id, lambda other: other not in runs)
        first = min(runs)
        return {run: killed if run == first else 0 for run in runs}

    def _forget(self, no: int, process: trio.Process) -> None:
        self._unfinished.discard(no)
        if self._live.pop(no, None) is not None:
            self._say(f"-{process.pid}")

    def _sweep(self, no: int) -> None:
        """A run ended: its marked processes that left the group are killed by the sweeper,
        at most every :data:`SWEEP_INTERVAL_S` (one scan of the process table serves every run
        that ended meanwhile)."""
        self._sweep_wanted.set()

    async def _sweeper(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Actor: kill marked processes of finished runs (escapees), at most every
        SWEEP_INTERVAL_S. Stateless between sweeps, so the supervisor can restart it."""
        task_status.started()
        while True:
            await self._sweep_wanted.wait()
            self._sweep_wanted = trio.Event()
            await trio.sleep(SWEEP_INTERVAL_S)
            # Runs started after this snapshot, or live in it, are spared: their processes are
            # legitimately alive. Any other marked process belongs to a finished run.
            spared = functools.partial(unfinished, self._last_no, frozenset(self._unfinished))
            try:
                self._escapees_killed += await trio.to_thread.run_sync(
                    kill_marked, self.engine_id, spared
                )
            except OSError:  # a sweep the OS refuses must not take the engine down
                log.exception("sweeping escaped hook processes failed")

    async def kill_all(self) -> int:
        """Engine close: stop new runs, SIGTERM every live group, grace, SIGKILL, then kill
        every process still carrying this engine's marker. Returns how many groups were live.
        Call it shielded."""
        self._closing = True
        await self._workers.close()  # idle workers: EOF, grace, group kill, reaped
        return await self._kill_groups(sweep_markers=True)

    async def _kill_groups(self, *, sweep_markers: bool) -> int:
        """:meth:`kill_all` of the runs this guard spawned (the close began): SIGTERM, grace,
        SIGKILL, their snapshotted descendants, and (``sweep_markers``) every process still
        carrying this engine's marker. Returns how many groups were live."""
        if self._spawning:  # their processes run already: wait until they are in _live
            with trio.move_on_after(REAP_BUDGET_S):
                await self._spawns_landed.wait()
        live = list(self._live.values())
        leaders = frozenset(process.pid for process in live if process.returncode is None)
        found = await trio.to_thread.run_sync(_descendants_of, leaders) if leaders else {}
        snapshots = list(found.values())  # (one read of the process table for them all)
        for process in live:
            signal_group(process.pid, signal.SIGTERM)
        self._killed += len(live)
        with trio.move_on_after(TERM_GRACE_S):
            for process in live:
                await process.wait()
        for process in live:
            if process.returncode is None:
                signal_group(process.pid, signal.SIGKILL)
        every = [entry for snapshot in snapshots for entry in snapshot]
        if every:
            self._escapees_killed += await trio.to_thread.run_sync(_kill_all_of, every)
        if sweep_markers:
            self._escapees_killed += await trio.to_thread.run_sync(kill_marked, self.engine_id)
        with trio.move_on_after(REAP_BUDGET_S):
            for process in live:
                await process.wait()
        return len(live)

    async def _start_watchdog(self, nursery: trio.Nursery, actors: Supervisor) -> None:
        """The host-death watchdog process, and the task that writes to it."""
        env = {k: v for k, v in os.environ.items() if k != RUN_VAR}
        process = await trio.lowlevel.open_process(
            [sys.executable, "-I", "-S", str(SCRIPT), self.engine_id, *_psutil_path()],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
        self._watchdog = _Watchdog(process)
        await nursery.start(self._watchdog.writer)

    async def _stop_watchdog(self) -> None:
        watchdog = self._watchdog
        if watchdog is None:
            return
        with trio.move_on_after(REAP_BUDGET_S, shield=True):
            if watchdog.process.stdin is not None:
                await watchdog.process.stdin.aclose()  # EOF: it cleans up what is left, exits
            await watchdog.process.wait()
        if watchdog.process.returncode is None:
            watchdog.process.kill()
            with trio.CancelScope(shield=True):
                await watchdog.process.wait()
        self._watchdog = None  # no watchdog once closed (as the linux backend has none)


async def _watch_exit(process: trio.Process, exit_w: int) -> None:
    """A worker's exit watch: once its process exited (or the guard closes), the write end of
    its exit pipe is closed, so the exit descriptor reads EOF."""
    try:
        await process.wait()
    finally:
        os.close(exit_w)


G = TypeVar("G", bound=PosixGuard)


@asynccontextmanager
async def guarding(guard: G, *, watchdog: bool) -> AsyncIterator[G]:
    """``guard`` with its actors -- its watchdog (unless ``watchdog=False``), the escapee
    sweeper, the worker janitor -- started before this yields. On exit, even on cancel:
    :meth:`PosixGuard.kill_all`, then the watchdog is stopped, shielded and bounded. An
    exception from the body comes out as itself, not wrapped in an ExceptionGroup by the
    actors' nursery."""
    body_error: BaseException | None = None
    unwrapped: BaseException | None = None
    try:
        async with trio.open_nursery() as nursery:
            actors = Supervisor(nursery)
            if watchdog:
                await guard._start_watchdog(nursery, actors)
            await actors.start("escapee sweeper", guard._sweeper)
            await actors.start("worker janitor", guard._workers.janitor)
            guard._nursery = nursery
            try:
                yield guard
            except BaseException as exc:
                body_error = exc
                raise
            finally:
                with trio.move_on_after(TERM_GRACE_S + 2 * REAP_BUDGET_S, shield=True):
                    await guard.kill_all()
                nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        if body_error is None or group.exceptions != (body_error,):
            raise
        unwrapped = body_error
    finally:
        await guard._stop_watchdog()
    if unwrapped is not None:
        raise unwrapped


@asynccontextmanager
async def open_posix_guard(*, watchdog: bool = True) -> AsyncIterator[PosixGuard]:
    """A posix guard with its host-death watchdog (unless ``watchdog=False``): see
    :func:`guarding`."""
    async with guarding(PosixGuard(), watchdog=watchdog) as guard:
        yield guard
