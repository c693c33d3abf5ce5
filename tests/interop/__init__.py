"""Interop with the real agent CLIs, headless and offline, against fake model servers.

This package holds the one copy of the harness that the tests here (through conftest.py's
fixtures) and ``bench/claude_code.py`` share:

- :func:`install_npm_cli` puts a pinned agent CLI (an :class:`NpmCli`; Claude Code is
  :data:`CLAUDE_CODE`, :func:`install_claude_code`) in ``<repo>/.cache/interop/`` once, through
  npm, and raises :class:`AgentCliUnavailable` (saying why) when that cannot be done;
- :func:`claude_env` is the environment that keeps it offline and on the fake;
- :func:`run_claude` runs one ``claude -p`` session, bounded in time, and parses its output.

The fake itself is :mod:`tests.interop.fake_anthropic`.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from tests.interop.fake_anthropic import FakeAnthropic

__all__ = [
    "CLAUDE_CODE",
    "CLAUDE_CODE_VERSION",
    "AgentCliUnavailable",
    "ClaudeProject",
    "ClaudeRun",
    "INSTALL_TIMEOUT",
    "claude_env",
    "install_claude_code",
    "install_npm_cli",
    "npm_reason",
    "NpmCli",
    "run_bounded",
    "run_claude",
]

#: Pinned: an unpinned install resolved an older release.
CLAUDE_CODE_VERSION = "2.1.332"
REPO = Path(__file__).resolve().parents[2]
CACHE_DIR = REPO / ".cache" / "interop"
#: Seconds for the whole npm install (the package is ~400 MB with its native binary).
INSTALL_TIMEOUT = 300.0


class AgentCliUnavailable(RuntimeError):
    """An agent CLI could not be installed or does not run; the message says why."""


class ClaudeRun(NamedTuple):
    """One finished ``claude -p`` session: the process and its parsed ``--output-format json``
    result (None when stdout was not one JSON object)."""

    process: subprocess.CompletedProcess[str]
    output: dict[str, Any] | None


def run_bounded(
    argv: Sequence[str],
    *,
    timeout: float,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` in its own process group with no stdin; on timeout kill that group (the
    program and whatever it started that stayed in it) and raise ``TimeoutExpired``."""
    proc = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env) if env is not None else None,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
        raise subprocess.TimeoutExpired(proc.args, timeout, out, err) from None
    except BaseException:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


# --- install -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NpmCli:
    """An agent CLI from the npm registry, pinned: ``package@version``, whose ``bin`` is
    ``binary`` and whose ``--version`` prints ``version`` on its first line."""

    name: str
    package: str
    version: str
    binary: str

    @property
    def spec(self) -> str:
        return f"{self.package}@{self.version}"

    @property
    def slug(self) -> str:
        return f"{self.package.rsplit('/', 1)[-1]}-{self.version}"

    def path(self, prefix: Path) -> Path:
        return prefix / "node_modules" / ".bin" / self.binary


CLAUDE_CODE = NpmCli("Claude Code", "@anthropic-ai/claude-code", CLAUDE_CODE_VERSION, "claude")


