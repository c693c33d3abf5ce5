"""TOML-dialect http hooks (blitz HK-62): POST the event JSON; a 2xx body is read like a
command's stdout; any other status, a network error or a timeout is the hook's failure."""

from __future__ import annotations

import msgspec

from triohooks.config.model import Hook, HttpHandler

from .http import HttpHookClient, expand_headers
from .replies import TOML_OUTPUT_CAP, RunResult, parse_toml_stdout
from .runner import HookInput


class HttpRunner:
    """Runs ``type = "http"`` hooks on the engine's pooled client (None: not available)."""

    def __init__(self, client: HttpHookClient | None) -> None:
        self._client = client

    async def run(self, hook: Hook, hook_input: HookInput) -> RunResult:
        handler = hook.handler
        assert isinstance(handler, HttpHandler)
        if self._client is None:
            return RunResult(outcome="error", error="http hooks are not available")
        headers = expand_headers(
            handler.headers, handler.allowed_env_vars, hook_input.environment()
        )
        if not any(name.lower() == "content-type" for name in headers):
            headers["Content-Type"] = "application/json"
        reply = await self._client.post(
            handler.url,
            body=hook_input.payload,
            headers=headers,
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
