"""Searching one file line by line, as ripgrep does for ``grep``.

The file is read in blocks of whole lines (256 KB or more), decoded as UTF-8 (invalid bytes become U+FFFD)
and searched with the ``regex`` module, which releases the GIL while it matches, so the notebook's event loop
keeps running. A block match is confirmed on its own line, so a match never spans lines (ripgrep is
line-oriented: ``a\\sb`` does not match ``a`` at the end of one line and ``b`` at the start of the next).

Files are sniffed like ripgrep's defaults: a UTF-8 BOM is skipped, a UTF-16 BOM makes the file decode as
UTF-16, and a NUL byte marks a binary file: the search of a file met while walking stops at the block holding
it (matches before that block are kept); a file named explicitly is searched anyway. ``stop.check()`` runs
between blocks. A single search that runs longer than ``timeout_s`` (a pathological pattern) raises
``TimeoutError``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

import regex

from ._common import Stop, open_to_read

__all__ = ["LineMatch", "file_lines", "search_file"]

BLOCK = 256 * 1024
_UTF16 = (b"\xff\xfe", b"\xfe\xff")
_UTF8_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class LineMatch:
    line_number: int
    text: str
    """The line without its ``\\n`` (a ``\\r`` before it is kept)."""


def _raw_blocks(file: BinaryIO, head: bytes) -> Iterator[bytes]:
    pending = b""
    data = head
    while data:
        buffer = pending + data
        cut = buffer.rfind(b"\n")
        if cut == -1:
            pending = buffer
        else:
            yield buffer[: cut + 1]
            pending = buffer[cut + 1 :]
        data = file.read(BLOCK)
    if pending:
        yield pending


def _text_blocks(file: BinaryIO, stop: Stop, binary_quit: bool) -> Iterator[str]:
    head = file.read(BLOCK)
    if head.startswith(_UTF16):
        yield (head + file.read()).decode("utf-16", "replace")
        return
    if head.startswith(_UTF8_BOM):
        head = head[len(_UTF8_BOM) :]
    for raw in _raw_blocks(file, head):
        stop.check()
        if binary_quit and b"\x00" in raw:
            return
        yield raw.decode("utf-8", "replace")


def _block_matches(
    block: str, pattern: regex.Pattern[str], first_line: int, limit: int, timeout_s: float
) -> list[LineMatch]:
    """Matching lines of ``block`` (numbered from ``first_line``), at most ``limit``."""
    found: list[LineMatch] = []
    size = len(block)
    line = first_line
    counted = 0
    pos = 0
    while pos <= size and len(found) < limit:
        match = pattern.search(block, pos, timeout=timeout_s)
        if match is None:
            break
        start = match.start()
        if start == size and (size == 0 or block.endswith("\n")):
            break  # the end of the text after its last newline is not a line
        line_start = block.rfind("\n", 0, start) + 1
        line_end = block.find("\n", start)
        if line_end == -1:
            line_end = size
        line += block.count("\n", counted, line_start)
        counted = line_start
        if pattern.search(block, line_start, line_end, timeout=timeout_s) is not None:
            found.append(LineMatch(line, block[line_start:line_end]))
        pos = line_end + 1
    return found


def search_file(
    path: str, pattern: regex.Pattern[str], stop: Stop, *, limit: int, binary_quit: bool, timeout_s: float
) -> list[LineMatch]:
    """Up to ``limit`` matching lines of the file at ``path``; see the module docstring. Raises ``OSError``."""
    found: list[LineMatch] = []
    first_line = 1
    previous = ""
    with open_to_read(path, path, "search") as file:
        for block in _text_blocks(file, stop, binary_quit):
            first_line += previous.count("\n")  # counted only when another block follows
            found.extend(_block_matches(block, pattern, first_line, limit - len(found), timeout_s))
            if len(found) >= limit:
                break
            previous = block
    return found


def file_lines(path: str) -> list[str]:
    """The file's lines as Pi's context view reads them: decoded, ``\\r\\n`` and ``\\r`` made ``\\n``, split."""
    with open_to_read(path, path, "search") as file:
        data = file.read()
    if data.startswith(_UTF16):
        text = data.decode("utf-16", "replace")
    else:
        text = data.removeprefix(_UTF8_BOM).decode("utf-8", "replace")
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
