"""``guarded_call`` and ``session`` on both engines, with real bash and in-process hooks."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import trio

from triohooks import AsyncioHookEngine, HookEngine

from .helpers import running, unique_sleep, write_toml_hooks

pytestmark = pytest.mark.slow

HOOKS = """
[[hooks.pre_tool]]
match = "bash"
if = "shell(git push*)"
command = "echo 'no pushing' >&2; exit 2"

[[hooks.pre_tool]]
match = "bash"
if = "shell(pytest*)"
command = '''python3 -c 'import json,sys; a=json.load(sys.stdin)["args"]; print(json.dumps({"updated_args": {**a, "command": a["command"] + " -q"}}))' '''

[[hooks.session_start]]
command = "echo 'branch: main'"

[[hooks.prompt_submit]]
command = "cat >> prompts.jsonl; echo >> prompts.jsonl"

[[hooks.post_tool_failure]]
command = "cat > failure.json"

[[hooks.session_end]]
command = "cat > end.json"
"""


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path, Path]:
    ws, g, state = tmp_path / "ws", tmp_path / "g", tmp_path / "state"
    ws.mkdir()
    write_toml_hooks(g, HOOKS)
    return ws, g, state


async def written(path: Path, *, after: float = 0.0) -> Any:
    """The JSON a background hook writes (post events run in the background queue)."""
    while not (path.exists() and path.stat().st_mtime > after and path.read_text().strip()):
        await trio.sleep(0.02)
    return json.loads(path.read_text())


def opts(dirs: tuple[Path, Path, Path]) -> dict[str, Any]:
    ws, g, state = dirs
    return {"workspace": ws, "config_dir": g, "state_dir": state, "audit": False}


async def test_a_block_returns_the_message_and_the_tool_does_not_run(dirs) -> None:
    ran: list[dict[str, Any]] = []
    with trio.fail_after(20):
        async with HookEngine.open(**opts(dirs)) as e:
            r = await e.guarded_call("bash", {"command": "git push"}, ran.append)
    assert r.blocked and ran == []
    assert r.output == "blocked by pre_tool hook: no pushing"
    assert r.post is None and r.pre.blocked


async def test_a_rewrite_changes_the_arguments_the_tool_runs_with(dirs) -> None:
    async def tool(args: dict[str, Any]) -> str:
        return f"ran {args['command']}"

    with trio.fail_after(20):
        async with HookEngine.open(**opts(dirs)) as e:
            r = await e.guarded_call("bash", {"command": "pytest"}, tool)
    assert not r.blocked
    assert r.args == {"command": "pytest -q"}
    assert r.output == "ran pytest -q"
    assert r.post is not None and r.post.result == "ran pytest -q"


async def test_a_tool_error_goes_through_post_tool_failure(dirs) -> None:
    def broken(args: dict[str, Any]) -> None:
        raise RuntimeError("disk full")

    ws = dirs[0]
    with trio.fail_after(20):
        async with HookEngine.open(**opts(dirs)) as e:
            with pytest.raises(RuntimeError, match="disk full"):
                await e.guarded_call("bash", {"command": "ls"}, broken)
            assert (await written(ws / "failure.json"))["error"] == "disk full"
            r = await e.guarded_call("bash", {"command": "ls"}, broken, raise_errors=False)
    assert r.output == "error: disk full" and isinstance(r.exception, RuntimeError)
    assert r.error == "disk full"


async def test_a_session_carries_ids_start_context_and_ends(dirs) -> None:
    ws = dirs[0]
    seen: list[dict[str, Any]] = []
    with trio.fail_after(20):
        async with HookEngine.open(**opts(dirs)) as e:

            async def record(event: Mapping[str, Any]) -> None:
                seen.append(dict(event))

            e.add_hook("pre_tool", record)
            async with e.session("s-42") as s:
                first = await s.prompt("fix the tests")
                first_id = s.prompt_id
                await s.guarded_call("bash", {"command": "ls"}, lambda a: "ok")
                second = await s.prompt("now commit")
    assert first.additional_context == "branch: main"
    assert second.additional_context is None
    (call,) = seen
    assert call["session_id"] == "s-42" and call["prompt_id"] == first_id is not None
    assert s.prompt_id != first_id
    prompts = [json.loads(line) for line in (ws / "prompts.jsonl").read_text().split("\n") if line]
    assert [p["prompt"] for p in prompts] == ["fix the tests", "now commit"]
    assert {p["session_id"] for p in prompts} == {"s-42"}
    end = json.loads((ws / "end.json").read_text())
    assert (end["session_id"], end["reason"]) == ("s-42", "exit")


async def test_session_end_fires_when_the_run_fails_or_is_cancelled(dirs) -> None:
    ws = dirs[0]
    with trio.fail_after(20):
        async with HookEngine.open(**opts(dirs)) as e:
            with pytest.raises(ValueError):
                async with e.session("boom"):
                    raise ValueError("agent bug")
            end = await written(ws / "end.json")
            assert (end["session_id"], end["reason"]) == ("boom", "error")
            (ws / "end.json").unlink()
            with trio.move_on_after(0.5):
                async with e.session("slow"):
                    await trio.sleep_forever()
            end = await written(ws / "end.json")
            assert (end["session_id"], end["reason"]) == ("slow", "cancelled")


async def test_the_stop_loop_goes_on_while_hooks_say_so_and_is_capped(dirs, tmp_path: Path) -> None:
    counter = tmp_path / "stops"
    write_toml_hooks(
        dirs[1],
        HOOKS
        + f"""
