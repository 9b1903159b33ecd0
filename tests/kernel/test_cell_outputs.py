"""A running cell's outputs (``pi_notebook.kernel.cells._live_outputs``): the python executor's events become the
outputs a cell would have (streams merged per name, displays, ``clear_output()``), sent to the page as they come,
with a bounded tail of a print flood kept."""

from __future__ import annotations

import threading
from typing import Any

from pi_notebook.kernel import KERNEL, PythonEvent
from pi_notebook.kernel.cells import _live_outputs
from pi_notebook.kernel.cells._live_outputs import CellOutputs

emit = KERNEL.listeners.emit


def apply(page: list[dict[str, Any]], message: dict[str, Any]) -> list[dict[str, Any]]:
    """What the page does with a run_output message (JupyterLab's output model merges consecutive streams)."""
    outputs = [] if message["clear"] else [dict(output) for output in page]
    for output in message["outputs"]:
        last = outputs[-1] if outputs else {}
        if output["output_type"] == last.get("output_type") == "stream" and last["name"] == output["name"]:
            last["text"] += output["text"]
        else:
            outputs.append(dict(output))
    return outputs


class Page:
    """The page's side: every run_output message sent (``sent``) and the outputs it shows (``outputs``)."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.outputs: list[dict[str, Any]] = []
        self._changed = threading.Condition()

    def send(self, message: dict[str, Any]) -> None:
        with self._changed:
            self.sent.append(message)
            self.outputs = apply(self.outputs, message)
            self._changed.notify_all()

    def shows(self, expected: list[dict[str, Any]]) -> bool:
        """Whether the page comes to show ``expected`` (waits on what it is sent, up to 10 s)."""
        with self._changed:
            return self._changed.wait_for(lambda: self.outputs == expected, timeout=10)


def test_streams_merge_per_name_displays_stay_and_clear_output_takes_them_away() -> None:
    page = Page()
    expected: list[dict[str, Any]] = [
        {"output_type": "stream", "name": "stdout", "text": "ab\n"},
        {"output_type": "stream", "name": "stderr", "text": "warn\n"},
        {"output_type": "display_data", "data": {"text/plain": "x"}, "metadata": {"isolated": True}},
    ]

    with CellOutputs("call-1", "cell-a", page.send) as live:
        emit(PythonEvent("call-1", "stdout", "a"))
        emit(PythonEvent("call-1", "stdout", "b\n"))
        emit(PythonEvent("other-call", "stdout", "not ours\n"))
        emit(PythonEvent("call-1", "stderr", "warn\n"))
        emit(PythonEvent("call-1", "display", "x", {"text/plain": "x"}, {"isolated": True}))
        assert page.shows(expected)  # the flusher sends what was written while the "code" still runs
        assert live.outputs == expected
        emit(PythonEvent("call-1", "clear"))
        emit(PythonEvent("call-1", "stdout", "after\n"))
    assert live.outputs == [{"output_type": "stream", "name": "stdout", "text": "after\n"}]
    assert all(message["op"] == "run_output" and message["cell_id"] == "cell-a" for message in page.sent)


def test_a_print_flood_keeps_a_bounded_tail(monkeypatch: Any) -> None:
    monkeypatch.setattr(_live_outputs, "MAX_STREAM_CHARS", 1000)
    with CellOutputs("call-2", "cell-b", lambda message: None) as live:
        for n in range(10_000):
            emit(PythonEvent("call-2", "stdout", f"line {n}\n"))
    [output] = live.outputs
    assert len(output["text"]) == 1000 and output["text"].endswith("line 9999\n")


KEY = "sk-test-0123456789abcdefXYZ"


def test_keys_are_redacted_before_the_page_gets_them_even_a_key_written_in_two_pieces() -> None:
    page = Page()
    with CellOutputs("call-3", "cell-c", page.send, [KEY]) as live:
        emit(PythonEvent("call-3", "stdout", "line\nkey " + KEY[:10]))  # could begin the key: held back
        assert page.shows([{"output_type": "stream", "name": "stdout", "text": "line\nkey "}])
        emit(PythonEvent("call-3", "stdout", KEY[10:] + "\n"))
        assert page.shows([{"output_type": "stream", "name": "stdout", "text": "line\nkey ***\n"}])
        emit(PythonEvent("call-3", "stdout", "half " + KEY[:12]))
        emit(PythonEvent("call-3", "display", "x", {"text/html": f"<b>{KEY}</b>"}, {"note": KEY}))
        assert page.shows(
            [
                {"output_type": "stream", "name": "stdout", "text": "line\nkey ***\nhalf ***"},
                {"output_type": "display_data", "data": {"text/html": "<b>***</b>"}, "metadata": {"note": "***"}},
            ]
        )
    assert live.outputs == page.outputs  # the complete outputs, redacted as they were sent
    assert not [message for message in page.sent if KEY[:10] in str(message) or KEY[10:] in str(message)]
