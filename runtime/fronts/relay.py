"""``triohooks-relay AGENT``: the per-event command an adopted agent runs.

stdin: the agent's hook input JSON. stdout and exit code: that agent's reply conventions -- the
merged answer as JSON on exit 0, which each agent reads as one hook's JSON output (so a block
is a deny in the JSON, never an exit code the agent might read as a non-blocking error).

Fast path: the user's own ``triohooks serve``, over its unix socket in the private state dir
(``serve.sock``). The relay believes only a server that is the user's: the state dir must be a
directory of the user's that no one else can enter, the socket a socket of the user's in it,
and (where the OS tells: ``SO_PEERCRED`` on Linux, ``LOCAL_PEERCRED`` on macOS) the process at
the other end must run as the user. Nothing secret is sent: the kernel vouches for both ends.
The request carries the agent session's whole environment (the hooks get it, as they would
from the agent) and the hook input. The server acknowledges at once (``102 Processing``) and
answers when the hooks are done.

It imports nothing but built-in modules (``posix``, ``_socket``, ``_stat``; no json, no trio,
nothing of triohooks). Catch-alls run the native client (``relay_client.c``, built at install by
:mod:`triohooks.fronts.relay_build`), which does this fast path itself and hands everything else
over to this module, saying what it saw (``--handed``, :data:`HANDED`); where it is not built,
they start this module precompiled (``python -I -S -c RELAY_BOOT .../triohooks/fronts claude``,
:data:`triohooks.agents.spec.RELAY_BOOT`): an interpreter that skips ``site`` starts in a third
of the time, and the bytecode install wrote spares the compile. The console script
``triohooks-relay`` runs the same code after the usual start-up (what a project-scope catch-all
runs where the user has no native client).

Liveness and deadlines (docs/agents.md, "The relay protocol"): the request names relay protocol
:data:`PROTOCOL` in its path; serve acknowledges it at once and then says :data:`BEAT` (an HTTP
``102 Processing``) every :data:`HEARTBEAT_S` while the hooks run, then answers. Silence for
:data:`SILENCE_S` -- no acknowledgement, or no heartbeat after it -- is a dead serve (stopped,
Ctrl-Z, hung): the relay runs the hooks itself, and records that serve in :data:`DEAD_NAME`
(:func:`remember_dead`) so later events skip it without paying the silence again
(:func:`remembered_dead` says when the record ends). A serve that answers the path with 404
speaks an older protocol, without heartbeats: it is treated the same way, since a hang of it
could not be told from slow hooks. ``--timeout S`` is the timeout the agent gives the catch-all:
an event serve is still working on (heartbeats coming) :data:`DEADLINE_MARGIN_S` before it is
denied, saying so -- the agent would otherwise kill the relay and go on.

Slow path, with no server (no socket, a refused connection, one that is not the user's): the
relay starts the user's ``serve`` in the background (detached, per user, one for all projects;
it exits after an idle half hour; with an environment of its own, :func:`serve_environ`, never
the starting session's) so that only this first call pays, and runs the hooks here,
with the same engine code, in this process. Started bare, it first makes the installed
triohooks importable (:func:`import_installed`) and nothing else: never the agent's cwd, never
what the agent's environment says of Python (``PYTHONPATH`` ...). If that fails, the event is
answered fail-closed: a deny for events that can block, with a reason that says why; if even
that fails, exit 2 with the reason on stderr (a block to every agent).

Isolation (docs/security.md): every Python process triohooks starts -- this fallback, the
auto-started ``serve``, a service unit's -- runs ``-I`` (:func:`isolated_command`): neither the
cwd nor a script's directory on ``sys.path``, ``PYTHON*`` variables ignored, no user site. A
repository is code the user has not trusted; a ``triohooks/`` package, a ``sitecustomize.py``
or a ``.pth`` file in it must never be imported by the process that guards it.
"""

# No ``from __future__ import annotations`` and no ``os`` here: on the fast path every import
# counts (``os`` alone is ~2.5 ms of start-up); ``posix`` is built in.
import posix
import sys

