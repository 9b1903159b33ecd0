"""The kernel's MCP servers (:class:`McpServers`), and the tools a run is offered from them.

The servers belong to the kernel, not to a session: ``configure()`` keeps them, every named session offers their
tools, and they live until ``%pi mcp remove`` or the kernel's end. A server is checked against the site policy's
``[mcp] allow`` before it starts; its tools against ``[mcp] disabled`` (left out) and ``ask`` (the approval gate).

What a run is offered (:meth:`McpServers.tools_for_run`): the tools of every server that is ready when the run starts
(one still starting gets up to :data:`RUN_WAIT_S`; one that is not ready then is left out of that run, and the run's
event log says why). Under a cassette the list is part of the recording, since it is part of every model request: a
recording cassette notes each server's tool list (again only when it changed), and a replaying one gives the noted
list back, with or without the server: so the requests match, and a replay needs no server.

While ``PI_NOTEBOOK_CASSETTE_MODE=none`` (``pytest --pi-replay``) no server is started at all: nothing may call out,
and cassettes hold every list and result a replay needs.
"""

from __future__ import annotations

import asyncio
import os
import time
import weakref
from collections.abc import Iterable, Iterator
from typing import Any

import mcp_types as types
from pydantic import ValidationError

from ..agent import AgentTool
from ..ai import CASSETTE_MODE_VARIABLE, AbortSignal, Cassette
from ..session import Policy, site_policy
from ._connection import Connection
from ._mcp_tool import mcp_agent_tool
from ._server_config import McpConfigError, ServerConfig, config_path, read_config_file, unique

__all__ = ["MCP_TOOLS_NOTE", "RUN_WAIT_S", "McpServers", "replay_only"]

RUN_WAIT_S = 3.0
"""How long a run waits at its start for a server that is still starting (afterwards it goes on without its tools)."""
MCP_TOOLS_NOTE = "mcp_tools"
"""The kind of the cassette notes that hold a server's tool list (``{"tools": [...]}``, keyed by ``{"server"}``)."""


def replay_only() -> bool:
    """Whether cassettes may only replay in this process (``PI_NOTEBOOK_CASSETTE_MODE=none``): no server starts."""
    return os.environ.get(CASSETTE_MODE_VARIABLE, "").strip() == "none"


