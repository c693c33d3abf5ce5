"""The watchdog helper: parent and child subreaper of every hook process, and the host-death
watchdog (docs/design.md §4); plus the run-marker scan it shares with the reaper.

One small helper process per engine, started by :mod:`triohooks.actors._subreaper` as
``python -I -S _watchdog.py <engine-id> <psutil's directory>`` with one end of a Unix stream
socket as its stdin. It marks itself a *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``)
and starts every hook process on the engine's behalf: the engine sends the argv, working
directory, the start of stdin and (when it changed) the environment; the helper
``posix_spawn``s the child in a new session with three pipes it made beforehand, and answers
with its pid, the read end of the hook's *status pipe* and the engine's pipe ends (SCM_RIGHTS).
So every hook
is the helper's child and every descendant a hook orphans (``setsid``, double forks, ``nohup``,
``env -i``) is re-parented to the helper instead of init: the helper's process tree *is* the
set of hook processes, found without markers or process groups.

The helper watches each hook child's pidfd. As one exits it SIGKILLs the child's group while
the zombie still holds the group id, reaps it, writes the wait status (decimal) into that run's
status pipe and closes it: the engine sees the exit once, on that pipe, in the run's own poll
(EOF with no status: the helper could not tell, or died). The engine
signals a live group only through the helper, which does so only while it has not reaped the
child (so never a recycled group). It never waits for "any child" while the engine runs.
It kills -- stopping every victim with SIGSTOP first and rescanning until no new descendant
shows up, then SIGKILL, so a fork race leaves nothing behind:

- ``x<pid>`` (the engine stopped that hook: timeout, overflow, cancel): its group at once, its
  every descendant and every orphan of a finished run in the sweep made as soon as every frame
  read so far is handled (so a burst of timeouts costs one scan of the process table, not one
  each);
- after a hook child exited: orphans of finished runs, at most every ``SWEEP_INTERVAL_S`` (no
  /proc scan at all while it has no child);
- ``K`` (engine close), and EOF -- a clean close, or the host died, even by SIGKILL, and the
  kernel closed its end: first it removes the payload files the engine registered and did not
  release, then every live hook group gets SIGTERM, a short grace, SIGKILL, then every
  descendant is killed; it waits (bounded) until its children are dead, and exits 0.

Which run an orphan (a non-hook child of the helper) belongs to: the run in its
``TRIOHOOKS_RUN`` marker; else the hook (live, or one of the last ``FINISHED_KEPT`` reaped)
whose session or group it is in; else "any run that was live when it was born" -- an orphan
born before every live run started is none of theirs. So an unmarked orphan outside any hook's
session is spared while a run that was live at its birth still runs, and dies at the first
sweep after those runs end.

What still escapes: processes that are not descendants (a hook asking a running daemon --
systemd, cron/at, a container engine, sshd, a tmux server -- to start something); processes we
may not signal (setuid, another user); one a hook stops from dying (uninterruptible sleep);
everything, if the helper itself is killed (a hook can ``kill -9 $PPID``: it is the helper's,
same user) or cannot become a subreaper -- the engine then falls back to marker sweeps; and,
on host death, nothing dies until every process holding the engine's socket end is gone (a
child forked from the host without exec keeps it open).

Owns: the helper loop, the spawn, the subtree kill, the payload-file list and the marker scan.
Must not: import anything but the standard library and psutil (it starts in a bare interpreter;
psutil loads in the background, off the spawn path), wait for a child it does not mean, or
outlive its EOF. Linux only (pidfds, /proc, prctl).

glibc's ``posix_spawn`` leaves its two internal signals (32, 33) ignored in the child and will
not reset them; glibc and musl programs install their own handlers when they use them.
Everything else starts as under subprocess: SIGPIPE, SIGXFSZ (ignored by Python) and SIGINT,
SIGHUP (ignored by us) back to default unless the host ignored them.
"""

from __future__ import annotations

import array
import errno
import marshal
import os
import select
import signal
import socket
import struct
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any

#: The environment variable every hook process carries: ``<engine-id>:<run-no>``.
RUN_VAR = "TRIOHOOKS_RUN"
RUN_VAR_BYTES = RUN_VAR.encode()
#: How long a group gets between SIGTERM and SIGKILL when the host is gone.
TERM_GRACE_S = 0.1
#: Orphan sweeps after hooks exit run at most this often.
SWEEP_INTERVAL_S = 0.25
#: Stop-and-rescan rounds per kill (each round stops what the last one missed).
SCAN_PASSES = 8
#: At exit, how long SIGKILLed children get to die before the helper leaves them to init.
EXIT_WAIT_S = 1.0
#: How many reaped hook pids are remembered to attribute orphans by session or group.
FINISHED_KEPT = 4096
#: Legacy marker scans: escapees can fork while we scan; a few passes catch the stragglers.
MARKER_PASSES = 3

