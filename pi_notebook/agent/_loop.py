"""The stateless agent loop (Pi's ``agent-loop``): two nested loops, event for event like Pi 0.83.

``run_agent_loop`` and ``run_agent_loop_continue`` take an ``emit`` function and an abort signal and return the
messages the run added. What ``emit`` returns is awaited before the loop goes on, so a slow listener
back-pressures the loop; an ``emit`` that has nothing to wait for returns ``None`` and costs no coroutine.

Inner loop: one turn per assistant response. Pending steering messages are injected at the start of a turn;
tool calls run after the response; the turn ends with ``turn_end``. Outer loop: when nothing is left to do,
queued follow-ups start another round. An ``error`` or ``aborted`` response ends the run at once, without
polling the queues (queued messages stay queued).

An abort during a tool batch ends the batch (sequential: after the running call; parallel: calls not yet
started finish as "Operation aborted"), then, as in Pi, one more turn records the aborted assistant message
(without sending a request: the loop never calls a stream function with an aborted signal). Unlike Pi 0.83,
queues are not polled once the signal has aborted, so steering queued in that window stays queued instead of
being written into the transcript unseen (later upstream, issue #9340).

Later-Pi hooks (seed 002, Pi 1.6 behaviour): ``finish_turn`` runs before ``turn_end`` and may end the run or
ask for one more request; ``prepare_request`` runs before every provider request.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import replace
from itertools import islice
from typing import Any

from ..ai import (
    ABORTED_TEXT,
    AbortSignal,
    AssistantMessage,
    AssistantMessageEventStream,
    Context,
    MaybeAwaitable,
    Message,
    StreamFn,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    maybe_await,
)
from ..ai.messages import carry_key, message_key
from ._config import LoopConfig
from ._hooks import call_hook, finish_action, turn_update
from ._tools import execute_tool_calls, fail_truncated_tool_calls
from ._types import (
    AgentContext,
    AgentEndEvent,
    AgentMessage,
    AgentStartEvent,
    CustomMessage,
    Emit,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    RequestContext,
    TurnContext,
    TurnEndEvent,
    TurnStartEvent,
    TurnUpdate,
)

__all__ = ["run_agent_loop", "run_agent_loop_continue"]

_LLM_TYPES = (UserMessage, AssistantMessage, ToolResultMessage)


async def run_agent_loop(
    prompts: Sequence[AgentMessage],
    context: AgentContext,
    config: LoopConfig,
    emit: Emit,
    signal: AbortSignal,
    stream_fn: StreamFn,
) -> list[AgentMessage]:
    """Run from new prompt messages; their ``message_start``/``message_end`` come right after ``turn_start``."""
    new_messages: list[AgentMessage] = list(prompts)
    current = AgentContext(context.system_prompt, [*context.messages, *prompts], context.tools)
    if (waiting := emit(AgentStartEvent())) is not None:
        await waiting
    if (waiting := emit(TurnStartEvent())) is not None:
        await waiting
    for prompt in prompts:
        if (waiting := emit(MessageStartEvent(prompt))) is not None:
            await waiting
        if (waiting := emit(MessageEndEvent(prompt))) is not None:
            await waiting
    await _Loop(current, new_messages, config, signal, emit, stream_fn).run()
    return new_messages


def check_continuable(messages: Sequence[AgentMessage]) -> None:
    if not messages:
        raise ValueError("Cannot continue: no messages in context")
    if messages[-1].role == "assistant":
        raise ValueError("Cannot continue from message role: assistant")


async def run_agent_loop_continue(
    context: AgentContext,
    config: LoopConfig,
    emit: Emit,
    signal: AbortSignal,
    stream_fn: StreamFn,
) -> list[AgentMessage]:
    """Run from the existing transcript, whose last message must not be an assistant message."""
    check_continuable(context.messages)
    new_messages: list[AgentMessage] = []
    if (waiting := emit(AgentStartEvent())) is not None:
        await waiting
    if (waiting := emit(TurnStartEvent())) is not None:
        await waiting
    await _Loop(context, new_messages, config, signal, emit, stream_fn).run()
    return new_messages


class _Loop:
    __slots__ = ("_specs", "config", "context", "emit", "llm", "new_messages", "signal", "stream_fn")

    def __init__(
        self,
        context: AgentContext,
        new_messages: list[AgentMessage],
        config: LoopConfig,
        signal: AbortSignal,
        emit: Emit,
        stream_fn: StreamFn,
    ) -> None:
        self.context = context
        self.new_messages = new_messages
        self.config = config
        self.signal = signal
        self.emit = emit
        self.stream_fn = stream_fn
        self.llm = _LlmView()
        self._specs: tuple[object, list[Tool] | None] = ((), None)

    def _tool_specs(self, tools: Sequence[Any]) -> list[Tool] | None:
        """The tools as the model sees them, rebuilt only when the run's tool list is replaced."""
        if self._specs[0] is not tools:
            self._specs = (tools, [tool.to_tool() for tool in tools] if tools else None)
        return self._specs[1]

    async def run(self) -> None:
        config, emit, signal = self.config, self.emit, self.signal
        hooks = config.hooks
        first_turn = True
        action: str | None = None  # what finish_turn said of the last turn
        pending = _poll(config.get_steering_messages)
        if not isinstance(pending, list):
            pending = await pending
        pending_from = "steering"
        while True:
            has_more_tool_calls = True
            while has_more_tool_calls or pending:
                if first_turn:
                    first_turn = False
                else:
                    if (waiting := emit(TurnStartEvent())) is not None:
                        await waiting
                if pending and signal.aborted and config.requeue is not None:
                    # Drained but not delivered when the abort landed: hand them back (Pi issue #9340).
                    config.requeue(pending, pending_from)
                    pending = []
                for queued in pending:
                    if (waiting := emit(MessageStartEvent(queued))) is not None:
                        await waiting
                    if (waiting := emit(MessageEndEvent(queued))) is not None:
                        await waiting
                    self.context.messages.append(queued)
                    self.new_messages.append(queued)
                pending = []
                if hooks.prepare_request is not None:
                    await self._prepare_request()
                message = await self._stream_response()
                self.new_messages.append(message)
                if message.stop_reason in ("error", "aborted"):
                    if hooks.finish_turn is not None:  # told, but its answer cannot revive a failed turn
                        await maybe_await(call_hook(hooks.finish_turn, self._turn(message, []), signal))
                    if (waiting := emit(TurnEndEvent(message, []))) is not None:
                        await waiting
                    if (waiting := emit(AgentEndEvent(self.new_messages))) is not None:
                        await waiting
                    return
                tool_results, has_more_tool_calls = await self._run_tools(message)
                action = None
                if hooks.finish_turn is not None:
                    turn = self._turn(message, tool_results)
                    action = finish_action(await maybe_await(call_hook(hooks.finish_turn, turn, signal)))
                if (waiting := emit(TurnEndEvent(message, tool_results))) is not None:
                    await waiting
                if action == "end":
                    if (waiting := emit(AgentEndEvent(self.new_messages))) is not None:
                        await waiting
                    return
                if hooks.prepare_next_turn is not None:
                    turn = self._turn(message, tool_results)
                    update = await maybe_await(call_hook(hooks.prepare_next_turn, turn, signal))
                    self._apply(turn_update(update, "prepare_next_turn"))
                if hooks.should_stop_after_turn is not None and await maybe_await(
                    call_hook(hooks.should_stop_after_turn, self._turn(message, tool_results), signal)
                ):
                    if (waiting := emit(AgentEndEvent(self.new_messages))) is not None:
                        await waiting
                    return
                # After an abort the queues are not drained: what is queued stays queued (Pi issue #9340).
                pending = [] if signal.aborted else _poll(config.get_steering_messages)
                if not isinstance(pending, list):
                    pending = await pending
                pending_from = "steering"
            follow_ups = [] if signal.aborted else _poll(config.get_follow_up_messages)
            if not isinstance(follow_ups, list):
                follow_ups = await follow_ups
            if follow_ups:
                pending, pending_from = follow_ups, "follow_up"
                continue
            if action == "continue":  # finish_turn asked for one more request and nothing else supplied it
                continue
            break
        if (waiting := emit(AgentEndEvent(self.new_messages))) is not None:
            await waiting

    def _turn(self, message: AssistantMessage, tool_results: list[ToolResultMessage]) -> TurnContext:
        return TurnContext(message, tool_results, self.context, self.new_messages)

    def _apply(self, update: TurnUpdate | None) -> None:
        if update is None:
            return
        if update.context is not None:
            self.context = update.context
        config = self.config
        if update.model is not None or update.thinking_level is not None:
            # Hooks see the config object; give this run its own copy before changing it.
            self.config = config = replace(config)
            if update.model is not None:
                config.model = update.model
            if update.thinking_level is not None:
                config.thinking_level = update.thinking_level

    async def _prepare_request(self) -> None:
        config = self.config
        hook = config.hooks.prepare_request
        assert hook is not None
        request = RequestContext(self.context, config.model, config.thinking_level)
        update = await maybe_await(call_hook(hook, request, self.signal))
        self._apply(turn_update(update, "prepare_request"))

    async def _run_tools(self, message: AssistantMessage) -> tuple[list[ToolResultMessage], bool]:
        tool_calls = [block for block in message.content if isinstance(block, ToolCall)]
        if not tool_calls:
            return [], False
        if message.stop_reason == "length":  # arguments may be cut off: never execute them
            batch = await fail_truncated_tool_calls(tool_calls, self.emit)
        else:
            batch = await execute_tool_calls(self.context, message, tool_calls, self.config, self.signal, self.emit)
        self.context.messages.extend(batch.messages)
        self.new_messages.extend(batch.messages)
        return batch.messages, not batch.terminate

    async def _stream_response(self) -> AssistantMessage:
        config, emit, context = self.config, self.emit, self.context
        if self.signal.aborted:
            return await self._record_aborted()
        hooks = config.hooks
        messages: Sequence[AgentMessage] = context.messages
        if hooks.transform_context is not None:
            messages = await maybe_await(call_hook(hooks.transform_context, messages, self.signal))
        llm: Sequence[Message]
        if hooks.convert_to_llm is not None:
            llm = list(await maybe_await(hooks.convert_to_llm(messages)))
        else:
            llm = self.llm.convert(messages)
        request = Context(context.system_prompt, llm, self._tool_specs(context.tools))
        response = self.stream_fn(config.model, request, await config.request_options(self.signal))
        if not isinstance(response, AssistantMessageEventStream):
            response = await response
        transcript = context.messages
        partial: AssistantMessage | None = None
        async for event in response:
            kind = event.type
            if kind == "start":
                partial = event.partial
                message_key(partial)  # the message is born here: its key is the one every later event carries
                transcript.append(partial)
                if (waiting := emit(MessageStartEvent(partial))) is not None:
                    await waiting
            elif kind == "done" or kind == "error":
                break
            elif partial is not None:
                current = event.partial
                if current is not partial:  # a provider may hand a new object per event: same message, same key
                    carry_key(partial, current)
                    transcript[-1] = partial = current
                if (waiting := emit(MessageUpdateEvent(current, event))) is not None:
                    await waiting
        final = await response.result()
        if partial is None:
            transcript.append(final)
            if (waiting := emit(MessageStartEvent(final))) is not None:
                await waiting
        else:
            if final is not partial:
                carry_key(partial, final)
            transcript[-1] = final
        if (waiting := emit(MessageEndEvent(final))) is not None:
            await waiting
        return final

    async def _record_aborted(self) -> AssistantMessage:
        """The signal is already aborted: record the aborted response Pi's providers would return, without
        sending a request that can only be thrown away."""
        model = self.config.model
        message = AssistantMessage(
            api=model.api,
            provider=model.provider,
            model=model.id,
            stop_reason="aborted",
            error_message=ABORTED_TEXT,
        )
        self.context.messages.append(message)
        if (waiting := self.emit(MessageStartEvent(message))) is not None:
            await waiting
        if (waiting := self.emit(MessageEndEvent(message))) is not None:
            await waiting
        return message


