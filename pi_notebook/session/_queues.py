"""The texts waiting in the session's steering and follow-up queues, as the user typed them.

The agent holds the queued messages themselves; the session keeps their texts so that it can report them
(``queue_update``), hand them back (``clear_queue()``, which the Stop button uses to put them back in the input
box) and forget each once the agent delivered it (its user message started).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from ..agent import Agent, AgentMessage
from ..ai import UserMessage
from ..ai.messages import text_of
from ._events import QueueUpdateEvent, SessionEvent

__all__ = ["QueueSnapshot", "QueueTexts"]


class QueueSnapshot(NamedTuple):
    steering: list[str]
    follow_up: list[str]


class QueueTexts:
    """The queued texts of one session; every change is a ``queue_update`` passed to ``emit``."""

    def __init__(self, agent: Agent, emit: Callable[[SessionEvent], None]) -> None:
        self._agent = agent
        self._emit = emit
        self._steering: list[str] = []
        self._follow_up: list[str] = []

    def snapshot(self) -> QueueSnapshot:
        return QueueSnapshot(list(self._steering), list(self._follow_up))

    def steer(self, text: str) -> None:
        self._steering.append(text)
        self._changed()
        self._agent.steer(text)

    def follow_up(self, text: str) -> None:
        self._follow_up.append(text)
        self._changed()
        self._agent.follow_up(text)

    def clear(self) -> QueueSnapshot:
        """Take every queued message back (their texts); nothing queued is delivered afterwards."""
        snapshot = QueueSnapshot(self._steering, self._follow_up)
        self._steering, self._follow_up = [], []
        self._agent.clear_all_queues()
        self._changed()
        return snapshot

    def delivered(self, message: AgentMessage) -> None:
        """A user message started: if it was queued, it is no longer waiting."""
        text = text_of(message) if isinstance(message, UserMessage) else ""
        if not text:
            return
        for queue in (self._steering, self._follow_up):
            if text in queue:
                queue.remove(text)
                self._changed()
                return

    def _changed(self) -> None:
        self._emit(QueueUpdateEvent(list(self._steering), list(self._follow_up)))