# -- the protocol: frames both ways, a 4-byte little-endian length, then an op byte and a body ---
FRAME = struct.Struct("<I")
#: Descriptors one recvmsg can carry (a pid reply carries 6).
MAX_FDS = 8
_CMSG_SPACE = socket.CMSG_SPACE(MAX_FDS * 4)
# Plain ints: the socket module's flags are IntFlags, and their ``|`` and ``&`` run in Python.
# (Linux; the module is also imported where it lacks, for the marker scan: 0 is never used.)
_CMSG_CLOEXEC = int(getattr(socket, "MSG_CMSG_CLOEXEC", 0))
_CTRUNC = int(socket.MSG_CTRUNC)
READ_CHUNK = 65536
#: The most stdin a spawn request carries (a pipe holds 64 KiB unless the system is short).
STDIN_INLINE = 16384
# engine -> helper
#: marshal (run, argv, executable, cwd, env, marker, stdin, payload_file) -> PID | ERROR.
#: ``marker`` None: ``env`` is the whole environment; else ``env`` is the host's environment to
#: keep for later spawns (None: the one kept) and ``marker`` its TRIOHOOKS_RUN value. ``stdin``:
#: what to write into the hook's stdin before it starts (the start of it; the engine writes the
#: rest). ``payload_file``: None or ``(path, contents)``, created before the spawn and removed
#: as the hook's child exits (before its status is written).
SPAWN = b"s"
SIGNAL = b"g"  # b"<pid>:<signal>": signal that hook's group, if its child is not yet reaped
STOPPED = b"x"  # b"<pid>": the engine stopped that hook: SIGKILL its group, kill its descendants
CLOSE = b"K"  # engine close: kill every descendant now
GUARD = b"f"  # a payload file's path: remove it if the engine dies first
RELEASE = b"F"  # that path was removed by the engine
#: marshal (path, contents) -> WROTE | ERROR: create that payload file (0600, exclusively, no
#: symlink), to be removed by REMOVE, or when the engine dies first.
WRITE = b"w"
REMOVE = b"r"  # a payload file's path: remove it (no reply)
# helper -> engine
READY = b"R"
#: b"<pid>:<stdin bytes written>" with the read end of the run's status pipe (the wait status
#: is written into it, decimal, as the child is reaped; EOF without it: unknown) and the pipe
#: ends the engine keeps: stdin's write end, stdout's and stderr's read ends (non-blocking),
#: stdout's and stderr's write ends (held until the child exits, so that its exit is one
#: wakeup, not three).
PID = b"P"
ERROR = b"E"  # marshal (errno, strerror, filename, message); message UNSUPPORTED: cannot spawn
WROTE = b"o"  # the payload file of a WRITE is in place
KILLS = b"k"  # b"<n>": escapees killed so far (cumulative, sent when it grows, may be dropped)
UNSUPPORTED = "unsupported"


def frame(op: bytes, body: bytes = b"") -> bytes:
    return FRAME.pack(len(op) + len(body)) + op + body