AGENTS = ("claude", "gemini", "codex", "qwen", "copilot", "cursor", "agy")
#: The path name of ``triohooks fire``'s requests to serve (``/fire/v3/hook``), beside the agents'.
FIRE_PATH = "fire"
#: The unix socket ``triohooks serve`` listens on for relays, in the state dir.
SOCKET_NAME = "serve.sock"
#: When the relay last started a ``serve`` (its mtime), in the state dir.
STARTED_NAME = "serve.started"
CONNECT_TIMEOUT_S = 0.5
#: The relay protocol, named in the request's path (``/<agent>/v3/hook``): v1, a heartbeat, and
#: the catch-all's ``--event`` in the query (serve adds it to the hook input: :func:`with_event`).
#: A serve that does not know it answers 404 without running anything.
PROTOCOL = "v3"
#: The acknowledgement and each heartbeat, byte for byte: an HTTP/1.1 interim response (27 bytes).
BEAT = b"HTTP/1.1 102 Processing\r\n\r\n"
#: serve sends :data:`BEAT` this often while the hooks of a request run.
HEARTBEAT_S = 0.5
#: A serve that took the request and then said nothing for this long -- no acknowledgement, no
#: heartbeat, no answer -- is dead (stopped, Ctrl-Z, hung): the hooks run here instead.
SILENCE_S = 2.0
#: The record of a dead serve (its socket, pid and why), in the state dir: later events skip it.
DEAD_NAME = "serve.dead"
#: A record of a dead serve holds at most this long (then one event asks that serve again); it
#: ends sooner when its socket is replaced (a new serve) or its process is gone.
REMEMBER_S = 600.0
#: Without ``--timeout``: the shortest default any of the agents gives a hook (Gemini CLI).
DEFAULT_TIMEOUT_S = 60.0
#: Kept between the relay's own deadline and the agent's timeout: time to print the answer.
DEADLINE_MARGIN_S = 2.0
#: A ``serve`` is started at most this often (a serve that cannot start is not retried per call).
START_EVERY_S = 30.0
#: An auto-started ``serve`` exits after this long without a request.
IDLE_EXIT_S = 1800
#: The ``triohooks`` arguments of the ``serve`` the relay starts.
AUTO_SERVE_ARGS = ("serve", "--auto", "--idle-exit", str(IDLE_EXIT_S))
#: An auto-started serve's log (``serve.log`` in the state dir) starts afresh past this.
MAX_LOG_BYTES = 1024 * 1024
#: Set (to anything) in the agent's environment: the relay never starts a ``serve``.
NO_START_VAR = "TRIOHOOKS_NO_AUTOSTART"
MAX_INPUT_BYTES = 16 * 1024 * 1024
MAX_ANSWER_BYTES = 16 * 1024 * 1024
USAGE = (
    "usage: triohooks-relay {claude|gemini|codex|qwen|copilot|cursor|agy} [--event NAME] "
    "[--timeout SECONDS] [--scope user|project] < hook-input.json\n"
)
#: ``--scope``: the install scope of the catch-all that runs the relay (whose hooks it answers
#: for, when the agent has catch-alls at both: :mod:`triohooks.agents.shares`).
SCOPES = ("user", "project")
#: The one header that tells where the environment ends and the hook input begins in a body.
ENV_LENGTH_HEADER = "X-Triohooks-Env-Length"
#: Set in the environment of every hook a relay has run: a hook that runs the relay again
#: (a catch-all copied into the adopted hooks) is a loop, answered as such.
LOOP_VAR = "TRIOHOOKS_RELAY"

_S_IFMT = 0o170000
_S_IFDIR = 0o040000
_S_IFSOCK = 0o140000
_S_IFREG = 0o100000


def _getenv(name: str, environ: dict[str, str] | None = None) -> str:
    if environ is not None:
        return environ.get(name, "")
    value = posix.environ.get(name.encode())
    return value.decode("utf-8", "surrogateescape") if value is not None else ""


def state_dir(environ: dict[str, str] | None = None) -> str:
    """The same directory as :func:`triohooks.config.paths.state_dir` on Linux, without
    importing platformdirs: ``$TRIOHOOKS_STATE_DIR``, else ``$XDG_STATE_HOME/triohooks``, else
    ``~/.local/state/triohooks`` (a test holds the two equal). On macOS a platformdirs state
    dir is elsewhere (~/Library/Application Support), so :func:`main` reads it from there."""
    explicit = _getenv("TRIOHOOKS_STATE_DIR", environ)
    if explicit:
        return explicit
    home = _getenv("HOME", environ)
    if not home:
        import pwd

        home = pwd.getpwuid(posix.getuid()).pw_dir
    if sys.platform == "darwin":
        return home.rstrip("/") + "/Library/Application Support/triohooks"
    xdg = _getenv("XDG_STATE_HOME", environ)
    if xdg.strip():  # as platformdirs reads it
        return xdg.rstrip("/") + "/triohooks"
    return home.rstrip("/") + "/.local/state/triohooks"


