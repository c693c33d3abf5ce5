"""The tamper alarm: every way an agent could switch triohooks off, or run hooks beside it.

Owns: once triohooks is installed for an agent (a ``triohooks-hooks.json`` beside a settings
file it installed into, at the user or the project level), finding, at every level the agent
reads, what would keep its catch-alls from running or run hooks triohooks never sees, as one
line each (``docs/security.md`` "Tamper alarm", ``docs/agents.md`` "The tamper alarm"):

- the installed files themselves: a hook planted beside a catch-all, a catch-all removed or
  pointed elsewhere (:func:`installed_changes`), another hooks file in Copilot CLI's hooks
  directory, or one beyond the 64 triohooks reads;
- the switches each agent honours, from every level it reads (trusted by triohooks or not:
  the agent honours them either way): Claude Code's ``disableAllHooks`` (and in managed
  settings ``allowManagedHooksOnly``, ``strictPluginOnlyCustomization``), its settings'
  ``env.CLAUDE_CODE_SIMPLE``; Gemini CLI's and Qwen Code's ``hooksConfig.enabled`` and a
  ``hooksConfig.disabled`` naming a catch-all; Qwen Code's and Copilot CLI's
  ``disableAllHooks``; Codex's ``[features] hooks``, its review record of each catch-all
  (``[hooks.state]``: missing, changed or ``enabled = false``) and its managed
  ``allow_managed_hooks_only``;
- hooks beside the catch-alls in the other places of an installed level: Codex's ``[hooks]``
  in ``config.toml``, Copilot CLI's settings files, Claude Code plugins enabled there, Gemini
  CLI and Qwen Code extensions.

Closed world: a file in those places that is there but cannot be read or understood is an
alarm saying what was not understood, never a pass. Levels nobody installed into are the
user's own: their hooks are not judged, only their switches (they turn the installed guards
off). Must not run hooks or write files; reads are bounded (:func:`read_json_object`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import msgspec

from triohooks.config.model import ConfigProblem
from triohooks.config.paths import UnreadableFileError, read_regular_file

from . import undo
from .config import (
    INSTALL_LEVELS,
    MAX_HOOK_FILES,
    MAX_SETTINGS_BYTES,
    AgentHook,
    catch_all_scope,
    is_ours,
    parse_hooks,
    read_json_object,
)
from .convert import hooks_of
from .routing import routed_events
from .spec import SPECS, AgentName, Level, adopted_path, managed_path, scope_of_level

if TYPE_CHECKING:
    from .config import _LevelRead as LevelRead
#: ``isEnvTruthy`` in Claude Code: these values (any case, trimmed) turn a variable on.
_TRUTHY: Final = frozenset({"1", "true", "yes", "on"})
#: Claude Code settings ``env`` variables that change which hooks run: bare mode (no hook at
#: all), and plugins read from another directory than ``~/.claude/plugins``.
_CLAUDE_ENV: Final = {
    "CLAUDE_CODE_SIMPLE": "turns off every hook (bare mode), triohooks' catch-alls included",
    "CLAUDE_CODE_PLUGIN_CACHE_DIR": "makes Claude Code load plugins from a directory triohooks "
    "does not read",
    "CLAUDE_CODE_PLUGIN_SEED_DIR": "makes Claude Code load plugins from a directory triohooks "
    "does not read",
}
#: Gemini CLI's ``hooksConfig`` keys (settingsSchema.ts): anything else is not understood.
_HOOKS_CONFIG_KEYS: Final = frozenset({"enabled", "disabled", "notifications"})
#: Settings files that hold only switches triohooks does not otherwise read (lowest precedence).
_SYSTEM_DEFAULTS: Final[Mapping[str, Path]] = {
    "gemini": Path("/etc/gemini-cli/system-defaults.json"),
    "qwen": Path("/etc/qwen-code/system-defaults.json"),
}
#: Codex: the system config and the managed requirements (``allow_managed_hooks_only``).
_CODEX_SYSTEM: Final = Path("/etc/codex/config.toml")
#: (The requirements file itself is :func:`.spec.managed_path`'s, read where Codex reads it.)
_CODEX_LEGACY_MANAGED: Final = Path("/etc/codex/managed_config.toml")
#: Extensions (Gemini CLI, Qwen Code): their manifest and install record (a ``link`` install
#: names the directory it runs from). Qwen Code also loads Claude Code plugins as extensions.
_EXTENSIONS: Final[Mapping[str, tuple[tuple[str, ...], str]]] = {
    "gemini": (("gemini-extension.json",), ".gemini-extension-install.json"),
    "qwen": (("qwen-extension.json", ".claude-plugin/plugin.json"), ".qwen-extension-install.json"),
}
_CLAUDE_MANIFEST: Final = (".claude-plugin/plugin.json",)
_ALL_OFF: Final = "turns off every hook, triohooks' catch-alls included"
#: Agents whose settings files may hold comments (Gemini CLI strips them before parsing; Qwen
#: Code is its fork; Copilot CLI writes its own files with them).
_COMMENTS: Final = frozenset({"gemini", "qwen", "copilot"})


def alarms(
    agent: AgentName,
    reads: Sequence[LevelRead],
    *,
    project: Path | None,
    home: Path,
    config_dir: Path | None = None,
) -> tuple[str, ...]:
    """Every tamper alarm for ``agent``'s table, in a stable order; () when triohooks is not
    installed for it here (no ``triohooks-hooks.json`` beside a user or project settings
    file). ``config_dir``: where the install records are (what each install routed)."""
    ours = {r.level.path for r in reads if _installed(agent, r.level)}
    if not ours:
        return ()
    reads = [_with_comments(agent, r) for r in reads]
    installed = [r for r in reads if r.level.path in ours]
    scopes = {r.level.name for r in installed}
    names = _catch_all_names(agent, installed) if agent in ("gemini", "qwen") else {}
    said: list[Iterable[str]] = [
        t for r in reads for t in (_unread(agent, r), switch_alarms(agent, r.level, r.doc, names))
    ]
    records = _install_records(config_dir)
    said.append(
        c
        for r in installed
        if (c := installed_changes(agent, r, _routed_by_install(records, r.level.path))) is not None
    )
    if agent in _SYSTEM_DEFAULTS:
        said.append(_system_defaults(agent, names))
    if agent in _EXTENSIONS:
        said.append(_extensions(agent, scopes, project, home))
    if agent == "claude":
        said.append(_claude_plugins(reads, scopes, home))
    elif agent == "codex":
        said.append(_codex(installed, project, home))
    elif agent == "copilot":
        said += [_copilot(r, r.level.path in ours, project, home) for r in reads]
    found = dict.fromkeys(text for texts in said for text in texts)
    return tuple(found)


def _with_comments(agent: AgentName, r: LevelRead) -> LevelRead:
    """``r`` with its settings file read as the agent reads it, when that takes comments
    (triohooks' own reader takes plain JSON)."""
    if agent not in _COMMENTS or r.doc is not None or not os.path.lexists(r.level.path):
        return r
    doc, _ = _read(r.level.path, SPECS[agent].display, comments=True)
    return msgspec.structs.replace(r, doc=doc) if doc is not None else r


def _installed(agent: AgentName, level: Level) -> bool:
    """Whether ``install`` wrote into this level (its ``triohooks-hooks.json`` is there, read or
    not: one that cannot be read is itself an alarm)."""
    return level.name in INSTALL_LEVELS and os.path.lexists(adopted_path(agent, level.path))


def _install_records(config_dir: Path | None) -> undo.Records:
    """The install records (:mod:`.undo`); none when there is no config dir or they cannot be
    read (uninstall says that one; here the alarm falls back to what every install routes)."""
    if config_dir is None:
        return {}
    try:
        return undo.read_records(config_dir)
    except undo.RecordsError:
        return {}


def _routed_by_install(records: undo.Records, settings: Path) -> tuple[str, ...] | None:
    record = records.get(str(settings), {}).get(str(settings))
    return record.routed if record is not None else None


def installed_changes(
    agent: AgentName, r: LevelRead, routed: tuple[str, ...] | None = None
) -> str | None:
    """For a settings file triohooks installed into, what changed in its ``hooks`` that
    triohooks did not write -- a hook beside the catch-alls, a catch-all removed or pointed
    elsewhere -- or None when they are still exactly ours, one for every event the install
    routed (``routed``, from its record) or, without a record (a teammate's committed install),
    for every event any install routes (each event of the adopted hooks, and those
    :data:`.routing.ALWAYS` routes). A catch-all the rule wants and the install did not write
    is stale routing, not tampering (:mod:`.reroute`). A file that is there but cannot be read
    is said by :func:`_unread`."""
    where = str(r.level.path)
    if r.doc is None and os.path.lexists(r.level.path):
        return None
    hooks = hooks_of(r.doc, agent) if r.doc is not None else None
    if not isinstance(hooks, dict):
        return f"{where}: its hooks are gone (triohooks' catch-alls were removed)"
    parsed = parse_hooks(agent, r.level, where, hooks, [], keep_ours=True)
    foreign = [h for h in parsed if not is_ours(h)]
    if foreign:
        return _beside(where, foreign, SPECS[agent].display)
    adopted = r.adopted
    scope = scope_of_level(r.level.name)
    needed = (
        routed
        if routed is not None
        else routed_events(agent, adopted if isinstance(adopted, dict) else {}, frozenset(), scope)
    )
    missing = sorted(set(needed) - {h.event for h in parsed})
    if missing:
        return (
            f"{where}: no triohooks catch-all for {', '.join(missing)} (removed, or written by an "
            "older triohooks)"
        )
    level = r.level.name
    unnamed = sorted({h.event for h in parsed if catch_all_scope(h) != level})
    if unnamed:
        return (
            f"{where}: triohooks catch-all(s) for {', '.join(unnamed)} that do not say they are "
            f"its {level} scope's (written by an older triohooks, or copied): beside an "
            f"install at another scope each hook would run twice; run `triohooks {agent} "
            f"install --scope {level}` again"
        )
    return None


def _beside(where: str, hooks: Sequence[AgentHook], display: str) -> str:
    shown = ", ".join(f"{h.where} ({h.type})" for h in hooks[:3])
    more = f" and {len(hooks) - 3} more" if len(hooks) > 3 else ""
    return (
        f"{where}: hook(s) triohooks did not write beside its catch-alls: {shown}{more}; "
        f"{display} runs them itself"
    )


def _unseen(path: object, why: str, display: str) -> str:
    return (
        f"{path}: {why}; triohooks cannot read it, {display} may: what it turns off or runs "
        "beside triohooks is unseen"
    )


def _not_understood(path: object, what: str, display: str) -> str:
    return (
        f"{path}: {what} is not understood by triohooks; {display} may read it as turning "
        "your guards off"
    )


def _unread(agent: AgentName, r: LevelRead) -> Iterator[str]:
    """The level's settings file and its ``triohooks-hooks.json``: there, but not read."""
    display = SPECS[agent].display
    said = {name for name, _ in r.unreadable}
    for name, why in r.unreadable:
        if name in (str(r.level.path), str(adopted_path(agent, r.level.path))):
            yield _unseen(name, why, display)
    moved_to = adopted_path(agent, r.level.path)
    for path, value in ((r.level.path, r.doc), (moved_to, r.adopted)):
        if value is None and os.path.lexists(path) and str(path) not in said:
            yield from _read(path, display, comments=agent in _COMMENTS)[1]  # says why


# -- switches --------------------------------------------------------------------------------


def _catch_all_names(agent: AgentName, installed: Sequence[LevelRead]) -> dict[str, str]:
    """The catch-alls of the installed levels by the name Gemini CLI disables a hook by (its
    ``name``, else its command), with the event each is for."""
    names: dict[str, str] = {}
    for r in installed:
        hooks = hooks_of(r.doc, agent) if r.doc is not None else None
        if not isinstance(hooks, dict):
            continue
        for hook in parse_hooks(agent, r.level, str(r.level.path), hooks, [], keep_ours=True):
            if is_ours(hook) and hook.command is not None:
                names.setdefault(hook.name or hook.command, hook.event)
    return names


def switch_alarms(
    agent: AgentName,
    level: Level,
    doc: Mapping[str, Any] | None,
    names: Mapping[str, str] | None = None,
) -> Iterator[str]:
    """What in one settings document of ``level`` turns the installed catch-alls off, as the
    agent reads it (or could, for a value triohooks does not understand); ``names``: the
    catch-alls by the name Gemini CLI disables a hook by."""
    if doc is None:
        return
    where, display = level.path, SPECS[agent].display
    if agent in ("claude", "qwen", "copilot"):
        yield from _flag(doc, "disableAllHooks", where, display, _disable_all(agent, level))
    if agent == "claude":
        yield from _claude_switches(level, doc, display)
    if agent in ("gemini", "qwen"):
        yield from _hooks_config(doc, where, display, names or {})


def _disable_all(agent: AgentName, level: Level) -> str:
    if agent == "claude" and level.name != "managed":
        return "turns off every hook but managed ones, triohooks' catch-alls included"
    return _ALL_OFF


def _flag(
    doc: Mapping[str, Any],
    key: str,
    where: object,
    display: str,
    effect: str,
    *,
    off: bool = True,
    label: str | None = None,
) -> Iterator[str]:
    """A boolean switch: the value ``off`` has ``effect``; ``not off`` (or no value) is fine;
    anything else is not understood."""
    label = label or key
    if key not in doc or doc[key] is (not off):
        return
    if doc[key] is off:
        yield f"{where}: {label}: {str(off).lower()} {effect}; {display} honours it from this file"
    else:
        yield _not_understood(where, f"{label} = {doc[key]!r}", display)


def _claude_switches(level: Level, doc: Mapping[str, Any], display: str) -> Iterator[str]:
    where = level.path
    if level.name == "managed" and not _managed_install("claude", doc):
        # The managed-only policy keys (Claude Code reads them there); not a managed install's
        # own (its catch-alls are the managed hooks that run).
        yield from _flag(
            doc,
            "allowManagedHooksOnly",
            where,
            display,
            "runs managed hooks only, not triohooks' catch-alls",
        )
        strict = doc.get("strictPluginOnlyCustomization")
        if strict is True or (isinstance(strict, list) and "hooks" in strict):
            yield (
                f"{where}: strictPluginOnlyCustomization locks hooks to managed settings and "
                f"plugins: {display} skips the catch-alls in your settings files"
            )
        elif strict not in (None, False) and not (
            isinstance(strict, list) and all(isinstance(s, str) for s in strict)
        ):
            yield _not_understood(where, f"strictPluginOnlyCustomization = {strict!r}", display)
    env, odd = _object(doc, "env", where, display)
    yield from odd
    for name, effect in _CLAUDE_ENV.items():
        if name not in env:
            continue
        value = env[name]
        if not isinstance(value, str):
            yield _not_understood(where, f"env.{name} = {value!r}", display)
        elif name != "CLAUDE_CODE_SIMPLE" or value.strip().lower() in _TRUTHY:
            yield f"{where}: env.{name} = {value!r} {effect}"


def _object(
    doc: Mapping[str, Any], key: str, where: object, display: str
) -> tuple[dict[str, Any], list[str]]:
    """``doc[key]`` when it is an object ({} when absent), and the alarm when it is something
    else."""
    value = doc.get(key)
    if value is None or isinstance(value, dict):
        return value or {}, []
    return {}, [_not_understood(where, f"{key} (not an object)", display)]


def _hooks_config(
    doc: Mapping[str, Any], where: object, display: str, names: Mapping[str, str]
) -> Iterator[str]:
    """Gemini CLI's (and Qwen Code's) ``hooksConfig``: ``enabled: false`` turns every hook
    off; ``disabled`` lists hooks by name (a command hook's name is its command)."""
    config, odd = _object(doc, "hooksConfig", where, display)
    yield from odd
    if not config:
        return
    unknown = sorted(set(config) - _HOOKS_CONFIG_KEYS)
    if unknown:
        yield _not_understood(where, f"hooksConfig.{', hooksConfig.'.join(unknown)}", display)
    yield from _flag(
        config, "enabled", where, display, _ALL_OFF, off=False, label="hooksConfig.enabled"
    )
    disabled = config.get("disabled")
    if disabled is None:
        return
    if not isinstance(disabled, list) or not all(isinstance(d, str) for d in disabled):
        yield _not_understood(where, "hooksConfig.disabled (not a list of names)", display)
        return
    off = sorted({names[d] for d in disabled if d in names})
    if off:
        yield (
            f"{where}: hooksConfig.disabled names triohooks' catch-all for {', '.join(off)}: "
            f"{display} skips it"
        )


def _system_defaults(agent: AgentName, names: Mapping[str, str]) -> Iterator[str]:
    path = _SYSTEM_DEFAULTS[agent]
    doc, unread = _read(path, SPECS[agent].display, comments=True)
    yield from unread
    yield from switch_alarms(agent, Level("system-defaults", path, False), doc, names)


def _read(
    path: Path, display: str, what: str = "", *, comments: bool = False
) -> tuple[dict[str, Any] | None, list[str]]:
    """A JSON settings file in one of the watched places (``comments``: as the agent reads it,
    ``//`` and ``/* */`` comments allowed), and its alarm when it is there but cannot be read
    (missing: None and no alarm)."""
    problems: list[ConfigProblem] = []
    unreadable: list[tuple[str, str]] = []
    doc = read_json_object(path, problems, unreadable)
    if doc is None and problems and not unreadable and comments:
        try:
            value = msgspec.json.decode(
                _strip_comments(read_regular_file(path, MAX_SETTINGS_BYTES))
            )
        except (OSError, UnreadableFileError, msgspec.DecodeError, RecursionError):
            value = None
        if isinstance(value, dict):
            return value, []
    if doc is None and problems:
        why = unreadable[0][1] if unreadable else problems[0].message
        return None, [_unseen(path, f"{what}{why}", display)]
    return doc, []


def _strip_comments(data: bytes) -> bytes:
    """``data`` with its ``//`` and ``/* */`` comments outside strings blanked out (what
    strip-json-comments does before Gemini CLI parses a settings file)."""
    out = bytearray(data)
    i, n, in_string = 0, len(data), False
    while i < n:
        c = data[i : i + 1]
        if in_string:
            if c == b"\\":
                i += 1
            elif c == b'"':
                in_string = False
        elif c == b'"':
            in_string = True
        elif data.startswith(b"//", i) or data.startswith(b"/*", i):
            close = b"\n" if data[i + 1 : i + 2] == b"/" else b"*/"
            end = data.find(close, i + 2)
            end = n if end < 0 else end + (2 if close == b"*/" else 0)
            out[i:end] = b" " * (end - i)
            i = end
            continue
        i += 1
    return bytes(out)


# -- plugins and extensions ------------------------------------------------------------------


def _hook_files(directory: Path, manifests: Sequence[str]) -> tuple[list[Path], list[object]]:
    """The files a plugin or extension directory keeps hooks in (``hooks/hooks.json``, and the
    files its manifest names) and the hooks its manifest holds inline."""
    files = [directory / "hooks" / "hooks.json"]
    inline: list[object] = []
    for manifest in manifests:
        doc = read_json_object(directory / manifest, [])
        spec = doc.get("hooks") if doc is not None else None
        for item in spec if isinstance(spec, list) else [] if spec is None else [spec]:
            if isinstance(item, str):
                files.append(Path(item) if os.path.isabs(item) else directory / item)
            else:
                inline.append(item)
    return files, inline


def _dir_alarms(
    agent: AgentName, directory: Path, manifests: Sequence[str], what: str
) -> Iterator[str]:
    """Hooks triohooks did not write in a plugin or extension directory (``what`` names it),
    and what of it cannot be read."""
    display = SPECS[agent].display
    if directory.suffix == ".zip":
        yield _unseen(directory, f"{what}, zipped: triohooks does not open it", display)
        return
    found: list[tuple[str, object]] = []
    for manifest in manifests:
        _, unread = _read(directory / manifest, display, f"{what}: ", comments=agent in _COMMENTS)
        yield from unread
    files, inline = _hook_files(directory, manifests)
    found += [(f"{directory / manifests[0]} (inline)", item) for item in inline]
    for path in files:
        doc, unread = _read(path, display, f"{what}: ", comments=agent in _COMMENTS)
        yield from unread
        if doc is not None:
            found.append((str(path), doc.get("hooks")))
    for source, hooks in found:
        problems: list[ConfigProblem] = []
        level = Level("plugin", Path(source), False)
        foreign = parse_hooks(agent, level, source, hooks, problems)  # without ours
        if problems:
            yield _not_understood(source, f"{what}'s hooks ({problems[0]})", display)
        elif foreign:
            yield _beside(f"{source}: {what}", foreign, display)


def _claude_plugins(reads: Sequence[LevelRead], scopes: set[str], home: Path) -> Iterator[str]:
    """Claude Code plugins enabled in an installed scope (``enabledPlugins`` of the user's
    settings for a user install, of the project's and the local settings for a project
    install) that carry hooks triohooks did not write; a plugin whose files triohooks cannot
    find or read is an alarm too. Our own plugin (``triohooks claude plugin``) holds only
    catch-alls and passes."""
    levels = ({"user"} if "user" in scopes else set()) | (
        {"project", "local"} if "project" in scopes else set()
    )
    enabled: dict[str, Path] = {}
    display = SPECS["claude"].display
    for r in reads:
        if r.level.name not in levels or r.doc is None:
            continue
        plugins, odd = _object(r.doc, "enabledPlugins", r.level.path, display)
        yield from odd
        for pid, value in plugins.items():
            if value is not False and "@" in pid:  # Claude Code loads only plugin@marketplace
                enabled.setdefault(pid, r.level.path)
    if not enabled:
        return
    index = _PluginIndex(home)
    yield from index.unread
    for pid, where in sorted(enabled.items()):
        directories, inline = index.locate(pid)
        what = f"plugin {pid} (enabled in {where})"
        if not directories and not inline:
            yield (
                f"{where}: enables plugin {pid}, whose files triohooks cannot find (no installPath "
                f"in {index.installed}, no local source in its marketplace): {display} may run "
                "hooks from it unseen"
            )
        for hooks in inline:
            problems: list[ConfigProblem] = []
            level = Level("plugin", index.installed, False)
            foreign = parse_hooks("claude", level, what, hooks, problems)
            if problems or foreign:
                yield f"{where}: {what}: its marketplace entry holds hooks; {display} runs them"
        for directory in directories:
            yield from _dir_alarms("claude", directory, _CLAUDE_MANIFEST, what)


class _PluginIndex:
    """Where Claude Code finds an installed plugin's files: ``installed_plugins.json`` (each
    plugin's ``installPath``), and for a plugin whose marketplace names a local directory,
    that directory and the marketplace entry's own hooks (``known_marketplaces.json`` ->
    ``<marketplace>/.claude-plugin/marketplace.json``)."""

    def __init__(self, home: Path) -> None:
        self.root = home / ".claude" / "plugins"
        self.installed = self.root / "installed_plugins.json"
        self.known = self.root / "known_marketplaces.json"
        self.unread: list[str] = []
        display = SPECS["claude"].display
        doc, unread = _read(self.installed, display)
        self.unread += unread
        plugins = doc.get("plugins") if doc is not None else None
        self.paths: dict[str, list[Path]] = {}
        for pid, records in (plugins or {}).items() if isinstance(plugins, dict) else ():
            for record in records if isinstance(records, list) else [records]:
                path = record.get("installPath") if isinstance(record, dict) else None
                if isinstance(path, str) and path:
                    self.paths.setdefault(pid, []).append(Path(path))
        known, unread = _read(self.known, display)
        self.unread += unread
        self.markets: dict[str, Path] = {}
        for name, entry in (known or {}).items():
            location = entry.get("installLocation") if isinstance(entry, dict) else None
            if isinstance(location, str) and location:
                self.markets[name] = Path(location)

    def marketplace_file(self, market: str) -> Path | None:
        location = self.markets.get(market)
        if location is None:
            return None
        base = location if location.is_dir() else location.parent
        return base / ".claude-plugin" / "marketplace.json"

    def locate(self, pid: str) -> tuple[list[Path], list[object]]:
        """The directories ``pid``'s hooks may come from, and its marketplace entry's hooks."""
        name, _, market = pid.rpartition("@")
        directories = [p for p in self.paths.get(pid, []) if p.suffix == ".zip" or p.is_dir()]
        inline: list[object] = []
        manifest = self.marketplace_file(market)
        if manifest is None:
            return directories, inline
        doc, unread = _read(manifest, SPECS["claude"].display)
        self.unread += [u for u in unread if u not in self.unread]
        entries = doc.get("plugins") if doc is not None else None
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, dict) or entry.get("name") != name:
                continue
            source = entry.get("source")
            if isinstance(source, str):
                local = manifest.parent.parent / source
                if local.is_dir():
                    directories.append(local)
            if isinstance(entry.get("hooks"), dict):
                inline.append(entry["hooks"])
        return directories, inline

    def files(self) -> list[Path]:
        """Every file the index and the plugins it names keep hooks in (for staleness)."""
        out = [self.installed, self.known]
        for market in self.markets:
            manifest = self.marketplace_file(market)
            if manifest is not None:
                out.append(manifest)
        for pid in self.paths:
            for directory in self.locate(pid)[0]:
                out += [directory / m for m in _CLAUDE_MANIFEST]
                out += _hook_files(directory, _CLAUDE_MANIFEST)[0]
        return out


