"""What differs between the agents' hook contracts, as data (see ``docs/agents.md``).

Facts from the agents' own documentation and source (summed up in ``docs/agents.md``): where each
keeps its settings, its event names and their triohooks equivalents, timeout units and defaults, the
handler types it runs, the environment a hook gets, and the tool names its ``if`` rules use.
Pure data and small pure functions: no I/O.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal

import msgspec

from triohooks.config.events import AGENT_EVENTS

from . import agy, cursor

AgentName = Literal["claude", "gemini", "codex", "qwen", "copilot", "cursor", "agy"]
AGENTS: Final[tuple[AgentName, ...]] = (
    "claude",
    "gemini",
    "codex",
    "qwen",
    "copilot",
    "cursor",
    "agy",
)
#: How an agent reads a matcher (:func:`triohooks.agents.config.compile_matcher`).
MatcherStyle = Literal["claude", "codex", "regex", "qwen", "anchored"]
#: The shape of the agent's answer: Claude Code's (``hookSpecificOutput``), Gemini CLI's
#: (top-level ``decision``, ``tool_input``), Copilot CLI's (top-level
#: ``permissionDecision``, ``modifiedArgs``), Cursor's (``permission``, ``user_message``) or
#: Antigravity CLI's (``decision`` always, ``injectSteps``).
AnswerShape = Literal["claude", "gemini", "copilot", "cursor", "agy"]

#: The file an adopted settings file's ``hooks`` object is moved into, beside it.
ADOPTED_NAME: Final = "triohooks-hooks.json"
#: The variable Claude Code's http catch-all takes its bearer token from.
TOKEN_VAR: Final = "TRIOHOOKS_TOKEN"
#: How a catch-all (and the native client handing an event over) starts the Python relay
#: precompiled: ``python -I -S -c RELAY_BOOT DIR AGENT ...`` imports ``relay`` from DIR (the
#: installed ``triohooks/fronts``) through its ``__pycache__`` -- which install writes -- so no
#: start compiles it, then takes DIR off ``sys.path`` again (its other modules are triohooks',
#: not top-level names). Without ``site`` an interpreter starts in a third of the time.
RELAY_BOOT: Final = (
    "import sys;sys.path.insert(0,sys.argv.pop(1));import relay;del sys.path[0];"
    "sys.exit(relay.main())"
)
#: The native relay client an install builds (:mod:`triohooks.fronts.relay_build`), in the
#: user's state dir (:func:`triohooks.config.paths.state_dir`, which the client computes the
#: same way): the catch-alls run it when it is there.
NATIVE_RELAY: Final = "relay"
#: What a project-scope catch-all runs (nothing of this machine in a file teams commit): the
#: native relay client where the user's state dir puts it (``$TRIOHOOKS_STATE_DIR``, else
#: ``$XDG_STATE_HOME/triohooks``, else ``~/.local/state/triohooks``; macOS's
#: ``~/Library/Application Support/triohooks``) when an install built it there, else the console
#: script from PATH, and when neither is there, a block that says so (exit 2 and the reason on
#: stderr: a block to every agent) -- never a "command not found" the agent ignores. The
#: teammate who reads it has no triohooks: it names where to find how to install it.
#: Written with plain ``$NAME`` expansions only, never ``${NAME:-...}``: Gemini CLI and Qwen Code
#: substitute ``$NAME`` and ``${NAME:-default}`` in settings strings when they load them, one
#: level deep, so a nested default would reach the shell cut in two; a plain ``$NAME`` they
#: replace with the value the shell would have given it.
PORTABLE_RELAY: Final = (
    'triohooks_client="$TRIOHOOKS_STATE_DIR/relay"; '
    '[ -n "$TRIOHOOKS_STATE_DIR" ] || triohooks_client="$XDG_STATE_HOME/triohooks/relay"; '
    '[ -x "$triohooks_client" ] || triohooks_client="$HOME/.local/state/triohooks/relay"; '
    '[ -x "$triohooks_client" ] || '
    'triohooks_client="$HOME/Library/Application Support/triohooks/relay"; '
    '[ -x "$triohooks_client" ] && exec "$triohooks_client" {agent}{event} --timeout '
    "{timeout}{scope}; "
    "command -v triohooks-relay >/dev/null 2>&1 && exec triohooks-relay {agent}{event} --timeout "
    "{timeout}{scope}; echo 'triohooks-relay is not on PATH: the {agent} hooks of this project "
    "run through triohooks; install triohooks (its docs/getting-started.md, Install) or remove "
    "them' >&2; exit 2"
)
#: What a user-scope catch-all runs: the native relay client this install built in the user's
#: state dir, else this install's Python relay, precompiled (:data:`RELAY_BOOT`), else a block
#: that says it is gone.
LOCAL_RELAY: Final = (
    "[ -x {native} ] && exec {native} {agent}{event} --timeout {timeout}{scope}; "
    "[ -x {python} ] && exec {python} -I -S -c '" + RELAY_BOOT + "' {relay_dir} {agent}{event} "
    "--timeout {timeout}{scope}; "
    "echo 'triohooks is no longer installed where your {agent} hooks expect it; reinstall it, "
    "then run triohooks {agent} install --scope user again' >&2; exit 2"
)
#: Catch-alls an older triohooks wrote, still ours -- uninstall and a refreshing install take
#: them: the project and user forms before the native client (which name their scope), and the
#: project form before ``--scope`` (another install hint; its user catch-all was the user form
#: naming no scope), which is reported, since it cannot say whose hooks it answers for
#: (:func:`triohooks.agents.config.tampered`). A form without ``{scope}`` matches only as one
#: that names none.
LEGACY_RELAYS: Final = (
    "command -v triohooks-relay >/dev/null 2>&1 && exec triohooks-relay {agent}{event} --timeout "
    "{timeout}{scope}; echo 'triohooks-relay is not on PATH: the {agent} hooks of this project "
    "run through triohooks; install triohooks (its docs/getting-started.md, Install) or remove "
    "them' >&2; exit 2",
    "[ -x {python} ] && exec {python} -I -S {script} {agent}{event} --timeout {timeout}{scope}; "
    "echo 'triohooks is no longer installed where your {agent} hooks expect it; reinstall it, "
    "then run triohooks {agent} install --scope user again' >&2; exit 2",
    "command -v triohooks-relay >/dev/null 2>&1 && exec triohooks-relay {agent}{event} --timeout "
    "{timeout}; echo 'triohooks-relay is not on PATH: the {agent} hooks of this project run "
    "through triohooks; install it (pip install triohooks) or remove them' >&2; exit 2",
)
#: The settings levels an install writes its catch-alls into (``--scope``); each catch-all
#: names its own, so that of two installs of one agent each answers for its own hooks.
SCOPES: Final = ("user", "project")


def scope_arg(scope: str | None) -> str:
    """The relay's ``--scope`` words for a catch-all installed at ``scope`` (or nothing: a
    plugin's, which belongs to no settings level)."""
    return f" --scope {scope}" if scope is not None else ""