class McpServers:
    """The kernel's servers by name, in the order they were added (see the module docstring). Use it on the event
    loop's thread; starting one needs a running loop (a Jupyter kernel's)."""

    def __init__(self) -> None:
        self._connections: dict[str, Connection] = {}
        self._stopping: set[asyncio.Task[None]] = set()
        self._listings: weakref.WeakKeyDictionary[Cassette, dict[str, list[dict[str, Any]]]] = (
            weakref.WeakKeyDictionary()
        )

    def __iter__(self) -> Iterator[Connection]:
        return iter(list(self._connections.values()))

    def __len__(self) -> int:
        return len(self._connections)

    def get(self, name: str) -> Connection | None:
        return self._connections.get(name)

    # -- adding and removing ----------------------------------------------------------------------------------
    def add(self, config: ServerConfig, *, policy: Policy | None = None) -> Connection:
        """Start ``config``'s server (replacing one of the same name, which is stopped) and return its connection at
        once. Raises :class:`~pi_notebook.session.PolicyError` when the site policy does not allow it and
        :class:`McpConfigError` for a ``${VAR}`` that is not set; nothing changes then."""
        policy = policy if policy is not None else site_policy()
        resolved = config.resolved()
        policy.check_mcp_server(config.name, resolved.target(), url=config.transport == "http")
        asyncio.get_running_loop()  # a clear RuntimeError here, not a server left half started
        self.remove(config.name)
        connection = Connection(config, replay_only=replay_only())
        self._connections[config.name] = connection
        connection.start()
        return connection

    def remove(self, name: str) -> asyncio.Task[None] | None:
        """Stop the server ``name`` (its process tree is killed) and forget it; returns the stopping task to await,
        ``None`` when there is no such server."""
        connection = self._connections.pop(name, None)
        if connection is None:
            return None
        task = asyncio.get_running_loop().create_task(connection.stop())
        self._stopping.add(task)
        task.add_done_callback(self._stopping.discard)
        return task

    def replace_all(self, configs: Iterable[ServerConfig], *, policy: Policy | None = None) -> list[Connection]:
        """Make ``configs`` the kernel's servers: the others are stopped, those configured the same way kept running,
        the rest started. Every one is checked first: on an error nothing changes."""
        configs = unique(configs)
        policy = policy if policy is not None else site_policy()
        for config in configs:
            policy.check_mcp_server(config.name, config.resolved().target(), url=config.transport == "http")
        wanted = {config.name: config for config in configs}
        for name, connection in list(self._connections.items()):
            if wanted.get(name) != connection.config or connection.state in ("failed", "stopped"):
                self.remove(name)
        return [self.get(c.name) or self.add(c, policy=policy) for c in configs]

    def load_file(self) -> str | None:
        """Start the servers of the ``mcpServers`` file (``_server_config.config_path``); one line saying what was
        started (or why none could be), ``None`` when there is no file. Never raises, never waits."""
        path = config_path()
        if path is None:
            return None
        try:
            configs = read_config_file(path)
            if not configs:
                return None
            started = [self.add(config) for config in configs]
        except (McpConfigError, ValueError, RuntimeError) as exc:
            return f"pi: MCP servers from {path} not started: {exc}"
        names = ", ".join(connection.config.name for connection in started)
        return f"pi: MCP servers from {path}: {names} (%pi mcp list shows their state)"

    async def stop_all(self) -> None:
        for name in list(self._connections):
            task = self.remove(name)
            if task is not None:
                await task

    # -- what a run is offered --------------------------------------------------------------------------------
    async def wait_starting(self, seconds: float, signal: AbortSignal | None = None) -> None:
        """Wait up to ``seconds`` (all together) for the servers still starting."""
        deadline = time.monotonic() + seconds
        for connection in self:
            if connection.state == "starting":
                await connection.wait_settled(max(0.0, deadline - time.monotonic()), signal)

    async def tools_for_run(
        self, *, cassette: Cassette | None, timeout_ms: int | None, policy: Policy, signal: AbortSignal | None = None
    ) -> tuple[list[AgentTool], list[str]]:
        """The tools a run is offered, and a line for its event log per server left out (see the module docstring).
        ``timeout_ms``: each call's, where the server sets none (the session's ``timeouts.mcp_call_ms``)."""
        offline = cassette is not None and cassette.offline
        if not offline:
            await self.wait_starting(RUN_WAIT_S, signal)
        tools: list[AgentTool] = []
        notes: list[str] = []
        names: set[str] = set()
        for connection in self:
            listing = self._listing(connection, cassette, offline)
            if listing is None:
                why = "it is not in the cassette" if offline else f"it is {connection.describe_state()}"
                notes.append(f"MCP server {connection.config.name}: its tools are not offered ({why})")
                continue
            for tool in listing:
                made = mcp_agent_tool(connection, tool, timeout_ms=connection.config.timeout_ms or timeout_ms)
                if policy.is_disabled(made.name) or made.name in names:
                    continue
                names.add(made.name)
                tools.append(made)
        return tools, notes

    def tools_now(self, *, timeout_ms: int | None, policy: Policy) -> list[AgentTool]:
        """The tools of the servers ready now (no cassette, no wait): what ``%pi tools`` lists between runs."""
        tools = [
            mcp_agent_tool(connection, tool, timeout_ms=connection.config.timeout_ms or timeout_ms)
            for connection in self
            if connection.alive
            for tool in connection.tools
        ]
        return [tool for tool in tools if not policy.is_disabled(tool.name)]

    def _listing(self, connection: Connection, cassette: Cassette | None, offline: bool) -> list[types.Tool] | None:
        name = connection.config.name
        noted = self._listings.setdefault(cassette, {}) if cassette is not None else None
        if cassette is not None and noted is not None and offline:
            recorded = cassette.recall(MCP_TOOLS_NOTE, {"server": name})
            if recorded is not None and isinstance(recorded.get("tools"), list):
                noted[name] = recorded["tools"]
            return _tools(noted.get(name))
        if not connection.alive:
            return None
        if cassette is not None and noted is not None:
            listing = [tool.model_dump(by_alias=True, mode="json", exclude_none=True) for tool in connection.tools]
            if noted.get(name) != listing:
                cassette.remember(MCP_TOOLS_NOTE, {"server": name}, {"tools": listing})
                noted[name] = listing
        return list(connection.tools)


def _tools(listing: list[dict[str, Any]] | None) -> list[types.Tool] | None:
    if listing is None:
        return None
    try:
        return [types.Tool.model_validate(item) for item in listing]
    except ValidationError:
        return None
