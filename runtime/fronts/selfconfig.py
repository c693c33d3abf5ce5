"""Self-configuration: the ``hooks`` tools an agent gives its model (yolop: Natural-Language Setup).

Owns the four tools — ``list_hooks``, ``validate_hook``, ``upsert_hook``, ``remove_hook`` — as
plain async methods of :class:`HooksTools` and as tool definitions (name, description, JSON
Schema) for a model; the strict read and the atomic write of one ``hooks.json``; asking the
engine's loader to rebuild after a write; and re-recording workspace trust after a write the user
made through these tools. The tools edit **only** JSON-dialect ``hooks.json`` files (never
``hooks.toml``). Validation is the JSON dialect's own (``_json_dialect.validate_hook_spec``); this
module must not grow a second set of rules, and must not run hooks.

Writes to one file are serialized twice: a ``trio.Lock`` per file inside one :class:`HooksTools`,
and an ``flock`` on the file's directory across tool objects and processes (the file itself is
replaced by rename, so it cannot carry the lock).
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

import msgspec
import trio

from triohooks.config.events import JSON_ALIASES
from triohooks.config.json_dialect import (
    MAX_COMMAND_BYTES,
    MAX_ENV_VARS,
    MAX_FILE_BYTES,
    MAX_HOOKS_PER_FILE,
    MAX_MATCHER_FIELD_BYTES,
    EntryError,
    validate_hook_spec,
)
from triohooks.config.model import (
    DEFAULT_WORKER_POOL,
    JSON_DEFAULT_TIMEOUT_MS,
    JSON_MAX_TIMEOUT_MS,
    JSON_MIN_TIMEOUT_MS,
    MAX_WORKER_POOL,
    MODES,
    Hook,
    HookTable,
)
from triohooks.config.paths import (
    UnreadableFileError,
    UnsafeWriteError,
    check_write_target,
    global_config_dir,
    global_config_files,
    read_regular_file,
    workspace_config_files,
    write_file_atomic,
)
from triohooks.config.table import load_table
from triohooks.config.trust import UNTRUSTABLE, record_trust
from triohooks.match.matchers import JsonMatcher

if TYPE_CHECKING:
    from triohooks.engine.hook_engine import HookEngine

EditScope = Literal["global", "workspace"]

#: How long a write waits for another process's lock on the same directory.
LOCK_TIMEOUT_S: Final = 10.0
SKILL_NAME: Final = "yolop-hooks"


class SelfConfigError(ValueError):
    """A tool call that cannot be done as asked; the message says why (and nothing was written)."""


# -- results ------------------------------------------------------------------------------------
class HookView(msgspec.Struct, frozen=True, kw_only=True):
    """One hook as ``list_hooks`` shows it."""

    #: The id as written in the config (None for an id-less hook).
    id: str | None
    #: The engine's name for it (``user:<id>`` for JSON hooks), used in messages and the audit.
    name: str
    scope: str
    dialect: str
    #: The event as written in the config (``pre_tool_use``, ``pre_tool`` ...).
    event: str
    #: The JSON dialect's matcher, always with all five keys (unset ones null).
    matcher: JsonMatcher
    #: TOML dialect filters (null for JSON hooks).
    match: str | None
    if_rule: str | None
    description: str | None
    source: str
    runs: str
    #: False for workspace hooks held back because the workspace is not trusted.
    trusted: bool
    #: ``enforce``, or ``observe``: its decision is computed, warned and audited, not enforced.
    mode: str = "enforce"


class HookList(msgspec.Struct, frozen=True, kw_only=True):
    hooks: list[HookView]
    global_path: str
    workspace_path: str | None
    #: Effective (trusted) hooks per scope: system, global, workspace, extra.
    counts: dict[str, int]
    #: none / new / trusted / changed / declined (null without a workspace).
    workspace_trust: str | None
    problems: list[str]


class Validation(msgspec.Struct, frozen=True, kw_only=True):
    valid: bool
    id: str | None = None
    event: str | None = None
    #: ``"<field>: <what is wrong>"`` when invalid.
    error: str | None = None
    field: str | None = None


class UpsertResult(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    scope: EditScope
    path: str
    #: How many entries with this id the file held before (0 = a new hook).
    replaced: int
    #: True when the hook is in the effective table now (see ``note`` when it is not).
    active: bool
    reloaded: bool
    trust_recorded: bool
    note: str | None = None


class RemoveResult(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    scope: EditScope
    path: str
    removed: bool
    #: Workspace scope: the id is (now) in the file's ``disabled`` list.
    disabled: bool
    written: bool
    reloaded: bool
    trust_recorded: bool


class ToolDefinition(msgspec.Struct, frozen=True):
    """A tool as a model sees it: ``input_schema`` is the JSON Schema of its arguments."""

    name: str
    description: str
    input_schema: dict[str, Any]


# -- tool definitions ---------------------------------------------------------------------------
_JSON_ONLY = (
    "These tools edit only the JSON-dialect hooks.json files; hooks.toml files are never "
    "changed (list_hooks shows their hooks, read-only)."
)


def _hook_schema(*, id_required: bool) -> dict[str, Any]:
    text = {"type": "string", "maxLength": MAX_MATCHER_FIELD_BYTES}
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["id", "event", "executor"] if id_required else ["event", "executor"],
        "properties": {
            "id": {"type": "string", "minLength": 1, "description": "stable id, e.g. block-git"},
            "event": {"type": "string", "enum": list(JSON_ALIASES)},
            "matcher": {
                "type": "object",
                "additionalProperties": False,
                "description": (
                    "tool events only; every given key must hold. tool_name: exact; "
                    "tool_name_glob: a|b, trailing * prefix; args_jsonpath: $.key.key; "
                    "match_regex / deny_regex (RE2, never both): fires when the value at "
                    "args_jsonpath matches / does not match"
                ),
                "properties": {k: text for k in JsonMatcher.__struct_fields__},
            },
            "executor": {
                "type": "object",
                "additionalProperties": False,
                "required": ["type", "command"],
                "properties": {
                    "type": {"const": "bash"},
                    "command": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": MAX_COMMAND_BYTES,
                        "description": (
                            "bash -c command; prints JSON {decision: allow|block|mutate, reason, "
                            "user_message, patch} or nothing (exit 0 allows)"
                        ),
                    },
                    "env": {
                        "type": "object",
                        "maxProperties": MAX_ENV_VARS,
                        "additionalProperties": {"type": "string"},
                    },
                    "worker": {
                        "type": "boolean",
                        "default": False,
                        "description": (
                            "keep the command running as a warm worker: one request line "
                            '{"env": {...}} per event on stdin, one reply line '
                            '{"exit": N, "stdout": "...", "stderr": "..."} on stdout'
                        ),
                    },
                    "worker_pool": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_WORKER_POOL,
                        "default": DEFAULT_WORKER_POOL,
                    },
                },
            },
            "timeout_ms": {
                "type": "integer",
                "minimum": JSON_MIN_TIMEOUT_MS,
                "maximum": JSON_MAX_TIMEOUT_MS,
                "default": JSON_DEFAULT_TIMEOUT_MS,
            },
            "on_error": {"type": "string", "enum": ["warn", "block", "allow"], "default": "warn"},
            "mode": {
                "type": "string",
                "enum": list(MODES),
                "default": "enforce",
                "description": (
                    "observe: the hook's decisions are computed and audited as would_block, "
                    "never enforced (roll a guard out before it blocks)"
                ),
            },
            "description": {"type": "string"},
        },
    }


_SCOPE_SCHEMA: Final = {
    "type": "string",
    "enum": ["global", "workspace"],
    "description": (
        "global: the user's personal hooks, every workspace. workspace: this repository's "
        "<workspace>/.agents/hooks.json"
    ),
}

TOOL_DEFINITIONS: Final[tuple[ToolDefinition, ...]] = (
    ToolDefinition(
        "list_hooks",
        "List the effective hooks (both scopes, both dialects) with id, scope, event, matcher, "
        "description and source file, plus the global and workspace hooks.json paths and "
        "per-scope counts. " + _JSON_ONLY,
        {"type": "object", "additionalProperties": False, "properties": {}},
    ),
    ToolDefinition(
        "validate_hook",
        "Check a candidate hook spec without writing anything (an id is not required). Returns "
        "valid, or the field that is wrong and why. Call it before upsert_hook.",
        {
            "type": "object",
            "additionalProperties": False,
            "required": ["hook"],
            "properties": {"hook": _hook_schema(id_required=False)},
        },
    ),
    ToolDefinition(
        "upsert_hook",
        "Create or replace one hook by id in the global or workspace hooks.json, then reload "
        "hooks so the next event sees it. Every entry with that id in the file is replaced and "
        "the id is taken off that file's disabled list. A malformed file is reported, never "
        "overwritten. Personal preferences ('you', 'yourself', 'my') go to global; 'this "
        "repo/project/workspace' goes to workspace; ask once when a broad block's scope is "
        "unclear. " + _JSON_ONLY,
        {
            "type": "object",
            "additionalProperties": False,
            "required": ["scope", "hook"],
            "properties": {"scope": _SCOPE_SCHEMA, "hook": _hook_schema(id_required=True)},
        },
    ),
    ToolDefinition(
        "remove_hook",
        "Remove the hook with this id from the global or workspace hooks.json, then reload "
        "hooks. In workspace scope the id is also added to the file's disabled list, so a "
        "global hook with the same id stays off too. Reports removed: true|false. " + _JSON_ONLY,
        {
            "type": "object",
            "additionalProperties": False,
            "required": ["scope", "id"],
            "properties": {"scope": _SCOPE_SCHEMA, "id": {"type": "string", "minLength": 1}},
        },
    ),
)


def skill_text() -> str:
    """The bundled ``yolop-hooks`` skill (recipes mapping intents to hook specs), as markdown."""
    return (
        resources.files("triohooks.fronts.skills").joinpath(f"{SKILL_NAME}.md").read_text("utf-8")
    )


# -- one file: strict read, atomic write ---------------------------------------------------------
def _str_list_or_none(doc: Mapping[str, Any], key: str, path: Path) -> None:
    value = doc.get(key)
    if value is not None and not (
        isinstance(value, list) and all(isinstance(v, str) for v in value)
    ):
        raise SelfConfigError(f"{path}: '{key}' must be an array of strings; fix it by hand")


def read_hooks_file(path: Path) -> dict[str, Any]:
    """Read one hooks.json strictly for editing: ``{}`` when missing; raises
    :class:`SelfConfigError` when it cannot be read or is not a well-formed envelope (such a file
    is never overwritten)."""
    try:
        data = read_regular_file(path, MAX_FILE_BYTES)
    except FileNotFoundError:
        return {}
    except UnreadableFileError as exc:
        raise SelfConfigError(f"{exc}; fix it by hand") from None
    try:
        doc = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise SelfConfigError(
            f"{path}: malformed JSON ({exc}); the file was not changed, fix it by hand"
        ) from None
    if not isinstance(doc, dict):
        raise SelfConfigError(f"{path}: the top level must be an object with a 'hooks' array")
    hooks = doc.get("hooks")
    if hooks is not None and not isinstance(hooks, list):
        raise SelfConfigError(f"{path}: 'hooks' must be an array; fix it by hand")
    _str_list_or_none(doc, "disabled", path)
    _str_list_or_none(doc, "disabled_contributions", path)
    return doc


def encode_hooks_file(doc: Mapping[str, Any]) -> bytes:
    """Pretty JSON (indent 2) with a trailing newline; key order kept."""
    try:
        return msgspec.json.format(msgspec.json.encode(doc), indent=2) + b"\n"
    except (TypeError, msgspec.EncodeError) as exc:
        raise SelfConfigError(f"the hook is not plain JSON: {exc}") from None


@contextmanager
def _directory_lock(directory: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``directory`` (no lock file is left behind)."""
    fd = os.open(directory, os.O_RDONLY | os.O_CLOEXEC)
    try:
        deadline = time.monotonic() + LOCK_TIMEOUT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise
                if time.monotonic() >= deadline:
                    raise SelfConfigError(
                        f"{directory} is locked by another writer; try again"
                    ) from None
                time.sleep(0.01)
        yield
    finally:
        os.close(fd)  # closing the only descriptor releases the lock


