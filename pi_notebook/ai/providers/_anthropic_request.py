"""The body of an Anthropic Messages request, as Pi 0.83's ``streamSimple`` builds it (``buildParams``,
``convertMessages``, ``convertTools``), prompt-cache breakpoints included.

Caching: with retention ``short`` or ``long`` the system prompt, the last tool and the last user message carry
``cache_control: {"type": "ephemeral"}`` (``"ttl": "1h"`` for long), so each request reads the conversation up to
its previous breakpoint from the cache and writes the new part. ``tests/ai/test_pi_requests.py`` compares this
body, field for field, with what Pi sends for the same context.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._compat import AnthropicCompat, resolve_anthropic_compat
from .._request import Context, Model, StreamOptions, Tool
from ..messages import (
    AssistantMessage,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from ..transform import transform_messages
from ._caching import cache_control, resolve_cache_retention
from ._ids import safe_id
from ._limits import clamp_max_tokens_to_context, thinking_budget

__all__ = ["INTERLEAVED_THINKING_BETA", "beta_header", "build_payload"]

INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"
FINE_GRAINED_TOOL_STREAMING_BETA = "fine-grained-tool-streaming-2025-05-14"
_IMAGE_ONLY = "(see attached image)"
_EFFORT = {"minimal": "low", "low": "low", "medium": "medium", "high": "high"}


def beta_header(model: Model, context: Context) -> str:
    """Pi's ``anthropic-beta``: interleaved thinking (unless adaptive), fine-grained tool streaming when tools
    cannot stream eagerly."""
    compat = resolve_anthropic_compat(model)
    betas = (
        [] if not context.tools or compat.supports_eager_tool_input_streaming else [FINE_GRAINED_TOOL_STREAMING_BETA]
    )
    if not compat.force_adaptive_thinking:
        betas.append(INTERLEAVED_THINKING_BETA)
    return ",".join(betas)


def build_payload(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    compat = resolve_anthropic_compat(model)
    control = cache_control(resolve_cache_retention(options), supports_long=compat.supports_long_cache_retention)
    messages = transform_messages(context.messages, model, normalize_tool_call_id=lambda call_id, *_: safe_id(call_id))
    max_tokens = clamp_max_tokens_to_context(model, context, options.max_tokens or model.max_tokens)
    payload: dict[str, Any] = {"model": model.id, "messages": _messages(messages, control), "stream": True}
    thinking = bool(options.reasoning) and model.reasoning
    if thinking and not compat.force_adaptive_thinking:
        limit, budget = thinking_budget(max_tokens, model.max_tokens, options.reasoning or "medium")
        max_tokens = clamp_max_tokens_to_context(model, context, limit)
        budget = min(budget, max(0, max_tokens - 1024)) or 1024
        payload["thinking"] = {"type": "enabled", "budget_tokens": budget, "display": "summarized"}
    elif thinking:
        payload["thinking"] = {"type": "adaptive", "display": "summarized"}
        payload["output_config"] = {"effort": _effort(model, options.reasoning or "high")}
    elif model.reasoning and (model.thinking_level_map or {}).get("off", "") is not None:
        payload["thinking"] = {"type": "disabled"}
    payload["max_tokens"] = max_tokens
    if context.system_prompt:
        payload["system"] = [{"type": "text", "text": context.system_prompt, **_marked(control)}]
    if options.temperature is not None and not thinking and compat.supports_temperature:
        payload["temperature"] = options.temperature
    if context.tools:
        payload["tools"] = _tools(context.tools, compat, control if compat.supports_cache_control_on_tools else None)
    if options.tool_choice is not None:
        choice = options.tool_choice
        payload["tool_choice"] = {"type": choice} if isinstance(choice, str) else dict(choice)
    return payload


def _effort(model: Model, level: str) -> str:
    named = (model.thinking_level_map or {}).get(level)
    return named if isinstance(named, str) else _EFFORT.get(level, "high")


def _marked(control: dict[str, Any] | None) -> dict[str, Any]:
    return {"cache_control": control} if control else {}


def _tools(tools: Sequence[Tool], compat: AnthropicCompat, control: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Pi's ``convertTools``: the schema reduced to ``type``, ``properties`` and ``required``."""
    out = []
    for index, tool in enumerate(tools):
        schema = tool.parameters
        wire: dict[str, Any] = {"name": tool.name, "description": tool.description}
        if compat.supports_eager_tool_input_streaming:
            wire["eager_input_streaming"] = True
        wire["input_schema"] = {
            "type": "object",
            "properties": schema.get("properties") or {},
            "required": schema.get("required") or [],
        }
        if control and index == len(tools) - 1:
            wire["cache_control"] = control
        out.append(wire)
    return out


