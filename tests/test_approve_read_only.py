"""``builtin = "approve_read_only"``: the agent's allow for a shell call proven read-only, and
no decision for anything else (never a block). A table of calls it approves and calls it must
not (what hides a write or a run: ``;``, ``$(...)``, backticks, redirects, assignments,
functions, aliases, wrappers, git's ``-c`` and ``--output``, find's actions); every row of the
guards' should-block table (tests/guard_tables.py) not approved; then through the real engine:
another hook's block or ask wins over the allow in either order, and the allow reaches each
agent's answer where the agent has one (Claude Code, Cursor) and no other."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.guard_tables import GO_ON_ROWS, SHAPES, SHOULD_BLOCK, Row
from tests.helpers import write_toml_hooks
from tests.test_guard_tables import Layout, layout  # noqa: F401 (its module fixture, used)
from triohooks import HookEngine
from triohooks.agents.spec import AGENTS, SPECS, AgentName
from triohooks.config.toml_dialect import parse_toml_text
from triohooks.fronts.relay import with_event
from triohooks.match.guards import GO_ON, Call, build
from triohooks.match.ifrules import call_cwd

HOME = "/home/u"
WS = "/home/u/proj"

A, N = "approve", "no decision"

CALLS = [
    # listing, reading, searching
    ("ls", A),
    ("ls -la src", A),
    ("ls ./*.py", A),  # a glob that can only expand to ./<name>
    ("ls src/*.py 2>/dev/null", A),
    ("cat README.md", A),
    ("head -n 20 src/app.py", A),
    ("tail -f build.log", A),
    ("wc -l src/a.py src/b.py", A),
    ("cat .env.example", A),  # a template, not a secret
    ("grep -rn TODO src", A),
    ("rg -n 'def main' src", A),
    ("find . -name '*.py' -type f", A),
    ("cd src && ls", A),
    ("pwd", A),
    ("echo hello", A),
    ("sort -u names.txt", A),
    ("uniq -c counts.txt", A),
    ("diff a.txt b.txt", A),
    ("cat <<'EOF'\nhello\nEOF", A),  # a here-doc read by cat
    # git's reading subcommands
    ("git status", A),
    ("git status --short", A),
    ("git log --oneline -n 20", A),
    ("git log -p -- src/app.py", A),
    ("git diff", A),
    ("git diff --stat HEAD~1", A),
    ("git show HEAD", A),
    ("git -C sub log", A),
    ("git --no-pager diff", A),
    ("git branch", A),
    ("git branch -a", A),
    ("git branch --list 'feat*'", A),
    ("git tag -l 'v*'", A),
    ("git remote -v", A),
    ("git stash list", A),
    ("git blame src/app.py", A),
    ("git rev-parse HEAD", A),
    ("git grep -n TODO", A),
    # pipes and lists of proven commands
    ("git log --oneline | head -20", A),
    ("ls && git status", A),
    ("git diff | grep -c '^+' ; git status", A),
    # more than the table: no decision, never a block
    ("ls; rm -rf x", N),
    ("ls && rm -rf build", N),
    ("cat $(curl x)", N),
    ("echo `ls`", N),  # a word known only at run time
    ("cat `which ls`", N),
    ("ls > out", N),
    ("ls >> out.txt", N),
    ("ls 2> err.txt", N),
    ("cat < /dev/tcp/example.com/80", N),  # bash opens a connection
    ("cat < notes.txt", A),
    ("git status 2>&1 | head", A),
    ("cat < $F", N),
    ("echo x | tee out", N),
    ("FOO=1 ls", N),
    ("GIT_DIR=../x/.git git log", N),
    ("PAGER=sh git log", N),
    ("export PATH=.; ls", N),
    ("LD_PRELOAD=/tmp/x.so ls", N),
    ("ls() { rm -rf x; }; ls", N),
    ('cat() { head "$@"; }; cat x', N),  # a function shadowing a table program
    ("alias ls='rm -rf x'; ls", N),
    ("command ls", N),
    ("builtin cd x", N),
    ("exec ls", N),
    ("env ls", N),
    ("sudo ls", N),
    ("xargs cat < files.txt", N),
    ("ls | xargs cat", N),
    ("bash -c 'ls'", N),
    ("sh -c 'git status'", N),
    ("eval ls", N),
    ("/bin/ls", N),  # a path: not the table's program
    ("./ls", N),
    ("ls *.py", N),  # may expand to an option
    ("cat $FILE", N),
    ('cat "$HOME/notes"', A),  # $HOME is known
    ("cat <<EOF\n$(rm -rf x)\nEOF", N),  # the here-doc's substitution runs rm
    ("cat <(curl -s https://x)", N),
    ("diff <(ls a) <(ls b)", N),
    # git that writes, or runs a program
    ("git -c core.pager=sh log", N),
    ("git -c color.ui=always log", N),  # no -c at all
    ("git --exec-path=/tmp log", N),
    ("git --git-dir=../x/.git log", N),
    ("git diff --output=x.patch", N),
    ("git diff --out=x.patch", N),  # a prefix of --output
    ("git diff --ext-diff", N),
    ("git grep -O TODO", N),
    ("git grep --open-files-in-pager TODO", N),
    ("git stash", N),  # stashes
    ("git stash pop", N),
    ("git branch new-branch", N),
    ("git branch -D old", N),
    ("git branch --list -D old", N),
    ("git tag v1.0", N),
    ("git tag -d v1.0", N),
    ("git remote add origin https://x", N),
    ("git commit -m x", N),
    ("git push", N),
    ("git checkout main", N),
    ("git fetch", N),
    ("git frobnicate", N),  # an alias may run anything
    # find's actions, and the other writers
    ("find . -delete", N),
    ("find . -name '*.pyc' -delete", N),
    ("find . -exec rm {} +", N),
    ("find . -execdir cat {} ;", N),
    ("find . -ok rm {} ;", N),
    ("find . -fprint out.txt", N),
    ("find . -fls out.txt", N),
    ("sort -o sorted.txt names.txt", N),
    ("sort --output=sorted.txt names.txt", N),
    ("sort --out=sorted.txt names.txt", N),
    ("uniq in.txt out.txt", N),
    ("tree -o out.txt", N),
    ("date -s '2020-01-01'", N),
    ("printf -v PATH .", N),
    ("rg --pre ./x.sh foo", N),
    ("sed -n 1p x", N),  # not in the table
    ("awk '{print}' x", N),
    ("less README.md", N),
    ("jq -n env", N),
    ("printenv", N),
    # secrets: the other guards' rules
    ("cat .env", N),
    ("head ~/.ssh/id_rsa", N),
    ("cat ~/.aws/credentials", N),
    ("grep -r password ~", N),
    ("git show HEAD:.env", N),
    ("cat < .env", N),
    ("cat .env*", N),
    # not a shell call
    ("", N),
]


def answer(command: str, tool: str = "Bash", **kw: str) -> str:
    check, _ = build("approve_read_only", {})
    call = Call(
        tool=tool, args={"command": command}, cwd=kw.get("cwd", WS), workspace=WS, home=HOME
    )
    verdict = check(call)
    assert not verdict.block and not verdict.uncertain, (command, verdict)
    return A if verdict.approve else N


@pytest.mark.parametrize(("command", "expect"), CALLS)
def test_approves_only_what_it_proves_read_only(command: str, expect: str) -> None:
    assert answer(command) == expect, command


def test_only_shell_calls() -> None:
    """A read tool, or a PowerShell command line, gets no decision (the agents do not ask for
    reads; PowerShell's reader is not held to the table)."""
    check, _ = build("approve_read_only", {})
    for tool, args in (
        ("Read", {"file_path": f"{WS}/README.md"}),
        ("powershell", {"command": "Get-ChildItem"}),
        ("Write", {"file_path": f"{WS}/x", "content": "ls"}),
    ):
        verdict = check(Call(tool=tool, args=args, cwd=WS, workspace=WS, home=HOME))
        assert verdict == GO_ON, (tool, verdict)


# -- the adversarial tables --------------------------------------------------------------------


def approves_row(row: Row, where: Layout) -> bool:
    """Whether approve_read_only approves the row's call, read as the guard runner reads it
    (bench/builtin_guards.py counts them)."""
    check, _ = build("approve_read_only", {})
    shape = SHAPES[row.shape]
    args: dict[str, Any] = where.subst(row.args)
    tool = shape.tool or "Shell"  # Cursor's shell event is the tool Shell
    workspace = str(where.ws)
    cwd = call_cwd(tool, args, where.subst(row.cwd) or workspace, workspace)
    verdict = check(Call(tool=tool, args=args, cwd=cwd, workspace=workspace, home=str(where.home)))
    assert not verdict.block and not verdict.uncertain, (row, verdict)
    return bool(verdict.approve)


def test_no_should_block_row_is_approved(layout: Layout) -> None:  # noqa: F811 (the fixture)
    approved = [r for r in SHOULD_BLOCK if approves_row(r, layout)]
    assert approved == [], approved
    assert len(SHOULD_BLOCK) > 300  # the whole table was read


def test_some_everyday_rows_are_approved_and_none_that_writes(
    layout: Layout,  # noqa: F811 (the fixture)
) -> None:
    """The go-on table's reading rows are approved (the share is the bench's figure); its
    builds, installs, deletes and writes are not."""
    approved = {_text(r) for r in GO_ON_ROWS if approves_row(r, layout)}
    assert {"git status --porcelain", "git log --oneline -20", "git diff"} <= approved, approved
    writes = {"git stash", "git tag v1.2.0", "git add -A", "make", "git push", "git fetch origin"}
    assert len(writes & {_text(r) for r in GO_ON_ROWS}) == len(writes)  # rows of the table
    assert not writes & approved


def _text(row: Row) -> str:
    """A row's command line, whatever its shape's argument (Codex's shell tool: an argv)."""
    value = row.args.get("command", row.args.get("cmd", ""))
    return value[-1] if isinstance(value, list) else str(value)


# -- config ------------------------------------------------------------------------------------


def test_it_takes_no_on_uncertain() -> None:
    text = '[[hooks.pre_tool]]\nbuiltin = "approve_read_only"\non_uncertain = "block"\n'
    table = parse_toml_text(text, file="h.toml", scope="global")
    assert any("never blocks" in str(p) for p in table.problems), table.problems
    ok = parse_toml_text(APPROVE, file="h.toml", scope="global")
    assert not ok.problems and len(ok.hooks) == 1


# -- through the engine ------------------------------------------------------------------------

APPROVE = '[[hooks.pre_tool]]\nbuiltin = "approve_read_only"\n'
#: A guard the user configured that blocks README.md (approve_read_only reads the defaults).
BLOCK_README = '[[hooks.pre_tool]]\nbuiltin = "secret_reads"\nnames = ["README.md"]\n'
ASK = """[[hooks.pre_tool]]\nid = "asker"\ncommand = '''echo '{"decision": "ask"}' '''\n"""


async def _pre_tool(tmp_path: Path, config: str, command: str) -> Any:
    ws, cfg = tmp_path / "ws", tmp_path / "cfg"
    ws.mkdir(exist_ok=True)
    write_toml_hooks(cfg, config)
    with trio.fail_after(20):
        async with HookEngine.open(
            workspace=ws, config_dir=cfg, state_dir=tmp_path / "state", audit=False
        ) as engine:
            return await engine.pre_tool("Bash", {"command": command}, cwd=str(ws))


async def test_the_allow_is_the_outcomes_decision(tmp_path: Path) -> None:
    outcome = await _pre_tool(tmp_path, APPROVE, "git status")
    assert outcome.decision == "allow" and not outcome.blocked
    assert outcome.reason == "approve_read_only guard: read-only (git)"
    other = await _pre_tool(tmp_path, APPROVE, "make build")
    assert other.decision is None and not other.blocked


@pytest.mark.parametrize("first", [True, False], ids=["approve-first", "approve-last"])
async def test_another_guards_block_wins(tmp_path: Path, first: bool) -> None:
    config = APPROVE + BLOCK_README if first else BLOCK_README + APPROVE
    outcome = await _pre_tool(tmp_path, config, "cat README.md")
    assert outcome.blocked and outcome.decision == "block"
    assert "secret_reads guard" in outcome.reason


@pytest.mark.parametrize("first", [True, False], ids=["approve-first", "approve-last"])
async def test_another_hooks_ask_wins(tmp_path: Path, first: bool) -> None:
    config = APPROVE + ASK if first else ASK + APPROVE
    outcome = await _pre_tool(tmp_path, config, "ls")
    assert not outcome.blocked and outcome.decision == "ask"
    assert "approve_read_only" not in (outcome.reason or "")
    assert not any(run.approved for run in outcome.runs)  # the approval did not stand


#: Each agent's pre-tool event and its shell call.
SHELL = {
    "claude": ("PreToolUse", {"tool_name": "Bash"}),
    "codex": ("PreToolUse", {"tool_name": "Bash"}),
    "gemini": ("BeforeTool", {"tool_name": "run_shell_command"}),
    "qwen": ("PreToolUse", {"tool_name": "run_shell_command"}),
    "copilot": ("preToolUse", {"toolName": "bash"}),
    "cursor": ("beforeShellExecution", {}),
}


def _body(agent: str, project: Path, command: str, event: str = "") -> bytes:
    """The agent's hook input for a shell call (its pre-tool event unless ``event``)."""
    if agent == "agy":  # camelCase, the event named by its catch-all's query
        call = {"name": "run_command", "args": {"CommandLine": command, "Cwd": str(project)}}
        agy = {"conversationId": "s1", "toolCall": call, "workspacePaths": [str(project)]}
        return with_event(json.dumps(agy).encode(), event or "PreToolUse")
    pre, tool = SHELL[agent]
    event = event or pre
    body: dict[str, Any] = {"session_id": "s1", "cwd": str(project), "hook_event_name": event}
    if agent == "copilot":
        body |= {**tool, "toolArgs": json.dumps({"command": command})}
    elif agent == "cursor":
        body["command"] = command
    else:
        body |= {**tool, "tool_input": {"command": command}}
    return json.dumps(body).encode()


def _allowed(agent: str, output: dict[str, Any]) -> bool:
    """Whether ``output`` (the agent's answer) says allow, in any of the agents' shapes."""
    specific = output.get("hookSpecificOutput") or {}
    said = (
        specific.get("permissionDecision"),
        output.get("permissionDecision"),
        output.get("permission"),
        output.get("decision"),
    )
    return "allow" in said


@pytest.fixture
def agent_setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    home, project, config = tmp_path / "home", (tmp_path / "proj").resolve(), tmp_path / "g"
    for d in (home, project, config):
        d.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    (config / "hooks.toml").write_text(APPROVE)
    return home, project, config


@pytest.mark.parametrize("agent", AGENTS)
async def test_the_allow_reaches_the_agents_that_have_one(
    agent_setup: tuple[Path, Path, Path], tmp_path: Path, agent: AgentName
) -> None:
    """Claude Code and Cursor get the allow (no permission prompt); Codex, Gemini CLI, Qwen
    Code and Copilot CLI have none that skips their own confirmation: no decision. A call not
    proven read-only gets no decision from any agent. agy answers every call with a decision,
    and its allow does not skip its prompt: the approval changes nothing there."""
    _, project, config = agent_setup
    with trio.fail_after(30):
        async with HookEngine.open(
            workspace=project, config_dir=config, state_dir=tmp_path / "state", audit=False
        ) as engine:
            status = await engine.agent_hook(agent, _body(agent, project, "git status"))
            build_ = await engine.agent_hook(agent, _body(agent, project, "make"))
    assert not status.answer.blocked and not build_.answer.blocked
    if agent == "agy":  # every call answered with a decision agy reads; its allow asks still
        assert status.answer.output == build_.answer.output == {"decision": "allow"}
        return
    assert _allowed(agent, status.answer.output) == SPECS[agent].allows
    assert status.answer.decision == ("allow" if SPECS[agent].allows else None)
    assert build_.answer.output == {} and build_.answer.decision is None
    if agent == "claude":
        specific = status.answer.output["hookSpecificOutput"]
        assert specific == {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "permissionDecisionReason": "approve_read_only guard: read-only (git)",
        }
    if agent == "cursor":
        assert status.answer.output["permission"] == "allow"
    assert {a for a in AGENTS if SPECS[a].allows} == {"claude", "cursor"}


@pytest.mark.parametrize("theirs", ["deny", "ask"])
async def test_the_agents_own_deny_or_ask_wins(
    agent_setup: tuple[Path, Path, Path], tmp_path: Path, theirs: str
) -> None:
    """Claude Code's own hook denies or asks; ours allows: its merge (deny > ask > allow)
    answers theirs."""
    _, project, config = agent_setup
    (project / ".claude").mkdir()
    reply = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": theirs}}
    if theirs == "deny":
        reply["hookSpecificOutput"]["permissionDecisionReason"] = "not today"
    handler = {"type": "command", "command": f"echo '{json.dumps(reply)}'"}
    settings = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [handler]}]}}
    (project / ".claude" / "settings.json").write_text(json.dumps(settings))
    with trio.fail_after(30):
        async with HookEngine.open(
            workspace=project,
            config_dir=config,
            state_dir=tmp_path / "state",
            audit=False,
            trust=True,
        ) as engine:
            result = await engine.agent_hook("claude", _body("claude", project, "git status"))
    assert result.answer.output["hookSpecificOutput"]["permissionDecision"] == theirs
    assert result.answer.blocked == (theirs == "deny")
    assert any("approve_read_only" in r.hook for r in result.runs)


