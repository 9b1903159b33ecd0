"""The ``python`` tool's live output in the run widget, with a dummy comm: prints reach the tool's panel while the
code still runs (the loop is blocked meanwhile), rich outputs and the stuck note travel as operations, the panel's
operations stay bounded under a print flood, and output goes only to the run whose task runs the code."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import dummy_comm as dummy
import pytest

from pi_notebook.agent import AgentToolResult
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
from pi_notebook.kernel import KERNEL, PythonEvent, python_tool
from pi_notebook.notebook import Run
from pi_notebook.notebook.widget._live import MAX_DISPLAYS, LiveOutput, current_run
from pi_notebook.notebook.widget._protocol import TOOL_TAIL_CHARS
from pi_notebook.notebook.widget._view import TranscriptWidget
from pi_notebook.session import AgentSession

pytestmark = pytest.mark.timeout(60)
emit = KERNEL.listeners.emit


class Watched(list[Any]):
    """The dummy comm's sent messages; ``until(predicate)`` gives an event set once a sent op matches."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[tuple[Callable[[dict[str, Any]], bool], threading.Event]] = []

    def until(self, predicate: Callable[[dict[str, Any]], bool]) -> threading.Event:
        event = threading.Event()
        self.waits.append((predicate, event))
        return event

    def append(self, message: Any) -> None:
        super().append(message)
        for op in ops_of([message]):
            for predicate, event in self.waits:
                if predicate(op):
                    event.set()


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> Watched:
    dummy.install(monkeypatch.setattr)
    watched = Watched()
    monkeypatch.setattr(dummy.DummyComm, "sent", watched)
    return watched


def ops_of(sent: list[Any]) -> list[dict[str, Any]]:
    return [op for message in dummy.custom_messages(sent) for op in message.get("ops", [])]


def python_session(code: str, namespace: dict[str, Any], call_id: str = "call-live") -> AgentSession:
    faux = FauxProvider(token_size=(1, 1))
    call = faux_tool_call("python", {"code": code}, id=call_id)
    faux.set_responses([faux_assistant_message([call], "toolUse"), faux_assistant_message("done")])
    return AgentSession(
        model=faux.model,
        stream_fn=faux.stream,
        tools=[python_tool(namespace=namespace)],
        settings={"tools": {"approval": "auto"}, "compaction": {"enabled": False}},
    )


async def test_prints_reach_the_panel_while_the_code_still_runs(sent: Watched) -> None:
    """The code waits until its first print was sent to the browser: it can only end if the live path works
    while it blocks the loop."""
    seen = sent.until(lambda op: op["op"] == "tool_append" and "first line" in op["text"])
    code = "print('first line')\nif not seen.wait(20):\n    raise RuntimeError('the print never reached the panel')\n"
    code += "print('second line')"
    session = python_session(code, {"seen": seen})
    run = Run(session, 1, lambda: session.prompt("go"), label="go")
    await run
    ops = ops_of(sent)
    kinds = [op["op"] for op in ops if op.get("call") == "call-live"]
    assert kinds[0] == "tool" and kinds[-1] == "tool_end"
    appended = "".join(op["text"] for op in ops if op["op"] == "tool_append")
    assert appended == "first line\nsecond line\n"
    [end] = [op for op in ops if op["op"] == "tool_end"]
    assert end["text"] == "first line\nsecond line" and end["is_error"] is False  # the result as before
    assert run.view is not None
    [logged] = [op for op in run.view.transcript.ops if op["op"] == "tool_append"]
    assert logged["text"] == ""  # superseded by the result in the log


async def test_a_print_flood_sends_and_keeps_only_the_panels_tail(sent: Watched) -> None:
    """10 MB written in 20 pieces within a few flushes: each flush sends at most the panel's tail."""
    seen = sent.until(lambda op: op["op"] == "tool_append" and op["total"] >= 10_000_000)
    code = (
        "import sys\nfor i in range(20):\n    sys.stdout.write(str(i % 10) * 500_000)\n"
        "if not seen.wait(20):\n    raise RuntimeError('no live output')\n"
    )
    session = python_session(code, {"seen": seen})
    run = Run(session, 1, lambda: session.prompt("go"), label="go")
    await run
    appends = [op for op in ops_of(sent) if op["op"] == "tool_append"]
    assert all(len(op["text"]) <= TOOL_TAIL_CHARS for op in appends)
    assert sum(len(op["text"]) for op in appends) <= len(appends) * TOOL_TAIL_CHARS < 10_000_000 / 4
    assert appends[-1]["total"] == 10_000_000
    assert appends[-1]["text"] == "9" * TOOL_TAIL_CHARS
    assert dummy.custom_bytes(sent) < 10_000_000 / 4 + 200_000  # the result's own tail comes on top


