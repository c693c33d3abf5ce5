"""The engine's end of the watchdog helper (:mod:`triohooks.actors._watchdog`): start it, have it
spawn hook processes, read the exit statuses it pushes, have it signal hook groups, tell it about
stopped runs, engine close and payload files, and stop it.

Every call but :meth:`WatchdogHelper.start` and :meth:`WatchdogHelper.stop` is synchronous, like
the in-process spawn it replaces: one send (and for a spawn one reply) on a blocking Unix
socket with kernel timeouts, under a lock (payload files are registered from worker threads).
A helper that does not answer within ``REPLY_TIMEOUT_S``, answers nonsense or is gone makes
the call raise :class:`HelperGone` (or, for messages without a reply, just be dropped); from
then on the helper is not used -- the reaper spawns in this process, with marker sweeps and no
host-death protection -- and its socket is closed, so it kills what it still guards.

Owns: the protocol's engine side. Must not: signal hook processes itself (they are the
helper's children: only it knows whether a group id is still theirs), or block the loop longer
than one reply.
"""

from __future__ import annotations

import array
import errno
import importlib.util
import logging
import marshal
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from socket import SCM_RIGHTS, SOL_SOCKET
from typing import Final, NamedTuple

import trio

from . import _watchdog as wire

log = logging.getLogger("triohooks.reaper")

SCRIPT: Final = Path(wire.__file__)
#: The longest one request may block the loop before the helper counts as broken.
REPLY_TIMEOUT_S: Final = 5.0
#: How long the helper may take to start.
START_TIMEOUT_S: Final = 10.0
#: How long it gets to clean up and exit once we close the socket.
STOP_TIMEOUT_S: Final = 2.0
SEND_BUFFER: Final = 1 << 20


class HelperGone(Exception):
    """The watchdog helper died, hung or broke the protocol; it is no longer used."""


class Spawned(NamedTuple):
    """A hook process the helper started, and the pipe ends that are now ours."""

    pid: int
    pidfd: int
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


