"""The relay contract, one table run against both clients (docs/agents.md, "The relay protocol",
"Which client runs"): the Python relay (as the catch-all starts it: precompiled, ``-I -S``) and
the native client (``relay_client.c``, built here with the system compiler). Each row runs the
installed catch-all command itself (``bash -c``), against a real serve, or a fake one on a real
unix socket where a misbehaving serve is what the row is about.

The native client is built once for the session with a wrapper as its interpreter: the
wrapper logs each hand-over's arguments (``$HANDED_LOG``) and then execs this interpreter, so
a row can say what the native client handed over (``--handed silent:PID`` ...) and that on the
fast path it handed nothing over at all."""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from triohooks.agents.adopt import relay_command
from triohooks.agents.spec import NATIVE_RELAY, RELAY_BOOT
from triohooks.fronts import relay, relay_build
from triohooks.fronts.server import SOCKET_FILE

from .helpers import cli_here
from .test_agent_endpoint import FORGED_REPLY, GUARD, Env, _fake_server, _serve_process, make_env
from .test_relay_liveness import ANSWER_REPLY, BEAT, FakeServe, record, socket_key

pytestmark = pytest.mark.slow

CLIENTS = ("python", "native")
NO_COMPILER = "no C compiler here ($CC, cc on PATH, ziglang): the native client cannot be built"


