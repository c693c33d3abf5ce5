"""``triohooks replay TRANSCRIPT``: a recorded agent session through today's hooks.

Reads a Claude Code transcript (the JSONL file Claude Code keeps per session under
``~/.claude/projects/<project>/<session>.jsonl``; its path is the ``transcript_path`` of every
hook input) and sends each tool call and each user prompt, in order, through the hooks
triohooks has now for the workspace: ``pre_tool`` for a tool call, ``prompt_submit`` for a
prompt. Only decision events, whose hooks all run in the event's own task: no tool runs
again and no background hook runs, unless ``--all``, which also fires ``post_tool`` /
``post_tool_failure`` with the recorded result (their hooks run in the background, drained
before the replay ends). Audit is off: a replay is a rehearsal, not a record.

Each row says what the call was, what happened then (it ran, failed, was blocked by a hook or
denied), and what the hooks say now (allowed, blocked with the reason, rewritten, context);
the totals count what would change. ``--json`` prints the same as one JSON document. How a
team tries a new guard on yesterday's sessions before turning it on: docs/hook-authors.md.
"""

from __future__ import annotations

import argparse
import shutil
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final, Literal

import msgspec

from .rehearsal import check_config, rehearsal_engine

#: One transcript line longer than this is skipped (counted): no session line comes close.
MAX_LINE: Final = 16 * 1024 * 1024
#: Characters of a recorded result or reason kept for the table and the JSON.
MAX_DETAIL: Final = 300
#: The table's width when stdout is not a terminal.
PIPE_WIDTH: Final = 200
#: Seconds one replayed event may take (each hook has its own timeout; this is the backstop).
EVENT_TIMEOUT_S: Final = 3600.0

Then = Literal["ran", "failed", "blocked by hook", "denied", "no result", "submitted"]


class TranscriptError(Exception):
    """The transcript cannot be read as an agent session."""


class Step(msgspec.Struct, kw_only=True):
    """One tool call or prompt of the session, and what happened to it then."""

    line: int
    kind: Literal["tool", "prompt"]
    time: str
    session: str
    cwd: str
    tool: str | None = None
    args: dict[str, Any] | None = None
    tool_use_id: str | None = None
    prompt: str | None = None
    then: Then = "no result"
    #: The recorded result's or refusal's first line.
    then_detail: str = ""
    #: The recorded result (``--all`` gives it to ``post_tool``).
    result: Any = None


class Now(msgspec.Struct, kw_only=True):
    """What today's hooks say of a step."""

    event: str
    blocked: bool
    decision: str | None
    reason: str | None
    args: dict[str, Any] | None
    prompt: str | None
    context: str | None
    warnings: list[str]
    #: Each hook that ran and its outcome (``ok``, ``block``, ``error`` ...).
    ran: list[dict[str, str]]


class Row(msgspec.Struct, kw_only=True):
    step: Step
    now: Now

    @property
    def rewritten(self) -> bool:
        if self.step.kind == "tool":
            return self.now.args is not None and self.now.args != self.step.args
        return self.now.prompt is not None and self.now.prompt != self.step.prompt


class Transcript(msgspec.Struct, kw_only=True):
    path: str
    steps: list[Step]
    #: Lines that were not JSON objects (or too long): skipped, and said.
    skipped: int
    cwd: str | None


def add_replay_command(sub: Any) -> None:
    from .cli import scope_args

    p = sub.add_parser(
        "replay", help="send a recorded session's tool calls and prompts through today's hooks"
    )
    p.add_argument("transcript", type=Path, help="a Claude Code transcript (.jsonl)")
    scope_args(p, workspace_help="workspace whose hooks apply (default: the session's own)")
    p.add_argument("--trust", action="store_true", help="trust the workspace's hooks for the run")
    p.add_argument(
        "--all",
        action="store_true",
        help="also fire post_tool / post_tool_failure with the recorded results",
    )
    p.add_argument("--json", action="store_true", help="print the rows and totals as JSON")


