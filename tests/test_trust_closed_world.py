"""Closed-world trust (docs/security.md, "What trust covers"): every form of hook command either
has what it runs hashed -- an edit of it is a change -- or is held back as unseen, saying what
trust cannot see and what the user can do. Never `trusted` while code trust did not hash runs.

Each row is a form a repository could use to run code it changes later: the real files are
made, the hooks trusted, the file edited, and trust asked again.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from triohooks import HookEngine
from triohooks.agents.config import load_agent_table
from triohooks.config.table import load_table
from triohooks.config.trust import TrustRefusedError, record_trust

pytestmark = pytest.mark.slow


class Ws:
    """A project with `.agents/` hooks (or an agent's settings), its own config dir and home."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.project = root / "proj"
        self.g = root / "g"
        self.home = root / "home"
        for d in (self.project / ".agents", self.g, self.home):
            d.mkdir(parents=True)

    def file(self, rel: str, body: str, *, mode: int = 0o755) -> Path:
        path = self.project / rel if not rel.startswith("/") else Path(rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
        path.chmod(mode)
        return path

    def hook(self, command: str) -> None:
        self.file(".agents/hooks.toml", f"[[hooks.pre_tool]]\ncommand = {json.dumps(command)}\n")

    def json_hook(self, command: str, env: dict[str, str]) -> None:
        spec = {
            "event": "pre_tool_use",
            "executor": {"type": "bash", "command": command, "env": env},
        }
        self.file(".agents/hooks.json", json.dumps({"hooks": [spec]}))

    def info(self, covers: list[str] | None = None) -> Any:
        trust = load_table(workspace=self.project, config_dir=self.g, trust_covers=covers).trust
        assert trust is not None
        return trust

    def trust(self, covers: list[str] | None = None) -> None:
        record_trust(self.g, self.project, self.info(covers))
        assert self.info().state == "trusted"

    def git(self, *args: str) -> None:
        subprocess.run(["git", "-C", str(self.project), *args], check=True, timeout=30)


@pytest.fixture
def w(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Ws:
    ws = Ws(tmp_path)
    monkeypatch.setenv("HOME", str(ws.home))
    return ws


# -- covered: the file set is hashed, an edit is a change ----------------------------------------

Setup = Callable[[Ws], Path]


def python_sibling(w: Ws) -> Path:
    w.file("hooks/check.py", "import helper\n")
    w.hook("python3 hooks/check.py")
    return w.file("hooks/helper.py", "ok = True\n")


def node_relative_require(w: Ws) -> Path:
    w.file("hooks/check.js", "require('./lib')\n")
    w.hook("node hooks/check.js")
    return w.file("hooks/lib.js", "module.exports = 1\n")


def node_modules_package(w: Ws) -> Path:
    w.file("hooks/check.js", "require('left-pad')\n")
    w.hook("node hooks/check.js")
    return w.file("node_modules/left-pad/index.js", "module.exports = 1\n")


def path_prefix(w: Ws) -> Path:
    w.hook("PATH=bin:$PATH tool --check")
    return w.file("bin/tool", "#!/bin/sh\nexit 0\n")


def path_prefix_new_program(w: Ws) -> Path:
    w.file("bin/tool", "#!/bin/sh\nexit 0\n")
    w.hook("PATH=bin:$PATH tool")
    return w.project / "bin" / "git"  # a program that would now be found first


def parent_dir_script(w: Ws) -> Path:
    w.hook("../outside.sh")
    return w.file(str(w.root / "outside.sh"), "#!/bin/sh\nexit 0\n")


def tmp_script(w: Ws) -> Path:
    path = w.file(str(w.root / "tmpdir" / "x.sh"), "#!/bin/sh\nexit 0\n")
    w.hook(str(path))
    return path


def sourced_library(w: Ws) -> Path:
    w.file(".agents/check.sh", '#!/bin/bash\nsource "$(dirname "$0")/lib.sh"\ncheck\n')
    w.hook("bash .agents/check.sh")
    return w.file(".agents/lib.sh", "check() { :; }\n")


def sourced_through_a_variable(w: Ws) -> Path:
    w.file(
        ".agents/check.sh",
        '#!/bin/bash\nDIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"\n. "$DIR/lib.sh"\n',
    )
    w.hook(".agents/check.sh")
    return w.file(".agents/lib.sh", "true\n")


def bash_env_prefix(w: Ws) -> Path:
    w.hook("BASH_ENV=.agents/env.sh bash -c 'exit 0'")
    return w.file(".agents/env.sh", "true\n")


def json_executor_env(w: Ws) -> Path:
    w.json_hook("exit 0", {"BASH_ENV": str(w.project / ".agents" / "env.sh")})
    return w.file(".agents/env.sh", "true\n")


def git_fsmonitor(w: Ws) -> Path:
    w.git("init", "-q")
    w.git("config", "core.fsmonitor", ".git/fsmon.sh")
    w.hook("git status --short")
    return w.file(".git/fsmon.sh", "#!/bin/sh\nexit 0\n")


def git_hooks_path(w: Ws) -> Path:
    w.git("init", "-q")
    w.git("config", "core.hooksPath", ".githooks")
    w.file(".githooks/pre-commit", "#!/bin/sh\nexit 0\n")
    w.hook("git commit -q -m x")
    return w.project / ".githooks" / "pre-commit"


def git_alias(w: Ws) -> Path:
    w.git("init", "-q")
    w.git("config", "alias.check", "!sh scripts/y.sh")
    w.hook("git check")
    return w.file("scripts/y.sh", "exit 0\n")


def a_script_named_that_is_not_there_yet(w: Ws) -> Path:
    w.hook("./later.sh")
    return w.project / "later.sh"


def a_policy_file(w: Ws) -> Path:
    w.hook("grep -qf policy.txt && exit 2; exit 0")
    return w.file("policy.txt", "git push\n")


COVERED = [
    python_sibling,
    node_relative_require,
    node_modules_package,
    path_prefix,
    path_prefix_new_program,
    parent_dir_script,
    tmp_script,
    sourced_library,
    sourced_through_a_variable,
    bash_env_prefix,
    json_executor_env,
    git_fsmonitor,
    git_hooks_path,
    git_alias,
    a_script_named_that_is_not_there_yet,
    a_policy_file,
]


@pytest.mark.parametrize("setup", COVERED, ids=lambda f: f.__name__)
def test_what_a_form_runs_is_covered(w: Ws, setup: Setup) -> None:
    edited = setup(w)
    info = w.info()
    assert info.unseen == (), info.unseen
    w.trust()
    edited.parent.mkdir(parents=True, exist_ok=True)
    edited.write_text("#!/bin/sh\ntouch pwned\n")
    edited.chmod(0o755)
    assert w.info().state == "changed"


def test_git_bookkeeping_is_not_a_change(w: Ws) -> None:
    """A remote or a branch's upstream is not what git runs: `git remote add` leaves trust."""
    git_fsmonitor(w)
    w.trust()
    w.git("remote", "add", "origin", "https://example.invalid/x.git")
    w.git("config", "branch.main.remote", "origin")
    assert w.info().state == "trusted"
    w.git("config", "alias.st", "!sh -c 'touch pwned'")
    assert w.info().state == "changed"


# -- unseen: held back, saying what and what to do -----------------------------------------------

UNSEEN = [
    ("python3 -m checks", "imports it from the working directory"),
    ("make lint", "Makefile"),
    ("npm run lint", "package.json"),
    ("npx eslint .", "node_modules"),
    ("""python3 -c "exec(open('x.py').read())" """, "runs code given in the call"),
    ("node -e 'require(\"./x\")'", "runs code given in the call"),
    ("bash <<'EOF'\n./x.sh\nEOF", "reads commands from stdin"),
    ("git show HEAD:x.sh | bash", "reads commands from stdin"),
    ("pre-commit run --all-files", ".pre-commit-config.yaml"),
    ("python3 check.py", "the project directory itself"),
    ('"$SCRIPTS"/x.sh', "computed at run time"),
    ('eval "$CHECK"', "runs code we cannot see"),
    ("terraform validate", "does not know what terraform runs"),
    ("PYTHONPATH=$LIBS python3 hooks/x.py", "known only at run time"),
    (".venv/bin/python hooks/x.py", "the project's own python"),
]


@pytest.mark.parametrize(("command", "why"), UNSEEN, ids=[c for c, _ in UNSEEN])
def test_what_trust_cannot_see_is_held_back_and_said(w: Ws, command: str, why: str) -> None:
    w.file("check.py", "pass\n")
    w.file("hooks/x.py", "pass\n")
    w.file(".venv/bin/python", "#!/bin/sh\n")
    w.hook(command)
    info = w.info()
    assert any(why in text for _, text in info.unseen), info.unseen
    with pytest.raises(TrustRefusedError) as refused:
        record_trust(w.g, w.project, info)
    assert "--cover" in str(refused.value) and "trust cannot see what they run" in str(
        refused.value
    )
    assert w.info().state == "new"


def test_a_script_is_read_for_what_it_runs(w: Ws) -> None:
    w.file(".agents/check.sh", "#!/bin/sh\nmake lint\n")
    w.hook(".agents/check.sh")
    (command, why), *_ = w.info().unseen
    assert command == ".agents/check.sh: make lint" and "Makefile" in why


def test_named_files_answer_for_what_trust_cannot_see(w: Ws) -> None:
    """`--cover`: the user names the files it runs; they are hashed with the rest, their
    answer is kept with the record, and a new unseen form is a change again."""
    makefile = w.file("Makefile", "lint:\n\ttrue\n")
    w.hook("make lint")
    w.trust(["Makefile"])
    assert w.info().covers == ("Makefile",)
    makefile.write_text("lint:\n\ttouch pwned\n")
    assert w.info().state == "changed"
    w.trust(["Makefile"])
    w.hook("make lint && npm test")
    assert w.info().state == "changed"


def test_held_back_unseen_hooks_do_not_run_and_the_call_is_asked(w: Ws) -> None:
    w.hook("touch ran; make lint")

    async def fire() -> Any:
        async with HookEngine.open(
            workspace=w.project, config_dir=w.g, state_dir=w.root / "s"
        ) as e:
            return await e.pre_tool("bash", {"command": "ls"})

    out = trio.run(fire)
    assert not (w.project / "ran").exists() and out.runs == []
    assert out.decision == "ask" and "trust cannot see what they run" in (out.reason or "")
    assert "triohooks trust --cover PATH --workspace" in out.reason


# -- agents: settings env, relative paths run from elsewhere -------------------------------------


def _claude(w: Ws, hooks: dict[str, Any], **extra: Any) -> None:
    settings = w.project / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"hooks": hooks, **extra}))


