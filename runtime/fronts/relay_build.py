"""The relay client a catch-all runs: the native one (``relay_client.c``), built at install time,
or the Python relay, precompiled (docs/agents.md, "Which client runs").

:func:`prepare` is what every install that writes a catch-all calls: it makes sure the Python
relay has its bytecode (``fronts/__pycache__``: no start compiles it) and builds the C source
that ships in the package into ``<state dir>/relay`` -- the private directory the relay socket
lives in, which only the user can write (:func:`triohooks.fronts.relay.private_dir`), so only
the user can replace what every catch-all execs. The compiler: ``$CC`` when set, else ``cc``
from PATH, else the ``ziglang`` package's (``python -m ziglang cc``, the optional ``[native]``
extra). The
binary is written whole (a temp file renamed into place, mode 0700); ``relay.stamp`` beside it
keeps the sha256 of what it was built from (source, flags, the interpreter and relay it hands
over to), so an install rebuilds only when one of them changed. A build that fails is a warning
naming the compiler's first error line, never a failed install: the catch-alls then run the
Python relay (an older binary is removed, so none of another source runs).

:func:`status` says which client the catch-alls run and why (``doctor``); :func:`refresh`, run by
``serve`` at its start, rebuilds a client an older triohooks built (an upgrade since).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import py_compile
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Final, Literal

import msgspec

from triohooks.agents.spec import NATIVE_RELAY, RELAY_BOOT

from . import relay

SOURCE: Final = Path(__file__).with_name("relay_client.c")
#: What it was built from (:class:`Stamp`), beside it.
STAMP_NAME: Final = "relay.stamp"
FLAGS: Final = ("-std=c99", "-O2")
#: A compiler that has not finished in this long is given up (the Python relay runs).
COMPILE_TIMEOUT_S: Final = 120.0


class Stamp(msgspec.Struct, frozen=True):
    #: sha256 of the source, the flags and what the client hands over to (:func:`digest`).
    digest: str
    #: The compiler that built it ("" when none did).
    compiler: str = ""
    #: Why there is no native client ("" when there is one).
    error: str = ""


class Client(msgspec.Struct, frozen=True):
    """Which client the catch-alls run, and why."""

    kind: Literal["native", "python"]
    #: The native binary, or the Python relay's source.
    path: str
    why: str
    #: For the Python relay: whether its bytecode is there (else each start compiles it).
    precompiled: bool = True


def native_path(state: str | None = None) -> Path:
    """Where the native client lives: the relay's state dir (:func:`relay.state_dir`, which the
    client itself computes the same way), ``relay`` in it."""
    return Path(state if state is not None else relay.state_dir().rstrip("/")) / NATIVE_RELAY


def relay_file() -> Path:
    return Path(relay.__file__).resolve()


def c_string(text: str) -> str:
    """``text`` as a C string literal (for a ``-D`` macro)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + "".join(c if c.isprintable() else f"\\{ord(c):03o}" for c in escaped) + '"'


def defines(python: str | None = None) -> list[str]:
    """The ``-D`` flags: the interpreter (this one unless said), relay directory and boot the
    client hands over to."""
    return [
        f"-DTRIOHOOKS_PYTHON={c_string(python or sys.executable)}",
        f"-DTRIOHOOKS_RELAY_DIR={c_string(str(relay_file().parent))}",
        f"-DTRIOHOOKS_BOOT={c_string(RELAY_BOOT)}",
    ]


