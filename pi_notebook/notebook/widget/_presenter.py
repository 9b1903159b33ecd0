"""``RunPresenter``: turns one run's session events into operations on its widget (``RunView``).

The run records and reports; the presenter only draws. The run tells it, in order, each event-log line, each
session event and each change of the run's state; the presenter makes the operations the widget's front end
applies (see ``_view``): ``message``/``append``/``thinking``/``status`` for messages (keyed by their stable
:func:`~pi_notebook.ai.messages.message_key`), ``tool``/``tool_output``/``tool_end`` for tool panels, ``event``
for log lines, plus the queue, usage and retry fields. The ``python`` tool's output while its code runs (which
blocks the loop, so no session event carries it) comes through ``_live``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any

from ...agent import AgentTool
from ...ai import (
    AbortSignal,
    AssistantMessage,
    TextContent,
    TextDeltaEvent,
    ThinkingContent,
    ThinkingDeltaEvent,
    UserMessage,
)
from ...ai.messages import message_key, text_of
from ...session import (
    AgentEndEvent,
    AgentSession,
    AgentSettledEvent,
    AgentStartEvent,
    AutoRetryEndEvent,
    AutoRetryStartEvent,
    BranchSummaryEndEvent,
    BranchSummaryStartEvent,
    BudgetExceededEvent,
    CompactionEndEvent,
    CompactionStartEvent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    QueueUpdateEvent,
    SessionEvent,
    SessionTreeEvent,
    SummarizationRetryAttemptStartEvent,
    SummarizationRetryFinishedEvent,
    SummarizationRetryScheduledEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TurnEndEvent,
    TurnStartEvent,
)
from .._describe import result_text, usage_line
from .._retried import RetriedReplies
from .._visible import shown_json
from ._live import LiveOutput
from ._protocol import ToolOp
from ._tree_panel import tree_items
from ._view import RunView

__all__ = ["RunPresenter", "drawn_as_message", "tool_preview"]


def drawn_as_message(message: AssistantMessage) -> bool:
    """Whether the transcript shows ``message`` as a message of its own. A reply with no text and no thinking is
    not: its tool calls have their panels (an empty ``ASSISTANT`` label said nothing), and the empty ``aborted``
    reply that ends the turn after a Stop during a tool (Pi records one: the loop asks no model with an aborted
    signal) is no turn of the conversation. A failed reply is, whatever it holds (its error is the news), and so
    is one cut off while it wrote a tool call."""
    for block in message.content:
        if (isinstance(block, TextContent) and block.text) or (isinstance(block, ThinkingContent) and block.thinking):
            return True
    if message.stop_reason == "error" or message.stop_reason == "length":
        return True
    return message.stop_reason == "aborted" and bool(message.content)


def tool_preview(tool: AgentTool | None, args: Any) -> tuple[str, str]:
    """``(preview, syntax)`` of a call of ``tool`` (:attr:`AgentTool.call_text`, else :attr:`AgentTool.preview`);
    ``("", "")`` without one."""
    if tool is None or not isinstance(args, Mapping):
        return "", ""
    try:
        if tool.call_text is not None:
            return tool.call_text(args), tool.preview_syntax
        if tool.preview is None:
            return "", ""
        preview = tool.preview(args)
    except Exception:  # a preview of arguments it did not expect: the panel shows them as they are
        return "", ""
    if not isinstance(preview, str):  # an async preview reads the live notebook: for the approval question only
        close = getattr(preview, "close", None)
        if callable(close):
            close()  # a coroutine never awaited
        return "", ""
    return preview, tool.preview_syntax


class RunPresenter:
    """Draws one run in a :class:`RunView`. Stop calls ``on_stop``; cancel-retry, steer and follow-up call the
    session's own methods (the view hands every click to the kernel's loop first)."""

    def __init__(
        self,
        *,
        title: str,
        session: AgentSession,
        on_stop: Callable[[], None],
        loop: asyncio.AbstractEventLoop,
        number: int | None = None,
        key: str = "",
        on_send: Callable[[str, RunView], None] | None = None,
        on_undo: Callable[[], None] | None = None,
    ) -> None:
        """``key``: the run's key, which its task holds in :data:`~._live.current_run` (live python output);
        ``on_send``: what the box does once the run settled, ``on_undo`` its **Undo run** (see :class:`RunView`)."""
        self._session = session
        self._loop = loop
        self._tasks: set[asyncio.Task[None]] = set()
        self.view = RunView(
            title=title,
            on_stop=on_stop,
            on_cancel_retry=session.abort_retry,
            on_steer=lambda text: self._spawn(session.steer(text)),
            on_follow_up=lambda text: self._spawn(session.follow_up(text)),
            loop=loop,
            number=number,
            on_send=on_send,
            on_undo=on_undo,
        )
        self._live = LiveOutput(key, self.view.transcript, session.secret_keys)
        self.view.transcript.tree_source = lambda: [dict(item) for item in tree_items(session.tree())]
        self._undrawn: set[int] = set()
        """Replies started but not drawn yet: a reply is drawn with its first text or thinking, or at its end."""
        self._retried = RetriedReplies()
        """A failed reply is drawn once its fate is known: not at all when a retry replaced it (``_retried``)."""

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = self._loop.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- what the run tells it ----------------------------------------------------------------------------
    def log(self, seconds: float, label: str, detail: str) -> None:
        """An event-log line, ``seconds`` after the run started."""
        self.view.transcript.add({"op": "event", "t": round(seconds * 1000), "label": label, "detail": detail})

    def state(self, state: str, retry_deadline: float, silent_s: int = 0) -> None:
        """The run's state; ``silent_s`` > 0 (seconds without data from the model) is shown beside it."""
        transcript = self.view.transcript
        transcript.state = f"{state} · no data for {silent_s} s" if silent_s else state
        transcript.retry_deadline = retry_deadline
        self.view.show_retry(retry_deadline > 0)

    def hand_back(self, texts: Sequence[str]) -> None:
        """Stop took queued messages back: put them in the input box, before what is typed there."""
        if not texts:
            return
        box = self.view.input
        current = box.value.strip()
        box.value = "\n\n".join([*texts, current] if current else texts)

    def settle(self, aborted: bool) -> None:
        self._live.close()
        self.view.settle(aborted)

    def undone(self, text: str) -> None:
        """The run was taken back (``%pi rewind`` or its **Undo run**): ``text`` says what became of it."""
        self.view.undone(text)

    def show_tree(self, prompts: int, items: Callable[[], list[dict[str, Any]]]) -> None:
        """The session tree changed: its panel's title gets the number of ``prompts``; a view that opened the panel
        gets the tree (``items()``, made only then: the same for every view of one change)."""
        transcript = self.view.transcript
        transcript.tree_prompts = prompts
        if transcript.tree_wanted:
            transcript.tree = items()

    def ask(
        self,
        tool_name: str,
        preview: str,
        on_answer: Callable[[str], None],
        *,
        always: bool = True,
        group: str | None = None,
    ) -> None:
        """Show a tool call waiting for approval (see ``_approval``); ``on_answer`` gets the click on the loop.
        ``always=False``: no **Always for this session** (the site policy makes the tool ask every time); ``group``:
        what Always allows when it is more than the tool (``AgentTool.approval_group``)."""
        self.view.ask(f"Allow {tool_name}?", preview, on_answer, always=always, group=group)

    def close_ask(self) -> None:
        self.view.approval.hide()

    async def wait_rendered(self, seconds: float, signal: AbortSignal) -> bool:
        """True once a frontend has rendered the run's widget (at once if one did); False after ``seconds``
        without one, or when ``signal`` aborts first."""
        return await self.view.transcript.wait_rendered(seconds, signal)

    def close(self) -> None:
        """Close the view's widgets (the run has settled and is shown statically from now on)."""
        self._live.close()
        self.view.close_all()

    def _preview(self, name: str, args: Any) -> tuple[str, str]:
        """The call as its panel shows it: the tool's own preview (the code, the command line, the edit's diff) and
        how it reads; ``("", "")`` when the tool has none, or it does not take these arguments (the panel shows
        the arguments as JSON then)."""
        return tool_preview(next((tool for tool in self._session.tools if tool.name == name), None), args)

    def show_update(self, event: MessageUpdateEvent) -> None:
        """A streaming step (most events, so kept short): text and thinking deltas are appended (the reply is drawn
        at its first one, see :func:`drawn_as_message`)."""
        step = event.assistant_message_event
        if isinstance(step, TextDeltaEvent):
            key = self._drawn(event.message)
            self.view.transcript.add({"op": "append", "id": key, "text": step.delta})
        elif isinstance(step, ThinkingDeltaEvent):
            key = self._drawn(event.message)
            self.view.transcript.add({"op": "thinking", "id": key, "text": step.delta})

    def _drawn(self, message: AssistantMessage) -> int:
        """The reply's key, its message drawn first if it was not yet."""
        key = message_key(message)
        if key in self._undrawn:
            self._undrawn.discard(key)
            self.view.transcript.add({"op": "message", "id": key, "role": "assistant", "text": ""})
        return key

    def _show_failed(self, message: AssistantMessage) -> None:
        """A failed reply no retry replaced: drawn (if it was not while it streamed) with its error, and how often
        it was retried."""
        key = self._drawn(message)
        error = self._retried.error_of(message)
        self.view.transcript.add({"op": "status", "id": key, "stop_reason": message.stop_reason, "error": error})

    def show(self, event: SessionEvent) -> None:
        """The widget operations of one session event."""
        transcript = self.view.transcript
        failed = self._retried.see(event)
        if failed is not None:
            self._show_failed(failed)
        match event:
            case MessageUpdateEvent():
                self.show_update(event)
            case MessageStartEvent(message=UserMessage() as message):
                transcript.add({"op": "message", "id": message_key(message), "role": "user", "text": text_of(message)})
            case MessageStartEvent(message=AssistantMessage() as message):
                self._undrawn.add(message_key(message))  # drawn with its first text (see drawn_as_message)
            case MessageEndEvent(message=AssistantMessage() as message):
                key, error = message_key(message), message.error_message
                if self._retried.holds(message) and key in self._undrawn:
                    pass  # nothing streamed: drawn once no retry replaces it (see _show_failed)
                elif key in self._undrawn and not drawn_as_message(message):
                    self._undrawn.discard(key)
                else:
                    self._drawn(message)
                    transcript.add({"op": "status", "id": key, "stop_reason": message.stop_reason, "error": error})
                transcript.usage = usage_line(self._session)
            case ToolExecutionStartEvent():
                args = shown_json(event.args)
                preview, syntax = self._preview(event.tool_name, event.args)
                call, name = event.tool_call_id, event.tool_name
                transcript.add(ToolOp(op="tool", call=call, name=name, args=args, preview=preview, syntax=syntax))
                self._live.expect(event.tool_call_id)
            case ToolExecutionUpdateEvent():
                output = result_text(event.partial_result)
                transcript.add({"op": "tool_output", "call": event.tool_call_id, "text": output})
            case ToolExecutionEndEvent():
                self._live.finish(event.tool_call_id, event.result)
                output = result_text(event.result)
                transcript.add(
                    {"op": "tool_end", "call": event.tool_call_id, "text": output, "is_error": event.is_error}
                )
            case QueueUpdateEvent(steering=steering, follow_up=follow_up):
                transcript.queue = [f"steer: {t}" for t in steering] + [f"follow-up: {t}" for t in follow_up]
            case AutoRetryStartEvent():
                transcript.retry_text = f"attempt {event.attempt}/{event.max_attempts}: {event.error_message}"
            case BudgetExceededEvent():
                transcript.usage = usage_line(self._session) + f" — {event.reason}"
            case CompactionEndEvent(result=summary) | BranchSummaryEndEvent(result=summary) if summary is not None:
                transcript.add(
                    {"op": "message", "id": message_key(summary), "role": "summary", "text": summary.summary}
                )
            case (
                MessageStartEvent()
                | MessageEndEvent()
                | AgentStartEvent()
                | AgentEndEvent()
                | TurnStartEvent()
                | TurnEndEvent()
                | AgentSettledEvent()
                | AutoRetryEndEvent()
                | CompactionStartEvent()
                | CompactionEndEvent()
                | SummarizationRetryScheduledEvent()
                | SummarizationRetryAttemptStartEvent()
                | SummarizationRetryFinishedEvent()
                | BranchSummaryStartEvent()
                | BranchSummaryEndEvent()
                | SessionTreeEvent()
            ):
                pass  # in the event log only
