"""Secret redaction for text that leaves the process in logs: audit errors and details.

This module owns the list of what looks like a secret: well-known token shapes (OpenAI/Anthropic
``sk-``, GitHub ``ghp_``/``github_pat_``, Slack ``xox?-``, AWS ``AKIA``, Google ``AIza``, GitLab
``glpat-``, JWTs, ``Bearer`` credentials, PEM private keys, passwords in URLs) and ``KEY=value``
/ ``KEY: value`` assignments whose key names a secret. It must not decide what gets logged; it
only rewrites text. Patterns are RE2: hook output is untrusted, matching stays linear-time.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Final

import re2

REDACTED: Final = "[REDACTED]"

#: ``key=value`` / ``key: value`` / ``"key": "value"`` (groups 1-2) and ``--key value``
#: (groups 3-4). Only the key and separator are matched here, so a harmless key's value never
#: hides the next key (``status: password=x``); whether the key is secret is decided in Python
#: (RE2 has no lookarounds to say "auth" but not "author").
_KEY: Final = re2.compile(
    r"([A-Za-z_][A-Za-z0-9_.\-]*)(\"?'?\s*[:=]\s*)"  # the closing quote of a JSON key
    r"|(--[A-Za-z][A-Za-z0-9_\-]*)(\s+)"
)
#: The value after a secret key: quoted, or bare up to a delimiter. ``Authorization: Bearer
#: xyz`` takes its scheme word along. A value never starts with ``[`` so ``[REDACTED]`` stays
#: as it is (redaction is idempotent).
_VALUE: Final = re2.compile(
    r"\"(?:[^\"\\]|\\.)*\"|'[^']*'"
    r"|(?:(?i:bearer|basic|digest|token)\s+)?[^\s,;&'\"}\]\[][^\s,;&'\"}\]]*"
)

#: Whole-match token shapes.
_TOKENS: Final = re2.compile(
    "|".join(
        (
            # OpenAI / Anthropic (sk-, sk-proj-, sk-ant-): 16+ characters, or shorter ones with a
            # digit and 7+ characters (test and scoped keys, ``sk-test-123456789``).
            r"\bsk-(?:[A-Za-z0-9_\-]{16,}|[A-Za-z0-9_\-]{6,}[0-9][A-Za-z0-9_\-]*"
            r"|[A-Za-z0-9_\-]*[0-9][A-Za-z0-9_\-]{6,})",
            r"\bgh[pousr]_[A-Za-z0-9]{20,}",  # GitHub tokens
            r"\bgithub_pat_[A-Za-z0-9_]{20,}",
            r"\bxox[abposr]-[A-Za-z0-9\-]{8,}",  # Slack
            r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",  # AWS access key ids
            r"\bAIza[0-9A-Za-z_\-]{35}",  # Google API keys
            r"\bglpat-[A-Za-z0-9_\-]{20,}",  # GitLab
            r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}(?:\.[A-Za-z0-9_\-]*)?",  # JWT-like
            r"(?s)-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----",
        )
    )
)

#: ``Bearer <token>`` anywhere: keep the scheme, hide the credential.
_BEARER: Final = re2.compile(r"(?i)\b(bearer)(\s+)[A-Za-z0-9._~+/=\-]{8,}")

#: ``scheme://user:password@host``.
_URL_PASSWORD: Final = re2.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]+:)[^\s@/]+@")

#: Words of a key that make it secret (keys split on ``_ . -`` and camelCase humps).
_SECRET_WORDS: Final = frozenset(
    {
        "token",
        "secret",
        "password",
        "passwd",
        "passphrase",
        "pass",
        "auth",
        "authorization",
        "credential",
        "credentials",
        "apikey",
        "privatekey",
        "cookie",
    }
)
#: Adjacent word pairs that name a secret (``api_key``, ``x-api-key``, ``private_key`` ...).
_SECRET_PAIRS: Final = frozenset(
    {("api", "key"), ("private", "key"), ("access", "key"), ("secret", "key"), ("client", "secret")}
)
_HUMP: Final = re2.compile(r"([a-z0-9])([A-Z])")
_SEPARATORS: Final = re2.compile(r"[_.\-]+")


def secret_key(key: str) -> bool:
    """Whether an assignment's key names a secret (``GITHUB_TOKEN``, ``apiKey``, ``x-auth``)."""
    words = [w for w in _SEPARATORS.split(_HUMP.sub(r"\1_\2", key).lower()) if w]
    if any(w in _SECRET_WORDS for w in words):
        return True
    return any(pair in _SECRET_PAIRS for pair in pairwise(words))


def _redact_assignments(text: str) -> str:
    out: list[str] = []
    done = 0  # text[:done] is already in out
    for m in _KEY.finditer(text):
        if m.start() < done:
            continue  # inside a value just redacted
        flag = m.group(3) is not None
        key = str(m.group(3) if flag else m.group(1))
        if not secret_key(key):
            continue
        value = _VALUE.match(text, m.end())
        if value is None or (flag and text.startswith("-", m.end())):
            continue
        quoted = text[m.end()] in "\"'"
        quote = text[m.end()] if quoted else ""
        out.append(text[done : m.end()])
        out.append(f"{quote}{REDACTED}{quote}")
        done = value.end()
    if not out:
        return text
    out.append(text[done:])
    return "".join(out)


def redact(text: str) -> str:
    """``text`` with everything that looks like a secret replaced by ``[REDACTED]``.

    Idempotent: redacting twice gives the same text.
    """
    if not text:
        return text
    text = _redact_assignments(text)
    text = _TOKENS.sub(REDACTED, text)
    text = _BEARER.sub(rf"\1\2{REDACTED}", text)
    return str(_URL_PASSWORD.sub(rf"\1{REDACTED}@", text))
