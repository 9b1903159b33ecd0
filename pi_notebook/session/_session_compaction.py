"""The session's compaction triage (PI-SPEC §7.5): overflow -> compact and retry once, threshold, manual.

A mixin of :class:`~pi_notebook.session.AgentSession`, kept apart so each file stays readable; the summary
itself is made in :mod:`._compaction`.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Literal

from ..agent import Agent
from ..ai import AbortController, AssistantMessage, Model
from ..ai import stream as default_stream
from ..ai.messages import message_key
from ..ai.overflow import is_context_overflow, is_recoverable_length
from ..ai.retry import RetryPolicy
from ._compaction import CompactionPlan, SummarizationFailed, context_tokens, plan_compaction, summarize
from ._events import (
    CompactionEndEvent,
    CompactionReason,
    CompactionStartEvent,
    SummarizationRetryAttemptStartEvent,
    SummarizationRetryFinishedEvent,
    SummarizationRetryScheduledEvent,
)

if TYPE_CHECKING:
    from ._settings import Settings
    from ._store import SessionStore

__all__ = ["OVERFLOW_FAILED", "CompactionCancelled", "CompactionMixin"]

OVERFLOW_FAILED = (
    "Context overflow recovery failed after one compact-and-retry attempt. "
    "Try reducing context or switching to a larger-context model."
)


class CompactionCancelled(RuntimeError):
    """A manual compaction was stopped by ``abort()``; the transcript is unchanged."""

    def __init__(self) -> None:
        super().__init__("Compaction cancelled")


class CompactionMixin:
    """Compaction for ``AgentSession``: the attributes below are the session's."""

    agent: Agent
    store: SessionStore | None
    _aborted: bool
    _compacting: bool
    _idle: asyncio.Event | None
    _overflow_attempted: bool
    _compaction_controller: AbortController | None
    _since_compaction: set[int] | None

    @property
    def settings(self) -> Settings:
        raise NotImplementedError

    @property
    def model(self) -> Model:
        raise NotImplementedError

    def _emit(self, event: Any) -> None:
        raise NotImplementedError

    async def abort(self) -> None:
        raise NotImplementedError

    def _last_transcript_assistant(self) -> AssistantMessage | None:
        raise NotImplementedError

    async def _pre_prompt_compaction(self) -> None:
        last = self._last_transcript_assistant()
        if last is not None:
            await self._check_compaction(last)

    async def _check_compaction(self, message: AssistantMessage) -> bool:
        """Pi's §7.5 triage: overflow -> compact (and retry once); over the threshold -> compact. (Pi skips an
        aborted reply after a run; ``_after_run`` never gets here with one. Before a prompt, Pi checks it too.)"""
        settings = self.settings.compaction
        if not settings.enabled:
            return False
        if self._older_than_compaction(message):
            return False
        model = self.model
        same_model = message.provider == model.provider and message.model == model.id
        window = model.context_window or 0
        recoverable_length = same_model and is_recoverable_length(message, model.max_tokens)
        if same_model and (is_context_overflow(message, window) or recoverable_length):
            will_retry = message.stop_reason != "stop"
            if not will_retry:
                return await self._auto_compact("overflow", will_retry=False)
            if self._overflow_attempted:
                self._emit(CompactionEndEvent("overflow", error_message=OVERFLOW_FAILED))
                return False
            self._overflow_attempted = True
            self._drop_failed_reply()
            return await self._auto_compact("overflow", will_retry=True)
        if not window:
            return False
        if context_tokens(self.agent.state.messages) > window - settings.reserve_tokens:
            return await self._auto_compact("threshold", will_retry=False)
        return False

    def _older_than_compaction(self, message: AssistantMessage) -> bool:
        """Pi compares timestamps; replies can land within the same millisecond, so we remember the replies made
        since the last compaction (only those: a compaction frees the older ones)."""
        since = self._since_compaction
        return since is not None and message_key(message) not in since

    def _drop_failed_reply(self) -> None:
        messages = self.agent.state.messages
        if messages and isinstance(messages[-1], AssistantMessage) and messages[-1].stop_reason in ("error", "length"):
            messages.pop()

    async def _auto_compact(self, reason: CompactionReason, *, will_retry: bool) -> bool:
        try:
            outcome = await self._compact(reason, will_retry=will_retry, instructions=None)
        except SummarizationFailed as failure:
            prefix = "Context overflow recovery failed" if reason == "overflow" else "Auto-compaction failed"
            self._emit(CompactionEndEvent(reason, error_message=f"{prefix}: {failure}"))
            return False
        if outcome != "done":
            return False
        if will_retry:
            self._drop_failed_reply()
            return True
        return not self._aborted and self.agent.has_queued_messages()

    async def compact(self, instructions: str | None = None) -> None:
        """Stop whatever runs, then compact the transcript now.

        Raises ``RuntimeError`` when the summary fails ("Compaction failed: ..."), :class:`CompactionCancelled`
        (a ``RuntimeError``: "Compaction cancelled", as Pi) when an abort stops it, and ``ValueError`` when there
        is nothing to compact.
        """
        await self.abort()
        self._compacting = True
        self._idle = asyncio.Event()
        try:
            outcome = await self._compact("manual", will_retry=False, instructions=instructions)
        except SummarizationFailed as failure:
            self._emit(CompactionEndEvent("manual", error_message=f"Compaction failed: {failure}"))
            raise RuntimeError(f"Compaction failed: {failure}") from None
        finally:
            self._compacting = False
            self._idle.set()
        if outcome == "nothing":
            raise ValueError("Nothing to compact (session too small)")
        if outcome == "aborted":
            raise CompactionCancelled

    def compaction_plan(self) -> CompactionPlan | None:
        """What a compaction now would summarise and keep; ``None`` when there is nothing to compact."""
        return plan_compaction(self.agent.state.messages, self.settings.compaction.keep_recent_tokens)

    async def _compact(
        self, reason: CompactionReason, *, will_retry: bool, instructions: str | None
    ) -> Literal["done", "nothing", "aborted"]:
        """Summarise and replace the older transcript; an abort is reported here, a failure raised."""
        plan = self.compaction_plan()
        if plan is None:
            return "nothing"
        self._emit(CompactionStartEvent(reason))
        controller = self._compaction_controller = AbortController()
        retry = self.settings.retry
        policy = RetryPolicy(enabled=retry.enabled, max_retries=retry.max_retries, base_delay_ms=retry.base_delay_ms)
        callbacks = {
            "on_retry_scheduled": lambda a, m, d, e: self._emit(SummarizationRetryScheduledEvent(a, m, d, e)),
            "on_retry_attempt_start": lambda: self._emit(SummarizationRetryAttemptStartEvent(reason)),
            "on_retry_finished": lambda *args: self._emit(SummarizationRetryFinishedEvent()),
        }
        try:
            summary = await summarize(
                plan,
                model=self.model,
                stream_fn=self.agent.stream_fn or default_stream,
                policy=policy,
                options=await self.agent.request_options(controller.signal),
                signal=controller.signal,
                reserve_tokens=self.settings.compaction.reserve_tokens,
                instructions=instructions,
                callbacks=callbacks,
            )
        finally:
            self._compaction_controller = None
        if summary is None:
            self._emit(CompactionEndEvent(reason, aborted=True))
            return "aborted"
        if self.store is not None:
            self.store.append_compaction(summary, plan.keep[0] if plan.keep else None)
        self.agent.state.messages = [summary, *plan.keep]
        self._since_compaction = set()
        self._emit(CompactionEndEvent(reason, result=summary, will_retry=will_retry))
        return "done"
