"""AsyncioHookEngine runs one-shot TOML command hooks on the asyncio side: the reaper starts the
process (as always), the loop waits for its exit, and only what the loop cannot settle (a
timeout, the engine closing, no watchdog helper) goes to the trio guest run, by the reaper's own
code (``HostedRun.rest`` / ``abandon``). Real bash processes; every body under
``asyncio.timeout``.

"The trio path" is the same engine with ``runs_only`` patched to say no, so the event crosses
into trio as it did before.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.asyncio_support import gone, run
from tests.helpers import bash_hook, write_json_hooks, write_toml_hooks
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
def test_command_hook_answer_is_the_trio_paths(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    table: str,
    fire: Callable[[AsyncioHookEngine], Awaitable[Any]],
) -> None:
    hooks(tmp_path, table)

    async def body() -> None:
        async with engine(tmp_path, audit=False) as e:
            guest = e._guest
            before = guest.crossings
            fast = await fire(e)
            assert guest.crossings - before == 0, "the event crossed into trio"
            with monkeypatch.context() as m:
                m.setattr(e._dispatcher, "runs_only", lambda ev, local: False)
                before = guest.crossings
                slow = await fire(e)
                assert guest.crossings - before >= 1
            assert fast.runs
            assert comparable(fast) == comparable(slow)
            assert e.live_processes == 0

    run(body)


def test_blocks_are_audited_with_one_crossing_each(tmp_path: Path) -> None:
    hooks(tmp_path, '[[hooks.pre_tool]]\ncommand = "echo nope >&2; exit 2"\n')

    async def body() -> None:
        async with engine(tmp_path) as e:
            before = e._guest.crossings
            out = await e.pre_tool("bash", {"command": "ls"})
            assert out.blocked and e._guest.crossings - before == 1  # the audit record
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
    answer comes after the short EOF grace, on the loop, and the watchdog kills the orphan."""
    pid_file = tmp_path / "escapee"
    hooks(
        tmp_path,
        "[[hooks.prompt_submit]]\n"
        f"command = \"setsid sh -c 'echo $$ > {pid_file}; exec sleep 30' & "
        f'while [ ! -s {pid_file} ]; do sleep 0.01; done; echo context"\n',
    )

    async def body() -> None:
        async with engine(tmp_path, audit=False) as e:
            before = e._guest.crossings
            loop = asyncio.get_running_loop()
            started = loop.time()
            out = await e.prompt_submit("hi")
            assert loop.time() - started < 1.5
            assert e._guest.crossings - before == 0
            assert [r.outcome for r in out.runs] == ["ok"]
            assert out.additional_context == "context"
            assert await gone(await read_pid(pid_file), within_s=3.0)  # the helper's sweep
            assert e.live_processes == 0

    run(body)


def test_without_the_watchdog_helper_trio_finishes_the_run(tmp_path: Path) -> None:
    """No helper: the group kill after the exit and the escapee sweep are trio's, so the
    event's end crosses once; the answer is the same."""
    pid_file = tmp_path / "left"
    hooks(
        tmp_path,
        "[[hooks.pre_tool]]\n"
        f"command = \"sh -c 'echo $$ > {pid_file}; exec sleep 30' & "
        f'while [ ! -s {pid_file} ]; do sleep 0.01; done; echo bye >&2; exit 2"\n',
    )

    async def body() -> None:
        async with engine(tmp_path, audit=False, watchdog=False) as e:
            before = e._guest.crossings
            out = await e.pre_tool("bash", {"command": "ls"})
            assert e._guest.crossings - before == 1
            assert out.blocked and out.reason is not None and "bye" in out.reason
            assert await gone(await read_pid(pid_file))  # killed with the hook's group
            assert e.live_processes == 0

    run(body)


def test_closing_the_engine_while_a_hook_runs_on_the_loop(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    hooks(tmp_path, f'[[hooks.pre_tool]]\ncommand = "echo $$ > {pid_file}; exec sleep 30"\n')

    async def body() -> None:
        loop = asyncio.get_running_loop()
        async with engine(tmp_path, audit=False) as e:
            call = asyncio.create_task(e.pre_tool("bash", {"command": "ls"}))
            pid = await read_pid(pid_file)
            started = loop.time()
        # The close killed the hook; the call has its answer, nothing is left.
        out = await call
        assert loop.time() - started < 3.0
        assert [r.outcome for r in out.runs] == ["killed"]
        assert await gone(pid)

    run(body)


WORKER = """
from triohooks.worker import serve
serve(lambda event: {"reason": "worker says no", "decision": "block"})
"""


def test_warm_worker_hooks_go_to_trio(tmp_path: Path) -> None:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    hooks(
        tmp_path,
        f'[[hooks.pre_tool]]\nargs = ["{sys.executable}", "{script}"]\nworker = true\n',
    )

    async def body() -> None:
        async with engine(tmp_path, audit=False) as e:
            for _ in range(2):
                before = e._guest.crossings
                out = await e.pre_tool("bash", {"command": "ls"})
                assert e._guest.crossings - before >= 1
                assert out.blocked and out.reason == "worker says no"

    run(body)


def test_json_dialect_hooks_run_on_the_loop_with_their_payload_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A JSON-dialect bash hook reads its payload file (written by the watchdog helper, not
    on the loop) and blocks; same answer as the trio path, no crossing, the file gone after."""
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

    async def body() -> None:
        async with engine(tmp_path, audit=False) as e:
            guest = e._guest
            before = guest.crossings
            fast = await e.pre_tool("bash", {"command": "deploy"})
            assert guest.crossings - before == 0
            assert fast.blocked and fast.reason == "not on a Friday"
            assert json.loads(seen.read_text())["data"]["arguments"] == {"command": "deploy"}
            assert not Path(Path(f"{seen}.path").read_text().strip()).exists()
            with monkeypatch.context() as m:
                m.setattr(e._dispatcher, "runs_only", lambda ev, local: False)
                slow = await e.pre_tool("bash", {"command": "deploy"})
            assert comparable(fast) == comparable(slow)

    run(body)


def test_json_dialect_hook_without_the_helper_goes_to_trio(tmp_path: Path) -> None:
    """No helper to write the payload file: the event goes to trio (its threads write it)."""
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
            before = e._guest.crossings
            out = await e.pre_tool("bash", {"command": "ls"})
            assert e._guest.crossings - before >= 1
            assert [r.outcome for r in out.runs] == ["ok"]
            assert json.loads(seen.read_text())["data"]["arguments"] == {"command": "ls"}
            assert not Path(Path(f"{seen}.path").read_text().strip()).exists()

    run(body)
