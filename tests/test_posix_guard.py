"""The posix process guard (what macOS and the BSDs get), run here on Linux: forced with
``TRIOHOOKS_PROCESS_GUARD=posix``, and chosen by itself in a process whose Linux-only APIs are
gone. Every hook kind works through it; timeouts, cancels and close leave no process of the
hook's group nor any that kept the run marker; the host-death watchdog kills them when the host
is SIGKILLed. Real processes, real clock."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.helpers import (
    cli_here,
    running,
    survivors_after,
    unique_sleep,
    write_json_hooks,
    write_toml_hooks,
)
from triohooks import HookEngine
from triohooks.actors.guard import BACKEND_VAR, GuardUnavailable, backend, describe

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(BACKEND_VAR, "posix")
    (tmp_path / "ws").mkdir()
    return tmp_path / "ws"


@pytest.fixture
def sleeps() -> Iterator[list[list[str]]]:
    """argvs of processes a test starts; any still running at the end is killed (and fails
    the test where it asserts)."""
    made: list[list[str]] = []
    yield made
    for argv in made:
        for proc in running(argv):
            proc.kill()


def engine(ws: Path, **kw: Any) -> Any:
    return HookEngine.open(
        workspace=ws, config_dir=ws.parent / "g", state_dir=ws.parent / "state", trust=True, **kw
    )


def test_the_backend_is_chosen_by_what_the_os_offers_or_forced() -> None:
    assert backend({}) in ("linux", "posix")
    assert backend({BACKEND_VAR: "posix"}) == "posix"
    with pytest.raises(GuardUnavailable, match="expected one of linux, posix"):
        backend({BACKEND_VAR: "windows"})
    assert "posix" in describe({BACKEND_VAR: "posix"})


def test_windows_is_refused_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "name", "nt")
    with pytest.raises(GuardUnavailable) as info:
        backend({})
    text = str(info.value)
    assert "\n" not in text
    assert "Windows would need a Job Object backend" in text
    assert describe({}).startswith("process guard: none (")


async def test_an_engine_without_a_guard_refuses_to_open_saying_why(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing is run unguarded: open raises the one error (not an ExceptionGroup), and no
    hook process was started."""
    monkeypatch.setenv(BACKEND_VAR, "jobobject")
    write_toml_hooks(ws / ".agents", '[[hooks.pre_tool]]\ncommand = "touch ran"\n')
    with trio.fail_after(10), pytest.raises(GuardUnavailable, match="expected one of linux, posix"):
        async with engine(ws) as e:
            await e.pre_tool("bash", {"command": "ls"})
    assert not (ws / "ran").exists()


