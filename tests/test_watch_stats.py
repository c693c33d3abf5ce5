"""``triohooks watch --stats``: the client-side numbers of the event stream, and their two views.

The aggregation (:class:`StreamStats`) is tested with synthetic records and explicit clock values;
the command end to end against the real websocket server on 127.0.0.1 port 0 with real TOML hook
processes (one that blocks, one that fails, one that times out, a slow one, a background one whose
queue overflows), and against a fake server that sends a ``lagged`` frame and then drops the TCP
connection without a close frame.
"""

from __future__ import annotations

import argparse
import io
import json
import re
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
from trio_websocket import CloseReason, wrap_server_stream

from triohooks.actors.audit_records import AuditStats
from triohooks.fronts.client import connect
from triohooks.fronts.server import HookServer
from triohooks.fronts.watch import (
    MAX_ROWS,
    OTHER,
    STATS_KINDS,
    DurationRing,
    StatsView,
    StreamStats,
    add_watch_command,
    cmd_watch,
    format_stats,
    percentile,
    watch_stats,
)
from triohooks.fronts.wire import EventRecord, Lagged, StatsReply

from .helpers import write_toml_hooks
from .serving import running_server

TOKEN = "watch-stats-token-0123456789"


def _record(kind: str, event: str | None = "pre_tool", seq: int = 1, **data: Any) -> EventRecord:
    return EventRecord(seq=seq, kind=kind, time=0.0, event=event, data=data)


def _finished(hook: str, outcome: str, ms: float, event: str = "pre_tool") -> EventRecord:
    return _record(
        "hook_finished", event, hook=hook, outcome=outcome, exit_code=None, duration_ms=ms
    )


def _row(snap: dict[str, Any], event: str, hook: str) -> dict[str, Any]:
    rows: list[dict[str, Any]] = snap["hooks"]
    (row,) = [r for r in rows if (r["event"], r["hook"]) == (event, hook)]
    return row


# -- the numbers ----------------------------------------------------------------------------------


def test_percentile_is_nearest_rank() -> None:
    hundred = [float(n) for n in range(1, 101)]
    assert percentile(hundred, 0.5) == 50.0
    assert percentile(hundred, 0.99) == 99.0
    assert percentile(hundred, 1.0) == 100.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.99) == 4.0
    assert percentile([7.5], 0.5) == percentile([7.5], 0.99) == 7.5
    assert percentile([], 0.5) is None


def test_duration_ring_keeps_the_newest_values_and_filters_by_time() -> None:
    ring = DurationRing(4)
    for t in range(6):  # values 0, 10, ... 50 at times 0 ... 5: the first two are overwritten
        ring.add(float(t), 10.0 * t)
    assert ring.count == 4
    assert ring.since(float("-inf")) == [20.0, 30.0, 40.0, 50.0]
    assert ring.since(4.0) == [40.0, 50.0]
    assert ring.since(6.0) == []
    with pytest.raises(ValueError):
        DurationRing(0)


