"""One name for each tool: every agent's tool call is also seen under the canonical vocabulary
(``bash``, ``read``, ``write``, ``edit``, ``patch``, ``fetch``, ``mcp__<server>__<tool>``), so
the docs' own examples -- ``match = "bash"``, ``if`` rules, JSON matchers and every built-in
guard's table of calls in docs/builtin-guards.md -- hold for each agent's tool shapes, through
``engine.agent_hook`` with the real engine (real bash hooks, in-process guards).

The shapes are the agents' hook inputs: Claude Code's, Gemini CLI's, Qwen Code's and Copilot
CLI's tools, Codex's as its hooks see them (``Bash {command}``, ``apply_patch {command:
<patch>}``, a shell ``apply_patch`` here-document: measured with Codex 0.169.1,
tests/interop/test_codex_canonical.py) and as its tools are (``exec_command {cmd, workdir}``),
Cursor's per-kind events."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import trio

from tests.helpers import triohooks_cli, write_json_hooks, write_toml_hooks
from triohooks import HookEngine
from triohooks.agents.spec import SPECS
from triohooks.config.selection import passes
from triohooks.match import ifrules
from triohooks.match.tools import TOOLS, canonical_tool, names_of_kind, tool_kinds

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent

#: Each agent's pre-tool event.
PRE = {
    "claude": "PreToolUse",
    "codex": "PreToolUse",
    "gemini": "BeforeTool",
    "qwen": "PreToolUse",
    "copilot": "preToolUse",
    "cursor": "beforeShellExecution",
}


class Place(NamedTuple):
    """Where a test call is made: the project, another directory, the home directory."""

    ws: Path
    elsewhere: Path
    home: Path


class Shape(NamedTuple):
    """One way an agent asks about a call: its label and the hook input it sends."""

    agent: str
    label: str
    body: Callable[[str, Place], dict[str, Any]]


def _tool(agent: str, tool: str, args: dict[str, Any], cwd: Path) -> dict[str, Any]:
    base = {"session_id": "s1", "cwd": str(cwd), "hook_event_name": PRE[agent]}
    if agent == "copilot":  # camelCase, toolArgs a JSON string
        return {**base, "toolName": tool, "toolArgs": json.dumps(args)}
    return {**base, "tool_name": tool, "tool_input": args}


def _copilot_text(tool: str, text: str, cwd: Path) -> dict[str, Any]:
    """Copilot CLI's call of a freeform tool: ``toolArgs`` is its text (measured, 1.0.102)."""
    base = {"session_id": "s1", "cwd": str(cwd), "hook_event_name": PRE["copilot"]}
    return {**base, "toolName": tool, "toolArgs": text}


def _cursor(event: str, cwd: Path, **fields: Any) -> dict[str, Any]:
    return {"conversation_id": "c1", "hook_event_name": event, "cwd": str(cwd), **fields}


def _patch(op: str, path: str) -> str:
    body = "+x\n" if op == "Add" else "@@\n-a\n+b\n"
    return f"*** Begin Patch\n*** {op} File: {path}\n{body}*** End Patch\n"


#: Each agent's shell call of a command. The ``workdir`` / ``dir_path`` / ``directory`` shapes
#: are made from a directory elsewhere: the call's own working directory must be what counts.
SHELL_SHAPES = [
    Shape("claude", "Bash", lambda c, p: _tool("claude", "Bash", {"command": c}, p.ws)),
    Shape("codex", "Bash", lambda c, p: _tool("codex", "Bash", {"command": c}, p.ws)),
    Shape(
        "codex",
        "exec_command+workdir",
        lambda c, p: _tool("codex", "exec_command", {"cmd": c, "workdir": str(p.ws)}, p.elsewhere),
    ),
    Shape(
        "gemini",
        "run_shell_command",
        lambda c, p: _tool("gemini", "run_shell_command", {"command": c}, p.ws),
    ),
    Shape(
        "gemini",
        "run_shell_command+dir_path",
        lambda c, p: _tool(
            "gemini", "run_shell_command", {"command": c, "dir_path": str(p.ws)}, p.elsewhere
        ),
    ),
    Shape(
        "qwen",
        "run_shell_command+directory",
        lambda c, p: _tool(
            "qwen", "run_shell_command", {"command": c, "directory": str(p.ws)}, p.elsewhere
        ),
    ),
    Shape("copilot", "bash", lambda c, p: _tool("copilot", "bash", {"command": c}, p.ws)),
    Shape(
        "cursor",
        "beforeShellExecution",
        lambda c, p: _cursor("beforeShellExecution", p.ws, command=c),
    ),
]

