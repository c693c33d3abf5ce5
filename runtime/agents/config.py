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

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import msgspec

from triohooks.config.model import ArgsHandler, CommandHandler, ConfigProblem, Handler, TrustInfo
from triohooks.config.paths import UnreadableFileError, read_regular_file
from triohooks.config.trust import trust_inputs, trust_state
from triohooks.match.ifrules import IfRule, IfRuleError, parse_if_rule

from .spec import ADOPTED_NAME, SPECS, AgentName, Level, levels

#: Largest settings file read (a settings.json is a few KiB).
MAX_SETTINGS_BYTES: Final = 1024 * 1024
#: Claude: a matcher of only these characters is an exact name or a ``|``/``,`` list.
_PLAIN_MATCHER: Final = re.compile(r"[A-Za-z0-9_\- ,|]*\Z")
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
#: A catch-all hook an adoption wrote: an http hook to our endpoint or the relay command.
_OURS_URL: Final = re.compile(r"/(claude|gemini|codex)/v1/hook\b")
_OURS_COMMAND: Final = re.compile(
    r"(^|[\s/'\"])(triohooks-relay|triohooks\.fronts\.relay)\s+(claude|gemini|codex)\b"
    r"|relay\.main\(\[['\"](claude|gemini|codex)['\"]\]\)"
    r"|/fronts/relay\.sh'?\s+(claude|gemini|codex)\b"
)


class Matcher(msgspec.Struct, frozen=True):
    """A compiled matcher: ``None`` names and pattern match everything."""

    text: str | None
    names: frozenset[str] | None = None
    pattern: Any = None

    def matches(self, value: object) -> bool:
        if self.names is None and self.pattern is None:
            return True
        if not isinstance(value, str):
            return False
        if self.names is not None:
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
    name: str | None = None
    timeout_s: float
    if_rule: str | None = None
    compiled_if: IfRule | None = None
    #: triohooks extension (``"failClosed": true``): a failure or timeout blocks.
    fail_closed: bool = False
    #: Claude ``async``: run in the background, its reply ignored.
    background: bool = False
    #: Gemini ``sequential`` on its matcher group.
    sequential: bool = False

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
        return (self.event, self.type, self.command, self.args, self.url, self.prompt)

    def as_handler(self) -> Handler | None:
        """The process it runs, for trust hashing."""
        if self.command is not None:
            return CommandHandler(self.command)
        if self.args:
            return ArgsHandler(self.args)
        return None


class AgentTable(msgspec.Struct, frozen=True):
    agent: AgentName
    project: str | None
    hooks: tuple[AgentHook, ...] = ()
    #: Project-level hooks held back: not trusted.
    untrusted: tuple[AgentHook, ...] = ()
    problems: tuple[ConfigProblem, ...] = ()
    files: tuple[str, ...] = ()
    trust: TrustInfo | None = None
    #: File signatures the table was built from (path, mtime_ns, size, inode), to reuse it.
    signature: tuple[tuple[str, int, int, int], ...] = ()

    def for_event(self, event: str, *, adopted_only: bool = False) -> list[AgentHook]:
        return [h for h in self.hooks if h.event == event and (h.adopted or not adopted_only)]


def compile_matcher(agent: AgentName, text: object) -> Matcher:
    """Claude (and Codex): absent, ``""`` or ``*`` match all; only ``[A-Za-z0-9_\\- ,|]`` is an
    exact name or a ``|``/``,`` list; anything else an unanchored regex. Gemini: a regex.
    Raises ValueError for a matcher that is not a string or does not compile."""
    if text is None:
        return Matcher(None)
    if not isinstance(text, str):
        raise ValueError("must be a string")
    if text in ("", "*"):
        return Matcher(text)
    if agent != "gemini" and _PLAIN_MATCHER.match(text):
        names = frozenset(n.strip() for n in re.split(r"[|,]", text) if n.strip())
        return Matcher(text, names=names)
    import re2

    try:
        return Matcher(text, pattern=re2.compile(text))
    except re2.error as exc:
        raise ValueError(f"not a regular expression we can run in linear time: {exc}") from None


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
    value = raw.get("timeout")
    if value is None:
        return spec.default_timeout_s
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        at("timeout", "must be a positive number")
        return spec.default_timeout_s
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
        fail_closed=raw.get("failClosed") is True,
        background=raw.get("async") is True,
        sequential=sequential,
        name=raw.get("name") if isinstance(raw.get("name"), str) else None,
        **fields,
    )


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
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            problems.append(
                ConfigProblem(source, "must be a list of matcher groups", field=str(event))
            )
            continue
        for g, group in enumerate(groups):
            where = f"{event}[{g}]"
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
            sequential = group.get("sequential") is True
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


def is_ours(hook: AgentHook) -> bool:
    """A catch-all hook an adoption wrote (it points at triohooks): never run it from here."""
    if hook.url is not None and _OURS_URL.search(hook.url):
        return True
    text = hook.command if hook.command is not None else " ".join(hook.args or ())
    return bool(text) and _OURS_COMMAND.search(text) is not None


def read_json_object(path: Path, problems: list[ConfigProblem]) -> dict[str, Any] | None:
    """A settings file as a JSON object; None when missing (silent) or broken (a problem)."""
    try:
        data = read_regular_file(path, MAX_SETTINGS_BYTES)
    except FileNotFoundError:
        return None
    except UnreadableFileError as exc:
        problems.append(ConfigProblem(str(path), f"{exc.reason}; skipped", severity="warning"))
        return None
    try:
        value = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        problems.append(
            ConfigProblem(str(path), f"not valid JSON, skipped: {exc}", severity="warning")
        )
        return None
    if not isinstance(value, dict):
        problems.append(
            ConfigProblem(str(path), "must be a JSON object; skipped", severity="warning")
        )
        return None
    return value


