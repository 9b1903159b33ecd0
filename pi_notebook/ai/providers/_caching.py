"""Prompt caching as Pi 0.83 asks for it: the retention setting, Anthropic's ``cache_control`` marker and
OpenAI's ``prompt_cache_key``.

Every request re-sends the whole conversation; a provider that caches the prefix it saw before charges about a
tenth for it. ``StreamOptions.cache_retention`` says how long to ask for: ``"none"`` (no cache markers, no cache
key), ``"short"`` (the provider's default, about 5 minutes) or ``"long"`` (Anthropic ``ttl: "1h"``, OpenAI
``prompt_cache_retention: "24h"``). Unset, it is ``"short"``, or ``"long"`` when the environment variable
``PI_CACHE_RETENTION`` is ``long`` (Pi's rule; no other value of it counts).
"""

from __future__ import annotations

import os
from typing import Any, Literal, TypeAlias

from .._request import StreamOptions

__all__ = [
    "CACHE_RETENTION_ENV",
    "PROMPT_CACHE_KEY_MAX_LENGTH",
    "CacheRetention",
    "cache_control",
    "cache_session_id",
    "clamp_prompt_cache_key",
    "default_cache_retention",
    "resolve_cache_retention",
]

CacheRetention: TypeAlias = Literal["none", "short", "long"]
CACHE_RETENTION_ENV = "PI_CACHE_RETENTION"
PROMPT_CACHE_KEY_MAX_LENGTH = 64
"""OpenAI rejects a longer ``prompt_cache_key``; Pi cuts it to 64 characters (code points)."""


def default_cache_retention() -> CacheRetention:
    """``"long"`` when ``PI_CACHE_RETENTION=long``, else ``"short"`` (read at each call)."""
    return "long" if os.environ.get(CACHE_RETENTION_ENV) == "long" else "short"


def resolve_cache_retention(options: StreamOptions) -> CacheRetention:
    return options.cache_retention or default_cache_retention()


def cache_session_id(options: StreamOptions) -> str | None:
    """The session id the cache is keyed by; ``None`` when caching is off."""
    return None if resolve_cache_retention(options) == "none" else options.session_id


def clamp_prompt_cache_key(key: str | None) -> str | None:
    return None if key is None else key[:PROMPT_CACHE_KEY_MAX_LENGTH]


def cache_control(retention: CacheRetention, *, supports_long: bool = True) -> dict[str, Any] | None:
    """Anthropic's marker: ``{"type": "ephemeral"}``, with ``"ttl": "1h"`` for long retention where the server
    takes it; ``None`` when caching is off."""
    if retention == "none":
        return None
    if retention == "long" and supports_long:
        return {"type": "ephemeral", "ttl": "1h"}
    return {"type": "ephemeral"}
