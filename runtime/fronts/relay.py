"""``triohooks-relay {claude|gemini|codex}``: the per-event command for agents that must spawn one.

stdin: the agent's hook input JSON. stdout and exit code: that agent's reply conventions -- the
merged answer as JSON on exit 0, which each agent reads as one hook's JSON output (so a block
is a deny in the JSON, never an exit code the agent might read as a non-blocking error).

Fast path: read ``serve.addr`` in the state dir (written by a running ``triohooks serve``: host,
port, token file), POST the input to ``/<agent>/v1/hook`` with the server's token, print the
body. It imports nothing but built-in modules (``_socket``; no json, no trio, nothing of
triohooks), and the command an adoption writes runs this file as a bare script, ``python -I
-S .../triohooks/fronts/relay.py claude``: an interpreter that skips ``site`` starts in a third
of the time (site-packages' ``.pth`` files, an editable install's finder). The console script
``triohooks-relay`` runs the same code after the usual start-up.

Slow path, with no server (no file, a refused connection, a wrong token, a busy server): the
hooks run here, with the same engine code -- in this process under the console script, in a
child interpreter with the normal import path when started bare. If that fails, the event is
answered fail-closed: a deny for events that can block, with a reason that says why; if even
that fails, exit 2 (a block to all three agents).
"""

# No ``from __future__ import annotations`` and no ``os`` here: on the fast path every import
# counts (``os`` alone is ~2.5 ms of start-up); ``posix`` is built in.
import posix
import sys

AGENTS = ("claude", "gemini", "codex")
#: What ``triohooks serve`` writes in the state dir while it listens: ``host port token-file``.
ADDR_FILE = "serve.addr"
CONNECT_TIMEOUT_S = 1.0
#: The server enforces the hooks' own timeouts; this only bounds a server that hangs.
REPLY_TIMEOUT_S = 900.0
MAX_INPUT_BYTES = 16 * 1024 * 1024
USAGE = "usage: triohooks-relay {claude|gemini|codex} < hook-input.json\n"


def _getenv(name: str, environ: dict[str, str] | None = None) -> str:
    if environ is not None:
        return environ.get(name, "")
    value = posix.environ.get(name.encode())
    return value.decode("utf-8", "surrogateescape") if value is not None else ""


def state_dir(environ: dict[str, str] | None = None) -> str:
    """The same directory as :func:`triohooks.config.paths.state_dir` on Linux, without
    importing platformdirs: ``$TRIOHOOKS_STATE_DIR``, else ``$XDG_STATE_HOME/triohooks``, else
    ``~/.local/state/triohooks`` (a test holds the two equal)."""
    explicit = _getenv("TRIOHOOKS_STATE_DIR", environ)
    if explicit:
        return explicit
    xdg = _getenv("XDG_STATE_HOME", environ)
    if xdg.strip():  # as platformdirs reads it
        return xdg.rstrip("/") + "/triohooks"
    home = _getenv("HOME", environ)
    if not home:
        import os

        home = os.path.expanduser("~")
    return home.rstrip("/") + "/.local/state/triohooks"


def _read(path: str, limit: int) -> bytes:
    fd = posix.open(path, posix.O_RDONLY | posix.O_CLOEXEC | posix.O_NONBLOCK)
    try:
        return posix.read(fd, limit)
    finally:
        posix.close(fd)


def _server() -> tuple[str, int, str] | None:
    """(host, port, token) of a running serve, or None."""
    try:
        words = _read(state_dir() + "/" + ADDR_FILE, 8192).decode().split("\n")[0]
        host, port, token_file = words.split(" ", 2)
        token = _read(token_file, 4096).decode().strip()
        return (host, int(port), token) if token else None
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def _post(host: str, port: int, token: str, agent: str, body: bytes) -> bytes | None:
    """The body of a 200 answer, or None (no server there, or it did not answer 200)."""
    import _socket

    sock = _socket.socket(_socket.AF_INET6 if ":" in host else _socket.AF_INET, _socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT_S)
        sock.connect((host, port))
        sock.settimeout(REPLY_TIMEOUT_S)
        sock.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)
        head = (
            f"POST /{agent}/v1/hook HTTP/1.1\r\nHost: {host}:{port}\r\n"
            f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode()  # ASCII (utf-8 is built in: no codec module to load)
        sock.sendall(head + body)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                return None
            data += chunk
        head_bytes, _, rest = data.partition(b"\r\n\r\n")
        lines = head_bytes.decode("utf-8", "replace").split("\r\n")
        status = lines[0].split(" ")
        if len(status) < 2 or status[1] != "200":
            return None
        length = None
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        if length is None:
            return None
        while len(rest) < length:
            chunk = sock.recv(65536)
            if not chunk:
                return None  # cut off: run the hooks here instead
            rest += chunk
        return rest[:length]
    except (OSError, ValueError):
        return None
    finally:
        sock.close()


def _run_here(agent: str, body: bytes) -> bytes:
    """No server: run the hooks in this process (imports the engine; the slow path)."""
    import json
    from pathlib import Path

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
    import json
    import os

    try:
        cwd = json.loads(body).get("cwd")
    except (ValueError, AttributeError):
        cwd = None
    return cwd if isinstance(cwd, str) and os.path.isdir(cwd) else os.getcwd()


def _fail_closed(agent: str, body: bytes, why: str) -> bytes:
    import json

    try:
        event = json.loads(body).get("hook_event_name") or ""
    except (ValueError, AttributeError):
        event = ""
    from triohooks.agents.merge import internal_error_answer

    return json.dumps(internal_error_answer(agent, str(event), why).output).encode()


def _run_elsewhere(agent: str, body: bytes) -> tuple[bytes, int]:
    """Started as a bare script: triohooks is not importable here, so the slow path runs in a
    child interpreter with the normal import path (``python -m triohooks.fronts.relay
    --here``)."""
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "triohooks.fronts.relay", "--here", agent],
        input=body,
        capture_output=True,
        check=False,
    )
    sys.stderr.buffer.write(done.stderr)
    return done.stdout.rstrip(b"\n"), done.returncode


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    here = bool(args) and args[0] == "--here"  # run the hooks in this process, no server
    if here:
        args = args[1:]
    if len(args) != 1 or args[0] not in AGENTS:
        sys.stderr.write(USAGE)
        return 1
    agent = args[0]
    body = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
    out: bytes | None = None
    if len(body) > MAX_INPUT_BYTES:
        body, here = b"{}", True  # answered fail-closed below, without a server round trip
    server = None if here else _server()
    if server is not None:
        out = _post(*server, agent, body)
    if out is None and sys.flags.no_site:
        out, code = _run_elsewhere(agent, body)
        if code != 0 or not out:
            print("triohooks internal error: the relay could not run the hooks", file=sys.stderr)
            return 2  # a block to every agent
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
