"""``triohooks watch`` with no arguments: it finds the user's running ``serve`` by the
``serve.json`` that serve writes into the state directory (real processes, a real websocket)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from tests.helpers import read_line_with, triohooks_cli, write_toml_hooks
from triohooks.fronts.client import connect


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "TRIOHOOKS_CONFIG_DIR": str(tmp_path / "config"),
        "TRIOHOOKS_STATE_DIR": str(tmp_path / "state"),
    }


async def test_watch_with_no_arguments_attaches_to_the_running_serve(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    write_toml_hooks(tmp_path / "config", '[[hooks.pre_tool]]\nbuiltin = "destructive_delete"\n')
    env = _env(tmp_path)
    serve_argv = [sys.executable, "-m", "triohooks", "serve", "--port", "0"]
    serve_argv += ["--workspace", str(tmp_path / "ws")]
    server = await trio.lowlevel.open_process(serve_argv, env=env, stdout=subprocess.PIPE)
    watcher = None
    try:
        with trio.fail_after(60):
            assert server.stdout is not None
            url = (await read_line_with(server.stdout, bytearray(), "listening on")).split()[-1]
            watch_argv = [sys.executable, "-m", "triohooks", "watch", "--json"]
            watcher = await trio.lowlevel.open_process(watch_argv, env=env, stdout=subprocess.PIPE)
            assert watcher.stdout is not None
            seen = bytearray()
            assert url in await read_line_with(watcher.stdout, seen, "watching ")
            token = (tmp_path / "state" / "serve-token").read_text().strip()
            async with connect(url, token) as client:
                await client.fire("pre_tool", tool="Bash", args={"command": "ls"})
            outcome = json.loads(await read_line_with(watcher.stdout, seen, '"kind":"outcome"'))
            assert (outcome["kind"], outcome["event"]) == ("outcome", "pre_tool")
            server.send_signal(signal.SIGTERM)
            assert await server.wait() == 0
            await read_line_with(watcher.stdout, seen, "stream ended")
            assert await watcher.wait() == 0
    finally:
        for proc in (server, watcher):
            if proc is not None and proc.returncode is None:
                proc.kill()
                with trio.move_on_after(5, shield=True):
                    await proc.wait()


@pytest.mark.parametrize("stale", [False, True])
def test_with_no_serve_running_watch_says_so(tmp_path: Path, stale: bool) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    if stale:  # a serve that died without removing its file
        dead = subprocess.run(
            [sys.executable, "-c", "import os; print(os.getpid())"],
            text=True,
            capture_output=True,
            check=True,
            timeout=30,
        )
        info = {"url": "ws://127.0.0.1:9/", "token_file": str(state / "t"), "pid": int(dead.stdout)}
        (state / "serve.json").write_text(json.dumps(info))
    done = triohooks_cli(
        "watch", cwd=tmp_path, config_dir=tmp_path / "config", TRIOHOOKS_STATE_DIR=str(state)
    )
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"triohooks: watch: no running `triohooks serve` found ({state / 'serve.json'} names "
        "none that is alive); start one, or name its URL and --token-file"
    )


def test_a_url_without_a_token_file_asks_for_one(tmp_path: Path) -> None:
    done = triohooks_cli(
        "watch",
        "ws://127.0.0.1:9/",
        cwd=tmp_path,
        config_dir=tmp_path / "config",
        TRIOHOOKS_STATE_DIR=str(tmp_path / "state"),
    )
    assert done.returncode == 1
    assert "which token does ws://127.0.0.1:9/ take? name its file with --token-file" in (
        done.stderr
    )


def test_a_fifo_token_file_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "token"
    os.mkfifo(fifo)
    done = triohooks_cli(
        "watch",
        "ws://127.0.0.1:9/",
        "--token-file",
        str(fifo),
        cwd=tmp_path,
        config_dir=tmp_path / "config",
        TRIOHOOKS_STATE_DIR=str(tmp_path / "state"),
        timeout=30,
    )
    assert done.returncode == 1
    assert f"cannot read token file {fifo}" in done.stderr