#: Each agent's tool reading a file (Codex reads through its shell).
READ_SHAPES = [
    Shape("claude", "Read", lambda f, p: _tool("claude", "Read", {"file_path": f}, p.ws)),
    Shape("gemini", "read_file", lambda f, p: _tool("gemini", "read_file", {"file_path": f}, p.ws)),
    Shape(
        "gemini",
        "read_file {absolute_path}",
        lambda f, p: _tool("gemini", "read_file", {"absolute_path": f}, p.ws),
    ),
    Shape(
        "gemini",
        "read_many_files {include}",
        lambda f, p: _tool("gemini", "read_many_files", {"include": [f]}, p.ws),
    ),
    Shape("qwen", "read_file", lambda f, p: _tool("qwen", "read_file", {"file_path": f}, p.ws)),
    Shape("copilot", "view", lambda f, p: _tool("copilot", "view", {"path": f}, p.ws)),
    Shape("cursor", "beforeReadFile", lambda f, p: _cursor("beforeReadFile", p.ws, file_path=f)),
]

#: Each agent's tool writing a new file (Cursor asks no hook before a write).
WRITE_SHAPES = [
    Shape(
        "claude",
        "Write",
        lambda f, p: _tool("claude", "Write", {"file_path": f, "content": ""}, p.ws),
    ),
    Shape(
        "gemini",
        "write_file",
        lambda f, p: _tool("gemini", "write_file", {"file_path": f, "content": ""}, p.ws),
    ),
    Shape(
        "qwen",
        "write_file",
        lambda f, p: _tool("qwen", "write_file", {"file_path": f, "content": ""}, p.ws),
    ),
    Shape(
        "copilot",
        "create",
        lambda f, p: _tool("copilot", "create", {"path": f, "file_text": ""}, p.ws),
    ),
    Shape(
        "codex",
        "apply_patch {command}",
        lambda f, p: _tool("codex", "apply_patch", {"command": _patch("Add", f)}, p.ws),
    ),
    Shape(
        "copilot",
        "apply_patch (its text)",
        lambda f, p: _copilot_text("apply_patch", _patch("Add", f), p.ws),
    ),
    Shape(
        "codex",
        "Bash apply_patch heredoc",
        lambda f, p: _tool(
            "codex", "Bash", {"command": f"apply_patch <<'EOF'\n{_patch('Add', f)}EOF\n"}, p.ws
        ),
    ),
]

#: Each agent's tool editing a file.
EDIT_SHAPES = [
    Shape(
        "claude",
        "Edit",
        lambda f, p: _tool(
            "claude", "Edit", {"file_path": f, "old_string": "a", "new_string": "b"}, p.ws
        ),
    ),
    Shape(
        "claude",
        "MultiEdit",
        lambda f, p: _tool("claude", "MultiEdit", {"file_path": f, "edits": []}, p.ws),
    ),
    Shape(
        "gemini",
        "replace",
        lambda f, p: _tool(
            "gemini", "replace", {"file_path": f, "old_string": "a", "new_string": "b"}, p.ws
        ),
    ),
    Shape(
        "qwen",
        "edit",
        lambda f, p: _tool(
            "qwen", "edit", {"file_path": f, "old_string": "a", "new_string": "b"}, p.ws
        ),
    ),
    Shape(
        "copilot",
        "edit",
        lambda f, p: _tool("copilot", "edit", {"path": f, "old_str": "a", "new_str": "b"}, p.ws),
    ),
    Shape(
        "copilot",
        "apply_patch {input}",
        lambda f, p: _tool("copilot", "apply_patch", {"input": _patch("Update", f)}, p.ws),
    ),
    Shape(
        "codex",
        "apply_patch {command}",
        lambda f, p: _tool("codex", "apply_patch", {"command": _patch("Update", f)}, p.ws),
    ),
]

