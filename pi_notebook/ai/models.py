"""Known models and model spec strings.

``model_from_spec("openai:gpt-4o-mini")``, ``model_from_spec("anthropic:claude-sonnet-4-5")`` or, for any
OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio, OpenRouter),
``model_from_spec("openai-compatible:http://127.0.0.1:11434/v1:llama3.2:3b")``. Unknown model ids of a known
provider are allowed, with default limits and zero cost.
"""

from __future__ import annotations

import re
from typing import Any

from ._request import Model, ModelCost

__all__ = ["KNOWN_MODELS", "SPEC_HELP", "model_from_spec"]

SPEC_HELP = (
    "model specs: 'openai:<model>' (e.g. openai:gpt-4o-mini, key from OPENAI_API_KEY), "
    "'anthropic:<model>' (e.g. anthropic:claude-sonnet-4-5, key from ANTHROPIC_API_KEY), "
    "'openai-compatible:<base url>:<model>' (e.g. openai-compatible:http://127.0.0.1:11434/v1:llama3.2), "
    "or 'faux' for the scripted offline model"
)

_PROVIDERS: dict[str, tuple[str, str]] = {
    "openai": ("openai-completions", "https://api.openai.com/v1"),
    "anthropic": ("anthropic-messages", "https://api.anthropic.com"),
    "openrouter": ("openai-completions", "https://openrouter.ai/api/v1"),
    "groq": ("openai-completions", "https://api.groq.com/openai/v1"),
}

# id: (context window, max output tokens, $/M input, output, cache read, cache write, reasoning, images)
KNOWN_MODELS: dict[str, tuple[int, int, float, float, float, float, bool, bool]] = {
    "openai:gpt-4o-mini": (128_000, 16_384, 0.15, 0.60, 0.075, 0.0, False, True),
    "openai:gpt-4o": (128_000, 16_384, 2.50, 10.00, 1.25, 0.0, False, True),
    "openai:gpt-4.1": (1_047_576, 32_768, 2.00, 8.00, 0.50, 0.0, False, True),
    "openai:gpt-4.1-mini": (1_047_576, 32_768, 0.40, 1.60, 0.10, 0.0, False, True),
    "openai:o4-mini": (200_000, 100_000, 1.10, 4.40, 0.275, 0.0, True, True),
    "anthropic:claude-sonnet-4-5": (200_000, 64_000, 3.00, 15.00, 0.30, 3.75, True, True),
    "anthropic:claude-haiku-4-5": (200_000, 64_000, 1.00, 5.00, 0.10, 1.25, True, True),
    "anthropic:claude-opus-4-1": (200_000, 32_000, 15.00, 75.00, 1.50, 18.75, True, True),
}

_COMPATIBLE = re.compile(r"^(?P<url>https?://[^/:\s]+(?::\d+)?(?:/[^:\s]*)?):(?P<model>\S+)$")


def model_from_spec(spec: str, **overrides: Any) -> Model:
    """Parse a model spec (see the module docstring). Raises ``ValueError`` with the accepted forms."""
    spec = spec.strip()
    provider, _, rest = spec.partition(":")
    if provider == "openai-compatible":
        match = _COMPATIBLE.match(rest)
        if not match:
            raise ValueError(f"cannot read {spec!r}: expected openai-compatible:<http(s) base url>:<model>")
        fields: dict[str, Any] = {
            "id": match["model"],
            "api": "openai-completions",
            "provider": "openai-compatible",
            "base_url": match["url"],
        }
        return Model(**(fields | overrides))
    if provider not in _PROVIDERS or not rest:
        raise ValueError(f"unknown model spec {spec!r}; {SPEC_HELP}")
    api, base_url = _PROVIDERS[provider]
    fields = {"id": rest, "name": rest, "api": api, "provider": provider, "base_url": base_url}
    known = KNOWN_MODELS.get(f"{provider}:{rest}")
    if known:
        window, max_tokens, c_in, c_out, c_read, c_write, reasoning, images = known
        fields |= {
            "context_window": window,
            "max_tokens": max_tokens,
            "cost": ModelCost(input=c_in, output=c_out, cache_read=c_read, cache_write=c_write),
            "reasoning": reasoning,
            "input": ("text", "image") if images else ("text",),
        }
    return Model(**(fields | overrides))
