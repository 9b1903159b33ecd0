"""Model specs with options, compatible-server specs, and reading a server's model list (issue 17 item 8,
issue 10 item 14). Servers are real: the loopback fault server records what arrives."""

from __future__ import annotations

import re
from typing import Any

import pytest

from pi_notebook.ai import Context, StreamOptions, TextContent, UserMessage, complete
from pi_notebook.ai.models import model_from_server, model_from_spec, parse_compatible_spec
from pi_notebook.testing import FaultServer, Reply

# -- parsing ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("openai-compatible:http://127.0.0.1:11434/v1:llama3.2:3b", ("http://127.0.0.1:11434/v1", "llama3.2:3b")),
        ("openai-compatible:http://host:8080:llama3", ("http://host:8080", "llama3")),
        ("openai-compatible:http://host:llama3.2", ("http://host", "llama3.2")),
        ("openai-compatible:https://[::1]:8443/v1:m", ("https://[::1]:8443/v1", "m")),
        ("openai-compatible:http://127.0.0.1:18799/v1:", ("http://127.0.0.1:18799/v1", "")),
        ("openai-compatible:http://127.0.0.1:11434", ("http://127.0.0.1:11434", "")),
        ("anthropic-compatible:http://127.0.0.1:4000/v1:claude", ("http://127.0.0.1:4000", "claude")),
        ("anthropic-compatible:http://127.0.0.1:4000:claude", ("http://127.0.0.1:4000", "claude")),
    ],
)
def test_compatible_specs_split_into_url_and_model(spec: str, expected: tuple[str, str]) -> None:
    assert parse_compatible_spec(spec)[1:] == expected


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        # issue 10 item 14: this was read as model "18799/v1:" on http://127.0.0.1
        ("openai-compatible:http://127.0.0.1:18799/v1:", "no model after the base URL 'http://127.0.0.1:18799/v1'"),
        ("openai-compatible:http://127.0.0.1:11434", "no model after the base URL 'http://127.0.0.1:11434'"),
        ("anthropic-compatible:http://127.0.0.1:4000/v1", "no model after the base URL 'http://127.0.0.1:4000'"),
        ("openai-compatible:ftp://host:model", "expected openai-compatible:<http(s) base url>:<model>"),
        ("openai-compatible:http://host/v1:two words", "contains whitespace"),
        ("anthropic-proxy:http://host:m", "unknown model spec"),
        # issue 30 item 16: a port outside 1-65535 was accepted
        ("openai-compatible:http://127.0.0.1:99999/v1:m", "port 99999 is out of range (1-65535)"),
        ("openai-compatible:http://127.0.0.1:0/v1:m", "port 0 is out of range (1-65535)"),
        ("anthropic-compatible:https://host:65536:m", "port 65536 is out of range (1-65535)"),
        ("openai-compatible:file:///etc/passwd:m", "expected openai-compatible:<http(s) base url>:<model>"),
    ],
)
def test_a_bad_spec_is_a_one_line_error_saying_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)) as info:
        model_from_spec(spec)
    assert "\n" not in str(info.value)


def test_spec_options_set_the_window_the_output_limit_and_the_key_variable() -> None:
    model = model_from_spec(
        "openai-compatible:http://127.0.0.1:4000/v1:gpt-4o", context_window=2048, max_tokens=256, key_env="LITELLM_KEY"
    )
    assert (model.context_window, model.max_tokens, model.key_env) == (2048, 256, "LITELLM_KEY")
    known = model_from_spec("openai:gpt-4o-mini", context_window=64_000)
    assert (known.context_window, known.max_tokens) == (64_000, 16_384)  # the option wins over the table


def test_an_anthropic_compatible_spec_speaks_the_messages_api() -> None:
    model = model_from_spec("anthropic-compatible:http://127.0.0.1:4000/v1:claude-proxy")
    assert (model.api, model.provider, model.base_url, model.id) == (
        "anthropic-messages",
        "anthropic-compatible",
        "http://127.0.0.1:4000",
        "claude-proxy",
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"context_window": 0}, "context_window must be a positive number of tokens, got 0"),
        ({"max_tokens": -5}, "max_tokens must be a positive number of tokens, got -5"),
        ({"max_tokens": True}, "max_tokens must be a positive number of tokens, got True"),
        ({"context_window": "2048"}, "context_window must be a positive number of tokens, got '2048'"),
        ({"key_env": "MY-KEY"}, "key_env must name an environment variable"),
        ({"key_env": "sk-abc123"}, "key_env must name an environment variable"),
    ],
)
def test_bad_options_are_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        model_from_spec("openai-compatible:http://127.0.0.1:4000/v1:gpt-4o", **options)


# -- the key named by key_env ----------------------------------------------------------------------------

KEY = "sk-litellm-0123456789abcdef"


