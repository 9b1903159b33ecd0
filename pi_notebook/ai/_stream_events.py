"""Provider stream events: what a stream function yields while one assistant message is produced.

Every event carries ``partial``: the assistant message being built. It is the live object the provider keeps
appending to (not a copy, unlike Pi, so streaming costs stay flat in message length): read it during the
event, copy it (``model_copy(deep=True)``) if you keep it. The stream ends with exactly one terminal event:
:class:`DoneEvent` (``stop``/``length``/``toolUse``) or :class:`ErrorEvent` (``error``/``aborted``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from .messages import AssistantMessage, TextContent, ThinkingContent, ToolCall

__all__ = [
    "AssistantMessageEvent",
    "DoneEvent",
    "ErrorEvent",
    "StartEvent",
    "TextDeltaEvent",
    "TextEndEvent",
    "TextStartEvent",
    "ThinkingDeltaEvent",
    "ThinkingEndEvent",
    "ThinkingStartEvent",
    "ToolCallDeltaEvent",
    "ToolCallEndEvent",
    "ToolCallStartEvent",
]


@dataclass(slots=True)
class StartEvent:
    partial: AssistantMessage
    type: Literal["start"] = field(default="start", init=False)


@dataclass(slots=True)
class TextStartEvent:
    content_index: int
    partial: AssistantMessage
    type: Literal["text_start"] = field(default="text_start", init=False)


@dataclass(slots=True)
class TextDeltaEvent:
    content_index: int
    delta: str
    partial: AssistantMessage
    type: Literal["text_delta"] = field(default="text_delta", init=False)


@dataclass(slots=True)
class TextEndEvent:
    content_index: int
    content: TextContent
    partial: AssistantMessage
    type: Literal["text_end"] = field(default="text_end", init=False)


@dataclass(slots=True)
class ThinkingStartEvent:
    content_index: int
    partial: AssistantMessage
    type: Literal["thinking_start"] = field(default="thinking_start", init=False)


@dataclass(slots=True)
class ThinkingDeltaEvent:
    content_index: int
    delta: str
    partial: AssistantMessage
    type: Literal["thinking_delta"] = field(default="thinking_delta", init=False)


@dataclass(slots=True)
class ThinkingEndEvent:
    content_index: int
    content: ThinkingContent
    partial: AssistantMessage
    type: Literal["thinking_end"] = field(default="thinking_end", init=False)


@dataclass(slots=True)
class ToolCallStartEvent:
    content_index: int
    partial: AssistantMessage
    type: Literal["toolcall_start"] = field(default="toolcall_start", init=False)


@dataclass(slots=True)
class ToolCallDeltaEvent:
    """``delta`` is a raw fragment of the call's JSON arguments; ``partial``'s arguments are parsed at
    ``toolcall_end`` (Pi re-parses partial JSON on every delta)."""

    content_index: int
    delta: str
    partial: AssistantMessage
    type: Literal["toolcall_delta"] = field(default="toolcall_delta", init=False)


@dataclass(slots=True)
class ToolCallEndEvent:
    content_index: int
    tool_call: ToolCall
    partial: AssistantMessage
    type: Literal["toolcall_end"] = field(default="toolcall_end", init=False)


@dataclass(slots=True)
class DoneEvent:
    reason: Literal["stop", "length", "toolUse", "deferred"]
    message: AssistantMessage
    type: Literal["done"] = field(default="done", init=False)

    @property
    def partial(self) -> AssistantMessage:
        return self.message


@dataclass(slots=True)
class ErrorEvent:
    reason: Literal["error", "aborted"]
    error: AssistantMessage
    type: Literal["error"] = field(default="error", init=False)

    @property
    def partial(self) -> AssistantMessage:
        return self.error


AssistantMessageEvent: TypeAlias = (
    StartEvent
    | TextStartEvent
    | TextDeltaEvent
    | TextEndEvent
    | ThinkingStartEvent
    | ThinkingDeltaEvent
    | ThinkingEndEvent
    | ToolCallStartEvent
    | ToolCallDeltaEvent
    | ToolCallEndEvent
    | DoneEvent
    | ErrorEvent
)
