"""The public namespace: pinned so a rename is a deliberate, visible change."""

from __future__ import annotations

import runtime
import triohooks

EXPECTED = {
    "AsyncioHookEngine",
    "ConfigError",
    "ConfigProblem",
    "EVENTS",
    "Hook",
    "HookEngine",
    "HookTable",
    "HooksTools",
    "JSON_ALIASES",
    "Judge",
    "JudgeReply",
    "Outcome",
    "PayloadError",
    "RunRecord",
    "SelfConfigError",
    "TOOL_DEFINITIONS",
    "UnknownEventError",
    "canonical_event",
    "skill_text",
}


def public(module: object) -> set[str]:
    return {name for name in vars(module) if not name.startswith("_") and name != "annotations"}


def test_runtime_exports_exactly_the_public_names() -> None:
    assert public(runtime) - {"annotations"} >= EXPECTED
    extra = {
        n for n in public(runtime) - EXPECTED if not isinstance(getattr(runtime, n), type(runtime))
    }
    assert extra == set()


def test_triohooks_module_mirrors_runtime() -> None:
    for name in EXPECTED:
        assert getattr(triohooks, name) is getattr(runtime, name)
