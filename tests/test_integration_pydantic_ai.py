"""``triohooks.integrations.pydantic_ai``: real pydantic-ai agents on an offline ``FunctionModel``,
a real ``AsyncioHookEngine`` and real bash hooks from config files in temp dirs."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from triohooks import AsyncioHookEngine
from triohooks.integrations.pydantic_ai import guard_tools, hooked

from .helpers import write_toml_hooks
from .integration_hooks import (
    HOOKS,
    STOP_ALWAYS,
    STOP_TWICE,
    make_dirs,
    opts,
    sleepers,
    written_json,
)
from .test_docs_examples import GUARDED_FROM, ROOT, doc_example, elsewhere, isolated_env

pytestmark = pytest.mark.slow


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path, Path]:
    return make_dirs(tmp_path)


class Script:
    """An offline model: the first request of each run answers with ``calls`` (if any), a
    request that carries tool results answers with them as text."""

    def __init__(self, *calls: ToolCallPart) -> None:
        self.calls = list(calls)
        self.requests: list[tuple[list[ModelMessage], AgentInfo]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests.append((list(messages), info))
        returned = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
        if returned:
            return ModelResponse(parts=[TextPart(json.dumps([r.content for r in returned]))])
        if self.calls:
            return ModelResponse(parts=list(self.calls))
        return ModelResponse(parts=[TextPart(f"done: {user_prompts(messages)[-1]}")])

    def tool_results(self) -> list[Any]:
        return [
            p.content
            for messages, _ in self.requests
            for p in messages[-1].parts
            if isinstance(p, ToolReturnPart)
        ]


def user_prompts(messages: list[ModelMessage]) -> list[str]:
    return [
        str(p.content)
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, UserPromptPart)
    ]


class Notes(BaseModel):
    path: str
    lines: int = 10


def make_agent(script: Script) -> tuple[Agent[None, str], list[Any]]:
    """An agent with a ``bash`` tool, a ``read_secret`` tool, a ``slow`` tool and a ``notes``
    tool (a pydantic-model argument); ``ran`` records what each tool body received."""
    agent: Agent[None, str] = Agent(FunctionModel(script))
    ran: list[Any] = []

    @agent.tool_plain
    def bash(command: str) -> str:
        ran.append(("bash", command))
        return f"ran {command}"

    @agent.tool_plain
    def read_secret() -> str:
        ran.append(("read_secret",))
        return "hunter2"

    @agent.tool_plain
    async def slow() -> str:
        ran.append(("slow",))
        return "slow done"

    @agent.tool_plain
    def notes(spec: Notes) -> dict[str, Any]:
        ran.append(("notes", spec))
        return {"path": spec.path, "lines": spec.lines}

    @agent.tool_plain
    def broken() -> str:
        raise RuntimeError("disk full")

    return agent, ran


def run(main: Callable[[], Any], timeout: float = 30) -> Any:
    async def bounded() -> Any:
        async with asyncio.timeout(timeout):
            return await main()

    return asyncio.run(bounded())


async def written(path: Path, lines: int = 1) -> list[Any]:
    """The JSON lines a background hook writes (post events run in the background queue)."""
    while True:
        if path.exists():
            found = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
            if len(found) >= lines:
                return found
        await asyncio.sleep(0.02)


def test_a_block_reaches_the_model_as_the_tool_result_and_the_tool_does_not_run(dirs) -> None:
    script = Script(ToolCallPart("bash", {"command": "git push"}, tool_call_id="c1"))
    agent, ran = make_agent(script)

    async def main() -> Any:
        async with AsyncioHookEngine.open(**opts(dirs)) as engine:
            return await agent.run("push it", capabilities=[guard_tools(engine)])

    result = run(main)
    assert ran == []
    assert script.tool_results() == ["blocked by pre_tool hook: no pushing"]
    assert json.loads(result.output) == ["blocked by pre_tool hook: no pushing"]


def test_a_rewrite_changes_the_arguments_the_tool_function_receives(dirs) -> None:
    script = Script(
        ToolCallPart("bash", {"command": "pytest"}, tool_call_id="c1"),
        ToolCallPart("notes", {"spec": {"path": "a.md"}}, tool_call_id="c2"),
    )
    agent, ran = make_agent(script)

    async def shorter(event: Mapping[str, Any]) -> dict[str, Any]:
        return {"updated_args": {"spec": {**event["args"]["spec"], "lines": 3}}}

    async def main() -> None:
        async with AsyncioHookEngine.open(**opts(dirs)) as engine:
            engine.add_hook("pre_tool", shorter, match="notes")
            await agent.run("test", capabilities=[guard_tools(engine)])

    run(main)
    # The rewritten arguments are validated like the model's: a Notes, not a dict.
    assert sorted(ran, key=str) == [("bash", "pytest -q"), ("notes", Notes(path="a.md", lines=3))]
    assert sorted(script.tool_results(), key=str) == [
        "ran pytest -q",
        {"path": "a.md", "lines": 3},
    ]


def test_post_tool_sees_the_real_result_and_its_patch_is_what_the_model_gets(dirs) -> None:
    ws = dirs[0]
    script = Script(
        ToolCallPart("read_secret", {}, tool_call_id="c1"),
        ToolCallPart("bash", {"command": "ls"}, tool_call_id="c2"),
    )
    agent, ran = make_agent(script)

    async def main() -> list[Any]:
        async with AsyncioHookEngine.open(**opts(dirs)) as engine:
            await agent.run("look", capabilities=[guard_tools(engine)])
            return await written(ws / "post.jsonl", lines=2)

    posts = run(main)
    assert sorted(ran) == [("bash", "ls"), ("read_secret",)]
    # The model got the JSON hook's patch; the hook saw the tool's real result.
    assert sorted(script.tool_results()) == ["[redacted]", "ran ls"]
    saw = json.loads((ws / "redact-saw.json").read_text())
    assert saw["data"]["result"] == "hunter2" and saw["data"]["tool_call_id"] == "c1"
    # The TOML post_tool hook (background) saw both real results, with the call ids.
    by_tool = {p["tool"]: p for p in posts}
    assert by_tool["bash"]["result"] == "ran ls" and by_tool["bash"]["tool_call_id"] == "c2"
    assert by_tool["read_secret"]["result"] == "hunter2"


def test_a_tool_error_fires_post_tool_failure_and_goes_on_to_pydantic_ai(dirs) -> None:
    ws = dirs[0]
    script = Script(ToolCallPart("broken", {}, tool_call_id="c1"))
    agent, _ = make_agent(script)

    async def main() -> Any:
        async with AsyncioHookEngine.open(**opts(dirs)) as engine:
            with pytest.raises(RuntimeError, match="disk full"):
                await agent.run("try", capabilities=[guard_tools(engine)])
            return await written(ws / "failure.json")

    (failure,) = run(main)
    assert failure["tool"] == "broken" and failure["tool_call_id"] == "c1"
    assert failure["error"] == "disk full"


def test_both_tool_calls_of_one_model_response_are_guarded(dirs) -> None:
    script = Script(
        ToolCallPart("bash", {"command": "git push --force"}, tool_call_id="c1"),
        ToolCallPart("bash", {"command": "pytest tests"}, tool_call_id="c2"),
    )
    agent, ran = make_agent(script)
    seen: list[tuple[str, str]] = []

    async def record(event: Mapping[str, Any]) -> None:
        seen.append((event["tool_call_id"], event["args"]["command"]))

    async def main() -> None:
        async with AsyncioHookEngine.open(**opts(dirs)) as engine:
            engine.add_hook("pre_tool", record)
            await agent.run("go", capabilities=[guard_tools(engine)])

    run(main)
    assert sorted(seen) == [("c1", "git push --force"), ("c2", "pytest tests")]
    assert ran == [("bash", "pytest tests -q")]
    assert sorted(script.tool_results()) == [
        "blocked by pre_tool hook: no pushing",
        "ran pytest tests -q",
    ]


def test_cancelling_the_run_mid_hook_kills_the_hook_and_ends_the_session(dirs) -> None:
    ws = dirs[0]
    script = Script(ToolCallPart("slow", {}, tool_call_id="c1"))
    agent, ran = make_agent(script)

    async def main() -> float:
        async with AsyncioHookEngine.open(**opts(dirs)) as engine:

            async def turn() -> None:
                async with hooked(agent, engine, "cancel-me") as session:
                    await session.run("be slow")

            task = asyncio.create_task(turn())
            async with asyncio.timeout(10):  # the sleep 30 hook is running
                while not sleepers():  # the slow tool's hook, not session_start's
                    await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            started = time.monotonic()
            # The run ends with its group SIGKILLed; a process of the group dies when the
            # kernel gets to it: polled until gone, within the same 2 s.
            async with asyncio.timeout(2):
                while engine.live_processes or sleepers():
                    await asyncio.sleep(0.01)
            return time.monotonic() - started

    assert run(main) < 2
    assert ran == []
    end = written_json(ws / "end.json")  # session_end's hook runs in the background queue
    assert (end["session_id"], end["reason"]) == ("cancel-me", "cancelled")


def test_a_session_brings_start_context_to_the_model_and_ends(dirs) -> None:
    ws = dirs[0]
    script = Script()
    agent, _ = make_agent(script)

    async def main() -> list[Any]:
        async with AsyncioHookEngine.open(**opts(dirs)) as engine:
            async with hooked(agent, engine, "s-1") as session:
                first = await session.run("hello")
                second = await session.run("and again", instructions="be brief")
            return [first, second]

    first, second = run(main)
    assert (first.output, second.output) == ("done: hello", "done: and again")
    (_, info1), (messages2, info2) = script.requests
    assert info1.instructions == "branch: main"
    # pydantic-ai keeps no instructions in the history: session_start's go with every run.
    assert info2.instructions is not None
    assert "be brief" in info2.instructions and "branch: main" in info2.instructions
    assert user_prompts(messages2) == ["hello", "and again"]  # one conversation
    end = written_json(ws / "end.json")
    assert (end["session_id"], end["reason"]) == ("s-1", "exit")


def test_a_blocked_prompt_never_reaches_the_model(dirs) -> None:
    script = Script()
    agent, _ = make_agent(script)

    async def main() -> Any:
        async with AsyncioHookEngine.open(**opts(dirs)) as engine, hooked(agent, engine) as session:
            return await session.run("my secret is hunter2")

    turn = run(main)
    assert turn.blocked and turn.results == [] and turn.output is None
    assert turn.message == "no secrets in prompts"
    assert script.requests == []


def test_the_stop_loop_runs_the_agent_again_with_the_hook_message(dirs) -> None:
    ws, g, _ = dirs
    write_toml_hooks(g, HOOKS + STOP_TWICE)
    script = Script()
    agent, _ = make_agent(script)

    async def main() -> Any:
        async with AsyncioHookEngine.open(**opts(dirs)) as engine, hooked(agent, engine) as session:
            return await session.run("fix the tests")

    turn = run(main)
    assert len(turn.results) == 3
    assert turn.output == "done: tests still red"
    prompts = user_prompts(script.requests[-1][0])
    assert prompts == ["fix the tests", "tests still red", "tests still red"]
    assert all(info.instructions == "branch: main" for _, info in script.requests)
    assert (ws / "stops").read_text().strip() == "3"


def test_the_stop_loop_is_capped_by_the_engine(dirs) -> None:
    write_toml_hooks(dirs[1], HOOKS + STOP_ALWAYS)
    script = Script()
    agent, _ = make_agent(script)

    async def main() -> Any:
        async with AsyncioHookEngine.open(**opts(dirs)) as engine, hooked(agent, engine) as session:
            return await session.run("fix the tests"), session.session.last_stop

    turn, last_stop = run(main)
    assert len(turn.results) == 6  # the first run and five continues
    assert not last_stop.continue_ and last_stop.warnings


# -- the example of docs/integrations.md ----------------------------------------------------


def test_the_doc_example_runs_and_guards_the_agent_in_ten_lines(tmp_path: Path) -> None:
    code, guarding = doc_example("pydantic_ai")
    assert len(guarding) <= 10, guarding
    assert "AsyncioHookEngine" in code.split(GUARDED_FROM)[1]  # everything triohooks is below
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=elsewhere(tmp_path),
        env=isolated_env(tmp_path, (ROOT / "examples" / "hooks.toml").read_text()),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "blocked by pre_tool hook: pushing is for humans" in done.stdout
