"""Messages exchanged with models: content blocks, user/assistant/tool-result messages, usage.

Wire (JSON) names are Pi's (``role: "toolResult"``, ``stopReason``, ``toolCallId``, ``errorMessage``) so
transcripts and session files can be exchanged with Pi; Python attributes are snake_case. Dump with
:func:`message_to_dict` / :func:`message_to_json` (or ``model_dump(by_alias=True, exclude_none=True)``) and
load with :func:`message_from_dict`. Fields Pi has and we do not model are kept (``extra="allow"``) and
written back unchanged.

Identity: a message in a transcript is known by :func:`message_key`, a stable key the message object carries
(assigned when the message starts, never derived from ``id()`` or content). It is not a field: it is not
serialised, compared or copied, so two messages with the same content stay equal.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, TypeAdapter
from pydantic.alias_generators import to_camel

__all__ = [
    "AssistantContent",
    "AssistantMessage",
    "Cost",
    "ImageContent",
    "Message",
    "RequestFailure",
    "StopReason",
    "TextContent",
    "ThinkingContent",
    "ToolCall",
    "ToolResultContent",
    "ToolResultMessage",
    "Usage",
    "UserContent",
    "UserMessage",
    "message_from_dict",
    "message_key",
    "message_to_dict",
    "message_to_json",
    "now_ms",
    "text_of",
]

StopReason: TypeAlias = Literal["pending", "stop", "length", "toolUse", "error", "aborted", "deferred"]
"""Why an assistant message ended. ``pending`` only appears on partial (still streaming) messages;
``error`` and ``aborted`` are terminal failures and carry ``error_message``. ``deferred`` (Pi 0.84) is
accepted so such transcripts load; our providers never produce it."""


def now_ms() -> int:
    """Milliseconds since the epoch, Pi's timestamp unit."""
    return time.time_ns() // 1_000_000


class _Wire(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        ser_json_inf_nan="constants",
    )


class TextContent(_Wire):
    type: Literal["text"] = "text"
    text: str = ""
    text_signature: str | None = None


class ThinkingContent(_Wire):
    type: Literal["thinking"] = "thinking"
    thinking: str = ""
    thinking_signature: str | None = None
    redacted: bool | None = None


class ImageContent(_Wire):
    type: Literal["image"] = "image"
    data: str
    """Base64-encoded image bytes."""
    mime_type: str


class ToolCall(_Wire):
    type: Literal["toolCall"] = "toolCall"
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    thought_signature: str | None = None
    _unparsed: str | None = PrivateAttr(default=None)

    @property
    def unparsed_arguments(self) -> str | None:
        """The argument text the model streamed, when it was not a valid JSON object: ``arguments`` then holds
        what could be salvaged (Pi's rules), and a validation error shows both. In memory only, never saved."""
        private = self.__pydantic_private__  # read directly: pydantic's private-attribute lookup is slow per call
        return private.get("_unparsed") if private else None

    @unparsed_arguments.setter
    def unparsed_arguments(self, text: str | None) -> None:
        self._unparsed = text

    def __eq__(self, other: object) -> bool:
        """Equal when the saved fields are (``unparsed_arguments`` is a note, not part of the call)."""
        if not isinstance(other, ToolCall):
            return NotImplemented
        return self.__dict__ == other.__dict__ and self.__pydantic_extra__ == other.__pydantic_extra__


class Cost(_Wire):
    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    total: float = 0.0


class Usage(_Wire):
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0
    cost: Cost = Field(default_factory=Cost)
    reasoning: int | None = None
    """Output tokens spent on reasoning (a part of ``output``), when the server says: OpenAI's
    ``reasoning_tokens``, Anthropic's ``thinking_tokens``, Gemini's ``thoughtsTokenCount``."""
    cache_write_1h: int | None = Field(default=None, alias="cacheWrite1h")
    """Of ``cache_write``, the tokens written for an hour (Anthropic's long retention, priced higher)."""
    estimated: bool | None = None
    """True when the server reported no usage and the counts are estimated (characters / 4 of the request and
    the reply, as Pi's faux provider counts). Not in Pi's format; Pi ignores it."""


