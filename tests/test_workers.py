"""Warm workers (``worker = true``): started on first use and kept, one request line per event,
the reply read as the one-shot run it stands for; every failure kills the worker's whole tree
and is that event's failure; nothing survives the engine or its host.

Real processes throughout: the workers are small Python scripts speaking the raw line protocol
(``WORKER`` below, its behaviour picked per request by the command it is sent), run by a real
engine with its watchdog helper.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import psutil
import pytest
import trio

from tests.helpers import bash_hook, write_json_hooks, write_toml_hooks
from triohooks import ConfigError, HookEngine
from triohooks.actors import workers
from triohooks.actors.process_guard import open_guard
from triohooks.handlers.process import ProcessResult, ProcessSpec

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("guard_backend")]

REPO = Path(__file__).resolve().parent.parent

#: A worker whose behaviour each request picks through the tool call's command.
WORKER = r"""
import json, os, subprocess, sys, time
served = 0
start_mode = sys.argv[1] if len(sys.argv) > 1 else ""
if start_mode == "die-at-start":
    sys.stderr.write("cannot start: no config\n")
    sys.exit(3)
if start_mode == "chatty":
    sys.stderr.write("x" * 100_000 + "\nthe last words\n")
    sys.stderr.flush()
for line in sys.stdin:
    served += 1
    request = json.loads(line)
    if "env" in request:  # JSON dialect
        env = request["env"]
        payload = json.loads(env["EVERRUNS_HOOK_PAYLOAD_JSON"])
        command = payload["data"]["arguments"].get("command", "")
        with open(env["EVERRUNS_HOOK_PAYLOAD_PATH"]) as f:
            on_disk = json.load(f) == payload
        info = {"pid": os.getpid(), "served": served, "file": on_disk,
                "keys": sorted(env), "worker": os.environ.get("TRIOHOOKS_WORKER"),
                "leaked": sorted(k for k in os.environ if k.startswith("EVERRUNS_HOOK_"))}
        if command.startswith("rm"):
            reply = {"exit": 0, "stdout": json.dumps({"decision": "block", "reason": "no rm"})}
        else:
            reply = {"exit": 0, "stdout": json.dumps(
                {"decision": "allow", "reason": json.dumps(info)})}
        print(json.dumps(reply), flush=True)
        continue
    command = request.get("args", {}).get("command", "")
    info = {"pid": os.getpid(), "served": served, "worker": os.environ.get("TRIOHOOKS_WORKER"),
            "cwd": os.getcwd(), "tool": request.get("tool")}
    if command == "crash":
        sys.stderr.write("about to crash\n")
        sys.stderr.flush()
        os._exit(7)
    if command == "hang":
        child = subprocess.Popen(["sleep", "300"])
        with open(os.environ["PIDS_FILE"], "a") as f:
            f.write(f"{os.getpid()} {child.pid}\n")
        time.sleep(300)
    if command == "two lines":  # in one write: they arrive together
        sys.stdout.write(json.dumps({"exit": 0}) + "\n" + json.dumps({"exit": 0}) + "\n")
        sys.stdout.flush()
        continue
    if command == "not json":
        print("hello", flush=True)
        continue
    if command == "bad exit":
        print(json.dumps({"exit": 300}), flush=True)
        continue
    if command == "array":
        print("[0]", flush=True)
        continue
    if command == "stray later":
        print(json.dumps({"exit": 0}), flush=True)
        time.sleep(0.05)  # apart: the reply is read alone, the stray line comes after it
        print("stray", flush=True)
        with open(os.environ["PIDS_FILE"], "a") as f:  # the stray line is out
            f.write(f"{os.getpid()}\n")
        continue
    if command == "grandchild":
        child = subprocess.Popen(["sleep", "300"])  # holds our stdout and stderr
        with open(os.environ["PIDS_FILE"], "a") as f:
            f.write(f"{os.getpid()} {child.pid}\n")
    if command == "slow":
        time.sleep(0.3)  # busy a while: events that overlap it need another worker
    if command == "big":
        print(json.dumps({"exit": 0, "stdout": "y" * 300_000}), flush=True)
        continue
    if command.startswith("rm"):
        print(json.dumps({"exit": 2, "stderr": "no rm here"}), flush=True)
        continue
    print(json.dumps({"exit": 0, "stdout": json.dumps({"additional_context": json.dumps(info)})}),
          flush=True)
"""


def worker_toml(
    tmp_path: Path, *, start_mode: str = "", extra: str = "", timeout: float = 2
) -> None:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    write_toml_hooks(
        tmp_path / "config",
        f"""
