"""Warm workers: command hooks kept running between events, one request line in, one reply out.

Part of the process guard: each backend (:mod:`triohooks.actors.reaper`,
:mod:`triohooks.actors.posix_guard`) owns a :class:`Workers` and hands it every
:class:`~triohooks.handlers.process.ProcessSpec` with ``worker > 0``. A worker is a hook process
like any other -- started through the guard's public worker handle
(:class:`~triohooks.actors.guard.WorkerProcess`: its pipes and exit, ``stop``, ``reap``,
``signal``), in its own session and group, with the run marker, tracked by the guard until
reaped, killed with its whole tree on close and when the host dies -- that simply outlives one
event.

Per event the runner's request line (``spec.stdin``, one line of JSON) is written to the
worker's stdin and one line ``{"exit": N, "stdout": "...", "stderr": "..."}`` is read from its
stdout; that becomes the :class:`~triohooks.handlers.process.ProcessResult` a one-shot run with
that exit code and output would have given, so the dialects read it unchanged. Anything else --
a timeout, a reply that is not that object, a second line already there with it, a line over
the cap, the worker exiting while a request is pending, a cancel -- kills the worker's tree and
is that request's failure (status ``worker_error``, ``timeout`` or ``killed``); the next event
starts a fresh worker. Output the worker writes between requests is noticed before the next
request and retires that worker (the request then goes to a fresh one).

Pools: one per (hook, argv, cwd, environment), at most ``spec.worker`` workers, each serving
one request at a time; started as events overlap. The environment is the whole of the worker
process's (a ``serve`` runs each agent session's hooks with that session's environment), so two
sessions never share a worker. At most :data:`MAX_POOLS` pools are kept per engine: past that,
the least recently used pool with no request in flight is retired. A pool whose workers fail
``RESTART_BUDGET`` times in a row within ``RESTART_WINDOW_S`` (failed starts, crashes, bad
replies, timeouts; a good reply resets the count) is given up for ``GIVE_UP_S``: its requests
fail at once, saying why. :meth:`Workers.retire_all` (the engine calls it on every config swap)
retires idle workers now and busy ones after their request; the janitor actor stops retired
workers: EOF on stdin, ``RETIRE_GRACE_S`` to exit, then the guard's group kill.

The budget (one per trio run, so one per ``serve`` process: every engine and every project in
it share it): at most :data:`MAX_WORKERS` workers live at once, holding together at most
:data:`WORKER_FD_SHARE` of the file descriptor limit (soft ``RLIMIT_NOFILE``; a worker holds
:data:`LINUX_WORKER_FDS` on linux, :data:`POSIX_WORKER_FDS` on posix, so :func:`worker_budget`
workers), and a worker is started only while :data:`FD_RESERVE_SHARE` of the limit stays free
for connections and hook spawns (idle workers are retired first to make it so). When a new
worker does not fit, the least recently used idle worker (of any engine, any project) is
retired to make room; when none is idle, the request is served once instead -- a process of its
own gets the request line and EOF, its reply read by the same rule (:func:`serve_once`): slower,
never a failure for want of a worker, logged once per such episode. A worker idle for
:data:`IDLE_RETIRE_S` is retired by its janitor.

The worker's own stderr is drained on every wake and the last ``STDERR_KEEP`` bytes are kept
for the failure message. Between requests nothing reads it, so a worker that writes more than a
pipe's worth (64 KiB) of stderr while idle blocks until its next request.
"""

from __future__ import annotations

import logging
import math
import os
import resource
import selectors
import signal
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Final

import msgspec
import trio

from triohooks.handlers.process import ProcessResult, ProcessSpec

from .guard import CLOSED_ERROR, READ_CHUNK, REAP_BUDGET_S, TERM_GRACE_S, WorkerProcess

log = logging.getLogger("triohooks.workers")

