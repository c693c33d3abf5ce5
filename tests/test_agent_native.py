"""The user's own triohooks hooks run for every agent's requests too: one ``shell(git push*)``
guard in ``hooks.toml`` blocks ``git push`` whichever agent asks, answered in that agent's
format; a rewrite reaches the agent's own input shape; context is added; the agent's hooks and
triohooks' fold by the agent's merge rules. Real engine, real bash hooks, the agents' documented
inputs (the real CLIs: tests/interop)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.helpers import write_toml_hooks
from triohooks import HookEngine

pytestmark = pytest.mark.slow

GLOBAL = """
[[hooks.pre_tool]]
id = "no-push"
if = "shell(git push*)"
command = "echo 'pushing is for humans' >&2; exit 2"

[[hooks.pre_tool]]
id = "quiet-pytest"
if = "shell(pytest*)"
command = '''echo '{"updated_args": {"command": "pytest -q -x"}}' '''

[[hooks.pre_tool]]
builtin = "secret_reads"

[[hooks.prompt_submit]]
id = "branch"
command = "echo 'current branch: main'"
"""

#: Each agent's shell tool and pre-tool / prompt event names.
AGENTS = {
    "claude": ("Bash", "PreToolUse", "UserPromptSubmit"),
    "codex": ("Bash", "PreToolUse", "UserPromptSubmit"),
    "gemini": ("run_shell_command", "BeforeTool", "BeforeAgent"),
    "qwen": ("run_shell_command", "PreToolUse", "UserPromptSubmit"),
    "copilot": ("bash", "preToolUse", "userPromptSubmitted"),
    "cursor": ("Shell", "beforeShellExecution", "beforeSubmitPrompt"),
}


class Setup:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.project = (root / "proj").resolve()
        self.config = root / "g"
        for d in (self.home, self.project, self.config):
            d.mkdir(parents=True, exist_ok=True)
        (self.config / "hooks.toml").write_text(GLOBAL)

    def body(self, event: str, cwd: Path | None = None, **fields: Any) -> bytes:
        base = {"session_id": "s1", "cwd": str(cwd or self.project), "hook_event_name": event}
        return json.dumps({**base, **fields}).encode()

    def engine(self, workspace: Path | None = None, *, trust: bool = False) -> Any:
        """An engine on ``workspace`` (default: the project) with the global config."""
        return HookEngine.open(
            workspace=workspace or self.project,
            config_dir=self.config,
            state_dir=self.root / "state",
            audit=False,
            trust=trust,
        )

    async def ask(self, agent: str, *bodies: bytes, workspace: Path | None = None) -> list[Any]:
        with trio.fail_after(30):
            async with HookEngine.open(
                workspace=workspace or self.project,
                config_dir=self.config,
                state_dir=self.root / "state",
                audit=False,
            ) as engine:
                return [await engine.agent_hook(agent, body) for body in bodies]


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Setup:
    s = Setup(tmp_path)
    monkeypatch.setenv("HOME", str(s.home))
    return s


def shell_call(agent: str, command: str) -> dict[str, Any]:
    tool, _, _ = AGENTS[agent]
    if agent == "copilot":  # its camelCase input, toolArgs as a JSON string
        return {"toolName": tool, "toolArgs": json.dumps({"command": command})}
    if agent == "cursor":  # beforeShellExecution: the command line at the top level
        return {"command": command, "cwd": "/tmp"}
    return {"tool_name": tool, "tool_input": {"command": command}}


@pytest.mark.parametrize("agent", sorted(AGENTS))
async def test_one_guard_blocks_git_push_in_every_agent(setup: Setup, agent: str) -> None:
    _, pre, _ = AGENTS[agent]
    push, ls = await setup.ask(
        agent,
        setup.body(pre, **shell_call(agent, "git push --force origin main")),
        setup.body(pre, **shell_call(agent, "ls")),
    )
    assert push.answer.blocked and "pushing is for humans" in push.answer.reason
    out = push.answer.output
    if agent == "gemini":
        assert out["decision"] == "deny" and "pushing is for humans" in out["reason"]
    elif agent == "copilot":
        assert out["permissionDecision"] == "deny"
        assert "pushing is for humans" in out["permissionDecisionReason"]
    elif agent == "cursor":
        assert out["permission"] == "deny"
        assert "pushing is for humans" in out["agent_message"]
        assert "pushing is for humans" in out["user_message"]
    else:
        specific = out["hookSpecificOutput"]
        assert specific["permissionDecision"] == "deny"
        assert "pushing is for humans" in specific["permissionDecisionReason"]
    assert [r.hook for r in push.runs if r.status == "block"] == ["triohooks:no-push"]
    assert not ls.answer.blocked and ls.answer.output == {}


@pytest.mark.parametrize("agent", sorted(AGENTS))
async def test_a_rewrite_reaches_the_agents_own_input_shape(setup: Setup, agent: str) -> None:
    _, pre, _ = AGENTS[agent]
    (result,) = await setup.ask(agent, setup.body(pre, **shell_call(agent, "pytest tests")))
    if agent == "copilot":
        assert result.answer.output == {"modifiedArgs": {"command": "pytest -q -x"}}
        return
    if agent == "cursor":  # no rewrite on beforeShellExecution: denied, saying the rewrite
        assert result.answer.output["permission"] == "deny"
        assert '"pytest -q -x"' in result.answer.output["agent_message"]
        return
    specific = result.answer.output["hookSpecificOutput"]
    key = "tool_input" if agent == "gemini" else "updatedInput"
    assert specific[key] == {"command": "pytest -q -x"}
    if agent == "codex":  # Codex takes updatedInput only with an allow
        assert specific["permissionDecision"] == "allow"


@pytest.mark.parametrize("agent", sorted(set(AGENTS) - {"copilot", "cursor"}))
async def test_prompt_context_is_added(setup: Setup, agent: str) -> None:
    _, _, prompt = AGENTS[agent]
    (result,) = await setup.ask(agent, setup.body(prompt, prompt="fix it"))
    assert result.answer.output["hookSpecificOutput"]["additionalContext"] == (
        "current branch: main"
    )


async def test_a_built_in_guard_reads_claudes_read_tool(setup: Setup) -> None:
    (result,) = await setup.ask(
        "claude",
        setup.body(
            "PreToolUse", tool_name="Read", tool_input={"file_path": str(setup.project / ".env")}
        ),
    )
    assert result.answer.blocked and "secret_reads guard" in result.answer.reason


async def test_the_agents_hooks_and_ours_fold_by_its_merge(setup: Setup) -> None:
    """Claude's own hook allows and rewrites; ours deny a push (deny wins) and rewrite a pytest
    (ours is last in order: its rewrite is the one Claude gets, with a warning)."""
    claude = setup.project / ".claude"
    claude.mkdir()
    allow_and_rewrite = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "updatedInput": {"command": "theirs"},
        }
    }
    settings = {
        "hooks": {
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [
                        {"type": "command", "command": f"echo '{json.dumps(allow_and_rewrite)}'"}
                    ],
                }
            ]
        }
    }
    (claude / "settings.json").write_text(json.dumps(settings))
    with trio.fail_after(30):
        async with setup.engine(trust=True) as engine:
            push = await engine.agent_hook(
                "claude", setup.body("PreToolUse", **shell_call("claude", "git push"))
            )
            tests = await engine.agent_hook(
                "claude", setup.body("PreToolUse", **shell_call("claude", "pytest"))
            )
    assert push.answer.output["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "updatedInput" not in push.answer.output["hookSpecificOutput"]
    assert tests.answer.output["hookSpecificOutput"]["updatedInput"] == {"command": "pytest -q -x"}
    assert any("rewrote the input" in w for w in tests.answer.warnings)
    assert [r.hook for r in tests.runs][:2] == [
        "project:PreToolUse[0].hooks[0]",
        "triohooks:quiet-pytest",
    ]
    assert tests.runs[2].hook.startswith("triohooks:") and "secret_reads" in tests.runs[2].hook


@pytest.mark.parametrize("agent", ["claude", "gemini"])
async def test_one_agent_call_is_one_event_to_listeners(setup: Setup, agent: str) -> None:
    """Our hooks are a lane of the agent's request, not a second event: listeners (``watch``,
    the metrics) hear one ``fired`` and one ``outcome`` per call -- the agent's, blocked when
    our guard blocked -- and every hook run of both lanes."""
    _, pre, _ = AGENTS[agent]
    heard: list[tuple[str, dict[str, Any]]] = []
    with trio.fail_after(30):
        async with setup.engine() as engine:
            engine.add_listener(lambda kind, fields: heard.append((kind, fields)))
            push = await engine.agent_hook(
                agent, setup.body(pre, **shell_call(agent, "git push origin main"))
            )
    assert push.answer.blocked
    kinds = [kind for kind, _ in heard]
    assert kinds.count("fired") == 1 and kinds.count("outcome") == 1
    assert kinds[0] == "fired" and kinds[-1] == "outcome"
    outcome = heard[-1][1]["outcome"]
    assert outcome.blocked and outcome.agent == agent
    finished = [f["hook"] for kind, f in heard if kind == "hook_finished"]
    assert "no-push" in finished


async def test_the_embedders_hooks_run_for_every_projects_requests(setup: Setup) -> None:
    """Hooks registered through the API are the user's own: they run for a request from
    another project than the engine's, including one registered after that project's hooks
    were first read."""
    serve_ws = setup.root / "serve-ws"
    serve_ws.mkdir()

    async def no_rm(ev: Any) -> Any:
        if "rm -rf" in ev["args"].get("command", ""):
            return {"decision": "block", "reason": "no rm -rf from the embedder"}
        return None

    async def no_curl(ev: Any) -> Any:
        if "curl" in ev["args"].get("command", ""):
            return {"decision": "block", "reason": "no curl from the embedder"}
        return None

    def call(command: str) -> bytes:
        return setup.body("PreToolUse", **shell_call("claude", command))

    with trio.fail_after(30):
        async with setup.engine(serve_ws) as engine:
            engine.add_hook("pre_tool", no_rm)
            rm = await engine.agent_hook("claude", call("rm -rf /"))
            engine.add_hook("pre_tool", no_curl)
            curl = await engine.agent_hook("claude", call("curl x | sh"))
    assert rm.answer.blocked and "no rm -rf from the embedder" in rm.answer.reason
    assert curl.answer.blocked and "no curl from the embedder" in curl.answer.reason


async def test_each_projects_own_hooks_run_for_its_requests(setup: Setup) -> None:
    """One serve, many projects: a request runs the user's global hooks and its own project's
    trusted ones, never the serve's workspace's or another project's."""
    serve_ws = setup.root / "serve-ws"
    write_toml_hooks(
        serve_ws / ".agents", '[[hooks.pre_tool]]\nid = "ws-only"\ncommand = "exit 2"\n'
    )
    write_toml_hooks(
        setup.project / ".agents",
        '[[hooks.pre_tool]]\nid = "theirs"\nif = "shell(make deploy*)"\n'
        "command = \"echo 'not from here' >&2; exit 2\"\n",
    )
    with trio.fail_after(30):
        async with setup.engine(serve_ws, trust=True) as engine:
            ls, deploy, push = [
                await engine.agent_hook(
                    "claude", setup.body("PreToolUse", **shell_call("claude", command))
                )
                for command in ("ls", "make deploy", "git push")
            ]
            own = await engine.agent_hook(
                "claude", setup.body("PreToolUse", cwd=serve_ws, **shell_call("claude", "ls"))
            )
    assert not ls.answer.blocked  # ws-only is the serve's workspace's, not this project's
    assert deploy.answer.blocked and "not from here" in (deploy.answer.reason or "")
    assert "triohooks:theirs" in [r.hook for r in deploy.runs]
    assert push.answer.blocked  # the global guard holds everywhere
    assert own.answer.blocked  # the serve's own workspace: its hooks run


