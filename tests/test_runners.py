"""The runner interface: one runner per hook kind behind ``Runners``, fed a ``HookInput``.

A fake spawner stands in for the reaper, so these check what each runner asks the process guard
for and how it reads the answer; real processes run in test_engine*.py and test_reaper.py.
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

import pytest

from triohooks.config.model import ArgsHandler, CommandHandler, Hook, PythonHandler
from triohooks.handlers.builtin import builtin_runners
from triohooks.handlers.command import CommandRunner
from triohooks.handlers.json_command import JsonCommandRunner
from triohooks.handlers.process import ProcessResult, ProcessSpec
from triohooks.handlers.runner import HookInput, Runners


class FakeSpawner:
    def __init__(self, result: ProcessResult) -> None:
        self.result = result
        self.specs: list[ProcessSpec] = []
        self.payload_file: bytes | None = None

    async def run(self, spec: ProcessSpec) -> ProcessResult:
        """Records the spec; the payload file is the spawner's to write (ProcessSpec), so the
        fake only keeps its contents."""
        self.specs.append(spec)
        if spec.payload_file is not None:
            self.payload_file = spec.payload_file[1]
        return self.result

    async def write_payload(self, path: str, data: bytes) -> None:
        raise AssertionError("no worker hook runs here")

    async def remove_payload(self, path: str) -> None:
        raise AssertionError("no worker hook runs here")


def hook(handler: Any, dialect: str = "toml", event: str = "pre_tool") -> Hook:
    return Hook(
        id="h",
        name="h",
        event=event,
        config_event=event,
        dialect=dialect,  # type: ignore[arg-type]
        scope="global",
        source="x",
        index=0,
        handler=handler,
        timeout_s=5.0,
    )


def runners(spawner: FakeSpawner) -> Runners:
    return builtin_runners(spawner=spawner, http=None, judge=None, workspace="/ws")


def test_the_hook_kind_picks_the_runner() -> None:
    table = runners(FakeSpawner(ProcessResult(status="exited", exit_code=0)))
    assert isinstance(table.for_hook(hook(CommandHandler("true"))), CommandRunner)
    assert isinstance(table.for_hook(hook(ArgsHandler(("true",)))), CommandRunner)
    assert isinstance(table.for_hook(hook(CommandHandler("true"), "json")), JsonCommandRunner)
    with pytest.raises(LookupError, match="no runner"):
        Runners().for_hook(hook(CommandHandler("true")))


async def test_toml_command_is_fed_the_payload_bytes_as_encoded() -> None:
    spawner = FakeSpawner(ProcessResult(status="exited", exit_code=2, stderr="no"))
    payload = b'{"event":"post_tool","session_id":"s","tool":"bash"}'
    result = await runners(spawner).run(
        hook(CommandHandler("exit 2")), HookInput("post_tool", "s", payload=payload)
    )
    assert result.outcome == "block" and result.reason == "no"
    (spec,) = spawner.specs
    assert spec.argv == ("bash", "-c", "exit 2")
    assert spec.stdin is payload  # a background event's bytes go to stdin untouched
    assert spec.cwd == "/ws"


async def test_json_dialect_payload_file_is_handed_to_the_spawner() -> None:
    """The runner writes no file: the spec names a new path in the temporary directory (the
    one in the environment) with the payload, for the spawner to create and remove."""
    spawner = FakeSpawner(ProcessResult(status="exited", exit_code=0, stdout=""))
    fields = {"event": "pre_tool", "session_id": "s", "tool": "bash", "args": {"command": "ls"}}
    table = runners(spawner)
    for _ in range(2):
        result = await table.run(
            hook(CommandHandler("true"), "json"), HookInput("pre_tool", "s", fields=fields)
        )
        assert result.outcome == "ok"
    first, second = spawner.specs
    assert first.env is not None and second.env is not None
    assert first.env["EVERRUNS_HOOK_EVENT"] == "pre_tool_use"
    assert first.payload_file is not None and second.payload_file is not None
    path, contents = first.payload_file
    assert first.env["EVERRUNS_HOOK_PAYLOAD_PATH"] == path != second.payload_file[0]
    assert os.path.dirname(path) == tempfile.gettempdir()
    assert os.path.basename(path).startswith("triohooks-payload-")
    assert not os.path.exists(path)  # nobody made it: the fake spawner does not
    assert json.loads(contents)["data"]["arguments"] == {"command": "ls"}


async def test_a_runner_bug_fails_that_hook_only() -> None:
    async def buggy(fields: Any) -> None:
        raise AssertionError("unreachable")

    class Broken:
        async def run(self, hook: Hook, hook_input: HookInput) -> Any:
            raise KeyError("bug")

    table = Runners()
    table.register(PythonHandler, Broken())
    result = await table.run(hook(PythonHandler(buggy)), HookInput("pre_tool", "s", fields={}))
    assert result.outcome == "error" and result.internal
    assert result.error == "internal error: KeyError('bug')"


def test_hook_input_encodes_and_decodes_once_on_demand() -> None:
    fields = {"tool": "bash", "args": {"a": 1}}
    made = HookInput("pre_tool", "s", fields=fields)
    assert made.fields is fields
    assert json.loads(made.payload) == {**fields, "event": "pre_tool"}
    assert made.payload is made.payload
    read = HookInput("post_tool", "s", payload=b'{"event":"post_tool","x":1}')
    assert read.fields == {"event": "post_tool", "x": 1}
    assert read.fields is read.fields
    with pytest.raises(ValueError, match="fields or payload"):
        HookInput("pre_tool", "s")
