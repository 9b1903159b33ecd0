"""A scripted model: works with no key and no network. Tests, benchmarks and the teaching notebooks use it.

Queue replies with :meth:`FauxProvider.set_responses` / :meth:`FauxProvider.append_responses`, then pass
``faux.stream`` as the stream function and ``faux.model`` as the model. Each request takes the next reply
(a message, or a sync/async factory ``(context, options, state, model) -> AssistantMessage``) and streams it
in chunks of ``token_size`` tokens of 4 characters, paced at ``tokens_per_second`` if given. Behaviour is
Pi's faux provider (PI-SPEC §9.7): abort is checked before the first chunk and between chunks and gives the
partial so far with ``stop_reason="aborted"`` and "Request was aborted"; an empty queue gives an ``error``
message "No more faux responses queued"; usage is estimated as ceil(characters / 4). Unlike Pi's, a faux model
given prices (``models=[{"id": "pricey", "cost": {"input": 3, "output": 15}}]``, dollars per million tokens)
reports a cost, so budgets can be shown without a paid provider.
"""

from __future__ import annotations

import asyncio
import inspect
import random
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from .._abort import AbortSignal, abortable_sleep
from .._builder import MessageBuilder
from .._request import Context, Model, ModelCost, StreamOptions, usage_with_cost
from .._stream import AssistantMessageEventStream
from .._stream_events import AssistantMessageEvent
from ..messages import (
    AssistantMessage,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
)
from ._usage_estimate import PromptCache, PromptMeter, block_body, estimate_tokens, output_chars, usage_estimate

__all__ = [
    "FauxProvider",
    "FauxResponse",
    "FauxState",
    "faux_assistant_message",
    "faux_text",
    "faux_thinking",
    "faux_tool_call",
]

_FREE = ModelCost()
FAUX_API = "faux"
FAUX_PROVIDER = "faux"
_counter = 0


@dataclass
class FauxState:
    call_count: int = 0


FauxFactory: TypeAlias = Callable[
    [Context, StreamOptions, FauxState, Model], "AssistantMessage | Awaitable[AssistantMessage]"
]
FauxResponse: TypeAlias = AssistantMessage | FauxFactory


def faux_text(text: str) -> TextContent:
    return TextContent(text=text)


def faux_thinking(thinking: str) -> ThinkingContent:
    return ThinkingContent(thinking=thinking)


def faux_tool_call(name: str, arguments: dict[str, Any] | None = None, id: str | None = None) -> ToolCall:
    global _counter
    if id is None:
        _counter += 1
        id = f"faux_call_{_counter}"
    return ToolCall(id=id, name=name, arguments=dict(arguments or {}))


def faux_assistant_message(
    content: str | TextContent | ThinkingContent | ToolCall | Iterable[str | TextContent | ThinkingContent | ToolCall],
    stop_reason: StopReason = "stop",
    error_message: str | None = None,
    *,
    response_id: str | None = None,
) -> AssistantMessage:
    """A scripted reply. ``content`` is text, one block, or a list of blocks (strings become text blocks)."""
    if isinstance(content, str):
        blocks: list[TextContent | ThinkingContent | ToolCall] = [faux_text(content)]
    elif isinstance(content, TextContent | ThinkingContent | ToolCall):
        blocks = [content]
    else:
        blocks = [faux_text(b) if isinstance(b, str) else b for b in content]
    return AssistantMessage(
        content=blocks,
        api=FAUX_API,
        provider=FAUX_PROVIDER,
        model="faux-1",
        stop_reason=stop_reason,
        error_message=error_message,
        response_id=response_id,
    )


def _default_model(api: str, provider: str) -> Model:
    return Model(
        id="faux-1",
        name="Faux Model",
        api=api,
        provider=provider,
        base_url="http://localhost:0",
        input=("text", "image"),
        context_window=128_000,
        max_tokens=16_384,
    )


