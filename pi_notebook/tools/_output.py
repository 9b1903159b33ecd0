"""Command output with bounded memory: streaming UTF-8 decode, a rolling tail, the full output in a temp file.

Port of Pi's ``OutputAccumulator`` and ``truncateTail`` (coding-agent ``core/tools/output-accumulator.ts``,
``truncate.ts``). Memory stays near ``4 × max_bytes`` of decoded text however long the command talks: the tail
is cut back to ``2 × max_bytes`` whenever it grows past twice that. Once the output exceeds a limit, the raw
bytes (everything, from the first byte) go to ``<tempdir>/pi-bash-<16 hex>.log`` (``pi-python-`` for the
``python`` tool).

The temp log is the user's only (created ``0600``), holds no key the result would redact (``secrets``: every
spelling of each is written as ``***``; a key split between two chunks too, since the last bytes are held back
until the next chunk or ``close()``), and is deleted when the process (the kernel) exits: the result names it so
that the model can read the full output in a later call of the same session, so it lives as long as the session can
(a kernel killed with SIGKILL runs no exit handler and leaves its logs; they are redacted and private).
"""

from __future__ import annotations

import asyncio
import atexit
import codecs
import contextlib
import math
import os
import secrets
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, BinaryIO, Literal, TypedDict

from ..agent import AgentToolResult
from ..ai import scrub_secrets_bytes, secret_spellings
from ._common import js_to_fixed

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LINES",
    "OutputAccumulator",
    "Progress",
    "Snapshot",
    "TailTruncation",
    "Truncation",
    "delete_at_exit",
    "format_size",
    "tail_text",
    "truncate_tail",
]

DEFAULT_MAX_LINES = 2000
DEFAULT_MAX_BYTES = 50 * 1024


class Truncation(TypedDict):
    """``details["truncation"]`` of a truncated bash result (Pi's fields, snake_case, without the content)."""

    truncated: bool
    truncated_by: Literal["lines", "bytes"] | None
    total_lines: int
    total_bytes: int
    output_lines: int
    output_bytes: int
    last_line_partial: bool
    max_lines: int
    max_bytes: int


@dataclass(frozen=True, slots=True)
class TailTruncation:
    content: str
    truncated: bool
    truncated_by: Literal["lines", "bytes"] | None
    total_lines: int
    total_bytes: int
    output_lines: int
    output_bytes: int
    last_line_partial: bool


@dataclass(frozen=True, slots=True)
class Snapshot:
    content: str
    truncation: Truncation
    full_output_path: str | None


def format_size(size: int) -> str:
    """``512B``, ``50.0KB``, ``1.5MB`` (Pi's ``formatSize``, rounding ties up as JavaScript's ``toFixed``)."""
    if size < 1024:
        return f"{size}B"
    if size < 1024 * 1024:
        return f"{js_to_fixed(size / 1024, 1)}KB"
    return f"{js_to_fixed(size / (1024 * 1024), 1)}MB"


