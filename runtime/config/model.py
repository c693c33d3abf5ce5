"""The one hook model both config dialects load into, and the immutable hook table.

A :class:`Hook` is plain frozen data: what runs (its handler), when (event, filters), how it is
read (dialect) and where it came from (scope, file, index). The table is a snapshot: the loader
builds a new one and swaps it; an event in flight keeps the one it started with.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, Literal, NamedTuple

import msgspec

from triohooks.match.matchers import JsonMatcher

from .freshness import Signature, unchanged

Dialect = Literal["toml", "json", "python"]
#: What an event that workspace hooks trust holds back would have run for gets: the agent's
#: ``ask`` where the event has one (else a deny), a deny, or a warning only. The user's global
#: ``held_back`` setting chooses (docs/security.md).
HeldBack = Literal["ask", "deny", "warn"]
HELD_BACK_CHOICES: Final[tuple[HeldBack, ...]] = ("ask", "deny", "warn")
#: ``system``: the admin's tier (``$TRIOHOOKS_SYSTEM_DIR``), read first and beyond the reach of
#: every other scope (:mod:`.system_tier`).
Scope = Literal["system", "global", "workspace", "extra", "api"]
OnError = Literal["warn", "block", "allow"]
#: Whether a hook's decision is applied (``enforce``) or only computed, shown and audited as
#: ``would_block`` (``observe``): docs/design.md, "Observe mode".
Mode = Literal["enforce", "observe"]
MODES: Final[tuple[Mode, ...]] = ("enforce", "observe")

#: blitz default (HK-02).
TOML_DEFAULT_TIMEOUT_S: Final = 30.0
#: everruns defaults and limits.
JSON_DEFAULT_TIMEOUT_MS: Final = 5000
JSON_MIN_TIMEOUT_MS: Final = 100
JSON_MAX_TIMEOUT_MS: Final = 30000
#: Warm workers (``worker = true``): processes kept per hook when events overlap.
DEFAULT_WORKER_POOL: Final = 2
MAX_WORKER_POOL: Final = 16


class CommandHandler(msgspec.Struct, frozen=True, tag="command"):
    """``bash -c <command>`` in the workspace."""

    command: str


class ArgsHandler(msgspec.Struct, frozen=True, tag="args"):
    """A program run directly, no shell."""

    args: tuple[str, ...]


class HttpHandler(msgspec.Struct, frozen=True, tag="http"):
    """POST the event JSON to ``url``; a 2xx body is read like stdout."""

    url: str
    headers: tuple[tuple[str, str], ...] = ()
    allowed_env_vars: tuple[str, ...] = ()


class PromptHandler(msgspec.Struct, frozen=True, tag="prompt"):
    """A model judges the event against ``prompt``."""

    prompt: str
    model: str | None = None


#: An in-process hook: called with the event as plain data, returns a reply dict (the TOML
#: dialect's reply fields), a string (plain stdout), or None (no opinion).
PythonHookFunc = Callable[[Mapping[str, Any]], Awaitable[Mapping[str, Any] | str | None]]


class GuardHandler(msgspec.Struct, frozen=True, tag="builtin"):
    """A built-in guard (:mod:`triohooks.match.guards`), decided in process: ``builtin =
    "NAME"`` in TOML, ``{"type": "builtin", "name": ...}`` in JSON. ``params`` validated."""

    name: str
    params: tuple[tuple[str, Any], ...] = ()


class PythonHandler(msgspec.Struct, frozen=True, tag="python"):
    """An async Python callable registered through the engine API."""

    func: Any  # PythonHookFunc; typed Any so the Struct stays plain data
    #: An asyncio engine's hook: the asyncio coroutine function itself, which that engine
    #: awaits on its loop (``func`` is then its Trio-awaitable wrapper, for the post worker).
    asyncio_func: Any = None


Handler = CommandHandler | ArgsHandler | HttpHandler | PromptHandler | GuardHandler | PythonHandler


class Hook(msgspec.Struct, frozen=True, kw_only=True):
    #: Unique within a table: JSON ``user:<id>``, TOML ``<id>`` or ``<scope>:<event>[<index>]``.
    id: str
    #: What people read in messages ("hook <name> failed ...").
    name: str
    #: Canonical event this hook fires on.
    event: str
    #: The event name as written in the config (``turn_end``, ``pre_tool_use`` ...).
    config_event: str
    dialect: Dialect
    scope: Scope
    #: The file the hook came from ("" for API-registered hooks).
    source: str
    #: Position within its file's list for its event (TOML) or its ``hooks`` array (JSON).
    index: int
    handler: Handler
    timeout_s: float
    #: TOML: tool-name glob (Go path.Match); None or "" matches all.
    match: str | None = None
    #: TOML: permission rule text (``shell(git push)`` ...).
    if_rule: str | None = None
    #: JSON: restricted matcher.
    matcher: JsonMatcher | None = None
    #: TOML: a failure blocks.
    fail_closed: bool = False
    #: JSON: what an error means.
    on_error: OnError = "warn"
    #: JSON: extra environment applied last.
    env: tuple[tuple[str, str], ...] = ()
    #: ``observe``: the decision is computed, not enforced (:data:`Mode`).
    mode: Mode = "enforce"
    #: Command hooks: 0 runs a process per event; N >= 1 keeps warm worker processes (at most
    #: N, one request at a time each) that answer one line per event (docs/hook-protocol.md).
    worker: int = 0
    description: str | None = None
    #: The id as written in the config, if it had one.
    explicit_id: str | None = None
    #: Built once at load time so matching on the hot path does no parsing.
    compiled_if: Any = None
    compiled_matcher: Any = None

    @property
    def kind(self) -> str:
        tag = type(self.handler).__struct_config__.tag
        return str(tag)

    @property
    def runs(self) -> str:
        """A one-line description of what the hook runs."""
        h = self.handler
        if isinstance(h, CommandHandler):
            return h.command
        if isinstance(h, ArgsHandler):
            return " ".join(h.args)
        if isinstance(h, HttpHandler):
            return f"POST {h.url}"
        if isinstance(h, PromptHandler):
            return f"prompt: {h.prompt}" + (f" (model {h.model})" if h.model else "")
        if isinstance(h, GuardHandler):
            shown = ", ".join(f"{k}={v!r}" for k, v in h.params)
            return f"builtin: {h.name}" + (f" ({shown})" if shown else "")
        return f"python: {getattr(h.func, '__qualname__', repr(h.func))}"


def mode_problem(value: object) -> str | None:
    """Why ``value`` is not a hook's ``mode`` (:data:`MODES`), or None; both dialects and the
    engine API say it the same way."""
    if value in MODES:
        return None
    choices = " or ".join(f'"{m}"' for m in MODES)
    return f"must be {choices}, not {value!r}"


class _Clash:
    """A parameter given both beside the guard's name and in its ``params`` table."""

    def __init__(self, key: str) -> None:
        self.key = key


