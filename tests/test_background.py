"""Background delivery through the real engine: ordered, never delaying the agent, drained or
killed at close, and accounted in the close report and the audit log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

from triohooks.engine.hook_engine import HookEngine

from .helpers import bash_hook, write_json_hooks, write_toml_hooks

pytestmark = pytest.mark.slow


def open_engine(tmp_path: Path, **kw):
    (tmp_path / "ws").mkdir(exist_ok=True)
    return HookEngine.open(
        workspace=tmp_path / "ws",
        config_dir=tmp_path / "g",
        trust=True,
        state_dir=tmp_path / "state",
        **kw,
    )


async def test_post_tool_is_queued_runs_in_order_and_never_waits(tmp_path: Path) -> None:
    """Ten post_tool events answer while their hooks cannot run yet (each waits for a gate the
    test opens only after the last answer), then run in order by close."""
    log, gate = tmp_path / "log", tmp_path / "gate"
    write_toml_hooks(
        tmp_path / "g",
        f"""[[hooks.post_tool]]
command = '''until [ -e {gate} ]; do sleep 0.01; done; grep -o '"i":[0-9]*' | cut -d: -f2 >> {log}'''
""",
    )
    with trio.fail_after(30):
        async with open_engine(tmp_path) as engine:
            outcomes = [await engine.post_tool("bash", {"i": i}, result="ok") for i in range(10)]
            assert not log.exists()  # every answer came while the first hook still waited
            gate.touch()
    assert all(o.queued and o.runs == [] for o in outcomes)
    assert log.read_text().split() == [str(i) for i in range(10)]
    assert engine.close_report is not None
    assert (engine.close_report.offered, engine.close_report.ran) == (10, 10)


async def test_payload_is_encoded_at_fire_time(tmp_path: Path) -> None:
    seen = tmp_path / "seen"
    write_toml_hooks(tmp_path / "g", f'[[hooks.post_tool]]\ncommand = "cat > {seen}"\n')
    args = {"command": "ls"}
    result = {"files": ["a"]}
    with trio.fail_after(10):
        async with open_engine(tmp_path) as engine:
            await engine.post_tool("bash", args, result=result)
            args["command"] = "rm -rf /"
            result["files"].append("mutated")
    payload = json.loads(seen.read_text())
    assert payload["args"] == {"command": "ls"} and payload["result"] == {"files": ["a"]}
    assert payload["event"] == "post_tool"


async def test_failed_tool_fires_post_tool_and_post_tool_failure(tmp_path: Path) -> None:
    log = tmp_path / "log"
    write_toml_hooks(
        tmp_path / "g",
        f"""[[hooks.post_tool]]
command = "echo post >> {log}"
[[hooks.post_tool_failure]]
command = "echo failure >> {log}"
""",
    )
    with trio.fail_after(10):
        async with open_engine(tmp_path) as engine:
            await engine.post_tool("bash", {}, result=None, error="exit 1")
            await engine.post_tool("bash", {}, result="fine")
    assert log.read_text().split() == ["post", "failure", "post"]


async def test_json_session_end_runs_in_background(tmp_path: Path) -> None:
    marker = tmp_path / "ended"
    write_json_hooks(
        tmp_path / "g",
        [bash_hook("end", f'printf "%s" "$EVERRUNS_HOOK_EVENT" > {marker}', event="session_end")],
    )
    with trio.fail_after(10):
        async with open_engine(tmp_path) as engine:
            out = await engine.session_end("exit")
    assert out.queued and marker.read_text() == "session_end"


async def test_close_drains_then_kills_and_reports(tmp_path: Path) -> None:
    write_toml_hooks(tmp_path / "g", '[[hooks.post_tool]]\ncommand = "sleep 100"\n')
    with trio.fail_after(15):
        async with open_engine(tmp_path, drain_timeout_s=0.5) as engine:
            for i in range(3):
                await engine.post_tool("bash", {"i": i})
            start = trio.current_time()
        closed_in = trio.current_time() - start
    report = engine.close_report
    assert report is not None
    assert report.offered == 3 and report.ran == 0 and report.dropped_at_close == 3
    assert report.killed >= 1
    assert closed_in < 4.0
    audit = next((tmp_path / "state/audit").glob("audit-*.jsonl")).read_text().splitlines()
    close = [json.loads(line) for line in audit if '"kind":"worker"' in line]
    assert close and close[-1]["detail"]["dropped_at_close"] == 3


async def test_blocking_hooks_are_audited(tmp_path: Path) -> None:
    write_toml_hooks(tmp_path / "g", '[[hooks.pre_tool]]\ncommand = "echo nope >&2; exit 2"\n')
    with trio.fail_after(10):
        async with open_engine(tmp_path) as engine:
            await engine.pre_tool("bash", {"command": "x"}, session_id="s9")
    lines = next((tmp_path / "state/audit").glob("audit-*.jsonl")).read_text().splitlines()
    records = [json.loads(line) for line in lines if '"kind":"hook"' in line]
    assert records[0]["decision"] == "block" and records[0]["session"] == "s9"
    assert records[0]["event"] == "pre_tool" and records[0]["error"] == "nope"