def scope_of_level(level: str) -> str:
    """The install scope a settings level belongs to: Claude's ``local`` settings are the
    project's (their adopted hooks are the project's file); other levels are their own."""
    return "project" if level == "local" else level


#: Agents whose hook input does not name the event (Copilot CLI's and Antigravity CLI's
#: camelCase input): their catch-alls name it, ``triohooks-relay copilot --event preToolUse``.
EVENT_ARG_AGENTS: Final = frozenset({"copilot", "agy"})


def event_arg(agent: str, event: str) -> str:
    """The relay's ``--event`` words for ``agent``'s catch-all of ``event`` (or nothing)."""
    return f" --event {event}" if agent in EVENT_ARG_AGENTS else ""


def timeout_value(agent: AgentName, timeout: float) -> int | float:
    """A handler's ``timeout`` (in the agent's units) as written into its file: a whole number as
    an integer, else to the millisecond -- rounded up to a whole number where the agent takes
    no fraction (:attr:`AgentSpec.whole_timeouts`)."""
    if SPECS[agent].whole_timeouts:
        return math.ceil(timeout)
    return int(timeout) if float(timeout).is_integer() else round(timeout, 3)


def entry(agent: AgentName, event: str, handler: dict[str, Any]) -> dict[str, Any]:
    """One entry of ``event``'s list in ``agent``'s hooks file holding ``handler`` for every
    call: the handler itself where the agent takes flat handlers, else a matcher group (with
    the catch-all matcher ``""`` where the agent takes both forms: Antigravity CLI's)."""
    spec = SPECS[agent]
    if spec.flat_hooks and event not in spec.group_events:
        return handler
    return {"matcher": "", "hooks": [handler]} if spec.group_events else {"hooks": [handler]}


