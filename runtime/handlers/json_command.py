"""JSON-dialect (everruns) bash hooks: the payload in ``EVERRUNS_HOOK_*`` variables and a private
file, stdout read as ``{decision: allow|block|mutate, ...}``, more than 64 KiB an error.

The payload file of a one-shot run is the spawner's to write and remove (``ProcessSpec.
payload_file``: the reaper's watchdog helper writes it just before the spawn and removes it as
the hook exits, and removes it if the host dies first; without a helper the reaper uses a worker
thread): nothing here does file I/O on the event loop. A warm worker (``"worker": true``) gets
the per-event variables as its request line instead, the payload file written and removed
around the request by the spawner (``write_payload`` / ``remove_payload``: the watchdog helper,
which also removes it if the host dies first, even by SIGKILL; else a worker thread).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import msgspec
import trio

from triohooks.config.events import EVENTS, JSON_NAMES
from triohooks.config.model import CommandHandler, Hook

from .process import ProcessResult, ProcessSpec, Spawner
from .replies import (
    JSON_OUTPUT_CAP,
    RunResult,
    json_hook_environment,
    json_payload,
    read_json_reply,
)
from .runner import HookInput

#: The per-event variables of the dialect (a worker gets them in its request line).
EVENT_VAR_PREFIX = "EVERRUNS_HOOK_"
_encoder = msgspec.json.Encoder()


def json_event_name(hook: Hook, event: str) -> str:
    """The event name a JSON-dialect hook is told: as its config wrote it when that is one of
    the dialect's names (``turn_end``), else the dialect's alias of the canonical event."""
    if hook.config_event in JSON_NAMES.values():
        return hook.config_event
    return JSON_NAMES.get(event, event)


def json_data(event: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    """The ``data`` object of a JSON-dialect payload."""
    if EVENTS[event].tool_event:
        data: dict[str, Any] = {
            "tool_name": fields.get("tool"),
            "tool_call_id": fields.get("tool_call_id"),
            "arguments": fields.get("args") or {},
        }
        if event in ("post_tool", "post_tool_failure"):
            data["result"] = fields.get("result")
            data["error"] = fields.get("error")
            data["success"] = not fields.get("error")
        return data
    if event == "prompt_submit":
        return {"message": fields.get("prompt")}
    skip = {"event", "session_id", "turn_id"}
    return {k: v for k, v in fields.items() if k not in skip and v is not None}


def worker_request(
    env: Mapping[str, str], spec_env: tuple[tuple[str, str], ...]
) -> tuple[dict[str, str], bytes]:
    """Split a one-shot hook's environment for a warm worker: the worker process's own (the
    per-event ``EVERRUNS_HOOK_*`` variables taken out, the spec's ``env`` kept) and its
    request line ``{"env": {<those variables>}}``."""
    own = {name for name, _ in spec_env}
    per_event = {k: v for k, v in env.items() if k.startswith(EVENT_VAR_PREFIX) and k not in own}
    process_env = {k: v for k, v in env.items() if k not in per_event}
    return process_env, _encoder.encode({"env": per_event})


def _payload_path(directory: str) -> str:
    """A new, unguessable payload file path in ``directory`` (created exclusively later)."""
    return os.path.join(directory, f"triohooks-payload-{os.urandom(16).hex()}.json")


async def _temp_dir(offload: Offload) -> str:
    """The temporary directory; found (which writes a probe file) off the loop the first time."""
    import tempfile  # on first use: a ``triohooks fire`` that runs no hook never needs it

    return tempfile.tempdir or await offload(tempfile.gettempdir)


#: Runs a blocking call off the event loop: ``trio.to_thread.run_sync`` or ``asyncio.to_thread``.
Offload = Callable[[Callable[[], str]], Awaitable[str]]


class JsonCommandRunner:
    """Runs a JSON-dialect ``bash`` executor through the spawner. ``offload`` runs the one
    blocking call a run may need (finding the temporary directory, once) off the loop the
    runner is awaited on."""

    def __init__(
        self, spawner: Spawner, workspace: str, offload: Offload = trio.to_thread.run_sync
    ) -> None:
        self._spawner = spawner
        self._workspace = workspace
        self._offload = offload

    async def run(self, hook: Hook, hook_input: HookInput) -> RunResult:
        assert isinstance(hook.handler, CommandHandler)
        event = hook_input.event
        fields = hook_input.fields
        name = json_event_name(hook, event)
        turn_id = fields.get("turn_id") or fields.get("prompt_id")
        session_id = str(fields.get("session_id") or "")
        payload = json_payload(
            event_name=name,
            hook_id=hook.id,
            session_id=session_id,
            turn_id=turn_id,
            data=json_data(event, fields),
        )
        tool_event = EVENTS[event].tool_event

        def spec_for(path: str) -> ProcessSpec:
            env = json_hook_environment(
                base_env=hook_input.environment(),
                hook_id=hook.id,
                event_name=name,
                session_id=session_id,
                turn_id=turn_id,
                tool_name=str(fields.get("tool") or "") if tool_event else None,
                tool_call_id=fields.get("tool_call_id") if tool_event else None,
                payload_json=payload.decode(),
                payload_path=path,
                spec_env=hook.env,
            )
            stdin = b""
            if hook.worker:
                env, stdin = worker_request(env, hook.env)
            assert isinstance(hook.handler, CommandHandler)
            return ProcessSpec(
                argv=("bash", "-c", hook.handler.command),
                cwd=hook_input.cwd(self._workspace),
                env=env,
                stdin=stdin,
                timeout_s=hook.timeout_s,
                output_cap=JSON_OUTPUT_CAP,
                overflow="error",
                label=hook.name,
                worker=hook.worker,
                worker_key=hook.id,
                payload_file=None if hook.worker else (path, payload),
            )

        path = _payload_path(await _temp_dir(self._offload))
        if not hook.worker:  # the spawner writes the file with the spawn, and removes it
            return read_json_reply(await self._spawner.run(spec_for(path)))
        try:
            await self._spawner.write_payload(path, payload)
        except OSError as exc:
            error = f"cannot write the payload file {path!r}: {exc.strerror or exc}"
            return read_json_reply(ProcessResult(status="spawn_failed", error=error))
        try:
            return read_json_reply(await self._spawner.run(spec_for(path)))
        finally:
            await self._spawner.remove_payload(path)
