"""Many agents on one ``triohooks serve``: a few hundred real websocket clients at once, a stalled
subscriber beside them, and the limits (the connection cap, file descriptors) hit and reported."""

from __future__ import annotations

import logging
import os
import resource
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import psutil
import pytest
import trio
import trio.testing
from trio_websocket import WebSocketConnection, wrap_client_stream
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, RejectConnection, RejectData, Request

from triohooks.actors.broadcast import Broadcaster
from triohooks.actors.broadcast import Lagged as BroadcastLagged
from triohooks.fronts.client import connect
from triohooks.fronts.server import HookServer, fds_needed
from triohooks.fronts.wire import EventRecord, Lagged, Pong, Subscribed, decode_server

from .serving import handshake, running_server

pytestmark = pytest.mark.slow
linux_only = pytest.mark.skipif(sys.platform != "linux", reason="/proc and Linux's limits")
TOKEN = "fleet-token-0123456789abcdef"
AUTH = [(b"Authorization", f"Bearer {TOKEN}".encode())]


def running(tmp_path: Path, **settings: Any) -> AbstractAsyncContextManager[HookServer]:
    return running_server(tmp_path, TOKEN, **{"close_timeout_s": 1, **settings})


async def _echo(fields: Any) -> dict[str, Any]:
    return {"additional_context": fields["args"]["n"]}


@asynccontextmanager
async def small_buffer_client(
    server: HookServer, rcvbuf: int
) -> AsyncIterator[WebSocketConnection]:
    """A trio-websocket client whose socket has a small receive buffer (so the server's side of
    it fills up as soon as the client stops reading)."""
    sock = trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    await sock.connect((server.host, server.port))
    async with trio.SocketStream(sock) as stream, trio.open_nursery() as nursery:
        ws = await wrap_client_stream(nursery, stream, server.host, "/", extra_headers=AUTH)
        try:
            yield ws
        finally:
            nursery.cancel_scope.cancel()


# -- a fleet ------------------------------------------------------------------------------------
async def test_three_hundred_clients_get_their_own_answers_past_a_stalled_subscriber(
    tmp_path: Path,
) -> None:
    clients, fires, healthy = 300, 5, 10
    answers: dict[str, str | None] = {}
    seen: list[list[int]] = [[] for _ in range(healthy)]
    lost: list[int] = [0] * healthy
    connected = 0
    all_connected = trio.Event()

    async def agent(server: HookServer, i: int, handshakes: trio.Semaphore) -> None:
        nonlocal connected
        async with handshakes:
            client_cm = connect(server.url, TOKEN)
            client = await client_cm.__aenter__()
        try:
            connected += 1
            if connected == clients:
                all_connected.set()
            await all_connected.wait()  # every connection open at once, then they all fire
            for k in range(fires):
                n = f"{i}-{k}"
                outcome = await client.fire("pre_tool", {"tool": "t", "args": {"n": n}})
                answers[n] = outcome.additional_context
        finally:
            await client_cm.__aexit__(None, None, None)

    async def subscriber(server: HookServer, j: int, ready: trio.Event) -> None:
        async with (
            connect(server.url, TOKEN) as client,
            client.subscribe(["pre_tool"], kinds=["outcome"]) as events,
        ):
            ready.set()
            with trio.move_on_after(60):
                async for item in events:
                    if isinstance(item, Lagged):
                        lost[j] += item.missed
                    else:
                        assert isinstance(item, EventRecord)
                        seen[j].append(item.seq)
                    if len(seen[j]) + lost[j] == clients * fires:  # one outcome per fire
                        return

    with trio.fail_after(60):
        async with running(tmp_path, max_connections=clients + healthy + 2) as server:
            server.engine.add_hook("pre_tool", _echo, name="echo")
            # The stalled subscriber: subscribes to everything, then never reads.
            async with small_buffer_client(server, 4096) as stalled:
                await stalled.send_message('{"type":"subscribe","id":"stalled"}')
                await stalled.get_message()  # "subscribed"
                async with trio.open_nursery() as subs:
                    for j in range(healthy):
                        ready = trio.Event()
                        subs.start_soon(subscriber, server, j, ready)
                        await ready.wait()
                    handshakes = trio.Semaphore(64)
                    async with trio.open_nursery() as fleet:
                        for i in range(clients):
                            fleet.start_soon(agent, server, i, handshakes)
                while server.hub.subscribers > 1:  # the healthy ones' connections are closed
                    await trio.sleep(0.01)
                stats = server.stats(None)
                stalled_missed = stats.events_missed  # only the stalled one is left
    assert len(answers) == clients * fires
    assert all(answer == n for n, answer in answers.items())  # each its own, none crossed
    assert stats.fires == clients * fires
    assert stalled_missed > 0  # its ring really overflowed while the others were served
    for j in range(healthy):  # seq counts what was delivered: 1, 2, 3 ... without gaps
        assert seen[j] == list(range(1, len(seen[j]) + 1))
        assert len(seen[j]) + lost[j] == clients * fires