@pytest.fixture(scope="session")
def native_build(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """The native client, built as install builds it, but handing over to a logging wrapper."""
    found = relay_build.compilers()
    if not found:
        return None
    where = tmp_path_factory.mktemp("native")
    wrapper = where / "python"
    wrapper.write_text(
        # (-I -S -c BOOT DIR, then the relay's arguments: those are logged)
        '#!/bin/sh\nlog() { shift 5; printf "%s\\n" "$*" >> "$HANDED_LOG"; }\n'
        '[ -n "$HANDED_LOG" ] && log "$@"\n'
        f'exec {shlex.quote(sys.executable)} "$@"\n'
    )
    wrapper.chmod(0o755)
    binary = where / "relay"
    subprocess.run(
        [*found[0], *relay_build.FLAGS, *relay_build.defines(str(wrapper)), "-o", str(binary),
         str(relay_build.SOURCE)],
        check=True, timeout=120, capture_output=True,
    )  # fmt: skip
    return binary


class Client:
    def __init__(self, kind: str, env: Env) -> None:
        self.kind = kind
        self.env = env
        self.log = env.root / "handed.log"

    def run(
        self,
        body: bytes,
        *,
        agent: str = "claude",
        timeout: float = 600,
        event: str = "",
        scope: str = "user",
        environ: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        """The catch-all an install writes for ``agent`` at ``scope``, as the agent runs it."""
        command = relay_command(
            agent,  # type: ignore[arg-type]
            scope,  # type: ignore[arg-type]
            timeout,
            relay_script=relay.__file__,
            event=event,
        )
        env = {
            **self.env.environ(),
            "HANDED_LOG": str(self.log),
            # The project form's console script, as on a machine where triohooks is installed.
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            **(environ or {}),
        }
        return subprocess.run(
            ["bash", "-c", command],
            input=body,
            capture_output=True,
            env=env,
            cwd=self.env.project,
            timeout=60,
            check=False,
        )

    def handed(self) -> list[list[str]]:
        """The native client's hand-overs: the Python relay's arguments after the boot."""
        if not self.log.exists():
            return []
        return [line.split() for line in self.log.read_text().splitlines()]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return make_env(tmp_path, monkeypatch)


@pytest.fixture(params=CLIENTS)
def client(request: pytest.FixtureRequest, env: Env, native_build: Path | None) -> Client:
    if request.param == "native":
        if native_build is None:
            pytest.skip(NO_COMPILER)
        env.state.mkdir(mode=0o700, exist_ok=True)
        shutil.copy2(native_build, env.state / NATIVE_RELAY)
    return Client(request.param, env)


def reason(done: subprocess.CompletedProcess[bytes]) -> tuple[str, str]:
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)["hookSpecificOutput"]
    return out["permissionDecision"], out["permissionDecisionReason"]


def handed_over(client: Client, what: str | None) -> None:
    """The native client handed the event over once, saying ``what`` (None: nothing: the
    Python relay does everything as when it runs alone); the Python relay hands nothing."""
    if client.kind == "python":
        assert client.handed() == []
        return
    [args] = client.handed()
    assert args[0] == "claude"
    assert ("--handed" in args) == (what is not None), args
    if what is not None:
        assert args[args.index("--handed") + 1] == what


# -- the fast path ---------------------------------------------------------------------------


def test_the_answer_is_printed_and_exit_0(client: Client) -> None:
    proc = _serve_process(client.env)
    try:
        push = client.run(client.env.body("git push"))
        ls = client.run(client.env.body("ls"))
    finally:
        proc.terminate()
        proc.wait(20)
    assert reason(push) == ("deny", "no pushing")
    assert ls.returncode == 0 and ls.stdout == b"{}\n" and ls.stderr == b""
    assert b"running the hooks here" not in push.stderr
    assert client.handed() == []  # the native client answered both itself


def test_heartbeats_are_followed_to_the_answer(client: Client) -> None:
    steps = [(0.0, BEAT)] + [(relay.HEARTBEAT_S, BEAT)] * 5 + [(0.0, ANSWER_REPLY)]  # 2.5 s
    fake = FakeServe(client.env, steps)
    try:
        done = client.run(client.env.body("ls"))
    finally:
        fake.stop()
    assert reason(done) == ("deny", "the fake serve's own answer")
    assert fake.request_lines() == [f"POST /claude/{relay.PROTOCOL}/hook?scope=user HTTP/1.1"]
    assert client.handed() == []


def test_the_native_clients_request_is_the_python_relays_byte_for_byte(
    env: Env, native_build: Path | None
) -> None:
    """Each client started directly (no bash between) with one environment, a copilot
    catch-all's arguments: the two requests serve gets are the same bytes."""
    if native_build is None:
        pytest.skip(NO_COMPILER)
    fake = FakeServe(env, [(0.0, BEAT), (0.0, ANSWER_REPLY)])
    args = ["copilot", "--event", "preToolUse", "--timeout", "30", "--scope", "project"]
    python = [sys.executable, "-I", "-S", "-c", RELAY_BOOT, str(Path(relay.__file__).parent)]
    # (a UTF-8 locale: Python would otherwise coerce LC_CTYPE in its own environment)
    environ = {**env.environ(), "LC_ALL": "C.UTF-8", "SESSION_VAR": "a=b\tc"}
    try:
        for command in ([str(native_build), *args], [*python, *args]):
            done = subprocess.run(
                command, input=b'{"toolName": "bash"}', capture_output=True, env=environ,
                timeout=60, check=False,
            )  # fmt: skip
            assert reason(done) == ("deny", "the fake serve's own answer")
        native, python_made = fake.requests()
    finally:
        fake.stop()
    assert native == python_made
    assert native.startswith(
        f"POST /copilot/{relay.PROTOCOL}/hook?scope=project&event=preToolUse HTTP/1.1\r\n".encode()
    )
    assert native.endswith(b"\0TRIOHOOKS_RELAY=1" + b'{"toolName": "bash"}')


def test_the_environment_block_reaches_the_hooks(client: Client) -> None:
    client.env.adopted.write_text(
        json.dumps({"PreToolUse": [{"hooks": [{"type": "command",
                    "command": 'echo "$SESSION_VAR:$TRIOHOOKS_RELAY" >&2; exit 2'}]}]})
    )  # fmt: skip
    proc = _serve_process(client.env)
    try:
        done = client.run(client.env.body("ls"), environ={"SESSION_VAR": "from-agent"})
    finally:
        proc.terminate()
        proc.wait(20)
    assert reason(done) == ("deny", "from-agent:1")
    assert client.handed() == []


def test_the_event_of_a_copilot_catch_all_reaches_serve(client: Client) -> None:
    """Copilot CLI's input names no event: the catch-all's --event goes in the query and serve
    adds it (a hook input without one would be unreadable: a deny of another reason)."""
    (client.env.root / "g" / "hooks.toml").write_text(
        '[[hooks.pre_tool]]\ncommand = \'grep -q "git push" && { echo "no pushing here" >&2; '
        "exit 2; }; exit 0'\n"
    )
    body = json.dumps(
        {"toolName": "bash", "toolArgs": json.dumps({"command": "git push"}),
         "cwd": str(client.env.project), "timestamp": 1}
    ).encode()  # fmt: skip
    fake_ls = body.replace(b"git push", b"ls")
    proc = _serve_process(client.env)
    try:
        push = client.run(body, agent="copilot", event="preToolUse")
        ls = client.run(fake_ls, agent="copilot", event="preToolUse")
    finally:
        proc.terminate()
        proc.wait(20)
    assert push.returncode == 0, push.stderr
    out = json.loads(push.stdout)
    assert (
        out["permissionDecision"] == "deny" and "no pushing here" in out["permissionDecisionReason"]
    ), out
    assert json.loads(ls.stdout) == {}, ls.stderr
    assert b"running the hooks here" not in push.stderr
    assert client.handed() == []


def test_the_scope_a_catch_all_names_reaches_serve(client: Client) -> None:
    """The user-scope catch-all runs the user's hooks; a project-scope one (the portable
    command: the native client from the user's state dir, else triohooks-relay from PATH)
    does not run them again."""
    proc = _serve_process(client.env)
    try:
        user = client.run(client.env.body("git push"), scope="user")
        project = client.run(client.env.body("git push"), scope="project")
    finally:
        proc.terminate()
        proc.wait(20)
    assert reason(user) == ("deny", "no pushing")
    assert project.returncode == 0 and json.loads(project.stdout) == {}, project.stderr
    assert client.handed() == []


# -- a dead serve -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("steps", "word", "said"),
    [
        ([(0.0, BEAT)], "silent", b"stopped answering (no heartbeat for 2 s)"),
        ([(0.0, BEAT), (0.5, BEAT), (0.5, BEAT)], "silent", b"stopped answering"),
        (
            [(0.0, BEAT), (0.0, b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{}")],
            "silent",
            b"stopped answering",
        ),
        ([], "unacknowledged", b"did not acknowledge within 2 s"),
        (
            [(0.0, b"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\n{}")],
            "older",
            b"does not speak relay protocol v3",
        ),
    ],
    ids=["silent-after-ack", "stopped-mid-heartbeat", "stopped-mid-answer", "no-ack", "404-older"],
)
def test_a_dead_serve_is_recorded_and_the_hooks_run_here(
    client: Client, steps: list[tuple[float, bytes]], word: str, said: bytes
) -> None:
    fake = FakeServe(client.env, steps)
    try:
        done = client.run(client.env.body("git push"))
        assert record(client.env) == [*socket_key(client.env), str(fake.proc.pid), word]
        again = client.run(client.env.body("git push"))
        assert fake.connections() == 1  # the record holds: that serve is not asked again
    finally:
        fake.stop()
    assert reason(done) == ("deny", "no pushing")
    assert said in done.stderr and b"running the hooks here" in done.stderr
    assert reason(again) == ("deny", "no pushing")
    assert b"remembers it; running the hooks here" in again.stderr
    if client.kind == "native":
        # Found dead by the native client: the Python relay recorded it; then the record is
        # there, and the next event is handed over without asking.
        first, second = client.handed()
        assert first[first.index("--handed") + 1] == f"{word}:{fake.proc.pid}"
        assert "--handed" not in second


def test_the_deadline_is_the_agents_own_deny(client: Client) -> None:
    """Heartbeats, but no answer 2 s before the catch-all's timeout (3 s): a JSON deny."""
    fake = FakeServe(client.env, [(0.0, BEAT)] + [(relay.HEARTBEAT_S, BEAT)] * 20)
    try:
        done = client.run(client.env.body("ls"), timeout=3)
    finally:
        fake.stop()
    decision, why = reason(done)
    assert decision == "deny" and "triohooks serve did not answer within 1 s" in why
    assert not (client.env.state / relay.DEAD_NAME).exists()  # alive: not recorded
    if client.kind == "native":
        handed_over(client, "late")


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        (
            b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 2\r\n\r\n{}",
            b"server: the server answered 'HTTP/1.1 500 Internal Server Error'",
        ),
        (
            BEAT + b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n{}",
            b"server: the server's answer has no usable Content-Length",
        ),
        (BEAT + b"HTTP/1.1 200 OK\r\n\r\n{}", b"no usable Content-Length"),
    ],
    ids=["500", "answer-too-long", "no-length"],
)
def test_a_reply_that_is_no_answer_runs_the_hooks_here(
    client: Client, reply: bytes, said: bytes
) -> None:
    fake = FakeServe(client.env, [(0.0, reply)])
    try:
        done = client.run(client.env.body("git push"))
    finally:
        fake.stop()
    assert reason(done) == ("deny", "no pushing")
    assert said in done.stderr and b"running the hooks here" in done.stderr
    assert fake.connections() == 1  # asked once: the Python relay did not ask again
    assert not (client.env.state / relay.DEAD_NAME).exists()
    if client.kind == "native":
        handed_over(client, "unexpected")