def test_the_operation_log_keeps_one_bounded_output_per_call(sent: Watched) -> None:
    widget = TranscriptWidget()
    widget.add({"op": "tool", "call": "a", "name": "python", "args": "{}"})
    total = 0
    for _ in range(200):
        total += 10_000
        widget.add({"op": "tool_append", "call": "a", "text": "x" * 10_000, "total": total})
    widget.add({"op": "tool", "call": "b", "name": "bash", "args": "{}"})
    for i in range(200):
        widget.add({"op": "tool_output", "call": "b", "text": f"tail {i}"})
    logged = [op for op in widget.ops if op["op"] in ("tool_append", "tool_output")]
    assert [(op["op"], op["call"], len(op["text"])) for op in logged] == [
        ("tool_append", "a", TOOL_TAIL_CHARS),
        ("tool_output", "b", len("tail 199")),
    ]
    assert logged[0]["total"] == total  # type: ignore[typeddict-item]  # a tool_append op
    widget.add({"op": "tool_end", "call": "a", "text": "result", "is_error": False})
    assert logged[0]["text"] == ""
    widget.flush()
    [batch] = [m for m in dummy.custom_messages(sent) if m["type"] == "batch"]
    [append] = [op for op in batch["ops"] if op["op"] == "tool_append"]
    assert len(append["text"]) == TOOL_TAIL_CHARS and append["total"] == total  # a batch's appends joined


class Live:
    """A :class:`LiveOutput` on a widget, fed events as the python tool would, in a run's context."""

    def __init__(self, key: str = "run-a", keys: Callable[[], list[str]] = list) -> None:
        self.widget = TranscriptWidget()
        self.live = LiveOutput(key, self.widget, keys)
        self.key = key

    def start(self, call: str, key: str | None = None) -> None:
        token = current_run.set(self.key if key is None else key)
        try:
            emit(PythonEvent(call, "start", "code"))
        finally:
            current_run.reset(token)

    def ops(self) -> list[dict[str, Any]]:
        self.widget.flush()
        return [dict(op) for op in self.widget.ops]