class Level(msgspec.Struct, frozen=True):
    """One settings file an agent reads hooks from."""

    #: managed / user / project / local (Claude); system / user / project (Gemini) ...
    name: str
    path: Path
    #: Project-level files come with a repository: they run only once trusted.
    project: bool


class AgentSpec(msgspec.Struct, frozen=True, kw_only=True):
    name: AgentName
    #: What users call it (``Claude Code``).
    display: str
    #: The agent's event name -> the triohooks event it is (absent: no equivalent; its hooks
    #: still run when the agent fires it).
    events: dict[str, str]
    #: Seconds per unit of the config's ``timeout``.
    timeout_unit_s: float
    #: Default timeout of a command hook, in seconds.
    default_timeout_s: float
    #: Handler ``type`` values this agent runs (others are reported, never silently dropped).
    handler_types: frozenset[str]
    #: The project directory that marks a project root (``.claude``).
    project_dir: str
    #: Environment variables naming the project directory.
    project_env: tuple[str, ...]
    #: Events whose hooks the agent accepts only as ``command`` handlers.
    command_only_events: frozenset[str] = frozenset()
    matcher_style: MatcherStyle = "claude"
    answer: AnswerShape = "claude"
    #: Settings keys that turn hooks off: honoured only from levels that are trusted, and part
    #: of what trust covers at the project level.
    switches: tuple[str, ...] = ()
    #: A command hook's ``timeout`` at or above this is read as milliseconds (Qwen Code's
    #: compatibility rule); None: never.
    command_ms_from: float | None = None
    #: Default timeouts of the other handler types, in seconds.
    type_timeouts_s: dict[str, float] = {}
    #: Does the agent run every copy of an identical handler (Codex, measured), or one?
    runs_duplicates: bool = False
    #: Its event lists may hold handlers themselves, each with its own matcher (Copilot CLI,
    #: Cursor, Antigravity CLI), beside Claude's groups.
    flat_hooks: bool = False
    #: A new hooks file of its starts ``{"version": 1}`` (Copilot CLI, Cursor).
    versioned: bool = False
    #: Events whose entries must be matcher groups though the agent takes flat handlers
    #: elsewhere (Antigravity CLI's tool events); empty: its catch-alls are all of one form.
    group_events: frozenset[str] = frozenset()
    #: The scope ``install`` and ``uninstall`` take when none is said.
    default_scope: str = "project"
    #: Why ``install`` cannot adopt its project-scope file (Antigravity CLI's is triohooks' own
    #: workspace config file); None: it can.
    no_project_install: str | None = None
    #: Its handler's ``timeout`` must be a whole number (Antigravity CLI drops the whole file
    #: for a fraction): a catch-all's is rounded up.
    whole_timeouts: bool = False
    #: Can a hook stop a prompt? (Copilot CLI reads no answer to ``userPromptSubmitted``: a
    #: prompt the hooks refused goes on, so triohooks denies that turn's tool calls instead.)
    blocks_prompts: bool = True
    #: Does a hook's ``ask`` put the call to the user, headless too? (Codex counts an ask as
    #: a failed hook and runs the call; Gemini CLI's hangs a ``-p`` session; Qwen Code's and
    #: Copilot CLI's are not checked): where not, triohooks answers a deny instead.
    asks: bool = False
    #: Does a hook's pre-tool ``allow`` let the call run without the agent's own permission
    #: prompt, by the agent's documented contract (Claude Code's ``permissionDecision``,
    #: Cursor's ``permission``)? Where it does, a call a built-in guard proved is sent as one
    #: (:func:`~triohooks.combine.outcome.approved`). Where not, no allow is sent: no
    #: decision (Codex fails a reply with an ``allow`` alone; Copilot CLI still asks the user
    #: after one -- copilot-cli #2643; Gemini CLI and Qwen Code document none that skips
    #: their confirmation).
    allows: bool = False
    #: Events (Claude Code's names) on which the agent itself denies the call when one of its
    #: hooks fails -- exits other than 0 and 2, dies by a signal, cannot start -- and the words
    #: it says (Copilot CLI: "hook errored"; measured). A timeout is no such failure there.
    failure_denies: dict[str, str] = {}
    #: Events on which an exit 0 whose stdout is not JSON is a failed hook, not plain text
    #: (Copilot CLI's permission request, measured; Cursor, whose hooks answer JSON only).
    unreadable_fails: frozenset[str] = frozenset()
    #: A hook that runs out of time is a failure :attr:`failure_denies` covers too (Antigravity
    #: CLI, reported: a hook it killed denies the call).
    timeout_denies: bool = False
    #: The events on which the agent ignores a handler's ``onFailure: "block"`` (Claude Code:
    #: those a block would keep going); None: the agent has no such key (measured: only Claude
    #: Code honours it).
    on_failure_ignored: frozenset[str] | None = None


