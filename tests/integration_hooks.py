"""What both framework-adapter test modules run against: one hooks config (TOML, and a
JSON-dialect redaction), the engine options, and a poll for what background hooks write."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import psutil

from .helpers import write_json_hooks, write_toml_hooks

HOOKS = """
[[hooks.pre_tool]]
match = "bash"
if = "shell(git push*)"
command = "echo 'no pushing' >&2; exit 2"

[[hooks.pre_tool]]
match = "bash"
if = "shell(pytest*)"
command = '''python3 -c 'import json,sys; a=json.load(sys.stdin)["args"]; print(json.dumps({"updated_args": {**a, "command": a["command"] + " -q"}}))' '''

[[hooks.pre_tool]]
match = "slow"
command = "sleep 30"

[[hooks.post_tool]]
command = "cat >> post.jsonl; echo >> post.jsonl"

[[hooks.post_tool_failure]]
command = "cat > failure.json"

[[hooks.session_start]]
command = "echo 'branch: main'"

[[hooks.prompt_submit]]
command = "if grep -q secret; then echo 'no secrets in prompts' >&2; exit 2; fi"

[[hooks.session_end]]
command = "cat > end.json"
"""

#: JSON dialect: post_tool_use hooks are synchronous, so their patches reach the model.
REDACT = {
    "id": "redact",
    "event": "post_tool_use",
    "matcher": {"tool_name": "read_secret"},
    "executor": {
        "type": "bash",
        "command": 'printf "%s" "$EVERRUNS_HOOK_PAYLOAD_JSON" > redact-saw.json; '
        'echo \'{"decision": "mutate", "patch": {"result": "[redacted]"}}\'',
    },
}

STOP_TWICE = """
[[hooks.stop]]
command = '''n=$(cat stops 2>/dev/null || echo 0); echo $((n+1)) > stops; [ "$n" -lt 2 ] && { echo "tests still red" >&2; exit 2; }; exit 0'''
"""

STOP_ALWAYS = """
[[hooks.stop]]
command = "echo 'keep going' >&2; exit 2"
"""


def make_dirs(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The workspace, global config dir (HOOKS and REDACT) and state dir of one test."""
    ws, g, state = tmp_path / "ws", tmp_path / "g", tmp_path / "state"
    ws.mkdir()
    write_toml_hooks(g, HOOKS)
    write_json_hooks(g, [REDACT])
    return ws, g, state


def opts(dirs: tuple[Path, Path, Path]) -> dict[str, Any]:
    ws, g, state = dirs
    return {"workspace": ws, "config_dir": g, "state_dir": state, "audit": False}


def written_json(path: Path, timeout_s: float = 5.0) -> Any:
    """What a background hook wrote to ``path`` (polled: it may land just after the call)."""
    deadline = time.monotonic() + timeout_s
    while not (path.exists() and path.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return json.loads(path.read_text())


def sleepers() -> list[psutil.Process]:
    """This process's live descendants running ``sleep`` (the slow tool's hook)."""
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if child.status() != psutil.STATUS_ZOMBIE and "sleep" in " ".join(child.cmdline()):
                found.append(child)
        except psutil.Error:
            continue
    return found