class FauxProvider:
    """A scripted stream function plus the models it serves."""

    def __init__(
        self,
        tokens_per_second: float | None = None,
        token_size: tuple[int, int] = (3, 5),
        models: Sequence[Model | dict[str, Any]] | None = None,
        *,
        api: str = FAUX_API,
        provider: str = FAUX_PROVIDER,
        seed: int | None = None,
    ) -> None:
        low = max(1, min(token_size[0], token_size[1]))
        self._token_size = (low, max(low, token_size[1]))
        self.tokens_per_second = tokens_per_second
        self.api = api
        self.provider = provider
        self.state = FauxState()
        self._pending: deque[FauxResponse] = deque()  # popped from the front per request: O(1)
        self._random = random.Random(seed)
        self._meter = PromptMeter()
        self._prompt_cache = PromptCache()
        if models:
            self.models: tuple[Model, ...] = tuple(self._model(m) for m in models)
        else:
            self.models = (_default_model(api, provider),)

    def _model(self, definition: Model | dict[str, Any]) -> Model:
        if isinstance(definition, Model):
            return definition.model_copy(update={"api": self.api, "provider": self.provider})
        fields = {
            "input": ("text", "image"),
            "name": definition.get("id", ""),
            "base_url": "http://localhost:0",
            **definition,
            "api": self.api,
            "provider": self.provider,
        }
        return Model.model_validate(fields)

    @property
    def model(self) -> Model:
        return self.models[0]

    def get_model(self, model_id: str | None = None) -> Model | None:
        if model_id is None:
            return self.models[0]
        return next((m for m in self.models if m.id == model_id), None)

    # -- the queue ------------------------------------------------------------------------------------
    def set_responses(self, responses: Iterable[FauxResponse]) -> None:
        self._pending = deque(responses)

    def append_responses(self, responses: Iterable[FauxResponse]) -> None:
        self._pending.extend(responses)

    @property
    def pending_count(self) -> int:
        return len(self._pending)

    # -- the stream function --------------------------------------------------------------------------
    def stream(
        self, model: Model, context: Context, options: StreamOptions | None = None
    ) -> AssistantMessageEventStream:
        """Take the next queued reply and stream it. Never raises."""
        step = self._pending.popleft() if self._pending else None
        self.state.call_count += 1
        return AssistantMessageEventStream(self._run(step, model, context, options or StreamOptions()))

    async def _run(
        self, step: FauxResponse | None, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        builder = MessageBuilder(self.api, self.provider, model.id)
        signal = options.signal
        pacer = _Pacer(self.tokens_per_second) if self.tokens_per_second and self.tokens_per_second > 0 else None
        try:
            if options.on_response is not None:
                outcome = options.on_response(200, {})
                if inspect.isawaitable(outcome):
                    await outcome
            if step is None:
                builder.message.usage = self._usage(context, options, 0, model)
                yield builder.error("error", "No more faux responses queued")
                return
            script = step(context, options, self.state, model) if callable(step) else step
            if inspect.isawaitable(script):
                script = await script
            bodies = [block_body(block) for block in script.content]  # a tool call's JSON: once per reply
            output = output_chars(script.content, bodies)
            builder.message.usage = self._usage(context, options, output, model)
            if signal is not None and signal.aborted:
                yield builder.aborted()
                return
            yield builder.start()
            for block, body in zip(script.content, bodies, strict=True):
                if signal is not None and signal.aborted:
                    yield builder.aborted()
                    return
                opened, delta, close = _streamer(builder, block)
                index = opened.content_index
                yield opened
                for chunk in self._chunks(body):
                    if pacer is not None:
                        if not await pacer.wait(chunk, signal):
                            yield builder.aborted()
                            return
                    elif signal is not None and signal.aborted:
                        yield builder.aborted()
                        return
                    yield delta(index, chunk)
                yield close(index)
            finished = _finish(builder, script)
            # The next request's prompt estimate counts this reply: its size is known, no second serialisation.
            self._meter.remember(builder.message, output)
            yield finished
        except Exception as exc:
            failed = MessageBuilder(self.api, self.provider, model.id)
            yield failed.error("error", str(exc) or type(exc).__name__)

    def _chunks(self, text: str) -> Iterable[str]:
        low, high = self._token_size
        if not text:
            return ("",)
        if low == high:
            size = low * 4
            return (text[i : i + size] for i in range(0, len(text), size))
        return self._random_chunks(text, low, high)

    def _random_chunks(self, text: str, low: int, high: int) -> Iterable[str]:
        index = 0
        randint = self._random.randint
        while index < len(text):
            size = randint(low, high) * 4
            yield text[index : index + size]
            index += size

    # -- usage ----------------------------------------------------------------------------------------
    def _usage(self, context: Context, options: StreamOptions, output: int, model: Model) -> Usage:
        usage = usage_estimate(
            self._meter, self._prompt_cache, context, output, options.session_id, options.cache_retention
        )
        return usage_with_cost(model, usage) if model.cost != _FREE else usage


class _Pacer:
    """Keeps a stream at ``tokens_per_second`` on average. It sleeps until each chunk is due rather than for
    each chunk's share, so fast rates (many chunks per millisecond, below the loop's timer resolution) keep
    their average instead of being slowed to one chunk per timer tick."""

    def __init__(self, tokens_per_second: float) -> None:
        self.rate = tokens_per_second
        self.tokens = 0
        self.started: float | None = None

    async def wait(self, chunk: str, signal: AbortSignal | None) -> bool:
        """Wait until ``chunk`` is due; False if the signal aborted."""
        loop = asyncio.get_running_loop()
        if self.started is None:
            self.started = loop.time()
        self.tokens += estimate_tokens(len(chunk))
        delay = self.started + self.tokens / self.rate - loop.time()
        if delay > 0:
            return await abortable_sleep(delay, signal)
        return signal is None or not signal.aborted


def _streamer(builder: MessageBuilder, block: Any) -> tuple[Any, Callable[[int, str], Any], Callable[[int], Any]]:
    """Open a content block on the builder; return its start event and the delta and end steps. The end step
    copies the scripted block's other fields (signatures, redaction) over."""
    start: Any
    delta: Callable[[int, str], Any]
    finish: Callable[[int], Any]
    if isinstance(block, ToolCall):
        start, delta, finish, streamed = (
            builder.toolcall_start(block.id, block.name),
            builder.toolcall_delta,
            builder.toolcall_end,
            "arguments",
        )
    elif isinstance(block, ThinkingContent):
        start, delta, finish, streamed = (
            builder.thinking_start(),
            builder.thinking_delta,
            builder.thinking_end,
            "thinking",
        )
    else:
        start, delta, finish, streamed = (builder.text_start(), builder.text_delta, builder.text_end, "text")

    def end(index: int) -> Any:
        event = finish(index)
        target = builder.message.content[index]
        target.__dict__.update((k, v) for k, v in block.__dict__.items() if k != streamed and v is not None)
        if block.__pydantic_extra__:
            target.__pydantic_extra__ = {**(target.__pydantic_extra__ or {}), **block.__pydantic_extra__}
        return event

    return start, delta, end


def _finish(builder: MessageBuilder, script: AssistantMessage) -> AssistantMessageEvent:
    message = builder.message
    message.response_id = script.response_id
    reason = script.stop_reason
    if reason == "pending":
        return builder.error("error", "Faux response ended without a stop reason")
    if reason == "error" or reason == "aborted":
        return builder.error(reason, script.error_message or "")
    return builder.done(reason)