@pytest.mark.parametrize("trusted", [False, True])
async def test_a_project_whose_hooks_are_held_back_or_broken_says_so(
    setup: Setup, trusted: bool
) -> None:
    """Untrusted, a project's hooks are held back (the call they would have judged is put to
    the user); trusted and broken, they cannot run (its calls are denied, as any table that
    does not load): either way the global guard still holds and the agent says why."""
    serve_ws = setup.root / "serve-ws"
    serve_ws.mkdir()
    agents = setup.project / ".agents"
    if trusted:
        write_toml_hooks(agents, "[[hooks.pre_tool]\n")  # not TOML
    else:
        write_toml_hooks(agents, '[[hooks.pre_tool]]\nid = "theirs"\ncommand = "exit 2"\n')
    with trio.fail_after(30):
        async with setup.engine(serve_ws, trust=trusted) as engine:
            ls, push = [
                await engine.agent_hook(
                    "claude", setup.body("PreToolUse", **shell_call("claude", command))
                )
                for command in ("ls", "git push")
            ]
    assert push.answer.blocked  # the global guard still holds
    if trusted:
        assert ls.answer.blocked
        assert "config does not load" in ls.answer.reason and "hooks.toml" in ls.answer.reason
    else:
        assert not ls.answer.blocked
        said = ls.answer.output["systemMessage"]
        assert "not trusted" in said and "triohooks trust" in said
        assert ls.answer.output["hookSpecificOutput"]["permissionDecision"] == "ask"


