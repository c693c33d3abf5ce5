"""The two dialects' run-and-read contracts: how a hook is fed, and how its end is read.

TOML dialect (blitz, HK-20/21/53/60): exit 2 blocks (stderr is the reason); exit 0 with an
empty stdout has no opinion, with a JSON object is a reply, with other text is plain output
(context for session_start / prompt_submit); anything else is a failure.

JSON dialect (everruns, yolop "Executor Contract"): the payload travels in ``EVERRUNS_HOOK_*``
environment variables and a private file; stdout is ``{decision: allow|block|mutate, reason,
user_message, patch}``; a decision overrides the exit code; an empty stdout is allow on exit 0
and an error otherwise; more than 64 KiB of output is an error.

Owns: turning a :class:`~triohooks.actors.reaper.ProcessResult` into a :class:`RunResult`, building
the JSON dialect's environment and payload, and the payload file. Must not: start processes, apply
``on_error`` / ``fail_closed`` or combine runs (the dispatcher does), or do I/O beyond the
payload file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import msgspec

from triohooks.config.stamps import utc_stamp

from .outcomes import Outcome

if TYPE_CHECKING:  # the type only: reading a result needs no process machinery
    from .process import ProcessResult

#: The JSON dialect's output limit, per stream (yolop: "Hook output is capped").
JSON_OUTPUT_CAP: Final = 64 * 1024
#: The TOML dialect keeps this much of each stream and discards the rest.
TOML_OUTPUT_CAP: Final = 100 * 1024
#: How much stderr a failure message quotes.
STDERR_EXCERPT: Final = 200
#: How much of a non-JSON stdout a JSON-dialect error quotes.
STDOUT_EXCERPT: Final = 80
#: Linux refuses (E2BIG) any single environment string longer than this (MAX_ARG_STRLEN).
MAX_ENV_STRING: Final = 32 * 4096


class RunResult(msgspec.Struct, frozen=True, kw_only=True):
    """One hook run, read the way its dialect reads it."""

    outcome: Outcome
    #: As the hook said: block/allow/deny/ask/mutate/"" (blitz "no opinion"); None = said none.
    decision: str | None = None
    reason: str | None = None
    user_message: str | None = None
    continue_: bool | None = msgspec.field(default=None, name="continue")
    additional_context: str | None = None
    #: TOML dialect.
    updated_args: dict[str, Any] | None = None
    #: JSON dialect, decision mutate.
    patch: dict[str, Any] | None = None
    system_message: str | None = None
    #: TOML: non-JSON stdout on exit 0 (context for session_start / prompt_submit).
    plain_output: str | None = None
    #: The call is proven safe to run without the agent's own permission prompt. Only a
    #: built-in guard's verdict sets it (``approve_read_only``); no hook's reply can: a hook's
    #: ``allow`` is its no-objection (the JSON dialect's very reply to go on).
    approved: bool = False
    exit_code: int | None = None
    signal: int | None = None
    duration_ms: float = 0.0
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    truncated: bool = False
    #: Why it failed (outcome error / timeout / spawn_failed / killed).
    error: str | None = None
    #: prompt hooks: the judge's token counts, when it reports them.
    input_tokens: int | None = None
    output_tokens: int | None = None
    #: What the user should know that is not a decision (a built-in guard that let a call
    #: it could not read through): an Outcome warning.
    warning: str | None = None
    #: The failure is ours (a bug in a runner or the process guard), not the hook's: it fails
    #: closed whatever the hook's own failure rule (``triohooks.combine``).
    internal: bool = False


class _TomlReply(msgspec.Struct):
    """A blitz reply object; unknown fields are ignored, wrong types are an error."""

    decision: str | None = None
    reason: str | None = None
    continue_: bool | None = msgspec.field(default=None, name="continue")
    additional_context: str | None = None
    updated_args: dict[str, Any] | None = None
    system_message: str | None = None


class _JsonReply(msgspec.Struct):
    """An everruns reply object."""

    decision: str | None = None
    reason: str | None = None
    user_message: str | None = None
    patch: Any = None


_TOML_REPLY: Final = msgspec.json.Decoder(_TomlReply)
_JSON_REPLY: Final = msgspec.json.Decoder(_JsonReply)


_FAILURE_OUTCOMES: Final[dict[str, Outcome]] = {
    "timeout": "timeout",
    "spawn_failed": "spawn_failed",
    "killed": "killed",
    "overflow": "error",
    "signaled": "error",
    "worker_error": "error",
}


def _measures(result: ProcessResult) -> dict[str, Any]:
    return {
        "exit_code": result.exit_code,
        "signal": result.signal,
        "duration_ms": result.duration_ms,
        "stdout_bytes": result.stdout_bytes,
        "stderr_bytes": result.stderr_bytes,
        "truncated": result.truncated,
    }


def _excerpt(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + "..."


def _process_failure(result: ProcessResult) -> RunResult | None:
    """The reading of a run that did not exit on its own, the same in both dialects."""
    if result.status == "exited":
        return None
    outcome = _FAILURE_OUTCOMES[result.status]
    error = result.error or result.status
    if result.status == "signaled" and result.stderr.strip():
        error = f"{error}: {_excerpt(result.stderr, STDERR_EXCERPT)}"
    return RunResult(outcome=outcome, error=error, internal=result.internal, **_measures(result))


def _exit_error(result: ProcessResult, what: str) -> str:
    error = f"hook exited with code {result.exit_code}{what}"
    if result.stderr.strip():
        error += f": {_excerpt(result.stderr, STDERR_EXCERPT)}"
    return error


def _decode_error(exc: msgspec.DecodeError, truncated: bool) -> str:
    if truncated:
        return f"invalid JSON reply (output was truncated): {exc}"
    return f"invalid JSON reply: {exc}"


# --- TOML dialect -------------------------------------------------------------------------


def read_toml_reply(result: ProcessResult) -> RunResult:
    """Read a command/args hook's end the blitz way (HK-20, HK-21, HK-53, HK-60)."""
    failed = _process_failure(result)
    if failed is not None:
        return failed
    measures = _measures(result)
    if result.exit_code == 2:
        reason = result.stderr.strip() or "blocked by hook"
        return RunResult(outcome="block", decision="block", reason=reason, **measures)
    if result.exit_code != 0:
        return RunResult(outcome="error", error=_exit_error(result, ""), **measures)
    parsed = parse_toml_stdout(result.stdout, truncated=result.truncated)
    return msgspec.structs.replace(parsed, **measures)


