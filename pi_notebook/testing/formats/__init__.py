"""The fault server's wire formats, one module each: a new one is its module (a :class:`WireFormat` named
``FORMAT``) and one row in :data:`FORMATS`. A request is routed by its path (:func:`route`); a reply is written in
the format it names (:func:`wire_format`: an unknown name is an error, never another format's events)."""

from __future__ import annotations

from . import anthropic_format, google_format, openai_format, responses_format
from ._wire import ErrorSpec, Piece, WireFormat, WireReply

__all__ = ["FORMATS", "ErrorSpec", "Piece", "WireFormat", "WireReply", "route", "wire_format"]

FORMATS: tuple[WireFormat, ...] = (
    openai_format.FORMAT,
    anthropic_format.FORMAT,
    responses_format.FORMAT,
    google_format.FORMAT,
)
"""Every format the fault server speaks, in the order tests parametrize over them."""

_BY_NAME = {wire.name: wire for wire in FORMATS}


def wire_format(name: str) -> WireFormat:
    """The format named ``name`` (``openai``, ``anthropic``, ...). Raises ``ValueError`` naming the known ones."""
    found = _BY_NAME.get(name)
    if found is None:
        raise ValueError(f"fault server: no wire format {name!r} (known: {', '.join(_BY_NAME)})")
    return found


def route(path: str) -> WireFormat | None:
    """The format whose requests end as ``path`` does; ``None`` for no route."""
    return next((wire for wire in FORMATS if path.endswith(wire.routes)), None)
