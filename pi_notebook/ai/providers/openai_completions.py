"""``api="openai-completions"``: OpenAI-compatible chat completions over SSE.

Serves OpenAI, vLLM, llama.cpp, llama-cpp-python, Ollama, LM Studio, LiteLLM, OpenRouter and others: POST
``{base_url}/chat/completions`` with ``stream: true``. Text, reasoning (``reasoning_content`` / ``reasoning``, as
thinking), tool calls with streamed arguments, usage (with cached tokens) and cost. The request is shaped by
what the server accepts (:mod:`pi_notebook.ai._compat`). A server that streams no usage (llama-cpp-python) gets
an estimate of what its model was given (``_usage_estimate.estimated_usage``), marked ``usage.estimated``; one that
answers with a whole JSON completion instead of a stream is read as that completion. The key comes from
``options.api_key``, the variable named by ``model.key_env``, or the provider's environment variable
(``OPENAI_API_KEY`` for ``openai``); local servers may need none.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import httpx

from .._http import ProviderError, ProviderRun, iter_sse
from .._request import Context, Model, StreamOptions, WireApi, usage_with_cost
from .._stream import AssistantMessageEventStream
from ..messages import TextContent, ThinkingContent, ToolCall, Usage
from ._openai_request import build_payload
from ._sse_api import stream_sse_api
from ._usage_estimate import estimated_usage

__all__ = ["API", "build_payload", "stream_openai_completions"]

_STOP_REASONS = {"stop": "stop", "end": "stop", "length": "length", "tool_calls": "toolUse", "function_call": "toolUse"}
_REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_text")


def stream_openai_completions(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AssistantMessageEventStream:
    """Stream one assistant message from an OpenAI-compatible endpoint. Never raises."""
    return stream_sse_api(
        model,
        context,
        options,
        path="/chat/completions",
        key_required_for="openai",
        headers=lambda key: {"authorization": f"Bearer {key}"} if key else {},
        build_payload=build_payload,
        describe_status=describe_status,
        read=partial(_read, context=context),
        read_json=partial(_read_json, context=context),
    )


def describe_status(status: int, body: str) -> str:
    """``429 Rate limit exceeded``, or ``400 status code (no body)``, as OpenAI's SDK words it."""
    if not body.strip():
        return f"{status} status code (no body)"
    return f"{status} {_error_text(body)}"


def _error_text(body: str) -> str:
    """The error's message (with its code when the message lacks it), from a non-empty error body."""
    try:
        data = json.loads(body)
    except ValueError:
        return body.strip()
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        code = error.get("code") or error.get("type")
        suffix = f" ({code})" if isinstance(code, str) and code not in error["message"] else ""
        return f"{error['message']}{suffix}"
    if isinstance(error, str):
        return error
    return json.dumps(data, separators=(",", ":"))


async def _read(run: ProviderRun, response: httpx.Response, *, context: Context) -> None:
    builder = run.builder
    message = builder.message
    content = message.content
    run.push(builder.start())
    calls: dict[int, int] = {}  # the stream's tool-call index -> our content index
    finish: str | None = None
    usage_seen = False
    async for sse in iter_sse(response):
        data = sse.data
        if data == "[DONE]":
            break
        if not data:
            continue
        chunk = json.loads(data)
        if not isinstance(chunk, dict):
            continue
        if chunk.get("error"):
            raise ProviderError(_error_text(data))
        if message.response_id is None and isinstance(chunk.get("id"), str):
            message.response_id = chunk["id"]
        if chunk.get("usage"):
            message.usage = usage_with_cost(run.model, _usage(chunk["usage"]))
            usage_seen = True
        choices = chunk.get("choices") or ()
        if not choices:
            continue
        choice = choices[0]
        _delta(run, calls, choice.get("delta") or {})
        if choice.get("finish_reason"):
            finish = choice["finish_reason"]
    for index in range(len(content)):  # like Pi, blocks end when the stream does
        run.push(builder.end_block(index))
    if finish is None:
        raise ProviderError("Stream ended without finish_reason")
    _finish(run, finish, context, usage_seen)


