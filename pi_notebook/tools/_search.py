"""Searching one file line by line, as ripgrep does for ``grep``.

The file is read in blocks of whole lines (256 KB or more), decoded as UTF-8 (invalid bytes become U+FFFD)
and searched with the ``regex`` module, which releases the GIL while it matches, so the notebook's event loop
keeps running. A block match is confirmed on its own line, so a match never spans lines (ripgrep is
line-oriented: ``a\\sb`` does not match ``a`` at the end of one line and ``b`` at the start of the next).

Files are sniffed like ripgrep's defaults: a UTF-8 BOM is skipped, a UTF-16 BOM makes the file decode as
UTF-16, and a NUL byte marks a binary file: the search of a file met while walking stops at the block holding
it (matches before that block are kept); a file named explicitly is searched anyway. ``stop.check()`` runs, and
the NUL is looked for, on every read of a block, so a file without newlines (a disk image, ``/proc/self/pagemap``)
is skipped or stopped at once, and is read in one pass, not re-joined per block; a line longer than
:data:`MAX_LINE` is searched in pieces. A single search that runs longer than ``timeout_s`` (a pathological
pattern) raises ``TimeoutError``.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

import regex

from ._common import Stop, open_to_read

__all__ = ["LineMatch", "file_lines", "search_file"]

BLOCK = 256 * 1024
MAX_LINE = 16 * 1024 * 1024
"""A line longer than this (bytes without a newline: a disk image, a sparse file) is searched in pieces of about
this size, each ending the line for the search (a match across a cut is not found; a line matched in two pieces
is reported once)."""
_UTF16 = (b"\xff\xfe", b"\xfe\xff")
_UTF8_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class LineMatch:
    line_number: int
    text: str
    """The line without its ``\\n`` (a ``\\r`` before it is kept)."""


def _raw_blocks(file: BinaryIO, head: bytes, stop: Stop, binary_quit: bool) -> Iterator[bytes]:
    """The file's bytes in blocks of whole lines (a line longer than :data:`MAX_LINE` in pieces of about that
    size). ``stop`` is checked, and with ``binary_quit`` a NUL byte looked for, on every read: a file without a
    newline costs one pass, and neither stopping nor skipping a binary file waits for the end of a line."""
    pieces: list[bytes] = []
    size = 0
    data = head
    while data:
        stop.check()
        cut = data.rfind(b"\n")
        nul = data.find(b"\x00") if binary_quit else -1
        if nul != -1:  # binary: the lines before the block holding the NUL are searched, no more
            if -1 < cut < nul:
                yield b"".join([*pieces, data[: cut + 1]])
            return
        if cut == -1:
            pieces.append(data)
            size += len(data)
            if size >= MAX_LINE:
                yield b"".join(pieces)
                pieces, size = [], 0
        else:
            yield b"".join([*pieces, data[: cut + 1]])
            rest = data[cut + 1 :]
            pieces, size = ([rest], len(rest)) if rest else ([], 0)
        data = file.read(BLOCK)
    if pieces:
        yield b"".join(pieces)


def _utf16_blocks(file: BinaryIO, head: bytes, stop: Stop) -> Iterator[str]:
    """A UTF-16 file (it had a BOM) decoded block by block, cut after the last newline of each block."""
    decoder = codecs.getincrementaldecoder("utf-16")("replace")
    pending = ""
    data = head
    while data:
        stop.check()
        text = pending + decoder.decode(data)
        cut = text.rfind("\n")
        if cut == -1 and len(text) < MAX_LINE:
            pending = text
        else:
            cut = len(text) - 1 if cut == -1 else cut
            yield text[: cut + 1]
            pending = text[cut + 1 :]
        data = file.read(BLOCK)
    pending += decoder.decode(b"", final=True)
    if pending:
        yield pending


def _text_blocks(file: BinaryIO, stop: Stop, binary_quit: bool) -> Iterator[str]:
    head = file.read(BLOCK)
    if head.startswith(_UTF16):
        yield from _utf16_blocks(file, head, stop)
        return
    if head.startswith(_UTF8_BOM):
        head = head[len(_UTF8_BOM) :]
    for raw in _raw_blocks(file, head, stop, binary_quit):
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
            matches = _block_matches(block, pattern, first_line, limit - len(found), timeout_s)
            if matches and found and matches[0].line_number == found[-1].line_number:
                matches = matches[1:]  # a line longer than MAX_LINE matched in two of its pieces
            found.extend(matches)
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
