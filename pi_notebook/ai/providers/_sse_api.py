"""What the HTTP providers share: resolve the key, POST to ``{base_url}{path}``, read the SSE response.

Each provider supplies only what differs: its auth headers, its payload, how it words an error status, and how
it reads the stream. A reply stopped, failed or timed out after the server began answering keeps the usage the
server reported so far and gets an estimate of the rest (``usage.estimated``), so budgets count what such a reply
cost (a server that streams usage only at the end, or never, would otherwise count it 0/0).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any

import httpx

from .._egress import refusal
from .._http import ProviderError, ProviderRun, ReadJson, post_sse, run_provider
from .._keys import replay_key, resolve_api_key
from .._request import Context, Model, StreamOptions, usage_with_cost
from .._stream import AssistantMessageEventStream
from ._usage_estimate import estimate_tokens, estimated_usage, serialize_context

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
    read_json: ReadJson,
) -> AssistantMessageEventStream:
    """Stream one assistant message; never raises. A missing key is required only when ``model.provider`` is
    ``key_required_for`` (local OpenAI-compatible servers need none) or ``model.key_env`` names a variable, and
    is reported as the stream's error. While a cassette that only replays is active, a missing key (the
    ``key_env`` variable's too) is a placeholder (``_keys.REPLAY_KEY``)."""
    options = options or StreamOptions()
    key: str | Exception | None
    if model.key_env and not options.api_key_value():
        value = os.environ.get(model.key_env, "")
        if value:
            key = resolve_api_key(model.provider, replace(options, api_key=value), required=True)
        else:  # a cassette that only replays needs no key: the placeholder, as for the providers' own variables
            key = replay_key() or ProviderError(
                f"No API key for model {model.id}: set the environment variable {model.key_env}"
            )
    else:
        key = resolve_api_key(model.provider, options, required=model.provider == key_required_for)

    async def body(run: ProviderRun) -> None:
        url = model.base_url.rstrip("/") + path
        refused = refusal(model, url)  # before anything, the key included, is sent (``_egress``)
        if refused is not None:
            raise ProviderError(refused, retryable=False)
        if isinstance(key, Exception):
            raise key
        payload = build_payload(model, context, options)
        try:
            await post_sse(run, url, payload, headers(key), describe_status, read, read_json)
        except ProviderError as error:
            raise _explain_empty_stream(error, model, context) from None
        finally:  # stopped, failed or timed out after the server began: count what it was given and wrote
            if run.answered and not run.stream.ended:
                message = run.builder.message
                message.usage = usage_with_cost(model, estimated_usage(model, context, message.content, message.usage))

    return run_provider(model, options, body, secret=key if isinstance(key, str) else None)


def _explain_empty_stream(error: ProviderError, model: Model, context: Context) -> ProviderError:
    """A server that fails after answering 200 sends no error text (llama-cpp-python when the prompt does not
    fit: its log says "Requested tokens (N) exceed context window of M"). When the prompt, estimated at
    characters / 4, does not fit ``model.context_window`` either, say so in words the overflow check knows, so
    the session compacts instead of giving up."""
    if not error.empty_stream or not model.context_window:
        return error
    estimate = estimate_tokens(len(serialize_context(context)))
    if estimate < model.context_window:
        return error
    return ProviderError(
        f"{error.message}; the prompt (about {estimate} tokens, estimated) exceeds the context window of "
        f"{model.context_window} tokens",
        error.status,
        error.headers,
        error.body,
        empty_stream=True,
    )
