"""The canonical tools: every agent's tool names under one vocabulary (docs/agents.md, "One
name for each tool").

Each agent names its tools its own way -- the shell is Claude Code's and Codex's ``Bash``,
Codex's ``exec_command``, Gemini CLI's and Qwen Code's ``run_shell_command``, Copilot CLI's
``bash``, Cursor's ``Shell``, Antigravity CLI's ``run_command`` -- and a guard written once must
see them all. :data:`TOOLS` is the one table of them: each row a canonical name (``bash``,
``read``, ``write``, ``edit``, ``patch``, ``fetch`` ...), the ``if``-rule kinds a call of it is
(``shell``, ``read``, ``write``, ``delete``, ``web``, ``skill``, ``agent``), each agent's own
names for it, and the names other tool sets (an app that embeds triohooks, an SDK) commonly give
it. An MCP tool's canonical name is ``mcp__<server>__<tool>`` whichever agent spelt it
(:func:`mcp_name`).

What this module owns: the table, a tool name's canonical name (:func:`canonical_tool`), its
kinds (:func:`tool_kinds`), and which names are known at all (:func:`known_names`, for
``validate``). It must not read a call's arguments (:mod:`.ifrules` does, with these kinds) nor
decide what a hook's ``match`` means (:mod:`.matchers`). Imports nothing of triohooks.

Names compare lowercased with ``-`` read as ``_`` (``Bash`` and ``bash`` are one row);
:func:`tool_kinds` also looks at a namespaced name's last segment (``mcp__fs__read_file`` is a
read), :func:`canonical_tool` only at the whole name (``mcp__fs__read_file`` stays itself). A
tool in no row has no canonical name and no kinds: the readers treat it in doubt.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from typing import Final

import msgspec

#: The agents whose tool names the table holds (triohooks' agent dialects).
AGENTS: Final = ("claude", "codex", "gemini", "qwen", "copilot", "cursor", "agy")


class Tool(msgspec.Struct, frozen=True):
    """One row of the table: a canonical tool and every name it goes by."""

    canonical: str
    #: The ``if``-rule kinds a call of it is (a move is a write and a delete).
    kinds: frozenset[str]
    #: Each agent's own names for it (docs/agents.md says which are measured).
    agents: Mapping[str, tuple[str, ...]]
    #: Names other tool sets give it (SDKs, apps embedding triohooks, older agent releases).
    other: tuple[str, ...] = ()
    #: Argument keys holding the directory the call runs in (a shell tool's ``workdir``).
    cwd_keys: tuple[str, ...] = ()

    def names(self) -> Iterator[str]:
        for names in self.agents.values():
            yield from names
        yield from self.other


def _row(
    canonical: str,
    kinds: str,
    *,
    other: tuple[str, ...] = (),
    cwd_keys: tuple[str, ...] = (),
    **agents: tuple[str, ...],
) -> Tool:
    return Tool(canonical, frozenset(kinds.split()), agents, other, cwd_keys)


TOOLS: Final = (
    _row(
        "bash",
        "shell",
        claude=("Bash",),
        # Codex's hooks see its shell as Bash (measured, 0.169.1); its tools themselves are
        # exec_command {cmd, workdir} and, in other releases, shell / local_shell / shell_command.
        codex=("Bash", "exec_command", "shell", "local_shell", "shell_command"),
        gemini=("run_shell_command",),
        qwen=("run_shell_command",),
        copilot=("bash", "powershell"),
        cursor=("Shell",),
        # Antigravity CLI (reported; docs/agents.md): run_command {CommandLine, Cwd}.
        agy=("run_command",),
        other=(
            "sh",
            "zsh",
            "exec",
            "execute_command",
            "run_command",
            "terminal",
            "run_terminal_cmd",
            "run_in_terminal",
            "bash_tool",
        ),
        # Codex workdir, Gemini CLI 0.61 dir_path, Qwen Code (and older Gemini) directory.
        cwd_keys=("workdir", "dir_path", "directory", "cwd"),
    ),
    _row(
        "read",
        "read",
        claude=("Read", "NotebookRead"),
        codex=("view_image",),
        gemini=("read_file", "read_many_files"),
        qwen=("read_file", "read_many_files"),
        copilot=("view",),
        cursor=("Read",),
        agy=("view_file", "view_file_outline", "view_code_item"),
        other=(
            "readfile",
            "view_file",
            "cat",
            "open",
            "open_file",
            "get_file_contents",
            "notebook_read",
        ),
    ),
    _row(
        "write",
        "write",
        claude=("Write",),
        gemini=("write_file",),
        qwen=("write_file",),
        copilot=("create",),
        agy=("write_to_file",),
        other=("writefile", "create_file", "insert", "append", "append_file"),
    ),
    _row(
        "edit",
        "write",
        claude=("Edit", "MultiEdit", "NotebookEdit"),
        gemini=("replace",),
        qwen=("edit", "notebook_edit"),
        copilot=("edit",),
        cursor=("Edit",),
        agy=("replace_file_content", "multi_replace_file_content", "edit_file"),
        other=("edit_file", "multi_edit", "str_replace", "replace_in_file"),
    ),
    # Editors that also view (their ``command`` may be ``view``): a read and a write.
    _row(
        "edit",
        "read write",
        copilot=("str_replace_editor",),
        other=("str_replace_based_edit_tool", "text_editor"),
    ),
    _row(
        "patch",
        "write delete",
        codex=("apply_patch",),
        copilot=("apply_patch",),
        other=("patch", "apply_diff"),
    ),
    _row("move", "write delete", other=("move", "move_file", "rename", "rename_file")),
    _row("copy", "write", other=("copy", "copy_file")),
    _row("mkdir", "write", other=("mkdir", "create_directory")),
    _row(
        "delete",
        "delete",
        other=(
            "delete",
            "delete_file",
            "delete_path",
            "remove",
            "remove_file",
            "rm",
            "unlink",
            "trash",
        ),
    ),
    _row(
        "grep",
        "read",
        claude=("Grep",),
        gemini=("grep_search", "search_file_content"),
        qwen=("grep_search",),
        copilot=("grep", "rg"),
        agy=("grep_search", "codebase_search"),
        other=("search_files",),
    ),
    _row(
        "glob",
        "read",
        claude=("Glob",),
        gemini=("glob",),
        qwen=("glob",),
        copilot=("glob",),
        agy=("find_by_name",),
        other=("find_files", "file_search"),
    ),
    _row(
        "ls",
        "read",
        claude=("LS",),
        gemini=("list_directory",),
        qwen=("list_directory",),
        agy=("list_dir",),
        other=("list_dir", "list_files"),
    ),
    _row(
        "fetch",
        "web",
        claude=("WebFetch",),
        gemini=("web_fetch",),
        qwen=("web_fetch",),
        copilot=("web_fetch",),
        agy=("read_url_content",),
        other=(
            "web",
            "fetch",
            "fetch_url",
            "http",
            "http_request",
            "http_get",
            "browse",
            "browser",
            "open_url",
            "navigate",
        ),
    ),
    _row(
        "web_search",
        "web",
        claude=("WebSearch",),
        gemini=("google_web_search",),
        qwen=("web_search",),
        agy=("search_web",),
        other=("websearch",),
    ),
    _row(
        "agent",
        "agent",
        claude=("Task", "Agent"),
        codex=("spawn_agent",),
        gemini=("invoke_agent",),
        qwen=("agent",),
        copilot=("task",),
        agy=("invoke_subagent",),
        other=("subagent", "run_agent", "launch_agent", "dispatch_agent", "delegate", "new_task"),
    ),
    _row(
        "skill",
        "skill",
        claude=("Skill",),
        gemini=("activate_skill",),
        qwen=("skill",),
        other=("load_skill", "use_skill", "run_skill", "invoke_skill"),
    ),
)

#: The canonical names, in table order (``mcp__<server>__<tool>`` besides).
CANONICAL: Final = tuple(dict.fromkeys(t.canonical for t in TOOLS))


def normal(name: str) -> str:
    """How tool names compare here: lowercased, ``-`` as ``_``."""
    return name.lower().replace("-", "_")


def _by_name() -> dict[str, Tool]:
    table: dict[str, Tool] = {}
    firsts = {t.canonical: t for t in reversed(TOOLS)}  # a canonical name is its first row's
    for row in TOOLS:
        own = (row.canonical,) if firsts[row.canonical] is row else ()
        for name in (*own, *row.names()):
            key = normal(name)
            other = table.setdefault(key, row)
            if other is not row:  # one name, two rows: the table would not say what it is
                raise AssertionError(f"tool name {name!r} is in two rows of TOOLS")
    return table


_BY_NAME: Final = _by_name()

_NAMESPACE_SPLIT: Final = re.compile(r"\.|__|:|/")
#: Gemini CLI (0.61, measured in its source): ``mcp_<server>_<tool>``, the server name up to
#: the first ``_`` (as Gemini CLI itself reads it back).
_GEMINI_MCP: Final = re.compile(r"mcp_([^_]+)_(.+)", re.DOTALL)


@functools.lru_cache(maxsize=512)
def tool_names(tool: str) -> tuple[str, ...]:
    """The tool's name as compared (:func:`normal`), and its last namespace segment
    (``mcp__fs__read_file`` -> ``read_file``; Gemini CLI's ``mcp_fs_read_file`` too)."""
    name = normal(tool)
    mcp = mcp_name(tool)
    last = _NAMESPACE_SPLIT.split(normal(mcp) if mcp is not None else name)[-1]
    return (name, last) if last and last != name else (name,)


def row_of(tool: str) -> Tool | None:
    """The row naming ``tool`` itself (not a namespace segment of it), or None."""
    return _BY_NAME.get(normal(tool))


def mcp_name(tool: str) -> str | None:
    """``mcp__<server>__<tool>`` for an MCP tool as Claude Code, Codex and Qwen Code name it
    (the same) or as Gemini CLI does (``mcp_<server>_<tool>``); None for any other name."""
    if tool.startswith("mcp__"):
        server, sep, name = tool[5:].partition("__")
        return tool if sep and server and name else None
    m = _GEMINI_MCP.fullmatch(tool)
    return f"mcp__{m.group(1)}__{m.group(2)}" if m else None


@functools.lru_cache(maxsize=512)
def canonical_tool(tool: str) -> str | None:
    """The canonical name of ``tool`` (``run_shell_command`` -> ``bash``, ``mcp_gh_list`` ->
    ``mcp__gh__list``), or None for a tool the table does not know."""
    row = row_of(tool)
    if row is not None:
        return row.canonical
    return mcp_name(tool)


@functools.lru_cache(maxsize=512)
def tool_kinds(tool: str) -> frozenset[str]:
    """The ``if``-rule kinds a tool is known as, by its name or its last namespace segment;
    empty for a tool the table does not know."""
    kinds: frozenset[str] = frozenset()
    for name in tool_names(tool):
        row = _BY_NAME.get(name)
        if row is not None:
            kinds |= row.kinds
    return kinds


def names_of_kind(kind: str) -> frozenset[str]:
    """Every name (compared form) whose row is of ``kind``: the kind's tool set."""
    return frozenset(name for name, row in _BY_NAME.items() if kind in row.kinds)


def names_of_canonical(*canonical: str) -> frozenset[str]:
    """Every name (compared form) of the rows with one of these canonical names."""
    return frozenset(name for name, row in _BY_NAME.items() if row.canonical in canonical)


def cwd_keys(tool: str) -> tuple[str, ...]:
    """The argument keys that hold the directory a call of ``tool`` runs in."""
    row = row_of(tool)
    return row.cwd_keys if row is not None else ()


@functools.cache
def known_names() -> tuple[str, ...]:
    """Every tool name a hook's ``match`` may mean, as written: the canonical names and each
    agent's and the other tool sets' own (for ``validate``'s "names no known tool")."""
    out: dict[str, None] = dict.fromkeys(CANONICAL)
    for row in TOOLS:
        out.update(dict.fromkeys(row.names()))
    return tuple(out)


def is_mcp_pattern(literal: str) -> bool:
    """Whether a name pattern whose fixed start is ``literal`` could name an MCP tool (an
    open set: no table can say which servers exist)."""
    return literal.startswith("mcp_") or (bool(literal) and "mcp_".startswith(literal))
