"""The five cell tools as one set (each carries its own approval default, preview and prompt lines)."""

from __future__ import annotations

from ..agent import AgentTool
from ._cell_run import cell_run_tool
from ._cell_tools import cell_delete_tool, cell_edit_tool, cell_insert_tool, notebook_read_tool

__all__ = ["CELL_TOOL_NAMES", "cell_tools"]

CELL_TOOL_NAMES = ("notebook_read", "cell_insert", "cell_edit", "cell_delete", "cell_run")
"""The cell tools, in the order the tool set lists them."""


def cell_tools() -> list[AgentTool]:
    """``notebook_read``, ``cell_insert``, ``cell_edit``, ``cell_delete``, ``cell_run``: they act on the notebook
    whose cell started the run, through its page in JupyterLab (see ``_frontend``); without such a page a call
    fails at once with an error saying so (the notebook leaves them out of a run's tool set then).
    ``notebook_read`` only looks (it never asks); the others ask before they change or run a cell (their question
    shows the new cell, the edit's diff, or the source of the cell to delete or run, read from the live notebook)."""
    return [notebook_read_tool(), cell_insert_tool(), cell_edit_tool(), cell_delete_tool(), cell_run_tool()]
