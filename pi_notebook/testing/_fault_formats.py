"""How the fault server writes a reply, an error body and a broken event in each of its four wire formats.

``openai`` (chat completions), ``anthropic`` (Messages), ``responses`` (OpenAI's Responses API) and ``google``
(Gemini's ``streamGenerateContent?alt=sse``), chosen by the request's path (:func:`route`). A reply comes here
as a :class:`WireReply` (its blocks as plain tuples), so this module needs nothing of the script's classes.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

__all__ = [
    "Api",
    "ErrorSpec",
    "WireReply",
    "error_body",
    "google_status",
    "malformed_event",
    "route",
    "sse_error_event",
    "wire_events",
]

Api: TypeAlias = Literal["openai", "anthropic", "responses", "google"]
Piece: TypeAlias = tuple[str, ...]
"""``("text", text)``, ``("thinking", thinking, signature, openai_field)`` or ``("call", name, arguments_json,
id or "")``."""


@dataclass(frozen=True)
class ErrorSpec:
    status: int
    type: str
    message: str
    code: str | None = None


@dataclass(frozen=True)
class WireReply:
    blocks: tuple[Piece, ...]
    stop_reason: str  # Pi's: stop, length, toolUse
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    chunk_chars: int


def wire_events(reply: WireReply, api: Api, *, model: str, include_usage: bool, number: int) -> list[bytes]:
    """The SSE events ``reply`` writes in ``api``'s format, one ``bytes`` each (what ``after_events`` counts)."""
    if api == "openai":
        return _openai_events(reply, model, include_usage, number)
    if api == "anthropic":
        return _anthropic_events(reply, model, number)
    if api == "responses":
        return _responses_events(reply, model, number)
    return _google_events(reply, model, number)


def route(path: str) -> Api | None:
    if path.endswith("/chat/completions"):
        return "openai"
    if path.endswith("/messages"):
        return "anthropic"
    if path.endswith("/responses"):
        return "responses"
    if path.endswith((":streamGenerateContent", ":generateContent")):
        return "google"
    return None


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _data(payload: Any) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def _event(name: str, payload: Any) -> bytes:
    return f"event: {name}\n".encode() + _data(payload)


# -- OpenAI chat completions --------------------------------------------------------------------------------

_OPENAI_FINISH = {"stop": "stop", "length": "length", "toolUse": "tool_calls"}


def _openai_events(reply: WireReply, model: str, include_usage: bool, number: int) -> list[bytes]:
    base = {"id": f"chatcmpl-fault-{number}", "object": "chat.completion.chunk", "created": int(time.time())}
    base |= {"model": model, "system_fingerprint": None}

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return _data(base | {"choices": [choice]} | ({"usage": None} if include_usage else {}))

    events = [chunk({"role": "assistant", "content": ""})]
    tool_index = 0
    for position, block in enumerate(reply.blocks):
        if block[0] == "text":
            events += [chunk({"content": piece}) for piece in _pieces(block[1], reply.chunk_chars)]
        elif block[0] == "thinking":
            events += [chunk({block[3]: piece}) for piece in _pieces(block[1], reply.chunk_chars)]
        else:
            _, name, arguments, given = block
            start = {"index": tool_index, "id": given or f"call_{number}_{position}", "type": "function"}
            events.append(chunk({"tool_calls": [start | {"function": {"name": name, "arguments": ""}}]}))
            for piece in _pieces(arguments, reply.chunk_chars):
                events.append(chunk({"tool_calls": [{"index": tool_index, "function": {"arguments": piece}}]}))
            tool_index += 1
    events.append(chunk({}, _OPENAI_FINISH[reply.stop_reason]))
    if include_usage:
        prompt = reply.input_tokens + reply.cache_read_tokens + reply.cache_write_tokens
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": reply.output_tokens,
            "total_tokens": prompt + reply.output_tokens,
            "prompt_tokens_details": _details(reply),
        }
        events.append(_data(base | {"choices": [], "usage": usage}))
    events.append(b"data: [DONE]\n\n")
    return events


def _details(reply: WireReply) -> dict[str, int]:
    """OpenAI's cached tokens, and the cache writes OpenRouter-style servers add (OpenAI reports none)."""
    details = {"cached_tokens": reply.cache_read_tokens}
    if reply.cache_write_tokens:
        details["cache_write_tokens"] = reply.cache_write_tokens
    return details


# -- Anthropic Messages -------------------------------------------------------------------------------------

_ANTHROPIC_STOP = {"stop": "end_turn", "length": "max_tokens", "toolUse": "tool_use"}


def _anthropic_events(reply: WireReply, model: str, number: int) -> list[bytes]:
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
    events = [_event("message_start", {"type": "message_start", "message": message}), _event("ping", {"type": "ping"})]

    def delta(index: int, body: dict[str, Any]) -> bytes:
        return _event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": body})

    for index, block in enumerate(reply.blocks):
        pieces = _pieces(block[2] if block[0] == "call" else block[1], reply.chunk_chars)
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
            _event("content_block_start", {"type": "content_block_start", "index": index, "content_block": content})
        )
        events += deltas
        events.append(_event("content_block_stop", {"type": "content_block_stop", "index": index}))
    stop = {"stop_reason": _ANTHROPIC_STOP[reply.stop_reason], "stop_sequence": None}
    usage = {"output_tokens": reply.output_tokens}
    events.append(_event("message_delta", {"type": "message_delta", "delta": stop, "usage": usage}))
    events.append(_event("message_stop", {"type": "message_stop"}))
    return events


