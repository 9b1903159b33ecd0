"""The cassette file: JSONL, one header line, then one line per HTTP exchange, in the order they happened.

A line is readable and diffable in a pull request::

    {"pi_notebook_cassette": 1}
    {"request": {"method": "POST", "url": "https://api.openai.com/v1/chat/completions",
                 "headers": {"authorization": "[redacted]", ...}, "json": {"model": "gpt-4o-mini", ...}},
     "response": {"status": 200, "at": 0.412, "headers": {"content-type": "text/event-stream", ...},
                  "body": [[0.413, "data: {...}\\n\\n"], [0.431, "data: {...}\\n\\n"], ...], "end": "complete"}}

(each exchange is one line in the file). ``at`` is seconds since the request was sent: for the response head,
and for each body chunk, as the client received it (the chunk boundaries are the ones the provider code saw).
A chunk is a string when it is UTF-8, else ``{"base64": "..."}``. The request body is ``json`` when it parses,
else ``content`` (same string/base64 rule).

``end`` says how the body ended: ``complete`` (the server ended it), ``closed`` (the client stopped reading
first, e.g. an abort), or ``error`` (a transport failure, in ``error``: ``{"type", "message", "at"}``, e.g. a
reset mid-stream). A request that got no response at all (connection refused) has ``"response": null`` and an
``error``.

A line can also be a note: something decided outside HTTP that a replay must decide the same way, in the order it
happened among the exchanges, e.g. the user's answer to a tool call that asked for approval::

    {"note": {"kind": "approval", "key": {"tool": "python", "call": "call_1"}, "value": {"action": "run"}}}
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from .._errors import PiNotebookError

__all__ = [
    "FORMAT_VERSION",
    "BodyEnd",
    "Chunk",
    "Exchange",
    "Failure",
    "FormatError",
    "Note",
    "RecordedResponse",
    "TapeRequest",
    "decode_bytes",
    "encode_bytes",
    "header_line",
    "parse_lines",
]

FORMAT_VERSION = 1
_HEADER_KEY = "pi_notebook_cassette"

BodyEnd: TypeAlias = Literal["complete", "closed", "error"]
JsonValue: TypeAlias = Any  # what json.loads returns


class FormatError(PiNotebookError, ValueError):
    """A line of a cassette file is not what this module writes."""


@dataclass(frozen=True, slots=True)
class Failure:
    """A transport failure: the exception's class name (an ``httpx`` one), its text, and when it happened."""

    type: str
    message: str
    at: float


@dataclass(frozen=True, slots=True)
class Chunk:
    at: float
    data: bytes


@dataclass(frozen=True, slots=True)
class TapeRequest:
    """A request as written: ``body`` is the parsed JSON when ``is_json``, else the raw bytes."""

    method: str
    url: str
    headers: dict[str, str]
    body: JsonValue
    is_json: bool


@dataclass(frozen=True, slots=True)
class RecordedResponse:
    status: int
    headers: list[tuple[str, str]]
    at: float
    chunks: tuple[Chunk, ...]
    end: BodyEnd
    error: Failure | None = None


@dataclass(frozen=True, slots=True)
class Exchange:
    """One request and what came back: a response, or (``response is None``) the failure in ``error``."""

    request: TapeRequest
    response: RecordedResponse | None
    error: Failure | None = None

    def to_line(self) -> str:
        return json.dumps(_exchange_json(self), ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class Note:
    """A decision made outside HTTP (``kind``, e.g. ``approval``) for ``key``, and what was decided (``value``)."""

    kind: str
    key: dict[str, Any]
    value: dict[str, Any]

    def to_line(self) -> str:
        note = {"kind": self.kind, "key": self.key, "value": self.value}
        return json.dumps({"note": note}, ensure_ascii=False, separators=(",", ":"))


def header_line() -> str:
    return json.dumps({_HEADER_KEY: FORMAT_VERSION})


def encode_bytes(data: bytes) -> JsonValue:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


def decode_bytes(value: JsonValue) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, dict) and isinstance(value.get("base64"), str):
        return base64.b64decode(value["base64"])
    raise FormatError(f"expected a string or {{'base64': ...}}, got {value!r:.80}")