def _extension_dirs(
    agent: AgentName, scopes: set[str], project: Path | None, home: Path
) -> list[Path]:
    """The extensions directories of the installed scopes (Qwen Code also loads a project's)."""
    bases = [home / SPECS[agent].project_dir / "extensions"] if "user" in scopes else []
    if agent == "qwen" and "project" in scopes and project is not None:
        bases.append(project / SPECS[agent].project_dir / "extensions")
    return bases


def _extensions(
    agent: AgentName, scopes: set[str], project: Path | None, home: Path
) -> Iterator[str]:
    """Gemini CLI and Qwen Code extensions of an installed scope that carry hooks triohooks did
    not write (whether the extension is enabled or not: triohooks does not follow their
    enablement rules), or whose files it cannot read."""
    manifests, record = _EXTENSIONS[agent]
    display = SPECS[agent].display
    for base in _extension_dirs(agent, scopes, project, home):
        for extension in _subdirectories(base):
            meta, unread = _read(extension / record, display, comments=True)
            yield from unread
            target = extension
            if meta is not None and meta.get("type") == "link":
                source = meta.get("source")
                if not isinstance(source, str) or not source:
                    yield _not_understood(extension / record, "a link install's source", display)
                    continue
                target = Path(source)
            yield from _dir_alarms(agent, target, manifests, f"extension {extension.name}")


