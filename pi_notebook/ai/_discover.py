"""Read what an OpenAI-compatible server says about its models (``GET {base}/models``); used by
:func:`pi_notebook.ai.models.model_from_server`.

What servers report there (checked in their sources): llama.cpp's ``llama-server`` gives ``meta.n_ctx`` (the
context each request gets) and ``meta.n_ctx_train``; vLLM gives ``max_model_len``; OpenRouter and several
hosted APIs ``context_length``; LM Studio's own listing ``max_context_length``. llama-cpp-python's server, Ollama's
``/v1/models`` and LiteLLM's proxy list ids only: for them pass ``context_window`` yourself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

__all__ = ["context_window_of", "fetch_listing", "pick_model"]

# Where each server puts the context window of a listed model, in the order they are tried.
_WINDOW_FIELDS: tuple[tuple[str, ...], ...] = (
    ("meta", "n_ctx"),  # llama.cpp llama-server (tools/server/server-context.cpp, get_res_model_info)
    ("max_model_len",),  # vLLM (ModelCard)
    ("context_length",),  # OpenRouter, Together, …
    ("context_window",),  # Groq
    ("max_context_length",),  # LM Studio (/api/v0/models)
)


def context_window_of(entry: Mapping[str, Any]) -> int | None:
    """The context window a ``/models`` entry reports, if any (a positive integer)."""
    for path in _WINDOW_FIELDS:
        value: Any = entry
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def fetch_listing(url: str, key: str | None, timeout_s: float) -> list[dict[str, Any]]:
    """The entries (with a string ``id``) of the listing at ``url``; ``ValueError`` with a one-line reason."""
    headers = {"authorization": f"Bearer {key}", "x-api-key": key} if key else {}
    try:
        with httpx.Client(timeout=timeout_s) as client:
            response = client.get(url, headers=headers)
    except httpx.HTTPError as exc:
        raise ValueError(f"cannot read the model list at {url}: {type(exc).__name__}: {exc}") from None
    if response.status_code != 200:
        raise ValueError(f"cannot read the model list at {url}: HTTP {response.status_code}")
    try:
        data = response.json()
    except ValueError:
        raise ValueError(f"cannot read the model list at {url}: the answer is not JSON") from None
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ValueError(f"cannot read the model list at {url}: no 'data' list in the answer")
    return [e for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str)]


def pick_model(listing: list[dict[str, Any]], model_id: str, url: str) -> dict[str, Any]:
    """The entry for ``model_id`` (or an alias), or the only one when ``model_id`` is empty; else ``ValueError``."""
    ids = [entry["id"] for entry in listing]
    shown = ", ".join(ids[:10]) + (f", … ({len(ids)} in all)" if len(ids) > 10 else "")
    if not model_id:
        if len(listing) == 1:
            return listing[0]
        raise ValueError(f"{url} serves {len(ids)} models ({shown or 'none'}): name one after the URL")
    for entry in listing:
        if entry["id"] == model_id or model_id in (entry.get("aliases") or ()):
            return entry
    raise ValueError(f"{url} does not list model {model_id!r} (it lists: {shown or 'nothing'})")
