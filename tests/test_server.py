"""``triohooks serve`` end to end: the real server, real trio-websocket clients, 127.0.0.1 port 0."""

from __future__ import annotations

import argparse
import os
import signal
import socket
import stat
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
from trio_websocket import (
    ConnectionClosed,
    ConnectionRejected,
    WebSocketConnection,
    wrap_client_stream,
)

from triohooks.fronts.client import HookClient, RemoteError, connect, open_websocket
from triohooks.fronts.serve_cli import add_serve_command, cmd_serve
from triohooks.fronts.server import HookServer
from triohooks.fronts.wire import (
    MAX_FRAME_BYTES,
    ErrorReply,
    EventRecord,
    Lagged,
    OutcomeReply,
    decode_server,
)

from .helpers import bash_hook, write_json_hooks, write_toml_hooks
from .serving import running_server

pytestmark = pytest.mark.slow
TOKEN = "test-token-0123456789"
AUTH = [(b"Authorization", f"Bearer {TOKEN}".encode())]


def running(tmp_path: Path, **settings: Any) -> AbstractAsyncContextManager[HookServer]:
    return running_server(tmp_path, TOKEN, **{"close_timeout_s": 0.5, **settings})


@asynccontextmanager
async def raw(server: HookServer) -> AsyncIterator[WebSocketConnection]:
    async with open_websocket(server.url, AUTH) as ws:
        yield ws


async def reply(ws: WebSocketConnection) -> Any:
    return decode_server(await ws.get_message())


async def handshake_status(server: HookServer, path: str, headers: list[Any]) -> int:
    """The HTTP status of a handshake, on a stream we close ourselves (trio-websocket 0.12's
    client leaves a rejected connection's socket open)."""
    status = 101
    async with await trio.open_tcp_stream(server.host, server.port) as stream:
        try:
            async with trio.open_nursery() as nursery:
                await wrap_client_stream(nursery, stream, server.host, path, extra_headers=headers)
                nursery.cancel_scope.cancel()
        except* ConnectionRejected as group:
            rejected = group.exceptions[0]
            assert isinstance(rejected, ConnectionRejected)
            status = rejected.status_code
    return status


def outcome_view(outcome: Any) -> dict[str, Any]:
    """An Outcome as JSON, without the timings."""
    doc: dict[str, Any] = msgspec.to_builtins(outcome)
    for run in doc["runs"]:
        run.pop("duration_ms")
    return doc


# -- fire -----------------------------------------------------------------------------------------
async def test_fire_round_trip_in_both_dialects_matches_in_process_fire(tmp_path: Path) -> None:
    write_toml_hooks(
        tmp_path / "g",
        '[[hooks.pre_tool]]\nmatch = "bash"\ncommand = "echo no pushing >&2; exit 2"\n',
    )
    reply_json = '{"decision":"mutate","patch":{"message":"tidied"}}'
    write_json_hooks(
        tmp_path / "ws" / ".agents",
        [bash_hook("tidy", f"echo '{reply_json}'", event="user_prompt_submit")],
    )
    pre = {"tool": "bash", "args": {"command": "git push"}, "session_id": "s1"}
    prompt = {"prompt": "messy", "session_id": "s1"}
    with trio.fail_after(15):
        async with running(tmp_path) as server, connect(server.url, TOKEN) as client:
            remote_pre = await client.fire("pre_tool_use", pre)
            remote_prompt = await client.fire("user_prompt_submit", prompt)
            local_pre = await server.engine.fire("pre_tool", pre)
            local_prompt = await server.engine.fire("prompt_submit", prompt)
    assert remote_pre.blocked and remote_pre.reason == "no pushing"
    assert remote_pre.message_for_model == "blocked by pre_tool hook: no pushing"
    assert [(r.dialect, r.outcome) for r in remote_pre.runs] == [("toml", "block")]
    assert remote_prompt.prompt == "tidied" and remote_prompt.runs[0].dialect == "json"
    assert outcome_view(remote_pre) == outcome_view(local_pre)
    assert outcome_view(remote_prompt) == outcome_view(local_prompt)


