"""Per-tool-call latency of a real agent CLI, with its own hook and through triohooks.

    .venv/bin/python -m bench.agent_cli codex|gemini|qwen|copilot [-n 10] [--rounds 3]

Each session is one headless run (``codex exec`` / ``gemini -p`` / ``qwen`` / ``copilot -p``)
against the fake model server
of ``tests/interop``, scripted to make N shell calls of ``true``; a call's latency is the fake's
view (its function-call reply sent -> the request carrying the call's output), medians of calls
2..N. Configurations, round-robin so machine drift hits them alike:

- ``a`` no hooks;
- ``b`` the agent's own PreToolUse/BeforeTool hook ``true`` (Codex: reviewed, as ``/hooks``
  records it);
- ``c`` the same hook adopted by ``triohooks <agent> install --scope user`` (the default
  transport: the native relay client install built, to the user's running ``serve``);
- ``d`` adopted at project scope (the portable catch-all: the native client from the user's
  state dir; Qwen Code runs a project's hooks with its folder trust off, the default; Copilot
  CLI's repository hooks with ``GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS=true``).

The line under the table is what the issue asks for: the default transport's cost against the
agent's own ``true`` hook, (c) - (b) and (d) - (b), in the same run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.interop import AgentCliUnavailable
from tests.interop.test_claude_code_triohooks import Triohooks, serving

CONFIGS = {
    "a": "no hooks",
    "b": "the agent's own `true` hook",
    "c": "triohooks default, user scope (native client, serve running)",
    "d": "triohooks default, project scope (native client, serve running)",
}


def _codex(tmp: Path, name: str, n: int, tri_root: Path) -> list[float | None]:
    from tests.interop.codex import CodexProject, install_codex, run_codex
    from tests.interop.fake_openai import FakeOpenAI

    binary = install_codex()
    home, project = tmp / "home", tmp / "project"
    home.mkdir()
    project.mkdir()
    with FakeOpenAI() as fake:
        codex = CodexProject(project, home)
        codex.write_config(fake.url)
        hooks = {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]
        }
        env: dict[str, str] = {}
        if name == "b":
            codex.write_hooks(hooks)
            codex.review(codex.user_hooks_path, hooks)
        if name in ("c", "d"):
            if name == "d":
                codex.write_hooks(hooks, project=True)
                codex.trust_project()
            else:
                codex.write_hooks(hooks)
            tri, run = _triohooks(tri_root, home, project)
            with run:
                scope = "project" if name == "d" else "user"
                tri.cli("codex", "install", "--scope", scope, "--workspace", str(project))
                env = tri.claude_env()
                fake.script(["true"] * n)
                run_codex(binary, project, home, fake, timeout=300, env=env)
            return fake.call_latencies()
        fake.script(["true"] * n)
        run_codex(binary, project, home, fake, timeout=300, env=env)
        return fake.call_latencies()


def _gemini(tmp: Path, name: str, n: int, tri_root: Path) -> list[float | None]:
    from tests.interop.fake_gemini import FakeGemini
    from tests.interop.gemini import GeminiProject, install_gemini, run_gemini

    binary = install_gemini()
    home, project = tmp / "home", tmp / "project"
    home.mkdir()
    project.mkdir()
    with FakeGemini() as fake:
        gemini = GeminiProject(project, home)
        hooks = {
            "BeforeTool": [
                {"matcher": "run_shell_command", "hooks": [{"type": "command", "command": "true"}]}
            ]
        }
        env: dict[str, str] = {}
        if name in ("b", "d"):
            gemini.write_hooks(hooks)
        if name == "c":
            gemini.write_user_settings({"hooks": hooks})
        if name in ("c", "d"):
            tri, run = _triohooks(tri_root, home, project)
            with run:
                scope = "project" if name == "d" else "user"
                tri.cli("gemini", "install", "--scope", scope, "--workspace", str(project))
                fake.script(["true"] * n)
                run_gemini(binary, project, home, fake, timeout=300, env=tri.claude_env())
            return fake.call_latencies()
        fake.script(["true"] * n)
        run_gemini(binary, project, home, fake, timeout=300, env=env)
        return fake.call_latencies()


def _qwen(tmp: Path, name: str, n: int, tri_root: Path) -> list[float | None] | None:
    from tests.interop import install_npm_cli
    from tests.interop.fake_anthropic import FakeAnthropic
    from tests.interop.qwen import QWEN, SHELL_TOOL, QwenProject, run_qwen, shell_call

    binary = install_npm_cli(QWEN)
    home, project = tmp / "home", tmp / "project"
    home.mkdir()
    project.mkdir()
    with FakeAnthropic(shell_tool=SHELL_TOOL, call_of=shell_call) as fake:
        qwen = QwenProject(project, home)
        hook = {"type": "command", "command": "true"}
        hooks = {"hooks": {"PreToolUse": [{"hooks": [hook]}]}}
        if name in ("b", "c"):
            qwen.write_user_settings(hooks)
        if name == "d":  # (Qwen Code runs a project's hooks; its folder trust is off by default)
            (project / ".qwen").mkdir()
            (project / ".qwen" / "settings.json").write_text(json.dumps(hooks))
        fake.script(["true"] * n)
        if name in ("c", "d"):
            tri, run = _triohooks(tri_root, home, project)
            with run:
                scope = "project" if name == "d" else "user"
                tri.cli("qwen", "install", "--scope", scope, "--workspace", str(project))
                run_qwen(binary, qwen, fake, timeout=300, env=tri.claude_env())
        else:
            run_qwen(binary, qwen, fake, timeout=300)
        return fake.call_latencies()


def _copilot(tmp: Path, name: str, n: int, tri_root: Path) -> list[float | None] | None:
    from tests.interop import install_npm_cli
    from tests.interop.copilot import COPILOT, SHELL_TOOL, CopilotProject, run_copilot, shell_call
    from tests.interop.fake_openai import FakeOpenAI

    binary = install_npm_cli(COPILOT)
    home, project = tmp / "home", tmp / "project"
    home.mkdir()
    project.mkdir()
    # Repository hooks run in -p mode with this (project scope, d).
    repo = {"GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS": "true"}
    with FakeOpenAI(shell_tool=SHELL_TOOL, call_of=shell_call) as fake:
        copilot = CopilotProject(project, home)
        hook = {"type": "command", "bash": "true", "timeoutSec": 30}
        if name != "a":
            copilot.write_hooks({"preToolUse": [hook]}, name="triohooks.json", repo=name == "d")
        fake.script(["true"] * n)
        if name in ("c", "d"):
            tri, run = _triohooks(tri_root, home, project)
            with run:
                scope = "project" if name == "d" else "user"
                tri.cli("copilot", "install", "--scope", scope, "--workspace", str(project))
                run_copilot(binary, copilot, fake, timeout=300, env={**tri.claude_env(), **repo})
        else:
            run_copilot(binary, copilot, fake, timeout=300)
        return fake.call_latencies()


def _triohooks(root: Path, home: Path, project: Path) -> tuple[Triohooks, Any]:
    tri = Triohooks.create(root / f"tri-{len(list(root.iterdir()))}", home)
    tri.state_dir.chmod(0o700)
    return tri, serving(tri, project, tri.state_dir.parent / "serve.log")


RUNNERS: dict[str, Callable[[Path, str, int, Path], list[float | None] | None]] = {
    "codex": _codex,
    "gemini": _gemini,
    "qwen": _qwen,
    "copilot": _copilot,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("agent", choices=sorted(RUNNERS))
    parser.add_argument("-n", type=int, default=10, help="shell calls per session (>= 2)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    calls: dict[str, list[float]] = {name: [] for name in CONFIGS}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-agent-cli-") as tmp:
            root = Path(tmp)
            for round_no in range(args.rounds):
                names = list(CONFIGS)
                shift = round_no % len(names)
                for name in names[shift:] + names[:shift]:
                    session = root / f"{name}-{round_no}"
                    session.mkdir()
                    latencies = RUNNERS[args.agent](session, name, args.n, root)
                    if latencies is None:  # a configuration this agent cannot have
                        calls.pop(name, None)
                        continue
                    calls[name] += [x for x in latencies[1:] if x is not None]
                print(f"round {round_no + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    except AgentCliUnavailable as exc:
        print(f"{args.agent} unavailable: {exc}", file=sys.stderr)
        return 2
    medians = {name: statistics.median(values) * 1000 for name, values in calls.items()}
    print(
        f"{args.agent}: per-call latency of a shell `true`, calls 2..{args.n}, {args.rounds} rounds"
    )
    for name, description in CONFIGS.items():
        if name not in medians:
            print(f"  {name}  {description:64}     n/a")
            continue
        delta = "" if name == "a" else f"{medians[name] - medians['a']:+.1f}"
        print(f"  {name}  {description:64} {medians[name]:7.1f} ms  {delta:>7} vs a")
    for name in ("c", "d"):
        if name not in medians:
            continue
        print(
            f"the default transport ({name}) against the agent's own `true` hook: "
            f"({name}) - (b) = {medians[name] - medians['b']:+.1f} ms per call"
        )
    print(json.dumps({"agent": args.agent, "median_ms": medians}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