def _subdirectories(base: Path) -> list[Path]:
    try:
        with os.scandir(base) as entries:
            return sorted(base / e.name for e in entries if e.is_dir())
    except OSError:
        return []


# -- Codex -----------------------------------------------------------------------------------


def _codex_configs(project: Path | None, home: Path) -> list[tuple[str, Path]]:
    out = [("user", home / ".codex" / "config.toml"), ("system", _CODEX_SYSTEM)]
    if project is not None:
        out.append(("project", project / ".codex" / "config.toml"))
    return out


def _codex(installed: Sequence[LevelRead], project: Path | None, home: Path) -> Iterator[str]:
    """Codex's ``config.toml`` files: ``[features] hooks = false`` (top level or a profile) in
    any, hooks in ``[hooks]`` of an installed level's, the review record of every catch-all
    (``[hooks.state]`` in the user's: Codex runs an unreviewed hook nowhere, and one with
    ``enabled = false`` never), and the managed ``allow_managed_hooks_only``."""
    display = SPECS["codex"].display
    scopes = {r.level.name for r in installed}
    state: object = None
    for scope, path in _codex_configs(project, home):
        doc, unread = _toml(path, display)
        yield from unread
        if doc is None:
            if scope == "user" and not unread:
                state = {}  # no config.toml: nothing is recorded as reviewed
            continue
        yield from _codex_features(doc, path, display)
        hooks = doc.get("hooks")
        if hooks is not None and not isinstance(hooks, dict):
            yield _not_understood(path, "[hooks] (not a table)", display)
            continue
        hooks = hooks or {}
        if scope == "user":
            state = hooks.get("state", {})
        events = {k: v for k, v in hooks.items() if k != "state"}
        if events and scope in scopes:
            problems: list[ConfigProblem] = []
            level = Level(scope, path, scope == "project")
            foreign = parse_hooks("codex", level, str(path), events, problems)  # without ours
            if problems:
                yield _not_understood(path, f"[hooks] ({problems[0]})", display)
            elif foreign:
                yield _beside(f"{path} [hooks]", foreign, display)
    yield from _codex_reviews(installed, state, home / ".codex" / "config.toml")
    for path in (managed_path("codex"), _CODEX_LEGACY_MANAGED):
        doc, unread = _toml(path, display)
        yield from unread
        if doc is not None:
            if not _managed_install("codex", doc):
                yield from _flag(
                    doc,
                    "allow_managed_hooks_only",
                    path,
                    display,
                    "runs managed hooks only, not triohooks' catch-alls",
                )
            yield from _codex_features(doc, path, display)


