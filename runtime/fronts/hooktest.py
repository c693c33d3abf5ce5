"""``triohooks test``: cases next to the config, run through the real engine (docs/hook-authors.md).

A case file is TOML: ``[[case]]`` tables, each an event (``event``, default ``pre_tool``) with
its payload (``tool`` + ``args``, ``prompt``, or any field in ``payload``) and what must come
out in ``expect`` (``decision``, ``reason``, ``args``, ``prompt``, ``context``, ``warning``,
``ran``). A case with ``agent = "claude"`` (``gemini``, ``codex``) is that agent's hook input
instead (``event`` in the agent's name, ``tool``/``args``/``prompt`` as its ``tool_name`` /
``tool_input`` / ``prompt``, any other field in ``input``), run through that agent's own
hooks as triohooks runs them, and ``expect.output`` is a part of the agent's JSON answer.

The hooks run for real (processes, http, guards), in one engine opened on the workspace as
configured (``--trust`` trusts its hooks for the run), with audit off and a
throw-away state directory. Output like pytest's: a dot per passing case, an ``F`` per
failing one, then each failure's expected and got; exit 0 when all pass, 1 otherwise;
``--junit-xml PATH`` for CI.
"""

from __future__ import annotations

import argparse
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import msgspec

from triohooks.config.events import UnknownEventError, canonical_event
from triohooks.config.paths import global_config_dir, workspace_config_files
from triohooks.config.suggest import did_you_mean

from .rehearsal import check_config, rehearsal_engine

#: The case file's name beside each hooks file.
CASE_FILE: Final = "hooks.test.toml"
CASE_KEYS: Final = frozenset(
    {"name", "event", "tool", "args", "prompt", "payload", "expect", "agent", "input"}
)
EXPECT_KEYS: Final = frozenset(
    {"decision", "reason", "args", "prompt", "context", "warning", "ran", "output"}
)
#: What an agent case may expect (its answer is the agent's JSON, not an Outcome).
AGENT_EXPECT_KEYS: Final = frozenset({"decision", "reason", "context", "warning", "ran", "output"})
#: A case's fields by dialect: (native field, the agent input's field).
_AGENT_FIELDS: Final = (("tool", "tool_name"), ("args", "tool_input"), ("prompt", "prompt"))
DECISIONS: Final = ("block", "allow")


class CaseError(Exception):
    """A case file that cannot be read, or a case that is not well formed."""


class Case(msgspec.Struct, kw_only=True):
    file: str
    index: int
    name: str
    event: str
    payload: dict[str, Any]
    expect: dict[str, Any]
    #: The agent whose dialect the case is in (its hook input, its hooks); None: native.
    agent: str | None = None

    @property
    def label(self) -> str:
        return f"{self.file}::{self.name}"


class Verdict(msgspec.Struct, kw_only=True):
    case: Case
    #: What did not match, one line each (empty: passed).
    failures: list[str]
    #: The case could not run (our error, a payload the engine refuses).
    error: str = ""
    duration_s: float = 0.0


def add_test_command(sub: Any) -> None:
    from .cli import scope_args

    p = sub.add_parser(
        "test", help="run the hook test cases (hooks.test.toml) through the real hooks"
    )
    p.add_argument("files", nargs="*", type=Path, metavar="FILE", help="case files (TOML)")
    scope_args(p)
    p.add_argument("--trust", action="store_true", help="trust the workspace's hooks for the run")
    p.add_argument(
        "--junit-xml",
        type=Path,
        default=None,
        metavar="PATH",
        help="also write the results as JUnit XML",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="print failures and the summary only")


def default_files(workspace: Path, config_dir: Path) -> list[Path]:
    """The case files found beside the hook files: the workspace's, then the global one."""
    found = []
    for path in (workspace_config_files(workspace)[0].with_name(CASE_FILE), config_dir / CASE_FILE):
        if path.is_file():
            found.append(path)
    return found


