"""The fault server's script: replies and faults, and how each is written in the two wire formats.

See :mod:`pi_notebook.testing._fault_server` for the server and how scripts are used.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, Literal, TypeAlias

__all__ = [
    "Api",
    "Block",
    "Fault",
    "RawResponse",
    "Reply",
    "ScriptEntry",
    "StatusFault",
    "StreamFault",
    "StreamFaultKind",
    "TextBlock",
    "ThinkingBlock",
    "TokenUsage",
    "ToolCallBlock",
]

Api: TypeAlias = Literal["openai", "anthropic"]
StreamFaultKind: TypeAlias = Literal["reset", "disconnect", "truncate", "stall", "drip", "malformed", "sse_error"]


# ---------------------------------------------------------------------------------------------------- the script


@dataclass(frozen=True)
class TokenUsage:
    """Token counts of a reply, Anthropic-style: ``input_tokens`` leaves out cache reads and writes.

    OpenAI gets ``prompt_tokens = input + cache_read + cache_write`` and ``cached_tokens = cache_read``.
    """

    input_tokens: int = 10
    output_tokens: int = 5
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


@dataclass(frozen=True)
class TextBlock:
    text: str


@dataclass(frozen=True)
class ThinkingBlock:
    """Reasoning. Anthropic: a ``thinking`` block closed by a ``signature_delta``. OpenAI has no standard field:
    it goes in ``delta.<openai_field>`` (DeepSeek and llama.cpp use ``reasoning_content``, OpenRouter ``reasoning``).
    """

    thinking: str
    signature: str = "c2lnbmF0dXJl"
    openai_field: Literal["reasoning_content", "reasoning", "reasoning_text"] = "reasoning_content"


@dataclass(frozen=True)
class ToolCallBlock:
    """A tool call. ``arguments`` as a dict is sent as JSON; as a string it is sent verbatim (malformed is fine).

    ``id`` defaults to ``call_<reply>_<block>`` (OpenAI) or ``toolu_<reply>_<block>`` (Anthropic).
    """

    name: str
    arguments: Mapping[str, Any] | str
    id: str | None = None

    @property
    def arguments_json(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


Block: TypeAlias = TextBlock | ThinkingBlock | ToolCallBlock


@dataclass(frozen=True)
class StreamFault:
    """A fault during a stream, fired after ``after_events`` events of the reply have been written.

    Events are counted as written: for OpenAI every ``data:`` line (``[DONE]`` included), for Anthropic every
    event (``ping`` included); :meth:`Reply.wire_events` lists them. A count past the end fires after the last
    event, before the body ends. Kinds:

    * ``reset``: TCP RST (``SO_LINGER`` 0). On its own in the script: RST before any response byte. Linux hands
      the client the events it received before the RST; some systems drop unread data on a reset.
    * ``disconnect``: close the connection (FIN) without ending the chunked body.
    * ``truncate``: end the body cleanly, without the terminal ``[DONE]`` / ``message_stop``.
    * ``stall``: send nothing more and hold the socket until the client leaves or the server closes. On its own:
      the request is read and no response header ever comes.
    * ``drip``: send nothing more but an SSE comment line (``:``, 2 bytes) every ``interval_s`` seconds, until
      the client leaves or the server closes: a stream no idle timeout ever ends.
    * ``malformed``: write ``payload`` (default: an event with broken JSON), then end the body.
    * ``sse_error``: an in-stream error event (Anthropic ``event: error``; OpenAI ``data: {"error": …}``),
      then end the body.
    """

    kind: StreamFaultKind
    after_events: int = 0
    payload: bytes | None = None
    error_type: str = "overloaded_error"
    message: str = "Overloaded"
    interval_s: float = 1.0
    """``drip``: seconds between two comment lines."""

    def __post_init__(self) -> None:
        if self.interval_s <= 0:
            raise ValueError(f"interval_s must be > 0, got {self.interval_s}")
        if self.after_events < 0:
            raise ValueError(f"after_events must be >= 0, got {self.after_events}")
        if self.payload is not None and not self.payload:
            raise ValueError("a malformed payload must not be empty")


@dataclass(frozen=True)
class _ErrorSpec:
    status: int
    type: str
    message: str
    code: str | None = None


@dataclass(frozen=True)
class StatusFault:
    """An HTTP error response: a JSON error body in the request's format, or ``body`` verbatim.

    Build it with :meth:`Fault.status` or a preset (:meth:`Fault.rate_limit`, :meth:`Fault.overloaded`, …).
    ``body``: a mapping is sent as JSON; str/bytes as given with ``text/plain`` (``b""`` sends no body).
    ``headers`` are added last and win (``retry-after``, ``retry-after-ms``, ``x-should-retry``, ``content-type``).
    """

    openai: _ErrorSpec
    anthropic: _ErrorSpec
    headers: Mapping[str, str] = field(default_factory=dict)
    body: Mapping[str, Any] | str | bytes | None = None

    def status_for(self, api: Api) -> int:
        return (self.openai if api == "openai" else self.anthropic).status


@dataclass(frozen=True)
class RawResponse:
    """Any response, verbatim: a status (2xx and 3xx included), a body, a content type and headers.

    For what servers send besides an event stream: a whole JSON completion or a JSON error with ``200`` (LiteLLM's
    mock models on ``/v1/messages``), an HTML page from a proxy or a login wall, a redirect, an empty ``200``
    stream (llama-cpp-python's server when its chat template fails after the headers went out). ``body``: a
    mapping is sent as JSON; str/bytes as given. ``chunked`` sends the body as one chunk of a chunked response
    (none when empty), as a streaming server would, instead of with a ``content-length``.
    """

    status: int
    body: Mapping[str, Any] | str | bytes = b""
    content_type: str = "application/json"
    headers: Mapping[str, str] = field(default_factory=dict)
    chunked: bool = False

    def __post_init__(self) -> None:
        if not 200 <= self.status <= 599:
            raise ValueError(f"a raw response needs a status from 200 to 599, got {self.status}")

    @property
    def body_bytes(self) -> bytes:
        if isinstance(self.body, Mapping):
            return json.dumps(dict(self.body)).encode()
        return self.body.encode() if isinstance(self.body, str) else self.body


class Fault:
    """Constructors of faults. Presets pick a realistic status and body per wire format (PI-SPEC §4.4, §5)."""

    @staticmethod
    def status(
        status: int,
        *,
        message: str | None = None,
        error_type: str | None = None,
        code: str | None = None,
        headers: Mapping[str, str] | None = None,
        body: Mapping[str, Any] | str | bytes | None = None,
    ) -> StatusFault:
        """An error with this status; type and message default per format (529 → ``overloaded_error``)."""
        if not 400 <= status <= 599:
            raise ValueError(f"a status fault needs a 4xx or 5xx status, got {status}")
        text = message or _status_phrase(status)
        return StatusFault(
            openai=_ErrorSpec(status, error_type or _openai_error_type(status), text, code),
            anthropic=_ErrorSpec(status, error_type or _anthropic_error_type(status), text),
            headers=dict(headers or {}),
            body=body,
        )

    @staticmethod
    def rate_limit(*, headers: Mapping[str, str] | None = None) -> StatusFault:
        """429 rate limit (retryable)."""
        return _preset(
            _ErrorSpec(
                429, "requests", "Rate limit reached for requests. Please try again later.", "rate_limit_exceeded"
            ),
            _ErrorSpec(429, "rate_limit_error", "Number of requests has exceeded your per-minute rate limit."),
            headers,
        )

    @staticmethod
    def overloaded(*, headers: Mapping[str, str] | None = None) -> StatusFault:
        """Anthropic 529 ``overloaded_error``; OpenAI 503 "The engine is currently overloaded" (retryable)."""
        return _preset(
            _ErrorSpec(503, "server_error", "The engine is currently overloaded, please try again later"),
            _ErrorSpec(529, "overloaded_error", "Overloaded"),
            headers,
        )

    @staticmethod
    def quota(*, headers: Mapping[str, str] | None = None) -> StatusFault:
        """Out of credit (not retryable): OpenAI 429 ``insufficient_quota``; Anthropic 400 credit balance/billing."""
        return _preset(
            _ErrorSpec(
                429,
                "insufficient_quota",
                "You exceeded your current quota, please check your plan and billing details.",
                "insufficient_quota",
            ),
            _ErrorSpec(
                400,
                "invalid_request_error",
                "Your credit balance is too low to access the Anthropic API. "
                "Please go to Plans & Billing to upgrade or purchase credits.",
            ),
            headers,
        )

    @staticmethod
    def overflow(*, headers: Mapping[str, str] | None = None) -> StatusFault:
        """400 context overflow: OpenAI "exceeds the context window"; Anthropic "prompt is too long"."""
        return _preset(
            _ErrorSpec(
                400,
                "invalid_request_error",
                "Your input exceeds the context window of this model. Please adjust your input and try again.",
                "context_length_exceeded",
            ),
            _ErrorSpec(400, "invalid_request_error", "prompt is too long: 213462 tokens > 200000 maximum"),
            headers,
        )

    @staticmethod
    def unauthorized(*, headers: Mapping[str, str] | None = None) -> StatusFault:
        """401 bad API key (not retryable). The message never echoes the key."""
        return _preset(
            _ErrorSpec(401, "invalid_request_error", "Incorrect API key provided.", "invalid_api_key"),
            _ErrorSpec(401, "authentication_error", "invalid x-api-key"),
            headers,
        )

    @staticmethod
    def raw(
        status: int,
        body: Mapping[str, Any] | str | bytes = b"",
        *,
        content_type: str = "application/json",
        headers: Mapping[str, str] | None = None,
        chunked: bool = False,
    ) -> RawResponse:
        """A response sent as given (see :class:`RawResponse`), e.g. ``Fault.raw(200, b"", content_type=
        "text/event-stream", chunked=True)`` for a stream that ends before its first event."""
        return RawResponse(status, body, content_type, dict(headers or {}), chunked)

    @staticmethod
    def reset(*, after_events: int = 0) -> StreamFault:
        return StreamFault("reset", after_events)

    @staticmethod
    def disconnect(*, after_events: int = 0) -> StreamFault:
        return StreamFault("disconnect", after_events)

    @staticmethod
    def truncate(*, after_events: int = 0) -> StreamFault:
        return StreamFault("truncate", after_events)

    @staticmethod
    def stall(*, after_events: int = 0) -> StreamFault:
        return StreamFault("stall", after_events)

    @staticmethod
    def drip(*, after_events: int = 0, interval_s: float = 1.0) -> StreamFault:
        return StreamFault("drip", after_events, interval_s=interval_s)

    @staticmethod
    def malformed(*, after_events: int = 0, payload: bytes | None = None) -> StreamFault:
        return StreamFault("malformed", after_events, payload=payload)

    @staticmethod
    def sse_error(
        error_type: str = "overloaded_error", message: str = "Overloaded", *, after_events: int = 0
    ) -> StreamFault:
        return StreamFault("sse_error", after_events, error_type=error_type, message=message)


def _preset(openai: _ErrorSpec, anthropic: _ErrorSpec, headers: Mapping[str, str] | None) -> StatusFault:
    return StatusFault(openai=openai, anthropic=anthropic, headers=dict(headers or {}))


def _status_phrase(status: int) -> str:
    if status == 529:
        return "Overloaded"
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return f"HTTP {status}"


def _openai_error_type(status: int) -> str:
    return "server_error" if status >= 500 else "requests" if status == 429 else "invalid_request_error"


_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def _anthropic_error_type(status: int) -> str:
    return _ANTHROPIC_ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")


StopReason: TypeAlias = Literal["stop", "length", "toolUse"]
_OPENAI_FINISH = {"stop": "stop", "length": "length", "toolUse": "tool_calls"}
_ANTHROPIC_STOP = {"stop": "end_turn", "length": "max_tokens", "toolUse": "tool_use"}


@dataclass(frozen=True)
class Reply:
    """A streamed answer: its blocks in order, cut into ``chunk_chars`` pieces, with ``delay_s`` before each event.

    ``stop_reason`` (Pi's names) defaults to ``toolUse`` when there is a tool call, else ``stop``. ``fault``, if
    given, fires part-way (see :class:`StreamFault`). A reply needs a request with ``"stream": true``.
    """

    blocks: tuple[Block, ...]
    stop_reason: StopReason | None = None
    usage: TokenUsage = field(default_factory=TokenUsage)
    chunk_chars: int = 4
    delay_s: float = 0.0
    fault: StreamFault | None = None
    send_usage: bool = True
    """OpenAI format: False never sends a usage chunk, even when asked (llama-cpp-python's server)."""

    def __post_init__(self) -> None:
        if self.chunk_chars < 1:
            raise ValueError(f"chunk_chars must be >= 1, got {self.chunk_chars}")
        if self.delay_s < 0:
            raise ValueError(f"delay_s must be >= 0, got {self.delay_s}")

    @classmethod
    def text(
        cls,
        text: str,
        *,
        stop_reason: StopReason = "stop",
        usage: TokenUsage | None = None,
        chunk_chars: int = 4,
        delay_s: float = 0.0,
        fault: StreamFault | None = None,
    ) -> Reply:
        usage = usage or TokenUsage()
        return cls((TextBlock(text),), stop_reason, usage, chunk_chars=chunk_chars, delay_s=delay_s, fault=fault)

    @classmethod
    def thinking(
        cls,
        thinking: str,
        *,
        then_text: str = "",
        signature: str = "c2lnbmF0dXJl",
        usage: TokenUsage | None = None,
        chunk_chars: int = 4,
        delay_s: float = 0.0,
        fault: StreamFault | None = None,
    ) -> Reply:
        blocks: tuple[Block, ...] = (ThinkingBlock(thinking, signature),)
        if then_text:
            blocks += (TextBlock(then_text),)
        usage = usage or TokenUsage()
        return cls(blocks, None, usage, chunk_chars=chunk_chars, delay_s=delay_s, fault=fault)

    @classmethod
    def tool_call(
        cls,
        name: str,
        arguments: Mapping[str, Any] | str,
        *,
        id: str | None = None,
        text: str = "",
        usage: TokenUsage | None = None,
        chunk_chars: int = 4,
        delay_s: float = 0.0,
        fault: StreamFault | None = None,
    ) -> Reply:
        """One tool call, after ``text`` if given. For several calls build ``Reply((ToolCallBlock(…), …))``."""
        blocks: tuple[Block, ...] = (TextBlock(text),) if text else ()
        blocks += (ToolCallBlock(name, arguments, id),)
        usage = usage or TokenUsage()
        return cls(blocks, None, usage, chunk_chars=chunk_chars, delay_s=delay_s, fault=fault)

    @property
    def resolved_stop_reason(self) -> StopReason:
        if self.stop_reason is not None:
            return self.stop_reason
        return "toolUse" if any(isinstance(b, ToolCallBlock) for b in self.blocks) else "stop"

    def wire_events(
        self, api: Api, *, model: str = "fault-model", include_usage: bool = True, number: int = 1
    ) -> list[bytes]:
        """The SSE events this reply writes, one ``bytes`` each (what ``after_events`` counts)."""
        if api == "openai":
            return _openai_events(self, model, include_usage and self.send_usage, number)
        return _anthropic_events(self, model, number)


ScriptEntry: TypeAlias = Reply | StatusFault | StreamFault | RawResponse


# ---------------------------------------------------------------------------------------------- the wire formats


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _data(payload: Any) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def _event(name: str, payload: Any) -> bytes:
    return f"event: {name}\n".encode() + _data(payload)


def _openai_events(reply: Reply, model: str, include_usage: bool, number: int) -> list[bytes]:
    base = {"id": f"chatcmpl-fault-{number}", "object": "chat.completion.chunk", "created": int(time.time())}
    base |= {"model": model, "system_fingerprint": None}

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return _data(base | {"choices": [choice]} | ({"usage": None} if include_usage else {}))

    events = [chunk({"role": "assistant", "content": ""})]
    tool_index = 0
    for position, block in enumerate(reply.blocks):
        if isinstance(block, TextBlock):
            events += [chunk({"content": piece}) for piece in _pieces(block.text, reply.chunk_chars)]
        elif isinstance(block, ThinkingBlock):
            events += [chunk({block.openai_field: piece}) for piece in _pieces(block.thinking, reply.chunk_chars)]
        else:
            call_id = block.id or f"call_{number}_{position}"
            start = {"index": tool_index, "id": call_id, "type": "function"}
            events.append(chunk({"tool_calls": [start | {"function": {"name": block.name, "arguments": ""}}]}))
            for piece in _pieces(block.arguments_json, reply.chunk_chars):
                events.append(chunk({"tool_calls": [{"index": tool_index, "function": {"arguments": piece}}]}))
            tool_index += 1
    events.append(chunk({}, _OPENAI_FINISH[reply.resolved_stop_reason]))
    if include_usage:
        u = reply.usage
        prompt = u.input_tokens + u.cache_read_tokens + u.cache_write_tokens
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": u.output_tokens,
            "total_tokens": prompt + u.output_tokens,
            "prompt_tokens_details": {"cached_tokens": u.cache_read_tokens},
        }
        events.append(_data(base | {"choices": [], "usage": usage}))
    events.append(b"data: [DONE]\n\n")
    return events


def _anthropic_events(reply: Reply, model: str, number: int) -> list[bytes]:
    u = reply.usage
    message: dict[str, Any] = {
        "id": f"msg_fault_{number}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": u.input_tokens,
            "cache_creation_input_tokens": u.cache_write_tokens,
            "cache_read_input_tokens": u.cache_read_tokens,
            "output_tokens": min(1, u.output_tokens),  # as the API does: the count so far
        },
    }
    events = [_event("message_start", {"type": "message_start", "message": message}), _event("ping", {"type": "ping"})]

    def delta(index: int, body: dict[str, Any]) -> bytes:
        return _event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": body})

    for index, block in enumerate(reply.blocks):
        if isinstance(block, TextBlock):
            content: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [delta(index, {"type": "text_delta", "text": p}) for p in _pieces(block.text, reply.chunk_chars)]
        elif isinstance(block, ThinkingBlock):
            content = {"type": "thinking", "thinking": "", "signature": ""}
            pieces = _pieces(block.thinking, reply.chunk_chars)
            deltas = [delta(index, {"type": "thinking_delta", "thinking": p}) for p in pieces]
            deltas.append(delta(index, {"type": "signature_delta", "signature": block.signature}))
        else:
            content = {"type": "tool_use", "id": block.id or f"toolu_{number}_{index}", "name": block.name, "input": {}}
            pieces = _pieces(block.arguments_json, reply.chunk_chars)
            deltas = [delta(index, {"type": "input_json_delta", "partial_json": p}) for p in pieces]
        events.append(
            _event("content_block_start", {"type": "content_block_start", "index": index, "content_block": content})
        )
        events += deltas
        events.append(_event("content_block_stop", {"type": "content_block_stop", "index": index}))
    stop = {"stop_reason": _ANTHROPIC_STOP[reply.resolved_stop_reason], "stop_sequence": None}
    events.append(
        _event("message_delta", {"type": "message_delta", "delta": stop, "usage": {"output_tokens": u.output_tokens}})
    )
    events.append(_event("message_stop", {"type": "message_stop"}))
    return events


def _error_body(api: Api | None, spec: _ErrorSpec) -> dict[str, Any]:
    if api == "anthropic":
        return {"type": "error", "error": {"type": spec.type, "message": spec.message}}
    return {"error": {"message": spec.message, "type": spec.type, "param": None, "code": spec.code}}


def _sse_error_event(api: Api, fault: StreamFault) -> bytes:
    if api == "anthropic":
        return _event("error", {"type": "error", "error": {"type": fault.error_type, "message": fault.message}})
    return _data({"error": {"message": fault.message, "type": fault.error_type, "param": None, "code": None}})


def _malformed_event(api: Api) -> bytes:
    if api == "anthropic":
        return b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": {"ty\n\n'
    return b'data: {"id": "chatcmpl-fault", "choices": [{"index": 0, "delta": {"cont\n\n'


def _route(path: str) -> Api | None:
    if path.endswith("/chat/completions"):
        return "openai"
    if path.endswith("/messages"):
        return "anthropic"
    return None
