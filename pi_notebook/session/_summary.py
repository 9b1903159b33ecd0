"""Compaction: replace older conversation with a model-written summary (Pi's ``compaction.ts``).

Walking back from the newest message, about ``keep_recent_tokens`` of conversation is kept verbatim; the cut
lands on a user or assistant message, never on a tool result (it must follow its call). Everything before the
cut is summarised by the session's model with Pi's prompts, through ``retry_assistant_call`` (layer 2), and
replaced by a :class:`CompactionSummaryMessage`, which reaches the model as a user message wrapping the
summary. As in Pi:

* a second compaction updates the previous summary (Pi's update prompt) rather than summarising it again;
* when the cut falls inside a turn (on an assistant reply, after the user message that started it), the
  turn's first part is summarised on its own with Pi's turn-prefix prompt and half the token budget, and
  appended to the history summary under ``**Turn Context (split turn):**``;
* files touched by ``read``/``write``/``edit`` tool calls (a string ``path`` argument) in the summarised part,
  and those the previous summary listed, are appended as ``<read-files>`` and ``<modified-files>`` lists.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from pydantic import Field

from ..agent import AgentMessage, CustomMessage
from ..ai import (
    AbortSignal,
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    PiNotebookError,
    StreamFn,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    maybe_await,
)
from ..ai.messages import text_of
from ..ai.retry import (
    OnRetryAttemptStart,
    OnRetryFinished,
    OnRetryScheduled,
    RetryPolicy,
    retry_assistant_call,
)

__all__ = [
    "SUMMARY_PREFIX",
    "CompactionPlan",
    "CompactionSummaryMessage",
    "SummarizationFailed",
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

UPDATE_PROMPT = """The messages above are NEW conversation messages to incorporate into the existing summary \
provided in <previous-summary> tags.

Update the existing structured summary with new information. RULES:
- PRESERVE all existing information from the previous summary
- ADD new progress, decisions, and context from the new messages
- UPDATE the Progress section: move items from "In Progress" to "Done" when completed
- UPDATE "Next Steps" based on what was accomplished
- PRESERVE exact file paths, function names, and error messages
- If something is no longer relevant, you may remove it

Use this EXACT format:

## Goal
[Preserve existing goals, add new ones if the task expanded]

## Constraints & Preferences
- [Preserve existing, add new ones discovered]

## Progress
### Done
- [x] [Include previously done items AND newly completed items]

### In Progress
- [ ] [Current work - update based on progress]

### Blocked
- [Current blockers - remove if resolved]

## Key Decisions
- **[Decision]**: [Brief rationale] (preserve all previous, add new)

## Next Steps
1. [Update based on current state]

## Critical Context
- [Preserve important context, add new if needed]

Keep each section concise. Preserve exact file paths, function names, and error messages."""

TURN_PREFIX_PROMPT = """This is the PREFIX of a turn that was too large to keep. The SUFFIX (recent work) is retained.

Summarize the prefix to provide context for the retained suffix:

## Original Request
[What did the user ask for in this turn?]

## Early Progress
- [Key decisions and work done in the prefix]

## Context for Suffix
- [Information needed to understand the retained recent work]

Be concise. Focus on what's needed to understand the kept suffix."""

SPLIT_TURN_HEADING = "\n\n---\n\n**Turn Context (split turn):**\n\n"


class CompactionSummaryMessage(CustomMessage):
    """Stands for the compacted history in the transcript; the model sees it as a user message."""

    role: str = "compactionSummary"
    summary: str
    tokens_before: int = 0
    read_files: list[str] = Field(default_factory=list)
    modified_files: list[str] = Field(default_factory=list)

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
    summary = getattr(message, "summary", None)
    if isinstance(message, CustomMessage) and isinstance(summary, str):  # a compaction's or a branch's summary
        return math.ceil(len(summary) / 4)
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
    """Whole turns before the cut, summarised (with the previous summary, if any)."""
    turn_prefix: list[AgentMessage]
    """The first part of a turn the cut splits, summarised on its own; empty when the cut starts a turn."""
    keep: list[AgentMessage]
    previous: CompactionSummaryMessage | None
    tokens_before: int


def _starts_turn(message: AgentMessage) -> bool:
    return not isinstance(message, AssistantMessage | ToolResultMessage)


def plan_compaction(messages: Sequence[AgentMessage], keep_recent_tokens: int) -> CompactionPlan | None:
    """Where to cut, or ``None`` when there is nothing to compact."""
    previous = None
    start = 0
    if messages and isinstance(messages[0], CompactionSummaryMessage):
        previous, start = messages[0], 1
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
    turn_start = cut
    if cut < len(body) and not _starts_turn(body[cut]):
        turn_start = next((i for i in range(cut - 1, -1, -1) if _starts_turn(body[i])), cut)
    return CompactionPlan(body[:turn_start], body[turn_start:cut], body[cut:], previous, context_tokens(messages))


