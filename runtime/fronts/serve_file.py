"""``serve.json``: where a running ``triohooks serve`` says it is.

``serve`` writes it into the state directory (0700; the file 0600) while it listens: host,
port, URL, token file, pid and relay socket; it removes it at stop. ``watch`` with no URL, the
agent checks (``doctor``, ``<agent> validate``) read it here. A file whose pid is not a live
process of this user is a leftover of a serve that died, and is not believed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

import msgspec

from triohooks.config.paths import UnreadableFileError, read_regular_file

SERVE_FILE: Final = "serve.json"
#: The most ``serve.json`` may hold (it is a few hundred bytes).
MAX_BYTES: Final = 65536


def serve_info(state: Path) -> dict[str, object] | None:
    """What ``<state>/serve.json`` says, or None when there is none or it cannot be read."""
    try:
        info = msgspec.json.decode(read_regular_file(state / SERVE_FILE, MAX_BYTES))
    except (FileNotFoundError, UnreadableFileError, msgspec.DecodeError, RecursionError):
        return None
    return info if isinstance(info, dict) else None


def alive_and_ours(pid: object) -> bool:
    """Whether ``pid`` is a live process of this user."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    import psutil

    try:
        return bool(psutil.Process(pid).uids().real == os.getuid())
    except psutil.Error:
        return False


def running_serve(state: Path) -> dict[str, object] | None:
    """``serve.json``'s content when the serve it names is running, else None."""
    info = serve_info(state)
    return info if info is not None and alive_and_ours(info.get("pid")) else None