# --- reading a Claude Code transcript ------------------------------------------------------------


def _lines(path: Path) -> Iterator[tuple[int, bytes | None]]:
    """(line number, line) for each line; None for one over :data:`MAX_LINE` (skipped)."""
    with path.open("rb") as f:
        number = 0
        while True:
            line = f.readline(MAX_LINE + 1)
            if not line:
                return
            number += 1
            if len(line) > MAX_LINE and not line.endswith(b"\n"):
                while line and not line.endswith(b"\n"):  # the rest of the long line
                    line = f.readline(MAX_LINE)
                yield number, None
                continue
            yield number, line


def _text(content: Any) -> str:
    """A message's or tool result's text: the string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            b["text"]
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        )
    return ""


def _first_line(text: str) -> str:
    line = text.strip().split("\n", 1)[0]
    return line if len(line) <= MAX_DETAIL else line[: MAX_DETAIL - 1] + "…"


def read_claude_transcript(path: Path) -> Transcript:
    """The tool calls and user prompts of a Claude Code transcript, in order, each with what
    its recorded result says happened. Raises :class:`TranscriptError` for a file that is not
    a regular file or holds no Claude Code session line."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise TranscriptError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):  # a FIFO or device would block or never end
        raise TranscriptError(f"{path}: not a regular file")
    steps: list[Step] = []
    calls: dict[str, Step] = {}
    skipped = 0
    session_lines = 0
    first_cwd: str | None = None
    try:
        for number, raw in _lines(path):
            if raw is None:
                skipped += 1
                continue
            if not raw.strip():
                continue
            try:
                entry = msgspec.json.decode(raw)
            except (msgspec.DecodeError, RecursionError):
                skipped += 1
                continue
            if not isinstance(entry, dict):
                skipped += 1
                continue
            kind = entry.get("type")
            message = entry.get("message")
            if kind not in ("user", "assistant") or not isinstance(message, dict):
                continue
            session_lines += 1
            cwd = entry.get("cwd") if isinstance(entry.get("cwd"), str) else ""
            if first_cwd is None and cwd:
                first_cwd = cwd
            common: dict[str, Any] = {
                "line": number,
                "time": str(entry.get("timestamp") or ""),
                "session": str(entry.get("sessionId") or ""),
                "cwd": cwd,
            }
            content = message.get("content")
            if kind == "assistant":
                for block in content if isinstance(content, list) else ():
                    if not isinstance(block, dict) or block.get("type") != "tool_use":
                        continue
                    name, args = block.get("name"), block.get("input")
                    if not isinstance(name, str):
                        continue
                    use_id = block.get("id") if isinstance(block.get("id"), str) else None
                    step = Step(
                        kind="tool",
                        tool=name,
                        args=args if isinstance(args, dict) else {},
                        tool_use_id=use_id,
                        **common,
                    )
                    steps.append(step)
                    if use_id is not None:
                        calls[use_id] = step
                continue
            results = [
                b
                for b in (content if isinstance(content, list) else ())
                if isinstance(b, dict) and b.get("type") == "tool_result"
            ]
            for block in results:
                called = calls.get(str(block.get("tool_use_id")))
                if called is not None:
                    _settle(called, block, entry.get("permissionDecision"))
            if results or entry.get("isMeta") or entry.get("isSidechain"):
                continue  # a tool result, a note Claude Code added, or a subagent's brief
            prompt = _text(content)
            if prompt:
                steps.append(Step(kind="prompt", prompt=prompt, then="submitted", **common))
    except OSError as exc:
        raise TranscriptError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if session_lines == 0:
        raise TranscriptError(
            f"{path}: no Claude Code session lines (user/assistant messages) in it; "
            "replay reads Claude Code transcripts (~/.claude/projects/*/*.jsonl)"
        )
    return Transcript(path=str(path), steps=steps, skipped=skipped, cwd=first_cwd)


