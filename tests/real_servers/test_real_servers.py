"""The HTTP providers against servers people actually run (issue 17): llama-cpp-python's server with a real model
(SmolLM2-135M-Instruct on the GGUF's own chat template, n_ctx 2048) and the LiteLLM proxy (its mock models and
scripted streams, on its OpenAI and its Anthropic routes).

Each server is installed by ``bash tests/real_servers/up.sh`` and started here (see conftest.py); a server that
is not installed skips its tests with the reason printed. Model output is not asserted word for word (a real
model's text is not ours to pin); what is asserted is what the library promises: the stop reason, what the
transcript keeps, how the error is classed, that an abort settles at once and the server serves the next request.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, TypeAlias

import pytest

from pi_notebook.agent import Agent, AgentTool, AgentToolResult
from pi_notebook.ai import (
    AbortController,
    AssistantMessage,
    Context,
    Message,
    Model,
    StreamOptions,
    TextContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    complete,
    stream,
)
from pi_notebook.ai.messages import text_of
from pi_notebook.ai.models import model_from_server, model_from_spec
from pi_notebook.ai.overflow import is_context_overflow
from pi_notebook.session import AgentSession, CompactionEndEvent, SessionEvent

pytestmark = pytest.mark.timeout(300)  # the first test of each server waits for it to start

PROXY_APIS = ["openai", "anthropic"]  # the LiteLLM proxy's routes (not the fault server's wire_apis.APIS)
ROUTES = ["openai", "anthropic", "responses"]
"""The proxy's routes: chat completions, Messages, and the Responses API (scripted models only: LiteLLM 1.108.7 does
not stream its mock models there)."""
ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    "required": ["a", "b"],
}


def user(text: str) -> UserMessage:
    return UserMessage(content=[TextContent(text=text)])


def first_text(message: AssistantMessage | ToolResultMessage) -> str:
    """The text of the message's first block, which must be a text block."""
    block = message.content[0]
    assert isinstance(block, TextContent), block
    return block.text


def context(text: str, **fields: Any) -> Context:
    return Context(messages=[user(text)], **fields)


