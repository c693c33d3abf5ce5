"""A fleet of agents on one ``triohooks serve``: 10, 100, 1000 websocket clients at once.

Starts the real server as a subprocess (``python -m triohooks serve`` on 127.0.0.1, port 0, its
own temporary workspace, config, state dir and token file, audit on as by default), then the
clients in a second process (``--client`` mode: one trio program holding every connection), so
server and clients each have one of the two cores. One fresh server per client count, so each
RSS peak is that count's own. The clients speak the protocol through a lean frame codec
(wsproto for the handshake, then frames by hand): trio-websocket's client costs about as much
CPU per message as the server, and with every agent in one process the client would be what
limits the figures; ``--client-lib trio-websocket`` runs them on trio-websocket instead.

The hook set (``FLEET_TOML``), a guard config as an agent fleet might have it:

- ``guard-push``: ``pre_tool`` on ``bash`` with ``if = "shell(git push)"``, a one-shot
  ``command`` hook that blocks (exit 2). The ``if`` rule rules out every other command, so
  those events run nothing;
- ``policy``: ``pre_tool`` on ``write``, a warm worker (``worker = true``, pool of 2, a
  ``triohooks.worker`` script answering "no opinion"): one request line per event, no spawn.

Each client is one agent: it fires ``pre_tool`` at a steady ``--rate`` (default 1 per second:
an agent calls a tool once per model turn, every second or more), each client at its own
phase, one fire at a time (an agent waits for its answer), and checks every answer. Out of
every 200 fires: 1 is ``bash git push`` (must come back blocked; one process spawned), 10 are
``write`` (the warm worker runs), the other 189 are ``bash`` or ``read`` calls no hook runs
for (answered at once, no stream record). A tenth of the clients also subscribe to the stream
(``["pre_tool"]``, kind ``hook_finished``: one record per event that ran a hook, to each of
them) and read it while they fire; one more connection subscribes to everything and then never
reads (8 KiB receive buffer): the server's ring for it overflows (what it lost is printed, so
it really stalled) while everyone else is served.

Per client count: fires answered per second, round trip p50 / p99 / max (from the client's
send to its reading of the answer, so the client process's own delays are in it; also by kind
of fire), errors by kind (refused handshakes, closed connections, ``error`` replies, wrong
answers or ids, no answer in 10 s), the server's peak RSS (psutil, sampled every 50 ms from
start to stop) and its CPU share of one core over the measured window, the client process's
CPU, sends the client made more than 5 ms late (``late``: the client fell behind), the stream
delivered to the subscribers (and any lag they saw), and what the stalled one lost. Then
whether the targets hold at the largest count: p99 <= 20 ms, RSS <= 300 MB, 0 errors. The
server's ``--max-connections`` is raised to fit the fleet when it is over the default 256
(printed). Writes ``bench/out/ws_fleet.json``; asserts nothing.

Run: ``.venv/bin/python -m bench.ws_fleet [--clients 10,100,1000] [--duration 10] [--rate 1]
[--repeat N] [--client-lib raw|trio-websocket]`` (about 15 s per client count).
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import random
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import msgspec
import psutil
import trio
from trio_websocket import (
    ConnectionClosed,
    ConnectionRejected,
    WebSocketConnection,
    open_websocket_url,
)
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, RejectConnection, Request

from bench.ws_stream import read_lines

ROOT: Final = Path(__file__).resolve().parent.parent
DEFAULT_MAX_CONNECTIONS: Final = 256  # serve's, printed beside the one this run passes
OUT_DIR: Final = ROOT / "bench" / "out"
P99_TARGET_MS: Final = 20.0
RSS_TARGET_MB: Final = 300.0
#: Extra connections beyond the fleet: the stalled subscriber, the final stats request.
EXTRA_CONNECTIONS: Final = 2
REPLY_TIMEOUT_S: Final = 10.0
CONNECTS_AT_ONCE: Final = 64
#: A fire sent this much after its scheduled time counts as late (the client fell behind).
LATE_S: Final = 0.005
STALLED_RCVBUF: Final = 8192
CLIENT_GC_THRESHOLD: Final = (50_000, 20, 20)
SAMPLE_S: Final = 0.05
#: Out of every 200 fires: 1 blocked (``git push``), 10 to the warm worker, 189 run nothing.
MIX_PERIOD: Final = 200
PUSH_SLOTS: Final = frozenset({0})
WRITE_SLOTS: Final = frozenset(range(1, 200, 20))

FLEET_TOML: Final = """
[[hooks.pre_tool]]
id = "guard-push"
match = "bash"
if = "shell(git push)"
command = "echo no pushing >&2; exit 2"

