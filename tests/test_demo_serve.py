"""``triohooks demo --serve`` and ``triohooks watch``: the demo streamed to real subscribers.

The demo's real hook processes of both dialects, the real websocket server on 127.0.0.1 port 0,
real trio-websocket clients (``triohooks.fronts.client``) and the real clock. ``cmd_watch`` and the
CLI's ``main`` call ``trio.run`` themselves, so they run in a worker thread here.
"""

from __future__ import annotations

import argparse
import io
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.helpers import read_line_with
from triohooks.fronts.cli import main as cli_main
from triohooks.fronts.client import connect
from triohooks.fronts.demo import DemoService, DemoSummary, ServeOptions, run_demo
from triohooks.fronts.server import HookServer, ServeSettings, serve
from triohooks.fronts.watch import add_watch_command, cmd_watch, format_record, watch
from triohooks.fronts.wire import EventRecord, Lagged, decode_server

from .test_demo import EXPECTED

pytestmark = pytest.mark.slow


async def _served_demo(
    root: Path,
    out: io.StringIO,
    options: ServeOptions,
    summaries: list[DemoSummary],
    *,
    task_status: trio.TaskStatus[DemoService] = trio.TASK_STATUS_IGNORED,
) -> None:
    summaries.append(await run_demo(root, out, options, task_status=task_status))


def _find(records: list[EventRecord], match: Callable[[EventRecord], bool]) -> int:
    """The index of the one record that ``match`` picks out."""
    found = [i for i, record in enumerate(records) if match(record)]
    assert len(found) == 1, found
    return found[0]


def _outcome(record: EventRecord) -> dict[str, Any]:
    outcome: dict[str, Any] = record.data["outcome"] if record.kind == "outcome" else {}
    return outcome


def _audited(record: EventRecord, hook: str) -> bool:
    return record.kind == "audit" and record.data["record"].get("hook") == hook


async def test_a_subscriber_sees_the_whole_session_in_order(tmp_path: Path) -> None:
    out = io.StringIO()
    summaries: list[DemoSummary] = []
    items: list[EventRecord | Lagged] = []
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            options = ServeOptions(port=0, wait_s=20)
            service = await nursery.start(_served_demo, tmp_path, out, options, summaries)
            assert service.token_file.stat().st_mode & 0o777 == 0o600
            token = service.token_file.read_text().strip()
            async with connect(service.url, token) as client, client.subscribe() as stream:
                async for item in stream:  # until the demo shuts the server down
                    items.append(item)
            assert client.ws.closed is not None and client.ws.closed.code == 1000
    (summary,) = summaries
    assert [(e.event, e.subject, e.decision) for e in summary.entries] == EXPECTED

    records = [item for item in items if isinstance(item, EventRecord)]
    assert records == items  # nothing lagged
    assert [r.seq for r in records] == list(range(1, len(records) + 1))
    # The demo waited for us: the stream starts with the session's first event that has hooks.
    assert (records[0].kind, records[0].event) == ("fired", "prompt_submit")
    # Every event with hooks, as the subscriber saw it, is an event on the terminal's timeline.
    hooked = [e.event for e in summary.entries if e.hooks or e.decision == "queued"]
    assert [r.event for r in records if r.kind == "outcome"] == hooked

    audit_push = _find(records, lambda r: _audited(r, "no-push"))
    blocked = _find(records, lambda r: r.event == "pre_tool" and _outcome(r).get("blocked") is True)
    go_on = _find(records, lambda r: r.event == "stop" and _outcome(r).get("continue") is True)
    audit_stop = _find(records, lambda r: _audited(r, "tests-before-stop"))
    queued = _find(records, lambda r: _outcome(r).get("queued") is True)
    formatted = _find(
        records, lambda r: r.kind == "hook_finished" and r.data["hook"] == "format-on-write"
    )
    closed = _find(records, lambda r: r.kind == "closed")
    assert audit_push < blocked < go_on and go_on - 1 == audit_stop  # audit precedes outcome
    assert queued < formatted < closed
    assert _outcome(records[blocked])["reason"] == "pushing is for humans: open a PR instead"
    assert records[audit_push].data["record"]["decision"] == "block"
    assert records[formatted].data["outcome"] == "ok"
    assert records[formatted].event == "post_tool"
    assert records[closed].data["report"]["ran"] == 1

    text = out.getvalue()
    assert f"websocket       {service.url}" in text
    assert "a subscriber is connected: starting the session" in text


