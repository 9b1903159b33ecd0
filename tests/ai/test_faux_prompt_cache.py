"""The faux provider's prompt-cache simulation, now incremental (every AgentSession sends a session id): it must
give exactly what comparing the whole serialised prompts gives (Pi's rule), for any sequence of requests."""

from __future__ import annotations

import random
from typing import Any

import pytest

from pi_notebook.ai import AssistantMessage, Context, TextContent, Tool, ToolCall, ToolResultMessage, UserMessage
from pi_notebook.ai.providers._usage_estimate import PromptCache, PromptMeter, _common_prefix, serialize_context

TOOLS = ([Tool("bash", "run", {"type": "object"})], [Tool("read", "r", {})], None)
SYSTEMS = ("", "sys", "tools:")


def a_message(rng: random.Random) -> Any:
    """Messages whose parts look alike at their start ("tools…" against the tools part) on purpose."""
    kind = rng.random()
    if kind < 0.3:
        return UserMessage(content=rng.choice(["hi", "tools: x", "toolsy", "", "user:"]))
    if kind < 0.6:
        return AssistantMessage(content=[TextContent(text=rng.choice(["a", "b", "tools:"]))])
    if kind < 0.8:
        name = rng.choice(["t", "tools"])
        return ToolResultMessage(tool_call_id="c", tool_name=name, content=[TextContent(text="x")])
    return AssistantMessage(content=[ToolCall(id="c", name="tools", arguments={"a": 1})])


@pytest.mark.parametrize("seed", range(40))
def test_the_incremental_prefix_equals_the_whole_text_comparison(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(50):
        cache, meter = PromptCache(), PromptMeter()
        previous: str | None = None
        messages: list[Any] = []
        system, tools = rng.choice(SYSTEMS), rng.choice(TOOLS)
        for _ in range(6):
            step = rng.random()
            if step < 0.4:
                messages = messages + [a_message(rng) for _ in range(rng.randint(0, 3))]  # a new list, as the loop
            elif step < 0.6:
                messages += [a_message(rng) for _ in range(rng.randint(0, 3))]  # the same list, appended to
            elif step < 0.7:
                messages = messages[:-1]  # a retry drops the failed reply
            elif step < 0.8:
                tools = rng.choice(TOOLS)
            elif step < 0.85:
                system = rng.choice(SYSTEMS)
            elif step < 0.9:
                messages = [a_message(rng), *messages[1:]]  # compaction replaced the start
            context = Context(system, messages, tools)
            text = serialize_context(context)
            length = meter.chars(context)
            assert length == len(text)
            expected = None if previous is None else _common_prefix(previous, text)
            assert cache.common_prefix("s", context, meter, length) == expected
            previous = text
