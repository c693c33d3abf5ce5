"""Shell scripts -> the simple commands they could run, for ``if = "shell(...)"`` rules.

This module owns reading a bash script (with tree-sitter-bash) into a flat list of simple
commands — each an argv of normalised words — plus an ``uncertain`` flag. It must not decide
whether a hook runs (that is :mod:`triohooks.match.ifrules`) and must never be *optimistic*: the
filter it feeds exists to save a spawn, never to skip a guard. Whenever the script could run
something this walker does not list, ``uncertain`` is set and the caller runs the hook.

What it understands:

- every ``command`` node anywhere in the tree: pipelines, ``&&``/``||``/``;``/``&`` lists,
  subshells, ``{ ...; }``, if/while/for/case bodies, function bodies, ``$(...)``, backticks,
  ``<(...)``/``>(...)``, substitutions inside strings, ``${x:-$(...)}``, ``$((...))`` and
  unquoted here-doc bodies;
- quoting: ``'g'it``, ``"git"``, ``g\\it``, ``$'\\x67it'`` all normalise to ``git``. A word with
  an expansion (``$x``, ``$(...)``, arithmetic), an unquoted glob (``*``, ``?``, ``[...]``) or a
  brace (``{a,b}``) is *dynamic* (``None``): it may become any words at run time;
- assignment prefixes (``FOO=1 cmd``) are dropped from the argv; an assignment (prefix,
  ``export``, ``env``/``sudo`` argument, or plain ``X=...``) to a variable that makes programs
  run a command or load code (:data:`DANGEROUS_ENV`: ``GIT_SSH_COMMAND``, ``PAGER``, ``EDITOR``,
  ``LD_PRELOAD``, ``BASH_ENV``, ``BASH_FUNC_*``, ``GIT_CONFIG_*``...) is uncertain;
- **wrappers** (:data:`WRAPPERS` and the handlers below) are transparent: ``sudo -u x env A=1 rm
  -rf /`` yields the command as written *and* ``env A=1 rm -rf /`` *and* ``rm -rf /``. Each
  wrapper's own options are skipped by a per-wrapper table; an option we do not know, or a
  dynamic word where an option could be, makes the result uncertain (we cannot tell what it
  does). ``xargs``, ``find -exec ... +`` and ``fd -x`` yield their inner command with an *open
  tail* (more arguments come at run time). Argv wrappers: ``env`` (``-S`` split too), ``nohup,
  command, builtin, exec, time, nice, ionice, timeout, stdbuf, setsid, chroot, flock, taskset,
  chrt, coproc, busybox, toybox, sudo, doas, xargs, watch -x``;
- **command strings** are parsed recursively, at most :data:`MAX_DEPTH` levels deep: ``bash|sh|
  zsh|dash|ksh... -c '<literal>'``, ``ssh [opts] host cmd...`` (the words after the host, joined
  as the remote shell sees them), ``su/runuser ... -c cmd``, ``sg group cmd``, ``script -c cmd``,
  ``sudo -s|-i cmd``, ``watch cmd...``, ``flock file -c cmd``, ``parallel cmd ::: args``,
  ``git rebase -x cmd``, ``git difftool -x cmd``, ``git submodule foreach cmd``, ``git bisect
  run cmd...``, ``git for-each-repo``; a string that is uncertain makes the whole uncertain;
- **runners** (:data:`RUNNERS`, :data:`SUBCOMMAND_RUNNERS`: ``strace, unshare, nsenter, bwrap,
  systemd-run, docker run|exec, kubectl exec, uv run, npx, nix develop...``) whose options we do
  not model: *every* suffix of their arguments that starts with a plain word is listed as a
  command it could run, and every argument that looks like a command line is parsed as one;
- **git**: the global options (``-C dir``, ``-c k=v``, ``--git-dir[=]x``, ``--work-tree``,
  ``--namespace``, ``--super-prefix``, ``--attr-source``, ``--config-env``, ``--no-pager``...) are
  skipped to list ``git <subcommand> ...`` as a command of its own (the raw one is marked
  ``options_parsed``). Uncertain: an unknown global option, ``--exec-path=dir``, ``-c``/
  ``--config-env``/``git config`` of a key not in :data:`GIT_SAFE_CONFIG` (``alias.*``,
  ``core.pager``, ``core.sshCommand``, ``core.fsmonitor``... run commands), a subcommand git does
  not ship (:data:`GIT_COMMANDS`: it may be an alias, ``!sh`` included, or a ``git-x`` program),
  options that run programs (``--upload-pack``, ``--receive-pack``, ``--exec``, ``grep -O``,
  ``send-email --*-cmd``, ``filter-branch``), and a dynamic word in a subcommand that has those.
  ``git-push`` (dashed, from ``git --exec-path``) and ``hub`` are read as git;
- **code in other languages** is uncertain: ``python/perl/ruby/node/php/lua/julia/osascript/
  expect... -c|-e|-r|-E|--eval`` (per-interpreter tables: :data:`INTERPRETERS`), an interpreter
  reading its program from stdin (no script, ``-``, ``/dev/stdin``, a here-doc), ``python -m
  timeit|pdb|code...``, ``awk`` programs that can run commands (``system``, ``|``, ``@`` calls,
  ``-l``), GNU ``sed`` programs that may hold an ``e`` command or ``s///e`` flag, ``make --eval``
  / ``make -f -`` / ``make VAR='a command'``, ``tar --to-command|-I|--checkpoint-action``, ``zip
  -TT``, ``rsync -e`` (unless plain ssh), ``scp -S``, ``ssh -o ProxyCommand=...``, ``nc -e|-c``,
  ``socat EXEC:``, ``rg --pre``, ``less +cmd``, ``man -P``, ``sort --compress-program``, ``split
  --filter``, ``hash -p``, ``mapfile -C``, and the programs in :data:`OPAQUE` (``eval``,
  ``source``, ``.``, ``trap``, ``alias``, other shells, REPLs and database shells, editors,
  ``tmux``, ``screen``, ``at``, ``crontab``...);
- a shell given its commands on stdin (``curl x | sh``, ``bash -s``, ``bash -``, ``bash
  /dev/stdin``, ``bash <<EOF``, ``ssh host <<EOF``, ``sudo -s``, ``su``, ``chroot dir``) or a
  dynamic ``-c`` string is uncertain.

Reading stdin is a doubt only where the call feeds it (:meth:`_Walker.stdin_fed`): a command
after a ``|``, with a ``<``, here-doc or here-string on it or on a compound around it, or in a
``-c`` string (whose shell's stdin we do not see). ``ssh -T git@github.com``, ``python`` and
``psql -U app`` alone read the agent's own stdin, which holds nothing of the call.

What else makes the result uncertain (the hook runs): a parse error or missing node; a node type
this walker does not know; a dynamic or glob command name (``$cmd``, ``/bin/r?``); a ``-c``
deeper than :data:`MAX_DEPTH`; a script over :data:`MAX_SCRIPT` characters or yielding more than
:data:`MAX_COMMANDS` commands; a quoted word that holds ``[...$(`` (bash runs it when the value
is used in arithmetic); and the structural guards below.

Structural guards against known tree-sitter-bash 0.25 mis-parses that come back *without* an
error flag. In bash a simple command never spans an unescaped newline, ``;``, ``&`` or ``|``,
so inside a ``command`` (and redirect, declaration, negation) node the source between two
children must be blanks or ``\\<newline>`` only; in a pipeline or list a newline may follow only
an operator. Any other gap means the parser glued two statements together (tree-sitter-bash
#347: ``a | grep x | head``, newline, ``echo B && cd s`` comes back as ``head -30 echo B``; #316:
``[ 2 -lt 3 ]`` newline ``echo >1`` swallowed into one test; #278: a backtick with a leading
space running across lines) and the result is uncertain. A redirect with several destinations
(``rm >/dev/null -rf /`` — tree-sitter files ``-rf /`` under the redirect) gives the extra words
back to the command as arguments, or is uncertain when the redirect hangs on a pipeline/list.

Not modelled (documented gaps, seen as the program itself): code in *files* — a script run as
``bash x.sh``, ``python x.py``, ``./x.sh``, ``make``, ``npm run``, a ``Makefile``/``package.json``/
git hook/config file, ``PATH``/``PYTHONPATH``/``LD_LIBRARY_PATH`` pointing at them — including
files the same script writes first; aliases and functions defined outside the script; programs
with their own alias systems (``gh``, ``yadm``...) or renamed copies (``cp /usr/bin/git g``);
variables set by ``read``/``printf -v``/``mapfile`` and arithmetic evaluation of values not
written literally in the script; remote/container runners not in the tables.
"""

from __future__ import annotations

import functools
import itertools
import posixpath
import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from typing import Final, Literal

import msgspec
import tree_sitter
import tree_sitter_bash

#: ``bash -c '...'`` nesting we follow; one more level is uncertain.
MAX_DEPTH: Final = 3
#: Longer scripts are not parsed (bounded cost): uncertain.
MAX_SCRIPT: Final = 100_000
#: A script (with everything its wrappers and strings run) listing more is uncertain.
MAX_COMMANDS: Final = 1000

#: A word of an argv: its normalised text, or ``None`` when it is dynamic (expansion, glob...).
Word = str | None


class SimpleCommand(msgspec.Struct, frozen=True, gc=False):
    """One simple command as it could run: ``words[0]`` is the (static) program name.

    ``gc=False`` here and below: plain leaves (no cycles), and thousands sit in the parse cache;
    untracked, they add nothing to the collector's pauses.
    """

    words: tuple[Word, ...]
    #: More arguments are appended at run time (``xargs``, ``find -exec ... +``).
    open_tail: bool = False
    #: The walker read this program's own options (git's global options) and listed the
    #: command without them separately (``git -C x push`` -> ``git push``): the matcher need
    #: not guess where the subcommand starts.
    options_parsed: bool = False
    #: The directories the command runs in, relative to the script's, as the wrapper that
    #: listed it changed them (``env -C x cmd``, ``git -C a -C b push``, ``sudo -D x cmd``),
    #: in order; a ``None`` one is known only at run time. Empty: the script's own.
    chdir: tuple[Word, ...] = ()
    #: The ``&&`` chain the command is an operand of (``cd x && make && ./run``: all three
    #: share one id, unique across every script read), or -1. A later command of a chain runs
    #: only if every earlier one succeeded, so after a ``cd`` in it, in that directory alone.
    chain: int = -1
    #: The command is written in the script itself at the shell's own level, not run by a
    #: wrapper, runner or ``find -exec`` it names, nor a part of a pipeline (a ``cd`` there
    #: changes the shell's directory; ``env cd`` and ``cd x | cat`` do not).
    direct: bool = False
    #: For the words that are globs (``src/*.py``), or a ``for`` loop's variable over globs
    #: and names (``"$f"`` in ``for f in src/*.py``), the patterns they may expand to, aligned
    #: with ``words`` (None for any other word); empty when there are none. An ``fnmatch``
    #: pattern each, a quoted ``*?[`` as ``[*]``. Only :func:`read_words` fills it.
    globs: tuple[tuple[str, ...] | None, ...] = ()
    #: The words from this index on are a command of their own, listed right after this one:
    #: what a wrapper runs (``sudo ls ~`` -> 2, and ``ls ~`` follows); 0 when none is.
    runs_from: int = 0

    @property
    def name(self) -> str:
        name = self.words[0]
        assert name is not None
        return name


class ParsedScript(msgspec.Struct, frozen=True, gc=False):
    """The commands a script could run. ``uncertain`` = there may be others; run the hook."""

    commands: tuple[SimpleCommand, ...]
    uncertain: bool = False
    #: Why it is uncertain (for tests and ``doctor``); "" when certain.
    reason: str = ""


class ScriptWords(msgspec.Struct, frozen=True, gc=False):
    """Every word a script could run with, for trust (:func:`read_words`), not for matching.

    ``commands`` are the simple commands in source order, through wrappers and ``-c`` strings
    as for :func:`parse_script`, but the reading goes on past what only makes a *match*
    uncertain (code in another language, ``eval``, a dangerous variable): those are listed in
    ``doubts`` instead. ``error`` is set when the script cannot be read at all.
    """

    commands: tuple[SimpleCommand, ...] = ()
    #: The source text of each word whose value is only known at run time (``$x/y``, ``*.sh``).
    dynamic: tuple[str, ...] = ()
    #: Words outside any argv: each file redirect's target (``< policy.txt``) and each
    #: variable assignment's value (``BASH_ENV=x.sh``); ``None`` when dynamic.
    other_words: tuple[Word, ...] = ()
    #: Why some command's own arguments could not be followed (``dynamic command name`` ...).
    doubts: tuple[str, ...] = ()
    #: Commands that run code that is not shell, or a file's (``python -c``, ``source x.sh``):
    #: each as a doubt would be said, but kept apart from ``doubts``.
    foreign: tuple[str, ...] = ()
    #: Each variable assignment's name and value as written (``("PATH", "bin:$PATH")``):
    #: prefixes, plain assignments and ``export``/``declare`` ones.
    assignments: tuple[tuple[str, str], ...] = ()
    #: The names of the variables whose assignment made a doubt (:data:`DANGEROUS_ENV`).
    env_doubts: tuple[str, ...] = ()
    #: The targets of the redirects that write a file (``> out``, ``>> log``, ``&> all``,
    #: ``>| x``, ``>& file``; also in ``other_words``), each with the index in ``commands`` of
    #: the command whose directory it opens in (``len(commands)``: the script's end).
    written: tuple[tuple[Word, int], ...] = ()
    #: The functions the script defines (their bodies' commands are in ``commands``).
    functions: tuple[str, ...] = ()
    #: Why the script could not be read at all ("" when it could).
    error: str = ""


class _Uncertain(Exception):
    """Raised inside the walker; turned into ``ParsedScript(uncertain=True)``."""


class _TooMany(_Uncertain):
    """More commands than :data:`MAX_COMMANDS`: the script cannot be read whole."""


class _Foreign(_Uncertain):
    """The command runs code that is not shell: another language's (``python -c``, ``awk``,
    ``sed``, ``make``...) or a file's (``source x.sh``). Uncertain for matching like any doubt;
    :func:`read_words` lists it apart (``foreign``), for readers that only promise to read the
    shell (the built-in guards)."""


# --- tree-sitter plumbing ---------------------------------------------------------------------

_PARSER: tree_sitter.Parser | None = None


def _parser() -> tree_sitter.Parser:
    """The module's one parser, created on first use (parsers are not thread-safe; triohooks
    calls this from its trio thread only)."""
    global _PARSER  # noqa: PLW0603 - lazily created singleton
    if _PARSER is None:
        _PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
    return _PARSER


#: Every named node type of tree-sitter-bash 0.25. A type not listed here (a newer grammar)
#: is something we do not understand: uncertain.
_KNOWN_TYPES: Final = frozenset(
    {
        "ansi_c_string",
        "arithmetic_expansion",
        "array",
        "binary_expression",
        "brace_expression",
        "c_style_for_statement",
        "case_item",
        "case_statement",
        "command",
        "command_name",
        "command_substitution",
        "comment",
        "compound_statement",
        "concatenation",
        "declaration_command",
        "do_group",
        "elif_clause",
        "else_clause",
        "expansion",
        "extglob_pattern",
        "file_descriptor",
        "file_redirect",
        "for_statement",
        "function_definition",
        "heredoc_body",
        "heredoc_content",
        "heredoc_end",
        "heredoc_redirect",
        "heredoc_start",
        "herestring_redirect",
        "if_statement",
        "list",
        "negated_command",
        "number",
        "parenthesized_expression",
        "pipeline",
        "postfix_expression",
        "process_substitution",
        "program",
        "raw_string",
        "redirected_statement",
        "regex",
        "simple_expansion",
        "special_variable_name",
        "string",
        "string_content",
        "subscript",
        "subshell",
        "ternary_expression",
        "test_command",
        "test_operator",
        "translated_string",
        "unary_expression",
        "unset_command",
        "variable_assignment",
        "variable_assignments",
        "variable_name",
        "while_statement",
        "word",
    }
)

