"""The agent's two message queues, steering and follow-up (Pi's agent-core queues, PI-SPEC §3.1).

Each is FIFO and drained only at the loop's poll points: ``"all"`` mode hands over everything queued,
``"one-at-a-time"`` only the oldest message.
"""

from __future__ import annotations

from collections import deque
from typing import Literal, TypeAlias

from ._types import AgentMessage

__all__ = ["MessageQueue", "QueueMode", "check_mode"]

QueueMode: TypeAlias = Literal["all", "one-at-a-time"]


class MessageQueue:
    """Queued messages and how many one poll takes (``mode``)."""

    __slots__ = ("items", "mode")

    def __init__(self, mode: QueueMode) -> None:
        check_mode(mode)
        self.mode: QueueMode = mode
        self.items: deque[AgentMessage] = deque()

    def drain(self) -> list[AgentMessage]:
        if not self.items:
            return []
        if self.mode == "all":
            drained = list(self.items)
            self.items.clear()
            return drained
        return [self.items.popleft()]


def check_mode(mode: str) -> None:
    if mode not in ("all", "one-at-a-time"):
        raise ValueError(f"queue mode must be 'all' or 'one-at-a-time', got {mode!r}")
