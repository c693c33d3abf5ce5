"""Secret redaction: known token shapes, secret-named assignments, and what must stay."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from triohooks.actors.redact import REDACTED, redact, secret_key

R = REDACTED


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("key sk-proj-abcdefghijklmnop1234 end", f"key {R} end"),
        ("sk-ant-api03-AbCdEfGhIjKlMnOpQrSt", R),
        ("key sk-test-123456789 leaked", f"key {R} leaked"),  # short test keys too
        ("sk-1234567", R),
        ("push with ghp_abcdefghijklmnopqrstuvwxyz0123456789", f"push with {R}"),
        ("github_pat_11ABCDEFG0123456789_abcdefghijkl", R),
        ("slack xoxb-1234567890-abcdefghij", f"slack {R}"),
        ("xoxp-1234-5678-9012-abcdef", R),
        ("aws AKIAIOSFODNN7EXAMPLE ok", f"aws {R} ok"),
        ("AIzaSyA1234567890abcdefghijklmnopqrstuv", R),
        ("glpat-abcdefghijklmnopqrst", R),
        ("tok eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2ln", f"tok {R}"),
        ("curl -H 'Authorization: Bearer abc.def-123456'", f"curl -H 'Authorization: {R}'"),
        ("sent Bearer abcdefgh12345678 upstream", f"sent Bearer {R} upstream"),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", f"Authorization: {R}"),
        ("GITHUB_TOKEN=abc123 make", f"GITHUB_TOKEN={R} make"),
        ("export DB_PASSWORD='hunter 2'", f"export DB_PASSWORD='{R}'"),
        ('{"password": "hu\\"nter2", "user": "bob"}', f'{{"password": "{R}", "user": "bob"}}'),
        ('{"api_key":"k-1"}', f'{{"api_key":"{R}"}}'),
        ("apiKey = xyz, next", f"apiKey = {R}, next"),
        ("x-api-key: abc123", f"x-api-key: {R}"),
        ("client_secret=s; scope=read", f"client_secret={R}; scope=read"),
        ("PRIVATE_KEY=abc", f"PRIVATE_KEY={R}"),
        ("aws_secret_access_key = wJalrXUtnFEMI", f"aws_secret_access_key = {R}"),
        ("my.credentials: c1", f"my.credentials: {R}"),
        ("mytool --token s3cr3t --verbose", f"mytool --token {R} --verbose"),
        ("mytool --password=s3cr3t", f"mytool --password={R}"),
        ("status: password=abc", f"status: password={R}"),
        ("auth: user:pass rest", f"auth: {R} rest"),
        ("a=b token=c d=e", f"a=b token={R} d=e"),
        (
            "git clone https://user:pa55@example.com/r.git",
            f"git clone https://user:{R}@example.com/r.git",
        ),
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1\nAAAA\n"
            "-----END OPENSSH PRIVATE KEY-----\n",
            f"{R}\n",
        ),
    ],
)
def test_redacts_secrets(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "exit status 1: command not found",
        "author: Alice <alice@example.com>",
        "max_tokens: 4096, input_tokens=12",
        "PWD=/home/u HOME=/home/u",
        "the token expired, authentication failed",
        "basic functionality works",
        "sk-short",
        "sk-learn and sk-image",
        "https://example.com/path?x=1",
        "keyboard: qwerty",
        "--verbose --output file.txt",
    ],
)
def test_leaves_ordinary_text_alone(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("GITHUB_TOKEN", True),
        ("authToken", True),
        ("X-Auth", True),
        ("Authorization", True),
        ("apikey", True),
        ("OPENAI_API_KEY", True),
        ("session_cookie", True),
        ("author", False),
        ("tokens", False),
        ("keyboard", False),
        ("monkey", False),
        ("PWD", False),
    ],
)
def test_secret_key_names(key: str, secret: bool) -> None:
    assert secret_key(key) is secret


@given(st.text(alphabet=st.sampled_from("aZ09_-:= \"'[]{},;@/.\nsk-AKIApassword"), max_size=80))
def test_redaction_is_idempotent(text: str) -> None:
    once = redact(text)
    assert redact(once) == once


@given(st.text(max_size=200))
def test_redaction_never_fails(text: str) -> None:
    assert isinstance(redact(text), str)