def _codex_toml_hooks(home: Path, problems: list[ConfigProblem]) -> tuple[str, object] | None:
    path = home / ".codex" / "config.toml"
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
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        problems.append(
            ConfigProblem(str(path), f"not valid TOML, skipped: {exc}", severity="warning")
        )
        return None
    return (str(path), doc["hooks"]) if "hooks" in doc else None


def _signature(paths: Sequence[Path]) -> tuple[tuple[str, int, int, int], ...]:
    out = []
    for p in paths:
        try:
            st = os.stat(p)
            out.append((str(p), st.st_mtime_ns, st.st_size, st.st_ino))
        except OSError:
            out.append((str(p), 0, -1, 0))
    return tuple(out)


def candidate_files(agent: AgentName, project: Path | None, home: Path) -> list[Path]:
    """Every file whose change changes the table (for reuse checks)."""
    files: list[Path] = []
    for level in levels(agent, project, home):
        files += [level.path, level.path.with_name(ADOPTED_NAME)]
    if agent == "codex":
        files.append(home / ".codex" / "config.toml")
    return files


def load_agent_table(
    agent: AgentName,
    *,
    project: Path | None,
    home: Path,
    config_dir: Path,
    trust_override: bool = False,
    trust_file: Path | None = None,
) -> AgentTable:
    """Every hook ``agent`` would run for this project, merged as it merges them, plus problems
    and trust. Blocking file I/O: call it from a worker thread. ``trust_file`` joins the files
    whose change makes the table stale (:func:`table_is_current`)."""
    problems: list[ConfigProblem] = []
    watched = candidate_files(agent, project, home) + ([trust_file] if trust_file else [])
    signature = _signature(watched)
    per_level: list[tuple[Level, list[AgentHook]]] = []
    disable_all: set[str] = set()
    managed_only = False
    files: list[str] = []
    for level in levels(agent, project, home):
        hooks: list[AgentHook] = []
        doc = read_json_object(level.path, problems)
        if doc is not None:
            files.append(str(level.path))
            if agent == "codex" and level.path.name == "hooks.json":
                hooks_obj = doc.get("hooks", doc)
            else:
                hooks_obj = doc.get("hooks")
            if hooks_obj is not None:
                hooks += parse_hooks(agent, level, str(level.path), hooks_obj, problems)
            if doc.get("disableAllHooks") is True:
                disable_all.add(level.name)
            if level.name == "managed" and doc.get("allowManagedHooksOnly") is True:
                managed_only = True
            if agent == "gemini":
                hooks = _gemini_disabled(doc, hooks)
        adopted_path = level.path.with_name(ADOPTED_NAME)
        adopted = read_json_object(adopted_path, problems)
        if adopted is not None:
            files.append(str(adopted_path))
            hooks += parse_hooks(agent, level, str(adopted_path), adopted, problems, adopted=True)
        if agent == "codex" and level.name == "user":
            extra = _codex_toml_hooks(home, problems)
            if extra is not None:
                files.append(extra[0])
                hooks += parse_hooks(agent, level, extra[0], extra[1], problems)
        per_level.append((level, hooks))
    if "managed" in disable_all:
        per_level = []
    elif disable_all or managed_only:
        per_level = [(lv, hs) for lv, hs in per_level if lv.name == "managed"]
    trusted: list[AgentHook] = []
    held: list[AgentHook] = []
    trust: TrustInfo | None = None
    project_hooks = [h for lv, hs in per_level if lv.project for h in hs]
    if project is not None:
        project_files = [Path(f) for f in files if _under(Path(f), project, agent)]
        handlers = [h for h in (x.as_handler() for x in project_hooks) if h is not None]
        inputs = trust_inputs(project_files, handlers, project)
        trust = trust_state(config_dir, project, inputs.digest, inputs.files, dialect=agent)
        if trust_override and trust.state != "none":
            trust = TrustInfo("trusted", trust.workspace, trust.digest, trust.files)
    seen: set[tuple[object, ...]] = set()
    for level, hooks in per_level:
        for hook in hooks:
            if level.project and (trust is None or trust.state != "trusted"):
                held.append(hook)
                continue
            key = hook.identity()
            if key in seen:
                continue
            seen.add(key)
            trusted.append(hook)
    if held and trust is not None:
        problems.append(
            ConfigProblem(
                held[0].source,
                f"{len(held)} project hook(s) not run: the project's {agent} hooks are "
                f"{trust.state}, not trusted (run `triohooks {agent} trust` or "
                f"`triohooks {agent} install --scope project`)",
                severity="warning",
            )
        )
    return AgentTable(
        agent=agent,
        project=str(project) if project is not None else None,
        hooks=tuple(trusted),
        untrusted=tuple(held),
        problems=tuple(problems),
        files=tuple(files),
        trust=trust,
        signature=signature,
    )


def _under(path: Path, project: Path, agent: AgentName) -> bool:
    try:
        path.relative_to(project / SPECS[agent].project_dir)
    except ValueError:
        return False
    return True


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


def table_is_current(table: AgentTable, home: Path, trust_file: Path | None = None) -> bool:
    """Whether no file the table was built from changed since (one ``stat`` each)."""
    project = Path(table.project) if table.project is not None else None
    watched = candidate_files(table.agent, project, home) + ([trust_file] if trust_file else [])
    return _signature(watched) == table.signature
