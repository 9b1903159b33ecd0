"""Context-overflow detection and recoverable length stops (Pi's ``overflow.test.ts``)."""

from __future__ import annotations

import re

import pytest

from pi_notebook.ai import AssistantMessage, Usage
from pi_notebook.ai.overflow import (
    NON_OVERFLOW_PATTERNS,
    OVERFLOW_PATTERNS,
    is_context_overflow,
    is_recoverable_length,
)
from pi_notebook.ai.retry import is_retryable_assistant_error


def error(text: str, provider: str = "ollama") -> AssistantMessage:
    return AssistantMessage(
        api="openai-completions", provider=provider, model="qwen3.5:35b", stop_reason="error", error_message=text
    )


def length_stop(input: int, cache_read: int, output: int, cache_write: int = 0) -> AssistantMessage:
    usage = Usage(
        input=input,
        output=output,
        cache_read=cache_read,
        cache_write=cache_write,
        total_tokens=input + cache_read + cache_write + output,
    )
    return AssistantMessage(
        api="openai-completions", provider="test-provider", model="test-model", usage=usage, stop_reason="length"
    )


def stop_with_input(input: int, cache_read: int = 0) -> AssistantMessage:
    return AssistantMessage(usage=Usage(input=input, cache_read=cache_read, output=10), stop_reason="stop")


# --- Pi's examples ----------------------------------------------------------------------------------------


def test_detects_explicit_ollama_prompt_too_long_errors() -> None:
    assert is_context_overflow(error("400 `prompt too long; exceeded max context length by 100918 tokens`"), 32768)


def test_detects_together_ai_context_length_errors() -> None:
    text = "400 The input (516368 tokens) is longer than the model's context length (262144 tokens)."
    assert is_context_overflow(error(text), 262144)


def test_detects_litellm_wrapped_openai_maximum_context_length_errors() -> None:
    text = (
        "Error: 503 litellm.ServiceUnavailableError: litellm.MidStreamFallbackError: litellm.APIConnectionError: "
        "APIConnectionError: OpenAIException - Requested token count exceeds the model's maximum context length of "
        "131072 tokens."
    )
    assert is_context_overflow(error(text), 131072)


def test_detects_openai_compatible_parenthesized_maximum_context_length_errors() -> None:
    text = "Error: 400 Input length (265330) exceeds model's maximum context length (262144)."
    assert is_context_overflow(error(text), 262144)


def test_detects_openrouter_poolside_maximum_allowed_input_length_errors() -> None:
    text = "Provider returned error: Input length 131393 exceeds the maximum allowed input length of 131040 tokens."
    assert is_context_overflow(error(text), 131072)


@pytest.mark.parametrize(
    "text",
    [
        "400 Prompt has 256468 tokens, but the configured context size is 256000 tokens",
        "Prompt has 5,958,968 tokens, but the configured context size is 256,000 tokens",
    ],
    ids=["plain", "thousands-separators"],
)
def test_detects_ds4_configured_context_size_errors(text: str) -> None:
    assert is_context_overflow(error(text), 256000)


def test_does_not_treat_generic_non_overflow_ollama_errors_as_overflow() -> None:
    assert not is_context_overflow(error("500 `model runner crashed unexpectedly`"), 32768)


def test_does_not_treat_bedrock_throttling_too_many_tokens_as_overflow() -> None:
    text = "Throttling error: Too many tokens, please wait before trying again."
    assert any(pattern.search(text) for pattern in OVERFLOW_PATTERNS)  # excluded, not unmatched
    assert not is_context_overflow(error(text), 200000)


def test_does_not_treat_bedrock_service_unavailable_as_overflow() -> None:
    assert not is_context_overflow(error("Service unavailable: The service is temporarily unavailable."), 200000)


def test_does_not_treat_generic_rate_limit_errors_as_overflow() -> None:
    assert not is_context_overflow(error("Rate limit exceeded, please retry after 30 seconds."), 200000)


def test_does_not_treat_http_429_style_errors_as_overflow() -> None:
    assert not is_context_overflow(error("Too many requests. Please slow down."), 200000)


def test_detects_xiaomi_style_overflow_length_stop_with_zero_output_and_filled_context() -> None:
    assert is_context_overflow(length_stop(input=58, cache_read=1048512, output=0), 1048576)


