"""Per-tool-call latency of the real Claude Code CLI, with and without hooks.

    .venv/bin/python -m bench.claude_code [-n 20] [--rounds 5] [--only a,b]

Each session is one headless ``claude -p`` run against the fake Messages API of
``tests/interop``, scripted to make N ``Bash`` calls of ``true``. A call's latency is measured
from the fake's side: from the last byte of its ``tool_use`` reply to the arrival of the request
that carries its ``tool_result``, i.e. everything the CLI does for one call (parse the reply,
run the PreToolUse hooks, run the command, run the PostToolUse hooks, send the next request).
The first call of a session also pays for the shell snapshot (~40 ms), so only calls 2..N are
compared. Configurations run round-robin (the order rotated every round) so that drift in
machine load hits them alike; the table gives each one's median over all its calls 2..N and the
difference to configuration ``a``. JSON goes to bench/out/claude_code.json.

A configuration is a context manager factory taking a :class:`Session`: before its ``yield`` it
prepares the project (``.claude/settings.json``, extra environment, servers it needs for the
session or, through :meth:`Session.once`, for the whole run); after it, it may inspect what the
session left and put figures in ``session.notes``. Add one to :data:`CONFIGS`.

Configurations ``c``..``d`` write the same kind of settings as ``b`` and hand them to triohooks
with ``triohooks claude install`` (project scope) before the session: one ``triohooks serve``
(started on first use, stopped when the benchmark ends) answers every session's catch-all, an
``http`` hook (``c``, ``c2``, ``d``) or the default, the ``triohooks-relay`` command talking to
it over its unix socket (``c3``: the project-scope form, ``c4``: the user-scope form; both run
the native relay client install built, else the Python relay). ``d``'s adopted hook has an ``if``
rule the calls never match, so it measures the endpoint's own cost without a spawn. The lines
under the table: the default transport's cost against Claude Code's own ``true`` hook, (c3) -
(b) and (c4) - (b); (c) - (a) <= (b) - (a) (stretch: <= 2 ms); and (c2) - (a) <= 60 ms with no
`sleep 30` left over.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from tests.interop import (
    CLAUDE_CODE_VERSION,
    AgentCliUnavailable,
    ClaudeProject,
    install_claude_code,
    run_claude,
)
from tests.interop.fake_anthropic import FakeAnthropic, LocalHTTPServer
from tests.interop.test_claude_code_triohooks import (
    Server,
    Triohooks,
    kill_all,
    processes,
    serving,
)

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out" / "claude_code.json"
#: Every session's environment carries a fresh value of this, and the hooks it starts inherit
#: it: how a configuration tells its own leftovers from anyone else's processes.
MARKER_VAR = "TRIOHOOKS_BENCH_SESSION"


@dataclass
class Session:
    """What a configuration gets for one session."""

    project: ClaudeProject
    marker: str  # the value of MARKER_VAR in this session's environment
    shared: ExitStack  # lives as long as the whole benchmark
    cache: dict[str, Any]  # values made by once(), for the whole benchmark
    env: dict[str, str] = field(default_factory=dict)  # added to the CLI's environment
    notes: dict[str, float] = field(default_factory=dict)  # figures reported per session

    def write_hooks(self, hooks: dict[str, Any]) -> None:
        self.project.write_hooks(hooks)

    def once(self, key: str, make: Callable[[], AbstractContextManager[Any]]) -> Any:
        """The value of ``make()``'s context, entered on first use and left when the benchmark
        ends (e.g. a server that several sessions talk to)."""
        if key not in self.cache:
            self.cache[key] = self.shared.enter_context(make())
        return self.cache[key]


Configuration = Callable[[Session], AbstractContextManager[None]]

CATCH_ALL = "*"


def pre_tool_command(command: str) -> dict[str, Any]:
    return {
        "PreToolUse": [{"matcher": CATCH_ALL, "hooks": [{"type": "command", "command": command}]}]
    }


@contextmanager
def no_hooks(session: Session) -> Iterator[None]:
    """no hooks"""
    yield


@contextmanager
def claude_command_true(session: Session) -> Iterator[None]:
    """claude command hook `true`"""
    session.write_hooks(pre_tool_command("true"))
    yield


def marked_processes(argv: list[str], marker: str) -> list[psutil.Process]:
    """Live processes whose argv is exactly ``argv`` and that carry this session's marker."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            if proc.info["cmdline"] != argv or proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if proc.environ().get(MARKER_VAR) == marker:
                found.append(proc)
        except psutil.Error:
            continue
    return found


