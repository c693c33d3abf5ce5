"""The claude dialect: Claude Code's own settings files and hooks, run by a real engine with real
bash hooks, answered in Claude Code's output format (contract from its documentation,
summed up in ``docs/agents.md``)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio

from triohooks import HookEngine, JudgeReply
from triohooks.agents.config import compile_matcher, load_agent_table, translate_if
from triohooks.agents.replies import read_judge_reply
from triohooks.agents.runner import AgentPayloadError
from triohooks.handlers.process import ProcessResult

from .helpers import count_decodes, survivors_after

pytestmark = pytest.mark.slow


class Setup:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.project = root / "proj"
        self.g = root / "g"
        self.state = root / "state"
        for d in (self.home, self.project / ".claude", self.g):
            d.mkdir(parents=True)

    def settings(self, hooks: dict[str, Any], *, level: str = "user", **top: Any) -> Path:
        path = {
            "user": self.home / ".claude" / "settings.json",
            "project": self.project / ".claude" / "settings.json",
            "local": self.project / ".claude" / "settings.local.json",
        }[level]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"hooks": hooks, **top}))
        return path

    def engine(self, **kw: Any) -> Any:
        return HookEngine.open(
            workspace=self.project, config_dir=self.g, state_dir=self.state, **kw
        )

    def input(self, event: str, **fields: Any) -> bytes:
        base = {
            "session_id": "s1",
            "transcript_path": str(self.root / "t.jsonl"),
            "cwd": str(self.project),
            "hook_event_name": event,
            "permission_mode": "default",
        }
        return json.dumps({**base, **fields}).encode()

    def bash(self, command: str, event: str = "PreToolUse") -> bytes:
        return self.input(
            event, tool_name="Bash", tool_input={"command": command}, tool_use_id="t1"
        )


@pytest.fixture
def s(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Setup:
    setup = Setup(tmp_path)
    monkeypatch.setenv("HOME", str(setup.home))
    return setup


def cmd(command: str, **extra: Any) -> dict[str, Any]:
    return {"type": "command", "command": command, **extra}


def group(*handlers: dict[str, Any], matcher: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"hooks": list(handlers)}
    if matcher is not None:
        out["matcher"] = matcher
    return out


async def ask(s: Setup, body: bytes, **kw: Any) -> Any:
    with trio.fail_after(20):
        async with s.engine(**kw) as e:
            return await e.agent_hook("claude", body)


# -- matchers and if rules ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("matcher", "tool", "hit"),
    [
        (None, "Bash", True),
        ("", "Bash", True),
        ("*", "mcp__x__y", True),
        ("Bash", "Bash", True),
        ("Bash", "BashOutput", False),  # exact, not a prefix
        ("Edit|Write", "Write", True),
        ("Edit, Write", "Edit", True),
        ("Edit|Write", "Read", False),
        ("mcp__.*", "mcp__fs__read", True),
        ("mcp__.*", "Bash", False),
        ("Notebook.*", "NotebookEdit", True),
        ("ash", "Bash", False),  # plain characters: exact name only
        ("B.sh", "xBashy", True),  # a regex is unanchored
    ],
)
def test_claude_matcher_rules(matcher: str | None, tool: str, hit: bool) -> None:
    assert compile_matcher("claude", matcher).matches(tool) is hit


@pytest.mark.parametrize(
    ("claude", "ours"),
    [
        ("Bash(git push*)", "shell(git push*)"),
        ("Bash(npm run test:*)", "shell(npm run test*)"),
        ("Edit(src/**)", "write(src/**)"),
        ("Read(./.env)", "read(./.env)"),
        ("WebFetch(domain:example.com)", "web(example.com)"),
        ("Bash", "Bash"),
        ("mcp__github__create_issue", "mcp__github__create_issue"),
    ],
)
def test_claude_if_rules_map_onto_ours(claude: str, ours: str) -> None:
    assert translate_if(claude) == ours


# -- decisions ------------------------------------------------------------------------------------


async def test_exit_2_denies_with_stderr_not_the_command_line(s: Setup) -> None:
    s.settings({"PreToolUse": [group(cmd("echo 'no pushing' >&2; exit 2"), matcher="Bash")]})
    result = await ask(s, s.bash("git push"))
    out = result.answer.output
    assert out == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "no pushing",
        }
    }
    assert "echo" not in json.dumps(out)  # the command line never reaches the model
    assert result.answer.blocked


async def test_hook_gets_the_input_verbatim_and_claudes_environment(s: Setup) -> None:
    s.settings({"PreToolUse": [group(cmd("cat > seen.json; env > seen.env"))]})
    body = s.bash("ls")
    await ask(s, body)
    assert (s.project / "seen.json").read_bytes() == body
    env = dict(
        line.split("=", 1)
        for line in (s.project / "seen.env").read_text().splitlines()
        if "=" in line
    )
    assert env["CLAUDE_PROJECT_DIR"] == str(s.project)
    assert env["CLAUDECODE"] == "1"


async def test_most_restrictive_permission_wins_and_reasons_are_kept(s: Setup) -> None:
    def decide(d: str, r: str) -> dict[str, Any]:
        reply = {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": d,
                "permissionDecisionReason": r,
            }
        }
        return cmd(f"echo '{json.dumps(reply)}'")

    s.settings({"PreToolUse": [group(decide("allow", "fine"), decide("ask", "hmm"))]})
    out = (await ask(s, s.bash("ls"))).answer.output["hookSpecificOutput"]
    assert (out["permissionDecision"], out["permissionDecisionReason"]) == ("ask", "hmm")
    s.settings(
        {
            "PreToolUse": [
                group(decide("ask", "hmm"), decide("deny", "never"), decide("allow", "ok"))
            ]
        }
    )
    out = (await ask(s, s.bash("ls"))).answer.output["hookSpecificOutput"]
    assert (out["permissionDecision"], out["permissionDecisionReason"]) == ("deny", "never")


async def test_updated_input_last_in_config_order_wins_deterministically(s: Setup) -> None:
    def rewrite(command: str, delay: float) -> dict[str, Any]:
        reply = {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "updatedInput": {"command": command},
            }
        }
        return cmd(f"sleep {delay}; echo '{json.dumps(reply)}'")

    # The second hook finishes first; in Claude Code the last to *finish* wins (a race).
    s.settings({"PreToolUse": [group(rewrite("first", 0.0), rewrite("second", 0.0))]}, level="user")
    s.settings({"PreToolUse": [group(rewrite("third", 0.3))]}, level="project")
    result = await ask(s, s.bash("ls"), trust=True)
    specific = result.answer.output["hookSpecificOutput"]
    assert specific["updatedInput"] == {"command": "third"}  # project level comes last
    assert any("rewrote the input" in w for w in result.answer.warnings)


async def test_contexts_system_messages_and_continue(s: Setup) -> None:
    s.settings(
        {
            "UserPromptSubmit": [
                group(
                    cmd("echo plain context"),
                    cmd(
                        """echo '{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"json context"},"systemMessage":"hi user"}'"""
                    ),
                )
            ],
            "PostToolUse": [group(cmd("""echo '{"continue":false,"stopReason":"enough"}'"""))],
        }
    )
    out = (await ask(s, s.input("UserPromptSubmit", prompt="do it"))).answer.output
    assert out["hookSpecificOutput"]["additionalContext"] == "plain context\njson context"
    assert out["systemMessage"] == "hi user"
    post = s.input("PostToolUse", tool_name="Bash", tool_input={"command": "ls"}, tool_response={})
    out = (await ask(s, post)).answer.output
    assert out == {"continue": False, "stopReason": "enough"}


async def test_stop_block_and_prompt_block(s: Setup) -> None:
    s.settings(
        {
            "Stop": [group(cmd("""echo '{"decision":"block","reason":"tests are red"}'"""))],
            "UserPromptSubmit": [group(cmd("echo 'secrets in prompt' >&2; exit 2"))],
        }
    )
    stop = await ask(s, s.input("Stop", stop_hook_active=False))
    assert stop.answer.output == {"decision": "block", "reason": "tests are red"}
    prompt = await ask(s, s.input("UserPromptSubmit", prompt="my key is sk-abc"))
    assert prompt.answer.output == {"decision": "block", "reason": "secrets in prompt"}


async def test_other_exit_codes_and_timeouts_are_non_blocking(s: Setup) -> None:
    s.settings({"PreToolUse": [group(cmd("exit 1"), cmd("sleep 30", timeout=0.5), cmd("exit 4"))]})
    result = await ask(s, s.bash("git push"))
    assert result.answer.output == {}
    assert not result.answer.blocked
    assert len(result.answer.warnings) == 3
    assert [r.status for r in result.runs] == ["error", "error", "error"]


async def test_fail_closed_extension_blocks_on_timeout(s: Setup) -> None:
    s.settings({"PreToolUse": [group(cmd("sleep 30", timeout=0.5, failClosed=True))]})
    result = await ask(s, s.bash("git push"))
    specific = result.answer.output["hookSpecificOutput"]
    assert specific["permissionDecision"] == "deny"
    assert "timed out" in specific["permissionDecisionReason"]
    assert "sleep" not in specific["permissionDecisionReason"]


async def test_a_background_grandchild_does_not_hold_the_answer_nor_survive(s: Setup) -> None:
    marker = "300.4242"
    s.settings({"PreToolUse": [group(cmd(f"sleep {marker} & echo ok"))]})
    with trio.fail_after(10):
        start = trio.current_time()
        await ask(s, s.bash("ls"))
        assert trio.current_time() - start < 2.0
    alive = await survivors_after(["sleep", marker])
    for p in alive:
        p.kill()
    assert alive == []


async def test_async_hooks_go_through_the_background_queue(s: Setup) -> None:
    """An ``async`` hook is not waited for: it is queued on the engine's post worker, runs
    there observed like any run, and close drains it."""
    log = s.root / "async.log"
    s.settings({"PostToolUse": [group(cmd(f"sleep 0.2; cat >> {log}", **{"async": True}))]})
    kinds: list[tuple[str, Any]] = []
    with trio.fail_after(20):
        async with s.engine() as e:
            e.add_listener(lambda kind, fields: kinds.append((kind, fields)))
            start = trio.current_time()
            result = await e.agent_hook("claude", s.bash("ls", "PostToolUse"))
            assert trio.current_time() - start < 0.2  # not waited for
            assert result.runs == [] and not result.answer.warnings
            assert not log.exists()
    assert json.loads(log.read_text())["tool_input"] == {"command": "ls"}
    report = e.close_report
    assert report is not None and (report.offered, report.ran, report.failed) == (1, 1, 0)
    # Observed like a native run: its own hook_started / hook_finished.
    assert [kind for kind, _ in kinds if kind.startswith("hook_")] == [
        "hook_started",
        "hook_finished",
    ]


async def test_an_async_hook_is_queued_as_one_item_with_the_requests_input(
    s: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ``async`` hook goes onto the post worker as any background hook does: one item with
    the request's input, read once (the body verbatim, the decoded fields, the session's
    environment), and its hook bound to the project; it runs from that item's input."""
    log = s.root / "async.log"
    hook = cmd(
        f'echo "$SESSION_MARK $CLAUDE_PROJECT_DIR" >> {log}; cat >> {log}', **{"async": True}
    )
    s.settings({"PostToolUse": [group(hook)]})
    body = s.bash("ls", "PostToolUse")
    items: list[Any] = []
    with trio.fail_after(20):
        async with s.engine() as e:
            offer: Callable[..., bool] = e._dispatcher.post_worker.offer

            def seen(**item: Any) -> bool:
                items.append(item)
                return offer(**item)

            e._agents._offer = seen
            decoded = count_decodes(monkeypatch, body)
            env = {**os.environ, "SESSION_MARK": "from-the-session"}
            await e.agent_hook("claude", body, env=env)  # queued; the close drains it
    [item] = items
    assert item["payload"] == body and item["env"] is env and item["event"] == "post_tool"
    assert item["fields"]["tool_input"] == {"command": "ls"}
    [row] = item["hooks"]
    assert row.project == s.project and row.hook.background
    assert decoded == [body]  # read once, by the request; not again on the worker
    said, stdin = log.read_text().split("\n", 1)
    assert said == f"from-the-session {s.project}"
    assert stdin.encode() == body