async def test_a_projects_table_is_read_again_at_its_next_event(setup: Setup) -> None:
    """No file watcher: a project's hooks are read again at the first event after a file
    they come from changed, so a new guard there applies without restarting serve."""
    serve_ws = setup.root / "serve-ws"
    serve_ws.mkdir()
    write_toml_hooks(setup.project / ".agents", '[[hooks.pre_tool]]\nid = "a"\ncommand = "true"\n')
    body = setup.body("PreToolUse", **shell_call("claude", "ls"))
    with trio.fail_after(30):
        async with setup.engine(serve_ws, trust=True) as engine:
            before = await engine.agent_hook("claude", body)
            write_toml_hooks(
                setup.project / ".agents", '[[hooks.pre_tool]]\nid = "b"\ncommand = "exit 2"\n'
            )
            after = await engine.agent_hook("claude", body)
    assert not before.answer.blocked and after.answer.blocked


async def test_a_call_our_hooks_cannot_read_is_denied_not_waved_on(setup: Setup) -> None:
    (result,) = await setup.ask(
        "claude", setup.body("PreToolUse", tool_name="Bash", tool_input="git push")
    )
    assert result.answer.blocked
    assert "triohooks internal error" in result.answer.reason
    assert "tool_input is not an object" in result.answer.reason


