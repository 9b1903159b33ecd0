"""What goes on the wire to an OpenAI-compatible server, per detected or overridden compat (issue 17 items 1, 3, 7).

Real servers disagree: llama-cpp-python with a GGUF's own chat template fails on content parts and rejects
``"content": null``; it and LiteLLM read only ``max_tokens``; OpenAI's reasoning models take only
``max_completion_tokens`` and the ``developer`` role. Requests go over loopback to the fault server, which
records them.
"""

from __future__ import annotations

from typing import Any

import pytest

from pi_notebook.ai import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    ModelCost,
    OpenAICompletionsCompat,
    StreamOptions,
    TextContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    complete,
    resolve_openai_compat,
)
from pi_notebook.testing import FaultServer, Reply


def user(text: str = "What is 2 + 3?") -> UserMessage:
    return UserMessage(content=[TextContent(text=text)])


def tool_round() -> list[Any]:
    call = ToolCall(id="call_1", name="add", arguments={"a": 2, "b": 3})
    return [
        user(),
        AssistantMessage(content=[call], stop_reason="toolUse", api="openai-completions", provider="p", model="m"),
        ToolResultMessage(tool_call_id="call_1", tool_name="add", content=[TextContent(text="5")]),
        user("thanks"),
    ]


async def sent(server: FaultServer, model: Model, messages: list[Any], **options: Any) -> dict[str, Any]:
    server.script([Reply.text("ok")])
    context = Context(system_prompt="be brief", messages=messages, tools=options.pop("tools", None))
    model = model.model_copy(update={"base_url": server.openai_base_url})
    reply = await complete(model, context, StreamOptions(api_key="sk-test", **options))
    assert reply.stop_reason == "stop", reply.error_message
    body = server.requests[-1].json
    assert isinstance(body, dict)
    return body


def local(**fields: Any) -> Model:
    return Model(**{"id": "smollm2", "api": "openai-completions", "provider": "openai-compatible", **fields})


# -- detection -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "base_url", "model_id", "expected"),
    [
        # (max tokens field, null content ok, developer role)
        ("openai", "https://api.openai.com/v1", "gpt-4o", ("max_completion_tokens", True, True)),
        ("openai-compatible", "https://api.openai.com/v1", "gpt-4o", ("max_completion_tokens", True, True)),
        ("openai-compatible", "http://127.0.0.1:8080/v1", "smollm2", ("max_tokens", False, False)),
        ("openai-compatible", "http://litellm.internal:4000", "gpt-4o", ("max_tokens", False, False)),
        ("groq", "https://api.groq.com/openai/v1", "llama", ("max_completion_tokens", True, True)),
        ("openai-compatible", "https://api.together.xyz/v1", "m", ("max_tokens", True, False)),
        ("openrouter", "https://openrouter.ai/api/v1", "anthropic/claude", ("max_completion_tokens", True, True)),
        ("openrouter", "https://openrouter.ai/api/v1", "meta/llama", ("max_completion_tokens", True, False)),
        ("openai-compatible", "https://api.moonshot.ai/v1", "kimi", ("max_tokens", True, False)),
    ],
)
def test_compat_is_detected_from_provider_and_base_url(
    provider: str, base_url: str, model_id: str, expected: tuple[str, bool, bool]
) -> None:
    model = Model(id=model_id, api="openai-completions", provider=provider, base_url=base_url)
    compat = resolve_openai_compat(model)
    assert (compat.max_tokens_field, compat.supports_null_assistant_content, compat.supports_developer_role) == expected
    assert compat.user_text_as_string and compat.supports_usage_in_streaming


def test_fields_set_on_the_model_win_and_pis_camel_case_keys_load() -> None:
    model = Model.model_validate(
        {
            "id": "gpt-4o", "api": "openai-completions", "provider": "openai", "baseUrl": "https://api.openai.com/v1",
            "compat": {"maxTokensField": "max_tokens", "supportsUsageInStreaming": False, "zaiToolStream": True},
        }
    )  # fmt: skip
    compat = resolve_openai_compat(model)
    assert (compat.max_tokens_field, compat.supports_usage_in_streaming) == ("max_tokens", False)
    assert compat.supports_null_assistant_content  # not overridden: still detected


# -- the wire ------------------------------------------------------------------------------------------------


async def test_a_text_only_user_message_goes_out_as_a_string(server: FaultServer) -> None:
    body = await sent(server, local(), [user("first line"), UserMessage(content="already a string")])
    assert body["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "first line"},
        {"role": "user", "content": "already a string"},
    ]


