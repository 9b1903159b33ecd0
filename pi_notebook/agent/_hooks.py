"""The loop's hooks, as one typed object: :class:`Hooks`.

Every hook is optional and may be sync or async (return a value or an awaitable of it). Those given a context
are called ``hook(context, signal)``; the signal may be left out of the hook's parameters
(``should_stop_after_turn=lambda turn: True`` is fine). Hooks must not raise: an exception leaves the loop, and
the ``Agent`` turns it into a synthetic failure message (``run_agent_loop`` used directly does not).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Literal, TypeAlias, TypeVar, cast

from ..ai import AbortSignal, MaybeAwaitable, Message
from ._types import (
    AfterToolCallContext,
    AfterToolCallResult,
    AgentMessage,
    BeforeToolCallContext,
    BeforeToolCallResult,
    FinishTurnResult,
    RequestContext,
    TurnContext,
    TurnUpdate,
)

__all__ = [
    "AfterToolCallHook",
    "BeforeToolCallHook",
    "ContextHook",
    "FinishTurnHook",
    "Hooks",
    "PrepareNextTurnHook",
    "PrepareRequestHook",
    "ShouldStopAfterTurnHook",
    "TransformContextHook",
    "after_result",
    "before_result",
    "call_hook",
    "finish_action",
    "turn_update",
]

C = TypeVar("C")
R = TypeVar("R")

ContextHook: TypeAlias = Callable[[C, AbortSignal], MaybeAwaitable[R]] | Callable[[C], MaybeAwaitable[R]]
"""``hook(context, signal)`` or ``hook(context)``, sync or async, returning ``R``."""

TransformContextHook: TypeAlias = ContextHook[Sequence[AgentMessage], Sequence[AgentMessage]]
BeforeToolCallHook: TypeAlias = ContextHook[BeforeToolCallContext, BeforeToolCallResult | Mapping[str, Any] | None]
AfterToolCallHook: TypeAlias = ContextHook[AfterToolCallContext, AfterToolCallResult | Mapping[str, Any] | None]
FinishTurnHook: TypeAlias = ContextHook[TurnContext, FinishTurnResult | Mapping[str, Any] | None]
PrepareRequestHook: TypeAlias = ContextHook[RequestContext, TurnUpdate | Mapping[str, Any] | None]
PrepareNextTurnHook: TypeAlias = ContextHook[TurnContext, TurnUpdate | Mapping[str, Any] | None]
ShouldStopAfterTurnHook: TypeAlias = ContextHook[TurnContext, bool]


@dataclass(frozen=True, slots=True)
class Hooks:
    """What the loop calls out to, besides the stream function and the tools (PI-SPEC §2; DESIGN §2b).

    - ``convert_to_llm(messages)``: the transcript as the model sees it (default: user, assistant and
      tool-result messages, plus what custom messages' ``to_llm()`` returns).
    - ``transform_context(messages, signal)``: rewrite the transcript before ``convert_to_llm`` (pruning, say).
    - ``get_api_key(provider)``: the key for each request, asked anew (expiring tokens); else ``api_key``.
    - ``before_tool_call(context, signal)``: after validation; ``{"block": True, "reason": ...}`` blocks it.
    - ``after_tool_call(context, signal)``: may replace fields of the result (no deep merge).
    - ``finish_turn(turn, signal)``: before ``turn_end``; ``{"action": "end"}`` ends the run after this turn,
      ``{"action": "continue"}`` guarantees one more request, ``None`` keeps normal scheduling.
    - ``prepare_request(request, signal)``: before every provider request; may replace context, model and
      thinking level (a :class:`TurnUpdate` or a dict of its fields).
    - ``prepare_next_turn(turn, signal)``: after a turn; the same kind of update, for later requests.
    - ``should_stop_after_turn(turn, signal)``: true ends the run after this turn (queues stay queued).

    A hook that leaves out the signal parameter is adapted once, when the ``Hooks`` is made.
    """

    convert_to_llm: Callable[[Sequence[AgentMessage]], MaybeAwaitable[Sequence[Message]]] | None = None
    transform_context: TransformContextHook | None = None
    get_api_key: Callable[[str], MaybeAwaitable[str | None]] | None = None
    before_tool_call: BeforeToolCallHook | None = None
    after_tool_call: AfterToolCallHook | None = None
    finish_turn: FinishTurnHook | None = None
    prepare_request: PrepareRequestHook | None = None
    prepare_next_turn: PrepareNextTurnHook | None = None
    should_stop_after_turn: ShouldStopAfterTurnHook | None = None

    def __post_init__(self) -> None:
        for item in fields(self):
            hook = getattr(self, item.name)
            if hook is None:
                continue
            if not callable(hook):
                raise TypeError(f"{item.name} must be callable, got {type(hook).__name__}")
            if item.name not in _ONE_ARGUMENT:
                object.__setattr__(self, item.name, _with_signal(hook))


_ONE_ARGUMENT = frozenset({"convert_to_llm", "get_api_key"})


def _with_signal(hook: Callable[..., Any]) -> Callable[..., Any]:
    """``hook`` as a two-argument callable ``(context, signal)``, dropping the signal if it takes one."""
    try:
        parameters = inspect.signature(hook).parameters.values()
    except (TypeError, ValueError):
        return hook
    if any(p.kind is p.VAR_POSITIONAL for p in parameters):
        return hook
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) >= 2:
        return hook
    keep = len(positional)
    return lambda *args: hook(*args[:keep])


def call_hook(hook: ContextHook[C, R], context: C, signal: AbortSignal) -> MaybeAwaitable[R]:
    """Call a context hook of a :class:`Hooks` (already adapted to take the signal when it was made)."""
    return cast(Callable[[C, AbortSignal], MaybeAwaitable[R]], hook)(context, signal)


# -- reading the hooks' answers (a typed value or a plain dict, as Pi's hooks return objects) ---------------


def before_result(value: BeforeToolCallResult | Mapping[str, Any] | None) -> BeforeToolCallResult | None:
    """A hook's answer: a ``BeforeToolCallResult`` or a dict; anything else means "go ahead", as in Pi."""
    if isinstance(value, BeforeToolCallResult):
        return value
    if isinstance(value, Mapping):
        return BeforeToolCallResult(
            block=bool(value.get("block")), reason=value.get("reason"), terminate=value.get("terminate") is True
        )
    return None


def after_result(value: AfterToolCallResult | Mapping[str, Any] | None) -> AfterToolCallResult | None:
    """A hook's overrides: an ``AfterToolCallResult`` or a dict; anything else changes nothing, as in Pi."""
    if isinstance(value, AfterToolCallResult):
        return value
    if isinstance(value, Mapping):
        known = {"content", "details", "usage", "terminate", "is_error", "isError"}
        unknown = set(value) - known
        if unknown:
            raise TypeError(f"after_tool_call returned unknown fields: {sorted(unknown)}")
        overrides = dict(value)
        if "isError" in overrides:
            overrides["is_error"] = overrides.pop("isError")
        return AfterToolCallResult(**overrides)
    return None


def turn_update(value: TurnUpdate | Mapping[str, Any] | None, hook: str) -> TurnUpdate | None:
    if value is None or isinstance(value, TurnUpdate):
        return value
    if isinstance(value, Mapping):
        update = dict(value)
        if "thinkingLevel" in update:
            update["thinking_level"] = update.pop("thinkingLevel")
        return TurnUpdate(**update)
    raise TypeError(f"{hook} must return None, a dict or TurnUpdate, got {value!r}")


def finish_action(value: FinishTurnResult | Mapping[str, Any] | None) -> Literal["end", "continue"] | None:
    if value is None:
        return None
    action: object = value
    if isinstance(value, FinishTurnResult):
        action = value.action
    elif isinstance(value, Mapping):
        action = value.get("action")
    if action == "end":
        return "end"
    if action == "continue":
        return "continue"
    raise ValueError(f'finish_turn must return None or {{"action": "end" | "continue"}}, got {value!r}')
