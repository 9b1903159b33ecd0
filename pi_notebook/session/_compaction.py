"""Compaction: replace older conversation with a model-written summary (Pi's ``compaction.ts``, simplified).

Walking back from the newest message, about ``keep_recent_tokens`` of conversation is kept verbatim; the cut
lands on a user or assistant message, never on a tool result (it must follow its call). Everything before the
cut is summarised by the session's model with Pi's prompt, through ``retry_assistant_call`` (layer 2), and
replaced by a :class:`CompactionSummaryMessage`, which reaches the model as a user message wrapping the
summary. Unlike Pi, a turn split by the cut is not summarised separately: its first part simply goes into
the summary with everything older.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..agent import AgentMessage, CustomMessage
from ..ai import (
    AbortSignal,
    AssistantMessage,
    AssistantMessageEventStream,
    Context,
    ImageContent,
    Model,
    StreamFn,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from ..ai.retry import RetryPolicy, retry_assistant_call

__all__ = [
    "SUMMARY_PREFIX",
    "CompactionPlan",
    "CompactionSummaryMessage",
    "context_tokens",
    "estimate_tokens",
    "plan_compaction",
    "summarize",
]

SUMMARY_PREFIX = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
SUMMARY_SUFFIX = "\n</summary>"
_TOOL_RESULT_MAX_CHARS = 2000
_IMAGE_CHARS = 4800

SYSTEM_PROMPT = (
    "You are a context summarization assistant. Your task is to read a conversation between a user and an AI "
    "assistant, then produce a structured summary following the exact format specified.\n\nDo NOT continue the "
    "conversation. Do NOT respond to any questions in the conversation. ONLY output the structured summary."
)

PROMPT = """The messages above are a conversation to summarize. Create a structured context checkpoint summary that \
another LLM will use to continue the work.

Use this EXACT format:

## Goal
[What is the user trying to accomplish? Can be multiple items if the session covers different tasks.]

## Constraints & Preferences
- [Any constraints, preferences, or requirements mentioned by user]
- [Or "(none)" if none were mentioned]

## Progress
### Done
- [x] [Completed tasks/changes]

### In Progress
- [ ] [Current work]

### Blocked
- [Issues preventing progress, if any]

## Key Decisions
- **[Decision]**: [Brief rationale]

## Next Steps
1. [Ordered list of what should happen next]

## Critical Context
- [Any data, examples, or references needed to continue]
- [Or "(none)" if not applicable]

Keep each section concise. Preserve exact file paths, function names, and error messages."""


class CompactionSummaryMessage(CustomMessage):
    """Stands for the compacted history in the transcript; the model sees it as a user message."""

    role: str = "compactionSummary"
    summary: str
    tokens_before: int = 0

    def to_llm(self) -> UserMessage:
        return UserMessage(content=[TextContent(text=SUMMARY_PREFIX + self.summary + SUMMARY_SUFFIX)])


def _content_chars(content: str | Sequence[Any]) -> int:
    if isinstance(content, str):
        return len(content)
    return sum(
        len(b.text) if isinstance(b, TextContent) else _IMAGE_CHARS if isinstance(b, ImageContent) else 0
        for b in content
    )


def estimate_tokens(message: AgentMessage) -> int:
    """Pi's chars/4 estimate of one message (conservative)."""
    if isinstance(message, AssistantMessage):
        chars = 0
        for block in message.content:
            if isinstance(block, TextContent):
                chars += len(block.text)
            elif isinstance(block, ThinkingContent):
                chars += len(block.thinking)
            elif isinstance(block, ToolCall):
                chars += len(block.name) + len(json.dumps(block.arguments, separators=(",", ":")))
        return math.ceil(chars / 4)
    if isinstance(message, CompactionSummaryMessage):
        return math.ceil(len(message.summary) / 4)
    if isinstance(message, UserMessage | ToolResultMessage):
        return math.ceil(_content_chars(message.content) / 4)
    content = getattr(message, "content", None)
    return math.ceil(_content_chars(content) / 4) if isinstance(content, str | list) else 0


def _usage_tokens(message: AgentMessage) -> int:
    if not isinstance(message, AssistantMessage) or message.stop_reason in ("error", "aborted"):
        return 0
    usage = message.usage
    return usage.total_tokens or usage.input + usage.output + usage.cache_read + usage.cache_write


