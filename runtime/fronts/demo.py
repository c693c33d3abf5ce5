"""``triohooks demo``: a scripted agent session driven through the real engine.

Owns the demo: a temporary workspace and global config dir holding hooks in both dialects
(TOML in the global scope, JSON in the workspace scope, trusted for this run only), a scripted
model (no network), the agent loop that fires each lifecycle event, and the live timeline it
prints (event, hooks run, decision, ms) from the Outcomes and the engine's listener. After the
session it shows what the close drained and the audit records written. With ``--serve`` the
session runs through the engine of the websocket service (``triohooks.fronts.server``) on 127.0.0.1,
which first waits a bounded time for a subscriber (``triohooks watch``, docs/watching.md) so
that it sees every record, and is shut down gracefully at the end.

It must not hold engine logic: every decision on screen comes from the engine. It must not
touch the user's own config, trust records, audit log or state dir (everything, the generated
serve token included, lives in the temp dir).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any, TextIO

import msgspec
import trio

from triohooks.actors.audit import audit_dir
from triohooks.actors.audit_records import AuditRecord
from triohooks.actors.post_worker import WorkerReport
from triohooks.combine.outcome import Outcome, RunRecord
from triohooks.combine.pipeline import is_sync
from triohooks.engine.hook_engine import HookEngine

from . import otel
from .serve_cli import ServeError, load_token
from .server import DEFAULT_HOST, HookServer, ServeSettings, serve

SESSION = "demo-session"
PROMPT_ID = "prompt-1"
USER_PROMPT = "The parser test fails. Fix it, run the tests, then push."
NOTES = "tests run with pytest; changes reach main through pull requests"

# -- the hooks ---------------------------------------------------------------------------------

#: Global scope, TOML ("blitz") dialect: the event JSON on stdin, exit 2 blocks.
HOOKS_TOML = """\
# TOML ("blitz") dialect, the user's global hooks.

# Block `git push` from the agent: exit 2 blocks, stderr is the reason.
[[hooks.pre_tool]]
id = "no-push"
match = "bash"
if = "shell(git push)"
command = "echo 'pushing is for humans: open a PR instead' >&2; exit 2"
timeout_seconds = 5

# Rewrite an argument: every pytest run quiet, stopping at the first failure.
[[hooks.pre_tool]]
id = "quiet-pytest"
match = "bash"
if = "shell(pytest)"
command = {quiet_pytest}

# Add context to every prompt: plain stdout becomes context for that prompt.
[[hooks.prompt_submit]]
id = "repo-notes"
command = '''printf 'repo notes: %s\\n' "$(cat NOTES.md)"'''

# Background: tidy every file the agent writes; never delays the agent.
[[hooks.post_tool]]
id = "format-on-write"
match = "write_file"
command = {format_on_write}

# Make the agent run the tests before it stops: exit 2 = one more turn (once per prompt).
[[hooks.stop]]
id = "tests-before-stop"
command = '''grep -q '"stop_hook_active":true' || { echo 'run the tests first' >&2; exit 2; }'''
"""

QUIET_PYTEST = """\
import json, sys
event = json.load(sys.stdin)
args = event["args"]
print(json.dumps({"updated_args": {**args, "command": args["command"] + " -q -x"}}))
"""

FORMAT_ON_WRITE = """\
import json, pathlib, sys
path = pathlib.Path(json.load(sys.stdin)["args"]["path"])
text = path.read_text()
tidy = "\\n".join(line.rstrip() for line in text.splitlines()) + "\\n"
if tidy != text:
    path.write_text(tidy)
"""

NO_COLOR = """\
import json, os
args = json.loads(os.environ["EVERRUNS_HOOK_PAYLOAD_JSON"])["data"]["arguments"]
env = {**args.get("env", {}), "NO_COLOR": "1"}
print(json.dumps({"decision": "mutate", "patch": {"arguments": {"env": env}}}))
"""

NO_PRIVATE_KEYS = """\
import json, os
message = json.loads(os.environ["EVERRUNS_HOOK_PAYLOAD_JSON"])["data"]["message"] or ""
if "PRIVATE KEY-----" in message:
    print(json.dumps({"decision": "block", "reason": "the prompt contains a private key"}))
