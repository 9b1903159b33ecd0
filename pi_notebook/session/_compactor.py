"""The session's compaction (PI-SPEC §7.5): overflow -> compact and retry once, threshold, manual.

:class:`Compactor` is owned by an :class:`~pi_notebook.session.AgentSession`: the session's operation
(``_operation``) tells it about the messages that start and end and asks it after each run whether to compact;
``compact()`` asks it for a manual compaction; it reports its events. The summary itself is made in
:mod:`._summary`.

Where this differs from Pi (0.84, which added the truncated-reply recovery), on purpose:

* **A truncated reply is kept unless it is really retried.** A ``length`` stop below ``model.max_tokens`` is
  recovered as Pi does (compact, then run the turn again without it), but the reply leaves the transcript only
  once the compaction is done and the turn really runs again. When there is nothing to compact, the compaction
  fails or is stopped, or the one retry was already spent, the reply stays (it is what the model wrote; dropping
  it left two user messages in a row) and a ``compaction_end`` with ``error_message`` says so. Before a new
  prompt such a kept reply is not recovered again.
* **A prompt that cannot fit is taken out of the context.** When the overflow recovery fails (nothing to
  compact, or the compacted transcript overflowed again), the failed reply and the user messages that ended the
  transcript (the prompt, steering and follow-ups that never reached the model) are removed from what the model
  sees next; the session file keeps them, and ``compaction_end``'s ``error_message`` says what was removed. In
  Pi they stay, so every later prompt resends them and overflows again. Earlier prompts whose reply failed for
  another reason (a 429 after the retries) are not among them: they stay.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from ..agent import Agent, AgentMessage
from ..ai import AbortController, AssistantMessage, PiNotebookError, TextContent, ToolCall, UserMessage
from ..ai import stream as default_stream
from ..ai.messages import message_key
from ..ai.overflow import is_context_overflow, is_recoverable_length
from ._events import (
    CompactionEndEvent,
    CompactionReason,
    CompactionStartEvent,
    SessionEvent,
    SummarizationRetryAttemptStartEvent,
    SummarizationRetryFinishedEvent,
    SummarizationRetryScheduledEvent,
)
from ._journal import Journal
from ._settings import Settings
from ._summary import (
    CompactionPlan,
    SummarizationFailed,
    context_tokens,
    estimate_tokens,
    plan_compaction,
    summarize,
)

__all__ = [
    "OVERFLOW_FAILED",
    "TRUNCATED_FAILED",
    "CompactionCancelled",
    "CompactionOutcome",
    "Compactor",
    "SummarizationFailed",
]

OVERFLOW_FAILED = (
    "Context overflow recovery failed after one compact-and-retry attempt. "
    "Try reducing context or switching to a larger-context model."
)
TRUNCATED_FAILED = "Truncated response recovery failed after one compact-and-retry attempt."  # Pi >= 0.84.2
NOTHING_TO_COMPACT = "nothing to compact"
TRUNCATED_KEPT = " The truncated reply is kept."

CompactionOutcome = Literal["done", "nothing", "aborted"]


class CompactionCancelled(PiNotebookError, RuntimeError):
    """A manual compaction was stopped by ``abort()``; the transcript is unchanged."""

    def __init__(self) -> None:
        super().__init__("Compaction cancelled")


class Compactor:
    """Compacts one agent's transcript: summarises the older part and replaces it (and records it in ``journal``).

    ``settings`` are the session's (the owner updates them); events go to ``emit``. State kept between runs:
    whether an overflow was already compacted for the current prompt (Pi retries once), and which replies were
    made since the last compaction (older ones must not trigger another).
    """

    def __init__(
        self, agent: Agent, settings: Settings, journal: Journal, emit: Callable[[SessionEvent], None]
    ) -> None:
        self.settings = settings
        self._agent = agent
        self.journal = journal
        self._emit = emit
        self._controller: AbortController | None = None
        self._overflow_attempted = False
        self._since: set[int] | None = None  # keys of the replies made since the last compaction

    # -- what the session tells it ------------------------------------------------------------------------
    def user_message_started(self) -> None:
        """A new user message resets the overflow recovery (one compact-and-retry per prompt)."""
        self._overflow_attempted = False

    def reply_ended(self, message: AssistantMessage) -> None:
        if self._since is not None:
            self._since.add(message_key(message))
        if message.stop_reason not in ("error", "length"):
            self._overflow_attempted = False

    def abort(self) -> None:
        """Stop a running compaction (its summary request and retry backoff)."""
        if self._controller is not None:
            self._controller.abort("compaction cancelled")

    # -- triage -------------------------------------------------------------------------------------------
    def plan(self) -> CompactionPlan | None:
        """What a compaction now would summarise and keep; ``None`` when there is nothing to compact."""
        _, keep = self._limits()
        return plan_compaction(self._agent.state.messages, keep)

    def _limits(self) -> tuple[int, int]:
        """Reserve and keep-recent tokens for the current model's window (see ``CompactionSettings``)."""
        return self.settings.compaction.for_window(self._agent.state.model.context_window or 0)

    async def check(self, message: AssistantMessage, *, kept_reply: bool = False) -> bool:
        """Pi's §7.5 triage of the last reply: overflow -> compact (and retry once); over the threshold ->
        compact. True when an overflow was compacted and the run should be retried now (the failed reply was
        dropped from the transcript). ``kept_reply``: ``message`` was kept after a recovery was given up (only the
        threshold applies). (Pi skips an aborted reply after a run; the session never asks with one.)
        """
        settings = self.settings.compaction
        if not settings.enabled or self._older_than_compaction(message):
            return False
        model = self._agent.state.model
        same_model = message.provider == model.provider and message.model == model.id
        window = model.context_window or 0
        recoverable_length = same_model and is_recoverable_length(message, model.max_tokens)
        truncated = _is_truncated(message)
        if same_model and (is_context_overflow(message, window) or recoverable_length) and not kept_reply:
            if message.stop_reason == "stop":
                await self._auto_compact("overflow", will_retry=False)
                return False
            return await self._recover(truncated)
        if window and context_tokens(self._agent.state.messages) > window - self._limits()[0]:
            await self._auto_compact("threshold", will_retry=False)
        return False

    async def check_last_reply(self) -> None:
        """Before a prompt, Pi checks the transcript's last reply too (a truncated reply kept there is not
        recovered again: only the threshold applies)."""
        last = next((m for m in reversed(self._agent.state.messages) if isinstance(m, AssistantMessage)), None)
        if last is not None:
            await self.check(last, kept_reply=_is_truncated(last))

    async def _recover(self, truncated: bool) -> bool:
        """Compact and run the failed turn once more (true), or give up with an event (false)."""
        if self._overflow_attempted:
            self._give_up(TRUNCATED_FAILED if truncated else OVERFLOW_FAILED, truncated)
            return False
        self._overflow_attempted = True
        if not truncated:
            self._drop_failed_reply()  # an error holds nothing for the model (the session file keeps it)
        outcome = await self._auto_compact("overflow", will_retry=True)
        if outcome == "nothing":
            prefix = "Truncated response recovery" if truncated else "Context overflow recovery"
            self._give_up(f"{prefix} failed: {NOTHING_TO_COMPACT}.", truncated)
        return outcome == "done"

    def _give_up(self, text: str, truncated: bool) -> None:
        """Report a failed recovery: a truncated reply stays; a prompt that cannot fit leaves the context."""
        if truncated:
            self._emit(CompactionEndEvent("overflow", error_message=text + TRUNCATED_KEPT))
            return
        self._drop_failed_reply()
        messages = self._agent.state.messages
        window = self._agent.state.model.context_window or 0
        start = len(messages)
        while start > 0 and _did_not_fit(messages[start - 1], window):
            start -= 1
        removed = [m for m in messages[start:] if isinstance(m, UserMessage)]
        if removed:
            del messages[start:]
            tokens = sum(estimate_tokens(m) for m in removed)
            what = "The prompt" if len(removed) == 1 else f"The {len(removed)} user messages"
            size = f"about {tokens} token{'' if tokens == 1 else 's'}"
            text += f" {what} that did not fit ({size}) left the context; the session file keeps it."
        self._emit(CompactionEndEvent("overflow", error_message=text))

    def _older_than_compaction(self, message: AssistantMessage) -> bool:
        """Pi compares timestamps; replies can land within the same millisecond, so the keys of the replies made
        since the last compaction are kept (only those: a compaction frees the older ones)."""
        return self._since is not None and message_key(message) not in self._since

    def _drop_failed_reply(self) -> None:
        """Take a trailing ``error`` or ``length`` reply out of the context (the session file keeps it)."""
        messages = self._agent.state.messages
        if messages and isinstance(messages[-1], AssistantMessage) and messages[-1].stop_reason in ("error", "length"):
            messages.pop()

    async def _auto_compact(
        self, reason: CompactionReason, *, will_retry: bool
    ) -> CompactionOutcome | Literal["failed"]:
        """Compact (a failure is reported); with ``will_retry``, a done compaction drops the failed reply."""
        try:
            outcome = await self.compact(reason, will_retry=will_retry)
        except SummarizationFailed as failure:
            prefix = "Context overflow recovery failed" if reason == "overflow" else "Auto-compaction failed"
            self._emit(CompactionEndEvent(reason, error_message=f"{prefix}: {failure}"))
            return "failed"
        if outcome == "done" and will_retry:
            self._drop_failed_reply()
        return outcome

    # -- compaction ---------------------------------------------------------------------------------------
    async def compact_manual(self, instructions: str | None = None) -> None:
        """``AgentSession.compact``'s compaction: raises ``RuntimeError`` when the summary fails ("Compaction
        failed: ...", reported by ``compaction_end`` first), :class:`CompactionCancelled` when an abort stops it,
        and ``ValueError`` when there is nothing to compact."""
        try:
            outcome = await self.compact("manual", instructions=instructions)
        except SummarizationFailed as failure:
            self._emit(CompactionEndEvent("manual", error_message=f"Compaction failed: {failure}"))
            raise RuntimeError(f"Compaction failed: {failure}") from None
        if outcome == "nothing":
            raise ValueError("Nothing to compact (session too small)")
        if outcome == "aborted":
            raise CompactionCancelled

    async def compact(
        self, reason: CompactionReason, *, will_retry: bool = False, instructions: str | None = None
    ) -> CompactionOutcome:
        """Summarise and replace the older transcript. An abort is reported (``compaction_end`` with
        ``aborted``) and returned; a failed summary raises :class:`SummarizationFailed` (the caller reports it)."""
        plan = self.plan()
        if plan is None:
            return "nothing"
        self._emit(CompactionStartEvent(reason))
        controller = self._controller = AbortController()
        agent = self._agent
        settings = self.settings
        try:
            summary = await summarize(
                plan,
                model=agent.state.model,
                stream_fn=agent.stream_fn or default_stream,
                policy=settings.retry,
                options=await agent.request_options(controller.signal),
                signal=controller.signal,
                reserve_tokens=self._limits()[0],
                context_window=agent.state.model.context_window or 0,
                instructions=instructions,
                on_retry_scheduled=lambda attempt, most, delay, error: self._emit(
                    SummarizationRetryScheduledEvent(attempt, most, delay, error)
                ),
                on_retry_attempt_start=lambda: self._emit(SummarizationRetryAttemptStartEvent(reason)),
                on_retry_finished=lambda *_: self._emit(SummarizationRetryFinishedEvent()),
            )
        finally:
            self._controller = None
        if summary is None:
            self._emit(CompactionEndEvent(reason, aborted=True))
            return "aborted"
        self.journal.append_compaction(summary, plan.keep[0] if plan.keep else None)
        agent.state.messages = [summary, *plan.keep]
        self._since = set()
        self._emit(CompactionEndEvent(reason, result=summary, will_retry=will_retry))
        return "done"


def _is_truncated(message: AssistantMessage) -> bool:
    """A ``length`` stop that holds something the model wrote (an empty one is an overflow, like an error)."""
    return message.stop_reason == "length" and any(
        (isinstance(block, TextContent) and block.text) or isinstance(block, ToolCall) for block in message.content
    )


def _did_not_fit(message: AgentMessage, window: int) -> bool:
    """A user message, or an overflow reply between user messages (a session file resumed after an overflow holds
    the prompt that did not fit and its error reply). Another failed reply (a 429) ends the search: the prompt
    before it was never answered, but not because it did not fit."""
    return isinstance(message, UserMessage) or (
        isinstance(message, AssistantMessage)
        and message.stop_reason == "error"
        and is_context_overflow(message, window)
    )
