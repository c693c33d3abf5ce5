"""TOML-dialect http hooks (blitz HK-62): POST the event JSON; a 2xx body is read like a
command's stdout; any other status, a network error or a timeout is the hook's failure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from triohooks.config.model import Hook, HttpHandler

from .http import DEFAULT_BODY_CAP, HttpHookClient, HttpReply, expand_headers
from .replies import TOML_OUTPUT_CAP, RunResult, parse_toml_stdout
from .runner import HookInput


async def post_event(
    client: HttpHookClient,
    url: str,
    body: bytes,
    *,
    headers: Sequence[tuple[str, str]],
    allowed_env_vars: Sequence[str],
    environ: Mapping[str, str],
    timeout_s: float,
    cap: int = DEFAULT_BODY_CAP,
) -> HttpReply:
    """The one way an http hook's event is POSTed, whatever its dialect: the hook's headers
    with only its allowed variables expanded from ``environ`` (the session's environment), a
    JSON content type unless the hook names one (in any case), the hook's timeout. The
    dialect reads the reply."""
    sent = expand_headers(headers, allowed_env_vars, environ)
    if not any(name.lower() == "content-type" for name in sent):
        sent["Content-Type"] = "application/json"
    return await client.post(url, body=body, headers=sent, timeout_s=timeout_s, cap=cap)


class HttpRunner:
    """Runs ``type = "http"`` hooks on the engine's pooled client (None: not available)."""

    def __init__(self, client: HttpHookClient | None) -> None:
        self._client = client

    async def run(self, hook: Hook, hook_input: HookInput) -> RunResult:
        handler = hook.handler
        assert isinstance(handler, HttpHandler)
        if self._client is None:
            return RunResult(outcome="error", error="http hooks are not available")
        reply = await post_event(
            self._client,
            handler.url,
            hook_input.payload,
            headers=handler.headers,
            allowed_env_vars=handler.allowed_env_vars,
            environ=hook_input.environment(),
            timeout_s=hook.timeout_s,
            cap=TOML_OUTPUT_CAP,
        )
        if reply.status != "ok":
            return RunResult(
                outcome="timeout" if reply.status == "timeout" else "error",
                error=reply.error,
                duration_ms=reply.duration_ms,
                exit_code=reply.status_code,
            )
        parsed = parse_toml_stdout(reply.body)
        return msgspec.structs.replace(
            parsed,
            duration_ms=reply.duration_ms,
            stdout_bytes=reply.body_bytes,
            truncated=reply.truncated,
            exit_code=reply.status_code,
        )
