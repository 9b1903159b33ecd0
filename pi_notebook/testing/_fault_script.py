"""The fault server's script: replies and faults (written in each wire format by ``formats/``).

See :mod:`pi_notebook.testing._fault_server` for the server and how scripts are used.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, Literal, TypeAlias

from .formats import ErrorSpec, WireReply, wire_format

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

Api: TypeAlias = str
"""A wire format's name, as the fault server routes it: ``openai`` (chat completions), ``anthropic``, ``responses``
(OpenAI's Responses API), ``google`` (``testing/formats/``' ``FORMATS``)."""
StreamFaultKind: TypeAlias = Literal["reset", "disconnect", "truncate", "stall", "drip", "malformed", "sse_error"]


# ---------------------------------------------------------------------------------------------------- the script


@dataclass(frozen=True)
class TokenUsage:
    """Token counts of a reply, Anthropic-style: ``input_tokens`` leaves out cache reads and writes.

    OpenAI (and the Responses API) get ``prompt_tokens = input + cache_read + cache_write``, ``cached_tokens =
    cache_read`` and, when there are writes, OpenRouter's ``cache_write_tokens``; Gemini ``promptTokenCount =
    input + cache_read + cache_write`` and ``cachedContentTokenCount = cache_read`` (it reports no writes).
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


_ErrorSpec = ErrorSpec


@dataclass(frozen=True)
class StatusFault:
    """An HTTP error response: a JSON error body in the request's format, or ``body`` verbatim.

    Build it with :meth:`Fault.status` or a preset (:meth:`Fault.rate_limit`, :meth:`Fault.overloaded`, …).
    ``openai`` serves chat completions and the Responses API; ``google`` (``type`` holds Google's status name,
    ``RESOURCE_EXHAUSTED``) defaults to ``openai``'s status and message.
    ``body``: a mapping is sent as JSON; str/bytes as given with ``text/plain`` (``b""`` sends no body).
    ``headers`` are added last and win (``retry-after``, ``retry-after-ms``, ``x-should-retry``, ``content-type``).
    """

    openai: _ErrorSpec
    anthropic: _ErrorSpec
    headers: Mapping[str, str] = field(default_factory=dict)
    body: Mapping[str, Any] | str | bytes | None = None
    google: _ErrorSpec | None = None

    def spec_for(self, api: Api) -> _ErrorSpec:
        """The error the format named ``api`` answers with (its ``WireFormat.status_fault``); an unknown name is a
        ``ValueError``."""
        wire = wire_format(api)
        own: _ErrorSpec | None = getattr(self, wire.status_fault)
        if own is None:  # google not given: openai's status and message, the status's name as its type
            return _ErrorSpec(self.openai.status, wire.status_name(self.openai.status), self.openai.message)
        return own

    def status_for(self, api: Api) -> int:
        return self.spec_for(api).status


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
            _ErrorSpec(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
        )

    @staticmethod
    def overloaded(*, headers: Mapping[str, str] | None = None) -> StatusFault:
        """Anthropic 529 ``overloaded_error``; OpenAI 503 "The engine is currently overloaded" (retryable)."""
        return _preset(
            _ErrorSpec(503, "server_error", "The engine is currently overloaded, please try again later"),
            _ErrorSpec(529, "overloaded_error", "Overloaded"),
            headers,
            _ErrorSpec(503, "UNAVAILABLE", "The model is overloaded. Please try again later."),
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
            _ErrorSpec(
                429,
                "RESOURCE_EXHAUSTED",
                "You exceeded your current quota, please check your plan and billing details.",
            ),
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
            _ErrorSpec(
                400,
                "INVALID_ARGUMENT",
                "The input token count (1196265) exceeds the maximum number of tokens allowed (1048575).",
            ),
        )

    @staticmethod
    def unauthorized(*, headers: Mapping[str, str] | None = None) -> StatusFault:
        """401 bad API key (not retryable). The message never echoes the key."""
        return _preset(
            _ErrorSpec(401, "invalid_request_error", "Incorrect API key provided.", "invalid_api_key"),
            _ErrorSpec(401, "authentication_error", "invalid x-api-key"),
            headers,
            _ErrorSpec(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key."),
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


def _preset(
    openai: _ErrorSpec, anthropic: _ErrorSpec, headers: Mapping[str, str] | None, google: _ErrorSpec | None = None
) -> StatusFault:
    return StatusFault(openai=openai, anthropic=anthropic, headers=dict(headers or {}), google=google)


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
        pieces: list[tuple[str, ...]] = []
        for block in self.blocks:
            if isinstance(block, TextBlock):
                pieces.append(("text", block.text))
            elif isinstance(block, ThinkingBlock):
                pieces.append(("thinking", block.thinking, block.signature, block.openai_field))
            else:
                pieces.append(("call", block.name, block.arguments_json, block.id or ""))
        u = self.usage
        wire = WireReply(
            tuple(pieces),
            self.resolved_stop_reason,
            u.input_tokens,
            u.output_tokens,
            u.cache_read_tokens,
            u.cache_write_tokens,
            self.chunk_chars,
        )
        return wire_format(api).events(wire, model, include_usage and self.send_usage, number)


ScriptEntry: TypeAlias = Reply | StatusFault | StreamFault | RawResponse