# -- whose server ------------------------------------------------------------------------------


def private_socket(directory: str) -> "tuple[str | None, str]":
    """``(path, "")`` of the relay socket in ``directory`` when only the user can have put it
    there -- the directory is the user's, no one else may write in it, and its parent does not
    let others replace it -- and it is a socket of the user's; else ``(None, why)``, why being
    "" when there is simply no server."""
    path, why, _ = serve_socket(directory)
    return path, why


def private_dir(directory: str) -> "str | None":
    """ "" when ``directory`` is a directory of the user's that no one else may write in, whose
    parent does not let others replace it; None when it is not there; else why not. What the
    relay socket (:func:`serve_socket`) and the native client's binary
    (:mod:`triohooks.fronts.relay_build`) are believed for."""
    me = posix.getuid()
    try:
        st = posix.lstat(directory)
    except OSError:
        return None
    if st.st_mode & _S_IFMT != _S_IFDIR or st.st_uid != me or st.st_mode & 0o022:
        return f"{directory} is not a directory only you can write in"
    parent = directory.rstrip("/").rpartition("/")[0] or "/"
    try:
        up = posix.stat(parent)
    except OSError:
        return f"{parent} cannot be checked"
    if (up.st_mode & 0o002 and not up.st_mode & 0o1000) or (up.st_mode & 0o020 and up.st_uid != me):
        return f"{parent} lets others replace {directory}"
    return ""


def serve_socket(directory: str) -> "tuple[str | None, str, posix.stat_result | None]":
    """:func:`private_socket`, and the socket's own ``lstat`` (which serve it is: the key of
    :func:`remembered_dead`) when it is one to use."""
    me = posix.getuid()
    why = private_dir(directory)
    if why is None or why:
        return None, why or "", None
    path = directory + "/" + SOCKET_NAME
    try:
        st = posix.lstat(path)
    except OSError:
        return None, "", None
    if st.st_mode & _S_IFMT != _S_IFSOCK or st.st_uid != me:
        return None, f"{path} is not a socket of yours", None
    return path, "", st


def peer_uid(sock: object) -> "int | None":
    """The uid of the process at the other end of a connected unix socket, where the OS tells
    (Linux ``SO_PEERCRED``, macOS ``LOCAL_PEERCRED``); None where it does not (then only the
    private directory vouches for the server). Used by both ends: the relay checks the
    server, ``serve`` checks the relay."""
    import _socket

    getsockopt = sock.getsockopt  # type: ignore[attr-defined]
    peercred = getattr(_socket, "SO_PEERCRED", None)
    if peercred is not None:  # Linux: struct ucred {pid_t pid; uid_t uid; gid_t gid}
        data = getsockopt(_socket.SOL_SOCKET, peercred, 12)
        return int.from_bytes(data[4:8], sys.byteorder)
    if sys.platform == "darwin":  # struct xucred {u_int cr_version; uid_t cr_uid; ...}
        local_peercred = getattr(_socket, "LOCAL_PEERCRED", 1)
        data = getsockopt(0, local_peercred, 76)  # SOL_LOCAL = 0
        return int.from_bytes(data[4:8], sys.byteorder)
    return None


def peer_pid(sock: object) -> "int | None":
    """The pid of the process listening at the other end of a connected unix socket, where the
    OS tells (Linux ``SO_PEERCRED``, macOS ``LOCAL_PEERPID``); None elsewhere. Read only when a
    serve is found dead (:func:`remember_dead`), never on the fast path."""
    import _socket

    getsockopt = sock.getsockopt  # type: ignore[attr-defined]
    try:
        peercred = getattr(_socket, "SO_PEERCRED", None)
        if peercred is not None:  # struct ucred {pid_t pid; ...}
            data = getsockopt(_socket.SOL_SOCKET, peercred, 12)
        elif sys.platform == "darwin":  # SOL_LOCAL = 0, LOCAL_PEERPID = 2: a pid_t
            data = getsockopt(0, getattr(_socket, "LOCAL_PEERPID", 2), 4)
        else:
            return None
    except OSError:
        return None
    pid = int.from_bytes(data[0:4], sys.byteorder)
    return pid if pid > 0 else None


# -- talking to serve --------------------------------------------------------------------------


#: Why a serve is dead, by the word its record (:data:`DEAD_NAME`) keeps.
DEAD_REASONS = {
    "unacknowledged": f"triohooks serve did not acknowledge within {SILENCE_S:g} s",
    "silent": f"triohooks serve stopped answering (no heartbeat for {SILENCE_S:g} s)",
    "older": f"triohooks serve does not speak relay protocol {PROTOCOL} (older: restart it)",
}


