"""A model as a session file records it, and back: :func:`model_record`, :func:`model_from_record`.

Pi records the model a session uses as a ``model_change`` entry (``provider``, ``modelId``) and reads the session's
model from the last such entry or assistant reply. That is enough for Pi's catalog of known models, not for ours: a
local server's model also needs its base URL, the context window it was given, the output limit and the variable
holding its key. The record adds them (``api``, ``baseUrl``, ``contextWindow``, ``maxTokens`` when it was set,
``keyEnv``), in Pi's camelCase; Pi keeps fields it does not know. Never the key itself, nor the model's headers
(they may hold credentials).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._request import Model
from .models import _PROVIDERS, model_from_spec, spec_prefix

__all__ = ["model_from_record", "model_record"]

_COMPATIBLE = ("openai-compatible", "anthropic-compatible")


def model_record(model: Model) -> dict[str, Any]:
    """What a ``model_change`` entry records of ``model`` (see the module docstring)."""
    record: dict[str, Any] = {
        "provider": model.provider,
        "modelId": model.id,
        "api": model.api,
        "baseUrl": model.base_url,
        "contextWindow": model.context_window,
    }
    if "max_tokens" in model.model_fields_set:  # sent to the server only when set (see Model)
        record["maxTokens"] = model.max_tokens
    if model.key_env:
        record["keyEnv"] = model.key_env
    return record


def model_from_record(record: Mapping[str, Any]) -> Model:
    """The model a record describes, rebuilt as ``%pi model`` would make it (known models keep their prices and
    limits). Raises ``ValueError`` (one line, saying what is missing) when it cannot be rebuilt: an unknown
    provider, or a local server's record without its base URL (Pi's own entries, and files written before the
    record had one)."""
    provider, model_id = record.get("provider"), record.get("modelId")
    if not isinstance(provider, str) or not isinstance(model_id, str) or not provider or not model_id:
        raise ValueError("the session file does not say which model it used")
    base_url = record.get("baseUrl") if isinstance(record.get("baseUrl"), str) else ""
    options: dict[str, Any] = {
        "context_window": _positive(record.get("contextWindow")),
        "max_tokens": _positive(record.get("maxTokens")),
        "key_env": record.get("keyEnv") if isinstance(record.get("keyEnv"), str) else None,
    }
    if provider in _COMPATIBLE:
        if not base_url:
            raise ValueError(f"the session file does not say which server {provider}:{model_id} was on")
        return model_from_spec(f"{provider}:{base_url}:{model_id}", **options)
    prefix = spec_prefix(provider, record.get("api"))
    if prefix not in _PROVIDERS:
        raise ValueError(f"{provider}:{model_id} is not a model this version can connect to")
    other: dict[str, Any] = {"base_url": base_url} if base_url and base_url != _PROVIDERS[prefix][1] else {}
    return model_from_spec(f"{prefix}:{model_id}", **options, **other)


def _positive(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
