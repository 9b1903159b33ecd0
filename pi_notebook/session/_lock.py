"""One writer per session file: the store that appends to a file holds an advisory lock on it.

Two kernels that continued one file (both ``%pi resume`` the newest) each appended their own conversation to it;
on reload only the branch of the last entry is followed, so one kernel's conversation was lost without a word.
Now a :class:`~pi_notebook.session.SessionStore` takes ``flock(LOCK_EX | LOCK_NB)`` on the file as it opens it
(a new file or one it continues) and holds it until it closes. Another process's store for the same file is
refused at once with :class:`SessionInUseError`, naming the process holding it when the system says
(``/proc/locks``). The lock is the kernel's: it goes with the process however it ends (SIGKILL too), so a
crashed kernel's file can be resumed at once. Readers (``load_session``, ``%pi sessions``) take no lock.

Limits: the lock is advisory (Pi and other tools do not take it, and may still append), and a file system that
has no locks (some network mounts) gives no protection; the store then goes on without it.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from ._store_load import SessionFileError

__all__ = ["SessionInUseError", "lock_for_writing"]


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
        holder = _holder(fd)
        by = f"another kernel (pid {holder})" if holder else "another process"
        raise SessionInUseError(
            f"{path.name} is in use by {by}, which is appending to it: not continued, so neither conversation is "
            "lost. Resume another session (%pi sessions), start one (%pi new), or stop that kernel first."
        ) from None


def _holder(fd: int) -> int | None:
    """The pid holding a lock on the file of ``fd``, from ``/proc/locks`` (Linux; ``None`` elsewhere)."""
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
