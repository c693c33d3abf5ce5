"""``triohooks test``: case files run through the real engine and the real hooks (bash
processes, built-in guards), from the command line as a user runs it."""

from __future__ import annotations

import json
import shlex
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.helpers import triohooks_cli, write_json_hooks, write_toml_hooks

REPO = Path(__file__).resolve().parent.parent


def triohooks_test(*argv: str, cwd: Path, cfg: Path) -> subprocess.CompletedProcess[str]:
    return triohooks_cli("test", *argv, cwd=cwd, config_dir=cfg)


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    ws, cfg = tmp_path / "ws", tmp_path / "cfg"
    ws.mkdir()
    cfg.mkdir()
    return ws, cfg


def test_the_examples_pass_and_write_junit_xml(dirs: tuple[Path, Path], tmp_path: Path) -> None:
    ws, cfg = dirs
    xml = tmp_path / "out/junit.xml"
    done = triohooks_test(
        str(REPO / "examples/hooks.test.toml"),
        "--config",
        str(REPO / "examples/hooks.toml"),
        "--junit-xml",
        str(xml),
        cwd=ws,
        cfg=cfg,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"5 case(s) from {REPO / 'examples/hooks.test.toml'}"
    assert lines[1] == "....."
    assert lines[-1].startswith("5 passed in ")
    suite = ET.parse(xml).getroot()
    assert (suite.tag, suite.get("tests"), suite.get("failures")) == ("testsuite", "5", "0")
    assert suite[0].get("name") == "a push is blocked, with the reason"


GUARDS = """
[[hooks.pre_tool]]
builtin = "protected_push"

[[hooks.pre_tool]]
id = "stamp"
match = "Write"
command = '''echo '{"updated_args": {"file_path": "x.txt", "content": "stamped"}}' '''
"""

CASES = """
[[case]]
name = "push to main"
tool = "Bash"
args = { command = "git -C . push origin main" }
expect.decision = "block"
expect.reason = "protected branch main"

[[case]]
name = "wrong on purpose"
tool = "Bash"
args = { command = "git push origin feature" }
expect.decision = "block"
expect.ran = ["nothing"]

[[case]]
name = "rewrite"
tool = "Write"
args = { file_path = "x.txt", content = "hi" }
expect.args = { file_path = "x.txt", content = "hi" }
"""


def test_failures_say_expected_and_got(dirs: tuple[Path, Path], tmp_path: Path) -> None:
    ws, cfg = dirs
    write_toml_hooks(cfg, GUARDS)
    (cfg / "hooks.test.toml").write_text(CASES)
    xml = tmp_path / "j.xml"
    done = triohooks_test("--junit-xml", str(xml), cwd=ws, cfg=cfg)
    assert done.returncode == 1
    out = done.stdout
    assert out.splitlines()[1] == ".FF"
    assert f"FAILED {cfg / 'hooks.test.toml'}::wrong on purpose" in out
    assert "    decision: expected block, got allow" in out
    assert "    ran: expected ['nothing'], got ['protected_push']" in out
    assert f"FAILED {cfg / 'hooks.test.toml'}::rewrite" in out
    assert (
        "    args: expected {'file_path': 'x.txt', 'content': 'hi'}, "
        "got {'file_path': 'x.txt', 'content': 'stamped'}"
    ) in out
    assert out.rstrip().splitlines()[-1].startswith("1 passed, 2 failed in ")
    suite = ET.parse(xml).getroot()
    assert suite.get("failures") == "2"
    failure = suite[1].find("failure")
    assert failure is not None and failure.get("message") == ("decision: expected block, got allow")


def test_workspace_cases_are_found_and_trust_is_said(dirs: tuple[Path, Path]) -> None:
    ws, cfg = dirs
    write_json_hooks(
        ws / ".agents",
        [{"event": "pre_tool_use", "executor": {"type": "builtin", "name": "secret_reads"}}],
    )
    (ws / ".agents/hooks.test.toml").write_text(
        '[[case]]\nname = "no .env"\ntool = "Read"\nargs = { file_path = ".env" }\n'
        'expect.decision = "block"\n'
    )
    held = triohooks_test(cwd=ws, cfg=cfg)
    assert held.returncode == 1
    assert "held back: they are not trusted yet" in held.stderr  # why it fails
    assert "(or run with --trust)" in held.stderr
    trusted = triohooks_test("--trust", cwd=ws, cfg=cfg)
    assert trusted.returncode == 0, trusted.stdout + trusted.stderr
    assert trusted.stdout.splitlines()[-1].startswith("1 passed")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "[[case]]\ntool = 'Bash'\nexpect.decison = 'block'\n",
            "expect.decison: unknown field (did you mean 'decision'?)",
        ),
        (
            "[[case]]\ntol = 'Bash'\nexpect.decision = 'block'\n",
            "case[0].tol: unknown field (did you mean 'tool'?)",
        ),
        ("[[case]]\nexpect.decision = 'deny'\n", 'expect.decision: must be "block" or "allow"'),
        ("[[case]]\ntool = 'Bash'\n", "case[0].expect: say what must come out"),
        ("[[case]]\nevent = 'PreToolUse'\nexpect.decision = 'allow'\n", "did you mean 'pre_tool'?"),
        (
            "[[cases]]\nexpect.decision = 'allow'\n",
            "cases: unknown top-level key (did you mean 'case'?)",
        ),
        ("[[case]]\nagent = 'cluade'\nexpect.decision = 'allow'\n", "did you mean 'claude'?"),
        (
            "[[case]]\nagent = 'claude'\nevent = 'pre_tool'\nexpect.decision = 'allow'\n",
            "'pre_tool' is triohooks' name; claude calls it PreToolUse",
        ),
        (
            "[[case]]\nagent = 'gemini'\nexpect.args = {}\n",
            "expect.args: not for an agent case",
        ),
        (
            "[[case]]\ntool = 'Bash'\nexpect.output = {}\n",
            "expect.output: not for a triohooks case",
        ),
        ("[[case]]\ninput = {}\nexpect.decision = 'allow'\n", 'add agent = "claude"'),
        ("[[case]\n", "not valid TOML"),
        ("", "no [[case]] tables"),
    ],
)
def test_a_bad_case_file_is_one_clear_line(dirs: tuple[Path, Path], text: str, said: str) -> None:
    ws, cfg = dirs
    path = ws / "cases.toml"
    path.write_text(text)
    done = triohooks_test(str(path), cwd=ws, cfg=cfg)
    assert done.returncode == 1
    assert done.stderr.startswith(f"triohooks test: {path}: ")
    assert said in done.stderr
    assert "Traceback" not in done.stderr