# -- OpenAI Responses ---------------------------------------------------------------------------------------


def _responses_events(reply: WireReply, model: str, number: int) -> list[bytes]:
    sequence = iter(range(1_000_000))
    response: dict[str, Any] = {"id": f"resp_fault_{number}", "object": "response", "created_at": int(time.time())}
    response |= {"status": "in_progress", "model": model, "output": [], "usage": None}

    def event(kind: str, **fields: Any) -> bytes:
        return _event(kind, {"type": kind, "sequence_number": next(sequence), **fields})

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
        "input_tokens_details": _details(reply),
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
        events += [event("response.output_text.delta", delta=p, **ids) for p in _pieces(block[1], size)]
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
        events += [event("response.reasoning_summary_text.delta", delta=p, **ids) for p in _pieces(block[1], size)]
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
        events += [event("response.function_call_arguments.delta", delta=p, **ids) for p in _pieces(arguments, size)]
        events.append(event("response.function_call_arguments.done", arguments=arguments, **ids))
    events.append(event("response.output_item.done", item=done, **at))
    return done, events


# -- Google Generative AI -----------------------------------------------------------------------------------

_GOOGLE_FINISH = {"stop": "STOP", "length": "MAX_TOKENS", "toolUse": "STOP"}


def _google_events(reply: WireReply, model: str, number: int) -> list[bytes]:
    def chunk(parts: list[dict[str, Any]] | None, **extra: Any) -> bytes:
        candidate: dict[str, Any] = {"index": 0}
        if parts is not None:
            candidate["content"] = {"parts": parts, "role": "model"}
        payload = {"candidates": [candidate | extra.pop("candidate", {})], "modelVersion": model}
        return _data(payload | {"responseId": f"fault-{number}"} | extra)

    events = []
    for block in reply.blocks:
        if block[0] == "call":
            _, name, arguments, given = block
            try:
                args: Any = json.loads(arguments)
            except ValueError:
                args = arguments
            call = {"name": name, "args": args} | ({"id": given} if given else {})
            events.append(chunk([{"functionCall": call, "thoughtSignature": "Y2FsbA=="}]))
            continue
        pieces = _pieces(block[1], reply.chunk_chars)
        for index, piece in enumerate(pieces):
            part: dict[str, Any] = {"text": piece}
            if block[0] == "thinking":
                part["thought"] = True
                if index == len(pieces) - 1:
                    part["thoughtSignature"] = block[2]
            events.append(chunk([part]))
    prompt = reply.input_tokens + reply.cache_read_tokens + reply.cache_write_tokens
    usage = {"promptTokenCount": prompt, "candidatesTokenCount": reply.output_tokens}
    usage["totalTokenCount"] = prompt + reply.output_tokens
    if reply.cache_read_tokens:
        usage["cachedContentTokenCount"] = reply.cache_read_tokens
    events.append(chunk(None, candidate={"finishReason": _GOOGLE_FINISH[reply.stop_reason]}, usageMetadata=usage))
    return events


_GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 409: "ABORTED",
    429: "RESOURCE_EXHAUSTED", 499: "CANCELLED", 500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED",
}  # fmt: skip


def google_status(status: int) -> str:
    return _GOOGLE_STATUS.get(status, "INTERNAL" if status >= 500 else "FAILED_PRECONDITION")


# -- errors -------------------------------------------------------------------------------------------------


def error_body(api: Api | None, spec: ErrorSpec) -> dict[str, Any]:
    if api == "anthropic":
        return {"type": "error", "error": {"type": spec.type, "message": spec.message}}
    if api == "google":
        return {"error": {"code": spec.status, "message": spec.message, "status": spec.type}}
    return {"error": {"message": spec.message, "type": spec.type, "param": None, "code": spec.code}}


def sse_error_event(api: Api, error_type: str, message: str) -> bytes:
    if api == "anthropic":
        return _event("error", {"type": "error", "error": {"type": error_type, "message": message}})
    if api == "responses":
        return _event("error", {"type": "error", "code": error_type, "message": message, "param": None})
    if api == "google":
        status = 503 if "overloaded" in error_type else 500
        return _data({"error": {"code": status, "message": message, "status": google_status(status)}})
    return _data({"error": {"message": message, "type": error_type, "param": None, "code": None}})


def malformed_event(api: Api) -> bytes:
    if api == "anthropic":
        return b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": {"ty\n\n'
    if api == "responses":
        return b'event: response.output_text.delta\ndata: {"type": "response.output_text.delta", "del\n\n'
    if api == "google":
        return b'data: {"candidates": [{"content": {"parts": [{"te\n\n'
    return b'data: {"id": "chatcmpl-fault", "choices": [{"index": 0, "delta": {"cont\n\n'
