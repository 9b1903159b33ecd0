"""transform_messages: what each provider sends for a transcript (Pi's ``transform-messages.ts``)."""

from __future__ import annotations

from typing import Any

import pytest

from pi_notebook.ai import (
    AssistantMessage,
    ImageContent,
    Message,
    Model,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from pi_notebook.ai.messages import message_to_dict
from pi_notebook.ai.transform import (
    NO_RESULT_PROVIDED,
    TOOL_IMAGE_PLACEHOLDER,
    USER_IMAGE_PLACEHOLDER,
    transform_messages,
)

TARGET = Model(id="claude-x", api="anthropic-messages", provider="anthropic", input=("text", "image"))
TEXT_ONLY = TARGET.model_copy(update={"input": ("text",)})
IMAGE = ImageContent(data="aGVsbG8=", mime_type="image/png")


def assistant(*blocks: Any, stop_reason: Any = "stop", **identity: str) -> AssistantMessage:
    """An assistant message from ``TARGET`` unless ``identity`` overrides ``api``/``provider``/``model``."""
    fields = {"api": TARGET.api, "provider": TARGET.provider, "model": TARGET.id, **identity}
    return AssistantMessage(content=list(blocks), stop_reason=stop_reason, **fields)


def foreign(*blocks: Any, stop_reason: Any = "stop") -> AssistantMessage:
    return assistant(*blocks, stop_reason=stop_reason, api="openai-responses", provider="openai", model="gpt-x")


def call(id: str, name: str = "bash", **fields: Any) -> ToolCall:
    return ToolCall(id=id, name=name, arguments={"command": "ls"}, **fields)


def result(id: str, name: str = "bash", *content: Any) -> ToolResultMessage:
    return ToolResultMessage(tool_call_id=id, tool_name=name, content=list(content) or [TextContent(text="ok")])


def only_content(messages: list[Message], index: int = 0) -> list[Any]:
    return list(messages[index].content)


def shape(messages: list[Message]) -> list[str]:
    """``role`` / ``role:tool_call_id`` for each message, to compare orders."""
    return [f"toolResult:{m.tool_call_id}" if isinstance(m, ToolResultMessage) else m.role for m in messages]


# --- content normalisation and images ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        UserMessage.model_construct(role="user", content=None, timestamp=1),  # type: ignore[arg-type]
        assistant().model_copy(update={"content": None}),
        result("c1").model_copy(update={"content": None}),
    ],
    ids=["user", "assistant", "toolResult"],
)
def test_null_content_is_normalised_to_an_empty_list(message: Any) -> None:
    [out] = transform_messages([message], TARGET)
    assert out.content == []
    assert message.content is None


def test_user_images_become_one_placeholder_when_the_model_lacks_image_input() -> None:
    message = UserMessage(content=[TextContent(text="look"), IMAGE])
    out = transform_messages([message], TEXT_ONLY)
    assert only_content(out) == [TextContent(text="look"), TextContent(text=USER_IMAGE_PLACEHOLDER)]


def test_tool_result_images_become_the_tool_placeholder_when_the_model_lacks_image_input() -> None:
    messages: list[Message] = [assistant(call("c1")), result("c1", "screenshot", IMAGE)]
    out = transform_messages(messages, TEXT_ONLY)
    assert only_content(out, 1) == [TextContent(text=TOOL_IMAGE_PLACEHOLDER)]


def test_consecutive_images_collapse_to_one_placeholder_and_separated_ones_do_not() -> None:
    message = UserMessage(content=[IMAGE, IMAGE, IMAGE, TextContent(text="and"), IMAGE])
    out = transform_messages([message], TEXT_ONLY)
    placeholder = TextContent(text=USER_IMAGE_PLACEHOLDER)
    assert only_content(out) == [placeholder, TextContent(text="and"), placeholder]


def test_an_image_after_an_existing_placeholder_text_adds_no_second_placeholder() -> None:
    message = UserMessage(content=[TextContent(text=USER_IMAGE_PLACEHOLDER), IMAGE])
    out = transform_messages([message], TEXT_ONLY)
    assert only_content(out) == [TextContent(text=USER_IMAGE_PLACEHOLDER)]