async def test_a_prompt_hook_is_read_from_the_judges_answer(s: Setup) -> None:
    """Claude Code's ``type: prompt``: the judge gets the prompt with ``$ARGUMENTS`` replaced by
    the input JSON; ``ok: false`` denies with its reason, ``ok: true`` lets the call run, and
    an answer that is not ``{"ok": bool}`` is the hook's failure (non-blocking, said)."""
    hook = {"type": "prompt", "prompt": "Is this safe? $ARGUMENTS"}
    s.settings({"PreToolUse": [group(hook, matcher="Bash")]})
    asked: list[str] = []

    async def judge(prompt: str, event_json: str, model: str | None) -> JudgeReply:
        asked.append(prompt)
        if "rm -rf" in event_json:
            return JudgeReply(text='{"ok": false, "reason": "it deletes the tree"}')
        if "weird" in event_json:
            return JudgeReply(text="I think it is fine")
        if "broken" in event_json:
            raise RuntimeError("the model server is down")
        return JudgeReply(text='{"ok": true}')

    with trio.fail_after(20):
        async with s.engine(judge=judge) as e:
            denied = (await e.agent_hook("claude", s.bash("rm -rf /"))).answer
            allowed = (await e.agent_hook("claude", s.bash("ls"))).answer
            unread = (await e.agent_hook("claude", s.bash("weird"))).answer
            # A judge that raises failed the hook (the judge's contract, as in every dialect),
            # not our own code: not blocking, said.
            down = (await e.agent_hook("claude", s.bash("broken"))).answer
    assert asked[1] == "Is this safe? " + s.bash("ls").decode()
    assert denied.output["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert denied.reason == "it deletes the tree"
    assert allowed.output == {} and not allowed.blocked
    assert not unread.blocked
    assert any("the judge answered no JSON" in w for w in unread.warnings)
    assert not down.blocked
    assert any("judge failed: the model server is down" in w for w in down.warnings)


@pytest.mark.parametrize(
    ("text", "fail_closed", "status", "said"),
    [
        ('{"ok": true, "reason": "fine"}', False, "ok", None),
        ('{"ok": false}', False, "block", "hook judge said no"),
        ('{"ok": "yes"}', False, "error", "the judge's answer has no boolean ok"),
        ("[1]", False, "error", "the judge's answer has no boolean ok"),
        ('{"ok": "yes"}', True, "block", "the judge's answer has no boolean ok"),
        ("{", True, "block", "the judge answered no JSON"),
    ],
)
def test_the_judges_answer_is_read_as_claude_reads_it(
    s: Setup, text: str, fail_closed: bool, status: str, said: str | None
) -> None:
    hook = {"type": "prompt", "prompt": "ok?", "name": "judge", "failClosed": fail_closed}
    s.settings({"Stop": [group(hook)]})
    [loaded] = load_agent_table("claude", project=s.project, home=s.home, config_dir=s.g).hooks
    reply = read_judge_reply(loaded, text, 1.5)
    assert (reply.status, reply.duration_ms) == (status, 1.5)
    if said is not None:
        assert said in (reply.reason or reply.error or "")


async def test_an_async_hook_past_the_close_drain_is_killed_and_counted(s: Setup) -> None:
    marker = "300.4343"
    s.settings({"PostToolUse": [group(cmd(f"exec sleep {marker}", **{"async": True}))]})
    with trio.fail_after(20):
        async with s.engine(drain_timeout_s=0.3) as e:
            await e.agent_hook("claude", s.bash("ls", "PostToolUse"))
            await e.agent_hook("claude", s.bash("pwd", "PostToolUse"))
    report = e.close_report
    assert report is not None
    assert (report.offered, report.ran, report.dropped_at_close, report.killed) == (2, 0, 2, 1)
    alive = await survivors_after(["sleep", marker])
    for p in alive:
        p.kill()
    assert alive == []


async def test_if_rule_and_matcher_filter_which_hooks_run(s: Setup) -> None:
    s.settings(
        {
            "PreToolUse": [
                group(cmd("echo push >&2; exit 2", **{"if": "Bash(git push*)"}), matcher="Bash"),
                group(cmd("echo edit >&2; exit 2"), matcher="Edit|Write"),
            ]
        }
    )
    assert not (await ask(s, s.bash("git status"))).answer.blocked
    assert (await ask(s, s.bash("git push origin"))).answer.reason == "push"
    edit = s.input("PreToolUse", tool_name="Write", tool_input={"file_path": "x", "content": ""})
    assert (await ask(s, edit)).answer.reason == "edit"


async def test_project_hooks_wait_for_trust_user_hooks_do_not(s: Setup) -> None:
    s.settings({"PreToolUse": [group(cmd("echo user >&2; exit 2"))]}, level="user")
    s.settings({"PreToolUse": [group(cmd("echo project >&2; exit 2"))]}, level="project")
    untrusted = await ask(s, s.bash("ls"))
    assert untrusted.answer.reason == "user"
    assert untrusted.trust is not None and untrusted.trust.state == "new"
    trusted = await ask(s, s.bash("ls"), trust=True)
    assert trusted.answer.reason == "user\nproject"


async def test_disable_all_hooks_and_identical_handlers_run_once(s: Setup) -> None:
    s.settings({"PreToolUse": [group(cmd("echo x >> count"))]}, level="user")
    s.settings({"PreToolUse": [group(cmd("echo x >> count"))]}, level="project")
    await ask(s, s.bash("ls"), trust=True)
    assert (s.project / "count").read_text() == "x\n"
    s.settings({"PreToolUse": [group(cmd("echo x >> count"))]}, level="user", disableAllHooks=True)
    await ask(s, s.bash("ls"), trust=True)
    assert (s.project / "count").read_text() == "x\n"


async def test_events_we_have_no_name_for_still_run(s: Setup) -> None:
    s.settings({"FileChanged": [group(cmd("echo changed > changed"))]})
    await ask(s, s.input("FileChanged", file_path="a.py"))
    assert (s.project / "changed").read_text() == "changed\n"


async def test_unsupported_handler_types_are_reported_not_dropped(s: Setup) -> None:
    s.settings({"PreToolUse": [group({"type": "mcp_tool", "server": "x", "tool": "y"})]})
    table = load_agent_table("claude", project=s.project, home=s.home, config_dir=s.g)
    (hook,) = table.hooks
    assert not hook.supported and "mcp_tool" in (hook.unsupported or "")
    result = await ask(s, s.bash("ls"))
    assert any("mcp_tool" in w for w in result.answer.warnings)


async def test_broken_settings_are_problems_and_other_levels_still_run(s: Setup) -> None:
    (s.project / ".claude" / "settings.json").write_text("{not json")
    s.settings({"PreToolUse": [group(cmd("echo user >&2; exit 2"))]}, level="user")
    table = load_agent_table("claude", project=s.project, home=s.home, config_dir=s.g)
    assert any("not valid JSON" in p.message for p in table.problems)
    assert (await ask(s, s.bash("ls"))).answer.reason == "user"


async def test_an_agents_table_is_read_once_per_change_by_the_one_loader(
    s: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Agent tables go through the loader every table goes through: read on first use, kept
    while no file changed, read again once -- not once per waiting request -- after an edit,
    and the edit is what the next answer says."""
    import triohooks.agents.runner as runner

    reads: list[Path | None] = []

    def counted(agent: Any, **kw: Any) -> Any:
        reads.append(kw["project"])
        return load_agent_table(agent, **kw)

    monkeypatch.setattr(runner, "load_agent_table", counted)
    settings = s.settings({"PreToolUse": [group(cmd("echo one >&2; exit 2"))]})
    with trio.fail_after(30):
        async with s.engine() as e:
            assert (await e.agent_hook("claude", s.bash("ls"))).answer.reason == "one"
            assert (await e.agent_hook("claude", s.bash("ls"))).answer.reason == "one"
            assert len(reads) == 1
            s.settings({"PreToolUse": [group(cmd("echo two >&2; exit 2"))]})
            os.utime(settings, ns=(1, 1))  # a change its times show, however fast the writes
            reasons: list[str] = []

            async def one() -> None:
                reasons.append((await e.agent_hook("claude", s.bash("ls"))).answer.reason)

            async with trio.open_nursery() as nursery:
                for _ in range(5):
                    nursery.start_soon(one)
            assert reasons == ["two"] * 5
            assert len(reads) == 2


async def test_http_hook_against_a_real_local_server(s: Setup) -> None:
    """The input POSTed verbatim, with the hook's own content type (named in any case) as the
    only one, as every dialect's http hook sends it."""
    seen: list[bytes] = []
    heads: list[list[bytes]] = []

    async def handler(stream: trio.SocketStream) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            data += await stream.receive_some()
        head, _, rest = data.partition(b"\r\n\r\n")
        heads.append(head.lower().split(b"\r\n"))
        length = int(
            next(
                line.split(b":")[1]
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            )
        )
        while len(rest) < length:
            rest += await stream.receive_some()
        seen.append(rest)
        body = json.dumps(
            {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": "http says no",
                }
            }
        ).encode()
        await stream.send_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
            % (len(body), body)
        )
        await stream.aclose()

    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            serve = partial(trio.serve_tcp, handler, 0, host="127.0.0.1")
            (listener,) = await nursery.start(serve)
            port = listener.socket.getsockname()[1]
            s.settings(
                {
                    "PreToolUse": [
                        group(
                            {
                                "type": "http",
                                "url": f"http://127.0.0.1:{port}/hook",
                                "timeout": 5,
                                "headers": {"content-type": "application/x-hook"},
                            }
                        )
                    ]
                }
            )
            body = s.bash("rm -rf /")
            result = await ask(s, body)
            nursery.cancel_scope.cancel()
    assert seen == [body]
    assert [h for h in heads[0] if h.startswith(b"content-type")] == [
        b"content-type: application/x-hook"
    ]
    assert result.answer.reason == "http says no"


