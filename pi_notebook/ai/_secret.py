"""API keys as secrets: how a key is cleaned where it enters, and how every spelling of it is scrubbed from text.

Cleaning (:func:`clean_api_key`). Surrounding whitespace is stripped: a key read from a ``.env`` file or a
secret store often ends with a newline, and a header value cannot carry one (the Fetch standard, and so Pi,
trims it the same way; the Python SDKs do not, and fail with a retried "Connection error"). A key that still
holds a control or non-ASCII character is refused with :class:`ApiKeyError`, whose text never contains the key.

Scrubbing (:func:`scrub_secrets`). A library that rejects a key quotes it its own way: ``repr`` (``b'sk-…\\n'``),
JSON (``"sk-…\\n"``), percent-encoding (``sk-%E2%80%A6``). Every such spelling of the raw and the stripped key
is replaced by ``***``. Secrets shorter than :data:`MIN_SECRET_LEN` are not scrubbed: they are not real keys,
and scrubbing them would mangle ordinary text.

Which names hold a secret (:func:`is_secret_name`): one rule for HTTP header names and environment variable names,
used by every part of the package that masks a header (reprs, error texts, cassettes) or keeps a variable out of a
tool (bash's environment, the python tool's ``os.environ``) and redacts its value. A name holds a secret when one of
its words (split at ``-``, ``_``, ``.`` and other non-alphanumerics, case ignored) ends with *key*, *token*,
*secret*, *password*, *passwd*, *passphrase*, *credential*, *cookie*, *signature*, *auth*, *authorization* or
*authentication* (a plural too): ``Authorization``, ``X-Api-Key``, ``X-Auth-Token``, ``Ocp-Apim-Subscription-Key``,
``Set-Cookie``, ``X-Hub-Signature-256``, ``OPENAI_API_KEY``, ``HF_TOKEN``, ``PGPASSWORD``, ``AWS_SECRET_ACCESS_KEY``.
Whole words, not substrings: ``GIT_AUTHOR_NAME``, ``XAUTHORITY`` and ``Keep-Alive`` are not secrets. Exception:
``SSH_AUTH_SOCK`` (a socket path an ssh client needs, see :data:`NOT_SECRET_NAMES`).
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from collections.abc import Iterable, Mapping
from urllib.parse import quote, quote_plus

from pydantic import SecretStr

from ._errors import UserError
from .vendors import VENDORS

__all__ = [
    "ENV_KEYS",
    "MIN_SECRET_LEN",
    "NOT_SECRET_NAMES",
    "REDACTED",
    "ApiKeyError",
    "api_key_problem",
    "clean_api_key",
    "header_secrets",
    "is_secret_name",
    "is_sensitive_header",
    "mask_headers",
    "scrub_secrets",
    "scrub_secrets_bytes",
    "secret_spellings",
    "secret_value",
    "strip_api_key",
]

ENV_KEYS = {name: vendor.key_env for name, vendor in VENDORS.items()}
"""The environment variable holding each provider's key (Pi's names; :data:`~.vendors.VENDORS`)."""

REDACTED = "***"
MIN_SECRET_LEN = 8
_SECRET_WORD = re.compile(
    r"(?:key|token|secret|password|passwd|passphrase|credential|cookie|signature|auth|authorization|authentication)s?$"
)
_WORD_SPLIT = re.compile(r"[^a-z0-9]+")
NOT_SECRET_NAMES = frozenset({"ssh_auth_sock"})
"""Names the rule matches whose values are not secrets (lower-cased): kept in tools' environments, not redacted."""


class ApiKeyError(UserError, ValueError):
    """A key that cannot be sent (a control or non-ASCII character inside it). The text never holds the key."""


def secret_value(key: SecretStr | str | None) -> str | None:
    """The plain text of a key held as ``SecretStr`` or ``str``."""
    return key.get_secret_value() if isinstance(key, SecretStr) else key


def strip_api_key(key: SecretStr | str | None) -> SecretStr | None:
    """``key`` with surrounding whitespace removed, as a ``SecretStr`` (``None`` for no key or a blank one).
    Never raises: a malformed key is reported where it is used (:func:`api_key_problem`)."""
    value = secret_value(key)
    if value is None:
        return None
    value = value.strip()
    return SecretStr(value) if value else None


