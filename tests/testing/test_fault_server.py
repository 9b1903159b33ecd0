"""The fault server over real loopback HTTP; httpx and the official OpenAI and Anthropic SDKs are its reference clients.

(The SDKs are test dependencies only: nothing in pi_notebook imports them.)
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

import anthropic
import anyio
import httpx
import openai
import pytest
from wire_apis import APIS

from pi_notebook.testing import (
    Api,
    Fault,
    FaultServer,
    Reply,
    ScriptEntry,
    StatusFault,
    StreamFault,
    TextBlock,
    ThinkingBlock,
    TokenUsage,
    ToolCallBlock,
)

PATHS: dict[Api, str] = {
    "openai": "/v1/chat/completions",
    "anthropic": "/v1/messages",
    "responses": "/v1/responses",
    "google": "/v1beta/models/test-model:streamGenerateContent?alt=sse",
}
TERMINAL: dict[Api, str] = {
    "openai": "[DONE]",
    "anthropic": "message_stop",
    "responses": "response.completed",
    "google": "finishReason",  # Gemini's last chunk: no event of its own
}
USER: Any = [{"role": "user", "content": "hi"}]  # Any: each SDK wants its own TypedDict

SseEvent = tuple[str | None, str]  # (event name, data)


def http_client(read_timeout: float = 5.0) -> httpx.AsyncClient:
    # Plain HTTP on loopback: verify=False skips loading CA certificates (~60 ms a client).
    return httpx.AsyncClient(timeout=httpx.Timeout(5.0, read=read_timeout), verify=False)


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with http_client() as client:
        yield client


@pytest.fixture
async def openai_client(server: FaultServer) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(
        base_url=server.openai_base_url,
        api_key="sk-test",
        max_retries=0,
        http_client=openai.DefaultAsyncHttpxClient(verify=False),  # the SDK's defaults, without loading CAs
    ) as client:
        yield client


@pytest.fixture
async def anthropic_client(server: FaultServer) -> AsyncIterator[anthropic.AsyncAnthropic]:
    async with anthropic.AsyncAnthropic(
        base_url=server.anthropic_base_url,
        api_key="sk-ant-test",
        max_retries=0,
        http_client=anthropic.DefaultAsyncHttpxClient(verify=False),
    ) as client:
        yield client


def request_body(api: Api, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "test-model", "stream": True, "messages": USER}
    if api == "openai":
        body["stream_options"] = {"include_usage": True}
    elif api == "anthropic":
        body["max_tokens"] = 100
    elif api == "responses":
        body = {"model": "test-model", "stream": True, "input": USER}
    else:  # Gemini asks for a stream by its method (the URL), not in the body
        body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    return body | extra


def url(server: FaultServer, api: Api) -> str:
    return server.base_url + PATHS[api]


async def read_sse(response: httpx.Response) -> tuple[list[SseEvent], Exception | None]:
    """Every complete SSE event of the body, and the error that ended the body early, if any."""
    events: list[SseEvent] = []
    name: str | None = None
    data: list[str] = []
    try:
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                data.append(line.removeprefix("data: "))
            elif not line and data:
                events.append((name, "\n".join(data)))
                name, data = None, []
    except httpx.HTTPError as error:
        return events, error
    return events, None


async def stream_sse(
    http: httpx.AsyncClient, server: FaultServer, api: Api, **extra: Any
) -> tuple[httpx.Response, list[SseEvent], Exception | None]:
    async with http.stream("POST", url(server, api), json=request_body(api, **extra)) as response:
        events, error = await read_sse(response)
    return response, events, error


def caused_by(error: BaseException | None, kind: type[BaseException]) -> bool:
    """Whether ``kind`` is in the chain of causes of ``error`` (httpx wraps the socket error twice)."""
    while error is not None:
        if isinstance(error, kind):
            return True
        error = error.__cause__ or error.__context__
    return False


def payloads(events: list[SseEvent]) -> list[Any]:
    return [json.loads(data) for _, data in events if data != "[DONE]"]


# ------------------------------------------------------------------------------------ OpenAI, via the official SDK


async def test_openai_sdk_reassembles_streamed_text_and_usage(
    server: FaultServer, openai_client: openai.AsyncOpenAI
) -> None:
    usage = TokenUsage(input_tokens=7, output_tokens=3, cache_read_tokens=2)
    server.script([Reply.text("hello world", chunk_chars=4, usage=usage)])
    chunks = []
    async with openai_client.chat.completions.stream(
        model="gpt-test", messages=USER, stream_options={"include_usage": True}
    ) as stream:
        async for event in stream:
            if event.type == "chunk":
                chunks.append(event.chunk)
        final = await stream.get_final_completion()
    assert final.choices[0].message.content == "hello world"
    assert final.choices[0].finish_reason == "stop"
    assert final.model == "gpt-test"
    assert final.usage is not None
    assert (final.usage.prompt_tokens, final.usage.completion_tokens, final.usage.total_tokens) == (9, 3, 12)
    assert final.usage.prompt_tokens_details is not None
    assert final.usage.prompt_tokens_details.cached_tokens == 2
    contents = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert contents == ["hell", "o wo", "rld"]


async def test_openai_sdk_reassembles_tool_call_arguments_streamed_in_fragments(
    server: FaultServer, openai_client: openai.AsyncOpenAI
) -> None:
    server.script([Reply.tool_call("bash", {"command": "ls -la"}, id="call_1", text="Let me look.", chunk_chars=5)])
    async with openai_client.chat.completions.stream(model="gpt-test", messages=USER) as stream:
        fragments = [
            event.arguments_delta async for event in stream if event.type == "tool_calls.function.arguments.delta"
        ]
        final = await stream.get_final_completion()
    message = final.choices[0].message
    assert message.content == "Let me look."
    assert message.tool_calls is not None
    (call,) = message.tool_calls
    assert call.type == "function"
    assert (call.id, call.function.name, json.loads(call.function.arguments)) == (
        "call_1",
        "bash",
        {"command": "ls -la"},
    )
    assert final.choices[0].finish_reason == "tool_calls"
    assert len(fragments) > 1
    assert "".join(fragments) == '{"command": "ls -la"}'


async def test_openai_sdk_reassembles_two_tool_calls_by_index(
    server: FaultServer, openai_client: openai.AsyncOpenAI
) -> None:
    calls = (ToolCallBlock("read", {"path": "a"}, "call_a"), ToolCallBlock("read", {"path": "b"}, "call_b"))
    server.script([Reply(calls)])
    async with openai_client.chat.completions.stream(model="gpt-test", messages=USER) as stream:
        final = await stream.get_final_completion()
    tool_calls = final.choices[0].message.tool_calls or []
    assert [(c.id, c.function.arguments) for c in tool_calls] == [
        ("call_a", '{"path": "a"}'),
        ("call_b", '{"path": "b"}'),
    ]


async def test_openai_sdk_parses_every_chunk_of_a_thinking_reply(
    server: FaultServer, openai_client: openai.AsyncOpenAI
) -> None:
    server.script([Reply.thinking("Let me think.", then_text="42")])
    stream = await openai_client.chat.completions.create(model="gpt-test", messages=USER, stream=True)
    reasoning, text = [], []
    async for chunk in stream:
        delta = chunk.choices[0].delta
        reasoning.append(getattr(delta, "reasoning_content", None) or "")
        text.append(delta.content or "")
    assert "".join(reasoning) == "Let me think."
    assert "".join(text) == "42"


# --------------------------------------------------------------------------------- Anthropic, via the official SDK


async def test_anthropic_sdk_reassembles_streamed_text_and_usage(
    server: FaultServer, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    usage = TokenUsage(input_tokens=7, output_tokens=3, cache_read_tokens=2, cache_write_tokens=1)
    server.script([Reply.text("hello world", usage=usage)])
    async with anthropic_client.messages.stream(model="claude-test", max_tokens=100, messages=USER) as stream:
        texts = [text async for text in stream.text_stream]
        final = await stream.get_final_message()
    assert texts == ["hell", "o wo", "rld"]
    assert [block.type for block in final.content] == ["text"]
    assert final.content[0].type == "text"
    assert final.content[0].text == "hello world"
    assert (final.stop_reason, final.model) == ("end_turn", "claude-test")
    u = final.usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_input_tokens, u.cache_creation_input_tokens) == (7, 3, 2, 1)


async def test_anthropic_sdk_reassembles_tool_call_input(
    server: FaultServer, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    server.script([Reply.tool_call("bash", {"command": "ls -la"}, id="toolu_1", text="Looking.", chunk_chars=3)])
    async with anthropic_client.messages.stream(model="claude-test", max_tokens=100, messages=USER) as stream:
        json_deltas = [e.partial_json async for e in stream if e.type == "input_json"]
        final = await stream.get_final_message()
    text, tool = final.content
    assert text.type == "text"
    assert text.text == "Looking."
    assert tool.type == "tool_use"
    assert (tool.id, tool.name, tool.input) == ("toolu_1", "bash", {"command": "ls -la"})
    assert final.stop_reason == "tool_use"
    assert len(json_deltas) > 1


async def test_anthropic_sdk_reassembles_thinking_signature_and_text(
    server: FaultServer, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    server.script([Reply.thinking("Let me think.", then_text="42", signature="sig-1")])
    async with anthropic_client.messages.stream(model="claude-test", max_tokens=100, messages=USER) as stream:
        thinking_deltas = [e.thinking async for e in stream if e.type == "thinking"]
        final = await stream.get_final_message()
    thinking, text = final.content
    assert thinking.type == "thinking"
    assert (thinking.thinking, thinking.signature) == ("Let me think.", "sig-1")
    assert text.type == "text"
    assert text.text == "42"
    assert len(thinking_deltas) > 1


# ---------------------------------------------------------------------------------------- the wire, read raw


async def test_openai_stream_is_a_role_chunk_deltas_finish_usage_then_done(
    server: FaultServer, http: httpx.AsyncClient
) -> None:
    server.script([Reply.text("abcdef", chunk_chars=3)])
    response, events, error = await stream_sse(http, server, "openai")
    assert error is None
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["transfer-encoding"] == "chunked"
    assert all(name is None for name, _ in events)
    assert events[-1] == (None, "[DONE]")
    chunks = payloads(events)
    assert all(c["object"] == "chat.completion.chunk" and c["model"] == "test-model" for c in chunks)
    assert [c["choices"][0]["delta"] for c in chunks[:-1]] == [
        {"role": "assistant", "content": ""},
        {"content": "abc"},
        {"content": "def"},
        {},
    ]
    assert [c["choices"][0]["finish_reason"] for c in chunks[:-1]] == [None, None, None, "stop"]
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"] == {
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "total_tokens": 15,
        "prompt_tokens_details": {"cached_tokens": 0},
    }


async def test_openai_usage_chunk_is_sent_only_when_include_usage_is_set(
    server: FaultServer, http: httpx.AsyncClient
) -> None:
    server.script([Reply.text("hi")])
    _, events, _ = await stream_sse(http, server, "openai", stream_options=None)
    assert all(chunk["choices"] and "usage" not in chunk for chunk in payloads(events))


async def test_anthropic_stream_names_each_event_by_its_type_from_message_start_to_message_stop(
    server: FaultServer, http: httpx.AsyncClient
) -> None:
    server.script([Reply.thinking("hm", then_text="ok")])
    response, events, error = await stream_sse(http, server, "anthropic")
    assert error is None
    assert response.headers["content-type"].startswith("text/event-stream")
    assert all(json.loads(data)["type"] == name for name, data in events)
    names = [name for name, _ in events]
    assert names == [
        "message_start",
        "ping",
        *["content_block_start", "content_block_delta", "content_block_delta", "content_block_stop"],
        *["content_block_start", "content_block_delta", "content_block_stop"],
        "message_delta",
        "message_stop",
    ]
    deltas = [p["delta"]["type"] for p in payloads(events) if p["type"] == "content_block_delta"]
    assert deltas == ["thinking_delta", "signature_delta", "text_delta"]


@pytest.mark.parametrize(("api", "wire_value"), [("openai", "length"), ("anthropic", "max_tokens")])
async def test_length_stop_reason_maps_to_each_format(
    server: FaultServer, http: httpx.AsyncClient, api: Api, wire_value: str
) -> None:
    server.script([Reply.text("cut", stop_reason="length")])
    _, events, _ = await stream_sse(http, server, api)
    chunks = payloads(events)
    if api == "openai":
        assert chunks[-2]["choices"][0]["finish_reason"] == wire_value
    else:
        assert chunks[-2]["delta"]["stop_reason"] == wire_value


@pytest.mark.parametrize("api", APIS)
async def test_tool_call_arguments_given_as_a_string_are_sent_verbatim(
    server: FaultServer, http: httpx.AsyncClient, api: Api
) -> None:
    server.script([Reply.tool_call("bash", '{"command": ', chunk_chars=100)])
    _, events, _ = await stream_sse(http, server, api)
    chunks = payloads(events)
    if api == "openai":
        calls = [c["choices"][0]["delta"].get("tool_calls") for c in chunks if c["choices"]]
        arguments = [call[0]["function"]["arguments"] for call in calls if call]
    elif api == "anthropic":
        arguments = [p["delta"]["partial_json"] for p in chunks if p["type"] == "content_block_delta"]
    elif api == "responses":
        arguments = [p["delta"] for p in chunks if p["type"] == "response.function_call_arguments.delta"]
    else:  # Gemini sends a call's arguments whole; text that is no JSON object is sent as it is
        parts = [part for c in chunks for part in c["candidates"][0].get("content", {}).get("parts", [])]
        arguments = [part["functionCall"]["args"] for part in parts if "functionCall" in part]
    assert "".join(arguments) == '{"command": '


@pytest.mark.parametrize("api", APIS)
async def test_wire_events_lists_exactly_the_events_sent(
    server: FaultServer, http: httpx.AsyncClient, api: Api
) -> None:
    reply = Reply((ThinkingBlock("ab"), TextBlock("cdef"), ToolCallBlock("t", {"x": 1})), chunk_chars=2)
    server.script([reply])
    _, events, _ = await stream_sse(http, server, api)
    assert len(events) == len(reply.wire_events(api))


# -------------------------------------------------------------------------------------------------- status faults


@pytest.mark.parametrize("api", APIS)
async def test_status_fault_sends_its_status_retry_headers_and_a_format_error_body(
    server: FaultServer, http: httpx.AsyncClient, api: Api
) -> None:
    headers = {"retry-after-ms": "50", "retry-after": "Wed, 21 Oct 2015 07:28:00 GMT", "x-should-retry": "true"}
    server.script([Fault.status(429, message="Rate limit exceeded", headers=headers)])
    response = await http.post(url(server, api), json=request_body(api))
    assert response.status_code == 429
    assert {name: response.headers[name] for name in headers} == headers
    assert response.headers["content-type"] == "application/json"
    if api in ("openai", "responses"):
        error = response.json()["error"]
        assert (error["message"], error["type"]) == ("Rate limit exceeded", "requests")
    elif api == "anthropic":
        assert response.json() == {
            "type": "error",
            "error": {"type": "rate_limit_error", "message": "Rate limit exceeded"},
        }
    else:
        assert response.json() == {
            "error": {"code": 429, "message": "Rate limit exceeded", "status": "RESOURCE_EXHAUSTED"}
        }


async def test_sdks_raise_their_status_errors_with_headers_and_body(
    server: FaultServer, openai_client: openai.AsyncOpenAI, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    server.script(
        [Fault.rate_limit(headers={"retry-after": "2"}), Fault.overloaded(headers={"x-should-retry": "false"})]
    )
    with pytest.raises(openai.RateLimitError) as openai_error:
        await openai_client.chat.completions.create(model="gpt-test", messages=USER, stream=True)
    with pytest.raises(anthropic.OverloadedError) as anthropic_error:
        await anthropic_client.messages.create(model="claude-test", max_tokens=10, messages=USER, stream=True)
    assert openai_error.value.response.headers["retry-after"] == "2"
    assert openai_error.value.code == "rate_limit_exceeded"
    assert anthropic_error.value.response.headers["x-should-retry"] == "false"
    assert anthropic_error.value.body == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
    }


@pytest.mark.parametrize(
    ("fault", "api", "status", "error_type", "text"),
    [
        (Fault.rate_limit(), "openai", 429, "requests", "Rate limit"),
        (Fault.rate_limit(), "anthropic", 429, "rate_limit_error", "rate limit"),
        (Fault.overloaded(), "openai", 503, "server_error", "overloaded"),
        (Fault.overloaded(), "anthropic", 529, "overloaded_error", "Overloaded"),
        (Fault.quota(), "openai", 429, "insufficient_quota", "billing"),
        (Fault.quota(), "anthropic", 400, "invalid_request_error", "Billing"),
        (Fault.overflow(), "openai", 400, "invalid_request_error", "exceeds the context window"),
        (Fault.overflow(), "anthropic", 400, "invalid_request_error", "prompt is too long: 213462 tokens > 200000"),
        (Fault.unauthorized(), "openai", 401, "invalid_request_error", "Incorrect API key"),
        (Fault.unauthorized(), "anthropic", 401, "authentication_error", "invalid x-api-key"),
        (Fault.status(503), "openai", 503, "server_error", "Service Unavailable"),
        (Fault.status(502), "anthropic", 502, "api_error", "Bad Gateway"),
        (Fault.status(529), "openai", 529, "server_error", "Overloaded"),
        (Fault.status(529), "anthropic", 529, "overloaded_error", "Overloaded"),
        (Fault.status(500, error_type="custom", message="boom"), "anthropic", 500, "custom", "boom"),
    ],
)
async def test_presets_give_each_format_its_status_error_type_and_text(
    server: FaultServer, http: httpx.AsyncClient, fault: StatusFault, api: Api, status: int, error_type: str, text: str
) -> None:
    server.script([fault])
    response = await http.post(url(server, api), json=request_body(api))
    error = response.json()["error"]
    assert (response.status_code, error["type"]) == (status, error_type)
    assert text in error["message"]
    assert fault.status_for(api) == status


async def test_openai_quota_and_overflow_carry_their_error_codes(server: FaultServer, http: httpx.AsyncClient) -> None:
    server.script([Fault.quota(), Fault.overflow()])
    codes = [(await http.post(url(server, "openai"), json={})).json()["error"]["code"] for _ in range(2)]
    assert codes == ["insufficient_quota", "context_length_exceeded"]


@pytest.mark.parametrize(
    ("body", "content", "content_type"),
    [
        ({"detail": "custom"}, b'{"detail": "custom"}', "application/json"),
        ("upstream connect error", b"upstream connect error", "text/plain; charset=utf-8"),
        (b"", b"", "text/plain; charset=utf-8"),
    ],
)
async def test_status_fault_body_is_sent_verbatim(
    server: FaultServer, http: httpx.AsyncClient, body: Any, content: bytes, content_type: str
) -> None:
    server.script([Fault.status(400, body=body)])
    response = await http.post(url(server, "anthropic"), json={})
    assert (response.status_code, response.content, response.headers["content-type"]) == (400, content, content_type)


def test_status_fault_rejects_a_status_that_is_not_an_error() -> None:
    with pytest.raises(ValueError, match="4xx or 5xx"):
        Fault.status(200)


# -------------------------------------------------------------------------------------------------- raw responses


@pytest.mark.parametrize(
    ("raw", "content", "content_type"),
    [
        (Fault.raw(200, {"id": "x", "choices": []}), b'{"id": "x", "choices": []}', "application/json"),
        (Fault.raw(200, "<html>login</html>", content_type="text/html"), b"<html>login</html>", "text/html"),
        (Fault.raw(302, headers={"location": "/login"}), b"", "application/json"),
    ],
)
async def test_a_raw_response_is_sent_as_given(
    server: FaultServer, http: httpx.AsyncClient, raw: Any, content: bytes, content_type: str
) -> None:
    server.script([raw])
    response = await http.post(url(server, "openai"), json=request_body("openai"))
    assert (response.status_code, response.content, response.headers["content-type"]) == (
        raw.status,
        content,
        content_type,
    )
    assert response.headers.get("location") == raw.headers.get("location")


async def test_an_empty_chunked_stream_has_headers_and_no_body(server: FaultServer, http: httpx.AsyncClient) -> None:
    server.script([Fault.raw(200, b"", content_type="text/event-stream", chunked=True)])
    async with http.stream("POST", url(server, "openai"), json=request_body("openai")) as response:
        body = await response.aread()
    assert (response.status_code, response.headers["transfer-encoding"], body) == (200, "chunked", b"")


def test_a_raw_response_rejects_an_informational_status() -> None:
    with pytest.raises(ValueError, match="200 to 599"):
        Fault.raw(101)


async def test_a_reply_without_usage_sends_no_usage_chunk_even_when_asked(
    server: FaultServer, http: httpx.AsyncClient
) -> None:
    server.script([Reply(Reply.text("hi").blocks, send_usage=False)])
    _, events, error = await stream_sse(http, server, "openai")
    assert error is None
    assert all(not chunk.get("usage") for chunk in payloads(events))
    assert events[-1] == (None, "[DONE]")


async def test_models_are_listed_once_served(server: FaultServer, http: httpx.AsyncClient) -> None:
    assert (await http.get(server.openai_base_url + "/models")).status_code == 404
    listing = {"object": "list", "data": [{"id": "smollm2", "meta": {"n_ctx_train": 8192}}]}
    server.serve_models(listing)
    response = await http.get(server.openai_base_url + "/models")
    assert (response.status_code, response.json()) == (200, listing)
    assert [r.path for r in server.requests] == ["/v1/models", "/v1/models"]


# -------------------------------------------------------------------------------------------------- stream faults


@pytest.mark.parametrize("api", APIS)
async def test_reset_mid_stream_delivers_n_events_then_a_connection_reset(
    server: FaultServer, http: httpx.AsyncClient, api: Api
) -> None:
    server.script([Reply.text("a long reply " * 5, fault=Fault.reset(after_events=5))])
    response, events, error = await stream_sse(http, server, api)
    assert response.status_code == 200
    assert len(events) == 5
    assert isinstance(error, httpx.ReadError)
    assert caused_by(error, ConnectionResetError)


@pytest.mark.parametrize("api", APIS)
async def test_reset_on_its_own_resets_before_any_response(
    server: FaultServer, http: httpx.AsyncClient, api: Api
) -> None:
    server.script([Fault.reset()])
    with pytest.raises(httpx.ReadError) as caught:
        await http.post(url(server, api), json=request_body(api))
    assert caused_by(caught.value, ConnectionResetError)
    assert len(server.requests) == 1


async def test_sdks_report_a_reset_before_the_response_as_a_connection_error(
    server: FaultServer, openai_client: openai.AsyncOpenAI, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    server.script([Fault.reset(), Fault.reset()])
    with pytest.raises(openai.APIConnectionError):
        await openai_client.chat.completions.create(model="gpt-test", messages=USER, stream=True)
    with pytest.raises(anthropic.APIConnectionError):
        await anthropic_client.messages.create(model="claude-test", max_tokens=10, messages=USER, stream=True)


@pytest.mark.parametrize("api", APIS)
async def test_disconnect_mid_stream_leaves_the_chunked_body_incomplete(
    server: FaultServer, http: httpx.AsyncClient, api: Api
) -> None:
    server.script([Reply.text("some text here", fault=Fault.disconnect(after_events=3))])
    _, events, error = await stream_sse(http, server, api)
    assert len(events) == 3
    assert isinstance(error, httpx.RemoteProtocolError)
    assert "incomplete chunked read" in str(error)


@pytest.mark.parametrize("api", APIS)
async def test_truncate_ends_the_body_cleanly_without_the_terminal_event(
    server: FaultServer, http: httpx.AsyncClient, api: Api
) -> None:
    reply = Reply.text("some text here", fault=Fault.truncate(after_events=4))
    server.script([reply, Reply.text("next")])
    _, events, error = await stream_sse(http, server, api)
    assert error is None
    assert len(events) == 4
    assert TERMINAL[api] not in str(events)
    _, events, _ = await stream_sse(http, server, api)  # the connection was left fit for reuse
    assert TERMINAL[api] in str(events[-1])
    assert server.connections_accepted == 1


@pytest.mark.parametrize("api", APIS)
async def test_a_fault_after_the_last_event_fires_before_the_body_ends(
    server: FaultServer, http: httpx.AsyncClient, api: Api
) -> None:
    reply = Reply.text("hi", fault=Fault.disconnect(after_events=1000))
    server.script([reply])
    _, events, error = await stream_sse(http, server, api)
    assert len(events) == len(reply.wire_events(api))
    assert isinstance(error, httpx.RemoteProtocolError)


@pytest.mark.parametrize("api", APIS)
async def test_stall_mid_stream_sends_nothing_more_so_the_client_read_times_out(server: FaultServer, api: Api) -> None:
    server.script([Reply.text("some text here", fault=Fault.stall(after_events=3))])
    async with http_client(read_timeout=1.0) as client:  # (the three events come at once; 1 s for a busy machine)
        _, events, error = await stream_sse(client, server, api)
    assert len(events) == 3
    assert isinstance(error, httpx.ReadTimeout)


async def test_stall_on_its_own_never_sends_the_response_headers(server: FaultServer) -> None:
    server.script([Fault.stall()])
    async with http_client(read_timeout=0.1) as client:
        with pytest.raises(httpx.ReadTimeout):
            await client.post(url(server, "openai"), json=request_body("openai"))
    assert len(server.requests) == 1


async def test_stall_ends_when_the_client_leaves(server: FaultServer, http: httpx.AsyncClient) -> None:
    server.script([Reply.text("some text here", fault=Fault.stall(after_events=2))])
    async with http.stream("POST", url(server, "anthropic"), json=request_body("anthropic")) as response:
        lines = response.aiter_lines()
        assert (await anext(lines)).startswith("event: message_start")
        assert server.open_connections == 1
    await server.wait_until_async(lambda s: s.open_connections == 0, timeout=2.0)


async def test_close_ends_a_stalled_stream_promptly() -> None:
    server = FaultServer()
    server.script([Reply.text("some text here", fault=Fault.stall(after_events=2))])
    async with (
        http_client() as client,
        client.stream("POST", url(server, "openai"), json=request_body("openai")) as response,
    ):
        chunks = response.aiter_bytes()
        assert b"chat.completion.chunk" in await anext(chunks)
        started = time.monotonic()
        server.close()
        assert time.monotonic() - started < 0.5
        with pytest.raises(httpx.RemoteProtocolError):
            async for _ in chunks:
                pass
    assert server.open_connections == 0


@pytest.mark.parametrize("api", APIS)
async def test_malformed_event_is_invalid_json_after_n_events(
    server: FaultServer, http: httpx.AsyncClient, api: Api
) -> None:
    server.script([Reply.text("some text here", fault=Fault.malformed(after_events=2))])
    _, events, error = await stream_sse(http, server, api)
    assert error is None
    assert len(events) == 3
    payloads(events[:2])
    with pytest.raises(json.JSONDecodeError):
        json.loads(events[2][1])


async def test_sdks_fail_to_parse_a_malformed_event(
    server: FaultServer, openai_client: openai.AsyncOpenAI, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    server.script([Reply.text("x" * 20, fault=Fault.malformed(after_events=2))] * 2)
    stream = await openai_client.chat.completions.create(model="gpt-test", messages=USER, stream=True)
    with pytest.raises(json.JSONDecodeError):
        async for _ in stream:
            pass
    async with anthropic_client.messages.stream(model="claude-test", max_tokens=10, messages=USER) as messages:
        with pytest.raises(json.JSONDecodeError):
            async for _ in messages:
                pass


async def test_malformed_payload_is_written_verbatim(server: FaultServer, http: httpx.AsyncClient) -> None:
    server.script([Reply.text("hi", fault=Fault.malformed(after_events=1, payload=b"not sse at all\n\n"))])
    async with http.stream("POST", url(server, "openai"), json=request_body("openai")) as response:
        body = await response.aread()
    assert body.endswith(b"\n\nnot sse at all\n\n")


@pytest.mark.parametrize("api", APIS)
async def test_sse_error_is_an_in_stream_error_event_after_n_events(
    server: FaultServer, http: httpx.AsyncClient, api: Api
) -> None:
    server.script([Reply.text("some text", fault=Fault.sse_error("overloaded_error", "Overloaded", after_events=2))])
    _, events, error = await stream_sse(http, server, api)
    assert error is None
    assert len(events) == 3
    name, data = events[2]
    if api == "anthropic":
        assert name == "error"
        assert json.loads(data) == {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    elif api == "responses":
        assert name == "error"
        assert json.loads(data) == {"type": "error", "code": "overloaded_error", "message": "Overloaded", "param": None}
    elif api == "google":
        assert name is None
        assert json.loads(data) == {"error": {"code": 503, "message": "Overloaded", "status": "UNAVAILABLE"}}
    else:
        assert name is None
        assert json.loads(data)["error"] == {
            "message": "Overloaded",
            "type": "overloaded_error",
            "param": None,
            "code": None,
        }


async def test_sdks_raise_an_in_stream_error_event(
    server: FaultServer, openai_client: openai.AsyncOpenAI, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    server.script([Reply.text("some text", fault=Fault.sse_error("server_error", "Internal error", after_events=2))])
    server.script([Reply.text("some text", fault=Fault.sse_error(after_events=3))])
    stream = await openai_client.chat.completions.create(model="gpt-test", messages=USER, stream=True)
    with pytest.raises(openai.APIError, match="Internal error"):
        async for _ in stream:
            pass
    async with anthropic_client.messages.stream(model="claude-test", max_tokens=10, messages=USER) as messages:
        with pytest.raises(anthropic.APIStatusError) as caught:
            async for _ in messages:
                pass
    assert caught.value.body == {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}


def test_reset_or_stall_on_its_own_with_after_events_is_rejected(server: FaultServer) -> None:
    with pytest.raises(ValueError, match="put it in a Reply"):
        server.script([Fault.reset(after_events=2)])
    with pytest.raises(TypeError, match="script entry"):
        server.script(["hello"])  # type: ignore[list-item]
    assert server.pending == 0


def test_invalid_options_are_rejected_when_built() -> None:
    with pytest.raises(ValueError, match="chunk_chars"):
        Reply.text("x", chunk_chars=0)
    with pytest.raises(ValueError, match="delay_s"):
        Reply.text("x", delay_s=-1)
    with pytest.raises(ValueError, match="after_events"):
        StreamFault("reset", after_events=-1)
    with pytest.raises(ValueError, match="empty"):
        Fault.malformed(payload=b"")


# --------------------------------------------------------------------------------------------------- streaming


async def test_each_event_is_flushed_as_it_is_written(server: FaultServer, http: httpx.AsyncClient) -> None:
    # The server stalls after the first event: a client can only read it if it was flushed on its own.
    server.script([Reply.text("hello", fault=Fault.stall(after_events=1))])
    async with http.stream("POST", url(server, "anthropic"), json=request_body("anthropic")) as response:
        first = await anext(response.aiter_bytes())
    assert first.startswith(b"event: message_start\n") and first.endswith(b"\n\n")


async def test_delay_s_paces_each_event(server: FaultServer, http: httpx.AsyncClient) -> None:
    delay = 0.05
    server.script([Reply.text("abcdefgh", delay_s=delay)])  # role, 2 deltas, finish, [DONE]: 5 events
    arrivals = []
    started = time.monotonic()
    async with http.stream("POST", url(server, "openai"), json=request_body("openai", stream_options=None)) as response:
        async for line in response.aiter_lines():
            if line:
                arrivals.append(time.monotonic() - started)
    # Event k waits k + 1 delays on the server, so it cannot arrive sooner (a slow client may only see it later).
    assert len(arrivals) == 5
    assert all(arrival >= (k + 1) * delay for k, arrival in enumerate(arrivals)), arrivals


async def test_client_leaving_during_a_delay_ends_the_response_at_once(
    server: FaultServer, http: httpx.AsyncClient
) -> None:
    server.script([Reply.text("slow", delay_s=30.0)])
    async with http.stream("POST", url(server, "openai"), json=request_body("openai")) as response:
        assert response.status_code == 200  # headers come at once; the first event is 30 s away
    await server.wait_until_async(lambda s: s.open_connections == 0, timeout=2.0)


async def test_clients_leaving_mid_stream_are_not_server_errors(server: FaultServer) -> None:
    server.script([Reply.text("x" * 400, chunk_chars=1, delay_s=0.001) for _ in range(3)])
    for _ in range(3):
        async with (
            http_client() as client,
            client.stream("POST", url(server, "openai"), json=request_body("openai")) as response,
        ):
            await anext(response.aiter_lines())
    await server.wait_until_async(lambda s: s.open_connections == 0, timeout=2.0)
    server.close()  # raises if a handler failed


# ---------------------------------------------------------------------------------------------------- requests


async def test_requests_record_method_path_query_headers_json_and_arrival_time(
    server: FaultServer, http: httpx.AsyncClient
) -> None:
    server.script([Reply.text("ok")])
    before = time.monotonic()
    body = request_body("anthropic")
    async with http.stream(
        "POST", server.base_url + "/v1/messages?beta=true", json=body, headers={"X-Custom": "Yes"}
    ) as response:
        await response.aread()
    (request,) = server.requests
    assert (request.method, request.path, request.query, request.api) == (
        "POST",
        "/v1/messages",
        "beta=true",
        "anthropic",
    )
    assert request.headers["x-custom"] == "Yes"
    assert all(name == name.lower() for name in request.headers)
    assert request.json == body
    assert json.loads(request.body) == body
    assert before <= request.received_at <= time.monotonic()
    assert request.api_key is None


async def test_api_key_is_kept_apart_and_redacted_from_recorded_headers(
    server: FaultServer, openai_client: openai.AsyncOpenAI, anthropic_client: anthropic.AsyncAnthropic
) -> None:
    server.script([Reply.text("a"), Reply.text("b")])
    async with openai_client.chat.completions.stream(model="gpt-test", messages=USER) as stream:
        await stream.get_final_completion()
    async with anthropic_client.messages.stream(model="claude-test", max_tokens=10, messages=USER) as messages:
        await messages.get_final_message()
    first, second = server.requests
    assert (first.api_key, first.headers["authorization"]) == ("sk-test", "Bearer [redacted]")
    assert second.api_key == "sk-ant-test"  # this SDK version sends it as a bearer token, older ones as x-api-key
    for request in (first, second):
        assert request.leaks() == []
        assert request.api_key is not None
        assert request.api_key not in repr(request)
        assert request.api_key not in repr(server.requests)


@pytest.mark.parametrize(
    ("header", "value", "recorded"),
    [("x-api-key", "sk-1", "[redacted]"), ("api-key", "sk-1", "[redacted]"), ("Authorization", "Bearer sk-1", None)],
)
async def test_every_auth_header_is_redacted_and_its_key_kept_apart(
    server: FaultServer, http: httpx.AsyncClient, header: str, value: str, recorded: str | None
) -> None:
    await http.post(url(server, "anthropic"), json={}, headers={header: value})
    (request,) = server.requests
    assert request.api_key == "sk-1"
    assert request.headers[header.lower()] == (recorded or "Bearer [redacted]")
    assert request.leaks() == []


async def test_leaks_names_every_other_place_a_key_appears(server: FaultServer, http: httpx.AsyncClient) -> None:
    key = "sk-secret-123"
    server.script([Fault.status(400)])
    await http.post(
        url(server, "openai") + f"?key={key}",
        json={"note": key},
        headers={"authorization": f"Bearer {key}", "x-debug": f"key={key}"},
    )
    (request,) = server.requests
    assert request.api_key == key
    assert request.leaks() == ["query", "header x-debug", "body"]
    assert request.leaks("not-there") == []


async def test_script_is_fifo_and_each_request_records_the_entry_that_answered(
    server: FaultServer, http: httpx.AsyncClient
) -> None:
    entries: list[ScriptEntry] = [Fault.status(503), Reply.text("first"), Reply.text("second")]
    server.script(entries[:2])
    server.script(entries[2:])
    statuses = [(await http.post(url(server, "openai"), json=request_body("openai"))).status_code for _ in range(3)]
    assert statuses == [503, 200, 200]
    assert [request.answer for request in server.requests] == entries
    assert server.pending == 0


@pytest.mark.parametrize("api", APIS)
async def test_exhausted_script_answers_500_no_scripted_reply(
    server: FaultServer, http: httpx.AsyncClient, api: Api
) -> None:
    response = await http.post(url(server, api), json=request_body(api))
    assert response.status_code == 500
    assert response.json()["error"]["message"] == "fault server: no scripted reply"
    assert server.requests[0].answer is None


async def test_unknown_path_answers_404_without_taking_a_script_entry(
    server: FaultServer, http: httpx.AsyncClient
) -> None:
    server.script([Reply.text("kept")])
    response = await http.post(server.base_url + "/v1/v1/messages/count", json={})
    assert response.status_code == 404
    assert "no route for POST /v1/v1/messages/count" in response.json()["error"]["message"]
    response = await http.get(url(server, "anthropic"))
    assert response.status_code == 404
    assert "no route for GET /v1/messages" in response.json()["error"]["message"]
    assert server.pending == 1
    assert [(r.method, r.api) for r in server.requests] == [("POST", None), ("GET", "anthropic")]


async def test_a_reply_to_a_request_without_stream_true_is_a_400(server: FaultServer, http: httpx.AsyncClient) -> None:
    server.script([Reply.text("streamed only")])
    response = await http.post(url(server, "anthropic"), json=request_body("anthropic", stream=False))
    assert response.status_code == 400
    assert '"stream": true' in response.json()["error"]["message"]


async def test_a_keep_alive_connection_serves_several_requests(server: FaultServer, http: httpx.AsyncClient) -> None:
    server.script([Reply.text("one"), Fault.status(429), Reply.text("three")])
    for _ in range(3):
        await stream_sse(http, server, "openai")
    assert (server.connections_accepted, server.open_connections) == (1, 1)


# ----------------------------------------------------------------------------------------------------- waiting


def test_wait_for_requests_returns_once_they_have_arrived(server: FaultServer) -> None:
    server.script([Fault.status(500), Fault.status(500)])

    def send() -> None:
        with httpx.Client(timeout=5.0, verify=False) as client:
            for _ in range(2):
                client.post(url(server, "openai"), json={})

    sender = threading.Thread(target=send)
    sender.start()
    try:
        requests = server.wait_for_requests(2, timeout=5.0)
    finally:
        sender.join()
    assert [request.api for request in requests] == ["openai", "openai"]


def test_wait_for_requests_times_out_with_a_clear_message(server: FaultServer) -> None:
    with pytest.raises(TimeoutError, match=r"fault server: condition not met within 0\.05s \(0 requests"):
        server.wait_for_requests(1, timeout=0.05)


async def test_wait_for_requests_async_wakes_when_a_request_arrives(
    server: FaultServer, http: httpx.AsyncClient
) -> None:
    server.script([Fault.stall()])  # never answered, so the request is sent from a task we cancel
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(partial(http.post, url(server, "openai"), json={}))
        requests = await server.wait_for_requests_async(1, timeout=5.0)
        tasks.cancel_scope.cancel()
    assert requests[0].path == "/v1/chat/completions"
    await server.wait_until_async(lambda s: s.open_connections == 0, timeout=2.0)


async def test_wait_until_async_times_out_with_a_clear_message(server: FaultServer) -> None:
    with pytest.raises(TimeoutError, match=r"fault server: condition not met within 0\.05s"):
        await server.wait_until_async(lambda s: s.open_connections > 0, timeout=0.05)


# --------------------------------------------------------------------------------------------------- lifecycle


def server_threads() -> list[str]:
    return [thread.name for thread in threading.enumerate() if thread.name.startswith("fault-server-")]


def open_fds() -> int | None:
    return len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None


async def test_close_joins_every_thread_and_releases_every_socket() -> None:
    assert server_threads() == []
    fds_before = open_fds()
    server = FaultServer()
    server.script([Reply.text("pooled"), Reply.text("stalled", fault=Fault.stall(after_events=1))])
    server.script([Reply.text("slow", delay_s=30.0)])
    async with http_client() as pooled, http_client() as busy:
        await stream_sse(pooled, server, "openai")  # its connection stays open in the pool
        async with (
            busy.stream("POST", url(server, "openai"), json=request_body("openai")) as stalled,
            busy.stream("POST", url(server, "openai"), json=request_body("openai")) as slow,
        ):
            assert (stalled.status_code, slow.status_code) == (200, 200)
            assert server.open_connections == 3
            assert len(server_threads()) == 4  # the accept loop and one thread per connection
            server.close()
            assert server_threads() == []
            assert server.open_connections == 0
    if fds_before is not None:
        assert open_fds() == fds_before


async def test_close_is_idempotent_and_the_port_then_refuses_connections(http: httpx.AsyncClient) -> None:
    server = FaultServer()
    server.close()
    server.close()
    with pytest.raises(httpx.ConnectError):
        await http.post(url(server, "openai"), json={})
    with pytest.raises(RuntimeError, match="already closed"):
        server.__enter__()
    assert "closed" in repr(server)


async def test_async_with_serves_then_closes(http: httpx.AsyncClient) -> None:
    async with FaultServer() as server:
        server.script([Reply.text("hi")])
        _, events, _ = await stream_sse(http, server, "anthropic")
        assert events[-1][0] == "message_stop"
    assert server_threads() == []
    with pytest.raises(httpx.ConnectError):
        await http.post(url(server, "anthropic"), json={})


async def test_refused_url_refuses_connections(http: httpx.AsyncClient) -> None:
    refused = FaultServer.refused_url()
    with pytest.raises(httpx.ConnectError):
        await http.post(refused + "/v1/chat/completions", json={})
    async with openai.AsyncOpenAI(base_url=refused + "/v1", api_key="sk-test", max_retries=0) as client:
        with pytest.raises(openai.APIConnectionError):
            await client.chat.completions.create(model="gpt-test", messages=USER, stream=True)


def test_urls_point_at_the_loopback_port(server: FaultServer) -> None:
    assert server.openai_base_url == f"http://127.0.0.1:{server.port}/v1"
    assert server.anthropic_base_url == server.base_url == f"http://127.0.0.1:{server.port}"
    assert repr(server) == f"<FaultServer {server.base_url} 0 requests, 0 open connections, 0 pending>"