def _check_version(cli: NpmCli, binary: Path) -> str | None:
    """None if ``binary --version`` reports the pinned version, else what went wrong."""
    if not binary.exists():
        return f"{binary} does not exist"
    with tempfile.TemporaryDirectory(prefix="cli-home-") as home:
        try:
            done = run_bounded(
                [str(binary), "--version"], timeout=60, env=claude_env(None, Path(home))
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{binary} --version: {exc}"
    first = done.stdout.strip().splitlines()[:1]
    words = [w.strip(".,") for w in first[0].split()] if first else []
    if done.returncode != 0 or cli.version not in words:
        tail = (done.stdout + done.stderr).strip().splitlines()[-1:] or [""]
        return f"{binary} --version exited {done.returncode}: {tail[0]}"
    return None


def npm_reason(text: str) -> str:
    """npm's error code and the first line of its message (not the stack, nor the pointer to
    its debug log), else the last line it printed."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [
        line.removeprefix("npm error").strip() for line in lines if line.startswith("npm error")
    ]
    code = next((e.removeprefix("code ") for e in errors if e.startswith("code ")), None)
    skip = ("code ", "syscall ", "errno ", "at ", "{", "}", "A complete log of this run")
    message = next((e for e in errors if e and not e.startswith(skip)), None)
    if message is None:
        return lines[-1] if lines else "(no output)"
    return f"{code}: {message}" if code else message


def install_npm_cli(
    cli: NpmCli,
    cache_dir: Path = CACHE_DIR,
    *,
    timeout: float = INSTALL_TIMEOUT,
    npm: str | None = None,
) -> Path:
    """The path of a working ``cli`` binary of the pinned version, installing it on first use.

    It goes to ``<cache_dir>/<package>-<version>/`` (``npm install --prefix``) and is reused
    while its ``--version`` answers. npm installs into a temporary sibling that is renamed into
    place only once it works, under an exclusive lock, so concurrent processes neither
    half-install nor install twice. Raises :class:`AgentCliUnavailable` with the reason.
    """
    target = cache_dir / cli.slug
    if _check_version(cli, cli.path(target)) is None:
        return cli.path(target)
    npm = npm or shutil.which("npm")
    if npm is None:
        raise AgentCliUnavailable(f"npm is not on PATH, cannot install {cli.spec}")
    cache_dir.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout + 60  # a concurrent install may hold the lock so long
    with open(cache_dir / f"{cli.slug}.lock", "w") as lock:
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise AgentCliUnavailable(
                        f"another process has held {lock.name} for over {timeout + 60:.0f} s"
                    ) from None
                time.sleep(0.5)
        try:
            if _check_version(cli, cli.path(target)) is None:  # another process installed it
                return cli.path(target)
            return _install_locked(cli, npm, target, timeout)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def installed_or_skip(cli: NpmCli, cache_dir: Path = CACHE_DIR) -> Path:
    """The pinned ``cli`` (:func:`install_npm_cli`), or the calling test skipped, saying why
    (no npm, offline, a broken binary)."""
    import pytest

    try:
        return install_npm_cli(cli, cache_dir)
    except AgentCliUnavailable as exc:
        reason = f"{cli.name} {cli.version} unavailable: {exc}"
        print(reason)
        pytest.skip(reason)


def project_and_home(tmp_path: Path) -> tuple[Path, Path]:
    """A new project directory and ``HOME`` for one session, under ``tmp_path``, resolved."""
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    return project.resolve(), home.resolve()


def install_claude_code(cache_dir: Path = CACHE_DIR, **kwargs: Any) -> Path:
    """:func:`install_npm_cli` of the pinned Claude Code."""
    return install_npm_cli(CLAUDE_CODE, cache_dir, **kwargs)


def _install_locked(cli: NpmCli, npm: str, target: Path, timeout: float) -> Path:
    # Under the lock no one else is installing: any staging dir left is from a killed run.
    for stale in target.parent.glob(f".{target.name}.tmp-*"):
        shutil.rmtree(stale, ignore_errors=True)
    staging = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    staging.mkdir(parents=True)
    env = {**os.environ, "npm_config_update_notifier": "false", "npm_config_fund": "false"}
    argv = [
        npm,
        "install",
        "--prefix",
        str(staging),
        "--no-audit",
        "--no-fund",
        # Offline, npm's default retries take minutes to give up.
        "--fetch-retries=2",
        "--fetch-retry-mintimeout=2000",
        "--fetch-retry-maxtimeout=10000",
        cli.spec,
    ]
    try:
        try:
            done = run_bounded(argv, timeout=timeout, cwd=staging, env=env)
        except subprocess.TimeoutExpired as exc:
            err = exc.stderr if isinstance(exc.stderr, str) else ""
            said = f": {npm_reason(err)}" if err.strip() else ""
            raise AgentCliUnavailable(
                f"`npm install {cli.spec}` did not finish in {timeout:.0f} s (offline?){said}"
            ) from None
        except OSError as exc:
            raise AgentCliUnavailable(f"cannot run {npm}: {exc}") from None
        if done.returncode != 0:
            raise AgentCliUnavailable(
                f"`npm install {cli.spec}` exited {done.returncode}: "
                f"{npm_reason(done.stderr or done.stdout)}"
            )
        problem = _check_version(cli, cli.path(staging))
        if problem is not None:
            raise AgentCliUnavailable(f"installed, but it does not run: {problem}")
        shutil.rmtree(target, ignore_errors=True)  # a broken earlier install
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    problem = _check_version(cli, cli.path(target))
    if problem is not None:
        raise AgentCliUnavailable(f"installed and moved, but it does not run: {problem}")
    return cli.path(target)


@dataclass(frozen=True)
class ClaudeProject:
    """A project directory for one session and the ``HOME`` the CLI gets."""

    path: Path
    home: Path

    def write_settings(self, settings: dict[str, Any]) -> Path:
        """Write ``.claude/settings.json`` (Claude Code silently ignores an invalid one in -p
        mode, so tests should check that their hooks did run)."""
        target = self.path / ".claude" / "settings.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(settings, indent=2))
        return target

    def write_hooks(self, hooks: dict[str, Any]) -> Path:
        return self.write_settings({"hooks": hooks})


# --- running ------------------------------------------------------------------------------------

#: Variables of the caller's environment that would steer the CLI elsewhere (a developer may well
#: run the tests from inside Claude Code) or through a proxy.
_STRIPPED_PREFIXES = ("ANTHROPIC_", "CLAUDE", "AWS_", "GOOGLE_", "VERTEX_", "OTEL_", "MCP_")
_STRIPPED = {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"}


def claude_env(api_url: str | None, home: Path, **extra: str) -> dict[str, str]:
    """The environment for one offline CLI session: the caller's, minus anything that would
    point it elsewhere, with ``HOME`` (and the XDG dirs) under ``home``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.upper().startswith(_STRIPPED_PREFIXES) and k.upper() not in _STRIPPED
    }
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        ANTHROPIC_API_KEY="dummy",
        DISABLE_TELEMETRY="1",
        DISABLE_AUTOUPDATER="1",
        DISABLE_ERROR_REPORTING="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        IS_SANDBOX="1",  # it refuses --dangerously-skip-permissions as root without it
        NO_PROXY="127.0.0.1,localhost",
    )
    if api_url is not None:
        env["ANTHROPIC_BASE_URL"] = api_url
    env.update(extra)
    return env