SPECS: Final[dict[AgentName, AgentSpec]] = {
    "claude": AgentSpec(
        name="claude",
        display="Claude Code",
        events=AGENT_EVENTS["claude"],
        timeout_unit_s=1.0,
        default_timeout_s=600.0,
        handler_types=frozenset({"command", "http", "prompt", "agent"}),
        project_dir=".claude",
        project_env=("CLAUDE_PROJECT_DIR",),
        command_only_events=frozenset({"SessionStart", "Setup"}),
        switches=("disableAllHooks", "allowManagedHooksOnly"),
        asks=True,
        allows=True,
        on_failure_ignored=frozenset({"Stop", "SubagentStop", "TaskCompleted", "TeammateIdle"}),
    ),
    "gemini": AgentSpec(
        name="gemini",
        display="Gemini CLI",
        events=AGENT_EVENTS["gemini"],
        timeout_unit_s=0.001,
        default_timeout_s=60.0,
        handler_types=frozenset({"command"}),
        project_dir=".gemini",
        project_env=("GEMINI_PROJECT_DIR", "CLAUDE_PROJECT_DIR"),
        matcher_style="regex",
        answer="gemini",
        switches=("hooksConfig",),
    ),
    "codex": AgentSpec(
        name="codex",
        display="Codex CLI",
        events=AGENT_EVENTS["codex"],
        timeout_unit_s=1.0,
        default_timeout_s=600.0,
        handler_types=frozenset({"command"}),
        project_dir=".codex",
        project_env=(),
        matcher_style="codex",
        runs_duplicates=True,
    ),
    "qwen": AgentSpec(
        name="qwen",
        display="Qwen Code",
        events=AGENT_EVENTS["qwen"],
        timeout_unit_s=1.0,
        default_timeout_s=60.0,
        handler_types=frozenset({"command", "http", "prompt"}),
        project_dir=".qwen",
        project_env=("QWEN_PROJECT_DIR", "CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR"),
        matcher_style="qwen",
        switches=("disableAllHooks",),
        command_ms_from=1000.0,
        type_timeouts_s={"http": 600.0, "prompt": 30.0},
    ),
    "copilot": AgentSpec(
        name="copilot",
        display="Copilot CLI",
        events=AGENT_EVENTS["copilot"],
        timeout_unit_s=1.0,
        default_timeout_s=30.0,
        handler_types=frozenset({"command"}),
        project_dir=".github",
        project_env=("COPILOT_PROJECT_DIR", "CLAUDE_PROJECT_DIR"),
        matcher_style="anchored",
        answer="copilot",
        switches=("disableAllHooks",),
        flat_hooks=True,
        versioned=True,
        blocks_prompts=False,
        failure_denies={
            "PreToolUse": "hook errored",
            "PermissionRequest": "Permission request hook failed",
        },
        unreadable_fails=frozenset({"PermissionRequest"}),
    ),
    "cursor": AgentSpec(
        name="cursor",
        display="Cursor",
        events=AGENT_EVENTS["cursor"],
        timeout_unit_s=1.0,
        default_timeout_s=30.0,
        handler_types=frozenset({"command"}),
        project_dir=".cursor",
        project_env=("CURSOR_PROJECT_DIR", "CLAUDE_PROJECT_DIR"),
        matcher_style="regex",
        answer="cursor",
        flat_hooks=True,
        versioned=True,
        asks=True,
        allows=True,
        unreadable_fails=frozenset(cursor.CLAUDE_NAMES.values()),
    ),
    # Antigravity CLI: by its reported contract (docs/agents.md, "Antigravity CLI").
    "agy": AgentSpec(
        name="agy",
        display="Antigravity CLI",
        events=AGENT_EVENTS["agy"],
        timeout_unit_s=1.0,
        default_timeout_s=60.0,
        handler_types=frozenset({"command"}),
        project_dir=".agents",
        project_env=(),
        matcher_style="regex",
        answer="agy",
        flat_hooks=True,
        group_events=agy.GROUP_EVENTS,
        whole_timeouts=True,
        default_scope="user",
        no_project_install=(
            "Antigravity CLI's project hooks file is .agents/hooks.json, which is triohooks' own "
            "workspace config file: triohooks cannot adopt it; install at --scope user (its "
            "catch-alls run for every project)"
        ),
        asks=True,
        # A call's answer without a decision it reads denies the call there.
        unreadable_fails=frozenset({"PreToolUse"}),
        failure_denies={"PreToolUse": "Tool call denied by pre-tool hook"},
        timeout_denies=True,
    ),
}
#: Copilot CLI reads every ``*.json`` in its hooks directories; the file install writes is one.
COPILOT_HOOKS_DIR: Final = "hooks"


