"""The loop's configuration and the small helpers that call user hooks."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeVar

from pydantic import SecretStr

from ..ai import AbortSignal, Model, StreamOptions, ThinkingLevel
from ..ai._secret import strip_api_key
from ._types import (
    AfterToolCallResult,
    AgentMessage,
    BeforeToolCallResult,
    FinishTurnResult,
    TurnUpdate,
)

__all__ = ["LoopConfig", "adapt_hook", "maybe_await"]

T = TypeVar("T")
Hook = Callable[..., Any]


async def maybe_await(value: T | Awaitable[T]) -> T:
    if inspect.isawaitable(value):
        return await value
    return value


def adapt_hook(hook: Hook | None, name: str, arity: int) -> Hook | None:
    """Let a hook omit trailing parameters (typically the abort signal): ``lambda turn: True`` is fine."""
    if hook is None:
        return None
    if not callable(hook):
        raise TypeError(f"{name} must be callable, got {type(hook).__name__}")
    try:
        parameters = inspect.signature(hook).parameters.values()
    except (TypeError, ValueError):
        return hook
    if any(p.kind is p.VAR_POSITIONAL for p in parameters):
        return hook
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) >= arity:
        return hook
    keep = len(positional)
    return lambda *args: hook(*args[:keep])


@dataclass(slots=True)
class LoopConfig:
    """Everything the stateless loop needs besides the context. ``Agent`` builds one per run.

    Hooks take ``(context, signal)`` and may be sync or async. They must not raise: an exception leaves the
    loop, and the ``Agent`` turns it into a synthetic failure message (``run_agent_loop`` used directly
    does not). ``api_key`` is held as a ``SecretStr`` (stripped), so the repr never shows it.
    """

    model: Model
    thinking_level: ThinkingLevel = "off"
    tool_execution: Literal["parallel", "sequential"] = "parallel"
    convert_to_llm: Hook | None = None
    transform_context: Hook | None = None
    get_api_key: Hook | None = None
    api_key: SecretStr | str | None = None
    before_tool_call: Hook | None = None
    after_tool_call: Hook | None = None
    finish_turn: Hook | None = None
    prepare_request: Hook | None = None
    prepare_next_turn: Hook | None = None
    should_stop_after_turn: Hook | None = None
    get_steering_messages: Callable[[], Sequence[AgentMessage] | Awaitable[Sequence[AgentMessage]]] | None = None
    get_follow_up_messages: Callable[[], Sequence[AgentMessage] | Awaitable[Sequence[AgentMessage]]] | None = None
    requeue: Callable[[list[AgentMessage], str], None] | None = None
    """Given queue messages that were drained but not delivered because the run aborted first, with the
    queue they came from (``"steering"`` or ``"follow_up"``), to put them back at its front."""
    stream_options: StreamOptions = field(default_factory=StreamOptions)

    def __post_init__(self) -> None:
        self.api_key = strip_api_key(self.api_key)

    async def request_options(self, signal: AbortSignal) -> StreamOptions:
        """The options of one model request: the stream options with the key (``get_api_key`` asked now, else
        ``api_key``), the signal and the thinking level."""
        api_key = await maybe_await(self.get_api_key(self.model.provider)) if self.get_api_key is not None else None
        reasoning = None if self.thinking_level == "off" else self.thinking_level
        return replace(self.stream_options, api_key=api_key or self.api_key, signal=signal, reasoning=reasoning)


def before_result(value: Any) -> BeforeToolCallResult | None:
    """A hook's answer: a ``BeforeToolCallResult`` or a dict; anything else means "go ahead", as in Pi."""
    if isinstance(value, BeforeToolCallResult):
        return value
    if isinstance(value, dict):
        return BeforeToolCallResult(
            block=bool(value.get("block")), reason=value.get("reason"), terminate=value.get("terminate") is True
        )
    return None


def after_result(value: Any) -> AfterToolCallResult | None:
    """A hook's overrides: an ``AfterToolCallResult`` or a dict; anything else changes nothing, as in Pi."""
    if isinstance(value, AfterToolCallResult):
        return value
    if isinstance(value, dict):
        known = {"content", "details", "usage", "terminate", "is_error", "isError"}
        unknown = set(value) - known
        if unknown:
            raise TypeError(f"after_tool_call returned unknown fields: {sorted(unknown)}")
        fields = dict(value)
        if "isError" in fields:
            fields["is_error"] = fields.pop("isError")
        return AfterToolCallResult(**fields)
    return None


def turn_update(value: Any, hook: str) -> TurnUpdate | None:
    if value is None or isinstance(value, TurnUpdate):
        return value
    if isinstance(value, dict):
        fields = dict(value)
        if "thinkingLevel" in fields:
            fields["thinking_level"] = fields.pop("thinkingLevel")
        return TurnUpdate(**fields)
    raise TypeError(f"{hook} must return None, a dict or TurnUpdate, got {value!r}")


def finish_action(value: Any) -> Literal["end", "continue"] | None:
    if value is None:
        return None
    action = value
    if isinstance(value, FinishTurnResult):
        action = value.action
    elif isinstance(value, dict):
        action = value.get("action")
    if action == "end" or action == "continue":
        return action  # type: ignore[no-any-return]
    raise ValueError(f'finish_turn must return None or {{"action": "end" | "continue"}}, got {value!r}')
