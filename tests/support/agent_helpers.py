"""Small builders shared by the agent tests: scripted agents, tools that record or wait, request capture."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from pi_notebook.agent import Agent, AgentTool, AgentToolResult
from pi_notebook.ai import (
    AbortSignal,
    AssistantMessageEvent,
    AssistantMessageEventStream,
    Context,
    DoneEvent,
    MessageBuilder,
    Model,
    StartEvent,
    StreamFn,
    StreamOptions,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
)
from pi_notebook.ai.providers.faux import FauxProvider
from pi_notebook.testing import EventRecorder

EMPTY_SCHEMA = {"type": "object", "properties": {}}


@dataclass
class ToolLog:
    """What a recording tool saw: the calls in start order, and the arguments/signals they got."""

    started: list[str] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)
    args: list[Any] = field(default_factory=list)
    signals: list[AbortSignal] = field(default_factory=list)
    running: int = 0
    max_running: int = 0


def recording_tool(
    name: str,
    log: ToolLog | None = None,
    *,
    gate: asyncio.Event | None = None,
    result: Callable[[Any], AgentToolResult] | None = None,
    raises: str | None = None,
    parameters: Any = None,
    **options: Any,
) -> AgentTool:
    """A tool that records its calls, optionally waits on ``gate``, then returns ``result(args)`` or raises."""
    log = log if log is not None else ToolLog()

    async def execute(call_id: str, args: Any, signal: AbortSignal, on_update: Any) -> AgentToolResult:
        log.started.append(call_id)
        log.args.append(args)
        log.signals.append(signal)
        log.running += 1
        log.max_running = max(log.max_running, log.running)
        try:
            if gate is not None:
                await gate.wait()
            else:
                await asyncio.sleep(0)  # let a sibling start, so overlap is observable
            if raises is not None:
                raise RuntimeError(raises)
            return result(args) if result else AgentToolResult(content=f"{name} ok", details={})
        finally:
            log.running -= 1
            log.finished.append(call_id)

    return AgentTool(
        name=name, label=name, description=name, parameters=parameters or EMPTY_SCHEMA, execute=execute, **options
    )


@dataclass
class Requests:
    """Wraps a stream function and keeps every request's context and options."""

    inner: Any
    contexts: list[Context] = field(default_factory=list)
    options: list[StreamOptions] = field(default_factory=list)
    models: list[Model] = field(default_factory=list)

    def __call__(self, model: Model, context: Context, options: StreamOptions) -> Any:
        self.models.append(model)
        self.contexts.append(context)
        self.options.append(options)
        return self.inner(model, context, options)

    def roles(self, index: int) -> str:
        return "".join(m.role[0] for m in self.contexts[index].messages)

    def texts(self, index: int) -> list[str]:
        from pi_notebook.ai.messages import text_of

        return [text_of(m) for m in self.contexts[index].messages]


def scripted(
    responses: list[Any], *, tools: list[AgentTool] | None = None, tps: float | None = None, **options: Any
) -> tuple[Agent, EventRecorder, FauxProvider, Requests]:
    faux = FauxProvider(tokens_per_second=tps, token_size=(1, 1))
    faux.set_responses(responses)
    requests = Requests(faux.stream)
    agent = Agent(stream_fn=requests, model=faux.model, tools=tools or [], **options)
    recorder = EventRecorder()
    agent.subscribe(recorder)
    return agent, recorder, faux, requests


def roles(messages: list[Any]) -> list[str]:
    return [m.role for m in messages]


def copying_stream_fn(text: str) -> StreamFn:
    """A stream function that hands a NEW partial message object with every event, as Pi's providers do
    (they spread ``{...output}``); the loop allows it."""

    def stream_fn(model: Model, context: Context, options: StreamOptions) -> AssistantMessageEventStream:
        async def events() -> AsyncIterator[AssistantMessageEvent]:
            builder = MessageBuilder(model.api, model.provider, model.id)
            yield StartEvent(builder.start().partial.model_copy(deep=True))
            yield TextStartEvent(builder.text_start().content_index, builder.message.model_copy(deep=True))
            for i in range(0, len(text), 3):
                step = builder.text_delta(0, text[i : i + 3])
                yield TextDeltaEvent(0, step.delta, builder.message.model_copy(deep=True))
            end = builder.text_end(0)
            yield TextEndEvent(0, end.content, builder.message.model_copy(deep=True))
            yield DoneEvent("stop", builder.done("stop").message.model_copy(deep=True))

        return AssistantMessageEventStream(events())

    return stream_fn