async def test_concurrent_fires_on_one_connection_carry_their_ids(tmp_path: Path) -> None:
    release = trio.Event()
    started = 0

    async def slow(fields: Any) -> dict[str, Any]:
        nonlocal started
        started += 1
        await release.wait()
        return {"additional_context": fields["args"]["n"]}

    with trio.fail_after(10):
        async with running(tmp_path) as server, raw(server) as ws:
            server.engine.add_hook("pre_tool", slow)
            for n in range(10):
                payload = {"tool": "t", "args": {"n": str(n)}}
                frame = {"type": "fire", "id": f"f{n}", "event": "pre_tool", "payload": payload}
                await ws.send_message(msgspec.json.encode(frame).decode())
            while started < 10:  # all ten are in flight at once before any answers
                await trio.sleep(0.01)
            release.set()
            replies = [await reply(ws) for _ in range(10)]
    assert all(isinstance(r, OutcomeReply) for r in replies)
    assert {r.id: r.outcome.additional_context for r in replies} == {
        f"f{n}": str(n) for n in range(10)
    }


# -- subscribe ------------------------------------------------------------------------------------
async def _hook_ok(fields: Any) -> None:
    return None


async def test_subscribe_streams_records_in_order_with_gap_free_seq(tmp_path: Path) -> None:
    with trio.fail_after(10):
        async with running(tmp_path) as server, connect(server.url, TOKEN) as client:
            server.engine.add_hook("pre_tool", _hook_ok, name="ok")
            server.engine.add_hook("prompt_submit", _hook_ok, name="ok")
            async with client.subscribe() as events:
                for _ in range(3):
                    await client.fire("pre_tool", {"tool": "bash", "args": {}})
                stream = [await events.receive() for _ in range(12)]
            async with client.subscribe(["user_prompt_submit"], kinds=["outcome"]) as events:
                await client.fire("pre_tool", {"tool": "bash", "args": {}})
                await client.fire("prompt_submit", {"prompt": "hi"})
                only = await events.receive()
                stats = await client.stats()
    records = [r for r in stream if isinstance(r, EventRecord)]
    assert len(records) == 12
    assert [r.seq for r in records] == list(range(1, 13))
    kinds = ["fired", "hook_started", "hook_finished", "outcome"]
    assert [r.kind for r in records] == kinds * 3
    assert {r.event for r in records} == {"pre_tool"}
    assert records[2].data["hook"] == "ok" and records[2].data["outcome"] == "ok"
    ids = {records[1].data["hook_id"], records[2].data["hook_id"]}  # started and finished
    assert len(ids) == 1 and ids.pop().startswith("api:")  # the API hook's id, not its name
    assert records[3].data["outcome"]["args"] == {}
    assert isinstance(only, EventRecord)
    assert (only.kind, only.event, only.seq) == ("outcome", "prompt_submit", 13)
    assert stats.subscribers == 1 and stats.connections == 1 and stats.fires == 5


async def _stalled_subscriber(nursery: trio.Nursery, server: HookServer) -> WebSocketConnection:
    """A subscriber with an 8 KiB receive buffer that does not read until told."""
    sock = trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
    await sock.connect((server.host, server.port))
    ws = await wrap_client_stream(
        nursery, trio.SocketStream(sock), server.host, "/", extra_headers=AUTH
    )
    await ws.send_message('{"type":"subscribe","id":"s"}')
    assert (await reply(ws)).id == "s"
    return ws


async def test_stalled_subscriber_gets_lagged_while_a_healthy_one_gets_everything(
    tmp_path: Path,
) -> None:
    fires = 1500  # 6000 records of ~5 KiB: far more than the ring plus socket buffers
    big = {"tool": "t", "args": {"blob": "x" * 4096}}
    healthy_seen: list[int] = []
    healthy_lags: list[int] = []
    with trio.fail_after(30):
        async with running(tmp_path) as server, trio.open_nursery() as nursery:
            server.engine.add_hook("pre_tool", _hook_ok)
            stalled = await _stalled_subscriber(nursery, server)
            async with connect(server.url, TOKEN) as client, client.subscribe() as events:

                async def healthy() -> None:
                    async for item in events:
                        if isinstance(item, Lagged):
                            healthy_lags.append(item.missed)
                        else:
                            healthy_seen.append(item.seq)
                        if len(healthy_seen) == fires * 4:
                            return

                async with trio.open_nursery() as inner:
                    inner.start_soon(healthy)
                    for i in range(fires):
                        await server.engine.fire("pre_tool", big)
                        if i % 50 == 0:  # pace so the healthy reader can keep up
                            while len(healthy_seen) < i * 4:
                                await trio.sleep(0.001)
            # Now the stalled one reads: what was in its socket, one lag report, the newest.
            seqs: list[int] = []
            missed = 0
            while len(seqs) + missed < fires * 4:
                msg = await reply(stalled)
                if isinstance(msg, Lagged):
                    assert missed == 0, "one lag report for one episode"
                    missed = msg.missed
                else:
                    seqs.append(msg.seq)
            await stalled.aclose()
    assert healthy_seen == list(range(1, fires * 4 + 1)) and healthy_lags == []
    assert missed > 0
    assert seqs == list(range(1, len(seqs) + 1))  # gap-free: lost records take no seq
    assert len(seqs) >= server.settings.buffer


