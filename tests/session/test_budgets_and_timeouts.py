"""Timeouts and run budgets the session builds in (DESIGN.md §3)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from session_helpers import make_session, reply

from pi_notebook.agent import AgentTool, AgentToolResult
from pi_notebook.ai import AbortSignal
from pi_notebook.ai.providers.faux import faux_assistant_message, faux_tool_call


def echo_tool(name: str = "echo", **options: Any) -> AgentTool:
    async def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        return AgentToolResult(content="ok")

    return AgentTool(
        name=name, description=name, parameters={"type": "object", "properties": {}}, execute=execute, **options
    )


def waiting_tool(name: str = "wait", **options: Any) -> AgentTool:
    """Waits for its signal, then returns quietly (a well-behaved slow tool)."""

    async def execute(call_id: str, args: Any, signal: AbortSignal, on_update: Any) -> AgentToolResult:
        await signal.wait()
        return AgentToolResult(content="stopped early")

    return AgentTool(
        name=name, description=name, parameters={"type": "object", "properties": {}}, execute=execute, **options
    )


def calls(name: str, n: int) -> list[Any]:
    return [faux_assistant_message([faux_tool_call(name, {}, id=f"c{i}")], "toolUse") for i in range(n)]


def budget_events(rec: Any) -> list[tuple[str, float, float]]:
    return [(e.kind, e.limit, e.used) for e in rec.events if e.type == "budget_exceeded"]


async def test_turn_budget_stops_before_the_request_that_would_exceed_it() -> None:
    session, rec, faux = make_session(
        [*calls("echo", 5), reply("never")], tools=[echo_tool()], settings={"budget": {"max_turns": 2}}
    )
    await session.prompt("go")
    assert faux.state.call_count == 2
    assert budget_events(rec) == [("turns", 2, 2)]
    final = session.messages[-1]
    assert final.stop_reason == "aborted"  # type: ignore[union-attr]
    assert final.error_message == "Run budget exceeded (turns): 2 used, limit 2"  # type: ignore[union-attr]
    assert rec.labels[-1] == "agent_settled:aborted=true"


async def test_cost_budget_is_checked_at_turn_end() -> None:
    from pi_notebook.ai.providers.faux import FauxProvider
    from pi_notebook.session import AgentSession, Settings
    from pi_notebook.testing import EventRecorder

    # $10,000 per million output tokens: each tool-call reply (about 2 output tokens) costs about 2 cents.
    faux = FauxProvider(token_size=(1, 1), models=[{"id": "pricey", "cost": {"output": 10_000}}])
    faux.set_responses([*calls("echo", 5), reply("never")])
    settings = Settings(budget={"max_cost_usd": 0.05}, compaction={"enabled": False})
    session = AgentSession(model=faux.model, stream_fn=faux.stream, tools=[echo_tool()], settings=settings)
    rec = EventRecorder("session")
    session.subscribe(rec)
    await session.prompt("go")
    [(kind, limit, used)] = budget_events(rec)
    assert (kind, limit) == ("cost_usd", 0.05)
    assert used > 0.05
    assert session.budget.cost_usd == used
    assert faux.state.call_count < 6
    assert session.messages[-1].error_message.startswith("Run budget exceeded (cost_usd): ")  # type: ignore[union-attr]


async def test_output_token_budget() -> None:
    session, rec, faux = make_session(
        [*calls("echo", 3), reply("never")], tools=[echo_tool()], settings={"budget": {"max_output_tokens": 5}}
    )
    await session.prompt("go")
    kinds = [kind for kind, _, _ in budget_events(rec)]
    assert kinds == ["output_tokens"]
    assert faux.state.call_count < 4


async def test_wall_time_budget_aborts_a_run_in_progress() -> None:
    session, rec, _ = make_session(
        [calls("wait", 1)[0], reply("never")], tools=[waiting_tool()], settings={"budget": {"wall_time_ms": 50}}
    )
    started = time.monotonic()
    await asyncio.wait_for(session.prompt("go"), timeout=5)
    assert time.monotonic() - started < 2
    assert [kind for kind, _, _ in budget_events(rec)] == ["wall_time"]
    assert session.messages[-1].error_message.startswith("Run budget exceeded (wall_time)")  # type: ignore[union-attr]
    assert rec.labels[-1] == "agent_settled:aborted=true"


async def test_turn_timeout_aborts_with_the_reason() -> None:
    session, rec, _ = make_session(
        [faux_assistant_message("word " * 2000)], tps=500, settings={"timeouts": {"turn_ms": 60}}
    )
    await asyncio.wait_for(session.prompt("go"), timeout=5)
    [(kind, limit, used)] = budget_events(rec)
    assert (kind, limit) == ("turn_time", 60)
    assert used >= 60
    final = session.messages[-1]
    assert final.stop_reason == "aborted"  # type: ignore[union-attr]
    assert final.error_message == f"Turn timed out: {used} ms used, limit 60 ms"  # type: ignore[union-attr]


async def test_a_budget_breach_is_reported_once_and_not_retried() -> None:
    session, rec, _faux = make_session(
        [*calls("echo", 4), reply()], tools=[echo_tool()], settings={"budget": {"max_turns": 1}}
    )
    await session.prompt("go")
    assert len(budget_events(rec)) == 1
    assert not any(label.startswith("auto_retry") for label in rec.labels)


async def test_the_budget_resets_per_operation() -> None:
    session, rec, faux = make_session(
        [*calls("echo", 1), reply("a"), *calls("echo", 1), reply("b")],
        tools=[echo_tool()],
        settings={"budget": {"max_turns": 2}},
    )
    await session.prompt("first")
    await session.prompt("second")
    assert budget_events(rec) == []
    assert faux.state.call_count == 4


async def test_tool_timeout_gives_an_error_result_and_the_run_continues() -> None:
    session, rec, _faux = make_session(
        [calls("wait", 1)[0], reply("carried on")], tools=[waiting_tool()], settings={"timeouts": {"tool_ms": 30}}
    )
    await asyncio.wait_for(session.prompt("go"), timeout=5)
    end = next(e for e in rec.events if e.type == "tool_execution_end")
    assert end.is_error
    assert end.result.content[0].text == "Tool wait timed out after 0.03 seconds"
    assert session.messages[-1].content[0].text == "carried on"  # type: ignore[union-attr]
    assert rec.labels[-1] == "agent_settled:aborted=false"


async def test_a_per_tool_timeout_overrides_the_default() -> None:
    session, rec, _ = make_session(
        [calls("wait", 1)[0], reply()], tools=[waiting_tool(timeout_ms=20)], settings={"timeouts": {"tool_ms": 60_000}}
    )
    await asyncio.wait_for(session.prompt("go"), timeout=5)
    end = next(e for e in rec.events if e.type == "tool_execution_end")
    assert end.result.content[0].text == "Tool wait timed out after 0.02 seconds"


async def test_a_timed_out_tool_that_ignores_its_signal_is_cancelled_after_the_grace() -> None:
    never = asyncio.Event()

    async def stubborn(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        await never.wait()
        return AgentToolResult(content="unreachable")

    tool = AgentTool(name="stubborn", description="", parameters={"type": "object"}, execute=stubborn)
    session, rec, _ = make_session(
        [calls("stubborn", 1)[0], reply("after")],
        tools=[tool],
        settings={"timeouts": {"tool_ms": 20, "abort_grace_ms": 20}},
    )
    await asyncio.wait_for(session.prompt("go"), timeout=5)
    end = next(e for e in rec.events if e.type == "tool_execution_end")
    assert end.result.content[0].text == (
        "Tool stubborn did not stop within 20 ms (Tool stubborn timed out after 0.02 seconds); cancelled"
    )
    assert session.messages[-1].content[0].text == "after"  # type: ignore[union-attr]


async def test_provider_timeouts_reach_the_stream_options() -> None:
    seen: list[Any] = []
    session, _, _faux = make_session(
        [reply()],
        settings={
            "retry": {"provider": {"max_retries": 2, "timeout_ms": 1234, "max_retry_delay_ms": 500}},
            "timeouts": {"http_idle_ms": 4321},
        },
    )
    inner = session.agent.stream_fn

    def spy(model: Any, context: Any, options: Any) -> Any:
        seen.append(options)
        return inner(model, context, options)  # type: ignore[misc]

    session.agent.stream_fn = spy
    await session.prompt("go")
    options = seen[0]
    assert (options.max_retries, options.timeout_ms, options.max_retry_delay_ms, options.idle_timeout_ms) == (
        2,
        1234,
        500,
        4321,
    )


# -- tools that block the event loop (the python tool runs the agent's code synchronously) ------------------
def blocking_tool(name: str, seconds: float, outcome: str = "done") -> AgentTool:
    """Blocks the event loop for ``seconds`` (as synchronous code does), so no asyncio timer can fire."""

    async def execute(call_id: str, args: Any, signal: AbortSignal, on_update: Any) -> AgentToolResult:
        time.sleep(seconds)  # noqa: ASYNC251 - the behaviour under test: the loop is blocked
        if outcome == "raise":
            raise RuntimeError("partial output")
        return AgentToolResult(content=outcome)

    return AgentTool(name=name, description=name, parameters={"type": "object", "properties": {}}, execute=execute)


async def test_a_tools_signal_carries_the_earliest_deadline_that_applies_to_it() -> None:
    seen: list[Any] = []

    async def execute(call_id: str, args: Any, signal: AbortSignal, on_update: Any) -> AgentToolResult:
        seen.append((time.monotonic(), signal.deadline))
        return AgentToolResult(content="ok")

    tool = AgentTool(name="probe", description="", parameters={"type": "object"}, execute=execute)
    for timeouts, budget, reason, seconds in [
        ({"tool_ms": 5000, "turn_ms": 2000}, {"wall_time_ms": 9000}, "Turn timed out: 2000 ms used, limit 2000 ms", 2),
        ({"tool_ms": 1500, "turn_ms": 2000}, {}, "Tool probe timed out after 1.5 seconds", 1.5),
        ({}, {"wall_time_ms": 3000}, "Run budget exceeded (wall_time): 3000 ms used, limit 3000 ms", 3),
    ]:
        session, _, _ = make_session(
            [calls("probe", 1)[0], reply()], tools=[tool], settings={"timeouts": timeouts, "budget": budget}
        )
        await session.prompt("go")
        now, deadline = seen.pop()
        assert deadline.reason == reason
        assert deadline.at - now == pytest.approx(seconds, abs=0.2)
    session, _, _ = make_session([calls("probe", 1)[0], reply()], tools=[tool])
    await session.prompt("go")
    assert seen.pop()[1] is None


async def test_a_tool_that_blocks_the_loop_past_its_timeout_gets_the_timeout_error_and_the_run_goes_on() -> None:
    session, rec, _ = make_session(
        [calls("block", 1)[0], reply("carried on")],
        tools=[blocking_tool("block", 0.15)],
        settings={"timeouts": {"tool_ms": 30}},
    )
    await session.prompt("go")
    end = next(e for e in rec.events if e.type == "tool_execution_end")
    assert end.is_error
    assert end.result.content[0].text == "Tool block timed out after 0.03 seconds"
    assert rec.labels[-1] == "agent_settled:aborted=false"


async def test_the_timeout_error_keeps_what_the_tool_reported_before_it() -> None:
    session, rec, _ = make_session(
        [calls("block", 1)[0], reply()],
        tools=[blocking_tool("block", 0.15, outcome="raise")],
        settings={"timeouts": {"tool_ms": 30}},
    )
    await session.prompt("go")
    end = next(e for e in rec.events if e.type == "tool_execution_end")
    assert end.result.content[0].text == "partial output\n\nTool block timed out after 0.03 seconds"


async def test_a_turn_that_blocked_the_loop_past_its_timeout_is_stopped_at_turn_end() -> None:
    session, rec, faux = make_session(
        [calls("block", 1)[0], reply("never")],
        tools=[blocking_tool("block", 0.15)],
        settings={"timeouts": {"turn_ms": 50}},
    )
    await session.prompt("go")
    [(kind, limit, used)] = budget_events(rec)
    assert (kind, limit) == ("turn_time", 50)
    assert used >= 150  # the time the turn really took (the tool blocked 150 ms), not a copy of the limit
    assert session.messages[-1].error_message == f"Turn timed out: {used} ms used, limit 50 ms"  # type: ignore[union-attr]
    assert faux.state.call_count == 1  # no request after the turn that ran over
    assert rec.labels[-1] == "agent_settled:aborted=true"


async def test_a_tool_raising_abort_run_aborts_the_run_as_stop_does() -> None:
    from pi_notebook.session import AbortRun

    async def execute(call_id: str, args: Any, signal: AbortSignal, on_update: Any) -> AgentToolResult:
        raise AbortRun("interrupted by the kernel")

    tool = AgentTool(name="halt", description="", parameters={"type": "object"}, execute=execute)
    session, rec, faux = make_session([calls("halt", 1)[0], reply("never")], tools=[tool])
    await session.prompt("go")
    end = next(e for e in rec.events if e.type == "tool_execution_end")
    assert (end.is_error, end.result.content[0].text) == (True, "interrupted by the kernel")
    assert faux.state.call_count == 1
    assert session.messages[-1].stop_reason == "aborted"  # type: ignore[union-attr]
    assert rec.labels[-1] == "agent_settled:aborted=true"