def _pre(command: str) -> dict[str, Any]:
    return {"PreToolUse": [{"hooks": [{"type": "command", "command": command}]}]}


def _agent_info(w: Ws) -> Any:
    table = load_agent_table("claude", project=w.project, home=w.home, config_dir=w.g)
    return table.trust


def test_a_variable_from_the_settings_env_is_followed_and_covered(w: Ws) -> None:
    script = w.file("ci/guard.sh", "#!/bin/sh\nexit 0\n")
    _claude(w, _pre('"$GUARDS"/guard.sh'), env={"GUARDS": str(w.project / "ci")})
    info = _agent_info(w)
    assert not info.unseen and str(script.resolve()) in info.files
    record_trust(w.g, w.project, info, dialect="claude")
    script.write_text("#!/bin/sh\ntouch pwned\n")
    assert _agent_info(w).state == "changed"
    script.write_text("#!/bin/sh\nexit 0\n")
    record_trust(w.g, w.project, _agent_info(w), dialect="claude")
    _claude(w, _pre('"$GUARDS"/guard.sh'), env={"GUARDS": str(w.root)})  # pointed elsewhere
    assert _agent_info(w).state == "changed"


def test_bash_env_from_the_settings_env_is_covered(w: Ws) -> None:
    hook_env = w.file("ci/env.sh", "true\n")
    _claude(w, _pre("exit 0"), env={"BASH_ENV": str(hook_env)})
    record_trust(w.g, w.project, _agent_info(w), dialect="claude")
    hook_env.write_text("touch pwned\n")
    assert _agent_info(w).state == "changed"


