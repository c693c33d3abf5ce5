"""The package's layers, read from the source: imports run one way, from the fronts down.

    fronts -> engine -> actors -> combine -> handlers -> config -> match

A module may import from its own layer or any layer below it, never from one above; the root
namespace (``triohooks/__init__.py``, the facade that re-exports the public names) is above
everything, so nothing inside may import it. Every import counts, ``TYPE_CHECKING`` and
function-level ones included: a lazy import that goes up is still a cycle waiting to happen.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: Sub-package -> rank; higher may import lower.
LAYERS = {
    # The hook author's warm-worker helper: standard library only, imports nothing of the
    # package (tests/test_worker_helper.py holds it to that).
    "worker": 0,
    "match": 0,
    "config": 1,
    "handlers": 2,
    "combine": 3,
    "actors": 4,
    "engine": 5,
    "agents": 5,
    "fronts": 6,
    "integrations": 6,
}
FACADE_RANK = 7


def installed_name(path: Path) -> str:
    """The dotted module name ``path`` installs as (runtime/ -> triohooks, actors/ -> .actors)."""
    rel = path.relative_to(ROOT)
    parts = list(rel.with_suffix("").parts)
    if parts[0] == "runtime":
        parts = ["triohooks", *parts[1:]]
    else:
        assert parts[0] == "actors"
        parts = ["triohooks", *parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_modules() -> dict[str, Path]:
    files = sorted((ROOT / "runtime").rglob("*.py")) + sorted((ROOT / "actors").rglob("*.py"))
    return {installed_name(p): p for p in files}


def rank(module: str) -> int:
    parts = module.split(".")
    assert parts[0] == "triohooks", module
    if len(parts) == 1 or parts[1] in ("__main__",):
        return FACADE_RANK
    if parts[1] not in LAYERS:
        pytest.fail(f"{module}: not in a layer; add its sub-package to LAYERS")
    return LAYERS[parts[1]]


def imports_of(module: str, path: Path) -> list[tuple[int, str]]:
    """(line, absolute module) for every import of a triohooks module in ``path``."""
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("triohooks")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                if node.level > 1:
                    base = base[: -(node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if not target.startswith("triohooks"):
                continue
            # `from pkg import name` may name a submodule: count the most specific one.
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.append((node.lineno, sub if sub in MODULES else target))
    return found


MODULES = package_modules()


def test_every_module_is_in_a_layer() -> None:
    for module in MODULES:
        rank(module)


def test_imports_run_one_way() -> None:
    violations = []
    for module, path in MODULES.items():
        own = rank(module)
        for line, target in imports_of(module, path):
            if rank(target) > own:
                where = f"{path.relative_to(ROOT)}:{line}"
                violations.append(
                    f"{where}: {module} (layer {own}) imports {target} ({rank(target)})"
                )
    assert not violations, "imports that go up a layer:\n" + "\n".join(violations)


def test_the_checker_sees_an_upward_import(tmp_path: Path) -> None:
    # The rule itself must be able to fail: a handler importing the engine is caught.
    tree_path = tmp_path / "x.py"
    tree_path.write_text(
        "from triohooks.engine.hook_engine import HookEngine\nfrom ..fronts import cli\n"
    )
    found = imports_of("triohooks.handlers.x", tree_path)
    assert [rank(t) for _, t in found] == [LAYERS["engine"], LAYERS["fronts"]]


#: The process guard's modules: the interface, both backends, the opener and the warm workers.
GUARD_MODULES = tuple(
    f"triohooks.actors.{name}"
    for name in ("guard", "reaper", "posix_guard", "process_guard", "workers", "_subreaper")
)


def import_cycle(modules: dict[str, Path]) -> list[str] | None:
    """A cycle among ``modules`` (every import counts), or None."""
    graph = {
        module: {t for _, t in imports_of(module, path) if t in modules and t != module}
        for module, path in modules.items()
    }
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(module: str, path: list[str]) -> list[str] | None:
        state[module] = 1
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (found := visit(target, [*path, target])):
                return found
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state and (found := visit(module, [module])):
            return found
    return None


def private_uses(path: Path, of: tuple[str, ...]) -> list[str]:
    """Underscore names ``path`` imports from the modules ``of``, and underscore attributes it
    reads of anything but ``self`` (another object's privates)."""
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            module = node.module.rpartition(".")[2]
            if any(m.rpartition(".")[2] == module for m in of):
                found += [
                    f"{node.lineno}: from {node.module} import {a.name}"
                    for a in node.names
                    if a.name.startswith("_")
                ]
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            if node.attr.startswith("__") or (
                isinstance(node.value, ast.Name) and node.value.id == "self"
            ):
                continue
            found.append(f"{node.lineno}: .{node.attr}")
    return found


def test_the_guard_modules_import_without_a_circle() -> None:
    modules = {m: MODULES[m] for m in GUARD_MODULES}
    assert import_cycle(modules) is None
    actors = {m: p for m, p in MODULES.items() if m.startswith("triohooks.actors.")}
    assert import_cycle(actors) is None, "nor among the actors"


def test_workers_use_the_guard_through_its_public_handle() -> None:
    workers = MODULES["triohooks.actors.workers"]
    assert private_uses(workers, GUARD_MODULES) == []


def test_the_checkers_see_a_circle_and_a_private_use(tmp_path: Path) -> None:
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("from .b import x\n")
    b.write_text("if TYPE_CHECKING:\n    from .a import Y\n")
    cycle = import_cycle({"triohooks.actors.a": a, "triohooks.actors.b": b})
    assert cycle is not None and set(cycle) == {"triohooks.actors.a", "triohooks.actors.b"}
    user = tmp_path / "user.py"
    user.write_text("from .reaper import _Run\n\ndef f(reaper):\n    reaper._stop(1)\n")
    assert private_uses(user, GUARD_MODULES) == [
        "1: from reaper import _Run",
        "4: ._stop",
    ]
