"""Messages keep Pi's wire format: a Pi transcript loads, exposes snake_case attributes and dumps back unchanged."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from pydantic import ValidationError

from pi_notebook.ai import (
    AssistantMessage,
    Cost,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from pi_notebook.ai.messages import message_from_dict, message_to_dict, message_to_json, text_of

USER_WITH_IMAGE: dict[str, Any] = {
    "role": "user",
    "content": [
        {"type": "text", "text": "What is wrong in this screenshot?"},
        {
            "type": "image",
            "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg==",
            "mimeType": "image/png",
        },
    ],
    "timestamp": 1767225600000,
}

USER_PLAIN: dict[str, Any] = {"role": "user", "content": "Zoom in on the error dialog.", "timestamp": 1767225600500}

ASSISTANT_TOOL_USE: dict[str, Any] = {
    "role": "assistant",
    "content": [
        {"type": "thinking", "thinking": "The dialog is small; zoom first.", "thinkingSignature": "EqQBCkYIBxgCKkD"},
        {"type": "thinking", "thinking": "", "thinkingSignature": "opaque-redacted-payload", "redacted": True},
        {"type": "text", "text": "Let me zoom in.", "textSignature": "msg_01:0"},
        {
            "type": "toolCall",
            "id": "toolu_01ABC",
            "name": "zoom",
            "arguments": {"factor": 2.5, "region": {"x": 10, "y": 20}, "label": None, "tags": ["a", "b"]},
            "thoughtSignature": "CiQB0e2Kb",
        },
    ],
    "api": "anthropic-messages",
    "provider": "anthropic",
    "model": "claude-sonnet-4-5",
    "responseModel": "claude-sonnet-4-5-20250929",
    "responseId": "msg_01XYZ",
    "diagnostics": [
        {
            "type": "provider_retry",
            "timestamp": 1767225601000,
            "error": {"name": "Error", "message": "overloaded", "code": 529},
            "details": {"attempt": 1},
        }
    ],
    "usage": {
        "input": 1200,
        "output": 340,
        "cacheRead": 800,
        "cacheWrite": 400,
        "cacheWrite1h": 400,
        "reasoning": 120,
        "totalTokens": 2740,
        "cost": {"input": 0.0036, "output": 0.0051, "cacheRead": 0.00024, "cacheWrite": 0.0015, "total": 0.01044},
    },
    "stopReason": "toolUse",
    "rawStopReason": "tool_use",
    "timestamp": 1767225602000,
}

TOOL_RESULT_ERROR: dict[str, Any] = {
    "role": "toolResult",
    "toolCallId": "toolu_01ABC",
    "toolName": "zoom",
    "content": [
        {"type": "text", "text": "zoom failed: region out of range"},
        {"type": "image", "data": "R0lGODlhAQABAAAAACw=", "mimeType": "image/gif"},
    ],
    "details": {"exitCode": 1, "stderr": None},
    "usage": {
        "input": 10,
        "output": 0,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 10,
        "cost": {"input": 0.5, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.5},
    },
    "addedToolNames": ["zoom_out"],
    "isError": True,
    "timestamp": 1767225603000,
}

ASSISTANT_ABORTED: dict[str, Any] = {
    "role": "assistant",
    "content": [{"type": "text", "text": "The dialog says"}],
    "api": "anthropic-messages",
    "provider": "anthropic",
    "model": "claude-sonnet-4-5",
    "usage": {
        "input": 0,
        "output": 0,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 0,
        "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0},
    },
    "stopReason": "aborted",
    "errorMessage": "Request was aborted",
    "timestamp": 1767225604000,
}

TRANSCRIPT = [USER_WITH_IMAGE, USER_PLAIN, ASSISTANT_TOOL_USE, TOOL_RESULT_ERROR, ASSISTANT_ABORTED]


@pytest.mark.parametrize("wire", TRANSCRIPT, ids=lambda wire: f"{wire['role']}-{wire['timestamp']}")
def test_pi_message_round_trips_to_identical_dict(wire: dict[str, Any]) -> None:
    original = copy.deepcopy(wire)
    assert message_to_dict(message_from_dict(wire)) == original


@pytest.mark.parametrize("wire", TRANSCRIPT, ids=lambda wire: f"{wire['role']}-{wire['timestamp']}")
def test_pi_message_round_trips_through_json_text(wire: dict[str, Any]) -> None:
    assert json.loads(message_to_json(message_from_dict(wire))) == wire


def test_loaded_messages_have_the_right_classes() -> None:
    loaded = [message_from_dict(wire) for wire in TRANSCRIPT]
    assert [type(message) for message in loaded] == [
        UserMessage,
        UserMessage,
        AssistantMessage,
        ToolResultMessage,
        AssistantMessage,
    ]


def test_loaded_assistant_exposes_snake_case_attributes() -> None:
    message = message_from_dict(ASSISTANT_TOOL_USE)
    assert isinstance(message, AssistantMessage)
    thinking, redacted, text, call = message.content
    assert isinstance(thinking, ThinkingContent)
    assert thinking.thinking_signature == "EqQBCkYIBxgCKkD"
    assert isinstance(redacted, ThinkingContent)
    assert redacted.redacted is True
    assert isinstance(text, TextContent)
    assert text.text_signature == "msg_01:0"
    assert isinstance(call, ToolCall)
    assert call.thought_signature == "CiQB0e2Kb"
    assert call.arguments == {"factor": 2.5, "region": {"x": 10, "y": 20}, "label": None, "tags": ["a", "b"]}
    assert message.stop_reason == "toolUse"
    assert message.response_id == "msg_01XYZ"
    assert message.usage.cache_read == 800
    assert message.usage.cache_write == 400
    assert message.usage.total_tokens == 2740
    assert message.usage.cost.cache_read == 0.00024


def test_loaded_tool_result_and_aborted_assistant_expose_snake_case_attributes() -> None:
    result = message_from_dict(TOOL_RESULT_ERROR)
    assert isinstance(result, ToolResultMessage)
    assert (result.tool_call_id, result.tool_name, result.is_error) == ("toolu_01ABC", "zoom", True)
    assert result.added_tool_names == ["zoom_out"]
    image = result.content[1]
    assert isinstance(image, ImageContent)
    assert image.mime_type == "image/gif"

    aborted = message_from_dict(ASSISTANT_ABORTED)
    assert isinstance(aborted, AssistantMessage)
    assert (aborted.stop_reason, aborted.error_message) == ("aborted", "Request was aborted")


def test_unknown_pi_fields_are_kept_as_extras() -> None:
    message = message_from_dict(ASSISTANT_TOOL_USE)
    assert message.model_extra is not None
    assert message.model_extra["responseModel"] == "claude-sonnet-4-5-20250929"
    assert message.model_extra["rawStopReason"] == "tool_use"
    assert message.model_extra["diagnostics"][0]["type"] == "provider_retry"
    assert isinstance(message, AssistantMessage)
    assert message.usage.model_extra == {}  # Pi's usage fields are modelled now (issue 29), and written back
    assert (message.usage.cache_write_1h, message.usage.reasoning) == (400, 120)
    assert (
        message_to_dict(message)["usage"] | {"cacheWrite1h": 400, "reasoning": 120} == message_to_dict(message)["usage"]
    )


def test_python_built_messages_dump_with_camel_case_wire_names() -> None:
    assistant = AssistantMessage(
        content=[
            ThinkingContent(thinking="t", thinking_signature="s1"),
            TextContent(text="x", text_signature="s2"),
            ToolCall(id="c1", name="echo", arguments={}, thought_signature="s3"),
        ],
        response_id="r1",
        usage=Usage(cache_read=1, cache_write=2, total_tokens=3, cost=Cost(cache_read=0.1, cache_write=0.2)),
        stop_reason="error",
        error_message="boom",
        timestamp=5,
    )
    wire = message_to_dict(assistant)
    assert set(wire) == {"role", "content", "api", "provider", "model", "responseId", "usage", "stopReason"} | {
        "errorMessage",
        "timestamp",
    }
    assert [set(block) for block in wire["content"]] == [
        {"type", "thinking", "thinkingSignature"},
        {"type", "text", "textSignature"},
        {"type", "id", "name", "arguments", "thoughtSignature"},
    ]
    assert set(wire["usage"]) == {"input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost"}
    assert set(wire["usage"]["cost"]) == {"input", "output", "cacheRead", "cacheWrite", "total"}

    result = ToolResultMessage(
        tool_call_id="c1",
        tool_name="echo",
        content=[ImageContent(data="AA==", mime_type="image/png")],
        added_tool_names=["x"],
        is_error=True,
        timestamp=6,
    )
    assert message_to_dict(result) == {
        "role": "toolResult",
        "toolCallId": "c1",
        "toolName": "echo",
        "content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}],
        "addedToolNames": ["x"],
        "isError": True,
        "timestamp": 6,
    }


def test_unset_optional_fields_are_left_out_of_the_wire_form() -> None:
    wire = message_to_dict(AssistantMessage(content=[TextContent(text="hi")], timestamp=1))
    assert wire == {
        "role": "assistant",
        "content": [{"type": "text", "text": "hi"}],
        "api": "unknown",
        "provider": "unknown",
        "model": "unknown",
        "usage": {
            "input": 0,
            "output": 0,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 0,
            "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0},
        },
        "stopReason": "stop",
        "timestamp": 1,
    }


def test_message_from_dict_accepts_snake_case_keys() -> None:
    message = message_from_dict(
        {"role": "toolResult", "tool_call_id": "c1", "tool_name": "echo", "is_error": True, "timestamp": 1}
    )
    assert isinstance(message, ToolResultMessage)
    assert (message.tool_call_id, message.tool_name, message.is_error) == ("c1", "echo", True)


def test_message_from_dict_rejects_an_unknown_role() -> None:
    with pytest.raises(ValidationError):
        message_from_dict({"role": "system", "content": "x", "timestamp": 1})


def test_message_from_dict_rejects_an_unknown_content_block_type() -> None:
    with pytest.raises(ValidationError):
        message_from_dict({"role": "user", "content": [{"type": "audio", "data": "x"}], "timestamp": 1})


def test_pi_084_deferred_stop_reason_round_trips() -> None:
    # PI-SPEC §1.2 (Pi 0.84.1): StopReason includes "deferred", and such a message carries a `deferred` handle.
    wire = {**copy.deepcopy(ASSISTANT_ABORTED), "stopReason": "deferred", "deferred": {"id": "job-1"}}
    del wire["errorMessage"]
    assert message_to_dict(message_from_dict(wire)) == wire


def test_text_of_user_string_content_is_the_string() -> None:
    assert text_of(message_from_dict(USER_PLAIN)) == "Zoom in on the error dialog."


def test_text_of_joins_text_blocks_and_skips_images() -> None:
    message = UserMessage(
        content=[TextContent(text="a"), ImageContent(data="AA==", mime_type="image/png"), TextContent(text="b")]
    )
    assert text_of(message) == "ab"


def test_text_of_assistant_skips_thinking_and_tool_calls() -> None:
    assert text_of(message_from_dict(ASSISTANT_TOOL_USE)) == "Let me zoom in."


def test_text_of_tool_result_is_its_text_blocks() -> None:
    assert text_of(message_from_dict(TOOL_RESULT_ERROR)) == "zoom failed: region out of range"
