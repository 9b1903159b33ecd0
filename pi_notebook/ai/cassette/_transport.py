"""Recording an exchange through the real transport, and replaying a recorded one, as httpx responses.

Both hand the client an ordinary :class:`httpx.Response` whose body is a stream, so the provider code that reads
it is the one that runs live: chunk by chunk, cancellable between chunks (an abort cancels the pending read).

Replay ``timing``: ``fast`` yields to the event loop between chunks but never waits; ``real`` waits until each
chunk's recorded time (measured from when the request was sent). A body whose recording ended because the client
stopped reading (``closed``), or a request that got no response before the client gave up, replays as a server
that goes quiet: it waits until the client stops (an abort) or its read timeout expires (``httpx.ReadTimeout``,
as live).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Literal, TypeAlias

import anyio
import httpx

from ._format import BodyEnd, Chunk, Exchange, Failure, RecordedResponse, TapeRequest
from ._match import Redactor

__all__ = ["CANCELLED", "Timing", "record", "replay", "tape_request"]

Timing: TypeAlias = Literal["fast", "real"]
CANCELLED = "Cancelled"  # Failure.type of a request the client gave up on before any response came
_QUIET = "the cassette's recording ends here (the client stopped reading while it was recorded)"


def tape_request(request: httpx.Request, redactor: Redactor) -> TapeRequest:
    """``request`` as the cassette writes and matches it (its content must have been read)."""
    content = request.content
    body: object = content
    is_json = False
    if content:
        with contextlib.suppress(ValueError):
            body, is_json = json.loads(content), True
    if is_json:
        body = redactor.json(body)
    elif content:
        with contextlib.suppress(UnicodeDecodeError):
            body = redactor.text(content.decode("utf-8")).encode("utf-8")
    headers = dict(redactor.headers(request.headers.multi_items()))
    return TapeRequest(request.method, redactor.text(str(request.url)), headers, body, is_json)


# ------------------------------------------------------------------------------------------------- recording


async def record(
    request: httpx.Request,
    transport: httpx.AsyncBaseTransport,
    redactor: Redactor,
    write: Callable[[Exchange], None],
) -> httpx.Response:
    """Send ``request`` through ``transport``; ``write`` gets the exchange once its body has ended (read to the
    end, failed, or closed, whichever comes first) or the request failed. The request asks for no compression,
    so bodies stay readable text in the file (a server that compresses anyway is recorded as base64)."""
    request.headers["accept-encoding"] = "identity"
    redactor = redactor.with_header_secrets(request.headers.multi_items())
    tape = tape_request(request, redactor)
    started = time.monotonic()
    try:
        response = await transport.handle_async_request(request)
    except anyio.get_cancelled_exc_class():
        write(Exchange(tape, None, Failure(CANCELLED, "no response before the client gave up", _since(started))))
        raise
    except Exception as exc:
        write(Exchange(tape, None, _failure(exc, started, redactor)))
        raise
    at = _since(started)
    headers = [(n, v) for n, v in redactor.headers(response.headers.multi_items()) if n != "set-cookie"]

    def finish(chunks: list[Chunk], end: BodyEnd, error: Failure | None) -> None:
        body = tuple(redactor.chunks(chunks))
        write(Exchange(tape, RecordedResponse(response.status_code, headers, at, body, end, error)))

    inner = response.stream
    assert isinstance(inner, httpx.AsyncByteStream)
    response.stream = _RecordingStream(inner, started, finish, redactor)
    return response


class _RecordingStream(httpx.AsyncByteStream):
    """Passes the body through, noting each chunk and its time; reports once, when the body ends or is closed."""

    def __init__(
        self,
        inner: httpx.AsyncByteStream,
        started: float,
        finish: Callable[[list[Chunk], BodyEnd, Failure | None], None],
        redactor: Redactor,
    ) -> None:
        self._inner = inner
        self._started = started
        self._finish = finish
        self._redactor = redactor
        self._chunks: list[Chunk] = []
        self._iterator: AsyncIterator[bytes] | None = None
        self._done = False

    def __aiter__(self) -> AsyncIterator[bytes]:
        self._iterator = self._inner.__aiter__()
        return self

    async def __anext__(self) -> bytes:
        assert self._iterator is not None
        try:
            data = await self._iterator.__anext__()
        except StopAsyncIteration:
            self._end("complete")
            raise
        except Exception as exc:
            self._end("error", _failure(exc, self._started, self._redactor))
            raise
        self._chunks.append(Chunk(_since(self._started), data))
        return data

    async def aclose(self) -> None:
        # Written before awaiting anything: providers close the response before they push their terminal event,
        # so the exchange is in the file by the time anyone sees the stream's result.
        try:
            self._end("closed")
        finally:
            await self._inner.aclose()

    def _end(self, end: BodyEnd, error: Failure | None = None) -> None:
        if not self._done:
            self._done = True
            self._finish(self._chunks, end, error)


def _since(started: float) -> float:
    return time.monotonic() - started


def _failure(exc: Exception, started: float, redactor: Redactor) -> Failure:
    return Failure(type(exc).__name__, redactor.text(str(exc)), _since(started))


# --------------------------------------------------------------------------------------------------- replay


async def replay(exchange: Exchange, request: httpx.Request, timing: Timing) -> httpx.Response:
    """The recorded answer to ``request`` (a response streaming the recorded chunks, or the recorded failure)."""
    pace = _Pace(timing, request)
    recorded = exchange.response
    if recorded is None:
        assert exchange.error is not None
        await pace.fail(exchange.error)
    assert recorded is not None
    await pace.until(recorded.at)
    stream = _ReplayStream(recorded, pace)
    return httpx.Response(recorded.status, headers=recorded.headers, stream=stream, request=request)


class _Pace:
    """When replayed bytes are handed over, and how a replayed failure or silence ends."""

    def __init__(self, timing: Timing, request: httpx.Request) -> None:
        self.real = timing == "real"
        self.request = request
        self.started = time.monotonic()

    async def until(self, at: float) -> None:
        if self.real:
            await anyio.sleep(max(0.0, self.started + at - time.monotonic()))
        else:
            await asyncio.sleep(0)  # a point where an abort can land, as between live reads (asyncio, as the kernel)

    async def fail(self, failure: Failure) -> None:
        """Raise the recorded failure at its time, or wait like a silent server if the client gave up."""
        if failure.type == CANCELLED:
            await self.quiet()
        await self.until(failure.at)
        raise _exception(failure, self.request)

    async def quiet(self) -> None:
        """Send nothing until the client leaves or its read timeout expires (then raise it, as httpx does)."""
        timeout = self.request.extensions.get("timeout", {}).get("read")
        if timeout is None:
            await anyio.sleep_forever()
        await anyio.sleep(timeout)
        raise httpx.ReadTimeout(_QUIET, request=self.request)


class _ReplayStream(httpx.AsyncByteStream):
    def __init__(self, recorded: RecordedResponse, pace: _Pace) -> None:
        self._recorded = recorded
        self._pace = pace
        self._next = 0

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self

    async def __anext__(self) -> bytes:
        recorded = self._recorded
        if self._next < len(recorded.chunks):
            chunk = recorded.chunks[self._next]
            self._next += 1
            await self._pace.until(chunk.at)
            return chunk.data
        if recorded.end == "error" and recorded.error is not None:
            await self._pace.fail(recorded.error)
        if recorded.end == "closed":
            await self._pace.quiet()
        raise StopAsyncIteration

    async def aclose(self) -> None:
        self._next = len(self._recorded.chunks)


def _exception(failure: Failure, request: httpx.Request) -> Exception:
    """The recorded failure as the httpx exception it was (any other class as a generic transport error)."""
    cls = getattr(httpx, failure.type, None)
    if isinstance(cls, type) and issubclass(cls, httpx.TransportError):
        return cls(failure.message, request=request)
    return httpx.TransportError(f"{failure.type}: {failure.message}", request=request)
