"""Branch summaries (Pi 0.83's ``compaction/branch-summarization.ts``): when the session goes to another point of
its tree, the branch it leaves is summarised by the model, so that what was tried there is not lost.

The summary is written as Pi writes it: a ``branch_summary`` entry (``fromId``, ``summary``, ``details``
``{readFiles, modifiedFiles}``, ``usage``, ``fromHook``) whose parent is the new leaf, made with Pi's prompt
(:data:`BRANCH_SUMMARY_PROMPT`, after the conversation serialised as the compaction serialises it, under Pi's
summarisation system prompt), its text prefixed with :data:`BRANCH_SUMMARY_PREAMBLE` and followed by the files the
branch read and changed. It reaches the model as Pi sends it: a user message wrapping the summary in
:data:`BRANCH_SUMMARY_PREFIX` and :data:`BRANCH_SUMMARY_SUFFIX` (:meth:`BranchSummaryMessage.to_llm`).

What is summarised (Pi's ``prepareBranchEntries``): the branch's messages from the newest back, as many as fit the
model's context window less ``reserve_tokens`` (a summary that does not fit is still taken while under 90% of the
budget), tool results left out; the files come from every ``read``/``write``/``edit`` call on the branch and from
the branch summaries on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from ..agent import AgentMessage, CustomMessage
from ..ai import (
    AbortSignal,
    AssistantMessage,
    Model,
    StreamFn,
    StreamOptions,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from ..ai.messages import text_of
from ..ai.retry import OnRetryAttemptStart, OnRetryFinished, OnRetryScheduled, RetryPolicy
from ._summary import (
    CompactionSummaryMessage,
    estimate_tokens,
    format_file_lists,
    request_summary,
    serialize_conversation,
)

__all__ = [
    "BRANCH_SUMMARY_PREAMBLE",
    "BRANCH_SUMMARY_PREFIX",
    "BRANCH_SUMMARY_PROMPT",
    "BRANCH_SUMMARY_SUFFIX",
    "BranchSummary",
    "BranchSummaryMessage",
    "generate_branch_summary",
    "prepare_branch_messages",
]

BRANCH_SUMMARY_PREFIX = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
BRANCH_SUMMARY_SUFFIX = "</summary>"

BRANCH_SUMMARY_PREAMBLE = (
    "The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n"
)

BRANCH_SUMMARY_PROMPT = """Create a structured summary of this conversation branch for context when returning later.

Use this EXACT format:

## Goal
[What was the user trying to accomplish in this branch?]

## Constraints & Preferences
- [Any constraints, preferences, or requirements mentioned]
- [Or "(none)" if none were mentioned]

## Progress
### Done
- [x] [Completed tasks/changes]

### In Progress
- [ ] [Work that was started but not finished]

### Blocked
- [Issues preventing progress, if any]

## Key Decisions
- **[Decision]**: [Brief rationale]

## Next Steps
1. [What should happen next to continue this work]

Keep each section concise. Preserve exact file paths, function names, and error messages."""

NO_CONTENT = "No content to summarize"
"""Pi's summary of a branch with nothing to summarise (no request is made)."""
MAX_SUMMARY_TOKENS = 2048
"""The summary request's output limit (Pi's)."""


class BranchSummaryMessage(CustomMessage):
    """The summary of a branch the conversation came back from; the model sees it as a user message. ``from_id``
    is Pi's ``fromId``: the entry the branch was left at (``"root"``: before the first entry)."""

    role: str = "branchSummary"
    summary: str
    from_id: str = "root"
    read_files: list[str] = Field(default_factory=list)
    modified_files: list[str] = Field(default_factory=list)
    from_hook: bool = False

    def to_llm(self) -> UserMessage:
        return UserMessage(content=[TextContent(text=BRANCH_SUMMARY_PREFIX + self.summary + BRANCH_SUMMARY_SUFFIX)])

    def entry_fields(self, usage: Usage | None = None) -> dict[str, Any]:
        """Its ``branch_summary`` entry's fields after ``type``, ``id``, ``parentId`` and ``timestamp``, as Pi writes
        them (``details`` only for a summary of ours, not a hook's)."""
        fields: dict[str, Any] = {"fromId": self.from_id, "summary": self.summary}
        if not self.from_hook:
            fields["details"] = {"readFiles": self.read_files, "modifiedFiles": self.modified_files}
        if usage is not None:
            fields["usage"] = usage.model_dump(mode="json", by_alias=True, exclude_none=True)
        fields["fromHook"] = self.from_hook
        return fields


