"""How one hook's end is read, by the rules of the agent it was written for (docs/agents.md,
"How a hook's end is read", cites each agent's source).

Claude Code: exit 0 with stdout starting with ``{`` is a JSON reply, other stdout is plain
text (context for UserPromptSubmit and SessionStart); exit 2 blocks with stderr as the reason
(JSON ignored); any other exit, a timeout or a spawn failure is a non-blocking error and the
action proceeds. Codex: the same, but an exit 2 that wrote no reason on stderr is a failed hook
(the call proceeds). Gemini CLI reads the text ``stdout.trim() || stderr.trim()`` whatever the
exit code: a JSON object there is the reply (the exit code then does not matter); plain text
is a system message on exit 0, a warning on exit 1 and a deny on any other exit; no text at all
is no decision; a timeout ignores whatever was printed.

Copilot CLI reads a hook like Claude Code, but denies a ``preToolUse`` or ``permissionRequest``
call itself when the hook fails (any exit but 0 and 2, a signal; on a permission request also
stdout that is not JSON), with its own words ("hook errored"); a timeout lets the call run.
Cursor's hooks answer JSON only: other stdout is a failed hook. Antigravity CLI (reported, not
measured) denies a call whose hook failed, timed out or printed no JSON, and reads a call's
answer without a decision as a deny (:func:`triohooks.agents.agy.claude_reply`). Measured per
agent (all but Antigravity CLI), and pinned, in ``tests/interop/hook_ends.py``.

A prompt hook (Claude Code's ``prompt`` and ``agent`` types) is read from the model's answer,
``{"ok": bool, "reason": ...}``: not ok blocks with the reason, anything else fails the hook.

A hook marked ``failClosed`` (a triohooks extension, and Cursor's own key) or ``onFailure:
"block"`` (Claude Code's) turns any failure or timeout into a block. Pure: it reads results, it
runs nothing.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import msgspec

from triohooks.handlers.process import ProcessResult

from .config import AgentHook
from .foreign import claude_event
from .spec import SPECS

#: Claude caps hook strings (context, reasons) at this many characters.
MAX_TEXT: Final = 10_000
#: How much stderr a failure message quotes.
STDERR_EXCERPT: Final = 300

Status = Literal["ok", "block", "error"]


class AgentReply(msgspec.Struct, kw_only=True):
    """One hook's answer in agent-neutral terms."""

    status: Status
    #: The decoded JSON object the hook printed (exit 0), if any.
    json: dict[str, Any] | None = None
    #: Plain (non-JSON) stdout of exit 0.
    text: str | None = None
    #: Why it blocked (exit 2: its stderr) or failed.
    reason: str | None = None
    exit_code: int | None = None
    duration_ms: float = 0.0
    error: str | None = None
    truncated: bool = False
    #: Not run: a project hook held back (not trusted); the answer says so.
    held_back: bool = False


def _clip(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT]


def _stdout_reply(stdout: str) -> tuple[dict[str, Any] | None, str | None]:
    stripped = stdout.strip()
    if stripped.startswith("{"):
        try:
            value = msgspec.json.decode(stripped)
        except msgspec.DecodeError:
            return None, stripped
        if isinstance(value, dict):
            return value, None
    return None, stripped or None


def failed(hook: AgentHook, why: str, *, timed_out: bool = False, **fields: Any) -> AgentReply:
    """A hook that did not answer (``timed_out``: it ran out of time): a non-blocking error; a
    block when it is fail-closed, or where the agent itself denies a call whose hook failed
    (in the agent's words)."""
    if hook.on_failure_block:
        reason = f'hook {hook.label}: {why}; blocking because onFailure is "block"'
        return AgentReply(status="block", reason=reason, error=why, **fields)
    if hook.fail_closed:
        return AgentReply(
            status="block", reason=f"hook {hook.label} failed: {why}", error=why, **fields
        )
    says = None if timed_out and not SPECS[hook.agent].timeout_denies else _failure_denies(hook)
    if says is not None:
        reason = f"{says} (hook {hook.label}: {why})"
        return AgentReply(status="block", reason=reason, error=why, **fields)
    return AgentReply(status="error", error=why, **fields)


def _failure_denies(hook: AgentHook) -> str | None:
    """The agent's words when it denies a call whose ``hook`` failed, or None."""
    return SPECS[hook.agent].failure_denies.get(claude_event(hook.agent, hook.event))


def _unreadable(hook: AgentHook, text: str | None) -> bool:
    """Whether exit-0 ``text`` (stdout that is no JSON object) fails ``hook``: it is not JSON
    at all, on an event where the agent counts that as a failure."""
    if (
        text is None
        or claude_event(hook.agent, hook.event) not in SPECS[hook.agent].unreadable_fails
    ):
        return False
    try:
        msgspec.json.decode(text)
    except msgspec.DecodeError:
        return True
    return False


