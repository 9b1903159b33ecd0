"""The cells room: the five cell tools, with which the agent reads, changes and runs the live notebook's cells
through its page in JupyterLab.

- :func:`cell_tools`: the five tools as one set (each carries its own approval default, preview and prompt lines):
  ``notebook_read``, ``cell_insert``, ``cell_edit``, ``cell_delete`` (``_cell_tools``) and ``cell_run``
  (``_cell_run``, whose docstring says how a cell's code runs and why; its live outputs: ``_live_outputs``);
- what they share (``_shared``: their error, asking the run's page) and how cells read as text (``_text``);
- the protocol with the page (``_cell_protocol``; ``labextension/src/cellProtocol.ts`` declares the same messages).

They reach the page through the kernel's pages (``kernel/_frontend.py``, ``KERNEL.frontends``), the page of the
notebook the run came from (``current_notebook``). The rest of the package uses the room through
``pi_notebook.kernel``, which re-exports these names; no other module of the kernel imports the room.
"""

from __future__ import annotations

from ...agent import AgentTool
from ._cell_protocol import (
    AGENT_TAG,
    CELL_MESSAGES,
    METADATA_KEY,
    PROTECTED_TAG,
    CellAction,
    CellError,
    CellOp,
    CellType,
)
from ._cell_run import cell_run_tool
from ._cell_tools import cell_delete_tool, cell_edit_tool, cell_insert_tool, notebook_read_tool
from ._shared import CellKernelInterrupt, CellToolError

__all__ = [
    "AGENT_TAG",
    "CELL_MESSAGES",
    "CELL_TOOL_NAMES",
    "METADATA_KEY",
    "PROTECTED_TAG",
    "CellAction",
    "CellError",
    "CellKernelInterrupt",
    "CellOp",
    "CellToolError",
    "CellType",
    "cell_tools",
]

CELL_TOOL_NAMES = ("notebook_read", "cell_insert", "cell_edit", "cell_delete", "cell_run")
"""The cell tools, in the order the tool set lists them."""


def cell_tools() -> list[AgentTool]:
    """``notebook_read``, ``cell_insert``, ``cell_edit``, ``cell_delete``, ``cell_run``: they act on the notebook
    whose cell started the run, through its page in JupyterLab (see ``_frontend``); without such a page a call
    fails at once with an error saying so (the notebook leaves them out of a run's tool set then).
    ``notebook_read`` only looks (it never asks); the others ask before they change or run a cell (their question
    shows the new cell, the edit's diff, or the source of the cell to delete or run, read from the live notebook)."""
    return [notebook_read_tool(), cell_insert_tool(), cell_edit_tool(), cell_delete_tool(), cell_run_tool()]