@contextmanager
def claude_command_background_sleep(session: Session) -> Iterator[None]:
    """claude command hook `sleep 30 & echo ok`"""
    session.write_hooks(pre_tool_command("sleep 30 & echo ok"))
    try:
        yield
    finally:
        survivors = marked_processes(["sleep", "30"], session.marker)
        session.notes["surviving `sleep 30`"] = len(survivors)
        for proc in survivors:  # ours: they carry this session's marker
            try:
                proc.kill()
            except psutil.Error:
                pass


# --- through triohooks: the same settings, adopted by `triohooks claude install` ---------------


@dataclass(frozen=True)
class Endpoint:
    """One ``triohooks serve`` for the whole benchmark, with its own config and state dirs (the
    sessions' projects are trusted there by their install) and an empty ``HOME``."""

    triohooks: Triohooks
    server: Server


@contextmanager
def endpoint() -> Iterator[Endpoint]:
    with tempfile.TemporaryDirectory(prefix="bench-triohooks-") as tmp:
        root = Path(tmp)
        home, workspace = root / "home", root / "workspace"
        home.mkdir()
        workspace.mkdir()
        tri = Triohooks.create(root, home)
        with serving(tri, workspace, root / "serve.log") as server:
            yield Endpoint(tri, server)


def adopt(session: Session, hooks: dict[str, Any], transport: str, scope: str = "project") -> None:
    """Write ``hooks`` as the settings of ``scope``, ``triohooks claude install`` them and give
    the CLI what the catch-all needs (the token; the state dir the relay reads; PATH)."""
    ep: Endpoint = session.once("triohooks serve", endpoint)
    if scope == "project":
        session.write_hooks(hooks)
        ep.triohooks.install(session.project.path, transport=transport, port=ep.server.port)
    else:
        settings = session.project.home / ".claude" / "settings.json"
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(json.dumps({"hooks": hooks}))
        home = ep.triohooks.env() | {"HOME": str(session.project.home)}
        done = subprocess.run(
            [sys.executable, "-m", "triohooks", "claude", "install", "--scope", "user"],
            env=home,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(done.stderr)
    session.env.update(ep.triohooks.claude_env())


@contextmanager
def triohooks_http_true(session: Session) -> Iterator[None]:
    """triohooks http endpoint, adopted `true` hook"""
    adopt(session, pre_tool_command("true"), "http")
    yield


@contextmanager
def triohooks_http_background_sleep(session: Session) -> Iterator[None]:
    """triohooks http endpoint, adopted `sleep 30 & echo ok`"""
    adopt(session, pre_tool_command("sleep 30 & echo ok"), "http")
    try:
        yield
    finally:
        # Spawned by serve, not by the CLI: they run in the session's project, not with its
        # environment marker.
        survivors = processes(["sleep", "30"], session.project.path)
        session.notes["surviving `sleep 30`"] = len(survivors)
        kill_all(survivors)


@contextmanager
def triohooks_relay_true(session: Session) -> Iterator[None]:
    """triohooks default: project relay (serve running), adopted `true`"""
    adopt(session, pre_tool_command("true"), "relay")
    yield


@contextmanager
def triohooks_user_relay_true(session: Session) -> Iterator[None]:
    """triohooks default: user-scope relay (serve running), adopted `true`"""
    adopt(session, pre_tool_command("true"), "relay", scope="user")
    yield


@contextmanager
def triohooks_http_if_skipped(session: Session) -> Iterator[None]:
    """triohooks http endpoint, no process (`if` rule skips)"""
    hook = {"type": "command", "command": "true", "if": "Bash(git push*)"}
    adopt(session, {"PreToolUse": [{"matcher": CATCH_ALL, "hooks": [hook]}]}, "http")
    yield


def _empty_reply(request: Any) -> tuple[int, dict[str, str], bytes]:
    return 200, {"Content-Type": "application/json"}, b"{}"


@contextmanager
def claude_http_trivial(session: Session) -> Iterator[None]:
    """claude http hook to a trivial local server (`{}`)"""
    server = session.once("trivial http server", lambda: LocalHTTPServer(_empty_reply))
    hook = {"type": "http", "url": f"{server.url}/hook", "timeout": 10}
    session.write_hooks({"PreToolUse": [{"matcher": CATCH_ALL, "hooks": [hook]}]})
    yield


#: name -> configuration; "a" is the baseline the others are compared to.
CONFIGS: dict[str, Configuration] = {
    "a": no_hooks,
    "b": claude_command_true,
    "b2": claude_command_background_sleep,
    "c": triohooks_http_true,
    "c2": triohooks_http_background_sleep,
    "c3": triohooks_relay_true,
    "c4": triohooks_user_relay_true,
    "d": triohooks_http_if_skipped,
    "e": claude_http_trivial,
}
BASELINE = "a"
#: The endpoint's goals: (c) - (a) <= (b) - (a), stretch <= 2 ms; a background child <= 60 ms.
STRETCH_MS = 2.0
BACKGROUND_GOAL_MS = 60.0


def goals(delta_ms: dict[str, float], survivors: dict[str, list[float | None]]) -> list[str]:
    """The goal lines for whichever of the configurations ran."""
    lines = []

    def met(ok: bool) -> str:
        return "met" if ok else "NOT met"

    if "c" in delta_ms and "b" in delta_ms:
        c, b = delta_ms["c"], delta_ms["b"]
        lines.append(
            f"goal: (c) - (a) = {c:+.1f} ms <= (b) - (a) = {b:+.1f} ms: {met(c <= b)}; "
            f"stretch (c) - (a) <= {STRETCH_MS:.0f} ms: {met(c <= STRETCH_MS)}"
        )
    for name in ("c3", "c4"):
        if name in delta_ms and "b" in delta_ms:
            extra = delta_ms[name] - delta_ms["b"]
            lines.append(
                f"the default transport ({name}) against Claude Code's own `true` hook: "
                f"({name}) - (b) = {extra:+.1f} ms per call"
            )
    if "c2" in delta_ms:
        c2 = delta_ms["c2"]
        left = [int(x) for x in survivors.get("c2", []) if x is not None]
        lines.append(
            f"goal: (c2) - (a) = {c2:+.1f} ms <= {BACKGROUND_GOAL_MS:.0f} ms: "
            f"{met(c2 <= BACKGROUND_GOAL_MS)}; surviving `sleep 30` per session: {left} "
            f"{met(not any(left))}"
        )
    if "d" in delta_ms:
        lines.append(f"endpoint without a spawn: (d) - (a) = {delta_ms['d']:+.1f} ms")
    if "e" in delta_ms:
        e = delta_ms["e"]
        lines.append(
            f"Claude Code's own http-hook floor (a trivial server): (e) - (a) = {e:+.1f} ms"
        )
        if "d" in delta_ms:
            lines.append(f"what the endpoint adds to it: (d) - (e) = {delta_ms['d'] - e:+.1f} ms")
    return lines


def describe(name: str) -> str:
    doc = (CONFIGS[name].__doc__ or "").strip().splitlines()
    return doc[0] if doc else name


@dataclass
class Figures:
    later_calls: list[float] = field(default_factory=list)  # seconds, calls 2..N
    first_calls: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)  # whole sessions, seconds
    notes: list[dict[str, float]] = field(default_factory=list)


