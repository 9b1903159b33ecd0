"""The model-facing layer (Pi's ``pi-ai``): messages, stream events, models, the abort signal.

A *stream function* ``stream_fn(model, context, options)`` returns an :class:`AssistantMessageEventStream`
and never raises for request/model/runtime failures: those are data (an assistant message whose
``stop_reason`` is ``error`` or ``aborted``).
"""

from ._abort import AbortController, AbortSignal, Deadline, abort_scope, abortable_sleep
from ._builder import MessageBuilder
from ._events import (
    AssistantMessageEvent,
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
from ._http import close_connections
from ._model import Context, LlmMessage, Model, ModelCost, StreamFn, StreamOptions, ThinkingLevel, Tool
from ._registry import complete, register_api, registered_apis, stream
from ._stream import AssistantMessageEventStream
from .messages import (
    AssistantMessage,
    Cost,
    ImageContent,
    Message,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)

__all__ = [
    "AbortController",
    "AbortSignal",
    "AssistantMessage",
    "AssistantMessageEvent",
    "AssistantMessageEventStream",
    "Context",
    "Cost",
    "Deadline",
    "DoneEvent",
    "ErrorEvent",
    "ImageContent",
    "LlmMessage",
    "Message",
    "MessageBuilder",
    "Model",
    "ModelCost",
    "StartEvent",
    "StopReason",
    "StreamFn",
    "StreamOptions",
    "TextContent",
    "TextDeltaEvent",
    "TextEndEvent",
    "TextStartEvent",
    "ThinkingContent",
    "ThinkingDeltaEvent",
    "ThinkingEndEvent",
    "ThinkingLevel",
    "ThinkingStartEvent",
    "Tool",
    "ToolCall",
    "ToolCallDeltaEvent",
    "ToolCallEndEvent",
    "ToolCallStartEvent",
    "ToolResultMessage",
    "Usage",
    "UserMessage",
    "abort_scope",
    "abortable_sleep",
    "close_connections",
    "complete",
    "register_api",
    "registered_apis",
    "stream",
]