#: Each agent's MCP tool ``read_file`` of a server ``fs``, as the agent names it.
MCP_SHAPES = [
    Shape(
        "claude",
        "mcp__fs__read_file",
        lambda f, p: _tool("claude", "mcp__fs__read_file", {"path": f}, p.ws),
    ),
    Shape(
        "codex",
        "mcp__fs__read_file",
        lambda f, p: _tool("codex", "mcp__fs__read_file", {"path": f}, p.ws),
    ),
    Shape(
        "qwen",
        "mcp__fs__read_file",
        lambda f, p: _tool("qwen", "mcp__fs__read_file", {"path": f}, p.ws),
    ),
    Shape(
        "gemini",
        "mcp_fs_read_file",
        lambda f, p: _tool("gemini", "mcp_fs_read_file", {"path": f}, p.ws),
    ),
    Shape(
        "copilot", "fs-read_file", lambda f, p: _tool("copilot", "fs-read_file", {"path": f}, p.ws)
    ),
    Shape(
        "cursor",
        "beforeMCPExecution",
        lambda f, p: _cursor(
            "beforeMCPExecution",
            p.ws,
            tool_name="read_file",
            tool_input=json.dumps({"path": f}),
            command="fs-server",
        ),
    ),
]

#: Each agent's search tool (its name, and its keys for a directory and a file glob).
_SEARCHES = (
    ("claude", "Grep", "path", "glob"),
    ("gemini", "grep_search", "dir_path", "include"),
    ("qwen", "grep_search", "path", "glob"),
    ("copilot", "grep", "path", "glob"),
)


def _search(agent: str, tool: str, key: str) -> Shape:
    return Shape(
        agent,
        f"{tool} {{{key}}}",
        lambda f, p: _tool(agent, tool, {"pattern": "KEY", key: f}, p.ws),
    )


#: Each agent's search over a directory, and limited to files by a glob.
GREP_PATH_SHAPES = [_search(agent, tool, path) for agent, tool, path, _ in _SEARCHES]
GREP_GLOB_SHAPES = [_search(agent, tool, glob) for agent, tool, _, glob in _SEARCHES]

FILE_SHAPES = {
    "Read": READ_SHAPES,
    "Write": WRITE_SHAPES,
    "Edit": EDIT_SHAPES,
    "MultiEdit": EDIT_SHAPES,
    "apply_patch": EDIT_SHAPES,
}


# --- the table itself ---------------------------------------------------------------------------


def test_each_agent_shell_is_bash_and_unknown_tools_are_nothing() -> None:
    for shell in ("Bash", "exec_command", "run_shell_command", "bash", "Shell", "shell"):
        assert canonical_tool(shell) == "bash", shell
    assert canonical_tool("read_many_files") == "read"
    assert canonical_tool("view") == "read"  # Copilot CLI
    assert canonical_tool("replace") == "edit"  # Gemini CLI
    assert canonical_tool("apply_patch") == "patch"
    assert canonical_tool("web_fetch") == "fetch"
    assert canonical_tool("my_own_tool") is None
    assert tool_kinds("my_own_tool") == frozenset()


def test_mcp_names_are_one_spelling() -> None:
    assert canonical_tool("mcp__github__list_issues") == "mcp__github__list_issues"
    assert canonical_tool("mcp_github_list_issues") == "mcp__github__list_issues"  # Gemini CLI
    assert canonical_tool("mcp_") is None and canonical_tool("mcp__x") is None
    # a namespaced MCP tool is also a read by its last part, whoever spelt it
    assert tool_kinds("mcp_fs_read_file") == tool_kinds("mcp__fs__read_file") == {"read"}


def test_the_kinds_sets_are_the_table() -> None:
    """One list of names: the if-rule kinds' sets are read off the table."""
    assert names_of_kind("shell") == ifrules.SHELL_TOOLS
    assert names_of_kind("write") == ifrules.WRITE_TOOLS
    every = {n.lower().replace("-", "_") for row in TOOLS for n in row.names()}
    assert every <= ifrules.SHELL_TOOLS | ifrules._FILE_TOOLS | ifrules.WEB_TOOLS | (
        ifrules.SKILL_TOOLS | ifrules.AGENT_TOOLS
    )


def test_docs_agents_md_lists_each_agents_names() -> None:
    """docs/agents.md's table of canonical names holds every agent's names of the table."""
    text = (ROOT / "docs/agents.md").read_text()
    section = text.split("## One name for each tool", 1)[1].split("\n## ", 1)[0]
    for row in TOOLS:
        for agent, names in row.agents.items():
            for name in names:
                assert f"`{name}`" in section, (row.canonical, agent, name)


# --- docs/builtin-guards.md's tables, for every agent's tool shapes ------------------------------


