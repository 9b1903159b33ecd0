"""The unvalidated constructors of the hot path build exactly what pydantic validation builds."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from pi_notebook.ai import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
)
from pi_notebook.ai._trusted import (
    trusted_assistant,
    trusted_text,
    trusted_thinking,
    trusted_tool_call,
    trusted_tool_result,
    trusted_usage,
)
from pi_notebook.ai.messages import message_to_dict


def _state(model: BaseModel) -> tuple[Any, ...]:
    nested = {k: _state(v) if isinstance(v, BaseModel) else v for k, v in model.__dict__.items() if k != "timestamp"}
    return (
        type(model),
        nested,
        list(model.__dict__),  # field order too: reprs and dumps follow it
        model.model_fields_set,
        model.__pydantic_extra__,
        model.__pydantic_private__,
    )


def _same(trusted: BaseModel, validated: BaseModel) -> None:
    assert _state(trusted) == _state(validated)
    assert set(trusted.__dict__) == set(type(trusted).model_fields)  # a field added to the model fails here
    timestamp = getattr(validated, "timestamp", None)
    if timestamp is not None:
        trusted.__dict__["timestamp"] = timestamp
    assert trusted == validated
    assert message_to_dict(trusted) == message_to_dict(validated)
    assert trusted.model_dump() == validated.model_dump()


def test_content_blocks_match_validation() -> None:
    _same(trusted_text("hi"), TextContent(text="hi"))
    _same(trusted_thinking(""), ThinkingContent(thinking=""))
    arguments = {"path": "a"}
    call = trusted_tool_call("c1", "read", arguments)
    _same(call, ToolCall(id="c1", name="read", arguments={"path": "a"}))
    assert call.unparsed_arguments is None


def test_usage_and_messages_match_validation() -> None:
    counts = {"input": 3, "output": 4, "cache_read": 1, "cache_write": 2, "total_tokens": 10}
    _same(trusted_usage(**counts), Usage(**counts))
    _same(
        trusted_assistant("faux", "prov", "m1", "pending"),
        AssistantMessage(api="faux", provider="prov", model="m1", stop_reason="pending"),
    )
    content: list[TextContent | ImageContent] = [TextContent(text="ok")]
    _same(
        trusted_tool_result("c1", "echo", content, {"n": 1}, True),
        ToolResultMessage(
            tool_call_id="c1",
            tool_name="echo",
            content=content,
            details={"n": 1},
            usage=None,
            added_tool_names=None,
            is_error=True,
        ),
    )


def test_trusted_models_are_independent_and_mutable() -> None:
    first, second = trusted_assistant("a", "p", "m", "pending"), trusted_assistant("a", "p", "m", "pending")
    first.content.append(trusted_text("x"))
    first.usage.input = 5
    assert second.content == [] and second.usage.input == 0
    assert first.usage.cost is not second.usage.cost
    assert AssistantMessage.model_validate(message_to_dict(first)).content == [TextContent(text="x")]


def test_builder_still_validates_ids_from_provider_json() -> None:
    from pydantic import ValidationError

    from pi_notebook.ai import MessageBuilder

    builder = MessageBuilder("faux", "faux", "m")
    with pytest.raises(ValidationError):
        builder.toolcall_start(None, "x")  # type: ignore[arg-type]
