"""Where config, trust records, tokens and audit logs live (docs/design.md §3, §8); how a file there
is read (bounded, never blocking, regular files only: :func:`read_regular_file`) and how a small
file is replaced without ever leaving it half written (:func:`write_file_atomic`), or leaving
the directory tree it belongs to (``confine_to``)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Final

# platformdirs (with tempfile and shutil under it) and secrets load where they are used: a
# ``triohooks fire`` given its directories in the environment pays for neither.

APP = "triohooks"


def global_config_dir() -> Path:
    """``$TRIOHOOKS_CONFIG_DIR``, else the platform user config dir + ``/triohooks``."""
    env = os.environ.get("TRIOHOOKS_CONFIG_DIR")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_config_dir(APP, appauthor=False))


#: The system tier's directory when ``$TRIOHOOKS_SYSTEM_DIR`` is not set, per platform
#: (``sys.platform`` prefix; anything else is the POSIX default). Admin-owned places: read
#: before the user's config, and no lower scope can disable, replace or reorder their hooks
#: (docs/configuration.md#the-system-tier).
SYSTEM_DIRS: Final = (
    ("darwin", "/Library/Application Support/triohooks"),
    ("win32", "{ProgramData}\\triohooks"),
)
POSIX_SYSTEM_DIR: Final = "/etc/triohooks"


def default_system_dir(platform: str, environ: Mapping[str, str]) -> Path:
    """The system tier's directory on ``platform`` when ``$TRIOHOOKS_SYSTEM_DIR`` is not set:
    ``/Library/Application Support/triohooks`` on macOS, ``%ProgramData%\\triohooks`` on
    Windows, ``/etc/triohooks`` elsewhere."""
    for prefix, place in SYSTEM_DIRS:
        if platform.startswith(prefix):
            return Path(place.format(ProgramData=environ.get("ProgramData") or "C:\\ProgramData"))
    return Path(POSIX_SYSTEM_DIR)


def system_config_dir() -> Path:
    """``$TRIOHOOKS_SYSTEM_DIR``, else the platform's admin-owned place
    (:func:`default_system_dir`). Its ``hooks.toml`` and ``hooks.json``
    (:func:`global_config_files`) are the system tier."""
    env = os.environ.get("TRIOHOOKS_SYSTEM_DIR")
    if env:
        return Path(env)
    import sys

    return default_system_dir(sys.platform, os.environ)


def state_dir() -> Path:
    """``$TRIOHOOKS_STATE_DIR``, else the platform user state dir."""
    env = os.environ.get("TRIOHOOKS_STATE_DIR")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_state_dir(APP, appauthor=False))


def workspace_config_files(workspace: Path) -> tuple[Path, Path]:
    """The workspace scope's two files: ``.agents/hooks.toml`` and ``.agents/hooks.json``."""
    agents = workspace / ".agents"
    return agents / "hooks.toml", agents / "hooks.json"


def global_config_files(config_dir: Path) -> tuple[Path, Path]:
    """A config directory's two files (the user's, or the system tier's): ``hooks.toml`` and
    ``hooks.json``."""
    return config_dir / "hooks.toml", config_dir / "hooks.json"


def private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) with mode 0700 and return it."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path


def write_file_atomic(
    path: Path, data: bytes, *, new_mode: int = 0o666, confine_to: Path | None = None
) -> None:
    """Replace ``path`` with ``data`` atomically: a temp file in the same directory, fsync,
    rename over the target, fsync the directory. An existing file's mode is kept (a new file
    gets ``new_mode & ~umask``); the temp file is removed when anything fails.

    With ``confine_to``, :func:`check_write_target` runs first: a symlinked ``path``, or a
    directory leading outside ``confine_to``, raises :class:`UnsafeWriteError` and nothing is
    written."""
    if confine_to is not None:
        check_write_target(path, confine_to)
    try:
        mode: int | None = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = None
    import secrets

    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    fd = os.open(tmp, flags, 0o600 if mode is not None else new_mode)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if mode is not None:
                os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


# -- reading: bounded, never blocking, regular files only ---------------------------------------
#: Bytes asked of the OS per read while streaming a file.
READ_CHUNK: Final = 1024 * 1024