@pytest.fixture
def place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Place]:
    """A project on branch ``main`` outside ``/tmp`` (writes_outside_workspace lets ``/tmp``
    through by default, and the docs' rows count on it), its ``keys`` a link to ``~/.ssh``, a
    directory in it, another repository on ``main`` beside it, a home."""
    # Under /var/tmp, as the guard tables' layout: not the checkout, which may itself be in /tmp.
    root = Path(tempfile.mkdtemp(prefix="canonical-", dir="/var/tmp")).resolve()
    assert not root.is_relative_to("/tmp")
    try:
        # Codex names no project in its environment: it is found from the call's cwd, up to
        # the .codex directory; "elsewhere" is a subdirectory (where `rm -rf .` is harmless).
        # "other" (../other from the project) is another repository on main.
        ws, home, other = root / "proj", root / "home", root / "other"
        elsewhere = ws / "sub"
        for d in (ws, elsewhere, ws / ".codex", home, other):
            d.mkdir()
        (home / ".ssh").mkdir()
        (ws / "keys").symlink_to(home / ".ssh")  # the docs' "a link to ~/.ssh"
        for repo in (ws, other):
            subprocess.run(
                ["git", "init", "-q", "-b", "main", str(repo)],
                check=True,
                timeout=30,
                capture_output=True,
            )
        monkeypatch.setenv("HOME", str(home))
        yield Place(ws, elsewhere, home)
    finally:
        shutil.rmtree(root, ignore_errors=True)


class Row(NamedTuple):
    guard: str
    item: str
    verdict: str  # "block", "uncertain", "go on"


#: Rows of the docs' tables that describe a setting rather than name a call.
PROSE = {"Write through a link that points out"}

_SECTION = re.compile(r"^## `(\w+)`\n(.*?)(?=^## |\Z)", re.MULTILINE | re.DOTALL)
_ROW = re.compile(r"^\| (.+?) \| (block|uncertain|go on) \|$", re.MULTILINE)


def _items(cell: str) -> list[str]:
    """The comma-separated items of a table cell (commas inside code spans stay)."""
    items, current, code = [], "", False
    for ch in cell.replace("\\|", "|"):
        if ch == "`":
            code = not code
        if ch == "," and not code:
            items.append(current.strip())
            current = ""
        else:
            current += ch
    return [*items, current.strip()]


def doc_rows() -> list[Row]:
    text = (ROOT / "docs/builtin-guards.md").read_text()
    rows = [
        Row(guard, item, verdict)
        for guard, body in _SECTION.findall(text)
        for cell, verdict in _ROW.findall(body)
        for item in _items(cell)
    ]
    assert len(rows) > 60, "the docs' tables were not found"
    return rows


class Call(NamedTuple):
    shapes: list[Shape]
    value: str


def call_of(item: str) -> Call | None:
    """The call a table item names, for each agent; None for prose (:data:`PROSE`)."""
    item = re.sub(r"\s*\([^`]*\)$", "", item)  # "`rm -rf .` (the workspace)"
    if m := re.fullmatch(r"(Read|Write|Edit|MultiEdit) `([^`]+)`", item):
        return Call(FILE_SHAPES[m.group(1)], m.group(2))
    if m := re.fullmatch(r"Grep over `([^`]+)`", item):
        return Call(GREP_PATH_SHAPES, m.group(1))
    if m := re.fullmatch(r"Grep with glob `([^`]+)`", item):
        return Call(GREP_GLOB_SHAPES, m.group(1))
    if m := re.fullmatch(r"`apply_patch` on `([^`]+)`", item):
        return Call(FILE_SHAPES["apply_patch"], m.group(1))
    if m := re.fullmatch(r"`mcp__fs__read_file` `([^`]+)`", item):
        return Call(MCP_SHAPES, m.group(1))
    if m := re.fullmatch(r"`([^`]+)` on `main`", item):  # the project is on main
        return Call(SHELL_SHAPES, m.group(1))
    if m := re.fullmatch(r"`([^`]+)`", item):
        # The docs write a backslash-newline inside a word as ``\<newline>``.
        return Call(SHELL_SHAPES, m.group(1).replace("\\<newline>", "\\\n"))
    assert item in PROSE, f"docs/builtin-guards.md: cannot read the table item {item!r}"
    return None


def guard_config(guard: str) -> str:
    # Uncertain calls block, saying so: the three verdicts are then told apart by the answer.
    return f'[[hooks.pre_tool]]\nbuiltin = "{guard}"\non_uncertain = "block"\n'


def verdict_of(guard: str, result: Any) -> str:
    answer = result.answer
    if not answer.blocked:
        return "go on"
    reason = answer.reason or ""
    if reason.startswith(f"{guard} cannot read this call for sure"):
        return "uncertain"
    assert reason.startswith(f"{guard} guard: "), reason
    return "block"


