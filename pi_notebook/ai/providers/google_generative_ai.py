"""``api="google-generative-ai"``: Gemini's ``streamGenerateContent?alt=sse``, with Pi 0.83's mapping.

POST ``{base_url}/models/{model}:streamGenerateContent?alt=sse`` (the body is
:mod:`~pi_notebook.ai.providers._google_request`'s) with the key in ``x-goog-api-key``. Text, thoughts (parts with
``thought: true``, shown as thinking) and function calls, each keeping its ``thoughtSignature`` for the next turn;
a function call without an id (or with one already used in the reply) gets ``<name>_<ms>_<n>`` as Pi names it.
Usage: ``promptTokenCount`` less the cached part as input, ``cachedContentTokenCount`` as cache reads,
``candidatesTokenCount`` plus ``thoughtsTokenCount`` as output. Finish reasons: ``STOP`` → stop, ``MAX_TOKENS`` →
length, a function call → toolUse, and every other (``SAFETY``, ``RECITATION``, ``PROHIBITED_CONTENT``,
``MALFORMED_FUNCTION_CALL``, …) an error "Provider stopped with: SAFETY". The key comes from
``options.api_key``, the variable named by ``model.key_env``, ``GEMINI_API_KEY`` (Pi's) or ``GOOGLE_API_KEY``
(Google's SDK's). Error texts are the error body's JSON, as Google's SDK words them, which the retry classifier
(``429``, ``503``, ``RESOURCE_EXHAUSTED`` …) and the overflow check ("input token count … exceeds the maximum")
understand.
"""

from __future__ import annotations

import itertools
import json
import time
from http import HTTPStatus
from typing import Any

import httpx

from .._http import ProviderError, ProviderRun, iter_sse
from .._request import Context, Model, StreamOptions, WireApi, usage_with_cost
from .._stream import AssistantMessageEventStream
from ..messages import TextContent, ThinkingContent, ToolCall, Usage
from ._google_request import build_payload, request_path
from ._openai_request import compact_json
from ._sse_api import stream_sse_api

__all__ = ["API", "build_payload", "describe_status", "stream_google_generative_ai"]

_ERROR_REASONS = frozenset(
    {
        "FINISH_REASON_UNSPECIFIED", "SAFETY", "RECITATION", "LANGUAGE", "OTHER", "BLOCKLIST", "PROHIBITED_CONTENT",
        "SPII", "MALFORMED_FUNCTION_CALL", "IMAGE_SAFETY", "UNEXPECTED_TOOL_CALL", "IMAGE_PROHIBITED_CONTENT",
        "NO_IMAGE", "IMAGE_RECITATION", "IMAGE_OTHER",
    }
)  # fmt: skip
_call_numbers = itertools.count(1)