class WatchdogHelper:
    """One running helper. Create with :meth:`start`."""

    def __init__(self, process: trio.Process, sock: socket.socket) -> None:
        self.process = process
        self._sock = sock
        self._fd = sock.fileno()
        self._reader = wire.FrameReader(sock)
        self._lock = threading.Lock()
        self._gone: str | None = None
        self._closed = False
        self._kills = 0
        #: The version of the host environment snapshot the helper has (None: none yet).
        self._env_version: int | None = None
        #: Exit statuses the helper pushed, by pid, until their run takes them (None: unknown).
        self._statuses: dict[int, int | None] = {}
        #: Called once when the helper is given up (from whichever thread noticed; it must be
        #: thread-safe and must not block): the reaper starts a fresh helper.
        self.on_broken: Callable[[], None] | None = None

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
        # Blocking, with the kernel's timeouts: a request is one send and one recv, the
        # thread sleeping in the kernel until the reply, no poll() in between.
        seconds, fraction = divmod(REPLY_TIMEOUT_S, 1)
        timeout = struct.pack("ll", int(seconds), int(fraction * 1e6))
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, timeout)
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, timeout)
        try:
            ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
        except OSError:
            pass
        helper = cls(process, ours)
        try:
            with trio.fail_after(START_TIMEOUT_S):
                await helper._until_ready()
        except BaseException:
            with trio.CancelScope(shield=True):
                await helper.stop()
            raise
        return helper

    async def _until_ready(self) -> None:
        while True:
            message = self._reader.next()
            if message is not None:
                if message[0] != wire.READY:
                    raise HelperGone(f"watchdog helper said {message[0]!r} at start")
                return
            await trio.lowlevel.wait_readable(self._fd)
            try:
                if not self._reader.fill(socket.MSG_DONTWAIT):
                    raise HelperGone("watchdog helper exited at start")
            except BlockingIOError:
                pass

    # -- requests -------------------------------------------------------------------------------

    def spawn(
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
        written: the OSError naming it); a broken helper raises :class:`HelperGone`."""
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
        with self._lock:
            op, data = self._call(wire.frame(wire.SPAWN, body))
            if version is not None:  # the helper keeps what it was sent, whatever the reply
                self._env_version = version
            if op == wire.PID:
                head, _, written = data.partition(b":")
                pid = int(head)
                # A status for this pid now is an earlier process's: it was reaped before
                # the pid could be reused (and before this reply was sent).
                self._statuses.pop(pid, None)
                reader = self._reader
                fds = reader.fds
                if reader.fds_lost or len(fds) != 6:  # we are out of descriptors
                    reader.fds_lost = False
                    reader.close_fds()
                    try:  # it must not run unguarded: the helper kills it (and reaps it)
                        self._send(wire.frame(wire.STOPPED, head))
                    except (OSError, HelperGone) as exc:
                        raise self._broken(str(exc)) from exc
                    raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))
                pidfd, stdin_w, stdout_r, stderr_r, stdout_w, stderr_w = (
                    fds.popleft() for _ in range(6)
                )
                writers = (stdout_w, stderr_w)
                return Spawned(pid, pidfd, stdin_w, stdout_r, stderr_r, writers, int(written))
            if op != wire.ERROR:
                raise self._broken(f"unexpected reply {op!r} to a spawn")
            code, strerror, filename, message = marshal.loads(data)
            if message == wire.UNSUPPORTED:
                raise self._broken("it cannot spawn in a new session here")
        if code:
            raise OSError(code, strerror, filename)
        raise ValueError(message)

    def has_status(self, pid: int) -> bool:
        """Whether hook child ``pid``'s exit status has been read already (so it exited)."""
        return pid in self._statuses

    def exit_status(self, pid: int) -> int | None:
        """The wait status of hook child ``pid``, which has exited (its pidfd said so): the
        helper pushes it as it sees the exit, so it is here already or about to be. None:
        the helper could not tell."""
        with self._lock:
            if self._gone is not None:
                raise HelperGone(self._gone)
            deadline = time.monotonic() + REPLY_TIMEOUT_S
            try:
                while pid not in self._statuses:
                    message = self._next(deadline, pushed=True)
                    if message is not None:
                        raise HelperGone(f"unexpected {message[0]!r} from the watchdog helper")
            except (OSError, HelperGone) as exc:
                raise self._broken(str(exc)) from exc
            return self._statuses.pop(pid)

    def signal(self, pid: int, sig: int) -> None:
        """Have the helper signal hook ``pid``'s group -- only while it has not reaped it, so
        the group id cannot have been recycled (we may not signal it ourselves: not ours)."""
        self._tell(wire.frame(wire.SIGNAL, b"%d:%d" % (pid, sig)))

    def stopped(self, pid: int) -> None:
        """We stopped hook ``pid``: the helper SIGKILLs its group (if not yet reaped) and kills
        every descendant it left, wherever it went (and finished runs' orphans)."""
        self._tell(wire.frame(wire.STOPPED, b"%d" % pid))

    def close_all(self) -> None:
        """Engine close: the helper kills every descendant it has."""
        self._tell(wire.frame(wire.CLOSE))

    def write_file(self, path: str, data: bytes) -> None:
        """Have the helper create the payload file ``path`` (0600, exclusively, not through a
        symlink) holding ``data``; it removes it on :meth:`remove_file`, or if we die first.
        Raises the OSError the write raised (naming the path); a broken helper
        :class:`HelperGone`."""
        with self._lock:
            op, reply = self._call(wire.frame(wire.WRITE, marshal.dumps((path, data))))
            if op == wire.WROTE:
                return
            if op != wire.ERROR:
                raise self._broken(f"unexpected reply {op!r} to a file write")
        code, strerror, filename, _ = marshal.loads(reply)
        raise OSError(code, strerror, filename)

    def remove_file(self, path: str) -> None:
        """Have the helper remove a payload file (a message, no reply). Never raises."""
        self._tell(wire.frame(wire.REMOVE, os.fsencode(path)))

    def track_file(self, path: str, present: bool) -> None:
        """Register (``present``) or release a payload file the helper removes if we die.
        Thread-safe; never raises."""
        op = wire.GUARD if present else wire.RELEASE
        self._tell(wire.frame(op, os.fsencode(path)))

    def escapees_killed(self) -> int:
        """Processes the helper killed as escapees so far (its reports, read without waiting)."""
        with self._lock:
            if self._gone is None:
                try:
                    while (message := self._next(None)) is not None:
                        log.warning("watchdog helper sent %r unasked", message[0])
                except (OSError, HelperGone) as exc:
                    self._broken(str(exc))
        return self._kills

    # -- the wire -------------------------------------------------------------------------------

    def _tell(self, data: bytes) -> None:
        with self._lock:
            if self._gone is not None:
                return
            try:
                self._send(data)
            except (OSError, HelperGone) as exc:
                self._broken(str(exc))

    def _call(self, data: bytes, fds: Sequence[int] = ()) -> tuple[bytes, bytes]:
        """Send a request and wait for its reply (the lock held)."""
        if self._gone is not None:
            raise HelperGone(self._gone)
        try:
            self._send(data, fds)
            return self._reply()
        except OSError as exc:
            raise self._broken(str(exc)) from exc
        except HelperGone as exc:
            raise self._broken(str(exc)) from exc

    def _send(self, data: bytes, fds: Sequence[int] = ()) -> None:
        view = memoryview(data)
        try:
            if fds:  # the descriptors go with the first byte
                rights = array.array("i", fds).tobytes()
                view = view[self._sock.sendmsg([view], [(SOL_SOCKET, SCM_RIGHTS, rights)]) :]
            while view:
                view = view[self._sock.send(view) :]
        except BlockingIOError:  # the send timeout: the helper stopped reading
            raise HelperGone(
                f"the watchdog helper took no request for {REPLY_TIMEOUT_S:g} s"
            ) from None

    def _reply(self) -> tuple[bytes, bytes]:
        message = self._next(time.monotonic() + REPLY_TIMEOUT_S)
        assert message is not None
        return message

    def _next(self, deadline: float | None, pushed: bool = False) -> tuple[bytes, bytes] | None:
        """The next frame that is a reply; pushed ones (exit statuses, kill counts) are
        recorded on the way, and with ``pushed`` end the wait (None). Waits until
        ``deadline``; a None deadline: only for what is there already (else None)."""
        while True:
            message = self._reader.next()
            if message is not None:
                op, body = message
                if op == wire.STATUS:
                    pid, _, status = body.partition(b":")
                    self._statuses[int(pid)] = int(status) if status else None
                elif op == wire.KILLS:
                    self._kills = max(self._kills, int(body))
                else:
                    return message
                if pushed:
                    return None
                continue
            try:
                if not self._reader.fill(0 if deadline is not None else socket.MSG_DONTWAIT):
                    raise HelperGone("the watchdog helper exited")
            except BlockingIOError:  # nothing there (MSG_DONTWAIT), or the receive timeout
                if deadline is None:
                    return None
                raise HelperGone(
                    f"the watchdog helper did not answer within {REPLY_TIMEOUT_S:g} s"
                ) from None
            if deadline is not None and time.monotonic() > deadline:
                raise HelperGone(f"the watchdog helper did not answer within {REPLY_TIMEOUT_S:g} s")

    def _broken(self, why: str) -> HelperGone:
        """Give the helper up (the lock held): closing our end makes it kill what it guards."""
        if self._gone is None:
            self._gone = why
            log.error(
                "watchdog helper %d is broken (%s): hooks now start in this process, and "
                "are not killed if it dies",
                self.pid,
                why,
            )
            self._close()
            if self.on_broken is not None:
                self.on_broken()
        return HelperGone(why)

    def _close(self) -> None:
        # Trio only ever waited on this socket in _until_ready, so no task can be waiting now.
        if not self._closed:
            self._closed = True
            self._sock.close()
            self._reader.close_fds()

    # -- the end --------------------------------------------------------------------------------

    async def stop(self) -> None:
        """Close the socket (the helper kills what is left, removes payload files, exits) and
        wait for it, bounded; kill it if it hangs. Shielded."""
        with trio.CancelScope(shield=True):
            with self._lock:
                if self._gone is None:
                    self._gone = "stopped"
                self._close()
            with trio.move_on_after(STOP_TIMEOUT_S):
                await self.process.wait()
            if self.process.returncode is None:
                log.warning("watchdog helper %d did not exit; killing it", self.pid)
                self.process.kill()
                with trio.move_on_after(STOP_TIMEOUT_S):
                    await self.process.wait()
