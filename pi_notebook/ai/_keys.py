"""Where API keys come from: the request's options, else the provider's environment variable.

Keys are held as ``pydantic.SecretStr`` in options and only unwrapped to build the request header.
"""

from __future__ import annotations

import os

from ._http import ProviderError
from ._request import StreamOptions

__all__ = ["ENV_KEYS", "resolve_api_key"]

ENV_KEYS = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "groq": "GROQ_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "xai": "XAI_API_KEY",
    "together": "TOGETHER_API_KEY",
    "cerebras": "CEREBRAS_API_KEY",
}


def resolve_api_key(provider: str, options: StreamOptions, *, required: bool) -> str | Exception | None:
    """The key to send, ``None`` when none is needed, or an error to report (never raised here)."""
    key = options.api_key_value()
    if not key:
        variable = ENV_KEYS.get(provider)
        key = os.environ.get(variable, "") if variable else ""
    if key:
        return key
    if required:
        variable = ENV_KEYS.get(provider, f"{provider.upper()}_API_KEY")
        return ProviderError(f"No API key for provider {provider}: set {variable} or pass api_key")
    return None
