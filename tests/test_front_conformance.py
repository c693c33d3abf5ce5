"""Conformance of the other fronts, used the way an outside tester would.

- ``triohooks serve`` as a real subprocess (``python -m runtime serve --port 0``) driven by raw
  websocket frames exactly as docs/protocol.md shows them, plus an in-process server for the
  slow-subscriber case;
- the self-configuration tools (``HooksTools``) and the ``triohooks hooks`` CLI against real files;
- ``AsyncioHookEngine`` under ``asyncio.run`` with real bash hooks.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import stat
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import msgspec
import psutil
import pytest
import trio
from trio_websocket import ConnectionClosed, ConnectionRejected, WebSocketConnection

from triohooks import AsyncioHookEngine, HookEngine, HooksTools
from triohooks.fronts.client import open_websocket
from triohooks.fronts.server import ServeSettings, serve
from triohooks.fronts.wire import EventRecord

from .helpers import (
    OUTCOME_KEYS,
    RUN_KEYS,
    bash_hook,
    cli_here,
    write_json_hooks,
    write_toml_hooks,
)

ROOT = Path(__file__).resolve().parent.parent

GUARD_TOML = """
[[hooks.pre_tool]]
id = "guard-push"
match = "bash"
command = "if grep -q 'git push'; then echo 'no pushing' >&2; exit 2; fi"

[[hooks.pre_tool]]
id = "slow"
match = "slow_tool"
command = "sleep 0.5"

