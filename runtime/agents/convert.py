"""``triohooks convert --from AGENT --to AGENT|triohooks``: one agent's hooks in another's format.

The hooks are read as triohooks reads them for that agent (:func:`.config.parse_hooks`: events,
matchers, handler fields, timeouts in seconds) and written in the target's format: its event
names (through the triohooks event both are), its tool names in tool matchers (``Bash`` is
Gemini's ``run_shell_command``), its timeout unit, its handler fields. Whatever the target cannot
express is said in the report, one line per hook and field, never dropped silently: an event it
has no equivalent for, a handler type it does not run, an ``if`` rule, ``async``, Gemini's
``env`` and ``sequential``, a regex matcher whose tool names cannot be translated. The hooks'
programs are copied as written: they read the source agent's input and answer in its format,
which the report says once (docs/agents.md has each agent's contract).

To ``triohooks`` the result is a ``hooks.toml`` in the TOML dialect (``[[hooks.<event>]]``):
tool names become ``match`` globs (one hook per name: a glob names one tool), Claude's ``if``
rules become triohooks ``if`` rules, and the programs get triohooks' own event JSON.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal

from triohooks.config.model import ConfigProblem

from .agy import hook_events
from .config import (
    MATCHER_FIELD,
    AgentHook,
    codex_toml_hooks,
    is_ours,
    parse_hooks,
    translate_if,
)
from .spec import AGENTS, SPECS, AgentName, Level, timeout_value

Target = Literal["claude", "gemini", "codex", "qwen", "copilot", "cursor", "agy", "triohooks"]
TARGETS: Final = (*AGENTS, "triohooks")

#: Each agent's name for the same tool (by role): what a tool matcher's names become.
TOOL_NAMES: Final[dict[str, dict[str, str]]] = {
    "shell": {
        "claude": "Bash",
        "gemini": "run_shell_command",
        "codex": "Bash",
        "qwen": "run_shell_command",
        "copilot": "bash",
        "cursor": "Shell",
        "agy": "run_command",
    },
    "read": {
        "claude": "Read",
        "gemini": "read_file",
        "qwen": "read_file",
        "copilot": "view",
        "cursor": "Read",
        "agy": "view_file",
    },
    "write": {
        "claude": "Write",
        "gemini": "write_file",
        "codex": "apply_patch",
        "qwen": "write_file",
        "copilot": "create",
        "cursor": "Edit",
        "agy": "write_to_file",
    },
    "edit": {
        "claude": "Edit",
        "gemini": "replace",
        "codex": "apply_patch",
        "qwen": "edit",
        "copilot": "edit",
        "cursor": "Edit",
        "agy": "replace_file_content",
    },
    "glob": {
        "claude": "Glob",
        "gemini": "glob",
        "qwen": "glob",
        "copilot": "glob",
        "agy": "find_by_name",
    },
    "grep": {
        "claude": "Grep",
        "gemini": "search_file_content",
        "qwen": "grep_search",
        "copilot": "grep",
        "agy": "grep_search",
    },
    "ls": {"claude": "LS", "gemini": "list_directory", "qwen": "list_directory", "agy": "list_dir"},
    "web_fetch": {
        "claude": "WebFetch",
        "gemini": "web_fetch",
        "qwen": "web_fetch",
        "copilot": "web_fetch",
        "agy": "read_url_content",
    },
    "web_search": {
        "claude": "WebSearch",
        "gemini": "google_web_search",
        "qwen": "web_search",
        "agy": "search_web",
    },
}


#: A regex that is only tool names: ``a|b``, ``^(a|b)$`` (Gemini's matchers are regexes).
_PLAIN_ALTERNATION: Final = re.compile(r"(\^?)\(?([A-Za-z0-9_]+(?:\|[A-Za-z0-9_]+)*)\)?(\$?)")


class ConvertError(ValueError):
    """The source cannot be read as the agent's hooks."""


def _role(agent: AgentName, name: str) -> str | None:
    return next((role for role, names in TOOL_NAMES.items() if names.get(agent) == name), None)


def _tool_name(source: AgentName, target: Target, name: str) -> str | None:
    """``name`` (a ``source`` tool) as ``target`` names it; None when it has no counterpart."""
    if target == "triohooks":
        return name  # triohooks' match and if rules know every agent's tool names
    role = _role(source, name)
    if role is None:
        return name if name.startswith("mcp__") else None
    return TOOL_NAMES[role].get(target)


def hooks_of(doc: Mapping[str, Any], agent: AgentName) -> object:
    """The hooks object of a settings document (Codex's hooks.json may be the object itself;
    Antigravity CLI's file holds named hook sets, read as one)."""
    if agent == "agy":
        return hook_events(doc)
    if "hooks" in doc:
        return doc["hooks"]
    return doc if agent == "codex" else None


