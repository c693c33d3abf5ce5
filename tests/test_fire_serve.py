"""``triohooks fire``: one path. The command asks the user's serve over its relay socket
(``/fire/v3/hook``) and opens its own engine only when serve cannot answer the call as it would
(docs/cli.md, "fire"); both ways give the same stdout, stderr and exit code.

One real ``serve`` (a child process) answers the whole table; each row is fired through it and
again with the internal ``_TRIOHOOKS_FIRE_HERE`` variable, which makes the command open its own
engine, on the same files and payload. Every run records the modules it imported: a fire serve
answered imports the standard library and the relay's client, nothing else.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import trio

from triohooks.fronts.cli import FIRE_HERE_VAR
from triohooks.fronts.fire import judge_differs, settings_differ
from triohooks.fronts.relay import DEAD_NAME
from triohooks.fronts.server import SOCKET_FILE

from .helpers import bash_hook, write_json_hooks, write_toml_hooks

pytestmark = pytest.mark.slow

#: Runs the real console entry (what the ``triohooks`` script calls) on argv[2:], then writes
#: every module the process imported to argv[1]. stdout, stderr and the exit code are the CLI's.
WRAPPER = textwrap.dedent(
    """
    import sys
    from triohooks.fronts.cli import main
    out, argv = sys.argv[1], sys.argv[2:]
    sys.argv = ["triohooks", *argv]
    try:
        code = main()
    except SystemExit as exc:
        code = exc.code
    modules = sorted(sys.modules)
    sys.stdout.flush()
    with open(out, "w") as f:
        f.write("\\n".join(modules))
    sys.exit(code)
    """
)

TIMEOUT_S = 60
#: All of triohooks a fire that serve answered imports.
SERVED_MODULES = frozenset(
    {"triohooks", "triohooks.fronts", "triohooks.fronts.cli", "triohooks.fronts.relay"}
)
#: Never in a fire of the plain commands that read the config, whatever the config.
NEVER = (
    "trio",
    "sniffio",
    "outcome",
    "httpx",
    "httpx2",
    "httpcore",
    "h11",
    "opentelemetry",
    "psutil",
    "asyncio",
    "triohooks.actors",
    "triohooks.engine",
    "triohooks.agents",
    "triohooks.handlers.http",
    "triohooks.handlers.runner",
)


def hits(modules: frozenset[str], names: tuple[str, ...]) -> list[str]:
    """The modules that are one of ``names`` or a submodule of one."""
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


@dataclass(frozen=True)
class Fired:
    returncode: int
    stdout: str
    stderr: str
    modules: frozenset[str]

    @property
    def served(self) -> bool:
        """serve answered: the command never loaded msgspec (nor anything of the engine)."""
        return "msgspec" not in self.modules


class Serve:
    """A real ``triohooks serve`` with its config dir and private state dir."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.config = root / "g"
        self.state = root / "state"
        self.config.mkdir()
        self.state.mkdir(mode=0o700)
        self.proc: subprocess.Popen[bytes] | None = None

    def environ(self) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if k != FIRE_HERE_VAR and not k.startswith("TRIOHOOKS_JUDGE_")
        }
        return env | {
            "TRIOHOOKS_CONFIG_DIR": str(self.config),
            "TRIOHOOKS_STATE_DIR": str(self.state),
        }

    def start(self) -> None:
        home = self.root / "home"
        home.mkdir(exist_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "triohooks", "serve", "--port", "0", "--workspace", str(home)],
            env=self.environ(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while not (self.state / SOCKET_FILE).exists():  # the socket is the state waited for
            assert time.monotonic() < deadline and self.proc.poll() is None
            time.sleep(0.02)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.terminate()
            self.proc.wait(timeout=TIMEOUT_S)

    def audit_lines(self) -> int:
        audit = self.state / "audit"
        if not audit.exists():
            return 0
        return sum(len(p.read_text().splitlines()) for p in audit.iterdir())


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    running = Serve(tmp_path_factory.mktemp("serve"))
    running.start()
    try:
        yield running
    finally:
        running.stop()


@dataclass
class Env:
    """One row's workspace and files; the global config dir and state dir are serve's."""

    root: Path
    serve: Serve
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def ws(self) -> Path:
        return self.root / "ws"

    @property
    def config(self) -> Path:
        return self.serve.config

    def fire(self, *args: str, stdin: str = "{}", here: bool = False) -> Fired:
        self.ws.mkdir(parents=True, exist_ok=True)
        out = self.root / "modules.txt"
        env = self.serve.environ() | self.extra_env
        if here:
            env[FIRE_HERE_VAR] = "1"
        done = subprocess.run(
            [sys.executable, "-c", WRAPPER, str(out), "fire", *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            cwd=self.ws,
            timeout=TIMEOUT_S,
            check=False,
        )
        modules = frozenset(out.read_text().split("\n")) if out.exists() else frozenset()
        out.unlink(missing_ok=True)
        return Fired(done.returncode, done.stdout, done.stderr, modules)


def fresh_config(serve: Serve, row: int) -> None:
    """An empty global config dir for the next row."""
    for path in serve.config.iterdir():
        path.unlink()


def stamp_config(serve: Serve, row: int) -> None:
    """What the row wrote, given times of its own: a rewrite within one clock tick (same
    size, perhaps the same inode) is still a change serve sees."""
    for path in serve.config.iterdir():
        when = 1_700_000_000_000_000_000 + row * 1_000_000_000
        os.utime(path, ns=(when, when))


def audit_lines(state: Path) -> int:
    audit = state / "audit"
    if not audit.exists():
        return 0
    return sum(len(p.read_text().splitlines()) for p in audit.iterdir())


# -- the cases ------------------------------------------------------------------------------------

READ = json.dumps({"tool": "Read", "args": {"path": "src/app.py"}})
BASH_LS = json.dumps({"tool": "Bash", "args": {"command": "ls -la"}})

OTHER_TOOLS_TOML = """
[[hooks.pre_tool]]
match = "Bash"
command = "exit 2"

[[hooks.pre_tool]]
match = "Edit"
command = "true"

[[hooks.post_tool]]
match = "Write"
command = "true"

[[hooks.post_tool_failure]]
match = "Write"
command = "true"

[[hooks.prompt_submit]]
command = "true"
"""


def no_config(e: Env) -> None:
    pass


def toml_other_tools(e: Env) -> None:
    write_toml_hooks(e.config, OTHER_TOOLS_TOML)


def json_other_tool(e: Env) -> None:
    write_json_hooks(
        e.config,
        [bash_hook("bash-only", "exit 2", matcher={"tool_name": "Bash"})],
    )


def json_regex_no_match(e: Env) -> None:
    write_json_hooks(
        e.config,
        [bash_hook("rm-guard", "exit 2", matcher={"args_jsonpath": "$", "match_regex": "rm -rf"})],
    )


def if_read_rule(e: Env) -> None:
    write_toml_hooks(e.config, '[[hooks.pre_tool]]\nif = "read(.env)"\ncommand = "exit 2"\n')


def if_shell_rule(e: Env) -> None:
    write_toml_hooks(e.config, '[[hooks.pre_tool]]\nif = "shell(git push *)"\ncommand = "exit 2"\n')


def untrusted_workspace(e: Env) -> None:
    # A hook that would match everything, and a field the strict dialect rejects: untrusted,
    # it does not run, and its error is a warning (logged by the loader, both ways).
    write_toml_hooks(e.ws / ".agents", '[[hooks.pre_tool]]\ncommand = "exit 2"\nbogus = 1\n')


def trusted_other_tool(e: Env) -> None:
    write_toml_hooks(e.ws / ".agents", '[[hooks.pre_tool]]\nmatch = "Bash"\ncommand = "exit 2"\n')


def broken_config(e: Env) -> None:
    write_toml_hooks(e.config, '[[hooks.pre_tool]]\nmatch = "Bash"\ncommand = ""\n')


def extra_config(e: Env) -> None:
    write_toml_hooks(e.root / "extra", OTHER_TOOLS_TOML)


def judge_misconfigured(e: Env) -> None:
    e.extra_env["TRIOHOOKS_JUDGE_BASE_URL"] = "not-a-url"
    toml_other_tools(e)


def background_post_tool(e: Env) -> None:
    # TOML post_tool hooks run in the background: a match must go through the engine (queued).
    write_toml_hooks(
        e.config, '[[hooks.post_tool]]\nmatch = "Write"\ncommand = "cat >> ran; echo >> ran"\n'
    )


def failure_hook(e: Env) -> None:
    write_toml_hooks(
        e.config,
        '[[hooks.post_tool_failure]]\nmatch = "Write"\ncommand = "cat >> ran; echo >> ran"\n',
    )


@dataclass(frozen=True)
class Case:
    name: str
    setup: Callable[[Env], None]
    #: The fire arguments; ``{root}`` stands for the test's directory.
    args: tuple[str, ...]
    stdin: str = "{}"
    #: The exit code both runs must have (1: a usage, payload or config error).
    returncode: int = 0
    #: Fails before anything starts (a bad event name or payload): no engine either way.
    early: bool = False
    #: What stderr must contain (both runs).
    message: str = ""
    #: Lines the hooks append to ws/ran per run (a background hook's proof that it ran).
    ran_lines: int = 0
    #: serve answers it (False: an option or setting serve does not read the config by).
    served: bool = True


CASES = [
    Case("no config", no_config, ("pre_tool",), READ),
    Case("no config, prompt_submit", no_config, ("prompt_submit",), '{"prompt": "hi"}'),
    Case(
        "no config, session_end",
        no_config,
        ("session_end",),
        '{"session_id": "s1"}',
    ),
    Case("toml hooks for other tools", toml_other_tools, ("pre_tool",), READ),
    Case(
        "toml hooks, permission_request",
        toml_other_tools,
        ("permission_request",),
        READ,
    ),
    Case("toml hooks, post_tool", toml_other_tools, ("post_tool",), READ),
    Case(
        "post_tool with an error, failure hook for another tool",
        toml_other_tools,
        ("post_tool",),
        json.dumps({"tool": "Read", "args": {}, "error": "ENOENT"}),
    ),
    Case("json matcher on another tool", json_other_tool, ("pre_tool",), READ),
    Case("json regex that does not match", json_regex_no_match, ("pre_tool",), BASH_LS),
    Case(
        "json alias name and fields",
        json_other_tool,
        ("pre_tool_use",),
        json.dumps({"tool_name": "Read", "arguments": {"path": "a"}}),
    ),
    Case("if rule that does not apply (read)", if_read_rule, ("pre_tool",), READ),
    Case("if rule that does not apply (shell)", if_shell_rule, ("pre_tool",), BASH_LS),
    Case(
        "untrusted workspace config",
        untrusted_workspace,
        ("pre_tool",),
        READ,
        message="pre_tool[0].bogus: unknown field",
    ),
    Case(
        "trusted workspace, other tool",
        trusted_other_tool,
        ("pre_tool", "--trust"),
        READ,
        served=False,
    ),
    Case(
        "--config file with hooks for other tools",
        extra_config,
        ("pre_tool", "--config", "{root}/extra/hooks.toml"),
        READ,
        served=False,
    ),
    Case(
        "judge misconfigured",
        judge_misconfigured,
        ("pre_tool",),
        READ,
        message="prompt-hook judge not built",
        served=False,
    ),
    Case(
        "--no-audit and --json",
        toml_other_tools,
        ("pre_tool", "--no-audit", "--json"),
        READ,
        served=False,
    ),
    Case(
        "broken config",
        broken_config,
        ("pre_tool",),
        READ,
        returncode=1,
        message="pre_tool[0].command: must not be empty",
    ),
    Case(
        "missing --config file",
        no_config,
        ("pre_tool", "--config", "{root}/nope.toml"),
        served=False,
        returncode=1,
        message="nope.toml: file not found",
    ),
    Case(
        "payload not JSON",
        no_config,
        ("pre_tool",),
        "{not json",
        returncode=1,
        message="payload on stdin is not valid JSON",
        early=True,
    ),
    Case(
        "payload not an object",
        no_config,
        ("pre_tool",),
        "[1]",
        returncode=1,
        message="payload on stdin must be a JSON object",
        early=True,
    ),
    Case(
        "payload field of the wrong type",
        no_config,
        ("pre_tool",),
        '{"args": 5}',
        returncode=1,
        message="triohooks: pre_tool payload: ",
        early=True,
    ),
    Case(
        "unknown event",
        no_config,
        ("pre_tool_usage",),
        returncode=1,
        message="unknown event 'pre_tool_usage'",
        early=True,
    ),
    Case("stop always takes the engine", toml_other_tools, ("stop",)),
    Case(
        "a hook matches: blocked",
        toml_other_tools,
        ("pre_tool",),
        json.dumps({"tool": "Bash", "args": {"command": "rm -rf /"}}),
        returncode=2,
    ),
    Case(
        "a background post_tool hook matches",
        background_post_tool,
        ("post_tool",),
        json.dumps({"tool": "Write", "args": {"path": "a"}, "result": "ok"}),
        ran_lines=1,
    ),
    Case(
        "post_tool with an error: the failure hook matches",
        failure_hook,
        ("post_tool",),
        json.dumps({"tool": "Write", "args": {"path": "a"}, "error": "EACCES"}),
        ran_lines=1,
    ),
]


def comparable(stdout: str) -> Any:
    """The Outcome with run durations (which differ between two runs) blanked."""
    outcome = json.loads(stdout)
    for run in outcome.get("runs", []):
        run["duration_ms"] = None
    return outcome


@pytest.mark.parametrize("row", range(len(CASES)), ids=[c.name for c in CASES])
def test_fire_answers_alike_through_serve_and_its_own_engine(
    tmp_path: Path, serve: Serve, row: int
) -> None:
    case = CASES[row]
    env = Env(tmp_path, serve)
    fresh_config(serve, row)
    case.setup(env)
    stamp_config(serve, row)
    args = tuple(a.format(root=tmp_path) for a in case.args)
    ran = env.ws / "ran"

    audited = serve.audit_lines()
    first = env.fire(*args, stdin=case.stdin)
    lines_after_first = len(ran.read_text().splitlines()) if ran.exists() else 0
    audited_first = serve.audit_lines() - audited
    here = env.fire(*args, stdin=case.stdin, here=True)
    audited_here = serve.audit_lines() - audited - audited_first

    # Which way each took: serve answered unless the row says it cannot.
    assert first.served is case.served, (first.stderr, sorted(first.modules)[:5])
    assert not here.served
    if first.served:
        ours = {m for m in first.modules if m.split(".")[0] == "triohooks"}
        assert ours == SERVED_MODULES and hits(first.modules, NEVER) == []

    # The same answer, byte for byte (run durations aside).
    assert (first.returncode, here.returncode) == (case.returncode, case.returncode)
    assert first.stderr == here.stderr
    assert case.message in first.stderr
    assert "Traceback" not in first.stderr + here.stderr
    if case.returncode == 1:
        assert first.stdout == here.stdout == ""
    else:
        assert comparable(first.stdout) == comparable(here.stdout)
        outcome = json.loads(first.stdout)
        assert outcome["blocked"] is (case.returncode == 2)
        assert outcome["queued"] is (case.ran_lines > 0)
    if case.ran_lines:  # a background hook: serve runs it after the answer
        deadline = time.monotonic() + 10
        while lines_after_first < case.ran_lines and time.monotonic() < deadline:
            time.sleep(0.02)
            lines_after_first = len(ran.read_text().splitlines()) if ran.exists() else 0
    assert lines_after_first in (case.ran_lines, 2 * case.ran_lines)
    assert len(ran.read_text().splitlines()) if ran.exists() else 2 * case.ran_lines == 0
    # A block is audited either way (the same records; the engine's own run, with its
    # close report, when a queue ran something).
    if case.returncode == 2:
        assert audited_first >= 1 and audited_here >= 1


def test_the_hooks_get_the_callers_environment(tmp_path: Path, serve: Serve) -> None:
    env = Env(tmp_path, serve)
    fresh_config(serve, 1000)
    write_toml_hooks(serve.config, '[[hooks.pre_tool]]\ncommand = "echo $FIRE_SAYS >> said"\n')
    stamp_config(serve, 1000)
    env.extra_env["FIRE_SAYS"] = "from-the-caller"
    fired = env.fire("pre_tool", stdin=READ)
    assert fired.returncode == 0 and fired.served, fired.stderr
    assert (env.ws / "said").read_text() == "from-the-caller\n"


def test_a_served_fire_is_in_serves_audit(tmp_path: Path, serve: Serve) -> None:
    env = Env(tmp_path, serve)
    fresh_config(serve, 1001)
    write_toml_hooks(serve.config, '[[hooks.pre_tool]]\nmatch = "Bash"\ncommand = "exit 2"\n')
    stamp_config(serve, 1001)
    before = serve.audit_lines()
    fired = env.fire("pre_tool", stdin=BASH_LS)
    assert fired.returncode == 2 and fired.served
    assert serve.audit_lines() > before
    day = datetime.now(UTC).date()
    last = (serve.state / "audit" / f"audit-{day}.jsonl").read_text().splitlines()[-1]
    assert json.loads(last)["workspace"] == str(env.ws)


def test_a_stopped_serve_is_found_dead_and_the_engine_answers(tmp_path: Path) -> None:
    own = Serve(tmp_path / "own")
    own.start()
    try:
        env = Env(tmp_path / "row", own)
        (tmp_path / "row").mkdir()
        write_toml_hooks(own.config, '[[hooks.pre_tool]]\nmatch = "Bash"\ncommand = "exit 2"\n')
        assert own.proc is not None
        os.kill(own.proc.pid, signal.SIGSTOP)
        started = time.monotonic()
        fired = env.fire("pre_tool", stdin=BASH_LS)
        took = time.monotonic() - started
        assert fired.returncode == 2 and not fired.served, fired.stderr
        assert "triohooks serve did not acknowledge within 2 s" in fired.stderr
        assert "running the hooks here" in fired.stderr
        assert took < 20
        assert (own.state / DEAD_NAME).exists()
        again = env.fire("pre_tool", stdin=BASH_LS)  # remembered: not asked again
        assert again.returncode == 2 and not again.served
        assert "remembers it" in again.stderr
    finally:
        own.stop()


def test_without_serve_the_engine_answers(tmp_path: Path) -> None:
    idle = Serve(tmp_path / "idle")  # never started: no socket
    env = Env(tmp_path / "row", idle)
    (tmp_path / "row").mkdir()
    fired = env.fire("pre_tool", stdin=READ)
    assert fired.returncode == 0 and not fired.served and fired.stderr == ""
    assert json.loads(fired.stdout)["runs"] == []


def test_settings_serve_does_not_share_send_the_call_to_its_own_engine() -> None:
    mine = {"HOME": "/h", "TRIOHOOKS_CONFIG_DIR": "/c", "PATH": "/bin"}
    assert settings_differ({**mine, "PATH": "/other", "TRIOHOOKS_RUN": "1"}, mine) is None
    said = settings_differ({**mine, "TRIOHOOKS_CONFIG_DIR": "/d"}, mine)
    assert said == "settings differ from serve's: TRIOHOOKS_CONFIG_DIR"
    # Without TRIOHOOKS_CONFIG_DIR, the places that choose the platform's config dir count.
    bare = {"HOME": "/h"}
    assert settings_differ({"HOME": "/elsewhere"}, bare) == "settings differ from serve's: HOME"
    assert settings_differ({**bare, "XDG_CONFIG_HOME": "/x"}, bare) is not None
    judge = (("base_url", "http://127.0.0.1:1/v1"), ("api_key_env", "KEY"))
    assert judge_differs({"KEY": "a"}, judge, {"KEY": "a"}, judge) is None
    assert judge_differs({"KEY": "b"}, judge, {"KEY": "a"}, judge) is not None
    assert judge_differs({"KEY": "a"}, (), {"KEY": "a"}, judge) is not None


# -- validate and list ----------------------------------------------------------------------------


def run_command(
    tmp_path: Path, config: Path, *words: str
) -> tuple[subprocess.CompletedProcess[str], frozenset[str]]:
    """A non-fire command through the real entry: its result and the modules it imported."""
    ws = tmp_path / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    out = tmp_path / "modules.txt"
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, str(out), *words],
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "TRIOHOOKS_CONFIG_DIR": str(config),
            "TRIOHOOKS_STATE_DIR": str(tmp_path / "state"),
        },
        cwd=ws,
        timeout=TIMEOUT_S,
        check=False,
    )
    return done, frozenset(out.read_text().split("\n"))