[[hooks.pre_tool]]
id = "policy"
match = "bash"
args = ["{sys.executable}", "{script}"{", " + json.dumps(start_mode) if start_mode else ""}]
worker = true
timeout_seconds = {timeout}
{extra}
""",
    )


@pytest.fixture(autouse=True)
def pids_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the workers below write the pids of what they start (inherited by the workers)."""
    monkeypatch.setenv("PIDS_FILE", str(tmp_path / "pids.txt"))


@asynccontextmanager
async def engine(tmp_path: Path, **kw: Any) -> AsyncIterator[HookEngine]:
    (tmp_path / "ws").mkdir(exist_ok=True)
    kw.setdefault("config_dir", tmp_path / "config")
    async with HookEngine.open(workspace=tmp_path / "ws", state_dir=tmp_path / "state", **kw) as e:
        yield e


def info(outcome: Any) -> dict[str, Any]:
    assert outcome.additional_context, outcome
    data: dict[str, Any] = json.loads(outcome.additional_context)
    return data


def alive(pid: int) -> bool:
    try:
        status: str = psutil.Process(pid).status()
    except psutil.NoSuchProcess:
        return False
    return bool(status != psutil.STATUS_ZOMBIE)


async def gone_within(pids: list[int], seconds: float) -> list[int]:
    with trio.move_on_after(seconds):
        while any(alive(p) for p in pids):
            await trio.sleep(0.02)
    return [p for p in pids if alive(p)]


def recorded_pids(tmp_path: Path) -> list[int]:
    path = tmp_path / "pids.txt"
    if not path.exists():
        return []
    return [int(p) for line in path.read_text().split("\n") if line for p in line.split()]


async def test_a_worker_is_started_once_and_kept(tmp_path: Path) -> None:
    worker_toml(tmp_path)
    with trio.fail_after(20):
        async with engine(tmp_path) as e:
            first = info(await e.pre_tool("bash", {"command": "ls"}))
            blocked = await e.pre_tool("bash", {"command": "rm -rf /"})
            third = info(await e.pre_tool("bash", {"command": "pwd"}))
            assert e.live_processes == 1
            other = await e.pre_tool("read", {"path": "x"})  # not matched: no worker involved
        assert first["served"] == 1 and third["served"] == 3
        assert first["pid"] == third["pid"]
        assert first["worker"] == "1"
        assert first["cwd"] == str((tmp_path / "ws").resolve())
        assert blocked.blocked and blocked.reason == "no rm here"
        assert [r.outcome for r in blocked.runs] == ["block"]
        assert other.runs == []
        assert await gone_within([first["pid"]], 2) == []


async def test_json_dialect_worker_gets_the_event_variables_as_its_request(
    tmp_path: Path,
) -> None:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    hook = bash_hook("guard", f"exec {sys.executable} {script}")
    hook["executor"].update(worker=True, env={"MY_SETTING": "on"})
    write_json_hooks(tmp_path / "config", [hook])
    with trio.fail_after(20):
        async with engine(tmp_path) as e:
            first = await e.pre_tool("bash", {"command": "ls"}, session_id="s1")
            second = await e.pre_tool("bash", {"command": "ls"}, session_id="s1")
            blocked = await e.pre_tool("bash", {"command": "rm -rf /"})
    a, b = json.loads(first.reason or ""), json.loads(second.reason or "")
    assert first.decision == "allow" and a["pid"] == b["pid"] and b["served"] == 2
    assert a["file"] is True, "the payload file is there during the request"
    assert "EVERRUNS_HOOK_PAYLOAD_JSON" in a["keys"] and "EVERRUNS_HOOK_TOOL_NAME" in a["keys"]
    assert "MY_SETTING" not in a["keys"]
    assert a["leaked"] == [], "per-event variables are not in the worker's own environment"
    assert a["worker"] == "1"
    assert blocked.blocked and blocked.reason == "no rm"
    leftovers = [p for p in Path(os.environ.get("TMPDIR", "/tmp")).glob("everruns-hook-*")]
    assert not [p for p in leftovers if str(a["pid"]) in p.name]


async def test_a_worker_crashing_mid_request_fails_that_event_and_is_replaced(
    tmp_path: Path,
) -> None:
    worker_toml(tmp_path)
    with trio.fail_after(20):
        async with engine(tmp_path) as e:
            before = info(await e.pre_tool("bash", {"command": "ls"}))
            crashed = await e.pre_tool("bash", {"command": "crash"})
            after = info(await e.pre_tool("bash", {"command": "ls"}))
    run = crashed.runs[0]
    assert run.outcome == "error" and not crashed.blocked
    assert "exited before answering" in (run.error or "")
    assert "exit status 7" in (run.error or "")
    assert "about to crash" in (run.error or ""), "the worker's stderr is in the message"
    assert after["pid"] != before["pid"] and after["served"] == 1


