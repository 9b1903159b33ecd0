"""Issue 31 items 5 and 6, over real loopback HTTP: usage a server does not report is estimated from what its model
was given, and a reply stopped or failed after the server began answering is counted too.

* Item 5: llama-cpp-python streams no usage, and its default chat template drops the tool definitions; counting them
  made 1,934 estimated prompt tokens of about 530 real ones, and compaction began after the first long reply on a
  2,048-token window. The tools count once the transcript shows the model sees them (it called one).
* Item 6: an aborted or failed reply of such a server (or of any server that reports usage only at the end) was
  counted 0/0, so token and cost budgets undercounted it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from pathlib import Path
from typing import Any

import pytest

from pi_notebook.ai import (
    AbortController,
    AssistantMessage,
    Context,
    Message,
    Model,
    ModelCost,
    StreamOptions,
    TextContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    complete,
    stream,
)
from pi_notebook.ai.models import model_from_spec
from pi_notebook.notebook import default_tools
from pi_notebook.notebook._defaults import system_prompt
from pi_notebook.session import AgentSession, CompactionStartEvent, Settings
from pi_notebook.testing import EventRecorder, Fault, FaultServer, Reply, TokenUsage

SYSTEM = "You are a helpful assistant. " * 20
BIG_SCHEMA = {
    "type": "object",
    "properties": {f"field_{i}": {"type": "string", "description": "a long description " * 10} for i in range(20)},
}
TOOLS = [Tool(name="lookup", description="Looks things up. " * 30, parameters=BIG_SCHEMA)]


def local(server: FaultServer, **fields: Any) -> Model:
    fields = {"id": "smollm2", "api": "openai-completions", "provider": "openai-compatible", **fields}
    return Model(base_url=server.openai_base_url, **fields)


def no_usage(reply: Reply) -> Reply:
    """The same reply from a server that never streams usage (llama-cpp-python)."""
    return dataclasses.replace(reply, send_usage=False)


def tokens(*parts: str) -> int:
    """Characters / 4 of the parts as the estimate joins them (Pi's serialisation: blank lines between)."""
    return math.ceil(len("\n\n".join(parts)) / 4)


def user(text: str) -> UserMessage:
    return UserMessage(content=[TextContent(text=text)])


# -- item 5 ---------------------------------------------------------------------------------------------------


async def test_tool_definitions_a_model_has_not_shown_it_sees_are_not_counted(server: FaultServer) -> None:
    server.script([no_usage(Reply.text("y" * 80))])
    question = user("What is the capital of France?")
    reply = await complete(local(server), Context(system_prompt=SYSTEM, messages=[question], tools=TOOLS))
    assert reply.usage.estimated is True
    # the tools are not counted: the server's chat template may drop them, and this model has not used one
    assert reply.usage.input == tokens(f"system:{SYSTEM}", f"user:{text(question)}")
    assert reply.usage.output == 20


async def test_once_the_model_called_a_tool_its_definitions_are_counted(server: FaultServer) -> None:
    model = local(server)
    call = ToolCall(id="c1", name="lookup", arguments={"field_0": "x"})
    earlier = AssistantMessage(
        content=[call], stop_reason="toolUse", api=model.api, provider=model.provider, model=model.id
    )
    result = ToolResultMessage(tool_call_id="c1", tool_name="lookup", content=[TextContent(text="found")])
    server.script([no_usage(Reply.text("done")), no_usage(Reply.tool_call("lookup", {"field_1": "y"}))])
    messages: list[Message] = [user("look it up"), earlier, result]
    after_a_call = await complete(model, Context(system_prompt=SYSTEM, messages=messages, tools=TOOLS))
    calling = await complete(model, Context(system_prompt=SYSTEM, messages=[user("look")], tools=TOOLS))
    schema_tokens = len(str(BIG_SCHEMA)) // 4
    without_tools = tokens(f"system:{SYSTEM}", "user:look")
    assert after_a_call.usage.input > schema_tokens
    assert calling.usage.input > without_tools + schema_tokens  # this reply calls one: it sees them


async def test_a_first_long_reply_on_a_small_window_does_not_start_a_compaction(
    server: FaultServer, tmp_path: Path
) -> None:
    # The notebook's tools and system prompt, SmolLM2's 2,048-token window, a server that streams no usage.
    tools = default_tools()
    model = model_from_spec(f"openai-compatible:{server.openai_base_url}:smollm2", context_window=2048)
    prompt = system_prompt(tools, cwd=str(tmp_path), namespace={})
    session = AgentSession(model=model, tools=tools, system_prompt=prompt, settings=Settings())
    recorder = EventRecorder("session")
    session.subscribe(recorder)
    server.script([no_usage(Reply.text("A long answer. " * 160))])  # 2,400 characters, about 600 tokens
    await session.prompt("Tell me about Paris.")
    reply = session.messages[-1]
    assert isinstance(reply, AssistantMessage) and reply.stop_reason == "stop"
    # the system prompt and the question, not the tools' schemas (which this server's template drops)
    assert reply.usage.estimated is True and reply.usage.input < (len(prompt) + 200) / 4
    assert not [event for event in recorder.events if isinstance(event, CompactionStartEvent)]
    assert len(server.requests) == 1  # no summary request
    assert "tools" in server.requests[0].json  # the tools were sent all the same


# -- item 6 ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("usage", ["never", "at the end"])
async def test_a_reply_stopped_mid_stream_counts_its_prompt_and_what_it_wrote(server: FaultServer, usage: str) -> None:
    reply = Reply.text("word " * 400, delay_s=0.01)
    server.script([no_usage(reply) if usage == "never" else reply])
    controller = AbortController()
    model = local(server, cost=ModelCost(input=1.0, output=2.0))
    question = user("Write a long story.")
    response = stream(
        model, Context(system_prompt=SYSTEM, messages=[question]), StreamOptions(signal=controller.signal)
    )
    async for event in response:
        if event.type == "text_delta" and len(event.partial.content[0].text) >= 40:  # type: ignore[union-attr]
            controller.abort()
    message = await response.result()
    assert message.stop_reason == "aborted"
    written = message.content[0].text  # type: ignore[union-attr]
    assert message.usage.estimated is True
    assert message.usage.input == tokens(f"system:{SYSTEM}", f"user:{text(question)}")
    assert message.usage.output == math.ceil(len(written) / 4) > 0
    assert message.usage.cost.total == pytest.approx((message.usage.input + 2 * message.usage.output) / 1e6)


async def test_an_anthropic_reply_stopped_mid_stream_keeps_the_reported_input_and_counts_what_it_wrote(
    server: FaultServer,
) -> None:
    # message_start reports the input and "1" output token so far; the final count never comes.
    server.script([Reply.text("word " * 400, delay_s=0.01, usage=TokenUsage(input_tokens=40, output_tokens=500))])
    controller = AbortController()
    model = model_from_spec(f"anthropic-compatible:{server.anthropic_base_url}:claude-proxy")
    options = StreamOptions(signal=controller.signal, api_key="sk-test")
    response = stream(model, Context(messages=[user("Write a long story.")]), options)
    async for event in response:
        if event.type == "text_delta" and len(event.partial.content[0].text) >= 40:  # type: ignore[union-attr]
            controller.abort()
    message = await response.result()
    assert message.stop_reason == "aborted"
    assert message.usage.input == 40
    assert message.usage.output == math.ceil(len(message.content[0].text) / 4) > 1  # type: ignore[union-attr]
    assert message.usage.estimated is True


async def test_a_reply_cut_by_a_connection_reset_counts_too(server: FaultServer) -> None:
    server.script([no_usage(Reply.text("word " * 100, fault=Fault.reset(after_events=10)))])
    message = await complete(local(server), Context(messages=[user("Write a long story.")]))
    assert message.stop_reason == "error"
    assert message.usage.estimated is True
    assert message.usage.input > 0 and message.usage.output > 0


async def test_a_refused_request_costs_nothing(server: FaultServer) -> None:
    server.script([Fault.status(400, message="bad request")])
    message = await complete(local(server), Context(messages=[user("hi")]))
    assert message.stop_reason == "error"
    assert (message.usage.input, message.usage.output, message.usage.estimated) == (0, 0, None)


async def test_a_session_budget_counts_a_stopped_reply(server: FaultServer) -> None:
    server.script([no_usage(Reply.text("word " * 400, delay_s=0.01))])
    session = AgentSession(model=local(server), settings=Settings())
    streaming = asyncio.Event()
    session.subscribe(lambda event: streaming.set() if event.type == "message_update" else None)
    task = asyncio.ensure_future(session.prompt("Write a long story."))
    await streaming.wait()
    await session.abort()
    await task
    reply = session.messages[-1]
    assert isinstance(reply, AssistantMessage) and reply.stop_reason == "aborted"
    assert session.budget.input_tokens == reply.usage.input > 0
    assert session.budget.output_tokens == reply.usage.output > 0


def text(message: UserMessage) -> str:
    block = message.content[0]
    assert isinstance(block, TextContent)
    return block.text