def merged_params(table: object, beside: Mapping[str, Any]) -> object:
    """A guard's parameters: those written beside its name, and those of a ``params`` table
    (the older spelling); a key in both is a clash :func:`guard_handler` reports."""
    if not beside:
        return table
    if table is None:
        return dict(beside)
    if not isinstance(table, dict):
        return table  # reported as not a table
    both = sorted(set(table) & set(beside))
    if both:
        return _Clash(both[0])
    return {**table, **beside}


def guard_handler(
    name: object,
    params: object,
    event: str,
    *,
    name_field: str,
    params_field: str,
    beside: frozenset[str] = frozenset(),
    beside_prefix: str = "",
) -> tuple[GuardHandler | None, list[tuple[str, str]]]:
    """A built-in guard's handler, and what is wrong with it as ``(field, message)`` pairs:
    the same rules in both dialects (the field names are theirs). ``beside``: the parameters
    written beside the guard's name (reported under their own name)."""
    from triohooks.match.guards import GUARD_EVENTS, GUARDS, check_params

    from .suggest import did_you_mean

    if not isinstance(name, str):
        return None, [(name_field, "must be the name of a built-in guard")]
    if name not in GUARDS:
        hint = did_you_mean(name, GUARDS)
        known = ", ".join(sorted(GUARDS))
        return None, [(name_field, f"unknown built-in guard {name!r}{hint} (known: {known})")]
    if event not in GUARD_EVENTS:
        where = " and ".join(sorted(GUARD_EVENTS))
        return None, [(name_field, f"a built-in guard reads tool calls: {where} only")]
    if isinstance(params, _Clash):
        where = f"{beside_prefix}{params.key}"
        return None, [(where, f"given twice: beside the name and in {params_field}")]
    if params is None:
        params = {}
    if not isinstance(params, dict):
        return None, [(params_field, "must be a table of the guard's parameters")]

    def field(key: str) -> str:
        if not key:
            return name_field
        return f"{beside_prefix}{key}" if key in beside else f"{params_field}.{key}"

    problems = [(field(key), message) for key, message in check_params(name, params)]
    if problems:
        return None, problems
    return GuardHandler(name, tuple(sorted((k, _frozen(v)) for k, v in params.items()))), []


