"""The public namespace: pinned so a rename is a deliberate, visible change."""

from __future__ import annotations

import importlib
import inspect
import re
import subprocess
import sys

import pytest

import triohooks

EXPECTED = {
    "ActorFailed",
    "AgentInput",
    "AgentPayloadError",
    "AgentResult",
    "AsyncioHookEngine",
    "ConfigError",
    "ConfigProblem",
    "EVENTS",
    "EngineOptions",
    "GuardUnavailable",
    "Hook",
    "HookEngine",
    "HookClient",
    "HookTable",
    "HooksTools",
    "JSON_ALIASES",
    "Judge",
    "JudgeReply",
    "Outcome",
    "PayloadError",
    "RemoteError",
    "RunRecord",
    "SelfConfigError",
    "TOOL_DEFINITIONS",
    "UnknownEventError",
    "canonical_event",
    "connect",
    "skill_text",
}


def test_triohooks_exports_exactly_the_public_names() -> None:
    assert set(triohooks.__all__) == EXPECTED
    for name in EXPECTED:
        assert getattr(triohooks, name) is not None


def test_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = triohooks.Nope


def test_fire_path_does_not_import_http_or_websocket_libraries() -> None:
    code = (
        "import sys, triohooks.fronts.cli, triohooks.engine.hook_engine\n"
        "heavy = [m for m in ('httpx2', 'trio_websocket', 'asyncio') if m in sys.modules]\n"
        "print(','.join(heavy))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


async def test_both_engines_take_the_one_options_type() -> None:
    import inspect

    for engine in (triohooks.HookEngine, triohooks.AsyncioHookEngine):
        params = inspect.signature(engine.open).parameters
        assert list(params) == ["judge", "options"], engine
    with pytest.raises(TypeError, match="unknown engine option"):
        async with triohooks.HookEngine.open(workspac="."):  # type: ignore[call-arg]
            pass


def _named_classes(doc: str) -> set[str]:
    return set(re.findall(r":class:`~?([\w.]+)`", doc))


def _resolve(path: str) -> object | None:
    """The class a docstring's ``:class:`` reference names, when it is triohooks' own."""
    module_path, _, name = path.replace("runtime.", "triohooks.", 1).rpartition(".")
    if not module_path.startswith("triohooks"):
        return getattr(triohooks, name, None)
    try:
        return getattr(importlib.import_module(module_path), name, None)
    except ImportError:
        return None


def test_what_public_methods_raise_or_return_is_exported() -> None:
    """Every triohooks class a public method's docstring names (what it raises or returns) can
    be imported from ``triohooks`` itself: a caller catches ``triohooks.ActorFailed``, not a
    private module's name."""
    missing = []
    for cls in (
        triohooks.HookEngine,
        triohooks.AsyncioHookEngine,
        triohooks.HookClient,
        triohooks.HooksTools,
    ):
        for attr, member in inspect.getmembers(cls):
            if attr.startswith("_"):
                continue
            for path in _named_classes(inspect.getdoc(member) or ""):
                found = _resolve(path)
                if found is None and path.startswith("triohooks.") and path.count(".") == 1:
                    missing.append(f"{cls.__name__}.{attr}: {path} (no such name)")
                    continue
                if not isinstance(found, type) or not found.__module__.startswith("triohooks"):
                    continue
                if getattr(triohooks, found.__name__, None) is not found:
                    missing.append(f"{cls.__name__}.{attr}: {path}")
    assert not missing, missing