def _has_id(entry: object, hook_id: str) -> bool:
    return isinstance(entry, dict) and entry.get("id") == hook_id


def _check_limits(path: Path, doc: Mapping[str, Any]) -> bytes:
    """The encoded file, or an error when the loader would skip it as too big."""
    n = len(doc.get("hooks") or [])
    if n > MAX_HOOKS_PER_FILE:
        raise SelfConfigError(f"{path} would hold {n} hooks; at most {MAX_HOOKS_PER_FILE} per file")
    data = encode_hooks_file(doc)
    if len(data) > MAX_FILE_BYTES:
        raise SelfConfigError(f"{path} would be {len(data)} bytes; at most {MAX_FILE_BYTES}")
    return data


class _Edit(msgspec.Struct, frozen=True, kw_only=True):
    """What one edit did to a file's document (and then whether it was written)."""

    removed: int
    disabled: bool = False
    changed: bool = True
    written: bool = False
    trust_recorded: bool = False


_EditFn = Callable[[dict[str, Any]], _Edit]


def _normalize_scope(scope: object) -> EditScope:
    if isinstance(scope, str):
        s = scope.strip().lower()
        if s == "global":
            return "global"
        if s == "workspace":
            return "workspace"
    raise SelfConfigError(f"scope must be 'global' or 'workspace', not {scope!r}")


