"""One ``serve`` answers every agent session of the user, in every project: each request's
hooks get that request's session environment, and nothing carries from one session or project
to another, nor into requests that bring no environment (docs/security.md, "What runs where").

Real parts throughout: the bare relay (as a user-scope install runs it) in two projects whose
sessions have different values of the same variables -- ``SESSION_VAR``, which every hook
records, ``ONLY_A``, which only project A's session has, and ``BASH_ENV`` naming a script of
the session's own project that leaves a mark naming the directory it ran in -- through one real
serve (its relay socket, its websocket, its http endpoint), running real bash hooks of every
kind: the user's own triohooks hooks (one-shot, warm worker, JSON dialect, http with header
expansion, a background ``post_tool`` hook) and the agent's adopted hook.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import psutil
import pytest
import trio

from triohooks.agents.adopt import catch_all
from triohooks.fronts import relay
from triohooks.fronts.client import connect
from triohooks.fronts.server import SOCKET_FILE, HookServer, ServeSettings, serve

from . import serving
from .helpers import write_json_hooks, write_toml_hooks
from .test_agent_endpoint import autostarted, autostarted_serve

pytestmark = pytest.mark.slow

TOKEN = "session-env-token-0123456789abcdef"
#: Every hook appends one line to ``seen`` in its working directory: its kind, then the values
#: of the session's variables as it sees them.
SEEN = '"${SESSION_VAR-unset}" "${ONLY_A-unset}" >> seen'
ADOPTED = {
    "PreToolUse": [{"hooks": [{"type": "command", "command": f"printf 'adopted|%s|%s\\n' {SEEN}"}]}]
}


class World:
    """A user (home, config dir, state dir) with projects ``a`` and ``b``, serve's own
    workspace ``ws``, the hooks above, and the sessions' environments."""

    def __init__(self, root: Path, http_port: int) -> None:
        self.root = root
        self.home = root / "home"
        self.state = root / "state"
        self.config = root / "g"
        self.ws = root / "ws"
        self.marks = root / "marks"
        self.projects = {name: root / f"proj-{name}" for name in ("a", "b")}
        for d in (self.home / ".claude", self.config, self.ws, *self.projects.values()):
            d.mkdir(parents=True)
        self.state.mkdir(mode=0o700)
        adopted = self.home / ".claude" / "triohooks-hooks.json"
        adopted.write_text(json.dumps(ADOPTED))
        routed, _, _ = catch_all(
            "claude",
            ADOPTED,
            source=str(adopted),
            scope="user",
            transport="relay",
            port=8765,
            relay_script=relay.__file__,
            own=None,  # every event, as an install with unknown hooks routes
        )
        (self.home / ".claude" / "settings.json").write_text(json.dumps({"hooks": routed}))
        worker = (
            "while IFS= read -r line; do "
            f"printf 'worker|%s|%s|%s\\n' \"$$\" {SEEN}; "
            "printf '{\"exit\": 0}\\n'; done"
        )
        write_toml_hooks(
            self.config,
            f"""
[[hooks.pre_tool]]
id = "one_shot"
command = '''printf 'one-shot|%s|%s\\n' {SEEN}'''

[[hooks.pre_tool]]
id = "warm"
worker = true
worker_pool = 1
command = '''{worker}'''

[[hooks.pre_tool]]
id = "http"
type = "http"
url = "http://127.0.0.1:{http_port}/hook"
headers = {{ "X-Session" = "$SESSION_VAR", "X-Only-A" = "${{ONLY_A}}" }}
allowed_env_vars = ["SESSION_VAR", "ONLY_A"]

[[hooks.post_tool]]
id = "later"
command = '''printf 'background|%s|%s\\n' {SEEN}'''
""",
        )
        json_command = (
            'printf \'json|%s|%s|%s|%s\\n\' "$EVERRUNS_HOOK_EVENT" "$EVERRUNS_HOOK_TOOL_NAME" '
            + SEEN
        )
        write_json_hooks(
            self.config,
            [
                {
                    "id": "json_hook",
                    "event": "pre_tool_use",
                    "executor": {"type": "bash", "command": json_command},
                }
            ],
        )

    def session(self, project: str, value: str, **extra: str) -> dict[str, str]:
        """An agent session's environment in ``project``: ``SESSION_VAR=value`` and a
        ``BASH_ENV`` of that project's own, which marks ``<value>|<where it ran>``."""
        where = self.projects[project]
        script = where / f"bash-env-{value}.sh"
        script.write_text(f'printf "%s|%s\\n" {value} "$PWD" >> {self.marks}\n')
        return {
            **os.environ,
            "HOME": str(self.home),
            "TRIOHOOKS_STATE_DIR": str(self.state),
            "TRIOHOOKS_CONFIG_DIR": str(self.config),
            "CLAUDE_PROJECT_DIR": str(where),
            "SESSION_VAR": value,
            "BASH_ENV": str(script),
            **extra,
        }

    def body(self, project: str, event: str = "PreToolUse") -> bytes:
        call: dict[str, Any] = {
            "session_id": f"session-{project}",
            "cwd": str(self.projects[project]),
            "hook_event_name": event,
            "tool_name": "Bash",
            "tool_input": {"command": "ls"},
        }
        if event == "PostToolUse":
            call["tool_response"] = {"stdout": ""}
        return json.dumps(call).encode()

    def seen(self, where: Path) -> list[list[str]]:
        path = where / "seen"
        return [line.split("|") for line in path.read_text().splitlines()] if path.exists() else []

    def marked(self) -> set[str]:
        """Which BASH_ENV ran where: ``value|directory`` lines."""
        return set(self.marks.read_text().splitlines()) if self.marks.exists() else set()