# -- handed over at once ------------------------------------------------------------------------


def test_without_a_serve_the_python_relay_runs_the_hooks(client: Client) -> None:
    done = client.run(client.env.body("git push"))
    assert reason(done) == ("deny", "no pushing")
    handed_over(client, None)


def test_a_recorded_dead_serve_is_handed_over_unasked(client: Client) -> None:
    fake = FakeServe(client.env, [(0.0, ANSWER_REPLY)])
    try:
        found = (client.env.state / SOCKET_FILE).lstat()
        relay.remember_dead(str(client.env.state), found, "silent", fake.proc.pid)
        done = client.run(client.env.body("git push"))
        assert fake.connections() == 0
    finally:
        fake.stop()
    assert reason(done) == ("deny", "no pushing")
    assert b"remembers it; running the hooks here" in done.stderr
    handed_over(client, None)


def test_a_hook_that_runs_the_relay_again_is_a_loop(client: Client) -> None:
    proc = _serve_process(client.env)
    try:
        done = client.run(client.env.body("ls"), environ={relay.LOOP_VAR: "1"})
    finally:
        proc.terminate()
        proc.wait(20)
    decision, why = reason(done)
    assert decision == "deny" and "(a loop)" in why
    handed_over(client, None)


def test_an_input_over_16_mib_is_denied_without_asking_serve(client: Client) -> None:
    fake = FakeServe(client.env, [(0.0, ANSWER_REPLY)])
    big = b'{"hook_event_name": "PreToolUse", "x": "' + b"a" * relay.MAX_INPUT_BYTES + b'"}'
    try:
        done = client.run(big)
        assert fake.connections() == 0
    finally:
        fake.stop()
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) != json.loads(ANSWER_REPLY.partition(b"\r\n\r\n")[2])
    handed_over(client, None)


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to run a server as another user")
def test_a_serve_of_another_uid_cannot_answer(client: Client) -> None:
    client.env.state.mkdir(mode=0o700, exist_ok=True)
    proc = _fake_server(client.env.state / SOCKET_FILE, FORGED_REPLY, uid=65534)
    try:
        done = client.run(client.env.body("git push"))
    finally:
        proc.kill()
        proc.wait()
    assert reason(done) == ("deny", "no pushing")
    assert b"served by uid 65534" in done.stderr
    handed_over(client, None)


