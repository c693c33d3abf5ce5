"""``triohooks fire`` for an event no hook can run for: answered without an engine, importing
only the config and matching code, and exactly what the engine would have answered.

The fast path (:func:`triohooks.fronts.cli._fire_nothing_runs`) is compared with the engine
path, forced by the internal ``_TRIOHOOKS_FIRE_VIA_ENGINE`` variable, on the same files and
payload: same stdout, stderr and exit code, the same hooks run and audit records written (none
when nothing runs). Every run also records the modules it imported, so a new module-level
import on the fast path (trio, the HTTP client, the tracer, the shell parser, an actor ...)
fails :func:`test_no_match_fire_imports_only_the_fast_path`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from triohooks.fronts.cli import FIRE_VIA_ENGINE_VAR

from .helpers import bash_hook, write_json_hooks, write_toml_hooks

pytestmark = pytest.mark.slow

#: Runs the real console entry (what the ``triohooks`` script calls) on argv[2:], then writes every
#: module the process imported to argv[1]. stdout, stderr and the exit code are the CLI's own.
WRAPPER = textwrap.dedent(
    """
    import sys
    from triohooks.fronts.entry import main
    out, argv = sys.argv[1], sys.argv[2:]
    sys.argv = ["triohooks", *argv]
    try:
        code = main()
    except SystemExit as exc:
        code = exc.code
    modules = sorted(sys.modules)
    sys.stdout.flush()
    with open(out, "w") as f:
        f.write("\\n".join(modules))
    sys.exit(code)
    """
)

TIMEOUT_S = 60

#: Every triohooks module a no-match ``fire`` may import. Adding one here is a decision: it is
#: paid on every tool call of an agent that uses the CLI.
FAST_PATH_MODULES = frozenset(
    {
        "triohooks",
        "triohooks.combine",
        "triohooks.combine.outcome",
        "triohooks.config",
        "triohooks.config.events",
        "triohooks.config.freshness",
        "triohooks.config.json_dialect",
        "triohooks.config.model",
        "triohooks.config.paths",
        "triohooks.config.selection",
        "triohooks.config.suggest",  # names only; difflib loads for an unknown name
        "triohooks.config.table",
        "triohooks.config.toml_dialect",
        "triohooks.config.trust",
        "triohooks.config.trust_cover",
        "triohooks.fronts",
        "triohooks.fronts.cli",
        "triohooks.fronts.entry",
        "triohooks.fronts.fire_cache",
        "triohooks.handlers",
        "triohooks.handlers.judge",
        "triohooks.handlers.outcomes",
        "triohooks.match",
        "triohooks.match.globs",
        "triohooks.match.tools",  # the table of tool names `match` also compares with
        "triohooks.match.ifrules",
        "triohooks.match.matchers",
    }
)
#: All a fire answered from the quiet-call cache imports of triohooks (and nothing else but
#: the standard library).
CACHED_PATH_MODULES = frozenset(
    {
        "triohooks",
        "triohooks.config",
        "triohooks.config.freshness",
        "triohooks.fronts",
        "triohooks.fronts.entry",
        "triohooks.fronts.fire_cache",
    }
)
#: Third-party distributions (top-level import names) the fast path may load.
FAST_PATH_THIRD_PARTY = frozenset({"triohooks", "msgspec", "typing_extensions", "platformdirs"})
#: Never on the fast path, whatever the config: the event loop and what hangs off the engine.
NEVER = (
    "trio",
    "sniffio",
    "outcome",
    "httpx",
    "httpx2",
    "httpcore",
    "h11",
    "opentelemetry",
    "psutil",
    "asyncio",
    "ssl",
    "subprocess",
    "triohooks.actors",
    "triohooks.engine",
    "triohooks.agents",
    "triohooks.handlers.http",
    "triohooks.handlers.runner",
)
#: Loaded only when the config or the call needs them: a shell ``if`` rule reading a script
#: (tree-sitter), an RE2 regex, a TOML file, a warning to log.
ON_DEMAND = ("tree_sitter", "tree_sitter_bash", "triohooks.match.shell", "re2", "_re2", "logging")


def hits(modules: frozenset[str], names: tuple[str, ...]) -> list[str]:
    """The modules that are one of ``names`` or a submodule of one."""
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


@dataclass(frozen=True)
class Fired:
    returncode: int
    stdout: str
    stderr: str
    modules: frozenset[str]


@dataclass
class Env:
    """A workspace, a global config dir and a state dir per path, under ``root``."""

    root: Path
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def ws(self) -> Path:
        return self.root / "ws"

    @property
    def config(self) -> Path:
        return self.root / "g"

    def state(self, engine: bool) -> Path:
        return self.root / ("state-engine" if engine else "state-fast")

    def fire(self, *args: str, stdin: str = "{}", engine: bool = False) -> Fired:
        self.ws.mkdir(parents=True, exist_ok=True)
        out = self.root / f"modules-{'engine' if engine else 'fast'}.txt"
        env = {
            k: v
            for k, v in os.environ.items()
            if k != FIRE_VIA_ENGINE_VAR and not k.startswith("TRIOHOOKS_JUDGE_")
        }
        env |= {
            "TRIOHOOKS_CONFIG_DIR": str(self.config),
            "TRIOHOOKS_STATE_DIR": str(self.state(engine)),
            # The quiet-call cache, without its settle time (files here are seconds old).
            "TRIOHOOKS_CACHE_DIR": str(self.root / ("cache-engine" if engine else "cache")),
            "_TRIOHOOKS_FIRE_CACHE_SETTLE_MS": "0",
            **self.extra_env,
        }
        if engine:
            env[FIRE_VIA_ENGINE_VAR] = "1"
        done = subprocess.run(
            [sys.executable, "-c", WRAPPER, str(out), "fire", *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            cwd=self.ws,
            timeout=TIMEOUT_S,
            check=False,
        )
        modules = frozenset(out.read_text().split("\n")) if out.exists() else frozenset()
        out.unlink(missing_ok=True)
        return Fired(done.returncode, done.stdout, done.stderr, modules)


def audit_lines(state: Path) -> int:
    audit = state / "audit"
    if not audit.exists():
        return 0
    return sum(len(p.read_text().splitlines()) for p in audit.iterdir())


# -- the cases ------------------------------------------------------------------------------------

READ = json.dumps({"tool": "Read", "args": {"path": "src/app.py"}})
BASH_LS = json.dumps({"tool": "Bash", "args": {"command": "ls -la"}})

OTHER_TOOLS_TOML = """
[[hooks.pre_tool]]
match = "Bash"
command = "exit 2"

