"""``triohooks hooks list | get ID | set FILE | remove ID``: the self-configuration tools on the
command line.

Owns only argument parsing and printing; every read and write goes through
:class:`triohooks.fronts.selfconfig.HooksTools`, the same code the agent's tools run. ``set`` and
``remove`` default to the global scope (the person at the terminal configures their own hooks);
``--scope workspace`` edits ``<workspace>/.agents/hooks.json``. Exit codes: 0 done, 1 an error
(one line on stderr, never a traceback). It must not touch ``hooks.toml``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import msgspec
import trio

from triohooks.config.json_dialect import MAX_FILE_BYTES

from .selfconfig import HookList, HooksTools, HookView, SelfConfigError

_EXIT_OK = 0
_EXIT_ERROR = 1


def add_hooks_command(sub: Any) -> None:
    """Register ``hooks`` on the ``triohooks`` subparsers object ``sub``."""
    p = sub.add_parser(
        "hooks", help="list, show, set or remove JSON-dialect hooks (edits hooks.json only)"
    )
    actions = p.add_subparsers(dest="hooks_action", required=True, parser_class=type(p))

    def common(q: argparse.ArgumentParser) -> None:
        q.add_argument("--workspace", type=Path, default=None, help="default: current directory")
        q.add_argument(
            "--config-dir", type=Path, default=None, help="default: $TRIOHOOKS_CONFIG_DIR"
        )

    q = actions.add_parser("list", help="effective hooks of both scopes")
    common(q)
    q.add_argument("--json", action="store_true", help="machine-readable output")
    q = actions.add_parser("get", help="one hook (its view and its hooks.json entry) as JSON")
    q.add_argument("id")
    q.add_argument(
        "--show-secrets",
        action="store_true",
        help="print env values, commands and URLs as written (default: secrets masked)",
    )
    common(q)
    q = actions.add_parser("set", help="create or replace the hook in FILE ('-': stdin) by id")
    q.add_argument("file")
    q.add_argument("--scope", default="global", help="global (default) or workspace")
    common(q)
    q = actions.add_parser("remove", help="remove a hook by id (workspace: also disable it)")
    q.add_argument("id")
    q.add_argument("--scope", default="global", help="global (default) or workspace")
    common(q)


def _tools(args: argparse.Namespace) -> HooksTools:
    ws: Path = args.workspace if args.workspace is not None else Path.cwd()
    if not ws.is_dir():
        raise SelfConfigError(f"workspace {ws} is not a directory")
    return HooksTools(workspace=ws, config_dir=args.config_dir)


def _dump(value: Any) -> None:
    sys.stdout.write(msgspec.json.format(msgspec.json.encode(value), indent=2).decode() + "\n")


def _print_list(listing: HookList) -> None:
    print(f"global:    {listing.global_path} ({listing.counts['global']} hook(s))")
    if listing.workspace_path is not None:
        trust = f", {listing.workspace_trust}" if listing.workspace_trust else ""
        print(f"workspace: {listing.workspace_path} ({listing.counts['workspace']} hook(s){trust})")
    if not listing.hooks:
        print("no hooks configured")
    for view in listing.hooks:
        matcher = {k: v for k, v in msgspec.to_builtins(view.matcher).items() if v is not None}
        filters = ", ".join(f"{k}={v}" for k, v in matcher.items())
        if view.match:
            filters = f"match={view.match}"
        held = "" if view.trusted else "  (NOT RUN: workspace not trusted)"
        print(f"{view.id or view.name}  [{view.scope} {view.dialect}] {view.event}{held}")
        if filters:
            print(f"    when {filters}")
        if view.description:
            print(f"    {view.description}")
        print(f"    from {view.source}")
    for problem in listing.problems:
        print(f"problem: {problem}", file=sys.stderr)


def _masked(view: HookView, entry: dict[str, Any] | None) -> dict[str, Any]:
    """``hooks get`` output with what looks like a secret masked: ``env`` values under a secret
    name (KEY, TOKEN, SECRET, PASSWORD, Authorization ...) whole, and secret-looking parts
    (``sk-...``, ``ghp_...``, bearer tokens, ``TOKEN=...``, URL passwords) of env values,
    commands, URLs and descriptions."""
    from .cli import mask_named, mask_text

    shown = msgspec.structs.replace(
        view, runs=mask_text(view.runs) or "", description=mask_text(view.description)
    )
    out_entry: dict[str, Any] | None = None
    if entry is not None:
        out_entry = dict(entry)
        if isinstance(out_entry.get("description"), str):
            out_entry["description"] = mask_text(out_entry["description"])
        executor = out_entry.get("executor")
        if isinstance(executor, dict):
            executor = dict(executor)
            if isinstance(executor.get("command"), str):
                executor["command"] = mask_text(executor["command"])
            if isinstance(executor.get("env"), dict):
                executor["env"] = mask_named(executor["env"])
            out_entry["executor"] = executor
    return {"hook": shown, "entry": out_entry}


def _read_hook(file: str) -> object:
    # Bounded (a hook spec bigger than a whole hooks.json cannot be valid), but any kind of
    # file: `hooks set <(generate-spec)` reads a pipe, as the user asked.
    try:
        if file == "-":
            data = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)
        else:
            with open(file, "rb") as f:
                data = f.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise SelfConfigError(f"cannot read {file}: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise SelfConfigError(f"{file}: a hook spec is at most {MAX_FILE_BYTES} bytes")
    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise SelfConfigError(f"{file}: not valid JSON: {exc}") from None


async def _run(args: argparse.Namespace) -> int:
    tools = _tools(args)
    action = args.hooks_action
    if action == "list":
        listing = await tools.list_hooks()
        if args.json:
            _dump(listing)
        else:
            _print_list(listing)
    elif action == "get":
        found = await tools.get_hook(args.id)
        if found is None:
            raise SelfConfigError(f"no hook {args.id!r} (see `triohooks hooks list`)")
        view, entry = found
        if args.show_secrets:
            _dump({"hook": view, "entry": entry})
        else:
            _dump(_masked(view, entry))
    elif action == "set":
        result = await tools.upsert_hook(args.scope, _read_hook(args.file))
        verb = "replaced" if result.replaced else "added"
        print(f"{verb} hook {result.id} in {result.scope} scope: {result.path}")
        if result.note:
            print(f"note: {result.note}", file=sys.stderr)
    else:
        removed = await tools.remove_hook(args.scope, args.id)
        if removed.removed:
            print(f"removed hook {removed.id} from {removed.path}")
        else:
            print(f"no hook {removed.id} in {removed.path}")
        if removed.disabled:
            print(f"{removed.id} is disabled in this workspace")
    return _EXIT_OK


def cmd_hooks(args: argparse.Namespace) -> int:
    """Run ``triohooks hooks <action>``; returns the exit code."""
    try:
        return trio.run(_run, args)
    except SelfConfigError as exc:
        print(f"triohooks: {exc}", file=sys.stderr)
        return _EXIT_ERROR
