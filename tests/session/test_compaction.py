"""Compaction (PI-SPEC §7.5): overflow -> compact -> retry once; threshold; manual; abortable; reported."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from session_helpers import error, make_session, reply

from pi_notebook.ai import TextContent, UserMessage
from pi_notebook.ai.providers.faux import faux_assistant_message
from pi_notebook.session import CompactionSummaryMessage, Settings

OVERFLOW = "400 prompt is too long: 213462 tokens > 200000 maximum"


def history(turns: int, size: int = 400) -> list[Any]:
    messages: list[Any] = []
    for i in range(turns):
        messages.append(UserMessage(content=[TextContent(text=f"question {i} " + "x" * size)]))
        messages.append(faux_assistant_message(f"answer {i} " + "y" * size))
    return messages


def compaction_events(rec: Any) -> list[str]:
    out = []
    for event in rec.events:
        if event.type == "compaction_start":
            out.append(f"start:{event.reason}")
        elif event.type == "compaction_end":
            out.append(f"end:{event.reason}:aborted={event.aborted}:retry={event.will_retry}")
    return out


def settings(**compaction: Any) -> dict[str, Any]:
    return {"compaction": {"enabled": True, "keep_recent_tokens": 300, **compaction}}


async def test_overflow_compacts_and_retries_once() -> None:
    session, rec, faux = make_session(
        [error(OVERFLOW), reply("## Goal\nsummary text"), reply("answer after compaction")],
        messages=history(6),
        settings=settings(),
    )
    await session.prompt("one more")
    assert compaction_events(rec) == ["start:overflow", "end:overflow:aborted=False:retry=True"]
    assert faux.state.call_count == 3
    assert isinstance(session.messages[0], CompactionSummaryMessage)
    assert session.messages[0].summary == "## Goal\nsummary text"
    assert session.messages[-1].content[0].text == "answer after compaction"  # type: ignore[union-attr]
    assert not any(getattr(m, "stop_reason", None) == "error" for m in session.messages)
    assert not any(label.startswith("auto_retry") for label in rec.labels)  # overflow is not a retry
    assert rec.labels[-1] == "agent_settled:aborted=false"


async def test_the_model_sees_the_summary_as_a_user_message_and_the_recent_messages_verbatim() -> None:
    seen: list[Any] = []
    session, _, faux = make_session(
        [error(OVERFLOW), reply("the summary"), reply("ok")], messages=history(6), settings=settings()
    )
    inner = faux.stream

    def spy(model: Any, context: Any, options: Any) -> Any:
        seen.append(context)
        return inner(model, context, options)

    session.agent.stream_fn = spy
    await session.prompt("latest question")
    retried = seen[2]
    first = retried.messages[0]
    assert first.role == "user"
    assert first.content[0].text.startswith("The conversation history before this point was compacted")
    assert "the summary" in first.content[0].text
    assert retried.messages[-1].content[0].text == "latest question"
    summarization = seen[1]
    assert "<conversation>" in summarization.messages[0].content[0].text
    assert summarization.system_prompt.startswith("You are a context summarization assistant")


async def test_a_second_overflow_after_recovery_gives_up_with_pis_message() -> None:
    session, rec, faux = make_session(
        [error(OVERFLOW), reply("summary"), error(OVERFLOW)], messages=history(6), settings=settings()
    )
    await session.prompt("go")
    ends = [e for e in rec.events if e.type == "compaction_end"]
    assert ends[-1].error_message == (
        "Context overflow recovery failed after one compact-and-retry attempt. "
        "Try reducing context or switching to a larger-context model."
    )
    assert faux.state.call_count == 3
    assert rec.labels[-1] == "agent_settled:aborted=false"


async def test_threshold_compaction_does_not_retry() -> None:
    big = history(8, size=2000)
    session, rec, faux = make_session(
        [reply("fine"), reply("summary")],
        messages=big,
        settings={"compaction": {"enabled": True, "keep_recent_tokens": 600, "reserve_tokens": 127_000}},
    )
    await session.prompt("go")
    assert compaction_events(rec) == ["start:threshold", "end:threshold:aborted=False:retry=False"]
    assert faux.state.call_count == 2
    assert isinstance(session.messages[0], CompactionSummaryMessage)


async def test_a_failed_summarization_is_reported_and_the_run_settles() -> None:
    session, rec, _faux = make_session(
        [error(OVERFLOW), error("401 invalid_api_key")], messages=history(6), settings=settings()
    )
    await session.prompt("go")
    end = [e for e in rec.events if e.type == "compaction_end"][-1]
    assert end.error_message == "Context overflow recovery failed: Summarization failed: 401 invalid_api_key"
    assert rec.labels[-1] == "agent_settled:aborted=false"


async def test_summarization_retries_transient_errors() -> None:
    session, rec, _faux = make_session(
        [error(OVERFLOW), error("terminated"), reply("summary"), reply("ok")], messages=history(6), settings=settings()
    )
    await session.prompt("go")
    kinds = [e.type for e in rec.events if e.type.startswith("summarization_retry")]
    assert kinds == [
        "summarization_retry_scheduled",
        "summarization_retry_attempt_start",
        "summarization_retry_finished",
    ]
    assert session.messages[-1].content[0].text == "ok"  # type: ignore[union-attr]


async def test_session_abort_stops_a_running_compaction() -> None:
    session, rec, _faux = make_session(
        [error(OVERFLOW), faux_assistant_message("summary " * 2000), reply("never")],
        messages=history(6),
        settings=settings(),
        tps=1000,
    )
    run = asyncio.create_task(session.prompt("go"))
    await rec.wait_for("compaction_start")
    await asyncio.wait_for(session.abort(), timeout=5)
    await run
    assert compaction_events(rec)[-1] == "end:overflow:aborted=True:retry=False"
    assert rec.labels[-1] == "agent_settled:aborted=true"
    assert not isinstance(session.messages[0], CompactionSummaryMessage)


async def test_manual_compaction_replaces_history_and_nothing_to_compact_raises() -> None:
    session, rec, _ = make_session([reply("manual summary")], messages=history(6), settings=settings())
    await session.compact("focus on the questions")
    assert compaction_events(rec) == ["start:manual", "end:manual:aborted=False:retry=False"]
    assert session.messages[0].summary == "manual summary"  # type: ignore[union-attr]
    tiny, _, _ = make_session([], messages=history(1, size=10), settings=settings(keep_recent_tokens=20_000))
    with pytest.raises(ValueError, match="Nothing to compact"):
        await tiny.compact()


async def test_a_failed_manual_compaction_raises_with_the_reason() -> None:
    session, _rec, _ = make_session([error("401 invalid_api_key")], messages=history(6), settings=settings())
    with pytest.raises(RuntimeError, match="Compaction failed: Summarization failed: 401 invalid_api_key"):
        await session.compact()
    assert session.is_idle


async def test_compaction_is_recorded_in_the_session_file(tmp_path: Any) -> None:
    from pi_notebook.session import SessionStore, load_session

    store = SessionStore(tmp_path / "s.jsonl")
    session, _, _ = make_session(
        [reply("a"), reply("b"), reply("c"), reply("summary")],
        store=store,
        settings=Settings(compaction={"keep_recent_tokens": 5}, retry={"enabled": False}),
    )
    for text in ("first " * 20, "second " * 20, "third " * 20):
        await session.prompt(text)
    await session.compact()
    store.close()
    loaded = load_session(store.path)
    assert isinstance(loaded.messages[0], CompactionSummaryMessage)
    assert [m.role for m in loaded.messages] == [m.role for m in session.messages]
