"""A streamable HTTP MCP server on loopback (the SDK-written test server, ``--http PORT``): tools over HTTP, a header
whose value comes from the kernel's environment (``${VAR}``) reaching the server and never shown, Stop ending a
hanging call at once, and a server that is not there failing to start in one line."""

from __future__ import annotations

import asyncio
import hashlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_helpers import SERVER, ready, results, session_calling, update_text

from pi_notebook.mcp import McpServers, ServerConfig

pytestmark = pytest.mark.timeout(90)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "--http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 60
        while True:  # until it listens
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.kill()  # uvicorn's graceful stop would wait for the deaf call's open stream
        process.wait(10)


async def test_tools_are_called_over_http_with_a_header_from_the_environment(
    servers: McpServers, http_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCS_SERVER_TOKEN", "docs-token-0123456789")
    config = ServerConfig("docs", url=http_url, headers={"Authorization": "Bearer ${DOCS_SERVER_TOKEN}"})
    connection = await ready(servers, config)
    assert connection.server_info.startswith("pi-notebook-test-server")
    calls = [("mcp__docs__echo", {"text": "over http"}), ("mcp__docs__header_digest", {"name": "Authorization"})]
    session, _, _ = await session_calling(servers, calls)
    await session.prompt("go")
    expected = hashlib.sha256(b"Bearer docs-token-0123456789").hexdigest()
    assert results(session) == [("over http", False), (expected, False)]


async def test_stop_ends_a_hanging_http_call_at_once(servers: McpServers, http_url: str) -> None:
    await ready(servers, ServerConfig("docs", url=http_url))
    session, recorder, _ = await session_calling(servers, [("mcp__docs__hang_deaf", {})])
    run = asyncio.create_task(session.prompt("go"))
    await recorder.wait_for(lambda event: "started" in update_text(event))
    stopped = time.monotonic()
    await session.abort()
    await run
    assert time.monotonic() - stopped < 1.5  # not the abort grace (2 s)
    assert recorder.labels[-1] == "agent_settled:aborted=true"


async def test_stop_reaches_an_http_servers_handler_as_notifications_cancelled(
    servers: McpServers, http_url: str, tmp_path: Path
) -> None:
    marker = tmp_path / "cancelled"
    await ready(servers, ServerConfig("docs", url=http_url))
    session, recorder, _ = await session_calling(servers, [("mcp__docs__hang", {"marker": str(marker)})])
    run = asyncio.create_task(session.prompt("go"))
    await recorder.wait_for(lambda event: "started" in update_text(event))
    await session.abort()
    await run
    deadline = time.monotonic() + 10
    while not marker.exists() and time.monotonic() < deadline:  # noqa: ASYNC110 - the server's process writes it
        await asyncio.sleep(0.02)
    assert marker.read_text() == "cancelled"


async def test_a_url_where_nothing_listens_fails_to_start_in_one_line(servers: McpServers) -> None:
    connection = servers.add(ServerConfig("gone", url=f"http://127.0.0.1:{free_port()}/mcp", startup_timeout_ms=10_000))
    await connection.wait_settled(None)
    assert connection.state == "failed"
    assert "\n" not in (connection.error or "") and connection.error