def run_claude(
    claude_bin: Path,
    project: Path,
    home: Path,
    fake_api: FakeAnthropic,
    prompt: str = "Run the scripted commands.",
    timeout: float = 60,
    *,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    skip_permissions: bool = True,
) -> ClaudeRun:
    """One headless session in ``project`` (where ``.claude/settings.json`` may hold hooks):
    ``claude -p PROMPT --output-format json --dangerously-skip-permissions`` (without it when
    not ``skip_permissions``: a call no rule or hook allows is refused, as nobody can be asked).
    ``env`` adds to :func:`claude_env`. Raises ``subprocess.TimeoutExpired`` (its process group
    killed) if it runs over ``timeout`` seconds."""
    argv = [
        str(claude_bin),
        "-p",
        prompt,
        "--output-format",
        "json",
        *(["--dangerously-skip-permissions"] if skip_permissions else []),
        *args,
    ]
    process = run_bounded(
        argv, timeout=timeout, cwd=project, env=claude_env(fake_api.url, home, **(env or {}))
    )
    try:
        output = json.loads(process.stdout)
    except ValueError:
        output = None
    return ClaudeRun(process, output if isinstance(output, dict) else None)


# --- one triohooks guard for every agent (docs/agents.md) -----------------------------------------

#: A guard in triohooks' own hooks.toml: it knows nothing of any agent.
NATIVE_GUARD = (
    '[[hooks.pre_tool]]\nid = "no-push"\nif = "shell(git push*)"\n'
    "command = \"echo 'pushing is for humans' >&2; exit 2\"\n"
)
#: A session's shell commands: were the push let through, it would fail (no repository) and
#: the marker ``marker-pushed`` be written.
PUSH_COMMANDS = ["echo marker-0 > marker-0.txt", "git push origin main; echo x > marker-pushed"]
