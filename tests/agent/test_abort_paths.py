"""How runs stop: aborts mid-stream and mid-batch (PI-SPEC §2.7 H–J) and the extra checks of §9.9."""

from __future__ import annotations

import asyncio
from typing import Any

from agent_helpers import ToolLog, recording_tool, roles, scripted

from pi_notebook.agent import AgentToolResult, Hooks
from pi_notebook.ai import AbortSignal
from pi_notebook.ai.providers.faux import faux_assistant_message, faux_tool_call


def batch(*calls: tuple[str, str]) -> Any:
    return faux_assistant_message([faux_tool_call(name, {}, id=call_id) for name, call_id in calls], "toolUse")


def abortable_tool(name: str, log: ToolLog, started: asyncio.Event | None = None, *, expect: int = 1) -> Any:
    """Waits until its signal aborts, then raises like Pi's bash ("Command aborted"). ``started`` is set once
    ``expect`` executions are running."""

    async def execute(call_id: str, args: Any, signal: AbortSignal, on_update: Any) -> AgentToolResult:
        log.started.append(call_id)
        if started is not None and len(log.started) >= expect:
            started.set()
        await signal.wait()
        log.finished.append(call_id)
        raise RuntimeError("Command aborted")

    tool = recording_tool(name, log)
    tool.execute = execute
    return tool


async def test_abort_mid_stream_keeps_the_partial_text() -> None:
    agent, rec, _, _ = scripted([faux_assistant_message("word " * 200)], tps=1000)
    run = asyncio.create_task(agent.prompt("go"))
    await rec.wait_for("message_update", count=5)
    agent.abort()
    await run
    final = agent.state.messages[-1]
    assert final.stop_reason == "aborted"  # type: ignore[union-attr]
    assert final.error_message == "Request was aborted"  # type: ignore[union-attr]
    text = final.content[0].text  # type: ignore[union-attr]
    assert 0 < len(text) < len("word " * 200)
    assert rec.labels[-3:] == ["message_end:assistant:aborted", "turn_end", "agent_end"]


async def test_abort_mid_sequential_batch_stops_the_batch_and_records_one_aborted_turn() -> None:
    log = ToolLog()
    started = asyncio.Event()
    agent, rec, faux, _ = scripted(
        [batch(("slow", "A"), ("slow", "B")), faux_assistant_message("never")],
        tools=[abortable_tool("slow", log, started)],
        tool_execution="sequential",
    )
    run = asyncio.create_task(agent.prompt("go"))
    await started.wait()
    agent.steer("typed during the abort")
    agent.abort()
    await run
    assert rec.labels == [
        "agent_start",
        "turn_start",
        "message_start:user",
        "message_end:user",
        "message_start:assistant:pending",
        "message_end:assistant:toolUse",
        "tool_execution_start",
        "tool_execution_end:slow:error",
        "message_start:toolResult",
        "message_end:toolResult",
        "turn_end",
        "turn_start",
        "message_start:assistant:aborted",
        "message_end:assistant:aborted",
        "turn_end",
        "agent_end",
    ]
    assert log.started == ["A"]  # B never ran and got no events
    assert roles(agent.state.messages) == ["user", "assistant", "toolResult", "assistant"]
    assert agent.state.messages[2].content[0].text == "Command aborted"  # type: ignore[union-attr]
    assert faux.state.call_count == 1  # no request was sent just to be thrown away
    assert [m.content[0].text for m in agent.steering_queue] == ["typed during the abort"]  # type: ignore[union-attr]


async def test_abort_mid_parallel_batch_finishes_running_calls_then_records_the_aborted_turn() -> None:
    log = ToolLog()
    both_running = asyncio.Event()
    agent, rec, faux, _ = scripted(
        [batch(("slow", "A"), ("slow", "B")), faux_assistant_message("never")],
        tools=[abortable_tool("slow", log, both_running, expect=2)],
    )
    run = asyncio.create_task(agent.prompt("go"))
    await both_running.wait()
    agent.abort()
    await run
    labels = rec.labels
    ends = [e.tool_call_id for e in rec.events if e.type == "tool_execution_end"]
    assert sorted(ends) == ["A", "B"]
    assert labels[labels.index("tool_execution_end:slow:error") :] == [
        "tool_execution_end:slow:error",
        "tool_execution_end:slow:error",
        "message_start:toolResult",
        "message_end:toolResult",
        "message_start:toolResult",
        "message_end:toolResult",
        "turn_end",
        "turn_start",
        "message_start:assistant:aborted",
        "message_end:assistant:aborted",
        "turn_end",
        "agent_end",
    ]
    assert [m.tool_call_id for m in agent.state.messages if m.role == "toolResult"] == ["A", "B"]  # type: ignore[union-attr]
    assert faux.state.call_count == 1


