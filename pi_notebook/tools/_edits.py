"""Applying ``edit``'s replacements, with Pi's matching rules and texts (``edit-diff.ts``).

Every ``oldText`` is matched against the original (LF-normalised) content, never against the result of an
earlier edit. An exact match is tried first. If any edit only matches after *fuzzy normalisation* (NFKC,
trailing whitespace stripped per line, typographic quotes, dashes and spaces made ASCII), all edits are
matched in the normalised content; only the lines those edits touch are rewritten from it, every other line
keeps its original bytes. Each ``oldText`` must be non-empty, found, unique (counted in normalised form) and
not overlap another; the replacements together must change something.
"""

from __future__ import annotations

import functools
import itertools
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ._common import FileToolError

__all__ = [
    "Edit",
    "apply_edits",
    "detect_line_ending",
    "normalize_for_fuzzy_match",
    "normalize_to_lf",
    "restore_line_endings",
    "strip_bom",
]

# JavaScript's String.prototype.trimEnd whitespace (WhiteSpace and LineTerminator code points), at the end of
# each line: the same as trimming every line of text.split("\n").
_TRAILING_JS_SPACE = re.compile("[\t\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]+(?=\n|\\Z)")
# Typographic quotes, dashes and spaces -> ASCII.
_ASCII = str.maketrans(
    dict.fromkeys("\u2018\u2019\u201a\u201b", "'")
    | dict.fromkeys("\u201c\u201d\u201e\u201f", '"')
    | dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-")
    | dict.fromkeys("\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000", " ")
)
_LINES_WITH_ENDINGS = re.compile(r"[^\n]*\n|[^\n]+")
_EXACT = "The old text must match exactly including all whitespace and newlines"
_MORE_CONTEXT = "Please provide more context to make it unique."
_SPECIAL_CHARACTERS = "This might indicate an issue with special characters or the text not existing as expected."


@dataclass(frozen=True, slots=True)
class Edit:
    old_text: str
    new_text: str


@dataclass(frozen=True, slots=True)
class _Match:
    edit_index: int
    index: int
    length: int
    new_text: str


def detect_line_ending(content: str) -> str:
    crlf = content.find("\r\n")
    lf = content.find("\n")
    if lf == -1 or crlf == -1:
        return "\n"
    return "\r\n" if crlf < lf else "\n"


def normalize_to_lf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def restore_line_endings(text: str, ending: str) -> str:
    return text.replace("\n", "\r\n") if ending == "\r\n" else text


def strip_bom(content: str) -> tuple[str, str]:
    """``(bom, text)``: the U+FEFF the file starts with, if any, and the rest."""
    return ("\ufeff", content[1:]) if content.startswith("\ufeff") else ("", content)


def _strip_trailing_spaces(text: str) -> str:
    if text.isascii() and not any(f"{ch}\n" in text for ch in " \t\v\f\r") and text[-1:] not in " \t\v\f\r":
        return text  # fast path: nothing to strip (the common case, and the regex costs ~30 ns per character)
    return _TRAILING_JS_SPACE.sub("", text)


