"""The outputs of a cell the agent runs, as nbformat outputs, sent to the notebook's page while the code runs.

The cell's code runs on the kernel's main thread (``_cell_run``), which blocks the event loop, so its outputs cannot
go through anything that needs the loop. :class:`CellOutputs` listens to the code's
:class:`~pi_notebook.tools.PythonEvent` stream (the same one the run widget's live panel reads), turns it into the
outputs a cell would have (``stream`` outputs merged per name as Jupyter does, ``display_data``, ``clear_output()``
taking them away), and a flusher thread sends what is new to the page every :data:`FLUSH_INTERVAL_S` seconds as a
``run_output`` notification (the comm's send is thread-safe). The code's value and its error are added when it ends;
the ``run_end`` notification then carries the cell's complete outputs, so a page that connected midway (a reload)
ends up exact.

Memory: a stream output keeps at most its last :data:`MAX_STREAM_CHARS` characters (a print loop cannot fill the
kernel); what goes to the page meanwhile is sent once and not kept.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any

from ..tools import PythonEvent, add_python_listener

__all__ = ["FLUSH_INTERVAL_S", "MAX_STREAM_CHARS", "CellOutputs"]

FLUSH_INTERVAL_S = 0.05
"""How often the outputs written meanwhile are sent to the page (at most 20 times a second, as the run widget)."""
MAX_STREAM_CHARS = 1_000_000
"""A stream output of the cell keeps its last this many characters."""

Send = Callable[[dict[str, Any]], object]


class CellOutputs:
    """One running cell's outputs (see the module docstring). Use as a context manager around the code's run;
    ``send(message)`` gets each ``run_output`` message (from the flusher thread)."""

    def __init__(self, call_id: str, cell_id: str, send: Send) -> None:
        self.call_id = call_id
        self.cell_id = cell_id
        self.outputs: list[dict[str, Any]] = []
        self._send = send
        self._lock = threading.Lock()
        self._pending: list[dict[str, Any]] = []
        self._clear = False
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._unlisten: Callable[[], None] | None = None

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
            self.add({"output_type": "stream", "name": event.kind, "text": event.text})
        elif event.kind == "display" and event.data is not None:
            metadata = dict(event.metadata or {})
            self.add({"output_type": "display_data", "data": dict(event.data), "metadata": metadata})
        elif event.kind == "clear":
            with self._lock:
                self.outputs, self._pending, self._clear = [], [], True
        else:
            return
        self._wake.set()

    def add(self, output: dict[str, Any]) -> None:
        """Append an output (a stream merges into the cell's last output when that is the same stream)."""
        with self._lock:
            for outputs in (self.outputs, self._pending):
                last = outputs[-1] if outputs else None
                if output["output_type"] == "stream" and last is not None and _same_stream(last, output):
                    text = last["text"] + output["text"]
                    last["text"] = text[-MAX_STREAM_CHARS:] if outputs is self.outputs else text
                else:
                    outputs.append(dict(output))

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
            self._send({**message, "outputs": pending})


def _same_stream(last: dict[str, Any], output: dict[str, Any]) -> bool:
    return last.get("output_type") == "stream" and last.get("name") == output.get("name")