async def test_every_hook_kind_runs(ws: Path, tmp_path: Path) -> None:
    """TOML command and args hooks, a JSON-dialect executor with its payload file, warm
    workers of both dialects, an in-process hook and an agent's hook."""
    seen = tmp_path / "payload-seen"
    write_toml_hooks(
        ws / ".agents",
        textwrap.dedent(
            f"""
            [[hooks.pre_tool]]
            id = "no-push"
            command = "grep -q 'git push' && {{ echo 'no pushing' >&2; exit 2; }}; exit 0"
            [[hooks.pre_tool]]
            id = "args"
            args = ["bash", "-c", "echo args-ran >> {tmp_path / "args"}"]
            [[hooks.pre_tool]]
            id = "worker"
            worker = true
            command = "while read -r line; do echo '{{\\"exit\\": 0, \\"stdout\\": \\"\\", \\"stderr\\": \\"\\"}}'; done"
            """
        ),
    )
    write_json_hooks(
        ws / ".agents",
        [
            {
                "id": "json-file",
                "event": "pre_tool_use",
                "executor": {
                    "type": "bash",
                    "command": f'cat "$EVERRUNS_HOOK_PAYLOAD_PATH" > {seen}; '
                    f'echo "$EVERRUNS_HOOK_PAYLOAD_PATH" > {tmp_path / "payload-path"}; '
                    'echo \'{"decision":"allow"}\'',
                },
            },
        ],
    )
    with trio.fail_after(30):
        async with engine(ws) as e:
            assert e._reaper.backend == "posix" and e._reaper.watchdog_pid is not None

            async def python_hook(fields: dict[str, Any]) -> None:
                return None

            e.add_hook("pre_tool", python_hook, name="py")
            blocked = await e.pre_tool("bash", {"command": "git push"})
            allowed = await e.pre_tool("bash", {"command": "ls"})
            again = await e.pre_tool("bash", {"command": "ls -la"})
            (ws / ".claude").mkdir()
            (ws / ".claude" / "settings.json").write_text(
                json.dumps(
                    {
                        "hooks": {
                            "PreToolUse": [
                                {
                                    "hooks": [
                                        {"type": "command", "command": "echo agent-no >&2; exit 2"}
                                    ]
                                }
                            ]
                        }
                    }
                )
            )
            body = json.dumps(
                {
                    "session_id": "s",
                    "cwd": str(ws),
                    "hook_event_name": "PreToolUse",
                    "tool_name": "Bash",
                    "tool_input": {"command": "x"},
                }
            ).encode()
            agent = await e.agent_hook(
                "claude", body, env={**os.environ, "CLAUDE_PROJECT_DIR": str(ws)}
            )
    assert blocked.blocked and blocked.reason == "no pushing"
    assert not allowed.blocked and not again.blocked
    outcomes = {r.hook: r.outcome for r in allowed.runs}
    assert outcomes == {
        "py": "ok",
        "no-push": "ok",
        "args": "ok",
        "worker": "ok",
        "user:json-file": "ok",
    }
    # Twice for the native calls, once more for the agent's: triohooks' own hooks run for an
    # agent's request too (docs/agents.md), the last of them with the agent's call.
    assert (tmp_path / "args").read_text() == "args-ran\n" * 3
    assert json.loads(seen.read_text())["data"]["arguments"] == {"command": "x"}
    path = Path((tmp_path / "payload-path").read_text().strip())
    assert path.name.startswith("triohooks-payload-") and not path.exists()  # removed after
    assert agent.answer.blocked and agent.answer.reason == "agent-no"


async def test_a_timeout_kills_the_group_and_marked_escapees(
    ws: Path, sleeps: list[list[str]]
) -> None:
    in_group, in_group_argv = unique_sleep()
    escaped, escaped_argv = unique_sleep()
    sleeps += [in_group_argv, escaped_argv]
    write_toml_hooks(
        ws / ".agents",
        f'[[hooks.pre_tool]]\nid = "slow"\nfail_closed = true\ntimeout_seconds = 1\n'
        f'command = "{in_group} & setsid {escaped} & sleep 30"\n',
    )
    with trio.fail_after(30):
        async with engine(ws) as e:
            started = time.monotonic()
            outcome = await e.pre_tool("bash", {"command": "ls"})
            took = time.monotonic() - started
            # The after-run sweep is in the background: gone within its interval and a bit.
            assert await survivors_after(in_group_argv, 1.0) == []
            assert await survivors_after(escaped_argv, 1.0) == []
    assert outcome.blocked and "fail_closed" in (outcome.reason or "")
    assert [r.outcome for r in outcome.runs] == ["timeout"]
    assert took < 3


async def test_a_cancel_and_the_close_leave_nothing(ws: Path, sleeps: list[list[str]]) -> None:
    first, first_argv = unique_sleep()
    sleeps.append(first_argv)
    write_toml_hooks(ws / ".agents", f'[[hooks.pre_tool]]\nid = "slow"\ncommand = "{first}"\n')
    with trio.fail_after(30):
        async with engine(ws) as e:
            with trio.move_on_after(0.5):
                await e.pre_tool("bash", {"command": "ls"})
            assert running(first_argv) == []
            assert e._reaper.live == 0
    assert running(first_argv) == []


