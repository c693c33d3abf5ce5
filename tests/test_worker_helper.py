"""The hook author's side of warm workers (docs/hook-protocol.md, "Warm workers"), no engine.

The examples in examples/workers/ and small workers built on :mod:`triohooks.worker` run as
real processes: request lines are written to their stdin, reply lines read from their stdout,
and each reply is read back the way triohooks reads a worker's reply (strictly, as msgspec
decodes it) and then as the one-shot run it stands for (by the dialects' own readers).
Every process runs under a ``trio.fail_after``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from triohooks.handlers.process import ProcessResult
from triohooks.handlers.replies import (
    RunResult,
    json_hook_environment,
    json_payload,
    read_json_reply,
    read_toml_reply,
)
from triohooks.worker import (
    MAX_REPLY_LINE,
    Block,
    Reply,
    Request,
    block,
    decision,
    mutate,
    no_opinion,
    reply,
    respond,
    serve,
)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "workers"
POLICY = EXAMPLES / "policy_worker.py"
BASH = EXAMPLES / "bash_worker.sh"
#: Seconds any one process may take, start to end.
LIMIT = 20


class WireReply(msgspec.Struct, forbid_unknown_fields=True):
    """A reply line, decoded as strictly as triohooks decodes it (plus: no other field)."""

    exit: int
    stdout: str = ""
    stderr: str = ""


def wire(line: bytes) -> WireReply:
    assert line.endswith(b"\n") and line.count(b"\n") == 1, line
    assert len(line) - 1 <= MAX_REPLY_LINE
    decoded = msgspec.json.decode(line, type=WireReply)
    assert 0 <= decoded.exit <= 255
    return decoded


def as_run(decoded: WireReply) -> ProcessResult:
    return ProcessResult(
        status="exited", exit_code=decoded.exit, stdout=decoded.stdout, stderr=decoded.stderr
    )


def toml(decoded: WireReply) -> RunResult:
    return read_toml_reply(as_run(decoded))


def everruns(decoded: WireReply) -> RunResult:
    return read_json_reply(as_run(decoded))


def event(command: str, tool: str = "bash", **more: Any) -> dict[str, Any]:
    """A TOML-dialect pre_tool event, with every field the stdin JSON has."""
    base = {
        "event": "pre_tool",
        "session_id": "s1",
        "workspace": "/repo",
        "cwd": "/repo",
        "prompt_id": "p1",
        "transcript_path": None,
        "permission_mode": None,
        "agent": None,
        "turn_id": None,
        "tool": tool,
        "args": {"command": command},
        "tool_call_id": "c1",
    }
    return base | more


def line_of(obj: Any) -> bytes:
    """A request line as triohooks writes it: compact JSON and a newline."""
    return msgspec.json.encode(obj) + b"\n"


def json_request(
    arguments: dict[str, Any], tool: str = "bash", *, payload_file: Path | None = None
) -> dict[str, Any]:
    """A JSON-dialect request ``{"env": {...}}``, built by the functions the engine uses for a
    one-shot hook's environment; ``payload_file`` is the payload file (written here)."""
    data = {"tool_name": tool, "tool_call_id": "c1", "arguments": arguments}
    payload = json_payload(
        event_name="pre_tool_use", hook_id="user:policy", session_id="s1", turn_id="t1", data=data
    )
    env = json_hook_environment(
        base_env={},
        hook_id="user:policy",
        event_name="pre_tool_use",
        session_id="s1",
        turn_id="t1",
        tool_name=tool,
        tool_call_id="c1",
        payload_json=payload.decode(),
        payload_path=str(payload_file or "/nonexistent/payload.json"),
        spec_env=(),
    )
    if payload_file is not None:
        payload_file.write_bytes(payload)
        # Over 128 KiB the engine leaves the variable out; the file always holds the payload.
        env.pop("EVERRUNS_HOOK_PAYLOAD_JSON", None)
    assert env and all(k.startswith("EVERRUNS_HOOK_") for k in env)
    return {"env": env}