def read_cases(path: Path) -> list[Case]:
    """Every case of one file. Raises :class:`CaseError` naming the file, case and field."""
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CaseError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CaseError(f"{path}: not valid TOML: {exc}") from None
    unknown = sorted(set(doc) - {"case"})
    if unknown:
        hint = did_you_mean(unknown[0], ["case"])
        raise CaseError(f"{path}: {unknown[0]}: unknown top-level key{hint}; write [[case]] tables")
    tables = doc.get("case", [])
    if not isinstance(tables, list) or not tables:
        raise CaseError(f"{path}: no [[case]] tables")
    return [_case(path, i, t) for i, t in enumerate(tables)]


def _case(path: Path, index: int, raw: dict[str, Any]) -> Case:
    where = f"{path}: case[{index}]"
    for key in raw:
        if key not in CASE_KEYS:
            raise CaseError(f"{where}.{key}: unknown field{did_you_mean(key, CASE_KEYS)}")
    name = raw.get("name", f"case[{index}]")
    if not isinstance(name, str) or not name:
        raise CaseError(f"{where}.name: must be a non-empty string")
    if "agent" in raw:
        return _agent_case(path, index, name, raw)
    if "input" in raw:
        raise CaseError(f'{where}.input: only an agent case has one; add agent = "claude"')
    event_name = raw.get("event", "pre_tool")
    try:
        event = canonical_event(event_name)
    except UnknownEventError as exc:
        raise CaseError(f"{where}.event: {exc}") from None
    payload = raw.get("payload", {})
    if not isinstance(payload, dict):
        raise CaseError(f"{where}.payload: must be a table of the event's fields")
    payload = dict(payload)
    for key in ("tool", "args", "prompt"):
        if key in raw:
            payload[key] = raw[key]
    expect = _expect(where, raw, EXPECT_KEYS - {"output"})
    return Case(file=str(path), index=index, name=name, event=event, payload=payload, expect=expect)


def _agent_case(path: Path, index: int, name: str, raw: dict[str, Any]) -> Case:
    """A case in an agent's dialect: its hook input, built from the case's fields."""
    from triohooks.config.events import AGENT_EVENTS, EVENTS

    where = f"{path}: case[{index}]"
    agent = raw["agent"]
    if agent not in AGENT_EVENTS:
        hint = did_you_mean(str(agent), AGENT_EVENTS)
        raise CaseError(f"{where}.agent: {agent!r} is not an agent triohooks speaks{hint}")
    if "payload" in raw:
        raise CaseError(f"{where}.payload: an agent case gives its hook input in input")
    names = AGENT_EVENTS[agent]
    default = next(own for own, ours in names.items() if ours == "pre_tool")
    event = raw.get("event", default)
    if not isinstance(event, str) or not event:
        raise CaseError(f"{where}.event: must be the agent's event name, such as {default}")
    if event in EVENTS and event not in names:
        own = [o for o, ours in names.items() if ours == event]
        hint = f"; {agent} calls it {own[0]}" if own else ""
        raise CaseError(f"{where}.event: {event!r} is triohooks' name{hint}")
    body = raw.get("input", {})
    if not isinstance(body, dict):
        raise CaseError(f"{where}.input: must be a table of the hook input's fields")
    body = {**body, "hook_event_name": event}
    for ours, theirs in _AGENT_FIELDS:
        if ours in raw:
            body[theirs] = raw[ours]
    expect = _expect(where, raw, AGENT_EXPECT_KEYS)
    return Case(
        file=str(path),
        index=index,
        name=name,
        event=event,
        payload=body,
        expect=expect,
        agent=agent,
    )


