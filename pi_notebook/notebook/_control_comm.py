"""The ``pi_notebook.control`` comm target: how the JupyterLab extension stops runs and shows their state.

Frontend -> kernel (``comm_msg`` data):

* ``{"action": "abort"}`` stops every active run of this kernel's session as the run widget's Stop button
  does (``Run.abort()``: queued messages are handed back to each run's input box, then the session aborts).
  When those runs have settled (at most :data:`ABORT_REPLY_TIMEOUT` seconds later) the kernel replies with
  the new state, ``"reply": "abort"``.
* ``{"action": "status"}``: the kernel replies with the current state, ``"reply": "status"``.

Kernel -> frontend: ``{"type": "state", "state": ..., "run": N | None, "aborted": bool, "retry_deadline": ms,
"now": ms}`` right after the comm opens, as each reply, and pushed whenever a run changes state. ``state`` is
``idle`` (no run yet), ``starting``, ``streaming``, ``running tool``, ``retrying`` (``retry_deadline`` is the
epoch time in ms of the next attempt), ``compacting``, then ``settled``, ``aborted`` or ``error``. ``now`` is
the kernel's clock when the message was made, so a frontend can count a retry down without trusting that the
two clocks agree. An unknown action gets ``{"type": "error", "error": ...}``.

Discovery: ``%load_ext pi_notebook`` registers the target and a *beacon* — a comm object with this target
name that only lives in the kernel's comm manager (nothing is sent). A frontend asks ``comm_info`` for this
target (over the control channel, which answers even while a cell runs); a non-empty answer means the target
is registered, so opening a comm cannot fail with "No such comm target" in the kernel log.

Threads: with JupyterLab >= 4.4 and ipykernel >= 7 comm messages arrive on a subshell thread; every handler
is handed to the kernel's event loop with ``call_soon_threadsafe``, so run state is only touched there. That
loop is free while a cell awaits a run, so Stop works then too.

The channel knows runs only through the :class:`RunSource` given to :func:`register_control` (the kernel's
session registry); it pushes whatever :func:`publish` is given.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any, Protocol

from ._run import Run, RunState

__all__ = ["ABORT_REPLY_TIMEOUT", "TARGET", "RunSource", "current_state", "publish", "register_control"]

TARGET = "pi_notebook.control"
BEACON_ID = "pi_notebook.control.beacon"
ABORT_REPLY_TIMEOUT = 10.0


class RunSource(Protocol):
    """Where the channel finds runs: the kernel's session registry."""

    def current_run(self) -> Run | None:
        """The run the status bar shows: the active one, else the last one (``None`` before any)."""

    def active_runs(self) -> list[Run]: ...

    def abort_active(self) -> None:
        """Stop every active run as its Stop button does."""


_comms: list[Any] = []
_loop: asyncio.AbstractEventLoop | None = None
_beacon: Any = None
_tasks: set[asyncio.Task[None]] = set()
_source: RunSource | None = None


def register_control(ipython: Any, source: RunSource) -> None:
    """Register the comm target (and the discovery beacon) on the running kernel (no-op outside a kernel);
    ``source`` answers for the runs."""
    global _loop, _source
    _source = source
    kernel = getattr(ipython, "kernel", None)
    if kernel is None:
        return
    try:
        from comm import get_comm_manager

        manager = get_comm_manager()
    except Exception:  # pragma: no cover - ipykernel always ships `comm`
        return
    with contextlib.suppress(RuntimeError):
        _loop = asyncio.get_running_loop()
    manager.register_target(TARGET, _on_open)
    _register_beacon(manager)


def _register_beacon(manager: Any) -> None:
    global _beacon
    if _beacon is not None and manager.comms.get(BEACON_ID) is _beacon:
        return
    from comm import create_comm

    _beacon = create_comm(comm_id=BEACON_ID, target_name=TARGET, primary=False)
    manager.register_comm(_beacon)


def _on_open(comm: Any, open_msg: Any) -> None:
    _comms.append(comm)
    comm.on_msg(lambda msg: _marshal(_handle, comm, msg))
    comm.on_close(lambda msg: _comms.remove(comm) if comm in _comms else None)
    _marshal(_send_status, comm)


def _marshal(function: Any, *args: Any) -> None:
    if _loop is not None and _loop.is_running():
        _loop.call_soon_threadsafe(function, *args)
    else:
        function(*args)


def _handle(comm: Any, msg: Any) -> None:
    data = (msg.get("content") or {}).get("data") or {}
    action = data.get("action") if isinstance(data, dict) else None
    if action == "abort":
        _abort(comm)
    elif action == "status":
        _send_status(comm, reply="status")
    else:
        _send(comm, {"type": "error", "error": f"unknown action {action!r}; use 'abort' or 'status'"})


def _abort(comm: Any) -> None:
    """Stop every active run as its Stop button does, then reply once they have settled."""
    runs = _source.active_runs() if _source is not None else []
    if _source is not None:
        _source.abort_active()
    if not runs:
        _send_status(comm, reply="abort")
        return

    async def reply_when_settled() -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.gather(*runs), ABORT_REPLY_TIMEOUT)
        _send_status(comm, reply="abort")

    task = asyncio.get_running_loop().create_task(reply_when_settled())
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)


def current_state() -> dict[str, Any]:
    """What the status bar shows: the active run's state, else the last run's final state, else ``idle``.
    Asking never creates a session."""
    run = _source.current_run() if _source is not None else None
    if run is None:
        return _state_message({"state": "idle", "run": None, "aborted": False, "retry_deadline": 0})
    return _state_message(run.state())


def _state_message(state: RunState) -> dict[str, Any]:
    return {"type": "state", **state, "now": _now_ms()}


def _now_ms() -> float:
    return time.time() * 1000


def _send(comm: Any, data: dict[str, Any]) -> None:
    with contextlib.suppress(Exception):
        comm.send(data)


def _send_status(comm: Any, reply: str | None = None) -> None:
    state = current_state()
    if reply is not None:
        state["reply"] = reply
    _send(comm, state)


def publish(state: RunState) -> None:
    """Push a run's state change to every open control comm."""
    message = _state_message(state)
    for comm in list(_comms):
        _send(comm, message)
