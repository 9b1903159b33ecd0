"""Constructors for the messages the engine builds on every turn, without pydantic validation.

Validating a model we assemble ourselves from values whose types are already known buys nothing and cost
about a third of a turn (an assistant message validates three models, a tool call runs pydantic's private-
attribute setup). Each function here returns exactly what validation would (same ``__dict__``, fields set,
extra and private state: pinned by ``tests/ai/test_trusted.py``), given arguments of the annotated types.
Callers guarantee those types; anything from outside (a provider's JSON, a tool's result) is checked before
it comes here or goes through the validating constructor instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from .messages import (
    AssistantMessage,
    Cost,
    ImageContent,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    now_ms,
)

__all__ = [
    "trusted_assistant",
    "trusted_text",
    "trusted_thinking",
    "trusted_tool_call",
    "trusted_tool_result",
    "trusted_usage",
]

M = TypeVar("M", bound=BaseModel)
_set = object.__setattr__
_new = object.__new__


def _build(cls: type[M], values: dict[str, Any], fields_set: set[str], private: dict[str, Any] | None = None) -> M:
    model = _new(cls)
    _set(model, "__dict__", values)
    _set(model, "__pydantic_fields_set__", fields_set)
    _set(model, "__pydantic_extra__", {})  # extra="allow": validation leaves an empty dict
    _set(model, "__pydantic_private__", private)
    return model


def trusted_text(text: str) -> TextContent:
    """``TextContent(text=text)``."""
    return _build(TextContent, {"type": "text", "text": text, "text_signature": None}, {"text"})


def trusted_thinking(thinking: str) -> ThinkingContent:
    """``ThinkingContent(thinking=thinking)``."""
    values = {"type": "thinking", "thinking": thinking, "thinking_signature": None, "redacted": None}
    return _build(ThinkingContent, values, {"thinking"})


def trusted_tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> ToolCall:
    """``ToolCall(id=call_id, name=name, arguments=arguments)`` (``arguments`` is kept, not copied)."""
    values = {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments, "thought_signature": None}
    return _build(ToolCall, values, {"id", "name", "arguments"}, {"_unparsed": None})


def _cost() -> Cost:
    values = {"input": 0.0, "output": 0.0, "cache_read": 0.0, "cache_write": 0.0, "total": 0.0}
    return _build(Cost, values, set())


_COUNTS = ("input", "output", "cache_read", "cache_write", "total_tokens")


def _usage(counts: tuple[int, int, int, int, int], fields_set: set[str]) -> Usage:
    input, output, cache_read, cache_write, total_tokens = counts
    values: dict[str, Any] = {
        "input": input,
        "output": output,
        "cache_read": cache_read,
        "cache_write": cache_write,
        "total_tokens": total_tokens,
        "cost": _cost(),
        "reasoning": None,
        "cache_write_1h": None,
        "estimated": None,
    }
    return _build(Usage, values, fields_set)


def trusted_usage(*, input: int, output: int, cache_read: int, cache_write: int, total_tokens: int) -> Usage:
    """``Usage(input=..., output=..., cache_read=..., cache_write=..., total_tokens=...)`` (zero cost)."""
    return _usage((input, output, cache_read, cache_write, total_tokens), set(_COUNTS))


def trusted_assistant(api: str, provider: str, model: str, stop_reason: StopReason) -> AssistantMessage:
    """``AssistantMessage(api=api, provider=provider, model=model, stop_reason=stop_reason)``: empty content,
    zero usage, stamped now."""
    values: dict[str, Any] = {
        "role": "assistant",
        "content": [],
        "api": api,
        "provider": provider,
        "model": model,
        "response_id": None,
        "usage": _usage((0, 0, 0, 0, 0), set()),
        "stop_reason": stop_reason,
        "error_message": None,
        "timestamp": now_ms(),
        "request_failure": None,
    }
    return _build(AssistantMessage, values, {"api", "provider", "model", "stop_reason"})


def trusted_tool_result(
    tool_call_id: str,
    tool_name: str,
    content: Sequence[TextContent | ImageContent],
    details: Any,
    is_error: bool,
) -> ToolResultMessage:
    """``ToolResultMessage(tool_call_id=..., tool_name=..., content=content, details=details, usage=None,
    added_tool_names=None, is_error=is_error)``, stamped now. ``content`` (copied into a new list) must hold
    only ``TextContent`` and ``ImageContent`` instances (validation keeps such instances as they are)."""
    values: dict[str, Any] = {
        "role": "toolResult",
        "tool_call_id": tool_call_id,
        "tool_name": tool_name,
        "content": list(content),
        "details": details,
        "usage": None,
        "added_tool_names": None,
        "is_error": is_error,
        "timestamp": now_ms(),
    }
    fields_set = {"tool_call_id", "tool_name", "content", "details", "usage", "added_tool_names", "is_error"}
    return _build(ToolResultMessage, values, fields_set)
