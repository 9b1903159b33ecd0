"""The session's compaction (PI-SPEC §7.5): overflow -> compact and retry once, threshold, manual.

:class:`Compactor` is owned by an :class:`~pi_notebook.session.AgentSession`: the session tells it about the
messages that start and end, asks it after each run whether to compact, and reports its events. The summary
itself is made in :mod:`._summary`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from ..agent import Agent
from ..ai import AbortController, AssistantMessage
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
from ._settings import Settings
from ._store import SessionStore
from ._summary import CompactionPlan, SummarizationFailed, context_tokens, plan_compaction, summarize

__all__ = ["OVERFLOW_FAILED", "CompactionCancelled", "CompactionOutcome", "Compactor", "SummarizationFailed"]

OVERFLOW_FAILED = (
    "Context overflow recovery failed after one compact-and-retry attempt. "
    "Try reducing context or switching to a larger-context model."
)

CompactionOutcome = Literal["done", "nothing", "aborted"]


class CompactionCancelled(RuntimeError):
    """A manual compaction was stopped by ``abort()``; the transcript is unchanged."""

    def __init__(self) -> None:
        super().__init__("Compaction cancelled")


class Compactor:
    """Compacts one agent's transcript: summarises the older part and replaces it (and records it in ``store``).

    ``settings`` are the session's (the owner updates them); events go to ``emit``. State kept between runs:
    whether an overflow was already compacted for the current prompt (Pi retries once), and which replies were
    made since the last compaction (older ones must not trigger another).
    """

    def __init__(
        self, agent: Agent, settings: Settings, store: SessionStore | None, emit: Callable[[SessionEvent], None]
    ) -> None:
        self.settings = settings
        self._agent = agent
        self.store = store
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
        return plan_compaction(self._agent.state.messages, self.settings.compaction.keep_recent_tokens)

    async def check(self, message: AssistantMessage) -> bool:
        """Pi's §7.5 triage of the last reply: overflow -> compact (and retry once); over the threshold ->
        compact. True when an overflow was compacted and the run should be retried now (the failed reply was
        dropped from the transcript). (Pi skips an aborted reply after a run; the session never asks with one.)
        """
        settings = self.settings.compaction
        if not settings.enabled or self._older_than_compaction(message):
            return False
        model = self._agent.state.model
        same_model = message.provider == model.provider and message.model == model.id
        window = model.context_window or 0
        recoverable_length = same_model and is_recoverable_length(message, model.max_tokens)
        if same_model and (is_context_overflow(message, window) or recoverable_length):
            will_retry = message.stop_reason != "stop"
            if not will_retry:
                await self._auto_compact("overflow", will_retry=False)
                return False
            if self._overflow_attempted:
                self._emit(CompactionEndEvent("overflow", error_message=OVERFLOW_FAILED))
                return False
            self._overflow_attempted = True
            self._drop_failed_reply()
            return await self._auto_compact("overflow", will_retry=True)
        if window and context_tokens(self._agent.state.messages) > window - settings.reserve_tokens:
            await self._auto_compact("threshold", will_retry=False)
        return False

    async def check_last_reply(self) -> None:
        """Before a prompt, Pi checks the transcript's last reply too."""
        last = next((m for m in reversed(self._agent.state.messages) if isinstance(m, AssistantMessage)), None)
        if last is not None:
            await self.check(last)

    def _older_than_compaction(self, message: AssistantMessage) -> bool:
        """Pi compares timestamps; replies can land within the same millisecond, so the keys of the replies made
        since the last compaction are kept (only those: a compaction frees the older ones)."""
        return self._since is not None and message_key(message) not in self._since

    def _drop_failed_reply(self) -> None:
        messages = self._agent.state.messages
        if messages and isinstance(messages[-1], AssistantMessage) and messages[-1].stop_reason in ("error", "length"):
            messages.pop()

    async def _auto_compact(self, reason: CompactionReason, *, will_retry: bool) -> bool:
        try:
            outcome = await self.compact(reason, will_retry=will_retry)
        except SummarizationFailed as failure:
            prefix = "Context overflow recovery failed" if reason == "overflow" else "Auto-compaction failed"
            self._emit(CompactionEndEvent(reason, error_message=f"{prefix}: {failure}"))
            return False
        if outcome == "done" and will_retry:
            self._drop_failed_reply()
            return True
        return False

    # -- compaction ---------------------------------------------------------------------------------------
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
                reserve_tokens=settings.compaction.reserve_tokens,
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
        if self.store is not None:
            self.store.append_compaction(summary, plan.keep[0] if plan.keep else None)
        agent.state.messages = [summary, *plan.keep]
        self._since = set()
        self._emit(CompactionEndEvent(reason, result=summary, will_retry=will_retry))
        return "done"