def _settle(step: Step, block: dict[str, Any], permission: Any) -> None:
    """What the recorded tool result says happened to ``step``."""
    text = _text(block.get("content"))
    step.result = block.get("content")
    step.then_detail = _first_line(text)
    refused = isinstance(permission, dict) and permission.get("decision") in ("reject", "deny")
    if refused and permission.get("source") == "hook":
        step.then = "blocked by hook"
    elif refused:
        step.then = "denied"
    elif block.get("is_error") is True:
        step.then = "failed"
    else:
        step.then = "ran"


# --- replaying ----------------------------------------------------------------------------------


def _now(step: Step, outcome: Any) -> Now:
    return Now(
        event=outcome.event,
        blocked=outcome.blocked,
        decision=outcome.decision,
        reason=outcome.reason,
        args=outcome.args,
        prompt=outcome.prompt,
        context=outcome.additional_context,
        warnings=list(outcome.warnings),
        ran=[{"hook": r.hook, "outcome": r.outcome} for r in outcome.runs],
    )


async def replay(transcript: Transcript, args: argparse.Namespace, workspace: Path) -> list[Row]:
    """Every step through the engine, in order."""
    import trio

    rows: list[Row] = []
    async with rehearsal_engine(args, workspace) as engine:
        for step in transcript.steps:
            common = {
                "session_id": step.session or "replay",
                "cwd": step.cwd,
                "workspace": str(workspace),
                "transcript_path": transcript.path,
                "agent": "claude",
            }
            with trio.fail_after(EVENT_TIMEOUT_S):
                if step.kind == "prompt":
                    outcome = await engine.fire("prompt_submit", {**common, "prompt": step.prompt})
                else:
                    call = {**common, "tool": step.tool, "args": step.args or {}}
                    if step.tool_use_id:
                        call["tool_call_id"] = step.tool_use_id
                    outcome = await engine.fire("pre_tool", call)
                    if args.all and step.then in ("ran", "failed"):
                        if step.then == "ran":
                            await engine.fire("post_tool", {**call, "result": step.result})
                        else:
                            await engine.fire(
                                "post_tool_failure", {**call, "error": step.then_detail}
                            )
            rows.append(Row(step=step, now=_now(step, outcome)))
    return rows


# --- output -------------------------------------------------------------------------------------


def _oneline(text: str) -> str:
    return " ".join(text.split())


def describe_call(step: Step) -> str:
    if step.kind == "prompt":
        return f"prompt: {_oneline(step.prompt or '')}"
    args = step.args or {}
    shown = next(
        (args[k] for k in ("command", "file_path", "path", "url", "pattern") if k in args), None
    )
    if not isinstance(shown, str):
        shown = msgspec.json.encode(args).decode()
    return f"{step.tool}: {_oneline(shown)}"


def describe_then(step: Step) -> str:
    if step.then in ("blocked by hook", "denied", "failed") and step.then_detail:
        return f"{step.then}: {step.then_detail}"
    return step.then


def describe_now(row: Row) -> str:
    now = row.now
    parts: list[str] = []
    if now.blocked:
        parts.append(f"BLOCKED: {_oneline(now.reason or now.decision or '')}".rstrip(": "))
    elif row.rewritten:
        new = now.args if row.step.kind == "tool" else now.prompt
        shown = new if isinstance(new, str) else msgspec.json.encode(new).decode()
        parts.append(f"REWRITTEN: {_oneline(shown)}")
    else:
        parts.append("allowed")
    if now.context:
        parts.append(f"context: {_oneline(now.context)}")
    parts += [f"warning: {_oneline(w)}" for w in now.warnings]
    return "; ".join(parts)


