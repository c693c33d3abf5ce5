"""Property tests: no config file, however broken, makes loading raise.

Thousands of random and mutated files of both dialects go through the TOML parser, the JSON
parser, the whole table builder (real files in a temporary directory, every scope) and
``triohooks validate``. Each must yield a well-formed table or clear, located problems: never an
uncaught exception, never a traceback. Strict (``error``) problems come only from TOML files.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from triohooks.config import json_dialect as _json_dialect
from triohooks.config import toml_dialect as _toml_dialect
from triohooks.config.events import EVENTS, JSON_ALIASES
from triohooks.config.json_dialect import (
    MAX_COMMAND_BYTES,
    MAX_ENV_VARS,
    MAX_HOOKS_PER_FILE,
    parse_json_bytes,
)
from triohooks.config.model import (
    JSON_MAX_TIMEOUT_MS,
    JSON_MIN_TIMEOUT_MS,
    ArgsHandler,
    CommandHandler,
    ConfigProblem,
    GuardHandler,
    Hook,
    HookTable,
    HttpHandler,
    PromptHandler,
    index_by_event,
)
from triohooks.config.table import load_table
from triohooks.config.toml_dialect import MAX_TIMEOUT_S, parse_toml_text
from triohooks.fronts.cli import main as cli_main
from triohooks.match.globs import validate_go_glob
from triohooks.match.guards import GUARD_EVENTS, GUARDS
from triohooks.match.matchers import JsonMatcher

ROOT = Path(__file__).resolve().parent.parent

#: ``TRIOHOOKS_FUZZ_SCALE=20 pytest tests/test_config_fuzz.py`` hunts longer, with fresh random
#: examples each run. Up to 1 the examples are fixed (CI determinism): ``make test`` runs 0.4 of
#: them (a few seconds), ``make long`` all of them.
SCALE = float(os.environ.get("TRIOHOOKS_FUZZ_SCALE", "0.4"))
FUZZ = settings(
    derandomize=SCALE <= 1,  # CI determinism: the same examples every run
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def fuzz(examples: int) -> settings:
    return settings(FUZZ, max_examples=max(1, int(examples * SCALE)))


# -- seeds: valid files of both dialects ------------------------------------------------------

TOML_SEEDS: tuple[str, ...] = (
    (ROOT / "examples" / "hooks.toml").read_text(),
    # The full-featured file of tests/test_toml_dialect.py, plus the [judge] table.
    """
[judge]
base_url = "http://127.0.0.1:9/v1"
model = "small"

[[hooks.pre_tool]]
id = "check"
match = "bash"
if = "shell(git push)"
command = "./check.sh"
timeout_seconds = 10
fail_closed = true

[[hooks.pre_tool]]
match = "mcp__*"
if = "write(src/**/*.py)"
args = ["python3", "x.py"]

[[hooks.post_tool]]
type = "http"
url = "https://example.test/hook"
headers = { Authorization = "Bearer $TOKEN" }
allowed_env_vars = ["TOKEN"]

[[hooks.prompt_submit]]
type = "prompt"
prompt = "Block prompts asking for secrets"
model = "small"