PROMPT_CONTEXT = {
    "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "branch main"}
}
CLAUDE_HOOKS = {
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [
                    {
                        "type": "command",
                        "command": "grep -q 'git push' && { echo 'no pushes' >&2; exit 2; }; exit 0",
                    }
                ],
            }
        ],
        "UserPromptSubmit": [
            {
                "hooks": [
                    {
                        "type": "command",
                        "command": "echo " + shlex.quote(json.dumps(PROMPT_CONTEXT)),
                    }
                ]
            }
        ],
    }
}

AGENT_CASES = """
[[case]]
name = "claude: a push is blocked"
agent = "claude"
tool = "Bash"
args = { command = "git push origin main" }
expect.decision = "block"
expect.reason = "no pushes"
expect.output = { hookSpecificOutput = { permissionDecision = "deny" } }

[[case]]
name = "claude: ls passes"
agent = "claude"
tool = "Bash"
args = { command = "ls" }
expect.decision = "allow"
expect.ran = ["project:PreToolUse[0].hooks[0]"]

[[case]]
name = "claude: prompts get the branch"
agent = "claude"
event = "UserPromptSubmit"
prompt = "fix it"
input = { permission_mode = "default" }
expect.context = "branch main"
"""


def test_agent_cases_run_that_agents_own_hooks(dirs: tuple[Path, Path], tmp_path: Path) -> None:
    ws, cfg = dirs
    home = tmp_path / "home"
    home.mkdir()
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text(json.dumps(CLAUDE_HOOKS))
    cases = ws / "cases.toml"
    cases.write_text(AGENT_CASES)
    done = triohooks_cli("test", str(cases), "--trust", cwd=ws, config_dir=cfg, HOME=str(home))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout
    # Untrusted, the project's Claude hooks do not run, and the failure says why.
    held = triohooks_cli("test", str(cases), cwd=ws, config_dir=cfg, HOME=str(home))
    assert held.returncode == 1
    assert "FAILED" in held.stdout and "claude: a push is blocked" in held.stdout
    assert "decision: expected block, got allow" in held.stdout
    cases.write_text(AGENT_CASES.replace('"deny"', '"ask"'))
    wrong = triohooks_cli("test", str(cases), "--trust", cwd=ws, config_dir=cfg, HOME=str(home))
    assert wrong.returncode == 1
    assert "output: expected to hold {'hookSpecificOutput': {'permissionDecision': 'ask'}}" in (
        wrong.stdout
    )


