"""Tool result messages: built without validation when a tool returns plain blocks, validated otherwise."""

from __future__ import annotations

from typing import Any

from pi_notebook.agent import Agent, AgentTool, AgentToolResult
from pi_notebook.ai import ImageContent, TextContent, ToolResultMessage, Usage
from pi_notebook.ai.messages import message_from_dict, message_to_dict
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message, faux_tool_call


async def _result_of(result: Any) -> ToolResultMessage:
    async def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
        return result

    tool = AgentTool(name="t", description="t", parameters={"type": "object"}, execute=execute)
    faux = FauxProvider()
    faux.set_responses(
        [faux_assistant_message([faux_tool_call("t", {}, id="c1")], "toolUse"), faux_assistant_message("done")]
    )
    agent = Agent(stream_fn=faux.stream, model=faux.model, tools=[tool])
    await agent.prompt("go")
    message = agent.state.messages[2]
    assert isinstance(message, ToolResultMessage)
    return message


async def test_plain_blocks_give_the_message_validation_would() -> None:
    image = ImageContent(data="AAAA", mime_type="image/png")
    message = await _result_of(AgentToolResult(content=[TextContent(text="a"), image], details={"k": 1}))
    assert message == message_from_dict(message_to_dict(message))  # round-trips like a validated one
    assert message.content == [TextContent(text="a"), image] and message.details == {"k": 1}
    assert message.tool_call_id == "c1" and message.tool_name == "t" and not message.is_error
    assert message.model_fields_set == ToolResultMessage(tool_call_id="c1", tool_name="t").model_fields_set | {
        "content",
        "details",
        "usage",
        "added_tool_names",
        "is_error",
    }


async def test_what_needs_converting_is_still_validated() -> None:
    block: Any = {"type": "text", "text": "from a dict"}  # not the declared type, but validation accepts it
    converted = await _result_of(AgentToolResult(content=[block]))
    assert converted.content == [TextContent(text="from a dict")]
    assert isinstance(converted.content[0], TextContent)
    message = await _result_of(AgentToolResult(content="ok", usage=Usage(input=3), added_tool_names=["x"]))
    assert message.usage == Usage(input=3) and message.added_tool_names == ["x"]