#: Set to "1" in every worker's environment.
WORKER_VAR: Final = "TRIOHOOKS_WORKER"
#: A reply line longer than this (or ``4 * output_cap`` if larger) is a bad reply.
MAX_REPLY_LINE: Final = 1024 * 1024
#: Of the worker's own stderr, the last this many bytes are kept for messages.
STDERR_KEEP: Final = 8192
#: Failures in a row (within the window) after which a pool is given up for a while.
RESTART_BUDGET: Final = 5
RESTART_WINDOW_S: Final = 60.0
GIVE_UP_S: Final = 30.0
#: How long a retired worker gets to exit after EOF on its stdin before its group is killed.
RETIRE_GRACE_S: Final = 0.2
#: Retired workers waiting for the janitor.
JANITOR_QUEUE: Final = 4096
#: Pools kept per engine; past this the least recently used idle one is retired.
MAX_POOLS: Final = 64
#: Warm workers alive at once in one trio run (a ``serve`` process: all its engines and projects).
MAX_WORKERS: Final = 32
#: A worker idle (no request) this long is retired (seconds).
IDLE_RETIRE_S: Final = 300.0
#: The share of the file descriptor limit (soft ``RLIMIT_NOFILE``) warm workers may hold together.
WORKER_FD_SHARE: Final = 0.125
#: The share of the limit that must stay free when a worker starts: connections' and hooks'.
FD_RESERVE_SHARE: Final = 0.25
#: Descriptors one worker holds in this process on linux: its stdin, stdout and stderr pipe
#: ends, its exit descriptor and its selector (the backends pass theirs to :class:`Workers`).
LINUX_WORKER_FDS: Final = 5
#: On posix: those, the write end of its exit pipe and, on Linux, trio's pidfd of the process.
POSIX_WORKER_FDS: Final = 7


class Reply(msgspec.Struct):
    exit: int
    stdout: str = ""
    stderr: str = ""


_decode_reply: Final = msgspec.json.Decoder(Reply).decode

PoolKey = tuple[str, tuple[str, ...], str, tuple[tuple[str, str], ...] | None]
#: Starts a worker process (the guard's ``start_worker``): its handle, or why it did not start.
StartWorker = Callable[[ProcessSpec, Mapping[str, str]], Awaitable[WorkerProcess | ProcessResult]]
#: Runs one process to its end (the guard's ``run``): a request served once goes through it.
RunOnce = Callable[[ProcessSpec], Awaitable[ProcessResult]]


class _Broken(Exception):
    """The worker broke the protocol or died: kill it; the text says how."""


class _Worker:
    """One live worker process: its handle, a private selector (epoll, kqueue) over its exit
    descriptor and outputs, and the bytes read from stdout that no reply has consumed yet."""

    def __init__(self, proc: WorkerProcess, generation: int) -> None:
        self.proc = proc
        self.pid = proc.pid
        self.stdout = proc.stdout
        self.stderr_fd = proc.stderr
        self.exit_fd = proc.exit_fd
        self.generation = generation
        self.served = 0
        self.buffer = bytearray()
        self.stderr = bytearray()
        self.exited = False
        #: When it last became idle (trio's clock).
        self.idle_since = 0.0
        self.selector = selectors.DefaultSelector()
        self.closed = False
        for fd in (self.exit_fd, self.stdout, self.stderr_fd):
            self.selector.register(fd, selectors.EVENT_READ)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        trio.lowlevel.notify_closing(self.selector.fileno())
        self.selector.close()

    def stderr_tail(self) -> str:
        text = bytes(self.stderr).decode("utf-8", errors="replace").strip()
        return f"; its stderr: {text[-600:]}" if text else ""

    def drain(self) -> None:
        """Take whatever the worker has written and notice its exit; never blocks."""
        for key, _ in self.selector.select(0):
            fd = key.fd
            if fd == self.exit_fd:
                self.exited = True
                self.selector.unregister(fd)
            elif fd == self.stdout:
                self.read(fd, self.buffer, None)
            elif fd == self.stderr_fd:
                self.read(fd, self.stderr, STDERR_KEEP)

    def read(self, fd: int, into: bytearray, keep: int | None) -> None:
        for _ in range(16):
            try:
                chunk = os.read(fd, READ_CHUNK)
            except BlockingIOError:
                return
            if not chunk:  # the worker (and everything it started) let go of the pipe
                self.selector.unregister(fd)
                return
            into += chunk
            if keep is not None and len(into) > keep:
                del into[:-keep]

    async def write(self, data: bytes) -> None:
        """Write the whole request, waiting for the pipe as needed."""
        fd = self.proc.stdin
        if fd is None:
            raise _Broken("its stdin is closed")
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(fd, view) :]
                continue
            except BlockingIOError:
                pass
            except OSError as exc:  # EPIPE: it closed stdin or died
                raise _Broken(f"it stopped reading its stdin ({exc.strerror})") from None
            self.selector.register(fd, selectors.EVENT_WRITE)
            try:
                await self.wake()
            finally:
                self.selector.unregister(fd)
            if self.exited:
                raise _Broken("it exited before reading the request")

    async def read_line(self, limit: int) -> bytes:
        """The next line of stdout (without its newline), waiting on the selector for it."""
        while True:
            end = self.buffer.find(b"\n")
            if end >= 0:
                line = bytes(self.buffer[:end])
                del self.buffer[: end + 1]
                return line
            if len(self.buffer) > limit:
                raise _Broken(f"its reply is longer than {limit} bytes without a newline")
            if self.exited:
                raise _Broken("it exited before answering")
            await self.wake()

    async def wake(self) -> None:
        await trio.lowlevel.wait_readable(self.selector.fileno())
        self.drain()


