"""Every recipe in the bundled yolop-hooks skill: it validates, it is written through the tools,
and a real engine running real bash blocks exactly what the recipe says it blocks and lets
through what it says it lets through."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from triohooks.config.table import load_table
from triohooks.config.trust import record_trust
from triohooks.engine.hook_engine import HookEngine
from triohooks.fronts.selfconfig import HooksTools, skill_text, validate

pytestmark = pytest.mark.slow

_SECTION = re.compile(r"^### (.+)$", re.M)
_CLAIM = re.compile(r"^- (blocks|allows|audits|runs after|not after): `(.+)`$", re.M)
_JSON = re.compile(r"^```json\n(.*?)^```$", re.M | re.S)


class Recipe(msgspec.Struct, frozen=True):
    title: str
    hook: dict[str, Any]
    claims: tuple[tuple[str, str], ...]

    def said(self, kind: str) -> list[str]:
        return [cmd for k, cmd in self.claims if k == kind]


def recipes() -> list[Recipe]:
    text = skill_text()
    heads = list(_SECTION.finditer(text))
    out = []
    for head, nxt in zip(heads, [*heads[1:], None], strict=True):
        body = text[head.end() : nxt.start() if nxt is not None else len(text)]
        blocks = _JSON.findall(body)
        assert len(blocks) == 1, f"recipe {head.group(1)!r} must hold exactly one json block"
        claims = tuple((m.group(1), m.group(2)) for m in _CLAIM.finditer(body))
        out.append(Recipe(head.group(1), json.loads(blocks[0]), claims))
    return out


RECIPES = {r.hook["id"]: r for r in recipes()}
BLOCKERS = [i for i, r in RECIPES.items() if r.said("blocks")]


def test_the_skill_ships_the_recipes_and_the_scope_rules() -> None:
    assert list(RECIPES) == [
        "block-git",
        "block-git-writes",
        "block-publish",
        "audit-bash",
        "format-after-edit",
    ]
    assert BLOCKERS == ["block-git", "block-git-writes", "block-publish"]
    text = skill_text()
    assert text.startswith("---\nname: yolop-hooks\n")
    for rule in ("**`global`**", "**`workspace`**", "**ask once**", "only `hooks.json`"):
        assert rule in text


@pytest.mark.parametrize("hook_id", list(RECIPES))
def test_each_recipe_validates_and_says_what_it_does(hook_id: str) -> None:
    recipe = RECIPES[hook_id]
    check = validate(recipe.hook)
    assert check.valid, check.error
    assert check.id == hook_id and recipe.hook.get("description")
    assert recipe.claims, "every recipe lists what it does"


def engine(tmp_path: Path) -> Any:
    ws, g = tmp_path / "ws", tmp_path / "g"
    ws.mkdir(exist_ok=True)
    g.mkdir(exist_ok=True)
    return HookEngine.open(workspace=ws, config_dir=g, state_dir=tmp_path / "state")


@pytest.mark.parametrize("hook_id", BLOCKERS)
async def test_each_block_recipe_blocks_and_allows_what_it_says(
    tmp_path: Path, hook_id: str
) -> None:
    recipe = RECIPES[hook_id]
    with trio.fail_after(30):
        async with engine(tmp_path) as e:
            await HooksTools.for_engine(e).upsert_hook("global", recipe.hook)
            for command in recipe.said("blocks"):
                out = await e.pre_tool("bash", {"command": command})
                assert out.blocked, f"{hook_id} should block {command!r}"
                assert out.message_for_model is not None
                assert out.message_for_model.startswith("blocked by pre_tool hook: ")
                assert out.user_message and out.warnings == []
            for command in recipe.said("allows"):
                out = await e.pre_tool("bash", {"command": command})
                assert not out.blocked, f"{hook_id} should let {command!r} through"
                assert out.runs == []  # the matcher did not even start the hook
            # Another tool with a matching argument is not this recipe's business.
            other = await e.pre_tool("read_file", {"command": recipe.said("blocks")[0]})
            assert not other.blocked


async def test_audit_recipe_appends_one_json_line_per_bash_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recipe = RECIPES["audit-bash"]
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    commands = recipe.said("audits")
    with trio.fail_after(30):
        async with engine(tmp_path) as e:
            await HooksTools.for_engine(e).upsert_hook("global", recipe.hook)
            for n, command in enumerate(commands):
                out = await e.pre_tool("bash", {"command": command}, tool_call_id=f"c{n}")
                assert not out.blocked and len(out.runs) == 1 and out.warnings == []
            assert (await e.pre_tool("read_file", {"path": "x"})).runs == []
    lines = (tmp_path / "xdg/agent-audit/bash.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["data"]["arguments"]["command"] for r in records] == commands
    assert [r["data"]["tool_call_id"] for r in records] == [f"c{n}" for n in range(len(commands))]
    assert {r["event"] for r in records} == {"pre_tool_use"}


async def test_format_recipe_runs_after_the_edit_tools_only(tmp_path: Path) -> None:
    recipe = RECIPES["format-after-edit"]
    with trio.fail_after(30):
        async with engine(tmp_path) as e:
            written = await HooksTools.for_engine(e).upsert_hook("workspace", recipe.hook)
            # cargo runs code trust cannot see: the write is not trust; the user's is.
            assert not written.trust_recorded and "cargo" in str(e.table.trust.unseen)
            trust = load_table(
                workspace=tmp_path / "ws", config_dir=tmp_path / "g", trust_covers=["Cargo.toml"]
            ).trust
            assert trust is not None
            record_trust(tmp_path / "g", tmp_path / "ws", trust)
            for tool in recipe.said("runs after"):
                out = await e.post_tool(tool, {"path": "src/lib.rs"}, result="ok")
                assert [r.hook for r in out.runs] == ["user:format-after-edit"]
                assert not out.blocked  # on_error "warn": a missing formatter never blocks
            for tool in recipe.said("not after"):
                out = await e.post_tool(tool, {"command": "ls"}, result="ok")
                assert out.runs == []