[[hooks.post_tool]]
id = "bg"
match = "bg_tool"
command = "sleep 0.3; touch {mark}"
"""

MUTATE_JSON = bash_hook(
    "mutate-json",
    """printf '%s' '{"decision":"mutate","patch":{"arguments":{"extra":1}}}'""",
    matcher={"tool_name": "json_tool"},
)


# -- a real `triohooks serve` subprocess ---------------------------------------------------------
class Served(msgspec.Struct, kw_only=True):
    proc: trio.Process
    url: str
    token_path: Path
    token: str
    lines: list[str]


async def _read_lines(proc: trio.Process, n: int) -> list[str]:
    assert proc.stdout is not None
    buf = b""
    while buf.count(b"\n") < n:
        chunk = await proc.stdout.receive_some(4096)
        if not chunk:
            break
        buf += chunk
    return buf.decode().splitlines()


@asynccontextmanager
async def served(tmp_path: Path, *extra: str) -> AsyncIterator[Served]:
    (tmp_path / "ws").mkdir(exist_ok=True)
    write_toml_hooks(tmp_path / "g", GUARD_TOML.format(mark=tmp_path / "bg-ran"))
    write_json_hooks(tmp_path / "g", [MUTATE_JSON])
    env = {
        **os.environ,
        "TRIOHOOKS_CONFIG_DIR": str(tmp_path / "g"),
        "TRIOHOOKS_STATE_DIR": str(tmp_path / "state"),
    }
    argv = [sys.executable, "-m", "triohooks", "serve", "--port", "0"]
    argv += ["--workspace", str(tmp_path / "ws"), *extra]
    proc = await trio.lowlevel.open_process(
        argv, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        lines = await _read_lines(proc, 2)
        assert len(lines) >= 2, lines
        assert lines[0].startswith("triohooks serve: listening on ws://127.0.0.1:"), lines
        url = lines[0].rsplit(" ", 1)[-1]
        assert lines[1].startswith("triohooks serve: token in "), lines
        token_path = Path(lines[1].removeprefix("triohooks serve: token in "))
        yield Served(
            proc=proc,
            url=url,
            token_path=token_path,
            token=token_path.read_text().strip(),
            lines=lines,
        )
    finally:
        with trio.move_on_after(5, shield=True):
            if proc.returncode is None:
                proc.send_signal(signal.SIGKILL)
            await proc.wait()


def _auth(token: str) -> list[tuple[bytes, bytes]]:
    return [(b"Authorization", f"Bearer {token}".encode())]


async def _send(ws: WebSocketConnection, msg: Any) -> None:
    await ws.send_message(msg if isinstance(msg, str) else json.dumps(msg))


async def _recv(ws: WebSocketConnection) -> dict[str, Any]:
    frame = await ws.get_message()
    msg: dict[str, Any] = json.loads(frame)
    return msg


async def _recv_type(ws: WebSocketConnection, kind: str, others: list[dict[str, Any]]) -> Any:
    while True:
        msg = await _recv(ws)
        if msg["type"] == kind:
            return msg
        others.append(msg)


async def test_serve_prints_url_and_private_token_path_and_refuses_bad_tokens(
    tmp_path: Path,
) -> None:
    with trio.fail_after(15):
        async with served(tmp_path) as srv:
            assert srv.token_path == tmp_path / "state" / "serve-token"
            assert stat.S_IMODE(srv.token_path.stat().st_mode) == 0o600
            assert len(srv.token) >= 32
            for url, headers in [
                (srv.url, []),
                (srv.url, _auth("wrong")),
                (srv.url + "?token=wrong", []),
                (srv.url, [(b"Authorization", f"Basic {srv.token}".encode())]),
            ]:
                with pytest.raises(ConnectionRejected) as refused:
                    async with open_websocket(url, headers):
                        pass
                assert refused.value.status_code == 401
            # Header and query-string auth both work.
            async with open_websocket(srv.url, _auth(srv.token)) as ws:
                await _send(ws, {"type": "ping", "id": 7})
                assert await _recv(ws) == {"type": "pong", "id": 7}
            async with open_websocket(f"{srv.url}?token={srv.token}") as ws:
                await _send(ws, {"type": "ping"})
                assert await _recv(ws) == {"type": "pong", "id": None}
            srv.proc.send_signal(signal.SIGINT)
            assert await srv.proc.wait() == 0


async def test_serve_fire_both_dialects_many_in_flight_stats(tmp_path: Path) -> None:
    with trio.fail_after(20):
        async with served(tmp_path) as srv, open_websocket(srv.url, _auth(srv.token)) as ws:
            # The frame of docs/protocol.md, verbatim.
            await _send(
                ws,
                '{"type":"fire","id":"c1","event":"pre_tool","payload":{"tool":"bash",'
                '"args":{"command":"git push"},"session_id":"s1"}}',
            )
            reply = await _recv(ws)
            assert reply["type"] == "outcome" and reply["id"] == "c1"
            outcome = reply["outcome"]
            assert set(outcome) >= OUTCOME_KEYS
            assert outcome["blocked"] and outcome["reason"] == "no pushing"
            assert outcome["message_for_model"] == "blocked by pre_tool hook: no pushing"
            assert [r["hook"] for r in outcome["runs"]] == ["guard-push"]
            assert set(outcome["runs"][0]) >= RUN_KEYS

            # JSON dialect, by its alias, integer id.
            await _send(
                ws,
                {
                    "type": "fire",
                    "id": 2,
                    "event": "pre_tool_use",
                    "payload": {"tool": "json_tool", "args": {"a": 0}},
                },
            )
            reply = await _recv(ws)
            assert reply["id"] == 2 and reply["outcome"]["args"] == {"a": 0, "extra": 1}
            assert reply["outcome"]["runs"][0]["dialect"] == "json"

            # Many in flight on one connection: five slow fires run at once.
            for i in range(5):
                await _send(
                    ws,
                    {
                        "type": "fire",
                        "id": f"slow{i}",
                        "event": "pre_tool",
                        "payload": {"tool": "slow_tool"},
                    },
                )
            seen_live = 0
            pending = {f"slow{i}" for i in range(5)}
            replies: list[dict[str, Any]] = []
            while pending:
                await _send(ws, {"type": "stats", "id": "st"})
                stats = await _recv_type(ws, "stats", replies)
                seen_live = max(seen_live, stats["live_processes"])
                for r in replies:
                    assert r["type"] == "outcome" and not r["outcome"]["blocked"]
                    pending.discard(r["id"])
                replies.clear()
                if seen_live < 5:
                    await trio.sleep(0.02)
            assert seen_live == 5
            for key in ("queue_depth", "dropped", "live_processes", "connections"):
                assert isinstance(stats[key], int), key
            assert stats["connections"] == 1 and stats["id"] == "st"

            # A slow fire in flight and a queued background event: SIGTERM finishes the one
            # and drains the other before the sockets close with 1000 and the exit is 0.
            await _send(
                ws,
                {
                    "type": "fire",
                    "id": "late",
                    "event": "pre_tool",
                    "payload": {"tool": "slow_tool"},
                },
            )
            await _send(
                ws,
                {"type": "fire", "id": "bg", "event": "post_tool", "payload": {"tool": "bg_tool"}},
            )
            reply = await _recv(ws)
            assert reply["id"] == "bg" and reply["outcome"]["queued"] is True
            srv.proc.send_signal(signal.SIGTERM)
            late: list[dict[str, Any]] = []
            with pytest.raises(ConnectionClosed) as closed:
                while True:
                    late.append(await _recv(ws))
            assert [m["id"] for m in late] == ["late"] and late[0]["type"] == "outcome"
            reason = closed.value.reason
            assert reason is not None and reason.code == 1000
            assert await srv.proc.wait() == 0
            assert (tmp_path / "bg-ran").exists()


async def test_serve_subscribe_seq_filters_and_bad_input(tmp_path: Path) -> None:
    with trio.fail_after(20):
        async with (
            served(tmp_path) as srv,
            open_websocket(srv.url, _auth(srv.token)) as ws,
            open_websocket(srv.url, _auth(srv.token)) as other,
        ):
            await _send(ws, {"type": "subscribe", "id": "s", "events": ["*"]})
            sub = await _recv(ws)
            assert sub["type"] == "subscribed" and sub["id"] == "s" and sub["events"] == ["*"]
            # The other connection only wants pre_tool_use (alias) records.
            await _send(other, {"type": "subscribe", "events": ["pre_tool_use"]})
            assert (await _recv(other))["type"] == "subscribed"

            await _send(
                ws,
                {"type": "fire", "id": "a", "event": "post_tool", "payload": {"tool": "bg_tool"}},
            )
            await _send(
                ws,
                {
                    "type": "fire",
                    "id": "b",
                    "event": "pre_tool",
                    "payload": {"tool": "bash", "args": {"command": "ls"}},
                },
            )
            records: list[dict[str, Any]] = []
            outcomes = 0
            kinds_for_b: list[str] = []
            while outcomes < 2 or "hook_finished" not in [
                r["kind"] for r in records if r["event"] == "post_tool"
            ]:
                msg = await _recv(ws)
                if msg["type"] == "outcome":
                    outcomes += 1
                    continue
                assert msg["type"] == "event", msg
                records.append(msg)
            assert [r["seq"] for r in records] == list(range(1, len(records) + 1))
            for r in records:
                assert set(r) == {"type", "seq", "kind", "time", "event", "data"}
                if r["event"] == "pre_tool":
                    kinds_for_b.append(r["kind"])
            assert kinds_for_b[:1] == ["fired"]
            assert {"hook_started", "hook_finished", "outcome"} <= set(kinds_for_b)
            finished = next(r for r in records if r["kind"] == "hook_finished")
            assert {"hook", "outcome", "exit_code", "duration_ms"} <= set(finished["data"])

            other_records: list[dict[str, Any]] = []
            while not any(r["kind"] == "outcome" for r in other_records):
                msg = await _recv(other)
                assert msg["type"] == "event"
                other_records.append(msg)
            assert {r["event"] for r in other_records} == {"pre_tool"}
            assert [r["seq"] for r in other_records] == list(range(1, len(other_records) + 1))

            # Every bad input: the error shape, then the connection goes on.
            bad: list[tuple[Any, Any, str | None]] = [
                ("{nope", None, "invalid_json"),
                ("[1, 2]", None, "invalid_message"),
                ({"id": "x1"}, "x1", "invalid_message"),
                ({"type": "dance", "id": "x2"}, "x2", "unknown_type"),
                ({"type": "fire", "id": "x3"}, "x3", "invalid_message"),
                ({"type": "fire", "event": "pre_tool"}, None, "invalid_message"),
                ({"type": "fire", "id": "x4", "event": "nope"}, "x4", "unknown_event"),
                ({"type": "fire", "id": "x5", "event": "pre_tool", "payload": 3}, "x5", None),
                (
                    {"type": "fire", "id": "x6", "event": "pre_tool", "payload": {"args": "x"}},
                    "x6",
                    "invalid_payload",
                ),
                ({"type": "subscribe", "id": "x7", "events": ["nope"]}, "x7", "unknown_event"),
                ({"type": "subscribe", "id": "x8", "kinds": ["nope"]}, "x8", "unknown_kind"),
                ({"type": "subscribe", "id": "x9", "events": ["*", "nope"]}, "x9", "unknown_event"),
            ]
            for frame, want_id, code in bad:
                await _send(other, frame)
                got = await _recv_type(other, "error", [])
                assert set(got) == {"type", "id", "error"}, got
                assert got["id"] == want_id, (frame, got)
                assert set(got["error"]) == {"code", "message"} and got["error"]["message"]
                if code is not None:
                    assert got["error"]["code"] == code, (frame, got)
                else:
                    assert got["error"]["code"] in ("invalid_message", "invalid_payload")
            await _send(other, {"type": "ping", "id": "alive"})
            assert await _recv_type(other, "pong", []) == {"type": "pong", "id": "alive"}

            # Oversize: an error frame, then close 1009; the other connection goes on.
            await _send(other, json.dumps({"type": "ping", "pad": "x" * (1024 * 1024)}))
            got = await _recv_type(other, "error", [])
            assert got["error"]["code"] == "too_big"
            with pytest.raises(ConnectionClosed) as closed:
                while True:
                    await other.get_message()
            reason = closed.value.reason
            assert reason is not None and reason.code == 1009
            await _send(ws, {"type": "ping", "id": "still"})
            assert await _recv_type(ws, "pong", []) == {"type": "pong", "id": "still"}


async def test_serve_refuses_non_loopback_without_allow_remote(tmp_path: Path) -> None:
    with trio.fail_after(10):
        argv = [sys.executable, "-m", "triohooks", "serve", "--host", "0.0.0.0", "--port", "0"]
        argv += ["--workspace", str(tmp_path)]
        env = {**os.environ, "TRIOHOOKS_STATE_DIR": str(tmp_path / "state")}
        done = await trio.run_process(
            argv, env=env, cwd=ROOT, capture_stdout=True, check=False, capture_stderr=True
        )
        assert done.returncode == 1
        assert b"--allow-remote" in done.stderr and b"Traceback" not in done.stderr


async def test_stalled_subscriber_lags_while_healthy_one_gets_every_record(
    tmp_path: Path,
) -> None:
    big = "x" * 200_000  # big records fill the stalled socket's buffers quickly
    settings = ServeSettings(
        token="t0k3n",
        port=0,
        buffer=8,
        engine={"workspace": tmp_path, "audit": False, "config_dir": tmp_path / "g"},
    )
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            server = await nursery.start(serve, settings)

            async def allow(fields: Any) -> None:
                return None

            server.engine.add_hook("pre_tool", allow)
            async with (
                open_websocket(server.url, _auth("t0k3n")) as stalled,
                open_websocket(server.url, _auth("t0k3n")) as healthy,
                open_websocket(server.url, _auth("t0k3n")) as firer,
            ):
                for ws in (stalled, healthy):
                    await _send(ws, {"type": "subscribe", "kinds": ["outcome"]})
                    assert (await _recv(ws))["type"] == "subscribed"
                n = 60
                got: list[int] = []

                async def read_healthy() -> None:
                    while len(got) < n:
                        msg = await _recv(healthy)
                        assert msg["type"] == "event", msg["type"]
                        got.append(msg["seq"])

                async with trio.open_nursery() as readers:
                    readers.start_soon(read_healthy)
                    for i in range(n):
                        payload = {"tool": "t", "args": {"blob": big}}
                        await _send(
                            firer,
                            {"type": "fire", "id": i, "event": "pre_tool", "payload": payload},
                        )
                        assert (await _recv(firer))["type"] == "outcome"
                assert got == list(range(1, n + 1))
                # The stalled one now reads: some records, a lagged frame, then the rest.
                seen: list[dict[str, Any]] = []
                while not (
                    seen
                    and seen[-1]["type"] == "event"
                    and any(m["type"] == "lagged" for m in seen)
                    and seen[-1]["seq"] + sum(m.get("missed", 0) for m in seen) >= n
                ):
                    seen.append(await _recv(stalled))
                lagged = [m for m in seen if m["type"] == "lagged"]
                assert lagged and all(m["missed"] > 0 for m in lagged)
                seqs = [m["seq"] for m in seen if m["type"] == "event"]
                assert seqs == list(range(1, len(seqs) + 1))  # lost records take no seq
                assert len(seqs) + sum(m["missed"] for m in lagged) == n
            server.shutdown()


# -- self-configuration ----------------------------------------------------------------------
BLOCK_GIT = {
    "id": "block-git",
    "event": "pre_tool_use",
    "matcher": {
        "tool_name": "bash",
        "args_jsonpath": "$.command",
        "match_regex": "(^|[;&|()[:space:]])git([[:space:]]|$)",
    },
    "executor": {
        "type": "bash",
        "command": """printf '%s\\n' '{"decision":"block","reason":"git command blocked by hook"}'""",
    },
    "timeout_ms": 1000,
    "on_error": "block",
    "description": "Block bash commands that invoke git",
}


def _tools(tmp_path: Path) -> HooksTools:
    (tmp_path / "ws").mkdir(exist_ok=True)
    return HooksTools(workspace=tmp_path / "ws", config_dir=tmp_path / "g")


async def test_list_hooks_fields_paths_and_counts(tmp_path: Path) -> None:
    with trio.fail_after(10):
        tools = _tools(tmp_path)
        only_name = bash_hook("only-name", "true", matcher={"tool_name": "bash"})
        write_json_hooks(tmp_path / "g", [BLOCK_GIT, only_name])
        listing = await tools.call("list_hooks", {})
        assert listing["global_path"] == str(tmp_path / "g" / "hooks.json")
        assert listing["workspace_path"] == str(tmp_path / "ws" / ".agents" / "hooks.json")
        assert listing["counts"]["global"] == 2 and listing["counts"]["workspace"] == 0
        by_id = {h["id"]: h for h in listing["hooks"]}
        keys = {"tool_name", "tool_name_glob", "args_jsonpath", "match_regex", "deny_regex"}
        for h in by_id.values():
            assert set(h["matcher"]) == keys
            assert h["scope"] == "global" and h["source"] == listing["global_path"]
            assert h["event"] == "pre_tool_use"
        assert by_id["only-name"]["matcher"] == {
            "tool_name": "bash",
            "tool_name_glob": None,
            "args_jsonpath": None,
            "match_regex": None,
            "deny_regex": None,
        }
        assert by_id["block-git"]["description"] == "Block bash commands that invoke git"


async def test_validate_hook_needs_no_id_and_says_what_is_wrong(tmp_path: Path) -> None:
    with trio.fail_after(10):
        tools = _tools(tmp_path)
        no_id = {k: v for k, v in BLOCK_GIT.items() if k != "id"}
        ok = await tools.call("validate_hook", {"hook": no_id})
        assert ok["valid"] is True and ok["id"] is None
        bad = await tools.call("validate_hook", {"hook": {**no_id, "timeout_ms": 50}})
        assert bad["valid"] is False and "timeout_ms" in bad["error"]
        both = {**no_id, "matcher": {**BLOCK_GIT["matcher"], "deny_regex": "x"}}  # type: ignore[dict-item]
        assert (await tools.call("validate_hook", {"hook": both}))["valid"] is False
        assert not (tmp_path / "g").exists()  # nothing written


async def test_upsert_scope_id_malformed_disabled_unknown_keys_mode(tmp_path: Path) -> None:
    with trio.fail_after(10):
        tools = _tools(tmp_path)
        # Scope is trimmed and case-insensitive.
        done = await tools.call("upsert_hook", {"scope": "  WorkSpace ", "hook": BLOCK_GIT})
        assert "error" not in done, done
        ws_file = tmp_path / "ws" / ".agents" / "hooks.json"
        assert done["scope"] == "workspace" and done["path"] == str(ws_file)
        # id required.
        no_id = {k: v for k, v in BLOCK_GIT.items() if k != "id"}
        assert "error" in await tools.call("upsert_hook", {"scope": "global", "hook": no_id})
        assert "error" in await tools.call("upsert_hook", {"scope": "local", "hook": BLOCK_GIT})

        # A malformed target file is an error and stays byte-identical; no temp file left.
        g = tmp_path / "g"
        g.mkdir(exist_ok=True)
        broken = b'{"hooks": [ {"id": "x",, }\n'
        (g / "hooks.json").write_bytes(broken)
        err = await tools.call("upsert_hook", {"scope": "global", "hook": BLOCK_GIT})
        assert "error" in err
        assert (g / "hooks.json").read_bytes() == broken
        assert [p.name for p in g.iterdir() if p.name.startswith(".hooks")] == []

        # Removes the id from `disabled`, replaces every entry with the id (even a malformed
        # one), keeps unknown top-level keys, keeps the mode, pretty JSON + trailing newline.
        (g / "hooks.json").write_text(
            json.dumps(
                {
                    "version": 3,
                    "hooks": [{"id": "block-git", "event": 5}, bash_hook("other", "true")],
                    "disabled": ["block-git", "keep-me"],
                    "x-owner": {"team": "a"},
                }
            )
        )
        os.chmod(g / "hooks.json", 0o640)
        done = await tools.call("upsert_hook", {"scope": "global", "hook": BLOCK_GIT})
        assert done["replaced"] == 1, done
        text = (g / "hooks.json").read_text()
        assert text.endswith("}\n") and '\n  "hooks": [\n' in text
        doc = json.loads(text)
        assert list(doc) == ["version", "hooks", "disabled", "x-owner"]
        assert doc["version"] == 3 and doc["x-owner"] == {"team": "a"}
        assert doc["disabled"] == ["keep-me"]
        assert [h["id"] for h in doc["hooks"]] == ["other", "block-git"]
        assert doc["hooks"][-1] == BLOCK_GIT
        assert stat.S_IMODE((g / "hooks.json").stat().st_mode) == 0o640
        assert [p.name for p in g.iterdir() if p.name.startswith(".hooks")] == []


async def test_remove_in_workspace_scope_writes_disabled_even_when_nothing_removed(
    tmp_path: Path,
) -> None:
    with trio.fail_after(10):
        tools = _tools(tmp_path)
        write_json_hooks(tmp_path / "g", [BLOCK_GIT])
        done = await tools.call("remove_hook", {"scope": "workspace", "id": "block-git"})
        assert done["removed"] is False and done["disabled"] is True, done
        doc = json.loads((tmp_path / "ws" / ".agents" / "hooks.json").read_text())
        assert doc["disabled"] == ["block-git"]
        # The global hook is off in this workspace now (the workspace file is trusted: it was
        # written through the tools into a workspace that had no hook files).
        listing = await tools.call("list_hooks", {})
        assert "block-git" not in [h["id"] for h in listing["hooks"] if h["trusted"]]
        # Global scope: removed true, and no disabled marker there.
        done = await tools.call("remove_hook", {"scope": "global", "id": "block-git"})
        assert done["removed"] is True
        assert json.loads((tmp_path / "g" / "hooks.json").read_text())["hooks"] == []
        assert "error" in await tools.call("remove_hook", {"scope": "global"})


async def test_next_event_sees_an_upserted_hook_without_restart(tmp_path: Path) -> None:
    with trio.fail_after(15):
        (tmp_path / "ws").mkdir()
        async with HookEngine.open(
            workspace=tmp_path / "ws", config_dir=tmp_path / "g", audit=False
        ) as engine:
            tools = HooksTools.for_engine(engine)
            before = await engine.pre_tool("bash", {"command": "git status"})
            assert not before.blocked
            done = await tools.call("upsert_hook", {"scope": "workspace", "hook": BLOCK_GIT})
            assert done["active"] and done["reloaded"], done
            after = await engine.pre_tool("bash", {"command": "git status"})
            assert after.blocked and after.reason == "git command blocked by hook"
            assert not (await engine.pre_tool("bash", {"command": "ls"})).blocked
            # Two concurrent upserts both land.
            async with trio.open_nursery() as nursery:
                for name in ("one", "two"):
                    nursery.start_soon(
                        tools.call,
                        "upsert_hook",
                        {"scope": "global", "hook": bash_hook(name, "true")},
                    )
            doc = json.loads((tmp_path / "g" / "hooks.json").read_text())
            assert sorted(h["id"] for h in doc["hooks"]) == ["one", "two"]
            done = await tools.call("remove_hook", {"scope": "workspace", "id": "block-git"})
            assert done["removed"] and done["reloaded"]
            assert not (await engine.pre_tool("bash", {"command": "git status"})).blocked


def _cli(tmp_path: Path, *argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    args = [
        "hooks",
        *argv,
        "--workspace",
        str(tmp_path / "ws"),
        "--config-dir",
        str(tmp_path / "g"),
    ]
    return cli_here(args, cwd=ROOT, stdin=stdin or "", timeout=20)


def test_hooks_cli_list_get_set_remove(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(BLOCK_GIT))
    done = _cli(tmp_path, "set", str(spec), "--scope", "workspace")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "ws" / ".agents" / "hooks.json").exists()
    assert not (tmp_path / "g" / "hooks.json").exists()
    done = _cli(tmp_path, "set", "-", stdin=json.dumps({**BLOCK_GIT, "id": "g2"}))
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "g" / "hooks.json").read_text())["hooks"][0]["id"] == "g2"

    listing = _cli(tmp_path, "list", "--json")
    assert listing.returncode == 0, listing.stderr
    doc = json.loads(listing.stdout)
    assert {h["id"]: h["scope"] for h in doc["hooks"]} == {"g2": "global", "block-git": "workspace"}
    assert doc["counts"]["global"] == 1 and doc["counts"]["workspace"] == 1
    assert "block-git" in _cli(tmp_path, "list").stdout

    got = _cli(tmp_path, "get", "block-git")
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["entry"] == BLOCK_GIT
    missing = _cli(tmp_path, "get", "nope")
    assert missing.returncode == 1 and "Traceback" not in missing.stderr

    bad = tmp_path / "bad.json"
    bad.write_text('{"event": "pre_tool_use"}')
    refused = _cli(tmp_path, "set", str(bad))
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1, refused.stderr

    removed = _cli(tmp_path, "remove", "block-git", "--scope", "workspace")
    assert removed.returncode == 0, removed.stderr
    ws_doc = json.loads((tmp_path / "ws" / ".agents" / "hooks.json").read_text())
    assert ws_doc["hooks"] == [] and ws_doc["disabled"] == ["block-git"]


# -- asyncio ------------------------------------------------------------------------------------
def test_asyncio_engine_fire_helpers_blocking_hook_timeout_and_close_drain(tmp_path: Path) -> None:
    mark = tmp_path / "drained"
    write_toml_hooks(
        tmp_path / "t",
        f'[[hooks.post_tool]]\nid = "bg"\ncommand = "sleep 0.3; touch {mark}"\n'
        '[[hooks.pre_tool]]\nid = "slow"\nmatch = "slow_tool"\ncommand = "sleep 10"\n'
        "timeout_seconds = 0.2\n",
    )
    write_json_hooks(tmp_path / "g", [BLOCK_GIT])

    async def main() -> None:
        async with asyncio.timeout(15):
            async with AsyncioHookEngine.open(
                workspace=tmp_path,
                config_dir=tmp_path / "g",
                extra_configs=[tmp_path / "t" / "hooks.toml"],
                audit=False,
            ) as engine:
                push, ls = await asyncio.gather(
                    engine.pre_tool("bash", {"command": "git push"}),
                    engine.fire("pre_tool_use", {"tool": "bash", "args": {"command": "ls"}}),
                )
                assert push.blocked and push.reason == "git command blocked by hook"
                assert not ls.blocked
                slow = await engine.pre_tool("slow_tool", {})
                assert slow.runs[0].outcome == "timeout" and not slow.blocked
                assert (await engine.session_start()).event == "session_start"
                after = await engine.post_tool("x", {}, result="ok")
                assert after.queued
            assert mark.exists()  # the close drained the background hook
            report = engine.close_report
            assert report is not None and report.ran == 1

    asyncio.run(main())


def test_asyncio_cancelling_the_awaiting_task_kills_the_hook_process(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    write_toml_hooks(
        tmp_path / "t",
        f'[[hooks.pre_tool]]\nmatch = "bash"\ncommand = "echo $$ > {pid_file}; sleep 30"\n',
    )

    async def main() -> None:
        async with asyncio.timeout(15):
            async with AsyncioHookEngine.open(
                workspace=tmp_path, extra_configs=[tmp_path / "t" / "hooks.toml"], audit=False
            ) as engine:
                task = asyncio.create_task(engine.pre_tool("bash", {"command": "ls"}))
                while not pid_file.exists() or not pid_file.read_text().strip():
                    await asyncio.sleep(0.01)
                pid = int(pid_file.read_text())
                assert psutil.pid_exists(pid)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                # The group was killed before the CancelledError reached us.
                try:
                    status = psutil.Process(pid).status()
                except psutil.NoSuchProcess:
                    status = "gone"
                assert status in ("gone", psutil.STATUS_ZOMBIE), status
                assert engine.live_processes == 0
                # The engine goes on.
                assert not (await engine.pre_tool("other", {})).blocked

    asyncio.run(main())


def test_asyncio_two_engines_share_one_loop(tmp_path: Path) -> None:
    write_json_hooks(tmp_path / "a", [BLOCK_GIT])
    write_json_hooks(tmp_path / "b", [])

    async def main() -> None:
        async with asyncio.timeout(15):
            async with (
                AsyncioHookEngine.open(workspace=tmp_path, config_dir=tmp_path / "a") as a,
                AsyncioHookEngine.open(workspace=tmp_path, config_dir=tmp_path / "b") as b,
            ):
                ra, rb = await asyncio.gather(
                    a.pre_tool("bash", {"command": "git push"}),
                    b.pre_tool("bash", {"command": "git push"}),
                )
                assert ra.blocked and not rb.blocked
            # The last close stopped the shared run; a later open starts a new one.
            async with AsyncioHookEngine.open(workspace=tmp_path, config_dir=tmp_path / "a") as c:
                assert (await c.pre_tool("bash", {"command": "git push"})).blocked

    asyncio.run(main())


def test_asyncio_cancelling_the_closing_task_does_not_cut_the_drain_short(tmp_path: Path) -> None:
    mark = tmp_path / "drained"
    write_toml_hooks(tmp_path / "t", f'[[hooks.post_tool]]\ncommand = "sleep 0.3; touch {mark}"\n')

    async def agent(queued: asyncio.Event) -> None:
        async with AsyncioHookEngine.open(
            workspace=tmp_path, extra_configs=[tmp_path / "t" / "hooks.toml"], audit=False
        ) as engine:
            with pytest.raises(ValueError):  # UnknownEventError, before any hook runs
                await engine.fire("nope", {})
            assert (await engine.post_tool("x", {}, result="r")).queued
            queued.set()

    async def main() -> None:
        async with asyncio.timeout(15):
            queued = asyncio.Event()
            task = asyncio.create_task(agent(queued))
            await queued.wait()
            # The agent set it as it left the engine's block and ran on, never yielding, into
            # the close: it waits there for the drain now (no sleep needed to get it there).
            assert not task.done()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert mark.exists()  # the drain ran in full, then the cancel went on

    asyncio.run(main())


async def test_client_subscribe_is_an_async_iterator_too(tmp_path: Path) -> None:
    from triohooks.fronts.client import RemoteError, connect

    settings = ServeSettings(
        token="t0k3n", port=0, engine={"workspace": tmp_path, "config_dir": tmp_path / "g"}
    )
    with trio.fail_after(15):
        async with trio.open_nursery() as nursery:
            server = await nursery.start(serve, settings)

            async def allow(fields: Any) -> None:
                return None

            server.engine.add_hook("pre_tool", allow)
            async with connect(server.url, "t0k3n", token_in_query=True) as client:
                with pytest.raises(RemoteError) as refused:
                    await client.fire("nope", {})
                assert refused.value.code == "unknown_event"
                with pytest.raises(RemoteError):
                    async for _ in client.subscribe(["nope"]):
                        pass
                stream = client.subscribe(["pre_tool_use"], kinds=["outcome"])
                kinds: list[str] = []
                nursery.start_soon(_fire_once, server)  # once subscribed
                async for item in stream:
                    if isinstance(item, EventRecord):
                        kinds.append(item.kind)
                        break
                    kinds.append("?")
                assert kinds == ["outcome"]
                await stream.aclose()
                assert [i async for i in stream] == []
                async with client.subscribe() as again:  # the connection may subscribe again
                    assert again is not None
                assert (await client.stats()).subscribers == 0
            server.shutdown()


async def _fire_once(server: Any) -> None:
    from triohooks.fronts.client import connect

    await server.wait_for_subscriber()
    async with connect(server.url, "t0k3n") as client:
        await client.fire("pre_tool", {"tool": "t"})