class _Pool:
    """The workers of one hook (and process description)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.idle: list[_Worker] = []
        #: Live workers, busy and idle (and starting).
        self.count = 0
        self.freed = trio.Event()
        #: Monotonic times of failures since the last good reply.
        self.failures: list[float] = []
        self.given_up_until = 0.0
        self.last_failure = ""

    def notify(self) -> None:
        self.freed.set()
        self.freed = trio.Event()

    def failed(self, why: str, now: float) -> None:
        self.failures = [t for t in self.failures if now - t < RESTART_WINDOW_S]
        self.failures.append(now)
        self.last_failure = why
        if len(self.failures) >= RESTART_BUDGET:
            self.given_up_until = now + GIVE_UP_S
            self.failures.clear()


def fd_limit() -> int | None:
    """The soft ``RLIMIT_NOFILE`` now (``serve`` raises it as it starts); None: unlimited."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def open_fds() -> int | None:
    """File descriptors this process has open now; None when the OS does not say."""
    for where in ("/proc/self/fd", "/dev/fd"):
        try:
            return len(os.listdir(where)) - 1  # (the listing's own)
        except OSError:
            continue
    return None


def worker_budget(limit: int | None, fds: int) -> int:
    """Warm workers of ``fds`` descriptors each one trio run keeps at most, under file
    descriptor limit ``limit`` (None: unlimited)."""
    if limit is None:
        return MAX_WORKERS
    return max(0, min(MAX_WORKERS, int(limit * WORKER_FD_SHARE) // fds))


class Budget:
    """The warm workers of one trio run, over every :class:`Workers` (engine) in it: how many
    live, and the idle ones least recently used first (see the module docstring)."""

    def __init__(self) -> None:
        #: Workers started (or starting) and not yet retired or killed.
        self.live = 0
        #: Descriptors of retired workers the janitors have not closed yet.
        self.closing = 0
        self.idle: OrderedDict[_Worker, tuple[Workers, _Pool]] = OrderedDict()
        #: Requests served once for want of room, and whether that is logged for this episode.
        self.served_once = 0
        self._said = False

    def full(self, fds: int) -> str | None:
        """Why one more worker (of ``fds`` descriptors) does not fit now, or None."""
        limit = fd_limit()
        cap = worker_budget(limit, fds)
        if self.live >= cap:
            return f"{self.live} warm workers are alive, the budget is {cap}"
        if limit is None:
            return None
        used = open_fds()
        if used is None:
            return "this process's open file descriptors cannot be counted"
        used -= self.closing  # closed soon
        keep = math.ceil(limit * FD_RESERVE_SHARE)
        if limit - used - fds < keep:
            return (
                f"{used} of {limit} file descriptors are open, and {keep} are kept for "
                "connections and hook spawns"
            )
        return None

    def make_room(self, fds: int) -> str | None:
        """Retire idle workers, least recently used first, until one more (of ``fds``
        descriptors) fits; None when it does, else why not (nothing idle is left to retire)."""
        while (why := self.full(fds)) is not None:
            if not self.idle:
                if not self._said:
                    self._said = True
                    log.warning(
                        "warm worker budget full (%s): requests are served by a process of "
                        "their own until a worker is free",
                        why,
                    )
                return why
            worker, (owner, pool) = self.idle.popitem(last=False)
            pool.idle.remove(worker)
            owner.retire(pool, worker)
        self._said = False
        return None


_BUDGET: Final = trio.lowlevel.RunVar[Budget]("triohooks_worker_budget")


def budget() -> Budget:
    """The budget of this trio run (made on first use)."""
    try:
        return _BUDGET.get()
    except LookupError:
        made = Budget()
        _BUDGET.set(made)
        return made


class Workers:
    """The warm workers of one process guard (so of one engine), within its trio run's
    :class:`Budget`. ``start``: the guard's worker start; ``run_once``: its one-shot run;
    ``fds``: descriptors one worker holds in this process."""

    def __init__(self, start: StartWorker, run_once: RunOnce, *, fds: int) -> None:
        self._start_worker = start
        self._run_once = run_once
        #: Descriptors one worker holds in this process (the backend's figure).
        self._fds = fds
        self._budget: Budget | None = None
        self._pools: dict[PoolKey, _Pool] = {}
        self._generation = 0
        self._closing = False
        self._retire_send, self._retire_recv = trio.open_memory_channel[_Worker](JANITOR_QUEUE)
        #: Set when a worker becomes idle while the janitor has none to watch.
        self._idle_wanted = trio.Event()
        self._watching = False
        #: Workers started, and how many were killed for a failure (not retired).
        self.started = 0
        self.failures = 0

    @property
    def budget(self) -> Budget:
        if self._budget is None:
            self._budget = budget()
        return self._budget

    # -- requests -----------------------------------------------------------------------------
    async def request(self, spec: ProcessSpec) -> ProcessResult:
        """One event for the worker pool of ``spec``: its result as a one-shot run's."""
        started = time.perf_counter()
        key: PoolKey = (
            spec.worker_key,
            spec.argv,
            spec.cwd,
            None if spec.env is None else tuple(sorted(spec.env.items())),
        )
        pool = self._pools.pop(key, None)  # taken out and put back: the most recently used
        if pool is None:
            self._evict(MAX_POOLS - 1)
            pool = _Pool(spec.worker)
        self._pools[key] = pool
        now = time.monotonic()
        if pool.given_up_until > now:
            await trio.lowlevel.checkpoint()
            return ProcessResult(
                status="worker_error",
                error=(
                    f"worker failed {RESTART_BUDGET} times in a row (last: {pool.last_failure}); "
                    f"not restarted for {pool.given_up_until - now:.0f} s"
                ),
            )
        worker: _Worker | ProcessResult | None = self._idle(pool)
        if worker is None:  # none idle: start one, or wait for one, within the timeout
            with trio.move_on_after(spec.timeout_s) as waiting:
                worker = await self._acquire(pool, spec)
        if worker is None:
            if not waiting.cancelled_caught:  # no room in the budget: served once instead
                self.budget.served_once += 1
                return await serve_once(self._run_once, spec, started)
            return ProcessResult(  # every worker stayed busy until the timeout
                status="timeout",
                error=f"timed out after {spec.timeout_s:g} s waiting for a free worker",
                duration_ms=(time.perf_counter() - started) * 1000,
            )
        if isinstance(worker, ProcessResult):  # it could not be started
            pool.failed(worker.error or "it could not be started", time.monotonic())
            return worker
        remaining = spec.timeout_s - (time.perf_counter() - started)
        return await self._ask(pool, worker, spec, started, remaining)

    def _idle(self, pool: _Pool) -> _Worker | None:
        """An idle worker that is still in sync, if there is one (the others are retired)."""
        while pool.idle:
            worker = pool.idle.pop()
            del self.budget.idle[worker]
            worker.drain()
            if worker.exited or worker.buffer:
                # It exited while idle, or printed outside a reply: out of sync.
                why = "exited while idle" if worker.exited else "wrote to stdout while idle"
                log.warning("hook worker %d %s; starting a fresh one", worker.pid, why)
                self.retire(pool, worker)
                continue
            return worker
        return None

    async def _acquire(self, pool: _Pool, spec: ProcessSpec) -> _Worker | ProcessResult | None:
        """An idle worker, a fresh one, or its start's failure; None when the budget has no
        room for one (the request is then served once)."""
        while True:
            worker = self._idle(pool)
            if worker is not None:
                return worker
            if pool.count < pool.size:
                if self.budget.make_room(self._fds) is not None:
                    await trio.lowlevel.checkpoint()
                    return None
                pool.count += 1
                self.budget.live += 1
                try:
                    started = await self._start(spec)
                except BaseException:  # cancelled while it started (the guard stops it)
                    self._gone(pool)
                    raise
                if isinstance(started, ProcessResult):
                    self._gone(pool)
                return started
            await pool.freed.wait()

    async def _start(self, spec: ProcessSpec) -> _Worker | ProcessResult:
        launched = await self._start_worker(spec, {WORKER_VAR: "1"})
        if isinstance(launched, ProcessResult):
            return launched
        self.started += 1
        return _Worker(launched, self._generation)

    def _gone(self, pool: _Pool) -> None:
        """One of the pool's workers no longer counts (killed, retired, or never started)."""
        pool.count -= 1
        self.budget.live -= 1
        pool.notify()

    async def _ask(
        self, pool: _Pool, worker: _Worker, spec: ProcessSpec, started: float, budget: float
    ) -> ProcessResult:
        limit = max(MAX_REPLY_LINE, 4 * spec.output_cap)
        broken: str | None = None
        line = b""
        try:
            with trio.move_on_after(max(budget, 0.0)) as waiting:
                try:
                    await worker.write(spec.stdin.rstrip(b"\n") + b"\n")
                    line = await worker.read_line(limit)
                    worker.drain()  # what else is in the pipe already
                    if worker.buffer:
                        raise _Broken("it wrote more than one line")
                except _Broken as exc:
                    broken = str(exc)
        except BaseException:
            # Cancelled mid-request (or a bug): nobody knows what state it is in.
            with trio.CancelScope(shield=True):
                await self._kill(pool, worker)
            raise
        if waiting.cancelled_caught:
            broken = f"timed out after {spec.timeout_s:g} s"
        read = read_reply(line) if broken is None else broken
        if isinstance(read, str):
            return await self._failed(pool, worker, spec, started, read)
        worker.served += 1
        pool.failures.clear()
        self._release(pool, worker)
        return reply_result(spec, read, started, worker.pid)

    async def _failed(
        self, pool: _Pool, worker: _Worker, spec: ProcessSpec, started: float, why: str
    ) -> ProcessResult:
        """Kill the worker's tree (in this task: the next event must find it gone) and say
        what happened as this request's result."""
        closed = worker.proc.closed
        timeout = why.startswith("timed out")
        await self._kill(pool, worker)
        code = worker.proc.returncode
        if code is not None and not timeout and "exit" in why:
            why += f" (exit status {code})"
        error = f"worker {worker.pid}: {why}{worker.stderr_tail()}"
        self.failures += 1
        pool.failed(why, time.monotonic())
        ms = (time.perf_counter() - started) * 1000
        if closed:
            return ProcessResult(status="killed", error=CLOSED_ERROR, duration_ms=ms)
        if timeout:
            error = f"timed out after {spec.timeout_s:g} s"
            return ProcessResult(status="timeout", error=error, duration_ms=ms, pid=worker.pid)
        return ProcessResult(status="worker_error", error=error, duration_ms=ms, pid=worker.pid)

    async def _kill(self, pool: _Pool, worker: _Worker) -> None:
        try:
            with trio.move_on_after(reaper_budget(), shield=True):
                if not worker.exited:
                    await worker.proc.stop()
                await worker.proc.reap()
        finally:
            worker.close()
            self._gone(pool)

    def _release(self, pool: _Pool, worker: _Worker) -> None:
        if self._closing or worker.generation != self._generation or pool.count > pool.size:
            self.retire(pool, worker)
            return
        worker.idle_since = trio.current_time()
        pool.idle.append(worker)
        self.budget.idle[worker] = (self, pool)
        if not self._watching:
            self._idle_wanted.set()
        pool.notify()

    # -- retiring -----------------------------------------------------------------------------
    def retire(self, pool: _Pool, worker: _Worker) -> None:
        """Hand ``worker`` (no longer idle) to the janitor: it no longer counts in its pool."""
        self._gone(pool)
        self.budget.closing += self._fds
        try:
            self._retire_send.send_nowait(worker)
        except (trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError):
            # No janitor to take it: kill the group now; the guard's close reaps it.
            self.budget.closing -= self._fds
            worker.proc.signal(signal.SIGKILL)

    def _retire_idle(self, pool: _Pool) -> None:
        idle, pool.idle = pool.idle, []
        for worker in idle:
            del self.budget.idle[worker]
            self.retire(pool, worker)

    def _evict(self, keep: int) -> None:
        """Retire the least recently used pools with no request in flight until at most
        ``keep`` are left (busy pools stay: their workers are answering)."""
        for key, pool in list(self._pools.items()):
            if len(self._pools) <= keep:
                return
            if pool.count > len(pool.idle):
                continue
            self._retire_idle(pool)
            del self._pools[key]

    def retire_all(self) -> None:
        """The config changed: idle workers are retired now, busy ones after their request,
        so every later event starts from the new config."""
        self._generation += 1
        for key, pool in list(self._pools.items()):
            self._retire_idle(pool)
            if pool.count == 0:
                del self._pools[key]

    async def janitor(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Actor: stop retired workers, each in its own task (EOF, grace, group kill, reap),
        and retire workers idle for :data:`IDLE_RETIRE_S`."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._retire_idle_ones)
            task_status.started()
            async for worker in self._retire_recv:
                nursery.start_soon(self._stop_retired, worker)

    async def _retire_idle_ones(self) -> None:
        """Sleep until the oldest idle worker is due. A busy one cannot be due before
        :data:`IDLE_RETIRE_S` from now, so while any worker lives this sleeps with a deadline,
        and only the first worker's idling wakes it (never every request)."""
        while True:
            now = trio.current_time()
            due = math.inf
            for pool in list(self._pools.values()):
                if pool.count > len(pool.idle):  # busy (or starting) ones
                    due = min(due, now + IDLE_RETIRE_S)
                for worker in list(pool.idle):
                    if now - worker.idle_since >= IDLE_RETIRE_S:
                        pool.idle.remove(worker)
                        del self.budget.idle[worker]
                        log.info("hook worker %d idle for %g s: retired", worker.pid, IDLE_RETIRE_S)
                        self.retire(pool, worker)
                    else:
                        due = min(due, worker.idle_since + IDLE_RETIRE_S)
            self._watching = due != math.inf
            self._idle_wanted = trio.Event()
            with trio.move_on_at(due):
                await self._idle_wanted.wait()

    async def _stop_retired(self, worker: _Worker) -> None:
        proc = worker.proc
        try:
            with trio.CancelScope(shield=True):
                proc.close_stdin()
                with trio.move_on_after(RETIRE_GRACE_S):
                    while not worker.exited:
                        await worker.wake()
                with trio.move_on_after(reaper_budget()):
                    if not worker.exited:
                        await proc.stop()
                    await proc.reap()
        finally:
            worker.close()
            self.budget.closing -= self._fds

    async def close(self) -> None:
        """Engine close: stop every idle worker now (busy ones are stopped by the guard's
        group kill and their own request). Bounded."""
        self._closing = True
        async with trio.open_nursery() as nursery:
            for pool in self._pools.values():
                idle, pool.idle = pool.idle, []
                for worker in idle:
                    del self.budget.idle[worker]
                    self._gone(pool)
                    self.budget.closing += self._fds
                    nursery.start_soon(self._stop_retired, worker)


def reaper_budget() -> float:
    return TERM_GRACE_S + REAP_BUDGET_S


async def serve_once(run: RunOnce, spec: ProcessSpec, started: float) -> ProcessResult:
    """A worker's one request served by a process of its own: the request line and EOF in, its
    reply line out, read by the workers' rule (:func:`read_reply`); ``run`` runs the process
    to its end (the guard's one-shot run). For a request the budget has no room for."""
    env = dict(os.environ if spec.env is None else spec.env)
    env[WORKER_VAR] = "1"
    line_spec = ProcessSpec(
        argv=spec.argv,
        cwd=spec.cwd,
        env=env,
        stdin=spec.stdin.rstrip(b"\n") + b"\n",
        timeout_s=spec.timeout_s,
        output_cap=max(MAX_REPLY_LINE, 4 * spec.output_cap),
        overflow="error",
        label=spec.label,
    )
    ran = await run(line_spec)
    if ran.status != "exited":
        return ProcessResult(
            status="timeout" if ran.status == "timeout" else "worker_error",
            error=ran.error or f"the worker ended: {ran.status}",
            duration_ms=ran.duration_ms,
            pid=ran.pid,
        )
    line, _, rest = ran.stdout.encode("utf-8", "surrogateescape").partition(b"\n")
    reply = read_reply(line)
    if isinstance(reply, str):
        return ProcessResult(
            status="worker_error", error=reply, duration_ms=ran.duration_ms, pid=ran.pid
        )
    if rest.strip():
        return ProcessResult(
            status="worker_error",
            error="it wrote more than one line",
            duration_ms=ran.duration_ms,
            pid=ran.pid,
        )
    return reply_result(spec, reply, started, ran.pid or 0)


def read_reply(line: bytes) -> Reply | str:
    """A worker's reply line read, or why it is not one (the worker broke the protocol)."""
    try:
        reply = _decode_reply(line)
    except msgspec.DecodeError as exc:
        return f'its reply is not {{"exit": N, "stdout": "...", "stderr": "..."}}: {exc}'
    if not 0 <= reply.exit <= 255:
        return f"its reply's exit is not 0..255: {reply.exit}"
    return reply


def reply_result(spec: ProcessSpec, reply: Reply, started: float, pid: int) -> ProcessResult:
    """The reply as the one-shot run it stands for: caps and overflow as the spec says."""
    out = reply.stdout.encode("utf-8", errors="surrogatepass")
    err = reply.stderr.encode("utf-8", errors="surrogatepass")
    cap = spec.output_cap
    result = ProcessResult(
        status="exited",
        exit_code=reply.exit,
        duration_ms=(time.perf_counter() - started) * 1000,
        stdout=_capped(out, cap),
        stderr=_capped(err, cap),
        stdout_bytes=len(out),
        stderr_bytes=len(err),
        truncated=len(out) > cap or len(err) > cap,
        pid=pid,
    )
    if spec.overflow == "error" and result.truncated:
        # As a one-shot run that overflowed: killed there, so no exit code.
        error = f"hook output exceeded {cap} bytes"
        return msgspec.structs.replace(result, status="overflow", error=error, exit_code=None)
    return result


def _capped(data: bytes, cap: int) -> str:
    return data[:cap].decode("utf-8", errors="replace")
