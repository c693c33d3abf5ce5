"""``if`` rules: grammar, and the table of scripts x rules (soundness first, then savings)."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec
import pytest

from triohooks.match.ifrules import (
    IfRule,
    IfRuleError,
    parse_if_rule,
    rule_applies,
)

WS = "/work/ws"

# (rule, script, hook runs?). True rows are the soundness requirement: the script could run
# the program the rule names (or we cannot tell), so the hook must run. False rows show the
# filter still saves spawns where it safely can (and make the table able to fail both ways).
SHELL_TABLE: list[tuple[str, str, bool]] = [
    # plain word patterns
    ("shell(git log)", "git log --oneline", True),
    ("shell(git log)", "git log", True),
    ("shell(git log)", "git logs", True),  # not a git command: may be an alias
    ("shell(git log)", "git shortlog", False),
    ("shell(git log)", "git status", False),
    ("shell(git push)", "git commit -m 'push it' && git status", False),
    ("shell(rm)", "ls -la", False),
    ("shell(rm)", "echo rm", False),
    ("shell(rm)", "grep -r 'rm -rf' .", False),
    # quoting and escapes cannot dodge a rule
    ("shell(git push)", "'git' push", True),
    ("shell(git push)", '"git" "push" origin', True),
    ("shell(git push)", "g\\it pu\\sh", True),
    ("shell(git push)", "g''it p\"\"ush", True),
    ("shell(git push)", "$'\\x67it' push", True),
    ("shell(git push)", "$'\\147it' push", True),
    # lists, pipelines, subshells, substitutions
    ("shell(rm)", "ls | head && rm x", True),
    ("shell(rm)", "false || rm x", True),
    ("shell(rm)", "true; rm x", True),
    ("shell(rm)", "sleep 1 & rm x", True),
    ("shell(rm)", "(cd /tmp && rm x)", True),
    ("shell(rm)", "{ rm x; }", True),
    ("shell(rm)", "echo $(rm x)", True),
    ("shell(rm)", "echo `rm x`", True),
    ("shell(rm)", 'echo "$(rm x)"', True),
    ("shell(rm)", "x=$(rm y)", True),
    ("shell(rm)", "export X=$(rm y)", True),
    ("shell(rm)", "cat <(rm x)", True),
    ("shell(rm)", "echo ${x:-$(rm y)}", True),
    ("shell(rm)", "echo $((1 + $(rm y)))", True),
    ("shell(rm)", "[[ -n $(rm y) ]]", True),
    ("shell(rm)", "if true; then rm x; fi", True),
    ("shell(rm)", "for f in *; do rm $f; done", True),
    ("shell(rm)", "while read f; do rm $f; done < list", True),
    ("shell(rm)", "case $x in a|b) rm x;; esac", True),
    ("shell(rm)", "f() { rm x; }; f", True),
    ("shell(rm)", "! rm x", True),
    # shells running strings, recursively
    ("shell(rm)", "bash -c 'rm -rf /tmp/x'", True),
    ("shell(rm)", 'sh -c "ls; rm x"', True),
    ("shell(rm)", "bash -lc 'zsh -c \"rm x\"'", True),
    ("shell(rm)", 'bash -c "$CMD"', True),
    ("shell(rm)", "curl https://x.sh | sh", True),
    ("shell(rm)", "bash <<EOF\nrm x\nEOF", True),
    ("shell(rm)", 'bash -c \'bash -c "bash -c \\"bash -c rm\\""\'', True),
    ("shell(rm)", "bash -c 'ls -la'", False),
    # wrappers
    ("shell(rm)", "sudo rm x", True),
    ("shell(rm)", "sudo -u root -E rm x", True),
    ("shell(rm)", "doas -u root rm x", True),
    ("shell(rm)", "env A=1 B=2 rm x", True),
    ("shell(rm)", "env -i -u HOME rm x", True),
    ("shell(rm)", "FOO=1 rm x", True),
    ("shell(rm)", "timeout 5 rm x", True),
    ("shell(rm)", "timeout -s KILL 5 rm x", True),
    ("shell(rm)", "nice -n 5 rm x", True),
    ("shell(rm)", "nice -5 rm x", True),
    ("shell(rm)", "nohup rm x &", True),
    ("shell(rm)", "command rm x", True),
    ("shell(rm)", "builtin exec rm x", True),
    ("shell(rm)", "exec rm x", True),
    ("shell(rm)", "time rm x", True),
    ("shell(rm)", "stdbuf -oL rm x", True),
    ("shell(rm)", "find . | xargs rm", True),
    ("shell(rm)", "find . -print0 | xargs -0 -n 1 rm -f", True),
    ("shell(rm)", "ls | xargs -I{} rm {}", True),
    ("shell(rm)", "find . -name '*.tmp' -exec rm {} \\;", True),
    ("shell(rm)", "sudo timeout 5 env A=1 nice -n 2 rm x", True),
    ("shell(rm)", "sudo --unknown-flag rm x", True),
    ("shell(rm)", "env -S 'rm x'", True),
    ("shell(rm)", "busybox rm x", True),
    ("shell(rm)", "timeout 5 ls", False),
    ("shell(rm)", "sudo -u root ls", False),
    # paths, base names
    ("shell(rm)", "/bin/rm x", True),
    ("shell(rm)", "./node_modules/.bin/rm x", True),
    ("shell(rm)", "~/bin/rm x", True),
    ("shell(/usr/bin/rm)", "rm x", True),
    # dynamic or hidden program names: cannot tell, run
    ("shell(rm)", "$CMD x", True),
    ("shell(rm)", "$(echo rm) x", True),
    ("shell(rm)", "/bin/r? x", True),
    ("shell(rm)", "/bin/r[m] x", True),
    ("shell(rm)", "eval 'rm x'", True),
    ("shell(rm)", "source ./script.sh", True),
    ("shell(rm)", ". ./script.sh", True),
    ("shell(rm)", "trap 'rm x' EXIT", True),
    ("shell(rm)", "ls &&", True),  # parse error
    ("shell(rm)", "echo 'unterminated", True),
    # redirections
    ("shell(rm -rf)", "rm >/dev/null -rf /", True),
    ("shell(rm -rf)", "rm -rf / 2>&1 > log", True),
    ("shell(rm)", "2>/dev/null rm x", True),
    ("shell(rm -rf)", "ls | rm >x -rf /", True),
    ("shell(rm)", "ls > rm", False),
    # tree-sitter-bash newline mis-parses (#347, #316, #278)
    ("shell(rm)", "ls | head\nrm -rf /", True),
    ("shell(rm)", "ls | grep x | head -30\nrm -rf / && cd s", True),
    ("shell(rm)", "a | b | c\n\nrm -rf / || true", True),
    ("shell(rm)", "ls | ls | ls\nrm -rf /\ncat x | tee y >/dev/null", True),
    ("shell(rm)", "[ 2 -lt 3 ]\nrm >1\n[ ]", True),
    ("shell(rm)", "echo `date`\nrm -rf / ` true`", True),
    ("shell(rm)", "ls | head\r\nrm -rf /", True),
    ("shell(rm)", "ls |\nhead\nrm x", True),
    # here-docs
    ("shell(rm)", "cat <<EOF\n$(rm x)\nEOF", True),
    ("shell(rm)", "cat <<EOF | grep a\nbody\nEOF\nrm x", True),
    ("shell(rm)", "cat <<'EOF'\nrm x\nEOF", False),
    # python reading its program from a here-doc: code we cannot see
    ("shell(rm)", "python3 - <<'PY'\nimport os\nos.remove('x')\nPY", True),
    ("shell(rm)", "cat - <<'PY'\nimport os\nos.remove('x')\nPY", False),
    # argument-sensitive patterns and dynamic arguments
    ("shell(git push --force)", "git push --force origin", True),
    ("shell(git push --force)", "git push origin", False),
    ("shell(git push --force)", "git push $FLAGS", True),
    ("shell(git push --force)", "git $SUB --force", True),
    ("shell(git push --force)", "git push -- --force", False),
    ("shell(rm -rf /)", "rm -rf *", True),
    ("shell(rm -rf /)", "rm -rf /tmp", False),
    # globs over the whole command
    ("shell(git push *)", "git push", True),
    ("shell(git push *)", "git push origin main", True),
    ("shell(git push *)", "git pushx", True),  # not a git command: may be an alias
    ("shell(git rev *)", "git rev-parse HEAD", False),
    ("shell(git * --force)", "git push origin --force", True),
    ("shell(git * --force)", "git push origin", False),
    ("shell(*--no-verify*)", "git commit --no-verify -m x", True),
    ("shell(*--no-verify*)", "git commit -m x", False),
    ("shell(npm run ?uild)", "npm run build", True),
    ("shell(git push *)", "git $x", True),
    ("shell(git push *)", "git status $x", False),
    ("shell(git push *)", "'git' \"push\" -f", True),
    ("shell(curl *|*sh)", "curl x | sh", True),
    # regexes (RE2; POSIX classes work)
    ("shell(re:rm\\s+-[a-z]*r[a-z]*f.*)", "rm -rf /", True),
    ("shell(re:rm\\s+-[a-z]*r[a-z]*f.*)", "rm -r x", False),
    ("shell(re:git[[:space:]]+push.*)", "cd x && git push", True),
    ("shell(re:git push)", "git push origin", False),  # must match the whole command
    ("shell(re:git push.*)", "git push $remote", True),
    ("shell(re:rm.*)", "/usr/bin/rm -f x", True),
    # bare kind: any shell call
    ("shell", "ls", True),
]


@pytest.mark.parametrize(("rule", "script", "runs"), SHELL_TABLE)
def test_shell_rule_table(rule: str, script: str, runs: bool) -> None:
    parsed = parse_if_rule(rule)
    assert rule_applies(parsed, tool="bash", args={"command": script}, workspace=WS) is runs


def test_table_is_large_and_adversarial() -> None:
    assert len(SHELL_TABLE) >= 40
    assert sum(1 for *_, runs in SHELL_TABLE if not runs) >= 15


# --- which calls a shell rule looks at ---------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "args", "runs"),
    [
        ("bash", {"command": "rm x"}, True),
        ("Bash", {"command": "rm x"}, True),
        ("exec_command", {"cmd": "rm x"}, True),
        ("shell", {"command": ["bash", "-lc", "rm x"]}, True),
        ("shell", {"command": ["rm", "x"]}, True),
        ("shell", {"command": ["ls", "-la"]}, False),
        ("shell", {"command": ["env", "A=1", "/bin/rm", "x"]}, True),
        ("mcp__box__run", {"script": "rm x"}, True),  # unknown tool carrying a script
        ("bash", {}, True),  # a shell call we cannot read: run
        ("bash", {"command": {"weird": 1}}, True),
        ("bash", {"command": "ls"}, False),
        ("read_file", {"path": "rm"}, False),  # a non-shell call never matches
        ("str_replace_based_edit_tool", {"command": "rm", "path": "x"}, False),
        ("web_fetch", {"url": "https://rm"}, False),
    ],
)
def test_shell_rule_calls(tool: str, args: dict[str, object], runs: bool) -> None:
    rule = parse_if_rule("shell(rm)")
    assert rule_applies(rule, tool=tool, args=args, workspace=WS) is runs


# --- paths -------------------------------------------------------------------------------------


@pytest.fixture
def ws(tmp_path: Path) -> str:
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / ".env").write_text("X=1")
    (tmp_path / "link").symlink_to(tmp_path / "config")
    return str(tmp_path)


@pytest.mark.parametrize(
    ("rule", "tool", "args", "runs"),
    [
        ("read(.env)", "read_file", {"path": ".env"}, True),
        ("read(.env)", "read_file", {"path": "config/.env"}, True),
        ("read(.env)", "Read", {"file_path": "./config/../config/.env"}, True),
        ("read(.env)", "read_file", {"path": "src/main.py"}, False),
        ("read(.env)", "read_file", {"path": "link/.env"}, True),
        ("read(config/.env)", "read_file", {"path": "link/.env"}, True),  # via the symlink
        ("read(.env)", "grep", {"pattern": "X", "path": "config"}, True),  # dir may hold it
        ("read(.env)", "grep", {"pattern": "X"}, True),  # no path: the workspace
        ("read(config/**)", "grep", {"pattern": "X", "path": "src"}, False),
        ("read(config/**)", "list_dir", {"path": "."}, True),
        ("read(src/**/*.py)", "read_file", {"path": "src/pkg/a.py"}, True),
        ("read(src/**/*.py)", "read_file", {"path": "src/a.py"}, True),
        ("read(src/**/*.py)", "read_file", {"path": "docs/a.py"}, False),
        ("read(src/*.py)", "read_file", {"path": "src/pkg/a.py"}, False),
        ("read(secrets)", "read_file", {"path": "secrets/key.pem"}, True),  # under a dir
        ("read(/etc/**)", "read_file", {"path": "/etc/passwd"}, True),
        ("read(/etc/**)", "read_file", {"path": "../../../../../../etc/passwd"}, True),
        ("read(/etc/**)", "read_file", {"path": "etc/passwd"}, False),
        ("read(*.pem)", "view", {"paths": ["a.txt", "k/b.pem"]}, True),
        ("read(*.pem)", "view", {"paths": ["a.txt", "b.txt"]}, False),
        ("read(*.pem)", "read_file", {"path": 42}, True),  # odd value: run
        ("read(*.pem)", "read_file", {}, True),  # read tool, no path: run
        ("read(*.pem)", "write_file", {"path": "k.pem"}, False),  # another kind
        ("read(*.pem)", "bash", {"command": "cat k.pem"}, False),  # use shell(...) for that
        ("read(*.pem)", "mcp__fs__read_file", {"path": "k.pem"}, True),
        ("read(*.pem)", "frobnicate", {"path": "k.pem"}, True),  # unknown tool: in doubt
        ("read(*.pem)", "frobnicate", {"query": "k.pem"}, False),
        ("write(src/**)", "edit_file", {"path": "src/a.py"}, True),
        ("write(src/**)", "write_file", {"path": "docs/a.md"}, False),
        (
            "write(src/**)",
            "str_replace_based_edit_tool",
            {"command": "create", "path": "src/x"},
            True,
        ),
        (
            "write(src/**)",
            "apply_patch",
            {"input": "*** Begin Patch\n*** Update File: src/a.py\n@@\n-a\n+b\n*** End Patch"},
            True,
        ),
        (
            "write(src/**)",
            "apply_patch",
            {"input": "*** Begin Patch\n*** Update File: docs/a.md\n*** End Patch"},
            False,
        ),
        ("write(src/**)", "apply_patch", {"input": "garbage"}, True),
        ("delete(src/**)", "delete_file", {"path": "src/a.py"}, True),
        ("delete(src/**)", "move_file", {"source": "src/a.py", "destination": "b.py"}, True),
        ("delete(src/**)", "delete_file", {"path": "b.py"}, False),
        ("delete(src/**)", "rm", {"path": "."}, True),  # deleting the root removes src
        (
            "delete(src/**)",
            "apply_patch",
            {"input": "*** Begin Patch\n*** Delete File: src/a.py\n*** End Patch"},
            True,
        ),
        ("write", "write_file", {"path": "anything"}, True),
        ("write", "read_file", {"path": "anything"}, False),
    ],
)
def test_path_rules(ws: str, rule: str, tool: str, args: dict[str, object], runs: bool) -> None:
    assert rule_applies(parse_if_rule(rule), tool=tool, args=args, workspace=ws) is runs


def test_absolute_path_inside_workspace_is_made_relative(ws: str) -> None:
    rule = parse_if_rule("read(config/.env)")
    path = os.path.join(ws, "config", ".env")
    assert rule_applies(rule, tool="read_file", args={"path": path}, workspace=ws)


def test_directory_containing_the_workspace_may_hold_anything(ws: str) -> None:
    rule = parse_if_rule("read(config/.env)")
    parent = os.path.dirname(ws)
    assert rule_applies(rule, tool="grep", args={"path": parent}, workspace=ws)


def test_home_glob(ws: str) -> None:
    rule = parse_if_rule("read(~/.ssh/**)")
    home = os.path.expanduser("~/.ssh/id_rsa")
    assert rule_applies(rule, tool="read_file", args={"path": home}, workspace=ws)
    assert not rule_applies(rule, tool="read_file", args={"path": "a"}, workspace=ws)


# --- web, skill, agent, tool names -------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "tool", "args", "runs"),
    [
        ("web(example.com)", "web_fetch", {"url": "https://example.com/a"}, True),
        ("web(example.com)", "web_fetch", {"url": "https://EXAMPLE.com:8443/a"}, True),
        ("web(example.com)", "web_fetch", {"url": "https://www.example.com/a"}, False),
        ("web(*.example.com)", "fetch", {"url": "https://a.b.example.com"}, True),
        ("web(*.example.com)", "fetch", {"url": "http://example.com"}, True),
        ("web(*.example.com)", "fetch", {"url": "http://example.com.evil.io"}, False),
        ("web(*.example.com)", "fetch", {"url": "example.com/path"}, True),
        ("web(*.example.com)", "fetch", {"url": "http://[::1"}, True),  # unparsable: run
        ("web(*.example.com)", "web_fetch", {}, True),
        ("web(*.example.com)", "web_search", {"query": "x"}, True),
        ("web(*.example.com)", "mcp__x__get", {"url": "https://example.com"}, True),
        ("web(*.example.com)", "read_file", {"url": "https://example.com"}, False),
        ("web", "fetch", {"url": "https://x.org"}, True),
        ("skill(pdf*)", "Skill", {"skill": "pdf-tools"}, True),
        ("skill(pdf*)", "Skill", {"skill": "docx"}, False),
        ("skill(pdf*)", "Skill", {}, True),
        ("skill(pdf*)", "read_file", {"skill": "pdf"}, False),
        ("agent(reviewer)", "Task", {"subagent_type": "reviewer", "prompt": "x"}, True),
        ("agent(reviewer)", "Task", {"subagent_type": "general"}, False),
        ("agent(reviewer)", "spawn_agent", {"agent": "Reviewer"}, True),
        ("agent", "task", {}, True),
        ("write_file", "write_file", {}, True),
        ("write_file", "Write-File", {}, True),
        ("write_file", "mcp__fs__write_file", {}, True),
        ("write_file", "read_file", {}, False),
    ],
)
def test_other_rules(rule: str, tool: str, args: dict[str, object], runs: bool) -> None:
    assert rule_applies(parse_if_rule(rule), tool=tool, args=args, workspace=WS) is runs


# --- grammar -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty rule"),
        ("   ", "empty rule"),
        ("shell()", "empty pattern"),
        ("shell(  )", "empty pattern"),
        ("Bash(git push)", "unknown rule kind 'Bash'"),
        ("shell(git push", "cannot read rule"),
        ("shell(a) || read(b)", "unbalanced parentheses"),
        ("shell(git 'push)", "cannot split shell pattern"),
        ("shell(re:)", "empty regex"),
        ("shell(re:[)", "bad pattern"),
        ("shell(re:a(?=b))", "bad pattern"),  # RE2: no lookaround
        ("read([abc)", "unclosed ["),
        ("read(re:.*)", "only for shell"),
        ("read x", "cannot read rule"),
        ("123", "cannot read rule"),
    ],
)
def test_bad_rules_raise(text: str, message: str) -> None:
    with pytest.raises(IfRuleError) as info:
        parse_if_rule(text)
    assert message in str(info.value)
    assert isinstance(info.value, ValueError)


def test_rule_is_immutable_plain_data() -> None:
    rule = parse_if_rule("  shell(git  'push' --force)  ")
    assert rule == IfRule(
        text="  shell(git  'push' --force)  ",
        kind="shell",
        form="words",
        pattern="git push --force",
        words=("git", "push", "--force"),
    )
    with pytest.raises(AttributeError):
        rule.kind = "read"  # type: ignore[misc]
    assert hash(rule) == hash(parse_if_rule("  shell(git  'push' --force)  "))
    assert msgspec.json.decode(msgspec.json.encode(rule), type=IfRule) == rule


@pytest.mark.parametrize(
    ("text", "kind", "form"),
    [
        ("shell(git push)", "shell", "words"),
        ("shell(git push *)", "shell", "glob"),
        ("shell(re:git .*)", "shell", "regex"),
        ("shell", "shell", "any"),
        ("read(src/**)", "read", "glob"),
        ("web(*.x.org)", "web", "glob"),
        ("skill(x)", "skill", "glob"),
        ("agent(x)", "agent", "glob"),
        ("my_tool", "tool", "words"),
        ("mcp__srv__tool-x", "tool", "words"),
    ],
)
def test_rule_forms(text: str, kind: str, form: str) -> None:
    rule = parse_if_rule(text)
    assert (rule.kind, rule.form) == (kind, form)