[[hooks.pre_tool]]
id = "policy"
match = "write"
args = [{python}, {worker}]
worker = true
worker_pool = 2
timeout_seconds = 5
"""

WORKER: Final = """
from triohooks.worker import serve

serve(lambda event: None)  # no opinion
"""


# -- the client process -------------------------------------------------------------------------
class _Outcome(msgspec.Struct):
    blocked: bool = False


class _Reply(msgspec.Struct):
    """What a client reads of a server frame (msgspec skips the rest)."""

    type: str
    id: str | int | None = None
    outcome: _Outcome | None = None
    missed: int = 0
    error: dict[str, Any] | None = None
    events_missed: int = 0
    connections: int = 0
    fires: int = 0


_decode: Final = msgspec.json.Decoder(_Reply).decode


class Refused(Exception):
    """The server answered the handshake with an HTTP status instead of 101."""

    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status


class Closed(Exception):
    """The connection ended (``code``: the close frame's, None without one)."""

    def __init__(self, code: int | None) -> None:
        super().__init__(f"closed: {code}")
        self.code = code


class RawWebsocket:
    """A lean websocket client: wsproto for the handshake, then frames by hand (masked text
    frames out, the server's unmasked single-frame messages in). trio-websocket's client costs
    about as much CPU per message as the server does; with every agent in one process that
    would make the client process what limits the figures (``--client-lib trio-websocket``
    shows it)."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.buf = bytearray()

    @classmethod
    async def connect(cls, url: str, token: str, rcvbuf: int | None = None) -> RawWebsocket:
        host, port = url.removeprefix("ws://").rstrip("/").rsplit(":", 1)
        sock = trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_STREAM)
        if rcvbuf is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        try:
            await sock.connect((host, int(port)))
        except BaseException:
            sock.close()
            raise
        ws = cls(trio.SocketStream(sock))
        try:
            await ws._handshake(host, token)
        except BaseException:
            await trio.aclose_forcefully(ws.stream)
            raise
        return ws

    async def _handshake(self, host: str, token: str) -> None:
        proto = WSConnection(ConnectionType.CLIENT)
        auth = [(b"Authorization", f"Bearer {token}".encode())]
        await self.stream.send_all(proto.send(Request(host=host, target="/", extra_headers=auth)))
        while True:
            data = await self.stream.receive_some(65536)
            if not data:
                raise Closed(None)
            proto.receive_data(data)
            for event in proto.events():
                if isinstance(event, AcceptConnection):
                    return
                if isinstance(event, RejectConnection):
                    raise Refused(event.status_code)

    async def send(self, text: str) -> None:
        payload = text.encode()
        n = len(payload)
        key = random.getrandbits(32).to_bytes(4, "big")
        if n < 126:
            head = bytes((0x81, 0x80 | n))
        elif n < 1 << 16:
            head = bytes((0x81, 0x80 | 126)) + n.to_bytes(2, "big")
        else:
            head = bytes((0x81, 0x80 | 127)) + n.to_bytes(8, "big")
        mask = int.from_bytes((key * (n // 4 + 1))[:n], "big")
        body = (int.from_bytes(payload, "big") ^ mask).to_bytes(n, "big")
        try:
            await self.stream.send_all(head + key + body)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise Closed(None) from None

    async def receive(self) -> str:
        """The next text message (the server sends each in one frame)."""
        while True:
            frame = _next_frame(self.buf)
            if frame is None:
                try:
                    data = await self.stream.receive_some(65536)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    raise Closed(None) from None
                if not data:
                    raise Closed(None)
                self.buf += data
                continue
            opcode, payload = frame
            if opcode == 0x1:
                return payload.decode()
            if opcode == 0x8:
                raise Closed(int.from_bytes(payload[:2], "big") if len(payload) >= 2 else None)
            # ping / pong: the server sends none

    async def aclose(self) -> None:
        await trio.aclose_forcefully(self.stream)


def _next_frame(buf: bytearray) -> tuple[int, bytes] | None:
    """Take one whole server frame (opcode, payload) off ``buf``; None if it is not all there."""
    if len(buf) < 2:
        return None
    n, at = buf[1] & 0x7F, 2
    if n == 126:
        n, at = int.from_bytes(buf[2:4], "big"), 4
    elif n == 127:
        n, at = int.from_bytes(buf[2:10], "big"), 10
    if len(buf) < at + n:
        return None
    opcode, payload = buf[0] & 0x0F, bytes(buf[at : at + n])
    del buf[: at + n]
    return opcode, payload


class LibWebsocket:
    """The same interface over trio-websocket (``--client-lib trio-websocket``)."""

    def __init__(self, ws: WebSocketConnection) -> None:
        self.ws = ws

    async def send(self, text: str) -> None:
        try:
            await self.ws.send_message(text)
        except ConnectionClosed as exc:
            raise Closed(exc.reason.code if exc.reason else None) from None

    async def receive(self) -> str:
        try:
            return str(await self.ws.get_message())
        except ConnectionClosed as exc:
            raise Closed(exc.reason.code if exc.reason else None) from None


@asynccontextmanager
async def open_connection(lib: str, url: str, token: str) -> AsyncIterator[Any]:
    if lib == "raw":
        ws = await RawWebsocket.connect(url, token)
        try:
            yield ws
        finally:
            await ws.aclose()
        return
    headers = [(b"Authorization", f"Bearer {token}".encode())]
    try:
        async with open_websocket_url(url, extra_headers=headers, message_queue_size=64) as conn:
            yield LibWebsocket(conn)
    except ConnectionRejected as exc:
        raise Refused(exc.status_code) from None


class Fleet:
    """What the client process shares and counts."""

    def __init__(self, clients: int, rate: float, duration: float, lib: str) -> None:
        self.clients = clients
        self.rate = rate
        self.warmup = max(1.0, min(3.0, 5 / rate))  # every client's worker/cache paths warm
        self.duration = duration
        self.lib = lib
        #: The common time zero on trio's clock (what sleep_until reads), set once all are in.
        self.start = 0.0
        self.latencies: dict[str, list[float]] = {kind: [] for kind in KINDS}
        self.errors: Counter[str] = Counter()
        self.late = 0
        self.in_flight = 0
        self.sent_in_window = 0
        self.events = 0
        self.lagged = 0
        self.connected = 0
        #: Agents whose handshake is over, either way.
        self.settled = 0
        self.go = trio.Event()
        self.all_settled = trio.Event()
        self.stop = trio.Event()
        self.idle = trio.Event()

    @property
    def window(self) -> tuple[float, float]:
        return self.start + self.warmup, self.start + self.warmup + self.duration

    def error(self, kind: str) -> None:
        self.errors[kind] += 1

    def settle(self) -> None:
        self.settled += 1
        if self.settled == self.clients:
            self.all_settled.set()


#: Fire kinds: no hook runs, the warm worker runs, a process is spawned (and blocks).
KINDS: Final = ("nothing runs", "warm worker", "spawn, blocked")


def _fire_frames(client: int) -> list[tuple[str, str, str]]:
    """This client's fire frames as (before the id, after the id, kind), MIX_PERIOD of them."""
    frames = []
    for slot in range(MIX_PERIOD):
        args: dict[str, str]
        if slot in PUSH_SLOTS:
            tool, args, kind = "bash", {"command": "git push origin main"}, KINDS[2]
        elif slot in WRITE_SLOTS:
            tool, args, kind = "write", {"path": f"src/m{slot}.py", "content": "x = 1\n"}, KINDS[1]
        elif slot % 2:
            tool, args, kind = "bash", {"command": f"pytest -q tests/test_{slot}.py"}, KINDS[0]
        else:
            tool, args, kind = "read", {"path": f"src/m{slot}.py"}, KINDS[0]
        payload = {"tool": tool, "args": args, "session_id": f"agent-{client}"}
        body = msgspec.json.encode({"event": "pre_tool", "payload": payload}).decode()
        frames.append(('{"type":"fire","id":', "," + body[1:], kind))
    return frames


async def _agent(
    fleet: Fleet, url: str, token: str, index: int, handshakes: trio.Semaphore
) -> None:
    """One agent: connect, maybe subscribe, fire at its steady rate, check every answer."""
    subscriber = index % 10 == 0
    frames = _fire_frames(index)
    rng = random.Random(index)
    offset = rng.randrange(MIX_PERIOD)
    phase = rng.random() / fleet.rate
    settled = False
    try:
        async with handshakes:
            connection = open_connection(fleet.lib, url, token)
            ws = await connection.__aenter__()
        fleet.connected += 1
        settled = True
        fleet.settle()
        try:
            answers: dict[int, _Reply] = {}
            waiting: dict[int, trio.Event] = {}
            async with trio.open_nursery() as nursery:
                if subscriber:
                    await ws.send(SUBSCRIBE)
                    nursery.start_soon(_read_all, fleet, ws, waiting, answers)
                await fleet.go.wait()
                await _fire_steadily(fleet, ws, frames, offset, phase, subscriber, waiting, answers)
                await fleet.stop.wait()
                nursery.cancel_scope.cancel()
        finally:
            with trio.CancelScope(shield=True):
                await connection.__aexit__(None, None, None)
    except Refused as exc:
        fleet.error(f"handshake refused: HTTP {exc.status}")
    except Closed as exc:
        if not fleet.stop.is_set():
            fleet.error(f"connection closed: {exc.code}")
    except (OSError, trio.BrokenResourceError) as exc:
        fleet.error(f"{type(exc).__name__}: {getattr(exc, 'strerror', None) or exc}")
    finally:
        if not settled:
            fleet.settle()


SUBSCRIBE: Final = '{"type":"subscribe","id":"s","events":["pre_tool"],"kinds":["hook_finished"]}'


async def _fire_steadily(
    fleet: Fleet,
    ws: Any,
    frames: list[tuple[str, str, str]],
    offset: int,
    phase: float,
    subscriber: bool,
    waiting: dict[int, trio.Event],
    answers: dict[int, _Reply],
) -> None:
    low, high = fleet.window
    k = 0
    while (due := fleet.start + phase + k / fleet.rate) < high:
        await trio.sleep_until(due)
        before, after, kind = frames[(offset + k) % MIX_PERIOD]
        k += 1
        counted = low <= due
        if counted:
            fleet.sent_in_window += 1
            if trio.current_time() - due > LATE_S:
                fleet.late += 1
        fleet.in_flight += 1
        try:
            if subscriber:  # the reader task hands the answer over
                done = waiting[k] = trio.Event()
            sent = time.perf_counter()
            await ws.send(before + str(k) + after)
            with trio.move_on_after(REPLY_TIMEOUT_S) as timeout:
                if subscriber:
                    await done.wait()
                    answer = answers.pop(k)
                else:
                    answer = _decode(await ws.receive())
            took = time.perf_counter() - sent
        finally:
            fleet.in_flight -= 1
            if not fleet.in_flight and fleet.idle is not None:
                fleet.idle.set()
            waiting.pop(k, None)
        if timeout.cancelled_caught:
            fleet.error(f"no answer in {REPLY_TIMEOUT_S:g} s")
        elif answer.type == "error":
            fleet.error(f"error reply: {(answer.error or {}).get('code')}")
        elif answer.id != k:
            fleet.error("answer with the wrong id")
        elif answer.outcome is None or answer.outcome.blocked != (kind == KINDS[2]):
            fleet.error("wrong answer")
        elif counted:
            fleet.latencies[kind].append(took)


async def _read_all(
    fleet: Fleet, ws: Any, waiting: dict[int, trio.Event], answers: dict[int, _Reply]
) -> None:
    """A subscriber's reader: stream records counted, answers handed to the firing task."""
    while True:
        frame = await ws.receive()
        if frame.startswith('{"type":"event"'):
            fleet.events += 1
            continue
        reply = _decode(frame)
        if reply.type == "lagged":
            fleet.lagged += reply.missed
        elif isinstance(reply.id, int):
            done = waiting.get(reply.id)
            if done is None:
                fleet.error("answer nobody waited for")
                continue
            answers[reply.id] = reply
            done.set()
        elif reply.type != "subscribed":
            fleet.error(f"unexpected {reply.type} frame")


async def _stalled(url: str, token: str, ready: trio.Event, stop: trio.Event) -> None:
    """Subscribe to everything, then never read (8 KiB receive buffer, so the server's ring
    for this connection soon overflows)."""
    ws = await RawWebsocket.connect(url, token, rcvbuf=STALLED_RCVBUF)
    try:
        await ws.send('{"type":"subscribe","id":"stalled"}')
        await ws.receive()  # "subscribed"; then never read again
        ready.set()
        await stop.wait()
    finally:
        await ws.aclose()


async def _server_stats(url: str, token: str) -> _Reply:
    async with open_connection("raw", url, token) as ws:
        await ws.send('{"type":"stats","id":"stats"}')
        return _decode(await ws.receive())


async def client_main(
    url: str, token: str, clients: int, rate: float, duration: float, lib: str
) -> None:
    fleet = Fleet(clients, rate, duration, lib)
    stalled_ready = trio.Event()
    handshakes = trio.Semaphore(CONNECTS_AT_ONCE)
    t0 = time.perf_counter()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_stalled, url, token, stalled_ready, fleet.stop)
        with trio.fail_after(120):
            await stalled_ready.wait()
            for index in range(clients):
                nursery.start_soon(_agent, fleet, url, token, index, handshakes)
            await fleet.all_settled.wait()
        connect_s = time.perf_counter() - t0
        await trio.sleep(0.2)  # the subscribers' subscribe frames are answered
        # A load generator's own pauses would count in every round trip: the connections'
        # objects are kept out of the collector's way (as serve does with its own).
        gc.collect()
        gc.freeze()
        gc.set_threshold(*CLIENT_GC_THRESHOLD)
        fleet.start = trio.current_time() + 0.05
        low, high = fleet.window
        print(json.dumps({"connected": fleet.connected, "connect_s": connect_s}), flush=True)
        fleet.go.set()
        await trio.sleep_until(low)
        cpu0, events0 = time.process_time(), fleet.events
        print("window", flush=True)
        await trio.sleep_until(high)
        cpu, events = time.process_time() - cpu0, fleet.events - events0
        print("window-end", flush=True)
        with trio.move_on_after(REPLY_TIMEOUT_S + 1):  # the last answers come in
            while fleet.in_flight:
                fleet.idle = trio.Event()
                await fleet.idle.wait()
        stats = await _server_stats(url, token)
        fleet.stop.set()
    every = sorted(t for ts in fleet.latencies.values() for t in ts)
    result = {
        "clients": clients,
        "subscribers": (clients + 9) // 10,
        "rate": rate,
        "client_lib": lib,
        "duration_s": duration,
        "connected": fleet.connected,
        "connect_s": connect_s,
        "sent": fleet.sent_in_window,
        "answered": len(every),
        "throughput": len(every) / duration,
        "p50_ms": _pct(every, 0.50) * 1e3,
        "p99_ms": _pct(every, 0.99) * 1e3,
        "max_ms": (every[-1] if every else math.nan) * 1e3,
        "by_kind": {
            kind: {
                "n": len(ts),
                "p50_ms": _pct(sorted(ts), 0.50) * 1e3,
                "p99_ms": _pct(sorted(ts), 0.99) * 1e3,
            }
            for kind, ts in fleet.latencies.items()
        },
        "late_sends": fleet.late,
        "errors": dict(fleet.errors),
        "client_cpu": cpu / duration,
        "stream_records_per_s": events / duration,
        "healthy_lagged": fleet.lagged,
        "stalled_lost": stats.events_missed - fleet.lagged,
        "server_fires": stats.fires,
    }
    print(json.dumps(result), flush=True)