def test_no_case_files_says_where_they_go(dirs: tuple[Path, Path]) -> None:
    ws, cfg = dirs
    done = triohooks_test(cwd=ws, cfg=cfg)
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"triohooks test: no case files; write [[case]] tables in "
        f"{ws.resolve()}/.agents/hooks.test.toml or {cfg}/hooks.test.toml, or name files"
    )


def test_a_payload_the_engine_refuses_is_an_error_of_that_case(dirs: tuple[Path, Path]) -> None:
    ws, cfg = dirs
    path = ws / "cases.toml"
    path.write_text("[[case]]\ntool = 3\nexpect.decision = 'allow'\n")
    done = triohooks_test(str(path), cwd=ws, cfg=cfg)
    assert done.returncode == 1
    assert "FAILED" in done.stdout and "payload:" in done.stdout


def run_cli(*argv: str, cwd: Path, cfg: Path) -> subprocess.CompletedProcess[str]:
    return triohooks_cli(*argv, cwd=cwd, config_dir=cfg)


def test_init_writes_a_policy_that_validates_and_passes_its_cases(
    dirs: tuple[Path, Path],
) -> None:
    ws, cfg = dirs
    done = run_cli("init", cwd=ws, cfg=cfg)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:2] == [
        f"wrote {cfg}/hooks.toml",
        f"wrote {cfg}/hooks.test.toml",
    ]
    assert run_cli("validate", cwd=ws, cfg=cfg).stdout == "ok: 5 hook(s) run, from 1 file(s)\n"
    tested = run_cli("test", cwd=ws, cfg=cfg)
    assert tested.returncode == 0, tested.stdout
    assert tested.stdout.splitlines()[-1].startswith("7 passed")
    again = run_cli("init", cwd=ws, cfg=cfg)
    assert again.returncode == 1
    assert "already there; nothing written (--force overwrites; `triohooks init --agent" in (
        again.stderr
    )
    assert run_cli("init", "--force", cwd=ws, cfg=cfg).returncode == 0


def test_init_into_the_workspace_says_to_trust_it(dirs: tuple[Path, Path]) -> None:
    ws, cfg = dirs
    done = run_cli("init", "--workspace-scope", cwd=ws, cfg=cfg)
    assert done.returncode == 0, done.stderr
    assert (ws / ".agents/hooks.toml").is_file() and (ws / ".agents/hooks.test.toml").is_file()
    assert f"next: `triohooks trust --workspace {ws.resolve()}` to turn them on" in done.stdout
    assert run_cli("test", "--trust", cwd=ws, cfg=cfg).returncode == 0


