"""``triohooks <agent> install --managed [--out DIR]``: the catch-alls in the agent's managed form.

An administrator delivers one file to every machine (an MDM, Ansible, Chef, Jamf ...) and the
agent reads it for every user, above the user's and the project's settings
(:data:`.spec.MANAGED` says where, per agent and platform). What a managed install writes
there is the catch-all routing a plugin ships (:func:`.adopt.catch_all`, named no scope, every
event: a fleet's users' hooks are not known here), in the agent's managed format:

- Claude Code: ``managed-settings.json`` with the catch-alls as its ``hooks`` and
  ``allowManagedHooksOnly: true`` (a user's or project's own hooks no longer run beside them;
  triohooks runs the user's triohooks hooks, and Claude Code's managed ones, through them);
- Codex: ``requirements.toml`` with the catch-alls in its ``[hooks]`` requirement
  (``managed_dir``: the file's own directory, which exists wherever the file does) and
  ``allow_managed_hooks_only = true``; Codex runs managed hooks unreviewed;
- Gemini CLI, Qwen Code: the system ``settings.json`` (which overrides the user's and the
  project's settings; neither agent has a managed-only switch, so their own hooks still run;
  Gemini CLI reads it only root-owned, in directories only root can write);
- Cursor: the enterprise ``hooks.json``.

Every catch-all runs :data:`.spec.PORTABLE_RELAY`: nothing of the installing user's home, the
relay found per user at run time (the user's built client, else ``triohooks-relay`` on PATH),
and where there is none, a block that says so (exit 2: every agent then refuses the call).

An existing file there keeps what is not ours (an organisation's other policy keys); one whose
hooks (or Codex's ``[hooks]`` / ``allow_managed_hooks_only``) are not triohooks' is refused.
Beside the file goes ``triohooks-managed.json``, the manifest: where the file is to be
delivered, and what the install changed in it (an :class:`.undo.Record`), from which
``uninstall --managed`` takes out exactly that and nothing else (with ``--out``, a
``README-triohooks.md`` for the administrator too). Pure planning (:func:`plan`); the
front writes (:func:`write`), so ``--dry-run`` shows the same change.
"""

from __future__ import annotations

import errno
import json
import os
import tomllib
from pathlib import Path
from typing import Any, Final

import msgspec

from triohooks.config.paths import (
    UnsafeWriteError,
    check_write_target,
    write_file_atomic,
)

from . import undo
from .adopt import AdoptError, FileChange, catch_all, read_existing
from .config import as_group, is_ours, parse_hooks
from .spec import MANAGED, MANAGED_ROOT_VAR, SPECS, AgentName, Level, managed_path

#: The manifest beside the managed file: what the install wrote, for uninstall.
MANIFEST_NAME: Final = "triohooks-managed.json"
#: The administrator's notes ``--out`` writes beside the files.
README_NAME: Final = "README-triohooks.md"
#: What the catch-alls are labelled with (they belong to no settings level).
SOURCE: Final = "triohooks managed install"


class Manifest(msgspec.Struct, frozen=True, kw_only=True):
    agent: str
    #: The managed file's name, and where the agent reads it (Linux, macOS).
    file: str
    deliver_to: dict[str, str]
    #: The agent events routed to triohooks.
    routed: tuple[str, ...]
    #: What the install changed in the file (:mod:`.undo`).
    record: undo.Record


class ManagedPlan(msgspec.Struct, frozen=True):
    agent: AgentName
    #: The managed file.
    path: str
    changes: tuple[FileChange, ...]
    routes: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = ()
    #: It writes the system path (not ``--out``): a failed write says how to get privileges.
    system: bool = True


def target(agent: AgentName, out: Path | None) -> Path:
    """The managed file a managed install writes: in ``out``, else where the agent reads it."""
    if agent not in MANAGED:
        raise AdoptError(
            f"{SPECS[agent].display} has no managed (system-wide) settings to install into; "
            f"install per user (`triohooks {agent} install --scope user`); nothing changed"
        )
    return out / MANAGED[agent].name if out is not None else managed_path(agent)


