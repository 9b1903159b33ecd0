"""The body of an OpenAI chat-completions request, shaped by what the server accepts (Pi's ``buildParams`` and
``convertMessages``, with the settings of :mod:`pi_notebook.ai._compat`).

Caching: OpenAI caches a prompt's prefix by itself; ``prompt_cache_key`` (the session id, at most 64 characters)
routes a session's requests to the machine that holds its cache. As in Pi it is sent to OpenAI's own API unless
retention is ``none``, and to any server with long retention, together with ``prompt_cache_retention: "24h"``.
Servers reached through an Anthropic-style cache (OpenRouter's ``anthropic/…`` models) get ``cache_control``
breakpoints instead. ``tests/ai/test_pi_requests.py`` compares this body with Pi's, field for field, and says
where ours differs and why.
"""

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
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from ..transform import transform_messages
from ._caching import cache_control, clamp_prompt_cache_key, resolve_cache_retention
from ._ids import completions_tool_call_id
from ._limits import clamp_max_tokens_to_context, clamp_thinking_level, wire_thinking_level

__all__ = ["build_payload", "compact_json"]

_BRIDGE = {"role": "assistant", "content": "I have processed the tool results."}  # Pi's text
_TOOL_IMAGES = "Attached image(s) from tool result:"


def compact_json(value: Any) -> str:
    """``JSON.stringify``'s spelling (no spaces, non-ASCII kept): tool-call arguments as Pi sends them."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def build_payload(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    """The JSON body. The output limit is sent as Pi sends it (the model's, cut to what is left of the context
    window) to the hosted APIs Pi knows; a server it does not know gets one only when set explicitly
    (``options.max_tokens``, or ``model.max_tokens`` given by hand): its own default is "until the context is
    full", and Pi's clamp gives a 2,048-token server a limit of 1."""
    compat = resolve_openai_compat(model)
    retention = resolve_cache_retention(options)
    payload: dict[str, Any] = {"model": model.id, "messages": _messages(model, context, compat), "stream": True}
    long_retention = retention == "long" and compat.supports_long_cache_retention
    if ("api.openai.com" in model.base_url and retention != "none") or long_retention:
        key = clamp_prompt_cache_key(options.session_id)
        if key is not None:
            payload["prompt_cache_key"] = key
    if long_retention:
        payload["prompt_cache_retention"] = "24h"
    if compat.supports_usage_in_streaming:
        payload["stream_options"] = {"include_usage": True}
    if compat.supports_store:
        payload["store"] = False
    max_tokens = _max_tokens(model, context, options, compat)
    if max_tokens:
        payload[compat.max_tokens_field] = max_tokens
    if options.temperature is not None:
        payload["temperature"] = options.temperature
    if context.tools:
        payload["tools"] = [_tool(tool.name, tool.description, tool.parameters, compat) for tool in context.tools]
    elif _has_tool_history(context.messages):
        payload["tools"] = []  # as Pi: Anthropic behind LiteLLM wants the field once tools were used
    control = cache_control(retention, supports_long=compat.supports_long_cache_retention)
    if compat.cache_control_format == "anthropic" and control:
        _mark_for_anthropic(payload, control)
    if options.tool_choice is not None:
        payload["tool_choice"] = options.tool_choice
    effort = _reasoning_effort(model, options, compat)
    if effort is not None:
        payload["reasoning_effort"] = effort
    return payload


def _max_tokens(model: Model, context: Context, options: StreamOptions, compat: ResolvedOpenAICompat) -> int | None:
    explicit = options.max_tokens or (model.max_tokens if "max_tokens" in model.model_fields_set else None)
    if compat.send_max_tokens:
        return clamp_max_tokens_to_context(model, context, explicit or model.max_tokens)
    return explicit


def _reasoning_effort(model: Model, options: StreamOptions, compat: ResolvedOpenAICompat) -> str | None:
    """Pi's ``reasoning_effort``: the level clamped to what the model has, under its wire name; with thinking off,
    the model's name for "off" if it has one."""
    if not (model.reasoning and compat.supports_reasoning_effort):
        return None
    level = clamp_thinking_level(model, options.reasoning) if options.reasoning else "off"
    if level == "off":
        off = (model.thinking_level_map or {}).get("off")
        return off if isinstance(off, str) else None
    return wire_thinking_level(model, level)


