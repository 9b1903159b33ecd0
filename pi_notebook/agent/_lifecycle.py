"""An agent's run lifecycle (Pi's ``runWithLifecycle``, ``processEvents``, ``handleRunFailure``, ``finishRun``).

One run at a time. Each run gets a new :class:`~pi_notebook.ai.AbortController`; ``abort()`` aborts it (a no-op
when idle) and everything that received the signal — stream function, tools, hooks, listeners — is expected to
stop promptly. Every event of the run is reduced into the agent's state, then heard by every listener, in
subscription order, each awaited before the next. ``state.is_streaming`` stays true until the awaited
``agent_end`` listeners have finished, and ``wait_for_idle()`` returns at that same moment.

If the loop raises (a stream function, hook or listener breaking its contract), the run still ends with Pi's
event sequence: a synthetic assistant message (``stop_reason`` ``error``, or ``aborted`` if the signal was
aborted) carrying the exception text, then ``turn_end`` and ``agent_end``; the run returns normally. If the task
awaiting the run is cancelled (a kernel interrupt, say), the run is aborted, gets the same synthetic ending, and
the cancellation propagates.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeAlias

import anyio

from ..ai import AbortController, AbortSignal, AssistantMessage, BusyError, TextContent
from ._state import AgentState
from ._types import AgentEndEvent, AgentEvent, MessageEndEvent, MessageStartEvent, TurnEndEvent

__all__ = ["AgentBusyError", "AgentListener", "RunLifecycle"]


class AgentBusyError(BusyError):
    """``prompt()`` / ``continue_()`` / ``reset()`` while the agent runs: queue with ``steer`` / ``follow_up``."""


AgentListener: TypeAlias = Callable[[AgentEvent, AbortSignal], Awaitable[None] | None]
"""``listener(event, signal)``, sync or async: awaited in subscription order before the loop goes on."""


@dataclass(slots=True)
class _Run:
    controller: AbortController
    idle: asyncio.Future[None]


class RunLifecycle:
    """The runs of one agent, one at a time, and the listeners that hear their events (see the module
    docstring). ``state`` is the agent's: each event is reduced into it."""

    __slots__ = ("_listeners", "_run", "_state")

    def __init__(self, state: AgentState) -> None:
        self._state = state
        self._listeners: tuple[AgentListener, ...] = ()
        self._run: _Run | None = None

    @property
    def active(self) -> bool:
        """Whether a run is active (until its ``agent_end`` listeners have finished)."""
        return self._run is not None

    @property
    def signal(self) -> AbortSignal | None:
        """The active run's abort signal (``None`` when idle)."""
        return self._run.controller.signal if self._run else None

    def subscribe(self, listener: AgentListener) -> Callable[[], None]:
        """Call ``listener(event, signal)`` for every event; returns an unsubscribe function."""
        self._listeners = (*self._listeners, listener)

        def unsubscribe() -> None:
            self._listeners = tuple(item for item in self._listeners if item is not listener)

        return unsubscribe

    def abort(self, reason: object) -> None:
        """Abort the active run's signal. Does nothing when idle; never raises."""
        if self._run is not None:
            self._run.controller.abort(reason)

    async def wait_for_idle(self) -> None:
        """Return once the active run, including its awaited listeners, has finished (at once if idle)."""
        run = self._run
        if run is not None:
            await asyncio.shield(run.idle)

    async def run(self, executor: Callable[[AbortSignal], Awaitable[None]]) -> None:
        """Run ``executor(signal)`` (the loop, emitting through :meth:`emit`) as the one active run."""
        if self._run is not None:
            raise AgentBusyError("Agent is already processing.")
        run = _Run(AbortController(), asyncio.get_running_loop().create_future())
        self._run = run
        state = self._state
        state.is_streaming = True
        state.streaming_message = None
        state.error_message = None
        signal = run.controller.signal
        try:
            await executor(signal)
        except Exception as exc:
            await self._fail(exc, signal.aborted)
        except BaseException as exc:
            if not isinstance(exc, anyio.get_cancelled_exc_class()):
                raise
            # The awaiting task was cancelled (e.g. a kernel interrupt): treat it as an abort, still end the
            # run with its events, then let the cancellation go on.
            run.controller.abort("cancelled")
            with anyio.CancelScope(shield=True):
                await self._fail(RuntimeError("Run cancelled"), aborted=True)
            raise
        finally:
            self._finish(run)

    async def _fail(self, error: BaseException, aborted: bool) -> None:
        model = self._state.model
        failure = AssistantMessage(
            content=[TextContent(text="")],
            api=model.api,
            provider=model.provider,
            model=model.id,
            stop_reason="aborted" if aborted else "error",
            error_message=str(error) or type(error).__name__,
        )
        await _settle(self.emit(MessageStartEvent(failure)))
        await _settle(self.emit(MessageEndEvent(failure)))
        await _settle(self.emit(TurnEndEvent(failure, [])))
        await _settle(self.emit(AgentEndEvent([failure])))

    def _finish(self, run: _Run) -> None:
        state = self._state
        state.is_streaming = False
        state.streaming_message = None
        state.pending_tool_calls = set()
        run.idle.set_result(None)
        self._run = None

    def emit(self, event: AgentEvent) -> Awaitable[None] | None:
        """Reduce the event into state, then call every listener in order (the loop's ``emit``).

        Sync listeners are called here and then, as long as none returns an awaitable, ``None`` is returned:
        the loop has nothing to await. From the first listener that returns an awaitable on, the rest is
        returned as one coroutine, so each later listener still runs only after the earlier one finished.
        """
        state = self._state
        # One string compare per branch (most frequent first) instead of a chain of isinstance checks.
        if event.type == "message_update" or event.type == "message_start":
            state.streaming_message = event.message
        elif event.type == "message_end":
            state.streaming_message = None
            state.messages.append(event.message)
        elif event.type == "tool_execution_start":
            state.pending_tool_calls.add(event.tool_call_id)
        elif event.type == "tool_execution_end":
            state.pending_tool_calls.discard(event.tool_call_id)
        elif event.type == "turn_end":
            message = event.message
            if isinstance(message, AssistantMessage) and message.error_message:
                state.error_message = message.error_message
        elif event.type == "agent_end":
            state.streaming_message = None
        run = self._run
        if run is None:
            raise RuntimeError("Agent listener invoked outside active run")
        signal = run.controller.signal
        listeners = self._listeners
        for index, listener in enumerate(listeners):
            outcome = listener(event, signal)
            if outcome is not None and inspect.isawaitable(outcome):
                return _finish_listeners(outcome, event, signal, listeners[index + 1 :])
        return None


async def _finish_listeners(
    first: Awaitable[object], event: AgentEvent, signal: AbortSignal, rest: tuple[AgentListener, ...]
) -> None:
    """Await a listener's outcome, then call (and await) the listeners after it, in order."""
    await first
    for listener in rest:
        outcome = listener(event, signal)
        if outcome is not None and inspect.isawaitable(outcome):
            await outcome


async def _settle(waiting: Awaitable[None] | None) -> None:
    if waiting is not None:
        await waiting