def routing(agent: AgentName) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The catch-alls of a managed install, by event (the plugin's: no scope, every event)."""
    routed, routes, _ = catch_all(
        agent,
        {},
        source=SOURCE,
        scope="project",  # the portable relay: nothing of this user's home
        transport="relay",
        port=0,
        named=False,
        own=None,
    )
    return routed, routes


def plan(agent: AgentName, out: Path | None = None, *, uninstall: bool = False) -> ManagedPlan:
    """Install (or with ``uninstall``, take out) the managed catch-alls at :func:`target`."""
    path = target(agent, out)
    manifest_path = path.with_name(MANIFEST_NAME)
    for file in (path, manifest_path):
        try:
            check_write_target(file, path.parent)
        except UnsafeWriteError as exc:
            raise AdoptError(f"{exc}{_ADVICE if out is None else ''}") from None
    before = _read(path)
    manifest = _manifest(manifest_path)
    base = before
    if manifest is not None and before is not None:
        restored = undo.undo(manifest.record, before)
        if restored == undo.NOT_MINE:
            raise AdoptError(
                f"{path}: what triohooks wrote there is no longer there as written (edited "
                f"since?); {manifest_path} cannot take it out: fix the file by hand, then "
                "remove the manifest; nothing changed"
            )
        base = restored
    elif manifest is not None:
        base = None  # the file is gone: nothing of ours is left in it
    readme = path.with_name(README_NAME)
    if uninstall:
        if manifest is None:
            raise AdoptError(
                f"{manifest_path}: not found; {path} was not installed by `triohooks {agent} "
                "install --managed` here; nothing changed"
            )
        changes = [
            FileChange(str(path), _bytes(before), _bytes(base)),
            FileChange(str(manifest_path), read_existing(manifest_path), None),
        ]
        if out is not None and readme.exists():
            changes.append(FileChange(str(readme), read_existing(readme), None))
        return ManagedPlan(agent, str(path), _changed(changes), system=out is None)
    routed, routes = routing(agent)
    after = _with_catch_alls(agent, path, base, routed, managed_dir=_delivered(agent).parent)
    record = undo.track(base, after)
    assert record is not None  # (track returns None only for a refresh)
    form = MANAGED[agent]
    doc = Manifest(
        agent=agent,
        file=form.name,
        deliver_to={
            "linux": str(Path(form.linux) / form.name),
            "macos": str(Path(form.macos) / form.name),
        },
        routed=tuple(event for event, _ in routes),
        record=record,
    )
    changes = [
        FileChange(str(path), _bytes(before), after.encode("utf-8")),
        FileChange(
            str(manifest_path),
            read_existing(manifest_path),
            msgspec.json.format(msgspec.json.encode(doc), indent=2) + b"\n",
            shown=False,
        ),
    ]
    if out is not None:
        changes.append(FileChange(str(readme), read_existing(readme), _readme(agent).encode()))
    notes = []
    if agent in ("gemini", "qwen"):
        notes.append(
            f"{SPECS[agent].display} has no managed-only switch: users' and projects' own "
            "hooks still run beside the catch-alls (docs/agents.md, Managed install)"
        )
    if agent == "gemini":
        notes.append(
            "Gemini CLI skips a system settings file that is not owned by root, or that it or "
            "a directory above it is writable by group or others: deliver it root-owned, 0644"
        )
    return ManagedPlan(
        agent, str(path), _changed(changes), tuple(routes), tuple(notes), system=out is None
    )


#: What to do when the system path cannot be written.
_ADVICE: Final = (
    "; the system path needs privileges: run as root (sudo), or use --out DIR and deliver the "
    "files with your MDM or configuration-management tool"
)


def write(managed: ManagedPlan) -> None:
    """Write a plan: the managed file first (world-readable: every user's agent reads it), then
    the manifest and notes; a removal last. A write that fails (no permission ...) raises
    :class:`.adopt.AdoptError` naming the file, the error and what to do."""
    ordered = sorted(managed.changes, key=lambda c: (c.after is None, c.path != managed.path))
    for change in ordered:
        path = Path(change.path)
        try:
            if change.after is None:
                path.unlink(missing_ok=True)
            else:
                path.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
                write_file_atomic(path, change.after, new_mode=0o644)
        except OSError as exc:
            code = errno.errorcode.get(exc.errno or 0, "no errno")
            advice = _ADVICE if managed.system else ""
            raise AdoptError(
                f"cannot write {exc.filename or path}: {exc.strerror or exc} ({code}){advice}"
            ) from None


def _delivered(agent: AgentName) -> Path:
    """Where the agent reads the file on the machine it ends on: not under
    ``$TRIOHOOKS_MANAGED_ROOT`` (an image being built is not where it runs)."""
    return managed_path(agent, {k: v for k, v in os.environ.items() if k != MANAGED_ROOT_VAR})


def _changed(changes: list[FileChange]) -> tuple[FileChange, ...]:
    return tuple(c for c in changes if c.before != c.after)


def _bytes(text: str | None) -> bytes | None:
    return text.encode("utf-8") if text is not None else None


def _read(path: Path) -> str | None:
    data = read_existing(path)
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise AdoptError(f"{path}: not UTF-8 text; nothing changed") from None


def _manifest(path: Path) -> Manifest | None:
    data = read_existing(path)
    if data is None:
        return None
    try:
        return msgspec.json.decode(data, type=Manifest)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise AdoptError(
            f"{path}: not a triohooks managed-install manifest ({exc}); nothing changed"
        ) from None


def _with_catch_alls(
    agent: AgentName, path: Path, base: str | None, routed: dict[str, Any], *, managed_dir: Path
) -> str:
    """``base`` (the file without anything of ours; None: no file) with the catch-alls in."""
    if MANAGED[agent].toml:
        return _codex_requirements(path, base, routed, managed_dir)
    doc: dict[str, Any] = {}
    if base is not None:
        try:
            doc = json.loads(base)
        except ValueError as exc:
            raise AdoptError(f"{path}: not valid JSON ({exc}); nothing changed") from None
        if not isinstance(doc, dict):
            raise AdoptError(f"{path}: must be a JSON object; nothing changed")
        if doc.get("hooks"):
            raise AdoptError(
                f"{path}: holds hooks of its own, which a managed install would replace: "
                "move them into triohooks' hooks (docs/agents.md, Managed install) or out of "
                "the file, then install again; nothing changed"
            )
    doc = {k: v for k, v in doc.items() if k != "hooks"}
    if SPECS[agent].flat_hooks:
        doc.setdefault("version", 1)
    if agent == "claude":
        doc["allowManagedHooksOnly"] = True
    doc["hooks"] = routed
    return json.dumps(doc, indent=2) + "\n"


def _codex_requirements(
    path: Path, base: str | None, routed: dict[str, Any], managed_dir: Path
) -> str:
    """Codex's ``requirements.toml``: the catch-alls as top-level dotted keys, first in the
    file (one block, before any table of the administrator's), the rest as it was."""
    text = base or ""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise AdoptError(f"{path}: not valid TOML ({exc}); nothing changed") from None
    theirs = [key for key in ("hooks", "allow_managed_hooks_only") if key in doc]
    if theirs:
        raise AdoptError(
            f"{path}: sets {' and '.join(theirs)} already, which a managed install would "
            "replace: take them out (or move those hooks into triohooks'), then install "
            "again; nothing changed"
        )
    lines = [
        "# triohooks managed install: `triohooks codex uninstall --managed` takes this out",
        "allow_managed_hooks_only = true",
        f"hooks.managed_dir = {_toml(str(managed_dir))}",
    ]
    for event, groups in routed.items():
        lines.append(f"hooks.{event} = {_toml(groups)}")
    block = "\n".join(lines) + "\n"
    return block + ("\n" + text if text else "")


def _toml(value: Any) -> str:
    """``value`` (JSON data: strings, numbers, lists, objects) as a TOML value, inline."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        inner = ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items())
        return "{ " + inner + " }"
    raise TypeError(f"no TOML for {value!r}")


def installed_here(agent: AgentName, doc: Any) -> bool:
    """Whether a managed document's hooks are all triohooks' catch-alls (a managed install)."""
    hooks = doc.get("hooks") if isinstance(doc, dict) else None
    if not isinstance(hooks, dict):
        return False
    events = {k: v for k, v in hooks.items() if k not in ("managed_dir", "windows_managed_dir")}
    if not events or not all(isinstance(groups, list) for groups in events.values()):
        return False
    source = str(managed_path(agent))
    level = Level("managed", Path(source), False)
    for event, groups in events.items():
        for entry in groups:
            group = as_group(agent, entry)
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list) or not handlers:
                return False
            for raw in handlers:
                one = {event: [{"hooks": [raw]}]}
                parsed = parse_hooks(agent, level, source, one, [], keep_ours=True)
                if len(parsed) != 1 or not is_ours(parsed[0]):
                    return False
    return True


def _readme(agent: AgentName) -> str:
    form, display = MANAGED[agent], SPECS[agent].display
    linux, macos = Path(form.linux) / form.name, Path(form.macos) / form.name
    only = {
        "claude": "With `allowManagedHooksOnly: true`, Claude Code runs no user or project hook "
        "of its own beside these: triohooks runs the users' triohooks hooks through them.\n",
        "codex": "With `allow_managed_hooks_only = true`, Codex runs no user or project hook "
        "of its own beside these; it runs managed hooks without a review.\n",
    }.get(agent, f"{display} has no managed-only switch: users' own hooks still run too.\n")
    return (
        f"# triohooks managed install for {display}\n\n"
        f"Deliver `{form.name}` (and `{MANIFEST_NAME}` beside it) to\n\n"
        f"- Linux: `{linux}`\n- macOS: `{macos}`\n\n"
        "owned by root, mode 0644, with your MDM or configuration-management tool.\n"
        f"{display} reads it for every user. Each event runs `triohooks-relay`: install "
        "triohooks on every machine so that `triohooks-relay` is on every user's PATH\n"
        "(where it is not, each call is refused with a message saying so).\n"
        f"{only}\n"
        f"To take it out again: `triohooks {agent} uninstall --managed` on the machine, or "
        "delete both files.\n"
    )