def test_per_hook_counts_and_the_duration_window() -> None:
    stats = StreamStats("ws://x/", window_s=60)
    stats.connected(0.0)
    stats.add(_record("fired", hooks=2, session="s"), 0.0)
    stats.add(_record("hook_started", hook="guard"), 0.0)
    stats.add(_finished("guard", "block", 1000.0), 0.0)  # leaves the window by t = 70
    for t, ms in enumerate([5.0, 1.0, 3.0, 2.0, 4.0], start=20):
        stats.add(_record("hook_started", hook="guard"), float(t))
        stats.add(_finished("guard", "ok", ms), float(t))
    stats.add(_record("hook_started", hook="guard"), 30.0)  # still running
    stats.add(_finished("broken", "error", 7.0), 40.0)
    stats.add(_finished("slowpoke", "timeout", 200.0), 41.0)
    stats.add(_finished("guard", "ok", 9.0, event="stop"), 42.0)  # same name, other event

    early = stats.snapshot(10.0)  # t = 10: only the 1000 ms run has finished
    assert _row(early, "pre_tool", "guard")["max_ms"] == 1000.0

    snap = stats.snapshot(70.0)
    guard = _row(snap, "pre_tool", "guard")
    assert guard["runs"] == 6 and guard["started"] == 7 and guard["running"] == 1
    assert guard["outcomes"] == {"block": 1, "ok": 5}
    assert guard["failures"] == 0
    # The window (t >= 10) holds the five ok runs: 1 2 3 4 5 ms, not the 1000 ms one.
    assert guard["window_runs"] == 5
    assert (guard["p50_ms"], guard["p99_ms"], guard["max_ms"]) == (3.0, 5.0, 5.0)
    assert _row(snap, "pre_tool", "broken")["failures"] == 1
    assert _row(snap, "pre_tool", "slowpoke")["outcomes"] == {"timeout": 1}
    assert _row(snap, "stop", "guard")["runs"] == 1
    assert [(r["event"], r["hook"]) for r in snap["hooks"]] == [
        ("pre_tool", "broken"),
        ("pre_tool", "guard"),
        ("pre_tool", "slowpoke"),
        ("stop", "guard"),
    ]
    assert snap["failures"] == 2  # error + timeout
    assert snap["records"] == 17 and snap["last_seq"] == 1
    assert snap["kinds"] == {"fired": 1, "hook_finished": 9, "hook_started": 7}
    assert snap["connection"] == {"state": "connected", "detail": None, "connected_s": 70.0}

    late = stats.snapshot(200.0)  # nothing finished in the last 60 s: counts stay, no durations
    guard = _row(late, "pre_tool", "guard")
    assert guard["runs"] == 6 and guard["window_runs"] == 0
    assert guard["p50_ms"] is guard["p99_ms"] is guard["max_ms"] is None


def test_outcomes_blocked_continued_queued_and_drops() -> None:
    stats = StreamStats()
    outcomes = [
        ("pre_tool", {"blocked": True, "continue": False}),
        ("pre_tool", {"blocked": True, "continue": False}),
        ("pre_tool", {"blocked": False, "continue": False}),
        ("stop", {"blocked": True, "continue": True}),  # a stop "block": one more turn
        ("post_tool", {"blocked": False, "queued": True}),
        ("post_tool", {"blocked": False, "queued": False}),
    ]
    for event, outcome in outcomes:
        stats.add(_record("fired", event, hooks=1), 1.0)
        stats.add(_record("outcome", event, outcome={"event": event, **outcome}), 1.0)
    stats.add(_record("falling_behind", None, message="hooks are falling behind"), 1.0)
    stats.add(_record("dropped", "post_tool", session="s", hooks=2, reason="full"), 1.0)
    for _ in range(3):
        stats.add(_record("dropped", "post_tool", session="s", hooks=1, reason="close"), 1.0)
    stats.add(_record("hook_started", "post_tool", hook="fmt"), 1.0)
    assert _row(stats.snapshot(1.0), "post_tool", "fmt")["running"] == 1
    stats.add(_record("closed", None, report={"ran": 1}), 1.0)  # cut off: no hook_finished

    snap = stats.snapshot(1.0)
    assert _row(snap, "post_tool", "fmt")["running"] == 0 and snap["failures"] == 0
    assert (snap["blocked"], snap["continued"]) == (2, 1)
    assert snap["dropped"] == {"events": 4, "hooks": 5, "reasons": {"close": 3, "full": 1}}
    assert snap["falling_behind"] == 1 and snap["engine_closed"] is True
    assert snap["events"] == {  # records without an event (closed, falling_behind) have no row
        "post_tool": {
            "blocked": 0,
            "continued": 0,
            "dropped": 4,
            "fired": 2,
            "outcomes": 2,
            "queued": 1,
        },
        "pre_tool": {
            "blocked": 2,
            "continued": 0,
            "dropped": 0,
            "fired": 3,
            "outcomes": 3,
            "queued": 0,
        },
        "stop": {
            "blocked": 0,
            "continued": 1,
            "dropped": 0,
            "fired": 1,
            "outcomes": 1,
            "queued": 0,
        },
    }
    text = "\n".join(format_stats(snap))
    assert "DROPPED: 4 background event(s), 5 hook run(s) not run (close: 3, full: 1)" in text
    assert "the engine closed: the server is stopping" in text
    assert "LAGGED" not in text


