"""Tools for agents: Pi's ``bash`` tool (process-tree kill on abort and timeout, output tail, progress) and the
``python`` tool (the agent's code on the kernel's namespace, stoppable by every stop path)."""

from ._output import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, Truncation
from .bash import BashError, bash_tool
from .python import (
    PythonError,
    PythonEvent,
    add_python_listener,
    hold_interrupt,
    interrupt_running_code,
    python_tool,
)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LINES",
    "BashError",
    "PythonError",
    "PythonEvent",
    "Truncation",
    "add_python_listener",
    "bash_tool",
    "hold_interrupt",
    "interrupt_running_code",
    "python_tool",
]