class _Dead(Exception):
    """serve took the connection and then fell silent for :data:`SILENCE_S`, or does not speak
    :data:`PROTOCOL`: the hooks run here, and that serve is remembered (:func:`remember_dead`)."""

    def __init__(self, reason: str, pid: "int | None") -> None:
        super().__init__(DEAD_REASONS[reason])
        self.reason = reason
        self.pid = pid


class _TooLate(Exception):
    """serve is alive (heartbeats) but did not answer before the relay's deadline."""


def _environment_block() -> bytes:
    entries = [k + b"=" + v for k, v in posix.environ.items()]
    return b"\0".join([*entries, LOOP_VAR.encode() + b"=1"])


def _receive(sock: object, deadline: float, heard: bool) -> bytes:
    """The next bytes from serve: within :data:`SILENCE_S` (else :class:`_Dead`; ``heard``:
    whether it acknowledged) and before ``deadline`` (else :class:`_TooLate`)."""
    import time

    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise _TooLate()
    sock.settimeout(min(SILENCE_S, remaining))  # type: ignore[attr-defined]
    try:
        chunk: bytes = sock.recv(65536)  # type: ignore[attr-defined]
    except TimeoutError:
        if remaining <= SILENCE_S:
            raise _TooLate() from None
        raise _Dead("silent" if heard else "unacknowledged", peer_pid(sock)) from None
    if not chunk:
        raise OSError("the server closed the connection")
    return chunk


def _read_head(sock: object, data: bytes, deadline: float, heard: bool) -> "tuple[bytes, bytes]":
    while b"\r\n\r\n" not in data:
        data += _receive(sock, deadline, heard)
        if len(data) > 65536:
            raise OSError("the server's answer head is too large")
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def hook_path(agent: str, scope: str = "", event: str = "", more: str = "") -> str:
    """The request's path: ``/<agent>/v3/hook``, with the catch-all's scope and event (each
    when said) as its query, ``?scope=S&event=E`` (docs/agents.md, "The relay protocol"), then
    ``more`` (``fire``'s fields, encoded already: :func:`quote_path`)."""
    said = [f"{name}={value}" for name, value in (("scope", scope), ("event", event)) if value]
    query = "&".join([*said, more] if more else said)
    return f"/{agent}/{PROTOCOL}/hook" + ("?" + query if query else "")


#: Bytes a path keeps as they are in :func:`quote_path` (the rest is ``%XX``).
_PATH_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/._-~")


def quote_path(path: str) -> str:
    """``path`` percent-encoded for a query (its bytes as the file system has them; serve
    reads it with ``urllib.parse.unquote_to_bytes``)."""
    raw = path.encode("utf-8", "surrogateescape")
    return "".join(chr(b) if b in _PATH_SAFE else f"%{b:02X}" for b in raw)


def ask_server(
    path: str,
    agent: str,
    body: bytes,
    deadline: float,
    scope: str = "",
    event: str = "",
    more: str = "",
) -> bytes:
    """The body of the server's 200 answer for the hook input ``body`` (serve adds ``event``
    to it). Raises :class:`OSError` (no usable server: the hooks run here), :class:`_Dead` or
    :class:`_TooLate`."""
    import _socket

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT_S)
        sock.connect(path)
        uid = peer_uid(sock)
        if uid is not None and uid != posix.getuid():
            raise PermissionError(f"{path} is served by uid {uid}, not by you")
        env = _environment_block()
        head = (
            f"POST {hook_path(agent, scope, event, more)} HTTP/1.1\r\n"
            "Host: triohooks\r\n"
            f"Content-Type: application/json\r\n{ENV_LENGTH_HEADER}: {len(env)}\r\n"
            f"Content-Length: {len(env) + len(body)}\r\nConnection: close\r\n\r\n"
        ).encode()
        sock.settimeout(SILENCE_S)
        try:
            sock.sendall(head + env + body)
        except TimeoutError:  # a stopped serve whose socket buffer is full
            raise _Dead("unacknowledged", peer_pid(sock)) from None
        heard, rest = False, b""
        while True:  # the acknowledgement, then a heartbeat every HEARTBEAT_S, then the answer
            status_head, rest = _read_head(sock, rest, deadline, heard)
            if status_head + b"\r\n\r\n" != BEAT:
                break
            heard = True
        lines = status_head.decode("latin-1").split("\r\n")
        status = lines[0].split(" ")
        if not heard and len(status) >= 2 and status[1] == "404":
            raise _Dead("older", peer_pid(sock))
        if len(status) < 2 or status[1] != "200":
            raise OSError(f"the server answered {lines[0]!r}")
        length = -1
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length" and value.strip().isdigit():
                length = int(value.strip())
        if not 0 <= length <= MAX_ANSWER_BYTES:
            raise OSError("the server's answer has no usable Content-Length")
        while len(rest) < length:
            rest += _receive(sock, deadline, True)
        return rest[:length]
    finally:
        sock.close()


