"""The context-overflow texts of the servers people run, each copied from the server's own source (issue 17 item 6).

Each row is the text as the server formats it (numbers filled in), then as our OpenAI-compatible provider words
it (``describe_status`` adds the status and the error code). A row that fails means a server's wording is no
longer recognised: compaction would not run and the session would retry an overflow as if it were transient.
Sources (repository, path, commit or release):

* vLLM, ``vllm-project/vllm``: ``vllm/renderers/params.py`` (017638d7, ``_token_len_check`` and
  ``_text_len_check``), ``vllm/v1/engine/input_processor.py`` (009daaee, ``_validate_prompt_len``),
  ``vllm/entrypoints/openai/serving_engine.py`` (0030b9ff, the wording of older releases).
* Ollama, ``ollama/ollama`` (fb307609): ``llm/llama_server.go`` (``completionPromptForRequest``, context shift
  off; with it on Ollama truncates silently, which only usage can reveal), ``x/mlxrunner/pipeline.go``; the
  older runner's "prompt too long; exceeded max context length by N tokens" is quoted in Pi 0.83's
  ``pi-ai/dist/utils/overflow.js``.
* llama.cpp's server, ``ggml-org/llama.cpp`` as vendored in llama-cpp-python 0.3.36's sdist:
  ``tools/server/server-context.cpp`` (two texts, context shift off and on), type ``exceed_context_size_error``.
* llama-cpp-python 0.3.36 (PyPI sdist): ``llama_cpp/llama.py`` raises "Requested tokens (N) exceed context window
  of M"; ``llama_cpp/server/errors.py`` (``context_length_exceeded``) rewrites it into OpenAI's wording.
* LiteLLM, ``BerriAI/litellm``: ``litellm/exceptions.py`` (``ContextWindowExceededError`` prefixes its message
  with ``litellm.ContextWindowExceededError:``, 1.108.7); the proxy's text for its mock model, as
  ``litellm[proxy]==1.108.7`` sent it on both routes (``tests/real_servers`` runs it).
* OpenRouter (closed source): the body quoted in ``Aider-AI/aider`` issue #3721.
"""

from __future__ import annotations

import json

import pytest

from pi_notebook.ai import AssistantMessage
from pi_notebook.ai.overflow import is_context_overflow
from pi_notebook.ai.providers.openai_completions import describe_status

SERVER_TEXTS: list[tuple[str, str]] = [
    (
        "vllm-renderer-tokens",
        "You passed 2519 input tokens and requested 256 output tokens. However, the model's context length is only "
        "2048 tokens, resulting in a maximum input length of 1792 tokens. Please reduce the length of the input "
        "prompt.",
    ),
    (
        "vllm-renderer-characters",
        "You passed 9000 input characters and requested 256 output tokens. However, the model's context length is "
        "only 2048 tokens, resulting in a maximum input length of 1792 tokens (at most 7168 characters). Please "
        "reduce the length of the input prompt.",
    ),
    (
        "vllm-engine",
        "The decoder prompt (length 2519) is longer than the maximum model length of 2048. Make sure that "
        "`max_model_len` is no smaller than the number of text tokens.",
    ),
    (
        "vllm-older",
        "This model's maximum context length is 2048 tokens. However, you requested 2775 tokens (2519 in the "
        "messages, 256 in the completion). Please reduce the length of the messages or completion.",
    ),
    (
        "ollama-runner",
        "the prompt is longer than the context length currently available to the model; shorten the prompt, adjust "
        "the context length in settings, or use a model with a longer context length",
    ),
    ("ollama-mlx", "input length (2519 tokens) exceeds the model's maximum context length (2048 tokens)"),
    ("ollama-older", "prompt too long; exceeded max context length by 471 tokens"),
    ("llama.cpp", "request (2519 tokens) exceeds the available context size (2048 tokens), try increasing it"),
    ("llama.cpp-shift", "input (2519 tokens) is larger than the max context size (2048 tokens). skipping"),
    ("llama-cpp-python-raw", "Requested tokens (2519) exceed context window of 2048"),
    (
        "llama-cpp-python-server",
        "This model's maximum context length is 2048 tokens. However, you requested 2519 tokens (2519 in the "
        "messages, None in the completion). Please reduce the length of the messages or completion.",
    ),
    (
        "litellm",
        "litellm.ContextWindowExceededError: litellm.BadRequestError: ContextWindowExceededError: OpenAIException - "
        "Error code: 400 - {'error': {'message': 'request (2519 tokens) exceeds the available context size (2048 "
        "tokens), try increasing it', 'type': 'exceed_context_size_error'}}",
    ),
    (
        "litellm-mock",  # litellm[proxy] 1.108.7, mock_response "litellm.ContextWindowExceededError"; both routes
        "litellm.ContextWindowExceededError: litellm.BadRequestError: this is a mock context window exceeded error\n"
        "model=mock-overflow. context_window_fallbacks=None. fallbacks=None.\n\nSet 'context_window_fallback' - "
        "https://docs.litellm.ai/docs/routing#fallbacks\n\nLiteLLM: model group 'mock-overflow' failed with the "
        "error above. No fallback was attempted.",
    ),
    (
        "openrouter",
        "This endpoint's maximum context length is 131072 tokens. However, you requested about 141607 tokens (10535 "
        'of text input, 131072 in the output). Please reduce the length of either one, or use the "middle-out" '
        "transform to compress your prompt automatically.",
    ),
]


def failed(text: str) -> AssistantMessage:
    return AssistantMessage(
        api="openai-completions", provider="openai-compatible", stop_reason="error", error_message=text
    )


@pytest.mark.parametrize("text", [t for _, t in SERVER_TEXTS], ids=[name for name, _ in SERVER_TEXTS])
def test_the_servers_own_text_is_an_overflow(text: str) -> None:
    assert is_context_overflow(failed(text))


@pytest.mark.parametrize("text", [t for _, t in SERVER_TEXTS], ids=[name for name, _ in SERVER_TEXTS])
@pytest.mark.parametrize("status", [400, 413, 200])
def test_the_text_as_the_provider_reports_it_is_an_overflow(text: str, status: int) -> None:
    body = json.dumps({"error": {"message": text}})  # no code: vLLM sends 400, Ollama none, so the text must do
    reported = describe_status(status, body)
    assert reported == f"{status} {text}"
    assert is_context_overflow(failed(reported))
