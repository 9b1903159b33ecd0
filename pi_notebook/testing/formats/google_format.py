"""Google Generative AI (``POST …/models/<model>:streamGenerateContent?alt=sse``): ``data:`` chunks of
candidates, the last with ``finishReason`` and ``usageMetadata``."""

from __future__ import annotations

import json
from typing import Any

from ._wire import ErrorSpec, WireFormat, WireReply, data, split_text

__all__ = ["FORMAT", "google_status"]

_GOOGLE_FINISH = {"stop": "STOP", "length": "MAX_TOKENS", "toolUse": "STOP"}


def _events(reply: WireReply, model: str, include_usage: bool, number: int) -> list[bytes]:
    def chunk(parts: list[dict[str, Any]] | None, **extra: Any) -> bytes:
        candidate: dict[str, Any] = {"index": 0}
        if parts is not None:
            candidate["content"] = {"parts": parts, "role": "model"}
        payload = {"candidates": [candidate | extra.pop("candidate", {})], "modelVersion": model}
        return data(payload | {"responseId": f"fault-{number}"} | extra)

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
        pieces = split_text(block[1], reply.chunk_chars)
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


def _error_body(spec: ErrorSpec) -> dict[str, Any]:
    return {"error": {"code": spec.status, "message": spec.message, "status": spec.type}}


def _sse_error(error_type: str, message: str) -> bytes:
    status = 503 if "overloaded" in error_type else 500
    return data({"error": {"code": status, "message": message, "status": google_status(status)}})


def _asks_for_stream(path: str, body: Any) -> bool:
    """Gemini asks for a stream by its method, ``:streamGenerateContent``."""
    return path.endswith(":streamGenerateContent") and isinstance(body, dict)


FORMAT = WireFormat(
    name="google",
    api="google-generative-ai",
    vendor="google",
    path="/v1beta",
    routes=(":streamGenerateContent", ":generateContent"),
    events=_events,
    error_body=_error_body,
    sse_error=_sse_error,
    malformed=b'data: {"candidates": [{"content": {"parts": [{"te\n\n',
    status_fault="google",
    status_name=google_status,
    asks_for_stream=_asks_for_stream,
)
