"""How session events and messages read in the event log and the static (markdown) rendering."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..agent import AgentMessage, AgentToolResult, CustomMessage
from ..ai import AssistantMessage, TextContent, ThinkingContent, ToolCall, ToolResultMessage, UserMessage
from ..ai.messages import text_of
from ..session import (
    AgentEndEvent,
    AgentSession,
    AgentSettledEvent,
    AgentStartEvent,
    AutoRetryEndEvent,
    AutoRetryStartEvent,
    BranchSummaryEndEvent,
    BranchSummaryMessage,
    BranchSummaryStartEvent,
    BudgetExceededEvent,
    CompactionEndEvent,
    CompactionStartEvent,
    CompactionSummaryMessage,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    QueueUpdateEvent,
    SessionEvent,
    SessionTreeEvent,
    SessionWriteFailedEvent,
    SummarizationRetryAttemptStartEvent,
    SummarizationRetryFinishedEvent,
    SummarizationRetryScheduledEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from ._inert import (
    code_block,
    code_span,
    document,
    html_code,
    html_document,
    html_markdown,
    html_text,
    inline,
    literal,
)
from ._spent import Spent, is_priced
from ._visible import shown_json, visible_text

__all__ = [
    "CallText",
    "describe_event",
    "folded_report",
    "pointer_to_report",
    "render_all",
    "render_html",
    "render_markdown",
    "render_text",
    "result_text",
    "usage_line",
]


_BRANCH_SUMMARY = "branch summary (of the branch left behind)"


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
        case (
            AgentStartEvent()
            | TurnStartEvent()
            | SummarizationRetryAttemptStartEvent()
            | SummarizationRetryFinishedEvent()
        ):
            return kind, ""
        case _:
            return _session_step(event)


def _session_step(event: SessionEvent) -> tuple[str, str] | None:
    """``describe_event`` of the session's own steps: retries, compaction, budgets, branch summaries, the tree."""
    kind = event.type
    match event:
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
        case BranchSummaryStartEvent():
            entries = f"{event.entries} entr{'y' if event.entries == 1 else 'ies'}"
            return kind, f"summarising the {entries} left behind"
        case BranchSummaryEndEvent():
            detail = f"aborted={_flag(event.aborted)}"
            if event.result is not None:
                detail += f" summary={len(event.result.summary)} chars"
            return kind, detail + (f": {event.error_message}" if event.error_message else "")
        case SessionTreeEvent():  # no entry ids: they differ from one execution of a notebook to the next
            return kind, "the conversation moved" + (
                ", a branch summary written there" if event.summary_entry_id else ""
            )
        case SummarizationRetryScheduledEvent():
            return kind, f"attempt {event.attempt}/{event.max_attempts}: {event.error_message}"
    return None


def result_text(result: AgentToolResult | ToolResultMessage) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def usage_line(session: AgentSession) -> str:
    """Turns, tokens and cost of the session's current (or last) operation, against the budget's limits (worded as
    the run's receipt words them: ``_spent``)."""
    budget = session.budget
    limits = budget.limits
    spent = Spent(
        input=budget.input_tokens,
        cache_read=budget.cache_read_tokens,
        cache_write=budget.cache_write_tokens,
        output=budget.output_tokens,
        cost=budget.cost_usd,
        saved=budget.cache_saved_usd,
        estimated=budget.estimated,
        priced=is_priced(session.model),
    )
    turns = f"turns {budget.turns}" + (f"/{limits.max_turns}" if limits.max_turns else "")
    limited = spent.parts(
        max_input=limits.max_input_tokens, max_output=limits.max_output_tokens, max_cost=limits.max_cost_usd
    )
    return " · ".join([turns, *limited])


def _quote(markdown: str) -> str:
    """``markdown`` (built from the gate's output) as a block quote."""
    return "\n".join("> " + line if line else ">" for line in markdown.splitlines() or [""])


CallText = Callable[[str, Mapping[str, Any]], tuple[str, str]]
"""A tool call as its panel shows it, from the tool's name and arguments: ``(text, syntax)`` (the code, the command
line, the edit's lines; ``syntax`` as :attr:`AgentTool.preview_syntax`), ``("", "")`` for none (the widget's
``tool_preview``)."""

_FENCE_INFO = {"python": "python", "shell": "sh", "diff": "diff", "json": "json"}


def _call(block: ToolCall, call_text: CallText | None) -> tuple[str, str]:
    """``block`` as the report shows it: as its panel does, else its arguments as JSON."""
    text, syntax = call_text(block.name, block.arguments) if call_text is not None else ("", "")
    return (text, syntax) if text else (shown_json(block.arguments), "json")


