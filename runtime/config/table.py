"""Building the hook table: finding the config files of every scope, reading each in its
dialect, applying trust, and putting the hooks in run order.

Run order (docs/design.md §3, §5): the system tier, then the global scope, then ``--config``
files, then the workspace; within a scope the TOML file's hooks before the JSON file's, file
order within. JSON-dialect hooks are merged across the user's and the project's scopes the
yolop way first; the system tier's are merged among themselves only, so no lower scope can
disable, replace or reorder them (:mod:`.system_tier`). This module reads files synchronously;
the loader actor calls it from a worker thread. It must not run hooks.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import msgspec

from .freshness import Signature, signature
from .json_dialect import MAX_FILE_BYTES, JsonFile, merge_json_scopes, parse_json_bytes
from .model import (
    Command,
    ConfigProblem,
    Handler,
    HeldBack,
    Hook,
    HookTable,
    Scope,
    TrustInfo,
    index_by_event,
)
from .paths import (
    UnreadableFileError,
    global_config_dir,
    global_config_files,
    read_regular_file,
    system_config_dir,
    workspace_config_files,
)
from .system_tier import lower_scope_problems, refused_file, strict, unsafe_reason
from .toml_dialect import MAX_TOML_FILE_BYTES, parse_toml_text
from .trust import STORE_NAME, TrustSource, assess_trust, held_back_message


class _ScopeFiles:
    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.toml_hooks: list[Hook] = []
        self.json_files: list[JsonFile] = []
        self.read: list[str] = []
        #: The bytes each file was parsed from: what trust hashes (one open, one look).
        self.sources: list[TrustSource] = []
        #: ``(file, why)`` for files that are there but could not be read.
        self.unreadable: list[tuple[str, str]] = []
        #: The ``held_back`` setting the scope's files chose, and which file (last one wins).
        self.held_back: tuple[HeldBack, str] | None = None


def _read_toml(
    path: Path,
    scope: Scope,
    into: _ScopeFiles,
    problems: list[ConfigProblem],
    judge: dict[str, str],
    *,
    required: bool,
) -> None:
    try:
        data = read_regular_file(path, MAX_TOML_FILE_BYTES)
        # Universal newlines, as a text-mode read gives them.
        text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except FileNotFoundError:
        if required:
            problems.append(ConfigProblem(str(path), "file not found"))
        return
    except UnreadableFileError as exc:
        problems.append(ConfigProblem(str(path), exc.reason))
        into.unreadable.append((str(path), exc.reason))
        return
    except UnicodeDecodeError as exc:
        problems.append(ConfigProblem(str(path), f"cannot read: {exc}"))
        return
    into.read.append(str(path))
    into.sources.append(TrustSource(str(path), data))
    parsed = parse_toml_text(text, file=str(path), scope=scope)
    into.toml_hooks.extend(parsed.hooks)
    problems.extend(parsed.problems)
    judge.update(parsed.judge)
    if parsed.held_back is not None:
        into.held_back = (parsed.held_back, str(path))


def _read_json(
    path: Path, scope: Scope, into: _ScopeFiles, problems: list[ConfigProblem], *, required: bool
) -> None:
    try:
        data = read_regular_file(path, MAX_FILE_BYTES)
    except FileNotFoundError:
        # The yolop spec: a missing file is silent (a named --config file is not).
        if required:
            problems.append(ConfigProblem(str(path), "file not found"))
        return
    except UnreadableFileError as exc:
        problems.append(ConfigProblem(str(path), f"{exc.reason}; skipped", severity="warning"))
        into.unreadable.append((str(path), exc.reason))
        return
    into.read.append(str(path))
    into.sources.append(TrustSource(str(path), data))
    parsed = parse_json_bytes(data, file=str(path), scope=scope)
    problems.extend(parsed.problems)
    into.json_files.append(parsed)
    if parsed.held_back is not None:
        into.held_back = (parsed.held_back, str(path))


def _read_scope(
    files: Sequence[Path],
    scope: Scope,
    problems: list[ConfigProblem],
    judge: dict[str, str],
    *,
    required: bool,
) -> _ScopeFiles:
    out = _ScopeFiles(scope)
    for path in files:
        if path.suffix == ".toml":
            _read_toml(path, scope, out, problems, judge, required=required)
        elif path.suffix == ".json":
            _read_json(path, scope, out, problems, required=required)
        else:
            problems.append(
                ConfigProblem(str(path), "unknown config type: the name must end in .toml or .json")
            )
    return out


def _read_system(
    files: Sequence[Path], problems: list[ConfigProblem], judge: dict[str, str]
) -> _ScopeFiles:
    """The system tier's files: each one that is there read only when :func:`unsafe_reason`
    finds it the admin's; every problem of the tier an error (:func:`strict`)."""
    own: list[ConfigProblem] = []
    readable: list[Path] = []
    for path in files:
        why = unsafe_reason(str(path)) if os.path.lexists(path) else None
        if why is None:
            readable.append(path)
        else:
            own.append(refused_file(str(path), why))
    out = _read_scope(readable, "system", own, judge, required=False)
    problems.extend(strict(p) for p in own)
    return out