def test_validate_runs_without_the_event_loop(tmp_path: Path) -> None:
    write_toml_hooks(tmp_path / "g", OTHER_TOOLS_TOML)
    done, modules = run_command(tmp_path, tmp_path / "g", "validate")
    assert done.returncode == 0 and "ok: 5 hook(s) run, from 1 file(s)" in done.stdout, done.stderr
    assert hits(modules, NEVER) == []
    # It reads each command as trust does (the bash parser), but needs no regex engine.
    assert hits(modules, ("re2",)) == []


def test_list_runs_without_the_event_loop(tmp_path: Path) -> None:
    # It reads the audit files for each hook's recent failures (audit_records), not the sink.
    write_toml_hooks(tmp_path / "g", OTHER_TOOLS_TOML)
    audit = tmp_path / "state" / "audit"
    audit.mkdir(parents=True)
    day = datetime.now(UTC).date()
    record: dict[str, object] = {"time": f"{day}T00:00:00.000Z", "session": "s", "kind": "hook"}
    record["event"] = "pre_tool"
    record |= {
        "hook": "global:pre_tool[0]",
        "decision": "error",
        "error": "boom",
        "duration_ms": 1.0,
    }
    record["workspace"] = str(tmp_path / "ws")
    (audit / f"audit-{day}.jsonl").write_text(json.dumps(record) + "\n")
    done, modules = run_command(tmp_path, tmp_path / "g", "list")
    assert done.returncode == 0, done.stderr
    assert "failed " in done.stdout and "boom" in done.stdout, done.stdout
    but_actors = tuple(n for n in NEVER if n != "triohooks.actors")

    assert hits(modules, but_actors) == []
    ours = {m for m in modules if m.startswith("triohooks.actors")}
    assert ours == {"triohooks.actors", "triohooks.actors.audit_records", "triohooks.actors.redact"}


