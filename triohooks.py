"""``import triohooks``: the same public names as the ``runtime`` package."""

from __future__ import annotations

from typing import Any

import runtime

__all__ = runtime.__all__


def __getattr__(name: str) -> Any:
    return getattr(runtime, name)


def __dir__() -> list[str]:
    return list(__all__)
