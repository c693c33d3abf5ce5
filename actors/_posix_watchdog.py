"""The posix backend's host-death watchdog: one small process per engine (standard library plus
psutil), started by :mod:`triohooks.actors.posix_guard`.

The engine writes lines on the watchdog's stdin: ``+<pgid>`` / ``-<pgid>`` as hook groups
start and are reaped, ``f<hex path>`` / ``F<hex path>`` as payload files are written and
removed. When its stdin reaches EOF -- the engine closed it, or the engine died, even by
SIGKILL -- it SIGTERMs every group still registered, waits a short grace, SIGKILLs them, kills
every process still carrying the engine's run marker (whatever group it went to), removes the
payload files still registered, and exits. It is not a subreaper (macOS has none): a process
that left its group *and* dropped the marker is beyond it.

Run as ``python -I -S _posix_watchdog.py ENGINE_ID [SYS_PATH...]`` (the paths to find psutil).
"""

import os
import signal
import sys
import time

#: Between SIGTERM and SIGKILL of the groups left when the engine is gone.
TERM_GRACE_S = 0.1


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
    try:
        for line in sys.stdin.buffer:
            op, arg = line[:1], line[1:].strip()
            if op == b"+":
                groups.add(int(arg))
            elif op == b"-":
                groups.discard(int(arg))
            elif op == b"f":
                files.add(bytes.fromhex(arg.decode()).decode("utf-8", "surrogateescape"))
            elif op == b"F":
                files.discard(bytes.fromhex(arg.decode()).decode("utf-8", "surrogateescape"))
    except (OSError, ValueError):
        pass
    finally:
        clean_up(engine_id, groups, files)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
