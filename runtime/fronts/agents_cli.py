"""``triohooks claude|gemini|codex ...``: adopt an agent's hooks, and inspect them.

``install [--scope project|user] [--dry-run] [--transport http|relay] [--port N]`` moves the
hooks object of that scope's settings file into ``triohooks-hooks.json`` and routes every event
to triohooks (:mod:`triohooks.agents.adopt`); ``uninstall`` puts it back byte for byte.
``list`` shows every hook the agent has, level by level, what triohooks runs and what it does
not support; ``validate`` lists problems (exit 1 if any); ``trust`` trusts (or declines) the
project-level files as they are now. Exit 0 on success, 1 on any error (one line on stderr).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Literal

import msgspec

from triohooks.agents.adopt import AdoptError, apply, plan_install, plan_uninstall
from triohooks.agents.config import (
    AgentTable,
    catch_all_scope,
    catch_alls,
    find_project,
    load_agent_table,
)
from triohooks.agents.spec import AGENTS, SCOPES, SPECS, AgentName, home_dir, scope_of_level
from triohooks.config.paths import global_config_dir, state_dir
from triohooks.config.trust import TrustRefusedError, record_trust

from .agent_checks import check_agent
from .commands import describe_unseen, print_covered


def _add(sub: argparse._SubParsersAction[Any], agent: AgentName) -> None:
    p = sub.add_parser(agent, help=f"run {SPECS[agent].display}'s own hooks through triohooks")
    actions = p.add_subparsers(dest="action", required=True)

    def common(q: argparse.ArgumentParser) -> None:
        q.add_argument("--workspace", type=Path, default=None, help="the project (default: cwd)")
        q.add_argument("--config-dir", type=Path, default=None, help="triohooks config dir")

    scope = SPECS[agent].default_scope
    q = actions.add_parser("install", help="route the agent's hooks through triohooks")
    q.add_argument("--scope", choices=("project", "user"), default=scope)
    q.add_argument("--dry-run", action="store_true", help="print the change, write nothing")
    q.add_argument(
        "--transport",
        choices=("http", "relay"),
        default="relay",
        help="relay (default): a triohooks-relay command hook per event, which fails closed and "
        "starts `triohooks serve` when none runs; http: Claude Code's http hooks to a running "
        "`triohooks serve` (no spawn per call, but the call goes through when serve is down)",
    )
    q.add_argument("--port", type=int, default=8765, help="serve's port for http hooks")
    common(q)
    q = actions.add_parser("uninstall", help="restore the settings file")
    q.add_argument("--scope", choices=("project", "user"), default=scope)
    q.add_argument("--dry-run", action="store_true", help="print the change, write nothing")
    common(q)
    q = actions.add_parser("list", help="every hook the agent has, and what triohooks runs")
    q.add_argument("--json", action="store_true", help="machine-readable output")
    common(q)
    q = actions.add_parser("validate", help="problems in the agent's hook config")
    common(q)
    q = actions.add_parser("trust", help="trust the project's agent hooks as they are now")
    q.add_argument("--decline", action="store_true", help="record that you decline them")
    q.add_argument(
        "--cover",
        action="append",
        metavar="PATH",
        help=(
            "a file or directory (relative to the project) for trust to hash besides what it "
            "finds: your answer for commands trust cannot see into (repeatable)"
        ),
    )
    common(q)
    if agent == "claude":
        q = actions.add_parser(
            "plugin", help="write a Claude Code plugin that routes every event to triohooks"
        )
        q.add_argument(
            "--out",
            type=Path,
            default=Path("triohooks-plugin"),
            help="where (default: ./triohooks-plugin)",
        )
        q.add_argument(
            "--local",
            action="store_true",
            help="run this install's relay (default: triohooks-relay from PATH, to share)",
        )
        q.add_argument("--force", action="store_true", help="overwrite the plugin's files")


def add_claude_command(sub: argparse._SubParsersAction[Any]) -> None:
    _add(sub, "claude")


def add_gemini_command(sub: argparse._SubParsersAction[Any]) -> None:
    _add(sub, "gemini")


def add_codex_command(sub: argparse._SubParsersAction[Any]) -> None:
    _add(sub, "codex")


def add_qwen_command(sub: argparse._SubParsersAction[Any]) -> None:
    _add(sub, "qwen")


def add_copilot_command(sub: argparse._SubParsersAction[Any]) -> None:
    _add(sub, "copilot")


def add_cursor_command(sub: argparse._SubParsersAction[Any]) -> None:
    _add(sub, "cursor")


def add_agy_command(sub: argparse._SubParsersAction[Any]) -> None:
    _add(sub, "agy")


def _places(args: argparse.Namespace) -> tuple[AgentName, Path, Path, Path]:
    agent: AgentName = args.command
    workspace = (args.workspace or Path.cwd()).resolve()
    config_dir = args.config_dir or global_config_dir()
    return agent, workspace, home_dir(), config_dir


def _project(agent: AgentName, workspace: Path, home: Path, config_dir: Path) -> Path:
    return find_project(workspace, agent, config_dir=config_dir, home=home) or workspace


def _table(args: argparse.Namespace) -> AgentTable:
    agent, workspace, home, config_dir = _places(args)
    project = _project(agent, workspace, home, config_dir)
    return load_agent_table(agent, project=project, home=home, config_dir=config_dir)


def cmd_agent(args: argparse.Namespace) -> int:
    try:
        return _ACTIONS[args.action](args)
    except AdoptError as exc:
        print(f"triohooks: {exc}", file=sys.stderr)
        return 1
    except TrustRefusedError as exc:
        print(f"triohooks: {exc}", file=sys.stderr)
        return 1


def _install(args: argparse.Namespace) -> int:
    agent, workspace, home, config_dir = _places(args)
    from . import relay

    plan = plan_install(
        agent,
        args.scope,
        home=home,
        project=workspace,
        transport=args.transport,
        port=args.port,
        relay_script=str(Path(relay.__file__).resolve()),
        config_dir=config_dir,
    )
    notes = _beside(agent, args.scope, workspace, home)
    plan = msgspec.structs.replace(plan, notes=(*plan.notes, *notes))
    code = _carry_out(args, plan, agent, workspace, home, config_dir, "installed")
    if code == 0 and not args.dry_run and any(not r.startswith("POST ") for _, r in plan.routes):
        _prepare_client()
    return code


def _prepare_client() -> None:
    """The catch-alls' relay client: the native one built (or rebuilt when its source, flags or
    interpreter changed), else the Python relay precompiled; a build that fails is a warning."""
    from .relay_build import prepare

    client, warnings = prepare()
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if client.kind == "native":
        print(f"relay client: native, {client.path} ({client.why})")
    else:
        print(f"relay client: the Python relay, {client.path}")


def _beside(agent: AgentName, scope: str, workspace: Path, home: Path) -> list[str]:
    """What an install at ``scope`` meets at the agent's other install scope: its catch-alls
    (then each hook still runs once per call, :mod:`triohooks.agents.shares`, and the install
    says so), or catch-alls of an older triohooks that name no scope (hooks would run twice)."""
    found: dict[tuple[str, str], bool] = {}  # (file, its scope) -> every catch-all names it
    for hook in catch_alls(agent, workspace, home):
        other = scope_of_level(hook.level)
        if other in SCOPES and other != scope:
            named = catch_all_scope(hook) == other
            found[hook.source, other] = found.get((hook.source, other), True) and named
    notes = []
    for (source, other), named in found.items():
        if named:
            notes.append(
                f"{source} routes {SPECS[agent].display} to triohooks too (a {other}-scope "
                "install): each hook still runs once per call -- the user scope's catch-all runs "
                "your triohooks hooks, each scope's catch-all the hooks it moved (docs/agents.md, "
                "two installs of one agent)"
            )
        else:
            notes.append(
                f"{source} holds catch-alls of an older triohooks that name no scope: beside "
                f"this install each hook runs twice per call until `triohooks {agent} install "
                f"--scope {other}` refreshes them"
            )
    return notes


def _uninstall(args: argparse.Namespace) -> int:
    agent, workspace, home, config_dir = _places(args)
    plan = plan_uninstall(agent, args.scope, home=home, project=workspace, config_dir=config_dir)
    return _carry_out(args, plan, agent, workspace, home, config_dir, "uninstalled")


def _carry_out(
    args: argparse.Namespace,
    plan: Any,
    agent: AgentName,
    workspace: Path,
    home: Path,
    config_dir: Path,
    verb: str,
) -> int:
    if args.dry_run:
        sys.stdout.write(plan.diff() or f"{plan.settings}: nothing to change\n")
        for note in plan.notes:
            print(f"note: {note}", file=sys.stderr)
        return 0
    if not plan.changes:
        print(f"{plan.settings}: already {verb}, nothing to change")
        return 0
    apply(plan)
    for change in plan.changes:
        state = "removed" if change.after is None else "written"
        print(f"{state} {change.path}")
    for event, route in plan.routes:
        print(f"  {event} -> {route}")
    if verb == "installed" and plan.scope == "project" and not plan.moves:
        print(
            f"note: {Path(plan.settings).with_name('triohooks-hooks.json')} was there already and "
            f"was not written by this install: it is not trusted on that account. Review it with "
            f"`triohooks {agent} list`, then trust it with `triohooks {agent} trust`",
            file=sys.stderr,
        )
    elif verb == "installed" and plan.scope == "project":
        table = load_agent_table(agent, project=workspace, home=home, config_dir=config_dir)
        if table.trust is not None and table.trust.state != "none":
            try:
                record_trust(config_dir, workspace, table.trust, dialect=agent)
            except TrustRefusedError as exc:
                # Installed all the same: the hooks it moved stay held back, said how to go on.
                print(f"triohooks: not trusted: {exc}", file=sys.stderr)
            else:
                count = len(table.trust.files)
                print(f"trusted the project's {agent} hooks as they are now ({count} file(s)):")
                print_covered(table.trust)
    for note in plan.notes:
        print(f"note: {note}", file=sys.stderr)
    return 0


def _list(args: argparse.Namespace) -> int:
    table = _table(args)
    if args.json:
        sys.stdout.write(msgspec.json.encode(_listing(table)).decode() + "\n")
        return 0
    trust = table.trust.state if table.trust is not None else "none"
    print(f"{table.agent} hooks for {table.project} (project files: {trust})")
    for hook in (*table.hooks, *table.untrusted):
        held = hook in table.untrusted
        runs = (
            "not run: " + (hook.unsupported or "")
            if not hook.supported
            else (
                "held back: not trusted"
                if held
                else ("run by triohooks" if hook.adopted else "run by the agent")
            )
        )
        matcher = hook.matcher.text if hook.matcher.text not in (None, "") else "*"
        print(f"  {hook.event} [{matcher}] {hook.type}: {hook.runs}")
        print(
            f"      {hook.level} {hook.source} {hook.where}; timeout {hook.timeout_s:g} s; {runs}"
        )
    for problem in table.problems:
        print(f"problem: {problem}", file=sys.stderr)
    return 0


def _listing(table: AgentTable) -> dict[str, Any]:
    def view(hook: Any, held: bool) -> dict[str, Any]:
        return {
            "event": hook.event,
            "canonical": hook.canonical,
            "matcher": hook.matcher.text,
            "type": hook.type,
            "runs": hook.runs,
            "level": hook.level,
            "source": hook.source,
            "where": hook.where,
            "timeout_s": hook.timeout_s,
            "if": hook.if_rule,
            "supported": hook.supported,
            "unsupported": hook.unsupported,
            "adopted": hook.adopted,
            "trusted": not held,
        }

    return {
        "agent": table.agent,
        "project": table.project,
        "trust": table.trust.state if table.trust is not None else "none",
        "hooks": [view(h, False) for h in table.hooks] + [view(h, True) for h in table.untrusted],
        "problems": [str(p) for p in table.problems],
    }


def _validate(args: argparse.Namespace) -> int:
    """The config's problems, then the live setup's (agent_checks): exit 1 if any."""
    agent, workspace, home, config_dir = _places(args)
    project = _project(agent, workspace, home, config_dir)
    table = load_agent_table(agent, project=project, home=home, config_dir=config_dir)
    problems = [str(p) for p in table.problems]
    problems += [
        f"{h.source}: {h.where}: {h.unsupported}"
        for h in (*table.hooks, *table.untrusted)
        if not h.supported
    ]
    live = check_agent(agent, project=project, home=home, config_dir=config_dir, state=state_dir())
    for problem in problems:
        print(problem)
    for line in live:
        print(("ok       " if line.ok else "PROBLEM  ") + line.text)
    count = len(problems) + sum(not line.ok for line in live)
    if count:
        print(f"triohooks {table.agent} validate: {count} problem(s)", file=sys.stderr)
        return 1
    installed = "installed" if live else "not installed (no catch-all in its settings)"
    print(
        f"triohooks {table.agent} validate: no problems ({len(table.hooks)} hook(s); {installed})"
    )
    return 0


def _trust(args: argparse.Namespace) -> int:
    agent, workspace, home, config_dir = _places(args)
    project = _project(agent, workspace, home, config_dir)
    table = load_agent_table(
        agent, project=project, home=home, config_dir=config_dir, trust_covers=args.cover
    )
    if table.trust is None or table.trust.state == "none":
        print(f"{project} has no project-level {agent} hooks")
        return 0
    for line in describe_unseen(table.trust):
        print(line)
    decision: Literal["trusted", "declined"] = "declined" if args.decline else "trusted"
    record_trust(config_dir, project, table.trust, decision, dialect=agent)
    print(f"{project}: project {agent} hooks {decision} ({len(table.trust.files)} file(s)):")
    print_covered(table.trust)
    return 0


def _plugin(args: argparse.Namespace) -> int:
    from triohooks.agents.plugin import plugin_files, write_plugin

    from . import relay
    from .cli import version

    files = plugin_files(
        version=version(), local=args.local, relay_script=str(Path(relay.__file__).resolve())
    )
    try:
        written = write_plugin(args.out, files, force=args.force)
    except (ValueError, OSError) as exc:
        print(f"triohooks: {exc}", file=sys.stderr)
        return 1
    for path in written:
        print(f"wrote {path}")
    _prepare_client()
    print(
        f"load it with `claude --plugin-dir {args.out}`, or add it to a plugin marketplace; "
        "then your triohooks hooks answer every Claude Code event"
    )
    return 0


_ACTIONS = {
    "plugin": _plugin,
    "install": _install,
    "uninstall": _uninstall,
    "list": _list,
    "validate": _validate,
    "trust": _trust,
}

assert set(AGENTS) == {"claude", "gemini", "codex", "qwen", "copilot", "cursor", "agy"}
