"""Queues, settlement and Stop (PI-SPEC §3.2, §7.1, §7.3, §7.6) with our deliberate differences."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from session_helpers import make_session, reply

from pi_notebook.agent import AgentTool, AgentToolResult
from pi_notebook.ai.messages import text_of
from pi_notebook.ai.providers.faux import faux_assistant_message, faux_tool_call
from pi_notebook.session import SessionBusyError


def gated_tool(gate: asyncio.Event, name: str = "slow") -> AgentTool:
    async def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        await gate.wait()
        return AgentToolResult(content=f"{name} done")

    return AgentTool(name=name, description=name, parameters={"type": "object", "properties": {}}, execute=execute)


def tool_call(name: str = "slow") -> Any:
    return faux_assistant_message([faux_tool_call(name, {}, id="c1")], "toolUse")


def user_texts(session: Any) -> list[str]:
    return [text_of(m) for m in session.messages if m.role == "user"]


async def test_single_prompt_event_order_ends_with_settled() -> None:
    session, rec, _ = make_session([reply("hello")])
    await session.prompt("hi")
    assert rec.labels == [
        "agent_start",
        "turn_start",
        "message_start:user",
        "message_end:user",
        "message_start:assistant:pending",
        "message_end:assistant:stop",
        "turn_end:assistant:stop",
        "agent_end:willRetry=false",
        "agent_settled:aborted=false",
    ]


async def test_settled_handlers_see_the_session_idle() -> None:
    session, _, _ = make_session([reply()])
    seen: list[bool] = []
    session.subscribe(lambda e: seen.append(session.is_idle) if e.type == "agent_settled" else None)
    await session.prompt("hi")
    assert seen == [True]


async def test_prompt_while_busy_raises_and_steer_or_follow_up_queue_instead() -> None:
    gate = asyncio.Event()
    session, rec, faux = make_session(
        [tool_call(), reply("after steer"), reply("after follow-up")], tools=[gated_tool(gate)]
    )
    run = asyncio.create_task(session.prompt("go"))
    await rec.wait_for("tool_execution_start")
    with pytest.raises(SessionBusyError):
        await session.prompt("again")
    await session.steer("steer now")
    await session.follow_up("later")
    assert session.queue == (["steer now"], ["later"])
    gate.set()
    await run
    assert user_texts(session) == ["go", "steer now", "later"]
    assert session.queue == ([], [])
    assert faux.state.call_count == 3
    assert rec.labels.count("agent_settled:aborted=false") == 1


async def test_queue_update_precedes_the_delivered_message_start() -> None:
    gate = asyncio.Event()
    session, rec, _ = make_session([tool_call(), reply()], tools=[gated_tool(gate)])
    run = asyncio.create_task(session.prompt("go"))
    await rec.wait_for("tool_execution_start")
    await session.steer("steer now")
    gate.set()
    await run
    index = rec.labels.index("queue_update:steer=0:follow=0")
    assert rec.labels[index + 1] == "message_start:user"


async def test_all_mode_delivers_queued_steering_in_one_batch() -> None:
    gate = asyncio.Event()
    session, rec, faux = make_session(
        [tool_call(), reply()], tools=[gated_tool(gate)], settings={"steering_mode": "all"}
    )
    run = asyncio.create_task(session.prompt("go"))
    await rec.wait_for("tool_execution_start")
    await session.steer("one")
    await session.steer("two")
    gate.set()
    await run
    assert user_texts(session) == ["go", "one", "two"]
    assert faux.state.call_count == 2


async def test_follow_ups_queued_by_an_agent_end_listener_run_before_settling() -> None:
    session, rec, faux = make_session([reply("first"), reply("second")])
    queued = False

    def on_end(event: Any) -> None:
        nonlocal queued
        if event.type == "agent_end" and not queued:
            queued = True
            session.agent.follow_up("from the listener")

    session.subscribe(on_end)
    await session.prompt("go")
    assert faux.state.call_count == 2
    assert [label for label in rec.labels if label.startswith(("agent_end", "agent_settled"))] == [
        "agent_end:willRetry=false",
        "agent_end:willRetry=false",
        "agent_settled:aborted=false",
    ]


async def test_stop_means_stop_queued_messages_wait_for_the_next_prompt() -> None:
    """Differs from Pi 0.84, which would continue at once to deliver the queued messages."""
    session, rec, faux = make_session([faux_assistant_message("word " * 500), reply("next")], tps=1000)
    run = asyncio.create_task(session.prompt("go"))
    await rec.wait_for("message_update")
    await session.follow_up("queued before the stop")
    await session.abort()
    await run
    assert faux.state.call_count == 1
    assert rec.labels[-1] == "agent_settled:aborted=true"
    assert session.queue.follow_up == ["queued before the stop"]
    assert session.agent.has_queued_messages()
    await session.prompt("new prompt")
    assert user_texts(session) == ["go", "new prompt", "queued before the stop"]
    assert session.queue == ([], [])


async def test_clear_queue_hands_back_the_texts_and_nothing_is_delivered() -> None:
    session, rec, _faux = make_session([faux_assistant_message("word " * 500), reply("next")], tps=1000)
    run = asyncio.create_task(session.prompt("go"))
    await rec.wait_for("message_update")
    await session.steer("s")
    await session.follow_up("f")
    snapshot = session.clear_queue()
    await session.abort()
    await run
    assert snapshot == (["s"], ["f"])
    assert not session.agent.has_queued_messages()
    assert rec.labels[-1] == "agent_settled:aborted=true"


async def test_abort_waits_until_idle_and_persists_the_aborted_reply(tmp_path: Any) -> None:
    from pi_notebook.session import SessionStore, load_session

    store = SessionStore(tmp_path / "s.jsonl")
    session, rec, _ = make_session([faux_assistant_message("word " * 500)], tps=1000, store=store)
    run = asyncio.create_task(session.prompt("go"))
    await rec.wait_for("message_update")
    await session.abort()
    assert session.is_idle
    assert rec.labels.count("agent_end:willRetry=false") == 1
    await run
    stops = [getattr(m, "stop_reason", None) for m in load_session(store.path).messages]
    assert stops == [None, "aborted"]


async def test_abort_when_idle_does_nothing() -> None:
    session, rec, _ = make_session([])
    await session.abort()
    assert rec.events == []
    assert session.is_idle


async def test_exactly_one_settled_per_operation_even_when_continue_is_rejected() -> None:
    session, rec, _ = make_session([reply("done")])
    await session.prompt("go")
    with pytest.raises(RuntimeError, match="Cannot continue from message role: assistant"):
        await session.continue_()
    assert rec.labels.count("agent_settled:aborted=false") == 2


async def test_continue_after_an_abort_is_rejected_until_a_new_message_is_given() -> None:
    session, rec, _ = make_session([faux_assistant_message("word " * 500), reply("resumed")], tps=1000)
    run = asyncio.create_task(session.prompt("go"))
    await rec.wait_for("message_update")
    await session.abort()
    await run
    with pytest.raises(RuntimeError, match="Cannot continue from message role: assistant"):
        await session.continue_()
    await session.follow_up("please go on")
    await session.continue_()
    assert session.messages[-1].content[0].text == "resumed"  # type: ignore[union-attr]


async def test_a_tool_ignoring_its_signal_is_cancelled_after_the_grace() -> None:
    never = asyncio.Event()
    session, rec, _ = make_session(
        [tool_call(), reply("never")], tools=[gated_tool(never)], settings={"timeouts": {"abort_grace_ms": 50}}
    )
    run = asyncio.create_task(session.prompt("go"))
    await rec.wait_for("tool_execution_start")
    await asyncio.wait_for(session.abort(), timeout=5)
    await run
    result = next(e for e in rec.events if e.type == "tool_execution_end")
    assert result.is_error
    assert result.result.content[0].text == "Tool slow did not stop within 50 ms (the run was aborted); cancelled"
    assert rec.labels[-1] == "agent_settled:aborted=true"


async def test_listener_errors_are_logged_and_do_not_break_the_run(caplog: pytest.LogCaptureFixture) -> None:
    session, rec, _ = make_session([reply("fine")])

    def broken(event: Any) -> None:
        raise ValueError("widget bug")

    session.subscribe(broken)
    await session.prompt("go")
    assert rec.labels[-1] == "agent_settled:aborted=false"
    assert "widget bug" in caplog.text
