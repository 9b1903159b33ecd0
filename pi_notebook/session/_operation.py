"""The session's operation: one ``prompt()``/``continue_()`` from its start to ``agent_settled`` (PI-SPEC §7.3).

:class:`Operation` runs the agent, then triages each run's end: retry (``_turn_retry``), compact (``_compactor``),
deliver queued messages; when nothing continues, the session is idle and ``agent_settled`` is emitted, exactly
once. It keeps the running state (active, compacting, stopped and why, the run's last reply) and the run's
timers, checks the budget, and does the session's bookkeeping at each agent event, before and after the session's
listeners hear it.

Stop means stop: once the operation was stopped (``abort()``, a budget or timer running out, a tool raising
``AbortRun``) or a reply was aborted, no new run starts, even with messages queued.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from ..agent import (
    Agent,
    AgentEvent,
    AgentMessage,
    AgentStartEvent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    PrepareRequestHook,
    RequestContext,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    TurnEndEvent,
    TurnStartEvent,
    TurnUpdate,
    call_hook,
)
from ..agent import AgentEndEvent as AgentRunEndEvent
from ..ai import AbortSignal, AssistantMessage, BusyError, Deadline, UserMessage, maybe_await
from ._budget import RunBudget
from ._compactor import Compactor
from ._events import AgentEndEvent, AgentSettledEvent, BudgetExceededEvent
from ._journal import Journal
from ._listeners import Listeners
from ._navigator import Navigator
from ._queues import QueueTexts
from ._redact_reply import ReplyRedaction
from ._settings import Settings
from ._summary import CompactionSummaryMessage
from ._timers import RunTimers
from ._turn_retry import TurnRetry

__all__ = ["Operation", "SessionBusyError"]


class SessionBusyError(BusyError):
    """``prompt()``/``continue_()`` while an operation is active: queue with ``steer``/``follow_up`` instead."""


class Operation:
    """The operations of one session, one at a time, and their bookkeeping.

    The session passes what the operation works with: its ``agent``, the turn ``retry``, the ``compactor``, the
    ``navigator`` (whose branch summary an abort stops), the ``queue`` texts, its ``settings`` and ``journal`` (the
    session file, or its stand-in in memory; the session sets :attr:`settings` and :attr:`journal` again when they
    change, between operations) and its ``listeners``, to which the operation emits the session's events.
    The operation owns the run :attr:`budget` (new settings make a new one). The operation attaches
    itself to the agent: it hears every event (:meth:`on_agent_event`) and its :meth:`before_request` becomes the
    agent's ``prepare_request`` hook (calling the one the agent had after it); :meth:`dispose` detaches it. It is
    also the ``RunHooks`` of the tool guard (:meth:`deadlines`, :meth:`abort_run`).
    """

    def __init__(
        self,
        agent: Agent,
        *,
        retry: TurnRetry,
        compactor: Compactor,
        navigator: Navigator,
        queue: QueueTexts,
        settings: Settings,
        journal: Journal,
        listeners: Listeners,
        replies: ReplyRedaction,
    ) -> None:
        self._agent = agent
        self._replies = replies
        self._retry = retry
        self._compactor = compactor
        self._navigator = navigator
        self._queue = queue
        self.settings = settings
        self.journal = journal
        self._listeners = listeners  # listeners.emit(...), a method call: cheaper per delta than a stored bound method
        self._timers = RunTimers(self.stop)
        self._active = False
        self._aside: str | None = None  # what runs beside the agent: "compaction" or "navigation"
        self._idle: asyncio.Event | None = None
        self._aborted = False
        self._abort_reason: str | None = None
        self._last_assistant: AssistantMessage | None = None
        self._reply_aborted = False  # the operation's last reply so far ended aborted
        self._user_prepare_request: PrepareRequestHook | None = agent.hooks.prepare_request
        agent.hooks = replace(agent.hooks, prepare_request=self.before_request)
        self._unsubscribe = agent.subscribe(self.on_agent_event)

    # -- state --------------------------------------------------------------------------------------------
    @property
    def settings(self) -> Settings:
        return self._settings

    @settings.setter
    def settings(self, settings: Settings) -> None:
        """New settings (between operations) come with a new run budget."""
        self._settings = settings
        self.budget = RunBudget(settings.budget)

    @property
    def active(self) -> bool:
        """Whether an operation runs: from its start until just before ``agent_settled`` (whose listeners see
        the session idle)."""
        return self._active

    @property
    def is_idle(self) -> bool:
        return not self._active and self._aside is None

    def check_free(self, *, navigating: bool = False) -> None:
        """Raise :class:`SessionBusyError` while an operation is active, a manual compaction runs or the session
        tree is being navigated (``navigating``: the session is asked to go elsewhere in its tree)."""
        if self._active and navigating:
            raise SessionBusyError("Wait for the current response to finish before navigating the session tree.")
        if self._active:
            raise SessionBusyError(
                "Agent is already processing. Use steer() or follow_up() to queue the message, or wait for it."
            )
        if self._aside == "compaction":
            raise SessionBusyError(
                "Cannot submit a prompt while compaction is in progress. Wait for compaction to finish and retry."
            )
        if self._aside == "navigation":
            raise SessionBusyError(
                "Cannot submit a prompt while a branch summary is being written. Wait for it, or abort it."
            )

    async def wait_for_idle(self) -> None:
        """Return once the session is idle (after ``agent_settled`` was emitted)."""
        while not self.is_idle:
            idle = self._idle
            if idle is None:
                return
            await idle.wait()

    @contextmanager
    def aside(self, what: str) -> Iterator[None]:
        """The session is busy (not idle) while a manual compaction (``what="compaction"``) or a tree navigation
        (``"navigation"``) runs inside this block."""
        self._aside = what
        self._idle = asyncio.Event()
        try:
            yield
        finally:
            self._aside = None
            self._idle.set()

    # -- running ------------------------------------------------------------------------------------------
    async def run(self, start: Callable[[], Awaitable[None]]) -> None:
        """Run ``start`` (which runs the agent), then continue as the triage says, until the session settles."""
        self._active = True
        self._idle = asyncio.Event()
        self._aborted = False
        self._abort_reason = None
        self._last_assistant = None
        self._reply_aborted = False
        try:  # from here on, whatever fails, the operation settles (one agent_settled) and abort returns
            self.budget.start()
            self._timers.arm_wall(self._settings, self.budget)
            await start()
            while await self._after_run():
                await self._agent.continue_()
        finally:
            self._timers.cancel()
            # This operation's own end: the transcript's last reply may be an earlier run's (a failed overflow
            # recovery takes this operation's prompt and reply out of it).
            aborted = self._aborted or self._reply_aborted
            self._active = False
            self._listeners.emit(AgentSettledEvent(aborted))
            self._idle.set()

    async def _after_run(self) -> bool:
        """Pi's post-run triage (§7.3): retry, report exhaustion, compact, deliver queued messages."""
        message, self._last_assistant = self._last_assistant, None
        if message is None:
            return False
        if self._aborted or message.stop_reason == "aborted":  # stop means stop: nothing continues
            return False
        decision = self._retry.decision(message)
        if decision.retry and await self._retry.retry(message, decision.delay_ms):
            return True
        self._retry.gave_up(message)
        if await self._compactor.check(message):
            return True  # an overflow was compacted: retry the turn
        return not self._aborted and self._agent.has_queued_messages()

    # -- stopping -----------------------------------------------------------------------------------------
    def abort(self) -> None:
        """Stop the operation (run, retry backoff, compaction, branch summary) without waiting; it settles as
        aborted."""
        if self._active or self._aside is not None:
            self._aborted = True
        self.abort_all()

    def abort_all(self, reason: object = "aborted") -> None:
        """Abort the retry backoff, then a compaction, then a branch summary (seed 002's order), then the agent's
        run, without waiting."""
        self._retry.abort()
        self._compactor.abort()
        self._navigator.abort()
        self._agent.abort(reason)

    def stop(self, event: BudgetExceededEvent) -> None:
        """A budget or the turn timeout ran out: report it and abort with the reason."""
        if self._aborted or not self._active:
            return
        self._listeners.emit(event)
        self._aborted = True
        self._abort_reason = event.reason
        self.abort_all(event.reason)

    def dispose(self) -> None:
        """Abort everything without waiting, cancel the timers and detach from the agent."""
        self.abort_all()
        self._timers.cancel()
        self._unsubscribe()

    # -- what the tool guard asks (RunHooks) ----------------------------------------------------------------
    def deadlines(self) -> list[Deadline]:
        """The run's deadlines (turn timeout, wall-time budget), for tools that block the event loop."""
        return self._timers.deadlines()

    def abort_run(self) -> None:
        """A tool raised ``AbortRun`` (the kernel's interrupt ended the agent's code): abort as Stop does."""
        if self._active:
            self._aborted = True
        self.abort_all()

    # -- the agent's events ---------------------------------------------------------------------------------
    def on_agent_event(self, event: AgentEvent, signal: AbortSignal) -> None:
        """Session bookkeeping around each agent event, then the event for the session's listeners."""
        if type(event) is MessageUpdateEvent:  # the per-delta hot path: nothing to keep, just pass it on
            if self._replies.redactor is None:
                self._listeners.emit(event)
            else:
                self._replies.update(event)  # a key the session knows may be streaming: held back, then redacted
            return
        match event:
            case MessageStartEvent(message=UserMessage() as message):
                self._compactor.user_message_started()
                self._queue.delivered(message)
            case MessageStartEvent(message=AssistantMessage()):
                self._replies.start()
            case TurnStartEvent():
                self._timers.arm_turn(self._settings)
            case MessageEndEvent(message=message):
                self._replies.end(message)
                self._record(message)
            case TurnEndEvent():
                self._timers.disarm("turn", fire_if_due=True)
            case _:
                pass
        match event:
            case AgentRunEndEvent(messages=messages):
                self._listeners.emit(
                    AgentEndEvent(messages, will_retry=not self._aborted and self._retry.will_retry(messages))
                )
            case (
                AgentStartEvent()
                | TurnStartEvent()
                | TurnEndEvent()
                | MessageStartEvent()
                | MessageUpdateEvent()
                | MessageEndEvent()
                | ToolExecutionStartEvent()
                | ToolExecutionUpdateEvent()
                | ToolExecutionEndEvent()
            ):
                self._listeners.emit(event)
        match event:
            case MessageEndEvent(message=AssistantMessage() as message):
                self._after_reply(message)
            case TurnEndEvent() if self._active:
                exceeded = self.budget.check(before_request=False)
                if exceeded is not None:
                    self.stop(exceeded)
            case _:
                pass

    def _record(self, message: AgentMessage) -> None:
        """At ``message_end``, before anyone is told: the stop reason of a budget abort, the session file
        (durable first, unlike Pi), the budget's usage."""
        if isinstance(message, AssistantMessage) and message.stop_reason == "aborted" and self._abort_reason:
            message.error_message = self._abort_reason
        if not isinstance(message, CompactionSummaryMessage):
            self.journal.record_model(self._agent.state.model)  # a resumed session knows its model (model_change)
            self.journal.append_message(message)
        if isinstance(message, AssistantMessage):
            self.budget.record(message, self._agent.state.model)

    def _after_reply(self, message: AssistantMessage) -> None:
        self._last_assistant = message
        self._reply_aborted = message.stop_reason == "aborted"
        self._compactor.reply_ended(message)
        self._retry.reply_ended(message)

    async def before_request(
        self, request: RequestContext, signal: AbortSignal
    ) -> TurnUpdate | Mapping[str, Any] | None:
        """The agent's ``prepare_request`` hook: check the budget before each model request, then the user's."""
        if self._active:
            exceeded = self.budget.check(before_request=True)
            if exceeded is not None:
                self.stop(exceeded)
                return None
        if self._user_prepare_request is not None:
            return await maybe_await(call_hook(self._user_prepare_request, request, signal))
        return None
