"""Memory of the stop-continue counts in a long-running engine.

One engine, one in-process stop hook that always asks to continue; ``--prompts`` prompts, each
firing one ``stop``, spread over sessions of ``--per-session`` prompts. With ``--end-sessions``
each session ends with ``session_end`` (the counts are pruned then); without, only the cap keeps
the map bounded. Prints RSS before and after, and the entries kept.

    .venv/bin/python -m bench.stop_state [--prompts 1000000] [--per-session 100] [--end-sessions]

Runs against any tree with the same public API (``PYTHONPATH=<old checkout>`` to compare).
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
import trio

from triohooks import HookEngine


async def run(prompts: int, per_session: int, end_sessions: bool) -> None:
    async def go_on(fields: Any) -> dict[str, Any]:
        return {"continue": True, "reason": "once more"}

    proc = psutil.Process()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        async with HookEngine.open(
            workspace=d, config_dir=d / "g", state_dir=d / "s", audit=False, watchdog=False
        ) as engine:
            engine.add_hook("stop", go_on)
            for i in range(1000):  # warm up allocators and caches
                await engine.stop(session_id="warm", prompt_id=f"w{i}")
            gc.collect()
            before = proc.memory_info().rss
            start = time.perf_counter()
            for i in range(prompts):
                session = f"s{i // per_session}"
                await engine.stop(session_id=session, prompt_id=f"p{i}")
                if end_sessions and i % per_session == per_session - 1:
                    await engine.session_end(session_id=session)
            took = time.perf_counter() - start
            gc.collect()
            after = proc.memory_info().rss
            kept = len(engine.stop_continues)
    mb = 1024 * 1024
    ended = "yes" if end_sessions else "no"
    print(f"prompts {prompts}, {per_session} per session, session_end {ended}")
    grew = (after - before) / mb
    print(f"RSS before {before / mb:.1f} MB, after {after / mb:.1f} MB (+{grew:.1f})")
    print(f"stop counts kept: {kept}; {prompts / took:.0f} stops/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=1_000_000)
    parser.add_argument("--per-session", type=int, default=100)
    parser.add_argument("--end-sessions", action="store_true")
    args = parser.parse_args()
    trio.run(run, args.prompts, args.per_session, args.end_sessions)


if __name__ == "__main__":
    main()
