"""Every scenario recorded from Pi itself (tests/fixtures/pi-traces) gives the identical event sequence here.

The scenarios mirror ``traces.mjs`` (Pi 0.83) and ``hooks16.mjs`` (Pi 1.6 hooks). Where Pi's scripts use a
timer (abort after 50 ms, steer after 30 ms) we wait on the event that makes the timing matter instead.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from pi_notebook.agent import Agent, AgentTool, AgentToolResult, Hooks
from pi_notebook.ai import AssistantMessage, UserMessage
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call
from pi_notebook.testing import EventRecorder

TRACES = Path(__file__).parent.parent / "fixtures" / "pi-traces"
AGENT = json.loads((TRACES / "agent.json").read_text())
HOOKS = json.loads((TRACES / "agent-1.6-hooks.json").read_text())


def tool(name: str, *, terminate: bool = False, throws: bool = False, gate: asyncio.Event | None = None) -> AgentTool:
    async def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        if gate is not None:
            await gate.wait()
        if throws:
            raise RuntimeError("tool failed")
        return AgentToolResult(content=f"{name} ok", details={}, terminate=terminate)

    return AgentTool(
        name=name, label=name, description=name, parameters={"type": "object", "properties": {}}, execute=execute
    )


def make(
    responses: list[Any], *, tools: list[AgentTool] | None = None, tps: float | None = None, **options: Any
) -> tuple[Agent, EventRecorder, FauxProvider]:
    faux = FauxProvider(tokens_per_second=tps, token_size=(1, 1))
    faux.set_responses(responses)
    agent = Agent(stream_fn=faux.stream, model=faux.model, tools=tools or [], **options)
    recorder = EventRecorder()
    agent.subscribe(recorder)
    return agent, recorder, faux


def roles(agent: Agent) -> str:
    return "".join(m.role[0] for m in agent.state.messages)


async def test_natural() -> None:
    agent, rec, _ = make([faux_assistant_message("hello")])
    await agent.prompt("hi")
    assert rec.labels == AGENT["natural"]


async def test_tool_then_text() -> None:
    agent, rec, _ = make(
        [faux_assistant_message([faux_tool_call("echo", {}, id="t1")], "toolUse"), faux_assistant_message("done")],
        tools=[tool("echo")],
    )
    await agent.prompt("go")
    assert rec.labels == AGENT["tool_then_text"]


async def test_terminate_all() -> None:
    agent, rec, faux = make(
        [
            faux_assistant_message(
                [faux_tool_call("stop", {}, id="t1"), faux_tool_call("stop", {}, id="t2")], "toolUse"
            ),
            faux_assistant_message("should not be requested"),
        ],
        tools=[tool("stop", terminate=True)],
    )
    await agent.prompt("go")
    assert rec.labels == AGENT["terminate_all"]
    assert faux.state.call_count == 1


async def test_stream_error() -> None:
    agent, rec, _ = make([faux_assistant_message([], "error", "529 overloaded")])
    await agent.prompt("go")
    last = agent.state.messages[-1]
    assert isinstance(last, AssistantMessage)
    assert [*rec.labels, f"last={last.stop_reason}"] == AGENT["stream_error"]


async def test_thrown_stream_fn() -> None:
    def boom(*_: Any) -> Any:
        raise RuntimeError("boom")

    agent = Agent(stream_fn=boom, model=FauxProvider().model)
    seen: list[str] = []

    def listener(event: Any, signal: Any) -> None:
        if event.type == "message_update":
            return
        message = getattr(event, "message", None)
        seen.append(event.type + (f":{message.role}:{getattr(message, 'stop_reason', '') or ''}" if message else ""))

    agent.subscribe(listener)
    await agent.prompt("go")
    last = agent.state.messages[-1]
    assert isinstance(last, AssistantMessage)
    assert [*seen, f"errorMessage={last.error_message}"] == AGENT["thrown_streamfn"]


async def test_abort_mid_stream() -> None:
    agent, rec, _ = make([faux_assistant_message("a " * 400)], tps=200)
    run = asyncio.create_task(agent.prompt("go"))
    await rec.wait_for("message_update", count=3)
    agent.abort()
    await run
    last = agent.state.messages[-1]
    assert isinstance(last, AssistantMessage)
    assert [*rec.labels, f"last={last.stop_reason}"] == AGENT["abort_mid_stream"]


def outcome(agent: Agent, faux: FauxProvider) -> list[str]:
    last = agent.state.messages[-1]
    return [f"last={last.stop_reason}", f"content={len(last.content)}", f"requests={faux.state.call_count}"]  # type: ignore[union-attr]


async def test_abort_after_request_start() -> None:
    """The signal aborts once the stream function was called, before its first chunk: the stream's only event is
    the terminal error, so ``message_start`` already carries the aborted message (issue 18)."""
    agent, rec, faux = make([faux_assistant_message("never streamed")])

    def stream(model: Any, context: Any, options: Any) -> Any:
        response = faux.stream(model, context, options)
        agent.abort()
        return response

    agent.stream_fn = stream
    await agent.prompt("go")
    assert [*rec.labels, *outcome(agent, faux)] == AGENT["abort_after_request_start"]


async def test_abort_in_response_factory() -> None:
    async def factory(*_: Any) -> Any:
        agent.abort()
        return faux_assistant_message("never streamed")

    agent, rec, faux = make([factory])
    await agent.prompt("go")
    assert [*rec.labels, *outcome(agent, faux)] == AGENT["abort_in_response_factory"]


async def test_steering_during_tool() -> None:
    gate = asyncio.Event()
    agent, rec, _ = make(
        [
            faux_assistant_message([faux_tool_call("slow", {}, id="t1")], "toolUse"),
            faux_assistant_message("saw steering"),
        ],
        tools=[tool("slow", gate=gate)],
    )
    run = asyncio.create_task(agent.prompt("go"))
    await rec.wait_for("tool_execution_start")
    agent.steer(UserMessage(content="steer"))
    gate.set()
    await run
    assert [*rec.labels, f"roles={roles(agent)}"] == AGENT["steering_during_tool"]


async def test_follow_up() -> None:
    agent, rec, _ = make([faux_assistant_message("first"), faux_assistant_message("second")])
    agent.follow_up(UserMessage(content="later"))
    await agent.prompt("go")
    assert [*rec.labels, f"roles={roles(agent)}"] == AGENT["follow_up"]


async def test_abort_during_tool() -> None:
    """The user stops while a tool runs. Same events as Pi; Pi then sends one more request with the aborted signal
    (its faux answers it with the aborted message: ``requests=2``), our loop checks the signal before each request
    and records the same aborted message without sending it."""

    async def wait(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        await signal.wait()
        raise RuntimeError("aborted")

    agent, rec, faux = make(
        [faux_assistant_message([faux_tool_call("wait", {}, id="w1")], "toolUse"), faux_assistant_message("never")],
        tools=[AgentTool(name="wait", description="wait", parameters={"type": "object"}, execute=wait)],
    )
    run = asyncio.create_task(agent.prompt("go"))
    await rec.wait_for("tool_execution_start")
    agent.abort()
    await run
    pi = AGENT["abort_during_tool"]
    assert [*rec.labels, *outcome(agent, faux)] == [*pi[:-1], "requests=1"]
    assert pi[-1] == "requests=2"


async def test_tool_throws() -> None:
    agent, rec, _ = make(
        [faux_assistant_message([faux_tool_call("bad", {}, id="t1")], "toolUse"), faux_assistant_message("recovered")],
        tools=[tool("bad", throws=True)],
    )
    await agent.prompt("go")
    assert rec.labels == AGENT["tool_throws"]


def test_every_recorded_agent_scenario_is_replayed() -> None:
    replayed = {name.removeprefix("test_") for name in globals() if name.startswith("test_")}
    assert set(AGENT) - {"thrown_streamfn"} <= replayed
    assert "thrown_stream_fn" in replayed
    assert set(HOOKS) <= replayed


# -- Pi 1.6 hooks (seed 002) ------------------------------------------------------------------------------


async def test_finish_turn_end() -> None:
    agent, rec, faux = make(
        [faux_assistant_message([faux_tool_call("echo", {}, id="t1")], "toolUse"), faux_assistant_message("never")],
        tools=[tool("echo")],
        hooks=Hooks(finish_turn=lambda turn, signal: {"action": "end"}),
    )
    agent.follow_up(UserMessage(content="queued"))
    await agent.prompt("go")
    queued = str(agent.has_queued_messages()).lower()
    assert [*rec.labels, f"queued={queued}", f"requests={faux.state.call_count}"] == HOOKS["finish_turn_end"]


async def test_finish_turn_continue() -> None:
    calls = 0

    def finish_turn(turn: Any, signal: Any) -> Any:
        nonlocal calls
        calls += 1
        return {"action": "continue"} if calls == 1 else None

    agent, rec, faux = make(
        [faux_assistant_message("first"), faux_assistant_message("second")], hooks=Hooks(finish_turn=finish_turn)
    )
    await agent.prompt("go")
    expected = HOOKS["finish_turn_continue"]
    assert [*rec.labels, f"requests={faux.state.call_count}", f"finishTurn_calls={calls}"] == expected


async def test_finish_turn_ignored_on_error() -> None:
    calls = 0

    def finish_turn(turn: Any, signal: Any) -> Any:
        nonlocal calls
        calls += 1
        return {"action": "continue"}

    agent, rec, faux = make(
        [faux_assistant_message([], "error", "500 internal error"), faux_assistant_message("never")],
        hooks=Hooks(finish_turn=finish_turn),
    )
    await agent.prompt("go")
    expected = HOOKS["finish_turn_ignored_on_error"]
    assert [*rec.labels, f"requests={faux.state.call_count}", f"finishTurn_calls={calls}"] == expected


async def test_prepare_request_each_request() -> None:
    seen: list[str] = []
    system_prompts: list[str] = []

    def prepare_request(request: Any, signal: Any) -> Any:
        seen.append("".join(m.role[0] for m in request.context.messages))
        request.context.system_prompt = "budget-checked"
        return {"context": request.context}

    def stream(model: Any, context: Any, options: Any) -> Any:
        system_prompts.append(context.system_prompt)
        return faux.stream(model, context, options)

    agent, rec, faux = make(
        [faux_assistant_message([faux_tool_call("echo", {}, id="t1")], "toolUse"), faux_assistant_message("done")],
        tools=[tool("echo")],
        hooks=Hooks(prepare_request=prepare_request),
    )
    agent.stream_fn = stream
    await agent.prompt("go")
    expected = HOOKS["prepare_request_each_request"]
    assert [*rec.labels, f"prepareRequest_saw={'|'.join(seen)}", f"requests={faux.state.call_count}"] == expected
    assert system_prompts == ["budget-checked", "budget-checked"]


@pytest.mark.parametrize("mode", ["parallel", "sequential"])
async def test_tool_then_text_in_both_execution_modes(mode: str) -> None:
    agent, rec, _ = make(
        [faux_assistant_message([faux_tool_call("echo", {}, id="t1")], "toolUse"), faux_assistant_message("done")],
        tools=[tool("echo")],
        tool_execution=mode,
    )
    await agent.prompt("go")
    assert rec.labels == AGENT["tool_then_text"]