async def test_a_user_message_with_an_image_keeps_its_parts(server: FaultServer) -> None:
    image = ImageContent(data="aGk=", mime_type="image/png")
    body = await sent(server, local(input=("text", "image")), [UserMessage(content=[TextContent(text="see"), image])])
    assert body["messages"][1]["content"] == [
        {"type": "text", "text": "see"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGk="}},
    ]


async def test_parts_can_be_kept_by_override(server: FaultServer) -> None:
    body = await sent(server, local(compat=OpenAICompletionsCompat(user_text_as_string=False)), [user("hi")])
    assert body["messages"][1]["content"] == [{"type": "text", "text": "hi"}]


async def test_a_tool_call_only_message_has_empty_content_on_a_local_server_and_null_on_openai(
    server: FaultServer,
) -> None:
    local_body = await sent(server, local(), tool_round())
    hosted_body = await sent(server, local(provider="openai"), tool_round())
    assert local_body["messages"][2]["content"] == ""
    assert hosted_body["messages"][2]["content"] is None
    for body in (local_body, hosted_body):
        assert body["messages"][2]["tool_calls"] == [
            {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a":2,"b":3}'}}
        ]
        assert body["messages"][3] == {"role": "tool", "tool_call_id": "call_1", "content": "5"}
        assert body["tools"] == []  # tools were used earlier: sent empty, as Pi does for LiteLLM/Anthropic


async def test_an_empty_assistant_message_is_left_out(server: FaultServer) -> None:
    empty = AssistantMessage(content=[TextContent(text="  ")], stop_reason="stop")
    body = await sent(server, local(), [user(), empty, user("again")])
    assert [m["role"] for m in body["messages"]] == ["system", "user", "user"]


async def test_tool_result_name_and_assistant_bridge_by_override(server: FaultServer) -> None:
    compat = OpenAICompletionsCompat(requires_tool_result_name=True, requires_assistant_after_tool_result=True)
    body = await sent(server, local(provider="openai", compat=compat), tool_round())
    assert body["messages"][2]["content"] == ""  # never null when a bridge is required (Pi)
    assert body["messages"][3] == {"role": "tool", "tool_call_id": "call_1", "content": "5", "name": "add"}
    assert body["messages"][4] == {"role": "assistant", "content": "I have processed the tool results."}
    assert body["messages"][5] == {"role": "user", "content": "thanks"}


@pytest.mark.parametrize(
    ("model", "field"),
    [(local(max_tokens=64), "max_tokens"), (local(provider="openai", max_tokens=64), "max_completion_tokens")],
)
async def test_an_explicit_output_limit_goes_in_the_field_the_server_reads(
    server: FaultServer, model: Model, field: str
) -> None:
    body = await sent(server, model, [user()])
    assert body[field] == 64
    assert {"max_tokens", "max_completion_tokens"} & set(body) == {field}


async def test_the_default_output_limit_is_not_sent_and_the_request_option_wins(server: FaultServer) -> None:
    assert not {"max_tokens", "max_completion_tokens"} & set(await sent(server, local(), [user()]))
    assert (await sent(server, local(max_tokens=64), [user()], max_tokens=8))["max_tokens"] == 8


async def test_reasoning_models_get_the_developer_role_where_it_exists(server: FaultServer) -> None:
    hosted_body = await sent(server, local(provider="openai", reasoning=True), [user()], reasoning="high")
    local_body = await sent(server, local(reasoning=True), [user()], reasoning="high")
    assert hosted_body["messages"][0]["role"] == "developer"
    assert local_body["messages"][0]["role"] == "system"
    assert hosted_body["reasoning_effort"] == local_body["reasoning_effort"] == "high"


async def test_usage_is_not_asked_for_when_the_server_cannot_stream_it(server: FaultServer) -> None:
    body = await sent(server, local(compat=OpenAICompletionsCompat(supports_usage_in_streaming=False)), [user()])
    assert "stream_options" not in body
    assert (await sent(server, local(), [user()]))["stream_options"] == {"include_usage": True}


async def test_tool_choice_is_passed_through(server: FaultServer) -> None:
    choice = {"type": "function", "function": {"name": "add"}}
    tools = [Tool(name="add", description="adds", parameters={"type": "object"})]
    body = await sent(server, local(), [user()], tools=tools, tool_choice=choice)
    assert body["tool_choice"] == choice
    assert body["tools"][0]["function"]["name"] == "add"


# -- usage a server never streams ---------------------------------------------------------------------------


async def test_a_server_that_streams_no_usage_gets_an_estimate_marked_as_such(server: FaultServer) -> None:
    # llama-cpp-python's server: no usage chunk even with include_usage.
    text = "x" * 400
    server.script([Reply(Reply.text("y" * 80).blocks, send_usage=False), Reply.text("y" * 80)])
    model = local(base_url=server.openai_base_url, cost=ModelCost(input=1.0, output=2.0))
    context = Context(messages=[UserMessage(content=[TextContent(text=text)])])
    estimated = await complete(model, context)
    reported = await complete(model, context)
    assert estimated.usage.estimated is True
    assert estimated.usage.input == pytest.approx(len("user:" + text) / 4, abs=1)
    assert estimated.usage.output == 20
    assert estimated.usage.total_tokens == estimated.usage.input + 20
    assert estimated.usage.cost.total == pytest.approx((estimated.usage.input * 1.0 + 20 * 2.0) / 1e6)
    assert reported.usage.estimated is None
    assert (reported.usage.input, reported.usage.output) == (10, 5)
