"""Every fenced code block of every docs/*.md is checked against the code.

A fence's info string says what its block is, and so how it is checked. A fence this module
does not know fails :func:`test_every_fence_is_checked`, so a new example cannot slip in
unchecked:

- ``text``: diagrams and transcripts; not checked.
- ``toml``: a hooks.toml; it loads without a problem. ``toml cases``: a ``triohooks test``
  case file; every case reads. ``toml invalid``: an example of errors;
  the ``output`` fence right after it is exactly what ``triohooks validate`` prints for it.
- ``json hooks.json``: a hooks.json; it loads without a problem.
- ``json stdin``: the event a TOML-dialect hook reads on stdin; a real hook reads exactly it.
- ``json reply``: JSON-dialect replies, one per line; each reads back as itself.
- ``json session``: the frames of one websocket connection: client frames are sent to a real
  ``triohooks serve``, server frames must come back. ``json frames``: decoded only.
- ``bash hook=toml|json case=NAME`` (or ``python ...``): a hook script, run by a real engine on
  the inputs of ``HOOK_CASES[NAME]``, with the effect (block / rewrite / nothing) it lists.
- ``python``: a complete program, run in a fresh interpreter (those of getting-started.md and
  embedding.md by tests/test_docs_examples.py); ``python client``: one run against a real
  server.
- ``sh``: command lines: valid bash; ``triohooks ...`` must parse, ``make X`` must name a
  Makefile target, any other program must be on PATH.
  ``synopsis``: usage lines, parsed with the placeholders filled in; every option must exist.
  ``http``: a handshake request, made against a real server.
- ``js``: syntax-checked by node (when installed); the frame types and fields it uses exist.

The reference tables are checked too: docs/reference.md's Outcome fields and CLI commands,
docs/protocol.md's message types, record kinds and error codes.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import shutil
import sys
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import msgspec
import pytest
import trio
from trio_websocket import ConnectionRejected, WebSocketConnection

from triohooks.combine.outcome import Outcome, RunRecord
from triohooks.config.events import canonical_event
from triohooks.config.table import load_table
from triohooks.engine.hook_engine import HookEngine
from triohooks.fronts import cli as _cli
from triohooks.fronts import commands as _commands
from triohooks.fronts.client import open_websocket
from triohooks.fronts.serve_cli import TOKEN_FILE_NAME
from triohooks.fronts.server import HookServer, ServeSettings, serve
from triohooks.fronts.wire import (
    CLIENT_TYPES,
    EVENT_KINDS,
    ErrorCode,
    ServerMessage,
    decode_client,
    decode_server,
)
from triohooks.handlers.process import ProcessResult
from triohooks.handlers.replies import read_json_reply

from .helpers import write_json_hooks, write_toml_hooks
from .test_docs_examples import DOCS as EXAMPLE_DOCS
from .test_docs_examples import elsewhere, isolated_env, python_blocks

ROOT = Path(__file__).resolve().parent.parent
DOCS_DIR = ROOT / "docs"

# -- finding and classifying fences ----------------------------------------------------------

_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_ANY_FENCE_LINE = re.compile(r"^[ \t]*```", re.MULTILINE)


class Fence(NamedTuple):
    doc: str
    line: int
    lang: str
    words: tuple[str, ...]
    body: str

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"

    @property
    def attrs(self) -> dict[str, str]:
        return dict(w.split("=", 1) for w in self.words if "=" in w)

    @property
    def flags(self) -> tuple[str, ...]:
        return tuple(w for w in self.words if "=" not in w)

    def lines(self) -> list[str]:
        return [line for line in self.body.splitlines() if line.strip()]


def doc_fences(doc: str) -> list[Fence]:
    text = (DOCS_DIR / doc).read_text()
    out = []
    for m in _FENCE.finditer(text):
        lang, *words = m.group(1).split() or [""]
        out.append(Fence(doc, text.count("\n", 0, m.start()) + 1, lang, tuple(words), m.group(2)))
    return out


ALL_DOCS = sorted(p.name for p in DOCS_DIR.glob("*.md"))
FENCES = [f for doc in ALL_DOCS for f in doc_fences(doc)]

#: (language, flags) -> kind, for fences without key=value words.
_SIMPLE_KINDS = {
    ("text", ()): "text",
    ("toml", ()): "toml",
    ("toml", ("invalid",)): "toml-invalid",
    ("toml", ("cases",)): "toml-cases",
    ("output", ()): "output",
    ("json", ("hooks.json",)): "json-hooks",
    ("json", ("stdin",)): "json-stdin",
    ("json", ("reply",)): "json-reply",
    ("json", ("session",)): "json-session",
    ("json", ("frames",)): "json-frames",
    ("python", ()): "python",
    ("python", ("client",)): "python-client",
    ("sh", ()): "sh",
    ("synopsis", ()): "synopsis",
    ("http", ()): "http",
    ("js", ()): "js",
}
KINDS = frozenset(_SIMPLE_KINDS.values()) | {"hook", "python-elsewhere"}


def kind_of(fence: Fence) -> str:
    """What ``fence`` is, so how it is checked. Raises ``ValueError`` for a fence nothing checks."""
    is_hook = set(fence.attrs) == {"hook", "case"} and fence.attrs["hook"] in ("toml", "json")
    if fence.lang in ("bash", "python") and not fence.flags and is_hook:
        return "hook"
    kind = _SIMPLE_KINDS.get((fence.lang, fence.words))
    if kind is None:
        raise ValueError(
            f"{fence.where}: nothing checks a ```{' '.join((fence.lang, *fence.words))} block; "
            "give it a known info string (see tests/test_docs_all.py) or ```text"
        )
    if kind == "python" and fence.doc in EXAMPLE_DOCS:
        return "python-elsewhere"
    return kind


def _kind_or_none(fence: Fence) -> str | None:
    try:
        return kind_of(fence)
    except ValueError:
        return None


KIND = {fence: _kind_or_none(fence) for fence in FENCES}


def fences(*kinds: str) -> list[Fence]:
    return [f for f in FENCES if KIND[f] in kinds]


def params(kind: str) -> list[Any]:
    """``fences(kind)`` for ``pytest.mark.parametrize``, each named ``doc:line``."""
    return [pytest.param(f, id=f.where) for f in fences(kind)]


def _following(fence: Fence) -> Fence | None:
    same = [f for f in FENCES if f.doc == fence.doc]
    i = same.index(fence)
    return same[i + 1] if i + 1 < len(same) else None


def _preceding(fence: Fence) -> Fence | None:
    same = [f for f in FENCES if f.doc == fence.doc]
    i = same.index(fence)
    return same[i - 1] if i > 0 else None


# -- hook scripts: inputs and documented effects ----------------------------------------------

#: The matcher of the yolop spec's "prevent calls to git" example.
YOLOP_GIT_MATCHER = {
    "args_jsonpath": "$.command",
    "match_regex": "(^|[;&|()[:space:]])git([[:space:]]|$)",
}


class Call(NamedTuple):
    """A pre_tool call of a hook case, and what the docs say the hook does with it."""

    args: dict[str, Any]
    #: The block reason; None: not blocked.
    blocked: str | None = None
    #: The arguments after the hook; None: unchanged.
    rewritten: dict[str, Any] | None = None
    #: False: the hook's matcher leaves it out (it does not run).
    runs: bool = True


class HookCase(NamedTuple):
    calls: tuple[Call, ...]
    #: JSON dialect: matcher keys besides the tool name.
    matcher: tuple[tuple[str, str], ...] = ()


HOOK_CASES = {
    "no-rm-rf": HookCase(
        (Call({"command": "rm -rf build"}, blocked="no rm -rf, please"), Call({"command": "ls"}))
    ),
    "pytest-x": HookCase(
        (
            Call({"command": "pytest tests"}, rewritten={"command": "pytest tests -x"}),
            Call({"command": "pytest -x tests"}),
            Call({"command": "make"}),
        )
    ),
    "block-git": HookCase(
        (
            Call({"command": "cd src && git push"}, blocked="git command blocked by hook"),
            Call({"command": "digit --version"}, runs=False),
        ),
        matcher=tuple(YOLOP_GIT_MATCHER.items()),
    ),
    "cap-timeout": HookCase(
        (
            Call({"command": "make", "timeout": 600}, rewritten={"command": "make", "timeout": 60}),
            Call({"command": "make"}, rewritten={"command": "make", "timeout": 60}),
            Call({"command": "make", "timeout": 5}),
        )
    ),
}


# -- every fence is checked -------------------------------------------------------------------


def test_every_fence_is_checked() -> None:
    problems = []
    for doc in ALL_DOCS:
        text = (DOCS_DIR / doc).read_text()
        found = sum(1 for f in FENCES if f.doc == doc)
        if len(_ANY_FENCE_LINE.findall(text)) != 2 * found:
            problems.append(f"{doc}: a fence the extractor does not see (indented? unclosed?)")
    for fence in FENCES:
        try:
            kind = kind_of(fence)
        except ValueError as exc:
            problems.append(str(exc))
            continue
        if kind == "toml-invalid":
            after = _following(fence)
            if after is None or after.lang != "output":
                problems.append(f"{fence.where}: ```toml invalid needs an ```output block next")
        if kind == "output":
            before = _preceding(fence)
            if before is None or KIND[before] != "toml-invalid":
                problems.append(f"{fence.where}: ```output must follow a ```toml invalid block")
        if kind == "hook" and fence.attrs["case"] not in HOOK_CASES:
            problems.append(f"{fence.where}: no HOOK_CASES entry {fence.attrs['case']!r}")
    assert problems == []


def test_every_kind_and_case_is_used() -> None:
    # An unused kind or case means an extractor or a doc changed without this module noticing.
    assert set(KIND.values()) >= KINDS
    assert sorted(f.attrs["case"] for f in fences("hook")) == sorted(HOOK_CASES)
    elsewhere = len(fences("python-elsewhere"))
    assert elsewhere == sum(len(python_blocks(doc)) for doc in EXAMPLE_DOCS)


# -- config files ------------------------------------------------------------------------------


@pytest.mark.parametrize("fence", params("toml"))
def test_toml_example_loads(tmp_path: Path, fence: Fence) -> None:
    config_dir = write_toml_hooks(tmp_path / "global", fence.body).parent
    table = load_table(workspace=None, config_dir=config_dir)
    assert [str(p) for p in table.problems] == []
    assert table.hooks


@pytest.mark.parametrize("fence", params("toml-cases"))
def test_case_file_example_reads(tmp_path: Path, fence: Fence) -> None:
    from triohooks.fronts.hooktest import read_cases

    path = tmp_path / "hooks.test.toml"
    path.write_text(fence.body)
    assert read_cases(path)


@pytest.mark.parametrize("fence", params("json-hooks"))
def test_json_example_loads(tmp_path: Path, fence: Fence) -> None:
    config_dir = tmp_path / "global"
    config_dir.mkdir()
    (config_dir / "hooks.json").write_text(fence.body)
    table = load_table(workspace=None, config_dir=config_dir)
    assert [str(p) for p in table.problems] == []
    assert table.hooks


def _pattern(documented: str) -> re.Pattern[str]:
    """A documented line as a pattern: ``...`` stands for anything."""
    return re.compile(".*".join(re.escape(part) for part in documented.split("...")))


@pytest.mark.parametrize("fence", params("toml-invalid"))
def test_invalid_toml_example_prints_the_documented_errors(
    tmp_path: Path, fence: Fence, capsys: pytest.CaptureFixture[str]
) -> None:
    config_dir = write_toml_hooks(tmp_path / "global", fence.body).parent
    workspace = tmp_path / "ws"
    workspace.mkdir()
    argv = ["validate", "--config-dir", str(config_dir), "--workspace", str(workspace)]
    assert _commands.cmd_validate(_cli._parser().parse_args(argv)) == _cli.EXIT_USAGE
    printed = capsys.readouterr().err.replace(str(config_dir), "~/.config/triohooks").splitlines()
    output = _following(fence)
    assert output is not None
    documented = output.lines()
    assert len(printed) == len(documented), printed
    for want, got in zip(documented, printed, strict=True):
        assert _pattern(want).fullmatch(got), (want, got)


# -- replies and frames -----------------------------------------------------------------------

_REPLY_OUTCOME = {"allow": "ok", "block": "block", "mutate": "mutate"}


@pytest.mark.parametrize("fence", params("json-reply"))
def test_json_dialect_replies_read_as_documented(fence: Fence) -> None:
    for line in fence.lines():
        doc = json.loads(line)
        result = read_json_reply(ProcessResult(status="exited", exit_code=0, stdout=line))
        assert result.outcome == _REPLY_OUTCOME[doc["decision"]], result.error
        for key, value in doc.items():  # a misspelt field would be ignored by the reader
            assert getattr(result, key) == value, key


def _field_names(struct: Any) -> set[str]:
    return {f.encode_name for f in msgspec.structs.fields(struct)}


def decode_frame(line: str) -> tuple[str, Any]:
    """("server" | "client", the message) for one documented frame; its fields must all exist
    (the decoders ignore unknown fields, so a misspelt one would pass unnoticed)."""
    msg: Any
    try:
        side, msg = "server", decode_server(line)
    except msgspec.DecodeError:
        side, msg = "client", decode_client(line)
    unknown = set(json.loads(line)) - _field_names(msg) - {"type"}
    assert not unknown, f"{line}: fields {unknown} are not in {type(msg).__name__}"
    return side, msg


@pytest.mark.parametrize("fence", params("json-frames"))
def test_documented_frames_decode(fence: Fence) -> None:
    for line in fence.lines():
        decode_frame(line)


def test_documented_outcome_frames_have_every_outcome_field() -> None:
    frames = [json.loads(line) for f in fences("json-session", "json-frames") for line in f.lines()]
    outcomes = [frame["outcome"] for frame in frames if frame["type"] == "outcome"]
    assert outcomes
    for outcome in outcomes:  # every field, in the order the server sends them
        assert list(outcome) == [f.encode_name for f in msgspec.structs.fields(Outcome)]
        for run in outcome["runs"]:
            assert list(run) == [f.encode_name for f in msgspec.structs.fields(RunRecord)]


# -- hook scripts in a real engine ------------------------------------------------------------


def _program(fence: Fence, directory: Path, name: str) -> list[str]:
    path = directory / (name + (".py" if fence.lang == "python" else ".sh"))
    path.write_text(fence.body)
    if fence.body.startswith("#!"):
        path.chmod(0o755)  # run through its shebang, as a user would
        return [str(path)]
    return [sys.executable if fence.lang == "python" else "bash", str(path)]


async def test_hook_examples_run_as_documented(tmp_path: Path) -> None:
    config_dir, workspace, scripts = tmp_path / "global", tmp_path / "ws", tmp_path / "scripts"
    workspace.mkdir()
    scripts.mkdir()
    toml: list[str] = []
    json_hooks: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    for fence in fences("hook"):
        case = fence.attrs["case"]
        argv = _program(fence, scripts, case)
        tool = f"doc_{case}"  # one tool per case: each call runs only its own hook
        if fence.attrs["hook"] == "toml":
            toml.append(
                f'[[hooks.pre_tool]]\nid = "{case}"\nmatch = "{tool}"\n'
                f"args = {json.dumps(argv)}\ntimeout_seconds = 10\n"
            )
            names[case] = case
        else:
            matcher = {"tool_name": tool, **dict(HOOK_CASES[case].matcher)}
            executor = {"type": "bash", "command": shlex.join(argv)}
            json_hooks.append(
                {"id": case, "event": "pre_tool_use", "matcher": matcher, "executor": executor}
                | {"timeout_ms": 10000}
            )
            names[case] = f"user:{case}"
    # A TOML hook that keeps what it reads on stdin, for the ```json stdin examples.
    stdin_fences = fences("json-stdin")
    for n, fence in enumerate(stdin_fences):
        tool = json.loads(fence.body)["tool"]
        keep = "cat > " + shlex.quote(str(scripts / f"stdin-{n}.json"))
        toml.append(
            f'[[hooks.pre_tool]]\nid = "stdin-{n}"\nmatch = "{tool}"\ncommand = {json.dumps(keep)}\n'
        )
    write_toml_hooks(config_dir, "\n".join(toml))
    write_json_hooks(config_dir, json_hooks)

    outcomes: dict[tuple[str, int], Outcome] = {}
    stdin_outcomes: dict[int, Outcome] = {}
    with trio.fail_after(20):
        async with (
            HookEngine.open(
                workspace=workspace, config_dir=config_dir, state_dir=tmp_path / "state"
            ) as engine,
            trio.open_nursery() as nursery,
        ):
            assert engine.table.problems == ()

            async def call(case: str, i: int, args: dict[str, Any]) -> None:
                outcomes[case, i] = await engine.pre_tool(f"doc_{case}", args, session_id="d")

            async def fire(n: int, payload: dict[str, Any]) -> None:
                stdin_outcomes[n] = await engine.fire("pre_tool", payload)

            for case in names:
                for i, c in enumerate(HOOK_CASES[case].calls):
                    nursery.start_soon(call, case, i, c.args)
            for n, fence in enumerate(stdin_fences):
                here = {"workspace": str(workspace), "cwd": str(workspace)}
                nursery.start_soon(fire, n, json.loads(fence.body) | here)

    for case, name in names.items():
        for i, c in enumerate(HOOK_CASES[case].calls):
            out = outcomes[case, i]
            what = f"{case} {c.args}: {msgspec.json.encode(out).decode()}"
            assert [r.hook for r in out.runs] == ([name] if c.runs else []), what
            assert out.warnings == [], what
            if c.blocked is not None:
                assert out.blocked and out.reason == c.blocked, what
                assert out.message_for_model == f"blocked by pre_tool hook: {c.blocked}"
            else:
                assert not out.blocked, what
                assert out.args == (c.rewritten if c.rewritten is not None else c.args), what
    for n, fence in enumerate(stdin_fences):
        assert [r.outcome for r in stdin_outcomes[n].runs] == ["ok"]
        seen = json.loads((scripts / f"stdin-{n}.json").read_text())
        here = {"workspace": str(workspace), "cwd": str(workspace)}
        assert seen == json.loads(fence.body) | here  # exactly these fields, these values


# -- the websocket protocol against a real server ---------------------------------------------

TOKEN = "docs-token-0123456789"
AUTH = [(b"Authorization", f"Bearer {TOKEN}".encode())]
#: Where protocol.md's examples pretend the global config lives.
DOC_CONFIG_DIR = "/home/me/.config/triohooks"
DOC_URL = "ws://127.0.0.1:8765/"
#: Values that differ from run to run: only their JSON type is compared.
VOLATILE = frozenset({"time", "duration_ms"})
#: The hook protocol.md's examples show ("guard-push": git push is for humans).
GUARD_PUSH = """
[[hooks.pre_tool]]
id = "guard-push"
match = "bash"
command = 'if grep -q "git push"; then echo "no pushing" >&2; exit 2; fi'
"""


def matches(expected: Any, actual: Any, key: str | None = None) -> bool:
    """Does a received JSON value fit a documented one? A ``"...": "..."`` member allows more
    members; ``...`` inside a string stands for anything; VOLATILE keys only need their type."""
    if key in VOLATILE:
        return isinstance(actual, int | float) and isinstance(expected, int | float)
    if isinstance(expected, dict):
        keys = set(expected) - {"..."}
        if not isinstance(actual, dict) or not keys <= set(actual):
            return False
        if "..." not in expected and set(actual) != keys:
            return False
        return all(matches(expected[k], actual[k], k) for k in keys)
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(matches(e, a) for e, a in zip(expected, actual, strict=True))
        )
    if isinstance(expected, str) and "..." in expected:
        return isinstance(actual, str) and _pattern(expected).fullmatch(actual) is not None
    return type(expected) is type(actual) and bool(expected == actual)


async def _expect(
    ws: WebSocketConnection, pending: list[Any], expected: Any, config_dir: Path
) -> None:
    """Wait for a frame that fits ``expected``; frames that don't are kept for later lines."""
    with trio.move_on_after(3):
        while True:
            for i, got in enumerate(pending):
                if matches(expected, got):
                    del pending[i]
                    return
            text = await ws.get_message()
            assert isinstance(text, str)
            decode_server(text)
            pending.append(json.loads(text.replace(str(config_dir), DOC_CONFIG_DIR)))
    pytest.fail(f"no frame like {json.dumps(expected)}\nreceived: {json.dumps(pending)}")


