"""``triohooks fire EVENT``: one event, one answer, by one of two ways that give the same reply.

The command (:func:`triohooks.fronts.cli.cmd_fire`) first asks the user's ``serve`` over its
relay socket, as the relay does (:func:`triohooks.fronts.relay.from_serve`, path
``/fire/v3/hook``): serve runs the event in the project's own dispatcher
(:meth:`~triohooks.engine.hook_engine.HookEngine.fire_at`) and answers with the reply made here
(:func:`answer_request`). With no usable serve -- none running, a dead one, options serve does
not read the config by (``--config``, ``--config-dir``, ``--trust``, ``--no-audit``), or
settings in the caller's environment that differ from serve's (:func:`settings_differ`,
:func:`judge_differs`) -- the
command opens one engine for the call (:func:`fire_here`). Both make the reply with
:func:`reply_for` and the errors with :func:`error_reply`: the same bytes on stdout, the same
lines on stderr, the same exit code.
"""

from __future__ import annotations

import os
import sys
import urllib.parse
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import msgspec

from .cli import (
    EXIT_BLOCKED,
    EXIT_OK,
    EXIT_PROMPT_BLOCKED,
    CliError,
    describe_failure,
    error_lines,
    expected_error,
)
from .relay import NO_START_VAR, SERVE_DROPS

if TYPE_CHECKING:
    from triohooks.combine.outcome import Outcome
    from triohooks.config.events import EventBase
    from triohooks.engine.hook_engine import HookEngine


class FireReply(msgspec.Struct, kw_only=True):
    """What ``fire`` prints and exits with; serve sends it framed by :func:`encode_reply`
    (``elsewhere``: serve cannot answer this call as ``fire`` would: the command opens its own
    engine, saying nothing)."""

    exit: int = EXIT_OK
    stdout: str = ""
    stderr: list[str] = msgspec.field(default_factory=list)
    elsewhere: str | None = None


def read_event(event_word: str, body: bytes, workspace: Path) -> tuple[str, EventBase]:
    """The canonical event and the event Struct of a ``fire`` call: ``body`` (the payload on
    stdin, a JSON object or nothing) with the workspace and cwd filled in when it does not say
    them (docs/design.md §2). Raises :class:`CliError`, ``UnknownEventError`` or
    ``PayloadError`` for bad input, before anything runs."""
    from triohooks.config.events import UnknownEventError, canonical_event, event_from_payload

    try:
        event = canonical_event(event_word)
    except UnknownEventError as exc:
        raise CliError(str(exc)) from None
    payload: dict[str, Any] = {}
    if body.strip():
        try:
            decoded = msgspec.json.decode(body)
        except msgspec.DecodeError as exc:
            raise CliError(f"payload on stdin is not valid JSON: {exc}") from None
        except RecursionError:
            raise CliError("payload on stdin is nested too deeply to read") from None
        if not isinstance(decoded, dict):
            raise CliError("payload on stdin must be a JSON object")
        payload = decoded
    payload.setdefault("workspace", str(workspace))
    if not payload.get("cwd"):
        payload["cwd"] = payload["workspace"]
    return event, event_from_payload(event, payload)


def reply_for(outcome: Outcome, ev: EventBase, fmt: str) -> FireReply:
    """The reply for an Outcome: the Outcome as one JSON line (or the human block), each warning
    on stderr (the human block lists them itself), and the exit code of the decision."""
    from .cli import human_outcome

    if fmt == "human":
        text, said = human_outcome(outcome, ev), []
    else:
        text = msgspec.json.encode(outcome).decode() + "\n"
        said = [f"triohooks: warning: {warning}" for warning in outcome.warnings]
    code = EXIT_OK
    if outcome.blocked:
        code = EXIT_PROMPT_BLOCKED if outcome.event == "prompt_submit" else EXIT_BLOCKED
    return FireReply(exit=code, stdout=text, stderr=said)


def error_reply(exc: BaseException) -> FireReply | None:
    """The reply for an expected error (a config, usage or payload error): what the command
    line says for it, exit 1; None for any other exception."""
    found = expected_error(exc)
    if found is None:
        return None
    code, lines = error_lines(found)
    return FireReply(exit=code, stderr=lines)


# -- the engine's way --------------------------------------------------------------------------


