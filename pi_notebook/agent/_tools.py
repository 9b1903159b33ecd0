"""Running one assistant message's tool calls (PI-SPEC §2.4, §2.5).

Each call is prepared (tool lookup, argument validation, ``before_tool_call``), then executed and
finalised (``after_tool_call``). Sequential mode runs calls one after another and stops the batch after the
call during which the signal aborted. Parallel mode prepares every call in source order, then runs the
prepared ones concurrently; ``tool_execution_end`` follows completion order, result messages follow source
order. Calls prepared before an abort landed during a later preflight finish as "Operation aborted" without
running (Pi issue #8935, fixed upstream after 0.84.1).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

from ..ai import (
    AbortSignal,
    AssistantMessage,
    ImageContent,
    TextContent,
    ToolCall,
    ToolResultMessage,
    maybe_await,
    trusted_text,
    trusted_tool_result,
)
from ._config import LoopConfig
from ._hooks import after_result, before_result, call_hook
from ._types import (
    AfterToolCallContext,
    AgentContext,
    AgentTool,
    AgentToolResult,
    BeforeToolCallContext,
    Emit,
    MessageEndEvent,
    MessageStartEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
)
from ._validation import validate_arguments

__all__ = ["ToolBatch", "execute_tool_calls", "fail_truncated_tool_calls"]

TRUNCATED = (
    'Tool call "{name}" was not executed: the response hit the output token limit, so its arguments may be '
    "truncated. Re-issue the tool call with complete arguments."
)


_BLOCKS = (TextContent, ImageContent)  # exact types: a subclass may carry what validation would convert


def _plain_blocks(content: object) -> TypeGuard[Sequence[TextContent | ImageContent]]:
    return isinstance(content, list) and all(type(block) in _BLOCKS for block in content)


@dataclass(slots=True)
class ToolBatch:
    messages: list[ToolResultMessage]
    terminate: bool


@dataclass(slots=True)
class _Done:
    tool_call: ToolCall
    result: AgentToolResult
    is_error: bool


@dataclass(slots=True)
class _Prepared:
    tool_call: ToolCall
    tool: AgentTool
    args: Any


def error_result(text: str) -> AgentToolResult:
    return AgentToolResult(content=[trusted_text(text)], details={})


def _error_text(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


async def fail_truncated_tool_calls(tool_calls: Sequence[ToolCall], emit: Emit) -> ToolBatch:
    messages = []
    for call in tool_calls:
        if (waiting := emit(ToolExecutionStartEvent(call.id, call.name, call.arguments))) is not None:
            await waiting
        done = _Done(call, error_result(TRUNCATED.format(name=call.name)), True)
        messages.extend(await _emit_results([done], emit, with_end=True))
    return ToolBatch(messages, terminate=False)


async def execute_tool_calls(
    context: AgentContext,
    message: AssistantMessage,
    tool_calls: Sequence[ToolCall],
    config: LoopConfig,
    signal: AbortSignal,
    emit: Emit,
) -> ToolBatch:
    tools = {tool.name: tool for tool in context.tools}
    sequential = config.tool_execution == "sequential" or any(
        (tool := tools.get(call.name)) is not None and tool.execution_mode == "sequential" for call in tool_calls
    )
    run = _sequential if sequential else _parallel
    return await run(_Batch(context, message, tools, config, signal, emit), tool_calls)


@dataclass(slots=True)
class _Batch:
    context: AgentContext
    message: AssistantMessage
    tools: dict[str, AgentTool]
    config: LoopConfig
    signal: AbortSignal
    emit: Emit


async def _sequential(batch: _Batch, tool_calls: Sequence[ToolCall]) -> ToolBatch:
    finished: list[_Done] = []
    messages = []
    for call in tool_calls:
        if (waiting := batch.emit(ToolExecutionStartEvent(call.id, call.name, call.arguments))) is not None:
            await waiting
        step = await _prepare(batch, call)
        done = step if isinstance(step, _Done) else await _run_prepared(batch, step)
        messages.extend(await _emit_results([done], batch.emit, with_end=True))
        finished.append(done)
        if batch.signal.aborted:
            break
    return ToolBatch(messages, _terminates(finished))


async def _parallel(batch: _Batch, tool_calls: Sequence[ToolCall]) -> ToolBatch:
    entries: list[_Done | _Prepared] = []
    for call in tool_calls:
        if (waiting := batch.emit(ToolExecutionStartEvent(call.id, call.name, call.arguments))) is not None:
            await waiting
        step = await _prepare(batch, call)
        if isinstance(step, _Done) and (waiting := batch.emit(_end_event(step))) is not None:
            await waiting
        entries.append(step)
        if batch.signal.aborted:
            break
    prepared = [(i, entry) for i, entry in enumerate(entries) if isinstance(entry, _Prepared)]
    if len(prepared) == 1:
        index, entry = prepared[0]
        entries[index] = await _finish_parallel(batch, entry)
    elif prepared:
        results = await _gather([_finish_parallel(batch, entry) for _, entry in prepared])
        for (index, _), done in zip(prepared, results, strict=True):
            entries[index] = done
    finished = [entry for entry in entries if isinstance(entry, _Done)]  # every entry by now
    return ToolBatch(await _emit_results(finished, batch.emit, with_end=False), _terminates(finished))


async def _finish_parallel(batch: _Batch, prepared: _Prepared) -> _Done:
    if batch.signal.aborted:  # the abort landed during a later sibling's preflight: do not start it
        done = _Done(prepared.tool_call, error_result("Operation aborted"), True)
    else:
        done = await _run_prepared(batch, prepared)
    if (waiting := batch.emit(_end_event(done))) is not None:
        await waiting
    return done


async def _gather(coroutines: list[Coroutine[Any, Any, _Done]]) -> list[_Done]:
    tasks: list[asyncio.Task[_Done]] = []
    try:
        async with asyncio.TaskGroup() as group:
            tasks.extend(group.create_task(c) for c in coroutines)
    except BaseExceptionGroup as group_error:
        # A hook or listener raised: surface the first error as the run's failure, as Pi would.
        raise group_error.exceptions[0] from None
    return [task.result() for task in tasks]


def _terminates(finished: Sequence[_Done]) -> bool:
    return bool(finished) and all(done.result.terminate is True for done in finished)


async def _prepare(batch: _Batch, call: ToolCall) -> _Done | _Prepared:
    tool = batch.tools.get(call.name)
    if tool is None:
        return _Done(call, error_result(f"Tool {call.name} not found"), True)
    signal = batch.signal
    try:
        raw = call.arguments
        if tool.prepare_arguments is not None:
            raw = tool.prepare_arguments(raw)
        args = validate_arguments(tool.parameters, call.name, raw, call.unparsed_arguments)
        hook = batch.config.hooks.before_tool_call
        if hook is not None:
            context = BeforeToolCallContext(batch.message, call, args, batch.context)
            verdict = before_result(await maybe_await(call_hook(hook, context, signal)))
            if signal.aborted:
                return _Done(call, error_result("Operation aborted"), True)
            if verdict is not None and verdict.block:
                result = error_result(verdict.reason or "Tool execution was blocked")
                result.terminate = verdict.terminate is True
                return _Done(call, result, True)
    except Exception as exc:
        return _Done(call, error_result(_error_text(exc)), True)
    if signal.aborted:
        return _Done(call, error_result("Operation aborted"), True)
    return _Prepared(call, tool, args)


async def _run_prepared(batch: _Batch, prepared: _Prepared) -> _Done:
    done = await _execute(batch, prepared)
    if batch.config.hooks.after_tool_call is None:
        return done
    return await _finalize(batch, prepared, done)


class _Updates:
    """``on_update`` for one execution: emits ``tool_execution_update`` in order; late calls are dropped."""

    __slots__ = ("_call", "_emit", "_pending", "_task", "accepting")

    def __init__(self, call: ToolCall, emit: Emit) -> None:
        self._call = call
        self._emit = emit
        self._pending: deque[ToolExecutionUpdateEvent] = deque()
        self._task: asyncio.Task[None] | None = None
        self.accepting = True

    def __call__(self, partial: AgentToolResult) -> None:
        if not self.accepting:
            return
        call = self._call
        self._pending.append(ToolExecutionUpdateEvent(call.id, call.name, call.arguments, partial))
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        while self._pending:
            if (waiting := self._emit(self._pending.popleft())) is not None:
                await waiting

    def cancel(self) -> None:
        self.accepting = False
        if self._task is not None:
            self._task.cancel()

    def close(self) -> Awaitable[None] | None:
        """Stop accepting updates; what is left to await until the ones already given are emitted (``None``:
        nothing, the tool gave no update)."""
        self.accepting = False
        return self._task  # no new task can start now


async def _execute(batch: _Batch, prepared: _Prepared) -> _Done:
    call = prepared.tool_call
    updates = _Updates(call, batch.emit)
    try:
        outcome = await prepared.tool.execute(call.id, prepared.args, batch.signal, updates)
        done = _Done(call, _as_result(outcome), False)
    except Exception as exc:
        done = _Done(call, error_result(_error_text(exc)), True)
    except BaseException:
        updates.cancel()
        raise
    if (waiting := updates.close()) is not None:
        await waiting
    return done


def _as_result(outcome: Any) -> AgentToolResult:
    if isinstance(outcome, AgentToolResult):
        return outcome
    if isinstance(outcome, str):
        return AgentToolResult(content=outcome)
    if outcome is None:
        return AgentToolResult()
    raise TypeError(f"tool execute must return AgentToolResult (or text), got {type(outcome).__name__}")


async def _finalize(batch: _Batch, prepared: _Prepared, done: _Done) -> _Done:
    hook = batch.config.hooks.after_tool_call
    if hook is None:
        return done
    call = prepared.tool_call
    try:
        context = AfterToolCallContext(batch.message, call, prepared.args, done.result, done.is_error, batch.context)
        override = after_result(await maybe_await(call_hook(hook, context, batch.signal)))
    except Exception as exc:
        return _Done(call, error_result(_error_text(exc)), True)
    if override is None:
        return done
    result = done.result
    merged = AgentToolResult(
        content=result.content if override.content is None else override.content,
        details=result.details if override.details is None else override.details,
        usage=result.usage if override.usage is None else override.usage,
        terminate=result.terminate if override.terminate is None else override.terminate,
        added_tool_names=result.added_tool_names,
    )
    return _Done(call, merged, done.is_error if override.is_error is None else override.is_error)


def _end_event(done: _Done) -> ToolExecutionEndEvent:
    call = done.tool_call
    return ToolExecutionEndEvent(call.id, call.name, done.result, done.is_error)


async def _emit_results(finished: Sequence[_Done], emit: Emit, *, with_end: bool) -> list[ToolResultMessage]:
    """Each call's result message with its ``message_start``/``message_end`` (after ``tool_execution_end`` when
    ``with_end``), in the order given."""
    messages = []
    for done in finished:
        if with_end and (waiting := emit(_end_event(done))) is not None:
            await waiting
        message = _result_message(done)
        if (waiting := emit(MessageStartEvent(message))) is not None:
            await waiting
        if (waiting := emit(MessageEndEvent(message))) is not None:
            await waiting
        messages.append(message)
    return messages


def _result_message(done: _Done) -> ToolResultMessage:
    result = done.result
    call = done.tool_call
    content = result.content
    if result.usage is None and not result.added_tool_names and _plain_blocks(content):
        # The common case: nothing a tool handed us needs converting, so skip validation (see ``_trusted``).
        return trusted_tool_result(call.id, call.name, content, result.details, done.is_error)
    return ToolResultMessage(
        tool_call_id=call.id,
        tool_name=call.name,
        content=list(content),
        details=result.details,
        usage=result.usage,
        added_tool_names=list(result.added_tool_names) or None,
        is_error=done.is_error,
    )
