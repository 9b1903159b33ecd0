"""``api="openai-responses"``: OpenAI's Responses API over SSE, with Pi 0.83's event mapping.

POST ``{base_url}/responses`` with ``stream: true`` and ``store: false`` (the body is
:mod:`~pi_notebook.ai.providers._responses_request`'s). Text (``output_text``, refusals), reasoning summaries shown
as thinking (the reasoning item itself kept in the thinking block's signature, encrypted content included, and sent
back on the next turn), function calls with streamed arguments (tool-call id ``<call_id>|<item_id>``), and usage
with cached and reasoning tokens, priced at the model's cache prices. The key comes from ``options.api_key``, the
variable named by ``model.key_env``, or ``OPENAI_API_KEY`` (provider ``openai``; other providers' servers may need
none). Errors read as Pi's (``OpenAI API error (429): {...}``; ``Error Code <code>: <message>`` mid-stream), which
the retry classifier and the overflow check understand.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from .._http import ProviderError, ProviderRun, iter_sse
from .._request import Context, Model, StreamOptions, WireApi, usage_with_cost
from .._stream import AssistantMessageEventStream
from ..messages import TextContent, ThinkingContent, ToolCall, Usage
from ._openai_request import compact_json
from ._responses_request import build_payload, session_headers
from ._sse_api import stream_sse_api

__all__ = ["API", "build_payload", "describe_status", "stream_openai_responses"]

_STATUS = {"completed": "stop", "incomplete": "length", "failed": "error", "cancelled": "error"}


def stream_openai_responses(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AssistantMessageEventStream:
    """Stream one assistant message from an OpenAI Responses endpoint. Never raises."""
    affinity = session_headers(model, options or StreamOptions())
    return stream_sse_api(
        model,
        context,
        options,
        path="/responses",
        key_required_for="openai",
        headers=lambda key: {**affinity, **({"authorization": f"Bearer {key}"} if key else {})},
        build_payload=build_payload,
        describe_status=describe_status,
        read=_read,
        read_json=_read_json,
    )


def describe_status(status: int, body: str) -> str:
    """``OpenAI API error (429): {"message":…,"type":…,"code":…}``, as Pi words it (the SDK's error object)."""
    text = body.strip()
    try:
        data = json.loads(text) if text else None
    except ValueError:
        return f"OpenAI API error ({status}): {status} {text}"
    error = data.get("error") if isinstance(data, dict) else None
    if error:
        return f"OpenAI API error ({status}): {compact_json(error)}"
    if data is None:
        return f"OpenAI API error ({status}): {status} status code (no body)"
    return f"OpenAI API error ({status}): {status} {compact_json(data)}"  # a body that is neither: what it was


class _Slots:
    """Output items by ``output_index``, each the content block it streams into."""

    def __init__(self, run: ProviderRun) -> None:
        self.run = run
        self.blocks: dict[Any, int] = {}  # output_index -> content index
        self.finished = False

    def open(self, position: Any, item: dict[str, Any]) -> int | None:
        if position in self.blocks:
            return self.blocks[position]
        builder = self.run.builder
        kind = item.get("type")
        if kind == "reasoning":
            event: Any = builder.thinking_start()
        elif kind == "message":
            event = builder.text_start()
        elif kind == "function_call":
            event = builder.toolcall_start(f"{item.get('call_id', '')}|{item.get('id', '')}", item.get("name") or "")
        else:
            return None
        self.run.push(event)
        index: int = event.content_index
        self.blocks[position] = index
        if kind == "function_call" and item.get("arguments"):
            self.run.push(builder.toolcall_delta(index, item["arguments"]))
        return index

    def block(self, position: Any, kind: type) -> int | None:
        index = self.blocks.get(position)
        if index is None or not isinstance(self.run.builder.message.content[index], kind):
            return None
        return index


async def _read(run: ProviderRun, response: httpx.Response) -> None:
    run.push(run.builder.start())
    slots = _Slots(run)
    async for sse in iter_sse(response):
        if not sse.data or sse.data.startswith("[DONE]"):
            continue
        event = json.loads(sse.data)
        if isinstance(event, dict):
            _event(slots, event)
    if not slots.finished:
        raise ProviderError("OpenAI Responses stream ended before a terminal response event")
    _finish(slots)


def _event(slots: _Slots, event: dict[str, Any]) -> None:
    run, builder = slots.run, slots.run.builder
    kind = event.get("type")
    if isinstance(event.get("error"), dict):  # the SDK throws on any event carrying an error object
        error = event["error"]
        raise ProviderError(str(error.get("message") or compact_json(error)))
    position = event.get("output_index")
    delta = event.get("delta")
    if kind == "response.created":
        builder.message.response_id = (event.get("response") or {}).get("id")
    elif kind == "response.output_item.added":
        slots.open(position, event.get("item") or {})
    elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
        if (index := slots.block(position, ThinkingContent)) is not None and isinstance(delta, str):
            run.push(builder.thinking_delta(index, delta))
    elif kind == "response.reasoning_summary_part.done":
        if (index := slots.block(position, ThinkingContent)) is not None:
            run.push(builder.thinking_delta(index, "\n\n"))
    elif kind in ("response.output_text.delta", "response.refusal.delta"):
        if (index := slots.block(position, TextContent)) is not None and isinstance(delta, str):
            run.push(builder.text_delta(index, delta))
    elif kind == "response.function_call_arguments.delta":
        if (index := slots.block(position, ToolCall)) is not None and isinstance(delta, str):
            run.push(builder.toolcall_delta(index, delta))
    elif kind == "response.function_call_arguments.done":
        _arguments_done(slots, position, event.get("arguments"))
    elif kind == "response.output_item.done":
        _item_done(slots, position, event.get("item") or {})
    elif kind in ("response.completed", "response.incomplete"):
        _completed(slots, event.get("response") or {})
    elif kind == "error":
        raise ProviderError(f"Error Code {event.get('code')}: {event.get('message')}")
    elif kind == "response.failed":
        raise ProviderError(_failure_text(event.get("response") or {}))


def _arguments_done(slots: _Slots, position: Any, arguments: Any) -> None:
    index = slots.block(position, ToolCall)
    if index is None or not isinstance(arguments, str):
        return
    builder = slots.run.builder
    streamed = builder.toolcall_arguments(index)
    if arguments.startswith(streamed):
        if len(arguments) > len(streamed):
            slots.run.push(builder.toolcall_delta(index, arguments[len(streamed) :]))
    else:
        builder.toolcall_replace(index, arguments)


def _item_done(slots: _Slots, position: Any, item: dict[str, Any]) -> None:
    run, builder = slots.run, slots.run.builder
    index = slots.open(position, item)
    if index is None:
        return
    block = builder.message.content[index]
    kind = item.get("type")
    if kind == "reasoning" and isinstance(block, ThinkingContent):
        summary = "\n\n".join(part.get("text", "") for part in item.get("summary") or ())
        content = "\n\n".join(part.get("text", "") for part in item.get("content") or ())
        block.thinking = summary or content or block.thinking
        block.thinking_signature = compact_json(item)
    elif kind == "message" and isinstance(block, TextContent):
        parts = item.get("content") or ()
        text = "".join(p.get("text", "") if p.get("type") == "output_text" else p.get("refusal", "") for p in parts)
        block.text = text
        signature: dict[str, Any] = {"v": 1, "id": item.get("id")}
        if item.get("phase"):
            signature["phase"] = item["phase"]
        block.text_signature = compact_json(signature)
    elif kind == "function_call" and isinstance(block, ToolCall):
        if item.get("arguments"):
            builder.toolcall_replace(index, item["arguments"])
        elif not builder.toolcall_arguments(index):
            builder.toolcall_replace(index, "{}")
    else:
        return
    run.push(builder.end_block(index))
    del slots.blocks[position]


def _completed(slots: _Slots, response: dict[str, Any]) -> None:
    slots.finished = True
    message = slots.run.builder.message
    if response.get("id"):
        message.response_id = response["id"]
    _backfill_reasoning(slots, response.get("output") or ())
    if response.get("usage"):
        message.usage = _usage(response["usage"])
    message.usage = usage_with_cost(slots.run.model, message.usage)
    status = response.get("status")
    reason = _STATUS.get(status or "", "stop")
    if reason == "stop" and any(isinstance(b, ToolCall) for b in message.content):
        reason = "toolUse"
    message.stop_reason = reason  # type: ignore[assignment]


def _backfill_reasoning(slots: _Slots, output: Any) -> None:
    """Azure sends a reasoning item's encrypted content only in the final response (Pi's issue 6409)."""
    for item in output:
        if not (isinstance(item, dict) and item.get("type") == "reasoning" and item.get("encrypted_content")):
            continue
        for block in slots.run.builder.message.content:
            if isinstance(block, ThinkingContent) and block.thinking_signature:
                stored = json.loads(block.thinking_signature)
                if stored.get("id") == item.get("id") and not stored.get("encrypted_content"):
                    block.thinking_signature = compact_json({**stored, "encrypted_content": item["encrypted_content"]})


def _usage(raw: dict[str, Any]) -> Usage:
    details = raw.get("input_tokens_details") or {}
    cached = details.get("cached_tokens") or 0
    written = details.get("cache_write_tokens") or 0
    return Usage(
        input=max(0, (raw.get("input_tokens") or 0) - cached - written),
        output=raw.get("output_tokens") or 0,
        cache_read=cached,
        cache_write=written,
        reasoning=(raw.get("output_tokens_details") or {}).get("reasoning_tokens") or None,
    )


def _failure_text(response: dict[str, Any]) -> str:
    error = response.get("error")
    if error:
        return f"{error.get('code') or 'unknown'}: {error.get('message') or 'no message'}"
    details = response.get("incomplete_details") or {}
    if details.get("reason"):
        return f"incomplete: {details['reason']}"
    return "Unknown error (no error details in response)"


def _finish(slots: _Slots) -> None:
    run = slots.run
    message = run.builder.message
    for index in slots.blocks.values():  # items the stream never closed end with it
        run.push(run.builder.end_block(index))
    if message.stop_reason not in ("stop", "length", "toolUse"):
        raise ProviderError("An unknown error occurred")
    run.push(run.builder.done(message.stop_reason))


def _read_json(run: ProviderRun, response: httpx.Response, body: str, data: Any) -> None:
    """A whole response object instead of a stream (``"object": "response"``): its output items become the
    events their stream would have given; anything else is the error it is."""
    if not (isinstance(data, dict) and data.get("object") == "response" and isinstance(data.get("output"), list)):
        raise ProviderError(describe_status(response.status_code, body), response.status_code, response.headers, body)
    run.push(run.builder.start())
    slots = _Slots(run)
    for position, item in enumerate(data["output"]):
        if not isinstance(item, dict):
            continue
        index = slots.open(position, {**item, "arguments": ""})
        if index is not None and item.get("type") == "message":
            text = "".join(p.get("text", "") for p in item.get("content") or () if p.get("type") == "output_text")
            if text:
                run.push(run.builder.text_delta(index, text))
        elif index is not None and item.get("type") == "function_call" and item.get("arguments"):
            run.push(run.builder.toolcall_delta(index, item["arguments"]))
        _item_done(slots, position, item)
    _completed(slots, data)
    _finish(slots)


API = WireApi("openai-responses", stream_openai_responses)
"""This module's wire API, as ``_api_registry.py`` registers it."""
