"""Retry of one assistant-producing call on transient provider errors (Pi's ``pi-ai/utils/retry.ts``).

This is the middle of Pi's three retry layers. Layer 1 retries the initial HTTP request inside a provider;
layer 3 (the session) retries whole agent turns. This layer wraps a single self-contained call, such as a
compaction or branch-summary request, and retries it when the returned message *looks* transient.

Two pieces:

- :func:`is_retryable_assistant_error` classifies a failed message. It is a decision only: callers handle
  context overflow first (see :mod:`pi_notebook.ai.overflow`) and apply their own budget.
- :func:`retry_assistant_call` runs ``produce`` under a :class:`RetryPolicy`: exponential backoff without
  jitter or cap, abortable through an :class:`~pi_notebook.ai.AbortSignal`, reported through callbacks.

Failures stay data: the result is always an :class:`AssistantMessage` (``stop`` / ``error`` / ``aborted`` …);
nothing here raises for a provider failure.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeAlias

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from ._abort import AbortSignal, abortable_sleep
from .messages import AssistantMessage

__all__ = [
    "NON_RETRYABLE_ERROR_FRAGMENTS",
    "NON_RETRYABLE_ERROR_PATTERN",
    "RETRYABLE_ERROR_FRAGMENTS",
    "RETRYABLE_ERROR_PATTERN",
    "OnRetryAttemptStart",
    "OnRetryFinished",
    "OnRetryScheduled",
    "Produce",
    "RetryPolicy",
    "is_retryable_assistant_error",
    "retry_assistant_call",
]

Produce: TypeAlias = Callable[[], AssistantMessage | Awaitable[AssistantMessage]]
"""Makes one attempt. Sync or async; returns a message (failures as data) rather than raising for them."""
OnRetryScheduled: TypeAlias = Callable[[int, int, int, str], object]
"""``(attempt, max_attempts, delay_ms, error_message)``, called before each backoff sleep."""
OnRetryAttemptStart: TypeAlias = Callable[[], object]
"""Called after each backoff sleep, just before the retried ``produce()``."""


class OnRetryFinished(Protocol):
    """``(success, attempt, final_error=None)``, called once when a loop that scheduled a retry ends.

    As in Pi, ``final_error`` is passed only when the loop ends on an error (it may still be ``None``).
    """

    def __call__(self, success: bool, attempt: int, final_error: str | None = ..., /) -> object: ...


NON_RETRYABLE_ERROR_FRAGMENTS: tuple[str, ...] = (
    # Subscription/account limits (OpenCode Go / free tier): not transient throttles.
    "GoUsageLimitError",
    "FreeUsageLimitError",
    "Monthly usage limit reached",
    "available balance",
    # Quota, budget and billing exhaustion (``insufficient_quota`` is OpenAI's code).
    "insufficient_quota",
    "out of budget",
    "quota exceeded",
    "billing",
    # Not Pi's: a success that was not the event stream asked for (a redirect, an HTML page, an empty stream).
    # The same request gets the same answer; a port such as :5000 in a redirect's URL must not read as a 500.
    "instead of an event stream",
)
"""Regex fragments of errors that must never be retried; checked before the retryable table."""

RETRYABLE_ERROR_FRAGMENTS: tuple[str, ...] = (
    # Provider load, HTTP status and server-side transient failures (numbers are unanchored substrings).
    "overloaded",
    "rate.?limit",
    "too many requests",
    "429",
    "500",
    "502",
    "503",
    "504",
    "524",
    "service.?unavailable",
    "server.?error",
    "internal.?error",
    "provider.?returned.?error",
    # Pi >= 0.84.2: proxy gave up replaying a large request body.
    "exceeded request buffer limit while retrying upstream",
    # Network, proxy and fetch transport failures.
    "network.?error",
    "connection.?error",
    "connection.?refused",
    "connection.?lost",
    "other side closed",
    "fetch failed",
    "getaddrinfo",
    "ENOTFOUND",
    "EAI_AGAIN",
    "upstream.?connect",
    "reset before headers",
    "socket hang up",
    "socket connection was closed",
    "timed? out",
    "timeout",
    "terminated",
    "websocket.?closed",
    "websocket.?error",
    # Streams that ended before their terminal event.
    "ended without",
    "stream ended before message_stop",
    "stream ended before a terminal response event",
    "http2 request did not get a response",
    # A provider-requested delay above the layer-1 cap surfaces as an error for this layer to retry.
    "retry delay",
    # Explicit retry guidance from OpenAI Responses / Bedrock, and gRPC (NVIDIA NIM) exhaustion.
    "you can retry your request",
    "try your request again",
    "please retry your request",
    "ResourceExhausted",
)
"""Regex fragments of errors worth retrying."""


def _compile_table(fragments: tuple[str, ...]) -> re.Pattern[str]:
    # re.ASCII keeps ``\d`` and case folding as narrow as JavaScript's non-unicode ``/i``.
    return re.compile("|".join(fragments), re.IGNORECASE | re.ASCII)


NON_RETRYABLE_ERROR_PATTERN = _compile_table(NON_RETRYABLE_ERROR_FRAGMENTS)
RETRYABLE_ERROR_PATTERN = _compile_table(RETRYABLE_ERROR_FRAGMENTS)


def is_retryable_assistant_error(message: AssistantMessage) -> bool:
    """Whether a failed message looks like a transient provider or transport error.

    Only ``stop_reason == "error"`` with a non-empty ``error_message`` can be retryable; successes and
    aborts never are. A match in the non-retryable table (quota, billing) wins over the retryable one.
    Context overflow is not recognised here: check it first.
    """
    text = message.error_message
    if message.stop_reason != "error" or not text:
        return False
    if NON_RETRYABLE_ERROR_PATTERN.search(text):
        return False
    return RETRYABLE_ERROR_PATTERN.search(text) is not None


class RetryPolicy(BaseModel):
    """Retry budget and backoff: delay before retry ``n`` (1-based) is ``base_delay_ms * 2**(n - 1)``.

    No jitter and no cap (Pi's defaults give 2 s, 4 s, 8 s). Loads Pi's settings keys too
    (``maxRetries``, ``baseDelayMs``). Negative values raise :class:`pydantic.ValidationError`.
    """

    model_config = ConfigDict(frozen=True, strict=True, extra="forbid", alias_generator=to_camel, populate_by_name=True)
    enabled: bool = True
    max_retries: int = Field(default=3, ge=0)
    base_delay_ms: int = Field(default=2000, ge=0)

    def delay_ms(self, attempt: int) -> int:
        """Backoff before retry ``attempt`` (1-based)."""
        return int(self.base_delay_ms * 2 ** (attempt - 1))


async def _produce(produce: Produce) -> AssistantMessage:
    result = produce()
    if not isinstance(result, AssistantMessage):
        result = await result
    return result


async def _notify(callback: Callable[..., object] | None, *args: object) -> None:
    if callback is not None:
        result = callback(*args)
        if inspect.isawaitable(result):
            await result


_DISABLED = RetryPolicy(enabled=False, max_retries=0)


async def retry_assistant_call(
    produce: Produce,
    policy: RetryPolicy | None,
    signal: AbortSignal | None = None,
    *,
    on_retry_scheduled: OnRetryScheduled | None = None,
    on_retry_attempt_start: OnRetryAttemptStart | None = None,
    on_retry_finished: OnRetryFinished | None = None,
) -> AssistantMessage:
    """Call ``produce()`` and retry it while it returns a retryable error, within ``policy``.

    Outcomes, checked on each response in this order:

    - ``aborted``: returned as is, never retried.
    - anything but ``error``: success, returned as is.
    - ``error`` that is not retryable (:func:`is_retryable_assistant_error`) or with the budget spent
      (``policy.max_retries``; 0 when ``policy`` is ``None`` or disabled): returned as is.
    - otherwise ``on_retry_scheduled(attempt, max_attempts, delay_ms, error_message or "Unknown error")``,
      an abortable sleep of ``delay_ms``, ``on_retry_attempt_start()``, and the next ``produce()``.

    ``on_retry_finished(success, attempt, final_error)`` is called exactly once if at least one retry was
    scheduled: ``(True, n)`` on success, ``(False, n)`` on an aborted response, ``(False, n, error_message)``
    on a final error. If ``signal`` aborts during a backoff sleep, the call returns at once with a copy of
    the last error response whose ``stop_reason`` is ``"aborted"`` and ``error_message`` is ``None``, after
    ``on_retry_finished(False, attempt, error_message or "Unknown error")``. A signal aborted before the
    first call does not prevent it: ``produce`` is expected to observe the signal itself.

    Callbacks may be sync or async and are awaited in order; they must not raise (an exception from a
    callback or from ``produce`` propagates unchanged). External task cancellation also propagates, without
    ``on_retry_finished``.
    """
    active = policy if policy is not None and policy.enabled else _DISABLED
    attempt = 0
    while True:
        response = await _produce(produce)
        if response.stop_reason == "aborted":
            if attempt:
                await _notify(on_retry_finished, False, attempt)
            return response
        if response.stop_reason != "error":
            if attempt:
                await _notify(on_retry_finished, True, attempt)
            return response
        if attempt >= active.max_retries or not is_retryable_assistant_error(response):
            if attempt:
                await _notify(on_retry_finished, False, attempt, response.error_message)
            return response

        attempt += 1
        error_text = response.error_message or "Unknown error"
        delay_ms = active.delay_ms(attempt)
        await _notify(on_retry_scheduled, attempt, active.max_retries, delay_ms, error_text)
        if not await abortable_sleep(delay_ms / 1000, signal):
            await _notify(on_retry_finished, False, attempt, error_text)
            return response.model_copy(update={"stop_reason": "aborted", "error_message": None}, deep=True)
        await _notify(on_retry_attempt_start)