async def test_a_reader_that_pauses_gets_every_frame_whole_and_in_order(tmp_path: Path) -> None:
    # Records the socket cannot take at once wait in the ring, and a frame the socket took only
    # part of is finished before anything else: the stream stays valid, seq has no gaps, and
    # what was not delivered is reported as lagged.
    big = "x" * 20_000  # outcome records bigger than the small socket buffers
    with trio.fail_after(30):
        async with running(tmp_path) as server:
            server.engine.add_hook("pre_tool", _echo, name="echo")
            async with small_buffer_client(server, 4096) as reader:
                await reader.send_message('{"type":"subscribe","id":"s"}')
                assert isinstance(decode_server(await reader.get_message()), Subscribed)
                published0 = server.hub.published
                async with connect(server.url, TOKEN) as agent:
                    for k in range(500):
                        await agent.fire("pre_tool", {"tool": "t", "args": {"n": big + str(k)}})
                published = server.hub.published - published0
                seqs: list[int] = []
                missed = 0
                while len(seqs) + missed < published:
                    msg = decode_server(await reader.get_message())
                    if isinstance(msg, Lagged):
                        missed += msg.missed
                    else:
                        assert isinstance(msg, EventRecord)
                        seqs.append(msg.seq)
                        if msg.kind == "outcome":
                            assert msg.data["outcome"]["additional_context"].startswith(big)
                await reader.send_message('{"type":"ping","id":"p"}')
                pong = decode_server(await reader.get_message())
    assert seqs == list(range(1, len(seqs) + 1))
    assert missed > 0 and len(seqs) + missed == published
    assert pong == Pong(id="p")


# -- the connection cap -------------------------------------------------------------------------
async def test_the_connection_cap_refuses_with_503_and_says_so_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="triohooks.server")
    with trio.fail_after(20):
        async with running(tmp_path, max_connections=4) as server:
            async with (
                connect(server.url, TOKEN) as a,
                connect(server.url, TOKEN),
                connect(server.url, TOKEN),
                connect(server.url, TOKEN),
            ):
                refused = [await handshake(server, TOKEN) for _ in range(3)]
                await a.ping()
            while server.slots_in_use:
                await trio.sleep(0.01)
            async with connect(server.url, TOKEN) as again:
                await again.ping()
    assert all(r is not None and r.status_code == 503 for r in refused)
    reports = [r.getMessage() for r in caplog.records if "connection limit" in r.getMessage()]
    assert len(reports) == 1  # three refusals, one line
    assert "--max-connections 4" in reports[0] and "503" in reports[0]
    assert server.refused_full == 3
    stats = server.stats(None)
    assert (stats.refused_connections, stats.refused_out_of_fds) == (3, 0)