def parse_lines(lines: Iterable[str]) -> Iterator[Exchange | Note]:
    """The exchanges and notes of a cassette's lines. Raises :class:`FormatError` naming the line at fault."""
    number = 0
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            if number == 1:
                _check_header(data)
                continue
            yield _note_from(data["note"]) if "note" in data else _exchange_from(data)
        except (ValueError, KeyError, TypeError) as exc:
            raise FormatError(f"line {number}: {exc}") from None


def _check_header(data: JsonValue) -> None:
    version = data.get(_HEADER_KEY) if isinstance(data, dict) else None
    if version != FORMAT_VERSION:
        raise FormatError(f"not a pi_notebook cassette (expected a first line {header_line()})")


# -------------------------------------------------------------------------------------------------- to JSON


def _failure_json(failure: Failure) -> dict[str, Any]:
    return {"type": failure.type, "message": failure.message, "at": _round(failure.at)}


def _round(seconds: float) -> float:
    return round(seconds, 4)


def _exchange_json(exchange: Exchange) -> dict[str, Any]:
    request = exchange.request
    request_json: dict[str, Any] = {"method": request.method, "url": request.url, "headers": request.headers}
    if request.is_json:
        request_json["json"] = request.body
    elif request.body:
        request_json["content"] = encode_bytes(request.body)
    line: dict[str, Any] = {"request": request_json, "response": None}
    response = exchange.response
    if response is not None:
        response_json: dict[str, Any] = {
            "status": response.status,
            "at": _round(response.at),
            "headers": _headers_json(response.headers),
            "body": [[_round(chunk.at), encode_bytes(chunk.data)] for chunk in response.chunks],
            "end": response.end,
        }
        if response.error is not None:
            response_json["error"] = _failure_json(response.error)
        line["response"] = response_json
    if exchange.error is not None:
        line["error"] = _failure_json(exchange.error)
    return line


def _headers_json(headers: list[tuple[str, str]]) -> dict[str, str] | list[list[str]]:
    """A dict when every name is unique (the usual case, easier to read), else the list of pairs."""
    names = [name for name, _ in headers]
    if len(set(names)) == len(names):
        return dict(headers)
    return [[name, value] for name, value in headers]


# ------------------------------------------------------------------------------------------------ from JSON


def _failure_from(data: JsonValue) -> Failure | None:
    if data is None:
        return None
    return Failure(str(data["type"]), str(data["message"]), float(data["at"]))


def _note_from(data: JsonValue) -> Note:
    kind, key, value = data["kind"], data["key"], data["value"]
    if not isinstance(kind, str) or not isinstance(key, dict) or not isinstance(value, dict):
        raise FormatError("a note needs a kind (a string), a key and a value (objects)")
    return Note(kind, key, value)


def _exchange_from(data: JsonValue) -> Exchange:
    raw = data["request"]
    is_json = "json" in raw
    body = raw["json"] if is_json else decode_bytes(raw.get("content", ""))
    request = TapeRequest(str(raw["method"]), str(raw["url"]), dict(raw.get("headers") or {}), body, is_json)
    response = None
    raw_response = data.get("response")
    if raw_response is not None:
        end = raw_response["end"]
        if end not in ("complete", "closed", "error"):
            raise FormatError(f"unknown body end {end!r}")
        headers = raw_response.get("headers") or {}
        pairs = list(headers.items()) if isinstance(headers, dict) else [(str(n), str(v)) for n, v in headers]
        response = RecordedResponse(
            status=int(raw_response["status"]),
            headers=pairs,
            at=float(raw_response.get("at", 0.0)),
            chunks=tuple(Chunk(float(at), decode_bytes(piece)) for at, piece in raw_response.get("body", [])),
            end=end,
            error=_failure_from(raw_response.get("error")),
        )
    error = _failure_from(data.get("error"))
    if response is None and error is None:
        raise FormatError("an exchange needs a response or an error")
    return Exchange(request, response, error)
