"""Keys out of tool output: the session redacts every key it knows from every tool result and update.

A tool's output goes to the model, the widget and the session file, and a tool can read keys (``env``, a
``python`` tool reading ``os.environ``, a file). So the session's tool guard (:func:`~._guard.guard_tool`, which
every tool passes through) replaces each known key, in every spelling :func:`~pi_notebook.ai._secret.scrub_secrets`
knows, by ``***`` in the text content and the string values of ``details`` of every result and ``on_update``
snapshot, and in the text of a tool's exception. A key cut at the edge of a snapshot (an output tail that starts
inside it, or output that stops in the middle of it) is redacted too.

The keys (:class:`SessionKeys`), every way a key can be configured: the agent's ``api_key`` and
``stream_options.api_key``, every key a ``get_api_key`` given to the session returned, the values of credential
headers (``model.headers``, ``stream_options.headers``: names that say auth/key/token/secret/cookie/signature), and
the current values of the environment variables that hold keys (``pi_notebook.ai._keys.secret_variables``: the
provider variables, the variable the model names with ``key_env`` whatever its name, and every variable whose name
says key/token/secret/password), and the secrets the process holds for others (``HELD_SECRETS``: the values given
to MCP servers). Keys shorter than 8 characters are not redacted. The same set, with the names of
those variables, is what the session's tool guard makes :func:`~pi_notebook.ai._keys.known_secrets` during a
call, so the tools leave the variables out of the agent's code's environment (see ``pi_notebook.tools.bash`` and
``pi_notebook.kernel.python_tool``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from pydantic import SecretStr

from ..agent import Agent, AgentToolResult
from ..ai import (
    HELD_SECRETS,
    REDACTED,
    KnownSecrets,
    TextContent,
    header_secrets,
    maybe_await,
    scrub_secrets,
    secret_spellings,
    secret_value,
    secret_variables,
)

__all__ = ["SessionKeys", "StreamRedactor", "redact_result", "redact_text", "redact_value"]

_EDGE_MIN = 6  # the shortest cut-off piece of a key redacted at a snapshot's edge


class SessionKeys:
    """The keys a session knows, read when asked (see the module docstring)."""

    def __init__(self, agent: Agent) -> None:
        self._agent = agent
        self._asked: set[str] = set()

    def remember(self, key: object) -> None:
        """Record a key that ``get_api_key`` returned."""
        value = secret_value(key) if isinstance(key, str | SecretStr) else None
        if value and value.strip():
            self._asked.add(value.strip())

    def wrap(self, get_api_key: Callable[[str], Any] | None) -> Callable[[str], Any] | None:
        """``get_api_key`` recording what it returns (sync or async)."""
        if get_api_key is None:
            return None

        async def asked(provider: str) -> Any:
            key = await maybe_await(get_api_key(provider))
            self.remember(key)
            return key

        return asked

    def known(self) -> KnownSecrets:
        """The keys (read now) and the environment variables that hold them."""
        agent = self._agent
        model, options = agent.state.model, agent.stream_options
        variables = secret_variables([model.key_env])
        keys = [secret_value(agent.api_key), options.api_key_value(), *self._asked, *variables.values()]
        keys += header_secrets(model.headers) + header_secrets(options.headers) + list(HELD_SECRETS.values())
        return KnownSecrets.of(variables, keys)

    def __call__(self) -> list[str]:
        return list(self.known().values)


def redact_text(text: str, keys: Iterable[str]) -> str:
    """``text`` with every spelling of every key, and a key cut at either edge, replaced by ``***``."""
    keys = list(keys)
    if not keys or not text:
        return text
    text = scrub_secrets(text, keys)
    for key in keys:
        text = _redact_edges(text, key)
    return text


def _redact_edges(text: str, key: str) -> str:
    for size in range(min(len(key) - 1, len(text)), _EDGE_MIN - 1, -1):  # the whole text may be the piece
        if text.endswith(key[:size]):
            text = text[:-size] + REDACTED
            break
    for size in range(min(len(key) - 1, len(text)), _EDGE_MIN - 1, -1):
        if text.startswith(key[-size:]):
            text = REDACTED + text[size:]
            break
    return text


class StreamRedactor:
    """Keys out of text that arrives in pieces (the ``python`` tool's live output, before it leaves the kernel).

    :meth:`feed` returns what can be shown now, keys redacted; the end of the text that could still become a key
    (a prefix of any spelling of one) is held back until the next piece completes or refutes it, or until
    :meth:`flush`. So a key split across two pieces, at any character, never shows; what is held back is a few
    characters, and only while they could begin a key. :meth:`reset` forgets what is held (the text before the
    next piece was dropped: its start is a cut, which :func:`redact_text` handles at the edge)."""

    def __init__(self, keys: Callable[[], list[str]]) -> None:
        self._keys = keys
        self._held = ""

    def feed(self, text: str) -> str:
        keys = self._keys()
        raw, self._held = self._held + text, ""
        if not keys:
            return raw
        hold = _open_prefix(raw, secret_spellings(keys))
        if hold:
            raw, self._held = raw[:-hold], raw[-hold:]
        return redact_text(raw, keys)

    def flush(self) -> str:
        held, self._held = self._held, ""
        return redact_text(held, self._keys())

    def reset(self) -> None:
        self._held = ""


def _open_prefix(text: str, spellings: Iterable[str]) -> int:
    """The length of the longest end of ``text`` that is a proper prefix of one of ``spellings`` (0: none)."""
    longest = 0
    last = text[-1:]
    for spelling in spellings:
        for size in range(min(len(spelling) - 1, len(text)), longest, -1):
            if spelling[size - 1] == last and text.endswith(spelling[:size]):
                longest = size
                break
    return longest


def redact_result(result: AgentToolResult, keys: list[str]) -> AgentToolResult:
    """``result`` with keys redacted from its text content and the strings in its ``details``."""
    if not keys:
        return result
    blocks = [TextContent(text=result.content)] if isinstance(result.content, str) else result.content
    content = [
        block.model_copy(update={"text": redact_text(block.text, keys)}) if isinstance(block, TextContent) else block
        for block in blocks
    ]
    return replace(result, content=content, details=redact_value(result.details, keys))


def redact_value(value: Any, keys: Iterable[str]) -> Any:
    """``value`` with keys redacted from every string in it, through dicts, lists and tuples (a new value; a tool
    result's ``details``, a mime bundle, a cell's nbformat outputs)."""
    keys = list(keys)
    if not keys:
        return value
    if isinstance(value, str):
        return redact_text(value, keys)
    if isinstance(value, dict):
        return {name: redact_value(item, keys) for name, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(redact_value(item, keys) for item in value)
    return value