class FrameReader:
    """Frames from a Unix stream socket, and the descriptors that came with them (in order)."""

    def __init__(self, sock: socket.socket, fds: bool = True) -> None:
        self.sock = sock
        #: Received and not yet taken: ``buffer[start:]``.
        self.buffer: bytes | bytearray = b""
        self.start = 0
        #: Descriptors are expected (else any sent are dropped by the kernel, closed).
        self.with_fds = fds
        self.fds: deque[int] = deque()
        #: Some descriptors sent did not arrive (ours ran out): the kernel closed them.
        self.fds_lost = False

    def fill(self, flags: int = 0) -> bool:
        """One recvmsg (BlockingIOError when it would block, with ``MSG_DONTWAIT``, or when the
        socket's receive timeout expired); False at EOF."""
        if not self.with_fds:
            data = self.sock.recv(READ_CHUNK, flags)
            if not data:
                return False
            self._add(data)
            return True
        data, ancillary, flags, _ = self.sock.recvmsg(
            READ_CHUNK, _CMSG_SPACE, _CMSG_CLOEXEC | flags
        )
        if ancillary:
            for level, kind, payload in ancillary:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds = array.array("i")
                    fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
                    self.fds.extend(fds)
        elif not data:
            return False
        if flags & _CTRUNC:  # the frame is whole; whoever takes the fds must check
            self.fds_lost = True
        self._add(data)
        return True

    def _add(self, data: bytes) -> None:
        """Usually nothing is left over: the data is the buffer, uncopied. Else a bytearray
        that grows in place, so a frame of many chunks is copied once, not once per chunk."""
        buffer, start = self.buffer, self.start
        if start >= len(buffer):
            self.buffer = data
        elif start == 0 and type(buffer) is bytearray:
            buffer += data
        else:
            grown = bytearray(memoryview(buffer)[start:])
            grown += data
            self.buffer = grown
        self.start = 0

    def next(self) -> tuple[bytes, bytes] | None:
        """The next whole frame as ``(op, body)``, or None until more arrives."""
        buffer, start = self.buffer, self.start
        if len(buffer) - start < FRAME.size:
            return None
        (size,) = FRAME.unpack_from(buffer, start)
        end = start + FRAME.size + size
        if len(buffer) < end:
            return None
        self.start = end
        op, body = (
            buffer[start + FRAME.size : start + FRAME.size + 1],
            buffer[start + FRAME.size + 1 : end],
        )
        if isinstance(op, bytes) and isinstance(body, bytes):
            return op, body
        return bytes(op), bytes(body)  # frames are bytes whatever the buffer is

    def close_fds(self) -> None:
        while self.fds:
            os.close(self.fds.popleft())


def send_frame(sock: socket.socket, data: bytes, fds: Sequence[int] = ()) -> None:
    """Send one frame on a blocking socket, the descriptors attached to its first byte."""
    sent = 0
    if fds:
        rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())]
        sent = sock.sendmsg([data], rights)
    if sent < len(data):
        sock.sendall(data[sent:])


# -- the marker scan (the engine's fallback when it has no helper, and the tests) ----------------


def run_marker(engine_id: str, run_no: int) -> str:
    return f"{engine_id}:{run_no}"


def _psutil() -> Any:
    import psutil

    return psutil


def _run_of(proc: Any, prefix: str) -> int | None:
    """The run number in ``proc``'s marker if it names our engine (``prefix``), else None."""
    psutil = _psutil()
    try:
        value = proc.environ().get(RUN_VAR)
    except (psutil.Error, OSError):  # gone, a zombie, or not ours to read
        return None
    return _run_number(value, prefix)


def _run_number(value: str | None, prefix: str) -> int | None:
    if value is None or not value.startswith(prefix):
        return None
    number = value[len(prefix) :]
    return int(number) if number.isdigit() else None


def marked_processes(engine_id: str) -> Iterator[tuple[int, int]]:
    """``(pid, run_no)`` of every live process we can see that carries this engine's marker.

    On Linux each ``/proc/<pid>/environ`` is read as it is and searched for the marker's bytes,
    and only a process whose environment holds them is parsed (as psutil parses it: the last
    ``TRIOHOOKS_RUN`` wins); a scan is then a few times cheaper than psutil's. Elsewhere,
    psutil's."""
    prefix = f"{engine_id}:"
    me = os.getpid()
    if not sys.platform.startswith("linux"):
        for proc in _psutil().process_iter():
            if proc.pid != me and (run := _run_of(proc, prefix)) is not None:
                yield proc.pid, run
        return
    needle = RUN_VAR_BYTES + b"=" + prefix.encode()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as environ:
                data = environ.read()
        except OSError:  # gone, or not ours to read
            continue
        if needle in data and (run := _run_in(data, prefix)) is not None:
            yield int(name), run


def _run_in(environ: bytes, prefix: str) -> int | None:
    """The run number in a raw environment block's marker if it names our engine."""
    value = None
    for entry in environ.split(b"\0"):
        name, sep, rest = entry.partition(b"=")
        if sep and name == RUN_VAR_BYTES:
            value = rest
    return _run_number(None if value is None else os.fsdecode(value), prefix)


def kill_marked(engine_id: str, spare: Callable[[int], bool] | None = None) -> int:
    """SIGKILL every process carrying this engine's marker whose run is not ``spare``d.

    Blocking (reads /proc); the reaper runs it in a worker thread. Returns how many distinct
    processes were signalled.
    """
    prefix = f"{engine_id}:"
    killed: set[int] = set()
    for _ in range(MARKER_PASSES):
        hits = [pid for pid, run in marked_processes(engine_id) if spare is None or not spare(run)]
        fresh = [pid for pid in hits if _kill_verified(pid, prefix, spare)]
        killed.update(fresh)
        if not fresh:
            break
    return len(killed)


