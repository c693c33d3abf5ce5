"""The quiet-call cache of ``triohooks fire`` (:mod:`triohooks.fronts.fire_cache`): a repeated
call no hook can run for is answered by the standard library alone, byte for byte as the long
way answers it, and every change it rests on (a config file, the workspace, the environment,
the payload's shape, the cache file itself) sends the call the long way again.

Each call runs the real console entry in a child process and reports whether msgspec was
imported: not imported means the cache answered."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from .helpers import write_json_hooks, write_toml_hooks

pytestmark = pytest.mark.slow

#: The console entry on argv[1:]; prints, on the last stderr line, whether msgspec loaded.
ENTRY = textwrap.dedent(
    """
    import sys
    from triohooks.fronts.entry import main
    sys.argv = ["triohooks", *sys.argv[1:]]
    try:
        code = main()
    except SystemExit as exc:
        code = exc.code
    sys.stdout.flush()
    sys.stderr.write("\\nmsgspec loaded: %s" % ("msgspec" in sys.modules))
    sys.exit(code)
    """
)

GUARD = """
[[hooks.pre_tool]]
match = "Bash"
command = "echo 'no shell' >&2; exit 2"

[[hooks.pre_tool]]
if = "shell(git push *)"
command = "exit 2"

[[hooks.post_tool]]
match = "Write"
command = "true"
"""
READ = json.dumps({"tool": "Read", "args": {"path": "src/app.py"}})


@dataclass(frozen=True)
class Fired:
    returncode: int
    stdout: str
    stderr: str
    cached: bool


class Env:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.ws = root / "ws"
        self.config = root / "g"
        self.cache = root / "cache"
        self.ws.mkdir(exist_ok=True)
        self.extra: dict[str, str] = {"_TRIOHOOKS_FIRE_CACHE_SETTLE_MS": "0"}

    def fire(
        self,
        *args: str,
        stdin: bytes | str = READ,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> Fired:
        environ = {
            k: v for k, v in os.environ.items() if not k.startswith(("TRIOHOOKS_", "_TRIOHOOKS_"))
        }
        environ |= {
            "TRIOHOOKS_CONFIG_DIR": str(self.config),
            "TRIOHOOKS_STATE_DIR": str(self.root / "state"),
            "TRIOHOOKS_CACHE_DIR": str(self.cache),
            **self.extra,
            **(env or {}),
        }
        done = subprocess.run(
            [sys.executable, "-c", ENTRY, "fire", *(args or ("pre_tool",))],
            input=stdin.encode() if isinstance(stdin, str) else stdin,
            capture_output=True,
            env=environ,
            cwd=cwd or self.ws,
            timeout=60,
            check=False,
        )
        err, _, flag = done.stderr.decode().rpartition("\nmsgspec loaded: ")
        return Fired(done.returncode, done.stdout.decode(), err, cached=flag == "False")

    def long_way(
        self, *args: str, stdin: bytes | str = READ, env: dict[str, str] | None = None
    ) -> Fired:
        return self.fire(*args, stdin=stdin, env={**(env or {}), "TRIOHOOKS_FIRE_CACHE": "off"})

    def entries(self) -> list[Path]:
        return (
            sorted((self.cache / "fire").glob("*.json")) if (self.cache / "fire").exists() else []
        )


@pytest.fixture
def env(tmp_path: Path) -> Env:
    e = Env(tmp_path)
    write_toml_hooks(e.config, GUARD)
    return e


def same(a: Fired, b: Fired) -> bool:
    return (a.returncode, a.stdout, a.stderr) == (b.returncode, b.stdout, b.stderr)


# -- hits -----------------------------------------------------------------------------------------
def test_a_second_call_for_the_tool_is_answered_from_the_cache(env: Env) -> None:
    first = env.fire(stdin=READ)
    assert not first.cached and first.returncode == 0
    assert len(env.entries()) == 1
    other_args = json.dumps({"tool": "Read", "args": {"path": "elsewhere", "limit": 3}})
    second = env.fire(stdin=other_args)
    assert second.cached  # the tool, not the arguments, is what was remembered
    assert same(second, env.long_way(stdin=other_args))
    assert json.loads(second.stdout)["args"] == {"path": "elsewhere", "limit": 3}


def test_a_tool_a_hook_may_run_for_is_never_cached(env: Env) -> None:
    bash = json.dumps({"tool": "Bash", "args": {"command": "ls"}})
    for _ in range(2):
        fired = env.fire(stdin=bash)
        assert fired.returncode == 2 and not fired.cached  # the guard ran, both times
    push_free = json.dumps({"tool": "run_shell", "args": {"command": "ls"}})
    for _ in range(2):  # an ``if`` shell rule depends on the command: the long way each time
        assert not env.fire(stdin=push_free).cached


def test_every_event_word_and_option_the_cache_takes(env: Env) -> None:
    for args, stdin in [
        (("pre_tool_use",), json.dumps({"tool_name": "Read", "arguments": {"p": 1}})),
        (("prompt_submit", "--json", "--no-audit"), '{"prompt": "hi", "session_id": "s"}'),
        (("post_tool",), json.dumps({"tool": "Read", "args": {}, "result": {"n": [1]}})),
        (("session_start",), ""),
    ]:
        env.fire(*args, stdin=stdin)
        again = env.fire(*args, stdin=stdin)
        assert again.cached, args
        assert same(again, env.long_way(*args, stdin=stdin)), args


@pytest.mark.parametrize(
    "args",
    [("pre_tool", "--trust"), ("pre_tool", "--workspace", "."), ("stop",), ("pre_tool", "-h")],
)
def test_other_command_lines_always_take_the_long_way(env: Env, args: tuple[str, ...]) -> None:
    for _ in range(2):
        assert not env.fire(*args).cached
    assert env.entries() == []


# -- every payload reads as the long way reads it -------------------------------------------------
PAYLOADS = [
    b"",
    b"  \n",
    b"{}",
    READ.encode(),
    b'{"tool": "Read", "args": null}',
    b'{"tool": "Read", "event": "pre_tool", "unknown": {"deep": [1, 2]}}',
    b'{"tool": "Read", "args": {"x": 1.5}}',  # a float
    b'{"tool": "Read", "args": {"x": 1e400}}',
    b'{"tool": "Read", "args": {"x": NaN}}',
    b'{"tool": "Read", "args": {"a": 1, "a": 2}}',  # a duplicate key
    b'{"tool": "Read", "args": {"x": "\\ud800"}}',  # a lone surrogate
    b'{"tool": "Read", "args": {"x": 123456789012345678901234567890}}',
    b'{"tool": "Read", "args": {"x": -9223372036854775809}}',
    b'{"tool": "Read", "args": {"s": "\\u0000\\u001f\\u007f\\u2028 \xc3\xa9 \xf0\x9f\x98\x80 \\n\\t"}}',
    b'{"tool": "Read", "args": 5}',  # the wrong type: an error
    b'{"tool": 5}',
    b'{"tool": "Read", "session_id": null}',
    b'{"tool": "Read", "prompt_id": null, "tool_call_id": "c1"}',
    b"[1]",
    b"{not json",
    b'\xef\xbb\xbf{"tool": "Read"}',  # a BOM
    b'{"tool": "Read", "args": {"x": "\xff"}}',  # not UTF-8
    b'{"tool": "Read", "args": ' + b"[" * 5000 + b"]" * 5000 + b"}",
    b'{"tool": "Read", "args": {"\xc3\xa9": {"k": [true, false, null, 0, -1]}}}',
    b'{"tool": "Read"}   \n\n',
]


def test_every_payload_gets_the_long_way_answer(env: Env) -> None:
    env.fire(stdin=READ)  # the entry for Read
    hits = 0
    for payload in PAYLOADS:
        fired = env.fire(stdin=payload)
        hits += fired.cached
        assert same(fired, env.long_way(stdin=payload)), payload[:80]
        assert "Traceback" not in fired.stderr
    assert hits >= 7  # the plain ones came from the cache


# -- what sends a call the long way again ---------------------------------------------------------
def test_a_config_change_is_seen_at_once(env: Env) -> None:
    env.fire()
    assert env.fire().cached
    write_toml_hooks(
        env.config, GUARD + '\n[[hooks.pre_tool]]\nmatch = "Read"\ncommand = "exit 2"\n'
    )
    fired = env.fire()
    assert fired.returncode == 2 and not fired.cached and json.loads(fired.stdout)["blocked"]
    # A JSON file beside it, a trust store: each is part of the entry too.
    write_toml_hooks(env.config, GUARD)
    env.fire()
    assert env.fire().cached
    write_json_hooks(env.config, [])
    assert not env.fire().cached
    (env.config / "trust.json").write_text("{}")
    assert not env.fire().cached


def test_a_same_size_rewrite_in_place_is_seen(env: Env) -> None:
    # mtime and ctime move even when size and inode do not.
    env.fire()
    assert env.fire().cached
    path = env.config / "hooks.toml"
    text = path.read_text()
    blocking = text.replace('match = "Write"', 'match = "Read*"')
    assert len(blocking) == len(text)
    time.sleep(0.02)  # past one tick of the file clock
    with open(path, "r+") as f:
        f.write(blocking)
    fired = env.fire()
    assert not fired.cached and fired.returncode == 0  # a post_tool hook now, not pre_tool
    assert env.fire("post_tool").returncode == 0


def test_workspace_hooks_are_never_cached(env: Env) -> None:
    env.fire()
    assert env.fire().cached
    write_toml_hooks(env.ws / ".agents", '[[hooks.pre_tool]]\nmatch = "Bash"\ncommand = "exit 2"\n')
    for _ in range(2):  # untrusted: a warning each time, from the long way
        fired = env.fire()
        assert not fired.cached
        assert same(fired, env.long_way())
    assert json.loads(env.entries()[0].read_text())["events"]["pre_tool"]["quiet_tools"] == ["Read"]


def test_another_directory_or_environment_is_another_entry(env: Env, tmp_path: Path) -> None:
    env.fire()
    assert env.fire().cached
    other = tmp_path / "other-ws"
    other.mkdir()
    assert not env.fire(cwd=other).cached
    strict = tmp_path / "strict"
    write_toml_hooks(strict, '[[hooks.pre_tool]]\nmatch = "Read"\ncommand = "exit 2"\n')
    fired = env.fire(env={"TRIOHOOKS_CONFIG_DIR": str(strict)})
    assert fired.returncode == 2 and not fired.cached
    assert env.fire().cached  # the first one is still there


def test_the_judge_key_variable_is_part_of_the_answer(env: Env) -> None:
    judge = {
        "TRIOHOOKS_JUDGE_BASE_URL": "http://127.0.0.1:9",
        "TRIOHOOKS_JUDGE_API_KEY_VAR": "MY_KEY",
    }
    env.fire(env=judge)
    unset = env.fire(env=judge)
    assert unset.cached and "API key variable MY_KEY is not set" in unset.stderr
    assert same(unset, env.long_way(env=judge))
    with_key = env.fire(env={**judge, "MY_KEY": "sk-test"})
    assert not with_key.cached and with_key.stderr == ""
    assert same(with_key, env.long_way(env={**judge, "MY_KEY": "sk-test"}))


def test_a_fresh_config_file_is_not_remembered_until_it_settles(env: Env) -> None:
    del env.extra["_TRIOHOOKS_FIRE_CACHE_SETTLE_MS"]  # the real 2 s
    env.fire()
    assert env.entries() == [] and not env.fire().cached
    past = time.time() - 10
    os.utime(env.config / "hooks.toml", (past, past))  # mtime can be set back; ctime cannot
    env.fire()
    assert env.entries() == []


def test_off_writes_and_reads_nothing(env: Env) -> None:
    env.long_way()
    env.long_way()
    assert env.entries() == [] and not env.long_way().cached


# -- the cache file itself ------------------------------------------------------------------------
def test_an_entry_anyone_else_could_write_is_ignored(env: Env) -> None:
    env.fire()
    (entry,) = env.entries()
    entry.chmod(0o644)
    assert not env.fire().cached
    entry.chmod(0o600)
    (env.cache / "fire").chmod(0o755)
    assert not env.fire().cached  # the directory too; the writer makes it private again
    assert (env.cache / "fire").stat().st_mode & 0o777 == 0o700
    assert env.fire().cached


def test_a_symlinked_fifo_or_damaged_entry_is_ignored(env: Env, tmp_path: Path) -> None:
    env.fire()
    (entry,) = env.entries()
    saved = entry.read_bytes()
    entry.unlink()
    forged = tmp_path / "forged.json"
    forged.write_bytes(saved)
    forged.chmod(0o600)
    entry.symlink_to(forged)
    assert not env.fire().cached
    entry.unlink()
    os.mkfifo(entry, 0o600)
    assert not env.fire().cached  # never blocks on it either (the call has a timeout)
    entry.unlink()
    entry.write_bytes(saved[: len(saved) // 2])
    entry.chmod(0o600)
    assert not env.fire().cached
    assert env.fire().cached  # rewritten whole by the long way


def test_a_forged_quiet_tool_for_another_config_does_not_carry_over(env: Env) -> None:
    # An entry says Bash is quiet, but its file signatures are not those of today's config:
    # the entry is not used, and the guard runs.
    env.fire()
    (entry,) = env.entries()
    data = json.loads(entry.read_text())
    data["events"]["pre_tool"]["quiet_tools"].append("Bash")
    data["files"][0][1][4] += 1  # the mtime of hooks.toml, one ns off
    entry.write_text(json.dumps(data))
    fired = env.fire(stdin=json.dumps({"tool": "Bash", "args": {"command": "ls"}}))
    assert fired.returncode == 2 and not fired.cached


def test_the_entry_names_the_code_that_decided(env: Env) -> None:
    env.fire()
    (entry,) = env.entries()
    names = [sig[0] for sig in json.loads(entry.read_text())["files"]]
    assert any(n.endswith(os.path.join("config", "selection.py")) for n in names)
    assert any(n.endswith(os.path.join("fronts", "fire_cache.py")) for n in names)
    assert str(env.config / "hooks.toml") in names
    assert str(env.ws / ".agents" / "hooks.toml") in names


def test_an_entry_of_ours_in_the_wrong_shape_is_a_miss_not_a_traceback(env: Env) -> None:
    env.fire()
    (entry,) = env.entries()
    good = json.loads(entry.read_text())
    for broken in [
        {**good, "stderr": 5},
        {**good, "events": {"pre_tool": {**good["events"]["pre_tool"], "template": 7}}},
        {**good, "words": []},
        {**good, "judge_key": ["X"]},
        [good],
    ]:
        entry.write_text(json.dumps(broken))
        fired = env.fire()
        assert not fired.cached and fired.returncode == 0, broken
        assert "Traceback" not in fired.stderr and same(fired, env.long_way())


@pytest.mark.parametrize("cache", ["on", "off"])
def test_fire_with_stdin_closed_reads_an_empty_payload(env: Env, cache: str) -> None:
    environ = {
        **os.environ,
        "TRIOHOOKS_CONFIG_DIR": str(env.config),
        "TRIOHOOKS_CACHE_DIR": str(env.cache),
        "TRIOHOOKS_FIRE_CACHE": cache,
    }
    for _ in range(2):  # the second one from the cache, when it is on
        done = subprocess.run(
            ["bash", "-c", f'exec "{sys.executable}" -m triohooks fire pre_tool <&-'],
            capture_output=True,
            text=True,
            env=environ,
            cwd=env.ws,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0 and done.stderr == "", done.stderr
        assert json.loads(done.stdout)["args"] == {}
