"""What the file tools share: their error, Pi's texts for aborts and numbers, and blocking work in a thread.

File work (reading, walking a tree, writing) blocks, and a notebook's event loop must stay free for Stop clicks
and streaming. So each tool runs its file work in a worker thread with :func:`in_thread`; the work calls
``stop.check()`` between files or chunks, which raises ``FileToolError("Operation aborted")`` once the run's
signal aborts or the awaiting task is cancelled. The threads are the file tools' own (``_workers``), not the
event loop's default executor, which resolves host names for the HTTP providers: a read that never returns must
not starve them.
"""

from __future__ import annotations

import asyncio
import math
import os
import stat as stats
import threading
from collections.abc import Callable, Mapping
from contextlib import suppress
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, BinaryIO, TypeVar

from ..ai import AbortSignal, ToolError
from ._workers import WORKERS, WorkersStuck

__all__ = [
    "ABORTED",
    "FileToolError",
    "Stop",
    "in_thread",
    "js_number",
    "js_to_fixed",
    "optional_number",
    "optional_string",
    "required_string",
]

ABORTED = "Operation aborted"

T = TypeVar("T")


class FileToolError(ToolError):
    """Raised by the file tools' ``execute``; the agent loop turns its text into an error tool result.

    ``code`` is the file-system error's name (``"ENOENT"``, ``"EISDIR"``...) when one caused it, ``"ABORTED"``
    when the run's signal aborted, and ``None`` for invalid arguments and the tools' own refusals.
    """

    def __init__(self, text: str, code: str | None = None) -> None:
        super().__init__(text)
        self.code = code

    @property
    def aborted(self) -> bool:
        return self.code == "ABORTED"


def not_regular(verb: str, path: str) -> FileToolError:
    """For a device, pipe or socket: reading one may never end and replacing one is never wanted."""
    return FileToolError(f"Cannot {verb} {path}: not a regular file (a device, pipe or socket)", "EINVAL")


BLOCKING_FILES = frozenset({"/proc/kmsg"})
"""Regular files whose read waits for data that may never come (and consumes what it reads): refused by name.
``trace_pipe`` files of the kernel's tracing file system are refused by their name too."""


def may_block(path: str) -> bool:
    """Whether reading ``path`` can block forever although it is a regular file (see :data:`BLOCKING_FILES`)."""
    real = os.path.realpath(path)
    return real in BLOCKING_FILES or os.path.basename(real).startswith("trace_pipe")


def blocking_error(verb: str, path: str) -> FileToolError:
    return FileToolError(
        f"Cannot {verb} {path}: reading it can block forever (it waits for data that may never come)", "EAGAIN"
    )


def open_to_read(absolute: str, shown: str, verb: str = "read") -> BinaryIO:
    """``absolute`` opened for reading without ever blocking on it: a file of :data:`BLOCKING_FILES` or that is
    not a regular file (a FIFO, a device, a socket; checked on the open file, so a file swapped after a ``stat``
    is caught) is refused with :class:`FileToolError`, and reads are non-blocking (``O_NONBLOCK``: a pseudo-file
    with nothing to read raises ``BlockingIOError`` instead of waiting). Raises ``OSError`` as ``open`` does."""
    if may_block(absolute):
        raise blocking_error(verb, shown)
    fd = os.open(absolute, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stats.S_ISREG(os.fstat(fd).st_mode):
            raise not_regular(verb, shown)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def aborted_error() -> FileToolError:
    return FileToolError(ABORTED, "ABORTED")


class Stop:
    """Handed to work running in a thread: ``check()`` raises once the signal aborted or the caller gave up."""

    __slots__ = ("_cancelled", "_signal")

    def __init__(self, signal: AbortSignal | None) -> None:
        self._signal = signal
        self._cancelled = threading.Event()

    @property
    def requested(self) -> bool:
        # Reading ``aborted`` from another thread is a plain attribute read; it only ever goes False -> True.
        return self._cancelled.is_set() or (self._signal is not None and self._signal.aborted)

    def check(self) -> None:
        if self.requested:
            raise aborted_error()

    def cancel(self) -> None:
        self._cancelled.set()


async def in_thread(work: Callable[[Stop], T], signal: AbortSignal | None, *, abandon_on_abort: bool = False) -> T:
    """Run ``work(stop)`` in a file-tool thread (``_workers``) and return its result.

    When the signal aborts, the work sees it at its next ``stop.check()``. With ``abandon_on_abort`` (read-only
    work) this returns "Operation aborted" at once and lets the thread finish on its own at that check;
    otherwise it waits for the thread, so a file operation has settled before the caller (and the file's
    mutation lock) moves on. Cancelling the awaiting task stops the work the same way, then re-raises.
    """
    stop = Stop(signal)
    stop.check()
    loop = asyncio.get_running_loop()
    try:
        job = WORKERS.submit(work, stop)
    except WorkersStuck as exc:
        raise FileToolError(str(exc), "EBUSY") from None
    future = asyncio.wrap_future(job.future, loop=loop)
    aborted: asyncio.Future[None] | None = None

    def on_abort() -> None:
        if aborted is not None and not aborted.done():
            aborted.set_result(None)

    if abandon_on_abort and signal is not None:
        aborted = loop.create_future()
        signal.add_listener(on_abort)
    try:
        if aborted is None:
            return await asyncio.shield(future)
        waiting: set[asyncio.Future[Any]] = {future, aborted}
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        if not future.done():
            stop.cancel()
            WORKERS.abandon(job)
            future.add_done_callback(_consume)
            raise aborted_error()
        result: T = future.result()
        return result
    except asyncio.CancelledError:
        stop.cancel()
        if abandon_on_abort:
            WORKERS.abandon(job)
        future.add_done_callback(_consume)  # its outcome is dropped: we were cancelled
        if not abandon_on_abort:
            with suppress(BaseException):
                await asyncio.wait({future})
        raise
    finally:
        if aborted is not None and signal is not None:
            signal.remove_listener(on_abort)
            aborted.cancel()


def _consume(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()  # retrieved, so an abandoned failure is not reported as never retrieved


def js_number(value: float) -> str:
    """A number as JavaScript prints it (``1``, ``0.5``, ``Infinity``), so texts match Pi's."""
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if float(value).is_integer():
        return str(int(value))
    return repr(float(value))


def js_to_fixed(value: float, digits: int) -> str:
    """JavaScript's ``Number.prototype.toFixed``: ties on the exact binary value round up, not to even."""
    quantum = Decimal(1).scaleb(-digits)
    return str(Decimal(value).quantize(quantum, rounding=ROUND_HALF_UP))


def required_string(args: Any, name: str, tool: str) -> str:
    value = args.get(name) if isinstance(args, Mapping) else None
    if not isinstance(value, str):
        raise FileToolError(f"Invalid {tool} input: {name} must be a string")
    return value


def optional_string(args: Mapping[str, Any], name: str, tool: str) -> str | None:
    value = args.get(name)
    if value is not None and not isinstance(value, str):
        raise FileToolError(f"Invalid {tool} input: {name} must be a string")
    return value


def optional_number(args: Mapping[str, Any], name: str, tool: str) -> float | None:
    value = args.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise FileToolError(f"Invalid {tool} input: {name} must be a number")
    return float(value)
