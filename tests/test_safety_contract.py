"""The safety contract under our own faults and bad input.

Real engines with real bash hooks; faults are injected into our own code with monkeypatch.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import trio

from triohooks import AsyncioHookEngine, HookEngine, PayloadError
from triohooks.actors.audit import AuditSink
from triohooks.combine.outcome import Outcome, StopContinues

from .helpers import write_toml_hooks

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("guard_backend")]


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path, Path]:
    ws, g, state = tmp_path / "ws", tmp_path / "g", tmp_path / "state"
    ws.mkdir()
    g.mkdir()
    return ws, g, state


def engine(dirs: tuple[Path, Path, Path], **kw: Any) -> Any:
    ws, g, state = dirs
    return HookEngine.open(workspace=ws, config_dir=g, state_dir=state, **kw)


# -- item 6: an internal error fails closed ------------------------------------------------


async def test_a_bug_in_the_audit_path_blocks_instead_of_allowing(dirs, monkeypatch) -> None:
    write_toml_hooks(dirs[1], '[[hooks.pre_tool]]\ncommand = "exit 2"\n')

    def broken_submit(self: AuditSink, record: Any) -> bool:
        raise RuntimeError("a bug in audit submit")

    monkeypatch.setattr(AuditSink, "submit", broken_submit)
    with trio.fail_after(10):
        async with engine(dirs) as e:
            out = await e.pre_tool("bash", {"command": "git push"})
            prompt = await e.prompt_submit("hello")
            perm = await e.permission_request("bash", {"command": "rm -rf /"})
    assert out.blocked and out.decision == "block"
    assert out.reason is not None and out.reason.startswith(
        "internal error while handling pre_tool"
    )
    assert out.message_for_model == f"blocked by pre_tool hook: {out.reason}"
    assert not prompt.blocked  # no hook ran for it: nothing failed
    assert not perm.blocked


async def test_a_bug_in_a_runner_blocks_a_guard_that_is_not_fail_closed(dirs, monkeypatch) -> None:
    """A TOML guard without fail_closed fails open when *it* fails -- but a bug in our own
    runner or process guard is not the hook failing: it blocks, saying so."""
    write_toml_hooks(
        dirs[1],
        '[[hooks.pre_tool]]\nid = "guard"\ncommand = "exit 0"\n'
        '[[hooks.session_start]]\nid = "ctx"\ncommand = "echo hi"\n',
    )

    async def broken_run(self: Any, hook: Any, hook_input: Any) -> Any:
        raise RuntimeError("a bug in the command runner")

    monkeypatch.setattr("triohooks.handlers.command.CommandRunner.run", broken_run)
    with trio.fail_after(10):
        async with engine(dirs) as e:
            out = await e.pre_tool("bash", {"command": "rm -rf /"})
            start = await e.session_start()
    assert out.blocked and out.reason is not None
    assert out.reason.startswith("triohooks internal error running hook guard")
    assert "a bug in the command runner" in out.reason
    assert not start.blocked  # an event that cannot block: a warning instead
    assert any("a bug in the command runner" in w for w in start.warnings)


async def test_an_internal_error_on_an_advisory_event_only_warns(dirs, monkeypatch) -> None:
    write_toml_hooks(dirs[1], '[[hooks.session_start]]\ncommand = "echo context"\n')

    def broken_add(self: Any, hook: Any, result: Any) -> None:
        raise RuntimeError("a bug in the combiner")

    monkeypatch.setattr("triohooks.combine.outcome.Combiner.add", broken_add)
    with trio.fail_after(10):
        async with engine(dirs) as e:
            start = await e.session_start()
            write_toml_hooks(dirs[1], '[[hooks.pre_tool]]\ncommand = "true"\n')
            await e.reload()
            tool = await e.pre_tool("bash", {"command": "ls"})
    assert not start.blocked
    assert any("internal error while handling session_start" in w for w in start.warnings)
    assert tool.blocked and "a bug in the combiner" in (tool.reason or "")


# -- item 8: fail_closed on an advisory event does not stop the chain ---------------------


async def test_fail_closed_on_session_start_lets_later_hooks_run(dirs) -> None:
    write_toml_hooks(
        dirs[1],
        """
