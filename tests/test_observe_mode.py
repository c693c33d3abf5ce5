"""Observe mode (docs/design.md, "Observe mode"): ``mode = "observe"`` on a hook computes its
decision without enforcing it. Nothing the hook says changes what the agent does (no block,
deny, ask, allow, stop-continue, rewrite, context or message); one warning in the Outcome says
what enforcing it would have done; the audit record's decision is ``would_block`` (or
``would_allow``); a failure or a timeout never blocks, fail-closed or not, and is recorded.

The fold is tested on every decision kind directly, then the whole path with real processes:
both dialects, command / http / in-process / built-in guard hooks (a prompt hook's reply
folds as any other's: the fold tests hold it), the trio and
asyncio engines, an adopted agent's request (the native lane), ``validate`` and ``list``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from tests.asyncio_support import run as asyncio_run
from tests.helpers import bash_hook, cli_here, write_json_hooks, write_toml_hooks
from tests.test_http_hooks import Reply, Request, loopback_server
from triohooks import HookEngine
from triohooks.actors.audit_records import AuditRecord, decode_lines
from triohooks.combine.outcome import Combiner, audit_decision
from triohooks.config.json_dialect import parse_json_bytes
from triohooks.config.model import Hook
from triohooks.config.toml_dialect import parse_toml_text
from triohooks.engine.asyncio_engine import AsyncioHookEngine
from triohooks.handlers.replies import RunResult

RM = {"command": "rm -rf /"}


def toml_hook(body: str, event: str = "pre_tool") -> Hook:
    parsed = parse_toml_text(f"[[hooks.{event}]]\n{body}\n", file="h.toml", scope="global")
    assert not parsed.problems, parsed.problems
    (hook,) = parsed.hooks
    return hook


def records(state: Path) -> list[AuditRecord]:
    out: list[AuditRecord] = []
    for path in sorted((state / "audit").glob("audit-*.jsonl")):
        out += decode_lines(path.read_bytes())[0]
    return out


# -- config: the field in both dialects ----------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        'command = "exit 2"',
        'type = "http"\nurl = "http://127.0.0.1:9/x"',
        'type = "prompt"\nprompt = "no deletes"',
        'builtin = "destructive_delete"',
    ],
)
def test_toml_mode_loads_on_every_hook_type(body: str) -> None:
    assert toml_hook(body).mode == "enforce"
    assert toml_hook(f'{body}\nmode = "observe"').mode == "observe"
    assert toml_hook(f'{body}\nmode = "enforce"').mode == "enforce"


@pytest.mark.parametrize("value", ['"observing"', '"Observe"', "true", "1", '["observe"]'])
def test_toml_unknown_mode_is_an_error_at_its_file_hook_and_field(value: str) -> None:
    text = f'[[hooks.pre_tool]]\ncommand = "true"\n\n[[hooks.pre_tool]]\ncommand = "x"\nmode = {value}\n'
    parsed = parse_toml_text(text, file="/c/hooks.toml", scope="global")
    (problem,) = parsed.problems
    assert (problem.file, problem.event, problem.index, problem.field) == (
        "/c/hooks.toml",
        "pre_tool",
        1,
        "mode",
    )
    assert problem.severity == "error"
    assert str(problem).startswith(
        '/c/hooks.toml: pre_tool[1].mode: must be "enforce" or "observe"'
    )
    assert [h.id for h in parsed.hooks] == ["global:pre_tool[0]"]  # the bad one is out


def test_json_mode_loads_and_an_unknown_one_is_a_located_problem() -> None:
    doc = {
        "hooks": [
            bash_hook("a", "exit 2", mode="observe"),
            {
                "id": "g",
                "event": "pre_tool_use",
                "executor": {"type": "builtin", "name": "destructive_delete"},
                "mode": "observe",
            },
            bash_hook("b", "exit 2"),
            bash_hook("c", "exit 2", mode="watch"),
        ]
    }
    parsed = parse_json_bytes(json.dumps(doc).encode(), file="/c/hooks.json", scope="global")
    assert [(spec.id, spec.mode) for _, spec in parsed.specs] == [
        ("a", "observe"),
        ("g", "observe"),
        ("b", "enforce"),
    ]
    (problem,) = parsed.problems  # the JSON dialect's rule: a bad entry is skipped, said
    assert (problem.file, problem.index, problem.field) == ("/c/hooks.json", 3, "mode")
    assert 'must be "enforce" or "observe", not \'watch\'' in problem.message


def test_the_python_api_takes_a_mode_and_refuses_another(tmp_path: Path) -> None:
    async def body() -> None:
        async def hook(ev: Any) -> None:
            return None

        with trio.fail_after(20):
            async with HookEngine.open(
                workspace=tmp_path, config_dir=tmp_path / "g", state_dir=tmp_path / "s"
            ) as engine:
                assert engine.add_hook("pre_tool", hook, mode="observe").mode == "observe"
                assert engine.add_hook("pre_tool", hook).mode == "enforce"
                with pytest.raises(ValueError, match='mode must be "enforce" or "observe"'):
                    engine.add_hook("pre_tool", hook, mode="dry-run")  # type: ignore[arg-type]

    trio.run(body)


# -- the fold: every decision kind, computed and not enforced ------------------------------------

#: (event, the hook's result, what the observe warning says it would do, audit decision).
KINDS: list[tuple[str, RunResult, str, str | None]] = [
    ("pre_tool", RunResult(outcome="block", reason="no"), "would block: no", "would_block"),
    (
        "pre_tool",
        RunResult(outcome="ok", decision="deny", reason="no"),
        "would block",
        "would_block",
    ),
    (
        "permission_request",
        RunResult(outcome="ok", decision="deny", reason="no"),
        "would deny: no",
        "would_block",
    ),
    (
        "pre_tool",
        RunResult(outcome="ok", decision="ask", reason="sure?"),
        "would ask",
        "would_block",
    ),
    ("pre_tool", RunResult(outcome="ok", decision="allow"), "would allow the call", "would_allow"),
    (
        "pre_tool",
        RunResult(outcome="ok", updated_args={"command": "ls"}),
        "would rewrite the event",
        None,
    ),
    (
        "prompt_submit",
        RunResult(outcome="ok", additional_context="branch main"),
        "would add context",
        None,
    ),
    (
        "session_start",
        RunResult(outcome="ok", plain_output="hello\n"),
        "would add context",
        None,
    ),
    ("stop", RunResult(outcome="ok", continue_=True), "would make the agent go on", "would_block"),
    (
        "stop",
        RunResult(outcome="block", reason="tests fail"),
        "would make the agent go on",
        "would_block",
    ),
    (
        "pre_tool",
        RunResult(outcome="ok", system_message="hi", user_message="yo"),
        "would show a message",
        None,
    ),
]


def fold(event: str, hooks: list[tuple[Hook, RunResult]], fields: dict[str, Any]) -> Any:
    combiner = Combiner(event, fields)
    for hook, result in hooks:
        assert not combiner.stopped
        combiner.add(hook, result)
    return combiner, combiner.finish()


def fields_of(event: str) -> dict[str, Any]:
    if event in ("pre_tool", "permission_request"):
        return {"tool": "bash", "args": dict(RM)}
    if event == "prompt_submit":
        return {"prompt": "do it"}
    return {}


@pytest.mark.parametrize(("event", "result", "said", "audited"), KINDS)
def test_an_observe_hook_changes_nothing_and_says_what_it_would_do(
    event: str, result: RunResult, said: str, audited: str | None
) -> None:
    observer = toml_hook('command = "x"\nmode = "observe"', event)
    after = toml_hook('command = "y"', event)
    fields = fields_of(event)
    plain = fold(event, [], fields)[1]
    combiner, outcome = fold(event, [(observer, result), (after, RunResult(outcome="ok"))], fields)
    # The chain went on (the next hook was folded) and the answer is the one nothing gave.
    assert not combiner.stopped and len(outcome.runs) == 2
    for field in ("blocked", "decision", "reason", "args", "prompt", "additional_context"):
        assert getattr(outcome, field) == getattr(plain, field), field
    assert not outcome.continue_ and outcome.system_messages == [] and outcome.user_message is None
    (warning,) = outcome.warnings
    assert warning.startswith(f"hook {observer.name} (observe mode) {said}")
    assert warning.endswith("not enforced")
    assert audit_decision(observer, event, result) == audited


def test_the_same_results_enforced_do_change_the_answer() -> None:
    # The table above is no tautology: each result, enforced, changes the Outcome.
    for event, result, _, _ in KINDS:
        fields = fields_of(event)
        plain = msgspec.to_builtins(fold(event, [], fields)[1])
        enforced = msgspec.to_builtins(
            fold(event, [(toml_hook('command = "x"', event), result)], fields)[1]
        )
        enforced.pop("runs")
        plain.pop("runs")
        assert enforced != plain, (event, result)


@pytest.mark.parametrize(
    "result",
    [
        RunResult(outcome="timeout", error="timed out after 1s"),
        RunResult(outcome="error", error="exit 7"),
        RunResult(outcome="spawn_failed", error="no such file"),
        RunResult(outcome="error", error="bug in a runner", internal=True),
    ],
)
@pytest.mark.parametrize(
    "hook",
    [
        'command = "x"\nmode = "observe"\nfail_closed = true',
        'builtin = "destructive_delete"\nmode = "observe"',
    ],
)
def test_a_failing_observe_hook_never_blocks_and_is_recorded(hook: str, result: RunResult) -> None:
    observer = toml_hook(hook)
    _, outcome = fold("pre_tool", [(observer, result)], fields_of("pre_tool"))
    assert not outcome.blocked and outcome.decision is None
    (warning,) = outcome.warnings
    assert warning == f"hook {observer.name} (observe mode) failed: {result.error}; not enforced"
    assert audit_decision(observer, "pre_tool", result) == "error"
    # Enforcing, the same fail-closed hook (or an internal error) blocks.
    enforcing = msgspec.structs.replace(observer, mode="enforce")
    if enforcing.fail_closed or result.internal:
        assert fold("pre_tool", [(enforcing, result)], fields_of("pre_tool"))[1].blocked


def test_an_observe_hook_does_not_hide_an_enforcing_one_after_it() -> None:
    observer = toml_hook('command = "x"\nmode = "observe"')
    guard = toml_hook('command = "y"')
    _, outcome = fold(
        "pre_tool",
        [
            (observer, RunResult(outcome="block", reason="a")),
            (guard, RunResult(outcome="block", reason="b")),
        ],
        fields_of("pre_tool"),
    )
    assert outcome.blocked and outcome.reason == "b"
    assert outcome.warnings == [f"hook {observer.name} (observe mode) would block: a; not enforced"]


# -- the whole path, real processes --------------------------------------------------------------

TOML = """
[[hooks.pre_tool]]
id = "no-rm"
mode = "observe"
fail_closed = true
if = "shell(rm *)"
command = "echo 'deleting is for humans' >&2; exit 2"