def normalize_for_fuzzy_match(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    text = _strip_trailing_spaces(text)
    return text if text.isascii() else text.translate(_ASCII)


def _find(content: str, old_text: str, fuzzy_content: Callable[[], str]) -> tuple[int, int, bool]:
    """``(index, length, fuzzy)`` of ``old_text`` in ``content``: exact first, then in normalised space."""
    index = content.find(old_text)
    if index != -1:
        return index, len(old_text), False
    fuzzy_old = normalize_for_fuzzy_match(old_text)
    index = fuzzy_content().find(fuzzy_old)
    return (index, len(fuzzy_old), True) if index != -1 else (-1, 0, False)


def _replace(content: str, matches: Sequence[_Match], offset: int = 0) -> str:
    for match in reversed(matches):
        start = match.index - offset
        content = content[:start] + match.new_text + content[start + match.length :]
    return content


def _spans(content: str) -> list[tuple[int, int]]:
    spans = []
    offset = 0
    for line in _LINES_WITH_ENDINGS.findall(content):
        spans.append((offset, offset + len(line)))
        offset += len(line)
    return spans


def _line_range(spans: list[tuple[int, int]], match: _Match) -> tuple[int, int]:
    start = next((i for i, (lo, hi) in enumerate(spans) if lo <= match.index < hi), -1)
    if start == -1:
        raise FileToolError("Replacement range is outside the base content.")
    end = start
    while end < len(spans) and spans[end][1] < match.index + match.length:
        end += 1
    if end >= len(spans):
        raise FileToolError("Replacement range is outside the base content.")
    return start, end + 1


def _replace_preserving_lines(original: str, base: str, matches: Sequence[_Match]) -> str:
    """Rewrite only the lines the matches touch from ``base`` (normalised); copy the others from ``original``."""
    original_lines = _LINES_WITH_ENDINGS.findall(original)
    spans = _spans(base)
    if len(original_lines) != len(spans):
        raise FileToolError("Cannot preserve unchanged lines because the base content has a different line count.")
    groups: list[tuple[int, int, list[_Match]]] = []
    for match in sorted(matches, key=lambda m: m.index):
        start, end = _line_range(spans, match)
        if groups and start < groups[-1][1]:
            first, last, members = groups[-1]
            groups[-1] = (first, max(last, end), [*members, match])
        else:
            groups.append((start, end, [match]))
    out: list[str] = []
    line = 0
    for start, end, members in groups:
        out.extend(original_lines[line:start])
        lo, hi = spans[start][0], spans[end - 1][1]
        out.append(_replace(base[lo:hi], members, lo))
        line = end
    out.extend(original_lines[line:])
    return "".join(out)


def _error(total: int, single: str, multi: str) -> FileToolError:
    return FileToolError(single if total == 1 else multi)


def apply_edits(content: str, edits: Sequence[Edit], path: str) -> tuple[str, str]:
    """``(base, new)``: ``content`` (LF-normalised) and the result of all ``edits``; raises Pi's errors."""
    normalized = [Edit(normalize_to_lf(e.old_text), normalize_to_lf(e.new_text)) for e in edits]
    total = len(normalized)
    for i, edit in enumerate(normalized):
        if not edit.old_text:
            raise _error(
                total, f"oldText must not be empty in {path}.", f"edits[{i}].oldText must not be empty in {path}."
            )
    normalized_content = functools.cache(lambda: normalize_for_fuzzy_match(content))
    fuzzy = any(_find(content, edit.old_text, normalized_content)[2] for edit in normalized)
    base = normalized_content() if fuzzy else content
    normalized_base = functools.cache(lambda: normalize_for_fuzzy_match(base))
    matches: list[_Match] = []
    for i, edit in enumerate(normalized):
        index, length, _ = _find(base, edit.old_text, normalized_base)
        if index == -1:
            raise _error(
                total,
                f"Could not find the exact text in {path}. {_EXACT}.",
                f"Could not find edits[{i}] in {path}. The oldText must match exactly including all whitespace and "
                "newlines.",
            )
        occurrences = normalized_base().count(normalize_for_fuzzy_match(edit.old_text))
        if occurrences > 1:
            raise _error(
                total,
                f"Found {occurrences} occurrences of the text in {path}. The text must be unique. {_MORE_CONTEXT}",
                f"Found {occurrences} occurrences of edits[{i}] in {path}. Each oldText must be unique. "
                f"{_MORE_CONTEXT}",
            )
        matches.append(_Match(i, index, length, edit.new_text))
    matches.sort(key=lambda m: m.index)
    for previous, current in itertools.pairwise(matches):
        if previous.index + previous.length > current.index:
            raise FileToolError(
                f"edits[{previous.edit_index}] and edits[{current.edit_index}] overlap in {path}. "
                "Merge them into one edit or target disjoint regions."
            )
    new = _replace_preserving_lines(content, base, matches) if fuzzy else _replace(base, matches)
    if new == content:
        raise _error(
            total,
            f"No changes made to {path}. The replacement produced identical content. {_SPECIAL_CHARACTERS}",
            f"No changes made to {path}. The replacements produced identical content.",
        )
    return content, new
