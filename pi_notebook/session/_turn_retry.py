"""Retry layer 3: the session runs a turn again after a retryable error (Pi's ``_handleRetryableError``).

A failed reply that the policy retries (not a context overflow, retryable, within ``retry.max_retries``) is
reported (``auto_retry_start`` with the attempt and the delay), dropped from what the model sees next (it stays in
the session file), and the turn runs again after the delay: the server's ``retry-after`` where the provider saw
one (capped by ``retry.provider.max_retry_delay_ms``), else the backoff. The wait can be cancelled on its own
(``abort()``: the Stop of the retry countdown) and by every stop path. ``auto_retry_end`` reports how it ended:
a reply that did not fail (success, or not when it was aborted), a give-up, or a cancelled wait.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..agent import Agent, AgentMessage
from ..ai import AbortController, AssistantMessage, abortable_sleep
from ..ai.overflow import is_context_overflow
from ..ai.retry import RetryDecision
from ._events import AutoRetryEndEvent, AutoRetryStartEvent, SessionEvent
from ._settings import Settings

__all__ = ["TurnRetry"]


class TurnRetry:
    """The session's turn retries: the attempt count, the wait in progress and the events that report them."""

    def __init__(self, agent: Agent, settings: Callable[[], Settings], emit: Callable[[SessionEvent], None]) -> None:
        self._agent = agent
        self._settings = settings
        self._emit = emit
        self.attempt = 0
        self._controller: AbortController | None = None

    @property
    def waiting(self) -> bool:
        return self._controller is not None

    def decision(self, message: AssistantMessage) -> RetryDecision:
        """Pi's ``_isRetryableError`` (not a context overflow, and retryable) within the retry budget, with the
        delay: the server's ``retry-after`` where the provider saw one (capped), else the backoff."""
        if is_context_overflow(message, self._agent.state.model.context_window or 0):
            return RetryDecision(False)
        return self._settings().retry.decide(message, self.attempt + 1)

    def will_retry(self, messages: Sequence[AgentMessage]) -> bool:
        """Whether the run that ended with ``messages`` will be retried (``agent_end``'s ``will_retry``)."""
        last = next((m for m in reversed(messages) if isinstance(m, AssistantMessage)), None)
        return last is not None and self.decision(last).retry

    async def retry(self, message: AssistantMessage, delay_ms: int) -> bool:
        """Report the retry, drop the failed reply from what the model sees next, wait ``delay_ms`` (abortable:
        :meth:`abort`); true when the turn should be run again."""
        self.attempt += 1
        error_text = message.error_message or "Unknown error"
        self._emit(AutoRetryStartEvent(self.attempt, self._settings().retry.max_retries, delay_ms, error_text))
        messages = self._agent.state.messages
        if messages and messages[-1].role == "assistant":
            messages.pop()  # the failed reply stays in the session file, not in what the model sees next
        controller = self._controller = AbortController()
        try:
            slept = await abortable_sleep(delay_ms / 1000, controller.signal)
        finally:
            self._controller = None
        if not slept:
            self._end(False, "Retry cancelled")
            return False
        return True

    def abort(self) -> None:
        """Cancel a wait in progress (the failed reply stays the last word)."""
        if self._controller is not None:
            self._controller.abort("retry cancelled")

    def reply_ended(self, message: AssistantMessage) -> None:
        """A reply after a retry did not fail: the retry ended (successfully unless it was aborted)."""
        if self.attempt > 0 and message.stop_reason != "error":
            success = message.stop_reason != "aborted"
            self._end(success, None if success else message.error_message)

    def gave_up(self, message: AssistantMessage) -> None:
        """The retried turn failed again and will not be retried: the retry ended without success."""
        if message.stop_reason == "error" and self.attempt > 0:
            self._end(False, message.error_message)

    def _end(self, success: bool, error: str | None) -> None:
        attempt, self.attempt = self.attempt, 0
        self._emit(AutoRetryEndEvent(success, attempt, error))
