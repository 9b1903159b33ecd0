"""A model that streams tool arguments that are not valid JSON, over real loopback HTTP: the tool is not run, and
the error result the model gets back shows what it sent (issue 17 item 9; was ``Received arguments: {}``)."""

from __future__ import annotations

from typing import Any

import pytest
from wire_apis import APIS, model_for

from pi_notebook.agent import Agent, AgentTool, AgentToolResult
from pi_notebook.ai import ToolResultMessage, stream
from pi_notebook.testing import FaultServer, Reply

SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    "required": ["a", "b"],
}


@pytest.mark.parametrize("api", APIS)
async def test_the_validation_error_quotes_the_salvaged_and_the_sent_arguments(api: str, server: FaultServer) -> None:
    runs: list[Any] = []

    async def add(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        runs.append(args)
        return AgentToolResult(content=str(args["a"] + args["b"]))

    server.script([Reply.tool_call("add", '{"a": 2, "b": ', chunk_chars=3), Reply.text("I will try again.")])
    tool = AgentTool(name="add", description="adds", parameters=SCHEMA, execute=add)
    agent = Agent(model=model_for(api, server, keyless=True), stream_fn=stream, tools=[tool])
    await agent.prompt("What is 2 + 3?")
    result = next(m for m in agent.state.messages if isinstance(m, ToolResultMessage))
    text = result.content[0].text  # type: ignore[union-attr]
    assert result.is_error
    assert runs == []
    assert text.startswith("Validation failed for tool \"add\":\n  - root: 'b' is a required property")
    assert 'Received arguments:\n{\n  "a": 2\n}' in text
    assert text.endswith('The arguments sent were not valid JSON:\n{"a": 2, "b": ')
    assert agent.state.messages[-1].stop_reason == "stop"  # type: ignore[union-attr]
