"""A run's checkpoint of the files its ``write`` and ``edit`` calls changed: what each held before, and after.

:class:`FileCheckpoint` is the run's :class:`~pi_notebook.tools._file_journal.FileJournal`. Before a tool's first
change to a file in the run it keeps the file's bytes (or that it did not exist, and which folders the tool then
made); after each change, the file's stamp (size, modification and change times, inode: one ``stat``, so the call
pays no hash of what it wrote). A file is keyed by its real path (a symlink and its target are one file) and shown by
the path the tool was given.

The bytes kept by one run are bounded (``checkpoints.max_run_bytes``, a :class:`CheckpointBudget` the run's
checkpoint shares with copies of objects changed in place): a file that does not fit is recorded as too large, never
half-kept, and a rewind names it as not restorable.

Rewinding (:func:`restore_file`): the file is given back its bytes (written atomically, as the tools write), or
removed if the run created it (with the empty folders it made); one that already holds them (:func:`file_holds`) is
left alone. A file whose content is no longer what the run left (the user changed it since: its stamp moved) is a
conflict: it is restored only when the user says so (``overwrite``).
"""

from __future__ import annotations

import contextlib
import os
import stat as stats
import threading
from dataclasses import dataclass, field

from ..tools import Stop, write_atomic

__all__ = ["CheckpointBudget", "FileBefore", "FileCheckpoint", "Stamp", "file_holds", "file_stamp", "restore_file"]

Stamp = tuple[int, int, int, int]
"""A file's size, modification and change times (ns) and inode: any write (an editor's, an atomic replace) moves
it."""


def file_stamp(path: str) -> Stamp | None:
    """``path``'s :data:`Stamp` now (``None``: it does not exist, or is not a regular file)."""
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino) if stats.S_ISREG(info.st_mode) else None


def file_holds(path: str, content: bytes | None) -> bool:
    """``path`` holds exactly ``content`` (``None``: it does not exist)."""
    try:
        with open(path, "rb") as file:
            return content is not None and file.read() == content
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return content is None


class CheckpointBudget:
    """The bytes one run's checkpoint may still hold (thread-safe)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self._lock = threading.Lock()

    def take(self, size: int) -> bool:
        """Reserve ``size`` bytes; False (nothing reserved) when they do not fit."""
        with self._lock:
            if self.used + size > self.limit:
                return False
            self.used += size
            return True

    def give(self, size: int) -> None:
        """Return ``size`` bytes taken earlier (a copy that was not needed)."""
        with self._lock:
            self.used = max(0, self.used - size)


@dataclass(slots=True)
class FileBefore:
    """One file as the run found it. ``content`` ``None`` with ``too_large`` 0: it did not exist."""

    path: str
    """As the tool was given it, made absolute."""
    content: bytes | None
    too_large: int = 0
    """Its size, when it was too large to keep (then ``content`` is ``None`` and it cannot be restored)."""
    made: str | None = None
    """The outermost folder the tool created for it (removed on a rewind if it is empty then)."""
    after: Stamp | None = None
    """The stamp the run's last change left on it; ``None`` until a change succeeded."""
    changed: bool = False
    """A change succeeded (``after`` is set)."""

    @property
    def existed(self) -> bool:
        return self.content is not None or self.too_large > 0


@dataclass(eq=False)
class FileCheckpoint:
    """The files one run changed (see the module docstring); also what ``bash`` ran, which it cannot undo."""

    budget: CheckpointBudget
    files: dict[str, FileBefore] = field(default_factory=dict)
    """By real path, in the order of their first change."""
    untracked_calls: list[tuple[str, str]] = field(default_factory=list)
    """``(tool, text)`` of calls whose changes are not tracked (``bash`` and its command)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def bytes_held(self) -> int:
        return sum(len(entry.content or b"") for entry in self.files.values())

    # -- the journal (tool threads) ---------------------------------------------------------------------------
    def before(self, absolute: str, content: bytes | None = None) -> None:
        key = os.path.realpath(absolute)
        with self._lock:
            if key in self.files:
                return
        entry = _read_before(absolute, content, self.budget)
        if entry is not None:
            with self._lock:
                self.files.setdefault(key, entry)

    def after(self, absolute: str) -> None:
        entry = self.files.get(os.path.realpath(absolute))
        if entry is not None:
            entry.after, entry.changed = file_stamp(absolute), True

    def untracked(self, tool: str, text: str) -> None:
        with self._lock:
            self.untracked_calls.append((tool, text))

    def release(self) -> None:
        self.files = {}
        self.untracked_calls = []


def _read_before(absolute: str, content: bytes | None, budget: CheckpointBudget) -> FileBefore | None:
    """The file as it is now, kept if it fits the budget; ``None`` for what the tools refuse to write (a folder, a
    device): nothing will change there."""
    try:
        info = os.stat(absolute)
    except FileNotFoundError:
        return FileBefore(absolute, None, made=_first_missing(os.path.dirname(absolute)))
    except NotADirectoryError:
        return None
    if not stats.S_ISREG(info.st_mode):
        return None
    size = len(content) if content is not None else info.st_size
    if not budget.take(size):
        return FileBefore(absolute, None, too_large=max(size, 1))
    if content is None:
        try:
            with open(absolute, "rb") as file:
                content = file.read()
        except OSError:
            return FileBefore(absolute, None, too_large=max(size, 1))  # unreadable: it cannot be given back
    return FileBefore(absolute, content)


def _first_missing(folder: str) -> str | None:
    """The outermost folder of ``folder``'s ancestry that does not exist (``None``: it exists)."""
    missing = None
    while folder and not os.path.exists(folder):
        missing = folder
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return missing


def restore_file(entry: FileBefore) -> str:
    """Give the file back what it held before the run (see the module docstring); returns what was done
    (``"restored"``, ``"removed"``). Raises ``OSError`` when the file system refuses."""
    if entry.content is not None:
        write_atomic(entry.path, entry.content, Stop(None))
        return "restored"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(entry.path)
    if entry.made is not None:
        _remove_empty(os.path.dirname(entry.path), entry.made)
    return "removed"


def _remove_empty(folder: str, outermost: str) -> None:
    """Remove ``folder`` and its parents up to ``outermost`` (the folders the tool made) while they are empty."""
    folder, outermost = os.path.normpath(folder), os.path.normpath(outermost)
    while folder == outermost or folder.startswith(outermost + os.sep):
        try:
            os.rmdir(folder)
        except OSError:  # not empty (something else is in it now), or gone
            return
        if folder == outermost:
            return
        folder = os.path.dirname(folder)