def _kill_verified(pid: int, prefix: str, spare: Callable[[int], bool] | None) -> bool:
    psutil = _psutil()
    if not hasattr(os, "pidfd_open"):  # (macOS): psutil checks the pid's start time instead
        try:
            proc = psutil.Process(pid)
            run = _run_of(proc, prefix)
            if run is None or (spare is not None and spare(run)):
                return False
            proc.send_signal(signal.SIGKILL)
            return True
        except (psutil.Error, OSError):
            return False
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return False
    try:
        # The pidfd pins the process; re-reading the marker now proves the pid was not recycled.
        run = _run_of(psutil.Process(pid), prefix)
        if run is None or (spare is not None and spare(run)):
            return False
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        return True
    except (psutil.Error, OSError):
        return False
    finally:
        os.close(pidfd)


# -- the helper --------------------------------------------------------------------------------


def _say(text: str) -> None:
    print(f"triohooks watchdog {os.getpid()}: {text}", file=sys.stderr, flush=True)


def _become_subreaper() -> bool:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_child_subreaper = 36
    one, zero = ctypes.c_ulong(1), ctypes.c_ulong(0)
    if libc.prctl(pr_set_child_subreaper, one, zero, zero, zero) != 0:
        _say(f"cannot become a child subreaper: {os.strerror(ctypes.get_errno())}")
        return False
    return True


def write_private_file(path: str, data: bytes) -> None:
    """Create ``path`` (0600, exclusively, not through a symlink) holding ``data``: a hook's
    payload file. Nothing is left behind when it fails (the OSError names the path)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(path, flags, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except BaseException:
        os.close(fd)
        remove_file(path)
        raise
    os.close(fd)


def remove_file(path: str | bytes) -> None:
    """Remove a payload file; one already gone (or never made) is fine."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _hook_pipes() -> list[tuple[int, int]]:
    """A hook's stdin, stdout and stderr pipes and its status pipe, ``(read, write)`` each,
    close-on-exec; the engine's ends (stdin's write end, the outputs' and the status's read
    ends) non-blocking."""
    pipes: list[tuple[int, int]] = []
    try:
        for _ in range(4):
            pipes.append(os.pipe())
        for fd in (pipes[0][1], pipes[1][0], pipes[2][0], pipes[3][0]):
            os.set_blocking(fd, False)
    except BaseException:
        for pair in pipes:
            for fd in pair:
                os.close(fd)
        raise
    return pipes


def signal_group(pgid: int, sig: int) -> bool:
    """Signal process group ``pgid``; False when it is gone or not ours to signal (a setuid
    member): the one group kill of both backends, the helpers and the reaper."""
    try:
        os.killpg(pgid, sig)
    except OSError:  # ProcessLookupError: the group is gone; PermissionError: not ours
        return False
    return True


class _Hook:
    """A hook's direct child, from spawn until the engine has it reaped."""

    __slots__ = ("created", "file", "pidfd", "run", "status", "stopped")

    def __init__(self, run: int, pidfd: int, status: int, file: bytes | None = None) -> None:
        self.run = run
        #: Its payload file, written here before the spawn: removed as the child exits.
        self.file = file
        #: Watched until the child exits (then closed).
        self.pidfd: int | None = pidfd
        #: The status pipe's write end: the wait status goes in as the child is reaped.
        self.status = status
        #: The engine stopped this run (or is closing): what is left of it is to be killed.
        self.stopped = False
        #: psutil's create_time, read at the first sweep that needs it.
        self.created: float | None = None


class _Node:
    """A descendant as one scan saw it."""

    __slots__ = ("proc", "zombie")

    def __init__(self, proc: Any, zombie: bool) -> None:
        self.proc = proc
        self.zombie = zombie


