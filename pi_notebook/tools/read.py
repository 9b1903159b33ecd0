"""Pi's ``read`` tool: a text file's lines (``offset``/``limit``, 2000 lines / 50 KB per call) or an image.

``read_tool(cwd)`` returns an :class:`~pi_notebook.agent.AgentTool` named ``read`` with Pi 0.83's parameters
(``path``, optional ``offset`` (1-based line) and ``limit``), description, texts and result shape:

- Text is decoded as UTF-8 (invalid bytes shown as U+FFFD) and split on ``\\n``. Past 2000 lines or 50 KB the
  output stops at the last whole line that fits and ends with ``[Showing lines A-B of N. Use offset=B+1 to
  continue.]`` (with ``(50.0KB limit)`` when bytes stopped it); ``details`` is then ``{"truncation": {...}}``
  (Pi's fields, camelCase). A ``limit`` that ends before the file does adds ``[K more lines in file. Use
  offset=M to continue.]``. A first line over 50 KB is not shown; the text says how to read it with ``bash``.
- An image (sniffed from its bytes: JPEG, PNG, GIF, WebP, BMP) comes back as a text note plus an
  :class:`~pi_notebook.ai.ImageContent`, resized when over 2000×2000 pixels or 4.5 MB (``_images``).
- Errors are Pi's: Node's file-system texts (``ENOENT: no such file or directory, access '/abs/path'``) and
  ``Offset N is beyond end of file (M lines total)``.

Differences from Pi: the file is streamed, so a huge file (even one huge line) costs one pass and about one
256 KB chunk plus the shown text in memory (Pi reads it whole); the abort signal is checked between chunks; a
device, pipe or socket is refused (``Cannot read <path>: not a regular file ...``) where Pi would block or read
forever, and so is a regular file whose read can wait forever (``/proc/kmsg``, a tracing ``trace_pipe``; every
file is read with ``O_NONBLOCK``, so such a pseudo-file is refused rather than waited on: ``Cannot read <path>:
reading it can block forever ...``); Pi's note for models without image input is left to the provider layer (the
tool does not know the model). Paths: see ``_paths``.
"""

from __future__ import annotations

import os
import stat as stats
from pathlib import Path
from typing import Any

from ..agent import AgentTool, AgentToolResult, ToolPrompt
from ..ai import AbortSignal, ImageContent, TextContent
from ._common import (
    FileToolError,
    Stop,
    blocking_error,
    in_thread,
    may_block,
    not_regular,
    open_to_read,
    optional_number,
    required_string,
)
from ._images import SNIFF_BYTES, detect_image_mime_type, process_image
from ._output import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, format_size
from ._paths import node_error, resolve_read_path
from ._read_text import OffsetBeyondEnd, Selection, read_chunks, select_lines
from ._sensitive import looking_tool

__all__ = ["read_tool"]

DESCRIPTION = (
    "Read the contents of a file. Supports text files and images (jpg, png, gif, webp, bmp). Images are sent as "
    f"attachments. For text files, output is truncated to {DEFAULT_MAX_LINES} lines or {DEFAULT_MAX_BYTES // 1024}KB "
    "(whichever is hit first). Use offset/limit for large files. When you need the full file, continue with offset "
    "until complete."
)
PROMPT = ToolPrompt("Read file contents", ("Use read to examine files instead of cat or sed.",))
PARAMETERS: dict[str, Any] = {
    "type": "object",
    "required": ["path"],
    "properties": {
        "path": {"type": "string", "description": "Path to the file to read (relative or absolute)"},
        "offset": {"type": "number", "description": "Line number to start reading from (1-indexed)"},
        "limit": {"type": "number", "description": "Maximum number of lines to read"},
    },
}


