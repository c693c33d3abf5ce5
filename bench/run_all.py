"""Run every benchmark one after another and keep what each printed.

    make bench            # or: .venv/bin/python bench/run_all.py [--quick]

Each benchmark prints its own figures (and most write JSON under bench/out/); this runner adds
nothing but order and a transcript in bench/out/run_all.txt. Run it on an otherwise idle
machine: the ratios are measured side by side, but a busy second core still adds noise.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"

BENCHES: list[tuple[str, list[str], list[str]]] = [
    # (module, full arguments, --quick arguments)
    ("bench.spawn_overhead", ["-n", "1000", "--via", "engine"], ["-n", "200", "--via", "engine"]),
    ("bench.spawn_overhead", ["-n", "1000", "--via", "reaper"], ["-n", "200", "--via", "reaper"]),
    ("bench.dispatch_overhead", ["-n", "20000"], ["-n", "2000"]),
    ("bench.trust_check", ["-n", "10000"], ["-n", "1000"]),
    ("bench.helper_stall", [], ["--spawns", "50"]),
    ("bench.if_filter", [], ["--calls", "2000", "--spawns", "100"]),
    ("bench.queue_limits", [], ["--window", "0.5"]),
    ("bench.ws_stream", [], ["--seconds", "1"]),
    ("bench.stop_state", [], ["--prompts", "100000"]),
    ("bench.relay", [], ["-n", "20"]),
    ("bench.dead_serve", [], ["-n", "5"]),
    ("bench.asyncio_overhead", [], ["-n", "1000", "--spawn-n", "50"]),
    ("bench.worker_overhead", ["-n", "2000"], ["-n", "300"]),
    ("bench.builtin_guards", ["-n", "300"], ["-n", "50"]),
    ("bench.agent_native", ["-n", "300"], ["-n", "50"]),
    ("bench.session_env", ["-n", "1000"], ["-n", "50"]),
    ("bench.cli_startup", [], ["-n", "10"]),
    ("bench.ws_fleet", [], ["--clients", "10,100", "--duration", "2"]),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples (a smoke run)")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    transcript: list[str] = []
    failed = 0
    for module, full, quick in BENCHES:
        argv = [sys.executable, "-m", module, *(quick if args.quick else full)]
        header = f"$ python -m {module} {' '.join(argv[3:])}"
        print(header, flush=True)
        start = time.perf_counter()
        done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
        took = time.perf_counter() - start
        text = done.stdout + (done.stderr if done.returncode else "")
        print(text, end="" if text.endswith("\n") else "\n")
        print(f"({took:.1f} s, exit {done.returncode})\n", flush=True)
        transcript += [header, text, f"({took:.1f} s, exit {done.returncode})", ""]
        failed += done.returncode != 0
    (OUT / "run_all.txt").write_text("\n".join(transcript))
    print(f"transcript: {OUT / 'run_all.txt'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
