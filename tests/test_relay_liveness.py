"""Relay liveness (docs/agents.md, "The relay protocol"): serve acknowledges a request and then
sends a heartbeat while the hooks run; 2 s of silence is a dead serve, whose hooks the relay
runs itself (or denies, saying why, in the agent's own format); a dead serve is remembered in
``serve.dead`` so that it costs one event, and the next auto-started serve takes its socket.

The serve side's timing is pure trio (the autojump clock, over a memory stream); the relay is
a real process against a real serve (stopped with SIGSTOP) or a fake one on a real unix socket
(the relay is what is under test there)."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

import psutil
import pytest
import trio
import trio.testing

from triohooks.agents.merge import AgentAnswer
from triohooks.agents.runner import AgentInput, AgentResult
from triohooks.fronts import agent_http, relay
from triohooks.fronts.serve_protocol import HttpConnection
from triohooks.fronts.server import SOCKET_FILE

from .test_agent_endpoint import (
    Env,
    _serve_process,
    autostarted,
    denial,
    make_env,
    run_bare_relay,
)

BEAT = relay.BEAT
HOOK_INPUT = json.dumps(
    {"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {}}
).encode()


# -- serve's side, on the autojump clock ------------------------------------------------------


def _request(version: str, body: bytes = HOOK_INPUT, token: str | None = None) -> bytes:
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    return (
        f"POST /claude/{version}/hook HTTP/1.1\r\nHost: x\r\n{auth}"
        f"{relay.ENV_LENGTH_HEADER}: 0\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body


async def _exchange(
    request: bytes, hook_seconds: float, token: bytes | None = None
) -> list[tuple[float, bytes]]:
    """What serve's request handling writes back for ``request`` whose hooks take
    ``hook_seconds``: each chunk with the (autojump) time it arrived."""
    client, server = trio.testing.memory_stream_pair()

    async def handle(agent: str, body: AgentInput, env: Any, scope: Any) -> AgentResult:
        await trio.sleep(hook_seconds)
        answer = AgentAnswer(output={"answered": True})
        return AgentResult(
            agent="claude", event="PreToolUse", session="s", project=None, answer=answer, runs=[]
        )

    async def serve_it() -> None:
        peer = agent_http.Peer(token=token)
        await agent_http.serve_connection(server, HttpConnection(1 << 20), peer=peer, handle=handle)
        await server.aclose()

    chunks: list[tuple[float, bytes]] = []
    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve_it)
            await client.send_all(request)
            while chunk := await client.receive_some():
                chunks.append((trio.current_time(), bytes(chunk)))
    return chunks


async def test_serve_heartbeats_every_half_second_until_the_answer(autojump_clock: Any) -> None:
    start = trio.current_time()
    chunks = await _exchange(_request(relay.PROTOCOL), hook_seconds=10.25)
    beats = [(at - start, data) for at, data in chunks if data == BEAT]
    # The acknowledgement at once, then one every HEARTBEAT_S while the hooks ran (10.25 s).
    assert [at for at, _ in beats] == [i * relay.HEARTBEAT_S for i in range(21)]
    answer = b"".join(data for _, data in chunks if data != BEAT)
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
    assert answer.endswith(b'{"answered":true}')


async def test_a_relay_that_stops_reading_is_given_up_and_its_hooks_cancelled(
    autojump_clock: Any,
) -> None:
    """A heartbeat that cannot be written in BEAT_WRITE_TIMEOUT_S (the relay stopped reading):
    the connection is given up and the hooks cancelled, never an answer after half a beat."""
    client, server = trio.testing.lockstep_stream_pair()  # a write waits for the reader
    cancelled = False

    async def handle(agent: str, body: AgentInput, env: Any, scope: Any) -> AgentResult:
        nonlocal cancelled
        try:
            await trio.sleep(3600)
        except trio.Cancelled:
            cancelled = True
            raise
        raise AssertionError("not reached")

    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client.send_all, _request(relay.PROTOCOL))
            start = trio.current_time()
            serving = partial(
                agent_http.serve_connection,
                server,
                HttpConnection(1 << 20),
                peer=agent_http.Peer(token=None),
                handle=handle,
            )
            nursery.start_soon(serving)
            assert await client.receive_some() == BEAT  # the acknowledgement; then no reading
        took = trio.current_time() - start
    assert cancelled
    assert took == relay.HEARTBEAT_S + agent_http.BEAT_WRITE_TIMEOUT_S


async def test_a_v1_request_gets_one_acknowledgement_and_no_heartbeat(autojump_clock: Any) -> None:
    """A relay of an older triohooks (protocol v1) reads one 102 and then the answer: it is
    answered as before."""
    chunks = await _exchange(_request("v1"), hook_seconds=10.25)
    data = b"".join(d for _, d in chunks)
    assert data.startswith(BEAT) and data.count(b"HTTP/1.1 102") == 1
    assert data[len(BEAT) :].startswith(b"HTTP/1.1 200 OK\r\n")


async def test_the_older_relay_protocol_v2_is_answered_404(autojump_clock: Any) -> None:
    """A relay of protocol v2 splices its --event itself; serve no longer takes that path (its
    relay reads the 404 as an older serve and runs the hooks itself)."""
    chunks = await _exchange(_request("v2"), hook_seconds=0)
    assert b"".join(d for _, d in chunks).startswith(b"HTTP/1.1 404 ")


async def test_serve_adds_the_event_the_query_names_to_the_hook_input(
    autojump_clock: Any,
) -> None:
    """``?scope=user&event=preToolUse``: the hook input the hooks get names that event (the
    one splice, relay.with_event), and the scope reaches the handler."""
    seen: list[tuple[bytes, Any]] = []
    client, server = trio.testing.memory_stream_pair()

    async def handle(agent: str, body: AgentInput, env: Any, scope: Any) -> AgentResult:
        seen.append((body.body, scope))
        answer = AgentAnswer(output={})
        return AgentResult(
            agent="copilot", event="x", session="s", project=None, answer=answer, runs=[]
        )

    body = b'{"toolName": "bash"}'
    request = (
        f"POST /copilot/{relay.PROTOCOL}/hook?scope=user&event=preToolUse HTTP/1.1\r\nHost: x\r\n"
        f"{relay.ENV_LENGTH_HEADER}: 0\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode() + body
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            peer = agent_http.Peer(token=None)
            nursery.start_soon(
                partial(
                    agent_http.serve_connection, server, HttpConnection(1 << 20), peer=peer,
                    handle=handle,
                )
            )  # fmt: skip
            await client.send_all(request)
            data = b""
            while chunk := await client.receive_some():
                data += chunk
                if data.endswith(b"{}"):
                    break
            nursery.cancel_scope.cancel()
    assert seen == [(b'{"toolName": "bash","hook_event_name":"preToolUse"}', "user")]
    assert agent_http.read_query(b"event=a&event=b") is None
    assert agent_http.read_query(b"scope=user&colour=red") is None


async def test_the_relay_protocol_is_not_on_the_tcp_port(autojump_clock: Any) -> None:
    chunks = await _exchange(_request(relay.PROTOCOL, token="t"), 0, token=b"t")
    assert b"".join(d for _, d in chunks).startswith(b"HTTP/1.1 404 ")


# -- the relay against a real serve or a fake one ----------------------------------------------

FAKE_SERVE = r"""
import json, os, socket, sys, time
path, log, steps = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
s = socket.socket(socket.AF_UNIX)
s.bind(path)
s.listen(8)
print("ready", flush=True)
held = []
while True:
    c, _ = s.accept()
    with open(log, "a") as f:
        f.write("accepted\n")
        if hasattr(socket, "SO_PEERCRED"):  # which program connected (Linux)
            pid = int.from_bytes(c.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)[:4], sys.byteorder)
            f.write("peer " + os.readlink(f"/proc/{pid}/exe") + "\n")
    data = b""
    while b"\r\n\r\n" not in data:
        data += c.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
    while len(body) < length:
        body += c.recv(65536)
    with open(log, "a") as f:
        f.write(head.split(b"\r\n")[0].decode() + "\n")
    with open(log + ".requests", "ab") as f:  # each request whole, its length first
        f.write(b"%d\n" % (len(head) + 4 + len(body)) + head + b"\r\n\r\n" + body)
    for delay, reply in steps:
        time.sleep(delay)
        c.sendall(bytes.fromhex(reply))
    held.append(c)  # never closed: the relay must not wait for an end
