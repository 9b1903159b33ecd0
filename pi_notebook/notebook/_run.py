"""``Run``: one session operation started from a notebook, with its events, transcript and widget.

A run starts as a task on the kernel's event loop; the cell that started it returns at once. ``await run``
waits for ``agent_settled`` and gives a :class:`RunReport` (the static markdown rendering executed notebooks
keep); cancelling that await — a kernel interrupt does — aborts the run. ``run.abort()`` is the Stop button:
queued messages go back to the input box, then the session aborts.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Generator
from typing import Any

from ..agent import AgentMessage
from ..ai import AssistantMessage, UserMessage
from ..ai.messages import text_of
from ..session import AgentSession, CompactionCancelled
from . import _control
from ._describe import QUIET, describe_event, render_markdown, result_text
from ._view import RunView

__all__ = ["Run", "RunReport"]


class RunReport:
    """A finished run as markdown (transcript + event log); what ``await run`` shows in a notebook."""

    def __init__(self, markdown: str, *, aborted: bool, error: str | None) -> None:
        self.markdown = markdown
        self.aborted = aborted
        self.error = error

    def _repr_markdown_(self) -> str:
        return self.markdown

    def __repr__(self) -> str:
        return self.markdown


class Run:
    """Handle of one run. See the module docstring."""

    def __init__(
        self,
        session: AgentSession,
        number: int,
        start: Callable[[], Awaitable[None]],
        *,
        label: str,
        with_view: bool = True,
    ) -> None:
        self.session = session
        self.number = number
        self.label = label
        self.events: list[Any] = []
        self.log: list[tuple[float, str, str]] = []
        self.messages: list[AgentMessage] = []
        self.error: str | None = None
        self.aborted = False
        self._started = time.monotonic()
        self._loop = asyncio.get_running_loop()
        self._settled = self._loop.create_future()
        self._ids: dict[int, int] = {}
        self._state = "starting"
        self._retry_deadline = 0.0
        self._changed: asyncio.Future[None] | None = None
        self.view: RunView | None = None
        if with_view:
            self.view = RunView(
                title=f"Run {number}: {_short(label)}",
                on_stop=self.abort,
                on_cancel_retry=session.abort_retry,
                on_steer=lambda text: self._spawn(session.steer(text)),
                on_follow_up=lambda text: self._spawn(session.follow_up(text)),
                loop=self._loop,
                number=number,
            )
        self._unsubscribe = session.subscribe(self._on_event)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._task = self._loop.create_task(self._main(start))
        _control.publish(self.state())  # the JupyterLab extension shows Stop from the start

    # -- public -----------------------------------------------------------------------------------------
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

    def state(self) -> dict[str, Any]:
        """``{"state", "run", "aborted", "retry_deadline"}`` as the JupyterLab status bar shows it."""
        return {
            "state": self._state,
            "run": self.number,
            "aborted": self.aborted,
            "retry_deadline": self._retry_deadline,
        }

    def _set_state(self, state: str, *, retry_deadline: float | None = None) -> None:
        if retry_deadline is not None:
            self._retry_deadline = retry_deadline
        if state == self._state and retry_deadline is None:
            return
        self._state = state
        if self.view is not None:
            self.view.transcript.state = state
            self.view.transcript.retry_deadline = self._retry_deadline
            self.view.show_retry(self._retry_deadline > 0)
        _control.publish(self.state())

    async def wait_for(self, event_type: str, count: int = 1) -> Any:
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
        snapshot = self.session.clear_queue()
        restored = [*snapshot.steering, *snapshot.follow_up]
        if restored and self.view is not None:
            current = self.view.input.value.strip()
            self.view.input.value = "\n\n".join([*restored, current] if current else restored)
        self._spawn(self.session.abort())

    def report(self) -> RunReport:
        status = "running" if not self.done else ("aborted" if self.aborted else "settled")
        if self.error:
            status += f" — {self.error}"
        markdown = render_markdown(self.messages, self.log, title=f"Run {self.number}", status=status)
        return RunReport(markdown, aborted=self.aborted, error=self.error)

    def __await__(self) -> Generator[Any, None, RunReport]:
        return self._wait().__await__()

    async def _wait(self) -> RunReport:
        try:
            await asyncio.shield(self._settled)
        except asyncio.CancelledError:
            # The awaiting cell was interrupted: stop the run, then let the interruption through.
            self.abort()
            raise
        return self.report()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        """The live widget, with a text line for frontends that cannot show widgets."""
        bundle: dict[str, Any] = {}
        if self.view is not None:
            widget_bundle = self.view._repr_mimebundle_()
            if widget_bundle:
                bundle.update(widget_bundle if isinstance(widget_bundle, dict) else widget_bundle[0])
        bundle["text/plain"] = repr(self)
        return bundle

    def __repr__(self) -> str:
        state = ("aborted" if self.aborted else "settled") if self.done else "running"
        return f"<Run {self.number} ({state}): {_short(self.label)} — await it for the transcript and event log>"

    # -- internals --------------------------------------------------------------------------------------
    def _spawn(self, coroutine: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _main(self, start: Callable[[], Awaitable[None]]) -> None:
        try:
            await start()
        except CompactionCancelled:
            self.aborted = True  # %pi compact stopped: reported by compaction_end(aborted)
        except Exception as exc:  # e.g. "Cannot continue from message role: assistant"
            self.error = str(exc) or type(exc).__name__
            self._note("error", self.error)
        finally:
            if not self._settled.done():
                self._finish(aborted=self.aborted)

    def _finish(self, *, aborted: bool) -> None:
        self.aborted = aborted
        self._unsubscribe()
        self._set_state("aborted" if aborted else ("error" if self.error else "settled"), retry_deadline=0.0)
        if self.view is not None:
            self.view.settle(aborted)
        if not self._settled.done():
            self._settled.set_result(None)
        self._wake()

    def _t(self) -> float:
        return time.monotonic() - self._started

    def _note(self, label: str, detail: str) -> None:
        t = self._t()
        self.log.append((t, label, detail))
        if self.view is not None:
            self.view.transcript.add({"op": "event", "t": round(t * 1000), "label": label, "detail": detail})

    def _id(self, message: object) -> int:
        key = id(message)
        if key not in self._ids:
            self._ids[key] = len(self._ids)
        return self._ids[key]

    def _wake(self) -> None:
        changed, self._changed = self._changed, None
        if changed is not None and not changed.done():
            changed.set_result(None)

    def _on_event(self, event: Any) -> None:
        self.events.append(event)
        self._wake()
        kind = event.type
        if kind not in QUIET:
            self._note(*describe_event(event))
        if kind == "message_end":
            self.messages.append(event.message)
        elif kind == "compaction_end" and event.result is not None:
            self.messages.append(event.result)
        self._track_state(event)
        view = self.view
        if view is not None:
            self._update_view(view, event)
        if kind == "agent_settled":
            self._finish(aborted=event.aborted)

    def _track_state(self, event: Any) -> None:
        kind = event.type
        if kind == "message_start" and event.message.role == "assistant":
            self._set_state("streaming")
        elif kind == "tool_execution_start":
            self._set_state("running tool")
        elif kind == "auto_retry_start":
            self._set_state("retrying", retry_deadline=time.time() * 1000 + event.delay_ms)
        elif kind in ("auto_retry_end", "agent_start") and self._retry_deadline:
            self._set_state("streaming" if kind == "agent_start" else self._state, retry_deadline=0.0)
        elif kind == "compaction_start":
            self._set_state("compacting")

    def _update_view(self, view: RunView, event: Any) -> None:
        transcript = view.transcript
        kind = event.type
        if kind == "message_start":
            message = event.message
            if isinstance(message, UserMessage | AssistantMessage):
                text = text_of(message) if isinstance(message, UserMessage) else ""
                transcript.add({"op": "message", "id": self._id(message), "role": message.role, "text": text})
        elif kind == "message_update":
            step = event.assistant_message_event
            if step.type == "text_delta":
                transcript.add({"op": "append", "id": self._id(event.message), "text": step.delta})
            elif step.type == "thinking_delta":
                transcript.add({"op": "thinking", "id": self._id(event.message), "text": step.delta})
        elif kind == "message_end" and isinstance(event.message, AssistantMessage):
            message = event.message
            transcript.add(
                {
                    "op": "status",
                    "id": self._id(message),
                    "stop_reason": message.stop_reason,
                    "error": message.error_message,
                }
            )
            transcript.usage = self.usage_line()
        elif kind == "tool_execution_start":
            args = json.dumps(event.args, ensure_ascii=False, indent=1, default=str)
            transcript.add({"op": "tool", "call": event.tool_call_id, "name": event.tool_name, "args": args})
        elif kind == "tool_execution_update":
            transcript.add({"op": "tool_output", "call": event.tool_call_id, "text": result_text(event.partial_result)})
        elif kind == "tool_execution_end":
            transcript.add(
                {
                    "op": "tool_end",
                    "call": event.tool_call_id,
                    "text": result_text(event.result),
                    "is_error": event.is_error,
                }
            )
        elif kind == "queue_update":
            transcript.queue = [f"steer: {t}" for t in event.steering] + [f"follow-up: {t}" for t in event.follow_up]
        elif kind == "auto_retry_start":
            transcript.retry_text = f"attempt {event.attempt}/{event.max_attempts}: {event.error_message}"
        elif kind == "budget_exceeded":
            transcript.usage = self.usage_line() + f" — {event.reason}"
        elif kind == "compaction_end" and event.result is not None:
            summary = event.result
            transcript.add({"op": "message", "id": self._id(summary), "role": "summary", "text": summary.summary})

    def usage_line(self) -> str:
        """Turns, tokens and cost so far, against the budget's limits."""
        budget = self.session.budget
        limits = budget.limits
        parts = [f"turns {budget.turns}" + (f"/{limits.max_turns}" if limits.max_turns else "")]
        parts.append(
            f"in {budget.input_tokens} tok" + (f"/{limits.max_input_tokens}" if limits.max_input_tokens else "")
        )
        parts.append(
            f"out {budget.output_tokens} tok" + (f"/{limits.max_output_tokens}" if limits.max_output_tokens else "")
        )
        parts.append(f"${budget.cost_usd:.4f}" + (f"/${limits.max_cost_usd:.2f}" if limits.max_cost_usd else ""))
        return " · ".join(parts)


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
