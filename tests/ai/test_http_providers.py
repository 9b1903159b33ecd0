"""The HTTP providers over real loopback HTTP against the fault server: the four wire APIs (OpenAI chat completions,
Anthropic Messages, OpenAI Responses, Google Generative AI), the fault matrix.

Each case checks the final stop reason, the error text, how many requests were sent and, where time matters,
a bound on it. Layer-1 retry (PI-SPEC §4.1) is exercised with ``max_retries``; failures are data, never raised.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import time
from typing import Any

import pytest
from wire_apis import APIS, model_for

from pi_notebook.ai import (
    AbortController,
    AssistantMessage,
    Context,
    Model,
    ModelCost,
    StreamOptions,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    UserMessage,
    complete,
    stream,
)
from pi_notebook.ai.messages import RequestFailure, message_to_json
from pi_notebook.ai.overflow import is_context_overflow
from pi_notebook.ai.retry import is_retryable_assistant_error
from pi_notebook.testing import Fault, FaultServer, Reply

KEY = "sk-test-secret-4f9a2c"
TRUNCATED = {
    "openai": "Stream ended without finish_reason",
    "anthropic": "Anthropic stream ended before message_stop",
    "responses": "OpenAI Responses stream ended before a terminal response event",
    "google": "Google stream ended without a finish reason",
}


def tool_names(api: str, body: dict[str, Any]) -> list[str]:
    tools = body["tools"]
    if api == "google":
        return [t["name"] for t in tools[0]["functionDeclarations"]]
    return [t["function"]["name"] if api == "openai" else t["name"] for t in tools]


def context(text: str = "hello") -> Context:
    return Context(system_prompt="be brief", messages=[UserMessage(content=[TextContent(text=text)])])


def options(**fields: Any) -> StreamOptions:
    return StreamOptions(api_key=KEY, **fields)


async def ask(api: str, server: FaultServer, **fields: Any) -> AssistantMessage:
    return await complete(model_for(api, server), context(), options(**fields))


@pytest.mark.parametrize("api", APIS)
async def test_streams_text_with_usage_and_cost(api: str, server: FaultServer) -> None:
    server.script([Reply.text("hello from the server", chunk_chars=3)])
    model = model_for(api, server, cost=ModelCost(input=1.0, output=2.0))
    events = []
    response = stream(model, context(), options())
    async for event in response:
        events.append(event.type)
    message = await response.result()
    assert message.stop_reason == "stop"
    assert message.content[0].text == "hello from the server"  # type: ignore[union-attr]
    assert events[0] == "start"
    assert events[-1] == "done"
    assert events.count("text_delta") >= 5
    assert message.usage.input == 10 and message.usage.output == 5
    assert message.usage.cost.total == pytest.approx((10 * 1.0 + 5 * 2.0) / 1e6)
    [request] = server.requests
    assert request.api_key == KEY
    if api == "google":  # streaming and the model are in the path
        assert request.path == f"/v1beta/models/{model.id}:streamGenerateContent" and request.query == "alt=sse"
    else:
        assert request.json["stream"] is True
        assert request.json["model"] == model.id


@pytest.mark.parametrize("api", APIS)
async def test_streams_tool_call_arguments(api: str, server: FaultServer) -> None:
    server.script([Reply.tool_call("bash", {"command": "ls -la", "timeout": 5}, id="call_1", chunk_chars=5)])
    tools = [Tool(name="bash", description="run", parameters={"type": "object", "properties": {}})]
    message = await complete(model_for(api, server), Context(messages=context().messages, tools=tools), options())
    assert message.stop_reason == "toolUse"
    [call] = [b for b in message.content if isinstance(b, ToolCall)]
    assert (call.name, call.arguments) == ("bash", {"command": "ls -la", "timeout": 5})
    assert call.id == ("call_1|fc_fault_1_0" if api == "responses" else "call_1")  # Responses: <call_id>|<item_id>
    assert tool_names(api, server.requests[0].json) == ["bash"]


@pytest.mark.parametrize("api", APIS)
async def test_streams_thinking(api: str, server: FaultServer) -> None:
    server.script([Reply.thinking("let me think", then_text="answer", signature="sig-1")])
    message = await ask(api, server)
    thinking = next(b for b in message.content if isinstance(b, ThinkingContent))
    assert thinking.thinking == "let me think"
    if api in ("anthropic", "google"):
        assert thinking.thinking_signature == "sig-1"
    if api == "responses":  # the whole reasoning item, encrypted content included, goes back next turn
        assert json.loads(thinking.thinking_signature or "")["encrypted_content"] == "sig-1"
    if api == "openai":  # the field it came in, which it goes back in
        assert thinking.thinking_signature == "reasoning_content"
    assert message.content[-1].text == "answer"  # type: ignore[union-attr]


@pytest.mark.parametrize("api", APIS)
async def test_429_with_retry_after_ms_is_retried_after_that_delay(api: str, server: FaultServer) -> None:
    server.script([Fault.rate_limit(headers={"retry-after-ms": "150"}), Reply.text("ok")])
    started = time.monotonic()
    message = await ask(api, server, max_retries=2)
    elapsed = time.monotonic() - started
    assert message.stop_reason == "stop"
    first, second = server.requests
    assert second.received_at - first.received_at >= 0.15
    assert elapsed < 2


@pytest.mark.parametrize("api", APIS)
async def test_retry_after_in_seconds_and_as_an_http_date(api: str, server: FaultServer) -> None:
    soon = email.utils.formatdate(time.time() + 1, usegmt=True)
    server.script(
        [
            Fault.status(503, headers={"retry-after": "0.1"}),
            Fault.status(503, headers={"retry-after": soon}),
            Reply.text("ok"),
        ]
    )
    message = await ask(api, server, max_retries=3)
    assert message.stop_reason == "stop"
    assert len(server.requests) == 3
    assert server.requests[1].received_at - server.requests[0].received_at >= 0.1


@pytest.mark.parametrize("api", APIS)
async def test_a_server_delay_above_the_cap_fails_at_once_with_pis_text(api: str, server: FaultServer) -> None:
    server.script([Fault.rate_limit(headers={"retry-after": "277403"})])
    message = await ask(api, server, max_retries=3, max_retry_delay_ms=1000)
    assert message.stop_reason == "error"
    assert message.error_message is not None
    assert message.error_message.startswith("Server requested 277403s retry delay (max: 1s). ")
    assert "429" in message.error_message
    assert len(server.requests) == 1
    assert is_retryable_assistant_error(message)  # "retry delay" is retryable at the turn level


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("value", ["inf", "nan", "-1"])
async def test_a_non_finite_retry_after_is_ignored_and_the_backoff_applies(
    api: str, value: str, server: FaultServer
) -> None:
    # issue 10 item 13: "retry-after: inf" ended the run with "ValueError: cannot convert float NaN to integer"
    server.script([Fault.rate_limit(headers={"retry-after": value}), Reply.text("ok")])
    message = await ask(api, server, max_retries=1, max_retry_delay_ms=1000)
    assert (message.stop_reason, message.error_message) == ("stop", None)
    first, second = server.requests
    assert 0.3 <= second.received_at - first.received_at < 1.0  # the first backoff: 0.5 s minus up to 25 %


@pytest.mark.parametrize("api", APIS)
async def test_x_should_retry_false_is_not_retried(api: str, server: FaultServer) -> None:
    server.script([Fault.status(503, headers={"x-should-retry": "false"}), Reply.text("never")])
    message = await ask(api, server, max_retries=3)
    assert message.stop_reason == "error"
    assert len(server.requests) == 1


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("status", [500, 502, 503, 529])
async def test_server_errors_are_retried_by_layer_one(api: str, status: int, server: FaultServer) -> None:
    server.script([Fault.status(status), Reply.text("ok")])
    message = await ask(api, server, max_retries=1)
    assert message.stop_reason == "stop"
    assert len(server.requests) == 2


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("status", [500, 502, 503, 529])
async def test_without_layer_one_retries_a_server_error_is_a_retryable_error_message(
    api: str, status: int, server: FaultServer
) -> None:
    server.script([Fault.status(status)])
    message = await ask(api, server)
    assert message.stop_reason == "error"
    assert message.error_message is not None
    prefix = {"responses": f"OpenAI API error ({status}): ", "google": f'{{"error":{{"code":{status},'}.get(
        api, f"{status} "
    )
    assert message.error_message.startswith(prefix)
    assert is_retryable_assistant_error(message)
    assert len(server.requests) == 1


@pytest.mark.parametrize("api", APIS)
async def test_overloaded_is_retryable_and_quota_is_not(api: str, server: FaultServer) -> None:
    server.script([Fault.overloaded(), Fault.quota()])
    overloaded = await ask(api, server)
    quota = await ask(api, server)
    assert "overloaded" in (overloaded.error_message or "").lower()
    assert is_retryable_assistant_error(overloaded)
    assert quota.stop_reason == "error"
    assert not is_retryable_assistant_error(quota)


@pytest.mark.parametrize("api", APIS)
async def test_overflow_errors_are_recognised(api: str, server: FaultServer) -> None:
    server.script([Fault.overflow()])
    message = await ask(api, server)
    assert message.stop_reason == "error"
    assert is_context_overflow(message, 200_000)


@pytest.mark.parametrize("api", APIS)
async def test_a_reset_mid_stream_is_a_retryable_error_and_never_replayed(api: str, server: FaultServer) -> None:
    server.script([Reply.text("a long answer " * 20, fault=Fault.reset(after_events=4)), Reply.text("never")])
    message = await ask(api, server, max_retries=3)
    assert message.stop_reason == "error"
    assert is_retryable_assistant_error(message), message.error_message
    assert len(server.requests) == 1  # streaming had begun: no replay
    assert message.content  # the partial text is kept


@pytest.mark.parametrize("api", APIS)
async def test_a_stalled_stream_hits_the_idle_timeout(api: str, server: FaultServer) -> None:
    server.script([Reply.text("a long answer " * 20, fault=Fault.stall(after_events=3))])
    started = time.monotonic()
    message = await ask(api, server, idle_timeout_ms=200)
    elapsed = time.monotonic() - started
    assert message.stop_reason == "error"
    assert "timed out" in (message.error_message or "")
    assert is_retryable_assistant_error(message)
    assert 0.2 <= elapsed < 2


@pytest.mark.parametrize("api", APIS)
async def test_the_request_deadline_bounds_the_whole_request(api: str, server: FaultServer) -> None:
    server.script([Reply.text("slow " * 100, delay_s=0.05)])
    message = await ask(api, server, timeout_ms=150)
    assert message.stop_reason == "error"
    assert message.error_message == "Request timed out after 150 ms"
    assert is_retryable_assistant_error(message)


@pytest.mark.parametrize("api", APIS)
async def test_malformed_sse_is_an_error(api: str, server: FaultServer) -> None:
    server.script([Reply.text("hello " * 10, fault=Fault.malformed(after_events=2))])
    message = await ask(api, server)
    assert message.stop_reason == "error"
    assert (message.error_message or "").startswith("Invalid response from provider: malformed JSON")


@pytest.mark.parametrize("api", APIS)
async def test_a_stream_that_ends_without_its_terminal_event_is_a_retryable_error(
    api: str, server: FaultServer
) -> None:
    server.script([Reply.text("hello " * 10, fault=Fault.truncate(after_events=3))])
    message = await ask(api, server)
    assert message.stop_reason == "error"
    assert message.error_message == TRUNCATED[api]
    assert is_retryable_assistant_error(message)


@pytest.mark.parametrize("api", APIS)
async def test_an_error_event_mid_stream_keeps_the_partial(api: str, server: FaultServer) -> None:
    server.script(
        [Reply.text("partial words " * 10, fault=Fault.sse_error("overloaded_error", "Overloaded", after_events=4))]
    )
    message = await ask(api, server)
    assert message.stop_reason == "error"
    assert "overloaded" in (message.error_message or "").lower()
    assert is_retryable_assistant_error(message)


@pytest.mark.parametrize("api", APIS)
async def test_connection_refused_is_a_retryable_error(api: str, server: FaultServer) -> None:
    model = model_for(api, FaultServer.refused_url())
    message = await complete(model, context(), options())
    assert message.stop_reason == "error"
    assert "Connection error" in (message.error_message or "")
    assert is_retryable_assistant_error(message)


@pytest.mark.parametrize("api", APIS)
async def test_abort_mid_stream_returns_the_partial_at_once_and_closes_the_connection(
    api: str, server: FaultServer
) -> None:
    # Eight events (at least three text deltas in each format), then nothing: an abort that waited for the stream's
    # next event would wait for ever
    server.script([Reply.text("word " * 2000, fault=Fault.stall(after_events=8))])
    controller = AbortController()
    response = stream(model_for(api, server), context(), options(signal=controller.signal))
    deltas, started = 0, 0.0
    async for event in response:
        if event.type == "text_delta":
            deltas += 1
            if deltas == 3:
                started = time.monotonic()
                controller.abort()
    message = await response.result()
    latency = time.monotonic() - started
    assert message.stop_reason == "aborted"
    assert message.error_message == "Request was aborted"
    assert message.content[0].text  # type: ignore[union-attr]
    assert latency < 2  # (at once: ~1 ms here; the bound is for a busy machine)
    await server.wait_until_async(lambda s: s.open_connections == 0)


@pytest.mark.parametrize("api", APIS)
async def test_abort_during_the_layer_one_backoff_returns_aborted(api: str, server: FaultServer) -> None:
    server.script([Fault.status(503, headers={"retry-after": "30"})])
    controller = AbortController()
    task = asyncio.create_task(ask(api, server, max_retries=2, signal=controller.signal))
    await server.wait_for_requests_async(1)
    controller.abort()
    message = await asyncio.wait_for(task, timeout=2)
    assert message.stop_reason == "aborted"
    assert len(server.requests) == 1


@pytest.mark.parametrize("api", APIS)
async def test_an_already_aborted_signal_sends_nothing(api: str, server: FaultServer) -> None:
    controller = AbortController()
    controller.abort()
    message = await ask(api, server, signal=controller.signal)
    assert message.stop_reason == "aborted"
    assert server.requests == []


@pytest.mark.parametrize("api", APIS)
async def test_the_api_key_never_appears_in_messages_errors_or_reprs(api: str, server: FaultServer) -> None:
    echo = Fault.status(401, message=f"Incorrect API key provided: {KEY}")
    server.script([echo, Reply.text("ok")])
    failed = await ask(api, server)
    succeeded = await ask(api, server)
    for message in (failed, succeeded):
        assert KEY not in message.model_dump_json()
        assert KEY not in repr(message)
    assert "***" in (failed.error_message or "")
    assert KEY not in repr(options())
    for request in server.requests:
        assert request.leaks(KEY) == []


KEY_VARIABLES = [
    ("openai", "OPENAI_API_KEY"),
    ("anthropic", "ANTHROPIC_API_KEY"),
    ("responses", "OPENAI_API_KEY"),
    ("google", "GEMINI_API_KEY"),
    ("google", "GOOGLE_API_KEY"),
]


@pytest.mark.parametrize(("api", "variable"), KEY_VARIABLES)
async def test_keys_come_from_the_environment_or_are_asked_for(
    api: str, variable: str, server: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for _, name in KEY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    missing = await complete(model_for(api, server), context(), StreamOptions())
    assert missing.stop_reason == "error"
    provider = model_for(api, server).provider
    asked = "GEMINI_API_KEY or GOOGLE_API_KEY" if api == "google" else variable
    assert missing.error_message == f"No API key for provider {provider}: set {asked} or pass api_key"
    assert missing.content == []
    monkeypatch.setenv(variable, "sk-from-env-123")
    server.script([Reply.text("ok")])
    found = await complete(model_for(api, server), context(), StreamOptions())
    assert found.stop_reason == "stop"
    assert server.requests[-1].api_key == "sk-from-env-123"


async def test_openai_compatible_servers_need_no_key(server: FaultServer) -> None:
    server.script([Reply.text("local model says hi")])
    model = model_for("openai", server, keyless=True)
    message = await complete(model, context(), StreamOptions())
    assert message.stop_reason == "stop"
    assert server.requests[0].api_key is None


async def test_an_unknown_api_is_an_error_message_not_an_exception() -> None:
    model = Model(id="x", api="carrier-pigeon", provider="birds")
    message = await complete(model, context())
    assert message.stop_reason == "error"
    assert "carrier-pigeon" in (message.error_message or "")


@pytest.mark.parametrize("api", APIS)
async def test_layer_one_does_not_retry_an_out_of_quota_429(api: str, server: FaultServer) -> None:
    server.script([Fault.quota(), Reply.text("never")])
    message = await ask(api, server, max_retries=3)
    assert message.stop_reason == "error"
    assert len(server.requests) == 1


@pytest.mark.parametrize("api", APIS)
async def test_a_failed_response_reaches_the_message_with_its_status_and_retry_after(
    api: str, server: FaultServer
) -> None:
    server.script([Fault.rate_limit(headers={"retry-after": "7", "x-should-retry": "true"})])
    message = await ask(api, server)
    assert message.request_failure == RequestFailure(429, retry_after_ms=7000.0, should_retry=True)
    assert "requestFailure" not in message_to_json(message)  # not Pi's wire format: never in session files
