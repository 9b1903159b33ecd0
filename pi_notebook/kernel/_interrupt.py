"""Interrupting the agent's code, from any thread, as a KeyboardInterrupt ends a cell.

An :class:`Execution` brackets one run of the agent's code on the thread that runs it (the kernel's main
thread). While it is active:

- A SIGINT handler of ours is installed (the previous one — ipykernel's ``SIG_IGN`` while idle, its own
  handler while a cell runs — is restored on exit). It raises ``KeyboardInterrupt`` only while the agent's
  code itself runs (inside :meth:`Execution.call`, outside :meth:`Execution.critical` sections); a signal that
  arrives at any other moment is remembered, and raised when the code resumes, or dropped once it has
  finished. So a late signal never escapes into the tool's own bookkeeping or into the next cell.
- :meth:`Interrupts.interrupt_running_code` (any thread) records why and sends SIGINT to that thread with
  ``signal.pthread_kill``: Python runs the handler between two bytecodes, and a blocking call such as
  ``time.sleep`` or a socket read returns with EINTR, so both a busy loop and a sleep stop within
  milliseconds.
- A SIGINT that did not come from us is the kernel's interrupt button (the kernel manager signals the
  kernel process): it ends the code the same way and is recorded as ``kind="kernel"``. A previous handler
  that is a Python callable other than ``default_int_handler`` (ipykernel's handler while a cell awaits, the
  notebook's opt-in interrupt hook) is called too, so it still does its job.
- The kernel's SIGINT goes to the process, and Linux may hand it to any thread (about one in sixty times
  here): Python then runs the handler only when the main thread next executes bytecode, so a main thread
  blocked in ``time.sleep`` would sleep on. A forwarder thread reads the signal wakeup fd
  (``signal.set_wakeup_fd``, which the C-level handler writes to on whatever thread it runs) and on each
  SIGINT sends :data:`WAKE_SIGNAL` to the main thread, whose no-op handler ends the blocking call with EINTR;
  Python then runs the pending SIGINT handler. A redundant wake does nothing. The previous wakeup fd gets
  every byte too.
- The interpreter's thread switch interval is lowered to :data:`SWITCH_INTERVAL_S` (and restored after): a
  Stop reaches the kernel through several threads (the shell channel's, then the comm's subshell), and
  each must take the GIL from a busy loop, which lets it go only every switch interval (5 ms by default,
  ~50 ms for the whole way). A thread that does not ask for the GIL costs the code nothing.
- A watchdog thread interrupts the code at its deadline (``kind="deadline"``), and calls ``on_stuck`` when an
  interrupt has not ended the code within :data:`STUCK_AFTER_S`: the code is inside a C call that does not
  return to Python (the signal is handled when it does).
- Code that swallows the interrupt — a bare ``except:`` in a retry loop, ``signal.signal(SIGINT, SIG_IGN)``, a
  blocked signal mask — is interrupted again, harder, every :data:`ESCALATE_EVERY_S` from
  :data:`ESCALATE_AFTER_S` after the first interrupt until it returns (:attr:`Execution.repeats` counts them):
  SIGINT and the wake signal go to the main thread (the wake signal gets past ``SIG_IGN`` and a blocked SIGINT,
  and ends a blocking call), and whichever of our handlers runs raises ``KeyboardInterrupt`` *and* traces the
  code's frames (``frame.f_trace``, ``sys.settrace``) with a function that raises it again at the next line the
  code runs. A bare ``except:`` catches the first; the second is raised in that ``except`` block, which its own
  ``try`` does not cover, so it leaves the loop. Python removes a trace function that raises, so each
  escalation gets out of one ``try`` that swallows: code that swallows it at two levels, the outer restarting
  the inner (or a ``finally`` that loops), is not ended, and is reported as below. Our own frames are never
  traced, and when the code returns the trace function in force before is restored. If the code has still not returned
  :data:`UNSTOPPABLE_AFTER_S` after the first interrupt, ``on_unstoppable`` is called (the tool says in the run's
  widget and status that the code does not stop and that restarting the kernel ends it); the escalation goes on.
  The code holds the kernel's main thread, where the event loop runs: until it returns no run can settle,
  whatever is tried, which is why the user is told.
  On exit the signal mask and the SIGINT handler are restored, whatever the code did to them.

Off the main thread (an event loop run in another thread) no signal handler can be installed; the interrupt
is then delivered with ``PyThreadState_SetAsyncExc``, which ends pure-Python code but not a blocking call, and
the kernel's interrupt does not reach the code.

While no agent code runs, the opt-in :class:`InterruptHook` (``%pi interrupt on``) maps the kernel's SIGINT, which
ipykernel ignores while idle, to stopping the active runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import itertools
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType, TracebackType
from typing import Any, Literal, TypeVar

from ..ai import Deadline

__all__ = [
    "ESCALATE_AFTER_S",
    "ESCALATE_EVERY_S",
    "STUCK_AFTER_S",
    "SWITCH_INTERVAL_S",
    "UNSTOPPABLE_AFTER_S",
    "WAKE_SIGNAL",
    "Execution",
    "InterruptHook",
    "Interruption",
    "Interrupts",
    "never_trace",
]

STUCK_AFTER_S = 0.15
"""How long after an interrupt the code may take to return before ``on_stuck`` is called."""
ESCALATE_AFTER_S = 0.2
"""How long after the first interrupt the code may take to return before it is interrupted again, harder."""
ESCALATE_EVERY_S = 0.05
"""How often the escalated interrupt is repeated while the code does not return."""
UNSTOPPABLE_AFTER_S = 2.0
"""How long after the first interrupt ``on_unstoppable`` is called if the code has still not returned."""
SWITCH_INTERVAL_S = 0.001
"""``sys.setswitchinterval`` while the code runs (Python's default: 5 ms); see ``Execution``."""
WAKE_SIGNAL: int | None = getattr(signal, "SIGURG", None)
"""Sent to the main thread to end a blocking call after another thread took the kernel's SIGINT. SIGURG: its
default action is to ignore it, so a stray one can do no harm."""

_log = logging.getLogger(__name__)
_OUR_FILES = {__file__}
"""Files whose frames an escalated interrupt never traces (the code's runner adds its own: :func:`never_trace`)."""
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Interruption:
    """Why the code was interrupted: ``stop`` (:func:`interrupt_running_code`), ``kernel`` (a SIGINT from
    outside: the kernel's interrupt button) or ``deadline`` (the watchdog; ``deadline`` says which)."""

    kind: Literal["stop", "kernel", "deadline"]
    reason: str
    deadline: Deadline | None = None


class Interrupts:
    """The agent's code running on this kernel's threads (one :class:`Execution` each) and the stops held for code
    that has not started yet. A kernel process has one (``pi_notebook.kernel.KERNEL.interrupts``): a signal
    reaches the whole process. Every method may be called from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active: list[Execution] = []
        self._holds: dict[int, str] = {}  # hold id -> reason, see hold
        self._hold_ids = itertools.count()

    def interrupt_running_code(self, reason: str = "Stopped") -> bool:
        """Interrupt the agent's code if some is running (it does not wait). Returns whether code was running.

        Call it when stopping a run, and abort the run as usual too: the ``python`` tool waits briefly for that
        abort so the run does not go on to another model request.
        """
        with self._lock:
            executions = list(self._active)
        interrupted = [execution.interrupt(Interruption("stop", reason)) for execution in executions]
        return any(interrupted)

    def hold(self, reason: str = "Stopped") -> Callable[[], None]:
        """Interrupt the agent's code running now **and any that starts** before the returned ``release()`` is
        called (``release`` is idempotent).

        For a stop that still has to reach the run through the event loop (the control comm hands its abort to
        the loop): code that started meanwhile would block the loop and so the abort. Release once the stopped
        runs have settled.
        """
        with self._lock:
            key = next(self._hold_ids)
            self._holds[key] = reason
            executions = list(self._active)
        for execution in executions:
            execution.interrupt(Interruption("stop", reason))

        def release() -> None:
            with self._lock:
                self._holds.pop(key, None)

        return release

    def _enter(self, execution: Execution) -> str | None:
        """``execution`` starts: the reason of a held stop, if one is held."""
        with self._lock:
            self._active.append(execution)
            return next(iter(self._holds.values()), None)

    def _leave(self, execution: Execution) -> None:
        with self._lock:
            self._active.remove(execution)


class Execution:
    """One run of the agent's code on the current thread; see the module docstring.

    Use as a context manager around :meth:`call`; after it, :attr:`interruption` says whether and why the
    code was interrupted (it may be set although the code finished: the interrupt came as it returned).
    """

    def __init__(
        self,
        interrupts: Interrupts,
        deadline: Deadline | None = None,
        on_stuck: Callable[[], None] | None = None,
        on_unstoppable: Callable[[], None] | None = None,
    ) -> None:
        self._interrupts = interrupts
        self.deadline = deadline
        self.interruption: Interruption | None = None
        self.kernel_interrupted = False
        self.repeats = 0
        """Escalated interrupts sent because the code did not return after the first (see the module docstring)."""
        self._on_stuck = on_stuck
        self._on_unstoppable = on_unstoppable
        self._unstoppable_reported = False
        self._next_escalation = 0.0
        self._escalating = False
        self._traced = False
        self._previous_trace: Any = None
        self._mask: set[int | signal.Signals] | None = None
        self._cond = threading.Condition(threading.RLock())  # re-entrant: our SIGINT handler may take it
        self._thread_id = 0
        self._main = False
        self._live = False
        self._defer = 1  # > 0: a signal now is remembered, not raised (outside the code, or in a critical section)
        self._pending = False
        self._sent = False  # we sent a SIGINT that the handler has not seen yet
        self._interrupted_at: float | None = None
        self._stuck_reported = False
        self._previous: Any = None
        self._switch_interval = 0.0
        self._wake: tuple[Any, int, int] | None = (
            None  # previous wake handler, previous wakeup fd, our pipe's write end
        )
        self._critical = _Critical(self)

    # -- lifecycle (the code's thread) ------------------------------------------------------------------
    def __enter__(self) -> Execution:
        self._thread_id = threading.get_ident()
        self._main = threading.current_thread() is threading.main_thread()
        if self._main:
            self._previous = signal.signal(signal.SIGINT, self._on_sigint)
            self._mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])  # the mask as it is (nothing added)
            self._start_forwarder()
        self._switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(min(self._switch_interval, SWITCH_INTERVAL_S))
        with self._cond:
            self._live = True
        held = self._interrupts._enter(self)
        if held is not None:
            self.interrupt(Interruption("stop", held))  # raised as soon as the code starts
        threading.Thread(target=self._watch, name="pi-python-watchdog", daemon=True).start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self._interrupts._leave(self)
        with self._cond:
            self._live = False
            self._cond.notify_all()
        sys.setswitchinterval(self._switch_interval)
        if self._main:
            self._stop_forwarder()
            if self._mask is not None:  # the code may have blocked SIGINT: a blocked one is delivered now
                signal.pthread_sigmask(signal.SIG_SETMASK, self._mask)
            # signal.signal() first runs a SIGINT still pending with our handler, which drops it (not live).
            signal.signal(signal.SIGINT, self._previous)
        elif self._pending or self._sent:
            _set_async_exc(self._thread_id, None)  # withdraw an interrupt not yet raised

    def call(self, function: Callable[[], T]) -> T:
        """Run ``function`` (the agent's code) where the interrupt may raise ``KeyboardInterrupt``."""
        self._defer -= 1
        try:
            self._raise_pending()
            return function()
        finally:
            if self._traced:
                sys.settrace(self._previous_trace)
                self._traced = False
            self._defer += 1

    def critical(self) -> _Critical:
        """Our own work inside the code (capturing a write): an interrupt waits until it is done."""
        return self._critical

    def _raise_pending(self) -> None:
        if self._pending and self._defer == 0:
            self._pending = False
            raise KeyboardInterrupt

    # -- interrupting (any thread) ----------------------------------------------------------------------
    def interrupt(self, interruption: Interruption) -> bool:
        with self._cond:
            if not self._live:
                return False
            if self.interruption is None:
                self.interruption = interruption
                self._interrupted_at = time.monotonic()
            self._deliver()
            self._cond.notify_all()
            return True

    def _deliver(self) -> None:
        if self._main:
            self._sent = True
            signal.pthread_kill(self._thread_id, signal.SIGINT)
        elif self._defer == 0:
            self._sent = True
            _set_async_exc(self._thread_id, KeyboardInterrupt)
        else:
            self._pending = True

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        ours, self._sent = self._sent, False
        if not self._live:
            return  # late: the code has finished
        if not ours:
            self.kernel_interrupted = True
            with self._cond:
                if self.interruption is None:
                    self.interruption = Interruption("kernel", "Interrupted by the kernel's interrupt")
                    self._interrupted_at = time.monotonic()
                    self._cond.notify_all()  # the watchdog escalates from here, as after our own interrupt
            self._chain(signum, frame)
        if self._defer > 0:
            self._pending = True
            return
        if self._escalating:
            self._trace(frame)
        raise KeyboardInterrupt

    def _on_wake(self, signum: int, frame: FrameType | None) -> None:
        """The wake signal: ends a blocking call (EINTR); while escalating, raises in the code as SIGINT would
        (it gets past a SIGINT the code ignores or blocks)."""
        if self._live and self._escalating and self._defer == 0:
            self._trace(frame)
            raise KeyboardInterrupt

    def _trace(self, frame: FrameType | None) -> None:
        """Trace the code's frames with :func:`_raise_on_line` (see the module docstring); main thread only."""
        if not self._traced:
            self._previous_trace = sys.gettrace()
            self._traced = True
        sys.settrace(_raise_on_line)
        while frame is not None and frame.f_code.co_filename not in _OUR_FILES:
            frame.f_trace = _raise_on_line
            frame.f_trace_lines = True
            frame = frame.f_back

    def _chain(self, signum: int, frame: FrameType | None) -> None:
        previous = self._previous
        if callable(previous) and previous is not signal.default_int_handler:
            try:
                previous(signum, frame)
            except BaseException:  # it may raise KeyboardInterrupt: ours is raised anyway
                _log.debug("previous SIGINT handler raised", exc_info=True)

    # -- the SIGINT forwarder (main thread only) --------------------------------------------------------
    def _start_forwarder(self) -> None:
        if WAKE_SIGNAL is None:
            return
        read_fd, write_fd = os.pipe()
        os.set_blocking(write_fd, False)
        previous_handler = signal.signal(WAKE_SIGNAL, self._on_wake)
        previous_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
        self._wake = (previous_handler, previous_fd, write_fd)
        threading.Thread(
            target=self._forward, args=(read_fd, previous_fd), name="pi-python-sigint", daemon=True
        ).start()

    def _stop_forwarder(self) -> None:
        if self._wake is None:
            return
        previous_handler, previous_fd, write_fd = self._wake
        self._wake = None
        signal.set_wakeup_fd(previous_fd)
        os.close(write_fd)  # the forwarder reads EOF and ends
        signal.signal(WAKE_SIGNAL, previous_handler)  # type: ignore[arg-type]  # set when _wake is

    def _forward(self, read_fd: int, previous_fd: int) -> None:
        try:
            while data := os.read(read_fd, 64):
                if previous_fd != -1:
                    with contextlib.suppress(OSError):
                        os.write(previous_fd, data)
                if signal.SIGINT in data and WAKE_SIGNAL is not None:
                    with self._cond:  # __exit__ clears _live under it before restoring the wake handler
                        if self._live:
                            signal.pthread_kill(self._thread_id, WAKE_SIGNAL)
        finally:
            os.close(read_fd)

    # -- the watchdog thread ----------------------------------------------------------------------------
    def _watch(self) -> None:
        while (report := self._next_watch_step()) is not None:
            callback = self._on_stuck if report == "stuck" else self._on_unstoppable
            if callback is not None:
                try:
                    callback()
                except Exception:
                    _log.exception("python tool: on_%s raised", report)

    def _next_watch_step(self) -> Literal["stuck", "unstoppable"] | None:
        """Interrupt at the deadline, escalate while the code does not return, and say when to report it stuck
        or unstoppable (``None``: the code has returned)."""
        deadline = self.deadline
        with self._cond:
            while self._live:
                now = time.monotonic()
                if self._interrupted_at is None:
                    if deadline is not None and now >= deadline.at:
                        self.interruption = Interruption("deadline", deadline.reason, deadline)
                        self._interrupted_at = now
                        self._deliver()
                        continue
                    self._cond.wait(None if deadline is None else deadline.at - now)
                    continue
                since = now - self._interrupted_at
                if since >= STUCK_AFTER_S and not self._stuck_reported:
                    self._stuck_reported = True
                    return "stuck"
                if since >= UNSTOPPABLE_AFTER_S and not self._unstoppable_reported:
                    self._unstoppable_reported = True
                    return "unstoppable"
                if since >= ESCALATE_AFTER_S and now >= self._next_escalation:
                    self._escalate()
                    self._next_escalation = now + ESCALATE_EVERY_S
                dues = [self._next_escalation, self._interrupted_at + ESCALATE_AFTER_S]
                if not self._stuck_reported:
                    dues.append(self._interrupted_at + STUCK_AFTER_S)
                if not self._unstoppable_reported:
                    dues.append(self._interrupted_at + UNSTOPPABLE_AFTER_S)
                upcoming = [due for due in dues if due > now]
                self._cond.wait(min(upcoming) - now if upcoming else ESCALATE_EVERY_S)
        return None

    def _escalate(self) -> None:
        """The code did not return after the interrupt: interrupt it again, harder (see the module docstring)."""
        self.repeats += 1
        self._escalating = True
        if not self._main:
            self._deliver()
            return
        self._sent = True
        signal.pthread_kill(self._thread_id, signal.SIGINT)
        if WAKE_SIGNAL is not None and self._wake is not None:
            signal.pthread_kill(self._thread_id, WAKE_SIGNAL)


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


class _Critical:
    """``with execution.critical():`` — a plain class, so no contextlib frame shows in tracebacks."""

    __slots__ = ("_execution",)

    def __init__(self, execution: Execution) -> None:
        self._execution = execution

    def __enter__(self) -> None:
        self._execution._defer += 1

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self._execution._defer -= 1
        if kind is None:
            self._execution._raise_pending()


def never_trace(path: str) -> None:
    """Never trace frames of the file ``path`` when escalating an interrupt (the code's runner around it)."""
    _OUR_FILES.add(path)


def _raise_on_line(frame: FrameType, event: str, arg: Any) -> Any:
    """The trace function of an escalated interrupt: ``KeyboardInterrupt`` at the code's next line, never in our
    own frames. Raising removes it (Python unsets a trace function that raises): one per escalation."""
    if frame.f_code.co_filename in _OUR_FILES:
        return None
    if event == "line":
        raise KeyboardInterrupt
    return _raise_on_line


def _set_async_exc(thread_id: int, exception: type[BaseException] | None) -> None:
    """Raise ``exception`` in that thread at its next bytecode; ``None`` withdraws one not yet raised."""
    what = None if exception is None else ctypes.py_object(exception)  # None is passed as NULL
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), what)
