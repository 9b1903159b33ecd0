"""What runs on, or acts through, the kernel for the agent: for now the cell tools' kernel side.

- :func:`cell_tools`: ``notebook_read``, ``cell_insert``, ``cell_edit``, ``cell_delete`` and ``cell_run``, acting on
  the live notebook in the browser through the JupyterLab extension's control comm (``_cell_tools``, ``_cell_run``,
  whose docstring says how a cell's code runs and why);
- :data:`FRONTENDS`: the notebook pages connected to this kernel, and asking them (``_frontend``);
- :data:`current_notebook`: which notebook the running run's tools act on (set by the run).

The protocol with the browser is ``_cell_protocol`` (re-exported by ``pi_notebook.notebook._protocol``).
"""

from ._cell_common import CellKernelInterrupt, CellToolError
from ._cell_protocol import AGENT_TAG, METADATA_KEY, PROTECTED_TAG
from ._cells import CELL_PROMPTS, CELL_TOOL_NAMES, cell_preview, cell_tools
from ._frontend import (
    FRONTENDS,
    CellChange,
    CellChanges,
    Frontend,
    Frontends,
    NotebookTarget,
    NotebookUnavailable,
    current_notebook,
)

__all__ = [
    "AGENT_TAG",
    "CELL_PROMPTS",
    "CELL_TOOL_NAMES",
    "FRONTENDS",
    "METADATA_KEY",
    "PROTECTED_TAG",
    "CellChange",
    "CellChanges",
    "CellKernelInterrupt",
    "CellToolError",
    "Frontend",
    "Frontends",
    "NotebookTarget",
    "NotebookUnavailable",
    "cell_preview",
    "cell_tools",
    "current_notebook",
]
