"""``triohooks watch`` with no arguments: it finds the user's running ``serve`` by the
``serve.json`` that serve writes into the state directory (real processes, a real websocket)."""

from __future__ import annotations

import json
import os
import signal
import socket
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


@pytest.mark.parametrize("port_taken", [False, True])
async def test_watch_with_no_arguments_attaches_to_the_running_serve(
    tmp_path: Path, port_taken: bool
) -> None:
    """``port_taken``: ``serve --auto`` (as the relay starts it) on a port something else
    holds: it listens on a free port instead, ``serve.json`` names that port (never 0), and
    ``watch`` attaches all the same."""
    (tmp_path / "ws").mkdir()
    write_toml_hooks(tmp_path / "config", '[[hooks.pre_tool]]\nbuiltin = "destructive_delete"\n')
    env = _env(tmp_path)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        serve_argv = [
            sys.executable,
            "-m",
            "triohooks",
            "serve",
            "--workspace",
            str(tmp_path / "ws"),
        ]
        serve_argv += ["--auto", "--port", str(taken)] if port_taken else ["--port", "0"]
        server = await trio.lowlevel.open_process(
            serve_argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        watcher = None
        try:
            with trio.fail_after(60):
                assert server.stdout is not None and server.stderr is not None
                url = (await read_line_with(server.stdout, bytearray(), "listening on")).split()[-1]
                got = int(url.rsplit(":", 1)[1].rstrip("/"))
                assert got not in (0, taken)
                info = json.loads((tmp_path / "state" / "serve.json").read_text())
                assert (info["port"], info["url"]) == (got, url)
                if port_taken:
                    said = await read_line_with(server.stderr, bytearray(), "instead")
                    assert f"port {taken}" in said and f"listening on port {got} instead" in said
                watch_argv = [sys.executable, "-m", "triohooks", "watch", "--json"]
                watcher = await trio.lowlevel.open_process(
                    watch_argv, env=env, stdout=subprocess.PIPE
                )
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


@pytest.mark.parametrize("found", ["none", "stale", "no port"])
def test_with_no_serve_to_attach_to_watch_says_why(tmp_path: Path, found: str) -> None:
    """No ``serve.json``; one a serve that died left; one of a serve that could have no TCP
    port at all (no URL in it): ``watch`` says which, and what to do, instead of dialling."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    pid = os.getpid()
    if found == "stale":  # a serve that died without removing its file
        dead = subprocess.run(
            [sys.executable, "-c", "import os; print(os.getpid())"],
            text=True,
            capture_output=True,
            check=True,
            timeout=30,
        )
        pid = int(dead.stdout)
    url = None if found == "no port" else "ws://127.0.0.1:9/"
    if found != "none":
        info = {"url": url, "token_file": str(state / "t"), "pid": pid}
        (state / "serve.json").write_text(json.dumps(info))
    done = triohooks_cli(
        "watch", cwd=tmp_path, config_dir=tmp_path / "config", TRIOHOOKS_STATE_DIR=str(state)
    )
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"triohooks: watch: your serve (pid {pid}) could listen on no TCP port, only on the "
        f"relay socket ({state / 'serve.log'} says why); stop it, or start one with "
        "`triohooks serve --port 0`"
        if found == "no port"
        else f"triohooks: watch: no running `triohooks serve` found ({state / 'serve.json'} "
        "names none that is alive); start one, or name its URL and --token-file"
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
