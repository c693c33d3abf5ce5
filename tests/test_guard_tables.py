"""Every row of the guards' adversarial tables (tests/guard_tables.py) is a test, run through the
real engine with the policy ``triohooks init`` writes (``on_uncertain = "block"`` for all five
guards, as issue 36 decides), in a temporary home and workspace:

- a should-block row must be blocked by the guard it names, in the agent's own answer (its deny
  carries the guard's reason); it runs on an engine holding that guard alone (the policy's own
  block for it), so a row is not passed by another guard that happens to come first in the chain;
- a go-on row must go on through the whole policy, with no warning;
- a row whose point is how bash reads its words is also run by the real bash, with PATH pointing
  nowhere so nothing runs, and the command bash then looks up must be the one the row names.

The engines are opened once per module, in a trio loop on a thread of their own (each row is a
plain test calling into it), and answer each call in process: native calls through
``engine.pre_tool``, agent calls through ``engine.agent_hook`` with the agent's own hook input.
"""

from __future__ import annotations

import json
import math
import os
import pwd
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import pytest
import trio

from tests.conftest import _live_children
from tests.guard_tables import (
    FIXTURES,
    GO_ON,
    GO_ON_ROWS,
    GUARDS,
    ROWS,
    SHAPES,
    SHOULD_BLOCK,
    Row,
)
from triohooks import HookEngine
from triohooks.agents.spec import SPECS
from triohooks.fronts.init_cli import STARTER

T = TypeVar("T")
#: The engine with the whole policy; the others hold one guard each.
ALL = "all"


# --- the policy --------------------------------------------------------------------------------


def policy(keep: tuple[str, ...]) -> str:
    """``triohooks init``'s policy as it writes it (each guard with ``on_uncertain = "block"``),
    keeping the guards in ``keep`` (in the policy's own order)."""
    _, *blocks = STARTER.split("[[hooks.pre_tool]]")
    kept: list[str] = []
    names: list[str] = []
    for block in blocks:
        found = re.search(r'^builtin = "(\w+)"$', block, re.MULTILINE)
        assert found is not None, block
        names.append(found.group(1))
        if found.group(1) in keep:
            kept.append("[[hooks.pre_tool]]" + block)
    assert names == list(GUARDS), f"init's policy changed: {names}"
    return "".join(kept)


def test_the_policy_is_inits_with_uncertain_blocking() -> None:
    text = policy(GUARDS)
    assert text.count("[[hooks.pre_tool]]") == 5
    assert text.count('on_uncertain = "block"') == 5
    assert 'branches = ["main", "master"]' in text
    assert policy(("secret_reads",)).count("builtin =") == 1


# --- the layout --------------------------------------------------------------------------------


def _git(*args: str, home: Path) -> None:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)}
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    done = subprocess.run(
        ["git", *args], capture_output=True, text=True, env=env, timeout=30, check=False
    )
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"


