"""Websocket event-stream benchmark for ``triohooks serve``.

Runs the real server (:func:`triohooks.fronts.server.serve`: engine, listener, broadcaster,
senders) in this process and its subscribers in a separate client process (``--client`` mode, real
trio-websocket connections over 127.0.0.1), so the two sides use two cores.

Stream capacity: records are published through the server's engine listener (the same call the
engine makes for every event, ``hook_finished``-shaped records) at a paced offered rate, for 1
subscriber and for 9 healthy subscribers, each with and without one stalled subscriber (10 in
all). A stalled subscriber subscribes, then never reads; its receive buffer is 8 KiB, and
measuring starts only once its server-side ring overflowed, so it really is stalled. For each:
delivered events/s per healthy subscriber (received / time between its first and last record),
records it lost to lag, and the throughput kept with the stalled one present (target >= 90 %).
Then an engine-driven run (``pre_tool`` fired flat out with a no-op in-process hook, 4 records
per fire, publisher and senders sharing the one trio thread), and the fire round-trip latency
p50/p99 over the websocket vs a direct in-process ``engine.fire``. Target: >= 20 000 events/s
to one subscriber. Prints figures, writes ``bench/out/ws_stream.json``; asserts nothing.

Run: ``python -m bench.ws_stream`` (about 40 s).
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Final

import msgspec
import trio
from trio_websocket import open_websocket_url, wrap_client_stream

from triohooks.fronts.client import connect
from triohooks.fronts.server import HookServer, ServeSettings, serve
from triohooks.fronts.wire import Lagged, Subscribe, decode_server, encode

ROOT: Final = Path(__file__).resolve().parent.parent
OUT_DIR: Final = ROOT / "bench" / "out"
TOKEN: Final = "bench-token"
DELIVERY_TARGET: Final = 20_000.0
KEPT_TARGET: Final = 0.90
#: A subscriber that saw nothing for this long has received everything.
QUIET_S: Final = 1.0
STALLED_RCVBUF: Final = 8192
EVENT_PREFIX: Final = '{"type":"event",'
TICK_S: Final = 0.001
#: A record shaped like the engine's hook_finished.
FIELDS: Final = {
    "event": "pre_tool",
    "hook": "guard-push",
    "outcome": "allow",
    "exit_code": 0,
    "duration_ms": 3.25,
}


class SubResult(msgspec.Struct):
    received: int = 0
    missed: int = 0
    first: float = 0.0
    last: float = 0.0

    @property
    def rate(self) -> float:
        span = self.last - self.first
        return self.received / span if span > 0 else 0.0


# -- the client process -------------------------------------------------------------------------
async def _healthy(url: str, result: SubResult, ready: trio.Event) -> None:
    """A lean reader (raw trio-websocket, 64 KiB reads, no per-frame decode of events) so the
    client process, not the server, is not what limits the figure."""
    async with open_websocket_url(
        url,
        extra_headers=[(b"Authorization", f"Bearer {TOKEN}".encode())],
        message_queue_size=1024,
        receive_buffer_size=65536,
    ) as ws:
        await ws.send_message(encode(Subscribe(id="h")))
        await ws.get_message()  # "subscribed"
        ready.set()
        while True:
            with trio.move_on_after(QUIET_S) as quiet:
                frame = await ws.get_message()
            if quiet.cancelled_caught:
                if result.received or result.missed:
                    return
                continue
            now = time.perf_counter()
            if not str(frame).startswith(EVENT_PREFIX):
                msg = decode_server(frame)
                assert isinstance(msg, Lagged), msg
                result.missed += msg.missed
                continue
            if not result.received:
                result.first = now
            result.received += 1
            result.last = now


async def _stalled(url: str, ready: trio.Event, stop: trio.Event) -> None:
    """Subscribe, then never read; a small receive buffer so the server sees it at once."""
    host_port = url.removeprefix("ws://").rstrip("/")
    host, port = host_port.rsplit(":", 1)
    sock = trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, STALLED_RCVBUF)
    await sock.connect((host, int(port)))
    async with trio.open_nursery() as nursery:
        ws = await wrap_client_stream(
            nursery,
            trio.SocketStream(sock),
            host,
            "/",
            extra_headers=[(b"Authorization", f"Bearer {TOKEN}".encode())],
        )
        await ws.send_message(encode(Subscribe(id="s")))
        await ws.get_message()  # the "subscribed" reply; then never read again
        ready.set()
        await stop.wait()
        nursery.cancel_scope.cancel()


async def client_main(url: str, healthy: int, stalled: int) -> None:
    results = [SubResult() for _ in range(healthy)]
    stop = trio.Event()
    readies = [trio.Event() for _ in range(healthy + stalled)]
    async with trio.open_nursery() as outer:
        for ready in readies[healthy:]:
            outer.start_soon(_stalled, url, ready, stop)
        async with trio.open_nursery() as inner:  # ends when every healthy stream went quiet
            for result, ready in zip(results, readies, strict=False):
                inner.start_soon(_healthy, url, result, ready)
            for ready in readies:
                await ready.wait()
            print("ready", flush=True)
        stop.set()
    print(json.dumps([msgspec.to_builtins(r) | {"rate": r.rate} for r in results]), flush=True)


# -- the server side ----------------------------------------------------------------------------
async def _noop(fields: Any) -> None:
    return None


async def read_lines(stream: trio.abc.ReceiveStream) -> AsyncIterator[str]:
    """The lines a child process writes to ``stream``, as they come (bench/ws_fleet.py too)."""
    buf = b""
    while True:
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            yield line.decode()
        chunk = await stream.receive_some()
        if not chunk:
            return
        buf += chunk


async def _publish_paced(server: HookServer, rate: float, seconds: float) -> int:
    """Publish ``rate`` records/s through the engine listener, in 1 ms ticks."""
    start = time.perf_counter()
    sent = 0
    while (now := time.perf_counter()) - start < seconds:
        due = int((now - start) * rate) - sent
        for _ in range(due):
            server.on_engine_event("hook_finished", dict(FIELDS))
        sent += due
        await trio.sleep(TICK_S)
    return sent


async def _fire_flat_out(server: HookServer, seconds: float) -> int:
    start = time.perf_counter()
    published0 = server.hub.published
    while time.perf_counter() - start < seconds:
        await server.engine.fire("pre_tool", {"tool": "bash", "args": {"command": "ls"}})
    return server.hub.published - published0


async def run_scenario(
    server: HookServer, healthy: int, stalled: int, seconds: float, rate: float | None
) -> dict[str, Any]:
    """``rate`` None: the engine-driven run."""
    argv = [sys.executable, "-m", "bench.ws_stream", "--client", server.url]
    proc = await trio.lowlevel.open_process(
        [*argv, str(healthy), str(stalled)], stdout=subprocess.PIPE, cwd=ROOT
    )
    assert proc.stdout is not None
    lines = read_lines(proc.stdout)
    assert (await lines.__anext__()).strip() == "ready"
    if stalled:  # warm up until the stalled subscribers' rings overflow
        with trio.fail_after(30):
            while server.stats(None).events_missed == 0:
                await _publish_paced(server, rate or 20_000.0, 0.05)
    missed0 = server.stats(None).events_missed
    start = time.perf_counter()
    if rate is None:
        published = await _fire_flat_out(server, seconds)
    else:
        published = await _publish_paced(server, rate, seconds)
    elapsed = time.perf_counter() - start
    missed_by_all = server.stats(None).events_missed - missed0
    results = json.loads(await lines.__anext__())
    await proc.wait()
    rates = [r["rate"] for r in results]
    return {
        "healthy": healthy,
        "stalled": stalled,
        "offered_per_s": rate,
        "published_per_s": published / elapsed,
        "delivered_per_s_each": rates,
        "delivered_per_s_mean": statistics.fmean(rates),
        "missed_each": [r["missed"] for r in results],
        "stalled_missed": max(0, missed_by_all - sum(r["missed"] for r in results)),
    }


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def latency(server: HookServer, n: int) -> dict[str, float]:
    payload = {"tool": "bash", "args": {"command": "ls"}}
    direct: list[float] = []
    for _ in range(n):
        t = time.perf_counter()
        await server.engine.fire("pre_tool", payload)
        direct.append((time.perf_counter() - t) * 1e6)
    remote: list[float] = []
    async with connect(server.url, TOKEN) as client:
        for _ in range(n):
            t = time.perf_counter()
            await client.fire("pre_tool", payload)
            remote.append((time.perf_counter() - t) * 1e6)
    return {
        "direct_p50_us": _pct(direct, 0.5),
        "direct_p99_us": _pct(direct, 0.99),
        "ws_p50_us": _pct(remote, 0.5),
        "ws_p99_us": _pct(remote, 0.99),
    }


def _show(row: dict[str, Any]) -> None:
    offered = f"{row['offered_per_s']:7.0f}/s" if row["offered_per_s"] else "engine   "
    lost = row["missed_each"]
    print(
        f"  {row['healthy']} healthy + {row['stalled']} stalled, offered {offered}: "
        f"published {row['published_per_s']:7.0f}/s, delivered "
        f"{row['delivered_per_s_mean']:7.0f}/s per healthy subscriber "
        f"({row['delivered_per_s_mean'] * row['healthy']:7.0f}/s in all), lost to lag per "
        f"healthy {max(lost)}"
        + (f", by the stalled one {row['stalled_missed']}" if row["stalled"] else ""),
        flush=True,
    )


async def server_main(seconds: float, fires: int) -> dict[str, Any]:
    plan: list[tuple[int, int, float | None]] = [
        *((1, st, r) for r in (10_000.0, 20_000.0, 30_000.0, 40_000.0) for st in (0, 1)),
        *((9, st, r) for r in (1_000.0, 2_000.0, 3_000.0) for st in (0, 1)),
        (1, 0, None),
        (1, 1, None),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        ws, cfg = Path(tmp) / "ws", Path(tmp) / "g"
        ws.mkdir()
        cfg.mkdir()
        settings = ServeSettings(
            token=TOKEN,
            port=0,
            engine={"workspace": ws, "config_dir": cfg, "audit": False, "watchdog": False},
            close_timeout_s=0.5,
        )
        async with trio.open_nursery() as nursery:
            server: HookServer = await nursery.start(serve, settings)
            server.engine.add_hook("pre_tool", _noop, name="noop")
            rows = []
            for healthy, stalled, rate in plan:
                row = await run_scenario(server, healthy, stalled, seconds, rate)
                rows.append(row)
                _show(row)
            lat = await latency(server, fires)
            server.shutdown()
    return {"scenarios": rows, "latency": lat, **_summary(rows, lat)}


def _summary(rows: list[dict[str, Any]], lat: dict[str, float]) -> dict[str, Any]:
    by = {(r["healthy"], r["stalled"], r["offered_per_s"]): r for r in rows}
    one = max(r["delivered_per_s_mean"] for r in rows if r["healthy"] == 1 and not r["stalled"])
    kept = {
        f"{h}@{rate:.0f}": by[h, 1, rate]["delivered_per_s_mean"]
        / by[h, 0, rate]["delivered_per_s_mean"]
        for h, _, rate in by
        if rate is not None and (h, 1, rate) in by and (h, 0, rate) in by
    }
    print(
        f"to one subscriber: {one:.0f} events/s at best (target >= {DELIVERY_TARGET:.0f}: "
        f"{'met' if one >= DELIVERY_TARGET else 'NOT met'})"
    )
    for label, share in kept.items():
        verdict = "met" if share >= KEPT_TARGET else "NOT met"
        healthy, rate = label.split("@")
        print(
            f"  {healthy} healthy at {rate}/s offered keep {share:.1%} of their throughput "
            f"with a stalled subscriber ({verdict})"
        )
    print(
        f"fire round trip: websocket p50 {lat['ws_p50_us']:.0f} us, p99 {lat['ws_p99_us']:.0f} us;"
        f" direct in-process p50 {lat['direct_p50_us']:.0f} us, p99 {lat['direct_p99_us']:.0f} us"
    )
    return {"best_to_one": one, "kept": kept}


def main() -> None:
    parser = argparse.ArgumentParser(description="websocket event-stream benchmark")
    parser.add_argument("--seconds", type=float, default=1.5, help="publishing time per run")
    parser.add_argument("--fires", type=int, default=2000, help="fires per latency sample")
    parser.add_argument("--client", nargs=3, metavar=("URL", "HEALTHY", "STALLED"))
    args = parser.parse_args()
    if args.client:
        url, healthy, stalled = args.client
        trio.run(client_main, url, int(healthy), int(stalled))
        return
    report = trio.run(server_main, args.seconds, args.fires)
    OUT_DIR.mkdir(exist_ok=True)
    (OUT_DIR / "ws_stream.json").write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
