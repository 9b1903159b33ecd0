"""stream() dispatch by ``model.api``: built-in providers, user registrations, unknown apis."""

from __future__ import annotations

from typing import Any

import pytest

from pi_notebook.ai import AssistantMessageEventStream, Context, Model, StreamOptions
from pi_notebook.ai import _api_registry as _registry
from pi_notebook.ai.providers.faux import FauxProvider, faux_assistant_message


@pytest.fixture
def fresh_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_registry, "_apis", {})
    monkeypatch.setattr(_registry, "_builtin_loaded", False)


@pytest.mark.usefixtures("fresh_registry")
def test_a_registration_made_first_replaces_one_builtin_and_keeps_the_others() -> None:
    def mine(model: Any, context: Any, options: Any) -> Any:
        raise AssertionError("not called")

    _registry.register_api("openai-completions", mine)
    assert _registry.registered_apis() == (
        "anthropic-messages",
        "google-generative-ai",
        "openai-completions",
        "openai-responses",
    )
    assert _registry._apis["openai-completions"] is mine


@pytest.mark.usefixtures("fresh_registry")
async def test_an_unknown_api_gives_an_error_message_naming_it() -> None:
    model = FauxProvider().model.model_copy(update={"api": "martian"})
    message = await _registry.complete(model, Context(messages=[]))
    assert message.stop_reason == "error"
    assert message.error_message == (
        "No stream function for api 'martian' "
        "(known: anthropic-messages, google-generative-ai, openai-completions, openai-responses)"
    )


@pytest.mark.usefixtures("fresh_registry")
async def test_a_registered_stream_function_may_return_an_awaitable_of_its_stream() -> None:
    faux = FauxProvider()
    faux.set_responses([faux_assistant_message("from an async stream function")])

    async def later(model: Model, context: Context, options: StreamOptions) -> AssistantMessageEventStream:
        return faux.stream(model, context, options)

    _registry.register_api(faux.model.api, later)
    events = [event.type async for event in _registry.stream(faux.model, Context(messages=[]))]
    assert events[0] == "start"
    assert events[-1] == "done"
    message = await _registry.complete(faux.model, Context(messages=[]))
    assert message.stop_reason == "error"  # the faux script is used up: still a message, not an exception


@pytest.mark.usefixtures("fresh_registry")
async def test_a_stream_function_that_raises_still_gives_an_error_stream() -> None:
    def broken(model: Model, context: Context, options: StreamOptions) -> AssistantMessageEventStream:
        raise RuntimeError("provider exploded")

    model = FauxProvider().model
    _registry.register_api(model.api, broken)
    message = await _registry.complete(model, Context(messages=[]))
    assert message.stop_reason == "error"
    assert message.error_message == "RuntimeError: provider exploded"
