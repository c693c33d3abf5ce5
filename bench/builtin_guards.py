"""A built-in guard vs the same rule as a one-shot bash hook and as an ``if`` filter, through
the engine (``engine.pre_tool``), p50/p99 per call, interleaved in one run.

The rule: block ``git push`` to ``main`` (and force pushes).

- ``builtin``: ``builtin = "protected_push"`` (in process, no spawn);
- ``bash hook``: ``command = "<a grep over the event JSON>"``, one ``bash`` per call (what a
  user writes by hand; it misses ``git -C x push`` and the rest the guard reads);
- ``if filter``: ``if = "shell(git push*)"`` with ``command = "exit 2"``: the hook spawns only
  for a push (so an ``ls`` costs no spawn, a push one).

Two calls each: one the rule blocks (``git push origin main``), one it lets through (``ls``).

Then the policy ``triohooks init`` writes (the five guards, uncertain blocks), against the
floor: the same engine with no hook, side by side in one run:

- p50/p99 per call, through the engine and the five checks alone, over the everyday
  commands of the should-go-on table (tests/guard_tables.py), each call's text new to the
  engine (a comment numbers it: no cache of a reading answers it), and over a 200-character
  pipeline, new each time as well;
- the false blocks: every should-go-on row, in each agent's tool shape, through the policy
  (goal 0);
- ``approve_read_only`` (opt-in): the share of the should-go-on table it approves (the agent's
  allow: no permission prompt), of all its rows and of its shell calls, and its own cost per
  everyday call (p50/p99, each text new).

Figures only, no assertions. Run: ``python -m bench.builtin_guards [-n 300]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

from triohooks.engine.hook_engine import HookEngine

CONFIGS = {
    "builtin": '[[hooks.pre_tool]]\nbuiltin = "protected_push"\n',
    "bash hook": (
        "[[hooks.pre_tool]]\n"
        "command = '''grep -Eq '\"git push( -f| --force)?( origin)? main' && exit 2; exit 0'''\n"
    ),
    "if filter": '[[hooks.pre_tool]]\nif = "shell(git push*)"\ncommand = "exit 2"\n',
}
CALLS = {
    "git push origin main (blocked)": {"command": "git push origin main"},
    "ls (let through)": {"command": "ls -la"},
}


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        engines: dict[str, Any] = {}
        async with trio.open_nursery():
            from contextlib import AsyncExitStack

            async with AsyncExitStack() as stack:
                for label, text in CONFIGS.items():
                    root = Path(tmp) / label.replace(" ", "_")
                    (root / "config").mkdir(parents=True)
                    (root / "ws").mkdir()
                    (root / "config/hooks.toml").write_text(text)
                    engines[label] = await stack.enter_async_context(
                        HookEngine.open(
                            workspace=root / "ws",
                            config_dir=root / "config",
                            state_dir=root / "state",
                            audit=False,
                        )
                    )
                samples: dict[tuple[str, str], list[float]] = {
                    (c, e): [] for c in CALLS for e in engines
                }
                for i in range(n + 10):
                    for call, args in CALLS.items():
                        for label, engine in engines.items():
                            t0 = time.perf_counter()
                            outcome = await engine.pre_tool("Bash", args)
                            took = (time.perf_counter() - t0) * 1e6
                            assert outcome.blocked == ("main" in call), (label, call, outcome)
                            if i >= 10:
                                samples[(call, label)].append(took)
    print(f"pre_tool through the engine, n={n} per case, interleaved (µs)")
    print(f"{'call':34}{'hook':12}{'p50':>10}{'p99':>10}")
    for call in CALLS:
        base = percentile(samples[(call, "builtin")], 0.5)
        for label in engines:
            s = samples[(call, label)]
            p50 = percentile(s, 0.5)
            ratio = "" if label == "builtin" else f"  ({p50 / base:.0f}x the builtin)"
            print(f"{call:34}{label:12}{p50:10.1f}{percentile(s, 0.99):10.1f}{ratio}")


#: A 200-character pipeline an agent might send (every guard reads all of it).
PIPELINE = (
    "git log --oneline -n 50 | grep -v Merge | awk '{print $1}' | xargs -n1 git show --stat "
    "| grep -E '^ [a-z]' | sort | uniq -c | sort -rn | head -20 > /tmp/stats.txt && cat "
    "/tmp/stats.txt | wc -l"
)


async def five_guards(n: int) -> None:
    """The init policy against the floor, and the false blocks on the go-on table."""
    import os

    from tests.guard_tables import GO_ON_ROWS, SHAPES
    from tests.test_guard_tables import Layout, ask
    from triohooks.fronts.init_cli import STARTER

    layout = Layout()
    home = os.environ.get("HOME")
    os.environ["HOME"] = str(layout.home)
    try:
        everyday = [
            layout.subst(r.args["command"])
            for r in GO_ON_ROWS
            if not SHAPES[r.shape].agent and not r.cwd and isinstance(r.args.get("command"), str)
        ]
        from contextlib import AsyncExitStack

        async with AsyncExitStack() as stack:
            engines: dict[str, HookEngine] = {}
            for label, text in (("init policy", STARTER), ("no hook (floor)", "")):
                config = layout.root / f"bench-{len(engines)}"
                config.mkdir()
                (config / "hooks.toml").write_text(text)
                engines[label] = await stack.enter_async_context(
                    HookEngine.open(
                        workspace=layout.ws,
                        config_dir=config,
                        state_dir=layout.root / f"bench-state-{len(engines)}",
                        audit=False,
                    )
                )
            samples: dict[tuple[str, str], list[float]] = {}
            cwd = str(layout.ws)
            for i in range(n):
                for kind, text in (
                    ("everyday", everyday[i % len(everyday)]),
                    ("pipeline", PIPELINE),
                ):
                    command = f"{text} # {i}"  # new to every cache
                    for label, engine in engines.items():
                        t0 = time.perf_counter()
                        outcome = await engine.pre_tool("Bash", {"command": command}, cwd=cwd)
                        took = (time.perf_counter() - t0) * 1e6
                        assert not outcome.blocked, (command, outcome.reason)
                        samples.setdefault((kind, label), []).append(took)
            # The guards alone, as the engine's guard runner calls them: one Call each, the
            # first reading the call, the others sharing its reading.
            from triohooks.match.guards import GUARDS, Call, build

            checks = [build(name, {})[0] for name, spec in GUARDS.items() if not spec.approves]
            home_dir = str(layout.home)
            for i in range(n):
                for kind, text in (
                    ("everyday", everyday[i % len(everyday)]),
                    ("pipeline", PIPELINE),
                ):
                    args = {"command": f"{text} # alone {i}"}
                    t0 = time.perf_counter()
                    for check in checks:
                        call = Call(tool="Bash", args=args, cwd=cwd, workspace=cwd, home=home_dir)
                        verdict = check(call)
                        assert not verdict.block, (args, verdict)
                    took = (time.perf_counter() - t0) * 1e6
                    samples.setdefault((kind, "alone"), []).append(took)
            approve = build("approve_read_only", {})[0]
            for i in range(n):
                args = {"command": f"{everyday[i % len(everyday)]} # approve {i}"}
                t0 = time.perf_counter()
                approve(Call(tool="Bash", args=args, cwd=cwd, workspace=cwd, home=home_dir))
                samples.setdefault(("everyday", "approve"), []).append(
                    (time.perf_counter() - t0) * 1e6
                )
            policy = engines["init policy"]
            blocked = []
            for row in GO_ON_ROWS:
                answer = await ask(policy, row, layout)
                if answer.blocked:
                    blocked.append((row.shape, row.args, answer.reason))
            from tests.test_approve_read_only import approves_row

            shell = [r for r in GO_ON_ROWS if SHAPES[r.shape].command_key]
            approved = [r for r in GO_ON_ROWS if approves_row(r, layout)]
    finally:
        if home is not None:
            os.environ["HOME"] = home
        layout.remove()
    print()
    print(
        f"the init policy (five guards) vs no hook, pre_tool, n={n} per case, each call's text "
        f"new (µs); everyday: {len(everyday)} commands of the go-on table; pipeline: "
        f"{len(PIPELINE)} characters"
    )
    print(
        f"{'call':12}{'policy p50':>12}{'p99':>10}{'floor p50':>12}{'policy-floor':>14}"
        f"{'guards alone p50':>18}{'p99':>10}"
    )
    for kind in ("everyday", "pipeline"):
        mine, floor = samples[(kind, "init policy")], samples[(kind, "no hook (floor)")]
        alone = samples[(kind, "alone")]
        p50, base = percentile(mine, 0.5), percentile(floor, 0.5)
        print(
            f"{kind:12}{p50:12.1f}{percentile(mine, 0.99):10.1f}{base:12.1f}{p50 - base:14.1f}"
            f"{percentile(alone, 0.5):18.1f}{percentile(alone, 0.99):10.1f}"
        )
    print(
        "(guards alone: the five checks called in process as the guard runner calls them, "
        "the first reading the call; policy-floor adds the engine's per-hook path)"
    )
    print(f"false blocks on the go-on table: {len(blocked)} of {len(GO_ON_ROWS)} rows")
    for shape, args, reason in blocked:
        print(f"  {shape} {args}: {reason}")
    share, of_shell = len(approved) / len(GO_ON_ROWS), len(approved) / len(shell)
    print(
        f"approve_read_only approves {len(approved)} of the {len(GO_ON_ROWS)} go-on rows "
        f"({share:.0%}; {of_shell:.0%} of its {len(shell)} shell calls); alone, per everyday "
        f"call: p50 {percentile(samples[('everyday', 'approve')], 0.5):.1f} µs, p99 "
        f"{percentile(samples[('everyday', 'approve')], 0.99):.1f} µs"
    )


async def run(n: int) -> None:
    await main(n)
    await five_guards(n)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=300)
    trio.run(run, parser.parse_args().n)
