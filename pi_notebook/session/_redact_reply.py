"""Keys out of the model's replies: what the model writes is redacted before anyone sees it.

A model can only write a key it was given, but it may have been given one (a user who pasted it, a tool output
from before redaction covered that key, a server that echoes its input), and its reply goes to the widget as it
streams, to the session file, to the notebook's outputs and, in the next request, back to a provider. So the
session (``AgentSession._on_agent_event``) passes each reply through a :class:`ReplyRedactor` when it knows a key
(``_redact.SessionKeys``; with none, nothing is added to the per-delta path):

- Text, thinking and tool-call argument deltas reach the session's listeners redacted. A delta whose end could
  be the start of a key (a suffix that is a prefix of one of the key's spellings) is held back until the next
  delta of its block shows whether it is; so a key streamed in pieces (one token at a time) never reaches the
  widget, not even as pieces.
  What is held is passed on (redacted) before the block's end event, or before ``message_end`` when the reply
  stops mid-block.
- At ``message_end``, before the session file is written and before listeners are told, the message itself is
  redacted in place: text, thinking, the string values in tool-call arguments (so a call cannot carry a key on:
  the tool runs with ``***``) and the error message. The transcript holds that message, so the next request sends
  the redacted text.

What is not covered: the agent's own listeners (``session.agent.subscribe``) see the raw deltas, and the
``message`` of ``message_start``/``message_update`` events is the live partial message the provider is still
filling (see ``pi_notebook.ai``), which holds the raw text until ``message_end``. The session's listeners get
redacted content (deltas, tool events, the final message), and so everything the notebook shows: the run widget
draws deltas, and runs keep only messages that reached ``message_end``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..agent import MessageUpdateEvent
from ..ai import (
    AssistantMessage,
    TextContent,
    TextDeltaEvent,
    TextEndEvent,
    ThinkingContent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    scrub_secrets,
    secret_spellings,
)
from ._redact import redact_text, redact_value

__all__ = ["ReplyRedaction", "ReplyRedactor", "redact_message"]


class ReplyRedaction:
    """The session's side: a :class:`ReplyRedactor` for each reply while the session knows a key, its events
    passed to ``emit``."""

    __slots__ = ("_emit", "_keys", "redactor")

    def __init__(self, keys: Callable[[], list[str]], emit: Callable[[Any], None]) -> None:
        self._keys = keys
        self._emit = emit
        self.redactor: ReplyRedactor | None = None

    def start(self) -> None:
        """A reply starts (``message_start``): the keys are read now."""
        keys = self._keys()
        self.redactor = ReplyRedactor(keys) if keys else None

    def update(self, event: MessageUpdateEvent) -> None:
        assert self.redactor is not None
        for step in self.redactor.step(event):
            self._emit(step)

    def end(self, message: object) -> None:
        """At ``message_end`` of a reply: pass on what is still held, then redact the message in place."""
        if not isinstance(message, AssistantMessage):
            return
        redactor, self.redactor = self.redactor, None
        for step in redactor.finish(message) if redactor is not None else ():
            self._emit(step)
        keys = self._keys()
        if keys:
            redact_message(message, keys)


class ReplyRedactor:
    """Redacts ``keys`` from one streaming reply's deltas (see the module docstring)."""

    __slots__ = ("_held", "_keys", "_spellings", "_starts")

    def __init__(self, keys: list[str]) -> None:
        self._keys = keys
        self._spellings = secret_spellings(keys)
        self._starts = frozenset(spelling[0] for spelling in self._spellings)
        self._held: dict[int, tuple[type[_Delta], str]] = {}  # content index -> (its delta type, text held back)

    def step(self, event: MessageUpdateEvent) -> list[MessageUpdateEvent]:
        """The events to pass on for one streaming step (none while a delta is held back whole)."""
        step = event.assistant_message_event
        if isinstance(step, _DELTAS):
            kind = type(step)
            text = self._pass(step.content_index, kind, step.delta)
            return [_delta(event.message, step.content_index, kind, text)] if text else []
        if isinstance(step, TextEndEvent | ThinkingEndEvent | ToolCallEndEvent):
            return [*self._release(event.message, step.content_index), event]
        return [event]

    def finish(self, message: AssistantMessage) -> list[MessageUpdateEvent]:
        """What is still held (a reply that stopped mid-block), as deltas to pass on before ``message_end``."""
        return [event for index in sorted(self._held) for event in self._release(message, index)]

    def _pass(self, index: int, kind: type[_Delta], delta: str) -> str:
        _, held = self._held.pop(index, (kind, ""))
        text = scrub_secrets(held + delta, self._keys)
        hold = self._prefix_at_end(text)
        if hold:
            self._held[index] = (kind, text[-hold:])
            return text[:-hold]
        return text

    def _prefix_at_end(self, text: str) -> int:
        """The length of the longest end of ``text`` that is a proper beginning of a key's spelling."""
        longest = len(self._spellings[0]) if self._spellings else 0
        for start in range(max(0, len(text) - longest + 1), len(text)):
            if text[start] in self._starts:
                tail = text[start:]
                if any(spelling.startswith(tail) for spelling in self._spellings):
                    return len(text) - start
        return 0

    def _release(self, message: AssistantMessage, index: int) -> list[MessageUpdateEvent]:
        entry = self._held.pop(index, None)
        if entry is None:
            return []
        kind, held = entry
        text = redact_text(held, self._keys)  # a key cut off at the end is redacted too
        return [_delta(message, index, kind, text)] if text else []


_Delta = TextDeltaEvent | ThinkingDeltaEvent | ToolCallDeltaEvent
_DELTAS = (TextDeltaEvent, ThinkingDeltaEvent, ToolCallDeltaEvent)


def _delta(message: AssistantMessage, index: int, kind: type[_Delta], text: str) -> MessageUpdateEvent:
    return MessageUpdateEvent(message, kind(index, text, message))


def redact_message(message: AssistantMessage, keys: list[str]) -> None:
    """Redact ``keys`` from ``message`` in place: text, thinking, tool-call arguments, the error message."""
    for block in message.content:
        if isinstance(block, TextContent):
            block.text = redact_text(block.text, keys)
        elif isinstance(block, ThinkingContent):
            block.thinking = redact_text(block.thinking, keys)
        elif isinstance(block, ToolCall):
            block.arguments = redact_value(block.arguments, keys)
    if message.error_message:
        message.error_message = redact_text(message.error_message, keys)
