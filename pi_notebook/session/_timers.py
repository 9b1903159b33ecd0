"""The run's timers: the wall-time budget (``budget.wall_time_ms``, from ``prompt()`` to ``agent_settled``) and
the turn timeout (``timeouts.turn_ms``, one model request and its tool batch).

Each is an asyncio timer; when it fires, the session is stopped with a ``budget_exceeded`` event. A tool that
blocks the event loop (the ``python`` tool's code) keeps the timer from firing: so each timer's deadline is also
on the tool's abort signal (``deadlines()``, read by the tool guard) and a watchdog thread interrupts the code
then; and a turn timer whose time has passed when its turn ends fires then (``disarm(fire_if_due=True)``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import NamedTuple

from ..ai import Deadline
from ._budget import RunBudget
from ._events import BudgetExceededEvent
from ._settings import Settings

__all__ = ["RunTimers"]


class _Timer(NamedTuple):
    handle: asyncio.TimerHandle
    deadline: Deadline
    fire: Callable[[], None]


class RunTimers:
    """The armed timers of the session's current operation; ``stop(event)`` is called when one fires."""

    def __init__(self, stop: Callable[[BudgetExceededEvent], None]) -> None:
        self._stop = stop
        self._timers: dict[str, _Timer] = {}

    def deadlines(self) -> list[Deadline]:
        """When each armed timer fires, and the reason it will give (for tools that block the loop)."""
        return [timer.deadline for timer in self._timers.values()]

    def arm_wall(self, settings: Settings, budget: RunBudget) -> None:
        limit = settings.budget.wall_time_ms
        if limit:
            self._arm("wall", limit, lambda: BudgetExceededEvent("wall_time", limit, round(budget.elapsed_ms)))

    def arm_turn(self, settings: Settings) -> None:
        limit = settings.timeouts.turn_ms
        if limit:
            started = time.monotonic()  # "used" is measured when the timer fires: later if a tool blocked the loop

            def used_ms() -> int:
                return max(limit, round((time.monotonic() - started) * 1000))

            self._arm("turn", limit, lambda: BudgetExceededEvent("turn_time", limit, used_ms()))

    def _arm(self, name: str, limit_ms: int, event: Callable[[], BudgetExceededEvent]) -> None:
        self.disarm(name)

        def fire() -> None:
            self._stop(event())

        handle = asyncio.get_running_loop().call_later(limit_ms / 1000, fire)
        reason = BudgetExceededEvent(event().kind, limit_ms, limit_ms).reason  # as it will read then
        self._timers[name] = _Timer(handle, Deadline(time.monotonic() + limit_ms / 1000, reason), fire)

    def disarm(self, name: str, *, fire_if_due: bool = False) -> None:
        """Cancel a timer; with ``fire_if_due``, one whose time has passed fires now instead (it could not
        fire while a tool blocked the event loop)."""
        timer = self._timers.pop(name, None)
        if timer is None:
            return
        timer.handle.cancel()
        if fire_if_due and time.monotonic() >= timer.deadline.at:
            timer.fire()

    def cancel(self) -> None:
        for name in list(self._timers):
            self.disarm(name)
