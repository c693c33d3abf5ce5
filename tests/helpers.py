"""Small helpers shared by tests: writing config files of both dialects, running the CLI."""

from __future__ import annotations

import json
import os
import random
import resource
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil
import trio

#: ``python -m triohooks``: the real command line.
CLI_MODULE = ("-m", "triohooks")


def run_cli(
    *args: str,
    config_dir: Path,
    state_dir: Path,
    cwd: Path,
    stdin: str = "",
    timeout: float = 60,
    program: Sequence[str] = CLI_MODULE,
    memory_limit: int | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the CLI in a child process with its own config and state dirs; ``program`` is what
    follows the interpreter (``("-c", code)`` runs a patched CLI); ``memory_limit`` (bytes)
    caps the child's address space, so a runaway read fails fast instead of eating the host."""

    def limit() -> None:  # pragma: no cover - runs in the child
        assert memory_limit is not None
        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))

    env = {
        **os.environ,
        "TRIOHOOKS_CONFIG_DIR": str(config_dir),
        "TRIOHOOKS_STATE_DIR": str(state_dir),
    }
    return subprocess.run(
        [sys.executable, *program, *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=timeout,
        preexec_fn=limit if memory_limit is not None else None,
        check=False,
    )


def write_json_hooks(directory: Path, hooks: list[dict[str, Any]], **top: Any) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "hooks.json"
    path.write_text(json.dumps({"hooks": hooks, **top}, indent=2))
    return path


def write_toml_hooks(directory: Path, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "hooks.toml"
    path.write_text(text)
    return path


def bash_hook(
    hook_id: str | None, command: str, event: str = "pre_tool_use", **extra: Any
) -> dict[str, Any]:
    spec: dict[str, Any] = {"event": event, "executor": {"type": "bash", "command": command}}
    if hook_id is not None:
        spec["id"] = hook_id
    spec.update(extra)
    return spec


#: The Outcome fields of docs/design.md §7, and those of each entry of its ``runs``.
OUTCOME_KEYS = frozenset(
    {
        "event",
        "blocked",
        "decision",
        "reason",
        "message_for_model",
        "user_message",
        "args",
        "prompt",
        "result",
        "error",
        "additional_context",
        "system_messages",
        "continue",
        "queued",
        "runs",
    }
)
RUN_KEYS = frozenset({"hook", "source", "dialect", "outcome", "exit_code", "duration_ms", "error"})


def unique_sleep() -> tuple[str, list[str]]:
    """``sleep 300.<random>``: the shell words and the argv a live one has."""
    seconds = f"300.{random.randrange(10**8, 10**9)}"
    return f"sleep {seconds}", ["sleep", seconds]


def running(argv: list[str]) -> list[psutil.Process]:
    """Live processes (zombies excluded) whose argv is exactly ``argv``."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if proc.info["cmdline"] == argv and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc)
    return found


async def survivors_after(argv: list[str], seconds: float = 2.0) -> list[psutil.Process]:
    """Whatever still runs ``argv`` once ``seconds`` have passed; returns as soon as none does
    (the state is polled, never slept on)."""
    with trio.move_on_after(seconds):
        while running(argv):
            await trio.sleep(0.02)
    return running(argv)


def triohooks_cli(
    *argv: str, cwd: Path, config_dir: Path, timeout: float = 120, **env_vars: str
) -> subprocess.CompletedProcess[str]:
    """``python -m triohooks ARGV`` as a user runs it, with the global config dir (and the
    state dir under it) set by the environment, and ``env_vars`` (``HOME`` ...)."""
    env = {
        **os.environ,
        "TRIOHOOKS_CONFIG_DIR": str(config_dir),
        "TRIOHOOKS_STATE_DIR": str(config_dir / "s"),
        **env_vars,
    }
    return subprocess.run(
        [sys.executable, "-m", "triohooks", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def installed_cli(
    *argv: str, cwd: Path, config_dir: Path, home: Path, state_dir: Path
) -> subprocess.CompletedProcess[str]:
    """:func:`triohooks_cli` with its own ``HOME`` and state dir, and triohooks installed the
    way an agent finds it (``triohooks-relay`` on PATH, which a project's catch-all runs)."""
    return triohooks_cli(
        *argv,
        cwd=cwd,
        config_dir=config_dir,
        HOME=str(home),
        TRIOHOOKS_STATE_DIR=str(state_dir),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    )


async def read_line_with(stream: Any, seen: bytearray, needle: str) -> str:
    """Read the trio receive ``stream`` into ``seen`` until a whole line holding ``needle``
    arrived; that line, stripped."""
    while True:
        for line in seen.decode().splitlines(keepends=True):
            if needle in line and line.endswith("\n"):
                return line.strip()
        chunk = await stream.receive_some()
        assert chunk, f"the stream ended before {needle!r}: {seen.decode()}"
        seen += chunk


def count_decodes(monkeypatch: Any, body: bytes) -> list[bytes]:
    """From now on (until ``monkeypatch`` undoes it), every ``msgspec.json.decode`` of exactly
    ``body`` is appended to the list returned: how often one input is decoded."""
    import msgspec

    decoded: list[bytes] = []
    decode = msgspec.json.decode

    def counting(data: Any, *args: Any, **kwargs: Any) -> Any:
        if data == body:
            decoded.append(data)
        return decode(data, *args, **kwargs)

    monkeypatch.setattr(msgspec.json, "decode", counting)
    return decoded
