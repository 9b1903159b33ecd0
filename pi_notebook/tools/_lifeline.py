"""Ties the bash tool's process trees to the life of this process (the kernel), even when it dies without
running exit handlers (SIGKILL, OOM kill, ``shutdown_kernel(now=True)``).

The watchdog (:mod:`._watchdog`): one small process per interpreter, started at the first bash call, told about
each running call (its marker token, spawn mark and process group). When this process dies it kills those
calls' trees: SIGTERM, SIGKILL after the call's grace. If the watchdog itself dies, a new one is started and
told about the running calls: at the next message, or at the next :meth:`Lifeline.ensure` (which a running
call's poll loop calls every 10-200 ms).

Why not ``PR_SET_PDEATHSIG`` on the shell as well: it would reach only the shell, not its descendants (the
watchdog is needed anyway), and only on Linux; set through ``preexec_fn`` it is unsafe in a threaded kernel
(and rules out ``vfork``), and through ``setpriv --pdeathsig`` it changes how spawn errors surface (``execvp``
runs a non-executable "shell" with ``/bin/sh`` instead of failing) and costs one more ``exec`` per call. It
would add something only when the watchdog is dead at the moment the kernel dies.

What is not covered: processes a call left running after it completed normally (``server &``; see
``bash_tool``); a process that both scrubbed its environment and left the process group before its parent
exited; a watchdog killed together with the kernel (e.g. the whole container stopped).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import subprocess
import sys
import threading
from pathlib import Path

__all__ = ["LIFELINE", "Lifeline"]

_WATCHDOG = str(Path(__file__).with_name("_watchdog.py"))


class Lifeline:
    """The client side of the watchdog. Thread-safe; never raises (a watchdog that cannot start is skipped)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._calls: dict[str, list[str]] = {}  # token -> the lines that registered it (resent to a new watchdog)

    def track(self, token: str, mark: float, grace_s: float) -> None:
        self._register(token, f"track {token} {mark!r} {round(grace_s * 1000)}")

    def group(self, token: str, pgid: int) -> None:
        self._register(token, f"group {token} {pgid}")

    def done(self, token: str) -> None:
        with self._lock:
            if self._calls.pop(token, None) is not None:
                self._send([f"done {token}"])

    def ensure(self) -> None:
        """Replace a watchdog that died while calls are running (cheap: one ``waitpid`` when it is alive)."""
        proc = self._proc
        if self._calls and proc is not None and proc.poll() is not None:
            with self._lock:
                self._watchdog()

    @property
    def pid(self) -> int | None:
        """The watchdog's pid (``None`` before the first call, or if it could not start)."""
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def close(self) -> None:
        """At a clean exit: end the watchdog's input (it then kills what is still tracked, and exits)."""
        with self._lock:
            proc, self._proc = self._proc, None
        if proc is not None and proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=1)

    def forget(self) -> None:
        """In a forked child: drop the parent's watchdog (the child starts its own when it needs one)."""
        proc, self._proc, self._calls = self._proc, None, {}
        self._lock = threading.Lock()
        if proc is not None and proc.stdin is not None:
            with contextlib.suppress(OSError):
                os.close(proc.stdin.fileno())

    def _register(self, token: str, line: str) -> None:
        with self._lock:
            self._calls.setdefault(token, []).append(line)
            self._send([line])

    def _send(self, lines: list[str]) -> None:
        for _ in range(2):  # a dead watchdog is replaced once per message
            proc = self._watchdog()
            if proc is None or proc.stdin is None:
                return
            try:
                proc.stdin.write("".join(f"{line}\n" for line in lines).encode("ascii"))
                proc.stdin.flush()
                return
            except OSError:  # BrokenPipeError: it died
                _discard(proc)
                self._proc = None

    def _watchdog(self) -> subprocess.Popen[bytes] | None:
        proc = self._proc
        if proc is not None:
            if proc.poll() is None:
                return proc
            _discard(proc)
            self._proc = None
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", _WATCHDOG, str(os.getpid())],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError:
            return None
        self._proc = proc
        if self._calls and proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.write("".join(f"{line}\n" for lines in self._calls.values() for line in lines).encode())
                proc.stdin.flush()
        return proc


def _discard(proc: subprocess.Popen[bytes]) -> None:
    """Close a dead watchdog's pipe and reap it."""
    if proc.stdin is not None:
        with contextlib.suppress(OSError):
            proc.stdin.close()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=1)


LIFELINE = Lifeline()
atexit.register(LIFELINE.close)  # registered before _process's handler (it imports this module): runs after it
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=LIFELINE.forget)
