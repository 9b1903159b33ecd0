"""A run's state as the JupyterLab status bar and the widget show it: its status machine, its silence watch and
the listeners told of each change.

The status follows the run's session events: ``starting``, then ``streaming`` (an assistant message started),
``running tool``, ``retrying`` (with the epoch time of the next attempt), ``compacting``, ``awaiting approval``
(set by the approver), and at the end ``settled``, ``aborted`` or ``error``. While the run waits on the model
(``starting``, ``streaming``) a timer reports how long nothing has come (``silent_s``). While the agent's
``python`` code ignores a Stop, ``note`` says so; that change comes from the thread that noticed (the code blocks
the event loop), so it reaches the listeners from that thread and not the widget, which shows the note in the
tool's panel. Code that does not stop even after the escalation (it swallows every interrupt) makes the run
``aborted`` the same way (:meth:`StatusMachine.given_up`). Everything else runs on the kernel's event loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeAlias, TypedDict

from ..ai import AssistantMessage
from ..kernel import PythonEvent
from ..kernel.python_tool import UNSTOPPABLE_TEXT
from ..session import (
    AgentStartEvent,
    AutoRetryEndEvent,
    AutoRetryStartEvent,
    BranchSummaryStartEvent,
    CompactionStartEvent,
    MessageStartEvent,
    SessionEvent,
    ToolExecutionStartEvent,
)
from .widget._protocol import RunStatus

__all__ = ["SILENCE_CHECK_S", "SILENCE_NOTICE_S", "RunState", "RunStatus", "StateListener", "StatusMachine"]


class RunState(TypedDict):
    """What the JupyterLab status bar shows of a run (``run`` is its number; ``None`` before any run)."""

    state: RunStatus
    run: int | None
    aborted: bool
    retry_deadline: float
    """Epoch milliseconds of the next automatic retry; 0 when none is pending."""
    silent_s: int
    """While ``starting`` or ``streaming``: whole seconds without any event from the model, once there have been
    :data:`SILENCE_NOTICE_S` of them (0 otherwise). The widget shows it as "no data for N s"."""
    note: str
    """While the ``python`` tool's code does not return after a Stop (a C call that ignores the interrupt): "waiting
    for the code to return to Python"; ``""`` otherwise. The event loop is blocked meanwhile, so this change reaches
    the state listeners from the thread that noticed it (the widget shows the note through its panel)."""


SILENCE_NOTICE_S = 5.0
"""Seconds without an event, while waiting on the model, before the run reports ``silent_s``."""
SILENCE_CHECK_S = 1.0
"""How often an active run looks at how long it has been silent."""
_WAITING_ON_MODEL = ("starting", "streaming")

StateListener: TypeAlias = Callable[[RunState], object]
Draw: TypeAlias = Callable[[RunStatus, float, int], None]
"""``draw(status, retry_deadline, silent_s)``: the widget's status line (called on the loop only)."""


class StatusMachine:
    """One run's :class:`RunState` and who hears of its changes (see the module docstring). ``draw`` is the
    widget's status line, ``None`` without a widget."""

    def __init__(self, number: int, loop: asyncio.AbstractEventLoop, draw: Draw | None = None) -> None:
        self._number = number
        self._loop = loop
        self._draw = draw
        self.status: RunStatus = "starting"
        self.aborted = False
        self.retry_deadline = 0.0
        self._silent_s = 0
        self._note = ""
        self._last_event = time.monotonic()
        self._listeners: list[StateListener] = []
        self._settled = False
        self._silence_check = loop.call_later(SILENCE_CHECK_S, self._check_silence)

    def state(self) -> RunState:
        return {
            "state": self.status,
            "run": self._number,
            "aborted": self.aborted,
            "retry_deadline": self.retry_deadline,
            "silent_s": self._silent_s,
            "note": self._note,
        }

    def on_state(self, listener: StateListener) -> None:
        """Call ``listener(state)`` now and whenever the state changes."""
        self._listeners.append(listener)
        listener(self.state())

    def set(self, status: RunStatus, *, retry_deadline: float | None = None) -> None:
        """Change the status (and the retry deadline, when given); tells the widget and the listeners."""
        if retry_deadline is not None:
            self.retry_deadline = retry_deadline
        if status == self.status and retry_deadline is None:
            return
        self.status = status
        self._publish()

    def heard(self) -> None:
        """A session event arrived (any, the per-delta ones included): the model is not silent."""
        self._last_event = time.monotonic()
        if self._silent_s:
            self._silent_s = 0
            self._publish()

    def track(self, event: SessionEvent) -> None:
        """The status a session event (other than a streaming step) moves the run to."""
        match event:
            case MessageStartEvent(message=AssistantMessage()):
                self.set("streaming")
            case ToolExecutionStartEvent():
                self.set("running tool")
            case AutoRetryStartEvent(delay_ms=delay_ms):
                self.set("retrying", retry_deadline=time.time() * 1000 + delay_ms)
            case AgentStartEvent() if self.retry_deadline:
                self.set("streaming", retry_deadline=0.0)
            case AutoRetryEndEvent() if self.retry_deadline:
                self.set(self.status, retry_deadline=0.0)
            case CompactionStartEvent() | BranchSummaryStartEvent():  # Pi's isCompacting covers both
                self.set("compacting")
            case _:
                pass

    def note(self, text: str) -> None:
        """Any thread: set or clear (``""``) the note; only the listeners hear of it (the loop may be blocked)."""
        if text != self._note:
            self._note = text
            self._tell_listeners()

    def code_event(self, event: PythonEvent) -> None:
        """Any thread: an event of the run's ``python`` tool code: stuck after a Stop (noted), given up on, or
        ended (the note cleared)."""
        if event.kind == "stuck" and event.text == UNSTOPPABLE_TEXT:
            self.given_up(event.text)  # no settling while the code holds the loop: say the run is over
        elif event.kind == "stuck":
            self.note(event.text)
        elif event.kind == "end":
            self.note("")

    def given_up(self, note: str) -> None:
        """Any thread: the agent's code does not stop after the Stop and its escalation (it swallows every
        interrupt), and holds the event loop that would settle the run. Say the run is over (``aborted``, with
        ``note``) to the listeners (the status bar, the activity signal, which stops so idle cullers can reclaim
        the kernel); the run settles for real if the code ever returns."""
        self.aborted = True
        self._silent_s = 0
        self._note = note
        self.status = "aborted"
        self._tell_listeners()

    def settle(self, status: RunStatus, *, aborted: bool) -> None:
        """The run ended: its final status; no more silence checks."""
        self._silence_check.cancel()
        self.aborted = aborted
        self._silent_s = 0
        self._note = ""
        self.set(status, retry_deadline=0.0)

    def _check_silence(self) -> None:
        """Every :data:`SILENCE_CHECK_S` while active: report how long the model has sent nothing."""
        silent = time.monotonic() - self._last_event
        waiting = self.status in _WAITING_ON_MODEL and silent >= SILENCE_NOTICE_S
        seconds = max(1, int(silent)) if waiting else 0
        if seconds != self._silent_s:
            self._silent_s = seconds
            self._publish()
        self._silence_check = self._loop.call_later(SILENCE_CHECK_S, self._check_silence)

    def _publish(self) -> None:
        if self._draw is not None:
            self._draw(self.status, self.retry_deadline, self._silent_s)
        self._tell_listeners()

    def _tell_listeners(self) -> None:
        state = self.state()
        for listener in self._listeners:
            listener(state)