def test_images_are_kept_for_a_model_with_image_input() -> None:
    user = UserMessage(content=[IMAGE])
    tool_result = result("c1", "screenshot", IMAGE)
    out = transform_messages([user, assistant(call("c1")), tool_result], TARGET)
    assert out[0] is user
    assert out[2] is tool_result


def test_string_user_content_passes_through_for_a_text_only_model() -> None:
    user = UserMessage(content="hello")
    assert transform_messages([user], TEXT_ONLY)[0] is user


# --- assistant blocks: same model vs another model --------------------------------------------------------


@pytest.mark.parametrize(
    "identity",
    [{"provider": "anthropic-vertex"}, {"api": "bedrock-converse-stream"}, {"model": "claude-y"}],
    ids=["provider", "api", "model-id"],
)
def test_same_model_needs_the_same_provider_api_and_model_id(identity: dict[str, str]) -> None:
    signed = ThinkingContent(thinking="plan", thinking_signature="sig")
    [same] = transform_messages([assistant(signed)], TARGET)
    [other] = transform_messages([assistant(signed, **identity)], TARGET)
    assert same.content == [signed]
    assert other.content == [TextContent(text="plan")]


def test_redacted_thinking_is_kept_only_for_the_same_model() -> None:
    redacted = ThinkingContent(thinking="", thinking_signature="opaque", redacted=True)
    assert only_content(transform_messages([assistant(redacted, TextContent(text="hi"))], TARGET)) == [
        redacted,
        TextContent(text="hi"),
    ]
    assert only_content(transform_messages([foreign(redacted, TextContent(text="hi"))], TARGET)) == [
        TextContent(text="hi")
    ]


def test_signed_thinking_is_kept_for_the_same_model_even_when_empty() -> None:
    encrypted = ThinkingContent(thinking="", thinking_signature="enc-reasoning")
    assert only_content(transform_messages([assistant(encrypted)], TARGET)) == [encrypted]


@pytest.mark.parametrize("thinking", ["", "   \n\t"])
def test_empty_or_whitespace_thinking_is_dropped(thinking: str) -> None:
    block = ThinkingContent(thinking=thinking)
    text = TextContent(text="answer")
    assert only_content(transform_messages([assistant(block, text)], TARGET)) == [text]
    assert only_content(transform_messages([foreign(block, text)], TARGET)) == [text]


def test_thinking_is_kept_for_the_same_model_and_becomes_plain_text_for_another() -> None:
    block = ThinkingContent(thinking="let me think", thinking_signature="sig")
    assert only_content(transform_messages([assistant(block)], TARGET)) == [block]
    [out] = only_content(transform_messages([foreign(block)], TARGET))
    assert out == TextContent(text="let me think")
    assert out.text_signature is None


def test_text_signatures_are_stripped_for_another_model_only() -> None:
    signed = TextContent(text="hello", text_signature="msg_123")
    assert only_content(transform_messages([assistant(signed)], TARGET)) == [signed]
    [out] = only_content(transform_messages([foreign(signed)], TARGET))
    assert out == TextContent(text="hello")
    assert message_to_dict(transform_messages([foreign(signed)], TARGET)[0])["content"] == [
        {"type": "text", "text": "hello"}
    ]


def test_tool_call_thought_signatures_are_stripped_for_another_model_only() -> None:
    signed = call("c1", thought_signature="gemini-sig")
    same = transform_messages([assistant(signed), result("c1")], TARGET)
    other = transform_messages([foreign(signed), result("c1")], TARGET)
    assert only_content(same) == [signed]
    [stripped] = only_content(other)
    assert stripped.thought_signature is None
    assert (stripped.id, stripped.name, stripped.arguments) == (signed.id, signed.name, signed.arguments)


def test_tool_call_ids_from_another_model_are_normalised_and_later_results_follow() -> None:
    seen: list[tuple[str, str, str]] = []

    def normalise(id: str, model: Model, source: AssistantMessage) -> str:
        seen.append((id, model.id, source.model))
        return id.replace("|", "_")[:64]

    messages: list[Message] = [foreign(call("call|abc")), result("call|abc"), UserMessage(content="next")]
    out = transform_messages(messages, TARGET, normalize_tool_call_id=normalise)
    assert only_content(out)[0].id == "call_abc"
    assert shape(out) == ["assistant", "toolResult:call_abc", "user"]
    assert seen == [("call|abc", "claude-x", "gpt-x")]