# -- a dead serve, remembered ------------------------------------------------------------------


def remembered_dead(directory: str, found: "posix.stat_result") -> str:
    """Why the serve whose socket is ``found`` (its ``lstat``) is dead, as a relay recorded it
    in :data:`DEAD_NAME` in ``directory``: one line ``DEV INO CTIME_NS PID REASON`` (the
    socket's identity, serve's pid or 0, a word of :data:`DEAD_REASONS`). "" when there is no
    record, or it names another socket (a new serve took the socket), a process that is gone,
    or is older than :data:`REMEMBER_S` -- such a record is removed. Fast path: one failed
    ``open`` when there is none."""
    record = directory + "/" + DEAD_NAME
    try:
        fd = posix.open(record, posix.O_RDONLY | posix.O_NOFOLLOW | posix.O_NONBLOCK)
    except OSError:
        return ""
    try:
        st = posix.fstat(fd)
        if st.st_mode & _S_IFMT != _S_IFREG or st.st_uid != posix.getuid():
            return ""  # not a record a relay wrote (and not ours to remove)
        fields = posix.read(fd, 256).split()
    finally:
        posix.close(fd)
    import time

    age = time.time() - st.st_mtime
    valid = (
        len(fields) == 5
        and all(f.isdigit() for f in fields[:4])
        and fields[4].decode("ascii", "replace") in DEAD_REASONS
        and [int(f) for f in fields[:3]] == [found.st_dev, found.st_ino, found.st_ctime_ns]
        and 0 <= age < REMEMBER_S
    )
    pid = int(fields[3]) if valid else 0
    if valid and pid:
        try:
            posix.kill(pid, 0)  # still there (EPERM: the pid is another user's now: gone)
        except OSError:
            valid = False
    if not valid:
        try:
            posix.unlink(record)
        except OSError:
            pass
        return ""
    who = f" (pid {pid})" if pid else ""
    reason = DEAD_REASONS[fields[4].decode()]
    return f"{reason}{who}, {age:.0f} s ago: {directory}/{DEAD_NAME} remembers it"


def remember_dead(
    directory: str, found: "posix.stat_result", reason: str, pid: "int | None"
) -> None:
    """Record the serve whose socket is ``found`` as dead (:func:`remembered_dead` reads it):
    written whole (a file of its own, 0600, renamed into place). Best effort: said on stderr
    when it cannot be written (the next event then asks that serve again)."""
    line = f"{found.st_dev} {found.st_ino} {found.st_ctime_ns} {pid or 0} {reason}\n"
    temporary = f"{directory}/{DEAD_NAME}.{posix.getpid()}"
    try:
        fd = posix.open(
            temporary, posix.O_WRONLY | posix.O_CREAT | posix.O_TRUNC | posix.O_NOFOLLOW, 0o600
        )
        try:
            posix.write(fd, line.encode())
        finally:
            posix.close(fd)
        posix.rename(temporary, directory + "/" + DEAD_NAME)
    except OSError as exc:
        print(f"triohooks-relay: cannot record the dead serve: {exc}", file=sys.stderr)


def start_server(directory: str) -> None:
    """Start the user's ``serve`` in the background (detached: its own session, no terminal,
    output to ``serve.log`` in the state dir), at most every :data:`START_EVERY_S`. It serves
    every project and exits when idle; a second one started meanwhile finds the first and
    leaves. Best effort: the caller runs the hooks itself either way."""
    import os
    import subprocess
    import time

    if _getenv(NO_START_VAR):
        return
    marker = os.path.join(directory, STARTED_NAME)
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        if time.time() - os.stat(marker).st_mtime < START_EVERY_S:
            return
    except FileNotFoundError:
        pass
    except OSError:
        return
    try:
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        os.close(fd)
        os.utime(marker)
        log_path = os.path.join(directory, "serve.log")
        try:  # a log that grew past its bound starts afresh
            fresh = os.stat(log_path).st_size > MAX_LOG_BYTES
        except FileNotFoundError:
            fresh = False
        log = os.open(
            log_path,
            os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | (os.O_TRUNC if fresh else 0),
            0o600,
        )
    except OSError:
        return
    try:
        subprocess.Popen(
            isolated_command(*AUTO_SERVE_ARGS),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            cwd=directory,
            env=serve_environ(posix_environ()),
            start_new_session=True,
            close_fds=True,
        )
    except OSError:
        pass
    finally:
        os.close(log)


