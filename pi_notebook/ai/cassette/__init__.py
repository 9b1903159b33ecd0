"""Cassettes: record the providers' HTTP exchanges once, replay them later with no key and no network (see
``_cassette`` for the modes, matching and redaction).

- ``_cassette``: :class:`Cassette`, the object a user holds (``with Cassette(path):``);
- ``_format``: the JSONL file (one exchange per line, chunks with their timing);
- ``_match``: which recorded exchange answers a request, and what is redacted before anything is written;
- ``_route``: the active cassette of the current task (a context variable) that the shared HTTP client consults;
- ``_transport``: recording and replaying at the HTTP transport, below the providers.
"""

from ._cassette import (
    CASSETTE_MODE_VARIABLE,
    DEFAULT_IGNORED_FIELDS,
    Cassette,
    CassetteError,
    CassetteMode,
    CassetteTiming,
)

__all__ = [
    "CASSETTE_MODE_VARIABLE",
    "DEFAULT_IGNORED_FIELDS",
    "Cassette",
    "CassetteError",
    "CassetteMode",
    "CassetteTiming",
]
