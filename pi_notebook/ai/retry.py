"""Retry: one policy, one classifier, one backoff formula for Pi's three retry layers.

Layer 1 retries the initial HTTP request inside a provider (``pi_notebook.ai._http``); layer 2 wraps a single
self-contained call such as a compaction summary (:func:`retry_assistant_call`, Pi's ``pi-ai/utils/retry.ts``);
layer 3 (the session) retries whole agent turns. All three ask the same questions here:

- :func:`is_retryable_failure` — is this failure transient? It combines what the provider saw of the response
  (:class:`~pi_notebook.ai.messages.RequestFailure`: status, ``x-should-retry``) with the error text, in this
  order: the server's ``x-should-retry``; Pi's non-retryable texts (quota, billing); the status when there was
  one (408, 409, 429, 5xx); Pi's retryable texts. :func:`is_retryable_assistant_error` asks it of a message.
  Context overflow is not recognised here: callers check it first (:mod:`pi_notebook.ai.overflow`).
- :func:`backoff_ms` — the exponential backoff formula, written once (layer 1 adds Pi's cap and jitter).
- :class:`RetryPolicy` — the budget and backoff of layers 2 and 3, with layer 1's knobs under ``provider``
  (it is also the session's ``Settings.retry``). :meth:`RetryPolicy.decide` returns a :class:`RetryDecision`:
  retry or not, and after how long — the server's ``retry-after`` when the provider saw one (capped by
  ``provider.max_retry_delay_ms``), else ``base_delay_ms * 2**(n - 1)``.

Failures stay data: the result is always an :class:`AssistantMessage` (``stop`` / ``error`` / ``aborted`` …);
nothing here raises for a provider failure.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeAlias

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from ._abort import AbortSignal, abortable_sleep
from ._awaitable import MaybeAwaitable, maybe_await
from .messages import AssistantMessage, RequestFailure

__all__ = [
    "MAX_TIMER_MS",
    "NON_RETRYABLE_ERROR_FRAGMENTS",
    "NON_RETRYABLE_ERROR_PATTERN",
    "RETRYABLE_ERROR_FRAGMENTS",
    "RETRYABLE_ERROR_PATTERN",
    "OnRetryAttemptStart",
    "OnRetryFinished",
    "OnRetryScheduled",
    "Produce",
    "ProviderRetrySettings",
    "RetryDecision",
    "RetryPolicy",
    "backoff_ms",
    "is_retryable_assistant_error",
    "is_retryable_failure",
    "is_retryable_status",
    "retry_assistant_call",
]

Produce: TypeAlias = Callable[[], MaybeAwaitable[AssistantMessage]]
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


def is_retryable_status(status: int) -> bool:
    """Pi's layer-1 statuses: 408, 409, 429 and every 5xx."""
    return status in (408, 409, 429) or status >= 500


def is_retryable_failure(error_text: str | None, failure: RequestFailure | None = None) -> bool:
    """Whether a failure looks transient (see the module docstring for the order of the checks)."""
    if failure is not None and failure.should_retry is not None:
        return failure.should_retry
    if error_text and NON_RETRYABLE_ERROR_PATTERN.search(error_text):
        return False
    if failure is not None and failure.status is not None:
        return is_retryable_status(failure.status)
    return bool(error_text) and RETRYABLE_ERROR_PATTERN.search(error_text or "") is not None


def is_retryable_assistant_error(message: AssistantMessage) -> bool:
    """Whether a failed message looks like a transient provider or transport error.

    Only ``stop_reason == "error"`` with a non-empty ``error_message`` can be retryable; successes and
    aborts never are. Then :func:`is_retryable_failure` decides from the text and, when the provider saw a
    response, its status and ``x-should-retry`` (``message.request_failure``). A match in the non-retryable
    table (quota, billing) wins over the status and the retryable table. Context overflow is not recognised
    here: check it first.
    """
    text = message.error_message
    if message.stop_reason != "error" or not text:
        return False
    return is_retryable_failure(text, message.request_failure)


def backoff_ms(base_ms: float, attempt: int, *, max_ms: float | None = None, jitter: float = 0.0) -> float:
    """Exponential backoff before retry ``attempt`` (1-based): ``base_ms * 2**(attempt - 1)``, at most ``max_ms``,
    minus up to ``jitter`` (a fraction) at random."""
    delay: float = base_ms * 2.0 ** (attempt - 1)
    if max_ms is not None:
        delay = min(delay, max_ms)
    return delay * (1 - random.random() * jitter) if jitter else delay


MAX_TIMER_MS = 2**31 - 1
"""Upper bound of every millisecond setting (about 24.8 days; Node's ``setTimeout`` limit, so Pi's settings files
mean the same here). Larger values are refused when settings are validated, so every timer can be armed, and a
computed backoff is capped at it."""


