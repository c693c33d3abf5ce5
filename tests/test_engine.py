"""The engine end to end: real bash hooks of both dialects, in-process hooks, every sync event."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from triohooks.engine.hook_engine import HookEngine

from .helpers import bash_hook, write_json_hooks, write_toml_hooks

pytestmark = pytest.mark.slow


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    ws, g = tmp_path / "ws", tmp_path / "g"
    ws.mkdir()
    g.mkdir()
    return ws, g


def engine(dirs: tuple[Path, Path], **kw: Any):
    ws, g = dirs
    return HookEngine.open(
        workspace=ws, config_dir=g, trust=True, state_dir=ws.parent / "state", **kw
    )


async def test_toml_exit_2_blocks_pre_tool_with_stderr_reason(dirs) -> None:
    write_toml_hooks(
        dirs[1], '[[hooks.pre_tool]]\nmatch = "bash"\ncommand = "echo no pushing >&2; exit 2"\n'
    )
    with trio.fail_after(10):
        async with engine(dirs) as e:
            out = await e.pre_tool("bash", {"command": "git push"})
            other = await e.pre_tool("read_file", {"path": "x"})
    assert out.blocked and out.decision == "block"
    assert out.reason == "no pushing"
    assert out.message_for_model == "blocked by pre_tool hook: no pushing"
    assert [r.outcome for r in out.runs] == ["block"]
    assert not other.blocked and other.runs == []


async def test_chain_rewrite_then_block_then_never_runs(dirs, tmp_path: Path) -> None:
    marker = tmp_path / "third-ran"
    write_toml_hooks(
        dirs[1],
        f"""
[[hooks.pre_tool]]
command = '''echo '{{"updated_args": {{"command": "git push --dry-run"}}}}' '''
[[hooks.pre_tool]]
command = '''read -r line; case "$line" in *dry-run*) echo saw-rewrite >&2; exit 2;; esac; exit 0'''
[[hooks.pre_tool]]
command = "touch {marker}"
""",
    )
    with trio.fail_after(10):
        async with engine(dirs) as e:
            out = await e.pre_tool("bash", {"command": "git push"})
    assert out.blocked and out.reason == "saw-rewrite"
    assert out.args == {"command": "git push --dry-run"}  # the blocked call keeps the rewrite
    assert len(out.runs) == 2 and not marker.exists()


async def test_first_updated_args_win_later_hooks_see_them(dirs) -> None:
    write_toml_hooks(
        dirs[1],
        """
[[hooks.pre_tool]]
command = '''echo '{"updated_args": {"n": 1}}' '''
[[hooks.pre_tool]]
command = '''read -r l; [ "$l" != "${l%\\"n\\":1*}" ] || exit 9; echo '{"updated_args": {"n": 2}}' '''
""",
    )
    with trio.fail_after(10):
        async with engine(dirs) as e:
            out = await e.pre_tool("t", {"n": 0})
    assert out.args == {"n": 1}
    assert [r.outcome for r in out.runs] == ["ok", "ok"]


async def test_json_patch_arguments_shallow_merge_chained(dirs) -> None:
    mutate = 'printf \'%s\' \'{"decision":"mutate","patch":{"arguments":ARGS}}\''
    write_json_hooks(
        dirs[1],
        [
            bash_hook("one", mutate.replace("ARGS", '{"a": 1}')),
            bash_hook("two", mutate.replace("ARGS", '{"b": 2}')),
            bash_hook("bad", mutate.replace("ARGS", "[1]")),
        ],
    )
    with trio.fail_after(10):
        async with engine(dirs) as e:
            out = await e.pre_tool("bash", {"command": "ls", "a": 0})
    assert out.args == {"command": "ls", "a": 1, "b": 2}
    assert any("not an object" in w for w in out.warnings)


async def test_json_hook_sees_env_payload(dirs, tmp_path: Path) -> None:
    dump = tmp_path / "dump.json"
    cmd = (
        f'printf "%s" "$EVERRUNS_HOOK_PAYLOAD_JSON" > {dump}; '
        'test "$(cat "$EVERRUNS_HOOK_PAYLOAD_PATH")" = "$EVERRUNS_HOOK_PAYLOAD_JSON" || exit 3; '
        'test "$EVERRUNS_HOOK_TOOL_NAME" = bash || exit 4; test "$EVERRUNS_HOOK_EVENT" = pre_tool_use || exit 5'
    )
    write_json_hooks(dirs[1], [bash_hook("env", cmd)])
    with trio.fail_after(10):
        async with engine(dirs) as e:
            out = await e.pre_tool("bash", {"command": "ls"}, tool_call_id="c1", session_id="s1")
    assert [r.outcome for r in out.runs] == ["ok"], out.runs
    payload = json.loads(dump.read_text())
    assert payload["event"] == "pre_tool_use" and payload["hook_id"] == "user:env"
    assert payload["session_id"] == "s1"
    assert payload["data"] == {
        "tool_name": "bash",
        "tool_call_id": "c1",
        "arguments": {"command": "ls"},
    }


async def test_yolop_block_git_example(dirs) -> None:
    write_json_hooks(
        dirs[1],
        [
            {
                "id": "block-git",
                "event": "pre_tool_use",
                "matcher": {
                    "tool_name": "bash",
                    "args_jsonpath": "$.command",
                    "match_regex": "(^|[;&|()[:space:]])git([[:space:]]|$)",
                },
                "executor": {
                    "type": "bash",
                    "command": 'printf \'%s\\n\' \'{"decision":"block","reason":"git command blocked by hook","user_message":"Blocked by your yolop hook: git commands are disabled."}\'',
                },
                "timeout_ms": 1000,
                "on_error": "block",
            }
        ],
    )
    with trio.fail_after(10):
        async with engine(dirs) as e:
            blocked = await e.pre_tool("bash", {"command": "cd x && git push"})
            fine = await e.pre_tool("bash", {"command": "gitk; digit"})
    assert blocked.blocked and blocked.reason == "git command blocked by hook"
    assert blocked.user_message == "Blocked by your yolop hook: git commands are disabled."
    assert not fine.blocked and fine.runs == []


async def test_fail_closed_and_on_error(dirs) -> None:
    write_toml_hooks(dirs[1], '[[hooks.pre_tool]]\ncommand = "exit 7"\nfail_closed = true\n')
    with trio.fail_after(10):
        async with engine(dirs) as e:
            out = await e.pre_tool("bash", {})
    assert out.blocked
    assert out.reason is not None and out.reason.startswith(
        "hook exit 7 failed and is fail_closed:"
    )


async def test_failure_without_fail_closed_is_warned_and_ignored(dirs) -> None:
    write_toml_hooks(dirs[1], '[[hooks.pre_tool]]\ncommand = "exit 7"\n')
    write_json_hooks(
        dirs[1], [bash_hook("j", "exit 3"), bash_hook("k", "exit 3", on_error="allow")]
    )
    with trio.fail_after(10):
        async with engine(dirs) as e:
            out = await e.pre_tool("bash", {})
    assert not out.blocked
    assert [r.outcome for r in out.runs] == ["error", "error", "error"]
    assert len(out.warnings) == 2  # on_error=allow is silent


async def test_json_on_error_block(dirs) -> None:
    write_json_hooks(dirs[1], [bash_hook("j", "echo not-json", on_error="block")])
    with trio.fail_after(10):
        async with engine(dirs) as e:
            out = await e.pre_tool("bash", {})
    assert out.blocked and out.reason is not None and "hook user:j failed" in out.reason


async def test_ask_and_allow_decisions(dirs) -> None:
    write_toml_hooks(
        dirs[1],
        """
