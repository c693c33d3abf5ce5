"""JSON-dialect matchers and TOML ``match``: validation at load time, evaluation per event."""

from __future__ import annotations

import re
import types
from typing import Any

import pytest

from triohooks.match.globs import GlobError
from triohooks.match.matchers import (
    MAX_MATCHER_FIELD_BYTES,
    JsonMatcher,
    MatcherError,
    compile_matcher,
    jsonpath_value,
    matcher_fires,
    toml_match_fires,
)

GIT = r"(^|[;&|()[:space:]])git([[:space:]]|$)"


def fires(tool: str = "bash", args: dict[str, Any] | None = None, **fields: str) -> bool:
    return matcher_fires(compile_matcher(JsonMatcher(**fields)), tool=tool, args=args or {})


# -- the spec's example: block git --------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("git push", True),
        ("cd x && git push", True),
        ("ls;git status", True),
        ("(git log)", True),
        ("echo\tgit", True),
        ("git", True),
        ("gitk", False),
        ("digit", False),
        ("legit stuff", False),
        ("echo git-lfs", False),
    ],
)
def test_block_git_example_uses_posix_classes(command: str, expected: bool) -> None:
    assert (
        fires(
            args={"command": command}, tool_name="bash", args_jsonpath="$.command", match_regex=GIT
        )
        is expected
    )


def test_stdlib_re_would_misread_the_posix_class() -> None:
    # Why RE2: Python's re reads [[:space:]] as the set {'[', ':', 's', 'p', 'a', 'c', 'e'}
    # followed by ']' (with a FutureWarning) - "cd x && git push" would not match.
    with pytest.warns(FutureWarning):
        stdlib = re.compile(GIT)
    assert stdlib.search("cd x && git push") is None
    assert fires(args={"command": "cd x && git push"}, args_jsonpath="$.command", match_regex=GIT)


# -- tool conditions -----------------------------------------------------------------------


def test_tool_name_is_exact() -> None:
    assert fires(tool="bash", tool_name="bash")
    assert not fires(tool="bash2", tool_name="bash")
    assert not fires(tool="My_tool", tool_name="my_tool")
    assert not fires(tool="Bash", tool_name="BASH")
    assert not fires(tool="", tool_name="bash")


def test_tool_name_also_names_the_canonical_tool() -> None:
    # `bash` is every agent's shell; the agent's own name still matches, exactly.
    for tool in ("Bash", "run_shell_command", "exec_command", "Shell", "bash"):
        assert fires(tool=tool, tool_name="bash"), tool
        assert fires(tool=tool, tool_name_glob="read|bash"), tool
    assert fires(tool="Bash", tool_name="Bash")
    assert not fires(tool="run_shell_command", tool_name="Bash")
    assert not fires(tool="Read", tool_name="bash")
    assert fires(tool="mcp_github_list_issues", tool_name_glob="mcp__github__*")
    assert fires(tool="mcp_github_list_issues", tool_name_glob="mcp_github_*")


def test_tool_name_and_glob_must_both_hold() -> None:
    assert fires(tool="mcp_git", tool_name="mcp_git", tool_name_glob="mcp_*")
    assert not fires(tool="mcp_git", tool_name="mcp_gh", tool_name_glob="mcp_*")
    assert not fires(tool="bash", tool_name="bash", tool_name_glob="mcp_*")


def test_empty_matcher_fires_for_everything() -> None:
    assert fires(tool="anything")
    assert fires(tool="")


# -- path and regex ------------------------------------------------------------------------


def test_path_alone_fires_on_a_non_empty_value() -> None:
    assert fires(args={"command": "ls"}, args_jsonpath="$.command")
    assert not fires(args={"command": ""}, args_jsonpath="$.command")
    assert not fires(args={"command": None}, args_jsonpath="$.command")
    assert not fires(args={}, args_jsonpath="$.command")
    assert fires(args={"n": 0}, args_jsonpath="$.n")  # "0" is not empty
    assert fires(args={"flag": False}, args_jsonpath="$.flag")
    assert fires(args={"o": {}}, args_jsonpath="$.o")  # "{}"