def run_session(
    claude_bin: Path,
    config: Configuration,
    n: int,
    shared: ExitStack,
    cache: dict[str, Any],
    timeout: float,
) -> tuple[list[float], float, dict[str, float]]:
    with tempfile.TemporaryDirectory(prefix="bench-claude-") as tmp:
        project = ClaudeProject(Path(tmp, "project"), Path(tmp, "home"))
        project.path.mkdir()
        project.home.mkdir()
        session = Session(project, uuid.uuid4().hex, shared, cache)
        with FakeAnthropic() as fake:
            with config(session):
                fake.script(["true"] * n)
                env = {**session.env, MARKER_VAR: session.marker}
                start = time.perf_counter()
                process, output = run_claude(
                    claude_bin, project.path, project.home, fake, timeout=timeout, env=env
                )
                wall = time.perf_counter() - start
            if process.returncode != 0 or output is None or output.get("result") != "Done.":
                raise RuntimeError(
                    f"session failed (exit {process.returncode}):\n"
                    f"{process.stdout[-1500:]}\n{process.stderr[-1500:]}"
                )
            latencies = fake.call_latencies()
            results = fake.tool_results()
        if len(results) != n or any(r is None for r in latencies):
            raise RuntimeError(f"expected {n} tool results, got {len(results)}: {latencies}")
        return [r for r in latencies if r is not None], wall, session.notes


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=20, help="Bash calls per session (>= 2)")
    parser.add_argument("--rounds", type=int, default=5, help="sessions per configuration")
    parser.add_argument("--only", default="", help="comma-separated configuration names")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per session")
    args = parser.parse_args(argv)
    if args.n < 2:
        parser.error("-n must be at least 2 (call 1 is not compared)")
    names = [x for x in args.only.split(",") if x] or list(CONFIGS)
    unknown = [x for x in names if x not in CONFIGS]
    if unknown:
        parser.error(f"unknown configuration(s) {unknown}; known: {list(CONFIGS)}")
    if BASELINE not in names:
        names.insert(0, BASELINE)

    try:
        claude_bin = install_claude_code()
    except AgentCliUnavailable as exc:
        print(f"Claude Code {CLAUDE_CODE_VERSION} unavailable: {exc}", file=sys.stderr)
        return 2

    figures = {name: Figures() for name in names}
    with ExitStack() as shared:
        cache: dict[str, Any] = {}
        for round_no in range(args.rounds):
            shift = round_no % len(names)
            for name in names[shift:] + names[:shift]:
                latencies, wall, session_notes = run_session(
                    claude_bin, CONFIGS[name], args.n, shared, cache, args.timeout
                )
                fig = figures[name]
                fig.first_calls.append(latencies[0])
                fig.later_calls += latencies[1:]
                fig.wall.append(wall)
                fig.notes.append(session_notes)
            print(f"round {round_no + 1}/{args.rounds} done", file=sys.stderr, flush=True)

    base = statistics.median(figures[BASELINE].later_calls)
    rows = []
    report: dict[str, Any] = {}
    for name in names:
        fig = figures[name]
        median = statistics.median(fig.later_calls)
        p90 = (
            statistics.quantiles(fig.later_calls, n=10)[-1] if len(fig.later_calls) > 1 else median
        )
        note_keys = sorted({k for n in fig.notes for k in n})
        notes: dict[str, list[float | None]] = {k: [n.get(k) for n in fig.notes] for k in note_keys}
        rows.append(
            [
                name,
                describe(name),
                str(len(fig.later_calls)),
                ms(median),
                ("" if name == BASELINE else f"{(median - base) * 1000:+.1f}"),
                ms(p90),
                ms(statistics.median(fig.first_calls)),
                f"{statistics.median(fig.wall):.2f}",
                "; ".join(f"{k}: {v}" for k, v in notes.items()),
            ]
        )
        report[name] = {
            "description": describe(name),
            "median_ms": median * 1000,
            "delta_vs_baseline_ms": (median - base) * 1000,
            "p90_ms": p90 * 1000,
            "first_call_median_ms": statistics.median(fig.first_calls) * 1000,
            "session_wall_median_s": statistics.median(fig.wall),
            "later_calls_ms": [x * 1000 for x in fig.later_calls],
            "first_calls_ms": [x * 1000 for x in fig.first_calls],
            "notes": notes,
        }

    header = [
        "config",
        "description",
        "calls",
        "median ms",
        f"vs {BASELINE} ms",
        "p90 ms",
        "call 1 ms",
        "session s",
        "notes (per session)",
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print(
        f"Claude Code {CLAUDE_CODE_VERSION}: per-call latency of `Bash true`, calls 2..{args.n} "
        f"of {args.rounds} session(s) per configuration"
    )
    for row in [header, ["-" * w for w in widths], *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())

    goal_lines = goals(
        {name: report[name]["delta_vs_baseline_ms"] for name in names},
        {name: report[name]["notes"].get("surviving `sleep 30`", []) for name in names},
    )
    for line in goal_lines:
        print(line)

    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(
        json.dumps(
            {
                "claude_code_version": CLAUDE_CODE_VERSION,
                "calls_per_session": args.n,
                "rounds": args.rounds,
                "baseline": BASELINE,
                "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
                "configs": report,
                "goals": goal_lines,
            },
            indent=2,
        )
    )
    print(f"json: {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
