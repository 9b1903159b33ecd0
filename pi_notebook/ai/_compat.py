"""What an OpenAI-compatible server accepts (Pi's ``OpenAICompletionsCompat``), detected per model.

"OpenAI-compatible" servers differ in small ways that decide whether a request works at all: which field
limits the output (llama-cpp-python and LiteLLM honour only ``max_tokens``; OpenAI's reasoning models only
``max_completion_tokens``), whether an assistant message holding only tool calls may have ``"content": null``
(llama-cpp-python's server rejects it), whether text may come as content parts (llama-cpp-python with a GGUF's
own chat template fails on them), whether the ``developer`` role exists. As in Pi, the settings are detected
from the provider and base URL (:func:`resolve_openai_compat`), and any field set in ``Model.compat`` wins::

    Model(..., compat=OpenAICompletionsCompat(max_tokens_field="max_tokens"))

The same class carries Pi's compat keys of the other APIs (Anthropic's ``supportsEagerToolInputStreaming``,
``supportsCacheControlOnTools``, ``forceAdaptiveThinking``…, the Responses API's ``supportsExplicitPromptCacheMode``),
resolved per API by :func:`resolve_anthropic_compat` and :func:`resolve_responses_compat` with Pi's defaults.

Detection follows Pi 0.83's ``detectCompat`` for the hosted APIs it knows, and adds one rule for servers it
does not know (provider ``openai-compatible`` or any base URL that is not a known host: llama.cpp,
llama-cpp-python, vLLM, Ollama, LM Studio, LiteLLM): ``max_tokens``, the ``system`` role, and ``""`` rather than
``null`` as the content of a tool-call-only assistant message, which every such server accepts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

__all__ = [
    "AnthropicCompat",
    "OpenAICompletionsCompat",
    "ResolvedOpenAICompat",
    "ResponsesCompat",
    "resolve_anthropic_compat",
    "resolve_openai_compat",
    "resolve_responses_compat",
]

MaxTokensField = Literal["max_completion_tokens", "max_tokens"]
_T = TypeVar("_T", "AnthropicCompat", "ResponsesCompat")


class OpenAICompletionsCompat(BaseModel):
    """Per-model overrides of what the server accepts; a field left ``None`` is detected.

    Loads Pi's camelCase keys (``maxTokensField``, ``supportsUsageInStreaming``, …); Pi's other keys are ignored.
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, extra="ignore")

    supports_developer_role: bool | None = None
    """The ``developer`` role for the system prompt of reasoning models (else ``system``)."""
    supports_reasoning_effort: bool | None = None
    """Send ``reasoning_effort`` when a thinking level is set on a reasoning model."""
    supports_usage_in_streaming: bool | None = None
    """Ask for usage with ``stream_options: {"include_usage": true}``. A server that streams no usage anyway
    gets an estimate (``usage.estimated``)."""
    max_tokens_field: MaxTokensField | None = None
    """Which field carries the output limit."""
    requires_tool_result_name: bool | None = None
    """Tool results carry the tool's ``name``."""
    requires_assistant_after_tool_result: bool | None = None
    """A user message may not follow tool results directly: a short assistant message is put in between."""
    supports_null_assistant_content: bool | None = None
    """An assistant message with only tool calls goes out with ``"content": null`` (OpenAI's own form) rather
    than ``""``. Not in Pi."""
    user_text_as_string: bool | None = None
    """A text-only user message goes out as one string rather than content parts (images always need parts).
    Not in Pi, whose agent sends parts; every server accepts a string."""
    send_max_tokens: bool | None = None
    """Send the output limit on every request (the model's ``max_tokens``, cut to what is left of the context
    window), as Pi does; else only when it was set explicitly. Detected: on for the hosted APIs Pi knows, off for
    other servers (whose default is "until the context is full", and for which a limit above a small window is
    an error). Not in Pi."""
    supports_store: bool | None = None
    """Send ``store: false`` (the request is not kept for OpenAI's dashboard)."""
    supports_strict_mode: bool | None = None
    """Tools carry ``strict`` (``false``: the schema guides the model, nothing enforces it)."""
    supports_long_cache_retention: bool | None = None
    """Long cache retention is asked for: ``prompt_cache_retention: "24h"`` (OpenAI), ``ttl: "1h"``
    (Anthropic's ``cache_control``)."""
    cache_control_format: Literal["anthropic"] | None = None
    """``"anthropic"``: mark the system prompt, the last tool and the last message with Anthropic's
    ``cache_control`` (an OpenAI-compatible route to Claude, e.g. OpenRouter's ``anthropic/…`` models)."""
    send_session_affinity_headers: bool | None = None
    """Send the session id as ``session_id`` / ``x-client-request-id`` (or OpenRouter's ``x-session-id``) headers,
    so a load balancer keeps a session on the machine that holds its cache."""
    # Anthropic Messages (Pi's AnthropicMessagesCompat)
    supports_eager_tool_input_streaming: bool | None = None
    """Anthropic: tools carry ``eager_input_streaming: true`` (else the fine-grained streaming beta header)."""
    supports_cache_control_on_tools: bool | None = None
    """Anthropic: the last tool carries ``cache_control``."""
    supports_temperature: bool | None = None
    """Anthropic: ``temperature`` is sent (Claude Opus 4.7+ refuses it)."""
    force_adaptive_thinking: bool | None = None
    """Anthropic: thinking is ``{"type": "adaptive"}`` with an effort, not a token budget (Claude 4.6+)."""
    # OpenAI Responses (Pi's OpenAIResponsesCompat)
    supports_explicit_prompt_cache_mode: bool | None = None
    """Responses: with retention ``none``, send ``prompt_cache_options: {"mode": "explicit"}`` so nothing is
    cached implicitly."""


