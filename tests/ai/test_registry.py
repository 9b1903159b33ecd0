"""stream() dispatch by ``model.api``: built-in providers, user registrations, unknown apis."""

from __future__ import annotations

from typing import Any

import pytest

from pi_notebook.ai import Context, _registry
from pi_notebook.ai.providers.faux import FauxProvider


@pytest.fixture
def fresh_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_registry, "_apis", {})
    monkeypatch.setattr(_registry, "_builtin_loaded", False)


@pytest.mark.usefixtures("fresh_registry")
def test_a_registration_made_first_replaces_one_builtin_and_keeps_the_other() -> None:
    def mine(model: Any, context: Any, options: Any) -> Any:
        raise AssertionError("not called")

    _registry.register_api("openai-completions", mine)
    assert _registry.registered_apis() == ("anthropic-messages", "openai-completions")
    assert _registry._apis["openai-completions"] is mine


@pytest.mark.usefixtures("fresh_registry")
async def test_an_unknown_api_gives_an_error_message_naming_it() -> None:
    model = FauxProvider().model.model_copy(update={"api": "martian"})
    message = await _registry.complete(model, Context(messages=[]))
    assert message.stop_reason == "error"
    assert message.error_message == (
        "No stream function for api 'martian' (known: anthropic-messages, openai-completions)"
    )