class Helper:
    def __init__(
        self, engine_id: str, sock: socket.socket, sigdef: frozenset[int], subreaper: bool
    ) -> None:
        self.prefix = f"{engine_id}:"
        self.engine_id = engine_id
        self.sock = sock
        self.reader = FrameReader(sock, fds=False)  # the engine sends none
        self.sigdef = sigdef
        self.subreaper = subreaper
        self.me = os.getpid()
        self.hooks: dict[int, _Hook] = {}
        self.poller = select.poll()
        self.poller.register(sock.fileno(), select.POLLIN)
        #: pidfd -> pid of the hook children not yet exited.
        self.watched: dict[int, int] = {}
        #: The last FINISHED_KEPT hook pids reaped, oldest first: session and group ids that
        #: name a finished run (a live hook that got a recycled one is in ``hooks``, which
        #: is checked first).
        self.finished: dict[int, None] = {}
        self.files: set[bytes] = set()
        #: The host's environment as the engine last sent it (the marker is set per spawn).
        self.host_env: dict[bytes, bytes] | None = None
        #: The next spawn's pipes (made after each spawn, off its way).
        self.spare_pipes: list[tuple[int, int]] | None = None
        self.closing = False
        #: When an orphan sweep is due (monotonic seconds), None when none is wanted.
        self.sweep_at: float | None = None
        self.last_sweep = -SWEEP_INTERVAL_S
        self.killed = 0
        self.reported = 0
        #: The last scan's children by parent pid.
        self.children: dict[int, list[_Node]] = {}
        #: psutil's view of us, once psutil is loaded.
        self.proc: Any = None

    # -- the loop -------------------------------------------------------------------------------

    def serve(self) -> None:
        """Serve the engine's frames and reap exiting hook children until EOF (or until the
        engine cannot be answered)."""
        sock = self.sock.fileno()
        while True:
            timeout = None
            if self.sweep_at is not None:
                timeout = max(0, round((self.sweep_at - time.monotonic()) * 1000))
            try:
                for fd, _ in self.poller.poll(timeout):
                    if fd != sock:
                        self.exited(fd)
                    elif not self.reader.fill():
                        return
                    else:
                        while (message := self.reader.next()) is not None:
                            self.handle(*message)
            except OSError as exc:  # the engine's end is broken: as good as EOF
                _say(f"engine connection lost: {exc}")
                return
            if self.sweep_at is not None and time.monotonic() >= self.sweep_at:
                self.sweep()

    def handle(self, op: bytes, body: bytes) -> None:
        if op == SPAWN:
            self.spawn(body)
        elif op == SIGNAL:
            pid, _, sig = body.partition(b":")
            if int(pid) in self.hooks:  # unreaped: the group id is still this hook's
                signal_group(int(pid), int(sig))
        elif op == STOPPED:
            hook = self.hooks.get(int(body))
            if hook is not None:
                signal_group(int(body), signal.SIGKILL)
                hook.stopped = True
            # What it left, and orphans of finished runs: swept once every frame read so far
            # is handled, so many runs stopped at once (a burst of timeouts) cost one sweep,
            # not one scan of the process table each.
            self.sweep_at = time.monotonic()
        elif op == CLOSE:
            self.closing = True
            self.sweep()
        elif op == GUARD:
            self.files.add(body)
        elif op == RELEASE:
            self.files.discard(body)
        elif op == WRITE:
            path, data = marshal.loads(body)
            try:
                write_private_file(path, data)
            except OSError as exc:
                self.refuse(exc.errno, exc.strerror, exc.filename or path, "")
                return
            self.files.add(os.fsencode(path))
            self.send(frame(WROTE))
        elif op == REMOVE:
            self.drop_file(body)
        else:
            _say(f"unknown request {op!r}")

    def send(self, data: bytes, fds: Sequence[int] = ()) -> None:
        send_frame(self.sock, data, fds)

    # -- spawning and reaping -------------------------------------------------------------------

    def spawn(self, body: bytes) -> None:
        run, argv, executable, cwd, env, marker, stdin, payload_file = marshal.loads(body)
        if marker is not None:  # the host's environment: sent when it changed, else kept
            if env is None:
                env = self.host_env
            else:
                self.host_env = env
            if env is None:  # cannot be: the engine sends it with its first spawn
                self.refuse(0, None, None, "no host environment")
                return
            env[RUN_VAR_BYTES] = marker
        pipes = self.spare_pipes
        self.spare_pipes = None
        try:
            if pipes is None:
                pipes = _hook_pipes()
        except OSError as exc:  # EMFILE, ENFILE
            self.refuse(exc.errno, exc.strerror, None, "")
            return
        (in_r, in_w), (out_r, out_w), (err_r, err_w), (st_r, st_w) = pipes
        ours = [st_r, in_w, out_r, err_r, out_w, err_w]
        file: bytes | None = None
        try:
            if payload_file is not None:  # written here: the engine's loop does no file I/O
                path, data = payload_file
                try:
                    write_private_file(path, data)
                except OSError as exc:
                    self.refuse(exc.errno, exc.strerror, exc.filename or path, "")
                    return
                file = os.fsencode(path)
                self.files.add(file)  # removed if the engine dies, as a tracked file is
            try:
                pid = self._spawn(argv, executable, cwd, env, [in_r, out_w, err_w])
            except NotImplementedError:  # a libc without POSIX_SPAWN_SETSID
                self.refuse(0, None, None, UNSUPPORTED)
                return
            except OSError as exc:
                self.refuse(exc.errno, exc.strerror, exc.filename, "")
                return
            except ValueError as exc:  # e.g. an embedded NUL byte
                self.refuse(0, None, None, str(exc) or "invalid")
                return
            try:
                pidfd = os.pidfd_open(pid)
            except OSError as exc:  # we could not guard it, so it must not run
                signal_group(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                self.refuse(exc.errno, exc.strerror, None, "")
                return
            owned, file = file, None  # the hook's now: removed as its child exits
            # Written now (the child is far from reading it yet): the spawn went first.
            try:  # into an empty pipe: what fits (the engine sends no more than a pipe holds)
                written = os.write(in_w, stdin) if stdin else 0
            except BlockingIOError:
                written = 0
            try:  # the engine first (it is waiting), the bookkeeping after
                self.send(frame(PID, b"%d:%d" % (pid, written)), ours)
            finally:
                self.hooks[pid] = _Hook(run, pidfd, os.dup(st_w), owned)
                self.watched[pidfd] = pid
                self.poller.register(pidfd, select.POLLIN)
        finally:  # the child and the engine have theirs; ours would keep the pipes from EOF
            for pair in pipes:
                for fd in pair:
                    os.close(fd)
            if file is not None:  # written, but no hook started to read it
                self.drop_file(file)
        self.refill()

    def drop_file(self, file: bytes) -> None:
        try:
            remove_file(file)
        except OSError as exc:  # e.g. the directory went read-only: say so, go on
            _say(f"cannot remove payload file {os.fsdecode(file)}: {exc.strerror}")
        self.files.discard(file)

    def refuse(
        self, code: int | None, strerror: str | None, filename: str | None, message: str
    ) -> None:
        self.send(frame(ERROR, marshal.dumps((code, strerror, filename, message))))

    def refill(self) -> None:
        """The next spawn's pipes, made now (while the last hook starts), not on its way."""
        try:
            self.spare_pipes = _hook_pipes()
        except OSError:  # made (or refused) by that spawn instead
            self.spare_pipes = None

    def _spawn(
        self, argv: tuple[str, ...], executable: str | None, cwd: str, env: Any, fds: list[int]
    ) -> int:
        """``posix_spawn`` in a new session, searching PATH like subprocess does: in ``env``'s
        PATH, from ``cwd``; the first error that is not "not found" is the one reported."""
        # Every time (the same path may name a new directory); we stay there until the next.
        os.chdir(cwd)  # an OSError naming cwd, as subprocess reports it
        actions = [(os.POSIX_SPAWN_DUP2, fd, target) for target, fd in enumerate(fds)]
        program = executable or argv[0]
        if "/" in program:
            candidates = [program]
        else:
            candidates = [os.path.join(d, program) for d in os.get_exec_path(env)]
        first: OSError | None = None
        last: OSError | None = None
        for path in candidates:
            try:
                return os.posix_spawn(
                    path, argv, env, file_actions=actions, setsid=True, setsigdef=self.sigdef
                )
            except OSError as exc:
                last = exc
                if first is None and exc.errno not in (errno.ENOENT, errno.ENOTDIR):
                    first = exc
        raise first or last or FileNotFoundError(errno.ENOENT, "No such file", program)

    def exited(self, pidfd: int) -> None:
        """A hook child exited: SIGKILL its group while the zombie still holds the group id,
        reap it, and write its status into the run's status pipe (the engine's one sign)."""
        pid = self.watched[pidfd]
        signal_group(pid, signal.SIGKILL)
        try:
            got, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # cannot be (only we reap our hooks): status unknown
            got, status = pid, None
        if got == 0:  # cannot be either (a pidfd polls readable once the process is gone)
            return
        hook = self.hooks.pop(pid)
        self.unwatch(hook)
        if hook.file is not None:  # gone before the engine hears of the exit
            self.drop_file(hook.file)
        self.finished[pid] = None  # its session and group id now mean "a finished run"
        if len(self.finished) > FINISHED_KEPT:
            del self.finished[next(iter(self.finished))]
        self.want_sweep()  # a descendant may have been orphaned
        try:
            if status is not None:  # a few bytes into an empty pipe: never blocks
                os.write(hook.status, b"%d" % status)
        except OSError:  # the engine closed its end: it stopped caring
            pass
        finally:
            os.close(hook.status)

    def unwatch(self, hook: _Hook) -> None:
        if hook.pidfd is not None:
            self.poller.unregister(hook.pidfd)
            del self.watched[hook.pidfd]
            os.close(hook.pidfd)
            hook.pidfd = None

    # -- sweeping -------------------------------------------------------------------------------

    def want_sweep(self) -> None:
        if self.sweep_at is None:
            self.sweep_at = max(time.monotonic(), self.last_sweep + SWEEP_INTERVAL_S)

    def sweep(self) -> None:
        """Kill what is to be killed now, reap dead orphans, report the count."""
        self.sweep_at = None
        self.last_sweep = time.monotonic()
        if not self.hooks and self._childless():  # no hook running, no orphan: nothing to do
            return
        if self._only_live_hooks():  # no orphan, no stopped run: nothing to do either
            return
        try:
            killed = self.kill_victims()
        except Exception as exc:  # a failed sweep must not take the watchdog down
            _say(f"sweep failed: {exc!r}")
            killed = 0
        self.reap_orphans()
        if killed:
            self.want_sweep()  # reap the victims once they are dead; catch late orphans
        if self.killed != self.reported:
            self.report()

    def report(self) -> None:
        data = frame(KILLS, b"%d" % self.killed)
        try:
            sent = self.sock.send(data, socket.MSG_DONTWAIT)
        except OSError:  # full (the engine reads it later; the count is cumulative) or gone
            return
        if sent < len(data):
            self.sock.sendall(data[sent:])
        self.reported = self.killed

    def _tree(self) -> dict[int, list[_Node]]:
        """Our descendants by parent pid (psutil reads every /proc/<pid>/stat once)."""
        psutil = _psutil()
        if self.proc is None:
            self.proc = psutil.Process(self.me)
        children: dict[int, list[_Node]] = {}
        for proc in self.proc.children(recursive=True):
            try:
                with proc.oneshot():
                    ppid, zombie = proc.ppid(), proc.status() == psutil.STATUS_ZOMBIE
            except psutil.Error:  # gone
                continue
            children.setdefault(ppid, []).append(_Node(proc, zombie))
        return children

    def _victims(self, children: dict[int, list[_Node]]) -> list[Any]:
        """Hooks of stopped runs and orphans of finished ones, each with all its descendants."""
        roots = []
        for node in children.get(self.me, ()):
            hook = self.hooks.get(node.proc.pid)
            if hook is not None:
                if hook.stopped or self.closing:
                    roots.append(node)
            elif not node.zombie and (self.closing or self._finished_run(node.proc)):
                roots.append(node)
        victims = []
        while roots:
            node = roots.pop()
            if not node.zombie:
                victims.append(node.proc)
            roots.extend(children.get(node.proc.pid, ()))
        return victims

    def _only_live_hooks(self) -> bool:
        """Whether every child we have is a hook still running and not stopped (an orphan a
        hook leaves is re-parented to us, so it would be a child), read from /proc's lists
        of our children: a few reads instead of the scan of every process."""
        if self.closing:
            return False
        children: list[int] = []
        try:
            for tid in os.listdir("/proc/self/task"):
                with open(f"/proc/self/task/{tid}/children", "rb") as listing:
                    children += map(int, listing.read().split())
        except (OSError, ValueError):  # a thread gone meanwhile, or no such file (a kernel
            return False  # without CONFIG_PROC_CHILDREN): scan
        hooks = self.hooks
        for child in children:
            hook = hooks.get(child)
            if hook is None or hook.stopped:
                return False
        return True

    def _childless(self) -> bool:
        """Whether we have no child at all (one syscall, no /proc scan)."""
        try:
            os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        return False

    def _finished_run(self, orphan: Any) -> bool:
        """Whether this orphan surely belongs to no run that is still live."""
        live = {pid: hook for pid, hook in self.hooks.items() if not hook.stopped}
        if not live:
            return True
        run = _run_of(orphan, self.prefix)
        if run is not None:
            return all(hook.run != run for hook in live.values())
        try:
            session, group = os.getsid(orphan.pid), os.getpgid(orphan.pid)
        except OSError:  # gone
            return False
        if session in live or group in live:
            return False
        if session in self.hooks or session in self.finished:  # a stopped or finished hook's
            return True
        if group in self.hooks or group in self.finished:
            return True
        try:
            born = orphan.create_time()
        except Exception:
            return False
        # Only a run started at or before its birth can have made it (same clock tick: spare).
        return all(self._created(pid, hook) > born for pid, hook in live.items())

    def _created(self, pid: int, hook: _Hook) -> float:
        if hook.created is None:
            try:
                hook.created = float(_psutil().Process(pid).create_time())
            except Exception:  # unknown: assume it is older than anything (spare)
                return float("-inf")
        return hook.created

    def kill_victims(self) -> int:
        """Stop every victim, rescan until no new one appears, count and report them, then
        SIGKILL them all. Returns how many."""
        psutil = _psutil()
        held: dict[int, int] = {}  # pid -> pidfd of a stopped victim
        try:
            for _ in range(SCAN_PASSES):
                self.children = self._tree()
                fresh = [p for p in self._victims(self.children) if p.pid not in held]
                for proc in fresh:
                    try:
                        pidfd = os.pidfd_open(proc.pid)
                    except OSError:
                        continue
                    try:  # the pidfd pins the pid: a same create_time proves it is the one
                        if proc.is_running():
                            signal.pidfd_send_signal(pidfd, signal.SIGSTOP)
                            held[proc.pid] = pidfd
                            continue
                    except (psutil.Error, OSError):
                        pass
                    os.close(pidfd)
                if not fresh:
                    break
            if held:  # counted before they die: whoever sees them gone can read the count
                self.killed += len(held)
                self.report()
            for pidfd in held.values():
                try:
                    signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                except OSError:
                    pass
        finally:
            for pidfd in held.values():
                os.close(pidfd)
        return len(held)

    def reap_orphans(self) -> None:
        """Reap the dead children of the last scan that are not a hook's (we reap those as
        they exit); victims killed now are reaped by the follow-up sweep."""
        for node in self.children.get(self.me, ()):
            if node.proc.pid not in self.hooks:
                try:
                    os.waitpid(node.proc.pid, os.WNOHANG)
                except ChildProcessError:
                    pass

    # -- the end --------------------------------------------------------------------------------

    def shutdown(self) -> None:
        """The engine is gone: remove its payload files, kill everything, wait (bounded)."""
        self.closing = True
        for path in self.files:
            try:
                os.unlink(path)
            except OSError:
                pass
        self.files.clear()
        self.reader.close_fds()
        for pair in self.spare_pipes or ():
            for fd in pair:
                os.close(fd)
        self.spare_pipes = None
        running = [pid for pid in self.hooks if self._running(pid)]
        for pid in self.hooks:
            if pid not in running:  # exited, unreaped: its group may still have members
                signal_group(pid, signal.SIGKILL)
        alive = [pid for pid in running if signal_group(pid, signal.SIGTERM)]
        if alive:
            time.sleep(TERM_GRACE_S)
            for pid in alive:
                signal_group(pid, signal.SIGKILL)
        try:
            self.kill_victims()
        except Exception as exc:
            _say(f"final sweep failed: {exc!r}")
        if not self.subreaper:  # orphans went to init: only their markers find them
            kill_marked(self.engine_id)
        deadline = time.monotonic() + EXIT_WAIT_S
        while time.monotonic() < deadline:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:  # none left
                return
            if pid == 0:
                time.sleep(0.005)
        _say("children still alive at exit; leaving them to init")

    @staticmethod
    def _running(pid: int) -> bool:
        try:
            info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return False
        return info is None


class _Terminate(Exception):
    pass


def _terminate(signum: int, frame: object) -> None:
    raise _Terminate


def _import_psutil() -> None:
    try:
        _psutil()
    except ImportError as exc:
        _say(f"cannot import psutil: {exc}")


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: _watchdog.py ENGINE_ID [SYS_PATH...]", file=sys.stderr)
        return 2
    sys.path.extend(argv[2:])
    # Hooks get the dispositions the host gave us, except what Python or we ignore ourselves.
    inherited = {s for s in (signal.SIGINT, signal.SIGHUP) if signal.getsignal(s) is signal.SIG_IGN}
    sigdef = frozenset({signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGHUP} - inherited)
    # The terminal's Ctrl-C is for the host; we must survive it to clean up after the host.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # never auto-reap: zombies hold group ids
    subreaper = _become_subreaper()
    threading.Thread(target=_import_psutil, daemon=True).start()
    sock = socket.socket(fileno=0)
    helper = Helper(argv[1], sock, sigdef, subreaper)
    signal.signal(signal.SIGTERM, _terminate)  # killed politely: clean up as at EOF
    try:
        helper.refill()
        helper.send(frame(READY))
        helper.serve()
    except (_Terminate, OSError):
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        helper.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
