"""The pipeline core and its two drivers: the core imports no event loop, and the same event
gives the same Outcome, audit records and listener events on the trio engine (the dispatcher)
and the asyncio engine (which runs in-process hooks on its loop and crosses into Trio only for
process runs): a rewrite chain across an in-process and a command hook, a hook that crashes,
a crash of our own code, a held-back hook, a background hook queued, the stop-continue cap.

Real bash processes; the trio engine under ``fail_after``, the asyncio one under
``asyncio.timeout`` (tests.asyncio_support.run).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from tests.asyncio_support import DEADLINE_S, run
from tests.helpers import write_toml_hooks
from triohooks import HookEngine
from triohooks.engine.asyncio_engine import AsyncioHookEngine


def test_the_core_imports_no_event_loop() -> None:
    """Imported with trio and asyncio made unimportable: it needs neither."""
    code = (
        "import sys\n"
        "sys.modules['trio'] = None\n"
        "sys.modules['asyncio'] = None\n"
        "import triohooks.combine.pipeline\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


# -- the same event on both engines -------------------------------------------------------------

#: A command hook that blocks when it is fed the rewritten arguments (its stdin is the event).
TOML = """
[[hooks.pre_tool]]
match = "bash"
command = "grep -q 'ls -l' && echo '{\\"decision\\": \\"block\\", \\"reason\\": \\"saw the rewrite\\"}' || true"

[[hooks.pre_tool]]
match = "crash"
command = "echo 'not json {'; exit 3"
fail_closed = true

[[hooks.post_tool]]
match = "bash"
command = "true"
"""

#: The workspace's own hook (trust holds it back).
PROJECT = '[[hooks.pre_tool]]\nid = "team-guard"\nmatch = "team"\ncommand = "exit 2"\n'


async def rewrite(fields: Mapping[str, Any]) -> dict[str, Any] | None:
    """In-process, on both engines (no awaits: the same coroutine function runs on either)."""
    if fields.get("tool") != "bash":
        return None
    return {"updated_args": {**fields["args"], "command": fields["args"]["command"] + " -l"}}


async def sees_rewrite(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {"additional_context": "saw " + str(fields["args"].get("command"))}


async def raises(fields: Mapping[str, Any]) -> None:
    raise ValueError("hook bug")


async def go_on(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {"continue": True, "reason": "not done"}


#: (case, how to fire it); each engine fires every case in this order.
CASES: list[tuple[str, Callable[[Any], Awaitable[Any]]]] = [
    ("rewrite chain", lambda e: e.pre_tool("bash", {"command": "ls"}, session_id="s")),
    ("hook crash", lambda e: e.prompt_submit("hi", session_id="s")),
    ("command hook crash", lambda e: e.pre_tool("crash", {}, session_id="s")),
    ("held back", lambda e: e.pre_tool("team", {}, session_id="s")),
    ("background queued", lambda e: e.post_tool("bash", {"command": "ls"}, session_id="s")),
    *[
        (f"stop {i}", lambda e: e.stop(session_id="s", prompt_id="p"))
        for i in range(6)  # the sixth is past the cap of 5
    ],
    ("no hook", lambda e: e.notification("idle", "waiting", session_id="s")),
]


def register(e: Any) -> None:
    e.add_hook("pre_tool", rewrite, name="rewrite")
    e.add_hook("pre_tool", sees_rewrite, name="sees", match="bash")
    e.add_hook("prompt_submit", raises, name="raises")
    e.add_hook("stop", go_on, name="go_on")


def comparable(outcome: Any) -> dict[str, Any]:
    """An Outcome without its timings."""
    data: dict[str, Any] = outcome.to_builtins()
    for run_record in data["runs"]:
        run_record["duration_ms"] = 0
    return data


def listened(events: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Listener events without timings: kinds, and each audit record's fields. The runs of the
    background hook (post_tool's, on the post worker) are left out: they interleave with the
    next events by timing."""
    out: list[Any] = []
    for kind, fields in events:
        if kind in ("hook_started", "hook_finished") and fields["event"] == "post_tool":
            continue
        if kind == "audit":
            record = msgspec.to_builtins(fields["record"])
            record.update(time="", duration_ms=0)
            if isinstance(record.get("detail"), dict):  # the post worker's close report
                record["detail"]["drain_seconds"] = 0
            out.append((kind, record))
        elif kind == "closed":
            out.append((kind, msgspec.structs.replace(fields["report"], drain_seconds=0)))
        elif kind == "outcome":
            out.append((kind, comparable(fields["outcome"])))
        else:
            out.append((kind, {k: v for k, v in fields.items() if k != "duration_ms"}))
    return out