# -- bad input ------------------------------------------------------------------------------------
BAD = [
    ("{not json", "invalid_json", None),
    ("[1, 2]", "invalid_message", None),
    ('{"type": "launch", "id": "a"}', "unknown_type", "a"),
    ('{"id": "b"}', "invalid_message", "b"),
    ('{"type": "fire", "id": "c", "payload": {}}', "invalid_message", "c"),
    ('{"type": "fire", "id": "d", "event": "nope"}', "unknown_event", "d"),
    (
        '{"type": "fire", "id": "e", "event": "pre_tool", "payload": {"args": 5}}',
        "invalid_payload",
        "e",
    ),
    ('{"type": "subscribe", "id": "f", "events": ["nope"]}', "unknown_event", "f"),
    ('{"type": "subscribe", "id": "g", "kinds": ["gossip"]}', "unknown_kind", "g"),
    ('{"type": "ping", "id": ["h"]}', "invalid_message", None),
]


async def test_every_bad_input_gets_an_error_and_the_connection_goes_on(tmp_path: Path) -> None:
    with trio.fail_after(10):
        async with running(tmp_path) as server, raw(server) as ws:
            errors = []
            for frame, _, _ in BAD:
                await ws.send_message(frame)
                errors.append(await reply(ws))
            await ws.send_message('{"type": "ping", "id": 7}')
            pong = await reply(ws)
    assert all(isinstance(e, ErrorReply) for e in errors)
    assert [(e.error.code, e.id) for e in errors] == [(code, i) for _, code, i in BAD]
    assert all(e.error.message for e in errors)
    assert pong.id == 7 and type(pong).__name__ == "Pong"


async def test_oversize_frame_error_then_close_1009_others_unaffected(tmp_path: Path) -> None:
    with trio.fail_after(10):
        async with running(tmp_path) as server, connect(server.url, TOKEN) as other:
            async with raw(server) as ws:
                await ws.send_message('{"type":"ping","pad":"' + "x" * MAX_FRAME_BYTES + '"}')
                error = await reply(ws)
                with pytest.raises(ConnectionClosed) as closed:
                    await ws.get_message()
            await other.ping()
            async with connect(server.url, TOKEN) as late:
                await late.ping()
    assert isinstance(error, ErrorReply) and error.error.code == "too_big"
    assert closed.value.reason is not None and closed.value.reason.code == 1009


# -- auth -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "headers, query",
    [
        ([], ""),
        ([(b"Authorization", b"Bearer wrong")], ""),
        ([], "?token=wrong"),
        ([(b"Authorization", TOKEN.encode())], ""),
    ],
    ids=["none", "wrong-header", "wrong-query", "not-bearer"],
)
async def test_missing_or_wrong_token_is_refused_with_401(
    tmp_path: Path, headers: list[tuple[bytes, bytes]], query: str
) -> None:
    with trio.fail_after(10):
        async with running(tmp_path) as server:
            status = await handshake_status(server, "/" + query, headers)
            rejected_count = server.rejected
            async with connect(server.url, TOKEN, token_in_query=True) as client:
                await client.ping()
    assert status == 401
    assert rejected_count == 1


# -- shutdown -------------------------------------------------------------------------------------
async def test_shutdown_finishes_fires_drains_post_queue_then_closes_1000(tmp_path: Path) -> None:
    done = tmp_path / "post-ran"
    write_toml_hooks(tmp_path / "g", f'[[hooks.post_tool]]\ncommand = "sleep 0.3; touch {done}"\n')
    release = trio.Event()

    async def slow(fields: Any) -> None:
        await release.wait()

    kinds: list[str] = []
    with trio.fail_after(15):
        async with (
            trio.open_nursery() as nursery,
            running(tmp_path) as server,
            raw(server) as watcher,
            raw(server) as firer,
        ):
            if True:
                server.engine.add_hook("pre_tool", slow)
                await watcher.send_message('{"type":"subscribe","id":"w"}')
                await reply(watcher)
                await firer.send_message(
                    '{"type":"fire","id":"bg","event":"post_tool","payload":{"tool":"t"}}'
                )
                queued = await reply(firer)
                await firer.send_message(
                    '{"type":"fire","id":"slow","event":"pre_tool","payload":{"tool":"t"}}'
                )
                while server.stats(None).in_flight == 0:
                    await trio.sleep(0.01)
                server.shutdown()
                with pytest.raises(OSError):  # no longer accepting
                    await handshake_status(server, "/", AUTH)
                nursery.start_soon(_release_when_waited_for, server, release)
                slow_reply = await reply(firer)
                while True:
                    try:
                        msg = await reply(watcher)
                    except ConnectionClosed as exc:
                        close_code = exc.reason.code if exc.reason else None
                        break
                    if isinstance(msg, EventRecord):
                        kinds.append(msg.kind)
                await server.done.wait()
    assert isinstance(queued, OutcomeReply) and queued.outcome.queued
    assert isinstance(slow_reply, OutcomeReply) and slow_reply.id == "slow"
    assert done.exists()  # the post queue drained before the sockets closed
    assert "closed" in kinds[-2:] and "hook_finished" in kinds
    assert close_code == 1000


