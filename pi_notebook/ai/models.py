"""Known models and model spec strings.

``model_from_spec("openai:gpt-4o-mini")`` (chat completions), ``model_from_spec("openai-responses:o4-mini")``
(OpenAI's Responses API), ``model_from_spec("anthropic:claude-sonnet-4-5")``,
``model_from_spec("google:gemini-2.5-flash")``, or for any
OpenAI-compatible server (llama.cpp, llama-cpp-python, vLLM, Ollama, LM Studio, LiteLLM, OpenRouter)
``model_from_spec("openai-compatible:http://127.0.0.1:11434/v1:llama3.2:3b")``, and for an Anthropic-compatible
one (LiteLLM's ``/v1/messages``, llama.cpp's ``llama-server``) ``model_from_spec("anthropic-compatible:
http://127.0.0.1:4000:claude-proxy")``. Options: ``context_window`` (tokens; drives compaction and overflow
detection, default 128,000 for unknown models), ``max_tokens`` (the output limit, sent to the server) and
``key_env`` (the environment variable holding the key, e.g. a LiteLLM proxy's ``LITELLM_KEY``)::

    model_from_spec("openai-compatible:http://127.0.0.1:4000/v1:gpt-4o", context_window=2048, key_env="LITELLM_KEY")

Any other :class:`Model` field can be given too; ``base_url`` points a known API at another server that speaks it
(``model_from_spec("openai-responses:mock", base_url="http://127.0.0.1:4000/v1", key_env="LITELLM_KEY")``): the
provider stays, so its key is still required (from its variable, or the one ``key_env`` names).

:func:`model_from_server` reads the server's ``/models`` listing to fill in the context window (and the model,
when the spec leaves it out and the server serves one). Unknown model ids of a known provider are allowed, with
default limits and zero cost.
"""

from __future__ import annotations

import os
import re
from typing import Any

from ._discover import context_window_of, fetch_listing, pick_model
from ._request import Model, ModelCost
from .vendors import SPEC_ALIASES, VENDORS

__all__ = [
    "KNOWN_MODELS",
    "SPEC_HELP",
    "THINKING_LEVEL_MAPS",
    "model_from_server",
    "model_from_spec",
    "parse_compatible_spec",
    "provider_base_url",
    "spec_prefix",
]

SPEC_HELP = (
    "model specs: 'openai:<model>' (e.g. openai:gpt-4o-mini, key from OPENAI_API_KEY), "
    "'openai-responses:<model>' (OpenAI's Responses API, e.g. openai-responses:o4-mini), "
    "'anthropic:<model>' (e.g. anthropic:claude-sonnet-4-5, key from ANTHROPIC_API_KEY), "
    "'google:<model>' (e.g. google:gemini-2.5-flash, key from GEMINI_API_KEY or GOOGLE_API_KEY), "
    "'openai-compatible:<base url>:<model>' (e.g. openai-compatible:http://127.0.0.1:11434/v1:llama3.2), "
    "'anthropic-compatible:<base url>:<model>' (e.g. anthropic-compatible:http://127.0.0.1:4000:claude), "
    "or 'faux' for the scripted offline model"
)

_PROVIDERS: dict[str, tuple[str, str]] = {
    name: (vendor.api, vendor.base_url) for name, vendor in VENDORS.items() if vendor.api and vendor.base_url
}
_PROVIDERS |= {prefix: (api, _PROVIDERS[vendor][1]) for prefix, (vendor, api) in SPEC_ALIASES.items()}
"""A model spec's prefix: (its wire API, its vendor's server), from :data:`~.vendors.VENDORS`."""

