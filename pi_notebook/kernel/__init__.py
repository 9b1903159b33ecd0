"""What runs on, or interrupts, the kernel's main thread: the ``python`` tool (the agent's code in the user's
namespace, as a cell runs), its cell runner, and the SIGINT machinery every stop path goes through.

- :func:`python_tool`: the tool (``python_tool``; why the code runs on the main thread and how each stop path
  reaches it is in that module's docstring);
- :func:`interrupt_running_code` / :func:`hold_interrupt`: interrupt the agent's code from any thread, as a
  KeyboardInterrupt ends a cell (``_interrupt``);
- :func:`add_python_listener`: the code's live output and state (``start``, ``write``, ``display``, ``stuck``,
  ``end``), delivered on the thread that produced it (``_exec``);
- :data:`KERNEL`: the process's one :class:`Kernel` (its running code and held stops, its listeners), which the
  functions above use and the notebook's registry holds (``_kernel``).

This floor sits above ``tools`` and ``session`` (the python tool raises the session's ``AbortRun`` on the kernel's
interrupt) and below ``notebook``, which draws what it reports.
"""

from ._interrupt import InterruptHook
from ._kernel import KERNEL, Kernel, add_python_listener, hold_interrupt, interrupt_running_code
from .python_tool import PythonError, PythonEvent, python_tool

__all__ = [
    "KERNEL",
    "InterruptHook",
    "Kernel",
    "PythonError",
    "PythonEvent",
    "add_python_listener",
    "hold_interrupt",
    "interrupt_running_code",
    "python_tool",
]