def _expect(where: str, raw: dict[str, Any], allowed: frozenset[str]) -> dict[str, Any]:
    expect = raw.get("expect", {})
    if not isinstance(expect, dict) or not expect:
        raise CaseError(f"{where}.expect: say what must come out (decision, reason, ...)")
    for key, value in expect.items():
        if key in EXPECT_KEYS and key not in allowed:
            other = "an agent case" if "agent" in raw else "a triohooks case"
            raise CaseError(f"{where}.expect.{key}: not for {other} (it expects {sorted(allowed)})")
        if key not in EXPECT_KEYS:
            raise CaseError(f"{where}.expect.{key}: unknown field{did_you_mean(key, allowed)}")
        if key == "decision" and value not in DECISIONS:
            raise CaseError(f'{where}.expect.decision: must be "block" or "allow", not {value!r}')
        if key in ("reason", "prompt", "context", "warning") and not isinstance(value, str):
            raise CaseError(f"{where}.expect.{key}: must be a string")
        if key in ("args", "output") and not isinstance(value, dict):
            raise CaseError(f"{where}.expect.{key}: must be a table")
        if key == "ran" and (
            not isinstance(value, list) or not all(isinstance(v, str) for v in value)
        ):
            raise CaseError(f"{where}.expect.ran: must be a list of hook names")
    return expect


def _decision_failures(
    expect: dict[str, Any],
    *,
    blocked: bool,
    reason: str | None,
    warnings: list[str],
    ran: list[str],
) -> list[str]:
    """What of ``decision``, ``reason``, ``warning`` and ``ran`` an answer does not give (an
    Outcome's and an agent's answer alike), one line each."""
    out: list[str] = []
    if "decision" in expect:
        got = "block" if blocked else "allow"
        if got != expect["decision"]:
            why = f" ({reason})" if reason else ""
            out.append(f"decision: expected {expect['decision']}, got {got}{why}")
    if "reason" in expect and expect["reason"] not in (reason or ""):
        out.append(f"reason: expected to contain {expect['reason']!r}, got {reason!r}")
    if "warning" in expect and not any(expect["warning"] in w for w in warnings):
        out.append(f"warning: expected one containing {expect['warning']!r}, got {warnings!r}")
    if "ran" in expect and ran != expect["ran"]:
        out.append(f"ran: expected {expect['ran']!r}, got {ran!r}")
    return out


def compare(case: Case, outcome: Any) -> list[str]:
    """What of ``case.expect`` the Outcome does not give, one line each."""
    expect = case.expect
    out = _decision_failures(
        expect,
        blocked=outcome.blocked,
        reason=outcome.reason,
        warnings=outcome.warnings,
        ran=[r.hook for r in outcome.runs],
    )
    if "args" in expect and outcome.args != expect["args"]:
        out.append(f"args: expected {expect['args']!r}, got {outcome.args!r}")
    if "prompt" in expect and outcome.prompt != expect["prompt"]:
        out.append(f"prompt: expected {expect['prompt']!r}, got {outcome.prompt!r}")
    if "context" in expect and expect["context"] not in (outcome.additional_context or ""):
        out.append(
            f"context: expected to contain {expect['context']!r}, "
            f"got {outcome.additional_context!r}"
        )
    return out


def contains(expected: Any, got: Any) -> bool:
    """Whether ``got`` holds ``expected``: a table's keys with values that hold theirs; any
    other value equal."""
    if isinstance(expected, dict):
        return isinstance(got, dict) and all(
            k in got and contains(v, got[k]) for k, v in expected.items()
        )
    return bool(expected == got)


