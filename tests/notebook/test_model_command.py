"""``%pi model SPEC --context-window N --max-tokens N --key-env VAR [--from-server]`` (issue 17 item 8): the magic
itself (no running loop, so a prompt runs to the end in the call) against a real loopback server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import pi_notebook.notebook._magics as magics_module
from pi_notebook.notebook._magics import PiMagics
from pi_notebook.notebook._registry import SessionRegistry
from pi_notebook.testing import FaultServer, Reply, TokenUsage

KEY = "sk-model-command-key"


@pytest.fixture
def pi(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Iterator[Any]:
    """The magic, on a registry of its own (the kernel's is left alone). Typed ``Any``: IPython 9's stubs type the
    decorated ``pi`` as its decorator, IPython 8.12's leave it untyped, and this runs on both."""
    registry = SessionRegistry()
    monkeypatch.setattr(magics_module, "REGISTRY", registry)
    yield PiMagics(None)  # type: ignore[no-untyped-call, unused-ignore]
    for entry in registry:
        entry.dispose()


def _out(capsys: pytest.CaptureFixture[str]) -> str:
    return capsys.readouterr().out


def test_model_options_reach_the_model_and_its_requests(
    pi: Any, server: FaultServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LITELLM_KEY", KEY)
    server.script([Reply.text("hello from the proxy")])
    spec = f"openai-compatible:{server.openai_base_url}:proxy-model"
    pi.pi(f"model {spec} --context-window 2048 --max-tokens 64 --key-env LITELLM_KEY")
    pi.pi("model")
    pi.pi("say hello")
    out = _out(capsys)
    shown = f"{spec} --context-window 2048 --max-tokens 64 --key-env LITELLM_KEY"
    limits = "openai-completions, proxy-model; context window 2048, max tokens 64; key from LITELLM_KEY"
    assert f"pi: model set to {shown} ({limits})" in out
    assert f"pi: model {shown} ({limits})" in out
    assert "assistant: hello from the proxy" in out
    (request,) = server.requests
    assert request.api_key == KEY
    assert request.json["max_tokens"] == 64
    assert KEY not in out


def test_from_server_reads_the_context_window_of_the_only_model(
    pi: Any, server: FaultServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.serve_models({"object": "list", "data": [{"id": "smollm2", "meta": {"n_ctx": 2048, "n_ctx_train": 8192}}]})
    pi.pi(f"model openai-compatible:{server.openai_base_url} --from-server")
    pi.pi("status")
    out = _out(capsys)
    expected = f"openai-compatible:{server.openai_base_url}:smollm2 --from-server (context window 2048)"
    assert f"pi: model set to {expected} (openai-completions, smollm2; context window 2048," in out
    assert f"model: {expected}" in out


@pytest.mark.parametrize(
    ("rule", "refused"),
    [
        ('base_urls = ["https://llm.internal.example/"]', "base URL {url} is not allowed by policy"),
        ('allow = ["openai:gpt-4o-mini"]', "model openai-compatible:* is not allowed by policy"),  # issue 37 item 22
    ],
)
def test_from_server_sends_no_request_to_a_server_the_site_policy_does_not_allow(
    pi: Any,
    server: FaultServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Any,
    rule: str,
    refused: str,
) -> None:
    """The listing's GET carries the key: the model and the server are checked before it is sent."""
    from pi_notebook.session import site_policy

    policy = tmp_path / "policy.toml"
    policy.write_text(f"[models]\n{rule}")
    monkeypatch.setenv("PI_NOTEBOOK_POLICY", str(policy))
    monkeypatch.setenv("PROXY_KEY", "sk-canary-from-server")
    site_policy.cache_clear()
    try:
        server.serve_models({"object": "list", "data": [{"id": "m", "meta": {"n_ctx": 2048}}]})
        pi.pi(f"model openai-compatible:{server.openai_base_url} --from-server --key-env PROXY_KEY")
        pi.pi("model")
    finally:
        site_policy.cache_clear()
    out = _out(capsys)
    assert "pi: " + refused.format(url=server.openai_base_url) in out
    assert "pi: model faux (" in out
    assert server.connections_accepted == 0


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("model faux --context-window 2048", "pi: the faux model takes no options"),
        ("model --max-tokens 5", "pi: model: the options need a SPEC"),
        ("model openai:gpt-4o --key-env sk-abc", "pi: key_env must name an environment variable"),
        ("model openai:gpt-4o --from-server", "pi: not a compatible-server spec"),
        ("model openai:gpt-4o --context-window -1", "pi: model: argument --context-window: expected a positive"),
        ("model openai-compatible:http://127.0.0.1:99999/v1:m", "port 99999 is out of range (1-65535)"),
    ],
)
def test_bad_model_options_are_one_line_messages_and_keep_the_model(
    pi: Any, capsys: pytest.CaptureFixture[str], line: str, message: str
) -> None:
    pi.pi(line)
    pi.pi("model")
    out = _out(capsys)
    assert message in out
    assert "pi: model faux (" in out
    assert "Traceback" not in out
    assert "sk-abc" not in out  # a key pasted instead of a variable name is never shown


def test_from_server_without_a_listing_is_a_one_line_message(
    pi: Any, server: FaultServer, capsys: pytest.CaptureFixture[str]
) -> None:
    pi.pi(f"model openai-compatible:{server.openai_base_url}:m --from-server")
    pi.pi("model")
    out = _out(capsys)
    assert f"pi: cannot read the model list at {server.openai_base_url}/models: HTTP 404" in out
    assert "pi: model faux (" in out


@pytest.mark.parametrize(
    ("spec", "api", "path"),
    [
        ("openai-responses:gpt-4o-mini", "openai-responses", "/v1/responses"),
        ("google:gemini-2.5-flash", "google-generative-ai", "/v1beta/models/gemini-2.5-flash:streamGenerateContent"),
    ],
)
def test_the_new_apis_by_spec_and_base_url_and_the_report_shows_what_caching_saved(
    pi: Any,
    server: FaultServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    spec: str,
    api: str,
    path: str,
) -> None:
    monkeypatch.setenv("PROXY_KEY", KEY)
    base = server.google_base_url if api == "google-generative-ai" else server.openai_base_url
    cached = TokenUsage(input_tokens=100, output_tokens=5, cache_read_tokens=20_000)
    server.script([Reply.text("hello from the proxy", usage=cached)])
    pi.pi(f"model {spec} --base-url {base} --key-env PROXY_KEY")
    pi.pi("say hello")
    out = _out(capsys)
    assert f"pi: model set to {spec} --key-env PROXY_KEY --base-url {base} ({api}," in out
    assert "assistant: hello from the proxy" in out  # the report as plain IPython prints it (text/plain)
    # The report, at the model's cache price (its markdown and HTML copies carry the same line, escaped by the gate)
    assert "usage: turns 1 · in 20100 tok (20000 cached, saved $" in out
    (request,) = server.requests
    assert (request.path, request.api_key) == (path, KEY)
    assert KEY not in out


def test_the_help_lists_the_new_apis(pi: Any, capsys: pytest.CaptureFixture[str]) -> None:
    pi.pi("help")
    out = " ".join(_out(capsys).split())
    for spec in (
        "'openai-responses:<model>'",
        "'google:<model>'",
        "GEMINI_API_KEY or GOOGLE_API_KEY",
        "--base-url URL",
    ):
        assert spec in out


# -- issue 31 item 8: what the magic says ---------------------------------------------------------------------


def test_from_server_without_a_context_window_names_the_magics_option(
    pi: Any, server: FaultServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.serve_models({"object": "list", "data": [{"id": "smollm2", "object": "model"}]})  # llama-cpp-python's
    pi.pi(f"model openai-compatible:{server.openai_base_url} --from-server")
    out = _out(capsys)
    assert "reports no context window for model 'smollm2'; add --context-window N" in out
    assert "context_window=" not in out


@pytest.mark.parametrize(
    ("line", "limit"),
    [
        # a local server gets no output limit unless one is given: its own default is "until the window is full"
        ("model openai-compatible:http://127.0.0.1:9/v1:smollm2 --context-window 2048", "output limit: the server's"),
        (
            "model openai-compatible:http://127.0.0.1:9/v1:smollm2 --context-window 2048 --max-tokens 256",
            "max tokens 256",
        ),
        # every Anthropic request carries one: the model's, cut to what the window leaves
        (
            "model anthropic-compatible:http://127.0.0.1:9:claude --context-window 2048",
            "max tokens 16384, cut to what the 2048-token window leaves",
        ),
        ("model openai:gpt-4o-mini", "max tokens 16384"),
    ],
)
def test_the_model_line_shows_the_output_limit_requests_carry(
    pi: Any, capsys: pytest.CaptureFixture[str], line: str, limit: str
) -> None:
    pi.pi(line)
    out = _out(capsys)
    assert f"; context window {2048 if '2048' in line else 128000}, {limit}" in out
    if "server's" in limit:
        assert "16384" not in out
