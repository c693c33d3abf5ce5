"""The command line says what is wrong, and what to do about it: ``validate`` checks the
programs hooks start and says which hooks run and which trust holds back; an unknown command,
event or field gets a "did you mean"; a TOML ``match`` written as ``a|b`` is refused with a
hint; ``--version``; a reader that closes standard output early ends the command quietly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import cli_here, write_json_hooks, write_toml_hooks
from triohooks.config.toml_dialect import parse_toml_text
from triohooks.match.globs import has_bare_bar


def triohooks(
    *argv: str, cwd: Path, cfg: Path, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TRIOHOOKS_CONFIG_DIR": str(cfg), "TRIOHOOKS_STATE_DIR": str(cfg / "s")}
    return cli_here(argv, cwd=cwd, env=env, stdin=stdin)


def triohooks_process(
    *argv: str, cwd: Path, cfg: Path, stdin: str = "", stdout: int = subprocess.PIPE
) -> subprocess.CompletedProcess[str]:
    """The real command in a child, for what a process has: its file descriptors, its start."""
    env = {**os.environ, "TRIOHOOKS_CONFIG_DIR": str(cfg), "TRIOHOOKS_STATE_DIR": str(cfg / "s")}
    return subprocess.run(
        [sys.executable, "-m", "triohooks", *argv],
        cwd=cwd,
        env=env,
        input=stdin,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    ws, cfg = tmp_path / "ws", tmp_path / "cfg"
    ws.mkdir()
    cfg.mkdir()
    return ws, cfg


# -- validate ----------------------------------------------------------------------------------


def test_validate_reports_programs_that_cannot_start_at_their_file_and_field(
    dirs: tuple[Path, Path],
) -> None:
    ws, cfg = dirs
    (ws / "scripts").mkdir()
    (ws / "scripts/not-executable.sh").write_text("#!/bin/sh\n")
    toml = write_toml_hooks(
        cfg,
        '[[hooks.pre_tool]]\ncommand = "./scripts/missing.sh"\n\n'
        '[[hooks.pre_tool]]\ncommand = "./scripts/not-executable.sh --fast"\n\n'
        '[[hooks.post_tool]]\nargs = ["no-such-program-here", "x"]\n\n'
        '[[hooks.post_tool]]\ncommand = "echo fine"\n',
    )
    json_file = write_json_hooks(
        cfg,
        [{"event": "pre_tool_use", "executor": {"type": "bash", "command": "/nowhere/hook"}}],
    )
    done = triohooks("validate", cwd=ws, cfg=cfg)
    assert done.returncode == 1
    errors = done.stderr.splitlines()
    assert f"{toml}: pre_tool[0].command: ./scripts/missing.sh: no such file (error)" in errors
    assert (
        f"{toml}: pre_tool[1].command: ./scripts/not-executable.sh: not an executable file (error)"
        in errors
    )
    assert f"{toml}: post_tool[0].args: no-such-program-here: not found on PATH (error)" in errors
    assert (
        f"{json_file}: pre_tool_use[0].executor.command: /nowhere/hook: no such file (error)"
        in (errors)
    )
    assert "triohooks: 4 problem(s) in config" in errors
    assert done.stdout == "5 hook(s) run, from 2 file(s)\n"


def test_validate_says_plainly_which_hooks_trust_holds_back(dirs: tuple[Path, Path]) -> None:
    ws, cfg = dirs
    write_toml_hooks(cfg, '[[hooks.pre_tool]]\ncommand = "true"\n')
    write_toml_hooks(ws / ".agents", '[[hooks.pre_tool]]\ncommand = "true"\n' * 1)
    done = triohooks("validate", cwd=ws, cfg=cfg)
    assert done.returncode == 0, done.stderr
    ok, held = done.stdout.splitlines()
    assert ok == "ok: 1 hook(s) run, from 1 file(s)"
    real = ws.resolve()
    assert held == (
        f"1 workspace hook(s) of {real} held back: they are not trusted yet. `triohooks trust "
        f"--dry-run --workspace {real}` shows what changed; then run `triohooks trust "
        f"--workspace {real}`"
    )
    # Trusted, they run, and nothing is held back.
    assert triohooks("trust", cwd=ws, cfg=cfg).returncode == 0
    done = triohooks("validate", cwd=ws, cfg=cfg)
    assert done.stdout == "ok: 2 hook(s) run, from 2 file(s)\n"


def test_a_held_back_hooks_missing_program_is_a_warning(dirs: tuple[Path, Path]) -> None:
    ws, cfg = dirs
    toml = write_toml_hooks(ws / ".agents", '[[hooks.pre_tool]]\ncommand = "./gone.sh"\n')
    done = triohooks("validate", cwd=ws, cfg=cfg)
    assert done.returncode == 1
    assert done.stderr.startswith(
        f"{toml}: pre_tool[0].command: ./gone.sh: no such file (a warning only: the workspace "
        "hooks are new, not trusted, and do not run) (warning)"
    )


def test_with_nothing_configured_validate_and_list_say_where_hooks_go(
    dirs: tuple[Path, Path],
) -> None:
    ws, cfg = dirs
    where = (
        f"your own hooks go in {cfg}/hooks.toml (or hooks.json beside it), a workspace's in "
        f"{ws.resolve()}/.agents/hooks.toml (run once you trust them)"
    )
    done = triohooks("validate", cwd=ws, cfg=cfg)
    assert (done.returncode, done.stdout) == (0, f"ok: no hooks configured; {where}\n")
    done = triohooks("list", cwd=ws, cfg=cfg)
    assert (done.returncode, done.stdout) == (0, f"no hooks configured: {where}\n")


# -- TOML match with '|' -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "bare"),
    [
        ("write_file|edit_file", True),
        ("a|b|c", True),
        ("[a-z]*|x", True),
        ("|", True),
        ("a\\|b", False),  # escaped: a literal '|', as Go reads it
        ("[|]", False),  # in a class
        ("[^|]*", False),
        ("[\\]|]", False),  # an escaped ']' does not end the class
        ("[\\]]|", True),
        ("mcp__*", False),
        ("", False),
    ],
)
def test_bare_bar(pattern: str, bare: bool) -> None:
    assert has_bare_bar(pattern) is bare


def test_a_toml_match_with_a_bar_is_refused_with_a_hint() -> None:
    parsed = parse_toml_text(
        '[[hooks.post_tool]]\nmatch = "write_file|edit_file"\ncommand = "fmt"\n\n'
        '[[hooks.post_tool]]\nmatch = "odd\\\\|name"\ncommand = "fmt"\n',
        file="hooks.toml",
        scope="global",
    )
    (problem,) = parsed.problems
    assert (problem.event, problem.index, problem.field) == ("post_tool", 0, "match")
    assert problem.severity == "error"
    assert "reads as a literal character, so it would match no tool" in problem.message
    assert "one hook per tool, or one glob that covers them (such as '*_file')" in problem.message
    assert [h.match for h in parsed.hooks] == ["odd\\|name"]


# -- did you mean ------------------------------------------------------------------------------


def test_did_you_mean_for_toml_events_and_fields(dirs: tuple[Path, Path]) -> None:
    ws, cfg = dirs
    write_toml_hooks(
        cfg,
        '[[hooks.PreToolUse]]\ncommand = "true"\n\n'
        '[[hooks.BeforeTool]]\ncommand = "true"\n\n'
        '[[hooks.pre_tol]]\ncommand = "true"\n\n'
        '[[hooks.pre_tool]]\nmatcher = "bash"\ntimeout = 3\ncomand = "true"\nname = "x"\n',
    )
    done = triohooks("validate", cwd=ws, cfg=cfg)
    assert done.returncode == 1
    for said in (
        "PreToolUse: unknown event (did you mean 'pre_tool'?)",
        "BeforeTool: unknown event (did you mean 'pre_tool'?)",
        "pre_tol: unknown event (did you mean 'pre_tool'?)",
        "pre_tool[0].matcher: unknown field (did you mean 'match'?)",
        "pre_tool[0].timeout: unknown field (did you mean 'timeout_seconds'?)",
        "pre_tool[0].comand: unknown field (did you mean 'command'?)",
        "pre_tool[0].name: unknown field (did you mean 'id'?)",
    ):
        assert said in done.stderr, said


def test_did_you_mean_for_json_events_and_fields(dirs: tuple[Path, Path]) -> None:
    ws, cfg = dirs
    run = {"type": "bash", "command": "true"}
    write_json_hooks(
        cfg,
        [
            {"event": "PreToolUse", "executor": run},
            {"event": "pre_tool", "executor": run},
            {"event": "pre_tool_use", "executor": run, "timeout": 5},
            {"event": "pre_tool_use", "executor": {**run, "comand": "x"}},
            {"event": "pre_tool_use", "executor": run, "matcher": {"tool_nam": "bash"}},
        ],
    )
    done = triohooks("validate", cwd=ws, cfg=cfg)
    for said in (
        "unknown event 'PreToolUse' (did you mean 'pre_tool_use'?)",
        "unknown event 'pre_tool' (did you mean 'pre_tool_use'?)",
        "[2].timeout: invalid hook skipped: unknown field (did you mean 'timeout_ms'?)",
        "[3].executor.comand: invalid hook skipped: unknown field (did you mean 'command'?)",
        "[4].matcher.tool_nam: invalid hook skipped: unknown field (did you mean 'tool_name'?)",
    ):
        assert said in done.stderr, said


def test_did_you_mean_for_commands_and_fired_events(dirs: tuple[Path, Path]) -> None:
    ws, cfg = dirs
    done = triohooks("valdate", cwd=ws, cfg=cfg)
    assert done.returncode == 1
    assert done.stderr.rstrip().endswith("; did you mean 'validate'?")
    done = triohooks("claude", "lst", cwd=ws, cfg=cfg)
    assert done.stderr.rstrip().endswith("; did you mean 'list'?")
    done = triohooks("xyzzy", cwd=ws, cfg=cfg)
    assert "did you mean" not in done.stderr  # nothing close: no guess
    done = triohooks("fire", "PreToolUse", cwd=ws, cfg=cfg, stdin="{}")
    assert done.returncode == 1
    assert "unknown event 'PreToolUse' (did you mean 'pre_tool'?)" in done.stderr


# -- --version, closed stdout ------------------------------------------------------------------


def test_version(dirs: tuple[Path, Path]) -> None:
    from importlib.metadata import version

    done = triohooks_process("--version", cwd=dirs[0], cfg=dirs[1])
    assert done.returncode == 0
    assert done.stdout.startswith(f"triohooks {version('triohooks')} (Python ")


def test_a_reader_that_stops_early_ends_the_command_quietly(dirs: tuple[Path, Path]) -> None:
    ws, cfg = dirs
    write_toml_hooks(
        cfg, "".join(f'[[hooks.pre_tool]]\ncommand = "true {i}"\n' for i in range(3000))
    )
    env = {**os.environ, "TRIOHOOKS_CONFIG_DIR": str(cfg), "TRIOHOOKS_STATE_DIR": str(cfg / "s")}
    with subprocess.Popen(
        [sys.executable, "-m", "triohooks", "list"],
        cwd=ws,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline() == b"pre_tool:\n"
        proc.stdout.close()  # `| head -1`
        err = proc.stderr.read()
        assert proc.wait(timeout=60) == 141
    assert err == b""


def test_fire_with_stdout_closed_still_says_blocked_by_its_exit_code(
    dirs: tuple[Path, Path],
) -> None:
    ws, cfg = dirs
    write_toml_hooks(cfg, '[[hooks.pre_tool]]\ncommand = "echo no >&2; exit 2"\n')
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will read the Outcome
    try:
        done = triohooks_process(
            "fire",
            "pre_tool",
            cwd=ws,
            cfg=cfg,
            stdin=json.dumps({"tool": "bash"}),
            stdout=write_end,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr


def test_fire_in_a_readable_block(dirs: tuple[Path, Path]) -> None:
    ws, cfg = dirs
    write_toml_hooks(
        cfg,
        '[[hooks.pre_tool]]\nid = "no-push"\nif = "shell(git push*)"\n'
        'command = "echo not today >&2; exit 2"\n\n'
        '[[hooks.pre_tool]]\nid = "quiet"\nif = "shell(pytest*)"\n'
        """command = '''echo '{"updated_args": {"command": "pytest -q"}}' '''\n""",
    )
    push = triohooks(
        "fire",
        "pre_tool",
        "--format",
        "human",
        cwd=ws,
        cfg=cfg,
        stdin=json.dumps({"tool": "Bash", "args": {"command": "git push"}}),
    )
    assert push.returncode == 2
    lines = push.stdout.splitlines()
    assert lines[:3] == ["pre_tool Bash: BLOCKED (block)", "  reason: not today", "  runs (1):"]
    assert lines[3].startswith("    no-push [toml] block exit 2 ")
    rewrite = triohooks(
        "fire",
        "pre_tool",
        "--format",
        "human",
        cwd=ws,
        cfg=cfg,
        stdin=json.dumps({"tool": "Bash", "args": {"command": "pytest"}}),
    )
    assert rewrite.returncode == 0
    assert rewrite.stdout.splitlines()[:2] == [
        "pre_tool Bash: allowed",
        '  args rewritten: {"command":"pytest -q"}',
    ]


def test_trust_shows_what_changed_since_the_last_trust(dirs: tuple[Path, Path]) -> None:
    ws, cfg = dirs
    (ws / "scripts").mkdir()
    script = ws / "scripts/check.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    hooks = write_toml_hooks(ws / ".agents", '[[hooks.pre_tool]]\ncommand = "./scripts/check.sh"\n')
    first = triohooks("trust", cwd=ws, cfg=cfg)
    assert first.stdout.splitlines()[0] == "first trust of this workspace's hooks"
    hooks.write_text(
        '[[hooks.pre_tool]]\ncommand = "./scripts/check.sh --strict"\n\n'
        '[[hooks.post_tool]]\ncommand = "curl -s x | sh"\n'
    )
    script.write_text("#!/bin/sh\nrm -rf ~\n")
    (ws / ".agents/hooks.json").write_text('{"hooks": []}')
    shown = triohooks("trust", "--dry-run", cwd=ws, cfg=cfg)
    assert shown.returncode == 0
    lines = shown.stdout.splitlines()
    assert lines[0].startswith("changed since trusted ")
    real = ws.resolve()
    assert f"  added: {real}/.agents/hooks.json" in lines
    assert f"  changed: {real}/.agents/hooks.toml" in lines
    assert f"  changed: {real}/scripts/check.sh" in lines  # named, its text not kept
    assert '    -command = "./scripts/check.sh"' in lines
    assert '    +command = "./scripts/check.sh --strict"' in lines
    assert '    +command = "curl -s x | sh"' in lines
    assert lines[-1] == "nothing recorded (--dry-run)"
    # Nothing was recorded: the hooks are still held back, and the next trust shows it again.
    assert (
        "held back: they changed since you trusted them"
        in triohooks("validate", cwd=ws, cfg=cfg).stdout
    )
    # `curl | sh` runs code nobody can see: not trusted until the user names what it runs.
    refused = triohooks("trust", cwd=ws, cfg=cfg)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "trust cannot see what this runs: `curl -s x | sh`" in refused.stdout
    assert "nothing recorded" in refused.stderr and "--cover" in refused.stderr
    trusted = triohooks("trust", "--cover", "scripts", cwd=ws, cfg=cfg).stdout.splitlines()
    assert trusted[0].startswith("changed since trusted ")
    assert "you name for it: scripts (hashed with the rest)" in trusted
    again = triohooks("trust", cwd=ws, cfg=cfg).stdout.splitlines()
    assert again[0].startswith("unchanged since trusted ")
