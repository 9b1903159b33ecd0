"""``api="anthropic-messages"``: Anthropic's Messages API over SSE.

POST ``{base_url}/v1/messages`` with ``stream: true``. Text, thinking (with signatures, and redacted thinking),
tool use with streamed JSON input, usage with cache reads/writes, and cost. The key comes from
``options.api_key`` or ``ANTHROPIC_API_KEY``. Error texts follow Anthropic's SDK (``529 {"type":"error",...}``;
a mid-stream ``error`` event's data verbatim), which the retry classifier understands.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from .._http import ProviderError, ProviderRun, iter_sse
from .._request import Context, Model, StreamOptions, WireApi, usage_with_cost
from .._stream import AssistantMessageEventStream
from ..messages import ThinkingContent
from ._anthropic_request import beta_header, build_payload
from ._sse_api import stream_sse_api

__all__ = ["API", "build_payload", "stream_anthropic_messages"]

API_VERSION = "2023-06-01"
_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "tool_use": "toolUse",
}
REDACTED_THINKING = "[Reasoning redacted]"


def stream_anthropic_messages(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AssistantMessageEventStream:
    """Stream one assistant message from the Anthropic Messages API. Never raises."""
    fixed = {"anthropic-version": API_VERSION}
    betas = beta_header(model, context)
    if betas:
        fixed["anthropic-beta"] = betas
    return stream_sse_api(
        model,
        context,
        options,
        path="/v1/messages",
        key_required_for="anthropic",
        headers=lambda key: {**fixed, **({"x-api-key": key} if key else {})},
        build_payload=build_payload,
        describe_status=describe_status,
        read=_read,
        read_json=_read_json,
    )


def describe_status(status: int, body: str) -> str:
    """``529 {"type":"error","error":{...}}``, as Anthropic's SDK words it."""
    text = body.strip()
    if not text:
        return f"{status} status code (no body)"
    try:
        return f"{status} {json.dumps(json.loads(text), separators=(',', ':'))}"
    except ValueError:
        return f"{status} {text}"


async def _read(run: ProviderRun, response: httpx.Response) -> None:
    builder = run.builder
    message = builder.message
    usage = message.usage
    blocks: dict[int, int] = {}  # Anthropic's block index -> our content index
    started = stopped = False
    stop_reason: str | None = None
    async for sse in iter_sse(response):
        kind = sse.event
        if kind == "error":
            raise ProviderError(sse.data)
        if kind not in _EVENTS:
            continue
        event = json.loads(sse.data)
        if kind == "message_start":
            started = True
            info = event.get("message") or {}
            message.response_id = info.get("id")
            _merge_usage(usage, info.get("usage") or {})
            run.push(builder.start())
        elif not started:
            raise ProviderError(f"Anthropic stream sent {kind} before message_start")
        elif kind == "content_block_start":
            _block_start(run, blocks, event)
        elif kind == "content_block_delta":
            _block_delta(run, blocks, event)
        elif kind == "content_block_stop":
            _block_stop(run, blocks, event)
        elif kind == "message_delta":
            delta = event.get("delta") or {}
            stop_reason = delta.get("stop_reason") or stop_reason
            _merge_usage(usage, event.get("usage") or {})
        elif kind == "message_stop":
            stopped = True
            break
    if not stopped:
        raise ProviderError("Anthropic stream ended before message_stop")
    _finish(run, stop_reason)


def _finish(run: ProviderRun, stop_reason: str | None) -> None:
    message = run.builder.message
    message.usage = usage_with_cost(run.model, message.usage)
    if stop_reason == "refusal":
        raise ProviderError("The model refused to complete the request")
    if stop_reason == "sensitive":
        raise ProviderError("Provider stopped with: sensitive")
    reason = _STOP_REASONS.get(stop_reason or "")
    if reason is None:
        raise ProviderError(f"Anthropic stream ended without a stop reason ({stop_reason})")
    run.push(run.builder.done(reason))  # type: ignore[arg-type]