def _handlers(scope: _ScopeFiles) -> list[Handler | Command]:
    handlers: list[Handler | Command] = [h.handler for h in scope.toml_hooks]
    handlers += [Command(s.command, s.env) for jf in scope.json_files for _, s in jf.specs]
    return handlers


def _unique_ids(hooks: list[Hook]) -> list[Hook]:
    """Give every hook its own id: audit records, failure memory and ``runs`` key on it.

    Ids repeat only across files (a TOML id in the global and the workspace file, or the
    generated ``extra:pre_tool[0]`` of two ``--config`` files); a later one is qualified by its
    file, then numbered.
    """
    seen: set[str] = set()
    out: list[Hook] = []
    for hook in hooks:
        hook_id = hook.id
        if hook_id in seen:
            hook_id = f"{hook.id}@{Path(hook.source).name}"
            n = 2
            while hook_id in seen:
                hook_id = f"{hook.id}@{Path(hook.source).name}#{n}"
                n += 1
        seen.add(hook_id)
        out.append(hook if hook_id == hook.id else msgspec.structs.replace(hook, id=hook_id))
    return out


def as_untrusted(problem: ConfigProblem, state: str) -> ConfigProblem:
    """A problem of workspace hooks trust holds back: a warning, never a startup error
    (nothing untrusted may stop the user's own hooks from running)."""
    if problem.severity == "warning":
        return problem
    note = f" (a warning only: the workspace hooks are {state}, not trusted, and do not run)"
    return msgspec.structs.replace(problem, message=problem.message + note, severity="warning")


