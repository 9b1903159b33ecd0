"""Our request bodies against the ones Pi 0.83 sends for the same contexts, field for field (issue 29).

``tests/fixtures/pi-requests/pi-requests.json`` holds what Pi's own ``streamSimple`` put on the wire for each case
of ``cases.json`` (a first turn, a tool turn, a long session, images, each cache retention, the retention from the
environment, no session id, a session id too long for OpenAI, with and without thinking), for Anthropic Messages,
OpenAI chat completions, OpenAI Responses and Google Generative AI; the README beside them says how they were
recorded. Each case builds our body from the same model, context and options and compares it with Pi's, after
applying the differences we keep, each listed in :data:`KEPT` with the real server that needs it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pi_notebook.ai import Context, Model, StreamOptions, Tool
from pi_notebook.ai._compat import resolve_openai_compat
from pi_notebook.ai.messages import message_from_dict
from pi_notebook.ai.providers import _anthropic_request, _google_request, _openai_request, _responses_request

FIXTURES = Path(__file__).parents[1] / "fixtures" / "pi-requests"
CASES = json.loads((FIXTURES / "cases.json").read_text())
PI = json.loads((FIXTURES / "pi-requests.json").read_text())["requests"]
BUILDERS: dict[str, tuple[Callable[[Model, Context, StreamOptions], dict[str, Any]], Callable[[Model], str]]] = {
    "anthropic-messages": (_anthropic_request.build_payload, lambda m: "/v1/messages"),
    "openai-completions": (_openai_request.build_payload, lambda m: "/chat/completions"),
    "openai-responses": (_responses_request.build_payload, lambda m: "/responses"),
    "google-generative-ai": (_google_request.build_payload, _google_request.request_path),
}


def model_of(case: dict[str, Any]) -> Model:
    return Model(**CASES["models"][case["model"]])


def ours(case: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> tuple[str, dict[str, Any]]:
    """Our URL and body for a case, built as the provider builds them."""
    monkeypatch.delenv("PI_CACHE_RETENTION", raising=False)
    for name, value in case["env"].items():
        monkeypatch.setenv(name, value)
    model = model_of(case)
    raw = case["context"]
    context = Context(
        system_prompt=raw["systemPrompt"],
        messages=[message_from_dict(copy.deepcopy(m)) for m in raw["messages"]],
        tools=[Tool(t["name"], t["description"], t["parameters"]) for t in raw.get("tools", [])] or None,
    )
    given = case["options"]
    options = StreamOptions(
        api_key="sk-test",
        session_id=given.get("sessionId"),
        cache_retention=given.get("cacheRetention"),
        reasoning=given.get("reasoning"),
    )
    build, path = BUILDERS[model.api]
    return model.base_url.rstrip("/") + path(model), build(model, context, options)


# -- the differences we keep ------------------------------------------------------------------------------


def user_text_as_string(model: Model, body: dict[str, Any]) -> None:
    """Chat completions: a text-only user message goes out as one string, not as content parts. llama-cpp-
    python's server with a GGUF's own chat template fails on parts (tests/real_servers: "Conversation roles must
    alternate" / a template error), and every server accepts a string."""
    if model.api != "openai-completions" or not resolve_openai_compat(model).user_text_as_string:
        return
    for message in body["messages"]:
        content = message.get("content")
        if message["role"] == "user" and isinstance(content, list) and all(p.get("type") == "text" for p in content):
            message["content"] = "\n".join(p["text"] for p in content)


def output_limit_for_unknown_servers(model: Model, body: dict[str, Any]) -> None:
    """Chat completions to a server Pi does not know (llama.cpp, llama-cpp-python, vLLM, Ollama, LiteLLM): the
    limit goes in ``max_tokens``, the only field llama-cpp-python and LiteLLM read (tests/real_servers), and only
    when it was set explicitly (these cases give the model's ``maxTokens``): their default is "until the context
    is full", and Pi's clamp (window minus prompt minus 4,096) gives a 2,048-token llama-cpp-python server a limit
    of 1 (tests/ai/test_openai_compat.py)."""
    if model.api != "openai-completions" or resolve_openai_compat(model).send_max_tokens:
        return
    limit = body.pop("max_completion_tokens", None)
    if limit is not None and "max_tokens" in model.model_fields_set:
        body["max_tokens"] = limit


def empty_string_for_tool_call_only_messages(model: Model, body: dict[str, Any]) -> None:
    """Chat completions to a server Pi does not know: an assistant message holding only tool calls has
    ``"content": ""``, not ``null``; llama-cpp-python's server rejects ``null`` (its pydantic model wants a
    string)."""
    if model.api != "openai-completions" or resolve_openai_compat(model).supports_null_assistant_content:
        return
    for message in body["messages"]:
        if message["role"] == "assistant" and message.get("content") is None:
            message["content"] = ""


KEPT = [user_text_as_string, output_limit_for_unknown_servers, empty_string_for_tool_call_only_messages]


def pi_as_ours(case: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = copy.deepcopy(PI[case["name"]]["body"])
    for keep in KEPT:
        keep(model_of(case), body)
    return body


def first_difference(pi: Any, ours: Any, path: str = "") -> str | None:
    if isinstance(pi, dict) and isinstance(ours, dict):
        for key in sorted(set(pi) | set(ours)):
            if key not in pi or key not in ours:
                return f"{path}.{key}: Pi {pi.get(key, '<absent>')!r:.200} ours {ours.get(key, '<absent>')!r:.200}"
            found = first_difference(pi[key], ours[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(pi, list) and isinstance(ours, list):
        for index, (a, b) in enumerate(zip(pi, ours, strict=False)):
            found = first_difference(a, b, f"{path}[{index}]")
            if found:
                return found
        return None if len(pi) == len(ours) else f"{path}: Pi has {len(pi)} items, ours {len(ours)}"
    return None if pi == ours and type(pi) is type(ours) else f"{path}: Pi {pi!r:.200} ours {ours!r:.200}"


@pytest.mark.parametrize("case", CASES["cases"], ids=lambda case: case["name"])
def test_our_request_equals_pis(case: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    url, body = ours(case, monkeypatch)
    assert url == PI[case["name"]]["url"]
    assert first_difference(pi_as_ours(case), body) is None


@pytest.mark.parametrize("keep", KEPT, ids=lambda keep: keep.__name__)
def test_each_kept_difference_shows_in_some_case(keep: Callable[[Model, dict[str, Any]], None]) -> None:
    """A difference listed in KEPT that no case shows is stale: remove it, or add the case that shows it."""
    changed = []
    for case in CASES["cases"]:
        body = copy.deepcopy(PI[case["name"]]["body"])
        keep(model_of(case), body)
        if body != PI[case["name"]]["body"]:
            changed.append(case["name"])
    assert changed


def test_every_case_was_recorded() -> None:
    assert {case["name"] for case in CASES["cases"]} == set(PI)
