"""Shared fixtures: every test is checked for leftover processes.

Each test session exports a unique marker in the environment; hook processes inherit it (both
dialects pass the user's environment on), so a process that escaped its group with ``setsid``
and was re-parented away from us is still found by scanning ``/proc`` for the marker.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator

import psutil
import pytest

MARKER_VAR = "TRIOHOOKS_TEST_MARKER"
MARKER = uuid.uuid4().hex
os.environ[MARKER_VAR] = MARKER
# A relay or a fire that finds no server starts one in the background; the tests that want
# that say so.
os.environ["TRIOHOOKS_NO_AUTOSTART"] = "1"
# The system tier (docs/configuration.md#the-system-tier) is an empty directory of this session's
# own: a developer machine's /etc/triohooks never changes a test's result. Tests of the tier set
# TRIOHOOKS_SYSTEM_DIR to a directory under their tmp_path.
SYSTEM_DIR = tempfile.mkdtemp(prefix="triohooks-test-system-")
os.environ["TRIOHOOKS_SYSTEM_DIR"] = SYSTEM_DIR
atexit.register(shutil.rmtree, SYSTEM_DIR, ignore_errors=True)


def _marked_processes() -> list[psutil.Process]:
    """Live processes carrying this session's marker (hooks that left our process tree).
    On Linux each ``/proc/<pid>/environ`` is searched for the marker's bytes (a zombie's is
    empty): about a tenth of psutil parsing every environment, paid twice per test."""
    me = os.getpid()
    if not os.path.isdir("/proc/self"):
        found: list[psutil.Process] = []
        for proc in psutil.process_iter(["pid", "status"]):
            if proc.pid == me or proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            try:
                if proc.environ().get(MARKER_VAR) == MARKER:
                    found.append(proc)
            except (psutil.Error, OSError):
                continue
        return found
    needle = f"{MARKER_VAR}={MARKER}".encode()
    hits = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as environ:
                if needle in environ.read():
                    hits.append(psutil.Process(int(name)))
        except (OSError, psutil.Error):  # gone, or not ours to read
            continue
    return hits


def _live_children() -> list[psutil.Process]:
    alive = []
    for child in psutil.Process().children(recursive=True):
        try:
            if child.status() != psutil.STATUS_ZOMBIE:
                alive.append(child)
        except psutil.NoSuchProcess:
            continue
    return alive


def leftover_processes(
    grace: float = 3.0, before: frozenset[int] = frozenset()
) -> list[psutil.Process]:
    """Processes this test started (alive now, not in ``before``) that are still alive after
    ``grace`` seconds.

    The wait ends as soon as none is left, so it costs nothing when all is well -- a process
    that was there before the test (a module's serve, say) is not waited for; the margin is
    for a killed group still being torn down by a loaded machine (tests that promise a
    deadline assert it themselves).
    """
    deadline = time.monotonic() + grace
    while True:
        left = {p.pid: p for p in _live_children() + _marked_processes() if p.pid not in before}
        if not left or time.monotonic() >= deadline:
            return list(left.values())
        time.sleep(0.02)


@pytest.fixture(autouse=True)
def no_leaked_processes(request: pytest.FixtureRequest) -> Iterator[None]:
    before = frozenset(p.pid for p in _live_children() + _marked_processes())
    yield
    if request.node.get_closest_marker("allow_leaks"):
        return
    left = leftover_processes(before=before)
    if left:
        desc = []
        for p in left:
            try:
                desc.append(f"{p.pid} {' '.join(p.cmdline())[:80]}")
            except psutil.Error:
                desc.append(str(p.pid))
            try:
                p.kill()
            except psutil.Error:
                pass
        pytest.fail("test left processes behind:\n  " + "\n  ".join(desc))


@pytest.fixture(params=["linux", "posix"])
def guard_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs a test on each process-guard backend (``TRIOHOOKS_PROCESS_GUARD``): the linux one
    (watchdog helper, subreaper) and the posix one (what macOS and the BSDs get), both on this
    machine. A suite opts in with ``pytest.mark.usefixtures("guard_backend")``; whatever it
    opens through ``open_guard`` or ``HookEngine.open`` (in this process or a child) then runs
    on that backend."""
    backend: str = request.param
    if backend == "posix" and request.node.get_closest_marker("linux_guard"):
        pytest.skip("about the linux backend's watchdog helper and subreaper (platforms.md)")
    monkeypatch.setenv("TRIOHOOKS_PROCESS_GUARD", backend)
    return backend