def file_lists(plan: CompactionPlan) -> tuple[list[str], list[str]]:
    """Files only read, and files written or edited, by the summarised part and the previous summary."""
    read: set[str] = set(plan.previous.read_files) if plan.previous else set()
    modified: set[str] = set(plan.previous.modified_files) if plan.previous else set()
    replies = (m for m in (*plan.summarize, *plan.turn_prefix) if isinstance(m, AssistantMessage))
    for call in (block for reply in replies for block in reply.content if isinstance(block, ToolCall)):
        path = call.arguments.get("path")
        if not isinstance(path, str) or not path:
            continue
        if call.name == "read":
            read.add(path)
        elif call.name in ("write", "edit"):
            modified.add(path)
    return sorted(read - modified), sorted(modified)


def format_file_lists(read_files: Sequence[str], modified_files: Sequence[str]) -> str:
    sections = []
    if read_files:
        sections.append("<read-files>\n" + "\n".join(read_files) + "\n</read-files>")
    if modified_files:
        sections.append("<modified-files>\n" + "\n".join(modified_files) + "\n</modified-files>")
    return "\n\n" + "\n\n".join(sections) if sections else ""


def serialize_conversation(messages: Sequence[AgentMessage]) -> str:
    parts = []
    for message in messages:
        llm = message.to_llm() if isinstance(message, CustomMessage) else message
        if isinstance(llm, UserMessage):
            text = text_of(llm)
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
                parts.append("[Assistant]: " + text_of(llm))
            if calls:
                parts.append("[Assistant tool calls]: " + "; ".join(calls))
        elif isinstance(llm, ToolResultMessage):
            text = text_of(llm)
            if text:
                if len(text) > _TOOL_RESULT_MAX_CHARS:
                    more = len(text) - _TOOL_RESULT_MAX_CHARS
                    text = f"{text[:_TOOL_RESULT_MAX_CHARS]}\n\n[... {more} more characters truncated]"
                parts.append(f"[Tool result]: {text}")
    return "\n\n".join(parts)


_CHARS_PER_TOKEN_AT_WORST = 3
"""Bounding a request by a window needs the tokens it costs at worst: small models' tokenizers (SmolLM2's) and
code or numbers give about 3 characters a token, not Pi's estimate of 4."""
_TEMPLATE_TOKENS = 64
"""Chat-template tokens around the system prompt and the message (role markers, separators)."""


def _summary_text(conversation: str, prompt: str) -> str:
    """A summary request's user message, as Pi writes it: the serialized conversation in tags, then the prompt."""
    return f"<conversation>\n{conversation}\n</conversation>\n\n{prompt}"


def _prompt_tokens(text: str) -> int:
    """What ``text`` (the system prompt and the summary prompt) costs at worst in a summary request, with the tags."""
    return math.ceil(len(_summary_text("", text)) / _CHARS_PER_TOKEN_AT_WORST) + _TEMPLATE_TOKENS


def fit_conversation(conversation: str, tokens: int) -> str:
    """``conversation`` shortened to cost at most ``tokens`` (at 3 characters a token): its middle is replaced
    by a note saying how much was left out, so the start (the goal) and the end (the latest work) remain."""
    room = tokens * _CHARS_PER_TOKEN_AT_WORST
    if len(conversation) <= room:
        return conversation
    note = "\n\n[... {} characters left out to fit the model's context window ...]\n\n"
    keep = max(room - len(note.format(len(conversation))), 0)
    head, tail = keep // 2, keep - keep // 2
    left_out = len(conversation) - head - tail
    return conversation[:head] + note.format(left_out) + (conversation[len(conversation) - tail :] if tail else "")


def _summary_body(summary: CompactionSummaryMessage) -> str:
    """The summary without the file lists appended to it (they are recomputed)."""
    return summary.summary.removesuffix(format_file_lists(summary.read_files, summary.modified_files))


class SummarizationFailed(PiNotebookError):
    """The model could not write the summary (after layer-2 retries); the message says why."""


