"""The opt-in SIGINT hook: the kernel's interrupt button stops active runs while the kernel is idle."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from types import FrameType
from typing import Any

__all__ = ["InterruptHook"]


class InterruptHook:
    """Maps SIGINT, while the kernel is idle, to ``abort_active()`` on the kernel's loop.

    ipykernel ignores SIGINT while idle; around each request it installs its own handler and then restores the
    one it saved (``kernel.saved_sigint_handler``), so the hook is installed there as well as now. While a cell
    runs, ipykernel's handler wins: an awaiting cell is cancelled, which aborts its run too.
    """

    def __init__(self, abort_active: Callable[[], None]) -> None:
        self._abort_active = abort_active
        self._previous: Any = None
        self.on = False

    def set(self, on: bool, kernel: Any = None) -> None:
        if on == self.on:
            return
        if on:
            loop = asyncio.get_running_loop()
            abort_active = self._abort_active

            def handler(signum: int, frame: FrameType | None) -> None:
                loop.call_soon_threadsafe(abort_active)

            self._previous = getattr(kernel, "saved_sigint_handler", None) or signal.getsignal(signal.SIGINT)
            installed: Any = handler
        else:
            installed = self._previous or signal.SIG_IGN
        signal.signal(signal.SIGINT, installed)
        if kernel is not None:
            kernel.saved_sigint_handler = installed
        self.on = on
