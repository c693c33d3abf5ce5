from __future__ import annotations

import os
import stat
from datetime import UTC, datetime
from pathlib import Path

from triohooks.actors.audit_records import audit_file
from triohooks.config.table import load_table
from triohooks.fronts.cli import main
from triohooks.fronts.doctor import diagnose

from .helpers import bash_hook, write_json_hooks, write_toml_hooks


def run_doctor(tmp_path: Path, capsys) -> tuple[int, str]:
    code = main(
        ["doctor", "--workspace", str(tmp_path / "ws"), "--config-dir", str(tmp_path / "g")]
    )
    out = capsys.readouterr()
    return code, out.out + out.err


def test_doctor_finds_missing_programs_and_lists_http_and_prompt(tmp_path: Path, capsys) -> None:
    (tmp_path / "ws").mkdir()
    script = tmp_path / "ws/ok.sh"
    script.write_text("#!/bin/sh\n")
    os.chmod(script, 0o755)
    (tmp_path / "ws/noexec.sh").write_text("#!/bin/sh\n")
    write_toml_hooks(
        tmp_path / "g",
        """
[[hooks.pre_tool]]
command = "definitely-not-a-program-xyz --flag"
[[hooks.pre_tool]]
command = "echo hi; exit 2"
[[hooks.pre_tool]]
command = "$HOME/bin/x"
[[hooks.post_tool]]
args = ["./ok.sh"]
[[hooks.post_tool]]
command = "./noexec.sh"
[[hooks.stop]]
command = "FOO=1 bash -c true"
[[hooks.notification]]
type = "http"
url = "http://127.0.0.1:9/hook"
[[hooks.prompt_submit]]
type = "prompt"
prompt = "no secrets"
model = "judge-small"
""",
    )
    write_json_hooks(tmp_path / "g", [bash_hook("j", "nope-not-here-either")])
    code, text = run_doctor(tmp_path, capsys)
    assert code == 1
    problems = [line for line in text.splitlines() if line.startswith("PROBLEM")]
    assert len(problems) == 3, text
    assert "definitely-not-a-program-xyz: not found on PATH" in problems[0]
    assert "./noexec.sh: not an executable file" in problems[1]
    assert "nope-not-here-either: not found on PATH" in problems[2]
    assert "http hook POSTs to http://127.0.0.1:9/hook" in text
    assert "prompt hook judged by judge-small" in text
    assert "'$HOME/bin/x' not checked" in text  # HK-40: a first word with $;|& is skipped


def test_every_file_a_hook_runs_is_checked_as_trust_reads_it(tmp_path: Path, capsys) -> None:
    """Not only the first word: a script an interpreter runs, a file a script sources, a
    program a script runs by name."""
    ws = tmp_path / "ws"
    (ws / "hooks").mkdir(parents=True)
    (ws / "hooks/check.sh").write_text('source "$(dirname "$0")/lib.sh"\nnot-a-program-abc\n')
    write_toml_hooks(
        tmp_path / "g",
        f"""
[[hooks.pre_tool]]
command = "python3 {ws}/missing.py"
[[hooks.pre_tool]]
command = "bash {ws}/hooks/check.sh"
""",
    )
    code, text = run_doctor(tmp_path, capsys)
    assert code == 1
    problems = [line for line in text.splitlines() if line.startswith("PROBLEM")]
    assert any(f"{ws}/missing.py: no such file (python3 runs it)" in p for p in problems), text
    assert any(f"{ws}/hooks/lib.sh: no such file" in p for p in problems), text
    assert any("not-a-program-abc: not found on PATH" in p for p in problems), text


def test_doctor_clean_config_exits_0(tmp_path: Path, capsys) -> None:
    (tmp_path / "ws").mkdir()
    write_toml_hooks(tmp_path / "g", '[[hooks.pre_tool]]\ncommand = "true"\n')
    code, text = run_doctor(tmp_path, capsys)
    assert code == 0 and "no problems" in text


def test_doctor_reports_untrusted_workspace_and_config_errors(tmp_path: Path) -> None:
    write_toml_hooks(tmp_path / "ws/.agents", '[[hooks.pre_tool]]\ncommand = "true"\n')
    write_toml_hooks(tmp_path / "g", '[[hooks.pre_tool]]\ncommand = ""\n')
    lines = diagnose(load_table(workspace=tmp_path / "ws", config_dir=tmp_path / "g"))
    bad = [line.text for line in lines if not line.ok]
    assert any("pre_tool[0].command: must not be empty" in t for t in bad)
    assert any("held back: they are not trusted yet" in t for t in bad)


def test_doctor_says_whether_the_audit_log_can_be_written(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    (tmp_path / "ws").mkdir()
    write_toml_hooks(tmp_path / "g", '[[hooks.pre_tool]]\ncommand = "true"\n')
    monkeypatch.setenv("TRIOHOOKS_STATE_DIR", str(tmp_path / "state"))
    today = audit_file(tmp_path / "state" / "audit", datetime.now(UTC).date())
    code, text = run_doctor(tmp_path, capsys)  # nothing written yet: it would be created
    assert code == 0 and f"ok       audit log: {today} can be written" in text
    today.parent.mkdir(parents=True, mode=0o700)
    today.write_bytes(b'{"session":"s"}\n{"time":"20')  # a writer killed mid-line
    code, text = run_doctor(tmp_path, capsys)
    assert code == 0 and "it ends in a partial line (a write cut short)" in text
    today.unlink()
    if os.geteuid() == 0:  # a day file no record can be written to
        os.mknod(today, 0o600 | stat.S_IFCHR, os.makedev(1, 7))
        said = f"PROBLEM  audit log: {today} is not a regular file: audit records written"
    else:
        today.parent.chmod(0o500)
        said = f"PROBLEM  audit log: {today} cannot be created"
    try:
        code, text = run_doctor(tmp_path, capsys)
    finally:
        today.parent.chmod(0o700)
    assert code == 1 and said in text