# -- file descriptors ---------------------------------------------------------------------------
def _serve(tmp_path: Path, soft: int, hard: int, *extra: str) -> subprocess.Popen[str]:
    (tmp_path / "ws").mkdir(exist_ok=True)
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    env = {
        **os.environ,
        "TRIOHOOKS_CONFIG_DIR": str(tmp_path / "g"),
        "TRIOHOOKS_STATE_DIR": str(tmp_path / "state"),
    }
    # The limit is set by a small shim that then execs serve (no preexec_fn).
    shim = "import os, resource, sys; resource.setrlimit(resource.RLIMIT_NOFILE, (%d, %d)); "
    shim += "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
    argv = [sys.executable, "-c", shim % (soft, hard), "-m", "triohooks", "serve", "--port", "0"]
    argv += ["--no-audit", "--workspace", str(tmp_path / "ws"), "--token-file", str(token_file)]
    return subprocess.Popen(
        [*argv, *extra], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _stop(proc: subprocess.Popen[str]) -> tuple[int, str]:
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, err


class RawHandshake:
    """A websocket handshake by hand (wsproto): the status, the body of a refusal, and the
    open stream when accepted."""

    def __init__(self, stream: trio.SocketStream, status: int, body: bytes) -> None:
        self.stream = stream
        self.status = status
        self.body = body

    @classmethod
    async def open(cls, host: str, port: int) -> RawHandshake:
        stream = await trio.open_tcp_stream(host, port)
        proto = WSConnection(ConnectionType.CLIENT)
        await stream.send_all(proto.send(Request(host=host, target="/", extra_headers=AUTH)))
        status, body = 0, b""
        while True:
            data = await stream.receive_some(65536)
            proto.receive_data(data or None)
            for event in proto.events():
                if isinstance(event, AcceptConnection):
                    return cls(stream, 101, b"")
                if isinstance(event, RejectConnection):
                    status = event.status_code
                    if not event.has_body:
                        return cls(stream, status, body)
                if isinstance(event, RejectData):
                    body += event.data
                    if event.body_finished:
                        return cls(stream, status, body)
            if not data:
                return cls(stream, status, body)


@linux_only
def test_out_of_file_descriptors_answers_503_once_said_and_serves_again(tmp_path: Path) -> None:
    # A hard limit of 64 that serve cannot raise: about 50 websockets fit beside what the
    # process itself holds. The rest are answered 503 on the descriptor kept in reserve.
    proc = _serve(tmp_path, 64, 64, "--max-connections", "200")
    try:
        assert proc.stdout is not None
        host, port = proc.stdout.readline().split()[-1].removeprefix("ws://").rstrip("/").split(":")

        async def main() -> dict[str, Any]:
            opened: list[RawHandshake] = []
            refused: list[RawHandshake] = []
            with trio.fail_after(30):
                try:
                    while len(refused) < 5:
                        conn = await RawHandshake.open(host, int(port))
                        (opened if conn.status == 101 else refused).append(conn)
                        if conn.status != 101:
                            await conn.stream.aclose()
                        assert len(opened) < 64
                    me = psutil.Process(proc.pid)
                    cpu0 = sum(me.cpu_times()[:2])
                    await trio.sleep(1)  # exhausted and idle: not spinning
                    idle_cpu = sum(me.cpu_times()[:2]) - cpu0
                    for conn in opened[:5]:  # five close: five new ones fit again
                        await conn.stream.aclose()
                    del opened[:5]
                    again = await RawHandshake.open(host, int(port))
                    while again.status != 101:  # the server may not have seen the closes yet
                        await again.stream.aclose()
                        await trio.sleep(0.05)
                        again = await RawHandshake.open(host, int(port))
                    opened.append(again)
                    return {
                        "opened": len(opened),
                        "statuses": {c.status for c in refused},
                        "bodies": {c.body for c in refused},
                        "idle_cpu": idle_cpu,
                    }
                finally:
                    for conn in opened:
                        await conn.stream.aclose()

        seen = trio.run(main)
        code, err = _stop(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert seen["opened"] >= 30
    assert seen["statuses"] == {503}
    assert seen["bodies"] == {b"server is out of file descriptors; try again later\n"}
    assert seen["idle_cpu"] < 0.5
    assert code == 0, err
    # Said at the start (the hard limit is below what --max-connections can use), and once
    # when it was hit; no traceback, no line per refusal.
    needed = fds_needed(200)
    assert f"file descriptor limit (64, hard limit 64) is below the {needed}" in err
    assert err.count("out of file descriptors") == 1, err
    assert "ulimit -n" in err and "Traceback" not in err


@linux_only
def test_serve_raises_the_soft_descriptor_limit_to_what_the_cap_needs(tmp_path: Path) -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < fds_needed(1000):
        pytest.skip(f"the hard limit ({hard}) is below what the test needs")
    proc = _serve(tmp_path, 100, hard, "--max-connections", "1000")
    try:
        assert proc.stdout is not None
        proc.stdout.readline()  # listening
        limits = Path(f"/proc/{proc.pid}/limits").read_text()
        code, err = _stop(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    line = next(line for line in limits.splitlines() if line.startswith("Max open files"))
    kept = "unlimited" if hard == resource.RLIM_INFINITY else str(hard)
    assert line.split()[3:5] == [str(fds_needed(1000)), kept]  # soft raised, hard kept
    assert code == 0 and "file descriptor limit" not in err


# -- the broadcaster's synchronous receiver -----------------------------------------------------
def test_direct_takes_items_only_while_the_ring_is_empty_and_nothing_was_lost() -> None:
    hub: Broadcaster[int] = Broadcaster(capacity=2)
    sub = hub.subscribe()
    taken: list[int] = []
    room = True

    def direct(item: int) -> bool:
        if room:
            taken.append(item)
        return room

    sub.direct = direct
    hub.publish(1)
    room = False
    hub.publish(2)  # declined: to the ring
    room = True
    hub.publish(3)  # the ring holds 2, so 3 goes after it, not past it
    assert taken == [1] and sub.pending == 2 and sub.received == 1
    hub.publish(4)  # the ring (capacity 2) overflows: 2 is lost; 4 is not offered either
    assert taken == [1]
    with pytest.raises(BroadcastLagged):
        sub.receive_nowait()
    assert [sub.receive_nowait(), sub.receive_nowait()] == [3, 4]
    hub.publish(5)  # the ring is empty again: offered
    assert taken == [1, 5] and sub.received == 4
    sub.close()
    assert sub.direct is None


async def test_wait_returns_for_an_item_a_loss_or_the_end_and_takes_nothing() -> None:
    hub: Broadcaster[int] = Broadcaster(capacity=1)
    sub = hub.subscribe()
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sub.wait)
            await trio.testing.wait_all_tasks_blocked()
            hub.publish(1)
        assert sub.pending == 1  # wait() took nothing
        hub.publish(2)  # overwrites 1: lost
        await sub.wait()
        with pytest.raises(BroadcastLagged):
            sub.receive_nowait()
        assert sub.receive_nowait() == 2
        hub.close()
        await sub.wait()
        with pytest.raises(trio.EndOfChannel):
            sub.receive_nowait()