async def run_session(server: HookServer, fence: Fence, config_dir: Path) -> None:
    async with open_websocket(server.url, AUTH) as ws:
        pending: list[Any] = []
        for line in fence.lines():
            side, _ = decode_frame(line)
            if side == "client":
                await ws.send_message(line)
            else:
                await _expect(ws, pending, json.loads(line), config_dir)


async def check_handshake(server: HookServer, fence: Fence) -> None:
    request, *header_lines = fence.lines()
    method, path, version = request.split()
    assert (method, version) == ("GET", "HTTP/1.1")
    headers = []
    for line in header_lines:
        name, _, value = line.partition(":")
        value = re.sub(r"\S+\.\.\.", TOKEN, value.strip())  # the doc's elided token
        headers.append((name.encode(), value.encode()))
    async with open_websocket(server.url.rstrip("/") + path, headers) as ws:
        await ws.send_message('{"type":"ping","id":1}')
        assert decode_server(await ws.get_message()) == decode_server('{"type":"pong","id":1}')
    with pytest.raises(ConnectionRejected) as rejected:  # "a missing token is refused"
        async with open_websocket(server.url.rstrip("/") + path):
            pass
    assert rejected.value.status_code == 401


async def run_client_program(tmp_path: Path, server: HookServer, fence: Fence) -> str:
    assert DOC_URL in fence.body
    code = fence.body.replace(DOC_URL, server.url)
    tmp_path.mkdir()
    env = isolated_env(tmp_path)
    (Path(env["TRIOHOOKS_STATE_DIR"]) / TOKEN_FILE_NAME).write_text(TOKEN + "\n")
    done = await trio.run_process(
        [sys.executable, "-c", code],
        cwd=elsewhere(tmp_path),
        env=env,
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


async def test_protocol_examples_against_a_real_server(tmp_path: Path) -> None:
    config_dir, workspace = tmp_path / "global", tmp_path / "ws"
    workspace.mkdir()
    write_toml_hooks(config_dir, GUARD_PUSH)
    engine = {
        "workspace": workspace,
        "config_dir": config_dir,
        "state_dir": tmp_path / "state",
        "audit": False,
    }
    settings = ServeSettings(
        token=TOKEN, port=0, engine=engine, close_timeout_s=0.5, fire_grace_s=5
    )
    sessions = fences("json-session")
    handshakes = fences("http")
    clients = fences("python-client")
    assert sessions and handshakes and clients
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            server: HookServer = await nursery.start(serve, settings)
            try:
                for fence in sessions:
                    await run_session(server, fence, config_dir)
                for fence in handshakes:
                    await check_handshake(server, fence)
                for n, fence in enumerate(clients):
                    out = await run_client_program(tmp_path / f"client-{n}", server, fence)
                    assert "blocked: True blocked by pre_tool hook: no pushing" in out, out
            finally:
                server.shutdown()


# -- programs ----------------------------------------------------------------------------------


@pytest.mark.parametrize("fence", params("python"))
async def test_python_example_runs(tmp_path: Path, fence: Fence) -> None:
    # integrations.md's agents are templates guarded by the user's own hooks: the examples'.
    user = (ROOT / "examples/hooks.toml").read_text() if fence.doc == "integrations.md" else None
    env = isolated_env(tmp_path, user)
    with trio.fail_after(30):
        done = await trio.run_process(
            [sys.executable, "-c", fence.body],
            cwd=elsewhere(tmp_path),
            env=env,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()


def _server_tags() -> set[str]:
    return {t.__struct_config__.tag for t in typing.get_args(ServerMessage)}


def _server_fields() -> set[str]:
    return set().union(*(_field_names(t) for t in typing.get_args(ServerMessage)))


@pytest.mark.parametrize("fence", params("js"))
async def test_js_example_uses_real_frames(tmp_path: Path, fence: Fence) -> None:
    sent = re.findall(r'\btype:\s*"(\w+)"', fence.body)
    received = re.findall(r'\.type === "(\w+)"', fence.body)
    fields = re.findall(r"\bmsg\.(\w+)", fence.body)
    outcome_fields = re.findall(r"\.outcome\.(\w+)", fence.body)
    events = re.findall(r'\bfire\("(\w+)"', fence.body)
    assert sent and received and fields and outcome_fields and events
    assert set(sent) <= set(CLIENT_TYPES)
    assert set(received) <= _server_tags()
    assert set(fields) <= _server_fields() | {"type"}
    assert set(outcome_fields) <= _field_names(Outcome)
    for event in events:
        canonical_event(event)
    node = shutil.which("node")
    if node is None:
        return  # the syntax check needs node; the frame checks above ran
    script = tmp_path / "example.mjs"
    script.write_text(fence.body)
    with trio.fail_after(10):
        done = await trio.run_process(
            [node, "--check", str(script)], capture_stderr=True, check=False
        )
    assert done.returncode == 0, done.stderr.decode()


# -- command lines and synopses ----------------------------------------------------------------

#: Sample values for the placeholders of synopses.
PLACEHOLDERS = {
    "EVENT": "pre_tool",
    "TRANSCRIPT": "session.jsonl",
    "AGENT": "claude",
    "TARGET": "triohooks",
    "SCOPE": "project",
    "ACTION": "list",
    "DIR": ".",
    "FILE": "hooks.toml",
    "PATH": "token",
    "ID": "block-git",
    "HOST": "127.0.0.1",
    "PORT": "0",
    "S": "0",
    "URL": "ws://127.0.0.1:8765/",
    "NAME": "pre_tool",
    "COUNT": "256",
    "BYTES": "1048576",
    "SECONDS": "60",
    "FORMAT": "human",
}


def parse_cli(argv: list[str]) -> argparse.Namespace:
    try:
        return _cli._parser().parse_args(argv)
    except SystemExit:
        pytest.fail(f"the CLI does not accept: triohooks {shlex.join(argv)}")


def subparser(argv: list[str]) -> argparse.ArgumentParser:
    """The (sub)parser the leading command words of ``argv`` select."""
    parser = _cli._parser()
    for word in argv:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs or word not in subs[0].choices:
            break
        parser = subs[0].choices[word]
    return parser


def parser_options(parser: argparse.ArgumentParser) -> set[str]:
    return {o for a in parser._actions for o in a.option_strings if o.startswith("--")} - {"--help"}


def synopsis_argv(synopsis: str) -> tuple[list[str], set[str]]:
    """A usage line as an argv (every optional part given, the first of ``a|b``, placeholders
    filled in) and the options it names."""
    words = synopsis.split("#", 1)[0].replace("\\|", "|").replace("[", " ").replace("]", " ")
    tokens = words.split()
    assert tokens[0] == "triohooks", synopsis
    argv = []
    for token in tokens[1:]:
        word = token.removesuffix("...").split("|")[0]
        if word:
            argv.append(PLACEHOLDERS[word] if word.isupper() else word)
    return argv, {t for t in argv if t.startswith("--")}


def check_synopsis(synopsis: str) -> tuple[list[str], set[str]]:
    argv, options = synopsis_argv(synopsis)
    parse_cli(argv)
    unknown = options - parser_options(subparser(argv))
    assert not unknown, f"{synopsis}: no such option {sorted(unknown)}"
    return argv, options


def _logical_lines(body: str) -> Iterator[str]:
    """Lines, with indented continuation lines joined to the line before."""
    current = ""
    for line in body.splitlines():
        if line[:1].isspace() and current:
            current += " " + line.strip()
            continue
        if current:
            yield current
        current = line.strip()
    if current:
        yield current


@pytest.mark.parametrize("fence", params("synopsis"))
def test_synopsis_matches_the_cli(fence: Fence) -> None:
    for synopsis in _logical_lines(fence.body):
        check_synopsis(synopsis)


#: The dev environment's commands (pyproject.toml's dev extra), on PATH or not.
VENV_BIN = str(Path(sys.executable).parent)

#: Shell words that end a command (what follows is not its arguments).
_SHELL_OPERATORS = frozenset({"&", "&&", "||", "|", ";", ">", ">>", "<", "2>"})


@pytest.mark.parametrize("fence", params("sh"))
async def test_command_lines_are_real(fence: Fence) -> None:
    with trio.fail_after(10):
        syntax = await trio.run_process(
            ["bash", "-n", "-c", fence.body], capture_stderr=True, check=False
        )
    assert syntax.returncode == 0, syntax.stderr.decode()
    makefile = (ROOT / "Makefile").read_text()
    for line in fence.lines():
        words = shlex.split(line, comments=True)
        for i, word in enumerate(words):
            if word in _SHELL_OPERATORS:
                words = words[:i]
                break
        if not words:
            continue
        if words[0] == "triohooks":
            parse_cli(words[1:])
        elif words[0] == "make":
            for target in words[1:]:
                assert re.search(rf"^{re.escape(target)}:", makefile, re.MULTILINE), target
        else:  # on PATH, or a tool the dev extra installs into this venv (pipx, uv)
            found = shutil.which(words[0]) or shutil.which(words[0], path=VENV_BIN)
            assert found, f"{fence.where}: {words[0]!r} is not on PATH"


# -- reference tables --------------------------------------------------------------------------


def table_after(doc: str, heading: str) -> list[list[str]]:
    """The cells of the first table after ``heading`` in ``doc`` (header row left out)."""
    text = (DOCS_DIR / doc).read_text()
    start = text.index(f"\n{heading}\n")
    rows: list[list[str]] = []
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            if rows:
                break
            continue
        rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
    return rows[2:]  # without the header and the |---| line


def code_spans(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def first_column(doc: str, heading: str) -> list[str]:
    return [name for row in table_after(doc, heading) for name in code_spans(row[0])]


def test_reference_outcome_table_matches_the_outcome() -> None:
    rows = table_after("reference.md", "## The Outcome")
    names = [name for row in rows for name in code_spans(row[0])]
    assert names == [f.encode_name for f in msgspec.structs.fields(Outcome)]
    (runs,) = [row[1] for row in rows if code_spans(row[0]) == ["runs"]]
    documented = code_spans(runs)[0].split(", ")
    assert documented == [f.encode_name for f in msgspec.structs.fields(RunRecord)]


#: Options a command accepts that its reference row leaves out on purpose.
#: Options a command has that the reference table need not list (none today).
UNDOCUMENTED_OPTIONS: dict[str, set[str]] = {}
#: "Every command but demo takes --config-dir", said once below the table.
COMMON_OPTIONS = {"--config-dir"}


def test_reference_cli_table_matches_the_cli() -> None:
    rows = table_after("reference.md", "## `triohooks` commands")
    commands = []
    for row in rows:
        synopsis = code_spans(row[0])[0]
        argv, options = check_synopsis(synopsis)
        command = argv[0]
        commands.append(command)
        if synopsis.endswith("..."):
            continue  # its actions are documented (and checked) elsewhere
        expected = parser_options(subparser(argv)) - COMMON_OPTIONS
        expected -= UNDOCUMENTED_OPTIONS.get(command, set())
        assert options == expected, synopsis
    assert sorted(commands) == sorted(_cli.COMMANDS)


def test_protocol_tables_match_the_wire_types() -> None:
    assert set(first_column("protocol.md", "### Client → server")) == set(CLIENT_TYPES)
    assert set(first_column("protocol.md", "### Server → client")) == _server_tags()
    kinds = [row[0] for row in table_after("protocol.md", "### Subscribe")]
    assert {k.strip("`") for k in kinds} == EVENT_KINDS
    codes = first_column("protocol.md", "### Errors")
    assert set(codes) == set(typing.get_args(ErrorCode))
