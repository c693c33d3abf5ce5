"""AsyncioHookEngine drives the pipeline core on the asyncio side: an event no hook can run
for, and an event whose hooks are in-process asyncio ones, is answered there (no crossing into
the trio guest run), with the Outcome, listener events, errors and state the trio path gives;
only process runs cross (tests/test_asyncio_commands.py has command hooks).

"The trio path" is the same engine with its table taken through Trio (the loader patched to
say its files changed, so the event crosses to read it). Crossings are counted by the guest
run (every wake of trio from asyncio code). Plain sync tests, each body under
``asyncio.timeout``.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest

from tests.asyncio_support import DEADLINE_S, run
from tests.helpers import bash_hook, write_json_hooks, write_toml_hooks
from triohooks.config.events import PayloadError, PreTool, UnknownEventError
from triohooks.engine.asyncio_engine import AsyncioHookEngine

#: Hooks on every tool event, none of which can run for the events below: other tools
#: (``match``), an ``if`` rule that does not apply, a JSON matcher on another tool.
TOML = """
[[hooks.pre_tool]]
match = "never_called_tool"
command = "echo ran >> ran.txt"

[[hooks.pre_tool]]
match = "bash"
if = "shell(git push)"
command = "echo ran >> ran.txt"

[[hooks.post_tool]]
match = "never_called_tool"
command = "echo ran >> ran.txt"

[[hooks.post_tool_failure]]
match = "never_called_tool"
command = "echo ran >> ran.txt"

[[hooks.permission_request]]
match = "never_called_tool"
command = "echo ran >> ran.txt"
"""

Fire = Callable[[AsyncioHookEngine], Awaitable[Any]]

#: (name, how to fire it). None of these runs a hook; ``stop`` is never answered at once.
EVENTS: list[tuple[str, Fire]] = [
    ("pre_tool", lambda e: e.pre_tool("bash", {"command": "ls -la"}, session_id="s1")),
    (
        "pre_tool, all fields",
        lambda e: e.pre_tool(
            "bash",
            {"command": "ls", "nested": {"a": [1, 2]}},
            "call-1",
            session_id="s1",
            prompt_id="p1",
            transcript_path="/tmp/t.jsonl",
            permission_mode="default",
            cwd="/somewhere",
        ),
    ),
    ("pre_tool, other tool", lambda e: e.pre_tool("read", {"path": "x"}, session_id="s1")),
    (
        "pre_tool, unknown keyword",
        lambda e: e.pre_tool("bash", {"command": "ls"}, session_id="s1", surprise=1),
    ),
    (
        "post_tool",
        lambda e: e.post_tool("bash", {"command": "ls"}, result={"out": "a\nb"}, session_id="s1"),
    ),
    (
        "post_tool with error",
        lambda e: e.post_tool("bash", {"command": "ls"}, error="exit 2", session_id="s1"),
    ),
    (
        "permission_request",
        lambda e: e.permission_request("bash", {"command": "ls"}, "c2", session_id="s1"),
    ),
    ("prompt_submit", lambda e: e.prompt_submit("hello", session_id="s1", prompt_id="p1")),
    ("session_start", lambda e: e.session_start("resume", session_id="s1")),
    ("session_end", lambda e: e.session_end(session_id="s1")),
    ("notification", lambda e: e.notification("idle", "waiting", session_id="s1")),
    ("fire dict", lambda e: e.fire("pre_tool", {"tool": "bash", "args": {"command": "ls"}})),
    (
        "fire JSON alias",
        lambda e: e.fire("pre_tool_use", tool_name="bash", arguments={"command": "ls"}),
    ),
    (
        "fire Struct",
        lambda e: e.fire("pre_tool", PreTool(tool="bash", args={"command": "ls"}, session_id="s")),
    ),
    (
        "fire Struct + fields",
        lambda e: e.fire("pre_tool", PreTool(tool="bash", args={"command": "ls"}), session_id="s2"),
    ),
    ("fire post_tool_failure", lambda e: e.fire("post_tool_failure", tool="bash", error="x")),
    ("stop", lambda e: e.stop(session_id="s1", prompt_id="p1")),
]
#: Planned, not answered at once: ``stop`` always settles its state (and tells listeners).
SLOW_ONLY = {"stop"}


def engine(tmp_path: Path, **kw: Any) -> AbstractAsyncContextManager[AsyncioHookEngine]:
    kw.setdefault("workspace", tmp_path / "ws")
    kw.setdefault("config_dir", tmp_path / "config")
    kw.setdefault("state_dir", tmp_path / "state")
    (tmp_path / "ws").mkdir(exist_ok=True)
    return AsyncioHookEngine.open(**kw)


def trio_engine(tmp_path: Path) -> Any:
    """The trio HookEngine on the same config, for comparison (its own state dir)."""
    from triohooks.engine.hook_engine import HookEngine

    return HookEngine.open(
        workspace=tmp_path / "ws", config_dir=tmp_path / "config", state_dir=tmp_path / "state-trio"
    )


def config(tmp_path: Path) -> None:
    write_toml_hooks(tmp_path / "config", TOML)
    write_json_hooks(
        tmp_path / "config",
        [
            bash_hook(
                "json-write",
                "echo ran >> ran.txt",
                matcher={"tool_name": "write"},
            )
        ],
    )


async def no_opinion(fields: Mapping[str, Any]) -> None:
    raise AssertionError("this hook must not run")


class Recorder:
    def __init__(self, e: AsyncioHookEngine) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        e.add_listener(lambda kind, fields: self.events.append((kind, dict(fields))))


async def fire_both(e: AsyncioHookEngine, fire: Fire, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Fire once as is and once through trio; returns both (result, listener events, crossings)
    as pairs: ``(fast, trio)``."""
    guest = e._guest
    recorder = Recorder(e)
    got = []
    for slow in (False, True):
        with monkeypatch.context() as m:
            if slow:
                m.setattr(e._dispatcher.loader, "is_current", lambda: False)
            recorder.events.clear()
            before = guest.crossings
            try:
                result: Any = await fire(e)
            except Exception as exc:
                result = exc
            got.append((result, list(recorder.events), guest.crossings - before))
    return got