def _poll(
    source: Callable[[], MaybeAwaitable[Sequence[AgentMessage]]] | None,
) -> list[AgentMessage] | Awaitable[list[AgentMessage]]:
    """What a queue source gives, as a list; an awaitable of that list only when the source answered with an
    awaitable (the Agent's queues answer synchronously, so polling them costs no coroutine)."""
    if source is None:
        return []
    answer = source()
    if inspect.isawaitable(answer):
        return _listed(answer)
    return list(answer or ())


async def _listed(answer: Awaitable[Sequence[AgentMessage]]) -> list[AgentMessage]:
    return list(await answer or ())


class _LlmView:
    """The default ``convert_to_llm`` (keep user, assistant and tool-result messages, and what custom
    messages' ``to_llm()`` returns), done incrementally.

    The loop's transcript only grows between requests, so filtering it again each turn would make a turn
    cost O(transcript). Only the messages added since the last request are filtered; a replaced list or
    message falls back to a full pass. Each request gets a read-only prefix view of the filtered list, which
    later requests only extend, so a stream function may keep it.
    """

    __slots__ = ("_count", "_kept", "_last", "_source")

    def __init__(self) -> None:
        self._source: Sequence[AgentMessage] | None = None
        self._count = 0
        self._last: object = None
        self._kept: list[AgentMessage] = []

    def convert(self, messages: Sequence[AgentMessage]) -> Sequence[Any]:
        count = self._count
        if not (
            messages is self._source and len(messages) >= count and (count == 0 or messages[count - 1] is self._last)
        ):
            self._source, self._kept, count = messages, [], 0
        kept = self._kept
        # Indexing, not ``islice(messages, count, None)``: islice steps over the first ``count`` items one by
        # one, which made every turn O(transcript) again.
        for index in range(count, len(messages)):
            message = messages[index]
            if isinstance(message, _LLM_TYPES):
                kept.append(message)
            elif isinstance(message, CustomMessage):
                converted = message.to_llm()
                if converted is not None:
                    kept.append(converted)
        self._count = len(messages)
        self._last = messages[-1] if messages else None
        return _Prefix(kept, len(kept))


class _Prefix(Sequence[Any]):
    """The first ``size`` items of a list that only ever grows at the end: a snapshot without a copy."""

    __slots__ = ("_items", "_size")

    def __init__(self, items: list[Any], size: int) -> None:
        self._items = items
        self._size = size

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):  # only the sliced range is copied, not the whole prefix
            items = self._items
            return [items[i] for i in range(*index.indices(self._size))]
        if index < 0:
            index += self._size
        if not 0 <= index < self._size:
            raise IndexError("message index out of range")
        return self._items[index]

    def __iter__(self) -> Iterator[Any]:
        return islice(self._items, self._size)
