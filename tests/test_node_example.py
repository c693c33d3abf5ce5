"""docs/protocol.md's Node.js client runs as the doc says.

The ```js block of the section "From another language (Node.js)" is examples/node-client.mjs,
character for character. That code runs with ``node`` against a real ``triohooks serve --config
examples/node-client.toml`` (a subprocess on 127.0.0.1 port 0, with a state dir of its own, so
the token is in the documented default place) and must print exactly the output the doc shows:
the ``rm -rf`` call blocked by the config, the harmless one allowed, the malformed one answered
with an ``error``, the stream's records, the stats; with a wrong token, the doc's 401 message
on stderr and exit 1.

The script needs the ``ws`` npm package: it is installed once with npm into
``<repo>/.cache/node-example/`` (gitignored). Without ``node``, or when npm cannot install
``ws``, the tests are skipped and say why.
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
import typing
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

import pytest

from triohooks.fronts.wire import ServerMessage

from .interop import npm_reason, run_bounded

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "protocol.md"
SECTION = "## From another language (Node.js)"
SCRIPT = ROOT / "examples" / "node-client.mjs"
CONFIG = ROOT / "examples" / "node-client.toml"
#: The URL the doc's output shows (the script's default); the test's server has its own port.
DOC_URL = "ws://127.0.0.1:8765/"
#: The token file the doc's 401 example names (relative to where the script runs).
WRONG_TOKEN_FILE = "wrong-token"
WS_MAJOR = "8"
CACHE_DIR = ROOT / ".cache" / "node-example"
NPM_TIMEOUT = 180.0
#: Bounds on the processes this module starts.
SERVE_START_TIMEOUT = 30.0
SERVE_STOP_TIMEOUT = 20.0
NODE_TIMEOUT = 30.0
#: Variables of the caller's environment that would point the script or the server elsewhere.
_STEERING = ("TRIOHOOKS_URL", "TRIOHOOKS_TOKEN_FILE", "TRIOHOOKS_STATE_DIR", "TRIOHOOKS_CONFIG_DIR")

_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


# -- what the doc shows -------------------------------------------------------------------------


class Shown(NamedTuple):
    """The Node.js section of docs/protocol.md: its script and the outputs it documents."""

    text: str
    script: str
    stdout: str
    refused: str


def shown() -> Shown:
    doc = DOC.read_text()
    start = doc.index(f"\n{SECTION}\n")
    end = doc.find("\n## ", start + 1)
    text = doc[start : end if end != -1 else len(doc)]
    fences = [(m.group(1).strip(), m.group(2)) for m in _FENCE.finditer(text)]
    scripts = [body for lang, body in fences if lang == "js"]
    assert len(scripts) == 1, f"{SECTION}: want one ```js block, found {len(scripts)}"
    texts = [body for lang, body in fences if lang == "text"]
    outputs = [body for body in texts if body.startswith("connected to ")]
    refusals = [body for body in texts if body.startswith("node-client: refused: HTTP 401")]
    assert len(outputs) == 1, f"{SECTION}: want one ```text block of the script's output"
    assert len(refusals) == 1, f"{SECTION}: want one ```text block of the 401 message"
    return Shown(text, scripts[0], outputs[0], refusals[0])


def test_the_doc_shows_the_example_file_and_its_config() -> None:
    doc = shown()
    assert doc.script == SCRIPT.read_text()  # the doc's block is the file, exactly
    assert "triohooks serve --config examples/node-client.toml" in doc.text
    assert "node examples/node-client.mjs" in doc.text
    assert CONFIG.is_file()
    # It is an ES module, and says so: the file name, and the imports.
    assert SCRIPT.suffix == ".mjs"
    assert re.search(r'^import WebSocket from "ws";$', doc.script, re.MULTILINE)
    # The doc's outputs are what the script prints for the calls it makes.
    assert f"connected to {DOC_URL}" in doc.stdout
    assert "blocked: rm -rf /tmp/x: " in doc.stdout
    assert "allowed: ls /tmp " in doc.stdout
    assert doc.refused.endswith(f"token in {WRONG_TOKEN_FILE}\n")


def test_the_script_handles_every_frame_the_server_sends() -> None:
    script = shown().script
    tags = {t.__struct_config__.tag for t in typing.get_args(ServerMessage)}
    handled = set(re.findall(r'\.type === "(\w+)"', script))
    # Replies are matched to their requests by id; the comment lists the types that resolve.
    (resolved,) = re.findall(r"waiter\.resolve\(msg\); // (.*)", script)
    handled |= set(re.findall(r"\w+", resolved)) - {"or"}
    assert handled == tags
    assert "unexpected-response" in script  # a refused handshake (401, 503)


# -- installing ws ------------------------------------------------------------------------------


class Unavailable(Exception):
    """What the Node.js tests need cannot be had here; the message says why."""


def _has_ws(prefix: Path) -> bool:
    try:
        meta = json.loads((prefix / "node_modules" / "ws" / "package.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(meta, dict) and str(meta.get("version", "")).startswith(f"{WS_MAJOR}.")


def install_ws(cache_dir: Path = CACHE_DIR) -> Path:
    """``<cache_dir>/ws-8/node_modules``, with ``ws`` 8 in it, installed with npm on first use
    (into a staging dir renamed into place under a lock, so concurrent runs don't clash)."""
    target = cache_dir / f"ws-{WS_MAJOR}"
    if _has_ws(target):
        return target / "node_modules"
    npm = shutil.which("npm")
    if npm is None:
        raise Unavailable(f"npm not found on PATH: cannot install ws@{WS_MAJOR}")
    cache_dir.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + NPM_TIMEOUT + 30
    with open(cache_dir / f"ws-{WS_MAJOR}.lock", "w") as lock:
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise Unavailable(f"{lock.name} is held by another process") from None
                time.sleep(0.2)
        try:
            if not _has_ws(target):  # another process may have installed it meanwhile
                _install_locked(npm, target)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return target / "node_modules"


def _install_locked(npm: str, target: Path) -> None:
    for stale in target.parent.glob(f".{target.name}.tmp-*"):  # from a killed run
        shutil.rmtree(stale, ignore_errors=True)
    staging = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    staging.mkdir(parents=True)
    env = {**os.environ, "npm_config_update_notifier": "false", "npm_config_fund": "false"}
    argv = [npm, "install", "--prefix", str(staging), "--no-audit", "--no-fund"]
    argv += ["--fetch-retries=1", "--fetch-retry-mintimeout=2000", "--fetch-retry-maxtimeout=5000"]
    argv.append(f"ws@{WS_MAJOR}")
    try:
        try:
            done = run_bounded(argv, timeout=NPM_TIMEOUT, cwd=staging, env=env)
        except subprocess.TimeoutExpired:
            raise Unavailable(
                f"`npm install ws@{WS_MAJOR}` did not finish in {NPM_TIMEOUT:.0f} s (offline?)"
            ) from None
        except OSError as exc:
            raise Unavailable(f"cannot run {npm}: {exc}") from None
        if done.returncode != 0:
            reason = npm_reason(done.stderr or done.stdout)
            raise Unavailable(f"`npm install ws@{WS_MAJOR}` exited {done.returncode}: {reason}")
        if not _has_ws(staging):
            raise Unavailable(f"`npm install ws@{WS_MAJOR}` left no ws {WS_MAJOR}.x in {staging}")
        shutil.rmtree(target, ignore_errors=True)  # a broken earlier install
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


class Node(NamedTuple):
    node: str
    node_modules: Path


@functools.cache
def find_node() -> Node | str:
    """node and a ``node_modules`` with ``ws``, or why not (tried once per test run)."""
    found = shutil.which("node")
    if found is None:
        return "node not found on PATH: the Node.js client example cannot run"
    try:
        return Node(found, install_ws())
    except Unavailable as exc:
        return f"the Node.js client example needs the ws package: {exc}"


@pytest.fixture
def node() -> Node:
    found = find_node()
    if isinstance(found, str):
        pytest.skip(found)
    return found


# -- a real server and the script ---------------------------------------------------------------


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _STEERING}
    env.update(extra)
    return env


