"""The ``pi_notebook.control`` comm target: how the JupyterLab extension stops runs and shows their state.

Frontend -> kernel (``comm_msg`` data):

* ``{"action": "abort"}`` stops every active run of this kernel's session as the run widget's Stop button
  does (``Run.abort()``: queued messages are handed back to each run's input box, then the session aborts).
  With ``"run": N`` only run ``N`` is stopped (the extension adds it when forwarding a run widget's Stop
  click), and nothing if it is not active. Code the agent's ``python`` tool is running is interrupted at
  once, on the comm's thread, before the message goes to the event loop (which that code blocks), and so is
  code that starts before the stopped runs have settled (``hold_interrupt``). When those runs have settled
  (at most :data:`ABORT_REPLY_TIMEOUT` seconds later) the kernel replies with the new state,
  ``"reply": "abort"``.
* ``{"action": "status"}``: the kernel replies with the current state, ``"reply": "status"``.
* ``{"action": "cells", "request": N, ...}``: a page's answer to a cells request (the cell tools,
  ``pi_notebook.kernel``); handed to the kernel's :class:`~pi_notebook.kernel.Frontends` (``KERNEL.frontends``),
  which takes it only from the page it asked (on that page's comm, from that page's client id). A page that opens
  the comm with ``{"cells": 1, "path": <notebook path>}`` says it can act on its notebook's cells and is listed
  there (with the client id of its kernel connection, from the message header) until the comm closes.

Both are answered from the comm's thread as far as they can be: the state (on open and for ``status``) is read and
sent there, so a page that opens while the agent's ``python`` code holds the main thread (a reload) shows the run
and its Stop at once, not when the code returns.

Kernel -> frontend: ``{"type": "state", "state": ..., "run": N | None, "aborted": bool, "retry_deadline": ms,
"now": ms}`` right after the comm opens, as each reply, and pushed whenever a run changes state. ``state`` is
``idle`` (no run yet), ``starting``, ``streaming``, ``running tool``, ``retrying`` (``retry_deadline`` is the
epoch time in ms of the next attempt), ``compacting``, then ``settled``, ``aborted`` or ``error``.
``silent_s`` > 0: the run has waited that many whole seconds for data from the model (pushed each second once
it reaches ``SILENCE_NOTICE_S``; 0 again when data comes). ``note``: "waiting for the code to return to Python"
while the agent's ``python`` code does not return after a Stop (pushed from the thread that noticed, since that
code blocks the event loop; ``""`` again when it returns). ``now`` is
the kernel's clock when the message was made, so a frontend can count a retry down without trusting that the
two clocks agree. An unknown action gets ``{"type": "error", "error": ...}``. The names are defined once, in
``_protocol``.

Right after the first state, ``{"type": "views", "process": token, "views": [{"run", "model_id", "cell_id",
"text", "data", "metadata"}]}`` names the kernel process (``Kernel.token``, which its run widgets carry as a CSS
class, so a page can mark them "kernel gone" when it dies) and lists the active runs that have a live widget: its
ipywidgets model id, the id of the notebook cell that displayed it (``None`` if the frontend did not say), its
one-line text, and the display's bundle (with the static copy as of now) and metadata. A page opened while a run
goes on (a reload, a second window) shows each run's output again in its cell if the notebook it loaded does not
hold that output (it was not saved).

While a run works, :class:`~._activity.ActivitySignal` has the kernel publish ``{"type": "activity"}`` on the
beacon every minute or so (see ``_activity``: idle cullers must not take a kernel whose run is silent); no frontend
has the beacon open, so frontends drop it.

Discovery: ``%load_ext pi_notebook`` registers the target and a *beacon* — a comm object with this target
name that only lives in the kernel's comm manager (nothing is sent). A frontend asks ``comm_info`` for this
target (over the control channel, which answers even while a cell runs); a non-empty answer means the target
is registered, so opening a comm cannot fail with "No such comm target" in the kernel log.

Threads: with JupyterLab >= 4.4 and ipykernel >= 7 comm messages arrive on a subshell thread; every handler
is handed to the kernel's event loop with ``call_soon_threadsafe``, so run state is only touched there. That
loop is free while a cell awaits a run, so Stop works then too. The one thing done on the comm's thread is
``hold_interrupt`` for an abort (thread-safe), since the agent's ``python`` code blocks the loop.

One :class:`ControlChannel` per kernel, owned by the kernel's session registry (``REGISTRY.control``): it holds
the open comms, the context each was opened in, the kernel's event loop and the discovery beacon. It knows runs
only through the :class:`RunSource` it is given (the registry), and stops the agent's code through the kernel's
:class:`~pi_notebook.kernel.Kernel` (its interrupts).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol, get_args

from ..kernel import Frontend, Kernel
from ..session import AgentSession
from ._activity import ActivitySignal
from ._run import Run
from ._run_state import RunState
from .widget._protocol import ControlAction

__all__ = ["ABORT_REPLY_TIMEOUT", "TARGET", "ControlChannel", "RunSource"]

TARGET = "pi_notebook.control"
BEACON_ID = "pi_notebook.control.beacon"
ABORT_REPLY_TIMEOUT = 10.0

_IDLE: RunState = {"state": "idle", "run": None, "aborted": False, "retry_deadline": 0, "silent_s": 0, "note": ""}


class RunSource(Protocol):
    """Where the channel finds runs: the kernel's session registry."""

    def current_run(self) -> Run | None:
        """The run the status bar shows: the active one, else the last one (``None`` before any)."""

    def active_runs(self) -> list[Run]: ...

    def abort_active(self) -> None:
        """Stop every active run as its Stop button does."""