async def test_fail_closed_worker_failure_blocks(tmp_path: Path) -> None:
    worker_toml(tmp_path, extra="fail_closed = true")
    with trio.fail_after(20):
        async with engine(tmp_path) as e:
            out = await e.pre_tool("bash", {"command": "crash"})
    assert out.blocked and "fail_closed" in (out.reason or "")


async def test_a_worker_that_never_answers_is_killed_with_its_tree(tmp_path: Path) -> None:
    worker_toml(tmp_path, timeout=0.5)
    with trio.fail_after(20):
        async with engine(tmp_path) as e:
            hung = await e.pre_tool("bash", {"command": "hang"})
            pids = recorded_pids(tmp_path)
            assert len(pids) == 2
            assert await gone_within(pids, 2) == [], "worker and grandchild are killed"
            fresh = info(await e.pre_tool("bash", {"command": "ls"}))
    assert [r.outcome for r in hung.runs] == ["timeout"]
    assert hung.runs[0].error == "timed out after 0.5 s"
    assert fresh["served"] == 1 and fresh["pid"] not in pids


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("two lines", "more than one line"),
        ("not json", "its reply is not"),
        ("bad exit", "exit is not 0..255"),
        ("array", "its reply is not"),
    ],
)
async def test_a_bad_reply_kills_the_worker(tmp_path: Path, command: str, why: str) -> None:
    worker_toml(tmp_path)
    with trio.fail_after(20):
        async with engine(tmp_path) as e:
            before = info(await e.pre_tool("bash", {"command": "ls"}))
            bad = await e.pre_tool("bash", {"command": command})
            assert await gone_within([before["pid"]], 2) == []
            after = info(await e.pre_tool("bash", {"command": "ls"}))
    assert bad.runs[0].outcome == "error" and why in (bad.runs[0].error or "")
    assert after["pid"] != before["pid"]


async def test_output_between_requests_retires_the_worker_not_the_event(tmp_path: Path) -> None:
    worker_toml(tmp_path)
    with trio.fail_after(20):
        async with engine(tmp_path) as e:
            first = await e.pre_tool("bash", {"command": "stray later"})
            while not recorded_pids(tmp_path):  # the worker wrote its stray line
                await trio.sleep(0.01)
            after = await e.pre_tool("bash", {"command": "ls"})
    assert first.runs[0].outcome == "ok"
    assert after.runs[0].outcome == "ok" and info(after)["served"] == 1


async def test_a_grandchild_holding_stdout_does_not_wedge_the_worker(tmp_path: Path) -> None:
    worker_toml(tmp_path)
    with trio.fail_after(20):
        async with engine(tmp_path) as e:
            one = info(await e.pre_tool("bash", {"command": "grandchild"}))
            two = info(await e.pre_tool("bash", {"command": "ls"}))
            pids = recorded_pids(tmp_path)
            assert all(alive(p) for p in pids)
        assert one["pid"] == two["pid"]
        assert await gone_within(pids, 2) == [], "engine close kills worker and grandchild"


#: (exit, stdout, stderr) a hook answers; each is run one-shot and through a worker.
REPLIES: dict[str, tuple[int, str, str]] = {
    "block json": (0, json.dumps({"decision": "block", "reason": "policy says no"}), ""),
    "exit 2 with reason": (2, "", "not this one\n"),
    "exit 2 bare": (2, "", ""),
    "exit 1": (1, "", "something broke\n"),
    "exit 3 with output": (3, "partial", "bad"),
    "plain text": (0, "just some text\n", ""),
    "rewrite": (0, json.dumps({"updated_args": {"command": "ls -l"}}), ""),
    "context and message": (
        0,
        json.dumps({"additional_context": "ctx", "system_message": "sys", "continue": False}),
        "",
    ),
    "allow json dialect": (0, json.dumps({"decision": "allow", "reason": "fine"}), ""),
    "mutate json dialect": (
        0,
        json.dumps({"decision": "mutate", "patch": {"arguments": {"command": "pwd"}}}),
        "",
    ),
    "huge stdout": (0, "y" * 300_000, ""),
    "huge stderr": (2, "", "e" * 300_000),
    "unicode": (2, "", "nein: \u00fc\u2603 \U0001f600\n"),
}