def _whole(value: float | None) -> int | None:
    return None if value is None else int(value // 1)


def _check_access(path: str) -> None:
    """Node's ``access(path, R_OK)``: the errors it would raise, with its texts."""
    try:
        os.stat(path)
    except OSError as exc:
        raise node_error(exc, "access", path) from None
    if not os.access(path, os.R_OK):
        raise node_error(PermissionError(13, "Permission denied"), "access", path)


def _text_output(selection: Selection, path: str) -> tuple[str, Any]:
    truncation = selection.truncation
    first = selection.start + 1
    if truncation.first_line_exceeds_limit:
        size = format_size(selection.first_line_bytes)
        limit = format_size(DEFAULT_MAX_BYTES)
        text = f"[Line {first} is {size}, exceeds {limit} limit. Use bash: sed -n '{first}p' {path} | head -c {DEFAULT_MAX_BYTES}]"  # noqa: E501
        return text, {"truncation": truncation.details()}
    if truncation.truncated:
        last = first + truncation.output_lines - 1
        where = f"{first}-{last} of {selection.total_file_lines}"
        if truncation.truncated_by == "bytes":
            where += f" ({format_size(DEFAULT_MAX_BYTES)} limit)"
        return f"{truncation.content}\n\n[Showing lines {where}. Use offset={last + 1} to continue.]", {
            "truncation": truncation.details()
        }
    shown = selection.user_limited_lines
    if shown is not None and selection.start + shown < selection.total_file_lines:
        remaining = selection.total_file_lines - (selection.start + shown)
        next_offset = selection.start + shown + 1
        return f"{truncation.content}\n\n[{remaining} more lines in file. Use offset={next_offset} to continue.]", None
    return truncation.content, None


def _read(cwd: str, path: str, offset: int | None, limit: int | None, stop: Stop) -> AgentToolResult:
    absolute = resolve_read_path(path, cwd)
    if may_block(absolute):
        raise blocking_error("read", path)
    _check_access(absolute)
    stop.check()
    mode = os.stat(absolute).st_mode
    if stats.S_ISDIR(mode):  # Node opens a directory fine and fails reading it
        raise FileToolError("EISDIR: illegal operation on a directory, read", "EISDIR")
    if not stats.S_ISREG(mode):
        raise not_regular("read", path)
    try:
        with open_to_read(absolute, path) as file:
            mime = detect_image_mime_type(file.read(SNIFF_BYTES))
            file.seek(0)
            if mime is not None:
                data = file.read()
            else:
                try:
                    selection = select_lines(
                        read_chunks(file, stop), offset, limit, DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES
                    )
                except OffsetBeyondEnd as exc:
                    raise FileToolError(
                        f"Offset {offset} is beyond end of file ({exc.total_lines} lines total)"
                    ) from None
    except BlockingIOError:
        raise blocking_error("read", path) from None
    except OSError as exc:
        raise node_error(exc, "read") from None
    if mime is None:
        text, details = _text_output(selection, path)
        return AgentToolResult(content=[TextContent(text=text)], details=details)
    stop.check()
    image = process_image(data, mime)
    note = "\n".join([f"Read image file [{image.mime_type}]", *image.notes])
    if image.data is None:
        return AgentToolResult(content=[TextContent(text=note)])
    return AgentToolResult(content=[TextContent(text=note), ImageContent(data=image.data, mime_type=image.mime_type)])


def read_tool(cwd: str | Path | None = None) -> AgentTool:
    """Pi's ``read`` tool resolving relative paths against ``cwd`` (``None``: the process's working directory at
    each call). See the module docstring for behaviour; ``execute`` raises :class:`FileToolError` with Pi's texts.
    """
    root = None if cwd is None else os.fspath(cwd)

    async def execute(tool_call_id: str, args: Any, signal: AbortSignal | None, on_update: Any) -> AgentToolResult:
        path = required_string(args, "path", "read")
        offset = _whole(optional_number(args, "offset", "read"))
        limit = _whole(optional_number(args, "limit", "read"))
        base = root if root is not None else os.getcwd()
        return await in_thread(lambda stop: _read(base, path, offset, limit, stop), signal, abandon_on_abort=True)

    return looking_tool("read", root, description=DESCRIPTION, parameters=PARAMETERS, prompt=PROMPT, execute=execute)
