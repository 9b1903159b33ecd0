"""Pi's tool sets, rooted at one working directory (``createAllTools`` / ``createReadOnlyTools``)."""

from __future__ import annotations

from pathlib import Path

from ..agent import AgentTool
from .bash import bash_tool
from .edit import edit_tool
from .find import find_tool
from .grep import grep_tool
from .ls import ls_tool
from .read import read_tool
from .write import write_tool

__all__ = ["coding_tools", "read_only_tools"]


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
    """The tools that never change anything: ``read``, ``grep``, ``find``, ``ls`` (Pi's read-only set; each
    has ``approval="never"``)."""
    return [read_tool(cwd), grep_tool(cwd), find_tool(cwd), ls_tool(cwd)]
