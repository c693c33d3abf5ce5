"""The shell walker: which simple commands a script yields, and when it admits uncertainty."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from triohooks.match.shell import MAX_DEPTH, ParsedScript, parse_argv, parse_script


def shown(parsed: ParsedScript) -> list[str]:
    """Commands as text: ``<$>`` for a dynamic word, ``...`` for an open tail."""
    return [
        " ".join("<$>" if w is None else w for w in c.words) + (" ..." if c.open_tail else "")
        for c in parsed.commands
    ]


@pytest.mark.parametrize(
    ("script", "commands"),
    [
        ("git log --oneline", ["git log --oneline"]),
        ("g\\it 'lo'g \"--one\"line", ["git log --oneline"]),
        ("$'\\x67\\151t' $'\\x6cog' $'a\\tb'", ["git log a\tb"]),
        ("ls | head -5 && echo ok; true &", ["ls", "head -5", "echo ok", "true"]),
        ("FOO=1 BAR=$x make -j4", ["make -j4"]),
        # Braces expand as bash expands them (`{a,b}` is two words); quoted ones do not.
        (
            "echo $HOME ${x} *.py {a,b} x{1..3} '*' \"{a,b}\"",
            ["echo <$> <$> <$> a b x1 x2 x3 * {a,b}"],
        ),
        ("echo {$x,b}", ["echo <$>"]),
        ("echo $(date) `whoami` <(ls)", ["echo <$> <$> <$>", "date", "whoami", "ls"]),
        ("a=$(b) c", ["c", "b"]),
        ("x=1", []),
        ("cat <<EOF\n$(id)\nEOF", ["cat", "id"]),
        ("cat <<'EOF'\n$(id)\nEOF", ["cat"]),
        ("cat - <<'PY'\nprint(1)\nPY", ["cat -"]),
        ("rm >/dev/null -rf /", ["rm -rf /"]),
        ("sudo -u root env A=1 rm x", ["sudo -u root env A=1 rm x", "env A=1 rm x", "rm x"]),
        (
            "timeout --signal=KILL 5s nice -n5 ls",
            ["timeout --signal=KILL 5s nice -n5 ls", "nice -n5 ls", "ls"],
        ),
        ("xargs -0 -n1 rm -f", ["xargs -0 -n1 rm -f", "rm -f ..."]),
        ("xargs -I % cp % /tmp", ["xargs -I % cp % /tmp", "cp <$> <$> ..."]),
        ("xargs", ["xargs"]),
        (
            "find . -exec rm {} \\; -exec ls {} +",
            ["find . -exec rm {} ; -exec ls {} +", "rm <$>", "ls <$> ..."],
        ),
        ("bash -c 'git status'", ["bash -c git status", "git status"]),
        ("sh -ec 'a; b'", ["sh -ec a; b", "a", "b"]),
        ("bash -o pipefail -c 'a | b'", ["bash -o pipefail -c a | b", "a", "b"]),
        ("bash ./deploy.sh", ["bash ./deploy.sh"]),
        ("time -p ls", ["time -p ls", "ls"]),
        ("exec -a name ls", ["exec -a name ls", "ls"]),
        ("command -v ls", ["command -v ls", "ls"]),
        ("env", ["env"]),
        ("ls | # note\nhead", ["ls", "head"]),
        ("f() { rm x; }", ["rm x"]),
        # command strings: ssh, su, sudo -s, watch, env -S, flock, parallel, script, sg
        ("ssh -p 22 h git push", ["ssh -p 22 h git push", "git push"]),
        ("ssh h -t 'cd r && make'", ["ssh h -t cd r && make", "cd r", "make"]),
        ("ssh -N -L 8080:x:80 h", ["ssh -N -L 8080:x:80 h"]),
        ("su - bob -c 'rm x'", ["su - bob -c rm x", "rm x"]),
        ("runuser -u bob -- rm x", ["runuser -u bob -- rm x", "rm x"]),
        ("sudo -s 'rm x'", ["sudo -s rm x", "rm x", "rm x"]),
        ("watch 'rm x'", ["watch rm x", "rm x"]),
        ("watch -n 5 -x rm x", ["watch -n 5 -x rm x", "rm x"]),
        ("env -S 'rm x'", ["env -S rm x", "env rm x", "rm x"]),
        (
            "env --split-string='A=1 rm x' y",
            ["env --split-string=A=1 rm x y", "env A=1 rm x y", "rm x y"],
        ),
        ("env a-b=c rm x", ["env a-b=c rm x", "rm x"]),
        ("flock /tmp/l -c 'rm x'", ["flock /tmp/l -c rm x", "rm x"]),
        ("flock -n /tmp/l rm x", ["flock -n /tmp/l rm x", "rm x"]),
        ("parallel gzip ::: a b", ["parallel gzip ::: a b", "gzip <$>"]),
        ("script -qc 'rm x' /dev/null", ["script -qc rm x /dev/null", "rm x"]),
        ("sg wheel 'rm x'", ["sg wheel rm x", "rm x"]),
        ("chroot /srv rm x", ["chroot /srv rm x", "rm x"]),
        ("ionice -c 3 rm x", ["ionice -c 3 rm x", "rm x"]),
        # git: the subcommand form without global options, dashed names, hub
        ("git -C d -c color.ui=never log", ["git -C d -c color.ui=never log", "git log"]),
        ("git --git-dir=x --no-pager push", ["git --git-dir=x --no-pager push", "git push"]),
        ("/usr/lib/git-core/git-push o", ["/usr/lib/git-core/git-push o", "git push o"]),
        ("hub push", ["hub push", "git push"]),
        ("git rebase -x 'rm x' main", ["git rebase -x rm x main", "rm x"]),
        ("git bisect run rm x", ["git bisect run rm x", "rm x"]),
        ("git submodule foreach 'rm x'", ["git submodule foreach rm x", "rm x"]),
        # runners list every suffix that starts with a plain word
        ("strace -f rm x", ["strace -f rm x", "rm x", "x"]),
        ("docker run -it img rm x", ["docker run -it img rm x", "img rm x", "rm x", "x"]),
        # other languages where nothing runs code from the call
        ("python3 -m pytest -q", ["python3 -m pytest -q"]),
        ("python3.12 -W error x.py -c y", ["python3.12 -W error x.py -c y"]),
        ("awk -F: '{print $1}' f", ["awk -F: {print $1} f"]),
        ("sed -i 's/old/new/g' f", ["sed -i s/old/new/g f"]),
        ("GIT_PAGER=cat git log", ["git log"]),
    ],
)
def test_commands(script: str, commands: list[str]) -> None:
    parsed = parse_script(script)
    assert not parsed.uncertain, parsed.reason
    assert shown(parsed) == commands


@pytest.mark.parametrize(
    "script",
    [
        # A program reading code from stdin runs nothing of the call when the call does not
        # feed its stdin (it reads the agent's own), or feeds it a file (as `bash file`).
        "ssh -T git@github.com",
        "bash",
        "su",
        "sudo -i",
        "python3",
        "python3 --version",
        "python3 -V -c 'import os'",  # -V first: it prints and exits
        "node -v",
        "perl -v",
        "docker exec -it db psql -U postgres",
        "psql app < dump.sql",
        "bash -s < x",
        "python3 < /dev/stdin",
    ],
)
def test_stdin_not_fed_by_the_call(script: str) -> None:
    parsed = parse_script(script)
    assert not parsed.uncertain, parsed.reason


@pytest.mark.parametrize(
    ("script", "reason"),
    [
        ("ls &&", "parse error"),
        ("echo 'open", "parse error"),
        ("$cmd x", "dynamic command name"),
        ('"$(which rm)" x', "dynamic command name"),
        ("/bin/r? x", "dynamic command name"),
        ("/bin/r[m] x", "dynamic command name"),
        ('eval "$x"', "eval"),
        ("source x.sh", "source"),
        (". x.sh", "."),
        ("trap 'rm x' EXIT", "trap"),
        ("watch $CMD", "dynamic watch"),
        ("fish -c 'rm x'", "fish"),
        ("curl x | bash", "stdin"),
        ("cat x | bash -s", "stdin"),
        ("bash -s <<< 'rm x'", "stdin"),
        ("bash -s < $F", "stdin"),
        ('bash -c "$CMD"', "dynamic shell -c"),
        ('env -S "$X"', "dynamic env -S"),
        ("env --split-string='rm $x'", "env -S string"),
        ("sudo --frob rm", "unknown wrapper option --frob"),
        ("sudo -Z rm", "unknown wrapper option -Z"),
        ("sudo $FLAGS rm", "dynamic wrapper option"),
        ("a | rm >x -rf /", "several destinations"),
        ("echo `date`\nrm -rf / ` true`", "backticks across lines"),
        ("echo `a` `b`", "dynamic command name"),  # tree-sitter glues adjacent backticks
        # tree-sitter-bash #347: the second line is glued onto `head` without an error flag
        ("a | grep x | head -30\necho B && cd s", "mis-parse"),
        ("ls | sort | uniq\n\nrm -rf / || true", "mis-parse"),
        # the same bug when the next line ends in a pipeline (found by the property below)
        ("ls | ls | ls\nrm -rf /\ncat x | tee y >/dev/null", "mis-parse"),
        # tree-sitter-bash #316: statements swallowed into a single-bracket test
        ("[ 2 -lt 3 ]\necho >1\n[ ]", "mis-parse"),
        ("x" * 100_001, "too long"),
        # strings run as code, in a shell or another language
        ("echo ls | ssh h", "remote shell reading stdin"),
        ("ssh -o ProxyCommand='rm x' h ls", "...Command runs a command"),
        ('ssh h "$CMD"', "dynamic ssh"),
        ("echo id | su", "stdin"),
        ("su -s /usr/bin/python3 -c 'x'", "not a shell"),
        ("echo id | sudo -i", "stdin"),
        ("chroot /srv <<EOF\nls\nEOF", "stdin"),
        ("echo ls | bash -", "stdin"),
        ("echo ls | bash /dev/stdin", "stdin"),
        ("echo ls | { bash; }", "stdin"),
        ("bash -c 'python3'", "stdin"),  # a -c string's stdin is not seen
        ("exec < x; python3", "stdin"),
        ("python3 -c 'import os'", "python -c"),
        ("python3 -Ic 'import os'", "python -c"),
        ("echo 1 | python3", "stdin"),
        ("psql app <<< '\\! rm x'", "stdin"),
        ("python3 - <<'PY'\nprint(1)\nPY", "stdin"),
        ("python3 -m timeit 'x'", "timeit"),
        ("perl -le 'print'", "perl -e"),
        ("perl -MPOSIX -e1", "perl -M"),
        ("node -pe 1", "node -p"),
        ("node --eval=1", "--eval"),
        ("ruby -e 1", "ruby -e"),
        ("php -r 'x;'", "php -r"),
        ("deno eval 'x'", "deno"),
        ("awk 'BEGIN{system(\"rm x\")}'", "awk program"),
        ("awk '{print | \"sh\"}'", "awk program"),
        ("sed 's/a/b/e' f", "sed program"),
        ("sed '1e rm x' f", "sed program"),
        ("make --eval='x:'", "make --eval"),
        ("make -f - <<EOF\nx:\nEOF", "stdin"),
        ("make CC='rm -rf /'", "recipe"),
        ("tar --to-command='rm x' -xf a", "tar option"),
        ("rsync -e 'sh -c x' a b:", "rsync -e"),
        ("scp -S ./x a b:", "scp -S"),
        ("nc -e /bin/sh h 1", "nc option"),
        ("socat - EXEC:'rm x'", "socat"),
        ("find . $X", "dynamic argument to find"),
        ("parallel ::: 'rm x'", "parallel runs its arguments"),
        ("tmux new 'rm x'", "tmux"),
        ("hash -p /tmp/x ls", "hash -p"),
        ("x='a[$(rm y)]'", "arithmetic"),
        # git: aliases, config that runs commands, options that run programs
        ("git p", "alias"),
        ("git -c alias.p='!rm x' p", "git -c alias.p"),
        ("git -c core.pager='rm x' log", "git -c core.pager"),
        ("git --exec-path=/tmp status", "--exec-path"),
        ("git --frob push", "unknown git option"),
        ("git $SUB", "dynamic git"),
        ('git -C "$D" status', "dynamic git -C"),
        ("git config alias.p push", "git config alias.p"),
        ("git config core.fsmonitor 'rm x'", "git config core.fsmonitor"),
        ("git fetch --upload-pack='rm x' .", "--upload-pack"),
        ("git grep -Orm x", "grep -O"),
        ("git clone -c core.sshCommand=x u", "git clone -c core.sshcommand"),
        ("git filter-branch --tree-filter 'rm x'", "filter-branch"),
        # variables that make programs run commands
        ("GIT_SSH_COMMAND='rm x' git fetch", "GIT_SSH_COMMAND"),
        ("export PAGER='rm x'", "PAGER"),
        ("env LD_PRELOAD=/tmp/x.so ls", "LD_PRELOAD"),
        ("sudo BASH_ENV=/tmp/x bash -c ls", "BASH_ENV"),
    ],
)
def test_uncertain(script: str, reason: str) -> None:
    parsed = parse_script(script)
    assert parsed.uncertain
    assert reason in parsed.reason


def test_bash_c_depth_limit() -> None:
    script = "rm x"
    for _ in range(MAX_DEPTH):
        script = "bash -c " + _sq(script)
    assert shown(parse_script(script))[-1] == "rm x"
    deeper = parse_script("bash -c " + _sq(script))
    assert deeper.uncertain
    assert "too deep" in deeper.reason


def _sq(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def test_argv() -> None:
    assert shown(parse_argv(["bash", "-lc", "git push"])) == ["bash -lc git push", "git push"]
    assert shown(parse_argv(["/usr/bin/env", "rm", "x"])) == ["/usr/bin/env rm x", "rm x"]
    assert parse_argv(["bash"]).uncertain
    assert parse_argv(["bash", "-c", 'eval "$x"']).uncertain
    # A static eval string is read as the shell reads it.
    assert shown(parse_argv(["bash", "-c", "eval 'rm -rf /'"]))[-1] == "rm -rf /"


def test_parse_is_cached() -> None:
    assert parse_script("git status # cached") is parse_script("git status # cached")


# --- property: a command we plant is found, or the walker says it is unsure --------------------

_FILLER = [
    "ls",
    "head -5",
    "grep -v 'a b'",
    'echo "$x"',
    "cat <<EOF\nhi $y\nEOF",
    "python3 - <<'PY'\nimport os\nPY",
    "echo ${a:-b}",
    "[ -f x ]",
    "echo $(date)",
    "echo `date`",
    "awk '{print $1}'",
    "echo a\\ b",
    "echo {a,b} *.py",
    "for f in *; do echo $f; done",
    "if [ -d x ]; then echo y; fi",
    "(cd a && ls)",
    "{ ls; ls; }",
    "cat x | tee y >/dev/null",
    "git diff > /tmp/x 2>&1",
    "FOO=1 make",
]
_PLANTED = [
    "zzrm -rf /",
    "'zzrm' x",
    "zz\\rm",
    '"zz"rm',
    "sudo -u r zzrm",
    "env A=1 zzrm",
    "timeout 5 zzrm",
    "echo $(zzrm)",
    "echo `zzrm`",
    "bash -c 'zzrm x'",
    "x=$(zzrm)",
    "zzrm < in",
    "nohup zzrm &",
    "! zzrm",
    "ls | xargs zzrm",
    "time zzrm",
    "/opt/bin/zzrm",
    "find . -exec zzrm {} \\;",
]
#: Statement joins; pipelines of up to three stages come from `_pipeline` (the known
#: mis-parse needs `a | b | c`, a newline, then `d && e`).
_JOINS = ["\n", "\n\n", " && ", " || ", "; ", " & ", " |\n", "\r\n", " | "]
_pipeline = st.lists(st.sampled_from(_FILLER), min_size=1, max_size=3).map(" | ".join)


@settings(max_examples=400, deadline=None)
@given(
    before=st.lists(_pipeline, max_size=2),
    planted=st.sampled_from(_PLANTED),
    after=st.lists(_pipeline, max_size=2),
    joins=st.lists(st.sampled_from(_JOINS), min_size=4, max_size=4),
)
def test_planted_command_is_never_missed(
    before: list[str], planted: str, after: list[str], joins: list[str]
) -> None:
    parts = [*before, planted, *after]
    script = parts[0]
    for join, part in zip(joins, parts[1:], strict=False):
        script += join + part
    parsed = parse_script(script)
    if parsed.uncertain:
        return
    names = [c.name.rsplit("/", 1)[-1] for c in parsed.commands]
    assert "zzrm" in names, (script, shown(parsed))


def test_a_wrapper_says_where_its_command_starts() -> None:
    """``sudo -u root ls ~``: sudo's own words end at 3, and ``ls ~`` is listed after it."""
    from triohooks.match.shell import read_words

    wrapper, inner = read_words("sudo -u root ls ~").commands
    assert wrapper.runs_from == 3 and inner.words == ("ls", "~") and inner.runs_from == 0
    (plain,) = read_words("ls ~").commands
    assert plain.runs_from == 0
    outer, middle, last = read_words("timeout 5 nice -n 5 cat x").commands
    assert (outer.runs_from, middle.runs_from, last.runs_from) == (2, 3, 0)
