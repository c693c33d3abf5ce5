"""The process guard's one interface, and which backend stands behind it.

Two backends keep the same promises as far as their OS lets them (docs/platforms.md):

- ``posix`` (:mod:`triohooks.actors.posix_guard`): what macOS and the BSDs offer -- trio's own
  process API (kqueue on macOS), each hook in its own session and group, group kills, the
  run-marker sweep, and a small host-death watchdog process; an escapee that left the group
  *and* dropped the marker is found only while its leader is stopped unreaped.
- ``linux`` (:mod:`triohooks.actors.reaper`): the posix backend plus a child-subreaper watchdog
  helper, which spawns every hook (pidfds watch them in the helper); no escapee survives, even a
  double fork that drops its marker. Without the helper (``watchdog=False``, or while a new
  one starts) hooks run through the posix backend's code.

:func:`backend` picks ``linux`` when every API it needs is there (``os.pidfd_open``,
``os.waitid``, ``signal.pidfd_send_signal``, ``socket.MSG_CMSG_CLOEXEC``, ``select.epoll``),
else ``posix``; ``TRIOHOOKS_PROCESS_GUARD=linux|posix`` forces one. Windows has neither: the
engine refuses to open, saying so.

Also here, shared by both: :class:`Capture` (an output stream kept up to its cap, every byte
counted) and :func:`process_result` (how a finished run becomes its
:class:`~triohooks.handlers.process.ProcessResult`: the one rule for statuses).
"""

from __future__ import annotations

import os
import select
import signal
import socket
import sys
from collections.abc import Mapping
from typing import Final, Literal, Protocol

import msgspec

from triohooks.handlers.process import ProcessResult, ProcessSpec, ProcessStatus

Backend = Literal["linux", "posix"]
BACKENDS: Final[tuple[Backend, ...]] = ("linux", "posix")
#: Forces a backend (``linux`` or ``posix``) instead of the one the OS offers.
BACKEND_VAR: Final = "TRIOHOOKS_PROCESS_GUARD"
#: What the linux backend needs that macOS and the BSDs lack.
LINUX_APIS: Final = (
    (os, "pidfd_open"),
    (os, "waitid"),
    (signal, "pidfd_send_signal"),
    (socket, "MSG_CMSG_CLOEXEC"),
    (select, "epoll"),
)


#: The error of a run the guard ended because it closed (or that came after it closed).
CLOSED_ERROR: Final = "killed: reaper closed"

# The timings both backends keep (docs/security.md, "Processes").
#: Between SIGTERM and SIGKILL to a hook's group.
TERM_GRACE_S: Final = 0.1
#: How long pipes may stay open after the direct child exited and its group was killed.
EOF_GRACE_S: Final = 0.05
#: Upper bound on shielded cleanup (kill + reap) of one run.
REAP_BUDGET_S: Final = 2.0
#: The sweep for marked processes of finished runs runs at most this often.
SWEEP_INTERVAL_S: Final = 0.25
#: One read from a hook's pipe.
READ_CHUNK: Final = 65536


class GuardUnavailable(RuntimeError):
    """No process guard can run here (Windows; a forced backend whose APIs are missing)."""


def missing_linux_apis() -> list[str]:
    return [f"{m.__name__}.{name}" for m, name in LINUX_APIS if not hasattr(m, name)]


def backend(environ: Mapping[str, str] | None = None) -> Backend:
    """The backend this process uses: forced by :data:`BACKEND_VAR`, else linux when its APIs
    are all there, else posix. Raises :class:`GuardUnavailable` where neither can run."""
    env = os.environ if environ is None else environ
    if os.name != "posix":
        raise GuardUnavailable(
            f"triohooks cannot guard hook processes on {sys.platform}: it needs process groups "
            "and sessions (Linux, macOS, the BSDs); Windows would need a Job Object backend"
        )
    forced = env.get(BACKEND_VAR, "").strip()
    if forced and forced not in BACKENDS:
        raise GuardUnavailable(f"{BACKEND_VAR}={forced!r}: expected one of {', '.join(BACKENDS)}")
    missing = missing_linux_apis()
    if forced == "linux" and missing:
        raise GuardUnavailable(f"{BACKEND_VAR}=linux, but this Python lacks {', '.join(missing)}")
    if forced:
        return forced
    return "posix" if missing else "linux"


def describe(environ: Mapping[str, str] | None = None) -> str:
    """One line for ``doctor``: the active backend and why."""
    try:
        chosen = backend(environ)
    except GuardUnavailable as exc:
        return f"process guard: none ({exc})"
    env = os.environ if environ is None else environ
    why = f"forced by {BACKEND_VAR}" if env.get(BACKEND_VAR, "").strip() else "what this OS offers"
    if chosen == "linux":
        return f"process guard: linux (subreaper watchdog helper, pidfds; {why})"
    missing = missing_linux_apis()
    lacks = f"; no {', '.join(missing)}" if missing else ""
    return f"process guard: posix (process groups, marker sweep, host-death watchdog; {why}{lacks})"