# -- isolation ---------------------------------------------------------------------------------


def package_root() -> "str | None":
    """The directory this triohooks was installed into (``site-packages``, a user's site, a
    ``--target``): the parent of the ``triohooks`` package holding this file. None for an
    editable checkout, whose files are not laid out as the package (its import hook comes
    from ``site``)."""
    fronts = __file__.rpartition("/")[0]
    package = fronts.rpartition("/")[0]
    if fronts.rpartition("/")[2] != "fronts" or package.rpartition("/")[2] != "triohooks":
        return None
    return package.rpartition("/")[0] or "/"


def import_installed() -> None:
    """In a relay started bare (``python -I -S relay.py``): make the installed triohooks and
    its dependencies importable, as the interpreter's own start would have without ``-S``
    (``site.main()``: its site-packages and their ``.pth`` files; ``-I`` keeps the user site,
    ``PYTHONPATH`` and the cwd out), plus :func:`package_root`. This file's own directory,
    which Python put first on ``sys.path``, is taken off: its modules are triohooks', not
    top-level names. A no-op when ``site`` already ran."""
    if not sys.flags.no_site:
        return
    fronts = __file__.rpartition("/")[0]
    sys.path[:] = [p for p in sys.path if p != fronts]
    import site

    site.main()
    root = package_root()
    if root is not None and root not in sys.path:
        sys.path.append(root)


def isolated_command(*args: str) -> "list[str]":
    """``python -m triohooks ARGS`` as every process triohooks starts runs it: with ``-I``
    (no cwd or script directory on ``sys.path``, ``PYTHON*`` variables ignored, no user
    site), the installed triohooks found where :func:`package_root` says when ``-I`` alone
    would not find it (a user-site install)."""
    import site

    root = package_root()
    if root is None or root in site.getsitepackages():
        return [sys.executable, "-I", "-m", "triohooks", *args]
    boot = (
        f"import runpy, sys; sys.path.append({root!r}); "
        "runpy.run_module('triohooks', run_name='__main__', alter_sys=True)"
    )
    return [sys.executable, "-I", "-c", boot, *args]


#: What the auto-started ``serve`` keeps of the starting session's environment: who the user
#: is and where triohooks' files are (serve must find the config, state and cache dirs the
#: relay found), and triohooks' own settings (``TRIOHOOKS_*``, but the per-process markers
#: below and the http transport's token).
SERVE_KEEPS = (
    "HOME",
    "USER",
    "LOGNAME",
    "XDG_CONFIG_HOME",
    "XDG_STATE_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_RUNTIME_DIR",
)
#: ``TRIOHOOKS_*`` variables that are not settings: markers of one process (a hook run, a
#: warm worker, a hook the relay ran) and the token an agent's http hooks send.
SERVE_DROPS = ("TRIOHOOKS_RUN", "TRIOHOOKS_WORKER", LOOP_VAR, "TRIOHOOKS_TOKEN")
#: The auto-started ``serve``'s ``PATH``: the system's directories, as a user service gets
#: them -- never the session's, which may name a project's own ``bin/``.
SERVE_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"


def serve_environ(environ: "dict[str, str]") -> "dict[str, str]":
    """The environment of the ``serve`` a relay starts: :data:`SERVE_KEEPS` and triohooks'
    settings from the starting session's ``environ``, :data:`SERVE_PATH`, nothing else. That
    serve answers every session and project of the user; what a session says (a project's
    ``BASH_ENV``, ``LD_PRELOAD``, ``PYTHONPATH``, its secrets) must not become the environment
    of the process answering the others, nor of the hooks of requests that bring none of
    their own (docs/security.md, "Which environment a hook gets")."""
    kept = {
        k: v
        for k, v in environ.items()
        if k in SERVE_KEEPS or (k.startswith("TRIOHOOKS_") and k not in SERVE_DROPS)
    }
    kept["PATH"] = SERVE_PATH
    return kept


# -- no server: the hooks run here ------------------------------------------------------------


