"""The output limit Pi's ``streamSimple`` sends: the model's ``max_tokens`` (or the request's), cut to what is left
of the context window, and the share of it a thinking budget may take (``simple-options.ts``, ``estimate.ts``).

The context is estimated as Pi does: the last successful reply's reported usage plus characters / 4 of what came
after it, or characters / 4 of everything (system prompt and tool schemas included) when no reply reported usage.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from .._request import Context, Model
from ..messages import AssistantMessage, ImageContent, TextContent, ThinkingContent, ToolCall, ToolResultMessage

__all__ = [
    "THINKING_BUDGETS",
    "clamp_max_tokens_to_context",
    "clamp_thinking_level",
    "estimate_context_tokens",
    "supported_thinking_levels",
    "thinking_budget",
    "wire_thinking_level",
]

CONTEXT_SAFETY_TOKENS = 4096
_IMAGE_CHARS = 4800
THINKING_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}
"""Pi's default thinking budgets; ``xhigh`` and ``max`` count as ``high``."""


def clamp_max_tokens_to_context(model: Model, context: Context, max_tokens: int) -> int:
    """``max_tokens``, at most the window minus the estimated context minus 4,096 tokens, and at least 1."""
    if model.context_window <= 0:
        return max(1, max_tokens)
    available = model.context_window - estimate_context_tokens(context) - CONTEXT_SAFETY_TOKENS
    return min(max_tokens, max(1, available))


def thinking_budget(max_tokens: int | None, model_max: int, level: str) -> tuple[int, int]:
    """Pi's ``adjustMaxTokensForThinking``: ``(max_tokens, budget)``, the budget fitted inside the limit with
    1,024 tokens left for the answer."""
    budget = THINKING_BUDGETS["high" if level in ("xhigh", "max") else level]
    limit = model_max if max_tokens is None else min(max_tokens + budget, model_max)
    if limit <= budget:
        budget = max(0, limit - 1024)
    return limit, budget


def estimate_context_tokens(context: Context) -> int:
    messages = context.messages
    last = _last_usage_index(messages)
    if last is not None:
        reply = messages[last]
        assert isinstance(reply, AssistantMessage)
        usage = reply.usage
        reported = usage.total_tokens or usage.input + usage.output + usage.cache_read + usage.cache_write
        return reported + sum(_message_tokens(m) for m in messages[last + 1 :])
    prefix = math.ceil(len(context.system_prompt) / 4) if context.system_prompt else 0
    if context.tools:
        tools = [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in context.tools]
        prefix += math.ceil(len(json.dumps(tools, separators=(",", ":"), ensure_ascii=False)) / 4)
    return prefix + sum(_message_tokens(m) for m in messages)


def _last_usage_index(messages: Sequence[Any]) -> int | None:
    found = None
    newest = -math.inf
    for index, message in enumerate(messages):
        if isinstance(message, AssistantMessage):
            usage = message.usage
            total = usage.total_tokens or usage.input + usage.output + usage.cache_read + usage.cache_write
            if message.timestamp >= newest and message.stop_reason not in ("aborted", "error") and total > 0:
                found = index
        newest = max(newest, getattr(message, "timestamp", newest))
    return found


def _message_tokens(message: Any) -> int:
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return math.ceil(len(content) / 4)
    chars = 0
    for block in content:
        if isinstance(block, TextContent):
            chars += len(block.text)
        elif isinstance(block, ImageContent):
            chars += _IMAGE_CHARS
        elif isinstance(block, ThinkingContent) and not isinstance(message, ToolResultMessage):
            chars += len(block.thinking)
        elif isinstance(block, ToolCall):
            chars += len(block.name) + len(json.dumps(block.arguments, separators=(",", ":"), ensure_ascii=False))
    return math.ceil(chars / 4)


_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh", "max")


def supported_thinking_levels(model: Model) -> list[str]:
    """Pi's ``getSupportedThinkingLevels``: ``off`` only for a model that does not reason; else every level its
    ``thinking_level_map`` does not set to ``None``, ``xhigh`` and ``max`` only when the map names them."""
    if not model.reasoning:
        return ["off"]
    names = model.thinking_level_map or {}
    return [
        level
        for level in _LEVELS
        if not (level in names and names[level] is None) and (level not in ("xhigh", "max") or level in names)
    ]


def clamp_thinking_level(model: Model, level: str) -> str:
    """Pi's ``clampThinkingLevel``: ``level`` if the model has it, else the nearest one above, else below."""
    available = supported_thinking_levels(model)
    if level in available:
        return level
    if level not in _LEVELS:
        return available[0]
    index = _LEVELS.index(level)
    for candidate in (*_LEVELS[index:], *reversed(_LEVELS[:index])):
        if candidate in available:
            return candidate
    return available[0]


def wire_thinking_level(model: Model, level: str) -> str | None:
    """The name a level goes out as: the model's ``thinking_level_map`` entry, else the level itself."""
    names = model.thinking_level_map or {}
    return names.get(level, level)