[[hooks.pre_tool]]
id = "rewrite"
mode = "observe"
match = "Bash"
command = '''echo '{"updated_args": {"command": "echo rewritten"}}' '''

[[hooks.pre_tool]]
id = "guard"
builtin = "destructive_delete"
mode = "observe"

[[hooks.pre_tool]]
id = "slow"
mode = "observe"
fail_closed = true
match = "Read"
timeout_seconds = 0.5
command = "exec sleep 30"

[[hooks.prompt_submit]]
id = "context"
mode = "observe"
command = "echo 'current branch: main'"
"""


@pytest.fixture
def configured(tmp_path: Path) -> Path:
    write_toml_hooks(tmp_path / "g", TOML)
    (tmp_path / "ws").mkdir()
    return tmp_path


def open_engine(root: Path) -> Any:
    return HookEngine.open(
        workspace=root / "ws", config_dir=root / "g", state_dir=root / "state", audit=True
    )


async def test_toml_command_and_guard_hooks_observe_through_the_engine(configured: Path) -> None:
    with trio.fail_after(30):
        async with open_engine(configured) as engine:
            rm = await engine.pre_tool("Bash", RM, session_id="s1")
            slow = await engine.pre_tool("Read", {"file_path": "/x"}, session_id="s2")
            prompt = await engine.prompt_submit("go", session_id="s3")
    # rm -rf /: two guards would block, one hook would rewrite; the call goes on as sent.
    assert not rm.blocked and rm.decision is None and rm.args == RM
    assert [w.split(" (observe mode) ")[0] for w in rm.warnings] == [
        "hook no-rm",
        "hook rewrite",
        "hook guard",
    ]
    assert "would block: deleting is for humans" in rm.warnings[0]
    assert "would rewrite the event" in rm.warnings[1]
    # A timed-out fail-closed observer: no block, said.
    assert not slow.blocked
    (said,) = slow.warnings
    assert said.startswith("hook slow (observe mode) failed:") and "not enforced" in said
    # Context an observer would add is not added.
    assert prompt.additional_context is None
    assert prompt.warnings == ["hook context (observe mode) would add context; not enforced"]
    audited = {(r.hook, r.decision) for r in records(configured / "state")}
    assert audited == {("no-rm", "would_block"), ("guard", "would_block"), ("slow", "error")}
    (rec,) = [r for r in records(configured / "state") if r.hook == "no-rm"]
    assert rec.detail == {"would": "block", "tool": "Bash", "command": "rm -rf /"}
    assert rec.error == "deleting is for humans" and rec.session == "s1"


async def test_json_dialect_observes_too(tmp_path: Path) -> None:
    reply = json.dumps({"decision": "block", "reason": "json says no"})
    write_json_hooks(
        tmp_path / "g",
        [
            bash_hook("no", f"echo '{reply}'", mode="observe"),
            bash_hook(
                "patch",
                """echo '{"decision": "mutate", "patch": {"arguments": {"command": "ls"}}}'""",
                mode="observe",
            ),
        ],
    )
    (tmp_path / "ws").mkdir()
    with trio.fail_after(30):
        async with open_engine(tmp_path) as engine:
            out = await engine.pre_tool("bash", RM, session_id="s")
    assert not out.blocked and out.args == RM
    assert out.warnings == [
        "hook user:no (observe mode) would block: json says no; not enforced",
        "hook user:patch (observe mode) would rewrite the event; not enforced",
    ]
    assert [(r.hook, r.decision) for r in records(tmp_path / "state")] == [
        ("user:no", "would_block")
    ]


def test_the_asyncio_engine_observes_an_in_process_hook(tmp_path: Path) -> None:
    got: list[Any] = []

    async def refuse(ev: Any) -> dict[str, str]:
        return {"decision": "block", "reason": "asyncio says no"}

    async def body() -> None:
        async with AsyncioHookEngine.open(
            workspace=tmp_path, config_dir=tmp_path / "g", state_dir=tmp_path / "state"
        ) as engine:
            engine.add_hook("pre_tool", refuse, name="refuse", mode="observe")
            got.append(await engine.pre_tool("bash", RM, session_id="s"))

    asyncio_run(body)
    (out,) = got
    assert not out.blocked
    assert out.warnings == ["hook refuse (observe mode) would block: asyncio says no; not enforced"]
    assert [r.decision for r in records(tmp_path / "state")] == ["would_block"]


async def test_an_adopted_agents_request_runs_observers_in_the_native_lane(
    configured: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(configured / "home"))
    body = json.dumps(
        {
            "session_id": "c1",
            "cwd": str(configured / "ws"),
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": RM,
        }
    ).encode()
    with trio.fail_after(30):
        async with open_engine(configured) as engine:
            result = await engine.agent_hook("claude", body)
    assert not result.answer.blocked
    out = result.answer.output
    assert "hookSpecificOutput" not in out  # no deny, no updatedInput
    message = out["systemMessage"]
    assert "hook no-rm (observe mode) would block: deleting is for humans" in message
    assert "hook guard (observe mode) would block" in message
    audited = [(r.hook, r.decision) for r in records(configured / "state")]
    assert ("no-rm", "would_block") in audited and ("guard", "would_block") in audited


def test_validate_and_list_show_the_mode(configured: Path) -> None:
    env = {
        **os.environ,
        "TRIOHOOKS_CONFIG_DIR": str(configured / "g"),
        "TRIOHOOKS_STATE_DIR": str(configured / "state"),
    }
    done = cli_here(["validate"], cwd=configured / "ws", env=env)
    assert done.returncode == 0, done.stderr
    assert "5 hook(s) in observe mode" in done.stdout
    assert "no-rm, rewrite, guard, slow, context" in done.stdout
    listed = cli_here(["list", "--json"], cwd=configured / "ws", env=env)
    assert {h["id"]: h["mode"] for h in json.loads(listed.stdout)["hooks"]} == dict.fromkeys(
        ["no-rm", "rewrite", "guard", "slow", "context"], "observe"
    )
    text = cli_here(["list"], cwd=configured / "ws", env=env).stdout
    assert text.count("mode=observe") == 5
    write_toml_hooks(
        configured / "g",
        TOML.replace('mode = "observe"\nfail_closed', 'mode = "shadow"\nfail_closed', 1),
    )
    bad = cli_here(["validate"], cwd=configured / "ws", env=env)
    assert bad.returncode == 1
    assert (
        'hooks.toml: pre_tool[0].mode: must be "enforce" or "observe", not \'shadow\'' in bad.stderr
    )


async def test_http_and_in_process_hooks_observe_in_the_trio_engine(tmp_path: Path) -> None:
    async def says(request: Request, stream: trio.SocketStream) -> Reply:
        decision = "allow" if b"permission_request" in request.body else "block"
        body = json.dumps({"decision": decision, "reason": f"http says {decision}"}).encode()
        return Reply(body=body, headers=[("content-type", "application/json")])

    async def rewrite(ev: Any) -> dict[str, Any]:
        return {"updated_args": {"command": "echo safe"}, "additional_context": "x"}

    with trio.fail_after(30):
        async with loopback_server(says) as server:
            write_toml_hooks(
                tmp_path / "g",
                f'[[hooks.pre_tool]]\nid = "web"\ntype = "http"\nurl = "{server.url}/h"\n'
                'mode = "observe"\n\n'
                f'[[hooks.permission_request]]\nid = "web-ok"\ntype = "http"\n'
                f'url = "{server.url}/h"\nmode = "observe"\n',
            )
            (tmp_path / "ws").mkdir()
            async with open_engine(tmp_path) as engine:
                engine.add_hook("pre_tool", rewrite, name="rewrite", mode="observe")
                pre = await engine.pre_tool("bash", RM, session_id="s")
                asked = await engine.permission_request("bash", RM, session_id="s")
    assert not pre.blocked and pre.args == RM and pre.additional_context is None
    assert pre.warnings == [
        "hook rewrite (observe mode) would rewrite the event; add context; not enforced",
        "hook web (observe mode) would block: http says block; not enforced",
    ]
    assert asked.decision is None and not asked.blocked
    assert asked.warnings == ["hook web-ok (observe mode) would allow the call; not enforced"]
    assert [(r.hook, r.decision, r.detail) for r in records(tmp_path / "state")] == [
        ("web", "would_block", {"would": "block", "tool": "bash", "command": "rm -rf /"}),
        ("web-ok", "would_allow", {"would": "allow", "tool": "bash", "command": "rm -rf /"}),
    ]


async def test_held_back_observers_are_a_warning_not_an_ask(tmp_path: Path) -> None:
    # Workspace hooks trust holds back get an ask (or a deny) in their place; held-back hooks
    # that would only observe would change nothing, so they get the warning alone.
    (tmp_path / "g").mkdir()
    observer = '[[hooks.pre_tool]]\nid = "watcher"\nmode = "observe"\ncommand = "exit 2"\n'
    write_toml_hooks(tmp_path / "ws" / ".agents", observer)
    with trio.fail_after(30):
        async with open_engine(tmp_path) as engine:
            watched = await engine.pre_tool("Bash", RM, session_id="s")
        guard = '[[hooks.pre_tool]]\nid = "guard"\ncommand = "exit 2"\n'
        write_toml_hooks(tmp_path / "ws" / ".agents", f"{observer}\n{guard}")
        async with open_engine(tmp_path) as engine:
            guarded = await engine.pre_tool("Bash", RM, session_id="s")
    assert not watched.blocked and watched.decision is None
    (said,) = watched.warnings
    assert "not trusted yet" in said
    assert guarded.decision == "ask"  # one enforcing hook among them: as before
    held = [(r.hook, r.decision) for r in records(tmp_path / "state") if r.kind == "held_back"]
    assert held == [("watcher", "warn"), ("watcher", "ask"), ("guard", "ask")]


async def test_an_observing_approve_read_only_approves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # approve_read_only's proof is the one allow an agent takes as its own (no prompt). In
    # observe mode it proves and says so, audited as would_allow, and approves nothing: not
    # even beside another hook's allow, which alone is no agent allow.
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    write_toml_hooks(
        tmp_path / "g",
        '[[hooks.pre_tool]]\nid = "ro"\nbuiltin = "approve_read_only"\nmode = "observe"\n\n'
        """[[hooks.pre_tool]]\nid = "ok"\ncommand = '''echo '{"decision": "allow"}' '''\n""",
    )
    (tmp_path / "ws").mkdir()
    body = {
        "session_id": "c1",
        "cwd": str(tmp_path / "ws"),
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "git status"},
    }
    with trio.fail_after(30):
        async with open_engine(tmp_path) as engine:
            outcome = await engine.pre_tool("Bash", {"command": "git status"}, session_id="s")
            claude = await engine.agent_hook("claude", json.dumps(body).encode())
    assert not any(run.approved for run in outcome.runs)
    assert outcome.warnings == ["hook ro (observe mode) would allow the call; not enforced"]
    specific = claude.answer.output.get("hookSpecificOutput") or {}
    assert specific.get("permissionDecision") != "allow", claude.answer.output
    assert "hook ro (observe mode) would allow the call" in claude.answer.output["systemMessage"]
    audited = [(r.hook, r.decision) for r in records(tmp_path / "state")]
    assert audited.count(("ro", "would_allow")) == 2
    # Enforcing, the same guard's proof is Claude Code's allow.
    write_toml_hooks(tmp_path / "g", '[[hooks.pre_tool]]\nbuiltin = "approve_read_only"\n')
    with trio.fail_after(30):
        async with open_engine(tmp_path) as engine:
            enforced = await engine.agent_hook("claude", json.dumps(body).encode())
    assert enforced.answer.output["hookSpecificOutput"]["permissionDecision"] == "allow"
