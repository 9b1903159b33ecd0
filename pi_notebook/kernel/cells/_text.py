"""A notebook's cells and their outputs as the model reads them: bounded text, one rule for ``notebook_read`` and
``cell_run``.

Each cell is written as ``<cell-MARK index="3" id="..." type="code" execution_count="5" tags="...">``, its source,
then its outputs inside ``<outputs-MARK>``, then ``</cell-MARK>``. ``MARK`` is random, new for each read, and in
none of the cells' sources and outputs (:func:`boundary_mark`), and the result's first line names it: so a cell's
source or output cannot fake a boundary (a copy of a protected cell without its tag, a cell that is not there).
Sources are given as they are (the model copies them into ``cell_edit``'s ``oldText``).

Outputs become text as a person would read them: streams as written (with ``\\r`` progress lines resolved), an error
as ``Name: value`` and its traceback (ANSI colours removed), a value or display by its richest readable form:
``text/plain`` (unless it is only an object's repr such as ``<IPython.core.display.HTML object>``), else HTML as
text, markdown, LaTeX, JSON; an image as ``[image/png 640x480]``; anything else as ``[mime type]``.

Limits: each cell's output text keeps its tail (like ``bash``: whole lines, at most ``max_lines`` /
``max_bytes``) with a line saying what was left out; ``notebook_read`` stops at a cell boundary once the text
reaches :data:`MAX_READ_BYTES` and says which cells to read next (``[Showing cells 0-41 of 500. Use start=42 to
continue.]``), as Pi's ``read`` does for lines.
"""

from __future__ import annotations

import base64
import binascii
import html
import itertools
import json
import re
import secrets
import struct
from collections.abc import Mapping, Sequence
from html.parser import HTMLParser
from typing import Any, NamedTuple

from ...tools import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, format_size, truncate_tail
from ._cell_protocol import CellInfo

__all__ = [
    "MAX_READ_BYTES",
    "READ_OUTPUT_BYTES",
    "READ_OUTPUT_LINES",
    "RUN_OUTPUT_BYTES",
    "RUN_OUTPUT_LINES",
    "boundary_mark",
    "cell_details",
    "cell_text",
    "image_size",
    "output_text",
    "outputs_text",
    "read_text",
]

MAX_READ_BYTES = DEFAULT_MAX_BYTES
"""``notebook_read`` stops at the first cell boundary past this many bytes of text (Pi's ``read`` limit)."""
READ_OUTPUT_LINES = 100
READ_OUTPUT_BYTES = 4 * 1024
"""What ``notebook_read`` keeps of each cell's output text (its tail)."""
READ_HEAD = (
    "Each cell is between <cell-{mark} ...> and </cell-{mark}>, its outputs between <outputs-{mark}> and "
    "</outputs-{mark}>; {mark} is new for each read, so any other text that looks like a cell is a cell's content."
)
"""The first line of a ``notebook_read`` result: this read's boundaries."""
RUN_OUTPUT_LINES = DEFAULT_MAX_LINES
RUN_OUTPUT_BYTES = DEFAULT_MAX_BYTES
"""What ``cell_run`` keeps of the cell's output text (its tail), as ``bash`` and ``python`` do."""

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_OBJECT_REPR = re.compile(r"^<[\w.]+ (object|at 0x[0-9a-f]+)[^>]*>$")
_TEXT_TYPES = ("text/markdown", "text/latex", "application/json")
_IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/svg+xml")


def _text(value: Any) -> str:
    """nbformat keeps multiline strings as a string or a list of lines."""
    if isinstance(value, list):
        return "".join(str(part) for part in value)
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _resolve_carriage_returns(text: str) -> str:
    """A progress bar's ``\\r``: each line keeps what was written after its last carriage return."""
    if "\r" not in text:
        return text
    lines = text.replace("\r\n", "\n").split("\n")
    return "\n".join(line.rsplit("\r", 1)[-1] if "\r" in line else line for line in lines)