def stream_google_generative_ai(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AssistantMessageEventStream:
    """Stream one assistant message from the Gemini API. Never raises."""
    return stream_sse_api(
        model,
        context,
        options,
        path=request_path(model),
        key_required_for="google",
        headers=lambda key: {"x-goog-api-key": key} if key else {},
        build_payload=build_payload,
        describe_status=describe_status,
        read=_read,
        read_json=_read_json,
    )


def describe_status(status: int, body: str) -> str:
    """The error body as JSON (``{"error":{"code":429,"message":…,"status":"RESOURCE_EXHAUSTED"}}``), as Google's
    SDK words it; a body that is not JSON is wrapped the way the SDK wraps it; JSON that is no error (a 200 that is
    neither a reply nor an error) is said with its status (``200 {"status":"ok"}``)."""
    try:
        data = json.loads(body.strip())
    except ValueError:
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = ""
        return compact_json({"error": {"message": body, "code": status, "status": phrase}})
    errors = data if isinstance(data, list) else [data]  # the REST API sends a stream's error as a list of one
    if any(isinstance(item, dict) and "error" in item for item in errors):
        return compact_json(data)
    return f"{status} {compact_json(data)}"


class _Reply:
    """The block being streamed (text and thoughts arrive part by part), and what the stream said at its end."""

    def __init__(self, run: ProviderRun) -> None:
        self.run = run
        self.current: int | None = None
        self.finish: str | None = None

    def close(self) -> None:
        if self.current is not None:
            self.run.push(self.run.builder.end_block(self.current))
            self.current = None

    def text(self, part: dict[str, Any]) -> None:
        builder = self.run.builder
        thought = part.get("thought") is True
        kind = ThinkingContent if thought else TextContent
        if self.current is None or not isinstance(builder.message.content[self.current], kind):
            self.close()
            start = builder.thinking_start() if thought else builder.text_start()
            self.current = start.content_index
            self.run.push(start)
        index = self.current
        block = builder.message.content[index]
        signature = part.get("thoughtSignature")
        if isinstance(block, ThinkingContent):
            block.thinking_signature = signature or block.thinking_signature
            self.run.push(builder.thinking_delta(index, part["text"]))
        else:
            assert isinstance(block, TextContent)
            block.text_signature = signature or block.text_signature
            self.run.push(builder.text_delta(index, part["text"]))

    def call(self, part: dict[str, Any]) -> None:
        self.close()
        builder = self.run.builder
        call = part["functionCall"]
        name = call.get("name") or ""
        given = call.get("id")
        taken = any(isinstance(b, ToolCall) and b.id == given for b in builder.message.content)
        call_id = given if given and not taken else f"{name}_{int(time.time() * 1000)}_{next(_call_numbers)}"
        start = builder.toolcall_start(call_id, name)
        index = start.content_index
        block = builder.message.content[index]
        assert isinstance(block, ToolCall)
        if part.get("thoughtSignature"):
            block.thought_signature = part["thoughtSignature"]
        self.run.push(start)
        arguments = call.get("args") or {}  # an object; a proxy may send the JSON text instead: taken as text
        text = arguments if isinstance(arguments, str) else compact_json(arguments)
        self.run.push(builder.toolcall_delta(index, text))
        self.run.push(builder.toolcall_end(index))

    def chunk(self, chunk: dict[str, Any]) -> None:
        message = self.run.builder.message
        if "error" in chunk:
            error = chunk["error"] if isinstance(chunk["error"], dict) else {}
            raise ProviderError(f"got status: {error.get('status')}. {compact_json(chunk)}")
        if message.response_id is None and isinstance(chunk.get("responseId"), str):
            message.response_id = chunk["responseId"]
        candidates = chunk.get("candidates") or [{}]
        candidate = candidates[0] if isinstance(candidates[0], dict) else {}
        for part in (candidate.get("content") or {}).get("parts") or ():
            if isinstance(part.get("text"), str):
                self.text(part)
            if isinstance(part.get("functionCall"), dict):
                self.call(part)
        blocked = (chunk.get("promptFeedback") or {}).get("blockReason")
        self.finish = candidate.get("finishReason") or blocked or self.finish
        if chunk.get("usageMetadata"):
            message.usage = usage_with_cost(self.run.model, _usage(chunk["usageMetadata"]))

    def done(self) -> None:
        self.close()
        builder = self.run.builder
        reason = self.finish
        if reason is None:
            raise ProviderError("Google stream ended without a finish reason")
        if reason in _ERROR_REASONS:
            raise ProviderError(f"Provider stopped with: {reason}")
        if reason not in ("STOP", "MAX_TOKENS"):
            raise ProviderError(f"Unhandled stop reason: {reason}")
        if any(isinstance(b, ToolCall) for b in builder.message.content):
            self.run.push(builder.done("toolUse"))
        else:
            self.run.push(builder.done("stop" if reason == "STOP" else "length"))


def _usage(raw: dict[str, Any]) -> Usage:
    cached = raw.get("cachedContentTokenCount") or 0
    thoughts = raw.get("thoughtsTokenCount") or 0
    return Usage(
        input=(raw.get("promptTokenCount") or 0) - cached,
        output=(raw.get("candidatesTokenCount") or 0) + thoughts,
        cache_read=cached,
        reasoning=thoughts or None,
    )


async def _read(run: ProviderRun, response: httpx.Response) -> None:
    run.push(run.builder.start())
    reply = _Reply(run)
    async for sse in iter_sse(response):
        if not sse.data:
            continue
        chunk = json.loads(sse.data)
        if isinstance(chunk, dict):
            reply.chunk(chunk)
    reply.done()


def _read_json(run: ProviderRun, response: httpx.Response, body: str, data: Any) -> None:
    """A whole response (``candidates``), or a list of them, instead of a stream; anything else is an error."""
    chunks = data if isinstance(data, list) else [data]
    if not chunks or not all(isinstance(c, dict) and ("candidates" in c or "error" in c) for c in chunks):
        raise ProviderError(describe_status(response.status_code, body), response.status_code, response.headers, body)
    run.push(run.builder.start())
    reply = _Reply(run)
    for chunk in chunks:
        reply.chunk(chunk)
    reply.done()


API = WireApi("google-generative-ai", stream_google_generative_ai)
"""This module's wire API, as ``_api_registry.py`` registers it."""