class _Model(Protocol):
    """What detection reads of a :class:`~pi_notebook.ai.Model` (a protocol: ``Model`` itself holds a compat)."""

    @property
    def id(self) -> str: ...
    @property
    def provider(self) -> str: ...
    @property
    def base_url(self) -> str: ...
    @property
    def compat(self) -> OpenAICompletionsCompat | None: ...


@dataclass(frozen=True, slots=True)
class ResolvedOpenAICompat:
    """Every setting decided: detection, then the model's overrides."""

    supports_developer_role: bool
    supports_reasoning_effort: bool
    supports_usage_in_streaming: bool
    max_tokens_field: MaxTokensField
    requires_tool_result_name: bool
    requires_assistant_after_tool_result: bool
    supports_null_assistant_content: bool
    user_text_as_string: bool
    send_max_tokens: bool
    supports_store: bool
    supports_strict_mode: bool
    supports_long_cache_retention: bool
    cache_control_format: Literal["anthropic"] | None
    send_session_affinity_headers: bool
    session_affinity_format: Literal["openai", "openrouter"]


_KNOWN_PROVIDERS = frozenset(
    {
        "openai", "openrouter", "groq", "mistral", "deepseek", "xai", "together", "cerebras", "zai", "zai-coding-cn",
        "moonshotai", "moonshotai-cn", "nvidia", "ant-ling", "opencode", "cloudflare-workers-ai",
        "cloudflare-ai-gateway", "fireworks", "huggingface",
    }
)  # fmt: skip
_KNOWN_HOSTS = (
    "api.openai.com", "openrouter.ai", "api.groq.com", "api.mistral.ai", "deepseek.com", "api.x.ai", "cerebras.ai",
    "api.together.ai", "api.together.xyz", "api.z.ai", "open.bigmodel.cn", "api.moonshot.", "integrate.api.nvidia.com",
    "api.ant-ling.com", "opencode.ai", "api.cloudflare.com", "gateway.ai.cloudflare.com", "chutes.ai",
    "api.fireworks.ai", "router.huggingface.co",
)  # fmt: skip


