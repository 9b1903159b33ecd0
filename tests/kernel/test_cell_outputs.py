"""A running cell's outputs (``pi_notebook.kernel._cell_outputs``): the python executor's events become the outputs
a cell would have (streams merged per name, displays, ``clear_output()``), sent to the page as they come, with a
bounded tail of a print flood kept."""

from __future__ import annotations

import threading
from typing import Any

from pi_notebook.kernel import KERNEL, PythonEvent, _cell_outputs
from pi_notebook.kernel._cell_outputs import CellOutputs

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


def test_streams_merge_per_name_displays_stay_and_clear_output_takes_them_away() -> None:
    sent: list[dict[str, Any]] = []
    changed = threading.Condition()
    page: list[dict[str, Any]] = []

    def send(message: dict[str, Any]) -> None:
        nonlocal page
        with changed:
            sent.append(message)
            page = apply(page, message)
            changed.notify_all()

    expected = [
        {"output_type": "stream", "name": "stdout", "text": "ab\n"},
        {"output_type": "stream", "name": "stderr", "text": "warn\n"},
        {"output_type": "display_data", "data": {"text/plain": "x"}, "metadata": {"isolated": True}},
    ]

    with CellOutputs("call-1", "cell-a", send) as live:
        emit(PythonEvent("call-1", "stdout", "a"))
        emit(PythonEvent("call-1", "stdout", "b\n"))
        emit(PythonEvent("other-call", "stdout", "not ours\n"))
        emit(PythonEvent("call-1", "stderr", "warn\n"))
        emit(PythonEvent("call-1", "display", "x", {"text/plain": "x"}, {"isolated": True}))
        with changed:  # the flusher sends what was written while the "code" still runs
            assert changed.wait_for(lambda: page == expected, timeout=10)
        assert live.outputs == expected
        emit(PythonEvent("call-1", "clear"))
        emit(PythonEvent("call-1", "stdout", "after\n"))
    assert live.outputs == [{"output_type": "stream", "name": "stdout", "text": "after\n"}]
    assert all(message["op"] == "run_output" and message["cell_id"] == "cell-a" for message in sent)


def test_a_print_flood_keeps_a_bounded_tail(monkeypatch: Any) -> None:
    monkeypatch.setattr(_cell_outputs, "MAX_STREAM_CHARS", 1000)
    with CellOutputs("call-2", "cell-b", lambda message: None) as live:
        for n in range(10_000):
            emit(PythonEvent("call-2", "stdout", f"line {n}\n"))
    [output] = live.outputs
    assert len(output["text"]) == 1000 and output["text"].endswith("line 9999\n")


KEY = "sk-test-0123456789abcdefXYZ"


def test_keys_are_redacted_before_the_page_gets_them_even_a_key_written_in_two_pieces() -> None:
    sent: list[dict[str, Any]] = []
    changed = threading.Condition()
    page: list[dict[str, Any]] = []

    def send(message: dict[str, Any]) -> None:
        nonlocal page
        with changed:
            sent.append(message)
            page = apply(page, message)
            changed.notify_all()

    def shown(expected: list[dict[str, Any]]) -> bool:
        with changed:
            return changed.wait_for(lambda: page == expected, timeout=10)

    with CellOutputs("call-3", "cell-c", send, [KEY]) as live:
        emit(PythonEvent("call-3", "stdout", "line\nkey " + KEY[:10]))  # could begin the key: held back
        assert shown([{"output_type": "stream", "name": "stdout", "text": "line\nkey "}])
        emit(PythonEvent("call-3", "stdout", KEY[10:] + "\n"))
        assert shown([{"output_type": "stream", "name": "stdout", "text": "line\nkey ***\n"}])
        emit(PythonEvent("call-3", "stdout", "half " + KEY[:12]))
        emit(PythonEvent("call-3", "display", "x", {"text/html": f"<b>{KEY}</b>"}, {"note": KEY}))
        assert shown(
            [
                {"output_type": "stream", "name": "stdout", "text": "line\nkey ***\nhalf ***"},
                {"output_type": "display_data", "data": {"text/html": "<b>***</b>"}, "metadata": {"note": "***"}},
            ]
        )
    assert live.outputs == page  # the complete outputs, redacted as they were sent
    assert not [message for message in sent if KEY[:10] in str(message) or KEY[10:] in str(message)]
