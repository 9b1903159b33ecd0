"""What one model request is made of: the model, the context and the options a stream function gets."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_serializer
from pydantic.alias_generators import to_camel

from ._abort import AbortSignal
from ._awaitable import MaybeAwaitable
from ._compat import OpenAICompletionsCompat
from ._secret import mask_headers, secret_value, strip_api_key
from ._stream import AssistantMessageEventStream
from .messages import Cost, Message, Usage

__all__ = [
    "Context",
    "Model",
    "ModelCost",
    "StreamFn",
    "StreamOptions",
    "ThinkingLevel",
    "Tool",
    "WireApi",
    "cache_savings",
    "input_tokens",
    "usage_with_cost",
]

ThinkingLevel: TypeAlias = Literal["off", "minimal", "low", "medium", "high", "xhigh", "max"]


class ModelCost(BaseModel):
    """US dollars per million tokens."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)
    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0


class Model(BaseModel):
    """Which model to call and how: ``api`` picks the wire format, ``provider`` names the vendor.

    ``headers`` are sent with every request. Credentials among them (``Authorization``, ``x-api-key``, any
    name with *key*, *token*, *auth*, *secret*...) are shown as ``***`` in ``repr`` and in ``model_dump``.

    ``context_window`` drives compaction and overflow detection; ``max_tokens`` is the output limit (sent to
    OpenAI-compatible servers only when set explicitly: their own default is "until the context is full", and a
    limit above a small server's context is an error there). ``key_env`` names the environment variable that
    holds the key when the provider's own (``OPENAI_API_KEY``, …) does not apply, e.g. a LiteLLM proxy's key.
    ``compat`` overrides what is detected about an OpenAI-compatible server (see :class:`OpenAICompletionsCompat`).
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)
    id: str
    name: str = ""
    api: str
    provider: str
    base_url: str = ""
    reasoning: bool = False
    input: tuple[Literal["text", "image"], ...] = ("text",)
    cost: ModelCost = Field(default_factory=ModelCost)
    context_window: int = 128_000
    max_tokens: int = 16_384
    headers: Mapping[str, str] | None = None
    key_env: str | None = None
    compat: OpenAICompletionsCompat | None = None
    thinking_level_map: Mapping[str, str | None] | None = None
    """Pi's ``thinkingLevelMap``: a thinking level's name on the wire (``{"xhigh": "xhigh"}``), or ``None`` for a
    level the model does not have (``{"minimal": None}``: a request for it uses the next one up)."""

    @property
    def supports_images(self) -> bool:
        return "image" in self.input

    @field_serializer("headers")
    def _masked_headers(self, headers: Mapping[str, str] | None) -> dict[str, str] | None:
        return mask_headers(headers)

    def __repr_args__(self) -> Any:
        for name, value in super().__repr_args__():
            yield name, mask_headers(value) if name == "headers" else value


@dataclass(slots=True)
class Tool:
    """A tool as the model sees it: name, description and a JSON schema for the arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(slots=True)
class Context:
    """What one request sends. Not validated or copied: the agent loop builds it per request."""

    system_prompt: str = ""
    messages: Sequence[Message] = ()
    tools: Sequence[Tool] | None = None


@dataclass(slots=True, repr=False)
class StreamOptions:
    """Per-request options. ``api_key`` is held as a secret (surrounding whitespace stripped) and never printed.

    Timeouts: ``timeout_ms`` bounds the whole HTTP request (connect to last byte; on expiry the error reads as a
    timeout, which is retried); ``total_timeout_ms`` bounds it too, but its expiry is never retried (a reply that
    still arrives after it would most likely take as long again); ``idle_timeout_ms`` bounds each gap between
    received bytes, so a server that drips a byte now and then never trips it. None covers time spent in tools or
    between turns.
    ``max_retries`` is layer-1 retry of the initial HTTP request only (0 = none, Pi's default); it never
    replays a request once streaming has begun.
    """

    api_key: SecretStr | str | None = None
    signal: AbortSignal | None = None
    max_retries: int = 0
    max_retry_delay_ms: int = 60_000
    timeout_ms: int | None = None
    total_timeout_ms: int | None = None
    idle_timeout_ms: int | None = 300_000
    headers: Mapping[str, str] | None = None
    reasoning: ThinkingLevel | None = None
    session_id: str | None = None
    cache_retention: Literal["none", "short", "long"] | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    tool_choice: str | Mapping[str, Any] | None = None
    """OpenAI-compatible APIs: ``"auto"``, ``"none"``, ``"required"`` or ``{"type": "function", "function":
    {"name": …}}`` (llama-cpp-python's ``chatml-function-calling`` format calls a tool only when named here)."""
    on_response: Callable[[int, Mapping[str, str]], object] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.api_key = strip_api_key(self.api_key)

    def api_key_value(self) -> str | None:
        return secret_value(self.api_key)

    def __repr__(self) -> str:
        key = "'**********'" if self.api_key else None
        return (
            f"StreamOptions(api_key={key}, max_retries={self.max_retries}, "
            f"timeout_ms={self.timeout_ms}, idle_timeout_ms={self.idle_timeout_ms})"
        )


def usage_with_cost(model: Model, usage: Usage) -> Usage:
    """Fill in ``usage.cost`` from the model's prices (Pi's ``calculateCost``: cache reads and writes at their
    own prices, 1-hour writes at twice the input price) and ``total_tokens``; returns ``usage``."""
    price = model.cost
    long_writes = usage.cache_write_1h or 0  # Anthropic charges twice the input price for 1-hour cache writes
    cost = Cost(
        input=usage.input * price.input / 1e6,
        output=usage.output * price.output / 1e6,
        cache_read=usage.cache_read * price.cache_read / 1e6,
        cache_write=((usage.cache_write - long_writes) * price.cache_write + long_writes * 2 * price.input) / 1e6,
    )
    cost.total = cost.input + cost.output + cost.cache_read + cost.cache_write
    usage.cost = cost
    usage.total_tokens = usage.input + usage.output + usage.cache_read + usage.cache_write
    return usage


def input_tokens(usage: Usage) -> int:
    """Every token a reply's request gave the model: plain input, read from the prompt cache and written to it (what
    ``budget.max_input_tokens`` counts, and the usage line and a run's receipt show)."""
    return usage.input + usage.cache_read + usage.cache_write


def cache_savings(model: Model, usage: Usage) -> float:
    """What prompt caching saved on one reply, in US dollars: the tokens read from and written to the cache at the
    model's input price, less what they cost (negative when a first write cost more than reads saved)."""
    cached = usage.cache_read + usage.cache_write
    return cached * model.cost.input / 1e6 - usage.cost.cache_read - usage.cost.cache_write


class StreamFn(Protocol):
    """``stream_fn(model, context, options)`` returns a stream, or an awaitable of one (as Pi's ``streamFn`` may
    return a promise).

    It must not raise for request, model or runtime failures: those end the stream with an ``error`` or
    ``aborted`` message (see :class:`AssistantMessageEventStream`). If it breaks that contract anyway, the
    agent turns the exception into a failed reply, and :func:`pi_notebook.ai.stream` into an ``error`` stream.
    """

    def __call__(
        self, model: Model, context: Context, options: StreamOptions, /
    ) -> MaybeAwaitable[AssistantMessageEventStream]: ...


@dataclass(frozen=True, slots=True)
class WireApi:
    """A wire API (a provider protocol) as its module exports it (``API``): the ``Model.api`` value it serves and
    its stream function. ``_api_registry.py`` lists the built-in modules."""

    name: str
    stream: StreamFn