def options(tmp_path: Path, name: str) -> dict[str, Any]:
    return {
        "workspace": tmp_path / "ws",
        "config_dir": tmp_path / "config",
        "state_dir": tmp_path / f"state-{name}",
    }


def on_trio(tmp_path: Path, cases: list[tuple[str, Callable[[Any], Awaitable[Any]]]]) -> Any:
    events: list[tuple[str, dict[str, Any]]] = []

    async def main() -> list[Any]:
        with trio.fail_after(DEADLINE_S):
            async with HookEngine.open(**options(tmp_path, "trio")) as e:
                register(e)
                e.add_listener(lambda kind, fields: events.append((kind, dict(fields))))
                return [await fire(e) for _, fire in cases]

    return trio.run(main), events


def on_asyncio(tmp_path: Path, cases: list[tuple[str, Callable[[Any], Awaitable[Any]]]]) -> Any:
    events: list[tuple[str, dict[str, Any]]] = []
    got: list[Any] = []
    crossings: list[int] = []

    async def body() -> None:
        async with AsyncioHookEngine.open(**options(tmp_path, "asyncio")) as e:
            register(e)
            e.add_listener(lambda kind, fields: events.append((kind, dict(fields))))
            for _, fire in cases:
                before = e._guest.crossings
                got.append(await fire(e))
                crossings.append(e._guest.crossings - before)

    run(body)
    return got, events, crossings


@pytest.fixture
def both(tmp_path: Path) -> tuple[Any, Any]:
    write_toml_hooks(tmp_path / "config", TOML)
    # A project hook, not trusted: held back from the calls it would have judged.
    write_toml_hooks(tmp_path / "ws/.agents", PROJECT)
    return on_trio(tmp_path, CASES), on_asyncio(tmp_path, CASES)


def test_the_same_events_give_the_same_answers_on_both_engines(both: Any) -> None:
    (trio_got, _), (asyncio_got, _, _) = both
    for (case, _), t, a in zip(CASES, trio_got, asyncio_got, strict=True):
        assert comparable(a) == comparable(t), case
    by_case = dict(zip([c for c, _ in CASES], asyncio_got, strict=True))
    chain = by_case["rewrite chain"]
    # The rewrite reached the next in-process hook and then the command hook, which blocked.
    assert [r.hook for r in chain.runs][:2] == ["rewrite", "sees"]
    assert chain.additional_context == "saw ls -l"
    assert chain.blocked and chain.reason == "saw the rewrite"
    assert by_case["hook crash"].runs[0].outcome == "error"
    assert "ValueError('hook bug')" in (by_case["hook crash"].runs[0].error or "")
    assert by_case["command hook crash"].blocked  # fail_closed
    held = by_case["held back"]
    assert held.decision == "ask" and [r.hook for r in held.runs] == ["rewrite"]
    assert any("team-guard" in w or "held back" in w for w in held.warnings), held.warnings
    assert by_case["background queued"].queued
    assert by_case["stop 4"].continue_ and not by_case["stop 5"].continue_
    assert any("limit of 5" in w for w in by_case["stop 5"].warnings)


def test_the_same_events_give_the_same_audit_records_and_listener_events(both: Any) -> None:
    (_, trio_events), (_, asyncio_events, _) = both
    assert listened(asyncio_events) == listened(trio_events)
    audited = [fields for kind, fields in listened(asyncio_events) if kind == "audit"]
    assert [(r["hook"], r["decision"]) for r in audited][:4] == [
        ("global:pre_tool[0]", "block"),
        ("api:raises:2", "error"),
        ("global:pre_tool[1]", "error"),
        ("team-guard", "ask"),
    ]


