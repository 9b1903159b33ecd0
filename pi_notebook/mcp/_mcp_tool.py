"""An MCP server's tool as an :class:`~pi_notebook.agent.AgentTool`.

- **Name** ``mcp__<server>__<tool>`` (``_server_config.agent_tool_name``), so the model, ``%pi tools``, the setting
  ``tools.approval.<name>`` and the site policy see which server a tool comes from; its description and input schema
  are the server's, passed through (the model validates its arguments against that schema before a call).
- **Approval**: a tool whose annotations say ``readOnlyHint: true`` runs without asking (``approval="auto"``); every
  other asks (``"ask"``: the MCP default for a tool without annotations is "may change things"). The answers are
  Run / Skip / **Always for MCP server <name>** (``approval_group``): Always lets every tool of that server run
  without asking for the rest of the session. Annotations are the server's word, not a guarantee: the site policy's
  ``[mcp] ask`` makes a server's tools ask whatever they say.
- **Timeout**: ``timeout_ms`` (the server's ``timeout``, else ``timeouts.mcp_call_ms``), enforced by the session's
  tool guard; on expiry, as on Stop, the call's signal aborts and the call ends at once (``_connection``).
- **Progress** notifications are shown as the call's output while it runs (the tool panel's live text).
- **Cassettes**: while the run's cassette records, each call's result (as the model got it, keys redacted) is written
  to it as a note keyed by the tool and the call's id; while it replays, the recorded result is given back without
  the server, so a notebook that used an MCP server replays where the server is not installed. A call the recording
  has no result for is an error in a replay-only cassette (reported to ``pytest --pi-replay`` like a request the
  cassette cannot answer). A call stopped by Stop or a timeout while recording is not recorded.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import mcp_types as types

from ..agent import AgentTool, AgentToolResult
from ..ai import AbortSignal, Cassette, ImageContent, TextContent, ToolError, active_cassette, known_secrets
from ..session import redact_result
from ._connection import Connection, McpCallError
from ._mcp_results import agent_result
from ._server_config import agent_tool_name

__all__ = ["MCP_CALL_NOTE", "mcp_agent_tool"]

MCP_CALL_NOTE = "mcp_call"
"""The kind of the cassette notes that hold MCP results (``{"content", "is_error", "details"?}``)."""
PROGRESS_LINES = 20
"""The tool panel shows the last this many progress notifications."""
PROGRESS_CHARS = 500
"""Each at most this many characters of its message (a server could send megabytes)."""


def mcp_agent_tool(connection: Connection, tool: types.Tool, *, timeout_ms: int | None) -> AgentTool:
    """The agent's tool for ``tool`` of ``connection``'s server (see the module docstring)."""
    server = connection.config.name
    name = agent_tool_name(server, tool.name)
    read_only = tool.annotations is not None and tool.annotations.read_only_hint is True
    return AgentTool(
        name=name,
        description=tool.description or tool.title or f"The tool {tool.name} of the MCP server {server}.",
        parameters=dict(tool.input_schema),
        execute=_executor(connection, tool.name, name),
        label=f"{tool.title or tool.name} ({server})",
        timeout_ms=timeout_ms,
        approval="auto" if read_only else "ask",
        approval_group=f"MCP server {server}",
        preview=_previewer(connection, tool.name),
    )


def _previewer(connection: Connection, tool: str) -> Any:
    def preview(args: Mapping[str, Any]) -> str:
        shown = json.dumps(dict(args), ensure_ascii=False, indent=1, default=str)
        return f"{tool} on MCP server {connection.config.name} ({connection.config.describe()})\n\n{shown}"

    return preview


def _executor(connection: Connection, tool: str, name: str) -> Any:
    async def execute(call_id: str, args: Any, signal: AbortSignal, on_update: Any) -> AgentToolResult:
        arguments = dict(args) if isinstance(args, Mapping) else {}
        cassette = active_cassette()
        key = {"tool": name, "call": call_id}
        if isinstance(cassette, Cassette):
            recorded = cassette.recall(MCP_CALL_NOTE, key)
            if recorded is not None:
                return _replayed(recorded)
            if cassette.offline:
                message = (
                    f"cassette {cassette.path} ({cassette.effective_mode} mode) has no recorded result for the MCP "
                    f"call {name} ({call_id}); record it again with mode new or all"
                )
                cassette.report_miss(message)
                raise McpCallError(message)
        progress = _Progress(on_update) if on_update is not None else None
        result = await connection.call(tool, arguments, signal=signal, on_progress=progress)
        keys = list(known_secrets().values)
        mapped = redact_result(agent_result(result, keys), keys)
        if isinstance(cassette, Cassette) and not signal.aborted:
            cassette.remember(MCP_CALL_NOTE, key, _recorded(mapped, result.is_error))
        if result.is_error:
            raise ToolError(_text(mapped) or f"{name} failed (the server gave no text)")
        return mapped

    return execute


class _Progress:
    """The SDK's progress callback: each notification becomes a line of the call's live output."""

    def __init__(self, on_update: Any) -> None:
        self._on_update = on_update
        self._lines: list[str] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        count = f"{progress:g}/{total:g}" if total is not None else f"{progress:g}"
        if message and len(message) > PROGRESS_CHARS:
            message = message[:PROGRESS_CHARS] + "…"
        self._lines = [*self._lines, f"[progress {count}]" + (f" {message}" if message else "")][-PROGRESS_LINES:]
        self._on_update(AgentToolResult(content="\n".join(self._lines)))


def _text(result: AgentToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def _recorded(result: AgentToolResult, is_error: bool) -> dict[str, Any]:
    content = [block.model_dump(mode="json", exclude_none=True) for block in result.content]  # type: ignore[union-attr]
    value: dict[str, Any] = {"content": content, "is_error": is_error}
    if result.details is not None:
        value["details"] = result.details
    return value


def _replayed(recorded: Mapping[str, Any]) -> AgentToolResult:
    blocks: list[TextContent | ImageContent] = []
    for block in recorded.get("content") or []:
        if isinstance(block, Mapping) and block.get("type") == "image":
            blocks.append(ImageContent.model_validate(block))
        elif isinstance(block, Mapping):
            blocks.append(TextContent.model_validate(block))
    result = AgentToolResult(content=blocks, details=recorded.get("details"))
    if recorded.get("is_error"):
        raise ToolError(_text(result) or "the recorded MCP call failed")
    return result