def _managed_install(agent: AgentName, doc: Mapping[str, Any]) -> bool:
    """Whether a managed document is a managed install's (its hooks are all triohooks')."""
    from .managed import installed_here  # (managed plans with adopt, which reads config)

    return installed_here(agent, doc)


def _toml(path: Path, display: str) -> tuple[dict[str, Any] | None, list[str]]:
    """A Codex TOML file, and its alarm when it is there but cannot be read (missing: None and
    no alarm)."""
    import tomllib

    try:
        return tomllib.loads(read_regular_file(path, MAX_SETTINGS_BYTES).decode("utf-8")), []
    except FileNotFoundError:
        return None, []
    except UnreadableFileError as exc:
        return None, [_unseen(path, exc.reason, display)]
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as exc:
        why = "nested too deeply" if isinstance(exc, RecursionError) else exc
        return None, [_unseen(path, f"not valid TOML: {why}", display)]


def _codex_features(doc: Mapping[str, Any], path: Path, display: str) -> Iterator[str]:
    """``[features] hooks = false`` (or the older ``codex_hooks``), at the top level and in
    every ``[profiles.<name>.features]``."""
    tables: list[tuple[str, object]] = [("features", doc.get("features"))]
    profiles = doc.get("profiles")
    if isinstance(profiles, dict):
        tables += [
            (f"profiles.{name}.features", p.get("features"))
            for name, p in profiles.items()
            if isinstance(p, dict)
        ]
    for where, features in tables:
        if features is None:
            continue
        if not isinstance(features, dict):
            yield _not_understood(path, f"[{where}] (not a table)", display)
            continue
        for key in ("hooks", "codex_hooks"):
            yield from _flag(
                features, key, path, display, _ALL_OFF, off=False, label=f"[{where}] {key}"
            )


