"""The wire APIs the loopback fault server speaks, and a model that talks to it in each: the one table tests and
benchmarks parametrize over. A new wire API is its format in ``pi_notebook/testing/formats/`` (one module, one row
in ``FORMATS``); every test parametrized on :data:`APIS` then runs it too."""

from __future__ import annotations

from typing import Any

from pi_notebook.ai import Model
from pi_notebook.testing import Api, FaultServer, RecordedRequest
from pi_notebook.testing.formats import FORMATS, WireFormat

WIRES: dict[Api, WireFormat] = {wire.name: wire for wire in FORMATS}
"""Each format the fault server speaks (``pi_notebook.testing.formats``) by name: its ``api`` (``Model.api``), its
``vendor`` (whose key variable applies: a missing key is an error) and the ``path`` its base URL takes."""
APIS: list[Api] = list(WIRES)
"""What tests parametrize over: ``@pytest.mark.parametrize("api", APIS)``."""


def model_for(api: str, server: FaultServer | str, *, keyless: bool = False, **fields: Any) -> Model:
    """A model ``test-model`` speaking ``api`` to ``server`` (or to a fault server's ``base_url``, e.g. one that
    is closed, for a cassette's replay, or :meth:`FaultServer.refused_url`).

    Its provider is the vendor (``openai``, ``anthropic``): the key comes from ``StreamOptions.api_key`` or the
    vendor's variable, and a missing one is an error. ``keyless``: a self-hosted server of that format
    (``openai-compatible``, ...), which needs no key. ``fields`` set any other :class:`Model` field
    (``context_window``, ``cost``, ...)."""
    wire = WIRES[api]  # an unknown one is a KeyError
    base = server if isinstance(server, str) else server.base_url
    provider = f"{wire.vendor}-compatible" if keyless else wire.vendor
    return Model(**{"id": "test-model", "api": wire.api, "provider": provider, "base_url": base + wire.path, **fields})


_TEXT_KEYS = frozenset({"text", "content", "system", "instructions"})
"""Where the four formats put the text a request gives the model (a system prompt, a message, a part)."""


def sent_text(request: RecordedRequest) -> str:
    """Everything a request gives the model as text, its system prompt and messages, in any of the four formats
    (chat completions' ``messages``, Anthropic's ``system`` and ``messages``, the Responses API's ``instructions``
    and ``input``, Gemini's ``systemInstruction`` and ``contents``), in the order sent."""
    return "".join(_texts(request.json))


def _texts(node: Any, key: str | None = None) -> list[str]:
    if isinstance(node, str):
        return [node] if key in _TEXT_KEYS else []
    if isinstance(node, dict):
        return [text for name, value in node.items() for text in _texts(value, name)]
    if isinstance(node, list):
        return [text for item in node for text in _texts(item, key)]
    return []


def output_limit(request: RecordedRequest) -> int | None:
    """The output limit a request asks for, in any of the four formats."""
    body = request.json
    for name in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
        if isinstance(body.get(name), int):
            return int(body[name])
    limit = (body.get("generationConfig") or {}).get("maxOutputTokens")
    return int(limit) if isinstance(limit, int) else None