#: One-shot: prints the case's output and exits with its code. Worker: replies it.
REPLY_SCRIPT = r"""
import json, os, sys
cases = json.load(open(sys.argv[1]))
def case_of(request):
    if "env" in request:
        payload = json.loads(request["env"]["EVERRUNS_HOOK_PAYLOAD_JSON"])
        return payload["data"]["arguments"]["case"]
    return request["args"]["case"]
if os.environ.get("TRIOHOOKS_WORKER") == "1":
    for line in sys.stdin:
        code, out, err = cases[case_of(json.loads(line))]
        print(json.dumps({"exit": code, "stdout": out, "stderr": err}), flush=True)
else:
    if len(sys.argv) > 2:  # JSON dialect: the payload is in the environment
        request = {"env": dict(os.environ)}
    else:
        request = json.loads(sys.stdin.read())
    code, out, err = cases[case_of(request)]
    sys.stdout.write(out)
    sys.stderr.write(err)
    sys.exit(code)
"""


def _comparable(outcome: Any) -> Any:
    data = outcome.to_builtins()
    for run in data["runs"]:
        run.pop("duration_ms")
        run.pop("hook")
        run.pop("source")
    return data


@pytest.mark.parametrize("dialect", ["toml", "json"])
async def test_a_reply_reads_exactly_as_the_one_shot_run(
    tmp_path: Path, dialect: str, guard_backend: str
) -> None:
    script = tmp_path / "reply.py"
    script.write_text(REPLY_SCRIPT)
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps(REPLIES))
    outcomes: dict[bool, dict[str, Any]] = {}
    for worker in (False, True):
        config = tmp_path / f"config-{worker}"
        if dialect == "toml":
            write_toml_hooks(
                config,
                f"""
[[hooks.pre_tool]]
args = ["{sys.executable}", "{script}", "{cases}"]
worker = {str(worker).lower()}
""",
            )
        else:
            hook = bash_hook("h", f"exec {sys.executable} {script} {cases} json")
            hook["executor"]["worker"] = worker
            write_json_hooks(config, [hook])
        with trio.fail_after(60):
            async with engine(tmp_path, config_dir=config) as e:
                outcomes[worker] = {
                    case: _comparable(await e.pre_tool("bash", {"case": case})) for case in REPLIES
                }
                assert e.live_processes == (1 if worker else 0)  # kept between requests
    for case in REPLIES:
        assert outcomes[True][case] == outcomes[False][case], case


async def test_a_worker_that_always_dies_is_given_up(tmp_path: Path) -> None:
    worker_toml(tmp_path, start_mode="die-at-start", extra="fail_closed = true")
    with trio.fail_after(30):
        async with engine(tmp_path) as e:
            outs = [await e.pre_tool("bash", {"command": "ls"}) for _ in range(7)]
    errors = [o.runs[0].error or "" for o in outs]
    assert all(o.blocked for o in outs), "fail_closed: every failure blocks"
    assert all("exited before answering" in err for err in errors[:5])
    assert "cannot start: no config" in errors[0]
    assert all("failed 5 times in a row" in err for err in errors[5:])
    assert all("not restarted for" in err for err in errors[5:])
    assert outs[6].runs[0].duration_ms < 50, "a given-up worker fails at once"


async def test_overlapping_events_use_a_small_pool(tmp_path: Path) -> None:
    worker_toml(tmp_path, extra="worker_pool = 2")
    results: list[Any] = []
    with trio.fail_after(20):
        async with engine(tmp_path) as e:

            async def one() -> None:
                results.append(await e.pre_tool("bash", {"command": "slow"}))

            async with trio.open_nursery() as nursery:
                for _ in range(5):
                    nursery.start_soon(one)
                while e.live_processes < 2 and len(results) < 2:  # the pool's workers start
                    await trio.sleep(0.01)
                assert e.live_processes == 2
    pids = {info(o)["pid"] for o in results}
    assert len(results) == 5 and len(pids) == 2
    assert all(o.runs[0].outcome == "ok" for o in results)


async def test_a_cancelled_event_kills_its_worker(tmp_path: Path) -> None:
    worker_toml(tmp_path)
    with trio.fail_after(20):
        async with engine(tmp_path) as e:
            with trio.move_on_after(0.5):
                await e.pre_tool("bash", {"command": "hang"})
            pids = recorded_pids(tmp_path)
            assert await gone_within(pids, 2) == []
            fresh = info(await e.pre_tool("bash", {"command": "ls"}))
    assert fresh["served"] == 1