#: Nodes whose children must be separated by blanks / line continuations only. (Not
#: ``concatenation`` / ``variable_assignment``: the grammar builds those from adjacent tokens.)
_TIGHT_NODES: Final = frozenset(
    {
        "command",
        "declaration_command",
        "unset_command",
        "file_redirect",
        "herestring_redirect",
        "negated_command",
        "redirected_statement",
    }
)
#: Named nodes that never hold commands: the walker does not descend into them.
_LEAVES: Final = frozenset(
    {
        "word",
        "number",
        "raw_string",
        "ansi_c_string",
        "string_content",
        "variable_name",
        "special_variable_name",
        "heredoc_content",
        "heredoc_start",
        "heredoc_end",
        "comment",
        "file_descriptor",
        "test_operator",
        "regex",
        "extglob_pattern",
    }
)
#: Nodes where a newline may follow an operator child, and only that.
_OPERATOR_NODES: Final = frozenset({"pipeline", "list"})
_LINE_OPERATORS_OR_COMMENT: Final = frozenset({"|", "|&", "&&", "||", "comment"})

# --- what runs what ---------------------------------------------------------------------------


def _fs(*names: str) -> frozenset[str]:
    return frozenset(names)


def _names(text: str) -> frozenset[str]:
    """A set of names written as one blank-separated block."""
    return frozenset(text.split())


#: Shells whose ``-c`` string we parse as bash (close enough for finding command names).
_SHELLS: Final = frozenset(
    {"bash", "sh", "zsh", "dash", "ksh", "ash", "mksh", "rbash", "yash", "posh", "lksh", "oksh"}
)
#: Programs that run code we do not follow: the result is always uncertain.
#: (shell builtins that run strings or change what a name runs; other shells; REPLs, database
#: shells, editors and multiplexers with a command language; deferred or remote runners.)
OPAQUE: Final = _names(
    """
        eval source . trap alias fc enable compgen
        fish csh tcsh pwsh powershell xonsh elvish nu
        irb jshell iex erl R gdb lldb dc m4 ed ex vi vim nvim vimdiff emacs emacsclient
        sqlite3 psql mysql mariadb sftp ftp lftp tmux screen at batch crontab newgrp capsh
        ansible ansible-playbook pssh parallel-ssh pdsh clush
    """
)

#: Variables that make programs run a command, or load code, from their value.
DANGEROUS_ENV: Final = _names(
    """
        BASH_ENV ENV ZDOTDIR PROMPT_COMMAND PS0 PS1 PS2 PS3 PS4 SHELLOPTS BASHOPTS LD_PRELOAD
        LD_AUDIT DYLD_INSERT_LIBRARIES PAGER MANPAGER SYSTEMD_PAGER GIT_PAGER EDITOR VISUAL
        SUDO_EDITOR GIT_EDITOR GIT_SEQUENCE_EDITOR GIT_SSH GIT_SSH_COMMAND GIT_ASKPASS
        SSH_ASKPASS SUDO_ASKPASS GIT_EXTERNAL_DIFF GIT_PROXY_COMMAND GIT_EXEC_PATH
        GIT_TEMPLATE_DIR LESSOPEN LESSCLOSE BROWSER RSYNC_RSH RSYNC_CONNECT_PROG CVS_RSH SVN_SSH
        TAR_OPTIONS PERL5OPT NODE_OPTIONS RUBYOPT JAVA_TOOL_OPTIONS _JAVA_OPTIONS
        JDK_JAVA_OPTIONS
    """
)
_DANGEROUS_ENV_PREFIXES: Final = ("BASH_FUNC_", "GIT_CONFIG")


class _WrapperSpec(msgspec.Struct, frozen=True):
    """How to skip one wrapper's own options to reach the command it runs."""

    #: Short options that take a value (``-u root`` or ``-uroot``).
    short_arg: str = ""
    #: Short options without a value.
    short_flags: str = ""
    #: Short options whose value can only be attached (``xargs -i{}``).
    short_opt_attached: str = ""
    long_arg: frozenset[str] = frozenset()
    long_flags: frozenset[str] = frozenset()
    #: ``NAME=value`` words are skipped (sudo); their names are checked against DANGEROUS_ENV.
    assignments: bool = False
    #: ``-5`` is an option (nice).
    numeric: bool = False
    #: Positional words before the command (timeout's duration, chroot's directory).
    positional: int = 0
    #: Extra arguments are appended at run time (xargs).
    open_tail: bool = False
    #: Options after which the inner command's arguments are rewritten at run time
    #: (``xargs -I {}``): every argument becomes dynamic.
    replacing: frozenset[str] = frozenset()
    #: Options that make the wrapper hand the command line to a shell (``sudo -s``).
    shell_short: str = ""
    shell_long: frozenset[str] = frozenset()
    #: Without a command the wrapper starts a shell reading stdin (``chroot dir``).
    bare_shell: bool = False
    #: Options whose value is the directory the command runs in (``sudo -D dir``).
    chdir_short: str = ""
    chdir_long: frozenset[str] = frozenset()


#: Transparent argv wrappers and their option grammar (GNU coreutils / util-linux / sudo / doas).
WRAPPERS: Final[dict[str, _WrapperSpec]] = {
    "nohup": _WrapperSpec(),
    "command": _WrapperSpec(short_flags="pvV"),
    "builtin": _WrapperSpec(),
    "exec": _WrapperSpec(short_arg="a", short_flags="cl"),
    "time": _WrapperSpec(
        short_arg="fo",
        short_flags="pavq",
        long_arg=_fs("--format", "--output"),
        long_flags=_fs("--append", "--verbose", "--quiet", "--portability"),
    ),
    "nice": _WrapperSpec(short_arg="n", long_arg=_fs("--adjustment"), numeric=True),
    "ionice": _WrapperSpec(
        short_arg="cnpPu",
        short_flags="thV",
        long_arg=_fs("--class", "--classdata", "--pid", "--pgid", "--uid"),
        long_flags=_fs("--ignore", "--help", "--version"),
    ),
    "timeout": _WrapperSpec(
        short_arg="sk",
        short_flags="v",
        long_arg=_fs("--signal", "--kill-after"),
        long_flags=_fs("--foreground", "--preserve-status", "--verbose"),
        positional=1,
    ),
    "xargs": _WrapperSpec(
        short_arg="adEILnPs",
        short_flags="0prtxo",
        short_opt_attached="iel",
        long_arg=_fs(
            "--arg-file",
            "--delimiter",
            "--max-lines",
            "--max-args",
            "--max-procs",
            "--max-chars",
            "--process-slot-var",
        ),
        long_flags=_fs(
            "--null",
            "--interactive",
            "--no-run-if-empty",
            "--verbose",
            "--exit",
            "--open-tty",
            "--replace",
            "--eof",
        ),
        open_tail=True,
        replacing=_fs("-I", "-i", "--replace"),
    ),
    "stdbuf": _WrapperSpec(short_arg="ioe", long_arg=_fs("--input", "--output", "--error")),
    "sudo": _WrapperSpec(
        short_arg="ugCDhprtTU",
        short_flags="AbEeHiKklnPSsVvBN",
        long_arg=_names(
            """
                --user --group --close-from --chdir --host --prompt --role --type --command-
                timeout --other-user
            """
        ),
        long_flags=_names(
            """
                --askpass --background --bell --preserve-env --edit --set-home --login --remove-
                timestamp --reset-timestamp --list --non-interactive --preserve-groups --stdin
                --shell --validate
            """
        ),
        assignments=True,
        shell_short="si",
        shell_long=_fs("--shell", "--login"),
        chdir_short="D",
        chdir_long=_fs("--chdir"),
    ),
    "doas": _WrapperSpec(short_arg="uC", short_flags="nsL", shell_short="s"),
    "coproc": _WrapperSpec(),
    "busybox": _WrapperSpec(),
    "toybox": _WrapperSpec(),
    "setsid": _WrapperSpec(short_flags="cfw", long_flags=_fs("--ctty", "--fork", "--wait")),
    "chroot": _WrapperSpec(
        long_arg=_fs("--userspec", "--groups"),
        long_flags=_fs("--skip-chdir"),
        positional=1,
        bare_shell=True,
    ),
    "taskset": _WrapperSpec(
        short_flags="acp", long_flags=_fs("--all-tasks", "--cpu-list", "--pid"), positional=1
    ),
    "chrt": _WrapperSpec(
        short_arg="TPD",
        short_flags="abdefiormpvR",
        long_arg=_fs("--sched-runtime", "--sched-period", "--sched-deadline"),
        long_flags=_names(
            """
                --all-tasks --batch --deadline --ext --fifo --idle --other --rr --reset-on-fork
                --max --pid --verbose
            """
        ),
        positional=1,
    ),
}

#: Programs that run a command from their arguments with options we do not model: every
#: suffix of their arguments starting with a plain word is listed as a command.
RUNNERS: Final = _names(
    """
        strace ltrace valgrind unshare nsenter bwrap firejail systemd-run run0 numactl prlimit
        setpriv cgexec faketime fakeroot fakechroot eatmydata nocache proxychains proxychains4
        torsocks tsocks xvfb-run dbus-run-session dbus-launch ssh-agent catchsegv pkexec gosu
        su-exec chpst setuidgid envdir softlimit unbuffer chronic ifne entr sem cpulimit trickle
        aa-exec runcon sandbox-exec caffeinate systemd-inhibit flatpak-spawn npx bunx uvx sbatch
        srun salloc mpirun mpiexec mosh autossh prime-run optirun primusrun vglrun daemonize
    """
)
#: Programs that become runners after one of these subcommands (``docker run``, ``uv run``).
SUBCOMMAND_RUNNERS: Final[dict[str, frozenset[str]]] = {
    "docker": _fs("run", "exec"),
    "podman": _fs("run", "exec", "unshare"),
    "nerdctl": _fs("run", "exec"),
    "kubectl": _fs("exec", "run", "debug"),
    "oc": _fs("exec", "rsh", "run", "debug"),
    "uv": _fs("run", "tool"),
    "pipx": _fs("run"),
    "poetry": _fs("run"),
    "pipenv": _fs("run"),
    "pdm": _fs("run"),
    "hatch": _fs("run"),
    "rye": _fs("run"),
    "conda": _fs("run"),
    "mamba": _fs("run"),
    "micromamba": _fs("run"),
    "pixi": _fs("run", "exec"),
    "bundle": _fs("exec"),
    "bundler": _fs("exec"),
    "npm": _fs("exec", "x"),
    "pnpm": _fs("exec", "dlx"),
    "yarn": _fs("exec", "dlx"),
    "direnv": _fs("exec"),
    "nix": _fs("develop", "shell", "run"),
    "devbox": _fs("run"),
    "flatpak": _fs("run"),
    "toolbox": _fs("run"),
    "distrobox": _fs("enter"),
    "lxc": _fs("exec"),
    "vagrant": _fs("ssh"),
    "mise": _fs("exec", "x"),
    "asdf": _fs("exec"),
    "perf": _fs("record", "stat", "trace"),
    "ip": _fs("exec"),
}


class _Interp(msgspec.Struct, frozen=True):
    """An interpreter's options: which carry code, which take values, which name a program."""

    #: Short options whose value is code (``-c``, ``-e``): uncertain.
    code: str = ""
    code_long: frozenset[str] = frozenset()
    #: Short options taking a value (the rest of the cluster, or the next word).
    value: str = ""
    #: Short options with an optional attached value (``perl -i.bak``, ``-l``).
    optional: str = ""
    flags: str = ""
    #: Long options that take the next word as their value when written without ``=``.
    value_long: frozenset[str] = frozenset()
    #: Options naming a module or file that is then the program (``python -m``, ``php -f``).
    module: str = ""
    #: Modules that run code given on their command line (``python -m timeit 'code'``).
    code_modules: frozenset[str] = frozenset()
    #: Options after which it prints something and exits, running nothing (``--version``):
    #: short ones as letters, long ones whole.
    exits: str = ""
    exits_long: frozenset[str] = frozenset()


_PYTHON: Final = _Interp(
    exits="hV",
    exits_long=_fs("--version", "--help", "--help-env", "--help-xoptions", "--help-all"),
    code="c",
    value="WXQ",
    flags="bBdEhiIOPqRsSuvVx3",
    module="m",
    code_modules=_names(
        """
            timeit code pdb cProfile profile trace asyncio runpy IPython ptpython bpython
            idlelib _pyrepl
        """
    ),
)
_NODE: Final = _Interp(
    exits="vh",
    exits_long=_fs("--version", "--help", "--v8-options"),
    code="ep",
    code_long=_fs("--eval", "--print"),
    value="rC",
    flags="icvh",
    value_long=_fs(
        "--require",
        "--import",
        "--loader",
        "--experimental-loader",
        "--conditions",
        "--input-type",
        "--title",
        "--env-file",
    ),
)
#: Interpreters and the options that hand them code in the call itself.
INTERPRETERS: Final[dict[str, _Interp]] = {
    "python": _PYTHON,
    "pypy": _PYTHON,
    "ipython": _Interp(code="c", module="m"),
    "perl": _Interp(
        code="eEMm",
        value="I",
        optional="0CdDFilxV",
        flags="acnpsStTuUvwWXh",
        exits="vh",
        exits_long=_fs("--version", "--help"),
    ),
    "ruby": _Interp(
        code="e",
        value="ICEr",
        optional="0FiKWx",
        flags="acdhlnpsSvwy",
        exits="h",
        exits_long=_fs("--version", "--help"),
    ),
    "node": _NODE,
    "nodejs": _NODE,
    "bun": _Interp(code="ep", code_long=_fs("--eval", "--print")),
    "php": _Interp(
        code="rBREa",
        value="cdzSt",
        module="fF",
        flags="hHilmnqsvwe",
        exits="hvim",
        exits_long=_fs("--version", "--help", "--info", "--modules"),
    ),
    "lua": _Interp(code="e", value="l", flags="ivEW"),
    "luajit": _Interp(code="e", value="ljOb", flags="ivE"),
    "Rscript": _Interp(code="e"),
    "julia": _Interp(
        code="eE",
        code_long=_fs("--eval", "--print"),
        value="LJCtpO",
        flags="iqhv",
        exits="hv",
        exits_long=_fs("--version", "--help"),
    ),
    "expect": _Interp(code="c", value="D", module="f", flags="dinNbv"),
    "tclsh": _Interp(),
    "wish": _Interp(),
    "osascript": _Interp(code="e", value="ls"),
    "groovy": _Interp(code="e"),
    "scala": _Interp(code="e"),
    "elixir": _Interp(code="e", code_long=_fs("--eval"), value="r"),
    "guile": _Interp(code="c", value="lLex", module="s", flags="qh"),
    "racket": _Interp(code="e", value="lfrtkSIp"),
    "sbcl": _Interp(
        code_long=_fs("--eval"),
        value_long=_fs("--load", "--script", "--core", "--dynamic-space-size"),
    ),
}
#: Names that also come with a version suffix (``python3.11``, ``perl5.36``, ``bash5``).
_VERSIONED: Final = frozenset(
    {"python", "pypy", "ipython", "perl", "ruby", "node", "lua", "php", "julia", "tclsh", "wish"}
    | {"bash", "zsh", "ksh"}
)
_LD_SO: Final = re.compile(r"ld(?:-linux[\w.-]*|-musl[\w.-]*)?\.so(?:\.\d+)*")