async def test_a_relative_hook_run_from_a_subdirectory_is_held_back(w: Ws) -> None:
    """Trust read `./.claude/hooks/x.sh` from the project root; a call from a subdirectory
    would run `sub/.claude/hooks/x.sh`, which trust never read: held back, not run."""
    w.file(".claude/hooks/x.sh", "#!/bin/sh\ntouch root-ran\nexit 0\n")
    w.file("sub/.claude/hooks/x.sh", "#!/bin/sh\ntouch sub-ran\nexit 0\n")
    _claude(w, _pre("./.claude/hooks/x.sh"))
    record_trust(w.g, w.project, _agent_info(w), dialect="claude")

    def body(cwd: Path) -> bytes:
        return json.dumps(
            {
                "session_id": "s",
                "cwd": str(cwd),
                "hook_event_name": "PreToolUse",
                "tool_name": "Bash",
                "tool_input": {"command": "ls"},
            }
        ).encode()

    with trio.fail_after(30):
        async with HookEngine.open(
            workspace=w.project, config_dir=w.g, state_dir=w.root / "s"
        ) as engine:
            root = await engine.agent_hook("claude", body(w.project))
            sub = await engine.agent_hook("claude", body(w.project / "sub"))
    assert (w.project / "root-ran").exists() and not root.answer.blocked
    assert not (w.project / "sub" / "sub-ran").exists()
    out = sub.answer.output["hookSpecificOutput"]
    assert out["permissionDecision"] == "ask"
    assert "relative to the directory trust read them in" in sub.answer.output["systemMessage"]


def test_nothing_outside_is_hashed_for_a_program_of_the_machine(w: Ws) -> None:
    w.hook("/bin/sh -c true")
    info = w.info()
    assert info.files == (str((w.project / ".agents" / "hooks.toml").resolve()),)
    assert os.path.exists("/bin/sh")
