"""``POST /claude/v1/hook`` on the real server and ``triohooks-relay`` against it (or without
it): real sockets on 127.0.0.1 port 0, real bash hooks, Claude Code's settings format."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any, Protocol

import psutil
import pytest
import trio

from triohooks.agents.adopt import catch_all
from triohooks.config.paths import state_dir
from triohooks.fronts import relay
from triohooks.fronts.server import SOCKET_FILE, HookServer, ServeSettings, serve

from .helpers import count_decodes

pytestmark = pytest.mark.slow

TOKEN = "agent-endpoint-token-0123456789abcdef"
REPO = Path(__file__).resolve().parent.parent
GUARD = {
    "PreToolUse": [
        {
            "matcher": "Bash",
            "hooks": [
                {
                    "type": "command",
                    "command": 'grep -q "git push" && { echo "no pushing" >&2; exit 2; }; exit 0',
                }
            ],
        }
    ]
}


class Env:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.project = root / "proj"
        self.state = root / "state"
        for d in (self.home / ".claude", self.project / ".claude", root / "g"):
            d.mkdir(parents=True)
        # As `triohooks claude install --scope user` leaves it: the hooks moved beside the
        # settings file, the catch-alls in their place.
        self.adopted = self.home / ".claude" / "triohooks-hooks.json"
        self.adopted.write_text(json.dumps(GUARD))
        routed, _, _ = catch_all(
            "claude",
            GUARD,
            source=str(self.adopted),
            scope="user",
            transport="relay",
            port=8765,
            relay_script=relay.__file__,
            own=None,  # every event, as an install with unknown hooks routes
        )
        (self.home / ".claude" / "settings.json").write_text(json.dumps({"hooks": routed}))
        # Claude Code runs the hooks of the settings files triohooks did not adopt itself: never
        # run by us again.
        (self.project / ".claude" / "settings.json").write_text(
            json.dumps(
                {
                    "hooks": {
                        "PreToolUse": [
                            {"hooks": [{"type": "command", "command": "touch native-ran"}]}
                        ]
                    }
                }
            )
        )

    def body(self, command: str, event: str = "PreToolUse") -> bytes:
        return json.dumps(
            {
                "session_id": "s",
                "transcript_path": "",
                "cwd": str(self.project),
                "hook_event_name": event,
                "tool_name": "Bash",
                "tool_input": {"command": command},
            }
        ).encode()

    def environ(self) -> dict[str, str]:
        return {
            **os.environ,
            "HOME": str(self.home),
            "TRIOHOOKS_STATE_DIR": str(self.state),
            "TRIOHOOKS_CONFIG_DIR": str(self.root / "g"),
            "PYTHONPATH": str(REPO / "build" / "mypy")
            + os.pathsep
            + os.environ.get("PYTHONPATH", ""),
        }


class HasState(Protocol):
    """A test's world with its own state dir (:class:`Env`, or another test module's)."""

    @property
    def state(self) -> Path: ...


def make_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    e = Env(tmp_path)
    monkeypatch.setenv("HOME", str(e.home))
    monkeypatch.setenv("TRIOHOOKS_STATE_DIR", str(e.state))
    return e


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return make_env(tmp_path, monkeypatch)


@asynccontextmanager
async def running(env: Env, **overrides: Any) -> AsyncIterator[HookServer]:
    engine = {"workspace": env.project, "config_dir": env.root / "g", "state_dir": env.state}
    settings = ServeSettings(
        token=TOKEN, port=0, engine=engine, close_timeout_s=0.5, fire_grace_s=2, **overrides
    )
    async with trio.open_nursery() as nursery:
        server: HookServer = await nursery.start(serve, settings)
        try:
            yield server
        finally:
            server.shutdown()


async def post(
    server: HookServer,
    body: bytes,
    *,
    path: str = "/claude/v1/hook",
    token: str = TOKEN,
    requests: int = 1,
) -> list[tuple[int, Any]]:
    """Send ``requests`` requests on one keep-alive connection; their (status, JSON body)."""
    out = []
    async with await trio.open_tcp_stream(server.host, server.port) as stream:
        for _ in range(requests):
            head = (
                f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
            ).encode()
            await stream.send_all(head + body)
            data = b""
            while b"\r\n\r\n" not in data:
                data += await stream.receive_some()
            head_bytes, _, rest = data.partition(b"\r\n\r\n")
            lines = head_bytes.decode().split("\r\n")
            length = next(
                int(line.split(":")[1])
                for line in lines
                if line.lower().startswith("content-length")
            )
            while len(rest) < length:
                rest += await stream.receive_some()
            out.append((int(lines[0].split()[1]), json.loads(rest)))
    return out


async def test_the_endpoint_answers_in_claudes_format(env: Env) -> None:
    with trio.fail_after(20):
        async with running(env) as server:
            [(status, denied)] = await post(server, env.body("git push origin main"))
            [(ok_status, allowed), (again, _)] = await post(server, env.body("ls"), requests=2)
    assert status == 200 and ok_status == 200 and again == 200
    assert denied == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "no pushing",
        }
    }
    assert allowed == {}
    assert not (env.project / "native-ran").exists()  # the agent's own hooks are its own


async def test_the_endpoint_decodes_the_hook_input_once(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The endpoint reads the body (to answer an unreadable one itself) and hands what it read
    to the engine: the request's JSON is decoded once, not again by the agent runner."""
    body = env.body("git push origin main")
    with trio.fail_after(20):
        async with running(env) as server:
            decoded = count_decodes(monkeypatch, body)
            [(status, denied)] = await post(server, body)
    assert status == 200
    assert denied["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert len(decoded) == 1


async def test_the_endpoint_answers_for_the_scope_its_catch_all_names(env: Env) -> None:
    """The user-scope catch-all (``?scope=user``) runs the user's hooks; a project-scope one
    beside it does not run them again; a query that is no scope is a deny that says so."""
    push = env.body("git push origin main")
    with trio.fail_after(20):
        async with running(env) as server:
            [(_, user)] = await post(server, push, path="/claude/v1/hook?scope=user")
            [(_, project)] = await post(server, push, path="/claude/v1/hook?scope=project")
            [(status, other)] = await post(server, push, path="/claude/v1/hook?scope=all")
    assert user["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert project == {}
    assert status == 200 and other["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert (
        "unknown query 'scope=all' (only scope=user|project and event=NAME)"
        in (other["hookSpecificOutput"]["permissionDecisionReason"])
    )


async def test_the_endpoint_denies_what_it_cannot_run_and_says_why(env: Env) -> None:
    lone = b'{"hook_event_name": "PreToolUse", "tool_input": {"command": "\\ud800"}}'
    deep = b'{"hook_event_name": "PreToolUse", "x": ' + b"[" * 3000 + b"]" * 3000 + b"}"
    with trio.fail_after(20):
        async with running(env) as server:
            [(wrong, wrong_body)] = await post(server, env.body("ls"), token="wrong")
            [(unset, unset_body)] = await post(server, env.body("ls"), token="")
            [(missing, _)] = await post(server, env.body("ls"), path="/windsurf/v1/hook")
            [(bad, bad_body)] = await post(server, b"[1, 2]")
            [(lone_status, lone_body)] = await post(server, lone)
            [(deep_status, deep_body)] = await post(server, deep)
            refused = server.refused_requests
            # The websocket side still works on the same port.
            from triohooks.fronts.client import connect

            async with connect(server.url, TOKEN) as client:
                outcome = await client.fire("session_start", {})
    # An agent goes on after any status but 200: a hook request it sent is always answered 200,
    # with a deny that says why, whether or not it may run hooks here.
    for status, body, why in (
        (wrong, wrong_body, "wrong bearer token"),
        (unset, unset_body, "no bearer token (is TRIOHOOKS_TOKEN set"),
        (lone_status, lone_body, "unreadable hook input"),
        (deep_status, deep_body, "nested too deeply"),
    ):
        assert status == 200
        out = body["hookSpecificOutput"]
        assert out["permissionDecision"] == "deny" and why in out["permissionDecisionReason"]
    assert bad == 200 and bad_body == {"systemMessage": bad_body["systemMessage"]}
    assert missing == 404
    assert refused == 6  # the five above and the unknown path
    assert outcome.event == "session_start"


async def test_refusals_are_logged_and_rate_limited(
    env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="triohooks.server")
    with trio.fail_after(20):
        async with running(env) as server:
            for _ in range(5):
                await post(server, env.body("ls"), token="wrong")
            assert server.refused_requests == 5
    said = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert len(said) == 1 and "wrong bearer token" in said[0]


async def test_half_sent_requests_cannot_lock_out_authenticated_ones(env: Env) -> None:
    """Requests never finished hold a first-request slot each, until the handshake timeout;
    one that is whole is answered meanwhile (and frees its slot at once)."""
    with trio.fail_after(30):
        async with running(env, max_connections=64, handshake_timeout_s=2) as server:
            held = []
            for _ in range(60):  # never finished
                stream = await trio.open_tcp_stream(server.host, server.port)
                await stream.send_all(b"POST /claude/v1/hook HTTP/1.1\r\nHost: x\r\n")
                held.append(stream)
            while server.handshakes < 60:
                await trio.sleep(0.01)
            started = trio.current_time()
            [(status, answer)] = await post(server, env.body("git push"))
            assert status == 200 and answer["hookSpecificOutput"]["permissionDecision"] == "deny"
            assert trio.current_time() - started < 1
            # The handshake timeout closes what is left of them soon after.
            for stream in held:
                assert await stream.receive_some() == b""
            assert server.handshakes == 0
            for stream in held:
                await stream.aclose()


async def test_a_disconnect_cancels_the_hooks_and_kills_their_trees(env: Env) -> None:
    env.adopted.write_text(
        json.dumps(
            {
                "PreToolUse": [
                    {
                        "hooks": [
                            {"type": "command", "command": "setsid sleep 300.5151 & sleep 300.5152"}
                        ]
                    }
                ]
            }
        )
    )

    def sleeping() -> list[psutil.Process]:
        return [
            p
            for p in psutil.process_iter(["cmdline"])
            if p.info["cmdline"] in (["sleep", "300.5151"], ["sleep", "300.5152"])
        ]

    body = env.body("ls")
    try:
        with trio.fail_after(20):
            async with running(env) as server:
                stream = await trio.open_tcp_stream(server.host, server.port)
                head = (
                    f"POST /claude/v1/hook HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
                    f"Content-Length: {len(body)}\r\n\r\n"
                ).encode()
                await stream.send_all(head + body)
                while len(sleeping()) < 2:
                    await trio.sleep(0.02)
                await stream.aclose()  # the agent gave up on this hook call
                with trio.move_on_after(2):
                    while sleeping():
                        await trio.sleep(0.02)
                assert sleeping() == []
    finally:
        for p in sleeping():
            p.kill()


def test_relay_state_dir_is_the_engines(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for environ in (
        {"TRIOHOOKS_STATE_DIR": str(tmp_path / "x")},
        {"XDG_STATE_HOME": str(tmp_path / "xdg")},
        {"HOME": str(tmp_path / "home")},
    ):
        monkeypatch.delenv("TRIOHOOKS_STATE_DIR", raising=False)
        monkeypatch.delenv("XDG_STATE_HOME", raising=False)
        for name, value in environ.items():
            monkeypatch.setenv(name, value)
        assert relay.state_dir() == str(state_dir())


def run_relay(
    env: Env, body: bytes, *extra: str, environ: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[bytes]:
    code = (
        "import sys; from triohooks.fronts.relay import main; rc = main(sys.argv[1:]); "
        "print('TRIO-IMPORTED' if 'trio' in sys.modules else 'NO-TRIO', file=sys.stderr); "
        "sys.exit(rc)"
    )
    return subprocess.run(
        [sys.executable, "-c", code, "claude", *extra],
        input=body,
        capture_output=True,
        env={**env.environ(), **(environ or {})},
        cwd=env.project,
        timeout=timeout,
        check=False,
    )


def run_bare_relay(
    env: Env, body: bytes, *extra: str, **kw: Any
) -> subprocess.CompletedProcess[bytes]:
    """The relay as a user-scope install writes it: a bare script, no site-packages."""
    return subprocess.run(
        [sys.executable, "-I", "-S", relay.__file__, "claude", *extra],
        input=body,
        capture_output=True,
        env={**env.environ(), **kw.pop("environ", {})},
        cwd=env.project,
        timeout=kw.pop("timeout", 60),
        check=False,
    )


@asynccontextmanager
async def relay_server(env: Any, config_dir: Path | None = None) -> AsyncIterator[HookServer]:
    """A real serve with its relay socket in the (private) state dir of ``env`` (an
    :class:`Env`, or another test module's world with a ``project`` and a ``state``), its
    config dir ``config_dir`` (default: the :class:`Env`'s)."""
    env.state.mkdir(mode=0o700, exist_ok=True)
    config = config_dir if config_dir is not None else env.root / "g"
    engine = {"workspace": env.project, "config_dir": config, "state_dir": env.state}
    settings = ServeSettings(
        token=TOKEN,
        port=0,
        engine=engine,
        close_timeout_s=0.5,
        fire_grace_s=2,
        agent_socket=str(env.state / SOCKET_FILE),
    )
    async with trio.open_nursery() as nursery:
        server: HookServer = await nursery.start(serve, settings)
        try:
            yield server
        finally:
            server.shutdown()


def denial(done: subprocess.CompletedProcess[bytes]) -> tuple[str, str]:
    out = json.loads(done.stdout)["hookSpecificOutput"]
    return out["permissionDecision"], out["permissionDecisionReason"]


async def test_relay_against_a_running_server_imports_no_trio_and_sends_the_session_env(
    env: Env,
) -> None:
    env.adopted.write_text(
        json.dumps(
            {
                "PreToolUse": [
                    {"hooks": [{"type": "command", "command": 'echo "$SESSION_VAR" >&2; exit 2'}]}
                ]
            }
        )
    )
    with trio.fail_after(30):
        async with relay_server(env) as server:
            done = await trio.to_thread.run_sync(
                partial(run_relay, env, env.body("git push"), environ={"SESSION_VAR": "from-agent"})
            )
            bare = await trio.to_thread.run_sync(
                partial(run_bare_relay, env, env.body("ls"), environ={"SESSION_VAR": "bare"})
            )
            assert server.refused_requests == 0
    assert done.returncode == 0, done.stderr
    assert b"NO-TRIO" in done.stderr
    assert denial(done) == ("deny", "from-agent")
    assert bare.returncode == 0 and denial(bare) == ("deny", "bare")


def test_relay_without_a_server_runs_the_hooks_itself(env: Env) -> None:
    done = run_relay(env, env.body("git push"))
    assert done.returncode == 0, done.stderr
    assert b"TRIO-IMPORTED" in done.stderr
    assert denial(done) == ("deny", "no pushing")
    allowed = run_relay(env, env.body("ls"))
    assert json.loads(allowed.stdout) == {}
    bare = run_bare_relay(env, env.body("git push"))
    assert bare.returncode == 0 and denial(bare) == ("deny", "no pushing")


def test_relay_with_a_stale_socket_falls_back(env: Env) -> None:
    env.state.mkdir(mode=0o700)
    left = socket.socket(socket.AF_UNIX)
    left.bind(str(env.state / SOCKET_FILE))  # a serve that died: the file, nobody listening
    left.close()
    done = run_relay(env, env.body("git push"))
    assert denial(done) == ("deny", "no pushing")


@pytest.mark.allow_leaks
def test_relay_starts_the_users_serve_and_the_next_call_uses_it(env: Env) -> None:
    environ = {**env.environ(), "TRIOHOOKS_NO_AUTOSTART": ""}
    first = subprocess.run(
        [sys.executable, "-I", "-S", relay.__file__, "claude"],
        input=env.body("git push"),
        capture_output=True,
        env=environ,
        cwd=env.project,
        timeout=60,
        check=False,
    )
    assert denial(first) == ("deny", "no pushing")
    pid = None
    try:
        info = autostarted_serve(env)
        pid = info["pid"]
        assert info["socket"] == str(env.state / SOCKET_FILE)
        assert "--auto" in psutil.Process(pid).cmdline()
        started = time.monotonic()
        second = run_bare_relay(env, env.body("git push"))
        assert denial(second) == ("deny", "no pushing")
        assert b"running the hooks here" not in second.stderr
        assert time.monotonic() - started < 5
    finally:
        # The serve it started, even if serve.json was never read.
        for proc in [psutil.Process(pid)] if pid is not None else autostarted(env):
            proc.terminate()
            proc.wait(20)


def autostarted_serve(env: HasState) -> dict[str, Any]:
    """serve.json of the serve a relay started, once it is up (the socket is bound before
    serve.json is written: wait for both)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (
        (env.state / SOCKET_FILE).exists() and (env.state / "serve.json").exists()
    ):
        time.sleep(0.05)
    info: dict[str, Any] = json.loads((env.state / "serve.json").read_text())
    return info


def autostarted(env: HasState) -> list[psutil.Process]:
    """The ``serve --auto`` processes that use this test's state dir."""
    found = []
    for proc in psutil.process_iter():
        try:
            if "--auto" in proc.cmdline() and proc.environ().get("TRIOHOOKS_STATE_DIR") == str(
                env.state
            ):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def _serve_process(env: Env) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "triohooks",
            "serve",
            "--port",
            "0",
            "--workspace",
            str(env.project),
        ],
        env=env.environ(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while not (env.state / SOCKET_FILE).exists():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    return proc


def _fake_server(path: Path, reply: bytes, *, uid: int | None = None) -> subprocess.Popen[bytes]:
    """A process listening on ``path`` that answers every request with ``reply`` (as ``uid``
    when given: it binds first, then drops to that user before it listens -- the kernel tells
    a client the credentials of the listen)."""
    code = (
        "import os, socket, sys\n"
        "s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])\n"
        "if sys.argv[3]: os.setuid(int(sys.argv[3]))\n"
        "s.listen(8)\n"
        "print('ready', flush=True)\n"
        "while True:\n"
        "    c, _ = s.accept(); c.recv(1 << 20)\n"
        "    try: c.sendall(bytes.fromhex(sys.argv[2]))\n"
        "    except OSError: pass  # a client that left (the native one hands over)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(path), reply.hex(), "" if uid is None else str(uid)],
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    proc.stdout.close()
    return proc


FORGED = json.dumps(
    {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}
).encode()
FORGED_REPLY = b"HTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (
    len(FORGED),
    FORGED,
)


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to run a server as another user")
def test_a_server_of_another_user_gets_no_say(env: Env) -> None:
    env.state.mkdir(mode=0o700)
    proc = _fake_server(env.state / SOCKET_FILE, FORGED_REPLY, uid=65534)
    try:
        done = run_bare_relay(env, env.body("git push"))
    finally:
        proc.kill()
        proc.wait()
    assert denial(done) == ("deny", "no pushing")
    assert b"served by uid 65534" in done.stderr


@pytest.mark.parametrize("place", ["shared dir", "socket of another user"])
def test_a_socket_in_a_place_others_control_is_not_used(env: Env, place: str) -> None:
    env.state.mkdir(mode=0o700)
    proc = _fake_server(env.state / SOCKET_FILE, FORGED_REPLY)
    try:
        if place == "shared dir":
            env.state.chmod(0o777)
            why = b"is not a directory only you can write in"
        else:
            if os.getuid() != 0:
                pytest.skip("needs root to give the socket to another user")
            os.chown(env.state / SOCKET_FILE, 65534, 65534)
            why = b"is not a socket of yours"
        done = run_bare_relay(env, env.body("git push"))
    finally:
        proc.kill()
        proc.wait()
        env.state.chmod(0o700)
    assert denial(done) == ("deny", "no pushing")
    assert why in done.stderr


def test_a_server_that_acknowledges_and_never_answers_is_a_denial_in_time(env: Env) -> None:
    env.state.mkdir(mode=0o700)
    proc = _fake_server(env.state / SOCKET_FILE, b"HTTP/1.1 102 Processing\r\n\r\n")
    try:
        started = time.monotonic()
        done = run_bare_relay(env, env.body("ls"), "--timeout", "4")
        took = time.monotonic() - started
    finally:
        proc.kill()
        proc.wait()
    assert done.returncode == 0, done.stderr  # the agent's deny, in its JSON, as documented
    decision, reason = denial(done)
    assert decision == "deny" and "did not answer within 2 s" in reason
    assert took < 4  # before the agent's own timeout
    full = run_relay(env, env.body("ls"), "--timeout", "4")  # (no server now: runs here)
    assert json.loads(full.stdout) == {}


def test_a_relay_started_by_a_hook_the_relay_runs_is_a_loop(env: Env) -> None:
    done = run_relay(env, env.body("ls"), environ={"TRIOHOOKS_RELAY": "1"})
    decision, reason = denial(done)
    assert decision == "deny" and "a loop" in reason


def test_relay_fails_closed_when_it_cannot_run_the_hooks(env: Env) -> None:
    (env.root / "g" / "hooks.toml").write_text("[[hooks.pre_tool]]\nbroken = ")
    done = run_relay(env, env.body("ls"))
    assert done.returncode == 0, done.stderr
    decision, reason = denial(done)
    assert decision == "deny" and "triohooks internal error" in reason
    assert b"Traceback" not in done.stderr


@pytest.mark.parametrize("args", [["windsurf"], ["claude", "--timeout", "x"], ["claude", "extra"]])
def test_relay_usage(args: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "triohooks.fronts.relay", *args],
        input=b"{}",
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 1 and b"usage" in done.stderr
