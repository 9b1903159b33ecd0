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
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

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
    AbortSignal,
    AssistantMessage,
    BusyError,
    Deadline,
    ImageContent,
    Model,
    StreamFn,
    TextContent,
    UserMessage,
    maybe_await,
)
from ..ai import stream as default_stream
from ._approval_gate import ApprovalGate, Approver
from ._compactor import CompactionCancelled, Compactor, SummarizationFailed
from ._events import (
    AgentEndEvent,
    AgentSettledEvent,
    BudgetExceededEvent,
    CompactionEndEvent,
    SessionEvent,
    SessionListener,
)
from ._guard import RunBudget, guard_tool
from ._policy import site_policy
from ._queues import QueueSnapshot, QueueTexts
from ._redact import SessionKeys
from ._settings import ApprovalMode, Settings
from ._store import SessionStore
from ._store_load import LoadedSession
from ._summary import CompactionPlan, CompactionSummaryMessage
from ._timers import RunTimers
from ._turn_retry import TurnRetry

__all__ = ["AgentSession", "QueueSnapshot", "SessionBusyError"]

_log = logging.getLogger(__name__)


class SessionBusyError(BusyError):
    """``prompt()``/``continue_()`` while an operation is active: queue with ``steer``/``follow_up`` instead."""


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
    key the session knows (its ``api_key``, what ``get_api_key`` returned, the provider environment variables)
    from their results, updates and error texts (``_redact``).
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
        self.policy = site_policy()
        """The site policy this session obeys (``_policy``: its settings, model, tools and approvals)."""
        settings = self.policy.enforce(settings)
        self.policy.check_model(model.provider, model.id, model.base_url)
        tools = list(tools)
        self.policy.check_tools(tool.name for tool in tools)
        self.store = store
        hooks = hooks or Hooks()
        self._approval = ApprovalGate(
            hooks.before_tool_call, lambda: self._settings.tools.approval, self.policy.must_ask
        )
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
        if self.agent.session_id is None:  # keys the provider's prompt cache (Pi's AgentSession does the same)
            self.agent.session_id = (store.session_id if store is not None else None) or uuid.uuid4().hex
        self._keys = SessionKeys(self.agent)
        self.agent.hooks = replace(self.agent.hooks, get_api_key=self._keys.wrap(self.agent.hooks.get_api_key))
        self._tools = list(tools)
        self._timers = RunTimers(self._stop)
        self._hooks = _Hooks(self)
        self._listeners: tuple[SessionListener, ...] = ()
        self._active = False
        self._compacting = False
        self._idle: asyncio.Event | None = None
        self._aborted = False
        self._abort_reason: str | None = None
        self._retry = TurnRetry(self.agent, lambda: self._settings, self._emit)
        self._last_assistant: AssistantMessage | None = None
        self._queue = QueueTexts(self.agent, self._emit)
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
        self._apply(self.policy.enforce(settings))

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
            cache_retention=settings.cache_retention,
        )
        self.budget = RunBudget(settings.budget)
        self._guard_tools()

    def _guard_tools(self) -> None:
        timeouts = self._settings.timeouts
        self.agent.state.tools = [guard_tool(tool, timeouts, self._keys, self._hooks) for tool in self._tools]

    @property
    def tools(self) -> list[AgentTool]:
        """The tools as given (the agent holds them wrapped with the timeout guard)."""
        return list(self._tools)

    @tools.setter
    def tools(self, tools: Iterable[AgentTool]) -> None:
        tools = list(tools)
        self.policy.check_tools(tool.name for tool in tools)
        self._tools = tools
        self._guard_tools()

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
        """``"ask"`` or ``"auto"``: what a call of the session's tool ``tool_name`` does now (the setting, the
        tool's default and "always" answers). Raises ``KeyError`` for a tool the session does not have."""
        tool = next((tool for tool in self.tools if tool.name == tool_name), None)
        if tool is None:
            raise KeyError(f"the session has no tool {tool_name!r}")
        return self._approval.mode(tool)

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
        """Switch the model; raises ``PolicyError`` (and keeps the model) if the site policy does not allow it."""
        self.policy.check_model(model.provider, model.id, model.base_url)
        self.agent.state.model = model

    @property
    def messages(self) -> list[AgentMessage]:
        return self.agent.state.messages

    @property
    def is_idle(self) -> bool:
        return not self._active and not self._compacting

    @property
    def is_retrying(self) -> bool:
        return self._retry.waiting

    @property
    def retry_attempt(self) -> int:
        return self._retry.attempt

    @property
    def queue(self) -> QueueSnapshot:
        return self._queue.snapshot()

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
            self._timers.arm_wall(self._settings, self.budget)
            await start()
            while await self._after_run():
                await self.agent.continue_()
        finally:
            self._timers.cancel()
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
        decision = self._retry.decision(message)
        if decision.retry and await self._retry.retry(message, decision.delay_ms):
            return True
        self._retry.gave_up(message)
        if await self._compactor.check(message):
            return True  # an overflow was compacted: retry the turn
        return not self._aborted and self.agent.has_queued_messages()

    # -- queues -----------------------------------------------------------------------------------------
    async def steer(self, text: str) -> None:
        """Queue a message for the running operation, delivered after the current turn; when idle, it waits
        for the next ``prompt``/``continue_``."""
        self._queue.steer(text)

    async def follow_up(self, text: str) -> None:
        """Queue a message delivered once the agent would otherwise stop."""
        self._queue.follow_up(text)

    def clear_queue(self) -> QueueSnapshot:
        """Take every queued message back (their texts); nothing queued is delivered afterwards."""
        return self._queue.clear()

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
        self._retry.abort()

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
        self._timers.cancel()
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
        if store is not None and store.session_id:
            self.agent.session_id = store.session_id  # a new session file starts a new prompt cache
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
            self._emit(event)
            return
        match event:
            case MessageStartEvent(message=UserMessage() as message):
                self._compactor.user_message_started()
                self._queue.delivered(message)
            case TurnStartEvent():
                self._timers.arm_turn(self._settings)
            case MessageEndEvent(message=message):
                self._record(message)
            case TurnEndEvent():
                self._timers.disarm("turn", fire_if_due=True)
            case _:
                pass
        match event:
            case AgentRunEndEvent(messages=messages):
                self._emit(AgentEndEvent(messages, will_retry=not self._aborted and self._retry.will_retry(messages)))
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
            self.budget.record(message, self.agent.state.model)

    def _after_reply(self, message: AssistantMessage) -> None:
        self._last_assistant = message
        self._compactor.reply_ended(message)
        self._retry.reply_ended(message)

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
        return self._session._timers.deadlines()

    def abort_run(self) -> None:
        self._session._abort_from_tool()