def test_only_process_runs_cross_into_trio(both: Any) -> None:
    _, (_, _, crossings) = both
    by_case = dict(zip([c for c, _ in CASES], crossings, strict=True))
    assert by_case["rewrite chain"] == 1  # the command hook; the two in-process ones ran here
    assert by_case["command hook crash"] == 1
    for case in ("hook crash", "held back", "stop 0", "stop 5", "no hook", "background queued"):
        assert by_case[case] == 0, case


def test_a_crash_of_our_own_code_fails_closed_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Containment is the core's: a bug while folding blocks the event, saying so, on both."""

    def broken(self: Any, step: Any, result: Any) -> None:
        raise RuntimeError("fold bug")

    write_toml_hooks(tmp_path / "config", TOML)
    (tmp_path / "ws").mkdir()
    monkeypatch.setattr("triohooks.combine.pipeline.EventRun.add", broken)
    cases = CASES[:1]
    (trio_got, _), (asyncio_got, _, _) = on_trio(tmp_path, cases), on_asyncio(tmp_path, cases)
    assert comparable(asyncio_got[0]) == comparable(trio_got[0])
    assert asyncio_got[0].blocked
    assert "internal error while handling pre_tool: RuntimeError('fold bug')" in (
        asyncio_got[0].reason or ""
    )


def test_an_asyncio_hook_that_ignores_its_cancel_cannot_hold_the_event(tmp_path: Path) -> None:
    """On the loop, a hook's timeout cancels its task and waits a bounded grace for it: a hook
    that swallows the cancel times out all the same, and the event is answered."""
    import asyncio

    (tmp_path / "ws").mkdir()
    swallowed = asyncio.Event()

    async def stubborn(fields: Mapping[str, Any]) -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            swallowed.set()
        await asyncio.sleep(30)

    async def body() -> None:
        async with AsyncioHookEngine.open(**options(tmp_path, "asyncio")) as e:
            e.add_hook("pre_tool", stubborn, timeout_s=0.1)
            out = await e.pre_tool("bash", {"command": "ls"})
            assert [r.outcome for r in out.runs] == ["timeout"]
            assert swallowed.is_set()

    run(body)


class _Groups:
    """A plan of fixed groups whose steps are (name, seconds): what the driver added, in order."""

    def __init__(self, *groups: tuple[tuple[str, float], ...]) -> None:
        self.groups = list(groups)
        self.added: list[tuple[str, str]] = []

    def next_group(self) -> tuple[tuple[str, float], ...] | None:
        return self.groups.pop(0) if self.groups else None

    def add(self, step: tuple[str, float], result: str) -> None:
        self.added.append((step[0], result))


async def test_the_driver_runs_a_groups_steps_at_once_and_adds_them_in_order(
    autojump_clock: trio.abc.Clock,
) -> None:
    """The one driver of every dialect's plan: a group's steps at once (the group takes its
    slowest step's time, not the sum), results added in the group's order whatever order they
    finished in, groups one after another."""
    from triohooks.actors.dispatcher import drive

    started: list[tuple[str, float]] = []

    async def run_step(step: tuple[str, float]) -> str:
        started.append((step[0], trio.current_time()))
        await trio.sleep(step[1])
        return step[0] + " done"

    plan = _Groups((("slow", 3.0), ("fast", 1.0), ("lane", 2.0)), (("after", 1.0),))
    start = trio.current_time()
    with trio.fail_after(60):
        await drive(plan, run_step)
    assert trio.current_time() - start == pytest.approx(4.0)
    assert plan.added == [
        ("slow", "slow done"),
        ("fast", "fast done"),
        ("lane", "lane done"),
        ("after", "after done"),
    ]
    assert dict(started)["after"] - start == pytest.approx(3.0)  # only once the group was done
