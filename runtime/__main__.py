"""``python -m runtime``: the triohooks command line."""

from __future__ import annotations

import sys

from ._cli import main

sys.exit(main())
