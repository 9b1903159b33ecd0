"""Tool-call ids carried from one API to another, rewritten as Pi rewrites them.

OpenAI's Responses API names a call ``<call_id>|<item_id>`` (the item id can be 400+ characters with ``+/=``);
Anthropic wants ``^[a-zA-Z0-9_-]+$`` and at most 64 characters, OpenAI's chat completions at most 40. Only
calls from another model are rewritten (:func:`~pi_notebook.ai.transform.transform_messages`), and the tool
results that answer them follow.
"""

from __future__ import annotations

import re

__all__ = ["completions_tool_call_id", "safe_id", "short_hash"]

_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
_MASK = 0xFFFFFFFF


def _imul(a: int, b: int) -> int:
    """JavaScript's ``Math.imul``: 32-bit multiplication, as an unsigned 32-bit value."""
    return (a * b) & _MASK


def _base36(value: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        value, rest = divmod(value, 36)
        out = digits[rest] + out
        if not value:
            return out


def short_hash(text: str) -> str:
    """Pi's ``shortHash`` (``utils/hash.ts``), bit for bit: two 32-bit multiplicative hashes in base 36."""
    h1, h2 = 0xDEADBEEF, 0x41C6CE57
    units = text.encode("utf-16-le")  # JavaScript's charCodeAt reads UTF-16 code units
    for index in range(0, len(units), 2):
        code = units[index] | units[index + 1] << 8
        h1 = _imul(h1 ^ code, 2654435761)
        h2 = _imul(h2 ^ code, 1597334677)
    h1 = _imul(h1 ^ (h1 >> 16), 2246822507) ^ _imul(h2 ^ (h2 >> 13), 3266489909)
    h2 = _imul(h2 ^ (h2 >> 16), 2246822507) ^ _imul(h1 ^ (h1 >> 13), 3266489909)
    return _base36(h2 & _MASK) + _base36(h1 & _MASK)


def safe_id(call_id: str, limit: int = 64) -> str:
    """``[^a-zA-Z0-9_-]`` replaced by ``_``, cut to ``limit`` characters (Anthropic's and Google's rule)."""
    return _UNSAFE.sub("_", call_id)[:limit]


def completions_tool_call_id(call_id: str, provider: str) -> str:
    """Pi's rule for chat completions: a Responses id keeps both halves, sanitised, within 40 characters (a hash
    stands in for the rest); OpenAI's own ids are cut to 40; other providers' ids are kept."""
    if "|" in call_id:
        head, _, item = call_id.partition("|")
        call, item = _UNSAFE.sub("_", head), _UNSAFE.sub("_", item)
        combined = f"{call}_{item}" if item else call
        if len(combined) <= 40:
            return combined
        digest = short_hash(call_id)[:8]
        return f"{call[: max(1, 40 - len(digest) - 1)]}_{digest}"
    if provider == "openai":
        return call_id[:40]
    return call_id