def api_key_problem(key: str) -> str | None:
    """Why a (stripped) key cannot go into a header, in words that do not reveal it; ``None`` if it can."""
    for char in key:
        if char in "\r\n":
            return "contains a line break"
        if unicodedata.category(char) == "Cc":
            return f"contains a control character (U+{ord(char):04X})"
        if not char.isascii():
            return f"contains a non-ASCII character (U+{ord(char):04X})"
    return None


def clean_api_key(key: SecretStr | str | None, *, source: str = "api_key") -> SecretStr | None:
    """Strip ``key`` and check it can be sent; raises :class:`ApiKeyError` naming ``source``, not the key."""
    stripped = strip_api_key(key)
    if stripped is not None and (problem := api_key_problem(stripped.get_secret_value())):
        raise ApiKeyError(f"The API key passed as {source} {problem}")
    return stripped


@functools.lru_cache(maxsize=1024)
def is_secret_name(name: str) -> bool:
    """Whether a header or environment variable named ``name`` holds a secret (see the module docstring)."""
    lowered = name.lower()
    if lowered in NOT_SECRET_NAMES:
        return False
    return any(_SECRET_WORD.search(word) for word in _WORD_SPLIT.split(lowered) if word)


def is_sensitive_header(name: str) -> bool:
    """Whether a header's value is a credential (``Authorization``, ``x-api-key``, ``Cookie``, ...):
    :func:`is_secret_name`."""
    return is_secret_name(name)


def header_secrets(headers: Iterable[tuple[str, str]] | Mapping[str, str] | None) -> list[str]:
    """The secret values among ``headers``: each credential header's value and, for ``<scheme> <token>``
    (``Bearer sk-…``), the token alone."""
    if headers is None:
        return []
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    found: list[str] = []
    for name, value in pairs:
        if is_secret_name(name):
            found.append(value)
            scheme, _, token = value.strip().partition(" ")
            if token and scheme.isalpha():
                found.append(token)
    return found


def mask_headers(headers: Mapping[str, str] | None) -> dict[str, str] | None:
    """``headers`` with the values of sensitive ones replaced by ``***`` (for reprs and dumps)."""
    if headers is None:
        return None
    return {name: REDACTED if is_sensitive_header(name) else value for name, value in headers.items()}


def scrub_secrets(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every spelling of every secret (see the module docstring) replaced by ``***``."""
    usable = _usable(secrets)
    if not usable or not text:
        return text
    return _pattern(usable).sub(REDACTED, text)


def scrub_secrets_bytes(data: bytes, secrets: Iterable[str | None]) -> bytes:
    """:func:`scrub_secrets` for raw output (bytes that may not be UTF-8): each spelling's UTF-8 bytes become
    ``***``."""
    usable = _usable(secrets)
    if not usable or not data:
        return data
    return _bytes_pattern(usable).sub(REDACTED.encode(), data)


def secret_spellings(secrets: Iterable[str | None]) -> tuple[str, ...]:
    """Every spelling of every usable secret, longest first (what :func:`scrub_secrets` replaces)."""
    usable = _usable(secrets)
    return _spelled(usable) if usable else ()


def _usable(secrets: Iterable[str | None]) -> tuple[str, ...]:
    return tuple(sorted({s for s in secrets if s and len(s.strip()) >= MIN_SECRET_LEN}))


@functools.lru_cache(maxsize=32)
def _spelled(secrets: tuple[str, ...]) -> tuple[str, ...]:
    variants: set[str] = set()
    for secret in secrets:
        for value in {secret, secret.strip()}:
            variants.update(_spellings(value))
    return tuple(sorted((v for v in variants if len(v) >= MIN_SECRET_LEN), key=lambda v: (-len(v), v)))


@functools.lru_cache(maxsize=32)
def _pattern(secrets: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(v) for v in _spelled(secrets)))


@functools.lru_cache(maxsize=32)
def _bytes_pattern(secrets: tuple[str, ...]) -> re.Pattern[bytes]:
    spelled = sorted({v.encode("utf-8", "surrogatepass") for v in _spelled(secrets)}, key=len, reverse=True)
    return re.compile(b"|".join(re.escape(v) for v in spelled))


def _spellings(value: str) -> set[str]:
    encoded = value.encode("utf-8", "surrogatepass")
    percent = {quote(value, safe=""), quote(value), quote_plus(value, safe=""), quote_plus(value)}
    return {
        value,
        repr(value)[1:-1],
        repr(encoded)[2:-1],
        value.encode("unicode_escape").decode("ascii"),
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1],
        *percent,
        *(re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), p) for p in percent),
    }