async def test_abort_during_a_later_preflight_does_not_start_calls_prepared_before_it() -> None:
    log = ToolLog()

    def before(ctx: Any, signal: AbortSignal) -> None:
        if ctx.tool_call.id == "B":
            agent.abort()

    agent, rec, _, _ = scripted(
        [batch(("t", "A"), ("t", "B"), ("t", "C")), faux_assistant_message("never")],
        tools=[recording_tool("t", log)],
        hooks=Hooks(before_tool_call=before),
    )
    await agent.prompt("go")
    assert log.started == []  # A was prepared, but the abort landed before execution began (Pi #8935)
    tool_events = [
        (e.type, e.tool_call_id) for e in rec.events if e.type in ("tool_execution_start", "tool_execution_end")
    ]
    assert tool_events == [
        ("tool_execution_start", "A"),
        ("tool_execution_start", "B"),
        ("tool_execution_end", "B"),
        ("tool_execution_end", "A"),
    ]
    results = [m for m in agent.state.messages if m.role == "toolResult"]
    assert [(m.tool_call_id, m.content[0].text) for m in results] == [  # type: ignore[union-attr]
        ("A", "Operation aborted"),
        ("B", "Operation aborted"),
    ]
    assert agent.state.messages[-1].stop_reason == "aborted"  # type: ignore[union-attr]


async def test_an_abort_before_the_request_is_recorded_without_calling_the_stream_fn() -> None:
    agent, rec, faux, _ = scripted([faux_assistant_message("never")])
    agent.hooks = Hooks(prepare_request=lambda request, signal: agent.abort())
    await agent.prompt("go")
    assert faux.state.call_count == 0
    assert faux.pending_count == 1
    assert rec.labels[-4:] == [
        "message_start:assistant:aborted",
        "message_end:assistant:aborted",
        "turn_end",
        "agent_end",
    ]
    final = agent.state.messages[-1]
    assert (final.model, final.error_message, final.content) == ("faux-1", "Request was aborted", [])  # type: ignore[union-attr]


async def test_error_and_aborted_final_messages_leave_the_queues_untouched() -> None:
    agent, _, faux, _ = scripted([faux_assistant_message([], "error", "503 service unavailable")])

    def queue_while_streaming(event: Any, signal: Any) -> None:
        if event.type == "message_start" and event.message.role == "assistant":
            agent.steer("late steer")
            agent.follow_up("late follow")

    agent.subscribe(queue_while_streaming)
    await agent.prompt("go")
    assert agent.state.messages[-1].stop_reason == "error"  # type: ignore[union-attr]
    assert [m.content[0].text for m in agent.steering_queue] == ["late steer"]  # type: ignore[union-attr]
    assert [m.content[0].text for m in agent.follow_up_queue] == ["late follow"]  # type: ignore[union-attr]
    assert faux.state.call_count == 1


async def test_queued_steering_starts_a_new_turn_after_a_terminating_batch() -> None:
    stop = recording_tool("stop", result=lambda a: AgentToolResult(content="bye", terminate=True))
    agent, _, faux, requests = scripted([batch(("stop", "c")), faux_assistant_message("saw steering")], tools=[stop])

    async def steer_on_tool(event: Any, signal: Any) -> None:
        if event.type == "tool_execution_start":
            agent.steer("one more thing")

    agent.subscribe(steer_on_tool)
    await agent.prompt("go")
    assert faux.state.call_count == 2
    assert requests.texts(1)[-1] == "one more thing"


async def test_a_queued_follow_up_is_delivered_after_a_terminating_batch() -> None:
    stop = recording_tool("stop", result=lambda a: AgentToolResult(content="bye", terminate=True))
    agent, _, faux, requests = scripted(
        [batch(("stop", "c")), faux_assistant_message("handled follow-up")], tools=[stop]
    )
    agent.follow_up("afterwards")
    await agent.prompt("go")
    assert faux.state.call_count == 2
    assert requests.texts(1)[-1] == "afterwards"


async def test_parallel_immediate_outcomes_end_before_prepared_calls_start() -> None:
    log = ToolLog()
    agent, _, _, _ = scripted(
        [batch(("real", "A"), ("missing", "B"), ("real", "C")), faux_assistant_message("ok")],
        tools=[recording_tool("real", log)],
    )
    order: list[str] = []
    started_when_b_ended: list[list[str]] = []

    def track(event: Any, signal: Any) -> None:
        if event.type in ("tool_execution_start", "tool_execution_end"):
            order.append(f"{event.type[15:]}:{event.tool_call_id}")
        if event.type == "tool_execution_end" and event.tool_call_id == "B":
            started_when_b_ended.append(list(log.started))

    agent.subscribe(track)
    await agent.prompt("go")
    assert started_when_b_ended == [[]]  # nothing executes before every preflight is done
    assert order[:4] == ["start:A", "start:B", "end:B", "start:C"]
    missing = next(m for m in agent.state.messages if getattr(m, "tool_call_id", None) == "B")
    assert missing.content[0].text == "Tool missing not found"  # type: ignore[union-attr]
    assert log.started == ["A", "C"]