def read_source(agent: AgentName, path: Path) -> tuple[object, str]:
    """The hooks ``path`` holds for ``agent``, and where they came from. An installed settings
    file's hooks are triohooks' catch-alls: the agent's own hooks are in the
    ``triohooks-hooks.json`` beside it, which is read instead."""
    from .spec import ADOPTED_NAME, adopted_path

    if agent == "codex" and path.suffix == ".toml":  # hooks written in Codex's config.toml
        problems: list[ConfigProblem] = []
        found = codex_toml_hooks(path, problems)
        if found is None:
            why = f": {problems[0].message}" if problems else ": it has no [hooks]"
            raise ConvertError(f"{path}: no hooks to convert{why}")
        return found[1], found[0]
    adopted = adopted_path(agent, path)
    if path.name != ADOPTED_NAME and adopted.is_file():
        path = adopted
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConvertError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConvertError(f"{path}: cannot read it as JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise ConvertError(f"{path}: must be a JSON object")
    hooks = doc if path.name == ADOPTED_NAME else hooks_of(doc, agent)
    if hooks is None:
        raise ConvertError(f"{path}: has no hooks")
    return hooks, str(path)


def convert(source: AgentName, target: Target, hooks: object, where: str) -> tuple[str, list[str]]:
    """The hooks in ``target``'s format (JSON text for an agent, TOML for triohooks) and the
    report: one line for each thing the target cannot express."""
    problems: list[ConfigProblem] = []
    parsed = parse_hooks(source, Level("convert", Path(where), False), where, hooks, problems)
    report = [f"{p}" for p in problems]
    kept = [h for h in parsed if not is_ours(h)]
    if kept:
        report.append(
            f"the hooks' programs are copied as written: they read {source}'s hook input and "
            f"answer in its format; check each against {target}'s (docs/agents.md)"
            if target != "triohooks"
            else f"the hooks' programs are copied as written: they read {source}'s hook input; "
            "in triohooks' TOML dialect they get triohooks' event JSON and answer by exit code "
            "or its JSON (docs/hook-protocol.md)"
        )
    if target == "triohooks":
        return _to_toml(source, kept, report), report
    return _to_agent(source, target, kept, report), report


# -- to an agent -------------------------------------------------------------------------------


def _target_event(source: AgentName, target: AgentName, hook: AgentHook) -> str | None:
    if hook.canonical is None:
        return None
    return next((own for own, ours in SPECS[target].events.items() if ours == hook.canonical), None)


def _matcher(
    source: AgentName, target: Target, hook: AgentHook, report: list[str]
) -> tuple[str | None, list[str] | None]:
    """The target's matcher text (agents), or the tool names (triohooks; None: every tool)."""
    text = hook.matcher.text
    field = MATCHER_FIELD.get(hook.event)
    if text in (None, "", "*") or field != "tool_name":
        return text, None
    names = hook.matcher.names
    if names is None:  # a regex: read it as names when it is only an alternation of them
        found = _PLAIN_ALTERNATION.fullmatch(text)
        if found is not None:
            names = frozenset(found.group(2).split("|"))
            if not (found.group(1) and found.group(3)):
                report.append(
                    f"{hook.where}: matcher {text!r} matches tool names containing these words "
                    f"in {source}; written as the exact names"
                )
    if names is None:  # a regex: its tool names cannot be told apart from the rest
        if target == "triohooks":
            report.append(
                f"{hook.where}: matcher {text!r} is a regex, which a TOML match glob cannot "
                "be: the hook runs for every tool (narrow it with match or if)"
            )
            return None, None
        report.append(
            f"{hook.where}: matcher {text!r} is a regex, kept as written: it names {source}'s "
            "tools, which may be called otherwise in " + target
        )
        return text, None
    out: list[str] = []
    for name in sorted(names):
        mapped = _tool_name(source, target, name)
        if mapped is None:
            report.append(
                f"{hook.where}: {target} has no tool like {source}'s {name!r}: left out of the "
                "matcher"
            )
        elif mapped not in out:
            out.append(mapped)
    if not out:
        report.append(f"{hook.where}: no tool of its matcher exists in {target}: not converted")
        return "", []
    if target == "triohooks":
        return None, out
    if target == "gemini":
        return "^(" + "|".join(re.escape(n) for n in out) + ")$", out
    return "|".join(out), out


def _handler(
    source: AgentName, target: AgentName, hook: AgentHook, report: list[str]
) -> dict[str, Any] | None:
    spec = SPECS[target]
    at = hook.where
    if hook.type not in spec.handler_types:
        report.append(f"{at}: {target} runs no {hook.type} hooks: not converted")
        return None
    # Cursor's documented form has no type (every hook it runs is a command).
    out: dict[str, Any] = {} if target == "cursor" else {"type": hook.type}
    if hook.name:
        if target == "gemini":
            out["name"] = hook.name
        else:
            report.append(f"{at}: name {hook.name!r} left out ({target} hooks have no name)")
    if hook.command is not None:
        out["command"] = hook.command
    elif hook.args is not None:
        if target == "claude":
            out["args"] = list(hook.args)
        else:
            out["command"] = shlex.join(hook.args)
            report.append(f"{at}: args (exec form) written as one command line for {target}")
    if hook.url is not None:
        out["url"] = hook.url
        if hook.headers:
            out["headers"] = dict(hook.headers)
        if hook.allowed_env_vars:
            out["allowedEnvVars"] = list(hook.allowed_env_vars)
    if hook.prompt is not None:
        out["prompt"] = hook.prompt
        if hook.model:
            out["model"] = hook.model
    timeout = hook.timeout_s / spec.timeout_unit_s
    if hook.type == "command" and spec.command_ms_from and timeout >= spec.command_ms_from:
        timeout *= 1000  # Qwen Code reads a command timeout this large as milliseconds
    value = timeout_value(target, timeout)
    if target == "copilot":  # its own names: ``bash`` and ``timeoutSec``
        if "command" in out:
            out["bash"] = out.pop("command")
        out["timeoutSec"] = value
    else:
        out["timeout"] = value
    if hook.if_rule is not None:
        if target == "claude":
            out["if"] = hook.if_rule
        else:
            report.append(
                f"{at}: if {hook.if_rule!r} left out ({target} has no if rules): the hook runs "
                "for every call its matcher matches"
            )
    if hook.background:
        if target == "claude":
            out["async"] = True
        else:
            report.append(f"{at}: async left out: {target} waits for the hook")
    if hook.env:
        if target in ("gemini", "copilot"):
            out["env"] = dict(hook.env)
        else:
            report.append(f"{at}: env {sorted(dict(hook.env))} left out ({target} has no env)")
    if hook.fail_closed:
        out["failClosed"] = True
        report.append(
            f"{at}: failClosed is a triohooks extension: honoured when triohooks runs the hook "
            f"(after `triohooks {target} install`)"
        )
    return out


#: Cursor's event for a call of each of its tools, per triohooks event (its specific events
#: select the tool; an MCP tool goes by its own name).
_CURSOR_CALLS: Final = {
    "pre_tool": {"Shell": "beforeShellExecution", "Read": "beforeReadFile"},
    "post_tool": {"Shell": "afterShellExecution", "Edit": "afterFileEdit"},
}
_CURSOR_MCP: Final = {"pre_tool": "beforeMCPExecution", "post_tool": "afterMCPExecution"}


def _cursor_events(
    hook: AgentHook, matcher: str | None, names: list[str] | None, report: list[str]
) -> list[tuple[str, str | None]]:
    """Cursor's (event, matcher) pairs for a tool hook: one specific event per tool named (the
    event is the tool: no matcher), MCP tools under ``beforeMCPExecution`` with their names."""
    calls, mcp = _CURSOR_CALLS[str(hook.canonical)], _CURSOR_MCP[str(hook.canonical)]
    if matcher in (None, "", "*"):
        return [(event, None) for event in (*calls.values(), mcp)]
    tools = names or []  # (a regex matcher kept as written names no tool Cursor has)
    out: list[tuple[str, str | None]] = []
    for tool in tools:
        if tool in calls:
            out.append((calls[tool], None))
        elif tool.startswith("mcp__"):
            out.append((mcp, tool))
        else:
            report.append(
                f"{hook.where}: Cursor has no {hook.canonical} event for the tool {tool}: left out"
            )
    if not tools:
        report.append(f"{hook.where}: matcher {matcher!r} names no tool Cursor has: not converted")
    return out


def _to_agent(
    source: AgentName, target: AgentName, hooks: list[AgentHook], report: list[str]
) -> str:
    groups: dict[tuple[str, str | None, bool], list[dict[str, Any]]] = {}
    for hook in hooks:
        event = _target_event(source, target, hook)
        if event is None:
            report.append(f"{hook.where}: {target} has no event like {hook.event}: not converted")
            continue
        if hook.type not in SPECS[target].handler_types:
            _handler(source, target, hook, report)  # says why
            continue
        if event in SPECS[target].command_only_events and hook.type != "command":
            report.append(f"{hook.where}: {target} runs only command hooks on {event}")
            continue
        matcher, names = _matcher(source, target, hook, report)
        if names == []:
            continue
        handler = _handler(source, target, hook, report)
        if handler is None:
            continue
        if hook.sequential and target not in ("gemini", "copilot"):
            report.append(f"{hook.where}: sequential left out: {target} runs hooks concurrently")
        places = [(event, matcher)]
        if target == "cursor" and hook.canonical in _CURSOR_CALLS:
            places = _cursor_events(hook, matcher, names, report)
        for place, place_matcher in places:
            key = (place, place_matcher, hook.sequential and target == "gemini")
            groups.setdefault(key, []).append(handler)
    out: dict[str, list[dict[str, Any]]] = {}
    spec = SPECS[target]
    for (event, matcher, sequential), handlers in groups.items():
        if spec.flat_hooks and event not in spec.group_events:  # one handler per entry
            for handler in handlers:
                entry = dict(handler)
                if matcher not in (None, ""):
                    entry["matcher"] = matcher
                out.setdefault(event, []).append(entry)
            continue
        group: dict[str, Any] = {}
        if matcher not in (None, ""):
            group["matcher"] = matcher
        if sequential:
            group["sequential"] = True
        group["hooks"] = handlers
        out.setdefault(event, []).append(group)
    document: dict[str, Any] = {"version": 1, "hooks": out} if spec.versioned else {"hooks": out}
    return json.dumps(document, indent=2) + "\n"


# -- to triohooks' TOML dialect ------------------------------------------------------------------


def _toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a TOML basic string is a JSON string


def _to_toml(source: AgentName, hooks: list[AgentHook], report: list[str]) -> str:
    lines = [f"# From {source}'s hooks, by `triohooks convert`: read the report it printed."]
    for n, hook in enumerate(hooks):
        at = hook.where
        if hook.canonical is None:
            report.append(f"{at}: triohooks has no event like {hook.event}: not converted")
            continue
        if hook.type == "agent" or hook.type not in ("command", "http", "prompt"):
            report.append(f"{at}: triohooks' TOML dialect runs no {hook.type} hooks: not converted")
            continue
        _, names = _matcher(source, "triohooks", hook, report)
        if names == []:
            continue
        rule = None
        if hook.if_rule is not None:
            try:
                rule = translate_if(hook.if_rule)
            except ValueError:
                report.append(f"{at}: if {hook.if_rule!r} cannot be read: left out")
        if hook.background and hook.canonical in ("pre_tool", "prompt_submit", "stop"):
            report.append(f"{at}: async left out: triohooks waits for {hook.canonical} hooks")
        if hook.sequential:
            report.append(f"{at}: sequential left out: TOML hooks of an event run in order")
        if hook.env:
            report.append(f"{at}: env left out: set the variables in the command")
        if names is not None and len(names) > 1:
            report.append(f"{at}: one hook per tool ({', '.join(names)}): a match glob names one")
        base = hook.name or f"{source}-{hook.canonical}-{n}"
        for i, tool in enumerate(names or [None]):
            ident = base if not names or len(names) == 1 else f"{base}-{i}"
            lines += ["", f"[[hooks.{hook.canonical}]]", f"id = {_toml_string(ident)}"]
            if tool is not None:
                lines.append(f"match = {_toml_string(tool)}")
            if rule is not None:
                lines.append(f"if = {_toml_string(rule)}")
            if hook.type == "command" and hook.command is not None:
                lines.append(f"command = {_toml_string(hook.command)}")
            elif hook.type == "command" and hook.args is not None:
                lines.append("args = [" + ", ".join(_toml_string(a) for a in hook.args) + "]")
            elif hook.type == "http" and hook.url is not None:
                lines += ['type = "http"', f"url = {_toml_string(hook.url)}"]
                if hook.headers:
                    pairs = ", ".join(
                        f"{_toml_string(k)} = {_toml_string(v)}" for k, v in hook.headers
                    )
                    lines.append(f"headers = {{ {pairs} }}")
                if hook.allowed_env_vars:
                    names_list = ", ".join(_toml_string(v) for v in hook.allowed_env_vars)
                    lines.append(f"allowed_env_vars = [{names_list}]")
            elif hook.type == "prompt" and hook.prompt is not None:
                lines += ['type = "prompt"', f"prompt = {_toml_string(hook.prompt)}"]
                if "$ARGUMENTS" in hook.prompt and i == 0:
                    report.append(
                        f"{at}: $ARGUMENTS is {source}'s placeholder for its input: a TOML "
                        "prompt hook's text is the criteria, the event goes to the judge beside it"
                    )
                if hook.model:
                    lines.append(f"model = {_toml_string(hook.model)}")
            timeout = hook.timeout_s
            lines.append(f"timeout_seconds = {int(timeout) if timeout.is_integer() else timeout}")
            if hook.fail_closed:
                lines.append("fail_closed = true")
    return "\n".join(lines) + "\n"
