"""Which environment variables hold secrets, and what a tool call must keep secret (no dependency on the HTTP
layer, so the cassette and the tools can use it).

Which environment variables hold keys (:func:`secret_variables`): the provider variables
(:data:`PROVIDER_KEY_VARIABLES`), every variable whose name says it holds a secret (``_secret.is_secret_name``:
``LITELLM_KEY``, ``HF_TOKEN``, ``PGPASSWORD``) and the variables a model names with ``key_env`` whatever their name.

Secrets held outside the environment (:data:`HELD_SECRETS`): values the process was given for a purpose of its own,
which every session redacts like its keys and cassettes keep out of their files: the environment values and headers
given to the kernel's MCP servers (``pi_notebook.mcp``).

What a tool call must keep secret (:class:`KnownSecrets`, :func:`known_secrets`): an ``AgentSession`` sets it for
the duration of each tool call (``session._redact``: the keys it knows and the variables holding them); tools read
it to leave those variables out of the environment the agent's code sees (``bash``'s child environment, the
``python`` tool's ``os.environ``) and to redact the values from what they write (the full-output temp logs).
Outside a session it is the environment's own (:func:`secret_variables`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from ._secret import ENV_KEYS, MIN_SECRET_LEN, is_secret_name
from .vendors import VENDORS

__all__ = [
    "ENV_FALLBACK_KEYS",
    "HELD_SECRETS",
    "PROVIDER_KEY_VARIABLES",
    "HeldSecrets",
    "KnownSecrets",
    "knowing_secrets",
    "known_during_call",
    "known_secrets",
    "provider_key_values",
    "secret_variables",
]

ENV_FALLBACK_KEYS = {name: vendor.fallback_keys for name, vendor in VENDORS.items() if vendor.fallback_keys}
"""Further variables read when the provider's own is not set: Google's SDKs read ``GOOGLE_API_KEY``."""

PROVIDER_KEY_VARIABLES: tuple[str, ...] = (
    *ENV_KEYS.values(),
    *(name for names in ENV_FALLBACK_KEYS.values() for name in names),
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_ADMIN_KEY",
)
"""Environment variables that hold provider credentials: the keys above and other credentials the official
SDKs read. Tools leave them out of their environment, and their values are redacted from tool results."""


def provider_key_values() -> list[str]:
    """The current values of :data:`PROVIDER_KEY_VARIABLES` that are set (read at each call)."""
    return [value for name in PROVIDER_KEY_VARIABLES if (value := os.environ.get(name))]


def secret_variables(named: Iterable[str | None] = (), environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The set environment variables that hold secrets (see the module docstring), with their values; ``named``
    adds variables named as keys whatever their name (a model's ``key_env``)."""
    found = dict(_os_environ_secrets()) if environ is None else _secrets_of(environ.items())
    source = os.environ if environ is None else environ
    for name in named:
        if name and name not in found and (value := source.get(name)) is not None:
            found[name] = value
    return found


def _is_secret_variable(name: str) -> bool:
    return name in PROVIDER_KEY_VARIABLES or is_secret_name(name)


def _secrets_of(items: Iterable[tuple[str, str]]) -> dict[str, str]:
    return {name: value for name, value in items if _is_secret_variable(name)}


_environ_seen: tuple[tuple[object, object], ...] | None = None
_environ_secrets: dict[str, str] = {}


def _os_environ_secrets() -> dict[str, str]:
    """:func:`_secrets_of` ``os.environ``, worked out again only when the environment changed (reading
    ``os.environ`` decodes every name and value, about 50 µs, and a session asks at every reply and tool call)."""
    global _environ_seen, _environ_secrets
    raw = getattr(os.environ, "_data", None)  # CPython's encoded mapping behind os.environ
    if not isinstance(raw, dict):
        return _secrets_of(os.environ.items())
    snapshot = tuple(raw.items())
    if snapshot != _environ_seen:
        _environ_secrets = _secrets_of(os.environ.items())
        _environ_seen = snapshot
    return _environ_secrets


class HeldSecrets:
    """Secret values the process holds outside its environment, by owner (see the module docstring). Thread-safe
    enough for its use: each owner's values are replaced as a whole."""

    def __init__(self) -> None:
        self._by_owner: dict[str, tuple[str, ...]] = {}

    def hold(self, owner: str, values: Iterable[str]) -> None:
        """Make ``values`` (those at least ``MIN_SECRET_LEN`` characters long) the secrets ``owner`` holds."""
        kept = tuple(sorted({value.strip() for value in values if value and len(value.strip()) >= MIN_SECRET_LEN}))
        if kept:
            self._by_owner[owner] = kept
        else:
            self._by_owner.pop(owner, None)

    def release(self, owner: str) -> None:
        self._by_owner.pop(owner, None)

    def values(self) -> tuple[str, ...]:
        return tuple(value for values in list(self._by_owner.values()) for value in values)


HELD_SECRETS = HeldSecrets()
"""This process's :class:`HeldSecrets`."""


@dataclass(frozen=True, slots=True)
class KnownSecrets:
    """What a tool call keeps secret: ``variables`` to leave out of the environment the agent's code sees,
    ``values`` to redact from what the tool writes (each at least ``MIN_SECRET_LEN`` characters)."""

    variables: frozenset[str]
    values: tuple[str, ...]

    @classmethod
    def of(cls, variables: Iterable[str], values: Iterable[str | None]) -> KnownSecrets:
        kept = {value.strip() for value in values if value and len(value.strip()) >= MIN_SECRET_LEN}
        return cls(frozenset(variables), tuple(sorted(kept)))


_known: ContextVar[KnownSecrets | None] = ContextVar("pi_notebook_known_secrets", default=None)


def known_during_call() -> bool:
    """Whether a session's tool call is running in this context (:func:`knowing_secrets` is in effect)."""
    return _known.get() is not None


def known_secrets() -> KnownSecrets:
    """The secrets of the session whose tool call is running here; outside one, the environment's."""
    known = _known.get()
    if known is not None:
        return known
    variables = secret_variables()
    return KnownSecrets.of(variables, [*variables.values(), *HELD_SECRETS.values()])


@contextmanager
def knowing_secrets(known: KnownSecrets) -> Iterator[None]:
    """Make ``known`` what :func:`known_secrets` returns in this context (a session around a tool call)."""
    token = _known.set(known)
    try:
        yield
    finally:
        _known.reset(token)
