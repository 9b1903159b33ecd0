"""One writer per session file: the store that appends to a file holds an advisory lock on it.

Two kernels that continued one file (both ``%pi resume`` the newest) each appended their own conversation to it;
on reload only the branch of the last entry is followed, so one kernel's conversation was lost without a word.
Now a :class:`~pi_notebook.session.SessionStore` takes ``flock(LOCK_EX | LOCK_NB)`` on the file as it opens it
(a new file or one it continues) and holds it until it closes. Another process's store for the same file is
refused at once with :class:`SessionInUseError`, naming the process holding it when the system says
(``/proc/locks``). The lock is the kernel's: it goes with the process however it ends (SIGKILL too), so a
crashed kernel's file can be resumed at once. Readers (``load_session``, ``%pi sessions``) take no lock.

A flock belongs to the open file, not to the process: a child the kernel forks (``os.fork``, ``multiprocessing``'s
fork workers) inherits the descriptor, and the lock would outlive a SIGKILLed kernel for as long as the child lives.
So the child lets go of it as it starts (``os.register_at_fork``): its copy of each locked descriptor is pointed at
``/dev/null`` (the child is no writer of the session; what it would append goes nowhere). A process started with
``exec`` never gets it (the descriptor is close-on-exec). A child forked by C code that skips Python's fork hooks
would still hold it: the refusal then names that process, not the kernel that is gone.

Limits: the lock is advisory (Pi and other tools do not take it, and may still append), and a file system that
has no locks (some network mounts) gives no protection; the store then goes on without it.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

from ._store_load import SessionFileError

__all__ = ["SessionInUseError", "lock_for_writing", "release"]


class SessionInUseError(SessionFileError):
    """The session file is being continued by another process (see the module docstring)."""


def lock_for_writing(fd: int, path: Path) -> None:
    """Take the writer's lock on ``fd`` (the store's descriptor of ``path``); raise :class:`SessionInUseError`
    if another process holds it. No-op where there is no ``flock`` or the file system has no locks."""
    try:
        import fcntl
    except ImportError:  # not POSIX
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return  # no locks on this file system
        raise SessionInUseError(
            f"{path.name} is in use by {_by(fd)}, which is appending to it: not continued, so neither conversation is "
            "lost. Resume another session (%pi sessions), start one (%pi new), or stop that kernel first."
        ) from None
    _held.add(fd)


def release(fd: int) -> None:
    """Close ``fd``, a descriptor :func:`lock_for_writing` locked (the lock goes with it)."""
    _held.discard(fd)
    os.close(fd)


_held: set[int] = set()
"""The descriptors this process holds a writer's lock through (see the module docstring)."""


def _let_go_in_child() -> None:
    """In a forked child: drop the child's references to the locked files (see the module docstring)."""
    if not _held:
        return
    try:
        null = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
    except OSError:  # pragma: no cover - no /dev/null: close them (the child's store then fails to write)
        for fd in _held:
            with contextlib.suppress(OSError):
                os.close(fd)
    else:
        for fd in _held:
            with contextlib.suppress(OSError):
                os.dup2(null, fd, inheritable=False)
        os.close(null)
    _held.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_let_go_in_child)


def _by(fd: int) -> str:
    """Who holds the lock on the file of ``fd``: the kernel that took it, or, when that process is gone, the
    processes that still have the file open (children it forked)."""
    holder = _holder(fd)
    if holder is None:
        return "another process"
    if _alive(holder):
        return f"another kernel (pid {holder})"
    others = ", ".join(f"pid {pid}" for pid in _openers(fd)) or "a process it started"
    return f"{others}, started by a kernel that has ended (pid {holder}), which still holds it open"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: it exists
        return True
    return True


def _openers(fd: int) -> list[int]:
    """The other processes that have the file of ``fd`` open (Linux, those this user may look at)."""
    try:
        target = os.fstat(fd)
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit() and int(name) != os.getpid()]
    except OSError:
        return []
    found = []
    for pid in pids:
        try:
            links = os.listdir(f"/proc/{pid}/fd")
            for link in links:
                stat = os.stat(f"/proc/{pid}/fd/{link}")
                if (stat.st_dev, stat.st_ino) == (target.st_dev, target.st_ino):
                    found.append(pid)
                    break
        except OSError:
            continue
    return found


def _holder(fd: int) -> int | None:
    """The pid that took a lock on the file of ``fd``, from ``/proc/locks`` (Linux; ``None`` elsewhere)."""
    try:
        stat = os.fstat(fd)
        with open("/proc/locks", encoding="ascii") as locks:
            table = locks.read()
    except OSError:
        return None
    inode = f":{stat.st_ino}"
    for line in table.splitlines():
        fields = line.split()
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5].endswith(inode) and fields[4].isdigit():
            pid = int(fields[4])
            if pid != os.getpid():
                return pid
    return None
