"""What we know of each model vendor, in one table: its name (a model spec's prefix and ``Model.provider``), the
environment variable holding its key (Pi's names) and any its SDKs read besides, and, for the vendors a model spec
can name, the wire API its spec speaks and its own server.

A new vendor is one row of :data:`VENDORS`; a new wire API is its provider module (``providers/<api>.py``, which
exports its :class:`~pi_notebook.ai.WireApi` as ``API``), one row in ``_api_registry.py``'s list, and its format for
the tests' fault server (``testing/formats/``). Which OpenAI-compatible servers accept what (``_compat.py``) is Pi's
detection, not a vendor fact kept here.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SPEC_ALIASES", "VENDORS", "Vendor"]


@dataclass(frozen=True, slots=True)
class Vendor:
    """One model vendor."""

    key_env: str
    """The environment variable holding its key (``OPENAI_API_KEY``)."""
    api: str | None = None
    """The wire API a model spec naming it speaks (``openai:…``: ``openai-completions``); ``None``: no spec names it."""
    base_url: str | None = None
    """Its own server, where a model spec naming it goes (the site policy allows that one only)."""
    fallback_keys: tuple[str, ...] = ()
    """Further variables read when ``key_env`` is not set (Google's SDKs read ``GOOGLE_API_KEY``)."""


VENDORS: dict[str, Vendor] = {
    "openai": Vendor("OPENAI_API_KEY", "openai-completions", "https://api.openai.com/v1"),
    "anthropic": Vendor("ANTHROPIC_API_KEY", "anthropic-messages", "https://api.anthropic.com"),
    "google": Vendor(
        "GEMINI_API_KEY",
        "google-generative-ai",
        "https://generativelanguage.googleapis.com/v1beta",
        fallback_keys=("GOOGLE_API_KEY",),
    ),
    "openrouter": Vendor("OPENROUTER_API_KEY", "openai-completions", "https://openrouter.ai/api/v1"),
    "groq": Vendor("GROQ_API_KEY", "openai-completions", "https://api.groq.com/openai/v1"),
    "mistral": Vendor("MISTRAL_API_KEY"),
    "deepseek": Vendor("DEEPSEEK_API_KEY"),
    "xai": Vendor("XAI_API_KEY"),
    "together": Vendor("TOGETHER_API_KEY"),
    "cerebras": Vendor("CEREBRAS_API_KEY"),
}
"""Every vendor by name (``Model.provider``)."""

SPEC_ALIASES: dict[str, tuple[str, str]] = {"openai-responses": ("openai", "openai-responses")}
"""Model-spec prefixes that name a vendor's other wire API: ``prefix: (vendor, api)`` (``openai-responses:o4-mini``
is OpenAI's Responses API, at OpenAI's server, with OpenAI's key)."""
