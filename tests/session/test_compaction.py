"""Compaction (PI-SPEC §7.5): overflow -> compact -> retry once; threshold; manual; abortable; reported."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from session_helpers import error, make_session, reply

from pi_notebook.ai import AssistantMessage, StreamOptions, TextContent, ToolCall, ToolResultMessage, UserMessage
from pi_notebook.ai.providers.faux import faux_assistant_message, faux_tool_call
from pi_notebook.session import CompactionSummaryMessage, Settings, plan_compaction

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
    return {"compaction": {"enabled": True, "keep_recent_tokens": 200, **compaction}}


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
        "Try reducing context or switching to a larger-context model. "
        "The prompt that did not fit (about 1 token) left the context; the session file keeps it."
    )
    assert faux.state.call_count == 3
    assert not any(isinstance(m, UserMessage) and m.content[0].text == "go" for m in session.messages)  # type: ignore[union-attr]
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


# --- Pi's plan: split turns, the update prompt, file lists ---------------------------------------------------


def long_turn(calls: list[tuple[str, str]], size: int = 400) -> list[Any]:
    """One turn: a user request, then a tool call and its (large) result per ``calls``, then the answer."""
    messages: list[Any] = [UserMessage(content=[TextContent(text="do the work")])]
    for name, path in calls:
        call = faux_tool_call(name, {"path": path})
        messages.append(faux_assistant_message(call, "toolUse"))
        messages.append(ToolResultMessage(tool_call_id=call.id, tool_name=name, content=[TextContent(text="r" * size)]))
    messages.append(faux_assistant_message("done " + "z" * size))
    return messages


def spy_on(session: Any, faux: Any, *, on_call: Any = None) -> list[Any]:
    """Record (prompt text, max_tokens) of every request; ``on_call(count)`` is told of each."""
    seen: list[Any] = []
    inner = faux.stream

    def spy(model: Any, context: Any, options: Any) -> Any:
        seen.append((context.messages[0].content[0].text, options.max_tokens))
        if on_call is not None:
            on_call(len(seen))
        return inner(model, context, options)

    session.agent.stream_fn = spy
    return seen


def test_a_cut_on_a_reply_splits_its_turn_and_keeps_the_tool_results_with_their_calls() -> None:
    messages = [*history(2), *long_turn([("read", "a.py"), ("edit", "b.py"), ("bash", "c.py")])]
    plan = plan_compaction(messages, keep_recent_tokens=250)  # the cut lands inside the tool calls
    assert plan is not None
    assert plan.summarize == messages[:4]  # the two whole turns before
    assert plan.turn_prefix[0].role == "user"  # the split turn from its request to the cut
    assert plan.keep[0].role == "assistant"
    assert plan.turn_prefix + plan.keep == messages[4:]
    kept_calls = {
        b.id for m in plan.keep if isinstance(m, AssistantMessage) for b in m.content if isinstance(b, ToolCall)
    }
    kept_results = [m.tool_call_id for m in plan.keep if isinstance(m, ToolResultMessage)]
    assert kept_results
    assert all(call_id in kept_calls for call_id in kept_results)
    whole = plan_compaction(messages, keep_recent_tokens=100_000)
    assert whole is None  # everything fits: nothing to compact
    at_turn_start = plan_compaction([*history(4)], keep_recent_tokens=150)
    assert at_turn_start is not None
    assert at_turn_start.turn_prefix == []
    assert at_turn_start.keep[0].role == "user"


async def test_a_split_turn_gets_its_own_summary_with_half_the_budget() -> None:
    session, rec, faux = make_session(
        [reply("history summary"), reply("prefix summary")],
        messages=[*history(2), *long_turn([("read", "a.py"), ("edit", "b.py"), ("bash", "c.py")])],
        settings=settings(keep_recent_tokens=150, reserve_tokens=1000),
    )
    seen = spy_on(session, faux)
    await session.compact()
    assert compaction_events(rec) == ["start:manual", "end:manual:aborted=False:retry=False"]
    (history_prompt, history_budget), (prefix_prompt, prefix_budget) = seen
    assert "question 0" in history_prompt
    assert "do the work" not in history_prompt
    assert "do the work" in prefix_prompt
    assert "This is the PREFIX of a turn that was too large to keep" in prefix_prompt
    assert (history_budget, prefix_budget) == (800, 500)
    summary = session.messages[0]
    assert isinstance(summary, CompactionSummaryMessage)
    assert summary.summary.startswith("history summary\n\n---\n\n**Turn Context (split turn):**\n\nprefix summary")
    assert session.messages[1].role == "assistant"


async def test_a_split_first_turn_has_no_prior_history() -> None:
    session, _, faux = make_session(
        [reply("prefix summary")],
        messages=long_turn([("bash", "x"), ("bash", "y"), ("bash", "z")]),
        settings=settings(keep_recent_tokens=150),
    )
    await session.compact()
    assert faux.state.call_count == 1
    assert session.messages[0].summary == (  # type: ignore[union-attr]
        "No prior history.\n\n---\n\n**Turn Context (split turn):**\n\nprefix summary"
    )


async def test_files_read_and_changed_are_listed_after_the_summary_and_carried_into_the_next() -> None:
    turn = long_turn([("read", "a.py"), ("read", "b.py"), ("edit", "b.py"), ("write", "c.py"), ("bash", "d.py")])
    session, _, faux = make_session(
        [reply("first"), reply("second"), reply("second prefix")],
        messages=[*turn, *history(3)],
        settings=settings(keep_recent_tokens=150),
    )
    seen = spy_on(session, faux)
    await session.compact()
    first = session.messages[0]
    assert isinstance(first, CompactionSummaryMessage)
    assert (first.read_files, first.modified_files) == (["a.py"], ["b.py", "c.py"])  # b.py was read, then edited
    lists = "<read-files>\na.py\n</read-files>\n\n<modified-files>\nb.py\nc.py\n</modified-files>"
    assert first.summary == "first\n\n" + lists
    session.agent.state.messages.extend(long_turn([("read", "e.py"), ("bash", "f"), ("bash", "g")]))
    await session.compact()
    second = session.messages[0]
    assert isinstance(second, CompactionSummaryMessage)
    assert (second.read_files, second.modified_files) == (["a.py", "e.py"], ["b.py", "c.py"])
    update_prompt = seen[1][0]
    assert "<previous-summary>\nfirst\n\n<read-files>" in update_prompt
    assert "incorporate into the existing summary" in update_prompt  # Pi's update prompt


async def test_a_split_turn_right_after_a_compaction_keeps_the_previous_summary() -> None:
    previous = CompactionSummaryMessage(  # as a compaction writes it: the file list appended to the summary
        summary="earlier work\n\n<modified-files>\nold.py\n</modified-files>", modified_files=["old.py"]
    )
    session, _, faux = make_session(
        [reply("prefix summary")],
        messages=[previous, *long_turn([("bash", "x"), ("bash", "y"), ("bash", "z")])],
        settings=settings(keep_recent_tokens=150),
    )
    await session.compact()
    assert faux.state.call_count == 1  # nothing new to fold into the history summary
    summary = session.messages[0]
    assert isinstance(summary, CompactionSummaryMessage)
    assert summary.summary.startswith("earlier work\n\n---\n\n**Turn Context (split turn):**\n\nprefix summary")
    assert summary.summary.endswith("<modified-files>\nold.py\n</modified-files>")
    assert summary.summary.count("<modified-files>") == 1


async def test_a_failed_turn_prefix_summary_fails_the_compaction_and_changes_nothing() -> None:
    messages = [*history(2), *long_turn([("bash", "x"), ("bash", "y"), ("bash", "z")])]
    session, _, _ = make_session(
        [reply("history summary"), error("500 overloaded")],
        messages=list(messages),
        settings={**settings(keep_recent_tokens=150), "retry": {"enabled": False}},
    )
    with pytest.raises(RuntimeError, match="Compaction failed: Turn prefix summarization failed: 500 overloaded"):
        await session.compact()
    assert session.messages == messages


async def test_abort_during_the_turn_prefix_summary_changes_nothing() -> None:
    messages = [*history(2), *long_turn([("bash", "x"), ("bash", "y"), ("bash", "z")])]
    session, rec, faux = make_session(
        [reply("history summary"), reply("prefix " * 200)],
        tps=50,
        messages=list(messages),
        settings=settings(keep_recent_tokens=150),
    )
    prefix_requested = asyncio.Event()

    def on_call(count: int) -> None:
        if count == 2:
            prefix_requested.set()

    spy_on(session, faux, on_call=on_call)
    compaction = asyncio.ensure_future(session.compact())
    await prefix_requested.wait()
    await session.abort()
    with pytest.raises(RuntimeError, match="Compaction cancelled"):
        await compaction
    assert compaction_events(rec)[-1] == "end:manual:aborted=True:retry=False"
    assert session.messages == messages


async def test_summary_requests_carry_the_sessions_key_and_http_settings() -> None:
    session, _, faux = make_session(
        [reply("summary")],
        messages=history(6),
        settings={
            **settings(),
            "retry": {"provider": {"max_retries": 2, "timeout_ms": 1234}},
            "timeouts": {"http_idle_ms": 4321},
        },
        api_key="sk-session-key",
        stream_options=StreamOptions(headers={"x-team": "notebooks"}),
    )
    seen: list[Any] = []
    inner = faux.stream

    def spy(model: Any, context: Any, options: Any) -> Any:
        seen.append(options)
        return inner(model, context, options)

    session.agent.stream_fn = spy
    await session.compact()
    (options,) = seen
    assert options.api_key_value() == "sk-session-key"
    assert dict(options.headers) == {"x-team": "notebooks"}
    assert (options.max_retries, options.timeout_ms, options.idle_timeout_ms) == (2, 1234, 4321)
    assert (options.cache_retention, options.max_tokens) == ("none", 13_107)  # 0.8 x reserve 16384
    assert options.session_id and options.signal is not None
