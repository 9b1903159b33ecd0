"""The OpenAI Responses and Google Generative AI providers over loopback HTTP: Pi 0.83's event mapping, what is
carried to the next turn (reasoning items, thought signatures), usage with cached and reasoning tokens at the
model's cache prices (every API), finish reasons, and Pi's error texts. The shared fault matrix is in
test_http_providers.py."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from pi_notebook.ai import (
    AssistantMessage,
    Context,
    Model,
    ModelCost,
    StreamOptions,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    complete,
)
from pi_notebook.ai.overflow import is_context_overflow
from pi_notebook.ai.retry import is_retryable_assistant_error
from pi_notebook.testing import Fault, FaultServer, Reply, TokenUsage
from pi_notebook.testing._fault_script import TextBlock, ThinkingBlock, ToolCallBlock

PRICES = ModelCost(input=2.0, output=8.0, cache_read=0.5, cache_write=2.5)
TOOLS = [Tool("bash", "run a command", {"type": "object", "properties": {"command": {"type": "string"}}})]


def responses_model(server: FaultServer, **fields: Any) -> Model:
    fields = {"id": "o4-mini", "api": "openai-responses", "provider": "openai", "reasoning": True} | fields
    return Model(base_url=server.openai_base_url, cost=PRICES, **fields)


def gemini_model(server: FaultServer, **fields: Any) -> Model:
    fields = {"id": "gemini-2.5-flash", "api": "google-generative-ai", "provider": "google", "reasoning": True} | fields
    return Model(base_url=server.google_base_url, cost=PRICES, **fields)


def ask(text: str = "list the files") -> list[Any]:
    return [UserMessage(content=[TextContent(text=text)])]


async def turn(model: Model, messages: list[Any], **options: Any) -> AssistantMessage:
    options = {"api_key": "k", "reasoning": "medium", **options}
    return await complete(model, Context("be brief", messages, TOOLS), StreamOptions(**options))


THINK_AND_CALL = Reply((ThinkingBlock("I will list them.", "ZW5jcnlwdGVk"), ToolCallBlock("bash", {"command": "ls"})))


async def test_responses_carries_its_reasoning_item_and_call_ids_into_the_next_request(server: FaultServer) -> None:
    server.script([THINK_AND_CALL, Reply.text("two files")])
    model = responses_model(server)
    first = await turn(model, ask())
    thinking, call = first.content
    assert isinstance(thinking, ThinkingContent) and isinstance(call, ToolCall)
    assert first.stop_reason == "toolUse"
    result = ToolResultMessage(tool_call_id=call.id, tool_name="bash", content=[TextContent(text="a b")])
    await turn(model, [*ask(), first, result])
    sent = server.requests[1].json
    assert sent["store"] is False and sent["include"] == ["reasoning.encrypted_content"]
    reasoning, function_call, output = sent["input"][2:]
    assert reasoning["type"] == "reasoning" and reasoning["encrypted_content"] == "ZW5jcnlwdGVk"
    call_id, item_id = call.id.split("|")
    assert function_call == {"type": "function_call", "id": item_id, "call_id": call_id, "name": "bash",
                             "arguments": '{"command":"ls"}'}  # fmt: skip
    assert output == {"type": "function_call_output", "call_id": call_id, "output": "a b"}


async def test_gemini_carries_thought_signatures_into_the_next_request(server: FaultServer) -> None:
    server.script([THINK_AND_CALL, Reply.text("two files")])
    model = gemini_model(server)
    first = await turn(model, ask())
    thinking, call = first.content
    assert isinstance(thinking, ThinkingContent) and isinstance(call, ToolCall)
    assert (thinking.thinking, thinking.thinking_signature) == ("I will list them.", "ZW5jcnlwdGVk")
    result = ToolResultMessage(tool_call_id=call.id, tool_name="bash", content=[TextContent(text="a b")])
    await turn(model, [*ask(), first, result])
    model_turn, answer = server.requests[1].json["contents"][1:]
    assert model_turn["parts"] == [
        {"thought": True, "text": "I will list them.", "thoughtSignature": "ZW5jcnlwdGVk"},
        {"functionCall": {"name": "bash", "args": {"command": "ls"}}, "thoughtSignature": call.thought_signature},
    ]
    assert answer == {"role": "user", "parts": [{"functionResponse": {"name": "bash", "response": {"output": "a b"}}}]}
    other = gemini_model(server, id="gemini-2.5-pro")  # another model: its thoughts go back as text, unsigned
    server.script([Reply.text("ok")])
    await turn(other, [*ask(), first, result])
    assert server.requests[2].json["contents"][1]["parts"][0] == {"text": "I will list them."}


async def test_gemini_names_calls_without_an_id_and_renames_repeated_ids(server: FaultServer) -> None:
    calls = (ToolCallBlock("bash", {"command": "a"}), ToolCallBlock("bash", {"command": "b"}, id="same"),
             ToolCallBlock("bash", {"command": "c"}, id="same"))  # fmt: skip
    server.script([Reply(calls)])
    message = await turn(gemini_model(server), ask())
    first, second, third = (b.id for b in message.content if isinstance(b, ToolCall))
    assert first.startswith("bash_") and second == "same" and third.startswith("bash_") and first != third


@pytest.mark.parametrize("reason", ["SAFETY", "RECITATION", "PROHIBITED_CONTENT", "MALFORMED_FUNCTION_CALL"])
async def test_a_gemini_safety_stop_is_an_error_that_is_not_retried(server: FaultServer, reason: str) -> None:
    body = {"candidates": [{"content": {"parts": [{"text": "I can"}], "role": "model"}, "finishReason": reason}]}
    server.script([Fault.raw(200, f"data: {json.dumps(body)}\n\n", content_type="text/event-stream", chunked=True)])
    message = await turn(gemini_model(server), ask())
    assert (message.stop_reason, message.error_message) == ("error", f"Provider stopped with: {reason}")
    assert message.content[0].text == "I can"  # type: ignore[union-attr]
    assert not is_retryable_assistant_error(message)


async def test_a_blocked_gemini_prompt_is_an_error(server: FaultServer) -> None:
    body = {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 9}}
    server.script([Fault.raw(200, f"data: {json.dumps(body)}\n\n", content_type="text/event-stream", chunked=True)])
    message = await turn(gemini_model(server), ask())
    assert (message.stop_reason, message.error_message) == ("error", "Provider stopped with: SAFETY")


@pytest.mark.parametrize("model", [responses_model, gemini_model])
async def test_a_length_stop(server: FaultServer, model: Any) -> None:
    server.script([Reply.text("cut sh", stop_reason="length")])
    message = await turn(model(server), ask())
    assert message.stop_reason == "length"


# -- usage: every API, cache reads and writes at the model's cache prices ----------------------------------------

API_MODELS: dict[str, Callable[[FaultServer], Model]] = {
    "openai": lambda s: Model(id="m", api="openai-completions", provider="openai", base_url=s.openai_base_url),
    "anthropic": lambda s: Model(id="m", api="anthropic-messages", provider="anthropic", base_url=s.anthropic_base_url),
    "responses": responses_model,
    "google": gemini_model,
}


@pytest.mark.parametrize("api", API_MODELS)
async def test_usage_carries_cache_reads_and_writes_priced_at_the_cache_prices(server: FaultServer, api: str) -> None:
    usage = TokenUsage(input_tokens=100, output_tokens=40, cache_read_tokens=9_000, cache_write_tokens=500)
    server.script([Reply.text("hello", usage=usage)])
    model = API_MODELS[api](server).model_copy(update={"cost": PRICES})
    message = await turn(model, ask(), reasoning=None)
    got = message.usage
    # Gemini reports no cache writes: what another API would call a write is plain input there (Pi reads it so).
    written = 0 if api == "google" else 500
    assert (got.input, got.output, got.cache_read, got.cache_write) == (600 - written, 40, 9_000, written)
    assert got.total_tokens == 9_640
    assert got.cost.cache_read == pytest.approx(9_000 * 0.5 / 1e6)
    assert got.cost.cache_write == pytest.approx(written * 2.5 / 1e6)
    assert got.cost.total == pytest.approx(((600 - written) * 2 + 40 * 8 + 9_000 * 0.5 + written * 2.5) / 1e6)


async def test_responses_and_gemini_count_reasoning_tokens(server: FaultServer) -> None:
    usage = {"input_tokens": 50, "input_tokens_details": {"cached_tokens": 20}, "output_tokens": 30,
             "output_tokens_details": {"reasoning_tokens": 12}, "total_tokens": 80}  # fmt: skip
    done = {"type": "response.completed", "response": {"id": "r", "status": "completed", "output": [], "usage": usage}}
    server.script([Fault.raw(200, f"data: {json.dumps(done)}\n\n", content_type="text/event-stream", chunked=True)])
    message = await turn(responses_model(server), ask())
    assert (message.usage.input, message.usage.cache_read, message.usage.output, message.usage.reasoning) == (
        30,
        20,
        30,
        12,
    )
    meta = {"promptTokenCount": 50, "cachedContentTokenCount": 20, "candidatesTokenCount": 18, "thoughtsTokenCount": 12}
    chunk = {"candidates": [{"content": {"parts": [{"text": "hi"}]}, "finishReason": "STOP"}], "usageMetadata": meta}
    server.script([Fault.raw(200, f"data: {json.dumps(chunk)}\n\n", content_type="text/event-stream", chunked=True)])
    message = await turn(gemini_model(server), ask())
    assert (message.usage.input, message.usage.cache_read, message.usage.output, message.usage.reasoning) == (
        30,
        20,
        30,
        12,
    )


# -- Pi's error texts --------------------------------------------------------------------------------------------


async def test_responses_errors_read_as_pi_words_them(server: FaultServer) -> None:
    server.script([Fault.rate_limit(), Fault.status(400, body=b""), Fault.overflow(), Fault.quota()])
    model = responses_model(server)
    limited, empty, overflow, quota = [await turn(model, ask()) for _ in range(4)]
    assert limited.error_message == (
        'OpenAI API error (429): {"message":"Rate limit reached for requests. Please try again later.",'
        '"type":"requests","param":null,"code":"rate_limit_exceeded"}'
    )
    assert empty.error_message == "OpenAI API error (400): 400 status code (no body)"
    assert is_retryable_assistant_error(limited) and not is_retryable_assistant_error(quota)
    assert is_context_overflow(overflow, 200_000)


async def test_responses_mid_stream_errors_read_as_pi_words_them(server: FaultServer) -> None:
    failed = {"type": "response.failed", "response": {"status": "failed", "error": {"code": "server_error",
              "message": "The server had an error"}}}  # fmt: skip
    server.script(
        [
            Reply.text("partial " * 5, fault=Fault.sse_error("rate_limit_exceeded", "Slow down", after_events=4)),
            Fault.raw(200, f"data: {json.dumps(failed)}\n\n", content_type="text/event-stream", chunked=True),
        ]
    )
    model = responses_model(server)
    mid, failure = await turn(model, ask()), await turn(model, ask())
    assert mid.error_message == "Error Code rate_limit_exceeded: Slow down"
    assert mid.content and is_retryable_assistant_error(mid)
    assert failure.error_message == "server_error: The server had an error"
    assert is_retryable_assistant_error(failure)


async def test_gemini_errors_are_the_error_body_as_googles_sdk_words_them(server: FaultServer) -> None:
    server.script([Fault.rate_limit(), Fault.overflow(), Fault.quota(), Fault.overloaded()])
    model = gemini_model(server)
    limited, overflow, quota, overloaded = [await turn(model, ask()) for _ in range(4)]
    assert limited.error_message == (
        '{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).",'
        '"status":"RESOURCE_EXHAUSTED"}}'
    )
    assert is_retryable_assistant_error(limited) and is_retryable_assistant_error(overloaded)
    assert not is_retryable_assistant_error(quota)
    assert is_context_overflow(overflow, 1_048_576)


# -- whole JSON bodies instead of streams ----------------------------------------------------------------------


async def test_whole_json_replies_become_the_same_messages(server: FaultServer) -> None:
    response = {"object": "response", "id": "resp_1", "status": "completed",
                "output": [{"type": "message", "id": "msg_1", "role": "assistant",
                            "content": [{"type": "output_text", "text": "whole"}]}],
                "usage": {"input_tokens": 5, "output_tokens": 1, "total_tokens": 6}}  # fmt: skip
    gemini = {"candidates": [{"content": {"parts": [{"text": "whole"}]}, "finishReason": "STOP"}]}
    server.script([Fault.raw(200, response), Fault.raw(200, json.dumps([gemini]))])
    for model in (responses_model(server), gemini_model(server)):
        message = await turn(model, ask())
        assert (message.stop_reason, message.content[0].text) == ("stop", "whole")  # type: ignore[union-attr]


def test_a_gemini_text_stream_keeps_text_and_thoughts_apart() -> None:
    reply = Reply((ThinkingBlock("hmm", "c2ln"), TextBlock("answer")))
    events = reply.wire_events("google", model="gemini-2.5-flash")
    parts = [json.loads(e[len(b"data: ") :])["candidates"][0].get("content", {}).get("parts") for e in events]
    assert parts[0] == [{"text": "hmm", "thought": True, "thoughtSignature": "c2ln"}]
    assert [p for p in parts[1:] if p] == [[{"text": "answ"}], [{"text": "er"}]]


async def test_anthropic_one_hour_cache_writes_cost_twice_the_input_price(server: FaultServer) -> None:
    usage = {"input_tokens": 10, "output_tokens": 0, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 3000,
             "cache_creation": {"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 2000}}  # fmt: skip
    events = [
        ("message_start", {"type": "message_start", "message": {"id": "m", "usage": usage}}),
        (
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}},
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    body = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
    server.script([Fault.raw(200, body, content_type="text/event-stream", chunked=True)])
    model = API_MODELS["anthropic"](server).model_copy(update={"cost": PRICES})
    message = await turn(model, ask(), reasoning=None)
    assert (message.usage.cache_write, message.usage.cache_write_1h) == (3000, 2000)
    assert message.usage.cost.cache_write == pytest.approx((1000 * 2.5 + 2000 * 2 * 2.0) / 1e6)  # Pi's calculateCost