else:
    print(json.dumps({"decision": "allow"}))
"""


def _python_command(script: Path) -> str:
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"


def _hooks_json(agents: Path) -> dict[str, Any]:
    """Workspace scope, JSON ("everruns") dialect: payload in EVERRUNS_HOOK_* variables."""
    return {
        "hooks": [
            {
                "id": "no-color",
                "event": "pre_tool_use",
                "matcher": {"tool_name": "bash"},
                "executor": {"type": "bash", "command": _python_command(agents / "no_color.py")},
                "description": "Add NO_COLOR=1 to the environment of every bash call",
            },
            {
                "id": "no-private-keys",
                "event": "user_prompt_submit",
                "executor": {
                    "type": "bash",
                    "command": _python_command(agents / "no_private_keys.py"),
                },
                "description": "Refuse prompts that paste a private key",
            },
        ]
    }


class DemoPaths(msgspec.Struct, frozen=True):
    workspace: Path
    config_dir: Path
    state_dir: Path
    toml_file: Path
    json_file: Path


def write_demo_setup(root: Path) -> DemoPaths:
    """Create the demo's workspace, global config dir (both dialects) and state dir."""
    workspace, config_dir, state = root / "workspace", root / "config", root / "state"
    agents = workspace / ".agents"
    for directory in (agents, config_dir / "scripts", state):
        directory.mkdir(parents=True, exist_ok=True)
    (workspace / "NOTES.md").write_text(NOTES + "\n")
    (workspace / "parser.py").write_text("def parse(line):\n    return line.split(';')\n")
    scripts = config_dir / "scripts"
    (scripts / "quiet_pytest.py").write_text(QUIET_PYTEST)
    (scripts / "format_on_write.py").write_text(FORMAT_ON_WRITE)
    toml_file = config_dir / "hooks.toml"
    toml_file.write_text(
        HOOKS_TOML.replace(
            "{quiet_pytest}", json.dumps(_python_command(scripts / "quiet_pytest.py"))
        ).replace("{format_on_write}", json.dumps(_python_command(scripts / "format_on_write.py")))
    )
    (agents / "no_color.py").write_text(NO_COLOR)
    (agents / "no_private_keys.py").write_text(NO_PRIVATE_KEYS)
    json_file = agents / "hooks.json"
    json_file.write_text(json.dumps(_hooks_json(agents), indent=2) + "\n")
    return DemoPaths(workspace, config_dir, state, toml_file, json_file)


# -- the scripted model ------------------------------------------------------------------------


class ToolCall(msgspec.Struct, frozen=True):
    tool: str
    args: dict[str, Any]


class Say(msgspec.Struct, frozen=True):
    text: str


#: What the "model" does, turn by turn. It has no network and no opinions.
MODEL_SCRIPT: tuple[ToolCall | Say, ...] = (
    ToolCall("bash", {"command": "pytest tests/test_parser.py"}),
    ToolCall(
        "write_file",
        {"path": "parser.py", "content": "def parse(line):   \n    return line.split(',')   \n"},
    ),
    ToolCall("bash", {"command": "git push origin main"}),
    Say("I fixed the separator in parser.py and pushed."),
    ToolCall("bash", {"command": "pytest"}),
    Say("The tests pass. Pushing is for humans here, so please open a PR."),
)


def _run_tool(call: ToolCall, args: dict[str, Any], workspace: Path) -> str:
    """The agent's tools, simulated; ``write_file`` really writes into the demo workspace."""
    if call.tool == "write_file":
        (workspace / args["path"]).write_text(args["content"])
        return f"wrote {args['path']}"
    fixed = "','" in (workspace / "parser.py").read_text()
    return "3 passed" if fixed else "1 failed, 2 passed"


# -- the timeline ------------------------------------------------------------------------------


