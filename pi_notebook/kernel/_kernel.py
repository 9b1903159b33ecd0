"""The kernel process's own state: what exists once per process because signals and the main thread do.

:data:`KERNEL` holds the table of the agent's code running on the kernel's threads and the stops held for it
(:class:`~._interrupt.Interrupts`), the listeners of that code's live events (:class:`~._exec.PythonListeners`),
and the notebook pages connected to the kernel (:class:`~._frontend.Frontends`, the cell tools' way to the live
notebook). The ``python`` tool runs its code against them; the notebook's session
registry holds the same object (``REGISTRY.kernel``), and its control channel stops code through it. The module
functions below are the public spelling of the same calls.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field

from ._exec import PythonListener, PythonListeners
from ._frontend import Frontends
from ._interrupt import Interrupts

__all__ = ["KERNEL", "Kernel", "add_python_listener", "hold_interrupt", "interrupt_running_code"]


@dataclass(frozen=True, eq=False)
class Kernel:
    """One kernel process: its running agent code, the listeners of that code's events, and the notebook pages
    connected to it (which the cell tools act through)."""

    interrupts: Interrupts = field(default_factory=Interrupts)
    listeners: PythonListeners = field(default_factory=PythonListeners)
    frontends: Frontends = field(default_factory=Frontends)
    token: str = field(default_factory=lambda: secrets.token_hex(6))
    """Names this process among the kernels a page has seen: a restarted kernel keeps its kernel id but not its
    token (run widgets carry it, so a page can tell the widgets of a kernel that is gone)."""


KERNEL = Kernel()
"""This process's kernel state."""


def interrupt_running_code(reason: str = "Stopped") -> bool:
    """Interrupt the agent's code if some is running (any thread; it does not wait). Returns whether code was
    running. See :meth:`~._interrupt.Interrupts.interrupt_running_code`."""
    return KERNEL.interrupts.interrupt_running_code(reason)


def hold_interrupt(reason: str = "Stopped") -> Callable[[], None]:
    """Interrupt the agent's code running now and any that starts before ``release()`` is called (any thread).
    See :meth:`~._interrupt.Interrupts.hold`."""
    return KERNEL.interrupts.hold(reason)


def add_python_listener(listener: PythonListener) -> Callable[[], None]:
    """Call ``listener(event)`` for every event of the agent's code (on the thread it happens on); returns a
    function that removes it. See :class:`~._exec.PythonListeners`."""
    return KERNEL.listeners.add(listener)