UserContent: TypeAlias = Annotated[TextContent | ImageContent, Field(discriminator="type")]
AssistantContent: TypeAlias = Annotated[TextContent | ThinkingContent | ToolCall, Field(discriminator="type")]
ToolResultContent: TypeAlias = UserContent


class _Message(_Wire):
    """A transcript message: room for its key (see :func:`message_key`), outside pydantic's fields."""

    __slots__ = ("_key",)


_next_key = itertools.count(1).__next__


def message_key(message: object) -> int:
    """The stable key of a transcript message (user, assistant, tool result or custom).

    Assigned the first time it is asked for: the agent loop asks when the message starts (``message_start``),
    and a stream that hands a new partial object per event has the key carried over to each new object, so
    every event of one message has the same key. The key stays with the object (copies get their own), so
    holders of a key keep no reference to the message. Unique within the process.
    """
    key: int | None = getattr(message, "_key", None)
    if key is None:
        key = _next_key()
        object.__setattr__(message, "_key", key)
    return key


def carry_key(source: object, target: object) -> None:
    """Give ``target`` (a new object for the same message, e.g. a provider's fresh partial) ``source``'s key."""
    object.__setattr__(target, "_key", message_key(source))


class UserMessage(_Message):
    role: Literal["user"] = "user"
    content: str | list[UserContent]
    timestamp: int = Field(default_factory=now_ms)


@dataclass(frozen=True, slots=True)
class RequestFailure:
    """What a provider saw of a failed request, for the retry classifier (``pi_notebook.ai.retry``).

    ``status`` is the HTTP status (``None``: no response); ``retry_after_ms`` is the delay the server asked for
    (``retry-after-ms`` or ``retry-after``), ``None`` when it named none; ``should_retry`` is its
    ``x-should-retry`` header, ``None`` when absent.
    """

    status: int | None = None
    retry_after_ms: float | None = None
    should_retry: bool | None = None


class AssistantMessage(_Message):
    role: Literal["assistant"] = "assistant"
    content: list[AssistantContent] = Field(default_factory=list)
    api: str = "unknown"
    provider: str = "unknown"
    model: str = "unknown"
    response_id: str | None = None
    usage: Usage = Field(default_factory=Usage)
    stop_reason: StopReason = "stop"
    error_message: str | None = None
    timestamp: int = Field(default_factory=now_ms)
    request_failure: RequestFailure | None = Field(default=None, exclude=True, repr=False)
    """Set on an ``error`` reply whose request failed before streaming (status, the server's retry hints).
    Not part of Pi's wire format: never written to session files."""


class ToolResultMessage(_Message):
    role: Literal["toolResult"] = "toolResult"
    tool_call_id: str
    tool_name: str
    content: list[ToolResultContent] = Field(default_factory=list)
    details: Any = None
    usage: Usage | None = None
    added_tool_names: list[str] | None = None
    is_error: bool = False
    timestamp: int = Field(default_factory=now_ms)


Message: TypeAlias = Annotated[UserMessage | AssistantMessage | ToolResultMessage, Field(discriminator="role")]
"""What models see. The agent layer also carries app-defined messages; see ``pi_notebook.agent``."""

_MESSAGE = TypeAdapter[Message](Message)


def message_from_dict(data: dict[str, Any]) -> UserMessage | AssistantMessage | ToolResultMessage:
    """Validate one Pi-format message (camelCase or snake_case keys)."""
    return _MESSAGE.validate_python(data)


def message_to_dict(message: BaseModel) -> dict[str, Any]:
    """Pi's wire form: camelCase keys, unset optional fields left out."""
    return message.model_dump(mode="json", by_alias=True, exclude_none=True)


def message_to_json(message: BaseModel) -> str:
    return message.model_dump_json(by_alias=True, exclude_none=True)


def text_of(message: UserMessage | AssistantMessage | ToolResultMessage) -> str:
    """The concatenated text blocks of a message (thinking and tool calls left out)."""
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(block.text for block in content if isinstance(block, TextContent))
