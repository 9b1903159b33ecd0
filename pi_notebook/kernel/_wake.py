"""A kernel interrupt reaches a cell that awaits a run at once, not when the event loop next happens to wake.

ipykernel (7.4) cancels a cell that awaits (``await run``) from its SIGINT handler: the handler hands the cancel to the
loop with tornado's ``IOLoop.add_callback``, which, called on the loop's own thread as a signal handler is, is
``loop.call_soon``: it queues the cancel but does not wake the loop. The loop sleeps in its selector until something
else wakes it, a timer or a socket: while a run is quiet (a model that has not answered yet, a retry backoff, a
branch summary's request) the run's one-second silence check does, so the cancel came up to a second late; with
nothing scheduled at all it waits until what the cell awaits ends (ipython/ipykernel#881: ``await asyncio.sleep(100)``
is not interrupted). ``bench/bench_interrupt_await.py`` times both.

While a cell awaits a run, :func:`signals_wake_the_loop` makes every signal wake the loop, as asyncio does for its own
``loop.add_signal_handler``: Python's C-level handler writes the signal's number to the wakeup fd
(``signal.set_wakeup_fd``), one end of a socket pair whose other end the loop reads. The loop then runs the callbacks
queued meanwhile, the cancel among them. What the loop reads is handed on to the wakeup fd set before, if any (as the
python tool's SIGINT forwarder, ``_interrupt``, does with ours while the agent's code runs), and that one is set again
when the last awaiting cell is done (awaits nest: ``asyncio.gather(run_a, run_b)``). Only on the main thread, where
signals are handled; elsewhere, or on a loop that cannot watch a socket, it does nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import threading
from collections.abc import Iterator

__all__ = ["signals_wake_the_loop"]

_log = logging.getLogger(__name__)


class _Waker:
    """The wakeup socket pair while at least one cell awaits (``depth``), and the wakeup fd it replaced."""

    def __init__(self) -> None:
        self.depth = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pair: tuple[socket.socket, socket.socket] | None = None
        self._previous = -1

    def enter(self, loop: asyncio.AbstractEventLoop) -> bool:
        if self.depth:
            if loop is not self._loop:
                return False  # another loop on the main thread: leave the one in place alone
            self.depth += 1
            return True
        reader, writer = socket.socketpair()
        reader.setblocking(False)
        writer.setblocking(False)
        try:
            loop.add_reader(reader.fileno(), self._drain)
        except NotImplementedError:  # a loop that cannot watch sockets (Windows' proactor)
            reader.close()
            writer.close()
            return False
        self._previous = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
        self._loop, self._pair, self.depth = loop, (reader, writer), 1
        return True

    def leave(self) -> None:
        self.depth -= 1
        if self.depth or self._pair is None or self._loop is None:
            return
        reader, writer = self._pair
        replaced = signal.set_wakeup_fd(self._previous)
        if replaced != writer.fileno():  # someone set theirs since: theirs stays
            signal.set_wakeup_fd(replaced)
        self._loop.remove_reader(reader.fileno())
        reader.close()
        writer.close()
        self._loop, self._pair, self._previous = None, None, -1

    def _drain(self) -> None:
        """Read what the signals wrote (being woken was the point) and hand it on to the wakeup fd set before."""
        if self._pair is None:
            return
        try:
            data = self._pair[0].recv(4096)
        except (BlockingIOError, InterruptedError):
            return
        if data and self._previous != -1:
            with contextlib.suppress(OSError):
                os.write(self._previous, data)


_WAKER = _Waker()


@contextlib.contextmanager
def signals_wake_the_loop() -> Iterator[None]:
    """While the block runs (a cell awaiting a run, on the running loop), every signal wakes the loop; see the module
    docstring."""
    entered = False
    if threading.current_thread() is threading.main_thread():
        try:
            entered = _WAKER.enter(asyncio.get_running_loop())
        except (RuntimeError, ValueError, OSError):  # no running loop; signals not settable here
            _log.debug("signals_wake_the_loop: not installed", exc_info=True)
    try:
        yield
    finally:
        if entered:
            _WAKER.leave()
