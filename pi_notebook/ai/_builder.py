"""Builds one assistant message from provider output and makes the matching stream events.

Providers (faux, OpenAI-compatible, Anthropic) all call this, so every provider emits the same event
shapes. Text grows without re-copying: see :func:`_append`.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from ._events import (
    DoneEvent,
    ErrorEvent,
    StartEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)
from .messages import AssistantMessage, TextContent, ThinkingContent, ToolCall

__all__ = ["ABORTED_TEXT", "MessageBuilder"]

ABORTED_TEXT = "Request was aborted"
"""The ``error_message`` of every aborted reply, as Pi words it."""


def _append(block: TextContent | ThinkingContent, name: str, delta: str) -> None:
    # ``block.text += delta`` copies the whole string each time (O(n^2) over a long stream). Taking the
    # string out of the model first leaves our local as its only reference, so CPython extends it in place.
    # If anyone else holds the old string the append simply copies, which is still correct.
    fields = block.__dict__
    text: str = fields[name]
    fields[name] = ""
    text += delta
    fields[name] = text


class MessageBuilder:
    """The partial message plus helpers returning the event for each step."""

    __slots__ = ("_args", "message")

    def __init__(self, api: str, provider: str, model: str) -> None:
        self.message = AssistantMessage(api=api, provider=provider, model=model, stop_reason="pending")
        self._args: dict[int, list[str]] = {}

    def start(self) -> StartEvent:
        return StartEvent(self.message)

    # -- text -----------------------------------------------------------------------------------------
    def text_start(self) -> TextStartEvent:
        content = self.message.content
        content.append(TextContent(text=""))
        return TextStartEvent(len(content) - 1, self.message)

    def text_delta(self, index: int, delta: str) -> TextDeltaEvent:
        block = self.message.content[index]
        assert isinstance(block, TextContent)
        _append(block, "text", delta)
        return TextDeltaEvent(index, delta, self.message)

    def text_end(self, index: int) -> TextEndEvent:
        block = self.message.content[index]
        assert isinstance(block, TextContent)
        return TextEndEvent(index, block, self.message)

    # -- thinking -------------------------------------------------------------------------------------
    def thinking_start(self) -> ThinkingStartEvent:
        content = self.message.content
        content.append(ThinkingContent(thinking=""))
        return ThinkingStartEvent(len(content) - 1, self.message)

    def thinking_delta(self, index: int, delta: str) -> ThinkingDeltaEvent:
        block = self.message.content[index]
        assert isinstance(block, ThinkingContent)
        _append(block, "thinking", delta)
        return ThinkingDeltaEvent(index, delta, self.message)

    def thinking_end(self, index: int) -> ThinkingEndEvent:
        block = self.message.content[index]
        assert isinstance(block, ThinkingContent)
        return ThinkingEndEvent(index, block, self.message)

    # -- tool calls -----------------------------------------------------------------------------------
    def toolcall_start(self, call_id: str, name: str) -> ToolCallStartEvent:
        content = self.message.content
        content.append(ToolCall(id=call_id, name=name, arguments={}))
        index = len(content) - 1
        self._args[index] = []
        return ToolCallStartEvent(index, self.message)

    def toolcall_delta(self, index: int, delta: str) -> ToolCallDeltaEvent:
        self._args[index].append(delta)
        return ToolCallDeltaEvent(index, delta, self.message)

    def toolcall_end(self, index: int, arguments: dict[str, Any] | None = None) -> ToolCallEndEvent:
        """Finish a call; ``arguments`` defaults to the JSON streamed so far (``{}`` if it does not parse)."""
        block = self.message.content[index]
        assert isinstance(block, ToolCall)
        raw = self._args.pop(index, ())
        block.arguments = parse_arguments("".join(raw)) if arguments is None else arguments
        return ToolCallEndEvent(index, block, self.message)

    # -- end ------------------------------------------------------------------------------------------
    def end_block(self, index: int) -> TextEndEvent | ThinkingEndEvent | ToolCallEndEvent:
        """End the block at ``index``, whatever its kind (a tool call's arguments are parsed from its JSON)."""
        block = self.message.content[index]
        if isinstance(block, TextContent):
            return self.text_end(index)
        if isinstance(block, ThinkingContent):
            return self.thinking_end(index)
        return self.toolcall_end(index)

    def done(self, reason: Literal["stop", "length", "toolUse", "deferred"]) -> DoneEvent:
        self.message.stop_reason = reason
        return DoneEvent(reason, self.message)

    def aborted(self) -> ErrorEvent:
        """End as aborted: the partial message so far, with :data:`ABORTED_TEXT`."""
        return self.error("aborted", ABORTED_TEXT)

    def error(self, reason: Literal["error", "aborted"], error_message: str) -> ErrorEvent:
        message = self.message
        self._finish_open_calls()
        message.stop_reason = reason
        message.error_message = error_message
        return ErrorEvent(reason, message)

    def _finish_open_calls(self) -> None:
        # Calls cut off mid-stream keep whatever arguments parsed; they are never executed (the loop
        # stops on error/aborted) and transform_messages drops the message from later requests.
        for index in list(self._args):
            block = self.message.content[index]
            if isinstance(block, ToolCall):
                block.arguments = parse_arguments("".join(self._args.pop(index)))


def parse_arguments(raw: str) -> dict[str, Any]:
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
