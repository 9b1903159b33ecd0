"""For the MCP tests: the SDK-written test server (``tests/mcp/mcp_test_server.py``, run as a user runs a server) as a
configuration, and a faux session whose model calls MCP tools."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from session_helpers import make_session

from pi_notebook.ai import TextContent, ToolResultMessage
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
from pi_notebook.mcp import McpServers, ServerConfig
from pi_notebook.session import AgentSession, Policy, ToolExecutionUpdateEvent
from pi_notebook.testing import EventRecorder

SERVER = Path(__file__).resolve().parent.parent / "mcp" / "mcp_test_server.py"


def server_config(name: str = "test", *extra: str, **options: Any) -> ServerConfig:
    """The test server as a stdio server named ``name`` (``extra``: its own flags, e.g. ``--fail-start``)."""
    return ServerConfig(name, command=sys.executable, args=(str(SERVER), *extra), **options)


async def ready(servers: McpServers, config: ServerConfig) -> Any:
    """Add ``config``'s server and wait until it is ready (fails the test with its error otherwise)."""
    connection = servers.add(config, policy=Policy())
    await connection.wait_settled(None)
    assert connection.state == "ready", connection.error
    return connection


async def session_calling(
    servers: McpServers,
    calls: list[tuple[str, dict[str, Any]]],
    *,
    settings: dict[str, Any] | None = None,
    **options: Any,
) -> tuple[AgentSession, EventRecorder, FauxProvider]:
    """A session offered the servers' tools whose model calls each ``(agent tool name, arguments)`` in turn (one per
    reply, ids ``call-0``, ``call-1``, ...) and then says ``done``."""
    replies = [
        faux_assistant_message([faux_tool_call(n, a, id=f"call-{i}")], "toolUse") for i, (n, a) in enumerate(calls)
    ]
    session, recorder, faux = make_session([*replies, faux_assistant_message("done")], settings=settings, **options)
    tools, _ = await servers.tools_for_run(
        cassette=None, timeout_ms=session.settings.timeouts.mcp_call_ms, policy=session.policy
    )
    session.tools = tools
    return session, recorder, faux


def tool_results(session: AgentSession) -> list[ToolResultMessage]:
    return [message for message in session.messages if isinstance(message, ToolResultMessage)]


def results(session: AgentSession) -> list[tuple[str, bool]]:
    """Each tool result's text and whether it is an error."""
    found = []
    for message in tool_results(session):
        text = "\n".join(block.text for block in message.content if isinstance(block, TextContent))
        found.append((text, bool(message.is_error)))
    return found


def update_text(event: Any) -> str:
    """The text of a ``tool_execution_update`` event's partial result (``""`` for another event)."""
    if not isinstance(event, ToolExecutionUpdateEvent):
        return ""
    content = event.partial_result.content
    return (
        "".join(block.text for block in content if isinstance(block, TextContent))
        if not isinstance(content, str)
        else content
    )
