"""Read an agent's hook config from its own settings files, unchanged (``docs/agents.md``).

Owns: finding and reading every level an agent reads (and the ``triohooks-hooks.json`` an
adoption moved a level's hooks into), parsing its ``hooks`` object into :class:`AgentHook`\\ s
with that agent's matcher rules, handler types, timeout units and ``if`` syntax, merging the
levels as the agent does (all run; identical handlers once; ``disableAllHooks`` and
``allowManagedHooksOnly`` honoured), skipping the catch-all hooks an adoption wrote (they point
at triohooks itself), and trust for project-level files. Must not run hooks.

Every file is read bounded and only if it is a regular file
(:func:`triohooks.config.paths.read_regular_file`). A problem is a :class:`ConfigProblem`
naming file and field; the agents themselves skip a broken settings file silently, we report
it (``validate``, ``list``) and go on with the other levels.
"""

from __future__ import annotations

import functools
import os
import re
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

import msgspec

from triohooks.config.freshness import Signature, signature, unchanged
from triohooks.config.model import (
    ArgsHandler,
    Command,
    CommandHandler,
    ConfigProblem,
    Handler,
    TrustInfo,
    command_label,
)
from triohooks.config.paths import UnreadableFileError, read_regular_file
from triohooks.config.trust import (
    STORE_NAME,
    TrustSource,
    assess_trust,
    held_back_message,
    read_store,
    trust_key,
)
from triohooks.match.ifrules import IfRule, IfRuleError, parse_if_rule

from .agy import SET_KEYS, hook_events
from .spec import (
    LEGACY_RELAYS,
    LOCAL_RELAY,
    PORTABLE_RELAY,
    SCOPES,
    SPECS,
    AgentName,
    Level,
    adopted_path,
    event_arg,
    http_handler,
    levels,
    scope_arg,
)
from .undo import RECORDS_NAME

#: Largest settings file read (a settings.json is a few KiB).
MAX_SETTINGS_BYTES: Final = 1024 * 1024
#: Claude: a matcher of only these characters is an exact name or a ``|``/``,`` list.
_PLAIN_MATCHER: Final = re.compile(r"[A-Za-z0-9_\- ,|]*\Z")
#: Codex: only these (``is_exact_matcher`` in codex-rs/hooks events/common.rs); anything else,
#: ``-``, ``,`` and spaces included, is an unanchored regex.
_CODEX_PLAIN_MATCHER: Final = re.compile(r"[A-Za-z0-9_|]*\Z")
#: The event field a matcher is tested against, per (Claude-named) event; tool events use the
#: tool name, events not listed ignore the matcher.
MATCHER_FIELD: Final = {
    "PreToolUse": "tool_name",
    "PostToolUse": "tool_name",
    "PostToolUseFailure": "tool_name",
    "PermissionRequest": "tool_name",
    "PermissionDenied": "tool_name",
    "BeforeTool": "tool_name",
    "AfterTool": "tool_name",
    "SessionStart": "source",
    "SessionEnd": "reason",
    "PreCompact": "trigger",
    "PostCompact": "trigger",
    "PreCompress": "trigger",
    "Notification": "notification_type",
    "SubagentStart": "agent_type",
    "SubagentStop": "agent_type",
    # Copilot CLI's events (its input read under Claude Code's names: .copilot.claude_view)
    "preToolUse": "tool_name",
    "postToolUse": "tool_name",
    "postToolUseFailure": "tool_name",
    "permissionRequest": "tool_name",
    "preCompact": "trigger",
    "notification": "notification_type",
    "subagentStart": "agent_type",
    "subagentStop": "agent_type",
    # Cursor's (its input read under Claude Code's names: .cursor.claude_view)
    "beforeShellExecution": "tool_name",
    "afterShellExecution": "tool_name",
    "beforeMCPExecution": "tool_name",
    "afterMCPExecution": "tool_name",
    "beforeReadFile": "tool_name",
    "afterFileEdit": "tool_name",
}
#: Claude permission-rule tool names -> our ``if`` rule kinds.
_IF_KINDS: Final = {
    "Bash": "shell",
    "Edit": "write",
    "Write": "write",
    "MultiEdit": "write",
    "NotebookEdit": "write",
    "Read": "read",
    "Glob": "read",
    "Grep": "read",
    "WebFetch": "web",
}


class Matcher(msgspec.Struct, frozen=True):
    """A compiled matcher: ``None`` names and pattern match everything."""

    text: str | None
    names: frozenset[str] | None = None
    pattern: Any = None
    #: Both kinds, tried in turn (Qwen Code): a name equal to the value, else the pattern.
    either: bool = False

    def matches(self, value: object) -> bool:
        if self.names is None and self.pattern is None:
            return True
        if not isinstance(value, str):
            return False
        if self.names is not None and (value in self.names or not self.either):
            return value in self.names
        return self.pattern.search(value) is not None