def parse_toml_stdout(text: str, *, truncated: bool = False) -> RunResult:
    """Read a successful blitz hook's stdout (or a 2xx http body).

    Empty: no opinion. Starts with ``{``: exactly one JSON reply object. Other text: plain
    output. ``truncated`` says the text is only the head of what was produced.
    """
    body = text.strip()
    if not body:
        return RunResult(outcome="ok", truncated=truncated)
    if not body.startswith("{"):
        return RunResult(outcome="ok", plain_output=body, truncated=truncated)
    try:
        reply = _TOML_REPLY.decode(body)
    except msgspec.DecodeError as exc:
        return RunResult(outcome="error", error=_decode_error(exc, truncated), truncated=truncated)
    blocks = reply.decision in ("block", "deny")
    return RunResult(
        outcome="block" if blocks else "ok",
        decision=reply.decision,
        reason=(reply.reason or "blocked by hook") if blocks else reply.reason,
        continue_=reply.continue_,
        additional_context=reply.additional_context,
        updated_args=reply.updated_args,
        system_message=reply.system_message,
        truncated=truncated,
    )


# --- JSON dialect -------------------------------------------------------------------------


def read_json_reply(result: ProcessResult) -> RunResult:
    """Read a hook's end the everruns way. ``on_error`` is not applied here."""
    failed = _process_failure(result)
    if failed is not None:
        return failed
    measures = _measures(result)
    body = result.stdout.strip()
    code = "" if result.exit_code == 0 else f" (exit code {result.exit_code})"
    if not body:
        if result.exit_code == 0:
            return RunResult(outcome="ok", **measures)
        return RunResult(outcome="error", error=_exit_error(result, " and no output"), **measures)
    if not body.startswith("{"):
        quoted = body.encode()[:STDOUT_EXCERPT].decode(errors="replace")
        error = f"hook output is not a JSON object{code}: {quoted!r}"
        return RunResult(outcome="error", error=error, **measures)
    try:
        reply = _JSON_REPLY.decode(body)
    except msgspec.DecodeError as exc:
        error = _decode_error(exc, result.truncated) + code
        return RunResult(outcome="error", error=error, **measures)
    said: dict[str, Any] = {
        "decision": reply.decision,
        "reason": reply.reason,
        "user_message": reply.user_message,
    }
    if reply.decision == "allow":
        return RunResult(outcome="ok", **said, **measures)
    if reply.decision == "block":
        said["reason"] = reply.reason or "hook blocked"
        return RunResult(outcome="block", **said, **measures)
    if reply.decision == "mutate":
        if not isinstance(reply.patch, dict):
            error = "decision mutate needs an object patch"
            return RunResult(outcome="error", error=error, **said, **measures)
        return RunResult(outcome="mutate", patch=reply.patch, **said, **measures)
    error = "reply has no decision" if reply.decision is None else "unknown decision"
    if reply.decision is not None:
        error += f" {reply.decision!r} (expected allow, block or mutate)"
    return RunResult(outcome="error", error=error, **said, **measures)