def load_table(
    *,
    workspace: Path | None,
    config_dir: Path | None = None,
    extra_configs: Sequence[Path] = (),
    trust_override: bool = False,
    generation: int = 0,
    trust_covers: Sequence[str] | None = None,
) -> HookTable:
    """Read every scope and build the table. Never raises for bad config: problems are listed
    (``severity="error"`` for the strict TOML dialect; the caller decides whether to start).
    ``trust_covers``: the paths trust hashes besides what it finds (``triohooks trust
    --cover``; None: those the user named before)."""
    config_dir = config_dir if config_dir is not None else global_config_dir()
    system_dir = system_config_dir()
    system_files = global_config_files(system_dir)
    # Every file the table may read, signed before it is read (the freshness check); the
    # system directory too (a change of its owner or mode changes whether it is trusted).
    watched = [
        system_dir,
        *system_files,
        *global_config_files(config_dir),
        *extra_configs,
        *(workspace_config_files(workspace) if workspace is not None else ()),
        config_dir / STORE_NAME,
    ]
    inputs: dict[str, Signature] = {str(p): signature(str(p)) for p in watched}
    problems: list[ConfigProblem] = []
    judge: dict[str, str] = {}
    system = _read_system(system_files, problems, judge)
    system_json, system_contributions = merge_json_scopes(system.json_files)
    system_hooks = [*system.toml_hooks, *system_json]
    scopes = [
        _read_scope(global_config_files(config_dir), "global", problems, judge, required=False),
        _read_scope(list(extra_configs), "extra", problems, judge, required=True),
    ]
    for scope in scopes:
        problems += lower_scope_problems(system_hooks, scope.toml_hooks, scope.json_files)
    trust: TrustInfo | None = None
    untrusted: list[Hook] = []
    if workspace is not None:
        ws_files = workspace_config_files(workspace)
        ws_judge: dict[str, str] = {}
        ws_problems: list[ConfigProblem] = []
        ws = _read_scope(ws_files, "workspace", ws_problems, ws_judge, required=False)
        ws_problems += lower_scope_problems(system_hooks, ws.toml_hooks, ws.json_files)
        trust, covered = assess_trust(
            config_dir,
            workspace,
            ws.sources,
            _handlers(ws),
            hooks_dir=ws_files[0].parent,
            unreadable=ws.unreadable,
            covers=trust_covers,
        )
        for sig in covered.signatures:
            inputs.setdefault(str(sig[0]), sig)
        if trust_override and trust.state != "none":
            trust = msgspec.structs.replace(trust, state="trusted")
        if trust.state == "trusted":
            problems.extend(ws_problems)  # the user's own now: as strict as their global file
        else:
            # Not trusted: nothing in it may stop the user's own hooks from running, so its
            # problems are warnings, shown but never a startup error.
            problems.extend(as_untrusted(p, trust.state) for p in ws_problems)
        if ws.held_back is not None:
            problems.append(
                ConfigProblem(
                    ws.held_back[1],
                    "held_back is yours to choose, in your global config: ignored here",
                    field="held_back",
                    severity="warning",
                )
            )
        unreadable = {name for name, _ in ws.unreadable}
        for name, reason in covered.refused:
            if name not in unreadable:  # a hook file's own read problem says it already
                message = f"{reason}; the workspace hooks cannot be trusted"
                problems.append(ConfigProblem(name, message, severity="warning"))
        if trust.state in ("none", "trusted"):
            scopes.append(ws)
            judge.update(ws_judge)
        else:
            # Untrusted content must not even disable the user's own hooks: it is left out whole.
            json_hooks, _ = merge_json_scopes(ws.json_files)
            untrusted = ws.toml_hooks + json_hooks

    json_hooks, contributions = merge_json_scopes([jf for s in scopes for jf in s.json_files])
    hooks: list[Hook] = list(system_hooks)
    for scope in scopes:
        hooks.extend(scope.toml_hooks)
        hooks.extend(h for h in json_hooks if h.scope == scope.scope)
    hooks = _unique_ids(hooks)
    return HookTable(
        hooks=tuple(hooks),
        by_event=index_by_event(tuple(hooks)),
        untrusted=tuple(untrusted),
        problems=tuple(problems),
        trust=trust,
        disabled_contributions=(*system_contributions, *contributions),
        global_dir=str(config_dir),
        workspace=str(workspace) if workspace is not None else "",
        files=tuple(f for s in (system, *scopes) for f in s.read),
        judge=tuple(sorted(judge.items())),
        generation=generation,
        inputs=tuple(inputs.values()),
        held_back=next(
            (s.held_back[0] for s in (scopes[1], scopes[0], system) if s.held_back is not None),
            "ask",
        ),
        system_dir=str(system_dir),
    )


def held_back_summary(table: HookTable) -> str | None:
    """What to tell as a table is loaded whose workspace hooks trust holds back (None: none
    are, or the user declined them: their own decision, not repeated at every start). Each
    event a held-back hook would have run for says so in its Outcome as well."""
    trust = table.trust
    if not table.untrusted or trust is None or trust.state == "declined":
        return None
    return held_back_message(trust, None, len(table.untrusted))