def _codex_reviews(installed: Sequence[LevelRead], state: object, config: Path) -> Iterator[str]:
    """Each catch-all recorded as reviewed in the user's ``config.toml``, as Codex checks it:
    its ``trusted_hash`` the hash of the catch-all as written, and not ``enabled = false``."""
    from .codex_trust import hook_states

    display = SPECS["codex"].display
    if state is None:
        return  # config.toml unreadable: said already
    if not isinstance(state, dict):
        yield _not_understood(config, "[hooks.state] (not a table)", display)
        return
    for r in installed:
        hooks = hooks_of(r.doc, "codex") if r.doc is not None else None
        try:
            expected = hook_states(str(r.level.path), hooks) if isinstance(hooks, dict) else {}
        except ValueError:
            continue  # malformed: said by installed_changes
        off, unknown, unreviewed = [], [], []
        for key, digest in expected.items():
            got = state.get(key)
            enabled = got.get("enabled", True) if isinstance(got, dict) else True
            event = key.rsplit(":", 3)[-3]
            if enabled is False:
                off.append(event)
            elif enabled is not True:
                unknown.append(f"{event} (enabled = {enabled!r})")
            elif not isinstance(got, dict) or got.get("trusted_hash") != digest:
                unreviewed.append(event)
        source = r.level.path
        if off:
            yield (
                f"{config}: [hooks.state] enabled = false for the catch-all(s) of {source} "
                f"({', '.join(off)}): {display} skips them"
            )
        if unknown:
            yield _not_understood(
                config, f"[hooks.state] of {source}: {', '.join(unknown)}", display
            )
        if unreviewed:
            yield (
                f"{config}: the catch-all(s) of {source} are not recorded as reviewed "
                f"({', '.join(unreviewed)}): {display} skips them without a word; run "
                "`triohooks codex install` again"
            )


