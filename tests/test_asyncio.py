"""AsyncioHookEngine: the engine as a Trio guest on an asyncio loop, driven from asyncio.run.

Plain sync test functions (pytest-trio's trio_mode only takes async ones) that each run one
asyncio loop; every body runs under ``asyncio.timeout`` so a hang fails fast. Real bash hook
processes and the real clock; the conftest fixture fails any test that leaks a process.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.asyncio_support import gone, run
from tests.helpers import bash_hook, write_json_hooks, write_toml_hooks
from triohooks.config.model import ConfigError
from triohooks.engine.asyncio_engine import AsyncioHookEngine, guest_runs_active
from triohooks.handlers.judge import JudgeReply


def engine(tmp_path: Path, **kw: Any) -> Any:
    kw.setdefault("workspace", tmp_path)
    kw.setdefault("config_dir", tmp_path / "config")
    kw.setdefault("state_dir", tmp_path / "state")
    return AsyncioHookEngine.open(**kw)


def toml(tmp_path: Path, text: str) -> None:
    write_toml_hooks(tmp_path / "config", text)


async def wait_for_file(path: Path) -> str:
    while not path.exists() or not path.read_text().strip():
        await asyncio.sleep(0.01)
    return path.read_text().strip()


def test_concurrent_fires_run_their_hooks_at_once(tmp_path: Path) -> None:
    toml(tmp_path, '[[hooks.pre_tool]]\ncommand = "sleep 0.3"\n')
    running = 0
    most = 0

    def listener(kind: str, fields: dict[str, Any]) -> None:
        nonlocal running, most
        if kind == "hook_started":
            running += 1
            most = max(most, running)
        elif kind == "hook_finished":
            running -= 1

    async def body() -> None:
        async with engine(tmp_path) as e:
            e.add_listener(listener)
            outcomes = await asyncio.gather(
                *(e.pre_tool("bash", {"command": f"echo {i}"}) for i in range(5))
            )
        assert [o.args for o in outcomes] == [{"command": f"echo {i}"} for i in range(5)]
        assert all(not o.blocked and o.runs[0].outcome == "ok" for o in outcomes)
        assert most == 5

    run(body)


def test_blocking_hook_blocks_without_blocking_the_loop(tmp_path: Path) -> None:
    toml(
        tmp_path,
        '[[hooks.pre_tool]]\nif = "shell(git push)"\n'
        "command = \"sleep 0.2; echo 'pushing is for humans' >&2; exit 2\"\n",
    )
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    async def body() -> None:
        async with engine(tmp_path) as e:
            tick = asyncio.create_task(ticker())
            out = await e.pre_tool("bash", {"command": "git push origin main"})
            tick.cancel()
            allowed = await e.pre_tool("bash", {"command": "git status"})
        assert out.blocked and out.decision == "block"
        assert out.message_for_model == "blocked by pre_tool hook: pushing is for humans"
        assert ticks >= 5, "the asyncio loop stalled while the hook ran"
        assert not allowed.blocked and allowed.runs == []

    run(body)


def test_hook_timeouts_follow_each_dialect(tmp_path: Path) -> None:
    toml(
        tmp_path,
        '[[hooks.pre_tool]]\nid = "slow-strict"\ncommand = "sleep 5"\n'
        "timeout_seconds = 0.15\nfail_closed = true\n",
    )
    write_json_hooks(
        tmp_path / ".agents",
        [bash_hook("slow-json", "sleep 5", event="user_prompt_submit", timeout_ms=150)],
    )

    async def body() -> None:
        async with engine(tmp_path, trust=True) as e:
            tool = await e.pre_tool("bash", {"command": "ls"})
            prompt = await e.prompt_submit("hello")
            assert e.live_processes == 0
        assert tool.blocked and tool.runs[0].outcome == "timeout"
        assert "fail_closed" in (tool.reason or "")
        assert not prompt.blocked and prompt.runs[0].outcome == "timeout"
        assert any("slow-json failed" in w for w in prompt.warnings)

    run(body)


def test_asyncio_timeout_around_fire_kills_the_hook(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    toml(tmp_path, f'[[hooks.pre_tool]]\ncommand = "echo $$ > {pid_file}; exec sleep 30"\n')

    async def body() -> None:
        async with engine(tmp_path) as e:
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(e.pre_tool("bash", {"command": "ls"}), 0.3)
            assert await gone(int(await wait_for_file(pid_file)))
            # The engine is still fine afterwards.
            pid_file.unlink()
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.3):
                    await e.fire("pre_tool", {"tool": "bash", "args": {}})
            assert await gone(int(await wait_for_file(pid_file)))

    run(body)


def test_cancelling_the_awaiting_task_kills_the_hook(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    toml(tmp_path, f'[[hooks.pre_tool]]\ncommand = "echo $$ > {pid_file}; exec sleep 30"\n')

    async def body() -> None:
        async with engine(tmp_path) as e:
            task = asyncio.create_task(e.pre_tool("bash", {"command": "ls"}))
            pid = int(await wait_for_file(pid_file))
            assert psutil.pid_exists(pid)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert await gone(pid)
            while e.live_processes:
                await asyncio.sleep(0.01)

    run(body)


def test_close_drains_the_background_queue(tmp_path: Path) -> None:
    done = tmp_path / "formatted"
    toml(tmp_path, f'[[hooks.post_tool]]\ncommand = "sleep 0.2; echo ok > {done}"\n')

    async def body() -> None:
        async with engine(tmp_path) as e:
            out = await e.post_tool("write_file", {"path": "a.py"}, result="ok")
            assert out.queued and not done.exists()
        assert done.read_text() == "ok\n"  # the close waited for the queued hook
        report = e.close_report
        assert report is not None and (report.offered, report.ran) == (1, 1)

    run(body)


def test_close_drain_deadline_kills_what_is_left(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    toml(tmp_path, f'[[hooks.post_tool]]\ncommand = "echo $$ > {pid_file}; exec sleep 30"\n')

    async def body() -> None:
        async with engine(tmp_path, drain_timeout_s=0.2) as e:
            await e.post_tool("bash", {"command": "ls"})
            await e.post_tool("bash", {"command": "ls"})
            pid = int(await wait_for_file(pid_file))
        assert await gone(pid)
        report = e.close_report
        assert report is not None
        assert report.offered == 2 and report.dropped_at_close == 2 and report.killed >= 1

    run(body)


def test_cancel_while_closing_still_closes_cleanly(tmp_path: Path) -> None:
    done = tmp_path / "formatted"
    toml(tmp_path, f'[[hooks.post_tool]]\ncommand = "sleep 0.3; echo ok > {done}"\n')
    closing = asyncio.Event()

    async def agent() -> None:
        async with engine(tmp_path) as e:
            await e.post_tool("bash", {"command": "ls"})
            closing.set()

    async def body() -> None:
        task = asyncio.create_task(agent())
        await closing.wait()
        # The agent set it as it left the engine's block and ran on, never yielding, into the
        # close: it waits there for the drain now (no sleep needed to get it there).
        assert not task.done()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # The cancel arrived after the drain: nothing was abandoned.
        assert done.read_text() == "ok\n"
        assert guest_runs_active() == 0

    run(body)


def test_two_engines_on_one_loop_share_the_guest_run(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    write_toml_hooks(a / "config", '[[hooks.pre_tool]]\ncommand = "echo a-says-no >&2; exit 2"\n')
    write_toml_hooks(b / "config", '[[hooks.pre_tool]]\ncommand = "exit 0"\n')

    async def body() -> None:
        async with engine(a) as first:
            async with engine(b) as second:
                assert first._guest is second._guest
                assert guest_runs_active() == 1
                one, two = await asyncio.gather(
                    first.pre_tool("bash", {}), second.pre_tool("bash", {})
                )
                assert one.blocked and one.reason == "a-says-no"
                assert not two.blocked and two.runs[0].outcome == "ok"
            assert guest_runs_active() == 1  # still held by the first engine
            assert (await first.pre_tool("bash", {})).blocked
            with pytest.raises(RuntimeError, match="closed"):
                await second.pre_tool("bash", {})
        assert guest_runs_active() == 0
        # A later engine on the same loop starts a fresh guest run.
        async with engine(b) as third:
            assert not (await third.pre_tool("bash", {})).blocked
            assert guest_runs_active() == 1

    run(body)


def test_asyncio_hooks_run_as_tasks_on_the_loop(tmp_path: Path) -> None:
    seen: list[str] = []

    async def quiet_pytest(fields: Mapping[str, Any]) -> dict[str, Any]:
        task = asyncio.current_task()
        assert task is not None  # an asyncio task, not Trio code
        await asyncio.sleep(0.01)
        seen.append(fields["args"]["command"])
        return {"updated_args": {"command": fields["args"]["command"] + " -q"}}

    async def body() -> None:
        async with engine(tmp_path) as e:
            hook = e.add_hook("pre_tool", quiet_pytest, match="bash")
            out = await e.pre_tool("bash", {"command": "pytest"})
            assert out.args == {"command": "pytest -q"}
            assert (
                out.runs[0].hook
                == "test_asyncio_hooks_run_as_tasks_on_the_loop.<locals>.quiet_pytest"
            )
            e.remove_hook(hook)
            assert (await e.pre_tool("bash", {"command": "pytest"})).args == {"command": "pytest"}
        assert seen == ["pytest"]

    run(body)


def test_asyncio_hook_timeout_cancels_its_task(tmp_path: Path) -> None:
    cancelled = asyncio.Event()

    async def stuck(fields: Mapping[str, Any]) -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def broken(fields: Mapping[str, Any]) -> None:
        raise ValueError("bug in hook")

    async def body() -> None:
        async with engine(tmp_path) as e:
            e.add_hook("prompt_submit", stuck, timeout_s=0.1)
            e.add_hook("prompt_submit", broken, name="broken")
            out = await e.prompt_submit("hi")
        assert cancelled.is_set()
        assert [r.outcome for r in out.runs] == ["timeout", "error"]
        assert "ValueError('bug in hook')" in (out.runs[1].error or "")

    run(body)


def test_asyncio_judge_answers_prompt_hooks(tmp_path: Path) -> None:
    toml(tmp_path, '[[hooks.pre_tool]]\ntype = "prompt"\nprompt = "is this safe?"\n')
    asked: list[str] = []

    async def judge(prompt: str, event_json: str, model: str | None) -> JudgeReply:
        assert asyncio.current_task() is not None
        asked.append(prompt)
        if "rm -rf" in event_json:
            return JudgeReply(text='{"decision": "block", "reason": "destructive"}')
        return JudgeReply(text='{"decision": ""}')

    async def body() -> None:
        async with engine(tmp_path, judge=judge) as e:
            bad = await e.pre_tool("bash", {"command": "rm -rf /"})
            fine = await e.pre_tool("bash", {"command": "ls"})
        assert bad.blocked and bad.reason == "destructive"
        assert not fine.blocked
        assert asked == ["is this safe?"] * 2

    run(body)


def test_config_error_is_raised_from_open(tmp_path: Path) -> None:
    toml(tmp_path, '[[hooks.pre_tool]]\ncommand = ""\n')

    async def body() -> None:
        with pytest.raises(ConfigError):
            async with engine(tmp_path):
                raise AssertionError("opened despite a config error")

    run(body)


def test_payload_is_snapshotted_when_fired(tmp_path: Path) -> None:
    toml(tmp_path, '[[hooks.pre_tool]]\ncommand = "cat >&2; exit 2"\n')

    async def body() -> None:
        async with engine(tmp_path) as e:
            args = {"command": "ls"}
            pending = asyncio.create_task(e.pre_tool("bash", args))
            await asyncio.sleep(0)
            args["command"] = "changed after the call"
            out = await pending
        assert '"command":"ls"' in (out.reason or "")

    run(body)


def test_open_while_the_last_user_is_closing_starts_a_new_run(tmp_path: Path) -> None:
    toml(tmp_path, '[[hooks.pre_tool]]\ncommand = "exit 0"\n')

    async def use_once(opened: asyncio.Future[Any]) -> None:
        async with engine(tmp_path) as e:
            opened.set_result(e._guest)

    async def body() -> None:
        opened: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        closing = asyncio.create_task(use_once(opened))
        guest = await opened
        while not guest.stopping:  # the first engine is now closing its guest run
            await asyncio.sleep(0)
        async with engine(tmp_path) as again:
            assert guest.finished.done() and again._guest is not guest
            assert not (await again.pre_tool("bash", {})).blocked
        await closing

    run(body)