class AgentHook(msgspec.Struct, frozen=True, kw_only=True):
    """One handler of one matcher group of one level, as the agent would run it."""

    agent: AgentName
    #: From a ``triohooks-hooks.json`` (moved there by an adoption: the agent no longer runs it
    #: itself, so calls from the agent -- endpoint, relay -- run only these).
    adopted: bool = False
    #: The agent's event name, as written (``PreToolUse``).
    event: str
    #: The triohooks event it is, or None (an event we have no name for: still run).
    canonical: str | None
    level: str
    source: str
    #: ``<event>[<group>].hooks[<n>]``.
    where: str
    #: command / http / prompt / agent / mcp_tool ...; only ``supported`` ones run.
    type: str
    supported: bool
    #: Why it does not run (unsupported type, wrong event for the type), when it does not.
    unsupported: str | None = None
    matcher: Matcher
    #: ``command`` (run by ``bash -c``) or ``args`` (exec form).
    command: str | None = None
    args: tuple[str, ...] | None = None
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    allowed_env_vars: tuple[str, ...] = ()
    prompt: str | None = None
    model: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    #: The handler's working directory as written (Copilot CLI's ``cwd``: relative to the
    #: project root, or absolute); None: the call's directory.
    cwd: str | None = None
    name: str | None = None
    timeout_s: float
    if_rule: str | None = None
    compiled_if: IfRule | None = None
    #: triohooks extension (``"failClosed": true``), or Claude Code's own ``onFailure:
    #: "block"``: a failure or timeout blocks.
    fail_closed: bool = False
    #: It is fail-closed by Claude Code's ``onFailure`` (whose words its block reason uses).
    on_failure_block: bool = False
    #: Claude ``async``: run in the background, its reply ignored.
    background: bool = False
    #: Gemini ``sequential`` on its matcher group.
    sequential: bool = False
    #: A trusted project hook trust read with paths relative to the directory it runs in
    #: (``trusted_in``): held back for a call that would run it anywhere else.
    cwd_bound: bool = False
    trusted_in: str | None = None

    @property
    def label(self) -> str:
        """A short, non-secret name for messages (never the command line: it may leak)."""
        return self.name or f"{self.level}:{self.where}"

    @property
    def runs(self) -> str:
        if self.command is not None:
            return self.command
        if self.args is not None:
            return " ".join(self.args)
        if self.url is not None:
            return f"POST {self.url}"
        if self.prompt is not None:
            return f"{self.type}: {self.prompt}"
        return self.type

    def identity(self) -> tuple[object, ...]:
        """Identical handlers (across levels) run once."""
        return (self.event, self.type, self.command, self.args, self.url, self.prompt, self.cwd)

    def as_handler(self) -> Handler | None:
        """The process it runs."""
        if self.command is not None:
            return CommandHandler(self.command)
        if self.args:
            return ArgsHandler(self.args)
        return None

    def as_command(self) -> Command | None:
        """The process it runs as trust reads it: with its own variables and directory."""
        run: str | tuple[str, ...] | None = self.command
        if run is None and self.args:
            run = tuple(self.args)
        if run is None:
            return None
        return Command(run, tuple(self.env), self.cwd)


class AgentTable(msgspec.Struct, frozen=True):
    agent: AgentName
    project: str | None
    hooks: tuple[AgentHook, ...] = ()
    #: Project-level hooks held back: not trusted.
    untrusted: tuple[AgentHook, ...] = ()
    problems: tuple[ConfigProblem, ...] = ()
    files: tuple[str, ...] = ()
    trust: TrustInfo | None = None
    #: What the table was built from (:mod:`triohooks.config.freshness`): the signature of
    #: each settings file, the trust store and everything trust looked at, taken before it
    #: was read.
    inputs: tuple[Signature, ...] = ()
    #: Once triohooks is installed for the agent, every way found to switch its catch-alls off
    #: or to run hooks beside them (a hook planted beside a catch-all, ``disableAllHooks`` at
    #: any level, a plugin with hooks ...): one line each, for the tamper alarm
    #: (:func:`triohooks.agents.tamper.alarms`).
    tampered: tuple[str, ...] = ()
    #: ``(event, scope)`` of each catch-all the agent runs that names the install scope whose
    #: settings file it is in: whose hooks each request answers for (:mod:`.shares`).
    routed: tuple[tuple[str, str], ...] = ()

    def for_event(self, event: str, *, adopted_only: bool = False) -> list[AgentHook]:
        return [h for h in self.hooks if h.event == event and (h.adopted or not adopted_only)]

    def is_current(self) -> bool:
        """Whether nothing the table was built from changed since (:mod:`triohooks.config.
        freshness`): the settings files, the trust store and everything trust looked at. A
        table built from nothing (no ``inputs``: not read yet) is not."""
        return bool(self.inputs) and unchanged(self.inputs)

    @property
    def errors(self) -> tuple[ConfigProblem, ...]:
        """None: the agent runs what it can read of its settings, and so do we (``problems``
        says what it cannot; ``triohooks <agent> validate`` shows them)."""
        return ()


def compile_matcher(agent: AgentName, text: object) -> Matcher:
    """The agent's reading of a matcher (``SPECS[agent].matcher_style``). Claude: absent, ``""``
    or ``*`` match all; only ``[A-Za-z0-9_\\- ,|]`` is an exact name or a ``|``/``,`` list;
    anything else an unanchored regex. Codex: the same with only ``[A-Za-z0-9_|]`` for names.
    Gemini: an unanchored regex. Qwen Code: exact names first (a ``|`` list, trimmed, Claude
    Code's tool names as aliases), else an unanchored regex of the entries. Copilot CLI: a regex
    that must match the whole value.
    Raises ValueError for a matcher that is not a string or does not compile."""
    if text is None:
        return Matcher(None)
    if not isinstance(text, str):
        raise ValueError("must be a string")
    style = SPECS[agent].matcher_style
    if text in ("", "*") or (style == "qwen" and text == ".*"):
        return Matcher(text)
    if style == "qwen":
        return _qwen_matcher(text)
    if style in ("claude", "codex"):
        plain = _CODEX_PLAIN_MATCHER if style == "codex" else _PLAIN_MATCHER
        if plain.match(text):
            names = frozenset(n.strip() for n in re.split(r"[|,]", text) if n.strip())
            return Matcher(text, names=names)
    return Matcher(text, pattern=_re2(f"^(?:{text})$" if style == "anchored" else text))


