"""Where API keys come from: the request's options, else the provider's environment variable.

Keys are held as ``pydantic.SecretStr`` in options and only unwrapped to build the request header. While a
cassette that can only replay is active, a missing key is replaced by a placeholder (:data:`REPLAY_KEY`): the
recorded answers need none, so a notebook recorded with a key replays in CI without one.
"""

from __future__ import annotations

import os

from ._cassette_route import active_cassette
from ._http import ProviderError
from ._model import StreamOptions

__all__ = ["ENV_KEYS", "REPLAY_KEY", "resolve_api_key"]

REPLAY_KEY = "no-key-cassette-replay"

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
    cassette = active_cassette()
    if cassette is not None and cassette.offline:
        return REPLAY_KEY
    if required:
        variable = ENV_KEYS.get(provider, f"{provider.upper()}_API_KEY")
        return ProviderError(f"No API key for provider {provider}: set {variable} or pass api_key")
    return None