def relay_call(world: World, environ: dict[str, str], body: bytes) -> dict[str, Any]:
    """The relay as a user-scope install runs it (a bare script), in the session's project."""
    done = subprocess.run(
        [sys.executable, "-I", "-S", relay.__file__, "claude"],
        input=body,
        capture_output=True,
        env=environ,
        cwd=environ["CLAUDE_PROJECT_DIR"],
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert b"running the hooks here" not in done.stderr, done.stderr  # serve answered
    answer: dict[str, Any] = json.loads(done.stdout)
    assert "permissionDecision" not in json.dumps(answer), answer
    return answer


class Recorder:
    """A loopback http endpoint for the http hook: what each request's headers said, and where
    the event came from."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    async def serve(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        task_status.started(listeners[0].socket.getsockname()[1])
        await trio.serve_listeners(self._one, listeners)

    async def _one(self, stream: trio.SocketStream) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = await stream.receive_some()
            if not chunk:
                return
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        headers = {}
        for line in head.decode().split("\r\n")[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        while len(body) < int(headers["content-length"]):
            body += await stream.receive_some()
        workspace = json.loads(body).get("workspace", "")
        self.seen.append((headers.get("x-session", ""), headers.get("x-only-a", ""), workspace))
        reply = b"{}"
        await stream.send_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(reply), reply)
        )
        await stream.aclose()


@asynccontextmanager
async def one_serve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[World, HookServer, Recorder]]:
    """The user's serve (its relay socket, websocket and http endpoint) in this trio run,
    with the user's home (where the agent's adopted hooks are)."""
    recorder = Recorder()
    async with trio.open_nursery() as nursery:
        port = await nursery.start(recorder.serve)
        world = World(tmp_path, port)
        monkeypatch.setenv("HOME", str(world.home))
        monkeypatch.setenv("TRIOHOOKS_STATE_DIR", str(world.state))
        settings = ServeSettings(
            token=TOKEN,
            port=0,
            engine={"workspace": world.ws, "config_dir": world.config, "state_dir": world.state},
            close_timeout_s=0.5,
            fire_grace_s=2,
            agent_socket=str(world.state / SOCKET_FILE),
        )
        server: HookServer = await nursery.start(serve, settings)
        try:
            yield world, server, recorder
        finally:
            server.shutdown()
            await server.done.wait()
            nursery.cancel_scope.cancel()


def foreground(world: World, project: str) -> list[list[str]]:
    """What the hooks the agent waited for saw in ``project``."""
    return [line for line in world.seen(world.projects[project]) if line[0] != "background"]


def assert_only_its_own(world: World, project: str, value: str, only_a: str) -> set[str]:
    """Every hook that ran in ``project`` saw its session's ``SESSION_VAR`` and ``ONLY_A``
    and nothing else; the warm workers' pids are returned."""
    lines = foreground(world, project)
    kinds = {line[0] for line in lines}
    assert kinds == {"one-shot", "worker", "json", "adopted"}, lines
    for line in lines:
        assert line[-2:] == [value, only_a], line
        if line[0] == "json":  # the dialect's variables, on top of the session's
            assert line[1:3] == ["pre_tool_use", "Bash"], line
    return {line[1] for line in lines if line[0] == "worker"}


