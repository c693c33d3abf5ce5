"""What triohooks' own hooks cost an agent's request (docs/agents.md, "Your triohooks hooks in
every agent"): ``engine.agent_hook`` p50 per agent for a ``PreToolUse``-like call, in one
engine, interleaved, three ways:

- ``bare``: no hook at all (the agent has none; triohooks' own config is empty): the floor of
  the agent path (read the input, find the project, the fast path of the native pass, merge);
- ``builtin``: one built-in guard in triohooks' config (the native pass runs, no process);
- ``command``: one agent command hook (``true``) and the same guard: what an adopted agent with
  one hook of its own costs.

    .venv/bin/python -m bench.agent_native [-n 300]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import trio

from triohooks import HookEngine

#: Per agent: the pre-tool event, the shell tool, the settings file a project hook goes in.
AGENTS = {
    "claude": ("PreToolUse", "Bash", ".claude/settings.json"),
    "gemini": ("BeforeTool", "run_shell_command", ".gemini/settings.json"),
    "codex": ("PreToolUse", "Bash", ".codex/hooks.json"),
}
GUARD = '[[hooks.pre_tool]]\nbuiltin = "destructive_delete"\n'


def agent_body(agent: str, cwd: Path) -> bytes:
    """``agent``'s hook input for a shell call in ``cwd`` (its pre-tool event)."""
    event, tool, _ = AGENTS[agent]
    return json.dumps(
        {
            "session_id": "bench",
            "cwd": str(cwd),
            "hook_event_name": event,
            "tool_name": tool,
            "tool_input": {"command": "ls -la"},
        }
    ).encode()


def _setup(root: Path, kind: str) -> tuple[Path, Path]:
    project, config = root / kind / "proj", root / kind / "cfg"
    project.mkdir(parents=True)
    config.mkdir(parents=True)
    if kind != "bare":
        (config / "hooks.toml").write_text(GUARD)
    if kind == "command":
        for event, tool, settings in AGENTS.values():
            path = project / settings
            path.parent.mkdir(parents=True, exist_ok=True)
            hook = {"type": "command", "command": "true"}
            path.write_text(json.dumps({"hooks": {event: [{"matcher": tool, "hooks": [hook]}]}}))
    return project, config


async def main(n: int) -> None:
    results: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["HOME"] = str(root / "home")
        kinds = ("bare", "builtin", "command")
        places = {kind: _setup(root, kind) for kind in kinds}
        async with (
            HookEngine.open(
                workspace=places["bare"][0], config_dir=places["bare"][1], audit=False
            ) as bare,
            HookEngine.open(
                workspace=places["builtin"][0], config_dir=places["builtin"][1], audit=False
            ) as builtin,
            HookEngine.open(
                workspace=places["command"][0],
                config_dir=places["command"][1],
                audit=False,
                trust=True,
            ) as command,
        ):
            engines = {"bare": bare, "builtin": builtin, "command": command}
            bodies = {(k, a): agent_body(a, places[k][0]) for k in kinds for a in AGENTS}
            for _ in range(20):  # warm up: tables loaded, code paths hot
                for (kind, agent), body in bodies.items():
                    await engines[kind].agent_hook(agent, body)
            for _ in range(n):
                for (kind, agent), body in bodies.items():
                    start = time.perf_counter()
                    await engines[kind].agent_hook(agent, body)
                    results.setdefault((kind, agent), []).append(time.perf_counter() - start)
    print(f"engine.agent_hook p50 (µs), {n} calls each, interleaved")
    print(f"{'agent':8} {'bare':>10} {'builtin':>10} {'command':>10}")
    for agent in AGENTS:
        row = [statistics.median(results[(k, agent)]) * 1e6 for k in kinds]
        print(f"{agent:8} {row[0]:>10.1f} {row[1]:>10.1f} {row[2]:>10.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=300)
    trio.run(main, parser.parse_args().n)
