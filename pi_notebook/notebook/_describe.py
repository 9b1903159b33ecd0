"""How session events and messages read in the event log and the static (markdown) rendering."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..agent import AgentToolResult, CustomMessage
from ..ai import AssistantMessage, TextContent, ThinkingContent, ToolCall, ToolResultMessage, UserMessage
from ..ai.messages import text_of
from ..session import CompactionSummaryMessage

__all__ = ["describe_event", "render_markdown", "result_text"]

QUIET = frozenset({"message_update", "tool_execution_update"})
"""Streaming steps: they drive the live view but are left out of the event log."""


def _flag(value: bool) -> str:
    return "true" if value else "false"


def describe_event(event: Any) -> tuple[str, str]:
    """``(label, detail)`` for the event log: ``agent_end`` / ``will_retry=false``, ``agent_settled`` /
    ``aborted=true``, ``message_end`` / ``assistant stop``, ``auto_retry_start`` / ``attempt 1/3 in 2.0 s``."""
    kind: str = event.type
    if kind == "agent_end":
        return kind, f"will_retry={_flag(getattr(event, 'will_retry', False))}"
    if kind == "agent_settled":
        return kind, f"aborted={_flag(event.aborted)}"
    if kind in ("message_start", "message_end"):
        message = event.message
        reason = getattr(message, "stop_reason", None)
        detail = message.role if reason is None or kind == "message_start" else f"{message.role} {reason}"
        error = getattr(message, "error_message", None)
        if kind == "message_end" and error:
            detail += f": {error}"
        return kind, detail
    if kind == "turn_end":
        reason = getattr(event.message, "stop_reason", "")
        return kind, f"{reason}, {len(event.tool_results)} tool result(s)"
    if kind == "tool_execution_start":
        return kind, event.tool_name
    if kind == "tool_execution_end":
        return kind, f"{event.tool_name} {'error' if event.is_error else 'ok'}"
    if kind == "queue_update":
        return kind, f"steering={len(event.steering)} follow_up={len(event.follow_up)}"
    if kind == "auto_retry_start":
        return (
            kind,
            f"attempt {event.attempt}/{event.max_attempts} in {event.delay_ms / 1000:.1f} s: {event.error_message}",
        )
    if kind == "auto_retry_end":
        detail = f"success={_flag(event.success)} attempt={event.attempt}"
        return kind, detail + (f": {event.final_error}" if event.final_error else "")
    if kind == "compaction_start":
        return kind, event.reason
    if kind == "compaction_end":
        detail = f"{event.reason} aborted={_flag(event.aborted)} will_retry={_flag(event.will_retry)}"
        if event.result is not None:
            detail += f" tokens_before={event.result.tokens_before} summary={len(event.result.summary)} chars"
        return kind, detail + (f": {event.error_message}" if event.error_message else "")
    if kind in ("budget_exceeded", "session_write_failed"):
        return kind, event.reason
    if kind.startswith("summarization_retry") and hasattr(event, "attempt"):
        return kind, f"attempt {event.attempt}/{event.max_attempts}: {event.error_message}"
    return kind, ""


def result_text(result: AgentToolResult | ToolResultMessage) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def _quote(text: str) -> str:
    return "\n".join("> " + line if line else ">" for line in text.splitlines() or [""])


def _fence(text: str, info: str = "") -> str:
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}{info}\n{text}\n{fence}"


def render_markdown(messages: Sequence[Any], log: Sequence[tuple[float, str, str]], *, title: str, status: str) -> str:
    """A run as markdown: the transcript, then the event log with times relative to the run's start."""
    parts = [f"**{title}** — {status}", ""]
    for message in messages:
        parts.append(_message_markdown(message))
        parts.append("")
    parts.append("| t (s) | event | detail |")
    parts.append("|---:|---|---|")
    for seconds, label, detail in log:
        cell = detail.replace("|", "\\|").replace("\n", " ")
        parts.append(f"| {seconds:.3f} | `{label}` | {cell} |")
    return "\n".join(parts)


def _message_markdown(message: Any) -> str:
    if isinstance(message, UserMessage):
        return _quote(f"**user:** {text_of(message)}")
    if isinstance(message, AssistantMessage):
        lines = []
        for block in message.content:
            if isinstance(block, ThinkingContent) and block.thinking:
                lines.append(_quote(f"*thinking:* {block.thinking}"))
            elif isinstance(block, TextContent) and block.text:
                lines.append(block.text)
            elif isinstance(block, ToolCall):
                lines.append(
                    f"tool call `{block.name}` " + _fence(json.dumps(block.arguments, ensure_ascii=False), "json")
                )
        if message.stop_reason in ("error", "aborted", "length"):
            lines.append(f"*[{message.stop_reason}{': ' + message.error_message if message.error_message else ''}]*")
        return "**assistant:** " + ("\n\n".join(lines) if lines else "*(no content)*")
    if isinstance(message, ToolResultMessage):
        marker = "error" if message.is_error else "result"
        return f"**{message.tool_name} {marker}:**\n\n" + _fence(result_text(message) or "(no output)")
    if isinstance(message, CompactionSummaryMessage):
        return f"**compaction summary** ({message.tokens_before} tokens before):\n\n" + _quote(message.summary)
    if isinstance(message, CustomMessage):
        return f"*[{message.role}]*"
    return f"*[{getattr(message, 'role', type(message).__name__)}]*"