def test_tool_call_ids_of_the_same_model_are_not_normalised() -> None:
    def normalise(id: str, model: Model, source: AssistantMessage) -> str:
        raise AssertionError("must not be called for the same model")

    messages: list[Message] = [assistant(call("call|abc")), result("call|abc")]
    out = transform_messages(messages, TARGET, normalize_tool_call_id=normalise)
    assert out == messages


# --- second pass: failed turns and orphaned tool calls ----------------------------------------------------


@pytest.mark.parametrize("stop_reason", ["error", "aborted"])
def test_failed_assistant_messages_are_dropped(stop_reason: str) -> None:
    messages: list[Message] = [
        UserMessage(content="hi"),
        assistant(TextContent(text="partial"), stop_reason=stop_reason),
    ]
    assert shape(transform_messages(messages, TARGET)) == ["user"]


def test_an_unanswered_tool_call_gets_a_synthetic_error_result_before_the_next_user_message() -> None:
    messages: list[Message] = [assistant(call("c1", "read")), UserMessage(content="stop that")]
    out = transform_messages(messages, TARGET)
    assert shape(out) == ["assistant", "toolResult:c1", "user"]
    synthetic = out[1]
    assert isinstance(synthetic, ToolResultMessage)
    assert synthetic.tool_name == "read"
    assert synthetic.content == [TextContent(text=NO_RESULT_PROVIDED)]
    assert synthetic.is_error is True


def test_an_unanswered_tool_call_gets_a_synthetic_result_before_the_next_assistant_message() -> None:
    messages: list[Message] = [assistant(call("c1")), assistant(TextContent(text="moving on"))]
    assert shape(transform_messages(messages, TARGET)) == ["assistant", "toolResult:c1", "assistant"]


def test_unanswered_tool_calls_at_the_end_get_synthetic_results() -> None:
    messages: list[Message] = [UserMessage(content="go"), assistant(call("c1"), call("c2"))]
    assert shape(transform_messages(messages, TARGET)) == ["user", "assistant", "toolResult:c1", "toolResult:c2"]


def test_only_the_calls_without_a_result_get_synthetic_results() -> None:
    messages: list[Message] = [assistant(call("c1"), call("c2"), call("c3")), result("c2"), UserMessage(content="next")]
    out = transform_messages(messages, TARGET)
    assert shape(out) == ["assistant", "toolResult:c2", "toolResult:c1", "toolResult:c3", "user"]
    assert out[1] is messages[1]


def test_answered_tool_calls_get_no_synthetic_results() -> None:
    messages: list[Message] = [assistant(call("c1")), result("c1"), assistant(TextContent(text="done"))]
    assert transform_messages(messages, TARGET) == messages


def test_calls_before_a_dropped_failed_turn_are_answered_where_it_was() -> None:
    messages: list[Message] = [
        assistant(call("c1")),
        assistant(call("c2"), stop_reason="aborted"),
        UserMessage(content="again"),
    ]
    assert shape(transform_messages(messages, TARGET)) == ["assistant", "toolResult:c1", "user"]


def test_synthetic_results_use_the_normalised_tool_call_id() -> None:
    out = transform_messages([foreign(call("a|b"))], TARGET, normalize_tool_call_id=lambda id, _m, _s: "a_b")
    assert shape(out) == ["assistant", "toolResult:a_b"]


# --- contract ---------------------------------------------------------------------------------------------


def test_input_messages_are_never_mutated_and_unchanged_ones_pass_through() -> None:
    messages: list[Message] = [
        UserMessage(content=[TextContent(text="see"), IMAGE]),
        foreign(
            ThinkingContent(thinking="hmm", thinking_signature="s"),
            TextContent(text="t", text_signature="x"),
            call("a|1", thought_signature="g"),
        ),
        result("a|1", "bash", IMAGE),
        assistant(TextContent(text="same model, untouched")),
        assistant(call("c9"), stop_reason="error"),
    ]
    before = [message_to_dict(m) for m in messages]
    snapshot = list(messages)
    out = transform_messages(messages, TEXT_ONLY, normalize_tool_call_id=lambda id, _m, _s: id.replace("|", "_"))
    assert [message_to_dict(m) for m in messages] == before
    assert messages == snapshot
    assert out is not messages
    assert out[3] is messages[3]
    assert shape(out) == ["user", "assistant", "toolResult:a_1", "assistant"]