def _re2(source: str) -> Any:
    import re2

    try:
        return re2.compile(source)
    except re2.error as exc:
        raise ValueError(f"not a regular expression we can run in linear time: {exc}") from None


#: Qwen Code: Claude Code's tool names it accepts in a matcher, compared exactly.
QWEN_ALIASES: Final = {
    "Bash": "run_shell_command",
    "Read": "read_file",
    "Write": "write_file",
    "Edit": "edit",
    "MultiEdit": "edit",
    "NotebookEdit": "notebook_edit",
    "Glob": "glob",
    "Grep": "grep_search",
    "LS": "list_directory",
    "WebFetch": "web_fetch",
    "WebSearch": "web_search",
    "Task": "agent",
}


def _top_level_bars(text: str) -> list[str]:
    """``text`` split at each ``|`` outside ``[...]`` and groups, not escaped."""
    parts: list[str] = []
    depth, in_class, escaped, start = 0, False, False, 0
    for i, ch in enumerate(text):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(depth - 1, 0)
        elif ch == "|" and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _qwen_matcher(text: str) -> Matcher:
    """Qwen Code's matcher: a value equal to an entry (or to the tool an alias names) matches;
    otherwise the trimmed entries as one unanchored regex. One starting with ``^`` or ``(`` is
    only a regex, compiled as written."""
    if text.startswith(("^", "(")):
        return Matcher(text, pattern=_re2(text))
    entries = [e.strip() for e in _top_level_bars(text) if e.strip()]
    if any(e in ("*", ".*") for e in entries):
        return Matcher(text)
    if not entries:
        return Matcher(text, names=frozenset())  # only bars: matches nothing
    names = frozenset(entries) | {QWEN_ALIASES[e] for e in entries if e in QWEN_ALIASES}
    return Matcher(text, names=names, pattern=_re2("|".join(entries)), either=True)


def translate_if(text: str) -> str:
    """A Claude permission rule (``Bash(git push*)``, ``Edit(src/**)``, ``WebFetch(domain:x)``,
    a bare tool name) as a triohooks ``if`` rule. Raises ValueError when it cannot be read."""
    m = re.fullmatch(r"\s*([A-Za-z_][\w.:-]*)\s*(?:\((.*)\))?\s*", text, re.DOTALL)
    if m is None:
        raise ValueError(f"cannot read rule {text!r}: expected Tool or Tool(pattern)")
    tool, inner = m.group(1), m.group(2)
    if inner is None or inner.strip() in ("", "*"):
        return tool
    inner = inner.strip()
    kind = _IF_KINDS.get(tool)
    if kind is None:
        return tool  # an mcp__ tool or one we have no kind for: the tool name decides
    if kind == "shell" and inner.endswith(":*"):
        inner = inner[:-2] + "*"  # Claude's legacy prefix form `npm run test:*`
    if kind == "web":
        inner = inner.removeprefix("domain:")
    return f"{kind}({inner})"


def _timeout(
    agent: AgentName, raw: Mapping[str, Any], problems: list[ConfigProblem], at: Any
) -> float:
    spec = SPECS[agent]
    kind = raw.get("type", "command")
    default = (
        spec.type_timeouts_s.get(kind, spec.default_timeout_s)
        if isinstance(kind, str)
        else spec.default_timeout_s
    )
    field = "timeout"
    if agent == "copilot" and "timeoutSec" in raw:
        field = "timeoutSec"
    value = raw.get(field)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        at(field, "must be a positive number")
        return default
    if kind == "command" and spec.command_ms_from is not None and value >= spec.command_ms_from:
        return float(value) / 1000.0  # Qwen Code reads these as milliseconds
    return float(value) * spec.timeout_unit_s


def _strings(value: object) -> tuple[str, ...] | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None


