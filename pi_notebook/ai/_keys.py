"""Where API keys come from: the request's options, else the provider's environment variable.

Keys are held as ``pydantic.SecretStr`` in options and only unwrapped to build the request header. Surrounding
whitespace is stripped (a key from a ``.env`` file often ends with a newline); a key that still holds a control
or non-ASCII character is reported as a non-retryable error that does not contain it (see ``_secret``). While a
cassette that can only replay is active, a missing key is replaced by a placeholder (:data:`REPLAY_KEY`): the
recorded answers need none, so a notebook recorded with a key replays in CI without one.

Which environment variables hold secrets and what a tool call keeps secret is ``_secret_env``.
"""

from __future__ import annotations

import os

from ._http import ProviderError
from ._request import StreamOptions
from ._secret import ENV_KEYS, api_key_problem
from ._secret_env import ENV_FALLBACK_KEYS
from .cassette._route import active_cassette

__all__ = ["REPLAY_KEY", "replay_key", "resolve_api_key"]

REPLAY_KEY = "no-key-cassette-replay"


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
