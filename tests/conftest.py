"""Shared test setup: every ``async def`` test runs on asyncio (anyio's pytest plugin, ``anyio_mode = "auto"``);
the ``pi-bash-*.log`` / ``pi-python-*.log`` full-output files a test leaves in the temp directory are removed."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _remove_full_output_files() -> Iterator[None]:
    tmp = Path(tempfile.gettempdir())
    patterns = ("pi-bash-*.log", "pi-python-*.log")
    before = {path for pattern in patterns for path in tmp.glob(pattern)}
    yield
    for path in {path for pattern in patterns for path in tmp.glob(pattern)} - before:
        path.unlink(missing_ok=True)