def _handler(
    agent: AgentName,
    level: Level,
    source: str,
    event: str,
    where: str,
    matcher: Matcher,
    raw: object,
    problems: list[ConfigProblem],
    sequential: bool,
) -> AgentHook | None:
    def at(field: str, message: str) -> None:
        problems.append(ConfigProblem(source, message, event=None, field=f"{where}.{field}"))

    if not isinstance(raw, dict):
        problems.append(ConfigProblem(source, "must be an object", field=where))
        return None
    spec = SPECS[agent]
    kind = raw.get("type", "command")
    if not isinstance(kind, str):
        at("type", "must be a string")
        return None
    supported = kind in spec.handler_types
    unsupported = (
        None if supported else f"{agent} handler type {kind!r} is not supported by triohooks"
    )
    if supported and event in spec.command_only_events and kind != "command":
        supported = False
        unsupported = f"{event} accepts only command hooks in {agent}"
    fields: dict[str, Any] = {}
    if kind == "command":
        command, args = raw.get("command"), raw.get("args")
        if agent == "copilot" and command is None:
            command = raw.get("bash")  # Copilot CLI's unix command; ``command`` is its alias
        if agent == "copilot" and raw.get("cwd") is not None:
            if isinstance(raw["cwd"], str) and raw["cwd"].strip():
                fields["cwd"] = raw["cwd"]
            else:
                at("cwd", "must be a directory (relative to the project root, or absolute)")
        if isinstance(args, list):
            argv = _strings(args)
            if not argv or not argv[0].strip():
                at("args", "must be a non-empty list of strings naming a program first")
                return None
            fields["args"] = argv
        elif isinstance(command, str) and command.strip():
            fields["command"] = command
        else:
            at("command", "a command hook needs command (a string) or args (a list)")
            return None
        shell = raw.get("shell")
        if shell not in (None, "bash", "sh"):
            supported, unsupported = (
                False,
                f"shell {shell!r} is not supported by triohooks (bash only)",
            )
        env = raw.get("env")
        if isinstance(env, dict) and all(isinstance(v, str) for v in env.values()):
            fields["env"] = tuple((str(k), v) for k, v in env.items())
        elif env is not None:
            at("env", "must be an object of string values")
    elif kind == "http":
        url = raw.get("url")
        if not isinstance(url, str) or not url.lower().startswith(("http://", "https://")):
            at("url", "must be an http:// or https:// URL")
            return None
        fields["url"] = url
        headers = raw.get("headers") or {}
        if isinstance(headers, dict) and all(isinstance(v, str) for v in headers.values()):
            fields["headers"] = tuple((str(k), v) for k, v in headers.items())
        else:
            at("headers", "must be an object of string values")
        fields["allowed_env_vars"] = _strings(raw.get("allowedEnvVars") or []) or ()
    elif kind in ("prompt", "agent"):
        prompt = raw.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            at("prompt", "must be a non-empty string")
            return None
        fields["prompt"] = prompt
        if isinstance(raw.get("model"), str):
            fields["model"] = raw["model"]
    if_text = raw.get("if")
    compiled = None
    if if_text is not None:
        if not isinstance(if_text, str):
            at("if", "must be a string")
            return None
        try:
            compiled = parse_if_rule(translate_if(if_text))
        except (ValueError, IfRuleError) as exc:
            at("if", str(exc))
            return None
    on_failure = _on_failure_blocks(agent, event, raw, at)
    return AgentHook(
        agent=agent,
        event=event,
        canonical=spec.events.get(event),
        level=level.name,
        source=source,
        where=where,
        type=kind,
        supported=supported,
        unsupported=unsupported,
        matcher=matcher,
        timeout_s=_timeout(agent, raw, problems, at),
        if_rule=if_text,
        compiled_if=compiled,
        fail_closed=raw.get("failClosed") is True or on_failure,
        on_failure_block=on_failure,
        background=raw.get("async") is True,
        sequential=sequential,
        name=raw.get("name") if isinstance(raw.get("name"), str) else None,
        **fields,
    )


def _on_failure_blocks(
    agent: AgentName, event: str, raw: Mapping[str, Any], at: Callable[[str, str], None]
) -> bool:
    """Claude Code's ``onFailure: "block"`` on a handler (command and http; measured with
    2.1.332): a hook that fails or times out blocks, as Claude Code itself blocks, but on the
    events where it ignores the key. A value it does not know is said, and blocks."""
    ignored = SPECS[agent].on_failure_ignored
    value = raw.get("onFailure")
    if ignored is None or value in (None, "continue") or raw.get("async") is True:
        return False
    if value != "block":
        at("onFailure", 'must be "continue" or "block"; read as "block"')
    return event not in ignored


def as_group(agent: AgentName, entry: object, event: str = "") -> object:
    """One entry of ``event``'s list as a matcher group (``{"matcher", "hooks": [...]}``).
    Copilot CLI, Cursor and Antigravity CLI also take their own form, where the entry is one
    handler with its own matcher -- which Antigravity CLI ignores beside its tool events."""
    spec = SPECS[agent]
    if spec.flat_hooks and isinstance(entry, dict) and "hooks" not in entry:
        ignored = bool(spec.group_events) and event not in spec.group_events
        return {"matcher": None if ignored else entry.get("matcher"), "hooks": [entry]}
    return entry


def parse_hooks(
    agent: AgentName,
    level: Level,
    source: str,
    hooks: object,
    problems: list[ConfigProblem],
    *,
    adopted: bool = False,
    keep_ours: bool = False,
) -> list[AgentHook]:
    """Parse one ``hooks`` object (``{"<Event>": [{"matcher", "hooks": [...]}]}``)."""
    if not isinstance(hooks, dict):
        problems.append(ConfigProblem(source, "must be an object of events", field="hooks"))
        return []
    out: list[AgentHook] = []
    if agent == "agy" and hooks.get("enabled") is False:
        return []  # an agy hook set switched off: none of its hooks run
    for event, groups in hooks.items():
        if agent == "agy" and event in SET_KEYS:
            if not isinstance(groups, bool):
                problems.append(ConfigProblem(source, "must be true or false", field=event))
            continue
        if not isinstance(groups, list):
            problems.append(
                ConfigProblem(source, "must be a list of matcher groups", field=str(event))
            )
            continue
        for g, entry in enumerate(groups):
            where = f"{event}[{g}]"
            group = as_group(agent, entry, str(event))
            if not isinstance(group, dict):
                problems.append(ConfigProblem(source, "must be an object", field=where))
                continue
            try:
                matcher = compile_matcher(agent, group.get("matcher"))
            except ValueError as exc:
                problems.append(ConfigProblem(source, str(exc), field=f"{where}.matcher"))
                continue
            handlers = group.get("hooks")
            if not isinstance(handlers, list):
                problems.append(
                    ConfigProblem(source, "must be a list of handlers", field=f"{where}.hooks")
                )
                continue
            # Copilot CLI runs an event's hooks one after another, in order.
            sequential = group.get("sequential") is True or agent == "copilot"
            for n, raw in enumerate(handlers):
                hook = _handler(
                    agent,
                    level,
                    source,
                    str(event),
                    f"{where}.hooks[{n}]",
                    matcher,
                    raw,
                    problems,
                    sequential,
                )
                if hook is not None and (keep_ours or not is_ours(hook)):
                    out.append(msgspec.structs.replace(hook, adopted=True) if adopted else hook)
    return out


