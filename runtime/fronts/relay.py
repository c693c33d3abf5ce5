"""``triohooks-relay {claude|gemini|codex}``: the per-event command for agents that must spawn one.

stdin: the agent's hook input JSON. stdout and exit code: that agent's reply conventions -- the
merged answer as JSON on exit 0, which each agent reads as one hook's JSON output (so a block
is a deny in the JSON, never an exit code the agent might read as a non-blocking error).

Fast path (standard library only: no trio, no msgspec, nothing of triohooks but this module):
read ``serve.json`` in the state dir (written by a running ``triohooks serve``), POST the input
to ``/<agent>/v1/hook`` with the server's token, print the body. With no server (no file, a
refused connection, a wrong token, a busy server) it runs the hooks itself, in this process,
with the same engine code (slow path: it imports the engine). If even that fails, the event is
answered fail-closed: a deny for events that can block, with a reason that says why.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path
from typing import Any, Final

AGENTS: Final = ("claude", "gemini", "codex")
#: What ``triohooks serve`` writes in the state dir while it listens.
SERVE_FILE: Final = "serve.json"
CONNECT_TIMEOUT_S: Final = 1.0
#: The server enforces the hooks' own timeouts; this only bounds a server that hangs.
REPLY_TIMEOUT_S: Final = 900.0
MAX_INPUT_BYTES: Final = 16 * 1024 * 1024
USAGE: Final = "usage: triohooks-relay {claude|gemini|codex} < hook-input.json\n"


def state_dir(environ: dict[str, str] | os._Environ[str] | None = None) -> Path:
    """The same directory as :func:`triohooks.config.paths.state_dir` on Linux, without
    importing platformdirs: ``$TRIOHOOKS_STATE_DIR``, else ``$XDG_STATE_HOME/triohooks``, else
    ``~/.local/state/triohooks`` (a test holds the two equal)."""
    env = os.environ if environ is None else environ
    explicit = env.get("TRIOHOOKS_STATE_DIR")
    if explicit:
        return Path(explicit)
    xdg = env.get("XDG_STATE_HOME", "").strip()
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path(os.path.expanduser("~/.local/state"))
    return base / "triohooks"


def _server() -> tuple[str, int, str] | None:
    """(host, port, token) of a running serve, or None."""
    try:
        with open(state_dir() / SERVE_FILE, "rb") as f:
            info = json.loads(f.read(65536))
        host, port = str(info["host"]), int(info["port"])
        with open(info["token_file"], "rb") as f:
            token = f.read(4096).decode().strip()
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return (host, port, token) if token else None


def _post(host: str, port: int, token: str, agent: str, body: bytes) -> bytes | None:
    """The body of a 200 answer, or None (no server there, or it did not answer 200)."""
    try:
        sock = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S)
    except OSError:
        return None
    try:
        sock.settimeout(REPLY_TIMEOUT_S)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        head = (
            f"POST /{agent}/v1/hook HTTP/1.1\r\nHost: {host}:{port}\r\n"
            f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode("latin-1")
        sock.sendall(head + body)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                return None
            data += chunk
        head_bytes, _, rest = data.partition(b"\r\n\r\n")
        lines = head_bytes.decode("latin-1").split("\r\n")
        status = lines[0].split(" ")
        if len(status) < 2 or status[1] != "200":
            return None
        length = None
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        while length is None or len(rest) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            rest += chunk
        if length is not None and len(rest) < length:
            return None  # cut off: run the hooks here instead
        return rest if length is None else rest[:length]
    except (OSError, ValueError):
        return None
    finally:
        sock.close()


def _run_here(agent: str, body: bytes) -> bytes:
    """No server: run the hooks in this process (imports the engine; the slow path)."""
    import trio

    from triohooks.engine.hook_engine import HookEngine

    cwd = _payload_cwd(body)

    async def main() -> bytes:
        async with HookEngine.open(workspace=Path(cwd)) as engine:
            result = await engine.agent_hook(agent, body, adopted_only=True)
        for warning in result.answer.warnings:
            print(f"triohooks-relay: warning: {warning}", file=sys.stderr)
        return json.dumps(result.answer.output).encode()

    return trio.run(main)


def _payload_cwd(body: bytes) -> str:
    try:
        cwd = json.loads(body).get("cwd")
    except (ValueError, AttributeError):
        cwd = None
    return cwd if isinstance(cwd, str) and os.path.isdir(cwd) else os.getcwd()


def _fail_closed(agent: str, body: bytes, why: str) -> bytes:
    try:
        event = json.loads(body).get("hook_event_name") or ""
    except (ValueError, AttributeError):
        event = ""
    from triohooks.agents.merge import internal_error_answer

    return json.dumps(internal_error_answer(agent, str(event), why).output).encode()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in AGENTS:
        sys.stderr.write(USAGE)
        return 1
    agent = args[0]
    body = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
    out: Any = None
    if len(body) > MAX_INPUT_BYTES:
        why = f"the hook input is over {MAX_INPUT_BYTES} bytes"
        print(f"triohooks-relay: {why}", file=sys.stderr)
        sys.stdout.buffer.write(_fail_closed(agent, b"{}", why) + b"\n")
        return 0
    server = _server()
    if server is not None:
        out = _post(*server, agent, body)
    if out is None:
        try:
            out = _run_here(agent, body)
        except Exception as exc:
            why = f"{type(exc).__name__}: {exc}".splitlines()[0]
            print(f"triohooks-relay: internal error: {why}", file=sys.stderr)
            try:
                out = _fail_closed(agent, body, why)
            except Exception:
                print(f"triohooks internal error: {why}", file=sys.stderr)
                return 2
    sys.stdout.buffer.write(out + b"\n")
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