class ControlChannel:
    """The ``pi_notebook.control`` comm target of one kernel (see the module docstring)."""

    def __init__(self, source: RunSource, kernel: Kernel) -> None:
        self._source = source
        self._kernel = kernel
        self._comms: list[Any] = []
        self._frontends: dict[str, Frontend] = {}
        """Per comm id, the notebook page it connects (pages that said they can act on cells)."""
        self._contexts: dict[str, contextvars.Context] = {}
        """Per comm id, the context its ``comm_open`` was handled in, whose parent message names the comm's
        subshell. ipykernel 7.4 routes a frontend's messages on a comm to the subshell of the last message the kernel
        sent on it (``Comm._reply_subshell_for``); a state pushed from a run's context (the main shell's) would move
        the comm to the main shell, which the agent's ``python`` code can block. So every send runs in this
        context."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._beacon: Any = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._send_lock = threading.Lock()
        """Held while a state is read and sent, so one read on a comm's thread cannot overtake a newer push."""
        self.activity = ActivitySignal(source.active_runs, self.ping)
        """Keeps the kernel from looking idle to cullers while a run works (``_activity``)."""

    def register(self, ipython: Any) -> None:
        """Register the comm target (and the discovery beacon) on the running kernel (no-op outside a kernel)."""
        if getattr(ipython, "kernel", None) is None:
            return
        try:
            from comm import get_comm_manager

            manager = get_comm_manager()
        except Exception:  # pragma: no cover - ipykernel always ships `comm`
            return
        with contextlib.suppress(RuntimeError):
            self._loop = asyncio.get_running_loop()
        manager.register_target(TARGET, self._on_open)
        self._register_beacon(manager)

    def current_state(self) -> dict[str, Any]:
        """What the status bar shows: the active run's state, else the last run's final state, else ``idle``.
        Asking never creates a session."""
        run = self._source.current_run()
        return _state_message(run.state() if run is not None else _IDLE)

    def publish(self, state: RunState) -> None:
        """Push a run's state change to every open control comm (any thread)."""
        self.activity.observe(state)
        message = _state_message(state)
        with self._send_lock:
            for comm in list(self._comms):
                self._send(comm, message)

    def page_connected(self) -> bool:
        """A JupyterLab page with the pi-notebook extension has the control comm open (a frontend that renders run
        widgets is there, though its widget code may still be loading). Any thread."""
        return bool(self._comms)

    def ping(self) -> None:
        """Publish ``{"type": "activity"}`` on the beacon (any thread): activity for the idle cullers, dropped by
        frontends. No parent message: it answers no request. Nothing outside a kernel."""
        if self._beacon is None:
            return
        from ipykernel.kernelbase import Kernel as IPyKernel

        if not IPyKernel.initialized():
            return
        kernel = IPyKernel.instance()
        if kernel.session is None:
            return
        content = {"comm_id": BEACON_ID, "data": {"type": "activity"}}
        kernel.session.send(kernel.iopub_socket, "comm_msg", content, parent={}, ident=f"comm-{BEACON_ID}".encode())

    def views(self) -> list[dict[str, Any]]:
        """The active runs' live widgets (see the module docstring); any thread (a snapshot)."""
        return [view for run in self._source.active_runs() if (view := run.view_ref()) is not None]

    def in_other_thread(self) -> bool:
        """The caller runs outside the kernel's event loop (a subshell's thread, say), where run state must not be
        touched: use :meth:`stop`."""
        if self._loop is None:
            return False
        try:
            return asyncio.get_running_loop() is not self._loop
        except RuntimeError:
            return True

    def stop(self, runs: list[Run], session: AgentSession | None = None) -> None:
        """Stop ``runs`` from any thread as the toolbar's Stop does: the agent's code is interrupted at once (it
        may hold the event loop), then each run is aborted on the loop (``%pi abort`` in a subshell console).
        Without runs, ``session`` (working without a run: a cell awaits its prompt) is aborted the same way."""
        if not runs and session is None:
            return
        release = self._kernel.interrupts.hold("Stopped by the user")
        if runs:
            self._marshal(self._stop_runs, None, runs, release)
        elif session is not None:
            self._marshal(self._start, _released_after(session.abort(), release))

    # -- comms ----------------------------------------------------------------------------------------------
    def _register_beacon(self, manager: Any) -> None:
        if self._beacon is not None and manager.comms.get(BEACON_ID) is self._beacon:
            return
        from comm import create_comm

        self._beacon = create_comm(comm_id=BEACON_ID, target_name=TARGET, primary=False)
        manager.register_comm(self._beacon)

    def _on_open(self, comm: Any, open_msg: Any) -> None:
        self._comms.append(comm)
        self._contexts[comm.comm_id] = contextvars.copy_context()
        comm.on_msg(lambda msg: self._on_msg(comm, msg))
        comm.on_close(lambda msg: self._forget(comm))
        self._send_status(comm)  # from here: the event loop may be blocked by the agent's code
        self._send(comm, {"type": "views", "process": self._kernel.token, "views": self.views()})
        data = _data(open_msg)
        client = ((open_msg or {}).get("header") or {}).get("session")
        if data.get("cells") and isinstance(client, str):  # a notebook page that can act on its cells
            path = data.get("path")
            page = Frontend(client, path if isinstance(path, str) else None, lambda message: self._send(comm, message))
            self._frontends[comm.comm_id] = page
            self._marshal(self._kernel.frontends.connect, page)

    def _forget(self, comm: Any) -> None:
        if comm in self._comms:
            self._comms.remove(comm)
        self._contexts.pop(comm.comm_id, None)
        page = self._frontends.pop(comm.comm_id, None)
        if page is not None:
            self._marshal(self._kernel.frontends.disconnect, page)

    def _marshal(self, function: Callable[..., None], *args: Any) -> None:
        if self._loop is not None and self._loop.is_running():
            self._loop.call_soon_threadsafe(function, *args)
        else:
            function(*args)

    def _on_msg(self, comm: Any, msg: Any) -> None:
        """On the comm's thread: an abort of an active run first interrupts the agent's code (it blocks the loop)
        and keeps interrupting code that starts until the runs have settled; then the loop handles the message."""
        data = _data(msg)
        if data.get("action") == "status":
            self._send_status(comm, reply="status")  # a snapshot, from here: the loop may be blocked
            return
        release = None
        if data.get("action") == "abort" and self._is_active_run(data.get("run")):
            release = self._kernel.interrupts.hold("Stopped by the user")
        self._marshal(self._handle, comm, msg, release or _nothing)

    def _is_active_run(self, number: object) -> bool:
        """A run is active and ``number`` is ``None`` or its number (read from the comm's thread: a snapshot)."""
        return any(number in (None, run.number) for run in self._source.active_runs())

    def _handle(self, comm: Any, msg: Any, release: Callable[[], None] = lambda: None) -> None:
        data = _data(msg)
        action = data.get("action")
        run = data.get("run")
        if action == "abort" and run is not None and (isinstance(run, bool) or not isinstance(run, int)):
            release()
            self._send(comm, {"type": "error", "error": f"'run' must be a run number, got {run!r}"})
        elif action == "abort":
            self._abort(comm, run, release)
        elif action == "status":
            self._send_status(comm, reply="status")
        elif action == "cells":  # a page's answer to a cell tool's request: taken from the page asked only
            client = ((msg or {}).get("header") or {}).get("session")
            self._kernel.frontends.reply(data, self._frontends.get(comm.comm_id), client)
        else:
            known = " or ".join(repr(name) for name in get_args(ControlAction))
            self._send(comm, {"type": "error", "error": f"unknown action {action!r}; use {known}"})

    def _abort(self, comm: Any, number: int | None, release: Callable[[], None]) -> None:
        """Stop every active run (or run ``number``) as its Stop button does, then reply (and release the held
        interrupt) once they have settled."""
        runs = [run for run in self._source.active_runs() if number is None or run.number == number]
        self._stop_runs(comm, runs, release)

    def _stop_runs(self, comm: Any | None, runs: list[Run], release: Callable[[], None]) -> None:
        """On the loop: abort ``runs``; once they have settled release the held interrupt and reply to ``comm``."""
        runs = [run for run in runs if not run.done]
        for run in runs:
            run.abort()
        if not runs:
            release()
            if comm is not None:
                self._send_status(comm, reply="abort")
            return

        async def reply_when_settled() -> None:
            try:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(asyncio.gather(*runs), ABORT_REPLY_TIMEOUT)
            finally:
                release()
            if comm is not None:
                self._send_status(comm, reply="abort")

        self._start(reply_when_settled())

    def _start(self, coroutine: Coroutine[Any, Any, None]) -> None:
        """On the loop: run ``coroutine`` as a task this channel keeps until it ends."""
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _send(self, comm: Any, data: dict[str, Any]) -> None:
        """Send in the context the comm was opened in (see ``_contexts``)."""
        context = self._contexts.get(comm.comm_id)
        with contextlib.suppress(Exception):
            if context is None:
                comm.send(data)
            else:
                context.copy().run(comm.send, data)

    def _send_status(self, comm: Any, reply: str | None = None) -> None:
        """The current state (any thread; under the send lock, see ``_send_lock``)."""
        with self._send_lock:
            state = self.current_state()
            if reply is not None:
                state["reply"] = reply
            self._send(comm, state)


def _nothing() -> None:
    pass


async def _released_after(operation: Awaitable[None], release: Callable[[], None]) -> None:
    try:
        await operation
    finally:
        release()


def _data(msg: Any) -> dict[str, Any]:
    data = (msg.get("content") or {}).get("data") or {}
    return data if isinstance(data, dict) else {}


def _state_message(state: RunState) -> dict[str, Any]:
    return {"type": "state", **state, "now": time.time() * 1000}