def agent_env(agent: str, ws: Path) -> dict[str, str]:
    """The agent session's environment: its project variable names the project (Codex has
    none: its project is found from the call's ``cwd``, up to its ``.codex`` directory)."""
    spec = next(s for name, s in SPECS.items() if name == agent)
    return {**os.environ, **{name: str(ws) for name in spec.project_env[:1]}}


async def ask(
    place: Place, config_dir: Path, requests: list[tuple[str, dict[str, Any]]]
) -> list[Any]:
    with trio.fail_after(60):
        async with HookEngine.open(
            workspace=place.ws,
            config_dir=config_dir,
            state_dir=config_dir.parent / "state",
            audit=False,
        ) as engine:
            return [
                await engine.agent_hook(
                    agent, json.dumps(body).encode(), env=agent_env(agent, place.ws)
                )
                for agent, body in requests
            ]


GUARDS = ("destructive_delete", "protected_push", "secret_reads", "pipe_to_shell")


@pytest.mark.parametrize("guard", [*GUARDS, "writes_outside_workspace"])
async def test_every_docs_row_holds_for_every_agents_tool_shape(
    guard: str, place: Place, tmp_path: Path
) -> None:
    rows = [r for r in doc_rows() if r.guard == guard]
    cases: list[tuple[Row, Shape, dict[str, Any]]] = []
    for row in rows:
        call = call_of(row.item)
        if call is not None:
            cases += [(row, s, s.body(call.value, place)) for s in call.shapes]
    assert len(cases) >= 2 * len(rows)  # every row for several agents' shapes
    config = tmp_path / "cfg"
    write_toml_hooks(config, guard_config(guard))
    results = await ask(place, config, [(shape.agent, body) for _, shape, body in cases])
    wrong = [
        (row.item, f"{shape.agent} {shape.label}", row.verdict, verdict_of(guard, result))
        for (row, shape, _), result in zip(cases, results, strict=True)
        if verdict_of(guard, result) != row.verdict
    ]
    assert wrong == [], "\n".join(map(str, wrong))
    agents = {shape.agent for _, shape, _ in cases}
    assert agents == set(PRE), agents


async def test_the_answer_is_in_each_agents_format(place: Place, tmp_path: Path) -> None:
    """A guard's block reaches each agent as that agent's deny, its reason included."""
    write_toml_hooks(tmp_path / "cfg", guard_config("destructive_delete"))
    requests = [(s.agent, s.body("rm -rf ~", place)) for s in SHELL_SHAPES]
    results = await ask(place, tmp_path / "cfg", requests)
    for (agent, _), result in zip(requests, results, strict=True):
        out = result.answer.output
        said = json.dumps(out)
        assert "destructive_delete guard" in said, (agent, out)
        if agent == "gemini":
            assert out["decision"] == "deny"
        elif agent == "copilot":
            assert out["permissionDecision"] == "deny"
        elif agent == "cursor":
            assert out["permission"] == "deny"
        else:
            assert out["hookSpecificOutput"]["permissionDecision"] == "deny"


# --- Codex's apply_patch, end to end --------------------------------------------------------------

CRON = "*** Begin Patch\n*** Add File: /etc/cron.d/x\n+* * * * * root sh /tmp/p\n*** End Patch\n"


async def test_a_codex_patch_to_etc_cron_is_blocked_by_the_init_policy(
    place: Place, tmp_path: Path
) -> None:
    """``triohooks init``'s policy, a patch as Codex sends it (``apply_patch {command}``, or
    its shell's ``apply_patch`` here-document, which Codex applies itself)."""
    from triohooks.fronts.init_cli import STARTER

    write_toml_hooks(tmp_path / "cfg", STARTER)
    requests = [
        ("codex", _tool("codex", "apply_patch", {"command": CRON}, place.ws)),
        (
            "codex",
            _tool("codex", "Bash", {"command": f"apply_patch <<'EOF'\n{CRON}EOF\n"}, place.ws),
        ),
        (
            "codex",
            _tool(
                "codex",
                "Bash",
                {"command": f"cd /etc && apply_patch <<'PATCH'\n{CRON.replace('/etc/', '')}PATCH"},
                place.ws,
            ),
        ),
        (
            "codex",
            _tool("codex", "apply_patch", {"command": _patch("Add", "src/new.py")}, place.ws),
        ),
    ]
    cron, heredoc, cd_heredoc, inside = await ask(place, tmp_path / "cfg", requests)
    for result in (cron, heredoc, cd_heredoc):
        out = result.answer.output["hookSpecificOutput"]
        assert out["permissionDecision"] == "deny"
        assert "writes_outside_workspace guard" in out["permissionDecisionReason"]
        assert "/etc/cron.d/x" in out["permissionDecisionReason"]
    assert not inside.answer.blocked