def worker_env(*, worker: bool = True, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVERRUNS_HOOK_")}
    env.pop("TRIOHOOKS_WORKER", None)
    if worker:
        env["TRIOHOOKS_WORKER"] = "1"
    return env | (extra or {})


async def session(
    argv: list[str], lines: list[bytes], *, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Write every line, close stdin, collect everything: one worker's whole life."""
    with trio.fail_after(LIMIT):
        return await trio.run_process(
            argv,
            stdin=b"".join(lines),
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            env=env if env is not None else worker_env(),
            cwd=ROOT,
        )


def replies(done: subprocess.CompletedProcess[bytes]) -> list[WireReply]:
    assert done.returncode == 0, done.stderr.decode()
    return [wire(line) for line in done.stdout.splitlines(keepends=True)]


class Conversation:
    """A worker driven one request at a time: each reply is read before the next request."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self.buffer = b""

    async def ask(self, line: bytes) -> bytes:
        assert self.process.stdin is not None and self.process.stdout is not None
        await self.process.stdin.send_all(line)
        while b"\n" not in self.buffer:
            chunk = await self.process.stdout.receive_some()
            assert chunk, f"the worker closed stdout before answering {line[:80]!r}"
            self.buffer += chunk
        end = self.buffer.index(b"\n") + 1
        answer, self.buffer = self.buffer[:end], self.buffer[end:]
        return answer

    async def close(self) -> int:
        """EOF on stdin; the exit status; nothing more may have been written."""
        assert self.process.stdin is not None and self.process.stdout is not None
        await self.process.stdin.aclose()
        rest = b"".join([chunk async for chunk in self.process.stdout])
        assert self.buffer + rest == b"", "output after the last reply"
        return await self.process.wait()


async def converse(nursery: trio.Nursery, argv: list[str]) -> Conversation:
    process = await trio.lowlevel.open_process(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=worker_env(),
        cwd=ROOT,
    )

    async def reap() -> None:
        try:
            await process.wait()
        except trio.Cancelled:  # the test ended early: don't leave it behind
            process.kill()
            with trio.CancelScope(shield=True):
                await process.wait()
            raise

    nursery.start_soon(reap)
    return Conversation(process)


#: A worker exercising the helper's edges, picked by the event's tool (TOML dialect) or the
#: request's tool name (JSON dialect).
EDGES = textwrap.dedent(
    """
    import os, subprocess, sys
    from triohooks.worker import Reply, Request, block, decision, mutate, reply, serve

    def handle(req):
        if isinstance(req, Request):
            if req.tool_name == "block":
                return block("json says no")
            if req.tool_name == "mutate":
                return mutate({"arguments": {"timeout": 60}}, reason="capped")
            if req.tool_name == "size":
                return decision("allow", reason=str(len(req.arguments["blob"])))
            if req.tool_name == "about":
                return {"decision": "allow", "reason": repr(
                    (req.event, req.hook_id, req.session_id, req.turn_id, req.tool_call_id,
                     sorted(req.payload), req.message))}
            return None
        tool = req["tool"]
        if tool == "print":
            print("chatter on stdout")
            sys.stdout.write("more chatter\\n")
            return block("printed, still blocked")
        if tool == "child":
            subprocess.run(["echo", "from a child"], check=True)
            os.write(1, b"raw fd 1\\n")
            return reply(additional_context="children wrote elsewhere")
        if tool == "stdin":
            return reply(additional_context=repr(sys.stdin.read()))
        if tool == "raise":
            raise RuntimeError("handler bug " + req["args"]["command"])
        if tool == "exit":
            sys.exit(2)
        if tool == "wrong":
            return 42
        if tool == "async":
            async def later():
                return None
            return later()
        if tool == "huge":
            return Reply(stdout="x" * (2 * 1024 * 1024))
        if tool == "nan":
            return {"decision": float("nan")}
        if tool == "surrogate":
            return Reply(exit=2, stderr="bad \\udc80 byte")
        if tool == "size":
            return reply(additional_context=str(len(req["args"]["command"])))
        if tool == "rewrite":
            return {"updated_args": {"command": req["args"]["command"] + " -x"}}
        return None

    serve(handle)
    """
)


@pytest.fixture
def edges(tmp_path: Path) -> list[str]:
    path = tmp_path / "edges_worker.py"
    path.write_text(EDGES)
    return [sys.executable, str(path)]


# -- the Python example --------------------------------------------------------------------------


async def test_policy_example_blocks_rm_rf_and_allows_the_rest() -> None:
    done = await session(
        [sys.executable, str(POLICY)],
        [
            line_of(event("rm -rf build")),
            line_of(event("ls -la")),
            line_of(event("rm -rf /", tool="read_file")),  # not a bash call
            line_of({"event": "session_start", "session_id": "s1", "reason": "startup"}),
        ],
    )
    blocked, ls, other_tool, no_args = replies(done)
    assert blocked == WireReply(exit=2, stderr="no rm -rf, please")
    run = toml(blocked)
    assert (run.outcome, run.reason) == ("block", "no rm -rf, please")
    for allowed in (ls, other_tool, no_args):
        assert allowed == WireReply(exit=0)
        assert toml(allowed).outcome == "ok" and toml(allowed).decision is None
    assert done.stderr == b""


async def test_policy_example_serves_the_json_dialect_too() -> None:
    done = await session(
        [sys.executable, str(POLICY)],
        [
            line_of(json_request({"command": "rm -rf build"})),
            line_of(json_request({"command": "ls"})),
            line_of(json_request({"path": "rm -rf"}, tool="read_file")),
        ],
    )
    blocked, ls, other_tool = replies(done)
    run = everruns(blocked)
    assert (blocked.exit, run.outcome, run.reason) == (0, "block", "no rm -rf, please")
    assert ls == other_tool == WireReply(exit=0)
    assert everruns(ls).outcome == "ok"


async def test_policy_example_answers_each_line_before_the_next() -> None:
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            worker = await converse(nursery, [sys.executable, str(POLICY)])
            for _ in range(3):
                assert wire(await worker.ask(line_of(event("rm -rf x")))).exit == 2
                assert wire(await worker.ask(line_of(event("make")))).exit == 0
            assert await worker.close() == 0


async def test_policy_example_runs_one_shot_without_worker_true() -> None:
    # Configured without `worker = true`, the same file is a one-shot TOML hook.
    argv = [sys.executable, str(POLICY)]
    env = worker_env(worker=False)
    with trio.fail_after(LIMIT):
        rm = await trio.run_process(
            argv,
            stdin=json.dumps(event("rm -rf build"), indent=2).encode(),
            env=env,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
        ls = await trio.run_process(
            argv,
            stdin=json.dumps(event("ls")).encode(),
            env=env,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
        junk = await trio.run_process(
            argv, stdin=b"", env=env, capture_stdout=True, capture_stderr=True, check=False
        )
    one_shot = ProcessResult(status="exited", exit_code=rm.returncode, stderr=rm.stderr.decode())
    assert rm.stdout == b""
    assert read_toml_reply(one_shot).reason == "no rm -rf, please"
    assert (ls.returncode, ls.stdout, ls.stderr) == (0, b"", b"")
    assert junk.returncode == 1 and b"bad event on stdin" in junk.stderr


# -- the bash example ----------------------------------------------------------------------------


async def test_bash_example_answers_the_protocol() -> None:
    done = await session(
        ["bash", str(BASH)],
        [
            line_of(event("rm -rf build")),
            line_of(event("git status")),
            line_of(event('echo "quoted \\" and \\\\ and rm -rf"')),
            line_of(event("x" * (64 * 1024))),
        ],
    )
    rm, git, quoted, long = replies(done)
    assert toml(rm).outcome == "block" and toml(rm).reason == "no rm -rf, please"
    assert toml(quoted).outcome == "block"
    assert git == long == WireReply(exit=0)
    assert toml(git).outcome == "ok"


async def test_bash_example_refuses_to_run_one_shot() -> None:
    with trio.fail_after(LIMIT):
        done = await trio.run_process(
            ["bash", str(BASH)],
            stdin=json.dumps(event("rm -rf build")).encode(),
            env=worker_env(worker=False),
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert done.returncode == 1 and done.stdout == b""
    assert b"worker = true" in done.stderr


async def test_bash_example_exits_at_eof() -> None:
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            worker = await converse(nursery, ["bash", str(BASH)])
            assert wire(await worker.ask(line_of(event("ls")))).exit == 0
            started = time.monotonic()
            assert await worker.close() == 0
            assert time.monotonic() - started < 2


# -- helper-based workers ------------------------------------------------------------------------


async def test_json_dialect_requests_get_everruns_replies(edges: list[str], tmp_path: Path) -> None:
    large = json_request({"blob": "y" * 300_000}, tool="size", payload_file=tmp_path / "p")
    assert "EVERRUNS_HOOK_PAYLOAD_JSON" not in large["env"]  # too big for the environment
    done = await session(
        edges,
        [
            line_of(json_request({"command": "rm -rf /"}, tool="block")),
            line_of(json_request({"command": "make", "timeout": 600}, tool="mutate")),
            line_of(json_request({"command": "ls"}, tool="bash")),
            line_of(json_request({"command": "ls"}, tool="about")),
            line_of(large),
        ],
    )
    blocked, mutated, allowed, about, big = replies(done)
    run = everruns(blocked)
    assert (blocked.exit, run.outcome, run.reason) == (0, "block", "json says no")
    run = everruns(mutated)
    assert (run.outcome, run.patch, run.reason) == (
        "mutate",
        {"arguments": {"timeout": 60}},
        "capped",
    )
    assert allowed == WireReply(exit=0) and everruns(allowed).outcome == "ok"
    said = everruns(about).reason
    assert said == repr(
        (
            "pre_tool_use",
            "user:policy",
            "s1",
            "t1",
            "c1",
            ["data", "event", "hook_id", "session_id", "ts", "turn_id"],
            None,
        )
    )
    # Too big for the environment: the payload came from EVERRUNS_HOOK_PAYLOAD_PATH.
    assert everruns(big).reason == "300000"


async def test_stdout_of_the_handler_and_its_children_goes_to_stderr(edges: list[str]) -> None:
    done = await session(
        edges,
        [line_of(event("x", tool=tool)) for tool in ("print", "child", "stdin")],
    )
    printed, child, stdin = replies(done)  # exactly one line per request, nothing else
    assert toml(printed).outcome == "block" and toml(printed).reason == "printed, still blocked"
    assert toml(child).additional_context == "children wrote elsewhere"
    assert toml(stdin).additional_context == "''"  # stdin reads as empty, not the requests
    for text in (b"chatter on stdout", b"more chatter", b"from a child", b"raw fd 1"):
        assert text in done.stderr


async def test_a_handler_exception_is_exit_1_and_the_worker_keeps_serving(
    edges: list[str],
) -> None:
    done = await session(
        edges,
        [
            line_of(event("one", tool="raise")),
            line_of(event("ls", tool="rewrite")),
            line_of(event("two", tool="exit")),
            line_of(event("x", tool="wrong")),
            line_of(event("x", tool="async")),
            line_of(event("x", tool="nan")),
            line_of(event("pytest", tool="rewrite")),
        ],
    )
    raised, first, exited, wrong, coro, nan, last = replies(done)
    assert raised.exit == 1 and raised.stdout == ""
    assert "Traceback" in raised.stderr and "RuntimeError: handler bug one" in raised.stderr
    run = toml(raised)
    # The failure message (which quotes the head of stderr) names the error.
    assert run.outcome == "error" and "RuntimeError: handler bug one" in (run.error or "")
    assert exited.exit == 1 and "SystemExit: 2" in exited.stderr  # never a block by accident
    assert wrong.exit == 1 and "returned int" in wrong.stderr
    assert coro.exit == 1 and "coroutine" in coro.stderr
    assert nan.exit == 1 and "ValueError" in nan.stderr
    assert toml(first).updated_args == {"command": "ls -x"}
    assert toml(last).updated_args == {"command": "pytest -x"}
    assert b"never awaited" not in done.stderr


async def test_invalid_request_lines_are_answered_exit_1(edges: list[str]) -> None:
    done = await session(
        edges,
        [
            b"not json\n",
            b"\n",
            b"[1, 2]\n",
            b'{"env": {"EVERRUNS_HOOK_EVENT": 7}}\n',
            b'{"env": {"EVERRUNS_HOOK_PAYLOAD_JSON": "{oops"}}\n',
            b'{"env": {"EVERRUNS_HOOK_PAYLOAD_PATH": "/nonexistent/payload"}}\n',
            b"\xff\xfe\n",
            line_of(event("ls", tool="rewrite")),
        ],
    )
    *bad, good = replies(done)
    assert len(bad) == 7
    for answer in bad:
        assert answer.exit == 1 and answer.stdout == ""
        assert answer.stderr.startswith("triohooks.worker: bad request line:"), answer.stderr
        assert toml(answer).outcome == everruns(answer).outcome == "error"
    assert toml(good).updated_args == {"command": "ls -x"}


async def test_eof_ends_the_worker_promptly(edges: list[str]) -> None:
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            worker = await converse(nursery, edges)
            assert wire(await worker.ask(line_of(event("ls")))).exit == 0
            started = time.monotonic()
            assert await worker.close() == 0
            assert time.monotonic() - started < 2


async def test_a_large_request_works(edges: list[str]) -> None:
    command = "echo " + "z" * (512 * 1024)
    with trio.fail_after(LIMIT):
        async with trio.open_nursery() as nursery:
            worker = await converse(nursery, edges)
            big = wire(await worker.ask(line_of(event(command, tool="size"))))
            assert toml(big).additional_context == str(len(command))
            after = wire(await worker.ask(line_of(event("ls", tool="rewrite"))))
            assert toml(after).updated_args == {"command": "ls -x"}
            assert await worker.close() == 0


async def test_replies_stay_within_the_protocol(edges: list[str]) -> None:
    done = await session(
        edges, [line_of(event("x", tool="huge")), line_of(event("x", tool="surrogate"))]
    )
    huge, surrogate = replies(done)
    assert huge.exit == 1 and "over the 1048576-byte line limit" in huge.stderr
    assert (surrogate.exit, surrogate.stderr) == (2, "bad \ufffd byte")


async def test_one_shot_json_dialect_reads_the_environment(edges: list[str]) -> None:
    request = json_request({"command": "rm -rf /"}, tool="block")
    env = worker_env(worker=False, extra=request["env"])
    with trio.fail_after(LIMIT):
        done = await trio.run_process(
            edges, stdin=b"", env=env, capture_stdout=True, capture_stderr=True, check=False
        )
    assert done.returncode == 0, done.stderr.decode()
    one_shot = ProcessResult(status="exited", exit_code=0, stdout=done.stdout.decode())
    assert read_json_reply(one_shot).reason == "json says no"


# -- in-process: the helpers and respond() -------------------------------------------------------


def test_reply_helpers() -> None:
    assert no_opinion() == Reply() and Reply().line() == b'{"exit":0}\n'
    assert block("no") == Block("no")
    assert reply({"decision": "deny"}, reason="r").stdout == '{"decision":"deny","reason":"r"}'
    assert decision("block", reason="r", user_message="u").stdout == (
        '{"decision":"block","reason":"r","user_message":"u"}'
    )
    assert mutate({"message": "hi"}).stdout == '{"decision":"mutate","patch":{"message":"hi"}}'
    line = Reply(exit=2, stdout="a\nb", stderr="é").line()
    assert line.count(b"\n") == 1 and json.loads(line) == {
        "exit": 2,
        "stdout": "a\nb",
        "stderr": "é",
    }
    bad_replies: list[dict[str, Any]] = [
        {"exit": 256},
        {"exit": -1},
        {"exit": True},
        {"exit": 1.0},
        {"stdout": b"x"},
    ]
    for bad in bad_replies:
        with pytest.raises((TypeError, ValueError)):
            Reply(**bad)
    with pytest.raises(ValueError):
        decision("mutate")
    with pytest.raises(ValueError):
        decision("allow", patch={})
    with pytest.raises(ValueError):
        decision("deny")  # type: ignore[arg-type]


def test_block_is_each_dialects_block() -> None:
    def handle(req: Any) -> Block:
        return block()

    toml_line = respond(handle, json.dumps(event("x")))
    json_line = respond(handle, json.dumps(json_request({})))
    assert toml(wire(toml_line.encode())).reason == "blocked by hook"
    assert everruns(wire(json_line.encode())).reason == "hook blocked"


def test_request_accessors() -> None:
    req = Request.from_env(json_request({"command": "ls"})["env"])
    assert (req.event, req.tool_name, req.arguments) == ("pre_tool_use", "bash", {"command": "ls"})
    assert req.data["tool_call_id"] == "c1" and req.payload_path == "/nonexistent/payload.json"
    prompt = Request.from_env(
        {
            "EVERRUNS_HOOK_PAYLOAD_JSON": json.dumps(
                {"event": "user_prompt_submit", "data": {"message": "hi"}}
            )
        }
    )
    assert (prompt.event, prompt.message, prompt.arguments, prompt.tool_name) == (
        "user_prompt_submit",
        "hi",
        {},
        None,
    )
    assert Request.from_env({}).payload == {}


def test_serve_on_given_streams_ignores_the_environment(tmp_path: Path) -> None:
    requests = tmp_path / "in"
    requests.write_bytes(line_of(event("rm -rf x")) + b"garbage\n")
    with requests.open("rb") as inp, (tmp_path / "out").open("wb") as out:
        serve(lambda ev: block("no"), stdin=inp, stdout=out)
    first, second = (tmp_path / "out").read_bytes().splitlines(keepends=True)
    assert wire(first) == WireReply(exit=2, stderr="no") and wire(second).exit == 1
    with pytest.raises(ValueError):
        serve(lambda ev: None, stdin=inp)


# -- the module itself ---------------------------------------------------------------------------


async def test_the_module_imports_no_trio_nor_any_dependency() -> None:
    code = (
        "import sys; import triohooks.worker\n"
        "stdlib = sys.stdlib_module_names | set(sys.builtin_module_names)\n"
        "import json; print(json.dumps(sorted(m for m in sys.modules\n"
        "    if m.split('.')[0] not in stdlib and 'editable' not in m)))"
    )
    with trio.fail_after(LIMIT):
        done = await trio.run_process(
            [sys.executable, "-c", code], capture_stdout=True, capture_stderr=True
        )
    loaded = json.loads(done.stdout)
    # The package itself (its lazy __init__) and the helper; nothing else outside the stdlib.
    assert set(loaded) - {"__main__", "_distutils_hack"} == {"triohooks", "triohooks.worker"}


def test_the_docs_show_the_examples() -> None:
    doc = (ROOT / "docs" / "hook-protocol.md").read_text()
    section = doc[doc.index("\n## Warm workers\n") :]
    # The handler the doc shows (and runs) is the example's, word for word.
    shown = re.search(r"\ndef handle\(request\):\n(.*?)\n\n", section, re.DOTALL)
    assert shown is not None
    example = POLICY.read_text()
    assert shown.group(1) in example
    # The bash loop the doc shows is the example's.
    loop = re.search(r"\n(while IFS= read -r line; do\n.*?\ndone)\n", section, re.DOTALL)
    assert loop is not None and loop.group(1) in BASH.read_text()
