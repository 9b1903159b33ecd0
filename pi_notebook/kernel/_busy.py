"""The kernel's status stays ``busy`` while a cell runs, whatever is handled beside it.

JupyterLab shows the kernel's status from the last ``status`` message on iopub, whichever request it is about.
ipykernel 7 publishes ``busy`` then ``idle`` around every request handled on a subshell or on the control channel
too. While a cell awaits a run (``await run``, ``%pi wait``), the page's answers to the cell tools and its Stop (on the
control comm's subshell), a page reconnecting (control requests) are handled beside that cell, each ending with
``idle``: the status bar said Idle while the cell still ran (issue 37 item 6).

:func:`keep_busy` wraps the kernel's ``_publish_status``: after the ``idle`` of a request handled beside a running
main-shell request, it publishes ``busy`` again for that request. The main shell's own ``idle`` still comes last
(one lock orders them), so nbclient and nbval, which wait for their request's ``idle``, see no difference. Outside
ipykernel (no ``_publish_status``) it does nothing.
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["keep_busy"]


class _BusyStatus:
    """The kernel's ``_publish_status``, re-publishing ``busy`` for the running main-shell request (see the module
    docstring)."""

    def __init__(self, kernel: Any, publish: Any) -> None:
        self._kernel = kernel
        self._publish = publish
        channel = getattr(kernel, "shell_channel_thread", None)
        self._main = getattr(channel, "parent_thread", None) or threading.main_thread()
        self._lock = threading.Lock()
        self._running: Any = None
        """The main shell's request being handled (its message), else ``None``."""

    def __call__(self, status: str, channel: str, parent: Any = None) -> None:
        with self._lock:
            if channel == "shell" and threading.current_thread() is self._main:
                self._running = (parent or self._kernel.get_parent(channel)) if status == "busy" else None
                self._publish(status, channel, parent)
                return
            self._publish(status, channel, parent)
            if status == "idle" and self._running is not None:
                self._publish("busy", "shell", self._running)


def keep_busy(kernel: Any) -> None:
    """Install the wrapper on ``kernel`` (an ipykernel kernel) once; nothing for anything else."""
    publish = getattr(kernel, "_publish_status", None)
    if publish is None or isinstance(publish, _BusyStatus):
        return
    kernel._publish_status = _BusyStatus(kernel, publish)
