"""The model as the notebook shows it (``%pi model``, ``%pi resume``), and the model ``%pi resume`` restores.

A session file records the model its messages were made with (``model_change`` entries: provider, model, base URL,
context window, output limit and the variable holding the key, never the key; see ``ai/_model_record.py``).
``%pi resume`` puts that model back, so a prompt after a restart goes to the model the session was using. When the
file names a model this kernel cannot rebuild (a Pi session on a provider we do not speak, a local server's file
written before the record held its base URL) or one the site policy does not allow, no run starts until ``%pi
model SPEC`` sets one: the faux model's replies must not be appended to a real session's file. A session run on the
faux model (or a file that names no model) keeps the model the kernel has.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..ai import Model, model_from_record, resolve_openai_compat
from ..ai.models import _PROVIDERS, spec_prefix
from ..ai.providers.faux import FAUX_PROVIDER
from ..session import PolicyError
from ._registry import NotebookSession

__all__ = ["model_limits", "restore_model"]

_COMPATIBLE = ("openai-compatible", "anthropic-compatible")


def model_limits(model: Model) -> str:
    """``openai-completions, llama3.2; context window 2048, output: the server's limit; key from LITELLM_KEY``."""
    key = f"; key from {model.key_env}" if model.key_env else ""
    return f"{model.api}, {model.id}; context window {model.context_window}, {_output_limit(model)}{key}"


def _output_limit(model: Model) -> str:
    """The output limit requests carry: an OpenAI-compatible server of unknown kind gets none unless one was set
    (its own default is "until the window is full"); every other request carries the model's, cut to what the
    window leaves."""
    explicit = "max_tokens" in model.model_fields_set
    if model.api == "openai-completions" and not explicit and not resolve_openai_compat(model).send_max_tokens:
        return "output limit: the server's"
    if model.max_tokens >= model.context_window:
        return f"max tokens {model.max_tokens}, cut to what the {model.context_window}-token window leaves"
    return f"max tokens {model.max_tokens}"


def restore_model(entry: NotebookSession, record: Mapping[str, Any] | None) -> str:
    """Put the model a resumed file names back on ``entry`` (see the module docstring); the line that says which
    model is active."""
    if record is None or record.get("provider") == FAUX_PROVIDER:
        why = "the session names no model" if record is None else "the session was run on the faux model"
        return f"pi: model {entry.model_spec} ({model_limits(entry.session.model)}; {why})"
    name = f"{record.get('provider')}:{record.get('modelId')}"
    try:
        model = model_from_record(record)
    except ValueError as exc:
        entry.model_missing = (
            f"the resumed session's model {name} cannot be restored: {exc}; "
            "set it with %pi model SPEC (e.g. --context-window N --key-env VAR) before the next prompt"
        )
        return f"pi: {entry.model_missing}"
    try:
        entry.use_model(model, _spec(model, record))
    except PolicyError as exc:  # never the faux model's replies in a real session's file
        entry.model_missing = (
            f"the resumed session's {exc}; set one it allows with %pi model SPEC before the next prompt"
        )
        return f"pi: {entry.model_missing}"
    unset = model.key_env is not None and not os.environ.get(model.key_env)
    note = f"; {model.key_env} is not set in this kernel" if unset else ""
    return f"pi: model {entry.model_spec} ({model_limits(model)}), restored from the session{note}"


def _spec(model: Model, record: Mapping[str, Any]) -> str:
    """The ``%pi model`` line that makes ``model``: its spec and the options the record set."""
    flags = []
    if model.provider in _COMPATIBLE:
        spec = f"{model.provider}:{model.base_url}:{model.id}"
        flags.append(f"--context-window {model.context_window}")
    else:
        prefix = spec_prefix(model.provider, model.api)
        spec = f"{prefix}:{model.id}"
        if model.base_url != _PROVIDERS[prefix][1]:
            flags.append(f"--base-url {model.base_url}")
    if "maxTokens" in record:
        flags.append(f"--max-tokens {model.max_tokens}")
    if model.key_env:
        flags.append(f"--key-env {model.key_env}")
    return " ".join([spec, *flags])
