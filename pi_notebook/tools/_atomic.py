"""Replacing a file's content atomically: a temp file beside it, written, fsynced, then renamed over it.

A reader, a crash, ``kill -9`` or an abort at any moment sees the old content or the new one, never a mix: the
new bytes go to ``.<name>.<random>.pi-tmp`` in the same directory (so the rename stays on one file system),
``fsync`` makes them durable, ``os.replace`` swaps the name in one step, and the directory is fsynced so the
rename survives a power cut. An abort before the rename deletes the temp file; the file is untouched.

A read-only file is refused (``EACCES``) as ``open()`` would refuse it. The temp file needs a writable
directory. A process killed mid-write can leave its ``.pi-tmp`` file behind (the target is intact).

Kept from the old file: its permission bits and (when we may) its owner. A symlink is written through: its
target is replaced, the link stays. What a rename cannot keep: hard links (the other names keep the old
content), extended attributes and ACLs. A new file gets ``0o666`` less the umask, like ``open()``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat as stats

from ._common import Stop, not_regular
from ._paths import node_error

__all__ = ["encode_text", "js_length", "make_directories", "write_atomic"]

CHUNK = 1 << 20


def js_length(text: str) -> int:
    """``text.length`` in JavaScript: UTF-16 code units."""
    return len(text) if text.isascii() else len(text.encode("utf-16-le", "surrogatepass")) // 2


def encode_text(text: str) -> bytes:
    """UTF-8 as Node writes a string: a lone surrogate (possible in JSON) becomes U+FFFD."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in text).encode("utf-8")


def make_directories(directory: str) -> None:
    """``mkdir -p`` with Node's error texts."""
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:
        raise node_error(exc, "mkdir", exc.filename if isinstance(exc.filename, str) else directory) from None


def _umask() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # no /proc: read it the racy way, and put it back at once
    os.umask(mask)
    return mask


def _write_all(fd: int, data: bytes, stop: Stop) -> None:
    view = memoryview(data)
    offset = 0
    while offset < len(view):
        stop.check()
        end = min(offset + CHUNK, len(view))
        while offset < end:
            offset += os.write(fd, view[offset:end])


def _fsync_directory(directory: str) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_atomic(path: str, data: bytes, stop: Stop) -> None:
    """Replace the content of ``path`` (or create it) with ``data``; see the module docstring.

    Raises ``IsADirectoryError`` when ``path`` is a directory, ``FileToolError`` for a device, pipe or socket
    and, with "Operation aborted", when ``stop`` fires before the rename (the file is then unchanged), and other
    ``OSError`` from the file system.
    """
    target = os.path.realpath(path)
    try:
        old = os.stat(target)
    except FileNotFoundError:
        old = None
    if old is not None and stats.S_ISDIR(old.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    if old is not None and not stats.S_ISREG(old.st_mode):  # never rename over /dev/null or a pipe
        raise not_regular("write", path)
    if old is not None and not os.access(target, os.W_OK):  # a rename would bypass a read-only file's mode
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
    directory, name = os.path.split(target)
    temp = os.path.join(directory, f".{name}.{secrets.token_hex(6)}.pi-tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        os.fchmod(fd, stats.S_IMODE(old.st_mode) if old is not None else 0o666 & ~_umask())
        if old is not None and (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
            with contextlib.suppress(OSError):
                os.fchown(fd, old.st_uid, old.st_gid)
        _write_all(fd, data, stop)
        os.fsync(fd)
        os.close(fd)
        fd = -1
        stop.check()
        os.replace(temp, target)
    except BaseException:
        if fd != -1:
            os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    _fsync_directory(directory)
