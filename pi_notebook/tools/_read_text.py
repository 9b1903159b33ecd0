"""The text half of ``read``: Pi's line selection and head truncation, streamed over the file.

Pi reads the whole file into one string, splits it on ``\\n``, slices ``[offset-1, offset-1+limit)`` and
truncates the slice to 2000 lines / 50 KB. :func:`select_lines` gives the same answer while holding at most
about ``max_bytes`` of the file: it decodes chunk by chunk (invalid UTF-8 becomes U+FFFD, as in Node), keeps
only the lines that can still be shown, and counts the rest. So a multi-gigabyte log costs one pass and a
little memory, and ``stop.check()`` runs between chunks.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from ..ai import PiNotebookError
from ._common import Stop
from ._truncate import HeadTruncation, keep_head, truncate_head, utf8_len

__all__ = ["Selection", "read_chunks", "select_lines"]

CHUNK = 256 * 1024


@dataclass(frozen=True, slots=True)
class Selection:
    total_file_lines: int
    """Lines in the file as ``text.split("\\n")`` counts them (a final newline adds an empty last line)."""
    start: int
    """0-based index of the first selected line."""
    user_limited_lines: int | None
    """``end - start`` when a limit was given (may be negative for a negative limit, as in Pi)."""
    first_line_bytes: int
    truncation: HeadTruncation


def read_chunks(file: BinaryIO, stop: Stop) -> Iterator[str]:
    """Decoded text of ``file`` chunk by chunk (UTF-8, U+FFFD for invalid bytes), checking ``stop`` between."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    while True:
        stop.check()
        data = file.read(CHUNK)
        if not data:
            break
        text = decoder.decode(data)
        if text:
            yield text
    tail = decoder.decode(b"", final=True)
    if tail:
        yield tail


def _lines(chunks: Iterable[str], keep: int) -> Iterator[tuple[str | None, int]]:
    """``"".join(chunks).split("\n")`` as ``(line, UTF-8 size)``, one line at a time; a line over ``keep`` bytes
    comes as ``(None, size)``, so one huge line (minified JSON, ``/dev/zero``) never sits in memory."""
    pending: list[str] | None = []
    size = 0
    for chunk in chunks:
        parts = chunk.split("\n")
        for index, part in enumerate(parts):
            if index:
                yield ("".join(pending) if pending is not None else None), size
                pending, size = [], 0
            size += utf8_len(part)
            if pending is not None:
                pending.append(part)
                if size > keep:
                    pending = None
    yield ("".join(pending) if pending is not None else None), size


class _Window:
    """The selected lines that may still be shown, plus running counts of all of them.

    Lines are stored until one would pass a limit (more than ``max_lines + 1`` lines, or ``max_bytes``): the
    output can only hold stored lines. If nothing was left unstored, the stored lines are the whole selection
    and Pi's own truncation runs on them; otherwise the counts and the first unstored line's size settle it.
    """

    def __init__(self, max_lines: int, max_bytes: int) -> None:
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self.kept: list[str] = []
        self.kept_bytes = 0
        self.next_size: int | None = None  # size of the first line not stored
        self.next_index = 0  # and its index in the selection
        self.count = 0
        self.bytes = 0
        self.last_empty = False
        self.first_line_bytes = 0

    def add(self, line: str | None, size: int) -> None:
        """Count a selected line; ``line`` is ``None`` when it is over ``max_bytes`` (it cannot be shown)."""
        if self.count == 0:
            self.first_line_bytes = size
        self.count += 1
        self.bytes += size
        self.last_empty = size == 0
        if self.next_size is not None:
            return
        cost = size + (1 if self.kept else 0)
        if line is None or len(self.kept) > self.max_lines or self.kept_bytes + cost > self.max_bytes:
            self.next_size = size
            self.next_index = self.count - 1
            return
        self.kept.append(line)
        self.kept_bytes += cost

    def truncation(self) -> HeadTruncation:
        if self.next_size is None:
            return truncate_head("\n".join(self.kept), self.max_lines, self.max_bytes)
        # Some line was not stored, so the selection is over a limit: truncated, and no trailing empty line
        # of the selection is among the stored ones. Pi does not count that line (a final newline ends the
        # line before it), so when it is the unstored one Pi's loop simply runs out of lines.
        popped = self.count > 1 and self.last_empty
        lines = self.count - (1 if popped else 0)
        total_bytes = self.bytes + max(self.count - 1, 0)
        if self.first_line_bytes > self.max_bytes:
            return HeadTruncation("", True, "bytes", lines, total_bytes, 0, 0, True, self.max_lines, self.max_bytes)
        kept, truncated_by = keep_head(self.kept, self.max_lines, self.max_bytes)
        text = "\n".join(kept)
        if len(kept) == len(self.kept) and len(kept) < self.max_lines and not (popped and self.next_index == lines):
            truncated_by = "bytes"  # Pi's loop goes on to the unstored line, which does not fit
        return HeadTruncation(
            text, True, truncated_by, lines, total_bytes, len(kept), utf8_len(text), False, self.max_lines,
            self.max_bytes,
        )  # fmt: skip


class OffsetBeyondEnd(PiNotebookError):
    def __init__(self, total_lines: int) -> None:
        super().__init__(total_lines)
        self.total_lines = total_lines


def select_lines(
    chunks: Iterable[str], offset: int | None, limit: int | None, max_lines: int, max_bytes: int
) -> Selection:
    """Pi's selection of ``[offset-1, offset-1+limit)`` and its head truncation; see the module docstring.

    Raises :class:`OffsetBeyondEnd` when the start is past the last line.
    """
    start = max(0, offset - 1) if offset else 0
    window = _Window(max_lines, max_bytes)
    end: int | None = None if limit is None else start + limit
    total = 0
    for index, (line, size) in enumerate(_lines(chunks, max_bytes)):
        total = index + 1
        if index >= start and (end is None or index < end):
            window.add(line, size)
    if start >= total:
        raise OffsetBeyondEnd(total)
    user_limited = None if end is None else min(end, total) - start
    return Selection(total, start, user_limited, window.first_line_bytes, window.truncation())