async def test_watch_prints_one_line_per_record_until_the_server_stops(tmp_path: Path) -> None:
    out, watched = io.StringIO(), io.StringIO()
    summaries: list[DemoSummary] = []
    token_file = tmp_path / "my-token"  # the user's own token (--token-file)
    token_file.write_text("  my-secret-token\n")
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            options = ServeOptions(port=0, wait_s=20, token_file=token_file)
            service = await nursery.start(_served_demo, tmp_path / "demo", out, options, summaries)
            assert service.token_file == token_file
            closed = await watch(service.url, "my-secret-token", watched)
    assert closed is not None and closed.code == 1000
    lines = watched.getvalue().splitlines()
    assert lines[0] == f"watching {service.url} (events: *)"
    seqs = [int(line.split()[0]) for line in lines[1:]]
    assert seqs == list(range(1, len(lines)))
    wanted = [
        "fired          prompt_submit        2 hook(s) match, session demo-session",
        "hook_finished  post_tool            format-on-write finished: ok, exit 0",
        "audit          pre_tool             hook record: no-push -> block (pushing is for hu",
        "outcome        pre_tool             BLOCKED: pushing is for humans: open a PR instead",
        "outcome        stop                 CONTINUE: run the tests first (1 hook(s) ran)",
        "closed         -                    engine closed: 1 background event(s) ran, 0 dro",
    ]
    for text in wanted:
        assert sum(text in line for line in lines) == 1, text
    rewritten = 'pre_tool             proceed, args {"command": "pytest -q -x", "env": {"NO_'
    assert sum(rewritten in line for line in lines) == 1


def test_format_record_reads_every_kind() -> None:
    record = EventRecord(
        seq=7,
        kind="hook_finished",
        time=0.25,
        event="pre_tool",
        data={"hook": "h", "outcome": "timeout", "exit_code": None, "duration_ms": 100.04},
    )
    assert format_record(record).endswith(
        "hook_finished  pre_tool             h finished: timeout, 100.0 ms"
    )
    assert format_record(record).startswith("    7  ")
    dropped = EventRecord(
        seq=1, kind="dropped", time=0, event="post_tool", data={"hooks": 2, "reason": "queue full"}
    )
    assert format_record(dropped).endswith("dropped 2 background hook(s): queue full")
    assert "lagged: 12 record(s) lost" in format_record(Lagged(missed=12))


# -- the commands, as a user runs them -----------------------------------------------------------


def _watch_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_watch_command(parser.add_subparsers(dest="command"))
    return parser.parse_args(["watch", *argv])


