"""Where API keys come from: the request's options, else the provider's environment variable.

Keys are held as ``pydantic.SecretStr`` in options and only unwrapped to build the request header. Surrounding
whitespace is stripped (a key from a ``.env`` file often ends with a newline); a key that still holds a control
or non-ASCII character is reported as a non-retryable error that does not contain it (see ``_secret``). While a
cassette that can only replay is active, a missing key is replaced by a placeholder (:data:`REPLAY_KEY`): the
recorded answers need none, so a notebook recorded with a key replays in CI without one.
"""

from __future__ import annotations

import os

from ._http import ProviderError
from ._request import StreamOptions
from ._secret import ENV_KEYS, api_key_problem
from .cassette._route import active_cassette

__all__ = [
    "ENV_FALLBACK_KEYS",
    "ENV_KEYS",
    "PROVIDER_KEY_VARIABLES",
    "REPLAY_KEY",
    "provider_key_values",
    "replay_key",
    "resolve_api_key",
]

REPLAY_KEY = "no-key-cassette-replay"


ENV_FALLBACK_KEYS = {"google": ("GOOGLE_API_KEY",)}
"""Further variables read when the provider's own is not set: Google's SDKs read ``GOOGLE_API_KEY``."""

PROVIDER_KEY_VARIABLES: tuple[str, ...] = (
    *ENV_KEYS.values(),
    *(name for names in ENV_FALLBACK_KEYS.values() for name in names),
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_ADMIN_KEY",
)
"""Environment variables that hold provider credentials: the keys above and other credentials the official
SDKs read. Tools leave them out of their environment, and their values are redacted from tool results."""


def provider_key_values() -> list[str]:
    """The current values of :data:`PROVIDER_KEY_VARIABLES` that are set (read at each call)."""
    return [value for name in PROVIDER_KEY_VARIABLES if (value := os.environ.get(name))]


def replay_key() -> str | None:
    """:data:`REPLAY_KEY` while the active cassette can only replay (no request will leave), else ``None``."""
    cassette = active_cassette()
    return REPLAY_KEY if cassette is not None and cassette.offline else None


def resolve_api_key(provider: str, options: StreamOptions, *, required: bool) -> str | Exception | None:
    """The key to send, ``None`` when none is needed, or an error to report (never raised here)."""
    key = (options.api_key_value() or "").strip()
    source = "api_key"
    for variable in (ENV_KEYS.get(provider), *ENV_FALLBACK_KEYS.get(provider, ())):
        if key or variable is None:
            break
        key = os.environ.get(variable, "").strip()
        source = variable
    if key:
        problem = api_key_problem(key)
        if problem is None:
            return key
        return ProviderError(f"The API key for provider {provider} (from {source}) {problem}; it was not sent")
    if (placeholder := replay_key()) is not None:
        return placeholder
    if required:
        names = (ENV_KEYS.get(provider, f"{provider.upper()}_API_KEY"), *ENV_FALLBACK_KEYS.get(provider, ()))
        return ProviderError(f"No API key for provider {provider}: set {' or '.join(names)} or pass api_key")
    return None