def _read_json(run: ProviderRun, response: httpx.Response, body: str, data: Any) -> None:
    """A whole JSON body instead of a stream (LiteLLM's mock models do this on ``/v1/messages``): a message
    (``"type": "message"``) becomes the events its stream would have given; anything else is the error it is."""
    if not (isinstance(data, dict) and data.get("type") == "message" and isinstance(data.get("content"), list)):
        raise ProviderError(describe_status(response.status_code, body), response.status_code, response.headers, body)
    builder = run.builder
    message = builder.message
    message.response_id = data.get("id") if isinstance(data.get("id"), str) else None
    _merge_usage(message.usage, data.get("usage") or {})
    run.push(builder.start())
    blocks: dict[int, int] = {}
    for index, block in enumerate(data["content"]):
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        _block_start(run, blocks, {"index": index, "content_block": {**block, "text": ""}})
        if kind == "text" and block.get("text"):
            run.push(builder.text_delta(blocks[index], block["text"]))
        elif kind == "thinking":
            run.push(builder.thinking_delta(blocks[index], block.get("thinking", "")))
            _block_delta(run, blocks, {"index": index, "delta": {**block, "type": "signature_delta"}})
        elif kind == "tool_use":
            arguments = json.dumps(block.get("input") or {})
            run.push(builder.toolcall_delta(blocks[index], arguments))
        _block_stop(run, blocks, {"index": index})
    _finish(run, data.get("stop_reason") or "end_turn")


_EVENTS = frozenset(
    {
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
    }
)


def _merge_usage(usage: Any, raw: dict[str, Any]) -> None:
    if raw.get("input_tokens") is not None:
        usage.input = raw["input_tokens"]
    if raw.get("output_tokens") is not None:
        usage.output = raw["output_tokens"]
    if raw.get("cache_read_input_tokens") is not None:
        usage.cache_read = raw["cache_read_input_tokens"]
    if raw.get("cache_creation_input_tokens") is not None:
        usage.cache_write = raw["cache_creation_input_tokens"]
    long_writes = (raw.get("cache_creation") or {}).get("ephemeral_1h_input_tokens")
    if long_writes:
        usage.cache_write_1h = long_writes
    thinking = (raw.get("output_tokens_details") or {}).get("thinking_tokens")
    if thinking is not None:
        usage.reasoning = thinking


def _block_start(run: ProviderRun, blocks: dict[int, int], event: dict[str, Any]) -> None:
    builder = run.builder
    block = event.get("content_block") or {}
    kind = block.get("type")
    if kind == "tool_use":
        start = builder.toolcall_start(block.get("id", ""), block.get("name", ""))
        blocks[event.get("index", len(blocks))] = start.content_index
        run.push(start)
        return
    if kind in ("thinking", "redacted_thinking"):
        thinking = builder.thinking_start()
        index = blocks[event.get("index", len(blocks))] = thinking.content_index
        target = builder.message.content[index]
        assert isinstance(target, ThinkingContent)
        if kind == "redacted_thinking":
            target.redacted = True
            target.thinking = REDACTED_THINKING  # Pi's text; the opaque data goes back as the signature
            target.thinking_signature = block.get("data", "")
        run.push(thinking)
        return
    text = builder.text_start()
    blocks[event.get("index", len(blocks))] = text.content_index
    run.push(text)
    if block.get("text"):
        run.push(builder.text_delta(text.content_index, block["text"]))


def _block_delta(run: ProviderRun, blocks: dict[int, int], event: dict[str, Any]) -> None:
    builder = run.builder
    index = blocks.get(event.get("index", -1))
    if index is None:
        return
    delta = event.get("delta") or {}
    kind = delta.get("type")
    if kind == "text_delta":
        run.push(builder.text_delta(index, delta.get("text", "")))
    elif kind == "thinking_delta":
        run.push(builder.thinking_delta(index, delta.get("thinking", "")))
    elif kind == "signature_delta":
        block = builder.message.content[index]
        if isinstance(block, ThinkingContent):
            block.thinking_signature = (block.thinking_signature or "") + delta.get("signature", "")
    elif kind == "input_json_delta":
        fragment = delta.get("partial_json", "")
        if fragment:
            run.push(builder.toolcall_delta(index, fragment))


def _block_stop(run: ProviderRun, blocks: dict[int, int], event: dict[str, Any]) -> None:
    builder = run.builder
    index = blocks.get(event.get("index", -1))
    if index is None:
        return
    run.push(builder.end_block(index))


API = WireApi("anthropic-messages", stream_anthropic_messages)
"""This module's wire API, as ``_api_registry.py`` registers it."""
