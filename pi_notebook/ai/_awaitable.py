"""Values that may come back sync or async: hooks, callbacks and stream functions may be either."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable
from typing import TypeAlias, TypeVar

__all__ = ["MaybeAwaitable", "maybe_await"]

T = TypeVar("T")

MaybeAwaitable: TypeAlias = T | Awaitable[T]
"""A value, or an awaitable of it (what a sync-or-async callable returns)."""


async def maybe_await(value: MaybeAwaitable[T]) -> T:
    """``value`` itself, or what awaiting it gives."""
    if inspect.isawaitable(value):
        return await value
    return value