def digest() -> str:
    h = hashlib.sha256(SOURCE.read_bytes())
    for flag in (*FLAGS, *defines()):
        h.update(b"\0" + flag.encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def compilers(environ: dict[str, str] | None = None) -> list[list[str]]:
    """The compilers to try, in order: ``$CC`` (split as a shell would) and nothing else when
    it is set -- the user chose it; else ``cc`` from PATH, then the ``ziglang`` package's when
    it is installed (also where a ``cc`` cannot build: a system without C headers)."""
    env = os.environ if environ is None else environ
    given = env.get("CC", "").strip()
    if given:
        try:
            return [shlex.split(given)]
        except ValueError:
            return [[given]]
    found: list[list[str]] = []
    cc = shutil.which("cc", path=env.get("PATH"))
    if cc is not None:
        found.append([cc])
    if importlib.util.find_spec("ziglang") is not None:
        found.append([sys.executable, "-m", "ziglang", "cc"])
    return found


def _first_error(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    chosen = next((line for line in lines if "error" in line.lower()), lines[0] if lines else "")
    return chosen[:300] or "no output"


def precompile() -> str:
    """Write the Python relay's bytecode (``fronts/__pycache__``); "" when it is there, else
    why not (then each start of the Python relay compiles it, ~4 ms)."""
    source = relay_file()
    cached = Path(importlib.util.cache_from_source(str(source)))
    try:
        py_compile.compile(str(source), cfile=str(cached), doraise=True)
    except (OSError, py_compile.PyCompileError) as exc:
        if cached.is_file() and cached.stat().st_mtime >= source.stat().st_mtime:
            return ""  # (a read-only install whose bytecode its installer wrote)
        return f"{cached} cannot be written ({exc})"
    return ""


def _read_stamp(path: Path) -> Stamp | None:
    try:
        return msgspec.json.decode(path.read_bytes()[:65536], type=Stamp)
    except (OSError, msgspec.DecodeError):
        return None


def _write_whole(path: Path, data: bytes, mode: int) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.replace(temporary, path)


def build(state: str | None = None, environ: dict[str, str] | None = None) -> Client:
    """Build the native client into the state dir unless the one there was built from exactly
    this (its stamp); the client the catch-alls run now. Never raises for a build that fails:
    that is the Python relay, with the reason."""
    directory = state if state is not None else relay.state_dir()
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    except OSError as exc:
        return _python(f"the state dir {directory} cannot be made ({exc.strerror or exc})")
    why = relay.private_dir(directory)
    if why:  # (None cannot be: it was just made)
        return _python(f"not built: {why}")
    native, stamp_path = native_path(directory), Path(directory) / STAMP_NAME
    want = digest()
    stamp = _read_stamp(stamp_path)
    if stamp is not None and stamp.digest == want and not stamp.error and _runnable(native):
        return Client("native", str(native), f"built with {stamp.compiler}")
    errors: list[str] = []
    for compiler in compilers(environ):
        temporary = native.with_name(f".{NATIVE_RELAY}.{os.getpid()}.tmp")
        command = [*compiler, *FLAGS, *defines(), "-o", str(temporary), str(SOURCE)]
        try:
            done = subprocess.run(
                command,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=COMPILE_TIMEOUT_S,
                check=False,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            errors.append(f"{compiler[0]}: {exc}")
            continue
        if done.returncode != 0 or not temporary.is_file():
            errors.append(f"{shlex.join(compiler)}: {_first_error(done.stderr + done.stdout)}")
            temporary.unlink(missing_ok=True)
            continue
        os.chmod(temporary, 0o700)
        os.replace(temporary, native)
        name = shlex.join(compiler)
        _write_whole(stamp_path, msgspec.json.encode(Stamp(want, compiler=name)), 0o600)
        return Client("native", str(native), f"built with {name}")
    why = errors[0] if errors else "no C compiler ($CC, cc on PATH, or the ziglang package)"
    native.unlink(missing_ok=True)  # never a client of another source
    _write_whole(stamp_path, msgspec.json.encode(Stamp(want, error=why)), 0o600)
    return _python(why)


def _runnable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _python(why: str) -> Client:
    return Client("python", str(relay_file()), why, precompiled=not precompile())


def prepare(state: str | None = None) -> tuple[Client, list[str]]:
    """What an install calls: the Python relay precompiled, the native client built. The
    client, and the warnings to print."""
    warnings: list[str] = []
    missing = precompile()
    if missing:
        warnings.append(f"the Python relay is not precompiled: {missing}")
    client = build(state)
    if client.kind == "python":
        warnings.append(
            f"the native relay client was not built ({client.why}): the catch-alls run the "
            "Python relay (docs/agents.md, which client runs)"
        )
    return client, warnings


def refresh(state: str | None = None) -> str | None:
    """What ``serve`` does when it starts: where an install built the client from another
    triohooks (an upgrade since; its stamp says so), build it again from this one -- so an
    upgrade does not leave the catch-alls on a client of the old source, or on the Python
    relay once the protocol changes. What was done, for the log; None when there was nothing
    to do (no install here, or built from this source -- a build that failed for this source
    is not tried again at each start)."""
    directory = state if state is not None else relay.state_dir()
    stamp = _read_stamp(Path(directory) / STAMP_NAME)
    if stamp is None or stamp.digest == digest():
        return None
    client, warnings = prepare(directory)
    said = f"the relay client was built from another triohooks; now: {client.kind}, {client.why}"
    return "; ".join([said, *warnings])


def status(state: str | None = None) -> Client:
    """Which client the catch-alls run now, and why (``doctor``): the native client when one
    built from this install's source is there, else the Python relay."""
    directory = state if state is not None else relay.state_dir()
    native = native_path(directory)
    stamp = _read_stamp(Path(directory) / STAMP_NAME)
    if _runnable(native):
        if stamp is None or stamp.error or stamp.digest != digest():
            why = "it was built from another triohooks: run your agent's install again to rebuild"
            return Client("native", str(native), why)
        return Client("native", str(native), f"built with {stamp.compiler}")
    if stamp is not None and stamp.error:
        why = f"the build failed: {stamp.error}"
    else:
        why = f"not built: no {native} (install builds it)"
    cached = Path(importlib.util.cache_from_source(str(relay_file())))
    return Client("python", str(relay_file()), why, precompiled=cached.is_file())