def fire_here(
    event_word: str,
    body: bytes,
    workspace: Path,
    fmt: str,
    *,
    config_dir: Path | None = None,
    configs: tuple[Path, ...] = (),
    trust: bool = False,
    audit: bool = True,
) -> FireReply:
    """Fire the event through a :class:`~triohooks.engine.hook_engine.HookEngine` opened for
    this one call. Our own failure becomes a fail-closed Outcome, never a silent allow."""
    import logging

    from . import otel

    logging.basicConfig(level=logging.WARNING, format="triohooks: %(message)s", stream=sys.stderr)
    # fire prints every Outcome warning (a failed hook's included): the run log's
    # once-per-cause line would only repeat it.
    logging.getLogger("triohooks.runs").setLevel(logging.ERROR)
    try:
        event, ev = read_event(event_word, body, workspace)
    except Exception as exc:
        reply = error_reply(exc)
        if reply is None:
            raise
        return reply
    # OTLP export when OTEL_EXPORTER_OTLP_*ENDPOINT is set (docs/observability.md).
    telemetry = otel.start("fire")
    try:
        outcome = _in_engine(
            workspace, event, ev, config_dir, configs, trust, audit, watch=otel.watch
        )
    except Exception as exc:
        reply = error_reply(exc)
        if reply is None:
            raise
        return reply
    finally:
        # Bounded (0.5 s); after the engine, so the event's spans are in it.
        otel.close_fire(telemetry)
    return reply_for(outcome, ev, fmt)


def _in_engine(
    ws: Path,
    event: str,
    ev: EventBase,
    config_dir: Path | None,
    configs: tuple[Path, ...],
    trust: bool,
    audit: bool,
    *,
    watch: Callable[[HookEngine], object] | None = None,
) -> Outcome:
    import trio

    from triohooks.combine.outcome import internal_error_outcome
    from triohooks.engine.hook_engine import HookEngine

    # The stop cap (5 per prompt) and stop_hook_active must hold across one-shot runs.
    stop_key = (ev.prompt_id or ev.session_id) if event == "stop" else ""

    async def run() -> Outcome:
        async with HookEngine.open(
            workspace=ws, config_dir=config_dir, extra_configs=configs, trust=trust, audit=audit
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
        if expected_error(exc) is not None:
            raise  # a config, usage or payload error: said as the command line says it
        # Our own failure (an actor past its restart budget, a bug): never a silent allow.
        why = describe_failure(exc)
        print(f"triohooks: internal error: {why}", file=sys.stderr)
        return internal_error_outcome(event, ev, why)


#: Stop-continue counts kept for this many prompts at most (the oldest are forgotten).
_STOP_COUNTS_KEPT = 512
#: Largest stop-count file read (512 short entries need a few dozen KiB).
_STOP_COUNTS_MAX_BYTES = 1024 * 1024


def _stop_counts_file() -> Path:
    from triohooks.config.paths import state_dir

    return state_dir() / "stop-continues.json"


def _load_stop_counts() -> dict[str, int]:
    from triohooks.config.paths import UnreadableFileError, read_regular_file

    try:
        raw = read_regular_file(_stop_counts_file(), _STOP_COUNTS_MAX_BYTES)
        data = msgspec.json.decode(raw, type=dict[str, int])
    except (OSError, UnreadableFileError, msgspec.DecodeError):
        return {}  # missing or torn: start afresh (the cap is a safety net, not a ledger)
    return data


def _save_stop_counts(counts: dict[str, int]) -> None:
    from triohooks.config.paths import private_dir, state_dir, write_file_atomic

    kept = dict(list(counts.items())[-_STOP_COUNTS_KEPT:])
    try:
        directory = private_dir(state_dir())
        write_file_atomic(
            directory / "stop-continues.json", msgspec.json.encode(kept), new_mode=0o600
        )
    except OSError as exc:
        print(f"triohooks: warning: cannot save the stop-hook count: {exc}", file=sys.stderr)


# -- serve's way -------------------------------------------------------------------------------

#: ``TRIOHOOKS_*`` variables that do not choose what ``fire`` reads: those that are no settings
#: of serve's either (markers of one process, the http transport's token), and whether a relay
#: may start serve.
_NOT_SETTINGS: Final = frozenset({*SERVE_DROPS, NO_START_VAR})
#: Other variables that choose which config files ``fire`` reads (the platform's config dir).
_PLACES: Final = ("HOME", "XDG_CONFIG_HOME")


def _settings(environ: Mapping[str, str]) -> dict[str, str]:
    said = {
        k: v for k, v in environ.items() if k.startswith("TRIOHOOKS_") and k not in _NOT_SETTINGS
    }
    if not said.get("TRIOHOOKS_CONFIG_DIR"):
        said.update({k: environ.get(k, "") for k in _PLACES})
    return said


def settings_differ(request_env: Mapping[str, str], own_env: Mapping[str, str]) -> str | None:
    """Why serve cannot read the config as a ``fire`` from a session with ``request_env`` would
    by itself (None: it can): triohooks' settings differ (``TRIOHOOKS_*``, the places that
    choose the config directory). A closed world: what serve was not started with is not
    guessed; the command opens its own engine."""
    mine, theirs = _settings(own_env), _settings(request_env)
    if mine == theirs:
        return None
    differ = sorted(k for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k))
    return f"settings differ from serve's: {', '.join(differ)}"


