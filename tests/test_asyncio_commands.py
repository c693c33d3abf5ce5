"""AsyncioHookEngine runs command hooks in its trio guest run, through the pipeline core both
engines drive: the same answers as the trio ``HookEngine`` on the same config, timeouts, closes and
escapees handled by the same process guard. Real bash processes; every body under
``asyncio.timeout`` (the trio engine's under ``fail_after``).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.asyncio_support import gone, run
from tests.helpers import bash_hook, write_json_hooks, write_toml_hooks
from triohooks import HookEngine
from triohooks.engine.asyncio_engine import AsyncioHookEngine


def engine(tmp_path: Path, **kw: Any) -> Any:
    kw.setdefault("workspace", tmp_path / "ws")
    kw.setdefault("config_dir", tmp_path / "config")
    kw.setdefault("state_dir", tmp_path / "state")
    (tmp_path / "ws").mkdir(exist_ok=True)
    return AsyncioHookEngine.open(**kw)


def hooks(tmp_path: Path, text: str) -> None:
    write_toml_hooks(tmp_path / "config", text)


async def read_pid(path: Path) -> int:
    async with asyncio.timeout(5):
        while not path.exists() or not path.read_text().strip():
            await asyncio.sleep(0.01)
    return int(path.read_text().split()[0])


def on_trio_engine(tmp_path: Path, fire: Callable[[Any], Awaitable[Any]], **kw: Any) -> Any:
    """What the trio HookEngine answers on the same config."""

    async def main() -> Any:
        with trio.fail_after(30):
            async with HookEngine.open(
                workspace=tmp_path / "ws",
                config_dir=tmp_path / "config",
                state_dir=tmp_path / "state",
                **kw,
            ) as e:
                return await fire(e)

    return trio.run(main)


def comparable(out: Any) -> Any:
    data = out.to_builtins()
    for r in data["runs"]:
        r.pop("duration_ms")
    return data


#: (name, hook table, how to fire): each runs one or more real command hooks.
CASES: list[tuple[str, str, Callable[[AsyncioHookEngine], Awaitable[Any]]]] = [
    (
        "exit 2 blocks with stderr",
        '[[hooks.pre_tool]]\ncommand = "echo no rm here >&2; exit 2"\n',
        lambda e: e.pre_tool("bash", {"command": "rm -rf /"}),
    ),
    (
        "JSON reply rewrites the arguments",
        "[[hooks.pre_tool]]\n"
        """command = 'echo "{\\"updated_args\\": {\\"command\\": \\"ls -l\\"}}"'\n""",
        lambda e: e.pre_tool("bash", {"command": "ls"}),
    ),
    (
        "the payload on stdin",
        '[[hooks.prompt_submit]]\ncommand = "cat"\n',
        lambda e: e.prompt_submit("hello there", session_id="s1"),
    ),
    (
        "exit 1 is an error that does not block",
        '[[hooks.pre_tool]]\ncommand = "echo oops >&2; exit 1"\n',
        lambda e: e.pre_tool("bash", {"command": "ls"}),
    ),
    (
        "a program that is not there",
        '[[hooks.pre_tool]]\nargs = ["/nonexistent/triohooks-test-program"]\n',
        lambda e: e.pre_tool("bash", {"command": "ls"}),
    ),
    (
        "output past the cap is cut",
        '[[hooks.session_start]]\ncommand = "head -c 300000 /dev/zero | tr \\"\\\\0\\" x"\n',
        lambda e: e.session_start(session_id="s1"),
    ),
    (
        "a payload bigger than a pipe holds",
        '[[hooks.prompt_submit]]\ncommand = "wc -c"\n',
        lambda e: e.prompt_submit("x" * 300_000, session_id="s1"),
    ),
    (
        "output in several pieces over time",
        '[[hooks.prompt_submit]]\ncommand = "for i in 1 2 3; do echo $i; sleep 0.02; done"\n',
        lambda e: e.prompt_submit("hello", session_id="s1"),
    ),
    (
        "two hooks in order, the second sees the rewrite",
        "[[hooks.pre_tool]]\n"
        """command = 'echo "{\\"updated_args\\": {\\"command\\": \\"git push\\"}}"'\n"""
        '[[hooks.pre_tool]]\nif = "shell(git push)"\ncommand = "exit 2"\n',
        lambda e: e.pre_tool("bash", {"command": "ls"}),
    ),
]


@pytest.mark.parametrize(("name", "table", "fire"), CASES, ids=[c[0] for c in CASES])
def test_command_hook_answer_is_the_trio_engines(
    tmp_path: Path,
    name: str,
    table: str,
    fire: Callable[[Any], Awaitable[Any]],
) -> None:
    hooks(tmp_path, table)
    got: list[Any] = []

    async def body() -> None:
        async with engine(tmp_path, audit=False) as e:
            got.append(await fire(e))
            assert e.live_processes == 0

    run(body)
    (mine,) = got
    assert mine.runs
    assert comparable(mine) == comparable(on_trio_engine(tmp_path, fire, audit=False))


def test_blocks_are_audited(tmp_path: Path) -> None:
    hooks(tmp_path, '[[hooks.pre_tool]]\ncommand = "echo nope >&2; exit 2"\n')

    async def body() -> None:
        async with engine(tmp_path) as e:
            out = await e.pre_tool("bash", {"command": "ls"})
            assert out.blocked
        audit = next((tmp_path / "state/audit").glob("audit-*.jsonl"))
        records = audit.read_text().splitlines()
        assert len(records) == 1 and "nope" in records[0]

    run(body)


def test_hook_timeout_kills_the_group_through_trio(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    hooks(
        tmp_path,
        "[[hooks.pre_tool]]\ntimeout_seconds = 0.3\nfail_closed = true\n"
        f'command = "sleep 30 & echo $$ $! > {pids}; wait"\n',
    )

    async def body() -> None:
        async with engine(tmp_path) as e:
            loop = asyncio.get_running_loop()
            started = loop.time()
            out = await e.pre_tool("bash", {"command": "ls"})
            took = loop.time() - started
            assert [r.outcome for r in out.runs] == ["timeout"] and out.blocked
            assert 0.3 <= took < 2.0
            shell, sleeper = (int(p) for p in pids.read_text().split())
            assert await gone(shell) and await gone(sleeper)
            assert e.live_processes == 0
            # The engine goes on: the next event runs its hook again.
            pids.unlink()
            out = await e.pre_tool("bash", {"command": "ls"})
            assert [r.outcome for r in out.runs] == ["timeout"]

    run(body)


def test_a_descendant_holding_stdout_costs_the_eof_grace_only(tmp_path: Path) -> None:
    """The hook exits, a process it left in a session of its own keeps stdout open: the
    answer comes after the short EOF grace, and the watchdog kills the orphan."""
    pid_file = tmp_path / "escapee"
    hooks(
        tmp_path,
        "[[hooks.prompt_submit]]\n"
        f"command = \"setsid sh -c 'echo $$ > {pid_file}; exec sleep 30' & "
        f'while [ ! -s {pid_file} ]; do sleep 0.01; done; echo context"\n',
    )

    async def body() -> None:
        async with engine(tmp_path, audit=False) as e:
            loop = asyncio.get_running_loop()
            started = loop.time()
            out = await e.prompt_submit("hi")
            assert loop.time() - started < 1.5
            assert [r.outcome for r in out.runs] == ["ok"]
            assert out.additional_context == "context"
            assert await gone(await read_pid(pid_file), within_s=3.0)  # the helper's sweep
            assert e.live_processes == 0

    run(body)


def test_without_the_watchdog_helper_the_group_is_still_killed(tmp_path: Path) -> None:
    """No helper: the group kill after the exit is the reaper's own."""
    pid_file = tmp_path / "left"
    hooks(
        tmp_path,
        "[[hooks.pre_tool]]\n"
        f"command = \"sh -c 'echo $$ > {pid_file}; exec sleep 30' & "
        f'while [ ! -s {pid_file} ]; do sleep 0.01; done; echo bye >&2; exit 2"\n',
    )

    async def body() -> None:
        async with engine(tmp_path, audit=False, watchdog=False) as e:
            out = await e.pre_tool("bash", {"command": "ls"})
            assert out.blocked and out.reason is not None and "bye" in out.reason
            assert await gone(await read_pid(pid_file))  # killed with the hook's group
            assert e.live_processes == 0

    run(body)


