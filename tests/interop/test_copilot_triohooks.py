"""The real Copilot CLI 1.0.102 with triohooks, offline against the fake Responses API.

Copilot CLI's own contract first (a user hooks file that denies: the model reads the reason;
the camelCase input hooks get), then ``triohooks copilot install --scope user``: the hooks of
``~/.copilot/hooks/triohooks.json`` move into ``~/.copilot/triohooks-hooks.json`` and run
through triohooks (relay and ``serve``) with the input Copilot sent, and one guard of
triohooks' own ``hooks.toml`` blocks ``git push`` in the session.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.interop import NATIVE_GUARD, PUSH_COMMANDS, run_bounded
from tests.interop.copilot import CopilotProject, run_copilot
from tests.interop.fake_openai import FakeOpenAI, FunctionCall
from tests.interop.test_claude_code_triohooks import Server, Triohooks, serving

pytestmark = pytest.mark.interop

SESSION_TIMEOUT = 120.0


@pytest.fixture
def tri(tmp_path: Path, copilot_project: CopilotProject) -> Triohooks:
    return Triohooks.create(tmp_path, copilot_project.home)


def pre_tool(command: str) -> dict[str, Any]:
    return {"preToolUse": [{"type": "command", "bash": command, "timeoutSec": 20}]}


def session(
    binary: Path, project: CopilotProject, fake: FakeOpenAI, tri: Triohooks, **env: str
) -> None:
    """One session of the fake's script, through triohooks (the relay finds serve); ``env``
    adds to the session's environment."""
    run = run_copilot(
        binary, project, fake, timeout=SESSION_TIMEOUT, env={**tri.claude_env(), **env}
    )
    assert run.process.returncode == 0, run.process.stderr[-2000:]


def markers(project: CopilotProject) -> list[str]:
    return sorted(p.name for p in project.path.glob("marker-*"))


@contextmanager
def adopted(tri: Triohooks, project: CopilotProject, tmp_path: Path) -> Iterator[Server]:
    """serve running; the user's Copilot hooks installed; uninstalled after."""
    hooks_file = project.user_hooks_dir / "triohooks.json"
    with serving(tri, project.path, tmp_path / "serve.log") as server:
        tri.state_dir.chmod(0o700)
        tri.cli("copilot", "install", "--scope", "user", "--workspace", str(project.path))
        installed = json.loads(hooks_file.read_text())
        assert installed["version"] == 1
        for event, entries in installed["hooks"].items():
            (handler,) = entries
            assert f"copilot --event {event} --timeout" in handler["bash"], handler
        try:
            yield server
        finally:
            tri.cli("copilot", "uninstall", "--scope", "user", "--workspace", str(project.path))
    log = (tmp_path / "serve.log").read_text()
    assert "refused" not in log, log  # every relay was answered by serve (no slow path)


def test_copilot_runs_a_user_hook_and_shows_its_deny_reason(
    copilot_bin: Path, copilot_project: CopilotProject, fake_copilot: FakeOpenAI, tmp_path: Path
) -> None:
    """The contract the dialect reads: camelCase input on stdin (``toolArgs`` an object), a
    top-level ``permissionDecision`` answer, its reason given to the model."""
    seen = tmp_path / "seen.json"
    reply = json.dumps({"permissionDecision": "deny", "permissionDecisionReason": "not today"})
    copilot_project.write_hooks(pre_tool(f"cat > {seen}; echo '{reply}'"), name="guard.json")
    fake_copilot.script(["echo x > marker-0.txt"])
    run = run_copilot(copilot_bin, copilot_project, fake_copilot, timeout=SESSION_TIMEOUT)
    assert run.process.returncode == 0, run.process.stderr[-2000:]
    payload = json.loads(seen.read_text())
    assert payload["toolName"] == "bash"
    assert payload["toolArgs"]["command"] == "echo x > marker-0.txt"
    assert markers(copilot_project) == []
    (output,) = fake_copilot.tool_outputs()
    assert "not today" in output.text, output.text


