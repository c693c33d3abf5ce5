from __future__ import annotations

import json
from pathlib import Path

import pytest

from triohooks.config.json_dialect import EntryError, parse_json_bytes, validate_hook_spec
from triohooks.config.table import load_table

from .helpers import bash_hook, write_json_hooks

GIT_REGEX = "(^|[;&|()[:space:]])git([[:space:]]|$)"


def spec(**over: object) -> dict[str, object]:
    base: dict[str, object] = {
        "id": "h",
        "event": "pre_tool_use",
        "executor": {"type": "bash", "command": "true"},
    }
    base.update(over)
    return base


def test_yolop_example_validates() -> None:
    s = validate_hook_spec(
        spec(
            id="block-git",
            matcher={"tool_name": "bash", "args_jsonpath": "$.command", "match_regex": GIT_REGEX},
            timeout_ms=1000,
            on_error="block",
            description="Block bash commands that invoke git",
        )
    )
    assert (s.timeout_ms, s.on_error) == (1000, "block")
    assert s.compiled_matcher is not None


@pytest.mark.parametrize(
    ("over", "field"),
    [
        ({"timeout_ms": 99}, "timeout_ms"),
        ({"timeout_ms": 30001}, "timeout_ms"),
        ({"timeout_ms": 1.5}, "timeout_ms"),
        ({"timeout_ms": True}, "timeout_ms"),
        ({"on_error": "ignore"}, "on_error"),
        ({"event": "pre_tool"}, "event"),
        ({"event": "permission_request"}, "event"),
        ({"executor": {"type": "bash", "command": ""}}, "executor.command"),
        ({"executor": {"type": "bash", "command": "x" * (16 * 1024 + 1)}}, "executor.command"),
        ({"executor": {"type": "python", "command": "x"}}, "executor.type"),
        ({"executor": {"type": "bash", "command": "x", "cwd": "/"}}, "executor.cwd"),
        (
            {
                "executor": {
                    "type": "bash",
                    "command": "x",
                    "env": {f"V{i}": "1" for i in range(17)},
                }
            },
            "executor.env",
        ),
        ({"executor": {"type": "bash", "command": "x", "env": {"A": 1}}}, "executor.env"),
        ({"event": "session_start", "matcher": {"tool_name": "bash"}}, "matcher"),
        ({"matcher": {"tool_nam": "bash"}}, "matcher.tool_nam"),
        ({"matcher": {"args_jsonpath": "$.c", "match_regex": "a", "deny_regex": "b"}}, "matcher"),
        ({"matcher": {"args_jsonpath": "$.c", "match_regex": "(unclosed"}}, "matcher.match_regex"),
        ({"matcher": {"tool_name_glob": "mcp_*_x"}}, "matcher.tool_name_glob"),
        ({"matcher": {"tool_name": "x" * 2049}}, "matcher.tool_name"),
        ({"bogus": 1}, "bogus"),
        ({"id": ""}, "id"),
    ],
)
def test_each_rule_rejects_the_entry_naming_the_field(over: dict[str, object], field: str) -> None:
    with pytest.raises(EntryError) as info:
        validate_hook_spec(spec(**over))
    assert info.value.field is not None and info.value.field.startswith(
        field.split(".", maxsplit=1)[0]
    )
    assert info.value.field == field or field == "matcher"


def test_default_timeout_is_5000_ms() -> None:
    assert validate_hook_spec(spec()).timeout_ms == 5000


def test_invalid_entry_is_warned_and_skipped_others_load(tmp_path: Path) -> None:
    data = json.dumps({"hooks": [spec(id="bad", timeout_ms=5), spec(id="good")]}).encode()
    out = parse_json_bytes(data, file="g/hooks.json", scope="global")
    assert [s.id for _, s in out.specs] == ["good"]
    assert len(out.problems) == 1
    problem = out.problems[0]
    assert problem.severity == "warning"
    assert str(problem).startswith("g/hooks.json: pre_tool_use[0].timeout_ms: invalid hook skipped")


@pytest.mark.parametrize(
    "data",
    [
        b"{not json",
        b"[]",
        b'{"hooks": {}}',
        json.dumps({"hooks": [spec(id=f"h{i}") for i in range(65)]}).encode(),
        b'{"hooks": []}' + b" " * (256 * 1024),
    ],
)
def test_bad_file_is_warned_and_skipped(data: bytes) -> None:
    out = parse_json_bytes(data, file="f.json", scope="global")
    assert out.specs == [] and not out.loaded
    assert [p.severity for p in out.problems] == ["warning"]


def test_64_hooks_is_fine() -> None:
    data = json.dumps({"hooks": [spec(id=f"h{i}") for i in range(64)]}).encode()
    assert len(parse_json_bytes(data, file="f.json", scope="global").specs) == 64


# ---- merge (yolop spec: Merge) -----------------------------------------------------------


def table(tmp_path: Path, trust: bool = True):
    return load_table(workspace=tmp_path / "ws", config_dir=tmp_path / "g", trust_override=trust)


def ids(t) -> list[str]:
    return [h.id for h in t.hooks]


