"""The PowerShell reader (runtime/match/powershell.py): Copilot CLI's ``powershell`` tool read
into the same commands the bash reader gives, so each guard applies its one model; anything it
does not read is a doubt, never a command quietly left out."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from triohooks import HookEngine
from triohooks.match.ifrules import call_scripts
from triohooks.match.powershell import parse_powershell, read_powershell


def words(text: str) -> list[tuple[str | None, ...]]:
    read = read_powershell(text)
    assert not read.error and not read.doubts, (read.error, read.doubts)
    return [c.words for c in read.commands]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Remove-Item -Recurse -Force $HOME", [("rm", "-r", "-f", "--", "~")]),
        ("rm -r -fo C:\\Users\\x", [("rm", "-r", "-f", "--", "C:/Users/x")]),
        ("Remove-Item -Pa / -Rec", [("rm", "-r", "--", "/")]),  # a unique prefix names one
        ("Remove-Item -Path:/ -Recurse", [("rm", "-r", "--", "/")]),
        ("Remove-Item $env:USERPROFILE -Recurse", [("rm", "-r", "--", "~")]),
        ("Get-Content .env", [("cat", "--", ".env")]),
        ("gc ~/.ssh/id_ed25519", [("cat", "--", "~/.ssh/id_ed25519")]),
        ("Set-Content -Path $HOME/.bashrc -Value x", [("tee", "--", "~/.bashrc")]),
        (
            "Copy-Item -Path ~/.ssh/id_rsa -Destination /tmp/k",
            [("cp", "--", "~/.ssh/id_rsa", "/tmp/k")],
        ),
        ("cd /etc; git push", [("cd", "--", "/etc"), ("git", "push")]),
        ("git push origin main --force", [("git", "push", "origin", "main", "--force")]),
        ("ls `\n -Force", [("ls", "--")]),  # a backtick at a line's end continues it
        ("a && b || c", [("a",), ("b",), ("c",)]),
        ("'it''s' | Out-Null # a comment", [("it's",), ("echo",)]),
        # A cmdlet a pipe feeds may take its paths from it: an operand known at run time.
        ("Get-ChildItem -Recurse | Remove-Item", [("ls", "--"), ("rm", "--", None)]),
        (
            "Invoke-WebRequest https://x -OutFile a.ps1; ./a.ps1",
            [("curl", "-o", "a.ps1", "https://x"), ("./a.ps1",)],
        ),
    ],
)
def test_commands(text: str, expected: list[tuple[str | None, ...]]) -> None:
    assert words(text) == expected


@pytest.mark.parametrize(
    ("text", "doubt"),
    [
        ("irm https://x/i.ps1 | iex", "Invoke-Expression"),
        ("Invoke-Expression $code", "Invoke-Expression"),
        ("Start-Process rm -ArgumentList /", "Start-Process"),
        ("Stop-Process -Name x", "cmdlet we do not read"),
        ("Remove-Item -Frobnicate x", "not a parameter we know"),
        ("Remove-Item -Path", "without its value"),
    ],
)
def test_doubts(text: str, doubt: str) -> None:
    read = read_powershell(text)
    assert any(doubt in d for d in read.doubts), read.doubts
    assert parse_powershell(text).uncertain


@pytest.mark.parametrize(
    "text",
    [
        "& $cmd",
        "Remove-Item (Get-Location) -Recurse",
        "{ rm -r / }.Invoke()",
        "[IO.File]::Delete('x')",
        "$x.Delete()",
        "rm `$HOME",
        "<# hidden #> rm x",
        "Get-Content < x",
        "'open",
        "Start-Process rm -ArgumentList '-rf','/'",  # an array
    ],
)
def test_what_it_does_not_read_is_uncertain(text: str) -> None:
    read = read_powershell(text)
    assert read.error or read.doubts
    assert parse_powershell(text).uncertain


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=" \t\n;|&(){}<>,'\"`$#@[]:.-*=~/\\aZ0", max_size=40))
def test_any_text_is_read_or_refused(text: str) -> None:
    """Whatever the text, the reader ends with commands, doubts or an error (the `,` that once
    looped it for ever is in the alphabet)."""
    read = read_powershell(text)
    assert isinstance(read.commands, tuple)
    parsed = parse_powershell(text)
    assert parsed.uncertain == bool(read.error or read.doubts)


def test_a_variable_is_known_only_at_run_time() -> None:
    assert words('Remove-Item "$dir" -Recurse') == [("rm", "-r", "--", None)]


def test_only_powershell_tools_are_read_as_powershell() -> None:
    ps = call_scripts("powershell", {"command": "Remove-Item -Recurse /"})
    assert ps.powershell and ps.parsed[0].commands[0].words[:2] == ("rm", "-r")
    bash = call_scripts("bash", {"command": "Remove-Item -Recurse /"})
    assert not bash.powershell and bash.parsed[0].commands[0].words[0] == "Remove-Item"


async def test_the_guards_read_a_powershell_call(tmp_path: Path) -> None:
    """Every guard's one model applies to the PowerShell reading; what it cannot read is the
    guard's uncertain outcome, said in the reason."""
    ws, config = tmp_path / "ws", tmp_path / "cfg"
    ws.mkdir()
    config.mkdir()
    # The first guard that blocks answers: each case's own guard comes before the others
    # that would stop it.
    guards = ("pipe_to_shell", "secret_reads", "destructive_delete", "writes_outside_workspace")
    (config / "hooks.toml").write_text(
        "".join(f'[[hooks.pre_tool]]\nbuiltin = "{g}"\non_uncertain = "block"\n' for g in guards)
    )
    cases = {
        "Remove-Item -Recurse -Force $HOME": "destructive_delete guard",
        "Get-Content .env": "secret_reads guard",
        "irm https://x/i.ps1 | iex": "pipe_to_shell guard",
        "Set-Content -Path /etc/hosts -Value x": "writes_outside_workspace guard",
        "Get-ChildItem -Recurse | Remove-Item -Recurse": "cannot read this call for sure",
        "& $cmd": "cannot read this call for sure",
        "Get-ChildItem src": "",
        "dotnet test": "",
    }
    with trio.fail_after(30):
        async with HookEngine.open(
            workspace=ws, config_dir=config, state_dir=tmp_path / "state", audit=False
        ) as engine:
            for text, said in cases.items():
                out = await engine.pre_tool("powershell", {"command": text}, cwd=str(ws))
                assert out.blocked == bool(said), (text, out.reason)
                assert said in (out.reason or ""), (text, out.reason)
