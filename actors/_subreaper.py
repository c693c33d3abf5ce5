"""The engine's end of the watchdog helper (:mod:`triohooks.actors._watchdog`): start it, have it
spawn hook processes and write payload files, have it signal hook groups, tell it about stopped
runs, engine close and payload files, and stop it.

Fully asynchronous: the socket is non-blocking and nothing here blocks the event loop. A
message is queued (sent at once when the socket takes it, else by :meth:`WatchdogHelper.serve`'s
writer when it can); a request (a spawn, a file write) is a message whose reply the caller awaits,
replies coming back in request order, read by :meth:`WatchdogHelper.serve`'s reader, which also
keeps the escapee count the helper pushes. A hook's exit is not a message: the helper writes
the wait status into the run's own status pipe, which the run polls with its outputs (one
observation of each exit). A helper that takes no message for ``REPLY_TIMEOUT_S``, answers no
request within it, answers nonsense or is gone is given up (:class:`HelperGone` to whoever
waits): from then on it is not used -- the reaper spawns in this process, with marker sweeps
and no host-death protection, until the keeper starts a fresh helper -- and its socket is
closed, so it kills what it still guards. Only the caller of a request waits for the helper;
every other task runs on.

Owns: the protocol's engine side. Must not: signal hook processes itself (they are the
helper's children: only it knows whether a group id is still theirs), or block the loop.
"""

from __future__ import annotations

import errno
import importlib.util
import logging
import marshal
import os
import signal
import socket
import subprocess
import sys
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final, NamedTuple

import trio

from . import _watchdog as wire

log = logging.getLogger("triohooks.reaper")

SCRIPT: Final = Path(wire.__file__)
#: The longest the helper may take to answer a request, or to take a message, before it counts
#: as broken.
REPLY_TIMEOUT_S: Final = 5.0
#: While a reply or a write is overdue, how often the helper's state is read: a helper that is
#: stopped (SIGSTOP, a hook's ``kill -STOP $PPID``, a debugger) is given up at once, not after
#: ``REPLY_TIMEOUT_S``; a busy one (a big sweep) is waited for.
STATE_CHECK_S: Final = 0.25
#: How long the helper may take to start.
START_TIMEOUT_S: Final = 10.0
#: How long it gets to clean up and exit once we close the socket.
STOP_TIMEOUT_S: Final = 2.0
SEND_BUFFER: Final = 1 << 20
#: Descriptors a spawn's reply carries: the status pipe's read end, stdin's write end, the
#: outputs' read ends, the outputs' write ends.
SPAWN_FDS: Final = 6


class HelperGone(Exception):
    """The watchdog helper died, hung or broke the protocol; it is no longer used."""


class Spawned(NamedTuple):
    """A hook process the helper started, and the pipe ends that are now ours."""

    pid: int
    #: The run's status pipe (non-blocking): the wait status arrives here as the child is
    #: reaped; EOF without it: unknown (the helper could not tell, or died).
    status: int
    #: Non-blocking: stdin's write end, stdout's and stderr's read ends.
    stdin: int
    stdout: int
    stderr: int
    #: stdout's and stderr's write ends, for us to hold until the child exits.
    writers: tuple[int, int]
    #: How much of the ``stdin`` sent is in the pipe already.
    written: int


class HostEnvironment(dict[bytes, bytes]):
    """A hook's environment that is a snapshot of the host's plus the run marker: ``version``
    names the snapshot (the same version, the same variables), so a helper that was sent it
    once is sent only the marker after. Not to be changed once made."""

    __slots__ = ("marker", "version")

    def __init__(self, snapshot: dict[bytes, bytes], version: int, marker: bytes) -> None:
        super().__init__(snapshot)
        self[wire.RUN_VAR_BYTES] = marker
        self.marker = marker
        self.version = version


def _psutil_path() -> list[str]:
    """Where psutil is installed, for the helper's bare (``-I -S``) interpreter."""
    spec = importlib.util.find_spec("psutil")
    if spec is None or spec.origin is None:
        return []
    return [str(Path(spec.origin).parent.parent)]


class _Request:
    """One request awaiting its reply (replies come in request order)."""

    __slots__ = ("abandoned", "body", "done", "fds", "op", "path")

    def __init__(self, path: str | None = None) -> None:
        self.done = trio.Event()
        #: The reply (``op`` empty: none came, the helper is gone).
        self.op = b""
        self.body = b""
        self.fds: tuple[int, ...] = ()
        #: Its caller stopped waiting (cancelled): the reader undoes what the reply did.
        self.abandoned = False
        #: A file write's path (undone by a remove).
        self.path = path