[[hooks.stop]]
command = '''n=$(cat {counter} 2>/dev/null || echo 0); echo $((n+1)) > {counter}; [ "$n" -lt 2 ] && {{ echo "tests still red" >&2; exit 2; }}; exit 0'''
""",
    )
    with trio.fail_after(30):
        async with HookEngine.open(**opts(dirs)) as e, e.session() as s:
            await s.prompt("go")
            nudges = []
            while (nudge := await s.stop()) is not None:
                nudges.append(nudge)
    assert nudges == ["tests still red", "tests still red"]
    assert counter.read_text().strip() == "3"


def test_the_asyncio_engine_has_the_same_guarded_call_and_session(dirs) -> None:
    ws = dirs[0]

    async def main() -> tuple[Any, Any, Any]:
        async with asyncio.timeout(30):
            async with AsyncioHookEngine.open(**opts(dirs)) as e:
                async with e.session("a-1") as s:
                    first = await s.prompt("hello")
                    blocked = await s.guarded_call("bash", {"command": "git push"}, lambda a: 1 / 0)
                    rewritten = await s.guarded_call(
                        "bash", {"command": "pytest"}, lambda a: a["command"]
                    )
                return first, blocked, rewritten

    first, blocked, rewritten = asyncio.run(main())
    assert first.additional_context == "branch: main"
    assert blocked.blocked and blocked.output == "blocked by pre_tool hook: no pushing"
    assert rewritten.output == "pytest -q"
    assert json.loads((ws / "end.json").read_text())["session_id"] == "a-1"


def test_an_asyncio_session_cancelled_mid_hook_still_ends(dirs, tmp_path: Path) -> None:
    ws = dirs[0]
    sleep, sleep_argv = unique_sleep()
    write_toml_hooks(
        dirs[1], HOOKS + f'\n[[hooks.pre_tool]]\nmatch = "slow"\ncommand = "{sleep}"\n'
    )

    async def main() -> None:
        async with asyncio.timeout(30):
            async with AsyncioHookEngine.open(**opts(dirs)) as e:

                async def run() -> None:
                    async with e.session("c-1") as s:
                        await s.guarded_call("slow", {}, lambda a: None)

                task = asyncio.create_task(run())
                while not running(sleep_argv):  # mid-hook: its sleep runs
                    await asyncio.sleep(0.01)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                async with asyncio.timeout(2):  # the hook's group is being killed and reaped
                    while e.live_processes:
                        await asyncio.sleep(0.01)

    asyncio.run(main())
    end = json.loads((ws / "end.json").read_text())
    assert (end["session_id"], end["reason"]) == ("c-1", "cancelled")


SLOW_START = HOOKS.replace("command = \"echo 'branch: main'\"", 'command = "sleep 30"')


async def test_a_session_cancelled_during_session_start_still_ends(dirs) -> None:
    # The cancel lands while session_start's hook runs: ``async with`` calls no __aexit__ then,
    # but that hook saw the session begin, so session_end still fires (reason "cancelled").
    ws = dirs[0]
    write_toml_hooks(dirs[1], SLOW_START)
    with trio.fail_after(20):
        async with HookEngine.open(**opts(dirs)) as e:
            with trio.move_on_after(0.5) as scope:
                async with e.session("early"):
                    raise AssertionError("the body must not run")
            assert scope.cancelled_caught
            end = await written(ws / "end.json")
            assert (end["session_id"], end["reason"]) == ("early", "cancelled")
            # The hook writes its file, then exits: reaped a moment later, never left behind
            # (the deadline above bounds the wait).
            while e.live_processes:
                await trio.sleep(0.01)


def test_an_asyncio_session_cancelled_during_session_start_still_ends(dirs) -> None:
    ws = dirs[0]
    write_toml_hooks(dirs[1], SLOW_START)

    async def main() -> None:
        async with asyncio.timeout(30):
            async with AsyncioHookEngine.open(**opts(dirs)) as e:

                async def run() -> None:
                    async with e.session("early-a"):
                        raise AssertionError("the body must not run")

                task = asyncio.create_task(run())
                while e.live_processes == 0:  # session_start's sleep is running
                    await asyncio.sleep(0.01)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task

    asyncio.run(main())
    end = json.loads((ws / "end.json").read_text())
    assert (end["session_id"], end["reason"]) == ("early-a", "cancelled")