async def request_summary(
    conversation: str,
    prompt: str,
    *,
    model: Model,
    stream_fn: StreamFn,
    policy: RetryPolicy,
    options: StreamOptions,
    signal: AbortSignal,
    max_tokens: int | None,
    on_retry_scheduled: OnRetryScheduled | None = None,
    on_retry_attempt_start: OnRetryAttemptStart | None = None,
    on_retry_finished: OnRetryFinished | None = None,
) -> AssistantMessage | None:
    """One summary request, as Pi makes a compaction's and a branch summary's: the serialized ``conversation`` in
    tags, then ``prompt``, as the user's message under :data:`SYSTEM_PROMPT`, with ``signal``, ``max_tokens``, a
    fresh session id and no caching, retried per ``policy`` (layer 2, reported through the ``on_retry_*``
    callbacks); ``None`` when ``signal`` aborted it."""
    text = _summary_text(conversation, prompt)
    context = Context(system_prompt=SYSTEM_PROMPT, messages=[UserMessage(content=[TextContent(text=text)])])
    request = replace(
        options, signal=signal, max_tokens=max_tokens, session_id=str(uuid.uuid4()), cache_retention="none"
    )

    async def produce() -> AssistantMessage:
        stream = await maybe_await(stream_fn(model, context, request))
        return await stream.result()

    reply = await retry_assistant_call(
        produce,
        policy,
        signal,
        on_retry_scheduled=on_retry_scheduled,
        on_retry_attempt_start=on_retry_attempt_start,
        on_retry_finished=on_retry_finished,
    )
    return None if reply.stop_reason == "aborted" or signal.aborted else reply


async def summarize(
    plan: CompactionPlan,
    *,
    model: Model,
    stream_fn: StreamFn,
    policy: RetryPolicy,
    options: StreamOptions,
    signal: AbortSignal,
    reserve_tokens: int,
    context_window: int = 0,
    instructions: str | None = None,
    on_retry_scheduled: OnRetryScheduled | None = None,
    on_retry_attempt_start: OnRetryAttemptStart | None = None,
    on_retry_finished: OnRetryFinished | None = None,
) -> CompactionSummaryMessage | None:
    """Ask the model for the summary (each request retried per ``policy``, reported through the ``on_retry_*``
    callbacks of :func:`~pi_notebook.ai.retry.retry_assistant_call`); ``None`` when aborted.

    ``options`` are the session's request options (key, headers, timeouts); each summary request gets
    ``signal``, its own token budget, a fresh session id and no caching. With a ``context_window`` (tokens) each
    request fits it: the conversation is shortened in its middle (:func:`fit_conversation`) so that it, the
    prompts and the output budget stay within the window. Raises :class:`SummarizationFailed` when a request ends
    in an error, or when the window cannot hold the prompts and an output budget.
    """

    async def ask(messages: Sequence[AgentMessage], prompt: str, budget: float, what: str) -> str | None:
        limit = math.floor(budget * reserve_tokens)
        if model.max_tokens > 0:
            limit = min(limit, model.max_tokens)
        conversation = serialize_conversation(messages)
        if context_window > 0:
            room = context_window - (limit or context_window // 4) - _prompt_tokens(SYSTEM_PROMPT + prompt)
            if room <= 0:
                raise SummarizationFailed(
                    f"{what} failed: the model's context window ({context_window} tokens) cannot hold the summary "
                    "prompts and an answer"
                )
            conversation = fit_conversation(conversation, room)
        reply = await request_summary(
            conversation,
            prompt,
            model=model,
            stream_fn=stream_fn,
            policy=policy,
            options=options,
            signal=signal,
            max_tokens=limit or None,
            on_retry_scheduled=on_retry_scheduled,
            on_retry_attempt_start=on_retry_attempt_start,
            on_retry_finished=on_retry_finished,
        )
        if reply is None:
            return None
        if reply.stop_reason == "error":
            raise SummarizationFailed(f"{what} failed: {reply.error_message or 'Unknown error'}")
        return text_of(reply)

    previous = plan.previous
    earlier = previous.summary if previous else ""
    prompt = UPDATE_PROMPT if earlier else PROMPT
    if instructions:
        prompt += f"\n\nAdditional focus: {instructions}"
    if earlier:
        prompt = f"<previous-summary>\n{earlier}\n</previous-summary>\n\n{prompt}"
    # Pi writes "No prior history." here even when there is a previous summary, which then is lost.
    summary = _summary_body(previous) if previous else "No prior history."
    if plan.summarize:  # empty only when the cut splits the first turn (then turn_prefix is not)
        asked = await ask(plan.summarize, prompt, 0.8, "Summarization")
        if asked is None:
            return None
        summary = asked
    if plan.turn_prefix:
        prefix = await ask(plan.turn_prefix, TURN_PREFIX_PROMPT, 0.5, "Turn prefix summarization")
        if prefix is None:
            return None
        summary += SPLIT_TURN_HEADING + prefix
    read_files, modified_files = file_lists(plan)
    return CompactionSummaryMessage(
        summary=summary + format_file_lists(read_files, modified_files),
        tokens_before=plan.tokens_before,
        read_files=read_files,
        modified_files=modified_files,
    )
