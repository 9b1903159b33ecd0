"""HTTP plumbing shared by the streaming providers: one client per event loop, provider-request retry
(Pi's layer 1), SSE reading, and the one place where transport exceptions become error text.

Exceptions (httpx's and ours) never cross the stream boundary: :func:`run_provider` turns every failure into
the terminal ``error``/``aborted`` event of the stream (PI-SPEC §1.3). The texts are chosen so the retry
classifier (``pi_notebook.ai.retry``) recognises the transient ones, as Pi's SDK texts are; a failed response's
status and retry hints travel on the message too (``AssistantMessage.request_failure``), for the same
classifier at every layer.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
from httpx_sse import EventSource, ServerSentEvent

from ._abort import AbortSignal, abort_scope
from ._builder import MessageBuilder
from ._errors import PiNotebookError
from ._request import Model, StreamOptions
from ._responses import (
    content_type,
    describe_empty_stream,
    describe_redirect,
    describe_unexpected_body,
    is_event_stream,
    is_json,
    summarise_body,
)
from ._secret import header_secrets, scrub_secrets
from ._stream import AssistantMessageEventStream
from .cassette._route import CassetteError, route_through_cassettes
from .messages import RequestFailure
from .retry import backoff_ms, is_retryable_failure

__all__ = [
    "ProviderError",
    "ProviderRun",
    "ReadJson",
    "close_connections",
    "describe_transport_error",
    "provider_retry_delay_ms",
    "run_provider",
    "send_with_retry",
    "server_delay_ms",
]

_MAX_ERROR_BODY = 64 * 1024
_MAX_WHOLE_BODY = 16 * 1024 * 1024  # a whole JSON completion sent instead of a stream
_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = weakref.WeakKeyDictionary()


class ProviderError(PiNotebookError):
    """A request failed before streaming began: an error status, or no response at all (``status is None``).

    ``headers`` and ``body`` are the response's, when there was one. Raised inside providers only; it becomes
    the text of the stream's ``error`` message.
    """

    def __init__(
        self,
        message: str,
        status: int | None = None,
        headers: Mapping[str, str] | None = None,
        body: str = "",
        *,
        empty_stream: bool = False,
        retryable: bool | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.headers = headers or {}
        self.body = body
        self.empty_stream = empty_stream
        """The server answered with a success and then sent nothing: it failed after its headers went out."""
        self.retryable = retryable
        """``False``: no retry layer may repeat it (a request refused before it was sent); ``None``: the classifier
        decides."""

    @property
    def failure(self) -> RequestFailure | None:
        """What the response said, for the retry classifier; ``None`` when there was no response, or when it was
        not an error status (a 200 whose body is an error, a redirect): then its text decides."""
        if self.retryable is False:
            return RequestFailure(self.status, should_retry=False)
        if self.status is None or self.status < 400:
            return None
        hint = self.headers.get("x-should-retry")
        return RequestFailure(
            self.status,
            retry_after_ms=server_delay_ms(self.headers),
            should_retry=True if hint == "true" else False if hint == "false" else None,
        )


def http_client() -> httpx.AsyncClient:
    """The shared client of the running event loop (connection pool, keep-alive)."""
    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None or client.is_closed:
        client = httpx.AsyncClient(timeout=None, limits=httpx.Limits(max_keepalive_connections=8))
        route_through_cassettes(client)  # an active Cassette answers requests (pi_notebook.ai.Cassette)
        _clients[loop] = client
    return client


async def close_connections() -> None:
    """Close the running loop's pooled HTTP connections (idle keep-alive ones; a later request reconnects)."""
    client = _clients.pop(asyncio.get_running_loop(), None)
    if client is not None:
        await client.aclose()


def total_time_text(total_ms: float) -> str:
    """The error of a request that outlived its total time limit (``StreamOptions.total_timeout_ms``)."""
    return (
        f"Request stopped at the total time limit of {total_ms / 1000:g} s (timeouts.http_total_ms): "
        "the server kept the response open without finishing it; not retried"
    )


def describe_transport_error(exc: BaseException) -> str:
    """Text for a failure below HTTP (connect, read, protocol). Wording matches the retry classifier."""
    detail = str(exc) or type(exc).__name__
    if isinstance(exc, httpx.LocalProtocolError):  # we built a request HTTP forbids: sending it again cannot help
        return f"Invalid request, not sent: {detail}"
    if isinstance(exc, httpx.TimeoutException):
        if isinstance(exc, httpx.ConnectTimeout):
            return f"Connection timed out: {detail}"
        return f"Request timed out: no data received within the idle timeout ({detail})"
    if isinstance(exc, httpx.ConnectError):
        return f"Connection error: {detail}"
    if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError | httpx.CloseError):
        return f"Network connection lost: {detail}"
    if isinstance(exc, httpx.ProxyError):
        return f"Connection error (proxy): {detail}"
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL):
        return f"Invalid request URL: {detail}"
    if isinstance(exc, httpx.TransportError | httpx.StreamError):
        return f"Network error: {detail}"
    if isinstance(exc, json.JSONDecodeError):
        return f"Invalid response from provider: malformed JSON in stream ({detail})"
    return f"{type(exc).__name__}: {detail}"


