"""``if = "shell(...)"`` against commands written to dodge a guard.

A ``shell(...)`` rule is a speed filter: it may skip a hook only when the call surely cannot
run what the rule names. Each row is (rule, command, must_run). ``True`` rows are commands that
run (or may run) the guarded program through a wrapper, a command string, another language or
options before the subcommand: the hook must run. ``False`` rows are plain commands the filter
must still skip, so the table fails both ways.
"""

from __future__ import annotations

import pytest

from triohooks.match.ifrules import parse_if_rule, rule_applies
from triohooks.match.shell import parse_script

WS = "/work/ws"
PUSH = "shell(git push*)"

ADVERSARIAL: list[tuple[str, str, bool]] = [
    # --- remote and user-switching command strings
    (PUSH, "ssh host git push", True),
    (PUSH, "ssh -p 2222 -i ~/.ssh/k deploy@host 'cd repo && git push'", True),
    (PUSH, "ssh host -t git push origin main", True),  # OpenSSH reads options after the host
    (PUSH, "ssh host <<'EOF'\ngit push\nEOF", True),  # remote shell reads stdin
    (PUSH, "ssh -o ProxyCommand='git push' host true", True),
    (PUSH, "ssh host ls -la", False),
    (PUSH, 'su -c "git push"', True),
    (PUSH, "su - deploy -c 'git push origin main'", True),
    (PUSH, "echo git push | su deploy", True),  # a login shell reading what the call gives
    (PUSH, "su deploy", False),  # reading the agent's own stdin: nothing of the call
    (PUSH, "runuser -u deploy -- git push", True),
    (PUSH, "sg staff 'git push'", True),
    (PUSH, "script -qc 'git push' /dev/null", True),
    (PUSH, "su -c 'ls' root", False),
    # --- shells and wrappers
    (PUSH, "bash -c 'git push'", True),
    (PUSH, 'sh -c "cd x; git push"', True),
    (PUSH, "zsh -c 'git push'", True),
    (PUSH, "dash -c 'git push'", True),
    (PUSH, "echo push | xargs git", True),
    (PUSH, "nohup git push &", True),
    (PUSH, "nice -n 10 git push", True),
    (PUSH, "ionice -c 3 git push", True),
    (PUSH, "stdbuf -oL git push", True),
    (PUSH, "time git push", True),
    (PUSH, "command git push", True),
    (PUSH, "exec git push", True),
    (PUSH, "chroot /srv git push", True),
    (PUSH, "flock /tmp/lock git push", True),
    (PUSH, "flock /tmp/lock -c 'git push'", True),
    (PUSH, "setsid git push", True),
    (PUSH, "doas git push", True),
    (PUSH, "sudo -u ci git push", True),
    (PUSH, "sudo -s 'git push'", True),
    (PUSH, "env -S 'git push origin'", True),
    (PUSH, "env a-b=c git push", True),  # env takes any word with `=` as an assignment
    (PUSH, "watch git push", True),
    (PUSH, "watch -n 60 'git push'", True),
    (PUSH, "parallel 'git {}' ::: push", True),
    (PUSH, "parallel ::: 'git push'", True),  # the arguments are the commands
    (PUSH, "find . -maxdepth 0 -exec git push \\;", True),
    (PUSH, "fd -x git push", True),
    (PUSH, "timeout 60 sudo -u ci env A=1 nice git push", True),
    (PUSH, "strace -f -o /tmp/t git push", True),
    (PUSH, "docker run --rm -v x:/w img git push", True),
    (PUSH, "kubectl exec pod -- git push", True),
    (PUSH, "uv run git push", True),
    (PUSH, "tmux send-keys 'git push' Enter", True),
    (PUSH, "watch -n 5 ls", False),
    (PUSH, "timeout 5 git status", False),
    (PUSH, "parallel gzip ::: a b", False),
    # --- code in other languages
    (PUSH, "python3 -c \"import os; os.system('git push')\"", True),
    (PUSH, 'python -Ic \'import subprocess; subprocess.run(["git", "push"])\'', True),
    (PUSH, "python3 - <<'PY'\nimport os\nos.system('git push')\nPY", True),
    (PUSH, "echo 'import os' | python3", True),
    (PUSH, "python3 -m timeit \"__import__('os').system('git push')\"", True),
    (PUSH, "perl -e 'system(\"git push\")'", True),
    (PUSH, "perl -le 'print `git push`'", True),
    (PUSH, "ruby -e 'system(\"git push\")'", True),
    (PUSH, "node -e \"require('child_process').execSync('git push')\"", True),
    (PUSH, "php -r 'system(\"git push\");'", True),
    (PUSH, "awk 'BEGIN{system(\"git push\")}'", True),
    (PUSH, 'awk \'BEGIN{print "push" | "xargs git"}\'', True),
    (PUSH, "sed -n '1e git push' file", True),
    (PUSH, "python3 -m pytest -q", False),
    (PUSH, "awk '{print $1}' file", False),
    (PUSH, "sed 's/old/new/g' file", False),
    # --- eval, source, here-docs, substitutions, dynamic names
    (PUSH, "eval 'git push'", True),
    (PUSH, 'eval "$(echo git push)"', True),
    (PUSH, "source ./deploy.sh", True),
    (PUSH, ". ./deploy.sh", True),
    (PUSH, "bash <<'EOF'\ngit push\nEOF", True),
    (PUSH, "bash - <<'EOF'\ngit push\nEOF", True),
    (PUSH, "bash /dev/stdin <<< 'git push'", True),
    (PUSH, "cat cmds.txt | sh", True),
    (PUSH, "echo $(git push)", True),
    (PUSH, "echo `git push`", True),
    (PUSH, "X=git; $X push", True),
    (PUSH, '"$GIT" push', True),
    (PUSH, "$(echo git) push", True),
    (PUSH, "x='a[$(git push)]'; (( x ))", True),  # bash runs it as arithmetic
    (PUSH, "GIT_SSH_COMMAND='git push #' git fetch", True),
    (PUSH, "env 'BASH_FUNC_ls%%=() { git push; }' bash -c ls", True),
    (PUSH, "echo git push", False),  # echo's arguments are data
    (PUSH, "echo $(git status)", False),
    (PUSH, "cat <<'EOF'\ngit push\nEOF", False),  # here-doc fed to cat: data
    (PUSH, "GIT_PAGER=cat git log", False),
    # --- options between the program and its subcommand
    (PUSH, "git -C . push", True),
    (PUSH, "git -C /repo push origin main", True),
    (PUSH, "git -c k=v push", True),
    (PUSH, "git -c user.name=ci push", True),
    (PUSH, "git --git-dir=.git --work-tree=. push", True),
    (PUSH, "git --git-dir .git push", True),
    (PUSH, "git --no-pager push", True),
    (PUSH, "git -P --no-optional-locks push", True),
    (PUSH, "git --namespace=x --exec-path push", True),
    (PUSH, "git --exec-path=/tmp/evil status", True),  # runs /tmp/evil/git-status
    (PUSH, "git -c alias.st=push st", True),
    (PUSH, "git -c core.pager='git push' log", True),
    (PUSH, "git config alias.p push && git p", True),
    (PUSH, "git pu", True),  # not a git command: an alias (or help.autocorrect)
    (PUSH, "git rebase -x 'git push' main", True),
    (PUSH, "git submodule foreach 'git push'", True),
    (PUSH, "/usr/lib/git-core/git-push origin", True),
    (PUSH, "hub push", True),
    (PUSH, "git -C . status", False),
    (PUSH, "git -c color.ui=never status", False),
    (PUSH, "git --no-pager log --oneline -5", False),
    (PUSH, "git log --grep push", False),
    (PUSH, "git commit -m 'push it'", False),
    ("shell(git push)", "git -C . push", True),
    ("shell(git push)", "git --no-pager -c color.ui=always push --force", True),
    ("shell(re:git push.*)", "git -C x push", True),
    ("shell(docker run*)", "docker --context prod run img", True),
    ("shell(docker run*)", "docker --context prod ps", False),
    ("shell(kubectl delete*)", "kubectl -n prod delete pod x", True),
    ("shell(kubectl delete*)", "kubectl --namespace=prod delete pod x", True),
    ("shell(kubectl delete*)", "kubectl -n prod get pods", False),
    ("shell(npm publish)", "npm --registry https://r publish", True),
    # --- plain commands still skip
    (PUSH, "ls", False),
    (PUSH, "ls -la | head", False),
    (PUSH, "git status", False),
    (PUSH, "git status --short && git diff", False),
    (PUSH, "cat file | grep x", False),
    (PUSH, "grep -rn 'git push' docs/", False),
    (PUSH, "sudo -u root ls", False),
    ("shell(rm)", "make -j4 test", False),
    ("shell(rm)", "tar czf out.tgz src", False),
    # --- other rules through the same doors
    ("shell(rm)", "make CC='rm -rf /'", True),
    ("shell(rm)", "tar --to-command='rm x' -xf a.tar", True),
    ("shell(rm)", "rsync -e 'sh -c \"rm x\"' a b:", True),
    ("shell(rm)", "socat - EXEC:'rm x'", True),
    ("shell(rm)", "find . $EXTRA", True),  # $EXTRA may be `-exec rm {} ;`
    ("shell(rm)", "rsync -avz -e ssh src host:dst", False),
]