def _messages(messages: Sequence[Message], control: dict[str, Any] | None) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        if isinstance(message, UserMessage):
            user = _user(message)
            if user is not None:
                wire.append(user)
        elif isinstance(message, AssistantMessage):
            blocks = [part for block in message.content if (part := _assistant_part(block)) is not None]
            if blocks:
                wire.append({"role": "assistant", "content": blocks})
        else:  # consecutive tool results answer in one user message
            results = [_tool_result(message)]
            while index < len(messages) and isinstance(messages[index], ToolResultMessage):
                results.append(_tool_result(messages[index]))  # type: ignore[arg-type]
                index += 1
            wire.append({"role": "user", "content": results})
    if control and wire and wire[-1]["role"] == "user":
        _mark_last(wire[-1], control)
    return wire


def _mark_last(message: dict[str, Any], control: dict[str, Any]) -> None:
    """The breakpoint that caches the conversation: on the last user message's last block."""
    content = message["content"]
    if isinstance(content, str):
        message["content"] = [{"type": "text", "text": content, "cache_control": control}]
    elif content and content[-1].get("type") in ("text", "image", "tool_result"):
        content[-1]["cache_control"] = control


def _user(message: UserMessage) -> dict[str, Any] | None:
    content = message.content
    if isinstance(content, str):
        return {"role": "user", "content": content} if content.strip() else None
    parts = [_part(block) for block in content if not (isinstance(block, TextContent) and not block.text.strip())]
    return {"role": "user", "content": parts} if parts else None


def _tool_result(message: ToolResultMessage) -> dict[str, Any]:
    return {
        "type": "tool_result",
        "tool_use_id": message.tool_call_id,
        "content": _result_content(message.content),
        "is_error": message.is_error,
    }


def _result_content(content: Sequence[TextContent | ImageContent]) -> str | list[dict[str, Any]]:
    """Text only: one string; with images: blocks, led by a placeholder text when there is no text."""
    if not any(isinstance(block, ImageContent) for block in content):
        return "\n".join(block.text for block in content if isinstance(block, TextContent))
    blocks = [_part(block) for block in content]
    if not any(isinstance(block, TextContent) for block in content):
        blocks.insert(0, {"type": "text", "text": _IMAGE_ONLY})
    return blocks


def _part(block: TextContent | ImageContent) -> dict[str, Any]:
    if isinstance(block, ImageContent):
        return {"type": "image", "source": {"type": "base64", "media_type": block.mime_type, "data": block.data}}
    return {"type": "text", "text": block.text}


def _assistant_part(block: TextContent | ThinkingContent | ToolCall) -> dict[str, Any] | None:
    if isinstance(block, ToolCall):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.arguments}
    if isinstance(block, ThinkingContent):
        signature = block.thinking_signature or ""
        if block.redacted:
            return {"type": "redacted_thinking", "data": signature}
        if not signature.strip():  # unsigned thinking (a stream cut short) cannot be replayed as thinking
            return {"type": "text", "text": block.thinking} if block.thinking.strip() else None
        return {"type": "thinking", "thinking": block.thinking, "signature": signature}
    return {"type": "text", "text": block.text} if block.text.strip() else None
