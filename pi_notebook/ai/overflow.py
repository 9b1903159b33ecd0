"""Context-overflow detection (Pi's ``pi-ai/utils/overflow.ts``).

Providers report "the prompt no longer fits" in many wordings, and a few do not report it at all. Callers
(session auto-retry, compaction) use :func:`is_context_overflow` to tell overflow, which compaction can fix,
from transient errors, which a retry can fix. Overflow must be checked first: several overflow messages
also match the retry classifier (for example "503 … maximum context length of 131072 tokens").

To support a new provider, send it an oversized request, read ``error_message`` and add a pattern to
:data:`OVERFLOW_PATTERNS` (or check the text yourself before calling).
"""

from __future__ import annotations

import re

from .messages import AssistantMessage

__all__ = [
    "NON_OVERFLOW_PATTERNS",
    "OVERFLOW_PATTERNS",
    "is_context_overflow",
    "is_recoverable_length",
]

# re.ASCII keeps ``\d`` and case folding as narrow as JavaScript's non-unicode ``/i``.
_FLAGS = re.IGNORECASE | re.ASCII

OVERFLOW_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern, _FLAGS)
    for pattern in (
        r"prompt is too long",  # Anthropic: "prompt is too long: 213462 tokens > 200000 maximum"
        r"request_too_large",  # Anthropic HTTP 413, request byte size
        r"input is too long for requested model",  # Amazon Bedrock
        r"exceeds the context window",  # OpenAI Completions and Responses
        # OpenAI-compatible proxies (LiteLLM): "... of 131072 tokens" or "... (262144)"; Ollama's MLX runner
        # "... (4096 tokens)"
        r"exceeds (?:the )?(?:model'?s )?maximum context length(?: of [\d,]+ tokens?|\s*\([\d,]+(?: tokens?)?\))",
        r"input token count.*exceeds the maximum",  # Google Gemini
        r"maximum prompt length is \d+",  # xAI Grok
        r"reduce the length of the messages",  # Groq
        r"maximum context length is \d+ tokens",  # OpenRouter (most backends)
        r"exceeds (?:the )?maximum allowed input length of [\d,]+ tokens?",  # OpenRouter / Poolside
        r"input \(\d+ tokens\) is longer than the model'?s context length \(\d+ tokens\)",  # Together AI
        r"exceeds the limit of \d+",  # GitHub Copilot
        r"exceeds the available context size",  # llama.cpp server
        r"greater than the context length",  # LM Studio
        r"context window exceeds limit",  # MiniMax
        r"exceeded model token limit",  # Kimi For Coding
        r"too large for model with \d+ maximum context length",  # Mistral
        r"prompt has [\d,]+ tokens?, but the configured context size is [\d,]+ tokens?",  # DS4 server
        r"model_context_window_exceeded",  # z.ai finish_reason surfaced as error text
        r"prompt too long; exceeded (?:max )?context length",  # Ollama
        # Not in Pi: the servers of issue 17 (tests/ai/test_overflow_servers.py cites each source)
        r"longer than the context length",  # Ollama (llama-server runner, context shift off)
        r"context length is only \d+ tokens",  # vLLM (renderer token/character checks)
        r"longer than the maximum model length of \d+",  # vLLM (engine input processor)
        r"exceed context window of \d+",  # llama-cpp-python, unmapped (e.g. once streaming began)
        r"larger than the max context size",  # llama.cpp server, context shift on
        r"ContextWindowExceededError",  # LiteLLM proxy, whatever the backend's own wording
        r"range of input length should be",  # DashScope / Qwen
        r"context[_ ]length[_ ]exceeded",  # generic
        r"too many tokens",  # generic
        r"token limit exceeded",  # generic
        r"^4(?:00|13)\s*(?:status code)?\s*\(no body\)",  # Cerebras: 400/413 with an empty body
    )
)
"""Error texts that mean the request did not fit the model's context window (searched, case-insensitive)."""

NON_OVERFLOW_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern, _FLAGS)
    for pattern in (
        # Bedrock's formatted prefixes: "Throttling error: Too many tokens, please wait…" is a 429, not overflow.
        r"^(Throttling error|Service unavailable):",
        r"rate limit",
        r"too many requests",
    )
)
"""Error texts that are never overflow, even when an :data:`OVERFLOW_PATTERNS` entry also matches."""

_LENGTH_STOP_FILL_RATIO = 0.99


def is_context_overflow(message: AssistantMessage, context_window: int | None = None) -> bool:
    """Whether ``message`` shows that the request overflowed the context window.

    Three cases, in order:

    1. an ``error`` whose ``error_message`` matches an overflow pattern and no non-overflow pattern;
    2. silent overflow (z.ai): a ``stop`` whose ``usage.input + usage.cache_read`` exceeds ``context_window``;
    3. length-stop overflow (Xiaomi MiMo): a ``length`` stop with zero output and
       ``usage.input + usage.cache_read >= 0.99 * context_window``.

    Cases 2 and 3 need ``context_window``; ``None`` or ``0`` skips them. Providers that truncate silently
    without reporting usage (some Ollama setups) cannot be detected.
    """
    if _is_overflow_error(message):
        return True
    if not context_window:
        return False
    prompt_tokens = message.usage.input + message.usage.cache_read
    if message.stop_reason == "stop":
        return prompt_tokens > context_window
    if message.stop_reason == "length" and message.usage.output == 0:
        return prompt_tokens >= context_window * _LENGTH_STOP_FILL_RATIO
    return False


def _is_overflow_error(message: AssistantMessage) -> bool:
    text = message.error_message
    if message.stop_reason != "error" or not text:
        return False
    if any(pattern.search(text) for pattern in NON_OVERFLOW_PATTERNS):
        return False
    return any(pattern.search(text) for pattern in OVERFLOW_PATTERNS)


def is_recoverable_length(message: AssistantMessage, desired_max_output: int) -> bool:
    """Whether a ``length`` stop ended below the output limit the caller actually wanted.

    Such a stop was cut short by something other than the caller's own cap (context pressure, provider-side
    truncation), so one bounded compact-and-retry is worth trying. ``desired_max_output`` must be the limit
    before any context-based clamping (typically ``model.max_tokens``), or a clamped request looks truncated.
    Any other stop reason, a ``desired_max_output`` of 0 or less, or output that reached it gives ``False``.
    The context window is not consulted: see :func:`is_context_overflow` for that.
    """
    return message.stop_reason == "length" and desired_max_output > 0 and message.usage.output < desired_max_output