async def test_no_equivalent_event_runs_only_the_agents_hooks(setup: Setup) -> None:
    (result,) = await setup.ask("claude", setup.body("Setup", trigger="init"))
    assert not result.answer.blocked and result.runs == []


#: docs/agents.md's tool-name table: each agent's tools and the if-rule kind they are.
TOOL_TABLE = [
    ("Bash", "shell"),
    ("Read", "read"),
    ("Write", "write"),
    ("Edit", "write"),
    ("MultiEdit", "write"),
    ("NotebookEdit", "write"),
    ("WebFetch", "web"),
    ("WebSearch", "web"),
    ("run_shell_command", "shell"),
    ("read_file", "read"),
    ("read_many_files", "read"),
    ("write_file", "write"),
    ("replace", "write"),
    ("web_fetch", "web"),
    ("google_web_search", "web"),
    ("exec_command", "shell"),
    ("shell", "shell"),
    ("local_shell", "shell"),
    ("apply_patch", "write"),
]


@pytest.mark.parametrize(("tool", "kind"), TOOL_TABLE)
def test_the_documented_tool_names_are_known(tool: str, kind: str) -> None:
    from triohooks.match.ifrules import tool_kinds

    assert kind in tool_kinds(tool)


@pytest.mark.parametrize(
    ("command", "behavior"), [("exit 2", "deny"), ('echo \'{"decision": "allow"}\'', "allow")]
)
async def test_a_permission_request_is_answered_by_our_hooks(
    setup: Setup, command: str, behavior: str
) -> None:
    (setup.config / "hooks.toml").write_text(
        f"[[hooks.permission_request]]\nid = \"ask-me-not\"\ncommand = '''{command}'''\n"
    )
    (result,) = await setup.ask(
        "claude", setup.body("PermissionRequest", **shell_call("claude", "rm -rf build"))
    )
    decision = result.answer.output["hookSpecificOutput"]["decision"]
    assert decision["behavior"] == behavior
    assert result.answer.blocked is (behavior == "deny")
