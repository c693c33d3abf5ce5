"""Conformance with the written specs, checked the way an outsider would check them.

Every test here is derived from a sentence of docs/design.md or one of the two seeds (blitz
``spec_hooks_010`` and the yolop hooks spec), not from the implementation: the real CLI (its
``main`` as a child process would run it, ``tests.helpers.cli_here``; ``TRIOHOOKS_CONFIG_DIR`` /
``TRIOHOOKS_STATE_DIR`` pointed at temp dirs), real bash hooks, and the public
``runtime.HookEngine``. Checks are batched into few engine / CLI runs so the
module stays fast; hook timeouts are short.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import trio

from triohooks import ConfigError, HookEngine, JudgeReply

from .helpers import OUTCOME_KEYS, RUN_KEYS, cli_here

CLI_TIMEOUT_S = 30


# --------------------------------------------------------------------------------------------
# helpers


class Env:
    """A temp global config dir, state dir and workspace, and a way to run the CLI in them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.config = root / "config"
        self.state = root / "state"
        self.ws = root / "ws"
        self.out = root / "out"
        for d in (self.config, self.ws, self.out):
            d.mkdir(parents=True, exist_ok=True)

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["TRIOHOOKS_CONFIG_DIR"] = str(self.config)
        env["TRIOHOOKS_STATE_DIR"] = str(self.state)
        env["OUT"] = str(self.out)
        return env

    def cli(
        self, *args: str, payload: Any = None, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        if stdin is None:
            stdin = json.dumps(payload) if payload is not None else ""
        words = list(args)
        if words and words[0] in ("fire", "list", "validate", "doctor", "trust"):
            words += ["--workspace", str(self.ws)]
        return cli_here(words, stdin=stdin, env=self.env(), cwd=self.ws, timeout=CLI_TIMEOUT_S)

    def fire(
        self, event: str, payload: Any, *extra: str
    ) -> tuple[int, dict[str, Any], subprocess.CompletedProcess[str]]:
        proc = self.cli("fire", event, *extra, payload=payload)
        assert "Traceback" not in proc.stderr, proc.stderr
        out = json.loads(proc.stdout) if proc.stdout.strip() else {}
        return proc.returncode, out, proc

    def global_toml(self, text: str) -> Path:
        path = self.config / "hooks.toml"
        path.write_text(text)
        return path

    def global_json(self, doc: Any) -> Path:
        path = self.config / "hooks.json"
        path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
        return path

    def ws_file(self, name: str, content: Any) -> Path:
        path = self.ws / ".agents" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str) else json.dumps(content))
        return path


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    e = Env(tmp_path)
    monkeypatch.setenv("OUT", str(e.out))  # for hooks run by an in-process engine
    return e


def jhook(hook_id: str | None, event: str, command: str, **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"event": event, "executor": {"type": "bash", "command": command}}
    if hook_id is not None:
        spec["id"] = hook_id
    spec.update(extra)
    return spec


def reply(obj: Any) -> str:
    """A bash command printing ``obj`` as JSON on stdout."""
    text = json.dumps(obj).replace("'", "'\\''")
    return f"printf '%s\\n' '{text}'"


def assert_outcome_shape(out: dict[str, Any]) -> None:
    assert set(out) >= OUTCOME_KEYS, OUTCOME_KEYS - set(out)
    for run in out["runs"]:
        assert set(run) >= RUN_KEYS, RUN_KEYS - set(run)


def audit_lines(state: Path) -> list[dict[str, Any]]:
    day = datetime.now(UTC).date().isoformat()
    path = state / "audit" / f"audit-{day}.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# --------------------------------------------------------------------------------------------
# CLI: TOML dialect, pre_tool (docs/design.md §4, §5, §7; blitz HK-10, HK-20, HK-21, HK-23, HK-60)


def test_cli_toml_pre_tool_block_and_outcome_shape(env: Env) -> None:
    env.global_toml(
        """
[[hooks.pre_tool]]
match = "edit_*"
command = "echo edit > $OUT/never"

[[hooks.pre_tool]]
match = "bash"
command = "cat > $OUT/stdin.json; pwd > $OUT/cwd; echo 'no git push' >&2; exit 2"

[[hooks.pre_tool]]
match = "bash"
command = "echo ran > $OUT/after_block"

[[hooks.pre_tool]]
match = "quiet"
command = "exit 2"

[[hooks.pre_tool]]
match = "jsonblock"
command = 'echo "{\\"decision\\": \\"block\\"}"'
"""
    )
    payload = {
        "session_id": "s1",
        "prompt_id": "p1",
        "tool": "bash",
        "args": {"command": "git push"},
        "tool_call_id": "c1",
    }
    code, out, proc = env.fire("pre_tool", payload)
    assert code == 2, proc.stderr
    assert_outcome_shape(out)
    assert out["event"] == "pre_tool"
    assert out["blocked"] is True
    assert out["decision"] == "block"
    assert out["reason"] == "no git push"
    assert out["message_for_model"] == "blocked by pre_tool hook: no git push"
    assert out["args"] == {"command": "git push"}
    # fields that don't apply to pre_tool are null
    for key in ("prompt", "result", "error", "additional_context", "user_message"):
        assert out[key] is None, key
    assert out["queued"] is False
    # runs: the skipped `edit_*` hook is absent; the first block stops the chain
    assert len(out["runs"]) == 1
    run = out["runs"][0]
    assert run["dialect"] == "toml"
    assert run["exit_code"] == 2
    assert run["source"]
    assert isinstance(run["duration_ms"], int | float)
    assert not (env.out / "never").exists()
    assert not (env.out / "after_block").exists()
    # HK-10 / docs/design.md §2: the event as JSON on stdin, with the common fields; cwd = workspace
    seen = json.loads((env.out / "stdin.json").read_text())
    assert seen["event"] == "pre_tool"
    for key in (
        "session_id",
        "workspace",
        "cwd",
        "prompt_id",
        "transcript_path",
        "permission_mode",
        "agent",
        "tool",
        "args",
    ):
        assert key in seen, key
    assert seen["session_id"] == "s1" and seen["tool"] == "bash"
    assert seen["args"] == {"command": "git push"}
    assert seen["cwd"] and Path(seen["cwd"]).resolve() == env.ws.resolve()  # HK-50: cwd carried
    assert Path(seen["workspace"]).resolve() == env.ws.resolve()
    assert Path((env.out / "cwd").read_text().strip()).resolve() == env.ws.resolve()

    # exit 2 with empty stderr: the default reason
    code, out, _ = env.fire("pre_tool", {"tool": "quiet", "args": {}})
    assert code == 2
    assert out["reason"] == "blocked by hook"
    assert out["message_for_model"] == "blocked by pre_tool hook: blocked by hook"
    # exit 0 + {"decision": "block"} also blocks
    code, out, _ = env.fire("pre_tool", {"tool": "jsonblock", "args": {}})
    assert code == 2 and out["blocked"] is True and out["decision"] == "block"
    # nothing matches: proceed, no runs
    code, out, _ = env.fire("pre_tool", {"tool": "other", "args": {"x": 1}})
    assert code == 0
    assert_outcome_shape(out)
    assert out["blocked"] is False and out["runs"] == [] and out["args"] == {"x": 1}
    assert out["message_for_model"] is None


