"""``AgentSession``: the host layer around an ``Agent`` (Pi's coding-agent ``AgentSession``).

An *operation* (``prompt`` or ``continue_``) runs the agent, then triages each run's end: a retryable error
is retried after a backoff (``auto_retry_start``/``auto_retry_end``), a context overflow is compacted and
retried once, messages queued meanwhile are delivered. When nothing continues automatically, the session
becomes idle and emits ``agent_settled`` — exactly once per operation.

Where this differs from Pi 0.84, on purpose:

* **Stop means stop.** After ``abort()`` (or a budget breach, or an aborted reply) no new run starts, even
  with messages still queued: they stay queued, visible through ``queue_update``, delivered by the next
  ``prompt``/``continue_`` or handed back by ``clear_queue()``. Pi 0.84 continues straight away to deliver
  them. Steering drained but not yet delivered when the abort lands goes back to the queue (Pi #9340).
* ``abort()`` also stops a running compaction and the retry backoff.
* An aborted retried reply ends the retry with ``auto_retry_end(success=False)`` (Pi reports success).
* Tools that ignore the abort signal are cancelled after ``timeouts.abort_grace_ms``; run budgets and a turn
  timeout are built in (see ``Settings``).

Session listeners are called synchronously, in order, like Pi's; an exception in one is logged and does not
reach the run. Compaction is done by the session's :class:`~._compactor.Compactor`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

from ..agent import (
    Agent,
    AgentEvent,
    AgentMessage,
    AgentStartEvent,
    AgentTool,
    Hooks,
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
from ..ai import (
    AbortController,
    AbortSignal,
    AssistantMessage,
    Deadline,
    ImageContent,
    Model,
    StreamFn,
    TextContent,
    UserMessage,
    abortable_sleep,
    maybe_await,
)
from ..ai import stream as default_stream
from ..ai.messages import text_of
from ..ai.overflow import is_context_overflow
from ..ai.retry import RetryDecision
from ._approval import ApprovalGate, Approver
from ._compactor import CompactionCancelled, Compactor, SummarizationFailed
from ._events import (
    AgentEndEvent,
    AgentSettledEvent,
    AutoRetryEndEvent,
    AutoRetryStartEvent,
    BudgetExceededEvent,
    CompactionEndEvent,
    QueueUpdateEvent,
    SessionEvent,
    SessionListener,
)
from ._guard import RunBudget, guard_tool
from ._redact import SessionKeys
from ._redact_reply import ReplyRedaction
from ._settings import ApprovalMode, Settings
from ._store import SessionStore
from ._store_load import LoadedSession
from ._summary import CompactionPlan, CompactionSummaryMessage

__all__ = ["AgentSession", "QueueSnapshot", "SessionBusyError"]

_log = logging.getLogger(__name__)


class SessionBusyError(RuntimeError):
    """``prompt()``/``continue_()`` while an operation is active: queue with ``steer``/``follow_up`` instead."""


class QueueSnapshot(NamedTuple):
    steering: list[str]
    follow_up: list[str]


class AgentSession:
    """An agent with Pi's session behaviour plus budgets, timeouts and a session file.

    ``stream_fn`` defaults to :func:`pi_notebook.ai.stream` (the HTTP providers, chosen by ``model.api``).
    ``store`` (a :class:`SessionStore`) records every message that reaches ``message_end``; a store that
    opened an existing file seeds the transcript with what it loaded. ``hooks`` are the agent's (the session
    checks its budgets before calling ``hooks.prepare_request``). Other keyword arguments go to
    :class:`~pi_notebook.agent.Agent` (``system_prompt``, ``thinking_level``, ...).

    ``approver`` asks the user before a tool runs, as the setting ``tools.approval`` says (see ``_approval``;
    without one every tool runs). It runs after ``hooks.before_tool_call``, which may block a call first.

    Tools run through a guard (``_guard.guard_tool``): their timeout and abort grace, and the redaction of every
    key the session knows (its ``api_key``, what ``get_api_key`` returned, credential headers, the environment
    variables that hold keys, the model's ``key_env`` among them) from their results, updates and error texts
    (``_redact``); the tools keep those variables out of the code they run. The model's replies are redacted too,
    as they stream and before they are recorded (``_redact_reply``).
    """

    def __init__(
        self,
        *,
        model: Model,
        stream_fn: StreamFn | None = None,
        tools: Iterable[AgentTool] = (),
        settings: Settings | Mapping[str, Any] | None = None,
        store: SessionStore | None = None,
        messages: Iterable[AgentMessage] = (),
        hooks: Hooks | None = None,
        approver: Approver | None = None,
        **agent_options: Any,
    ) -> None:
        if settings is not None and not isinstance(settings, Settings | Mapping):
            raise TypeError(f"settings must be Settings or a dict, not {type(settings).__name__}")
        settings = settings if isinstance(settings, Settings) else Settings(**(settings or {}))
        self.store = store
        hooks = hooks or Hooks()
        self._approval = ApprovalGate(hooks.before_tool_call, lambda: self._settings.tools.approval)
        self._approval.approver = approver
        self._user_prepare_request: PrepareRequestHook | None = hooks.prepare_request
        history = list(store.loaded.messages) if store is not None and store.loaded is not None else list(messages)
        self.agent = Agent(
            stream_fn=stream_fn or default_stream,
            model=model,
            messages=history,
            hooks=replace(hooks, prepare_request=self._before_request, before_tool_call=self._approval),
            **agent_options,
        )
        self._keys = SessionKeys(self.agent)
        self._replies = ReplyRedaction(self._keys, self._emit)
        self.agent.hooks = replace(self.agent.hooks, get_api_key=self._keys.wrap(self.agent.hooks.get_api_key))
        self._tools = list(tools)
        self._timers: dict[str, _Timer] = {}
        self._hooks = _Hooks(self)
        self._listeners: tuple[SessionListener, ...] = ()
        self._active = False
        self._compacting = False
        self._idle: asyncio.Event | None = None
        self._aborted = False
        self._abort_reason: str | None = None
        self._retry_attempt = 0
        self._retry_controller: AbortController | None = None
        self._last_assistant: AssistantMessage | None = None
        self._steering_texts: list[str] = []
        self._follow_up_texts: list[str] = []
        self._unsubscribe_store = store.subscribe(self._emit) if store is not None else None  # write failures
        self._compactor = Compactor(self.agent, settings, store, self._emit)
        self._apply(settings)
        self._unsubscribe_agent = self.agent.subscribe(self._on_agent_event)

    # -- configuration ----------------------------------------------------------------------------------
    @property
    def settings(self) -> Settings:
        return self._settings

    @settings.setter
    def settings(self, settings: Settings) -> None:
        """Apply new settings (queue modes, tool execution and timeouts, provider options, budget).
        Takes effect from the next operation; raises while one is active."""
        if self._active:
            raise SessionBusyError("Settings cannot change while an operation is active.")
        self._apply(settings)

    def _apply(self, settings: Settings) -> None:
        self._settings = settings
        self._compactor.settings = settings
        agent = self.agent
        agent.steering_mode = settings.steering_mode
        agent.follow_up_mode = settings.follow_up_mode
        agent.tool_execution = settings.tool_execution
        provider = settings.retry.provider
        agent.stream_options = replace(
            agent.stream_options,
            max_retries=provider.max_retries,
            max_retry_delay_ms=provider.max_retry_delay_ms,
            timeout_ms=provider.timeout_ms,
            idle_timeout_ms=settings.timeouts.http_idle_ms or None,
            total_timeout_ms=settings.timeouts.http_total_ms or None,
        )
        agent.state.tools = [guard_tool(tool, settings.timeouts, self._keys, self._hooks) for tool in self._tools]
        self.budget = RunBudget(settings.budget)

    @property
    def tools(self) -> list[AgentTool]:
        """The tools as given (the agent holds them wrapped with the timeout guard)."""
        return list(self._tools)

    @tools.setter
    def tools(self, tools: Iterable[AgentTool]) -> None:
        self._tools = list(tools)
        timeouts = self._settings.timeouts
        self.agent.state.tools = [guard_tool(tool, timeouts, self._keys, self._hooks) for tool in self._tools]

    @property
    def approver(self) -> Approver | None:
        """Asks the user before a tool runs (``None``: nobody asks; every tool runs)."""
        return self._approval.approver

    @approver.setter
    def approver(self, approver: Approver | None) -> None:
        self._approval.approver = approver

    @property
    def approved_always(self) -> frozenset[str]:
        """Tools the user allowed "always for this session" (they no longer ask)."""
        return frozenset(self._approval.always)

    def approval_mode(self, tool_name: str) -> ApprovalMode:
        """``"ask"`` or ``"auto"``: what a call of ``tool_name`` does now (the setting, and "always" answers)."""
        return self._approval.mode(tool_name)

    # -- observation ------------------------------------------------------------------------------------
    def __repr__(self) -> str:
        state = "idle" if self.is_idle else "busy"
        model = self.model
        return f"<AgentSession {model.provider}:{model.id} {state}, {len(self.messages)} messages>"

    @property
    def model(self) -> Model:
        return self.agent.state.model

    @model.setter
    def model(self, model: Model) -> None:
        self.agent.state.model = model

    @property
    def messages(self) -> list[AgentMessage]:
        return self.agent.state.messages

    @property
    def is_idle(self) -> bool:
        return not self._active and not self._compacting

    @property
    def is_retrying(self) -> bool:
        return self._retry_controller is not None

    @property
    def retry_attempt(self) -> int:
        return self._retry_attempt

    @property
    def queue(self) -> QueueSnapshot:
        return QueueSnapshot(list(self._steering_texts), list(self._follow_up_texts))

    def subscribe(self, listener: SessionListener) -> Callable[[], None]:
        """Call ``listener(event)`` for every :data:`SessionEvent` (synchronously); returns an unsubscribe
        function."""
        self._listeners = (*self._listeners, listener)

        def unsubscribe() -> None:
            self._listeners = tuple(item for item in self._listeners if item is not listener)

        return unsubscribe

    def _emit(self, event: SessionEvent) -> None:
        for listener in self._listeners:
            try:
                listener(event)
            except Exception:
                _log.exception("session listener %r raised on %s", listener, event.type)

    # -- operations -------------------------------------------------------------------------------------
    async def prompt(self, text: str, images: Sequence[ImageContent] = ()) -> None:
        """Run from a new user message until the session settles. Raises :class:`SessionBusyError` while an
        operation is active (use ``steer``/``follow_up``) or a manual compaction runs."""
        self._check_free()
        message = UserMessage(content=[TextContent(text=text), *images])

        async def start() -> None:
            await self._compactor.check_last_reply()
            await self.agent.prompt(message)

        await self._operation(start)

    async def continue_(self) -> None:
        """Continue from the transcript (queued messages first, from an assistant tail) until settled."""
        self._check_free()
        await self._operation(self.agent.continue_)

    def _check_free(self) -> None:
        if self._active:
            raise SessionBusyError(
                "Agent is already processing. Use steer() or follow_up() to queue the message, or wait for it."
            )
        if self._compacting:
            raise SessionBusyError(
                "Cannot submit a prompt while compaction is in progress. Wait for compaction to finish and retry."
            )

    async def _operation(self, start: Callable[[], Awaitable[None]]) -> None:
        self._active = True
        self._idle = asyncio.Event()
        self._aborted = False
        self._abort_reason = None
        self._last_assistant = None
        try:  # from here on, whatever fails, the operation settles (one agent_settled) and abort returns
            self.budget.start()
            self._arm_wall_timer()
            await start()
            while await self._after_run():
                await self.agent.continue_()
        finally:
            self._cancel_timers()
            last = self._last_transcript_assistant()
            aborted = self._aborted or (last is not None and last.stop_reason == "aborted")
            self._active = False
            self._emit(AgentSettledEvent(aborted))
            self._idle.set()

    async def _after_run(self) -> bool:
        """Pi's post-run triage (§7.3): retry, report exhaustion, compact, deliver queued messages."""
        message, self._last_assistant = self._last_assistant, None
        if message is None:
            return False
        if self._aborted or message.stop_reason == "aborted":  # stop means stop: nothing continues
            return False
        decision = self._retry_decision(message)
        if decision.retry and await self._retry(message, decision.delay_ms):
            return True
        if message.stop_reason == "error" and self._retry_attempt > 0:
            self._emit(AutoRetryEndEvent(False, self._retry_attempt, message.error_message))
            self._retry_attempt = 0
        if await self._compactor.check(message):
            return True  # an overflow was compacted: retry the turn
        return not self._aborted and self.agent.has_queued_messages()

    # -- queues -----------------------------------------------------------------------------------------
    async def steer(self, text: str) -> None:
        """Queue a message for the running operation, delivered after the current turn; when idle, it waits
        for the next ``prompt``/``continue_``."""
        self._steering_texts.append(text)
        self._emit_queue()
        self.agent.steer(text)

    async def follow_up(self, text: str) -> None:
        """Queue a message delivered once the agent would otherwise stop."""
        self._follow_up_texts.append(text)
        self._emit_queue()
        self.agent.follow_up(text)

    def clear_queue(self) -> QueueSnapshot:
        """Take every queued message back (their texts); nothing queued is delivered afterwards."""
        snapshot = QueueSnapshot(self._steering_texts, self._follow_up_texts)
        self._steering_texts, self._follow_up_texts = [], []
        self.agent.clear_all_queues()
        self._emit_queue()
        return snapshot

    def _emit_queue(self) -> None:
        self._emit(QueueUpdateEvent(list(self._steering_texts), list(self._follow_up_texts)))

    def _forget_delivered(self, message: AgentMessage) -> None:
        text = text_of(message) if isinstance(message, UserMessage) else ""
        if not text:
            return
        for queue in (self._steering_texts, self._follow_up_texts):
            if text in queue:
                queue.remove(text)
                self._emit_queue()
                return

    # -- stopping ---------------------------------------------------------------------------------------
    async def abort(self) -> None:
        """Stop the operation (run, retry backoff, compaction) and wait until the session is idle. Queued
        messages stay queued (see ``clear_queue``)."""
        if self._active or self._compacting:
            self._aborted = True
        self._abort_all()
        await self.wait_for_idle()

    def abort_retry(self) -> None:
        """Cancel a retry backoff in progress (the failed reply stays the last word)."""
        if self._retry_controller is not None:
            self._retry_controller.abort("retry cancelled")

    def abort_compaction(self) -> None:
        """Stop a running compaction (its summary request and retry backoff)."""
        self._compactor.abort()

    def _abort_all(self, reason: object = "aborted") -> None:
        """Abort the retry backoff, a compaction and the agent's run, without waiting."""
        self.abort_retry()
        self.abort_compaction()
        self.agent.abort(reason)

    def _stop(self, event: BudgetExceededEvent) -> None:
        """A budget or the turn timeout ran out: report it and abort with the reason."""
        if self._aborted or not self._active:
            return
        self._emit(event)
        self._aborted = True
        self._abort_reason = event.reason
        self._abort_all(event.reason)

    async def wait_for_idle(self) -> None:
        """Return once the session is idle (after ``agent_settled`` was emitted)."""
        while not self.is_idle:
            idle = self._idle
            if idle is None:
                return
            await idle.wait()

    def dispose(self) -> None:
        """Abort everything without waiting, detach from the agent, close the store (listeners still hear
        whether its last write failed), drop listeners."""
        self._abort_all()
        self._cancel_timers()
        self._unsubscribe_agent()
        if self.store is not None:
            self.store.close()
        if self._unsubscribe_store is not None:
            self._unsubscribe_store()
        self._listeners = ()

    # -- the session file -------------------------------------------------------------------------------
    def resume(self, path: str | Path) -> LoadedSession:
        """Continue the session file at ``path`` (ours or Pi's): its transcript (as :func:`load_session` reads
        it) replaces this session's, and new messages are appended to it. Returns what was loaded (its
        ``problems`` say what could not be read). Raises :class:`SessionBusyError` while an operation is active,
        :class:`SessionFileError` for a file that must not be continued, ``OSError`` (``FileNotFoundError``) if
        it cannot be opened; on any of these nothing changes."""
        self._check_free()
        if not Path(path).is_file():
            raise FileNotFoundError(f"no session file {path}")
        store = SessionStore(path)
        loaded = store.loaded or LoadedSession(header={})
        self.use_store(store, messages=loaded.messages)
        return loaded

    def use_store(self, store: SessionStore | None, *, messages: Iterable[AgentMessage] | None = None) -> None:
        """Record from now on in ``store`` (``None``: nowhere); the previous store is closed. ``messages``, if
        given, replace the transcript (``%pi new`` passes ``[]``). Raises :class:`SessionBusyError` while an
        operation is active."""
        self._check_free()
        if self._unsubscribe_store is not None:
            self._unsubscribe_store()
        if self.store is not None and self.store is not store:
            self.store.close()
        self.store = store
        self._compactor.store = store
        self._unsubscribe_store = store.subscribe(self._emit) if store is not None else None
        if messages is not None:
            self.agent.state.messages = list(messages)
            self._last_assistant = None

    # -- compaction -------------------------------------------------------------------------------------
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
            outcome = await self._compactor.compact("manual", instructions=instructions)
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
        return self._compactor.plan()

    # -- the agent's events -----------------------------------------------------------------------------
    def _on_agent_event(self, event: AgentEvent, signal: AbortSignal) -> None:
        """Session bookkeeping around each agent event, then the event for the session's listeners."""
        if type(event) is MessageUpdateEvent:  # the per-delta hot path: nothing to keep, just pass it on
            if self._replies.redactor is None:
                self._emit(event)
            else:
                self._replies.update(event)
            return
        match event:
            case MessageStartEvent(message=UserMessage() as message):
                self._compactor.user_message_started()
                self._forget_delivered(message)
            case MessageStartEvent(message=AssistantMessage()):
                self._replies.start()
            case TurnStartEvent():
                self._arm_turn_timer()
            case MessageEndEvent(message=message):
                self._replies.end(message)
                self._record(message)
            case TurnEndEvent():
                self._disarm("turn", fire_if_due=True)
            case _:
                pass
        match event:
            case AgentRunEndEvent(messages=messages):
                self._emit(AgentEndEvent(messages, will_retry=self._will_retry(messages)))
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
                self._emit(event)
        match event:
            case MessageEndEvent(message=AssistantMessage() as message):
                self._after_reply(message)
            case TurnEndEvent() if self._active:
                exceeded = self.budget.check(before_request=False)
                if exceeded is not None:
                    self._stop(exceeded)
            case _:
                pass

    def _record(self, message: AgentMessage) -> None:
        """At ``message_end``, before anyone is told: the stop reason of a budget abort, the session file
        (durable first, unlike Pi), the budget's usage."""
        if isinstance(message, AssistantMessage) and message.stop_reason == "aborted" and self._abort_reason:
            message.error_message = self._abort_reason
        if self.store is not None and not isinstance(message, CompactionSummaryMessage):
            self.store.append_message(message)
        if isinstance(message, AssistantMessage):
            self.budget.record(message)

    def _after_reply(self, message: AssistantMessage) -> None:
        self._last_assistant = message
        self._compactor.reply_ended(message)
        if self._retry_attempt > 0 and message.stop_reason != "error":
            success = message.stop_reason != "aborted"
            self._emit(AutoRetryEndEvent(success, self._retry_attempt, None if success else message.error_message))
            self._retry_attempt = 0

    async def _before_request(
        self, request: RequestContext, signal: AbortSignal
    ) -> TurnUpdate | Mapping[str, Any] | None:
        if self._active:
            exceeded = self.budget.check(before_request=True)
            if exceeded is not None:
                self._stop(exceeded)
                return None
        if self._user_prepare_request is not None:
            return await maybe_await(call_hook(self._user_prepare_request, request, signal))
        return None

    # -- retry (layer 3) --------------------------------------------------------------------------------
    def _retry_decision(self, message: AssistantMessage) -> RetryDecision:
        """Pi's ``_isRetryableError`` (not a context overflow, and retryable) within the retry budget, with the
        delay: the server's ``retry-after`` where the provider saw one (capped), else the backoff."""
        if is_context_overflow(message, self.model.context_window or 0):
            return RetryDecision(False)
        return self.settings.retry.decide(message, self._retry_attempt + 1)

    def _will_retry(self, messages: Sequence[AgentMessage]) -> bool:
        if self._aborted:
            return False
        last = next((m for m in reversed(messages) if isinstance(m, AssistantMessage)), None)
        return last is not None and self._retry_decision(last).retry

    async def _retry(self, message: AssistantMessage, delay_ms: int) -> bool:
        """Report the retry, drop the failed reply from what the model sees next, wait ``delay_ms`` (abortable:
        ``abort_retry()``); true when the turn should be run again."""
        self._retry_attempt += 1
        error_text = message.error_message or "Unknown error"
        self._emit(AutoRetryStartEvent(self._retry_attempt, self.settings.retry.max_retries, delay_ms, error_text))
        messages = self.agent.state.messages
        if messages and messages[-1].role == "assistant":
            messages.pop()  # the failed reply stays in the session file, not in what the model sees next
        controller = self._retry_controller = AbortController()
        try:
            slept = await abortable_sleep(delay_ms / 1000, controller.signal)
        finally:
            self._retry_controller = None
        if not slept:
            attempt, self._retry_attempt = self._retry_attempt, 0
            self._emit(AutoRetryEndEvent(False, attempt, "Retry cancelled"))
            return False
        return True

    # -- timers -----------------------------------------------------------------------------------------
    def _arm_wall_timer(self) -> None:
        limit = self.settings.budget.wall_time_ms
        if limit:
            self._arm("wall", limit, lambda: BudgetExceededEvent("wall_time", limit, round(self.budget.elapsed_ms)))

    def _arm_turn_timer(self) -> None:
        limit = self.settings.timeouts.turn_ms
        if limit:
            started = time.monotonic()  # "used" is measured when the timer fires: later if a tool blocked the loop

            def used_ms() -> int:
                return max(limit, round((time.monotonic() - started) * 1000))

            self._arm("turn", limit, lambda: BudgetExceededEvent("turn_time", limit, used_ms()))

    def _arm(self, name: str, limit_ms: int, event: Callable[[], BudgetExceededEvent]) -> None:
        self._disarm(name)

        def fire() -> None:
            self._stop(event())

        handle = asyncio.get_running_loop().call_later(limit_ms / 1000, fire)
        reason = BudgetExceededEvent(event().kind, limit_ms, limit_ms).reason  # as it will read then
        self._timers[name] = _Timer(handle, Deadline(time.monotonic() + limit_ms / 1000, reason), fire)

    def _disarm(self, name: str, *, fire_if_due: bool = False) -> None:
        """Cancel a timer; with ``fire_if_due``, one whose time has passed fires now instead (it could not
        fire while a tool blocked the event loop)."""
        timer = self._timers.pop(name, None)
        if timer is None:
            return
        timer.handle.cancel()
        if fire_if_due and time.monotonic() >= timer.deadline.at:
            timer.fire()

    def _cancel_timers(self) -> None:
        for name in list(self._timers):
            self._disarm(name)

    def _abort_from_tool(self) -> None:
        """A tool raised ``AbortRun`` (the kernel's interrupt ended the agent's code): abort as Stop does."""
        if self._active:
            self._aborted = True
        self._abort_all()

    def _last_transcript_assistant(self) -> AssistantMessage | None:
        for message in reversed(self.agent.state.messages):
            if isinstance(message, AssistantMessage):
                return message
        return None


class _Hooks:
    """The session as ``guard_tool`` sees it (``RunHooks``): the run's deadlines, and abort from a tool."""

    __slots__ = ("_session",)

    def __init__(self, session: AgentSession) -> None:
        self._session = session

    def deadlines(self) -> list[Deadline]:
        return [timer.deadline for timer in self._session._timers.values()]

    def abort_run(self) -> None:
        self._session._abort_from_tool()


class _Timer(NamedTuple):
    handle: asyncio.TimerHandle
    deadline: Deadline
    fire: Callable[[], None]
