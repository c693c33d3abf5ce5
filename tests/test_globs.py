"""Go ``path.Match`` and JSON ``tool_name_glob``: syntax, validation and matching."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from triohooks.match.globs import (
    GlobError,
    compile_go_glob,
    compile_tool_name_glob,
    go_path_match,
    tool_name_glob_match,
    validate_go_glob,
    validate_tool_name_glob,
)

ERR = "ERR"

# (pattern, name, result) as Go 1.19's path.Match answers them (ERR = ErrBadPattern). The first
# block is Go's own match_test.go table; the rest are the edges users trip on.
GO_CASES: list[tuple[str, str, bool | str]] = [
    ("abc", "abc", True),
    ("*", "abc", True),
    ("*c", "abc", True),
    ("a*", "a", True),
    ("a*", "abc", True),
    ("a*", "ab/c", False),
    ("a*/b", "abc/b", True),
    ("a*/b", "a/c/b", False),
    ("a*b*c*d*e*/f", "axbxcxdxe/f", True),
    ("a*b*c*d*e*/f", "axbxcxdxexxx/f", True),
    ("a*b*c*d*e*/f", "axbxcxdxe/xxx/f", False),
    ("a*b*c*d*e*/f", "axbxcxdxexxx/fff", False),
    ("a*b?c*x", "abxbbxdbxebxczzx", True),
    ("a*b?c*x", "abxbbxdbxebxczzy", False),
    ("ab[c]", "abc", True),
    ("ab[b-d]", "abc", True),
    ("ab[e-g]", "abc", False),
    ("ab[^c]", "abc", False),
    ("ab[^b-d]", "abc", False),
    ("ab[^e-g]", "abc", True),
    ("a\\*b", "a*b", True),
    ("a\\*b", "ab", False),
    ("a?b", "a☺b", True),
    ("a[^a]b", "a☺b", True),
    ("a???b", "a☺b", False),
    ("a[^a][^a][^a]b", "a☺b", False),
    ("[a-ζ]*", "\u03b1", True),  # alpha
    ("*[a-ζ]", "A", False),
    ("a?b", "a/b", False),
    ("a*b", "a/b", False),
    ("[\\]a]", "]", True),
    ("[\\-]", "-", True),
    ("[x\\-]", "x", True),
    ("[x\\-]", "-", True),
    ("[x\\-]", "z", False),
    ("[\\-x]", "x", True),
    ("[\\-x]", "-", True),
    ("[\\-x]", "a", False),
    ("*x", "xxx", True),
    ("[!a]", "!", True),
    ("[!a]", "a", True),
    ("[!a]", "b", False),
    ("[^a]", "b", True),
    ("[^a]", "a", False),
    ("[^a]", "/", True),
    ("[/]", "/", True),
    ("[z-a]", "m", False),
    ("*[a/]*b", "aa/b", False),
    ("a/*", "a/", True),
    ("a/*", "a/b", True),
    ("*", "a/b", False),
    ("*", "", True),
    ("?", "/", False),
    ("?", "é", True),
    ("??", "é", False),
    ("", "", True),
    ("", "a", False),
    ("mcp__*", "mcp__github__x", True),
    ("Bash", "Bash", True),
    ("Bash", "bash", False),
    ("[Bb]ash", "bash", True),
    ("\\[x]", "[x]", True),
    ("]", "]", True),
    ("a-b", "a-b", True),
    ("[*]", "*", True),
    ("[*]", "x", False),
    ("[?]", "?", True),
    ("[[]", "[", True),
    ("[\\\\]", "\\", True),
    ("a\\b", "ab", True),
    ("[]a]", "]", ERR),
    ("[-]", "-", ERR),
    ("[x-]", "x", ERR),
    ("[x-]", "-", ERR),
    ("[-x]", "x", ERR),
    ("\\", "a", ERR),
    ("[a-b-c]", "a", ERR),
    ("[", "a", ERR),
    ("[^", "a", ERR),
    ("[^bc", "a", ERR),
    ("a[", "a", ERR),
    ("a[", "ab", ERR),
    ("a[", "x", ERR),
    ("a/b[", "x", ERR),
    ("[]", "x", ERR),
    ("[]", "]", ERR),
    ("[^]", "x", ERR),
    ("x\\", "y", ERR),
    ("x\\", "x", ERR),
    ("a*\\", "abc", ERR),
    ("*[", "x", ERR),
    ("[a", "a", ERR),
    ("[a-", "a", ERR),
    ("[a-]", "a", ERR),
    ("[\\", "a", ERR),
    ("a*b[", "zzz", ERR),
    ("nomatch[", "other", ERR),
]


@pytest.mark.parametrize(("pattern", "name", "expected"), GO_CASES)
def test_go_path_match_agrees_with_go(pattern: str, name: str, expected: bool | str) -> None:
    if expected == ERR:
        with pytest.raises(GlobError, match="syntax error in pattern"):
            validate_go_glob(pattern)
        with pytest.raises(GlobError):
            go_path_match(pattern, name)
    else:
        validate_go_glob(pattern)
        assert go_path_match(pattern, name) is expected


def test_bang_is_not_negation() -> None:
    # Go has no '!' negation: [!a] is the class {'!', 'a'}; only '^' negates.
    assert go_path_match("[!a]", "a")
    assert not go_path_match("[!a]", "b")
    assert go_path_match("[^a]", "b")


def test_star_and_question_mark_stop_at_slash_but_a_class_does_not() -> None:
    assert not go_path_match("*", "mcp/tool")
    assert not go_path_match("mcp?tool", "mcp/tool")
    assert go_path_match("mcp[/]tool", "mcp/tool")
    assert go_path_match("mcp[^x]tool", "mcp/tool")


def test_bad_pattern_found_after_an_early_mismatch() -> None:
    # A name that fails on the first character must not hide a broken tail from validation.
    for pattern in ("x[", "x\\", "x*[a-", "Bash|Edit[", "x*[]"):
        with pytest.raises(GlobError):
            validate_go_glob(pattern)


def test_compiled_glob_is_reused() -> None:
    assert compile_go_glob("mcp__*") is compile_go_glob("mcp__*")
    m = compile_go_glob("mcp__*")
    assert m("mcp__x") and not m("mcp_x") and not m("mcp__a/b")


def _glob_to_regex(pattern: str) -> re.Pattern[str]:
    out = []
    chars = iter(pattern)
    for c in chars:
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "\\":
            out.append(re.escape(next(chars)))
        else:
            out.append(re.escape(c))
    return re.compile("".join(out), re.DOTALL)


@given(
    pattern=st.text(alphabet="ab/*?", max_size=8),
    name=st.text(alphabet="ab/", max_size=8),
)
def test_class_free_patterns_match_like_the_obvious_regex(pattern: str, name: str) -> None:
    # Without classes, Go's chunk-by-chunk matching equals full glob semantics (checked against
    # Go on 500k random pairs), so an independent regex translation is an oracle.
    expected = _glob_to_regex(pattern).fullmatch(name) is not None
    assert go_path_match(pattern, name) is expected


@given(pattern=st.text(alphabet="ab/*?[]^-\\!", max_size=8), name=st.text(max_size=6))
def test_validation_decides_and_valid_patterns_never_raise(pattern: str, name: str) -> None:
    try:
        validate_go_glob(pattern)
    except GlobError:
        return
    assert isinstance(go_path_match(pattern, name), bool)


# -- JSON dialect --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "name", "expected"),
    [
        ("bash", "bash", True),
        ("bash", "bash2", False),
        ("bash", "Bash", False),
        ("edit_file|write_file", "write_file", True),
        ("edit_file|write_file", "edit_fil", False),
        ("edit_file|write_file", "read_file", False),
        ("mcp_*", "mcp_github", True),
        ("mcp_*", "mcp_", True),
        ("mcp_*", "mcp", False),
        ("mcp_*", "xmcp_github", False),
        ("bash|mcp_*", "bash", True),
        ("bash|mcp_*", "mcp_a/b", True),  # not a path glob: '*' is a plain prefix
        ("*", "anything", True),
        ("*", "", True),
    ],
)
def test_tool_name_glob_match(pattern: str, name: str, expected: bool) -> None:
    validate_tool_name_glob(pattern)
    assert tool_name_glob_match(pattern, name) is expected
    assert compile_tool_name_glob(pattern)(name) is expected


@pytest.mark.parametrize(
    "pattern",
    ["", "|", "a|", "|a", "a||b", "a*b", "*a", "a**", "a?", "a[bc]", "[a]", "a]", "**", "a|b*c"],
)
def test_tool_name_glob_rejects(pattern: str) -> None:
    with pytest.raises(GlobError, match="tool_name_glob"):
        validate_tool_name_glob(pattern)