def render_markdown(
    messages: Sequence[AgentMessage],
    log: Sequence[tuple[float, str, str]],
    *,
    title: str,
    status: str,
    usage: str = "",
    call_text: CallText | None = None,
) -> str:
    """A run as markdown: the transcript, then the event log with times relative to the run's start, then
    ``usage`` if given; a tool call as ``call_text`` gives it (its panel's code, command line or edit), else its
    arguments as JSON. Every string it is given (``title``, ``status`` and ``usage`` included) crosses the gate
    (``_inert``): it renders as itself."""
    parts = [f"**{inline(title)}** — {inline(status)}", ""]
    for message in messages:
        parts.append(_message_markdown(message, call_text))
        parts.append("")
    parts.append("| t (s) | event | detail |")
    parts.append("|---:|---|---|")
    for seconds, label, detail in log:
        parts.append(f"| {seconds:.3f} | {code_span(label, in_table=True)} | {inline(detail)} |")
    if usage:
        parts += ["", f"usage: {inline(usage)}"]
    return document("\n".join(parts))


def _message_markdown(message: AgentMessage, call_text: CallText | None) -> str:
    match message:
        case UserMessage():
            return _quote(f"**user:** {literal(text_of(message))}")
        case AssistantMessage():
            return _assistant_markdown(message, call_text)
        case ToolResultMessage():
            marker = "error" if message.is_error else "result"
            label = f"{inline(message.tool_name)} {marker}"
            return f"**{label}:**\n\n" + code_block(result_text(message) or "(no output)")
        case CompactionSummaryMessage():
            head = f"**compaction summary** ({message.tokens_before} tokens before):\n\n"
            return head + _quote(literal(message.summary))
        case BranchSummaryMessage():
            return f"**{_BRANCH_SUMMARY}:**\n\n" + _quote(literal(message.summary))
        case CustomMessage():
            return f"*\\[{inline(message.role)}\\]*"


def _assistant_markdown(message: AssistantMessage, call_text: CallText | None) -> str:
    pieces: list[str] = []
    for block in message.content:
        if isinstance(block, ThinkingContent) and block.thinking:
            pieces.append(_quote(f"*thinking:* {literal(block.thinking)}"))
        elif isinstance(block, TextContent) and block.text:
            pieces.append(literal(block.text))
        elif isinstance(block, ToolCall):
            text, syntax = _call(block, call_text)
            # the fence on a line of its own: after "tool call `x` " on the same line it was no fence at all
            pieces.append(f"tool call {code_span(block.name)}\n\n" + code_block(text, _FENCE_INFO.get(syntax, "")))
    if message.stop_reason in ("error", "aborted", "length"):
        why = f"{message.stop_reason}: {message.error_message}" if message.error_message else message.stop_reason
        pieces.append(f"*\\[{inline(why)}\\]*")
    if not pieces:
        return "**assistant:** *(no content)*"
    # a quote (thinking) cannot start on the label's line; text and the rest read on from it
    separator = "\n\n" if pieces[0].startswith(">") else " "
    return "**assistant:**" + separator + "\n\n".join(pieces)


def render_html(
    messages: Sequence[AgentMessage],
    log: Sequence[tuple[float, str, str]],
    *,
    title: str,
    status: str,
    usage: str = "",
    call_text: CallText | None = None,
) -> str:
    """:func:`render_markdown`'s run as HTML, the model's markdown formatted; every string crosses the gate
    (``_inert``), and the whole is cleaned by it."""
    parts = [f"<p><strong>{html_text(title)}</strong> — {html_text(status)}</p>"]
    parts += [_message_html(message, call_text) for message in messages]
    rows = "".join(
        f'<tr><td style="text-align:right">{seconds:.3f}</td><td {_LEFT}><code>{html_text(label)}</code></td>'
        f"<td {_LEFT}>{html_text(' '.join(detail.split()))}</td></tr>\n"
        for seconds, label, detail in log
    )
    parts.append(
        f'<table>\n<thead><tr><th style="text-align:right">t (s)</th><th {_LEFT}>event</th><th {_LEFT}>detail</th>'
        "</tr></thead>\n"
        f"<tbody>\n{rows}</tbody>\n</table>"
    )
    if usage:
        parts.append(f"<p>usage: {html_text(usage)}</p>")
    return html_document("\n".join(parts))


_LEFT = 'style="text-align:left"'


def _message_html(message: AgentMessage, call_text: CallText | None) -> str:
    match message:
        case UserMessage():
            return f"<blockquote><p><strong>user:</strong> {html_text(text_of(message))}</p></blockquote>"
        case AssistantMessage():
            return _assistant_html(message, call_text)
        case ToolResultMessage():
            marker = "error" if message.is_error else "result"
            label = f"<p><strong>{html_text(message.tool_name)} {marker}:</strong></p>"
            return label + html_code(result_text(message) or "(no output)")
        case CompactionSummaryMessage():
            head = f"<p><strong>compaction summary</strong> ({message.tokens_before} tokens before):</p>"
            return f"{head}<blockquote>{html_markdown(message.summary)}</blockquote>"
        case BranchSummaryMessage():
            head = f"<p><strong>{_BRANCH_SUMMARY}:</strong></p>"
            return f"{head}<blockquote>{html_markdown(message.summary)}</blockquote>"
        case CustomMessage():
            return f"<p><em>[{html_text(message.role)}]</em></p>"


