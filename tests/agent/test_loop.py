"""The stateless loop and its hooks: the meaning of Pi's agent-loop.test.ts (PI-SPEC §9.2)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from agent_helpers import ToolLog, copying_stream_fn, recording_tool, roles, scripted
from pydantic import BaseModel

from pi_notebook.agent import (
    AfterToolCallResult,
    AgentContext,
    AgentMessage,
    AgentToolResult,
    BeforeToolCallResult,
    CustomMessage,
    Hooks,
    LoopConfig,
    TurnUpdate,
    run_agent_loop,
    run_agent_loop_continue,
)
from pi_notebook.ai import AbortController, AbortSignal, Message, TextContent, Usage, UserMessage
from pi_notebook.ai.messages import message_key
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
from pi_notebook.testing import EventRecorder


def user(text: str) -> UserMessage:
    return UserMessage(content=[TextContent(text=text)])


async def emit_to(recorder: EventRecorder) -> Any:
    async def emit(event: Any) -> None:
        recorder(event)

    return emit


async def test_run_agent_loop_returns_new_messages_and_emits_every_lifecycle_event() -> None:
    faux = FauxProvider()
    faux.set_responses([faux_assistant_message("hello")])
    recorder = EventRecorder()
    new = await run_agent_loop(
        [user("hi")],
        AgentContext("", [], ()),
        LoopConfig(model=faux.model),
        await emit_to(recorder),
        AbortController().signal,
        faux.stream,
    )
    assert roles(new) == ["user", "assistant"]
    assert {
        "agent_start",
        "turn_start",
        "message_start",
        "message_update",
        "message_end",
        "turn_end",
        "agent_end",
    } <= set(recorder.types())


class Note(CustomMessage):
    role: str = "note"
    text: str = ""


async def test_custom_messages_are_filtered_by_the_default_convert_to_llm() -> None:
    agent, _, _, requests = scripted([faux_assistant_message("ok")], messages=[Note(text="ui only")])
    await agent.prompt("hi")
    assert requests.roles(0) == "u"
    assert roles(agent.state.messages) == ["note", "user", "assistant"]


async def test_a_custom_convert_to_llm_can_turn_custom_messages_into_user_messages() -> None:
    def convert(messages: Sequence[AgentMessage]) -> list[Message]:
        converted: list[Message] = []
        for m in messages:
            if isinstance(m, Note):
                converted.append(user(m.text))
            elif not isinstance(m, CustomMessage):
                converted.append(m)
        return converted

    agent, _, _, requests = scripted(
        [faux_assistant_message("ok")], messages=[Note(text="remember")], hooks=Hooks(convert_to_llm=convert)
    )
    await agent.prompt("hi")
    assert requests.texts(0) == ["remember", "hi"]


async def test_transform_context_runs_before_convert_to_llm() -> None:
    order: list[str] = []

    def transform(messages: Sequence[AgentMessage], signal: AbortSignal) -> Sequence[AgentMessage]:
        order.append("transform")
        return messages[-1:]  # prune everything but the newest message

    def convert(messages: Sequence[AgentMessage]) -> list[Message]:
        order.append(f"convert:{len(messages)}")
        return [m for m in messages if not isinstance(m, CustomMessage)]

    agent, _, _, requests = scripted(
        [faux_assistant_message("ok")],
        messages=[user("old 1"), user("old 2")],
        hooks=Hooks(transform_context=transform, convert_to_llm=convert),
    )
    await agent.prompt("new")
    assert order == ["transform", "convert:1"]
    assert requests.texts(0) == ["new"]


async def test_tool_calls_run_once_and_after_tool_call_usage_overrides_are_kept() -> None:
    log = ToolLog()
    tool_usage = Usage(input=5, output=7, total_tokens=12)
    override = Usage(input=50, output=70, total_tokens=120)
    tool = recording_tool("echo", log, result=lambda args: AgentToolResult(content="echoed", usage=tool_usage))
    seen_usage: list[Any] = []

    def after(ctx: Any, signal: Any) -> AfterToolCallResult:
        seen_usage.append(ctx.result.usage)
        return AfterToolCallResult(usage=override)

    agent, rec, _, _ = scripted(
        [
            faux_assistant_message([faux_tool_call("echo", {"x": 1}, id="c1")], "toolUse"),
            faux_assistant_message("done"),
        ],
        tools=[tool],
        hooks=Hooks(after_tool_call=after),
    )
    await agent.prompt("go")
    assert log.started == ["c1"]
    assert rec.types().count("tool_execution_start") == rec.types().count("tool_execution_end") == 1
    assert seen_usage == [tool_usage]
    result = agent.state.messages[2]
    assert result.role == "toolResult"
    assert result.usage == override  # type: ignore[union-attr]


async def test_tool_calls_of_a_length_truncated_message_are_not_executed() -> None:
    log = ToolLog()
    agent, rec, faux, _ = scripted(
        [
            faux_assistant_message([faux_tool_call("echo", {"x": "cut"}, id="c1")], "length"),
            faux_assistant_message("again"),
        ],
        tools=[recording_tool("echo", log)],
    )
    await agent.prompt("go")
    assert log.started == []
    end = next(e for e in rec.events if e.type == "tool_execution_end")
    assert end.is_error
    assert "output token limit" in end.result.content[0].text
    assert end.result.content[0].text == (
        'Tool call "echo" was not executed: the response hit the output token limit, so its arguments may be '
        "truncated. Re-issue the tool call with complete arguments."
    )
    assert faux.state.call_count == 2


async def test_before_tool_call_can_mutate_validated_args_without_revalidation() -> None:
    log = ToolLog()
    schema = {"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}

    def before(ctx: Any, signal: Any) -> None:
        ctx.args["count"] = "not an integer"

    agent, _, _, _ = scripted(
        [faux_assistant_message([faux_tool_call("t", {"count": 3}, id="c1")], "toolUse"), faux_assistant_message("ok")],
        tools=[recording_tool("t", log, parameters=schema)],
        hooks=Hooks(before_tool_call=before),
    )
    await agent.prompt("go")
    assert log.args == [{"count": "not an integer"}]
    assert agent.state.messages[1].content[0].arguments == {"count": 3}  # type: ignore[union-attr]


async def test_prepare_arguments_converts_legacy_arguments_before_validation() -> None:
    log = ToolLog()
    schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    tool = recording_tool(
        "read", log, parameters=schema, prepare_arguments=lambda raw: {"path": raw.get("file", raw.get("path"))}
    )
    agent, _, _, _ = scripted(
        [
            faux_assistant_message([faux_tool_call("read", {"file": "a.txt"}, id="c1")], "toolUse"),
            faux_assistant_message("ok"),
        ],
        tools=[tool],
    )
    await agent.prompt("go")
    assert log.args == [{"path": "a.txt"}]


async def test_arguments_are_validated_and_coerced_against_the_json_schema() -> None:
    log = ToolLog()
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}, "flag": {"type": "boolean"}},
        "required": ["n"],
    }
    agent, _, _, _ = scripted(
        [
            faux_assistant_message([faux_tool_call("t", {"n": "5", "flag": "true"}, id="ok")], "toolUse"),
            faux_assistant_message([faux_tool_call("t", {"flag": True}, id="bad")], "toolUse"),
            faux_assistant_message("done"),
        ],
        tools=[recording_tool("t", log, parameters=schema)],
    )
    await agent.prompt("go")
    assert log.args == [{"n": 5, "flag": True}]
    bad = agent.state.messages[4]
    assert bad.is_error  # type: ignore[union-attr]
    text = bad.content[0].text  # type: ignore[union-attr]
    assert text.startswith("Validation failed for tool \"t\":\n  - root: 'n' is a required property")
    assert text.endswith('Received arguments:\n{\n  "flag": true\n}')


class Point(BaseModel):
    x: int
    y: int = 0


async def test_a_pydantic_model_validates_arguments_and_execute_gets_the_instance() -> None:
    log = ToolLog()
    agent, _, _, requests = scripted(
        [
            faux_assistant_message([faux_tool_call("p", {"x": "3"}, id="ok")], "toolUse"),
            faux_assistant_message([faux_tool_call("p", {"y": 1}, id="bad")], "toolUse"),
            faux_assistant_message("done"),
        ],
        tools=[recording_tool("p", log, parameters=Point)],
    )
    await agent.prompt("go")
    assert log.args == [Point(x=3)]
    assert agent.state.messages[4].content[0].text.startswith('Validation failed for tool "p":\n  - x: Field required')  # type: ignore[union-attr]
    assert requests.contexts[0].tools[0].parameters["properties"]["x"]["type"] == "integer"  # type: ignore[index]


async def test_tool_execution_end_follows_completion_order_and_results_follow_source_order() -> None:
    first_gate = asyncio.Event()
    second_done = asyncio.Event()

    async def first(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        await first_gate.wait()
        return AgentToolResult(content="first")

    async def second(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        second_done.set()
        return AgentToolResult(content="second")

    tool1, tool2 = recording_tool("one"), recording_tool("two")
    tool1.execute, tool2.execute = first, second
    agent, rec, _, _ = scripted(
        [
            faux_assistant_message(
                [faux_tool_call("one", {}, id="tool-1"), faux_tool_call("two", {}, id="tool-2")], "toolUse"
            ),
            faux_assistant_message("done"),
        ],
        tools=[tool1, tool2],
    )
    run = asyncio.create_task(agent.prompt("go"))
    await rec.wait_for(lambda e: e.type == "tool_execution_end" and e.tool_call_id == "tool-2")
    first_gate.set()
    await run
    ends = [e.tool_call_id for e in rec.events if e.type == "tool_execution_end"]
    results = [m.tool_call_id for m in agent.state.messages if m.role == "toolResult"]  # type: ignore[union-attr]
    assert ends == ["tool-2", "tool-1"]
    assert results == ["tool-1", "tool-2"]


async def test_steering_queued_mid_batch_is_injected_after_all_tool_results() -> None:
    gate = asyncio.Event()
    agent, rec, _, requests = scripted(
        [
            faux_assistant_message([faux_tool_call("a", {}, id="a1"), faux_tool_call("b", {}, id="b1")], "toolUse"),
            faux_assistant_message("done"),
        ],
        tools=[recording_tool("a", gate=gate), recording_tool("b", gate=gate)],
    )
    run = asyncio.create_task(agent.prompt("go"))
    await rec.wait_for("tool_execution_start", count=2)
    agent.steer("change of plan")
    gate.set()
    await run
    assert requests.roles(1) == "uattu"
    assert requests.texts(1)[-1] == "change of plan"
    assert roles(agent.state.messages) == ["user", "assistant", "toolResult", "toolResult", "user", "assistant"]


def two_calls(*names: str) -> Any:
    return faux_assistant_message([faux_tool_call(n, {}, id=f"{n}-{i}") for i, n in enumerate(names)], "toolUse")


async def test_a_sequential_tool_forces_sequential_execution_under_parallel_config() -> None:
    log = ToolLog()
    agent, _, _, _ = scripted(
        [two_calls("seq", "seq"), faux_assistant_message("ok")],
        tools=[recording_tool("seq", log, execution_mode="sequential")],
    )
    await agent.prompt("go")
    assert log.max_running == 1
    assert log.started == ["seq-0", "seq-1"]


async def test_one_sequential_tool_makes_the_whole_batch_sequential() -> None:
    log = ToolLog()
    agent, _, _, _ = scripted(
        [two_calls("par", "seq"), faux_assistant_message("ok")],
        tools=[recording_tool("par", log), recording_tool("seq", log, execution_mode="sequential")],
    )
    await agent.prompt("go")
    assert log.max_running == 1


async def test_tools_marked_parallel_run_concurrently() -> None:
    log = ToolLog()
    agent, _, _, _ = scripted(
        [two_calls("par", "par"), faux_assistant_message("ok")],
        tools=[recording_tool("par", log, execution_mode="parallel")],
    )
    await agent.prompt("go")
    assert log.max_running == 2


async def test_sequential_config_runs_calls_one_at_a_time() -> None:
    log = ToolLog()
    agent, _, _, _ = scripted(
        [two_calls("par", "par"), faux_assistant_message("ok")],
        tools=[recording_tool("par", log)],
        tool_execution="sequential",
    )
    await agent.prompt("go")
    assert log.max_running == 1


async def test_the_next_request_uses_the_prepare_next_turn_snapshot() -> None:
    def prepare(turn: Any, signal: Any) -> TurnUpdate:
        context = AgentContext("system from snapshot", turn.context.messages, turn.context.tools)
        return TurnUpdate(context=context)

    agent, _, _, requests = scripted(
        [faux_assistant_message([faux_tool_call("echo", {}, id="c")], "toolUse"), faux_assistant_message("ok")],
        tools=[recording_tool("echo")],
        system_prompt="original",
        hooks=Hooks(prepare_next_turn=prepare),
    )
    await agent.prompt("go")
    assert [c.system_prompt for c in requests.contexts] == ["original", "system from snapshot"]


async def test_prepare_next_turn_can_switch_model_and_thinking_level() -> None:
    other = FauxProvider(models=[{"id": "faux-2"}]).model
    agent, _, _, requests = scripted(
        [faux_assistant_message([faux_tool_call("echo", {}, id="c")], "toolUse"), faux_assistant_message("ok")],
        tools=[recording_tool("echo")],
        hooks=Hooks(prepare_next_turn=lambda turn, signal: {"model": other, "thinking_level": "low"}),
    )
    await agent.prompt("go")
    assert [m.id for m in requests.models] == ["faux-1", "faux-2"]
    assert [o.reasoning for o in requests.options] == [None, "low"]
    assert agent.state.model.id == "faux-1"  # the run's copy changed, not the agent's state


async def test_should_stop_after_turn_stops_with_pis_exact_events_and_polls() -> None:
    faux = FauxProvider()
    faux.set_responses(
        [faux_assistant_message([faux_tool_call("echo", {}, id="c")], "toolUse"), faux_assistant_message("never")]
    )
    polls = {"steering": 0, "follow_up": 0}

    def poll(name: str) -> Any:
        def source() -> list[Any]:
            polls[name] += 1
            return []

        return source

    recorder = EventRecorder()
    config = LoopConfig(
        model=faux.model,
        hooks=Hooks(should_stop_after_turn=lambda turn, signal: True),
        get_steering_messages=poll("steering"),
        get_follow_up_messages=poll("follow_up"),
    )
    context = AgentContext("", [], (recording_tool("echo"),))
    await run_agent_loop([user("go")], context, config, await emit_to(recorder), AbortController().signal, faux.stream)
    assert [t for t in recorder.types() if t != "message_update"] == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
        "tool_execution_start",
        "tool_execution_end",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]
    assert polls == {"steering": 1, "follow_up": 0}
    assert faux.state.call_count == 1


async def test_a_batch_whose_results_all_terminate_makes_one_call_and_one_turn() -> None:
    agent, rec, faux, _ = scripted(
        [two_calls("stop", "stop"), faux_assistant_message("never")],
        tools=[recording_tool("stop", result=lambda a: AgentToolResult(content="bye", terminate=True))],
    )
    await agent.prompt("go")
    assert faux.state.call_count == 1
    assert rec.types().count("turn_end") == 1
    assert roles(rec.events[-1].messages) == ["user", "assistant", "toolResult", "toolResult"]


async def test_a_call_blocked_with_terminate_is_not_executed_and_stops_the_run() -> None:
    log = ToolLog()
    agent, _, faux, _ = scripted(
        [faux_assistant_message([faux_tool_call("danger", {}, id="c")], "toolUse"), faux_assistant_message("never")],
        tools=[recording_tool("danger", log)],
        hooks=Hooks(
            before_tool_call=lambda ctx, signal: BeforeToolCallResult(
                block=True, reason="Blocked by policy", terminate=True
            )
        ),
    )
    await agent.prompt("go")
    assert log.started == []
    result = agent.state.messages[-1]
    assert result.is_error and result.content[0].text == "Blocked by policy"  # type: ignore[union-attr]
    assert faux.state.call_count == 1


async def test_a_blocked_call_without_reason_gets_the_default_text() -> None:
    agent, _, _, _ = scripted(
        [faux_assistant_message([faux_tool_call("t", {}, id="c")], "toolUse"), faux_assistant_message("ok")],
        tools=[recording_tool("t")],
        hooks=Hooks(before_tool_call=lambda ctx, signal: {"block": True}),
    )
    await agent.prompt("go")
    assert agent.state.messages[2].content[0].text == "Tool execution was blocked"  # type: ignore[union-attr]


async def test_a_mixed_batch_with_one_terminating_blocked_call_continues() -> None:
    log = ToolLog()

    def before(ctx: Any, signal: Any) -> Any:
        if ctx.tool_call.name == "danger":
            return {"block": True, "reason": "no", "terminate": True}
        return None

    agent, _, faux, _ = scripted(
        [two_calls("danger", "safe"), faux_assistant_message("continued")],
        tools=[recording_tool("danger", log), recording_tool("safe", log)],
        hooks=Hooks(before_tool_call=before),
    )
    await agent.prompt("go")
    assert log.started == ["safe-1"]
    assert faux.state.call_count == 2


async def test_parallel_calls_continue_when_not_all_results_terminate() -> None:
    def result(args: Any) -> AgentToolResult:
        return AgentToolResult(content="x", terminate=bool(args.get("stop")))

    agent, _, _, _ = scripted(
        [
            faux_assistant_message(
                [faux_tool_call("t", {"stop": True}, id="a"), faux_tool_call("t", {}, id="b")], "toolUse"
            ),
            faux_assistant_message("done"),
        ],
        tools=[recording_tool("t", result=result)],
    )
    await agent.prompt("go")
    assert roles(agent.state.messages) == ["user", "assistant", "toolResult", "toolResult", "assistant"]


async def test_after_tool_call_can_make_a_batch_terminate() -> None:
    agent, _, faux, _ = scripted(
        [faux_assistant_message([faux_tool_call("t", {}, id="c")], "toolUse"), faux_assistant_message("never")],
        tools=[recording_tool("t")],
        hooks=Hooks(after_tool_call=lambda ctx, signal: {"terminate": True}),
    )
    await agent.prompt("go")
    assert faux.state.call_count == 1


async def test_continue_with_an_empty_context_raises() -> None:
    faux = FauxProvider()
    with pytest.raises(ValueError, match=r"^Cannot continue: no messages in context$"):
        await run_agent_loop_continue(
            AgentContext("", [], ()),
            LoopConfig(model=faux.model),
            await emit_to(EventRecorder()),
            AbortController().signal,
            faux.stream,
        )


async def test_continue_from_an_assistant_message_raises() -> None:
    faux = FauxProvider()
    with pytest.raises(ValueError, match=r"^Cannot continue from message role: assistant$"):
        await run_agent_loop_continue(
            AgentContext("", [user("q"), faux_assistant_message("a")], ()),
            LoopConfig(model=faux.model),
            await emit_to(EventRecorder()),
            AbortController().signal,
            faux.stream,
        )


async def test_continue_from_existing_context_emits_no_user_message_events() -> None:
    faux = FauxProvider()
    faux.set_responses([faux_assistant_message("answer")])
    recorder = EventRecorder()
    new = await run_agent_loop_continue(
        AgentContext("", [user("q")], ()),
        LoopConfig(model=faux.model),
        await emit_to(recorder),
        AbortController().signal,
        faux.stream,
    )
    assert roles(new) == ["assistant"]
    assert [e for e in recorder.labels if e.startswith("message_end")] == ["message_end:assistant:stop"]


async def test_continue_accepts_a_custom_message_tail() -> None:
    faux = FauxProvider()
    faux.set_responses([faux_assistant_message("answer")])
    new = await run_agent_loop_continue(
        AgentContext("", [user("q"), Note(text="tail")], ()),
        LoopConfig(model=faux.model),
        await emit_to(EventRecorder()),
        AbortController().signal,
        faux.stream,
    )
    assert roles(new) == ["assistant"]


async def test_each_request_keeps_its_own_view_of_the_transcript() -> None:
    # The default conversion is incremental (each request is built from the previous one plus new messages;
    # bench_engine measures that the cost stays flat), yet every request gets its own view, which later
    # requests do not change, so a stream function may keep it.
    agent, _, _, requests = scripted(
        [faux_assistant_message([faux_tool_call("echo", {}, id=f"c{i}")], "toolUse") for i in range(3)]
        + [faux_assistant_message("done")],
        tools=[recording_tool("echo")],
    )
    await agent.prompt("go")
    assert [requests.roles(i) for i in range(4)] == ["u", "uat", "uatat", "uatatat"]
    assert len({id(c.messages) for c in requests.contexts}) == 4


async def test_every_event_of_a_message_carries_its_key_when_the_stream_hands_new_partials() -> None:
    recorder = EventRecorder()
    new = await run_agent_loop(
        [user("hi")],
        AgentContext("", [], ()),
        LoopConfig(model=FauxProvider().model),
        await emit_to(recorder),
        AbortController().signal,
        copying_stream_fn("three new objects or more"),
    )
    assistant = [e for e in recorder.events if getattr(getattr(e, "message", None), "role", "") == "assistant"]
    assert len({id(e.message) for e in assistant}) > 3  # really new objects
    assert {message_key(e.message) for e in assistant} == {message_key(new[-1])}
    assert message_key(new[0]) != message_key(new[-1])