def _nbytes(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _split_lines(text: str) -> list[str]:
    if not text:
        return []
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()  # a trailing newline ends the last line; it does not start another
    return lines


def truncate_tail(text: str, max_lines: int, max_bytes: int) -> TailTruncation:
    """Keep the last ``max_lines`` lines or ``max_bytes`` bytes, whichever limit is hit first.

    Only whole lines are kept, except when the last line alone exceeds ``max_bytes``: then its end is kept
    (cut at a character boundary) and ``last_line_partial`` is set.
    """
    total_bytes = _nbytes(text)
    lines = _split_lines(text)
    if len(lines) <= max_lines and total_bytes <= max_bytes:
        return TailTruncation(text, False, None, len(lines), total_bytes, len(lines), total_bytes, False)
    kept: list[str] = []
    used = 0
    truncated_by: Literal["lines", "bytes"] = "lines"
    partial = False
    for line in reversed(lines):
        if len(kept) >= max_lines:
            break
        size = _nbytes(line) + (1 if kept else 0)
        if used + size > max_bytes:
            truncated_by = "bytes"
            if not kept:
                raw = line.encode("utf-8")[-max_bytes:]
                kept.append(raw.decode("utf-8", "ignore"))  # drops a leading partial character
                partial = True
            break
        kept.append(line)
        used += size
    if len(kept) >= max_lines and used <= max_bytes:
        truncated_by = "lines"
    content = "\n".join(reversed(kept))
    return TailTruncation(content, True, truncated_by, len(lines), total_bytes, len(kept), _nbytes(content), partial)


_temp_logs: set[str] = set()


def delete_at_exit(path: str) -> None:
    """Delete the file at ``path`` when the process exits, with the full-output logs (a log another tool wrote)."""
    _temp_logs.add(path)


@atexit.register
def remove_temp_logs() -> None:
    """Delete the full-output logs this process wrote (run at exit; see the module docstring)."""
    for path in list(_temp_logs):
        with contextlib.suppress(OSError):
            os.unlink(path)
        _temp_logs.discard(path)


class _Scrubber:
    """Redacts keys from a byte stream written in chunks: the last bytes (one spelling's length less one) wait
    for the next chunk, so a key split between two chunks is still found."""

    def __init__(self, secrets: tuple[str, ...]) -> None:
        self._secrets = secrets
        self._keep = max((len(s.encode("utf-8", "surrogatepass")) for s in secret_spellings(secrets)), default=1) - 1
        self._carry = b""

    def feed(self, data: bytes) -> bytes:
        data = scrub_secrets_bytes(self._carry + data, self._secrets)
        cut = max(0, len(data) - self._keep)
        self._carry = data[cut:]
        return data[:cut]

    def flush(self) -> bytes:
        data, self._carry = self._carry, b""
        return data


class OutputAccumulator:
    """Collects a command's raw output chunks; see the module docstring for the memory bound.

    ``append`` never raises for bad bytes (they decode to U+FFFD) nor for a failing temp file (the full output
    is then reported as not saved).
    """

    def __init__(
        self,
        max_lines: int = DEFAULT_MAX_LINES,
        max_bytes: int = DEFAULT_MAX_BYTES,
        prefix: str = "pi-bash",
        secrets: Iterable[str] = (),
    ):
        """``prefix`` names the temp file: ``<tempdir>/<prefix>-<16 hex>.log``; ``secrets`` are redacted from it."""
        known = tuple(secrets)
        self._scrubber = _Scrubber(known) if secret_spellings(known) else None
        self.max_lines = max_lines
        self._prefix = prefix
        self.max_bytes = max_bytes
        self._rolling = max(2 * max_bytes, 1)
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._raw: list[bytes] = []  # held only until the temp file opens (at most max_bytes + one chunk)
        self._pieces: list[str] = []
        self._tail_bytes = 0
        self._tail_at_line_start = True
        self.total_raw_bytes = 0
        self.total_bytes = 0
        self._completed_lines = 0
        self._line_bytes = 0  # bytes of the line still open (no newline yet)
        self._prev_line_bytes = 0  # bytes of the last completed line
        self._open_line = False
        self._file: BinaryIO | None = None
        self.full_output_path: str | None = None
        self.file_error: str | None = None
        self._finished = False

    @property
    def total_lines(self) -> int:
        return self._completed_lines + (1 if self._open_line else 0)

    @property
    def last_line_bytes(self) -> int:
        """Size of the output's last line (the open one, or the last completed one)."""
        return self._line_bytes if self._open_line else self._prev_line_bytes

    def append(self, data: bytes) -> None:
        if self._finished:
            raise RuntimeError("Cannot append to a finished output accumulator")
        self.total_raw_bytes += len(data)
        self._add_text(self._decoder.decode(data))
        if self._file is not None or self._needs_file():
            self._ensure_file()
            self._write(data)
        elif data:
            self._raw.append(data)

    def finish(self) -> None:
        """Flush the decoder (an incomplete trailing character becomes U+FFFD)."""
        if self._finished:
            return
        self._finished = True
        self._add_text(self._decoder.decode(b"", final=True))
        if self._needs_file():
            self._ensure_file()

    def snapshot(self) -> Snapshot:
        """The tail to show; once the output is truncated, the full output is (being) saved to a file."""
        tail = truncate_tail(self._snapshot_text(), self.max_lines, self.max_bytes)
        truncated = self.total_lines > self.max_lines or self.total_bytes > self.max_bytes
        truncated_by = tail.truncated_by
        if truncated and truncated_by is None:
            truncated_by = "bytes" if self.total_bytes > self.max_bytes else "lines"
        truncation = Truncation(
            truncated=truncated,
            truncated_by=truncated_by if truncated else None,
            total_lines=self.total_lines,
            total_bytes=self.total_bytes,
            output_lines=tail.output_lines,
            output_bytes=tail.output_bytes,
            last_line_partial=tail.last_line_partial,
            max_lines=self.max_lines,
            max_bytes=self.max_bytes,
        )
        if truncated:
            self._ensure_file()
        return Snapshot(tail.content, truncation, self.full_output_path)

    def close(self) -> None:
        """Close the temp file (it stays on disk until the process exits); idempotent."""
        if self._file is not None and self._scrubber is not None:
            self._write_through(self._scrubber.flush())
        file, self._file = self._file, None
        if file is not None:
            try:
                file.close()
            except OSError as exc:
                self.file_error = str(exc)

    # -- internals ------------------------------------------------------------------------------------
    def _add_text(self, text: str) -> None:
        if not text:
            return
        size = _nbytes(text)
        self.total_bytes += size
        self._pieces.append(text)
        self._tail_bytes += size
        if self._tail_bytes > 2 * self._rolling:
            self._trim()
        newlines = text.count("\n")
        if newlines == 0:
            self._line_bytes += size
            self._open_line = True
            return
        last = text.rfind("\n")
        if newlines == 1:
            self._prev_line_bytes = self._line_bytes + _nbytes(text[:last])
        else:
            self._prev_line_bytes = _nbytes(text[text.rfind("\n", 0, last) + 1 : last])
        self._completed_lines += newlines
        rest = text[last + 1 :]
        self._line_bytes = _nbytes(rest)
        self._open_line = bool(rest)

    def _trim(self) -> None:
        data = "".join(self._pieces).encode("utf-8")
        start = max(0, len(data) - self._rolling)
        while start < len(data) and data[start] & 0xC0 == 0x80:  # do not start inside a character
            start += 1
        if start > 0:
            self._tail_at_line_start = data[start - 1] == 0x0A
        kept = data[start:]
        self._pieces = [kept.decode("utf-8")]
        self._tail_bytes = len(kept)

    def _snapshot_text(self) -> str:
        text = "".join(self._pieces)
        if len(self._pieces) > 1:
            self._pieces = [text]
        if self._tail_at_line_start:
            return text
        newline = text.find("\n")
        return text if newline == -1 else text[newline + 1 :]

    def _needs_file(self) -> bool:
        return (
            self.total_raw_bytes > self.max_bytes
            or self.total_bytes > self.max_bytes
            or self.total_lines > self.max_lines
        )

    def _ensure_file(self) -> None:
        if self.full_output_path is not None or self.file_error is not None:
            return
        path = os.path.join(tempfile.gettempdir(), f"{self._prefix}-{secrets.token_hex(8)}.log")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as exc:
            self.file_error = str(exc)
            self._raw = []
            return
        delete_at_exit(path)
        self._file = os.fdopen(fd, "wb")
        self.full_output_path = path
        raw, self._raw = self._raw, []
        for chunk in raw:
            self._write(chunk)

    def _write(self, data: bytes) -> None:
        if self._scrubber is not None and self._file is not None:
            data = self._scrubber.feed(data)
        self._write_through(data)

    def _write_through(self, data: bytes) -> None:
        if self._file is None or not data:
            return
        try:
            self._file.write(data)
        except OSError as exc:
            self.file_error = str(exc)
            self.close()


def tail_text(output: OutputAccumulator, snapshot: Snapshot, empty: str) -> tuple[str, Any]:
    """The tail for the model with Pi's truncation footer, and the details (``None`` when not truncated)."""
    truncation = snapshot.truncation
    text = snapshot.content or empty
    if not truncation["truncated"]:
        return text, None
    where = (
        f"Full output: {snapshot.full_output_path}"
        if snapshot.full_output_path
        else f"Full output not saved: {output.file_error}"
    )
    total, shown = truncation["total_lines"], truncation["output_lines"]
    if truncation["last_line_partial"]:
        size, line = format_size(truncation["output_bytes"]), format_size(output.last_line_bytes)
        footer = f"[Showing last {size} of line {total} (line is {line}). {where}]"
    elif truncation["truncated_by"] == "lines":
        footer = f"[Showing lines {total - shown + 1}-{total} of {total}. {where}]"
    else:
        limit = format_size(truncation["max_bytes"])
        footer = f"[Showing lines {total - shown + 1}-{total} of {total} ({limit} limit). {where}]"
    details = {"truncation": truncation, "full_output_path": snapshot.full_output_path}
    return f"{text}\n\n{footer}", details


class Progress:
    """Pi's throttled ``on_update``: an empty result first, then tail snapshots at least ``interval_s`` apart,
    a final flush on ``close(flush=True)``, and nothing at all after ``close``.

    An ``on_update`` that raises is reported through the loop's exception handler and gets no more calls; the
    command keeps running.
    """

    def __init__(self, on_update: Any, output: OutputAccumulator, interval_s: float) -> None:
        self._on_update = on_update
        self._output = output
        self._interval = interval_s
        self._loop = asyncio.get_running_loop()
        self._dirty = False
        self._last = -math.inf
        self._timer: asyncio.TimerHandle | None = None
        self._closed = on_update is None

    def start(self) -> None:
        self._call(AgentToolResult(content=[], details=None))

    def changed(self) -> None:
        if self._closed:
            return
        self._dirty = True
        delay = self._interval - (self._loop.time() - self._last)
        if delay <= 0:
            self._cancel_timer()
            self._emit()
        elif self._timer is None:
            self._timer = self._loop.call_later(delay, self._fire)

    def close(self, *, flush: bool) -> None:
        if self._closed:
            return
        self._cancel_timer()
        if flush:
            self._emit()
        self._closed = True

    def _fire(self) -> None:
        self._timer = None
        self._emit()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _emit(self) -> None:
        if self._closed or not self._dirty:
            return
        self._dirty = False
        self._last = self._loop.time()
        snapshot = self._output.snapshot()
        truncation = snapshot.truncation if snapshot.truncation["truncated"] else None
        details = {"truncation": truncation, "full_output_path": snapshot.full_output_path}
        self._call(AgentToolResult(content=snapshot.content, details=details))

    def _call(self, result: AgentToolResult) -> None:
        if self._closed:
            return
        try:
            self._on_update(result)
        except Exception as exc:
            self._closed = True
            self._cancel_timer()
            self._loop.call_exception_handler({"message": "bash on_update raised", "exception": exc})
