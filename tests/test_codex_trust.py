"""triohooks.agents.codex_trust: Codex's hook review state, against vectors from Codex itself.

Every expected hash below is the ``currentHash`` that the real Codex 0.169.1 reported through
``codex app-server``'s ``hooks/list`` for that handler (the interop test
``test_our_state_keys_and_hashes_are_codex_own`` re-derives such vectors from the binary).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from triohooks.agents.codex_trust import (
    canonical_json,
    event_key_label,
    hook_identity,
    hook_state_key,
    hook_states,
    hook_states_override,
    hook_states_toml,
    trusted_hash,
)


def cmd(command: str, **extra: Any) -> dict[str, Any]:
    return {"type": "command", "command": command, **extra}


# (event, matcher, handler, currentHash reported by Codex 0.169.1)
VECTORS: list[tuple[str, str | None, dict[str, Any], str]] = [
    (
        "PreToolUse",
        "Bash",
        cmd("echo hello"),
        "0db5a87976e34500eb1936b70b9d77f3e711825aa7f3a688eb4bbb0aeb07c0e7",
    ),
    (
        "PreToolUse",
        "Bash",
        cmd("echo PreToolUse"),
        "0611a0efdc2051b95e3b3de3892b92551074ce1ae27d74e7106efc3f3c89c6ee",
    ),
    (
        "PreToolUse",
        None,
        cmd("nomatcher"),
        "9eb31763c267972b7f48b0d4ce35c5cf20ff7fed72c2dd76bc93aa8340072dbb",
    ),
    (
        "PreToolUse",
        "",
        cmd("empty matcher"),
        "d88ba93a23085e7faa6bcea1a6cf76cded00fcf409f350fb9fc5d17c3a237755",
    ),
    (
        "PreToolUse",
        "*",
        cmd("star"),
        "f9cf5d7454f3ab4b24187e5915408c5e2d95bc7ec7e61b9c1c07379d1caa791e",
    ),
    (
        "PreToolUse",
        " Bash ",
        cmd("spaced"),
        "45ff0644b4aea68e8e3635629850ddcac13c4c6a8994da169657f6ba418dd842",
    ),
    (
        "PreToolUse",
        "^Bash$",
        cmd("t0", timeout=0),
        "fe753a40442ca0345e4d06825c70aa23530e405834977677ca44f93db4b8e5f7",
    ),
    (
        "PreToolUse",
        "^Bash$",
        cmd("t5", timeout=5),
        "593ef973c159aee96fe7f120cc3a9aacd6a39ab7871dc942cc6e36242b73bc9d",
    ),
    (
        "PreToolUse",
        "^Bash$",
        cmd("async", **{"async": True}),
        "ce170dd57ab4163c598a02c9d2755c0ae7b2b6c6f40ad36286499374d3a278cc",
    ),
    (
        "PreToolUse",
        "^Bash$",
        cmd("sm", statusMessage="checking"),
        "8c51b1e634cc1f0c766da58348ed5239e8997fa10c9185fc484cdc171e2bfe71",
    ),
    (
        "PreToolUse",
        "^Bash$",
        cmd("sm empty", statusMessage=""),
        "0a37a75f1e1512fe78dc067af71b6151c208ff703c41907652f7728b1eb75a14",
    ),
    (
        "PreToolUse",
        "^Bash$",
        cmd("acl2500", additionalContextLimit=2500),
        "f044bf9337994cdadba3013dda876bf61ba6e3eb79e1197a3d860154fb82a0a8",
    ),
    (
        "PreToolUse",
        "^Bash$",
        cmd("acl100", additionalContextLimit=100),
        "2e2c294cfc02c0e1161655089676e22a466359b4549fca7ba0e08a7ed236ad65",
    ),
    (
        "PreToolUse",
        "^Bash$",
        cmd("acl0", additionalContextLimit=0),
        "5df03817260f7b4ded5d9a9160934cf9dbc983025b59856114053aa6dc207703",
    ),
    (
        "PreToolUse",
        "^Bash$",
        cmd("win", commandWindows="echo win"),
        "b5cbf324d9b47c863d890dafad3bfadbd9a5b41a5ce979f4dad49a8aa6e2a300",
    ),
    (
        "PreToolUse",
        "^Bash$",
        cmd("unknown", once=True, **{"if": "Bash(x)"}),
        "d6391d68f487be189f146a9f3ea348cfe32c986bf47f4a2baf706e557e5c4604",
    ),
    (
        "PreToolUse",
        "^Bash$",
        cmd("echo 'é ✓ 😀' \"q\" \\ back\nnew\tline \u0001 \u007f <&> /"),
        "624ce2df06abd8f4fda3b5b76b119417c21151259af7fa4d01433d44a5006be2",
    ),
    (
        "PreToolUse",
        "^Bash$",
        cmd("  padded  "),
        "dee8eb65c7117a3dd8eb9d5c7e2dfd501a5877681e5a506e370c10ca0ea3e91c",
    ),
    (
        "PreToolUse",
        "^Bash$",
        {"type": "mcp_tool", "server": "s", "tool": "t"},
        "c0f1b8a8392506cdf0020c6893e902e5459b5af467a010f0b7b1dbb2e23ca77d",
    ),
    (
        "PreToolUse",
        "^Bash$",
        {
            "type": "mcp_tool",
            "server": "s",
            "tool": "t",
            "input": {"a": 1, "b": [1, "x", True], "c": {"d": "e"}, "f": 1.5},
            "timeout": 7,
            "statusMessage": "m",
        },
        "154be7f33ba4057abc5d1ec6a834195809a6dd873f75b71e14afb136406121b9",
    ),
    (
        "PreToolUse",
        None,
        {"type": "mcp_tool", "server": "s", "tool": "t", "input": {"a": 1}},
        "adbc4c477a9752b3b9915a7b59c18ceb44c30a7f31f5a299be9eb6431ba7949f",
    ),
    (
        "PreToolUse",
        None,
        {"type": "mcp_tool", "server": "s", "tool": "t", "input": {"b": [1, "x", True]}},
        "d305e74a0a487f30b065ed0bb1c6944d7ea24df9889af774f70222216776f784",
    ),
    (
        "PreToolUse",
        None,
        {"type": "mcp_tool", "server": "s", "tool": "t", "input": {"f": 1.5}},
        "58d2de28327782baf734fc5e8b2d5e34f1559a160211dd94d41db72e657da68b",
    ),
    (
        "PreToolUse",
        None,
        {"type": "mcp_tool", "server": "s", "tool": "t", "input": {"f": 1.0}},
        "eb26f5fac12e48f24f617c6511220e23fdc5d875c90a6534e7fee8549786a60d",
    ),
    (
        "PermissionRequest",
        "Bash",
        cmd("echo PermissionRequest"),
        "7e6655de445de18d0ce498c42b43ef0820458830ef18bb6d1e7e770a84a8f45c",
    ),
    (
        "PostToolUse",
        "Bash",
        cmd("echo PostToolUse"),
        "fc383922ec7a510789bc5d58e2d5d069357b42c35fa81dba6423064b29c0a0a0",
    ),
    (
        "PreCompact",
        "Bash",
        cmd("echo PreCompact"),
        "6bcca4913121ecf73b46468f2253bf3bd90b961a5f865497dbd14e3a717fbf1a",
    ),
    (
        "PostCompact",
        "Bash",
        cmd("echo PostCompact"),
        "2f52cff2b574b97fe09c0a133ee13ceedc7619d5329b10f0f7e3ea68e2f79470",
    ),
    (
        "SessionStart",
        "Bash",
        cmd("echo SessionStart"),
        "579cc97afa1c72cdd22ba07b6f785b0978d248659ec1783ec802c25fc58597d8",
    ),
    # SessionEnd keeps its matcher; its timeout defaults to 1 and is clamped to 1..3.
    (
        "SessionEnd",
        "Bash",
        cmd("echo SessionEnd"),
        "b5f292a26bfee1451aff50f66573c98bd81d44267af8a68c265bc023548ae966",
    ),
    (
        "SessionEnd",
        None,
        cmd("se10", timeout=10),
        "9962836e2c8b7cb5b25c4b6d57a910dfd98713b26e520d18d4e4064ccf1d6ae5",
    ),
    (
        "SessionEnd",
        None,
        cmd("se2", timeout=2),
        "3d77a274cabc13b1a1a7b8a8c68df7d90993c99f0e36f4ce611c6be96ad1dc2d",
    ),
    (
        "SessionEnd",
        None,
        cmd("se0", timeout=0),
        "23bb6aec3b586018fb307a6b4243489869f4da0cea8a3590c307f97d782ea083",
    ),
    # UserPromptSubmit, Stop and Interrupt drop their matcher.
    (
        "UserPromptSubmit",
        "Bash",
        cmd("echo UserPromptSubmit"),
        "743ba7e2ae9eb1598441def7bc593add4241e493fe567b28567db3c2b82b1a71",
    ),
    (
        "UserPromptSubmit",
        None,
        cmd("ups acl", additionalContextLimit=100),
        "073c699bdd1483c2f6629536ef54e6facfb9bf32f9a7261ee10ac49ae31cbcb6",
    ),
    (
        "SubagentStart",
        "Bash",
        cmd("echo SubagentStart"),
        "93e7470b3cf8bacf2f791cc840a6705e95e9f593632d4191e7a75fcf4bc6737f",
    ),
    (
        "SubagentStop",
        "Bash",
        cmd("echo SubagentStop"),
        "cfce1365b1edd36dbe98629992a1d7bfce80d09d3e1000d2029b7c2df45a723c",
    ),
    (
        "SubagentStop",
        None,
        cmd("sas acl", additionalContextLimit=100),
        "f22cad9e883e6c0cae658fcd9fd83567d8fad403b43bce814aef7a24826fabc0",
    ),
    (
        "Stop",
        "Bash",
        cmd("echo Stop"),
        "7773e56566e95134864bef4b6cd2d68e86a6321cbd95c91839a8bf57958fd74a",
    ),
    (
        "Stop",
        "X",
        cmd("stop acl", additionalContextLimit=100, timeout=9),
        "0203eaffa06be2b2d708b2fa612658842cb21891869303761e48705998a967f8",
    ),
    (
        "Interrupt",
        "Bash",
        cmd("echo Interrupt"),
        "e267be66a406f8e0d639a8e26c32750c665ae169716d5eec2f84ad49e3659d58",
    ),
    (
        "Interrupt",
        None,
        cmd("i10", timeout=10),
        "39134ce80cc3d5f841d5db1ec1fceb7b673dd6bb4e0df9b61960dd281032229f",
    ),
]


@pytest.mark.parametrize(("event", "matcher", "handler", "expected"), VECTORS)
def test_trusted_hash_matches_codex(
    event: str, matcher: str | None, handler: dict[str, Any], expected: str
) -> None:
    assert trusted_hash(handler, event=event, matcher=matcher) == f"sha256:{expected}"


def test_event_given_as_label_hashes_the_same() -> None:
    handler = cmd("echo hello")
    assert trusted_hash(handler, event="pre_tool_use", matcher="Bash") == trusted_hash(
        handler, event="PreToolUse", matcher="Bash"
    )


def test_identity_is_the_normalized_handler() -> None:
    identity = hook_identity(
        cmd("echo hello", commandWindows="x", once=True), event="Stop", matcher="m"
    )
    assert identity == {
        "event_name": "stop",
        "hooks": [{"type": "command", "command": "echo hello", "timeout": 600, "async": False}],
    }
    assert canonical_json(identity) == (
        '{"event_name":"stop","hooks":[{"async":false,"command":"echo hello",'
        '"timeout":600,"type":"command"}]}'
    )


def test_mcp_input_numbers_hash_as_serde_json_private_numbers() -> None:
    identity = hook_identity(
        {"type": "mcp_tool", "server": "s", "tool": "t", "input": {"a": 1}}, event="PreToolUse"
    )
    assert identity["hooks"] == [
        {
            "type": "mcp_tool",
            "server": "s",
            "tool": "t",
            "input": {"a": {"$serde_json::private::Number": "1"}},
            "timeout": 600,
        }
    ]


@pytest.mark.parametrize(
    "handler",
    [
        {"type": "prompt", "prompt": "p"},
        {"type": "agent"},
        {"type": "http", "url": "http://x"},
        {"command": "no type"},
        cmd("   "),
        cmd("x", timeout=1.5),
        cmd("x", timeout=-1),
        cmd("x", timeout=True),
        cmd("x", **{"async": "yes"}),
        cmd("x", statusMessage=3),
        {"type": "mcp_tool", "server": "", "tool": "t"},
        {"type": "mcp_tool", "server": "s", "tool": "t", "input": {"a": None}},
        {"type": "mcp_tool", "server": "s", "tool": "t", "input": []},
    ],
)
def test_handlers_codex_would_not_run_are_refused(handler: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        trusted_hash(handler, event="PreToolUse", matcher="Bash")


def test_mcp_tool_hooks_are_not_run_for_session_end() -> None:
    with pytest.raises(ValueError):
        trusted_hash({"type": "mcp_tool", "server": "s", "tool": "t"}, event="SessionEnd")


def test_unknown_event_is_refused() -> None:
    with pytest.raises(ValueError):
        event_key_label("PostToolUseFailure")
    with pytest.raises(ValueError):
        trusted_hash(cmd("x"), event="Notification")


# --- keys ----------------------------------------------------------------------------------------


def test_state_key_format() -> None:
    assert (
        hook_state_key("/tmp/cxprobe/home/.codex/hooks.json", "PreToolUse", 0, 0)
        == "/tmp/cxprobe/home/.codex/hooks.json:pre_tool_use:0:0"
    )
    assert (
        hook_state_key(Path("/h/.codex/config.toml"), "SessionEnd", 2, 5)
        == "/h/.codex/config.toml:session_end:2:5"
    )
    assert hook_state_key("p@m:hooks.json", "stop", 0, 1) == "p@m:hooks.json:stop:0:1"
    with pytest.raises(ValueError):
        hook_state_key("/x", "Stop", -1, 0)


def test_hook_states_of_a_file_counts_skipped_handlers_and_ignores_unknown_events() -> None:
    hooks: dict[str, Any] = {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "prompt"}, cmd("a"), cmd("  ")]},
            {"hooks": [cmd("b")]},
        ],
        "Bogus": [{"hooks": [cmd("never")]}],
        "state": {"k": {"trusted_hash": "sha256:0"}},
    }
    states = hook_states("/h/.codex/hooks.json", hooks)
    assert states == {
        "/h/.codex/hooks.json:pre_tool_use:0:1": trusted_hash(
            cmd("a"), event="PreToolUse", matcher="Bash"
        ),
        "/h/.codex/hooks.json:pre_tool_use:1:0": trusted_hash(cmd("b"), event="PreToolUse"),
    }


def test_hook_states_toml_round_trips() -> None:
    states = {
        '/a b/"q"/é/hooks.json:stop:0:0': "sha256:" + "0" * 64,
        "/h/.codex/config.toml:pre_tool_use:1:2": "sha256:" + "f" * 64,
    }
    parsed = tomllib.loads(hook_states_toml(states))
    assert {k: v["trusted_hash"] for k, v in parsed["hooks"]["state"].items()} == states
    parsed = tomllib.loads(hook_states_toml(states, enabled=False))
    assert all(v["enabled"] is False for v in parsed["hooks"]["state"].values())


def test_hook_states_override_is_one_toml_assignment() -> None:
    states = {
        '/a b/"q"/é/hooks.json:stop:0:0': "sha256:" + "0" * 64,
        "/h/.codex/config.toml:pre_tool_use:1:2": "sha256:" + "f" * 64,
    }
    override = hook_states_override(states)
    assert override.startswith("hooks.state=")
    parsed = tomllib.loads("state = " + override.removeprefix("hooks.state="))
    assert {k: v["trusted_hash"] for k, v in parsed["state"].items()} == states