@pytest.mark.usefixtures("guard_backend")
async def test_each_sessions_hooks_get_its_own_environment_through_one_serve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, guard_backend: str
) -> None:
    with trio.fail_after(120):
        async with one_serve(tmp_path, monkeypatch) as (world, server, recorder):
            a = world.session("a", "a", ONLY_A="1")
            b = world.session("b", "b")
            # Interleaved, one after the other: a, b, a, b.
            for environ, project in ((a, "a"), (b, "b"), (a, "a"), (b, "b")):
                await trio.to_thread.run_sync(relay_call, world, environ, world.body(project))
            # Then at once: four of each, interleaved.
            async with trio.open_nursery() as nursery:
                for environ, project in [(a, "a"), (b, "b")] * 4:
                    call = partial(relay_call, world, environ, world.body(project))
                    nursery.start_soon(trio.to_thread.run_sync, call)
            # A background hook (post_tool), queued with the session's environment.
            for environ, project in ((a, "a"), (b, "b")):
                await trio.to_thread.run_sync(
                    relay_call, world, environ, world.body(project, "PostToolUse")
                )
            while len(world.seen(world.projects["a"])) + len(world.seen(world.projects["b"])) < 50:
                await trio.sleep(0.02)  # 48 lines of the requests, then the 2 background ones
            assert server.refused_requests == 0
    background = {
        p: [line for line in world.seen(world.projects[p]) if line[0] == "background"] for p in "ab"
    }
    assert background == {"a": [["background", "a", "1"]], "b": [["background", "b", "unset"]]}
    workers_a = assert_only_its_own(world, "a", "a", "1")
    workers_b = assert_only_its_own(world, "b", "b", "unset")
    # Six requests a project, four hooks each (one-shot, worker, JSON dialect, adopted).
    assert len(foreground(world, "a")) == len(foreground(world, "b")) == 6 * 4
    assert workers_a.isdisjoint(workers_b)  # never a worker of the other session's
    if guard_backend == "linux":  # one warm worker per session, kept between its requests
        assert len(workers_a) == len(workers_b) == 1
    # Each BASH_ENV ran only in its own project: never A's for B's hooks, nor B's for A's.
    assert world.marked() == {f"a|{world.projects['a']}", f"b|{world.projects['b']}"}
    # The http hook's headers: expanded from the session's variables.
    assert sorted(set(recorder.seen)) == [
        ("a", "1", str(world.projects["a"])),
        ("b", "", str(world.projects["b"])),
    ]


async def test_two_sessions_in_one_project_get_two_warm_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same hook, argv and working directory, two environments: two workers (a worker is
    started with its environment and keeps it)."""
    with trio.fail_after(60):
        async with one_serve(tmp_path, monkeypatch) as (world, _, _):
            first = world.session("a", "first")
            second = world.session("a", "second")
            for environ in (first, second, first, second):
                await trio.to_thread.run_sync(relay_call, world, environ, world.body("a"))
    lines = world.seen(world.projects["a"])
    workers = {
        value: {line[1] for line in lines if line[0] == "worker" and line[2] == value}
        for value in ("first", "second")
    }
    assert all(len(pids) == 1 for pids in workers.values()), workers
    assert workers["first"] != workers["second"]
    where = world.projects["a"]
    assert world.marked() == {f"first|{where}", f"second|{where}"}


def plant_bash(world: World, project: str) -> str:
    """A ``bash`` of the project's own in ``<project>/bin`` (what direnv's ``PATH_add bin``
    puts first on a session's PATH): it marks ``fake|<where>``, then runs the real bash. The
    session's PATH with it first."""
    fake = world.projects[project] / "bin" / "bash"
    fake.parent.mkdir()
    fake.write_text(
        f'#!/bin/sh\nprintf "fake|%s\\n" "$PWD" >> {world.marks}\nexec /bin/bash "$@"\n'
    )
    fake.chmod(0o755)
    return f"{fake.parent}{os.pathsep}{os.environ['PATH']}"


