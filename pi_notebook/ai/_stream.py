"""``AssistantMessageEventStream``: the async iterable a stream function returns.

Contract (Pi's): a stream function never raises for request, model or runtime failures. It ends the stream
with one terminal event whose message has ``stop_reason`` ``error`` or ``aborted`` and an ``error_message``.

Two ways to feed a stream:

* push: ``stream.push(event)`` from a producer (``from_producer`` runs one as a task), ``stream.end()``
  when finished (Pi's ``EventStream``);
* pull: ``AssistantMessageEventStream(source)`` wraps an async iterator that is driven by whoever iterates
  the stream, so there is no task switch per event (the faux provider uses this).

Either way a source that stops without a terminal event, or raises, still ends the stream with an ``error``
message, so consumers always get a result. ``result()`` returns the terminal message; it may be awaited
while another task iterates (it then waits for that iteration to reach the end, consuming nothing).
This module is asyncio-based, like the Jupyter kernel it runs in.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from ._stream_events import AssistantMessageEvent, DoneEvent, ErrorEvent
from .messages import AssistantMessage

__all__ = ["AssistantMessageEventStream"]

_TERMINAL = (DoneEvent, ErrorEvent)  # a tuple: a ``X | Y`` union would be rebuilt on every event


class AssistantMessageEventStream:
    __slots__ = ("_done", "_ended", "_iterating", "_last", "_producer", "_queue", "_result", "_source", "_waiter")

    def __init__(self, source: AsyncIterator[AssistantMessageEvent] | None = None) -> None:
        self._source = source
        self._queue: deque[AssistantMessageEvent] = deque()
        self._waiter: asyncio.Future[None] | None = None  # wakes the iterator (push mode)
        self._done: asyncio.Future[None] | None = None  # wakes result() waiters
        self._ended = False
        self._iterating = False
        self._result: AssistantMessage | None = None
        self._last: AssistantMessage | None = None
        self._producer: asyncio.Task[None] | None = None

    @classmethod
    def from_producer(
        cls, produce: Callable[[AssistantMessageEventStream], Coroutine[Any, Any, None]]
    ) -> AssistantMessageEventStream:
        """Run ``produce(stream)`` as a task that pushes events (push mode); the stream keeps the task.

        If ``produce`` returns or raises without a terminal event, the stream still ends with an ``error``
        message (with the exception's text), so the contract holds even for a buggy producer.
        """
        stream = cls()

        async def run() -> None:
            try:
                await produce(stream)
            except Exception as exc:
                stream.push(ErrorEvent("error", _failed(stream._last, f"{type(exc).__name__}: {exc}")))
            finally:
                stream.end()

        stream._producer = asyncio.get_running_loop().create_task(run())
        return stream

    # -- producer side (push mode) -------------------------------------------------------------------
    def push(self, event: AssistantMessageEvent) -> None:
        """Queue an event. Ignored once the stream has ended (after a terminal event or ``end()``)."""
        if self._ended:
            return
        self._queue.append(event)
        if isinstance(event, _TERMINAL):
            self._finish(event)
        else:
            self._last = event.partial
        self._wake()

    def end(self, result: AssistantMessage | None = None) -> None:
        """Mark the stream finished; ``result`` (if given and none yet) becomes ``result()``."""
        if self._ended:
            return
        self._ended = True
        if result is not None and self._result is None:
            self._result = result
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)
        if self._ended and self._done is not None and not self._done.done():
            self._done.set_result(None)

    def _finish(self, event: DoneEvent | ErrorEvent) -> None:
        self._ended = True
        self._result = event.message if isinstance(event, DoneEvent) else event.error

    # -- consumer side -------------------------------------------------------------------------------
    def __aiter__(self) -> AssistantMessageEventStream:
        return self

    async def __anext__(self) -> AssistantMessageEvent:
        self._iterating = True
        source = self._source
        if source is None:
            while not self._queue:
                if self._ended:
                    raise StopAsyncIteration
                self._waiter = asyncio.get_running_loop().create_future()
                await self._waiter
            return self._queue.popleft()
        if self._ended:
            raise StopAsyncIteration
        try:
            event = await source.__anext__()
        except StopAsyncIteration:
            self._ended = True
            self._wake()
            raise
        except Exception as exc:  # a source breaking the contract still ends as data
            event = ErrorEvent("error", _failed(self._last, f"{type(exc).__name__}: {exc}"))
        if isinstance(event, _TERMINAL):
            self._finish(event)
            await _aclose(source)
            self._wake()
        else:
            self._last = event.partial
        return event

    async def result(self) -> AssistantMessage:
        """The final message: that of the terminal event.

        A pull-mode stream nobody iterates is drained here. Otherwise this waits for the end without
        consuming events, so an iterating task still sees every one.
        """
        if self._source is not None and not self._iterating:
            while not self._ended:
                try:
                    await self.__anext__()
                except StopAsyncIteration:
                    break
        while not self._ended:
            if self._done is None:
                self._done = asyncio.get_running_loop().create_future()
            await asyncio.shield(self._done)
        if self._result is None:
            self._result = _failed(self._last, "Stream ended without a terminal event")
        return self._result

    async def aclose(self) -> None:
        """Stop producing: close a pull source or cancel a producer task. The stream ends without a terminal
        event, so ``result()`` reports an ``error`` "Stream ended without a terminal event" (unless one came)."""
        if self._source is not None and not self._ended:
            await _aclose(self._source)
        if self._producer is not None and not self._producer.done():
            self._producer.cancel()
        self.end()

    @property
    def ended(self) -> bool:
        return self._ended


def _failed(partial: AssistantMessage | None, text: str) -> AssistantMessage:
    message = partial if partial is not None else AssistantMessage()
    message.stop_reason = "error"
    message.error_message = text
    return message


async def _aclose(source: AsyncIterator[AssistantMessageEvent]) -> None:
    aclose = getattr(source, "aclose", None)
    if aclose is not None:
        await aclose()
