"""The ``python`` tool's live output in a run's widget: prints, ``display()`` outputs and the stuck notice.

The agent's code runs on the kernel's main thread and blocks the event loop (see ``pi_notebook.kernel.python_tool``), so
the widget's usual path — ``tool_execution_update`` events, operations queued with
:meth:`~._view.TranscriptWidget.add` and sent by a loop timer at most every ``FLUSH_INTERVAL`` — cannot carry
anything until the code returns. :class:`LiveOutput` listens to the tool's :class:`~pi_notebook.tools.PythonEvent`
stream instead and keeps the same batching:

- The listener only records (any thread, under a lock): text written becomes ``tool_append`` operations (a run of
  writes joined, its head dropped beyond :data:`~._protocol.TOOL_TAIL_CHARS`, so a print flood costs bounded memory),
  ``display()`` bundles become ``tool_display`` operations (at most :data:`MAX_DISPLAYS` per call, counted again
  after each ``clear_output()``; the richest type the panel can show), ``clear_output()`` a ``tool_clear`` (the
  displays not sent yet are dropped instead), a ``stuck`` event a ``tool_note``.
- Text leaves the kernel with the session's keys redacted, as the call's result is
  (:class:`~pi_notebook.session.StreamRedactor`): a key printed in two writes, cut anywhere, is redacted too (an end
  of the text that could begin a key waits for the next write, or for the code's end); so does a display (every
  string of its bundle).
- While the code runs, one flusher thread sends what was recorded every ``FLUSH_INTERVAL`` seconds with
  :meth:`~._view.TranscriptWidget.send_now` (ipykernel's iopub channel is thread-safe). It is the only one to
  touch the widget then: the main thread is inside the code, and the loop, which would otherwise, is blocked.
  The code's ``end`` (on the main thread) stops and joins the flusher before the main thread touches the widget
  again, and queues the rest on the usual path; so does the call's ``tool_execution_end`` if ``end`` never came.
- Which panel: a call is live in this run's widget when its ``start`` comes from this run's task (the
  :data:`current_run` context variable holds the run's key there) for a tool call this run has started and not
  ended; later events are matched by tool call id. So two runs replaying one cassette (same call ids) never
  share output.

When the call ends, the tool's result replaces the live text as for any tool (the displays stay), and the value
of the code's last expression is shown too when it has a rich form (a DataFrame's table, an image).
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from ...agent import AgentToolResult
from ...kernel import PythonEvent, add_python_listener
from ...kernel.python_tool import MAX_RICH_OUTPUTS
from ...session import StreamRedactor, redact_value
from ._protocol import TOOL_TAIL_CHARS, Op, ToolDisplayOp
from ._view import FLUSH_INTERVAL, TranscriptWidget

__all__ = ["MAX_DISPLAYS", "LiveOutput", "current_run", "display_op"]

MAX_DISPLAYS = MAX_RICH_OUTPUTS
"""Rich outputs shown live per call: as many as the python tool keeps in its result's details; later ones are
counted in a note."""
DISPLAY_TYPES = ("text/html", "image/svg+xml", "image/png", "image/jpeg", "image/gif", "text/plain")
"""The types a panel shows, richest first (a bundle's first one present is sent)."""

current_run: contextvars.ContextVar[str | None] = contextvars.ContextVar("pi_notebook_current_run", default=None)
"""The key of the run whose task is running (set by the run's task; tasks it starts inherit it)."""

_log = logging.getLogger(__name__)


def display_op(call: str, data: Mapping[str, Any]) -> ToolDisplayOp | None:
    """The panel operation for a mime bundle: its richest type the panel shows, or ``None`` (no such type)."""
    for mime in DISPLAY_TYPES:
        value = data.get(mime)
        if isinstance(value, list):  # some formatters give text as a list of lines
            value = "".join(str(line) for line in value)
        if isinstance(value, str) and value:
            text = value[-TOOL_TAIL_CHARS:] if mime == "text/plain" else value
            return {"op": "tool_display", "call": call, "mime": mime, "data": text}
    return None


class _Call:
    """What one live call recorded and has not sent yet (guarded by :class:`LiveOutput`'s lock). Its text leaves
    with the session's keys (``keys()``) redacted, as the call's result will be."""

    def __init__(self, call: str, keys: Callable[[], list[str]]) -> None:
        self.call = call
        self._keys = keys
        self._redactor = StreamRedactor(keys)
        self._cut = False  # a flood dropped the head of what was written since the last send
        self.written = 0
        self.displays = 0
        self.shown = False  # a display was sent or queued since the last clear_output()
        self.noted = False
        self._pending: list[Op] = []
        self._pieces: list[str] = []
        self._chars = 0

    def write(self, text: str) -> None:
        self.written += len(text)
        self._pieces.append(text)
        self._chars += len(text)
        if self._chars > 2 * TOOL_TAIL_CHARS:  # a flood between two flushes: keep only what can be shown
            self._pieces = ["".join(self._pieces)[-TOOL_TAIL_CHARS:]]
            self._chars = TOOL_TAIL_CHARS
            self._cut = True

    def add(self, op: Op) -> None:
        self._close_text()
        self._pending.append(op)

    def display(self, data: Mapping[str, Any]) -> None:
        self.displays += 1
        if self.displays <= MAX_DISPLAYS:
            op = display_op(self.call, redact_value(data, self._keys()))
            if op is not None:
                self.add(op)
                self.shown = True
        elif self.displays == MAX_DISPLAYS + 1:
            self.write(f"[more than {MAX_DISPLAYS} rich outputs: later ones are not shown here]\n")

    def clear(self) -> None:
        """``clear_output()``: the displays not sent yet are dropped, a ``tool_clear`` takes away those sent (one
        per batch: an animation loop clears before every frame)."""
        self.displays = 0
        if not self.shown:
            return
        self.shown = False
        self._pending = [op for op in self._pending if op["op"] != "tool_display"]
        if not self._pending or self._pending[-1]["op"] != "tool_clear":
            self.add({"op": "tool_clear", "call": self.call})

    def take(self, *, last: bool = False) -> list[Op]:
        """The operations recorded since the last take; ``last``: the code ended, so text held back because it
        could begin a key goes too."""
        self._close_text()
        if last:
            self._append(self._redactor.flush())
        ops, self._pending = self._pending, []
        return ops

    def _close_text(self) -> None:
        if not self._pieces:
            return
        if self._cut:  # what was held back came before the dropped head
            self._redactor.reset()
            self._cut = False
        self._append(self._redactor.feed("".join(self._pieces)[-TOOL_TAIL_CHARS:]))
        self._pieces, self._chars = [], 0

    def _append(self, text: str) -> None:
        if text:
            self._pending.append({"op": "tool_append", "call": self.call, "text": text, "total": self.written})


class LiveOutput:
    """Live output of the ``python`` tool's calls in one run's widget; see the module docstring.

    The presenter calls :meth:`expect` and :meth:`finish` (event loop) for each tool call of the run, and
    :meth:`close` when the run settles or its view closes.
    """

    def __init__(self, key: str, transcript: TranscriptWidget, keys: Callable[[], list[str]] = list) -> None:
        """``keys``: the session's keys, redacted from the live text before it is sent."""
        self._key = key
        self._transcript = transcript
        self._keys = keys
        self._expected: set[str] = set()  # tool calls of this run that started and have not ended (loop thread)
        self._lock = threading.Lock()
        self._calls: dict[str, _Call] = {}  # live calls (under the lock)
        self._ended: set[str] = set()  # calls whose code ended before their tool_execution_end (loop thread)
        self._flusher: tuple[threading.Thread, threading.Event] | None = None
        self._remove = add_python_listener(self._on_event)

    # -- the presenter (event loop) -------------------------------------------------------------------------
    def expect(self, call: str) -> None:
        self._expected.add(call)

    def finish(self, call: str, result: AgentToolResult) -> None:
        """The call's ``tool_execution_end``: queue what is left, and the rich form of its value, if any."""
        self._expected.discard(call)
        if self._end(call) or call in self._ended:
            self._ended.discard(call)
            details = result.details
            value = details.get("result") if isinstance(details, dict) else None
            data = value.get("data") if isinstance(value, dict) else None
            op = display_op(call, data) if isinstance(data, dict) else None  # the guard redacted the result
            if op is not None and op["mime"] != "text/plain":  # the text is in the result already
                self._transcript.add(op)

    def close(self) -> None:
        self._remove()
        self._stop_flusher()
        with self._lock:
            self._calls.clear()
        self._expected.clear()
        self._ended.clear()

    # -- the python tool's events (any thread) ------------------------------------------------------------
    def _on_event(self, event: PythonEvent) -> None:
        if event.kind == "start":
            if event.call_id in self._expected and current_run.get() == self._key:
                self._begin(event.call_id)
            return
        if event.kind == "end":
            self._end(event.call_id)
            return
        with self._lock:
            call = self._calls.get(event.call_id)
            if call is None:
                return
            if event.kind == "stdout" or event.kind == "stderr":
                call.write(event.text)
            elif event.kind == "display" and event.data is not None:
                call.display(event.data)
            elif event.kind == "clear":
                call.clear()
            elif event.kind == "stuck":
                call.noted = True
                call.add({"op": "tool_note", "call": call.call, "text": event.text})

    def _begin(self, call: str) -> None:
        with self._lock:
            self._calls[call] = _Call(call, self._keys)
        if self._flusher is None:
            stop = threading.Event()
            context = contextvars.copy_context()  # the kernel's parent message, as sends from the loop have
            thread = threading.Thread(
                target=context.run, args=(self._flush_until, stop), name="pi-live-output", daemon=True
            )
            self._flusher = (thread, stop)
            thread.start()

    def _end(self, call: str) -> bool:
        """The code of ``call`` has returned (main thread): stop the flusher, queue the rest. False when the call
        was not live (or already ended)."""
        with self._lock:
            live = self._calls.get(call)
        if live is None:
            return False
        self._stop_flusher()
        with self._lock:
            self._calls.pop(call, None)
            ops = live.take(last=True)
        if live.noted:
            ops.append({"op": "tool_note", "call": call, "text": ""})
        for op in ops:
            self._transcript.add(op)
        self._ended.add(call)
        return True

    def _stop_flusher(self) -> None:
        flusher, self._flusher = self._flusher, None
        if flusher is not None:
            thread, stop = flusher
            stop.set()
            if thread is not threading.current_thread():
                thread.join()

    # -- the flusher thread ---------------------------------------------------------------------------------
    def _flush_until(self, stop: threading.Event) -> None:
        while not stop.wait(FLUSH_INTERVAL):
            with self._lock:
                ops = [op for call in self._calls.values() for op in call.take()]
            if not ops:
                continue
            try:
                self._transcript.send_now(ops)
            except Exception:  # a closed comm, say: the code must run on regardless
                _log.exception("python tool live output: sending failed")