class TimelineEntry(msgspec.Struct, frozen=True):
    """One event the agent fired, as the timeline shows it."""

    event: str
    subject: str
    decision: str
    ms: float
    hooks: list[RunRecord]
    detail: str | None = None


class BackgroundRun(msgspec.Struct, frozen=True):
    event: str
    hook: str
    outcome: str
    ms: float


class DemoSummary(msgspec.Struct):
    entries: list[TimelineEntry] = msgspec.field(default_factory=list)
    background: list[BackgroundRun] = msgspec.field(default_factory=list)
    audit_files: list[Path] = msgspec.field(default_factory=list)
    audit: list[dict[str, Any]] = msgspec.field(default_factory=list)
    formatted: str = ""


def _decision(outcome: Outcome, sent: dict[str, Any] | None) -> tuple[str, str | None]:
    """A one-word decision for the timeline, and what it means in detail."""
    if outcome.event == "stop" and outcome.continue_:
        return "continue", f"a stop hook says: {outcome.reason}"
    if outcome.blocked:
        return "blocked", f"reason: {outcome.reason}"
    if outcome.args is not None and sent is not None and outcome.args != sent:
        return "rewritten", f"args now {json.dumps(outcome.args)}"
    if outcome.additional_context:
        return "context added", repr(outcome.additional_context)
    if outcome.queued:
        return "queued", "background hooks queued; the agent does not wait for them"
    return "proceed", None


#: Column layout of the timeline: time, event, hooks, ms, decision.
HEADER = f"{'time':>7}  {'event':<24}{'hooks':<10}{'ms':>8}  decision"


