"""Where cassettes meet the shared HTTP client: the active cassette of the current context, and the transport
that hands each request to it.

Every transport of the shared client (the default connection pool and any proxy mounted from the environment)
is wrapped by :class:`RoutingTransport`. With no cassette active in the calling context a request goes straight
to the wrapped transport (one context-variable lookup); with one, the cassette answers it (replays it, records
it through the wrapped transport, or refuses it). Providers never know: they have one code path.
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from typing import Protocol

import httpx

from .._errors import UserError

__all__ = [
    "CassetteError",
    "CassetteHandler",
    "RoutingTransport",
    "activate",
    "active_cassette",
    "deactivate",
    "route_through_cassettes",
]


class CassetteError(UserError):
    """A cassette cannot serve: its file is missing in replay-only mode or is not a cassette, the mode override
    is invalid (raised on entering it), or it has no recorded answer for a request (raised to the provider,
    which reports it as the stream's error message)."""


class CassetteHandler(Protocol):
    """What a cassette does for the transport (see :class:`pi_notebook.ai.Cassette`)."""

    @property
    def offline(self) -> bool:
        """True when every request is answered from the file (or refused): nothing can be recorded."""
        ...

    async def handle(self, request: httpx.Request, transport: httpx.AsyncBaseTransport) -> httpx.Response:
        """Answer ``request``: replayed, or sent through ``transport`` and recorded. Raises when it can do
        neither (an unmatched request in replay-only mode)."""
        ...


_active: ContextVar[CassetteHandler | None] = ContextVar("pi_notebook_cassette", default=None)


def active_cassette() -> CassetteHandler | None:
    """The cassette active in the current context (tasks inherit it from where they were created)."""
    return _active.get()


_tokens: ContextVar[tuple[Token[CassetteHandler | None], ...]] = ContextVar("pi_notebook_cassette_tokens", default=())


def activate(cassette: CassetteHandler) -> None:
    """Make ``cassette`` the active one in this context until the matching :func:`deactivate` (nesting: the
    innermost wins). The undo tokens live in the context too, so tasks entering cassettes concurrently never
    undo each other's."""
    _tokens.set((*_tokens.get(), _active.set(cassette)))


def deactivate() -> None:
    """Undo the last :func:`activate` of this context."""
    *rest, token = _tokens.get()
    _tokens.set(tuple(rest))
    _active.reset(token)


class RoutingTransport(httpx.AsyncBaseTransport):
    """Sends through ``inner``, unless a cassette is active in the calling context: then the cassette answers."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        cassette = _active.get()
        if cassette is None:
            return await self.inner.handle_async_request(request)
        return await cassette.handle(request, self.inner)

    async def aclose(self) -> None:
        await self.inner.aclose()


def route_through_cassettes(client: httpx.AsyncClient) -> httpx.AsyncClient:
    """Wrap every transport ``client`` may use in a :class:`RoutingTransport`; returns ``client``.

    The client is built as usual first, so environment proxies keep working; passing ``transport=`` to
    ``httpx.AsyncClient`` would turn them off. httpx has no public way to wrap the transports it chose, so this
    reads ``_transport`` and ``_mounts`` (stable since httpx 0.18); a test pins it, with a proxy set.
    """
    client._transport = RoutingTransport(client._transport)
    client._mounts = {
        pattern: None if transport is None else RoutingTransport(transport)
        for pattern, transport in client._mounts.items()
    }
    return client
