"""The ``triohooks`` commands that read the config: validate, list, trust, doctor.

The command line proper (:mod:`.cli`) parses and reports; these are imported only when one of
them runs (``fire`` must not pay for them: :mod:`.fire`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Final, Literal

import msgspec

from triohooks.config.model import Hook, HookTable, TrustInfo
from triohooks.config.paths import (
    global_config_dir,
    global_config_files,
    state_dir,
    workspace_config_files,
)
from triohooks.config.system_tier import tier_of
from triohooks.config.table import as_untrusted, load_table
from triohooks.config.trust import (
    TrustRecord,
    TrustRefusedError,
    held_back_message,
    read_store,
    record_trust,
    trust_changes,
)

from .cli import EXIT_OK, EXIT_USAGE, CliError, mask_text, workspace_of


def _load(args: argparse.Namespace, *, trust: bool = False) -> HookTable:
    return load_table(
        workspace=workspace_of(args),
        config_dir=args.config_dir,
        extra_configs=args.configs,
        trust_override=trust,
    )


def cmd_validate(args: argparse.Namespace) -> int:
    """Every problem of the config files, and of the programs their hooks start (``doctor``'s
    file checks, at the hook's file and field); then plainly which hooks run, which trust
    holds back and why, or where hooks go when there are none. Exit 1 on any problem."""
    from triohooks.config.suggest import tool_name_problems

    from .doctor import program_problems

    table = _load(args)
    workspace = Path(table.workspace or ".")
    problems = list(table.problems)
    problems += tool_name_problems(table.hooks)
    problems += [p for h in table.hooks for p in program_problems(h, workspace)]
    trust = table.trust
    if trust is not None:  # a held-back hook's problem is a warning, as its file's are
        problems += [
            as_untrusted(p, trust.state)
            for h in table.untrusted
            for p in (*tool_name_problems((h,)), *program_problems(h, workspace))
        ]
    for problem in problems:
        label = "error" if problem.severity == "error" else "warning"
        print(f"{problem} ({label})", file=sys.stderr)
    if problems:
        print(f"triohooks: {len(problems)} problem(s) in config", file=sys.stderr)
    ok = "" if problems else "ok: "
    if table.errors:
        pass  # nothing runs: the engine refuses a config with errors
    elif table.hooks:
        print(f"{ok}{len(table.hooks)} hook(s) run, from {len(table.files)} file(s)")
    elif not table.untrusted:
        print(f"{ok}no hooks configured; {where_hooks_go(table)}")
    if table.untrusted and trust is not None:
        print(held_back_message(trust, None, len(table.untrusted)))
    observing = [h.id for h in table.hooks if h.mode == "observe"]
    if observing and not table.errors:
        print(
            f"{len(observing)} hook(s) in observe mode (decisions audited as would_block, "
            f"not enforced; `triohooks audit report` sums them up): {', '.join(observing)}"
        )
    for line in tier_lines(table):
        print(line)
    return EXIT_USAGE if problems else EXIT_OK


def tier_lines(table: HookTable) -> list[str]:
    """Each hook's tier, one line a hook in run order, where the system tier holds hooks
    (where it holds none, every hook is plainly the user's or the project's)."""
    if not any(h.scope == "system" for h in table.hooks):
        return []
    lines = [f"tiers (the system tier, {table.system_dir}, runs first; no lower scope changes it):"]
    lines += [f"  {tier_of(h)}: {h.event} {h.id} ({h.source})" for h in table.hooks]
    return lines


def where_hooks_go(table: HookTable) -> str:
    """Where a user puts hooks, for a table that has none."""
    user_toml, _ = global_config_files(Path(table.global_dir))
    text = f"your own hooks go in {user_toml} (or hooks.json beside it)"
    if table.workspace:
        ws_toml, _ = workspace_config_files(Path(table.workspace))
        text += f", a workspace's in {ws_toml} (run once you trust them)"
    return text


def _hook_view(hook: Hook, *, trusted: bool, failures: list[tuple[str, str]]) -> dict[str, Any]:
    matcher = msgspec.to_builtins(hook.matcher) if hook.matcher is not None else None
    return {
        "id": hook.id,
        "event": hook.event,
        "config_event": hook.config_event,
        "dialect": hook.dialect,
        "type": hook.kind,
        "runs": hook.runs,
        "match": hook.match,
        "matcher": matcher,
        "if": hook.if_rule,
        "fail_closed": hook.fail_closed if hook.dialect != "json" else None,
        "on_error": hook.on_error if hook.dialect == "json" else None,
        "mode": hook.mode,
        "timeout_s": hook.timeout_s,
        "worker_pool": hook.worker or None,
        "scope": hook.scope,
        "tier": tier_of(hook),
        "file": hook.source,
        "description": hook.description,
        "trusted": trusted,
        "recent_failures": [{"time": t, "error": e} for t, e in failures],
    }


def cmd_list(args: argparse.Namespace) -> int:
    from triohooks.actors.audit_records import FailureMemory

    table = _load(args, trust=args.trust)
    memory = FailureMemory.from_audit_dir(state_dir() / "audit")
    trust = table.trust
    views = [_hook_view(h, trusted=True, failures=memory.recent(h.id)) for h in table.hooks]
    views += [_hook_view(h, trusted=False, failures=[]) for h in table.untrusted]
    if not args.show_secrets:
        for view in views:
            view["runs"] = mask_text(view["runs"])
            view["description"] = mask_text(view["description"])
    if args.json:
        doc = {
            "hooks": views,
            "trust": (
                msgspec.to_builtins(msgspec.structs.replace(trust, texts=()))
                if trust is not None
                else None
            ),
            "problems": [str(p) for p in table.problems],
            "global_dir": table.global_dir,
            "system_dir": table.system_dir,
            "workspace": table.workspace,
        }
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(doc), indent=2).decode() + "\n")
        return EXIT_OK
    if not views:
        print(f"no hooks configured: {where_hooks_go(table)}")
    by_event: dict[str, list[dict[str, Any]]] = {}
    for view in views:
        by_event.setdefault(view["event"], []).append(view)
    for event, items in by_event.items():
        print(f"{event}:")
        for v in items:
            flags = []
            if v["match"]:
                flags.append(f"match={v['match']}")
            if v["matcher"]:
                flags.append(
                    "matcher="
                    + ",".join(f"{k}={val}" for k, val in v["matcher"].items() if val is not None)
                )
            if v["if"]:
                flags.append(f"if={v['if']}")
            if v["fail_closed"]:
                flags.append("fail_closed")
            if v["on_error"]:
                flags.append(f"on_error={v['on_error']}")
            if v["mode"] == "observe":
                flags.append("mode=observe (decisions audited as would_block, not enforced)")
            flags.append(f"timeout={v['timeout_s']:g}s")
            if v["worker_pool"]:
                flags.append(f"worker(pool={v['worker_pool']})")
            print(f"  [{v['dialect']}] {v['id']}: {v['runs']}")
            print(f"      {' '.join(flags)}")
            where = f"{v['scope']} {v['file']} ({v['tier']} tier)"
            if not v["trusted"]:
                state = trust.state if trust is not None else "untrusted"
                where += f"  NOT RUN: workspace hooks are {state}; run `triohooks trust`"
            print(f"      from {where}")
            for failure in v["recent_failures"]:
                print(f"      failed {failure['time']}: {failure['error']}")
    for problem in table.problems:
        print(f"problem: {problem}", file=sys.stderr)
    return EXIT_OK


def cmd_trust(args: argparse.Namespace) -> int:
    ws = workspace_of(args)
    config_dir = args.config_dir if args.config_dir is not None else global_config_dir()
    table = load_table(
        workspace=ws, config_dir=config_dir, trust_override=True, trust_covers=args.cover
    )
    trust = table.trust
    if trust is None or not trust.files:
        print(f"{ws} has no workspace hooks (.agents/hooks.toml or .agents/hooks.json)")
        return EXIT_OK
    decision: Literal["trusted", "declined"] = "declined" if args.decline else "trusted"
    before = read_store(config_dir).workspaces.get(trust.workspace)
    for line in describe_changes(before, trust):
        print(line)
    for line in describe_unseen(trust):
        print(line)
    if args.dry_run:
        print("nothing recorded (--dry-run)")
        return EXIT_OK
    if decision == "trusted" and table.errors:
        # The hooks as they are would not load: trusting them would stop every event.
        raise CliError(
            "nothing recorded: the workspace hooks have errors; fix them first:\n"
            + "\n".join(f"  {p}" for p in table.errors)
        )
    try:
        record_trust(config_dir, ws, trust, decision)
    except TrustRefusedError as exc:
        raise CliError(str(exc)) from None
    print(
        f"{trust.workspace}: workspace hooks {decision} ({len(trust.files)} file(s), "
        f"sha256 {trust.digest[:16]}...)"
    )
    print_covered(trust)
    from .init_cli import rerouted

    rerouted(ws, config_dir)
    return EXIT_OK


def describe_unseen(trust: TrustInfo) -> list[str]:
    """What trust cannot see run, and the files the user named for it."""
    lines = [f"trust cannot see what this runs: `{c}`: {why}" for c, why in trust.unseen]
    if trust.unseen and trust.covers:
        lines.append(f"you name for it: {', '.join(trust.covers)} (hashed with the rest)")
    return lines


def print_covered(trust: TrustInfo) -> None:
    """Every file trust covers, and which directories it covers whole."""
    for name in trust.files:
        print(f"  {name}")
    for note in trust.notes:
        print(f"  note: {note}")


#: Lines of a changed hook file's diff shown by ``trust`` before the rest is summed up.
MAX_DIFF_LINES: Final = 200


def describe_changes(before: TrustRecord | None, now: TrustInfo) -> list[str]:
    """What ``trust`` is about to trust that was not trusted before: a first trust says so;
    else each added, removed and changed file, with a diff of each hook config whose trusted
    text was kept."""
    if before is None:
        return ["first trust of this workspace's hooks"]
    if before.digest == now.digest:
        return [f"unchanged since {before.decision} {_when(before.time)}"]
    import difflib

    added, removed, edited = trust_changes(before, now)
    lines = [f"changed since {before.decision} {_when(before.time)}:"]
    lines += [f"  added: {name}" for name in added]
    lines += [f"  removed: {name}" for name in removed]
    texts = dict(now.texts)
    for name in edited:
        lines.append(f"  changed: {name}")
        old, new = before.texts.get(name), texts.get(name)
        if old is None or new is None:
            continue  # a script (hashed, not kept), or a file too big to keep
        diff = list(
            difflib.unified_diff(
                old.splitlines(), new.splitlines(), "trusted", "now", lineterm="", n=2
            )
        )
        lines += [f"    {d}" for d in diff[:MAX_DIFF_LINES]]
        if len(diff) > MAX_DIFF_LINES:
            lines.append(f"    ... {len(diff) - MAX_DIFF_LINES} more diff line(s)")
    return lines


def _when(stamp: float) -> str:
    import time as _time

    return _time.strftime("%Y-%m-%d %H:%M", _time.localtime(stamp))


def cmd_doctor(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from triohooks.actors.guard import GuardUnavailable, backend, describe
    from triohooks.agents.config import find_project
    from triohooks.agents.spec import AGENTS, home_dir

    from .agent_checks import check_agent
    from .doctor import DoctorLine, audit_log, diagnose

    table = _load(args)
    lines = diagnose(table)
    try:
        backend()
        lines.insert(0, DoctorLine(True, describe()))
    except GuardUnavailable:
        lines.insert(0, DoctorLine(False, describe()))
    ws = workspace_of(args)
    config_dir = args.config_dir if args.config_dir is not None else global_config_dir()
    home = home_dir()
    for agent in AGENTS:  # the agents adopted here: their live setup too
        project = find_project(ws, agent, config_dir=config_dir, home=home) or ws
        lines += check_agent(
            agent, project=project, home=home, config_dir=config_dir, state=state_dir()
        )
    lines.append(audit_log(state_dir() / "audit", datetime.now(UTC).date()))
    problems = [line for line in lines if not line.ok]
    for line in lines:
        print(("ok       " if line.ok else "PROBLEM  ") + line.text)
    if problems:
        print(f"triohooks doctor: {len(problems)} problem(s)", file=sys.stderr)
        return EXIT_USAGE
    print(f"triohooks doctor: no problems ({len(lines)} check(s))")
    return EXIT_OK
