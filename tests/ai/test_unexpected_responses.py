"""Responses that are not the event stream asked for, over real loopback HTTP (issue 17 item 4, issue 10 item 14).

What real servers send: LiteLLM's mock models answer ``/v1/messages`` with a whole JSON message, proxies put
errors in a ``200`` JSON body, llama-cpp-python's server sends ``200`` headers and then nothing when its chat
template fails, a wrong base URL gives an HTML page or a redirect. None is a network error; only an error the
server itself calls transient may be retried.
"""

from __future__ import annotations

from typing import Any

import pytest
from wire_apis import APIS, model_for

from pi_notebook.ai import AssistantMessage, Context, StreamOptions, TextContent, ToolCall, UserMessage, complete
from pi_notebook.ai.overflow import is_context_overflow
from pi_notebook.ai.retry import is_retryable_assistant_error
from pi_notebook.testing import Fault, FaultServer


async def ask(api: str, server: FaultServer, **options: Any) -> AssistantMessage:
    context = Context(messages=[UserMessage(content=[TextContent(text="hello there")])])
    return await complete(model_for(api, server, keyless=True), context, StreamOptions(max_retries=3, **options))


def assert_final_error(message: AssistantMessage, server: FaultServer, *fragments: str) -> None:
    assert message.stop_reason == "error"
    for fragment in fragments:
        assert fragment in (message.error_message or "")
    assert not is_retryable_assistant_error(message)
    assert len(server.requests) == 1  # layer 1 did not send it again


# -- 200 with a JSON body -----------------------------------------------------------------------------------

LITELLM_OVERFLOW = {
    "error": {
        "message": "litellm.ContextWindowExceededError: litellm.BadRequestError: ContextWindowExceededError: "
        "OpenAIException - This model's maximum context length is 2048 tokens. Received 2519 tokens.",
        "type": None,
        "param": None,
        "code": "400",
    }
}


@pytest.mark.parametrize("api", APIS)
async def test_a_json_error_sent_with_200_is_that_error(api: str, server: FaultServer) -> None:
    server.script([Fault.raw(200, LITELLM_OVERFLOW)])
    message = await ask(api, server)
    assert message.stop_reason == "error"
    assert "ContextWindowExceededError" in (message.error_message or "")
    assert is_context_overflow(message)
    assert len(server.requests) == 1


async def test_a_transient_json_error_sent_with_200_stays_retryable_at_the_turn_level(server: FaultServer) -> None:
    server.script([Fault.raw(200, {"error": {"message": "Rate limit reached, try again", "type": "rate_limit"}})])
    message = await ask("openai", server)
    assert message.stop_reason == "error"
    assert is_retryable_assistant_error(message)  # the server's own words decide, not the shape of the answer


async def test_a_whole_openai_completion_is_read_as_the_message(server: FaultServer) -> None:
    completion = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": "Adding.",
                    "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 2}'}}
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }
    server.script([Fault.raw(200, completion)])
    message = await ask("openai", server)
    assert (message.stop_reason, message.response_id) == ("toolUse", "chatcmpl-1")
    assert message.content == [TextContent(text="Adding."), ToolCall(id="call_1", name="add", arguments={"a": 2})]
    assert (message.usage.input, message.usage.output, message.usage.estimated) == (11, 7, None)


async def test_a_whole_anthropic_message_is_read_as_the_message(server: FaultServer) -> None:
    # What LiteLLM's proxy sends on /v1/messages for a mock model, even when the request asked for a stream.
    litellm_mock = {
        "id": "chatcmpl-2f0c",
        "type": "message",
        "role": "assistant",
        "model": "mock-text",
        "stop_sequence": None,
        "usage": {"input_tokens": 9, "output_tokens": 12},
        "content": [{"type": "text", "text": "The quick brown fox."}],
        "stop_reason": "end_turn",
    }
    server.script([Fault.raw(200, litellm_mock)])
    message = await ask("anthropic", server)
    assert (message.stop_reason, message.content) == ("stop", [TextContent(text="The quick brown fox.")])
    assert (message.usage.input, message.usage.output) == (9, 12)


async def test_a_whole_anthropic_tool_use_message_gives_the_call(server: FaultServer) -> None:
    body = {
        "type": "message",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 2, "b": 3}}],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    server.script([Fault.raw(200, body)])
    message = await ask("anthropic", server)
    assert message.stop_reason == "toolUse"
    assert message.content == [ToolCall(id="toolu_1", name="add", arguments={"a": 2, "b": 3})]


