"""Every Python process triohooks starts runs isolated from the project and from what the
agent's environment says of Python (docs/security.md, "What triohooks starts").

A hostile repository plants each way a Python start can be made to run its code -- a
``triohooks/`` package, ``sitecustomize.py``, ``usercustomize.py`` and a ``.pth`` file in the
cwd -- and the agent's environment carries ``PYTHONPATH``, ``PYTHONSTARTUP``, ``PYTHONHOME``,
``PYTHONUSERBASE`` and ``PYTHONINSPECT`` pointing at it. Each planted file, if it ever runs,
leaves a mark; the guard's answer must still be the user's hooks' own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from triohooks.agents.adopt import relay_command
from triohooks.agents.spec import NATIVE_RELAY
from triohooks.fronts import relay

from .test_agent_endpoint import (
    Env,
    autostarted,
    autostarted_serve,
    denial,
    make_env,
    run_bare_relay,
)

pytestmark = pytest.mark.slow

MARK = "import pathlib; pathlib.Path({path!r}).write_text('ran')\n"


class Hostile:
    """A repository (the agent's project) that tries every import-time trick, and the
    environment an agent would hand on with its interpreter settings."""

    def __init__(self, env: Env, form: str = "all") -> None:
        self.marks = env.root / "marks"
        self.marks.mkdir()
        repo = env.project
        package = repo / "triohooks"
        (package / "fronts").mkdir(parents=True)
        impostor = MARK.format(path=str(self.marks / "package")) + "print('{}')\n"
        for path in (
            package / "__init__.py",
            package / "__main__.py",
            package / "fronts" / "relay.py",
        ):
            path.write_text(impostor)
        (package / "fronts" / "__init__.py").write_text(impostor)
        (repo / "sitecustomize.py").write_text(MARK.format(path=str(self.marks / "sitecustomize")))
        (repo / "usercustomize.py").write_text(MARK.format(path=str(self.marks / "usercustomize")))
        (repo / "evil.pth").write_text(MARK.format(path=str(self.marks / "pth")))
        (repo / "startup.py").write_text(MARK.format(path=str(self.marks / "startup")))
        user_site = (
            repo / ".userbase" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
        )
        (user_site / "site-packages").mkdir(parents=True)
        (user_site / "site-packages" / "evil.pth").write_text(
            MARK.format(path=str(self.marks / "user-pth"))
        )
        (repo / "home" / "lib").mkdir(parents=True)  # a PYTHONHOME with no standard library
        forms = {
            "PYTHONPATH": {"PYTHONPATH": str(repo)},
            "PYTHONSTARTUP": {"PYTHONSTARTUP": str(repo / "startup.py"), "PYTHONINSPECT": "1"},
            "PYTHONHOME": {"PYTHONHOME": str(repo / "home")},
            "PYTHONUSERBASE": {"PYTHONUSERBASE": str(repo / ".userbase")},
        }
        #: The agent's environment for ``form`` ("cwd": only the planted files), or all of it.
        self.environ = (
            forms.get(form, {})
            if form != "all"
            else {k: v for f in forms.values() for k, v in f.items()}
        )

    def ran(self) -> list[str]:
        return sorted(p.name for p in self.marks.iterdir())


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Env:
    return make_env(tmp_path, monkeypatch)


FORMS = ["cwd", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONUSERBASE", "all"]


@pytest.mark.parametrize("form", FORMS)
def test_the_relays_fallback_imports_nothing_of_the_project(env: Env, form: str) -> None:
    hostile = Hostile(env, form)
    done = run_bare_relay(env, env.body("git push origin main"), environ=hostile.environ)
    assert done.returncode == 0, done.stderr
    assert denial(done) == ("deny", "no pushing")
    allowed = run_bare_relay(env, env.body("ls"), environ=hostile.environ)
    assert json.loads(allowed.stdout) == {}, allowed.stderr
    assert hostile.ran() == []


def test_the_catch_alls_python_relay_imports_nothing_of_the_project(env: Env) -> None:
    """The form a user-scope catch-all runs where no native client is built (``python -I -S
    -c BOOT DIR``): the project's own ``relay.py`` is never the one imported."""
    hostile = Hostile(env)
    (env.project / "relay.py").write_text(
        MARK.format(path=str(hostile.marks / "relay")) + "def main():\n    return 0\n"
    )
    command = relay_command("claude", "user", 60, relay_script=relay.__file__)
    assert not (env.state / NATIVE_RELAY).exists()
    for body, expected in ((env.body("git push origin main"), "deny"), (env.body("ls"), None)):
        done = subprocess.run(
            ["bash", "-c", command],
            input=body,
            capture_output=True,
            env={**env.environ(), **hostile.environ},
            cwd=env.project,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        answer = json.loads(done.stdout)
        assert (denial(done)[0] if answer else None) == expected
    assert hostile.ran() == []


def test_the_hooks_still_get_the_agents_environment(env: Env) -> None:
    """Isolation is the relay's own interpreter's: a hook gets the session's variables,
    Python's among them, as the agent would hand them on."""
    hostile = Hostile(env)
    env.adopted.write_text(
        json.dumps(
            {
                "PreToolUse": [
                    {"hooks": [{"type": "command", "command": 'echo "$PYTHONPATH" >&2; exit 2'}]}
                ]
            }
        )
    )
    done = run_bare_relay(env, env.body("ls"), environ=hostile.environ)
    assert denial(done) == ("deny", str(env.project))


@pytest.mark.parametrize("form", FORMS)
def test_a_service_unit_runs_serve_isolated(env: Env, form: str) -> None:
    hostile = Hostile(env, form)
    argv = relay.isolated_command("--version")
    assert argv[1] == "-I"
    done = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        cwd=env.project,
        env={**env.environ(), **hostile.environ},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.startswith("triohooks "), done.stderr
    assert hostile.ran() == []


def test_a_user_site_install_is_found_by_its_own_path(tmp_path: Path) -> None:
    """Installed under a directory that ``-I`` does not put on ``sys.path`` (a user site): the
    isolated command names that directory itself, and only it."""
    root = tmp_path / "user-site"
    fronts = root / "triohooks" / "fronts"
    fronts.mkdir(parents=True)
    code = (
        "import sys; sys.argv[0] = sys.argv[1]; ns = {'__file__': sys.argv[1], "
        "'__name__': 'relay_copy'}; exec(open(sys.argv[2]).read(), ns); "
        "print(ns['package_root']()); print(repr(ns['isolated_command']('serve')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(fronts / "relay.py"), relay.__file__],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found, argv_text = done.stdout.splitlines()
    assert found == str(root)
    assert f"sys.path.append({str(root)!r})" in argv_text and "'-I'" in argv_text


@pytest.mark.allow_leaks
def test_the_auto_started_serve_is_isolated_and_keeps_no_python_settings(env: Env) -> None:
    hostile = Hostile(env)
    environ = {**hostile.environ, "TRIOHOOKS_NO_AUTOSTART": ""}
    first = run_bare_relay(env, env.body("git push"), environ=environ)
    assert denial(first) == ("deny", "no pushing"), first.stderr
    pid = None
    try:
        pid = autostarted_serve(env)["pid"]
        proc = psutil.Process(pid)
        assert proc.cmdline()[1] == "-I"
        assert not [k for k in proc.environ() if k.startswith("PYTHON")]
        second = run_bare_relay(env, env.body("git push"), environ=hostile.environ)
        assert denial(second) == ("deny", "no pushing")
        assert b"running the hooks here" not in second.stderr
    finally:
        procs = [psutil.Process(pid)] if pid is not None else autostarted(env)
        for proc in procs:
            proc.terminate()
            proc.wait(20)
    assert hostile.ran() == []


def test_without_isolation_the_same_repository_would_run(env: Env) -> None:
    """The trap is real: a plain ``python -m triohooks`` in that repository runs its code (so
    the tests above would fail if the isolation went)."""
    hostile = Hostile(env)
    subprocess.run(
        [sys.executable, "-m", "triohooks", "--version"],
        capture_output=True,
        cwd=env.project,
        env={**os.environ, "PYTHONPATH": str(env.project)},
        timeout=60,
        check=False,
    )
    assert "package" in hostile.ran() and "sitecustomize" in hostile.ran()