def _run_here(agent: str, body: bytes, seconds: float, scope: str = "") -> bytes:
    """Run the hooks in this process (imports the engine; the slow path), within ``seconds``."""
    import_installed()
    import json
    import os
    from pathlib import Path

    import trio

    from triohooks.agents.spec import SPECS
    from triohooks.engine.hook_engine import HookEngine

    env = {**posix_environ(), LOOP_VAR: "1"}
    # The engine's workspace: the agent's project (its own variable names it), else the
    # call's directory -- whose .agents/ hooks (once trusted) then run for the call too.
    declared = [env.get(name, "") for name in SPECS[agent].project_env] if agent in SPECS else []
    workspace = next((d for d in declared if d and os.path.isdir(d)), _payload_cwd(body))

    async def main() -> bytes:
        with trio.move_on_after(seconds):
            async with HookEngine.open(workspace=Path(workspace)) as engine:
                result = await engine.agent_hook(
                    agent, body, adopted_only=True, env=env, scope=scope or None
                )
            for warning in result.answer.warnings:
                print(f"triohooks-relay: warning: {warning}", file=sys.stderr)
            return json.dumps(result.answer.output).encode()
        return _fail_closed(agent, body, f"the hooks did not finish within {seconds:g} s")

    return trio.run(main)


def posix_environ() -> "dict[str, str]":
    return {
        k.decode("utf-8", "surrogateescape"): v.decode("utf-8", "surrogateescape")
        for k, v in posix.environ.items()
    }


def _payload_cwd(body: bytes) -> str:
    import json
    import os

    try:
        cwd = json.loads(body).get("cwd")
    except (ValueError, AttributeError):
        cwd = None
    return cwd if isinstance(cwd, str) and os.path.isdir(cwd) else os.getcwd()


def _fail_closed(agent: str, body: bytes, why: str) -> bytes:
    import_installed()
    import json

    try:
        event = json.loads(body).get("hook_event_name") or ""
    except (ValueError, AttributeError):
        event = ""
    from triohooks.agents.merge import internal_error_answer

    return json.dumps(internal_error_answer(agent, str(event), why).output).encode()


#: ``--handed WHAT``: what the native client (``relay_client.c``) saw before it handed the event
#: over to this relay (docs/agents.md, "Which client runs"): a dead serve (``silent:PID``,
#: ``unacknowledged:PID``, ``older:PID``; recorded here, :func:`remember_dead`, and the hooks
#: run here), its deadline passed (``late``: the deadline denial), or a reply that is no
#: answer (``unexpected``: the hooks run here, serve is not asked again).
HANDED = ("late", "unexpected", *(f"{reason}:" for reason in DEAD_REASONS))


def _parse(args: "list[str]") -> "tuple[str, float, bool, str, str, str] | None":
    """``[--here] AGENT [--event NAME] [--timeout S] [--scope user|project] [--handed WHAT]``:
    the agent, timeout, whether to run the hooks here, the event the catch-all is for (for an
    agent whose input does not say), the scope it was installed at ("": none said), and what
    the native client handed over (:data:`HANDED`; "": it did not)."""
    here = bool(args) and args[0] == "--here"  # run the hooks in this process, no server
    if here:
        args = args[1:]
    if not args or args[0] not in AGENTS:
        return None
    agent, rest = args[0], args[1:]
    timeout, event, scope, handed = DEFAULT_TIMEOUT_S, "", "", ""
    while rest:
        if len(rest) < 2:
            return None
        option, value = rest[0], rest[1]
        rest = rest[2:]
        if option == "--timeout":
            try:
                timeout = float(value)
            except ValueError:
                return None
        elif option == "--event" and value.isascii() and value.isalpha():
            event = value
        elif option == "--scope" and value in SCOPES:
            scope = value
        elif option == "--handed" and (
            value in HANDED
            or (value.partition(":")[0] + ":" in HANDED and value.partition(":")[2].isdigit())
        ):
            handed = value
        else:
            return None
    if not timeout > 0:
        return None
    return agent, timeout, here, event, scope, handed


def with_event(body: bytes, event: str) -> bytes:
    """``body`` (a JSON object) with ``"hook_event_name": event`` as its last member -- which
    wins over one the agent wrote -- without decoding it (no json module on the fast path). A
    body that is no object is left as it is (then refused as no hook input). The one splice:
    serve makes it for the event a request's query names, a relay for the hooks it runs."""
    text = body.rstrip()
    if not text.endswith(b"}"):
        return body
    inner = text[:-1].rstrip()
    member = b'"hook_event_name":"' + event.encode() + b'"}'
    return inner + (member if inner.endswith(b"{") else b"," + member)