# -- the build, and the command install writes ---------------------------------------------------


def test_the_native_client_speaks_the_python_relays_constants() -> None:
    """Its #defines are relay.py's values (the one protocol)."""
    source = relay_build.SOURCE.read_text()
    defined = dict(
        line.split()[1:3] for line in source.splitlines() if line.startswith("#define ")
        and len(line.split()) >= 3
    )  # fmt: skip
    assert defined["PROTOCOL"] == f'"{relay.PROTOCOL}"'
    assert defined["SOCKET_NAME"] == f'"{relay.SOCKET_NAME}"'
    assert defined["DEAD_NAME"] == f'"{relay.DEAD_NAME}"'
    assert defined["LOOP_VAR"] == f'"{relay.LOOP_VAR}"'
    assert defined["ENV_LENGTH_HEADER"] == f'"{relay.ENV_LENGTH_HEADER}"'
    assert float(defined["SILENCE_S"]) == relay.SILENCE_S
    assert float(defined["CONNECT_TIMEOUT_S"]) == relay.CONNECT_TIMEOUT_S
    assert float(defined["DEADLINE_MARGIN_S"]) == relay.DEADLINE_MARGIN_S
    assert float(defined["DEFAULT_TIMEOUT_S"]) == relay.DEFAULT_TIMEOUT_S
    assert f'"{relay.BEAT.decode()}"'.replace("\r", "\\r").replace("\n", "\\n") in source
    assert "MAX_INPUT_BYTES (16L * 1024 * 1024)" in source
    assert relay.MAX_INPUT_BYTES == relay.MAX_ANSWER_BYTES == 16 * 1024 * 1024


