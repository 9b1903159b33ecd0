"""The loop's configuration: what one run of the stateless loop needs besides the context."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from pydantic import SecretStr

from ..ai import AbortSignal, MaybeAwaitable, Model, StreamOptions, ThinkingLevel, maybe_await, strip_api_key
from ._hooks import Hooks
from ._types import AgentMessage

__all__ = ["LoopConfig"]


@dataclass(slots=True)
class LoopConfig:
    """Everything the stateless loop needs besides the context. ``Agent`` builds one per run.

    ``hooks`` are the user's (see :class:`Hooks`). The queue callables are the ``Agent``'s plumbing: they poll
    its steering and follow-up queues, and ``requeue`` hands back what was drained but not delivered.
    ``api_key`` is held as a ``SecretStr`` (stripped), so the repr never shows it.
    """

    model: Model
    thinking_level: ThinkingLevel = "off"
    tool_execution: Literal["parallel", "sequential"] = "parallel"
    hooks: Hooks = field(default_factory=Hooks)
    api_key: SecretStr | str | None = None
    get_steering_messages: Callable[[], MaybeAwaitable[Sequence[AgentMessage]]] | None = None
    get_follow_up_messages: Callable[[], MaybeAwaitable[Sequence[AgentMessage]]] | None = None
    requeue: Callable[[list[AgentMessage], str], None] | None = None
    """Given queue messages that were drained but not delivered because the run aborted first, with the
    queue they came from (``"steering"`` or ``"follow_up"``), to put them back at its front."""
    stream_options: StreamOptions = field(default_factory=StreamOptions)
    _last_request: tuple[StreamOptions, object, AbortSignal, object, StreamOptions] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        self.api_key = strip_api_key(self.api_key)

    async def request_options(self, signal: AbortSignal) -> StreamOptions:
        """The options of one model request: the stream options with the key (``get_api_key`` asked now, else
        ``api_key``), the signal and the thinking level.

        Consecutive requests whose options would be equal get the same object (building one per turn was a
        measurable part of a turn), so a stream function must treat its options as read-only.
        """
        get_api_key = self.hooks.get_api_key
        api_key = await maybe_await(get_api_key(self.model.provider)) if get_api_key is not None else None
        key = api_key or self.api_key
        reasoning = None if self.thinking_level == "off" else self.thinking_level
        base, last = self.stream_options, self._last_request
        if last is not None and last[0] is base and last[2] is signal and last[1] == key and last[3] == reasoning:
            return last[4]
        options = replace(base, api_key=key, signal=signal, reasoning=reasoning)
        self._last_request = (base, key, signal, reasoning, options)
        return options