async def _release_when_waited_for(server: HookServer, event: trio.Event) -> None:
    """Set ``event`` once the shutdown waits for the fires in flight (so it is what ends it)."""
    while server._idle is None:
        await trio.sleep(0.01)
    event.set()


def test_sigterm_drains_and_exits_0(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    done = tmp_path / "post-ran"
    write_toml_hooks(tmp_path / "g", f'[[hooks.post_tool]]\ncommand = "sleep 0.2; touch {done}"\n')
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    env = {
        **os.environ,
        "TRIOHOOKS_CONFIG_DIR": str(tmp_path / "g"),
        "TRIOHOOKS_STATE_DIR": str(tmp_path / "state"),
    }
    argv = [sys.executable, "-m", "triohooks", "serve", "--port", "0"]
    argv += ["--workspace", str(tmp_path / "ws"), "--token-file", str(token_file)]
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("triohooks serve: listening on ws://127.0.0.1:"), first
        url = first.split()[-1]

        async def fire_then_signal() -> Any:
            with trio.fail_after(10):
                async with connect(url, TOKEN) as client:
                    outcome = await client.fire("post_tool", {"tool": "t"})
                    proc.send_signal(signal.SIGTERM)
                    with pytest.raises(ConnectionClosed) as closed:
                        await client.ws.get_message()
                    return outcome, closed.value.reason

        outcome, reason = trio.run(fire_then_signal)
        out, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert outcome.queued and done.exists()
    assert reason is not None and reason.code == 1000
    assert "SIGTERM: shutting down" in err and "stopped" in out and "Traceback" not in err


# -- the command's own checks -------------------------------------------------------------------
def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_serve_command(parser.add_subparsers(dest="command"))
    return parser.parse_args(["serve", *argv])


def test_non_loopback_bind_is_refused_without_allow_remote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cmd_serve(_args("--host", "0.0.0.0", "--workspace", str(tmp_path))) == 1
    assert "refusing to bind non-loopback address 0.0.0.0 without --allow-remote" in (
        capsys.readouterr().err
    )


def test_generated_token_is_private_under_the_state_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from triohooks.fronts.serve_cli import settings_from_args

    monkeypatch.setenv("TRIOHOOKS_STATE_DIR", str(tmp_path / "state"))
    settings, path = settings_from_args(_args("--workspace", str(tmp_path)))
    assert path == tmp_path / "state" / "serve-token"
    assert path.read_text().strip() == settings.token and len(settings.token) >= 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


async def test_client_reports_remote_errors(tmp_path: Path) -> None:
    with trio.fail_after(10):
        async with running(tmp_path) as server, connect(server.url, TOKEN) as client:
            with pytest.raises(RemoteError) as err:
                await client.fire("nope")
            assert isinstance(client, HookClient)
    assert err.value.code == "unknown_event"


async def test_shutdown_with_a_subscriber_does_not_wait_out_the_close_timeout(
    tmp_path: Path,
) -> None:
    # Regression: the connection's reader was cancelled before it read the client's close
    # reply, so every shutdown with a client connected took the whole close_timeout_s.
    closed = trio.Event()

    async def subscriber(server: HookServer) -> None:
        async with connect(server.url, TOKEN) as client, client.subscribe(["*"]) as stream:
            async for _ in stream:
                pass
        closed.set()

    with trio.fail_after(20):
        async with running(tmp_path, close_timeout_s=30) as server, trio.open_nursery() as n:
            n.start_soon(subscriber, server)
            await server.wait_for_subscriber()
            with trio.fail_after(5):  # far below the 30 s close timeout
                server.shutdown()
                await server.done.wait()
                await closed.wait()