def test_treats_a_length_stop_below_the_desired_output_limit_as_recoverable() -> None:
    message = length_stop(input=3, cache_read=253584, cache_write=25554, output=16)
    assert is_recoverable_length(message, 128000)


def test_does_not_recover_a_length_stop_that_reached_the_desired_output_limit() -> None:
    assert not is_recoverable_length(length_stop(input=4062, cache_read=0, output=1024), 1024)


def test_treats_zero_output_length_stops_as_recoverable_without_context_metadata() -> None:
    assert is_recoverable_length(length_stop(input=100, cache_read=0, output=0), 128000)


def test_does_not_treat_normal_length_stops_with_output_as_context_overflow() -> None:
    assert not is_context_overflow(length_stop(input=1000, cache_read=0, output=4096), 200000)


def test_does_not_treat_zero_output_length_stops_far_below_context_as_context_overflow() -> None:
    assert not is_context_overflow(length_stop(input=100, cache_read=0, output=0), 200000)


# --- the three cases and their edges ----------------------------------------------------------------------


def test_silent_overflow_is_a_stop_whose_input_plus_cache_read_exceeds_the_window() -> None:
    assert is_context_overflow(stop_with_input(input=150_000, cache_read=60_000), 200_000)
    assert not is_context_overflow(stop_with_input(input=140_000, cache_read=60_000), 200_000)


@pytest.mark.parametrize("window", [None, 0])
def test_usage_cases_need_a_context_window(window: int | None) -> None:
    assert not is_context_overflow(stop_with_input(input=10**9), window)
    assert not is_context_overflow(length_stop(input=10**9, cache_read=0, output=0), window)


def test_length_stop_overflow_starts_at_99_percent_of_the_window() -> None:
    assert is_context_overflow(length_stop(input=99_000, cache_read=0, output=0), 100_000)
    assert not is_context_overflow(length_stop(input=98_999, cache_read=0, output=0), 100_000)


def test_error_text_overflow_needs_no_context_window() -> None:
    assert is_context_overflow(error("prompt is too long: 213462 tokens > 200000 maximum"))


def test_overflow_text_on_a_non_error_message_is_not_overflow() -> None:
    message = AssistantMessage(
        stop_reason="aborted", error_message="prompt is too long: 213462 tokens > 200000 maximum"
    )
    assert not is_context_overflow(message, 200_000)


def test_an_error_with_large_usage_is_not_silent_overflow() -> None:
    message = AssistantMessage(stop_reason="error", error_message="boom", usage=Usage(input=10**9))
    assert not is_context_overflow(message, 200_000)


def test_overflow_errors_that_also_look_transient_are_detected() -> None:
    # Callers check overflow before retryability, because this one matches both.
    message = error("503 Requested token count exceeds the model's maximum context length of 131072 tokens.")
    assert is_retryable_assistant_error(message)
    assert is_context_overflow(message)


@pytest.mark.parametrize("desired", [0, -1])
def test_length_stop_is_not_recoverable_without_a_positive_desired_output(desired: int) -> None:
    assert not is_recoverable_length(length_stop(input=100, cache_read=0, output=0), desired)


@pytest.mark.parametrize("stop_reason", ["stop", "error", "toolUse", "aborted"])
def test_only_length_stops_are_recoverable(stop_reason: str) -> None:
    message = AssistantMessage.model_validate({"stopReason": stop_reason, "usage": {"output": 1}})
    assert not is_recoverable_length(message, 128000)


# --- every pattern ----------------------------------------------------------------------------------------