@pytest.mark.parametrize(
    ("args", "reading"),
    [
        ({"command": "*** Begin Patch\n*** End Patch\n"}, "names no file"),
        ({"command": 42}, "not a string"),
        ({}, "no patch"),
    ],
)
def test_a_patch_that_cannot_be_read_is_uncertain(args: dict[str, Any], reading: str) -> None:
    assert ifrules.call_paths("apply_patch", args) is None, reading
    rule = ifrules.parse_if_rule("write(docs/**)")
    assert ifrules.rule_applies(rule, tool="apply_patch", args=args, workspace="/w")


def test_patch_paths_are_every_file_a_patch_touches() -> None:
    patch = (
        "*** Begin Patch\n*** Update File: a.py\n*** Move to: b.py\n@@\n--- not a header\n+x\n"
        "*** Delete File: c.py\n*** End Patch\n"
    )
    assert ifrules.patch_paths(patch) == ["a.py", "b.py", "c.py"]
    diff = "--- a/x.py\t2024-01-01\n+++ b/y.py\n@@ -1 +1 @@\n-a\n+b\n"
    assert ifrules.patch_paths(diff) == ["x.py", "y.py"]
    assert ifrules.patch_paths("no patch here") is None


def test_a_shell_apply_patch_is_a_write_where_it_applies() -> None:
    kinds = ifrules.call_kinds("Bash", {"command": f"apply_patch <<'EOF'\n{CRON}EOF"})
    assert {"shell", "write", "delete"} <= kinds
    assert ifrules.call_kinds("Bash", {"command": "ls"}) == {"shell"}
    argv = {"command": ["apply_patch", CRON]}
    assert ifrules.call_paths("Bash", argv) == ["/etc/cron.d/x"]
    cd = {"command": "cd sub && apply_patch <<'EOF'\n" + _patch("Add", "x.py") + "EOF\n"}
    assert ifrules.call_paths("Bash", cd) == ["sub/x.py"]
    # where it applies, or the patch itself, known only at run time: cannot be read
    assert ifrules.call_paths("Bash", {"command": 'cd "$D" && apply_patch "$P"'}) is None
    assert ifrules.call_paths("Bash", {"command": "apply_patch < p.diff"}) is None


# --- a tool's own working directory ---------------------------------------------------------------


def test_the_calls_working_directory_is_one_reading() -> None:
    cwd = ifrules.call_cwd
    assert cwd("exec_command", {"cmd": "ls", "workdir": "/w/sub"}, "/elsewhere", "/w") == "/w/sub"
    assert cwd("run_shell_command", {"command": "ls", "dir_path": "sub"}, "/w", "/w") == "/w/sub"
    assert cwd("Bash", {"command": "ls"}, "/w/a", "/w") == "/w/a"
    assert cwd("Bash", {"command": "ls"}, "", "/w") == "/w"
    assert cwd("Write", {"file_path": "x", "cwd": "/etc"}, "/w", "/w") == "/w"  # no shell
    # a working directory that is not a string: the call cannot be read
    scripts = ifrules.call_scripts("exec_command", {"cmd": "ls", "workdir": ["/"]})
    assert scripts.unreadable and "workdir" in scripts.why


async def test_an_if_rule_reads_paths_from_the_calls_own_directory(
    place: Place, tmp_path: Path
) -> None:
    (place.ws / "secrets").mkdir()
    write_toml_hooks(
        tmp_path / "cfg",
        '[[hooks.pre_tool]]\nif = "read(secrets/**)"\ncommand = "echo no >&2; exit 2"\n',
    )
    rule = ifrules.parse_if_rule("read(secrets/**)")
    inside = {"file_path": "key.txt"}
    assert ifrules.rule_applies(
        rule, tool="Read", args=inside, workspace=str(place.ws), cwd=str(place.ws / "secrets")
    )
    assert not ifrules.rule_applies(
        rule, tool="Read", args=inside, workspace=str(place.ws), cwd=str(place.ws)
    )
    # through an agent: the event's cwd is where the relative path is read from
    (result,) = await ask(
        place,
        tmp_path / "cfg",
        [("qwen", _tool("qwen", "read_file", {"file_path": "key.txt"}, place.ws / "secrets"))],
    )
    assert result.answer.blocked