def test_closing_the_engine_while_a_hook_runs_fails_the_call_closed(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    hooks(tmp_path, f'[[hooks.pre_tool]]\ncommand = "echo $$ > {pid_file}; exec sleep 30"\n')

    async def body() -> None:
        loop = asyncio.get_running_loop()
        async with engine(tmp_path, audit=False) as e:
            call = asyncio.create_task(e.pre_tool("bash", {"command": "ls"}))
            pid = await read_pid(pid_file)
            started = loop.time()
        # The close killed the hook; the call has its answer (ours, not the hook's: it fails
        # closed), nothing is left.
        out = await call
        assert loop.time() - started < 3.0
        assert [r.outcome for r in out.runs] == ["killed"]
        assert out.blocked and "internal error" in (out.reason or "")
        assert await gone(pid)

    run(body)


WORKER = """
from triohooks.worker import serve
serve(lambda event: {"reason": "worker says no", "decision": "block"})
"""


def test_warm_worker_hooks(tmp_path: Path) -> None:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    hooks(
        tmp_path,
        f'[[hooks.pre_tool]]\nargs = ["{sys.executable}", "{script}"]\nworker = true\n',
    )

    async def body() -> None:
        async with engine(tmp_path, audit=False) as e:
            for _ in range(2):
                out = await e.pre_tool("bash", {"command": "ls"})
                assert out.blocked and out.reason == "worker says no"

    run(body)


def test_json_dialect_hooks_read_their_payload_file(tmp_path: Path) -> None:
    """A JSON-dialect bash hook reads its payload file and blocks; the file is gone after, and
    the answer is the trio engine's."""
    seen = tmp_path / "seen"
    reply = '{"decision": "block", "reason": "not on a Friday"}'
    write_json_hooks(
        tmp_path / "config",
        [
            bash_hook(
                "friday",
                f'cp "$EVERRUNS_HOOK_PAYLOAD_PATH" {seen}; '
                f"echo \"$EVERRUNS_HOOK_PAYLOAD_PATH\" > {seen}.path; echo '{reply}'",
            )
        ],
    )
    got: list[Any] = []

    async def body() -> None:
        async with engine(tmp_path, audit=False) as e:
            out = await e.pre_tool("bash", {"command": "deploy"})
            assert out.blocked and out.reason == "not on a Friday"
            assert json.loads(seen.read_text())["data"]["arguments"] == {"command": "deploy"}
            assert not Path(Path(f"{seen}.path").read_text().strip()).exists()
            got.append(out)

    run(body)
    trio_out = on_trio_engine(
        tmp_path, lambda e: e.pre_tool("bash", {"command": "deploy"}), audit=False
    )
    assert comparable(got[0]) == comparable(trio_out)


def test_json_dialect_hook_without_the_helper(tmp_path: Path) -> None:
    """No helper to write the payload file: a worker thread writes it."""
    seen = tmp_path / "seen"
    write_json_hooks(
        tmp_path / "config",
        [
            bash_hook(
                "copy",
                f'cp "$EVERRUNS_HOOK_PAYLOAD_PATH" {seen}; echo "$EVERRUNS_HOOK_PAYLOAD_PATH" > {seen}.path',
            )
        ],
    )

    async def body() -> None:
        async with engine(tmp_path, audit=False, watchdog=False) as e:
            out = await e.pre_tool("bash", {"command": "ls"})
            assert [r.outcome for r in out.runs] == ["ok"]
            assert json.loads(seen.read_text())["data"]["arguments"] == {"command": "ls"}
            assert not Path(Path(f"{seen}.path").read_text().strip()).exists()

    run(body)