NEITHER = {
    "openai": '200 {"status":"ok"}',
    "anthropic": '200 {"status":"ok"}',
    "responses": 'OpenAI API error (200): 200 {"status":"ok"}',  # it said "200 status code (no body)"
    "google": '200 {"status":"ok"}',  # it said '{"status":"ok"}', without the status
}
"""Each format's words for a 200 JSON body that is neither a reply nor an error (as its errors are worded)."""


@pytest.mark.parametrize("api", APIS)
async def test_json_that_is_neither_error_nor_message_says_what_came(api: str, server: FaultServer) -> None:
    server.script([Fault.raw(200, {"status": "ok"})])
    message = await ask(api, server)
    assert (message.stop_reason, message.error_message) == ("error", NEITHER[api])


# -- 200 that is not JSON, and empty streams ----------------------------------------------------------------

PAGE = (
    "<!DOCTYPE html><html><head><title>Sign in &middot; Gateway</title>"
    "<style>b { font-weight: 500 }</style></head><body><h1>Please sign in</h1></body></html>"
)


@pytest.mark.parametrize("api", APIS)
async def test_an_html_page_with_200_is_reported_by_type_and_title_and_not_retried(
    api: str, server: FaultServer
) -> None:
    server.script([Fault.raw(200, PAGE, content_type="text/html; charset=utf-8")])
    message = await ask(api, server)
    assert_final_error(message, server, "200 text/html response (Sign in · Gateway)", "check the base URL")
    assert "font-weight" not in (message.error_message or "")


@pytest.mark.parametrize("api", APIS)
async def test_an_empty_200_stream_is_not_transient(api: str, server: FaultServer) -> None:
    # llama-cpp-python's server: 200 and event-stream headers, then the chat template fails and the body ends.
    server.script([Fault.raw(200, b"", content_type="text/event-stream", chunked=True)])
    message = await ask(api, server)
    assert_final_error(message, server, "200 response that ended before its first event", "see its log")


@pytest.mark.parametrize("api", APIS)
async def test_an_empty_200_stream_for_a_prompt_past_the_window_reads_as_overflow(
    api: str, server: FaultServer
) -> None:
    # llama-cpp-python fails this way when the prompt does not fit (its log: "Requested tokens (N) exceed context
    # window of M"); the estimated prompt says what the server did not.
    server.script([Fault.raw(200, b"", content_type="text/event-stream", chunked=True)] * 2)
    model = model_for(api, server, keyless=True, context_window=2048)
    big = Context(messages=[UserMessage(content=[TextContent(text="lorem ipsum " * 1000)])])
    small = Context(messages=[UserMessage(content=[TextContent(text="hello")])])
    overflowed = await complete(model, big, StreamOptions())
    failed = await complete(model, small, StreamOptions())
    assert overflowed.error_message is not None
    assert overflowed.error_message.endswith(
        "; the prompt (about 3002 tokens, estimated) exceeds the context window of 2048 tokens"
    )
    assert is_context_overflow(overflowed)
    assert not is_context_overflow(failed)
    assert not is_retryable_assistant_error(failed)


@pytest.mark.parametrize("api", APIS)
async def test_an_empty_200_json_body_says_so(api: str, server: FaultServer) -> None:
    server.script([Fault.raw(200, b"")])
    message = await ask(api, server)
    assert_final_error(message, server, "200 application/json response with an empty body")


# -- redirects and HTML error pages ------------------------------------------------------------------------


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("status", [301, 302, 307, 308])
async def test_a_redirect_is_reported_with_its_target_and_neither_followed_nor_retried(
    api: str, status: int, server: FaultServer
) -> None:
    target = "http://127.0.0.1:5000/v1/chat/completions"  # port 5000: no "500" may make it look transient
    server.script([Fault.raw(status, b"", headers={"location": target})])
    message = await ask(api, server)
    assert_final_error(message, server, f"{status} redirect to {target}", "redirects are not followed")


TITLED = {
    "openai": "404 404 Not Found",
    "anthropic": "404 404 Not Found",
    "responses": "OpenAI API error (404): 404 404 Not Found",
    "google": '{"error":{"message":"404 Not Found","code":404,"status":"Not Found"}}',
}
"""Each format's words for an HTML error page: its title, as that format words an error body that is not JSON."""


@pytest.mark.parametrize("api", APIS)
async def test_an_html_error_page_is_described_by_its_title(api: str, server: FaultServer) -> None:
    page = "<html><head><title>404 Not Found</title><style>h1{font-weight:500}</style></head><body>nginx</body></html>"
    server.script([Fault.status(404, body=page, headers={"content-type": "text/html"})])
    message = await ask(api, server)
    assert message.stop_reason == "error"
    assert message.error_message == TITLED[api]
    assert not is_retryable_assistant_error(message)  # the page's CSS "500" made it look like a server error
    assert len(server.requests) == 1
