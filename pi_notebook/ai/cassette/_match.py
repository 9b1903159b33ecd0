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
from dataclasses import dataclass
from typing import Any

from .._secret import header_secrets, is_secret_name
from ._format import Chunk

__all__ = [
    "ABSENT",
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "Difference",
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


class _Absent:
    def __repr__(self) -> str:
        return "(absent)"


ABSENT: Any = _Absent()
"""A value one side of a :class:`Difference` does not have (a key or list item only the other side has)."""
_SHOWN = 60  # characters of a value a difference shows


@dataclass(frozen=True, slots=True)
class Difference:
    """Where two JSON values first differ (``path``: ``messages[3].content``; ``""`` is the whole value) and what
    each side holds there (:data:`ABSENT` when only the other has it). ``str()``: ``messages[3].content: "What is
    2+2?" != "What is 3+3?"``, recorded value first; long strings are shown around their first difference."""

    path: str
    recorded: Any
    sent: Any

    def __str__(self) -> str:
        recorded, sent = _shown(self.recorded, self.sent)
        return f"{self.path or 'the body'}: {recorded} != {sent}"


def first_difference(recorded: Any, sent: Any, path: str = "") -> Difference | None:
    """Where two JSON values first differ (keys in sorted order, list items in order); ``None`` when equal."""
    if isinstance(recorded, dict) and isinstance(sent, dict):
        for key in sorted(set(recorded) | set(sent)):
            where = f"{path}.{key}" if path else key
            if key not in recorded or key not in sent:
                return Difference(where, recorded.get(key, ABSENT), sent.get(key, ABSENT))
            found = first_difference(recorded[key], sent[key], where)
            if found is not None:
                return found
        return None
    if isinstance(recorded, list) and isinstance(sent, list):
        for index in range(max(len(recorded), len(sent))):
            old = recorded[index] if index < len(recorded) else ABSENT
            new = sent[index] if index < len(sent) else ABSENT
            found = first_difference(old, new, f"{path}[{index}]")
            if found is not None:
                return found
        return None
    return None if type(recorded) is type(sent) and recorded == sent else Difference(path, recorded, sent)


def _shown(recorded: Any, sent: Any) -> tuple[str, str]:
    """Both values as JSON, cut to about :data:`_SHOWN` characters: two strings around where they start to
    differ, anything else from its start."""
    if isinstance(recorded, str) and isinstance(sent, str) and max(len(recorded), len(sent)) > _SHOWN:
        at = next((i for i, (a, b) in enumerate(zip(recorded, sent, strict=False)) if a != b), None)
        at = min(len(recorded), len(sent)) if at is None else at
        start = max(0, at - _SHOWN // 3)
        return _window(recorded, start), _window(sent, start)
    return _json(recorded), _json(sent)


def _window(text: str, start: int) -> str:
    piece = json.dumps(text[start : start + _SHOWN], ensure_ascii=False)
    before, after = "…" if start else "", "…" if start + _SHOWN < len(text) else ""
    return f"{before}{piece}{after}"


def _json(value: Any) -> str:
    if value is ABSENT:
        return "(absent)"
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"
