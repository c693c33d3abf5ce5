"""A scripted agent session, no network: "set up a hook to prevent calls to git".

The model is a script: it reads the bundled skill from its context, calls ``validate_hook`` and
``upsert_hook`` (workspace scope), then tries ``git status > marker`` through the bash tool. The
agent loop is the one an embedding agent would write: every bash call goes through ``pre_tool``
first and really runs (``bash -c`` in the workspace) only when not blocked. The hook blocks it,
the marker is never created, and the turn goes on to its next step.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from triohooks.engine.hook_engine import HookEngine
from triohooks.fronts.selfconfig import TOOL_DEFINITIONS, HooksTools, skill_text

pytestmark = pytest.mark.slow

BASH_TOOL = {
    "name": "bash",
    "description": "Run a bash command in the workspace.",
    "input_schema": {
        "type": "object",
        "required": ["command"],
        "properties": {"command": {"type": "string"}},
    },
}


class ToolCall(msgspec.Struct, frozen=True):
    id: str
    name: str
    arguments: dict[str, Any]


class Message(msgspec.Struct, frozen=True, kw_only=True):
    role: str  # system / user / assistant / tool
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    result: dict[str, Any] | None = None


Step = Callable[[list[Message]], Message]


class ScriptedModel:
    """Answers each request with the next scripted step; a step checks what it was shown."""

    def __init__(self, steps: list[Step]) -> None:
        self.steps = list(steps)
        self.seen_tools: list[str] = []

    def respond(self, transcript: list[Message], tools: list[dict[str, Any]]) -> Message:
        self.seen_tools = [t["name"] for t in tools]
        assert self.steps, "the model was asked for more than its script holds"
        return self.steps.pop(0)(transcript)


class Agent:
    def __init__(self, engine: HookEngine, model: ScriptedModel, workspace: Path) -> None:
        self.engine = engine
        self.model = model
        self.workspace = workspace
        self.hooks = HooksTools.for_engine(engine)
        self.tools = [msgspec.to_builtins(d) for d in TOOL_DEFINITIONS] + [BASH_TOOL]
        self.transcript = [Message(role="system", text=skill_text())]

    async def turn(self, prompt: str) -> None:
        submitted = await self.engine.prompt_submit(prompt, session_id="s1")
        assert not submitted.blocked
        self.transcript.append(Message(role="user", text=prompt))
        for _ in range(10):
            reply = self.model.respond(self.transcript, self.tools)
            self.transcript.append(reply)
            if not reply.tool_calls:
                return
            for call in reply.tool_calls:
                result = await self.run_tool(call)
                self.transcript.append(Message(role="tool", tool_call_id=call.id, result=result))
        raise AssertionError("the turn did not end")

    async def run_tool(self, call: ToolCall) -> dict[str, Any]:
        if call.name != "bash":
            return await self.hooks.call(call.name, call.arguments)
        pre = await self.engine.pre_tool("bash", call.arguments, call.id, session_id="s1")
        if pre.blocked:
            return {"error": pre.message_for_model, "user_message": pre.user_message}
        args = pre.args or call.arguments
        done = await trio.run_process(
            ["bash", "-c", args["command"]],
            cwd=self.workspace,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
        result = {"exit_code": done.returncode, "stdout": done.stdout.decode()}
        await self.engine.post_tool("bash", args, result=result, tool_call_id=call.id)
        return result


def last_result(transcript: list[Message]) -> dict[str, Any]:
    assert transcript[-1].role == "tool" and transcript[-1].result is not None
    return transcript[-1].result


def recipe_from_skill(transcript: list[Message], title: str) -> dict[str, Any]:
    """What a model does with the skill: find the recipe for the intent and copy its spec."""
    skill = transcript[0].text
    section = skill.split(f"### {title}\n", 1)[1]
    match = re.search(r"```json\n(.*?)\n```", section, re.S)
    assert match is not None
    spec: dict[str, Any] = json.loads(match.group(1))
    return spec


def call(name: str, n: int, **arguments: Any) -> Message:
    return Message(role="assistant", tool_calls=(ToolCall(f"call-{n}", name, arguments),))


def script_with_hook() -> list[Step]:
    def validate(t: list[Message]) -> Message:
        assert t[-1].role == "user" and "prevent calls to git" in t[-1].text
        return call("validate_hook", 1, hook=recipe_from_skill(t, "Block git"))

    def upsert(t: list[Message]) -> Message:
        assert last_result(t)["valid"] is True
        return call("upsert_hook", 2, scope="workspace", hook=recipe_from_skill(t, "Block git"))

    def try_git(t: list[Message]) -> Message:
        written = last_result(t)
        assert written["active"] is True and written["id"] == "block-git", written
        return call("bash", 3, command="git status > marker")

    return [validate, upsert, try_git, *script_after_git()]


def script_after_git() -> list[Step]:
    def go_on(t: list[Message]) -> Message:
        result = last_result(t)  # blocked or not, the model carries on with the turn
        assert "error" in result or "exit_code" in result
        return call("bash", 4, command="echo still-going > after")

    def finish(t: list[Message]) -> Message:
        assert last_result(t)["exit_code"] == 0
        return Message(role="assistant", text="Done: git is blocked by hook block-git.")

    return [go_on, finish]


async def test_set_up_a_hook_to_prevent_calls_to_git(tmp_path: Path) -> None:
    ws, g = tmp_path / "ws", tmp_path / "g"
    ws.mkdir()
    g.mkdir()
    model = ScriptedModel(script_with_hook())
    with trio.fail_after(20):
        async with HookEngine.open(workspace=ws, config_dir=g, state_dir=tmp_path / "s") as e:
            agent = Agent(e, model, ws)
            await agent.turn("set up a hook to prevent calls to git")
            stop = await e.stop(session_id="s1")
    assert model.steps == [] and not stop.blocked
    assert {"list_hooks", "validate_hook", "upsert_hook", "remove_hook", "bash"} == set(
        model.seen_tools
    )
    results = {m.tool_call_id: m.result for m in agent.transcript if m.role == "tool"}
    assert results["call-3"] == {
        "error": "blocked by pre_tool hook: git command blocked by hook",
        "user_message": "Blocked by your yolop hook: git commands are disabled.",
    }
    assert not (ws / "marker").exists()
    assert (ws / "after").read_text() == "still-going\n"  # the turn went on
    assert agent.transcript[-1].text.startswith("Done")
    hooks = json.loads((ws / ".agents/hooks.json").read_text())["hooks"]
    assert [h["id"] for h in hooks] == ["block-git"]


async def test_without_the_hook_the_same_call_does_run(tmp_path: Path) -> None:
    """The control: the scripted bash call really runs when nothing blocks it."""
    ws, g = tmp_path / "ws", tmp_path / "g"
    ws.mkdir()
    g.mkdir()

    def try_git(t: list[Message]) -> Message:
        return call("bash", 3, command="git status > marker")

    model = ScriptedModel([try_git, *script_after_git()])
    with trio.fail_after(20):
        async with HookEngine.open(workspace=ws, config_dir=g, state_dir=tmp_path / "s") as e:
            await Agent(e, model, ws).turn("what is the git status?")
    assert (ws / "marker").exists() and (ws / "after").exists()