class Layout:
    """The home, workspace and repositories the rows run in (guard_tables.py's docstring). The
    root is outside /tmp (under /var/tmp): the policy lets writes to /tmp through, and a home
    under /tmp would make every write to it look allowed."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="triohooks-tables-", dir="/var/tmp")).resolve()
        self.tmp = Path(tempfile.mkdtemp(prefix="triohooks-tables-", dir="/tmp")).resolve()
        assert not self.root.is_relative_to("/tmp")
        self.home = self.root / "home"
        self.ws = self.home / "proj"
        self.roothome = pwd.getpwnam("root").pw_dir
        self.places = {
            "@HOME@": str(self.home),
            "@WS@": str(self.ws),
            "@TMP@": str(self.tmp),
            "@ROOTHOME@": self.roothome,
        }
        try:
            self._build()
        except Exception:
            self.remove()
            raise

    def _files(self, base: Path, files: Mapping[str, str]) -> None:
        for name, text in files.items():
            path = base / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)

    def _build(self) -> None:
        key = "-----BEGIN OPENSSH PRIVATE KEY-----\nnot a real key\n-----END OPENSSH PRIVATE KEY-----\n"
        self._files(
            self.home,
            {
                ".ssh/id_ed25519": key,
                ".ssh/id_ed25519.pub": "ssh-ed25519 AAAA me@host\n",
                ".ssh/config": "Host *\n",
                ".aws/credentials": "[default]\naws_secret_access_key = x\n",
                ".aws/config": "[default]\n",
                ".config/gcloud/application_default_credentials.json": "{}\n",
                ".config/gh/hosts.yml": "github.com:\n  oauth_token: x\n",
                ".kube/config": "apiVersion: v1\n",
                ".docker/config.json": "{}\n",
                ".gnupg/pubring.kbx": "",
                ".password-store/github.gpg": "",
                ".netrc": "machine x login y password z\n",
                ".git-credentials": "https://u:p@example.com\n",
                ".npmrc": "//registry.npmjs.org/:_authToken=x\n",
                ".pypirc": "[pypi]\n",
                ".pgpass": "*:*:*:*:x\n",
                ".bashrc": "",
                ".zshrc": "",
                ".profile": "",
                ".gitconfig": "[user]\n\tname = me\n",
                ".cache/pip/x": "",
            },
        )
        self._files(
            self.ws,
            {
                ".env": "DB_PASSWORD=x\n",
                ".env.local": "A=1\n",
                ".env.production": "A=1\n",
                ".env.example": "DB_PASSWORD=\n",
                ".gitignore": ".env\n",
                "README.md": "# app\n",
                "Makefile": "all:\n",
                "package.json": "{}\n",
                "pyproject.toml": "",
                "setup.py": "",
                "src/app.py": "a\n",
                "src/util.py": "",
                "tests/test_app.py": "",
                "build/empty/.keep": "",
                "dist/app.tar.gz": "",
                "node_modules/.keep": "",
                "frontend/package.json": "{}\n",
                "docs/index.md": "",
                "config/credentials.json": "{}\n",
                "config/service-account-prod.json": "{}\n",
                "certs/server.key": key,
                "deploy.pem": key,
                "notebooks/a.ipynb": "{}\n",
            },
        )
        _git("init", "-q", "--bare", str(self.root / "remote.git"), home=self.home)
        for path, branch in (
            (self.ws, "feature/login"),
            (self.home / "other", "main"),
            (self.home / "legacy", "master"),
        ):
            path.mkdir(parents=True, exist_ok=True)
            _git("init", "-q", "-b", branch, str(path), home=self.home)
            _git(
                "-C",
                str(path),
                "remote",
                "add",
                "origin",
                str(self.root / "remote.git"),
                home=self.home,
            )
        self._files(self.home / "other", {"app.py": "", "README.md": "", "src/main.py": ""})
        links = {
            "ssh_link": (self.ws / "keys", self.home / ".ssh"),
            "aws_link": (self.ws / "notes.txt", self.home / ".aws/credentials"),
            "env_link": (self.ws / "settings.ini", self.ws / ".env"),
            "etc_link": (self.ws / "out", Path("/etc")),
            "home_link": (self.ws / "home-link", self.home),
            "tmp_link": (self.tmp / "etc-link", Path("/etc")),
        }
        assert set(links) | {"other_main", "legacy_master"} == set(FIXTURES)
        for link, target in links.values():
            link.symlink_to(target)

    def subst(self, value: T) -> T:
        """``value`` with the placeholders replaced, through lists and dicts."""
        if isinstance(value, str):
            for name, place in self.places.items():
                value = value.replace(name, place)  # type: ignore[assignment]
            return value
        if isinstance(value, list):
            return [self.subst(v) for v in value]  # type: ignore[return-value]
        if isinstance(value, dict):
            return {k: self.subst(v) for k, v in value.items()}  # type: ignore[return-value]
        return value

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
        shutil.rmtree(self.tmp, ignore_errors=True)


# --- asking the engine -------------------------------------------------------------------------


class Answer(NamedTuple):
    blocked: bool
    #: The reason the engine gives (the Outcome's, or the agent answer's).
    reason: str
    warnings: list[str]
    #: What the agent's own answer says when it denies ("" when it does not deny).
    denied: str


def denial(agent: str, output: Mapping[str, Any]) -> str:
    """The reason in ``agent``'s own answer when it denies the call, else ""."""
    if agent == "gemini":
        return str(output.get("reason", "")) if output.get("decision") in ("deny", "block") else ""
    if agent == "copilot":
        deny = output.get("permissionDecision") == "deny"
        return str(output.get("permissionDecisionReason", "")) if deny else ""
    if agent == "cursor":
        return str(output.get("agent_message", "")) if output.get("permission") == "deny" else ""
    specific = output.get("hookSpecificOutput") or {}
    deny = specific.get("permissionDecision") == "deny"
    return str(specific.get("permissionDecisionReason", "")) if deny else ""