class UnreadableFileError(Exception):
    """A file triohooks will not read: not a regular file (a FIFO, a device, a socket, a
    directory), over its size limit, or unreadable. ``str()`` is one line naming the file;
    ``reason`` is that line without the file name. A missing file raises
    :class:`FileNotFoundError` instead, so callers can keep "a missing file is silent"."""

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        self.path = os.fspath(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _not_regular(path: str, mode: int) -> UnreadableFileError:
    real = os.path.realpath(path)
    via = f" ({real})" if real != os.path.abspath(path) else ""
    return UnreadableFileError(path, f"is {_kind(mode)}{via}, not a regular file; not read")


def _too_big(path: str, size: int | str, cap: int) -> UnreadableFileError:
    return UnreadableFileError(path, f"is {size} bytes, over the {cap}-byte limit; not read")


@contextmanager
def open_regular_file(path: str | os.PathLike[str]) -> Iterator[tuple[int, os.stat_result]]:
    """Open ``path`` (symlinks followed) for reading and yield ``(fd, fstat result)``, or raise.

    Never blocks: the type is checked with ``stat`` first, then the file is opened with
    ``O_NONBLOCK`` (a FIFO opens at once, even with no writer) and checked again with ``fstat``
    (the file may have been swapped in between). Only a regular file is yielded; anything else
    raises :class:`UnreadableFileError`, as does any OS error but :class:`FileNotFoundError`.
    """
    name = os.fspath(path)
    try:
        before = os.stat(name)
    except FileNotFoundError:
        raise
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the name
        raise UnreadableFileError(name, f"cannot read: {_strerror(exc)}") from None
    if not stat.S_ISREG(before.st_mode):
        raise _not_regular(name, before.st_mode)
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY
    try:
        fd = os.open(name, flags)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise UnreadableFileError(name, f"cannot read: {_strerror(exc)}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _not_regular(name, st.st_mode)
        yield fd, st
    finally:
        os.close(fd)


def _strerror(exc: BaseException) -> str:
    return (exc.strerror if isinstance(exc, OSError) else None) or str(exc)


def iter_regular_file(fd: int, st: os.stat_result, cap: int, path: str) -> Iterator[bytes]:
    """The content of a file opened by :func:`open_regular_file`, in chunks; raises
    :class:`UnreadableFileError` before the first chunk when ``fstat`` says it is over ``cap``
    bytes, and as soon as more than ``cap`` bytes were read (it grew, or lied about its size:
    ``/proc`` files say 0)."""
    if st.st_size > cap:
        raise _too_big(path, st.st_size, cap)
    total = 0
    while True:
        try:
            chunk = os.read(fd, min(READ_CHUNK, cap + 1 - total))
        except OSError as exc:
            raise UnreadableFileError(path, f"cannot read: {_strerror(exc)}") from None
        if not chunk:
            return
        total += len(chunk)
        if total > cap:
            raise _too_big(path, f"more than {cap}", cap)
        yield chunk


def read_regular_file(path: str | os.PathLike[str], cap: int) -> bytes:
    """The whole content of the regular file ``path`` (symlinks followed), at most ``cap``
    bytes. The one way triohooks reads a config, trust or self-configuration file.

    Raises :class:`FileNotFoundError` when it does not exist (a dangling symlink included) and
    :class:`UnreadableFileError` — one line naming the file, at once, never a hang — for a FIFO,
    a device, a socket, a directory, a file over ``cap`` (checked with ``fstat`` before reading,
    and again while reading at most ``cap + 1`` bytes) or any other OS error.
    """
    name = os.fspath(path)
    with open_regular_file(name) as (fd, st):
        return b"".join(iter_regular_file(fd, st, cap, name))


# -- writing inside one directory tree -----------------------------------------------------------
class UnsafeWriteError(Exception):
    """A write that would leave the directory tree it belongs to (through a symlink), or
    replace something that is not a regular file. Nothing was written."""


def check_write_target(path: Path, root: Path) -> None:
    """Raise :class:`UnsafeWriteError` unless writing ``path`` stays inside ``root``.

    ``path`` itself must not be a symlink (whatever it points to: a link shipped in a
    repository must not redirect a write, nor have the file it points to read and copied in),
    nor an existing non-regular file; its directory must resolve (symlinks followed) to
    ``root`` or below it. Missing directories are fine (they are created inside).
    """
    if path.is_symlink():
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        raise UnsafeWriteError(
            f"{path} is a symbolic link (to {target}); triohooks does not write through a "
            "link here: replace it with a regular file"
        )
    real_root = os.path.realpath(root)
    real_parent = os.path.realpath(path.parent)
    if real_parent != real_root and not real_parent.startswith(real_root.rstrip(os.sep) + os.sep):
        raise UnsafeWriteError(
            f"{path.parent} leads outside {root} (to {real_parent}); triohooks does not write "
            "there: make it a plain directory"
        )
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise UnsafeWriteError(f"{path}: cannot check it: {_strerror(exc)}") from None
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeWriteError(f"{path} is {_kind(st.st_mode)}, not a regular file; not written")