def test_cli_toml_failures_fail_closed_and_audit(env: Env) -> None:
    env.global_toml(
        """
[[hooks.pre_tool]]
id = "flaky"
match = "a"
command = "echo 'api_key=sk-abcdefghijklmnopqrstuv oops' >&2; exit 3"

[[hooks.pre_tool]]
id = "strict"
match = "b"
fail_closed = true
command = "exit 5"

[[hooks.pre_tool]]
id = "slow"
match = "c"
fail_closed = true
timeout_seconds = 0.2
command = "sleep 5 & sleep 5"

[[hooks.pre_tool]]
id = "badjson"
match = "d"
fail_closed = true
command = "echo '{not json'"

[[hooks.pre_tool]]
id = "allower"
match = "e"
command = "true"
"""
    )
    # a failure that is not fail_closed: audited, warned, ignored
    code, out, proc = env.fire("pre_tool", {"session_id": "S", "tool": "a", "args": {}})
    assert code == 0
    assert out["blocked"] is False and out["decision"] is None
    assert [r["outcome"] for r in out["runs"]] != ["ok"]
    assert out["runs"][0]["exit_code"] == 3
    assert out["runs"][0]["error"]
    assert "flaky" in proc.stderr  # warned
    # fail_closed: blocks with "hook X failed and is fail_closed: ..."
    for tool, name in (("b", "strict"), ("c", "slow"), ("d", "badjson")):
        code, out, _ = env.fire("pre_tool", {"session_id": "S", "tool": tool, "args": {}})
        assert code == 2, (tool, out)
        assert out["reason"].startswith(f"hook {name} failed and is fail_closed: "), out
        assert out["message_for_model"] == f"blocked by pre_tool hook: {out['reason']}"
    # a hook with no opinion is not audited
    code, out, _ = env.fire("pre_tool", {"session_id": "S", "tool": "e", "args": {}})
    assert code == 0 and len(out["runs"]) == 1

    # docs/design.md §8: audit JSONL per UTC day, dir 0700, file 0600, one record per failing/blocking run
    audit = env.state / "audit"
    day_file = audit / f"audit-{datetime.now(UTC).date().isoformat()}.jsonl"
    assert day_file.exists(), list(audit.iterdir()) if audit.exists() else None
    assert stat.S_IMODE(audit.stat().st_mode) == 0o700
    assert stat.S_IMODE(day_file.stat().st_mode) == 0o600
    records = [r for r in audit_lines(env.state) if r.get("kind") == "hook"]
    assert [r["hook"] for r in records] == ["flaky", "strict", "slow", "badjson"]
    for rec in records:
        for key in (
            "time",
            "session",
            "kind",
            "event",
            "hook",
            "decision",
            "error",
            "duration_ms",
            "workspace",
        ):
            assert key in rec, key
        assert rec["session"] == "S" and rec["event"] == "pre_tool"
    assert records[0]["decision"] == "error"
    text = day_file.read_text()
    assert "sk-abcdefghijklmnopqrstuv" not in text  # secrets redacted

    # `triohooks list` keeps the last five failures of each hook
    for _ in range(6):
        env.cli("fire", "pre_tool", payload={"tool": "a", "args": {}})
    proc = env.cli("list", "--json")
    assert proc.returncode == 0, proc.stderr
    hooks = {h["id"]: h for h in json.loads(proc.stdout)["hooks"]}
    assert len(hooks["flaky"]["recent_failures"]) == 5
    assert hooks["allower"]["recent_failures"] == []
    proc = env.cli("list")
    assert proc.returncode == 0
    assert "flaky" in proc.stdout and "fail_closed" in proc.stdout
    assert "match" in proc.stdout and str(env.config) in proc.stdout  # what, match, where from