async def test_demo_serve_and_watch_commands_in_two_terminals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``python -m runtime demo --serve`` in one process, ``watch --json`` in another thread."""
    home = {name: tmp_path / name for name in ("config", "state", "tmp")}
    for path in home.values():
        path.mkdir()
    env = {
        **os.environ,
        "TRIOHOOKS_CONFIG_DIR": str(home["config"]),
        "TRIOHOOKS_STATE_DIR": str(home["state"]),
        "TMPDIR": str(home["tmp"]),
    }
    command = [sys.executable, "-m", "triohooks", "demo", "--serve", "--wait-seconds", "20"]
    demo = await trio.lowlevel.open_process(command, env=env, stdout=subprocess.PIPE)
    assert demo.stdout is not None
    seen = bytearray()
    try:
        with trio.fail_after(30):
            shown = await read_line_with(demo.stdout, seen, "triohooks watch ws://")
            _, _, url, _, token_file = shown.split()
            args = _watch_args(url, "--token-file", token_file, "--json")
            code = await trio.to_thread.run_sync(cmd_watch, args, abandon_on_cancel=True)
            while chunk := await demo.stdout.receive_some():
                seen += chunk
            assert await demo.wait() == 0
    finally:
        if demo.returncode is None:
            demo.kill()
            with trio.move_on_after(2, shield=True):
                await demo.wait()
        await demo.stdout.aclose()
    assert code == 0
    assert b"a subscriber is connected: starting the session" in seen
    assert b"websocket service stopped" in seen
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "stream ended: the server closed the connection (1000 server shutting down)"
    records = [decode_server(line) for line in lines[1:-1]]
    assert all(isinstance(r, EventRecord) for r in records)
    assert [r.seq for r in records if isinstance(r, EventRecord)] == list(
        range(1, len(records) + 1)
    )
    outcomes = [
        r.data["outcome"] for r in records if isinstance(r, EventRecord) and r.kind == "outcome"
    ]
    assert [(o["event"], o["blocked"], o["continue"]) for o in outcomes] == [
        ("prompt_submit", False, False),
        ("pre_tool", False, False),
        ("post_tool", False, False),
        ("pre_tool", True, False),  # git push
        ("stop", True, True),  # a stop "block" means: go on
        ("pre_tool", False, False),
        ("stop", False, False),
    ]
    # The demo's token lived in its temp dir, which is gone; the user's dirs stay untouched.
    assert not Path(token_file).exists()
    assert [list(path.iterdir()) for path in home.values()] == [[], [], []]


async def test_demo_runs_anyway_when_nobody_subscribes(tmp_path: Path) -> None:
    out = io.StringIO()
    with trio.fail_after(30):
        summary = await run_demo(tmp_path, out, ServeOptions(port=0, wait_s=0.2))
    assert [(e.event, e.subject, e.decision) for e in summary.entries] == EXPECTED
    assert "no subscriber after 0.2 s: starting the session anyway" in out.getvalue()
    assert "websocket service stopped" in out.getvalue()


async def test_watch_refusals_are_one_line_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "ws").mkdir()
    wrong = tmp_path / "wrong-token"
    wrong.write_text("not-the-token\n")
    right = tmp_path / "token"
    right.write_text("the-token\n")
    engine = {"workspace": tmp_path / "ws", "config_dir": tmp_path / "g", "audit": False}
    settings = ServeSettings(token="the-token", port=0, engine=engine, close_timeout_s=0.5)
    with socket.socket() as unused:  # a port nobody listens on
        unused.bind(("127.0.0.1", 0))
        nobody = f"ws://127.0.0.1:{unused.getsockname()[1]}/"
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            server: HookServer = await nursery.start(serve, settings)
            runs = [
                (server.url, wrong, []),
                (server.url, right, ["--event", "no_such_event"]),
                (nobody, right, []),
                (server.url, tmp_path / "missing", []),
            ]
            codes = []
            for url, token_file, extra in runs:
                args = _watch_args(url, "--token-file", str(token_file), *extra)
                codes.append(await trio.to_thread.run_sync(cmd_watch, args, abandon_on_cancel=True))
            server.shutdown()
    assert codes == [1, 1, 1, 1]
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 4 and all(line.startswith("triohooks: ") for line in err)
    assert "refused the connection (HTTP 401)" in err[0]
    assert "unknown event" in err[1].lower()
    assert f"cannot watch {nobody}" in err[2]
    assert "cannot read token file" in err[3]


async def test_demo_serve_usage_errors_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    with trio.fail_after(20):
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        busy = listeners[0].socket.getsockname()[1]
        try:
            in_use = await trio.to_thread.run_sync(
                cli_main, ["demo", "--serve", "--port", str(busy), "--wait-seconds", "0"]
            )
        finally:
            await listeners[0].aclose()
        no_serve = await trio.to_thread.run_sync(cli_main, ["demo", "--port", "1"])
    assert (in_use, no_serve) == (1, 1)
    err = capsys.readouterr().err
    assert f"triohooks: demo --serve: cannot listen on 127.0.0.1:{busy}: " in err
    assert "triohooks: demo: --port needs --serve" in err
    assert "Traceback" not in err