"""


class FakeServe:
    """A process on the relay socket that reads each request whole and then plays ``steps``
    (``(delay, bytes)``), keeping the connection open; it logs each connection and request
    line."""

    def __init__(self, env: Env, steps: list[tuple[float, bytes]]) -> None:
        env.state.mkdir(mode=0o700, exist_ok=True)
        self.log = env.root / "fake.log"
        self.log.touch()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                FAKE_SERVE,
                str(env.state / SOCKET_FILE),
                str(self.log),
                json.dumps([[d, r.hex()] for d, r in steps]),
            ],
            stdout=subprocess.PIPE,
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline() == b"ready\n"
        self.proc.stdout.close()

    def connections(self) -> int:
        return self.log.read_text().count("accepted\n")

    def peers(self) -> list[str]:
        """The program of each client that connected (Linux: SO_PEERCRED, /proc)."""
        return [line[5:] for line in self.log.read_text().splitlines() if line.startswith("peer ")]

    def requests(self) -> list[bytes]:
        """Each request as it arrived, byte for byte."""
        data, out = (self.log.parent / (self.log.name + ".requests")).read_bytes(), []
        while data:
            size, _, data = data.partition(b"\n")
            out.append(data[: int(size)])
            data = data[int(size) :]
        return out

    def request_lines(self) -> list[str]:
        return [line for line in self.log.read_text().splitlines() if line.startswith("POST")]

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return make_env(tmp_path, monkeypatch)


def record(env: Env) -> list[str]:
    """The fields of ``serve.dead`` (checked to be private: 0600, ours)."""
    path = env.state / relay.DEAD_NAME
    st = path.lstat()
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
    assert st.st_uid == os.getuid()
    return path.read_text().split()


def socket_key(env: Env) -> list[str]:
    st = (env.state / SOCKET_FILE).lstat()
    return [str(st.st_dev), str(st.st_ino), str(st.st_ctime_ns)]


ANSWER = json.dumps(
    {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                            "permissionDecisionReason": "the fake serve's own answer"}}
).encode()  # fmt: skip
ANSWER_REPLY = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(ANSWER), ANSWER)


@pytest.mark.slow
def test_a_serve_that_acknowledges_then_falls_silent_is_dead_and_costs_one_event(
    env: Env,
) -> None:
    """The agent gives the catch-all 600 s: the relay does not wait them out. It runs the
    hooks itself, records the serve, and the next event does not ask that serve again."""
    fake = FakeServe(env, [(0, BEAT)])
    try:
        first = run_bare_relay(env, env.body("git push"), "--timeout", "600", timeout=30)
        assert first.returncode == 0, first.stderr
        assert denial(first) == ("deny", "no pushing")  # the hooks ran here
        assert b"stopped answering (no heartbeat for 2 s)" in first.stderr
        assert fake.request_lines() == [f"POST /claude/{relay.PROTOCOL}/hook HTTP/1.1"]
        assert record(env) == [*socket_key(env), str(fake.proc.pid), "silent"]

        second = run_bare_relay(env, env.body("ls"), "--timeout", "600", timeout=30)
        assert second.returncode == 0 and json.loads(second.stdout) == {}
        assert b"remembers it; running the hooks here" in second.stderr
        assert fake.connections() == 1  # the dead serve was not asked again
    finally:
        fake.stop()
    # Its process gone, the record ends (and is removed): the relay asks the socket again.
    third = run_bare_relay(env, env.body("ls"), timeout=30)
    assert json.loads(third.stdout) == {} and b"remembers it" not in third.stderr
    assert not (env.state / relay.DEAD_NAME).exists()


@pytest.mark.slow
def test_heartbeats_past_2_s_keep_the_relay_waiting_for_the_answer(env: Env) -> None:
    steps = [(0.0, BEAT)] + [(relay.HEARTBEAT_S, BEAT)] * 7 + [(0.0, ANSWER_REPLY)]  # 3.5 s
    fake = FakeServe(env, steps)
    try:
        done = run_bare_relay(env, env.body("ls"), "--timeout", "600", timeout=30)
    finally:
        fake.stop()
    assert done.returncode == 0, done.stderr
    assert denial(done) == ("deny", "the fake serve's own answer")  # serve's, not the hooks'
    assert b"running the hooks here" not in done.stderr
    assert not (env.state / relay.DEAD_NAME).exists()


@pytest.mark.slow
def test_a_serve_of_an_older_protocol_is_passed_over_and_remembered(env: Env) -> None:
    """An older serve answers the relay protocol's path with 404 before running anything: the
    hooks run here, once each, and that serve is not asked again while it lives."""
    fake = FakeServe(env, [(0, b"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\n{}")])
    try:
        first = run_bare_relay(env, env.body("git push"), timeout=30)
        assert denial(first) == ("deny", "no pushing")
        assert b"does not speak relay protocol v3" in first.stderr
        assert record(env)[-1] == "older"
        second = run_bare_relay(env, env.body("git push"), timeout=30)
        assert denial(second) == ("deny", "no pushing")
        assert fake.connections() == 1
    finally:
        fake.stop()


@pytest.mark.slow
def test_a_real_serve_heartbeats_through_slow_hooks(env: Env) -> None:
    """A hook that takes 3 s, through a real serve: answered by serve (the relay's silence
    rule never fires while the hooks run)."""
    env.adopted.write_text(
        json.dumps({"PreToolUse": [{"hooks": [{"type": "command", "command": "sleep 3; exit 0"}]}]})
    )
    proc = _serve_process(env)
    try:
        done = run_bare_relay(env, env.body("ls"), "--timeout", "600", timeout=60)
    finally:
        proc.terminate()
        proc.wait(20)
    assert done.returncode == 0 and json.loads(done.stdout) == {}, done.stderr
    assert b"running the hooks here" not in done.stderr
    assert not (env.state / relay.DEAD_NAME).exists()


@pytest.mark.slow
def test_a_stopped_serve_is_found_once_remembered_and_forgotten_when_it_is_gone(
    env: Env,
) -> None:
    proc = _serve_process(env)
    try:
        os.kill(proc.pid, signal.SIGSTOP)  # Ctrl-Z: connections are still accepted
        first = run_bare_relay(env, env.body("git push"), "--timeout", "600", timeout=30)
        assert denial(first) == ("deny", "no pushing")
        assert b"did not acknowledge within 2 s" in first.stderr
        assert record(env) == [*socket_key(env), str(proc.pid), "unacknowledged"]
        second = run_bare_relay(env, env.body("git push"), "--timeout", "600", timeout=30)
        assert denial(second) == ("deny", "no pushing")
        assert f"(pid {proc.pid})".encode() in second.stderr
        assert b"remembers it; running the hooks here" in second.stderr
    finally:
        proc.kill()  # (a stopped process takes SIGKILL)
        proc.wait(20)
    # Killed, it left its socket behind: the record names a process that is gone.
    third = run_bare_relay(env, env.body("git push"), timeout=30)
    assert denial(third) == ("deny", "no pushing")
    assert b"remembers it" not in third.stderr
    assert not (env.state / relay.DEAD_NAME).exists()
    # A new serve binds a new socket: the relays use it.
    new = _serve_process(env)
    try:
        served = run_bare_relay(env, env.body("git push"), timeout=30)
    finally:
        new.terminate()
        new.wait(20)
    assert denial(served) == ("deny", "no pushing")
    assert b"running the hooks here" not in served.stderr


@pytest.mark.slow
@pytest.mark.allow_leaks
def test_the_next_auto_started_serve_takes_the_socket_of_a_dead_one(env: Env) -> None:
    """The relay that found serve dead starts another (the auto-start rule); it takes the
    relay socket over, though the stopped serve still holds serve.lock, and the next event
    is answered by it. The stopped serve, resumed and stopped, leaves the new socket alone."""
    old = _serve_process(env)
    try:
        os.kill(old.pid, signal.SIGSTOP)
        dead_key = socket_key(env)
        first = run_bare_relay(
            env, env.body("git push"), environ={"TRIOHOOKS_NO_AUTOSTART": ""}, timeout=30
        )
        assert denial(first) == ("deny", "no pushing")
        assert b"did not acknowledge" in first.stderr
        deadline = time.monotonic() + 30
        while socket_key(env) == dead_key:
            assert time.monotonic() < deadline, (env.state / "serve.log").read_text()
            time.sleep(0.05)
        assert "taking the relay socket over" in (env.state / "serve.log").read_text()
        second = run_bare_relay(env, env.body("git push"), timeout=30)
        assert denial(second) == ("deny", "no pushing")
        assert b"running the hooks here" not in second.stderr
        assert not (env.state / relay.DEAD_NAME).exists()  # (it named the old socket)
        new_key = socket_key(env)
        os.kill(old.pid, signal.SIGCONT)
        old.terminate()
        old.wait(20)
        assert socket_key(env) == new_key  # the old serve removed only its own socket
        third = run_bare_relay(env, env.body("ls"), timeout=30)
        assert json.loads(third.stdout) == {} and b"running the hooks" not in third.stderr
        # serve.lock is free now: a serve that takes it takes the socket too (never fails
        # on the one that took it over without the lock).
        owner = _serve_process(env)
        try:
            deadline = time.monotonic() + 30
            while socket_key(env) == new_key:
                assert time.monotonic() < deadline and owner.poll() is None
                time.sleep(0.05)
            fourth = run_bare_relay(env, env.body("git push"), timeout=30)
            assert denial(fourth) == ("deny", "no pushing")
            assert b"running the hooks" not in fourth.stderr
        finally:
            owner.terminate()
            owner.wait(20)
    finally:
        if old.poll() is None:
            os.kill(old.pid, signal.SIGCONT)
            old.kill()
            old.wait(20)
        for proc in autostarted(env):
            proc.terminate()
            proc.wait(20)


# Each agent's blocking tool event and how its deny reads.
DENIES: list[tuple[str, str, list[str], Any]] = [
    ("claude", "PreToolUse", [], lambda o: o["hookSpecificOutput"]["permissionDecisionReason"]),
    ("codex", "PreToolUse", [], lambda o: o["hookSpecificOutput"]["permissionDecisionReason"]),
    ("qwen", "PreToolUse", [], lambda o: o["hookSpecificOutput"]["permissionDecisionReason"]),
    ("gemini", "BeforeTool", [], lambda o: o["decision"] == "deny" and o["reason"]),
    (
        "copilot",
        "",
        ["--event", "preToolUse"],
        lambda o: o["permissionDecision"] == "deny" and o["permissionDecisionReason"],
    ),
    (
        "cursor",
        "beforeShellExecution",
        [],
        lambda o: o["permission"] == "deny" and o["agent_message"],
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("agent", "event", "extra", "reason_of"), DENIES, ids=[d[0] for d in DENIES]
)
def test_a_dead_serve_whose_hooks_cannot_run_here_is_the_agents_own_deny(
    env: Env, agent: str, event: str, extra: list[str], reason_of: Any
) -> None:
    (env.root / "g" / "hooks.toml").write_text("[[hooks.pre_tool]]\nbroken = ")
    fake = FakeServe(env, [(0, BEAT)])
    payload: dict[str, Any] = {"session_id": "s", "cwd": str(env.project), "tool_name": "Bash"}
    if event:
        payload["hook_event_name"] = event
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-S", relay.__file__, agent, "--timeout", "600", *extra],
            input=json.dumps(payload).encode(),
            capture_output=True,
            env=env.environ(),
            cwd=env.project,
            timeout=30,
            check=False,
        )
    finally:
        fake.stop()
    assert done.returncode == 0, done.stderr  # a JSON answer, never exit 2
    reason = reason_of(json.loads(done.stdout))
    assert "triohooks serve stopped answering" in reason
    assert "the hooks cannot run here" in reason


# -- the record itself ---------------------------------------------------------------------------


def _bound_socket(env: Env) -> socket.socket:
    env.state.mkdir(mode=0o700, exist_ok=True)
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(env.state / SOCKET_FILE))
    return sock


def test_the_record_ends_with_age_another_socket_or_its_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = make_env(tmp_path, monkeypatch)
    directory = str(env.state)
    with _bound_socket(env):
        found = (env.state / SOCKET_FILE).lstat()
        relay.remember_dead(directory, found, "silent", os.getpid())
        said = relay.remembered_dead(directory, found)
        assert said.startswith("triohooks serve stopped answering") and f"pid {os.getpid()}" in said
        # Older than REMEMBER_S: over, and removed.
        past = time.time() - relay.REMEMBER_S - 1
        os.utime(env.state / relay.DEAD_NAME, (past, past))
        assert relay.remembered_dead(directory, found) == ""
        assert not (env.state / relay.DEAD_NAME).exists()
        # A process that is gone.
        gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, check=True, timeout=30)  # fmt: skip
        assert not psutil.pid_exists(int(gone.stdout))
        relay.remember_dead(directory, found, "silent", int(gone.stdout))
        assert relay.remembered_dead(directory, found) == ""
        # Without a pid (an OS that does not tell): only age and the socket end it.
        relay.remember_dead(directory, found, "unacknowledged", None)
        assert "did not acknowledge" in relay.remembered_dead(directory, found)
    (env.state / SOCKET_FILE).unlink()
    with _bound_socket(env):  # a new serve's socket
        assert relay.remembered_dead(directory, (env.state / SOCKET_FILE).lstat()) == ""
        assert not (env.state / relay.DEAD_NAME).exists()


@pytest.mark.parametrize(
    "text", ["", "1 2 3\n", "a b c d silent\n", "1 2 3 4 sleeping\n", "1 2 3 4 silent extra\n"]
)
def test_a_record_that_cannot_be_read_is_no_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    env = make_env(tmp_path, monkeypatch)
    with _bound_socket(env):
        found = (env.state / SOCKET_FILE).lstat()
        (env.state / relay.DEAD_NAME).write_text(text)
        assert relay.remembered_dead(str(env.state), found) == ""


def test_doctor_says_a_serve_a_relay_found_dead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`doctor`'s serve line: a serve a relay recorded dead is a problem, with the relay's
    reason; once the record ends (its socket replaced), a listening serve is fine again."""
    from triohooks.fronts.agent_checks import _relay_socket

    env = make_env(tmp_path, monkeypatch)
    with _bound_socket(env) as sock:
        sock.listen(1)
        assert _relay_socket(env.state).ok
        relay.remember_dead(
            str(env.state), (env.state / SOCKET_FILE).lstat(), "silent", os.getpid()
        )
        line = _relay_socket(env.state)
        assert not line.ok
        assert "found it dead" in line.text and "stopped answering" in line.text
    (env.state / SOCKET_FILE).unlink()
    with _bound_socket(env) as sock:  # a new serve's socket: the record is over
        sock.listen(1)
        assert _relay_socket(env.state).ok
