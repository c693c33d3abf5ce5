"""``triohooks.integrations.openai_agents``: real Agents SDK agents and ``Runner`` on the SDK's
own offline ``ScriptedModel``, a real ``AsyncioHookEngine`` and real bash hooks from config
files in temp dirs."""

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
from agents import (
    Agent,
    FunctionTool,
    Runner,
    SQLiteSession,
    function_tool,
    set_tracing_disabled,
)
from agents.exceptions import UserError
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from pydantic import BaseModel

from triohooks import AsyncioHookEngine
from triohooks.integrations.openai_agents import guard_tools, hooked

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

set_tracing_disabled(True)  # offline: no trace export


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path, Path]:
    return make_dirs(tmp_path)


def item(x: Any, key: str) -> Any:
    return x.get(key) if isinstance(x, Mapping) else getattr(x, key, None)


def trailing_outputs(call: ModelCall) -> list[str]:
    """The function-call outputs the request ends with (the results of the last calls)."""
    found: list[str] = []
    for x in reversed(list(call.input)):
        if item(x, "type") != "function_call_output":
            break
        found.insert(0, item(x, "output"))
    return found


def user_texts(call: ModelCall) -> list[str]:
    return [item(x, "content") for x in call.input if item(x, "role") == "user"]


class Script:
    """An offline model (the SDK's ScriptedModel, every step answered by :meth:`respond`): a
    request that ends with tool outputs is answered with them (JSON), else with ``calls`` when
    given, else ``done: <the last user message>``."""

    def __init__(self, *calls: tuple[str, dict[str, Any]]) -> None:
        self.calls = calls
        self.model = ScriptedModel([ModelStep.respond(self.respond) for _ in range(20)])

    def respond(self, call: ModelCall) -> list[Any]:
        outputs = trailing_outputs(call)
        if outputs:
            return [assistant_message(json.dumps(outputs))]
        if self.calls:
            return [
                function_call(name, args, call_id=f"c{n}")
                for n, (name, args) in enumerate(self.calls, 1)
            ]
        return [assistant_message(f"done: {user_texts(call)[-1]}")]

    @property
    def requests(self) -> tuple[ModelCall, ...]:
        return self.model.calls

    def tool_results(self) -> list[str]:
        return [out for call in self.requests for out in trailing_outputs(call)]


class Notes(BaseModel):
    path: str
    lines: int = 10


def make_agent(script: Script) -> tuple[Agent[Any], list[Any]]:
    """An agent with ``bash``, ``read_secret``, ``slow``, ``notes`` (a pydantic-model argument)
    and two failing tools; ``ran`` records what each tool body received."""
    ran: list[Any] = []

    @function_tool
    def bash(command: str) -> str:
        """Run a command."""
        ran.append(("bash", command))
        return f"ran {command}"

    @function_tool
    def read_secret() -> str:
        """Read the secret."""
        ran.append(("read_secret",))
        return "hunter2"

    @function_tool
    async def slow() -> str:
        """Take a while."""
        ran.append(("slow",))
        return "slow done"

    @function_tool
    def notes(spec: Notes) -> str:
        """Read notes."""
        ran.append(("notes", spec))
        return f"{spec.lines} lines of {spec.path}"

    @function_tool
    def flaky() -> str:
        """Fails; the SDK's default failure policy tells the model."""
        raise RuntimeError("disk full")

    @function_tool(failure_error_function=None)
    def broken() -> str:
        """Fails; the error is raised."""
        raise RuntimeError("disk on fire")

    tools: list[Any] = [bash, read_secret, slow, notes, flaky, broken]
    return Agent(name="coder", instructions="be good", model=script.model, tools=tools), ran


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


