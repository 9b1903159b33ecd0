"""Pi's ``find`` tool: paths matching a glob under a directory, pure Python, no ``fd`` needed.

``find_tool(cwd)`` returns an :class:`~pi_notebook.agent.AgentTool` named ``find`` with Pi 0.83's parameters
(``pattern``; optional ``path`` and ``limit``, default 1000), description, texts and result shape: one path per
line relative to the searched directory, directories ending in ``/``; ``No files found matching pattern``; at
``limit`` results ``[1000 results limit reached. Use limit=2000 for more, or refine pattern]`` and
``details = {"resultLimitReached": 1000}`` (``limit=0`` means no limit, yet reports it reached, as Pi does);
past 50 KB ``[50.0KB limit reached]`` and ``{"truncation": {...}}``.

Matching follows fd as Pi runs it (``fd --glob --hidden``): a pattern without ``/`` is matched against each
entry's name, one with ``/`` against its absolute path with ``**/`` put in front (so ``src/**/*.ts`` works from
anywhere above ``src``); glob syntax and smart case in ``_glob``. Files, directories and symlinks are listed
(symlinks not followed), hidden ones and ``.git`` included; ``.gitignore``, ``.ignore`` and ``.fdignore`` are
honoured (``_ignore``), ``.gitignore`` also outside git repositories, as Pi asks fd to.

Differences: results come in a fixed order (sorted by path, depth first) where fd's order varies, so which
results a ``limit`` keeps is stable here. A missing path reads fd's ``[fd error]: Search path '<abs>' is not a
directory.`` as in Pi. The abort signal is checked every 64 entries; the tool returns at once on abort.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from ..agent import AgentTool, AgentToolResult, ToolPrompt
from ..ai import AbortSignal, TextContent
from ._common import (
    FileToolError,
    Stop,
    in_thread,
    js_number,
    optional_number,
    optional_string,
    required_string,
)
from ._glob import GlobError, compile_glob
from ._ignore import IgnoreRules
from ._output import DEFAULT_MAX_BYTES, format_size
from ._paths import display_name, resolve_to_cwd
from ._sensitive import looking_tool
from ._truncate import MAX_SAFE_INTEGER, truncate_head
from ._walk import walk

__all__ = ["find_tool"]

DEFAULT_LIMIT = 1000
DESCRIPTION = (
    "Search for files by glob pattern. Returns matching file paths relative to the search directory. Respects "
    f".gitignore. Output is truncated to {DEFAULT_LIMIT} results or {DEFAULT_MAX_BYTES // 1024}KB (whichever is hit "
    "first)."
)
PROMPT = ToolPrompt("Find files by glob pattern (respects .gitignore)", ())
PARAMETERS: dict[str, Any] = {
    "type": "object",
    "required": ["pattern"],
    "properties": {
        "pattern": {
            "type": "string",
            "description": "Glob pattern to match files, e.g. '*.ts', '**/*.json', or 'src/**/*.spec.ts'",
        },
        "path": {"type": "string", "description": "Directory to search in (default: current directory)"},
        "limit": {"type": "number", "description": "Maximum number of results (default: 1000)"},
    },
}


def _inside_git_repository(directory: str) -> bool:
    current = directory
    while True:
        if os.path.lexists(os.path.join(current, ".git")):
            return True
        parent = os.path.dirname(current)
        if parent == current:
            return False
        current = parent


def _matcher(pattern: str) -> tuple[re.Pattern[str], bool]:
    """The compiled glob and whether it is matched against full paths (Pi's rewrite of fd's arguments)."""
    full_path = "/" in pattern
    effective = pattern
    if full_path and not pattern.startswith("/") and not pattern.startswith("**/") and pattern != "**":
        effective = f"**/{pattern}"
    try:
        return compile_glob(effective), full_path
    except GlobError as exc:
        raise FileToolError(f"[fd error]: {exc}") from None


def _find(cwd: str, pattern: str, path: str | None, limit: float, stop: Stop) -> AgentToolResult:
    root = resolve_to_cwd(path or ".", cwd)
    if not os.path.isdir(root):
        raise FileToolError(
            f"[fd error]: Search path '{root}' is not a directory.\n[fd error]: No valid search paths given."
        )
    if limit < 0 or not float(limit).is_integer():  # fd's command line takes a whole number
        raise FileToolError(
            f"error: invalid value '{js_number(limit)}' for '--max-results <count>': invalid digit found in string"
        )
    compiled, full_path = _matcher(pattern)
    rules = IgnoreRules.for_root(root, "find", require_git=_inside_git_repository(root))
    results: list[str] = []
    for entry in walk(root, rules, stop):
        subject = entry.path if full_path else entry.rel.rsplit("/", 1)[-1]
        if compiled.match(subject):
            results.append(display_name(entry.rel) + ("/" if entry.is_dir else ""))
            if len(results) == limit:  # fd: 0 means no limit
                break
    if not results:
        return AgentToolResult(content=[TextContent(text="No files found matching pattern")], details=None)
    truncation = truncate_head("\n".join(results), max_lines=MAX_SAFE_INTEGER)
    details: dict[str, Any] = {}
    notices = []
    if len(results) >= limit:
        notices.append(
            f"{js_number(limit)} results limit reached. Use limit={js_number(limit * 2)} for more, or refine pattern"
        )
        details["resultLimitReached"] = int(limit) if float(limit).is_integer() else limit
    if truncation.truncated:
        notices.append(f"{format_size(DEFAULT_MAX_BYTES)} limit reached")
        details["truncation"] = truncation.details()
    text = truncation.content + (f"\n\n[{'. '.join(notices)}]" if notices else "")
    return AgentToolResult(content=[TextContent(text=text)], details=details or None)


def find_tool(cwd: str | Path | None = None) -> AgentTool:
    """Pi's ``find`` tool resolving relative paths against ``cwd`` (``None``: the process's working directory at
    each call). See the module docstring; ``execute`` raises :class:`FileToolError` with Pi's texts.
    """
    root = None if cwd is None else os.fspath(cwd)

    async def execute(tool_call_id: str, args: Any, signal: AbortSignal | None, on_update: Any) -> AgentToolResult:
        pattern = required_string(args, "pattern", "find")
        path = optional_string(args, "path", "find")
        limit = optional_number(args, "limit", "find")
        base = root if root is not None else os.getcwd()
        effective = DEFAULT_LIMIT if limit is None else limit
        return await in_thread(lambda stop: _find(base, pattern, path, effective, stop), signal, abandon_on_abort=True)

    return looking_tool("find", root, description=DESCRIPTION, parameters=PARAMETERS, prompt=PROMPT, execute=execute)
