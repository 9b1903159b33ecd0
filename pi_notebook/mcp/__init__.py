"""MCP servers as the agent's tools, under the session's Stop, approval, timeouts and the site policy.

Built on the official SDK (PyPI ``mcp``). The kernel owns its servers (:class:`McpServers`, held by the notebook's
registry): ``%pi mcp add``, ``configure(mcp_servers=...)`` and the ``mcpServers`` file (:func:`config_path`) start
them; each server's tools become :class:`~pi_notebook.agent.AgentTool` objects named ``mcp__<server>__<tool>``
(:func:`agent_tool_name`). Inside, by job: ``_server_config`` (configuration and names), ``_connection`` (one server:
start, calls, stop, its process tree), ``_stderr_tail``, ``_mcp_tool`` (a server's tool as an ``AgentTool``: approval,
results, cassettes), ``_mcp_results`` (results as text and image blocks, truncated as Pi's tools truncate) and
``_servers`` (the kernel's servers, and the tools a run is offered).

This room sits beside ``kernel`` on the fourth floor: it uses ``session`` (the site policy, redaction) and ``tools``
(the process lifeline and tree kill, truncation), and only ``notebook`` uses it.
"""

from __future__ import annotations

from ._connection import KILL_GRACE_S, Connection, McpCallAborted, McpCallError, ServerState
from ._mcp_tool import MCP_CALL_NOTE
from ._server_config import (
    CONFIG_ENV,
    DEFAULT_CONFIG,
    DEFAULT_STARTUP_TIMEOUT_MS,
    TOOL_PREFIX,
    McpConfigError,
    ServerConfig,
    agent_tool_name,
    config_path,
    is_mcp_tool,
    read_config_file,
    server_configs,
    servers_from_json,
)
from ._servers import MCP_TOOLS_NOTE, RUN_WAIT_S, McpServers, replay_only

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_CONFIG",
    "DEFAULT_STARTUP_TIMEOUT_MS",
    "KILL_GRACE_S",
    "MCP_CALL_NOTE",
    "MCP_TOOLS_NOTE",
    "RUN_WAIT_S",
    "TOOL_PREFIX",
    "Connection",
    "McpCallAborted",
    "McpCallError",
    "McpConfigError",
    "McpServers",
    "ServerConfig",
    "ServerState",
    "agent_tool_name",
    "config_path",
    "is_mcp_tool",
    "read_config_file",
    "replay_only",
    "server_configs",
    "servers_from_json",
]
