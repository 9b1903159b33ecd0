"""While a run works, the kernel does not look idle to the cullers that admins run.

What each culler reads:

* **Jupyter Server's kernel culler** (``MappingKernelManager.cull_idle_timeout``; Kernel Gateway and Enterprise
  Gateway run the same one): a kernel is idle once its ``last_activity`` is older than the timeout (and, unless
  ``cull_busy``, its ``execution_state`` is not ``busy``; unless ``cull_connected``, no browser is connected).
  ``last_activity`` moves on every iopub message the server receives from the kernel except the types listed in
  ``untracked_message_types`` (``status``, ``stream``, ``display_data``, ... when they answer no request); a
  ``comm_msg`` counts.
* **jupyterhub-idle-culler**: the Hub's ``last_activity`` of the user's server, which the single-user server posts
  every ``JUPYTERHUB_ACTIVITY_INTERVAL`` seconds (default 300) from its own last activity, its kernels' included.

A ``%pi`` run goes on after its cell has ended (``execution_state`` is ``idle``), and while the model thinks or a
tool is silent (a long ``pip install`` in ``bash``, the agent's ``python`` code holding the main thread) it sends
nothing: the kernel looks idle and is culled mid-run. So while a run is active, :class:`ActivitySignal` has the
kernel publish one small ``comm_msg`` on iopub every :func:`interval` seconds (``PI_NOTEBOOK_ACTIVITY_INTERVAL``,
default :data:`DEFAULT_INTERVAL_S`): on the control target's discovery beacon, which no frontend opens, so
frontends drop it. It is sent from its own thread, because the agent's code may block the event loop. Once no
run is active it stops and the kernel is culled as any other.

A run that waits for an approval does not count: a question nobody answers (the tab was closed) must not keep a
kernel alive forever. A run that works forever does (an endless tool): ``budget.wall_time_ms``, which an admin
can cap in the policy file, bounds how long a run can keep a kernel. When the agent's code swallows every interrupt
that wall time (or a Stop) sends, even escalated, it holds the kernel's main thread and the run cannot settle; once
the escalation has failed the run reads ``aborted`` (``_run_state.StatusMachine.given_up``) and the signal stops, so
the cullers reclaim the kernel (the only way left to end that code). It starts again if the code ever returns.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from typing import Protocol

from ._run_state import RunState

__all__ = ["DEFAULT_INTERVAL_S", "INTERVAL_ENV", "ActivitySignal", "interval"]

INTERVAL_ENV = "PI_NOTEBOOK_ACTIVITY_INTERVAL"
DEFAULT_INTERVAL_S = 60.0
"""Seconds between two signals: well below the shortest cull timeouts admins set (minutes), and one tiny message
a minute costs nothing. Set ``PI_NOTEBOOK_ACTIVITY_INTERVAL`` below a shorter timeout; ``0`` turns it off."""
WAITING_ON_A_PERSON = "awaiting approval"
_OVER = ("settled", "aborted", "error")
"""States of a run that is not done only because its code holds the event loop (see the module docstring)."""

_log = logging.getLogger(__name__)


class _Working(Protocol):
    def state(self) -> RunState: ...


def interval(environ: dict[str, str] | None = None) -> float:
    """``PI_NOTEBOOK_ACTIVITY_INTERVAL`` in seconds (``0``: no signal), else :data:`DEFAULT_INTERVAL_S`. A value
    that is not a number is logged and ignored."""
    text = (os.environ if environ is None else environ).get(INTERVAL_ENV, "").strip()
    if not text:
        return DEFAULT_INTERVAL_S
    try:
        value = float(text)
    except ValueError:
        _log.warning("%s=%r is not a number of seconds; using %s", INTERVAL_ENV, text, DEFAULT_INTERVAL_S)
        return DEFAULT_INTERVAL_S
    return max(0.0, value)


class ActivitySignal:
    """Calls ``send()`` every ``every`` seconds while ``active_runs()`` holds a run that is not waiting for an
    approval (see the module docstring). Started by :meth:`observe` (told of every run state change, any thread);
    its thread ends when no run is active."""

    def __init__(
        self, active_runs: Callable[[], Sequence[_Working]], send: Callable[[], None], every: float | None = None
    ) -> None:
        self._active_runs = active_runs
        self._send = send
        self._every = interval() if every is None else every
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self.sent = 0
        """How many signals were sent (for tests and ``%pi status``)."""

    @property
    def every(self) -> float:
        """Seconds between two signals (0: none); a change takes effect at once."""
        return self._every

    @every.setter
    def every(self, seconds: float) -> None:
        self._every = seconds
        self._wake.set()

    @property
    def running(self) -> bool:
        return self._thread is not None

    def describe(self) -> str:
        """One line for ``%pi status``."""
        if self.every <= 0:
            return f"activity for idle cullers: off ({INTERVAL_ENV}=0)"
        return f"activity for idle cullers: every {self.every:g} s while a run works ({self.sent} sent)"

    def observe(self, state: object) -> None:
        """A run changed state: make sure the signal runs while runs are active (any thread)."""
        if self.every <= 0 or self._closed.is_set():
            return
        with self._lock:
            if self._thread is None and any(run.state()["state"] not in _OVER for run in self._active_runs()):
                self._thread = threading.Thread(target=self._beat, name="pi-notebook-activity", daemon=True)
                self._thread.start()

    def close(self) -> None:
        """Stop signalling for good (the thread ends at its next beat)."""
        self._closed.set()
        self._wake.set()

    def beat(self) -> bool:
        """One beat: send a signal if a run works; ``False`` (and the thread is done) once no run is active."""
        with self._lock:
            runs = [run for run in self._active_runs() if run.state()["state"] not in _OVER]
            if self._closed.is_set() or not runs:
                self._thread = None
                return False
        if any(_working(run) for run in runs):
            try:
                self._send()
                self.sent += 1
            except Exception:  # a signal that fails must never take the kernel down
                _log.debug("activity signal failed", exc_info=True)
        return True

    def _beat(self) -> None:
        try:
            while True:
                if self._wake.wait(self._every if self._every > 0 else None):
                    self._wake.clear()  # the interval changed (or closed): wait the new one
                    if not self._closed.is_set():
                        continue
                if not self.beat():
                    return
        finally:  # also when listing the runs failed: the next state change starts the signal again
            with self._lock:
                if self._thread is threading.current_thread():
                    self._thread = None


def _working(run: _Working) -> bool:
    return run.state()["state"] != WAITING_ON_A_PERSON
