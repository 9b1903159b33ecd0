"""The processes the agent's Python code starts, killed when a stop ends the code, as ``bash`` kills its tree.

The code runs in the kernel's process, so what it starts (``subprocess.Popen``, ``!cmd``, ``os.system`` in a
thread, a ``multiprocessing`` worker) is a child of the kernel and outlived a Stop. :class:`CodeProcesses`
brackets one call: it notes the kernel's descendants before the code runs, and puts a marker in the environment
the code's processes inherit (``PI_NOTEBOOK_PYTHON_CALL=<random token>``, removed after). When a stop ended the
code (Stop, the kernel's interrupt, a timeout), :meth:`CodeProcesses.kill` finds the processes started since —
new descendants of the kernel, and any process carrying the marker (one that left with ``setsid`` or a double
fork and was reparented) — and ends them as ``bash`` does: SIGTERM (and SIGCONT), then SIGKILL after the grace
period for those still there. What the code leaves running when it completes normally is kept (a server it
started on purpose), as ``bash`` keeps its background processes.

Not found: a process that both scrubbed its environment and was orphaned before the kill looked, as for ``bash``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import time
from collections.abc import Iterator

import psutil

from ..tools import KILL_GIVE_UP_S, KILL_POLL_S, marked_pids, process_alive, spawn_mark

__all__ = ["MARKER_ENV", "CodeProcesses"]

MARKER_ENV = "PI_NOTEBOOK_PYTHON_CALL"


def _descendants() -> dict[int, psutil.Process]:
    try:
        return {proc.pid: proc for proc in psutil.Process().children(recursive=True)}
    except psutil.Error:
        return {}


class CodeProcesses:
    """The processes one call of the agent's code starts (see the module docstring)."""

    def __init__(self) -> None:
        self._token = secrets.token_hex(8)
        self._before = set(_descendants())
        self._since = spawn_mark()
        self._since_epoch = time.time() - 1.0

    @contextlib.contextmanager
    def marking(self) -> Iterator[None]:
        """While the code runs: the marker in ``os.environ``, so the processes it starts carry it."""
        previous = os.environ.get(MARKER_ENV)
        os.environ[MARKER_ENV] = self._token
        try:
            yield
        finally:
            if previous is None:
                os.environ.pop(MARKER_ENV, None)
            else:
                os.environ[MARKER_ENV] = previous

    def started(self) -> list[psutil.Process]:
        """The living processes the code started (new descendants of the kernel and marked processes)."""
        found = {}
        for pid, proc in _descendants().items():
            with contextlib.suppress(psutil.Error):
                if pid not in self._before and proc.create_time() >= self._since_epoch and process_alive(proc):
                    found[pid] = proc
        needle = f"{MARKER_ENV}={self._token}".encode()
        for pid in marked_pids(needle, self._since, found):
            with contextlib.suppress(psutil.Error):
                proc = psutil.Process(pid)
                if process_alive(proc):
                    found[pid] = proc
        return list(found.values())

    async def kill(self, grace_s: float) -> list[str]:
        """End them: SIGTERM (and SIGCONT), then SIGKILL after ``grace_s`` to those left. Returns what was found,
        as ``name (pid N)``."""
        found = self.started()
        if not found:
            return []
        described = [_describe(proc) for proc in found]
        for proc in found:
            for sig in (signal.SIGTERM, signal.SIGCONT):
                with contextlib.suppress(psutil.Error, OSError):
                    proc.send_signal(sig)
        deadline = time.monotonic() + grace_s
        while (wait := deadline - time.monotonic()) > 0:
            if not any(process_alive(proc) for proc in found):
                break
            await asyncio.sleep(min(KILL_POLL_S, wait))
        give_up = time.monotonic() + KILL_GIVE_UP_S
        while (left := [proc for proc in found + self.started() if process_alive(proc)]) and time.monotonic() < give_up:
            for proc in left:
                with contextlib.suppress(psutil.Error, OSError):
                    proc.kill()
            await asyncio.sleep(0.005)
        return described


def _describe(proc: psutil.Process) -> str:
    try:
        return f"{proc.name()} (pid {proc.pid})"
    except psutil.Error:
        return f"pid {proc.pid}"