def test_a_triohooks_guard_blocks_git_push_in_copilot_cli(
    copilot_bin: Path,
    copilot_project: CopilotProject,
    fake_copilot: FakeOpenAI,
    tri: Triohooks,
    tmp_path: Path,
) -> None:
    """One ``shell(git push*)`` guard in hooks.toml, and the user's own Copilot hook (adopted,
    run by triohooks with Copilot's camelCase input) beside it."""
    seen = tmp_path / "seen.jsonl"
    copilot_project.write_hooks(pre_tool(f"cat >> {seen}; echo >> {seen}"), name="triohooks.json")
    (tri.config_dir / "hooks.toml").write_text(NATIVE_GUARD)
    with adopted(tri, copilot_project, tmp_path):
        fake_copilot.script(PUSH_COMMANDS)
        session(copilot_bin, copilot_project, fake_copilot, tri)
    assert markers(copilot_project) == ["marker-0.txt"]
    first, push = fake_copilot.tool_outputs()
    assert "Denied" not in first.text, first.text
    assert "pushing is for humans" in push.text, push.text
    inputs = [json.loads(line) for line in seen.read_text().splitlines() if line.strip()]
    assert [i["toolName"] for i in inputs] == ["bash", "bash"]
    assert inputs[0]["toolArgs"]["command"] == PUSH_COMMANDS[0]


def test_copilot_apply_patch_outside_the_project_is_denied(
    copilot_bin: Path,
    copilot_project: CopilotProject,
    fake_copilot: FakeOpenAI,
    tri: Triohooks,
    tmp_path: Path,
) -> None:
    """Copilot CLI sends its ``apply_patch`` hook input with ``toolArgs`` the patch text itself
    (not JSON): triohooks reads it as the patch (docs/agents.md, "One name for each tool"), so
    ``writes_outside_workspace`` denies a patch outside the project and lets one inside go."""
    seen = tmp_path / "seen.jsonl"
    copilot_project.write_hooks(pre_tool(f"cat >> {seen}; echo >> {seen}"), name="triohooks.json")
    (tri.config_dir / "hooks.toml").write_text(
        '[[hooks.pre_tool]]\nbuiltin = "writes_outside_workspace"\nallow = []\n'
    )
    outside = tmp_path / "outside.txt"  # allow = []: /tmp is outside too
    patches = [
        f"*** Begin Patch\n*** Add File: {p}\n+x\n*** End Patch\n" for p in (outside, "in.txt")
    ]
    with adopted(tri, copilot_project, tmp_path):
        fake_copilot.script([FunctionCall.custom("apply_patch", p) for p in patches])
        session(copilot_bin, copilot_project, fake_copilot, tri, COPILOT_MODEL="gpt-5.5")
    denied, applied = fake_copilot.tool_outputs()
    assert "writes_outside_workspace guard" in denied.text, denied.text
    assert not outside.exists()
    assert (copilot_project.path / "in.txt").exists(), applied.text
    inputs = [json.loads(line) for line in seen.read_text().splitlines() if line.strip()]
    # The user's own hook (run beside the guard) got each call as Copilot sent it.
    assert [(i["toolName"], i["toolArgs"]) for i in inputs] == [("apply_patch", p) for p in patches]


def test_a_hooks_file_planted_after_install_raises_the_alarm(
    copilot_bin: Path,
    copilot_project: CopilotProject,
    fake_copilot: FakeOpenAI,
    tri: Triohooks,
    tmp_path: Path,
) -> None:
    """What a worm does to persist in Copilot CLI: a hooks file of its own in ~/.copilot/hooks.
    Copilot runs it (it is the agent's own), and triohooks says so at the next event: in the
    audit log, and to the model with the call's context; ``copilot validate`` fails."""
    worm_ran = tmp_path / "worm-ran"
    with adopted(tri, copilot_project, tmp_path):
        worm = {"sessionStart": [{"type": "command", "bash": f"echo ran > {worm_ran}"}]}
        copilot_project.write_hooks(worm, name="worm.json")
        fake_copilot.script(["echo x > marker-0.txt"])
        session(copilot_bin, copilot_project, fake_copilot, tri)
        validated = run_bounded(
            [sys.executable, "-m", "triohooks", "copilot", "validate"],
            timeout=60,
            cwd=copilot_project.path,
            env=tri.env(),
        )
        (copilot_project.user_hooks_dir / "worm.json").unlink()  # so that uninstall may go on
    assert worm_ran.exists()  # Copilot CLI ran it: not ours to stop
    alarms = tri.audit_records("tamper")
    assert len(alarms) == 1, alarms
    assert "worm.json" in alarms[0]["error"]
    assert validated.returncode == 1 and "worm.json" in validated.stdout
    assert "TAMPER" in fake_copilot.all_input_text(), fake_copilot.all_input_text()[-2000:]


