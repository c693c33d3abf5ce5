"""HTTP hooks (``type = "http"``, blitz HK-62): header expansion and the pooled POST client.

This module owns how an event is POSTed and how the answer comes back: one pooled ``httpx2``
client per engine, the hook's timeout as a trio cancel scope, the response body capped like a
command's stdout, every failure (status, connection, TLS, protocol, timeout) turned into an
:class:`HttpReply` instead of an exception. It must not read the reply's JSON or decide anything:
the dispatcher reads ``body`` exactly like a command's stdout.
"""

from __future__ import annotations

import re
import ssl
import time
from collections.abc import Mapping, Sequence
from contextlib import aclosing
from types import TracebackType
from typing import TYPE_CHECKING, Final, Literal, Self

import msgspec
import trio

if TYPE_CHECKING:
    import httpx2

__all__ = ["DEFAULT_BODY_CAP", "HttpHookClient", "HttpReply", "expand_headers"]

#: Like a command's stdout (blitz): the first 100 KiB are kept, the rest is discarded.
DEFAULT_BODY_CAP: Final = 100 * 1024
USER_AGENT: Final = "triohooks"
#: How long closing the pool may take when the engine shuts down.
_CLOSE_TIMEOUT_S: Final = 5.0

_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


class HttpReply(msgspec.Struct, frozen=True, kw_only=True):
    """What one POST came back with. ``status`` is "ok" only for a 2xx read to its end (or to
    the cap); a non-2xx keeps its (capped) body for diagnostics."""

    status: Literal["ok", "error", "timeout"]
    status_code: int | None = None
    #: The kept body, decoded as UTF-8 with replacement.
    body: str = ""
    #: Body bytes received in all (the body is read to its end; only ``cap`` bytes are kept).
    body_bytes: int = 0
    truncated: bool = False
    error: str | None = None
    duration_ms: float = 0.0


def expand_headers(
    headers: Sequence[tuple[str, str]],
    allowed_env_vars: Sequence[str],
    environ: Mapping[str, str],
) -> dict[str, str]:
    """Header values with ``$VAR`` / ``${VAR}`` replaced for names in ``allowed_env_vars``.

    Any other reference stays exactly as written, so a typo or an unlisted name never sends a
    secret (HK-62). An allowed name that is unset expands to "" (as in a shell). Header names are
    never expanded.
    """
    allowed = frozenset(allowed_env_vars)

    def substitute(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        return environ.get(name, "") if name in allowed else m.group(0)

    return {name: _VAR.sub(substitute, value) if "$" in value else value for name, value in headers}


def _describe(exc: Exception) -> str:
    """A one-line reason a user can act on; TLS problems say so."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ssl.SSLError):
            return f"TLS error: {cause}"
        cause = cause.__cause__ or cause.__context__
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class HttpHookClient:
    """The engine's one HTTP client for http hooks: a connection pool shared by every hook.

    Use as an async context manager (closing it closes the pool). Redirects are not followed
    (a 3xx is a non-2xx, so a failure); proxies and CA settings come from the environment
    (``trust_env``) like any other client the user runs.
    """

    def __init__(
        self,
        *,
        verify: ssl.SSLContext | bool = True,
        trust_env: bool = True,
        max_connections: int = 32,
    ) -> None:
        self._settings = (verify, trust_env, max_connections)
        #: Made on first use: importing httpx2 costs ~50 ms that an engine (or a one-shot
        #: ``triohooks fire``) without http hooks should not pay.
        self._client: httpx2.AsyncClient | None = None

    def _pool(self) -> httpx2.AsyncClient:
        if self._client is not None:
            return self._client
        import httpx2

        verify, trust_env, max_connections = self._settings
        self._client = httpx2.AsyncClient(
            # The hook's timeout is a trio cancel scope around the whole exchange (post()).
            timeout=None,
            follow_redirects=False,
            verify=verify,
            trust_env=trust_env,
            limits=httpx2.Limits(
                max_connections=max_connections, max_keepalive_connections=max_connections
            ),
            # identity: the cap then bounds what we hold, not a decompression of it.
            headers={"user-agent": USER_AGENT, "accept-encoding": "identity"},
        )
        return self._client

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the pool. A checkpoint; shielded for up to 5 s so a cancelled engine still
        closes its sockets."""
        if self._client is None:
            return
        with trio.move_on_after(_CLOSE_TIMEOUT_S, shield=True):
            await self._client.aclose()

    async def post(
        self,
        url: str,
        *,
        body: bytes,
        headers: Mapping[str, str],
        timeout_s: float,
        cap: int = DEFAULT_BODY_CAP,
    ) -> HttpReply:
        """POST ``body`` to ``url`` and read the answer, within ``timeout_s`` in all.

        Never raises for a network or HTTP problem: those come back as ``status="error"`` (or
        ``"timeout"``) with ``error`` saying why. The body is read to its end; the first ``cap``
        bytes are kept and the rest discarded (``truncated``), so an endless body ends in the
        timeout. A checkpoint; on cancel from outside, ``Cancelled`` propagates and the
        connection is closed.
        """
        start = time.perf_counter()
        status_code: int | None = None
        kept = bytearray()
        received = 0
        truncated = False
        error: str | None = None
        with trio.move_on_after(timeout_s) as scope:
            try:
                async with self._pool().stream("POST", url, content=body, headers=headers) as resp:
                    status_code = resp.status_code
                    async with aclosing(resp.aiter_bytes()) as chunks:
                        # Read to the end and discard past the cap, like a command's pipes.
                        # (Leaving early would strand httpcore's inner stream generator.)
                        async for chunk in chunks:
                            received += len(chunk)
                            room = cap - len(kept)
                            if len(chunk) > room:
                                truncated = True
                                kept += chunk[:room]
                            else:
                                kept += chunk
            except Exception as exc:  # every transport/protocol/URL problem is the hook's failure
                error = _describe(exc)
        status: Literal["ok", "error", "timeout"] = "ok"
        if scope.cancelled_caught:
            status, error = "timeout", f"timed out after {timeout_s:g} s"
        elif error is not None:
            status = "error"
        text = kept.decode("utf-8", "replace")
        if status == "ok" and (status_code is None or not 200 <= status_code < 300):
            snippet = " ".join(text.split())[:200]
            status, error = "error", f"HTTP {status_code}" + (f": {snippet}" if snippet else "")
        return HttpReply(
            status=status,
            status_code=status_code,
            body=text,
            body_bytes=received,
            truncated=truncated,
            error=error,
            duration_ms=(time.perf_counter() - start) * 1000,
        )