def main(argv: "list[str] | None" = None) -> int:
    import time

    started = time.monotonic()
    parsed = _parse(sys.argv[1:] if argv is None else argv)
    if parsed is None:
        sys.stderr.write(USAGE)
        return 1
    agent, timeout, here, event, scope, handed = parsed
    deadline = started + max(timeout - DEADLINE_MARGIN_S, 0.5)
    sent = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)  # as serve gets it (it adds the event)
    body = with_event(sent, event) if event and len(sent) <= MAX_INPUT_BYTES else sent
    if _getenv(LOOP_VAR) and not here:
        why = "a hook that triohooks runs started triohooks-relay again (a loop): remove it"
        print(f"triohooks-relay: {why}", file=sys.stderr)
        return _print_denial(agent, body, why)
    out: bytes | None = None
    dead = ""  # why serve is dead, when it is: the hooks run here
    if len(body) > MAX_INPUT_BYTES:
        body, here = b"{}", True  # answered fail-closed below, without a server round trip
    late = handed == "late"
    if not here:
        out, dead, too_late = from_serve(
            "triohooks-relay", agent, sent, deadline, scope=scope, event=event, handed=handed
        )
        late = late or too_late
        if dead:
            print(f"triohooks-relay: {dead}; running the hooks here", file=sys.stderr)
    if late:
        why = f"triohooks serve did not answer within {deadline - started:.0f} s"
        print(f"triohooks-relay: {why}", file=sys.stderr)
        return _print_denial(agent, body, why)
    seconds = deadline - time.monotonic()
    if out is None:
        try:
            out = _run_here(agent, body, seconds, scope)
        except Exception as exc:
            why = f"{type(exc).__name__}: {exc}".splitlines()[0]
            print(f"triohooks-relay: internal error: {why}", file=sys.stderr)
            if dead:
                why = f"{dead}, and the hooks cannot run here: {why}"
            return _print_denial(agent, body, why)
    sys.stdout.buffer.write(out + b"\n")
    sys.stdout.buffer.flush()
    return 0


def from_serve(
    name: str,
    agent: str,
    body: bytes,
    deadline: float,
    *,
    scope: str = "",
    event: str = "",
    more: str = "",
    handed: str = "",
) -> "tuple[bytes | None, str, bool]":
    """The user's serve's answer to ``body`` on ``/<agent>/v3/hook`` (:func:`hook_path`), as
    ``(answer, dead, late)``: ``answer`` None when serve did not give one (then the caller runs
    the hooks itself); ``dead``, why that serve is dead ("" when it is not: then it is
    remembered, :func:`remember_dead`, and a new one started); ``late``, whether the deadline
    passed while serve was still working. No serve at all starts one (:func:`start_server`) for
    the next call. What it did not use, and why, is said on stderr as ``name: ...``. The one way
    to ask serve: the relay's and ``triohooks fire``'s (``agent`` ``fire``)."""
    out: bytes | None = None
    dead, late = "", False
    directory = state_dir()
    path, why, found = serve_socket(directory)
    if why:
        print(f"{name}: not using the server: {why}", file=sys.stderr)
    dead = remembered_dead(directory, found) if found is not None and not handed else ""
    try:
        if handed.partition(":")[0] in DEAD_REASONS:  # the native client found it dead
            pid = int(handed.partition(":")[2])
            raise _Dead(handed.partition(":")[0], pid or None)
        if path is None or found is None:
            raise FileNotFoundError()
        if not dead and not handed:
            out = ask_server(path, agent, body, deadline, scope, event, more)
    except _Dead as exc:
        dead = str(exc)
        if found is not None:
            remember_dead(directory, found, exc.reason, exc.pid)
    except _TooLate:
        late = True
    except PermissionError as exc:
        print(f"{name}: not using the server: {exc}", file=sys.stderr)
    except (FileNotFoundError, ConnectionRefusedError):
        if not why:
            start_server(directory)
    except OSError as exc:
        print(f"{name}: server: {exc}; running the hooks here", file=sys.stderr)
    if dead:
        start_server(directory)  # it takes the socket over from the dead one
    return out, dead, late


def _print_denial(agent: str, body: bytes, why: str) -> int:
    """The fail-closed answer for the event, or exit 2 (a block to every agent) with the reason
    on stderr when even that cannot be made (it needs triohooks importable)."""
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