class ProviderRetrySettings(BaseModel):
    """Layer 1: retry of the initial HTTP request inside a provider (PI-SPEC §4.1)."""

    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True)
    max_retries: int = Field(0, ge=0)
    """Retries of a failed request before streaming begins (0: none, Pi's default)."""
    max_retry_delay_ms: int = Field(60_000, ge=0, le=MAX_TIMER_MS)
    """Longest server-requested wait honoured (0: no cap). Layer 1 fails at once on a longer one; the session
    (layer 3) waits at most this long when it retries a turn the server asked to delay."""
    timeout_ms: int | None = Field(None, gt=0, le=MAX_TIMER_MS)
    """Whole-request deadline (connect to last byte). Does not cover tools or retries between turns."""


@dataclass(frozen=True, slots=True)
class RetryDecision:
    """Whether to retry, and the wait before the attempt (0 when not retrying)."""

    retry: bool
    delay_ms: int = 0


_NO_RETRY = RetryDecision(False)


class RetryPolicy(BaseModel):
    """Retry budget and backoff (layers 2 and 3; Pi's ``retry`` settings), with layer 1 under ``provider``.

    Delay before retry ``n`` (1-based): the server's ``retry-after`` when the failed response carried one (at
    most ``provider.max_retry_delay_ms``), else ``base_delay_ms * 2**(n - 1)`` — no jitter, no cap (Pi's
    defaults give 2 s, 4 s, 8 s) except that a delay never exceeds :data:`MAX_TIMER_MS`. Loads Pi's settings keys too
    (``maxRetries``, ``baseDelayMs``). Negative values and millisecond values over :data:`MAX_TIMER_MS` raise
    :class:`pydantic.ValidationError`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", alias_generator=to_camel, populate_by_name=True)
    enabled: bool = True
    max_retries: int = Field(default=3, ge=0)
    base_delay_ms: int = Field(default=2000, ge=0, le=MAX_TIMER_MS)
    provider: ProviderRetrySettings = ProviderRetrySettings()

    def delay_ms(self, attempt: int, failure: RequestFailure | None = None) -> int:
        """The wait before retry ``attempt`` (1-based) of a failure (see the class docstring)."""
        asked = failure.retry_after_ms if failure is not None else None
        if asked is None:  # 2.0 ** 1024 overflows a float: past 2**40 * base the cap applies anyway
            return int(min(backoff_ms(self.base_delay_ms, min(attempt, 42)), MAX_TIMER_MS))
        cap = self.provider.max_retry_delay_ms
        return math.ceil(min(asked, cap) if cap > 0 else asked)

    def decide(self, message: AssistantMessage, attempt: int) -> RetryDecision:
        """Whether ``message`` should be retried as retry number ``attempt`` (1-based), and after how long:
        retryable (:func:`is_retryable_assistant_error`), enabled, and ``attempt`` within ``max_retries``."""
        if not self.enabled or attempt > self.max_retries or not is_retryable_assistant_error(message):
            return _NO_RETRY
        return RetryDecision(True, self.delay_ms(attempt, message.request_failure))


async def _notify(callback: Callable[..., object] | None, *args: object) -> None:
    if callback is not None:
        await maybe_await(callback(*args))


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
    - ``error`` that :meth:`RetryPolicy.decide` does not retry (not retryable, or the budget
      ``policy.max_retries`` spent; nothing is retried when ``policy`` is ``None`` or disabled): returned as is.
    - otherwise ``on_retry_scheduled(attempt, max_attempts, delay_ms, error_message or "Unknown error")``,
      an abortable sleep of ``delay_ms`` (the decision's), ``on_retry_attempt_start()``, and the next
      ``produce()``.

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
        response = await maybe_await(produce())
        if response.stop_reason == "aborted":
            if attempt:
                await _notify(on_retry_finished, False, attempt)
            return response
        if response.stop_reason != "error":
            if attempt:
                await _notify(on_retry_finished, True, attempt)
            return response
        decision = active.decide(response, attempt + 1)
        if not decision.retry:
            if attempt:
                await _notify(on_retry_finished, False, attempt, response.error_message)
            return response

        attempt += 1
        error_text = response.error_message or "Unknown error"
        delay_ms = decision.delay_ms
        await _notify(on_retry_scheduled, attempt, active.max_retries, delay_ms, error_text)
        if not await abortable_sleep(delay_ms / 1000, signal):
            await _notify(on_retry_finished, False, attempt, error_text)
            return response.model_copy(update={"stop_reason": "aborted", "error_message": None}, deep=True)
        await _notify(on_retry_attempt_start)
