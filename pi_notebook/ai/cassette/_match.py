"""What a cassette hides (secrets) and how it recognises a request (method, URL, JSON body minus varying fields).

Secrets: the values of credential headers are written as ``[redacted]``: every header whose name says
auth/key/token/secret/cookie/signature (``authorization``, ``x-api-key``, ``x-auth-token``,
``ocp-apim-subscription-key``, ``set-cookie``, …; the package's one rule, ``_secret.is_secret_name``), and every
occurrence of a secret *value* (a key in the environment, see ``_keys.secret_variables``; a configured one; or the
token found in a credential header) is replaced wherever else it appears: URL, header values, request
body, error texts (by ``[redacted]``) and response body (each character by ``*``, so chunk boundaries and
lengths stay as recorded, even when a key spans two chunks). Values shorter than 6 characters are not searched
for (they would mask ordinary text); their headers are still redacted.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from .._secret import header_secrets, is_secret_name
from ._format import Chunk

__all__ = [
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "Redactor",
    "first_difference",
    "match_key",
    "without_fields",
]

REDACTED = "[redacted]"
MIN_SECRET_LENGTH = 6


class Redactor:
    """Removes secrets from what is written. Immutable; :meth:`with_header_secrets` adds a request's tokens."""

    def __init__(self, secrets: Iterable[str]) -> None:
        unique = {secret for secret in secrets if len(secret) >= MIN_SECRET_LENGTH}
        self._secrets = tuple(sorted(unique, key=len, reverse=True))  # longest first: no partial leftovers

    def with_header_secrets(self, headers: Iterable[tuple[str, str]]) -> Redactor:
        """Also hide the values of ``headers``' credential headers (``Bearer <token>``: the token too)."""
        found = header_secrets(list(headers))
        return Redactor((*self._secrets, *found)) if found else self

    def text(self, value: str) -> str:
        for secret in self._secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return value

    def json(self, value: Any) -> Any:
        """A copy of a JSON value with secrets replaced in every string (keys included)."""
        if not self._secrets:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(key): self.json(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.json(item) for item in value]
        return value

    def headers(self, headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        """Lower-cased names; authentication headers' values replaced, secrets masked in the others."""
        return [(name.lower(), REDACTED if is_secret_name(name) else self.text(value)) for name, value in headers]

    def chunks(self, chunks: Sequence[Chunk]) -> list[Chunk]:
        """The body with every secret's bytes replaced by ``*``; same chunk count, lengths and times."""
        if not self._secrets or not chunks:
            return list(chunks)
        data = b"".join(chunk.data for chunk in chunks)
        masked = bytearray(data)
        for secret in self._secrets:
            needle = secret.encode()
            start = data.find(needle)
            while start >= 0:
                masked[start : start + len(needle)] = b"*" * len(needle)
                start = data.find(needle, start + 1)
        if masked == data:
            return list(chunks)
        out, offset = [], 0
        for chunk in chunks:
            out.append(Chunk(chunk.at, bytes(masked[offset : offset + len(chunk.data)])))
            offset += len(chunk.data)
        return out


def without_fields(value: Any, paths: Sequence[Sequence[str]]) -> Any:
    """A copy of ``value`` without the fields at ``paths`` (each a list of keys; ``*`` matches any key or index)."""
    if not paths:
        return value
    here = [path for path in paths if len(path) == 1]
    deeper = [path for path in paths if len(path) > 1]
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if any(path[0] in ("*", key) for path in here):
                continue
            out[key] = without_fields(item, [path[1:] for path in deeper if path[0] in ("*", key)])
        return out
    if isinstance(value, list):
        return [
            without_fields(item, [path[1:] for path in deeper if path[0] in ("*", str(index))])
            for index, item in enumerate(value)
            if not any(path[0] in ("*", str(index)) for path in here)
        ]
    return value


def match_key(method: str, url: str, body: Any) -> str:
    """The identity of a request for matching: same method, URL and body (already redacted and trimmed)."""
    if isinstance(body, bytes):
        body = {"content": body.decode("utf-8", "replace")}
    return json.dumps([method.upper(), url, body], sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def first_difference(recorded: Any, sent: Any, path: str = "") -> str | None:
    """Where two JSON values first differ, as a dotted path (``messages.2.content``; ``""`` is the whole body);
    ``None`` when they are equal."""
    if isinstance(recorded, dict) and isinstance(sent, dict):
        for key in sorted(set(recorded) | set(sent)):
            if key not in recorded or key not in sent:
                return _join(path, key)
            found = first_difference(recorded[key], sent[key], _join(path, key))
            if found is not None:
                return found
        return None
    if isinstance(recorded, list) and isinstance(sent, list):
        for index, (old, new) in enumerate(zip(recorded, sent, strict=False)):
            found = first_difference(old, new, _join(path, str(index)))
            if found is not None:
                return found
        return None if len(recorded) == len(sent) else _join(path, str(min(len(recorded), len(sent))))
    return None if recorded == sent else path


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