#: Every command git ships (builtins and the scripts in its exec path). Anything else after
#: ``git`` may be an alias (``alias.x = !sh -c ...``) or a ``git-x`` program: uncertain.
GIT_COMMANDS: Final = frozenset(
    """
    add am annotate apply archimport archive backfill bisect blame branch bugreport bundle
    cat-file check-attr check-ignore check-mailmap check-ref-format checkout checkout-index
    cherry cherry-pick citool clean clone column commit commit-graph commit-tree config
    count-objects credential credential-cache credential-store cvsexportcommit cvsimport
    cvsserver daemon describe diagnose diff diff-files diff-index diff-pairs diff-tree difftool
    fast-export fast-import fetch fetch-pack filter-branch fmt-merge-msg for-each-ref
    for-each-repo format-patch fsck fsck-objects fsmonitor--daemon gc get-tar-commit-id grep gui
    hash-object help hook http-backend http-fetch http-push imap-send index-pack init init-db
    instaweb interpret-trailers last-modified log ls-files ls-remote ls-tree mailinfo mailsplit
    maintenance merge merge-base merge-file merge-index merge-octopus merge-one-file merge-ours
    merge-recursive merge-recursive-ours merge-recursive-theirs merge-resolve merge-subtree
    merge-tree mergetool mktag mktree multi-pack-index mv name-rev notes p4 pack-objects
    pack-redundant pack-refs patch-id pickaxe prune prune-packed pull push quiltimport
    range-diff read-tree rebase receive-pack reflog refs remote remote-ext remote-fd remote-ftp
    remote-ftps remote-http remote-https repack replace replay repo request-pull rerere reset
    restore rev-list rev-parse revert rm send-email send-pack shell shortlog show show-branch
    show-index show-ref sparse-checkout stage stash status stripspace submodule subtree survey
    svn switch symbolic-ref tag unpack-file unpack-objects update-index update-ref
    update-server-info upload-archive upload-pack var verify-commit verify-pack verify-tag
    version whatchanged worktree write-tree
    """.split()
)
#: Global options of git (``git [opts] <subcommand>``).
_GIT_FLAGS: Final = _names(
    """
        -p --paginate -P --no-pager --no-replace-objects --no-lazy-fetch --no-optional-locks
        --no-advice --bare --literal-pathspecs --glob-pathspecs --noglob-pathspecs --icase-
        pathspecs --exec-path --html-path --man-path --info-path -v --version -h --help
    """
)
#: Global options taking a value: ``-C x``, ``-c x`` (separate only), ``--git-dir[=]x``...
_GIT_VALUE_OPTS: Final = frozenset(
    {
        "-C",
        "-c",
        "--git-dir",
        "--work-tree",
        "--namespace",
        "--super-prefix",
        "--attr-source",
        "--config-env",
    }
)
#: Config keys whose values never name a command (compared lowercased), for ``git -c`` and
#: ``git config``. Everything else (``alias.*``, ``core.pager``, ``core.editor``,
#: ``core.sshcommand``, ``core.fsmonitor``, ``core.hookspath``, ``credential.helper``,
#: ``diff.external``, ``*.textconv``, ``include.path``...) may run one: uncertain.
GIT_SAFE_CONFIG: Final = _names(
    """
        user.name user.email user.signingkey core.quotepath core.autocrlf core.safecrlf
        core.filemode core.ignorecase core.longpaths core.abbrev core.eol core.whitespace
        core.precomposeunicode core.symlinks init.defaultbranch safe.directory commit.gpgsign
        tag.gpgsign push.default push.autosetupremote push.followtags pull.rebase pull.ff
        fetch.prune fetch.prunetags merge.ff merge.conflictstyle rebase.autostash
        rebase.autosquash rebase.updaterefs rerere.enabled diff.renames diff.algorithm
        diff.colormoved diff.noprefix diff.mnemonicprefix log.decorate log.date
        log.showsignature status.short status.branch status.showuntrackedfiles branch.sort
        tag.sort column.ui gc.auto maintenance.auto protocol.version http.sslverify
        http.postbuffer http.version submodule.recurse feature.manyfiles index.version
        pack.threads checkout.defaultremote
    """
)
_GIT_SAFE_CONFIG_PREFIXES: Final = ("color.", "advice.", "i18n.")
#: Subcommand options that make git run a program or a shell command.
_GIT_EXEC_LONG: Final = _names(
    """
        --upload-pack --receive-pack --exec --extcmd --to-cmd --cc-cmd --header-cmd --sendmail-
        cmd --smtp-server --open-files-in-pager --httpd --browser --access-hook
    """
)
#: Subcommands that can run programs from their arguments: a dynamic argument is uncertain.
_GIT_EXEC_SUBCOMMANDS: Final = _names(
    """
        fetch pull clone push ls-remote archive rebase difftool mergetool grep send-email
        submodule bisect for-each-repo config fetch-pack send-pack
    """
)
#: Subcommands that run programs or commands we do not follow.
_GIT_OPAQUE: Final = frozenset({"filter-branch", "remote-ext", "shell", "instaweb", "daemon"})

#: A word that looks like a command line (for runners' arguments).
_SCRIPTISH: Final = re.compile(r"[\s;|&<>()$`]")
#: awk programs that can start processes: system(), pipes, gawk's @ indirect calls.
_AWK_EXEC: Final = re.compile(r"system|\||@")
#: A GNU sed program that may hold an ``e`` command or an ``s///e`` flag (over-approximate:
#: an ``e`` after a non-alphanumeric, possibly behind other s-flag letters).
_SED_EXEC: Final = re.compile(r"(?:^|[^A-Za-z0-9])[gpiIMm0-9]*e")
#: A quoted value bash would run when used in arithmetic: ``a[$(cmd)]``.
_ARITH_TRAP: Final = re.compile(rb"\[[^\]\n]{0,256}?(?:\$\\?\(|\\?`)")
_ARITH_TRAP_NODES: Final = frozenset({"raw_string", "ansi_c_string", "string_content", "word"})
#: ``ssh -o`` keys that run a local or remote command.
_SSH_COMMAND_KEYS: Final = frozenset(
    {"proxycommand", "localcommand", "knownhostscommand", "remotecommand", "permitlocalcommand"}
)
_SSH_ARG: Final = "BbcDEeFIiJLlmOoPpQRSWw"
_SSH_FLAGS: Final = "46AaCfGgKkMNnqsTtVvXxYy"
#: Shell syntax in a value meant to be one plain command.
_SHELL_META: Final = re.compile(r"[;|&<>()$`'\"\\\n]")
#: Paths that are the call's own stdin / pipes rather than a file.
_STDIN_PATHS: Final = ("/dev/", "/proc/")

# --- words ------------------------------------------------------------------------------------

_ANSI_SIMPLE: Final = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}


#: ``{a,b}`` / ``{1..3}`` (tree-sitter splits these into a concatenation of words). Matched on
#: the raw text, quotes included: a quoted brace pair is merely treated as dynamic too.
_BRACE_EXPANSION: Final = re.compile(r"\{[^{}\s]*(?:,|\.\.)[^{}\s]*\}")


_WORD_SPECIAL: Final = re.compile(r"[\\*?\[$`(]")


def _unquoted(text: str) -> Word:
    """An unquoted word: backslash escapes removed; ``None`` if it globs."""
    if not _WORD_SPECIAL.search(text):
        return text
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            if i + 1 < n and text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
            continue
        if c in "*?" or (c == "[" and "]" in text[i + 1 :]):
            return None
        if c in "$`(":
            return None  # should have been a separate node; be safe
        out.append(c)
        i += 1
    return "".join(out)


def _double_quoted(text: str) -> str:
    """The inside of ``"..."`` without expansions: only ``\\$ \\` \\" \\\\ \\<nl>`` escape."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n and text[i + 1] in '$`"\\\n':
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _ansi_c(text: str) -> Word:
    """The inside of ``$'...'``; ``None`` for escapes we do not decode (``\\c``)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c != "\\" or i + 1 == n:
            out.append(c)
            i += 1
            continue
        e = text[i + 1]
        i += 2
        if e in _ANSI_SIMPLE:
            out.append(_ANSI_SIMPLE[e])
            continue
        digits, base, limit = "", 0, 0
        if e in "01234567":
            base, limit, digits = 8, 2, e
        elif e in "xuU":
            base, limit = 16, {"x": 2, "u": 4, "U": 8}[e]
        else:
            return None
        while len(digits) < (limit + (1 if base == 8 else 0)) and i < n:
            ch = text[i]
            if (base == 8 and ch in "01234567") or (base == 16 and ch in "0123456789abcdefABCDEF"):
                digits += ch
                i += 1
            else:
                break
        if not digits:
            return None
        try:
            out.append(chr(int(digits, base)))
        except (ValueError, OverflowError):
            return None
    return "".join(out)


#: A brace expansion expands to at most this many words (more: the word is dynamic).
MAX_BRACE_WORDS: Final = 64
_BRACE_SEQ: Final = re.compile(r"(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(?:\.\.(-?\d+))?")


def _braces(node: tree_sitter.Node) -> list[str] | None:
    """The words bash makes of an unquoted word with brace expansions (``src/{a,b}.py`` is
    ``src/a.py src/b.py``, ``x{1..3}`` is ``x1 x2 x3``), or None when it has none, or has
    anything else to expand (quotes, ``$``, globs: then :func:`_word` says it is dynamic)."""
    if node.type not in ("word", "concatenation"):
        return None
    text = _text(node)
    if not _BRACE_EXPANSION.search(text) or any(c in text for c in "'\"$`\\*?["):
        return None
    words = _expand_braces(text)
    if words is None or len(words) > MAX_BRACE_WORDS:
        return None
    return words


def _expand_braces(text: str) -> list[str] | None:
    """bash's brace expansion of ``text`` (no quotes, no backslashes in it), left to right."""
    start = _brace_open(text)
    if start is None:
        return [text]
    depth, parts, last = 0, [], start + 1
    for i in range(start, len(text)):
        c = text[i]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                parts.append(text[last:i])
                end = i
                break
        elif c == "," and depth == 1:
            parts.append(text[last:i])
            last = i + 1
    else:
        return None
    head, tail = text[:start], text[end + 1 :]
    if len(parts) == 1:
        seq = _BRACE_SEQ.fullmatch(parts[0])
        if seq is None:  # `{x}` is no expansion: kept, and the rest expanded after it
            rest = _expand_braces(tail)
            return None if rest is None else [f"{head}{{{parts[0]}}}{r}" for r in rest]
        parts = _sequence(seq)
        if not parts:
            return None
    out: list[str] = []
    for part in parts:
        inner = _expand_braces(head + part + tail)
        if inner is None:
            return None
        out.extend(inner)
        if len(out) > MAX_BRACE_WORDS:
            return None
    return out


def _brace_open(text: str) -> int | None:
    """Where the first ``{`` that opens an expansion (a comma or ``..`` inside) is."""
    for match in re.finditer(r"\{", text):
        depth = 0
        for i in range(match.start(), len(text)):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    inner = text[match.start() + 1 : i]
                    if "," in inner or _BRACE_SEQ.fullmatch(inner):
                        return match.start()
                    break
    return None


def _sequence(seq: re.Match[str]) -> list[str]:
    first, last, step_text = seq.group(1), seq.group(2), seq.group(3)
    step = abs(int(step_text)) if step_text else 1
    if step == 0:
        step = 1
    if first.lstrip("-").isdigit() and last.lstrip("-").isdigit():
        a, b = int(first), int(last)
        if abs(b - a) // step >= MAX_BRACE_WORDS:
            return []
        rng = range(a, b + 1, step) if a <= b else range(a, b - 1, -step)
        return [str(n) for n in rng]
    if len(first) == 1 and len(last) == 1 and first.isalpha() and last.isalpha():
        a, b = ord(first), ord(last)
        rng = range(a, b + 1, step) if a <= b else range(a, b - 1, -step)
        return [chr(n) for n in rng]
    return []


def _word(node: tree_sitter.Node) -> Word:
    """A word node's normalised static text, or ``None`` when it is dynamic."""
    t = node.type
    text = _text(node)
    if t in ("word", "concatenation") and _BRACE_EXPANSION.search(text):
        return None
    if t == "word":
        return _unquoted(text)
    if t == "number":
        return text
    if t == "raw_string":
        return text[1:-1]
    if t in ("string", "translated_string"):
        if any(c.is_named and c.type != "string_content" for c in node.children):
            return None
        inner = text[1:-1] if t == "string" else text[2:-1]
        return _double_quoted(inner)
    if t == "ansi_c_string":
        return _ansi_c(text[2:-1])
    if t == "concatenation":
        # tree-sitter splits `r[m]` into words; the pieces together still glob.
        if "]" in text and any(c.type == "word" and "[" in _text(c) for c in node.children):
            return None
        parts: list[str] = []
        for child in node.children:
            value = _word(child)
            if value is None:
                return None
            parts.append(value)
        return "".join(parts)
    if t == "command_name":
        return _word(node.children[0]) if node.child_count == 1 else None
    return None


#: Characters that glob when unquoted, and what each means to fnmatch when quoted.
_GLOB_CHARS: Final = "*?["
_FN_LITERAL: Final = {"*": "[*]", "?": "[?]", "[": "[[]"}
#: ``$x``, ``"$x"``, ``${x}``: a word that is one variable.
_ONE_VARIABLE: Final = re.compile(r'"\$(?:\{(\w+)\}|(\w+))"|\$(?:\{(\w+)\}|(\w+))')
#: A loop value that reads the same unquoted: no blanks, no wildcards (nor escaped ones).
_PLAIN_NAME: Final = re.compile(r"[^\s*?\[\]]+")


def fn_literal(text: str) -> str:
    """``text`` as an ``fnmatch`` pattern matching itself alone."""
    return "".join(_FN_LITERAL.get(c, c) for c in text)


def _patterns(node: tree_sitter.Node) -> tuple[str, ...] | None:
    """What a dynamic word may expand to, as ``fnmatch`` patterns: a glob's own pattern, or the
    values of a ``for`` loop's variable over names and globs; None when it depends on anything
    else (a variable, a substitution, extended globs or character classes we do not model)."""
    own = _glob_pattern(node)
    if own is not None:
        return (own,)
    text = _text(node)
    if (
        node.type in ("word", "concatenation")
        and _BRACE_EXPANSION.search(text)
        and not any(c in text for c in "'\"$`\\()")
    ):  # `*.{py,txt}`: the braces first, then each word globs
        words = _expand_braces(text)
        if words is None or len(words) > MAX_BRACE_WORDS:
            return None
        return tuple(_bare_pattern(w) for w in words)
    variable = _ONE_VARIABLE.fullmatch(text)
    if variable is None:
        return None
    name = next(g for g in variable.groups() if g)
    values = _loop_values(node, name)
    # Unquoted, bash splits the value at blanks and globs it again (a file `x ..` would be two
    # words): only plain names without blanks or wildcards read the same.
    if values is None or text.startswith('"') or all(_PLAIN_NAME.fullmatch(v) for v in values):
        return values
    return None


def _glob_pattern(node: tree_sitter.Node) -> str | None:
    """The ``fnmatch`` pattern of a word that is static but for unquoted ``*``, ``?`` and
    ``[...]`` (``src/*.py``, ``"my dir"/*.txt``), or None."""
    chars: list[tuple[str, bool]] = []  # (character, quoted)
    parts = node.children if node.type == "concatenation" else [node]
    for part in parts:
        if part.type == "word":
            text = _text(part)
            if any(c in text for c in "$`(){}"):
                return None
            i = 0
            while i < len(text):
                c = text[i]
                if c == "\\":
                    if i + 1 < len(text) and text[i + 1] != "\n":
                        chars.append((text[i + 1], True))
                    i += 2
                    continue
                chars.append((c, False))
                i += 1
        elif part.type in ("raw_string", "string", "ansi_c_string"):
            value = _word(part)
            if value is None:
                return None
            chars.extend((c, True) for c in value)
        else:
            return None
    out: list[str] = []
    globbed = False
    i = 0
    while i < len(chars):
        c, quoted = chars[i]
        if quoted or c not in _GLOB_CHARS:
            out.append(_FN_LITERAL.get(c, c))
            i += 1
            continue
        if c in "*?":
            out.append(c)
            globbed = True
            i += 1
            continue
        # `[...]`: unquoted up to its `]` (else a literal `[`); no classes like [[:alpha:]]
        end = next((j for j in range(i + 2, len(chars)) if chars[j] == ("]", False)), None)
        if end is None:
            out.append("[[]")
            i += 1
            continue
        inner = [ch for ch, _ in chars[i + 1 : end]]
        if "[" in inner or "/" in inner:
            return None
        if inner and inner[0] == "^":
            inner[0] = "!"
        out.append("[" + "".join(inner) + "]")
        globbed = True
        i = end + 1
    return "".join(out) if globbed else None


