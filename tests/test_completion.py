"""``triohooks completion``: the scripts complete what the parser defines, in a real bash."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import triohooks_cli


def script(shell: str, tmp_path: Path) -> str:
    done = triohooks_cli("completion", shell, cwd=tmp_path, config_dir=tmp_path / "cfg")
    assert done.returncode == 0, done.stderr
    return done.stdout


def bash_complete(script_path: Path, *words: str) -> list[str]:
    """What the completion function offers for ``words`` (the last one being typed)."""
    quoted = " ".join("'" + w + "'" for w in words)
    program = (
        f"source {script_path}\n"
        f"COMP_WORDS=({quoted}); COMP_CWORD=$((${{#COMP_WORDS[@]}}-1))\n"
        '_triohooks; printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    done = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", program],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return [line for line in done.stdout.splitlines() if line]


@pytest.mark.parametrize(
    ("words", "offered"),
    [
        (("triohooks", "re"), ["replay"]),
        (("triohooks", "fire", "pre_t"), ["pre_tool", "pre_tool_use"]),
        (("triohooks", "fire", "pre_tool", "--for"), ["--format"]),
        (("triohooks", "replay", "x.jsonl", "--a"), ["--all"]),
        (("triohooks", "audit", "t"), ["tail"]),
        (("triohooks", "audit", "search", "--si"), ["--since"]),
        (("triohooks", "claude", "install", "--tr"), ["--transport"]),
        (("triohooks", "completion", "f"), ["fish"]),
        (("triohooks", "--v"), ["--version"]),
    ],
)
def test_bash_completes_commands_actions_options_and_events(
    tmp_path: Path, words: tuple[str, ...], offered: list[str]
) -> None:
    path = tmp_path / "triohooks.bash"
    path.write_text(script("bash", tmp_path))
    assert bash_complete(path, *words) == offered


def test_every_command_is_offered(tmp_path: Path) -> None:
    path = tmp_path / "triohooks.bash"
    path.write_text(script("bash", tmp_path))
    offered = set(bash_complete(path, "triohooks", ""))
    help_text = triohooks_cli("--help", cwd=tmp_path, config_dir=tmp_path / "cfg").stdout
    listed = help_text.split("{", 1)[1].split("}", 1)[0].split(",")
    assert set(listed) <= offered
    assert {"--help", "--version"} <= offered


def test_zsh_runs_the_same_function_through_bashcompinit(tmp_path: Path) -> None:
    text = script("zsh", tmp_path)
    assert "autoload -U +X bashcompinit && bashcompinit" in text
    bash = script("bash", tmp_path)
    assert text.endswith(bash.split("\n", 1)[1])
    if shutil.which("zsh") is None:
        return  # the function itself is exercised by the bash tests
    subprocess.run(["zsh", "-n", "-c", text], check=True, timeout=30)


def test_fish_completes_commands_actions_and_options(tmp_path: Path) -> None:
    text = script("fish", tmp_path)
    lines = text.splitlines()
    assert "complete -c triohooks -n __fish_use_subcommand -a replay -d " in "\n".join(lines)
    assert any("'__fish_seen_subcommand_from fire' -l format" in line for line in lines)
    assert any(
        "__fish_seen_subcommand_from audit; and __fish_seen_subcommand_from tail' -l event" in line
        for line in lines
    )
    assert all(line.startswith(("#", "complete -c triohooks ")) for line in lines)
    if shutil.which("fish") is not None:
        subprocess.run(["fish", "--no-execute", "-c", text], check=True, timeout=30)


def test_an_unknown_shell_is_a_usage_error(tmp_path: Path) -> None:
    done = triohooks_cli("completion", "tcsh", cwd=tmp_path, config_dir=tmp_path / "cfg")
    assert done.returncode == 1  # a usage error, as every command's
    assert "invalid choice: 'tcsh'" in done.stderr