def test_guard_tools_copies_the_agent_and_its_handoffs_and_guards_only_function_tools() -> None:
    script = Script()
    agent, _ = make_agent(script)
    helper = Agent(name="helper", tools=agent.tools[:1], handoffs=[agent])
    agent.handoffs = [helper]  # a cycle
    guarded = guard_tools(agent, object())  # type: ignore[arg-type]
    assert guarded is not agent and guarded.tools != agent.tools
    assert [t.name for t in guarded.tools if isinstance(t, FunctionTool)] == [
        t.name for t in agent.tools if isinstance(t, FunctionTool)
    ]
    (copied_helper,) = guarded.handoffs
    assert isinstance(copied_helper, Agent) and copied_helper is not helper
    assert copied_helper.handoffs == [guarded]
    assert agent.tools[0].on_invoke_tool is not guarded.tools[0].on_invoke_tool  # type: ignore[union-attr]
    assert agent.handoffs == [helper]  # the original is untouched


def test_a_block_reaches_the_model_as_the_tool_result_and_the_tool_does_not_run(dirs) -> None:
    script = Script(("bash", {"command": "git push"}))
    agent, ran = make_agent(script)

    async def main() -> Any:
        async with AsyncioHookEngine.open(**opts(dirs)) as engine:
            return await Runner.run(guard_tools(agent, engine), "push it")

    result = run(main)
    assert ran == []
    assert script.tool_results() == ["blocked by pre_tool hook: no pushing"]
    assert json.loads(result.final_output) == ["blocked by pre_tool hook: no pushing"]


def test_a_rewrite_changes_the_arguments_the_tool_function_receives(dirs) -> None:
    script = Script(("bash", {"command": "pytest"}), ("notes", {"spec": {"path": "a.md"}}))
    agent, ran = make_agent(script)

    async def shorter(event: Mapping[str, Any]) -> dict[str, Any]:
        return {"updated_args": {"spec": {**event["args"]["spec"], "lines": 3}}}

    async def main() -> None:
        async with AsyncioHookEngine.open(**opts(dirs)) as engine:
            engine.add_hook("pre_tool", shorter, match="notes")
            await Runner.run(guard_tools(agent, engine), "test")

    run(main)
    # The rewritten JSON is validated by the tool's own schema: a Notes.
    assert sorted(ran, key=str) == [("bash", "pytest -q"), ("notes", Notes(path="a.md", lines=3))]
    assert sorted(script.tool_results()) == ["3 lines of a.md", "ran pytest -q"]


def test_post_tool_sees_the_real_result_and_its_patch_is_what_the_model_gets(dirs) -> None:
    ws = dirs[0]
    script = Script(("read_secret", {}), ("bash", {"command": "ls"}))
    agent, ran = make_agent(script)

    async def main() -> list[Any]:
        async with AsyncioHookEngine.open(**opts(dirs)) as engine:
            await Runner.run(guard_tools(agent, engine), "look")
            return await written(ws / "post.jsonl", lines=2)

    posts = run(main)
    assert sorted(ran) == [("bash", "ls"), ("read_secret",)]
    assert sorted(script.tool_results()) == ["[redacted]", "ran ls"]
    saw = json.loads((ws / "redact-saw.json").read_text())
    assert saw["data"]["result"] == "hunter2" and saw["data"]["tool_call_id"] == "c1"
    by_tool = {p["tool"]: p for p in posts}
    assert by_tool["bash"]["result"] == "ran ls" and by_tool["bash"]["tool_call_id"] == "c2"
    assert by_tool["read_secret"]["result"] == "hunter2"


def test_tool_errors_follow_the_sdks_failure_policy(dirs) -> None:
    ws = dirs[0]
    script = Script(("flaky", {}))
    agent, _ = make_agent(script)

    async def main() -> tuple[list[Any], Any]:
        async with AsyncioHookEngine.open(**opts(dirs)) as engine:
            guarded = guard_tools(agent, engine)
            await Runner.run(guarded, "try")  # default policy: the model is told
            posts = await written(ws / "post.jsonl")
            script.calls = (("broken", {}),)
            with pytest.raises(UserError, match="disk on fire"):
                await Runner.run(guarded, "try harder")
            (failure,) = await written(ws / "failure.json")
            return posts, failure

    (post,), failure = run(main)
    assert post["tool"] == "flaky" and "error occurred" in post["result"]
    assert (failure["tool"], failure["error"]) == ("broken", "disk on fire")