def _required_id(hook_id: object) -> str:
    if not isinstance(hook_id, str) or not hook_id.strip():
        raise SelfConfigError("id: must be a non-empty string")
    return hook_id


def _view(hook: Hook, *, trusted: bool) -> HookView:
    return HookView(
        id=hook.explicit_id,
        name=hook.name,
        scope=hook.scope,
        dialect=hook.dialect,
        event=hook.config_event,
        matcher=hook.matcher if hook.matcher is not None else JsonMatcher(),
        match=hook.match,
        if_rule=hook.if_rule,
        description=hook.description,
        source=hook.source,
        runs=hook.runs,
        trusted=trusted,
        mode=hook.mode,
    )


# -- the tools ---------------------------------------------------------------------------------
class HooksTools:
    """The ``hooks`` self-configuration tools for one workspace and one global config dir.

    Built with :meth:`for_engine` (writes make that engine rebuild its table) or directly (the
    CLI: files only). Each tool is an async method; :meth:`call` runs one by name with a model's
    JSON arguments and returns a JSON-ready dict (``{"error": ...}`` for a failed call).
    """

    def __init__(
        self,
        *,
        workspace: str | os.PathLike[str] | None,
        config_dir: str | os.PathLike[str] | None = None,
        engine: HookEngine | None = None,
    ) -> None:
        self.workspace = Path(workspace) if workspace is not None else None
        self.config_dir = Path(config_dir) if config_dir is not None else global_config_dir()
        self.engine = engine
        self._locks: dict[str, trio.Lock] = {}

    @classmethod
    def for_engine(cls, engine: HookEngine) -> HooksTools:
        table = engine.table
        return cls(workspace=table.workspace or None, config_dir=table.global_dir, engine=engine)

    # paths
    @property
    def global_path(self) -> Path:
        return global_config_files(self.config_dir)[1]

    @property
    def workspace_path(self) -> Path | None:
        return workspace_config_files(self.workspace)[1] if self.workspace is not None else None

    def path_for(self, scope: object) -> tuple[EditScope, Path]:
        """The normalized scope and its hooks.json; raises :class:`SelfConfigError`."""
        s = _normalize_scope(scope)
        if s == "global":
            return s, self.global_path
        path = self.workspace_path
        if path is None:
            raise SelfConfigError("there is no workspace; use scope 'global'")
        return s, path

    def _load(self) -> HookTable:
        return load_table(workspace=self.workspace, config_dir=self.config_dir)

    async def _table(self) -> HookTable:
        if self.engine is not None:
            return self.engine.table
        return await trio.to_thread.run_sync(self._load)

    # tools
    async def list_hooks(self) -> HookList:
        """The effective hooks, paths and counts. A checkpoint; cancellable."""
        table = await self._table()
        counts = {"system": 0, "global": 0, "workspace": 0, "extra": 0}
        for hook in table.hooks:
            if hook.scope in counts:
                counts[hook.scope] += 1
        views = [_view(h, trusted=True) for h in table.hooks if h.scope != "api"]
        views += [_view(h, trusted=False) for h in table.untrusted]
        ws_path = self.workspace_path
        return HookList(
            hooks=views,
            global_path=str(self.global_path),
            workspace_path=str(ws_path) if ws_path is not None else None,
            counts=counts,
            workspace_trust=table.trust.state if table.trust is not None else None,
            problems=[str(p) for p in table.problems],
        )

    async def validate_hook(self, hook: object) -> Validation:
        """Validate a candidate spec; writes nothing. A checkpoint only in name (pure CPU)."""
        await trio.lowlevel.checkpoint()
        return validate(hook)

    async def upsert_hook(self, scope: object, hook: object) -> UpsertResult:
        """Create or replace the hook with ``hook["id"]`` in ``scope``'s hooks.json, then ask
        the engine to rebuild. Raises :class:`SelfConfigError` (nothing written) for a bad scope,
        an invalid hook, a missing id, or a malformed target file.

        A checkpoint. On cancel the write has happened in full or not at all (the worker thread
        is waited for); the rebuild may not have happened.
        """
        check = validate(hook)
        if not check.valid:
            raise SelfConfigError(f"invalid hook: {check.error}")
        if check.id is None:
            raise SelfConfigError("id: is required to upsert a hook (it names it for later)")
        assert isinstance(hook, dict)
        hook_id, raw = check.id, dict(hook)
        s, path = self.path_for(scope)

        def edit(doc: dict[str, Any]) -> _Edit:
            hooks = doc.get("hooks") or []
            kept = [e for e in hooks if not _has_id(e, hook_id)]
            doc["hooks"] = [*kept, raw]
            disabled = doc.get("disabled") or []
            if hook_id in disabled:
                doc["disabled"] = [d for d in disabled if d != hook_id]
            return _Edit(removed=len(hooks) - len(kept))

        done = await self._edit(s, path, edit)
        reloaded, table = await self._after_write()
        active = any(h.explicit_id == hook_id and h.scope == s for h in table.hooks)
        return UpsertResult(
            id=hook_id,
            scope=s,
            path=str(path),
            replaced=done.removed,
            active=active,
            reloaded=reloaded,
            trust_recorded=done.trust_recorded,
            note=None if active else self._why_inactive(s, table),
        )

    async def remove_hook(self, scope: object, hook_id: object) -> RemoveResult:
        """Remove every entry with ``hook_id`` from ``scope``'s hooks.json; in workspace scope
        also put the id on the file's ``disabled`` list (even when nothing was removed), so a
        global hook of that id stays off. Then ask the engine to rebuild.

        A checkpoint. On cancel the write has happened in full or not at all.
        """
        hid = _required_id(hook_id)
        s, path = self.path_for(scope)

        def edit(doc: dict[str, Any]) -> _Edit:
            hooks = doc.get("hooks") or []
            kept = [e for e in hooks if not _has_id(e, hid)]
            if len(kept) != len(hooks):
                doc["hooks"] = kept
            disabled = doc.get("disabled") or []
            add_marker = s == "workspace" and hid not in disabled
            if add_marker:
                doc["disabled"] = [*disabled, hid]
            removed = len(hooks) - len(kept)
            return _Edit(
                removed=removed, disabled=s == "workspace", changed=bool(removed) or add_marker
            )

        done = await self._edit(s, path, edit)
        reloaded = False
        if done.written:
            reloaded, _ = await self._after_write()
        return RemoveResult(
            id=hid,
            scope=s,
            path=str(path),
            removed=done.removed > 0,
            disabled=done.disabled,
            written=done.written,
            reloaded=reloaded,
            trust_recorded=done.trust_recorded,
        )

    async def get_hook(self, hook_id: str) -> tuple[HookView, dict[str, Any] | None] | None:
        """The effective (or untrusted) hook with this id or name, and its entry as written in
        its hooks.json (None for TOML hooks). A checkpoint."""
        listing = await self.list_hooks()
        for view in listing.hooks:
            if hook_id in (view.id, view.name):
                entry = None
                if view.dialect == "json" and view.id is not None:
                    path = Path(view.source)
                    doc = await trio.to_thread.run_sync(read_hooks_file, path)
                    entry = next((e for e in doc.get("hooks") or [] if _has_id(e, view.id)), None)
                return view, entry
        return None

    async def call(self, name: str, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """Run the tool ``name`` with a model's ``arguments``; a JSON-ready dict back.

        A failed call (unknown tool, bad arguments, refused write) is ``{"error": "..."}``, never
        an exception. A checkpoint; cancellation propagates.
        """
        try:
            if arguments is not None and not isinstance(arguments, Mapping):
                raise SelfConfigError("the arguments must be a JSON object")
            args = dict(arguments or {})
            result: msgspec.Struct
            if name == "list_hooks":
                result = await self.list_hooks()
            elif name == "validate_hook":
                result = await self.validate_hook(args.get("hook"))
            elif name == "upsert_hook":
                result = await self.upsert_hook(args.get("scope"), args.get("hook"))
            elif name == "remove_hook":
                result = await self.remove_hook(args.get("scope"), args.get("id"))
            else:
                raise SelfConfigError(f"unknown tool {name!r}")
        except SelfConfigError as exc:
            return {"error": str(exc)}
        out: dict[str, Any] = msgspec.to_builtins(result)
        return out

    # the write path
    def _lock(self, path: Path) -> trio.Lock:
        return self._locks.setdefault(str(path), trio.Lock())

    async def _edit(self, scope: EditScope, path: Path, edit: _EditFn) -> _Edit:
        async with self._lock(path):
            return await trio.to_thread.run_sync(self._edit_sync, scope, path, edit)

    def _edit_sync(self, scope: EditScope, path: Path, edit: _EditFn) -> _Edit:
        try:
            if scope == "workspace":
                # A repository's own .agents/hooks.json: never written (or read for editing)
                # through a symlink, nor in a .agents directory that leads out of the workspace.
                assert self.workspace is not None
                check_write_target(path, self.workspace)
                return self._edit_locked(scope, path, edit)
            # realpath: a symlinked global hooks.json (dotfiles) keeps its link; the target is
            # replaced. The user made that link.
            return self._edit_locked(scope, Path(os.path.realpath(path)), edit)
        except UnsafeWriteError as exc:
            raise SelfConfigError(f"refusing to write the {scope} hooks: {exc}") from None
        except OSError as exc:
            raise SelfConfigError(f"cannot write {path}: {exc.strerror or exc}") from None

    def _edit_locked(self, scope: EditScope, path: Path, edit: _EditFn) -> _Edit:
        confine = self.workspace if scope == "workspace" else None
        path.parent.mkdir(parents=True, exist_ok=True)
        with _directory_lock(path.parent):
            if confine is not None:
                check_write_target(path, confine)  # again, now that the directory is locked
            doc = read_hooks_file(path)
            before = encode_hooks_file(doc) if path.exists() else None
            done = edit(doc)
            if not done.changed:
                return done
            data = _check_limits(path, doc)
            if data == before:
                return done
            # Writing through these tools is the user's consent (yolop: "the act of writing the
            # config is consent"), but only to *this* change: content that was not trusted
            # before stays untrusted.
            consent = scope == "workspace" and self._workspace_trust() in ("none", "trusted")
            write_file_atomic(path, data, confine_to=confine)
            recorded = self._record_workspace_trust() if consent else False
            return msgspec.structs.replace(done, written=True, trust_recorded=recorded)

    def _workspace_trust(self) -> str:
        trust = self._load().trust
        return trust.state if trust is not None else "none"

    def _record_workspace_trust(self) -> bool:
        """Record trust for the workspace as it is now; False when there is nothing to trust or
        its content cannot be trusted (a file it names cannot be hashed), or trust cannot see
        what a command runs and the user named no files for it (theirs to decide, with
        ``triohooks trust --cover``)."""
        assert self.workspace is not None
        trust = self._load().trust
        if trust is None or not trust.files or trust.digest.startswith(UNTRUSTABLE):
            return False
        if trust.unseen and not trust.covers:
            return False
        record_trust(self.config_dir, self.workspace, trust)
        return True

    async def _after_write(self) -> tuple[bool, HookTable]:
        if self.engine is None:
            return False, await self._table()
        report = await self.engine.reload()
        return report.applied, self.engine.table

    def _why_inactive(self, scope: EditScope, table: HookTable) -> str:
        if scope == "workspace" and table.trust is not None and table.trust.state != "trusted":
            return (
                f"written, but workspace hooks are {table.trust.state} (not trusted), so they do "
                "not run: the user must review them and run `triohooks trust`"
            )
        if scope == "global":
            return (
                "written, but a workspace hook or 'disabled' entry with the same id takes "
                "precedence (or disabled_contributions mutes it)"
            )
        return "written, but the loader did not apply it; see list_hooks problems"


def validate(hook: object) -> Validation:
    """Validate one candidate spec with the JSON dialect's own rules (no id needed)."""
    try:
        spec = validate_hook_spec(hook)
    except EntryError as exc:
        message = str(exc)
        if exc.field and not message.startswith(f"{exc.field}:"):
            message = f"{exc.field}: {message}"
        return Validation(valid=False, error=message, field=exc.field)
    return Validation(valid=True, id=spec.id, event=spec.event)
