"""How each agent reads the end of one of its own hooks, measured with the real CLIs, as a table
the interop suite (the real CLIs, alone and through triohooks: ``test_hook_ends.py``) and the
unit tests (triohooks' own reading, no CLI: ``tests/test_agent_hook_ends.py``) both pin.

The ends: exit 0, exit 1, 2 and 3 with words on stderr and without, a crash (the hook killed by
a signal), a timeout (a hook that sleeps past its own), stdout that is broken JSON and stdout
that is plain text, both on exit 0. One hook answers every case (:func:`dispatcher`): it reads
its input and acts out the case whose token (``@exit1@``) the call or the prompt holds, so one
session scripts one call per case (:func:`call_command`).

A :class:`Reading` says whether the call runs when the agent alone runs the hook, what the
model is then told (a piece of it, the same through triohooks), and -- where triohooks is
stricter -- that it denies, and why. Through triohooks a call never runs that the agent alone
would have denied. Measured with Claude Code 2.1.332, Codex 0.169.1, Gemini CLI 0.61.0, Qwen
Code 0.24.4 and Copilot CLI 1.0.102; Cursor's by its documented contract (no CLI here).
Stdlib only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

#: Each end, as the shell that acts it out.
CASES: Final[dict[str, str]] = {
    "exit0": "exit 0",
    "exit1": "echo said-exit1 >&2; exit 1",
    "exit1-silent": "exit 1",
    "exit2": "echo said-exit2 >&2; exit 2",
    "exit2-silent": "exit 2",
    "exit3": "echo said-exit3 >&2; exit 3",
    "exit3-silent": "exit 3",
    "crash": "echo said-crash >&2; kill -9 $$",
    "timeout": "echo said-timeout >&2; exec sleep 30",
    "badjson": "echo '{\"decision\": '; exit 0",
    "text": "echo said-text; exit 0",
}
#: The hook's own timeout in the interop sessions (the ``timeout`` case sleeps past it).
HOOK_TIMEOUT_S: Final = 3


def token(case: str) -> str:
    return f"@{case}@"


def dispatcher() -> str:
    """The one hook command: read the input, act out the case whose token is in it (none:
    exit 0)."""
    arms = " ".join(f"*{token(name)}*) {shell};;" for name, shell in CASES.items())
    return f'i=$(cat); case "$i" in {arms} esac; exit 0'


def call_command(case: str) -> str:
    """The scripted shell call of ``case``: it leaves ``marker-<case>.txt`` if it ran."""
    return f"echo {token(case)} > marker-{case}.txt"


def prompt_of(case: str) -> str:
    return f"Run the scripted commands. {token(case)}"


@dataclass(frozen=True)
class Reading:
    """One end of a hook, read by its agent."""

    #: The call runs (or, on a prompt event, the prompt goes on and its call runs) when the
    #: agent alone runs the hook.
    runs: bool
    #: A piece of what the model is told of the deny, alone and through triohooks ("" none).
    says: str = ""
    #: Through triohooks, where it is stricter (denies what the agent alone lets run): why.
    stricter: str = ""

    @property
    def runs_through_triohooks(self) -> bool:
        return self.runs and not self.stricter


def readings(
    denies: Mapping[str, str], stricter: Mapping[str, str] | None = None
) -> dict[str, Reading]:
    """Every case runs but those ``denies`` names (case -> what the model is told of it);
    ``stricter``: the cases triohooks denies though the agent lets them run (case -> why)."""
    more = stricter or {}
    return {
        case: Reading(
            runs=case not in denies, says=denies.get(case, ""), stricter=more.get(case, "")
        )
        for case in CASES
    }


@dataclass(frozen=True)
class Table:
    """How ``agent`` reads its hooks' ends on ``event`` (its own name), with ``fields`` added to
    the handler; ``version``: what it was measured with."""

    agent: str
    event: str
    readings: Mapping[str, Reading]
    version: str
    fields: Mapping[str, Any] = field(default_factory=dict)
    #: Is it a tool-call event (one session, one call per case) or a prompt (one per case)?
    tool_call: bool = True

    @property
    def id(self) -> str:
        extra = "".join(f"-{k}={v}" for k, v in self.fields.items())
        return f"{self.agent}-{self.event}{extra}"


_EXIT2 = {"exit2": "said-exit2"}
_GEMINI = {"exit2": "said-exit2", "exit3": "said-exit3"}
_ON_FAILURE = 'onFailure is "block"'
_CLAUDE_ON_FAILURE = {
    **{case: _ON_FAILURE for case in ("exit1", "exit1-silent", "exit3", "exit3-silent")},
    **{"crash": _ON_FAILURE, "timeout": _ON_FAILURE, "exit2-silent": ""},
    **_EXIT2,
}
_ERRORED = "hook errored"
_COPILOT_PRE = {
    **{case: _ERRORED for case in ("exit1", "exit1-silent", "exit3", "exit3-silent", "crash")},
    "exit2": "",  # it says "hook exited with code 2"; triohooks gives the hook's stderr
    "exit2-silent": "",
}
_PERMISSION_FAILED = "Permission request hook failed"
_COPILOT_PERMISSION = {
    **{case: _PERMISSION_FAILED for case in _COPILOT_PRE if case not in ("exit2", "exit2-silent")},
    "badjson": _PERMISSION_FAILED,
    "text": _PERMISSION_FAILED,
    "exit2": "",  # "Permission denied by hook."; triohooks gives the hook's stderr
    "exit2-silent": "",
}
_QWEN_SILENT_2 = {
    "exit2-silent": "triohooks reads a silent exit 2 as Claude Code does: a block (Qwen Code "
    "lets the call run for want of a reason)"
}
_COPILOT_PROMPT = {
    "exit2": "Copilot CLI cannot stop a prompt: the prompt's tool calls are denied instead",
    "exit2-silent": "the same",
}
_CURSOR_FAIL_CLOSED = {
    **{case: "" for case in CASES if case not in ("exit0", "exit2")},  # every failure blocks
    **_EXIT2,
}

CLAUDE = "Claude Code 2.1.332"
CODEX = "Codex 0.169.1"
GEMINI = "Gemini CLI 0.61.0"
QWEN = "Qwen Code 0.24.4"
COPILOT = "Copilot CLI 1.0.102"
CURSOR = "Cursor, by its documented contract"

_CLAUDE = readings({**_EXIT2, "exit2-silent": ""})
_BLOCK = {"onFailure": "block"}

TABLES: Final[tuple[Table, ...]] = (
    Table("claude", "PreToolUse", _CLAUDE, CLAUDE),
    Table("claude", "PreToolUse", readings(_CLAUDE_ON_FAILURE), CLAUDE, _BLOCK),
    Table("claude", "UserPromptSubmit", _CLAUDE, CLAUDE, tool_call=False),
    Table(
        "claude", "UserPromptSubmit", readings(_CLAUDE_ON_FAILURE), CLAUDE, _BLOCK, tool_call=False
    ),
    Table("codex", "PreToolUse", readings(_EXIT2), CODEX),
    Table("codex", "UserPromptSubmit", readings(_EXIT2), CODEX, tool_call=False),
    Table("gemini", "BeforeTool", readings(_GEMINI), GEMINI),
    Table("gemini", "BeforeAgent", readings(_GEMINI), GEMINI, tool_call=False),
    Table("qwen", "PreToolUse", readings(_EXIT2, _QWEN_SILENT_2), QWEN),
    Table("qwen", "UserPromptSubmit", readings(_EXIT2, _QWEN_SILENT_2), QWEN, tool_call=False),
    Table("copilot", "preToolUse", readings(_COPILOT_PRE), COPILOT),
    Table("copilot", "permissionRequest", readings(_COPILOT_PERMISSION), COPILOT),
    Table(
        "copilot", "userPromptSubmitted", readings({}, _COPILOT_PROMPT), COPILOT, tool_call=False
    ),
    Table("cursor", "beforeShellExecution", _CLAUDE, CURSOR),
    Table(
        "cursor",
        "beforeShellExecution",
        readings(_CURSOR_FAIL_CLOSED),
        CURSOR,
        {"failClosed": True},
    ),
    Table("cursor", "beforeSubmitPrompt", _CLAUDE, CURSOR, tool_call=False),
)