@pytest.mark.parametrize(("rule", "command", "must_run"), ADVERSARIAL)
def test_adversarial(rule: str, command: str, must_run: bool) -> None:
    parsed = parse_if_rule(rule)
    runs = rule_applies(parsed, tool="bash", args={"command": command}, workspace=WS)
    assert runs is must_run, parse_script(command)


def test_table_covers_both_directions() -> None:
    assert len(ADVERSARIAL) >= 40
    assert sum(1 for *_, must_run in ADVERSARIAL if not must_run) >= 20
    assert len({(r, c) for r, c, _ in ADVERSARIAL}) == len(ADVERSARIAL)


@pytest.mark.parametrize(
    "command", sorted({c for r, c, must_run in ADVERSARIAL if not must_run and r == PUSH})
)
def test_skips_are_certain(command: str) -> None:
    """A skipped row is skipped because the walker is sure, not by luck of the matcher."""
    parsed = parse_script(command)
    assert not parsed.uncertain, parsed.reason


@pytest.mark.parametrize(
    ("argv", "must_run"),
    [
        (["ssh", "host", "git", "push"], True),
        (["bash", "-lc", "git -C . push"], True),
        (["python3", "-c", "import os; os.system('git push')"], True),
        (["env", "-S", "git push"], True),
        (["git", "-c", "alias.p=push", "p"], True),
        (["git", "-C", "/repo", "status"], False),
        (["ls", "-la"], False),
    ],
)
def test_argv_calls(argv: list[str], must_run: bool) -> None:
    rule = parse_if_rule(PUSH)
    assert rule_applies(rule, tool="shell", args={"command": argv}, workspace=WS) is must_run