# -- a serve that does not answer as fire reads ---------------------------------------------------


def _reply(status: str, body: bytes) -> bytes:
    """A relay-protocol reply: the acknowledgement, then ``status`` with ``body``."""
    return b"HTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 %s\r\nContent-Length: %d\r\n\r\n%s" % (
        status.encode(),
        len(body),
        body,
    )


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        (_reply("500 Internal Server Error", b'{"error": "boom"}'), "triohooks: server: "),
        (_reply("200 OK", b'{"exit": 0}'), "serve's reply is not a fire reply"),
        # A reply that says "go on" in another framing is never taken for one.
        (_reply("200 OK", b"0 0 5\nextra bytes"), "serve's reply is not a fire reply"),
    ],
    ids=["our failure (500)", "a json reply", "lengths that do not add up"],
)
def test_a_reply_fire_cannot_read_sends_the_call_to_its_own_engine_saying_so(
    tmp_path: Path, reply: bytes, said: str
) -> None:
    from .test_agent_endpoint import _fake_server

    fake = Serve(tmp_path / "fake")  # its dirs; a fake process holds the socket
    proc = _fake_server(fake.state / SOCKET_FILE, reply)
    try:
        env = Env(tmp_path / "row", fake)
        write_toml_hooks(fake.config, '[[hooks.pre_tool]]\nmatch = "Bash"\ncommand = "exit 2"\n')
        fired = env.fire("pre_tool", stdin=BASH_LS)
    finally:
        proc.kill()
        proc.wait(timeout=TIMEOUT_S)
    assert not fired.served and said in fired.stderr
    assert fired.returncode == 2 and json.loads(fired.stdout)["blocked"]  # the engine's answer


async def test_the_tcp_port_never_answers_fire(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from .test_agent_endpoint import make_env, post, running

    env = make_env(tmp_path, monkeypatch)
    with trio.fail_after(20):
        async with running(env) as server:
            for path in ("/fire/v1/hook", "/fire/v3/hook?event=pre_tool&workspace=/tmp"):
                [(status, _)] = await post(server, b"{}", path=path)
                assert status == 404
