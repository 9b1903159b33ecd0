"""Compare workloads on pi-ai-python 1.7.0 (``pi_agent.Agent``).

Run with the port's venv (default ~/.cache/pi-notebook/compare-venvs/<name>, see ../README.md):
    $PI_COMPARE_VENVS/pi-ai-python/bin/python pi-ai-python_bench.py [--quick]
[--driver faux|scripted]. ``faux`` (default) is the port's own faux provider with token size 1;
``scripted`` is a minimal stream with the same event shape as the other ports' scripted streams.
"""

from __future__ import annotations

import asyncio
import json
import time

from _common import (
    DRIVER,
    W3_TOKENS,
    W3_TOKENS_PER_SECOND,
    W3_UPDATES,
    append_text,
    chunks4,
    main,
    pace,
    text_reply,
    time_abort,
    tool_reply,
)
from pi_agent import Agent, AgentInitialState, AgentTool, AgentToolResult
from pi_ai import AssistantMessage, TextContent, ToolCall, faux_assistant_message, faux_text, faux_tool_call
from pi_ai.event_stream import AssistantMessageEventStream
from pi_ai.providers.faux import create_faux_core
from pi_ai.types import (
    DoneEvent,
    ErrorEvent,
    StartEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)

DRIVER = DRIVER or "faux"


async def _echo(tool_call_id, params, signal=None, on_update=None):
    return AgentToolResult([TextContent(f"echo: {params['text']}")])


ECHO = AgentTool(
    name="echo",
    description="Echo the text back",
    parameters={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    execute=_echo,
)


def scripted_stream_fn(replies: list[tuple], tokens_per_second: float | None = None):
    queue = list(replies)

    def stream(model, context, options=None):
        reply = queue.pop(0)
        signal = (options or {}).get("signal")
        out = AssistantMessageEventStream()

        async def produce() -> None:
            partial = AssistantMessage([], api=model.api, provider=model.provider, model=model.id)
            out.push(StartEvent(partial))
            if reply[0] == "text":
                block = TextContent("")
                partial.content.append(block)
                out.push(TextStartEvent(0, partial))
                for delta in chunks4(reply[1]):
                    await pace(tokens_per_second)
                    if signal is not None and signal.aborted:
                        partial.stop_reason, partial.error_message = "aborted", "Request was aborted"
                        out.push(ErrorEvent("aborted", partial))
                        out.end(partial)
                        return
                    append_text(block, "text", delta)
                    out.push(TextDeltaEvent(0, delta, partial))
                out.push(TextEndEvent(0, block.text, partial))
            else:
                _, call_id, name, args = reply
                call = ToolCall(call_id, name, {})
                partial.content.append(call)
                out.push(ToolCallStartEvent(0, partial))
                for delta in chunks4(json.dumps(args)):
                    await pace()
                    out.push(ToolCallDeltaEvent(0, delta, partial))
                call.arguments = args
                partial.stop_reason = "toolUse"
                out.push(ToolCallEndEvent(0, call, partial))
            out.push(DoneEvent(partial.stop_reason, partial))
            out.end(partial)

        out.start(produce())
        return out

    return stream


def make_agent(replies: list[tuple], tokens_per_second: float | None = None) -> Agent:
    faux = create_faux_core(tokens_per_second=tokens_per_second, token_size={"min": 1, "max": 1})
    if DRIVER == "scripted":
        stream_fn = scripted_stream_fn(replies, tokens_per_second)
    else:
        faux.set_responses(
            [
                faux_assistant_message(faux_text(r[1]))
                if r[0] == "text"
                else faux_assistant_message(faux_tool_call(r[2], r[3], id=r[1]), stop_reason="toolUse")
                for r in replies
            ]
        )
        stream_fn = faux.stream
    return Agent(
        initial_state=AgentInitialState(system_prompt="", model=faux.get_model(), tools=[ECHO]),
        stream_fn=stream_fn,
        tool_execution="parallel",
    )


async def w1(n: int) -> float:
    agent = make_agent([text_reply(n)])
    count = [0]

    def listener(event, signal):
        count[0] += 1

    agent.subscribe(listener)
    t0 = time.perf_counter()
    await agent.prompt("hi")
    elapsed = time.perf_counter() - t0
    reply = agent.state.messages[-1]
    assert len(reply.content[0].text) == 4 * n and count[0] > n, (reply.stop_reason, count[0])
    return elapsed


async def w2(turns: int) -> float:
    agent = make_agent([*(tool_reply(i) for i in range(turns)), text_reply(1)])
    tool_ends = [0]

    def listener(event, signal):
        if event.type == "tool_execution_end":
            tool_ends[0] += 1

    agent.subscribe(listener)
    t0 = time.perf_counter()
    await agent.prompt("hi")
    elapsed = time.perf_counter() - t0
    assert tool_ends[0] == turns, tool_ends[0]
    return elapsed


async def w3_once() -> float | None:
    agent = make_agent([text_reply(W3_TOKENS)], W3_TOKENS_PER_SECOND)
    reached = asyncio.Event()
    updates = [0]

    def listener(event, signal):
        if event.type == "message_update":
            updates[0] += 1
            if updates[0] == W3_UPDATES:
                reached.set()

    agent.subscribe(listener)
    return await time_abort(agent.prompt("hi"), reached, agent.abort, agent.wait_for_idle)


if __name__ == "__main__":
    main(
        "pi-ai-python" if DRIVER == "faux" else "pi-ai-python-scripted",
        "pi-ai-python",
        DRIVER,
        w1,
        w2,
        w3_once,
        notes="pi_agent.Agent + "
        + (
            "pi_ai faux provider (create_faux_core, token size 1; it re-serializes the whole transcript per call "
            "for its usage estimate, O(turns^2) in w2)"
            if DRIVER == "faux"
            else "scripted stream (4-char deltas, no loop yield between unpaced deltas, no usage estimate)"
        ),
    )