# One realistic error text per overflow pattern, in table order (provider in the id).
OVERFLOW_EXAMPLES: list[tuple[str, str]] = [
    ("anthropic", "prompt is too long: 213462 tokens > 200000 maximum"),
    (
        "anthropic-413",
        '413 {"error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}',
    ),
    ("bedrock", "ValidationException: Input is too long for requested model."),
    ("openai", "Your input exceeds the context window of this model. Please adjust your input and try again."),
    ("litellm", "Requested token count exceeds the model's maximum context length of 131072 tokens"),
    (
        "gemini",
        "The input token count (1196265) exceeds the maximum number of tokens allowed (1048575).",
    ),
    ("xai", "This model's maximum prompt length is 131072 but the request contains 537812 tokens."),
    ("groq", "Please reduce the length of the messages or completion."),
    (
        "openrouter",
        "This endpoint's maximum context length is 200000 tokens. However, you requested about 245000 tokens.",
    ),
    ("poolside", "Input length 131393 exceeds the maximum allowed input length of 131040 tokens."),
    ("together", "The input (516368 tokens) is longer than the model's context length (262144 tokens)."),
    ("copilot", "prompt token count of 135000 exceeds the limit of 128000"),
    ("llama.cpp", "the request exceeds the available context size, try increasing it"),
    ("lm-studio", "tokens to keep from the initial prompt is greater than the context length"),
    ("minimax", "invalid params, context window exceeds limit (2013)"),
    ("kimi", "Your request exceeded model token limit: 262144 (requested: 290000)"),
    (
        "mistral",
        "Prompt contains 140000 tokens and 0 draft tokens, too large for model with 131072 maximum context length",
    ),
    ("ds4", "Prompt has 256468 tokens, but the configured context size is 256000 tokens"),
    ("z.ai", "Provider finish_reason: model_context_window_exceeded"),
    ("ollama", "prompt too long; exceeded max context length by 100918 tokens"),
    ("ollama-runner", "the prompt is longer than the context length currently available to the model; shorten it"),
    ("vllm-renderer", "However, the model's context length is only 2048 tokens, resulting in a maximum input"),
    ("vllm-engine", "The decoder prompt (length 2519) is longer than the maximum model length of 2048."),
    ("llama-cpp-python", "Requested tokens (2519) exceed context window of 2048"),
    ("llama.cpp-shift", "input (2519 tokens) is larger than the max context size (2048 tokens). skipping"),
    ("litellm-proxy", "litellm.ContextWindowExceededError: litellm.BadRequestError: ContextWindowExceededError"),
    ("dashscope", "<400> InternalError.Algo.InvalidParameter: Range of input length should be [1, 98304]"),
    ("generic-context-length", "context_length_exceeded"),
    ("generic-too-many-tokens", "Request has too many tokens for this model"),
    ("generic-token-limit", "token limit exceeded for this deployment"),
    ("cerebras", "400 status code (no body)"),
]

NON_OVERFLOW_EXAMPLES: list[tuple[str, str]] = [
    ("bedrock-prefix", "Throttling error: Too many tokens, please wait before trying again."),
    ("rate-limit", "Rate limit hit: too many tokens per minute"),
    ("too-many-requests", "429 Too Many Requests: token limit exceeded for this minute"),
]


def test_every_pattern_has_an_example() -> None:
    assert len(OVERFLOW_EXAMPLES) == len(OVERFLOW_PATTERNS) == 31
    assert len(NON_OVERFLOW_EXAMPLES) == len(NON_OVERFLOW_PATTERNS) == 3


def test_patterns_are_compiled_case_insensitive() -> None:
    for pattern in (*OVERFLOW_PATTERNS, *NON_OVERFLOW_PATTERNS):
        assert isinstance(pattern, re.Pattern)
        assert pattern.flags & re.IGNORECASE


@pytest.mark.parametrize(
    ("pattern", "text"),
    [(pattern, text) for pattern, (_, text) in zip(OVERFLOW_PATTERNS, OVERFLOW_EXAMPLES, strict=True)],
    ids=[provider for provider, _ in OVERFLOW_EXAMPLES],
)
def test_each_overflow_pattern_detects_its_example(pattern: re.Pattern[str], text: str) -> None:
    assert pattern.search(text)
    assert pattern.search(text.upper())
    assert is_context_overflow(error(text))


@pytest.mark.parametrize(
    ("pattern", "text"),
    [(pattern, text) for pattern, (_, text) in zip(NON_OVERFLOW_PATTERNS, NON_OVERFLOW_EXAMPLES, strict=True)],
    ids=[name for name, _ in NON_OVERFLOW_EXAMPLES],
)
def test_each_non_overflow_pattern_rejects_an_overflow_looking_example(pattern: re.Pattern[str], text: str) -> None:
    assert pattern.search(text)
    assert any(overflow.search(text) for overflow in OVERFLOW_PATTERNS)
    assert not is_context_overflow(error(text))


def test_bodyless_status_pattern_is_anchored_to_the_start() -> None:
    assert is_context_overflow(error("413 (no body)"))
    assert not is_context_overflow(error("Error: 400 status code (no body)"))
    assert not is_context_overflow(error("500 status code (no body)"))