# id: (context window, max output tokens, $/M input, output, cache read, cache write, reasoning, images)
KNOWN_MODELS: dict[str, tuple[int, int, float, float, float, float, bool, bool]] = {
    "openai:gpt-4o-mini": (128_000, 16_384, 0.15, 0.60, 0.075, 0.0, False, True),
    "openai:gpt-4o": (128_000, 16_384, 2.50, 10.00, 1.25, 0.0, False, True),
    "openai:gpt-4.1": (1_047_576, 32_768, 2.00, 8.00, 0.50, 0.0, False, True),
    "openai:gpt-4.1-mini": (1_047_576, 32_768, 0.40, 1.60, 0.10, 0.0, False, True),
    "openai:o4-mini": (200_000, 100_000, 1.10, 4.40, 0.275, 0.0, True, True),
    "openai:o3": (200_000, 100_000, 2.00, 8.00, 0.50, 0.0, True, True),
    "openai:gpt-5": (400_000, 128_000, 1.25, 10.00, 0.125, 0.0, True, True),
    "openai:gpt-5-mini": (400_000, 128_000, 0.25, 2.00, 0.025, 0.0, True, True),
    "anthropic:claude-sonnet-4-5": (200_000, 64_000, 3.00, 15.00, 0.30, 3.75, True, True),
    "anthropic:claude-haiku-4-5": (200_000, 64_000, 1.00, 5.00, 0.10, 1.25, True, True),
    "anthropic:claude-opus-4-1": (200_000, 32_000, 15.00, 75.00, 1.50, 18.75, True, True),
    "google:gemini-2.5-pro": (1_048_576, 65_536, 1.25, 10.00, 0.125, 0.0, True, True),
    "google:gemini-2.5-flash": (1_048_576, 65_536, 0.30, 2.50, 0.03, 0.0, True, True),
    "google:gemini-2.5-flash-lite": (1_048_576, 65_536, 0.10, 0.40, 0.01, 0.0, True, True),
    "google:gemini-2.0-flash": (1_048_576, 8_192, 0.10, 0.40, 0.025, 0.0, False, True),
    "google:gemini-3-flash-preview": (1_048_576, 65_536, 0.50, 3.00, 0.05, 0.0, True, True),
    "google:gemini-3-pro-preview": (1_048_576, 65_536, 2.00, 12.00, 0.20, 0.0, True, True),
}
"""Prices (US dollars per million tokens) as in Pi 0.83's catalog; ``openai-responses:`` specs use the ``openai:``
entries."""

_O_SERIES: dict[str, str | None] = {"off": None, "minimal": None, "xhigh": None, "max": None}
_GPT5: dict[str, str | None] = {"off": None, "xhigh": None, "max": None}
THINKING_LEVEL_MAPS: dict[str, dict[str, str | None]] = {
    "openai:o4-mini": _O_SERIES,
    "openai:o3": _O_SERIES,
    "openai:gpt-5": _GPT5,
    "openai:gpt-5-mini": _GPT5,
    "google:gemini-3-flash-preview": {"off": None},
    "google:gemini-3-pro-preview": {"off": None, "minimal": None, "low": "LOW", "medium": None, "high": "HIGH"},
}
"""Pi's ``thinkingLevelMap`` of the known reasoning models that have one (which levels exist, their wire names)."""

_COMPATIBLE_APIS = {"openai-compatible": "openai-completions", "anthropic-compatible": "anthropic-messages"}
_ORIGIN = re.compile(r"^https?://(?:\[[0-9A-Fa-f:.]+\]|[^/:\s\[\]]+)")
_PORT = re.compile(r":(\d+)(?=[/:]|$)")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def spec_prefix(provider: str, api: object) -> str:
    """The model-spec prefix of a model of ``provider`` speaking ``api``: the prefix that names that API
    (``openai-responses``, :data:`~.vendors.SPEC_ALIASES`; its base URL is given apart when it is another
    server's), else the provider's name."""
    return next((prefix for prefix, (_, named) in SPEC_ALIASES.items() if named == api), provider)


def provider_base_url(provider: str) -> str | None:
    """The vendor's own server for a model of ``provider`` (``openai``: ``https://api.openai.com/v1``, whichever of
    its APIs); ``None`` for a provider that has none (``openai-compatible``, the faux model, a provider of your
    own)."""
    entry = _PROVIDERS.get(provider)
    return entry[1] if entry is not None else None


def parse_compatible_spec(spec: str) -> tuple[str, str, str]:
    """``(provider, base URL, model)`` of ``openai-compatible:<url>:<model>`` or ``anthropic-compatible:…``.

    The URL is ``http(s)://host[:port][/path]`` (a path holds no ``:``); the model is everything after the next
    ``:`` and may contain colons (``llama3.2:3b``). Digits right after the host are a port, so
    ``…:http://127.0.0.1:18799/v1:`` and ``…:http://127.0.0.1:11434`` have no model. The model may be empty
    only in what this returns; :func:`model_from_spec` refuses it. Raises ``ValueError`` naming what is wrong (a
    scheme other than ``http``/``https``, a port outside 1-65535, ...).
    """
    provider, _, rest = spec.strip().partition(":")
    if provider not in _COMPATIBLE_APIS:
        raise ValueError(f"not a compatible-server spec: {spec!r}; {SPEC_HELP}")
    origin = _ORIGIN.match(rest)
    if origin is None:
        raise ValueError(f"cannot read {spec!r}: expected {provider}:<http(s) base url>:<model>")
    end = origin.end()
    port = _PORT.match(rest, end)
    if port is not None:
        end = port.end()
        if not 1 <= int(port.group(1)) <= 65535:
            raise ValueError(f"cannot read {spec!r}: port {int(port.group(1))} is out of range (1-65535)")
    if rest.startswith("/", end):
        colon = rest.find(":", end)
        end = len(rest) if colon < 0 else colon
    url, tail = rest[:end], rest[end:]
    if tail and not tail.startswith(":"):
        raise ValueError(f"cannot read {spec!r}: expected ':' and a model after the base URL {url!r}")
    model = tail[1:]
    if any(char.isspace() for char in model):
        raise ValueError(f"cannot read {spec!r}: the model name {model!r} contains whitespace")
    if provider == "anthropic-compatible":
        url = url.rstrip("/").removesuffix("/v1")  # the provider adds /v1/messages
    return provider, url, model


