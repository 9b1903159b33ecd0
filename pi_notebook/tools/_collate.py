"""The order ``ls`` lists names in: Pi sorts ``a.toLowerCase().localeCompare(b.toLowerCase())``.

Node compares with ICU's root collation: whitespace, then punctuation and symbols in a fixed order, then
digits, then letters, comparing base letters first and accents only to break ties (``e.txt`` < ``é.txt`` <
``f.txt``); digits are not read as numbers (``10.txt`` < ``9.txt``). :func:`collation_key` reproduces that
exactly for printable ASCII (the table below was read from Node 22, and ``tests/fixtures/pi-file-tools`` checks
it) and approximately beyond: accents are stripped for the first comparison, other characters sort after
ASCII letters by code point. Names equal after lower-casing keep a fixed order (by code point), where Pi keeps
the directory's order.
"""

from __future__ import annotations

import unicodedata

__all__ = ["collation_key"]

_ASCII_ORDER = " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789abcdefghijklmnopqrstuvwxyz"
_RANK = {ch: rank for rank, ch in enumerate(_ASCII_ORDER)}
_AFTER_ASCII = len(_ASCII_ORDER)


def _rank(ch: str) -> int:
    rank = _RANK.get(ch)
    return rank if rank is not None else _AFTER_ASCII + ord(ch)


def _primary(text: str) -> tuple[int, ...]:
    base = "".join(ch for ch in unicodedata.normalize("NFD", text) if not unicodedata.combining(ch))
    return tuple(_rank(ch) for ch in base if ord(ch) >= 0x20 and ch != "\x7f")  # control characters are ignored


def collation_key(name: str) -> tuple[tuple[int, ...], str, str]:
    """Sort key for ``sorted(names, key=collation_key)``; see the module docstring."""
    lower = name.lower()
    return _primary(lower), unicodedata.normalize("NFD", lower), name
