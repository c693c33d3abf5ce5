"""The ``triohooks`` command line: validate, list, trust, fire (and the other subcommands).

Owns argument parsing, exit codes (0 proceed, 2 blocked, 4 prompt_submit blocked, 1 usage or
config error) and turning every expected failure into a one-line message on stderr: a user
never sees a traceback for bad input.

``fire`` runs on every tool call a CLI-driven agent makes, so this module imports nothing at
module level but the standard library (tests/test_fire_serve.py holds a served ``fire`` to four
triohooks modules and no msgspec): ``fire``
asks the user's ``serve`` first, with the relay's stdlib client, and imports the engine only
when it must open one itself (:mod:`.fire`). The other commands load what they use when they
run (:mod:`.commands`, the plugins).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

#: typing and pathlib are not imported at run time (``fire`` answered by serve never needs
#: them: 2-6 ms of every call); type checkers treat this name as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path
    from typing import Any, Final, NoReturn

    from triohooks.combine.outcome import Outcome
    from triohooks.config.events import EventBase

EXIT_OK = 0
EXIT_USAGE = 1
EXIT_BLOCKED = 2
EXIT_PROMPT_BLOCKED = 4


class CliError(Exception):
    """An expected failure: printed as one line, exit 1."""


_COLUMNS: list[int] = []


def _columns() -> int:
    """The terminal's width as argparse's help formatter reads it (``$COLUMNS``, else the
    terminal's, else 80), read once: argparse makes a formatter per argument it adds, each
    asking ``shutil`` (an import of its own) -- a few ms of every ``fire``."""
    if not _COLUMNS:
        try:
            columns = int(os.environ.get("COLUMNS", ""))
        except ValueError:
            try:
                columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
            except (AttributeError, ValueError, OSError):
                columns = 80
        _COLUMNS.append(columns if columns > 0 else 80)
    return _COLUMNS[0]


class _Formatter(argparse.HelpFormatter):
    """argparse's formatter at :func:`_columns` - 2 (as it would size itself)."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        super().__init__(prog, indent_increment, max_help_position, width or _columns() - 2)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

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


def as_path(text: str) -> Path:
    """An argument that names a file or directory (pathlib loads when one is given)."""
    from pathlib import Path

    return Path(text)


def scope_args(
    p: argparse.ArgumentParser,
    *,
    configs: bool = True,
    workspace_help: str = "workspace directory (default: the current directory)",
    workspace_type: Callable[[str], object] = as_path,
) -> None:
    """``--workspace``, ``--config`` (unless ``configs`` is False) and ``--config-dir``: which
    hooks a command reads, the same for every command."""
    p.add_argument("--workspace", type=workspace_type, default=None, help=workspace_help)
    if configs:
        _config_arg(p)
    p.add_argument(
        "--config-dir",
        type=as_path,
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
        type=as_path,
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
    "agy": (".agents_cli", "add_agy_command", "cmd_agent"),
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
    scope_args(p, workspace_type=str)  # serve is asked with it as given: no pathlib
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
        import msgspec

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


def workspace_of(args: argparse.Namespace) -> Path:
    """The ``--workspace`` a command names, else the current directory."""
    from pathlib import Path

    ws = Path(args.workspace) if args.workspace is not None else Path.cwd()
    if not ws.is_dir():
        raise CliError(f"workspace {ws} is not a directory")
    return ws


#: The exit status of a command whose reader went away (``triohooks list | head -1``): what a
#: shell reports for a process SIGPIPE ended.
EXIT_STDOUT_GONE = 141


def stdout_gone() -> None:
    """Standard output's reader is gone: send what is still buffered, and anything written
    later, to /dev/null, so nothing raises again (at exit either)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def read_stdin() -> bytes:
    """What ``fire`` reads as its payload: all of stdin; nothing from a terminal or a closed
    stdin (an agent that passes no payload)."""
    stdin = sys.stdin
    if stdin is None or stdin.isatty():
        return b""
    return stdin.buffer.read()


#: Internal, for tests and benchmarks only (not a user setting): when set to a non-empty value,
#: ``fire`` never asks serve and opens its own engine, so the two ways can be compared
#: (tests/test_fire_serve.py, bench/cli_startup.py).
FIRE_HERE_VAR: Final = "_TRIOHOOKS_FIRE_HERE"
#: How long ``fire`` waits for serve's answer while serve says it is working on it (heartbeats):
#: the hooks' own timeouts end them long before.
FIRE_WAIT_S: Final = 3600.0


def cmd_fire(args: argparse.Namespace) -> int:
    """Ask the user's serve (:func:`.relay.from_serve`, path ``/fire/v3/hook``) when the call
    reads the config as serve does (no ``--config``, ``--config-dir``, ``--trust``,
    ``--no-audit``); else, or when serve cannot answer, open one engine (:func:`.fire.fire_here`).
    Both replies are made by :mod:`.fire`, the same for the same call."""
    import time

    data = read_stdin()
    given = args.workspace if args.workspace is not None else os.getcwd()
    if not os.path.isdir(given):
        raise CliError(f"workspace {given} is not a directory")
    ws = os.path.abspath(given)
    plain = not (args.configs or args.config_dir or args.trust or args.no_audit)
    event = args.event
    # A word serve can be asked for (a name that is no event's is said by the engine's way).
    sayable = event.isascii() and 0 < len(event) <= 64 and event.replace("_", "a").isalpha()
    answer = None
    if plain and sayable and not os.environ.get(FIRE_HERE_VAR):
        from . import relay

        query = f"workspace={relay.quote_path(ws)}&format={args.format}"
        answer, dead, _ = relay.from_serve(
            "triohooks",
            relay.FIRE_PATH,
            data,
            time.monotonic() + FIRE_WAIT_S,
            event=event,
            more=query,
        )
        if dead:
            print(f"triohooks: {dead}; running the hooks here", file=sys.stderr)
    served = read_reply(answer) if answer is not None else None
    if answer is not None and served is None and not answer.startswith(b"elsewhere "):
        # (elsewhere: serve does not read the config as this call would: nothing to say)
        print(
            "triohooks: serve's reply is not a fire reply; running the hooks here", file=sys.stderr
        )
    if served is None:
        from pathlib import Path

        from .fire import fire_here

        reply = fire_here(
            args.event,
            data,
            Path(ws),
            args.format,
            config_dir=args.config_dir,
            configs=tuple(args.configs),
            trust=args.trust,
            audit=not args.no_audit,
        )
        code, out, said = reply.exit, reply.stdout, "".join(f"{line}\n" for line in reply.stderr)
    else:
        code, out, said = served
    if said:
        sys.stderr.write(said)
        sys.stderr.flush()
    try:
        sys.stdout.write(out)
        sys.stdout.flush()
    except BrokenPipeError:
        stdout_gone()  # nobody reads the Outcome: the exit code still says the decision
    return code


def read_reply(answer: bytes) -> tuple[int, str, str] | None:
    """serve's reply to a ``fire`` (framed by :func:`.fire._encode`): exit code, stdout,
    stderr; None when serve cannot answer this call (``elsewhere``) or the reply is not one
    (the command then opens its own engine). No JSON parser: ``json`` costs a call 1-2 ms."""
    head, sep, rest = answer.partition(b"\n")
    fields = head.split(b" ")
    if not sep or len(fields) != 3 or not all(f.isdigit() for f in fields):
        return None
    code, err, out = (int(f) for f in fields)
    if err + out != len(rest):
        return None
    said = rest[:err].decode("utf-8", "surrogateescape")
    return code, rest[err:].decode("utf-8", "surrogateescape"), said


def _command(module: str, name: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        command: Callable[[argparse.Namespace], int] = getattr(
            importlib.import_module(module, __package__), name
        )
        return command(args)

    return run


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "validate": _command(".commands", "cmd_validate"),
    "list": _command(".commands", "cmd_list"),
    "trust": _command(".commands", "cmd_trust"),
    "doctor": _command(".commands", "cmd_doctor"),
    "fire": cmd_fire,
}


def describe_failure(exc: BaseException) -> str:
    """One line for an unexpected failure: the sole exception inside nested groups, else the
    group's summary."""
    if isinstance(exc, BaseExceptionGroup):
        exc = _sole(exc) or exc
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _sole(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    from triohooks.engine.hook_engine import sole_exception

    return sole_exception(group)


def _expected_types() -> tuple[type[Exception], ...]:
    if "triohooks.config" not in sys.modules:
        return (CliError,)  # nothing that raises the others was imported
    from triohooks.config.events import PayloadError, UnknownEventError
    from triohooks.config.model import ConfigError

    return (ConfigError, CliError, UnknownEventError, PayloadError)


def expected_error(exc: BaseException) -> BaseException | None:
    """The one expected error inside ``exc`` (which may be an exception group): a config,
    usage or payload error, which the command line says in one line (:func:`error_lines`)."""
    if isinstance(exc, _expected_types()):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = expected_error(inner)
            if found is not None:
                return found
    return None


def error_lines(exc: BaseException) -> tuple[int, list[str]]:
    """The exit code and stderr lines for an expected error (:func:`expected_error`)."""
    if "triohooks.config" in sys.modules:
        from triohooks.config.model import ConfigError

        if isinstance(exc, ConfigError):
            return EXIT_USAGE, [
                *(str(problem) for problem in exc.problems),
                "triohooks: config has errors; nothing was run",
            ]
    return EXIT_USAGE, [f"triohooks: {exc}"]


def _log_to_stderr() -> None:
    """Send log records to stderr as ``triohooks: <message>`` (warnings and worse)."""
    import logging

    logging.basicConfig(level=logging.WARNING, format="triohooks: %(message)s", stream=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (the ``triohooks`` console script), ending quietly when its reader
    closes standard output first."""
    try:
        return _main(argv)
    except BrokenPipeError:
        stdout_gone()
        return EXIT_STDOUT_GONE


def _main(argv: Sequence[str] | None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    chosen = _chosen(words)
    plugins = [chosen] if chosen in _PLUGINS else [] if chosen in COMMANDS else list(_PLUGINS)
    # A built-in command named first (no top-level option before it, so no top-level help to
    # print): only its parser is built.
    builtins = [chosen] if chosen in _BUILTINS and words[0] == chosen else list(_BUILTINS)
    args = _parser(plugins, builtins).parse_args(words)
    if args.command != "fire":  # fire sets logging up once it opens an engine
        _log_to_stderr()
    try:
        code: int = COMMANDS[args.command](args)
        return code
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            return 130
        found = expected_error(exc)
        if found is None:
            raise
        code, lines = error_lines(found)
        for line in lines:
            print(line, file=sys.stderr)
        return code
