"""The loader actor: first load, rebuilds, the last good table, snapshots held by events in flight,
and rebuild requests served one at a time — against real files (and the real engine where it
matters)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from triohooks.actors.loader import Loader, RebuildReport
from triohooks.combine.outcome import Outcome
from triohooks.config.model import ConfigError
from triohooks.engine.hook_engine import HookEngine

from .helpers import bash_hook, write_json_hooks, write_toml_hooks


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    ws, g = tmp_path / "ws", tmp_path / "g"
    ws.mkdir()
    g.mkdir()
    return ws, g


def toml_hook(hook_id: str, command: str = "true", event: str = "pre_tool") -> str:
    return f'[[hooks.{event}]]\nid = "{hook_id}"\ncommand = "{command}"\n'


def ids(loader_or_engine: Loader | HookEngine) -> list[str]:
    return [h.id for h in loader_or_engine.table.hooks]


async def test_initial_load_raises_config_error_naming_file_event_index_field(dirs) -> None:
    ws, g = dirs
    path = write_toml_hooks(g, toml_hook("ok") + '[[hooks.pre_tool]]\ncommand = "  "\n')
    loader = Loader(workspace=ws, config_dir=g)
    with trio.fail_after(5), pytest.raises(ConfigError) as info:
        await loader.load_initial()
    (problem,) = info.value.problems
    assert (problem.file, problem.event, problem.index, problem.field) == (
        str(path),
        "pre_tool",
        1,
        "command",
    )
    assert str(info.value) == f"{path}: pre_tool[1].command: must not be empty"
    assert loader.table.hooks == () and loader.table.generation == 0  # nothing published


async def test_engine_open_fails_with_the_same_located_error(dirs) -> None:
    ws, g = dirs
    path = write_toml_hooks(g, '[[hooks.post_tool]]\nmatch = "[a"\ncommand = "x"\n')
    with trio.fail_after(5), pytest.raises(ConfigError) as info:
        async with HookEngine.open(workspace=ws, config_dir=g, audit=False):
            pass  # pragma: no cover - open must fail
    assert str(info.value).startswith(f"{path}: post_tool[0].match: syntax error in pattern")


async def test_lenient_json_problems_do_not_stop_the_first_load(dirs) -> None:
    ws, g = dirs
    (g / "hooks.json").write_text("{not json")
    write_toml_hooks(g, toml_hook("kept"))
    loader = Loader(workspace=ws, config_dir=g)
    with trio.fail_after(5):
        table = await loader.load_initial()
    assert ids(loader) == ["kept"] and table.generation == 1
    assert [p.severity for p in table.problems] == ["warning"]
    assert table.problems[0].file == str(g / "hooks.json")


async def test_rebuild_publishes_a_new_snapshot_and_leaves_the_old_one_intact(dirs) -> None:
    ws, g = dirs
    write_toml_hooks(g, toml_hook("one"))
    loader = Loader(workspace=ws, config_dir=g)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            first = await loader.load_initial()
            await nursery.start(loader.serve)
            write_toml_hooks(g, toml_hook("one") + toml_hook("two", event="stop"))
            report = await loader.rebuild()
            nursery.cancel_scope.cancel()
    assert report == RebuildReport(applied=True, generation=2, hooks=2, problems=())
    assert loader.table is not first and loader.table.generation == 2
    assert ids(loader) == ["one", "two"]
    assert [h.id for h in loader.table.for_event("stop")] == ["two"]
    assert [h.id for h in first.hooks] == ["one"] and first.generation == 1


async def test_failed_rebuild_keeps_the_last_good_table_and_says_why(dirs) -> None:
    ws, g = dirs
    path = write_toml_hooks(g, toml_hook("good"))
    loader = Loader(workspace=ws, config_dir=g)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            good = await loader.load_initial()
            await nursery.start(loader.serve)
            write_toml_hooks(g, toml_hook("good") + '[[hooks.pre_tool]]\ntype = "http"\n')
            failed = await loader.rebuild()
            kept = loader.table
            # Fixing the file applies on the next request; the failed attempt used no number.
            write_toml_hooks(g, toml_hook("fixed"))
            fixed = await loader.rebuild()
            nursery.cancel_scope.cancel()
    assert not failed.applied
    assert (failed.generation, failed.hooks) == (1, 1)
    assert [str(p) for p in failed.problems] == [
        f'{path}: pre_tool[1].url: an http hook needs url = "http(s)://..."'
    ]
    assert kept is good
    assert fixed.applied and fixed.generation == 2 and ids(loader) == ["fixed"]


async def test_rebuild_with_only_json_warnings_applies(dirs) -> None:
    ws, g = dirs
    write_json_hooks(g, [bash_hook("a", "true")])
    loader = Loader(workspace=ws, config_dir=g)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            await loader.load_initial()
            await nursery.start(loader.serve)
            write_json_hooks(g, [bash_hook("a", "true"), bash_hook("b", "true", timeout_ms=5)])
            report = await loader.rebuild()
            nursery.cancel_scope.cancel()
    assert report.applied and report.generation == 2 and report.hooks == 1
    assert [(p.index, p.field, p.severity) for p in report.problems] == [
        (1, "timeout_ms", "warning")
    ]
    assert ids(loader) == ["user:a"]


async def test_concurrent_rebuilds_are_serialized_and_all_answered(dirs) -> None:
    ws, g = dirs
    write_toml_hooks(g, toml_hook("h"))
    loader = Loader(workspace=ws, config_dir=g)
    reports: list[RebuildReport] = []

    async def ask() -> None:
        reports.append(await loader.rebuild())

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await loader.load_initial()
            await nursery.start(loader.serve)
            async with trio.open_nursery() as askers:
                for _ in range(40):  # more than the request channel holds (16)
                    askers.start_soon(ask)
            nursery.cancel_scope.cancel()
    # One build at a time: each took the previous generation + 1, none overlapped.
    assert sorted(r.generation for r in reports) == list(range(2, 42))
    assert all(r.applied and r.hooks == 1 for r in reports)
    assert loader.table.generation == 41


async def test_a_cancelled_requester_does_not_break_the_loader(dirs) -> None:
    # Found writing these tests: the reply to a requester that had given up raised
    # BrokenResourceError in the actor loop, crashing the loader (and every later reload).
    ws, g = dirs
    write_toml_hooks(g, toml_hook("h"))
    loader = Loader(workspace=ws, config_dir=g)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            await loader.load_initial()
            impatient = trio.CancelScope()

            async def ask_then_give_up() -> None:
                with impatient:
                    await loader.rebuild()

            nursery.start_soon(ask_then_give_up)
            await trio.testing.wait_all_tasks_blocked()  # the request is queued
            impatient.cancel()
            await trio.testing.wait_all_tasks_blocked()
            await nursery.start(loader.serve)  # now it builds and answers a closed channel
            report = await loader.rebuild()
            nursery.cancel_scope.cancel()
    assert report.applied and report.generation == 3  # the abandoned rebuild still happened


async def test_requests_pending_when_the_loader_stops_are_answered(dirs) -> None:
    ws, g = dirs
    write_toml_hooks(g, toml_hook("h"))
    loader = Loader(workspace=ws, config_dir=g)
    reports: list[RebuildReport] = []

    async def ask() -> None:
        reports.append(await loader.rebuild())

    with trio.fail_after(5):
        await loader.load_initial()
        async with trio.open_nursery() as askers:
            askers.start_soon(ask)
            askers.start_soon(ask)
            await trio.testing.wait_all_tasks_blocked()
            with trio.CancelScope() as serving:
                serving.cancel()  # the loader stops before it takes any request
                await loader.serve()
        after = await loader.rebuild()
    assert len(reports) == 2
    for report in (*reports, after):
        assert not report.applied and report.generation == 1
        assert "loader" in report.problems[0].message
    assert ids(loader) == ["h"]


# -- the engine: an event in flight keeps the table it started with ---------------------------


def engine(dirs: tuple[Path, Path]) -> Any:
    ws, g = dirs
    return HookEngine.open(workspace=ws, config_dir=g, audit=False)


def ran(outcome: Outcome) -> list[str]:
    return [r.hook for r in outcome.runs]


@pytest.mark.slow
async def test_in_flight_event_finishes_on_its_snapshot_around_a_python_hook(dirs) -> None:
    _, g = dirs
    write_toml_hooks(g, toml_hook("old-a") + toml_hook("old-b"))
    entered, release = trio.Event(), trio.Event()

    async def slow(fields: Mapping[str, Any]) -> None:
        entered.set()
        await release.wait()

    outcomes: list[Outcome] = []
    with trio.fail_after(10):
        async with engine(dirs) as e:
            hook = e.add_hook("pre_tool", slow, name="slow")

            async def fire() -> None:
                outcomes.append(await e.pre_tool("bash", {"command": "ls"}))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(fire)
                await entered.wait()
                write_toml_hooks(g, toml_hook("new"))
                report = await e.reload()
                assert report.applied and report.generation == 2
                assert ids(e) == ["new"]
                release.set()
            e.remove_hook(hook)
            after = await e.pre_tool("bash", {"command": "ls"})
    assert ran(outcomes[0]) == ["slow", "old-a", "old-b"]
    assert ran(after) == ["new"]


@pytest.mark.slow
async def test_rebuild_during_a_bash_hook_does_not_change_the_rest_of_that_event(
    dirs, tmp_path: Path
) -> None:
    _, g = dirs
    go = tmp_path / "go"
    wait_for_go = f"for i in $(seq 500); do [ -e {go} ] && exit 0; sleep 0.01; done; exit 1"
    write_toml_hooks(g, toml_hook("waits", wait_for_go) + toml_hook("old-second"))
    started = trio.Event()

    def listener(kind: str, fields: dict[str, Any]) -> None:
        if kind == "hook_started" and fields["hook"] == "waits":
            started.set()

    outcomes: list[Outcome] = []
    with trio.fail_after(15):
        async with engine(dirs) as e:
            e.add_listener(listener)

            async def fire() -> None:
                outcomes.append(await e.pre_tool("bash", {"command": "ls"}))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(fire)
                await started.wait()
                write_toml_hooks(g, toml_hook("new-first") + toml_hook("new-second"))
                report = await e.reload()
                go.touch()  # only now may the running hook finish
            after = await e.pre_tool("bash", {"command": "ls"})
    assert report.applied
    assert ran(outcomes[0]) == ["waits", "old-second"]
    assert outcomes[0].runs[0].outcome != "error"  # it saw `go`: it ran to the end
    assert ran(after) == ["new-first", "new-second"]


@pytest.mark.slow
async def test_a_broken_edit_fails_events_closed_until_it_is_fixed(dirs) -> None:
    """A reload asked for keeps the last good table (and says why); but an event is judged on
    the files as they are: a config that no longer loads blocks what can be blocked, saying
    so, instead of running an older version of it."""
    _, g = dirs
    good = toml_hook("guard", "echo no >&2; exit 2")
    path = write_toml_hooks(g, good)
    with trio.fail_after(10):
        async with engine(dirs) as e:
            path.write_text(good + "[[hooks.pre_tool]]\nbogus = 1\ncommand = 'x'\n")
            report = await e.reload()
            broken = await e.pre_tool("bash", {"command": "ls"})
            ended = await e.session_end()
            path.write_text(good)
            fixed = await e.pre_tool("bash", {"command": "ls"})
    assert not report.applied
    assert str(report.problems[0]).startswith(f"{path}: pre_tool[1].bogus: unknown field")
    assert broken.blocked and ran(broken) == []
    assert "does not load" in (broken.reason or "") and "pre_tool[1].bogus" in broken.reason
    assert not ended.blocked and ended.warnings  # said, on an event that cannot block
    assert fixed.blocked and ran(fixed) == ["guard"]
