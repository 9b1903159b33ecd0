"""``Run``: one session operation started from a notebook: its events, transcript, event log and state.

A run starts as a task on the kernel's event loop; the cell that started it returns at once. ``await run``
waits for ``agent_settled`` and gives a :class:`RunReport` (the static markdown rendering executed notebooks
keep, and the run's receipt: ``_receipt``); cancelling that await — a kernel interrupt does — aborts the run.
``run.abort()`` is the Stop button: queued messages go back to the input box, then the session aborts.

The run records and reports. Drawing is the :class:`~._presenter.RunPresenter`'s (``run.view`` is its widget);
whoever wants the run's state changes (the JupyterLab status bar) subscribes with :meth:`Run.on_state`.

Memory: a settled run keeps a compact record — the messages it added (shared with the session's transcript), its
event log, and its session events without the streaming steps (``message_update``, ``tool_execution_update``) —
plus, while its view is open, the view's merged operation log. :meth:`Run.close_view` closes the widgets (the
kernel's registry keeps only the most recent runs' views open): every output showing the run is then replaced by
its static rendering (transcript and event log as markdown), which is also what displaying the run shows from
then on.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeAlias, TypedDict

from ..agent import (
    AgentMessage,
    AgentStartEvent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
)
from ..ai import AbortSignal, AssistantMessage
from ..kernel import CellChanges
from ..session import (
    AgentSession,
    AgentSettledEvent,
    Approval,
    ApprovalRequest,
    AutoRetryEndEvent,
    AutoRetryStartEvent,
    CompactionCancelled,
    CompactionEndEvent,
    CompactionStartEvent,
    SessionEvent,
)
from ..tools import PythonEvent, add_python_listener
from ._describe import describe_event, render_markdown, usage_line
from ._display import RunDisplay
from ._live import current_run
from ._presenter import RunPresenter
from ._protocol import RunStatus
from ._receipt import Receipt, build_receipt
from ._view import RunView

__all__ = ["SILENCE_NOTICE_S", "Run", "RunReport", "RunState", "RunStatus", "StateListener"]


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


class RunReport:
    """A finished run as markdown (transcript + event log); what ``await run`` shows in a notebook. ``receipt``:
    what the run changed and what a stop cut short (``None`` while it runs)."""

    def __init__(self, markdown: str, *, aborted: bool, error: str | None, receipt: Receipt | None = None) -> None:
        self.markdown = markdown
        self.aborted = aborted
        self.error = error
        self.receipt = receipt
        self.shown = False
        """A notebook displayed it (its markdown was asked for)."""

    def _repr_markdown_(self) -> str:
        self.shown = True
        return self.markdown

    def __repr__(self) -> str:
        return self.markdown


class Run:
    """Handle of one run. See the module docstring. ``with_view=False`` draws nothing (plain IPython)."""

    def __init__(
        self,
        session: AgentSession,
        number: int,
        start: Callable[[], Awaitable[None]],
        *,
        label: str,
        with_view: bool = True,
        cells: CellChanges | None = None,
    ) -> None:
        self.session = session
        self.number = number
        self.label = label
        self.events: list[SessionEvent] = []
        self.log: list[tuple[float, str, str]] = []
        self.messages: list[AgentMessage] = []
        self.error: str | None = None
        self.aborted = False
        self.receipt: Receipt | None = None
        """What the run changed and what a stop cut short, once it has settled (``_receipt``)."""
        self._cells = cells
        self._started = time.monotonic()
        self._key = uuid.uuid4().hex
        self._loop = asyncio.get_running_loop()
        self._settled = self._loop.create_future()
        self._stop_requested = False
        self._status: RunStatus = "starting"
        self._retry_deadline = 0.0
        self._changed: asyncio.Future[None] | None = None
        self._state_listeners: list[StateListener] = []
        self._presenter = (
            RunPresenter(
                title=f"Run {number}: {_short(label)}",
                session=session,
                on_stop=self.abort,
                loop=self._loop,
                number=number,
                key=self._key,
            )
            if with_view
            else None
        )
        self._close_view_when_settled = False
        self._refresh_pending = False
        self._last_event = time.monotonic()
        self._silent_s = 0
        self._silence_check = self._loop.call_later(SILENCE_CHECK_S, self._check_silence)
        self._display = RunDisplay(
            f"pi-run-{self._key}",
            plain=f"Run {number}: {_short(label)}",
            widget=self._widget_bundle,
            markdown=lambda: self.report().markdown,
        )
        self._note_text = ""
        self._tool_calls: set[str] = set()  # this run's tool calls that started and have not ended
        self._unsubscribe = session.subscribe(self._on_event)
        self._unlisten = add_python_listener(self._on_python)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._task = self._loop.create_task(self._main(start))

    # -- public -----------------------------------------------------------------------------------------
    @property
    def view(self) -> RunView | None:
        """The run's widget (``None`` without a view)."""
        return self._presenter.view if self._presenter is not None else None

    @property
    def started_at(self) -> float:
        """When the run was created (``time.monotonic()``)."""
        return self._started

    @property
    def done(self) -> bool:
        """True once the run has settled (``agent_settled`` was emitted) or failed to start."""
        return self._settled.done()

    @property
    def transcript(self) -> list[AgentMessage]:
        """The messages this run added (every one that reached ``message_end``), in order."""
        return list(self.messages)

    @property
    def labels(self) -> list[str]:
        return [label for _, label, _ in self.log]

    def state(self) -> RunState:
        """``{"state", "run", "aborted", "retry_deadline"}`` as the JupyterLab status bar shows it."""
        return {
            "state": self._status,
            "run": self.number,
            "aborted": self.aborted,
            "retry_deadline": self._retry_deadline,
            "silent_s": self._silent_s,
            "note": self._note_text,
        }

    def on_state(self, listener: StateListener) -> None:
        """Call ``listener(run.state())`` now and whenever the state changes."""
        self._state_listeners.append(listener)
        listener(self.state())

    def usage_line(self) -> str:
        """Turns, tokens and cost so far, against the budget's limits."""
        return usage_line(self.session)

    async def wait_for(self, event_type: str, count: int = 1) -> SessionEvent:
        """Wait until this run has emitted ``count`` events of ``event_type`` (e.g. ``"message_update"``);
        returns the last of them. Raises ``RuntimeError`` if the run settles first."""
        while True:
            seen = [event for event in self.events if event.type == event_type]
            if len(seen) >= count:
                return seen[count - 1]
            if self.done:
                raise RuntimeError(f"run {self.number} settled after {len(seen)} {event_type} event(s)")
            self._changed = self._loop.create_future() if self._changed is None else self._changed
            await asyncio.shield(self._changed)

    def abort(self) -> None:
        """Stop: hand queued messages back to the input box, then abort the session (Pi's Escape)."""
        if self.done:
            return
        self._stop_requested = True
        snapshot = self.session.clear_queue()
        if self._presenter is not None:
            self._presenter.hand_back([*snapshot.steering, *snapshot.follow_up])
        self._spawn(self.session.abort())

    async def ask_approval(self, request: ApprovalRequest, preview: str, signal: AbortSignal) -> Approval:
        """Show ``request`` in the widget and wait for Run / Skip / Always, or for ``signal`` to abort (then
        ``skip``; the loop ends the call as aborted). The state is ``awaiting approval`` meanwhile; the event
        log records the question and the answer. Without a widget the answer is ``unavailable``."""
        name = request.tool_name
        if self._presenter is None:
            return Approval("unavailable", f"{name} needs approval and this run has no widget to ask")
        answer: asyncio.Future[Any] = self._loop.create_future()

        def on_answer(choice: str) -> None:
            if not answer.done():
                answer.set_result(choice)

        previous = self._status
        self._note("approval", f"{name}: waiting for Run / Skip / Always")
        self._presenter.ask(name, preview, on_answer)
        self._set_state("awaiting approval")
        aborted: asyncio.Future[Any] = asyncio.ensure_future(signal.wait())
        try:
            await asyncio.wait([answer, aborted], return_when=asyncio.FIRST_COMPLETED)
        finally:
            aborted.cancel()
            self._presenter.close_ask()
            if self._status == "awaiting approval":
                self._set_state(previous)
        choice = answer.result() if answer.done() else "skip"
        self._note("approval", f"{name}: " + (choice if answer.done() else "stopped while waiting"))
        return Approval("always" if choice == "always" else "run" if choice == "run" else "skip")

    def report(self) -> RunReport:
        status: str = self._status if self.done else "running"  # settled, aborted or error
        if self.error:
            status += f" — {self.error}"
        markdown = render_markdown(self.messages, self.log, title=f"Run {self.number}", status=status)
        return RunReport(markdown, aborted=self.aborted, error=self.error, receipt=self.receipt)

    def __await__(self) -> Generator[Any, None, RunReport]:
        return self._wait().__await__()

    async def _wait(self) -> RunReport:
        try:
            await asyncio.shield(self._settled)
        except asyncio.CancelledError:
            # The awaiting cell was interrupted: stop the run, then let the interruption through.
            self.abort()
            raise
        report = self.report()
        if not self._display.shown_here():
            self._display.refresh()  # from the awaiting cell, the one an executing client listens to
        elif not self._refresh_pending:  # shown and awaited in this cell: the report may show right below
            self._refresh_pending = True
            self._display.refresh_at_cell_end(lambda: self._pointer(report))
        return report

    def _pointer(self, report: RunReport) -> str | None:
        """At the end of the cell that showed and awaited the run: a line pointing to the report, if the cell
        showed it (its static copy is then not a second transcript), else ``None`` (the transcript)."""
        self._refresh_pending = False
        if not report.shown:
            return None
        return f"**Run {self.number}** — {self._status}: its transcript and event log are in the report below."

    def close_view(self) -> None:
        """Keep only the run's compact record: close its widgets, show its static rendering wherever the run is
        displayed, and forget its streaming steps (``message_update``, ``tool_execution_update``: the final
        messages hold what they carried). At once for a settled run; an active run does it when it settles.
        Afterwards ``view`` is ``None`` and :meth:`wait_for` no longer finds streaming steps. Never raises."""
        if not self.done:
            self._close_view_when_settled = True
            return
        self.events = [event for event in self.events if not isinstance(event, _STREAMING_STEPS)]
        presenter, self._presenter = self._presenter, None
        if presenter is None:
            return
        presenter.close()
        self._display.refresh()  # every output of this run: its static copy alone (the widget is gone)

    def show(self) -> None:
        """Display the run here: its live widget, with its transcript and event log as markdown beside it for
        readers without widgets (updated when the run settles). The ``%pi`` magics do this once per run; see
        ``_display`` for why a second display in the same cell shows nothing."""
        self._display.show()

    def _ipython_display_(self) -> None:
        self._display.show_again()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        """What a display of the run holds: the live widget, its static copy (markdown) and a text line."""
        return self._display.bundle()

    def _widget_bundle(self) -> dict[str, Any] | None:
        view = self.view
        if view is None or getattr(view, "comm", None) is None:  # no view, or its widget was closed
            return None
        bundle = view._repr_mimebundle_()
        data = bundle if isinstance(bundle, dict) else bundle[0]
        widget: dict[str, Any] | None = data.get("application/vnd.jupyter.widget-view+json")
        return widget

    def __repr__(self) -> str:
        state = self._status if self.done else "running"
        return f"<Run {self.number} ({state}): {_short(self.label)} — await it for the transcript and event log>"

    # -- internals --------------------------------------------------------------------------------------
    def _spawn(self, coroutine: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _main(self, start: Callable[[], Awaitable[None]]) -> None:
        current_run.set(self._key)  # this task's context (and its child tasks'): the python tool's live output
        try:
            await start()
        except CompactionCancelled:
            self.aborted = True  # %pi compact stopped: reported by compaction_end(aborted)
        except Exception as exc:  # e.g. "Cannot continue from message role: assistant"
            self.error = str(exc) or type(exc).__name__
            self._note("error", self.error)
        finally:
            if not self._settled.done():  # no agent_settled reached the run (e.g. its session was disposed)
                self._finish(aborted=self.aborted or self._stop_requested)

    def _check_silence(self) -> None:
        """Every :data:`SILENCE_CHECK_S` while active: report how long the model has sent nothing."""
        if self.done:
            return
        silent = time.monotonic() - self._last_event
        seconds = max(1, int(silent)) if self._status in _WAITING_ON_MODEL and silent >= SILENCE_NOTICE_S else 0
        if seconds != self._silent_s:
            self._silent_s = seconds
            self._publish_state()
        self._silence_check = self._loop.call_later(SILENCE_CHECK_S, self._check_silence)

    def _finish(self, *, aborted: bool) -> None:
        self.aborted = aborted
        self._silence_check.cancel()
        self._silent_s = 0
        self._note_text = ""
        self._unsubscribe()
        self._unlisten()
        failed = self.error is not None or _ended_on_error(self.messages)
        self.receipt = build_receipt(self.events, self.messages, self._cells, aborted=aborted)
        for line in self.receipt.lines():
            self._note("receipt", line)
        self._set_state("aborted" if aborted else ("error" if failed else "settled"), retry_deadline=0.0)
        if self._presenter is not None:
            self._presenter.settle(aborted)
        # No display update here: JupyterLab re-renders an updated output, so a live view would redraw the whole
        # reply (2.1 s on the main thread at 600k characters, bench_widget_browser). ``await run`` updates the
        # static copy from the awaiting cell, which is what an executing client (nbclient, nbconvert) saves.
        if not self._settled.done():
            self._settled.set_result(None)
        self._wake()
        if self._close_view_when_settled:
            self.close_view()

    def _note(self, label: str, detail: str) -> None:
        seconds = time.monotonic() - self._started
        self.log.append((seconds, label, detail))
        if self._presenter is not None:
            self._presenter.log(seconds, label, detail)

    def _wake(self) -> None:
        changed, self._changed = self._changed, None
        if changed is not None and not changed.done():
            changed.set_result(None)

    def _on_event(self, event: SessionEvent) -> None:
        self.events.append(event)
        self._last_event = time.monotonic()
        if self._silent_s:
            self._silent_s = 0
            self._publish_state()
        self._wake()
        if type(event) is MessageUpdateEvent:  # the per-delta hot path: no log line, no state change
            if self._presenter is not None:
                self._presenter.show_update(event)
            return
        line = describe_event(event)
        if line is not None:
            self._note(*line)
        match event:
            case ToolExecutionStartEvent(tool_call_id=call):
                self._tool_calls.add(call)
            case ToolExecutionEndEvent(tool_call_id=call):
                self._tool_calls.discard(call)
            case MessageEndEvent(message=message):
                self.messages.append(message)
            case CompactionEndEvent(result=summary) if summary is not None:
                self.messages.append(summary)
            case _:
                pass
        self._track_state(event)
        if self._presenter is not None:
            self._presenter.show(event)
        if isinstance(event, AgentSettledEvent):
            self._finish(aborted=event.aborted)

    def _track_state(self, event: SessionEvent) -> None:
        match event:
            case MessageStartEvent(message=AssistantMessage()):
                self._set_state("streaming")
            case ToolExecutionStartEvent():
                self._set_state("running tool")
            case AutoRetryStartEvent(delay_ms=delay_ms):
                self._set_state("retrying", retry_deadline=time.time() * 1000 + delay_ms)
            case AgentStartEvent() if self._retry_deadline:
                self._set_state("streaming", retry_deadline=0.0)
            case AutoRetryEndEvent() if self._retry_deadline:
                self._set_state(self._status, retry_deadline=0.0)
            case CompactionStartEvent():
                self._set_state("compacting")
            case _:
                pass

    def _set_state(self, status: RunStatus, *, retry_deadline: float | None = None) -> None:
        if retry_deadline is not None:
            self._retry_deadline = retry_deadline
        if status == self._status and retry_deadline is None:
            return
        self._status = status
        self._publish_state()

    def _on_python(self, event: PythonEvent) -> None:
        """The ``python`` tool's events (any thread): its code stuck after a Stop, and back."""
        if event.call_id not in self._tool_calls:
            return
        if event.kind == "stuck":
            self._note_text = event.text
        elif event.kind == "end" and self._note_text:
            self._note_text = ""
        else:
            return
        self._tell_listeners()  # the loop is blocked by the code: the listeners hear of it from this thread

    def _publish_state(self) -> None:
        if self._presenter is not None:
            self._presenter.state(self._status, self._retry_deadline, self._silent_s)
        self._tell_listeners()

    def _tell_listeners(self) -> None:
        state = self.state()
        for listener in self._state_listeners:
            listener(state)


_STREAMING_STEPS = (MessageUpdateEvent, ToolExecutionUpdateEvent)
"""Events a settled run no longer keeps: one per delta, and what they carried is in the final messages."""


def _ended_on_error(messages: list[AgentMessage]) -> bool:
    """The run's last reply failed for good (``stop_reason="error"`` after any retries): its state is ``error``."""
    last = next((m for m in reversed(messages) if isinstance(m, AssistantMessage)), None)
    return last is not None and last.stop_reason == "error"


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