async def test_bad_input_is_a_payload_error(s: Setup) -> None:
    with trio.fail_after(10):
        async with s.engine() as e:
            for body in (b"[1]", b"{", b'{"cwd": "/"}'):
                with pytest.raises(AgentPayloadError):
                    await e.agent_hook("claude", body)
            with pytest.raises(AgentPayloadError):
                await e.agent_hook("windsurf", s.bash("ls"))  # no agent triohooks speaks


def test_environment_is_not_leaked_between_tests() -> None:
    assert "CLAUDE_PROJECT_DIR" not in os.environ


async def test_permission_request_follows_decision_behavior_not_exit_2(s: Setup) -> None:
    allow = {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "allow"},
        }
    }
    s.settings(
        {
            "PermissionRequest": [
                group(cmd("echo no >&2; exit 2"), cmd(f"echo '{json.dumps(allow)}'"))
            ]
        }
    )
    body = s.input("PermissionRequest", tool_name="Bash", tool_input={"command": "ls"})
    result = await ask(s, body)
    assert result.answer.output["hookSpecificOutput"]["decision"] == {"behavior": "allow"}
    assert any("does not deny" in w for w in result.answer.warnings)
    deny = {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "deny", "message": "nope"},
        }
    }
    s.settings(
        {
            "PermissionRequest": [
                group(cmd(f"echo '{json.dumps(allow)}'"), cmd(f"echo '{json.dumps(deny)}'"))
            ]
        }
    )
    result = await ask(s, body)
    assert result.answer.output["hookSpecificOutput"]["decision"] == {
        "behavior": "deny",
        "message": "nope",
    }
    assert result.answer.blocked


