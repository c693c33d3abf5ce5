"""``triohooks doctor``: what would go wrong before it does (blitz HK-40).

Owns the static checks: everything a command or args hook runs, as trust reads the command
(:mod:`triohooks.config.trust_reader`: every simple command, the scripts it runs, what they
source) -- each program named by path or a script an interpreter runs is there and
executable, each program run by name resolves on PATH or is a shell builtin, keyword or a
function the hook's own scripts define; http and prompt hooks are listed with their url /
model; the workspace's trust state; config problems; whether today's audit file can be
written. Pure reading: it must not run any hook or write a file.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Final

import msgspec

from triohooks.config.model import (
    ArgsHandler,
    Command,
    CommandHandler,
    ConfigProblem,
    Hook,
    HookTable,
    HttpHandler,
    PromptHandler,
    command_label,
)
from triohooks.config.suggest import tool_name_problems
from triohooks.config.trust import held_back_message

#: Words bash resolves itself: keywords and builtins (``compgen -k``, ``compgen -b``).
SHELL_WORDS: Final = frozenset(
    """
    ! [[ ]] { } ( case coproc do done elif else esac fi for function if in select then time
    until while . : [ alias bg bind break builtin caller cd command compgen complete compopt
    continue declare dirs disown echo enable eval exec exit export false fc fg getopts hash help
    history jobs kill let local logout mapfile popd printf pushd pwd read readarray readonly
    return set shift shopt source suspend test times trap true type typeset ulimit umask unalias
    unset wait
    """.split()
)
_SKIP_CHARS: Final = frozenset("$;|&")


class DoctorLine(msgspec.Struct, frozen=True):
    """One finding: ``ok`` lines inform, the others are problems (exit 1)."""

    ok: bool
    text: str


def first_word(hook: Hook) -> str | None:
    """The program a command/args hook starts, or None when it can't be told statically."""
    h = hook.handler
    if isinstance(h, ArgsHandler):
        return h.args[0]
    if not isinstance(h, CommandHandler):
        return None
    words = h.command.split()
    # Leading VAR=value assignments are not the program.
    while words and "=" in words[0] and not words[0].startswith(("=", "/", ".")):
        name = words[0].split("=", 1)[0]
        if not name.replace("_", "a").isalnum():
            break
        words = words[1:]
    if not words:
        return None
    word = words[0]
    # `(cmd` / `{` etc. start a compound command; a quoted word is read without its quotes.
    return word.strip("'\"")


def resolve(word: str, workspace: Path) -> str | None:
    """Why ``word`` does not resolve, or None when it does."""
    if word in SHELL_WORDS:
        return None
    if "/" in word:
        path = Path(word).expanduser()
        if not path.is_absolute():
            path = workspace / path
        if not path.exists():
            return f"{word}: no such file"
        if not path.is_file() or not os.access(path, os.X_OK):
            return f"{word}: not an executable file"
        return None
    if shutil.which(word) is None:
        return f"{word}: not found on PATH"
    return None


def run_problems(hook: Hook, workspace: Path) -> list[str]:
    """What is wrong with what a command/args hook runs, as trust reads the command: each file
    it runs (a program named by path, a script an interpreter or ``source`` runs, in the hook
    or in the scripts it runs) that is not there or not executable, each program it runs by
    name that is not on PATH. Empty for a hook that runs no process."""
    command = _command(hook)
    if command is None:
        return []
    from triohooks.config.trust_reader import read_commands  # the bash parser: on demand

    cover = read_commands([command], workspace)
    label = command_label(command)
    # HK-40: the hook's own first word is not checked when written with $;|& in it.
    word = first_word(hook)
    skip_first = word is None or bool(_SKIP_CHARS & set(word))
    problems = [what for what, first in cover.missing.get(label, []) if not (first and skip_first)]
    for name, first in dict.fromkeys(cover.programs.get(label, [])):
        problem = None if first and skip_first else resolve(name, workspace)
        if problem is not None:
            problems.append(problem)
    return problems


def _command(hook: Hook) -> Command | None:
    h = hook.handler
    if isinstance(h, ArgsHandler):
        return Command(tuple(h.args))
    if isinstance(h, CommandHandler):
        return Command(h.command)
    return None


def program_problems(hook: Hook, workspace: Path) -> list[ConfigProblem]:
    """:func:`run_problems`, each located at the hook's file and field. ``validate`` reports
    these beside the config's own problems."""
    field = "args" if isinstance(hook.handler, ArgsHandler) else "command"
    return [
        ConfigProblem(
            hook.source or hook.scope,
            problem,
            event=hook.config_event,
            index=hook.index,
            field=field if hook.dialect == "toml" else f"executor.{field}",
        )
        for problem in run_problems(hook, workspace)
    ]


def _check(hook: Hook, workspace: Path) -> Iterator[DoctorLine]:
    where = f"{hook.event} {hook.id} ({hook.source or hook.scope})"
    h = hook.handler
    if isinstance(h, HttpHandler):
        yield DoctorLine(True, f"{where}: http hook POSTs to {h.url}")
        return
    if isinstance(h, PromptHandler):
        model = h.model or "the engine's judge"
        yield DoctorLine(True, f"{where}: prompt hook judged by {model}")
        return
    problems = run_problems(hook, workspace)
    for problem in problems:
        yield DoctorLine(False, f"{where}: {problem}")
    if not problems:
        word = first_word(hook)
        if word is None:
            yield DoctorLine(True, f"{where}: program not checked (no plain first word)")
        elif _SKIP_CHARS & set(word):
            yield DoctorLine(True, f"{where}: {word!r} not checked (contains $;|&)")
        else:
            yield DoctorLine(True, f"{where}: {word} ok")


def diagnose(table: HookTable) -> list[DoctorLine]:
    """Every finding for ``table``, problems and information, in hook order."""
    workspace = Path(table.workspace or ".")
    # A skipped JSON entry is as broken as a TOML error: both are problems here.
    problems = (*table.problems, *tool_name_problems((*table.hooks, *table.untrusted)))
    lines: list[DoctorLine] = [DoctorLine(False, f"config: {p}") for p in problems]
    for hook in table.hooks:
        lines.extend(_check(hook, workspace))
    trust = table.trust
    if trust is not None and trust.state not in ("none", "trusted"):
        lines.append(DoctorLine(False, held_back_message(trust, None, len(table.untrusted))))
        for hook in table.untrusted:
            lines.extend(_check(hook, workspace))
    elif trust is not None and trust.state == "trusted":
        lines.append(DoctorLine(True, "workspace hooks are trusted"))
    return lines


def audit_log(directory: Path, today: date) -> DoctorLine:
    """Whether today's audit file in ``directory`` can be written (docs/design.md §8): a
    record that cannot be written is lost, and each answer whose record it is says so. A file
    ending in a partial line is said (the next write ends it). Reads only."""
    from triohooks.actors.audit_records import audit_file  # (``validate`` imports this module)

    path = audit_file(directory, today)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        return DoctorLine(False, f"audit log: {path} cannot be read: {exc.strerror}")
    if st is None:
        where = directory
        while not where.exists() and where != where.parent:
            where = where.parent
        if not where.is_dir() or not os.access(where, os.W_OK | os.X_OK):
            return DoctorLine(
                False,
                f"audit log: {path} cannot be created ({where} is no directory we may "
                "write): audit records would be lost",
            )
        return DoctorLine(True, f"audit log: {path} can be written")
    if not stat.S_ISREG(st.st_mode):
        return DoctorLine(
            False, f"audit log: {path} is not a regular file: audit records written there are lost"
        )
    if not os.access(path, os.W_OK):
        return DoctorLine(
            False, f"audit log: {path} cannot be written (its mode): audit records would be lost"
        )
    if st.st_size:
        with path.open("rb") as f:
            f.seek(st.st_size - 1)
            torn = f.read(1) != b"\n"
        if torn:
            return DoctorLine(
                True,
                f"audit log: {path} can be written; it ends in a partial line (a write cut "
                "short), which the next record's write ends",
            )
    return DoctorLine(True, f"audit log: {path} can be written")