_SHELL_WORD: Final = r"(?:'[^']*'|[A-Za-z0-9_@%+=:,./-]+)"
_NUMBER: Final = r"[0-9]+(?:\.[0-9]+)?"


@functools.lru_cache(maxsize=64)
def _form(template: str, agent: str, event: str, scope: str | None) -> re.Pattern[str]:
    """``template`` as a pattern matching exactly what it writes for ``agent``'s catch-all of
    ``event`` naming ``scope``, any timeout, any shell-quoted path for the native client, the
    python, the relay's directory and script."""
    marks = {
        "timeout": "\x00T\x00",
        "python": "\x00P\x00",
        "script": "\x00S\x00",
        "native": "\x00N\x00",
        "relay_dir": "\x00D\x00",
    }
    text = re.escape(
        template.format(agent=agent, event=event_arg(agent, event), scope=scope_arg(scope), **marks)
    )
    for name, pattern in (
        ("timeout", _NUMBER),
        ("python", _SHELL_WORD),
        ("script", _SHELL_WORD),
        ("native", _SHELL_WORD),
        ("relay_dir", _SHELL_WORD),
    ):
        # A place named twice (``[ -x P ] && exec P``) names one path both times.
        first, *again = text.split(re.escape(marks[name]))
        if again:
            text = first + f"(?P<{name}>{pattern})" + f"(?P={name})".join(again)
    return re.compile(text)


#: Our http catch-all's URL: any port, and the scope it was installed at when it names one.
_HTTP_URL: Final = r"http://127\.0\.0\.1:[0-9]{{1,5}}/{agent}/v1/hook(?:\?scope=(user|project))?"


def catch_all_scope(hook: AgentHook) -> str | None:
    """For exactly a catch-all an install (or a plugin) writes: the scope it names (``user``,
    ``project``), or ``""`` when it names none (a plugin's; one an older triohooks wrote).
    None for anything else: an http hook to our endpoint with our header, or the relay command
    of either form, and nothing else on it. Never a pattern found somewhere in a command
    (``true # triohooks-relay claude`` is not ours)."""
    if hook.if_rule is not None or hook.background or hook.fail_closed or hook.env or hook.name:
        return None
    if hook.type == "http":
        expected = http_handler(hook.agent, 0, 0)
        found = re.fullmatch(_HTTP_URL.format(agent=hook.agent), hook.url or "")
        if (
            found is None
            or dict(hook.headers) != expected["headers"]
            or list(hook.allowed_env_vars) != expected["allowedEnvVars"]
        ):
            return None
        return found.group(1) or ""
    if hook.type != "command" or hook.command is None:
        return None
    for scope in (*SCOPES, None):
        for template in (PORTABLE_RELAY, LOCAL_RELAY, *LEGACY_RELAYS):
            if scope is not None and "{scope}" not in template:
                continue  # a form that names no scope is one naming none
            if _form(template, hook.agent, hook.event, scope).fullmatch(hook.command):
                return scope or ""
    return None


def is_ours(hook: AgentHook) -> bool:
    """Whether ``hook`` is exactly a catch-all an install writes (:func:`catch_all_scope`)."""
    return catch_all_scope(hook) is not None


def catch_alls(agent: AgentName, project: Path | None, home: Path) -> list[AgentHook]:
    """The catch-alls an install wrote into the agent's settings files, every level (each
    hook's ``level`` and ``source`` say which file)."""
    from .convert import hooks_of  # (convert reads this module's parsers)

    found: list[AgentHook] = []
    for level in levels(agent, project, home):
        doc = read_json_object(level.path, [])
        hooks = hooks_of(doc, agent) if doc is not None else None
        if hooks is None:
            continue
        parsed = parse_hooks(agent, level, str(level.path), hooks, [], keep_ours=True)
        found += [h for h in parsed if is_ours(h)]
    return found


def read_json_object(
    path: Path,
    problems: list[ConfigProblem],
    unreadable: list[tuple[str, str]] | None = None,
) -> dict[str, Any] | None:
    """A settings file as a JSON object; None when missing (silent) or broken (a problem; one
    that is there but cannot be read is also added to ``unreadable``)."""
    try:
        data = read_regular_file(path, MAX_SETTINGS_BYTES)
    except FileNotFoundError:
        return None
    except UnreadableFileError as exc:
        problems.append(ConfigProblem(str(path), f"{exc.reason}; skipped", severity="warning"))
        if unreadable is not None:
            unreadable.append((str(path), exc.reason))
        return None
    try:
        value = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        problems.append(
            ConfigProblem(str(path), f"not valid JSON, skipped: {exc}", severity="warning")
        )
        return None
    except RecursionError:  # `[[[[...]]]]` within the size cap: unreadable, not our crash
        problems.append(
            ConfigProblem(
                str(path), "not valid JSON, skipped: nested too deeply", severity="warning"
            )
        )
        if unreadable is not None:
            unreadable.append((str(path), "nested too deeply to read"))
        return None
    if not isinstance(value, dict):
        problems.append(
            ConfigProblem(str(path), "must be a JSON object; skipped", severity="warning")
        )
        return None
    return value


