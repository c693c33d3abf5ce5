"""Where config, trust records, tokens and audit logs live (DESIGN §3, §8), and how a
small file there is replaced without ever leaving it half written."""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

import platformdirs

APP = "triohooks"


def global_config_dir() -> Path:
    """``$TRIOHOOKS_CONFIG_DIR``, else the platform user config dir + ``/triohooks``."""
    env = os.environ.get("TRIOHOOKS_CONFIG_DIR")
    if env:
        return Path(env)
    return Path(platformdirs.user_config_dir(APP, appauthor=False))


def state_dir() -> Path:
    """``$TRIOHOOKS_STATE_DIR``, else the platform user state dir."""
    env = os.environ.get("TRIOHOOKS_STATE_DIR")
    if env:
        return Path(env)
    return Path(platformdirs.user_state_dir(APP, appauthor=False))


def workspace_config_files(workspace: Path) -> tuple[Path, Path]:
    """The workspace scope's two files: ``.agents/hooks.toml`` and ``.agents/hooks.json``."""
    agents = workspace / ".agents"
    return agents / "hooks.toml", agents / "hooks.json"


def global_config_files(config_dir: Path) -> tuple[Path, Path]:
    return config_dir / "hooks.toml", config_dir / "hooks.json"


def private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) with mode 0700 and return it."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path


def write_file_atomic(path: Path, data: bytes, *, new_mode: int = 0o666) -> None:
    """Replace ``path`` with ``data`` atomically: a temp file in the same directory, fsync,
    rename over the target, fsync the directory. An existing file's mode is kept (a new file
    gets ``new_mode & ~umask``); the temp file is removed when anything fails."""
    try:
        mode: int | None = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = None
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