def test_the_server_line_says_what_the_audit_log_lost() -> None:
    stats = StreamStats()
    fine = AuditStats(written=9, lost=0, failure_episodes=0, failing=False, torn_tails=0, late=0)
    reply = StatsReply(
        queue_depth=0,
        dropped=0,
        falling_behind=0,
        live_processes=0,
        connections=1,
        subscribers=1,
        fires=9,
        in_flight=0,
        events_published=0,
        events_missed=0,
        audit=fine,
    )
    stats.server_stats(reply)
    lines = format_stats(stats.snapshot(1.0))
    assert "audit: 9 record(s) written, 0 lost" in lines
    failing = msgspec.structs.replace(fine, lost=4, failure_episodes=2, failing=True, torn_tails=1)
    stats.server_stats(msgspec.structs.replace(reply, audit=failing))
    text = "\n".join(format_stats(stats.snapshot(2.0)))
    assert (
        "AUDIT FAILING (records are lost now; serve's log says why): audit: 9 record(s) "
        "written, 4 lost in 2 episode(s), 1 torn day-file tail(s) repaired"
    ) in text


def test_lagged_records_are_counted_not_guessed() -> None:
    stats = StreamStats()
    stats.add(_record("fired", seq=1, hooks=1), 1.0)
    stats.add(Lagged(missed=3), 2.0)
    stats.add(_record("outcome", seq=2, outcome={"blocked": True}), 2.0)
    stats.add(Lagged(missed=5), 3.0)
    snap = stats.snapshot(3.0)
    assert snap["lagged"] == {"times": 2, "missed": 8}
    assert snap["records"] == 2 and snap["last_seq"] == 2  # lost records take no seq
    assert snap["blocked"] == 1
    text = "\n".join(format_stats(snap))
    assert "LAGGED: this watcher read too slowly 2 time(s): 8 record(s) lost" in text


def test_tables_are_bounded_whatever_the_stream() -> None:
    stats = StreamStats(ring_size=16)
    names = MAX_ROWS + 50
    for n in range(names):
        stats.add(_finished(f"hook-{n}", "ok", 1.0), 1.0)
    for n in range(1000):  # one hook, many runs: its ring holds the newest 16
        stats.add(_finished("hook-0", "ok", float(n)), 2.0)
    for n in range(names):
        stats.add(_record("fired", f"event-{n}"), 1.0)
    snap = stats.snapshot(2.0)
    assert len(snap["hooks"]) == MAX_ROWS and len(snap["events"]) == MAX_ROWS
    other = _row(snap, OTHER, OTHER)
    assert other["runs"] == names - (MAX_ROWS - 1)  # every later name counted in one row
    assert sum(r["runs"] for r in snap["hooks"]) == names + 1000
    first = _row(snap, "pre_tool", "hook-0")
    assert first["runs"] == 1001 and first["window_runs"] == 16
    assert first["max_ms"] == 999.0 and first["p50_ms"] == 991.0  # 984 ... 999


def test_the_connection_state_says_how_the_stream_ended() -> None:
    clean, lost = StreamStats(), StreamStats()
    for stats in (clean, lost):
        assert stats.snapshot(0.0)["connection"]["state"] == "connecting"
        stats.connected(1.0)
    clean.ended(CloseReason(1000, "server shutting down"), 4.5)
    lost.ended(CloseReason(1006, None), 2.0)
    assert clean.snapshot(9.0)["connection"] == {
        "state": "closed",
        "detail": "1000 server shutting down",
        "connected_s": 3.5,
    }
    assert lost.snapshot(9.0)["connection"]["state"] == "lost"
    assert "lost (1006 ABNORMAL_CLOSURE) after 1.0s" in format_stats(lost.snapshot(9.0))[0]