class Timeline:
    """Prints the session live and keeps what it printed (the test reads it back).

    Sync events are printed from their Outcomes (the agent awaits them); background hook runs
    and audit records arrive through the engine's listener, as they happen.
    """

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._t0 = time.perf_counter()
        self.summary = DemoSummary()
        self._engine: HookEngine | None = None
        #: Audit records of the event the agent is awaiting, shown after its line.
        self._held: list[AuditRecord] | None = None

    def _write(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def _line(self, text: str) -> None:
        self._write(f"{time.perf_counter() - self._t0:6.2f}s  {text}")

    def note(self, text: str) -> None:
        self._write(f"{'':13}{text}")

    def header(self) -> None:
        self._write(HEADER)
        self._write("-" * len(HEADER) + "-" * 16)

    def say(self, who: str, text: str) -> None:
        self._line(f"{who + ' >':<8}{text}")

    async def fire(
        self,
        fire: Callable[[], Awaitable[Outcome]],
        subject: str = "",
        sent: dict[str, Any] | None = None,
    ) -> Outcome:
        """Await one event and print its line: hooks run, decision, ms."""
        self._held = []
        start = time.perf_counter()
        try:
            outcome = await fire()
        finally:
            held, self._held = self._held, None
        ms = (time.perf_counter() - start) * 1000
        decision, detail = _decision(outcome, sent)
        self.summary.entries.append(
            TimelineEntry(outcome.event, subject, decision, round(ms, 1), outcome.runs, detail)
        )
        hooks = str(len(outcome.runs)) if outcome.runs else "-"
        shown = decision.upper() if decision in ("blocked", "continue") else decision
        self._line(f"{(outcome.event + ' ' + subject).strip():<24}{hooks:<10}{ms:8.1f}  {shown}")
        for run in outcome.runs:
            verb = _verb(outcome.event, run)
            self.note(f"  {run.hook:<22}{run.dialect:<5}{run.duration_ms:7.1f} ms  {verb}")
        if detail:
            self.note(f"  {detail}")
        for warning in outcome.warnings:
            self.note(f"  warning: {warning}")
        for record in held:
            self._audit(record)
        return outcome

    def _audit(self, record: AuditRecord) -> None:
        self.note(f"  audit record: {record.event} {record.hook} -> {record.decision}")

    def listen(self, engine: HookEngine) -> Callable[[str, dict[str, Any]], None]:
        self._engine = engine

        def listener(kind: str, fields: dict[str, Any]) -> None:
            if kind in ("hook_started", "hook_finished") and self._background(fields):
                self._background_line(kind, fields)
            elif kind == "audit" and fields["record"].kind == "hook":
                if self._held is not None:
                    self._held.append(fields["record"])
                else:
                    self._audit(fields["record"])
            elif kind in ("dropped", "falling_behind"):
                self._line(f"[background] {kind}: {fields}")

        return listener

    def _background_line(self, kind: str, fields: dict[str, Any]) -> None:
        label = f"[background] {fields['event']}"
        if kind == "hook_started":
            self._line(f"{label:<34}{'':8}  {fields['hook']} started")
            return
        run = BackgroundRun(
            fields["event"], fields["hook"], fields["outcome"], round(fields["duration_ms"], 1)
        )
        self.summary.background.append(run)
        self._line(f"{label:<34}{run.ms:8.1f}  {run.hook} finished: {run.outcome}")

    def _background(self, fields: dict[str, Any]) -> bool:
        """Whether the hook that ``fields`` is about runs on the background worker."""
        assert self._engine is not None
        event = fields["event"]
        for hook in self._engine.table.for_event(event):
            if hook.name == fields["hook"]:
                return not is_sync(hook, event)
        return False


def _verb(event: str, run: RunRecord) -> str:
    if run.error is not None:
        return f"{run.outcome}: {run.error}"
    if event == "stop" and run.outcome == "block":
        return "block (for stop: go on)"
    return run.decision or run.outcome


# -- the agent loop ----------------------------------------------------------------------------


async def _agent_session(engine: HookEngine, timeline: Timeline, workspace: Path) -> None:
    common: dict[str, Any] = {"session_id": SESSION, "prompt_id": PROMPT_ID, "cwd": str(workspace)}
    await timeline.fire(lambda: engine.session_start("startup", session_id=SESSION))
    timeline.say("user", USER_PROMPT)
    await timeline.fire(lambda: engine.prompt_submit(USER_PROMPT, **common))
    for n, step in enumerate(MODEL_SCRIPT):
        if isinstance(step, Say):
            timeline.say("model", step.text)
            out = await timeline.fire(lambda: engine.stop(**common))
            if not out.continue_:
                break
            timeline.note("  the model is told, and takes one more turn")
            continue
        timeline.say("model", f"{step.tool} {json.dumps(step.args)}")
        call = {**common, "tool_call_id": f"call-{n}"}
        out = await timeline.fire(
            partial(engine.pre_tool, step.tool, step.args, **call), step.tool, step.args
        )
        if out.blocked:
            timeline.note(f"  the model is told: {out.message_for_model!r}")
            continue
        args = out.args if out.args is not None else step.args
        result = _run_tool(step, args, workspace)
        timeline.say("tool", result)
        await timeline.fire(
            partial(engine.post_tool, step.tool, args, result=result, **call), step.tool
        )
    await timeline.fire(lambda: engine.session_end("exit", session_id=SESSION))


async def run_demo(
    root: Path,
    out: TextIO,
    serving: ServeOptions | None = None,
    *,
    task_status: trio.TaskStatus[DemoService] = trio.TASK_STATUS_IGNORED,
) -> DemoSummary:
    """Set up the demo under ``root``, run the scripted session, close, show the audit trail.

    With ``serving``, the session runs through the engine of a websocket service on
    127.0.0.1 (see :func:`_served_session`) and ``task_status.started`` gives its
    :class:`DemoService` once it listens (so ``await nursery.start(run_demo, ...)`` works; its
    summary is then lost - call it from your own task to keep it). Without ``serving`` it never
    calls ``started``.

    A checkpoint; on cancel the engine closes (running hooks are killed, the drain still runs).
    """
    paths = write_demo_setup(root)
    timeline = Timeline(out)
    print("triohooks demo: a scripted agent session through the real engine", file=out)
    print("(no network, no model: the model's turns are a script; the hooks are real)\n", file=out)
    print(f"  workspace       {paths.workspace}", file=out)
    print(f"  global hooks    {paths.toml_file}  (TOML dialect)", file=out)
    print(f"  workspace hooks {paths.json_file}  (JSON dialect, trusted for this run)", file=out)
    print(f"  audit dir       {audit_dir(paths.state_dir)}", file=out)
    engine_args: dict[str, Any] = {
        "workspace": paths.workspace,
        "config_dir": paths.config_dir,
        "state_dir": paths.state_dir,
        "trust": True,
    }
    if serving is None:
        print(file=out)
        async with HookEngine.open(**engine_args) as engine:
            await _session(engine, timeline, paths.workspace)
        report = engine.close_report
    else:
        report = await _served_session(engine_args, timeline, root, serving, task_status)
    if report is not None:
        timeline.note(
            f"closed: {report.ran} background event(s) ran, "
            f"{report.dropped_full + report.dropped_at_close} dropped, "
            f"drain {report.drain_seconds * 1000:.0f} ms"
        )
    summary = timeline.summary
    summary.formatted = (paths.workspace / "parser.py").read_text()
    print("\nparser.py after the background formatter (trailing spaces gone):", file=out)
    for line in summary.formatted.splitlines():
        print(f"  | {line}", file=out)
    _show_audit(summary, paths.state_dir, out)
    return summary


async def _session(engine: HookEngine, timeline: Timeline, workspace: Path) -> None:
    engine.add_listener(timeline.listen(engine))
    otel.watch(engine)  # the metrics, when cmd_demo started an OTLP export
    timeline.header()
    await _agent_session(engine, timeline, workspace)
    timeline.note("closing the engine: the background queue drains (up to 5 s)")


# -- streaming the session (--serve) -----------------------------------------------------------


class ServeOptions(msgspec.Struct, frozen=True, kw_only=True):
    """``triohooks demo --serve``: stream the session over the websocket service."""

    port: int = 0
    #: How long to wait for a subscriber before the session starts; 0: don't wait.
    wait_s: float = 10.0
    #: Read the bearer token from here; None: generate one into the demo's temp dir.
    token_file: Path | None = None


class DemoService(msgspec.Struct, frozen=True):
    """Where the demo's websocket service listens, and the file holding its token."""

    url: str
    token_file: Path


async def _served_session(
    engine_args: dict[str, Any],
    timeline: Timeline,
    root: Path,
    serving: ServeOptions,
    task_status: trio.TaskStatus[DemoService],
) -> WorkerReport | None:
    """Run the session through the engine of ``triohooks serve`` on 127.0.0.1.

    Starts the server (printing its URL and token file), waits up to ``serving.wait_s`` for a
    subscriber so it sees every record of the session, runs the session, then shuts the server
    down gracefully: the post queue drains, subscribers get the last records and ``closed``,
    and every socket closes with 1000. Returns the engine's close report.
    """
    out = timeline.out
    token, token_file = _demo_token(serving.token_file, root)
    # A loopback subscriber flushes the demo's ~40 records in milliseconds; a short close
    # timeout also caps the wait for the close handshake, which the server (as of now) sits
    # out in full with every connected client.
    settings = ServeSettings(
        token=token, host=DEFAULT_HOST, port=serving.port, engine=engine_args, close_timeout_s=0.5
    )
    async with trio.open_nursery() as nursery:
        try:
            server: HookServer = await nursery.start(serve, settings)
        except* OSError as group:
            from .cli import CliError

            where = f"{DEFAULT_HOST}:{serving.port}"
            first = group.exceptions[0]
            raise CliError(f"demo --serve: cannot listen on {where}: {first}") from None
        try:
            service = DemoService(server.url, token_file)
            print(f"  websocket       {service.url}", file=out)
            print(f"  token file      {service.token_file}\n", file=out, flush=True)
            task_status.started(service)
            await _wait_for_subscriber(server, serving.wait_s, service, timeline)
            await _session(server.engine, timeline, Path(engine_args["workspace"]))
        finally:
            server.shutdown()  # serve() returns after the graceful shutdown; the nursery waits
    timeline.note("websocket service stopped")
    return server.engine.close_report


async def _wait_for_subscriber(
    server: HookServer, seconds: float, service: DemoService, timeline: Timeline
) -> None:
    if seconds <= 0:
        return
    timeline.note(f"waiting up to {seconds:g} s for a subscriber; in another terminal run:")
    token_file = shlex.quote(str(service.token_file))
    timeline.note(f"  triohooks watch {service.url} --token-file {token_file}")
    with trio.move_on_after(seconds):
        await server.wait_for_subscriber()
    if server.hub.subscribers:
        timeline.note("a subscriber is connected: starting the session\n")
    else:
        timeline.note(f"no subscriber after {seconds:g} s: starting the session anyway\n")


def _demo_token(token_file: Path | None, root: Path) -> tuple[str, Path]:
    """The bearer token: read from ``token_file``, or generated into ``root`` (mode 0600),
    never into the user's state dir (the demo leaves the user's files alone)."""
    if token_file is not None:
        try:
            return load_token(token_file)
        except ServeError as exc:
            from .cli import CliError

            raise CliError(str(exc)) from None
    token = secrets.token_urlsafe(32)
    path = root / "serve-token"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    return token, path


def _show_audit(summary: DemoSummary, state: Path, out: TextIO) -> None:
    summary.audit_files = sorted(audit_dir(state).glob("audit-*.jsonl"))
    for path in summary.audit_files:
        print(f"\naudit records in {path}:", file=out)
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if record.get("kind") == "hook":
                summary.audit.append(record)
                print(f"  {line}", file=out)


# -- the command -------------------------------------------------------------------------------


def add_demo_command(sub: Any) -> None:
    """Register ``demo`` on the CLI's subparsers."""
    p = sub.add_parser("demo", help="run a scripted agent session through the real engine")
    p.add_argument(
        "--keep", action="store_true", help="keep the demo's temp dir (config, workspace, audit)"
    )
    p.add_argument(
        "--serve",
        action="store_true",
        help="also stream the session over the websocket service (watch it: triohooks watch)",
    )
    p.add_argument(
        "--port", type=int, default=None, help="with --serve: port on 127.0.0.1 (default: 0, any)"
    )
    p.add_argument(
        "--wait-seconds",
        type=float,
        default=None,
        metavar="S",
        help="with --serve: wait this long for a subscriber before starting (default 10; 0: none)",
    )
    p.add_argument(
        "--token-file",
        type=Path,
        default=None,
        help="with --serve: read the bearer token here (default: generate one in the temp dir)",
    )


def serve_options(args: argparse.Namespace) -> ServeOptions | None:
    """The ``--serve`` options of ``args``, or None; the serve-only flags need ``--serve``."""
    given = [
        flag
        for flag, value in (
            ("--port", args.port),
            ("--wait-seconds", args.wait_seconds),
            ("--token-file", args.token_file),
        )
        if value is not None
    ]
    if not args.serve:
        if given:
            from .cli import CliError

            verb = "needs" if len(given) == 1 else "need"
            raise CliError(f"demo: {' and '.join(given)} {verb} --serve")
        return None
    defaults = ServeOptions()
    return ServeOptions(
        port=defaults.port if args.port is None else args.port,
        wait_s=defaults.wait_s if args.wait_seconds is None else max(0.0, args.wait_seconds),
        token_file=args.token_file,
    )


def cmd_demo(args: argparse.Namespace) -> int:
    """``triohooks demo``: 0 when the session ran; 1 for usage errors (a busy --port, ...)."""
    serving = serve_options(args)
    root = Path(tempfile.mkdtemp(prefix="triohooks-demo-"))
    telemetry = otel.start("demo")  # OTLP export when OTEL_EXPORTER_OTLP_*ENDPOINT is set
    try:
        trio.run(run_demo, root, sys.stdout, serving)
    finally:
        if telemetry is not None:
            telemetry.close()
            print(f"\n{telemetry.summary()}", flush=True)
        if args.keep:
            print(f"\nkept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0