def totals(rows: list[Row]) -> dict[str, int]:
    blocked_then = {"blocked by hook", "denied"}
    return {
        "tool_calls": sum(1 for r in rows if r.step.kind == "tool"),
        "prompts": sum(1 for r in rows if r.step.kind == "prompt"),
        "blocked_now": sum(1 for r in rows if r.now.blocked),
        "blocked_now_ran_then": sum(
            1 for r in rows if r.now.blocked and r.step.then not in blocked_then
        ),
        "allowed_now_blocked_then": sum(
            1 for r in rows if not r.now.blocked and r.step.then in blocked_then
        ),
        "rewritten_now": sum(1 for r in rows if r.rewritten and not r.now.blocked),
        "context_now": sum(1 for r in rows if r.now.context),
        "warnings_now": sum(1 for r in rows if r.now.warnings),
    }


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def print_table(rows: list[Row], transcript: Transcript) -> None:
    # A terminal's width; into a pipe or a file, wide rows (grep reads them whole).
    width = max(shutil.get_terminal_size().columns, 80) if sys.stdout.isatty() else PIPE_WIDTH
    call_w = min(48, max(24, width // 3))
    then_w = min(28, max(14, width // 5))
    print(f"{'#':>4}  {'CALL':<{call_w}}  {'THEN':<{then_w}}  NOW")
    now_w = max(width - call_w - then_w - 10, 20)
    for n, row in enumerate(rows, 1):
        print(
            f"{n:>4}  {_cut(describe_call(row.step), call_w):<{call_w}}  "
            f"{_cut(describe_then(row.step), then_w):<{then_w}}  "
            f"{_cut(describe_now(row), now_w)}"
        )
    t = totals(rows)
    print(
        f"\n{t['tool_calls']} tool call(s), {t['prompts']} prompt(s): "
        f"{t['blocked_now']} blocked now ({t['blocked_now_ran_then']} of them went through then), "
        f"{t['rewritten_now']} rewritten, {t['context_now']} given context, "
        f"{t['allowed_now_blocked_then']} blocked then and allowed now"
    )
    if t["warnings_now"]:
        print(f"{t['warnings_now']} with warnings: read the NOW column")
    if transcript.skipped:
        print(f"{transcript.skipped} transcript line(s) skipped: not JSON objects")


def as_json(rows: list[Row], transcript: Transcript, workspace: Path) -> bytes:
    return msgspec.json.encode(
        {
            "transcript": transcript.path,
            "workspace": str(workspace),
            "skipped_lines": transcript.skipped,
            "rows": [
                {
                    "line": r.step.line,
                    "time": r.step.time,
                    "kind": r.step.kind,
                    "tool": r.step.tool,
                    "args": r.step.args,
                    "prompt": r.step.prompt,
                    "then": r.step.then,
                    "then_detail": r.step.then_detail,
                    "now": r.now,
                    "rewritten": r.rewritten,
                }
                for r in rows
            ],
            "totals": totals(rows),
        }
    )


def cmd_replay(args: argparse.Namespace) -> int:
    import trio

    try:
        transcript = read_claude_transcript(args.transcript)
    except TranscriptError as exc:
        print(f"triohooks replay: {exc}", file=sys.stderr)
        return 1
    if args.workspace is not None:
        workspace = args.workspace
    elif transcript.cwd and Path(transcript.cwd).is_dir():
        workspace = Path(transcript.cwd)
    else:
        where = f" ({transcript.cwd})" if transcript.cwd else ""
        print(
            f"triohooks replay: the session's directory{where} is not here; "
            "name the workspace whose hooks apply with --workspace",
            file=sys.stderr,
        )
        return 1
    if not workspace.is_dir():
        print(f"triohooks replay: workspace {workspace} is not a directory", file=sys.stderr)
        return 1
    workspace = workspace.resolve()
    check_config(args, workspace)
    for step in transcript.steps:  # the hooks' cwd: the session's, while it is still there
        if not (step.cwd and Path(step.cwd).is_dir()):
            step.cwd = str(workspace)
    if not transcript.steps:
        print(f"triohooks replay: {args.transcript}: no tool calls or prompts", file=sys.stderr)
    rows = trio.run(replay, transcript, args, workspace)
    if args.json:
        sys.stdout.buffer.write(as_json(rows, transcript, workspace) + b"\n")
    else:
        print_table(rows, transcript)
    return 0
