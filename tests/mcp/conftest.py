"""The kernel's MCP server set for one test: stopped after it (its processes killed), and the ``pi-mcp-*.log``
full-output files a test leaves in the temp directory removed."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from pi_notebook.mcp import McpServers


@pytest.fixture
async def servers() -> AsyncIterator[McpServers]:
    running = McpServers()
    try:
        yield running
    finally:
        await running.stop_all()


@pytest.fixture(autouse=True)
def _remove_mcp_logs() -> Iterator[None]:
    tmp = Path(tempfile.gettempdir())
    before = set(tmp.glob("pi-mcp-*.log"))
    yield
    for path in set(tmp.glob("pi-mcp-*.log")) - before:
        path.unlink(missing_ok=True)
