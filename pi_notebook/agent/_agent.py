"""``Agent``: the stateful shell around the loop (Pi's ``Agent``): transcript, queues, listeners, abort, idle.

The agent is a façade over its parts: its :class:`~._state.AgentState`, its two
:class:`~._message_queue.MessageQueue` (steering, follow-up), and its :class:`~._lifecycle.RunLifecycle` (one
run at a time, its listeners, abort and idle, Pi's ending for a run whose loop raises).
What the agent adds: the configuration of each run (``LoopConfig``: model, hooks, key, request options, the
queues to poll) and the entry points ``prompt()`` and ``continue_()``.

One run at a time. Each run gets a new :class:`~pi_notebook.ai.AbortController`; ``abort()`` aborts it (a no-op
when idle) and everything that received the signal — stream function, tools, hooks, listeners — is expected to
stop promptly. ``state.is_streaming`` stays true until the awaited ``agent_end`` listeners have finished, and
``wait_for_idle()`` returns at that same moment.

If the loop raises (a stream function, hook or listener breaking its contract), the run still ends with Pi's
event sequence: a synthetic assistant message (``stop_reason`` ``error``, or ``aborted`` if the signal was
aborted) carrying the exception text, then ``turn_end`` and ``agent_end``; ``prompt()`` returns normally. If the
task awaiting ``prompt()``/``continue_()`` is cancelled (a kernel interrupt, say), the run is aborted, gets the
same synthetic ending, and the cancellation propagates.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Literal

from pydantic import SecretStr

from ..ai import (
    AbortSignal,
    AssistantMessage,
    ImageContent,
    Model,
    StreamFn,
    StreamOptions,
    TextContent,
    ThinkingLevel,
    ToolResultMessage,
    UserMessage,
    clean_api_key,
)
from ._config import LoopConfig
from ._hooks import Hooks
from ._lifecycle import AgentBusyError, AgentListener, RunLifecycle
from ._loop import run_agent_loop, run_agent_loop_continue
from ._message_queue import MessageQueue, QueueMode, check_mode
from ._state import AgentState
from ._types import AgentContext, AgentMessage, AgentTool, CustomMessage

__all__ = ["Agent", "set_default_stream_fn"]

_default_stream_fn: StreamFn | None = None

UNKNOWN_MODEL = Model(
    id="unknown", name="unknown", api="unknown", provider="unknown", input=(), context_window=0, max_tokens=0
)


def set_default_stream_fn(stream_fn: StreamFn | None) -> None:
    """The stream function used by agents created without ``stream_fn``."""
    global _default_stream_fn
    _default_stream_fn = stream_fn


class Agent:
    """A stateful agent. See the module docstring for the run lifecycle.

    ``hooks`` (a :class:`Hooks`) are what the loop calls out to; they may be replaced between runs
    (``agent.hooks = Hooks(...)``). Hooks must not raise; see :class:`Hooks`.

    ``api_key`` (used when ``get_api_key`` is absent or answers ``None``) is held as a ``SecretStr`` with
    surrounding whitespace stripped; a key with a control or non-ASCII character inside raises ``ValueError``
    (``ApiKeyError``) at once, without the key in its text.
    """

    def __init__(
        self,
        *,
        stream_fn: StreamFn | None = None,
        model: Model | None = None,
        tools: Iterable[AgentTool] = (),
        system_prompt: str = "",
        messages: Iterable[AgentMessage] = (),
        thinking_level: ThinkingLevel = "off",
        tool_execution: Literal["parallel", "sequential"] = "parallel",
        steering_mode: QueueMode = "one-at-a-time",
        follow_up_mode: QueueMode = "one-at-a-time",
        hooks: Hooks | None = None,
        api_key: SecretStr | str | None = None,
        session_id: str | None = None,
        stream_options: StreamOptions | None = None,
    ) -> None:
        if tool_execution not in ("parallel", "sequential"):
            raise ValueError(f"tool_execution must be 'parallel' or 'sequential', got {tool_execution!r}")
        self._state = AgentState(system_prompt, model or UNKNOWN_MODEL, thinking_level, tools, messages)
        self.stream_fn = stream_fn
        self.tool_execution: Literal["parallel", "sequential"] = tool_execution
        self._steering = MessageQueue(steering_mode)
        self._follow_up = MessageQueue(follow_up_mode)
        self.hooks = hooks or Hooks()
        self.api_key = api_key
        self.session_id = session_id
        self.stream_options = stream_options or StreamOptions()
        self._lifecycle = RunLifecycle(self._state)

    @property
    def api_key(self) -> SecretStr | None:
        return self._api_key

    @api_key.setter
    def api_key(self, key: SecretStr | str | None) -> None:
        self._api_key = clean_api_key(key)

    # -- state and listeners --------------------------------------------------------------------------
    @property
    def state(self) -> AgentState:
        return self._state

    @property
    def signal(self) -> AbortSignal | None:
        """The active run's abort signal (``None`` when idle)."""
        return self._lifecycle.signal

    def subscribe(self, listener: AgentListener) -> Callable[[], None]:
        """Call ``listener(event, signal)`` for every event; returns an unsubscribe function.

        Listeners are awaited in subscription order before the loop goes on, and the run is not idle until
        the ``agent_end`` listeners have finished.
        """
        return self._lifecycle.subscribe(listener)

    # -- queues ---------------------------------------------------------------------------------------
    @property
    def steering_mode(self) -> QueueMode:
        return self._steering.mode

    @steering_mode.setter
    def steering_mode(self, mode: QueueMode) -> None:
        check_mode(mode)
        self._steering.mode = mode

    @property
    def follow_up_mode(self) -> QueueMode:
        return self._follow_up.mode

    @follow_up_mode.setter
    def follow_up_mode(self, mode: QueueMode) -> None:
        check_mode(mode)
        self._follow_up.mode = mode

    def steer(self, message: AgentMessage | str) -> None:
        """Queue a message to inject after the current turn (after its whole tool batch)."""
        self._steering.items.append(_as_message(message))

    def follow_up(self, message: AgentMessage | str) -> None:
        """Queue a message to run once the agent would otherwise stop."""
        self._follow_up.items.append(_as_message(message))

    def clear_steering_queue(self) -> None:
        self._steering.items.clear()

    def clear_follow_up_queue(self) -> None:
        self._follow_up.items.clear()

    def clear_all_queues(self) -> None:
        self.clear_steering_queue()
        self.clear_follow_up_queue()

    def has_queued_messages(self) -> bool:
        return bool(self._steering.items or self._follow_up.items)

    @property
    def steering_queue(self) -> tuple[AgentMessage, ...]:
        return tuple(self._steering.items)

    @property
    def follow_up_queue(self) -> tuple[AgentMessage, ...]:
        return tuple(self._follow_up.items)

    # -- runs -----------------------------------------------------------------------------------------
    async def prompt(
        self,
        input: str | AgentMessage | Sequence[AgentMessage],
        images: Sequence[ImageContent] = (),
    ) -> None:
        """Run from new message(s). Text becomes one user message (with ``images`` after the text)."""
        if self._lifecycle.active:
            raise AgentBusyError(
                "Agent is already processing a prompt. Use steer() or follow_up() to queue messages, "
                "or wait for completion."
            )
        await self._run_prompts(_normalize(input, images))

    async def continue_(self) -> None:
        """Continue from the current transcript (a new run, not a resumed one).

        From a user or tool-result tail the loop simply runs. From an assistant tail, queued steering (or
        else follow-up) messages are run as the prompt; with nothing queued this raises.
        """
        if self._lifecycle.active:
            raise AgentBusyError("Agent is already processing. Wait for completion before continuing.")
        stream_fn = self._stream()
        messages = self._state.messages
        if not messages:
            raise RuntimeError("No messages to continue from")
        if messages[-1].role == "assistant":
            steering = self._steering.drain()
            if steering:
                await self._run_prompts(steering, skip_initial_steering_poll=True)
                return
            follow_ups = self._follow_up.drain()
            if follow_ups:
                await self._run_prompts(follow_ups)
                return
            raise RuntimeError("Cannot continue from message role: assistant")

        async def executor(signal: AbortSignal) -> None:
            await run_agent_loop_continue(self._snapshot(), self._config(), self._lifecycle.emit, signal, stream_fn)

        await self._lifecycle.run(executor)

    async def _run_prompts(self, messages: list[AgentMessage], skip_initial_steering_poll: bool = False) -> None:
        stream_fn = self._stream()

        async def executor(signal: AbortSignal) -> None:
            config = self._config(skip_initial_steering_poll)
            await run_agent_loop(messages, self._snapshot(), config, self._lifecycle.emit, signal, stream_fn)

        await self._lifecycle.run(executor)

    def abort(self, reason: object = "aborted") -> None:
        """Abort the active run's signal. Does nothing when idle; never raises; leaves the queues alone."""
        self._lifecycle.abort(reason)

    async def request_options(self, signal: AbortSignal) -> StreamOptions:
        """The options a model request made now would get (key, headers, timeouts, retries, thinking level),
        for requests made beside the loop, such as a compaction summary."""
        return await self._config().request_options(signal)

    async def wait_for_idle(self) -> None:
        """Return once the active run, including its awaited listeners, has finished (at once if idle)."""
        await self._lifecycle.wait_for_idle()

    def reset(self) -> None:
        """Clear the transcript, runtime state and both queues."""
        if self._lifecycle.active:
            raise AgentBusyError("Agent is already processing. Wait for completion before resetting.")
        state = self._state
        state.messages = []
        state.is_streaming = False
        state.streaming_message = None
        state.pending_tool_calls = set()
        state.error_message = None
        self.clear_all_queues()

    # -- internals ------------------------------------------------------------------------------------
    def _stream(self) -> StreamFn:
        stream_fn = self.stream_fn or _default_stream_fn
        if stream_fn is None:
            raise RuntimeError(
                "No default stream function configured. Pass stream_fn explicitly or call set_default_stream_fn()."
            )
        return stream_fn

    def _snapshot(self) -> AgentContext:
        state = self._state
        return AgentContext(state.system_prompt, list(state.messages), tuple(state.tools))

    def _config(self, skip_initial_steering_poll: bool = False) -> LoopConfig:
        skip = skip_initial_steering_poll

        def steering() -> list[AgentMessage]:
            nonlocal skip
            if skip:
                skip = False
                return []
            return self._steering.drain()

        options = self.stream_options
        if self.session_id is not None and options.session_id != self.session_id:
            options = replace(options, session_id=self.session_id)
        return LoopConfig(
            model=self._state.model,
            thinking_level=self._state.thinking_level,
            tool_execution=self.tool_execution,
            hooks=self.hooks,
            api_key=self.api_key,
            get_steering_messages=steering,
            get_follow_up_messages=self._follow_up.drain,
            requeue=self._requeue,
            stream_options=options,
        )

    def _requeue(self, messages: list[AgentMessage], source: str) -> None:
        queue = self._steering if source == "steering" else self._follow_up
        queue.items.extendleft(reversed(messages))


def _as_message(message: AgentMessage | str) -> AgentMessage:
    if isinstance(message, str):
        return UserMessage(content=[TextContent(text=message)])
    return message


def _normalize(
    input: str | AgentMessage | Sequence[AgentMessage], images: Sequence[ImageContent]
) -> list[AgentMessage]:
    if isinstance(input, str):
        return [UserMessage(content=[TextContent(text=input), *images])]
    if isinstance(input, UserMessage | AssistantMessage | ToolResultMessage | CustomMessage):
        return [input]
    return list(input)
