"""OpenAI's Responses API (``POST …/responses``): ``response.created`` … ``response.output_item.done`` per item
(reasoning summary, message text, function call), then ``response.completed`` (``incomplete`` when cut at the
output limit)."""

from __future__ import annotations

import time
from typing import Any

from ._wire import Piece, WireFormat, WireReply, split_text, usage_details
from ._wire import event as sse_event
from .openai_format import error_body

__all__ = ["FORMAT"]


def _events(reply: WireReply, model: str, include_usage: bool, number: int) -> list[bytes]:
    sequence = iter(range(1_000_000))
    response: dict[str, Any] = {"id": f"resp_fault_{number}", "object": "response", "created_at": int(time.time())}
    response |= {"status": "in_progress", "model": model, "output": [], "usage": None}

    def event(kind: str, **fields: Any) -> bytes:
        return sse_event(kind, {"type": kind, "sequence_number": next(sequence), **fields})

    events = [event("response.created", response=response), event("response.in_progress", response=response)]
    items = []
    for position, block in enumerate(reply.blocks):
        item, streamed = _responses_item(block, reply.chunk_chars, number, position, event)
        events += streamed
        items.append(item)
    u = reply
    prompt = u.input_tokens + u.cache_read_tokens + u.cache_write_tokens
    usage = {
        "input_tokens": prompt,
        "input_tokens_details": usage_details(reply),
        "output_tokens": u.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + u.output_tokens,
    }
    length = reply.stop_reason == "length"
    final = response | {"status": "incomplete" if length else "completed", "output": items, "usage": usage}
    if length:
        final["incomplete_details"] = {"reason": "max_output_tokens"}
    events.append(event("response.incomplete" if length else "response.completed", response=final))
    return events


def _responses_item(
    block: Piece, size: int, number: int, position: int, event: Any
) -> tuple[dict[str, Any], list[bytes]]:
    """One output item: its ``added`` event, its deltas, its ``done`` events."""
    at = {"output_index": position}
    added: dict[str, Any]
    done: dict[str, Any]
    if block[0] == "text":
        item_id = f"msg_fault_{number}_{position}"
        added = {"id": item_id, "type": "message", "status": "in_progress", "role": "assistant", "content": []}
        part = {"type": "output_text", "text": block[1], "annotations": []}
        done = added | {"status": "completed", "content": [part]}
        ids = {**at, "item_id": item_id, "content_index": 0}
        events = [event("response.output_item.added", item=added, **at)]
        events.append(event("response.content_part.added", part=part | {"text": ""}, **ids))
        events += [event("response.output_text.delta", delta=p, **ids) for p in split_text(block[1], size)]
        events += [
            event("response.output_text.done", text=block[1], **ids),
            event("response.content_part.done", part=part, **ids),
        ]
    elif block[0] == "thinking":
        item_id = f"rs_fault_{number}_{position}"
        added = {"id": item_id, "type": "reasoning", "summary": []}
        summary = {"type": "summary_text", "text": block[1]}
        done = added | {"summary": [summary], "encrypted_content": block[2]}
        ids = {**at, "item_id": item_id, "summary_index": 0}
        events = [event("response.output_item.added", item=added, **at)]
        events.append(event("response.reasoning_summary_part.added", part=summary | {"text": ""}, **ids))
        events += [event("response.reasoning_summary_text.delta", delta=p, **ids) for p in split_text(block[1], size)]
        events.append(event("response.reasoning_summary_text.done", text=block[1], **ids))
        events.append(event("response.reasoning_summary_part.done", part=summary, **ids))
    else:
        _, name, arguments, given = block
        item_id = f"fc_fault_{number}_{position}"
        added = {"id": item_id, "type": "function_call", "status": "in_progress", "arguments": ""}
        added |= {"call_id": given or f"call_{number}_{position}", "name": name}
        done = added | {"status": "completed", "arguments": arguments}
        ids = {**at, "item_id": item_id}
        events = [event("response.output_item.added", item=added, **at)]
        events += [event("response.function_call_arguments.delta", delta=p, **ids) for p in split_text(arguments, size)]
        events.append(event("response.function_call_arguments.done", arguments=arguments, **ids))
    events.append(event("response.output_item.done", item=done, **at))
    return done, events


def _sse_error(error_type: str, message: str) -> bytes:
    return sse_event("error", {"type": "error", "code": error_type, "message": message, "param": None})


FORMAT = WireFormat(
    name="responses",
    api="openai-responses",
    vendor="openai",
    path="/v1",
    routes=("/responses",),
    events=_events,
    error_body=error_body,
    sse_error=_sse_error,
    malformed=b'event: response.output_text.delta\ndata: {"type": "response.output_text.delta", "del\n\n',
)
