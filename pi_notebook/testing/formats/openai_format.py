"""OpenAI chat completions (``POST …/chat/completions``): ``data:`` chunks of ``chat.completion.chunk``, the usage
chunk when ``stream_options.include_usage`` asks for it, ``[DONE]``."""

from __future__ import annotations

import time
from typing import Any

from ._wire import ErrorSpec, WireFormat, WireReply, data, split_text, usage_details

__all__ = ["FORMAT", "error_body"]

_OPENAI_FINISH = {"stop": "stop", "length": "length", "toolUse": "tool_calls"}


def _events(reply: WireReply, model: str, include_usage: bool, number: int) -> list[bytes]:
    base = {"id": f"chatcmpl-fault-{number}", "object": "chat.completion.chunk", "created": int(time.time())}
    base |= {"model": model, "system_fingerprint": None}

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return data(base | {"choices": [choice]} | ({"usage": None} if include_usage else {}))

    events = [chunk({"role": "assistant", "content": ""})]
    tool_index = 0
    for position, block in enumerate(reply.blocks):
        if block[0] == "text":
            events += [chunk({"content": piece}) for piece in split_text(block[1], reply.chunk_chars)]
        elif block[0] == "thinking":
            events += [chunk({block[3]: piece}) for piece in split_text(block[1], reply.chunk_chars)]
        else:
            _, name, arguments, given = block
            start = {"index": tool_index, "id": given or f"call_{number}_{position}", "type": "function"}
            events.append(chunk({"tool_calls": [start | {"function": {"name": name, "arguments": ""}}]}))
            for piece in split_text(arguments, reply.chunk_chars):
                events.append(chunk({"tool_calls": [{"index": tool_index, "function": {"arguments": piece}}]}))
            tool_index += 1
    events.append(chunk({}, _OPENAI_FINISH[reply.stop_reason]))
    if include_usage:
        prompt = reply.input_tokens + reply.cache_read_tokens + reply.cache_write_tokens
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": reply.output_tokens,
            "total_tokens": prompt + reply.output_tokens,
            "prompt_tokens_details": usage_details(reply),
        }
        events.append(data(base | {"choices": [], "usage": usage}))
    events.append(b"data: [DONE]\n\n")
    return events


def error_body(spec: ErrorSpec) -> dict[str, Any]:
    """OpenAI's error body (the Responses API's too)."""
    return {"error": {"message": spec.message, "type": spec.type, "param": None, "code": spec.code}}


def _sse_error(error_type: str, message: str) -> bytes:
    return data({"error": {"message": message, "type": error_type, "param": None, "code": None}})


FORMAT = WireFormat(
    name="openai",
    api="openai-completions",
    vendor="openai",
    path="/v1",
    routes=("/chat/completions",),
    events=_events,
    error_body=error_body,
    sse_error=_sse_error,
    malformed=b'data: {"id": "chatcmpl-fault", "choices": [{"index": 0, "delta": {"cont\n\n',
)