def context_tokens(messages: Sequence[AgentMessage]) -> int:
    """Tokens in context: the last valid usage report plus estimates for the messages after it."""
    for index in range(len(messages) - 1, -1, -1):
        reported = _usage_tokens(messages[index])
        if reported:
            return reported + sum(estimate_tokens(m) for m in messages[index + 1 :])
    return sum(estimate_tokens(m) for m in messages)


@dataclass(slots=True)
class CompactionPlan:
    summarize: list[AgentMessage]
    keep: list[AgentMessage]
    previous_summary: str | None
    tokens_before: int


def plan_compaction(messages: Sequence[AgentMessage], keep_recent_tokens: int) -> CompactionPlan | None:
    """Where to cut, or ``None`` when there is nothing to compact."""
    previous = None
    start = 0
    if messages and isinstance(messages[0], CompactionSummaryMessage):
        previous, start = messages[0].summary, 1
    body = list(messages[start:])
    cuts = [i for i, m in enumerate(body) if not isinstance(m, ToolResultMessage)]
    if not cuts:
        return None
    cut = cuts[0]
    kept = 0
    for index in range(len(body) - 1, -1, -1):
        kept += estimate_tokens(body[index])
        if kept >= keep_recent_tokens:
            cut = next((c for c in cuts if c >= index), len(body))
            break
    if cut <= 0:
        return None
    return CompactionPlan(body[:cut], body[cut:], previous, context_tokens(messages))


def serialize_conversation(messages: Sequence[AgentMessage]) -> str:
    parts = []
    for message in messages:
        llm = message.to_llm() if isinstance(message, CustomMessage) else message
        if isinstance(llm, UserMessage):
            text = _text(llm.content)
            if text:
                parts.append(f"[User]: {text}")
        elif isinstance(llm, AssistantMessage):
            thinking = [b.thinking for b in llm.content if isinstance(b, ThinkingContent)]
            calls = [
                f"{b.name}({', '.join(f'{k}={json.dumps(v)}' for k, v in b.arguments.items())})"
                for b in llm.content
                if isinstance(b, ToolCall)
            ]
            if thinking:
                parts.append("[Assistant thinking]: " + "\n".join(thinking))
            if any(isinstance(b, TextContent) for b in llm.content):
                parts.append("[Assistant]: " + _text(llm.content))
            if calls:
                parts.append("[Assistant tool calls]: " + "; ".join(calls))
        elif isinstance(llm, ToolResultMessage):
            text = _text(llm.content)
            if text:
                if len(text) > _TOOL_RESULT_MAX_CHARS:
                    text = (
                        text[:_TOOL_RESULT_MAX_CHARS] + f"\n[... {len(text) - _TOOL_RESULT_MAX_CHARS} more characters]"
                    )
                parts.append(f"[Tool result]: {text}")
    return "\n\n".join(parts)


def _text(content: str | Sequence[Any]) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.text for b in content if isinstance(b, TextContent))


async def summarize(
    plan: CompactionPlan,
    *,
    model: Model,
    stream_fn: StreamFn,
    policy: RetryPolicy,
    signal: AbortSignal,
    reserve_tokens: int,
    instructions: str | None = None,
    callbacks: dict[str, Any] | None = None,
) -> AssistantMessage:
    """Ask the model for the summary (retried per ``policy``); the reply is returned as data."""
    prompt = f"<conversation>\n{serialize_conversation(plan.summarize)}\n</conversation>\n\n"
    if plan.previous_summary:
        prompt += f"<previous-summary>\n{plan.previous_summary}\n</previous-summary>\n\n"
        prompt += "Update the previous summary with the new messages, keeping everything still relevant.\n\n"
    prompt += PROMPT
    if instructions:
        prompt += f"\n\nAdditional focus: {instructions}"
    context = Context(system_prompt=SYSTEM_PROMPT, messages=[UserMessage(content=[TextContent(text=prompt)])])
    max_tokens = min(math.floor(0.8 * reserve_tokens), model.max_tokens) if model.max_tokens > 0 else None
    options = StreamOptions(
        signal=signal, max_tokens=max_tokens or None, session_id=str(uuid.uuid4()), cache_retention="none"
    )

    async def produce() -> AssistantMessage:
        result = stream_fn(model, context, options)
        stream = result if isinstance(result, AssistantMessageEventStream) else await result
        return await stream.result()

    return await retry_assistant_call(produce, policy, signal, **(callbacks or {}))