def _fresh(env: Env) -> None:
    """Claude Code's user settings with the guard in them, before any install."""
    (env.home / ".claude" / "settings.json").write_text(json.dumps({"hooks": GUARD}))
    env.adopted.unlink()


def _install(env: Env, extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return cli_here(
        ["claude", "install", "--scope", "user"],
        env={**env.environ(), **extra},
        cwd=env.project,
        timeout=120,
    )


def _catch_all(env: Env) -> str:
    settings = json.loads((env.home / ".claude" / "settings.json").read_text())
    command: str = settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    return command


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/PID/exe")
def test_install_builds_the_native_client_and_the_catch_all_runs_it(env: Env) -> None:
    if not relay_build.compilers():
        pytest.skip(NO_COMPILER)
    _fresh(env)
    done = _install(env, {})
    assert done.returncode == 0, done.stderr
    native = env.state / NATIVE_RELAY
    assert "relay client: native" in done.stdout, done.stdout + done.stderr
    st = native.stat()
    assert stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == os.getuid()
    assert stat.S_IMODE(env.state.stat().st_mode) == 0o700
    # Installed again, nothing changed: not rebuilt.
    again = _install(env, {})
    assert again.returncode == 0 and native.stat().st_mtime_ns == st.st_mtime_ns
    command = _catch_all(env)
    assert command.startswith(f"[ -x {shlex.quote(str(native))} ] && exec ")
    fake = FakeServe(env, [(0.0, BEAT), (0.0, ANSWER_REPLY)])
    try:
        ran = subprocess.run(
            ["bash", "-c", command], input=env.body("ls"), capture_output=True,
            env=env.environ(), timeout=60, check=False,
        )  # fmt: skip
        assert fake.peers() == [str(native)]  # the native client asked serve
    finally:
        fake.stop()
    assert reason(ran) == ("deny", "the fake serve's own answer")


def test_without_a_compiler_the_catch_all_runs_the_python_relay_precompiled(env: Env) -> None:
    _fresh(env)
    nowhere = str(env.root / "no-bin")
    done = _install(env, {"CC": "/nonexistent/cc", "PATH": nowhere})
    assert done.returncode == 0, done.stderr
    assert "warning: the native relay client was not built (/nonexistent/cc:" in done.stderr
    assert "relay client: the Python relay" in done.stdout
    assert not (env.state / NATIVE_RELAY).exists()
    cached = Path(__import__("importlib.util").util.cache_from_source(relay.__file__))
    assert cached.is_file()
    command = _catch_all(env)
    assert f"-I -S -c '{RELAY_BOOT}' {shlex.quote(str(Path(relay.__file__).parent))}" in command
    ran = subprocess.run(
        ["/bin/bash", "-c", command], input=env.body("git push"), capture_output=True,
        env=env.environ(), timeout=60, check=False,
    )  # fmt: skip
    assert reason(ran) == ("deny", "no pushing")
    status = relay_build.status(str(env.state))
    assert status.kind == "python" and "/nonexistent/cc" in status.why
    validate = cli_here(["claude", "validate"], env=env.environ(), cwd=env.project, timeout=120)
    assert "relay client: the Python relay (the build failed: /nonexistent/cc: " in validate.stdout
    assert "runs the Python relay " in validate.stdout


def test_a_build_that_fails_removes_an_older_client_and_says_why(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    env.state.mkdir(mode=0o700)
    stale = env.state / NATIVE_RELAY
    stale.write_text("#!/bin/sh\nexit 0\n")
    stale.chmod(0o700)
    broken = env.root / "cc"
    broken.write_text("#!/bin/sh\necho 'relay_client.c:1: error: no way' >&2\nexit 1\n")
    broken.chmod(0o755)
    monkeypatch.setenv("CC", str(broken))
    client = relay_build.build(str(env.state))
    assert client.kind == "python"
    assert client.why == f"{broken}: relay_client.c:1: error: no way"
    assert not stale.exists()


def test_the_client_a_catch_all_runs_is_recognized_as_ours_in_every_form() -> None:
    """The commands of older installs (the user form running relay.py as a script, the
    project form without the native client) are still catch-alls of ours."""
    from triohooks.agents.config import catch_all_scope, parse_hooks
    from triohooks.agents.spec import LEGACY_RELAYS, LOCAL_RELAY, PORTABLE_RELAY, Level

    def hook(command: str) -> Any:
        hooks = {"PreToolUse": [{"hooks": [{"type": "command", "command": command}]}]}
        [parsed] = parse_hooks(
            "claude", Level("user", Path("s"), False), "s", hooks, [], keep_ours=True
        )
        return parsed

    words = {"agent": "claude", "event": "", "timeout": "605", "python": "/usr/bin/python3"}
    now_user = LOCAL_RELAY.format(**words, scope=" --scope user", native="/s/relay",
                                  relay_dir="/t/fronts")  # fmt: skip
    assert catch_all_scope(hook(now_user)) == "user"
    assert catch_all_scope(hook(PORTABLE_RELAY.format(**words, scope=" --scope project"))) == (
        "project"
    )
    old_user = LEGACY_RELAYS[1].format(**words, scope=" --scope user", script="/t/relay.py")
    assert catch_all_scope(hook(old_user)) == "user"
    old_project = LEGACY_RELAYS[0].format(**words, scope=" --scope project")
    assert catch_all_scope(hook(old_project)) == "project"
    assert catch_all_scope(hook(LEGACY_RELAYS[2].format(**words))) == ""
    # Two different paths where the form names one: not ours.
    mixed = now_user.replace("exec /s/relay", "exec /elsewhere/relay")
    assert catch_all_scope(hook(mixed)) is None


def test_the_client_is_built_only_into_a_private_state_dir(tmp_path: Path) -> None:
    """Every catch-all execs it: a state dir others can write in gets none (the Python relay
    runs, saying why)."""
    state = tmp_path / "state"
    state.mkdir()
    state.chmod(0o777)
    client = relay_build.build(str(state))
    assert client.kind == "python"
    assert client.why == f"not built: {state} is not a directory only you can write in"
    assert not (state / NATIVE_RELAY).exists()


def test_it_is_rebuilt_only_when_what_it_is_built_from_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not relay_build.compilers():
        pytest.skip(NO_COMPILER)
    state = str(tmp_path / "state")
    native = relay_build.native_path(state)
    assert relay_build.build(state).kind == "native"
    built = native.stat().st_mtime_ns
    assert relay_build.build(state).why.startswith("built with ")
    assert native.stat().st_mtime_ns == built
    monkeypatch.setattr(relay_build, "FLAGS", (*relay_build.FLAGS, "-DTRIOHOOKS_CHANGED"))
    assert relay_build.status(state).why.startswith("it was built from another triohooks")
    assert relay_build.build(state).kind == "native"
    assert native.stat().st_mtime_ns != built
    assert relay_build.status(state).why.startswith("built with ")


def test_without_a_system_compiler_the_ziglang_package_builds_it(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No ``$CC``, no ``cc`` on PATH: the ``[native]`` extra's compiler builds the client,
    and the catch-all runs it."""
    if importlib.util.find_spec("ziglang") is None:
        pytest.skip("the ziglang package (the [native] extra) is not installed")
    monkeypatch.delenv("CC", raising=False)
    path = os.environ["PATH"]
    monkeypatch.setenv("PATH", str(env.root / "no-bin"))
    built = relay_build.build(str(env.state))
    assert built.kind == "native", built.why
    assert built.why == f"built with {shlex.join([sys.executable, '-m', 'ziglang', 'cc'])}"
    monkeypatch.setenv("PATH", path)  # (the catch-all runs with the test's PATH again)
    fake = FakeServe(env, [(0.0, BEAT), (0.0, ANSWER_REPLY)])
    try:
        done = Client("native", env).run(env.body("ls"))
        assert fake.peers() == [built.path]
    finally:
        fake.stop()
    assert reason(done) == ("deny", "the fake serve's own answer")


@pytest.mark.parametrize(
    ("value", "read"),
    [
        ("silent:4242", "silent:4242"),
        ("unacknowledged:0", "unacknowledged:0"),
        ("older:7", "older:7"),
        ("late", "late"),
        ("unexpected", "unexpected"),
        ("silent", None),
        ("silent:x", None),
        ("late:1", None),
        ("asleep:1", None),
    ],
)
def test_what_the_python_relay_takes_from_a_native_client(value: str, read: str | None) -> None:
    parsed = relay._parse(["claude", "--timeout", "5", "--handed", value])
    assert (parsed[-1] if parsed is not None else None) == read


def test_serve_rebuilds_a_client_an_older_triohooks_built(env: Env) -> None:
    """An upgrade of triohooks without running install again: the next serve to start brings
    the native client up to date, in the background, and says so in its log."""
    if not relay_build.compilers():
        pytest.skip(NO_COMPILER)
    env.state.mkdir(mode=0o700)
    state = str(env.state)
    assert relay_build.build(state).kind == "native"
    stamp = env.state / relay_build.STAMP_NAME
    stamp.write_bytes(stamp.read_bytes().replace(relay_build.digest().encode(), b"0" * 64))
    assert relay_build.status(state).why.startswith("it was built from another triohooks")
    proc = _serve_process(env)
    try:
        deadline = time.monotonic() + 60
        while not relay_build.status(state).why.startswith("built with "):
            assert time.monotonic() < deadline, "serve did not rebuild the client"
            time.sleep(0.05)
    finally:
        proc.terminate()
        proc.wait(20)
    # and a serve that starts with the client up to date builds nothing
    built = relay_build.native_path(state).stat().st_mtime_ns
    assert relay_build.refresh(state) is None
    assert relay_build.native_path(state).stat().st_mtime_ns == built
