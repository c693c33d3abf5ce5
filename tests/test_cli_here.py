"""``tests.helpers.cli_here``, the in-process run of the command most CLI tests use: it answers
as the process would (exit codes, output), lets a crash fail the test, and leaves this process
as it found it."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from triohooks.fronts import cli

from .helpers import cli_here, cli_process, write_toml_hooks

DURATION = re.compile(r'"duration_ms":[0-9.e+-]+')


def _world(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    ws = tmp_path / "ws"
    ws.mkdir()
    write_toml_hooks(
        tmp_path / "g",
        '[[hooks.pre_tool]]\ncommand = "echo \\"$SAID_BY_TEST\\" > seen; pwd >> seen; exit 2"\n',
    )
    env = {
        **os.environ,
        "TRIOHOOKS_CONFIG_DIR": str(tmp_path / "g"),
        "TRIOHOOKS_STATE_DIR": str(tmp_path / "s"),
        "SAID_BY_TEST": "from the environment given",
    }
    return ws, env


def _timeless(done: subprocess.CompletedProcess[str]) -> tuple[int, str, str]:
    """What the command said, its hooks' run times left out."""
    return done.returncode, DURATION.sub("", done.stdout), DURATION.sub("", done.stderr)


def test_answers_as_the_real_command_does(tmp_path: Path) -> None:
    ws, env = _world(tmp_path)
    for argv, stdin in [
        (["fire", "pre_tool"], '{"tool": "bash"}'),
        (["fire", "pre_tool"], "not json"),
        (["--version"], ""),
        (["nope"], ""),
        (["list", "--json"], ""),
    ]:
        here = cli_here(argv, cwd=ws, env=env, stdin=stdin)
        real = cli_process(argv, cwd=ws, env=env, stdin=stdin)
        assert _timeless(here) == _timeless(real), argv
    assert here.returncode == 0 and json.loads(here.stdout)
    assert (ws / "seen").read_text() == f"from the environment given\n{ws}\n"


def _process_state() -> tuple[object, ...]:
    """What a run of the command could change in this process."""
    root = logging.getLogger()
    return (
        dict(os.environ),
        os.getcwd(),
        list(root.handlers),
        root.level,
        logging.getLogger("triohooks.runs").level,
        signal.getsignal(signal.SIGINT),
        sys.stdout,
        sys.stdin,
        list(sys.argv),
        dict(cli.COMMANDS),
    )


def test_leaves_the_process_as_it_found_it(tmp_path: Path) -> None:
    ws, env = _world(tmp_path)
    before = _process_state()
    done = cli_here(["fire", "pre_tool"], cwd=ws, env=env, stdin='{"tool": "bash"}')
    assert done.returncode == 2, done.stderr
    assert _process_state() == before


def test_a_crash_fails_the_test(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(args: object) -> int:
        raise RuntimeError("a bug in validate")

    monkeypatch.setitem(cli.COMMANDS, "validate", crash)
    with pytest.raises(RuntimeError, match="a bug in validate"):
        cli_here(["validate"], cwd=tmp_path)
    assert sys.stdout is not None and os.getcwd() != str(tmp_path)


async def test_from_a_trio_test_too(tmp_path: Path) -> None:
    ws, env = _world(tmp_path)
    with trio.fail_after(60):
        done = cli_here(["fire", "pre_tool"], cwd=ws, env=env, stdin='{"tool": "bash"}')
    assert done.returncode == 2 and json.loads(done.stdout)["blocked"] is True