def test_stats_subscribe_to_everything_but_audit() -> None:
    assert "audit" not in STATS_KINDS
    assert {"fired", "hook_started", "hook_finished", "outcome", "dropped"} <= set(STATS_KINDS)


# -- the views ------------------------------------------------------------------------------------


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _snapshots() -> list[dict[str, Any]]:
    stats = StreamStats("ws://127.0.0.1:1/")
    stats.connected(0.0)
    first = stats.snapshot(1.0, wall=100.0)
    stats.add(_finished("guard", "block", 4.25), 1.5)
    return [first, stats.snapshot(2.0, wall=101.0)]


def test_json_view_is_one_object_a_line() -> None:
    out = io.StringIO()
    view = StatsView(out, as_json=True)
    for snap in _snapshots():
        view.show(snap)
    lines = out.getvalue().splitlines()
    assert [json.loads(line)["time"] for line in lines] == [100.0, 101.0]
    assert json.loads(lines[1])["hooks"][0]["p50_ms"] == 4.25
    assert "\x1b" not in out.getvalue()


def test_table_is_redrawn_in_place_on_a_terminal_and_appended_otherwise() -> None:
    tty, pipe = _Terminal(), io.StringIO()
    for out in (tty, pipe):
        view = StatsView(out)
        for snap in _snapshots():
            view.show(snap)
    frames = tty.getvalue().split(StatsView.HOME)
    assert frames[0] == "" and len(frames) == 3
    assert all(frame.endswith(StatsView.ERASE_BELOW) for frame in frames[1:])
    assert "guard" not in frames[1] and "guard" in frames[2]
    text = pipe.getvalue()
    assert "\x1b" not in text
    assert text.count("triohooks watch --stats  ws://127.0.0.1:1/") == 2
    (row,) = [line for line in text.splitlines() if "guard" in line]
    assert row.split()[:10] == ["pre_tool", "guard", "1", "0", "0", "1", "0", "0", "0", "0"]
    assert row.split()[10:13] == ["4.2", "4.2", "4.2"]  # p50 p99 max, 1 decimal (4.25 -> 4.2)
    assert "(no hook has run since this watcher connected)" in text


def _watch_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_watch_command(parser.add_subparsers(dest="command"))
    return parser.parse_args(["watch", *argv])


def test_stats_options_are_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    token = tmp_path / "token"
    token.write_text(TOKEN)
    url = "ws://127.0.0.1:9/"
    bad = [
        ("--interval", "1"),  # without --stats
        ("--window", "5"),
        ("--stats", "--interval", "0"),
        ("--stats", "--window", "-1"),
        ("--stats", "--interval", "nan"),
    ]
    codes = [cmd_watch(_watch_args(url, "--token-file", str(token), *extra)) for extra in bad]
    assert codes == [1] * len(bad)
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "triohooks: watch: --interval needs --stats"
    assert err[1] == "triohooks: watch: --window needs --stats"
    assert all("must be a positive number of seconds" in line for line in err[2:])


# -- against a real server ------------------------------------------------------------------------

HOOKS = """\
[[hooks.pre_tool]]
id = "guard"
match = "bash"
if = "shell(git push)"
command = "echo 'no pushing' >&2; exit 2"

[[hooks.pre_tool]]
id = "broken"
match = "bash"
if = "shell(make)"
command = "exit 3"

[[hooks.pre_tool]]
id = "too-slow"
match = "bash"
if = "shell(sleep)"
command = "sleep 5"
timeout_seconds = 0.2

[[hooks.prompt_submit]]
id = "slow"
command = "sleep 0.3"

[[hooks.stop]]
id = "one-more-turn"
command = '''grep -q '"stop_hook_active":true' || { echo 'run the tests' >&2; exit 2; }'''

[[hooks.post_tool]]
id = "background"
match = "write_file"
command = "sleep 10"
"""

