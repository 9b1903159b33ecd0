"""The session's listeners: who hears its events, in order, synchronously, as in Pi.

An exception in a listener is logged and goes no further: it cannot reach the run, nor keep the listeners after
it from hearing the event.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ._events import SessionEvent, SessionListener

__all__ = ["Listeners"]

_log = logging.getLogger(__name__)


class Listeners:
    """The listeners of one session; :meth:`emit` is what every part of the session reports its events to."""

    __slots__ = ("_listeners",)

    def __init__(self) -> None:
        self._listeners: tuple[SessionListener, ...] = ()

    def subscribe(self, listener: SessionListener) -> Callable[[], None]:
        """Call ``listener(event)`` for every event from now on; returns an unsubscribe function."""
        self._listeners = (*self._listeners, listener)

        def unsubscribe() -> None:
            self._listeners = tuple(item for item in self._listeners if item is not listener)

        return unsubscribe

    def emit(self, event: SessionEvent) -> None:
        for listener in self._listeners:
            try:
                listener(event)
            except Exception:
                _log.exception("session listener %r raised on %s", listener, event.type)

    def clear(self) -> None:
        self._listeners = ()
