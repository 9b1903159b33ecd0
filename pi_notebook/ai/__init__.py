"""The model-facing layer (Pi's ``pi-ai``): messages, stream events, models, the abort signal.

A *stream function* ``stream_fn(model, context, options)`` returns an :class:`AssistantMessageEventStream`
(or an awaitable of one) and never raises for request/model/runtime failures: those are data (an assistant message whose
``stop_reason`` is ``error`` or ``aborted``).

:class:`Cassette` records the providers' HTTP exchanges to a JSONL file and replays them (no key, no network).
"""

from ._abort import AbortController, AbortSignal, Deadline, OnAbort, abort_scope, abortable_sleep
from ._api_registry import complete, register_api, registered_apis, stream
from ._awaitable import MaybeAwaitable, maybe_await
from ._builder import MessageBuilder
from ._compat import OpenAICompletionsCompat, ResolvedOpenAICompat, resolve_openai_compat
from ._errors import BusyError, PiNotebookError, ToolError, UserError
from ._http import close_connections
from ._request import Context, Model, ModelCost, StreamFn, StreamOptions, ThinkingLevel, Tool
from ._stream import AssistantMessageEventStream
from ._stream_events import (
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
from .cassette import Cassette, CassetteError, CassetteMode, CassetteTiming
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
    "BusyError",
    "Cassette",
    "CassetteError",
    "CassetteMode",
    "CassetteTiming",
    "Context",
    "Cost",
    "Deadline",
    "DoneEvent",
    "ErrorEvent",
    "ImageContent",
    "MaybeAwaitable",
    "Message",
    "MessageBuilder",
    "Model",
    "ModelCost",
    "OnAbort",
    "OpenAICompletionsCompat",
    "PiNotebookError",
    "ResolvedOpenAICompat",
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
    "ToolError",
    "ToolResultMessage",
    "Usage",
    "UserError",
    "UserMessage",
    "abort_scope",
    "abortable_sleep",
    "close_connections",
    "complete",
    "maybe_await",
    "register_api",
    "registered_apis",
    "resolve_openai_compat",
    "stream",
]
