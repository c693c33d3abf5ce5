"""The ``triohooks`` command line: validate, list, trust, fire (and the other subcommands).

Owns argument parsing, exit codes (0 proceed, 2 blocked, 4 prompt_submit blocked, 1 usage or
config error) and turning every expected failure into a one-line message on stderr: a user
never sees a traceback for bad input.

``fire`` runs on every tool call an agent makes, so it starts an engine only when a hook can
run: it loads the table as the engine's loader does, asks the dispatcher's own question
(:func:`triohooks.config.selection.nothing_runs`) and, when nothing can run, prints the
Outcome the engine would have (``plain_outcome``) without importing trio, the HTTP client, the
tracer or the shell parser (tests/test_cli_startup.py holds it to a list of modules). Only what
a command uses is imported at module level here; the rest loads inside the command.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, NoReturn

import msgspec

from triohooks.config import selection
from triohooks.config.events import (
    EventBase,
    PayloadError,
    UnknownEventError,
    canonical_event,
    event_from_payload,
)
from triohooks.config.model import ConfigError, Hook, HookTable, TrustInfo
from triohooks.config.paths import (
    UnreadableFileError,
    global_config_dir,
    global_config_files,
    private_dir,
    read_regular_file,
    state_dir,
    workspace_config_files,
    write_file_atomic,
)
from triohooks.config.table import as_untrusted, held_back_summary, load_table
from triohooks.config.trust import (
    TrustRecord,
    TrustRefusedError,
    held_back_message,
    read_store,
    record_trust,
    trust_changes,
)

from . import fire_cache
from .entry import stdout_gone

if TYPE_CHECKING:
    from triohooks.combine.outcome import Outcome
    from triohooks.engine.hook_engine import HookEngine

EXIT_OK = 0
EXIT_USAGE = 1
EXIT_BLOCKED = 2
EXIT_PROMPT_BLOCKED = 4


class CliError(Exception):
    """An expected failure: printed as one line, exit 1."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        print(f"triohooks: {message}{_choice_hint(message)}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def version() -> str:
    """The installed distribution's version (looked up only when asked)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("triohooks")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


class _Version(argparse.Action):
    """``--version``: the installed distribution's version."""

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> NoReturn:
        print(f"triohooks {version()} (Python {sys.version.split()[0]})")
        raise SystemExit(EXIT_OK)


def _choice_hint(message: str) -> str:
    """ "did you mean" for argparse's ``invalid choice: 'x' (choose from 'a', 'b')``."""
    import re

    found = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)$", message)
    if found is None:
        return ""
    from triohooks.config.suggest import closest

    choice = closest(found[1], re.findall(r"'([^']*)'", found[2]))
    return f"; did you mean {choice!r}?" if choice is not None else ""


def scope_args(
    p: argparse.ArgumentParser,
    *,
    configs: bool = True,
    workspace_help: str = "workspace directory (default: the current directory)",
) -> None:
    """``--workspace``, ``--config`` (unless ``configs`` is False) and ``--config-dir``: which
    hooks a command reads, the same for every command."""
    p.add_argument("--workspace", type=Path, default=None, help=workspace_help)
    if configs:
        _config_arg(p)
    p.add_argument(
        "--config-dir",
        type=Path,
        default=None,
        help="global config directory (default: $TRIOHOOKS_CONFIG_DIR or the platform's)",
    )


def _show_secrets_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--show-secrets",
        action="store_true",
        help="print values that look like secrets (tokens, keys, passwords) instead of masking",
    )


#: Parts of a name (an environment variable, a header) that make its value a secret.
_SECRET_NAME_PARTS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "AUTHORIZATION")


def secret_name(name: str) -> bool:
    """Whether a value named ``name`` is masked whole: an ``Authorization`` header, a name
    containing KEY / TOKEN / SECRET / PASSWORD, or one :mod:`triohooks.actors.redact` calls
    secret (``x-auth``, ``cookie``, ``apiKey`` ...)."""
    from triohooks.actors.redact import secret_key

    upper = name.upper()
    return any(part in upper for part in _SECRET_NAME_PARTS) or secret_key(name)


