"""Driving the real Codex CLI headless and offline, against :mod:`tests.interop.fake_openai`.

- :data:`CODEX` / :func:`install_codex`: the pinned ``@openai/codex`` through
  :func:`tests.interop.install_npm_cli` (into ``<repo>/.cache/interop/``);
- :func:`codex_env`: the environment that keeps it offline (nothing that points it at a real
  endpoint, ``HOME`` a temporary directory, the fake provider's key variable);
- :class:`CodexProject`: a project directory and its ``HOME``, with writers for
  ``$HOME/.codex/config.toml`` (the fake model provider), hooks files and their review state;
- :func:`run_codex`: one ``codex exec --json`` session, bounded in time, its JSONL events parsed;
- fixtures ``codex_bin`` (session; skipped, saying why, when Codex cannot be had),
  ``fake_openai`` and ``codex_project``, which ``conftest.py`` imports.

Codex reads its model provider from config.toml only, so :meth:`CodexProject.write_config`
must run before a session. Codex runs a user hook only once it is *reviewed*: see
:mod:`triohooks.agents.codex_trust` and :meth:`CodexProject.review`.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from tests.interop import (
    CACHE_DIR,
    NpmCli,
    claude_env,
    install_npm_cli,
    installed_or_skip,
    project_and_home,
    run_bounded,
)
from tests.interop.fake_openai import FakeOpenAI
from triohooks.agents.codex_trust import hook_states, hook_states_toml

__all__ = [
    "CODEX",
    "CODEX_VERSION",
    "FAKE_KEY_VAR",
    "CodexProject",
    "CodexRun",
    "codex_bin",
    "codex_env",
    "codex_hooks_list",
    "codex_project",
    "fake_openai",
    "install_codex",
    "run_codex",
    "write_codex_config",
]

CODEX_VERSION = "0.169.1"
CODEX = NpmCli("Codex", "@openai/codex", CODEX_VERSION, "codex")
#: The variable the fake provider's ``env_key`` names; Codex sends its value as the bearer token.
FAKE_KEY_VAR = "TRIOHOOKS_FAKE_OPENAI_KEY"
#: Any slug works; one Codex has no metadata for adds an ``error`` item to the events
#: ("Model metadata for `...` not found"), which is harmless.
FAKE_MODEL = "gpt-fake"

#: Variables of the caller's environment that would steer Codex elsewhere (another home, a real
#: endpoint or key) on top of those :func:`claude_env` drops.
_STRIPPED_PREFIXES = ("OPENAI_", "CODEX_", "AZURE_OPENAI")
_STRIPPED = {"RUST_LOG"}


def install_codex(cache_dir: Path = CACHE_DIR, **kwargs: Any) -> Path:
    """:func:`tests.interop.install_npm_cli` of the pinned Codex."""
    return install_npm_cli(CODEX, cache_dir, **kwargs)


def codex_env(api_url: str | None, home: Path, **extra: str) -> dict[str, str]:
    """The environment for one offline Codex session: :func:`claude_env`'s (the caller's minus
    whatever points elsewhere, ``HOME`` and the XDG dirs under ``home``) minus ``OPENAI_*``,
    ``CODEX_*`` (so ``CODEX_HOME`` is ``$HOME/.codex``), plus the fake provider's key. With
    ``api_url`` (``<fake.url>``) also ``OPENAI_BASE_URL`` at the fake, so that even Codex's
    built-in provider would stay local; the provider in use is config.toml's."""
    env = {
        k: v
        for k, v in claude_env(None, home).items()
        if not k.upper().startswith(_STRIPPED_PREFIXES) and k.upper() not in _STRIPPED
    }
    env[FAKE_KEY_VAR] = "dummy"
    if api_url is not None:
        env["OPENAI_BASE_URL"] = f"{api_url}/v1"
    env.update(extra)
    return env


def _toml_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a valid TOML basic string


def write_codex_config(
    home: Path, api_url: str, *, model: str = FAKE_MODEL, extra: str = ""
) -> Path:
    """Write ``$HOME/.codex/config.toml`` selecting a model provider ``fake`` at
    ``<api_url>/v1`` (Responses API over SSE), with update checks and analytics off; ``extra``
    (TOML) is appended. Returns its path."""
    config = home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        f"model = {_toml_string(model)}\n"
        'model_provider = "fake"\n'
        "check_for_update_on_startup = false\n"
        "\n"
        "[analytics]\n"
        "enabled = false\n"
        "\n"
        "[model_providers.fake]\n"
        'name = "fake"\n'
        f"base_url = {_toml_string(api_url + '/v1')}\n"
        'wire_api = "responses"\n'
        f"env_key = {_toml_string(FAKE_KEY_VAR)}\n"
        "request_max_retries = 0\n"
        "stream_max_retries = 0\n" + (f"\n{extra}\n" if extra else "")
    )
    return config


