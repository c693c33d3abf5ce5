"""``import triohooks``: the same public names as the ``runtime`` package."""

from __future__ import annotations

from runtime import *  # noqa: F403