class Served(NamedTuple):
    url: str
    state_dir: Path


def _read_line(proc: subprocess.Popen[bytes], prefix: bytes, timeout: float) -> bytes:
    """The first line of the process's stdout starting with ``prefix``."""
    assert proc.stdout is not None
    fd, buf = proc.stdout.fileno(), b""
    deadline = time.monotonic() + timeout
    while True:
        for line in buf.split(b"\n")[:-1]:
            if line.startswith(prefix):
                return line
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no {prefix!r} line in {timeout:.0f} s; stdout: {buf!r}")
        if select.select([fd], [], [], left)[0]:
            chunk = os.read(fd, 4096)
            if not chunk:
                raise RuntimeError(f"serve exited {proc.wait()} before listening: {buf!r}")
            buf += chunk


@contextmanager
def triohooks_serve(tmp_path: Path) -> Iterator[Served]:
    """``triohooks serve --port 0 --config examples/node-client.toml`` as a user runs it (its
    token generated into its own state dir); stopped with SIGTERM, killed if it lingers."""
    state_dir, config_dir, workspace = tmp_path / "state", tmp_path / "config", tmp_path / "ws"
    for path in (config_dir, workspace):
        path.mkdir()
    env = clean_env(TRIOHOOKS_STATE_DIR=str(state_dir), TRIOHOOKS_CONFIG_DIR=str(config_dir))
    argv = [sys.executable, "-m", "triohooks", "serve", "--port", "0", "--no-audit"]
    argv += ["--config", str(CONFIG), "--workspace", str(workspace)]
    with open(tmp_path / "serve.stderr", "wb") as stderr:
        proc = subprocess.Popen(
            argv,
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            start_new_session=True,
        )
    try:
        try:
            line = _read_line(proc, b"triohooks serve: listening on ", SERVE_START_TIMEOUT)
        except (TimeoutError, RuntimeError) as exc:
            pytest.fail(f"{exc}\nstderr: {(tmp_path / 'serve.stderr').read_text()}")
        url = line.decode().rpartition(" ")[2]
        assert (state_dir / "serve-token").is_file()  # the documented default place
        yield Served(url, state_dir)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.communicate(timeout=SERVE_STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            pytest.fail(f"triohooks serve did not stop within {SERVE_STOP_TIMEOUT:.0f} s")
    assert proc.returncode == 0, (tmp_path / "serve.stderr").read_text()


def run_script(
    node: Node, tmp_path: Path, args: Sequence[str], env: Mapping[str, str]
) -> subprocess.CompletedProcess[str]:
    """Run the doc's script, as a file next to a ``node_modules`` that has ``ws``."""
    here = tmp_path / "client"
    here.mkdir(exist_ok=True)
    script = here / "node-client.mjs"
    script.write_text(shown().script)
    link = here / "node_modules"
    if not link.exists():
        link.symlink_to(node.node_modules, target_is_directory=True)
    try:
        return run_bounded([node.node, str(script), *args], timeout=NODE_TIMEOUT, cwd=here, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"node {script.name} did not finish in {NODE_TIMEOUT:.0f} s")


@pytest.mark.slow
@pytest.mark.parametrize("given", ["argv", "env"])
def test_the_node_client_prints_what_the_doc_shows(node: Node, tmp_path: Path, given: str) -> None:
    with triohooks_serve(tmp_path) as served:
        if given == "argv":  # the URL as an argument, the token file found in the state dir
            env = clean_env(TRIOHOOKS_STATE_DIR=str(served.state_dir))
            done = run_script(node, tmp_path, [served.url], env)
        else:  # both from the environment
            token_file = tmp_path / "token-copy"
            shutil.copy(served.state_dir / "serve-token", token_file)
            env = clean_env(TRIOHOOKS_URL=served.url, TRIOHOOKS_TOKEN_FILE=str(token_file))
            done = run_script(node, tmp_path, [], env)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    expected = shown().stdout.replace(DOC_URL, served.url)
    assert done.stdout.splitlines() == expected.splitlines()
    assert done.stdout == expected
    # Spelled out: the config really blocks the `rm -rf` call and lets the harmless one through.
    assert "blocked: rm -rf /tmp/x: blocked by pre_tool hook: rm -rf needs a human" in done.stdout
    assert 'allowed: ls /tmp (args {"command":"ls /tmp"})' in done.stdout


@pytest.mark.slow
def test_a_wrong_token_is_refused_with_401_and_exit_1(node: Node, tmp_path: Path) -> None:
    with triohooks_serve(tmp_path) as served:
        (tmp_path / "client").mkdir()
        (tmp_path / "client" / WRONG_TOKEN_FILE).write_text("not-the-token-of-this-server\n")
        env = clean_env(TRIOHOOKS_STATE_DIR=str(served.state_dir))  # ignored: a file is given
        done = run_script(node, tmp_path, [served.url, WRONG_TOKEN_FILE], env)
        # The refusal did not hurt the server: the right token still gets in.
        still = run_script(node, tmp_path, [served.url], env)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stdout == ""
    assert done.stderr == shown().refused
    assert still.returncode == 0, still.stderr


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.mark.slow
def test_no_token_file_or_no_server_is_exit_1(node: Node, tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    url = f"ws://127.0.0.1:{_closed_port()}/"
    done = run_script(node, tmp_path, [url], clean_env(TRIOHOOKS_STATE_DIR=str(state)))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.startswith("node-client: cannot read the token file (is triohooks serve")
    assert str(state / "serve-token") in done.stderr
    (state / "serve-token").write_text("some-token\n")
    done = run_script(node, tmp_path, [url], clean_env(TRIOHOOKS_STATE_DIR=str(state)))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.startswith(f"node-client: cannot connect to {url}: "), done.stderr