@pytest.mark.parametrize(("name", "fire"), EVENTS, ids=[n for n, _ in EVENTS])
def test_no_match_answer_is_the_trio_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, fire: Fire
) -> None:
    config(tmp_path)

    async def body() -> None:
        async with engine(tmp_path) as e:
            e.add_hook("pre_tool", no_opinion, match="python_tool")
            e.add_hook("permission_request", no_opinion, match="python_tool")
            (fast, fast_events, fast_cross), (slow, slow_events, slow_cross) = await fire_both(
                e, fire, monkeypatch
            )
            assert fast == slow
            assert fast.to_builtins() == slow.to_builtins()
            assert fast.runs == [] and not fast.blocked
            assert fast_events == slow_events
            assert slow_cross >= 1
            assert fast_cross == 0, "the event crossed into trio"
            if name in SLOW_ONLY:
                assert [kind for kind, _ in fast_events] == ["fired", "outcome"]
            else:
                assert fast_events == []
            # Background hooks: nothing was queued either way.
            assert not fast.queued and e.queue_depth == 0
        assert not (tmp_path / "ws/ran.txt").exists()

    run(body)


def test_no_match_answers_are_the_trio_engines_too(tmp_path: Path) -> None:
    """Against the trio HookEngine itself (in its own trio.run), not only the crossing path."""
    import trio

    from triohooks.engine.hook_engine import HookEngine

    config(tmp_path)
    calls = EVENTS

    class Adapter:
        """Just enough of the asyncio engine's surface for the lambdas above."""

        def __init__(self, engine: HookEngine) -> None:
            self._e = engine

        def __getattr__(self, name: str) -> Any:
            return getattr(self._e, name)

    async def trio_side() -> list[Any]:
        with trio.fail_after(DEADLINE_S):
            async with trio_engine(tmp_path) as e:
                return [await f(Adapter(e)) for _, f in calls]  # type: ignore[arg-type]

    (tmp_path / "ws").mkdir()
    expected = trio.run(trio_side)
    got: list[Any] = []

    async def body() -> None:
        async with engine(tmp_path, state_dir=tmp_path / "state-asyncio") as e:
            got.extend([await f(e) for _, f in calls])

    run(body)
    assert [o.to_builtins() for o in got] == [o.to_builtins() for o in expected]