def _tool(name: str, description: str, parameters: Any, compat: ResolvedOpenAICompat) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name, "description": description, "parameters": dict(parameters)}
    if compat.supports_strict_mode:
        function["strict"] = False
    return {"type": "function", "function": function}


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
    messages = transform_messages(
        context.messages,
        model,
        normalize_tool_call_id=lambda call_id, *_: completions_tool_call_id(call_id, model.provider),
    )
    after_tool_results = False
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
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
        else:
            results = [message]
            while index < len(messages) and isinstance(messages[index], ToolResultMessage):
                results.append(messages[index])  # type: ignore[arg-type]
                index += 1
            after_tool_results = _tool_results(wire, results, model, compat)
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
    """Text as one string (Pi: parts make some models echo the structure); the model's own reasoning back in
    the field it came in (``reasoning_content``: llama.cpp's gpt-oss needs it); a tool-call-only message gets
    ``null`` or ``""`` as the server accepts; a message with neither text nor calls is left out (Pi)."""
    text = "".join(b.text for b in message.content if isinstance(b, TextContent) and b.text.strip())
    calls = [b for b in message.content if isinstance(b, ToolCall)]
    thinking = [b for b in message.content if isinstance(b, ThinkingContent) and b.thinking.strip()]
    null_ok = compat.supports_null_assistant_content and not compat.requires_assistant_after_tool_result
    out: dict[str, Any] = {"role": "assistant", "content": text or (None if null_ok else "")}
    if thinking and thinking[0].thinking_signature:
        out[thinking[0].thinking_signature] = "\n".join(block.thinking for block in thinking)
    if calls:
        out["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": compact_json(c.arguments)}}
            for c in calls
        ]
        details = [_reasoning_detail(c.thought_signature) for c in calls if c.thought_signature]
        if any(details):
            out["reasoning_details"] = [detail for detail in details if detail]
    if not text and not calls:
        return None
    return out


def _reasoning_detail(signature: str | None) -> Any:
    try:
        return json.loads(signature or "")
    except ValueError:
        return None


def _tool_results(
    wire: list[dict[str, Any]], results: Sequence[ToolResultMessage], model: Model, compat: ResolvedOpenAICompat
) -> bool:
    """One tool message per result, then the results' images in one user message (tool messages carry text
    only); True when the last message is a tool message."""
    images: list[dict[str, Any]] = []
    for result in results:
        text = "\n".join(b.text for b in result.content if isinstance(b, TextContent))
        has_images = any(isinstance(b, ImageContent) for b in result.content)
        shown = text or ("(see attached image)" if has_images else "(no tool output)")
        message: dict[str, Any] = {"role": "tool", "content": shown, "tool_call_id": result.tool_call_id}
        if compat.requires_tool_result_name and result.tool_name:
            message["name"] = result.tool_name
        wire.append(message)
        if model.supports_images:
            images += [_part(b) for b in result.content if isinstance(b, ImageContent)]
    if not images:
        return True
    if compat.requires_assistant_after_tool_result:
        wire.append(dict(_BRIDGE))
    wire.append({"role": "user", "content": [{"type": "text", "text": _TOOL_IMAGES}, *images]})
    return False


def _part(block: TextContent | ImageContent) -> dict[str, Any]:
    if isinstance(block, ImageContent):
        return {"type": "image_url", "image_url": {"url": f"data:{block.mime_type};base64,{block.data}"}}
    return {"type": "text", "text": block.text}


def _mark_for_anthropic(payload: dict[str, Any], control: dict[str, Any]) -> None:
    """Pi's ``applyAnthropicCacheControl``: the system prompt, the last tool and the last message with text."""
    messages = payload["messages"]
    for message in messages:
        if message["role"] in ("system", "developer"):
            _mark_text(message, control)
            break
    if payload.get("tools"):
        payload["tools"][-1]["cache_control"] = control
    for message in reversed(messages):
        if message["role"] in ("user", "assistant", "tool") and _mark_text(message, control):
            break


def _mark_text(message: dict[str, Any], control: dict[str, Any]) -> bool:
    content = message.get("content")
    if isinstance(content, str):
        if not content:
            return False
        message["content"] = [{"type": "text", "text": content, "cache_control": control}]
        return True
    for part in reversed(content or []):
        if part.get("type") == "text":
            part["cache_control"] = control
            return True
    return False