[[hooks.stop]]
command = "echo done"
timeout_seconds = 0.5
""",
)
JSON_SEEDS: tuple[bytes, ...] = (
    (ROOT / "examples" / "hooks.json").read_bytes(),
    json.dumps(
        {
            "hooks": [
                {
                    "id": "block-git",
                    "event": "pre_tool_use",
                    "matcher": {
                        "tool_name": "bash",
                        "args_jsonpath": "$.command",
                        "match_regex": "(^|[;&|()[:space:]])git([[:space:]]|$)",
                    },
                    "executor": {"type": "bash", "command": "exit 0", "env": {"A": "1"}},
                    "timeout_ms": 1000,
                    "on_error": "block",
                    "description": "Block bash commands that invoke git",
                },
                {
                    "event": "post_tool_use",
                    "matcher": {"tool_name_glob": "edit|write_*", "deny_regex": "^$"},
                    "executor": {"type": "bash", "command": "true"},
                },
                {"event": "turn_end", "executor": {"type": "bash", "command": "echo bye"}},
            ],
            "disabled": ["other"],
            "disabled_contributions": ["cap:hook"],
        },
        indent=2,
    ).encode(),
)

# -- strategies -------------------------------------------------------------------------------

# The real field names (the generators mix them with unknown ones and wrong value types).
TOML_FIELDS = tuple(sorted(_toml_dialect._FIELDS))
JSON_HOOK_KEYS = tuple(sorted(_json_dialect._HOOK_KEYS))
MATCHER_KEYS = JsonMatcher.__struct_fields__

# Text a file could hold (no lone surrogates: a file read as UTF-8 cannot contain them).
text = st.text(st.characters(codec="utf-8"), max_size=20)
short_text = st.text(st.characters(codec="utf-8"), max_size=6)
scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(),
    text,
)


def _containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(inner, max_size=4) | st.dictionaries(short_text, inner, max_size=4)


json_value = st.recursive(scalar, _containers, max_leaves=8)
toml_value = st.recursive(scalar.filter(lambda v: v is not None), _containers, max_leaves=8)

globs = st.one_of(
    st.sampled_from(["bash", "*", "mcp__*", "read_*", "[a-c]*", "[^x]", "a\\*", "", "[", "a\\"]),
    st.text(alphabet="ab*?[]^-\\/", max_size=8),
)
if_rules = st.one_of(
    st.sampled_from(
        [
            "shell(git push)",
            "shell(git push *)",
            "shell(re:git.*)",
            "shell(re:(()",
            "read(.env)",
            "write(src/**/*.py)",
            "delete([a)",
            "web(*.example.com)",
            "skill(x*)",
            "agent(reviewer)",
            "write_file",
            "shell",
            "shell(",
            "nope(x)",
            "shell('unterminated)",
        ]
    ),
    st.builds(
        "{}({})".format,
        st.sampled_from(["shell", "read", "write", "delete", "web", "skill", "agent", "x"]),
        st.text(alphabet="ab *?[]()^'\"re:.\\/-", max_size=10),
    ),
)
event_names = st.one_of(
    st.sampled_from(sorted({*EVENTS, *JSON_ALIASES})),
    short_text,
)
numbers = st.one_of(
    st.integers(min_value=-5, max_value=100_000),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 0.001, 99, 100, 30000, 30001, 3600, 3601]),
)

#: A built-in guard's parameters: real names and values, and wrong ones.
guard_params = st.dictionaries(
    st.sampled_from(["on_uncertain", "protect", "branches", "force", "names", "allow", "x"]),
    st.one_of(
        st.sampled_from(["block", "warn", "allow", "off", "maybe"]),
        st.lists(st.one_of(short_text, st.integers()), max_size=3),
    ),
    max_size=3,
)

TOML_RIGHT: dict[str, st.SearchStrategy[Any]] = {
    "id": st.one_of(st.sampled_from(["a", "no-push", "x.y:z", "-bad"]), short_text),
    "description": text,
    "match": globs,
    "if": if_rules,
    "type": st.sampled_from(["command", "http", "prompt", "python", ""]),
    "command": st.one_of(st.sampled_from(["true", "echo hi", "", "  ", "\n"]), text),
    "args": st.lists(st.one_of(st.sampled_from(["python3", "", " "]), text), max_size=3),
    "url": st.one_of(
        st.sampled_from(["https://example.test/h", "http://127.0.0.1:1", "ftp://x", "https://"]),
        text,
    ),
    "headers": st.dictionaries(short_text, st.one_of(text, st.integers()), max_size=3),
    "allowed_env_vars": st.lists(st.sampled_from(["TOKEN", "1BAD", "A_B", ""]), max_size=3),
    "prompt": st.one_of(st.sampled_from(["judge it", ""]), text),
    "model": st.one_of(st.sampled_from(["small", ""]), text),
    "timeout_seconds": numbers,
    "fail_closed": st.one_of(st.booleans(), st.sampled_from(["true", 1])),
    "mode": st.sampled_from(["enforce", "observe", "Observe", "shadow", ""]),
    "worker": st.one_of(st.booleans(), st.sampled_from(["true", 1])),
    "worker_pool": st.one_of(st.integers(-1, 20), st.sampled_from([True, 2.5, "2"])),
    "builtin": st.one_of(st.sampled_from([*sorted(GUARDS), "destructive", ""]), text),
    "params": guard_params,
}


@st.composite
def toml_hook_tables(draw: st.DrawFn) -> dict[str, Any]:
    """One ``[[hooks.<event>]]`` table: real field names, values of the right and wrong types."""
    keys = draw(st.lists(st.sampled_from(TOML_FIELDS), max_size=6, unique=True))
    table: dict[str, Any] = {}
    for key in keys:
        wrong = draw(st.integers(0, 4)) == 0
        table[key] = draw(toml_value if wrong else TOML_RIGHT[key])
    if draw(st.integers(0, 7)) == 0:
        table[draw(short_text)] = draw(toml_value)  # an unknown (or duplicate-named) field
    return table


@st.composite
def clean_toml_hook_tables(draw: st.DrawFn) -> dict[str, Any]:
    """A table a careful user would write (it may still meet an event it does not suit)."""
    kind = draw(st.sampled_from(["command", "args", "http", "prompt"]))
    table: dict[str, Any] = {}
    if kind == "command":
        table["command"] = draw(st.sampled_from(["true", "echo hi", "./check.sh"]))
    elif kind == "args":
        table["args"] = draw(st.sampled_from([["python3", "x.py"], ["true"]]))
    elif kind == "http":
        table |= {"type": "http", "url": "https://example.test/h"}
        if draw(st.booleans()):
            table |= {"headers": {"Authorization": "Bearer $T"}, "allowed_env_vars": ["T"]}
    else:
        table |= {"type": "prompt", "prompt": "judge it"}
        if draw(st.booleans()):
            table["model"] = "small"
    optional: dict[str, st.SearchStrategy[Any]] = {
        "id": st.from_regex(r"[a-z][a-z0-9_.:-]{0,8}", fullmatch=True),
        "match": st.sampled_from(["bash", "*", "mcp__*", "[a-c]*"]),
        "if": st.sampled_from(["shell(git push)", "read(.env)", "web(*.example.com)"]),
        "timeout_seconds": st.sampled_from([0.5, 5, 30]),
        "fail_closed": st.booleans(),
        "description": text,
    }
    if kind in ("command", "args") and draw(st.booleans()):
        table["worker"] = True
    for key in draw(st.lists(st.sampled_from(sorted(optional)), max_size=3, unique=True)):
        table[key] = draw(optional[key])
    return table


@st.composite
def toml_documents(draw: st.DrawFn) -> dict[str, Any]:
    if draw(st.booleans()):
        events = st.lists(st.sampled_from(sorted(EVENTS)), max_size=3, unique=True)
        tables = st.lists(clean_toml_hook_tables(), min_size=1, max_size=3)
        return {"hooks": {e: draw(tables) for e in draw(events)}}
    hooks: dict[str, Any] = {}
    for event in draw(st.lists(event_names, max_size=4, unique=True)):
        if draw(st.integers(0, 9)) == 0:
            hooks[event] = draw(toml_value)  # not an array of tables
        else:
            hooks[event] = draw(st.lists(toml_hook_tables(), max_size=4))
    doc: dict[str, Any] = {}
    if draw(st.integers(0, 9)) == 0:
        doc["hooks"] = draw(toml_value)
    else:
        doc["hooks"] = hooks
    if draw(st.booleans()):
        doc["judge"] = draw(
            st.dictionaries(
                st.sampled_from(["base_url", "model", "api_key_env", "other"]),
                toml_value,
                max_size=3,
            )
            | toml_value
        )
    if draw(st.integers(0, 5)) == 0:
        doc[draw(short_text)] = draw(toml_value)
    return doc


def _toml_key(key: str) -> str:
    return _toml_string(key)


def _toml_string(value: str) -> str:
    out = []
    for ch in value:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _toml_inline(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_inline(v) for v in value) + "]"
    assert isinstance(value, dict)
    return "{" + ", ".join(f"{_toml_key(k)} = {_toml_inline(v)}" for k, v in value.items()) + "}"


def render_toml(doc: dict[str, Any]) -> str:
    """Write ``doc`` as TOML, hooks as ``[[hooks."<event>"]]`` tables like a user would."""
    lines = [f"{_toml_key(k)} = {_toml_inline(v)}" for k, v in doc.items() if k != "hooks"]
    hooks = doc.get("hooks")
    if not isinstance(hooks, dict):
        if "hooks" in doc:
            lines.append(f"hooks = {_toml_inline(hooks)}")
        return "\n".join(lines) + "\n"
    arrays = {
        k: v
        for k, v in hooks.items()
        if isinstance(v, list) and v and all(isinstance(t, dict) for t in v)
    }
    lines.append("[hooks]")
    lines += [f"{_toml_key(k)} = {_toml_inline(v)}" for k, v in hooks.items() if k not in arrays]
    for event, tables in arrays.items():
        for table in tables:
            lines.append(f"\n[[hooks.{_toml_key(event)}]]")
            lines += [f"{_toml_key(k)} = {_toml_inline(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


JSON_RIGHT: dict[str, st.SearchStrategy[Any]] = {
    "id": st.one_of(st.sampled_from(["a", "b", "block-git", "pre_tool_use_0", "", " "]), text),
    "event": event_names,
    "timeout_ms": numbers,
    "on_error": st.sampled_from(["warn", "block", "allow", "ignore"]),
    "mode": st.sampled_from(["enforce", "observe"]),
    "description": text,
}
MATCHER_RIGHT: dict[str, st.SearchStrategy[Any]] = {
    "tool_name": st.one_of(st.sampled_from(["bash", "", "read_file"]), short_text),
    "tool_name_glob": st.one_of(
        st.sampled_from(["a|b", "mcp_*", "*", "a||b", "a*b", "[x]"]),
        st.text(alphabet="ab|*?[]", max_size=8),
    ),
    "args_jsonpath": st.one_of(
        st.sampled_from(["$", "$.command", "$.a.b", "$..a", "a", "$.a[0]", "$.*"]),
        st.text(alphabet="$.ab[]*", max_size=8),
    ),
    "match_regex": st.one_of(
        st.sampled_from(["git", "[[:space:]]", "(", "a{1001}", "(?P<n>x)", "\\C", "(?=x)"]),
        text,
    ),
    "deny_regex": st.one_of(st.sampled_from(["^$", ")"]), text),
}


@st.composite
def json_matchers(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 9)) == 0:
        return draw(json_value)
    keys = draw(st.lists(st.sampled_from(MATCHER_KEYS), max_size=3, unique=True))
    out = {k: draw(json_value if draw(st.integers(0, 5)) == 0 else MATCHER_RIGHT[k]) for k in keys}
    if draw(st.integers(0, 9)) == 0:
        out[draw(short_text)] = draw(json_value)
    return out


@st.composite
def json_executors(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 9)) == 0:
        return draw(json_value)
    if draw(st.integers(0, 5)) == 0:
        guard: dict[str, Any] = {"type": "builtin", "name": draw(TOML_RIGHT["builtin"])}
        if draw(st.booleans()):
            guard["params"] = draw(st.one_of(guard_params, json_value))
        return guard
    out: dict[str, Any] = {
        "type": draw(st.sampled_from(["bash", "bash", "python", None])),
        "command": draw(st.one_of(st.sampled_from(["true", "", " "]), text, json_value)),
    }
    if draw(st.booleans()):
        out["env"] = draw(
            st.dictionaries(
                st.one_of(st.sampled_from(["A", "1X", "B_2", ""]), short_text),
                st.one_of(short_text, json_value),
                max_size=4,
            )
            | json_value
        )
    if draw(st.integers(0, 3)) == 0:
        out["worker"] = draw(st.one_of(st.booleans(), json_value))
    if draw(st.integers(0, 5)) == 0:
        out["worker_pool"] = draw(st.one_of(st.integers(-1, 20), json_value))
    if draw(st.integers(0, 9)) == 0:
        out[draw(short_text)] = draw(json_value)
    return out


@st.composite
def json_hook_specs(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 19)) == 0:
        return draw(json_value)
    if draw(st.integers(0, 4)) == 0:  # an entry a careful user would write
        clean: dict[str, Any] = {
            "event": draw(st.sampled_from(sorted(JSON_ALIASES))),
            "executor": {"type": "bash", "command": draw(st.sampled_from(["true", "./c.sh"]))},
        }
        optional: dict[str, st.SearchStrategy[Any]] = {
            "mode": st.sampled_from(["enforce", "observe"]),
            "on_error": st.sampled_from(["warn", "block", "allow"]),
            "timeout_ms": st.sampled_from([100, 5000, 30000]),
        }
        for key in draw(st.lists(st.sampled_from(sorted(optional)), max_size=2, unique=True)):
            clean[key] = draw(optional[key])
        return clean
    keys = draw(st.lists(st.sampled_from(JSON_HOOK_KEYS), max_size=7, unique=True))
    spec: dict[str, Any] = {"event": draw(event_names)}
    for key in keys:
        if key == "matcher":
            spec[key] = draw(json_matchers())
        elif key == "executor":
            spec[key] = draw(json_executors())
        else:
            wrong = draw(st.integers(0, 5)) == 0
            spec[key] = draw(json_value if wrong else JSON_RIGHT[key])
    if draw(st.integers(0, 3)) > 0 and "executor" not in spec:
        spec["executor"] = {"type": "bash", "command": draw(text) or "true"}
    if draw(st.integers(0, 9)) == 0:
        spec[draw(short_text)] = draw(json_value)
    return spec


@st.composite
def json_documents(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 19)) == 0:
        return draw(json_value)
    doc: dict[str, Any] = {"hooks": draw(st.lists(json_hook_specs(), max_size=5))}
    for key in ("disabled", "disabled_contributions"):
        if draw(st.booleans()):
            doc[key] = draw(
                st.lists(st.sampled_from(["a", "b", "user:a"]), max_size=3) | json_value
            )
    if draw(st.integers(0, 9)) == 0:
        doc[draw(short_text)] = draw(json_value)
    return doc


def encode_json(doc: Any) -> bytes:
    # NaN/Infinity are not JSON; a float that cannot be written becomes null.
    return json.dumps(doc, allow_nan=True).replace("NaN", "null").encode()


@st.composite
def mutated(draw: st.DrawFn, seed: bytes) -> bytes:
    """``seed`` after a few byte flips, truncations, deletions, duplicated lines, insertions."""
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "truncate", "delete", "dup_line", "insert"]))
        n = len(data)
        if op == "flip" and n:
            i = draw(st.integers(0, n - 1))
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "truncate":
            del data[draw(st.integers(0, n)) :]
        elif op == "delete" and n:
            i = draw(st.integers(0, n - 1))
            del data[i : i + draw(st.integers(1, 20))]
        elif op == "dup_line":
            lines = bytes(data).splitlines(keepends=True)
            if lines:
                i = draw(st.integers(0, len(lines) - 1))
                lines.insert(i, lines[i])
                data = bytearray(b"".join(lines))
        else:
            i = draw(st.integers(0, n))
            data[i:i] = draw(
                st.binary(max_size=8)
                | st.sampled_from([b'"', b"[", b"]", b"{", b"}", b",", b"=", b"\n", b"\\"])
            )
    return bytes(data)


def _swap_in_tree(draw: st.DrawFn, node: Any) -> Any:
    """Replace one random node of a JSON tree (possibly the root) with a random value, delete one
    key, or add an unknown one."""
    if not isinstance(node, (dict, list)) or not node or draw(st.integers(0, 4)) == 0:
        return draw(json_value)
    if isinstance(node, list):
        i = draw(st.integers(0, len(node) - 1))
        return [*node[:i], _swap_in_tree(draw, node[i]), *node[i + 1 :]]
    key = draw(st.sampled_from(sorted(node)))
    out = dict(node)
    action = draw(st.integers(0, 5))
    if action == 0:
        del out[key]
    elif action == 1:
        out[draw(short_text)] = draw(json_value)
    else:
        out[key] = _swap_in_tree(draw, node[key])
    return out


@st.composite
def type_swapped_json(draw: st.DrawFn) -> bytes:
    tree = json.loads(draw(st.sampled_from(JSON_SEEDS)))
    for _ in range(draw(st.integers(1, 3))):
        tree = _swap_in_tree(draw, tree)
    return encode_json(tree)


toml_files = st.one_of(
    st.builds(render_toml, toml_documents()),
    st.sampled_from(TOML_SEEDS)
    .map(str.encode)
    .flatmap(mutated)
    .map(lambda b: b.decode("utf-8", "replace")),
    st.sampled_from(TOML_SEEDS),
)
json_files = st.one_of(
    st.builds(encode_json, json_documents()),
    st.sampled_from(JSON_SEEDS).flatmap(mutated),
    type_swapped_json(),
    st.sampled_from(JSON_SEEDS),
)

# -- the properties ---------------------------------------------------------------------------


def check_problems(
    problems: list[ConfigProblem] | tuple[ConfigProblem, ...], untrusted: str | None = None
) -> None:
    """``untrusted``: the workspace root when its hooks are not trusted (their TOML problems
    are then warnings, never a startup error: they must not stop the global hooks)."""
    for p in problems:
        assert isinstance(p.message, str) and p.message.strip(), p
        assert p.file, p
        assert str(p).startswith(f"{p.file}: "), p
        # One readable line: user-written keys cannot break or blank the location.
        assert str(p).isprintable(), p
        if p.index is not None or p.field is not None:
            assert str(p).count(": ") >= 2, p
        demoted = untrusted is not None and p.file.startswith(untrusted + os.sep)
        strict = p.file.endswith(".toml") and not demoted
        assert p.severity == ("error" if strict else "warning"), p


def check_hook(hook: Hook) -> None:
    assert hook.event in EVENTS, hook
    assert hook.id and hook.name, hook
    assert hook.mode in ("enforce", "observe"), hook
    assert math.isfinite(hook.timeout_s) and hook.timeout_s > 0, hook
    h = hook.handler
    if isinstance(h, CommandHandler):
        assert h.command.strip(), hook
    elif isinstance(h, ArgsHandler):
        assert h.args and h.args[0].strip(), hook
    elif isinstance(h, HttpHandler):
        assert h.url.lower().startswith(("http://", "https://")), hook
    elif isinstance(h, GuardHandler):
        assert h.name in GUARDS and hook.event in GUARD_EVENTS, hook
    else:
        assert isinstance(h, PromptHandler) and h.prompt.strip(), hook
    if hook.dialect == "toml":
        assert hook.config_event == hook.event
        assert hook.timeout_s <= MAX_TIMEOUT_S
        assert (hook.compiled_if is None) == (hook.if_rule is None), hook
        if hook.if_rule is not None:
            assert EVENTS[hook.event].tool_event, hook
        if hook.match:
            validate_go_glob(hook.match)
    else:
        assert hook.dialect == "json", hook
        assert isinstance(h, GuardHandler) or (
            isinstance(h, CommandHandler) and len(h.command.encode()) <= MAX_COMMAND_BYTES
        ), hook
        assert JSON_ALIASES[hook.config_event] == hook.event, hook
        assert hook.id.startswith("user:"), hook
        assert JSON_MIN_TIMEOUT_MS / 1000 <= hook.timeout_s <= JSON_MAX_TIMEOUT_MS / 1000
        assert hook.on_error in ("warn", "block", "allow"), hook
        assert len(hook.env) <= MAX_ENV_VARS, hook
        assert (hook.compiled_matcher is None) == (hook.matcher is None), hook
        if hook.matcher is not None:
            assert hook.config_event in ("pre_tool_use", "post_tool_use"), hook


def check_table(table: HookTable) -> None:
    trust = table.trust
    untrusted = trust.workspace if trust and trust.state not in ("none", "trusted") else None
    check_problems(table.problems, untrusted)
    for hook in (*table.hooks, *table.untrusted):
        check_hook(hook)
    assert table.by_event == index_by_event(table.hooks)
    assert all(p.severity == "error" for p in table.errors)


def _toml_doc(text: str) -> Any:
    import tomllib

    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        return None


@fuzz(1000)
@given(toml_files)
def test_toml_parser_never_raises_and_accounts_for_every_table(text: str) -> None:
    out = parse_toml_text(text, file="fuzz.toml", scope="global")
    check_problems(out.problems)
    for hook in out.hooks:
        check_hook(hook)
    explicit = [h.explicit_id for h in out.hooks if h.explicit_id is not None]
    assert len(explicit) == len(set(explicit)), explicit
    doc = _toml_doc(text)
    if doc is None:
        assert out.problems[0].message.startswith("not valid TOML"), out.problems
        return
    hooks = doc.get("hooks")
    if not isinstance(hooks, dict):
        return
    # Each table of a known event becomes a hook or has an error located at its index and field.
    built = {(h.event, h.index) for h in out.hooks}
    located = {(p.event, p.index) for p in out.problems if p.index is not None}
    for p in out.problems:
        if p.index is not None:
            assert p.field, p
    for event, tables in hooks.items():
        if (
            event in EVENTS
            and isinstance(tables, list)
            and all(isinstance(t, dict) for t in tables)
        ):
            for index in range(len(tables)):
                assert ((event, index) in built) != ((event, index) in located)


@fuzz(300)
@given(st.text(max_size=200))
def test_toml_parser_survives_any_string(text: str) -> None:
    # Lone surrogates included: the parser takes a str, whoever calls it.
    out = parse_toml_text(text, file="any.toml", scope="workspace")
    check_problems(out.problems)
    for hook in out.hooks:
        check_hook(hook)


@fuzz(800)
@given(json_files)
def test_json_parser_never_raises_and_accounts_for_every_entry(data: bytes) -> None:
    out = parse_json_bytes(data, file="fuzz.json", scope="global")
    check_problems(out.problems)
    try:
        doc = msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError):
        doc = None
    entries = doc.get("hooks", []) if isinstance(doc, dict) else None
    if out.loaded:
        assert isinstance(entries, list) and len(entries) <= MAX_HOOKS_PER_FILE
        kept = {i for i, _ in out.specs}
        warned = {p.index for p in out.problems if p.index is not None}
        for index in range(len(entries)):
            assert (index in kept) != (index in warned), index
    else:
        assert not out.specs and out.problems, out
    from triohooks.config.json_dialect import merge_json_scopes

    hooks, _ = merge_json_scopes([out])
    for hook in hooks:
        check_hook(hook)


@fuzz(500)
@given(st.binary(max_size=300))
def test_both_parsers_survive_random_bytes(data: bytes) -> None:
    check_problems(parse_json_bytes(data, file="b.json", scope="extra").problems)
    check_problems(
        parse_toml_text(data.decode("utf-8", "replace"), file="b.toml", scope="extra").problems
    )


@contextlib.contextmanager
def scratch() -> Iterator[Path]:
    # One fresh directory per example (pytest's tmp_path is per test, not per example).
    with tempfile.TemporaryDirectory(prefix="triohooks-fuzz-") as d:
        yield Path(d)


def _write(path: Path, content: str | bytes | None) -> None:
    if content is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)


maybe_toml = st.none() | toml_files
maybe_json = st.none() | json_files


@fuzz(250)
@given(
    global_toml=maybe_toml,
    global_json=maybe_json,
    ws_toml=maybe_toml,
    ws_json=maybe_json,
    extra=st.none() | toml_files | json_files,
    trust=st.booleans(),
)
def test_load_table_over_every_scope_never_raises(
    global_toml: str | None,
    global_json: bytes | None,
    ws_toml: str | None,
    ws_json: bytes | None,
    extra: str | bytes | None,
    trust: bool,
) -> None:
    with scratch() as root:
        config_dir, ws = root / "global", root / "ws"
        ws.mkdir()
        _write(config_dir / "hooks.toml", global_toml)
        _write(config_dir / "hooks.json", global_json)
        _write(ws / ".agents" / "hooks.toml", ws_toml)
        _write(ws / ".agents" / "hooks.json", ws_json)
        extras: list[Path] = []
        if extra is not None:
            extras.append(root / ("extra.toml" if isinstance(extra, str) else "extra.json"))
            _write(extras[0], extra)
        table = load_table(
            workspace=ws, config_dir=config_dir, extra_configs=extras, trust_override=trust
        )
        check_table(table)
        written = {str(p) for p in [*extras] if p.exists()}
        written |= {str(config_dir / n) for n in ("hooks.toml", "hooks.json")}
        written |= {str(ws / ".agents" / n) for n in ("hooks.toml", "hooks.json")}
        assert {p.file for p in table.problems} <= written
        if not trust and (ws_toml is not None or ws_json is not None):
            # A fresh trust store: workspace hooks are held back, never run.
            assert all(h.scope != "workspace" for h in table.hooks)


@fuzz(150)
@given(config=st.one_of(toml_files, json_files))
def test_validate_command_never_prints_a_traceback(config: str | bytes) -> None:
    with scratch() as root:
        ws = root / "ws"
        ws.mkdir()
        path = root / ("c.toml" if isinstance(config, str) else "c.json")
        _write(path, config)
        out, err = io.StringIO(), io.StringIO()
        args = ["validate", "--workspace", str(ws), "--config-dir", str(root / "g")]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli_main([*args, "--config", str(path)])
        assert code in (0, 1)
        assert "Traceback" not in err.getvalue() + out.getvalue()
        if code == 1:
            # Every problem line names the file.
            problem_lines = [ln for ln in err.getvalue().splitlines() if ln.endswith(")")]
            assert problem_lines and all(ln.startswith(f"{path}: ") for ln in problem_lines)
        else:
            assert out.getvalue().startswith("ok: ")


def test_the_generators_make_mostly_loadable_files() -> None:
    """Guard against a generator that only ever produces garbage (a fuzz that tests nothing): in
    a sample of generated files (the fixed CI examples), some load hooks with no problem at
    all, in both dialects. (Most are meant to have problems: that is what they fuzz.)"""
    toml_loads: list[bool] = []
    json_loads: list[bool] = []

    @fuzz(150)
    @given(st.builds(render_toml, toml_documents()))
    def toml_sample(text: str) -> None:
        parsed = parse_toml_text(text, file="f.toml", scope="global")
        toml_loads.append(bool(parsed.hooks) and not parsed.problems)

    @fuzz(150)
    @given(st.builds(encode_json, json_documents()))
    def json_sample(data: bytes) -> None:
        json_loads.append(bool(parse_json_bytes(data, file="f.json", scope="global").specs))

    toml_sample()
    json_sample()
    assert any(toml_loads), len(toml_loads)
    assert any(json_loads), len(json_loads)


def test_deep_nesting_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    # Found by this module: tomllib and msgspec recurse, and raised RecursionError.
    toml_out = parse_toml_text("a = " + "[" * 5000 + "]" * 5000, file="d.toml", scope="global")
    assert [p.message for p in toml_out.problems] == ["not valid TOML: nested too deeply"]
    data = b'{"hooks": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    json_out = parse_json_bytes(data, file="d.json", scope="global")
    assert [p.message for p in json_out.problems] == [
        "malformed JSON, file skipped: nested too deeply"
    ]
    _write(tmp_path / "g" / "hooks.json", data)
    table = load_table(workspace=None, config_dir=tmp_path / "g")
    assert table.hooks == () and len(table.problems) == 1


def test_problem_locations_stay_on_one_line() -> None:
    # Found by this module: a key holding a line break (here U+0085) split `validate`'s line,
    # an empty key vanished from the location, and RE2 quoted a bad regex's control characters.
    data = b'{"hooks": [{"event": "\\u0085", "": null}, {"event": "pre_tool_use", "matcher":'
    data += b' {"match_regex": "[\\u001f"}, "executor": {"type": "bash", "command": "x"}}]}'
    shown = [str(p) for p in parse_json_bytes(data, file="f.json", scope="global").problems]
    assert shown == [
        "f.json: '\\x85'[0].'': invalid hook skipped: unknown field (known: description, event,"
        " executor, id, matcher, mode, on_error, timeout_ms)",
        "f.json: pre_tool_use[1].matcher.match_regex: invalid hook skipped: matcher.match_regex:"
        " not a valid RE2 regex: missing ]: [\\x1f",
    ]
    text = '[[hooks.pre_tool]]\n"" = 1\ncommand = "x"\nif = "shell(re:[\\u0001)"\n'
    toml = [str(p) for p in parse_toml_text(text, file="f.toml", scope="global").problems]
    assert toml[0].startswith("f.toml: pre_tool[0].'': unknown field")
    assert toml[1].startswith("f.toml: pre_tool[0].if: bad pattern: missing ]: [\\x01")
    assert all(line.isprintable() for line in shown + toml)


def test_an_explicit_toml_id_names_one_hook() -> None:
    # Found by this module: two tables with the same id both loaded.
    text = '[[hooks.pre_tool]]\nid = "a"\ncommand = "x"\n[[hooks.stop]]\nid = "a"\ncommand = "y"\n'
    out = parse_toml_text(text, file="f.toml", scope="global")
    assert [h.event for h in out.hooks] == ["pre_tool"]
    assert [str(p) for p in out.problems] == [
        "f.toml: stop[0].id: duplicate id 'a': pre_tool[0] has it already"
    ]