def agent_input(row: Row, layout: Layout) -> dict[str, Any]:
    """The row's call as its agent sends it to a pre-tool hook."""
    shape = SHAPES[row.shape]
    args: dict[str, Any] = layout.subst(row.args)
    cwd = layout.subst(row.cwd) or str(layout.ws)
    if shape.agent == "cursor":
        common = {
            "conversation_id": "tables",
            "generation_id": "g",
            "hook_event_name": shape.event,
            "workspace_roots": [str(layout.ws)],
            "cwd": cwd,
        }
        if shape.event == "beforeShellExecution":
            return {**common, "command": args["command"]}
        if shape.event == "beforeReadFile":
            return {**common, "content": "", **args}
        return {
            **common,
            "tool_name": args["tool_name"],
            "tool_input": json.dumps(args["tool_input"]),
            "command": "npx mcp-fs",
        }
    if shape.agent == "copilot":  # camelCase; toolArgs a JSON string
        return {
            "sessionId": "tables",
            "cwd": cwd,
            "hook_event_name": shape.event,
            "timestamp": 1,
            "toolName": shape.tool,
            "toolArgs": json.dumps(args),
        }
    body = {
        "session_id": "tables",
        "cwd": cwd,
        "hook_event_name": shape.event,
        "tool_name": shape.tool,
        "tool_input": args,
    }
    if shape.agent == "gemini":
        body["timestamp"] = "2026-01-01T00:00:00Z"
    return body


async def ask(engine: HookEngine, row: Row, layout: Layout) -> Answer:
    shape = SHAPES[row.shape]
    with trio.fail_after(10):
        if not shape.agent:
            cwd = layout.subst(row.cwd) or str(layout.ws)
            out = await engine.pre_tool(shape.tool, layout.subst(row.args), cwd=cwd)
            reason = out.reason or ""
            return Answer(out.blocked, reason, list(out.warnings), reason if out.blocked else "")
        body = json.dumps(agent_input(row, layout)).encode()
        # The session's environment names its project, as the agent's own does (Claude Code's
        # CLAUDE_PROJECT_DIR ...), wherever the call's cwd is.
        names = next(s.project_env[:1] for n, s in SPECS.items() if n == shape.agent)
        env = {**os.environ, **{name: str(layout.ws) for name in names}}
        answer = (await engine.agent_hook(shape.agent, body, env=env)).answer
        return Answer(
            answer.blocked,
            answer.reason or "",
            list(answer.warnings),
            denial(shape.agent, answer.output),
        )


