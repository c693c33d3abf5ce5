"""The live setup of an adopted agent, checked (``triohooks <agent> validate``, ``doctor``).

Besides the config itself: for every catch-all an install wrote into the agent's settings, that
what it runs is there (``triohooks-relay`` on PATH for a project's, this install's python and
relay for the user's), that the server an http catch-all posts to is running and is the user's
own ``serve`` (the one ``serve.json`` names, holding that port) and that the token the agent
will send matches; whether a ``serve`` answers the relays; the project's trust; and the tamper
alarm (:mod:`triohooks.agents.tamper`: a switch that turns the catch-alls off, hooks run beside
them, Codex's review of them). Reads only: it starts nothing, runs no hook.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
from collections.abc import Mapping
from pathlib import Path

from triohooks.agents.config import (
    AgentHook,
    catch_alls,
    load_agent_table,
)
from triohooks.agents.managed import MANIFEST_NAME
from triohooks.agents.reroute import stale_installs
from triohooks.agents.spec import PORTABLE_RELAY, TOKEN_VAR, AgentName, adopted_path
from triohooks.config.paths import UnreadableFileError, read_regular_file
from triohooks.config.trust import held_back_message

from . import relay, relay_build
from .doctor import DoctorLine
from .serve_file import alive_and_ours, serve_info

_PORT: re.Pattern[str] = re.compile(r"http://127\.0\.0\.1:([0-9]+)/")


def _holds_port(pid: int, port: int) -> bool:
    import psutil

    try:
        connections = psutil.Process(pid).net_connections(kind="inet")
    except psutil.Error:
        return False
    return any(c.status == psutil.CONN_LISTEN and c.laddr.port == port for c in connections)


def _relay_socket(state: Path) -> DoctorLine:
    path, why, found = relay.serve_socket(str(state))
    if why:
        return DoctorLine(False, f"serve: {why}: the relays run every hook themselves")
    if path is None:
        return DoctorLine(
            True, "serve: not running; the next relay call starts it (that call runs slower)"
        )
    probe = socket.socket(socket.AF_UNIX)
    probe.settimeout(1.0)
    try:
        probe.connect(path)
        uid = relay.peer_uid(probe)
    except OSError as exc:
        return DoctorLine(
            True, f"serve: not running ({path}: {exc.strerror or exc}); the next relay starts it"
        )
    finally:
        probe.close()
    if uid is not None and uid != os.getuid():
        return DoctorLine(False, f"serve: {path} is served by uid {uid}, not you: not used")
    dead = relay.remembered_dead(str(state), found) if found is not None else ""
    if dead:
        return DoctorLine(
            False,
            f"serve: a relay found it dead: {dead}; the relays run every hook themselves until "
            f"a new serve takes {path}: stop this one (the next relay call starts a new one)",
        )
    return DoctorLine(True, f"serve: answers the relays on {path}")


#: What the project form of today runs before its agent's name: the search for the native client.
_NATIVE_FIRST = PORTABLE_RELAY.partition("{agent}")[0]


def _command_lines(hook: AgentHook, state: Path, environ: Mapping[str, str]) -> list[DoctorLine]:
    """What one command catch-all runs: the native client, the Python relay, or (the project
    form) ``triohooks-relay`` from PATH; a problem when none of them is there."""
    assert hook.command is not None
    where = f"{hook.source} {hook.event}"
    client = relay_build.status(str(state))
    if "command -v triohooks-relay" in hook.command:  # the project form, of any version
        # today's form looks for the native client first (an older one went to PATH at once)
        if hook.command.startswith(_NATIVE_FIRST) and client.kind == "native":
            return [DoctorLine(True, f"{where}: runs the native client {client.path}")]
        found = shutil.which("triohooks-relay", path=environ.get("PATH"))
        if found is None:
            return [
                DoctorLine(
                    False,
                    f"{where}: triohooks-relay is not on PATH: the agent's hooks will block "
                    "until triohooks is installed (or its bin directory is on PATH)",
                )
            ]
        return [DoctorLine(True, f"{where}: runs {found}")]
    words = list(shlex.shlex(hook.command, posix=True, punctuation_chars=True))
    if "-c" in words:  # [ -x NATIVE ] && exec NATIVE ...; [ -x PY ] && exec PY -I -S -c BOOT DIR
        boot = words.index("-c")
        native, python = words[2], words[boot - 3]
        script = os.path.join(words[boot + 2], os.path.basename(relay.__file__))
    else:  # an older form: [ -x PY ] && exec PY -I -S SCRIPT ...
        native, python, script = "", words[2], words[9]
    missing = [p for p in (python, script) if not os.path.exists(p)]
    if missing:
        return [
            DoctorLine(
                False,
                f"{where}: {', '.join(missing)} no longer there: the agent's hooks block; run "
                f"`triohooks {hook.agent} install --scope user` again",
            )
        ]
    if native and native == client.path and client.kind == "native":
        return [DoctorLine(True, f"{where}: runs the native client {native}")]
    return [DoctorLine(True, f"{where}: runs the Python relay {script}")]


def _client_line(state: Path) -> DoctorLine:
    """Which relay client the catch-alls run, and why (docs/agents.md, which client runs)."""
    client = relay_build.status(str(state))
    if client.kind == "native":
        ok = client.why.startswith("built with")
        return DoctorLine(ok, f"relay client: native, {client.path} ({client.why})")
    slow = "" if client.precompiled else ", not precompiled: each start compiles it (~4 ms)"
    return DoctorLine(True, f"relay client: the Python relay{slow} ({client.why})")


def _http_lines(hook: AgentHook, state: Path, environ: Mapping[str, str]) -> list[DoctorLine]:
    assert hook.url is not None
    where = f"{hook.source} {hook.event}"
    match = _PORT.match(hook.url)
    port = int(match.group(1)) if match else 0
    info = serve_info(state)
    lines: list[DoctorLine] = []
    pid = info.get("pid") if info else None
    if info is None or not alive_and_ours(pid):
        lines.append(
            DoctorLine(
                False,
                f"{where}: no serve of yours is running for POST {hook.url}: the agent lets "
                "every call through (start `triohooks serve`, or install with the relay)",
            )
        )
    elif not isinstance(pid, int) or not _holds_port(pid, port):
        lines.append(
            DoctorLine(
                False,
                f"{where}: port {port} is not your serve's (pid {pid} listens elsewhere): "
                "whatever holds it gets the calls and the token",
            )
        )
    else:
        lines.append(DoctorLine(True, f"{where}: POST {hook.url} reaches your serve (pid {pid})"))
    token_file = info.get("token_file") if info else None
    token = None
    if isinstance(token_file, str):
        try:
            token = read_regular_file(token_file, 4096).decode().strip()
        except (OSError, UnreadableFileError, UnicodeDecodeError):
            token = None
    given = environ.get(TOKEN_VAR)
    if not given:
        lines.append(
            DoctorLine(
                False,
                f'{where}: {TOKEN_VAR} is not set here: start the agent with {TOKEN_VAR}="$(cat '
                f'{token_file or "the serve token file"})" (else every call is denied)',
            )
        )
    elif token is not None and given != token:
        lines.append(
            DoctorLine(False, f"{where}: {TOKEN_VAR} does not match the serve token (restarted?)")
        )
    return lines


def check_agent(
    agent: AgentName,
    *,
    project: Path | None,
    home: Path,
    config_dir: Path,
    state: Path,
    environ: Mapping[str, str] | None = None,
) -> list[DoctorLine]:
    """Every finding about ``agent``'s live setup; [] when nothing of it is installed."""
    env = os.environ if environ is None else environ
    hooks = catch_alls(agent, project, home)
    table = load_agent_table(agent, project=project, home=home, config_dir=config_dir)
    alarms = [DoctorLine(False, f"tamper alarm: {alarm}") for alarm in table.tampered]
    if not hooks:
        return alarms  # every catch-all removed: only the alarm is left to say it
    lines: list[DoctorLine] = alarms
    for hook in hooks:
        if hook.type == "http":
            lines += _http_lines(hook, state, env)
        else:
            lines += _command_lines(hook, state, env)
    if any(h.type == "command" for h in hooks):
        lines += [_client_line(state), _relay_socket(state)]
    held = [h for h in table.untrusted if h.adopted]
    if held and table.trust is not None:
        lines.append(DoctorLine(False, held_back_message(table.trust, agent, len(held))))
    elif table.trust is not None and table.trust.state == "trusted":
        lines.append(DoctorLine(True, f"the project's {agent} hooks are trusted"))
    for inst, routing in stale_installs(agent, home=home, project=project, config_dir=config_dir):
        lines.append(DoctorLine(False, routing.said(agent, str(inst.settings), inst.scope)))
    adopted_missing = [
        h.source
        for h in hooks
        if not adopted_path(agent, Path(h.source)).exists()
        and not Path(h.source).with_name(MANIFEST_NAME).exists()  # a managed install: none
    ]
    for source in dict.fromkeys(adopted_missing):
        lines.append(
            DoctorLine(
                False,
                f"{source}: routes to triohooks but {adopted_path(agent, Path(source))} is "
                "missing: its hooks are gone",
            )
        )
    return lines
