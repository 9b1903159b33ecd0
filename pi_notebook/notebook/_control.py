"""The ``pi_notebook.control`` comm target: how the JupyterLab extension stops runs and shows their state.

Frontend -> kernel: ``{"action": "abort"}`` stops every active run of this kernel as the Stop button does
(queued messages are handed back to each run's input box); ``{"action": "status"}`` asks for the state.
Kernel -> frontend: ``{"type": "state", "state": ..., "run": N, "aborted": bool, "retry_deadline": ms}``
whenever a run changes state (``idle``, ``streaming``, ``running tool``, ``retrying``, ``compacting``,
``settled``). Messages may arrive on a comm thread; they are handed to the kernel's event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

__all__ = ["TARGET", "register_control"]

TARGET = "pi_notebook.control"

_comms: list[Any] = []
_loop: asyncio.AbstractEventLoop | None = None


def register_control(ipython: Any) -> None:
    """Register the comm target on the running kernel (no-op outside a kernel)."""
    global _loop
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
    action = data.get("action")
    if action == "abort":
        from ._controller import get_agent

        get_agent().abort_active()
        _send_status(comm)
    elif action == "status":
        _send_status(comm)
    else:
        comm.send({"type": "error", "error": f"unknown action {action!r}"})


def current_state() -> dict[str, Any]:
    from ._controller import get_agent

    agent = get_agent()
    run = agent.active_run
    if run is None:
        last = agent.runs[-1] if agent.runs else None
        if last is None:
            return {"type": "state", "state": "idle", "run": None, "aborted": False, "retry_deadline": 0}
        return {"type": "state", "state": "settled", "run": last.number, "aborted": last.aborted, "retry_deadline": 0}
    return {"type": "state", **run.state()}


def _send_status(comm: Any) -> None:
    comm.send(current_state())


def publish(state: dict[str, Any]) -> None:
    """Push a run's state change to every open control comm."""
    for comm in list(_comms):
        with contextlib.suppress(Exception):
            comm.send({"type": "state", **state})
