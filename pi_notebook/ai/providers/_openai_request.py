"""The body of an OpenAI chat-completions request, shaped by what the server accepts (Pi's ``buildParams`` and
``convertMessages``, with the settings of :mod:`pi_notebook.ai._compat`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .._compat import ResolvedOpenAICompat, resolve_openai_compat
from .._request import Context, Model, StreamOptions
from ..messages import (
    AssistantMessage,
    ImageContent,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from ..transform import transform_messages

__all__ = ["build_payload"]

_EFFORT = {"minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": "high", "max": "high"}
_BRIDGE = {"role": "assistant", "content": "I have processed the tool results."}  # Pi's text


def build_payload(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    """The JSON body. The output limit is ``options.max_tokens``, else ``model.max_tokens`` when it was set
    explicitly (see :class:`~pi_notebook.ai.Model`), in the field the server reads."""
    compat = resolve_openai_compat(model)
    payload: dict[str, Any] = {"model": model.id, "messages": _messages(model, context, compat), "stream": True}
    if compat.supports_usage_in_streaming:
        payload["stream_options"] = {"include_usage": True}
    max_tokens = options.max_tokens or (model.max_tokens if "max_tokens" in model.model_fields_set else None)
    if max_tokens:
        payload[compat.max_tokens_field] = max_tokens
    if options.temperature is not None:
        payload["temperature"] = options.temperature
    if context.tools:
        payload["tools"] = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": dict(t.parameters)},
            }
            for t in context.tools
        ]
    elif _has_tool_history(context.messages):
        payload["tools"] = []  # as Pi: Anthropic behind LiteLLM wants the field once tools were used
    if options.tool_choice is not None:
        payload["tool_choice"] = options.tool_choice
    if options.reasoning and model.reasoning and compat.supports_reasoning_effort:
        payload["reasoning_effort"] = _EFFORT.get(options.reasoning, "medium")
    return payload


def _has_tool_history(messages: Sequence[Message]) -> bool:
    return any(
        isinstance(m, ToolResultMessage)
        or (isinstance(m, AssistantMessage) and any(isinstance(b, ToolCall) for b in m.content))
        for m in messages
    )


def _messages(model: Model, context: Context, compat: ResolvedOpenAICompat) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = []
    if context.system_prompt:
        role = "developer" if model.reasoning and compat.supports_developer_role else "system"
        wire.append({"role": role, "content": context.system_prompt})
    after_tool_results = False
    for message in transform_messages(context.messages, model):
        if isinstance(message, UserMessage):
            if after_tool_results and compat.requires_assistant_after_tool_result:
                wire.append(dict(_BRIDGE))
            user = _user(message, compat)
            if user is not None:
                wire.append(user)
            after_tool_results = False
        elif isinstance(message, AssistantMessage):
            assistant = _assistant(message, compat)
            if assistant is not None:
                wire.append(assistant)
            after_tool_results = False
        elif isinstance(message, ToolResultMessage):
            after_tool_results = _tool_result(wire, message, model, compat)
    return wire


def _user(message: UserMessage, compat: ResolvedOpenAICompat) -> dict[str, Any] | None:
    content = message.content
    if isinstance(content, str):
        return {"role": "user", "content": content}
    if not content:
        return None
    if compat.user_text_as_string and all(isinstance(block, TextContent) for block in content):
        return {"role": "user", "content": "\n".join(block.text for block in content if isinstance(block, TextContent))}
    return {"role": "user", "content": [_part(block) for block in content]}


def _assistant(message: AssistantMessage, compat: ResolvedOpenAICompat) -> dict[str, Any] | None:
    """Text as one string (Pi: parts make some models echo the structure); a tool-call-only message gets
    ``null`` or ``""`` as the server accepts; a message with neither text nor calls is left out (Pi)."""
    text = "".join(b.text for b in message.content if isinstance(b, TextContent) and b.text.strip())
    calls = [b for b in message.content if isinstance(b, ToolCall)]
    if not text and not calls:
        return None
    null_ok = compat.supports_null_assistant_content and not compat.requires_assistant_after_tool_result
    out: dict[str, Any] = {"role": "assistant", "content": text or (None if null_ok else "")}
    if calls:
        out["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
            for c in calls
        ]
    return out


def _tool_result(
    wire: list[dict[str, Any]], message: ToolResultMessage, model: Model, compat: ResolvedOpenAICompat
) -> bool:
    """Append the tool message (and its images as a user message); True when the last one is a tool message."""
    text = "\n".join(b.text for b in message.content if isinstance(b, TextContent))
    images = [b for b in message.content if isinstance(b, ImageContent)]
    result: dict[str, Any] = {"role": "tool", "tool_call_id": message.tool_call_id, "content": text or "(no output)"}
    if compat.requires_tool_result_name and message.tool_name:
        result["name"] = message.tool_name
    wire.append(result)
    if not (images and model.supports_images):
        return True
    if compat.requires_assistant_after_tool_result:
        wire.append(dict(_BRIDGE))
    parts = [{"type": "text", "text": f"Images from tool {message.tool_name}:"}] + [_part(i) for i in images]
    wire.append({"role": "user", "content": parts})  # tool messages carry text only
    return False


def _part(block: TextContent | ImageContent) -> dict[str, Any]:
    if isinstance(block, ImageContent):
        return {"type": "image_url", "image_url": {"url": f"data:{block.mime_type};base64,{block.data}"}}
    return {"type": "text", "text": block.text}