async def test_workers_restart_after_a_config_reload(tmp_path: Path) -> None:
    worker_toml(tmp_path)
    with trio.fail_after(20):
        async with engine(tmp_path) as e:
            old = info(await e.pre_tool("bash", {"command": "ls"}))
            report = await e.reload()
            assert report.applied
            assert await gone_within([old["pid"]], 2) == [], "the idle worker is retired"
            new = info(await e.pre_tool("bash", {"command": "ls"}))
            # A changed command: the next event runs the new one.
            v2_script = tmp_path / "v2.sh"
            v2_script.write_text(
                "while IFS= read -r line; do\n"
                '  printf \'%s\\n\' \'{"exit": 2, "stderr": "v2"}\'\n'
                "done\n"
            )
            write_toml_hooks(
                tmp_path / "config",
                f'[[hooks.pre_tool]]\nmatch = "bash"\nworker = true\nargs = ["bash", "{v2_script}"]\n',
            )
            assert (await e.reload()).applied
            v2 = await e.pre_tool("bash", {"command": "ls"})
    assert new["pid"] != old["pid"] and new["served"] == 1
    assert v2.blocked and v2.reason == "v2"


async def test_the_workers_own_stderr_is_capped_in_messages(tmp_path: Path) -> None:
    worker_toml(tmp_path, start_mode="chatty")
    with trio.fail_after(20):
        async with engine(tmp_path) as e:
            out = await e.pre_tool("bash", {"command": "crash"})
    error = out.runs[0].error or ""
    assert "about to crash" in error and "the last words" in error
    assert len(error) < 2000


async def test_a_bash_read_loop_is_a_worker(tmp_path: Path, guard_backend: str) -> None:
    write_toml_hooks(
        tmp_path / "config",
        """
[[hooks.pre_tool]]
match = "bash"
worker = true
command = '''
while IFS= read -r line; do
  case "$line" in
    *'rm -rf'*) printf '%s\\n' '{"exit": 2, "stderr": "rm -rf is not allowed"}' ;;
    *) printf '%s\\n' '{"exit": 0}' ;;
  esac
done
'''
""",
    )
    with trio.fail_after(20):
        async with engine(tmp_path) as e:
            ok = await e.pre_tool("bash", {"command": "ls"})
            no = await e.pre_tool("bash", {"command": "rm -rf /"})
            assert e.live_processes == 1
    assert ok.runs[0].outcome == "ok" and not ok.blocked
    assert no.blocked and no.reason == "rm -rf is not allowed"


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('type = "http"\nurl = "http://127.0.0.1:1/"\nworker = true', "worker"),
        ('command = "cat"\nworker_pool = 2', "worker_pool"),
        ('command = "cat"\nworker = true\nworker_pool = 0', "worker_pool"),
        ('command = "cat"\nworker = true\nworker_pool = 17', "worker_pool"),
        ('command = "cat"\nworker = "yes"', "worker"),
    ],
)
async def test_bad_worker_settings_are_config_errors(tmp_path: Path, text: str, field: str) -> None:
    write_toml_hooks(tmp_path / "config", f"[[hooks.pre_tool]]\n{text}\n")
    with trio.fail_after(10), pytest.raises(ConfigError) as caught:
        async with engine(tmp_path):
            pass
    assert field in str(caught.value)


async def test_bad_json_worker_setting_skips_the_entry_naming_the_field(tmp_path: Path) -> None:
    hook = bash_hook("w", "cat")
    hook["executor"]["worker"] = "yes"
    write_json_hooks(tmp_path / "config", [hook])
    with trio.fail_after(10):
        async with engine(tmp_path) as e:
            problems = [str(p) for p in e.table.problems]
            assert e.table.hooks == ()
    assert any("executor.worker" in p and "true or false" in p for p in problems), problems


HOST = """
import sys, trio
from pathlib import Path
from triohooks import HookEngine

async def main():
    root = Path(sys.argv[1])
    async with HookEngine.open(workspace=root / "ws", config_dir=root / "config",
                               state_dir=root / "state") as e:
        await e.pre_tool("bash", {"command": "grandchild"})
        print("ready", flush=True)
        await trio.sleep(600)

trio.run(main)
"""


async def test_a_sigkilled_host_leaves_no_worker(tmp_path: Path) -> None:
    worker_toml(tmp_path)
    (tmp_path / "ws").mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO), "PIDS_FILE": str(tmp_path / "pids.txt")}
    host = subprocess.Popen(
        [sys.executable, "-c", HOST, str(tmp_path)],
        stdout=subprocess.PIPE,
        env=env,
        cwd=REPO,
    )
    try:
        assert host.stdout is not None
        with trio.fail_after(20):
            line = await trio.to_thread.run_sync(host.stdout.readline)
        assert line.strip() == b"ready"
        pids = recorded_pids(tmp_path)
        assert len(pids) == 2 and all(alive(p) for p in pids)
        host.send_signal(signal.SIGKILL)
        host.wait(10)
        assert await gone_within(pids, 2) == [], "worker and its grandchild outlived the host"
    finally:
        if host.poll() is None:
            host.kill()
            host.wait(10)
        if host.stdout is not None:
            host.stdout.close()