def model_from_spec(
    spec: str,
    *,
    context_window: int | None = None,
    max_tokens: int | None = None,
    key_env: str | None = None,
    **overrides: Any,
) -> Model:
    """Parse a model spec (see the module docstring). ``context_window``, ``max_tokens`` and ``key_env`` set
    those fields; ``overrides`` set any other :class:`Model` field. Raises ``ValueError`` with the accepted
    forms, or naming the option that is invalid."""
    options = _options(context_window, max_tokens, key_env)
    spec = spec.strip()
    provider, _, rest = spec.partition(":")
    if provider in _COMPATIBLE_APIS:
        provider, url, model = parse_compatible_spec(spec)
        if not model:
            raise ValueError(
                f"cannot read {spec!r}: no model after the base URL {url!r} "
                f"(expected {provider}:<base url>:<model>, e.g. {provider}:{url}:my-model)"
            )
        fields: dict[str, Any] = {"id": model, "api": _COMPATIBLE_APIS[provider], "provider": provider, "base_url": url}
        return Model(**(fields | options | overrides))
    if provider not in _PROVIDERS or not rest:
        raise ValueError(f"unknown model spec {spec!r}; {SPEC_HELP}")
    api, base_url = _PROVIDERS[provider]
    vendor = SPEC_ALIASES[provider][0] if provider in SPEC_ALIASES else provider
    fields = {"id": rest, "name": rest, "api": api, "provider": vendor, "base_url": base_url}
    known = KNOWN_MODELS.get(f"{vendor}:{rest}")
    if f"{vendor}:{rest}" in THINKING_LEVEL_MAPS:
        fields["thinking_level_map"] = THINKING_LEVEL_MAPS[f"{vendor}:{rest}"]
    if known:
        window, limit, c_in, c_out, c_read, c_write, reasoning, images = known
        fields |= {
            "context_window": window,
            "max_tokens": limit,
            "cost": ModelCost(input=c_in, output=c_out, cache_read=c_read, cache_write=c_write),
            "reasoning": reasoning,
            "input": ("text", "image") if images else ("text",),
        }
    return Model(**(fields | options | overrides))


def _options(context_window: int | None, max_tokens: int | None, key_env: str | None) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for name, value in (("context_window", context_window), ("max_tokens", max_tokens)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{name} must be a positive number of tokens, got {value!r}")
        options[name] = value
    if key_env is not None:
        if not _ENV_NAME.match(key_env):
            raise ValueError(  # the value is not shown: it may be the key itself, pasted by mistake
                "key_env must name an environment variable (letters, digits, _; e.g. LITELLM_KEY), not hold the key"
            )
        options["key_env"] = key_env
    return options


def model_from_server(
    spec: str,
    *,
    api_key: str | None = None,
    timeout_s: float = 10.0,
    context_window: int | None = None,
    max_tokens: int | None = None,
    key_env: str | None = None,
    **overrides: Any,
) -> Model:
    """Like :func:`model_from_spec` for ``openai-compatible:<base url>[:<model>]`` (or ``anthropic-compatible:…``),
    with the context window read from the server's model listing (``GET {base}/models``; see
    :mod:`pi_notebook.ai._discover` for which servers report it).

    The model may be left out when the server serves exactly one. The key for the listing is ``api_key``, else
    the variable named by ``key_env``. Sends one GET and blocks for at most ``timeout_s`` seconds.

    Raises ``ValueError`` with a one-line message when the spec is wrong, the server cannot be reached or does
    not answer with a listing, the model is not listed, or the server reports no context window and none was
    given (llama-cpp-python, Ollama and LiteLLM list ids only: pass ``context_window``).
    """
    provider, url, model_id = parse_compatible_spec(spec)
    key = api_key or (os.environ.get(key_env, "") if key_env else "") or None
    listing = fetch_listing(url + ("/models" if provider == "openai-compatible" else "/v1/models"), key, timeout_s)
    entry = pick_model(listing, model_id, url)
    window = context_window or context_window_of(entry)
    if window is None:
        raise ValueError(
            f"{url} reports no context window for model {entry['id']!r}; pass context_window=<tokens> "
            "(llama-cpp-python, Ollama and LiteLLM list model ids only)"
        )
    return model_from_spec(
        f"{provider}:{url}:{entry['id']}", context_window=window, max_tokens=max_tokens, key_env=key_env, **overrides
    )
