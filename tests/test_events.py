from __future__ import annotations

import pytest

from triohooks.config.events import (
    EVENTS,
    JSON_ALIASES,
    PayloadError,
    PreTool,
    UnknownEventError,
    canonical_event,
    event_from_payload,
)


def test_every_alias_maps_to_a_canonical_event() -> None:
    for alias, canon in JSON_ALIASES.items():
        assert canonical_event(alias) == canon
        assert canon in EVENTS


def test_unknown_event_is_an_error_naming_it() -> None:
    with pytest.raises(UnknownEventError, match="'pre_tool_usage'"):
        canonical_event("pre_tool_usage")


def test_json_field_names_are_accepted() -> None:
    ev = event_from_payload("pre_tool_use", {"tool_name": "bash", "arguments": {"command": "ls"}})
    assert isinstance(ev, PreTool)
    assert ev.tool == "bash"
    assert ev.args == {"command": "ls"}


def test_bad_field_type_names_the_event() -> None:
    with pytest.raises(PayloadError, match="pre_tool"):
        event_from_payload("pre_tool", {"args": [1, 2]})