def _bare_pattern(text: str) -> str:
    """An unquoted word without backslashes as an ``fnmatch`` pattern (``[^a]`` -> ``[!a]``; a
    ``[`` with no ``]`` after it is itself)."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        end = text.find("]", i + 2) if c == "[" else -1
        if c == "[" and end > 0 and "[" not in text[i + 1 : end]:
            inner = text[i + 1 : end]
            out.append("[" + ("!" + inner[1:] if inner.startswith("^") else inner) + "]")
            i = end + 1
            continue
        out.append("[[]" if c == "[" else c)
        i += 1
    return "".join(out)


def _loop_values(node: tree_sitter.Node, name: str) -> tuple[str, ...] | None:
    """The patterns of ``$name`` inside ``for name in a b/*.py ...; do ...; done``, when every
    value is a name or a glob and the body does not assign ``name``; else None."""
    loop = node.parent
    while loop is not None:
        if loop.type == "for_statement":
            var = loop.child_by_field_name("variable")
            if var is not None and _text(var) == name:
                break
        loop = loop.parent
    if loop is None:
        return None
    values = loop.children_by_field_name("value")
    body = loop.child_by_field_name("body")
    if not values or body is None:
        return None  # `for f; do` runs over "$@"
    text = _text(body)
    for use in re.finditer(rf"(?<!\w){re.escape(name)}(?!\w)", text):
        if not text[: use.start()].endswith(("$", "${")):
            return None  # `f=x`, `read f`, `unset f`...: it may hold anything
    out: list[str] = []
    for value in values:
        expanded = _braces(value)
        if expanded is not None:
            out.extend(fn_literal(w) for w in expanded)
            continue
        static = _word(value)
        if static is not None:
            out.append(fn_literal(static))
            continue
        pattern = _glob_pattern(value)
        if pattern is None:
            return None
        out.append(pattern)
    return tuple(out)


def _text(node: tree_sitter.Node) -> str:
    raw = node.text
    return raw.decode("utf-8", "surrogateescape") if raw is not None else ""


#: Pager / editor variables, and the values of theirs that run nothing but themselves
#: (``GIT_PAGER=cat git log`` is a common way to avoid a pager).
_PAGER_VARS: Final = _names(
    """
        PAGER GIT_PAGER MANPAGER SYSTEMD_PAGER EDITOR VISUAL GIT_EDITOR GIT_SEQUENCE_EDITOR
        SUDO_EDITOR
    """
)
_BENIGN_PAGERS: Final = frozenset(
    {"", "cat", "less", "less -R", "less -r", "less -FRX", "more", "head", "tail", "true", "false"}
)


def _check_env(name: str, value: Word) -> None:
    """An assignment ``name=value`` that makes programs run a command or load code: uncertain."""
    if name not in DANGEROUS_ENV and not name.startswith(_DANGEROUS_ENV_PREFIXES):
        return
    if value is not None and (
        (name in _PAGER_VARS and value in _BENIGN_PAGERS)
        or name == "GIT_CONFIG_NOSYSTEM"
        or (name in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM") and value == "/dev/null")
    ):
        return
    raise _Uncertain(f"{name} makes programs run a command or load code")


def _check_env_word(word: str) -> None:
    name, _, value = word.partition("=")
    _check_env(name, value)


def _stdin_path(path: str) -> bool:
    return path == "-" or path.startswith(_STDIN_PATHS)


# --- the walker -------------------------------------------------------------------------------

#: Ids of ``&&`` chains (:attr:`SimpleCommand.chain`), unique across every script read, so the
#: chains of a ``bash -c`` string never meet those of the script around it.
_CHAIN_IDS: Final = itertools.count()


def _and_list(node: tree_sitter.Node) -> bool:
    return node.type == "list" and any(c.type == "&&" for c in node.children)


#: What a handler returns: the command the program runs in turn (and its open tail), or None.
_Next = tuple[tuple[Word, ...], bool] | None


class _Walker:
    """Collects simple commands. A doubt about what a command runs is noted in ``doubts`` (or
    ``foreign``) and the walk goes on; a script that cannot be read (a parse error, a
    mis-parse, a node we do not know) raises :class:`_Uncertain`. The one reading both
    :func:`read_words` and :func:`parse_script` give."""

    def __init__(self, source: bytes, depth: int) -> None:
        self.source = source
        self.depth = depth
        self.commands: list[SimpleCommand] = []
        self.dynamic: list[str] = []
        self.other_words: list[Word] = []
        self.written: list[tuple[Word, int]] = []
        #: Written targets waiting for the command they belong to (by node id).
        self.pending: dict[int, list[Word]] = {}
        self.doubts: list[str] = []
        self.foreign: list[str] = []
        self.assignments: list[tuple[str, str]] = []
        self.env_doubts: list[str] = []
        self.functions: list[str] = []
        #: The directories the command in hand runs in (:attr:`SimpleCommand.chdir`), and
        #: those its wrapper adds for the command it runs.
        self.chdir: tuple[Word, ...] = ()
        self.chdir_step: tuple[Word, ...] = ()
        #: The ``&&`` chain of each command node that is a chain's operand and of each list
        #: node read as part of one (by node id), the chain of the command in hand, and
        #: whether the next command recorded is that command itself.
        self.chain_of: dict[int, int] = {}
        self.chain = -1
        self.direct = False
        #: The command node in hand (:meth:`stdin_fed`), its words and their glob patterns
        #: (:attr:`SimpleCommand.globs`).
        self.node: tree_sitter.Node | None = None
        self.node_words: tuple[Word, ...] = ()
        self.node_globs: tuple[tuple[str, ...] | None, ...] = ()
        #: A bare ``exec`` (``exec < file``) may have moved the shell's own stdin for every
        #: later command.
        self.any_exec = False
        #: Chain operands that are parts of a pipeline (a cd there moves only its subshell).
        self.piped: set[int] = set()
        self.arith_trap = bool(source) and _ARITH_TRAP.search(source) is not None

    def _semantic(self, check: Callable[[], None]) -> None:
        """A check of what a command would run: what it cannot read becomes a doubt."""
        try:
            check()
        except _TooMany:
            raise
        except _Foreign as exc:
            self.foreign.append(str(exc))
        except _Uncertain as exc:
            self.doubts.append(str(exc))

    def walk(self, root: tree_sitter.Node) -> None:
        # has_error covers ERROR and MISSING nodes anywhere below.
        if root.has_error:
            raise _Uncertain("parse error")
        stack: list[tuple[tree_sitter.Node, tree_sitter.Node | None]] = [(root, None)]
        while stack:
            node, parent = stack.pop()
            t = node.type
            if t in _LEAVES:
                if self.arith_trap and t in _ARITH_TRAP_NODES:
                    self._semantic(functools.partial(self._check_arith_trap, node))
                continue
            if t not in _KNOWN_TYPES:
                raise _Uncertain(f"unknown node {t}")
            if t in _TIGHT_NODES or t in _OPERATOR_NODES or t == "command_substitution":
                children = node.children
                if t == "command_substitution":
                    self._check_backticks(node, children)
                else:
                    self._check_gaps(t, children)
                if t == "list" and node.id not in self.chain_of and _and_list(node):
                    self._chain(node)
                if t == "command":
                    self._command(node, children, parent)
                elif t == "redirected_statement":
                    self._check_redirected(node)
                    self._redirect_targets(node)
                elif t == "declaration_command":
                    self._semantic(functools.partial(self._check_declaration, children))
                named = [c for c in children if c.is_named]
                if t == "command" and not self.arith_trap:
                    # Its words are read: only what may hold a command is walked on.
                    named = [c for c in named if c.type not in _LEAVES]
            else:
                if t == "variable_assignment":
                    self._semantic(functools.partial(self._check_assignment, node))
                elif t == "function_definition":
                    name = node.child_by_field_name("name")
                    if name is not None:
                        self.functions.append(_text(name))
                named = node.named_children
            stack.extend((child, node) for child in reversed(named))

    def _globs_of(self, words: tuple[Word, ...]) -> tuple[tuple[str, ...] | None, ...]:
        """The glob patterns of ``words`` when they are the command node's own words or a
        suffix of them (what a wrapper runs: ``sudo rm -rf build/*``); else none known."""
        mine = self.node_globs
        n = len(words)
        if not mine or n > len(mine) or self.node_words[len(mine) - n :] != words:
            return ()
        suffix = mine[len(mine) - n :]
        return suffix if any(suffix) else ()

    def stdin_fed(self) -> bool:
        """Whether the command in hand may read something of the call on its stdin: it comes
        after a ``|``, a here-doc or here-string (or a ``<`` of a run-time name or a
        descriptor) is on it or on a compound around it, or it is in a ``-c`` string or after
        a bare ``exec`` (which may have moved stdin). ``< file`` is a file's code, out of
        every hook's sight as ``bash file`` is."""
        if self.depth > 0 or self.node is None or self.any_exec:
            return True
        node: tree_sitter.Node | None = self.node
        while node is not None:
            # The innermost redirect is what the command reads: `x | python < f` reads f.
            feeds = [f for f in map(_feeds_stdin, node.children) if f is not None]
            if feeds:
                return "call" in feeds
            parent = node.parent
            if parent is not None and parent.type == "pipeline":
                first = parent.named_children[0] if parent.named_children else None
                if first is None or first.id != node.id:
                    return True
            node = parent
        return False

    def stdin(self, why: str) -> None:
        """A program reads code from stdin: uncertain where the call feeds it (else it reads
        the agent's own stdin, which holds nothing of the call)."""
        if self.stdin_fed():
            raise _Uncertain(why)

    def _chain(self, top: tree_sitter.Node) -> None:
        """Give every simple command that is an operand of the ``&&`` chain ``top`` one id."""
        chain = next(_CHAIN_IDS)
        todo = [top]
        while todo:
            node = todo.pop()
            if node.type == "redirected_statement":  # tree-sitter hangs `a && b > f` so
                body = node.child_by_field_name("body")
                if body is not None:
                    todo.append(body)
            elif node is top or _and_list(node):
                self.chain_of[node.id] = chain  # read here: not a chain of its own
                todo.extend(c for c in node.children if c.is_named)
            elif node.type == "command":
                self.chain_of[node.id] = chain
            elif node.type == "pipeline":  # runs after the chain so far, each part in a subshell
                for part in node.named_children:
                    cmd = part
                    if part.type == "redirected_statement":
                        cmd = part.child_by_field_name("body") or part
                    if cmd.type == "command":
                        self.chain_of[cmd.id] = chain
                        self.piped.add(cmd.id)

    def _check_arith_trap(self, node: tree_sitter.Node) -> None:
        raw = node.text
        if raw is not None and _ARITH_TRAP.search(raw):
            raise _Uncertain("a quoted a[$(...)] runs when bash evaluates it as arithmetic")

    def _check_assignment(self, node: tree_sitter.Node) -> None:
        name = node.child_by_field_name("name")
        if name is not None and name.type == "subscript":
            name = name.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if value is not None:
            self.other_words.append(_word(value))
        if name is not None:
            self.assignments.append((_text(name), "" if value is None else _text(value)))
            try:
                _check_env(_text(name), "" if value is None else _word(value))
            except _Uncertain:
                self.env_doubts.append(_text(name))
                raise

    def _check_declaration(self, children: list[tree_sitter.Node]) -> None:
        """``export "A=b"``: a quoted argument may still assign a dangerous variable."""
        for child in children[1:]:
            if not child.is_named or child.type in ("variable_assignment", "variable_name"):
                continue
            word = _word(child)
            if word is None:
                raise _Uncertain("dynamic declaration argument")
            if "=" in word and not word.startswith("-"):
                _check_env_word(word)

    def _check_gaps(self, node_type: str, children: list[tree_sitter.Node]) -> None:
        operators = node_type in _OPERATOR_NODES
        for left, right in itertools.pairwise(children):
            gap = self.source[left.end_byte : right.start_byte]
            if not gap or gap == b" ":
                continue
            gap = gap.replace(b"\\\n", b"")
            if not gap or (gap.isspace() and b"\n" not in gap):
                continue
            if operators and gap.isspace() and left.type in _LINE_OPERATORS_OR_COMMENT:
                continue
            if right.type == "heredoc_redirect" and _dashes(gap):
                continue  # `cat - <<EOF`: the `-` is dropped, _command puts it back
            raise _Uncertain(f"{node_type} spans a line or operator (tree-sitter-bash mis-parse)")

    def _check_backticks(self, node: tree_sitter.Node, children: list[tree_sitter.Node]) -> None:
        if (
            children
            and children[0].type == "`"
            and b"\n" in self.source[node.start_byte : node.end_byte]
        ):
            raise _Uncertain("backticks across lines (tree-sitter-bash mis-parses these)")

    def _redirect_targets(self, stmt: tree_sitter.Node) -> None:
        # tree-sitter hangs the redirect of `a && b > f` and `a | b > f` on the whole list or
        # pipeline; bash opens it for `b`, in `b`'s directory.
        body = stmt.child_by_field_name("body")
        owner = _last_command(body) if body is not None else None
        for child in stmt.children_by_field_name("redirect"):
            targets = _destinations(child) if child.type == "file_redirect" else []
            if targets:
                self._target(child, targets[0], owner)

    def _target(
        self, redirect: tree_sitter.Node, target: tree_sitter.Node, owner: int | None = None
    ) -> None:
        word = _word(target)
        self.other_words.append(word)
        if not _writes_file(redirect, target):
            return
        if owner is None:
            self.written.append((word, len(self.commands)))
        else:
            self.pending.setdefault(owner, []).append(word)

    def _check_redirected(self, node: tree_sitter.Node) -> None:
        body = node.child_by_field_name("body")
        if body is not None and body.type != "command" and _extra_destinations(node):
            raise _Uncertain("redirect with several destinations after a compound")

    def _command(
        self,
        node: tree_sitter.Node,
        children: list[tree_sitter.Node],
        parent: tree_sitter.Node | None,
    ) -> None:
        words: list[Word] = []
        seen_name = False
        self.node = node
        globs: dict[int, tuple[str, ...]] = {}
        for word in self.pending.pop(node.id, ()):
            self.written.append((word, len(self.commands)))
        joined_to: int | None = None  # the end of the last word, for `g\<newline>it`
        for index, child in enumerate(children):
            field = node.field_name_for_child(index)
            if field in ("name", "argument"):
                seen_name = seen_name or field == "name"
                gap = self.source[joined_to : child.start_byte] if joined_to is not None else b""
                if words and gap and gap == b"\\\n" * (len(gap) // 2):
                    # bash removes a backslash-newline before it splits words: `g\<newline>it`
                    # is `git`, where tree-sitter sees two words.
                    right = _word(child)
                    words[-1] = None if words[-1] is None or right is None else words[-1] + right
                    globs.pop(len(words) - 1, None)
                    joined_to = child.end_byte
                    continue
                joined_to = child.end_byte
                expanded = _braces(child)
                if expanded is not None:
                    words.extend(expanded)
                    continue
                word = _word(child)
                words.append(word)
                if word is None:
                    self.dynamic.append(_text(child))
                    patterns = _patterns(child)
                    if patterns is not None:
                        globs[len(words) - 1] = patterns
            elif child.type == "file_redirect":
                targets = _destinations(child)
                if targets:
                    self._target(child, targets[0])
                words.extend(_word(w) for w in targets[1:])
        if parent is not None and parent.type == "redirected_statement":
            body = parent.child_by_field_name("body")
            if body is not None and body.id == node.id:
                after = body.next_sibling
                if after is not None:
                    gap = self.source[node.end_byte : after.start_byte]
                    words.extend("-" for _ in range(_dashes(gap)))
                words.extend(_word(w) for w in _extra_destinations(parent))
        if not seen_name:
            return  # assignments / redirects only; their substitutions are walked anyway
        if len(words) == 1 and words[0] == "exec":
            self.any_exec = True
        self.node_words = tuple(words)
        self.node_globs = tuple(globs.get(i) for i in range(len(words))) if globs else ()
        self.chain, self.direct = self.chain_of.get(node.id, -1), node.id not in self.piped
        try:
            self._semantic(functools.partial(self.add, tuple(words), open_tail=False))
        finally:
            self.chain, self.direct = -1, False

    def record(self, command: SimpleCommand) -> None:
        if len(self.commands) >= MAX_COMMANDS:
            raise _TooMany("too many commands")
        self.commands.append(command)

    def add(self, words: tuple[Word, ...], *, open_tail: bool) -> None:
        """Record ``words`` and whatever it runs through wrappers, strings and runners."""
        nxt: _Next = (words, open_tail)
        chdir: tuple[Word, ...] = ()
        while nxt is not None:
            words, open_tail = nxt
            if not words:
                return
            name = words[0]
            if name is None or name == "":
                raise _Uncertain("dynamic command name")
            self.record(
                SimpleCommand(
                    words,
                    open_tail,
                    chdir=chdir,
                    chain=self.chain,
                    direct=self.direct,
                    globs=self._globs_of(words),
                )
            )
            self.direct = False
            handler = _handler((name.rsplit("/", 1)[-1] or name) if "/" in name else name)
            if handler is None:
                return
            # A wrapper that changes directory for what it runs says so here (env -C ...).
            self.chdir, self.chdir_step = chdir, ()
            at = len(self.commands) - 1
            try:
                nxt = handler(self, words, open_tail)
                chdir += self.chdir_step
                if nxt is not None and 0 < len(nxt[0]) < len(words):
                    inner = nxt[0]
                    if words[len(words) - len(inner) :] == inner:
                        listed = self.commands[at]
                        self.commands[at] = msgspec.structs.replace(
                            listed, runs_from=len(words) - len(inner)
                        )
            except _TooMany:
                raise
            except _Foreign as exc:
                self.foreign.append(f"{name}: {exc}")
                return
            except _Uncertain as exc:
                self.doubts.append(f"{name}: {exc}")
                return

    def script(self, text: str) -> None:
        """A command string run by a shell: its commands, or uncertain."""
        if self.depth >= MAX_DEPTH:
            raise _Uncertain("shell -c nested too deep")
        words = _read_words(text, self.depth + 1)
        if words.error:
            raise _Uncertain(words.error)
        if len(self.commands) + len(words.commands) > MAX_COMMANDS:
            raise _TooMany("too many commands")
        base = len(self.commands)
        self.commands.extend(words.commands)
        self.dynamic.extend(words.dynamic)
        self.other_words.extend(words.other_words)
        self.written.extend((word, base + at) for word, at in words.written)
        self.doubts.extend(words.doubts)
        self.foreign.extend(words.foreign)
        self.assignments.extend(words.assignments)
        self.env_doubts.extend(words.env_doubts)
        self.functions.extend(words.functions)

    def joined(self, words: tuple[Word, ...], what: str) -> None:
        """Words a program joins with spaces and hands to a shell (``ssh host cmd...``)."""
        if any(w is None for w in words):
            raise _Uncertain(f"dynamic {what}")
        self.script(" ".join(w for w in words if w is not None))


_Handler = Callable[[_Walker, tuple[Word, ...], bool], _Next]


def _static(words: tuple[Word, ...], i: int, what: str) -> str:
    """``words[i]``, which must exist and be static (else the program's parse is unsure)."""
    if i >= len(words):
        raise _Uncertain(f"{what} without its value")
    word = words[i]
    if word is None:
        raise _Uncertain(f"dynamic {what}")
    return word


def _no_dynamic(words: tuple[Word, ...], what: str) -> tuple[str, ...]:
    """All of ``words``: a dynamic one could be an option that runs a command."""
    out: list[str] = []
    for w in words:
        if w is None:
            raise _Uncertain(
                f"dynamic argument to {what} (it could be an option running a command)"
            )
        out.append(w)
    return tuple(out)


# shells


#: Programs of :data:`OPAQUE` whose code is not shell (REPLs, editors, database shells): what
#: they run is :class:`_Foreign`. The rest (``eval``, ``trap``, other shells, ``tmux``,
#: ``at``, remote runners...) run shell code we cannot see.
_OPAQUE_FOREIGN: Final = _names(
    """
        irb jshell iex erl R gdb lldb dc m4 ed ex vi vim nvim vimdiff emacs emacsclient
        sqlite3 psql mysql mariadb sftp ftp lftp
    """
)


#: Database shells that, given only where to connect, read SQL from stdin (their meta-commands
#: can run programs: ``\\!`` in psql, ``system`` in mysql, ``.shell`` in sqlite3): each with
#: its options taking a value, its flags, its long options, and how many positional words
#: (database, user) it takes.
_DB_SHELLS: Final[dict[str, tuple[str, str, frozenset[str], int]]] = {
    "psql": (
        "Uhpd",
        "WwXq",
        _fs(
            "--username",
            "--host",
            "--port",
            "--dbname",
            "--no-password",
            "--password",
            "--no-psqlrc",
            "--quiet",
        ),
        2,
    ),
    "mysql": ("uhPD", "pA", _fs("--user", "--host", "--port", "--database", "--password"), 1),
    "mariadb": ("uhPD", "pA", _fs("--user", "--host", "--port", "--database", "--password"), 1),
    "sqlite3": ("", "", _fs("-readonly", "-header", "-column", "-box", "-table", "-json"), 1),
}


def _connects_only(base: str, words: tuple[Word, ...]) -> bool:
    """Whether a database shell's words only say where to connect (it then reads stdin)."""
    value, flags, long, positional = _DB_SHELLS[base]
    i, seen = 1, 0
    while i < len(words):
        w = words[i]
        if w is None:
            return False
        if w.startswith("-") and (w.partition("=")[0] in long):
            i += 1
            continue
        if w.startswith("-") and not w.startswith("--") and len(w) > 1:
            if w[1] in value:
                i += 1 if len(w) > 2 else 2
                continue
            if w[1] == "p" and "p" in flags:  # -p prompts; -pSECRET is the password itself
                i += 1
                continue
            if set(w[1:]) <= set(flags):
                i += 1
                continue
            return False
        if w.startswith("-"):
            return False
        seen += 1
        if seen > positional:
            return False
        i += 1
    return True


def _opaque(walker: _Walker, words: tuple[Word, ...], open_tail: bool) -> _Next:
    base = posixpath.basename(words[0] or "") or str(words[0])
    if base in _DB_SHELLS and not open_tail and _connects_only(base, words):
        walker.stdin(f"{base} reads commands from stdin")
        return None
    if base == "eval" and len(words) > 1 and None not in words and not open_tail:
        walker.joined(words[1:], "eval string")  # `eval "rm -rf /"`: read as the shell would
        return None
    why = f"{base} runs code we cannot see"
    if base in _OPAQUE_FOREIGN:
        raise _Foreign(why)
    if base in ("source", ".") and len(words) == 1 and not open_tail:
        return None  # bash refuses `.` without a file: it runs nothing
    if base in ("source", ".") and len(words) > 1 and None not in words[1:]:
        raise _Foreign(why)  # a file of shell code: read like `bash x.sh`, i.e. not followed
    raise _Uncertain(why)


def _foreign(handler: _Handler) -> _Handler:
    """``handler``, its doubts being about code that is not shell (:class:`_Foreign`)."""

    def wrapped(walker: _Walker, words: tuple[Word, ...], open_tail: bool) -> _Next:
        try:
            return handler(walker, words, open_tail)
        except _TooMany:
            raise
        except _Uncertain as exc:
            if isinstance(exc, _Foreign):
                raise
            raise _Foreign(str(exc)) from None

    return wrapped


class CodeSource(msgspec.Struct, frozen=True, gc=False):
    """Where a shell, an interpreter or ``source`` takes the code it runs from
    (:func:`code_source`): the one reading of their options, for matching (which follows a
    ``-c`` string and treats the rest as uncertain or as a program) and for trust (which
    hashes the file and what its language loads beside it)."""

    #: ``file``: a script file (``value``); ``module``: a module by name (``python -m``);
    #: ``string``: a shell's ``-c`` string (``value``); ``call``: code in another language
    #: given in the call; ``stdin``: code read from stdin; ``none``: nothing to run;
    #: ``dynamic``: an option or name known only at run time (``why`` says which).
    kind: Literal["file", "module", "string", "call", "stdin", "none", "dynamic"]
    value: str = ""
    #: For ``call`` and ``stdin``: what it is, in words.
    why: str = ""
    #: The single-letter options seen before the code (``python -I`` -> ``{"I"}``).
    flags: frozenset[str] = frozenset()
    #: Words after the code (a script's or ``-c`` string's arguments).
    rest: tuple[Word, ...] = ()


def _shell_source(words: tuple[Word, ...]) -> CodeSource:
    """A shell's code: its ``-c`` string, a script file, or stdin. Raises :class:`_Uncertain`
    for a dynamic option, ``-c`` string or script name."""
    has_c = reads_stdin = False
    flags: set[str] = set()
    i = 1
    while i < len(words):
        w = words[i]
        if w is None:
            raise _Uncertain("dynamic shell -c string" if has_c else "dynamic shell option")
        if w == "--":
            i += 1
            break
        if w in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 2
            continue
        if w.startswith("--"):
            i += 1
            continue
        if len(w) > 1 and w[0] in "-+":
            has_c = has_c or "c" in w[1:]
            reads_stdin = reads_stdin or "s" in w[1:]
            flags.update(w[1:])
            i += 1
            continue
        break
    frozen = frozenset(flags)
    if i >= len(words):
        if not has_c:
            return CodeSource("stdin", why="shell reads commands from stdin", flags=frozen)
        return CodeSource("none", flags=frozen)
    script = words[i]
    if script is None:
        raise _Uncertain("dynamic shell -c string" if has_c else "dynamic shell script")
    if not has_c and (reads_stdin or _stdin_path(script)):
        return CodeSource("stdin", why="shell reads commands from stdin", flags=frozen)
    kind: Literal["file", "string"] = "string" if has_c else "file"
    return CodeSource(kind, script, flags=frozen, rest=words[i + 1 :])


def _shell(walker: _Walker, words: tuple[Word, ...], open_tail: bool) -> _Next:
    source = _shell_source(words)
    if source.kind == "stdin":
        walker.stdin(source.why)
        return None
    if source.kind == "none" and "c" in source.flags and open_tail:
        raise _Uncertain("dynamic shell -c string (xargs gives it at run time)")
    if source.kind == "string":
        walker.script(source.value)
    return None  # `bash script.sh`: a program like any other


def _wrapper(name: str, spec: _WrapperSpec) -> _Handler:
    def handler(walker: _Walker, words: tuple[Word, ...], open_tail: bool) -> _Next:
        rest, replacing, via_shell, chdir = _unwrap(spec, words)
        walker.chdir_step = chdir
        if not rest:
            if via_shell or spec.bare_shell:
                walker.stdin(f"{name} starts a shell reading commands from stdin")
            return None
        if via_shell:
            walker.joined(rest, f"{name} shell command")
        if replacing:
            rest = (rest[0], *(None for _ in rest[1:]))
        return rest, open_tail or spec.open_tail

    return handler


def _unwrap(
    spec: _WrapperSpec, words: tuple[Word, ...]
) -> tuple[tuple[Word, ...], bool, bool, tuple[Word, ...]]:
    """The command a wrapper runs (empty: none), whether its arguments get replaced at run
    time, whether it hands the command line to a shell, and the directories it changes to
    for it (``sudo -D dir``)."""
    i, n = 1, len(words)
    replacing = via_shell = False
    chdir: list[Word] = []
    while i < n:
        w = words[i]
        if w is None:
            raise _Uncertain("dynamic wrapper option")
        if w == "--":
            i += 1
            break
        if spec.assignments and "=" in w and not w.startswith("-"):
            _check_env_word(w)
            i += 1
            continue
        if spec.replacing and (w.partition("=")[0] in spec.replacing or w[:2] in spec.replacing):
            replacing = True
        if w.startswith("--"):
            name, eq, value = w.partition("=")
            if name in spec.chdir_long:
                chdir.append(value if eq else (words[i + 1] if i + 1 < n else None))
            if name in spec.long_arg:
                i += 1 if eq else 2
            elif name in spec.long_flags:
                i += 1
            else:
                raise _Uncertain(f"unknown wrapper option {name}")
            via_shell = via_shell or name in spec.shell_long
            continue
        if len(w) > 1 and w[0] == "-":
            if spec.numeric and w[1:].isdigit():
                i += 1
                continue
            consumed, shell = _short_cluster(spec, w)
            for j, c in enumerate(w[1:], 1):
                if c in spec.chdir_short:
                    attached = w[j + 1 :]
                    chdir.append(attached or (words[i + 1] if i + 1 < n else None))
                    break
                if c in spec.short_arg:
                    break
            via_shell = via_shell or shell
            i += consumed
            continue
        break
    i += spec.positional
    return (words[i:] if i < n else ()), replacing, via_shell, tuple(chdir)


def _short_cluster(spec: _WrapperSpec, word: str) -> tuple[int, bool]:
    """How many words a cluster like ``-nu root`` consumes (1 or 2), and whether it holds a
    shell option."""
    shell = False
    for j in range(1, len(word)):
        c = word[j]
        shell = shell or c in spec.shell_short
        if c in spec.short_arg:
            return (1 if j + 1 < len(word) else 2), shell
        if c in spec.short_opt_attached:
            return 1, shell
        if c not in spec.short_flags:
            raise _Uncertain(f"unknown wrapper option -{c}")
    return 1, shell


_ENV_LONG_ARG: Final = _fs("--unset", "--chdir", "--argv0")
_ENV_LONG_FLAGS: Final = _fs(
    "--ignore-environment",
    "--null",
    "--debug",
    "--block-signal",
    "--default-signal",
    "--ignore-signal",
    "--list-signal-handling",
)


def _env(walker: _Walker, words: tuple[Word, ...], open_tail: bool) -> _Next:
    """``env [-i] [-u X] [NAME=v]... [-S 'cmd args'] cmd...`` (any word with ``=`` assigns)."""
    i, n = 1, len(words)
    while i < n:
        w = words[i]
        if w is None:
            raise _Uncertain("dynamic wrapper option")
        if w == "--":
            i += 1
            break
        if w == "-":
            i += 1
            continue
        if "=" in w and not w.startswith("-"):
            _check_env_word(w)
            i += 1
            continue
        if w.startswith("--"):
            name, eq, value = w.partition("=")
            if name == "--split-string":
                if not eq:
                    value = _static(words, i + 1, "env --split-string")
                return _env_split(value, words[i + (1 if eq else 2) :], open_tail)
            if name == "--chdir":
                walker.chdir_step += (value if eq else (words[i + 1] if i + 1 < n else None),)
            if name in _ENV_LONG_ARG:
                i += 1 if eq else 2
            elif name in _ENV_LONG_FLAGS:
                i += 1
            else:
                raise _Uncertain(f"unknown wrapper option {name}")
            continue
        if len(w) > 1 and w[0] == "-":
            consumed = 1
            for j in range(1, len(w)):
                c = w[j]
                if c == "S":
                    if j + 1 < len(w):
                        return _env_split(w[j + 1 :], words[i + 1 :], open_tail)
                    return _env_split(_static(words, i + 1, "env -S"), words[i + 2 :], open_tail)
                if c in "uCa":
                    consumed = 1 if j + 1 < len(w) else 2
                    if c == "C":
                        attached = w[j + 1 :]
                        walker.chdir_step += (attached or (words[i + 1] if i + 1 < n else None),)
                    break
                if c not in "i0v":
                    raise _Uncertain(f"unknown wrapper option -{c}")
            i += consumed
            continue
        break
    return (words[i:], open_tail) if i < n else None


def _env_split(value: str, rest: tuple[Word, ...], open_tail: bool) -> _Next:
    """``env -S 'a b'``: env splits the string itself (quotes, no expansions we follow)."""
    if any(c in value for c in "$\\#"):
        raise _Uncertain("env -S string with escapes, variables or comments")
    try:
        parts = shlex.split(value)
    except ValueError:
        raise _Uncertain("env -S string does not split") from None
    return ("env", *parts, *rest), open_tail


def _find(walker: _Walker, words: tuple[Word, ...], open_tail: bool) -> _Next:
    i = 1
    while i < len(words):
        w = words[i]
        if w is None:
            raise _Uncertain("dynamic argument to find (it could be -exec)")
        if w in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(words) and words[j] not in (";", "+"):
                j += 1
            # `{}` is a file name at run time: dynamic.
            inner = tuple(None if x is None or "{}" in x else x for x in words[i + 1 : j])
            walker.add(inner, open_tail=j < len(words) and words[j] == "+")
            i = j
        i += 1
    return None


def _fd(walker: _Walker, words: tuple[Word, ...], open_tail: bool) -> _Next:
    """``fd pattern -x cmd {}`` / ``-X`` / ``--exec[-batch]``: the rest up to ``;``."""
    for i, w in enumerate(words[1:], 1):
        if w is None:
            raise _Uncertain("dynamic argument to fd (it could be -x)")
        if w in ("-x", "--exec", "-X", "--exec-batch"):
            j = i + 1
            while j < len(words) and words[j] != ";":
                j += 1
            inner = tuple(None if x is None or "{" in x else x for x in words[i + 1 : j])
            walker.add(inner, open_tail=True)
            return None
    return None


# command strings


def _ssh(walker: _Walker, words: tuple[Word, ...], open_tail: bool) -> _Next:
    """``ssh [opts] host [opts] cmd...``: OpenSSH re-reads options after the host."""
    n = len(words)
    i = 1
    host_seen = terminated = no_command = subsystem = False
    while i < n:
        w = _static(words, i, "ssh argument")
        if not terminated and w == "--":
            terminated = True
            i += 1
            continue
        if not terminated and len(w) > 1 and w[0] == "-":
            consumed = 1
            for j in range(1, len(w)):
                c = w[j]
                if c in _SSH_ARG:
                    if j + 1 < len(w):
                        value = w[j + 1 :]
                    else:
                        value = _static(words, i + 1, f"ssh -{c}")
                        consumed = 2
                    if c == "o" and re.split(r"[=\s]", value, maxsplit=1)[0].lower() in (
                        _SSH_COMMAND_KEYS
                    ):
                        raise _Uncertain("ssh -o ...Command runs a command")
                    if c == "F" and _stdin_path(value):
                        raise _Uncertain("ssh reads its config from stdin")
                    no_command = no_command or c == "W"
                    break
                if c not in _SSH_FLAGS:
                    raise _Uncertain(f"unknown ssh option -{c}")
                no_command = no_command or c in "NGV"
                subsystem = subsystem or c == "s"
            i += consumed
            continue
        if not host_seen:
            host_seen = True
            i += 1
            continue
        break
    if not host_seen:
        return None
    command = words[i:]
    if not command:
        if no_command:
            return None
        walker.stdin("ssh without a command runs a remote shell reading stdin")
        return None
    if subsystem:
        return None
    if open_tail:
        raise _Uncertain("ssh remote command gets arguments at run time")
    walker.joined(command, "ssh remote command")
    return None


_SU_VALUE: Final = "cgGsw"
_SU_FLAGS: Final = "flmpPhV"
_SU_LONG_VALUE: Final = _fs(
    "--command",
    "--session-command",
    "--group",
    "--supp-group",
    "--shell",
    "--whitelist-environment",
    "--user",
)
_SU_LONG_FLAGS: Final = _fs(
    "--fast", "--login", "--preserve-environment", "--pty", "--help", "--version"
)


def _su(walker: _Walker, words: tuple[Word, ...], open_tail: bool) -> _Next:
    """``su [opts] [-] [user [shell args...]]`` (options may come anywhere, GNU getopt), and
    ``runuser``, which also has ``-u user [--] cmd...`` (no shell)."""
    n = len(words)
    commands: list[str] = []
    positional: list[Word] = []
    shell = "sh"
    user_mode = False
    i = 1
    while i < n:
        w = words[i]
        if w is None:
            raise _Uncertain("dynamic su argument")
        if w == "--":
            positional.extend(words[i + 1 :])
            break
        if w == "-":
            i += 1
            continue
        if w.startswith("--"):
            name, eq, value = w.partition("=")
            if name in _SU_LONG_VALUE:
                if not eq:
                    value = _static(words, i + 1, f"su {name}")
                i += 1 if eq else 2
                if name in ("--command", "--session-command"):
                    commands.append(value)
                elif name == "--shell":
                    shell = value
                elif name == "--user":
                    user_mode = True
            elif name in _SU_LONG_FLAGS:
                i += 1
            else:
                raise _Uncertain(f"unknown su option {name}")
            continue
        if len(w) > 1 and w[0] == "-":
            consumed = 1
            for j in range(1, len(w)):
                c = w[j]
                if c in _SU_VALUE or c == "u":
                    if j + 1 < len(w):
                        value = w[j + 1 :]
                    else:
                        value = _static(words, i + 1, f"su -{c}")
                        consumed = 2
                    if c == "c":
                        commands.append(value)
                    elif c == "s":
                        shell = value
                    elif c == "u":
                        user_mode = True
                    break
                if c not in _SU_FLAGS:
                    raise _Uncertain(f"unknown su option -{c}")
            i += consumed
            continue
        positional.append(w)
        i += 1
    if user_mode:  # runuser -u user cmd args: argv, no shell
        if commands:
            for command in commands:
                walker.script(command)
            return None
        return (tuple(positional), open_tail) if positional else None
    if (posixpath.basename(shell) or shell) not in _SHELLS:
        raise _Uncertain(f"su runs {shell}, not a shell we read")
    for command in commands:
        walker.script(command)
    shell_args = tuple(positional[1:])  # after the user name: arguments to the shell
    if shell_args:
        _shell(walker, ("sh", *shell_args), open_tail)
    elif not commands:
        walker.stdin("su starts a shell reading commands from stdin")
    return None


def _sg(walker: _Walker, words: tuple[Word, ...], open_tail: bool) -> _Next:
    """``sg [-] group [-c] 'cmd'``: the command goes to /bin/sh -c."""
    rest = list(words[1:])
    if rest and rest[0] == "-":
        rest.pop(0)
    if not rest or rest[0] is None:
        raise _Uncertain("dynamic sg group" if rest else "sg without a group")
    rest.pop(0)
    if rest and rest[0] == "-c":
        rest.pop(0)
    if not rest:
        walker.stdin("sg starts a shell reading commands from stdin")
        return None
    walker.joined(tuple(rest), "sg command")
    return None


_SCRIPT_LONG_VALUE: Final = _fs(
    "--log-io",
    "--log-in",
    "--log-out",
    "--log-timing",
    "--logging-format",
    "--echo",
    "--output-limit",
)


def _script_cmd(walker: _Walker, words: tuple[Word, ...], open_tail: bool) -> _Next:
    """util-linux ``script [opts] [file]``: ``-c cmd`` runs through the shell; else a shell
    reads stdin."""
    commands: list[str] = []
    i, n = 1, len(words)
    while i < n:
        w = _static(words, i, "script argument")
        if w == "--":
            break
        if w.startswith("--"):
            name, eq, value = w.partition("=")
            if name == "--command":
                commands.append(value if eq else _static(words, i + 1, "script --command"))
                i += 1 if eq else 2
            elif not eq and name in _SCRIPT_LONG_VALUE:
                i += 2
            else:
                i += 1
            continue
        if len(w) > 1 and w[0] == "-":
            consumed = 1
            for j in range(1, len(w)):
                c = w[j]
                if c in "cBEIOTom":
                    if j + 1 < len(w):
                        value = w[j + 1 :]
                    else:
                        value = _static(words, i + 1, f"script -{c}")
                        consumed = 2
                    if c == "c":
                        commands.append(value)
                    break
                if c == "t":
                    break
                if c not in "aefqhV":
                    raise _Uncertain(f"unknown script option -{c}")
            i += consumed
            continue
        i += 1
    if not commands:
        walker.stdin("script starts a shell reading commands from stdin")
        return None
    for command in commands:
        walker.script(command)
    return None


_WATCH_LONG_FLAGS: Final = _names(
    """
        --beep --color --no-color --differences --errexit --chgexit --precise --no-rerun --no-
        title --no-wrap --help --version
    """
)


def _watch(walker: _Walker, words: tuple[Word, ...], open_tail: bool) -> _Next:
    """``watch [opts] cmd...``: joined and run by ``sh -c``, or argv with ``-x``."""
    i, n = 1, len(words)
    exec_mode = False
    while i < n:
        w = _static(words, i, "watch option")
        if w == "--":
            i += 1
            break
        if w.startswith("--"):
            name, eq, _ = w.partition("=")
            if name in ("--interval", "--equexit", "--shotsfile"):
                i += 1 if eq else 2
            elif name == "--exec":
                exec_mode = True
                i += 1
            elif name in _WATCH_LONG_FLAGS:
                i += 1
            else:
                raise _Uncertain(f"unknown watch option {name}")
            continue
        if len(w) > 1 and w[0] == "-":
            consumed = 1
            for j in range(1, len(w)):
                c = w[j]
                if c in "nqs":
                    consumed = 1 if j + 1 < len(w) else 2
                    break
                if c == "d":
                    break
                if c not in "bcCeghprtwvx":
                    raise _Uncertain(f"unknown watch option -{c}")
                exec_mode = exec_mode or c == "x"
            i += consumed
            continue
        break
    rest = words[i:]
    if not rest:
        return None
    if exec_mode:
        return rest, open_tail
    walker.joined(rest, "watch command")
    return None


_PARALLEL_VALUE: Final = "jndIEaC"
_PARALLEL_FLAGS: Final = "kqvumX0tr"
_PARALLEL_LONG_VALUE: Final = _names(
    """
        --jobs --max-args --delimiter --arg-file --colsep --timeout --retries --joblog --results
        --halt --delay --tmpdir --load --memfree --tagstring
    """
)
_PARALLEL_LONG_FLAGS: Final = _names(
    """
        --keep-order --quote --verbose --ungroup --line-buffer --lb --tag --bar --progress --eta
        --dry-run --shuf --will-cite --no-notice --silent --null --xargs --group --no-run-if-
        empty
    """
)
_PARALLEL_SEPARATORS: Final = _fs(":::", "::::", ":::+", "::::+")
_PARALLEL_REPLACEMENT: Final = re.compile(r"\{[^{}\s]*\}")


def _parallel(walker: _Walker, words: tuple[Word, ...], open_tail: bool) -> _Next:
    """GNU ``parallel [opts] 'cmd {}' ::: args``: the template runs in a shell, the arguments
    (quoted by parallel) replace ``{...}`` or are appended."""
    i, n = 1, len(words)
    replacements: list[str] = []
    while i < n:
        w = _static(words, i, "parallel option")
        if w in _PARALLEL_SEPARATORS:
            break
        if w.startswith("--"):
            name, eq, value = w.partition("=")
            if name in _PARALLEL_LONG_VALUE:
                i += 1 if eq else 2
            elif name in _PARALLEL_LONG_FLAGS:
                i += 1
            else:
                raise _Uncertain(f"unknown parallel option {name}")
            continue
        if len(w) > 1 and w[0] == "-":
            consumed = 1
            for j in range(1, len(w)):
                c = w[j]
                if c in _PARALLEL_VALUE:
                    if j + 1 < len(w):
                        value = w[j + 1 :]
                    else:
                        value = _static(words, i + 1, f"parallel -{c}")
                        consumed = 2
                    if c == "I":
                        replacements.append(value)
                    break
                if c not in _PARALLEL_FLAGS:
                    raise _Uncertain(f"unknown parallel option -{c}")
            i += consumed
            continue
        break
    template: list[Word] = []
    while i < n and words[i] not in _PARALLEL_SEPARATORS:
        template.append(words[i])
        i += 1
    if not template:
        raise _Uncertain("parallel runs its arguments as commands")
    text = " ".join(_no_dynamic(tuple(template), "parallel"))
    if "{=" in text:
        raise _Uncertain("parallel {= perl expression =}")
    for r in replacements:
        text = text.replace(r, " $_P ")
    text, count = _PARALLEL_REPLACEMENT.subn("$_P", text)
    if not count and not replacements:
        text += " $_P"
    walker.script(text)
    return None


def _flock(walker: _Walker, words: tuple[Word, ...], open_tail: bool) -> _Next:
    """``flock [opts] file cmd...`` / ``flock [opts] file -c 'cmd'`` / ``flock [opts] fd``."""
    i, n = 1, len(words)
    while i < n:
        w = _static(words, i, "flock argument")
        if w == "--":
            i += 1
            break
        if w.startswith("--"):
            name, eq, _ = w.partition("=")
            if name in ("--timeout", "--wait", "--conflict-exit-code"):
                i += 1 if eq else 2
            elif name in (
                "--shared",
                "--exclusive",
                "--unlock",
                "--nonblock",
                "--nb",
                "--close",
                "--no-fork",
                "--verbose",
            ):
                i += 1
            else:
                raise _Uncertain(f"unknown flock option {name}")
            continue
        if len(w) > 1 and w[0] == "-":
            consumed = 1
            for j in range(1, len(w)):
                c = w[j]
                if c in "wE":
                    consumed = 1 if j + 1 < len(w) else 2
                    break
                if c not in "sxeunoFhV":
                    raise _Uncertain(f"unknown flock option -{c}")
            i += consumed
            continue
        break
    if i >= n:
        return None
    _static(words, i, "flock file")
    rest = words[i + 1 :]
    if not rest:
        return None
    if rest[0] in ("-c", "--command"):
        walker.script(_static(rest, 1, "flock -c command"))
        return None
    return rest, open_tail


# runners


def _runner(walker: _Walker, words: tuple[Word, ...], open_tail: bool, start: int = 1) -> _Next:
    """Any suffix of the arguments may be the command; any argument may be a command line."""
    for i in range(start, len(words)):
        w = words[i]
        if w is None:
            raise _Uncertain("dynamic argument to a program that runs commands")
        if w.startswith("-"):
            value = w.partition("=")[2]
            if value and _SCRIPTISH.search(value):
                walker.script(value)
            continue
        if _SCRIPTISH.search(w):
            walker.script(w)
        walker.add(words[i:], open_tail=open_tail)
    return None


def _subcommand_runner(subcommands: frozenset[str]) -> _Handler:
    def handler(walker: _Walker, words: tuple[Word, ...], open_tail: bool) -> _Next:
        for i, w in enumerate(words[1:], 1):
            if w is None:
                raise _Uncertain("dynamic argument before a runner's subcommand")
            if w in subcommands:
                return _runner(walker, words, open_tail, start=i + 1)
        return None

    return handler


def _nix_shell(walker: _Walker, words: tuple[Word, ...], open_tail: bool) -> _Next:
    if not any(w in ("--run", "--command") or w is None for w in words):
        walker.stdin("nix-shell starts a shell reading commands from stdin")
        return None
    return _runner(walker, words, open_tail)


def _ld_so(walker: _Walker, words: tuple[Word, ...], open_tail: bool) -> _Next:
    return _runner(walker, words, open_tail)


# other languages


def _interpreter_source(name: str, spec: _Interp, words: tuple[Word, ...]) -> CodeSource:
    """An interpreter's code: a script file, a module, code given in the call or stdin.
    Raises :class:`_Uncertain` for a dynamic option or script name."""
    i, n = 1, len(words)
    cautious = False
    flags: set[str] = set()

    def call(why: str) -> CodeSource:
        return CodeSource("call", why=why, flags=frozenset(flags))

    while i < n:
        w = _static(words, i, f"{name} argument")
        if w == "--":
            i += 1
            break
        if w == "-":
            return CodeSource("stdin", why=f"{name} reads code from stdin", flags=frozenset(flags))
        if w.startswith("--"):
            opt, eq, _ = w.partition("=")
            if opt in spec.code_long:
                return call(f"{name} {opt} runs code given in the call")
            if opt in spec.exits_long:
                return CodeSource("none", flags=frozenset(flags))
            if opt in spec.value_long and not eq:
                i += 2
                continue
            cautious = cautious or not eq
            i += 1
            continue
        if len(w) > 1 and w[0] == "-":
            consumed = 1
            in_value = False
            for j in range(1, len(w)):
                c = w[j]
                if c in spec.code:
                    return call(f"{name} -{c} runs code given in the call")
                if in_value:
                    continue
                if c in spec.exits:
                    return CodeSource("none", flags=frozenset(flags))
                if c in spec.module:
                    module = w[j + 1 :] or _static(words, i + 1, f"{name} -{c}")
                    if module in spec.code_modules:
                        return call(f"{name} -{c} {module} runs code given in the call")
                    rest = words[i + (1 if w[j + 1 :] else 2) :]
                    return CodeSource("module", module, flags=frozenset(flags), rest=rest)
                if c in spec.value:
                    consumed = 1 if j + 1 < len(w) else 2
                    break
                if c in spec.optional:
                    in_value = True
                    continue
                flags.add(c)
                if c not in spec.flags:
                    cautious = True
            i += consumed
            continue
        break
    if i >= n:
        return CodeSource("stdin", why=f"{name} reads code from stdin", flags=frozenset(flags))
    script = _static(words, i, f"{name} script")
    if _stdin_path(script):
        return CodeSource("stdin", why=f"{name} reads code from {script}", flags=frozenset(flags))
    if cautious:  # an option we do not know may have taken the "script" as its value
        for arg in words[i:]:
            if arg is None:
                raise _Uncertain(f"dynamic {name} argument after an unknown option")
            if arg.partition("=")[0] in spec.code_long or (
                len(arg) > 1 and arg[0] == "-" and arg[1] != "-" and set(arg[1:]) & set(spec.code)
            ):
                return call(f"{name} may run code given in the call")
    return CodeSource("file", script, flags=frozenset(flags), rest=words[i + 1 :])


def _interpreter(name: str, spec: _Interp) -> _Handler:
    def handler(walker: _Walker, words: tuple[Word, ...], open_tail: bool) -> _Next:
        source = _interpreter_source(name, spec, words)
        if source.kind == "stdin":
            walker.stdin(source.why)
        elif source.kind == "call":
            raise _Uncertain(source.why)
        return None  # `python x.py`, `python -m x`: a program like any other

    return handler


def _deno(walker: _Walker, words: tuple[Word, ...], open_tail: bool) -> _Next:
    rest = _no_dynamic(words[1:], "deno")
    if not rest or rest[0] in ("eval", "repl") or any(_stdin_path(w) for w in rest):
        raise _Uncertain("deno runs code given in the call or from stdin")
    return None


_AWK_VALUE: Final = "Fv"
_AWK_FILES: Final = "fEi"
_AWK_FLAGS: Final = "bcCdDghLMnNoOpPrstV"


def _awk(walker: _Walker, words: tuple[Word, ...], open_tail: bool) -> _Next:
    """awk's program text (first non-option, or ``-e``/``--source``) may start processes."""
    i, n = 1, len(words)
    texts: list[str] = []
    files = sandbox = cautious = False
    while i < n:
        w = _static(words, i, "awk option or program")
        if w == "--":
            i += 1
            break
        if w.startswith("--"):
            name, eq, value = w.partition("=")
            if name == "--load":
                raise _Uncertain("awk --load loads code")
            if name == "--sandbox":
                sandbox = True
            elif name in ("--source", "--file", "--exec", "--include", "--field-separator"):
                if not eq:
                    value = _static(words, i + 1, f"awk {name}")
                    i += 1
                if name == "--source":
                    texts.append(value)
                elif name != "--field-separator":
                    files = True
            elif name == "--assign" and not eq:
                i += 1
            elif not eq:
                cautious = True
            i += 1
            continue
        if len(w) > 1 and w[0] == "-":
            c = w[1]
            value = w[2:]
            if c in _AWK_VALUE or c in _AWK_FILES or c == "e":
                if not value:
                    value = _static(words, i + 1, f"awk -{c}")
                    i += 1
                if c == "e":
                    texts.append(value)
                elif c in _AWK_FILES:
                    if _stdin_path(value):
                        raise _Uncertain("awk reads its program from stdin")
                    files = True
            elif c == "l":
                raise _Uncertain("awk -l loads code")
            elif c == "W":  # mawk -W exec file / -W interactive...
                if not value:
                    value = _static(words, i + 1, "awk -W")
                    i += 1
                if value.startswith("e"):
                    raise _Uncertain("mawk -W exec reads its program from a file")
            elif c == "S":
                sandbox = True
            elif c not in _AWK_FLAGS:
                cautious = True
            i += 1
            continue
        break
    if not texts and not files:
        if i >= n:
            if open_tail:
                raise _Uncertain("awk program comes at run time")
            return None
        texts.append(_static(words, i, "awk program"))
    if sandbox:
        return None
    if cautious:
        texts.extend(_no_dynamic(words[i:], "awk"))
    for text in texts:
        if _AWK_EXEC.search(text):
            raise _Uncertain("awk program may run commands (system, |, @)")
    return None


def _sed(walker: _Walker, words: tuple[Word, ...], open_tail: bool) -> _Next:
    """GNU sed's ``e`` command and ``s///e`` flag run the pattern space as a command."""
    args = _no_dynamic(words[1:], "sed")  # GNU getopt permutes: an option may come anywhere
    scripts: list[str] = []
    positional: list[str] = []
    i, n = 0, len(args)
    while i < n:
        w = args[i]
        if w == "--":
            positional.extend(args[i + 1 :])
            break
        if w.startswith("--"):
            name, eq, value = w.partition("=")
            if name == "--sandbox":
                return None
            if name in ("--expression", "--file", "--line-length"):
                if not eq:
                    value = args[i + 1] if i + 1 < n else ""
                    i += 1
                if name == "--expression":
                    scripts.append(value)
                elif name == "--file" and _stdin_path(value):
                    raise _Uncertain("sed reads its program from stdin")
            i += 1
            continue
        if len(w) > 1 and w[0] == "-":
            for j in range(1, len(w)):
                c = w[j]
                if c in "efl":
                    value = w[j + 1 :]
                    if not value:
                        value = args[i + 1] if i + 1 < n else ""
                        i += 1
                    if c == "e":
                        scripts.append(value)
                    elif c == "f" and _stdin_path(value):
                        raise _Uncertain("sed reads its program from stdin")
                    break
                if c == "i":
                    break
            i += 1
            continue
        positional.append(w)
        i += 1
    if not scripts and positional:
        scripts.append(positional[0])
    for text in scripts:
        if _SED_EXEC.search(text):
            raise _Uncertain("sed program may hold an e command or s///e flag")
    return None


def _make(walker: _Walker, words: tuple[Word, ...], open_tail: bool) -> _Next:
    args = _no_dynamic(words[1:], "make")
    for i, w in enumerate(args):
        name, eq, value = w.partition("=")
        if name == "--eval":
            raise _Uncertain("make --eval runs code given in the call")
        if name in ("--file", "--makefile"):
            target = value if eq else (args[i + 1] if i + 1 < len(args) else "")
            if _stdin_path(target):
                raise _Uncertain("make reads its makefile from stdin")
            continue
        if w.startswith("--"):
            continue
        if len(w) > 1 and w[0] == "-":
            for j in range(1, len(w)):
                c = w[j]
                if c == "E":
                    raise _Uncertain("make -E runs code given in the call")
                if c == "f":
                    target = w[j + 1 :] or (args[i + 1] if i + 1 < len(args) else "")
                    if _stdin_path(target):
                        raise _Uncertain("make reads its makefile from stdin")
                    break
                if c in "CIjloW":
                    break
            continue
        if eq and _SCRIPTISH.search(value):
            raise _Uncertain("make variable override may put a command in a recipe")
    return None


_TAR_EXEC_LONG: Final = (
    "--to-command",
    "--checkpoint-action",
    "--use-compress-program",
    "--rsh-command",
    "--rmt-command",
    "--info-script",
    "--new-volume-script",
)


def _tar(walker: _Walker, words: tuple[Word, ...], open_tail: bool) -> _Next:
    args = _no_dynamic(words[1:], "tar")
    for i, w in enumerate(args):
        if w.startswith(_TAR_EXEC_LONG):
            raise _Uncertain("tar option runs a command")
        old_style = i == 0 and w.isalpha()
        if (old_style or (len(w) > 1 and w[0] == "-" and w[1] != "-")) and set(w) & set("IF"):
            raise _Uncertain("tar -I/-F runs a command")
    return None


def _danger_options(
    what: str,
    short: str = "",
    long: tuple[str, ...] = (),
    *,
    plus: bool = False,
) -> _Handler:
    """A program whose short option letters ``short`` or long options ``long`` run commands."""

    def handler(walker: _Walker, words: tuple[Word, ...], open_tail: bool) -> _Next:
        for w in words[1:]:
            if w is None:
                raise _Uncertain(
                    f"dynamic argument to {what} (it could be an option running a command)"
                )
            if long and w.startswith(long):
                raise _Uncertain(f"{what} {w.partition('=')[0]} runs a command")
            if short and len(w) > 1 and w[0] == "-" and w[1] != "-" and set(w[1:]) & set(short):
                raise _Uncertain(f"{what} option runs a command")
            if plus and w.startswith("+") and len(w) > 1:
                raise _Uncertain(f"{what} +command runs commands")
        return None

    return handler


def _rsync(walker: _Walker, words: tuple[Word, ...], open_tail: bool) -> _Next:
    args = _no_dynamic(words[1:], "rsync")
    for i, w in enumerate(args):
        name, eq, value = w.partition("=")
        if name == "--rsync-path":
            raise _Uncertain("rsync --rsync-path runs a remote command")
        shell_value: str | None = None
        if name == "--rsh":
            shell_value = value if eq else (args[i + 1] if i + 1 < len(args) else "")
        elif len(w) > 1 and w[0] == "-" and w[1] != "-" and "e" in w:
            rest = w[w.index("e") + 1 :]
            shell_value = rest or (args[i + 1] if i + 1 < len(args) else "")
        if shell_value is not None:
            parts = shell_value.split()
            if (
                not parts
                or posixpath.basename(parts[0]) != "ssh"
                or "command" in shell_value.lower()
                or _SHELL_META.search(shell_value)
            ):
                raise _Uncertain("rsync -e runs a command other than plain ssh")
    return None


def _scp(walker: _Walker, words: tuple[Word, ...], open_tail: bool) -> _Next:
    args = _no_dynamic(words[1:], "scp")
    for i, w in enumerate(args):
        if len(w) > 1 and w[0] == "-" and w[1] != "-":
            for j in range(1, len(w)):
                c = w[j]
                if c in "SD":
                    raise _Uncertain(f"scp -{c} runs a program")
                if c in "cFiJloPX":
                    value = w[j + 1 :] or (args[i + 1] if i + 1 < len(args) else "")
                    if c == "o" and re.split(r"[=\s]", value, maxsplit=1)[0].lower() in (
                        _SSH_COMMAND_KEYS
                    ):
                        raise _Uncertain("scp -o ...Command runs a command")
                    break
    return None


def _socat(walker: _Walker, words: tuple[Word, ...], open_tail: bool) -> _Next:
    for w in _no_dynamic(words[1:], "socat"):
        upper = w.upper()
        if "EXEC:" in upper or "SYSTEM:" in upper:
            raise _Uncertain("socat EXEC:/SYSTEM: runs a command")
    return None


def _man(walker: _Walker, words: tuple[Word, ...], open_tail: bool) -> _Next:
    for w in _no_dynamic(words[1:], "man"):
        if w.startswith(("--pager", "--html", "-P", "-H")) or (
            len(w) > 1 and w[0] == "-" and w[1] != "-" and set(w[1:]) & set("PH")
        ):
            raise _Uncertain("man -P/-H runs a command")
    return None


# git


def git_config_safe(key: str) -> bool:
    """Whether the git config ``key`` (any case) never names a command (:data:`GIT_SAFE_CONFIG`)."""
    key = key.lower()
    return key in GIT_SAFE_CONFIG or key.startswith(_GIT_SAFE_CONFIG_PREFIXES)


def _git_config_key(assignment: str, what: str) -> None:
    """``key=value`` (or ``key``) for ``-c``/``--config-env``/``git config``: a key that may
    hold a command is uncertain."""
    key = assignment.partition("=")[0].lower()
    if git_config_safe(key):
        return
    raise _Uncertain(f"{what} {key} may run a command")


def _git(walker: _Walker, words: tuple[Word, ...], open_tail: bool) -> _Next:
    """``git [global opts] <subcommand> ...``: list ``git <subcommand> ...`` too (in the
    directories its ``-C`` options name)."""
    i, n = 1, len(words)
    chdir: list[Word] = list(walker.chdir)
    while i < n:
        w = words[i]
        if w is None:
            raise _Uncertain("dynamic git option or subcommand")
        if not w.startswith("-"):
            break
        name, eq, value = w.partition("=")
        if name == "--exec-path" and eq:
            raise _Uncertain("git --exec-path=dir runs programs from that directory")
        if w in _GIT_FLAGS or (eq and name == "--list-cmds"):
            i += 1
            continue
        if name in _GIT_VALUE_OPTS and not (eq and name in ("-C", "-c")):
            if not eq:
                if i + 1 >= n:
                    return None  # git complains and exits
                value = _static(words, i + 1, f"git {name} value")
            i += 1 if eq else 2
            if name == "-C":
                chdir.append(value)
            if name == "-c":
                _git_config_key(value, "git -c")
            elif name == "--config-env":
                _git_config_key(value, "git --config-env")
            continue
        raise _Uncertain(f"unknown git option {name}")
    if i >= n:
        if open_tail:
            raise _Uncertain("git subcommand comes at run time")
        return None
    sub = words[i]
    assert sub is not None
    if sub not in GIT_COMMANDS:
        raise _Uncertain(f"git {sub}: may be an alias or a git-{sub} program")
    rest = words[i + 1 :]
    if i > 1:
        walker.commands[-1] = msgspec.structs.replace(walker.commands[-1], options_parsed=True)
        walker.record(
            SimpleCommand(("git", sub, *rest), open_tail, chdir=tuple(chdir), chain=walker.chain)
        )
    _git_subcommand(walker, sub, rest, open_tail)
    return None


def _git_subcommand(walker: _Walker, sub: str, rest: tuple[Word, ...], open_tail: bool) -> None:
    if sub in _GIT_OPAQUE:
        raise _Uncertain(f"git {sub} runs commands we cannot see")
    if sub in _GIT_EXEC_SUBCOMMANDS:
        args = _no_dynamic(rest, f"git {sub}")
        if open_tail:
            raise _Uncertain(f"git {sub} gets arguments at run time")
    else:
        args = tuple(w for w in rest if w is not None)
    if sub == "bisect":
        if args and args[0] == "run":
            walker.add(args[1:], open_tail=False)
        return
    if sub == "submodule":
        if "foreach" in args:
            after = list(args[args.index("foreach") + 1 :])
            while after and after[0] in ("--recursive", "-q", "--quiet"):
                after.pop(0)
            walker.joined(tuple(after), "git submodule foreach command")
        return
    if sub == "for-each-repo":  # git for-each-repo --config=<key> <git arguments>
        git_args: list[str] = []
        k = 0
        while k < len(args):
            if args[k] == "--config":
                k += 2
                continue
            if not (args[k].startswith("--config=") or args[k] == "--keep-going"):
                git_args.append(args[k])
            k += 1
        walker.add(("git", *git_args), open_tail=False)
        return
    if sub == "config":
        _git_config_write(args)
        return
    for k, w in enumerate(args):
        name, eq, value = w.partition("=")
        if name in _GIT_EXEC_LONG:
            if (sub, name) in (("rebase", "--exec"), ("difftool", "--extcmd")):
                walker.script(value if eq else _static(args, k + 1, f"git {sub} {name}"))
                continue
            raise _Uncertain(f"git {sub} {name} runs a command")
        if sub == "clone" and name == "--config":
            _git_config_key(
                value if eq else _static(args, k + 1, "git clone --config"), "git clone -c"
            )
        if len(w) < 2 or w[0] != "-" or w[1] == "-":
            continue
        for j in range(1, len(w)):
            c = w[j]
            attached = w[j + 1 :]
            if c == "x" and sub in ("rebase", "difftool"):
                walker.script(attached or _static(args, k + 1, f"git {sub} -x"))
                break
            if c == "O" and sub == "grep":
                raise _Uncertain("git grep -O runs a pager command")
            if c == "u" and sub in ("clone", "ls-remote"):
                raise _Uncertain(f"git {sub} -u runs a command")
            if c == "c" and sub == "clone":
                _git_config_key(attached or _static(args, k + 1, "git clone -c"), "git clone -c")
                break
            if (sub == "rebase" and c in "sXCS") or (sub == "clone" and c in "objt"):
                break
            if (sub == "difftool" and c in "t") or (sub == "grep" and c in "efABCm"):
                break


_GIT_CONFIG_VALUE_OPTS: Final = _fs(
    "-f", "--file", "--blob", "--type", "--default", "--comment", "--value", "--url"
)
_GIT_CONFIG_SUBCOMMANDS: Final = _fs("get", "list", "unset", "edit", "remove-section")


def _git_config_write(args: tuple[str, ...]) -> None:
    """``git config [opts] key value`` / ``git config set key value`` writing a key that may
    hold a command (the same call's next git command would run it): uncertain."""
    positional: list[str] = []
    writing = False
    i = 0
    while i < len(args):
        w = args[i]
        name = w.partition("=")[0]
        if w in ("--rename-section",):
            raise _Uncertain("git config --rename-section may create command keys")
        if w in ("--add", "--replace-all"):
            writing = True
        if w in _GIT_CONFIG_VALUE_OPTS:
            i += 2
            continue
        if name.startswith("-"):
            i += 1
            continue
        positional.append(w)
        i += 1
    if not positional:
        return
    if positional[0] == "rename-section":
        raise _Uncertain("git config rename-section may create command keys")
    if positional[0] == "set":
        positional, writing = positional[1:], True
    elif positional[0] in _GIT_CONFIG_SUBCOMMANDS:
        return
    if positional and (writing or len(positional) >= 2):
        _git_config_key(positional[0], "git config")


def _hub(walker: _Walker, words: tuple[Word, ...], open_tail: bool) -> _Next:
    return ("git", *words[1:]), open_tail


def _hash(walker: _Walker, words: tuple[Word, ...], open_tail: bool) -> _Next:
    if any(w is None or (w.startswith("-") and "p" in w) for w in words[1:]):
        raise _Uncertain("hash -p makes a name run another program")
    return None


def _mapfile(walker: _Walker, words: tuple[Word, ...], open_tail: bool) -> _Next:
    if any(w is None or (w.startswith("-") and "C" in w) for w in words[1:]):
        raise _Uncertain("mapfile -C runs a callback")
    return None


_HANDLERS: Final[dict[str, _Handler]] = {
    **{name: _opaque for name in OPAQUE},
    **{name: _shell for name in _SHELLS},
    **{name: _wrapper(name, spec) for name, spec in WRAPPERS.items()},
    **{name: _runner for name in RUNNERS},
    **{name: _subcommand_runner(subs) for name, subs in SUBCOMMAND_RUNNERS.items()},
    **{name: _foreign(_interpreter(name, spec)) for name, spec in INTERPRETERS.items()},
    "env": _env,
    "find": _find,
    "fd": _fd,
    "fdfind": _fd,
    "ssh": _ssh,
    "su": _su,
    "runuser": _su,
    "sg": _sg,
    "script": _script_cmd,
    "watch": _watch,
    "parallel": _parallel,
    "flock": _flock,
    "nix-shell": _nix_shell,
    "deno": _foreign(_deno),
    "awk": _foreign(_awk),
    "gawk": _foreign(_awk),
    "mawk": _foreign(_awk),
    "nawk": _foreign(_awk),
    "sed": _foreign(_sed),
    "gsed": _foreign(_sed),
    "make": _foreign(_make),
    "gmake": _foreign(_make),
    "tar": _tar,
    "gtar": _tar,
    "bsdtar": _tar,
    "zip": _danger_options("zip", long=("-TT", "--unzip-command")),
    "rsync": _rsync,
    "scp": _scp,
    "nc": _danger_options("nc", short="ec", long=("--exec", "--sh-exec", "--lua-exec")),
    "ncat": _danger_options("ncat", short="ec", long=("--exec", "--sh-exec", "--lua-exec")),
    "netcat": _danger_options("netcat", short="ec"),
    "socat": _socat,
    "rg": _danger_options("rg", long=("--pre",)),
    "sort": _danger_options("sort", long=("--compress-program",)),
    "split": _danger_options("split", long=("--filter",)),
    "less": _danger_options("less", plus=True),
    "more": _danger_options("more", plus=True),
    "most": _danger_options("most", plus=True),
    "man": _man,
    "git": _git,
    "hub": _hub,
    "hash": _hash,
    "mapfile": _mapfile,
    "readarray": _mapfile,
}


@functools.lru_cache(maxsize=1024)
def _handler(base: str) -> _Handler | None:
    """What to do after recording a command whose program has this base name."""
    handler = _HANDLERS.get(base)
    if handler is not None:
        return handler
    if base.startswith("git-") and base[4:] in GIT_COMMANDS:
        sub = base[4:]
        return lambda walker, words, open_tail: (("git", sub, *words[1:]), open_tail)
    stripped = base.rstrip("0123456789.")
    if stripped != base and stripped in _VERSIONED:
        return _HANDLERS.get(stripped)
    if _LD_SO.fullmatch(base):
        return _ld_so
    return None


def _dashes(gap: bytes) -> int:
    """How many lone ``-`` words a gap holds when it holds nothing else (0 otherwise)."""
    tokens = gap.split()
    if b"\n" in gap or not tokens or any(t != b"-" for t in tokens):
        return 0
    return len(tokens)


#: The redirect operators that open their target for writing (``>&`` only when the target is
#: a file, not a descriptor such as ``2>&1``).
_WRITE_OPERATORS: Final = frozenset({">", ">>", "&>", "&>>", ">|", ">&"})


def _feeds_stdin(child: tree_sitter.Node) -> Literal["call", "file"] | None:
    """What a redirect gives a command's stdin: ``call`` (a here-doc or here-string, a ``<&``
    descriptor, a ``<`` of a name known only at run time), ``file`` (``< dump.sql``), or None
    (not stdin, or ``< /dev/stdin``, the same stdin)."""
    if child.type in ("heredoc_redirect", "herestring_redirect"):
        return "call"
    if child.type != "file_redirect":
        return None
    ops = [c.type for c in child.children if not c.is_named]
    fd = next((c for c in child.children if c.type == "file_descriptor"), None)
    if fd is not None and _text(fd) != "0":
        return None
    if any(op in ("<&", "<&-", "<>") for op in ops):
        return "call"
    if "<" not in ops:
        return None
    targets = _destinations(child)
    target = _word(targets[0]) if targets else None
    if target is None:
        return "call"
    return None if _stdin_path(target) else "file"


def _last_command(node: tree_sitter.Node) -> int | None:
    """The node id of the command a redirect after ``node`` belongs to: ``node`` itself, or the
    last command of a list or pipeline (None: a compound, opened where it starts)."""
    while node.type in ("list", "pipeline", "redirected_statement"):
        if node.type == "redirected_statement":
            body = node.child_by_field_name("body")
            if body is None:
                return None
            node = body
            continue
        named = node.named_children
        if not named:
            return None
        node = named[-1]
    return node.id if node.type == "command" else None


def _writes_file(redirect: tree_sitter.Node, target: tree_sitter.Node) -> bool:
    operator = next((c.type for c in redirect.children if c.type in _WRITE_OPERATORS), None)
    if operator is None:
        return False
    if operator == ">&":
        return target.type != "number" and _text(target) != "-"
    return True


def _destinations(redirect: tree_sitter.Node) -> list[tree_sitter.Node]:
    return redirect.children_by_field_name("destination")


def _extra_destinations(stmt: tree_sitter.Node) -> list[tree_sitter.Node]:
    """Words tree-sitter filed under a redirect after its first destination (bash: arguments)."""
    extra: list[tree_sitter.Node] = []
    for child in stmt.children_by_field_name("redirect"):
        if child.type == "file_redirect":
            extra.extend(_destinations(child)[1:])
    return extra


def _matching(words: ScriptWords) -> ParsedScript:
    """A reading as a match takes it: its commands, uncertain at any doubt about them."""
    reason = words.error or next(iter((*words.doubts, *words.foreign)), "")
    return ParsedScript(words.commands, uncertain=bool(reason), reason=reason)


@functools.lru_cache(maxsize=1024)
def _read_words(script: str, depth: int) -> ScriptWords:
    if len(script) > MAX_SCRIPT:
        return ScriptWords(error="script too long")
    source = script.encode("utf-8", "surrogateescape")
    walker = _Walker(source, depth)
    # tree-sitter-bash reads a pipeline of three or more commands that ends the text ~15x
    # slower than one a newline ends (60 µs against 4 for `a | b | c`): the newline bash adds
    # when it reads a script is given to it too -- but not after a final backslash, which it
    # would turn into a line continuation. The walker reads only the bytes of ``source``.
    parsed = source if source.endswith((b"\n", b"\\")) else source + b"\n"
    try:
        walker.walk(_parser().parse(parsed).root_node)
    except _Uncertain as exc:
        return ScriptWords(error=str(exc))
    except RecursionError:
        return ScriptWords(error="too deep")
    # A redirect whose command was never listed (a dynamic name): at the script's end.
    walker.written += [(w, len(walker.commands)) for ws in walker.pending.values() for w in ws]
    return ScriptWords(
        tuple(walker.commands),
        tuple(walker.dynamic),
        tuple(walker.other_words),
        tuple(walker.doubts),
        written=tuple(walker.written),
        foreign=tuple(walker.foreign),
        assignments=tuple(walker.assignments),
        env_doubts=tuple(walker.env_doubts),
        functions=tuple(walker.functions),
    )


def read_words(script: str) -> ScriptWords:
    """Every word ``script`` could run with, for trust: which files a hook command names.
    The same reading as :func:`parse_script` (the same parser, quoting, wrappers and ``-c``
    strings), but it does not stop at a command whose effect it cannot model (see
    :class:`ScriptWords`). Cached on the text."""
    return _read_words(script, 0)


#: ``$NAME`` / ``${NAME}``.
VARIABLE: Final = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
#: ``$(git rev-parse --show-toplevel)``: the work tree a command runs in, which a reader that
#: knows where the command runs can name.
GIT_TOPLEVEL: Final = re.compile(r"\$\(\s*git\s+rev-parse\s+--show-toplevel\s*\)")
_PLACEHOLDER: Final = "/.triohooks-variable-"


def mark_known(command: str, variables: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    """``command`` with each ``$NAME`` / ``${NAME}`` whose ``NAME`` is known replaced by a plain
    placeholder path (which reads the same quoted or not), and the placeholders' values. Unknown
    variables are left as written (dynamic to the parser). Inside single quotes bash would not
    expand: trust then looks at a file the hook does not run, which costs nothing."""
    values: dict[str, str] = {}

    def mark(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2) or ""
        if name not in variables:
            return m.group(0)
        placeholder = f"{_PLACEHOLDER}{name}"
        values[placeholder] = variables[name]
        return placeholder

    return VARIABLE.sub(mark, command), values


def unmark(word: str, values: Mapping[str, str]) -> str:
    """``word`` with :func:`mark_known`'s placeholders back to their values."""
    for placeholder, value in values.items():
        word = word.replace(placeholder, value)
    return word


def code_source(words: tuple[Word, ...]) -> CodeSource | None:
    """Where the program of ``words`` takes its code from, when it is a shell
    (``bash x.sh``, ``sh -c '...'``), an interpreter of :data:`INTERPRETERS` (``python3 -m x``,
    ``node -e '...'``) or ``source``/``.``; None for any other program. The same reading of
    their options as the matcher's."""
    name = words[0] if words else None
    if not name:
        return None
    base = posixpath.basename(name) or name
    stripped = base.rstrip("0123456789.")
    if stripped != base and stripped in _VERSIONED:
        base = stripped
    try:
        if base in _SHELLS:
            return _shell_source(words)
        if base in INTERPRETERS:
            return _interpreter_source(base, INTERPRETERS[base], words)
    except _Uncertain as exc:
        return CodeSource("dynamic", why=str(exc))
    if base in ("source", "."):
        if len(words) < 2:
            return CodeSource("none")
        if words[1] is None:
            return CodeSource("dynamic", why=f"{base} runs a file named at run time")
        if _stdin_path(words[1]):
            return CodeSource("stdin", why=f"{base} reads code from {words[1]}")
        return CodeSource("file", words[1], rest=words[2:])
    return None


@functools.lru_cache(maxsize=1024)
def parse_script(script: str) -> ParsedScript:
    """Every simple command ``script`` could run, or ``uncertain`` (cached on the text): the
    reading of :func:`read_words`, uncertain at its first doubt."""
    return _matching(_read_words(script, 0))


def parse_argv(argv: Iterable[str]) -> ParsedScript:
    """The same for a program run without a shell (``["bash", "-lc", "git status"]``)."""
    return _matching(read_argv(argv))


def read_argv(argv: Iterable[str]) -> ScriptWords:
    """:func:`read_words` for a program run without a shell."""
    walker = _Walker(b"", 0)
    try:
        walker._semantic(functools.partial(walker.add, tuple(argv), open_tail=False))
    except _Uncertain as exc:
        return ScriptWords(error=str(exc))
    return ScriptWords(
        tuple(walker.commands),
        tuple(walker.dynamic),
        tuple(walker.other_words),
        tuple(walker.doubts),
        foreign=tuple(walker.foreign),
    )
