"""The system tier (docs/configuration.md#the-system-tier): an admin's ``hooks.toml`` /
``hooks.json`` in ``$TRIOHOOKS_SYSTEM_DIR``, read before the user's config. Its hooks run first;
no lower scope can disable (a project's or the user's ``disabled``, ``disabled_contributions``),
replace (a hook of the same id) or reorder (an API hook) them, and each try is told; a broken or
untrustworthy system file fails events closed naming the file; the files join the one freshness
check; ``validate`` and ``list`` show each hook's tier; an agent's request runs them too (the
native lane), for its own project and another. Every system directory here is under tmp_path."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.helpers import bash_hook, run_cli, write_json_hooks, write_toml_hooks
from triohooks import ConfigError, HookEngine
from triohooks.config.paths import POSIX_SYSTEM_DIR, default_system_dir, system_config_dir
from triohooks.config.system_tier import unsafe_reason

posix_only = pytest.mark.skipif(os.name != "posix", reason="file ownership and modes: POSIX")

SYSTEM_TOML = """
[[hooks.pre_tool]]
id = "team-guard"
if = "shell(git push*)"
command = "echo 'the team says no pushing' >&2; exit 2"
"""

#: A JSON-dialect block, as the team's guard in hooks.json.
JSON_BLOCK = """echo '{"decision":"block","reason":"the team json guard says no"}'"""


class Dirs:
    def __init__(self, root: Path) -> None:
        self.system = root / "system"
        self.user = root / "user"
        self.state = root / "state"
        self.ws = root / "ws"
        self.other = root / "other"
        for d in (self.system, self.user, self.state, self.ws / ".agents", self.other):
            d.mkdir(parents=True, exist_ok=True)

    def engine(self, *, workspace: Path | None = None, trust: bool = False) -> Any:
        return HookEngine.open(
            workspace=workspace or self.ws,
            config_dir=self.user,
            state_dir=self.state,
            audit=False,
            trust=trust,
        )

    def cli(self, *args: str) -> Any:
        return run_cli(*args, config_dir=self.user, state_dir=self.state, cwd=self.ws)


@pytest.fixture
def d(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Dirs:
    dirs = Dirs(tmp_path)
    monkeypatch.setenv("TRIOHOOKS_SYSTEM_DIR", str(dirs.system))
    return dirs


async def push(engine: Any) -> Any:
    return await engine.pre_tool(tool="bash", args={"command": "git push origin main"})


# -- where it lives ----------------------------------------------------------------------------
def test_the_default_system_dir_is_the_platforms_admin_place() -> None:
    assert default_system_dir("linux", {}) == Path(POSIX_SYSTEM_DIR) == Path("/etc/triohooks")
    assert default_system_dir("freebsd14", {}) == Path("/etc/triohooks")
    assert default_system_dir("darwin", {}) == Path("/Library/Application Support/triohooks")
    win = default_system_dir("win32", {"ProgramData": "D:\\Data"})
    assert str(win) == "D:\\Data\\triohooks"
    assert str(default_system_dir("win32", {})) == "C:\\ProgramData\\triohooks"


def test_the_variable_chooses_it_and_the_test_session_points_it_at_an_empty_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = os.environ["TRIOHOOKS_SYSTEM_DIR"]  # conftest's: never the machine's own
    assert session != POSIX_SYSTEM_DIR and os.listdir(session) == []
    monkeypatch.setenv("TRIOHOOKS_SYSTEM_DIR", str(tmp_path))
    assert system_config_dir() == tmp_path
    monkeypatch.delenv("TRIOHOOKS_SYSTEM_DIR")
    assert system_config_dir() == default_system_dir(sys.platform, os.environ)


# -- first, and out of every lower scope's reach ----------------------------------------------
async def test_system_hooks_run_first_before_the_users_and_api_hooks(d: Dirs) -> None:
    write_toml_hooks(
        d.system, SYSTEM_TOML + '[[hooks.pre_tool]]\nid = "team-log"\ncommand = "true"\n'
    )
    write_toml_hooks(d.user, '[[hooks.pre_tool]]\nid = "mine"\ncommand = "true"\n')

    async def api_hook(event: Any) -> None:
        return None

    with trio.fail_after(30):
        async with d.engine() as engine:
            engine.add_hook("pre_tool", api_hook, name="app")
            ls = await engine.pre_tool(tool="bash", args={"command": "ls"})
            out = await push(engine)
    assert [r.hook for r in ls.runs] == ["team-log", "app", "mine"]
    assert out.blocked and "the team says no pushing" in out.reason
    assert [r.hook for r in out.runs] == ["team-guard"]  # the first block stops the chain


async def test_a_projects_disabled_cannot_remove_a_system_hook_and_is_told(d: Dirs) -> None:
    write_json_hooks(d.system, [bash_hook("team-json", JSON_BLOCK)])
    write_json_hooks(d.user, [bash_hook("mine", "true")])
    write_json_hooks(d.ws / ".agents", [], disabled=["team-json", "mine"])
    with trio.fail_after(30):
        async with d.engine(trust=True) as engine:
            out = await engine.pre_tool(tool="bash", args={"command": "ls"})
            table = engine.table
    assert out.blocked and "the team json guard says no" in out.reason
    assert [h.id for h in table.hooks] == ["user:team-json"]  # the user's own is disabled
    refused = [p for p in table.problems if p.field == "disabled"]
    assert len(refused) == 1 and refused[0].severity == "warning"
    assert "refused: 'team-json' is a system hook" in refused[0].message
    assert refused[0].file == str(d.ws / ".agents" / "hooks.json")
    assert d.cli("trust").returncode == 0
    done = d.cli("validate")
    assert done.returncode == 1
    assert "refused: 'team-json' is a system hook" in done.stderr
    assert "no lower scope can disable it" in done.stderr


async def test_a_users_same_id_replaces_nothing_and_both_run_system_first(d: Dirs) -> None:
    write_json_hooks(d.system, [bash_hook("team-json", JSON_BLOCK)])
    write_toml_hooks(d.system, SYSTEM_TOML)
    # The user's hooks of the same ids would let everything through.
    write_json_hooks(d.user, [bash_hook("team-json", "true")])
    write_json_hooks(d.ws / ".agents", [], disabled_contributions=["user:team-json"])
    write_toml_hooks(d.user, '[[hooks.pre_tool]]\nid = "team-guard"\ncommand = "true"\n')
    with trio.fail_after(30):
        async with d.engine(trust=True) as engine:
            out = await push(engine)
            table = engine.table
    # The project's disabled_contributions mutes the user's hook of that id, not the system's.
    ids = [h.id for h in table.hooks]
    assert ids == ["team-guard", "user:team-json", "team-guard@hooks.toml"]
    assert [h.scope for h in table.hooks] == ["system", "system", "global"]
    assert out.blocked and [r.hook for r in out.runs] == ["team-guard"]
    said = [str(p) for p in table.problems]
    assert any("'team-guard' is a system hook's" in s and "cannot be replaced" in s for s in said)
    assert any("'team-json' is a system hook's" in s for s in said)
    assert any("disabled_contributions" in s and "refused" in s for s in said)
    done = d.cli("validate")
    assert done.returncode == 1 and "a system hook cannot be replaced" in done.stderr


async def test_a_system_disabled_acts_within_the_tier_only(d: Dirs) -> None:
    write_json_hooks(d.system, [bash_hook("team-json", JSON_BLOCK)], disabled=["mine"])
    write_json_hooks(d.user, [bash_hook("mine", "true")])
    with trio.fail_after(30):
        async with d.engine() as engine:
            assert [h.id for h in engine.table.hooks] == ["user:team-json", "user:mine"]


# -- a system file that cannot be read, or trusted, fails closed --------------------------------
@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        ("hooks.toml", "[[hooks.pre_tool]]\ncommand = \n", "hooks.toml"),
        ("hooks.json", "{not json", "malformed JSON"),
        ("hooks.json", json.dumps({"hooks": [{"event": "pre_tool_use"}]}), "invalid hook"),
    ],
)
async def test_a_broken_system_file_is_an_error_naming_it_never_skipped(
    d: Dirs, name: str, text: str, said: str
) -> None:
    (d.system / name).write_text(text)
    with trio.fail_after(30), pytest.raises(ConfigError) as caught:
        async with d.engine():
            pass
    assert str(d.system / name) in str(caught.value) and said in str(caught.value)
    done = d.cli("validate")
    assert done.returncode == 1 and str(d.system / name) in done.stderr
    assert "(error)" in done.stderr


async def test_a_system_file_broken_while_running_blocks_events_naming_it(d: Dirs) -> None:
    write_toml_hooks(d.system, SYSTEM_TOML)
    with trio.fail_after(30):
        async with d.engine() as engine:
            assert (await push(engine)).blocked
            (d.system / "hooks.json").write_text("{torn")
            out = await engine.pre_tool(tool="bash", args={"command": "ls"})
            assert out.blocked and str(d.system / "hooks.json") in out.reason
            assert "does not load" in out.reason
            (d.system / "hooks.json").unlink()
            again = await push(engine)
            assert again.blocked and [r.hook for r in again.runs] == ["team-guard"]


@posix_only
@pytest.mark.parametrize("how", ["dir", "file", "link"])
async def test_a_system_file_others_can_write_is_refused_and_fails_closed(
    d: Dirs, tmp_path: Path, how: str
) -> None:
    write_toml_hooks(d.system, SYSTEM_TOML)
    if how == "dir":
        d.system.chmod(0o777)
        why = f"the directory {d.system} can be written by"
    elif how == "file":
        (d.system / "hooks.toml").chmod(0o666)
        why = f"{d.system / 'hooks.toml'} can be written by"
    else:  # a link into a place anyone can write
        drop = tmp_path / "drop"
        drop.mkdir()
        drop.chmod(0o777)
        (drop / "hooks.toml").write_text(SYSTEM_TOML)
        (d.system / "hooks.toml").unlink()
        (d.system / "hooks.toml").symlink_to(drop / "hooks.toml")
        why = f"the directory {drop} can be written by"
    with trio.fail_after(30), pytest.raises(ConfigError) as caught:
        async with d.engine():
            pass
    text = str(caught.value)
    assert "not trusted as a system file" in text and why in text and "everyone" in text
    done = d.cli("validate")
    assert done.returncode == 1 and "not trusted as a system file" in done.stderr


@posix_only
async def test_a_link_to_a_safe_place_and_a_sticky_dir_on_the_way_are_fine(
    d: Dirs, tmp_path: Path
) -> None:
    shared = tmp_path / "shared"  # as /tmp: anyone may add, nobody may replace others' entries
    shared.mkdir()
    shared.chmod(0o1777)
    safe = shared / "admin"
    safe.mkdir(mode=0o755)
    write_toml_hooks(safe, SYSTEM_TOML)
    (d.system / "hooks.toml").symlink_to(Path("..") / "shared" / "admin" / "hooks.toml")
    assert unsafe_reason(str(d.system / "hooks.toml")) is None
    with trio.fail_after(30):
        async with d.engine() as engine:
            assert (await push(engine)).blocked


@posix_only
def test_a_file_owned_by_someone_else_is_refused(d: Dirs) -> None:
    path = write_toml_hooks(d.system, SYSTEM_TOML)
    stranger = 4242 if os.geteuid() != 4242 else 4243
    if os.geteuid() == 0:  # root may give it away: then it is the stranger's file
        os.chown(path, stranger, -1)
        why = unsafe_reason(str(path))
        owner = stranger
    else:  # as the stranger sees this user's: the directories on the way are not theirs
        why = unsafe_reason(str(path), uid=stranger)
        owner = os.geteuid()
    assert why is not None and f"is owned by uid {owner}, neither root nor you" in why


@posix_only
async def test_making_the_system_dir_writable_while_running_fails_events_closed(d: Dirs) -> None:
    write_toml_hooks(d.system, SYSTEM_TOML)
    with trio.fail_after(30):
        async with d.engine() as engine:
            assert not (await engine.pre_tool(tool="bash", args={"command": "ls"})).blocked
            d.system.chmod(0o777)  # the freshness check signs the directory too
            out = await engine.pre_tool(tool="bash", args={"command": "ls"})
            assert out.blocked and "not trusted as a system file" in out.reason
            d.system.chmod(0o755)
            assert not (await engine.pre_tool(tool="bash", args={"command": "ls"})).blocked


# -- validate and list show each hook's tier ---------------------------------------------------
def test_validate_and_list_show_each_hooks_tier(d: Dirs) -> None:
    write_toml_hooks(d.system, SYSTEM_TOML)
    write_toml_hooks(d.user, '[[hooks.pre_tool]]\nid = "mine"\ncommand = "true"\n')
    write_toml_hooks(d.ws / ".agents", '[[hooks.pre_tool]]\nid = "theirs"\ncommand = "true"\n')
    assert d.cli("trust").returncode == 0
    done = d.cli("validate")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "ok: 3 hook(s) run, from 3 file(s)"
    assert lines[2:] == [
        f"  system: pre_tool team-guard ({d.system / 'hooks.toml'})",
        f"  user: pre_tool mine ({d.user / 'hooks.toml'})",
        f"  project: pre_tool theirs ({d.ws / '.agents' / 'hooks.toml'})",
    ]
    listed = json.loads(d.cli("list", "--json", "--trust").stdout)
    assert [(h["id"], h["tier"], h["scope"]) for h in listed["hooks"]] == [
        ("team-guard", "system", "system"),
        ("mine", "user", "global"),
        ("theirs", "project", "workspace"),
    ]
    assert listed["system_dir"] == str(d.system)
    text = d.cli("list", "--trust").stdout
    assert f"from system {d.system / 'hooks.toml'} (system tier)" in text
    assert f"from global {d.user / 'hooks.toml'} (user tier)" in text


def test_without_system_hooks_validate_says_what_it_always_said(d: Dirs) -> None:
    write_toml_hooks(d.user, '[[hooks.pre_tool]]\nid = "mine"\ncommand = "true"\n')
    assert d.cli("validate").stdout == "ok: 1 hook(s) run, from 1 file(s)\n"


# -- every adopted agent -----------------------------------------------------------------------
#: Each agent's shell tool and before-a-tool event, and the tool input as it sends it.
AGENT_CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "claude": ("PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "git push"}}),
    "codex": ("PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "git push"}}),
    "gemini": (
        "BeforeTool",
        {"tool_name": "run_shell_command", "tool_input": {"command": "git push"}},
    ),
    "qwen": (
        "PreToolUse",
        {"tool_name": "run_shell_command", "tool_input": {"command": "git push"}},
    ),
    "copilot": (
        "preToolUse",
        {"toolName": "bash", "toolArgs": json.dumps({"command": "git push"})},
    ),
    "cursor": ("beforeShellExecution", {"command": "git push", "cwd": "/tmp"}),
}


@pytest.mark.slow
@pytest.mark.parametrize("agent", sorted(AGENT_CALLS))
async def test_every_agents_requests_run_the_system_hooks_in_any_project(
    d: Dirs, agent: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(d.state))
    write_toml_hooks(d.system, SYSTEM_TOML)
    # A project that tries to switch the team's guard off.
    write_json_hooks(d.other / ".agents", [], disabled=["team-guard"])
    event, fields = AGENT_CALLS[agent]
    answers = []
    with trio.fail_after(60):
        async with d.engine() as engine:
            for where in (d.ws, d.other):
                body = {"session_id": "s1", "cwd": str(where), "hook_event_name": event, **fields}
                answers.append(await engine.agent_hook(agent, json.dumps(body).encode()))
    for answer in answers:
        assert answer.answer.blocked and "the team says no pushing" in answer.answer.reason
        assert [r.hook for r in answer.runs if r.status == "block"] == ["triohooks:team-guard"]


def test_an_agent_install_routes_the_events_the_system_tier_handles(d: Dirs) -> None:
    from triohooks.agents.routing import own_events

    write_toml_hooks(d.user, '[[hooks.pre_tool]]\nid = "mine"\ncommand = "true"\n')
    before = own_events(d.user, scope="user")
    assert before is not None and "pre_compact" not in before
    write_toml_hooks(d.system, '[[hooks.pre_compact]]\nid = "team-log"\ncommand = "true"\n')
    after = own_events(d.user, scope="user")
    assert after is not None and "pre_compact" in after  # the catch-all goes in for it
    (d.system / "hooks.json").write_text("{torn")
    assert own_events(d.user, scope="user") is None  # a broken tier: every event is routed


def test_the_system_tiers_held_back_is_the_default_the_user_overrides(d: Dirs) -> None:
    from triohooks.config.table import load_table

    write_toml_hooks(d.system, 'held_back = "deny"\n')
    assert load_table(workspace=d.ws, config_dir=d.user).held_back == "deny"
    write_toml_hooks(d.user, 'held_back = "warn"\n')
    assert load_table(workspace=d.ws, config_dir=d.user).held_back == "warn"