def _codex_toml_hooks(home: Path, problems: list[ConfigProblem]) -> tuple[str, object] | None:
    return codex_toml_hooks(home / ".codex" / "config.toml", problems)


def codex_toml_hooks(path: Path, problems: list[ConfigProblem]) -> tuple[str, object] | None:
    """The ``[hooks]`` of a Codex ``config.toml`` (without Codex's ``[hooks.state]`` review
    record), and the file's name; None when it has none or cannot be read (a warning)."""
    try:
        data = read_regular_file(path, MAX_SETTINGS_BYTES)
    except FileNotFoundError:
        return None
    except UnreadableFileError as exc:
        problems.append(ConfigProblem(str(path), f"{exc.reason}; skipped", severity="warning"))
        return None
    import tomllib

    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except RecursionError:
        problems.append(
            ConfigProblem(
                str(path), "not valid TOML, skipped: nested too deeply", severity="warning"
            )
        )
        return None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        problems.append(
            ConfigProblem(str(path), f"not valid TOML, skipped: {exc}", severity="warning")
        )
        return None
    if "hooks" not in doc:
        return None
    hooks = doc["hooks"]
    if not isinstance(hooks, dict):
        return str(path), hooks  # reported by the parser
    # ``[hooks.state."..."]`` is Codex's record of reviewed hooks, not an event.
    return str(path), {k: v for k, v in hooks.items() if k != "state"}


#: Most hooks files read from one of Copilot CLI's hooks directories (Copilot reads them all:
#: one more is a tamper alarm, :mod:`.tamper`).
MAX_HOOK_FILES: Final = 64


def level_files(agent: AgentName, level: Level) -> list[Path]:
    """The files besides ``level.path`` the agent reads at that level: for Copilot CLI, every
    other ``*.json`` of its hooks directory (at most :data:`MAX_HOOK_FILES`, by name)."""
    if agent != "copilot":
        return []
    try:
        with os.scandir(level.path.parent) as entries:
            names = sorted(
                e.name for e in entries if e.name.endswith(".json") and e.name != level.path.name
            )
    except OSError:
        return []
    return [level.path.parent / name for name in names[:MAX_HOOK_FILES]]


def candidate_files(agent: AgentName, project: Path | None, home: Path) -> list[Path]:
    """Every file whose change changes the table (for reuse checks)."""
    files: list[Path] = []
    for level in levels(agent, project, home):
        files += [level.path, adopted_path(agent, level.path), *level_files(agent, level)]
        if agent == "copilot":
            files.append(level.path.parent)  # a hooks file added or removed
    if agent == "codex":
        files.append(home / ".codex" / "config.toml")
    from .tamper import watched  # (tamper reads this module's parsers)

    return files + watched(agent, project, home)


class _LevelRead(msgspec.Struct):
    level: Level
    hooks: list[AgentHook]
    #: What trust covers of this level: its hooks, ``env`` and switches, as parsed.
    sources: list[TrustSource]
    #: The level's ``env`` (the variables the agent sets for its session and hooks).
    env: dict[str, str]
    #: The level's switches (``disableAllHooks`` ...) as written, or absent.
    switches: dict[str, Any]
    #: ``(file, why)`` for this level's files that are there but cannot be read.
    unreadable: list[tuple[str, str]] = msgspec.field(default_factory=list)
    #: The settings file and the triohooks-hooks.json beside it as parsed (None: missing or
    #: unreadable), for the tamper alarm.
    doc: dict[str, Any] | None = None
    adopted: object = None
    #: The catch-alls of triohooks in the level's settings file (the agent runs them).
    catch_alls: list[AgentHook] = msgspec.field(default_factory=list)


def _hooks_object(agent: AgentName, path: Path, doc: Mapping[str, Any]) -> object:
    if agent == "agy":  # every named hook set of the file (the one named "hooks" is adopted)
        return hook_events(doc)
    if agent == "codex" and path.name == "hooks.json":
        return doc.get("hooks", doc)
    return doc.get("hooks")


def _covered(value: object) -> bytes:
    """The bytes trust hashes for a parsed value: key order and layout do not count."""
    return msgspec.json.encode(value, order="sorted")