def test_cli_exit_codes_per_event(env: Env) -> None:
    env.global_toml(
        """
[[hooks.prompt_submit]]
command = "echo 'not that' >&2; exit 2"

[[hooks.permission_request]]
match = "deny_me"
command = 'echo "{\\"decision\\": \\"deny\\", \\"reason\\": \\"nope\\"}"'

[[hooks.permission_request]]
match = "allow_me"
command = 'echo "{\\"decision\\": \\"allow\\", \\"reason\\": \\"fine\\"}"'

[[hooks.stop]]
command = 'echo "{\\"continue\\": true, \\"reason\\": \\"run the tests\\"}"'

[[hooks.session_start]]
command = "echo 'remember: tabs'"

[[hooks.post_tool]]
command = "cat > $OUT/post_tool.json"

[[hooks.post_tool_failure]]
command = "cat > $OUT/post_tool_failure.json"

[[hooks.notification]]
command = "exit 2"
"""
    )
    # HK-24 / docs/design.md §7: prompt_submit block -> exit 4
    code, out, _ = env.fire("prompt_submit", {"prompt": "hello"})
    assert code == 4
    assert out["blocked"] is True and out["reason"] == "not that"
    assert out["prompt"] == "hello"
    assert out["args"] is None and out["message_for_model"] is None
    # permission_request: deny blocks (exit 2), allow answers instead of the user (exit 0)
    code, out, _ = env.fire("permission_request", {"tool": "deny_me", "args": {}})
    assert code == 2 and out["blocked"] is True and out["decision"] == "deny"
    assert out["reason"] == "nope"
    code, out, _ = env.fire("permission_request", {"tool": "allow_me", "args": {}})
    assert code == 0 and out["blocked"] is False and out["decision"] == "allow"
    decisions = [r["decision"] for r in audit_lines(env.state) if r.get("kind") == "hook"]
    assert "hook-deny" in decisions and "hook-allow" in decisions
    # stop: continue -> the agent goes on; the reason is the next prompt
    code, out, _ = env.fire("stop", {"prompt_id": "p"})
    assert out["continue"] is True and out["reason"] == "run the tests"
    assert code == 2  # "blocked" for stop means: do not stop
    # session_start: plain stdout is context
    code, out, _ = env.fire("session_start", {"reason": "startup"})
    assert code == 0 and out["additional_context"] == "remember: tabs"
    assert out["args"] is None and out["prompt"] is None and out["result"] is None
    # post_tool (blitz dialect): background, queued, drained before exit; with an error
    # post_tool_failure fires too (and post_tool still fires)
    code, out, _ = env.fire(
        "post_tool", {"tool": "bash", "args": {"c": 1}, "result": None, "error": "boom"}
    )
    assert code == 0 and out["queued"] is True and out["runs"] == []
    assert out["error"] == "boom"
    assert json.loads((env.out / "post_tool.json").read_text())["event"] == "post_tool"
    failure = json.loads((env.out / "post_tool_failure.json").read_text())
    assert failure["event"] == "post_tool_failure" and failure["error"] == "boom"
    # a background event cannot block
    code, out, _ = env.fire("notification", {"type": "question", "message": "hi"})
    assert code == 0 and out["blocked"] is False and out["queued"] is True


def test_cli_usage_and_config_errors_never_traceback(env: Env) -> None:
    code, _, proc = env.fire("no_such_event", {})
    assert code == 1 and proc.stderr.strip()
    proc = env.cli("fire", "pre_tool", stdin="{not json")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and proc.stderr.strip()
    env.global_toml(
        """
[[hooks.pre_tool]]
command = ""

[[hooks.pre_tool]]
match = "[unclosed"
command = "true"

[[hooks.post_tool]]
if = "shell(git push"
command = "true"

[[hooks.prompt_submit]]
command = "true"
args = ["true"]

[[hooks.stop]]
type = "http"

[[hooks.stop]]
type = "prompt"
"""
    )
    cfg = str(env.config / "hooks.toml")
    proc = env.cli("validate")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    text = proc.stderr
    for event, index, field in (
        ("pre_tool", 0, "command"),
        ("pre_tool", 1, "match"),
        ("post_tool", 0, "if"),
        ("prompt_submit", 0, "args"),
        ("stop", 0, "url"),
        ("stop", 1, "prompt"),
    ):
        lines = [line for line in text.splitlines() if f"{event}[{index}]" in line]
        assert lines, (event, index, text)
        assert any(cfg in line and field in line for line in lines), (event, index, field, text)
    code, out, proc = env.fire("pre_tool", {"tool": "bash", "args": {}})
    assert code == 1 and out == {} and "Traceback" not in proc.stderr
    assert cfg in proc.stderr


def test_cli_doctor(env: Env) -> None:
    env.global_toml(
        """
[[hooks.pre_tool]]
command = "true"

[[hooks.stop]]
args = ["bash", "-c", "true"]

[[hooks.post_tool]]
command = "$HOME/bin/whatever"

[[hooks.prompt_submit]]
type = "http"
url = "http://127.0.0.1:9/hook"
"""
    )
    proc = env.cli("doctor")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "http://127.0.0.1:9/hook" in proc.stdout  # http hooks are listed
    env.global_toml(
        """
[[hooks.session_end]]
command = "definitely-not-a-program-xyz --flag"
"""
    )
    proc = env.cli("doctor")
    assert proc.returncode == 1
    assert "definitely-not-a-program-xyz" in proc.stdout + proc.stderr


# --------------------------------------------------------------------------------------------
# CLI: JSON dialect (docs/design.md §3, §4; yolop "Executor Contract", "Merge")

ENV_DUMP = (
    "env | grep '^EVERRUNS_HOOK_' | sort > $OUT/env_$EVERRUNS_HOOK_EVENT; "
    'f="$EVERRUNS_HOOK_PAYLOAD_PATH"; stat -c %a "$f" > $OUT/mode; cat "$f" > $OUT/file; '
    'echo "$f" > $OUT/path; echo "$MYVAR" > $OUT/myvar'
)


