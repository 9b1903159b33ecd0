"""The body of a Gemini ``streamGenerateContent`` request, as Pi 0.83 builds it (``google-generative-ai.ts``
``buildParams``, ``google-shared.ts`` ``convertMessages`` / ``convertTools``) and Google's SDK puts it on the wire.

The model's own earlier parts go back with their ``thoughtSignature`` (thoughts, text and function calls of the
same model; another model's thoughts become plain text). Function results answer by the function's name, as
``{"output": …}`` or ``{"error": …}``; Gemini 3 takes their images inside the result, older models in a user turn
after it. Gemini caches repeated prefixes by itself (implicit caching); there is nothing to mark.
"""

from __future__ import annotations

import re
from typing import Any

from .._request import Context, Model, StreamOptions
from ..messages import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from ..transform import transform_messages
from ._ids import safe_id
from ._limits import clamp_max_tokens_to_context, clamp_thinking_level

__all__ = ["build_payload", "request_path"]

_BASE64 = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")
_GEMINI_VERSION = re.compile(r"^gemini(?:-live)?-(\d+)")
_CHOICES = {"auto": "AUTO", "none": "NONE", "any": "ANY"}
_BUDGETS = {
    "2.5-pro": {"minimal": 128, "low": 2048, "medium": 8192, "high": 32768},
    "2.5-flash-lite": {"minimal": 512, "low": 2048, "medium": 8192, "high": 24576},
    "2.5-flash": {"minimal": 128, "low": 2048, "medium": 8192, "high": 24576},
}


def request_path(model: Model) -> str:
    return f"/models/{model.id}:streamGenerateContent?alt=sse"


