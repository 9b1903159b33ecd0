"""Record events and label them the way ``pi-traces`` does, so runs can be compared with Pi event for event."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

__all__ = ["EventRecorder", "trace_label"]


def trace_label(event: Any, style: str = "agent") -> str:
    """Label ``event`` in Pi's trace notation (``message_end:assistant:stop``, ``tool_execution_end:echo:ok``).

    A message's stop reason is read at the time of the event (``pending`` while streaming). ``style="agent"``
    labels messages on ``message_*`` events only (``traces.mjs``); ``style="session"`` labels every event
    carrying a message, ``turn_end`` included (``session-traces.mjs``).
    """
    kind: str = event.type
    label = kind
    message = getattr(event, "message", None)
    if message is not None and (style == "session" or kind in ("message_start", "message_end")):
        label += f":{message.role}"
        stop_reason = getattr(message, "stop_reason", None)
        if stop_reason:
            label += f":{stop_reason}"
    if kind == "tool_execution_end":
        label += f":{event.tool_name}:{'error' if event.is_error else 'ok'}"
    elif kind == "agent_end" and hasattr(event, "will_retry"):
        label += f":willRetry={str(event.will_retry).lower()}"
    elif kind == "agent_settled":
        label += f":aborted={str(event.aborted).lower()}"
    elif kind == "auto_retry_start":
        label += f":attempt={event.attempt}/{event.max_attempts}"
    elif kind == "auto_retry_end":
        label += f":success={str(event.success).lower()}"
    elif kind == "compaction_start":
        label += f":reason={event.reason}"
    elif kind == "compaction_end":
        label += (
            f":reason={event.reason}:aborted={str(event.aborted).lower()}:willRetry={str(event.will_retry).lower()}"
        )
    elif kind == "queue_update":
        label += f":steer={len(event.steering)}:follow={len(event.follow_up)}"
    return label


class EventRecorder:
    """A listener that keeps every event and lets a test wait for one (never sleep to "wait long enough").

    ``recorder.labels`` leaves out ``message_update`` (its count depends on chunking), as Pi's traces do.
    """

    def __init__(self, style: str = "agent") -> None:
        self.style = style
        self.events: list[Any] = []
        self.labels: list[str] = []
        self._waiters: list[_Waiter] = []

    def __call__(self, event: Any, signal: Any = None) -> None:
        self.events.append(event)
        if event.type != "message_update":
            self.labels.append(trace_label(event, self.style))
        if self._waiters:
            self._waiters = [waiter for waiter in self._waiters if not waiter.offer(event)]

    def types(self) -> list[str]:
        return [event.type for event in self.events]

    async def wait_for(self, predicate: Callable[[Any], bool] | str, *, count: int = 1) -> Any:
        """Return the ``count``-th event (counting those already seen) matching ``predicate`` or type name."""
        test = (lambda e: e.type == predicate) if isinstance(predicate, str) else predicate
        seen = [event for event in self.events if test(event)]
        if len(seen) >= count:
            return seen[count - 1]
        waiter = _Waiter(test, count - len(seen), asyncio.get_running_loop().create_future())
        self._waiters.append(waiter)
        return await waiter.future


class _Waiter:
    __slots__ = ("future", "remaining", "test")

    def __init__(self, test: Callable[[Any], bool], remaining: int, future: asyncio.Future[Any]) -> None:
        self.test = test
        self.remaining = remaining
        self.future = future

    def offer(self, event: Any) -> bool:
        """Count a matching event; True once this waiter is finished."""
        if self.future.done():
            return True
        if self.test(event):
            self.remaining -= 1
            if self.remaining == 0:
                self.future.set_result(event)
                return True
        return False