@asynccontextmanager
async def serve_started_from(
    world: World, environ: dict[str, str]
) -> AsyncIterator[dict[str, Any]]:
    """A ``serve`` started from a session exactly as the relay starts one (the same command,
    environment and directory), but on a port of its own (the relay's takes 8765): its
    ``serve.json``."""
    proc = subprocess.Popen(
        relay.isolated_command(*relay.AUTO_SERVE_ARGS, "--port", "0"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        cwd=world.state,
        env=relay.serve_environ(environ),
    )
    try:
        info = await trio.to_thread.run_sync(wait_for_serve, world, proc)
        yield info
    finally:
        proc.terminate()
        await trio.to_thread.run_sync(partial(proc.wait, 20))


def wait_for_serve(world: World, proc: subprocess.Popen[bytes]) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while not ((world.state / SOCKET_FILE).exists() and (world.state / "serve.json").exists()):
        assert time.monotonic() < deadline and proc.poll() is None, "serve did not start"
        time.sleep(0.05)
    info: dict[str, Any] = json.loads((world.state / "serve.json").read_text())
    info["token"] = Path(info["token_file"]).read_text().strip()
    return info


async def claude_http_hook(info: dict[str, Any], body: bytes) -> Any:
    """One of Claude Code's http hooks to the serve ``info`` describes."""
    return await serving.claude_http_hook(info["host"], info["port"], info["token"], body)


async def test_requests_without_an_environment_get_none_of_the_starting_sessions(
    tmp_path: Path,
) -> None:
    """The serve session A's relay started answers B's relay with B's environment, and what
    brings none -- a websocket ``fire``, Claude Code's http hook -- with serve's own: nothing
    of A (its variables, its BASH_ENV, the bash its PATH names, its warm worker)."""
    recorder = Recorder()
    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            world = World(tmp_path, await nursery.start(recorder.serve))
            a = world.session("a", "a", ONLY_A="1", PATH=plant_bash(world, "a"))
            b = world.session("b", "b")
            async with serve_started_from(world, a) as info:
                for environ, project in ((a, "a"), (b, "b")):
                    await trio.to_thread.run_sync(relay_call, world, environ, world.body(project))
                async with connect(info["url"], info["token"]) as client:
                    outcome = await client.fire(
                        "pre_tool", {"tool": "Bash", "args": {"command": "ls"}}
                    )
                assert not outcome.blocked and not outcome.warnings, outcome
                http_call = json.loads(world.body("a"))
                # Another session, in no project: its hooks run in serve's own directory.
                http_call.update(cwd=str(world.state), session_id="session-http")
                answer = await claude_http_hook(info, json.dumps(http_call).encode())
                assert answer == {}, answer
            nursery.cancel_scope.cancel()
    assert_only_its_own(world, "a", "a", "1")
    assert_only_its_own(world, "b", "b", "unset")
    own = world.seen(world.state)  # serve's own workspace: the fire, the http hook's call
    kinds = sorted(line[0] for line in own)  # the fire's hooks, then the http hook's request's
    assert kinds == ["adopted", "json", "json", "one-shot", "one-shot", "worker", "worker"], own
    assert all(line[-2:] == ["unset", "unset"] for line in own), own
    workers = {
        line[1] for p in ("a", "b") for line in world.seen(world.projects[p]) if line[0] == "worker"
    }
    assert {line[1] for line in own if line[0] == "worker"}.isdisjoint(workers)
    where = world.projects
    assert world.marked() == {f"a|{where['a']}", f"fake|{where['a']}", f"b|{where['b']}"}
    assert ("", "", str(world.state)) in recorder.seen


@pytest.mark.allow_leaks
def test_the_auto_started_serve_keeps_only_who_you_are_and_triohooks_settings(
    tmp_path: Path,
) -> None:
    world = World(tmp_path, 9)  # (no http hook runs here)
    a = world.session(
        "a",
        "a",
        ONLY_A="1",
        PATH=plant_bash(world, "a"),
        LD_LIBRARY_PATH=str(world.projects["a"]),
        TRIOHOOKS_NO_AUTOSTART="",
        TRIOHOOKS_TOKEN="the-http-transports-token",
        PYTHONPATH=str(world.projects["a"]),
    )
    first = subprocess.run(
        [sys.executable, "-I", "-S", relay.__file__, "claude"],
        input=world.body("a"),
        capture_output=True,
        env=a,
        cwd=world.projects["a"],
        timeout=60,
        check=False,
    )
    assert first.returncode == 0, first.stderr
    pid = None
    try:
        pid = autostarted_serve(world)["pid"]
        environ = psutil.Process(pid).environ()
    finally:
        procs = [psutil.Process(pid)] if pid is not None else autostarted(world)
        for proc in procs:
            proc.terminate()
            proc.wait(20)
    assert environ == relay.serve_environ(a)
    assert environ["PATH"] == relay.SERVE_PATH
    assert environ["HOME"] == str(world.home)
    assert environ["TRIOHOOKS_STATE_DIR"] == str(world.state)
    assert environ["TRIOHOOKS_CONFIG_DIR"] == str(world.config)
    for name in (
        "SESSION_VAR",
        "ONLY_A",
        "BASH_ENV",
        "LD_LIBRARY_PATH",
        "PYTHONPATH",
        "CLAUDE_PROJECT_DIR",
        "TRIOHOOKS_TOKEN",
    ):
        assert name not in environ, name
