"""The system tier (docs/design.md §3, docs/configuration.md#the-system-tier): an admin's
``hooks.toml`` / ``hooks.json`` in ``$TRIOHOOKS_SYSTEM_DIR`` (:func:`.paths.system_config_dir`),
read before the user's config. What this module decides, as pure functions the table builder
(:mod:`.table`) calls:

- whether a system file may speak for the system at all (:func:`unsafe_reason`: on POSIX, the
  file and every directory and link on the way to it are owned by root or by the user running
  triohooks, and none can be written by anyone else);
- that the tier is strict (:func:`strict`): every problem of a system file is an error, so a
  broken team guard fails events closed, naming the file, and is never skipped;
- what a lower scope tried against it (:func:`lower_scope_problems`): a ``disabled`` or
  ``disabled_contributions`` entry naming a system hook is refused, and a hook with a system
  hook's id is told it replaces nothing (both run, the system one first);
- each hook's tier as people read it (:func:`tier_of`: ``system``, ``user``, ``project``).

It reads no config and runs nothing.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from typing import Final, Literal

import msgspec

from .json_dialect import JsonFile
from .model import ConfigProblem, Hook, Scope

Tier = Literal["system", "user", "project"]
_TIERS: Final[dict[Scope, Tier]] = {
    "system": "system",
    "global": "user",
    "extra": "user",
    "api": "user",
    "workspace": "project",
}
#: Symbolic links followed on the way to a system file before it is refused (as the kernel's
#: own limit on Linux).
MAX_LINKS: Final = 40


def tier_of(hook: Hook) -> Tier:
    """``system`` (the admin's directory), ``user`` (the global config, ``--config`` files,
    the API) or ``project`` (the workspace's ``.agents``)."""
    return _TIERS[hook.scope]


def strict(problem: ConfigProblem) -> ConfigProblem:
    """A system file's problem, as the tier reads it: an error (a JSON entry or file the user's
    tier would skip with a warning fails closed here: a team's guard never fails open)."""
    if problem.severity == "error":
        return problem
    message = problem.message + " (an error in the system tier: nothing of it is skipped)"
    return msgspec.structs.replace(problem, message=message, severity="error")


def unsafe_reason(path: str, *, uid: int | None = None) -> str | None:
    """Why ``path`` (an existing system file) must not speak for the system, or None.

    POSIX only (None elsewhere: Windows ACLs are not read). Every component on the way to the
    file is looked at as the kernel resolves it, each link followed to where it points: each
    (directory, link, the file) must be owned by root or by ``uid`` (default: the effective
    user: a file of yours guards you against your projects, as a system file of root's guards
    you against yourself); no directory may be writable by its group (unless that is root's)
    or by others unless it is sticky (``/tmp``: then nobody but an entry's owner can replace
    the entry, and the entry's owner is checked next); the file may be written by nobody else.
    A path that vanishes on the way is None (the read then says it is missing)."""
    if os.name != "posix":
        return None
    me = os.geteuid() if uid is None else uid
    if not path.startswith("/"):
        path = os.path.join(os.getcwd(), path)
    todo = [part for part in path.split("/") if part]
    current = "/"
    links = 0
    try:
        why = _unsafe_dir(current, os.lstat(current), me)
    except OSError as exc:
        return f"/: cannot check it: {exc.strerror or exc}"
    if why is not None:
        return why
    while todo:
        name = todo.pop(0)
        if name == ".":
            continue
        if name == "..":
            current = os.path.dirname(current)
            continue
        here = os.path.join(current, name)
        try:
            st = os.lstat(here)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            return f"{here}: cannot check it: {exc.strerror or exc}"
        if st.st_uid not in (0, me):
            return f"{here} is owned by uid {st.st_uid}, neither root nor you"
        if stat.S_ISLNK(st.st_mode):
            links += 1
            if links > MAX_LINKS:
                return f"{path}: more than {MAX_LINKS} symbolic links on the way"
            target = os.readlink(here)
            if target.startswith("/"):
                current = "/"
            todo = [part for part in target.split("/") if part] + todo
            continue
        if todo:
            why = _unsafe_dir(here, st, me)
            if why is not None:
                return why
        elif st.st_mode & 0o022 and not (st.st_gid == 0 and not st.st_mode & 0o002):
            return f"{here} can be written by {_who(st)} (mode {stat.S_IMODE(st.st_mode):04o})"
        current = here
    return None


def _unsafe_dir(here: str, st: os.stat_result, me: int) -> str | None:
    if not stat.S_ISDIR(st.st_mode):
        return None  # reading through it fails, and says so
    if st.st_uid not in (0, me):
        return f"{here} is owned by uid {st.st_uid}, neither root nor you"
    group = bool(st.st_mode & 0o020) and st.st_gid != 0
    others = bool(st.st_mode & 0o002)
    if (group or others) and not st.st_mode & stat.S_ISVTX:
        mode = stat.S_IMODE(st.st_mode)
        return f"the directory {here} can be written by {_who(st)} (mode {mode:04o})"
    return None


def _who(st: os.stat_result) -> str:
    others = bool(st.st_mode & 0o002)
    group = bool(st.st_mode & 0o020)
    if others and group:
        return f"its group (gid {st.st_gid}) and everyone"
    return "everyone" if others else f"its group (gid {st.st_gid})"


def refused_file(path: str, why: str) -> ConfigProblem:
    """The error of a system file :func:`unsafe_reason` refuses: not read, events fail closed."""
    return ConfigProblem(
        path,
        f"not trusted as a system file, so not read and events fail closed: {why}; make it and "
        "its directories root's (or yours) and writable by nobody else",
    )


def lower_scope_problems(
    system: Sequence[Hook], toml_hooks: Iterable[Hook], json_files: Iterable[JsonFile]
) -> list[ConfigProblem]:
    """What the files of one lower scope tried against the system hooks ``system``, as
    warnings at the entry that tried: a ``disabled`` entry naming a system hook's id and a
    ``disabled_contributions`` entry naming its resolved id are refused (they act on the lower
    scopes only); a hook with a system hook's id is loaded as its own hook, which runs after
    the system one and replaces nothing."""
    if not system:
        return []
    by_id = {h.explicit_id: h for h in system if h.explicit_id is not None}
    by_resolved = {h.id: h for h in system}
    out: list[ConfigProblem] = []

    def same_id(hook_id: str | None, file: str, event: str, index: int) -> None:
        if hook_id is None or hook_id not in by_id:
            return
        out.append(
            ConfigProblem(
                file,
                f"id {hook_id!r} is a system hook's ({by_id[hook_id].source}); a system hook "
                "cannot be replaced: this hook runs as well, after it",
                event,
                index,
                "id",
                severity="warning",
            )
        )

    for hook in toml_hooks:
        same_id(hook.explicit_id, hook.source, hook.config_event, hook.index)
    for jf in json_files:
        for index, spec in jf.specs:
            same_id(spec.id, jf.file, spec.event, index)
        for key, entries, known in (
            ("disabled", jf.disabled, by_id),
            ("disabled_contributions", jf.disabled_contributions, by_resolved),
        ):
            for entry in entries:
                if entry in known:
                    out.append(
                        ConfigProblem(
                            jf.file,
                            f"refused: {entry!r} is a system hook ({known[entry].source}); "
                            "no lower scope can disable it",
                            field=key,
                            severity="warning",
                        )
                    )
    return out