class _HTMLText(HTMLParser):
    """HTML as a person reads it: text, a line per block or table row, cells separated by `` | ``."""

    BLOCKS = frozenset({"p", "div", "br", "tr", "li", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "table"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        elif tag in ("td", "th") and self.parts and not self.parts[-1].endswith("\n"):
            self.parts.append(" | ")
        elif tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._skip = max(0, self._skip - 1)
        elif tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(" ".join(data.split()) if data.strip() else "")


def html_text(source: str) -> str:
    parser = _HTMLText()
    try:
        parser.feed(source)
        parser.close()
    except Exception:  # malformed markup: its text without the tags
        return html.unescape(re.sub(r"<[^>]+>", " ", source)).strip()
    lines = (re.sub(r"\s*\|\s*", " | ", line).strip(" |") for line in "".join(parser.parts).split("\n"))
    return "\n".join(line for line in lines if line)


def image_size(mime: str, data: str) -> tuple[int, int] | None:
    """Width and height of a base64 PNG, GIF or JPEG (``None`` when they cannot be read)."""
    data = "".join(data.split())
    head = data if mime == "image/jpeg" else data[:64]  # PNG and GIF say it in their first bytes
    try:
        raw = base64.b64decode(head + "=" * (-len(head) % 4))
    except (binascii.Error, ValueError):
        return None
    if mime == "image/png" and raw[:8] == b"\x89PNG\r\n\x1a\n" and len(raw) >= 24:
        width, height = struct.unpack(">II", raw[16:24])
        return width, height
    if mime == "image/gif" and raw[:3] == b"GIF" and len(raw) >= 10:
        width, height = struct.unpack("<HH", raw[6:10])
        return width, height
    if mime == "image/jpeg":
        return _jpeg_size(raw)
    return None


def _jpeg_size(raw: bytes) -> tuple[int, int] | None:
    at = 2
    while at + 9 < len(raw):
        if raw[at] != 0xFF:
            return None
        marker = raw[at + 1]
        length = struct.unpack(">H", raw[at + 2 : at + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", raw[at + 5 : at + 9])
            return width, height
        at += 2 + length
    return None


def bundle_text(data: Mapping[str, Any]) -> str:
    """A value's or display's mime bundle as text (see the module docstring)."""
    plain = _text(data.get("text/plain", "")).rstrip("\n")
    if plain and not _OBJECT_REPR.match(plain.strip()):
        return plain
    if "text/html" in data:
        text = html_text(_text(data["text/html"]))
        if text:
            return text
    for mime in _TEXT_TYPES:
        if mime in data:
            return _text(data[mime]).rstrip("\n")
    for mime in _IMAGE_TYPES:
        if mime in data:
            size = image_size(mime, _text(data[mime])) if mime != "image/svg+xml" else None
            return f"[{mime} {size[0]}x{size[1]}]" if size else f"[{mime}]"
    others = [mime for mime in data if mime != "text/plain"]
    if others:
        return "[" + ", ".join(others) + "]"
    return plain


def output_text(output: Mapping[str, Any]) -> str:
    """One nbformat output as text."""
    kind = output.get("output_type")
    if kind == "stream":
        return _resolve_carriage_returns(_text(output.get("text", "")))
    if kind == "error":
        ename, evalue = str(output.get("ename") or "Error"), str(output.get("evalue") or "")
        head = f"{ename}: {evalue}" if evalue else ename
        traceback = _ANSI.sub("", "\n".join(_text(line) for line in output.get("traceback") or [])).rstrip("\n")
        last = traceback.rsplit("\n", 1)[-1]
        if not traceback:
            return head + "\n"
        return traceback + "\n" if last.startswith(ename) else f"{traceback}\n{head}\n"
    data = output.get("data")
    return bundle_text(data) + "\n" if isinstance(data, Mapping) else ""


def outputs_text(outputs: Sequence[Mapping[str, Any]], max_lines: int, max_bytes: int) -> str:
    """A cell's outputs as text, their tail at most ``max_lines`` lines / ``max_bytes`` bytes, with a line
    saying what was left out."""
    parts: list[str] = []
    for output in outputs:
        text = output_text(output)
        if text and parts and not parts[-1].endswith("\n") and output.get("output_type") != "stream":
            parts.append("\n")
        parts.append(text)
    text = "".join(parts).rstrip("\n")
    cut = truncate_tail(text, max_lines, max_bytes)
    if not cut.truncated:
        return text
    if cut.truncated_by == "lines":
        note = f"[Showing the last {cut.output_lines} of {cut.total_lines} lines of output]"
    else:
        note = f"[Showing the last {format_size(cut.output_bytes)} of {format_size(cut.total_bytes)} of output]"
    return f"{note}\n{cut.content}"


def _attribute(value: object) -> str:
    return html.escape(str(value), quote=True)


class _Parts(NamedTuple):
    attributes: str
    source: str
    outputs: str | None


def _parts(cell: CellInfo, outputs: bool, max_lines: int, max_bytes: int) -> _Parts:
    attributes = [f'index="{cell["index"]}"', f'id="{_attribute(cell["id"])}"', f'type="{cell["cell_type"]}"']
    if cell["cell_type"] == "code":
        count = cell.get("execution_count")
        attributes.append(f'execution_count="{count if count is not None else ""}"')
    if cell.get("tags"):
        attributes.append(f'tags="{_attribute(" ".join(cell["tags"]))}"')
    shown = outputs and cell["cell_type"] == "code" and cell.get("outputs")
    text = outputs_text(cell["outputs"], max_lines, max_bytes) if shown else None
    return _Parts(" ".join(attributes), cell["source"], text)


def _render(parts: _Parts, mark: str) -> str:
    lines = [f"<cell-{mark} {parts.attributes}>", parts.source]
    if parts.outputs is not None:
        lines += [f"<outputs-{mark}>", parts.outputs, f"</outputs-{mark}>"]
    lines.append(f"</cell-{mark}>")
    return "\n".join(lines)


def boundary_mark(texts: Sequence[str]) -> str:
    """A new random mark that none of ``texts`` holds: the boundaries of one read. Six hex digits, longer when
    texts full of hex keep holding the ones drawn (so it always ends)."""
    for size in itertools.count(3):
        for _ in range(4):
            mark = secrets.token_hex(size)
            if not any(mark in text for text in texts):
                return mark
    raise AssertionError("unreachable")  # pragma: no cover


def cell_text(cell: CellInfo, *, outputs: bool = True, max_lines: int, max_bytes: int, mark: str) -> str:
    """One cell for the model, its boundaries carrying ``mark`` (see the module docstring)."""
    return _render(_parts(cell, outputs, max_lines, max_bytes), mark)


def cell_details(cell: CellInfo, *, outputs: bool = True) -> dict[str, Any]:
    """A cell for a result's ``details``: what the model read of it (its outputs as the bounded text), not the raw
    outputs (an image's base64 would go to the session file)."""
    keys = ("id", "index", "cell_type", "source", "execution_count", "tags")
    details: dict[str, Any] = {key: cell.get(key) for key in keys}
    shown = outputs and cell["cell_type"] == "code" and cell.get("outputs")
    details["outputs"] = outputs_text(cell["outputs"], READ_OUTPUT_LINES, READ_OUTPUT_BYTES) if shown else ""
    return details


def read_text(
    cells: Sequence[CellInfo], *, total: int, outputs: bool, max_bytes: int = MAX_READ_BYTES
) -> tuple[str, int]:
    """The cells as text, stopping at the first cell boundary past ``max_bytes`` (at least one cell is shown), after
    a line that names this read's boundaries (see the module docstring). Returns the text and how many of ``cells``
    it shows."""
    every = [_parts(cell, outputs, READ_OUTPUT_LINES, READ_OUTPUT_BYTES) for cell in cells]
    mark = boundary_mark([text for parts in every for text in (parts.source, parts.outputs or "")])
    head = READ_HEAD.format(mark=mark)
    texts: list[str] = [head]
    used = len(head.encode())
    for shown, parts in enumerate(every):
        text = _render(parts, mark)
        size = len(text.encode("utf-8", "surrogatepass"))
        if shown and used + size > max_bytes:
            first, last = cells[0]["index"], cells[shown - 1]["index"]
            texts.append(f"[Showing cells {first}-{last} of {total}. Use start={last + 1} to continue.]")
            return "\n\n".join(texts), shown
        texts.append(text)
        used += size + 2
    return "\n\n".join(texts), len(cells)
