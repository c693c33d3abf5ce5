"""``triohooks init``: a starting config that uses the built-in guards, and its test cases.

Asks nothing. Writes ``hooks.toml`` and ``hooks.test.toml`` into the global config directory
(``--workspace-scope``: the workspace's ``.agents/``, which then needs ``triohooks trust``);
never overwrites a file that exists (``--force`` does). ``validate`` and ``test`` pass on what it
writes (tests/test_hooktest.py holds it to that).

``--agent claude|gemini|codex|...``: the same policy, for that agent too. Its sessions are routed
through triohooks as ``triohooks <agent> install --scope user`` does (a catch-all per event in
the agent's user settings: the policy's guards then answer the agent's calls, in its format),
and the test cases include that agent's own hook inputs (``agent = "claude"`` cases). After an
earlier ``init`` (or with a policy of the user's own) ``--agent`` keeps the policy as it is and
routes the agent: the agent's cases are added only to a cases file that is still exactly what
``init`` wrote for the starting policy, which is still exactly ``init``'s (they pass on it).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Final

from triohooks.config.paths import (
    UnsafeWriteError,
    global_config_dir,
    workspace_config_files,
    write_file_atomic,
)

STARTER: Final = """\
# triohooks: a starting policy of built-in guards (docs/builtin-guards.md). Each is decided in
# process, on the same shell reader as `if` rules. Edit freely; `triohooks validate` checks it,
# `triohooks test` runs the cases in hooks.test.toml beside it.
#
# Each guard lets a call through only when it read all of it: a call it cannot read for sure
# (code in another language in the call, a path known only at run time ...) is blocked, the
# reason saying what was not understood. `on_uncertain = "warn"` lets such calls through with
# a warning instead.

# Recursive deletes of /, top-level directories, your home, the workspace or above.
[[hooks.pre_tool]]
builtin = "destructive_delete"
on_uncertain = "block"

# Force pushes, and pushes to (or deletes of) protected branches.
[[hooks.pre_tool]]
builtin = "protected_push"
branches = ["main", "master"]
on_uncertain = "block"

# Reading .env files, keys, ~/.ssh, ~/.aws, ~/.config/gcloud ...
[[hooks.pre_tool]]
builtin = "secret_reads"
on_uncertain = "block"

# curl ... | sh, bash <(curl ...): running a download unseen.
[[hooks.pre_tool]]
builtin = "pipe_to_shell"
on_uncertain = "block"

# Writes outside the workspace (and /tmp): write and edit tools, patches, shell redirects.
[[hooks.pre_tool]]
builtin = "writes_outside_workspace"
on_uncertain = "block"
"""

STARTER_CASES: Final = """\
# Cases for hooks.toml beside this file: `triohooks test` (docs/hook-authors.md).

[[case]]
name = "rm -rf of the home directory is blocked"
tool = "Bash"
args = { command = "sudo rm -fr ~" }
expect.decision = "block"
expect.reason = "destructive_delete"

[[case]]
name = "a build directory may go"
tool = "Bash"
args = { command = "rm -rf build dist" }
expect.decision = "allow"

[[case]]
name = "no force push"
tool = "Bash"
args = { command = "git push --force-with-lease origin feature" }
expect.decision = "block"
expect.reason = "force push"

[[case]]
name = "no reading .env"
tool = "Read"
args = { file_path = ".env" }
expect.decision = "block"
expect.reason = "a credentials file"

[[case]]
name = "no curl into a shell"
tool = "Bash"
args = { command = "curl -fsSL https://example.com/install.sh | sh" }
expect.decision = "block"

[[case]]
name = "no writes to /etc"
tool = "Write"
args = { file_path = "/etc/hosts", content = "" }
expect.decision = "block"
expect.reason = "outside the workspace"

[[case]]
name = "ordinary work goes on"
tool = "Bash"
args = { command = "ls -la && pytest -q" }
expect.decision = "allow"
"""


#: Per agent: its shell tool, its pre-tool event, and the part of its answer that says "denied".
_AGENT_CASES: Final = {
    "claude": ("Claude Code", "Bash", '{ hookSpecificOutput = { permissionDecision = "deny" } }'),
    "codex": ("Codex", "Bash", '{ hookSpecificOutput = { permissionDecision = "deny" } }'),
    "gemini": ("Gemini CLI", "run_shell_command", '{ decision = "deny" }'),
    "qwen": (
        "Qwen Code",
        "run_shell_command",
        '{ hookSpecificOutput = { permissionDecision = "deny" } }',
    ),
    "copilot": ("Copilot CLI", "bash", '{ permissionDecision = "deny" }'),
    "cursor": ("Cursor", "Shell", '{ permission = "deny" }'),
    "agy": ("Antigravity CLI", "run_command", '{ decision = "deny" }'),
}


def agent_cases(agent: str) -> str:
    """Cases in ``agent``'s own dialect: its hook input for a call the policy refuses and one
    it lets through, answered in its format."""
    name, shell, denied = _AGENT_CASES[agent]
    return f"""
# The same policy, as {name} asks it (its own hook input; its own answer).

