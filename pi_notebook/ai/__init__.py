"""The model-facing layer (Pi's ``pi-ai``): messages, stream events, models, the abort signal.

A *stream function* ``stream_fn(model, context, options)`` returns an :class:`AssistantMessageEventStream`
(or an awaitable of one) and never raises for request/model/runtime failures: those are data (an assistant message whose
``stop_reason`` is ``error`` or ``aborted``).

:class:`Cassette` records the providers' HTTP exchanges to a JSONL file and replays them (no key, no network).
"""

from ._abort import AbortController, AbortSignal, Deadline, OnAbort, abort_scope, abortable_sleep
from ._api_registry import complete, register_api, registered_apis, stream
from ._awaitable import MaybeAwaitable, maybe_await
from ._builder import ABORTED_TEXT, MessageBuilder
from ._compat import OpenAICompletionsCompat, ResolvedOpenAICompat, resolve_openai_compat
from ._egress import add_request_check
from ._errors import BusyError, PiNotebookError, ToolError, UserError
from ._http import close_connections
from ._model_record import model_from_record, model_record
from ._request import (
    Context,
    Model,
    ModelCost,
    StreamFn,
    StreamOptions,
    ThinkingLevel,
    Tool,
    cache_savings,
    input_tokens,
)
from ._secret import (
    REDACTED,
    clean_api_key,
    header_secrets,
    is_secret_name,
    scrub_secrets,
    scrub_secrets_bytes,
    secret_spellings,
    secret_value,
    strip_api_key,
)
from ._secret_env import HELD_SECRETS, KnownSecrets, knowing_secrets, known_during_call, known_secrets, secret_variables
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
from ._trusted import trusted_text, trusted_tool_result
from .cassette import CASSETTE_MODE_VARIABLE, Cassette, CassetteError, CassetteMode, CassetteTiming
from .cassette._route import active_cassette
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
from .providers._caching import CacheRetention, default_cache_retention

__all__ = [
    "ABORTED_TEXT",
    "CASSETTE_MODE_VARIABLE",
    "HELD_SECRETS",
    "REDACTED",
    "AbortController",
    "AbortSignal",
    "AssistantMessage",
    "AssistantMessageEvent",
    "AssistantMessageEventStream",
    "BusyError",
    "CacheRetention",
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
    "KnownSecrets",
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
    "active_cassette",
    "add_request_check",
    "cache_savings",
    "clean_api_key",
    "close_connections",
    "complete",
    "default_cache_retention",
    "header_secrets",
    "input_tokens",
    "is_secret_name",
    "knowing_secrets",
    "known_during_call",
    "known_secrets",
    "maybe_await",
    "model_from_record",
    "model_record",
    "register_api",
    "registered_apis",
    "resolve_openai_compat",
    "scrub_secrets",
    "scrub_secrets_bytes",
    "secret_spellings",
    "secret_value",
    "secret_variables",
    "stream",
    "strip_api_key",
    "trusted_text",
    "trusted_tool_result",
]
