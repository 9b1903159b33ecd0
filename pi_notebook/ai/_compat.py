"""What an OpenAI-compatible server accepts (Pi's ``OpenAICompletionsCompat``), detected per model.

"OpenAI-compatible" servers differ in small ways that decide whether a request works at all: which field
limits the output (llama-cpp-python and LiteLLM honour only ``max_tokens``; OpenAI's reasoning models only
``max_completion_tokens``), whether an assistant message holding only tool calls may have ``"content": null``
(llama-cpp-python's server rejects it), whether text may come as content parts (llama-cpp-python with a GGUF's
own chat template fails on them), whether the ``developer`` role exists. As in Pi, the settings are detected
from the provider and base URL (:func:`resolve_openai_compat`), and any field set in ``Model.compat`` wins::

    Model(..., compat=OpenAICompletionsCompat(max_tokens_field="max_tokens"))

Detection follows Pi 0.83's ``detectCompat`` for the hosted APIs it knows, and adds one rule for servers it
does not know (provider ``openai-compatible`` or any base URL that is not a known host: llama.cpp,
llama-cpp-python, vLLM, Ollama, LM Studio, LiteLLM): ``max_tokens``, the ``system`` role, and ``""`` rather than
``null`` as the content of a tool-call-only assistant message, which every such server accepts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

__all__ = ["OpenAICompletionsCompat", "ResolvedOpenAICompat", "resolve_openai_compat"]

MaxTokensField = Literal["max_completion_tokens", "max_tokens"]


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
    )


def resolve_openai_compat(model: _Model) -> ResolvedOpenAICompat:
    """The settings for ``model``: detected from its provider and base URL, overridden by ``model.compat``."""
    detected = _detect(model)
    overrides = model.compat
    if overrides is None:
        return detected
    fields = {name: getattr(detected, name) for name in ResolvedOpenAICompat.__slots__}
    fields |= {name: value for name, value in overrides if value is not None}
    return ResolvedOpenAICompat(**fields)
