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
* ``abort()`` also stops a running compaction and branch summary: it aborts the retry backoff, then the
  compaction, then the branch summary, then the run (seed 002's order; Pi 0.83's ``abort()`` aborts only the retry
  and the run, and its Escape key the compaction or the summary on its own).
* The session tree (``_tree``, ``_navigator``): ``branch_to`` writes a leaf move to the file (Pi 0.83 keeps it in
  memory only), and a tree navigation that writes a branch summary makes the session busy (Pi's stays idle).
* An aborted retried reply ends the retry with ``auto_retry_end(success=False)`` (Pi reports success).
* Tools that ignore the abort signal are cancelled after ``timeouts.abort_grace_ms``; run budgets and a turn
  timeout are built in (see ``Settings``).

``approver`` asks the user before a tool runs, as the setting ``tools.approval`` says (see ``_approval``; without one
every tool runs). It runs after ``hooks.before_tool_call``, which may block a call first.

Tools run through a guard (``_guard.guard_tool``): their timeout and abort grace, and the redaction of every key the
session knows (its ``api_key``, what ``get_api_key`` returned, credential headers, the environment variables that
hold keys, the model's ``key_env`` among them) from their results, updates and error texts (``_redact``); the tools
keep those variables out of the code they run. The model's replies are redacted too, as they stream and before they
are recorded (``_redact_reply``).

Session listeners are called synchronously, in order, like Pi's; an exception in one is logged and does not
reach the run. The session is a façade over the objects that do the work: its
:class:`~._operation.Operation` (running an operation, stopping it, the bookkeeping at each agent event),
:class:`~._agent_setup.AgentSetup` (the agent's options from the settings, its guarded tools),
:class:`~._compactor.Compactor`, :class:`~._turn_retry.TurnRetry`, :class:`~._queues.QueueTexts` and
:class:`~._listeners.Listeners`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..agent import Agent, AgentMessage, AgentTool, Hooks
from ..ai import ImageContent, Model, StreamFn, TextContent, UserMessage, known_during_call, known_secrets
from ..ai import stream as default_stream
from ._agent_setup import AgentSetup
from ._approval_gate import ApprovalGate, Approver
from ._budget import RunBudget
from ._compactor import Compactor
from ._events import SessionListener
from ._listeners import Listeners
from ._navigator import Navigator
from ._operation import Operation, SessionBusyError
from ._policy import site_policy
from ._queues import QueueSnapshot, QueueTexts
from ._redact import SessionKeys
from ._redact_reply import ReplyRedaction
from ._session_file import SessionFile
from ._session_tree import SessionTreeMethods
from ._settings import ApprovalMode, Settings
from ._store import SessionStore
from ._store_load import LoadedSession
from ._summary import CompactionPlan
from ._turn_retry import TurnRetry

__all__ = ["AgentSession", "QueueSnapshot", "SessionBusyError"]


class AgentSession(SessionTreeMethods):
    """An agent with Pi's session behaviour plus budgets, timeouts and a session file.

    ``stream_fn`` defaults to :func:`pi_notebook.ai.stream` (the HTTP providers, chosen by ``model.api``).
    ``store`` (a :class:`SessionStore`) records every message that reaches ``message_end``; a store that
    opened an existing file seeds the transcript with what it loaded. Without one the entries are kept in memory
    (``_journal``), so the session tree works the same. ``hooks`` are the agent's (the session
    checks its budgets before calling ``hooks.prepare_request``). Other keyword arguments go to
    :class:`~pi_notebook.agent.Agent` (``system_prompt``, ``thinking_level``, ...). ``approver`` asks the user
    before a tool runs; the module docstring says how tools are guarded and keys redacted.
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
        self.policy.check_model(model)
        tools = list(tools)
        self.policy.check_tools(tool.name for tool in tools)
        self._listeners = Listeners()
        emit = self._listeners.emit
        hooks = hooks or Hooks()
        self._approval = ApprovalGate(
            hooks.before_tool_call, lambda: self._settings.tools.approval, self.policy.must_ask
        )
        self._approval.approver = approver
        history = list(store.loaded.messages) if store is not None and store.loaded is not None else list(messages)
        agent = self.agent = Agent(
            stream_fn=stream_fn or default_stream,
            model=model,
            messages=history,
            hooks=replace(hooks, before_tool_call=self._approval),
            **agent_options,
        )
        if agent.session_id is None:  # keys the provider's prompt cache (Pi's AgentSession does the same)
            agent.session_id = (store.session_id if store is not None else None) or uuid.uuid4().hex
        self._keys = SessionKeys(agent)
        replies = ReplyRedaction(self._keys, emit)
        self._retry = TurnRetry(agent, lambda: self._settings, emit)
        self._queue = QueueTexts(agent, emit)
        self._file = file = SessionFile(store, history, emit)
        self._compactor = Compactor(agent, settings, file.journal, emit)
        self._navigator = Navigator(agent, file.journal, lambda: self._settings, emit)
        self._operation = Operation(
            agent,
            retry=self._retry,
            compactor=self._compactor,
            navigator=self._navigator,
            queue=self._queue,
            settings=settings,
            journal=file.journal,
            listeners=self._listeners,
            replies=replies,
        )
        file.attach(self._compactor, self._navigator, self._operation)
        agent.hooks = replace(agent.hooks, get_api_key=self._keys.wrap(agent.hooks.get_api_key))
        self._setup = AgentSetup(agent, tools, keys=self._keys, run=self._operation)
        self._apply(settings)

    # -- configuration ----------------------------------------------------------------------------------
    @property
    def settings(self) -> Settings:
        return self._settings

    @settings.setter
    def settings(self, settings: Settings) -> None:
        """Apply new settings (queue modes, tool execution and timeouts, provider options, budget).
        Takes effect from the next operation; raises while one is active."""
        if self._operation.active:
            raise SessionBusyError("Settings cannot change while an operation is active.")
        self._apply(self.policy.enforce(settings))

    def _apply(self, settings: Settings) -> None:
        self._settings = settings
        self._compactor.settings = settings
        self._operation.settings = settings
        self._setup.apply(settings)

    @property
    def tools(self) -> list[AgentTool]:
        """The tools as given (the agent holds them wrapped with the timeout guard)."""
        return self._setup.tools

    @tools.setter
    def tools(self, tools: Iterable[AgentTool]) -> None:
        tools = list(tools)
        self.policy.check_tools(tool.name for tool in tools)
        self._setup.tools = tools

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

    def secret_keys(self) -> list[str]:
        """The keys this session redacts from tool output (see ``_redact``). For redacting only: never show, log or
        send them. Inside one of its tool calls they are the ones the call started with (the environment variables
        holding keys are hidden from the agent's code meanwhile, so they are not read again then)."""
        known = known_secrets()
        return list(known.values) if known_during_call() else self._keys()

    def approval_mode(self, tool_name: str) -> ApprovalMode:
        """``"ask"`` or ``"auto"``: what a call of the session's tool ``tool_name`` does now (the setting, the
        tool's default and "always" answers). Raises ``KeyError`` for a tool the session does not have."""
        tool = self._setup.find(tool_name)
        if tool is None:
            raise KeyError(f"the session has no tool {tool_name!r}")
        return self._approval.mode(tool)

    @property
    def store(self) -> SessionStore | None:
        """The session file's store (``None``: nothing is saved; the entries are kept in memory)."""
        return self._file.store

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
        self.policy.check_model(model)
        self.agent.state.model = model

    @property
    def messages(self) -> list[AgentMessage]:
        return self.agent.state.messages

    @property
    def is_idle(self) -> bool:
        return self._operation.is_idle

    @property
    def budget(self) -> RunBudget:
        """The run budget: its limits (``settings.budget``) and what the current or last operation used."""
        return self._operation.budget

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
        function. An exception in a listener is logged and goes no further."""
        return self._listeners.subscribe(listener)

    # -- operations -------------------------------------------------------------------------------------
    async def prompt(self, text: str, images: Sequence[ImageContent] = ()) -> None:
        """Run from a new user message until the session settles. Raises :class:`SessionBusyError` while an
        operation is active (use ``steer``/``follow_up``) or a manual compaction runs."""
        self._operation.check_free()
        message = UserMessage(content=[TextContent(text=text), *images])

        async def start() -> None:
            await self._compactor.check_last_reply()
            await self.agent.prompt(message)

        await self._operation.run(start)

    async def continue_(self) -> None:
        """Continue from the transcript (queued messages first, from an assistant tail) until settled."""
        self._operation.check_free()
        await self._operation.run(self.agent.continue_)

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
        """Stop the operation and wait until the session is idle: the retry backoff, then a compaction, then a
        branch summary, then the run (seed 002's order). Queued messages stay queued (see ``clear_queue``)."""
        self._operation.abort()
        await self.wait_for_idle()

    def abort_retry(self) -> None:
        """Cancel a retry backoff in progress (the failed reply stays the last word)."""
        self._retry.abort()

    def abort_compaction(self) -> None:
        """Stop a running compaction (its summary request and retry backoff)."""
        self._compactor.abort()

    async def wait_for_idle(self) -> None:
        """Return once the session is idle (after ``agent_settled`` was emitted)."""
        await self._operation.wait_for_idle()

    def dispose(self) -> None:
        """Abort everything without waiting, detach from the agent, close the store (listeners still hear
        whether its last write failed), drop listeners."""
        self._operation.dispose()
        self._file.close()
        self._listeners.clear()

    # -- the session file -------------------------------------------------------------------------------
    def resume(self, path: str | Path) -> LoadedSession:
        """Continue the session file at ``path`` (ours or Pi's): its transcript (as :func:`load_session` reads
        it) replaces this session's, and new messages are appended to it. Returns what was loaded (its
        ``problems`` say what could not be read). Raises :class:`SessionBusyError` while an operation is active,
        :class:`SessionFileError` for a file that must not be continued, ``OSError`` (``FileNotFoundError``) if
        it cannot be opened; on any of these nothing changes."""
        self._operation.check_free()
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
        self._operation.check_free()
        if messages is not None:
            self.agent.state.messages = list(messages)
        self._file.use(store, self.agent.state.messages)
        if store is not None and store.session_id:
            self.agent.session_id = store.session_id  # a new session file starts a new prompt cache

    # -- compaction -------------------------------------------------------------------------------------
    async def compact(self, instructions: str | None = None) -> None:
        """Stop whatever runs, then compact the transcript now.

        Raises ``RuntimeError`` when the summary fails ("Compaction failed: ..."), :class:`CompactionCancelled`
        (a ``RuntimeError``: "Compaction cancelled", as Pi) when an abort stops it, and ``ValueError`` when there
        is nothing to compact.
        """
        await self.abort()
        with self._operation.aside("compaction"):
            await self._compactor.compact_manual(instructions)

    def compaction_plan(self) -> CompactionPlan | None:
        """What a compaction now would summarise and keep; ``None`` when there is nothing to compact."""
        return self._compactor.plan()
