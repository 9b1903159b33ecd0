"""The file tools' own threads, outside the event loop's default executor.

Why: a read can block in the kernel and never return (a hung network mount, a pseudo-file that waits for data).
Stop and the tool timeout abandon such a call, so the run goes on, but its thread stays blocked. In asyncio's
default executor (``min(32, cpus + 4)`` threads: 6 on 2 cores), which also resolves host names for every HTTP
request (``loop.getaddrinfo``), six such reads left no thread: every later file tool timed out and every model
request to a host name hung, until the kernel was restarted.

How (:class:`FileWorkers`, one per process, :data:`WORKERS`): at most :data:`MAX_WORKERS` threads work at once,
taking jobs in order from one queue (more wait there; an idle thread leaves after :data:`IDLE_S`). When a caller
abandons a job whose thread is still blocked, that thread stops counting as a worker and a new one takes its
place, so the tools keep working. Blocked threads are bounded too: with :data:`MAX_STUCK` of them, a new job is
refused at once with :class:`WorkersStuck` (its text says why and that only a kernel restart frees them) rather
than start a thread that may block in turn. A blocked thread that returns at last simply ends.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from ..ai import PiNotebookError

__all__ = ["IDLE_S", "MAX_STUCK", "MAX_WORKERS", "WORKERS", "FileWorkers", "Job", "WorkersStuck"]

MAX_WORKERS = 8
MAX_STUCK = 16
IDLE_S = 30.0


class WorkersStuck(PiNotebookError, RuntimeError):
    """Too many abandoned file operations are still blocked; no new one is started."""


class Job:
    """One piece of work: ``future`` gets its result; ``abandon()`` (see :meth:`FileWorkers.abandon`)."""

    __slots__ = ("abandoned", "args", "fn", "future", "running")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.fn = fn
        self.args = args
        self.future: Future[Any] = Future()
        self.running = False
        self.abandoned = False


class FileWorkers:
    """A bounded thread pool whose blocked, abandoned threads are replaced (see the module docstring)."""

    def __init__(self, workers: int = MAX_WORKERS, max_stuck: int = MAX_STUCK, idle_s: float = IDLE_S) -> None:
        self._max_workers = workers
        self._max_stuck = max_stuck
        self._idle_s = idle_s
        self._jobs: queue.SimpleQueue[Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._workers = 0  # threads counted as workers (not abandoned)
        self._idle = 0
        self._waiting = 0  # jobs queued, not yet taken
        self.stuck = 0

    def submit(self, fn: Callable[..., Any], *args: Any) -> Job:
        """Queue ``fn(*args)``; raises :class:`WorkersStuck` when :data:`MAX_STUCK` threads are blocked."""
        job = Job(fn, args)
        with self._lock:
            if self.stuck >= self._max_stuck:
                raise WorkersStuck(
                    f"{self.stuck} earlier file operations are still blocked in the operating system (a read that "
                    "never returns: a hung network mount, a device or pseudo-file that waits); no new one is "
                    "started. Restarting the kernel frees them."
                )
            self._jobs.put(job)
            self._waiting += 1
            self._grow()
        return job

    def abandon(self, job: Job) -> None:
        """The caller no longer waits for ``job``: a queued job is dropped; a running one's thread, if it is
        still blocked, is counted as stuck and replaced."""
        with self._lock:
            if job.future.done() or job.abandoned:
                return
            job.abandoned = True
            if not job.running:
                job.future.cancel()
                return
            self.stuck += 1
            self._workers -= 1
            self._grow()

    def _grow(self) -> None:
        """Start a thread if jobs wait that no idle thread will take (called with the lock held)."""
        if self._waiting > self._idle and self._workers < self._max_workers:
            self._workers += 1
            threading.Thread(target=self._work, name="pi-file-tools", daemon=True).start()

    def _work(self) -> None:
        while True:
            with self._lock:
                self._idle += 1
            try:
                job = self._jobs.get(timeout=self._idle_s)
            except queue.Empty:
                with self._lock:
                    self._idle -= 1
                    if self._waiting == 0:
                        self._workers -= 1
                        return
                continue
            with self._lock:
                self._idle -= 1
                self._waiting -= 1
                if job.future.cancelled():
                    continue
                job.running = True
            self._run(job)
            with self._lock:
                if job.abandoned:  # replaced meanwhile: this thread is no longer a worker
                    self.stuck -= 1
                    return

    @staticmethod
    def _run(job: Job) -> None:
        if not job.future.set_running_or_notify_cancel():
            return
        try:
            result = job.fn(*job.args)
        except BaseException as exc:
            job.future.set_exception(exc)
        else:
            job.future.set_result(result)


WORKERS = FileWorkers()
"""The file tools' pool (``_common.in_thread``)."""
