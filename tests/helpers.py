"""Small helpers shared by tests: writing config files of both dialects, running the CLI."""

from __future__ import annotations

import faulthandler
import io
import json
import logging
import os
import random
import resource
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil
import trio


def cli_here(
    argv: Sequence[str],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    stdin: str | bytes = b"",
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """The ``triohooks`` command's ``main`` run in this process, as ``python -m triohooks ARGV``
    would run in a child with environment ``env`` and working directory ``cwd`` (default: this
    process's), and ``stdin`` as a pipe gives it: its stdout and stderr (text) and the exit code
    the process would have (``SystemExit`` codes as the interpreter turns them into one). An
    exception ``main`` lets out -- a traceback and exit 1 in a real process -- is raised here,
    failing the test. Called from a trio test, it blocks that test's loop for the command's
    run, as waiting for a child did. A run that takes ``timeout`` seconds ends this process
    with every thread's traceback on stderr (``faulthandler``; the test fails, its worker is
    replaced): it cannot be killed alone as a hung child can, but it does not hang the suite.

    For tests whose subject is what the command says, exits with or writes, not its start-up:
    a child process costs 0.3-1 s of interpreter start and imports. What a call changes of the
    process is put back afterwards (:func:`_as_a_fresh_process`). Tests about start-up, signals,
    process lifetime, a terminal or the installed script run the real command
    (:func:`cli_process`)."""
    try:
        trio.lowlevel.current_trio_token()
    except RuntimeError:  # not in a trio run
        return _cli_here(argv, cwd, env, stdin, timeout)
    # A trio test: the command makes a trio run of its own, so it runs in a thread, which the
    # test waits for as it waited for a child process.
    done: list[subprocess.CompletedProcess[str]] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            done.append(_cli_here(argv, cwd, env, stdin, timeout))
        except BaseException as exc:  # raised in the test's thread below
            failed.append(exc)

    thread = threading.Thread(target=run, name="cli_here")
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
    return done[0]


def _cli_here(
    argv: Sequence[str],
    cwd: Path | str | None,
    env: Mapping[str, str] | None,
    stdin: str | bytes,
    timeout: float,
) -> subprocess.CompletedProcess[str]:
    data = stdin.encode() if isinstance(stdin, str) else stdin
    out, err = io.BytesIO(), io.BytesIO()
    with _as_a_fresh_process(argv, cwd, env, data, out, err) as streams:
        from triohooks.fronts.cli import main

        faulthandler.dump_traceback_later(timeout, exit=True, file=2)
        try:
            code: object = main(list(argv))
        except SystemExit as exc:  # as the interpreter ends on one
            code = exc.code
        finally:
            faulthandler.cancel_dump_traceback_later()
        if code is not None and not isinstance(code, int):
            print(code, file=sys.stderr)
            code = 1
        for stream in streams:
            stream.flush()
        said = out.getvalue().decode(), err.getvalue().decode()
    return subprocess.CompletedProcess(
        ["triohooks", *argv], 0 if code is None else code & 0xFF, *said
    )


@contextmanager
def _as_a_fresh_process(
    argv: Sequence[str],
    cwd: Path | str | None,
    env: Mapping[str, str] | None,
    stdin: bytes,
    out: io.BytesIO,
    err: io.BytesIO,
) -> Iterator[tuple[io.TextIOWrapper, ...]]:
    """For one in-process run of the CLI, what a new ``triohooks`` process would have: its
    environment, working directory and argv, standard streams that are no terminal, a root
    logger with no handler at WARNING, and the CLI's per-process cache of the terminal width
    empty. Afterwards all of it is as it was, and so are every logger's level, handlers and
    switches (loggers the run made are reset) and the signal dispositions the run changed
    (from the main thread, the one place they can be set)."""
    from triohooks.fronts import cli

    streams = (
        io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"),
        io.TextIOWrapper(out, encoding="utf-8", write_through=True),
        io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace", write_through=True),
    )
    names = ("stdin", "stdout", "stderr", "__stdin__", "__stdout__", "__stderr__", "argv")
    saved_sys = {name: getattr(sys, name) for name in names}
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_columns, saved_commands = list(cli._COLUMNS), dict(cli.COMMANDS)
    root = logging.getLogger()
    saved_logging = {
        name: (logger.level, list(logger.handlers), logger.propagate, logger.disabled)
        for name, logger in [("", root), *logging.Logger.manager.loggerDict.items()]
        if isinstance(logger, logging.Logger)
    }
    main_thread = threading.current_thread() is threading.main_thread()
    saved_signals = {}
    if main_thread:
        for signum in signal.valid_signals():
            try:
                saved_signals[signum] = signal.getsignal(signum)
            except (OSError, ValueError):
                continue
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        os.chdir(saved_cwd if cwd is None else cwd)
        for name, value in zip(names, (*streams, *streams, ["triohooks", *argv]), strict=True):
            setattr(sys, name, value)  # (typeshed calls sys.__stdout__ final: it is not)
        cli._COLUMNS.clear()
        root.handlers = []
        root.setLevel(logging.WARNING)
        yield streams
    finally:
        for name, value in saved_sys.items():
            setattr(sys, name, value)
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        cli._COLUMNS[:] = saved_columns
        cli.COMMANDS.clear()
        cli.COMMANDS.update(saved_commands)
        for name, logger in logging.Logger.manager.loggerDict.items():
            if isinstance(logger, logging.Logger) and name not in saved_logging:
                saved_logging[name] = (logging.NOTSET, [], True, False)  # made by the run
        for name, (level, handlers, propagate, disabled) in saved_logging.items():
            logger = logging.getLogger(name) if name else root
            logger.setLevel(level)
            logger.handlers = handlers
            logger.propagate, logger.disabled = propagate, disabled
        for signum, handler in saved_signals.items():
            if handler is not None and signal.getsignal(signum) is not handler:
                signal.signal(signum, handler)


def cli_process(
    argv: Sequence[str],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    stdin: str | None = "",
    timeout: float = 60,
    memory_limit: int | None = None,
) -> subprocess.CompletedProcess[str]:
    """The real command in a child process, ``python -m triohooks ARGV``: for tests about
    start-up, signals, process lifetime, a terminal, or where only a child can be bounded
    (``timeout``; ``memory_limit``, bytes, caps its address space, so a runaway read fails fast
    instead of eating the host); what :func:`cli_here` runs in this process otherwise.
    ``stdin`` None inherits this process's."""

    def limit() -> None:  # pragma: no cover - runs in the child
        assert memory_limit is not None
        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))

    return subprocess.run(
        [sys.executable, "-m", "triohooks", *argv],
        input=stdin,
        capture_output=True,
        text=True,
        env=None if env is None else dict(env),
        cwd=cwd,
        timeout=timeout,
        preexec_fn=limit if memory_limit is not None else None,
        check=False,
    )