async def test_after_tool_call_is_skipped_for_immediate_outcomes() -> None:
    seen: list[str] = []

    def before(ctx: Any, signal: Any) -> Any:
        return {"block": True} if ctx.tool_call.id == "blocked" else None

    agent, _, _, _ = scripted(
        [batch(("t", "blocked"), ("missing", "gone"), ("t", "ran")), faux_assistant_message("ok")],
        tools=[recording_tool("t")],
        hooks=Hooks(before_tool_call=before, after_tool_call=lambda ctx, signal: seen.append(ctx.tool_call.id)),
    )
    await agent.prompt("go")
    assert seen == ["ran"]


async def test_a_raising_after_tool_call_turns_the_result_into_an_error() -> None:
    def after(ctx: Any, signal: Any) -> None:
        raise ValueError("audit failed")

    agent, rec, _, _ = scripted(
        [batch(("t", "c")), faux_assistant_message("ok")],
        tools=[recording_tool("t")],
        hooks=Hooks(after_tool_call=after),
    )
    await agent.prompt("go")
    result = agent.state.messages[2]
    assert result.is_error and result.content[0].text == "audit failed"  # type: ignore[union-attr]
    assert "tool_execution_end:t:error" in rec.labels


async def test_update_emissions_finish_before_tool_execution_end() -> None:
    async def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        on_update(AgentToolResult(content="1"))
        on_update(AgentToolResult(content="2"))
        return AgentToolResult(content="done")

    tool = recording_tool("t")
    tool.execute = execute
    agent, rec, _, _ = scripted([batch(("t", "c")), faux_assistant_message("ok")], tools=[tool])

    async def slow_updates(event: Any, signal: Any) -> None:
        if event.type == "tool_execution_update":
            await asyncio.sleep(0)  # an async listener that yields
            await asyncio.sleep(0)

    agent.subscribe(slow_updates)
    await agent.prompt("go")
    kinds = [e.type for e in rec.events if e.type.startswith("tool_execution")]
    assert kinds == ["tool_execution_start", "tool_execution_update", "tool_execution_update", "tool_execution_end"]
    updates = [e.partial_result.content[0].text for e in rec.events if e.type == "tool_execution_update"]
    assert updates == ["1", "2"]


async def test_a_tool_that_ignores_the_signal_holds_the_run_until_it_returns() -> None:
    gate = asyncio.Event()
    log = ToolLog()
    agent, rec, _, _ = scripted(
        [batch(("stubborn", "c")), faux_assistant_message("never")], tools=[recording_tool("stubborn", log, gate=gate)]
    )
    run = asyncio.create_task(agent.prompt("go"))
    await rec.wait_for("tool_execution_start")
    agent.abort()
    idle = asyncio.create_task(agent.wait_for_idle())
    for _ in range(10):
        await asyncio.sleep(0)
    assert not idle.done() and agent.state.is_streaming  # abort is cooperative
    gate.set()
    await idle
    await run
    assert agent.state.messages[-1].stop_reason == "aborted"  # type: ignore[union-attr]
    assert agent.state.messages[2].content[0].text == "stubborn ok"  # type: ignore[union-attr]


async def test_steering_drained_just_before_an_abort_goes_back_to_the_queue() -> None:
    agent, _, faux, _ = scripted(
        [batch(("echo", "c")), faux_assistant_message("never")], tools=[recording_tool("echo")]
    )
    turn_starts = 0

    def steer_then_abort(event: Any, signal: Any) -> None:
        nonlocal turn_starts
        if event.type == "tool_execution_start":
            agent.steer("first")
            agent.steer("second")
        if event.type == "turn_start":
            turn_starts += 1
            if turn_starts == 2:  # "first" has been drained for this turn but not yet delivered
                agent.abort()

    agent.subscribe(steer_then_abort)
    await agent.prompt("go")
    assert [m.content[0].text for m in agent.steering_queue] == ["first", "second"]  # type: ignore[union-attr]
    assert roles(agent.state.messages) == ["user", "assistant", "toolResult", "assistant"]
    assert agent.state.messages[-1].stop_reason == "aborted"  # type: ignore[union-attr]
    assert faux.state.call_count == 1