async def test_agent_traffic_is_ordinary_traffic_to_listeners(s: Setup) -> None:
    s.settings({"PreToolUse": [group(cmd("echo no >&2; exit 2")), group(cmd("true"))]})
    seen: list[tuple[str, dict[str, Any]]] = []
    with trio.fail_after(20):
        async with s.engine() as e:
            e.add_listener(lambda kind, fields: seen.append((kind, fields)))
            result = await e.agent_hook("claude", s.bash("rm -rf /"))
    assert result.answer.blocked
    seen = [(k, f) for k, f in seen if k != "closed"]  # the engine's own close report
    kinds = [k for k, _ in seen]
    assert kinds[0] == "fired" and kinds[-1] == "outcome"
    assert kinds.count("hook_started") == kinds.count("hook_finished") == 2
    fired = seen[0][1]
    assert fired["event"] == "pre_tool" and fired["hooks"] == 2 and fired["session"] == "s1"
    finished = {f["hook_id"]: f["outcome"] for k, f in seen if k == "hook_finished"}
    assert finished == {
        "claude:user:PreToolUse[0].hooks[0]": "block",
        "claude:user:PreToolUse[1].hooks[0]": "ok",
    }
    (record,) = [f["record"] for k, f in seen if k == "audit"]
    assert record.event == "pre_tool" and record.decision == "block" and record.session == "s1"
    outcome = seen[-1][1]["outcome"]
    assert outcome.blocked and outcome.agent == "claude" and len(outcome.runs) == 2


