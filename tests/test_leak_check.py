"""The suite's leak check (tests/conftest.py) finds what a test leaves behind: a child still
running, and a process that left our tree (double fork, ``setsid``) but carries the session's
marker. Each case starts one, asks the check, then kills it by pid."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from tests.conftest import _live_children, _marked_processes
from tests.helpers import running, unique_sleep


def test_a_marked_process_that_left_our_tree_is_found() -> None:
    words, argv = unique_sleep()
    # A double fork into its own session: re-parented away from us, the marker kept.
    subprocess.run(["bash", "-c", f"( setsid {words} & ) &"], check=True, timeout=10)
    deadline = time.monotonic() + 10
    while not running(argv):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    [escaped] = running(argv)
    try:
        assert escaped.pid not in {p.pid for p in _live_children()}
        assert escaped.pid in {p.pid for p in _marked_processes()}
    finally:
        os.kill(escaped.pid, signal.SIGKILL)


def test_an_unmarked_process_is_not_ours() -> None:
    _, argv = unique_sleep()
    env = {k: v for k, v in os.environ.items() if k != "TRIOHOOKS_TEST_MARKER"}
    child = subprocess.Popen(
        [sys.executable, "-c", f"import os; os.execvp('sleep', {argv!r})"], env=env
    )
    try:
        deadline = time.monotonic() + 10
        while not running(argv):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert child.pid in {p.pid for p in _live_children()}  # ours as a child
        assert child.pid not in {p.pid for p in _marked_processes()}  # but not marked
    finally:
        child.kill()
        child.wait(timeout=10)
