"""``python -m triohooks``: the triohooks command line."""

from __future__ import annotations

import sys

from .fronts.cli import main

sys.exit(main())
