"""Supervised actors really restart.

Each test crashes one real actor of a real engine once — a bug injected where the actor's own
containment does not reach — and checks the engine still answers and still blocks a guarded
call with a real bash hook. When the budget is spent the engine fails loudly with ActorFailed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from triohooks import HookEngine
from triohooks.actors import loader as loader_module
from triohooks.actors.audit import AuditSink
from triohooks.actors.post_worker import BackgroundItem, PostWorker
from triohooks.actors.supervisor import ActorFailed

from .helpers import run_cli, write_toml_hooks

pytestmark = pytest.mark.slow

GUARD = """
[[hooks.pre_tool]]
match = "bash"
command = "echo no pushing >&2; exit 2"
"""


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path, Path]:
    ws, g, state = tmp_path / "ws", tmp_path / "g", tmp_path / "state"
    ws.mkdir()
    write_toml_hooks(g, GUARD)
    return ws, g, state


def engine(dirs: tuple[Path, Path, Path], **kw: Any) -> Any:
    ws, g, state = dirs
    return HookEngine.open(workspace=ws, config_dir=g, state_dir=state, **kw)


async def assert_guarded(e: HookEngine) -> None:
    out = await e.pre_tool("bash", {"command": "git push"})
    assert out.blocked and out.reason == "no pushing", out


async def test_loader_crash_is_restarted_and_reload_works_again(dirs, monkeypatch) -> None:
    real = loader_module._answer
    crashes = 0

    def answer_crashing_once(reply: Any, report: Any) -> None:
        nonlocal crashes
        if crashes == 0:
            crashes += 1
            raise RuntimeError("a bug in the loader loop")
        real(reply, report)

    monkeypatch.setattr(loader_module, "_answer", answer_crashing_once)
    with trio.fail_after(20):
        async with engine(dirs) as e:
            first = await e.reload()
            assert not first.applied
            assert "crashed" in first.problems[0].message
            second = await e.reload()  # served by the restarted loop
            assert second.applied
            await assert_guarded(e)
    assert crashes == 1


async def test_a_crash_in_one_event_fails_it_closed_and_touches_no_other(dirs, monkeypatch) -> None:
    _, g, _ = dirs
    write_toml_hooks(g, GUARD + '\n[[hooks.pre_tool]]\nmatch = "*o*"\ncommand = "sleep 0.5"\n')
    with trio.fail_after(20):
        async with engine(dirs) as e:
            dispatcher = e._dispatcher
            real = dispatcher._run_event

            async def run_event(run: Any, *rest: Any) -> Any:
                if getattr(run.ev, "tool", "") == "boom":
                    raise RuntimeError("a bug while handling one event")
                return await real(run, *rest)

            monkeypatch.setattr(dispatcher, "_run_event", run_event)
            results: dict[str, Any] = {}

            async def call(tool: str) -> None:
                results[tool] = await e.pre_tool(tool, {})

            async with trio.open_nursery() as nursery:
                nursery.start_soon(call, "slow")
                await trio.sleep(0.1)
                nursery.start_soon(call, "boom")
            # The event our code failed on could not be judged: it fails closed...
            assert results["boom"].blocked
            assert "internal error" in (results["boom"].reason or "")
            # ...and the one in flight beside it ran to its own end, untouched.
            assert not results["slow"].blocked and results["slow"].runs[0].outcome == "ok"
            assert dispatcher.crashes == 1
            await assert_guarded(e)
            assert e.live_processes == 0


async def test_post_worker_crash_restarts_and_background_hooks_go_on(
    dirs, tmp_path: Path, monkeypatch
) -> None:
    _, g, _ = dirs
    log = tmp_path / "post.log"
    write_toml_hooks(g, GUARD + f'\n[[hooks.post_tool]]\ncommand = "cat >> {log}; echo >> {log}"\n')
    real = PostWorker._run_one
    crashes = 0

    async def crash_once(self: PostWorker, item: BackgroundItem) -> None:
        nonlocal crashes
        if crashes == 0:
            crashes += 1
            raise RuntimeError("a bug in the consumer loop")
        await real(self, item)

    monkeypatch.setattr(PostWorker, "_run_one", crash_once)
    with trio.fail_after(20):
        async with engine(dirs) as e:
            await e.post_tool("bash", {"command": "one"}, result="1")
            worker = e._dispatcher.post_worker
            while worker.crashes == 0:  # the consumer crashes on it; the next offer restarts it
                await trio.sleep(0.01)
            await assert_guarded(e)
            await e.post_tool("bash", {"command": "two"}, result="2")
    assert crashes == 1
    lines = [json.loads(x) for x in log.read_text().split("\n") if x.strip()]
    assert [x["args"]["command"] for x in lines] == ["two"]
    report = e.close_report
    assert report is not None and report.ran == 2 and report.failed == 1


async def test_audit_crash_restarts_and_loses_no_record(dirs, monkeypatch) -> None:
    real = AuditSink._write
    crashes = 0

    async def write_crashing_once(self: AuditSink, batch: Any) -> None:
        nonlocal crashes
        if crashes == 0:
            crashes += 1
            raise RuntimeError("a bug in the audit writer")
        await real(self, batch)

    monkeypatch.setattr(AuditSink, "_write", write_crashing_once)
    with trio.fail_after(20):
        async with engine(dirs) as e:
            await assert_guarded(e)
            sink = e._audit
            assert sink is not None
            # The writer crashes on its first batch, which the restarted one writes first.
            while crashes == 0 or sink.written == 0:
                await trio.sleep(0.01)
            await assert_guarded(e)
    assert crashes == 1
    files = list((dirs[2] / "audit").glob("audit-*.jsonl"))
    records = [json.loads(line) for f in files for line in f.read_text().splitlines()]
    assert [r["decision"] for r in records if r["kind"] == "hook"] == ["block", "block"]


async def test_a_spent_restart_budget_fails_the_engine_loudly(dirs, monkeypatch) -> None:
    def answer_crashing(reply: Any, report: Any) -> None:
        raise RuntimeError("a bug in the loader loop")

    monkeypatch.setattr(loader_module, "_answer", answer_crashing)
    with trio.fail_after(20), pytest.raises(ActorFailed, match="loader"):
        async with engine(dirs) as e:
            for _ in range(10):
                await e.reload()
            await trio.sleep_forever()  # the engine's failure cancels the body


async def test_reaper_sweeper_crash_restarts_and_escapees_are_still_swept(
    dirs, monkeypatch
) -> None:
    from triohooks.actors import _watchdog, posix_guard

    crashes = 0
    real = _watchdog.kill_marked

    def kill_marked_crashing_once(*args: Any) -> int:
        nonlocal crashes
        if crashes == 0:
            crashes += 1
            raise RuntimeError("a bug in the escapee sweep")
        return real(*args)

    # Without the helper, the linux backend's sweeps are the posix guard's.
    monkeypatch.setattr(posix_guard, "kill_marked", kill_marked_crashing_once)
    _, g, _ = dirs
    write_toml_hooks(g, GUARD + '\n[[hooks.post_tool]]\ncommand = "true"\n')
    with trio.fail_after(20):
        async with engine(dirs, watchdog=False) as e:
            await e.post_tool("bash", {"command": "ls"}, result="")  # a run ends: a sweep
            while crashes == 0:
                await trio.sleep(0.02)
            await assert_guarded(e)
            await e.post_tool("bash", {"command": "ls"}, result="")  # swept by the new sweeper
            await assert_guarded(e)
    assert crashes == 1


async def test_reaper_watchdog_helper_killed_is_replaced_and_guards_go_on(dirs) -> None:
    import os
    import signal

    import psutil

    _, g, _ = dirs
    write_toml_hooks(g, GUARD.replace("exit 2", "echo $PPID > ppid; exit 2"))
    with trio.fail_after(20):
        async with engine(dirs) as e:
            first = e._reaper.watchdog_pid
            assert first is not None
            os.kill(first, signal.SIGKILL)
            while e._reaper.watchdog_pid in (None, first):
                await trio.sleep(0.02)
            second = e._reaper.watchdog_pid
            await assert_guarded(e)
            # The hook was the new helper's child: escapees are its to kill again.
            ppid = int((dirs[0] / "ppid").read_text())
            assert ppid == second and psutil.Process(second).ppid() == os.getpid()
    assert not psutil.pid_exists(second) or psutil.Process(second).status() == "zombie"


async def test_reaper_watchdog_helper_dying_past_its_budget_fails_the_engine_loudly(
    dirs,
) -> None:
    import os
    import signal

    with trio.fail_after(30), pytest.raises(ActorFailed, match="watchdog helper"):
        async with engine(dirs) as e:
            for _ in range(10):
                pid = e._reaper.watchdog_pid
                if pid is not None:
                    os.kill(pid, signal.SIGKILL)
                while e._reaper.watchdog_pid in (None, pid):
                    await trio.sleep(0.02)
            await trio.sleep_forever()  # the engine's failure cancels the body


# -- fire and serve when the engine fails: they say so, and fire never allows ---------------


def crashing_cli(tmp_path: Path, monkeypatch: Any, *args: str, stdin: str = "") -> Any:
    """The CLI with a loader that crashes every time it restarts: the restart budget is spent
    at once and the engine fails with ActorFailed."""

    async def serve(self: loader_module.Loader, *, task_status: Any = None) -> None:
        if task_status is not None:
            task_status.started()
        raise RuntimeError("a bug in the loader")

    monkeypatch.setattr(loader_module.Loader, "serve", serve)
    return run_cli(
        *args,
        config_dir=tmp_path / "g",
        state_dir=tmp_path / "state",
        cwd=tmp_path / "ws",
        stdin=stdin,
    )


@pytest.mark.parametrize(
    ("event", "payload", "code"),
    [
        ("pre_tool", {"tool": "bash", "args": {"command": "git push"}}, 2),
        ("prompt_submit", {"prompt": "hi"}, 4),
    ],
)
def test_fire_blocks_when_the_engine_fails(
    dirs, monkeypatch, event: str, payload: Any, code: int
) -> None:
    tmp_path = dirs[0].parent
    slow = (
        '\n[[hooks.prompt_submit]]\ncommand = "sleep 1"\n[[hooks.pre_tool]]\ncommand = "sleep 1"\n'
    )
    write_toml_hooks(dirs[1], slow)
    done = crashing_cli(tmp_path, monkeypatch, "fire", event, stdin=json.dumps(payload))
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr
    assert "triohooks: internal error: ActorFailed: actor 'loader' crashed" in done.stderr
    out = json.loads(done.stdout)
    assert out["blocked"] is True
    assert out["reason"].startswith(f"internal error while handling {event}: ActorFailed")


def test_fire_on_an_advisory_event_warns_when_the_engine_fails(dirs, monkeypatch) -> None:
    tmp_path = dirs[0].parent
    write_toml_hooks(dirs[1], '[[hooks.session_start]]\ncommand = "sleep 1"\n')
    done = crashing_cli(tmp_path, monkeypatch, "fire", "session_start", stdin="{}")
    assert done.returncode == 0, done.stderr
    assert "triohooks: internal error: ActorFailed" in done.stderr
    out = json.loads(done.stdout)
    assert out["blocked"] is False
    assert any(w.startswith("internal error while handling session_start") for w in out["warnings"])


def test_serve_says_so_and_exits_3_when_the_engine_fails(dirs, monkeypatch) -> None:
    tmp_path = dirs[0].parent
    done = crashing_cli(tmp_path, monkeypatch, "serve", "--port", "0")
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    assert "triohooks serve: engine failed, stopped serving: ActorFailed" in done.stderr
