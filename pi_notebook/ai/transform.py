"""Make a transcript safe to send to a given model (Pi's ``pi-ai/api/transform-messages.ts``).

Providers call :func:`transform_messages` once per request, on the messages they are about to convert to
their wire format. It fixes what another model, an interrupted run or a hand-built history leaves behind:

- content that is ``None`` becomes ``[]``;
- images become text placeholders when the model cannot read images;
- thinking, signatures and tool-call thought signatures from a *different* model are dropped or turned
  into plain text (they are opaque or invalid elsewhere); tool-call ids can be rewritten for providers with
  stricter id rules, and the tool results that answer them follow;
- failed (``error``/``aborted``) assistant turns are left out, and every tool call left without a result gets
  a synthetic error result, since providers reject a call with no answer.

The input is never modified: changed messages are new objects, unchanged ones are passed through. The
synthetic results exist only in the request; nothing is written back to the transcript.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeAlias

from ._request import Model
from .messages import (
    AssistantContent,
    AssistantMessage,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultContent,
    ToolResultMessage,
    UserMessage,
)

__all__ = [
    "NO_RESULT_PROVIDED",
    "TOOL_IMAGE_PLACEHOLDER",
    "USER_IMAGE_PLACEHOLDER",
    "NormalizeToolCallId",
    "transform_messages",
]

USER_IMAGE_PLACEHOLDER = "(image omitted: model does not support images)"
TOOL_IMAGE_PLACEHOLDER = "(tool image omitted: model does not support images)"
NO_RESULT_PROVIDED = "No result provided"

NormalizeToolCallId: TypeAlias = Callable[[str, Model, AssistantMessage], str]
"""``(tool_call_id, target_model, source_message) -> id``: rewrites a tool-call id from another model for the
target provider (for example to ``^[a-zA-Z0-9_-]+$``, at most 64 characters). Must be pure and must not raise."""


def transform_messages(
    messages: Iterable[Message],
    model: Model,
    *,
    normalize_tool_call_id: NormalizeToolCallId | None = None,
) -> list[Message]:
    """Return the messages to send to ``model``; see the module docstring for every rule.

    ``normalize_tool_call_id`` is applied only to tool calls from other models (same model means the same
    provider, api and model id); the new id replaces the old one in later tool results too. Linear in the
    number of content blocks; ``messages`` and its objects are not modified.
    """
    converter = _FirstPass(model, normalize_tool_call_id)
    return _answer_orphaned_tool_calls(converter.convert(message) for message in messages)


class _FirstPass:
    """Per-message rewrites. Holds the tool-call id map, which later tool results read."""

    def __init__(self, model: Model, normalize_tool_call_id: NormalizeToolCallId | None) -> None:
        self.model = model
        self.normalize_tool_call_id = normalize_tool_call_id
        self.id_map: dict[str, str] = {}

    def convert(self, message: Message) -> Message:
        if message.content is None:  # only from unvalidated objects (model_construct, hand-built)
            message = message.model_copy(update={"content": []})
        if isinstance(message, UserMessage):
            return self._user(message)
        if isinstance(message, ToolResultMessage):
            return self._tool_result(message)
        return self._assistant(message)

    def _user(self, message: UserMessage) -> UserMessage:
        if isinstance(message.content, str) or self.model.supports_images:
            return message
        content = _replace_images(message.content, USER_IMAGE_PLACEHOLDER)
        return message if content is None else message.model_copy(update={"content": content})

    def _tool_result(self, message: ToolResultMessage) -> ToolResultMessage:
        update: dict[str, object] = {}
        if not self.model.supports_images:
            content = _replace_images(message.content, TOOL_IMAGE_PLACEHOLDER)
            if content is not None:
                update["content"] = content
        new_id = self.id_map.get(message.tool_call_id)
        if new_id is not None and new_id != message.tool_call_id:
            update["tool_call_id"] = new_id
        return message.model_copy(update=update) if update else message

    def _assistant(self, message: AssistantMessage) -> AssistantMessage:
        same_model = (message.provider, message.api, message.model) == (
            self.model.provider,
            self.model.api,
            self.model.id,
        )
        content: list[AssistantContent] = []
        changed = False
        for block in message.content:
            converted = self._block(block, message, same_model)
            changed = changed or converted is not block
            if converted is not None:
                content.append(converted)
        return message.model_copy(update={"content": content}) if changed else message

    def _block(self, block: AssistantContent, message: AssistantMessage, same_model: bool) -> AssistantContent | None:
        if isinstance(block, ThinkingContent):
            return _thinking(block, same_model)
        if isinstance(block, TextContent):
            # A text signature (and any provider extras) is only meaningful to the model that made it.
            return block if same_model else TextContent(text=block.text)
        if same_model:
            return block
        return self._foreign_tool_call(block, message)

    def _foreign_tool_call(self, call: ToolCall, message: AssistantMessage) -> ToolCall:
        update: dict[str, object] = {}
        if call.thought_signature:
            update["thought_signature"] = None
        if self.normalize_tool_call_id is not None:
            new_id = self.normalize_tool_call_id(call.id, self.model, message)
            if new_id != call.id:
                self.id_map[call.id] = new_id
                update["id"] = new_id
        return call.model_copy(update=update) if update else call


def _thinking(block: ThinkingContent, same_model: bool) -> AssistantContent | None:
    """Keep, drop or turn a thinking block into text (``None`` drops it)."""
    if block.redacted:
        return block if same_model else None  # opaque encrypted content
    if same_model and block.thinking_signature:
        return block  # needed for replay even when empty (OpenAI encrypted reasoning)
    if not block.thinking or not block.thinking.strip():
        return None
    return block if same_model else TextContent(text=block.thinking)


def _replace_images(content: Sequence[ToolResultContent], placeholder: str) -> list[ToolResultContent] | None:
    """``content`` with each run of images replaced by one ``placeholder`` text; ``None`` if it has no image.

    An image right after a text block that already is the placeholder adds nothing, as in Pi.
    """
    if not any(isinstance(block, ImageContent) for block in content):
        return None
    result: list[ToolResultContent] = []
    previous_is_placeholder = False
    for block in content:
        if isinstance(block, ImageContent):
            if not previous_is_placeholder:
                result.append(TextContent(text=placeholder))
            previous_is_placeholder = True
        else:
            result.append(block)
            previous_is_placeholder = block.text == placeholder
    return result


def _answer_orphaned_tool_calls(messages: Iterable[Message]) -> list[Message]:
    """Drop failed assistant turns and give every unanswered tool call a synthetic error result.

    A call is unanswered if no tool result with its id follows before the next assistant or user message
    (or the end); its synthetic result is inserted at that point.
    """
    result: list[Message] = []
    pending = _PendingToolCalls()
    for message in messages:
        if isinstance(message, ToolResultMessage):
            pending.answered.add(message.tool_call_id)
            result.append(message)
            continue
        pending.flush_into(result)
        if isinstance(message, AssistantMessage):
            if message.stop_reason in ("error", "aborted"):
                continue  # incomplete turn: replaying it can make providers reject the request
            pending.remember(message)
        result.append(message)
    pending.flush_into(result)
    return result


class _PendingToolCalls:
    """Tool calls of the last kept assistant message, and the ids answered since."""

    __slots__ = ("answered", "calls")

    def __init__(self) -> None:
        self.calls: list[ToolCall] = []
        self.answered: set[str] = set()

    def remember(self, message: AssistantMessage) -> None:
        calls = [block for block in message.content if isinstance(block, ToolCall)]
        if calls:
            self.calls = calls
            self.answered = set()

    def flush_into(self, result: list[Message]) -> None:
        for call in self.calls:
            if call.id not in self.answered:
                result.append(_no_result(call))
        self.calls = []
        self.answered = set()


def _no_result(call: ToolCall) -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id=call.id,
        tool_name=call.name,
        content=[TextContent(text=NO_RESULT_PROVIDED)],
        is_error=True,
    )