def judge_differs(
    request_env: Mapping[str, str],
    judge: tuple[tuple[str, str], ...],
    own_env: Mapping[str, str],
    own_judge: tuple[tuple[str, str], ...],
) -> str | None:
    """Why the prompt-hook judge a ``fire`` would build (from its table's ``[judge]`` and the
    session's environment) is not serve's (None: it is the same)."""
    from triohooks.handlers.judge import judge_from_env

    def judge_of(
        environ: Mapping[str, str], config: tuple[tuple[str, str], ...]
    ) -> tuple[object, ...]:
        built, warning = judge_from_env(environ, dict(config))
        return (sorted(vars(built).items()) if built is not None else None, warning)

    if judge_of(request_env, judge) != judge_of(own_env, own_judge):
        return "the prompt-hook judge differs from serve's"
    return None


async def answer_request(
    engine: HookEngine,
    said: Mapping[str, str],
    body: bytes,
    env: Mapping[str, str],
    *,
    own_env: Mapping[str, str] = os.environ,
    own_settings: bool = True,
) -> bytes:
    """serve's answer to a ``fire`` on its relay socket (``said``: the query's ``event``,
    ``workspace``, ``format``; ``env``: the caller's environment, which the hooks get): the
    :class:`FireReply` as JSON. ``own_settings`` False (serve was started with other configs or
    a trust override) answers ``elsewhere``."""
    workspace = Path(os.fsdecode(urllib.parse.unquote_to_bytes(said.get("workspace", ""))))
    fmt = said.get("format", "json")
    if not own_settings:
        return _encode(FireReply(elsewhere="serve reads other configs than fire would"))
    why = settings_differ(env, own_env)
    if why is not None:
        return _encode(FireReply(elsewhere=why))
    from triohooks.config.table import held_back_summary
    from triohooks.handlers.judge import judge_from_env

    try:
        import trio

        if not workspace.is_absolute() or not await trio.to_thread.run_sync(
            os.path.isdir, workspace
        ):
            raise CliError(f"workspace {workspace} is not a directory")
        _, ev = read_event(said.get("event", ""), body, workspace)
        table = await engine.table_at(str(workspace))
        why = judge_differs(env, table.judge, own_env, engine.table.judge)
        if why is not None:
            return _encode(FireReply(elsewhere=why))
        outcome = await engine.fire_at(ev, env=env)
    except Exception as exc:
        reply = error_reply(exc)
        if reply is None:
            raise
        return _encode(reply)
    reply = reply_for(outcome, ev, fmt)
    # What the command's own engine logs on its stderr as it opens (the loader: the table's
    # problems, its held-back hooks; the engine: a judge that cannot be built), said here too.
    _, judge_warning = judge_from_env(env, dict(table.judge))
    opened = [*map(str, table.problems), held_back_summary(table), judge_warning]
    reply.stderr[:0] = [f"triohooks: {line}" for line in opened if line]
    return _encode(reply)


def _encode(reply: FireReply) -> bytes:
    """The reply on the wire, read without a JSON parser (:func:`triohooks.fronts.cli.
    read_reply`): ``elsewhere WHY\n``, or ``EXIT ERRLEN OUTLEN\n`` then ERRLEN bytes of
    stderr (each line ending in ``\n``) and OUTLEN bytes of stdout, UTF-8."""
    if reply.elsewhere is not None:
        return b"elsewhere " + reply.elsewhere.replace("\n", " ").encode() + b"\n"
    err = "".join(line + "\n" for line in reply.stderr).encode("utf-8", "surrogateescape")
    out = reply.stdout.encode("utf-8", "surrogateescape")
    return b"%d %d %d\n" % (reply.exit, len(err), len(out)) + err + out
