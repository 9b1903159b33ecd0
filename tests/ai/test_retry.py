"""Retry: the transient-error classifier, the one policy and its decisions, and layer 2's ``retry_assistant_call``
(Pi's ``retry.test.ts``)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import anyio
import pydantic
import pytest

from pi_notebook.ai import AbortController, AssistantMessage
from pi_notebook.ai.messages import RequestFailure
from pi_notebook.ai.providers.faux import faux_assistant_message
from pi_notebook.ai.retry import (
    NON_RETRYABLE_ERROR_FRAGMENTS,
    NON_RETRYABLE_ERROR_PATTERN,
    RETRYABLE_ERROR_FRAGMENTS,
    RETRYABLE_ERROR_PATTERN,
    ProviderRetrySettings,
    RetryDecision,
    RetryPolicy,
    backoff_ms,
    is_retryable_assistant_error,
    is_retryable_failure,
    retry_assistant_call,
)
from pi_notebook.session import RetryPolicy as SessionRetryPolicy
from pi_notebook.session import Settings

# Pi's example strings (packages/ai/test/retry.test.ts).
OPENAI_EXPLICIT_RETRY = (
    "An error occurred while processing your request. You can retry your request, or contact us through our help "
    "center at help.openai.com if the error persists. Please include the request ID req_******** in your message."
)
BEDROCK_EXPLICIT_RETRY = (
    '{"message":"The system encountered an unexpected error during processing. Try your request again."}'
)
NVIDIA_NIM_RESOURCE_EXHAUSTED = "ResourceExhausted: Worker local total request limit reached (288/48)"
BUN_FETCH_SOCKET_CLOSED = (
    "The socket connection was closed unexpectedly. For more information, pass `verbose: true` in the second "
    "argument to fetch()"
)
OPENAI_RESPONSES_EARLY_EOF = "OpenAI Responses stream ended before a terminal response event"
WRAPPED_DNS_LOOKUP_ERROR = (
    "The pending stream has been canceled (caused by: getaddrinfo ENOTFOUND bedrock-runtime.us-east-1.amazonaws.com)"
)


def error(text: str | None) -> AssistantMessage:
    return faux_assistant_message("", stop_reason="error", error_message=text)


def retryable(text: str) -> bool:
    return is_retryable_assistant_error(error(text))


# --- classifier -------------------------------------------------------------------------------------------


def test_matches_explicit_provider_retry_guidance() -> None:
    assert retryable(OPENAI_EXPLICIT_RETRY)
    assert retryable(BEDROCK_EXPLICIT_RETRY)
    assert retryable(NVIDIA_NIM_RESOURCE_EXHAUSTED)


def test_matches_bun_fetch_socket_drop_wording() -> None:
    assert retryable(BUN_FETCH_SOCKET_CLOSED)


def test_matches_upstream_request_buffer_exhaustion_wording() -> None:
    assert retryable("Error: exceeded request buffer limit while retrying upstream")


@pytest.mark.parametrize(
    "text",
    [
        WRAPPED_DNS_LOOKUP_ERROR,
        "connect ENOTFOUND api.example.com",
        "EAI_AGAIN api.example.com",
        "getaddrinfo failed for api.example.com",
    ],
)
def test_matches_dns_transport_failure_wording(text: str) -> None:
    assert retryable(text)


def test_matches_openai_responses_streams_that_end_before_terminal_events() -> None:
    assert retryable(OPENAI_RESPONSES_EARLY_EOF)


def test_keeps_provider_limit_errors_non_retryable() -> None:
    assert not retryable("429 quota exceeded")


def test_classifies_assistant_error_messages() -> None:
    assert retryable("overloaded_error")
    assert retryable("524 status code (no body)")
    assert not is_retryable_assistant_error(faux_assistant_message("not an error"))


def test_keeps_aborts_non_retryable() -> None:
    assert not is_retryable_assistant_error(faux_assistant_message("", stop_reason="aborted"))
    aborted = faux_assistant_message("", stop_reason="aborted", error_message="Request was aborted")
    assert not is_retryable_assistant_error(aborted)


@pytest.mark.parametrize("text", [None, ""])
def test_error_without_an_error_message_is_not_retryable(text: str | None) -> None:
    assert not is_retryable_assistant_error(error(text))


def test_invalid_api_key_is_not_retryable() -> None:
    assert not retryable('401 {"error":{"code":"invalid_api_key","message":"Incorrect API key provided"}}')


def test_classifier_ignores_case() -> None:
    assert retryable("OVERLOADED")
    assert not retryable("429 QUOTA EXCEEDED")


def test_both_tables_are_single_case_insensitive_regexes_of_their_fragments() -> None:
    for pattern, fragments in (
        (RETRYABLE_ERROR_PATTERN, RETRYABLE_ERROR_FRAGMENTS),
        (NON_RETRYABLE_ERROR_PATTERN, NON_RETRYABLE_ERROR_FRAGMENTS),
    ):
        assert isinstance(pattern, re.Pattern)
        assert pattern.pattern == "|".join(fragments)
        assert pattern.flags & re.IGNORECASE


# One realistic error text per retryable fragment, in table order.
RETRYABLE_EXAMPLES: dict[str, str] = {
    "overloaded": '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
    "rate.?limit": "Rate limit reached for gpt-4o in organization org-x on tokens per min",
    "too many requests": "Too Many Requests",
    "429": "429 status code (no body)",
    "500": "500 Internal Server Error",
    "502": "502 Bad Gateway",
    "503": "503 upstream unavailable",
    "504": "504 Gateway Time-out",
    "524": "524 status code (no body)",
    "service.?unavailable": "ServiceUnavailable: the model is warming up",
    "server.?error": "server_error: The server had an error while processing your request",
    "internal.?error": "INTERNAL_ERROR: stream reset by peer",
    "provider.?returned.?error": "Provider returned error",
    "exceeded request buffer limit while retrying upstream": "exceeded request buffer limit while retrying upstream",
    "network.?error": "NetworkError when attempting to fetch resource.",
    "connection.?error": "Connection error.",
    "connection.?refused": "connect ECONNREFUSED 127.0.0.1:8080 (connection refused)",
    "connection.?lost": "Network connection lost.",
    "other side closed": "SocketError: other side closed",
    "fetch failed": "TypeError: fetch failed",
    "getaddrinfo": "getaddrinfo EAI_FAIL api.anthropic.com",
    "ENOTFOUND": "connect ENOTFOUND api.example.com",
    "EAI_AGAIN": "EAI_AGAIN api.example.com",
    "upstream.?connect": "upstream connect error or disconnect/reset before headers",
    "reset before headers": "reset before headers. reset reason: connection termination",
    "socket hang up": "socket hang up",
    "socket connection was closed": BUN_FETCH_SOCKET_CLOSED,
    "timed? out": "Request timed out.",
    "timeout": "ETIMEDOUT: read timeout",
    "terminated": "terminated",
    "websocket.?closed": "WebSocket closed 1006",
    "websocket.?error": "websocket error: unexpected EOF",
    "ended without": "stream ended without producing a Message with role=assistant",
    "stream ended before message_stop": "Anthropic stream ended before message_stop",
    "stream ended before a terminal response event": OPENAI_RESPONSES_EARLY_EOF,
    "http2 request did not get a response": "http2 request did not get a response",
    "retry delay": "Server requested 18432s retry delay (max: 60s). Quota will reset after 5h7m12s.",
    "you can retry your request": OPENAI_EXPLICIT_RETRY,
    "try your request again": BEDROCK_EXPLICIT_RETRY,
    "please retry your request": "The server is busy; please retry your request later.",
    "ResourceExhausted": NVIDIA_NIM_RESOURCE_EXHAUSTED,
}

# One text per non-retryable fragment; each also contains a retryable word, to show the non-retryable table wins.
NON_RETRYABLE_EXAMPLES: dict[str, str] = {
    "GoUsageLimitError": '429 {"type":"GoUsageLimitError","message":"Rolling usage limit reached"}',
    "FreeUsageLimitError": '429 {"type":"FreeUsageLimitError","message":"Free usage limit reached"}',
    "Monthly usage limit reached": "429 Monthly usage limit reached. Enable available balance to keep going.",
    "available balance": "Rate limit: use your available balance to continue",
    "insufficient_quota": "429 insufficient_quota: You exceeded your current quota",
    "out of budget": "429 Key is out of budget",
    "quota exceeded": "429 quota exceeded",
    "billing": "503 Check your plan and billing details",
    "instead of an event stream": "307 redirect to http://127.0.0.1:5003/v1/ instead of an event stream: check it",
}


def test_every_fragment_has_an_example() -> None:
    assert tuple(RETRYABLE_EXAMPLES) == RETRYABLE_ERROR_FRAGMENTS
    assert tuple(NON_RETRYABLE_EXAMPLES) == NON_RETRYABLE_ERROR_FRAGMENTS


@pytest.mark.parametrize(("fragment", "text"), RETRYABLE_EXAMPLES.items(), ids=list(RETRYABLE_EXAMPLES))
def test_each_retryable_fragment_makes_its_example_retryable(fragment: str, text: str) -> None:
    assert re.search(fragment, text, re.IGNORECASE)
    assert retryable(text)


@pytest.mark.parametrize(("fragment", "text"), NON_RETRYABLE_EXAMPLES.items(), ids=list(NON_RETRYABLE_EXAMPLES))
def test_each_non_retryable_fragment_wins_over_the_retryable_table(fragment: str, text: str) -> None:
    assert re.search(fragment, text, re.IGNORECASE)
    assert RETRYABLE_ERROR_PATTERN.search(text)
    assert not retryable(text)


# --- RetryPolicy ------------------------------------------------------------------------------------------


def test_retry_policy_defaults_are_pis() -> None:
    policy = RetryPolicy()
    assert (policy.enabled, policy.max_retries, policy.base_delay_ms) == (True, 3, 2000)


def test_retry_policy_delay_doubles_from_the_base_without_cap() -> None:
    policy = RetryPolicy()
    assert [policy.delay_ms(n) for n in range(1, 6)] == [2000, 4000, 8000, 16000, 32000]


@pytest.mark.parametrize("field", ["max_retries", "base_delay_ms"])
def test_retry_policy_rejects_negative_values(field: str) -> None:
    with pytest.raises(pydantic.ValidationError):
        RetryPolicy.model_validate({field: -1})


def test_retry_policy_loads_pi_settings_keys() -> None:
    policy = RetryPolicy.model_validate({"enabled": False, "maxRetries": 5, "baseDelayMs": 100})
    assert (policy.enabled, policy.max_retries, policy.base_delay_ms) == (False, 5, 100)


def test_retry_policy_is_frozen() -> None:
    policy = RetryPolicy()
    with pytest.raises(pydantic.ValidationError):
        policy.max_retries = 10  # type: ignore[misc]


def test_the_policy_is_the_sessions_retry_settings_and_reads_environment_strings() -> None:
    assert SessionRetryPolicy is RetryPolicy  # one name, one class: the session re-exports ai's policy
    settings = Settings.load(environ={"PI_NOTEBOOK_RETRY__MAX_RETRIES": "5", "PI_NOTEBOOK_RETRY__BASE_DELAY_MS": "7"})
    assert isinstance(settings.retry, RetryPolicy)
    assert (settings.retry.max_retries, settings.retry.base_delay_ms) == (5, 7)


# --- one classifier: the server's hints, then quota texts, then the status, then the text ---------------------


def failed(text: str, **failure: object) -> AssistantMessage:
    message = faux_assistant_message([], "error", text)
    if failure:
        message.request_failure = RequestFailure(**failure)  # type: ignore[arg-type]
    return message


@pytest.mark.parametrize(
    ("text", "failure", "retryable"),
    [
        ("503 service unavailable", {"status": 503, "should_retry": False}, False),  # the server's word first
        ("400 bad request", {"status": 400, "should_retry": True}, True),
        ("429 insufficient_quota: check your billing", {"status": 429}, False),  # quota text beats the status
        ("400 max_tokens: 5000 > 4096", {"status": 400}, False),  # the status beats a digit in the text
        ("409 conflict", {"status": 409}, True),
        ("520 unknown edge error", {"status": 520}, True),
        ("404 model not found", {"status": 404}, False),
        ("Network connection lost: peer closed", None, True),  # no response: the text decides, as Pi's
        ("The model refused to complete the request", None, False),
    ],
)
def test_the_classifier_combines_the_response_and_the_text(
    text: str, failure: dict[str, object] | None, retryable: bool
) -> None:
    assert is_retryable_failure(text, RequestFailure(**failure) if failure else None) is retryable  # type: ignore[arg-type]
    assert is_retryable_assistant_error(failed(text, **(failure or {}))) is retryable


def test_backoff_is_one_formula_with_optional_cap_and_jitter() -> None:
    assert [backoff_ms(2000, n) for n in (1, 2, 3)] == [2000, 4000, 8000]
    assert [backoff_ms(500, n, max_ms=8000) for n in (1, 5, 6)] == [500, 8000, 8000]
    jittered = [backoff_ms(1000, 1, jitter=0.25) for _ in range(200)]
    assert all(750 <= d <= 1000 for d in jittered)
    assert len(set(jittered)) > 1


def test_a_decision_waits_what_the_server_asked_up_to_the_cap_else_the_backoff() -> None:
    policy = RetryPolicy(base_delay_ms=100, provider=ProviderRetrySettings(max_retry_delay_ms=5000))
    assert policy.decide(failed("503 overloaded", status=503), 2) == RetryDecision(True, 200)
    assert policy.decide(failed("429 slow down", status=429, retry_after_ms=1234.5), 1) == RetryDecision(True, 1235)
    assert policy.decide(failed("429 slow down", status=429, retry_after_ms=86_400_000), 1) == RetryDecision(True, 5000)
    uncapped = RetryPolicy(provider=ProviderRetrySettings(max_retry_delay_ms=0))
    assert uncapped.decide(failed("429", status=429, retry_after_ms=86_400_000), 1).delay_ms == 86_400_000


def test_a_decision_respects_the_budget_and_the_switch() -> None:
    message = failed("503 overloaded", status=503)
    assert RetryPolicy(max_retries=2).decide(message, 2).retry
    assert not RetryPolicy(max_retries=2).decide(message, 3).retry
    assert not RetryPolicy(enabled=False).decide(message, 1).retry
    assert not RetryPolicy().decide(failed("401 invalid_api_key", status=401), 1).retry
    assert not RetryPolicy().decide(faux_assistant_message("fine"), 1).retry


# --- retry_assistant_call ---------------------------------------------------------------------------------

ENABLED = RetryPolicy(enabled=True, max_retries=3, base_delay_ms=1)
DISABLED = RetryPolicy(enabled=False, max_retries=3, base_delay_ms=1)


class Script:
    """A produce function replaying scripted messages, and a record of every callback."""

    def __init__(self, *responses: AssistantMessage) -> None:
        self.responses = list(responses)
        self.calls = 0
        self.events: list[str] = []
        self.scheduled: list[tuple[int, int, int, str]] = []
        self.finished: list[tuple[object, ...]] = []

    def produce(self) -> AssistantMessage:
        self.events.append(f"produce{self.calls}")
        response = self.responses[min(self.calls, len(self.responses) - 1)]
        self.calls += 1
        return response

    def on_retry_scheduled(self, attempt: int, max_attempts: int, delay_ms: int, error_message: str) -> None:
        self.events.append(f"retry:{attempt}")
        self.scheduled.append((attempt, max_attempts, delay_ms, error_message))

    def on_retry_attempt_start(self) -> None:
        self.events.append("attempt-start")

    def on_retry_finished(self, success: bool, attempt: int, *final_error: str | None) -> None:
        self.events.append(f"finished:{success}")
        self.finished.append((success, attempt, *final_error))

    async def run(self, policy: RetryPolicy | None, controller: AbortController | None = None) -> AssistantMessage:
        return await retry_assistant_call(
            self.produce,
            policy,
            controller.signal if controller else None,
            on_retry_scheduled=self.on_retry_scheduled,
            on_retry_attempt_start=self.on_retry_attempt_start,
            on_retry_finished=self.on_retry_finished,
        )


TERMINATED = error("terminated")


async def test_returns_a_successful_response_immediately_without_retrying() -> None:
    ok = faux_assistant_message("ok")
    script = Script(ok)
    assert await script.run(ENABLED) is ok
    assert script.calls == 1
    assert script.events == ["produce0"]


async def test_does_not_retry_an_aborted_message() -> None:
    script = Script(faux_assistant_message("", stop_reason="aborted"))
    result = await script.run(ENABLED)
    assert result.stop_reason == "aborted"
    assert script.calls == 1
    assert script.scheduled == []


async def test_does_not_retry_a_non_retryable_error() -> None:
    script = Script(error("insufficient_quota"))
    result = await script.run(ENABLED)
    assert result.stop_reason == "error"
    assert script.calls == 1
    assert script.scheduled == []
    assert script.finished == []


async def test_retries_a_transient_error_up_to_max_retries_then_returns_the_final_error() -> None:
    script = Script(TERMINATED)
    result = await script.run(ENABLED)
    assert result is TERMINATED
    assert script.calls == 4  # 1 initial + 3 retries
    assert len(script.scheduled) == 3
    assert script.finished == [(False, 3, "terminated")]


async def test_stops_retrying_once_a_call_succeeds() -> None:
    script = Script(TERMINATED, TERMINATED, faux_assistant_message("recovered"))
    result = await script.run(ENABLED)
    assert result.content == [faux_assistant_message("recovered").content[0]]
    assert script.calls == 3
    assert script.finished == [(True, 2)]


async def test_reports_an_aborted_retried_call_as_unsuccessful() -> None:
    script = Script(TERMINATED, faux_assistant_message("", stop_reason="aborted"))
    result = await script.run(ENABLED)
    assert result.stop_reason == "aborted"
    assert script.calls == 2
    assert script.finished == [(False, 1)]


async def test_does_not_retry_when_policy_is_disabled() -> None:
    script = Script(TERMINATED)
    result = await script.run(DISABLED)
    assert result is TERMINATED
    assert script.calls == 1
    assert script.scheduled == []
    assert script.finished == []


async def test_does_not_retry_without_a_policy() -> None:
    script = Script(TERMINATED)
    assert await script.run(None) is TERMINATED
    assert script.calls == 1
    assert script.events == ["produce0"]


async def test_a_non_retryable_error_after_a_retry_ends_the_loop_with_its_message() -> None:
    script = Script(TERMINATED, error("429 quota exceeded"))
    result = await script.run(ENABLED)
    assert result.error_message == "429 quota exceeded"
    assert script.calls == 2
    assert script.finished == [(False, 1, "429 quota exceeded")]


async def test_emits_on_retry_attempt_start_after_backoff_before_each_retried_call() -> None:
    script = Script(TERMINATED, TERMINATED, faux_assistant_message("recovered"))
    await script.run(ENABLED)
    assert script.events == [
        "produce0",
        "retry:1",
        "attempt-start",
        "produce1",
        "retry:2",
        "attempt-start",
        "produce2",
        "finished:True",
    ]


async def test_scheduled_delays_double_from_the_base_delay() -> None:
    script = Script(TERMINATED)
    await script.run(RetryPolicy(max_retries=3, base_delay_ms=2))
    assert script.scheduled == [(1, 3, 2, "terminated"), (2, 3, 4, "terminated"), (3, 3, 8, "terminated")]


async def test_aborts_backoff_sleep_via_signal_returns_an_aborted_copy_and_reports_failure() -> None:
    controller = AbortController()
    script = Script(TERMINATED)
    result: list[AssistantMessage] = []

    async def run() -> None:
        result.append(await script.run(RetryPolicy(max_retries=5, base_delay_ms=60_000), controller))

    started = time.monotonic()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await anyio.wait_all_tasks_blocked()  # first produce done, 60 s backoff pending
            assert script.scheduled == [(1, 5, 60_000, "terminated")]
            controller.abort()
    assert time.monotonic() - started < 1
    [aborted] = result
    assert aborted.stop_reason == "aborted"
    assert aborted.error_message is None
    assert aborted is not TERMINATED
    assert aborted.content == TERMINATED.content
    assert (TERMINATED.stop_reason, TERMINATED.error_message) == ("error", "terminated")
    assert script.calls == 1
    assert script.finished == [(False, 1, "terminated")]
    assert "attempt-start" not in script.events


async def test_an_already_aborted_signal_skips_the_backoff() -> None:
    controller = AbortController()
    controller.abort()
    script = Script(TERMINATED)
    with anyio.fail_after(1):
        result = await script.run(RetryPolicy(max_retries=3, base_delay_ms=60_000), controller)
    assert result.stop_reason == "aborted"
    assert script.calls == 1
    assert script.events == ["produce0", "retry:1", "finished:False"]


async def test_async_produce_and_async_callbacks_are_awaited_in_order() -> None:
    events: list[str] = []
    responses = iter([TERMINATED, faux_assistant_message("ok")])

    async def produce() -> AssistantMessage:
        await anyio.lowlevel.checkpoint()
        events.append("produce")
        return next(responses)

    def recorder(name: str) -> Callable[..., object]:
        async def callback(*args: object) -> None:
            await anyio.lowlevel.checkpoint()
            events.append(f"{name}{args}")

        return callback

    result = await retry_assistant_call(
        produce,
        ENABLED,
        on_retry_scheduled=recorder("scheduled"),
        on_retry_attempt_start=recorder("start"),
        on_retry_finished=recorder("finished"),
    )
    assert result.stop_reason == "stop"
    assert events == ["produce", "scheduled(1, 3, 1, 'terminated')", "start()", "produce", "finished(True, 1)"]


async def test_an_exception_from_produce_propagates() -> None:
    def produce() -> AssistantMessage:
        raise RuntimeError("bug in produce")

    with pytest.raises(RuntimeError, match="bug in produce"):
        await retry_assistant_call(produce, ENABLED)


async def test_layer_two_waits_what_the_server_asked_instead_of_the_backoff() -> None:
    script = Script(failed("429 slow down", status=429, retry_after_ms=30.0), faux_assistant_message("ok"))
    result = await script.run(RetryPolicy(base_delay_ms=60_000))
    assert result.stop_reason == "stop"
    assert script.scheduled == [(1, 3, 30, "429 slow down")]
