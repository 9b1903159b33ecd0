"""``api="openai-completions"``: OpenAI-compatible chat completions over SSE.

Serves OpenAI, vLLM, llama.cpp, Ollama, LM Studio, OpenRouter and others: POST ``{base_url}/chat/completions``
with ``stream: true``. Text, reasoning (``reasoning_content`` / ``reasoning``, as thinking), tool calls with
streamed arguments, usage (with cached tokens) and cost. The key comes from ``options.api_key`` or the
provider's environment variable (``OPENAI_API_KEY`` for ``openai``); local servers may need none.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from .._http import ProviderError, ProviderRun, iter_sse
from .._request import Context, Model, StreamOptions, usage_with_cost
from .._stream import AssistantMessageEventStream
from ..messages import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from ..transform import transform_messages
from ._sse_api import stream_sse_api

__all__ = ["stream_openai_completions"]

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
        read=_read,
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


async def _read(run: ProviderRun, response: httpx.Response) -> None:
    builder = run.builder
    message = builder.message
    content = message.content
    run.push(builder.start())
    calls: dict[int, int] = {}  # the stream's tool-call index -> our content index
    finish: str | None = None
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
        choices = chunk.get("choices") or ()
        if not choices:
            continue
        choice = choices[0]
        delta = choice.get("delta") or {}
        reasoning = None
        for field in _REASONING_FIELDS:
            value = delta.get(field)
            if isinstance(value, str) and value:
                reasoning = value
                break
        if reasoning:
            if not (content and isinstance(content[-1], ThinkingContent)):
                run.push(builder.thinking_start())
            run.push(builder.thinking_delta(len(content) - 1, reasoning))
        text = delta.get("content")
        if isinstance(text, str) and text:
            if not (content and isinstance(content[-1], TextContent)):
                run.push(builder.text_start())
            run.push(builder.text_delta(len(content) - 1, text))
        for call in delta.get("tool_calls") or ():
            _tool_call_delta(run, calls, call)
        if choice.get("finish_reason"):
            finish = choice["finish_reason"]
    for index in range(len(content)):  # like Pi, blocks end when the stream does
        run.push(builder.end_block(index))
    if finish is None:
        raise ProviderError("Stream ended without finish_reason")
    reason = _STOP_REASONS.get(finish)
    if reason is None:
        raise ProviderError(f"Provider finish_reason: {finish}")
    run.push(builder.done(reason))  # type: ignore[arg-type]


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
    return Usage(
        input=max(0, prompt - cache_read - cache_write),
        output=raw.get("completion_tokens") or 0,
        cache_read=cache_read,
        cache_write=cache_write,
    )


# -- request ---------------------------------------------------------------------------------------------


def build_payload(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    if context.system_prompt:
        messages.append({"role": "system", "content": context.system_prompt})
    for message in transform_messages(context.messages, model):
        messages.extend(_wire(message))
    payload: dict[str, Any] = {
        "model": model.id,
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if options.max_tokens:
        payload["max_completion_tokens"] = options.max_tokens
    if options.temperature is not None:
        payload["temperature"] = options.temperature
    if options.reasoning and model.reasoning:
        payload["reasoning_effort"] = _EFFORT.get(options.reasoning, "medium")
    if context.tools:
        payload["tools"] = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": dict(t.parameters)},
            }
            for t in context.tools
        ]
    return payload


_EFFORT = {"minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": "high", "max": "high"}


def _wire(message: Any) -> list[dict[str, Any]]:
    if isinstance(message, UserMessage):
        if isinstance(message.content, str):
            return [{"role": "user", "content": message.content}]
        return [{"role": "user", "content": [_part(block) for block in message.content]}]
    if isinstance(message, AssistantMessage):
        text = "".join(b.text for b in message.content if isinstance(b, TextContent))
        out: dict[str, Any] = {"role": "assistant", "content": text or None}
        calls = [b for b in message.content if isinstance(b, ToolCall)]
        if calls:
            out["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                for c in calls
            ]
        return [out]
    if isinstance(message, ToolResultMessage):
        text = "\n".join(b.text for b in message.content if isinstance(b, TextContent))
        images = [b for b in message.content if isinstance(b, ImageContent)]
        wire: list[dict[str, Any]] = [
            {"role": "tool", "tool_call_id": message.tool_call_id, "content": text or "(no output)"}
        ]
        if images:  # tool messages carry text only; images follow as a user message
            parts = [{"type": "text", "text": f"Images from tool {message.tool_name}:"}] + [_part(i) for i in images]
            wire.append({"role": "user", "content": parts})
        return wire
    return []


def _part(block: TextContent | ImageContent) -> dict[str, Any]:
    if isinstance(block, ImageContent):
        return {"type": "image_url", "image_url": {"url": f"data:{block.mime_type};base64,{block.data}"}}
    return {"type": "text", "text": block.text}