class GuardStats(msgspec.Struct, frozen=True, kw_only=True):
    spawned: int
    spawn_failures: int
    #: Groups we killed: timeouts, overflows, cancels and close.
    killed: int
    timeouts: int
    overflows: int
    #: Processes found by their marker after leaving their group.
    escapees_killed: int
    live: int


class WorkerProcess(Protocol):
    """A warm worker's process, as a backend's ``start_worker`` hands it out: numbered, marked
    and tracked by the guard (counted in ``live``, killed on close and when the host dies)
    until :meth:`reap`. Its pipe ends are ours and non-blocking; the caller serves them."""

    @property
    def pid(self) -> int: ...

    #: Our end of its stdin (None once closed), of its stdout and of its stderr.
    @property
    def stdin(self) -> int | None: ...

    @property
    def stdout(self) -> int: ...

    @property
    def stderr(self) -> int: ...

    #: Readable once the process exited.
    @property
    def exit_fd(self) -> int: ...

    #: The guard's close killed it (a request then ends ``killed``).
    @property
    def closed(self) -> bool: ...

    #: Its exit status once known (negative: the signal), as ``Popen.returncode``.
    @property
    def returncode(self) -> int | None: ...

    def close_stdin(self) -> None:
        """EOF on its stdin (a worker exits at EOF)."""

    def signal(self, sig: int) -> None:
        """Signal its process group while it is alive (never a recycled group)."""

    async def stop(self) -> None:
        """SIGTERM its group, a short grace, SIGKILL, and kill its escaped descendants; it
        stays unreaped. A checkpoint; call it shielded."""

    async def reap(self) -> None:
        """Reap it (bounded), stop tracking it and close its pipes and exit descriptor."""


class ProcessGuard(Protocol):
    """What the engine needs of a process guard (both backends provide it)."""

    #: Part of every hook's ``TRIOHOOKS_RUN`` marker.
    engine_id: str

    @property
    def backend(self) -> Backend: ...

    @property
    def live(self) -> int: ...

    @property
    def watchdog_pid(self) -> int | None: ...

    def stats(self) -> GuardStats: ...

    async def run(self, spec: ProcessSpec) -> ProcessResult: ...

    async def write_payload(self, path: str, data: bytes) -> None: ...

    async def remove_payload(self, path: str, *, wait: bool = False) -> None: ...

    def retire_workers(self) -> None: ...

    async def start_worker(
        self, spec: ProcessSpec, extra_env: Mapping[str, str] | None = None
    ) -> WorkerProcess | ProcessResult: ...

    async def kill_all(self) -> int: ...


class Capture:
    """One output stream: the first ``cap`` bytes kept, every byte counted."""

    __slots__ = ("cap", "chunks", "kept", "total")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.chunks: list[bytes] = []
        self.kept = 0
        self.total = 0

    def add(self, chunk: bytes | bytearray) -> None:
        self.total += len(chunk)
        room = self.cap - self.kept
        if room > 0:
            piece = bytes(chunk[:room])
            self.chunks.append(piece)
            self.kept += len(piece)

    def text(self) -> str:
        return b"".join(self.chunks).decode("utf-8", errors="replace")


def unfinished(top: int, live: frozenset[int], run_no: int) -> bool:
    """Whether a run was spawning, running, or not yet numbered when a marker sweep began
    (``top``: the last run number then; ``live``: the runs then live): its processes are
    spared."""
    return run_no > top or run_no in live


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def process_result(
    spec: ProcessSpec,
    *,
    returncode: int | None,
    out: Capture,
    err: Capture,
    duration_ms: float,
    pid: int | None,
    overflowed: bool = False,
    timed_out: bool = False,
    closed: bool = False,
    lost: bool = False,
) -> ProcessResult:
    """The ProcessResult of a finished (or given up) run: overflow, then timeout, then a lost
    status, then the exit. ``returncode`` as Popen has it (negative: the signal). A run that
    ends ``killed`` was ended by us (a close, a lost status, a process that would not die):
    ``internal``, so it fails closed."""
    status: ProcessStatus = "killed"
    exit_code = signum = error = None
    if overflowed:
        status, error = "overflow", f"hook output exceeded {spec.output_cap} bytes"
    elif timed_out and not closed:
        status, error = "timeout", f"timed out after {spec.timeout_s:g} s"
    elif lost:
        error = "hook exit status lost (the watchdog helper is gone)"
    elif returncode is None:  # stuck in the kernel past our budget
        error = "hook did not die after SIGKILL"
    elif returncode >= 0:
        status, exit_code = "exited", returncode
    elif closed:
        error = CLOSED_ERROR
    else:
        signum = -returncode
        status, error = "signaled", f"killed by {signal_name(signum)}"
    return ProcessResult(
        status=status,
        exit_code=exit_code,
        signal=signum,
        duration_ms=duration_ms,
        stdout=out.text(),
        stderr=err.text(),
        stdout_bytes=out.total,
        stderr_bytes=err.total,
        truncated=out.total > out.cap or err.total > err.cap,
        error=error,
        pid=pid,
    )