def test_match_regex_fires_on_a_match_anywhere() -> None:
    args = {"path": "/etc/passwd"}
    assert fires(args=args, args_jsonpath="$.path", match_regex="^/etc/")
    assert fires(args=args, args_jsonpath="$.path", match_regex="pass")
    assert not fires(args=args, args_jsonpath="$.path", match_regex="^pass")


def test_deny_regex_fires_when_not_found() -> None:
    # "anything outside src/ is suspicious"
    assert fires(args={"path": "/etc/x"}, args_jsonpath="$.path", deny_regex="^src/")
    assert not fires(args={"path": "src/x"}, args_jsonpath="$.path", deny_regex="^src/")
    # a missing value is "" - the deny regex is not found in it, so it fires
    assert fires(args={}, args_jsonpath="$.path", deny_regex="^src/")


def test_regex_without_path_never_fires() -> None:
    assert not fires(args={"command": "git"}, match_regex=".*")
    assert not fires(args={"command": "git"}, deny_regex="never-there")


def test_regex_sees_json_text_of_non_strings() -> None:
    args = {"n": 42, "opts": {"force": True}, "files": ["a", "b"]}
    assert fires(args=args, args_jsonpath="$.n", match_regex="^42$")
    assert fires(args=args, args_jsonpath="$.opts", match_regex='"force":true')
    assert fires(args=args, args_jsonpath="$.files", match_regex=r'^\["a","b"\]$')


def test_empty_match_regex_matches_even_an_empty_value() -> None:
    assert fires(args={}, args_jsonpath="$.x", match_regex="")
    assert not fires(args={"x": "y"}, args_jsonpath="$.x", deny_regex="")


def test_regex_is_linear_time_on_a_redos_pattern() -> None:
    # (a+)+$ backtracks exponentially in stdlib re; RE2 answers at once.
    assert not fires(args={"c": "a" * 50_000 + "!"}, args_jsonpath="$.c", match_regex="^(a+)+$")


def test_regex_on_non_ascii_text() -> None:
    assert fires(args={"m": "héllo wörld"}, args_jsonpath="$.m", match_regex="w.rld$")
    assert fires(args={"m": "日本語"}, args_jsonpath="$.m", match_regex="^...$")


# -- jsonpath values -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("$.s", 'text with "quotes"'),
        ("$.empty", ""),
        ("$.null", ""),
        ("$.missing", ""),
        ("$.int", "7"),
        ("$.float", "1.5"),
        ("$.t", "true"),
        ("$.f", "false"),
        ("$.obj", '{"k":"v","n":[1,null]}'),
        ("$.list", '[1,"two",{"three":3}]'),
        ("$.obj.k", "v"),
        ("$.obj.n", "[1,null]"),
        ("$.obj.missing", ""),
        ("$.s.x", ""),  # into a string
        ("$.list.0", ""),  # into a list: objects only
        ("$.null.x", ""),
        ("$.a.b.c", "deep"),
        ("$.uni", "é✓"),
        ("$.key with space", "ok"),
    ],
)
def test_jsonpath_value(path: str, expected: str) -> None:
    args = {
        "s": 'text with "quotes"',
        "empty": "",
        "null": None,
        "int": 7,
        "float": 1.5,
        "t": True,
        "f": False,
        "obj": {"k": "v", "n": [1, None]},
        "list": [1, "two", {"three": 3}],
        "a": {"b": {"c": "deep"}},
        "uni": "é✓",
        "key with space": "ok",
    }
    assert jsonpath_value(path, args) == expected


def test_dollar_alone_is_the_whole_arguments_object() -> None:
    assert jsonpath_value("$", {"command": "ls", "n": 1}) == '{"command":"ls","n":1}'
    assert jsonpath_value("$", {}) == "{}"
    assert fires(args={"a": {"b": "git push"}}, args_jsonpath="$", match_regex="git push")


def test_jsonpath_accepts_any_mapping() -> None:
    args = types.MappingProxyType({"o": types.MappingProxyType({"k": 1})})
    assert jsonpath_value("$.o", args) == '{"k":1}'
    assert jsonpath_value("$.o.k", args) == "1"