def _pct(ordered: list[float], q: float) -> float:
    if not ordered:
        return math.nan
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# -- the driver ---------------------------------------------------------------------------------
def _raise_nofile(needed: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


class _Sampler:
    def __init__(self, pid: int) -> None:
        self.proc = psutil.Process(pid)
        self.peak_rss = 0
        self.idle_rss = 0

    def sample(self) -> None:
        try:
            self.peak_rss = max(self.peak_rss, self.proc.memory_info().rss)
        except psutil.Error:
            pass

    def cpu(self) -> float:
        times = self.proc.cpu_times()
        return float(times.user + times.system)

    async def run(self) -> None:
        while True:
            self.sample()
            await trio.sleep(SAMPLE_S)


def _write_config(tmp: Path) -> dict[str, Path]:
    dirs = {name: tmp / name for name in ("ws", "config", "state")}
    for path in dirs.values():
        path.mkdir()
    worker = tmp / "policy_worker.py"
    worker.write_text(WORKER)
    toml = tmp / "fleet.toml"
    toml.write_text(
        FLEET_TOML.format(python=json.dumps(sys.executable), worker=json.dumps(str(worker)))
    )
    token = tmp / "token"
    token.write_text("fleet-bench-" + os.urandom(16).hex() + "\n")
    token.chmod(0o600)
    return {**dirs, "toml": toml, "token": token}


async def run_count(
    clients: int, rate: float, duration: float, cap: int, lib: str
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ws-fleet-") as tmp:
        paths = _write_config(Path(tmp))
        token = paths["token"].read_text().strip()
        argv = [
            sys.executable, "-m", "triohooks", "serve", "--port", "0",
            "--workspace", str(paths["ws"]), "--config-dir", str(paths["config"]),
            "--config", str(paths["toml"]), "--token-file", str(paths["token"]),
            "--max-connections", str(cap),
        ]  # fmt: skip
        env = {**os.environ, "TRIOHOOKS_STATE_DIR": str(paths["state"])}
        server = await trio.lowlevel.open_process(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True
        )
        try:
            return await _drive(server, clients, rate, duration, token, lib)
        finally:
            await _stop(server)


async def _drive(
    server: trio.Process, clients: int, rate: float, duration: float, token: str, lib: str
) -> dict[str, Any]:
    assert server.stdout is not None and server.stderr is not None
    out = read_lines(server.stdout)
    with trio.fail_after(30):
        first = await out.__anext__()
    url = first.rsplit(" ", 1)[-1]
    sampler = _Sampler(server.pid)
    sampler.sample()
    idle_rss = sampler.peak_rss
    stderr: list[str] = []
    argv = [sys.executable, "-m", "bench.ws_fleet", "--client", url, token]
    argv += [str(clients), str(rate), str(duration), lib]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(sampler.run)
        nursery.start_soon(_collect, server.stderr, stderr)
        client = await trio.lowlevel.open_process(argv, stdout=subprocess.PIPE, cwd=ROOT)
        try:
            assert client.stdout is not None
            lines = read_lines(client.stdout)
            connected = json.loads(await lines.__anext__())
            assert await lines.__anext__() == "window"
            cpu0, t0 = sampler.cpu(), time.perf_counter()
            assert await lines.__anext__() == "window-end"
            server_cpu = (sampler.cpu() - cpu0) / (time.perf_counter() - t0)
            result: dict[str, Any] = json.loads(await lines.__anext__())
        finally:
            with trio.CancelScope(shield=True):
                with trio.move_on_after(30):
                    await client.wait()
                if client.returncode is None:
                    client.kill()
                    await client.wait()
        sampler.sample()
        nursery.cancel_scope.cancel()
    result |= {
        "connect_s": connected["connect_s"],
        "server_cpu": server_cpu,
        "server_rss_mb": sampler.peak_rss / 1e6,
        "server_idle_rss_mb": idle_rss / 1e6,
        "server_log": [line for line in stderr if line.strip()][:20],
    }
    return result


async def _collect(stream: trio.abc.ReceiveStream, into: list[str]) -> None:
    async for line in read_lines(stream):
        into.append(line)


async def _stop(server: trio.Process) -> None:
    """SIGTERM (graceful), then SIGKILL of its process group: no serve is left behind."""
    with trio.CancelScope(shield=True):
        if server.returncode is None:
            server.send_signal(signal.SIGTERM)
            with trio.move_on_after(20):
                await server.wait()
        if server.returncode is None:
            try:
                os.killpg(server.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            await server.wait()


def _show(row: dict[str, Any]) -> None:
    errors = ", ".join(f"{k}: {v}" for k, v in row["errors"].items()) or "0"
    print(
        f"{row['clients']:>6} {row['throughput']:>9.0f} {row['p50_ms']:>8.2f} "
        f"{row['p99_ms']:>8.2f} {row['max_ms']:>8.1f} {row['server_rss_mb']:>8.1f} "
        f"{row['server_cpu']:>7.0%} {row['client_cpu']:>7.0%} {row['late_sends']:>6}  {errors}",
        flush=True,
    )
    kinds = "; ".join(
        f"{kind} {v['n']}: {v['p50_ms']:.2f} / {v['p99_ms']:.2f}" if v["n"] else f"{kind} 0"
        for kind, v in row["by_kind"].items()
    )
    print(f"{'':>6} p50 / p99 ms by fire: {kinds}", flush=True)
    print(
        f"{'':>6} stream: {row['stream_records_per_s']:.0f} records/s to {row['subscribers']} "
        f"subscribers (lost to lag: {row['healthy_lagged']}); the stalled one lost "
        f"{row['stalled_lost']}; {row['connected']} connected in {row['connect_s']:.2f} s; "
        f"RSS before {row['server_idle_rss_mb']:.1f} MB",
        flush=True,
    )
    for line in row["server_log"]:
        print(f"{'':>6} serve: {line}", flush=True)


async def driver_main(
    counts: list[int], rate: float, duration: float, lib: str, repeat: int
) -> list[dict[str, Any]]:
    cap = max(DEFAULT_MAX_CONNECTIONS, max(counts) + EXTRA_CONNECTIONS)
    raised = f" (raised from the default {DEFAULT_MAX_CONNECTIONS})"
    print(
        f"{rate:g} fires/s per client, {duration:g} s measured per count, a tenth of the "
        f"clients subscribed, 1 stalled subscriber, {lib} clients; serve --max-connections "
        f"{cap}{raised if cap > DEFAULT_MAX_CONNECTIONS else ''}; {os.cpu_count()} cores, load "
        f"{os.getloadavg()[0]:.2f}",
        flush=True,
    )
    print(
        f"{'client':>6} {'fires/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} "
        f"{'RSS MB':>8} {'srv CPU':>7} {'cli CPU':>7} {'late':>6}  errors",
        flush=True,
    )
    rows = []
    for _ in range(repeat):
        for clients in counts:
            row = await run_count(clients, rate, duration, cap, lib)
            rows.append(row)
            _show(row)
    last = rows[-1]
    verdicts = [
        ("p99 <= 20 ms", last["p99_ms"] <= P99_TARGET_MS),
        ("RSS <= 300 MB", last["server_rss_mb"] <= RSS_TARGET_MB),
        ("0 errors", not last["errors"] and last["answered"] == last["sent"]),
    ]
    print(
        f"targets at {last['clients']} clients: "
        + ", ".join(f"{name}: {'met' if ok else 'NOT met'}" for name, ok in verdicts),
        flush=True,
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description="many websocket clients on one serve")
    parser.add_argument("--clients", default="10,100,1000", help="client counts, comma-separated")
    parser.add_argument("--duration", type=float, default=10.0, help="measured seconds per count")
    parser.add_argument(
        "--rate", type=float, default=1.0, help="fires per second per client (default: 1)"
    )
    parser.add_argument("--repeat", type=int, default=1, help="run the client counts N times")
    parser.add_argument(
        "--client-lib",
        choices=("raw", "trio-websocket"),
        default="raw",
        help="the clients' websocket code (default: raw, a lean frame codec)",
    )
    parser.add_argument("--client", nargs=6, help=argparse.SUPPRESS)  # the client process
    args = parser.parse_args()
    if args.client:
        url, token, clients, rate, seconds, lib = args.client
        _raise_nofile(int(clients) + 64)
        trio.run(client_main, url, token, int(clients), float(rate), float(seconds), lib)
        return
    counts = [int(c) for c in args.clients.split(",") if c]
    rows = trio.run(driver_main, counts, args.rate, args.duration, args.client_lib, args.repeat)
    OUT_DIR.mkdir(exist_ok=True)
    (OUT_DIR / "ws_fleet.json").write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