def json_hook_environment(
    *,
    base_env: Mapping[str, str],
    hook_id: str,
    event_name: str,
    session_id: str,
    turn_id: str | None,
    tool_name: str | None,
    tool_call_id: str | None,
    payload_json: str,
    payload_path: str,
    spec_env: Sequence[tuple[str, str]],
) -> dict[str, str]:
    """The environment of a JSON-dialect hook: ``base_env`` without any inherited
    ``EVERRUNS_HOOK_*``, then the payload variables, then the hook's own ``env`` (last wins).

    ``EVERRUNS_HOOK_PAYLOAD_JSON`` is left out when Linux would refuse it (over 128 KiB,
    E2BIG); the same payload is always in the file at ``EVERRUNS_HOOK_PAYLOAD_PATH``.
    """
    env = {k: v for k, v in base_env.items() if not k.startswith("EVERRUNS_HOOK_")}
    name = "EVERRUNS_HOOK_PAYLOAD_JSON"
    if len(name) + 2 + len(payload_json.encode()) <= MAX_ENV_STRING:
        env[name] = payload_json
    env["EVERRUNS_HOOK_PAYLOAD_PATH"] = payload_path
    env["EVERRUNS_HOOK_EVENT"] = event_name
    env["EVERRUNS_HOOK_ID"] = hook_id
    env["EVERRUNS_HOOK_SESSION_ID"] = session_id
    optional = {
        "EVERRUNS_HOOK_TURN_ID": turn_id,
        "EVERRUNS_HOOK_TOOL_NAME": tool_name,
        "EVERRUNS_HOOK_TOOL_CALL_ID": tool_call_id,
    }
    env.update({k: v for k, v in optional.items() if v is not None})
    env.update(spec_env)
    return env


def json_payload(
    *,
    event_name: str,
    hook_id: str,
    session_id: str,
    turn_id: str | None,
    data: Mapping[str, Any],
) -> bytes:
    """``{event, hook_id, session_id, turn_id, ts, data}`` as JSON; ``ts`` RFC 3339 UTC."""
    ts = utc_stamp()
    return msgspec.json.encode(
        {
            "event": event_name,
            "hook_id": hook_id,
            "session_id": session_id,
            "turn_id": turn_id,
            "ts": ts,
            "data": data,
        }
    )