def _read_level(
    agent: AgentName, level: Level, home: Path, problems: list[ConfigProblem], files: list[str]
) -> _LevelRead:
    """One level: its settings file and the ``triohooks-hooks.json`` beside it, each read once."""
    out = _LevelRead(level, [], [], {}, {})
    doc = read_json_object(level.path, problems, out.unreadable)
    if doc is not None:
        files.append(str(level.path))
        hooks_obj = _hooks_object(agent, level.path, doc)
        out.switches = {k: doc[k] for k in SPECS[agent].switches if k in doc}
        env = doc.get("env")
        if isinstance(env, dict):
            out.env = {k: v for k, v in env.items() if isinstance(k, str) and isinstance(v, str)}
        if hooks_obj is not None:
            parsed = parse_hooks(agent, level, str(level.path), hooks_obj, problems, keep_ours=True)
            ours = [is_ours(h) for h in parsed]
            out.hooks += [h for h, mine in zip(parsed, ours, strict=True) if not mine]
            out.catch_alls += [h for h, mine in zip(parsed, ours, strict=True) if mine]
        if hooks_obj is not None or out.switches or env is not None:
            covered = {"hooks": hooks_obj, **out.switches}
            if env is not None:  # the variables every hook of the session gets
                covered["env"] = env
            out.sources.append(TrustSource(str(level.path), _covered(covered)))
    for other_path in level_files(agent, level):  # Copilot CLI: the directory's other files
        other = read_json_object(other_path, problems, out.unreadable)
        if other is None or other.get("hooks") is None:
            continue
        files.append(str(other_path))
        out.sources.append(TrustSource(str(other_path), _covered({"hooks": other["hooks"]})))
        out.hooks += parse_hooks(agent, level, str(other_path), other["hooks"], problems)
    moved_to = adopted_path(agent, level.path)
    adopted = read_json_object(moved_to, problems, out.unreadable)
    if adopted is not None:
        files.append(str(moved_to))
        out.sources.append(TrustSource(str(moved_to), _covered(adopted)))
        out.hooks += parse_hooks(agent, level, str(moved_to), adopted, problems, adopted=True)
    out.doc, out.adopted = doc, adopted
    if agent == "codex" and level.name == "user":
        extra = _codex_toml_hooks(home, problems)
        if extra is not None:
            files.append(extra[0])
            out.hooks += parse_hooks(agent, level, extra[0], extra[1], problems)
    return out


def _bind_to_cwd(read: _LevelRead, project: Path, bound: set[str]) -> _LevelRead:
    """A project level's hooks, each marked with the directory trust read it in when its
    reading took paths relative to that directory."""
    if not read.level.project:
        return read
    hooks = []
    for hook in read.hooks:
        command = hook.as_command()
        if command is not None and command_label(command) in bound:
            where = os.path.realpath(os.path.join(project, hook.cwd or "."))
            hooks.append(msgspec.structs.replace(hook, cwd_bound=True, trusted_in=where))
        else:
            hooks.append(hook)
    return msgspec.structs.replace(read, hooks=hooks)


#: The levels ``install`` writes its catch-alls into (``--scope user|project``).
INSTALL_LEVELS: Final = frozenset({"user", "project"})


def project_variables(agent: AgentName, project: Path) -> dict[str, str]:
    """The variables the agent sets to the project directory (``CLAUDE_PROJECT_DIR`` ...)."""
    return {name: str(project) for name in SPECS[agent].project_env}


def load_agent_table(
    agent: AgentName,
    *,
    project: Path | None,
    home: Path,
    config_dir: Path,
    trust_override: bool = False,
    trust_covers: list[str] | None = None,
) -> AgentTable:
    """Every hook ``agent`` would run for this project, merged as it merges them, plus problems
    and trust. Blocking file I/O: call it from a worker thread. ``trust_covers``: the paths
    trust hashes besides what it finds (``triohooks <agent> trust --cover``; None: those the
    user named before).

    Project-level content counts only once trusted: its hooks are held back, and its switches
    (``disableAllHooks``, Gemini's ``hooksConfig``) are ignored -- an untrusted repository can
    neither run code nor turn the user's own guards off."""
    problems: list[ConfigProblem] = []
    watched = [
        *candidate_files(agent, project, home),
        config_dir / STORE_NAME,
        config_dir / RECORDS_NAME,  # what each install routed: the tamper alarm's measure
    ]
    inputs: dict[str, Signature] = {str(p): signature(str(p)) for p in watched}
    files: list[str] = []
    reads = [_read_level(agent, lv, home, problems, files) for lv in levels(agent, project, home)]
    trust: TrustInfo | None = None
    if project is not None:
        project_reads = [r for r in reads if r.level.project]
        commands = [
            c for r in project_reads for c in (x.as_command() for x in r.hooks) if c is not None
        ]
        # The variables the session's hooks get from the agent's settings, the user's levels
        # first (the project's are trust's to cover: their env is part of what it hashes, and
        # what its values make every hook load -- BASH_ENV -- is covered as well).
        settings_env = {k: v for r in reads for k, v in r.env.items()}
        project_env = tuple((k, v) for r in project_reads for k, v in r.env.items())
        if project_env:
            commands.append(Command(f"# {SPECS[agent].display}'s env", project_env))
        trust, covered = assess_trust(
            config_dir,
            project,
            # Each level names its triohooks-hooks.json sibling: the same file, counted once.
            list(dict.fromkeys(s for r in project_reads for s in r.sources)),
            commands,
            dialect=agent,
            variables={**settings_env, **project_variables(agent, project)},
            hooks_dir=project / SPECS[agent].project_dir / "hooks",
            unreadable=[u for r in project_reads for u in r.unreadable],
            covers=trust_covers,
        )
        for sig in covered.signatures:
            inputs.setdefault(str(sig[0]), sig)
        if trust_override and trust.state != "none":
            trust = msgspec.structs.replace(trust, state="trusted")
    project_runs = trust is None or trust.runs
    if project is not None and trust is not None and trust.cwd_bound:
        reads = [_bind_to_cwd(r, project, set(trust.cwd_bound)) for r in reads]
    per_level: list[tuple[Level, list[AgentHook]]] = []
    disable_all: set[str] = set()
    managed_only = False
    for r in reads:
        counts = project_runs or not r.level.project
        hooks = r.hooks
        if counts and r.switches.get("disableAllHooks") is True:
            disable_all.add(r.level.name)
        if r.level.name == "managed" and r.switches.get("allowManagedHooksOnly") is True:
            managed_only = True
        if counts and "hooksConfig" in SPECS[agent].switches:
            hooks = _gemini_disabled(r.switches, hooks)
        per_level.append((r.level, hooks))
    if "managed" in disable_all:
        per_level = []
    elif disable_all or managed_only:
        per_level = [(lv, hs) for lv, hs in per_level if lv.name == "managed"]
    trusted: list[AgentHook] = []
    held: list[AgentHook] = []
    seen: set[tuple[object, ...]] = set()
    for level, hooks in per_level:
        for hook in hooks:
            if level.project and not project_runs:
                held.append(hook)
                continue
            key = hook.identity()
            if key in seen and not SPECS[agent].runs_duplicates:
                continue
            seen.add(key)
            trusted.append(hook)
    if trust is not None:
        unreadable = {name for r in reads for name, _ in r.unreadable}
        for name, reason in trust.refused:
            if name in unreadable:
                continue  # its read problem says it already
            problems.append(
                ConfigProblem(
                    name,
                    f"{reason}; the project's {agent} hooks cannot be trusted",
                    severity="warning",
                )
            )
    if held and trust is not None:
        problems.append(
            ConfigProblem(
                held[0].source, held_back_message(trust, agent, len(held)), severity="warning"
            )
        )
    from .tamper import alarms as tamper_alarms

    alarms = tamper_alarms(agent, reads, project=project, home=home, config_dir=config_dir)
    routed = () if disable_all or managed_only else _routed(agent, reads, project_runs)
    return AgentTable(
        agent=agent,
        project=str(project) if project is not None else None,
        hooks=tuple(trusted),
        untrusted=tuple(held),
        tampered=alarms,
        problems=tuple(problems),
        files=tuple(files),
        trust=trust,
        inputs=tuple(inputs.values()),
        routed=routed,
    )


