"""The kernel's MCP servers in a notebook's runs: which of their tools each run is offered.

The servers are the kernel's (``REGISTRY.mcp``, a :class:`~pi_notebook.mcp.McpServers`); a session's own tools are its
``configure(tools=...)``. When a run starts, its session's tools become its own tools plus the MCP tools of the
servers ready then (``McpServers.tools_for_run``: under the run's cassette, the recorded lists), replacing those of
the run before; a server left out is said in the run's event log. Between runs, ``%pi mcp add`` and ``remove`` do the
same for the idle sessions (:func:`sync_mcp_tools`), so ``%pi tools`` lists what the next run will be offered.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol

from ..ai import Cassette
from ..mcp import McpServers, is_mcp_tool
from ..session import AgentSession
from ._run import Run

__all__ = ["offer_mcp_tools", "sync_mcp_tools", "with_mcp_tools"]


class _Entry(Protocol):
    """What this needs of a notebook session (``NotebookSession``)."""

    @property
    def session(self) -> AgentSession: ...

    @property
    def cassette(self) -> Cassette | None: ...

    @property
    def active_run(self) -> Run | None: ...

    @property
    def busy(self) -> bool: ...


def with_mcp_tools(entry: _Entry, servers: McpServers, operation: Callable[[], Awaitable[Any]]) -> Callable[[], Any]:
    """``operation`` with the session's MCP tools made those the servers offer now (see the module docstring)."""

    async def run() -> Any:
        await offer_mcp_tools(entry, servers)
        return await operation()

    return run


async def offer_mcp_tools(entry: _Entry, servers: McpServers) -> None:
    session = entry.session
    own = [tool for tool in session.tools if not is_mcp_tool(tool.name)]
    if not len(servers):
        if len(own) != len(session.tools):
            session.tools = own
        return
    tools, notes = await servers.tools_for_run(
        cassette=entry.cassette, timeout_ms=session.settings.timeouts.mcp_call_ms, policy=session.policy
    )
    session.tools = own + tools
    run = entry.active_run
    for note in notes:
        if run is not None:
            run.note("mcp", note)


def sync_mcp_tools(entries: Iterable[_Entry], servers: McpServers) -> None:
    """Give each idle session the MCP tools of the servers ready now (a running one gets them at its next run)."""
    for entry in entries:
        if entry.busy:
            continue
        session = entry.session
        own = [tool for tool in session.tools if not is_mcp_tool(tool.name)]
        timeout_ms = session.settings.timeouts.mcp_call_ms
        session.tools = own + servers.tools_now(timeout_ms=timeout_ms, policy=session.policy)
