"""Pi's tool sets, rooted at one working directory (``createAllTools`` / ``createReadOnlyTools``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from ..agent import AgentTool
from . import edit, find, grep, ls, read, write
from ._common import ToolPrompt
from .bash import bash_tool
from .edit import edit_tool
from .find import find_tool
from .grep import grep_tool
from .ls import ls_tool
from .read import read_tool
from .write import write_tool

__all__ = ["TOOL_PROMPTS", "coding_tools", "read_only_tools"]

TOOL_PROMPTS: Mapping[str, ToolPrompt] = MappingProxyType(
    {
        "read": read.PROMPT,
        # Pi adds "Inspect PI_* environment variables..." when it exposes them; our bash does not.
        "bash": ToolPrompt("Execute bash commands (ls, grep, find, etc.)"),
        "edit": edit.PROMPT,
        "write": write.PROMPT,
        "grep": grep.PROMPT,
        "find": find.PROMPT,
        "ls": ls.PROMPT,
    }
)
"""Pi's system-prompt snippet and guidelines for each tool, by name (for a prompt in Pi's shape)."""


def coding_tools(cwd: str | Path | None = None) -> list[AgentTool]:
    """All seven of Pi's tools, in Pi's order: ``read``, ``bash``, ``edit``, ``write``, ``grep``, ``find``, ``ls``.

    Relative paths (and ``bash`` commands) resolve against ``cwd``; ``None`` means the process's working
    directory at each call. ``bash`` gets its defaults; build it with :func:`bash_tool` for other settings.
    """
    return [
        read_tool(cwd),
        bash_tool(cwd=cwd),
        edit_tool(cwd),
        write_tool(cwd),
        grep_tool(cwd),
        find_tool(cwd),
        ls_tool(cwd),
    ]


def read_only_tools(cwd: str | Path | None = None) -> list[AgentTool]:
    """The tools that never change anything: ``read``, ``grep``, ``find``, ``ls`` (Pi's read-only set)."""
    return [read_tool(cwd), grep_tool(cwd), find_tool(cwd), ls_tool(cwd)]
