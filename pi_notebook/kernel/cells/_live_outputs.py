"""The outputs of a cell the agent runs, as nbformat outputs, sent to the notebook's page while the code runs.

The cell's code runs on the kernel's main thread (``_cell_run``), which blocks the event loop, so its outputs cannot
go through anything that needs the loop. :class:`CellOutputs` listens to the code's
:class:`~pi_notebook.tools.PythonEvent` stream (the same one the run widget's live panel reads), turns it into the
outputs a cell would have (``stream`` outputs merged per name as Jupyter does, ``display_data``, ``clear_output()``
taking them away), and a flusher thread sends what is new to the page every :data:`FLUSH_INTERVAL_S` seconds as a
``run_output`` notification (the comm's send is thread-safe). The code's value and its error are added when it ends;
the ``run_end`` notification then carries the cell's complete outputs, so a page that connected midway (a reload)
ends up exact.

Keys: what goes to the page has every key ``keys`` names redacted (``***``), as the tool's result has: the outputs
sent meanwhile (a stream's text through a :class:`~pi_notebook.session.StreamRedactor`, so a key written in two
pieces, cut anywhere, never shows: the end that could begin a key waits for the next piece; a display's every
string) and the complete outputs at the end (:attr:`CellOutputs.outputs`). So the cell in the page, and the
``.ipynb`` the page saves, never hold one.

Memory and cost: a stream output keeps at most its last :data:`MAX_STREAM_CHARS` characters (a print loop cannot
fill the kernel); what goes to the page meanwhile is sent once and not kept. A write costs an append to a list (the
code's thread waits for the listener): stream text is joined only when it is sent or the cell ends.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any

from ...session import StreamRedactor, redact_value
from .._exec import PythonEvent
from .._kernel import add_python_listener

__all__ = ["FLUSH_INTERVAL_S", "MAX_STREAM_CHARS", "CellOutputs"]

FLUSH_INTERVAL_S = 0.05
"""How often the outputs written meanwhile are sent to the page (at most 20 times a second, as the run widget)."""
MAX_STREAM_CHARS = 1_000_000
"""A stream output of the cell keeps its last this many characters."""

Send = Callable[[dict[str, Any]], object]


class _Stream:
    """A stream output's text as pieces, joined when asked; ``limit`` keeps only the last characters."""

    __slots__ = ("limit", "name", "pieces", "size")

    def __init__(self, name: str, limit: int | None) -> None:
        self.name = name
        self.limit = limit
        self.pieces: list[str] = []
        self.size = 0

    def write(self, text: str) -> None:
        self.pieces.append(text)
        self.size += len(text)
        if self.limit is not None and self.size > 2 * self.limit:
            self.pieces = [self.text()]
            self.size = len(self.pieces[0])

    def text(self) -> str:
        joined = "".join(self.pieces)
        return joined[-self.limit :] if self.limit is not None else joined


Output = dict[str, Any] | _Stream


def _materialise(outputs: list[Output]) -> list[dict[str, Any]]:
    return [
        {"output_type": "stream", "name": item.name, "text": item.text()} if isinstance(item, _Stream) else item
        for item in outputs
    ]


class CellOutputs:
    """One running cell's outputs (see the module docstring). Use as a context manager around the code's run;
    ``send(message)`` gets each ``run_output`` message (from the flusher thread)."""

    def __init__(self, call_id: str, cell_id: str, send: Send, keys: Sequence[str] = ()) -> None:
        self.call_id = call_id
        self.cell_id = cell_id
        self.keys = list(keys)
        """Redacted from everything sent (see the module docstring)."""
        self._open: tuple[str, StreamRedactor] | None = None  # the stream being sent, what it holds back (flusher)
        self._outputs: list[Output] = []
        self._send = send
        self._lock = threading.Lock()
        self._pending: list[Output] = []
        self._clear = False
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._unlisten: Callable[[], None] | None = None

    @property
    def outputs(self) -> list[dict[str, Any]]:
        """The cell's outputs so far, as nbformat outputs, keys redacted (a new list)."""
        with self._lock:
            outputs = _materialise(self._outputs)
        return self.redacted(outputs)

    def redacted(self, outputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``outputs`` (nbformat outputs) with :attr:`keys` redacted from every string in them."""
        redacted: list[dict[str, Any]] = redact_value(outputs, self.keys)
        return redacted

    def __enter__(self) -> CellOutputs:
        self._unlisten = add_python_listener(self._on_event)
        self._thread = threading.Thread(target=self._flush_loop, name="pi-cell-outputs", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if self._unlisten is not None:
            self._unlisten()
        self._stopped.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()

    # -- what the code does (its thread) ---------------------------------------------------------------------
    def _on_event(self, event: PythonEvent) -> None:
        if event.call_id != self.call_id:
            return
        if event.kind in ("stdout", "stderr"):
            self.write(event.kind, event.text)
        elif event.kind == "display" and event.data is not None:
            metadata = dict(event.metadata or {})
            self.add({"output_type": "display_data", "data": dict(event.data), "metadata": metadata})
        elif event.kind == "clear":
            with self._lock:
                self._outputs, self._pending, self._clear = [], [], True
        else:
            return
        self._wake.set()

    def write(self, name: str, text: str) -> None:
        """Text on a stream: it joins the cell's last output when that is the same stream."""
        with self._lock:
            for outputs, limit in ((self._outputs, MAX_STREAM_CHARS), (self._pending, None)):
                last = outputs[-1] if outputs else None
                if not isinstance(last, _Stream) or last.name != name:
                    last = _Stream(name, limit)
                    outputs.append(last)
                last.write(text)

    def add(self, output: dict[str, Any]) -> None:
        """Append an output that is not a stream's text."""
        with self._lock:
            self._outputs.append(output)
            self._pending.append(output)

    # -- sending (the flusher thread) --------------------------------------------------------------------------
    def _flush_loop(self) -> None:
        while True:
            self._wake.wait()
            if self._stopped.is_set():
                return
            self._wake.clear()
            self._flush()
            if self._stopped.wait(FLUSH_INTERVAL_S):  # batch what comes meanwhile
                return

    def _flush(self) -> None:
        with self._lock:
            pending, clear = self._pending, self._clear
            self._pending, self._clear = [], False
        if pending or clear:
            message = {"type": "cells", "op": "run_output", "cell_id": self.cell_id, "clear": clear}
            self._send({**message, "outputs": self._sendable(pending, clear)})

    def _sendable(self, pending: list[Output], clear: bool) -> list[dict[str, Any]]:
        """``pending`` with keys redacted; a stream's end that could begin a key is held back until its next piece,
        or sent before the next output that is not that stream's."""
        if clear:
            self._open = None  # what it held back was cleared with the rest
        sent: list[dict[str, Any]] = []
        for item in pending:
            if isinstance(item, _Stream) and self._open is not None and self._open[0] == item.name:
                text = self._open[1].feed(item.text())
            elif isinstance(item, _Stream):
                self._close_stream(sent)
                self._open = (item.name, StreamRedactor(lambda: self.keys))
                text = self._open[1].feed(item.text())
            else:
                self._close_stream(sent)
                sent.append(redact_value(item, self.keys))
                continue
            if text:
                sent.append({"output_type": "stream", "name": item.name, "text": text})
        return sent

    def _close_stream(self, sent: list[dict[str, Any]]) -> None:
        if self._open is not None:
            name, redactor = self._open
            self._open = None
            if held := redactor.flush():
                sent.append({"output_type": "stream", "name": name, "text": held})