class Engines:
    """One engine per policy (the whole of it, and each guard alone), open for the module in a
    trio loop on a thread of its own; :meth:`ask` calls into it from a test."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.engines: dict[str, HookEngine] = {}
        self._ready = threading.Event()
        self._failed: Exception | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._stop: trio.Event | None = None
        self._thread = threading.Thread(target=self._main, name="guard-tables", daemon=True)

    def _main(self) -> None:
        try:
            trio.run(self._serve)
        except Exception as exc:  # handed to the test thread, which raises it
            self._failed = exc
        finally:
            self._ready.set()

    async def _serve(self) -> None:
        # The deadline covers opening the engines (their nurseries live inside it), not serving.
        with trio.fail_after(60) as opening:
            async with AsyncExitStack() as stack:
                for name in (ALL, *GUARDS):
                    config = self.layout.root / f"cfg-{name}"
                    config.mkdir()
                    text = policy(GUARDS if name == ALL else (name,))
                    (config / "hooks.toml").write_text(text)
                    self.engines[name] = await stack.enter_async_context(
                        HookEngine.open(
                            workspace=self.layout.ws,
                            config_dir=config,
                            state_dir=self.layout.root / f"state-{name}",
                            audit=False,
                        )
                    )
                opening.deadline = math.inf
                self._stop = trio.Event()
                self._token = trio.lowlevel.current_trio_token()
                self._ready.set()
                await self._stop.wait()

    def __enter__(self) -> Engines:
        self._thread.start()
        if not self._ready.wait(60):
            raise TimeoutError("the engines did not open in 60 s")
        if self._failed is not None:
            raise self._failed
        return self

    def __exit__(self, *exc: object) -> None:
        if self._token is not None and self._stop is not None:
            trio.from_thread.run_sync(self._stop.set, trio_token=self._token)
        self._thread.join(60)
        assert not self._thread.is_alive(), "the engines did not close in 60 s"

    def _call(self, fn: Callable[[], Awaitable[T]]) -> T:
        assert self._token is not None
        return trio.from_thread.run(fn, trio_token=self._token)

    def ask(self, policy_name: str, row: Row) -> Answer:
        engine = self.engines[policy_name]
        return self._call(lambda: ask(engine, row, self.layout))


@pytest.fixture(scope="module")
def layout() -> Iterator[Layout]:
    made = Layout()
    try:
        yield made
    finally:
        made.remove()


@pytest.fixture(autouse=True)
def no_leaked_processes() -> None:
    """This module's own leak check, in place of the suite's per-test one (tests/conftest.py):
    the engines' helper processes live as long as the module's tests run, which that check
    would wait out and report after every row, and its scan of every process costs more than a
    row. Here nothing a row starts outlives it (git and bash are waited for by subprocess.run),
    and the `engines` fixture checks, once the engines are closed, that none of theirs is left."""


@pytest.fixture(scope="module")
def engines(layout: Layout) -> Iterator[Engines]:
    """The engines, with HOME the layout's home while they run (the guards read ``~`` from it).
    They keep their helper processes for the module (see ``no_leaked_processes``); once they
    are closed, no process of theirs may be left."""

    def children() -> set[int]:
        return {p.pid for p in _live_children()}

    before = children()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(layout.home))
        with Engines(layout) as opened:
            yield opened
    deadline = time.monotonic() + 10
    while (left := children() - before) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not left, f"the engines left processes behind: {sorted(left)}"


# --- the rows ----------------------------------------------------------------------------------


def _text(row: Row) -> str:
    """The row's command (shell shapes) or its arguments, for ids and messages."""
    key = SHAPES[row.shape].command_key
    value: Any = row.args[key] if key else row.args
    if isinstance(value, list):
        value = value[-1]
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _ids(rows: list[Row]) -> list[str]:
    seen: Counter[str] = Counter()
    out = []
    for row in rows:
        shape = SHAPES[row.shape]
        where = row.args.get(shape.workdir_key, "") if shape.workdir_key else ""
        extra = f" in {where or row.cwd}" if where or row.cwd else ""
        key = f"{row.expect.replace(' ', '_')}-{row.shape}-{' '.join(_text(row).split())[:70]}"
        key += extra
        seen[key] += 1
        out.append(key if seen[key] == 1 else f"{key} #{seen[key]}")
    return out


def _names_guard(reason: str, guard: str) -> bool:
    """Whether ``reason`` is ``guard``'s: a block (``<guard> guard: ...``) or an uncertain call
    it blocks (``<guard> cannot read ...``), possibly after a front's own prefix."""
    return re.search(rf"(^|: ){guard} (guard:|cannot read)", reason) is not None


@pytest.mark.parametrize("row", SHOULD_BLOCK, ids=_ids(SHOULD_BLOCK))
def test_should_block(engines: Engines, row: Row) -> None:
    got = engines.ask(row.expect, row)
    said = f"{row.why}\n  call: {_text(row)!r}\n  answer: {got}"
    assert got.blocked, f"{row.expect} let it through: {said}"
    assert _names_guard(got.reason, row.expect), f"not {row.expect}'s block: {said}"
    if SHAPES[row.shape].agent:
        assert _names_guard(got.denied, row.expect), f"the agent's answer is no deny: {said}"