def build_payload(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    payload: dict[str, Any] = {"contents": _contents(model, context)}
    if context.system_prompt:
        payload["systemInstruction"] = {"parts": [{"text": context.system_prompt}], "role": "user"}
    if context.tools:
        declarations = [
            {"name": t.name, "description": t.description, "parametersJsonSchema": dict(t.parameters)}
            for t in context.tools
        ]
        payload["tools"] = [{"functionDeclarations": declarations}]
        choice = options.tool_choice
        if isinstance(choice, str):
            payload["toolConfig"] = {"functionCallingConfig": {"mode": _CHOICES.get(choice, "AUTO")}}
    config: dict[str, Any] = {}
    if options.temperature is not None:
        config["temperature"] = options.temperature
    config["maxOutputTokens"] = clamp_max_tokens_to_context(model, context, options.max_tokens or model.max_tokens)
    thinking = _thinking_config(model, options)
    if thinking is not None:
        config["thinkingConfig"] = thinking
    payload["generationConfig"] = config
    return payload


def _thinking_config(model: Model, options: StreamOptions) -> dict[str, Any] | None:
    if not model.reasoning:
        return None
    model_id = model.id.lower()
    if not options.reasoning:  # the lowest the model allows (Gemini 3 cannot turn thinking off)
        if re.search(r"gemini-3(?:\.\d+)?-pro", model_id):
            return {"thinkingLevel": "LOW"}
        if _is_leveled(model_id):
            return {"thinkingLevel": "MINIMAL"}
        return {"thinkingBudget": 0}
    effort = clamp_thinking_level(model, options.reasoning)
    effort = "high" if effort == "off" else effort
    if _is_leveled(model_id):
        return {"includeThoughts": True, "thinkingLevel": _level(model_id, effort)}
    budget = next((b for name, b in _BUDGETS.items() if name in model.id), None)
    if budget is None:
        return {"includeThoughts": True, "thinkingBudget": -1}  # dynamic: the model decides
    if effort not in budget:
        return {"includeThoughts": True}
    return {"includeThoughts": True, "thinkingBudget": budget[effort]}


def _is_leveled(model_id: str) -> bool:
    """Gemini 3 and Gemma 4 take a thinking level instead of a token budget."""
    return bool(
        re.search(r"gemini-3(?:\.\d+)?-(?:pro|flash)", model_id)
        or model_id in ("gemini-flash-latest", "gemini-flash-lite-latest")
        or re.search(r"gemma-?4", model_id)
    )


def _level(model_id: str, effort: str) -> str:
    if re.search(r"gemini-3(?:\.\d+)?-pro", model_id):
        return "LOW" if effort in ("minimal", "low") else "HIGH"
    if re.search(r"gemma-?4", model_id):
        return "MINIMAL" if effort in ("minimal", "low") else "HIGH"
    return {"minimal": "MINIMAL", "low": "LOW", "medium": "MEDIUM"}.get(effort, "HIGH")


def _needs_call_ids(model: Model) -> bool:
    """Models behind Google's API that need function calls and results to carry ids."""
    return model.id.startswith(("claude-", "gpt-oss-"))


def _multimodal_results(model: Model) -> bool:
    """Gemini 3+ (and non-Gemini models) take images inside a function result."""
    match = _GEMINI_VERSION.match(model.id.lower())
    return match is None or int(match.group(1)) >= 3


def _contents(model: Model, context: Context) -> list[dict[str, Any]]:
    normalize = (lambda call_id, *_: safe_id(call_id)) if _needs_call_ids(model) else None
    contents: list[dict[str, Any]] = []
    for message in transform_messages(context.messages, model, normalize_tool_call_id=normalize):
        if isinstance(message, UserMessage):
            content = message.content
            parts = [{"text": content}] if isinstance(content, str) else [_part(block) for block in content]
            if parts:
                contents.append({"role": "user", "parts": parts})
        elif isinstance(message, AssistantMessage):
            same = message.provider == model.provider and message.model == model.id
            parts = [part for block in message.content if (part := _model_part(block, model, same)) is not None]
            if parts:
                contents.append({"role": "model", "parts": parts})
        else:
            _function_response(contents, message, model)
    return contents


def _part(block: TextContent | ImageContent) -> dict[str, Any]:
    if isinstance(block, ImageContent):
        return {"inlineData": {"mimeType": block.mime_type, "data": block.data}}
    return {"text": block.text}


def _signed(part: dict[str, Any], signature: str | None, same: bool) -> dict[str, Any]:
    """Only the same model's signatures go back, and only valid base64 ones (Google checks)."""
    if same and signature and len(signature) % 4 == 0 and _BASE64.match(signature):
        part["thoughtSignature"] = signature
    return part


def _model_part(block: TextContent | ThinkingContent | ToolCall, model: Model, same: bool) -> dict[str, Any] | None:
    if isinstance(block, TextContent):
        return _signed({"text": block.text}, block.text_signature, same) if block.text.strip() else None
    if isinstance(block, ThinkingContent):
        if not block.thinking.strip():
            return None
        if not same:
            return {"text": block.thinking}
        return _signed({"thought": True, "text": block.thinking}, block.thinking_signature, same)
    call: dict[str, Any] = {"name": block.name, "args": block.arguments}
    if _needs_call_ids(model):
        call["id"] = block.id
    return _signed({"functionCall": call}, block.thought_signature, same)


def _function_response(contents: list[dict[str, Any]], message: ToolResultMessage, model: Model) -> None:
    """A result joins the previous user turn when that one holds results too (Google wants them together)."""
    text = "\n".join(block.text for block in message.content if isinstance(block, TextContent))
    images = [_part(b) for b in message.content if isinstance(b, ImageContent)] if model.supports_images else []
    value = text or ("(see attached image)" if images else "")
    response: dict[str, Any] = {
        "name": message.tool_name,
        "response": {"error" if message.is_error else "output": value},
    }
    inline = bool(images) and _multimodal_results(model)
    if inline:
        response["parts"] = images
    if _needs_call_ids(model):
        response["id"] = message.tool_call_id
    part = {"functionResponse": response}
    last = contents[-1] if contents else None
    if last is not None and last["role"] == "user" and any("functionResponse" in p for p in last["parts"]):
        last["parts"].append(part)
    else:
        contents.append({"role": "user", "parts": [part]})
    if images and not inline:
        contents.append({"role": "user", "parts": [{"text": "Tool result image:"}, *images]})
