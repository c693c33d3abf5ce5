"""``triohooks serve``: the command line around :func:`.server.serve`.

Owns the arguments, the token (a ``--token-file``, or one generated under the private state
dir and kept across restarts), the relay socket's lock (one serve per user answers the
relays: ``serve.lock``, or a socket the relays recorded dead), the OTLP export (set up before
serve listens, so the first request is exported like any other), ``serve.json`` for
``watch`` and ``doctor``, the signals (SIGINT / SIGTERM: graceful shutdown; a second one:
stop now) and the exit status.

It must not serve connections (:mod:`.server` does).
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import logging
import os
import secrets
import signal
import stat
import sys
from functools import partial
from pathlib import Path
from typing import Any, Final

import msgspec
import trio

from triohooks.config.paths import (
    UnreadableFileError,
    private_dir,
    read_regular_file,
    state_dir,
    write_file_atomic,
)

from . import otel, relay
from .serve_file import SERVE_FILE, serve_info
from .server import (
    DEFAULT_HOST,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_PORT,
    SOCKET_FILE,
    HookServer,
    ServeSettings,
    serve,
)
from .wire import MAX_FRAME_BYTES

log = logging.getLogger("triohooks.server")

#: ``serve``'s exit status when the engine itself failed (an actor past its restart budget).
EXIT_ENGINE_FAILED: Final = 3
TOKEN_FILE_NAME: Final = "serve-token"
#: The lock the relay socket's owner holds, in the state dir.
LOCK_FILE: Final = "serve.lock"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def add_serve_command(sub: argparse._SubParsersAction[Any]) -> None:
    """Register ``triohooks serve`` on the CLI's subparsers."""
    from .cli import scope_args

    p = sub.add_parser("serve", help="serve the websocket event stream and remote fire protocol")
    scope_args(p)
    p.add_argument("--host", default=DEFAULT_HOST, help="address to bind (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (default: 8765; 0: any)")
    p.add_argument(
        "--token-file",
        type=Path,
        default=None,
        help="file holding the bearer token (default: generate one under the state dir)",
    )
    p.add_argument(
        "--allow-remote", action="store_true", help="allow binding a non-loopback address"
    )
    p.add_argument(
        "--max-connections",
        type=_positive_int,
        default=DEFAULT_MAX_CONNECTIONS,
        help="open websockets at once; beyond it a handshake is answered HTTP 503 (default: 256)",
    )
    p.add_argument(
        "--max-message-bytes",
        type=_positive_int,
        default=MAX_FRAME_BYTES,
        help="largest client message in bytes; bigger ones are closed with 1009 (default: 1 MiB)",
    )
    p.add_argument("--trust", action="store_true", help="trust the workspace's hooks for this run")
    p.add_argument("--no-audit", action="store_true", help="write no audit records")
    p.add_argument(
        "--idle-exit",
        type=_positive_int,
        default=None,
        metavar="SECONDS",
        help="shut down after this long with no connection and no request",
    )
    p.add_argument(
        "--auto",
        action="store_true",
        help="as started by triohooks-relay: leave at once if another serve runs, and listen on "
        "a free port if the port is taken (serve.json names it)",
    )


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {value}")
    return value


class ServeError(Exception):
    """A usage problem of ``serve``: one line on stderr, exit 1."""


def _kept_token(path: Path) -> str | None:
    """The token a previous ``serve`` generated, kept across restarts (so the
    ``$TRIOHOOKS_TOKEN`` an agent's http hooks send stays valid): only from a regular file of
    ours that nobody else may read or write, else None (a new one is generated)."""
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
            return None
        token = read_regular_file(path, 4096).decode().strip()
    except (OSError, UnreadableFileError, UnicodeDecodeError):
        return None
    return token if len(token) >= 32 else None


def load_token(token_file: Path | None) -> tuple[str, Path]:
    if token_file is not None:
        try:
            token = token_file.read_text().strip()
        except OSError as exc:
            raise ServeError(f"cannot read token file {token_file}: {exc.strerror}") from None
        if not token:
            raise ServeError(f"token file {token_file} is empty")
        return token, token_file
    path = private_dir(state_dir()) / TOKEN_FILE_NAME
    kept = _kept_token(path)
    if kept is not None:
        return kept, path
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, (token + "\n").encode())
    finally:
        os.close(fd)
    return token, path


def settings_from_args(args: argparse.Namespace) -> tuple[ServeSettings, Path]:
    if not is_loopback(args.host) and not args.allow_remote:
        raise ServeError(
            f"refusing to bind non-loopback address {args.host} without --allow-remote"
        )
    workspace: Path = args.workspace if args.workspace is not None else Path.cwd()
    if not workspace.is_dir():
        raise ServeError(f"workspace {workspace} is not a directory")
    token, token_path = load_token(args.token_file)
    engine: dict[str, Any] = {
        "workspace": workspace,
        "config_dir": args.config_dir,
        "extra_configs": list(args.configs),
        "trust": args.trust,
        "audit": not args.no_audit,
    }
    settings = ServeSettings(
        token=token,
        host=args.host,
        port=args.port,
        engine=engine,
        max_connections=args.max_connections,
        max_message_bytes=args.max_message_bytes,
        tcp_optional=args.auto,
        idle_exit_s=args.idle_exit,
    )
    return settings, token_path


def take_relay_socket() -> tuple[int, str] | None:
    """The lock on ``serve.lock`` in the private state dir and the relay socket's path, or None
    when another serve holds them (one serve per user answers the relays)."""
    import fcntl

    directory = private_dir(state_dir())
    fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd, str(directory / SOCKET_FILE)