def _read_env(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        key, _, value = line.partition("=")
        out[key] = value
    return out


def test_cli_json_payload_environment_and_decisions(env: Env) -> None:
    env.global_json(
        {
            "hooks": [
                jhook(
                    "dump",
                    "pre_tool_use",
                    ENV_DUMP,
                    matcher={"tool_name": "dump"},
                    executor={"type": "bash", "command": ENV_DUMP, "env": {"MYVAR": "mine"}},
                ),
                jhook(
                    "blocker",
                    "pre_tool_use",
                    reply({"decision": "block", "user_message": "Blocked by hook."}) + "; exit 7",
                    matcher={
                        "tool_name": "bash",
                        "args_jsonpath": "$.command",
                        "match_regex": "(^|[;&|()[:space:]])git([[:space:]]|$)",
                    },
                ),
                jhook(
                    "m1",
                    "pre_tool_use",
                    reply({"decision": "mutate", "patch": {"arguments": {"b": 2}}}),
                    matcher={"tool_name_glob": "mut|other"},
                ),
                jhook(
                    "m2",
                    "pre_tool_use",
                    'echo "$EVERRUNS_HOOK_PAYLOAD_JSON" > $OUT/m2.json; '
                    + reply({"decision": "mutate", "patch": {"arguments": {"c": 3}}}),
                    matcher={"tool_name_glob": "mu*"},
                ),
                jhook("fails", "pre_tool_use", "exit 3", matcher={"tool_name": "warn"}),
                jhook(
                    "fails_block",
                    "pre_tool_use",
                    "exit 3",
                    matcher={"tool_name": "eblock"},
                    on_error="block",
                ),
                jhook(
                    "fails_allow",
                    "pre_tool_use",
                    "echo not-json",
                    matcher={"tool_name": "eallow"},
                    on_error="allow",
                ),
                jhook("silent", "pre_tool_use", "true", matcher={"tool_name": "silent"}),
            ]
        }
    )
    payload = {
        "session_id": "sess",
        "prompt_id": "turn9",
        "tool": "dump",
        "args": {"command": "ls"},
        "tool_call_id": "call1",
    }
    code, out, _ = env.fire("pre_tool_use", payload)
    assert code == 0
    assert out["event"] == "pre_tool"
    assert [r["dialect"] for r in out["runs"]] == ["json"]
    seen = _read_env(env.out / "env_pre_tool_use")
    assert seen["EVERRUNS_HOOK_EVENT"] == "pre_tool_use"
    assert seen["EVERRUNS_HOOK_ID"].endswith("dump")
    assert seen["EVERRUNS_HOOK_SESSION_ID"] == "sess"
    assert seen["EVERRUNS_HOOK_TURN_ID"] == "turn9"
    assert seen["EVERRUNS_HOOK_TOOL_NAME"] == "dump"
    assert seen["EVERRUNS_HOOK_TOOL_CALL_ID"] == "call1"
    doc = json.loads(seen["EVERRUNS_HOOK_PAYLOAD_JSON"])
    assert set(doc) == {"event", "hook_id", "session_id", "turn_id", "ts", "data"}
    assert doc["event"] == "pre_tool_use" and doc["session_id"] == "sess"
    assert doc["data"]["arguments"] == {"command": "ls"}
    assert json.loads((env.out / "file").read_text()) == doc
    assert (env.out / "mode").read_text().strip() == "600"
    assert not Path((env.out / "path").read_text().strip()).exists()  # removed after
    assert (env.out / "myvar").read_text().strip() == "mine"  # executor.env applied

    # block: the decision overrides the exit code; default reason "hook blocked"
    code, out, _ = env.fire("pre_tool_use", {"tool": "bash", "args": {"command": "git status"}})
    assert code == 2
    assert out["reason"] == "hook blocked"
    assert out["user_message"] == "Blocked by hook."
    assert out["message_for_model"] == "blocked by pre_tool hook: hook blocked"
    # the matcher's regex does not fire: no run at all
    code, out, _ = env.fire("pre_tool_use", {"tool": "bash", "args": {"command": "legit x"}})
    assert code == 0 and out["runs"] == []
    # mutate: shallow merge, chained (m2 sees m1's rewrite)
    code, out, _ = env.fire("pre_tool", {"tool": "mut", "args": {"a": 1, "b": 0}})
    assert code == 0
    assert out["args"] == {"a": 1, "b": 2, "c": 3}
    assert json.loads((env.out / "m2.json").read_text())["data"]["arguments"] == {"a": 1, "b": 2}
    # on_error: warn (default) proceeds with a warning; block blocks; allow is silent
    code, out, proc = env.fire("pre_tool", {"tool": "warn", "args": {}})
    assert code == 0 and out["blocked"] is False and "fails" in proc.stderr
    code, out, _ = env.fire("pre_tool", {"tool": "eblock", "args": {}})
    assert code == 2 and out["blocked"] is True
    code, out, proc = env.fire("pre_tool", {"tool": "eallow", "args": {}})
    assert code == 0 and out["blocked"] is False and "fails_allow" not in proc.stderr
    # empty stdout + exit 0 = allow
    code, out, _ = env.fire("pre_tool", {"tool": "silent", "args": {}})
    assert code == 0 and out["runs"][0]["outcome"] not in ("error", "timeout")


def test_cli_json_merge_scopes_and_lenient_loading(env: Env) -> None:
    env.global_json(
        {
            "hooks": [
                jhook("a", "pre_tool_use", "echo g-a >> $OUT/order"),
                jhook("b", "pre_tool_use", "echo g-b >> $OUT/order"),
                jhook(None, "pre_tool_use", "echo g-anon >> $OUT/order"),
                jhook("c", "pre_tool_use", "echo g-c >> $OUT/order"),
            ],
            "disabled_contributions": ["cap:one"],
        }
    )
    env.ws_file(
        "hooks.json",
        {
            "hooks": [
                jhook("b", "pre_tool_use", "echo w-b >> $OUT/order"),
                jhook(None, "pre_tool_use", "echo w-anon >> $OUT/order"),
                {"event": "pre_tool_use"},  # invalid entry: warned and skipped
            ],
            "disabled": ["a", "anything"],
            "disabled_contributions": ["cap:two"],
        },
    )
    code, out, proc = env.fire("pre_tool", {"tool": "t", "args": {}}, "--trust")
    assert code == 0, proc.stderr
    order = (env.out / "order").read_text().split()
    # a disabled; b replaced by the workspace's; id-less hooks append-only; file order kept
    assert order == ["g-anon", "g-c", "w-b", "w-anon"]
    assert len(out["runs"]) == 4

    # timeout_ms bounds: 100..30000 accepted, outside skipped with a warning
    env.global_json(
        {
            "hooks": [
                jhook("t99", "pre_tool_use", "true", timeout_ms=99),
                jhook("t100", "pre_tool_use", "true", timeout_ms=100),
                jhook("t30000", "pre_tool_use", "true", timeout_ms=30000),
                jhook("t30001", "pre_tool_use", "true", timeout_ms=30001),
                jhook(None, "session_end", "true"),
                jhook(None, "session_end", "true"),
            ]
        }
    )
    (env.ws / ".agents" / "hooks.json").unlink()
    proc = env.cli("list", "--json")
    assert proc.returncode == 0
    doc = json.loads(proc.stdout)
    ids = {h["id"]: h for h in doc["hooks"]}
    assert any(i.endswith("t100") for i in ids) and any(i.endswith("t30000") for i in ids)
    assert not any(i.endswith(("t99", "t30001")) for i in ids)
    # id-less hooks get ``<event>_<index>`` (index in the effective list; see the report)
    anon = sorted(i for i in ids if "session_end_" in i)
    assert len(anon) == 2 and anon[0] != anon[1], ids
    assert all(i.rsplit(":", 1)[-1].startswith("session_end_") for i in anon)
    default = next(h for i, h in ids.items() if i.endswith("t100"))
    assert default["timeout_s"] == pytest.approx(0.1)

    # a malformed global file is warned and skipped; the workspace scope still loads
    env.global_json("{ not json")
    env.ws_file("hooks.json", {"hooks": [jhook("w", "pre_tool_use", "echo w > $OUT/w")]})
    code, out, proc = env.fire("pre_tool", {"tool": "t", "args": {}}, "--trust")
    assert code == 0 and (env.out / "w").exists()
    assert "hooks.json" in proc.stderr or out.get("warnings")
    # a missing file is silent
    (env.config / "hooks.json").unlink()
    proc = env.cli("validate")
    assert proc.returncode == 0, proc.stderr


def test_cli_trust_states(env: Env) -> None:
    script = env.ws / "guard.sh"
    script.write_text("#!/bin/bash\necho ran >> $OUT/guard\n")
    script.chmod(0o755)
    env.ws_file("hooks.toml", '[[hooks.pre_tool]]\ncommand = "./guard.sh"\n')
    payload = {"tool": "bash", "args": {}}
    code, out, _ = env.fire("pre_tool", payload)
    assert code == 0 and out["runs"] == [] and not (env.out / "guard").exists()
    proc = env.cli("list")
    assert "guard.sh" in proc.stdout  # listed, but not run
    # --trust: for one run
    code, out, _ = env.fire("pre_tool", payload, "--trust")
    assert len(out["runs"]) == 1
    assert (
        not (env.config / "trust.json").exists()
        or "trusted" not in (env.config / "trust.json").read_text()
    )
    # trust: stored in the global dir; then the hooks run
    proc = env.cli("trust")
    assert proc.returncode == 0, proc.stderr
    assert any(env.config.iterdir())
    code, out, _ = env.fire("pre_tool", payload)
    assert len(out["runs"]) == 1
    # a change of a program the command names -> "changed": off until trusted again
    script.write_text("#!/bin/bash\necho changed >> $OUT/guard\n")
    code, out, _ = env.fire("pre_tool", payload)
    assert out["runs"] == []
    proc = env.cli("list", "--json")
    assert json.loads(proc.stdout)["trust"]["state"] == "changed"
    env.cli("trust")
    code, out, _ = env.fire("pre_tool", payload)
    assert len(out["runs"]) == 1
    # a change of the hook file itself too
    env.ws_file("hooks.toml", '[[hooks.pre_tool]]\ncommand = "./guard.sh; true"\n')
    code, out, _ = env.fire("pre_tool", payload)
    assert out["runs"] == []
    assert (env.out / "guard").read_text().split() == ["ran", "ran", "changed"]


# --------------------------------------------------------------------------------------------
# HookEngine (Python API): combining, stop, JSON post_tool_use, advisory events


def _toml(env: Env, text: str) -> None:
    env.global_toml(text)


def _say(obj: Any) -> str:
    """TOML-string-safe bash command printing ``obj`` as JSON."""
    return reply(obj).replace("\\", "\\\\").replace('"', '\\"')


async def test_engine_combining_and_stop_cap(env: Env) -> None:
    _toml(
        env,
        f"""
[[hooks.pre_tool]]
command = "{_say({"updated_args": {"command": "first"}, "additional_context": "ctx1", "system_message": "m1", "decision": "allow"})}"

[[hooks.pre_tool]]
command = "cat > $OUT/second.json; {_say({"updated_args": {"command": "second"}, "additional_context": "ctx2", "system_message": "m2", "decision": "ask"})}"

[[hooks.prompt_submit]]
command = "echo plain context"

[[hooks.prompt_submit]]
command = "{_say({"additional_context": "more"})}"

[[hooks.stop]]
command = "cat >> $OUT/stop.jsonl; echo >> $OUT/stop.jsonl; echo 'keep going' >&2; exit 2"
""",
    )
    with trio.fail_after(20):
        async with HookEngine.open(
            workspace=env.ws, config_dir=env.config, state_dir=env.state
        ) as engine:
            o = await engine.fire("pre_tool_use", {"tool_name": "bash", "arguments": {"c": "x"}})
            assert o.event == "pre_tool" and not o.blocked
            assert o.args == {"command": "first"}  # the first hook's rewrite wins
            seen = json.loads((env.out / "second.json").read_text())
            assert seen["args"] == {"command": "first"}  # later hooks see it
            assert o.additional_context == "ctx1\nctx2"
            assert o.system_messages == ["m1", "m2"]
            assert o.decision == "allow"  # the first decision counts
            assert [r.hook for r in o.runs] and len(o.runs) == 2

            o = await engine.prompt_submit("hi")
            assert not o.blocked and o.prompt == "hi"
            assert o.additional_context == "plain context\nmore"

            # stop: exit 2 forces the agent on, at most 5 times per prompt_id
            results = [await engine.stop(prompt_id="p1") for _ in range(7)]
            assert [r.continue_ for r in results] == [True] * 5 + [False] * 2
            assert all(r.reason == "keep going" for r in results[:5])
            assert not results[5].blocked
            assert (await engine.stop(prompt_id="p2")).continue_ is True  # a new prompt
    lines = [json.loads(x) for x in (env.out / "stop.jsonl").read_text().split("\n") if x]
    active = [line["stop_hook_active"] for line in lines]
    assert active[0] is False and all(active[1:6])  # stop_hook_active after the first
    assert active[-1] is False  # prompt p2 starts afresh


async def test_engine_json_post_tool_use_and_advisory(env: Env) -> None:
    env.global_json(
        {
            "hooks": [
                jhook(
                    "r",
                    "post_tool_use",
                    reply({"decision": "mutate", "patch": {"result": {"ok": 1}}}),
                    matcher={"tool_name": "obj"},
                ),
                jhook(
                    "ctx",
                    "post_tool_use",
                    reply({"decision": "mutate", "patch": {"additional_context": "note"}}),
                    matcher={"tool_name_glob": "obj|scalar"},
                ),
                jhook(
                    "err",
                    "post_tool_use",
                    reply({"decision": "mutate", "patch": {"error": "rewritten"}}),
                    matcher={"tool_name": "errtool"},
                ),
                jhook(
                    "post_block",
                    "post_tool_use",
                    reply({"decision": "block", "reason": "x"}),
                    matcher={"tool_name": "blk"},
                ),
                jhook("te", "turn_end", reply({"decision": "block", "reason": "no"})),
                jhook("ss", "session_start", reply({"decision": "block"})),
                jhook(
                    "ups",
                    "user_prompt_submit",
                    reply({"decision": "mutate", "patch": {"message": "rewritten prompt"}}),
                ),
            ]
        }
    )
    with trio.fail_after(20):
        async with HookEngine.open(
            workspace=env.ws, config_dir=env.config, state_dir=env.state
        ) as engine:
            # post_tool_use is synchronous in the JSON dialect; runs are reported
            o = await engine.post_tool("obj", {}, result={"raw": True})
            assert [r.hook.split(":")[-1] for r in o.runs] == ["r", "ctx"]
            assert o.result == {"ok": 1, "hook_context": "note"}
            o = await engine.post_tool("scalar", {}, result="text out")
            assert o.result == {"value": "text out", "hook_context": "note"}
            o = await engine.post_tool("errtool", {}, result=None, error="orig")
            assert o.error == "rewritten"
            o = await engine.post_tool("blk", {}, result=1)
            assert not o.blocked
            # turn_end (fires on stop) and session_start are advisory: a block is ignored
            o = await engine.fire("turn_end", {"prompt_id": "p"})
            assert o.event == "stop" and not o.blocked and not o.continue_
            assert o.runs and o.warnings
            o = await engine.session_start("startup")
            assert not o.blocked and o.runs
            o = await engine.fire("user_prompt_submit", {"message": "orig"})
            assert o.event == "prompt_submit" and o.prompt == "rewritten prompt"
            assert not o.blocked


async def test_engine_strict_config_error_at_open(env: Env) -> None:
    env.global_toml('[[hooks.pre_tool]]\ncommand = "   "\n')
    with trio.fail_after(10), pytest.raises(ConfigError) as info:
        async with HookEngine.open(workspace=env.ws, config_dir=env.config, audit=False):
            pass
    text = str(info.value) + " ".join(str(p) for p in info.value.problems)
    assert "hooks.toml" in text and "pre_tool" in text and "command" in text


# --------------------------------------------------------------------------------------------
# Background delivery (docs/design.md §6; blitz HK-30..HK-33, HK-52)


async def test_engine_background_snapshot_order_and_limits(env: Env) -> None:
    _toml(
        env,
        """
[[hooks.post_tool]]
match = "log"
command = "cat >> $OUT/log.jsonl; echo >> $OUT/log.jsonl"

[[hooks.post_tool]]
match = "slow"
command = "sleep 5"

[[hooks.session_end]]
command = "cat > $OUT/session_end.json"
""",
    )
    kinds: list[str] = []
    with trio.fail_after(20):
        async with HookEngine.open(
            workspace=env.ws, config_dir=env.config, state_dir=env.state, drain_timeout_s=0.4
        ) as engine:
            engine.add_listener(lambda kind, fields: kinds.append(kind))
            args: dict[str, Any] = {"n": 0}
            for i in range(5):
                args["n"] = i
                result: dict[str, list[Any]] = {"out": [i]}
                o = await engine.post_tool("log", args, result=result)
                assert o.queued is True and o.runs == []
                result["out"].append("mutated later")  # must not change the queued event
            args["n"] = 99
            o = await engine.session_end("exit")
            assert o.queued is True and not o.blocked
            # One slow event first, and wait until the worker runs it: it holds the worker
            # for the rest of the test, so the queue only fills from here on.
            await engine.post_tool("slow", {}, result=-1)
            while engine.queue_depth:
                await trio.sleep(0.01)
            # Fill the queue behind it: 256 held, the rest dropped (never awaited).
            outcomes = [await engine.post_tool("slow", {}, result=i) for i in range(300)]
            accepted = sum(o.queued for o in outcomes)
            assert accepted == 256
            assert [o.queued for o in outcomes[256:]] == [False] * 44
    report = engine.close_report
    assert report is not None
    assert report.dropped_full == 300 - accepted
    assert report.max_depth == 256  # the queue holds 256
    assert report.dropped_at_close > 0  # the 0.4 s close drain cut the queue off
    assert kinds.count("falling_behind") == 1  # one warning per episode
    assert kinds.count("dropped") >= 300 - accepted
    lines = [json.loads(x) for x in (env.out / "log.jsonl").read_text().split("\n") if x]
    assert [line["args"]["n"] for line in lines] == [0, 1, 2, 3, 4]  # in order, as they were
    assert [line["result"] for line in lines] == [{"out": [i]} for i in range(5)]
    assert json.loads((env.out / "session_end.json").read_text())["reason"] == "exit"


# --------------------------------------------------------------------------------------------
# http and prompt hooks (docs/design.md §4; blitz HK-62, HK-63)


class _Server:
    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                outer.requests.append((self.path, dict(self.headers), json.loads(body)))
                status, text = {
                    "/block": (200, json.dumps({"decision": "block", "reason": "http says no"})),
                    "/fail": (500, "oops"),
                    "/ok": (204, ""),
                }.get(self.path, (404, ""))
                data = text.encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)