def internal_failure(hook: AgentHook, why: str, **fields: Any) -> AgentReply:
    """Our own failure running ``hook`` (a bug, a run the process guard lost or ended): a
    block whatever the hook's ``failClosed``, as on the native path -- the guard stays closed."""
    text = f"triohooks internal error running hook {hook.label}: {why}"
    return AgentReply(status="block", reason=text, error=text, **fields)


def read_process_reply(hook: AgentHook, result: ProcessResult) -> AgentReply:
    common: dict[str, Any] = {
        "exit_code": result.exit_code,
        "duration_ms": result.duration_ms,
        "truncated": result.truncated,
    }
    if result.internal:
        return internal_failure(hook, result.error or result.status, **common)
    if result.status != "exited":
        timed_out = result.status == "timeout"
        return failed(hook, result.error or result.status, timed_out=timed_out, **common)
    if hook.agent == "gemini":
        return _gemini_reply(hook, result, common)
    code = result.exit_code
    stderr = result.stderr.strip()
    if code == 0:
        json_reply, text = _stdout_reply(result.stdout)
        if _unreadable(hook, text):
            return failed(hook, "exit 0, but its output is not JSON", **common)
        return AgentReply(status="ok", json=json_reply, text=text, **common)
    if code == 2 and (stderr or hook.agent != "codex"):
        return AgentReply(status="block", reason=_clip(stderr) or None, **common)
    if code == 2:
        return failed(hook, "exited 2 but wrote no blocking reason on stderr", **common)
    excerpt = stderr[:STDERR_EXCERPT]
    return failed(hook, f"exit {code}" + (f": {excerpt}" if excerpt else ""), **common)


def _gemini_reply(hook: AgentHook, result: ProcessResult, common: dict[str, Any]) -> AgentReply:
    """Gemini CLI's ``convertPlainTextToHookOutput`` and JSON reading (hookRunner.ts)."""
    code = result.exit_code or 0
    text = result.stdout.strip() or result.stderr.strip()
    if not text:
        if code == 0:
            return AgentReply(status="ok", **common)
        return failed(hook, f"exit {code} with no output (no decision)", **common)
    try:
        value: Any = msgspec.json.decode(text)
        if isinstance(value, str):  # Gemini parses a JSON string once more
            value = msgspec.json.decode(value)
    except msgspec.DecodeError:
        value = None
    else:
        if isinstance(value, dict):
            return AgentReply(status="ok", json=value, **common)
        if code == 0:
            return AgentReply(status="ok", **common)  # JSON but not an object: no decision
        return failed(hook, f"exit {code}; its output is JSON but not an object", **common)
    if code == 0:
        return AgentReply(status="ok", json={"systemMessage": _clip(text)}, **common)
    if code == 1:
        return AgentReply(status="ok", json={"systemMessage": "Warning: " + _clip(text)}, **common)
    return AgentReply(status="block", reason=_clip(text), error=f"exit {code}", **common)


def read_http_reply(
    hook: AgentHook, status: str, code: int | None, body: str, error: str | None, duration_ms: float
) -> AgentReply:
    """Claude: 2xx with an empty body is no opinion, with a JSON object the same as a command's
    stdout; anything else (non-2xx, another body, a refused connection, a timeout) is a
    non-blocking error. A status code cannot block."""
    common: dict[str, Any] = {"duration_ms": duration_ms, "exit_code": code}
    if status != "ok":
        return failed(hook, error or status, timed_out=status == "timeout", **common)
    text = body.strip()
    if not text:
        return AgentReply(status="ok", **common)
    json_reply, _ = _stdout_reply(text)
    if json_reply is None:
        return failed(hook, "the reply body is not a JSON object", **common)
    return AgentReply(status="ok", json=json_reply, **common)


def read_judge_reply(hook: AgentHook, text: str, duration_ms: float) -> AgentReply:
    """Claude Code's prompt (and agent) hooks: the model answers ``{"ok": bool, "reason":
    ...}``; ok goes on, not ok blocks with the reason; any other answer is the hook's failure
    (non-blocking, unless it is fail-closed)."""
    try:
        verdict = msgspec.json.decode(text.strip())
    except msgspec.DecodeError:
        return failed(hook, "the judge answered no JSON", duration_ms=duration_ms)
    if not isinstance(verdict, dict) or not isinstance(verdict.get("ok"), bool):
        return failed(hook, "the judge's answer has no boolean ok", duration_ms=duration_ms)
    if verdict["ok"]:
        return AgentReply(status="ok", duration_ms=duration_ms)
    reason = verdict.get("reason")
    return AgentReply(
        status="block",
        reason=_clip(reason)
        if isinstance(reason, str) and reason
        else f"hook {hook.label} said no",
        duration_ms=duration_ms,
    )