@dataclass(slots=True)
class BranchSummary:
    """A summary the model wrote (``message``) and what its request cost (``usage``)."""

    message: BranchSummaryMessage
    usage: Usage | None = None


def prepare_branch_messages(
    messages: Sequence[AgentMessage], token_budget: int = 0
) -> tuple[list[AgentMessage], list[str], list[str]]:
    """Pi's ``prepareBranchEntries``: the branch's messages (oldest first) that fit ``token_budget`` (0: all), taken
    from the newest back, tool results left out; and the files read and modified on the whole branch."""
    read: set[str] = set()
    modified: set[str] = set()
    for message in messages:  # every earlier summary's files, whether or not it fits
        if isinstance(message, BranchSummaryMessage) and not message.from_hook:
            read.update(message.read_files)
            modified.update(message.modified_files)
    kept: list[AgentMessage] = []
    total = 0
    for message in reversed(messages):
        if isinstance(message, ToolResultMessage):
            continue
        if isinstance(message, AssistantMessage):
            _file_ops(message, read, modified)
        tokens = estimate_tokens(message)
        if token_budget > 0 and total + tokens > token_budget:
            if isinstance(message, CompactionSummaryMessage | BranchSummaryMessage) and total < token_budget * 0.9:
                kept.append(message)  # a summary is worth its place even past the budget
            break
        kept.append(message)
        total += tokens
    kept.reverse()
    return kept, sorted(read - modified), sorted(modified)


def _file_ops(message: AssistantMessage, read: set[str], modified: set[str]) -> None:
    for block in message.content:
        if not isinstance(block, ToolCall):
            continue
        path = block.arguments.get("path")
        if not isinstance(path, str) or not path:
            continue
        if block.name == "read":
            read.add(path)
        elif block.name in ("write", "edit"):
            modified.add(path)


async def generate_branch_summary(
    messages: Sequence[AgentMessage],
    *,
    from_id: str,
    model: Model,
    stream_fn: StreamFn,
    policy: RetryPolicy,
    options: StreamOptions,
    signal: AbortSignal,
    reserve_tokens: int,
    instructions: str | None = None,
    replace_instructions: bool = False,
    on_retry_scheduled: OnRetryScheduled | None = None,
    on_retry_attempt_start: OnRetryAttemptStart | None = None,
    on_retry_finished: OnRetryFinished | None = None,
) -> BranchSummary | str | None:
    """Pi's ``generateBranchSummary`` of the abandoned branch's ``messages`` (oldest first): the summary, an error
    text when the request failed (after the layer-2 retries of ``policy``), or ``None`` when ``signal`` aborted it.

    ``options`` are the session's request options (key, headers, timeouts); the request gets ``signal``, Pi's
    output limit (:data:`MAX_SUMMARY_TOKENS`), a fresh session id and no caching. ``instructions`` are added to
    the prompt as Pi adds them ("Additional focus: ..."), or replace it with ``replace_instructions``.
    """
    budget = (model.context_window or 128000) - reserve_tokens
    kept, read_files, modified_files = prepare_branch_messages(messages, budget)
    if not kept:
        return BranchSummary(BranchSummaryMessage(summary=NO_CONTENT, from_id=from_id))
    if instructions and replace_instructions:
        prompt = instructions
    elif instructions:
        prompt = f"{BRANCH_SUMMARY_PROMPT}\n\nAdditional focus: {instructions}"
    else:
        prompt = BRANCH_SUMMARY_PROMPT
    reply = await request_summary(
        serialize_conversation(kept),
        prompt,
        model=model,
        stream_fn=stream_fn,
        policy=policy,
        options=options,
        signal=signal,
        max_tokens=MAX_SUMMARY_TOKENS,
        on_retry_scheduled=on_retry_scheduled,
        on_retry_attempt_start=on_retry_attempt_start,
        on_retry_finished=on_retry_finished,
    )
    if reply is None:
        return None
    if reply.stop_reason == "error":
        return reply.error_message or "Summarization failed"
    summary = BRANCH_SUMMARY_PREAMBLE + text_of(reply) + format_file_lists(read_files, modified_files)
    message = BranchSummaryMessage(
        summary=summary, from_id=from_id, read_files=read_files, modified_files=modified_files
    )
    return BranchSummary(message, reply.usage)
