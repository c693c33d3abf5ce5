"""asyncio engine overhead: ``AsyncioHookEngine`` against the trio ``HookEngine``, side by side.

One process runs both engines on the same config for the whole run: the trio engine in its own
``trio.run`` on a helper thread, the asyncio engine (its driver on the loop, with a trio guest run
for process runs) in ``asyncio.run`` on the
main thread. Measurements alternate in small batches (asyncio batch, trio batch, next case ...),
one engine at a time (the other's thread is blocked meanwhile), each call timed with
``perf_counter_ns``. Four cases, all ``pre_tool``:

- no hook matches: the table's hooks are for other tools, the in-process one too;
- one in-process Python hook that answers "no opinion" (an asyncio coroutine function on the
  asyncio engine, a trio one on the trio engine);
- one ``command = "true"`` hook (a process spawn per call);
- one JSON-dialect ``bash`` executor running ``true`` (a spawn, its payload file and
  ``EVERRUNS_HOOK_*`` environment).

Prints p50/p99 µs per case and engine, the asyncio/trio ratio, how often each asyncio event
crossed into trio (woke the guest run: in-process hooks run on the loop and do not; a process
run does, once), and whether each target is met: no match <= 20 µs p50 on asyncio; one
in-process hook <= 100 µs p50 on asyncio and within 1.5x of the trio engine; the ``true`` hook
within 1.1x of the trio engine at p50.

    .venv/bin/python -m bench.asyncio_overhead [-n 5000] [--spawn-n 300] [--batch 50]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import queue
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import trio

from triohooks.engine.asyncio_engine import AsyncioHookEngine
from triohooks.engine.hook_engine import HookEngine

TOML = """
[[hooks.pre_tool]]
match = "never_called_tool"
command = "true"

[[hooks.pre_tool]]
match = "spawn_tool"
command = "true"

[[hooks.post_tool]]
command = "true"

[[hooks.prompt_submit]]
command = "true"
"""

#: One JSON-dialect (everruns) ``bash`` executor, for its own tool.
JSON_HOOKS = {
    "hooks": [
        {
            "event": "pre_tool_use",
            "matcher": {"tool_name": "json_tool"},
            "executor": {"type": "bash", "command": "true"},
        }
    ]
}

ARGS = {"command": "ls -la"}
#: case -> the tool its pre_tool names (which hooks match is in TOML, JSON_HOOKS and the
#: in-process hook).
CASES = {
    "no hook matches": "bash",
    "one in-process hook": "python_tool",
    "one `true` command hook": "spawn_tool",
    "one JSON `true` hook": "json_tool",
}
SPAWN_CASE = "one `true` command hook"
#: The cases that spawn a process per call (``--spawn-n`` calls, smaller batches).
SPAWN_CASES = {SPAWN_CASE, "one JSON `true` hook"}

Call = Callable[[str], Awaitable[Any]]


def pct(samples: list[int], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1000.0


def options(root: Path, name: str) -> dict[str, Any]:
    return {
        "workspace": root / "ws",
        "config_dir": root / "config",
        "state_dir": root / f"state-{name}",
        "audit": False,
    }


async def timed(call: Call, tool: str, k: int) -> list[int]:
    clock = time.perf_counter_ns
    out: list[int] = []
    for _ in range(k):
        t0 = clock()
        await call(tool)
        out.append(clock() - t0)
    return out


class TrioSide:
    """The trio engine in ``trio.run`` on a thread; :meth:`batch` runs one batch there and
    blocks until it is done (plain queues: the main thread is in a trio guest run, so
    ``trio.from_thread`` would take it for a trio thread)."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._jobs: queue.Queue[tuple[str, int] | None] = queue.Queue()
        self._results: queue.Queue[list[int] | BaseException] = queue.Queue()
        self._thread = threading.Thread(target=trio.run, args=(self._main,), name="trio-engine")

    def __enter__(self) -> TrioSide:
        self._thread.start()
        ready = self._results.get()
        if isinstance(ready, BaseException):
            raise ready
        return self

    def __exit__(self, *exc: object) -> None:
        self._jobs.put(None)
        self._thread.join()

    def batch(self, tool: str, k: int) -> list[int]:
        self._jobs.put((tool, k))
        got = self._results.get()
        if isinstance(got, BaseException):
            raise got
        return got

    async def _main(self) -> None:
        try:
            async with HookEngine.open(**options(self._root, "trio")) as engine:

                async def no_opinion(fields: Mapping[str, Any]) -> None:
                    return None

                engine.add_hook("pre_tool", no_opinion, match="python_tool")

                async def call(tool: str) -> Any:
                    return await engine.pre_tool(tool, ARGS, session_id="bench")

                self._results.put([])
                while (job := await trio.to_thread.run_sync(self._jobs.get)) is not None:
                    tool, k = job
                    self._results.put(await timed(call, tool, k))
        except BaseException as exc:
            self._results.put(exc)
            raise


