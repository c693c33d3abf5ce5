"""Small helpers shared by tests: writing config files of both dialects."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_json_hooks(directory: Path, hooks: list[dict[str, Any]], **top: Any) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "hooks.json"
    path.write_text(json.dumps({"hooks": hooks, **top}, indent=2))
    return path


def write_toml_hooks(directory: Path, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "hooks.toml"
    path.write_text(text)
    return path


def bash_hook(
    hook_id: str | None, command: str, event: str = "pre_tool_use", **extra: Any
) -> dict[str, Any]:
    spec: dict[str, Any] = {"event": event, "executor": {"type": "bash", "command": command}}
    if hook_id is not None:
        spec["id"] = hook_id
    spec.update(extra)
    return spec


#: The Outcome fields of DESIGN §7, and those of each entry of its ``runs``.
OUTCOME_KEYS = frozenset(
    {
        "event",
        "blocked",
        "decision",
        "reason",
        "message_for_model",
        "user_message",
        "args",
        "prompt",
        "result",
        "error",
        "additional_context",
        "system_messages",
        "continue",
        "queued",
        "runs",
    }
)
RUN_KEYS = frozenset({"hook", "source", "dialect", "outcome", "exit_code", "duration_ms", "error"})
