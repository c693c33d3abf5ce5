"""The ``triohooks`` command line."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    print("triohooks: not yet", file=sys.stderr)
    return 1