@pytest.mark.parametrize(
    ("name", "fire", "error"),
    [
        ("args not an object", lambda e: e.pre_tool("bash", ["ls"]), PayloadError),
        ("args a string", lambda e: e.post_tool("bash", "ls"), PayloadError),
        ("unknown event", lambda e: e.fire("no_such_event", {}), UnknownEventError),
        ("bad field type", lambda e: e.fire("pre_tool", tool="bash", args=[1]), PayloadError),
        ("clashing keyword", lambda e: e.pre_tool("bash", {}, event="x"), TypeError),
    ],
    ids=["args not an object", "args a string", "unknown event", "bad field", "clash"],
)
def test_bad_input_raises_what_the_trio_path_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, fire: Fire, error: type
) -> None:
    async def body() -> None:
        async with engine(tmp_path) as e:
            (fast, _, _), (slow, _, _) = await fire_both(e, fire, monkeypatch)
            assert isinstance(fast, error) and type(fast) is type(slow)
            assert str(fast) == str(slow)

    run(body)


def test_session_end_forgets_stop_state_on_the_fast_path(tmp_path: Path) -> None:
    async def go_on(fields: Mapping[str, Any]) -> dict[str, Any]:
        return {"continue": True, "reason": "not done"}

    async def body() -> None:
        async with engine(tmp_path) as e:
            e.add_hook("stop", go_on)
            for session in ("s1", "s2"):
                out = await e.stop(session_id=session, prompt_id=f"{session}-p")
                assert out.continue_
            again = await e.stop(session_id="s1", prompt_id="s1-p")
            assert again.continue_
            assert e._engine.stop_continues == {"s1-p": 2, "s2-p": 1}
            before = e._guest.crossings
            end = await e.session_end(session_id="s1")
            assert e._guest.crossings == before, "session_end crossed into trio"
            assert end.event == "session_end" and end.runs == []
            assert e._engine.stop_continues == {"s2-p": 1}
            # The next stop of that prompt starts afresh: no stop_hook_active.
            seen: list[Any] = []

            async def look(fields: Mapping[str, Any]) -> None:
                seen.append(fields.get("stop_hook_active"))

            e.add_hook("stop", look)
            await e.stop(session_id="s1", prompt_id="s1-p")
            await e.stop(session_id="s2", prompt_id="s2-p")
            assert seen == [None, True] or seen == [False, True]

    run(body)


def test_fast_path_follows_hook_changes(tmp_path: Path) -> None:
    """Hooks added, removed and reloaded take effect on the very next event."""
    write_toml_hooks(tmp_path / "config", '[[hooks.pre_tool]]\nmatch = "other"\ncommand = "true"\n')
    seen: list[str] = []

    async def record(fields: Mapping[str, Any]) -> None:
        seen.append(fields["tool"])

    async def body() -> None:
        async with engine(tmp_path) as e:
            guest = e._guest

            async def crossings_of(tool: str) -> int:
                before = guest.crossings
                await e.pre_tool(tool, {"command": "ls"})
                return guest.crossings - before

            assert await crossings_of("bash") == 0
            hook = e.add_hook("pre_tool", record, match="bash")
            # An in-process hook runs on the loop: no crossing either.
            assert await crossings_of("bash") == 0 and seen == ["bash"]
            e.remove_hook(hook)
            assert await crossings_of("bash") == 0 and seen == ["bash"]
            # A process run crosses (its reload did too).
            write_toml_hooks(
                tmp_path / "config",
                '[[hooks.pre_tool]]\nmatch = "bash"\ncommand = "echo hi >> ran.txt"\n',
            )
            report = await e.reload()
            assert report.applied
            assert await crossings_of("bash") >= 1
            assert (tmp_path / "ws/ran.txt").read_text() == "hi\n"
            assert await crossings_of("other") == 0

    run(body)


