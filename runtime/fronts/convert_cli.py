"""``triohooks convert``: an agent's hooks in another agent's format, or in triohooks' TOML
dialect, with a report of everything the target cannot express (:mod:`triohooks.agents.convert`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from triohooks.agents.spec import AGENTS, home_dir


def add_convert_command(sub: Any) -> None:
    from triohooks.agents.convert import TARGETS

    p = sub.add_parser(
        "convert", help="write an agent's hooks in another agent's format (or triohooks')"
    )
    p.add_argument("--from", dest="source", required=True, choices=AGENTS, help="the agent")
    p.add_argument("--to", dest="target", required=True, choices=TARGETS, help="the format")
    p.add_argument(
        "file",
        nargs="?",
        type=Path,
        default=None,
        help="the settings file (default: the agent's, of --scope)",
    )
    p.add_argument("--scope", choices=("project", "user"), default="project")
    p.add_argument("--workspace", type=Path, default=None, help="the project (default: cwd)")
    p.add_argument("--out", type=Path, default=None, help="write here (default: stdout)")
    p.add_argument("--force", action="store_true", help="overwrite --out")


def cmd_convert(args: argparse.Namespace) -> int:
    from triohooks.agents.adopt import settings_path
    from triohooks.agents.convert import ConvertError, convert, read_source

    if args.source == args.target:
        print(f"triohooks convert: --from and --to are both {args.source}", file=sys.stderr)
        return 1
    workspace = (args.workspace or Path.cwd()).resolve()
    path = args.file or settings_path(args.source, args.scope, home=home_dir(), project=workspace)
    try:
        hooks, where = read_source(args.source, path)
    except ConvertError as exc:
        print(f"triohooks convert: {exc}", file=sys.stderr)
        return 1
    text, report = convert(args.source, args.target, hooks, where)
    for line in report:
        print(f"report: {line}", file=sys.stderr)
    print(
        f"triohooks convert: {where} -> {args.target}: "
        + (f"{len(report)} report line(s) above" if report else "nothing left out"),
        file=sys.stderr,
    )
    if args.out is None:
        sys.stdout.write(text)
        return 0
    if args.out.exists() and not args.force:
        print(f"triohooks convert: {args.out}: already there (--force overwrites)", file=sys.stderr)
        return 1
    try:
        args.out.write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"triohooks convert: cannot write {args.out}: {exc.strerror}", file=sys.stderr)
        return 1
    print(f"wrote {args.out}", file=sys.stderr)
    return 0