@pytest.fixture
def http_server() -> Iterator[_Server]:
    server = _Server()
    server.thread.start()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()
    server.thread.join(5)


async def test_engine_http_and_prompt_hooks(
    env: Env, http_server: _Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOOK_TOKEN", "t0k3n")
    monkeypatch.setenv("OTHER_SECRET", "hidden")
    url = http_server.url
    _toml(
        env,
        f"""
[[hooks.pre_tool]]
match = "h_ok"
type = "http"
url = "{url}/ok"
headers = {{ Authorization = "Bearer ${{HOOK_TOKEN}}", X-Other = "$OTHER_SECRET", X-Plain = "$HOOK_TOKEN" }}
allowed_env_vars = ["HOOK_TOKEN"]

[[hooks.pre_tool]]
match = "h_block"
type = "http"
url = "{url}/block"

[[hooks.pre_tool]]
id = "h500"
match = "h_fail"
type = "http"
url = "{url}/fail"
fail_closed = true

[[hooks.pre_tool]]
match = "h_soft"
type = "http"
url = "{url}/fail"

[[hooks.pre_tool]]
match = "judged*"
type = "prompt"
prompt = "no deleting files"
timeout_seconds = 2
""",
    )
    asked: list[tuple[str, str, str | None]] = []

    async def judge(prompt: str, event_json: str, model: str | None) -> JudgeReply:
        asked.append((prompt, event_json, model))
        ev = json.loads(event_json)
        if ev["tool"] == "judged_na":
            return JudgeReply(text='{"decision": ""}')
        return JudgeReply(text='{"decision": "block", "reason": "deletes files"}')

    with trio.fail_after(20):
        async with HookEngine.open(
            workspace=env.ws, config_dir=env.config, state_dir=env.state, judge=judge
        ) as engine:
            o = await engine.pre_tool("h_ok", {"a": 1}, session_id="s")
            assert not o.blocked and len(o.runs) == 1
            _path, headers, body = http_server.requests[-1]
            assert body["event"] == "pre_tool" and body["tool"] == "h_ok"
            assert body["args"] == {"a": 1} and body["session_id"] == "s"
            assert headers["Authorization"] == "Bearer t0k3n"
            assert headers["X-Plain"] == "t0k3n"
            assert headers["X-Other"] == "$OTHER_SECRET"  # not allowed: stays as written
            o = await engine.pre_tool("h_block", {})
            assert o.blocked and o.reason == "http says no"
            assert o.message_for_model == "blocked by pre_tool hook: http says no"
            o = await engine.pre_tool("h_fail", {})
            assert o.blocked and o.reason is not None
            assert o.reason.startswith("hook h500 failed and is fail_closed: ")
            o = await engine.pre_tool("h_soft", {})
            assert not o.blocked and o.runs[0].outcome != "ok"
            o = await engine.pre_tool("judged_na", {})
            assert not o.blocked and o.decision is None and len(o.runs) == 1
            o = await engine.pre_tool("judged_rm", {"command": "rm x"})
            assert o.blocked and o.reason == "deletes files"
            assert asked[-1][0] == "no deleting files"


# --------------------------------------------------------------------------------------------
# More of docs/design.md §3/§4 and the seeds: run order across scopes and dialects, --config, match rules


def test_cli_run_order_config_files_and_match_rules(env: Env) -> None:
    env.global_toml(
        """
[[hooks.prompt_submit]]
match = "zzz"
command = "echo g-toml >> $OUT/order"

[[hooks.pre_tool]]
match = ""
command = "echo empty-match >> $OUT/pre"

[[hooks.pre_tool]]
match = "mcp__*"
command = "echo mcp >> $OUT/pre"
"""
    )
    env.global_json({"hooks": [jhook("gj", "user_prompt_submit", "echo g-json >> $OUT/order")]})
    extra_toml = env.root / "extra.toml"
    extra_toml.write_text('[[hooks.prompt_submit]]\ncommand = "echo x-toml >> $OUT/order"\n')
    extra_json = env.root / "extra.json"
    extra_json.write_text(
        json.dumps({"hooks": [jhook("xj", "user_prompt_submit", "echo x-json >> $OUT/order")]})
    )
    env.ws_file("hooks.toml", '[[hooks.prompt_submit]]\ncommand = "echo w-toml >> $OUT/order"\n')
    env.ws_file(
        "hooks.json",
        {
            "hooks": [
                jhook(
                    "wj",
                    "user_prompt_submit",
                    "echo w-json >> $OUT/order; " + reply({"decision": "block"}),
                )
            ]
        },
    )
    code, out, proc = env.fire(
        "prompt_submit",
        {"prompt": "p"},
        "--trust",
        "--config",
        str(extra_toml),
        "--config",
        str(extra_json),
    )
    # global before workspace (the user's hooks first), --config files in between;
    # `match` is ignored for prompt_submit (HK-01); a JSON block on a prompt exits 4
    assert (env.out / "order").read_text().split() == [
        "g-toml",
        "g-json",
        "x-toml",
        "x-json",
        "w-toml",
        "w-json",
    ], proc.stderr
    assert code == 4 and out["reason"] == "hook blocked"
    assert [r["dialect"] for r in out["runs"]] == ["toml", "json"] * 3
    # a missing --config file is an error
    proc = env.cli("fire", "pre_tool", "--config", str(env.root / "missing.toml"), payload={})
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    # empty match = every tool; Go path.Match globs
    code, out, _ = env.fire("pre_tool", {"tool": "mcp__github__list", "args": {}})
    assert (env.out / "pre").read_text().split() == ["empty-match", "mcp"]
    assert len(out["runs"]) == 2


async def test_engine_json_env_absent_fields_output_cap_and_grandchild(env: Env) -> None:
    env.global_json(
        {
            "hooks": [
                jhook("ss", "session_start", "env | grep ^EVERRUNS_HOOK_ | sort > $OUT/ss_env"),
                jhook(
                    "big",
                    "pre_tool_use",
                    "head -c 70000 /dev/zero | tr '\\0' x",
                    matcher={"tool_name": "big"},
                    on_error="block",
                ),
                jhook(
                    "slow",
                    "pre_tool_use",
                    "sleep 5",
                    matcher={"tool_name": "slow"},
                    timeout_ms=100,
                    on_error="block",
                ),
                jhook(
                    "gc",
                    "pre_tool_use",
                    "sleep 30 & " + reply({"decision": "allow"}),
                    matcher={"tool_name": "gc"},
                ),
            ]
        }
    )
    with trio.fail_after(15):
        async with HookEngine.open(
            workspace=env.ws, config_dir=env.config, state_dir=env.state
        ) as engine:
            o = await engine.session_start("startup", session_id="s")
            assert len(o.runs) == 1
            seen = _read_env(env.out / "ss_env")
            assert seen["EVERRUNS_HOOK_EVENT"] == "session_start"
            # TURN_ID only when available; tool variables only on tool events
            for absent in (
                "EVERRUNS_HOOK_TURN_ID",
                "EVERRUNS_HOOK_TOOL_NAME",
                "EVERRUNS_HOOK_TOOL_CALL_ID",
            ):
                assert absent not in seen, absent
            o = await engine.pre_tool("big", {})  # over 64 KiB of output is an error
            assert o.blocked and o.runs[0].outcome != "ok"
            o = await engine.pre_tool("slow", {})  # timeout_ms is the deadline
            assert o.blocked and o.runs[0].outcome == "timeout"
            assert o.runs[0].duration_ms < 3000
            # a grandchild holding stdout open does not hold the engine
            o = await engine.pre_tool("gc", {})
            assert not o.blocked and o.decision == "allow"
            assert o.runs[0].duration_ms < 3000


def test_cli_stop_cap_holds_across_one_shot_runs(env: Env) -> None:
    """HK-51 / docs/design.md §2: at most 5 continues per prompt, stop_hook_active after the first --
    also when every stop is a separate `triohooks fire stop` process."""
    env.global_toml(
        """
[[hooks.stop]]
command = "cat >> $OUT/stop.jsonl; echo >> $OUT/stop.jsonl; echo 'keep going' >&2; exit 2"
"""
    )
    codes, conts = [], []
    for _ in range(6):
        code, out, _ = env.fire("stop", {"session_id": "s", "prompt_id": "p1"})
        codes.append(code)
        conts.append(out["continue"])
    assert conts == [True] * 5 + [False]
    assert codes == [2] * 5 + [0]
    lines = [json.loads(x) for x in (env.out / "stop.jsonl").read_text().split("\n") if x]
    assert [line["stop_hook_active"] for line in lines] == [False] + [True] * 5
    code, out, _ = env.fire("stop", {"session_id": "s", "prompt_id": "p2"})
    assert out["continue"] is True  # a new prompt starts afresh