@dataclass(frozen=True)
class CodexProject:
    """A project directory for one session and the ``HOME`` Codex gets (both resolved)."""

    path: Path
    home: Path

    @property
    def codex_home(self) -> Path:
        return self.home / ".codex"

    @property
    def config_path(self) -> Path:
        return self.codex_home / "config.toml"

    @property
    def user_hooks_path(self) -> Path:
        return self.codex_home / "hooks.json"

    @property
    def project_hooks_path(self) -> Path:
        return self.path / ".codex" / "hooks.json"

    def write_config(self, api_url: str, *, extra: str = "") -> Path:
        return write_codex_config(self.home, api_url, extra=extra)

    def append_config(self, text: str) -> None:
        with self.config_path.open("a") as config:
            config.write("\n" + text + "\n")

    def write_hooks(self, hooks: Mapping[str, Any], *, project: bool = False) -> Path:
        """Write ``{"hooks": hooks}`` to ``$HOME/.codex/hooks.json`` (or the project's
        ``.codex/hooks.json``); Codex will not run them before :meth:`review`."""
        target = self.project_hooks_path if project else self.user_hooks_path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps({"hooks": hooks}, indent=2))
        return target

    def review(self, source: Path, hooks: Mapping[str, Any]) -> dict[str, str]:
        """Record every hook of ``hooks`` (as written in the file ``source``) as reviewed, in
        config.toml, the way Codex's ``/hooks`` review does; returns ``{key: trusted_hash}``."""
        states = hook_states(source, hooks)
        self.append_config(hook_states_toml(states))
        return states

    def trust_project(self) -> None:
        """Mark the project trusted (Codex loads a project's ``.codex/`` only then)."""
        self.append_config(f'[projects.{_toml_string(str(self.path))}]\ntrust_level = "trusted"')


class CodexRun(NamedTuple):
    """One finished ``codex exec --json`` session: the process and its stdout's JSON lines
    (``thread.started``, ``turn.started``, ``item.started``/``item.completed``,
    ``turn.completed``/``turn.failed``, ``error``)."""

    process: subprocess.CompletedProcess[str]
    events: list[dict[str, Any]]

    def items(self, item_type: str | None = None) -> list[dict[str, Any]]:
        """The ``item`` of every ``item.completed`` event (of ``item_type`` if given)."""
        found = []
        for event in self.events:
            item = event.get("item")
            if (
                event.get("type") == "item.completed"
                and isinstance(item, dict)
                and (item_type is None or item.get("type") == item_type)
            ):
                found.append(item)
        return found

    @property
    def agent_messages(self) -> list[str]:
        return [str(i.get("text", "")) for i in self.items("agent_message")]

    @property
    def completed(self) -> bool:
        """Exit 0 and a ``turn.completed``."""
        return self.process.returncode == 0 and any(
            e.get("type") == "turn.completed" for e in self.events
        )


def _parse_jsonl(text: str) -> list[dict[str, Any]]:
    events = []
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def run_codex(
    codex_bin: Path,
    project: Path,
    home: Path,
    fake: FakeOpenAI,
    prompt: str = "Run the scripted commands.",
    timeout: float = 60,
    *,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> CodexRun:
    """One headless session in ``project``: ``codex exec --skip-git-repo-check
    --dangerously-bypass-approvals-and-sandbox --json [args] PROMPT``. ``env`` adds to
    :func:`codex_env`. Raises ``subprocess.TimeoutExpired`` (its process group killed) if it
    runs over ``timeout`` seconds."""
    argv = [
        str(codex_bin),
        "exec",
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
        "--json",
        *args,
        prompt,
    ]
    process = run_bounded(
        argv, timeout=timeout, cwd=project, env=codex_env(fake.url, home, **(env or {}))
    )
    return CodexRun(process, _parse_jsonl(process.stdout))


def codex_hooks_list(
    codex_bin: Path, project: Path, home: Path, timeout: float = 30
) -> dict[str, Any]:
    """What Codex itself says about the hooks it would load in ``project``: the ``hooks/list``
    answer of ``codex app-server`` (JSON-RPC over stdio) for that cwd, ``{"cwd", "hooks",
    "warnings", "errors"}``; each hook has its state ``key``, ``currentHash``,
    ``trustStatus`` (``untrusted``/``trusted``/``modified``/``managed``), ``enabled``,
    ``source``... Bounded by ``timeout``; the server's process group is killed after."""
    proc = subprocess.Popen(
        [str(codex_bin), "app-server"],
        cwd=project,
        env=codex_env(None, home),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put("")

    threading.Thread(target=pump, daemon=True).start()
    requests = [
        {
            "id": 1,
            "method": "initialize",
            "params": {"clientInfo": {"name": "tests", "version": "0"}},
        },
        {"method": "initialized"},
        {"id": 2, "method": "hooks/list", "params": {"cwds": [str(project)]}},
    ]
    try:
        assert proc.stdin is not None
        proc.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
        proc.stdin.flush()
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(proc.args, timeout)
            try:
                line = lines.get(timeout=left)
            except queue.Empty:
                continue
            if not line:
                raise RuntimeError(f"codex app-server exited ({proc.poll()}) before answering")
            message = json.loads(line)
            if message.get("id") == 2:
                if "error" in message:
                    raise RuntimeError(f"hooks/list failed: {message['error']}")
                (entry,) = message["result"]["data"]
                return dict(entry)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        for stream in (proc.stdin, proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass


# --- fixtures (imported by conftest.py) ---------------------------------------------------------


@pytest.fixture(scope="session")
def codex_bin() -> Path:
    return installed_or_skip(CODEX)


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
def codex_project(tmp_path: Path, fake_openai: FakeOpenAI) -> CodexProject:
    """A project and a ``HOME`` whose config.toml already points Codex at ``fake_openai``."""
    made = CodexProject(*project_and_home(tmp_path))
    made.write_config(fake_openai.url)
    return made
