"""Shared test setup: every ``async def`` test runs on asyncio (anyio's pytest plugin, ``anyio_mode = "auto"``)."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