#: post_tool fires: one runs (and blocks the queue), 256 wait, the rest are dropped (queue
#: full); at close the waiting ones are dropped too. Fewer records in all than the server's
#: 1024-record buffer, so this watcher cannot lag even if it stalled.
BACKGROUND_FIRES = 270


def running(tmp_path: Path) -> AbstractAsyncContextManager[HookServer]:
    write_toml_hooks(tmp_path / "g", HOOKS)
    # Audit on: the engine emits its ``closed`` record only when it has an audit sink.
    engine = {"audit": True, "drain_timeout_s": 0.3}
    return running_server(tmp_path, TOKEN, engine=engine, close_timeout_s=1)


def _bash(command: str) -> dict[str, Any]:
    return {"tool": "bash", "args": {"command": command}, "session_id": "s1"}


async def _fire_the_session(server: HookServer) -> None:
    async with connect(server.url, TOKEN) as client:
        for command in ["git push", "git push origin main", "git push -f", "make", "make all"]:
            await client.fire("pre_tool", _bash(command))
        await client.fire("pre_tool", _bash("sleep 1"))  # times out after 0.2 s
        await client.fire("pre_tool", _bash("ls"))  # no hook runs: no record
        for n in range(3):
            await client.fire("prompt_submit", {"prompt": f"p{n}", "session_id": "s1"})
        await client.fire("stop", {"session_id": "s1"})
        async with trio.open_nursery() as nursery:
            for n in range(BACKGROUND_FIRES):
                payload = {"tool": "write_file", "args": {"path": f"f{n}"}, "session_id": "s1"}
                nursery.start_soon(client.fire, "post_tool", payload)
                if n % 16 == 15:
                    await trio.sleep(0)