def test_both_tool_calls_of_one_model_response_are_guarded(dirs) -> None:
    script = Script(("bash", {"command": "git push --force"}), ("bash", {"command": "pytest t"}))
    agent, ran = make_agent(script)
    seen: list[tuple[str, str]] = []

    async def record(event: Mapping[str, Any]) -> None:
        seen.append((event["tool_call_id"], event["args"]["command"]))

    async def main() -> None:
        async with AsyncioHookEngine.open(**opts(dirs)) as engine:
            engine.add_hook("pre_tool", record)
            await Runner.run(guard_tools(agent, engine), "go")

    run(main)
    assert sorted(seen) == [("c1", "git push --force"), ("c2", "pytest t")]
    assert ran == [("bash", "pytest t -q")]
    assert script.tool_results() == ["blocked by pre_tool hook: no pushing", "ran pytest t -q"]


def test_cancelling_the_run_mid_hook_kills_the_hook_and_ends_the_session(dirs) -> None:
    ws = dirs[0]
    script = Script(("slow", {}))
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
                second = await session.run("and again")
            return [first, second]

    first, second = run(main)
    assert (first.output, second.output) == ("done: hello", "done: and again")
    call1, call2 = script.requests
    assert call1.system_instructions == "be good"
    assert [(item(x, "role"), item(x, "content")) for x in call1.input] == [
        ("developer", "branch: main"),
        ("user", "hello"),
    ]
    # The context stays in the conversation the second turn continues.
    assert item(call2.input[0], "content") == "branch: main"
    assert user_texts(call2) == ["hello", "and again"]
    end = written_json(ws / "end.json")
    assert (end["session_id"], end["reason"]) == ("s-1", "exit")


def test_with_an_sdk_session_the_sdk_carries_the_conversation(dirs) -> None:
    script = Script()
    agent, _ = make_agent(script)

    async def main() -> None:
        sdk_session = SQLiteSession("sdk-1")
        try:
            async with AsyncioHookEngine.open(**opts(dirs)) as engine, hooked(agent, engine) as s:
                await s.run("hello", session=sdk_session)
                await s.run("and again", session=sdk_session)
                assert s.history == []
        finally:
            sdk_session.close()

    run(main)
    _, call2 = script.requests
    assert user_texts(call2) == ["hello", "and again"]  # once each: not carried twice
    assert item(call2.input[0], "content") == "branch: main"


def test_arguments_that_are_not_a_json_object_do_not_run_the_tool(dirs) -> None:
    script = Script()
    agent, ran = make_agent(script)
    script.model = ScriptedModel(
        [
            [function_call("bash", "[1, 2]", call_id="c1")],
            ModelStep.respond(lambda call: [assistant_message(trailing_outputs(call)[0])]),
        ]
    )
    agent = agent.clone(model=script.model)

    async def main() -> Any:
        async with AsyncioHookEngine.open(**opts(dirs)) as engine:
            return await Runner.run(guard_tools(agent, engine), "go")

    result = run(main)
    assert ran == []
    assert result.final_output == "error: the tool's arguments must be a JSON object"


def test_a_blocked_prompt_never_reaches_the_model(dirs) -> None:
    script = Script()
    agent, _ = make_agent(script)

    async def main() -> Any:
        async with AsyncioHookEngine.open(**opts(dirs)) as engine, hooked(agent, engine) as session:
            return await session.run("my secret is hunter2")

    turn = run(main)
    assert turn.blocked and turn.results == [] and turn.output is None
    assert turn.message == "no secrets in prompts"
    assert script.requests == ()


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
    assert user_texts(script.requests[-1]) == [
        "fix the tests",
        "tests still red",
        "tests still red",
    ]
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
    code, guarding = doc_example("openai_agents")
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