def dead_relay_socket() -> tuple[str, str] | None:
    """The relay socket's path and why its serve is dead, when the relays recorded it so
    (:func:`.relay.remembered_dead`): a serve then takes the socket over without the lock,
    which the dead one still holds; else None."""
    directory = private_dir(state_dir())
    try:
        found = os.lstat(directory / SOCKET_FILE)
    except OSError:
        return None
    why = relay.remembered_dead(str(directory), found)
    return (str(directory / SOCKET_FILE), why) if why else None


async def _serve_until_signalled(settings: ServeSettings, token_path: Path) -> int:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        # The OTLP export (when OTEL_* say so) before serve listens: a relay finds the socket
        # as soon as it is there, and its request's span must not be lost.
        telemetry = await otel.start_serving("serve")
        try:
            await _serve_and_announce(settings, token_path, telemetry, signals)
        finally:
            await otel.close_serving(telemetry, "serve")
    print("triohooks serve: stopped", flush=True)
    return 0


async def _serve_and_announce(
    settings: ServeSettings, token_path: Path, telemetry: otel.Telemetry | None, signals: Any
) -> None:
    async with trio.open_nursery() as nursery:
        server: HookServer = await nursery.start(partial(serve, settings, telemetry=telemetry))
        announced = _announce(server, token_path)  # (before saying so: watch finds it)
        if server.port:
            print(f"triohooks serve: listening on {server.url}", flush=True)
        else:
            print("triohooks serve: no TCP port: serving the relay socket only", flush=True)
        print(f"triohooks serve: token in {token_path}", flush=True)
        if not is_loopback(settings.host):
            print(
                "triohooks serve: warning: listening beyond loopback without TLS",
                file=sys.stderr,
                flush=True,
            )
        nursery.start_soon(_on_signals, signals, server, nursery.cancel_scope)
        nursery.start_soon(_refresh_relay_client)
        try:
            await server.done.wait()
        finally:
            _withdraw(announced)
        nursery.cancel_scope.cancel()


async def _refresh_relay_client() -> None:
    """The native relay client rebuilt when an older triohooks built it (:func:`.relay_build.
    refresh`), in a worker thread while serve answers; said in serve's log. Never fatal: the
    catch-alls go on with what they have."""
    from . import relay_build

    try:
        said = await trio.to_thread.run_sync(relay_build.refresh)
    except Exception:  # our own bug: logged, serve goes on
        log.exception("serve: could not bring the relay client up to date")
        return
    if said is not None:
        log.warning("serve: %s", said)


def _announce(server: HookServer, token_path: Path) -> Path | None:
    """Write ``serve.json`` (host, port, token file, pid, relay socket) in the state dir, for
    ``watch`` and ``doctor``; None if it cannot be written."""
    listening = server.port != 0  # (0: no TCP port could be had; the relay socket only)
    info = {
        "host": server.host,
        "port": server.port if listening else None,
        "token_file": str(token_path.resolve()),
        "pid": os.getpid(),
        "url": server.url if listening else None,
        "socket": server.settings.agent_socket,
    }
    try:
        directory = private_dir(state_dir())
        path = directory / SERVE_FILE
        write_file_atomic(path, msgspec.json.encode(info), new_mode=0o600)
    except OSError as exc:
        print(f"triohooks serve: warning: cannot write {SERVE_FILE}: {exc}", file=sys.stderr)
        return None
    return path


def _withdraw(path: Path | None) -> None:
    """Remove ``serve.json`` if it is still ours (another serve may have replaced it)."""
    if path is not None and (serve_info(path.parent) or {}).get("pid") == os.getpid():
        with contextlib.suppress(OSError):
            path.unlink()


async def _on_signals(signals: Any, server: HookServer, hard_stop: trio.CancelScope) -> None:
    async for signum in signals:
        if server.shutting_down:  # a second signal: stop now (the post-queue drain still runs)
            print("triohooks serve: stopping now", file=sys.stderr, flush=True)
            hard_stop.cancel()
            return
        name = signal.Signals(signum).name
        print(f"triohooks serve: {name}: shutting down", file=sys.stderr, flush=True)
        server.shutdown()


def cmd_serve(args: argparse.Namespace) -> int:
    """``triohooks serve``: 0 after a graceful shutdown, 1 for usage or config errors."""
    try:
        settings, token_path = settings_from_args(args)
    except ServeError as exc:
        print(f"triohooks: {exc}", file=sys.stderr)
        return 1
    held = take_relay_socket()
    dead = dead_relay_socket() if held is None else None
    if held is None and args.auto and dead is None:
        print("triohooks serve: another serve answers the relays; leaving", flush=True)
        return 0
    if dead is not None:
        # The relays found the serve holding the socket dead: they run every hook themselves
        # until another serve answers. It keeps serve.lock (a stopped process holds it), so
        # this one is found by the socket alone.
        print(f"triohooks serve: {dead[1]}; taking the relay socket over", flush=True)
        settings = msgspec.structs.replace(settings, agent_socket=dead[0])
    elif held is None:
        print(
            "triohooks serve: warning: another serve holds the relay socket; this one answers "
            "websocket and http clients only",
            file=sys.stderr,
            flush=True,
        )
    else:
        settings = msgspec.structs.replace(settings, agent_socket=held[1])
    try:
        return trio.run(_serve_until_signalled, settings, token_path)
    except Exception as exc:
        from .cli import describe_failure, expected_error

        if expected_error(exc) is not None:
            raise  # a config error: the CLI reports it (exit 1)
        # The engine failed (an actor past its restart budget, a bug): every connection was
        # closed, so no agent is left waiting on an answer it will not get.
        print(
            f"triohooks serve: engine failed, stopped serving: {describe_failure(exc)}",
            file=sys.stderr,
        )
        return EXIT_ENGINE_FAILED