[[hooks.pre_tool]]
match = "rm"
command = '''echo '{"decision": "ask", "reason": "sure?"}' '''
[[hooks.pre_tool]]
command = '''echo '{"decision": "allow"}' '''
""",
    )
    with trio.fail_after(10):
        async with engine(dirs) as e:
            ask = await e.pre_tool("rm", {})
            allow = await e.pre_tool("ls", {})
    assert (ask.decision, ask.reason, ask.blocked) == ("ask", "sure?", False)
    assert (allow.decision, allow.blocked) == ("allow", False)


async def test_prompt_submit_context_block_and_patch(dirs) -> None:
    write_toml_hooks(dirs[1], '[[hooks.prompt_submit]]\ncommand = "echo remember the tests"\n')
    write_json_hooks(
        dirs[1],
        [
            bash_hook(
                "rw",
                'printf \'%s\' \'{"decision":"mutate","patch":{"message":"rewritten"}}\'',
                event="user_prompt_submit",
            )
        ],
    )
    with trio.fail_after(10):
        async with engine(dirs) as e:
            out = await e.prompt_submit("hello")
    assert out.additional_context == "remember the tests"
    assert out.prompt == "rewritten" and not out.blocked


async def test_prompt_submit_block(dirs) -> None:
    write_toml_hooks(dirs[1], '[[hooks.prompt_submit]]\ncommand = "exit 2"\n')
    with trio.fail_after(10):
        async with engine(dirs) as e:
            out = await e.prompt_submit("hello")
    assert out.blocked and out.reason == "blocked by hook"


async def test_stop_continue_capped_at_five_per_prompt(dirs, tmp_path: Path) -> None:
    log = tmp_path / "active.log"
    write_toml_hooks(
        dirs[1],
        f"""[[hooks.stop]]
command = '''python3 -c "import json,sys; print(json.load(sys.stdin)['stop_hook_active'])" >> {log}; echo 'run the tests' >&2; exit 2'''
""",
    )
    with trio.fail_after(20):
        async with engine(dirs) as e:
            outs = [await e.stop(prompt_id="p1") for _ in range(6)]
            other = await e.stop(prompt_id="p2")
    assert [o.continue_ for o in outs] == [True] * 5 + [False]
    assert outs[0].reason == "run the tests"
    assert any("limit of 5" in w for w in outs[5].warnings)
    assert other.continue_
    assert log.read_text().split() == ["False"] + ["True"] * 5 + ["False"]


async def test_turn_end_is_advisory(dirs) -> None:
    write_json_hooks(
        dirs[1], [bash_hook("t", 'printf \'{"decision":"block","reason":"x"}\'', event="turn_end")]
    )
    with trio.fail_after(10):
        async with engine(dirs) as e:
            out = await e.stop(prompt_id="p")
    assert not out.blocked and not out.continue_
    assert any("ignored" in w for w in out.warnings)


async def test_permission_request_allow_and_deny(dirs) -> None:
    write_toml_hooks(
        dirs[1],
        """