# -- validation ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "bad_field"),
    [
        ({"match_regex": "a", "deny_regex": "b", "args_jsonpath": "$.x"}, "deny_regex"),
        ({"match_regex": "(?=lookahead)", "args_jsonpath": "$.x"}, "match_regex"),
        ({"match_regex": r"(a)\1", "args_jsonpath": "$.x"}, "match_regex"),
        ({"deny_regex": "(unclosed", "args_jsonpath": "$.x"}, "deny_regex"),
        ({"tool_name": ""}, "tool_name"),
        ({"tool_name_glob": ""}, "tool_name_glob"),
        ({"tool_name_glob": "a||b"}, "tool_name_glob"),
        ({"tool_name_glob": "a*b"}, "tool_name_glob"),
        ({"tool_name_glob": "ba?h"}, "tool_name_glob"),
        ({"tool_name_glob": "[ab]ash"}, "tool_name_glob"),
        ({"args_jsonpath": ""}, "args_jsonpath"),
        ({"args_jsonpath": "command"}, "args_jsonpath"),
        ({"args_jsonpath": ".command"}, "args_jsonpath"),
        ({"args_jsonpath": "$command"}, "args_jsonpath"),
        ({"args_jsonpath": "$."}, "args_jsonpath"),
        ({"args_jsonpath": "$.a."}, "args_jsonpath"),
        ({"args_jsonpath": "$..a"}, "args_jsonpath"),
        ({"args_jsonpath": "$.a[0]"}, "args_jsonpath"),
        ({"args_jsonpath": "$.*"}, "args_jsonpath"),
        ({"args_jsonpath": "$['a']"}, "args_jsonpath"),
        ({"tool_name": "x" * (MAX_MATCHER_FIELD_BYTES + 1)}, "tool_name"),
        ({"match_regex": "é" * 1025, "args_jsonpath": "$.x"}, "match_regex"),  # 2050 bytes
    ],
)
def test_compile_matcher_rejects(fields: dict[str, str], bad_field: str) -> None:
    with pytest.raises(MatcherError) as info:
        compile_matcher(JsonMatcher(**fields))
    assert info.value.field == bad_field
    assert str(info.value).startswith(f"matcher.{bad_field}: ")


def test_regex_error_text_is_readable() -> None:
    with pytest.raises(MatcherError, match=r"not a valid RE2 regex: .*\(\?="):
        compile_matcher(JsonMatcher(args_jsonpath="$.x", match_regex="(?=x)"))


def test_compile_matcher_accepts_limits() -> None:
    compile_matcher(JsonMatcher(tool_name="x" * MAX_MATCHER_FIELD_BYTES))
    compile_matcher(JsonMatcher(tool_name_glob="*"))
    compile_matcher(JsonMatcher(args_jsonpath="$"))
    compile_matcher(JsonMatcher(args_jsonpath="$.a-b.c_d.1"))


def test_compiled_matcher_is_immutable() -> None:
    m = compile_matcher(JsonMatcher(tool_name="bash"))
    with pytest.raises(AttributeError):
        m.tool_name = "other"  # type: ignore[misc]


def test_jsonpath_value_rejects_bad_paths() -> None:
    with pytest.raises(MatcherError):
        jsonpath_value("$.a[1]", {})


# -- TOML match ----------------------------------------------------------------------------


def test_toml_match() -> None:
    assert toml_match_fires(None, "bash")
    assert toml_match_fires("", "bash")
    assert toml_match_fires("", "")
    assert toml_match_fires("*", "bash")
    assert toml_match_fires("mcp__*", "mcp__github__create_issue")
    assert not toml_match_fires("mcp__*", "bash")
    assert toml_match_fires("[Bb]ash", "Bash")
    assert not toml_match_fires("edit|write", "edit")  # path.Match has no alternation
    with pytest.raises(GlobError):
        toml_match_fires("[", "bash")


def test_searcher_falls_back_to_public_search() -> None:
    # The fast path uses re2's wrapped object; if a google-re2 release drops it, the public
    # search is used and the answers stay the same.
    import re2

    from triohooks.match.matchers import _searcher

    rx = re2.compile("g.t")
    fast = _searcher(rx)
    slow = _searcher(types.SimpleNamespace(search=rx.search))
    for text in ("get", "gut it", "g\nt", "", "xyz"):
        assert fast(text) == slow(text) == (rx.search(text) is not None)
