"""A real ``serve`` in the test's own trio run, on 127.0.0.1 and port 0, shared by the server
tests."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import msgspec
import trio
from trio_websocket import ConnectionRejected, wrap_client_stream

from triohooks.fronts.server import HookServer, ServeSettings, serve


@asynccontextmanager
async def running_server(
    tmp_path: Path, token: str, *, engine: dict[str, Any] | None = None, **settings: Any
) -> AsyncIterator[HookServer]:
    """Serve a trusted workspace ``tmp_path/ws`` with config dir ``tmp_path/g`` (both made if
    missing; ``engine`` adds to or overrides those engine options); ``settings`` override the
    :class:`ServeSettings` fields. Shut down gracefully on exit."""
    ws, g = tmp_path / "ws", tmp_path / "g"
    ws.mkdir(exist_ok=True)
    g.mkdir(exist_ok=True)
    options = {"workspace": ws, "config_dir": g, "trust": True, "state_dir": tmp_path / "state"}
    base = ServeSettings(token=token, port=0, engine={**options, **(engine or {})}, fire_grace_s=5)
    async with trio.open_nursery() as nursery:
        server: HookServer = await nursery.start(serve, msgspec.structs.replace(base, **settings))
        try:
            yield server
        finally:
            server.shutdown()


async def handshake(server: HookServer, token: str) -> ConnectionRejected | None:
    """A websocket handshake with ``token`` on a stream we close at once: the server's
    rejection (status, headers, body), or None when it accepted."""
    auth = [(b"Authorization", f"Bearer {token}".encode())]
    found: ConnectionRejected | None = None
    async with await trio.open_tcp_stream(server.host, server.port) as stream:
        try:
            async with trio.open_nursery() as nursery:
                await wrap_client_stream(nursery, stream, server.host, "/", extra_headers=auth)
                nursery.cancel_scope.cancel()
        except* ConnectionRejected as group:
            rejected = group.exceptions[0]
            assert isinstance(rejected, ConnectionRejected)
            found = rejected
    return found


async def claude_http_hook(host: str, port: int, token: str, body: bytes) -> Any:
    """One of Claude Code's http hooks: ``POST /claude/v1/hook`` with the bearer token (and no
    environment), on a connection of its own; the JSON answer of a 200."""
    async with await trio.open_tcp_stream(host, port) as stream:
        head = (
            f"POST /claude/v1/hook HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}"
            f"\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n"
        ).encode()
        await stream.send_all(head + body)
        data = b""
        while chunk := await stream.receive_some():
            data += chunk
    head_bytes, _, rest = data.partition(b"\r\n\r\n")
    assert head_bytes.startswith(b"HTTP/1.1 200"), data
    return json.loads(rest)
