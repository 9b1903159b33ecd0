"""The body of an OpenAI Responses request, as Pi 0.83 builds it (``openai-responses.ts`` ``buildParams``,
``openai-responses-shared.ts`` ``convertResponsesMessages`` / ``convertResponsesTools``).

Nothing is stored server-side (``store: false``): each request carries the whole conversation, the model's own
earlier items included: its reasoning items (kept whole, encrypted content and all, in the thinking block's
signature; ``include: ["reasoning.encrypted_content"]`` asks for them when thinking), its messages under their
ids (kept in the text block's signature) and its function calls under ``<call_id>|<item_id>`` tool-call ids.
``prompt_cache_key`` is the session id (at most 64 characters) unless retention is ``none``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from .._compat import ResponsesCompat, resolve_responses_compat
from .._request import Context, Model, StreamOptions, Tool
from ..messages import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolResultMessage,
    UserMessage,
)
from ..transform import transform_messages
from ._caching import cache_session_id, clamp_prompt_cache_key, resolve_cache_retention
from ._ids import short_hash
from ._limits import clamp_max_tokens_to_context, clamp_thinking_level, wire_thinking_level
from ._openai_request import compact_json

__all__ = ["build_payload", "session_headers"]

_MIN_OUTPUT_TOKENS = 16  # OpenAI refuses less
_TOOL_CALL_PROVIDERS = frozenset({"openai", "openai-codex", "opencode"})
_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
_TRAILING = re.compile(r"_+$")


def session_headers(model: Model, options: StreamOptions) -> dict[str, str]:
    """Pi's session-affinity headers: the session id, so a load balancer keeps the session where its cache is."""
    session = cache_session_id(options)
    if not session:
        return {}
    if resolve_responses_compat(model).session_affinity_format == "openrouter":
        return {"x-session-id": session}
    return {"session_id": session, "x-client-request-id": session}


def build_payload(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    compat = resolve_responses_compat(model)
    retention = resolve_cache_retention(options)
    payload: dict[str, Any] = {"model": model.id, "input": _input(model, context, compat), "stream": True}
    if retention != "none" and options.session_id is not None:
        payload["prompt_cache_key"] = clamp_prompt_cache_key(options.session_id)
    if retention == "long" and compat.supports_long_cache_retention:
        payload["prompt_cache_retention"] = "24h"
    if retention == "none" and compat.supports_explicit_prompt_cache_mode:
        payload["prompt_cache_options"] = {"mode": "explicit"}
    payload["store"] = False
    max_tokens = clamp_max_tokens_to_context(model, context, options.max_tokens or model.max_tokens)
    payload["max_output_tokens"] = max(max_tokens, _MIN_OUTPUT_TOKENS)
    if options.temperature is not None:
        payload["temperature"] = options.temperature
    if context.tools:
        payload["tools"] = [_tool(tool, compat) for tool in context.tools]
    if options.tool_choice is not None:
        payload["tool_choice"] = options.tool_choice
    if model.reasoning:
        _reasoning(payload, model, options)
    return payload


def _reasoning(payload: dict[str, Any], model: Model, options: StreamOptions) -> None:
    level = clamp_thinking_level(model, options.reasoning) if options.reasoning else "off"
    names = model.thinking_level_map or {}
    if level != "off":
        payload["reasoning"] = {"effort": wire_thinking_level(model, level), "summary": "auto"}
        payload["include"] = ["reasoning.encrypted_content"]
    elif names.get("off", "") is not None and model.provider != "github-copilot":
        payload["reasoning"] = {"effort": names.get("off") or "none"}
    if model.provider == "xai":
        payload["include"] = ["reasoning.encrypted_content"]


def _tool(tool: Tool, compat: ResponsesCompat) -> dict[str, Any]:
    wire: dict[str, Any] = {
        "type": "function",
        "name": tool.name,
        "description": tool.description,
        "parameters": dict(tool.parameters),
    }
    if compat.supports_strict_mode:
        wire["strict"] = False
    return wire


def _input(model: Model, context: Context, compat: ResponsesCompat) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if context.system_prompt:
        role = "developer" if model.reasoning and compat.supports_developer_role else "system"
        items.append({"role": role, "content": context.system_prompt})
    position = 0  # Pi's message counter, which names messages that kept no id (skipped messages do not count)
    for message in transform_messages(context.messages, model, normalize_tool_call_id=_CallIds(model)):
        if isinstance(message, UserMessage):
            converted = [user] if (user := _user(message)) is not None else []
        elif isinstance(message, AssistantMessage):
            converted = _assistant(message, model, position)
        else:
            converted = [_tool_result(message, model)]
        if converted:
            items += converted
            position += 1
    return items


def _user(message: UserMessage) -> dict[str, Any] | None:
    content = message.content
    if isinstance(content, str):
        return {"role": "user", "content": [{"type": "input_text", "text": content}]}
    if not content:
        return None
    return {"role": "user", "content": [_part(block) for block in content]}


def _part(block: TextContent | ImageContent) -> dict[str, Any]:
    if isinstance(block, ImageContent):
        return {"type": "input_image", "detail": "auto", "image_url": f"data:{block.mime_type};base64,{block.data}"}
    return {"type": "input_text", "text": block.text}


def _assistant(message: AssistantMessage, model: Model, position: int) -> list[dict[str, Any]]:
    """The model's items as it sent them: reasoning items whole, messages under their ids (``msg_pi_<n>`` when
    none was kept), function calls under their item ids (left out for another model of the same API, whose
    reasoning pairing OpenAI would check)."""
    other_model = message.model != model.id and message.provider == model.provider and message.api == model.api
    items: list[dict[str, Any]] = []
    texts = 0
    for block in message.content:
        if isinstance(block, ThinkingContent):
            reasoning = _reasoning_item(block.thinking_signature)
            if reasoning is not None:
                items.append(reasoning)
        elif isinstance(block, TextContent):
            items.append(_output_message(block, position, texts))
            texts += 1
        else:
            call_id, _, item_id = block.id.partition("|")
            call: dict[str, Any] = {"type": "function_call"}
            if item_id.startswith("fc_") and not other_model:
                call["id"] = item_id
            call |= {"call_id": call_id, "name": block.name, "arguments": compact_json(block.arguments)}
            items.append(call)
    return items


def _reasoning_item(signature: str | None) -> dict[str, Any] | None:
    """The reasoning item a thinking block keeps in its signature (``None``: none, or not JSON)."""
    try:
        item = json.loads(signature) if signature else None
    except ValueError:
        return None
    return item if isinstance(item, dict) else None


def _output_message(block: TextContent, position: int, index: int) -> dict[str, Any]:
    item_id, phase = _text_signature(block.text_signature)
    if not item_id:
        item_id = f"msg_pi_{position}" if index == 0 else f"msg_pi_{position}_{index}"
    elif len(item_id) > 64:
        item_id = f"msg_{short_hash(item_id)}"
    item: dict[str, Any] = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": block.text, "annotations": []}],
        "status": "completed",
        "id": item_id,
    }
    if phase:
        item["phase"] = phase
    return item