async def test_on_a_permission_request_it_answers_the_request(
    agent_setup: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    """On ``permission_request`` the allow answers the agent's permission dialog (Claude Code's
    ``PermissionRequest``: ``behavior: allow``); a call it cannot prove is left to the user."""
    _, project, config = agent_setup
    (config / "hooks.toml").write_text(APPROVE.replace("pre_tool", "permission_request"))

    with trio.fail_after(30):
        async with HookEngine.open(
            workspace=project, config_dir=config, state_dir=tmp_path / "state", audit=False
        ) as engine:
            ask = functools.partial(_body, "claude", project, event="PermissionRequest")
            status = await engine.agent_hook("claude", ask("git status"))
            push = await engine.agent_hook("claude", ask("git push"))
    decision = status.answer.output["hookSpecificOutput"]["decision"]
    assert decision == {"behavior": "allow"} and not status.answer.blocked
    assert push.answer.output == {} and push.answer.decision is None


@pytest.mark.parametrize("agent", ["claude", "cursor"])
async def test_a_hooks_own_allow_is_no_agent_allow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agent: AgentName
) -> None:
    """A hook's ``allow`` is its no-objection (the JSON dialect's reply to go on; a TOML hook
    may say ``allow`` or even ``approve``): it never switches off the agent's own permission
    prompt. Only a built-in guard's proof does (``approved`` in the run's record)."""
    home, project, config = tmp_path / "home", (tmp_path / "proj").resolve(), tmp_path / "g"
    for d in (home, project, config):
        d.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    (config / "hooks.toml").write_text(
        """[[hooks.pre_tool]]\ncommand = '''echo '{"decision": "allow"}' '''\n"""
        """[[hooks.pre_tool]]\ncommand = '''echo '{"decision": "approve"}' '''\n"""
    )
    (config / "hooks.json").write_text(
        json.dumps(
            {"hooks": [{"id": "ok", "event": "pre_tool_use", "executor": {
                "type": "bash", "command": "echo '{\"decision\": \"allow\"}'"}}]}
        )
    )  # fmt: skip
    with trio.fail_after(30):
        async with HookEngine.open(
            workspace=project, config_dir=config, state_dir=tmp_path / "state", audit=False
        ) as engine:
            rm = await engine.agent_hook(agent, _body(agent, project, "rm -rf build"))
            outcome = await engine.pre_tool("bash", {"command": "rm -rf build"}, session_id="s")
    assert len(outcome.runs) == 3 and not any(run.approved for run in outcome.runs)
    assert not rm.answer.blocked and not _allowed(agent, rm.answer.output), rm.answer.output