def _assistant_html(message: AssistantMessage, call_text: CallText | None) -> str:
    pieces = ["<p><strong>assistant:</strong></p>"]
    for block in message.content:
        if isinstance(block, ThinkingContent) and block.thinking:
            pieces.append(f"<blockquote><p><em>thinking:</em> {html_text(block.thinking)}</p></blockquote>")
        elif isinstance(block, TextContent) and block.text:
            pieces.append(html_markdown(block.text))
        elif isinstance(block, ToolCall):
            shown = html_code(_call(block, call_text)[0])
            pieces.append(f"<p>tool call <code>{html_text(block.name)}</code></p>{shown}")
    if message.stop_reason in ("error", "aborted", "length"):
        why = f"{message.stop_reason}: {message.error_message}" if message.error_message else message.stop_reason
        pieces.append(f"<p><em>[{html_text(why)}]</em></p>")
    if len(pieces) == 1:
        pieces.append("<p><em>(no content)</em></p>")
    return "\n".join(pieces)


def render_text(
    messages: Sequence[AgentMessage],
    log: Sequence[tuple[float, str, str]],
    *,
    title: str,
    status: str,
    usage: str = "",
    call_text: CallText | None = None,
) -> str:
    """:func:`render_markdown`'s run as plain text (a terminal's view, ``text/plain``): control characters of every
    untrusted string written as ``<U+001B>``."""
    parts = [visible_text(f"{title} — {status}")]
    parts += [visible_text(_message_text(message, call_text)) for message in messages]
    width = max((len(label) for _, label, _ in log), default=5)
    lines = [f"{'t (s)':>8}  {'event':<{width}}  detail"]
    lines += [
        f"{seconds:8.3f}  {label:<{width}}  {' '.join(detail.split())}".rstrip() for seconds, label, detail in log
    ]
    parts.append(visible_text("\n".join(lines)))
    if usage:
        parts.append(visible_text(f"usage: {usage}"))
    return "\n\n".join(parts)


def _message_text(message: AgentMessage, call_text: CallText | None) -> str:
    match message:
        case UserMessage():
            return f"user: {text_of(message)}"
        case AssistantMessage():
            pieces = []
            for block in message.content:
                if isinstance(block, ThinkingContent) and block.thinking:
                    pieces.append(f"(thinking) {block.thinking}")
                elif isinstance(block, TextContent) and block.text:
                    pieces.append(block.text)
                elif isinstance(block, ToolCall):
                    pieces.append(f"tool call {block.name}:\n{_call(block, call_text)[0]}")
            if message.stop_reason in ("error", "aborted", "length"):
                why = message.stop_reason + (f": {message.error_message}" if message.error_message else "")
                pieces.append(f"[{why}]")
            return "assistant: " + ("\n\n".join(pieces) if pieces else "(no content)")
        case ToolResultMessage():
            marker = "error" if message.is_error else "result"
            return f"{message.tool_name} {marker}:\n{result_text(message) or '(no output)'}"
        case CompactionSummaryMessage():
            return f"compaction summary ({message.tokens_before} tokens before):\n{message.summary}"
        case BranchSummaryMessage():
            return f"{_BRANCH_SUMMARY}:\n{message.summary}"
        case CustomMessage():
            return f"[{message.role}]"


def render_all(
    messages: Sequence[AgentMessage],
    log: Sequence[tuple[float, str, str]],
    *,
    title: str,
    status: str,
    usage: str = "",
    call_text: CallText | None = None,
) -> tuple[str, str, str]:
    """A run's report as markdown, HTML and plain text (:func:`render_markdown`, :func:`render_html`,
    :func:`render_text`); ``call_text``: tool calls as their panels show them (else as JSON)."""
    return (
        render_markdown(messages, log, title=title, status=status, usage=usage, call_text=call_text),
        render_html(messages, log, title=title, status=status, usage=usage, call_text=call_text),
        render_text(messages, log, title=title, status=status, usage=usage, call_text=call_text),
    )


def folded_report(html: str, headline: str) -> str:
    """A report's HTML folded under one line (``<details>``), for the cell that shows the run's live widget above it:
    the transcript is there already; the report stays whole for whoever opens it or reads the saved notebook.
    ``headline``: the report's first line (``Run 3 — settled``)."""
    summary = f"{html_text(headline)}: the transcript and event log, as in the widget above"
    return f'<details class="pi-report-folded"><summary>{summary}</summary>\n{html}\n</details>'


def pointer_to_report(number: int, status: str) -> tuple[str, str]:
    """A run display's static copy when the same cell shows the report below it: one line pointing there (markdown,
    HTML); ``status`` is one of the run's states, ours."""
    where = "its transcript and event log are in the report below."
    return f"**Run {number}** — {status}: {where}", f"<p><strong>Run {number}</strong> — {status}: {where}</p>"