def add_tool(calls: list[Any]) -> AgentTool:
    async def add(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        calls.append(args)
        return AgentToolResult(content=str(args["a"] + args["b"]))

    return AgentTool(name="add", description="Adds two numbers.", parameters=ADD_SCHEMA, execute=add)


# -- llama-cpp-python: a real model on its own chat template ----------------------------------------------


@pytest.fixture
def smollm2(llama_cpp_python: Any) -> Model:
    return model_from_spec(f"openai-compatible:{llama_cpp_python.base_url}:smollm2", context_window=2048)


async def test_llama_plain_reply_on_the_default_template(smollm2: Model) -> None:
    # Was: every request failed (content parts made the template raise; a 200 with an empty stream, retried).
    agent = Agent(model=smollm2, stream_fn=stream, stream_options=StreamOptions(max_tokens=24))
    await agent.prompt("Say hello in one short sentence.")
    reply = agent.state.messages[-1]
    assert isinstance(reply, AssistantMessage)
    assert reply.stop_reason in ("stop", "length"), reply.error_message
    assert reply.content and isinstance(reply.content[0], TextContent) and reply.content[0].text.strip()
    assert reply.usage.estimated is True  # llama-cpp-python streams no usage: estimated, and marked so
    assert reply.usage.input > 0 and reply.usage.output > 0


async def test_llama_a_length_reply_honours_max_tokens(smollm2: Model) -> None:
    # Was: max_completion_tokens, which llama-cpp-python ignores (8 asked, 144 generated).
    reply = await complete(smollm2, context("Count from one to one hundred in words."), StreamOptions(max_tokens=8))
    assert reply.stop_reason == "length", reply.error_message
    text = first_text(reply)
    assert 0 < len(text) < 80  # 8 tokens of English are a few words


async def test_llama_accepts_a_tool_round_in_the_history(smollm2: Model) -> None:
    # Was: "content": null on the tool-call message, rejected with a 500 (7 validation errors).
    call = ToolCall(id="call_1", name="add", arguments={"a": 2, "b": 3})
    history: list[Message] = [
        user("What is 2 + 3?"),
        AssistantMessage(content=[call], stop_reason="toolUse", api=smollm2.api, provider=smollm2.provider),
        ToolResultMessage(tool_call_id="call_1", tool_name="add", content=[TextContent(text="5")]),
    ]
    reply = await complete(smollm2, Context(messages=history), StreamOptions(max_tokens=16))
    assert reply.stop_reason in ("stop", "length"), reply.error_message


async def test_llama_abort_mid_stream_settles_at_once_and_the_server_goes_on(smollm2: Model) -> None:
    controller = AbortController()
    response = stream(
        smollm2, context("Write a long story about a lighthouse."), StreamOptions(signal=controller.signal)
    )
    deltas = 0
    aborted_at = 0.0
    async for event in response:
        if event.type == "text_delta":
            deltas += 1
            if deltas == 3:
                aborted_at = time.monotonic()
                controller.abort()
    reply = await response.result()
    settled_ms = (time.monotonic() - aborted_at) * 1000
    assert (reply.stop_reason, reply.error_message) == ("aborted", "Request was aborted")
    assert first_text(reply)  # the partial is kept
    assert settled_ms < 500
    after = await complete(smollm2, context("Say yes."), StreamOptions(max_tokens=4))
    assert after.stop_reason in ("stop", "length"), after.error_message


async def test_llama_overflow_is_classified(smollm2: Model) -> None:
    reply = await complete(smollm2, context("lorem ipsum dolor sit amet " * 700), StreamOptions(max_retries=2))
    assert reply.stop_reason == "error"
    assert is_context_overflow(reply, smollm2.context_window), reply.error_message


def test_llama_lists_ids_only_so_discovery_asks_for_the_window(llama_cpp_python: Any) -> None:
    spec = f"openai-compatible:{llama_cpp_python.base_url}"
    with pytest.raises(ValueError, match="reports no context window for model 'smollm2'"):
        model_from_server(spec)
    assert model_from_server(spec, context_window=2048).id == "smollm2"


# -- LiteLLM proxy: both routes ---------------------------------------------------------------------------

ProxyModel: TypeAlias = Callable[[str, str], Model]
"""``litellm(api, name)``: the proxy's model ``name`` on its ``api`` route (``openai``, ``anthropic`` or
``responses``)."""


@pytest.fixture
def litellm(litellm_proxy: Any, monkeypatch: pytest.MonkeyPatch) -> ProxyModel:
    monkeypatch.setenv("LITELLM_KEY", litellm_proxy.key)

    def model(api: str, name: str) -> Model:
        base = litellm_proxy.base_url + ("" if api == "anthropic" else "/v1")
        if api == "responses":
            return model_from_spec(
                f"openai-responses:{name}", base_url=base, key_env="LITELLM_KEY", context_window=8192
            )
        return model_from_spec(f"{api}-compatible:{base}:{name}", key_env="LITELLM_KEY", context_window=8192)

    return model


@pytest.mark.parametrize("api", PROXY_APIS)
async def test_litellm_plain_reply(litellm: ProxyModel, api: str) -> None:
    # On /v1/messages LiteLLM answers a mock model with a whole JSON message, even to a streaming request.
    reply = await complete(litellm(api, "mock-text"), context("hi"))
    assert (reply.stop_reason, reply.error_message) == ("stop", None)
    assert reply.content == [TextContent(text="The quick brown fox jumps over the lazy dog.")]


@pytest.mark.parametrize("api", ROUTES)
async def test_litellm_tool_round_trip(litellm: ProxyModel, api: str) -> None:
    calls: list[Any] = []
    agent = Agent(model=litellm(api, "scripted-tool"), stream_fn=stream, tools=[add_tool(calls)])
    await agent.prompt("What is 2 + 3?")
    assert calls == [{"a": 2, "b": 3}]
    final = agent.state.messages[-1]
    assert isinstance(final, AssistantMessage)
    assert (final.stop_reason, text_of(final)) == ("stop", "The tool said 5.")  # Responses: with the item's id
    assert final.usage.estimated is None and final.usage.input > 0  # LiteLLM reports usage


@pytest.mark.parametrize("api", ROUTES)
async def test_litellm_malformed_tool_arguments_are_shown_to_the_model(litellm: ProxyModel, api: str) -> None:
    calls: list[Any] = []
    agent = Agent(model=litellm(api, "scripted-badargs"), stream_fn=stream, tools=[add_tool(calls)])
    await agent.prompt("What is 2 + 3?")
    result = next(m for m in agent.state.messages if isinstance(m, ToolResultMessage))
    assert calls == []
    assert result.is_error
    assert 'Received arguments:\n{\n  "a": 2\n}' in first_text(result)


@pytest.mark.parametrize("api", ROUTES)
async def test_litellm_abort_mid_stream(litellm: ProxyModel, api: str) -> None:
    controller = AbortController()
    response = stream(litellm(api, "scripted-slow"), context("go"), StreamOptions(signal=controller.signal))
    deltas = 0
    async for event in response:
        if event.type == "text_delta":
            deltas += 1
            if deltas == 5:
                controller.abort()
    reply = await asyncio.wait_for(response.result(), 5)
    assert reply.stop_reason == "aborted"
    text = first_text(reply)
    assert text.startswith("word0 ") and "word399" not in text


@pytest.mark.parametrize("api", PROXY_APIS)
async def test_litellm_overflow_is_classified_and_not_retried(litellm: ProxyModel, api: str) -> None:
    reply = await complete(litellm(api, "mock-overflow"), context("hi"), StreamOptions(max_retries=3))
    assert reply.stop_reason == "error"
    assert "ContextWindowExceededError" in (reply.error_message or "")
    assert is_context_overflow(reply)  # the session checks overflow first, so it compacts rather than retries


@pytest.mark.parametrize("api", ROUTES)
async def test_litellm_length_reply(litellm: ProxyModel, api: str) -> None:
    reply = await complete(litellm(api, "scripted-length"), context("go"))
    assert (reply.stop_reason, text_of(reply)) == ("length", "cut short")


@pytest.mark.parametrize("api", ROUTES)
async def test_litellm_a_length_reply_is_kept_in_the_session(litellm: ProxyModel, api: str) -> None:
    session = AgentSession(model=litellm(api, "scripted-length"))
    ends: list[SessionEvent] = []
    session.subscribe(lambda event: ends.append(event) if isinstance(event, CompactionEndEvent) else None)
    await session.prompt("go")
    last = session.messages[-1]
    assert last.role == "assistant" and last.stop_reason == "length"  # type: ignore[union-attr]
    assert text_of(last) == "cut short"  # type: ignore[arg-type]
    assert "The truncated reply is kept." in str(getattr(ends[-1], "error_message", ""))


@pytest.mark.parametrize("api", ROUTES)
@pytest.mark.parametrize("retention", ["none", "short", "long"])
async def test_litellm_takes_pis_caching_fields_on_every_route(litellm: ProxyModel, api: str, retention: str) -> None:
    # What Pi sends and we now send too: cache_control breakpoints (with ttl 1h for long) on /v1/messages;
    # store: false, strict: false, prompt_cache_key and prompt_cache_retention on the OpenAI routes.
    tools = [Tool("add", "Adds two numbers.", ADD_SCHEMA)]
    options = StreamOptions(cache_retention=retention, session_id="pi-notebook-session-1")  # type: ignore[arg-type]
    reply = await complete(litellm(api, "scripted-text"), context("hi", system_prompt="be brief", tools=tools), options)
    assert (reply.stop_reason, reply.error_message) == ("stop", None)
    assert text_of(reply) == "hello from the scripted provider"


async def test_litellm_responses_overflow_is_classified(litellm: ProxyModel) -> None:
    reply = await complete(litellm("responses", "scripted-overflow"), context("hi"), StreamOptions(max_retries=3))
    assert reply.stop_reason == "error"
    assert "ContextWindowExceededError" in (reply.error_message or "")
    assert is_context_overflow(reply)
