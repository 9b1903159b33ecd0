"""The faux provider behaves like Pi's (PI-SPEC §9.7, ``packages/ai/test/faux-provider.test.ts``).

Expected prompt texts are written out the way Pi's ``serializeContext`` builds them (parts joined by a blank line,
``role:text``, images as ``[image:<mime>:<data length>]``, tool calls as ``name:<compact JSON>``, tools as
``tools:<compact JSON>``), so a usage estimate can be checked against Pi's exactly.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from pi_notebook.ai import (
    AbortController,
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    ErrorEvent,
    ImageContent,
    Model,
    StreamOptions,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from pi_notebook.ai.providers.faux import (
    FauxProvider,
    FauxState,
    faux_assistant_message,
    faux_text,
    faux_thinking,
    faux_tool_call,
)

ALPHABET = "abcdefghijklmnopqrstuvwxyz"
Block = TextContent | ThinkingContent | ToolCall


def _user(content: Any = "hi") -> UserMessage:
    return UserMessage(content=content, timestamp=1)


def _context(*messages: Any, system_prompt: str = "", tools: Sequence[Tool] | None = None) -> Context:
    return Context(system_prompt=system_prompt, messages=list(messages) or [_user()], tools=tools)


async def _run(
    faux: FauxProvider,
    context: Context | None = None,
    options: StreamOptions | None = None,
    model: Model | None = None,
) -> tuple[list[AssistantMessageEvent], AssistantMessage]:
    stream = faux.stream(model or faux.model, context or _context(), options)
    events = [event async for event in stream]
    return events, await stream.result()


def _types(events: Sequence[AssistantMessageEvent]) -> list[str]:
    return [event.type for event in events]


def _tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# -- models ----------------------------------------------------------------------------------------------


def test_default_model_facts() -> None:
    model = FauxProvider().model
    assert (model.id, model.name, model.api, model.provider) == ("faux-1", "Faux Model", "faux", "faux")
    assert model.base_url == "http://localhost:0"
    assert model.input == ("text", "image")
    assert (model.context_window, model.max_tokens) == (128_000, 16_384)
    assert model.reasoning is False
    assert (model.cost.input, model.cost.output, model.cost.cache_read, model.cost.cache_write) == (0, 0, 0, 0)


def test_get_model_without_an_id_is_the_first_model_and_an_unknown_id_is_none() -> None:
    faux = FauxProvider()
    assert faux.get_model() is faux.model
    assert faux.get_model("faux-1") is faux.model
    assert faux.get_model("nope") is None


def test_model_defined_by_id_alone_gets_pi_defaults() -> None:
    # Pi: name defaults to the id; every model gets the faux base URL, text+image input, 128000 / 16384.
    model = FauxProvider(models=[{"id": "faux-fast"}]).model
    assert model.name == "faux-fast"
    assert model.base_url == "http://localhost:0"
    assert model.input == ("text", "image")
    assert (model.context_window, model.max_tokens, model.reasoning) == (128_000, 16_384, False)


async def test_multiple_models_with_per_model_reasoning_and_model_aware_factories() -> None:
    faux = FauxProvider(
        models=[
            {"id": "faux-fast", "name": "Faux Fast", "reasoning": False},
            {"id": "faux-thinker", "name": "Faux Thinker", "reasoning": True},
        ]
    )

    def by_model(context: Context, options: StreamOptions, state: FauxState, model: Model) -> AssistantMessage:
        return faux_assistant_message(f"{model.id}:{str(model.reasoning).lower()}")

    faux.set_responses([by_model, by_model])
    assert [model.id for model in faux.models] == ["faux-fast", "faux-thinker"]
    assert faux.get_model() is faux.models[0]
    fast, thinker = faux.get_model("faux-fast"), faux.get_model("faux-thinker")
    assert fast is not None and thinker is not None
    assert (fast.reasoning, thinker.reasoning) == (False, True)

    _, fast_reply = await _run(faux, model=fast)
    _, thinker_reply = await _run(faux, model=thinker)
    assert fast_reply.content == [TextContent(text="faux-fast:false")]
    assert thinker_reply.content == [TextContent(text="faux-thinker:true")]


async def test_rewrites_api_provider_and_model_on_returned_messages() -> None:
    faux = FauxProvider(api="faux:test", provider="faux-provider", models=[{"id": "faux-model"}])
    faux.set_responses([faux_assistant_message("hello")])  # scripted as api/provider "faux", model "faux-1"
    assert (faux.model.api, faux.model.provider) == ("faux:test", "faux-provider")
    _, reply = await _run(faux)
    assert (reply.api, reply.provider, reply.model) == ("faux:test", "faux-provider", "faux-model")


# -- helpers ---------------------------------------------------------------------------------------------


def test_faux_assistant_message_from_text_has_pis_defaults() -> None:
    message = faux_assistant_message("hello")
    assert message.content == [TextContent(text="hello")]
    assert (message.api, message.provider, message.model, message.stop_reason) == ("faux", "faux", "faux-1", "stop")
    assert message.error_message is None


def test_faux_assistant_message_accepts_one_block_or_a_mixed_list() -> None:
    assert faux_assistant_message(faux_thinking("t")).content == [ThinkingContent(thinking="t")]
    mixed = faux_assistant_message(["a", faux_text("b")], stop_reason="length")
    assert mixed.content == [TextContent(text="a"), TextContent(text="b")]
    assert mixed.stop_reason == "length"


def test_faux_tool_call_keeps_a_given_id_and_makes_unique_ones_otherwise() -> None:
    assert faux_tool_call("echo", {"text": "hi"}, id="tool-1") == ToolCall(
        id="tool-1", name="echo", arguments={"text": "hi"}
    )
    first, second = faux_tool_call("echo"), faux_tool_call("echo")
    assert first.id != second.id
    assert first.arguments == {}


# -- usage -----------------------------------------------------------------------------------------------


async def test_estimates_usage_for_prompt_and_output() -> None:
    faux = FauxProvider()
    faux.set_responses([faux_assistant_message("hello world")])
    _, reply = await _run(faux, _context(_user("hi there"), system_prompt="Be concise."))
    assert reply.content == [TextContent(text="hello world")]
    assert reply.usage.input > 0
    assert reply.usage.output == _tokens("hello world")
    assert reply.usage.total_tokens == reply.usage.input + reply.usage.output
    assert faux.state.call_count == 1


async def test_estimates_prompt_and_output_tokens_from_pi_serialized_context() -> None:
    tool = Tool(
        name="echo",
        description="Echo back text",
        parameters={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    )
    context = _context(
        _user([TextContent(text="hello"), ImageContent(mime_type="image/png", data="abcd")]),
        faux_assistant_message("prior"),
        ToolResultMessage(tool_call_id="tool-1", tool_name="echo", content=[TextContent(text="tool out")], timestamp=2),
        system_prompt="sys",
        tools=[tool],
    )
    prompt_text = "\n\n".join(
        [
            "system:sys",
            "user:hello\n[image:image/png:4]",
            "assistant:prior",
            "toolResult:echo\ntool out",
            "tools:" + _compact([{"name": tool.name, "description": tool.description, "parameters": tool.parameters}]),
        ]
    )
    faux = FauxProvider()
    faux.set_responses([faux_assistant_message("done")])
    _, reply = await _run(faux, context)
    usage = reply.usage
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write) == (_tokens(prompt_text), 1, 0, 0)
    assert usage.total_tokens == _tokens(prompt_text) + 1


PI_PROMPT_CASES = {
    "system_prompt": (_context(_user("hello"), system_prompt="sys"), "system:sys\n\nuser:hello"),
    "user_text": (_context(_user("hi")), "user:hi"),
    "image_block": (
        _context(_user([TextContent(text="hello"), ImageContent(mime_type="image/png", data="abcd")])),
        "user:hello\n[image:image/png:4]",
    ),
    "tool_call_arguments": (
        _context(_user("x"), faux_assistant_message([faux_tool_call("echo", {"a": 1, "b": "c"}, id="t")])),
        'user:x\n\nassistant:echo:{"a":1,"b":"c"}',
    ),
    "empty_tool_result": (
        _context(ToolResultMessage(tool_call_id="t", tool_name="echo", content=[], timestamp=1)),
        "toolResult:echo",
    ),
    "tool_definitions": (
        _context(_user("x"), tools=[Tool(name="echo", description="d", parameters={"type": "object"})]),
        'user:x\n\ntools:[{"name":"echo","description":"d","parameters":{"type":"object"}}]',
    ),
}


@pytest.mark.parametrize(("context", "pi_prompt_text"), PI_PROMPT_CASES.values(), ids=PI_PROMPT_CASES.keys())
async def test_prompt_estimate_is_ceil_of_pi_serialized_length_over_four(context: Context, pi_prompt_text: str) -> None:
    faux = FauxProvider()
    faux.set_responses([faux_assistant_message("done")])
    _, reply = await _run(faux, context)
    assert reply.usage.input == _tokens(pi_prompt_text)


async def test_output_estimate_joins_blocks_with_newlines_like_pi() -> None:
    faux = FauxProvider()
    faux.set_responses([faux_assistant_message([faux_thinking("abcd"), faux_text("efgh")])])
    _, reply = await _run(faux)
    assert reply.usage.output == _tokens("abcd\nefgh")


# -- the queue -------------------------------------------------------------------------------------------


async def test_consumes_queued_responses_in_order_and_errors_when_exhausted() -> None:
    faux = FauxProvider()
    faux.set_responses([faux_assistant_message("first"), faux_assistant_message("second")])
    _, first = await _run(faux)
    _, second = await _run(faux)
    events, exhausted = await _run(faux)
    assert first.content == [TextContent(text="first")]
    assert second.content == [TextContent(text="second")]
    assert _types(events) == ["error"]
    assert (exhausted.stop_reason, exhausted.error_message) == ("error", "No more faux responses queued")
    assert exhausted.usage.input > 0
    assert faux.pending_count == 0
    assert faux.state.call_count == 3


async def test_set_responses_replaces_the_queue_and_append_responses_extends_it() -> None:
    faux = FauxProvider()
    faux.set_responses([faux_assistant_message("first"), faux_assistant_message("dropped")])
    assert (await _run(faux))[1].content == [TextContent(text="first")]
    assert faux.pending_count == 1

    faux.set_responses([faux_assistant_message("second")])
    assert faux.pending_count == 1
    assert (await _run(faux))[1].content == [TextContent(text="second")]

    faux.append_responses([faux_assistant_message("third"), faux_assistant_message("fourth")])
    assert faux.pending_count == 2
    assert (await _run(faux))[1].content == [TextContent(text="third")]
    assert (await _run(faux))[1].content == [TextContent(text="fourth")]
    assert faux.pending_count == 0


async def test_stream_takes_its_response_when_called_not_when_read() -> None:
    faux = FauxProvider()
    faux.set_responses([faux_assistant_message("first"), faux_assistant_message("second")])
    first = faux.stream(faux.model, _context())
    second = faux.stream(faux.model, _context())
    assert (faux.pending_count, faux.state.call_count) == (0, 2)
    assert (await second.result()).content == [TextContent(text="second")]
    assert (await first.result()).content == [TextContent(text="first")]


async def test_a_queued_message_is_not_changed_by_streaming_it() -> None:
    scripted = faux_assistant_message([faux_thinking("t"), faux_tool_call("echo", {"x": 1}, id="c")], "toolUse")
    before = scripted.model_copy(deep=True)
    faux = FauxProvider()
    faux.set_responses([scripted, scripted])
    _, first = await _run(faux)
    _, second = await _run(faux)
    assert scripted == before
    assert first.content == second.content == before.content
    assert first is not scripted


async def test_supports_async_response_factories() -> None:
    async def factory(context: Context, options: StreamOptions, state: FauxState, model: Model) -> AssistantMessage:
        await anyio.lowlevel.checkpoint()
        return faux_assistant_message(f"{len(context.messages)}:{state.call_count}")

    faux = FauxProvider()
    faux.set_responses([factory])
    _, reply = await _run(faux)
    assert reply.content == [TextContent(text="1:1")]


async def test_factory_receives_the_request_context_options_state_and_model() -> None:
    received: list[tuple[Any, ...]] = []

    def factory(context: Context, options: StreamOptions, state: FauxState, model: Model) -> AssistantMessage:
        received.append((context, options, state, model))
        return faux_assistant_message("ok")

    faux = FauxProvider()
    faux.set_responses([factory])
    context, options = _context(), StreamOptions(session_id="s")
    await _run(faux, context, options)
    assert received == [(context, options, faux.state, faux.model)]
    assert received[0][0] is context and received[0][1] is options


async def test_throwing_factory_gives_a_single_error_event() -> None:
    def factory(context: Context, options: StreamOptions, state: FauxState, model: Model) -> AssistantMessage:
        raise RuntimeError("boom")

    faux = FauxProvider()
    faux.set_responses([factory])
    events, reply = await _run(faux)
    assert _types(events) == ["error"]
    assert isinstance(events[0], ErrorEvent)
    assert events[0].reason == "error"
    assert (reply.stop_reason, reply.error_message) == ("error", "boom")


async def test_pending_stop_reason_ends_with_an_error_event() -> None:
    faux = FauxProvider()
    faux.set_responses([faux_assistant_message("hi", stop_reason="pending")])
    events, reply = await _run(faux)
    assert _types(events)[-1] == "error"
    assert "done" not in _types(events)
    assert (reply.stop_reason, reply.error_message) == ("error", "Faux response ended without a stop reason")


# -- streaming -------------------------------------------------------------------------------------------


async def test_streams_thinking_text_and_partial_tool_call_deltas() -> None:
    arguments = {"text": "hi", "count": 12}
    faux = FauxProvider()
    faux.set_responses(
        [
            faux_assistant_message(
                [faux_thinking("thinking text"), faux_text("answer text"), faux_tool_call("echo", arguments, id="t1")],
                stop_reason="toolUse",
            )
        ]
    )
    events, _ = await _run(faux)
    types = _types(events)
    for kind in ("thinking_start", "thinking_delta", "text_start", "text_delta", "toolcall_start", "toolcall_delta"):
        assert kind in types
    assert "toolcall_end" in types
    tool_deltas = [event.delta for event in events if event.type == "toolcall_delta"]
    assert len(tool_deltas) > 1
    assert json.loads("".join(tool_deltas)) == arguments


async def test_streams_an_exact_event_order_for_fixed_size_chunks() -> None:
    faux = FauxProvider(token_size=(1, 1))
    faux.set_responses(
        [
            faux_assistant_message(
                [faux_thinking("go"), faux_text("ok"), faux_tool_call("echo", {}, id="tool-1")], stop_reason="toolUse"
            )
        ]
    )
    events, reply = await _run(faux)
    assert _types(events) == [
        "start",
        "thinking_start",
        "thinking_delta",
        "thinking_end",
        "text_start",
        "text_delta",
        "text_end",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_end",
        "done",
    ]
    assert [getattr(event, "content_index", None) for event in events] == [None, 0, 0, 0, 1, 1, 1, 2, 2, 2, None]
    assert reply.stop_reason == "toolUse"


async def test_done_message_content_equals_the_scripted_blocks() -> None:
    blocks: list[Block] = [faux_thinking("think"), faux_tool_call("echo", {"text": "hi"}, id="c1"), faux_text("done")]
    faux = FauxProvider()
    faux.set_responses([faux_assistant_message(blocks, stop_reason="toolUse", response_id="resp-1")])
    events, reply = await _run(faux)
    assert events[-1].type == "done"
    assert reply.content == blocks
    assert (reply.stop_reason, reply.response_id) == ("toolUse", "resp-1")


async def test_scripted_signatures_and_redaction_are_kept_on_the_result() -> None:
    # Pi streams a structuredClone of the scripted message, so every block field survives.
    blocks: list[Block] = [
        ThinkingContent(thinking="", thinking_signature="opaque", redacted=True),
        ToolCall(id="c1", name="echo", arguments={"a": 1}, thought_signature="sig-1"),
        TextContent(text="done", text_signature="ts-1"),
    ]
    faux = FauxProvider()
    faux.set_responses([faux_assistant_message(blocks, stop_reason="toolUse")])
    _, reply = await _run(faux)
    assert reply.content == blocks


async def test_fixed_token_size_splits_text_into_four_characters_per_token() -> None:
    faux = FauxProvider(token_size=(2, 2))
    faux.set_responses([faux_assistant_message("x" * 20)])
    events, _ = await _run(faux)
    assert [len(event.delta) for event in events if event.type == "text_delta"] == [8, 8, 4]


async def test_random_chunk_sizes_stay_within_token_size_bounds() -> None:
    text = ALPHABET * 20
    faux = FauxProvider(token_size=(3, 5), seed=7)
    faux.set_responses([faux_assistant_message(text)])
    events, _ = await _run(faux)
    deltas = [event.delta for event in events if event.type == "text_delta"]
    assert "".join(deltas) == text
    assert {len(delta) for delta in deltas[:-1]} <= {12, 16, 20}
    assert 0 < len(deltas[-1]) <= 20


async def test_empty_text_block_streams_one_empty_delta() -> None:
    faux = FauxProvider()
    faux.set_responses([faux_assistant_message("")])
    events, reply = await _run(faux)
    assert _types(events) == ["start", "text_start", "text_delta", "text_end", "done"]
    assert reply.content == [TextContent(text="")]


async def test_streams_multiple_tool_calls_in_one_message() -> None:
    faux = FauxProvider()
    faux.set_responses(
        [
            faux_assistant_message(
                [
                    faux_tool_call("echo", {"text": "one"}, id="tool-1"),
                    faux_tool_call("echo", {"text": "two"}, id="tool-2"),
                ],
                stop_reason="toolUse",
            )
        ]
    )
    events, reply = await _run(faux)
    assert _types(events).count("toolcall_start") == 2
    ends = [event.tool_call for event in events if event.type == "toolcall_end"]
    assert [(call.id, call.arguments) for call in ends] == [("tool-1", {"text": "one"}), ("tool-2", {"text": "two"})]
    assert [block.id for block in reply.content if isinstance(block, ToolCall)] == ["tool-1", "tool-2"]


@pytest.mark.parametrize(
    ("stop_reason", "error_message"), [("error", "upstream failed"), ("aborted", "Request was aborted")]
)
async def test_explicit_error_or_aborted_message_streams_then_ends_with_an_error_event(
    stop_reason: Any, error_message: str
) -> None:
    faux = FauxProvider(token_size=(2, 2))
    faux.set_responses([faux_assistant_message("partial", stop_reason=stop_reason, error_message=error_message)])
    events, reply = await _run(faux)
    assert _types(events) == ["start", "text_start", "text_delta", "text_end", "error"]
    terminal = events[-1]
    assert isinstance(terminal, ErrorEvent)
    assert terminal.reason == stop_reason
    assert (terminal.error.stop_reason, terminal.error.error_message) == (stop_reason, error_message)
    assert reply.content == [TextContent(text="partial")]


# -- abort -----------------------------------------------------------------------------------------------


async def test_abort_before_the_first_chunk_gives_only_an_aborted_error_event() -> None:
    faux = FauxProvider(tokens_per_second=50, token_size=(3, 3))
    faux.set_responses([faux_assistant_message(ALPHABET)])
    controller = AbortController()
    controller.abort()
    events, reply = await _run(faux, options=StreamOptions(signal=controller.signal))
    assert _types(events) == ["error"]
    assert isinstance(events[0], ErrorEvent)
    assert events[0].reason == "aborted"
    assert (reply.stop_reason, reply.error_message, reply.content) == ("aborted", "Request was aborted", [])


MID_STREAM_CASES = {
    "text": (faux_text(ALPHABET), "text", [TextContent(text=ALPHABET[:12])]),
    "thinking": (faux_thinking(ALPHABET), "thinking", [ThinkingContent(thinking=ALPHABET[:12])]),
    "toolcall": (
        faux_tool_call("echo", {"text": ALPHABET, "count": 123456789}, id="tool-1"),
        "toolcall",
        [ToolCall(id="tool-1", name="echo", arguments={})],
    ),
}


@pytest.mark.parametrize(("block", "kind", "partial_content"), MID_STREAM_CASES.values(), ids=MID_STREAM_CASES.keys())
async def test_abort_mid_block_when_paced_ends_with_aborted_error_and_no_block_end(
    block: Any, kind: str, partial_content: list[Any]
) -> None:
    faux = FauxProvider(tokens_per_second=100, token_size=(3, 3))
    faux.set_responses([faux_assistant_message([block], stop_reason="toolUse" if kind == "toolcall" else "stop")])
    controller = AbortController()
    stream = faux.stream(faux.model, _context(), StreamOptions(signal=controller.signal))
    types: list[str] = []
    async for event in stream:
        types.append(event.type)
        if event.type == f"{kind}_delta":
            controller.abort()
    assert types == ["start", f"{kind}_start", f"{kind}_delta", "error"]
    reply = await stream.result()
    assert (reply.stop_reason, reply.error_message) == ("aborted", "Request was aborted")
    assert reply.content == partial_content


async def test_abort_mid_text_without_pacing_stops_at_the_next_chunk() -> None:
    faux = FauxProvider(token_size=(1, 1))
    faux.set_responses([faux_assistant_message(ALPHABET)])
    controller = AbortController()
    stream = faux.stream(faux.model, _context(), StreamOptions(signal=controller.signal))
    types: list[str] = []
    async for event in stream:
        types.append(event.type)
        if event.type == "text_delta":
            controller.abort()
    assert types == ["start", "text_start", "text_delta", "error"]
    assert (await stream.result()).content == [TextContent(text="abcd")]


async def test_abort_at_a_block_end_stops_before_the_next_block() -> None:
    faux = FauxProvider()
    faux.set_responses([faux_assistant_message(["first", "second"])])
    controller = AbortController()
    stream = faux.stream(faux.model, _context(), StreamOptions(signal=controller.signal))
    types: list[str] = []
    async for event in stream:
        types.append(event.type)
        if event.type == "text_end":
            controller.abort()
    assert types == ["start", "text_start", "text_delta", "text_end", "error"]
    reply = await stream.result()
    assert (reply.stop_reason, reply.content) == ("aborted", [TextContent(text="first")])


async def test_abort_from_another_task_interrupts_the_pacing_wait_at_once() -> None:
    faux = FauxProvider(tokens_per_second=1, token_size=(3, 3))  # 3 s before the first delta
    faux.set_responses([faux_assistant_message(ALPHABET)])
    controller = AbortController()
    text_started = anyio.Event()
    types: list[str] = []

    async def consume() -> None:
        async for event in faux.stream(faux.model, _context(), StreamOptions(signal=controller.signal)):
            types.append(event.type)
            if event.type == "text_start":
                text_started.set()

    async def abort_when_text_starts() -> None:
        await text_started.wait()
        controller.abort()

    begin = time.monotonic()
    async with anyio.create_task_group() as tg:
        tg.start_soon(consume)
        tg.start_soon(abort_when_text_starts)
    assert time.monotonic() - begin < 1
    assert types == ["start", "text_start", "error"]


# -- prompt caching --------------------------------------------------------------------------------------


async def test_does_not_share_cache_across_sessions_or_requests_without_session_id() -> None:
    faux = FauxProvider()
    faux.set_responses([faux_assistant_message(text) for text in ("first", "second", "third")])
    messages: list[Any] = [_user("hello")]
    context = Context(messages=messages)

    _, first = await _run(faux, context, StreamOptions(session_id="session-1"))
    assert first.usage.cache_write > 0
    messages += [first, _user("follow up")]

    _, second = await _run(faux, context, StreamOptions(session_id="session-2"))
    assert second.usage.cache_read == 0
    assert second.usage.cache_write > 0

    _, third = await _run(faux, context)
    assert (third.usage.cache_read, third.usage.cache_write) == (0, 0)


async def test_simulates_prompt_caching_per_session_id() -> None:
    faux = FauxProvider()
    faux.set_responses([faux_assistant_message("first"), faux_assistant_message("second")])
    messages: list[Any] = [_user("hello")]
    context = Context(system_prompt="Be concise.", messages=messages)

    _, first = await _run(faux, context, StreamOptions(session_id="session-1"))
    assert first.usage.cache_read == 0
    assert first.usage.cache_write > 0
    messages += [first, _user("follow up")]

    _, second = await _run(faux, context, StreamOptions(session_id="session-1"))
    assert second.usage.cache_read > 0


async def test_prompt_cache_reads_the_common_prefix_including_the_system_prompt() -> None:
    # Pi caches the longest common prefix of the serialized prompts; numbers checked against Pi 0.83.
    faux = FauxProvider()
    faux.set_responses([faux_assistant_message("first"), faux_assistant_message("first")])
    messages: list[Any] = [_user("hello")]
    context = Context(system_prompt="Be concise.", messages=messages)
    first_prompt = "system:Be concise.\n\nuser:hello"
    second_prompt = first_prompt + "\n\nassistant:first\n\nuser:follow up"

    _, first = await _run(faux, context, StreamOptions(session_id="s"))
    assert (first.usage.input, first.usage.cache_read, first.usage.cache_write) == (
        _tokens(first_prompt),
        0,
        _tokens(first_prompt),
    )
    messages += [first, _user("follow up")]
    _, second = await _run(faux, context, StreamOptions(session_id="s"))
    cache_read = _tokens(first_prompt)
    assert (second.usage.input, second.usage.cache_read, second.usage.cache_write) == (
        _tokens(second_prompt) - cache_read,
        cache_read,
        _tokens(second_prompt[len(first_prompt) :]),
    )


async def test_a_changed_message_of_the_same_size_is_not_read_from_cache() -> None:
    faux = FauxProvider()
    faux.set_responses([faux_assistant_message("ok"), faux_assistant_message("ok")])
    await _run(faux, _context(_user("a" * 40)), StreamOptions(session_id="s"))
    _, second = await _run(faux, _context(_user("b" * 40)), StreamOptions(session_id="s"))
    assert second.usage.cache_read == _tokens("user:")  # only the common "user:" prefix is shared


async def test_does_not_simulate_caching_when_cache_retention_is_none() -> None:
    faux = FauxProvider()
    faux.set_responses([faux_assistant_message("first"), faux_assistant_message("second")])
    messages: list[Any] = [_user("hello")]
    context = Context(messages=messages)
    options = StreamOptions(session_id="session-1", cache_retention="none")

    _, first = await _run(faux, context, options)
    messages += [faux_assistant_message("first"), _user("follow up")]
    _, second = await _run(faux, context, options)
    assert (first.usage.cache_read, first.usage.cache_write) == (0, 0)
    assert (second.usage.cache_read, second.usage.cache_write) == (0, 0)


# -- on_response -----------------------------------------------------------------------------------------


async def test_on_response_is_called_with_200_and_no_headers_before_the_first_event() -> None:
    log: list[Any] = []
    faux = FauxProvider()
    faux.set_responses([faux_assistant_message("hi")])
    options = StreamOptions(on_response=lambda status, headers: log.append((status, dict(headers))))
    async for event in faux.stream(faux.model, _context(), options):
        log.append(event.type)
    assert log == [(200, {}), "start", "text_start", "text_delta", "text_end", "done"]


async def test_async_on_response_is_awaited_before_the_first_event() -> None:
    log: list[str] = []

    async def on_response(status: int, headers: Any) -> None:
        await anyio.lowlevel.checkpoint()
        log.append(f"response {status}")

    faux = FauxProvider()
    faux.set_responses([faux_assistant_message("hi")])
    async for event in faux.stream(faux.model, _context(), StreamOptions(on_response=on_response)):
        log.append(event.type)
    assert log[:2] == ["response 200", "start"]


async def test_on_response_is_called_even_when_the_queue_is_exhausted() -> None:
    log: list[int] = []
    faux = FauxProvider()
    events, _ = await _run(faux, options=StreamOptions(on_response=lambda status, headers: log.append(status)))
    assert log == [200]
    assert _types(events) == ["error"]


# -- the incremental prompt meter ------------------------------------------------------------------------


async def _prompt_tokens(faux: FauxProvider, context: Context) -> int:
    faux.set_responses([faux_assistant_message("ok")])
    _, reply = await _run(faux, context)
    return reply.usage.input


async def test_incremental_prompt_estimate_matches_a_fresh_provider_for_each_context() -> None:
    # The meter assumes what the agent loop guarantees: within a run the transcript only grows. Retries
    # (last message replaced), compaction and transforms (a different first message) start a fresh count.
    u1, u2, u3 = _user("first question"), _user("second question"), _user("third")
    u3_retry = _user("third, asked again at much greater length. " * 4)
    a1 = faux_assistant_message("first answer")
    a2 = faux_assistant_message([faux_thinking("hmm"), faux_tool_call("echo", {"text": "x"}, id="c1")], "toolUse")
    r2 = ToolResultMessage(tool_call_id="c1", tool_name="echo", content=[TextContent(text="x")], timestamp=1)
    growing: list[Any] = [u1, a1, u2]
    contexts = {
        "one message": Context(messages=[u1]),
        "new list, prefix kept": Context(messages=growing),
        "same list, appended in place": Context(messages=growing),
        "last message replaced": Context(messages=[u1, a1, u2, a2, r2, u3_retry]),
        "system prompt added": Context(system_prompt="Be brief.", messages=[u1, a1, u2, a2, r2, u3_retry]),
        "first message replaced": Context(messages=[u2, a2, r2, u3_retry]),
        "history shortened": Context(messages=[u1, u3]),
    }
    incremental = FauxProvider()
    measured: dict[str, tuple[int, int]] = {}
    for name, context in contexts.items():
        if name == "same list, appended in place":
            growing += [a2, r2, u3]
        measured[name] = (await _prompt_tokens(incremental, context), await _prompt_tokens(FauxProvider(), context))
    assert {name: inc for name, (inc, _) in measured.items()} == {name: fresh for name, (_, fresh) in measured.items()}


async def test_prompt_estimate_sees_a_tool_added_to_the_same_tools_list() -> None:
    tools = [Tool(name="echo", description="Echo back text", parameters={"type": "object"})]
    context = Context(messages=[_user()], tools=tools)
    faux = FauxProvider()
    await _prompt_tokens(faux, context)
    tools.append(Tool(name="grep", description="Search files for a pattern" * 3, parameters={"type": "object"}))
    assert await _prompt_tokens(faux, context) == await _prompt_tokens(FauxProvider(), context)


async def test_a_reply_sent_back_is_measured_as_pi_serialises_it() -> None:
    # The provider remembers the size of the reply it produced instead of serialising it again in the next
    # request: that size must be the one Pi's serializeContext gives it (thinking, text, non-ASCII arguments).
    from pi_notebook.agent import Agent, AgentTool, AgentToolResult
    from pi_notebook.ai.providers._usage_estimate import estimate_tokens, serialize_context

    async def echo(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        return AgentToolResult(content=str(args))

    faux = FauxProvider()
    faux.set_responses(
        [
            faux_assistant_message(
                [faux_thinking("plan ü"), faux_text("calling"), faux_tool_call("echo", {"t": "é\n", "n": [1.5, None]})],
                "toolUse",
            ),
            faux_assistant_message(
                [faux_tool_call("echo", {}), faux_tool_call("echo", {"k": {"x": "日本"}})], "toolUse"
            ),
            faux_assistant_message("done"),
        ]
    )
    expected: list[int] = []

    def stream(model: Model, context: Context, options: StreamOptions | None = None) -> Any:
        expected.append(estimate_tokens(len(serialize_context(context))))
        return faux.stream(model, context, options)

    tool = AgentTool(name="echo", description="echo", parameters={"type": "object"}, execute=echo)
    agent = Agent(stream_fn=stream, model=faux.model, tools=[tool])
    await agent.prompt("go")
    replies = [m for m in agent.state.messages if isinstance(m, AssistantMessage)]
    assert [r.stop_reason for r in replies] == ["toolUse", "toolUse", "stop"]
    assert [r.usage.input for r in replies] == expected