async def test_close_during_a_spawn_kills_that_hook_and_what_it_started(
    sleeps: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """trio spawns in a thread: the hook runs (and may start an escapee that drops the run
    marker) before the guard holds its process. A close in that window used to find nothing
    to kill; it now waits for the spawn to land and kills the hook's tree like any other."""
    from triohooks.actors import posix_guard
    from triohooks.handlers.process import ProcessSpec

    words, argv = unique_sleep()
    sleeps.append(argv)
    landed = trio.Event()
    real_open = trio.lowlevel.open_process

    async def slow_to_land(*args: Any, **kwargs: Any) -> trio.Process:
        process = await real_open(*args, **kwargs)
        while not running(argv):  # the escapee is up, the guard does not know the hook yet
            await trio.sleep(0.01)
        await landed.wait()
        return process

    monkeypatch.setattr(trio.lowlevel, "open_process", slow_to_land)
    script = f"setsid env -u TRIOHOOKS_RUN {words} &\nsleep 30"
    results = []
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            async with posix_guard.open_posix_guard(watchdog=False) as guard:

                async def run() -> None:
                    spec = ProcessSpec(argv=("bash", "-c", script), cwd=".", timeout_s=30)
                    results.append(await guard.run(spec))

                nursery.start_soon(run)
                while not running(argv):
                    await trio.sleep(0.01)
                assert guard.live == 0  # the spawn has not landed
                nursery.start_soon(set_after, landed, 0.2)  # it lands while close runs
            assert running(argv) == []
    assert [r.status for r in results] == ["killed"]


async def set_after(event: trio.Event, seconds: float) -> None:
    await trio.sleep(seconds)
    event.set()


def test_the_watchdog_kills_the_hooks_of_a_host_killed_by_sigkill(
    ws: Path, sleeps: list[list[str]]
) -> None:
    in_group, in_group_argv = unique_sleep()
    escaped, escaped_argv = unique_sleep()
    sleeps += [in_group_argv, escaped_argv]
    write_toml_hooks(
        ws / ".agents",
        f'[[hooks.pre_tool]]\nid = "slow"\ncommand = "{in_group} & setsid {escaped} & wait"\n',
    )
    host = textwrap.dedent(
        f"""
        import trio
        from pathlib import Path
        from triohooks import HookEngine
        async def main():
            ws = Path({str(ws)!r})
            async with HookEngine.open(workspace=ws, config_dir=ws.parent / "g",
                                       state_dir=ws.parent / "state", trust=True) as e:
                await e.pre_tool("bash", {{"command": "ls"}})
        trio.run(main)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", host], env={**os.environ, BACKEND_VAR: "posix"})
    try:
        deadline = time.monotonic() + 20
        while not (running(in_group_argv) and running(escaped_argv)):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 5
        while running(in_group_argv) or running(escaped_argv):
            assert time.monotonic() < deadline, "the watchdog left hooks behind"
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


NO_LINUX = textwrap.dedent(
    """
    import sys, time, trio
    from pathlib import Path

    async def main():
        import os, select, signal, socket
        for module, name in ((os, "pidfd_open"), (os, "waitid"), (signal, "pidfd_send_signal"),
                             (socket, "MSG_CMSG_CLOEXEC"), (select, "epoll")):
            delattr(module, name)
        from triohooks import HookEngine
        ws = Path(sys.argv[1])
        async with HookEngine.open(workspace=ws, config_dir=ws.parent / "g",
                                   state_dir=ws.parent / "state", trust=True) as e:
            print("backend", e._reaper.backend)
            guard = await e.pre_tool("bash", {"command": "git push"})
            print("guard", guard.blocked, guard.reason)
            slow = await e.pre_tool("bash", {"command": "slow"})
            print("slow", slow.blocked, [r.outcome for r in slow.runs])
        print("live after close", e._reaper.live)

    trio.run(main)
    """
)


def test_with_the_linux_apis_gone_the_posix_guard_keeps_every_promise(
    tmp_path: Path, sleeps: list[list[str]]
) -> None:
    ws = tmp_path / "ws"
    child, child_argv = unique_sleep()
    sleeps.append(child_argv)
    write_toml_hooks(
        ws / ".agents",
        textwrap.dedent(
            f"""
            [[hooks.pre_tool]]
            id = "no-push"
            command = "grep -q 'git push' && {{ echo 'no pushing' >&2; exit 2; }}; exit 0"
            [[hooks.pre_tool]]
            id = "slow"
            match = "bash"
            if = "shell(slow)"
            fail_closed = true
            timeout_seconds = 0.5
            command = "{child} & wait"
            """
        ),
    )
    env = {k: v for k, v in os.environ.items() if k != BACKEND_VAR}
    done = subprocess.run(
        [sys.executable, "-c", NO_LINUX, str(ws)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "backend posix"
    assert lines[1] == "guard True no pushing"
    assert lines[2] == "slow True ['ok', 'timeout']"
    assert lines[3] == "live after close 0"
    assert running(child_argv) == []


async def test_after_a_normal_exit_the_sweep_kills_what_left_the_group(
    ws: Path, sleeps: list[list[str]]
) -> None:
    escaped, escaped_argv = unique_sleep()
    sleeps.append(escaped_argv)
    # It waits for the escapee to be in its own session before it exits.
    write_toml_hooks(
        ws / ".agents",
        f'[[hooks.pre_tool]]\nid = "leaves"\ncommand = "setsid {escaped} > /dev/null 2>&1 & '
        'sleep 0.5"\n',
    )
    with trio.fail_after(30):
        async with engine(ws) as e:
            outcome = await e.pre_tool("bash", {"command": "ls"})
            assert [r.outcome for r in outcome.runs] == ["ok"]
            with trio.move_on_after(2):
                while running(escaped_argv) or not e._reaper.stats().escapees_killed:
                    await trio.sleep(0.05)
            assert running(escaped_argv) == [] and e._reaper.stats().escapees_killed >= 1


@pytest.mark.parametrize(
    ("forced", "line"),
    [
        ("posix", "ok       process guard: posix"),
        ("bogus", "PROBLEM  process guard: none (TRIOHOOKS_PROCESS_GUARD='bogus'"),
    ],
)
def test_doctor_names_the_active_backend(tmp_path: Path, forced: str, line: str) -> None:
    env = {**os.environ, BACKEND_VAR: forced, "TRIOHOOKS_CONFIG_DIR": str(tmp_path / "g")}
    done = cli_here(["doctor", "--workspace", str(tmp_path)], env=env)
    assert done.stdout.splitlines()[0].startswith(line), done.stdout
    assert "Traceback" not in done.stderr


async def test_stops_at_once_share_their_scans_of_the_process_table() -> None:
    # A burst of stopped runs: each asks for its leader's descendants and its marked
    # processes; the callers that arrive while one scan runs are served by the next one.
    from triohooks.actors.posix_guard import _Batched

    calls: list[frozenset[int]] = []
    callers = 0
    all_waiting = threading.Event()

    def work(keys: frozenset[int]) -> dict[int, int]:
        calls.append(keys)
        all_waiting.wait(5)  # the first scan runs until every caller waits for a scan
        return {k: k * 10 for k in keys}

    batched: _Batched[int, int] = _Batched(work)
    got: dict[int, int] = {}

    async def one(key: int) -> None:
        nonlocal callers
        callers += 1
        got[key] = await batched(key)  # its key is taken before the first checkpoint

    async def when_all_wait() -> None:
        while callers < 20:
            await trio.sleep(0.005)
        all_waiting.set()

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(when_all_wait)
            for key in range(20):
                nursery.start_soon(one, key)
    assert got == {k: k * 10 for k in range(20)}
    assert len(calls) == 2 and calls[0] | calls[1] == frozenset(range(20))


async def test_a_failed_shared_scan_reaches_every_caller_of_its_round() -> None:
    from triohooks.actors.posix_guard import _Batched

    def work(keys: frozenset[int]) -> dict[int, int]:
        raise OSError("the process table cannot be read")

    batched: _Batched[int, int] = _Batched(work)
    failed: list[str] = []

    async def one(key: int) -> None:
        try:
            await batched(key)
        except OSError as exc:
            failed.append(str(exc))

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            for key in range(3):
                nursery.start_soon(one, key)
    assert failed == ["the process table cannot be read"] * 3