[[hooks.session_start]]
command = "exit 1"
fail_closed = true
[[hooks.session_start]]
command = "echo second hook context"
""",
    )
    with trio.fail_after(10):
        async with engine(dirs) as e:
            out = await e.session_start()
    assert [r.outcome for r in out.runs] == ["error", "ok"]
    assert out.additional_context == "second hook context"
    assert not out.blocked
    assert any("block is ignored for session_start" in w for w in out.warnings)


# -- item 9: the agent's own exception comes out as itself --------------------------------


async def test_the_agents_exception_is_not_wrapped_by_the_trio_engine(dirs) -> None:
    with trio.fail_after(10), pytest.raises(ValueError, match="the agent's own") as info:
        async with engine(dirs):
            raise ValueError("the agent's own")
    assert type(info.value) is ValueError


def test_the_agents_exception_is_not_wrapped_by_the_asyncio_engine(dirs) -> None:
    ws, g, state = dirs

    async def main() -> None:
        async with AsyncioHookEngine.open(workspace=ws, config_dir=g, state_dir=state):
            raise ValueError("the agent's own")

    with pytest.raises(ValueError, match="the agent's own") as info:
        asyncio.run(asyncio.wait_for(main(), 10))
    assert type(info.value) is ValueError


# -- item 10: the stop-continue map stays bounded ----------------------------------------


def test_stop_counts_are_pruned_at_session_end_and_capped() -> None:
    counts = StopContinues(cap=100)
    for i in range(1000):
        out = Outcome(event="stop", continue_=True)
        counts.settle(f"p{i}", out, session_id=f"s{i // 10}")
    assert len(counts) == 100  # the oldest were forgotten
    assert counts.active("p999") and not counts.active("p0")
    counts.forget_session("s99")
    assert len(counts) == 90 and not counts.active("p995")
    for _ in range(6):
        out = Outcome(event="stop", continue_=True)
        counts.settle("again", out, session_id="s")
    assert not out.continue_  # the 6th continue of one prompt is refused


async def test_session_end_forgets_the_sessions_stop_counts(dirs) -> None:
    async def go_on(fields: Any) -> dict[str, Any]:
        return {"continue": True}

    with trio.fail_after(10):
        async with engine(dirs) as e:
            e.add_hook("stop", go_on)
            await e.stop(session_id="a", prompt_id="a1")
            await e.stop(session_id="b", prompt_id="b1")
            assert set(e.stop_continues) == {"a1", "b1"}
            await e.session_end(session_id="a")  # no session_end hook: still pruned
            assert set(e.stop_continues) == {"b1"}


# -- item 12: the typed helpers validate their input --------------------------------------


@pytest.mark.parametrize("args", [["ls"], "ls", 5, None])
async def test_typed_helpers_refuse_non_object_args(dirs, args: Any) -> None:
    with trio.fail_after(10):
        async with engine(dirs) as e:
            for call in (e.pre_tool, e.permission_request, e.post_tool):
                with pytest.raises(PayloadError, match="args must be an object"):
                    await call("bash", args)


def test_asyncio_helpers_refuse_non_object_args(dirs) -> None:
    ws, g, state = dirs

    async def main() -> None:
        async with AsyncioHookEngine.open(workspace=ws, config_dir=g, state_dir=state) as e:
            with pytest.raises(PayloadError, match="args must be an object"):
                await e.pre_tool("bash", ["ls"])  # type: ignore[arg-type]

    asyncio.run(asyncio.wait_for(main(), 10))


# -- item 16: truncation is visible -------------------------------------------------------


async def test_a_truncated_run_says_so_in_the_outcome_and_the_audit(dirs) -> None:
    write_toml_hooks(
        dirs[1],
        """
[[hooks.pre_tool]]
match = "bash"
command = "head -c 200000 /dev/zero | tr '\\\\0' x; echo >&2 stop; exit 2"
[[hooks.pre_tool]]
match = "short"
command = "echo small"
""",
    )
    with trio.fail_after(10):
        async with engine(dirs) as e:
            out = await e.pre_tool("bash", {"command": "ls"})
            small = await e.pre_tool("short", {})
    assert [r.truncated for r in out.runs] == [True]
    assert json.loads(json.dumps(out.to_builtins()))["runs"][0]["truncated"] is True
    assert [r.truncated for r in small.runs] == [False]
    (audit_file,) = (dirs[2] / "audit").glob("audit-*.jsonl")
    record = json.loads(audit_file.read_text().splitlines()[0])
    assert record["decision"] == "block" and record["truncated"] is True