def _frozen(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def worker_pool(raw: Mapping[str, Any], prefix: str = "") -> tuple[int, list[tuple[str, str]]]:
    """The pool size ``worker`` / ``worker_pool`` ask for (0: no worker), and what is wrong
    with them as ``(field, message)`` pairs; the same keys in both dialects."""
    problems: list[tuple[str, str]] = []
    worker = raw.get("worker", False)
    if not isinstance(worker, bool):
        problems.append((prefix + "worker", f"must be true or false, not {worker!r}"))
        worker = False
    pool = raw.get("worker_pool", DEFAULT_WORKER_POOL)
    if isinstance(pool, bool) or not isinstance(pool, int) or not 1 <= pool <= MAX_WORKER_POOL:
        problems.append(
            (prefix + "worker_pool", f"must be an integer 1..{MAX_WORKER_POOL}, not {pool!r}")
        )
        pool = DEFAULT_WORKER_POOL
    elif "worker_pool" in raw and not worker:
        problems.append((prefix + "worker_pool", "needs worker = true"))
    return (pool if worker else 0), problems


def location_name(name: str) -> str:
    """A user-written key (event, field) as it may appear in a problem's location: as is when
    printable, else quoted and escaped, so a key holding a line break or nothing at all cannot
    split or blank the ``file: event[index].field: message`` line.
    """
    return name if name and name.isprintable() else repr(name)


#: Longest command excerpt in a message.
EXCERPT: Final = 60


def excerpt(text: str) -> str:
    """``text`` on one line, at most :data:`EXCERPT` characters."""
    one = " ".join(text.split())
    return one if len(one) <= EXCERPT else one[: EXCERPT - 3] + "..."


class Command(NamedTuple):
    """A hook's command as it runs: bash text or an argv (no shell), the variables the hook
    config sets for it, and its own directory relative to the project (Copilot CLI's
    ``cwd``)."""

    run: str | tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None


def command_label(command: Command) -> str:
    """How a command is named in what trust says of it (and in :attr:`Cover.cwd_bound`)."""
    run = command.run
    return excerpt(run if isinstance(run, str) else " ".join(run))


class ConfigProblem(msgspec.Struct, frozen=True):
    """One thing wrong with a config file, located as precisely as we can."""

    file: str
    message: str
    event: str | None = None
    index: int | None = None
    field: str | None = None
    #: "error" stops a strict (TOML) load; "warning" is a skipped JSON entry or file.
    severity: Literal["error", "warning"] = "error"

    def __str__(self) -> str:
        where = ""
        if self.event is not None:
            where = self.event
            if self.index is not None:
                where += f"[{self.index}]"
        if self.field:
            where = f"{where}.{self.field}" if where else self.field
        return f"{self.file}: {where}: {self.message}" if where else f"{self.file}: {self.message}"


class TrustInfo(msgspec.Struct, frozen=True, kw_only=True):
    """Trust state of a workspace's hooks, and exactly what it covers (see
    :mod:`triohooks.config.trust`)."""

    state: Literal["none", "new", "trusted", "changed", "declined"]
    #: The trust store's key (the canonical workspace, ``#dialect`` for an agent's files).
    workspace: str
    digest: str = ""
    files: tuple[str, ...] = ()
    #: ``(file, its own hash)`` for each covered file.
    parts: tuple[tuple[str, str], ...] = ()
    #: ``(file, why)`` for what could not be hashed (a FIFO, an oversized file): not trustable.
    refused: tuple[tuple[str, str], ...] = ()
    #: Which directories trust covers whole, and why.
    notes: tuple[str, ...] = ()
    #: ``(command, why)`` for what trust cannot see run (``make``, ``python -c`` ...): held
    #: back until the user names the files it runs (``covers``).
    unseen: tuple[tuple[str, str], ...] = ()
    #: The paths the user named for trust to hash (``triohooks trust --cover``).
    covers: tuple[str, ...] = ()
    #: Hook commands read with paths relative to the workspace root: held back for an event
    #: that would run them in another directory.
    cwd_bound: tuple[str, ...] = ()
    #: Where the workspace keeps hook code (for messages).
    hooks_dir: str = ""
    #: When ``changed``: the files whose content differs from what was trusted.
    changed: tuple[str, ...] = ()
    #: ``(file, text)`` of each hook config as parsed, kept with the record it is trusted as
    #: (to show what changed next time); not shown by ``list``.
    texts: tuple[tuple[str, str], ...] = ()

    @property
    def runs(self) -> bool:
        """Whether the hooks it covers may run (trusted, or nothing to trust)."""
        return self.state in ("none", "trusted")


class HookTable(msgspec.Struct, frozen=True):
    """An immutable snapshot of every effective hook, in run order, plus how it was built."""

    hooks: tuple[Hook, ...] = ()
    #: Workspace hooks held back because their content is not trusted.
    untrusted: tuple[Hook, ...] = ()
    problems: tuple[ConfigProblem, ...] = ()
    trust: TrustInfo | None = None
    disabled_contributions: tuple[str, ...] = ()
    global_dir: str = ""
    workspace: str = ""
    files: tuple[str, ...] = ()
    #: TOML ``[judge]`` settings for the built-in prompt-hook judge.
    judge: tuple[tuple[str, str], ...] = ()
    generation: int = 0
    #: ``hooks`` grouped by event, in run order (built once by the loader: the per-event
    #: path must not scan the whole table). Use :func:`index_by_event`.
    by_event: dict[str, tuple[Hook, ...]] = {}
    #: What the table was built from: the signature of every path it read or looked for
    #: (config files, the trust store, everything trust covers), taken before reading
    #: (:mod:`.freshness`: a table is used only while :meth:`is_current`).
    inputs: tuple[Signature, ...] = ()
    #: The user's ``held_back`` setting (their global config; default ``ask``).
    held_back: HeldBack = "ask"
    #: The system tier's directory (:func:`~triohooks.config.paths.system_config_dir`).
    system_dir: str = ""

    def is_current(self) -> bool:
        """Whether nothing the table was built from changed since (a ``stat`` and an
        ``lstat`` per path)."""
        return unchanged(self.inputs)

    def for_event(self, event: str) -> tuple[Hook, ...]:
        if self.by_event or not self.hooks:
            return self.by_event.get(event, ())
        return tuple(h for h in self.hooks if h.event == event)

    @property
    def errors(self) -> tuple[ConfigProblem, ...]:
        return tuple(p for p in self.problems if p.severity == "error")


def index_by_event(hooks: tuple[Hook, ...]) -> dict[str, tuple[Hook, ...]]:
    grouped: dict[str, list[Hook]] = {}
    for hook in hooks:
        grouped.setdefault(hook.event, []).append(hook)
    return {event: tuple(group) for event, group in grouped.items()}


class ConfigError(Exception):
    """A strict config load failed; ``problems`` says where and why."""

    def __init__(self, problems: tuple[ConfigProblem, ...] | list[ConfigProblem]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


def config_error_text(exc: ConfigError) -> str:
    """The reason an event gets when the config changed and no longer loads."""
    first = str(exc.problems[0]) if exc.problems else "it has errors"
    more = f" (and {len(exc.problems) - 1} more)" if len(exc.problems) > 1 else ""
    return (
        f"the triohooks config changed and does not load, so nothing was run: {first}{more}; "
        "fix it (`triohooks validate` shows every error)"
    )