def mask_text(text: str | None) -> str | None:
    """``text`` with what looks like a secret masked (``sk-...``, ``ghp_...``, bearer tokens,
    ``TOKEN=...`` assignments, passwords in URLs): :func:`triohooks.actors.redact.redact`."""
    if not text:
        return text
    from triohooks.actors.redact import redact

    return redact(text)


def mask_named(items: dict[str, Any]) -> dict[str, Any]:
    """Name/value pairs (environment variables, headers) for display: a value under a secret
    name is masked whole, any other string value has its secret-looking parts masked."""
    from triohooks.actors.redact import REDACTED

    out: dict[str, Any] = {}
    for name, value in items.items():
        if isinstance(value, str) and value and secret_name(str(name)):
            out[name] = REDACTED
        elif isinstance(value, str):
            out[name] = mask_text(value)
        else:
            out[name] = value
    return out


def _config_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config",
        dest="configs",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="extra user-trusted config file (.toml or .json); repeatable",
    )


#: Subcommands that live in their own modules: name -> (module, add-parser fn, command fn).
#: Only the chosen one is imported (``fire`` runs on every tool call an agent makes and must not
#: pay for the websocket or HTTP libraries); ``--help`` imports them all.
_PLUGINS: dict[str, tuple[str, str, str]] = {
    "hooks": (".selfconfig_cli", "add_hooks_command", "cmd_hooks"),
    "demo": (".demo", "add_demo_command", "cmd_demo"),
    "serve": (".serve_cli", "add_serve_command", "cmd_serve"),
    "watch": (".watch", "add_watch_command", "cmd_watch"),
    "claude": (".agents_cli", "add_claude_command", "cmd_agent"),
    "gemini": (".agents_cli", "add_gemini_command", "cmd_agent"),
    "codex": (".agents_cli", "add_codex_command", "cmd_agent"),
    "qwen": (".agents_cli", "add_qwen_command", "cmd_agent"),
    "copilot": (".agents_cli", "add_copilot_command", "cmd_agent"),
    "cursor": (".agents_cli", "add_cursor_command", "cmd_agent"),
    "service": (".service", "add_service_command", "cmd_service"),
    "test": (".hooktest", "add_test_command", "cmd_test"),
    "init": (".init_cli", "add_init_command", "cmd_init"),
    "audit": (".audit_cli", "add_audit_command", "cmd_audit"),
    "replay": (".replay", "add_replay_command", "cmd_replay"),
    "completion": (".completion", "add_completion_command", "cmd_completion"),
    "convert": (".convert_cli", "add_convert_command", "cmd_convert"),
}


def _plugin(name: str) -> tuple[Callable[[Any], None], Callable[[argparse.Namespace], int]]:
    module_name, add_name, cmd_name = _PLUGINS[name]
    module = importlib.import_module(module_name, __package__)
    return getattr(module, add_name), getattr(module, cmd_name)


def _chosen(argv: Sequence[str]) -> str | None:
    """The subcommand named in ``argv`` (the first word that is not an option)."""
    return next((word for word in argv if not word.startswith("-")), None)


def _add_validate(sub: Any) -> None:
    p = sub.add_parser("validate", help="check every config file; list every problem")
    scope_args(p)


def _add_list(sub: Any) -> None:
    p = sub.add_parser("list", help="list every effective hook by event")
    scope_args(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--trust", action="store_true", help="treat the workspace as trusted")
    _show_secrets_arg(p)


def _add_trust(sub: Any) -> None:
    p = sub.add_parser("trust", help="trust the workspace's hooks as they are now")
    scope_args(p, configs=False)  # trust is about the workspace files only
    p.add_argument("--decline", action="store_true", help="record that you decline them")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="show what changed since the last trust; record nothing",
    )
    p.add_argument(
        "--cover",
        action="append",
        metavar="PATH",
        help=(
            "a file or directory (relative to the workspace) for trust to hash besides what "
            "it finds: your answer for commands trust cannot see into (repeatable)"
        ),
    )


