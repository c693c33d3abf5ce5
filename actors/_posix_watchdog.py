"""The posix backend's host-death watchdog: one small process per engine (standard library plus
psutil), started by :mod:`triohooks.actors.posix_guard`.

The engine writes lines on the watchdog's stdin: ``+<pgid>`` / ``-<pgid>`` as hook groups
start and are reaped, ``f<hex path>`` / ``F<hex path>`` as payload files are written and
removed. A line does not wake the watchdog (it polls its stdin for the hang-up alone, so the
engine's writes cost no context switch); it reads what came every ``DRAIN_S``, and all of it
at EOF, before it acts. When its stdin reaches EOF -- the engine closed it, or the engine
died, even by SIGKILL -- it SIGTERMs every group still registered, waits a short grace,
SIGKILLs them, kills every process still carrying the engine's run marker (whatever group it
went to), removes the payload files still registered, and exits. It is not a subreaper (macOS
has none): a process that left its group *and* dropped the marker is beyond it.

Run as ``python -I -S _posix_watchdog.py ENGINE_ID [SYS_PATH...]`` (the paths to find psutil).
"""

import os
import select
import signal
import sys
import time

#: Between SIGTERM and SIGKILL of the groups left when the engine is gone.
TERM_GRACE_S = 0.1
#: How often the lines written meanwhile are read (so the pipe never fills); the hang-up
#: wakes the watchdog at once where poll reports it unasked (Linux), else this bounds the wait.
DRAIN_S = 0.1


def read_ready(fd: int) -> tuple[bytes, bool]:
    """What the (non-blocking) pipe holds now, and whether it reached EOF."""
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return b"".join(chunks), False
        if not chunk:
            return b"".join(chunks), True
        chunks.append(chunk)


def clean_up(engine_id: str, groups: set[int], files: set[str]) -> None:
    """The engine is gone: its hooks go with it, and so do their payload files."""
    # A sibling (the marker scan and the group kill), found on the path main() set.
    from _watchdog import kill_marked, signal_group  # type: ignore[import-not-found]

    if groups:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pgid in groups:
                signal_group(pgid, sig)
            if sig == signal.SIGTERM:
                time.sleep(TERM_GRACE_S)
    try:
        kill_marked(engine_id)
    except Exception as exc:  # psutil missing: the groups are all we could do
        print(f"triohooks posix watchdog: marker scan failed: {exc}", file=sys.stderr)
    for path in files:
        try:
            os.unlink(path)
        except OSError:
            pass


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: _posix_watchdog.py ENGINE_ID [SYS_PATH...]", file=sys.stderr)
        return 2
    # Run bare (-I: no script directory on the path): its sibling, the marker scan, by hand.
    sys.path[:0] = [os.path.dirname(os.path.abspath(__file__))]
    sys.path.extend(argv[2:])
    engine_id = argv[1]
    # The terminal's Ctrl-C is for the host; we must survive it to clean up after the host.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    groups: set[int] = set()
    files: set[str] = set()
    stdin = sys.stdin.fileno()
    try:
        os.set_blocking(stdin, False)
        poller = select.poll()
        poller.register(stdin, 0)  # the hang-up (and errors) only: a line does not wake us
        pending = b""
        eof = False
        while not eof:
            poller.poll(DRAIN_S * 1000)
            data, eof = read_ready(stdin)
            *lines, pending = (pending + data).split(b"\n")
            for line in lines:
                apply(line, groups, files)
    except (OSError, ValueError):
        pass
    finally:
        clean_up(engine_id, groups, files)
    return 0


def apply(line: bytes, groups: set[int], files: set[str]) -> None:
    """One line from the engine: a group or a payload file registered or released (a line
    that is not one raises ValueError)."""
    op, arg = line[:1], line[1:].strip()
    if op == b"+":
        groups.add(int(arg))
    elif op == b"-":
        groups.discard(int(arg))
    elif op == b"f":
        files.add(bytes.fromhex(arg.decode()).decode("utf-8", "surrogateescape"))
    elif op == b"F":
        files.discard(bytes.fromhex(arg.decode()).decode("utf-8", "surrogateescape"))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