def _contexts(value: Any) -> Iterator[str]:
    """Every ``additionalContext`` string anywhere in an agent's answer."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "additionalContext" and isinstance(item, str):
                yield item
            else:
                yield from _contexts(item)


def compare_agent(case: Case, result: Any) -> list[str]:
    """What of an agent case's ``expect`` the agent's answer does not give, one line each."""
    expect, answer = case.expect, result.answer
    out = _decision_failures(
        expect,
        blocked=answer.blocked,
        reason=answer.reason,
        warnings=answer.warnings,
        ran=[r.hook for r in result.runs],
    )
    if "context" in expect:
        contexts = list(_contexts(answer.output))
        if not any(expect["context"] in c for c in contexts):
            out.append(f"context: expected to contain {expect['context']!r}, got {contexts!r}")
    if "output" in expect and not contains(expect["output"], answer.output):
        out.append(f"output: expected to hold {expect['output']!r}, got {answer.output!r}")
    return out


async def _run_agent_case(engine: Any, case: Case, common: dict[str, Any]) -> Verdict:
    from triohooks.agents.runner import AgentPayloadError

    assert case.agent is not None
    body = msgspec.json.encode({**common, **case.payload})
    try:
        result = await engine.agent_hook(case.agent, body)
    except AgentPayloadError as exc:
        return Verdict(case=case, failures=[], error=f"input: {exc}")
    return Verdict(case=case, failures=compare_agent(case, result))


async def run_cases(cases: list[Case], args: argparse.Namespace, workspace: Path) -> list[Verdict]:
    import trio

    verdicts: list[Verdict] = []
    async with rehearsal_engine(args, workspace) as engine:
        for n, case in enumerate(cases):
            common = {"session_id": f"triohooks-test-{n}", "cwd": str(workspace)}
            started = time.perf_counter()
            with trio.fail_after(3600):
                verdict = await _run_case(engine, case, common)
            verdict.duration_s = time.perf_counter() - started
            verdicts.append(verdict)
            if not args.quiet:
                mark = "." if not verdicts[-1].failures else "F"
                print(mark, end="", flush=True)
    return verdicts


async def _run_case(engine: Any, case: Case, common: dict[str, Any]) -> Verdict:
    from triohooks.config.events import PayloadError, event_from_payload

    if case.agent is not None:
        return await _run_agent_case(engine, case, common)
    try:
        ev = event_from_payload(case.event, {**common, **case.payload})
    except PayloadError as exc:
        return Verdict(case=case, failures=[], error=f"payload: {exc}")
    return Verdict(case=case, failures=compare(case, await engine.fire(case.event, ev)))


def cmd_test(args: argparse.Namespace) -> int:
    import trio

    workspace = (args.workspace or Path.cwd()).resolve()
    config_dir = args.config_dir or global_config_dir()
    files = list(args.files) or default_files(workspace, config_dir)
    if not files:
        print(
            f"triohooks test: no case files; write [[case]] tables in "
            f"{workspace_config_files(workspace)[0].with_name(CASE_FILE)} or "
            f"{config_dir / CASE_FILE}, or name files",
            file=sys.stderr,
        )
        return 1
    try:
        cases = [c for path in files for c in read_cases(path)]
    except CaseError as exc:
        print(f"triohooks test: {exc}", file=sys.stderr)
        return 1
    check_config(args, workspace)
    if not args.quiet:
        print(f"{len(cases)} case(s) from {', '.join(str(f) for f in files)}")
    started = time.perf_counter()
    verdicts = trio.run(run_cases, cases, args, workspace)
    took = time.perf_counter() - started
    if not args.quiet:
        print()
    failed = [v for v in verdicts if v.failures or v.error]
    for verdict in failed:
        print(f"\nFAILED {verdict.case.label}")
        for line in verdict.failures or [verdict.error]:
            print(f"    {line}")
    passed = len(verdicts) - len(failed)
    summary = f"{passed} passed" + (f", {len(failed)} failed" if failed else "")
    print(f"\n{summary} in {took:.2f}s")
    if args.junit_xml is not None:
        write_junit(args.junit_xml, verdicts, took)
    return 1 if failed else 0


def write_junit(path: Path, verdicts: list[Verdict], took: float) -> None:
    """The results as JUnit XML: one testsuite, a testcase per case (classname: its file)."""
    import xml.etree.ElementTree as ET

    failures = sum(1 for v in verdicts if v.failures)
    errors = sum(1 for v in verdicts if v.error)
    suite = ET.Element(
        "testsuite",
        name="triohooks",
        tests=str(len(verdicts)),
        failures=str(failures),
        errors=str(errors),
        time=f"{took:.3f}",
    )
    for verdict in verdicts:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=verdict.case.file,
            name=verdict.case.name,
            time=f"{verdict.duration_s:.3f}",
        )
        if verdict.error:
            ET.SubElement(case, "error", message=verdict.error).text = verdict.error
        elif verdict.failures:
            text = "\n".join(verdict.failures)
            ET.SubElement(case, "failure", message=verdict.failures[0]).text = text
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)
