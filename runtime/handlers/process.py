"""The process contract between the runners and the process guard.

A runner describes the process it wants (:class:`ProcessSpec`) and gets back exactly one
:class:`ProcessResult`; a :class:`Spawner` (in the engine, :class:`triohooks.actors.reaper.Reaper`)
does the starting, guarding, killing and reaping. Plain data and a Protocol: nothing here runs a
process, so the handlers never import the actor that does.
"""

from __future__ import annotations

from typing import Literal, Protocol

import msgspec


class ProcessSpec(msgspec.Struct, frozen=True, kw_only=True):
    """What to run, where, with what, for how long."""

    #: ``("bash", "-c", command)`` or a program's argv.
    argv: tuple[str, ...]
    cwd: str
    #: The full environment; None inherits ``os.environ``. ``TRIOHOOKS_RUN`` is always added.
    env: dict[str, str] | None = None
    stdin: bytes = b""
    timeout_s: float
    #: Per stream.
    output_cap: int = 100 * 1024
    #: "truncate": keep the first ``output_cap`` bytes, drain and count the rest.
    #: "error": more than ``output_cap`` bytes on either stream kills the group (``overflow``).
    overflow: Literal["truncate", "error"] = "truncate"
    label: str = ""
    #: > 0: a warm worker answers (at most this many per pool; docs/hook-protocol.md), fed
    #: ``stdin`` as one request line; ``env`` is then the worker process's environment.
    worker: int = 0
    #: The hook the worker belongs to (with argv, cwd and env it keys the pool).
    worker_key: str = ""
    #: A file the process reads (the JSON dialect's payload), ``(path, contents)``: the
    #: spawner creates it (0600, exclusively: never through an existing file or symlink)
    #: before the process starts and removes it once the process has exited. The caller
    #: picks an unpredictable path; one-shot runs only (not ``worker``).
    payload_file: tuple[str, bytes] | None = None


ProcessStatus = Literal[
    "exited", "signaled", "timeout", "killed", "spawn_failed", "overflow", "worker_error"
]


class ProcessResult(msgspec.Struct, frozen=True, kw_only=True):
    """How one hook process ended and what it said. Exactly one per :meth:`Reaper.run`."""

    #: ``killed`` = by us, on cancel or close; ``signaled`` = by a signal we did not send;
    #: ``worker_error`` = a warm worker crashed or broke the line protocol (it was killed).
    status: ProcessStatus
    exit_code: int | None = None
    signal: int | None = None
    duration_ms: float = 0.0
    #: Decoded as UTF-8 with replacement, at most ``output_cap`` bytes' worth.
    stdout: str = ""
    stderr: str = ""
    #: Total bytes seen on each stream, including what was discarded.
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    truncated: bool = False
    #: Human text for timeout / spawn_failed / overflow / killed / signaled.
    error: str | None = None
    pid: int | None = None

    @property
    def internal(self) -> bool:
        """The run ended because of us, not the hook (``killed``: the engine closed under
        it, or the process guard lost it, or it would not die): it fails closed."""
        return self.status == "killed"


class Spawner(Protocol):
    """Runs one hook process to its end (the reaper), with its ``payload_file`` in place
    while it runs. A checkpoint; on cancel the process group is killed and reaped (and the
    file removed) before ``Cancelled`` propagates."""

    async def run(self, spec: ProcessSpec) -> ProcessResult: ...

    async def write_payload(self, path: str, data: bytes) -> None:
        """Create a payload file outside of a spawn (a warm worker's request): 0600,
        exclusively, not through a symlink, never by blocking the loop; removed if the host
        dies first. Raises the OSError of the write."""
        ...

    async def remove_payload(self, path: str) -> None:
        """Remove a file :meth:`write_payload` made (shielded: it is removed even on cancel)."""
        ...