async def _runner_bug(self: Any, *args: Any) -> Any:
    raise RuntimeError("a bug in the agent runner")


async def _status_lost(self: Any, spec: Any) -> ProcessResult:
    return ProcessResult(status="killed", error="hook exit status lost (helper gone)")


#: Our failures, not the hook's: each denies even without failClosed.
OUR_FAILURES = {
    "runner bug": (
        ["triohooks.agents.runner.AgentHooks._command"],
        _runner_bug,
        "a bug in the agent runner",
    ),
    # A ``killed`` result: the guard lost the run's status, or closed under it.
    "guard lost the run": (
        ["triohooks.actors.reaper.Reaper.run", "triohooks.actors.posix_guard.PosixGuard.run"],
        _status_lost,
        "exit status lost",
    ),
}


@pytest.mark.parametrize("case", sorted(OUR_FAILURES))
async def test_our_failure_running_an_agent_hook_denies_instead_of_letting_the_call_through(
    s: Setup, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    targets, replacement, why = OUR_FAILURES[case]
    s.settings({"PreToolUse": [group(cmd("exit 0"))]})  # not failClosed
    for target in targets:
        monkeypatch.setattr(target, replacement)
    result = await ask(s, s.bash("rm -rf /"))
    out = result.answer.output["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert "triohooks internal error running hook" in out["permissionDecisionReason"]
    assert why in out["permissionDecisionReason"]