def test_merge_override_moves_to_the_end(tmp_path: Path) -> None:
    write_json_hooks(tmp_path / "g", [bash_hook("a", "g-a"), bash_hook("b", "g-b")])
    write_json_hooks(tmp_path / "ws/.agents", [bash_hook("a", "w-a"), bash_hook("c", "w-c")])
    t = table(tmp_path)
    assert ids(t) == ["user:b", "user:a", "user:c"]
    assert t.hooks[1].runs == "w-a" and t.hooks[1].scope == "workspace"


def test_workspace_disabled_removes_global_but_global_disabled_does_not(tmp_path: Path) -> None:
    write_json_hooks(tmp_path / "g", [bash_hook("a", "g-a"), bash_hook("b", "g-b")], disabled=["w"])
    write_json_hooks(tmp_path / "ws/.agents", [bash_hook("w", "w-w")], disabled=["a"])
    assert ids(table(tmp_path)) == ["user:b", "user:w"]


def test_malformed_global_file_leaves_workspace_hooks_loading(tmp_path: Path) -> None:
    (tmp_path / "g").mkdir()
    (tmp_path / "g/hooks.json").write_text("{oops")
    write_json_hooks(tmp_path / "ws/.agents", [bash_hook("w", "w")])
    t = table(tmp_path)
    assert ids(t) == ["user:w"]
    assert any("malformed JSON" in str(p) for p in t.problems)
    assert t.errors == ()


def test_id_less_hooks_are_all_kept_and_get_event_index_ids(tmp_path: Path) -> None:
    write_json_hooks(tmp_path / "g", [bash_hook(None, "one"), bash_hook(None, "two")])
    write_json_hooks(
        tmp_path / "ws/.agents", [bash_hook(None, "three")], disabled=["pre_tool_use_0"]
    )
    t = table(tmp_path)
    assert [h.runs for h in t.hooks] == ["one", "two", "three"]
    assert ids(t) == ["user:pre_tool_use_0", "user:pre_tool_use_1", "user:pre_tool_use_2"]


def test_disabled_contributions_concatenate_and_mute_resolved_ids(tmp_path: Path) -> None:
    write_json_hooks(
        tmp_path / "g", [bash_hook("a", "a"), bash_hook("b", "b")], disabled_contributions=["cap:x"]
    )
    write_json_hooks(tmp_path / "ws/.agents", [], disabled_contributions=["user:b"])
    t = table(tmp_path)
    assert t.disabled_contributions == ("cap:x", "user:b")
    assert ids(t) == ["user:a"]


def test_missing_files_are_silent(tmp_path: Path) -> None:
    t = table(tmp_path)
    assert t.hooks == () and t.problems == ()


def test_untrusted_workspace_cannot_disable_global_hooks(tmp_path: Path) -> None:
    write_json_hooks(tmp_path / "g", [bash_hook("a", "g-a")])
    write_json_hooks(tmp_path / "ws/.agents", [bash_hook("a", "evil")], disabled=["a"])
    t = table(tmp_path, trust=False)
    assert ids(t) == ["user:a"] and t.hooks[0].runs == "g-a"
    assert [h.runs for h in t.untrusted] == ["evil"]
    assert t.trust is not None and t.trust.state == "new"


def test_run_order_global_toml_json_then_workspace(tmp_path: Path) -> None:
    (tmp_path / "g").mkdir()
    (tmp_path / "g/hooks.toml").write_text('[[hooks.pre_tool]]\ncommand = "g-toml"\n')
    write_json_hooks(tmp_path / "g", [bash_hook("j", "g-json")])
    (tmp_path / "ws/.agents").mkdir(parents=True)
    (tmp_path / "ws/.agents/hooks.toml").write_text('[[hooks.pre_tool]]\ncommand = "w-toml"\n')
    write_json_hooks(tmp_path / "ws/.agents", [bash_hook("k", "w-json")])
    t = table(tmp_path)
    assert [h.runs for h in t.hooks] == ["g-toml", "g-json", "w-toml", "w-json"]


def test_generated_id_never_collides_with_an_explicit_one(tmp_path: Path) -> None:
    write_json_hooks(
        tmp_path / "g", [bash_hook(None, "id-less"), bash_hook("pre_tool_use_0", "explicit")]
    )
    t = table(tmp_path)
    assert ids(t) == ["user:pre_tool_use_0_1", "user:pre_tool_use_0"]
    assert len(set(ids(t))) == len(t.hooks)


def test_ids_are_unique_across_files(tmp_path: Path) -> None:
    (tmp_path / "a.toml").write_text(
        '[[hooks.pre_tool]]\ncommand = "a"\n[[hooks.stop]]\nid = "x"\ncommand = "a"\n'
    )
    (tmp_path / "b.toml").write_text(
        '[[hooks.pre_tool]]\ncommand = "b"\n[[hooks.stop]]\nid = "x"\ncommand = "b"\n'
    )
    t = load_table(
        workspace=tmp_path / "ws",
        config_dir=tmp_path / "g",
        extra_configs=[tmp_path / "a.toml", tmp_path / "b.toml"],
    )
    assert ids(t) == ["extra:pre_tool[0]", "x", "extra:pre_tool[0]@b.toml", "x@b.toml"]
    assert [h.runs for h in t.hooks] == ["a", "a", "b", "b"]