def test_in_process_hooks_run_and_their_blocks_are_audited(tmp_path: Path) -> None:
    """In-process asyncio hooks run as asyncio tasks; every run is observed (listener events)
    and a block's audit record reaches the audit file."""
    calls: list[dict[str, Any]] = []

    async def guard(fields: Mapping[str, Any]) -> dict[str, Any] | None:
        calls.append(dict(fields))
        if "rm" in fields["args"]["command"]:
            return {"decision": "block", "reason": "not that"}
        return None

    async def body() -> None:
        async with engine(tmp_path) as e:
            e.add_hook("pre_tool", guard, match="bash")
            events: list[str] = []
            e.add_listener(lambda kind, fields: events.append(kind))
            for command, blocked in [("ls", False), ("rm -rf /", True), ("pwd", False)] * 3:
                out = await e.pre_tool("bash", {"command": command}, session_id="s")
                assert out.blocked is blocked
                assert [r.outcome for r in out.runs] == ["block" if blocked else "ok"]
            assert len(calls) == 9
            assert events[:4] == ["fired", "hook_started", "hook_finished", "outcome"]
            assert events.count("audit") == 3
        records = [
            json.loads(line)
            for f in sorted((tmp_path / "state").rglob("*.jsonl"))
            for line in f.read_text().splitlines()
        ]
        blocks = [r for r in records if r.get("decision") == "block"]
        assert len(blocks) == 3 and {r["session"] for r in blocks} == {"s"}

    run(body)


def test_slow_in_process_hook_still_works_and_times_out(tmp_path: Path) -> None:
    """A slow asyncio hook's answer arrives; one that overruns its timeout is cancelled and is
    that hook's timeout."""
    cancelled = asyncio.Event()

    async def slow(fields: Mapping[str, Any]) -> str:
        await asyncio.sleep(0.05)
        return "context from a slow hook"

    async def stuck(fields: Mapping[str, Any]) -> None:
        try:
            await asyncio.sleep(30)
        finally:
            cancelled.set()

    async def body() -> None:
        async with engine(tmp_path) as e:
            e.add_hook("prompt_submit", slow)
            out = await e.prompt_submit("hi", session_id="s")
            assert [r.outcome for r in out.runs] == ["ok"]
            assert out.additional_context == "context from a slow hook"
            e.add_hook("pre_tool", stuck, timeout_s=0.1)
            out = await e.pre_tool("bash", {"command": "ls"})
            assert [r.outcome for r in out.runs] == ["timeout"]
            assert out.runs[0].error == "timed out after 0.1 s"
            assert cancelled.is_set()

    run(body)


