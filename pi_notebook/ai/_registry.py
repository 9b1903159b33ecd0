"""``stream()`` and ``complete()``: call whichever stream function serves ``model.api``."""

from __future__ import annotations

from ._builder import MessageBuilder
from ._model import Context, Model, StreamFn, StreamOptions
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
    from .providers.anthropic_messages import stream_anthropic_messages
    from .providers.openai_completions import stream_openai_completions

    _apis.setdefault("openai-completions", stream_openai_completions)
    _apis.setdefault("anthropic-messages", stream_anthropic_messages)


def stream(model: Model, context: Context, options: StreamOptions | None = None) -> AssistantMessageEventStream:
    """Stream one assistant message from ``model``. Never raises: an unknown ``model.api`` gives a stream that
    ends with an ``error`` message naming it."""
    _load_builtin()
    stream_fn = _apis.get(model.api)
    if stream_fn is None:
        failed = AssistantMessageEventStream()
        builder = MessageBuilder(model.api, model.provider, model.id)
        known = ", ".join(sorted(_apis))
        failed.push(builder.error("error", f"No stream function for api {model.api!r} (known: {known})"))
        return failed
    result = stream_fn(model, context, options or StreamOptions())
    if isinstance(result, AssistantMessageEventStream):
        return result
    raise TypeError("registered stream functions must return an AssistantMessageEventStream synchronously")


async def complete(model: Model, context: Context, options: StreamOptions | None = None) -> AssistantMessage:
    """The final message of :func:`stream` (errors are data: check ``stop_reason``)."""
    return await stream(model, context, options).result()
