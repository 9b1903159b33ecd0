"""``stream()`` and ``complete()``: call whichever stream function serves ``model.api``."""

from __future__ import annotations

from ._builder import MessageBuilder
from ._request import Context, Model, StreamFn, StreamOptions
from ._stream import AssistantMessageEventStream
from .messages import AssistantMessage

__all__ = ["complete", "register_api", "registered_apis", "stream"]

_apis: dict[str, StreamFn] = {}
_builtin_loaded = False


def register_api(api: str, stream_fn: StreamFn) -> None:
    """Serve ``model.api == api`` with ``stream_fn`` (replacing any earlier registration)."""
    _apis[api] = stream_fn


def registered_apis() -> tuple[str, ...]:
    _load_builtin()
    return tuple(sorted(_apis))


def _load_builtin() -> None:
    """Register the built-in providers once, under any the user registered first."""
    global _builtin_loaded
    if _builtin_loaded:
        return
    _builtin_loaded = True
    from .providers import anthropic_messages, google_generative_ai, openai_completions, openai_responses

    for module in (openai_completions, anthropic_messages, openai_responses, google_generative_ai):
        _apis.setdefault(module.API.name, module.API.stream)


def stream(model: Model, context: Context, options: StreamOptions | None = None) -> AssistantMessageEventStream:
    """Stream one assistant message from ``model``. Never raises: an unknown ``model.api``, or a registered stream
    function that raises (breaking its contract), gives a stream that ends with an ``error`` message saying so.
    A stream function returning an awaitable is awaited by the returned stream."""
    _load_builtin()
    stream_fn = _apis.get(model.api)
    if stream_fn is None:
        known = ", ".join(sorted(_apis))
        return _failed(model, f"No stream function for api {model.api!r} (known: {known})")
    try:
        result = stream_fn(model, context, options or StreamOptions())
    except Exception as exc:
        return _failed(model, f"{type(exc).__name__}: {exc}")
    if isinstance(result, AssistantMessageEventStream):
        return result

    async def forward(outer: AssistantMessageEventStream) -> None:
        async for event in await result:
            outer.push(event)

    return AssistantMessageEventStream.from_producer(forward)


def _failed(model: Model, text: str) -> AssistantMessageEventStream:
    failed = AssistantMessageEventStream()
    failed.push(MessageBuilder(model.api, model.provider, model.id).error("error", text))
    return failed


async def complete(model: Model, context: Context, options: StreamOptions | None = None) -> AssistantMessage:
    """The final message of :func:`stream` (errors are data: check ``stop_reason``)."""
    return await stream(model, context, options).result()