async def _rewrite(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {"updated_args": {**fields["args"], "command": fields["args"]["command"] + " -l"}}


async def _second_sees_rewrite(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {"additional_context": "saw " + fields["args"]["command"]}


async def _blocks(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {"decision": "block", "reason": "no " + str(fields.get("tool") or "prompt")}


async def _raises(fields: Mapping[str, Any]) -> None:
    raise ValueError("hook bug")


async def _own_timeout_error(fields: Mapping[str, Any]) -> None:
    raise TimeoutError("the hook's own")


async def _text(fields: Mapping[str, Any]) -> str:
    return "plain context"


async def _bad_json(fields: Mapping[str, Any]) -> str:
    return "{not json"


async def _allow(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {"decision": "allow", "reason": "fine", "system_message": "allowed by test"}


async def _go_on(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {"continue": False, "system_message": "stop here"}


#: (name, [(event, hook, match)], fire): events only in-process hooks can run for.
LOCAL_CASES: list[tuple[str, list[tuple[str, Any, str | None]], Fire]] = [
    (
        "rewrite chains into the next hook",
        [("pre_tool", _rewrite, "python_tool"), ("pre_tool", _second_sees_rewrite, None)],
        lambda e: e.pre_tool("python_tool", {"command": "ls"}, session_id="s1"),
    ),
    (
        "block stops the chain",
        [("pre_tool", _blocks, None), ("pre_tool", _raises, None)],
        lambda e: e.pre_tool("read", {"path": "x"}, session_id="s1"),
    ),
    (
        "raising hook is that hook's error",
        [("pre_tool", _raises, None), ("pre_tool", _text, None)],
        lambda e: e.pre_tool("read", {"path": "x"}),
    ),
    (
        "the hook's own TimeoutError is an error, not a timeout",
        [("pre_tool", _own_timeout_error, None)],
        lambda e: e.pre_tool("read", {"path": "x"}),
    ),
    ("invalid JSON reply", [("pre_tool", _bad_json, None)], lambda e: e.pre_tool("read", {})),
    (
        "prompt_submit block",
        [("prompt_submit", _blocks, None)],
        lambda e: e.prompt_submit("hello", session_id="s1", prompt_id="p1"),
    ),
    (
        "session_start context",
        [("session_start", _text, None)],
        lambda e: e.session_start("startup", session_id="s1"),
    ),
    (
        "permission_request allow",
        [("permission_request", _allow, None)],
        lambda e: e.permission_request("read", {"path": "x"}, "c1", session_id="s1"),
    ),
    (
        "continue false on prompt_submit",
        [("prompt_submit", _go_on, None)],
        lambda e: e.prompt_submit("hello"),
    ),
    (
        "fire with a JSON alias",
        [("pre_tool", _rewrite, "python_tool")],
        lambda e: e.fire("pre_tool_use", tool_name="python_tool", arguments={"command": "ls"}),
    ),
]


def _comparable(out: Any) -> Any:
    data = out.to_builtins()
    for r in data["runs"]:
        r.pop("duration_ms")
    return data


@pytest.mark.parametrize(("name", "hooks", "fire"), LOCAL_CASES, ids=[c[0] for c in LOCAL_CASES])
def test_in_process_answer_is_the_trio_engines(
    tmp_path: Path,
    name: str,
    hooks: list[tuple[str, Any, str | None]],
    fire: Fire,
) -> None:
    """The same Outcome and the same listener events as the trio HookEngine with the same
    hooks (plain coroutine functions, which both loops can await)."""
    import trio

    config(tmp_path)
    (tmp_path / "ws").mkdir()

    def kinds(events: list[tuple[str, dict[str, Any]]]) -> list[str]:
        return [kind for kind, _ in events]

    async def trio_side() -> tuple[Any, list[str]]:
        with trio.fail_after(DEADLINE_S):
            async with trio_engine(tmp_path) as e:
                events: list[tuple[str, dict[str, Any]]] = []
                e.add_listener(lambda kind, fields: events.append((kind, dict(fields))))
                for event, func, match in hooks:
                    e.add_hook(event, func, match=match)
                return await fire(e), kinds(events)

    expected, expected_kinds = trio.run(trio_side)
    got: list[Any] = []

    async def body() -> None:
        async with engine(tmp_path, state_dir=tmp_path / "state-asyncio") as e:
            recorder = Recorder(e)
            for event, func, match in hooks:
                e.add_hook(event, func, match=match)
            got.extend([await fire(e), kinds(recorder.events)])

    run(body)
    out, out_kinds = got
    assert out.runs, "the case must run a hook"
    assert _comparable(out) == _comparable(expected)
    assert out_kinds == expected_kinds


def test_a_command_hook_after_an_in_process_one_sees_its_rewrite(tmp_path: Path) -> None:
    """The in-process hook's rewrite reaches the TOML command hook's ``if``, and it runs."""
    config(tmp_path)

    async def to_git_push(fields: Mapping[str, Any]) -> dict[str, Any]:
        return {"updated_args": {"command": "git push"}}

    async def body() -> None:
        async with engine(tmp_path, audit=False) as e:
            e.add_hook("pre_tool", to_git_push, match="bash")
            out = await e.pre_tool("bash", {"command": "ls"})
            assert [r.outcome for r in out.runs] == ["ok", "ok"]
            assert out.args == {"command": "git push"}
            assert (tmp_path / "ws/ran.txt").read_text() == "ran\n"

    run(body)


def test_json_http_and_background_hooks(tmp_path: Path) -> None:
    """A JSON-dialect bash hook runs, an http hook against a loopback port that refuses is
    that hook's error, and a background hook that matches is queued."""
    config(tmp_path)
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        port = closed.getsockname()[1]
        url = f"http://127.0.0.1:{port}/hook"
        http = f'[[hooks.pre_tool]]\nmatch = "fetch"\ntype = "http"\nurl = "{url}"\n'
        write_toml_hooks(tmp_path / "config", TOML + http)

        async def body() -> None:
            async with engine(tmp_path, audit=False) as e:
                out = await e.pre_tool("write", {"path": "a"})
                assert [r.outcome for r in out.runs] == ["ok"]
                assert (tmp_path / "ws/ran.txt").read_text() == "ran\n"
                out = await e.pre_tool("fetch", {"url": "x"})
                assert [r.outcome for r in out.runs] == ["error"]
                e.add_hook("post_tool", _text)
                out = await e.post_tool("never_called_tool", {}, result="r")
                assert out.queued

        run(body)


def test_cancelling_an_in_process_hook_on_the_asyncio_side(tmp_path: Path) -> None:
    entered = asyncio.Event()
    left = asyncio.Event()

    async def hangs(fields: Mapping[str, Any]) -> None:
        entered.set()
        try:
            await asyncio.sleep(30)
        finally:
            left.set()

    async def body() -> None:
        async with engine(tmp_path) as e:
            hook = e.add_hook("pre_tool", hangs)
            task = asyncio.create_task(e.pre_tool("bash", {"command": "ls"}))
            await entered.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert left.is_set()
            e.remove_hook(hook)
            e.add_hook("pre_tool", _text)
            assert (await e.pre_tool("read", {}, session_id="after")).runs[0].outcome == "ok"

    run(body)


def test_a_bug_in_the_event_path_fails_the_event_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def fine(fields: Mapping[str, Any]) -> None:
        return None

    def broken(self: Any, hook: Any, result: Any) -> None:
        raise RuntimeError("combiner bug")

    async def body() -> None:
        async with engine(tmp_path) as e:
            e.add_hook("pre_tool", fine)
            monkeypatch.setattr("triohooks.combine.pipeline.Combiner.add", broken)
            out = await e.pre_tool("bash", {"command": "ls"})
            assert out.blocked and "internal error" in (out.reason or "")
            assert e._dispatcher.crashes == 1
            # Advisory events only warn.
            e.add_hook("session_start", fine)
            out = await e.session_start()
            assert not out.blocked

    run(body)


def test_fast_path_is_a_checkpoint_and_can_be_cancelled(tmp_path: Path) -> None:
    async def body() -> None:
        async with engine(tmp_path) as e:
            ticks = 0

            async def ticker() -> None:
                nonlocal ticks
                while True:
                    await asyncio.sleep(0)
                    ticks += 1

            tick = asyncio.create_task(ticker())
            await asyncio.sleep(0)
            for _ in range(10):
                await e.pre_tool("bash", {"command": "ls"})
            assert ticks >= 9, "the fast path never yielded to the loop"
            tick.cancel()
            task = asyncio.create_task(e.pre_tool("bash", {"command": "ls"}))
            await asyncio.sleep(0)  # the task is now inside pre_tool's checkpoint
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    run(body)


def test_closed_engine_still_refuses(tmp_path: Path) -> None:
    async def body() -> None:
        async with engine(tmp_path) as e:
            await e.pre_tool("bash", {"command": "ls"})
        with pytest.raises(RuntimeError, match="closed"):
            await e.pre_tool("bash", {"command": "ls"})
        with pytest.raises(RuntimeError, match="closed"):
            await e.session_end()

    run(body)


def test_fast_answer_does_not_alias_the_callers_top_level_dict(tmp_path: Path) -> None:
    async def body() -> None:
        async with engine(tmp_path) as e:
            args = {"command": "ls"}
            out = await e.pre_tool("bash", args)
            args["command"] = "changed"
            assert out.args == {"command": "ls"}

    run(body)