def run_cli(
    *args: str,
    config_dir: Path,
    state_dir: Path,
    cwd: Path,
    stdin: str = "",
    process: bool = False,
    **child: Any,
) -> subprocess.CompletedProcess[str]:
    """The CLI with its own config and state dirs, in this process (:func:`cli_here`), or with
    ``process`` in a child (:func:`cli_process`, which takes the ``child`` options)."""
    env = {
        **os.environ,
        "TRIOHOOKS_CONFIG_DIR": str(config_dir),
        "TRIOHOOKS_STATE_DIR": str(state_dir),
    }
    if process:
        return cli_process(args, cwd=cwd, env=env, stdin=stdin, **child)
    assert not child, f"{sorted(child)}: options of a child process"
    return cli_here(args, cwd=cwd, env=env, stdin=stdin)


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
    *argv: str,
    cwd: Path,
    config_dir: Path,
    timeout: float = 120,
    process: bool = False,
    **env_vars: str,
) -> subprocess.CompletedProcess[str]:
    """``triohooks ARGV`` as a user runs it, with the global config dir (and the state dir under
    it) set by the environment, and ``env_vars`` (``HOME`` ...): in this process
    (:func:`cli_here`), or with ``process`` as ``python -m triohooks`` in a child."""
    env = {
        **os.environ,
        "TRIOHOOKS_CONFIG_DIR": str(config_dir),
        "TRIOHOOKS_STATE_DIR": str(config_dir / "s"),
        **env_vars,
    }
    if process:
        return cli_process(argv, cwd=cwd, env=env, stdin=None, timeout=timeout)
    return cli_here(argv, cwd=cwd, env=env, timeout=timeout)


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