def test_rich_outputs_the_stuck_note_and_the_value(sent: Watched) -> None:
    live = Live()
    live.live.expect("c1")
    live.start("c1")
    emit(PythonEvent("c1", "display", "<Figure>", {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"}))
    emit(PythonEvent("c1", "display", "df", {"text/html": "<table></table>", "text/plain": "df"}))
    emit(PythonEvent("c1", "display", "x", {"application/json": {"a": 1}}))  # nothing the panel shows
    emit(PythonEvent("c1", "stuck", "waiting for the code to return to Python"))
    emit(PythonEvent("c1", "end", "interrupted"))
    value = {"data": {"text/html": "<b>v</b>", "text/plain": "v"}}
    result = AgentToolResult(content="Out: v", details={"result": value})
    live.live.finish("c1", result)
    ops = [op for op in live.ops() if op["op"] != "tool"]
    assert ops == [
        {"op": "tool_display", "call": "c1", "mime": "image/png", "data": "iVBORw0KGgo="},
        {"op": "tool_display", "call": "c1", "mime": "text/html", "data": "<table></table>"},
        {"op": "tool_note", "call": "c1", "text": "waiting for the code to return to Python"},
        {"op": "tool_note", "call": "c1", "text": ""},  # cleared when the code returned
        {"op": "tool_display", "call": "c1", "mime": "text/html", "data": "<b>v</b>"},  # the value's rich form
    ]
    live.live.close()


def test_rich_outputs_beyond_the_limit_are_counted_not_sent(sent: Watched) -> None:
    live = Live()
    live.live.expect("c1")
    live.start("c1")
    for i in range(MAX_DISPLAYS + 5):
        emit(PythonEvent("c1", "display", str(i), {"text/plain": str(i)}))
    emit(PythonEvent("c1", "end", "ok"))
    ops = live.ops()
    assert len([op for op in ops if op["op"] == "tool_display"]) == MAX_DISPLAYS
    assert "later ones are not shown" in "".join(op["text"] for op in ops if op["op"] == "tool_append")
    live.live.close()


def panel_displays(ops: list[dict[str, Any]]) -> list[str]:
    """What a panel shows of its rich outputs after ``ops``, as ``toolPanel.ts`` applies them."""
    shown: list[str] = []
    for op in ops:
        if op["op"] == "tool_display":
            shown.append(op["data"])
        elif op["op"] == "tool_clear":
            shown.clear()
    return shown


def test_clear_output_clears_the_panel_and_an_animation_loop_stays_bounded(sent: Watched) -> None:
    # clear_output() then a frame, 30 times (more than MAX_DISPLAYS: the limit counts from the last clear): the
    # panel ends with the last frame, whatever batches the flusher made, and the log holds no cleared frame.
    live = Live()
    live.live.expect("c1")
    live.start("c1")
    emit(PythonEvent("c1", "display", "before", {"text/plain": "before"}))
    for i in range(MAX_DISPLAYS + 10):
        emit(PythonEvent("c1", "clear"))
        emit(PythonEvent("c1", "display", f"frame {i}", {"text/plain": f"frame {i}" + "." * 10_000}))
    emit(PythonEvent("c1", "end", "ok"))
    logged = live.ops()
    last = f"frame {MAX_DISPLAYS + 9}" + "." * 10_000
    assert panel_displays(logged) == [last]
    assert [op["data"] for op in logged if op["op"] == "tool_display" and op["data"]] == [last]  # memory freed
    assert panel_displays(ops_of(sent)) == [last]  # what the browser got, batch by batch
    assert "not shown" not in "".join(op.get("text", "") for op in logged)
    live.live.close()


def test_the_operation_log_frees_cleared_displays(sent: Watched) -> None:
    # Displays already sent when clear_output() comes stay in the log as empty ones (a snapshot still ends with the
    # panel cleared), so a long animation loop's frames do not pile up in the kernel.
    widget = TranscriptWidget()
    widget.add({"op": "tool", "call": "a", "name": "python", "args": "{}"})
    for frame in range(100):
        widget.add({"op": "tool_clear", "call": "a"})
        widget.add({"op": "tool_display", "call": "a", "mime": "image/png", "data": f"{frame:03d}" + "A" * 100_000})
        widget.flush()
    logged: list[dict[str, Any]] = [dict(op) for op in widget.ops]
    assert panel_displays(logged) == ["099" + "A" * 100_000]
    assert sum(len(op.get("data", "")) for op in logged) == 100_003
    assert panel_displays(ops_of(sent)) == ["099" + "A" * 100_000]  # what was sent is unchanged


def test_clear_output_before_any_display_sends_nothing(sent: Watched) -> None:
    live = Live()
    live.live.expect("c1")
    live.start("c1")
    emit(PythonEvent("c1", "clear"))
    emit(PythonEvent("c1", "display", "one", {"text/plain": "one"}))
    emit(PythonEvent("c1", "end", "ok"))
    assert [op["op"] for op in live.ops() if op["op"] != "tool"] == ["tool_display"]
    live.live.close()


def test_output_goes_only_to_the_run_whose_task_runs_the_code(sent: Watched) -> None:
    """Two runs replaying one recording have the same call ids: the context decides."""
    mine, other = Live("run-a"), Live("run-b")
    for live in (mine, other):
        live.live.expect("same-id")
    mine.start("same-id")  # in run-a's context
    emit(PythonEvent("same-id", "stdout", "hello\n"))
    emit(PythonEvent("same-id", "end", "ok"))
    assert [op["text"] for op in mine.ops() if op["op"] == "tool_append"] == ["hello\n"]
    assert other.ops() == []
    other.start("unexpected")  # a call this run did not start
    emit(PythonEvent("unexpected", "stdout", "x"))
    emit(PythonEvent("unexpected", "end", "ok"))
    assert other.ops() == []
    for live in (mine, other):
        live.live.close()
    mine.live.expect("after")
    mine.start("after")  # closed: no longer listening
    emit(PythonEvent("after", "stdout", "late"))
    assert [op for op in mine.ops() if op.get("call") == "after"] == []


def test_a_display_leaves_the_kernel_with_the_sessions_keys_redacted(sent: Watched) -> None:
    key = "sk-test-0123456789abcdefXYZ"
    live = Live(keys=lambda: [key])
    live.live.expect("c1")
    live.start("c1")
    emit(PythonEvent("c1", "display", "k", {"text/html": f"<b>{key}</b>", "text/plain": key}))
    emit(PythonEvent("c1", "end", "ok"))
    assert [op for op in live.ops() if op["op"] == "tool_display"] == [
        {"op": "tool_display", "call": "c1", "mime": "text/html", "data": "<b>***</b>"}
    ]
    live.live.close()
