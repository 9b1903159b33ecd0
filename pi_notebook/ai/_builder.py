"""Builds one assistant message from provider output and makes the matching stream events.

Providers (faux, OpenAI-compatible, Anthropic) all call this, so every provider emits the same event
shapes. Text grows without re-copying: see :func:`_append`.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import pydantic_core

from ._stream_events import (
    DoneEvent,
    ErrorEvent,
    StartEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)
from ._trusted import trusted_assistant, trusted_text, trusted_thinking, trusted_tool_call
from .messages import TextContent, ThinkingContent, ToolCall

__all__ = ["ABORTED_TEXT", "MessageBuilder"]

ABORTED_TEXT = "Request was aborted"
"""The ``error_message`` of every aborted reply, as Pi words it."""


def _append(block: TextContent | ThinkingContent, name: str, delta: str) -> None:
    # ``block.text += delta`` copies the whole string each time (O(n^2) over a long stream). Taking the
    # string out of the model first leaves our local as its only reference, so CPython extends it in place.
    # If anyone else holds the old string the append simply copies, which is still correct.
    fields = block.__dict__
    text: str = fields[name]
    fields[name] = ""
    text += delta
    fields[name] = text


class MessageBuilder:
    """The partial message plus helpers returning the event for each step.

    ``api``, ``provider`` and ``model`` must be strings (a :class:`Model`'s fields): the message and its
    blocks are built without pydantic validation (see ``_trusted``), which is a third of a turn's cost.
    """

    __slots__ = ("_args", "message")

    def __init__(self, api: str, provider: str, model: str) -> None:
        self.message = trusted_assistant(api, provider, model, "pending")
        self._args: dict[int, list[str]] = {}

    def start(self) -> StartEvent:
        return StartEvent(self.message)

    # -- text -----------------------------------------------------------------------------------------
    def text_start(self) -> TextStartEvent:
        content = self.message.content
        content.append(trusted_text(""))
        return TextStartEvent(len(content) - 1, self.message)

    def text_delta(self, index: int, delta: str) -> TextDeltaEvent:
        block = self.message.content[index]
        assert isinstance(block, TextContent)
        _append(block, "text", delta)
        return TextDeltaEvent(index, delta, self.message)

    def text_end(self, index: int) -> TextEndEvent:
        block = self.message.content[index]
        assert isinstance(block, TextContent)
        return TextEndEvent(index, block, self.message)

    # -- thinking -------------------------------------------------------------------------------------
    def thinking_start(self) -> ThinkingStartEvent:
        content = self.message.content
        content.append(trusted_thinking(""))
        return ThinkingStartEvent(len(content) - 1, self.message)

    def thinking_delta(self, index: int, delta: str) -> ThinkingDeltaEvent:
        block = self.message.content[index]
        assert isinstance(block, ThinkingContent)
        _append(block, "thinking", delta)
        return ThinkingDeltaEvent(index, delta, self.message)

    def thinking_end(self, index: int) -> ThinkingEndEvent:
        block = self.message.content[index]
        assert isinstance(block, ThinkingContent)
        return ThinkingEndEvent(index, block, self.message)

    # -- tool calls -----------------------------------------------------------------------------------
    def toolcall_start(self, call_id: str, name: str) -> ToolCallStartEvent:
        content = self.message.content
        if type(call_id) is str and type(name) is str:
            content.append(trusted_tool_call(call_id, name, {}))
        else:  # straight from a provider's JSON: let validation reject what is not a string
            content.append(ToolCall(id=call_id, name=name, arguments={}))
        index = len(content) - 1
        self._args[index] = []
        return ToolCallStartEvent(index, self.message)

    def toolcall_delta(self, index: int, delta: str) -> ToolCallDeltaEvent:
        self._args[index].append(delta)
        return ToolCallDeltaEvent(index, delta, self.message)

    def toolcall_arguments(self, index: int) -> str:
        """The argument JSON streamed so far for the call at ``index`` (``""`` once it ended)."""
        return "".join(self._args.get(index, ()))

    def toolcall_replace(self, index: int, raw: str) -> None:
        """Replace the argument JSON streamed so far (a server's final text that disagrees); no event."""
        self._args[index] = [raw]

    def toolcall_end(self, index: int, arguments: dict[str, Any] | None = None) -> ToolCallEndEvent:
        """Finish a call; ``arguments`` defaults to the JSON streamed so far, salvaged as Pi does when it is not
        valid (:func:`parse_arguments`; the text itself is kept in ``unparsed_arguments``)."""
        block = self.message.content[index]
        assert isinstance(block, ToolCall)
        raw = self._args.pop(index, ())
        if arguments is None:
            _set_arguments(block, "".join(raw))
        else:
            block.arguments = arguments
        return ToolCallEndEvent(index, block, self.message)

    # -- end ------------------------------------------------------------------------------------------
    def end_block(self, index: int) -> TextEndEvent | ThinkingEndEvent | ToolCallEndEvent:
        """End the block at ``index``, whatever its kind (a tool call's arguments are parsed from its JSON)."""
        block = self.message.content[index]
        if isinstance(block, TextContent):
            return self.text_end(index)
        if isinstance(block, ThinkingContent):
            return self.thinking_end(index)
        return self.toolcall_end(index)

    def done(self, reason: Literal["stop", "length", "toolUse", "deferred"]) -> DoneEvent:
        self.message.stop_reason = reason
        return DoneEvent(reason, self.message)

    def aborted(self) -> ErrorEvent:
        """End as aborted: the partial message so far, with :data:`ABORTED_TEXT`."""
        return self.error("aborted", ABORTED_TEXT)

    def error(self, reason: Literal["error", "aborted"], error_message: str) -> ErrorEvent:
        message = self.message
        self._finish_open_calls()
        message.stop_reason = reason
        message.error_message = error_message
        return ErrorEvent(reason, message)

    def _finish_open_calls(self) -> None:
        # Calls cut off mid-stream keep whatever arguments parsed; they are never executed (the loop
        # stops on error/aborted) and transform_messages drops the message from later requests.
        for index in list(self._args):
            block = self.message.content[index]
            if isinstance(block, ToolCall):
                _set_arguments(block, "".join(self._args.pop(index)))


def _set_arguments(block: ToolCall, raw: str) -> None:
    try:
        value = json.loads(raw) if raw.strip() else {}
    except ValueError:
        value = None
    if isinstance(value, dict):
        block.arguments = value
    else:  # the rare path: salvage what parses, keep what was sent
        block.arguments = parse_arguments(raw)
        block.unparsed_arguments = raw


def parse_arguments(raw: str) -> dict[str, Any]:
    """Pi's ``parseStreamingJson``: the JSON object, repaired if need be (raw control characters and invalid
    escapes inside strings), else as much of it as parses (a cut-off object keeps its complete members), else
    ``{}``. Anything but an object gives ``{}``."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        value = _salvage(raw)
    return value if isinstance(value, dict) else {}


def _salvage(raw: str) -> Any:
    repaired = repair_json(raw)
    for parse, text in ((json.loads, repaired), (_partial, raw), (_partial, repaired)):
        try:
            return parse(text)
        except ValueError:
            continue
    return {}


def _partial(text: str) -> Any:
    return pydantic_core.from_json(text, allow_partial=True)


_VALID_ESCAPES = frozenset('"\\/bfnrtu')
_CONTROL_ESCAPES = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def repair_json(text: str) -> str:
    """Pi's ``repairJson``: inside strings, escape raw control characters and double a backslash that starts no
    valid escape (``"C:\\path"`` as models often write it)."""
    out: list[str] = []
    in_string = False
    index = 0
    while index < len(text):
        char = text[index]
        if not in_string:
            in_string = char == '"'
            out.append(char)
        elif char == '"':
            in_string = False
            out.append(char)
        elif char == "\\":
            following = text[index + 1 : index + 2]
            if following == "u" and _is_hex4(text[index + 2 : index + 6]):
                out.append(text[index : index + 6])
                index += 5
            elif following and following in _VALID_ESCAPES and following != "u":
                out.append(char + following)
                index += 1
            else:
                out.append("\\\\")
        elif ord(char) < 0x20:
            out.append(_CONTROL_ESCAPES.get(char, f"\\u{ord(char):04x}"))
        else:
            out.append(char)
        index += 1
    return "".join(out)


def _is_hex4(text: str) -> bool:
    return len(text) == 4 and all(c in "0123456789abcdefABCDEF" for c in text)