def home_dir(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    return Path(env.get("HOME") or os.path.expanduser("~"))


def levels(agent: AgentName, project: Path | None, home: Path) -> list[Level]:
    """The settings files ``agent`` reads hooks from, lowest precedence first (the order their
    hooks run in, and the order that decides which rewrite wins). For Copilot CLI, which reads
    every ``*.json`` of its hooks directories, the file ``install`` writes (the others are
    found by :func:`triohooks.agents.config.level_files`)."""
    out: list[Level] = []
    if agent == "claude":
        out.append(Level("managed", Path("/etc/claude-code/managed-settings.json"), False))
        out.append(Level("user", home / ".claude" / "settings.json", False))
        if project is not None:
            out.append(Level("project", project / ".claude" / "settings.json", True))
            out.append(Level("local", project / ".claude" / "settings.local.json", True))
    elif agent == "gemini":
        out.append(Level("system", Path("/etc/gemini-cli/settings.json"), False))
        out.append(Level("user", home / ".gemini" / "settings.json", False))
        if project is not None:
            out.append(Level("project", project / ".gemini" / "settings.json", True))
    elif agent == "qwen":
        out.append(Level("system", Path("/etc/qwen-code/settings.json"), False))
        out.append(Level("user", home / ".qwen" / "settings.json", False))
        if project is not None:
            out.append(Level("project", project / ".qwen" / "settings.json", True))
    elif agent == "cursor":
        out.append(Level("user", home / ".cursor" / "hooks.json", False))
        if project is not None:
            out.append(Level("project", project / ".cursor" / "hooks.json", True))
        out.append(Level("managed", Path("/etc/cursor/hooks.json"), False))
    elif agent == "agy":
        out.append(Level("user", home / ".gemini" / "config" / "hooks.json", False))
        if project is not None:
            out.append(Level("project", project / ".agents" / "hooks.json", True))
    elif agent == "copilot":
        out.append(Level("user", home / ".copilot" / "hooks" / "triohooks.json", False))
        if project is not None:
            out.append(Level("project", project / ".github" / "hooks" / "triohooks.json", True))
    else:
        out.append(Level("user", home / ".codex" / "hooks.json", False))
        if project is not None:
            out.append(Level("project", project / ".codex" / "hooks.json", True))
    return out


def adopted_path(agent: AgentName, settings: Path) -> Path:
    """Where ``install`` moves the hooks of ``settings``: beside it, or for Copilot CLI beside
    its hooks directory (a file in it would be read as hooks by Copilot itself)."""
    if agent == "copilot":
        return settings.parent.parent / ADOPTED_NAME
    return settings.with_name(ADOPTED_NAME)


def hook_environment(
    agent: AgentName, project: Path | None, payload: Mapping[str, object]
) -> dict[str, str]:
    """The variables the agent itself sets for a hook, on top of the host's environment."""
    env: dict[str, str] = {}
    root = str(project) if project is not None else str(payload.get("cwd") or os.getcwd())
    for name in SPECS[agent].project_env:
        env[name] = root
    if agent == "claude":
        env["CLAUDECODE"] = "1"
    elif agent == "copilot":
        env["COPILOT_CLI"] = "1"
    elif agent == "gemini":
        session = payload.get("session_id")
        if isinstance(session, str):
            env["GEMINI_SESSION_ID"] = session
    return env


def http_handler(
    agent: AgentName, port: int, timeout: float, scope: str | None = None
) -> dict[str, Any]:
    """The http catch-all (Claude Code only): ``POST`` to ``serve``'s endpoint with the token,
    naming the scope it was installed at (``?scope=user``) as the relay's ``--scope`` does."""
    query = f"?scope={scope}" if scope is not None else ""
    return {
        "type": "http",
        "url": f"http://127.0.0.1:{port}/{agent}/v1/hook{query}",
        "headers": {"Authorization": f"Bearer ${{{TOKEN_VAR}}}"},
        "allowedEnvVars": [TOKEN_VAR],
        "timeout": timeout,
    }