def _routed(
    agent: AgentName, reads: list[_LevelRead], project_runs: bool
) -> tuple[tuple[str, str], ...]:
    """``(event, scope)`` of every catch-all the agent runs that names the scope of the
    settings file it is in (Gemini's ``hooksConfig.disabled`` counts as for any hook)."""
    found: set[tuple[str, str]] = set()
    for r in reads:
        hooks = r.catch_alls
        if (project_runs or not r.level.project) and "hooksConfig" in SPECS[agent].switches:
            hooks = _gemini_disabled(r.switches, hooks)
        found |= {(h.event, r.level.name) for h in hooks if catch_all_scope(h) == r.level.name}
    return tuple(sorted(found))


def _owned_and_private(directory: Path) -> bool:
    """Whether ``directory`` is the user's own: owned by them, not writable by others, and
    writable by its group only when that group is the user's own (a user-private group)."""
    try:
        st = os.stat(directory)
    except FileNotFoundError:
        return True  # not there: holds nothing, and the search goes on to its parent
    except OSError:
        return False
    if st.st_uid != os.getuid() or st.st_mode & stat.S_IWOTH:
        return False
    return not (st.st_mode & stat.S_IWGRP and st.st_gid != os.getgid())


def find_project(
    cwd: str | os.PathLike[str] | None,
    agent: AgentName,
    *,
    config_dir: Path,
    home: Path,
    declared: str | None = None,
) -> Path | None:
    """The project whose settings the agent reads, for a hook input.

    ``declared`` -- the agent's own variable (``CLAUDE_PROJECT_DIR`` ...), when the caller has
    it -- decides when it names a directory. Else from ``cwd`` up: the search never goes into
    or above a directory the user does not own (nor one others may write, like ``/tmp``), nor
    reaches the home directory (``~/.claude`` is user level); among the directories holding
    the agent's marker (``.claude/``, itself the user's own), the outermost one the user has
    trusted or declined before wins -- a nested ``.claude/`` (a vendored dependency) never hides
    the enclosing project -- else the nearest."""
    if declared and os.path.isabs(declared) and os.path.isdir(declared):
        return Path(os.path.normpath(declared))
    if not cwd:
        return None
    marker = SPECS[agent].project_dir
    start = Path(os.path.abspath(cwd))
    found: list[Path] = []
    for directory in (start, *start.parents):
        if directory == home or not _owned_and_private(directory):
            break
        if (directory / marker).is_dir() and _owned_and_private(directory / marker):
            found.append(directory)
    if len(found) > 1:
        known = read_store(config_dir).workspaces
        for directory in reversed(found):
            if trust_key(directory, agent) in known:
                return directory
    return found[0] if found else None


def _gemini_disabled(doc: Mapping[str, Any], hooks: list[AgentHook]) -> list[AgentHook]:
    config = doc.get("hooksConfig")
    if not isinstance(config, dict):
        return hooks
    if config.get("enabled") is False:
        return []
    disabled = config.get("disabled")
    if isinstance(disabled, list):
        names = {d for d in disabled if isinstance(d, str)}
        return [h for h in hooks if (h.name or h.runs) not in names]
    return hooks