[[hooks.permission_request]]
match = "ls"
command = '''echo '{"decision": "allow", "reason": "read-only"}' '''
[[hooks.permission_request]]
match = "rm"
command = '''echo '{"decision": "deny", "reason": "never"}' '''
""",
    )
    with trio.fail_after(10):
        async with engine(dirs) as e:
            allow = await e.permission_request("ls", {})
            deny = await e.permission_request("rm", {})
    assert (allow.decision, allow.blocked) == ("allow", False)
    assert (deny.decision, deny.blocked, deny.reason) == ("deny", True, "never")


async def test_session_start_plain_output_is_context(dirs) -> None:
    write_toml_hooks(dirs[1], '[[hooks.session_start]]\ncommand = "echo branch main"\n')
    with trio.fail_after(10):
        async with engine(dirs) as e:
            out = await e.session_start("startup")
    assert out.additional_context == "branch main"


async def test_json_post_tool_use_patches_result_and_context(dirs) -> None:
    write_json_hooks(
        dirs[1],
        [
            bash_hook(
                "ctx",
                'printf \'%s\' \'{"decision":"mutate","patch":{"additional_context":"lint ok"}}\'',
                event="post_tool_use",
            ),
            bash_hook(
                "err",
                'printf \'%s\' \'{"decision":"mutate","patch":{"error":"masked"}}\'',
                event="post_tool_use",
            ),
            bash_hook("blk", "printf '%s' '{\"decision\":\"block\"}'", event="post_tool_use"),
        ],
    )
    with trio.fail_after(10):
        async with engine(dirs) as e:
            out = await e.post_tool("bash", {"command": "ls"}, result="a\nb", error="boom")
    assert out.result == {"value": "a\nb", "hook_context": "lint ok"}
    assert out.error == "masked"
    assert not out.blocked and any("ignored" in w for w in out.warnings)


async def test_in_process_hook_blocks_without_spawning(dirs) -> None:
    seen: list[dict[str, Any]] = []

    async def policy(ev):
        seen.append(dict(ev))
        if "rm -rf" in ev["args"].get("command", ""):
            return {"decision": "block", "reason": "no rm -rf"}
        return None

    with trio.fail_after(10):
        async with engine(dirs) as e:
            e.add_hook("pre_tool", policy, match="bash")
            out = await e.pre_tool("bash", {"command": "rm -rf /"})
            ok = await e.pre_tool("bash", {"command": "ls"})
            spawned = e.live_processes
    assert out.blocked and out.reason == "no rm -rf"
    assert not ok.blocked and [r.dialect for r in ok.runs] == ["python"]
    assert seen[0]["tool"] == "bash" and spawned == 0


async def test_mixed_dialect_table_runs_in_order(dirs, tmp_path: Path) -> None:
    order = tmp_path / "order"
    write_toml_hooks(dirs[1], f'[[hooks.pre_tool]]\ncommand = "echo toml >> {order}"\n')
    write_json_hooks(dirs[1], [bash_hook("j", f"echo json >> {order}")])
    ws_agents = dirs[0] / ".agents"
    write_toml_hooks(ws_agents, f'[[hooks.pre_tool]]\ncommand = "echo ws-toml >> {order}"\n')
    with trio.fail_after(10):
        async with engine(dirs) as e:
            out = await e.pre_tool("bash", {})
    assert order.read_text().split() == ["toml", "json", "ws-toml"]
    assert [r.dialect for r in out.runs] == ["toml", "json", "toml"]


async def test_events_do_not_serialize(dirs) -> None:
    async def slow(ev):
        await trio.sleep(0.3)

    with trio.fail_after(10):
        async with engine(dirs) as e:
            e.add_hook("pre_tool", slow)
            start = trio.current_time()
            async with trio.open_nursery() as n:
                for i in range(100):
                    n.start_soon(e.pre_tool, "bash", {"i": i})
            elapsed = trio.current_time() - start
    assert elapsed < 3.0, elapsed  # 100 x 300 ms would be 30 s if they serialized


async def test_cancelled_fire_kills_the_hook(dirs, tmp_path: Path) -> None:
    write_toml_hooks(dirs[1], '[[hooks.pre_tool]]\ncommand = "sleep 100"\n')
    with trio.fail_after(10):
        async with engine(dirs) as e:
            with trio.move_on_after(0.3):
                await e.pre_tool("bash", {})
            with trio.fail_after(3):
                while e.live_processes:
                    await trio.sleep(0.02)


async def test_unknown_event_is_an_error(dirs) -> None:
    from triohooks import UnknownEventError

    with trio.fail_after(10):
        async with engine(dirs) as e:
            with pytest.raises(UnknownEventError):
                await e.fire("pre_tool_usage", {})