def _text_signature(signature: str | None) -> tuple[str | None, str | None]:
    """A text block's signature: ``{"v": 1, "id": …, "phase"?: …}`` (Pi's form), or a bare message id."""
    if not signature:
        return None, None
    if signature.startswith("{"):
        try:
            data = json.loads(signature)
        except ValueError:
            data = None
        if isinstance(data, dict) and data.get("v") == 1 and isinstance(data.get("id"), str):
            phase = data.get("phase")
            return data["id"], phase if phase in ("commentary", "final_answer") else None
    return signature, None


def _tool_result(message: ToolResultMessage, model: Model) -> dict[str, Any]:
    call_id = message.tool_call_id.partition("|")[0]
    return {"type": "function_call_output", "call_id": call_id, "output": _result_output(message.content, model)}


def _result_output(content: Sequence[TextContent | ImageContent], model: Model) -> str | list[dict[str, Any]]:
    text = "\n".join(block.text for block in content if isinstance(block, TextContent))
    images = [block for block in content if isinstance(block, ImageContent)]
    if not images or not model.supports_images:
        return text or ("(see attached image)" if images else "(no tool output)")
    return ([{"type": "input_text", "text": text}] if text else []) + [_part(image) for image in images]


class _CallIds:
    """Pi's tool-call id rule for the Responses API (``normalizeToolCallId``), for calls of other models."""

    def __init__(self, model: Model) -> None:
        self.model = model

    def __call__(self, call_id: str, target: Model, source: AssistantMessage) -> str:
        if self.model.provider not in _TOOL_CALL_PROVIDERS or "|" not in call_id:
            return _id_part(call_id)
        head, _, item = call_id.partition("|")
        item = item.partition("|")[0]
        foreign = source.provider != self.model.provider or source.api != self.model.api
        item_id = f"fc_{short_hash(item)}"[:64] if foreign else _id_part(item)
        if not item_id.startswith("fc_"):
            item_id = _id_part(f"fc_{item_id}")
        return f"{_id_part(head)}|{item_id}"


def _id_part(part: str) -> str:
    return _TRAILING.sub("", _UNSAFE.sub("_", part)[:64])
