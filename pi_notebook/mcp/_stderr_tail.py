"""What a stdio MCP server writes to stderr: read from a pipe as it comes, only its last lines kept, so a server that
fails can be reported with its own words and a chatty one costs bounded memory."""

from __future__ import annotations

import asyncio
import contextlib
import os
from typing import TextIO

__all__ = ["TAIL_BYTES", "StderrTail"]

TAIL_BYTES = 4096
"""How much of the end of a server's stderr is kept."""
_SHOWN_LINES = 3


class StderrTail:
    """A pipe for a server's stderr (:meth:`writer`, given to the spawn) and the last :data:`TAIL_BYTES` read from it
    on the event loop."""

    def __init__(self) -> None:
        self._read_fd: int | None = None
        self._writer: TextIO | None = None
        self._kept = b""
        self._loop: asyncio.AbstractEventLoop | None = None

    def writer(self) -> TextIO:
        """The write end, for the child's stderr (the parent's copy is closed by :meth:`started`)."""
        read_fd, write_fd = os.pipe()
        self._read_fd = read_fd
        os.set_blocking(read_fd, False)
        self._writer = os.fdopen(write_fd, "w")
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(read_fd, self._read)
        return self._writer

    def started(self) -> None:
        """The child has its copy of the write end: close ours, so the pipe ends when the child does."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def _read(self) -> bool:
        """Read what is there; False at the end of the pipe (then the pipe is closed) or when nothing came."""
        fd = self._read_fd
        if fd is None:
            return False
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return False
        except OSError:
            data = b""
        if not data:
            self._teardown()
            return False
        self._kept = (self._kept + data)[-TAIL_BYTES:]
        return True

    def tail(self) -> str:
        """The last few non-empty lines, joined by `` | `` (``""`` when it wrote nothing)."""
        self._read()
        lines = [line.strip() for line in self._kept.decode("utf-8", "replace").splitlines() if line.strip()]
        return " | ".join(lines[-_SHOWN_LINES:])

    def close(self) -> None:
        """Stop reading, after what the server wrote just before it ended (the text read so far is kept)."""
        self.started()
        for _ in range(16):
            if not self._read():
                break
        self._teardown()

    def _teardown(self) -> None:
        fd, self._read_fd = self._read_fd, None
        if fd is None:
            return
        if self._loop is not None and not self._loop.is_closed():
            self._loop.remove_reader(fd)
        with contextlib.suppress(OSError):
            os.close(fd)
