"""Anthropic Messages (``POST …/v1/messages``): ``message_start``, content blocks with their deltas,
``message_delta`` and ``message_stop`` events."""

from __future__ import annotations

from typing import Any

from ._wire import ErrorSpec, WireFormat, WireReply, event, split_text

__all__ = ["FORMAT"]

_ANTHROPIC_STOP = {"stop": "end_turn", "length": "max_tokens", "toolUse": "tool_use"}


def _events(reply: WireReply, model: str, include_usage: bool, number: int) -> list[bytes]:
    message: dict[str, Any] = {
        "id": f"msg_fault_{number}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": reply.input_tokens,
            "cache_creation_input_tokens": reply.cache_write_tokens,
            "cache_read_input_tokens": reply.cache_read_tokens,
            "output_tokens": min(1, reply.output_tokens),  # as the API does: the count so far
        },
    }
    events = [event("message_start", {"type": "message_start", "message": message}), event("ping", {"type": "ping"})]

    def delta(index: int, body: dict[str, Any]) -> bytes:
        return event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": body})

    for index, block in enumerate(reply.blocks):
        pieces = split_text(block[2] if block[0] == "call" else block[1], reply.chunk_chars)
        if block[0] == "text":
            content: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [delta(index, {"type": "text_delta", "text": p}) for p in pieces]
        elif block[0] == "thinking":
            content = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [delta(index, {"type": "thinking_delta", "thinking": p}) for p in pieces]
            deltas.append(delta(index, {"type": "signature_delta", "signature": block[2]}))
        else:
            content = {"type": "tool_use", "id": block[3] or f"toolu_{number}_{index}", "name": block[1], "input": {}}
            deltas = [delta(index, {"type": "input_json_delta", "partial_json": p}) for p in pieces]
        events.append(
            event("content_block_start", {"type": "content_block_start", "index": index, "content_block": content})
        )
        events += deltas
        events.append(event("content_block_stop", {"type": "content_block_stop", "index": index}))
    stop = {"stop_reason": _ANTHROPIC_STOP[reply.stop_reason], "stop_sequence": None}
    usage = {"output_tokens": reply.output_tokens}
    events.append(event("message_delta", {"type": "message_delta", "delta": stop, "usage": usage}))
    events.append(event("message_stop", {"type": "message_stop"}))
    return events


def _error_body(spec: ErrorSpec) -> dict[str, Any]:
    return {"type": "error", "error": {"type": spec.type, "message": spec.message}}


def _sse_error(error_type: str, message: str) -> bytes:
    return event("error", {"type": "error", "error": {"type": error_type, "message": message}})


FORMAT = WireFormat(
    name="anthropic",
    api="anthropic-messages",
    vendor="anthropic",
    path="",
    routes=("/messages",),
    events=_events,
    error_body=_error_body,
    sse_error=_sse_error,
    malformed=b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": {"ty\n\n',
    status_fault="anthropic",
)
