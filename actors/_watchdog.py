"""The host-death watchdog, and the run-marker scan it shares with the reaper (DESIGN §4).

One small helper process per engine, started by :mod:`triohooks.actors.reaper` as
``python -I -S _watchdog.py <engine-id>`` with the read end of a pipe as its stdin. The engine
writes one line per hook process group: ``+<pgid>`` once spawned, ``-<pgid>`` once reaped (the
watchdog sleeps in poll() for POLLHUP only, so these writes never wake it; it empties the pipe
once a second). When the engine's end closes -- on a clean close, or because the host died, even
by SIGKILL, and the kernel closed it -- the watchdog kills every group still listed (SIGTERM, a
short grace, SIGKILL) and every process that carries this engine's run marker (descendants that
left their group with ``setsid``), then exits 0.

Every hook process inherits ``TRIOHOOKS_RUN=<engine-id>:<run-no>``; :func:`kill_marked` finds
such processes through ``/proc/<pid>/environ`` and signals them through a pidfd opened *before*
the marker is re-checked, so a recycled pid is never hit.

Owns: the watchdog loop and the marker scan. Must not: import anything outside the standard
library (it starts in a bare interpreter, fast), read anything but its stdin, or outlive its
EOF. Linux only (pidfds, /proc).
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time
from collections.abc import Callable, Iterable, Iterator

#: The environment variable every hook process carries: ``<engine-id>:<run-no>``.
RUN_VAR = "TRIOHOOKS_RUN"
#: How long a group gets between SIGTERM and SIGKILL when the host is gone.
TERM_GRACE_S = 0.1
#: How often the idle watchdog empties its pipe (messages never wake it).
DRAIN_INTERVAL_MS = 1000
#: Escapees can fork while we scan; a few passes catch the stragglers.
SCAN_PASSES = 3


def run_marker(engine_id: str, run_no: int) -> str:
    return f"{engine_id}:{run_no}"


def _run_of(pid: int, key: bytes) -> int | None:
    """The run number in ``pid``'s marker if it names our engine (``key``), else None."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read()
    except OSError:  # gone, or not ours to read
        return None
    at = env.find(key)
    while at > 0 and env[at - 1] != 0:  # must start an entry, not end another one
        at = env.find(key, at + 1)
    if at < 0:
        return None
    end = env.find(b"\0", at)
    value = env[at + len(key) : end if end >= 0 else len(env)]
    return int(value) if value.isdigit() else None


def marked_processes(engine_id: str) -> Iterator[tuple[int, int]]:
    """``(pid, run_no)`` of every live process we can see that carries this engine's marker."""
    key = f"{RUN_VAR}={engine_id}:".encode()
    me = os.getpid()
    try:
        names = os.listdir("/proc")
    except OSError:  # no /proc here: nothing we can find
        return
    for name in names:
        if not name.isdigit() or int(name) == me:
            continue
        run = _run_of(int(name), key)
        if run is not None:
            yield int(name), run


def kill_marked(engine_id: str, spare: Callable[[int], bool] | None = None) -> int:
    """SIGKILL every process carrying this engine's marker whose run is not ``spare``d.

    Blocking (reads /proc); the reaper runs it in a worker thread. Returns how many distinct
    processes were signalled.
    """
    key = f"{RUN_VAR}={engine_id}:".encode()
    killed: set[int] = set()
    for _ in range(SCAN_PASSES):
        hits = [pid for pid, run in marked_processes(engine_id) if spare is None or not spare(run)]
        fresh = [pid for pid in hits if _kill_verified(pid, key, spare)]
        killed.update(fresh)
        if not fresh:
            break
    return len(killed)


def _kill_verified(pid: int, key: bytes, spare: Callable[[int], bool] | None) -> bool:
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return False
    try:
        # The pidfd pins the process; re-reading the marker now proves the pid was not recycled.
        run = _run_of(pid, key)
        if run is None or (spare is not None and spare(run)):
            return False
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        return True
    except OSError:
        return False
    finally:
        os.close(pidfd)


def kill_groups(pgids: Iterable[int]) -> None:
    """SIGTERM each group, a short grace if any existed, then SIGKILL each."""
    alive = [pgid for pgid in pgids if _signal_group(pgid, signal.SIGTERM)]
    if alive:
        time.sleep(TERM_GRACE_S)
        for pgid in alive:
            _signal_group(pgid, signal.SIGKILL)


def _signal_group(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
    except OSError:  # ProcessLookupError: the group is gone; PermissionError: not ours
        return False
    return True


def read_groups(fd: int) -> set[int]:
    """Follow ``+pgid`` / ``-pgid`` lines on ``fd`` until its writer is gone; return the groups
    still live.

    We poll for POLLHUP only, so the engine's writes never wake us (no cost per hook run); the
    pipe is drained every ``DRAIN_INTERVAL_MS`` and at the end.
    """
    groups: set[int] = set()
    pending = b""
    os.set_blocking(fd, False)
    poller = select.poll()
    poller.register(fd, 0)  # 0: only POLLHUP / POLLERR are reported
    while True:
        hung_up = bool(poller.poll(DRAIN_INTERVAL_MS))
        while True:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                break
            except OSError:
                chunk = b""
            if not chunk:
                return groups
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                if line[:1] == b"+" and line[1:].isdigit():
                    groups.add(int(line[1:]))
                elif line[:1] == b"-" and line[1:].isdigit():
                    groups.discard(int(line[1:]))
        if hung_up:  # POLLERR without EOF: nothing sensible left to wait for
            return groups


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: _watchdog.py ENGINE_ID", file=sys.stderr)
        return 2
    # The terminal's Ctrl-C is for the host; we must survive it to clean up after the host.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    kill_groups(read_groups(0))
    kill_marked(argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