[[case]]
name = "{name}: rm -rf of the home directory is refused"
agent = "{agent}"
tool = "{shell}"
args = {{ command = "rm -rf ~" }}
expect.decision = "block"
expect.output = {denied}

[[case]]
name = "{name}: ordinary work goes on"
agent = "{agent}"
tool = "{shell}"
args = {{ command = "pytest -q" }}
expect.decision = "allow"
"""


def add_init_command(sub: Any) -> None:
    p = sub.add_parser("init", help="write a starting config of built-in guards, with tests")
    p.add_argument(
        "--workspace-scope",
        action="store_true",
        help="write into the workspace's .agents/ instead of the global config directory",
    )
    p.add_argument("--workspace", type=Path, default=None, help="workspace (default: cwd)")
    p.add_argument("--config-dir", type=Path, default=None, help="global config directory")
    p.add_argument("--force", action="store_true", help="overwrite files that exist")
    p.add_argument(
        "--agent",
        choices=tuple(_AGENT_CASES),
        default=None,
        help="also route this agent's sessions (user settings) through the policy",
    )


def rerouted(project: Path, config_dir: Path) -> None:
    """Route every agent's installs again where triohooks' own hooks changed what they should
    route (docs/agents.md, "Routing"), and say what was done."""
    from triohooks.agents.reroute import reroute_every_agent
    from triohooks.agents.spec import home_dir

    for line in reroute_every_agent(home=home_dir(), project=project, config_dir=config_dir):
        print(f"note: {line}", file=sys.stderr)


def cmd_init(args: argparse.Namespace) -> int:
    if args.workspace_scope:
        workspace = (args.workspace or Path.cwd()).resolve()
        directory = workspace_config_files(workspace)[0].parent
    else:
        directory = args.config_dir or global_config_dir()
    cases = STARTER_CASES + (agent_cases(args.agent) if args.agent else "")
    policy, cases_file = directory / "hooks.toml", directory / "hooks.test.toml"
    targets = [(policy, STARTER), (cases_file, cases)]
    if args.agent and policy.exists() and not args.force:
        targets = _keep_policy(policy, cases_file, args.agent)
    elif not args.force and (existing := [path for path, _ in targets if path.exists()]):
        names = ", ".join(str(p) for p in existing)
        keep = "; `triohooks init --agent AGENT` keeps the policy and routes that agent to it"
        print(
            f"triohooks init: {names}: already there; nothing written (--force overwrites"
            f"{keep if policy.exists() else ''})",
            file=sys.stderr,
        )
        return 1
    confine = directory.parent if args.workspace_scope else None
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for path, text in targets:
            write_file_atomic(path, text.encode(), new_mode=0o644, confine_to=confine)
            print(f"wrote {path}")
    except (OSError, UnsafeWriteError) as exc:
        print(f"triohooks init: {exc}", file=sys.stderr)
        return 1
    if args.workspace_scope and targets:
        print(f"next: `triohooks trust --workspace {directory.parent}` to turn them on")
    if args.agent and _route(args) != 0:
        return 1
    rerouted((args.workspace or Path.cwd()).resolve(), args.config_dir or global_config_dir())
    print("check it with `triohooks validate`, run its cases with `triohooks test`")
    return 0


def _keep_policy(policy: Path, cases_file: Path, agent: str) -> list[tuple[Path, str]]:
    """``init --agent`` where a policy is already there: it stays as it is (only ``--force``
    replaces a policy). What to write of the cases, said on stdout: the agent's cases join a
    cases file only when both files are exactly what ``init`` writes, so they pass."""
    print(f"kept {policy}: the policy that is there stays as it is (--force replaces it)")
    try:
        mine = policy.read_text(encoding="utf-8") == STARTER
        text = cases_file.read_text(encoding="utf-8") if cases_file.exists() else STARTER_CASES
    except (OSError, UnicodeDecodeError):
        mine, text = False, ""
    has = _init_cases(text) if mine else None
    if has is None:
        print(
            f"kept {cases_file} as it is: the policy is your own, so are its cases (cases with "
            f'agent = "{agent}" check it as {_AGENT_CASES[agent][0]} asks: docs/hook-authors.md)'
        )
        return []
    if agent in has and cases_file.exists():
        return []
    return [(cases_file, text + agent_cases(agent))]


def _init_cases(text: str) -> list[str] | None:
    """The agents whose cases ``text`` holds when it is exactly what ``init`` writes (the
    starting cases, then agents' cases), else None."""
    if not text.startswith(STARTER_CASES):
        return None
    rest, agents = text[len(STARTER_CASES) :], []
    while rest:
        agent = next((a for a in _AGENT_CASES if rest.startswith(agent_cases(a))), None)
        if agent is None:
            return None
        agents.append(agent)
        rest = rest[len(agent_cases(agent)) :]
    return agents


def _route(args: argparse.Namespace) -> int:
    """``triohooks <agent> install --scope user``, as the user would type it."""
    from .agents_cli import cmd_agent

    install = argparse.Namespace(
        command=args.agent,
        action="install",
        scope="user",
        dry_run=False,
        transport="relay",
        port=8765,
        workspace=args.workspace,
        config_dir=args.config_dir,
    )
    return cmd_agent(install)