def test_a_repository_install_routes_copilot_through_triohooks_relay_on_path(
    copilot_bin: Path,
    copilot_project: CopilotProject,
    fake_copilot: FakeOpenAI,
    tri: Triohooks,
    tmp_path: Path,
) -> None:
    """``triohooks copilot install`` (project scope): the repository's ``.github/hooks`` gets
    the portable catch-alls (``triohooks-relay copilot --event ...`` from PATH, what a team
    commits); Copilot CLI runs repository hooks in ``-p`` mode with
    ``GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS=true``; the repository's own hook runs through
    triohooks and the hooks.toml guard blocks ``git push``."""
    seen = tmp_path / "seen.jsonl"
    hooks_file = copilot_project.write_hooks(
        pre_tool(f"cat >> {seen}; echo >> {seen}"), name="triohooks.json", repo=True
    )
    (tri.config_dir / "hooks.toml").write_text(NATIVE_GUARD)
    with serving(tri, copilot_project.path, tmp_path / "serve.log"):
        tri.state_dir.chmod(0o700)
        tri.cli("copilot", "install", "--workspace", str(copilot_project.path))
        (handler,) = json.loads(hooks_file.read_text())["hooks"]["preToolUse"]
        assert "exec triohooks-relay copilot --event preToolUse --timeout" in handler["bash"]
        fake_copilot.script(PUSH_COMMANDS)
        env = {"GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS": "true"}
        session(copilot_bin, copilot_project, fake_copilot, tri, **env)
        tri.cli("copilot", "uninstall", "--workspace", str(copilot_project.path))
    assert "refused" not in (tmp_path / "serve.log").read_text()
    assert markers(copilot_project) == ["marker-0.txt"]
    _, push = fake_copilot.tool_outputs()
    assert "pushing is for humans" in push.text, push.text
    inputs = [json.loads(line) for line in seen.read_text().splitlines() if line.strip()]
    assert [i["toolName"] for i in inputs] == ["bash", "bash"]


def test_the_contexts_copilot_reads_reach_its_model_through_triohooks(
    copilot_bin: Path,
    copilot_project: CopilotProject,
    fake_copilot: FakeOpenAI,
    tri: Triohooks,
    tmp_path: Path,
) -> None:
    """Copilot CLI gives its model a ``postToolUse``, ``userPromptSubmitted`` and
    ``sessionStart`` hook's ``additionalContext`` (measured); adopted, the same hooks' contexts
    get there through triohooks' answer, the post-tool one after the call's output."""
    events = ("postToolUse", "userPromptSubmitted", "sessionStart")
    copilot_project.write_hooks(
        {
            event: [
                {
                    "type": "command",
                    "bash": f'cat > /dev/null; echo \'{{"additionalContext": "ctx-{event}"}}\'',
                }
            ]
            for event in events
        },
        name="triohooks.json",
    )
    with adopted(tri, copilot_project, tmp_path):
        fake_copilot.script(["echo x > marker-0.txt"])
        session(copilot_bin, copilot_project, fake_copilot, tri)
    (output,) = fake_copilot.tool_outputs()
    assert output.text.endswith("postToolUse hooks:\nctx-postToolUse"), output.text
    sent = json.dumps([r.body for r in fake_copilot.turn_requests()])
    for event in events:
        assert f"ctx-{event}" in sent, event
