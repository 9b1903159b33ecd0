"""Head truncation (keep the first lines) and grep's line cut, as Pi's ``truncate.ts``.

:class:`HeadTruncation` keeps Pi's ``TruncationResult`` fields; :meth:`HeadTruncation.details` gives them as
Pi's ``details.truncation`` (camelCase, as in Pi's session files) without Pi's copy of the shown text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ._output import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES

__all__ = ["GREP_MAX_LINE_LENGTH", "MAX_SAFE_INTEGER", "HeadTruncation", "truncate_head", "truncate_line", "utf8_len"]

GREP_MAX_LINE_LENGTH = 500
MAX_SAFE_INTEGER = 2**53 - 1


def utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


@dataclass(frozen=True, slots=True)
class HeadTruncation:
    content: str
    truncated: bool
    truncated_by: Literal["lines", "bytes"] | None
    total_lines: int
    total_bytes: int
    output_lines: int
    output_bytes: int
    first_line_exceeds_limit: bool
    max_lines: int
    max_bytes: int

    def details(self) -> dict[str, Any]:
        return {
            "truncated": self.truncated,
            "truncatedBy": self.truncated_by,
            "totalLines": self.total_lines,
            "totalBytes": self.total_bytes,
            "outputLines": self.output_lines,
            "outputBytes": self.output_bytes,
            "lastLinePartial": False,
            "firstLineExceedsLimit": self.first_line_exceeds_limit,
            "maxLines": self.max_lines,
            "maxBytes": self.max_bytes,
        }


def keep_head(lines: list[str], max_lines: int, max_bytes: int) -> tuple[list[str], Literal["lines", "bytes"]]:
    """The longest prefix of ``lines`` within both limits (Pi's loop), and which limit stopped it."""
    kept: list[str] = []
    used = 0
    truncated_by: Literal["lines", "bytes"] = "lines"
    for index, line in enumerate(lines):
        if index >= max_lines:
            break
        size = utf8_len(line) + (1 if index > 0 else 0)
        if used + size > max_bytes:
            truncated_by = "bytes"
            break
        kept.append(line)
        used += size
    if len(kept) >= max_lines and used <= max_bytes:
        truncated_by = "lines"
    return kept, truncated_by


def truncate_head(
    content: str, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES
) -> HeadTruncation:
    """Keep the first ``max_lines`` lines or ``max_bytes`` bytes, whichever is hit first; never a partial line.

    When the first line alone is over ``max_bytes`` nothing is kept and ``first_line_exceeds_limit`` is set.
    """
    total_bytes = utf8_len(content)
    lines = content.split("\n") if content else []
    if content.endswith("\n"):
        lines.pop()
    total_lines = len(lines)
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return HeadTruncation(
            content, False, None, total_lines, total_bytes, total_lines, total_bytes, False, max_lines, max_bytes
        )
    if utf8_len(lines[0]) > max_bytes:
        return HeadTruncation("", True, "bytes", total_lines, total_bytes, 0, 0, True, max_lines, max_bytes)
    kept, truncated_by = keep_head(lines, max_lines, max_bytes)
    text = "\n".join(kept)
    return HeadTruncation(
        text, True, truncated_by, total_lines, total_bytes, len(kept), utf8_len(text), False, max_lines, max_bytes
    )


def _utf16_len(text: str) -> int:
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def truncate_line(line: str, max_chars: int = GREP_MAX_LINE_LENGTH) -> tuple[str, bool]:
    """Cut a grep line to ``max_chars`` JavaScript characters (UTF-16 units) plus ``... [truncated]``.

    A cut that would split a surrogate pair (JavaScript leaves half of it) drops the whole character instead.
    """
    if len(line) <= max_chars and (line.isascii() or _utf16_len(line) <= max_chars):
        return line, False
    if line.isascii() or max(line) <= "\uffff":
        return f"{line[:max_chars]}... [truncated]", True
    units = 0
    end = 0
    for ch in line:
        width = 2 if ord(ch) > 0xFFFF else 1
        if units + width > max_chars:
            break
        units += width
        end += 1
    return f"{line[:end]}... [truncated]", True