def server_delay_ms(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """The delay a response asks for: ``retry-after-ms``, else ``retry-after`` (seconds or an HTTP date; a date in
    the past, or text that is neither, means "at once" as in Pi); ``None`` when it names none.

    A header value that is not a finite, non-negative number (``inf``, ``nan``, ``-5``, or so large that it
    overflows) counts as absent, so the next source applies.
    """
    delay = _finite_ms(headers.get("retry-after-ms"), 1.0)
    if delay is not None:
        return delay
    raw = headers.get("retry-after")
    if raw is not None:
        delay = _finite_ms(raw, 1000.0)
        if delay is not None:
            return delay
        if not _is_number(raw):
            try:
                when = email.utils.parsedate_to_datetime(raw).timestamp()
            except (TypeError, ValueError, OverflowError):
                return 0.0
            return max(0.0, (when - (time.time() if now is None else now)) * 1000)
    return None


def provider_retry_delay_ms(error: ProviderError, attempt: int, *, now: float | None = None) -> float:
    """Pi's layer-1 delay for retry number ``attempt`` (0-based): what the server asked for
    (:func:`server_delay_ms`), else ``min(0.5 * 2**attempt, 8)`` s minus up to 25 % jitter."""
    asked = server_delay_ms(error.headers, now=now)
    if asked is not None:
        return asked
    return backoff_ms(500, attempt + 1, max_ms=8000, jitter=0.25)


def _finite_ms(raw: str | None, scale: float) -> float | None:
    """``raw`` as milliseconds (``scale`` per unit) when it is a finite number >= 0, else None."""
    if raw is None:
        return None
    try:
        value = float(raw) * scale
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def _is_number(raw: str) -> bool:
    try:
        float(raw)
    except ValueError:
        return False
    return True


async def send_with_retry(
    request: Callable[[], httpx.Request],
    options: StreamOptions,
    describe_status: Callable[[int, str], str],
) -> httpx.Response:
    """Send ``request()`` and return the streaming response once it has a success status.

    Error statuses and connection failures are retried ``options.max_retries`` times when the retry classifier
    (:func:`~pi_notebook.ai.retry.is_retryable_failure`) calls them transient: ``x-should-retry`` first, then
    never for quota or billing texts, then the status (408, 409, 429, 5xx), then the text (for a failure with no
    response: "Connection error", "timed out", ...). A redirect (3xx) fails at once and is not followed; an HTML
    error page is described by its title. A server asking to wait longer than
    ``options.max_retry_delay_ms`` (0 = no cap) fails at once with Pi's "Server requested ..." text. Only the
    initial request is ever retried: once a response streams, a failure is final.
    """
    client = http_client()
    attempt = 0
    while True:
        try:
            response = await client.send(request(), stream=True)
        except httpx.LocalProtocolError as exc:
            raise ProviderError(describe_transport_error(exc)) from None
        except httpx.TransportError as exc:
            error = ProviderError(describe_transport_error(exc))
        else:
            if response.status_code < 300:
                return response
            error = await _status_error(response, describe_status)
        if attempt >= options.max_retries or not is_retryable_failure(error.message, error.failure):
            raise error
        delay = provider_retry_delay_ms(error, attempt)
        cap = options.max_retry_delay_ms
        if cap > 0 and delay > cap:
            raise ProviderError(
                f"Server requested {_ceil_s(delay)}s retry delay (max: {_ceil_s(cap)}s). {error.message}",
                error.status,
                error.headers,
                error.body,
            )
        attempt += 1
        await anyio.sleep(delay / 1000)  # an abort cancels it: providers run inside run_provider's abort scope


async def _status_error(response: httpx.Response, describe_status: Callable[[int, str], str]) -> ProviderError:
    """The error an unsuccessful response is, its body read (up to a limit) and the response closed. Raises it for
    a redirect (3xx), which is never retried nor followed."""
    try:
        body = await _read_limited(response)
    finally:
        await response.aclose()
    if response.status_code < 400:
        raise ProviderError(describe_redirect(response), response.status_code, response.headers, body)
    kind = content_type(response)
    shown = summarise_body(kind, body) if "html" in kind else body  # a page's title, not its markup
    return ProviderError(describe_status(response.status_code, shown), response.status_code, response.headers, body)


def _ceil_s(ms: float) -> int:
    return -int(-ms // 1000)


async def _read_limited(response: httpx.Response, limit: int = _MAX_ERROR_BODY) -> str:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size >= limit:
            break
    return b"".join(chunks)[:limit].decode("utf-8", "replace")


def iter_sse(response: httpx.Response) -> AsyncIterator[ServerSentEvent]:
    return EventSource(response).aiter_sse()


def timeout_for(options: StreamOptions) -> httpx.Timeout:
    """Per-read timeout = the idle timeout (gap between bytes); connect is bounded the same way."""
    idle = options.idle_timeout_ms
    seconds = None if not idle else idle / 1000
    return httpx.Timeout(seconds, connect=seconds)


ReadJson = Callable[["ProviderRun", httpx.Response, str, Any], None]
"""Reads a whole JSON body (status < 300) as the message or error it is: pushes events, or raises ProviderError."""


async def post_sse(
    run: ProviderRun,
    url: str,
    payload: Mapping[str, Any],
    headers: Mapping[str, str],
    describe_status: Callable[[int, str], str],
    read: Callable[[ProviderRun, httpx.Response], Awaitable[None]],
    read_json: ReadJson,
) -> None:
    """POST ``payload`` as JSON (layer-1 retry included), then let ``read`` consume the streaming response,
    which is closed however ``read`` ends (an abort included, so the connection never lingers).

    A success that is not an event stream is not a network failure: a JSON body goes to ``read_json`` (a whole
    completion, or an error sent with 200), anything else (an HTML page, plain text, nothing) fails with a text
    saying what came back; so does a stream that ends before its first byte. None of these is retried.

    Headers: the JSON/SSE ones, then ``headers`` (auth), then the model's, then the request's."""
    options = run.options
    all_headers = {"content-type": "application/json", "accept": "text/event-stream", **headers}
    all_headers.update(run.model.headers or {})
    all_headers.update(options.headers or {})
    timeout = timeout_for(options).as_dict()

    def request() -> httpx.Request:
        return httpx.Request("POST", url, json=payload, headers=all_headers, extensions={"timeout": timeout})

    response = await send_with_retry(request, options, describe_status)
    try:
        if not is_event_stream(response):
            await _read_whole_body(run, response, read_json)
            return
        run.answered = True
        try:
            await read(run, response)
        except ProviderError:
            if response.num_bytes_downloaded == 0:
                raise ProviderError(describe_empty_stream(response), response.status_code, empty_stream=True) from None
            raise
    finally:
        with anyio.CancelScope(shield=True):
            await response.aclose()


async def _read_whole_body(run: ProviderRun, response: httpx.Response, read_json: ReadJson) -> None:
    body = await _read_limited(response, _MAX_WHOLE_BODY)
    if is_json(response) and body.strip():
        try:
            data = json.loads(body)
        except ValueError:
            pass
        else:
            read_json(run, response, body, data)
            return
    raise ProviderError(describe_unexpected_body(response, body), response.status_code, response.headers, body)


@dataclass(slots=True)
class ProviderRun:
    """What a provider's body gets: the builder, the stream to push to, and the request's options."""

    model: Model
    options: StreamOptions
    builder: MessageBuilder
    stream: AssistantMessageEventStream
    answered: bool = False
    """The server took the request and began a streamed answer (its prompt reached the model)."""

    def push(self, event: Any) -> None:
        self.stream.push(event)


def run_provider(
    model: Model, options: StreamOptions, body: Callable[[ProviderRun], Awaitable[None]], *, secret: str | None
) -> AssistantMessageEventStream:
    """Run a provider body as the stream's producer, with the abort signal and timeouts applied.

    ``body`` pushes events and ends with a ``done`` event. Whatever it raises, and an abort or timeout that
    interrupts it, becomes the terminal ``error``/``aborted`` event here, with the partial message kept.
    ``secret`` (the API key) and the values of credential headers (``model.headers``, ``options.headers``) are
    scrubbed from any error text, in every spelling a library may quote them in (``_secret.scrub_secrets``).
    """
    secrets = [secret, options.api_key_value()]
    secrets += header_secrets(model.headers) + header_secrets(options.headers)

    async def produce(stream: AssistantMessageEventStream) -> None:
        run = ProviderRun(model, options, MessageBuilder(model.api, model.provider, model.id), stream)
        signal: AbortSignal | None = options.signal
        failure: str | None = None
        request_failure: RequestFailure | None = None
        with abort_scope(signal) as scope:
            deadline = options.timeout_ms
            total = options.total_timeout_ms
            limit = min(ms for ms in (deadline, total, math.inf) if ms)
            with anyio.move_on_after(limit / 1000 if limit != math.inf else None) as timer:
                try:
                    await body(run)
                except ProviderError as exc:
                    failure, request_failure = exc.message, exc.failure
                except CassetteError as exc:  # a request the cassette cannot answer: retrying cannot help
                    failure, request_failure = describe_transport_error(exc), RequestFailure(should_retry=False)
                except Exception as exc:
                    failure = describe_transport_error(exc)
            timed_out = timer.cancelled_caught
        if stream.ended:
            return
        builder = run.builder
        if (signal is not None and signal.aborted) or scope.cancelled_caught:
            stream.push(builder.aborted())
        elif timed_out and limit == total:
            builder.message.request_failure = RequestFailure(should_retry=False)
            stream.push(builder.error("error", total_time_text(total)))
        elif timed_out:
            stream.push(builder.error("error", f"Request timed out after {deadline} ms"))
        else:
            text = failure or "Stream ended without a terminal event"
            builder.message.request_failure = request_failure
            stream.push(builder.error("error", scrub_secrets(text, secrets)))

    return AssistantMessageEventStream.from_producer(produce)