async def bench(n: int, spawn_n: int, batch: int) -> dict[str, dict[str, Any]]:
    samples: dict[str, dict[str, list[int]]] = {c: {"trio": [], "asyncio": []} for c in CASES}
    crossings: dict[str, int] = dict.fromkeys(CASES, 0)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "config").mkdir()
        (root / "ws").mkdir()
        (root / "config/hooks.toml").write_text(TOML)
        (root / "config/hooks.json").write_text(json.dumps(JSON_HOOKS))
        async with AsyncioHookEngine.open(**options(root, "asyncio")) as engine:

            async def no_opinion(fields: Mapping[str, Any]) -> None:
                return None

            engine.add_hook("pre_tool", no_opinion, match="python_tool")

            async def call(tool: str) -> Any:
                return await engine.pre_tool(tool, ARGS, session_id="bench")

            guest = engine._guest
            with TrioSide(root) as trio_side:
                for case, tool in CASES.items():  # warm up both
                    k = 20 if case in SPAWN_CASES else 500
                    await timed(call, tool, k)
                    trio_side.batch(tool, k)
                gc.collect()
                todo = {c: spawn_n if c in SPAWN_CASES else n for c in CASES}
                while any(todo.values()):
                    for case, tool in CASES.items():
                        k = min(todo[case], max(1, batch // 5) if case in SPAWN_CASES else batch)
                        if not k:
                            continue
                        todo[case] -= k
                        before = guest.crossings
                        samples[case]["asyncio"] += await timed(call, tool, k)
                        crossings[case] += guest.crossings - before
                        samples[case]["trio"] += trio_side.batch(tool, k)
    figures: dict[str, dict[str, Any]] = {}
    for case, by_engine in samples.items():
        f: dict[str, Any] = {
            eng: {"n": len(s), "p50_us": pct(s, 0.50), "p99_us": pct(s, 0.99)}
            for eng, s in by_engine.items()
        }
        f["ratio_p50"] = f["asyncio"]["p50_us"] / f["trio"]["p50_us"]
        f["ratio_p99"] = f["asyncio"]["p99_us"] / f["trio"]["p99_us"]
        f["asyncio_crossings_per_event"] = crossings[case] / len(by_engine["asyncio"])
        figures[case] = f
    return figures


def targets(figures: dict[str, dict[str, Any]]) -> list[tuple[str, bool, str]]:
    no_match = figures["no hook matches"]["asyncio"]["p50_us"]
    one_hook = figures["one in-process hook"]["asyncio"]["p50_us"]
    one_ratio = figures["one in-process hook"]["ratio_p50"]
    spawn = figures[SPAWN_CASE]["ratio_p50"]
    return [
        ("no match: asyncio p50 <= 20 µs", no_match <= 20, f"{no_match:.1f} µs"),
        ("one in-process hook: asyncio p50 <= 100 µs", one_hook <= 100, f"{one_hook:.1f} µs"),
        ("one in-process hook: asyncio p50 <= 1.5x trio", one_ratio <= 1.5, f"{one_ratio:.2f}x"),
        ("`true` hook: asyncio p50 <= 1.1x trio", spawn <= 1.1, f"{spawn:.3f}x"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=5000, help="calls per engine, in-process cases")
    parser.add_argument("--spawn-n", type=int, default=300, help="calls per engine, `true` hook")
    parser.add_argument("--batch", type=int, default=50, help="calls per batch (spawns: 1/5)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    figures = asyncio.run(bench(args.n, args.spawn_n, args.batch))
    print(
        f"asyncio engine vs trio engine, pre_tool, n={args.n} per engine "
        f"({args.spawn_n} for the spawn cases), interleaved in batches"
    )
    head = f"{'case':26} {'engine':8} {'p50 µs':>9} {'p99 µs':>9}"
    print(f"{head} {'crossings/event':>16}")
    for case, f in figures.items():
        for eng in ("trio", "asyncio"):
            cross = f"{f['asyncio_crossings_per_event']:16.2f}" if eng == "asyncio" else ""
            e = f[eng]
            print(f"{case:26} {eng:8} {e['p50_us']:9.1f} {e['p99_us']:9.1f} {cross}")
        print(f"{'':26} {'ratio':8} {f['ratio_p50']:8.2f}x {f['ratio_p99']:8.2f}x")
    for label, met, value in targets(figures):
        print(f"target: {label} -> {'met' if met else 'MISSED'} ({value})")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