@pytest.mark.parametrize(
    "argv",
    [
        [sys.executable, str(REPO / "examples/workers/policy_worker.py")],
        ["bash", str(REPO / "examples/workers/bash_worker.sh")],
    ],
    ids=["python helper", "bash read loop"],
)
async def test_the_shipped_example_workers_through_the_engine(
    tmp_path: Path, argv: list[str], guard_backend: str
) -> None:
    write_toml_hooks(
        tmp_path / "config",
        f'[[hooks.pre_tool]]\nmatch = "bash"\nargs = {json.dumps(argv)}\nworker = true\n',
    )
    with trio.fail_after(20):
        async with engine(tmp_path) as e:
            outs = [
                await e.pre_tool("bash", {"command": command})
                for command in ("ls", "rm -rf /", "git status", "sudo rm -rf ~")
            ]
            assert e.live_processes == 1
    assert [o.blocked for o in outs] == [False, True, False, True]
    assert all(o.runs[0].outcome in ("ok", "block") for o in outs)
    assert "rm -rf" in (outs[1].reason or "")


async def test_a_self_configuration_write_retires_json_workers(tmp_path: Path) -> None:
    """An agent's upsert through the self-configuration tools swaps the table: the running
    worker is retired and the next event is answered by the new config's worker."""
    from triohooks import HooksTools

    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    hook = bash_hook("guard", f"exec {sys.executable} {script}")
    hook["executor"]["worker"] = True
    write_json_hooks(tmp_path / "config", [hook])
    with trio.fail_after(20):
        async with engine(tmp_path) as e:
            first = json.loads((await e.pre_tool("bash", {"command": "ls"})).reason or "")
            tools = HooksTools.for_engine(e)
            changed = {**hook, "executor": {**hook["executor"], "env": {"MODE": "2"}}}
            await tools.upsert_hook("global", changed)
            assert await gone_within([first["pid"]], 2) == []
            second = json.loads((await e.pre_tool("bash", {"command": "ls"})).reason or "")
    assert second["pid"] != first["pid"] and second["served"] == 1


#: A worker that answers each request with its own pid.
PID_WORKER = 'while IFS= read -r line; do printf \'{"exit": 0, "stdout": "%s"}\\n\' "$$"; done'