class WatchdogHelper:
    """One running helper. Create with :meth:`start`; run :meth:`serve` while it is used."""

    def __init__(self, process: trio.Process, sock: socket.socket) -> None:
        self.process = process
        self._sock = sock
        self._fd = sock.fileno()
        self._reader = wire.FrameReader(sock)
        self._gone: str | None = None
        self._closed = False
        self._kills = 0
        #: The version of the host environment snapshot the helper has (None: none yet).
        self._env_version: int | None = None
        #: Requests sent, oldest first, whose replies have not come.
        self._pending: deque[_Request] = deque()
        #: Bytes queued for the helper that the socket has not taken yet.
        self._out = bytearray()
        self._out_queued = trio.Event()
        #: Set once the helper is given up (or stopped).
        self.lost = trio.Event()

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def gone(self) -> bool:
        return self._gone is not None

    @property
    def gone_reason(self) -> str | None:
        """Why the helper is no longer used (None while it is)."""
        return self._gone

    @classmethod
    async def start(cls, engine_id: str) -> WatchdogHelper:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        env = {k: v for k, v in os.environ.items() if k != wire.RUN_VAR}
        try:
            process = await trio.lowlevel.open_process(
                [sys.executable, "-I", "-S", str(SCRIPT), engine_id, *_psutil_path()],
                stdin=theirs.fileno(),
                stdout=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        ours.setblocking(False)
        try:
            ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
        except OSError:
            pass
        helper = cls(process, ours)
        try:
            with trio.fail_after(START_TIMEOUT_S):
                message = await helper._next_frame()
            if message is None:
                raise HelperGone("watchdog helper exited at start")
            if message[0] != wire.READY:
                raise HelperGone(f"watchdog helper said {message[0]!r} at start")
        except BaseException:
            with trio.CancelScope(shield=True):
                await helper.stop()
            raise
        return helper

    async def _next_frame(self) -> tuple[bytes, bytes] | None:
        """The next frame (None at EOF). Raises OSError or ClosedResourceError (stopped)."""
        reader = self._reader
        while (message := reader.next()) is None:
            await trio.lowlevel.wait_readable(self._fd)
            try:
                if not reader.fill(socket.MSG_DONTWAIT):
                    return None
            except BlockingIOError:
                pass
        return message

    # -- serving --------------------------------------------------------------------------------

    async def serve(self) -> None:
        """Read replies and pushed counts, and send what the socket did not take at once,
        until the helper is given up (then return)."""
        if self._gone is not None:
            return
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._write_queued)
            try:
                while True:
                    message = await self._next_frame()
                    if message is None:
                        self._broken("the watchdog helper exited")
                        break
                    self._received(*message)
                    if self.gone:
                        break
            except trio.ClosedResourceError:  # stopped (or given up) under us
                pass
            except OSError as exc:
                self._broken(f"reading from the watchdog helper failed: {exc}")
            nursery.cancel_scope.cancel()

    async def _write_queued(self) -> None:
        while True:
            await self._out_queued.wait()
            self._out_queued = trio.Event()
            while self._out:
                with trio.move_on_after(REPLY_TIMEOUT_S) as waiting:
                    while True:
                        with trio.move_on_after(STATE_CHECK_S):
                            await trio.lowlevel.wait_writable(self._fd)
                            break
                        if self.is_stopped():
                            self._broken("the watchdog helper is stopped (SIGSTOP)")
                            return
                if waiting.cancelled_caught:
                    self._broken(f"the watchdog helper took no message for {REPLY_TIMEOUT_S:g} s")
                    return
                try:
                    sent = self._sock.send(self._out)
                except BlockingIOError:
                    continue
                except OSError as exc:
                    self._broken(f"writing to the watchdog helper failed: {exc}")
                    return
                del self._out[:sent]

    def _received(self, op: bytes, body: bytes) -> None:
        if op == wire.KILLS:
            self._kills = max(self._kills, int(body))
            return
        if op not in (wire.PID, wire.ERROR, wire.WROTE) or not self._pending:
            self._broken(f"unexpected {op!r} from the watchdog helper")
            return
        request = self._pending.popleft()
        request.op, request.body = op, body
        if op == wire.PID:
            reader = self._reader
            fds = reader.fds
            if reader.fds_lost or len(fds) < SPAWN_FDS:  # we are out of descriptors
                reader.fds_lost = False
                reader.close_fds()
                # It must not run unguarded: the helper kills it (and reaps it).
                self._send(wire.frame(wire.STOPPED, body.partition(b":")[0]))
                request.op = wire.ERROR
                request.body = marshal.dumps((errno.EMFILE, os.strerror(errno.EMFILE), None, ""))
            else:
                request.fds = tuple(fds.popleft() for _ in range(SPAWN_FDS))
        if request.abandoned:
            self._undo(request)
        else:
            request.done.set()

    def _undo(self, request: _Request) -> None:
        """A reply whose caller stopped waiting: stop the hook it started (the helper kills
        and reaps it) and close our ends, or remove the file it wrote."""
        if request.op == wire.PID:
            self._send(wire.frame(wire.STOPPED, request.body.partition(b":")[0]))
            for fd in request.fds:
                os.close(fd)
            request.fds = ()
        elif request.op == wire.WROTE and request.path is not None:
            self._send(wire.frame(wire.REMOVE, os.fsencode(request.path)))

    # -- requests -------------------------------------------------------------------------------

    async def spawn(
        self,
        run_no: int,
        argv: Sequence[str],
        executable: str | None,
        cwd: str,
        env: Mapping[str, str] | Mapping[bytes, bytes],
        stdin: bytes,
        payload_file: tuple[str, bytes] | None = None,
    ) -> Spawned:
        """Start a hook process with three fresh pipes, ``stdin`` (at most ``STDIN_INLINE``
        bytes) already written into its stdin, and its ``payload_file`` (``(path, contents)``)
        written first; the helper removes that file as the child exits. Spawn errors come
        back as the OSError or ValueError subprocess would raise (a file that cannot be
        written: the OSError naming it); a broken helper raises :class:`HelperGone`. On
        cancel the hook, if it started, is stopped (killed and reaped by the helper)."""
        marker: bytes | None = None
        version: int | None = None
        sent: Mapping[str, str] | Mapping[bytes, bytes] | None
        if type(env) is HostEnvironment:
            marker, version = env.marker, env.version
            sent = None if version == self._env_version else dict(env)
        else:
            sent = env if type(env) is dict else dict(env)
        body = marshal.dumps(
            (run_no, tuple(argv), executable, cwd, sent, marker, stdin, payload_file)
        )
        request = _Request()
        self._request(wire.frame(wire.SPAWN, body), request)
        if version is not None:  # the helper keeps what it was sent, whatever the reply
            self._env_version = version
        await self._reply(request)
        if request.op == wire.PID:
            head, _, written = request.body.partition(b":")
            status, stdin_w, stdout_r, stderr_r, stdout_w, stderr_w = request.fds
            request.fds = ()
            return Spawned(
                int(head), status, stdin_w, stdout_r, stderr_r, (stdout_w, stderr_w), int(written)
            )
        if request.op != wire.ERROR:
            raise self._broken(f"unexpected reply {request.op!r} to a spawn")
        code, strerror, filename, message = marshal.loads(request.body)
        if message == wire.UNSUPPORTED:
            raise self._broken("it cannot spawn in a new session here")
        if code:
            raise OSError(code, strerror, filename)
        raise ValueError(message)

    def signal(self, pid: int, sig: int) -> None:
        """Have the helper signal hook ``pid``'s group -- only while it has not reaped it, so
        the group id cannot have been recycled (we may not signal it ourselves: not ours)."""
        self._send(wire.frame(wire.SIGNAL, b"%d:%d" % (pid, sig)))

    def stopped(self, pid: int) -> None:
        """We stopped hook ``pid``: the helper SIGKILLs its group (if not yet reaped) and kills
        every descendant it left, wherever it went (and finished runs' orphans)."""
        self._send(wire.frame(wire.STOPPED, b"%d" % pid))

    def close_all(self) -> None:
        """Engine close: the helper kills every descendant it has."""
        self._send(wire.frame(wire.CLOSE))

    async def write_file(self, path: str, data: bytes) -> None:
        """Have the helper create the payload file ``path`` (0600, exclusively, not through a
        symlink) holding ``data``; it removes it on :meth:`remove_file`, or if we die first.
        Raises the OSError the write raised (naming the path); a broken helper
        :class:`HelperGone`. On cancel a file written is removed."""
        request = _Request(path)
        self._request(wire.frame(wire.WRITE, marshal.dumps((path, data))), request)
        await self._reply(request)
        if request.op == wire.WROTE:
            return
        if request.op != wire.ERROR:
            raise self._broken(f"unexpected reply {request.op!r} to a file write")
        code, strerror, filename, _ = marshal.loads(request.body)
        raise OSError(code, strerror, filename)

    def remove_file(self, path: str) -> None:
        """Have the helper remove a payload file (a message, no reply). Never raises."""
        self._send(wire.frame(wire.REMOVE, os.fsencode(path)))

    def track_file(self, path: str, present: bool) -> None:
        """Register (``present``) or release a payload file the helper removes if we die.
        Never raises."""
        op = wire.GUARD if present else wire.RELEASE
        self._send(wire.frame(op, os.fsencode(path)))

    def escapees_killed(self) -> int:
        """Processes the helper killed as escapees so far (its reports, as read)."""
        return self._kills

    # -- the wire -------------------------------------------------------------------------------

    def _send(self, data: bytes) -> None:
        """Queue one message: sent now if the socket takes it, else by the writer. A helper
        given up drops it (closing our end made it kill what it guards)."""
        if self._gone is not None:
            return
        if not self._out:
            try:
                sent = self._sock.send(data)
            except BlockingIOError:
                sent = 0
            except OSError as exc:
                self._broken(f"writing to the watchdog helper failed: {exc}")
                return
            if sent == len(data):
                return
            data = data[sent:]
        self._out += data
        self._out_queued.set()

    def _request(self, data: bytes, request: _Request) -> None:
        if self._gone is not None:
            raise HelperGone(self._gone)
        self._pending.append(request)
        self._send(data)

    async def _reply(self, request: _Request) -> None:
        """Wait for the reply to ``request``; a helper that does not answer in time is given
        up. On cancel the reply, when it comes (or if it came), is undone."""
        try:
            with trio.move_on_after(REPLY_TIMEOUT_S) as waiting:
                while not request.done.is_set():
                    with trio.move_on_after(STATE_CHECK_S):
                        await request.done.wait()
                    if not request.done.is_set() and self.is_stopped():
                        raise self._broken("the watchdog helper is stopped (SIGSTOP)")
        except BaseException:
            if request.done.is_set():
                self._undo(request)
            else:
                request.abandoned = True
            raise
        if request.op:
            return
        if waiting.cancelled_caught and self._gone is None:
            raise self._broken(f"the watchdog helper did not answer within {REPLY_TIMEOUT_S:g} s")
        raise HelperGone(self._gone or "the watchdog helper is gone")

    def _broken(self, why: str) -> HelperGone:
        """Give the helper up: closing our end makes it kill what it guards; whoever waits
        for a reply is told."""
        if self._gone is None:
            self._gone = why
            log.error(
                "watchdog helper %d is broken (%s): hooks now start in this process, and "
                "are not killed if it dies",
                self.pid,
                why,
            )
            self._close()
        return HelperGone(why)

    def _close(self) -> None:
        if not self._closed:
            self._closed = True
            trio.lowlevel.notify_closing(self._sock)
            self._sock.close()
            self._reader.close_fds()
            self._out.clear()
            for request in self._pending:  # no reply will come: wake the callers
                request.done.set()
            self._pending.clear()
            self.lost.set()

    def is_stopped(self) -> bool:
        """Whether the helper process is stopped (state ``T`` or ``t`` in ``/proc``)."""
        try:
            with open(f"/proc/{self.process.pid}/stat", "rb") as stat:
                state = stat.read().rpartition(b")")[2].split()[0]
        except (OSError, IndexError):  # gone (it is ours: not reaped until we wait)
            return False
        return state in (b"T", b"t")

    # -- the end --------------------------------------------------------------------------------

    async def stop(self) -> None:
        """Close the socket (the helper kills what is left, removes payload files, exits) and
        wait for it, bounded; kill it if it hangs. A stopped helper is continued first, so it
        can. Shielded."""
        with trio.CancelScope(shield=True):
            if self._gone is None:
                self._gone = "stopped"
            self._close()
            if self.process.returncode is None and self.is_stopped():
                self.process.send_signal(signal.SIGCONT)
            with trio.move_on_after(STOP_TIMEOUT_S):
                await self.process.wait()
            if self.process.returncode is None:
                log.warning("watchdog helper %d did not exit; killing it", self.pid)
                self.process.kill()
                with trio.move_on_after(STOP_TIMEOUT_S):
                    await self.process.wait()