@pytest.mark.slow
async def test_stats_of_a_real_server_with_real_hooks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``watch --stats --json --interval 0.2`` (the command, in a thread) and the in-process
    table view, side by side, while a session with every kind of hook runs."""
    token_file = tmp_path / "token"
    token_file.write_text(f"{TOKEN}\n")
    table = _Terminal()
    codes: list[int] = []
    closes: list[CloseReason | None] = []
    out: list[str] = []
    with trio.fail_after(15):
        async with running(tmp_path) as server, trio.open_nursery() as nursery:
            args = _watch_args(
                server.url,
                "--token-file",
                str(token_file),
                "--stats",
                "--json",
                "--interval",
                "0.2",
            )

            async def command() -> None:
                codes.append(await trio.to_thread.run_sync(cmd_watch, args, abandon_on_cancel=True))

            async def in_process() -> None:
                closes.append(await watch_stats(server.url, TOKEN, table, interval_s=0.2))

            nursery.start_soon(command)
            nursery.start_soon(in_process)
            while server.hub.subscribers < 2:
                await trio.sleep(0.01)
            await _fire_the_session(server)
            dropped_by_server = server.dropped  # the queue-full ones; drops at close follow
            # Live: a periodic snapshot, while connected, that has seen the whole session and
            # no connection but the two watchers' (the session's own is gone once the server
            # has finished with it, which a snapshot may come just before).
            while True:
                out.extend(capsys.readouterr().out.splitlines())
                live = json.loads(out[-1]) if out else {"dropped": {"events": -1}}
                if (
                    live["dropped"]["events"] == dropped_by_server
                    and live["server"]["connections"] == 2
                ):
                    break
                await trio.sleep(0.05)
            server.shutdown()
        dropped_total = server.dropped

    assert codes == [0]
    captured = capsys.readouterr()
    assert "stream ended: the server closed the connection (1000" in captured.err
    snaps = [json.loads(line) for line in [*out, *captured.out.splitlines()]]  # all JSON
    assert len(snaps) >= 3  # one at once, one per 0.2 s, one at the end
    assert snaps[0]["connection"]["state"] == "connected" and snaps[0]["records"] == 0
    assert all(s["type"] == "watch_stats" and s["url"] == server.url for s in snaps)
    assert [s["time"] for s in snaps] == sorted(s["time"] for s in snaps)
    assert [s["records"] for s in snaps] == sorted(s["records"] for s in snaps)
    assert live["connection"]["state"] == "connected" and not live["engine_closed"]
    # The server's own counts, asked for each interval: both watchers are connected.
    assert live["server"]["connections"] == 2 and live["server"]["subscribers"] == 2
    assert live["server"]["refused_connections"] == 0 and live["server"]["otlp"] is None
    audit: Any = live["server"]["audit"]  # 3 blocks, 2 errors and a timeout, each written
    assert audit["written"] >= 6 and (audit["lost"], audit["failing"]) == (0, False)
    assert dropped_by_server == BACKGROUND_FIRES - 257
    assert _row(live, "prompt_submit", "slow")["runs"] == 3
    assert live["dropped"]["reasons"] == {"full": dropped_by_server}
    final = snaps[-1]
    assert final["connection"]["state"] == "closed"
    assert final["connection"]["detail"].startswith("1000 ")
    assert final["window_s"] == 60.0

    assert final["lagged"] == {"times": 0, "missed": 0}
    assert _row(final, "pre_tool", "guard")["outcomes"] == {"block": 3}
    assert _row(final, "pre_tool", "broken")["outcomes"] == {"error": 2}
    too_slow = _row(final, "pre_tool", "too-slow")
    assert too_slow["outcomes"] == {"timeout": 1} and too_slow["p50_ms"] >= 200
    slow = _row(final, "prompt_submit", "slow")
    assert slow["runs"] == slow["window_runs"] == 3 and slow["outcomes"] == {"ok": 3}
    assert 300 <= slow["p50_ms"] <= slow["p99_ms"] == slow["max_ms"] < 5000
    assert _row(final, "stop", "one-more-turn")["outcomes"] == {"block": 1}
    background = _row(final, "post_tool", "background")
    assert background["started"] == 1  # the one run the queue got to before the close
    assert background["running"] == 0  # cut off at close: the engine closed, nothing runs
    assert final["blocked"] == 3 and final["continued"] == 1
    bg_failures = background["failures"]  # 0: a run cut off at close has no hook_finished
    assert final["failures"] == 3 + bg_failures  # 2 errors and a timeout (+ the killed one)
    events = final["events"]
    assert events["pre_tool"]["fired"] == 6  # `ls` ran no hook: no record
    assert events["prompt_submit"] == {**events["prompt_submit"], "fired": 3, "outcomes": 3}
    post = events["post_tool"]
    assert post["fired"] == post["outcomes"] == BACKGROUND_FIRES
    full = final["dropped"]["reasons"].get("full", 0)
    assert full == BACKGROUND_FIRES - 257 and post["queued"] == 257
    assert final["dropped"]["events"] == post["dropped"] == dropped_total == BACKGROUND_FIRES
    assert final["dropped"]["hooks"] == BACKGROUND_FIRES
    assert final["falling_behind"] == 1 and final["engine_closed"] is True
    assert "audit" not in final["kinds"]

    assert closes[0] is not None and closes[0].code == 1000
    frames = table.getvalue().split(StatsView.HOME)[1:]
    assert len(frames) >= 4
    last = frames[-1]
    assert "closed (1000 " in last
    assert f"DROPPED: {BACKGROUND_FIRES} background event(s)" in last
    (guard,) = [line for line in last.splitlines() if " guard " in line]
    assert guard.split()[:6] == ["pre_tool", "guard", "3", "0", "0", "3"]


def _dying_server(frames: list[str], seen: Callable[[], bool]) -> Any:
    """A websocket server's connection handler that answers one subscribe with ``frames`` and,
    once ``seen()`` says the client has shown them, drops the TCP connection without a close
    frame, as a server that dies would."""

    async def handle(stream: trio.SocketStream) -> None:
        async with trio.open_nursery() as nursery:
            ws = await (await wrap_server_stream(nursery, stream)).accept()
            subscribe = json.loads(await ws.get_message())
            reply = {"type": "subscribed", "id": subscribe["id"], "events": ["*"], "buffer": 8}
            await ws.send_message(json.dumps({**reply, "kinds": subscribe["kinds"]}))
            for frame in frames:
                await ws.send_message(frame)
            while not seen():
                await trio.sleep(0.02)
            await stream.aclose()
            nursery.cancel_scope.cancel()

    return handle


def _frame(msg: Any) -> str:
    return msgspec.json.encode(msg).decode()


@pytest.mark.slow
async def test_a_server_that_goes_away_is_reported_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    frames = [
        _frame(_record("fired", seq=1, hooks=1)),
        _frame(Lagged(missed=7)),
        _frame(msgspec.structs.replace(_finished("guard", "block", 3.0), seq=2)),
    ]
    said = {"out": "", "err": ""}

    def seen() -> bool:
        """Whether a snapshot taken while connected has both records (printed, so far)."""
        captured = capsys.readouterr()
        said["out"] += captured.out
        said["err"] += captured.err
        lines = said["out"].split("\n")[:-1]  # whole lines only
        snaps = [json.loads(line) for line in lines]
        return any(s["connection"]["state"] == "connected" and s["records"] == 2 for s in snaps)

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
            url = f"ws://127.0.0.1:{listeners[0].socket.getsockname()[1]}/"
            nursery.start_soon(trio.serve_listeners, _dying_server(frames, seen), listeners)
            argv = ["--token-file", str(token_file), "--stats", "--json", "--interval", "0.1"]
            args = _watch_args(url, *argv)
            code = await trio.to_thread.run_sync(cmd_watch, args, abandon_on_cancel=True)
            nursery.cancel_scope.cancel()
    assert code == 1
    captured = capsys.readouterr()
    (err,) = (said["err"] + captured.err).splitlines()
    assert err.startswith(f"triohooks: connection to {url} ended abnormally: ")
    snaps = [json.loads(line) for line in (said["out"] + captured.out).splitlines()]
    final = snaps[-1]
    assert final["connection"]["state"] == "lost"
    assert final["connection"]["detail"] == "1006 ABNORMAL_CLOSURE"
    assert final["records"] == 2 and final["lagged"] == {"times": 1, "missed": 7}
    assert _row(final, "pre_tool", "guard")["outcomes"] == {"block": 1}
    assert any(s["connection"]["state"] == "connected" for s in snaps[:-1])


def test_the_docs_name_every_json_field() -> None:
    """docs/watching.md's field table names exactly the fields a snapshot has."""
    doc = (Path(__file__).parent.parent / "docs" / "watching.md").read_text()
    section = doc[doc.index("### The JSON (`--stats --json`)") : doc.index("### The window")]
    documented: set[str] = set()
    hook_fields: set[str] = set()
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        first, meaning = line.split("|")[1:3]
        documented |= set(re.findall(r"`([a-z_.]+)`", first))
        if first.strip() == "`hooks`":
            listed = re.sub(r"\([^()]*\)", "", meaning)  # "`runs` (finished)" -> "`runs`"
            hook_fields = set(re.findall(r"`([a-z_0-9]+)`", listed))
    stats = StreamStats()
    stats.add(_finished("h", "ok", 1.0), 0.0)
    snap = stats.snapshot(0.0)
    expected = {key for key, value in snap.items() if not isinstance(value, dict)}
    for key in ("connection", "dropped", "lagged"):
        expected |= {f"{key}.{sub}" for sub in snap[key]}
    expected |= {"events", "kinds"}
    assert documented == expected
    assert hook_fields == set(snap["hooks"][0])
