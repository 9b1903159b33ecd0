"""What the HTTP providers share: resolve the key, POST to ``{base_url}{path}``, read the SSE response.

Each provider supplies only what differs: its auth headers, its payload, how it words an error status, and how
it reads the stream.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import httpx

from .._http import ProviderRun, post_sse, run_provider
from .._keys import resolve_api_key
from .._request import Context, Model, StreamOptions
from .._stream import AssistantMessageEventStream

__all__ = ["stream_sse_api"]


def stream_sse_api(
    model: Model,
    context: Context,
    options: StreamOptions | None,
    *,
    path: str,
    key_required_for: str,
    headers: Callable[[str | None], Mapping[str, str]],
    build_payload: Callable[[Model, Context, StreamOptions], Mapping[str, Any]],
    describe_status: Callable[[int, str], str],
    read: Callable[[ProviderRun, httpx.Response], Awaitable[None]],
) -> AssistantMessageEventStream:
    """Stream one assistant message; never raises. A missing key is required only when ``model.provider`` is
    ``key_required_for`` (local OpenAI-compatible servers need none), and is reported as the stream's error."""
    options = options or StreamOptions()
    key = resolve_api_key(model.provider, options, required=model.provider == key_required_for)

    async def body(run: ProviderRun) -> None:
        if isinstance(key, Exception):
            raise key
        url = model.base_url.rstrip("/") + path
        await post_sse(run, url, build_payload(model, context, options), headers(key), describe_status, read)

    return run_provider(model, options, body, secret=key if isinstance(key, str) else None)
