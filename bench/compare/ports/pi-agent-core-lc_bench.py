"""Compare workloads on pi-agent-core-lc 0.6.0 (``pi_agent_core.Agent``).

Run with the port's venv (default ~/.cache/pi-notebook/compare-venvs/<name>, see ../README.md):
    $PI_COMPARE_VENVS/pi-agent-core-lc/bin/python pi-agent-core-lc_bench.py [--quick]
The port's only mock streams live in its tests and emit fixed one-delta replies, so it is driven by a
scripted stream (4-char deltas) built on its own ``AssistantMessageEventStream`` and pydantic events.
"""

from __future__ import annotations

import asyncio
import json
import time

from _common import (
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
from pi_agent_core import Agent, AgentToolResult, AssistantMessage, Model
from pi_agent_core.event_stream import AssistantMessageEventStream
from pi_agent_core.tools import SimpleTool
from pi_agent_core.types import (
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

MODEL = Model(provider="scripted", model_id="scripted-1", api="scripted")

ECHO = SimpleTool(
    name="echo",
    description="Echo the text back",
    label="echo",
    parameters={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    execute_fn=lambda tool_call_id, params, signal, on_update: AgentToolResult(
        content=[{"type": "text", "text": f"echo: {params['text']}"}]
    ),
)


def scripted_stream_fn(replies: list[tuple], tokens_per_second: float | None = None):
    queue = list(replies)

    def stream(model, context, options=None):
        reply = queue.pop(0)
        signal = getattr(options, "signal", None)
        out = AssistantMessageEventStream()

        async def produce() -> None:
            partial = AssistantMessage(content=[], api=model.api, provider=model.provider, model=model.model_id)
            out.push(StartEvent(partial=partial))
            if reply[0] == "text":
                partial.content.append({"type": "text", "text": ""})
                block = partial.content[0]  # pydantic copied nothing here: mutate in place
                out.push(TextStartEvent(partial=partial, content_index=0))
                for delta in chunks4(reply[1]):
                    await pace(tokens_per_second)
                    if signal is not None and signal.aborted:
                        partial.stopReason, partial.errorMessage = "aborted", "Request was aborted"
                        out.set_final_message(partial)
                        out.push(ErrorEvent(partial=partial, reason="aborted", error_message="Request was aborted"))
                        return
                    append_text(block, "text", delta)
                    out.push(TextDeltaEvent(partial=partial, delta=delta, content_index=0))
                out.push(TextEndEvent(partial=partial, content=block["text"], content_index=0))
            else:
                _, call_id, name, args = reply
                partial.content.append({"type": "toolCall", "id": call_id, "name": name, "arguments": {}})
                call = partial.content[0]
                out.push(ToolCallStartEvent(partial=partial, content_index=0))
                for delta in chunks4(json.dumps(args)):
                    await pace()
                    out.push(ToolCallDeltaEvent(partial=partial, delta=delta, content_index=0))
                call["arguments"] = args
                partial.stopReason = "toolUse"
                out.push(ToolCallEndEvent(partial=partial, tool_call=call, content_index=0))
            out.set_final_message(partial)
            out.push(DoneEvent(partial=partial, reason=partial.stopReason))

        out._producer = asyncio.ensure_future(produce())  # keep the task alive while the stream is read
        return out

    return stream


def make_agent(replies: list[tuple], tokens_per_second: float | None = None) -> Agent:
    return Agent(
        initial_state={"system_prompt": "", "model": MODEL, "tools": [ECHO]},
        stream_fn=scripted_stream_fn(replies, tokens_per_second),
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
    reply = agent.messages[-1]
    assert reply.stopReason == "stop" and len(reply.content[0]["text"]) == 4 * n and count[0] > n, agent.error_message
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
    assert agent.error_message is None and tool_ends[0] == turns, (agent.error_message, tool_ends[0])
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
        "pi-agent-core-lc",
        "pi-agent-core-lc",
        "scripted",
        w1,
        w2,
        w3_once,
        notes="Agent driven by a scripted stream (no usable faux provider in this port; 4-char deltas, no loop "
        "yield between unpaced deltas); the loop deep-copies the partial message (model_copy) for every update",
    )
