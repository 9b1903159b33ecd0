"""The stateful Agent: the meaning of Pi's agent.test.ts (PI-SPEC §9.1)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agent_helpers import ToolLog, recording_tool, roles, scripted

from pi_notebook.agent import Agent, AgentToolResult, Hooks, set_default_stream_fn
from pi_notebook.ai import AbortSignal, TextContent, UserMessage
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call


def user(text: str) -> UserMessage:
    return UserMessage(content=[TextContent(text=text)])


async def test_uses_the_configured_default_stream_fn_when_none_is_given() -> None:
    faux = FauxProvider()
    faux.set_responses([faux_assistant_message("from default")])
    set_default_stream_fn(faux.stream)
    try:
        agent = Agent(model=faux.model)
        await agent.prompt("hi")
    finally:
        set_default_stream_fn(None)
    assert faux.state.call_count == 1
    assert agent.state.messages[-1].content[0].text == "from default"  # type: ignore[union-attr]


async def test_prompt_without_any_stream_fn_raises_before_starting_a_run() -> None:
    agent = Agent()
    with pytest.raises(RuntimeError, match="No default stream function configured"):
        await agent.prompt("hi")
    assert agent.state.messages == []
    assert not agent.state.is_streaming


def test_default_state() -> None:
    agent = Agent()
    state = agent.state
    assert state.system_prompt == ""
    assert state.model.id == "unknown"
    assert state.thinking_level == "off"
    assert state.tools == []
    assert state.messages == []
    assert state.is_streaming is False
    assert state.streaming_message is None
    assert state.pending_tool_calls == set()
    assert state.error_message is None
    assert agent.signal is None


def test_custom_initial_state() -> None:
    faux = FauxProvider()
    tool = recording_tool("echo")
    history = [user("earlier")]
    agent = Agent(model=faux.model, system_prompt="be brief", thinking_level="high", tools=[tool], messages=history)
    assert agent.state.system_prompt == "be brief"
    assert agent.state.model is faux.model
    assert agent.state.thinking_level == "high"
    assert agent.state.tools == [tool]
    assert agent.state.messages == history
    assert agent.state.messages is not history


async def test_subscribe_emits_nothing_until_a_run_and_unsubscribe_stops_delivery() -> None:
    agent, _, _, _ = scripted([faux_assistant_message("one"), faux_assistant_message("two")])
    seen: list[str] = []
    unsubscribe = agent.subscribe(lambda event, signal: seen.append(event.type))
    agent.state.system_prompt = "changed"
    agent.state.messages = [user("x")]
    assert seen == []
    await agent.prompt("hi")
    assert seen[0] == "agent_start" and seen[-1] == "agent_end"
    count = len(seen)
    unsubscribe()
    await agent.prompt("again")
    assert len(seen) == count


async def test_a_thrown_stream_fn_ends_the_run_with_a_synthetic_failure_message() -> None:
    def exploding(*_: Any) -> Any:
        raise RuntimeError("provider exploded")

    agent = Agent(stream_fn=exploding, model=FauxProvider().model)
    types: list[str] = []
    agent.subscribe(lambda event, signal: types.append(event.type))
    await agent.prompt("go")  # resolves normally
    assert types == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]
    failure = agent.state.messages[-1]
    assert failure.role == "assistant"
    assert failure.stop_reason == "error"  # type: ignore[union-attr]
    assert failure.error_message == "provider exploded"  # type: ignore[union-attr]
    assert failure.model == "faux-1"  # type: ignore[union-attr]
    assert agent.state.error_message == "provider exploded"
    assert not agent.state.is_streaming


async def test_a_thrown_hook_after_abort_gives_an_aborted_failure_message() -> None:
    agent, rec, _, _ = scripted([faux_assistant_message("hello")])

    def prepare_request(request: Any, signal: AbortSignal) -> None:
        agent.abort()
        raise RuntimeError("hook broke")

    agent.hooks = Hooks(prepare_request=prepare_request)
    await agent.prompt("go")
    assert agent.state.messages[-1].stop_reason == "aborted"  # type: ignore[union-attr]
    assert agent.state.messages[-1].error_message == "hook broke"  # type: ignore[union-attr]
    assert rec.labels[-2:] == ["turn_end", "agent_end"]


async def test_prompt_awaits_async_agent_end_listeners_and_stays_streaming_meanwhile() -> None:
    agent, _, _, _ = scripted([faux_assistant_message("hello")])
    release = asyncio.Event()
    entered = asyncio.Event()

    async def slow_end(event: Any, signal: Any) -> None:
        if event.type == "agent_end":
            entered.set()
            await release.wait()

    agent.subscribe(slow_end)
    run = asyncio.create_task(agent.prompt("hi"))
    await entered.wait()
    assert agent.state.is_streaming
    assert not run.done()
    release.set()
    await run
    assert not agent.state.is_streaming


async def test_listeners_run_in_order_and_a_later_one_waits_for_an_earlier_async_one() -> None:
    agent, _, _, _ = scripted([faux_assistant_message("hello")])
    release = asyncio.Event()
    entered = asyncio.Event()
    seen: list[str] = []

    def first(event: Any, signal: Any) -> None:
        seen.append(f"first {event.type}")

    async def slow(event: Any, signal: Any) -> None:
        if event.type == "message_end" and event.message.role == "assistant":
            entered.set()
            await release.wait()

    def last(event: Any, signal: Any) -> None:
        seen.append(f"last {event.type}")

    for listener in (first, slow, last):
        agent.subscribe(listener)
    run = asyncio.create_task(agent.prompt("hi"))
    await entered.wait()
    # The first listener saw the assistant's message_end, the last did not yet, and the loop went no further.
    assert seen[-2:] == ["last message_update", "first message_end"]
    release.set()
    await run
    assert seen[-6:] == [
        "first message_end",
        "last message_end",
        "first turn_end",
        "last turn_end",
        "first agent_end",
        "last agent_end",
    ]


async def test_wait_for_idle_waits_for_async_listeners() -> None:
    agent, _, _, _ = scripted([faux_assistant_message("hello")])
    release = asyncio.Event()
    entered = asyncio.Event()

    async def slow(event: Any, signal: Any) -> None:
        if event.type == "message_end" and event.message.role == "assistant":
            entered.set()
            await release.wait()

    agent.subscribe(slow)
    run = asyncio.create_task(agent.prompt("hi"))
    await entered.wait()
    idle = asyncio.create_task(agent.wait_for_idle())
    await asyncio.sleep(0)
    assert not idle.done()
    release.set()
    await idle
    await run
    assert not agent.state.is_streaming


async def test_wait_for_idle_returns_at_once_when_idle() -> None:
    agent = Agent()
    await asyncio.wait_for(agent.wait_for_idle(), timeout=1)


async def test_listeners_receive_the_active_run_signal() -> None:
    agent, rec, _, _ = scripted([faux_assistant_message("a b " * 200)], tps=500)
    signals: list[AbortSignal] = []
    states: list[bool] = []

    def listener(event: Any, signal: AbortSignal) -> None:
        signals.append(signal)
        if event.type == "agent_start":
            states.append(signal.aborted)

    agent.subscribe(listener)
    run = asyncio.create_task(agent.prompt("go"))
    await rec.wait_for("message_update")
    assert agent.signal is signals[0]
    agent.abort()
    await run
    assert states == [False]
    assert all(s is signals[0] for s in signals)
    assert signals[0].aborted
    assert agent.signal is None


async def test_tool_updates_after_the_tool_settles_are_ignored() -> None:
    late: list[Any] = []

    async def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        on_update(AgentToolResult(content="progress"))
        late.append(on_update)
        return AgentToolResult(content="done")

    tool = recording_tool("t")
    tool.execute = execute
    agent, rec, _, _ = scripted(
        [
            faux_assistant_message([faux_tool_call("t", {}, id="c1")], "toolUse"),
            faux_assistant_message("ok"),
            faux_assistant_message("again ok"),
        ],
        tools=[tool],
    )
    await agent.prompt("go")

    async def poke(event: Any, signal: Any) -> None:  # the settled tool reports while a later run is active
        if event.type == "agent_start":
            late[0](AgentToolResult(content="too late"))  # must not emit or raise
            await asyncio.sleep(0)  # let a wrongly scheduled update reach the listeners during this run

    agent.subscribe(poke)
    await agent.prompt("again")
    updates = [e for e in rec.events if e.type == "tool_execution_update"]
    assert [u.partial_result.content[0].text for u in updates] == ["progress"]
    assert rec.types().index("tool_execution_update") < rec.types().index("tool_execution_end")


async def test_a_settled_parallel_tool_update_is_ignored_while_a_sibling_still_runs() -> None:
    gate = asyncio.Event()
    saved: list[Any] = []

    async def fast(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        saved.append(on_update)
        return AgentToolResult(content="fast done")

    async def slow(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        await gate.wait()
        return AgentToolResult(content="slow done")

    fast_tool, slow_tool = recording_tool("fast"), recording_tool("slow")
    fast_tool.execute, slow_tool.execute = fast, slow
    agent, rec, _, _ = scripted(
        [
            faux_assistant_message([faux_tool_call("fast", {}, id="f"), faux_tool_call("slow", {}, id="s")], "toolUse"),
            faux_assistant_message("ok"),
        ],
        tools=[fast_tool, slow_tool],
    )
    run = asyncio.create_task(agent.prompt("go"))
    await rec.wait_for(lambda e: e.type == "tool_execution_end" and e.tool_call_id == "f")
    saved[0](AgentToolResult(content="late"))
    gate.set()
    await run
    assert "tool_execution_update" not in rec.types()


def test_state_setters_copy_lists_and_in_place_appends_are_kept() -> None:
    agent = Agent()
    tools = [recording_tool("a")]
    messages = [user("one")]
    agent.state.tools = tools
    agent.state.messages = messages
    tools.append(recording_tool("b"))
    messages.append(user("two"))
    assert len(agent.state.tools) == 1
    assert len(agent.state.messages) == 1
    agent.state.messages.append(user("three"))
    assert [m.content[0].text for m in agent.state.messages] == ["one", "three"]  # type: ignore[union-attr]


def test_queued_steering_and_follow_up_messages_are_not_in_the_transcript() -> None:
    agent = Agent()
    agent.steer(user("steer"))
    agent.follow_up("follow")
    assert agent.state.messages == []
    assert agent.has_queued_messages()
    assert [m.content[0].text for m in agent.steering_queue] == ["steer"]  # type: ignore[union-attr]
    assert [m.content[0].text for m in agent.follow_up_queue] == ["follow"]  # type: ignore[union-attr]
    agent.clear_all_queues()
    assert not agent.has_queued_messages()


def test_abort_when_idle_does_nothing() -> None:
    agent = Agent()
    agent.abort()
    agent.abort()
    assert agent.signal is None


async def test_reset_while_running_raises_and_leaves_the_transcript_whole() -> None:
    agent, rec, _, _ = scripted([faux_assistant_message("hello there")], tps=1000)
    run = asyncio.create_task(agent.prompt("hi"))
    await rec.wait_for("message_update")
    with pytest.raises(RuntimeError, match=r"^Agent is already processing\. Wait for completion before resetting\.$"):
        agent.reset()
    await run
    assert roles(agent.state.messages) == ["user", "assistant"]
    agent.reset()
    assert agent.state.messages == []


async def test_prompt_while_running_raises_pis_message() -> None:
    agent, rec, _, _ = scripted([faux_assistant_message("hello there")], tps=1000)
    run = asyncio.create_task(agent.prompt("hi"))
    await rec.wait_for("agent_start")
    with pytest.raises(RuntimeError) as info:
        await agent.prompt("again")
    assert str(info.value) == (
        "Agent is already processing a prompt. Use steer() or follow_up() to queue messages, or wait for completion."
    )
    agent.abort()
    await run


async def test_continue_while_running_raises_pis_message() -> None:
    agent, rec, _, _ = scripted([faux_assistant_message("hello there")], tps=1000)
    run = asyncio.create_task(agent.prompt("hi"))
    await rec.wait_for("agent_start")
    with pytest.raises(RuntimeError, match=r"^Agent is already processing. Wait for completion before continuing.$"):
        await agent.continue_()
    agent.abort()
    await run


async def test_continue_with_no_messages_raises() -> None:
    agent, _, _, _ = scripted([])
    with pytest.raises(RuntimeError, match=r"^No messages to continue from$"):
        await agent.continue_()


async def test_continue_from_an_assistant_tail_with_nothing_queued_raises() -> None:
    agent, _, _, _ = scripted([faux_assistant_message("done")])
    await agent.prompt("hi")
    with pytest.raises(RuntimeError, match=r"^Cannot continue from message role: assistant$"):
        await agent.continue_()


async def test_continue_processes_a_queued_follow_up_after_an_assistant_turn() -> None:
    agent, _, faux, requests = scripted([faux_assistant_message("first"), faux_assistant_message("second")])
    await agent.prompt("hi")
    agent.follow_up("and then?")
    await agent.continue_()
    assert roles(agent.state.messages) == ["user", "assistant", "user", "assistant"]
    assert faux.state.call_count == 2
    assert requests.texts(1)[-1] == "and then?"


async def test_continue_keeps_one_at_a_time_steering_from_an_assistant_tail() -> None:
    agent, _, faux, _ = scripted(
        [faux_assistant_message("first"), faux_assistant_message("second"), faux_assistant_message("third")]
    )
    await agent.prompt("hi")
    agent.steer("s1")
    agent.steer("s2")
    await agent.continue_()
    tail = agent.state.messages[-4:]
    assert roles(tail) == ["user", "assistant", "user", "assistant"]
    assert [tail[0].content[0].text, tail[2].content[0].text] == ["s1", "s2"]  # type: ignore[union-attr]
    assert faux.state.call_count == 3  # the first prompt, then s1 and s2 in one run: two calls


async def test_continue_from_a_user_tail_runs_without_user_events() -> None:
    agent, rec, _, _ = scripted([faux_assistant_message("answer")], messages=[user("pending question")])
    await agent.continue_()
    assert rec.labels == [
        "agent_start",
        "turn_start",
        "message_start:assistant:pending",
        "message_end:assistant:stop",
        "turn_end",
        "agent_end",
    ]
    end = rec.events[-1]
    assert roles(end.messages) == ["assistant"]


async def test_prepare_next_turn_gets_the_turn_and_the_run_signal() -> None:
    got: list[tuple[str, AbortSignal]] = []
    agent, _, faux, _ = scripted(
        [faux_assistant_message([faux_tool_call("echo", {}, id="c")], "toolUse"), faux_assistant_message("done")],
        tools=[recording_tool("echo")],
        hooks=Hooks(prepare_next_turn=lambda turn, signal: got.append((turn.message.stop_reason, signal))),
    )
    await agent.prompt("go")
    assert [reason for reason, _ in got] == ["toolUse", "stop"]
    assert all(isinstance(signal, AbortSignal) for _, signal in got)
    assert faux.state.call_count == 2


async def test_should_stop_after_turn_is_forwarded_and_stops_after_the_tool_turn() -> None:
    seen: list[Any] = []

    def should_stop(turn: Any, signal: AbortSignal) -> bool:
        seen.append(([m.role for m in turn.context.messages], signal))
        return True

    agent, _, faux, _ = scripted(
        [faux_assistant_message([faux_tool_call("echo", {}, id="c")], "toolUse"), faux_assistant_message("never")],
        tools=[recording_tool("echo")],
        hooks=Hooks(should_stop_after_turn=should_stop),
    )
    await agent.prompt("go")
    assert faux.state.call_count == 1
    assert seen[0][0] == ["user", "assistant", "toolResult"]
    assert isinstance(seen[0][1], AbortSignal)


async def test_one_argument_hooks_are_accepted() -> None:
    agent, _, faux, _ = scripted(
        [faux_assistant_message([faux_tool_call("echo", {}, id="c")], "toolUse"), faux_assistant_message("never")],
        tools=[recording_tool("echo")],
        hooks=Hooks(should_stop_after_turn=lambda turn: True),
    )
    await agent.prompt("go")
    assert faux.state.call_count == 1


async def test_session_id_and_later_changes_reach_the_stream_options() -> None:
    agent, _, _, requests = scripted(
        [faux_assistant_message("one"), faux_assistant_message("two")], session_id="session-a"
    )
    await agent.prompt("hi")
    agent.session_id = "session-b"
    await agent.prompt("again")
    assert [o.session_id for o in requests.options] == ["session-a", "session-b"]


async def test_thinking_level_reaches_the_stream_options_as_reasoning() -> None:
    agent, _, _, requests = scripted([faux_assistant_message("one"), faux_assistant_message("two")])
    await agent.prompt("hi")
    agent.state.thinking_level = "high"
    await agent.prompt("again")
    assert [o.reasoning for o in requests.options] == [None, "high"]


async def test_get_api_key_is_asked_per_request_and_falls_back_to_api_key() -> None:
    asked: list[str] = []

    def get_api_key(provider: str) -> str | None:
        asked.append(provider)
        return "dynamic" if len(asked) == 1 else None

    agent, _, _, requests = scripted(
        [faux_assistant_message([faux_tool_call("echo", {}, id="c")], "toolUse"), faux_assistant_message("done")],
        tools=[recording_tool("echo")],
        hooks=Hooks(get_api_key=get_api_key),
        api_key="static",
    )
    await agent.prompt("go")
    assert asked == ["faux", "faux"]
    assert [o.api_key_value() for o in requests.options] == ["dynamic", "static"]
    assert "dynamic" not in repr(requests.options[0])


async def test_images_follow_the_text_of_a_prompt() -> None:
    from pi_notebook.ai import ImageContent

    agent, _, _, _ = scripted([faux_assistant_message("nice")])
    await agent.prompt("look", images=[ImageContent(data="aGVsbG8=", mime_type="image/png")])
    first = agent.state.messages[0]
    assert [block.type for block in first.content] == ["text", "image"]  # type: ignore[union-attr]


async def test_pending_tool_calls_track_running_tools() -> None:
    gate = asyncio.Event()
    log = ToolLog()
    agent, rec, _, _ = scripted(
        [faux_assistant_message([faux_tool_call("slow", {}, id="c1")], "toolUse"), faux_assistant_message("done")],
        tools=[recording_tool("slow", log, gate=gate)],
    )
    run = asyncio.create_task(agent.prompt("go"))
    await rec.wait_for("tool_execution_start")
    assert agent.state.pending_tool_calls == {"c1"}
    gate.set()
    await run
    assert agent.state.pending_tool_calls == set()


async def test_cancelling_the_awaiting_task_aborts_the_run_and_ends_it_with_events() -> None:
    gate = asyncio.Event()
    log = ToolLog()
    agent, rec, _, _ = scripted(
        [faux_assistant_message([faux_tool_call("slow", {}, id="c1")], "toolUse"), faux_assistant_message("never")],
        tools=[recording_tool("slow", log, gate=gate)],
    )
    run = asyncio.create_task(agent.prompt("go"))
    await rec.wait_for("tool_execution_start")
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert log.signals[0].aborted
    assert rec.labels[-4:] == [
        "message_start:assistant:aborted",
        "message_end:assistant:aborted",
        "turn_end",
        "agent_end",
    ]
    assert agent.state.messages[-1].error_message == "Run cancelled"  # type: ignore[union-attr]
    assert not agent.state.is_streaming
    await agent.wait_for_idle()
