"""Pi's ``write`` tool: create or overwrite a file with the given text, creating parent directories.

``write_tool(cwd)`` returns an :class:`~pi_notebook.agent.AgentTool` named ``write`` with Pi 0.83's parameters
(``path``, ``content``), description and texts: ``Successfully wrote N bytes to <path>`` (N counts JavaScript
characters, as Pi's does) and Node's file-system errors (``EEXIST: file already exists, mkdir '...'`` when a
parent is a file, ``EISDIR: illegal operation on a directory, open '...'``). ``details`` is ``None``.

Unlike Pi (``fs.writeFile`` truncates and rewrites in place), the file is replaced atomically (``_atomic``):
an abort, a crash or ``kill -9`` mid-write leaves the old content or the new, never a part. Writes to the same
file from parallel tool calls run one at a time, in call order (``_mutation``). The abort signal is checked
before the directories are made, between 1 MB chunks and before the rename; once the rename happened the
tool reports success (Pi would report "Operation aborted" for a file it had in fact written). A device, pipe or
socket at ``path`` is refused, never replaced (``Cannot write <path>: not a regular file ...``). In a run that keeps a
checkpoint (``_file_journal``) the file's content before the call is recorded before anything changes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..agent import AgentTool, AgentToolResult, ToolPrompt
from ..ai import AbortSignal, TextContent
from ._atomic import encode_text, js_length, make_directories, write_atomic
from ._common import Stop, in_thread, required_string
from ._file_journal import FileJournal, file_journal, note_after, note_before
from ._mutation import file_mutation_lock
from ._paths import node_error, resolve_to_cwd

__all__ = ["write_tool"]

DESCRIPTION = (
    "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. Automatically creates "
    "parent directories."
)
PROMPT = ToolPrompt("Create or overwrite files", ("Use write only for new files or complete rewrites.",))
PARAMETERS: dict[str, Any] = {
    "type": "object",
    "required": ["path", "content"],
    "properties": {
        "path": {"type": "string", "description": "Path to the file to write (relative or absolute)"},
        "content": {"type": "string", "description": "Content to write to the file"},
    },
}


def _write(absolute: str, content: str, stop: Stop, journal: FileJournal | None = None) -> None:
    note_before(journal, absolute)  # the run's checkpoint: the file (and its folders) as they were
    make_directories(os.path.dirname(absolute))
    stop.check()
    data = encode_text(content)
    try:
        write_atomic(absolute, data, stop)
    except OSError as exc:
        raise node_error(exc, "open", absolute) from None
    note_after(journal, absolute)


def write_tool(cwd: str | Path | None = None) -> AgentTool:
    """Pi's ``write`` tool resolving relative paths against ``cwd`` (``None``: the process's working directory
    at each call). See the module docstring; ``execute`` raises :class:`FileToolError` with Pi's texts.
    """
    root = None if cwd is None else os.fspath(cwd)

    async def execute(tool_call_id: str, args: Any, signal: AbortSignal | None, on_update: Any) -> AgentToolResult:
        path = required_string(args, "path", "write")
        content = required_string(args, "content", "write")
        absolute = resolve_to_cwd(path, root if root is not None else os.getcwd())
        journal = file_journal.get()
        async with file_mutation_lock(absolute):
            await in_thread(lambda stop: _write(absolute, content, stop, journal), signal)
        text = f"Successfully wrote {js_length(content)} bytes to {path}"
        return AgentToolResult(content=[TextContent(text=text)], details=None)

    return AgentTool(
        name="write",
        label="write",
        description=DESCRIPTION,
        parameters=PARAMETERS,
        execute=execute,
        approval="ask",
        preview=preview_write,
        prompt=PROMPT,
    )


def preview_write(args: Mapping[str, Any]) -> str:
    """What an approval question shows of a ``write`` call: the path, the size and the content."""
    content = args["content"]
    if not isinstance(content, str):
        raise TypeError("content is not text")
    return f"{args.get('path')} ({len(content)} characters)\n\n{content}"
