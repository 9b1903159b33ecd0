"""The run widget's logic with a dummy comm: linear bytes for streaming, ≤ 20 updates/s, snapshots, buttons."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import dummy_comm as dummy
import pytest
from agent_helpers import copying_stream_fn
from session_helpers import DiskFull

from pi_notebook.ai import AssistantMessage, Model
from pi_notebook.ai.messages import text_of
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message
from pi_notebook.notebook import Run
from pi_notebook.notebook.widget._view import FLUSH_INTERVAL, TranscriptWidget
from pi_notebook.session import AgentSession, SessionStore, Settings
from pi_notebook.testing import FaultServer

pytestmark = pytest.mark.usefixtures("dummy_comm")  # every widget here talks to a dummy comm (conftest)


custom_messages = dummy.custom_messages
streamed_bytes = dummy.custom_bytes


def session_for(text: str, tps: float | None = None) -> AgentSession:
    faux = FauxProvider(tokens_per_second=tps, token_size=(1, 1))
    faux.set_responses([faux_assistant_message(text)])
    return AgentSession(model=faux.model, stream_fn=faux.stream, settings=Settings(compaction={"enabled": False}))


async def stream_through_widget(chars: int, dummy: list[dict[str, Any]]) -> tuple[int, int, float]:
    dummy.clear()
    session = session_for("abcd" * (chars // 4), tps=20_000)
    started = time.monotonic()
    run = Run(session, 1, lambda: session.prompt("go"), label="go")
    await run
    elapsed = time.monotonic() - started
    assert run.view is not None
    return streamed_bytes(dummy), run.view.transcript.sent_batches, elapsed


async def test_bytes_over_the_comm_grow_linearly_with_the_streamed_text(dummy_comm: list[dict[str, Any]]) -> None:
    small_bytes, _, _ = await stream_through_widget(10_000, dummy_comm)
    large_bytes, batches, elapsed = await stream_through_widget(100_000, dummy_comm)
    ratio = large_bytes / small_bytes
    assert 8 < ratio < 12, (small_bytes, large_bytes)
    assert large_bytes < 100_000 * 1.2  # the text itself plus a small per-batch overhead
    assert batches / elapsed <= 1 / FLUSH_INTERVAL + 1  # coalesced: at most ~20 updates a second


async def test_a_new_view_gets_one_snapshot_of_everything_so_far(dummy_comm: list[dict[str, Any]]) -> None:
    session = session_for("hello world " * 20)
    run = Run(session, 1, lambda: session.prompt("go"), label="go")
    await run
    assert run.view is not None
    widget = run.view.transcript
    dummy_comm.clear()
    widget._on_frontend_message(widget, {"type": "hello"}, [])
    await asyncio.sleep(0)  # the reply is handed to the loop like any comm-thread callback
    [snapshot] = [m for m in custom_messages(dummy_comm) if m["type"] == "snapshot"]
    appended = "".join(op["text"] for op in snapshot["ops"] if op["op"] == "append")
    assert appended == "hello world " * 20
    assert [op["label"] for op in snapshot["ops"] if op["op"] == "event"][-2:] == ["agent_end", "agent_settled"]


def test_consecutive_appends_are_merged_in_a_batch(dummy_comm: list[dict[str, Any]]) -> None:
    widget = TranscriptWidget()
    dummy_comm.clear()
    for piece in ("a", "b", "c"):
        widget.add({"op": "append", "id": 0, "text": piece})
    widget.add({"op": "event", "t": 1, "label": "x", "detail": ""})
    widget.add({"op": "append", "id": 0, "text": "d"})
    widget.flush()
    [batch] = custom_messages(dummy_comm)
    assert batch["ops"] == [
        {"op": "append", "id": 0, "text": "abc"},
        {"op": "event", "t": 1, "label": "x", "detail": ""},
        {"op": "append", "id": 0, "text": "d"},
    ]


async def test_stop_clicked_on_another_thread_is_handed_to_the_loop(
    dummy_comm: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    aborts_on: list[int] = []
    original = Run.abort

    def recording_abort(self: Run) -> None:
        aborts_on.append(threading.get_ident())
        original(self)

    monkeypatch.setattr(Run, "abort", recording_abort)  # the button is wired to it as the run is built
    session = session_for("word " * 5000, tps=2000)
    run = Run(session, 1, lambda: session.prompt("go"), label="go")
    await run.wait_for("message_update")
    assert run.view is not None
    clicker = threading.Thread(target=run.view.stop_button.click)
    clicker.start()
    clicker.join()
    report = await run
    assert aborts_on == [threading.get_ident()]  # ran on the loop's thread, not the clicking one
    assert report.aborted
    assert run.view.stop_button.disabled
    assert run.view.stop_button.description == "Stopped"


async def test_stop_puts_queued_messages_back_in_the_input_box(dummy_comm: list[dict[str, Any]]) -> None:
    session = session_for("word " * 5000, tps=2000)
    run = Run(session, 1, lambda: session.prompt("go"), label="go")
    await run.wait_for("message_update")
    await session.steer("first")
    await session.follow_up("second")
    assert run.view is not None
    assert run.view.transcript.queue == ["steer: first", "follow-up: second"]
    run.view.input.value = "draft"
    run.abort()
    await run
    assert run.view.input.value == "first\n\nsecond\n\ndraft"
    assert run.view.transcript.queue == []


async def test_a_stop_that_arrives_twice_takes_the_queue_back_once(dummy_comm: list[dict[str, Any]]) -> None:
    # The widget's Stop reaches the run twice (its comm, and the JupyterLab extension's forwarded click).
    session = session_for("word " * 5000, tps=2000)
    run = Run(session, 1, lambda: session.prompt("go"), label="go")
    await run.wait_for("message_update")
    await session.follow_up("later")
    run.abort()
    run.abort()
    await run
    assert run.labels.count("queue_update") == 2  # the follow-up queued, then taken back once
    assert run.view is not None and run.view.input.value == "later"


async def test_the_input_box_steers_and_follows_up(dummy_comm: list[dict[str, Any]]) -> None:
    session = session_for("word " * 5000, tps=2000)
    run = Run(session, 1, lambda: session.prompt("go"), label="go")
    assert run.view is not None
    run.view.input.value = "  go left  "
    run.view.steer_button.click()
    await run.wait_for("queue_update")
    assert session.queue.steering == ["go left"]
    assert run.view.input.value == ""
    run.abort()
    await run


async def test_retry_countdown_and_cancel_button_follow_the_retry(dummy_comm: list[dict[str, Any]]) -> None:
    faux = FauxProvider(token_size=(1, 1))
    faux.set_responses([faux_assistant_message([], "error", "503 service unavailable"), faux_assistant_message("ok")])
    settings = Settings(retry={"base_delay_ms": 60_000}, compaction={"enabled": False})
    session = AgentSession(model=faux.model, stream_fn=faux.stream, settings=settings)
    run = Run(session, 1, lambda: session.prompt("go"), label="go")
    await run.wait_for("auto_retry_start")
    assert run.view is not None
    transcript = run.view.transcript
    assert transcript.state == "retrying"
    assert transcript.retry_deadline == pytest.approx(time.time() * 1000 + 60_000, abs=2000)
    assert "503 service unavailable" in transcript.retry_text
    assert run.view.cancel_retry_button.layout.display is None
    run.view.cancel_retry_button.click()
    report = await run
    assert transcript.retry_deadline == 0
    assert run.view.cancel_retry_button.layout.display == "none"
    assert "Retry cancelled" in report.markdown


def error_blocks(ops: Sequence[Mapping[str, Any]]) -> list[str]:
    """The errors the transcript draws (one red block each)."""
    return [op["error"] for op in ops if op["op"] == "status" and op["stop_reason"] == "error"]


async def test_a_server_that_is_down_shows_one_error_that_says_how_often_it_was_retried(
    dummy_comm: list[dict[str, Any]],
) -> None:
    """Issue 37 item 15: with the server down, each turn retry's failed reply was drawn as a red block of its own
    (four for the default three retries), in the widget and in the report."""
    model = Model(
        id="local", api="openai-completions", provider="openai-compatible", base_url=FaultServer.refused_url()
    )
    settings = Settings(retry={"base_delay_ms": 1, "provider": {"max_retries": 0}}, compaction={"enabled": False})
    session = AgentSession(model=model, settings=settings)
    run = Run(session, 1, lambda: session.prompt("hello?"), label="hello?")
    report = await run
    assert run.view is not None
    [error] = error_blocks(run.view.transcript.ops)
    assert error.startswith("Connection error") and error.endswith(" (retried 3x)"), error
    assert report.text.count("assistant: [error: Connection error") == 1  # the transcript; the log says each
    assert "(retried 3x)]" in report.text and report.markdown.count("**assistant:**") == 1
    assert len([m for m in run.messages if isinstance(m, AssistantMessage)]) == 4  # all kept (the receipt counts them)


async def test_a_cancelled_retry_shows_its_error_once(dummy_comm: list[dict[str, Any]]) -> None:
    faux = FauxProvider(token_size=(1, 1))
    faux.set_responses([faux_assistant_message([], "error", "503 service unavailable")])
    settings = Settings(retry={"base_delay_ms": 60_000}, compaction={"enabled": False})
    session = AgentSession(model=faux.model, stream_fn=faux.stream, settings=settings)
    run = Run(session, 1, lambda: session.prompt("go"), label="go")
    await run.wait_for("auto_retry_start")
    assert run.view is not None
    assert error_blocks(run.view.transcript.ops) == []  # the countdown says it meanwhile
    run.view.cancel_retry_button.click()
    await run
    assert error_blocks(run.view.transcript.ops) == ["503 service unavailable (retry cancelled)"]


@pytest.mark.parametrize(
    ("replies", "final"),
    [
        (["error", "error"], "error"),  # the retry fails too: the run ends on an error reply
        (["error", "ok"], "settled"),  # the retry answers
    ],
)
async def test_a_run_whose_last_reply_failed_ends_in_the_error_state(
    dummy_comm: list[dict[str, Any]], replies: list[str], final: str
) -> None:
    faux = FauxProvider(token_size=(1, 1))
    faux.set_responses(
        [
            faux_assistant_message([], "error", "503 service unavailable")
            if r == "error"
            else faux_assistant_message(r)
            for r in replies
        ]
    )
    settings = Settings(retry={"base_delay_ms": 1, "max_retries": 1}, compaction={"enabled": False})
    session = AgentSession(model=faux.model, stream_fn=faux.stream, settings=settings)
    run = Run(session, 1, lambda: session.prompt("go"), label="go")
    report = await run
    assert run.view is not None
    assert (run.view.transcript.state, run.state()["state"]) == (final, final)
    assert run.aborted is False
    assert f"\n**Run 1** — {final}\n" in report.markdown  # the saved report and the repr say so too
    assert f"<Run 1 ({final}):" in repr(run)


async def test_a_failed_session_write_shows_in_the_widget_event_log(
    dummy_comm: list[dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SessionStore(tmp_path / "s.jsonl")
    DiskFull(monkeypatch.setattr, store._fd).full = True
    faux = FauxProvider(token_size=(1, 1))
    faux.set_responses([faux_assistant_message("still answered")])
    session = AgentSession(
        model=faux.model, stream_fn=faux.stream, store=store, settings=Settings(compaction={"enabled": False})
    )
    report = await Run(session, 1, lambda: session.prompt("go"), label="go")
    events = [op for m in custom_messages(dummy_comm) for op in m.get("ops", []) if op["op"] == "event"]
    failed = [op["detail"] for op in events if op["label"] == "session_write_failed"]
    assert failed == [
        f"Could not write session file {store.path}: No space left on device (ENOSPC); {n} kept in memory, "
        "retried with the next write"
        for n in ("1 entry", "2 entries", "3 entries")  # the model_change entry, the prompt, the reply
    ]
    assert "still answered" in report.markdown and "`session_write_failed`" in report.markdown


async def test_a_stream_handing_a_new_partial_per_event_still_fills_the_live_reply(
    dummy_comm: list[dict[str, Any]],
) -> None:
    text = "a reply streamed as a fresh object per event"
    session = AgentSession(
        model=FauxProvider().model, stream_fn=copying_stream_fn(text), settings=Settings(compaction={"enabled": False})
    )
    run = Run(session, 1, lambda: session.prompt("go"), label="go")
    await run
    assert run.view is not None
    ops = run.view.transcript.ops
    [reply] = [op for op in ops if op["op"] == "message" and op["role"] == "assistant"]
    appended = "".join(op["text"] for op in ops if op["op"] == "append" and op["id"] == reply["id"])
    assert appended == text
    [status] = [op for op in ops if op["op"] == "status"]
    assert status["id"] == reply["id"]
    assert status["stop_reason"] == "stop"
    assert [m.role for m in run.transcript] == ["user", "assistant"]
    assert text_of(run.transcript[-1]) == text  # type: ignore[arg-type]


async def test_the_stop_button_and_the_view_carry_the_classes_the_lab_extension_looks_for() -> None:
    from pi_notebook.notebook.widget._protocol import STOP_CLASS

    session = session_for("hi")
    run = Run(session, 7, lambda: session.prompt("go"), label="go")
    await run
    assert run.view is not None
    assert STOP_CLASS == "pi-run-stop"
    assert STOP_CLASS in run.view.stop_button._dom_classes
    assert {"pi-run-view", "pi-run-7"} <= set(run.view._dom_classes)