def _add_doctor(sub: Any) -> None:
    p = sub.add_parser("doctor", help="check that every hook's program resolves; list problems")
    scope_args(p)


def _add_fire(sub: Any) -> None:
    p = sub.add_parser("fire", help="fire EVENT with a JSON payload on stdin; print the Outcome")
    p.add_argument("event")
    scope_args(p)
    p.add_argument("--trust", action="store_true", help="trust the workspace's hooks for this run")
    p.add_argument("--json", action="store_true", help="print the Outcome as JSON (the default)")
    p.add_argument(
        "--format",
        choices=("json", "human"),
        default="json",
        help="json: the Outcome on one line (the default); human: a readable block",
    )
    p.add_argument("--no-audit", action="store_true", help="write no audit records")


#: The subcommands defined in this module, in the order ``--help`` lists them.
_BUILTINS: dict[str, Callable[[Any], None]] = {
    "validate": _add_validate,
    "list": _add_list,
    "trust": _add_trust,
    "doctor": _add_doctor,
    "fire": _add_fire,
}


def _parser(
    plugins: Sequence[str] = tuple(_PLUGINS), builtins: Sequence[str] = tuple(_BUILTINS)
) -> argparse.ArgumentParser:
    """The parser with the ``builtins`` and ``plugins`` subcommands. Building one costs
    argparse about half a millisecond, so ``triohooks fire ...`` builds only ``fire``; the
    usage line (printed for an unrecognized argument) still names every built-in one."""
    parser = _Parser(prog="triohooks", description="Lifecycle hooks for AI coding agents.")
    parser.add_argument(
        "--version", action=_Version, nargs=0, help="print the version of triohooks and exit"
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    if not plugins and list(builtins) != list(_BUILTINS):
        sub.metavar = "{" + ",".join(_BUILTINS) + "}"
    for name in builtins:
        _BUILTINS[name](sub)
    for name in plugins:
        add, command = _plugin(name)
        add(sub)
        COMMANDS[name] = command
    return parser


def _workspace(args: argparse.Namespace) -> Path:
    ws: Path = args.workspace if args.workspace is not None else Path.cwd()
    if not ws.is_dir():
        raise CliError(f"workspace {ws} is not a directory")
    return ws


def _load(args: argparse.Namespace, *, trust: bool = False) -> HookTable:
    return load_table(
        workspace=_workspace(args),
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
    return EXIT_USAGE if problems else EXIT_OK


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
        "timeout_s": hook.timeout_s,
        "worker_pool": hook.worker or None,
        "scope": hook.scope,
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
            flags.append(f"timeout={v['timeout_s']:g}s")
            if v["worker_pool"]:
                flags.append(f"worker(pool={v['worker_pool']})")
            print(f"  [{v['dialect']}] {v['id']}: {v['runs']}")
            print(f"      {' '.join(flags)}")
            where = f"{v['scope']} {v['file']}"
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
    ws = _workspace(args)
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
    from triohooks.actors.guard import GuardUnavailable, backend, describe
    from triohooks.agents.config import find_project
    from triohooks.agents.spec import AGENTS, home_dir

    from .agent_checks import check_agent
    from .doctor import DoctorLine, diagnose

    table = _load(args)
    lines = diagnose(table)
    try:
        backend()
        lines.insert(0, DoctorLine(True, describe()))
    except GuardUnavailable:
        lines.insert(0, DoctorLine(False, describe()))
    ws = _workspace(args)
    config_dir = args.config_dir if args.config_dir is not None else global_config_dir()
    home = home_dir()
    for agent in AGENTS:  # the agents adopted here: their live setup too
        project = find_project(ws, agent, config_dir=config_dir, home=home) or ws
        lines += check_agent(
            agent, project=project, home=home, config_dir=config_dir, state=state_dir()
        )
    problems = [line for line in lines if not line.ok]
    for line in lines:
        print(("ok       " if line.ok else "PROBLEM  ") + line.text)
    if problems:
        print(f"triohooks doctor: {len(problems)} problem(s)", file=sys.stderr)
        return EXIT_USAGE
    print(f"triohooks doctor: no problems ({len(lines)} check(s))")
    return EXIT_OK


def _read_payload() -> dict[str, Any]:
    data = fire_cache.preloaded_stdin  # read already by the console entry (.entry)
    if data is None:
        data = fire_cache.read_stdin()
    if not data.strip():
        return {}
    try:
        payload = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise CliError(f"payload on stdin is not valid JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise CliError("payload on stdin must be a JSON object")
    return payload


#: Internal, for tests and benchmarks only (not a user setting): when set to a non-empty value,
#: ``fire`` always opens the engine, even for an event no hook can run for, so the two paths
#: can be compared (tests/test_cli_startup.py, bench/cli_startup.py).
FIRE_VIA_ENGINE_VAR: Final = "_TRIOHOOKS_FIRE_VIA_ENGINE"


def _log_to_stderr() -> None:
    """Send log records to stderr as ``triohooks: <message>`` (warnings and worse). Called
    before anything that logs runs: ``fire`` does without logging while nothing can run."""
    import logging

    logging.basicConfig(level=logging.WARNING, format="triohooks: %(message)s", stream=sys.stderr)


def cmd_fire(args: argparse.Namespace) -> int:
    try:
        event = canonical_event(args.event)
    except UnknownEventError as exc:
        raise CliError(str(exc)) from None
    payload = _read_payload()
    ws = _workspace(args)
    payload.setdefault("workspace", str(ws))
    # Every event carries a cwd (docs/design.md §2): the workspace by default.
    if not payload.get("cwd"):
        payload["cwd"] = payload["workspace"]
    ev = event_from_payload(event, payload)  # a bad payload fails here, before anything starts
    outcome = None if os.environ.get(FIRE_VIA_ENGINE_VAR) else _fire_nothing_runs(args, ws, ev)
    telemetry = None
    if outcome is None:
        _log_to_stderr()
        # fire prints every Outcome warning (a failed hook's included): the run log's
        # once-per-cause line would only repeat it.
        import logging

        logging.getLogger("triohooks.runs").setLevel(logging.ERROR)
        # OTLP export when OTEL_EXPORTER_OTLP_*ENDPOINT is set (docs/observability.md): the
        # engine path only (nothing runs on the fast path, so there is nothing to export).
        from . import otel

        telemetry = otel.start("fire")
        try:
            outcome = _fire_in_engine(args, ws, event, ev, watch=otel.watch)
        except BaseException:
            otel.close_fire(telemetry)
            raise
    if args.format != "human":  # (the human block lists them itself)
        for warning in outcome.warnings:
            print(f"triohooks: warning: {warning}", file=sys.stderr)
    if args.format == "human":
        text = human_outcome(outcome, ev)
    else:
        text = msgspec.json.encode(outcome).decode() + "\n"
    try:
        sys.stdout.write(text)
        sys.stdout.flush()  # the Outcome first; then the export's close (bounded: 0.5 s)
    except BrokenPipeError:
        stdout_gone()  # nobody reads the Outcome: the exit code below still says the decision
    if telemetry is not None:
        otel.close_fire(telemetry)
    if outcome.blocked:
        return EXIT_PROMPT_BLOCKED if event == "prompt_submit" else EXIT_BLOCKED
    return EXIT_OK


def human_outcome(outcome: Outcome, ev: EventBase) -> str:
    """An Outcome as a person reads it: the decision first, then what changed, each run, and
    the warnings (``fire --format human``)."""
    tool = getattr(ev, "tool", "")
    head = f"{outcome.event}{' ' + tool if tool else ''}: "
    if outcome.blocked:
        head += f"BLOCKED ({outcome.decision})" if outcome.decision else "BLOCKED"
    else:
        head += "allowed" if not outcome.decision else f"allowed ({outcome.decision})"
    lines = [head]
    if outcome.reason:
        lines.append(f"  reason: {outcome.reason}")
    if outcome.user_message:
        lines.append(f"  to the user: {outcome.user_message}")
    if outcome.args is not None and outcome.args != getattr(ev, "args", None):
        lines.append(f"  args rewritten: {msgspec.json.encode(outcome.args).decode()}")
    if outcome.prompt is not None and outcome.prompt != getattr(ev, "prompt", None):
        lines.append(f"  prompt rewritten: {outcome.prompt}")
    if outcome.additional_context:
        lines.append(f"  context: {outcome.additional_context}")
    for message in outcome.system_messages:
        lines.append(f"  message: {message}")
    if outcome.continue_:
        lines.append("  continue: a stop hook asked the agent to go on")
    if outcome.queued:
        lines.append("  background hooks queued")
    lines.append(f"  runs ({len(outcome.runs)}):" if outcome.runs else "  no hook ran")
    for run in outcome.runs:
        code = f" exit {run.exit_code}" if run.exit_code is not None else ""
        said = f": {run.error}" if run.error else ""
        lines.append(
            f"    {run.hook} [{run.dialect}] {run.outcome}{code} {run.duration_ms:.1f} ms{said}"
        )
    for warning in outcome.warnings:
        lines.append(f"  warning: {warning}")
    return "\n".join(lines) + "\n"


def _fire_nothing_runs(args: argparse.Namespace, ws: Path, ev: EventBase) -> Outcome | None:
    """The Outcome of ``ev`` when no hook can run for it, found without an engine; None when
    one may run (the engine must), or when anything unexpected fails here (the engine path then
    meets it and reports it as it always has).

    Does what the engine does before and around its dispatcher's fast path, in the same order:
    the table is loaded by the loader's own call (its errors raise the same
    :class:`ConfigError`, its other problems are logged as the loader logs them), the
    prompt-hook judge's warning is logged, and the answer is ``plain_outcome``. Nothing runs,
    so there is nothing to audit, queue or trace; ``stop`` always takes the engine (the
    dispatcher's test says so: its continue state is always settled)."""
    words = getattr(args, "words", None)
    snapshot = None
    try:
        if words is not None and fire_cache.remember_eligible(words, args, os.environ):
            snapshot = fire_cache.Snapshot(global_config_dir(), ws)
        table = load_table(
            workspace=ws,
            config_dir=args.config_dir,
            extra_configs=args.configs,
            trust_override=args.trust,
        )
    except Exception:
        return None
    if table.errors:
        raise ConfigError(table.errors)  # as Loader.load_initial raises it: main() reports it
    try:
        if not selection.nothing_runs(table, (), ev, str(ws)):
            return None
        from triohooks.combine.outcome import plain_outcome
        from triohooks.handlers.judge import judge_from_env

        _, judge_warning = judge_from_env(os.environ, dict(table.judge))
        outcome = plain_outcome(selection.event_name(ev), ev)
    except Exception:
        return None
    held = held_back_summary(table)
    if table.problems or judge_warning or held:
        import logging

        _log_to_stderr()
        for problem in table.problems:  # Loader.load_initial
            logging.getLogger("triohooks.loader").warning("%s", problem)
        if held:  # Loader.load_initial
            logging.getLogger("triohooks.loader").warning("%s", held)
        if judge_warning:  # HookEngine.open
            logging.getLogger("triohooks").warning("%s", judge_warning)
    if snapshot is not None:
        said = [str(p) for p in table.problems] + ([judge_warning] if judge_warning else [])
        fire_cache.remember(
            snapshot, os.environ, args.event, selection.event_name(ev), ev, table, said
        )
    return outcome


def _fire_in_engine(
    args: argparse.Namespace,
    ws: Path,
    event: str,
    ev: EventBase,
    *,
    watch: Callable[[HookEngine], object] | None = None,
) -> Outcome:
    """Fire ``ev`` through a :class:`~triohooks.engine.hook_engine.HookEngine` opened for this
    one call (``watch`` is called with it first); our own failure becomes a fail-closed
    Outcome, never a silent allow."""
    import trio

    from triohooks.combine.outcome import internal_error_outcome
    from triohooks.engine.hook_engine import HookEngine

    # The stop cap (5 per prompt) and stop_hook_active must hold across one-shot runs.
    stop_key = (ev.prompt_id or ev.session_id) if event == "stop" else ""

    async def run() -> Outcome:
        async with HookEngine.open(
            workspace=ws,
            config_dir=args.config_dir,
            extra_configs=args.configs,
            trust=args.trust,
            audit=not args.no_audit,
        ) as engine:
            if watch is not None:
                watch(engine)
            counts = _load_stop_counts() if stop_key else {}
            if stop_key in counts:
                engine.restore_stop_continues({stop_key: counts[stop_key]})
            outcome = await engine.fire(event, ev)
            if stop_key and outcome.continue_:
                counts[stop_key] = engine.stop_continues.get(stop_key, 0)
                _save_stop_counts(counts)
            return outcome

    try:
        return trio.run(run)
    except Exception as exc:
        if _expected(exc) is not None:
            raise  # a config, usage or payload error: main() reports it (exit 1)
        # Our own failure (an actor past its restart budget, a bug): never a silent allow.
        why = describe_failure(exc)
        print(f"triohooks: internal error: {why}", file=sys.stderr)
        return internal_error_outcome(event, ev, why)


#: Stop-continue counts kept for this many prompts at most (the oldest are forgotten).
_STOP_COUNTS_KEPT = 512
#: Largest stop-count file read (512 short entries need a few dozen KiB).
_STOP_COUNTS_MAX_BYTES = 1024 * 1024


def _stop_counts_file() -> Path:
    return state_dir() / "stop-continues.json"


def _load_stop_counts() -> dict[str, int]:
    try:
        raw = read_regular_file(_stop_counts_file(), _STOP_COUNTS_MAX_BYTES)
        data = msgspec.json.decode(raw, type=dict[str, int])
    except (OSError, UnreadableFileError, msgspec.DecodeError):
        return {}  # missing or torn: start afresh (the cap is a safety net, not a ledger)
    return data


def _save_stop_counts(counts: dict[str, int]) -> None:
    kept = dict(list(counts.items())[-_STOP_COUNTS_KEPT:])
    try:
        directory = private_dir(state_dir())
        write_file_atomic(
            directory / "stop-continues.json", msgspec.json.encode(kept), new_mode=0o600
        )
    except OSError as exc:
        print(f"triohooks: warning: cannot save the stop-hook count: {exc}", file=sys.stderr)


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "validate": cmd_validate,
    "list": cmd_list,
    "trust": cmd_trust,
    "doctor": cmd_doctor,
    "fire": cmd_fire,
}


_EXPECTED = (ConfigError, CliError, UnknownEventError, PayloadError)


def describe_failure(exc: BaseException) -> str:
    """One line for an unexpected failure: the sole exception inside nested groups, else the
    group's summary."""
    from triohooks.engine.hook_engine import sole_exception

    if isinstance(exc, BaseExceptionGroup):
        exc = sole_exception(exc) or exc
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _expected(exc: BaseException) -> BaseException | None:
    """The one expected error inside ``exc`` (which may be an exception group), if any."""
    if isinstance(exc, _EXPECTED):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _expected(inner)
            if found is not None:
                return found
    return None


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    chosen = _chosen(words)
    plugins = [chosen] if chosen in _PLUGINS else [] if chosen in COMMANDS else list(_PLUGINS)
    # A built-in command named first (no top-level option before it, so no top-level help to
    # print): only its parser is built.
    builtins = [chosen] if chosen in _BUILTINS and words[0] == chosen else list(_BUILTINS)
    args = _parser(plugins, builtins).parse_args(words)
    args.words = words  # fire: which command lines its quiet-call cache may answer
    if args.command != "fire":  # fire sets logging up once it starts something that logs
        _log_to_stderr()
    try:
        try:
            return COMMANDS[args.command](args)
        except BaseExceptionGroup as group:
            found = _expected(group)
            if found is None:
                raise
            raise found from None
    except ConfigError as exc:
        for problem in exc.problems:
            print(str(problem), file=sys.stderr)
        print("triohooks: config has errors; nothing was run", file=sys.stderr)
        return EXIT_USAGE
    except (CliError, UnknownEventError, PayloadError) as exc:
        print(f"triohooks: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
