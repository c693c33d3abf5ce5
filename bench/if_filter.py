"""Cost of the ``if`` filter per tool call vs the cost of the hook spawn it saves (HK-64).

For a few typical rules and calls it times :func:`triohooks.match.ifrules.rule_applies` per call, in
two regimes: *cold* (every call brings a script never seen before, so tree-sitter parses and
the walker runs) and *warm* (the same script again: the parse comes from the LRU cache). It
"p99 no gc" repeats the cold run with the collector off: the difference is the
interpreter's own collection pauses, which land on whichever call is running. It then times
what a skipped hook would have cost: spawning ``bash -c true`` through
``subprocess.run`` (the cheapest possible command hook; real hooks cost more). Prints p50/p99
in µs and the ratio, and writes ``bench/out/if_filter.json``. Figures only, no assertions.

Run: ``python -m bench.if_filter`` (a few seconds).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from triohooks.match.ifrules import parse_if_rule, rule_applies

OUT_DIR: Final = Path(__file__).resolve().parent / "out"
WORKSPACE: Final = str(Path(__file__).resolve().parent.parent)

#: (label, rule, tool, args factory taking a unique int -> args). The int makes "cold" scripts
#: distinct without changing their shape.
Case = tuple[str, str, str, Callable[[int], dict[str, Any]]]
CASES: Final[list[Case]] = [
    ("shell words, short", "shell(git push)", "bash", lambda i: {"command": f"git log -n {i}"}),
    (
        "shell words, pipeline",
        "shell(rm)",
        "bash",
        lambda i: {"command": f"cd src && grep -rn TODO . | sort | head -{i} > /tmp/todo.txt"},
    ),
    (
        "shell glob, wrappers",
        "shell(git push *)",
        "bash",
        lambda i: {"command": f"sudo -u ci timeout 30 env A={i} git status --short"},
    ),
    (
        "shell regex, bash -c",
        "shell(re:rm\\s+-[a-z]*r.*)",
        "bash",
        lambda i: {"command": f"bash -lc 'make -j{i} && ./run_tests.sh'"},
    ),
    (
        "shell words, heredoc",
        "shell(rm)",
        "bash",
        lambda i: {"command": f"cat > notes.md <<'EOF'\n# notes {i}\n- a\n- b\nEOF"},
    ),
    ("read glob", "read(**/.env*)", "read_file", lambda i: {"path": f"src/pkg/mod{i}.py"}),
    ("web host glob", "web(*.example.com)", "web_fetch", lambda i: {"url": f"https://x{i}.org/"}),
    ("tool name", "write_file", "read_file", lambda i: {"path": f"a{i}"}),
]


def percentiles(samples_ns: list[int]) -> tuple[float, float]:
    ordered = sorted(samples_ns)
    p50 = ordered[len(ordered) // 2] / 1000
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] / 1000
    return p50, p99


def time_case(case: Case, calls: int, *, warm: bool, gc_off: bool = False) -> tuple[float, float]:
    _, rule_text, tool, make_args = case
    gc.collect()
    rule = parse_if_rule(rule_text)
    base = 10_000_000 if warm else time.perf_counter_ns()  # cold: never-seen scripts
    if warm:
        rule_applies(rule, tool=tool, args=make_args(base), workspace=WORKSPACE)
    samples: list[int] = []
    if gc_off:
        gc.disable()
    try:
        for i in range(calls):
            args = make_args(base if warm else base + i)
            start = time.perf_counter_ns()
            rule_applies(rule, tool=tool, args=args, workspace=WORKSPACE)
            samples.append(time.perf_counter_ns() - start)
    finally:
        gc.enable()
    return percentiles(samples)


def time_spawn(runs: int) -> tuple[float, float]:
    samples: list[int] = []
    for _ in range(runs):
        start = time.perf_counter_ns()
        subprocess.run(["bash", "-c", "true"], check=True)
        samples.append(time.perf_counter_ns() - start)
    return percentiles(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calls", type=int, default=3000, help="timed calls per case")
    parser.add_argument("--spawns", type=int, default=100, help="timed bash -c true spawns")
    opts = parser.parse_args()

    spawn_p50, spawn_p99 = time_spawn(opts.spawns)
    rows: list[dict[str, Any]] = []
    print(
        f"{'case':24} {'cold p50':>9} {'cold p99':>9} {'p99 no gc':>9} "
        f"{'warm p50':>9} {'warm p99':>9}   (µs)"
    )
    for case in CASES:
        cold = time_case(case, opts.calls, warm=False)
        cold_nogc = time_case(case, opts.calls, warm=False, gc_off=True)
        warm = time_case(case, opts.calls, warm=True)
        rows.append(
            {
                "case": case[0],
                "rule": case[1],
                "cold_us": cold,
                "cold_no_gc_us": cold_nogc,
                "warm_us": warm,
            }
        )
        print(
            f"{case[0]:24} {cold[0]:9.1f} {cold[1]:9.1f} {cold_nogc[1]:9.1f} "
            f"{warm[0]:9.1f} {warm[1]:9.1f}"
        )
    print(
        f"\nspawn `bash -c true` via subprocess.run: p50 {spawn_p50:.0f} µs, p99 {spawn_p99:.0f} µs"
    )
    worst_cold = max(r["cold_us"][0] for r in rows)
    median_cold = statistics.median(r["cold_us"][0] for r in rows)
    print(
        f"a skipped spawn pays for ~{spawn_p50 / worst_cold:.0f} worst-case cold checks "
        f"(~{spawn_p50 / median_cold:.0f} median)"
    )
    OUT_DIR.mkdir(exist_ok=True)
    out = {"cases": rows, "spawn_us": [spawn_p50, spawn_p99]}
    (OUT_DIR / "if_filter.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
