"""Texts for responses that are not the event stream a provider asked for.

Real servers answer a streaming request with other things: a redirect (a base URL missing its path, a login
wall), an HTML page (a web UI or a proxy), a whole JSON completion or a JSON error with status ``200`` (LiteLLM's
mock models on ``/v1/messages``), or a ``200`` stream that ends before its first event (llama-cpp-python's server
when the chat template fails after the headers went out). None of these is a network failure, and sending the
same request again gives the same answer, so every text here contains :data:`NOT_AN_EVENT_STREAM`, which the
retry classifier (``pi_notebook.ai.retry``) treats as not retryable. JSON bodies are read by the providers
themselves (an error is reported as the error it is, a completion as the message it is).
"""

from __future__ import annotations

import html
import re

import httpx

__all__ = [
    "NOT_AN_EVENT_STREAM",
    "content_type",
    "describe_empty_stream",
    "describe_redirect",
    "describe_unexpected_body",
    "is_event_stream",
    "is_json",
    "summarise_body",
]

NOT_AN_EVENT_STREAM = "instead of an event stream"
_SUMMARY_CHARS = 200
_TITLE = re.compile(r"<title[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)
_TAGS = re.compile(r"<script\b.*?</script\s*>|<style\b.*?</style\s*>|<[^>]+>", re.IGNORECASE | re.DOTALL)
_SPACE = re.compile(r"\s+")


def content_type(response: httpx.Response) -> str:
    """The media type, lower-case, without parameters (``""`` when the header is missing)."""
    header: str = response.headers.get("content-type", "")
    return header.partition(";")[0].strip().lower()


def is_event_stream(response: httpx.Response) -> bool:
    """``text/event-stream``, or no content type at all (some servers omit it on streams)."""
    return content_type(response) in ("", "text/event-stream")


def is_json(response: httpx.Response) -> bool:
    kind = content_type(response)
    return kind == "application/json" or kind.endswith("+json")


def summarise_body(kind: str, body: str) -> str:
    """A one-line excerpt of ``body``: an HTML page's title (else its text without tags), other text with its
    whitespace collapsed; at most 200 characters."""
    text = body
    if "html" in kind or body.lstrip()[:15].lower().startswith(("<!doctype html", "<html")):
        title = _TITLE.search(body)
        text = title.group(1) if title else _TAGS.sub(" ", body)
        text = html.unescape(text)
    text = _SPACE.sub(" ", text).strip()
    return text if len(text) <= _SUMMARY_CHARS else text[: _SUMMARY_CHARS - 1] + "…"


def describe_redirect(response: httpx.Response) -> str:
    """``302 redirect to http://host/login instead of an event stream: …``. Redirects are not followed: a POST
    with a key must not be sent on to wherever a server points."""
    location = response.headers.get("location") or "(no location)"
    return (
        f"{response.status_code} redirect to {location} {NOT_AN_EVENT_STREAM}: redirects are not followed, "
        "check the base URL"
    )


def describe_unexpected_body(response: httpx.Response, body: str) -> str:
    """``200 text/html response (Sign in) instead of an event stream: check the base URL``."""
    kind = content_type(response) or "untyped"
    summary = summarise_body(kind, body)
    shown = f" ({summary})" if summary else " with an empty body"
    return f"{response.status_code} {kind} response{shown} {NOT_AN_EVENT_STREAM}: check the base URL"


def describe_empty_stream(response: httpx.Response) -> str:
    """A stream whose body ended before its first event: the server failed after sending the headers."""
    return (
        f"{response.status_code} response that ended before its first event ({NOT_AN_EVENT_STREAM}): "
        "the server failed after answering, see its log"
    )