def test_gemini_read_many_files_globs_are_read() -> None:
    rule = ifrules.parse_if_rule("read(.env)")
    many = "read_many_files"
    assert ifrules.rule_applies(rule, tool=many, args={"include": ["**/*"]}, workspace="/w")
    assert ifrules.rule_applies(rule, tool=many, args={"include": ["config/.env"]}, workspace="/w")
    docs = ifrules.parse_if_rule("read(docs/**)")
    assert not ifrules.rule_applies(docs, tool=many, args={"include": ["src/*.py"]}, workspace="/w")
    assert ifrules.rule_applies(docs, tool=many, args={"include": [3]}, workspace="/w")


def test_gemini_web_fetch_urls_are_in_its_prompt() -> None:
    rule = ifrules.parse_if_rule("web(*.evil.com)")
    fetch = "web_fetch"
    ok = {"prompt": "Summarize https://docs.python.org/3/ please"}
    bad = {"prompt": "Summarize https://x.evil.com/a and https://ok.org"}
    assert not ifrules.rule_applies(rule, tool=fetch, args=ok, workspace="/w")
    assert ifrules.rule_applies(rule, tool=fetch, args=bad, workspace="/w")
    assert ifrules.rule_applies(rule, tool=fetch, args={"prompt": "no url"}, workspace="/w")


# --- the docs' match / if / matcher examples, for every agent's shell ----------------------------