def ask(model: Any) -> Any:
    context = Context(messages=[UserMessage(content=[TextContent(text="hi")])])
    return complete(model, context, StreamOptions())


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_the_key_comes_from_the_named_variable(
    server: FaultServer, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LITELLM_KEY", KEY)
    server.script([Reply.text("ok")])
    url = server.openai_base_url  # ends in /v1, which an anthropic-compatible spec drops
    model = model_from_spec(f"{kind}-compatible:{url}:proxy-model", key_env="LITELLM_KEY")
    reply = await ask(model)
    assert reply.stop_reason == "stop", reply.error_message
    request = server.requests[0]
    assert request.api_key == KEY
    assert request.path == ("/v1/chat/completions" if kind == "openai" else "/v1/messages")


async def test_an_unset_key_variable_is_an_error_naming_it(
    server: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LITELLM_KEY", raising=False)
    model = model_from_spec(f"openai-compatible:{server.openai_base_url}:m", key_env="LITELLM_KEY")
    reply = await ask(model)
    assert (reply.stop_reason, reply.error_message) == (
        "error",
        "No API key for model m: set the environment variable LITELLM_KEY",
    )
    assert server.requests == []


# -- reading the server's model list ---------------------------------------------------------------------

LLAMA_SERVER = {  # llama.cpp's llama-server, get_res_model_info (tools/server/server-context.cpp)
    "object": "list",
    "data": [
        {
            "id": "smollm2",
            "aliases": ["smollm2-135m"],
            "object": "model",
            "owned_by": "llamacpp",
            "meta": {"vocab_type": 2, "n_vocab": 49152, "n_ctx": 2048, "n_ctx_train": 8192, "n_embd": 576},
        }
    ],
}
VLLM = {"object": "list", "data": [{"id": "qwen", "object": "model", "max_model_len": 32768}]}
IDS_ONLY = {"object": "list", "data": [{"id": "smollm2", "object": "model", "owned_by": "me", "permissions": []}]}


def test_llama_servers_context_window_is_read(server: FaultServer) -> None:
    server.serve_models(LLAMA_SERVER)
    model = model_from_server(f"openai-compatible:{server.openai_base_url}")
    assert (model.id, model.context_window, model.base_url) == ("smollm2", 2048, server.openai_base_url)
    assert [r.path for r in server.requests] == ["/v1/models"]


def test_an_alias_finds_the_model_and_vllms_field_is_read(server: FaultServer) -> None:
    server.serve_models(LLAMA_SERVER)
    assert model_from_server(f"openai-compatible:{server.openai_base_url}:smollm2-135m").id == "smollm2"
    server.serve_models(VLLM)
    assert model_from_server(f"openai-compatible:{server.openai_base_url}:qwen").context_window == 32768


def test_a_server_that_lists_ids_only_needs_the_window_given(server: FaultServer) -> None:
    server.serve_models(IDS_ONLY)  # llama-cpp-python 0.3.36, llama_cpp/server/app.py get_models
    with pytest.raises(ValueError, match="reports no context window for model 'smollm2'; pass context_window="):
        model_from_server(f"openai-compatible:{server.openai_base_url}")
    model = model_from_server(f"openai-compatible:{server.openai_base_url}", context_window=2048, max_tokens=128)
    assert (model.id, model.context_window, model.max_tokens) == ("smollm2", 2048, 128)


def test_a_model_that_is_not_listed_names_the_ones_that_are(server: FaultServer) -> None:
    server.serve_models({"data": [{"id": "a"}, {"id": "b"}]})
    with pytest.raises(ValueError, match=r"does not list model 'c' \(it lists: a, b\)"):
        model_from_server(f"openai-compatible:{server.openai_base_url}:c")
    with pytest.raises(ValueError, match=r"serves 2 models \(a, b\): name one after the URL"):
        model_from_server(f"openai-compatible:{server.openai_base_url}")


def test_the_listing_is_asked_for_with_the_key(server: FaultServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LITELLM_KEY", KEY)
    server.serve_models(VLLM)
    model = model_from_server(f"openai-compatible:{server.openai_base_url}:qwen", key_env="LITELLM_KEY")
    assert model.key_env == "LITELLM_KEY"
    assert server.requests[0].api_key == KEY


@pytest.mark.parametrize(
    ("listing", "message"),
    [(None, "HTTP 404"), ({"models": []}, "no 'data' list in the answer")],
)
def test_no_listing_is_a_one_line_error(server: FaultServer, listing: Any, message: str) -> None:
    server.serve_models(listing)
    with pytest.raises(ValueError, match=f"cannot read the model list at {server.openai_base_url}/models: {message}"):
        model_from_server(f"openai-compatible:{server.openai_base_url}")


def test_an_unreachable_server_is_a_one_line_error() -> None:
    url = FaultServer.refused_url()
    with pytest.raises(ValueError, match=f"cannot read the model list at {url}/v1/models: ConnectError"):
        model_from_server(f"openai-compatible:{url}/v1", timeout_s=2)
