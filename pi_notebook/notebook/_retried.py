"""Which failed replies a turn retry replaced, so a run shows one error, not one per attempt.

With the server down, each of the session's turn retries (``retry.max_retries``) ends in the same error: the run
view drew one red block per attempt, and its report listed them all. What a person needs is the error once and how
often it was tried. :class:`RetriedReplies` follows a run's events: a failed reply is held until its fate is known;
one a retry replaced (the next attempt's reply started) is left out, its error said by the retry countdown while it
lasted and by the event log (``auto_retry_start``); the last one is shown with ``(retried 3x)``, or ``(retry
cancelled)`` when a Stop or Cancel retry ended the wait. The session file and ``run.messages`` keep every reply (a
failed attempt may have cost something: the receipt counts it).
"""

from __future__ import annotations

from ..agent import AgentMessage
from ..ai import AssistantMessage
from ..ai.messages import message_key
from ..session import (
    AgentEndEvent,
    AgentSettledEvent,
    AutoRetryEndEvent,
    AutoRetryStartEvent,
    MessageEndEvent,
    MessageStartEvent,
    SessionEvent,
)

__all__ = ["RetriedReplies", "without_retried"]

CANCELLED = "Retry cancelled"
"""``auto_retry_end``'s error when the wait was cancelled (``_turn_retry``)."""


class RetriedReplies:
    """Follows one run's events (see the module docstring): :meth:`see` says when a held failed reply is to be shown;
    :attr:`replaced` holds the keys of those a retry replaced, :attr:`notes` what the shown one's error adds."""

    def __init__(self) -> None:
        self.replaced: set[int] = set()
        self.notes: dict[int, str] = {}
        self._held: AssistantMessage | None = None
        self._attempt = 0

    def holds(self, message: AssistantMessage) -> bool:
        """``message`` (a failed reply that ended) is held: shown later, or never (see :meth:`see`)."""
        return self._held is message

    def see(self, event: SessionEvent) -> AssistantMessage | None:
        """Take one event; the held failed reply when it is now to be shown (its note in :attr:`notes`), else
        ``None``."""
        match event:
            case MessageEndEvent(message=AssistantMessage(stop_reason="error") as message):
                shown, self._held = self._held, message  # (an earlier one still held: shown now)
                return shown
            case MessageStartEvent(message=AssistantMessage()) if self._held is not None and self._attempt:
                self.replaced.add(message_key(self._held))  # the next attempt began: this one was retried
                self._held = None
            case AutoRetryStartEvent(attempt=attempt):
                self._attempt = attempt
            case AutoRetryEndEvent(success=False, attempt=attempt, final_error=error):
                self._attempt = 0
                if self._held is not None:
                    note = "retry cancelled" if error == CANCELLED else f"retried {attempt}x"
                    self.notes[message_key(self._held)] = note
                return self._release()
            case AutoRetryEndEvent():
                self._attempt = 0
            case AgentEndEvent(will_retry=False) if not self._attempt:
                return self._release()
            case AgentSettledEvent():
                return self._release()
            case _:
                pass
        return None

    def error_of(self, message: AssistantMessage) -> str | None:
        """The reply's error as shown: with its note (``Connection error (retried 3x)``)."""
        note = self.notes.get(message_key(message))
        error = message.error_message
        return f"{error or 'error'} ({note})" if note else error

    def shown(self, messages: list[AgentMessage]) -> list[AgentMessage]:
        """``messages`` as a report shows them: a failed reply a retry replaced is left out, the last one says how
        often it was retried (:meth:`error_of`)."""
        return [
            message.model_copy(update={"error_message": self.error_of(message)})
            if isinstance(message, AssistantMessage) and message_key(message) in self.notes
            else message
            for message in messages
            if message_key(message) not in self.replaced
        ]

    def _release(self) -> AssistantMessage | None:
        held, self._held = self._held, None
        return held


def without_retried(messages: list[AgentMessage]) -> list[AgentMessage]:
    """A saved transcript (``%pi resume``) as the run showed it: a failed reply that another attempt followed (the
    file keeps each of a retried turn's replies, one after the other) is left out, and a last failed one says how
    often it was retried. The transcript itself is left as loaded."""
    shown: list[AgentMessage] = []
    retried = 0
    for index, message in enumerate(messages):
        following = messages[index + 1] if index + 1 < len(messages) else None
        if isinstance(message, AssistantMessage) and message.stop_reason == "error":
            if isinstance(following, AssistantMessage):  # the turn ran again: this attempt was retried
                retried += 1
                continue
            if retried:
                message = message.model_copy(update={"error_message": f"{message.error_message} (retried {retried}x)"})
        retried = 0
        shown.append(message)
    return shown