# -- Copilot CLI -----------------------------------------------------------------------------


def _copilot_settings(level: Level, project: Path | None, home: Path) -> list[Path]:
    """The settings files Copilot CLI reads inline ``hooks`` and ``disableAllHooks`` from, at
    ``level`` (its repository settings, and the Claude Code ones it also reads)."""
    if level.name == "user":  # (config.json is Copilot's own state: "managed automatically")
        return [home / ".copilot" / "settings.json"]
    if project is None:
        return []
    github, claude = project / ".github" / "copilot", project / ".claude"
    return [
        github / "settings.json",
        github / "settings.local.json",
        claude / "settings.json",
        claude / "settings.local.json",
    ]


def _copilot(r: LevelRead, installed: bool, project: Path | None, home: Path) -> Iterator[str]:
    """One level of Copilot CLI: every ``*.json`` of its hooks directory (Copilot runs them
    all) and its settings files: ``disableAllHooks`` in any, files beyond the 64 triohooks
    reads and files it cannot read; in an installed level, hooks in any file but triohooks'
    own."""
    display = SPECS["copilot"].display
    directory = r.level.path.parent
    try:
        with os.scandir(directory) as entries:
            names = sorted(e.name for e in entries if e.name.endswith(".json"))
    except FileNotFoundError:
        names = []
    except OSError as exc:
        yield _unseen(directory, f"cannot list it ({exc.strerror or exc})", display)
        names = []
    others = [n for n in names if n != r.level.path.name]
    if len(others) > MAX_HOOK_FILES:
        rest = others[MAX_HOOK_FILES:]
        shown = ", ".join(rest[:3]) + (f" and {len(rest) - 3} more" if len(rest) > 3 else "")
        yield (
            f"{directory}: {len(rest)} hooks file(s) beyond the {MAX_HOOK_FILES} triohooks reads "
            f"({shown}); {display} runs them unseen"
        )
    beside: list[str] = []
    files = [directory / n for n in others[:MAX_HOOK_FILES]]
    for path in files + _copilot_settings(r.level, project, home):
        doc, unread = _read(path, display, comments=path.parent.name != ".claude")
        yield from unread
        if doc is None:
            continue
        yield from _flag(doc, "disableAllHooks", path, display, _disable_all("copilot", r.level))
        if not installed or doc.get("hooks") is None:
            continue
        problems: list[ConfigProblem] = []
        agent: AgentName = "claude" if path.parent.name == ".claude" else "copilot"
        level = Level(r.level.name, path, r.level.project)
        foreign = parse_hooks(agent, level, str(path), doc["hooks"], problems)  # without ours
        if problems:
            yield _not_understood(path, f"its hooks ({problems[0]})", display)
        elif foreign and path.parent == directory:
            beside.append(path.name)
        elif foreign:
            yield _beside(str(path), foreign, display)
    if beside:
        more = f" and {len(beside) - 3} more" if len(beside) > 3 else ""
        yield (
            f"{directory}: hooks file(s) triohooks did not write beside its own: "
            f"{', '.join(beside[:3])}{more}; {display} runs them itself"
        )


# -- what makes a table stale ----------------------------------------------------------------


def watched(agent: AgentName, project: Path | None, home: Path) -> list[Path]:
    """The files besides the levels' own that :func:`alarms` reads, so a change in any makes
    the agent's table stale (:func:`triohooks.agents.config.candidate_files`)."""
    out: list[Path] = []
    if agent in _SYSTEM_DEFAULTS:
        out.append(_SYSTEM_DEFAULTS[agent])
    if agent == "claude":
        out += _PluginIndex(home).files()
    elif agent == "codex":
        out += [path for _, path in _codex_configs(project, home)] + [
            managed_path("codex"),
            _CODEX_LEGACY_MANAGED,
        ]
    elif agent == "copilot":
        for scope in ("user", "project"):
            out += _copilot_settings(Level(scope, home, scope == "project"), project, home)
    if agent in _EXTENSIONS:
        manifests, record = _EXTENSIONS[agent]
        for base in _extension_dirs(agent, {"user", "project"}, project, home):
            out.append(base)  # an extension added or removed
            for extension in _subdirectories(base):
                out += [extension / record, *(extension / m for m in manifests)]
                out += _hook_files(extension, manifests)[0]
    return out
