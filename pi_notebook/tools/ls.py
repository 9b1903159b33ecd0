"""Pi's ``ls`` tool: a directory's entries, sorted, directories marked with ``/``, dotfiles included.

``ls_tool(cwd)`` returns an :class:`~pi_notebook.agent.AgentTool` named ``ls`` with Pi 0.83's parameters
(optional ``path``, default the working directory, and ``limit``, default 500), description, texts and result
shape: entries one per line in Pi's order (``_collate``), a symlink to a directory marked ``/``, entries that
cannot be stat'ed (broken symlinks) left out, ``(empty directory)`` when none is left. Past ``limit`` entries
or 50 KB the list stops and ends with ``[500 entries limit reached. Use limit=1000 for more]`` and/or
``[50.0KB limit reached]``; ``details`` is then ``{"entryLimitReached": 500}`` and/or ``{"truncation": {...}}``.
Errors: ``Path not found: <abs>``, ``Not a directory: <abs>``, ``Cannot read directory: <Node's text>``.
The abort signal is checked every 256 entries.
"""

from __future__ import annotations

import os
import stat as stats
from pathlib import Path
from typing import Any

from ..agent import AgentTool, AgentToolResult, ToolPrompt
from ..ai import AbortSignal, TextContent
from ._collate import collation_key
from ._common import FileToolError, Stop, in_thread, js_number, optional_number, optional_string
from ._output import DEFAULT_MAX_BYTES, format_size
from ._paths import display_name, node_error, resolve_to_cwd
from ._sensitive import looking_tool
from ._truncate import MAX_SAFE_INTEGER, truncate_head

__all__ = ["ls_tool"]

DEFAULT_LIMIT = 500
DESCRIPTION = (
    "List directory contents. Returns entries sorted alphabetically, with '/' suffix for directories. Includes "
    f"dotfiles. Output is truncated to {DEFAULT_LIMIT} entries or {DEFAULT_MAX_BYTES // 1024}KB (whichever is hit "
    "first)."
)
PROMPT = ToolPrompt("List directory contents", ())
PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "Directory to list (default: current directory)"},
        "limit": {"type": "number", "description": "Maximum number of entries to return (default: 500)"},
    },
}


def _list(directory: str, limit: float, stop: Stop) -> AgentToolResult:
    if not os.path.exists(directory):
        raise FileToolError(f"Path not found: {directory}", "ENOENT")
    try:
        if not stats.S_ISDIR(os.stat(directory).st_mode):
            raise FileToolError(f"Not a directory: {directory}", "ENOTDIR")
        names = os.listdir(directory)
    except OSError as exc:
        raise FileToolError(f"Cannot read directory: {node_error(exc, 'scandir', directory)}") from None
    names.sort(key=collation_key)
    entries: list[str] = []
    limit_reached = False
    for index, name in enumerate(names):
        if index % 256 == 0:
            stop.check()
        if len(entries) >= limit:
            limit_reached = True
            break
        try:
            is_dir = stats.S_ISDIR(os.stat(os.path.join(directory, name)).st_mode)
        except OSError:
            continue  # cannot stat (a broken symlink): left out, as in Pi
        entries.append(display_name(name) + ("/" if is_dir else ""))
    if not entries:
        return AgentToolResult(content=[TextContent(text="(empty directory)")], details=None)
    truncation = truncate_head("\n".join(entries), max_lines=MAX_SAFE_INTEGER)
    details: dict[str, Any] = {}
    notices = []
    if limit_reached:
        notices.append(f"{js_number(limit)} entries limit reached. Use limit={js_number(limit * 2)} for more")
        details["entryLimitReached"] = int(limit) if float(limit).is_integer() else limit
    if truncation.truncated:
        notices.append(f"{format_size(DEFAULT_MAX_BYTES)} limit reached")
        details["truncation"] = truncation.details()
    text = truncation.content + (f"\n\n[{'. '.join(notices)}]" if notices else "")
    return AgentToolResult(content=[TextContent(text=text)], details=details or None)


def ls_tool(cwd: str | Path | None = None) -> AgentTool:
    """Pi's ``ls`` tool resolving relative paths against ``cwd`` (``None``: the process's working directory at
    each call). See the module docstring; ``execute`` raises :class:`FileToolError` with Pi's texts.
    """
    root = None if cwd is None else os.fspath(cwd)

    async def execute(tool_call_id: str, args: Any, signal: AbortSignal | None, on_update: Any) -> AgentToolResult:
        args = args if isinstance(args, dict) else {}
        path = optional_string(args, "path", "ls")
        limit = optional_number(args, "limit", "ls")
        directory = resolve_to_cwd(path or ".", root if root is not None else os.getcwd())
        effective = DEFAULT_LIMIT if limit is None else limit
        return await in_thread(lambda stop: _list(directory, effective, stop), signal, abandon_on_abort=True)

    return looking_tool("ls", root, description=DESCRIPTION, parameters=PARAMETERS, prompt=PROMPT, execute=execute)
