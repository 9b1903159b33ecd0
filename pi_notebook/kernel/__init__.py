"""What runs on, or acts through, the kernel's main thread for the agent: the ``python`` tool (the agent's code in
the user's namespace, as a cell runs), the cell tools (the agent reads, changes and runs the live notebook's cells),
and the SIGINT machinery every stop path goes through.

- :func:`python_tool`: the tool (``python_tool``; why the code runs on the main thread and how each stop path
  reaches it is in that module's docstring);
- :func:`cell_tools`: ``notebook_read``, ``cell_insert``, ``cell_edit``, ``cell_delete`` and ``cell_run``, acting on
  the live notebook in the browser through the JupyterLab extension's control comm: the cells room (``cells/``,
  whose ``__init__`` says what is where; ``cells/_cell_run.py`` says how a cell's code runs and why);
- :class:`Frontends`: the notebook pages connected to this kernel, and asking them (``_frontend``; the kernel's
  one registry is ``KERNEL.frontends``);
  :data:`current_notebook`: which notebook the running run's cell tools act on (set by the run);
- :func:`interrupt_running_code` / :func:`hold_interrupt`: interrupt the agent's code from any thread, as a
  KeyboardInterrupt ends a cell (``_interrupt``);
- :func:`add_python_listener`: the code's live output and state (``start``, ``write``, ``display``, ``stuck``,
  ``end``), delivered on the thread that produced it (``_exec``);
- :data:`KERNEL`: the process's one :class:`Kernel` (its running code and held stops, its listeners), which the
  functions above use and the notebook's registry holds (``_kernel``).

This floor sits above ``tools`` and ``session`` (the python tool raises the session's ``AbortRun`` on the kernel's
interrupt) and below ``notebook``, which draws what it reports.
"""

from ._busy import keep_busy
from ._checkpoint import Checkpoint
from ._checkpoint_cells import CellChangeRecord
from ._checkpoint_files import CheckpointBudget, FileBefore, Stamp, file_holds, file_stamp, restore_file
from ._checkpoint_vars import SizeChange
from ._exec import current_shell
from ._frontend import (
    CellChange,
    CellChanges,
    Frontend,
    FrontendRefused,
    Frontends,
    NotebookTarget,
    NotebookUnavailable,
    current_notebook,
)
from ._in_place import ABSENT, InPlace
from ._interrupt import InterruptHook
from ._kernel import KERNEL, Kernel, add_python_listener, hold_interrupt, interrupt_running_code
from ._scratch import Scratchpad, current_scratch
from ._wake import signals_wake_the_loop
from .cells import (
    AGENT_TAG,
    CELL_MESSAGES,
    CELL_TOOL_NAMES,
    METADATA_KEY,
    PROTECTED_TAG,
    CellAction,
    CellError,
    CellKernelInterrupt,
    CellOp,
    CellToolError,
    CellType,
    cell_tools,
)
from .python_tool import PythonError, PythonEvent, python_tool

__all__ = [
    "ABSENT",
    "AGENT_TAG",
    "CELL_MESSAGES",
    "CELL_TOOL_NAMES",
    "KERNEL",
    "METADATA_KEY",
    "PROTECTED_TAG",
    "CellAction",
    "CellChange",
    "CellChangeRecord",
    "CellChanges",
    "CellError",
    "CellKernelInterrupt",
    "CellOp",
    "CellToolError",
    "CellType",
    "Checkpoint",
    "CheckpointBudget",
    "FileBefore",
    "Frontend",
    "FrontendRefused",
    "Frontends",
    "InPlace",
    "InterruptHook",
    "Kernel",
    "NotebookTarget",
    "NotebookUnavailable",
    "PythonError",
    "PythonEvent",
    "Scratchpad",
    "SizeChange",
    "Stamp",
    "add_python_listener",
    "cell_tools",
    "current_notebook",
    "current_scratch",
    "current_shell",
    "file_holds",
    "file_stamp",
    "hold_interrupt",
    "interrupt_running_code",
    "keep_busy",
    "python_tool",
    "restore_file",
    "signals_wake_the_loop",
]