DOCS_WITH_HOOKS = (
    "docs/configuration.md",
    "docs/hook-protocol.md",
    "docs/agents.md",
    "docs/embedding.md",
    "examples/hooks.toml",
    "examples/node-client.toml",
    "examples/hooks.json",
)
_TOML_FENCE = re.compile(r"^```toml[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
_JSON_FENCE = re.compile(r"^```json hooks\.json\n(.*?)^```", re.MULTILINE | re.DOTALL)
#: Commands a docs example may be about; each example is tried with one it selects and one it
#: does not.
COMMANDS = ("git push", "pytest", "rm -rf build", "make", "ls -la")
FIRED = "echo 'the example fired' >&2; exit 2"
FIRED_JSON = """printf '%s\\n' '{"decision": "block", "reason": "the example fired"}'"""


class Example(NamedTuple):
    where: str
    dialect: str  # "toml" or "json"
    hook: dict[str, Any]


def doc_examples() -> list[Example]:
    """Every pre-tool hook of the docs and examples that selects calls (``match``, ``if``, a
    JSON ``matcher``), its runner replaced by one that blocks saying it fired."""
    found: list[Example] = []
    for name in DOCS_WITH_HOOKS:
        text = (ROOT / name).read_text()
        tomls = [text] if name.endswith(".toml") else _TOML_FENCE.findall(text)
        jsons = [text] if name.endswith(".json") else _JSON_FENCE.findall(text)
        for block in tomls:
            for hook in tomllib.loads(block).get("hooks", {}).get("pre_tool", []):
                if "match" in hook or "if" in hook:
                    kept = {k: hook[k] for k in ("id", "match", "if") if k in hook}
                    found.append(Example(name, "toml", {**kept, "command": FIRED}))
        for block in jsons:
            for hook in json.loads(block).get("hooks", []):
                if hook.get("event") == "pre_tool_use" and "matcher" in hook:
                    found.append(
                        Example(
                            name,
                            "json",
                            {
                                "id": hook.get("id", "x"),
                                "event": "pre_tool_use",
                                "matcher": hook["matcher"],
                                "executor": {"type": "bash", "command": FIRED_JSON},
                            },
                        )
                    )
    return found


def write_example(example: Example, config: Path) -> Any:
    """Write the example as the config in ``config``; returns its hook as loaded."""
    from triohooks.config.table import load_table

    if example.dialect == "toml":
        lines = [f"{k} = {json.dumps(v)}" for k, v in example.hook.items()]
        write_toml_hooks(config, "[[hooks.pre_tool]]\n" + "\n".join(lines) + "\n")
    else:
        write_json_hooks(config, [example.hook])
    table = load_table(workspace=None, config_dir=config)
    assert not table.problems, table.problems
    (hook,) = table.hooks
    return hook


def test_the_docs_have_selecting_examples() -> None:
    examples = doc_examples()
    assert len(examples) >= 8, examples
    assert {e.dialect for e in examples} == {"toml", "json"}


@pytest.mark.parametrize("example", doc_examples(), ids=lambda e: f"{e.where}:{e.hook.get('id')}")
async def test_each_docs_example_fires_for_every_agents_shell(
    example: Example, place: Place, tmp_path: Path
) -> None:
    config = tmp_path / "cfg"
    hook = write_example(example, config)
    chosen = [c for c in COMMANDS if passes(hook, "bash", {"command": c}, str(place.ws))]
    others = [c for c in COMMANDS if c not in chosen]
    assert chosen, f"{example.where}: the example selects none of {COMMANDS}"
    # A JSON path reads the arguments as sent: Codex's hooks send its shell as Bash {command}
    # (measured); its tool's own {cmd} is no "$.command".
    shapes = [
        s
        for s in SHELL_SHAPES
        if not (example.dialect == "json" and "args_jsonpath" in example.hook["matcher"])
        or s.label != "exec_command+workdir"
    ]
    requests = [(s.agent, s.body(chosen[0], place)) for s in shapes]
    requests += [(s.agent, s.body(others[0], place)) for s in shapes] if others else []
    requests += [(s.agent, s.body("README.md", place)) for s in READ_SHAPES]
    results = await ask(place, config, requests)
    fired = [r.answer.blocked and "the example fired" in (r.answer.reason or "") for r in results]
    n = len(shapes)
    assert fired[:n] == [True] * n, [s.label for s, f in zip(shapes, fired, strict=False) if not f]
    if others:
        assert fired[n : 2 * n] == [False] * n
    # a read is no bash call: a `match = "bash"` example does not fire for it
    if example.hook.get("match") == "bash" or example.hook.get("matcher", {}).get("tool_name"):
        assert not any(fired[-len(READ_SHAPES) :])


# --- validate and doctor: a match that names no tool ---------------------------------------------

NAMES_TOML = """
[[hooks.pre_tool]]
match = "bsh"
command = "exit 2"

[[hooks.pre_tool]]
match = "BASH"
command = "exit 2"

[[hooks.pre_tool]]
match = "bash"
command = "true"

[[hooks.pre_tool]]
match = "run_shell_command"
command = "true"

[[hooks.pre_tool]]
match = "mcp__github__*"
command = "true"

[[hooks.pre_tool]]
match = "*_file"
command = "true"

[[hooks.prompt_submit]]
match = "ignored_here"
command = "true"
"""


def test_validate_and_doctor_warn_on_a_match_that_names_no_tool(tmp_path: Path) -> None:
    config = tmp_path / "cfg"
    write_toml_hooks(config, NAMES_TOML)
    write_json_hooks(
        config,
        [
            {
                "event": "pre_tool_use",
                "matcher": {"tool_name_glob": "bash|Wrte|mcp_*|view*"},
                "executor": {"type": "bash", "command": "true"},
            },
            {
                "event": "pre_tool_use",
                "matcher": {"tool_name": "read_fiel"},
                "executor": {"type": "bash", "command": "true"},
            },
        ],
    )
    done = triohooks_cli("validate", cwd=config, config_dir=config)
    assert done.returncode == 1
    said = [line for line in done.stderr.splitlines() if "names no tool" in line]
    assert len(said) == 4, done.stderr
    bsh, upper, wrte, fiel = said
    assert "pre_tool[0].match: 'bsh'" in bsh and "did you mean 'bash'?" in bsh
    assert "pre_tool[1].match: 'BASH'" in upper and "did you mean 'bash'?" in upper
    assert "matcher.tool_name_glob: 'Wrte'" in wrte and "did you mean 'Write'?" in wrte
    assert "matcher.tool_name: 'read_fiel'" in fiel and "did you mean 'read_file'?" in fiel
    assert all(line.endswith("(warning)") for line in said)
    assert "9 hook(s) run" in done.stdout  # the hooks still load
    doctor = triohooks_cli("doctor", cwd=config, config_dir=config)
    assert doctor.returncode == 1
    assert sum("names no tool" in line for line in doctor.stdout.splitlines()) == 4, doctor.stdout


def test_validate_is_quiet_about_known_names(tmp_path: Path) -> None:
    config = tmp_path / "cfg"
    write_toml_hooks(config, (ROOT / "examples/hooks.toml").read_text())
    done = triohooks_cli("validate", cwd=config, config_dir=config)
    assert "names no tool" not in done.stderr, done.stderr