#: Where each agent's user-level hooks live.
AGENT_SETTINGS = {
    "claude": ".claude/settings.json",
    "gemini": ".gemini/settings.json",
    "codex": ".codex/hooks.json",
    "qwen": ".qwen/settings.json",
    "copilot": ".copilot/hooks/triohooks.json",
    "cursor": ".cursor/hooks.json",
}


@pytest.mark.parametrize("agent", sorted(AGENT_SETTINGS))
def test_init_for_an_agent_routes_it_and_its_cases_pass(
    dirs: tuple[Path, Path], tmp_path: Path, agent: str
) -> None:
    ws, cfg = dirs
    home = tmp_path / "home"
    home.mkdir()

    def cli(*argv: str) -> subprocess.CompletedProcess[str]:
        return triohooks_cli(*argv, cwd=ws, config_dir=cfg, HOME=str(home))

    done = cli("init", "--agent", agent)
    assert done.returncode == 0, done.stderr
    settings = json.loads((home / AGENT_SETTINGS[agent]).read_text())
    hooks = settings.get("hooks", settings) if agent == "codex" else settings["hooks"]
    assert "/fronts " + agent in json.dumps(hooks)  # the user-level catch-all
    cases = (cfg / "hooks.test.toml").read_text()
    assert f'agent = "{agent}"' in cases
    assert cli("validate").returncode == 0
    tested = cli("test")
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "9 passed" in tested.stdout
    checked = cli(agent, "validate")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_init_for_an_agent_after_init_keeps_the_policy_and_routes_the_agent(
    dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    """``init`` then ``init --agent``: the policy stays byte for byte, the agent is routed,
    and its cases join the cases file (both are still init's own: they pass); once more
    changes nothing; another agent's cases join too."""
    ws, cfg = dirs
    home = tmp_path / "home"
    home.mkdir()

    def cli(*argv: str) -> subprocess.CompletedProcess[str]:
        return triohooks_cli(*argv, cwd=ws, config_dir=cfg, HOME=str(home))

    assert cli("init").returncode == 0
    policy = (cfg / "hooks.toml").read_bytes()
    done = cli("init", "--agent", "claude")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:2] == [
        f"kept {cfg}/hooks.toml: the policy that is there stays as it is (--force replaces it)",
        f"wrote {cfg}/hooks.test.toml",
    ]
    assert (cfg / "hooks.toml").read_bytes() == policy
    assert "/fronts claude" in (home / ".claude/settings.json").read_text()
    again = cli("init", "--agent", "claude")
    assert again.returncode == 0, again.stderr
    assert f"wrote {cfg}" not in again.stdout and "already installed" in again.stdout
    assert cli("init", "--agent", "gemini").returncode == 0
    cases = (cfg / "hooks.test.toml").read_text()
    assert cases.count('agent = "claude"') == 2 and cases.count('agent = "gemini"') == 2
    tested = cli("test")
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "11 passed" in tested.stdout


def test_init_for_an_agent_keeps_a_policy_of_the_users_own_and_its_cases(
    dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    ws, cfg = dirs
    home = tmp_path / "home"
    home.mkdir()
    cfg.mkdir(parents=True, exist_ok=True)
    mine = '[[hooks.pre_tool]]\nbuiltin = "protected_push"\nbranches = ["prod"]\n'
    (cfg / "hooks.toml").write_text(mine)
    done = triohooks_cli("init", "--agent", "codex", cwd=ws, config_dir=cfg, HOME=str(home))
    assert done.returncode == 0, done.stderr
    assert (cfg / "hooks.toml").read_text() == mine
    assert not (cfg / "hooks.test.toml").exists()
    assert (
        f"kept {cfg}/hooks.test.toml as it is: the policy is your own, so are its cases"
        in done.stdout
    )
    assert "/fronts codex" in (home / ".codex/hooks.json").read_text()