@pytest.mark.parametrize("row", GO_ON_ROWS, ids=_ids(GO_ON_ROWS))
def test_goes_on(engines: Engines, row: Row) -> None:
    got = engines.ask(ALL, row)
    said = f"{row.why}\n  call: {_text(row)!r}\n  answer: {got}"
    assert not got.blocked, f"blocked: {said}"
    assert got.warnings == [], f"went on with a warning: {said}"


# --- what the real bash reads ------------------------------------------------------------------

#: Prints, for each command bash looks up on PATH and does not find (PATH points nowhere, so
#: that is every program), the directory and the words: the command as bash would run it. One
#: write per command, to the script's own stdout (fd 3), which no pipe or substitution captures.
_NOT_FOUND = """exec 3>&1
command_not_found_handle() {
  local r; r=$(printf '%s\\037' "$PWD" "$@"); printf '%s\\036' "$r" >&3; return 127
}"""
BASH_ROWS = [row for row in ROWS if row.bash is not None]


def bash_reads(text: str, cwd: str, home: str) -> list[tuple[str, tuple[str, ...]]]:
    """The commands the real bash looks up running ``text`` in ``cwd``: (directory, argv)."""
    bash = shutil.which("bash")
    assert bash is not None, "no bash on PATH"
    # Nothing can run: programs are looked up on a PATH that holds none, and the rows checked
    # here name no program by its path and redirect nothing.
    assert ">" not in text and not re.search(r"(^|[;&|(`{]|(?<!\\)\n|\$\()\s*/", text), text
    done = subprocess.run(
        [bash, "--noprofile", "--norc", "-c", f"{_NOT_FOUND}\n{text}"],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={"PATH": "/nonexistent/triohooks-tables", "HOME": home, "LC_ALL": "C"},
        stdin=subprocess.DEVNULL,
        timeout=10,
        check=False,
    )
    commands = []
    for record in done.stdout.split("\036")[:-1]:
        place, *argv = record.split("\037")[:-1]
        commands.append((place, tuple(argv)))
    return commands


@pytest.mark.parametrize("row", BASH_ROWS, ids=_ids(BASH_ROWS))
def test_bash_reads_the_row_as_it_says(layout: Layout, row: Row) -> None:
    assert row.bash is not None
    shape = SHAPES[row.shape]
    workdir = row.args.get(shape.workdir_key, "") if shape.workdir_key else ""
    cwd = layout.subst(workdir or row.cwd) or str(layout.ws)
    seen = bash_reads(layout.subst(_text(row)), cwd, str(layout.home))
    argv = tuple(layout.subst(list(row.bash.argv)))
    place = layout.subst(row.bash.cwd)
    assert any(got == argv and (not place or where == place) for where, got in seen), (
        f"bash runs {seen}, not {argv} in {place or 'any directory'}: {row.why}"
    )


# --- the tables themselves ---------------------------------------------------------------------


def test_the_tables_are_complete() -> None:
    """At least 400 should-block rows over the five guards and the agents' tool shapes, 300
    go-on rows; every row names a known shape, guard and fixture, and says why."""
    assert len(SHOULD_BLOCK) >= 400 and len(GO_ON_ROWS) >= 300
    for row in ROWS:
        assert row.shape in SHAPES and row.expect in (*GUARDS, GO_ON), row
        assert set(row.needs) <= set(FIXTURES), row
        assert row.why.strip(), row
    per_guard = Counter(row.expect for row in SHOULD_BLOCK)
    assert set(per_guard) == set(GUARDS) and min(per_guard.values()) >= 50, per_guard
    agents = {SHAPES[row.shape].agent for row in SHOULD_BLOCK}
    assert agents == {"", "claude", "codex", "gemini", "qwen", "copilot", "cursor"}
    assert len(set(_ids(ROWS))) == len(ROWS)