def _detect(model: _Model) -> ResolvedOpenAICompat:
    provider, url = model.provider, model.base_url.lower()
    zai = provider in ("zai", "zai-coding-cn") or "api.z.ai" in url or "open.bigmodel.cn" in url
    together = provider == "together" or "api.together.ai" in url or "api.together.xyz" in url
    moonshot = provider in ("moonshotai", "moonshotai-cn") or "api.moonshot." in url
    openrouter = provider == "openrouter" or "openrouter.ai" in url
    workers_ai = provider == "cloudflare-workers-ai" or "api.cloudflare.com" in url
    ai_gateway = provider == "cloudflare-ai-gateway" or "gateway.ai.cloudflare.com" in url
    nvidia = provider == "nvidia" or "integrate.api.nvidia.com" in url
    ant_ling = provider == "ant-ling" or "api.ant-ling.com" in url
    grok = provider == "xai" or "api.x.ai" in url
    non_standard = (
        nvidia or provider == "cerebras" or "cerebras.ai" in url or grok or together or "chutes.ai" in url
        or "deepseek.com" in url or zai or moonshot or provider == "opencode" or "opencode.ai" in url
        or workers_ai or ai_gateway or ant_ling
    )  # fmt: skip
    unknown = provider not in _KNOWN_PROVIDERS and not any(host in url for host in _KNOWN_HOSTS)
    no_long_retention = together or workers_ai or ai_gateway or nvidia or ant_ling
    pi_max_tokens = "chutes.ai" in url or moonshot or ai_gateway or together or nvidia or ant_ling or zai
    developer_model = openrouter and model.id.startswith(("anthropic/", "openai/"))
    return ResolvedOpenAICompat(
        supports_developer_role=developer_model or not (non_standard or openrouter or unknown),
        supports_reasoning_effort=not (grok or zai or moonshot or together or ai_gateway or nvidia or ant_ling),
        supports_usage_in_streaming=True,
        max_tokens_field="max_tokens" if pi_max_tokens or unknown else "max_completion_tokens",
        requires_tool_result_name=False,
        requires_assistant_after_tool_result=False,
        supports_null_assistant_content=not unknown,
        user_text_as_string=True,
        send_max_tokens=not unknown,
        supports_store=not non_standard,
        supports_strict_mode=not (moonshot or together or ai_gateway or nvidia),
        supports_long_cache_retention=not no_long_retention,
        cache_control_format="anthropic" if provider == "openrouter" and model.id.startswith("anthropic/") else None,
        send_session_affinity_headers=False,
        session_affinity_format="openrouter" if openrouter else "openai",
    )


def resolve_openai_compat(model: _Model) -> ResolvedOpenAICompat:
    """The settings for ``model``: detected from its provider and base URL, overridden by ``model.compat``."""
    detected = _detect(model)
    overrides = model.compat
    if overrides is None:
        return detected
    fields = {name: getattr(detected, name) for name in ResolvedOpenAICompat.__slots__}
    fields |= {name: value for name, value in overrides if value is not None and name in fields}
    return ResolvedOpenAICompat(**fields)


@dataclass(frozen=True, slots=True)
class AnthropicCompat:
    """What an Anthropic Messages server accepts (Pi's ``getAnthropicCompat``): Anthropic's own defaults, then
    the model's ``compat`` overrides."""

    supports_eager_tool_input_streaming: bool = True
    supports_long_cache_retention: bool = True
    supports_cache_control_on_tools: bool = True
    supports_temperature: bool = True
    force_adaptive_thinking: bool = False


def resolve_anthropic_compat(model: _Model) -> AnthropicCompat:
    return _overridden(AnthropicCompat(), model.compat)


@dataclass(frozen=True, slots=True)
class ResponsesCompat:
    """What an OpenAI Responses server accepts (Pi's ``openai-responses`` ``getCompat``). ``strict`` on tools is
    off unless the model says so (Pi's catalog says so for OpenAI's own models)."""

    supports_developer_role: bool = True
    supports_strict_mode: bool = False
    supports_long_cache_retention: bool = True
    supports_explicit_prompt_cache_mode: bool = False
    session_affinity_format: Literal["openai", "openrouter"] = "openai"


def resolve_responses_compat(model: _Model) -> ResponsesCompat:
    openrouter = model.provider == "openrouter" or "openrouter.ai" in model.base_url
    return _overridden(ResponsesCompat(session_affinity_format="openrouter" if openrouter else "openai"), model.compat)


def _overridden(defaults: _T, overrides: OpenAICompletionsCompat | None) -> _T:
    if overrides is None:
        return defaults
    changes = {
        name: getattr(overrides, name) for name in defaults.__slots__ if getattr(overrides, name, None) is not None
    }
    return replace(defaults, **changes)