def _alive(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


async def test_past_the_pool_bound_the_least_recently_used_pool_is_retired(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One pool per environment (each agent session's): sessions come and go, so at most
    ``MAX_POOLS`` pools are kept and the least recently used idle one goes, its worker with it."""
    monkeypatch.setattr(workers, "MAX_POOLS", 2)

    def spec(session: str) -> ProcessSpec:
        return ProcessSpec(
            argv=("bash", "-c", PID_WORKER),
            cwd=str(tmp_path),
            env={**os.environ, "SESSION_VAR": session},
            stdin=b"{}\n",
            timeout_s=10,
            worker=1,
            worker_key="pid",
        )

    with trio.fail_after(30):
        async with open_guard() as guard:

            async def pid(session: str) -> int:
                result = await guard.run(spec(session))
                assert result.status == "exited", result
                return int(result.stdout)

            first = {session: await pid(session) for session in ("a", "b")}
            assert await pid("a") == first["a"]  # a: now the most recently used
            c = await pid("c")  # a third pool: b's, the least recently used, is retired
            while _alive(first["b"]):
                await trio.sleep(0.02)
            assert _alive(first["a"]) and _alive(c)
            assert await pid("a") == first["a"]
            assert await pid("b") not in (first["b"], first["a"], c)  # b starts afresh


#: PID_WORKER, taking half a second per request.
SLOW_PID_WORKER = PID_WORKER.replace("do printf", "do sleep 0.5; printf")


def pid_spec(cwd: Path, *, slow: bool = False) -> ProcessSpec:
    """A request to a PID_WORKER (or SLOW_PID_WORKER) in ``cwd``: one pool per project."""
    return ProcessSpec(
        argv=("bash", "-c", SLOW_PID_WORKER if slow else PID_WORKER),
        cwd=str(cwd),
        stdin=b"{}\n",
        timeout_s=10,
        worker=1,
        worker_key="pid",
    )


async def ask_pid(guard: Any, spec: ProcessSpec) -> int:
    result = await guard.run(spec)
    assert result.status == "exited", result
    return int(result.stdout)


async def test_the_budget_is_one_per_trio_run_and_retires_the_least_recently_used_idle_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two guards (two engines in one serve) share one budget of workers: past it, the least
    recently used idle worker of either is retired to make room."""
    monkeypatch.setattr(workers, "MAX_WORKERS", 2)
    projects = [tmp_path / name for name in ("a", "b", "c")]
    for project in projects:
        project.mkdir()
    with trio.fail_after(30):
        async with open_guard() as one, open_guard() as two:
            a = await ask_pid(one, pid_spec(projects[0]))
            b = await ask_pid(two, pid_spec(projects[1]))
            assert await ask_pid(one, pid_spec(projects[0])) == a  # a: the most recently used
            assert workers.budget().live == 2
            c = await ask_pid(one, pid_spec(projects[2]))  # no room: b (the other guard's) goes
            assert await gone_within([b], 2) == []
            assert _alive(a) and _alive(c) and workers.budget().live == 2
            assert await ask_pid(one, pid_spec(projects[0])) == a
            assert await ask_pid(two, pid_spec(projects[1])) not in (a, b, c)  # c goes now
            assert await gone_within([c], 2) == [] and workers.budget().live == 2


async def test_with_every_worker_busy_a_request_past_the_budget_is_served_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(workers, "MAX_WORKERS", 1)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with trio.fail_after(30):
        async with open_guard() as guard:
            busy: list[int] = []

            async def slow() -> None:
                busy.append(await ask_pid(guard, pid_spec(tmp_path / "a", slow=True)))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(slow)
                while workers.budget().live < 1:
                    await trio.sleep(0.01)
                # The only worker is busy: this one gets a process of its own, and answers.
                once = await guard.run(pid_spec(tmp_path / "b"))
            assert once.status == "exited" and once.pid is not None
            assert int(once.stdout) == once.pid != busy[0]
            assert not _alive(once.pid), "served once: the process ends with its request"
            assert workers.budget().served_once == 1 and workers.budget().live == 1
    said = [r.getMessage() for r in caplog.records if "budget full" in r.getMessage()]
    assert said == [
        "warm worker budget full (1 warm workers are alive, the budget is 1): "
        "requests are served by a process of their own until a worker is free"
    ]


async def test_a_worker_idle_too_long_is_retired(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    # Real processes: the clock jumps only once nothing happened for a while in real time.
    autojump_clock.autojump_threshold = 0.3
    with trio.fail_after(workers.IDLE_RETIRE_S * 3):
        async with open_guard() as guard:
            first = await ask_pid(guard, pid_spec(tmp_path))
            await trio.sleep(workers.IDLE_RETIRE_S - 5)
            assert await ask_pid(guard, pid_spec(tmp_path)) == first  # used: idle anew
            await trio.sleep(workers.IDLE_RETIRE_S - 5)
            assert _alive(first) and workers.budget().live == 1
            await trio.sleep(10)
            assert workers.budget().live == 0
            while _alive(first):
                await trio.sleep(0.05)
            assert await ask_pid(guard, pid_spec(tmp_path)) != first


#: Run in a child with a lowered file descriptor limit: many projects' workers, then many open
#: connections, and with them one-shot hooks and more projects' worker requests.
FD_SCRIPT = r"""
import functools, json, os, resource, sys
from pathlib import Path

import trio

from triohooks.actors import workers
from triohooks.actors.process_guard import open_guard
from triohooks.handlers.process import ProcessResult, ProcessSpec

LIMIT, PROJECTS, CONNECTIONS, AT_ONCE = 512, 150, 100, 10
root, worker = Path(sys.argv[1]), sys.argv[2]
resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))


def spec(project, argv, worker_size=1):
    project.mkdir(exist_ok=True)
    return ProcessSpec(argv=argv, cwd=str(project), stdin=b"{}\n", timeout_s=20,
                       worker=worker_size, worker_key="pid")


async def main():
    fds = workers.LINUX_WORKER_FDS if sys.argv[3] == "linux" else workers.POSIX_WORKER_FDS
    out = {"budget": workers.worker_budget(LIMIT, fds), "errors": []}
    async with open_guard() as guard:
        async def ask(name):
            result = await guard.run(spec(root / name, ("bash", "-c", worker)))
            if result.status != "exited" or not result.stdout.isdigit():
                out["errors"].append(f"worker {name}: {result.status} {result.error}")

        async def hook(i):
            result = await guard.run(spec(root / "hooks", ("bash", "-c", "echo hi"), 0))
            if result.status != "exited" or result.stdout != "hi\n":
                out["errors"].append(f"hook {i}: {result.status} {result.error}")

        for i in range(PROJECTS):
            await ask(f"p{i}")
        out["live_after_projects"] = workers.budget().live

        async def echo(stream):
            async with stream:
                while data := await stream.receive_some(16):
                    await stream.send_all(data)

        clients = []
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(functools.partial(trio.serve_tcp, echo, 0, host="127.0.0.1"))
            port = listeners[0].socket.getsockname()[1]
            for i in range(CONNECTIONS):
                try:
                    stream = await trio.open_tcp_stream("127.0.0.1", port)
                    with trio.move_on_after(5):  # not accepted: no descriptor left
                        await stream.send_all(b"x")
                        if await stream.receive_some(1) == b"x":
                            clients.append(stream)
                            continue
                    out["errors"].append(f"connection {i}: no echo")
                except OSError as exc:
                    out["errors"].append(f"connection {i}: {exc}")
            async with trio.open_nursery() as load:  # at once, the connections still open
                for i in range(AT_ONCE):
                    load.start_soon(hook, i)
                    load.start_soon(ask, f"q{i}")
            for i in range(PROJECTS):  # and one after another
                await ask(f"r{i}")
            for stream in clients:
                await stream.send_all(b"y")
                assert await stream.receive_some(1) == b"y"
                await stream.aclose()
            nursery.cancel_scope.cancel()
        out["connections"] = len(clients)
        out["live"] = workers.budget().live
        # Descriptors taken by something else until less than the reserve (1/4) is free:
        # the next projects' requests retire the idle workers, then are served once.
        before = workers.budget().served_once
        held = [os.open(os.devnull, os.O_RDONLY) for _ in range(LIMIT - workers.open_fds() - 30)]
        for i in range(5):
            await ask(f"s{i}")
        out["live_when_short"] = workers.budget().live
        out["served_once"] = workers.budget().served_once - before
        for fd in held:
            os.close(fd)
    print(json.dumps(out))


trio.run(main)
"""


async def test_at_a_low_fd_limit_workers_leave_room_for_connections_and_hooks(
    tmp_path: Path, guard_backend: str
) -> None:
    """At a 512 descriptor limit: 150 projects' workers, then 100 open loopback connections
    and, while they are open, 10 one-shot hooks with 10 new projects' requests at once, then
    150 more projects one after another: everything answers, and the workers kept stay
    within the budget (before it, 64 workers at 7 descriptors each ran the process out). Then,
    with under a quarter of the limit free, the workers shrink to none and requests are
    still answered."""
    with trio.fail_after(120):
        done = await trio.run_process(
            [sys.executable, "-c", FD_SCRIPT, str(tmp_path), PID_WORKER, guard_backend],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    out = json.loads(done.stdout)
    assert out["errors"] == []
    # 512 / 8 descriptors, at 5 per worker on linux (12 workers), 7 on posix (9)
    assert out["budget"] == {"linux": 12, "posix": 9}[guard_backend]
    assert 0 < out["live_after_projects"] <= out["budget"] and 0 < out["live"] <= out["budget"]
    assert out["connections"] == 100
    # With less than a quarter of the limit free, workers shrink first: none is kept, and the
    # requests are answered by processes of their own.
    assert out["live_when_short"] == 0 and out["served_once"] == 5


async def test_the_guards_worker_handle_starts_signals_stops_and_reaps(
    tmp_path: Path, guard_backend: str
) -> None:
    """The public handle both backends give for a warm worker's process: its pipes speak the
    protocol, ``signal`` reaches its group, ``stop`` kills it, ``reap`` leaves nothing."""
    with trio.fail_after(20):
        async with open_guard() as guard:
            handle = await guard.start_worker(pid_spec(tmp_path), {"EXTRA": "1"})
            assert not isinstance(handle, ProcessResult), handle
            assert guard.live == 1 and handle.stdin is not None
            os.write(handle.stdin, b"{}\n")
            reply = b""
            while not reply.endswith(b"\n"):
                await trio.lowlevel.wait_readable(handle.stdout)
                reply += os.read(handle.stdout, 4096)
            assert json.loads(reply) == {"exit": 0, "stdout": str(handle.pid)}
            assert psutil.Process(handle.pid).environ()["EXTRA"] == "1"
            handle.signal(signal.SIGSTOP)
            while psutil.Process(handle.pid).status() != psutil.STATUS_STOPPED:
                await trio.sleep(0.01)
            with trio.CancelScope(shield=True):
                await handle.stop()
                await handle.reap()
            assert handle.returncode is not None and handle.returncode < 0
            assert guard.live == 0 and not _alive(handle.pid)