[[hooks.pre_tool]]
match = "Edit"
command = "true"

[[hooks.post_tool]]
match = "Write"
command = "true"

[[hooks.post_tool_failure]]
match = "Write"
command = "true"

[[hooks.prompt_submit]]
command = "true"
"""


def no_config(e: Env) -> None:
    pass


def toml_other_tools(e: Env) -> None:
    write_toml_hooks(e.config, OTHER_TOOLS_TOML)


def json_other_tool(e: Env) -> None:
    write_json_hooks(
        e.config,
        [bash_hook("bash-only", "exit 2", matcher={"tool_name": "Bash"})],
    )


def json_regex_no_match(e: Env) -> None:
    write_json_hooks(
        e.config,
        [bash_hook("rm-guard", "exit 2", matcher={"args_jsonpath": "$", "match_regex": "rm -rf"})],
    )


def if_read_rule(e: Env) -> None:
    write_toml_hooks(e.config, '[[hooks.pre_tool]]\nif = "read(.env)"\ncommand = "exit 2"\n')


def if_shell_rule(e: Env) -> None:
    write_toml_hooks(e.config, '[[hooks.pre_tool]]\nif = "shell(git push *)"\ncommand = "exit 2"\n')


def untrusted_workspace(e: Env) -> None:
    # A hook that would match everything, and a field the strict dialect rejects: untrusted,
    # it does not run, and its error is a warning (logged by the loader, both ways).
    write_toml_hooks(e.ws / ".agents", '[[hooks.pre_tool]]\ncommand = "exit 2"\nbogus = 1\n')


def trusted_other_tool(e: Env) -> None:
    write_toml_hooks(e.ws / ".agents", '[[hooks.pre_tool]]\nmatch = "Bash"\ncommand = "exit 2"\n')


def broken_config(e: Env) -> None:
    write_toml_hooks(e.config, '[[hooks.pre_tool]]\nmatch = "Bash"\ncommand = ""\n')


def extra_config(e: Env) -> None:
    write_toml_hooks(e.root / "extra", OTHER_TOOLS_TOML)


def judge_misconfigured(e: Env) -> None:
    e.extra_env["TRIOHOOKS_JUDGE_BASE_URL"] = "not-a-url"
    toml_other_tools(e)


def background_post_tool(e: Env) -> None:
    # TOML post_tool hooks run in the background: a match must go through the engine (queued).
    write_toml_hooks(
        e.config, '[[hooks.post_tool]]\nmatch = "Write"\ncommand = "cat >> ran; echo >> ran"\n'
    )


def failure_hook(e: Env) -> None:
    write_toml_hooks(
        e.config,
        '[[hooks.post_tool_failure]]\nmatch = "Write"\ncommand = "cat >> ran; echo >> ran"\n',
    )


@dataclass(frozen=True)
class Case:
    name: str
    setup: Callable[[Env], None]
    #: The fire arguments; ``{root}`` stands for the test's directory.
    args: tuple[str, ...]
    stdin: str = "{}"
    #: The fast path answers (no engine): False when a hook runs, or for stop.
    fast: bool = True
    #: The exit code both runs must have (1: a usage, payload or config error).
    returncode: int = 0
    #: Fails before anything starts (a bad event name or payload): no engine either way.
    early: bool = False
    #: What stderr must contain (both runs).
    message: str = ""
    #: Lines the hooks append to ws/ran per run (a background hook's proof that it ran).
    ran_lines: int = 0
    #: A second fire is answered from the quiet-call cache: no hook can run for the tool
    #: whatever the arguments, no workspace hooks, no option but --json / --no-audit.
    cached: bool = False


CASES = [
    Case("no config", no_config, ("pre_tool",), READ, cached=True),
    Case(
        "no config, prompt_submit", no_config, ("prompt_submit",), '{"prompt": "hi"}', cached=True
    ),
    Case(
        "no config, session_end",
        no_config,
        ("session_end",),
        '{"session_id": "s1"}',
        cached=True,
    ),
    Case("toml hooks for other tools", toml_other_tools, ("pre_tool",), READ, cached=True),
    Case(
        "toml hooks, permission_request",
        toml_other_tools,
        ("permission_request",),
        READ,
        cached=True,
    ),
    Case("toml hooks, post_tool", toml_other_tools, ("post_tool",), READ, cached=True),
    Case(
        "post_tool with an error, failure hook for another tool",
        toml_other_tools,
        ("post_tool",),
        json.dumps({"tool": "Read", "args": {}, "error": "ENOENT"}),
        cached=True,
    ),
    Case("json matcher on another tool", json_other_tool, ("pre_tool",), READ, cached=True),
    Case("json regex that does not match", json_regex_no_match, ("pre_tool",), BASH_LS),
    Case(
        "json alias name and fields",
        json_other_tool,
        ("pre_tool_use",),
        json.dumps({"tool_name": "Read", "arguments": {"path": "a"}}),
        cached=True,
    ),
    Case("if rule that does not apply (read)", if_read_rule, ("pre_tool",), READ),
    Case("if rule that does not apply (shell)", if_shell_rule, ("pre_tool",), BASH_LS),
    Case(
        "untrusted workspace config",
        untrusted_workspace,
        ("pre_tool",),
        READ,
        message="pre_tool[0].bogus: unknown field",
    ),
    Case("trusted workspace, other tool", trusted_other_tool, ("pre_tool", "--trust"), READ),
    Case(
        "--config file with hooks for other tools",
        extra_config,
        ("pre_tool", "--config", "{root}/extra/hooks.toml"),
        READ,
    ),
    Case(
        "judge misconfigured",
        judge_misconfigured,
        ("pre_tool",),
        READ,
        message="prompt-hook judge not built",
        cached=True,
    ),
    Case(
        "--no-audit and --json",
        toml_other_tools,
        ("pre_tool", "--no-audit", "--json"),
        READ,
        cached=True,
    ),
    Case(
        "broken config",
        broken_config,
        ("pre_tool",),
        READ,
        returncode=1,
        message="pre_tool[0].command: must not be empty",
    ),
    Case(
        "missing --config file",
        no_config,
        ("pre_tool", "--config", "{root}/nope.toml"),
        returncode=1,
        message="nope.toml: file not found",
    ),
    Case(
        "payload not JSON",
        no_config,
        ("pre_tool",),
        "{not json",
        returncode=1,
        message="payload on stdin is not valid JSON",
        early=True,
    ),
    Case(
        "payload not an object",
        no_config,
        ("pre_tool",),
        "[1]",
        returncode=1,
        message="payload on stdin must be a JSON object",
        early=True,
    ),
    Case(
        "payload field of the wrong type",
        no_config,
        ("pre_tool",),
        '{"args": 5}',
        returncode=1,
        message="triohooks: pre_tool payload: ",
        early=True,
    ),
    Case(
        "unknown event",
        no_config,
        ("pre_tool_usage",),
        returncode=1,
        message="unknown event 'pre_tool_usage'",
        early=True,
    ),
    Case("stop always takes the engine", toml_other_tools, ("stop",), fast=False),
    Case(
        "a hook matches: blocked",
        toml_other_tools,
        ("pre_tool",),
        json.dumps({"tool": "Bash", "args": {"command": "rm -rf /"}}),
        fast=False,
        returncode=2,
    ),
    Case(
        "a background post_tool hook matches",
        background_post_tool,
        ("post_tool",),
        json.dumps({"tool": "Write", "args": {"path": "a"}, "result": "ok"}),
        fast=False,
        ran_lines=1,
    ),
    Case(
        "post_tool with an error: the failure hook matches",
        failure_hook,
        ("post_tool",),
        json.dumps({"tool": "Write", "args": {"path": "a"}, "error": "EACCES"}),
        fast=False,
        ran_lines=1,
    ),
]


def comparable(stdout: str) -> Any:
    """The Outcome with run durations (which differ between two runs) blanked."""
    outcome = json.loads(stdout)
    for run in outcome.get("runs", []):
        run["duration_ms"] = None
    return outcome


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_fast_path_answers_as_the_engine_does(tmp_path: Path, case: Case) -> None:
    env = Env(tmp_path)
    case.setup(env)
    args = tuple(a.format(root=tmp_path) for a in case.args)
    ran = env.ws / "ran"

    fast = env.fire(*args, stdin=case.stdin)
    lines_after_fast = len(ran.read_text().splitlines()) if ran.exists() else 0
    engine = env.fire(*args, stdin=case.stdin, engine=True)
    lines_after_engine = len(ran.read_text().splitlines()) if ran.exists() else 0

    # Which path each run took. A config error is found before the engine on the fast path,
    # by the engine's loader on the other; a bad payload stops both before anything starts.
    error = case.returncode == 1
    assert fast.modules and engine.modules, (fast, engine)
    assert ("trio" in fast.modules) is (not case.fast and not error), fast.stderr
    assert ("trio" in engine.modules) is not case.early, engine.stderr
    if case.fast:
        assert hits(fast.modules, NEVER) == []

    # The same answer, byte for byte (run durations aside).
    assert (fast.returncode, engine.returncode) == (case.returncode, case.returncode)
    assert fast.stderr == engine.stderr
    assert case.message in fast.stderr
    assert "Traceback" not in fast.stderr + engine.stderr
    if error:
        assert fast.stdout == engine.stdout == ""
        assert fast.stderr
    elif case.fast:
        assert fast.stdout == engine.stdout
        outcome = json.loads(fast.stdout)
        assert outcome["runs"] == [] and outcome["queued"] is False and not outcome["blocked"]
    else:
        assert comparable(fast.stdout) == comparable(engine.stdout)
        outcome = json.loads(fast.stdout)
        assert outcome["blocked"] is (case.returncode == 2)
        assert outcome["queued"] is (case.ran_lines > 0)

    # Hooks ran (or not) alike, and were audited alike: nothing at all when nothing ran.
    assert lines_after_fast == case.ran_lines
    assert lines_after_engine == 2 * case.ran_lines
    assert audit_lines(env.state(False)) == audit_lines(env.state(True))
    # A block is audited, and so is the close report of a queue that ran something.
    assert (audit_lines(env.state(False)) > 0) is (case.returncode == 2 or case.ran_lines > 0)
    if case.fast:
        assert not env.state(False).exists() and not env.state(True).exists()

    # Again (where nothing ran): the same answer, from the quiet-call cache where it may hold
    # it (stdlib only).
    if not case.fast:
        return
    again = env.fire(*args, stdin=case.stdin)
    assert (again.returncode, again.stdout, again.stderr) == (
        fast.returncode,
        fast.stdout,
        fast.stderr,
    )
    assert ("msgspec" not in again.modules) is case.cached, again.modules
    if case.cached:
        ours = {m for m in again.modules if m.split(".")[0] == "triohooks"}
        assert ours == CACHED_PATH_MODULES
        assert hits(again.modules, NEVER) == []
    assert not (env.root / "cache-engine").exists()  # the engine path never writes an entry


def test_warnings_reach_stderr_on_the_fast_path(tmp_path: Path) -> None:
    env = Env(tmp_path)
    untrusted_workspace(env)
    env.extra_env["TRIOHOOKS_JUDGE_BASE_URL"] = "not-a-url"
    fired = env.fire("pre_tool", stdin=READ)
    assert fired.returncode == 0 and "trio" not in fired.modules
    lines = fired.stderr.splitlines()
    assert len(lines) == 2, fired.stderr
    assert lines[0].startswith(f"triohooks: {env.ws / '.agents' / 'hooks.toml'}: pre_tool[0].bogus")
    assert "(a warning only: the workspace hooks are new, not trusted" in lines[0]
    assert lines[1].startswith("triohooks: prompt-hook judge not built: base URL 'not-a-url'")


# -- the modules a no-match fire imports ----------------------------------------------------------


def baseline_modules(env: dict[str, str]) -> frozenset[str]:
    """What ``python -c pass`` already has loaded in this environment (site, .pth files)."""
    done = subprocess.run(
        [sys.executable, "-c", "import sys; print('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT_S,
        check=True,
    )
    return frozenset(done.stdout.split())


@pytest.mark.parametrize("dirs", ["env", "xdg"])
def test_no_match_fire_imports_only_the_fast_path(tmp_path: Path, dirs: str) -> None:
    env = Env(tmp_path)
    if dirs == "xdg":
        # The default places (platformdirs), as a user without TRIOHOOKS_* variables has them.
        config = tmp_path / "xdg-config" / "triohooks"
        env.extra_env |= {
            "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
            "XDG_STATE_HOME": str(tmp_path / "xdg-state"),
            "TRIOHOOKS_CONFIG_DIR": "",
            "TRIOHOOKS_STATE_DIR": "",
        }
    else:
        config = env.config
    # A bit of everything that loads without a regex, a shell script to read or a warning.
    shell_rule = '\n[[hooks.pre_tool]]\nif = "shell(git push *)"\ncommand = "true"\n'
    write_toml_hooks(config, OTHER_TOOLS_TOML + shell_rule)
    write_json_hooks(config, [bash_hook("b", "exit 2", matcher={"tool_name": "Bash"})])
    fired = env.fire("pre_tool", stdin=READ)
    assert fired.returncode == 0 and fired.stderr == "", fired.stderr
    assert json.loads(fired.stdout)["runs"] == []

    ours = {m for m in fired.modules if m == "triohooks" or m.startswith("triohooks.")}
    assert sorted(ours - FAST_PATH_MODULES) == [], "new triohooks modules on the fast path"
    assert {"triohooks.config.selection", "triohooks.config.toml_dialect"} <= ours
    assert hits(fired.modules, NEVER) == []
    assert hits(fired.modules, ON_DEMAND) == []

    clean = {k: v for k, v in os.environ.items() if not k.startswith("TRIOHOOKS_")}
    new = fired.modules - baseline_modules(clean)
    third_party = {m.partition(".")[0] for m in new} - set(sys.stdlib_module_names)
    third_party = {m for m in third_party if not m.startswith("_")}  # C parts of stdlib / msgspec
    assert sorted(third_party - FAST_PATH_THIRD_PARTY) == []
    assert ("platformdirs" in fired.modules) is (dirs == "xdg")  # else both came from the env
    assert not (tmp_path / "xdg-state").exists()


def test_the_module_check_sees_the_engine(tmp_path: Path) -> None:
    # The lists must be able to fail: the engine path, on the same no-match event, trips them.
    env = Env(tmp_path)
    toml_other_tools(env)
    fired = env.fire("pre_tool", stdin=READ, engine=True)
    assert fired.returncode == 0
    assert {"trio", "triohooks.actors.dispatcher", "triohooks.engine.hook_engine"} <= set(
        hits(fired.modules, NEVER)
    )
    ours = {m for m in fired.modules if m.startswith("triohooks.")}
    assert ours - FAST_PATH_MODULES


def test_what_a_rule_needs_loads_on_demand(tmp_path: Path) -> None:
    # A shell rule reading a script loads the shell parser, a regex RE2: never the engine.
    env = Env(tmp_path)
    if_shell_rule(env)
    shell = env.fire("pre_tool", stdin=BASH_LS)
    assert {"tree_sitter", "triohooks.match.shell"} <= shell.modules
    assert "re2" not in shell.modules and hits(shell.modules, NEVER) == []
    json_regex_no_match(env)
    (env.config / "hooks.toml").unlink()
    regex = env.fire("pre_tool", stdin=BASH_LS)
    assert "re2" in regex.modules and "tree_sitter" not in regex.modules
    assert hits(regex.modules, NEVER) == []


# -- validate -------------------------------------------------------------------------------------


def run_command(env: Env, *words: str) -> tuple[subprocess.CompletedProcess[str], frozenset[str]]:
    """A non-fire command through the real entry: its result and the modules it imported."""
    env.ws.mkdir(parents=True, exist_ok=True)
    out = env.root / "modules.txt"
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, str(out), *words],
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "TRIOHOOKS_CONFIG_DIR": str(env.config),
            "TRIOHOOKS_STATE_DIR": str(env.state(False)),
        },
        cwd=env.ws,
        timeout=TIMEOUT_S,
        check=False,
    )
    return done, frozenset(out.read_text().split("\n"))


def test_validate_runs_without_the_event_loop(tmp_path: Path) -> None:
    env = Env(tmp_path)
    toml_other_tools(env)
    done, modules = run_command(env, "validate")
    assert done.returncode == 0 and "ok: 5 hook(s) run, from 1 file(s)" in done.stdout, done.stderr
    assert hits(modules, NEVER) == []
    # It reads each command as trust does (the bash parser), but needs no regex engine.
    assert hits(modules, ("re2",)) == []


def test_list_runs_without_the_event_loop(tmp_path: Path) -> None:
    # It reads the audit files for each hook's recent failures (audit_records), not the sink.
    env = Env(tmp_path)
    toml_other_tools(env)
    audit = env.state(False) / "audit"
    audit.mkdir(parents=True)
    day = datetime.now(UTC).date()
    record: dict[str, object] = {"time": f"{day}T00:00:00.000Z", "session": "s", "kind": "hook"}
    record["event"] = "pre_tool"
    record |= {
        "hook": "global:pre_tool[0]",
        "decision": "error",
        "error": "boom",
        "duration_ms": 1.0,
    }
    record["workspace"] = str(env.ws)
    (audit / f"audit-{day}.jsonl").write_text(json.dumps(record) + "\n")
    done, modules = run_command(env, "list")
    assert done.returncode == 0, done.stderr
    assert "failed " in done.stdout and "boom" in done.stdout, done.stdout
    but_actors = tuple(n for n in NEVER if n != "triohooks.actors")
    assert hits(modules, but_actors) == []
    ours = {m for m in modules if m.startswith("triohooks.actors")}
    assert ours == {"triohooks.actors", "triohooks.actors.audit_records", "triohooks.actors.redact"}
