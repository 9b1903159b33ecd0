"""What the fault server's wire formats share: a reply as plain data (:class:`WireReply`), an error's fields
(:class:`ErrorSpec`), a format's record (:class:`WireFormat`) and the SSE framing."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

__all__ = ["ErrorSpec", "Piece", "WireFormat", "WireReply", "data", "event", "split_text", "usage_details"]

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


def _stream_flag(path: str, body: Any) -> bool:
    return isinstance(body, dict) and body.get("stream") is True


def _no_status_name(status: int) -> str:
    return ""


@dataclass(frozen=True)
class WireFormat:
    """One wire format the fault server speaks: which requests are its, and how it writes replies and errors.
    Each module of ``testing/formats/`` exports one as ``FORMAT``; ``FORMATS`` lists them."""

    name: str
    """The fault server's name for it (``RecordedRequest.api``, what tests parametrize over)."""
    api: str
    """``Model.api``: which provider code speaks it."""
    vendor: str
    """The provider whose key variable applies to a model of this format (``OPENAI_API_KEY``, ...)."""
    path: str
    """What the fault server's base URL takes for its routes (``/v1``: OpenAI's)."""
    routes: tuple[str, ...]
    """How the paths of its POST requests end."""
    events: Callable[[WireReply, str, bool, int], list[bytes]]
    """``(reply, model, include_usage, number)``: the SSE events of a reply, one ``bytes`` each."""
    error_body: Callable[[ErrorSpec], dict[str, Any]]
    """An HTTP error response's JSON body."""
    sse_error: Callable[[str, str], bytes]
    """``(error_type, message)``: an error event inside a stream."""
    malformed: bytes
    """An event cut off inside its JSON."""
    status_fault: str = "openai"
    """Which of :class:`~pi_notebook.testing.StatusFault`'s specs it answers with (``openai``, ``anthropic``,
    ``google``)."""
    status_name: Callable[[int], str] = _no_status_name
    """The error ``type`` for a status, when its ``StatusFault`` spec is not given (Google's status names)."""
    asks_for_stream: Callable[[str, Any], bool] = _stream_flag
    """``(path, body)``: whether a request asks for a stream (``"stream": true`` unless the format says else)."""


def split_text(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def data(payload: Any) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def event(name: str, payload: Any) -> bytes:
    return f"event: {name}\n".encode() + data(payload)


def usage_details(reply: WireReply) -> dict[str, int]:
    """OpenAI's cached tokens, and the cache writes OpenRouter-style servers add (OpenAI reports none)."""
    details = {"cached_tokens": reply.cache_read_tokens}
    if reply.cache_write_tokens:
        details["cache_write_tokens"] = reply.cache_write_tokens
    return details
