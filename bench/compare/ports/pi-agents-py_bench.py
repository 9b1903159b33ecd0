"""Compare workloads on pi-agents-py 0.58.3 (``pi_agents.agent.Agent``).

Run with the port's venv (default ~/.cache/pi-notebook/compare-venvs/<name>, see ../README.md):
    $PI_COMPARE_VENVS/pi-agents-py/bin/python pi-agents-py_bench.py [--quick]
The port has no faux provider, so it is driven by a scripted stream (4-char deltas) built on its own
``AssistantMessageEventStream``. Its events are plain dicts; its stream_fn is called synchronously.
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
from pi_agents.agent.agent import Agent
from pi_agents.agent.types import AgentTool, AgentToolResult
from pi_agents.ai.types import AssistantMessage, Model, TextContent, ToolCall
from pi_agents.ai.utils.event_stream import AssistantMessageEventStream

MODEL = Model(id="scripted-1", name="Scripted", api="scripted", provider="scripted")


class EchoTool(AgentTool):
    async def execute(self, tool_call_id, params, signal=None, on_update=None):
        return AgentToolResult(content=[TextContent(text=f"echo: {params['text']}")])


ECHO = EchoTool(
    name="echo",
    description="Echo the text back",
    parameters={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
)

_producers: set[asyncio.Task] = set()  # so W3 can stop a stream that abort() did not reach


def scripted_stream_fn(replies: list[tuple], tokens_per_second: float | None = None):
    queue = list(replies)

    def stream(model, context, options=None):
        reply = queue.pop(0)
        signal = getattr(options, "signal", None)  # this port never passes one
        out = AssistantMessageEventStream()

        async def produce() -> None:
            partial = AssistantMessage(api=model.api, provider=model.provider, model=model.id)
            out.push({"type": "start", "partial": partial})
            if reply[0] == "text":
                block = TextContent(text="")
                partial.content.append(block)
                out.push({"type": "text_start", "contentIndex": 0, "partial": partial})
                for delta in chunks4(reply[1]):
                    await pace(tokens_per_second)
                    if signal is not None and signal.aborted:
                        partial.stop_reason, partial.error_message = "aborted", "Request was aborted"
                        out.push({"type": "error", "reason": "aborted", "error": partial})
                        out.end(partial)
                        return
                    append_text(block, "text", delta)
                    out.push({"type": "text_delta", "contentIndex": 0, "delta": delta, "partial": partial})
                out.push({"type": "text_end", "contentIndex": 0, "content": block.text, "partial": partial})
            else:
                _, call_id, name, args = reply
                call = ToolCall(id=call_id, name=name, arguments={})
                partial.content.append(call)
                out.push({"type": "toolcall_start", "contentIndex": 0, "partial": partial})
                for delta in chunks4(json.dumps(args)):
                    await pace()
                    out.push({"type": "toolcall_delta", "contentIndex": 0, "delta": delta, "partial": partial})
                call.arguments = args
                partial.stop_reason = "toolUse"
                out.push({"type": "toolcall_end", "contentIndex": 0, "toolCall": call, "partial": partial})
            out.push({"type": "done", "reason": partial.stop_reason, "message": partial})
            out.end(partial)

        task = asyncio.ensure_future(produce())
        _producers.add(task)
        task.add_done_callback(_producers.discard)
        return out

    return stream


def make_agent(replies: list[tuple], tokens_per_second: float | None = None) -> Agent:
    return Agent(
        {
            "initial_state": {"system_prompt": "", "model": MODEL, "tools": [ECHO]},
            "stream_fn": scripted_stream_fn(replies, tokens_per_second),
            "tool_execution": "parallel",
        }
    )


async def w1(n: int) -> float:
    agent = make_agent([text_reply(n)])
    count = [0]

    def listener(event):
        count[0] += 1

    agent.subscribe(listener)
    t0 = time.perf_counter()
    await agent.prompt("hi")
    elapsed = time.perf_counter() - t0
    # prompt() swallows errors into state.error, so check the outcome
    reply = agent.state.messages[-1]
    assert agent.state.error is None and len(reply.content[0].text) == 4 * n and count[0] > n, agent.state.error
    return elapsed


async def w2(turns: int) -> float:
    agent = make_agent([*(tool_reply(i) for i in range(turns)), text_reply(1)])
    tool_ends = [0]

    def listener(event):
        if event["type"] == "tool_execution_end":
            tool_ends[0] += 1

    agent.subscribe(listener)
    t0 = time.perf_counter()
    await agent.prompt("hi")
    elapsed = time.perf_counter() - t0
    assert agent.state.error is None and tool_ends[0] == turns, (agent.state.error, tool_ends[0])
    return elapsed


def _stop_producers() -> None:
    for task in list(_producers):
        task.cancel()


async def w3_once() -> float | None:
    agent = make_agent([text_reply(W3_TOKENS)], W3_TOKENS_PER_SECOND)
    reached = asyncio.Event()
    updates = [0]

    def listener(event):
        if event["type"] == "message_update":
            updates[0] += 1
            if updates[0] == W3_UPDATES:
                reached.set()

    agent.subscribe(listener)
    return await time_abort(agent.prompt("hi"), reached, agent.abort, agent.wait_for_idle, cleanup=_stop_producers)


if __name__ == "__main__":
    main(
        "pi-agents-py",
        "pi-agents-py",
        "scripted",
        w1,
        w2,
        w3_once,
        notes="Agent driven by a scripted stream (no faux provider in this port; 4-char deltas, no loop yield "
        "between unpaced deltas); Agent.abort() sets an abort event that prompt() never creates and no signal "
        "reaches the loop or the stream",
    )
