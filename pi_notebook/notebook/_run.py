"""``Run``: one session operation started from a notebook: its events, transcript, event log and state.

A run starts as a task on the kernel's event loop; the cell that started it returns at once. ``await run``
waits for ``agent_settled`` and gives a :class:`RunReport` (the static markdown rendering executed notebooks
keep, and the run's receipt: ``_receipt``); cancelling that await — a kernel interrupt does — aborts the run.
``run.abort()`` is the Stop button: queued messages go back to the input box, then the session aborts.

The run records and reports. Drawing is the :class:`~.widget.RunPresenter`'s (``run.view`` is its widget); its
state (status, retry countdown, silence, note) is its :class:`~._run_state.StatusMachine`'s, whose changes whoever
wants them (the JupyterLab status bar) hears with :meth:`Run.on_state`; asking before a tool runs is
``_approval``'s, through :attr:`Run.presenter`.

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
from typing import Any

from ..agent import AgentMessage
from ..ai import AssistantMessage
from ..kernel import NotebookTarget, PythonEvent, add_python_listener, signals_wake_the_loop
from ..session import (
    AgentSession,
    AgentSettledEvent,
    BranchSummaryEndEvent,
    CompactionCancelled,
    CompactionEndEvent,
    MessageEndEvent,
    MessageUpdateEvent,
    SessionEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
)
from ._describe import describe_event, folded_report, pointer_to_report, render_all, usage_line
from ._receipt import Receipt, build_receipt
from ._retried import RetriedReplies
from ._run_state import RunState, StateListener, StatusMachine
from .widget._display import RunDisplay, Static
from .widget._live import current_run
from .widget._presenter import RunPresenter, tool_preview
from .widget._protocol import RunStatus
from .widget._view import RunView

__all__ = ["Run", "RunReport"]


class RunReport:
    """A finished run (transcript + event log) as markdown and HTML; what ``await run`` shows in a notebook.
    ``receipt``: what the run changed and what a stop cut short (``None`` while it runs)."""

    def __init__(
        self,
        markdown: str,
        *,
        aborted: bool,
        error: str | None,
        html: str = "",
        text: str = "",
        receipt: Receipt | None = None,
    ) -> None:
        self.markdown = markdown
        self.html = html
        self.text = text or markdown
        """What a terminal shows (``text/plain``)."""
        self.aborted = aborted
        self.error = error
        self.receipt = receipt
        self.shown = False
        """A notebook displayed it (its markdown or HTML was asked for)."""
        self.widget_above = False
        """The cell showing it shows the run's live widget, which a page drew: its HTML is folded under one line,
        so the page does not show the transcript twice (``_describe.folded_report``; the markdown stays whole)."""

    def _repr_markdown_(self) -> str:
        self.shown = True
        return self.markdown

    def _repr_html_(self) -> str | None:
        self.shown = True
        if not self.html or not self.widget_above:
            return self.html or None
        return folded_report(self.html, self.text.split("\n", 1)[0])

    def __repr__(self) -> str:
        return self.text

    @property
    def static(self) -> Static:
        """Its markdown and HTML, as a run display's static copy."""
        return self.markdown, self.html

    @classmethod
    def of(cls, run: Run, messages: list[AgentMessage], usage: str) -> RunReport:
        """``run``'s report as it is now (``running`` until it settles): ``messages`` as the report shows them (a
        retried reply's fate: ``RetriedReplies.shown``) and the ``usage`` line."""
        status: str = run.status.status if run.done else "running"  # settled, aborted or error
        if run.error:
            status += f" — {run.error}"
        tools = {tool.name: tool for tool in run.session.tools}
        markdown, html, text = render_all(
            messages,
            run.log,
            title=f"Run {run.number}",
            status=status,
            usage=usage,
            call_text=lambda name, args: tool_preview(tools.get(name), args),
        )
        return cls(markdown, aborted=run.aborted, error=run.error, html=html, text=text, receipt=run.receipt)


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
        notebook: NotebookTarget | None = None,
        on_send: Callable[[str, RunView], None] | None = None,
        on_undo: Callable[[], None] | None = None,
    ) -> None:
        """``on_send(text, view)``: what the widget's box does with a text once the run has settled (the notebook
        session starts a new run, drawn below it); without it the text is queued for the next prompt. ``on_undo``:
        what the widget's **Undo run** does (shown once the run settled; none without it).
        ``notebook``: where the run's cell came from, and what its cell tools changed there (``_cell_link``)."""
        self.session = session
        self._on_send, self._on_undo = on_send, on_undo
        self.number, self.label = number, label
        self.events: list[SessionEvent] = []
        self.log: list[tuple[float, str, str]] = []
        self.messages: list[AgentMessage] = []
        self.error: str | None = None
        self.aborted = False
        self._cache_usage = ""
        """The usage line at settle, kept for the report when prompt caching saved (or cost) money."""
        self.receipt: Receipt | None = None
        """What the run changed and what a stop cut short, once it has settled (``_receipt``)."""
        self._cells = notebook.changes if notebook is not None else None
        self._started = time.monotonic()
        self._key = uuid.uuid4().hex
        self._loop = asyncio.get_running_loop()
        self._settled = self._loop.create_future()
        self._stop_requested = False
        self._changed: asyncio.Future[None] | None = None
        self._presenter = self._make_presenter() if with_view else None
        self.status = StatusMachine(number, self._loop, self._draw_state if with_view else None)
        """The run's state (``status.status``: ``starting``, ``streaming``, ... ``settled``) and its listeners."""
        self._close_view_when_settled = self._refresh_pending = False
        self._display = RunDisplay(
            f"pi-run-{self._key}",
            plain=f"Run {number}: {_short(label)}",
            widget=self._widget_bundle,
            static=lambda: self.report().static,
            cell_id=notebook.cell_id if notebook is not None else None,
        )
        self._tool_calls: set[str] = set()  # this run's tool calls that started and have not ended
        self._retried = RetriedReplies()  # failed replies a retry replaced: left out of the report
        self._unsubscribe = session.subscribe(self._on_event)
        self._unlisten = add_python_listener(self._on_python)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._task = self._loop.create_task(self._main(start))

    def _make_presenter(self) -> RunPresenter:
        return RunPresenter(
            title=f"Run {self.number}: {_short(self.label)}",
            session=self.session,
            on_stop=self.abort,
            loop=self._loop,
            number=self.number,
            key=self._key,
            on_send=self._on_send,
            on_undo=self._on_undo,
        )

    # -- public -----------------------------------------------------------------------------------------
    @property
    def view(self) -> RunView | None:
        """The run's widget (``None`` without a view)."""
        return self._presenter.view if self._presenter is not None else None

    @property
    def presenter(self) -> RunPresenter | None:
        """What draws the run in its widget (``None`` without a view, or once the view was closed)."""
        return self._presenter

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
        """``{"state", "run", "aborted", "retry_deadline", "silent_s", "note"}`` as the status bar shows it."""
        return self.status.state()

    def on_state(self, listener: StateListener) -> None:
        """Call ``listener(run.state())`` now and whenever the state changes."""
        self.status.on_state(listener)

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
        queue = self.session.queue
        # A click on the widget's Stop arrives twice (its own comm, and forwarded by the JupyterLab extension): a
        # repeated Stop takes back only what was queued since, so the log gets one queue_update per Stop.
        if not self._stop_requested or queue.steering or queue.follow_up:
            snapshot = self.session.clear_queue()
            if self._presenter is not None:
                self._presenter.hand_back([*snapshot.steering, *snapshot.follow_up])
        self._stop_requested = True
        self._spawn(self.session.abort())

    def note(self, label: str, detail: str) -> None:
        """Add a line to the run's event log (and its widget's), timed from the run's start."""
        seconds = time.monotonic() - self._started
        self.log.append((seconds, label, detail))
        if self._presenter is not None:
            self._presenter.log(seconds, label, detail)

    def report(self) -> RunReport:
        """The run as it is now: its transcript and event log (:meth:`RunReport.of`)."""
        return RunReport.of(self, self._retried.shown(self.messages), self._cache_usage)

    def __await__(self) -> Generator[Any, None, RunReport]:
        return self._wait().__await__()

    async def _wait(self) -> RunReport:
        try:
            with signals_wake_the_loop():  # so a kernel interrupt cancels this await at once (kernel/_wake.py)
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
            report.widget_above = self.view is not None and self.view.transcript.rendered
        return report

    def _pointer(self, report: RunReport) -> Static | None:
        """At the end of the cell that showed and awaited the run: a line pointing to the report, if the cell
        showed it (its static copy is then not a second transcript), else ``None`` (the transcript)."""
        self._refresh_pending = False
        return pointer_to_report(self.number, self.status.status) if report.shown else None

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
        ``widget._display`` for why a second display in the same cell shows nothing."""
        self._display.show()

    def _ipython_display_(self) -> None:
        self._display.show_again()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        """What a display of the run holds: the live widget, its static copy (markdown) and a text line."""
        return self._display.bundle()

    def view_ref(self) -> dict[str, Any] | None:
        """Where the run's live widget is (:meth:`RunDisplay.view_ref`). Any thread."""
        return self._display.view_ref(self.number, self.view)

    def _widget_bundle(self) -> dict[str, Any] | None:
        return self.view.widget_bundle() if self.view is not None else None

    def __repr__(self) -> str:
        state = self.status.status if self.done else "running"
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
            self.note("error", self.error)
        finally:
            if not self._settled.done():  # no agent_settled reached the run (e.g. its session was disposed)
                self._finish(aborted=self.aborted or self._stop_requested)

    def _finish(self, *, aborted: bool) -> None:
        self.aborted = aborted
        self._unsubscribe()
        self._unlisten()
        if self.session.budget.cache_saved_usd:
            self._cache_usage = usage_line(self.session)
        failed = self.error is not None or _ended_on_error(self.messages)
        self.receipt = build_receipt(self.events, self.messages, self._cells, aborted=aborted, model=self.session.model)
        for line in self.receipt.lines():
            self.note("receipt", line)
        self.status.settle("aborted" if aborted else ("error" if failed else "settled"), aborted=aborted)
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

    def _draw_state(self, status: RunStatus, retry_deadline: float, silent_s: int) -> None:
        if self._presenter is not None:  # (the presenter goes when the view is closed)
            self._presenter.state(status, retry_deadline, silent_s)

    def _wake(self) -> None:
        changed, self._changed = self._changed, None
        if changed is not None and not changed.done():
            changed.set_result(None)

    def _on_event(self, event: SessionEvent) -> None:
        self.events.append(event)
        self._retried.see(event)
        self.status.heard()
        self._wake()
        if type(event) is MessageUpdateEvent:  # the per-delta hot path: no log line, no state change
            if self._presenter is not None:
                self._presenter.show_update(event)
            return
        line = describe_event(event)
        if line is not None:
            self.note(*line)
        match event:
            case ToolExecutionStartEvent(tool_call_id=call):
                self._tool_calls.add(call)
            case ToolExecutionEndEvent(tool_call_id=call):
                self._tool_calls.discard(call)
            case MessageEndEvent(message=message):
                self.messages.append(message)
            case CompactionEndEvent(result=summary) | BranchSummaryEndEvent(result=summary) if summary is not None:
                self.messages.append(summary)
            case _:
                pass
        self.status.track(event)
        if self._presenter is not None:
            self._presenter.show(event)
        if isinstance(event, AgentSettledEvent):
            self._finish(aborted=event.aborted)

    def _on_python(self, event: PythonEvent) -> None:
        """The ``python`` tool's events (any thread), those of this run's calls: its code stuck after a Stop."""
        if event.call_id in self._tool_calls:
            self.status.code_event(event)


_STREAMING_STEPS = (MessageUpdateEvent, ToolExecutionUpdateEvent)
"""Events a settled run no longer keeps: one per delta, and what they carried is in the final messages."""


def _ended_on_error(messages: list[AgentMessage]) -> bool:
    """The run's last reply failed for good (``stop_reason="error"`` after any retries): its state is ``error``."""
    last = next((m for m in reversed(messages) if isinstance(m, AssistantMessage)), None)
    return last is not None and last.stop_reason == "error"


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