def _delta(run: ProviderRun, calls: dict[int, int], delta: dict[str, Any]) -> None:
    builder = run.builder
    content = builder.message.content
    field = next((f for f in _REASONING_FIELDS if isinstance(delta.get(f), str) and delta[f]), None)
    if field:
        if not (content and isinstance(content[-1], ThinkingContent)):
            run.push(builder.thinking_start())
            content[-1].thinking_signature = field  # type: ignore[union-attr]  # replayed in this field (Pi)
        run.push(builder.thinking_delta(len(content) - 1, delta[field]))
    text = delta.get("content")
    if isinstance(text, str) and text:
        if not (content and isinstance(content[-1], TextContent)):
            run.push(builder.text_start())
        run.push(builder.text_delta(len(content) - 1, text))
    for call in delta.get("tool_calls") or ():
        _tool_call_delta(run, calls, call)


def _finish(run: ProviderRun, finish: str, context: Context, usage_seen: bool) -> None:
    reason = _STOP_REASONS.get(finish)
    if reason is None:
        raise ProviderError(f"Provider finish_reason: {finish}")
    if not usage_seen:  # a server that reports none (llama-cpp-python): estimated, from what its model was given
        message = run.builder.message
        message.usage = usage_with_cost(run.model, estimated_usage(run.model, context, message.content))
    run.push(run.builder.done(reason))  # type: ignore[arg-type]


def _read_json(run: ProviderRun, response: httpx.Response, body: str, data: Any, *, context: Context) -> None:
    """A whole JSON body instead of a stream: an error (with 200) is reported as that error; a completion
    (``choices[0].message``) becomes the same events its stream would have given."""
    choices = data.get("choices") if isinstance(data, dict) else None
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    message = choice.get("message")
    if not isinstance(message, dict):
        raise ProviderError(describe_status(response.status_code, body), response.status_code, response.headers, body)
    builder = run.builder
    builder.message.response_id = data.get("id") if isinstance(data.get("id"), str) else None
    run.push(builder.start())
    calls: dict[int, int] = {}
    delta = {k: v for k, v in message.items() if k != "tool_calls"}
    _delta(run, calls, delta)
    for index, call in enumerate(message.get("tool_calls") or ()):
        _tool_call_delta(run, calls, {"index": index, **call})
    for index in range(len(builder.message.content)):
        run.push(builder.end_block(index))
    if data.get("usage"):
        builder.message.usage = usage_with_cost(run.model, _usage(data["usage"]))
    _finish(run, choice.get("finish_reason") or "stop", context, bool(data.get("usage")))


def _tool_call_delta(run: ProviderRun, calls: dict[int, int], call: dict[str, Any]) -> None:
    builder = run.builder
    function = call.get("function") or {}
    stream_index = call.get("index", len(calls))
    index = calls.get(stream_index)
    if index is None:
        start = builder.toolcall_start(call.get("id") or "", function.get("name") or "")
        index = calls[stream_index] = start.content_index
        run.push(start)
    block = builder.message.content[index]
    assert isinstance(block, ToolCall)
    if not block.id and call.get("id"):
        block.id = call["id"]
    if not block.name and function.get("name"):
        block.name = function["name"]
    fragment = function.get("arguments") or ""
    if fragment:
        run.push(builder.toolcall_delta(index, fragment))


def _usage(raw: dict[str, Any]) -> Usage:
    prompt = raw.get("prompt_tokens") or 0
    details = raw.get("prompt_tokens_details") or {}
    cache_read = details.get("cached_tokens") or raw.get("prompt_cache_hit_tokens") or 0
    cache_write = details.get("cache_write_tokens") or 0
    reasoning = (raw.get("completion_tokens_details") or {}).get("reasoning_tokens")
    return Usage(
        input=max(0, prompt - cache_read - cache_write),
        output=raw.get("completion_tokens") or 0,
        cache_read=cache_read,
        cache_write=cache_write,
        reasoning=reasoning or None,
    )


API = WireApi("openai-completions", stream_openai_completions)
"""This module's wire API, as ``_api_registry.py`` registers it."""
