"""How session events and messages read in the event log and the static (markdown) rendering."""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..agent import (
    AgentMessage,
    AgentStartEvent,
    AgentToolResult,
    CustomMessage,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from ..ai import AssistantMessage, TextContent, ThinkingContent, ToolCall, ToolResultMessage, UserMessage
from ..ai.messages import text_of
from ..session import (
    AgentEndEvent,
    AgentSession,
    AgentSettledEvent,
    AutoRetryEndEvent,
    AutoRetryStartEvent,
    BudgetExceededEvent,
    CompactionEndEvent,
    CompactionStartEvent,
    CompactionSummaryMessage,
    QueueUpdateEvent,
    SessionEvent,
    SessionWriteFailedEvent,
    SummarizationRetryAttemptStartEvent,
    SummarizationRetryFinishedEvent,
    SummarizationRetryScheduledEvent,
)

__all__ = ["describe_event", "render_markdown", "result_text", "usage_line"]


def _flag(value: bool) -> str:
    return "true" if value else "false"


def describe_event(event: SessionEvent) -> tuple[str, str] | None:
    """``(label, detail)`` for the event log: ``agent_end`` / ``will_retry=false``, ``agent_settled`` /
    ``aborted=true``, ``message_end`` / ``assistant stop``, ``auto_retry_start`` / ``attempt 1/3 in 2.0 s``.
    ``None`` for streaming steps (``message_update``, ``tool_execution_update``): they drive the live view but
    are left out of the log."""
    kind = event.type
    match event:
        case MessageUpdateEvent() | ToolExecutionUpdateEvent():
            return None
        case AgentEndEvent(will_retry=will_retry):
            return kind, f"will_retry={_flag(will_retry)}"
        case AgentSettledEvent(aborted=aborted):
            return kind, f"aborted={_flag(aborted)}"
        case MessageStartEvent(message=message):
            return kind, message.role
        case MessageEndEvent(message=AssistantMessage() as message):
            detail = f"{message.role} {message.stop_reason}"
            return kind, detail + (f": {message.error_message}" if message.error_message else "")
        case MessageEndEvent(message=message):
            return kind, message.role
        case TurnEndEvent(message=message, tool_results=results):
            reason = message.stop_reason if isinstance(message, AssistantMessage) else ""
            return kind, f"{reason}, {len(results)} tool result(s)"
        case ToolExecutionStartEvent(tool_name=name):
            return kind, name
        case ToolExecutionEndEvent(tool_name=name, is_error=is_error):
            return kind, f"{name} {'error' if is_error else 'ok'}"
        case QueueUpdateEvent(steering=steering, follow_up=follow_up):
            return kind, f"steering={len(steering)} follow_up={len(follow_up)}"
        case AutoRetryStartEvent():
            detail = f"attempt {event.attempt}/{event.max_attempts} in {event.delay_ms / 1000:.1f} s"
            return kind, f"{detail}: {event.error_message}"
        case AutoRetryEndEvent():
            detail = f"success={_flag(event.success)} attempt={event.attempt}"
            return kind, detail + (f": {event.final_error}" if event.final_error else "")
        case CompactionStartEvent(reason=reason):
            return kind, reason
        case CompactionEndEvent():
            detail = f"{event.reason} aborted={_flag(event.aborted)} will_retry={_flag(event.will_retry)}"
            if event.result is not None:
                detail += f" tokens_before={event.result.tokens_before} summary={len(event.result.summary)} chars"
            return kind, detail + (f": {event.error_message}" if event.error_message else "")
        case BudgetExceededEvent() | SessionWriteFailedEvent():
            return kind, event.reason
        case SummarizationRetryScheduledEvent():
            return kind, f"attempt {event.attempt}/{event.max_attempts}: {event.error_message}"
        case (
            AgentStartEvent()
            | TurnStartEvent()
            | SummarizationRetryAttemptStartEvent()
            | SummarizationRetryFinishedEvent()
        ):
            return kind, ""


def result_text(result: AgentToolResult | ToolResultMessage) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def usage_line(session: AgentSession) -> str:
    """Turns, tokens and cost of the session's current (or last) operation, against the budget's limits."""
    budget = session.budget
    limits = budget.limits
    parts = [f"turns {budget.turns}" + (f"/{limits.max_turns}" if limits.max_turns else "")]
    parts.append(
        f"in {budget.input_tokens} tok"
        + (f"/{limits.max_input_tokens}" if limits.max_input_tokens else "")
        + _cached(budget.cache_read_tokens, budget.cache_write_tokens, budget.cache_saved_usd)
    )
    parts.append(
        f"out {budget.output_tokens} tok" + (f"/{limits.max_output_tokens}" if limits.max_output_tokens else "")
    )
    parts.append(f"${budget.cost_usd:.4f}" + (f"/${limits.max_cost_usd:.2f}" if limits.max_cost_usd else ""))
    return " · ".join(parts)


def _cached(read: int, written: int, saved: float) -> str:
    """`` (30000 cached, 2000 written, saved $0.0810)``: the prompt cache's share of the input and what it saved
    (for a priced model; writes cost more than plain input on Anthropic, so a first turn can cost more)."""
    if not (read or saved):
        return ""
    shown = [f"{read} cached"]
    if saved:
        shown += [f"{written} written"] if written else []
        shown.append(f"saved ${saved:.4f}" if saved > 0 else f"cost ${-saved:.4f} more")
    return f" ({', '.join(shown)})"


def _quote(text: str) -> str:
    return "\n".join("> " + line if line else ">" for line in text.splitlines() or [""])


def _fence(text: str, info: str = "") -> str:
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}{info}\n{text}\n{fence}"


def render_markdown(
    messages: Sequence[AgentMessage], log: Sequence[tuple[float, str, str]], *, title: str, status: str
) -> str:
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


def _message_markdown(message: AgentMessage) -> str:
    match message:
        case UserMessage():
            return _quote(f"**user:** {text_of(message)}")
        case AssistantMessage():
            return _assistant_markdown(message)
        case ToolResultMessage():
            marker = "error" if message.is_error else "result"
            return f"**{message.tool_name} {marker}:**\n\n" + _fence(result_text(message) or "(no output)")
        case CompactionSummaryMessage():
            return f"**compaction summary** ({message.tokens_before} tokens before):\n\n" + _quote(message.summary)
        case CustomMessage():
            return f"*[{message.role}]*"


def _assistant_markdown(message: AssistantMessage) -> str:
    lines = []
    for block in message.content:
        if isinstance(block, ThinkingContent) and block.thinking:
            lines.append(_quote(f"*thinking:* {block.thinking}"))
        elif isinstance(block, TextContent) and block.text:
            lines.append(block.text)
        elif isinstance(block, ToolCall):
            lines.append(f"tool call `{block.name}` " + _fence(json.dumps(block.arguments, ensure_ascii=False), "json"))
    if message.stop_reason in ("error", "aborted", "length"):
        lines.append(f"*[{message.stop_reason}{': ' + message.error_message if message.error_message else ''}]*")
    return "**assistant:** " + ("\n\n".join(lines) if lines else "*(no content)*")
